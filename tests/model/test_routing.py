import numpy as np
import pytest

from linkscope.errors import UserError
from linkscope.model.graph import FabricGraph
from linkscope.model.predict import FabricModel
from linkscope.model.routing import Router
from linkscope.topology import query
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology


def _nodes(graph, edges):
    return [graph.node_ids[graph.edge_dst[e]] for e in edges]


def test_node_scale_routes_follow_query_route():
    topo = load_preset("mi250x-8gcd")
    g = FabricGraph.from_topology(topo)
    r = Router(g)
    for a in range(8):
        for b in range(8):
            if a != b:
                ids = query.route_devices(topo, a, b)
                assert [ids[0]] + _nodes(g, r.path(ids[0], ids[-1])) == list(ids)


def test_fattree_spec_and_hierarchical_routes_match_query():
    topo = synthetic_topology("fattree:6x4:8")  # 24 NICs, 4 per leaf: 6 leaves, 4 spines
    assert topo.gpu_count == 24 and topo.source == "synthetic:fattree:6x4:8"
    g = FabricGraph.from_topology(topo)
    r = Router(g)
    rng = np.random.default_rng(0)
    for _ in range(40):
        a, b = rng.choice(24, 2, replace=False)
        ga, gb = topo.gpu(int(a)).id, topo.gpu(int(b)).id
        mine = r.path(ga, gb)
        ref = query.route(topo, ga, gb)
        assert len(mine) == len(ref)
        assert _nodes(g, mine)[-1] == gb
        assert np.allclose(sorted(g.edge_raw_gb_per_s[mine]), sorted(l.capacity_gb_per_s for l in ref))
    # vectorised routes equal the one-by-one ones
    src = [topo.gpu(int(x)).id for x in rng.integers(0, 24, 200)]
    dst = [topo.gpu(int((x + 1 + y) % 24)).id for x, y in zip(rng.integers(0, 24, 200), rng.integers(0, 23, 200))]
    pairs = [(s, d) for s, d in zip(src, dst) if s != d]
    indptr, indices = r.paths([p[0] for p in pairs], [p[1] for p in pairs])
    for k, (s, d) in enumerate(pairs):
        assert indices[indptr[k]:indptr[k + 1]].tolist() == Router(g).path(s, d).tolist()


def test_fattree_spreads_flows_over_spines_and_is_non_blocking():
    topo = synthetic_topology("fattree:8x4:8")  # 32 NICs: 8 leaves, 4 spines
    model = FabricModel(topo)
    # every GPU of nodes 0-3 sends to the matching GPU of nodes 4-7 (all inter-leaf): full rate each
    src = np.arange(16)
    dst = src + 16
    res = model.predict_peer_arrays(src, dst, np.full(16, 1 << 28))
    alone = model.predict_peer_arrays(src[:1], dst[:1], np.full(1, 1 << 28)).first_rate_gb_per_s[0]
    assert alone <= 50.0 * model.params.link_efficiency("network")
    assert np.allclose(res.first_rate_gb_per_s, alone, rtol=1e-9)
    # all 16 into one node's 4 NICs: each receiving NIC link is shared by 4 flows
    crowd = model.predict_peer_arrays(src, 16 + src % 4, np.full(16, 1 << 28)).first_rate_gb_per_s
    assert np.allclose(crowd, 50.0 * model.params.link_efficiency("network") / 4, rtol=1e-9)


@pytest.mark.parametrize("spec", ["fattree:", "fattree:2x", "fattree:2x2:7", "fattree:0x8", "fattree:2x2:x"])
def test_bad_fattree_specs(spec):
    with pytest.raises(UserError):
        synthetic_topology(spec)
