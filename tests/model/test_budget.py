"""The memory estimate before a prediction, a simulated bench or a mapping (model/budget.py)."""
import pytest

from linkscope.errors import ConfigError
from linkscope.model import budget
from linkscope.patterns.builtin import ALL_TO_ALL, RING
from linkscope.topology.synthetic import synthetic_topology


def test_transfer_counts_are_exact_up_to_16_gpus_and_extrapolated_above():
    topo = synthetic_topology("fattree:8x8")
    gpus = list(range(topo.gpu_count))
    assert budget.pattern_transfer_count(ALL_TO_ALL, topo, gpus[:16], 1024, "ce") == 16 * 15
    assert budget.pattern_transfer_count(RING, topo, gpus[:16], 1024, "ce") == 16
    exact = 64 * 63
    estimate = budget.pattern_transfer_count(ALL_TO_ALL, topo, gpus, 1024, "ce")
    assert exact <= estimate <= 2 * exact  # never below the real count; rounded up, not wildly
    assert 64 <= budget.pattern_transfer_count(RING, topo, gpus, 1024, "ce") <= 2 * 64


def test_the_budget_refuses_in_one_line_naming_estimate_and_budget():
    topo = synthetic_topology("fattree:128x8")
    with pytest.raises(ConfigError, match=r"about \d[\d,.]* GiB of memory; the budget is 2\.0 GiB"):
        budget.check_pattern_budget(ALL_TO_ALL, topo, list(range(topo.gpu_count)), [1 << 20], ["ce"], "uni",
                                    "model predict")
    budget.check_pattern_budget(RING, topo, list(range(topo.gpu_count)), [1 << 20], ["ce"], "uni", "model predict")


def test_the_largest_synthetic_fabric_fits_the_mapping_budget():
    from linkscope.topology.synthetic import MAX_CLUSTER_GPUS

    assert budget.estimate_map_bytes(MAX_CLUSTER_GPUS) <= budget.MEMORY_BUDGET_BYTES
    with pytest.raises(ConfigError, match="budget"):
        budget.check_budget(budget.estimate_map_bytes(4 * MAX_CLUSTER_GPUS), "map", "smaller")
