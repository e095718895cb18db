"""CudaEngine: the TransferEngine (engines/base.py) on real NVIDIA GPUs, one process driving every
local GPU through CuPy.

Life of ``run(plan, reps)``: check the plan (``waiver``: methods, GPU indices, endpoints, peer
access, free memory) -> allocate buffers for this (plan, size) -> set peer access for the method
(enabled; for ``ce-nopeer`` disabled for the plan's pairs and restored afterwards) -> fill sources
with the check pattern -> ``warmup + reps`` gated regions, each ``inner`` back-to-back copies per
transfer (many for small sizes, so launch overhead does not dominate; times are divided by it),
destinations poisoned before the last region -> compare destinations with the pattern on the GPU
-> free everything. Kernels are compiled and loaded on every GPU when the engine is built.
"""
from __future__ import annotations

import math
import time
from typing import Sequence

from ...errors import BackendUnavailable, ConfigError, UserError
from ...patterns.plan import TransferPlan
from ..base import EngineCapabilities, GroupResult, MethodInfo, TransferTiming
from .buffers import PeerAccess, numa_node_count, numa_node_of_pci
from .copy_engine import CopyEngineOp, PageableCopyOp
from .gate import EventPair, Gate, StreamPool
from .host_staged import DEFAULT_CHUNK_BYTES, StagedPageableOp, StagedPinnedOp
from .kernels import compile_and_preload
from .latency import flag_pingpong_us, remote_read_us
from .ops import HOST, OpContext, Place, SmLaunch, TransferOp
from .sm_copy import SmCopyOp

MiB = 1024 * 1024
REGION_TARGET_BYTES = 64 * MiB  # small sizes repeat back to back up to this many bytes per region
MAX_INNER = 128  # at most this many copies per stream behind one gate
GATE_MAX_QUEUED = 256  # above this many stream entries, run ungated (a full queue would block the host)
MEMORY_RESERVE_BYTES = 512 * MiB  # left free on every GPU

METHODS: tuple[MethodInfo, ...] = (
    MethodInfo("ce", "copy engine, cudaMemcpyPeerAsync on the source's stream, peer access on", True, True, True),
    MethodInfo("ce-read", "copy engine, issued on the destination GPU's stream (reads the peer)", True, True, True),
    MethodInfo("ce-write", "copy engine, issued on the source GPU's stream (writes the peer)", True, True, True),
    MethodInfo("ce-nopeer", "cudaMemcpyPeerAsync with peer access disabled (driver stages through host)", True, False, False),
    MethodInfo("sm-push", "SM kernel on the source GPU storing into peer memory (uint4, unrolled)", True, True, True),
    MethodInfo("sm-pull", "SM kernel on the destination GPU loading from peer memory (uint4, unrolled)", True, True, True),
    MethodInfo("staged", "D2H into pageable host memory, then H2D (host-timed)", True, False, False),
    MethodInfo("staged-pinned", "double-buffered pinned host chunks, D2H overlapped with H2D", True, False, False),
    MethodInfo("h2d", "pinned host to device, copy engine", False, False, True),
    MethodInfo("d2h", "device to pinned host, copy engine", False, False, True),
    MethodInfo("h2d-pageable", "pageable host to device (host-timed)", False, False, True),
    MethodInfo("d2h-pageable", "device to pageable host (host-timed)", False, False, True),
    MethodInfo("local", "device-local copy, copy engine", False, False, False),
)
METHOD_KEYS = tuple(m.key for m in METHODS)
_TWO_GPU_ONLY = ("ce-nopeer", "staged", "staged-pinned")
_PEER_USERS = ("ce", "ce-read", "ce-write", "sm-push", "sm-pull")


def inner_count(size_bytes: int) -> int:
    """Copies per timed region: enough to move REGION_TARGET_BYTES, at most MAX_INNER."""
    if size_bytes <= 0:
        return MAX_INNER
    return max(1, min(MAX_INNER, math.ceil(REGION_TARGET_BYTES / size_bytes)))


