"""The persisted record of a run: RunRecord with one Measurement per (plan entry, size).

JSON form (schema_version 1, format "linkscope.run") — the fields scripts read (CLI.md):
each measurement has ``src``/``dst`` (GPU index or ``"host"``; ``"*"`` for an aggregate over many),
``method``, ``pattern``, ``direction`` (uni|bi), ``size_bytes``, ``moved_bytes``,
``median_gb_per_s`` with ``min/max/mean/stddev_gb_per_s``, ``cv``, ``n``, ``latency_us`` (median)
with ``latency_min/max/mean/stddev_us`` where latency was measured, ``status`` (ok|waived|error),
``reason``, ``provenance`` (measured|simulated|predicted). Missing values are null, never NaN.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from enum import Enum
from typing import Any

from ..endpoints import ALL, HOST, Endpoint
from .stats import Stats

RUN_SCHEMA_VERSION = 1
RUN_FORMAT = "linkscope.run"
__all__ = [
    "ALL",
    "HOST",
    "RUN_FORMAT",
    "RUN_SCHEMA_VERSION",
    "Endpoint",
    "Measurement",
    "RunProvenance",
    "RunRecord",
    "Stats",
    "Status",
    "now_utc",
]



def now_utc() -> str:
    """The current time as RunRecord.created_utc writes it (ISO 8601, seconds, UTC)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Status(str, Enum):
    OK = "ok"
    WAIVED = "waived"
    ERROR = "error"


class RunProvenance(str, Enum):
    MEASURED = "measured"
    SIMULATED = "simulated"
    PREDICTED = "predicted"


@dataclass(frozen=True)
class Measurement:
    """One result: a transfer (or an aggregate of a concurrent group) at one size.

    Attributes:
        src, dst: GPU index, ``"host"``, or ``"*"`` for an aggregate over several devices.
        method: transfer method key (``ce``, ``sm-push``, ``staged-pinned``, ``nccl.allreduce`` ...).
        pattern: pattern key (``matrix``, ``ring``, ``all-to-one`` ...).
        direction: ``uni`` or ``bi``.
        size_bytes: bytes asked for per transfer.
        moved_bytes: bytes really moved per repetition, counted for this entry (a ``bi`` pair
            entry counts both directions; an SM copy may move less than asked).
        bandwidth: GB/s statistics over repetitions, or None (latency-only entries, waived, error).
        latency: microsecond statistics, or None.
        status, reason: ok | waived | error, and why for the latter two.
        provenance: measured | simulated | predicted.
        scope: ``transfer`` (one flow) or ``total`` (sum over a concurrent group, e.g. per receiver).
        group: index of the concurrent group within the run (entries run at the same time share it).
        verified: True when the data check passed, False when it failed, None when not checked.
        extra: other named numbers with units in their keys (``algbw_gb_per_s``,
            ``busbw_gb_per_s``, ``wrong``, ``theoretical_gb_per_s``, ``predicted_gb_per_s`` ...).
    """

    src: Endpoint
    dst: Endpoint
    method: str
    pattern: str
    direction: str
    size_bytes: int
    moved_bytes: int = 0
    bandwidth: Stats | None = None
    latency: Stats | None = None
    status: Status = Status.OK
    reason: str = ""
    provenance: RunProvenance = RunProvenance.MEASURED
    scope: str = "transfer"
    group: int | None = None
    verified: bool | None = None
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def median_gb_per_s(self) -> float | None:
        return self.bandwidth.median if self.bandwidth else None

    @property
    def latency_us(self) -> float | None:
        return self.latency.median if self.latency else None

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    def with_(self, **changes: Any) -> Measurement:
        return replace(self, **changes)


@dataclass(frozen=True)
class RunRecord:
    """A whole run: what ran, where, how, and every result.

    Attributes:
        kind: ``bench``, ``latency``, ``survey``, ``mpi``, ``nccl``, ``stencil``, ``p2p``, ``predict``.
        provenance: measured | simulated | predicted for the run as a whole.
        created_utc: ISO 8601 time the run started.
        context: host, driver, CUDA/ROCm/NCCL/MPI versions, GPUs, environment variables that change
            behaviour (CUDA_VISIBLE_DEVICES, NCCL_*, HSA_ENABLE_SDMA ...), linkscope version.
        options: the options the run used (sizes, methods, warm-up, repetitions, verify ...).
        topology: the topology in its JSON form (linkscope.topology.io.to_dict), or None.
        measurements: every result, in run order.
        findings: plain-language conclusions (survey).
        complete: False when the run was interrupted or aborted part-way.
        extra: other sections (e.g. ``stencil`` tables, ``mapping``), JSON-able.
    """

    kind: str
    provenance: RunProvenance
    created_utc: str
    context: Mapping[str, Any] = field(default_factory=dict, hash=False)
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)
    topology: Mapping[str, Any] | None = field(default=None, hash=False)
    measurements: tuple[Measurement, ...] = ()
    findings: tuple[str, ...] = ()
    complete: bool = True
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def errors(self) -> tuple[Measurement, ...]:
        return tuple(m for m in self.measurements if m.status is Status.ERROR)

    def with_(self, **changes: Any) -> RunRecord:
        return replace(self, **changes)
