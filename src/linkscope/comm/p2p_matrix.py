"""Every rank pair of the job, one pair at a time (others idle), into one bandwidth matrix.

``linkscope bench p2p --mpi`` under mpirun/srun, across any number of hosts: for each ordered pair
(i, j), i ≠ j, all ranks meet at a barrier, then rank i sends ``iters`` messages of each size to
rank j while every other rank waits. GPU ranks use NCCL ``ncclSend``/``ncclRecv`` on the job's
communicator (timed with CUDA events on both ends; the pair's time is the slower end's);
``--buffers H`` uses MPI on host buffers with the osu_bw window and ack. The matrix (GB/s per
direction, row = sender) is what ``linkscope map --results`` turns into a cost for a cluster.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..measure.sweep import StopSignal, boundaries, interrupted
from ..units import format_size
from .buffers import BufferSpace
from .launch import Job, agree, require
from .mpi_p2p import Schedule, _bw_loop, _Side
from .nccl import nccl_ranks, peer_devices, time_op
from .nccl_backend import Peer, moves_data


@dataclass(frozen=True)
class PairCell:
    src: int
    dst: int
    size_bytes: int
    gb_per_s: float
    time_us: float
    wrong: int | None


@dataclass(frozen=True)
class P2PMatrix:
    ranks: int
    transport: str  # "nccl" or "mpi"
    cells: tuple[PairCell, ...]
    devices: tuple[Any, ...]
    simulated: bool = False

    def matrix(self, size_bytes: int) -> list[list[float | None]]:
        out: list[list[float | None]] = [[None] * self.ranks for _ in range(self.ranks)]
        for c in self.cells:
            if c.size_bytes == size_bytes:
                out[c.src][c.dst] = c.gb_per_s
        return out


def _pairs(n: int) -> list[tuple[int, int]]:
    return [(i, j) for i in range(n) for j in range(n) if i != j]


def _cells(n: int, sizes: Sequence[int]) -> list[tuple[int, int, int]]:
    """(src, dst, size) in run order: each ordered pair, every size."""
    return [(i, j, size) for i, j in _pairs(n) for size in sizes]


def _sweep(
    job: Job,
    nranks: int,
    sizes: Sequence[int],
    measure: Callable[[int, int, int], PairCell],
    make: Callable[[tuple[PairCell, ...]], P2PMatrix],
    progress: Callable[[str], None] | None,
    checkpoint: Callable[[P2PMatrix], None] | None,
    stop: StopSignal | None,
) -> P2PMatrix | None:
    """``measure`` every (src, dst, size) cell in run order; rank 0 checkpoints after every cell,
    reports each finished pair and returns the matrix (other ranks None). An agreed stop or a
    KeyboardInterrupt raises RunInterrupted with the finished cells."""
    cells: list[PairCell] = []

    def result_so_far() -> P2PMatrix:
        return make(tuple(cells))

    try:
        for src, dst, size in boundaries(job, _cells(nranks, sizes), stop):
            cells.append(measure(src, dst, size))
            if job.rank == 0:
                if checkpoint:
                    checkpoint(result_so_far())
                if progress and size == sizes[-1]:
                    progress(f"p2p {src}->{dst} done")
    except KeyboardInterrupt as exc:
        raise interrupted(job, exc, result_so_far) from None
    if job.rank != 0:
        return None
    return result_so_far()


def warm_every_pair(job: Job, nranks: int, warm: Callable[[int, int], None]) -> None:
    """Before anything is timed, exchange one small message on every ordered pair, one pair at a
    time: a transport connects a pair lazily at its first message (NCCL's p2p channels, UCX's
    wire-up), and that setup must not land in the first pair's timing. On 2 x H100 the first pair
    read 0->1 at 1 MiB as 15.1 GB/s and 1->0 as 36.6 before this (issue 25)."""
    for src, dst in _pairs(nranks):
        job.comm.Barrier()
        warm(src, dst)
    job.comm.Barrier()


def _pattern(xp: Any, src: int, count: int) -> Any:
    """What ``src`` sends (and its receiver must hold): ``(i mod 509) + src`` in float32."""
    return (xp.arange(count, dtype=xp.int64) % 509 + src).astype(xp.float32)


def run_p2p_nccl(
    job: Job,
    backend: Any,
    peers: Sequence[Peer],
    sizes: Sequence[int],
    *,
    iters: int = 20,
    warmup: int = 5,
    verify: bool = True,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[P2PMatrix], None] | None = None,
    stop: StopSignal | None = None,
) -> P2PMatrix | None:
    """NCCL send/recv for every ordered pair. ``peers``: the NCCL ranks this process drives (one
    per MPI rank; several in a single process). ``checkpoint`` (rank 0, after every cell) and
    ``stop`` (checked collectively before every cell) as in ``run_nccl``."""
    nranks = nccl_ranks(job, peers)
    require(job, nranks >= 2, f"bench p2p needs at least 2 ranks, got {nranks}", "run under mpirun -n 2 or more")
    require(job, bool(sizes) and iters >= 1, "need sizes and iterations >= 1")
    max_count = max(1, max(sizes) // 4)
    problem = None
    for p in peers:
        if 2 * max_count * 4 > 0.95 * backend.free_bytes(p):
            problem = f"messages of {format_size(max(sizes))} do not fit on GPU {p.device}"
    agree(job, problem)
    devices = tuple(peer_devices(job, peers))
    local = {p.rank: p for p in peers}
    send = {r: backend.alloc(p, max_count) for r, p in local.items()}
    recv = {r: backend.alloc(p, max_count) for r, p in local.items()}
    xp = backend.xp

    def pair_launch(src: int, dst: int, count: int) -> Callable[[], None]:
        def launch() -> None:
            backend.group_start()
            try:
                if src in local:
                    backend.send(local[src], send[src][:count], count, dst)
                if dst in local:
                    backend.recv(local[dst], recv[dst][:count], count, src)
            finally:
                backend.group_end()
        return launch

    def warm(src: int, dst: int) -> None:
        """One 4-byte send/recv on the pair: NCCL connects a pair's channels at its first send/recv."""
        involved = [local[r] for r in (src, dst) if r in local]
        if involved:
            pair_launch(src, dst, 1)()
            backend.sync(involved)

    warm_every_pair(job, nranks, warm)

    def measure(src: int, dst: int, size: int) -> PairCell:
        count = max(1, size // 4)
        launch = pair_launch(src, dst, count)
        involved = [local[r] for r in (src, dst) if r in local]
        if src in local:
            with backend.on(local[src]):
                send[src][:count] = _pattern(xp, src, count)
        if dst in local:
            with backend.on(local[dst]):
                recv[dst][:count] = -1.0
        job.comm.Barrier()
        if involved:
            for _ in range(warmup):
                launch()
            backend.sync(involved)
        job.comm.Barrier()  # both ends warmed up: the timed part starts together on both
        t = 0.0
        if involved:
            t = time_op(backend, involved, launch, iters)
        wrong = None
        if verify and dst in local and moves_data(backend, count):
            with backend.on(local[dst]):
                wrong = int(xp.count_nonzero(recv[dst][:count] != _pattern(xp, src, count)))
        if job.size > 1:
            t = max(job.comm.allgather(t))
            wrongs = [w for w in job.comm.allgather(wrong) if w is not None]
            wrong = sum(wrongs) if wrongs else None
        return PairCell(src, dst, count * 4, count * 4 / t / 1e9 if t > 0 else 0.0, t * 1e6, wrong)

    return _sweep(job, nranks, sizes, measure,
                  lambda cells: P2PMatrix(nranks, "nccl", cells, devices, bool(backend.simulated)),
                  progress, checkpoint, stop)


def run_p2p_mpi(
    job: Job,
    space: BufferSpace,
    sizes: Sequence[int],
    *,
    schedule: Schedule = Schedule(),
    verify: bool = True,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[P2PMatrix], None] | None = None,
    stop: StopSignal | None = None,
) -> P2PMatrix | None:
    """MPI host-buffer bandwidth (osu_bw window + ack) for every ordered rank pair
    (``checkpoint`` and ``stop`` as in ``run_p2p_nccl``)."""
    from mpi4py import MPI

    require(job, job.size >= 2, f"bench p2p --mpi needs at least 2 ranks, got {job.size}",
            "run under mpirun -n 2 or more")
    require(job, bool(sizes), "no sizes given")
    max_size = max(sizes)
    agree(job, None if 2 * max_size <= space.free_bytes()
          else f"messages of {format_size(max_size)} need {format_size(2 * max_size)} of host memory")
    side = _Side(space, max_size, False, 1, need_send=True, need_recv=True)
    ack = np.zeros(1, dtype=np.uint8)

    def warm(src: int, dst: int) -> None:
        if job.rank == src:
            job.comm.Send([ack, 1, MPI.BYTE], dest=dst, tag=7)
        elif job.rank == dst:
            job.comm.Recv([ack, 1, MPI.BYTE], source=src, tag=7)

    warm_every_pair(job, job.size, warm)

    def measure(src: int, dst: int, size: int) -> PairCell:
        iters, skip, window = schedule.plan("bw", size)
        seed = (size + src) % 251
        if job.rank == src:
            space.fill(side.send, size, seed)
        if job.rank == dst:
            space.poison(side.recv, size)
        job.comm.Barrier()
        elapsed = 0.0
        if job.rank in (src, dst):
            first = job.rank == src
            elapsed = _bw_loop(job.comm, side, size, iters, skip, window, first, dst if first else src, ack,
                               MPI.Wtime)
        wrong = space.wrong_bytes(side.recv, size, seed) if (verify and job.rank == dst) else None
        t_all = job.comm.allgather((elapsed if job.rank == src else 0.0, wrong))
        t = t_all[src][0]
        wrong = t_all[dst][1]
        moved = size * iters * window
        return PairCell(src, dst, size, moved / t / 1e9 if t > 0 else 0.0,
                        t / (iters * window) * 1e6 if t > 0 else 0.0, wrong)

    return _sweep(job, job.size, sizes, measure,
                  lambda cells: P2PMatrix(job.size, "mpi", cells, tuple(job.hosts)),
                  progress, checkpoint, stop)
