"""Process grids recognised from the traffic pattern, and split into boxes (issue 28)."""
import numpy as np
import pytest
import scipy.sparse as sp

from linkscope.mapping.grid import detect_grid, grid_split
from linkscope.mapping.hierarchical import _top_down
from linkscope.traffic.synthetic import random_graph, stencil


def _weights(traffic) -> sp.csr_matrix:
    return sp.csr_matrix(traffic.bytes)


def _cut_pairs(w: sp.csr_matrix, parts: np.ndarray) -> int:
    coo = w.tocoo()
    return int((parts[coo.row] != parts[coo.col]).sum())


@pytest.mark.parametrize(("dims", "periodic"), [((32, 32, 32), True), ((4, 6), (False, True)),
                                                ((3, 4, 5), (True, False, True)), ((12,), False)])
def test_stencils_are_recognised(dims, periodic):
    grid = detect_grid(_weights(stencil(dims, periodic=periodic)))
    assert grid is not None and grid.dims == dims
    flags = periodic if isinstance(periodic, tuple) else (periodic,) * len(dims)
    assert grid.periodic == tuple(f and d > 2 for f, d in zip(flags, dims))


def test_other_graphs_are_not_grids():
    assert detect_grid(_weights(random_graph(4096, degree=16, seed=1))) is None
    w = _weights(stencil((8, 8, 8), periodic=True))
    order = np.random.default_rng(0).permutation(w.shape[0])  # the same grid, ranks shuffled
    assert detect_grid(w[order][:, order]) is None
    dropped = w.tolil()
    dropped[0, 1] = dropped[1, 0] = 0  # one halo pair missing: not exactly a grid
    assert detect_grid(dropped.tocsr()) is None


def test_split_into_boxes_cuts_the_fewest_pairs():
    grid = detect_grid(_weights(stencil((32, 32, 32), periodic=True)))
    assert grid is not None
    parts = grid_split(grid, grid.coords(), [8] * 4096)
    assert np.bincount(parts).tolist() == [8] * 4096
    # 2x2x2 boxes: each of the 4,096 boxes has 24 pairs leaving it (both directions counted)
    assert _cut_pairs(_weights(stencil((32, 32, 32), periodic=True)), parts) == 4096 * 24


def test_split_follows_axis_weights():
    heavy = stencil((8, 8), periodic=False, weights=(1.0, 10.0))  # the second axis carries 10x
    grid = detect_grid(_weights(heavy))
    assert grid is not None and grid.axis_weight[1] > grid.axis_weight[0]
    parts = grid_split(grid, grid.coords(), [16] * 4).reshape(8, 8)
    assert all(len(set(row)) == 1 for row in parts.tolist())  # cuts only across the light axis: whole rows


def test_top_down_with_a_grid_tiles_the_hosts():
    w = _weights(stencil((8, 8, 8), periodic=True))
    grid = detect_grid(w)
    hosts = 64
    host_cost = np.where(np.eye(hosts, dtype=bool), 0.0, 1.0)
    host_cost[np.arange(hosts) // 4 != np.arange(hosts)[:, None] // 4] = 3.0  # leaves of 4 hosts
    np.fill_diagonal(host_cost, 0.0)
    placed = _top_down(w, host_cost, 8, 0, grid=grid)
    assert np.bincount(placed).tolist() == [8] * hosts
    assert _cut_pairs(w, placed) == hosts * 24  # every host holds a 2x2x2 box
    assert _cut_pairs(w, placed // 4) == (hosts // 4) * 64  # every leaf a 4x4x2 box (64 pairs out, the fewest)