class CudaEngine:
    """TransferEngine on the local NVIDIA GPUs (CuPy). ``topology`` maps linkscope GPU indices to
    CUDA ordinals (``Device.cuda_ordinal``, else the index) and gives NUMA nodes; ``None`` means
    every visible CUDA device, in CUDA order."""

    name = "cuda"

    def __init__(self, topology: object | None = None, *, sm_launch: SmLaunch | None = None,
                 gate_timeout_s: float = 5.0) -> None:
        try:
            import cupy
            import cupy.cuda.runtime as runtime
        except Exception as exc:  # ImportError, or CuPy failing to find its CUDA libraries
            raise BackendUnavailable(f"CuPy is not usable here: {exc}", hint="pip install cupy-cuda12x (or cupy-cuda13x)") from exc
        try:
            visible = int(runtime.getDeviceCount())
        except Exception as exc:
            raise BackendUnavailable(f"no CUDA device usable: {exc}") from exc
        if visible == 0:
            raise BackendUnavailable("no CUDA device visible")
        self._topology = topology
        gpus = list(getattr(topology, "gpus", ())) if topology is not None else []
        if gpus:
            ordinals = [g.cuda_ordinal if g.cuda_ordinal is not None else g.index for g in gpus]
            missing = [o for o in ordinals if o is None or o >= visible]
            if missing:
                raise UserError(f"topology names CUDA devices {missing} but only {visible} are visible",
                                hint="check CUDA_VISIBLE_DEVICES or use the live topology")
            numa = {o: g.numa_node for o, g in zip(ordinals, gpus)}
        else:
            ordinals = list(range(visible))
            numa = {}
        self._ordinals: list[int] = [int(o) for o in ordinals]
        sm_count: dict[int, int] = {}
        self._names: dict[int, str] = {}
        for o in self._ordinals:
            props = runtime.getDeviceProperties(o)
            sm_count[o] = int(props["multiProcessorCount"])
            name = props.get("name", b"")
            self._names[o] = name.decode() if isinstance(name, bytes) else str(name)
            if numa.get(o) is None:
                with cupy.cuda.Device(o):
                    numa[o] = numa_node_of_pci(cupy.cuda.Device(o).pci_bus_id)
        # Preload: compile with NVRTC and load every kernel on every GPU before anything is timed.
        kernels = compile_and_preload(tuple(self._ordinals))
        self._ctx = OpContext(kernels=kernels, pool=StreamPool(), peer=PeerAccess(), sm_count=sm_count,
                              numa_node=numa, sm_launch=sm_launch or SmLaunch())
        self._gate = Gate(kernels, int(gate_timeout_s * 1e9))
        self._closed = False

    # ---- facts --------------------------------------------------------------------------
    @property
    def sm_launch(self) -> SmLaunch:
        return self._ctx.sm_launch

    @sm_launch.setter
    def sm_launch(self, value: SmLaunch) -> None:
        self._ctx.sm_launch = value

    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(name=self.name, provenance="measured", methods=METHODS)

    def gpu_count(self) -> int:
        return len(self._ordinals)

    def device_name(self, gpu: int) -> str:
        return self._names[self._ordinal(gpu)]

    def _ordinal(self, gpu: int) -> int:
        if not isinstance(gpu, int) or isinstance(gpu, bool) or not 0 <= gpu < len(self._ordinals):
            raise UserError(f"GPU {gpu!r} does not exist", hint=f"valid GPU indices: 0..{len(self._ordinals) - 1}")
        return self._ordinals[gpu]

    def _place(self, end: int | str) -> Place:
        if end == HOST:
            return HOST
        if isinstance(end, int):
            return self._ordinal(end)
        raise UserError(f"bad transfer end {end!r}", hint="a GPU index or 'host'")

    def free_memory_bytes(self, gpu: int) -> int:
        import cupy
        import cupy.cuda.runtime as runtime

        with cupy.cuda.Device(self._ordinal(gpu)):
            free, _total = runtime.memGetInfo()
        return int(free)

    def can_access_peer(self, a: int, b: int) -> bool:
        return self._ctx.peer.can_access(self._ordinal(a), self._ordinal(b))

    # ---- plan checks --------------------------------------------------------------------
    def waiver(self, plan: TransferPlan) -> str | None:
        method = plan.method
        if method not in METHOD_KEYS:
            return f"unknown method {method!r}; valid methods: {', '.join(METHOD_KEYS)}"
        n = len(self._ordinals)
        need_dev: dict[int, int] = {}
        for t in plan.transfers:
            for end in (t.src, t.dst):
                if end != HOST and not (isinstance(end, int) and 0 <= end < n):
                    return f"GPU {end} does not exist (this machine has {n} GPU{'s' if n != 1 else ''}: 0..{n - 1})"
            src_gpu, dst_gpu = isinstance(t.src, int), isinstance(t.dst, int)
            reason = _endpoint_reason(method, t.src, t.dst, src_gpu, dst_gpu)
            if reason:
                return reason
            if method in _PEER_USERS and src_gpu and dst_gpu and t.src != t.dst:
                a, b = self._ordinals[t.src], self._ordinals[t.dst]  # type: ignore[index]
                if not (self._ctx.peer.can_access(a, b) and self._ctx.peer.can_access(b, a)):
                    return f"no peer access between GPU {t.src} and GPU {t.dst}"
            size = t.size_bytes
            for end in (t.src, t.dst):
                if isinstance(end, int):
                    need_dev[end] = need_dev.get(end, 0) + size
            if not (src_gpu and dst_gpu):  # the data check stages host ends through a device scratch
                gpu = t.src if src_gpu else t.dst
                need_dev[gpu] = need_dev.get(gpu, 0) + size  # type: ignore[index]
        for gpu, need in sorted(need_dev.items()):
            free = self.free_memory_bytes(gpu)
            if need + MEMORY_RESERVE_BYTES > free:
                return (f"size does not fit: GPU {gpu} needs {need / MiB:.0f} MiB for this group "
                        f"but has {free / MiB:.0f} MiB free ({MEMORY_RESERVE_BYTES // MiB} MiB kept in reserve)")
        return None

    # ---- running ------------------------------------------------------------------------
    def _build(self, plan_method: str, src: Place, dst: Place, size: int, chunk_bytes: int | None) -> TransferOp:
        ctx = self._ctx
        if plan_method in ("sm-push", "sm-pull"):
            return SmCopyOp(ctx, plan_method, src, dst, size)
        if plan_method == "staged-pinned":
            return StagedPinnedOp(ctx, src, dst, size, chunk_bytes)
        if plan_method == "staged":
            return StagedPageableOp(ctx, src, dst, size)
        if plan_method in ("h2d-pageable", "d2h-pageable"):
            return PageableCopyOp(ctx, plan_method, src, dst, size)
        return CopyEngineOp(ctx, plan_method, src, dst, size)

    def _set_peer(self, method: str, pairs: set[tuple[int, int]]) -> list[tuple[int, int]]:
        """Enable (or, for ce-nopeer, disable) access for the pairs; returns pairs to re-enable."""
        peer = self._ctx.peer
        restore: list[tuple[int, int]] = []
        for a, b in sorted(pairs):
            for x, y in ((a, b), (b, a)):
                if method == "ce-nopeer":
                    if peer.disable(x, y) and peer.can_access(x, y):
                        restore.append((x, y))
                elif peer.can_access(x, y):
                    peer.enable(x, y)
        return restore

    def _restore_peer(self, restore: list[tuple[int, int]]) -> None:
        for x, y in restore:
            self._ctx.peer.enable(x, y)

    def run(self, plan: TransferPlan, reps: int, *, warmup: int, verify: bool, chunk_bytes: int | None = None) -> GroupResult:
        reason = self.waiver(plan)
        if reason:
            raise ConfigError(reason)
        if reps < 1:
            raise ConfigError(f"reps must be >= 1, got {reps}")
        places = [(self._place(t.src), self._place(t.dst), t.size_bytes) for t in plan.transfers]
        pairs = {(min(s, d), max(s, d)) for s, d, _ in places if isinstance(s, int) and isinstance(d, int) and s != d}
        restore = self._set_peer(plan.method, pairs)
        ops: list[TransferOp] = []
        self._ctx.reset_lanes()
        try:
            for s, d, size in places:
                ops.append(self._build(plan.method, s, d, size, chunk_bytes or DEFAULT_CHUNK_BYTES))
            size_max = max((size for _, _, size in places), default=0)
            inner = inner_count(size_max)
            if plan.method in ("staged", "h2d-pageable", "d2h-pageable"):
                inner = 1 if size_max >= MiB else min(inner, 16)
            if verify:
                for i, op in enumerate(ops):
                    op.fill_source(seed=i + 1)
            per_op, group, notes = self._time_ops(ops, reps, warmup, inner, poison_last=verify)
            verified = [op.check_destination(seed=i + 1) if verify else None for i, op in enumerate(ops)]
            if numa_node_count() > 1 and any(isinstance(op, StagedPinnedOp) and not op.numa_placed for op in ops):
                notes.append("pinned staging buffers not NUMA-placed (one NUMA node, or mbind unavailable)")
            if inner > 1:
                notes.append(f"{inner} copies per timed region; times are per copy")
            timings = tuple(TransferTiming(elapsed_s=tuple(per_op[i]), moved_bytes=op.moved_bytes, verified=verified[i])
                            for i, op in enumerate(ops))
            return GroupResult(timings=timings, group_elapsed_s=tuple(group), notes=tuple(notes))
        finally:
            for op in ops:
                op.free()
            self._restore_peer(restore)

    def _time_ops(self, ops: list[TransferOp], reps: int, warmup: int, inner: int, *,
                  poison_last: bool) -> tuple[list[list[float]], list[float], list[str]]:
        import cupy.cuda.runtime as runtime

        notes: list[str] = []
        per_op: list[list[float]] = [[] for _ in ops]
        group: list[float] = []
        total = warmup + reps
        if any(op.host_timed for op in ops):
            if len(ops) > 1:
                notes.append("pageable copies are synchronous with the host: the group's transfers ran one after another")
            notes.append("host-timed (pageable host memory)")
            for rep in range(total):
                if poison_last and rep == total - 1:
                    for op in ops:
                        op.poison_destination()
                times = []
                for op in ops:
                    t0 = time.perf_counter()
                    op.run_blocking(inner)
                    times.append((time.perf_counter() - t0) / inner)
                if rep >= warmup:
                    for i, t in enumerate(times):
                        per_op[i].append(t)
                    group.append(sum(times))
            return per_op, group, notes

        gated = all(op.queued_entries(inner) <= GATE_MAX_QUEUED for op in ops)
        if not gated:
            notes.append("too many stream entries to hold behind a start gate: timed ungated")
        elif not all(op.gateable for op in ops):
            gated = False
            notes.append("copies block the host while issued (driver staging): timed by device events without a start gate")
        first = ops[0].timing_lane
        assert first is not None
        primary = self._ctx.pool.lane(first.ordinal, 999)
        group_ev = EventPair(primary.ordinal)
        op_ev = [EventPair(op.timing_lane.ordinal) for op in ops]  # type: ignore[union-attr]
        try:
            rep = 0
            while rep < total:
                if poison_last and rep == total - 1:
                    for op in ops:
                        op.poison_destination()
                self._gate.arm()
                if gated:
                    for op in ops:
                        for lane in op.lanes:
                            self._gate.hold(lane)
                    self._gate.hold(primary)
                group_ev.record_start(primary)
                for op, ev in zip(ops, op_ev):
                    ev.record_start(op.timing_lane)  # type: ignore[arg-type]
                    op.enqueue(inner)
                    ev.record_end(op.timing_lane)  # type: ignore[arg-type]
                for ev in op_ev:
                    runtime.streamWaitEvent(primary.ptr, ev.end, 0)
                group_ev.record_end(primary)
                self._gate.release()
                group_s = group_ev.elapsed_s()
                for op in ops:
                    for lane in op.lanes:
                        lane.stream.synchronize()
                if gated and self._gate.timed_out():
                    gated = False
                    notes.append("start gate timed out (stream queue full?): the rest was timed ungated")
                    continue
                if rep >= warmup:
                    for i, ev in enumerate(op_ev):
                        per_op[i].append(ev.elapsed_s() / inner)
                    group.append(group_s / inner)
                rep += 1
        finally:
            group_ev.close()
            for ev in op_ev:
                ev.close()
        return per_op, group, notes

    # ---- latency ------------------------------------------------------------------------
    def latency_us(self, kind: str, src: int | str, dst: int | str, *, method: str | None, size_bytes: int,
                   reps: int, warmup: int) -> Sequence[float]:
        """Latency samples in µs.

        * ``remote-read``: the memory lives on ``src`` (a GPU, or ``"host"`` for mapped pinned
          memory); GPU ``dst`` runs the pointer chase. ``size_bytes`` is the chased buffer's size
          when at least 64 KiB, else 2 MiB.
        * ``flag-pingpong``: one-way flag latency between GPUs ``src`` and ``dst``.
        * ``copy``: device time of one ``size_bytes`` copy with ``method`` (default ``ce``), gated,
          queue drained between copies.
        """
        if kind == "remote-read":
            if not isinstance(dst, int):
                raise ConfigError("remote-read latency needs a GPU as the reader (dst)")
            mem = self._place(src)
            reader = self._ordinal(dst)
            if isinstance(mem, int) and mem != reader:
                if not (self._ctx.peer.can_access(reader, mem)):
                    raise ConfigError(f"no peer access between GPU {src} and GPU {dst}")
                self._ctx.peer.enable(reader, mem)
            return remote_read_us(self._ctx, self._gate, mem, reader, size_bytes, reps, warmup)
        if kind == "flag-pingpong":
            if not (isinstance(src, int) and isinstance(dst, int)) or src == dst:
                raise ConfigError("flag-pingpong latency needs two different GPUs")
            a, b = self._ordinal(src), self._ordinal(dst)
            if not (self._ctx.peer.can_access(a, b) and self._ctx.peer.can_access(b, a)):
                raise ConfigError(f"no peer access between GPU {src} and GPU {dst}")
            self._ctx.peer.enable(a, b)
            self._ctx.peer.enable(b, a)
            return flag_pingpong_us(self._ctx, a, b, reps, warmup)
        if kind == "copy":
            from ...patterns.plan import Transfer

            plan = TransferPlan(pattern="latency", direction="uni", method=method or "ce",
                                transfers=(Transfer(src, dst, size_bytes),))
            reason = self.waiver(plan)
            if reason:
                raise ConfigError(reason)
            s, d = self._place(src), self._place(dst)
            pairs = {(min(s, d), max(s, d))} if isinstance(s, int) and isinstance(d, int) and s != d else set()
            restore = self._set_peer(plan.method, pairs)
            self._ctx.reset_lanes()
            op = self._build(plan.method, s, d, size_bytes, None)
            try:
                per_op, _group, _notes = self._time_ops([op], reps, warmup, 1, poison_last=False)
                return [t * 1e6 for t in per_op[0]]
            finally:
                op.free()
                self._restore_peer(restore)
        raise ConfigError(f"unknown latency kind {kind!r}; valid kinds: remote-read, flag-pingpong, copy")

    # ---- helpers for scripts ------------------------------------------------------------
    def copy_once(self, src: int, dst: int, size_bytes: int, method: str = "ce") -> float:
        """Copy ``size_bytes`` from GPU ``src`` to ``dst`` once (no warm-up, no check); seconds."""
        from ...patterns.plan import Transfer

        plan = TransferPlan(pattern="once", direction="uni", method=method, transfers=(Transfer(src, dst, size_bytes),))
        reason = self.waiver(plan)
        if reason:
            raise ConfigError(reason)
        s, d = self._place(src), self._place(dst)
        restore = self._set_peer(method, {(min(s, d), max(s, d))} if isinstance(s, int) and isinstance(d, int) and s != d else set())
        self._ctx.reset_lanes()
        op = self._build(method, s, d, size_bytes, None)
        try:
            per_op, _g, _n = self._time_ops([op], 1, 0, 1, poison_last=False)
            return per_op[0][0]
        finally:
            op.free()
            self._restore_peer(restore)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            for o in self._ordinals:
                import cupy

                with cupy.cuda.Device(o):
                    cupy.cuda.Device(o).synchronize()
        finally:
            self._gate.close()
            self._ctx.pool.close()

    def __enter__(self) -> "CudaEngine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _endpoint_reason(method: str, src: object, dst: object, src_gpu: bool, dst_gpu: bool) -> str | None:
    desc = f"{src}->{dst}"
    if method in _TWO_GPU_ONLY:
        if not (src_gpu and dst_gpu) or src == dst:
            return f"method {method!r} needs two different GPUs; transfer {desc} has not"
    elif method in _PEER_USERS:
        if not (src_gpu or dst_gpu):
            return f"method {method!r} needs a GPU end; transfer {desc} has none"
        if src_gpu and dst_gpu and src == dst:
            return f"method {method!r} copies between two GPUs; use 'local' for {desc}"
    elif method in ("h2d", "h2d-pageable"):
        if not (src == HOST and dst_gpu):
            return f"method {method!r} copies host -> GPU; transfer {desc} is not"
    elif method in ("d2h", "d2h-pageable"):
        if not (src_gpu and dst == HOST):
            return f"method {method!r} copies GPU -> host; transfer {desc} is not"
    elif method == "local":
        if not (src_gpu and src == dst):
            return f"method 'local' copies within one GPU; transfer {desc} is not"
    return None
