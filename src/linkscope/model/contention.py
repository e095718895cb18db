"""Contention: max-min fair sharing of concurrent flows, with event-driven completion.

A *stage* is a piece of a transfer that moves bytes over a set of shared resources at one rate
(a direct copy has one stage; a non-pipelined host-staged copy has two: device to host, then host
to device). ``A`` is the sparse resources x stages matrix of weights: stage j uses resource i at
``A[i, j] * rate_j`` (weight 2 where a staged copy both writes and reads host memory).

Max-min fairness (progressive filling): all unfrozen stages' rates rise together; a resource that
fills freezes every stage crossing it, a stage reaching its own cap (engine limit, kernel-copy
efficiency) freezes alone; repeat until every stage is frozen. Each round is two sparse
matrix-vector products, and the active matrix shrinks as stages freeze.

Event-driven completion: each stage becomes ready after its latency (per-hop latency + per-method
overhead for the first stage), rates are recomputed whenever a stage starts or completes, so
flows of different sizes finish at different times and the rest speed up. ``rtol`` > 0 lets
stages that would finish within ``rtol`` of the next completion complete in the same event (each
keeps its own finish time): fewer events for very large problems, error bounded by about ``rtol``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csc_matrix

_GB = 1e9


def _gather(indptr: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Positions of the entries of rows/columns ``which`` of a compressed matrix, concatenated."""
    starts = indptr[which]
    lens = indptr[which + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens)
    return offsets + np.arange(total)


