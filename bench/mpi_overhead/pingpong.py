"""pingpong.c from mpi4py: bench mpi's latency loop (prebuilt messages, positional Send/Recv) and the
same with persistent requests (Start/Wait), in short interleaved rounds; min, p10, median (issue 27).

    mpirun -n 2 --bind-to none -x MPI4PY_RC_THREAD_LEVEL=single python bench/mpi_overhead/pingpong.py SIZE ROUNDS ITERS
"""
import sys
from itertools import repeat

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
first, partner = comm.rank == 0, 1 - comm.rank
size, rounds, iters = (int(x) for x in sys.argv[1:4])
sbuf, rbuf = np.zeros(max(size, 1), np.uint8), np.zeros(max(size, 1), np.uint8)
smsg, rmsg = [MPI.buffer(sbuf), size, MPI.BYTE], [MPI.buffer(rbuf), size, MPI.BYTE]


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


us: dict[str, list[float]] = {}
for loop in (send_recv, persistent):
    loop(200)
for _ in range(rounds):
    for loop in (send_recv, persistent):
        comm.Barrier()
        t0 = MPI.Wtime()
        loop(iters)
        us.setdefault(loop.__name__, []).append((MPI.Wtime() - t0) * 1e6 / (2 * iters))
levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled", MPI.THREAD_SERIALIZED: "serialized",
          MPI.THREAD_MULTIPLE: "multiple"}
if first:
    for name, v in us.items():
        v.sort()
        print(f"py {levels[MPI.Query_thread()]:8s} {name:10s} {size:5d} B: min {v[0]:.3f} p10 {v[len(v) // 10]:.3f} "
              f"median {v[len(v) // 2]:.3f} us")
