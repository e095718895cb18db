"""Run a linkscope command and report, at exit, whether the process touched CUDA: /dev/nvidia* files
open, libcuda mapped, and cuCtxGetCurrent (issue 27: host-buffer MPI calls of the CUDA-aware Open MPI
cost more in a process that holds a CUDA context, bench/mpi_overhead/pingpong.c's ``ctx`` mode).
  mpirun -n 2 python3 bench/mpi_overhead/cuda_state.py bench mpi --test allreduce --buffers HH --sizes 8
"""
import atexit
import ctypes
import os
import runpy
import sys


def state() -> None:
    fds = set()
    for f in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{f}")
        except OSError:
            continue
        if target.startswith("/dev/nvidia"):
            fds.add(target)
    with open("/proc/self/maps") as fh:
        maps = fh.read()
    loaded = "libcuda.so" in maps
    current = "libcuda not loaded"
    if loaded:
        ctx = ctypes.c_void_p()
        rc = ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent(ctypes.byref(ctx))
        current = f"cuCtxGetCurrent rc {rc} ctx {'set' if ctx.value else 'none'}"
    print(f"cuda_state rank {os.environ.get('OMPI_COMM_WORLD_RANK', '?')}: /dev/nvidia files {sorted(fds)}, "
          f"libcudart mapped {'libcudart' in maps}, libcuda mapped {loaded}, {current}", file=sys.stderr, flush=True)


atexit.register(state)
sys.argv = ["linkscope", *sys.argv[1:]]
runpy.run_module("linkscope", run_name="__main__", alter_sys=True)
