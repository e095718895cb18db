"""bw_probe.c's loop from mpi4py on CuPy device buffers (issue 27): blocks of ITERS osu_bw windows alternate
between four variants in one process, so all see the same link and moment:

    isend/pool        one comm.Isend / Irecv per message, buffers from CuPy's memory pool (cupy.empty)
    persistent/pool   Send_init / Recv_init once, Prequest.Startall per window (linkscope bench mpi's loop)
    isend/malloc      the same on buffers from a bare cudaMalloc (cupy.cuda.Memory), as OSU's
    persistent/malloc
    persistent/random the persistent loop on pool buffers holding random bytes (the others hold one byte
                      value, as OSU's memset; bench mpi sends its check pattern)
    persistent/view   the persistent loop on the first SIZE bytes of 256 MiB pool buffers (bench mpi's
                      buffers hold its largest size)

VARIANTS=name,name,... runs only those (default: the first four).

    mpirun -n 2 --bind-to none env LOCAL_RANK=... python3 bench/mpi_overhead/bw_probe.py SIZE BLOCKS [ITERS WINDOW]

No linkscope import. Messages go by raw address (MPI.buffer.fromaddress), as bench mpi passes them.
"""
import os
import sys

import cupy
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
size, blocks = int(sys.argv[1]), int(sys.argv[2])
iters = int(sys.argv[3]) if len(sys.argv) > 3 else 20
window = int(sys.argv[4]) if len(sys.argv) > 4 else 64
cupy.cuda.Device(int(os.environ.get("LOCAL_RANK", "0"))).use()
keep = []


def buffers(kind: str) -> tuple[list, list]:
    if kind in ("pool", "random", "view"):
        n = max(size, 256 << 20) if kind == "view" else size
        s, r = cupy.empty(n, cupy.uint8), cupy.empty(n, cupy.uint8)
        ptrs = s.data.ptr, r.data.ptr
        keep.extend([s, r])
    else:
        s, r = cupy.cuda.Memory(size), cupy.cuda.Memory(size)
        ptrs = s.ptr, r.ptr
        keep.extend([s, r])
    cupy.cuda.runtime.memset(ptrs[0], 97, size)
    cupy.cuda.runtime.memset(ptrs[1], 98, size)
    if kind == "random":
        s[:size] = cupy.random.randint(0, 256, size, dtype=cupy.uint8)
    cupy.cuda.Device().synchronize()
    return ([MPI.buffer.fromaddress(ptrs[0], size), size, MPI.BYTE],
            [MPI.buffer.fromaddress(ptrs[1], size), size, MPI.BYTE])


def ack(msg: list) -> list:
    return [msg[0], 4, MPI.BYTE]


def make(kind: str, mode: str):
    s, r = buffers(kind)
    sa, ra = ack(s), ack(r)
    if mode == "persistent":
        reqs = [comm.Send_init(s, 1, 100) if rank == 0 else comm.Recv_init(r, 0, 100) for _ in range(window)]
        start, waitall = MPI.Prequest.Startall, MPI.Request.Waitall

        def one() -> None:
            start(reqs)
            waitall(reqs)
            if rank == 0:
                comm.Recv(ra, 1, 101)
            else:
                comm.Send(sa, 0, 101)
    else:
        def one() -> None:
            if rank == 0:
                q = [comm.Isend(s, 1, 100) for _ in range(window)]
            else:
                q = [comm.Irecv(r, 0, 100) for _ in range(window)]
            MPI.Request.Waitall(q)
            if rank == 0:
                comm.Recv(ra, 1, 101)
            else:
                comm.Send(sa, 0, 101)
    return one


def block(one, n: int) -> float:
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(n):
        one()
    return MPI.Wtime() - t0


def warm(one, secs: float) -> None:
    t0 = MPI.Wtime()
    while True:
        block(one, 1)
        if not comm.bcast(MPI.Wtime() - t0 < secs, root=0):
            return


names = os.environ.get("VARIANTS", "isend/pool,persistent/pool,isend/malloc,persistent/malloc").split(",")
variants = {name: make(name.split("/")[1], name.split("/")[0]) for name in names}
for one in variants.values():
    warm(one, 0.1)
names = list(variants)
for b in range(blocks):
    for name in (names if b % 2 == 0 else names[::-1]):
        secs = block(variants[name], iters)
        if rank == 0:
            print(f"py {name} size {size} block {b}: {size * window * iters / secs / 1e6:.1f} MB/s", flush=True)
