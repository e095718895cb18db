import numpy as np
import pytest

from linkscope.errors import UserError
from linkscope.traffic.synthetic import all_to_all, generate, neighbour_graph, parse_grid, random_sparse, ring, stencil, tree


def test_stencil2d_periodic_sends_to_four_neighbours():
    m = stencil((4, 4), periodic=True, size_bytes=100)
    assert (np.count_nonzero(m.bytes, axis=1) == 4).all()
    # rank 0 = (0,0): neighbours (0,1)=1, (0,3)=3, (1,0)=4, (3,0)=12
    assert sorted(np.nonzero(m.bytes[0])[0].tolist()) == [1, 3, 4, 12]
    assert np.array_equal(m.bytes, m.bytes.T)
    assert m.messages.sum() == 16 * 4


def test_stencil2d_open_corner_has_two_neighbours():
    m = stencil((4, 4), periodic=False, size_bytes=100)
    assert sorted(np.nonzero(m.bytes[0])[0].tolist()) == [1, 4]
    assert np.count_nonzero(m.bytes[5]) == 4


def test_stencil3d_and_weighted_axes():
    m = stencil((2, 2, 4), periodic=False, size_bytes=10, weights=(1, 2, 4))
    # rank 0 = (0,0,0): (1,0,0)=8 weight 1, (0,1,0)=4 weight 2, (0,0,1)=1 weight 4
    assert m.bytes[0, 8] == 10 and m.bytes[0, 4] == 20 and m.bytes[0, 1] == 40


def test_periodic_dimension_of_two_sends_twice():
    m = stencil((2,), periodic=True, size_bytes=5)
    assert m.bytes[0, 1] == 10 and m.messages[0, 1] == 2


def test_ring_all_to_all_tree():
    r = ring(4, 8)
    assert r.bytes[3, 0] == 8 and r.bytes[0, 3] == 0
    assert ring(4, 8, bidirectional=True).bytes[0, 3] == 8
    a = all_to_all(3, 2)
    assert a.bytes.tolist() == [[0, 2, 2], [2, 0, 2], [2, 2, 0]]
    b = tree(5, 1, "bcast")
    assert {tuple(x) for x in np.argwhere(b.bytes > 0)} == {(0, 1), (0, 2), (1, 3), (1, 4)}
    red = tree(5, 1, "reduce")
    assert np.array_equal(red.bytes, b.bytes.T)


def test_graph_and_random_are_reproducible():
    g = neighbour_graph(3, [(0, 1), (1, 2, 2.0)], size_bytes=10)
    assert g.bytes[1, 2] == 20 and g.bytes[2, 1] == 20 and g.bytes[0, 2] == 0
    with pytest.raises(UserError, match="outside"):
        neighbour_graph(3, [(0, 5)])
    x, y = random_sparse(10, seed=3), random_sparse(10, seed=3)
    assert np.array_equal(x.bytes, y.bytes)
    assert not np.array_equal(x.bytes, random_sparse(10, seed=4).bytes)
    assert np.array_equal(x.bytes, x.bytes.T) and np.trace(x.bytes) == 0


def test_generate_checks_its_options():
    assert generate("stencil3d", ranks=8).ranks == 8
    with pytest.raises(UserError, match="3-D grid"):
        generate("stencil3d", grid=(4, 4))
    with pytest.raises(UserError, match="unknown traffic pattern"):
        generate("spiral", ranks=4)
    with pytest.raises(UserError, match="process grid"):
        parse_grid("4by4")
