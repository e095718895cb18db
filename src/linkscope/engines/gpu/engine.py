"""GpuEngine: the TransferEngine (engines/base.py) on real GPUs, written once over a DeviceRuntime
(runtime.py: CuPy on CUDA, CuPy on ROCm, or the fake of fake.py), one process driving every local GPU.
``CudaEngine`` (engines/cuda) and ``RocmEngine`` (engines/rocm) are this engine over their runtime.

Life of ``run(plan, reps)``: check the plan (``waiver``: methods, GPU indices, endpoints, peer
access, free memory) -> allocate buffers for this (plan, size) -> set peer access for the method
(enabled; for ``ce-nopeer`` disabled for the plan's pairs and restored afterwards) -> fill sources
with the check pattern -> ``warmup + reps`` gated regions, each ``inner`` back-to-back copies per
transfer (many for small sizes, so launch overhead does not dominate; times are divided by it); a
lone transfer's regions each start behind LEAD_IN_COPIES untimed copies, so the link is busy when
timing starts -> destinations poisoned before the last region (with a lead-in, an extra region of
its own, untimed) -> compare destinations with the pattern on the GPU -> free everything.
Kernels are compiled and loaded on every GPU when the engine is built.
"""
from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ... import platforms
from ...errors import ConfigError, UserError
from ...model.host_copies import SERIAL_NOTE
from ...patterns.methods import (
    CE_NOPEER,
    DEFAULT_METHOD,
    LATENCY_COPY,
    LATENCY_FLAG,
    LATENCY_HOST_READ,
    LATENCY_KINDS,
    LATENCY_REMOTE_READ,
    STAGED,
    STAGED_PINNED,
    Method,
    get_method,
    methods_for,
)
from ...patterns.plan import HOST as PLAN_HOST
from ...patterns.plan import Transfer, TransferPlan
from ..base import MEMORY_RESERVE_BYTES, EngineCapabilities, GroupResult, TransferTiming, plan_waiver
from .buffers import PeerAccess, numa_node_count, numa_node_of_pci, placement_unavailable
from .copy_engine import CopyEngineOp, PageableCopyOp
from .gate import EventPair, Gate, StreamPool
from .host_staged import DEFAULT_CHUNK_BYTES, StagedPageableOp, StagedPinnedOp
from .kernels import compile_and_preload
from .latency import flag_pingpong_us, remote_read_us
from .ops import HOST, OpContext, Place, SmLaunch, TransferOp
from .sm_copy import SmCopyOp

MiB = 1024 * 1024
REGION_TARGET_BYTES = 256 * MiB  # sizes below this repeat back to back up to this many bytes per region
# (was 64 MiB: one 64 MiB copy per region read 376 GB/s where nvbandwidth's 16 read 388, H100 NV18, 2026-11-25)
MAX_INNER = 128  # at most this many copies per stream behind one gate
#: (copies, largest size): regions of sizes up to 64 MiB hold at least 16 copies, nvbandwidth's loopCount
#: (common.h defaultLoopCount): with 4 copies of 64 MiB a region, ce read 387.4-387.7 GB/s where
#: nvbandwidth read 387.9-388.4 (2 x H100, 2026-11-25). The survey's sizes (to 16 and from 256 MiB) keep theirs.
MIN_INNER_UP_TO = (16, 64 * 1024 * 1024)
GATE_MAX_QUEUED = 256  # above this many stream entries, run ungated (a full queue would block the host)
#: Copies enqueued ahead of each timed region's start event, so the link and the engine are already busy
#: when timing starts (nvbandwidth enqueues WARMUP_COUNT = 4 copies before its start event,
#: memcpy.cpp:30 and :432, v0.8). Only for a group of one single-stream transfer: concurrent lead-ins
#: would end at different times and shift the group's common start.
LEAD_IN_COPIES = 4

__all__ = ["MEMORY_RESERVE_BYTES", "GpuEngine", "inner_count"]


