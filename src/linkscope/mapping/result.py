"""What a solver returns (before the mapping is dressed up as an Assignment)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SolveResult:
    """A solver's answer.

    Attributes:
        perm: GPU slot of each (padded) rank.
        cost: objective value of ``perm``.
        optimal: True when the solver proved no mapping is cheaper.
        solver: name (``branch-and-bound``, ``faq+2opt``, ``hierarchical``...).
        lower_bound: best proven lower bound (equals cost when optimal), or None.
        nodes: search nodes explored (exact solvers), else 0.
        elapsed_s: wall time.
        alternatives: other good mappings found on the way (distinct local optima, cheapest
            first), for callers that re-score candidates with a finer model.
    """

    perm: tuple[int, ...]
    cost: float
    optimal: bool
    solver: str
    lower_bound: float | None = None
    nodes: int = 0
    elapsed_s: float = 0.0
    alternatives: tuple[tuple[int, ...], ...] = ()
