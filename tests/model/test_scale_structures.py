"""The cluster-scale structures of the model (issue 41) give the answers of the direct searches they replace."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from linkscope.errors import TopologyError
from linkscope.model.predict import FabricModel
from linkscope.topology import query
from linkscope.topology.model import Device, DeviceKind, Link, LinkKind, Topology
from linkscope.topology.synthetic import synthetic_topology


def _two_class_fattree() -> Topology:
    """fattree:16x2:4 (16 leaves under 2 spines) plus a third spine under the first 6 leaves only: the
    leaves fall into two classes of twins, and some leaf pairs have three shortest paths, others two."""
    base = synthetic_topology("fattree:16x2:4")
    extra = Device(id="spine-x", kind=DeviceKind.NETWORK_SWITCH, name="spine switch")
    links = tuple(Link(f"leaf{k}", "spine-x", LinkKind.NETWORK, 1, 50.0) for k in range(6))
    return Topology(name="two-class", devices=base.devices + (extra,), links=base.links + links)


def _pairs(n: int, count: int, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, count)
    dst = rng.integers(0, n - 1, count)
    return src, np.where(dst >= src, dst + 1, dst)


def _without_twins(model: FabricModel) -> FabricModel:
    hier = model.router._hier
    hier.twin_rep = np.arange(hier.twin_rep.size)  # one search per destination switch
    hier._dist.clear()
    hier._next_hops.clear()
    model.router._cache.clear()
    return model


@pytest.mark.parametrize("topology", [_two_class_fattree(), synthetic_topology("fattree:40x4:8"),
                                      synthetic_topology("cluster:dgx-h100:5")], ids=["two-class", "fattree", "rails"])
def test_routes_through_twin_classes_equal_routes_per_destination(topology):
    twins = FabricModel(topology)
    hier = twins.router._hier
    assert np.unique(hier.twin_rep).size < hier.switch_nodes.size  # twins were found
    direct = _without_twins(FabricModel(topology))
    src, dst = _pairs(topology.gpu_count, 2000)
    a, b = twins.peer_problem(src, dst, np.ones(src.size)).A, direct.peer_problem(src, dst, np.ones(src.size)).A
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    ids = twins.graph.gpu_ids
    for s, d in zip(src[:100].tolist(), dst[:100].tolist()):  # the scalar walk agrees with the vectorised one
        assert np.array_equal(twins.router.path(ids[s], ids[d]), direct.router.path(ids[s], ids[d]))


def test_twin_routes_are_shortest_and_spread_over_spines():
    topo = _two_class_fattree()
    model = FabricModel(topo)
    g = model.graph
    nic = g.node_kind == g.node_kind[g.node_index["n0.nic0"]]
    src, dst = _pairs(topo.gpu_count, 3000, seed=9)
    problem = model.peer_problem(src, dst, np.ones(src.size))
    spine_x = g.node_index["spine-x"]
    through_x = 0
    for k in range(src.size):
        edges = problem.A.indices[problem.A.indptr[k]:problem.A.indptr[k + 1]]
        edges = edges[edges < g.n_edges]
        hops = [int(g.edge_dst[e]) for e in edges]
        through_x += spine_x in hops
        switch_hops = sum(1 for h in hops if not nic[h] and g.node_kind[h] == g.node_kind[g.node_index["leaf0"]])
        assert switch_hops in (0, 1, 3)  # same node, same leaf, or leaf - spine - leaf: never longer
    assert through_x > 0  # the extra spine carries its share of the first leaves' traffic


def test_duplex_ends_match_one_search_per_cpu():
    topo = synthetic_topology("cluster:dgx-h100:3")
    model = FabricModel(topo)
    g = model.graph
    adjacency = csr_matrix((np.ones(g.n_edges), (g.edge_src, g.edge_dst)), shape=(len(g.node_ids),) * 2)
    cpus = [g.node_index[c] for c in g.cpu_ids]
    hops = shortest_path(adjacency, unweighted=True, indices=cpus).min(axis=0)
    expected = np.ones(g.n_edges)
    gpu = np.array([topo.devices[i].is_gpu for i in range(len(g.node_ids))])
    pcie = (g.edge_kind == g.edge_kind[model.router.path(g.gpu_ids[0], g.cpu_ids[0])[0]]) & (gpu[g.edge_src] | gpu[g.edge_dst])
    expected[pcie & (hops[g.edge_dst] > hops[g.edge_src])] = model.params["pcie_duplex_efficiency_down"]
    expected[pcie & (hops[g.edge_dst] < hops[g.edge_src])] = model.params["pcie_duplex_efficiency_up"]
    assert len(cpus) > 1 and np.array_equal(model._duplex, expected)


def test_node_answers_equal_the_whole_cluster_answers():
    topo = synthetic_topology("cluster:dgx-h100:2")
    router = FabricModel(topo).router
    gpus = topo.gpus
    for g in gpus[::3]:
        assert [n.id for n in router.nearest_nics(g)] == [n.id for n in query.nearest_nics(topo, g)]
    for a, b in [(gpus[0], gpus[1]), (gpus[2], gpus[7]), (gpus[8], gpus[13]), (gpus[0], gpus[9])]:
        assert router.pair_level(a, b) == query.pair_level(topo, a, b)


def test_topology_lookups_are_cached_and_still_checked():
    topo = synthetic_topology("fattree:2x4")
    assert topo.gpu(np.int64(3)).index == 3 and topo.gpu(5) is topo.gpus[5]
    assert topo.by_id["n1.gpu0"] is topo.device("n1.gpu0")
    assert [(l.a, l.b) for l in topo.links_of("n0.gpu1")] == [(l.a, l.b) for l in topo.links if "n0.gpu1" in (l.a, l.b)]
    assert topo.links_of("no-such-device") == ()
    with pytest.raises(TopologyError, match="does not exist"):
        topo.gpu(8)
    with pytest.raises(TopologyError, match="no device"):
        topo.device("nowhere")
    with pytest.raises(TypeError):
        topo.by_id["x"] = topo.devices[0]  # read-only view


def _dedup_reference(M: np.ndarray, cap: np.ndarray) -> list[int]:
    """Rows kept by the definition: of identical non-empty rows, the lowest capacity (the first of equal ones)."""
    best: dict[bytes, int] = {}
    for i, row in enumerate(M):
        if not row.any():
            continue
        k = best.get(row.tobytes())
        if k is None or cap[i] < cap[k]:
            best[row.tobytes()] = i
    return sorted(best.values())


@pytest.mark.parametrize("collide", [False, True])
def test_dedup_rows_drops_exact_duplicates_only(monkeypatch, collide):
    """kernel.dedup_rows (vectorised) keeps what the definition keeps, on random matrices with repeated
    rows, several weights and tied capacities. With every hash equal (``collide``) the entry-by-entry
    check still tells distinct rows apart: no distinct row is lost and every dropped row has an identical
    kept row of no higher capacity (a duplicate it could not tell from the rest may stay: harmless)."""
    from scipy.sparse import csc_matrix

    from linkscope.model import kernel

    if collide:
        monkeypatch.setattr(kernel, "_row_hashes", lambda indptr, indices, bits: np.zeros(indptr.size - 1, np.uint64))
    rng = np.random.default_rng(7)
    for _ in range(100):
        m, n = int(rng.integers(1, 25)), int(rng.integers(1, 10))
        base = (rng.random((m, n)) < 0.4) * rng.choice([1.0, 2.0, 0.5], (m, n))
        M = np.vstack([base, base[rng.integers(0, m, int(rng.integers(0, 15)))], np.zeros((2, n))])
        M = M[rng.permutation(M.shape[0])]
        cap = rng.choice([1.0, 2.0, 3.0], M.shape[0])
        A, kept_cap = kernel.dedup_rows(csc_matrix(M), cap)
        keep = _dedup_reference(M, cap)
        if not collide:
            assert np.array_equal(A.toarray(), M[keep])
            assert np.array_equal(kept_cap, cap[keep])
            continue
        kept = A.toarray()
        for i in np.nonzero(M.any(axis=1))[0]:
            same = np.all(kept == M[i], axis=1)
            assert same.any() and kept_cap[same].min() <= cap[i]


def test_dedup_rows_compiled_parts_equal_the_numpy_ones():
    """The compiled row hashes and duplicate marks (kernel._row_hashes_nb, _duplicates_nb) equal the NumPy
    ones bit for bit on random CSR matrices with repeated rows, empty rows and forced hash collisions."""
    from scipy.sparse import csr_matrix

    from linkscope.model import kernel

    if not kernel.available():
        pytest.skip("numba not installed")
    rng = np.random.default_rng(11)
    for trial in range(200):
        m, n = int(rng.integers(1, 40)), int(rng.integers(1, 12))
        base = (rng.random((m, n)) < 0.4) * rng.choice([1.0, 2.0, 0.5, 1e-3], (m, n))
        M = np.vstack([base, base[rng.integers(0, m, int(rng.integers(0, 20)))], np.zeros((2, n))])
        R = csr_matrix(M[rng.permutation(M.shape[0])])
        R.sort_indices()
        indptr, indices = R.indptr.astype(np.int64), R.indices.astype(np.int64)
        data = np.ascontiguousarray(R.data, dtype=float)
        h = kernel._row_hashes_nb(indptr, indices, data.view(np.uint64))
        assert np.array_equal(h, kernel._row_hashes_np(indptr, indices, data.view(np.uint64)))
        if trial % 2:
            h = h % np.uint64(3)  # collisions: equal hashes for distinct rows
        lens = np.diff(indptr)
        rows = np.nonzero(lens)[0]
        if rows.size == 0:
            continue
        cap = rng.choice([1.0, 2.0], lens.size)
        order = rows[np.lexsort((rows, cap[rows], h[rows], lens[rows]))]
        assert np.array_equal(kernel._duplicates_nb(order, lens, h, indptr, indices, data),
                              kernel._duplicates_np(order, lens, h, indptr, indices, data))


@pytest.mark.parametrize("spec", ["cluster:dgx-h100:2", "cluster:hgx-a100-8-4nic:2", "fattree:4x4"])
def test_one_stage_arrays_equal_the_stages_one_by_one(spec):
    """FabricModel.one_stage_arrays (the array path of a cluster's collectives) gives, number for number,
    the stage ``stages`` gives for each pair: every ordered pair of GPUs with the transport method and each
    GPU's copy inside itself."""
    from linkscope.model.collectives import TRANSPORT_METHOD

    model = FabricModel(synthetic_topology(spec))
    n = model.topology.gpu_count
    src = [a for a in range(n) for b in range(n)]
    dst = [b for a in range(n) for b in range(n)]
    methods = ["local" if a == b else TRANSPORT_METHOD for a, b in zip(src, dst)]
    got = model.one_stage_arrays(src, dst, methods)
    assert got is not None
    for k, (a, b, how) in enumerate(zip(src, dst, methods)):
        (stage,) = model.stages(a, b, 1 << 20, how)
        part = slice(got.indptr[k], got.indptr[k + 1])
        np.testing.assert_array_equal(got.indices[part], stage.resources)
        np.testing.assert_array_equal(got.weights[part], stage.weights)
        assert (got.cap_gb_per_s[k], got.latency_s[k], got.raw_gb_per_s[k]) == \
            (stage.cap_gb_per_s, stage.latency_s, stage.raw_gb_per_s), (a, b)


def test_one_stage_arrays_leave_other_transfers_to_stages():
    """Transfers that are not one stage over one route go back to ``stages`` (None): a host-staged method,
    a pair without peer access, a copy to itself under a peer method, an index that is not a GPU."""
    model = FabricModel(synthetic_topology("cluster:dgx-h100:2"))
    assert model.one_stage_arrays([0, 1], [1, 2], ["sm-push", "staged"]) is None
    assert model.one_stage_arrays([0, 1], [1, 1], ["sm-push", "sm-push"]) is None
    assert model.one_stage_arrays([0], [99], ["sm-push"]) is None
    denied = synthetic_topology("cluster:dgx-h100:2")
    denied = Topology(name=denied.name, devices=tuple(
        dataclasses.replace(d, attributes={**(d.attributes or {}), "p2p": False}) if d.is_gpu and d.index == 3 else d
        for d in denied.devices), links=denied.links)
    assert FabricModel(denied).one_stage_arrays([0, 3], [3, 0], ["sm-push", "sm-push"]) is None


@pytest.mark.parametrize("spec", ["cluster:dgx-h100:4", "cluster:hgx-a100-8-4nic:3", "cluster:pcie-8gpu-2socket:2"])
def test_collectives_array_path_gives_the_loop_path_answers(monkeypatch, spec):
    """flows_time_s builds a cluster's one-stage problems with array operations from _ARRAYS_FROM_FLOWS
    distinct flows; forced on for every call and off for every call, every algorithm of allreduce,
    allgather and alltoall keeps its time to the bit."""
    from linkscope.model import collectives

    topo = synthetic_topology(spec)
    built = []
    original = FabricModel.one_stage_problem
    monkeypatch.setattr(FabricModel, "one_stage_problem", lambda self, *a, **k: built.append(1) or original(self, *a, **k))
    times = {}
    for label, threshold in (("loop", 10**12), ("arrays", 0)):
        monkeypatch.setattr(collectives, "_ARRAYS_FROM_FLOWS", threshold)
        model = collectives.CollectiveModel.of(topo)
        times[label] = [[(a.algorithm, a.protocol, a.time_us) for a in model.predict(op, list(range(topo.gpu_count)), 1 << 28).algorithms]
                        for op in ("allreduce", "allgather", "alltoall")]
    assert built  # the array path ran
    assert times["arrays"] == times["loop"]


@pytest.mark.parametrize("spec", ["fattree:8x4", "cluster:dgx-h100:3"])
def test_node_paths_equal_the_routes_one_by_one(spec):
    """Router.node_paths (the array path: NICs and the routes to them once per distinct end) gives, pair by
    pair, the route ``path`` gives, on random GPU pairs within and across nodes."""
    model = FabricModel(synthetic_topology(spec))
    g = model.graph
    src, dst = _pairs(model.topology.gpu_count, 400, seed=3)
    indptr, indices = model.router.node_paths(g.gpu_nodes[src], g.gpu_nodes[dst])
    for k, (a, b) in enumerate(zip(src.tolist(), dst.tolist())):
        one = model.router.path(g.node_ids[int(g.gpu_nodes[a])], g.node_ids[int(g.gpu_nodes[b])])
        assert np.array_equal(indices[indptr[k]:indptr[k + 1]], one)
