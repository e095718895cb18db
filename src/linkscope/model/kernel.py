"""The compiled event loop of the flow simulation (Numba), same answers as ``contention.simulate``'s NumPy path.

At every event (stages start, or complete) it re-solves the max-min rates of all active stages
with sequential water-filling: all unfrozen stages rise together; the next thing to happen is
either the lowest stage cap or the resource whose remaining capacity over its unfrozen weight is
lowest (a queue of levels in buckets, the lowest bucket a 4-ary heap, stale keys moved up when they
reach the top); freezing a stage lowers its
resources' remaining capacity and weight. Every stage freezes once, so a solve costs O(nnz log
resources) whatever the depth of the bottleneck structure; with resources deduplicated (rows of ``A``
with the same stages and weights: only the tightest can bind) a 100,000-flow fat tree solves in
milliseconds. Stages and resources are numbered in the order a solve freezes them (``_fresh_order``
before the first event); whenever 1/``RENUMBER_EVERY`` of the stages numbered are done, they are numbered afresh
(``_renumber``): the stages left in the order the last solve froze them, without the finished ones and
without the resources that can no longer bind. The levels move little from one event to the next, so a
solve's walks read memory nearly in sequence, and every per-stage array shrinks with the stages left.

Event semantics (start times, completion batching by ``rtol``, per-stage finish times, which stages
are re-timed) follow ``contention.simulate`` line by line, so exact mode agrees with the NumPy path
to rounding (tests/model/test_exact_reference.py checks both against answers recorded before this
kernel existed).

Numba compiles on first use (a few seconds; cached on disk afterwards). ``available()`` says
whether it can be used; ``contention.simulate(engine="numpy")`` forces the NumPy path.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix

try:  # numba is a dependency; the NumPy path keeps working without it
    from numba import njit
    HAVE_NUMBA = True
except ImportError:  # pragma: no cover - exercised only where numba is missing
    HAVE_NUMBA = False


# The event loop renumbers the stages left (``_renumber``) whenever 1/RENUMBER_EVERY of those numbered last
# time are done. Chosen, not fitted, on the 1,000,000-flow scale benchmark (kernel CPU seconds, load ~1,
# docs/benchmarks.md, issue 41): a solve slows as its stages drift from the order they were numbered in (0.09 s
# right after a renumbering at 744,000 stages, 0.13 s twenty events later), a renumbering costs about one
# solve; every 1/4 done 34-37 s, 1/16 28-31 s, 1/32 28-31 s, 1/64 31-34 s.
RENUMBER_EVERY = 16


# ``_solve``'s shortcut after completions keeps only the stages slower than the slowest finished one by more
# than this relative margin: equal rates reached through different sums of floating-point terms differ by a
# few ulps (1e-16 relative), so 1e-9 separates "equal" from "slower" with room to spare; a stage inside the
# margin is merely solved again (exact). The NumPy path keeps the same margin (``contention._EPS``).
FLOOR_RTOL = 1e-9


# ``_solve`` keeps the resources' levels in buckets of rising level (``_bucket``): LEVEL_BUCKETS_PER_OCTAVE per
# doubling of the level, LEVEL_BUCKETS in all (the last takes every higher level); only the lowest bucket not
# yet empty is a heap. Any number gives the same rates to rounding (the order of equal levels may change).
# Chosen, not fitted, on one solve of the 1,000,000-flow benchmark (event 150: 606,393 stages, 99,034
# resources; median CPU ratio to one 4-ary heap of every resource, docs/benchmarks.md, branch solve8): 64 per
# octave 0.96, 256 0.85, 512 0.85, 1024 0.89 (load 2.5-2.7); with the levels taken as a bucket becomes the heap,
# 64 0.83, 128 0.71, 256 0.75, 1024 0.77 (load 7.5, as close as the noise).
LEVEL_BUCKETS_PER_OCTAVE = 256
LEVEL_BUCKETS = 64 * LEVEL_BUCKETS_PER_OCTAVE


def available() -> bool:
    return HAVE_NUMBA


def dedup_rows(A: csc_matrix, capacity: np.ndarray) -> tuple[csc_matrix, np.ndarray]:
    """Drop resources that cannot bind: of rows of ``A`` with the same stages and weights, keep the
    one of lowest capacity (any rates that fit it fit the others; the first of equal ones), and drop
    empty rows. Returns the reduced matrix (stages unchanged) and its capacities.

    Rows are grouped by length and a 64-bit hash of their (stage, weight) entries (``_row_hashes``),
    lowest capacity first, and each row is compared entry by entry with the first of its group
    (``_duplicates``); a row that differs from it (a hash collision) is kept, so only exact duplicates
    are dropped. Compiled where Numba is available (no temporaries the size of the matrix), NumPy
    otherwise; both keep the same rows."""
    R, capacity = _dedup_csr(A, capacity)
    return csc_matrix(R), capacity


def _dedup_csr(A: csc_matrix, capacity: np.ndarray) -> tuple[csr_matrix, np.ndarray]:
    """``dedup_rows`` with the reduced matrix by rows (sorted indices), which the kernels need too."""
    R = A.tocsr()
    R.sort_indices()
    capacity = np.asarray(capacity, dtype=float)
    lens = np.diff(R.indptr)
    rows = np.nonzero(lens)[0]
    if rows.size == 0:
        return R[rows], capacity[rows]
    data = np.ascontiguousarray(R.data, dtype=float)
    indptr, indices = R.indptr, R.indices  # as scipy made them (int32 here): no copies of the whole matrix
    h = _row_hashes(indptr, indices, data.view(np.uint64))
    order = rows[np.lexsort((rows, capacity[rows], h[rows], lens[rows]))]
    if HAVE_NUMBA:
        drop = _duplicates_nb(order, lens, h, indptr, indices, data)
    else:  # pragma: no cover - exercised only where numba is missing
        drop = _duplicates_np(order, lens, h, indptr, indices, data)
    keep = np.sort(order[~drop])
    return R[keep], capacity[keep]


def _row_hashes_np(indptr: np.ndarray, indices: np.ndarray, bits: np.ndarray) -> np.ndarray:
    """Per row, the wrapping sum over its entries of splitmix64's finaliser of (column, weight bits,
    position in the row); 0 for an empty row."""
    lens = np.diff(indptr)
    h = np.zeros(lens.size, dtype=np.uint64)
    rows = np.nonzero(lens)[0]
    if rows.size == 0:
        return h
    with np.errstate(over="ignore"):
        pos = (np.arange(indices.size) - np.repeat(indptr[:-1], lens)).astype(np.uint64)
        entry = _mix64(indices.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
                       ^ bits ^ (pos + np.uint64(1)) * np.uint64(0xC2B2AE3D27D4EB4F))
        h[rows] = np.add.reduceat(entry, indptr[rows])
    return h


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on unsigned 64-bit integers (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _duplicates_np(order: np.ndarray, lens: np.ndarray, h: np.ndarray, indptr: np.ndarray,
                   indices: np.ndarray, data: np.ndarray) -> np.ndarray:
    """For rows in ``order`` (grouped by length and hash, best first): True where the row equals the
    first row of its group entry by entry (a duplicate that cannot bind)."""
    new_group = np.ones(order.size, dtype=bool)
    new_group[1:] = (lens[order[1:]] != lens[order[:-1]]) | (h[order[1:]] != h[order[:-1]])
    leader = order[np.maximum.accumulate(np.where(new_group, np.arange(order.size), 0))]
    n = lens[order]
    mine = np.repeat(indptr[order], n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
    theirs = mine - np.repeat(indptr[order] - indptr[leader], n)
    differs = (indices[mine] != indices[theirs]) | (data[mine] != data[theirs])
    mismatch = np.add.reduceat(differs, np.cumsum(n) - n) > 0
    return ~(new_group | mismatch)


_row_hashes = _row_hashes_np


if HAVE_NUMBA:
    _GB = 1e9

    @njit(cache=True, nogil=True)
    def _row_hashes_nb(indptr, indices, bits):
        """``_row_hashes_np`` in one pass, the same hashes (wrapping uint64 arithmetic)."""
        n = indptr.size - 1
        h = np.zeros(n, dtype=np.uint64)
        k1 = np.uint64(0x9E3779B97F4A7C15)
        k2 = np.uint64(0xC2B2AE3D27D4EB4F)
        m1 = np.uint64(0xBF58476D1CE4E5B9)
        m2 = np.uint64(0x94D049BB133111EB)
        s30, s27, s31 = np.uint64(30), np.uint64(27), np.uint64(31)
        for r in range(n):
            acc = np.uint64(0)
            a = indptr[r]
            for k in range(a, indptr[r + 1]):
                x = (np.uint64(indices[k]) * k1) ^ bits[k] ^ ((np.uint64(k - a) + np.uint64(1)) * k2)
                x = (x ^ (x >> s30)) * m1
                x = (x ^ (x >> s27)) * m2
                acc += x ^ (x >> s31)
            h[r] = acc
        return h

    @njit(cache=True, nogil=True)
    def _duplicates_nb(order, lens, h, indptr, indices, data):
        """``_duplicates_np`` in one pass, the same answer."""
        drop = np.zeros(order.size, dtype=np.bool_)
        lead = order[0]
        for j in range(1, order.size):
            r = order[j]
            if lens[r] != lens[lead] or h[r] != h[lead]:
                lead = r
                continue
            a, b = indptr[r], indptr[lead]
            same = True
            for k in range(lens[r]):
                if indices[a + k] != indices[b + k] or data[a + k] != data[b + k]:
                    same = False
                    break
            drop[j] = same
        return drop

    _row_hashes = _row_hashes_nb

    @njit(cache=True, nogil=True, error_model="numpy")
    def _sift(hkey, hrow, size, i):
        """Move the entry at position i of a 4-ary min-heap down until the heap property holds (keys
        only rise). Keys sit beside their rows, so a step reads one short run of memory."""
        k = hkey[i]
        row = hrow[i]
        while True:
            c = 4 * i + 1
            if c >= size:
                break
            best = c
            bk = hkey[c]
            last = min(c + 4, size)
            for q in range(c + 1, last):
                if hkey[q] < bk:
                    bk = hkey[q]
                    best = q
            if k <= bk:
                break
            hkey[i] = bk
            hrow[i] = hrow[best]
            i = best
        hkey[i] = k
        hrow[i] = row

    @njit(cache=True, nogil=True, error_model="numpy")
    def _bucket(level, e_lo):
        """The bucket of a level >= 0: 0 for 0, else by the level's binary exponent over ``e_lo`` (the lowest
        level's at the solve's start) and its leading mantissa bits, LEVEL_BUCKETS_PER_OCTAVE per octave,
        clamped to the buckets there are. Never lower for a higher level (all the queue needs)."""
        if level <= 0:
            return 0
        m, e = math.frexp(level)  # level = m * 2**e, 0.5 <= m < 1
        b = (e - e_lo) * LEVEL_BUCKETS_PER_OCTAVE + int((m - 0.5) * (2 * LEVEL_BUCKETS_PER_OCTAVE)) + 1
        return min(max(b, 1), LEVEL_BUCKETS - 1)

    @njit(cache=True, nogil=True)
    def _scratch(n_rows):
        """``_solve``'s per-resource scratch for ``n_rows`` resources: ``rw`` (two entries each), ``hkey``,
        ``hrow``, ``rkey``, ``rnext`` (see ``_solve``)."""
        return (np.empty(2 * n_rows), np.empty(n_rows), np.empty(n_rows, dtype=np.int32), np.empty(n_rows),
                np.empty(n_rows, dtype=np.int32))

    @njit(cache=True, nogil=True, error_model="numpy")
    def _solve(col_ptr, col_row, col_w, row_ptr, row_col, capacity, caps, cap_order, act, n_act, new_rates,
               frozen, rw, hkey, hrow, rkey, rnext, head, rates, floor, seq, unit, count):
        """Max-min rates of the active stages ``act[:n_act]`` into ``new_rates`` (other entries untouched).
        ``frozen`` must be True for every inactive stage; it is True for all stages on return.
        ``rw``: scratch, two entries per resource, its remaining capacity at 2i and its unfrozen weight at
        2i + 1 (side by side: a freeze updates both, one cache line per resource); ``hkey``, ``hrow``,
        ``rkey``, ``rnext``: scratch, one entry per resource; ``head``: scratch, LEVEL_BUCKETS entries
        (the level queue, below). ``unit``: every weight in ``col_w`` is 1 (the weights are not read,
        the same sums). ``count`` (unit weights only, else empty): per resource, how many active stages use
        it, kept by the caller as stages start and finish; the unfrozen weights then start from it (the
        stages kept below ``floor`` taken off) instead of being summed over every active stage. The counts
        are whole numbers, exact in any order: the same weights.

        ``floor`` > 0 (only stages left since the last solve): stages slower than ``floor`` keep their
        ``rates`` - removing stages from a max-min allocation never changes the slower ones' rates (the
        levels below the slowest removed stage saturate exactly as before) - and only the rest is solved.
        Slower means below ``floor`` by more than rounding (``FLOOR_RTOL``): a stage whose rate equals the
        removed one's, computed on another resource an ulp lower, may rise, so it is solved again.

        ``seq`` receives the active stages in the order they froze (the slow ones kept first): the
        order ``_renumber`` numbers them in. Returns how many it holds (``n_act``)."""
        n_rows = capacity.size
        counted = count.size == n_rows
        for i in range(n_rows):
            rw[2 * i] = capacity[i]
            rw[2 * i + 1] = count[i] if counted else 0.0
        n_left = 0
        n_seq = 0
        for k in range(n_act):
            j = act[k]
            new_rates[j] = 0.0
            if floor > 0 and rates[j] < floor * (1 - FLOOR_RTOL):
                frozen[j] = True
                seq[n_seq] = j
                n_seq += 1
                r = rates[j]
                new_rates[j] = r
                if counted:
                    for e in range(col_ptr[j], col_ptr[j + 1]):
                        rw[2 * col_row[e] + 1] -= 1.0
                if np.isfinite(r):
                    for e in range(col_ptr[j], col_ptr[j + 1]):
                        rw[2 * col_row[e]] -= r if unit else col_w[e] * r
                continue
            frozen[j] = False
            n_left += 1
            if not counted:
                for e in range(col_ptr[j], col_ptr[j + 1]):
                    rw[2 * col_row[e] + 1] += 1.0 if unit else col_w[e]
        # The level queue. Each resource's key is a lower bound of its level (levels only rise as stages freeze).
        # Keys fall in buckets of rising level (``_bucket``: a higher key never in a lower bucket); each bucket
        # holds a list of its resources (``head``, ``rnext``, keys in ``rkey``) until it is the lowest one not yet
        # empty (``cur``), whose resources then form a 4-ary heap (``hkey``, ``hrow``, ``size``). The heap's top,
        # once its key is its level, is the lowest level of all: every other key of the heap is at least its key,
        # and every resource still in a list has a key, hence a level, in a higher bucket. A key found stale
        # moves up within the heap, or, if its level now lies in a higher bucket, to that bucket's list (one
        # write instead of a walk down the heap); a bucket's resources take their levels as it becomes the heap
        # (those without a stage left to freeze leave, those risen past it move on). One heap of every resource
        # (before branch solve8) walked all of it at every re-key: 176,000 walks of about eight levels per solve
        # at 100,000 resources.
        lo = np.inf
        for i in range(n_rows):
            if rw[2 * i + 1] > 1e-12:
                key = max(rw[2 * i], 0.0) / rw[2 * i + 1]
                rkey[i] = key
                if 0 < key < lo:
                    lo = key
            else:
                rkey[i] = -1.0  # no stage left to freeze: never in the queue
        e_lo = math.frexp(lo)[1] if np.isfinite(lo) else 0
        head[:] = -1
        for i in range(n_rows - 1, -1, -1):  # each list in rising resource number
            if rkey[i] >= 0:
                b = _bucket(rkey[i], e_lo)
                rnext[i] = head[b]
                head[b] = i
        cur = -1
        size = 0
        ptr = 0
        n = cap_order.size
        while n_left > 0:
            while ptr < n and frozen[cap_order[ptr]]:
                ptr += 1
            capv = caps[cap_order[ptr]] if ptr < n else np.inf
            # keys are lower bounds (levels only rise as stages freeze): bring the top up to date
            # until it holds; a row is re-sifted only when it reaches the top, not at every touch
            while True:
                while size == 0 and cur < LEVEL_BUCKETS - 1:  # the next bucket not empty becomes the heap
                    cur += 1
                    i = head[cur]
                    head[cur] = -1
                    while i >= 0:  # each resource with its level now: dropped, to a higher bucket, or in
                        nx = rnext[i]
                        w = rw[2 * i + 1]
                        if w > 1e-12:
                            real = max(rw[2 * i], 0.0) / w
                            b = _bucket(real, e_lo)
                            if b > cur:
                                rkey[i] = real
                                rnext[i] = head[b]
                                head[b] = i
                            else:
                                hkey[size] = real
                                hrow[size] = i
                                size += 1
                        i = nx
                    for i in range((size - 2) // 4, -1, -1):
                        _sift(hkey, hrow, size, i)
                if size == 0:
                    break
                top = hrow[0]
                w = rw[2 * top + 1]
                real = max(rw[2 * top], 0.0) / w if w > 1e-12 else np.inf
                if real == hkey[0]:
                    break
                if np.isfinite(real):
                    b = _bucket(real, e_lo)
                    if b <= cur:
                        hkey[0] = real
                        _sift(hkey, hrow, size, 0)
                        continue
                    rkey[top] = real  # to a higher bucket's list
                    rnext[top] = head[b]
                    head[b] = top
                # off the heap (moved, or every stage on it froze elsewhere: dropped)
                size -= 1
                hkey[0] = hkey[size]
                hrow[0] = hrow[size]
                if size > 0:
                    _sift(hkey, hrow, size, 0)
            rowv = hkey[0] if size > 0 else np.inf
            if capv <= rowv:
                if not np.isfinite(capv):  # nothing binds the rest
                    for k in range(n_act):
                        j = act[k]
                        if not frozen[j]:
                            frozen[j] = True
                            seq[n_seq] = j
                            n_seq += 1
                            new_rates[j] = np.inf
                    break
                cols_from, cols_to, the_row, r = ptr, ptr + 1, -1, capv
            else:
                the_row = hrow[0]
                size -= 1
                hkey[0] = hkey[size]
                hrow[0] = hrow[size]
                if size > 0:
                    _sift(hkey, hrow, size, 0)
                cols_from, cols_to, r = row_ptr[the_row], row_ptr[the_row + 1], rowv
            for q in range(cols_from, cols_to):
                j = cap_order[q] if the_row < 0 else row_col[q]
                if frozen[j]:
                    continue
                frozen[j] = True
                seq[n_seq] = j
                n_seq += 1
                n_left -= 1
                new_rates[j] = r
                if unit:
                    for e in range(col_ptr[j], col_ptr[j + 1]):
                        i = 2 * col_row[e]
                        rw[i] -= r
                        rw[i + 1] -= 1.0
                else:
                    for e in range(col_ptr[j], col_ptr[j + 1]):
                        i = 2 * col_row[e]
                        rw[i] -= col_w[e] * r
                        rw[i + 1] -= col_w[e]
        return n_seq

    @njit(cache=True, nogil=True, error_model="numpy")
    def _active_count(col_ptr, col_row, act, n_act, n_rows):
        """Per resource (``n_rows`` of them; 0: none), how many of the stages ``act[:n_act]`` use it."""
        count = np.zeros(n_rows)
        if n_rows > 0:
            for k in range(n_act):
                j = act[k]
                for e in range(col_ptr[j], col_ptr[j + 1]):
                    count[col_row[e]] += 1.0
        return count

    @njit(cache=True, nogil=True, error_model="numpy")
    def _compact(col_ptr, col_row, col_w, row_ptr, row_col, capacity, caps, cap_order, gone):
        """The incidence lists without the stages that are done (frozen for good: a solve would only
        skip them) and without the resources that can no longer bind: those whose capacity exceeds
        what every stage not yet done could ask of them at its cap (stages only leave, so such a
        resource stays slack for good and leaving it out changes no rate). Each list is filled into
        room for the old one and cut to what it kept."""
        n_rows = row_ptr.size - 1
        n = caps.size
        demand = np.zeros(n_rows)
        for j in range(n):
            if not gone[j]:
                for e in range(col_ptr[j], col_ptr[j + 1]):
                    demand[col_row[e]] += col_w[e] * caps[j]
        live = np.empty(n_rows, dtype=np.bool_)
        for i in range(n_rows):
            live[i] = not capacity[i] > demand[i] * (1 + 1e-9)
        new_cptr = np.empty(n + 1, dtype=np.int32)
        new_crow = np.empty(col_row.size, dtype=np.int32)
        new_cw = np.empty(col_row.size)
        q = 0
        for j in range(n):
            new_cptr[j] = q
            if gone[j]:
                continue
            for e in range(col_ptr[j], col_ptr[j + 1]):
                if live[col_row[e]]:
                    new_crow[q] = col_row[e]
                    new_cw[q] = col_w[e]
                    q += 1
        new_cptr[n] = q
        new_rptr = np.empty(n_rows + 1, dtype=np.int32)
        new_rcol = np.empty(row_col.size, dtype=np.int32)
        p = 0
        for i in range(n_rows):
            new_rptr[i] = p
            if live[i]:
                for e in range(row_ptr[i], row_ptr[i + 1]):
                    if not gone[row_col[e]]:
                        new_rcol[p] = row_col[e]
                        p += 1
        new_rptr[n_rows] = p
        new_order = np.empty(cap_order.size, dtype=np.int32)
        m = 0
        for k in range(cap_order.size):
            if not gone[cap_order[k]]:
                new_order[m] = cap_order[k]
                m += 1
        return new_cptr, new_crow[:q].copy(), new_cw[:q].copy(), new_rptr, new_rcol[:p].copy(), new_order[:m].copy()

    @njit(cache=True, nogil=True, error_model="numpy")
    def _renumber(col_ptr, col_row, col_w, capacity, caps, cap_order, gone, seq, n_seq):
        """``_compact`` that also numbers the stages and resources afresh, densely: the stages not done,
        those of the last solve in the order they froze there (``seq``), then those not started; the
        resources that can still bind (as ``_compact``), in the order those stages first use them.
        A solve freezes stages resource by resource in rising level, and the levels move little between
        events, so numbered this way its walks read memory nearly in sequence, and every per-stage array
        shrinks to the stages left. Returns the new stages' old numbers (``perm``), the old-to-new map
        (-1: done), the lists, the resources' capacities and the stages by cap."""
        n_rows = capacity.size
        n = caps.size
        demand = np.zeros(n_rows)
        for j in range(n):
            if not gone[j]:
                for e in range(col_ptr[j], col_ptr[j + 1]):
                    demand[col_row[e]] += col_w[e] * caps[j]
        new_of = np.full(n, -1, dtype=np.int64)
        perm = np.empty(n, dtype=np.int64)
        m = 0
        for k in range(n_seq):
            j = seq[k]
            if not gone[j] and new_of[j] < 0:
                new_of[j] = m
                perm[m] = j
                m += 1
        for j in range(n):
            if not gone[j] and new_of[j] < 0:
                new_of[j] = m
                perm[m] = j
                m += 1
        live = np.empty(n_rows, dtype=np.bool_)
        for i in range(n_rows):
            live[i] = not capacity[i] > demand[i] * (1 + 1e-9)
        # one pass over the stages left, in their new order: the resources numbered as first met, the
        # column lists filled into room for every old entry and cut to what they kept
        row_new = np.full(n_rows, -1, dtype=np.int64)
        n_new_rows = 0
        new_cptr = np.empty(m + 1, dtype=np.int32)
        new_crow = np.empty(col_row.size, dtype=np.int32)
        new_cw = np.empty(col_row.size)
        row_count = np.zeros(n_rows + 1, dtype=np.int32)
        q = 0
        for k in range(m):
            j = perm[k]
            new_cptr[k] = q
            for e in range(col_ptr[j], col_ptr[j + 1]):
                i = col_row[e]
                if live[i]:
                    r = row_new[i]
                    if r < 0:
                        r = n_new_rows
                        row_new[i] = r
                        n_new_rows += 1
                    new_crow[q] = r
                    new_cw[q] = col_w[e]
                    row_count[r + 1] += 1
                    q += 1
        new_cptr[m] = q
        new_crow = new_crow[:q].copy()
        new_cw = new_cw[:q].copy()
        row_count = row_count[:n_new_rows + 1]
        new_capacity = np.empty(n_new_rows)
        for i in range(n_rows):
            if row_new[i] >= 0:
                new_capacity[row_new[i]] = capacity[i]
        new_rptr = np.cumsum(row_count).astype(np.int32)
        fill = new_rptr[:-1].copy()
        new_rcol = np.empty(q, dtype=np.int32)
        for k in range(m):  # stages in rising number: each resource's list comes out sorted
            for e in range(new_cptr[k], new_cptr[k + 1]):
                i = new_crow[e]
                new_rcol[fill[i]] = k
                fill[i] += 1
        new_order = np.empty(m, dtype=np.int32)
        c = 0
        for k in range(cap_order.size):
            if not gone[cap_order[k]]:
                new_order[c] = new_of[cap_order[k]]
                c += 1
        return perm[:m].copy(), new_of, new_cptr, new_crow, new_cw, new_rptr, new_rcol, new_capacity, new_order

    @njit(cache=True, nogil=True, error_model="numpy")
    def _simulate(col_ptr, col_row, col_w, row_ptr, row_col, capacity, caps, stage_bytes, stage_latency,
                  stage_next, flow_first, rtol, renumber, unit):
        """The event loop. ``renumber``: at each list compaction number the stages and resources left
        afresh (``_renumber``) instead of only shortening the lists (``_compact``); the same rates to
        rounding (the order of a few floating-point sums changes), faster on large problems."""
        n_all = caps.size
        n = n_all
        n_rows = capacity.size
        caps = caps.copy()
        stage_latency = stage_latency.copy()
        stage_next = stage_next.copy()
        orig = np.arange(n)  # the caller's number of each stage
        cap_order = np.argsort(caps, kind="mergesort").astype(np.int32)
        act = np.empty(n, dtype=np.int64)  # the active stages, in the order they started
        pending = np.zeros(n, dtype=np.bool_)
        ready = np.full(n, np.inf)
        rates = np.zeros(n)
        new_rates = np.zeros(n)
        frozen = np.ones(n, dtype=np.bool_)
        remaining = stage_bytes.copy()
        since = np.zeros(n)
        finish_at = np.full(n, np.inf)
        done = np.full(n_all, np.nan)  # by the caller's numbers
        first_rate = np.full(n_all, np.nan)
        rw, hkey, hrow, rkey, rnext = _scratch(n_rows)
        head = np.empty(LEVEL_BUCKETS, dtype=np.int32)
        # unit weights: per resource, how many active stages use it (see _solve); empty otherwise
        count = np.zeros(n_rows if unit else 0)
        started = np.empty(n, dtype=np.int64)
        seq = np.empty(n, dtype=np.int64)
        n_seq = 0
        for f in range(flow_first.size):
            j = flow_first[f]
            ready[j] = stage_latency[j]
            pending[j] = True
        next_ready = np.inf
        for j in range(n):
            if pending[j] and ready[j] < next_ready:
                next_ready = ready[j]
        t = 0.0
        events = 0
        n_act = 0
        floor = -1.0  # slowest rate of the stages completed at the last event (-1: a start, solve all)
        gone = np.zeros(n, dtype=np.bool_)
        n_gone = 0
        compacted_at = 0  # stages done when the row lists were last compacted (without renumbering)
        while True:
            n_started = 0
            if next_ready <= t * (1 + 1e-12) + 1e-15:
                bound = t * (1 + 1e-12) + 1e-15
                next_ready = np.inf
                for j in range(n):
                    if pending[j]:
                        if ready[j] <= bound:
                            pending[j] = False
                            act[n_act] = j
                            n_act += 1
                            rates[j] = 0.0
                            since[j] = t
                            started[n_started] = j
                            n_started += 1
                            if unit:
                                for e in range(col_ptr[j], col_ptr[j + 1]):
                                    count[col_row[e]] += 1.0
                        elif ready[j] < next_ready:
                            next_ready = ready[j]
            if n_act == 0:
                if not np.isfinite(next_ready):
                    break
                t = next_ready
                continue
            n_seq = _solve(col_ptr, col_row, col_w, row_ptr, row_col, capacity, caps, cap_order, act, n_act,
                           new_rates, frozen, rw, hkey, hrow, rkey, rnext, head, rates, floor if n_started == 0 else -1.0, seq, unit,
                           count)
            t_c = np.inf
            for k in range(n_act):
                j = act[k]
                new = new_rates[j]
                old = rates[j]
                if new == old:
                    if finish_at[j] < t_c:
                        t_c = finish_at[j]
                    continue
                # bytes moved at the old rate since the last update, then the finish at the new rate
                if np.isfinite(old):
                    left = max(remaining[j] - old * _GB * (t - since[j]), 0.0)
                else:
                    left = 0.0
                remaining[j] = left
                since[j] = t
                rates[j] = new
                if left <= 0:
                    finish_at[j] = t
                else:
                    dt = left / (new * _GB)
                    finish_at[j] = t + dt if not np.isnan(dt) else np.inf
                if finish_at[j] < t_c:
                    t_c = finish_at[j]
            for k in range(n_started):
                first_rate[orig[started[k]]] = rates[started[k]]
            events += 1
            if next_ready < t_c:
                t = next_ready
                continue
            if not np.isfinite(t_c):
                return done, first_rate, events, False
            # the batch: every stage finishing within 2 x rtol of the first completion, released half
            # way (each keeps its own finish time; each release moves by at most rtol x t_c)
            limit = t_c * (1 + 2 * rtol) + (t_c - t) * 1e-9 + 1e-15
            t_event = t_c * (1 + rtol)
            if np.isfinite(next_ready):  # never past a start
                limit = min(limit, next_ready)
                t_event = min(t_event, next_ready)
            limit = max(limit, t_c)
            t_event = max(t_event, t_c)
            floor = np.inf
            kept = 0
            for k in range(n_act):
                j = act[k]
                if finish_at[j] > limit:
                    act[kept] = j
                    kept += 1
                else:
                    if rates[j] < floor:
                        floor = rates[j]
                    done[orig[j]] = finish_at[j]
                    gone[j] = True
                    n_gone += 1
                    if unit:
                        for e in range(col_ptr[j], col_ptr[j + 1]):
                            count[col_row[e]] -= 1.0
                    remaining[j] = 0.0
                    rates[j] = 0.0
                    nx = stage_next[j]
                    if nx >= 0:
                        ready[nx] = finish_at[j] + stage_latency[nx]
                        pending[nx] = True
                        if ready[nx] < next_ready:
                            next_ready = ready[nx]
                    finish_at[j] = np.inf
            n_act = kept
            t = t_event
            if renumber > 0 and renumber * n_gone > n:  # 1/renumber of the stages are done: renumber
                perm, new_of, col_ptr, col_row, col_w, row_ptr, row_col, capacity, cap_order = _renumber(
                    col_ptr, col_row, col_w, capacity, caps, cap_order, gone, seq, n_seq)
                n = perm.size
                n_rows = capacity.size
                caps = caps[perm]
                stage_latency = stage_latency[perm]
                nxt = stage_next[perm]
                for k in range(n):
                    if nxt[k] >= 0:
                        nxt[k] = new_of[nxt[k]]
                stage_next = nxt
                orig = orig[perm]
                pending = pending[perm]
                ready = ready[perm]
                rates = rates[perm]
                remaining = remaining[perm]
                since = since[perm]
                finish_at = finish_at[perm]
                is_act = np.zeros(n, dtype=np.bool_)  # the active stages in rising new number (a pass, not a sort)
                for k in range(n_act):
                    is_act[new_of[act[k]]] = True
                act = np.empty(n, dtype=np.int64)
                c = 0
                for j in range(n):
                    if is_act[j]:
                        act[c] = j
                        c += 1
                new_rates = np.zeros(n)
                frozen = np.ones(n, dtype=np.bool_)
                started = np.empty(n, dtype=np.int64)
                seq = np.empty(n, dtype=np.int64)
                gone = np.zeros(n, dtype=np.bool_)
                rw, hkey, hrow, rkey, rnext = _scratch(n_rows)
                count = _active_count(col_ptr, col_row, act, n_act, n_rows if unit else 0)
                n_gone = 0
            elif renumber == 0 and 4 * (n_gone - compacted_at) > n - compacted_at:  # a quarter of the rest
                col_ptr, col_row, col_w, row_ptr, row_col, cap_order = _compact(
                    col_ptr, col_row, col_w, row_ptr, row_col, capacity, caps, cap_order, gone)
                compacted_at = n_gone
                count = _active_count(col_ptr, col_row, act, n_act, n_rows if unit else 0)
        return done, first_rate, events, True


