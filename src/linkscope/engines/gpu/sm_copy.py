"""SM-initiated copies: a kernel moves the bytes with 16-byte loads and stores.

* ``sm-push``: the kernel runs on the source GPU, reads local memory and stores into the peer's
  (or mapped host) memory;
* ``sm-pull``: the kernel runs on the destination GPU and loads from the peer's memory.

Hopper tuning (HOPPER.md, and the design of nvbandwidth's SM copies): ``uint4`` accesses
coalesced across the warp, ``unroll`` independent loads issued before the first store (bytes in
flight per SM = threads × blocks/SM × unroll × 16), a grid of SM count × blocks per SM walking the
buffer grid-stride, loads that skip the reader's L1 (``ld.global.cg``, as nvbandwidth's copy kernel) and
streaming stores (``st.global.cs``) so the copy does
not keep lines in L2. The whole buffer is copied (a byte tail after the last whole uint4 too), so
``moved_bytes == size_bytes``.

``SmLaunch.bulk`` selects the Hopper bulk-copy (TMA) kernel instead: one thread per block streams
pieces through shared memory with ``cp.async.bulk`` (global->shared on an mbarrier, then
shared->global), so the copy is issued as large bulk requests rather than per-thread accesses.
"""
from __future__ import annotations

import numpy as np

from ...patterns.methods import SM_PUSH, get_method
from ...platforms import by_key
from .kernels import BULK_SHAPES, COPY_MAX_THREADS, COPY_UNROLLS
from .ops import OpContext, Place, SmLaunch, TransferOp, u64


class SmCopyOp(TransferOp):
    def __init__(self, ctx: OpContext, method: str, src: Place, dst: Place, size_bytes: int) -> None:
        super().__init__(ctx, src, dst, size_bytes)
        self.method = method
        if get_method(method).issuer == "src":
            runner = src if isinstance(src, int) else dst
        else:
            runner = dst if isinstance(dst, int) else src
        assert isinstance(runner, int)
        self.runner = runner
        launch = ctx.sm_launch
        shape = by_key(ctx.rt.vendor).sm_push_shape
        between_gpus = isinstance(src, int) and isinstance(dst, int)
        if method == SM_PUSH.key and between_gpus and shape is not None and launch == SmLaunch():
            launch = SmLaunch(threads=shape[0], blocks_per_sm=shape[1], unroll=shape[2])
        self.launch = launch
        unroll = launch.unroll if launch.unroll in COPY_UNROLLS else 4
        self.kernel = f"copy_u4_{unroll}"
        self.threads = min(launch.threads, COPY_MAX_THREADS.get(unroll, launch.threads))
        n_vec = size_bytes // 16
        self.n_vec = n_vec
        self.n_tail = size_bytes - n_vec * 16
        self.bulk_piece: int | None = None
        if launch.bulk is not None and launch.bulk in BULK_SHAPES and ctx.kernels.has(f"copy_bulk_{launch.bulk[0]}_{launch.bulk[1]}"):
            piece, stages = launch.bulk
            self.kernel = f"copy_bulk_{piece}_{stages}"
            self.threads = 64
            self.bulk_piece = piece
        self._unroll = unroll
        self.share_sms(1)
        lane = ctx.new_lane(runner)
        self.lanes = [lane]
        self.timing_lane = lane
        tail_off = n_vec * 16
        if self.kernel.startswith("copy_bulk"):
            self.args: tuple = (u64(self.src.ptr), u64(self.dst.ptr), u64(size_bytes))
        else:
            self.args = (u64(self.src.ptr), u64(self.dst.ptr), u64(n_vec), u64(self.src.ptr + tail_off),
                         u64(self.dst.ptr + tail_off), np.uint32(self.n_tail))
        # copy_u4 repeats a region's copies in one launch between two GPUs where the platform allows it
        # (platforms.Platform.copy_loops_in_kernel); host ends and the bulk kernel launch once a copy
        self.looped = (not self.kernel.startswith("copy_bulk") and isinstance(src, int) and isinstance(dst, int)
                       and by_key(ctx.rt.vendor).copy_loops_in_kernel)

    def share_sms(self, kernels_on_gpu: int) -> None:
        """Size the grid for ``kernels_on_gpu`` copy kernels running at once on this op's GPU.

        One kernel's grid (SMs × blocks per SM × threads) fills every SM; a second kernel started
        beside it (both directions of a host<->GPU pair, several pulls into one GPU) would only get
        SMs as the first one's blocks retire, which at the end of a grid-stride loop means after it
        finished. Splitting the blocks per SM between the kernels lets them run side by side, as the
        concurrent copies of a pattern are meant to (nvbandwidth's bidirectional SM tests do too)."""
        per_sm = max(1, self.launch.blocks_per_sm // max(1, kernels_on_gpu))
        sms = self.ctx.sm_count.get(self.runner, 132)
        if self.bulk_piece is not None:
            self.grid = max(1, min(sms * per_sm, self.size_bytes // self.bulk_piece))
        else:
            self.grid = max(1, min(sms * per_sm, -(-self.n_vec // (self.threads * self._unroll))))

    def enqueue(self, count: int) -> None:
        lane = self.lanes[0]
        if self.looped:  # the region's count copies in one launch (nvbandwidth's loopCount)
            self.ctx.launch(lane, self.kernel, self.grid, self.threads, (*self.args, np.uint32(count)))
            return
        args = self.args if self.kernel.startswith("copy_bulk") else (*self.args, np.uint32(1))
        for _ in range(count):
            self.ctx.launch(lane, self.kernel, self.grid, self.threads, args)