def max_min_rates(A: csc_matrix, capacity: np.ndarray, caps: np.ndarray, *, rtol: float = 0.0) -> np.ndarray:
    """Max-min fair rates (same unit as ``capacity``) of the columns of ``A``, each capped by ``caps``.

    Progressive filling by levels: a resource with remaining capacity ``rem`` and unfrozen load
    ``load`` saturates at fill level ``L + rem / load``; that level only changes when some stage
    through the resource freezes, so each round touches only the frozen stages' resources (plus
    one vectorised minimum over the resources still loaded). ``rtol`` > 0 freezes resources whose
    saturation level lies within ``rtol`` of the lowest in the same round (fewer rounds, rates at
    most ``rtol`` low).

    >>> import numpy as np; from scipy.sparse import csc_matrix
    >>> A = csc_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
    >>> max_min_rates(A, np.array([10.0, 4.0]), np.array([np.inf, np.inf, np.inf])).tolist()
    [8.0, 2.0, 2.0]
    """
    n = A.shape[1]
    rates = np.zeros(n)
    if n == 0:
        return rates
    A = csc_matrix(A)
    rows = A.tocsr()
    caps = np.asarray(caps, dtype=float)
    load = np.asarray(rows @ np.ones(n)).ravel()
    capacity = np.asarray(capacity, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.where(load > 0, capacity / load, np.inf)
    live = np.nonzero(load > 0)[0]  # resources that may still saturate (compacted from time to time)
    frozen = np.zeros(n, dtype=bool)
    order = np.argsort(caps, kind="stable")
    sorted_caps = caps[order]
    cp = 0
    left = n
    tol = max(rtol, 1e-9)
    while left:
        while cp < n and frozen[order[cp]]:
            cp += 1
        next_cap = sorted_caps[cp] if cp < n else np.inf
        live_sat = sat[live]
        next_sat = float(live_sat.min()) if live.size else np.inf
        level = min(next_sat, next_cap)
        if not np.isfinite(level):
            rest = ~frozen
            rates[rest] = np.inf
            break
        parts = []
        if next_sat <= level * (1 + tol):
            hit = live[live_sat <= level * (1 + tol)]
            cols = rows.indices[_gather(rows.indptr, hit)]
            parts.append(cols[~frozen[cols]])
            sat[hit] = np.inf
        k = int(np.searchsorted(sorted_caps, level * (1 + 1e-12), side="right"))
        if k > cp:
            capped = order[cp:k]
            parts.append(capped[~frozen[capped]])
        freeze = np.unique(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)
        if freeze.size == 0:  # numerical safety; cannot happen in exact arithmetic
            freeze = np.array([order[cp]]) if cp < n else np.nonzero(~frozen)[0][:1]
        rates[freeze] = level
        frozen[freeze] = True
        left -= freeze.size
        pos = _gather(A.indptr, freeze)
        res = A.indices[pos]
        if res.size:
            aff, inv = np.unique(res, return_inverse=True)
            delta = np.bincount(inv, weights=A.data[pos])
            finite = np.isfinite(sat[aff])
            rem = np.where(finite, (sat[aff] - level) * load[aff], 0.0)
            load[aff] = load[aff] - delta
            with np.errstate(divide="ignore", invalid="ignore"):
                sat[aff] = np.where(finite & (load[aff] > 1e-12), level + np.maximum(rem, 0.0) / load[aff], np.inf)
        if live.size > 64 and left < n:
            keep = np.isfinite(sat[live])
            if keep.sum() < 0.5 * live.size:
                live = live[keep]
    return rates


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


def simulate(problem: FlowProblem, *, rtol: float = 0.0, level_rtol: float = 0.0, full_every: int = 256) -> SimResult:
    """Event-driven simulation of the stages of ``problem``; returns per-flow finish times.

    After completions only, rates are recomputed incrementally: removing flows from a max-min
    allocation never changes the rates of flows slower than the slowest removed one (their
    bottlenecks filled before that level), so only the faster ones are refilled, against the
    capacity the slower ones leave. Any start triggers a full solve, and so does every
    ``full_every``-th event (to shed rounding drift).
    """
    n_stages = problem.stage_bytes.size
    A = csc_matrix(problem.A)
    capacity = np.asarray(problem.capacity_gb_per_s, dtype=float)
    ready = np.full(n_stages, np.inf)
    first = problem.flow_first
    ready[first] = problem.stage_latency_s[first]
    pending = np.zeros(n_stages, dtype=bool)
    pending[first] = True
    active = np.zeros(n_stages, dtype=bool)
    remaining = problem.stage_bytes.astype(float).copy()
    done = np.full(n_stages, np.nan)
    first_rate = np.full(n_stages, np.nan)
    rates = np.zeros(n_stages)
    use = np.zeros(capacity.size)
    caps = problem.stage_cap_gb_per_s
    t = 0.0
    events = 0
    need_full = True

    def consumption(cols: np.ndarray, r: np.ndarray) -> np.ndarray:
        return A[:, cols] @ np.where(np.isfinite(r), r, 0.0)

    while True:
        if pending.any():
            start = pending & (ready <= t * (1 + 1e-12) + 1e-15)
            if start.any():
                active |= start
                pending &= ~start
                need_full = True
        if not active.any():
            if not pending.any():
                break
            t = float(ready[pending].min())
            continue
        idx = np.nonzero(active)[0]
        if need_full or events % full_every == 0:
            rates[idx] = max_min_rates(A[:, idx], capacity, caps[idx], rtol=level_rtol)
            use = consumption(idx, rates[idx])
            need_full = False
        events += 1
        r = rates[idx]
        unset = np.isnan(first_rate[idx])
        first_rate[idx[unset]] = r[unset]
        with np.errstate(divide="ignore", invalid="ignore"):
            t_fin = np.where(remaining[idx] <= 0, 0.0, remaining[idx] / (r * _GB))
        t_fin = np.where(np.isnan(t_fin), np.inf, t_fin)
        dt_c = float(t_fin.min())
        dt_a = float(ready[pending].min() - t) if pending.any() else np.inf
        if dt_a < dt_c:
            dt = max(dt_a, 0.0)
            completing = np.zeros(idx.size, dtype=bool)
        else:
            dt = dt_c
            completing = t + t_fin <= (t + dt_c) * (1 + rtol) + dt_c * 1e-9 + 1e-15
            if pending.any():  # a batched completion must not jump past a start
                completing &= t_fin <= dt_a
        if not np.isfinite(dt):
            raise RuntimeError("flow simulation stalled: a stage has zero rate")
        moved = np.where(np.isfinite(r), r * _GB * dt, remaining[idx])
        remaining[idx] = np.maximum(remaining[idx] - moved, 0.0)
        t_next = t + dt
        fin = idx[completing]
        if fin.size:
            remaining[fin] = 0.0
            done[fin] = t + t_fin[completing]
            active[fin] = False
            floor = float(np.min(rates[fin]))
            use -= consumption(fin, rates[fin])
            rates[fin] = 0.0
            nxt = problem.stage_next[fin]
            has = nxt >= 0
            if has.any():
                ready[nxt[has]] = done[fin[has]] + problem.stage_latency_s[nxt[has]]
                pending[nxt[has]] = True
            # incremental refill of the flows at or above the slowest completed one
            faster = np.nonzero(active & (rates >= floor * (1 - 1e-9)))[0]
            if faster.size:
                use -= consumption(faster, rates[faster])
                residual = np.maximum(capacity - use, 0.0)
                rates[faster] = max_min_rates(A[:, faster], residual, caps[faster], rtol=level_rtol)
                use += consumption(faster, rates[faster])
        t = t_next
    # last stage of each flow
    last = first.copy()
    while True:
        nxt = problem.stage_next[last]
        more = nxt >= 0
        if not more.any():
            break
        last[more] = nxt[more]
    return SimResult(finish_s=done[last], first_rate_gb_per_s=first_rate[first], events=events)


def bottleneck_summary(A: csc_matrix, capacity: np.ndarray, rates: np.ndarray) -> np.ndarray:
    """Utilisation (0..1) of each resource at the given stage rates."""
    with np.errstate(divide="ignore", invalid="ignore"):
        util = (A @ np.where(np.isfinite(rates), rates, 0.0)) / capacity
    return np.nan_to_num(util)
