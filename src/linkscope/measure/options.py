"""Measurement options (frozen; recorded in RunRecord.options)."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..errors import ConfigError

MAX_REPS = 100_000
"""Repetitions (and warm-up iterations) per plan and size at most: every sample is kept in memory
and in the RunRecord, and 100,000 of the fastest copies still finish in seconds. The MPI/NCCL
benchmarks' ``--iterations/--iters/-n``, ``--warmup/-w``, ``--window`` and ``--cuda-graph`` have the
same bound."""

MAX_RUNS = 1_000
"""``--runs`` (whole repeats of a benchmark's sweep) at most."""


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

    def __post_init__(self) -> None:
        for name in ("warmup", "min_reps", "max_reps", "latency_reps"):
            value = getattr(self, name)
            low = 0 if name == "warmup" else 1
            if not low <= value <= MAX_REPS:
                raise ConfigError(f"{name.replace('_', ' ')} must be between {low} and {MAX_REPS:,}, got {value:,}")
        if self.min_reps > self.max_reps:
            raise ConfigError(f"min reps {self.min_reps} is above max reps {self.max_reps}")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
