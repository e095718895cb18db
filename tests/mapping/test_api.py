import numpy as np
import pytest

from linkscope.errors import UserError
from linkscope.mapping.api import map_cluster, map_onto, map_traffic, network_costs
from linkscope.mapping.cluster import copies
from linkscope.mapping.cost import topology_cost
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.synthetic import ring, stencil


@pytest.fixture(scope="module")
def k80():
    return load_preset("k80-16")


@pytest.mark.parametrize("grid", [(4, 4), (2, 2, 4)])
@pytest.mark.parametrize("periodic", [False, True])
@pytest.mark.parametrize("metric", ["bandwidth", "distance"])
def test_k80_stencils_never_worse_and_3d_strictly_better(k80, grid, periodic, metric):
    traffic = stencil(grid, periodic=periodic, size_bytes=1 << 20)
    a = map_traffic(traffic, topology_cost(k80, metric), k80, time_limit_s=1)
    assert a.cost <= a.default_cost
    assert sorted(a.gpu_of_rank) == list(range(16))
    if len(grid) == 3:
        assert a.cost < a.default_cost
        assert a.summary().startswith("saves ")
    elif a.cost == a.default_cost:
        assert "already optimal" in a.summary() or "no better mapping" in a.summary()


def test_uniform_fabric_says_mapping_cannot_help():
    topo = synthetic_topology("nvswitch:8")
    a = map_traffic(stencil((2, 4)), topology_cost(topo, "bandwidth"), topo)
    assert a.uniform
    assert a.summary() == "mapping cannot help on this fabric: every GPU pair is NV18 (uniform)"
    assert a.gpu_of_rank == tuple(range(8))


def test_reorder_mode_keeps_devices_and_gives_split_keys():
    topo = synthetic_topology("pcie:2x4")
    traffic = stencil((2, 4), periodic=True)
    mapped = map_traffic(traffic, topology_cost(topo, "distance"), topo)
    reorder = map_traffic(traffic, topology_cost(topo, "distance"), topo, mode="reorder")
    assert reorder.gpu_of_rank == tuple(range(8))
    keys = reorder.new_rank_of_rank
    assert sorted(keys) == list(range(8))
    # the process on GPU g becomes rank keys[g]; that logical rank is where the mapping put it
    assert all(mapped.gpu_of_rank[keys[g]] == g for g in range(8)) or reorder.cost == mapped.cost
    assert reorder.cost == pytest.approx(mapped.cost)


def test_fewer_ranks_than_gpus_and_too_many_ranks():
    topo = synthetic_topology("pcie:2x4")
    a = map_traffic(ring(6), topology_cost(topo, "distance"), topo)
    assert len(a.gpu_of_rank) == 6 and len(set(a.gpu_of_rank)) == 6
    with pytest.raises(UserError, match="10 ranks but 8 GPUs"):
        map_traffic(ring(10), topology_cost(topo, "distance"), topo)


def test_nics_are_spread_over_equally_near_nics():
    topo = load_preset("v100-4-nvlink-ib")
    a = map_traffic(ring(4), topology_cost(topo, "bandwidth"), topo)
    assert all(len(n) == 1 for n in a.nics_of_rank)
    assert len({n for (n,) in a.nics_of_rank}) >= 2
    assert all(a.cores_of_rank)  # each rank gets a disjoint share of its local cores
    flat = [c for cores in a.cores_of_rank for c in cores]
    assert len(flat) == len(set(flat))


def test_cluster_mapping_of_many_ranks():
    node = synthetic_topology("pcie:2x4")
    cost = topology_cost(node, "distance")
    a = map_cluster(stencil((4, 4, 4), periodic=True), copies(cost, 8, network_costs(cost, node)), node)
    assert a.cost <= a.default_cost
    assert np.bincount(a.node_of_rank).tolist() == [8] * 8
    assert a.host_of_rank[0].startswith("node")


def test_cluster_mapping_names_nodes_after_the_hosts_the_capture_saw():
    import dataclasses

    node = synthetic_topology("nvswitch:2")
    seen = dataclasses.replace(ring(4), hosts=("b", "b", "a", "a"))
    a = map_onto(seen, node, "bandwidth", nodes=2)
    assert sorted(a.host_of_rank) == ["a", "a", "b", "b"]
    assert "hosts from the traffic matrix: b, a" in a.notes
    other = map_onto(dataclasses.replace(ring(4), hosts=("x",) * 4), node, "bandwidth", nodes=2)
    assert set(other.host_of_rank) == {"node0", "node1"} and any("saw 1 host(s) (x)" in n for n in other.notes)
    named = map_onto(seen, node, "bandwidth", nodes=2, hosts=["p", "q"])
    assert set(named.host_of_rank) == {"p", "q"}
