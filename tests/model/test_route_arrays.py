"""The array routes of a cluster (``Router.node_paths``: NICs and the routes to them once per structure of node
and position in it, the network hop by hop over arrays) and the per-flow sums of ``peer_problem`` give, pair by
pair and bit for bit, the answers of the one-pair routes and of NumPy's ``reduceat`` (issue 41)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from linkscope.errors import TopologyError
from linkscope.model import pathsums, routing
from linkscope.model.predict import FabricModel
from linkscope.topology.model import Device, DeviceKind, Link, LinkKind, Topology
from linkscope.topology.synthetic import synthetic_topology


def _mixed_nodes() -> Topology:
    """fattree:6x4:4 whose node 2 has an extra NVLink between two GPUs and whose node 4 lost its NVSwitch
    (its GPUs talk over PCIe and the CPU): three node structures, leaves under two spines."""
    base = synthetic_topology("fattree:6x4:4")
    links = [l for l in base.links if not (l.kind is LinkKind.NVLINK and l.a.startswith("n4."))]
    links.append(Link("n2.gpu0", "n2.gpu3", LinkKind.NVLINK, 2, 25.0))
    devices = [d for d in base.devices if d.id != "n4.nvswitch"]
    return Topology(name="mixed", devices=tuple(devices), links=tuple(links))


def _two_class_fattree() -> Topology:
    base = synthetic_topology("fattree:16x2:4")
    extra = Device(id="spine-x", kind=DeviceKind.NETWORK_SWITCH, name="spine switch")
    links = tuple(Link(f"leaf{k}", "spine-x", LinkKind.NETWORK, 1, 50.0) for k in range(6))
    return Topology(name="two-class", devices=base.devices + (extra,), links=base.links + links)


def _ends(model: FabricModel, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random pairs of node indices: mostly GPUs, some NICs, a few pairs within one node and a few of a GPU
    with itself."""
    g = model.graph
    rng = np.random.default_rng(seed)
    gpus = g.gpu_nodes
    hier = model.router._hier
    nics = np.nonzero((g.node_kind == routing._NIC) & (np.diff(hier._net_ptr) > 0))[0]  # storage NICs: no network
    pool = np.concatenate([gpus, gpus, gpus, nics])
    s, d = rng.choice(pool, count), rng.choice(pool, count)
    comp = model.router._hier.comp_of
    near = rng.choice(gpus, 40)  # partners in the same node
    partner = np.array([rng.choice(gpus[comp[gpus] == comp[x]]) for x in near.tolist()])
    s, d = np.concatenate([s, near, gpus[:3]]), np.concatenate([d, partner, gpus[:3]])
    return s, d


@pytest.mark.parametrize("make", [lambda: synthetic_topology("fattree:8x4"), lambda: synthetic_topology("fattree:40x4:8"),
                                  _two_class_fattree, _mixed_nodes, lambda: synthetic_topology("cluster:dgx-h100:3"),
                                  lambda: synthetic_topology("cluster:v100-4-nvlink-ib:4:single")],
                         ids=["fattree", "fattree-spines", "two-class", "mixed-nodes", "rails", "single-switch"])
def test_node_paths_equal_the_routes_one_by_one(make):
    model = FabricModel(make())
    g = model.graph
    s, d = _ends(model, 600, seed=11)
    indptr, indices = model.router.node_paths(s, d)
    fresh = FabricModel(model.topology)  # the one-pair routes from an empty cache
    for k, (a, b) in enumerate(zip(s.tolist(), d.tolist())):
        one = fresh.router.path(g.node_ids[a], g.node_ids[b])
        assert np.array_equal(indices[indptr[k]:indptr[k + 1]], one), (g.node_ids[a], g.node_ids[b])


def test_node_paths_of_pairs_within_nodes_only():
    """No pair between nodes: pairs of node 0's GPUs (a GPU with itself among them), then every GPU with itself."""
    model = FabricModel(synthetic_topology("fattree:8x4"))
    g = model.graph
    gpus = g.gpu_nodes
    for src, dst in ((np.repeat(gpus[:4], 20), np.tile(gpus[:4], 20)), (gpus[:70], gpus[:70])):
        indptr, indices = model.router.node_paths(src, dst)
        for k, (a, b) in enumerate(zip(src.tolist(), dst.tolist())):
            assert np.array_equal(indices[indptr[k]:indptr[k + 1]], model.router.path(g.node_ids[a], g.node_ids[b]))
    assert model.router.node_paths(gpus[:70], gpus[:70])[0][-1] == 0  # a GPU with itself: no edge


