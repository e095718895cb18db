"""Contention: max-min fair sharing of concurrent flows, with event-driven completion.

A *stage* is a piece of a transfer that moves bytes over a set of shared resources at one rate
(a direct copy has one stage; a non-pipelined host-staged copy has two: device to host, then host
to device). ``A`` is the sparse resources x stages matrix of weights: stage j uses resource i at
``A[i, j] * rate_j`` (weight 2 where a staged copy both writes and reads host memory).

Max-min fairness (progressive filling): all unfrozen stages' rates rise together; a resource that
fills freezes every stage crossing it, a stage reaching its own cap (engine limit, kernel-copy
efficiency) freezes alone; repeat until every stage is frozen. The solver here freezes many levels
per round (see ``_fill``), so a round count grows with the depth of the bottleneck structure, not
with the number of distinct rates.

Event-driven completion: each stage becomes ready after its latency (per-hop latency + per-method
overhead for the first stage), rates are recomputed whenever a stage starts or completes, so
flows of different sizes finish at different times and the rest speed up. ``rtol`` > 0 batches
completions: every stage that would finish within ``2 * rtol`` of the next completion t_c completes
in the same event (each keeps its own finish time), and the event - the moment their bandwidth
goes back to the others - is the middle of that window, t_c * (1 + rtol). A stage finishing in the
window releases its bandwidth at most ``rtol * t_c`` early or late: half the events of releasing
everything at t_c for the same largest shift (fewer events for very large problems, error bounded
by about ``rtol``).
Rates are recomputed exactly at every event, but only for the stages an event can affect (see
``_Sharing.update``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csc_matrix

_GB = 1e9
_EPS = 1e-9  # relative tolerance of the max-min optimality check (rounding only)
_FALLBACK_SHARE = 0.1  # an update that grows past this share of the active stages re-solves them all at once


def _gather(indptr: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Positions of the entries of rows/columns ``which`` of a compressed matrix, concatenated."""
    starts = indptr[which]
    lens = indptr[which + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    return offsets + np.arange(total)


def _fill(indptr: np.ndarray, rows: np.ndarray, data: np.ndarray, n_rows: int, capacity: np.ndarray,
          caps: np.ndarray, rtol: float = 0.0) -> np.ndarray:
    """Max-min rates of the columns of a compressed-column matrix (``indptr``, ``rows`` < ``n_rows``, ``data``).

    Parallel progressive filling. With the stages frozen so far, resource i would saturate at level
    ``L_i = (capacity_i - frozen use_i) / unfrozen weight_i``, and levels only rise when a stage
    below them freezes. A stage's next possible level is ``m_j = min(cap_j, min over its resources
    of L_i)``. A resource whose level is the lowest ``m`` of all stages crossing it saturates at
    exactly that level whatever else happens, so each round freezes every stage crossing such a
    resource (at ``L_i``) and every stage whose cap is below all its resources' levels. The global
    lowest resource always qualifies; typically many do, so a fat tree with 100,000 flows takes
    tens of rounds instead of one round per distinct rate. ``rtol`` > 0 also accepts resources within
    ``rtol`` of that lowest ``m`` (stages still freeze at their own ``m_j``: feasible, rates at most
    about ``rtol`` low).
    """
    n = indptr.size - 1
    rates = np.zeros(n)
    if n == 0:
        return rates
    caps = np.asarray(caps, dtype=float)
    lens = np.diff(indptr)
    fixed = np.zeros(n_rows)
    load = np.bincount(rows, weights=data, minlength=n_rows)
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(load > 0, capacity / load, np.inf)
    # the unfrozen part, compacted after every round
    cols = np.arange(n)
    a_rows, a_data, a_lens = rows, data, lens
    while cols.size:
        a_col = np.repeat(np.arange(cols.size), a_lens)
        m = np.full(cols.size, np.inf)
        nonempty = a_lens > 0
        if a_rows.size:
            starts = np.concatenate([[0], np.cumsum(a_lens)[:-1]])
            m[nonempty] = np.minimum.reduceat(level[a_rows], starts[nonempty])
        m = np.minimum(m, caps[cols])
        lowest = np.full(n_rows, np.inf)
        np.minimum.at(lowest, a_rows, m[a_col])
        ready = level <= lowest * (1 + rtol)
        freeze = caps[cols] <= m
        hit = ready[a_rows]
        freeze[a_col[hit]] = True
        if not freeze.any():  # numerical safety; the lowest resource always qualifies
            freeze[int(np.argmin(m))] = True
        rates[cols[freeze]] = m[freeze]
        entry = freeze[a_col]
        res = a_rows[entry]
        at = m[a_col[entry]]
        np.add.at(fixed, res, a_data[entry] * np.where(np.isfinite(at), at, 0.0))
        np.subtract.at(load, res, a_data[entry])
        touched = np.unique(res)
        with np.errstate(divide="ignore", invalid="ignore"):
            level[touched] = np.where(load[touched] > 1e-12,
                                      np.maximum(capacity[touched] - fixed[touched], 0.0) / load[touched], np.inf)
        keep = ~freeze
        cols, a_lens = cols[keep], a_lens[keep]
        a_rows, a_data = a_rows[~entry], a_data[~entry]
    return rates


def max_min_rates(A: csc_matrix, capacity: np.ndarray, caps: np.ndarray, *, rtol: float = 0.0) -> np.ndarray:
    """Max-min fair rates (same unit as ``capacity``) of the columns of ``A``, each capped by ``caps``.

    ``rtol`` > 0 trades exactness for fewer rounds (rates at most about ``rtol`` low); see ``_fill``.

    >>> import numpy as np; from scipy.sparse import csc_matrix
    >>> A = csc_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
    >>> max_min_rates(A, np.array([10.0, 4.0]), np.array([np.inf, np.inf, np.inf])).tolist()
    [8.0, 2.0, 2.0]
    """
    A = csc_matrix(A)
    if A.shape[1] == 0:
        return np.zeros(0)
    capacity = np.asarray(capacity, dtype=float)
    used, local = np.unique(A.indices, return_inverse=True)
    return _fill(A.indptr, local.astype(np.int64), A.data.astype(float), used.size, capacity[used],
                 np.asarray(caps, dtype=float), rtol)


@dataclass(frozen=True)
class FlowProblem:
    """Stages of concurrent flows, ready to simulate.

    Attributes:
        A: resources x stages weights (CSC).
        capacity_gb_per_s: effective capacity of each resource.
        stage_bytes: bytes each stage moves.
        stage_cap_gb_per_s: per-stage rate cap (inf = none).
        stage_latency_s: delay between the previous stage's end (or time 0) and this stage's start.
        stage_next: index of the following stage of the same flow, -1 for the last.
        flow_first: first stage of each flow.
    """

    A: csc_matrix
    capacity_gb_per_s: np.ndarray
    stage_bytes: np.ndarray
    stage_cap_gb_per_s: np.ndarray
    stage_latency_s: np.ndarray
    stage_next: np.ndarray
    flow_first: np.ndarray


@dataclass(frozen=True)
class SimResult:
    """Per-flow finish time (s from the common start), initial rate (GB/s, the first stage's rate
    when everything has started), and how many rate recomputations (events) it took."""

    finish_s: np.ndarray
    first_rate_gb_per_s: np.ndarray
    events: int


class _Sharing:
    """The max-min rates of a changing set of active stages, kept exact by local updates.

    Optimality check: an allocation is max-min fair exactly when it is feasible and every stage is
    at its cap or crosses a saturated resource on which no stage is faster (its bottleneck).
    After stages leave (rate 0, removed) or join (rate 0, active), only stages on the resources
    they touched can have lost their bottleneck. ``update`` re-solves those stages with every other
    stage's rate fixed as background load, checks the stages on the resources whose load or
    fastest rate changed, adds the ones that fail (and the faster background stages that block a
    re-solved one) and repeats. When the check passes everywhere the result is the max-min
    allocation itself: re-solving a set that contains every stage whose rate differs gives exactly
    the new rates, since each keeps its bottleneck in the sub-problem. Where the affected set
    grows past ``_FALLBACK_SHARE`` of the active stages (dense fabrics, where a change spreads to
    most flows), it re-solves the stages that can change in one go instead: all of them after a
    start, and after completions only those at least as fast as the slowest finished one (removing
    flows from a max-min allocation never changes slower flows' rates).
    """

    def __init__(self, A: csc_matrix, capacity: np.ndarray, caps: np.ndarray, level_rtol: float):
        self.A = A
        self.R = A.tocsr()
        self.capacity = capacity
        self.caps = caps
        self.level_rtol = level_rtol
        n = A.shape[1]
        self.col_len = np.diff(A.indptr)
        self.rates = np.zeros(n)
        self.active = np.zeros(n, dtype=bool)
        self.n_active = 0
        self.use = np.zeros(A.shape[0])

    # ---- bookkeeping ------------------------------------------------------------------------------
    def _usage(self, cols: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Resources and amounts that stages ``cols`` at rates ``r`` use (entry by entry)."""
        pos = _gather(self.A.indptr, cols)
        seg = np.repeat(np.arange(cols.size), self.col_len[cols])
        finite = np.where(np.isfinite(r), r, 0.0)
        return self.A.indices[pos], self.A.data[pos] * finite[seg]

    def refresh_use(self) -> None:
        """Recompute resource use from the rates (sheds rounding drift of the incremental updates)."""
        self.use = np.asarray(self.A @ np.where(np.isfinite(self.rates), self.rates, 0.0)).ravel()

    def add(self, cols: np.ndarray) -> None:
        self.active[cols] = True
        self.rates[cols] = 0.0
        self.n_active += cols.size

    def _saturated(self, res: np.ndarray) -> np.ndarray:
        return self.use[res] >= self.capacity[res] * (1 - _EPS)

    def remove(self, cols: np.ndarray) -> np.ndarray:
        """Stages ``cols`` leave; returns the active stages on the saturated resources they used
        (only those can lose their bottleneck)."""
        res, val = self._usage(cols, self.rates[cols])
        res_u = np.unique(res)
        hot = res_u[self._saturated(res_u)]
        np.subtract.at(self.use, res, val)
        self.rates[cols] = 0.0
        self.active[cols] = False
        self.n_active -= cols.size
        return self.flows_on(hot)

    def flows_on(self, res: np.ndarray) -> np.ndarray:
        cols = np.unique(self.R.indices[_gather(self.R.indptr, res)])
        return cols[self.active[cols]]

    # ---- the optimality check ---------------------------------------------------------------------
    def _violators(self, J: np.ndarray, in_s: np.ndarray) -> np.ndarray:
        """Stages of J without a bottleneck, plus, for those already re-solved, the faster stages
        outside the re-solved set on their saturated resources."""
        A, R, r = self.A, self.R, self.rates
        pos = _gather(A.indptr, J)
        res = A.indices[pos]
        seg = np.repeat(np.arange(J.size), self.col_len[J])
        U, inv = np.unique(res, return_inverse=True)
        row_len = R.indptr[U + 1] - R.indptr[U]
        on = R.indices[_gather(R.indptr, U)]
        fastest = np.maximum.reduceat(r[on], np.concatenate([[0], np.cumsum(row_len)[:-1]])) if on.size else np.zeros(0)
        saturated = self.use[U] >= self.capacity[U] * (1 - _EPS)
        rj = r[J]
        ok_entry = saturated[inv] & (rj[seg] >= fastest[inv] * (1 - _EPS))
        ok = np.bincount(seg, weights=ok_entry, minlength=J.size) > 0
        ok |= (rj >= self.caps[J] * (1 - _EPS)) | ~np.isfinite(rj)
        bad = J[~ok]
        stuck = ~ok & in_s[J]
        if not stuck.any():
            return bad
        # blockers: faster stages outside the set on the saturated resources of stuck re-solved ones
        entries = stuck[seg] & saturated[inv]
        blocked_res = np.unique(res[entries])
        cand = self.flows_on(blocked_res)
        slowest = float(rj[stuck].min())
        cand = cand[~in_s[cand] & (r[cand] > slowest * (1 + _EPS))]
        return np.union1d(bad, cand)

    # ---- re-solving -------------------------------------------------------------------------------
    def _solve(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Re-solve stages S with every other active stage's rate fixed; returns the changed stages,
        their old rates and the resources they cross that were or are saturated."""
        A = self.A
        pos = _gather(A.indptr, S)
        res = A.indices[pos]
        lens = self.col_len[S]
        seg = np.repeat(np.arange(S.size), lens)
        old = self.rates[S].copy()
        U, local = np.unique(res, return_inverse=True)
        w = A.data[pos]
        own = np.bincount(local, weights=w * np.where(np.isfinite(old), old, 0.0)[seg], minlength=U.size)
        background = self.use[U] - own
        residual = np.maximum(self.capacity[U] - background, 0.0)
        was_saturated = self._saturated(U)
        indptr = np.concatenate([[0], np.cumsum(lens)])
        new = _fill(indptr, local.astype(np.int64), w, U.size, residual, self.caps[S], self.level_rtol)
        self.use[U] = background + np.bincount(local, weights=w * np.where(np.isfinite(new), new, 0.0)[seg],
                                               minlength=U.size)
        self.rates[S] = new
        changed = new != old
        hot = was_saturated | self._saturated(U)
        crossed = np.zeros(U.size, dtype=bool)
        crossed[local[changed[seg]]] = True
        return S[changed], old[changed], U[hot & crossed]

    def update(self, check: np.ndarray, floor: float | None) -> tuple[np.ndarray, np.ndarray]:
        """Restore max-min fairness; ``check``: the stages that may have lost their bottleneck.
        ``floor``: the slowest rate removed when only completions happened (None after a start).
        Returns the stages whose rate changed and their previous rates."""
        n = self.rates.size
        in_s = np.zeros(n, dtype=bool)
        before: dict[int, float] = {}
        limit = max(64, int(_FALLBACK_SHARE * self.n_active))
        check = check[self.active[check]]
        while check.size:
            add = self._violators(check, in_s)
            add = add[~in_s[add]]
            if add.size == 0:
                break
            in_s[add] = True
            S = np.nonzero(in_s)[0]
            if S.size > limit:
                everyone = np.nonzero(self.active)[0]
                if floor is not None:  # the slower stages keep their rates (unless already re-solved)
                    keep = self.rates[everyone] >= floor * (1 - _EPS)
                    keep |= in_s[everyone]
                    if before:
                        keep |= np.isin(everyone, np.fromiter(before.keys(), dtype=np.int64, count=len(before)))
                    everyone = everyone[keep]
                ch, old, _ = self._solve(everyone)
                _remember(before, ch, old)
                break
            ch, old, hot = self._solve(S)
            _remember(before, ch, old)
            check = np.union1d(S, self.flows_on(hot)) if hot.size else S
        if not before:
            return np.empty(0, dtype=np.int64), np.empty(0)
        cols = np.fromiter(before.keys(), dtype=np.int64, count=len(before))
        old = np.fromiter(before.values(), dtype=float, count=len(before))
        return cols, old

    def solve_all(self) -> tuple[np.ndarray, np.ndarray]:
        ch, old, _ = self._solve(np.nonzero(self.active)[0])
        self.refresh_use()
        return ch, old


def _remember(before: dict[int, float], cols: np.ndarray, old: np.ndarray) -> None:
    for j, o in zip(cols.tolist(), old.tolist()):
        before.setdefault(j, o)


ENGINES = ("auto", "compiled", "numpy")


def batched_error_bound(rtol: float) -> float:
    """Documented bound on the relative error of batched finish times against exact mode.

    A stage completed by batching releases its bandwidth within ``rtol`` of its own finish time (early
    or late: the event sits in the middle of a ``2 * rtol`` window), so the stages it shared resources
    with speed up at most that much too early or too late; the errors do not compound beyond a
    small factor in practice (measured on the stored reference problems and the scale benchmark:
    docs/benchmarks.md). The bound stated and tested is ``2 * rtol``."""
    return 2.0 * rtol


def simulate(problem: FlowProblem, *, rtol: float = 0.0, level_rtol: float = 0.0, full_every: int = 0,
             engine: str = "auto") -> SimResult:
    """Event-driven simulation of the stages of ``problem``; returns per-flow finish times.

    ``rtol`` is the speed/accuracy knob: 0 = exact (one event per distinct completion time);
    ``rtol`` > 0 completes, in one event at t_c * (1 + rtol), every stage that would finish within
    ``2 * rtol`` of the next completion t_c (each keeps its own finish time), so finish times stay
    within ``batched_error_bound(rtol)`` of exact while events drop to about log(time range) / (2 * rtol).

    ``engine``: ``compiled`` (Numba: a full water-filling re-solve at every event, see
    ``model.kernel``), ``numpy`` (vectorised, local updates: ``_Sharing.update``), ``auto`` =
    compiled for batched runs (``rtol`` > 0) where Numba is installed, NumPy for exact runs (one
    event per completion, where local updates beat full re-solves). Both give the same answers to
    rounding.

    NumPy path: at every event (stages start, or complete) the max-min rates are brought up to date by
    ``_Sharing.update`` (exact, local). Each active stage keeps its own predicted finish time, and
    only stages whose rate changes are re-timed. ``full_every`` > 0 re-solves every active stage
    from scratch at every ``full_every``-th event instead (a reference for tests; 1 = always);
    ``level_rtol`` relaxes each solve (NumPy path only).
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown simulation engine {engine!r}; valid: {', '.join(ENGINES)}")
    if not rtol >= 0.0:  # NaN fails too
        raise ValueError(f"completion tolerance rtol must be >= 0, got {rtol!r}")
    from . import kernel

    # auto: the compiled full re-solve wins when events are batched (rtol > 0: few events, each changing
    # most rates); exact mode has one event per completion, where the NumPy path's local updates win
    auto_compiled = rtol > 0 and kernel.available() and not full_every and not level_rtol
    if engine == "compiled" or (engine == "auto" and auto_compiled):
        done, first_rate, events = kernel.simulate_compiled(
            problem.A, problem.capacity_gb_per_s, problem.stage_cap_gb_per_s, problem.stage_bytes,
            problem.stage_latency_s, problem.stage_next, problem.flow_first, rtol)
        return SimResult(finish_s=done[_last_stages(problem)], first_rate_gb_per_s=first_rate[problem.flow_first],
                         events=events)
    n_stages = problem.stage_bytes.size
    A = csc_matrix(problem.A)
    capacity = np.asarray(problem.capacity_gb_per_s, dtype=float)
    caps = np.asarray(problem.stage_cap_gb_per_s, dtype=float)
    share = _Sharing(A, capacity, caps, level_rtol)
    ready = np.full(n_stages, np.inf)
    first = problem.flow_first
    ready[first] = problem.stage_latency_s[first]
    pending = np.zeros(n_stages, dtype=bool)
    pending[first] = True
    remaining = problem.stage_bytes.astype(float).copy()
    since = np.zeros(n_stages)  # time at which ``remaining`` was last brought up to date
    finish_at = np.full(n_stages, np.inf)  # predicted absolute finish time of each active stage
    done = np.full(n_stages, np.nan)
    first_rate = np.full(n_stages, np.nan)
    next_ready = float(ready.min()) if n_stages else np.inf
    t = 0.0
    events = 0
    check = np.empty(0, dtype=np.int64)
    floor: float | None = None

    def retime(cols: np.ndarray, old: np.ndarray) -> None:
        # bytes moved at the old rate since the last update, then the finish at the new rate
        old_finite = np.where(np.isfinite(old), old, 0.0)
        left = np.where(np.isfinite(old), np.maximum(remaining[cols] - old_finite * _GB * (t - since[cols]), 0.0), 0.0)
        remaining[cols] = left
        since[cols] = t
        r = share.rates[cols]
        with np.errstate(divide="ignore", invalid="ignore"):
            dt = np.where(left <= 0, 0.0, left / (r * _GB))
        finish_at[cols] = t + np.where(np.isnan(dt), np.inf, dt)

    while True:
        started = np.empty(0, dtype=np.int64)
        if next_ready <= t * (1 + 1e-12) + 1e-15:
            started = np.nonzero(pending & (ready <= t * (1 + 1e-12) + 1e-15))[0]
            pending[started] = False
            share.add(started)
            since[started] = t
            check = np.union1d(check, started)
            floor = None
            rest = ready[pending]
            next_ready = float(rest.min()) if rest.size else np.inf
        if share.n_active == 0:
            if not np.isfinite(next_ready):
                break
            t = next_ready
            continue
        if full_every and events % full_every == 0:
            changed, old = share.solve_all()
        elif check.size:
            changed, old = share.update(check, floor)
        else:
            changed, old = np.empty(0, dtype=np.int64), np.empty(0)
        if changed.size:
            retime(changed, old)
        if started.size:
            stuck = started[~np.isin(started, changed)]  # a started stage that got no rate (zero capacity)
            if stuck.size:
                retime(stuck, np.zeros(stuck.size))
            first_rate[started] = share.rates[started]
        check = np.empty(0, dtype=np.int64)
        events += 1
        if events % 64 == 0:
            share.refresh_use()
        t_c = float(finish_at.min())
        if next_ready < t_c:
            t = next_ready
            continue
        if not np.isfinite(t_c):
            raise RuntimeError("flow simulation stalled: a stage has zero rate")
        # the batch: every stage finishing within 2 x rtol of the first completion, released half way
        # (each keeps its own finish time; each release moves by at most rtol x t_c)
        limit = t_c * (1 + 2 * rtol) + (t_c - t) * 1e-9 + 1e-15
        t_event = t_c * (1 + rtol)
        if np.isfinite(next_ready):  # a batched completion must not jump past a start
            limit = min(limit, next_ready)
            t_event = min(t_event, next_ready)
        t_event = max(t_event, t_c)
        fin = np.nonzero(finish_at <= max(limit, t_c))[0]
        done[fin] = finish_at[fin]
        finish_at[fin] = np.inf
        remaining[fin] = 0.0
        floor = float(share.rates[fin].min())
        check = share.remove(fin)
        nxt = problem.stage_next[fin]
        has = nxt >= 0
        if has.any():
            ready[nxt[has]] = done[fin[has]] + problem.stage_latency_s[nxt[has]]
            pending[nxt[has]] = True
            next_ready = min(next_ready, float(ready[nxt[has]].min()))
        t = t_event
    return SimResult(finish_s=done[_last_stages(problem)], first_rate_gb_per_s=first_rate[first], events=events)


def _last_stages(problem: FlowProblem) -> np.ndarray:
    last = np.asarray(problem.flow_first, dtype=np.int64).copy()
    while True:
        nxt = problem.stage_next[last]
        more = nxt >= 0
        if not more.any():
            break
        last[more] = nxt[more]
    return last
