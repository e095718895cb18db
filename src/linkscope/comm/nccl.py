"""NCCL collectives benchmark, nccl-tests style (time, algbw, busbw, #wrong).

Per size: allocate once at the largest size, run ``warmup`` untimed operations, then time
``iters`` back-to-back operations between CUDA events on every local GPU's stream (each operation
is one NCCL group over all local peers) and take time = elapsed / iters; with several MPI ranks
the times are averaged over ranks as nccl-tests does. algbw and busbw come from
the collective descriptor (``linkscope.collectives``: nccl-tests' factors, the library call, the
reference). float32, sum, root 0.

Placement: out-of-place by default (separate send and receive buffers). With ``inplace=True``
every size is also timed in place, right after the out-of-place run, with nccl-tests' buffer
offsets (``linkscope.collectives``, one descriptor per operation): allreduce, broadcast, reduce,
alltoall and sendrecv pass one buffer as both send and receive buffer; allgather and gather send
from their own slot of the receive buffer
(``recv + rank * count``); reduce_scatter and scatter receive into their own slot of the send buffer
(``send + rank * recv_count``). NCCL defines no in-place alltoall or sendrecv (grouped
send/recv on one buffer race), so, as in nccl-tests, those are timed but their ``#wrong`` is
not checked (None, shown as N/A).

Data check (``#wrong``): after timing, every rank's send buffer is filled with
``(i mod 13) + rank + 1`` (exact in float32 for any sum here), the receive buffer is poisoned,
one operation runs, and every element is compared with the value the operation must produce.

alltoall, sendrecv, gather and scatter are grouped ``ncclSend``/``ncclRecv`` as in nccl-tests (NCCL
has no such primitives; the op table's ``exchanges``): alltoall sends chunk k to rank k (itself
included); gather sends every rank's chunk to rank 0, scatter chunk k from rank 0 to rank k; sendrecv sends to
rank+1 and receives from rank-1 (a ring shift).

With ``graph_iters`` > 0 (nccl-tests' ``-G N``) ``graph_iters`` operations are captured once into a
CUDA graph per GPU at every size, and the graph is launched ``iters / graph_iters`` times (at least
``MIN_GRAPH_LAUNCHES``); if capture fails the run falls back to eager launches and says so. Every
size, not only small ones: an operation is "short" whenever its launch shows, and that depends on
the launch, not on the size. One thread enqueueing a grouped alltoall over four communicators takes
~110 us (4 x H200, 2026-11-28: ``bench nccl`` eager alltoall flat at 112-124 us from 2 to 32 MiB,
where nccl-tests -G 20 took 21-97 us), longer than the operation itself up to ~32 MiB. Graphs also
make NCCL register the buffers (``NCCL_GRAPH_REGISTER``, default on), as in nccl-tests -G: so
``--cuda-graph N`` is compared with nccl-tests ``-G N`` and ``--cuda-graph 0`` with its eager run.
Each row keeps ``launch_us``: the host time to enqueue one eager operation, measured on the warm-up
launches (median), so the launch cost per op is on record beside the device time, and ``launch_path``:
which loop issued the eager operations, the native C loop (``comm.eagerloop``, nccl-tests' own loop) or,
where it cannot be built or loaded, the Python one (the run's notes say why).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..collectives import OP_TABLE, Layout, LibraryCall, algbw_gb_per_s, busbw_factor, check_values, layout
from ..measure.sweep import RunInterrupted, StopSignal, boundaries, interrupted
from ..units import format_size
from .eagerloop import eager_loop
from .launch import Job, agree, require
from .nccl_backend import Peer, library_name, moves_data

POISON = -7.0
UNCHECKED_IN_PLACE = tuple(op.name for op in OP_TABLE.values() if op.in_place == "undefined")
"""Operations NCCL does not define in place: timed, but #wrong is N/A (nccl-tests does the same)."""


def _unchecked_in_place(op: str) -> bool:
    return OP_TABLE[op].in_place == "undefined"  # the table as it is now (``UNCHECKED_IN_PLACE``: at import)


