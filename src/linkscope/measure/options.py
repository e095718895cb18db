"""Measurement options (frozen; recorded in RunRecord.options)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class MeasureOptions:
    """How to measure.

    Attributes:
        warmup: untimed iterations before timing each plan/size.
        min_reps: repetitions always taken.
        max_reps: upper bound on repetitions.
        target_ci_rel: stop once the 95% confidence half-width of the mean is below this fraction.
        time_budget_s: stop adding repetitions to one plan/size after this many seconds.
        verify: check destination data (poisoned destination, checksum).
        statistic: the statistic shown in tables (always ``median``; all are stored).
        chunk_bytes: chunk of staged-pinned copies (double-buffered).
        latency_reps: repetitions of latency measurements.
    """

    warmup: int = 3
    min_reps: int = 5
    max_reps: int = 50
    target_ci_rel: float = 0.005
    time_budget_s: float = 1.0
    verify: bool = True
    statistic: str = "median"
    chunk_bytes: int = 8 * 1024 * 1024
    latency_reps: int = 20

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
