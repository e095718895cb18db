"""MPI suite: OSU's point-to-point and allreduce tests through ``linkscope bench mpi`` on two ranks, host
buffers and (where there are two GPUs) device buffers, under the ``mpirun`` on PATH.

    PYTHONPATH=src python bench/mpi.py --out DIR [--quick] [--dry-run]

Steps: TEST-BUFFERS for latency, bw, bibw and allreduce with host buffers (HH: no GPU needed), then with
device buffers (DD: one GPU per rank; needs a GPU-aware MPI, else linkscope says so and stages). OSU's
own binaries, where a CUDA-aware Open MPI with OSU is installed (bench/build_cuda_mpi.sh), are compared
by hand: docs/runs/scripts/device_mpi_osu.sh is the recorded way. Writes DIR/suite.json.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import Machine, Step, run

TESTS = ("latency", "bw", "bibw", "allreduce")
MPIRUN = ("mpirun", "-n", "2", "--bind-to", "core", "--map-by", "core")


def steps(m: Machine) -> list[Step]:
    sizes = "1:64KiB" if m.quick else "1:4MiB"
    out: list[Step] = []
    for buffers, min_gpus in (("HH", 0), ("DD", 2)):
        for test in TESTS:
            name = f"{test}-{buffers}"
            out.append(Step(name, ("bench", "mpi", "--test", test, "--buffers", buffers, "--sizes", sizes,
                                   "--json", f"{{out}}/{name}.json"),
                            min_gpus=min_gpus, needs=("mpirun",), launcher=MPIRUN, topology=False))
    return out


if __name__ == "__main__":
    sys.exit(run("mpi", steps, description=__doc__.split("\n\n")[0]))
