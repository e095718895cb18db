"""model.groups: ``model predict``'s grouping lives in the model package: given flows are one
concurrent group per size, a pattern gives its plans' groups, every row is labelled predicted."""
import pytest

from linkscope.errors import ConfigError
from linkscope.model.groups import predict_groups
from linkscope.model.predict import FabricModel
from linkscope.topology.synthetic import synthetic_topology

MiB = 1 << 20


def test_flows_are_one_group_per_size_and_pattern_groups_follow_the_plans():
    model = FabricModel(synthetic_topology("nvswitch:4"))
    rows = predict_groups(model, [MiB, 4 * MiB], "ce", flows=[(0, 1), (2, 3)])
    assert [(r["group"], r["src"], r["dst"], r["size_bytes"]) for r in rows] == [
        ("flows", 0, 1, MiB), ("flows", 2, 3, MiB), ("flows", 0, 1, 4 * MiB), ("flows", 2, 3, 4 * MiB)]
    assert {r["provenance"] for r in rows} == {"predicted"}
    matrix = predict_groups(model, [MiB], "ce", pattern="matrix", gpus=[0, 1, 2])
    assert [(r["group"], r["src"], r["dst"]) for r in matrix][:2] == [("0->1", 0, 1), ("0->2", 0, 2)]
    assert len(matrix) == 6  # each ordered pair is its own group: predicted alone


def test_a_pattern_that_does_not_apply_is_refused_with_its_reason():
    model = FabricModel(synthetic_topology("nvswitch:2"))
    with pytest.raises(ConfigError, match="pattern 'all-to-all' needs at least 2 GPUs; 1 selected"):
        predict_groups(model, [MiB], "ce", pattern="all-to-all", gpus=[0])
