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


# ---- one guard for every simulated command: the fabric model's own estimate (issue 40) -------------
@pytest.mark.parametrize("argv", [
    ["bench", "--backend", "sim", "--synthetic", "fattree:4x8", "--sizes", "1MiB"],
    ["bench", "--backend", "sim", "--synthetic", "fattree:4x8", "--pattern", "all-to-all", "--sizes", "1MiB"],
    ["bench", "latency", "--backend", "sim", "--synthetic", "fattree:4x8"],
    ["bench", "nccl", "--backend", "sim", "--synthetic", "fattree:4x8", "--sizes", "1MiB"],
    ["survey", "--synthetic", "fattree:4x8", "--no-report", "-o", "{tmp}/s.json"],
    ["model", "predict", "--synthetic", "fattree:4x8", "--sizes", "1MiB"],
], ids=["bench", "bench-all-to-all", "latency", "nccl", "survey", "predict"])
def test_every_simulated_command_passes_the_model_guard(monkeypatch, capsys, tmp_path, argv):
    """``bench nccl --backend sim`` and ``bench --backend sim`` on fattree:4096x8 grew past 3.7 GB with
    no guard while ``model predict`` refused the same input: the guard now sits in the model itself.
    The budget is lowered to just below this fabric's estimate, so every command must refuse it."""
    from linkscope.cli import main
    from linkscope.model import budget
    from linkscope.topology.synthetic import synthetic_topology

    need = budget.estimate_model_bytes(synthetic_topology("fattree:4x8"))
    monkeypatch.setattr(budget, "MEMORY_BUDGET_BYTES", need - 1)
    assert main([a.format(tmp=tmp_path) for a in argv]) == 1
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("linkscope: error:")]
    assert len(errors) == 1 and "the fabric model of fattree:4x8" in errors[0] and "the budget is" in errors[0], err
    assert not (tmp_path / "s.json").exists()


def test_a_simulated_collective_on_many_gpus_is_refused_before_its_buffers(capsys):
    """``bench nccl --backend sim`` on the 1,024 GPUs of fattree:128x8 took 4.3 GB for one size."""
    from linkscope.cli import main

    assert main(["bench", "nccl", "--backend", "sim", "--synthetic", "fattree:128x8", "--op", "allreduce",
                 "--sizes", "4MiB"]) == 1
    assert "on 1,024 GPUs of fattree:128x8 would need about" in capsys.readouterr().err
