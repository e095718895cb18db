"""The mapping problem as a (sum of) quadratic assignment problem(s).

Minimise ``sum_k sum_{r,s} flow_k[r, s] * cost_k[gpu(r), gpu(s)]`` over bijections ``gpu`` from
ranks to GPU slots. Most metrics have one term (bytes x per-byte cost); alpha-beta has two
(messages x latency + bytes x time per byte). Fewer ranks than GPUs is allowed: the problem is
padded with silent ranks, and only the first ``ranks`` entries of a solution are real.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import UserError

#: A rank -> GPU-slot assignment: a list, a tuple or a NumPy integer array.
Perm = Sequence[int] | np.ndarray


@dataclass(frozen=True)
class MappingProblem:
    """Flows (ranks x ranks) and costs (GPUs x GPUs), padded to one size n.

    Attributes:
        flows: one n x n flow matrix per term, zero diagonal.
        costs: one n x n cost matrix per term (same order as flows), zero diagonal.
        ranks: the number of real ranks (the rest are padding).
    """

    flows: tuple[np.ndarray, ...]
    costs: tuple[np.ndarray, ...]
    ranks: int
    symmetric: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if not self.flows or len(self.flows) != len(self.costs):
            raise ValueError("need one cost matrix per flow matrix")
        n = self.costs[0].shape[0]
        flows, costs = [], []
        for f, c in zip(self.flows, self.costs):
            f = np.array(f, dtype=np.float64)
            c = np.array(c, dtype=np.float64)
            if c.shape != (n, n):
                raise ValueError("cost matrices differ in shape")
            if f.shape[0] > n:
                raise UserError(f"{f.shape[0]} ranks do not fit on {n} GPUs",
                                hint="use a topology with more GPUs or a multi-node mapping")
            padded = np.zeros((n, n))
            padded[: f.shape[0], : f.shape[0]] = f
            np.fill_diagonal(padded, 0.0)
            np.fill_diagonal(c, 0.0)
            padded.setflags(write=False)
            c.setflags(write=False)
            flows.append(padded)
            costs.append(c)
        object.__setattr__(self, "flows", tuple(flows))
        object.__setattr__(self, "costs", tuple(costs))
        object.__setattr__(self, "symmetric", all(np.allclose(c, c.T, rtol=1e-12, atol=0) for c in costs))

    @property
    def size(self) -> int:
        return int(self.costs[0].shape[0])

    def objective(self, perm: Perm) -> float:
        """Cost of ``perm`` (perm[r] = GPU slot of rank r, length ``size``)."""
        p = np.asarray(perm, dtype=int)
        return float(sum((f * c[np.ix_(p, p)]).sum() for f, c in zip(self.flows, self.costs)))

    def complete(self, partial: Sequence[int]) -> np.ndarray:
        """Extend a mapping of the real ranks with the unused slots for the padding ranks."""
        p = list(int(x) for x in partial)
        if len(set(p)) != len(p):
            raise ValueError("a mapping uses a GPU twice")
        rest = [g for g in range(self.size) if g not in set(p)]
        return np.array(p + rest[: self.size - len(p)], dtype=int)

    def surrogate(self) -> tuple[np.ndarray, np.ndarray]:
        """One (flow, cost) pair approximating a multi-term problem (for FAQ, which takes one).
        Exact for a single term. Each extra term is folded in at the average ratio of its flow
        to the first term's flow."""
        flow, cost = self.flows[0], np.array(self.costs[0])
        base = flow.sum()
        for f, c in zip(self.flows[1:], self.costs[1:]):
            ratio = f.sum() / base if base else 0.0
            cost = cost + ratio * c
        if base == 0 and len(self.flows) > 1:
            return self.flows[1], self.costs[1]
        return flow, cost


def swap_delta(problem: MappingProblem, perm: np.ndarray, r: int, s: int) -> float:
    """Change of the objective when ranks ``r`` and ``s`` exchange GPUs (O(n) per term)."""
    pr, ps = perm[r], perm[s]
    delta = 0.0
    mask = np.ones(len(perm), dtype=bool)
    mask[[r, s]] = False
    pk = perm[mask]
    for f, c in zip(problem.flows, problem.costs):
        fr, fs = f[r, mask], f[s, mask]
        gr, gs = f[mask, r], f[mask, s]
        delta += float(((fr - fs) * (c[ps, pk] - c[pr, pk])).sum())
        delta += float(((gr - gs) * (c[pk, ps] - c[pk, pr])).sum())
        delta += f[r, s] * (c[ps, pr] - c[pr, ps]) + f[s, r] * (c[pr, ps] - c[ps, pr])
    return delta