def _fresh_order(col_ptr: np.ndarray, col_row: np.ndarray, col_w: np.ndarray, row_ptr: np.ndarray,
                 row_col: np.ndarray, capacity: np.ndarray, caps: np.ndarray) -> tuple:
    """``_renumber`` before the first event: the stages in the order they freeze with every stage
    active. A solve walks a binding resource's stages and each one's resources; numbered this way
    those walks read memory nearly in sequence instead of at random (a 1,000,000-stage solve about 3x
    faster than in the caller's order). Any order gives the same rates to rounding."""
    n, n_rows = caps.size, capacity.size
    cap_order = np.argsort(caps, kind="mergesort").astype(np.int32)
    seq = np.empty(n, dtype=np.int64)
    rw, hkey, hrow, rkey, rnext = _scratch(n_rows)
    n_seq = _solve(col_ptr, col_row, col_w, row_ptr, row_col, capacity, caps, cap_order, np.arange(n), n,
                   np.zeros(n), np.ones(n, dtype=np.bool_), rw, hkey, hrow, rkey, rnext,
                   np.empty(LEVEL_BUCKETS, dtype=np.int32), np.zeros(n), -1.0, seq, _unit_weights(col_w), np.empty(0))
    return _renumber(col_ptr, col_row, col_w, capacity, caps, cap_order, np.zeros(n, dtype=np.bool_), seq, n_seq)