@dataclass(frozen=True)
class NcclRow:
    """One operation at one size and placement (``time_us`` etc. are medians over runs).

    ``inplace``: the in-place variant (nccl-tests' right-hand column group); ``wrong`` is None
    when the data was not checked (``--no-verify``, or in-place alltoall/sendrecv)."""

    op: str
    size_bytes: int
    count: int
    time_us: float
    algbw_gb_per_s: float
    busbw_gb_per_s: float
    wrong: int | None
    runs_time_us: tuple[float, ...]
    graph: bool = False
    inplace: bool = False
    launch_us: float | None = None  # host time to enqueue one eager operation (warm-up median); None: simulated
    launch_path: str = "python"  # the loop that issued the eager launches: "native" (comm.eagerloop) or "python"
    set_times_us: tuple[float, ...] = ()  # with several communicator sets: each set's median, in the order made


@dataclass(frozen=True)
class NcclResult:
    op: str
    ranks: int
    devices_per_rank: tuple[tuple[int, ...], ...]
    nccl_version: str
    rows: tuple[NcclRow, ...]
    iters: int
    warmup: int
    simulated: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def wrong_total(self) -> int:
        return sum(r.wrong or 0 for r in self.rows)

    @property
    def has_inplace(self) -> bool:
        return any(r.inplace for r in self.rows)

    def sizes(self) -> list[int]:
        """Sizes in run order (each once)."""
        return list(dict.fromkeys(r.size_bytes for r in self.rows))

    def row(self, size_bytes: int, inplace: bool) -> NcclRow | None:
        return next((r for r in self.rows if r.size_bytes == size_bytes and r.inplace == inplace), None)

    def sets_of(self, size_bytes: int) -> int:
        """Communicator sets that timed ``size_bytes`` (1 for a run on one set)."""
        return min((max(1, len(r.set_times_us)) for r in self.rows if r.size_bytes == size_bytes), default=0)


def peer_gpus(job: Job, backend: Any, devices: Sequence[int] | None, *, local_gpu: int | None = None) -> list[int]:
    """The GPUs this process's peers will drive (``make_peers``), known before any communicator is made: every
    device in ``devices`` (default all) in a single process, ``local_gpu`` in a rank of several."""
    if job.size == 1:
        devs = list(devices) if devices is not None else list(range(backend.device_count()))
        require(job, len(devs) >= 1, "no GPU to run NCCL on")
        require(job, len(set(devs)) == len(devs), f"--gpus lists a GPU twice: {devs}")
        return devs
    require(job, local_gpu is not None, "no GPU bound to this rank")
    return [int(local_gpu)]  # type: ignore[arg-type]  # require() above


def make_peers(job: Job, backend: Any, devices: Sequence[int] | None, *, local_gpu: int | None = None) -> list[Peer]:
    """Single process: one peer per device in ``devices`` (initAll). Several MPI ranks: one peer
    per rank on ``local_gpu``, with rank 0's unique id broadcast over MPI."""
    gpus = peer_gpus(job, backend, devices, local_gpu=local_gpu)
    if job.size == 1:
        return backend.init_all(gpus)
    uid = backend.unique_id() if job.rank == 0 else None
    uid = job.comm.bcast(uid, root=0)
    return [backend.init_rank(job.size, uid, job.rank, gpus[0])]


def nccl_ranks(job: Job, peers: Sequence[Any]) -> int:
    """NCCL ranks in the job: this process's peers (or their GPUs), or one per MPI rank (each with the same count)."""
    return job.size * len(peers) if job.size > 1 else len(peers)


def peer_devices(job: Job, peers: Sequence[Peer]) -> list[tuple[int, ...]]:
    """The GPUs every MPI rank drives (gathered over MPI with several ranks)."""
    mine = tuple(p.device for p in peers)
    return job.comm.allgather(mine) if job.size > 1 else [mine]


class _Buffers:
    """Send and receive buffer of every local peer (views; in place they overlap)."""

    def __init__(self, send: list[Any], recv: list[Any]) -> None:
        self.send = send
        self.recv = recv

    @classmethod
    def allocate(cls, backend: Any, peers: Sequence[Peer], lay: Layout) -> _Buffers:
        return cls([backend.alloc(p, lay.send_count) for p in peers], [backend.alloc(p, lay.recv_count) for p in peers])

    def views(self, op: str, peers: Sequence[Peer], lay: Layout, inplace: bool,
              shift: tuple[int, int] = (0, 0)) -> _Buffers:
        """Buffers of one size: out of place, or nccl-tests' in-place offsets (module doc); ``shift``: where in
        the send and the receive buffer the size's views start (elements; ``buffer_shifts``)."""
        s0, r0 = shift
        send_count, recv_count = max(lay.send_count, 1), max(lay.recv_count, 1)
        if not inplace:
            return _Buffers([b[s0:s0 + send_count] for b in self.send], [b[r0:r0 + recv_count] for b in self.recv])
        c = lay.chunk_count
        rule = OP_TABLE[op].in_place
        send, recv = [], []
        for p, sb, rb in zip(peers, self.send, self.recv):
            if rule == "recv_slot":
                base = rb[r0:r0 + recv_count]
                send.append(base[p.rank * c:p.rank * c + max(c, 1)])
                recv.append(base)
            elif rule == "send_slot":
                base = sb[s0:s0 + send_count]
                send.append(base)
                recv.append(base[p.rank * c:p.rank * c + max(c, 1)])
            else:
                base = rb[r0:r0 + recv_count]
                send.append(base)
                recv.append(base)
        return _Buffers(send, recv)


