"""Structured grids: recognise a traffic graph that is exactly a process grid (a stencil's halo
exchange: ranks in row-major order, each talking to its neighbours along each axis, with or
without wrap-around), and split such a grid into parts by recursive coordinate bisection.

A grid cut into boxes is what a partitioner looks for on a stencil, and at 32,768 ranks METIS does
not find it (issue 28: 53,212 host-crossing halo edges of 196,608 on a 32x32x32 torus, where 2x2x2
boxes cut 49,152). The hierarchical mapper offers the boxes as one more candidate and keeps
whichever scores better under linkscope's own cost, so a grid never makes the answer worse.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

MAX_AXES = 3
"""Grids of up to this many axes are recognised (ordered factorisations of the rank count)."""


@dataclass(frozen=True)
class Grid:
    """A process grid: ``dims`` (row-major: the last axis varies fastest), ``periodic`` per axis,
    and ``axis_weight``: the mean traffic of one neighbour pair along each axis."""

    dims: tuple[int, ...]
    periodic: tuple[bool, ...]
    axis_weight: tuple[float, ...]

    def coords(self) -> np.ndarray:
        """(ranks x axes) coordinates of each rank."""
        return np.indices(self.dims).reshape(len(self.dims), -1).T


def _factorisations(n: int, axes: int) -> Iterator[tuple[int, ...]]:
    """Ordered factorisations of ``n`` into ``axes`` factors, each at least 2."""
    if axes == 1:
        if n >= 2:
            yield (n,)
        return
    for d in range(2, n + 1):
        if d * 2 ** (axes - 1) > n:
            break
        if n % d == 0:
            for rest in _factorisations(n // d, axes - 1):
                yield (d, *rest)


def _pairs(dims: tuple[int, ...], periodic: tuple[bool, ...]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(rank, neighbour) pairs along each axis, one direction (+1), wrapping where periodic."""
    n = int(np.prod(dims))
    ranks = np.arange(n)
    coords = np.indices(dims).reshape(len(dims), n)
    out = []
    for axis, d in enumerate(dims):
        stride = int(np.prod(dims[axis + 1:]))
        c = coords[axis] + 1
        keep = (c < d) | periodic[axis]
        keep &= d > 1
        out.append((ranks[keep], (ranks + (c % d - coords[axis]) * stride)[keep]))
    return out


def detect_grid(weights: sp.spmatrix) -> Grid | None:
    """The process grid whose neighbour pairs are exactly the non-zero pairs of ``weights`` (read
    as undirected), or None. Candidates are the ordered factorisations of the rank count into 1 to
    ``MAX_AXES`` factors; rank 0's neighbours rule most out before the whole pattern is compared."""
    w = sp.csr_matrix(weights)
    n = w.shape[0]
    if n < 8 or w.nnz == 0:
        return None
    if np.diff(w.indptr).max() > 2 * MAX_AXES:  # before the symmetric copy (a dense job has n^2 pairs)
        return None
    pattern = (w + w.T).tocsr()
    pattern.eliminate_zeros()
    if np.diff(pattern.indptr).max() > 2 * MAX_AXES:
        return None
    first = {int(x) for x in pattern.indices[pattern.indptr[0]:pattern.indptr[1]]}
    for axes in range(1, MAX_AXES + 1):
        for dims in _factorisations(n, axes):
            strides = [int(np.prod(dims[a + 1:])) for a in range(axes)]
            periodic = tuple(d > 2 and (d - 1) * s in first for d, s in zip(dims, strides))
            expected = {s for s in strides} | {(d - 1) * s for d, s, p in zip(dims, strides, periodic) if p}
            if expected != first:
                continue
            pairs = _pairs(dims, periodic)
            rows = np.concatenate([np.concatenate([a, b]) for a, b in pairs])
            cols = np.concatenate([np.concatenate([b, a]) for a, b in pairs])
            grid_pattern = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
            if grid_pattern.nnz != pattern.nnz or (grid_pattern.astype(bool) != pattern.astype(bool)).nnz:
                continue
            axis_weight = tuple(float(np.asarray(pattern[a, b]).mean()) if len(a) else 0.0 for a, b in pairs)
            return Grid(dims, periodic, axis_weight)
    return None


def grid_split(grid: Grid, coords: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """Part of each rank (rows of ``coords``, a subset of the grid's ranks) with exactly
    ``sizes[k]`` ranks in part k: recursive bisection of the coordinates, each cut across the axis
    where it crosses the least traffic (the box's cross-section times the axis's weight), parts
    in order so that consecutive parts are adjacent boxes.

    >>> g = Grid((4, 4), (False, False), (1.0, 1.0))
    >>> grid_split(g, g.coords(), [4, 4, 4, 4]).reshape(4, 4).tolist()
    [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]]
    """
    parts = np.zeros(len(coords), dtype=int)
    weight = np.asarray(grid.axis_weight) + 1e-300

    def recurse(rows: np.ndarray, first: int, sizes: Sequence[int]) -> None:
        if len(sizes) == 1:
            parts[rows] = first
            return
        half = len(sizes) // 2
        left = int(sum(sizes[:half]))
        sub = coords[rows]
        span = sub.max(axis=0) - sub.min(axis=0) + 1
        section = np.prod(span) / span * weight  # traffic a cut across each axis crosses
        section[span <= 1] = np.inf
        axis = int(np.argmin(section)) if np.isfinite(section).any() else 0
        keys = [sub[:, a] for a in reversed(range(sub.shape[1])) if a != axis] + [sub[:, axis]]
        order = np.lexsort(keys)
        recurse(rows[order[:left]], first, sizes[:half])
        recurse(rows[order[left:]], first + half, sizes[half:])

    recurse(np.arange(len(coords)), 0, list(sizes))
    return parts
