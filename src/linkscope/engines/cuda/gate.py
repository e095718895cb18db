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
    """One CUDA stream on one device (CUDA ordinal)."""

    ordinal: int
    stream: Any  # cupy.cuda.Stream

    @property
    def ptr(self) -> int:
        return int(self.stream.ptr)


class StreamPool:
    """Non-blocking streams per device, created on first use and kept for the engine's life.
    ``lane(ordinal, k)`` is the k-th stream of that device (one per concurrent transfer)."""

    def __init__(self) -> None:
        self._streams: dict[tuple[int, int], Any] = {}

    def lane(self, ordinal: int, k: int = 0) -> Lane:
        key = (ordinal, k)
        if key not in self._streams:
            import cupy

            with cupy.cuda.Device(ordinal):
                self._streams[key] = cupy.cuda.Stream(non_blocking=True)
        return Lane(ordinal, self._streams[key])

    def close(self) -> None:
        self._streams.clear()


class Gate:
    """The host-released start flag shared by every stream of a run."""

    def __init__(self, kernels: KernelSet, timeout_ns: int = GATE_TIMEOUT_NS) -> None:
        self._kernels = kernels
        self._timeout_ns = timeout_ns
        self._buf = PinnedHostBuffer.allocate(64)  # flag at word 0, timed-out at word 16 (own line)
        self._words = self._buf.view_u32(32)
        self._words[:] = 0

    def arm(self) -> None:
        self._words[0] = 0
        self._words[16] = 0

    def hold(self, lane: Lane) -> None:
        """Enqueue the spin kernel on ``lane``: the stream waits there until ``release()``."""
        import cupy

        fn = self._kernels.get("gate_spin")
        with cupy.cuda.Device(lane.ordinal), lane.stream:
            fn((1,), (1,), (np.uint64(self._buf.ptr), np.uint64(self._buf.ptr + 64), np.uint64(self._timeout_ns)))

    def release(self) -> None:
        self._words[0] = 1

    def timed_out(self) -> bool:
        return bool(self._words[16])

    def close(self) -> None:
        self._buf.free()


class EventPair:
    """Start/end timing events on one device; elapsed seconds between their last records."""

    def __init__(self, ordinal: int) -> None:
        import cupy.cuda.runtime as runtime

        self.ordinal = ordinal
        import cupy

        with cupy.cuda.Device(ordinal):
            self.start = runtime.eventCreateWithFlags(0)
            self.end = runtime.eventCreateWithFlags(0)

    def record_start(self, lane: Lane) -> None:
        import cupy.cuda.runtime as runtime

        runtime.eventRecord(self.start, lane.ptr)

    def record_end(self, lane: Lane) -> None:
        import cupy.cuda.runtime as runtime

        runtime.eventRecord(self.end, lane.ptr)

    def elapsed_s(self) -> float:
        import cupy.cuda.runtime as runtime

        runtime.eventSynchronize(self.end)
        return float(runtime.eventElapsedTime(self.start, self.end)) / 1e3

    def close(self) -> None:
        import cupy.cuda.runtime as runtime

        for ev in (self.start, self.end):
            try:
                runtime.eventDestroy(ev)
            except Exception:
                pass


def sync_event(ordinal: int) -> int:
    """A timing-disabled event (cheap) for cross-stream ordering on device ``ordinal``."""
    import cupy
    import cupy.cuda.runtime as runtime

    with cupy.cuda.Device(ordinal):
        return int(runtime.eventCreateWithFlags(2))  # cudaEventDisableTiming
