"""Multi-host topologies: structural costs equal the route-by-route ones; hierarchical by default."""
import numpy as np
import pytest

from linkscope.errors import UserError
from linkscope.mapping.api import is_cluster, map_onto
from linkscope.mapping.cluster import node_topology, split_hosts, topology_cluster_cost
from linkscope.mapping.cost import topology_cost
from linkscope.mapping.hierarchical import host_groups
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.synthetic import random_sparse, stencil


@pytest.mark.parametrize("metric", ["distance", "bandwidth", "latency", "alpha-beta"])
def test_structural_costs_equal_route_costs(metric):
    topo = synthetic_topology("fattree:4x2:4")  # 4 leaves of 2 NICs, 2 spines: same-leaf and cross-leaf pairs
    cluster = topology_cluster_cost(topo, metric)
    flat = topology_cost(topo, metric)  # a route per GPU pair
    host = np.repeat(np.arange(cluster.hosts), 2)
    local = np.tile(np.arange(2), cluster.hosts)
    a, b = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    node = topology_cost(node_topology(topo), metric)  # one host alone (node-sized: the fabric model's rates)
    same = host[a] == host[b]
    for term, expected in enumerate(flat.costs):
        got = cluster.pair_cost(term, host[a], local[a], host[b], local[b])
        np.fill_diagonal(got, 0.0)
        assert np.allclose(got[~same], expected[~same], rtol=1e-12, atol=1e-12)  # across hosts: the routes
        assert np.allclose(got[same], node.costs[term][local[a][same], local[b][same]], rtol=1e-12, atol=1e-12)
    assert cluster.host_names == ("n0", "n1", "n2", "n3")


def test_hosts_and_groups():
    topo = synthetic_topology("fattree:8x2:4")
    hosts = split_hosts(topo)
    assert hosts.gpus[3] == (6, 7) and len(hosts.switches) == 8 + 2  # 8 leaves, 2 spines
    cluster = topology_cluster_cost(topo, "latency", hosts=hosts)
    assert host_groups(cluster.host_cost(0), range(8)) == [[0], [1], [2], [3], [4], [5], [6], [7]]  # 1 host per leaf
    assert not is_cluster(load_preset("k80-16")) and is_cluster(topo)


def test_multi_host_topology_is_mapped_hierarchically():
    topo = synthetic_topology("fattree:32x8")
    a = map_onto(stencil((8, 8, 4)), topo, "latency")
    assert a.solver.startswith("hierarchical") and a.node_of_rank is not None
    assert np.bincount(a.node_of_rank).tolist() == [8] * 32
    assert a.cost < a.default_cost
    assert a.host_of_rank[0].startswith("n") and a.nics_of_rank[0][0].startswith(a.host_of_rank[0] + ".")
    again = map_onto(stencil((8, 8, 4)), topo, "latency")
    assert (again.node_of_rank, again.gpu_of_rank) == (a.node_of_rank, a.gpu_of_rank)  # deterministic


def test_fewer_ranks_than_gpus_and_errors():
    topo = synthetic_topology("fattree:4x4:4")
    a = map_onto(random_sparse(10, density=0.5, seed=3), topo, "bandwidth")
    assert a.ranks == 10 and len(set(zip(a.node_of_rank, a.gpu_of_rank))) == 10
    assert a.cost <= a.default_cost
    with pytest.raises(UserError, match="--nodes 2 with a topology of 4 hosts"):
        map_onto(stencil((2, 4)), topo, "bandwidth", nodes=2)
    with pytest.raises(UserError, match="do not fit"):
        map_onto(random_sparse(17, seed=1), topo, "bandwidth")
