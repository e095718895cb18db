"""How bytes are moved: the TransferEngine protocol that real (cuda, rocm) and simulated (sim)
engines implement, so the measurement runner never cares which one it drives.

Contract (tested for every engine alike, STYLE.md C10):

* ``run(plan, reps)`` executes the concurrent group ``reps`` times (after the engine's own warm-up
  of ``warmup`` iterations) and returns per-transfer elapsed seconds per repetition, timed on the
  device (events around each transfer, all released together by a start gate);
* ``moved_bytes <= size_bytes`` per transfer and repetition (an SM copy may truncate);
* ``verified`` is None when ``verify`` was off, else whether the destination held the source data;
* a plan the engine cannot run gives ``waiver(plan)`` a reason string before anything is allocated;
* latency samples are microseconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence

from ..patterns.plan import TransferPlan


@dataclass(frozen=True)
class MethodInfo:
    """A transfer method an engine offers.

    Attributes:
        key: stable key (``ce``, ``ce-read``, ``ce-write``, ``ce-nopeer``, ``sm-push``, ``sm-pull``,
            ``staged``, ``staged-pinned``, ``h2d``, ``d2h``, ``h2d-pageable``, ``d2h-pageable``, ``local``).
        description: one line for ``bench --list``.
        peer: True for GPU-to-GPU methods; False for host<->device and device-local reference lines.
        needs_peer_access: True when the method cannot run without P2P access between the GPUs.
        host_endpoint: True when a transfer end may be ``"host"``.
    """

    key: str
    description: str
    peer: bool = True
    needs_peer_access: bool = False
    host_endpoint: bool = False


LATENCY_KINDS = ("remote-read", "flag-pingpong", "copy")


@dataclass(frozen=True)
class EngineCapabilities:
    name: str
    provenance: str  # "measured" for real engines, "simulated" for sim
    methods: tuple[MethodInfo, ...]
    latency_kinds: tuple[str, ...] = LATENCY_KINDS
    concurrent: bool = True

    def method(self, key: str) -> MethodInfo | None:
        return next((m for m in self.methods if m.key == key), None)


@dataclass(frozen=True)
class TransferTiming:
    """Per-transfer result of ``reps`` repetitions: seconds per repetition, bytes moved per repetition."""

    elapsed_s: tuple[float, ...]
    moved_bytes: int
    verified: bool | None = None


@dataclass(frozen=True)
class GroupResult:
    """Result of running one plan: one TransferTiming per transfer of the plan (same order), and the
    wall time of the whole group per repetition (first start to last end), in seconds."""

    timings: tuple[TransferTiming, ...]
    group_elapsed_s: tuple[float, ...]
    notes: tuple[str, ...] = field(default=())


class TransferEngine(Protocol):
    name: str

    def capabilities(self) -> EngineCapabilities: ...

    def gpu_count(self) -> int: ...

    def free_memory_bytes(self, gpu: int) -> int: ...

    def waiver(self, plan: TransferPlan) -> str | None: ...

    def run(self, plan: TransferPlan, reps: int, *, warmup: int, verify: bool, chunk_bytes: int | None = None) -> GroupResult: ...

    def latency_us(self, kind: str, src: int | str, dst: int | str, *, method: str | None, size_bytes: int, reps: int, warmup: int) -> Sequence[float]: ...

    def close(self) -> None: ...
