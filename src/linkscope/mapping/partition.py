"""Balanced graph partitioning of ranks into nodes, minimising the traffic that crosses nodes.

Recursive bisection: each bisection tries several starts (the ranks' own order, greedy graph
growing from a peripheral rank, and the spectral Fiedler order), refines each with
Kernighan–Lin passes (pair swaps with locking and roll-back to the best prefix),
and keeps the smallest cut. Parts have exact sizes (every node gets its number of slots).
"""
from __future__ import annotations

import heapq
from typing import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order
from scipy.sparse.linalg import ArpackNoConvergence, eigsh


def _cut(w: sp.csr_matrix, side: np.ndarray) -> float:
    coo = w.tocoo()
    return float(coo.data[side[coo.row] != side[coo.col]].sum()) / 2.0


def _greedy_growing(w: sp.csr_matrix, size_a: int) -> np.ndarray:
    n = w.shape[0]
    side = np.ones(n, dtype=bool)  # True = part B
    if size_a == 0:
        return side
    start = int(np.argmin(np.asarray(w.sum(axis=1)).ravel()))
    order = breadth_first_order(w, start, directed=False, return_predecessors=False)
    far = int(order[-1]) if len(order) else start
    connection = np.zeros(n)
    heap: list[tuple[float, int]] = [(0.0, far)]
    taken = 0
    indptr, indices, data = w.indptr, w.indices, w.data
    while taken < size_a:
        while heap:
            _, v = heapq.heappop(heap)
            if side[v]:
                break
        else:
            remaining = np.nonzero(side)[0]
            v = int(remaining[np.argmax(connection[remaining])])
        if not side[v]:
            continue
        side[v] = False
        taken += 1
        for k in range(indptr[v], indptr[v + 1]):
            u = indices[k]
            if side[u]:
                connection[u] += data[k]
                heapq.heappush(heap, (-connection[u], int(u)))
    return side


def _spectral(w: sp.csr_matrix, size_a: int) -> np.ndarray | None:
    n = w.shape[0]
    if n < 4 or w.nnz == 0:
        return None
    degree = np.asarray(w.sum(axis=1)).ravel()
    laplacian = sp.diags(degree) - w
    try:
        if n <= 400:
            _, vectors = np.linalg.eigh(laplacian.toarray())
            fiedler = vectors[:, 1]
        else:
            shift = -1e-3 * max(float(degree.max()), 1e-12)
            _, vectors = eigsh(laplacian.tocsc(), k=2, sigma=shift, which="LM")
            fiedler = vectors[:, 1]
    except (ArpackNoConvergence, RuntimeError, np.linalg.LinAlgError):
        return None
    side = np.ones(n, dtype=bool)
    side[np.argsort(fiedler, kind="stable")[:size_a]] = False
    return side


def _refine(w: sp.csr_matrix, side: np.ndarray, max_passes: int = 12, pass_swaps: int = 64) -> np.ndarray:
    """Kernighan–Lin passes: swap the best pair (one vertex from each side, among the few with
    the highest gains), lock both, keep going even through losses for up to ``pass_swaps``
    swaps, then roll back to the best prefix. Passes repeat while they lower the cut."""
    n = w.shape[0]
    side = side.copy()
    indptr, indices, data = w.indptr, w.indices, w.data
    top = 6
    scale = max(float(np.abs(data).max()) if data.size else 1.0, 1e-300)
    for _ in range(max_passes):
        sign = np.where(side, 1.0, -1.0)
        d = -sign * (w @ sign)  # D[v] = external - internal weight of v
        locked = np.zeros(n, dtype=bool)
        swaps: list[tuple[int, int]] = []
        total, best_total, best_len = 0.0, 0.0, 0
        for _ in range(min(pass_swaps, n // 2)):
            a_idx = np.nonzero(~side & ~locked)[0]
            b_idx = np.nonzero(side & ~locked)[0]
            if len(a_idx) == 0 or len(b_idx) == 0:
                break
            ca = a_idx[np.argsort(-d[a_idx], kind="stable")[:top]]
            cb = b_idx[np.argsort(-d[b_idx], kind="stable")[:top]]
            gains = d[ca][:, None] + d[cb][None, :] - 2.0 * w[ca][:, cb].toarray()
            k = np.unravel_index(np.argmax(gains), gains.shape)
            a, b = int(ca[k[0]]), int(cb[k[1]])
            total += float(gains[k])
            for v in (a, b):
                side[v] = not side[v]
                locked[v] = True
                for j in range(indptr[v], indptr[v + 1]):
                    u = indices[j]
                    d[u] += -2.0 * data[j] if side[u] == side[v] else 2.0 * data[j]
                row = slice(indptr[v], indptr[v + 1])
                same = side[indices[row]] == side[v]
                d[v] = float(data[row][~same].sum() - data[row][same].sum())
            swaps.append((a, b))
            if total > best_total + 1e-12 * scale:
                best_total, best_len = total, len(swaps)
        for a, b in swaps[best_len:]:  # undo the swaps after the best prefix
            side[a] = not side[a]
            side[b] = not side[b]
        if best_len == 0:
            break
    return side


def bisect(w: sp.csr_matrix, size_a: int) -> np.ndarray:
    """Boolean side per vertex (False = part A of exactly ``size_a`` vertices)."""
    n = w.shape[0]
    starts = []
    natural = np.ones(n, dtype=bool)
    natural[:size_a] = False
    starts.append(natural)
    if 0 < size_a < n and w.nnz:
        starts.append(_greedy_growing(w, size_a))
        spectral = _spectral(w, size_a)
        if spectral is not None:
            starts.append(spectral)
    best, best_cut = natural, float("inf")
    for start in starts:
        side = _refine(w, start) if w.nnz else start
        cut = _cut(w, side)
        if cut < best_cut - 1e-12:
            best, best_cut = side, cut
    return best


def partition(weights: sp.spmatrix | np.ndarray, part_sizes: Sequence[int]) -> np.ndarray:
    """Part index of each vertex; part ``k`` gets exactly ``part_sizes[k]`` vertices.

    ``weights`` is a symmetric (ranks x ranks) traffic matrix; sum(part_sizes) must equal its size.
    Parts are split recursively in halves of consecutive part numbers, so parts close in
    number (nodes under one leaf switch) end up with ranks that talk more.
    """
    w = sp.csr_matrix(weights, dtype=np.float64)
    w = ((w + w.T) * 0.5).tocsr()
    w.setdiag(0)
    w.eliminate_zeros()
    n = w.shape[0]
    if sum(part_sizes) != n:
        raise ValueError(f"part sizes sum to {sum(part_sizes)}, graph has {n} vertices")
    parts = np.zeros(n, dtype=int)

    def recurse(vertices: np.ndarray, first: int, sizes: Sequence[int]) -> None:
        if len(sizes) == 1:
            parts[vertices] = first
            return
        half = len(sizes) // 2
        size_a = int(sum(sizes[:half]))
        sub = w[vertices][:, vertices].tocsr()
        side = bisect(sub, size_a)
        recurse(vertices[~side], first, sizes[:half])
        recurse(vertices[side], first + half, sizes[half:])

    recurse(np.arange(n), 0, list(part_sizes))
    return parts


def cut_weight(weights: sp.spmatrix | np.ndarray, parts: np.ndarray) -> float:
    """Total traffic between ranks in different parts (each direction counted)."""
    coo = sp.coo_matrix(weights)
    return float(coo.data[parts[coo.row] != parts[coo.col]].sum())
