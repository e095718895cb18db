"""A grouped send/recv timed by classes of flows on a cluster of interchangeable nodes (``model.symmetry``,
``CollectiveModel.p2p_shifted``) gives the per-pair answer (``CollectiveModel.p2p``), and refuses where the
nodes or the ranks are not symmetric (issue 41: a 1,024-node alltoall without per-pair state)."""
from __future__ import annotations

import dataclasses

import pytest

from linkscope.model.collectives import CollectiveModel
from linkscope.model.symmetry import node_symmetry
from linkscope.topology.model import Topology
from linkscope.topology.synthetic import synthetic_topology

SIZES = (1 << 30, 1 << 20, 4096)


def _per_pair(model: CollectiveModel, op: str, ranks: list[int], size: int):
    return model.p2p(model.p2p_flows(op, ranks, size), ranks)


def _by_class(model: CollectiveModel, op: str, ranks: list[int], size: int):
    from linkscope.collectives import OP_TABLE, layout

    offsets = OP_TABLE[op].peer_offsets(len(ranks), layout(op, size, len(ranks)))
    return model.p2p_shifted([(d, float(c * 4)) for d, c in offsets], ranks)


def _same(a, b) -> None:
    assert a.time_us == pytest.approx(b.time_us, rel=1e-9)
    assert a.device_us == pytest.approx(b.device_us, rel=1e-9)
    assert (a.waves, a.protocol, a.channels, a.channel_tasks) == (b.waves, b.protocol, b.channels, b.channel_tasks)


@pytest.mark.parametrize("spec", ["cluster:dgx-h100:2", "cluster:dgx-h100:4", "cluster:dgx-h100:8",
                                  "cluster:dgx-h100:2:single", "cluster:dgx-h100:4:single",
                                  "cluster:dgx-h100:8:single"])
@pytest.mark.parametrize("op", ["alltoall", "sendrecv"])
def test_class_path_equals_every_pair(spec, op):
    model = CollectiveModel.of(synthetic_topology(spec))
    ranks = list(range(model.fabric.topology.gpu_count))
    for size in SIZES:
        fast = _by_class(model, op, ranks, size)
        assert fast is not None, "the class path must be taken on a symmetric cluster"
        _same(fast, _per_pair(model, op, ranks, size))
        # predict takes it too, with the per-pair answer
        assert model.predict(op, ranks, size).chosen.time_us == pytest.approx(_per_pair(model, op, ranks, size).time_us, rel=1e-9)


@pytest.mark.parametrize("ranks", [
    [g for node in (0, 2) for g in range(8 * node, 8 * node + 8)],  # two of four nodes
    [g for node in range(4) for g in range(8 * node, 8 * node + 4)],  # half of each node's GPUs
    [8 * node + g for node in (3, 1, 0, 2) for g in (7, 5, 3, 1, 0, 2, 4, 6)],  # nodes and GPUs in another order
])
def test_class_path_on_part_of_the_cluster(ranks):
    model = CollectiveModel.of(synthetic_topology("cluster:dgx-h100:4"))
    for size in SIZES:
        fast = _by_class(model, "alltoall", ranks, size)
        assert fast is not None
        _same(fast, _per_pair(model, "alltoall", ranks, size))


@pytest.mark.parametrize("ranks", [
    [8 * (k % 4) + k // 4 for k in range(32)],  # ranks dealt round-robin over the nodes
    [g for node in range(4) for g in (range(8 * node, 8 * node + 8) if node != 1 else range(15, 7, -1))],  # one node's GPUs reversed
    list(range(8)),  # one node
])
def test_ranks_that_are_not_whole_node_blocks_take_every_pair(ranks):
    model = CollectiveModel.of(synthetic_topology("cluster:dgx-h100:4"))
    assert model.rank_blocks(ranks) is None
    assert _by_class(model, "alltoall", ranks, 1 << 20) is None
    assert model.predict("alltoall", ranks, 1 << 20).chosen.time_us == pytest.approx(
        _per_pair(model, "alltoall", ranks, 1 << 20).time_us, rel=1e-12)


def _slower_link_in_node(spec: str, node: int, kind: str = "network") -> Topology:
    """The first ``kind`` link of ``node`` at half its rate."""
    topo = synthetic_topology(spec)
    k = next(i for i, link in enumerate(topo.links) if link.a.startswith(f"n{node}.") and link.kind.value == kind)
    links = list(topo.links)
    links[k] = dataclasses.replace(links[k], link_gb_per_s=links[k].link_gb_per_s / 2)
    return dataclasses.replace(topo, links=tuple(links))


def _nic_on_other_rail(spec: str, node: int) -> Topology:
    topo = synthetic_topology(spec)
    k = next(i for i, link in enumerate(topo.links) if link.a.startswith(f"n{node}.") and link.b == "rail0")
    links = list(topo.links)
    links[k] = dataclasses.replace(links[k], b="rail1")
    return dataclasses.replace(topo, links=tuple(links))


@pytest.mark.parametrize("topo, why", [
    (lambda: _slower_link_in_node("cluster:dgx-h100:4", 2), "differ"),
    (lambda: _slower_link_in_node("cluster:dgx-h100:4", 3, "nvlink"), "differ"),
    (lambda: _nic_on_other_rail("cluster:dgx-h100:4", 1), "different devices"),
    (lambda: synthetic_topology("fattree:8x8:4"), "different devices"),
    (lambda: synthetic_topology("cluster:v100-4-nvlink-ib:4"), "peer access"),
    (lambda: synthetic_topology("nvswitch:8"), "one node"),
])
def test_asymmetric_clusters_fall_back_to_every_pair(topo, why):
    model = CollectiveModel.of(topo())
    found, reason = node_symmetry(model.fabric)
    assert found is None and why in reason
    ranks = list(range(model.fabric.topology.gpu_count))
    assert _by_class(model, "alltoall", ranks, 1 << 20) is None
    assert model.predict("alltoall", ranks, 1 << 20).chosen.time_us == pytest.approx(
        _per_pair(model, "alltoall", ranks, 1 << 20).time_us, rel=1e-12)


def test_the_asymmetric_cluster_differs_from_the_symmetric_one():
    """The fall-back matters: the slower node changes the alltoall, which a class path built on node 0 would miss."""
    ranks = list(range(32))
    slow = CollectiveModel.of(_slower_link_in_node("cluster:dgx-h100:4", 2))
    plain = CollectiveModel.of(synthetic_topology("cluster:dgx-h100:4"))
    assert slow.predict("alltoall", ranks, 1 << 30).chosen.time_us != pytest.approx(
        plain.predict("alltoall", ranks, 1 << 30).chosen.time_us, rel=1e-6)


def test_a_large_cluster_alltoall_is_timed_by_classes():
    """256 nodes (2,048 ranks, 4 million sends): one wave per epoch of rounds, no per-pair state."""
    model = CollectiveModel.of(synthetic_topology("cluster:dgx-h100:256"))
    ranks = list(range(2048))
    fast = _by_class(model, "alltoall", ranks, 1 << 30)
    assert fast is not None and fast.waves == 256
    assert model.predict("alltoall", ranks, 1 << 30).chosen.time_us == fast.time_us
