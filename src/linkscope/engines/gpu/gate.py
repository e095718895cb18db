"""Start gate and device-event timing (nvbandwidth's measurement design, re-implemented).

Each involved stream first runs ``gate_spin``, a one-thread kernel that spins on a flag in mapped
pinned host memory; the host then enqueues start events, the copies and end events behind it, and
only then releases the flag. All streams start together, and the host's enqueue time is out of
the timed region. The spin kernel gives up after ``GATE_TIMEOUT_NS`` (so a bug cannot hang the
GPU) and records that in a second flag, which ``timed_out()`` reports: a timed-out gate means the
region was not gated as intended (for example the host blocked while the gate was closed).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .buffers import PinnedHostBuffer
from .kernels import GATE_TIMEOUT_NS, KernelSet


@dataclass
class Lane:
    """One stream on one device (runtime ordinal)."""

    ordinal: int
    stream: Any  # the runtime's stream object (``ptr``, ``synchronize()``)

    @property
    def ptr(self) -> int:
        return int(self.stream.ptr)


class StreamPool:
    """Non-blocking streams per device, created on first use and kept for the engine's life.
    ``lane(ordinal, k)`` is the k-th stream of that device (one per concurrent transfer)."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self._streams: dict[tuple[int, int], Any] = {}

    def lane(self, ordinal: int, k: int = 0) -> Lane:
        key = (ordinal, k)
        if key not in self._streams:
            self._streams[key] = self.rt.stream(ordinal)
        return Lane(ordinal, self._streams[key])

    def close(self) -> None:
        self._streams.clear()


class Gate:
    """The host-released start flag shared by every stream of a run."""

    def __init__(self, rt: Any, kernels: KernelSet, timeout_ns: int = GATE_TIMEOUT_NS) -> None:
        self.rt = rt
        self._kernels = kernels
        self._timeout_ns = timeout_ns
        self._buf = PinnedHostBuffer.allocate(rt, 64)  # flag at word 0, timed-out at word 16 (own line)
        self._words = self._buf.view_u32(32)
        self._words[:] = 0

    def arm(self) -> None:
        self._words[0] = 0
        self._words[16] = 0

    def hold(self, lane: Lane) -> None:
        """Enqueue the spin kernel on ``lane``: the stream waits there until ``release()``."""
        self._kernels.launch(lane, "gate_spin", 1, 1,
                             (np.uint64(self._buf.ptr), np.uint64(self._buf.ptr + 64), np.uint64(self._timeout_ns)))

    def release(self) -> None:
        self._words[0] = 1

    def timed_out(self) -> bool:
        return bool(self._words[16])

    def close(self) -> None:
        self._buf.free()


class EventPair:
    """Start/end timing events on one device; elapsed seconds between their last records."""

    def __init__(self, rt: Any, ordinal: int) -> None:
        self.rt = rt
        self.ordinal = ordinal
        self.start = rt.event_create(ordinal)
        self.end = rt.event_create(ordinal)

    def record_start(self, lane: Lane) -> None:
        self.rt.event_record(self.start, lane.stream)

    def record_end(self, lane: Lane) -> None:
        self.rt.event_record(self.end, lane.stream)

    def elapsed_s(self) -> float:
        return self.rt.event_elapsed_s(self.start, self.end)

    def close(self) -> None:
        for ev in (self.start, self.end):
            try:
                self.rt.event_destroy(ev)
            except Exception:
                pass


def sync_event(rt: Any, ordinal: int) -> Any:
    """A timing-disabled event (cheap) for cross-stream ordering on device ``ordinal``."""
    return rt.event_create(ordinal, timing=False)
