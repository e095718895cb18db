"""GPU-to-GPU copies staged through host memory.

* ``staged``: the naive path: the whole buffer D2H into pageable host memory, then H2D. The
  runtime performs pageable copies synchronously with the host, so this op is host-timed.
* ``staged-pinned``: double-buffered pinned host chunks on the NUMA node of the source GPU.
  Chunk k goes D2H into pinned buffer k % n on the source GPU's stream while chunk k-1 goes H2D
  from the other buffer on the destination GPU's stream; events order the two streams (the H2D of
  chunk k waits for its D2H; the D2H into a buffer waits for the H2D that last read it). The
  source stream finally waits for the last H2D, so its end event closes the whole transfer.
"""
from __future__ import annotations

from ...errors import MeasurementError
from ...patterns.methods import STAGED, STAGED_PINNED
from .buffers import PageableHostBuffer
from .gate import sync_event
from .ops import OpContext, Place, TransferOp

DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024
DEFAULT_STAGING_BUFFERS = 2


class StagedPinnedOp(TransferOp):
    def __init__(self, ctx: OpContext, src: Place, dst: Place, size_bytes: int, chunk_bytes: int | None = None,
                 n_buffers: int = DEFAULT_STAGING_BUFFERS) -> None:
        if not (isinstance(src, int) and isinstance(dst, int)):
            raise MeasurementError("staged-pinned needs two GPUs")
        super().__init__(ctx, src, dst, size_bytes)
        self.method = STAGED_PINNED.key
        self.chunk_bytes = max(4096, int(chunk_bytes or DEFAULT_CHUNK_BYTES))
        n_chunks = max(1, -(-size_bytes // self.chunk_bytes))
        self.n_buffers = max(1, min(n_buffers, n_chunks))
        staging = min(self.chunk_bytes, max(size_bytes, 1))
        self.host = [ctx.pinned_buffer(staging, ctx.numa_node.get(src)) for _ in range(self.n_buffers)]
        self.numa_placed = all(h.numa_placed for h in self.host)
        #: (node asked for, nodes the staging pages landed on) for the run's notes
        self.numa_landed = (ctx.numa_node.get(src), tuple(sorted({h.numa_landed for h in self.host if h.numa_landed is not None})))
        self.lane_src = ctx.new_lane(src)
        self.lane_dst = ctx.new_lane(dst)
        self.lanes = [self.lane_src, self.lane_dst]
        self.timing_lane = self.lane_src
        self.d2h_done = [sync_event(ctx.rt, src) for _ in range(self.n_buffers)]
        self.h2d_done = [sync_event(ctx.rt, dst) for _ in range(self.n_buffers)]
        self.n_chunks = n_chunks

    def queued_entries(self, count: int) -> int:
        return count * self.n_chunks * 3 + 1

    def enqueue(self, count: int) -> None:
        rt = self.ctx.rt
        ls, ld = self.lane_src, self.lane_dst
        size, chunk = self.size_bytes, self.chunk_bytes
        k = 0
        for _ in range(count):
            for off in range(0, max(size, 1), chunk):
                n = min(chunk, size - off)
                b = k % self.n_buffers
                rt.stream_wait_event(ls.ordinal, ls.stream, self.h2d_done[b])
                rt.memcpy_async(ls.ordinal, self.host[b].ptr, self.src.ptr + off, n, ls.stream)
                rt.event_record(self.d2h_done[b], ls.stream)
                rt.stream_wait_event(ld.ordinal, ld.stream, self.d2h_done[b])
                rt.memcpy_async(ld.ordinal, self.dst.ptr + off, self.host[b].ptr, n, ld.stream)
                rt.event_record(self.h2d_done[b], ld.stream)
                k += 1
        last = (k - 1) % self.n_buffers
        rt.stream_wait_event(ls.ordinal, ls.stream, self.h2d_done[last])

    def free(self) -> None:
        for ev in (*self.d2h_done, *self.h2d_done):
            try:
                self.ctx.rt.event_destroy(ev)
            except Exception:
                pass
        for h in self.host:
            h.free()
        super().free()


class StagedPageableOp(TransferOp):
    host_timed = True

    def __init__(self, ctx: OpContext, src: Place, dst: Place, size_bytes: int) -> None:
        if not (isinstance(src, int) and isinstance(dst, int)):
            raise MeasurementError("staged needs two GPUs")
        super().__init__(ctx, src, dst, size_bytes)
        self.method = STAGED.key
        self.host = PageableHostBuffer.allocate(size_bytes)
        self.lane_src = ctx.new_lane(src)
        self.lane_dst = ctx.new_lane(dst)
        self.lanes = [self.lane_src, self.lane_dst]
        self.timing_lane = self.lane_src

    def run_blocking(self, count: int) -> None:
        for _ in range(count):
            self.ctx.memcpy_async(self.host.ptr, self.src.ptr, self.size_bytes, self.lane_src)
            self.lane_src.stream.synchronize()
            self.ctx.memcpy_async(self.dst.ptr, self.host.ptr, self.size_bytes, self.lane_dst)
            self.lane_dst.stream.synchronize()

    def enqueue(self, count: int) -> None:
        self.run_blocking(count)

    def free(self) -> None:
        self.host.free()
        super().free()
