"""One transfer of a plan, ready to run: its buffers, its stream(s) and how to enqueue it.

A ``TransferOp`` is built by a method module (copy_engine, sm_copy, host_staged) from a resolved
transfer (runtime ordinals or ``"host"``). The engine's timing loop only sees this interface:

* ``lanes``: every stream the op uses (each gets a start gate); ``timing_lane``: where its start
  and end events go (the op's last operation ends on that stream);
* ``enqueue(count)``: enqueue ``count`` back-to-back copies (asynchronous, gate-safe);
* ``host_timed``: True for pageable copies, which the runtime performs synchronously with the
  host; those cannot wait behind a gate, so the engine times them with the host clock around
  ``run_blocking(count)``;
* ``queued_entries(count)``: stream entries ``enqueue`` adds, so the engine can skip the gate
  where the stream's queue could fill while the gate is closed;
* ``fill_source`` / ``poison_destination`` / ``check_destination``: the data check.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import MeasurementError
from .buffers import Buffer, DeviceBuffer, PageableHostBuffer, PeerAccess, PinnedHostBuffer
from .gate import Lane, StreamPool
from .kernels import KernelSet

HOST = "host"
Place = int | str  # runtime ordinal or "host"

POISON_BYTE = 0xA5


@dataclass(frozen=True)
class SmLaunch:
    """Launch shape of the SM copy kernel: ``unroll`` uint4 loads in flight per thread,
    ``threads`` per block, ``blocks_per_sm`` blocks per multiprocessor (grid = SMs × that)."""

    unroll: int = 4
    threads: int = 512
    blocks_per_sm: int = 4
    bulk: tuple[int, int] | None = None  # (piece bytes, stages): use the bulk-copy (TMA) kernel


@dataclass
class OpContext:
    """What ops need from the engine (passed explicitly, no globals)."""

    rt: Any  # the DeviceRuntime (runtime.py)
    kernels: KernelSet
    pool: StreamPool
    peer: PeerAccess
    sm_count: dict[int, int]
    numa_node: dict[int, int | None]
    sm_launch: SmLaunch = field(default_factory=SmLaunch)
    lane_counter: dict[int, int] = field(default_factory=dict)

    def new_lane(self, ordinal: int) -> Lane:
        """A stream of ``ordinal`` not yet used by another op of the current plan."""
        k = self.lane_counter.get(ordinal, 0)
        self.lane_counter[ordinal] = k + 1
        return self.pool.lane(ordinal, k)

    def reset_lanes(self) -> None:
        self.lane_counter.clear()

    def grid(self, ordinal: int, work_items: int, threads: int, per_sm: int = 4) -> int:
        return max(1, min(self.sm_count.get(ordinal, 132) * per_sm, -(-work_items // threads)))

    def launch(self, lane: Lane, name: str, grid: int, threads: int, args: tuple[Any, ...]) -> None:
        self.kernels.launch(lane, name, grid, threads, args)

    def memcpy_async(self, dst: int, src: int, n: int, lane: Lane) -> None:
        self.rt.memcpy_async(lane.ordinal, dst, src, n, lane.stream)

    def device_buffer(self, ordinal: int, size_bytes: int, *, uncached: bool = False) -> DeviceBuffer:
        return DeviceBuffer.allocate(self.rt, ordinal, size_bytes, uncached=uncached)

    def pinned_buffer(self, size_bytes: int, numa_node: int | None = None) -> PinnedHostBuffer:
        return PinnedHostBuffer.allocate(self.rt, size_bytes, numa_node)


def u64(value: int) -> np.uint64:
    return np.uint64(value)


class DataCheck:
    """Fill / poison / check one buffer with the position-dependent pattern (kernels.py), on the
    GPU ``helper_ordinal`` (the op's GPU end). Host buffers go through a device scratch buffer
    and a plain copy, so a 1 GiB check stays a few tens of milliseconds."""

    def __init__(self, ctx: OpContext, buf: Buffer, helper_ordinal: int) -> None:
        self.ctx = ctx
        self.buf = buf
        self.helper = helper_ordinal
        self.lane = ctx.pool.lane(helper_ordinal, 1000)  # a private stream, never gated

    def _device_view(self) -> tuple[int, DeviceBuffer | None]:
        if isinstance(self.buf, DeviceBuffer):
            return self.buf.ptr, None
        scratch = self.ctx.device_buffer(self.helper, self.buf.size_bytes)
        return scratch.ptr, scratch

    def _sync(self) -> None:
        self.lane.stream.synchronize()

    def fill(self, seed: int) -> None:
        n = self.buf.size_bytes
        ptr, scratch = self._device_view()
        ordinal = self.buf.ordinal if isinstance(self.buf, DeviceBuffer) else self.helper
        lane = self.lane if ordinal == self.helper else self.ctx.pool.lane(ordinal, 1000)
        self.ctx.launch(lane, "fill_pattern", self.ctx.grid(ordinal, max(n // 4, 1), 256), 256, (u64(ptr), u64(n), np.uint32(seed)))
        if scratch is not None:
            self.ctx.memcpy_async(self.buf.ptr, scratch.ptr, n, lane)
        lane.stream.synchronize()
        if scratch is not None:
            scratch.free()

    def poison(self) -> None:
        n = self.buf.size_bytes
        if isinstance(self.buf, DeviceBuffer):
            lane = self.ctx.pool.lane(self.buf.ordinal, 1000)
            self.ctx.launch(lane, "poison", self.ctx.grid(self.buf.ordinal, max(n // 4, 1), 256), 256, (u64(self.buf.ptr), u64(n)))
            lane.stream.synchronize()
        elif isinstance(self.buf, PageableHostBuffer):
            assert self.buf.array is not None
            self.buf.array[:] = POISON_BYTE
        else:
            import ctypes

            ctypes.memset(self.buf.ptr, POISON_BYTE, max(n, 1))

    def mismatches(self, seed: int) -> int:
        n = self.buf.size_bytes
        ordinal = self.buf.ordinal if isinstance(self.buf, DeviceBuffer) else self.helper
        lane = self.ctx.pool.lane(ordinal, 1000)
        ptr, scratch = self._device_view()
        counter = self.ctx.device_buffer(ordinal, 8)
        rt = self.ctx.rt
        try:
            if scratch is not None:
                self.ctx.memcpy_async(scratch.ptr, self.buf.ptr, n, lane)
            rt.memset_async(ordinal, counter.ptr, 0, 8, lane.stream)
            self.ctx.launch(lane, "check_pattern", self.ctx.grid(ordinal, max(n // 4, 1), 256), 256,
                            (u64(ptr), u64(n), np.uint32(seed), u64(counter.ptr)))
            out = np.zeros(1, dtype=np.uint64)
            lane.stream.synchronize()
            rt.memcpy(ordinal, int(out.ctypes.data), counter.ptr, 8)
            return int(out[0])
        finally:
            counter.free()
            if scratch is not None:
                scratch.free()


def allocate_end(ctx: OpContext, place: Place, size_bytes: int, *, pageable: bool, numa_node: int | None) -> Buffer:
    if place == HOST:
        return PageableHostBuffer.allocate(size_bytes) if pageable else ctx.pinned_buffer(size_bytes, numa_node)
    assert isinstance(place, int)
    return ctx.device_buffer(place, size_bytes)


class TransferOp:
    """Base: src/dst buffers + data check; subclasses define lanes and enqueue."""

    host_timed = False
    gateable = True  # False where enqueueing blocks the host (it would wait on its own closed gate)

    def __init__(self, ctx: OpContext, src: Place, dst: Place, size_bytes: int, *, pageable: bool = False) -> None:
        self.ctx = ctx
        self.src_place, self.dst_place = src, dst
        self.size_bytes = size_bytes
        self.moved_bytes = size_bytes
        gpu_end = src if isinstance(src, int) else dst
        if not isinstance(gpu_end, int):
            raise MeasurementError("a transfer needs at least one GPU end")
        self.gpu_end: int = gpu_end
        numa = ctx.numa_node.get(gpu_end)
        self.src = allocate_end(ctx, src, size_bytes, pageable=pageable, numa_node=numa)
        try:
            self.dst = allocate_end(ctx, dst, size_bytes, pageable=pageable, numa_node=numa)
        except Exception:
            self.src.free()
            raise
        helper_src = src if isinstance(src, int) else gpu_end
        helper_dst = dst if isinstance(dst, int) else gpu_end
        self._check_src = DataCheck(ctx, self.src, helper_src)
        self._check_dst = DataCheck(ctx, self.dst, helper_dst)
        self.lanes: list[Lane] = []
        self.timing_lane: Lane | None = None

    # -- data check ---------------------------------------------------------------------------
    def fill_source(self, seed: int) -> None:
        self._check_src.fill(seed)

    def poison_destination(self) -> None:
        self._check_dst.poison()

    def check_destination(self, seed: int) -> bool:
        if self.moved_bytes == 0:
            return True
        return self._check_dst.mismatches(seed) == 0

    # -- running ------------------------------------------------------------------------------
    def enqueue(self, count: int) -> None:
        raise NotImplementedError

    def queued_entries(self, count: int) -> int:
        return count

    def run_blocking(self, count: int) -> None:
        raise NotImplementedError

    def free(self) -> None:
        self.src.free()
        self.dst.free()