def test_node_paths_with_a_named_nic_equal_the_routes_one_by_one():
    """A NIC choice by name (one NIC per GPU, looked up per end rather than per structure) on the array path."""
    topo = synthetic_topology("cluster:dgx-h100:3")
    model = FabricModel(topo, nics="mlx5_3")
    g = model.graph
    s, d = _ends(model, 300, seed=12)
    indptr, indices = model.router.node_paths(s, d)
    fresh = FabricModel(topo, nics="mlx5_3")
    for k, (a, b) in enumerate(zip(s.tolist(), d.tolist())):
        assert np.array_equal(indices[indptr[k]:indptr[k + 1]], fresh.router.path(g.node_ids[a], g.node_ids[b]))


def test_groups_are_the_structures_of_the_nodes():
    """Components share a group exactly when their devices' kinds and their local links (ends by position,
    kind, count, GB/s) are the same, the signature ``_structure`` once compared as Python tuples."""
    topo = _mixed_nodes()
    hier = FabricModel(topo).router._hier

    def signature(comp: int) -> tuple:
        devices = [topo.devices[i] for i in hier.members[comp].tolist()]
        loc = {dev.id: k for k, dev in enumerate(devices)}
        links = [topo.links[i] for i in hier.comp_links[comp].tolist()]
        return (tuple(dev.kind.value for dev in devices),
                tuple((loc[l.a], loc[l.b], l.kind.value, l.count, l.link_gb_per_s) for l in links))

    groups = hier._groups()
    sigs = [signature(c) for c in range(hier.n_comp)]
    for a in range(hier.n_comp):
        for b in range(hier.n_comp):
            assert (groups.of[a] == groups.of[b]) == (sigs[a] == sigs[b])
    assert len(set(sigs)) >= 4  # node structures (3) and a switch
    for c in range(hier.n_comp):  # each component's row of the group tables is its members and links
        assert np.array_equal(groups.members[groups.of[c]][groups.row[c]], hier.members[c])
        assert np.array_equal(groups.links[groups.of[c]][groups.row[c]], hier.comp_links[c])


def test_equal_rows_survive_a_hash_collision(monkeypatch):
    rng = np.random.default_rng(2)
    rows = rng.integers(0, 3, (300, 4))
    expected = np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)
    for collide in (False, True):
        if collide:  # every row the same key: the entry-by-entry check must separate them
            monkeypatch.setattr(routing, "_row_keys", lambda r: np.zeros(r.shape[0], dtype=np.uint64))
        labels = routing._equal_rows(rows)
        assert all((labels[i] == labels[j]) == (expected[i] == expected[j]) for i in range(300) for j in range(0, 300, 7))


def test_array_routes_name_the_first_end_without_a_nic():
    """A node without a NIC: the array path raises the one-pair path's error for the first such GPU."""
    base = synthetic_topology("fattree:4x2:4")
    gone = {"n2.nic0", "n2.nic1"}
    topo = Topology(name="no-nic", devices=tuple(d for d in base.devices if d.id not in gone),
                    links=tuple(l for l in base.links if l.a not in gone and l.b not in gone))
    model = FabricModel(topo)
    g = model.graph
    src = np.array([g.node_index["n0.gpu0"]] * 70 + [g.node_index["n2.gpu1"], g.node_index["n2.gpu0"]])
    dst = np.array([g.node_index["n1.gpu0"]] * 72)
    with pytest.raises(TopologyError) as one:
        FabricModel(topo).router.path("n2.gpu0", "n1.gpu0")
    with pytest.raises(TopologyError) as many:
        model.router.node_paths(src, dst)
    assert str(many.value) == str(one.value) and "GPU4" in str(one.value)