def inner_count(size_bytes: int) -> int:
    """Copies per timed region: enough to move REGION_TARGET_BYTES, at most MAX_INNER, and at least
    MIN_INNER_UP_TO copies up to that size (nvbandwidth's loopCount)."""
    if size_bytes <= 0:
        return MAX_INNER
    floor = MIN_INNER_UP_TO[0] if size_bytes <= MIN_INNER_UP_TO[1] else 1
    return max(floor, min(MAX_INNER, math.ceil(REGION_TARGET_BYTES / size_bytes)))


def _bus_key(bus: object) -> str | None:
    """A PCI bus id compared across tools: CUDA's ``00000000:07:00.0``, amdsmi's ``0000:c1:00.0``."""
    if not isinstance(bus, str) or bus.count(":") != 2:
        return None
    domain, rest = bus.lower().split(":", 1)
    try:
        return f"{int(domain, 16):04x}:{rest}"
    except ValueError:
        return None


def _ordinals_by_bus(gpus: Sequence[Any], declared: list[int],
                     props_of: dict[int, dict[str, Any]]) -> tuple[list[int], tuple[str, ...]]:
    """The runtime ordinal of each topology GPU, matched by PCI bus id where both sides know it
    (amdsmi / rocm-smi and HIP, or nvidia-smi and CUDA without CUDA_DEVICE_ORDER=PCI_BUS_ID, may
    number the same devices differently), else the declared ordinal; and a note where they differ."""
    by_bus = {_bus_key(p.get("pci_bus_id")): o for o, p in props_of.items()}
    by_bus.pop(None, None)
    out, moved = [], []
    for g, ordinal in zip(gpus, declared):
        found = by_bus.get(_bus_key(getattr(g, "pci_bus_id", None)))
        if found is not None and found != ordinal:
            moved.append(f"GPU {g.index} ({g.pci_bus_id}) is runtime device {found}, not {ordinal}")
            ordinal = found
        out.append(ordinal)
    if len(set(out)) != len(out):  # a bus id matched twice: trust the declared order
        return declared, ()
    note = ("device order differs between discovery and the runtime; matched by PCI bus id: " + "; ".join(moved),) \
        if moved else ()
    return out, note


