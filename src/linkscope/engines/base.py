"""How bytes are moved: the TransferEngine protocol that real (cuda, rocm) and simulated (sim)
engines implement, so the measurement runner never cares which one it drives.

Contract (tested for every engine alike, STYLE.md C10):

* ``run(plan, reps)`` executes the concurrent group ``reps`` times (after the engine's own warm-up
  of ``warmup`` iterations) and returns per-transfer elapsed seconds per repetition, timed on the
  device (events around each transfer, all released together by a start gate);
* ``moved_bytes <= size_bytes`` per transfer and repetition (an SM copy may truncate);
* ``verified`` is None when ``verify`` was off; with ``verify`` on it is True/False (the destination
  held / did not hold the source data), or None only together with a note in ``GroupResult.notes``
  that starts with ``NOT_CHECKED`` and says why no data was checked (sim: no bytes exist);
* a plan the engine cannot run gives ``waiver(plan)`` a reason string before anything is allocated
  (never an exception: unknown method, a GPU this machine lacks, an endpoint the method table's rule
  refuses, no peer access, not enough free memory); ``run`` of such a plan raises ConfigError;
* latency samples are microseconds.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..patterns.methods import LATENCY_KINDS, Method, endpoint_reason, find_method
from ..patterns.plan import TransferPlan

#: A transfer method an engine offers: a row of the one method table (patterns/methods.py).
MethodInfo = Method


@dataclass(frozen=True)
class EngineCapabilities:
    name: str
    provenance: str  # "measured" for real engines, "simulated" for sim
    methods: tuple[MethodInfo, ...]
    latency_kinds: tuple[str, ...] = LATENCY_KINDS
    concurrent: bool = True
    vendor: str | None = None  # whose runtime runs the methods (nvidia, amd); None for sim
    process_env: dict[str, str] = field(default_factory=dict)  # what the runtime started with

    def env_missing(self, key: str) -> dict[str, str]:
        """The part of method ``key``'s environment this engine's runtime did not start with."""
        return {k: v for k, v in self.env_for(key).items() if self.process_env.get(k) != v}

    def method(self, key: str) -> MethodInfo | None:
        return next((m for m in self.methods if m.key == key), None)

    def env_for(self, key: str) -> dict[str, str]:
        """Environment the runtime must start with to run method ``key`` ({} = this process will do)."""
        m = find_method(key)
        return dict(m.env_for(self.vendor)) if m is not None and self.vendor else {}


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


#: Prefix of the note an engine adds when ``verify`` was asked but no data could be checked.
NOT_CHECKED = "data not checked:"


class TransferEngine(Protocol):
    name: str

    def capabilities(self) -> EngineCapabilities: ...

    def gpu_count(self) -> int: ...

    def free_memory_bytes(self, gpu: int) -> int: ...

    def waiver(self, plan: TransferPlan) -> str | None: ...

    def run(self, plan: TransferPlan, reps: int, *, warmup: int, verify: bool, chunk_bytes: int | None = None) -> GroupResult: ...

    def latency_us(self, kind: str, src: int | str, dst: int | str, *, method: str | None, size_bytes: int, reps: int,
                   warmup: int) -> Sequence[float]: ...

    def close(self) -> None: ...


MiB = 1024 * 1024
MEMORY_RESERVE_BYTES = 512 * MiB  # left free on every GPU


def plan_waiver(plan: TransferPlan, *, gpu_count: int, offered: Sequence[str],
                peer_ok: Callable[[int, int], bool], free_bytes: Callable[[int], int],
                reserve_bytes: int = MEMORY_RESERVE_BYTES) -> str | None:
    """The one waiver every engine gives (real or simulated): the reason ``plan`` cannot run on a
    machine of ``gpu_count`` GPUs offering ``offered`` methods, with peer access where
    ``peer_ok(a, b)`` (GPU indices, both directions asked) and ``free_bytes(gpu)`` free, or None.
    Checks, in order: method known and offered, GPUs exist, the method table's endpoint rule,
    peer access, free memory (each GPU's buffers plus a scratch for the data check of a host end)."""
    method = find_method(plan.method)
    if method is None or plan.method not in offered:
        return f"unknown method {plan.method!r} here; valid methods: {', '.join(offered)}"
    need: dict[int, int] = {}
    for t in plan.transfers:
        for end in (t.src, t.dst):
            if isinstance(end, int) and not isinstance(end, bool) and not 0 <= end < gpu_count:
                return f"GPU {end} does not exist (this machine has {gpu_count} GPU{'s' if gpu_count != 1 else ''}: 0..{gpu_count - 1})"
        reason = endpoint_reason(method, t.src, t.dst)
        if reason:
            return reason
        src_gpu, dst_gpu = isinstance(t.src, int), isinstance(t.dst, int)
        if (method.needs_peer_access and src_gpu and dst_gpu and t.src != t.dst
                and not (peer_ok(t.src, t.dst) and peer_ok(t.dst, t.src))):  # type: ignore[arg-type]
            return f"no peer access between GPU {t.src} and GPU {t.dst}"
        for end in (t.src, t.dst):
            if isinstance(end, int):
                need[end] = need.get(end, 0) + t.size_bytes
        if not (src_gpu and dst_gpu):
            gpu_end = t.src if src_gpu else t.dst
            if isinstance(gpu_end, int):  # the data check stages a host end through a device scratch
                need[gpu_end] = need.get(gpu_end, 0) + t.size_bytes
    for gpu, total in sorted(need.items()):
        free = free_bytes(gpu)
        if total + reserve_bytes > free:
            return (f"size does not fit: GPU {gpu} needs {total / MiB:.0f} MiB for this group "
                    f"but has {free / MiB:.0f} MiB free ({reserve_bytes // MiB} MiB kept in reserve)")
    return None
