"""Per-flow sums and minima of edge quantities along routes given CSR style (``indptr``, edge ids), in one
compiled pass: the same floats, bit for bit, as NumPy's ``reduceat`` over the gathered values, which the
array path of ``FabricModel.peer_problem`` used (eight gathers of the whole incidence and six ``reduceat``
calls of a million segments each: 0.6 s of the 1,000,000-flow scale benchmark, issue 41).

Bit for bit because the order of the additions is NumPy's: ``np.add.reduceat`` gives a segment's first value
plus the pairwise sum of the others (``pairwise_sum`` in numpy/_core/src/umath/loops_utils.h.src: below 8
values a plain loop from -0.0; up to 128 eight accumulators combined as ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)),
then the remainder one by one; longer runs split in halves at a multiple of 8). The compiled pass takes
segments of 1 to 129 values (routes of up to 129 edges); anything else goes to the NumPy reference, which
``tests/model/test_pathsums.py`` compares it with (NumPy 2.4). A minimum keeps ``np.minimum``'s rule: the first
of two values where it is lower or NaN, else the second (of equal zeros, the later one).
"""
from __future__ import annotations

import numpy as np

try:  # numba is a dependency; the NumPy path keeps working without it
    from numba import njit
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False

_MAX_COMPILED_LENGTH = 129  # the first value plus NumPy's unrolled block of 128: no halving needed


def route_sums(indptr: np.ndarray, indices: np.ndarray, min_a: np.ndarray, min_b: np.ndarray, sum_a: np.ndarray,
               sum_b: np.ndarray, head_a: np.ndarray, head_b: np.ndarray, *, engine: str = "auto"
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For every route k (edges ``indices[indptr[k]:indptr[k + 1]]``, at least one): the minimum of ``min_a``
    and of ``min_b`` over its edges, and ``sum(sum_a) + (sum(head_a) - head_a[last edge])`` (likewise ``b``):
    per-edge arrays, each sum as ``np.add.reduceat`` adds. ``engine``: auto (compiled where Numba is
    available and every route has 1..129 edges), numpy."""
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    arrays = [np.asarray(x, dtype=float) for x in (min_a, min_b, sum_a, sum_b, head_a, head_b)]
    rows = min(x.size for x in arrays)
    lengths = np.diff(indptr)
    compiled = (engine == "auto" and HAVE_NUMBA and lengths.size > 0 and int(indptr[0]) == 0
                and int(indptr[-1]) == indices.size and int(lengths.min()) >= 1 and int(lengths.max()) <= _MAX_COMPILED_LENGTH
                and int(indices.min()) >= 0 and int(indices.max()) < rows)  # else NumPy's answer, or its error
    if not compiled:
        return _route_sums_np(indptr, indices, *arrays)
    # one row of the six quantities per edge: an edge of a route is then one cache line, not six
    return _route_sums_nb(indptr, indices, np.column_stack([x[:rows] for x in arrays]))


def _route_sums_np(indptr: np.ndarray, indices: np.ndarray, min_a: np.ndarray, min_b: np.ndarray, sum_a: np.ndarray,
                   sum_b: np.ndarray, head_a: np.ndarray, head_b: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The reference: gathers and ``reduceat``."""
    starts = indptr[:-1]
    last = indptr[1:] - 1
    out_min_a = np.minimum.reduceat(min_a[indices], starts)
    out_min_b = np.minimum.reduceat(min_b[indices], starts)
    sums = []
    for values, heads in ((sum_a, head_a), (sum_b, head_b)):
        total = np.add.reduceat(values[indices], starts)
        head = heads[indices]
        total += np.add.reduceat(head, starts) - head[last]
        sums.append(total)
    return out_min_a, out_min_b, sums[0], sums[1]


if HAVE_NUMBA:
    @njit(cache=True, nogil=True)
    def _pairwise(table: np.ndarray, indices: np.ndarray, lo: int, n: int, col: int) -> float:  # pragma: no cover - compiled
        """NumPy's pairwise_sum of column ``col`` over the edges ``indices[lo + 1:lo + n]`` (n - 1 <= 128 values)."""
        m = n - 1
        if m < 8:
            res = -0.0
            for j in range(lo + 1, lo + n):
                res += table[indices[j], col]
            return res
        b = lo + 1
        r0, r1, r2, r3 = table[indices[b], col], table[indices[b + 1], col], table[indices[b + 2], col], table[indices[b + 3], col]
        r4, r5, r6, r7 = table[indices[b + 4], col], table[indices[b + 5], col], table[indices[b + 6], col], table[indices[b + 7], col]
        i = 8
        while i < m - (m % 8):
            r0 += table[indices[b + i], col]
            r1 += table[indices[b + i + 1], col]
            r2 += table[indices[b + i + 2], col]
            r3 += table[indices[b + i + 3], col]
            r4 += table[indices[b + i + 4], col]
            r5 += table[indices[b + i + 5], col]
            r6 += table[indices[b + i + 6], col]
            r7 += table[indices[b + i + 7], col]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < m:
            res += table[indices[b + i], col]
            i += 1
        return res

    @njit(cache=True, nogil=True)
    def _route_sums_nb(indptr, indices, table):  # pragma: no cover - compiled
        n = indptr.size - 1
        out_min_a = np.empty(n)
        out_min_b = np.empty(n)
        out_a = np.empty(n)
        out_b = np.empty(n)
        for k in range(n):
            lo, hi = indptr[k], indptr[k + 1]
            first, last = indices[lo], indices[hi - 1]
            ma, mb = table[first, 0], table[first, 1]
            short = hi - lo <= 8  # NumPy adds the values after the first one by one, from -0.0
            sa = sb = ha = hb = -0.0
            for j in range(lo + 1, hi):
                e = indices[j]
                va, vb = table[e, 0], table[e, 1]
                if not (ma < va or ma != ma):
                    ma = va
                if not (mb < vb or mb != mb):
                    mb = vb
                if short:
                    sa += table[e, 2]
                    sb += table[e, 3]
                    ha += table[e, 4]
                    hb += table[e, 5]
            if not short:
                sa = _pairwise(table, indices, lo, hi - lo, 2)
                sb = _pairwise(table, indices, lo, hi - lo, 3)
                ha = _pairwise(table, indices, lo, hi - lo, 4)
                hb = _pairwise(table, indices, lo, hi - lo, 5)
            out_min_a[k] = ma
            out_min_b[k] = mb
            out_a[k] = (table[first, 2] + sa) + ((table[first, 4] + ha) - table[last, 4])
            out_b[k] = (table[first, 3] + sb) + ((table[first, 5] + hb) - table[last, 5])
        return out_min_a, out_min_b, out_a, out_b
