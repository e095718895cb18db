"""Choose among candidate mappings by their predicted whole-exchange time (the ``model`` metric).

The QAP solvers optimise a pairwise cost, which cannot see two transfers sharing a link. Here
each candidate mapping (the default, the solver's answer, its runner-ups) is scored by the
whole-exchange predictor (every talking pair's transfer launched together, max-min
fair contention, time of the slowest), the best is polished by a first-improvement swap search
under the same predictor, bounded by ``MAX_EVALUATIONS`` new predictions (each ~1-30 ms at node
scale, more for many distinct message sizes) and ``POLISH_TIME_S`` seconds, and the cheapest wins
(ties: lower pairwise cost, then the earlier candidate). Predictions are cached per mapping.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .fabric import exchange_transfers
from .problem import MappingProblem, Perm

MAX_EVALUATIONS = 300
"""Exchange predictions the swap polish may spend (the candidates are always scored)."""
POLISH_TIME_S = 1.0
"""Wall time the swap polish may spend (it stops with the best mapping found so far)."""
_RTOL = 1e-9


@dataclass(frozen=True)
class ExchangeChoice:
    """The mapping with the lowest predicted exchange time among those tried.

    Attributes:
        perm: GPU slot of each (padded) rank.
        exchange_time_us: predicted time of the whole exchange for ``perm``, µs.
        default_exchange_time_us: the same for the default mapping (rank r on GPU r), µs.
        pairwise_cost: the pairwise objective of ``perm`` (``problem.objective``).
        evaluated: distinct mappings whose exchange was predicted.
    """

    perm: tuple[int, ...]
    exchange_time_us: float
    default_exchange_time_us: float
    pairwise_cost: float
    evaluated: int


class _Scorer:
    """Exchange time (µs) and pairwise cost of a mapping, cached per mapping."""

    def __init__(self, problem: MappingProblem, predict_s: Callable, bytes_: np.ndarray) -> None:
        self.problem = problem
        self.predict_s = predict_s
        self.ranks = bytes_.shape[0]
        self.transfers = exchange_transfers(bytes_)
        self.cache: dict[tuple[int, ...], tuple[float, float]] = {}

    def __call__(self, perm: np.ndarray) -> tuple[float, float]:
        key = tuple(int(g) for g in perm[: self.ranks])
        found = self.cache.get(key)
        if found is None:
            step_s = self.predict_s([(key[r], key[s], size) for r, s, size in self.transfers])
            found = (step_s * 1e6, self.problem.objective(perm))
            self.cache[key] = found
        return found


def _better(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Lower exchange time, or an equal one (to rounding) with a lower pairwise cost."""
    if a[0] < b[0] * (1 - _RTOL):
        return True
    return a[0] <= b[0] * (1 + _RTOL) and a[1] < b[1] * (1 - _RTOL)


def _polish(score: _Scorer, perm: np.ndarray, value: tuple[float, float], active: np.ndarray,
            budget: int, deadline: float, clock: Callable[[], float]) -> tuple[np.ndarray, tuple[float, float]]:
    """Swap two ranks' GPUs while that lowers the exchange time, within ``budget`` new
    predictions and until ``deadline`` (by ``clock``)."""
    p = perm.copy()
    n = len(p)
    start = len(score.cache)
    improved = True
    while improved:
        improved = False
        for r in range(n):
            for s in range(r + 1, n):
                if not (active[r] or active[s]):
                    continue
                if len(score.cache) - start >= budget or clock() > deadline:
                    return p, value
                p[r], p[s] = p[s], p[r]
                trial = score(p)
                if _better(trial, value):
                    value, improved = trial, True
                else:
                    p[r], p[s] = p[s], p[r]
    return p, value


def choose_by_exchange(
    problem: MappingProblem,
    predict_s: Callable[[Sequence[tuple[int, int, float]]], float],
    bytes_: np.ndarray,
    candidates: Sequence[Perm],
    *,
    polish: bool = True,
    max_evaluations: int = MAX_EVALUATIONS,
    time_limit_s: float = POLISH_TIME_S,
    clock: Callable[[], float] = time.perf_counter,
) -> ExchangeChoice:
    """The candidate (or polished candidate) with the lowest predicted exchange time.

    ``bytes_``: ranks x ranks bytes (zero diagonal); ``candidates``: padded permutations (GPU
    slot of each rank); the default mapping is always scored too."""
    score = _Scorer(problem, predict_s, bytes_)
    identity = np.arange(problem.size)
    default = score(identity)
    best_p, best_v = identity, default
    for cand in candidates:
        p = np.asarray(cand, dtype=int)
        v = score(p)
        if _better(v, best_v):
            best_p, best_v = p, v
    if polish and problem.size > 1:
        active = np.zeros(problem.size, dtype=bool)
        active[: score.ranks] = (bytes_.sum(axis=0) + bytes_.sum(axis=1)) > 0
        best_p, best_v = _polish(score, best_p, best_v, active, max_evaluations, clock() + time_limit_s, clock)
    return ExchangeChoice(
        perm=tuple(int(g) for g in best_p),
        exchange_time_us=best_v[0],
        default_exchange_time_us=default[0],
        pairwise_cost=best_v[1],
        evaluated=len(score.cache),
    )


__all__ = ["MAX_EVALUATIONS", "POLISH_TIME_S", "ExchangeChoice", "choose_by_exchange"]