#: At most this many buffer positions an operation cycles through (``buffer_shifts``): nccl-tests moves on at every
#: iteration of its -n (20 by default); a cap keeps the bound calls of a long run few. A choice, not a fit.
MAX_BUFFER_SHIFTS = 256


def buffer_shifts(lay: Layout, big: Layout, iters: int) -> list[tuple[int, int]]:
    """(send, receive) element offsets of the buffer positions successive operations of size ``lay`` use, in the
    buffers allocated for the sweep's largest size ``big``: position k starts k sizes in, as far as both buffers
    hold, at most ``iters`` (and ``MAX_BUFFER_SHIFTS``) positions, the first at 0.

    Why: nccl-tests moves its buffers by one size at each iteration "to avoid cache effects" (2.19.6 common.cu
    startColl, 541-546: shift = size x (iter mod maxbytes / size)). An operation rerun on the same buffers finds
    them in the GPU's L2 cache while they fit (H200: 60 MB): on one H200, in graphs, a one-rank allreduce of 2 MiB
    took 1.7 us on the same buffers and 2.9 us in nccl-tests, 8 MiB 3.4 vs 6.0, and from 32 MiB (no longer
    cache-resident) both the same (docs/runs/h200x1-2026-11-29b call 6)."""
    send, recv = max(lay.send_count, 1), max(lay.recv_count, 1)
    steps = min(max(big.send_count, 1) // send, max(big.recv_count, 1) // recv)
    return [(k * send, k * recv) for k in range(max(1, min(steps, iters, MAX_BUFFER_SHIFTS)))]


def calls(backend: Any, op: str, peers: Sequence[Peer], bufs: _Buffers, lay: Layout, nranks: int) -> list[tuple[str, tuple]]:
    """The library calls of one operation on every local peer, in order: ``(name, args)``, where name is
    the operation, args ``(peer, send, recv, count, root)`` (the descriptor's call: which count, which
    root), or ``send``/``recv`` with ``(peer, view, count, other rank)`` for grouped send/recv (the
    descriptor's exchanges). The views of grouped send/recv are cut here, once per size, not at every launch."""
    spec = OP_TABLE[op]
    call = spec.nccl or fused_call(backend, op)
    out: list[tuple[str, tuple]] = []
    for i, p in enumerate(peers):
        s, r = bufs.send[i], bufs.recv[i]
        if call is not None:
            out.append((op, (p, s, r, getattr(lay, call.count), spec.root)))
        else:
            sends, recvs = spec.exchanges(p.rank, nranks, lay, spec.root or 0)
            out.extend(("send", (p, s[offset:offset + count], count, peer)) for peer, offset, count in sends)
            out.extend(("recv", (p, r[offset:offset + count], count, peer)) for peer, offset, count in recvs)
    return out


def fused_call(backend: Any, op: str) -> LibraryCall | None:
    """The one library call that replaces ``op``'s grouped sends and receives on this backend, None when the op
    has none or the backend's library lacks the symbol (``has_function``; the simulated backend has none, so
    it and the twin keep the exchanges). nccl-tests 2.19.6 makes the same choice (alltoall.cu:317-333)."""
    spec = OP_TABLE[op]
    has = getattr(backend, "has_function", None)
    call = spec.fused_call(library_name(backend)) if spec.nccl is None else None
    return call if call is not None and has is not None and has(call.function) else None


def prepared(backend: Any, op: str, peers: Sequence[Peer], bufs: _Buffers, lay: Layout, nranks: int) -> Callable[[], None]:
    """One operation on every local peer as one NCCL group, bound once: each call is resolved to the
    library's own function and its plain arguments (pointers, counts, stream handles) by the
    backend's ``bind`` where it has one, so a launch costs the library calls and little Python.

    Why: an eager launch is timed as it is issued. Cutting CuPy views and reading ``.data.ptr`` at every
    launch cost 1-3 us a call; a 2-GPU alltoall (4 sends, 4 receives) took 35 us eager from Python
    where nccl-tests took 18 (2 x H200, docs/runs/h200x2-2026-11-28)."""
    return bound_group(backend, calls(backend, op, peers, bufs, lay, nranks))


def bound_group(backend: Any, group_calls: Sequence[tuple[str, tuple]]) -> Callable[[], None]:
    """``group_calls`` (as ``calls`` gives them) as one NCCL group, each call bound once by the backend's ``bind``
    (its library function and plain arguments) where it has one: ``prepared`` and the stencil's exchange."""
    bind = getattr(backend, "bind", None)
    bound = [bind(name, args) if bind is not None else unbound(backend, name, args) for name, args in group_calls]
    start, end = backend.group_start, backend.group_end

    def launch() -> None:
        start()
        try:
            for fn, args in bound:
                fn(*args)
        finally:
            end()
    return launch


def unbound(backend: Any, name: str, args: tuple) -> tuple[Callable[..., Any], tuple]:
    """A call of ``calls`` on a backend without ``bind``: its ``send``/``recv``, or its ``collective``."""
    if name in ("send", "recv"):
        return getattr(backend, name), args
    return backend.collective, (name, *args)


def enqueue(backend: Any, op: str, peers: Sequence[Peer], bufs: _Buffers, lay: Layout, nranks: int) -> None:
    """One operation on every local peer, as one NCCL group (bound for this one call)."""
    prepared(backend, op, peers, bufs, lay, nranks)()


def expected(xp: Any, op: str, rank: int, nranks: int, lay: Layout) -> Any | None:
    """What rank ``rank``'s receive buffer must hold after ``op`` (None: nothing to check), at the
    descriptor's root (0)."""
    spec = OP_TABLE[op]
    return spec.reference(xp, rank, nranks, lay, spec.root or 0)


def check(backend: Any, op: str, peers: Sequence[Peer], bufs: _Buffers, lay: Layout, nranks: int) -> int:
    """Poison, fill, run once, count wrong elements on this process's peers (in place the send
    data is written after the poison, into the part of the buffer it overlaps, as nccl-tests does)."""
    xp = backend.xp
    for i, p in enumerate(peers):
        with backend.on(p):
            bufs.recv[i][:lay.recv_count] = POISON
            bufs.send[i][:lay.send_count] = check_values(xp, p.rank, 0, lay.send_count)
    backend.sync(peers)
    enqueue(backend, op, peers, bufs, lay, nranks)
    backend.sync(peers)
    wrong = 0
    for i, p in enumerate(peers):
        with backend.on(p):
            want = expected(xp, op, p.rank, nranks, lay)
            if want is not None:
                wrong += int(xp.count_nonzero(bufs.recv[i][:lay.recv_count] != want))
    return wrong


#: Back-to-back launches of the captured graph per timed run, at least (nccl-tests' -G 10): with one
#: launch of a 20-op graph, the skew between the GPUs' graph launches (issued one after another from
#: one thread) was spread over 20 operations only: allreduce 8 B read 8.5 us on 2 x H100 where
#: nccl-tests -G 10 read 6.4 (2026-11-25).
MIN_GRAPH_LAUNCHES = 10


def graph_launches(iters: int, per_launch: int) -> int:
    """Launches per timed run: ``iters`` operations, ``per_launch`` to a launch (at least one launch); a captured
    graph (``per_launch`` > 1) is launched at least ``MIN_GRAPH_LAUNCHES`` times, as nccl-tests -G 10 -n 20 times 10
    launches of a 20-op graph."""
    launches = max(1, iters // per_launch)
    return max(launches, MIN_GRAPH_LAUNCHES) if per_launch > 1 else launches


def time_op(backend: Any, peers: Sequence[Peer], launch: Callable[[], None], iters: int,
            repeat: Callable[[int], None] | None = None) -> float:
    """Seconds per operation: events around ``iters`` launches on every peer's stream (max over peers).
    ``repeat(n)``: issues the ``n`` launches itself (the native eager loop) instead of calling ``launch``."""
    backend.sync(peers)
    starts = [backend.record(p) for p in peers]
    if repeat is not None:
        repeat(iters)
    for _ in range(iters if repeat is None else 0):
        launch()
    stops = [backend.record(p) for p in peers]
    backend.sync(peers)
    return max(backend.elapsed_s(a, b) for a, b in zip(starts, stops)) / iters


def run_nccl(
    job: Job,
    backend: Any,
    peers: Sequence[Peer],
    op: str,
    sizes: Sequence[int],
    *,
    iters: int = 20,
    warmup: int = 5,
    runs: int = 1,
    verify: bool = True,
    graph_iters: int = 0,
    inplace: bool = False,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[NcclResult], None] | None = None,
    stop: StopSignal | None = None,
) -> NcclResult | None:
    """Run ``op`` over ``sizes``; rank 0 returns the table (other ranks None).

    ``inplace``: time every size in place too (after the out-of-place run). ``checkpoint`` is
    called on rank 0 after every finished size with the result so far; ``stop`` is checked
    collectively before each size (an agreed stop or a KeyboardInterrupt raises RunInterrupted
    with the finished sizes).
    """
    require(job, op in OP_TABLE, f"unknown NCCL operation {op!r}", f"valid operations: {', '.join(OP_TABLE)}")
    require(job, iters >= 1 and warmup >= 0 and runs >= 1, "iterations and runs must be >= 1, warm-up >= 0")
    require(job, bool(sizes), "no sizes given")
    nranks = nccl_ranks(job, peers)
    require(job, nranks >= 1, "no NCCL ranks")
    big = layout(op, max(sizes), nranks)
    need = (big.send_count + big.recv_count) * 4
    problem = None
    for p in peers:
        free = backend.free_bytes(p)
        if need > 0.95 * free:
            problem = (f"--op {op} at {format_size(max(sizes))} needs {format_size(need)} on GPU {p.device}, "
                       f"only {format_size(free)} is free")
            break
    agree(job, problem)
    devices = peer_devices(job, peers)
    bufs = _Buffers.allocate(backend, peers, big)
    for p, sb in zip(peers, bufs.send):  # every position an operation may read (buffer_shifts) holds data
        with backend.on(p):
            sb[:] = 1.0
    notes: list[str] = [backend.alloc_note] if getattr(backend, "alloc_note", "") else []
    rows: list[NcclRow] = []
    use_graph = graph_iters > 0
    placements = (False, True) if inplace else (False,)
    fused = fused_call(backend, op)
    if fused is not None:
        notes.append(f"{op} is issued as one {fused.function} per rank, as nccl-tests does with this library "
                     "(grouped sends and receives where a library lacks it)")
    if inplace and _unchecked_in_place(op):
        notes.append(f"in-place {op} is timed but not checked (#wrong N/A): NCCL defines no in-place {op}, "
                     "as in nccl-tests")

    def result_so_far() -> NcclResult:
        return NcclResult(op, nranks, tuple(devices), backend.version(), tuple(rows), iters, warmup,
                          simulated=bool(backend.simulated), notes=tuple(dict.fromkeys(notes)))

    try:
        warm_every_size(backend, op, peers, bufs, sizes, nranks)
        for size in boundaries(job, sizes, stop):
            lay = layout(op, size, nranks)
            for in_place in placements:
                view = bufs.views(op, peers, lay, in_place)
                for p, s in zip(peers, view.send):
                    with backend.on(p):
                        s[:lay.send_count] = 1.0
                shifts = [] if backend.simulated else buffer_shifts(lay, big, max(iters, warmup, graph_iters))[1:]
                positions = [bufs.views(op, peers, lay, in_place, shift) for shift in shifts]
                launches = [prepared(backend, op, peers, v, lay, nranks) for v in (view, *positions)]
                launch_one: Callable[[], None] = launches[0]

                def issue(n: int, launches: list[Callable[[], None]] = launches) -> None:
                    for i in range(n):  # position i mod positions, from the first, as nccl-tests' iterations
                        launches[i % len(launches)]()

                native = eager_loop(job, backend, calls(backend, op, peers, view, lay, nranks), notes,
                                    more=[calls(backend, op, peers, v, lay, nranks) for v in positions])
                enqueue_s = native.run_timed(warmup) if native is not None else []
                for i in range(warmup if native is None else 0):
                    t_host = time.perf_counter()
                    launches[i % len(launches)]()
                    enqueue_s.append(time.perf_counter() - t_host)
                launch_us = float(np.median(enqueue_s)) * 1e6 if enqueue_s and not backend.simulated else None
                launch, per_launch, graph_used = launch_one, 1, False
                if use_graph:
                    graph_used, launch, per_launch = try_graph(job, backend, peers, launch_one, graph_iters, notes,
                                                               issue=issue)
                times = []
                for _ in range(runs):
                    job.comm.Barrier()
                    t = time_op(backend, peers, launch, graph_launches(iters, per_launch),
                                None if graph_used else native.run if native is not None else issue) / per_launch
                    t_sum = job.comm.allreduce(t) if job.size > 1 else t
                    times.append(t_sum / job.size)
                moved = moves_data(backend, max(lay.send_count, lay.recv_count))
                if verify and not moved:
                    notes.append(f"simulated: data moves only in buffers up to {format_size(backend.data_limit_bytes)}; "
                                 "larger sizes are timed without data (#wrong N/A)")
                checked = verify and moved and not (in_place and _unchecked_in_place(op))
                wrong = check(backend, op, peers, view, lay, nranks) if checked else None
                if wrong is not None and job.size > 1:
                    wrong = job.comm.allreduce(wrong)
                t_med = float(np.median(times))
                rows.append(NcclRow(op, lay.size_bytes, OP_TABLE[op].reported_count(lay),
                                    t_med * 1e6, *_rates(op, lay.size_bytes, t_med, nranks), wrong,
                                    tuple(t * 1e6 for t in times), graph_used, in_place, launch_us,
                                    "native" if native is not None else "python"))
            if job.rank == 0:
                if checkpoint:
                    checkpoint(result_so_far())
                if progress:
                    progress(f"{op} {format_size(size)}: " + ", ".join(
                        f"{r.time_us:.2f} us{' in place' if r.inplace else ''}" for r in rows[-len(placements):]))
    except KeyboardInterrupt as exc:
        raise interrupted(job, exc, result_so_far) from None
    if job.rank != 0:
        return None
    return result_so_far()


def _rates(op: str, size_bytes: int, time_s: float, nranks: int) -> tuple[float, float]:
    """algbw and busbw (GB/s) of one row: ``size_bytes`` in ``time_s``, with nccl-tests' bus factor."""
    algbw = algbw_gb_per_s(size_bytes, time_s) if size_bytes else 0.0
    return algbw, algbw * busbw_factor(op, nranks)


def merge_sets(results: Sequence[NcclResult], planned: int) -> NcclResult:
    """One result from the runs of ``planned`` communicator sets made one after another (``results``, at least one:
    each finished set's, then the set cut short, if any). A row's time is the median of its sets' medians (``set_times_us``); its
    runs are every set's, set after set; ``#wrong`` adds up over the sets. The host cost of a small eager operation
    drifts in time on the machines measured: steady for ~0.1 s, up to a third apart after a pause of 0.3 s (a bare
    cudaMemcpyAsync or empty kernel too, no NCCL in the loop: docs/runs/h200x1-2026-11-29b); on 2 x H200 ~13 or
    ~19 us per 2-GPU allreduce at 8 B-2 KiB (docs/runs/h200x2-2026-11-28f). Making a set takes ~0.5 s, so each set
    samples another window, as each nccl-tests process does; the sets' spread is in the notes."""
    first = results[0]
    if planned <= 1:
        return first
    keys = list(dict.fromkeys((r.size_bytes, r.inplace) for res in results for r in res.rows))
    rows: list[NcclRow] = []
    widest: tuple[float, int] = (1.0, 0)
    for size, in_place in keys:
        per_set = [row for res in results if (row := res.row(size, in_place)) is not None]
        medians = tuple(row.time_us for row in per_set)
        t_us = float(np.median(medians))
        wrongs = [row.wrong for row in per_set if row.wrong is not None]
        launches = [row.launch_us for row in per_set if row.launch_us is not None]
        base = per_set[0]
        rows.append(NcclRow(base.op, size, base.count, t_us, *_rates(base.op, size, t_us / 1e6, first.ranks),
                            sum(wrongs) if wrongs else None,
                            tuple(t for row in per_set for t in row.runs_time_us), all(row.graph for row in per_set),
                            in_place, float(np.median(launches)) if launches else None, base.launch_path, medians))
        if len(medians) > 1 and min(medians) > 0:
            widest = max(widest, (max(medians) / min(medians), size))
    notes = [*dict.fromkeys(n for res in results for n in res.notes),
             f"timed on {len(results)} of {planned} sets of communicators made one after another (each destroyed before the "
             "next is made); a row is the median of its sets' medians"]
    if widest[0] >= 1.1:
        notes.append(f"the sets' medians differ by up to {widest[0]:.2f}x (at {format_size(widest[1])}): a set draws "
                     "its small-operation launch time when it is made and keeps it (one nccl-tests process is one "
                     "set)")
    return NcclResult(first.op, first.ranks, first.devices_per_rank, first.nccl_version, tuple(rows), first.iters,
                      first.warmup, simulated=first.simulated, notes=tuple(notes))


def run_nccl_sets(job: Job, backend: Any, make: Callable[[], list[Peer]], op: str, sizes: Sequence[int], *,
                  sets: int, checkpoint: Callable[[NcclResult], None] | None = None, stop: StopSignal | None = None,
                  **options: Any) -> NcclResult | None:
    """``run_nccl`` on ``sets`` sets of communicators, each made by ``make`` and destroyed (``backend.destroy``)
    before the next is made; rank 0 returns ``merge_sets`` of them. A checkpoint or an interruption carries every
    finished set and the sizes the current one finished."""
    done: list[NcclResult] = []

    def merged(current: NcclResult | None) -> NcclResult | None:
        results = done + ([current] if current is not None and current.rows else [])
        return merge_sets(results, sets) if results else current  # nothing timed yet: the run's own (empty) result

    for _ in range(sets):
        peers = make()
        try:
            result = run_nccl(job, backend, peers, op, sizes, stop=stop,
                              checkpoint=(lambda part: checkpoint(merged(part) or part)) if checkpoint else None,
                              **options)
        except RunInterrupted as exc:
            raise RunInterrupted(merged(exc.partial) if job.rank == 0 else None, agreed=exc.agreed) from None
        finally:
            backend.destroy(peers)
        if result is not None:
            done.append(result)
    return merged(None) if job.rank == 0 else None


def warm_every_size(backend: Any, op: str, peers: Sequence[Peer], bufs: _Buffers, sizes: Sequence[int],
                    nranks: int) -> None:
    """One operation at every size of the sweep, in order, then a synchronisation: nccl-tests' warm-up pass before
    its first row (2.19.6 src/common.cu TimeTest, 924-931: every size from the smallest to the largest, -w
    operations each), on top of each size's own warm-up. Without it the first size of a sweep on new
    communicators read slow whatever the set drew: 2 x H200, eager sendrecv at 64 B 23.8-26.8 us in all twenty sets
    where the next sizes of the same sets took 13.8-25.0 and nccl-tests 19.0 (median; docs/runs/h200x2-2026-11-28f
    call 4)."""
    for size in sizes:
        lay = layout(op, size, nranks)
        prepared(backend, op, peers, bufs.views(op, peers, lay, False), lay, nranks)()
    backend.sync(peers)


def try_graph(job: Job, backend: Any, peers: Sequence[Peer], launch_one: Callable[[], None], graph_iters: int,
              notes: list[str], issue: Callable[[int], None] | None = None) -> tuple[bool, Callable[[], None], int]:
    """``graph_iters`` calls of ``launch_one`` (or ``issue(graph_iters)``, which issues that many operations itself:
    ``bench nccl``'s moving buffers) captured as one CUDA graph per peer (agreed over the job's ranks): (True, a
    launch of the graphs, graph_iters); where a rank's capture fails, the reason goes to ``notes`` and (False,
    launch_one, 1): eager launches."""
    ok, graphs, error = True, None, ""
    try:
        def body() -> None:
            if issue is not None:
                issue(graph_iters)
                return
            for _ in range(graph_iters):
                launch_one()
        graphs = backend.capture(peers, body)
    except Exception as exc:
        ok, error = False, f"{type(exc).__name__}: {exc}"
    if job.size > 1:
        ok = all(job.comm.allgather(ok))
    if not ok:
        notes.append(f"CUDA graph capture failed, eager launches used ({error or 'on another rank'})")
        backend.sync(peers)
        return False, launch_one, 1
    launch_one_graph = lambda: backend.launch(peers, graphs)  # noqa: E731
    launch_one_graph()  # first graph launch uploads it: untimed
    return True, launch_one_graph, graph_iters
