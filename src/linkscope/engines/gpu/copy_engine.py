"""Runtime copies: ``cudaMemcpyPeerAsync`` / ``cudaMemcpyAsync`` (or the HIP twins) issued on one stream.

Which stream issues the copy matters on NVLink systems (nvbandwidth's read/write CE variants):

* ``ce``: ``cudaMemcpyPeerAsync`` on the source GPU's stream, peer access enabled;
* ``ce-write``: ``cudaMemcpyAsync`` (UVA, cudaMemcpyDefault) on the source GPU's stream;
* ``ce-read``: the same on the destination GPU's stream;
* ``ce-blit`` (AMD): the ``ce`` call in a runtime started with ``HSA_ENABLE_SDMA=0`` (blit kernels);
* ``ce-nopeer``: ``cudaMemcpyPeerAsync`` on the source's stream with peer access disabled for the
  pair by the engine, so the driver stages the copy through host memory;
* ``h2d`` / ``d2h`` / ``local``: pinned host <-> device and device-local reference copies;
* ``h2d-pageable`` / ``d2h-pageable``: pageable host memory; the runtime copies those
  synchronously with the host, so they are host-timed (see ops.TransferOp.host_timed).
"""
from __future__ import annotations

from ...patterns.methods import CE_NOPEER, CE_WRITE, get_method
from .ops import HOST, OpContext, Place, TransferOp


class CopyEngineOp(TransferOp):
    def __init__(self, ctx: OpContext, method: str, src: Place, dst: Place, size_bytes: int) -> None:
        super().__init__(ctx, src, dst, size_bytes)
        self.method = method
        info = get_method(method)
        if info.issuer == "dst" and isinstance(dst, int):
            issuer = dst
        elif isinstance(src, int):
            issuer = src
        else:
            issuer = self.gpu_end
        self.issuer = issuer
        # the peer call for the source-issued methods whose copy is the runtime's peer copy (ce, ce-blit,
        # ce-nopeer); ce-write / ce-read issue a plain UVA copy on their stream
        self.peer_call = (info.issuer == "src" and info.endpoints in ("peer", "gpu-pair") and method != CE_WRITE.key
                          and isinstance(src, int) and isinstance(dst, int) and src != dst)
        lane = ctx.new_lane(issuer)
        self.lanes = [lane]
        self.timing_lane = lane
        # Without peer access the driver stages the copy through the host and the call returns
        # only when it is done: behind a closed gate the host would wait on itself.
        self.gateable = method != CE_NOPEER.key

    def enqueue(self, count: int) -> None:
        rt = self.ctx.rt
        lane = self.lanes[0]
        n = self.size_bytes
        if self.peer_call:
            assert isinstance(self.src_place, int) and isinstance(self.dst_place, int)
            for _ in range(count):
                rt.memcpy_peer_async(lane.ordinal, self.dst.ptr, self.dst_place, self.src.ptr, self.src_place, n, lane.stream)
        else:
            for _ in range(count):
                rt.memcpy_async(lane.ordinal, self.dst.ptr, self.src.ptr, n, lane.stream)


class PageableCopyOp(TransferOp):
    """Host <-> device through pageable memory, host-timed."""

    host_timed = True

    def __init__(self, ctx: OpContext, method: str, src: Place, dst: Place, size_bytes: int) -> None:
        super().__init__(ctx, src, dst, size_bytes, pageable=True)
        self.method = method
        lane = ctx.new_lane(self.gpu_end)
        self.lanes = [lane]
        self.timing_lane = lane

    def run_blocking(self, count: int) -> None:
        lane = self.lanes[0]
        for _ in range(count):
            self.ctx.memcpy_async(self.dst.ptr, self.src.ptr, self.size_bytes, lane)
        lane.stream.synchronize()

    def enqueue(self, count: int) -> None:  # used only by copy_once-style callers
        lane = self.lanes[0]
        for _ in range(count):
            self.ctx.memcpy_async(self.dst.ptr, self.src.ptr, self.size_bytes, lane)


def is_host(place: Place) -> bool:
    return place == HOST
