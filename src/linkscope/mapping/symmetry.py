"""Symmetries of the cost side: which GPUs are interchangeable.

An automorphism of the cost matrices is a relabelling ``σ`` of GPUs with
``cost[σa, σb] == cost[a, b]`` for every pair and term. If ``σ`` fixes the GPUs already given to
ranks, giving the next rank GPU ``i`` or ``σ(i)`` leads to mappings of equal cost, so an exact
search needs to try one GPU per orbit only. Two cheap cases:

* **twins**: GPUs whose rows and columns agree everywhere else (GPUs behind one switch, on one
  NVSwitch); swapping two twins is an automorphism fixing every other GPU;
* **orbits of the stabiliser** of a short prefix, found by a small backtracking search (n <= 16).

Costs are compared after rounding to 9 significant digits.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def colour_matrix(costs: Sequence[np.ndarray]) -> np.ndarray:
    """One integer label per GPU pair: equal labels iff every term's cost is equal."""
    n = costs[0].shape[0]
    keys = np.stack([np.vectorize(lambda v: float(f"{v:.9g}"))(c) for c in costs], axis=-1)
    labels: dict[tuple[float, ...], int] = {}
    out = np.zeros((n, n), dtype=np.int64)
    for a in range(n):
        for b in range(n):
            out[a, b] = labels.setdefault(tuple(keys[a, b]), len(labels))
    return out


def twin_classes(colours: np.ndarray) -> list[int]:
    """``cls[i]`` = smallest GPU index that is a twin of ``i`` (itself when it has none)."""
    n = colours.shape[0]
    cls = list(range(n))
    for i in range(n):
        if cls[i] != i:
            continue
        for j in range(i + 1, n):
            if cls[j] != j:
                continue
            others = [k for k in range(n) if k not in (i, j)]
            if (colours[i, others] == colours[j, others]).all() and (colours[others, i] == colours[others, j]).all() \
                    and colours[i, j] == colours[j, i] and colours[i, i] == colours[j, j]:
                cls[j] = i
    return cls


class Automorphisms:
    """Orbit queries on the automorphism group of a colour matrix, cached by fixed prefix."""

    def __init__(self, colours: np.ndarray) -> None:
        self.colours = colours
        self.n = colours.shape[0]
        self._signature = [tuple(sorted(colours[a])) + (colours[a, a],) + tuple(sorted(colours[:, a]))
                           for a in range(self.n)]
        self._cache: dict[tuple[int, ...], list[int]] = {}

    def _extend(self, sigma: dict[int, int], order: list[int], depth: int) -> dict[int, int] | None:
        if depth == len(order):
            return sigma
        a = order[depth]
        if a in sigma:
            return self._extend(sigma, order, depth + 1)
        used = set(sigma.values())
        for b in range(self.n):
            if b in used or self._signature[a] != self._signature[b]:
                continue
            if all(self.colours[a, x] == self.colours[b, y] and self.colours[x, a] == self.colours[y, b]
                   for x, y in sigma.items()) and self.colours[a, a] == self.colours[b, b]:
                sigma[a] = b
                found = self._extend(sigma, order, depth + 1)
                if found is not None:
                    return found
                del sigma[a]
        return None

    def find(self, fixed: Sequence[int], i: int, j: int) -> dict[int, int] | None:
        """An automorphism fixing ``fixed`` pointwise and sending ``i`` to ``j``, or None."""
        if self._signature[i] != self._signature[j]:
            return None
        sigma = {f: f for f in fixed}
        if i in sigma and sigma[i] != j:
            return None
        for f in fixed:
            if self.colours[i, f] != self.colours[j, f] or self.colours[f, i] != self.colours[f, j]:
                return None
        sigma[i] = j
        order = list(fixed) + [i] + [a for a in range(self.n) if a not in sigma]
        return self._extend(sigma, order, 0)

    def orbits(self, fixed: Sequence[int] = ()) -> list[int]:
        """``rep[i]``: the smallest GPU in the orbit of ``i`` under the pointwise stabiliser of ``fixed``."""
        key = tuple(fixed)
        if key in self._cache:
            return self._cache[key]
        parent = list(range(self.n))

        def root(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        free = [a for a in range(self.n) if a not in set(fixed)]
        for ai, a in enumerate(free):
            for b in free[ai + 1:]:
                if root(a) == root(b):
                    continue
                sigma = self.find(fixed, a, b)
                if sigma is not None:
                    for x, y in sigma.items():
                        rx, ry = root(x), root(y)
                        if rx != ry:
                            parent[max(rx, ry)] = min(rx, ry)
        rep = [root(a) for a in range(self.n)]
        self._cache[key] = rep
        return rep
