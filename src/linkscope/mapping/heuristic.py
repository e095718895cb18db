"""Heuristic mapping: scipy's FAQ (Vogelstein et al.) from several starts, then 2-opt.

Starts: the identity (so the answer is never worse than the default mapping), the barycentre,
and seeded random doubly-stochastic starts. Each FAQ result is polished by a first-improvement
2-opt local search (swap the GPUs of two ranks while that lowers the exact objective, which
may have several terms). Deterministic for a given seed.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from .problem import MappingProblem, Perm, swap_delta
from .result import SolveResult


def two_opt(problem: MappingProblem, perm: Perm, max_passes: int = 50) -> tuple[np.ndarray, float]:
    """Swap-based local search until no swap of two ranks' GPUs improves the objective."""
    p = np.array(perm, dtype=int)
    cost = problem.objective(p)
    n = len(p)
    active = np.zeros(n, dtype=bool)
    for f in problem.flows:
        active |= (f.sum(axis=0) + f.sum(axis=1)) > 0
    movers = [r for r in range(n)]
    tolerance = 1e-12 * max(abs(cost), 1.0)
    for _ in range(max_passes):
        improved = False
        for i, r in enumerate(movers):
            for s in movers[i + 1:]:
                if not (active[r] or active[s]):
                    continue
                delta = swap_delta(problem, p, r, s)
                if delta < -tolerance:
                    p[r], p[s] = p[s], p[r]
                    cost += delta
                    improved = True
        if not improved:
            break
    return p, problem.objective(p)


ALTERNATIVES = 4
"""How many runner-up local optima a heuristic answer carries (``SolveResult.alternatives``)."""


def solve_heuristic(
    problem: MappingProblem,
    starts: int = 8,
    seed: int = 0,
    extra_starts: Sequence[Perm] = (),
    time_limit_s: float | None = None,
) -> SolveResult:
    """FAQ from the identity, the barycentre and ``starts`` random starts, each + 2-opt.
    The best ``ALTERNATIVES`` other distinct local optima come with the answer."""
    t0 = time.perf_counter()
    n = problem.size
    flow, cost = problem.surrogate()
    rng = np.random.default_rng(seed)
    candidates: list[np.ndarray] = [np.arange(n)] + [np.asarray(s, dtype=int) for s in extra_starts]
    inits: list[object] = [np.eye(n), "barycenter"] + ["randomized"] * starts
    best_perm, best_cost = None, float("inf")
    if n <= 1:
        return SolveResult(tuple(range(n)), 0.0, True, "trivial", 0.0)
    found: dict[tuple[int, ...], float] = {}
    for start in candidates:
        p, c = two_opt(problem, start)
        found.setdefault(tuple(int(x) for x in p), c)
        if c < best_cost:
            best_perm, best_cost = p, c
    for init in inits:
        if time_limit_s is not None and time.perf_counter() - t0 > time_limit_s:
            break
        options = {"P0": init, "maximize": False, "rng": np.random.default_rng(int(rng.integers(2**31)))}
        try:
            from scipy.optimize import quadratic_assignment  # here: scipy.optimize costs 0.25 s to import

            result = quadratic_assignment(flow, cost, method="faq", options=options)
        except (ValueError, np.linalg.LinAlgError):
            continue
        p, c = two_opt(problem, result.col_ind)
        found.setdefault(tuple(int(x) for x in p), c)
        if c < best_cost - 1e-12 * max(abs(best_cost), 1.0):
            best_perm, best_cost = p, c
    assert best_perm is not None
    best = tuple(int(x) for x in best_perm)
    others = sorted((c, p) for p, c in found.items() if p != best)
    return SolveResult(best, best_cost, False, "faq+2opt", elapsed_s=time.perf_counter() - t0,
                       alternatives=tuple(p for _, p in others[:ALTERNATIVES]))