def _unit_weights(col_w: np.ndarray) -> bool:
    """Whether every weight is 1 (``_solve`` then reads none: the same sums, less memory traffic; all of
    the fat tree's)."""
    return bool(np.all(col_w == 1.0))


def _lists(A: csc_matrix, R: csr_matrix | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                              np.ndarray]:
    """The kernels' view of ``A`` (sorted indices): column pointers, rows, weights, then row pointers
    and columns; int32 indices throughout, so each kernel compiles for one signature. ``R``: ``A`` by rows
    with sorted indices where the caller has it (not converted again)."""
    if R is None:
        R = A.tocsr()
    return (A.indptr.astype(np.int32, copy=False), A.indices.astype(np.int32, copy=False), A.data.astype(float, copy=False),
            R.indptr.astype(np.int32, copy=False), R.indices.astype(np.int32, copy=False))


def simulate_compiled(A: csc_matrix, capacity: np.ndarray, caps: np.ndarray, stage_bytes: np.ndarray,
                      stage_latency_s: np.ndarray, stage_next: np.ndarray, flow_first: np.ndarray,
                      rtol: float, renumber: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-stage finish times, first rates and the event count (see ``contention.simulate``).
    ``renumber=False``: the stages in the caller's numbering throughout, the lists only shortened as
    stages finish (``_compact``); the same answers to rounding, slower on large problems, kept as the
    plain reference tests/model/test_kernel.py compares with."""
    if not HAVE_NUMBA:  # pragma: no cover
        raise RuntimeError("numba is not installed")
    R, capacity = _dedup_csr(csc_matrix(A), np.asarray(capacity, dtype=float))
    A = R.tocsc()
    caps = np.asarray(caps, dtype=float)
    stage_bytes = np.asarray(stage_bytes, dtype=float)
    stage_latency_s = np.asarray(stage_latency_s, dtype=float)
    stage_next = np.asarray(stage_next, dtype=np.int64)
    flow_first = np.asarray(flow_first, dtype=np.int64)
    A.sort_indices()
    lists = _lists(A, R)
    if renumber and caps.size > 1:  # number the stages for memory locality (see _fresh_order), answers mapped back
        order, new_of, *fresh, capacity, _ = _fresh_order(*lists, capacity, caps)
        lists = tuple(fresh)
        caps, stage_bytes, stage_latency_s = caps[order], stage_bytes[order], stage_latency_s[order]
        nxt = stage_next[order]
        stage_next = np.where(nxt >= 0, new_of[np.maximum(nxt, 0)], -1)
        flow_first = new_of[flow_first]
    else:
        order = None
    done, first_rate, events, ok = _simulate(
        *lists, capacity, caps, stage_bytes, stage_latency_s, stage_next, flow_first, float(rtol), RENUMBER_EVERY if renumber else 0,
        _unit_weights(lists[2]))
    if not ok:
        raise RuntimeError("flow simulation stalled: a stage has zero rate")
    if order is not None:
        done_in, first_in = np.empty_like(done), np.empty_like(first_rate)
        done_in[order], first_in[order] = done, first_rate
        done, first_rate = done_in, first_in
    return done, first_rate, int(events)
