"""Statistics over repeated samples (pytest-benchmark's Stats, with units in the owner's field name).

>>> s = Stats.from_samples([1.0, 2.0, 3.0])
>>> (s.n, s.median, s.min, s.max)
(3, 2.0, 1.0, 3.0)
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Stats:
    """Summary of n samples of one quantity; the unit is given by the field holding it.

    Attributes:
        n: number of samples (after warm-up).
        median, min, max, mean: the usual.
        stddev: sample standard deviation (0 for one sample).
    """

    n: int
    median: float
    min: float
    max: float
    mean: float
    stddev: float

    @property
    def cv(self) -> float:
        """Coefficient of variation (stddev / mean); 0 when the mean is 0."""
        return self.stddev / self.mean if self.mean else 0.0

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> Stats:
        values = [float(v) for v in samples]
        if not values:
            raise ValueError("no samples")
        if any(math.isnan(v) or math.isinf(v) for v in values):
            raise ValueError("samples contain NaN or inf")
        return cls(
            n=len(values),
            median=statistics.median(values),
            min=min(values),
            max=max(values),
            mean=statistics.fmean(values),
            stddev=statistics.stdev(values) if len(values) > 1 else 0.0,
        )

    @classmethod
    def single(cls, value: float) -> Stats:
        return cls(n=1, median=value, min=value, max=value, mean=value, stddev=0.0)

    def ci_half_width_rel(self, z: float = 1.96) -> float:
        """Half width of the normal-approximation confidence interval of the mean, relative to it."""
        if self.n < 2 or not self.mean:
            return float("inf")
        return z * self.stddev / math.sqrt(self.n) / abs(self.mean)
