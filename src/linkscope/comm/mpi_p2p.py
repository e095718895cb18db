"""MPI benchmarks with OSU Micro-Benchmarks semantics (osu_latency, osu_bw, osu_bibw, osu_allreduce).

Ranks are paired ``r <-> r + n/2`` (n even; with n = 2 this is exactly the OSU pair 0 <-> 1; with
more ranks all pairs run at once, as osu_mbw_mr / osu_multi_lat do). The first rank of each pair
owns the first buffer letter of ``--buffers`` (``DH``: rank 0 side on the device, partner on host).

* **latency** (osu_latency): ping-pong; the first rank sends, the partner receives and sends back;
  latency = elapsed / (2 * iterations), in microseconds (half a round trip).
* **bw** (osu_bw): per iteration the first rank posts ``window`` back-to-back sends and waits
  for them all; the partner posts ``window`` receives, waits, and replies with a 4-byte ack (tag 101)
  that the sender receives before the next iteration. Device and host buffers go as ``window``
  persistent requests started together (``_persistent``); staged ones as one ``Isend``/``Irecv`` a
  message. MB/s = size * window * iterations / elapsed / 1e6.
  The ack is osu_bw's: 4 bytes (``OSU_ACK_BYTES``) from the partner's send buffer into the sender's
  receive buffer (osu_bw.c: ``MPI_Send(s_buf, 4, MPI_CHAR, 0, 101, ...)``), so with D buffers it is
  one small device-to-device message per window, as in OSU. Staged runs send the same ack message
  (4 x ``MPI_BYTE``, tag 101) from/into a host buffer: staging hands MPI host memory only.
* **bibw** (osu_bibw): both ranks post ``window`` receives and ``window`` sends (persistent requests,
  as for bw), wait for the sends, then for the receives; bytes count in both directions.

* **allreduce** (osu_allreduce): every rank times each ``MPI_Allreduce`` (``MPI_FLOAT``, ``MPI_SUM``,
  ``size / 4`` elements, separate send and receive buffers) alone, with a barrier after it; its
  latency is the timed sum / iterations, and the value is the average over ranks (OSU's "Avg
  Latency"). All ranks use the first letter's buffer space (``DD``: every rank on its device).
  OSU's collective schedule: 1000 iterations and 200 warm-up, 100 and 10 above 8192 elements.
  Each rank sends the float pattern ``(i mod 4099) * 7 + rank + seed (mod 251)`` and the result
  must be the exact sum over ranks (small integers: float32 is exact).

Warm-up (``skip``) and iteration counts shrink with the message size like OSU's defaults (more,
cheaper iterations for small messages), and for very large messages the window and iterations are
capped so one size moves a bounded number of bytes. Every received buffer is compared with the
sent pattern after the timed loop (``verified``).

CPU-side cost (issue 27; numbers in docs/benchmarks.md, "CPU-side overhead of bench mpi vs OSU"):
``bench mpi`` starts MPI at ``MPI_THREAD_SINGLE`` as OSU's ``MPI_Init`` does (mpi4py would ask for
MULTIPLE, which costs Open MPI locks on every message: 8 B ping-pong 0.57 -> 0.51 us against OSU's
0.25 on the CPU box). The timed loops hand MPI prebuilt ``[MPI.buffer, count, type]`` messages
through bound methods with positional arguments; what is left is mpi4py's own cost per call
(~0.1 us ``Send``, ~0.13 us ``Recv``, ~0.4 us ``Allreduce`` there, against 3-13 ns from C), a floor for
a Python runner. Every unstaged loop hands MPI persistent requests (latency: ``Start``/``Wait`` per
message, in osu_latency's order; bw/bibw: one ``Startall`` per window): with a CUDA-aware MPI they skip
its per-call buffer checks (``_latency_loop`` has the numbers). The messages are OSU's: same count, sizes, tags and order
(tests/comm/test_mpi_p2p.py counts them through the PMPI interposer).

Device buffers go to MPI as ``__cuda_array_interface__`` objects (mpi4py reads them) only when the
MPI is GPU-aware; with ``stage_through_host`` every message is copied device→host before it is
sent and host→device after it arrives (cudaMemcpy around each send/recv), and the method is
labelled ``mpi.<test>+staged``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np

from ..measure.sweep import StopSignal, boundaries, interrupted
from ..units import format_size
from .buffers import BufferSpace, pinned_host
from .launch import Job, agree, require

TESTS = ("latency", "bw", "bibw", "allreduce")
P2P_TESTS = ("latency", "bw", "bibw")
BUFFER_CHOICES = ("HH", "DD", "DH", "HD")
LARGE_MESSAGE_BYTES = 8192  # OSU's LARGE_MESSAGE_SIZE: above it, fewer iterations
STAGING_SLOTS_BYTES = 256 * 1024 * 1024
OSU_ACK_BYTES = 4  # osu_bw's ack: MPI_Send(s_buf, 4, MPI_CHAR, 0, 101, ...) once per window
#: bw/bibw warm up for at least this long (rank 0's clock) before the timed windows of a size, unless
#: a warm-up count is given (``Schedule.warmup``, ``--warmup``: then exactly that many windows). OSU's
#: skip count (2 windows above 8 KiB) assumes a sweep from 1 B, so the link is busy by the large sizes;
#: a short sweep starting at 64 MiB read 0.83-0.91x of OSU after 1 window (2 x H100, 2026-11-25), and
#: 1.00x after 22 windows or after a 16 MiB size (about 60 ms of traffic).
WARMUP_MIN_S = 0.1
WARMUP_MAX_BATCHES = 1000
#: bw/bibw time at most about this long per size and run unless ``--iterations`` is given: after the
#: warm-up, rank 0 cuts OSU's iteration count to what fits at the warm-up's pace (at least
#: MIN_TIMED_ITERS). OSU's 20 windows of 64 x 64 MiB take 0.22 s over NV18 but ~17 s host-staged.
MAX_TIMED_S = 1.0
MIN_TIMED_ITERS = 2


@dataclass(frozen=True)
class Schedule:
    """Warm-up and iterations per size (OSU defaults), window, and a cap on bytes per size.

    Attributes:
        latency_iters, latency_skip: small messages (<= 8 KiB); ``*_large`` above it.
        bw_iters, bw_skip: osu_bw/osu_bibw small messages; ``*_large`` above 8 KiB.
        allreduce_iters, allreduce_skip: osu_allreduce up to 8192 elements; ``*_large`` above.
        window: back-to-back messages per bw iteration (OSU: 64).
        max_bytes_per_size: cap on bytes one size moves (window and iterations shrink to fit).
        iterations, warmup: fixed overrides for every size (None: scaled by size).
    """

    allreduce_iters: int = 1000
    allreduce_skip: int = 200
    allreduce_iters_large: int = 100
    allreduce_skip_large: int = 10
    latency_iters: int = 10000
    latency_skip: int = 100
    latency_iters_large: int = 1000
    latency_skip_large: int = 10
    bw_iters: int = 100
    bw_skip: int = 10
    bw_iters_large: int = 20
    bw_skip_large: int = 2
    window: int = 64
    #: OSU's own bytes at 64 MiB (20 iterations x 64 x 64 MiB): with 8 GiB, 64 MiB got 2 timed windows and
    #: read 0.90x (bw) and 0.83x (bibw) of OSU on 2 x H100; with OSU's 20 it read 0.995x and 1.000x.
    max_bytes_per_size: int = 80 * 1024**3
    iterations: int | None = None
    warmup: int | None = None

    def plan(self, test: str, size_bytes: int) -> tuple[int, int, int]:
        """(iterations, warm-up, window) for one size."""
        large = size_bytes > LARGE_MESSAGE_BYTES
        if test == "allreduce":  # OSU's collectives: "large" counts elements, not bytes
            large = size_bytes // 4 > LARGE_MESSAGE_BYTES
            iters = self.allreduce_iters_large if large else self.allreduce_iters
            skip = self.allreduce_skip_large if large else self.allreduce_skip
            window = 1
            per_iter = 2 * max(size_bytes, 1)
        elif test == "latency":
            iters = self.latency_iters_large if large else self.latency_iters
            skip = self.latency_skip_large if large else self.latency_skip
            window = 1
            per_iter = 2 * max(size_bytes, 1)
        else:
            iters = self.bw_iters_large if large else self.bw_iters
            skip = self.bw_skip_large if large else self.bw_skip
            window = max(1, min(self.window, self.max_bytes_per_size // max(size_bytes, 1)))
            per_iter = window * max(size_bytes, 1) * (2 if test == "bibw" else 1)
        if self.iterations is None:
            fit = max(1, self.max_bytes_per_size // per_iter)
            if fit < iters:
                iters = max(2, fit)
                skip = min(skip, max(1, iters // 4))
        else:
            iters = self.iterations
        if self.warmup is not None:
            skip = self.warmup
        return iters, skip, window


@dataclass(frozen=True)
class PairResult:
    """One pair at one size.

    Attributes:
        first, second: the pair's ranks (first owns the first buffer letter and sends first).
        size_bytes: message size.
        value: latency in µs (latency) or bandwidth in MB/s (bw, bibw; 1 MB = 1e6 B, OSU's unit).
        runs: the value of every timed run (``runs`` option); ``value`` is their median.
        iterations, warmup, window: what was timed.
        wrong_bytes: received bytes that differed from the pattern (both sides summed), or None.
    """

    first: int
    second: int
    size_bytes: int
    value: float
    runs: tuple[float, ...]
    iterations: int
    warmup: int
    window: int
    wrong_bytes: int | None


@dataclass(frozen=True)
class OsuResult:
    """Everything one ``bench mpi`` run measured (gathered on rank 0; other ranks get None)."""

    test: str
    buffers: str
    staged: bool
    pairs: tuple[tuple[int, int], ...]
    rows: tuple[PairResult, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def method(self) -> str:
        return f"mpi.{self.test}" + ("+staged" if self.staged else "")

    @property
    def is_latency(self) -> bool:
        """Values are microseconds (latency, allreduce), not MB/s."""
        return self.test in ("latency", "allreduce")

    def per_size(self) -> list[tuple[int, float, bool]]:
        """OSU table rows: (size, aggregate value, all verified). bw sums pairs; latency averages."""
        out = []
        for size in sorted({r.size_bytes for r in self.rows}):
            rows = [r for r in self.rows if r.size_bytes == size]
            values = [r.value for r in rows]
            agg = float(np.mean(values)) if self.is_latency else float(np.sum(values))
            out.append((size, agg, all(r.wrong_bytes == 0 for r in rows if r.wrong_bytes is not None)))
        return out


class _Side:
    """One rank's buffers for one test: what MPI sends from / receives into, with staging."""

    def __init__(self, space: BufferSpace, max_bytes: int, staged: bool, window: int, need_send: bool, need_recv: bool):
        self.space = space
        self.staged = staged and space.kind == "D"
        self.send = space.alloc(max_bytes) if need_send else None
        self.recv = space.alloc(max_bytes) if need_recv else None
        self.slots: list[np.ndarray] = []
        self.host_recv: np.ndarray | None = None
        if self.staged:
            nslots = max(1, min(window, STAGING_SLOTS_BYTES // max(max_bytes, 1)))
            if need_send:
                self.slots = [pinned_host(max_bytes, space) for _ in range(nslots)]
            if need_recv:
                self.host_recv = pinned_host(max_bytes, space)

    def send_obj(self, size: int, slot: int = 0) -> Any:
        """Buffer MPI sends from; staged: copy the device buffer into a host slot first."""
        if self.staged:
            host = self.slots[slot % len(self.slots)]
            self.space.to_host(self.send, host, size)
            return host[:size]
        return self.space.view(self.send, size)

    def recv_obj(self, size: int) -> Any:
        if self.staged:
            assert self.host_recv is not None  # a staged side has its host buffer
            return self.host_recv[:size]
        return self.space.view(self.recv, size)

    def after_recv(self, size: int) -> None:
        """Staged: copy what arrived in host memory to the device buffer."""
        if self.staged:
            assert self.host_recv is not None  # a staged side has its host buffer
            self.space.from_host(self.host_recv, self.recv, size)


def required_bytes(test: str, max_size: int) -> int:
    """Bytes each rank allocates in its buffer space (send + receive)."""
    return 2 * max_size if test in ("latency", "bibw", "allreduce") else max_size


def run_osu(
    job: Job,
    test: str,
    sizes: Sequence[int],
    buffers: str,
    spaces: tuple[BufferSpace, BufferSpace],
    *,
    schedule: Schedule = Schedule(),
    staged: bool = False,
    verify: bool = True,
    runs: int = 1,
    clock: Callable[[], float] | None = None,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[OsuResult], None] | None = None,
    stop: StopSignal | None = None,
) -> OsuResult | None:
    """Run one OSU test over ``sizes`` on every pair of the job; rank 0 returns the result.

    ``spaces`` are the buffer spaces of the first and second rank of a pair (from ``--buffers``);
    each rank only allocates in its own. Checks every rank would fail alike (odd world size)
    raise CollectiveError on all ranks; memory shortfalls on any rank are agreed collectively.

    ``checkpoint(partial)`` is called on rank 0 after every finished size with the result so far.
    ``stop`` is checked collectively before each size; an agreed stop, or a KeyboardInterrupt,
    raises ``RunInterrupted`` carrying rank 0's finished sizes.
    """
    from mpi4py import MPI

    require(job, test in TESTS, f"unknown test {test!r}", f"valid tests: {', '.join(TESTS)}")
    require(job, buffers in BUFFER_CHOICES, f"--buffers {buffers!r} is not valid",
            f"valid choices: {', '.join(BUFFER_CHOICES)} (first letter: the first rank of each pair)")
    collective = test == "allreduce"
    if collective:
        require(job, job.size >= 2, f"bench mpi --test allreduce needs at least 2 ranks, got {job.size}",
                "run with mpirun -n 2 (or more)")
        require(job, buffers in ("HH", "DD"), f"--test allreduce runs on one kind of buffer, got --buffers {buffers}",
                "use --buffers HH or DD")
        require(job, all(s >= 4 for s in sizes), "--test allreduce sums float32 elements: sizes must be >= 4 B",
                "start the sizes at 4 (OSU's smallest allreduce)")
    else:
        require(job, job.size >= 2 and job.size % 2 == 0,
                f"bench mpi --test {test} pairs rank r with rank r + n/2 and needs an even number of ranks >= 2, "
                f"got {job.size}", "run with mpirun -n 2 (or any even count)")
    require(job, bool(sizes), "no message sizes given")
    require(job, runs >= 1, f"--runs must be >= 1, got {runs}")
    clock = clock or MPI.Wtime
    comm = job.comm
    half = job.size // 2
    first = job.rank < half or collective
    partner = job.rank + half if job.rank < half else job.rank - half
    space = spaces[0] if first else spaces[1]
    max_size = max(sizes)

    need = required_bytes(test, max_size)
    free = space.free_bytes()
    problem = None
    if need > free:
        problem = (f"messages up to {format_size(max_size)} need {format_size(need)} of {space.name} memory "
                   f"for --test {test}, only {format_size(free)} is free")
    agree(job, problem)

    window_max = max(schedule.plan(test, s)[2] for s in sizes)
    # bw acks through the benchmark's own buffers (as osu_bw does): they hold at least the 4-byte ack
    side = _Side(space, max(max_size, OSU_ACK_BYTES) if test == "bw" else max_size, staged, window_max,
                 need_send=True, need_recv=True)
    ack = np.zeros(OSU_ACK_BYTES, dtype=np.uint8)
    rows: list[PairResult] = []
    pairs = ((0, job.size - 1),) if collective else tuple((a, a + half) for a in range(half))

    def result_so_far() -> OsuResult:
        return OsuResult(test, buffers, staged and "D" in buffers, pairs, tuple(rows))

    try:
        for size in boundaries(job, sizes, stop):
            iters, skip, window = schedule.plan(test, size)
            seed = size % 251
            if collective:
                size = 4 * (size // 4)
                expected = _fill_allreduce(space, side, size, seed, job.rank, job.size)
            else:
                space.fill(side.send, size, seed)
            space.poison(side.recv, size)
            values = []
            counts: list[tuple[int, int]] = []  # bw/bibw: (warm-up, timed) windows of each run
            warm_s = WARMUP_MIN_S if schedule.warmup is None else 0.0  # bw/bibw: by time unless --warmup
            cap_s = MAX_TIMED_S if schedule.iterations is None else 0.0  # ... and capped unless --iterations
            for _ in range(runs):
                comm.Barrier()
                if collective:
                    elapsed = _allreduce_loop(comm, side, size, iters, skip, clock)
                    value = elapsed * 1e6 / iters
                elif test == "latency":
                    elapsed = _latency_loop(comm, side, size, iters, skip, first, partner, clock)
                    value = elapsed * 1e6 / (2.0 * iters)
                elif test == "bw":
                    elapsed = _bw_loop(comm, side, size, iters, skip, window, first, partner, ack, clock, warm_s, counts, cap_s)
                    timed = counts[-1][1] if counts else iters
                    value = size / 1e6 * timed * window / elapsed if elapsed > 0 else 0.0
                else:
                    elapsed = _bibw_loop(comm, side, size, iters, skip, window, partner, clock, warm_s, counts, cap_s)
                    timed = counts[-1][1] if counts else iters
                    value = 2.0 * size / 1e6 * timed * window / elapsed if elapsed > 0 else 0.0
                values.append(value)
            receives = test != "bw" or not first
            if collective:
                wrong = _allreduce_wrong_bytes(space, side, size, expected) if verify else None
            else:
                wrong = space.wrong_bytes(side.recv, size, seed) if (verify and receives) else (0 if verify else None)
            mine = (job.rank, values, wrong) if first else (job.rank, None, wrong)
            gathered = comm.gather(mine, root=0)
            if job.rank == 0 and collective:  # OSU's Avg Latency: the mean over ranks, per run
                per_run = [float(np.mean([v[i] for _, v, _ in gathered])) for i in range(runs)]
                wrongs = [w for _, _, w in gathered]
                rows.append(PairResult(0, job.size - 1, size, float(np.median(per_run)), tuple(per_run), iters, skip, 1,
                                       None if None in wrongs else int(sum(wrongs))))
            elif job.rank == 0:
                by_rank = {r: (v, w) for r, v, w in gathered}
                for a in range(half):
                    b = a + half
                    vals, wa = by_rank[a]
                    _, wb = by_rank[b]
                    wrong_total = None if (wa is None or wb is None) else wa + wb
                    rows.append(PairResult(a, b, size, float(np.median(vals)), tuple(vals),
                                           max(c[1] for c in counts) if counts else iters,
                                           max(c[0] for c in counts) if counts else skip, window,
                                           wrong_total))
            if job.rank == 0:
                if checkpoint:
                    checkpoint(result_so_far())
                if progress:
                    progress(f"{test} {format_size(size)} done")
    except KeyboardInterrupt as exc:
        raise interrupted(job, exc, result_so_far) from None
    comm.Barrier()
    if job.rank != 0:
        return None
    return result_so_far()


def _msg(buf: Any, size: int) -> list[Any]:
    """An explicit mpi4py message ``[buffer, count, MPI.BYTE]`` (host, CAI or DLPack buffer)."""
    from mpi4py import MPI

    return [buf, size, MPI.BYTE]


def _fixed_msg(buf: Any, size: int) -> list[Any]:
    """A message reused for every call of a timed loop, over the buffer's raw address.

    A device array handed to mpi4py is read through ``__cuda_array_interface__`` on every call
    (CuPy builds the dict, mpi4py parses it): microseconds per message, as long as a whole 1 MiB
    message takes over CUDA IPC. OSU passes the raw pointer; so does this (``MPI.buffer.fromaddress``,
    read once per size). Host arrays are wrapped once in an ``MPI.buffer`` too: mpi4py then skips
    asking numpy for a buffer view on every call (an 8 B ``Allreduce`` on COMM_SELF: 455 -> 396 ns of
    CPU per call on the CPU box; point-to-point calls are level either way).
    """
    from mpi4py import MPI

    cai = getattr(buf, "__cuda_array_interface__", None)
    if cai is not None:
        buf = MPI.buffer.fromaddress(int(cai["data"][0]), size)
    elif not isinstance(buf, MPI.buffer):
        buf = MPI.buffer(buf)
    return [buf, size, MPI.BYTE]


def _latency_loop(comm: Any, side: _Side, size: int, iters: int, skip: int, first: bool, partner: int,
                  clock: Callable[[], float]) -> float:
    """osu_latency's loop: a send then a receive (tag 1) on the first rank, the reverse on the partner.

    Unstaged, each is a persistent request (``Send_init`` / ``Recv_init`` once per size, then ``Start``
    and ``Wait``), in osu_latency's order: the send completes before the receive is started, as
    ``MPI_Send`` returns before ``MPI_Recv`` is called; MPI moves the same message each way. Measured
    on 2 x H100 with the CUDA-aware Open MPI 4.1.4 (docs/runs/scripts/mpi_overhead/pingpong.py, 8 B, min over 20
    rounds, 2026-11-25): host buffers 0.78-0.79 us a half round trip against 1.18-1.22 for blocking
    ``Send``/``Recv`` (C: 0.61-0.66), device buffers 9.84-10.63 against 10.80-11.84 (C: 9.99-10.71):
    a persistent request does the CUDA-aware library's per-call work (buffer checks, convertor set-up)
    once. On the CPU box's Open MPI without CUDA the blocking calls were 0.08 us cheaper (0.48-0.50
    against 0.56-0.59): the loop is for the GPU machines.
    """
    send, recv = comm.Send, comm.Recv
    if not side.staged:
        # Fast path (like mpi4py.bench): messages and bound methods prepared once as explicit
        # [buffer, count, MPI.BYTE] messages (as OSU passes MPI_CHAR), and warm-up and timed
        # iterations in separate loops with no per-iteration test.
        sreq = comm.Send_init(_fixed_msg(side.send_obj(size), size), partner, 1)
        rreq = comm.Recv_init(_fixed_msg(side.recv_obj(size), size), partner, 1)
        ss, sw, rs, rw = sreq.Start, sreq.Wait, rreq.Start, rreq.Wait

        def loop(n: int) -> None:
            if first:
                for _ in repeat(None, n):
                    ss()
                    sw()
                    rs()
                    rw()
            else:
                for _ in repeat(None, n):
                    rs()
                    rw()
                    ss()
                    sw()

        try:
            loop(skip)
            t0 = clock()
            loop(iters)
            return clock() - t0
        finally:
            _free([sreq, rreq])
    t0 = 0.0
    for i in range(iters + skip):
        if i == skip:
            t0 = clock()
        if first:
            send(side.send_obj(size), partner, 1)
            recv(side.recv_obj(size), partner, 1)
            side.after_recv(size)
        else:
            recv(side.recv_obj(size), partner, 1)
            side.after_recv(size)
            send(side.send_obj(size), partner, 1)
    return clock() - t0


def _warm(comm: Any, one: Callable[[], None], skip: int, warm_s: float, clock: Callable[[], float]) -> tuple[int, float]:
    """Warm-up iterations of a timed loop, with the loop's own requests: ``skip`` of them, then more
    until rank 0 has spent ``warm_s`` in those after the first (each rank runs as many: rank 0 decides by
    broadcast); returns how many ran and the pace, seconds an iteration after the first (the first's
    own time when it ran alone). Fresh persistent requests run slower in their first windows (bw DD at
    64 MiB, 2 timed windows: 345 against OSU's 385 GB/s on 2 x H100, also after a separate 0.1 s
    warm-up with other requests; 383 with 20 windows), so the warm-up uses the timed requests. The
    first window is left out of the time and the pace: it opens the peer's buffers (CUDA IPC), and
    counted in, it ended the warm-up of a run's first size after 2 windows and cut its timed windows to
    7-9 of OSU's 20 (bw DD at 16 MiB, visits 11-12 on 2 x H100)."""
    if skip <= 0 and warm_s <= 0:
        return 0, 0.0
    t_first = clock()
    one()
    t_start, n = clock(), 1
    for _ in range(skip - 1):
        one()
        n += 1
    while warm_s > 0 and not comm.bcast(clock() - t_start >= warm_s or n >= WARMUP_MAX_BATCHES, root=0):
        one()
        n += 1
    return n, (clock() - t_start) / (n - 1) if n > 1 else t_start - t_first


def _warm_then_time(comm: Any, one: Callable[[], None], iters: int, skip: int, warm_s: float,
                    clock: Callable[[], float], counts: list[tuple[int, int]] | None, cap_s: float = 0.0) -> float:
    """``_warm``, then the timed iterations of ``one``; seconds. ``iters`` of them, or with ``cap_s`` > 0 as
    many as fit in ``cap_s`` at the warm-up's pace (rank 0 decides for every rank; at least MIN_TIMED_ITERS).
    ``counts`` gets (warm-up iterations, timed iterations)."""
    n, pace_s = _warm(comm, one, skip, warm_s, clock)
    if cap_s > 0 and n > 0:
        fit = int(cap_s / pace_s) if pace_s > 0 else iters
        iters = comm.bcast(max(MIN_TIMED_ITERS, min(iters, fit)), root=0)
    if counts is not None:
        counts.append((n, iters))
    t0 = clock()
    for _ in repeat(None, iters):
        one()
    return clock() - t0


def _persistent(comm: Any, message: list[Any], partner: int, tag: int, window: int, *, send: bool) -> list[Any]:
    """``window`` persistent requests over one message (MPI_Send_init / MPI_Recv_init), started together
    by ``MPI.Prequest.Startall`` each iteration: the transfers are MPI's own (ob1 starts a persistent
    request as it starts an Isend), and the loop pays one Python call per window instead of one per
    message. With one Isend per message, bibw on 2 x H100 over CUDA IPC read 0.62x of osu_bibw at
    64 KiB and 1 MiB (2026-11-25): MPI progress waited on the interpreter between messages."""
    make = comm.Send_init if send else comm.Recv_init
    return [make(message, partner, tag) for _ in range(window)]


def _free(requests: list[Any]) -> None:
    for r in requests:
        r.Free()


def _bw_loop(comm: Any, side: _Side, size: int, iters: int, skip: int, window: int, first: bool, partner: int,
             ack: np.ndarray, clock: Callable[[], float], warm_s: float = 0.0,
             counts: list[tuple[int, int]] | None = None, cap_s: float = 0.0) -> float:
    from mpi4py import MPI

    t0 = 0.0
    if not side.staged:
        msg = _fixed_msg(side.send_obj(size) if first else side.recv_obj(size), size)
        reqs = _persistent(comm, msg, partner, 100, window, send=first)
        start, waitall = MPI.Prequest.Startall, MPI.Request.Waitall
        # osu_bw's ack: the sender receives it into its receive buffer, the partner sends it from its
        # send buffer (device memory with D buffers, as in OSU); one prebuilt message, positional args
        reply = comm.Recv if first else comm.Send
        ack_msg = _fixed_msg(side.recv_obj(OSU_ACK_BYTES) if first else side.send_obj(OSU_ACK_BYTES), OSU_ACK_BYTES)
        def window_and_ack() -> None:
            start(reqs)
            waitall(reqs)
            reply(ack_msg, partner, 101)

        try:
            return _warm_then_time(comm, window_and_ack, iters, skip, warm_s, clock, counts, cap_s)
        finally:
            _free(reqs)
    recv = _msg(side.recv_obj(size), size)
    # the ack the unstaged path sends (OSU_ACK_BYTES x MPI.BYTE, tag 101), from/into host memory: a bare
    # uint8 array would go as MPI_UNSIGNED_CHAR, which an MPI_BYTE send from an unstaged partner (HD, DH)
    # does not match (MPI 3.1 section 3.3.1: the send's and the receive's type names must be identical)
    ack_msg = _msg(ack, OSU_ACK_BYTES)
    for i in range(iters + skip):
        if i == skip:
            t0 = clock()
        if first:
            requests: list[Any] = []
            nslots = len(side.slots)
            for j in range(window):
                if j >= nslots:
                    requests[j - nslots].Wait()  # the slot is reused: its send must be complete
                requests.append(comm.Isend(_msg(side.send_obj(size, slot=j), size), dest=partner, tag=100))
            MPI.Request.Waitall(requests)
            comm.Recv(ack_msg, partner, 101)
        else:
            requests = [comm.Irecv(recv, source=partner, tag=100) for _ in range(window)]
            MPI.Request.Waitall(requests)
            for _ in range(window):
                side.after_recv(size)
            comm.Send(ack_msg, partner, 101)
    return clock() - t0


def _bibw_loop(comm: Any, side: _Side, size: int, iters: int, skip: int, window: int, partner: int,
               clock: Callable[[], float], warm_s: float = 0.0, counts: list[tuple[int, int]] | None = None,
               cap_s: float = 0.0) -> float:
    from mpi4py import MPI

    t0 = 0.0
    if not side.staged:
        rreqs = _persistent(comm, _fixed_msg(side.recv_obj(size), size), partner, 10, window, send=False)
        sreqs = _persistent(comm, _fixed_msg(side.send_obj(size), size), partner, 10, window, send=True)
        start, waitall = MPI.Prequest.Startall, MPI.Request.Waitall

        def both_windows() -> None:
            start(rreqs)
            start(sreqs)
            # osu_bibw's order: wait for all sends, then for all receives (osu_bibw.c)
            waitall(sreqs)
            waitall(rreqs)

        try:
            return _warm_then_time(comm, both_windows, iters, skip, warm_s, clock, counts, cap_s)
        finally:
            _free(sreqs + rreqs)
    recv = _msg(side.recv_obj(size), size)
    for i in range(iters + skip):
        if i == skip:
            t0 = clock()
        requests = [comm.Irecv(recv, source=partner, tag=10) for _ in range(window)]
        nslots = len(side.slots)
        sends: list[Any] = []
        for j in range(window):
            if j >= nslots:
                sends[j - nslots].Wait()
            sends.append(comm.Isend(_msg(side.send_obj(size, slot=j), size), dest=partner, tag=10))
        MPI.Request.Waitall(sends)
        MPI.Request.Waitall(requests)
        for _ in range(window):
            side.after_recv(size)
    return clock() - t0


def _allreduce_pattern(count: int, seed: int, rank: int) -> np.ndarray:
    """Rank ``rank``'s float32 send values: small integers, so any order of summation is exact."""
    return ((np.arange(count, dtype=np.int64) % 4099 * 7 + rank + seed) % 251).astype(np.float32)


def _fill_allreduce(space: BufferSpace, side: _Side, size: int, seed: int, rank: int, ranks: int) -> np.ndarray:
    """Write this rank's float pattern into its send buffer; return the expected sum as bytes."""
    count = size // 4
    space.from_host(_allreduce_pattern(count, seed, rank).view(np.uint8), side.send, size)
    expected = np.zeros(count, dtype=np.float32)
    for other in range(ranks):
        expected += _allreduce_pattern(count, seed, other)
    return expected.view(np.uint8)


def _allreduce_wrong_bytes(space: BufferSpace, side: _Side, size: int, expected: np.ndarray) -> int:
    got = np.empty(size, dtype=np.uint8)
    space.to_host(side.recv, got, size)
    return int(np.count_nonzero(got != expected))


def _allreduce_loop(comm: Any, side: _Side, size: int, iters: int, skip: int, clock: Callable[[], float]) -> float:
    """osu_allreduce's loop: each Allreduce timed alone, a barrier after it, warm-up not counted."""
    from mpi4py import MPI

    count = size // 4
    allreduce, barrier, total, op = comm.Allreduce, comm.Barrier, 0.0, MPI.SUM
    if not side.staged:
        # prebuilt messages and a bound op: between the two clock reads only the Allreduce call
        sbuf = [_fixed_msg(side.send_obj(size), size)[0], count, MPI.FLOAT]
        rbuf = [_fixed_msg(side.recv_obj(size), size)[0], count, MPI.FLOAT]
        for i in range(iters + skip):
            t0 = clock()
            allreduce(sbuf, rbuf, op)
            t1 = clock()
            if i >= skip:
                total += t1 - t0
            barrier()
        return total
    for i in range(iters + skip):
        t0 = clock()
        allreduce([side.send_obj(size), count, MPI.FLOAT], [side.recv_obj(size), count, MPI.FLOAT], MPI.SUM)
        side.after_recv(size)
        t1 = clock()
        if i >= skip:
            total += t1 - t0
        barrier()
    return total