def test_array_routes_refuse_an_end_without_links_and_a_cpu_end():
    base = synthetic_topology("fattree:4x2:4")
    lone = Device(id="n9.gpu0", kind=DeviceKind.GPU, name=base.gpus[0].name, index=8)
    topo = Topology(name="lonely", devices=base.devices + (lone,), links=base.links)
    model = FabricModel(topo)
    g = model.graph
    src, dst = np.full(70, g.node_index["n0.gpu0"]), np.full(70, g.node_index["n1.gpu0"])
    for end, error in (("n9.gpu0", "has no link"), ("n1.cpu", "between GPUs")):
        for a, b in ((end, "n0.gpu1"), ("n0.gpu1", end)):
            with pytest.raises(TopologyError, match=error):
                model.router.node_paths(np.append(src, g.node_index[a]), np.append(dst, g.node_index[b]))


@pytest.mark.parametrize("spec", ["fattree:40x4:8", "cluster:dgx-h100:3"])
def test_peer_problem_sums_compiled_equal_numpy(monkeypatch, spec):
    """The FlowProblem of the compiled per-flow sums is the NumPy reduceat one, bit for bit."""
    model = FabricModel(synthetic_topology(spec))
    rng = np.random.default_rng(4)
    n = model.topology.gpu_count
    src = rng.integers(0, n, 3000)
    dst = (src + rng.integers(1, n, 3000)) % n
    sizes = rng.uniform(1, 1e8, 3000)
    compiled = model.peer_problem(src, dst, sizes)
    original = pathsums.route_sums
    monkeypatch.setattr("linkscope.model.predict.route_sums", lambda *a, **k: original(*a, engine="numpy"))
    reference = model.peer_problem(src, dst, sizes)
    for f in dataclasses.fields(compiled):
        a, b = getattr(compiled, f.name), getattr(reference, f.name)
        if f.name == "A":
            assert (a != b).nnz == 0 and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
        else:
            assert np.array_equal(np.asarray(a).view(np.uint8), np.asarray(b).view(np.uint8)), f.name


def _random_routes(rng: np.random.Generator, lengths: np.ndarray, n_edges: int) -> tuple[np.ndarray, np.ndarray]:
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    return indptr, rng.integers(0, n_edges, int(indptr[-1]))


def test_route_sums_compiled_equal_reduceat_bit_for_bit():
    if not pathsums.HAVE_NUMBA:
        pytest.skip("numba missing: only the NumPy path exists")
    rng = np.random.default_rng(7)
    n_edges = 500
    values = [rng.standard_normal(n_edges) * 10.0 ** rng.integers(-9, 9, n_edges) for _ in range(6)]
    values[0][:20] = 0.0  # signed zeros and NaN in the minima: np.minimum's rule
    values[0][20:40] = -0.0
    values[1][5] = np.nan
    values[3][:30] = -0.0
    lengths = np.concatenate([rng.integers(1, 10, 3000), rng.integers(1, 130, 300), [1, 8, 9, 16, 17, 128, 129]])
    indptr, indices = _random_routes(rng, lengths, n_edges)
    got = pathsums.route_sums(indptr, indices, *values)
    want = pathsums.route_sums(indptr, indices, *values, engine="numpy")
    for a, b in zip(got, want):
        assert np.array_equal(a.view(np.uint64), b.view(np.uint64))
    # the order of the additions matters: a plain left-to-right sum gives other bits on these routes
    plain = np.array([values[2][indices[indptr[k]:indptr[k + 1]]].cumsum()[-1] for k in range(lengths.size)])
    assert (plain.view(np.uint64) != np.add.reduceat(values[2][indices], indptr[:-1]).view(np.uint64)).any()


def test_route_sums_leave_what_they_cannot_take_to_numpy():
    rng = np.random.default_rng(8)
    values = [rng.random(50) for _ in range(6)]
    for lengths in (np.array([3, 200, 4]), np.array([3, 0, 4])):  # a route longer than 129 edges, an empty one
        indptr, indices = _random_routes(rng, lengths, 50)
        if lengths.min() == 0:
            indices = indices[:-1]  # reduceat reads the next route's first value for an empty one: keep it in range
            indptr = np.minimum(indptr, indices.size)
        got = pathsums.route_sums(indptr, indices, *values)
        want = pathsums.route_sums(indptr, indices, *values, engine="numpy")
        assert all(np.array_equal(a, b, equal_nan=True) for a, b in zip(got, want))
    with pytest.raises(IndexError):  # an edge beyond the arrays: NumPy's error, never a read out of bounds
        pathsums.route_sums(np.array([0, 2]), np.array([1, 50]), *values)