class GpuEngine:
    """TransferEngine on the local GPUs of ``runtime``. ``topology`` maps linkscope GPU indices to
    runtime ordinals (``Device.ordinals`` of the runtime's platform, else the index) and gives NUMA nodes; ``None`` means
    every visible device, in runtime order. ``name`` and the offered methods follow the runtime's
    vendor (the method table's ``meaning``)."""

    name = "gpu"

    def __init__(self, runtime: Any, topology: object | None = None, *, sm_launch: SmLaunch | None = None,
                 gate_timeout_s: float = 5.0, name: str | None = None,
                 process_env: dict[str, str] | None = None,
                 child_factory: tuple[str, dict[str, Any]] | None = None) -> None:
        self.rt = runtime
        #: how the runner builds this engine again in a child process (``"module:callable"``, kwargs)
        self.child_factory = child_factory
        self.process_env: dict[str, str] = dict(process_env or {})
        self.name = name or next((p.engine for p in platforms.PLATFORMS if p.runtime == runtime.platform), runtime.platform)
        self.vendor: str = runtime.vendor
        self._methods: tuple[Method, ...] = methods_for(self.vendor)
        visible = int(runtime.device_count())
        self._topology = topology
        gpus = list(getattr(topology, "gpus", ())) if topology is not None else []
        if gpus:
            ordinals = [g.ordinals.get(self.vendor, g.index) for g in gpus]
            missing = [o for o in ordinals if o is None or o >= visible]
            if missing:
                raise UserError(f"topology names devices {missing} but only {visible} are visible",
                                hint="check CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES or use the live topology")
            numa = {o: g.numa_node for o, g in zip(ordinals, gpus)}
        else:
            ordinals = list(range(visible))
            numa = {}
        self._ordinals: list[int] = [int(o) for o in ordinals]
        props_of = {o: runtime.properties(o) for o in range(visible)}
        #: where the runtime's device order differs from the topology's (matched by PCI bus id)
        self.order_notes: tuple[str, ...] = ()
        if gpus:
            self._ordinals, self.order_notes = _ordinals_by_bus(gpus, self._ordinals, props_of)
            numa = {o: g.numa_node for o, g in zip(self._ordinals, gpus)}
        sm_count: dict[int, int] = {}
        self._names: dict[int, str] = {}
        for o in self._ordinals:
            props = props_of[o]
            sm_count[o] = int(props["sm_count"])
            self._names[o] = str(props.get("name", ""))
            if numa.get(o) is None:
                numa[o] = numa_node_of_pci(props.get("pci_bus_id"))
        # Preload: compile (NVRTC / hipRTC) and load every kernel on every GPU before anything is timed.
        kernels = compile_and_preload(runtime, tuple(self._ordinals))
        self._ctx = OpContext(rt=runtime, kernels=kernels, pool=StreamPool(runtime), peer=PeerAccess(runtime),
                              sm_count=sm_count, numa_node=numa, sm_launch=sm_launch or SmLaunch())
        self._gate = Gate(runtime, kernels, int(gate_timeout_s * 1e9))
        self._closed = False

    # ---- facts --------------------------------------------------------------------------
    @property
    def sm_launch(self) -> SmLaunch:
        return self._ctx.sm_launch

    @sm_launch.setter
    def sm_launch(self, value: SmLaunch) -> None:
        self._ctx.sm_launch = value

    def capabilities(self) -> EngineCapabilities:
        return EngineCapabilities(name=self.name, provenance="measured", methods=self._methods,
                                  latency_kinds=LATENCY_KINDS, vendor=self.vendor, process_env=dict(self.process_env))

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
        free, _total = self.rt.mem_get_info(self._ordinal(gpu))
        return int(free)

    def can_access_peer(self, a: int, b: int) -> bool:
        return self._ctx.peer.can_access(self._ordinal(a), self._ordinal(b))

    # ---- plan checks --------------------------------------------------------------------
    def waiver(self, plan: TransferPlan) -> str | None:
        """The shared waiver (engines.base.plan_waiver) with this machine's GPUs, peer access and memory."""
        n = len(self._ordinals)
        peer = self._ctx.peer
        m = get_method(plan.method) if plan.method in {x.key for x in self._methods} else None
        env = dict(m.env_for(self.vendor)) if m is not None else {}
        wrong = {k: v for k, v in env.items() if self.process_env.get(k) != v}
        if wrong:
            need = ", ".join(f"{k}={v}" for k, v in wrong.items())
            return (f"method {plan.method!r} needs {need} set before the {self.name} runtime starts "
                    f"(the runner runs it in a child process with it)")
        return plan_waiver(plan, gpu_count=n, offered=[m.key for m in self._methods],
                           peer_ok=lambda a, b: peer.can_access(self._ordinals[a], self._ordinals[b]),
                           free_bytes=self.free_memory_bytes)

    # ---- running ------------------------------------------------------------------------
    def _build(self, plan_method: str, src: Place, dst: Place, size: int, chunk_bytes: int | None) -> TransferOp:
        ctx = self._ctx
        method = get_method(plan_method)
        if method.unit == "kernel" and method.key not in self._runtime_copies:
            return SmCopyOp(ctx, plan_method, src, dst, size)
        if method.key == STAGED_PINNED.key:
            return StagedPinnedOp(ctx, src, dst, size, chunk_bytes)
        if method.key == STAGED.key:
            return StagedPageableOp(ctx, src, dst, size)
        if method.pageable:
            return PageableCopyOp(ctx, plan_method, src, dst, size)
        return CopyEngineOp(ctx, plan_method, src, dst, size)

    def _chase(self, kind: str, ordinal: int) -> dict[str, Any]:
        """How ``kind``'s chase on GPU ``ordinal`` is spread over its SMs (platforms.Platform.latency_chase),
        as ``remote_read_us`` keyword arguments: the spread and the SM count."""
        spread = dict(platforms.by_key(self.rt.vendor).latency_chase).get(kind, platforms.CHASE_ONE_BLOCK)
        return {"spread": spread, "sms": int(self._ctx.sm_count.get(ordinal, 0))}

    def chase_cache_bytes(self, ordinal: int) -> int:
        """The reader's cache that would hold the pointer chase's lines of remote memory (the chain
        is sized past it); 0 where remote lines are not cached by the reader (NVIDIA)."""
        return 0

    def runtime_notes(self, method: str, ops: Sequence[TransferOp]) -> list[str]:
        """What the vendor's runtime did differently from what the method names, for the run's notes
        (the ROCm engine's say where HIP chose a kernel, or shares hardware queues); none here."""
        return []

    @property
    def _runtime_copies(self) -> frozenset[str]:
        """Kernel-unit methods that are a runtime copy call (the runtime's blit kernels: ce-blit),
        as opposed to linkscope's own copy kernel."""
        return frozenset(m.key for m in self._methods if m.unit == "kernel" and m.env_for(self.vendor))

    def _set_peer(self, method: str, pairs: set[tuple[int, int]]) -> list[tuple[int, int]]:
        """Enable (or, for ce-nopeer, disable) access for the pairs; returns pairs to re-enable."""
        peer = self._ctx.peer
        restore: list[tuple[int, int]] = []
        for a, b in sorted(pairs):
            for x, y in ((a, b), (b, a)):
                if method == CE_NOPEER.key:
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
            kernels_per_gpu = Counter(op.runner for op in ops if isinstance(op, SmCopyOp))
            for op in ops:
                if isinstance(op, SmCopyOp):
                    op.share_sms(kernels_per_gpu[op.runner])
            size_max = max((size for _, _, size in places), default=0)
            inner = inner_count(size_max)
            if get_method(plan.method).pageable:
                inner = 1 if size_max >= MiB else min(inner, 16)
            if verify:
                for i, op in enumerate(ops):
                    op.fill_source(seed=i + 1)
            per_op, group, notes = self._time_ops(ops, reps, warmup, inner, poison_last=verify)
            verified = [op.check_destination(seed=i + 1) if verify else None for i, op in enumerate(ops)]
            if numa_node_count() > 1 and any(isinstance(op, StagedPinnedOp) and not op.numa_placed for op in ops):
                why = placement_unavailable() or "the runtime refused the placed mapping"
                notes.append(f"pinned staging buffers not NUMA-placed: {why}")
            for op in ops:
                if isinstance(op, StagedPinnedOp) and op.numa_landed[1] and op.numa_landed[0] is not None:
                    wanted, landed = op.numa_landed
                    if landed != (wanted,):
                        notes.append(f"pinned staging buffers for NUMA node {wanted} landed on node(s) "
                                     f"{', '.join(map(str, landed))}")
            notes.extend(self.runtime_notes(plan.method, ops))
            notes.extend(self.order_notes)
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
        notes: list[str] = []
        per_op: list[list[float]] = [[] for _ in ops]
        group: list[float] = []
        total = warmup + reps
        if any(op.host_timed for op in ops):
            if len(ops) > 1:
                notes.append(SERIAL_NOTE)
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

        # no more lead-in copies than timed ones: at 256 MiB and up one copy keeps the link busy
        lead_in = min(LEAD_IN_COPIES, inner) if len(ops) == 1 and len(ops[0].lanes) == 1 else 0
        gated = all(op.queued_entries(inner) + op.queued_entries(lead_in) <= GATE_MAX_QUEUED for op in ops)
        if not gated:
            notes.append("too many stream entries to hold behind a start gate: timed ungated")
        elif not all(op.gateable for op in ops):
            gated = False
            notes.append("copies block the host while issued (driver staging): timed by device events without a start gate")
        first = ops[0].timing_lane
        assert first is not None
        primary = self._ctx.pool.lane(first.ordinal, 999)
        group_ev = EventPair(self.rt, primary.ordinal)
        op_ev = [EventPair(self.rt, op.timing_lane.ordinal) for op in ops]  # type: ignore[union-attr]
        # With a lead-in, the data check gets a region of its own after the timed ones (no lead-in
        # there: a lead-in copy would write the pattern the check must see from the timed copies).
        check_region = poison_last and lead_in > 0
        regions = total + (1 if check_region else 0)
        try:
            rep = 0
            while rep < regions:
                last = rep == regions - 1
                if poison_last and last:
                    for op in ops:
                        op.poison_destination()
                ahead = 0 if (poison_last and last) else lead_in
                self._gate.arm()
                if gated:
                    for op in ops:
                        for lane in op.lanes:
                            self._gate.hold(lane)
                    self._gate.hold(primary)
                if ahead:  # one op: its lead-in, then its start event; the group starts there too
                    ops[0].enqueue(ahead)
                    op_ev[0].record_start(ops[0].timing_lane)  # type: ignore[arg-type]
                    self.rt.stream_wait_event(primary.ordinal, primary.stream, op_ev[0].start)
                group_ev.record_start(primary)
                for op, ev in zip(ops, op_ev):
                    if not ahead:
                        ev.record_start(op.timing_lane)  # type: ignore[arg-type]
                    op.enqueue(inner)
                    ev.record_end(op.timing_lane)  # type: ignore[arg-type]
                for ev in op_ev:
                    self.rt.stream_wait_event(primary.ordinal, primary.stream, ev.end)
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
                if warmup <= rep < total:
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
        * ``host-read``: the ``remote-read`` chase through pinned host memory (``src`` must be
          ``"host"``; GPU ``dst`` reads), nvbandwidth's host_device_latency_sm.
        * ``copy``: device time of one ``size_bytes`` copy with ``method`` (default ``ce``), gated,
          queue drained between copies.
        """
        if kind == LATENCY_HOST_READ.key:
            if src != PLAN_HOST or not isinstance(dst, int):
                raise ConfigError(f"{kind} latency reads host memory from a GPU: src must be 'host', dst a GPU; got {src}->{dst}")
            reader = self._ordinal(dst)
            return remote_read_us(self._ctx, self._gate, HOST, reader, size_bytes, reps, warmup,
                                  reader_cache_bytes=self.chase_cache_bytes(reader), **self._chase(kind, reader))
        if kind == LATENCY_REMOTE_READ.key:
            if not isinstance(dst, int):
                raise ConfigError("remote-read latency needs a GPU as the reader (dst)")
            mem = self._place(src)
            reader = self._ordinal(dst)
            if isinstance(mem, int) and mem != reader:
                if not (self._ctx.peer.can_access(reader, mem)):
                    raise ConfigError(f"no peer access between GPU {src} and GPU {dst}")
                self._ctx.peer.enable(reader, mem)
            # a chase through host memory is spread as host-read's, whichever kind asked for it
            spread_of = LATENCY_HOST_READ.key if mem == HOST else kind
            return remote_read_us(self._ctx, self._gate, mem, reader, size_bytes, reps, warmup,
                                  reader_cache_bytes=self.chase_cache_bytes(reader), **self._chase(spread_of, reader))
        if kind == LATENCY_FLAG.key:
            if not (isinstance(src, int) and isinstance(dst, int)) or src == dst:
                raise ConfigError("flag-pingpong latency needs two different GPUs")
            a, b = self._ordinal(src), self._ordinal(dst)
            if not (self._ctx.peer.can_access(a, b) and self._ctx.peer.can_access(b, a)):
                raise ConfigError(f"no peer access between GPU {src} and GPU {dst}")
            self._ctx.peer.enable(a, b)
            self._ctx.peer.enable(b, a)
            return flag_pingpong_us(self._ctx, a, b, reps, warmup)
        if kind == LATENCY_COPY.key:
            plan = TransferPlan(pattern="latency", direction="uni", method=method or DEFAULT_METHOD.key,
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
        raise ConfigError(f"unknown latency kind {kind!r}", hint=f"valid kinds: {', '.join(LATENCY_KINDS)}")

    # ---- helpers for scripts ------------------------------------------------------------
    def copy_once(self, src: int, dst: int, size_bytes: int, method: str = DEFAULT_METHOD.key) -> float:
        """Copy ``size_bytes`` from GPU ``src`` to ``dst`` once (no warm-up, no check); seconds."""
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
                self.rt.synchronize(o)
        finally:
            self._gate.close()
            self._ctx.pool.close()

    def __enter__(self) -> GpuEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

