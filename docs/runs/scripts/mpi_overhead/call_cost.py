"""CPU cost of one mpi4py call (thread CPU time, so cores shared with other work matter little), issue 27.

    mpirun -n 1 -x MPI4PY_RC_THREAD_LEVEL=single python bench/mpi_overhead/call_cost.py

Point-to-point calls go to MPI_PROC_NULL (MPI returns at once: what is left is mpi4py's own cost);
Allreduce runs on COMM_SELF (8 B, 2 floats); "window" is one osu_bw window of 64 messages plus the
ack. call_cost.c measures the same calls from C.
"""
import time
from itertools import repeat

import numpy as np
from mpi4py import MPI

comm, self_comm, null = MPI.COMM_WORLD, MPI.COMM_SELF, MPI.PROC_NULL
big = np.zeros(65536, np.uint8)
a, b = np.ones(2, np.float32), np.zeros(2, np.float32)
msg, rmsg = [big[:8], 8, MPI.BYTE], [big[8:16], 8, MPI.BYTE]
wmsg, ack = [MPI.buffer(big), 65536, MPI.BYTE], [MPI.buffer(big[:4]), 4, MPI.BYTE]


def send(n: int) -> None:
    f = comm.Send
    for _ in repeat(None, n):
        f(msg, null, 1)


def recv(n: int) -> None:
    f = comm.Recv
    for _ in repeat(None, n):
        f(rmsg, null, 1)


def persistent_start_wait(n: int) -> None:
    q = comm.Send_init(msg, null, 1)
    start, wait = q.Start, q.Wait
    for _ in repeat(None, n):
        start()
        wait()
    q.Free()


def allreduce_numpy(n: int) -> None:
    f, s, r, op = self_comm.Allreduce, [a, 2, MPI.FLOAT], [b, 2, MPI.FLOAT], MPI.SUM
    for _ in repeat(None, n):
        f(s, r, op)


def allreduce_mpi_buffer(n: int) -> None:
    f, s, r, op = self_comm.Allreduce, [MPI.buffer(a), 2, MPI.FLOAT], [MPI.buffer(b), 2, MPI.FLOAT], MPI.SUM
    for _ in repeat(None, n):
        f(s, r, op)


def wtime_pair(n: int) -> None:
    t = MPI.Wtime
    for _ in repeat(None, n):
        t()
        t()


def window_persistent(n: int) -> None:
    reqs = [comm.Send_init(wmsg, null, 100) for _ in range(64)]
    start, waitall, r = MPI.Prequest.Startall, MPI.Request.Waitall, comm.Recv
    for _ in repeat(None, n):
        start(reqs)
        waitall(reqs)
        r(ack, null, 101)
    for q in reqs:
        q.Free()


def window_isend(n: int) -> None:
    f, waitall, r = comm.Isend, MPI.Request.Waitall, comm.Recv
    for _ in repeat(None, n):
        waitall([f(wmsg, null, 100) for _ in range(64)])
        r(ack, null, 101)


CASES = {send: 200000, recv: 200000, persistent_start_wait: 200000, allreduce_numpy: 200000,
         allreduce_mpi_buffer: 200000, wtime_pair: 200000, window_persistent: 20000, window_isend: 20000}
best: dict[str, float] = {}
for _ in range(5):
    for case, n in CASES.items():
        t0 = time.thread_time()
        case(n)
        ns = (time.thread_time() - t0) / n * 1e9
        best[case.__name__] = min(best.get(case.__name__, ns), ns)
levels = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled", MPI.THREAD_SERIALIZED: "serialized",
          MPI.THREAD_MULTIPLE: "multiple"}
print(f"# mpi4py {__import__('mpi4py').__version__}, thread level {levels[MPI.Query_thread()]}, best of 5")
for name, ns in best.items():
    print(f"{name:24s} {ns:9.1f} ns per call")
