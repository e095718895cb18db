"""pingpong.c from mpi4py: bench mpi's latency loop (prebuilt messages, positional Send/Recv), the
same with persistent requests (Start/Wait), and bench mpi's allreduce loop (one timed Allreduce, a
barrier after it), in short interleaved rounds; min, p10, median (issue 27).

    mpirun -n 2 --bind-to none -x MPI4PY_RC_THREAD_LEVEL=single python bench/mpi_overhead/pingpong.py SIZE ROUNDS ITERS [MODE]

MODE: host (default; CUDA never touched), init (host buffers; the CUDA driver initialised through
CuPy's cudaGetDeviceCount, no context), ctx (host buffers, but the process holds a CUDA context on
GPU $LOCAL_RANK through CuPy, made before MPI starts), ctxafter (the same context, made after MPI
started), device (CuPy buffers on that GPU, handed to MPI by raw address as bench mpi does).
"""
import os
import sys
from itertools import repeat

import numpy as np

size, rounds, iters = (int(x) for x in sys.argv[1:4])
mode = sys.argv[4] if len(sys.argv) > 4 else "host"
xp = np
if mode != "host":
    import cupy

    if mode == "init":
        cupy.cuda.runtime.getDeviceCount()
    elif mode != "ctxafter":  # the GPU is chosen before MPI starts, as OSU does with LOCAL_RANK
        cupy.cuda.Device(int(os.environ.get("LOCAL_RANK", "0"))).use()
        cupy.zeros(1)  # creates the context
    if mode == "device":
        xp = cupy
from mpi4py import MPI  # noqa: E402

if mode == "ctxafter":
    cupy.cuda.Device(int(os.environ.get("LOCAL_RANK", "0"))).use()
    cupy.zeros(1)

comm = MPI.COMM_WORLD
first, partner = comm.rank == 0, 1 - comm.rank
sbuf, rbuf = xp.zeros(max(size, 1), np.uint8), xp.zeros(max(size, 1), np.uint8)
count = max(size // 4, 1)
fsend, frecv = xp.ones(count, np.float32), xp.zeros(count, np.float32)


def wrap(a, n):
    if xp is np:
        return MPI.buffer(a)
    return MPI.buffer.fromaddress(int(a.data.ptr), n)


smsg, rmsg = [wrap(sbuf, size), size, MPI.BYTE], [wrap(rbuf, size), size, MPI.BYTE]
fs, fr = [wrap(fsend, 4 * count), count, MPI.FLOAT], [wrap(frecv, 4 * count), count, MPI.FLOAT]


def send_recv(n: int) -> None:
    s, r = comm.Send, comm.Recv
    if first:
        for _ in repeat(None, n):
            s(smsg, partner, 1)
            r(rmsg, partner, 1)
    else:
        for _ in repeat(None, n):
            r(rmsg, partner, 1)
            s(smsg, partner, 1)


def persistent(n: int) -> None:
    sq, rq = comm.Send_init(smsg, partner, 1), comm.Recv_init(rmsg, partner, 1)
    ss, sw, rs, rw = sq.Start, sq.Wait, rq.Start, rq.Wait
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
    sq.Free()
    rq.Free()


def allreduce(n: int) -> float:
    """bench mpi's allreduce loop; returns the timed seconds (the barriers are outside them)."""
    f, bar, op, clock, total = comm.Allreduce, comm.Barrier, MPI.SUM, MPI.Wtime, 0.0
    for _ in repeat(None, n):
        t0 = clock()
        f(fs, fr, op)
        total += clock() - t0
        bar()
    return total


us: dict[str, list[float]] = {}
for loop in (send_recv, persistent, allreduce):
    loop(200)
for _ in range(rounds):
    for loop in (send_recv, persistent):
        comm.Barrier()
        t0 = MPI.Wtime()
        loop(iters)
        us.setdefault(loop.__name__, []).append((MPI.Wtime() - t0) * 1e6 / (2 * iters))
    comm.Barrier()
    us.setdefault("allreduce", []).append(allreduce(iters) * 1e6 / iters)
levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled", MPI.THREAD_SERIALIZED: "serialized",
          MPI.THREAD_MULTIPLE: "multiple"}
if first:
    for name, v in us.items():
        v.sort()
        print(f"py {levels[MPI.Query_thread()]:8s} {mode:6s} {name:10s} {size:5d} B: min {v[0]:.3f} p10 {v[len(v) // 10]:.3f} "
              f"median {v[len(v) // 2]:.3f} us")
