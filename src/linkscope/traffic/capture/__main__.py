"""``python -m linkscope.traffic.capture [-o traffic.json] app.py [args...]``: run an mpi4py
program with its communicator traffic counted (see ``mpi4py_hook``).

Under ``linkscope profile`` (``LINKSCOPE_TRAFFIC_DIR`` set) each rank writes its row there; run
directly (``mpirun -n 4 python -m linkscope.traffic.capture -o t.json app.py``) rank 0 gathers
the rows at exit and writes the matrix. When the PMPI interposer is already preloaded it counts
these calls itself, so this hook steps aside to avoid counting twice.
"""
from __future__ import annotations

import os
import runpy
import sys


def main(argv: list[str]) -> int:
    output = None
    args = list(argv)
    if args[:1] in (["-o"], ["--output"]):
        if len(args) < 2:
            sys.stderr.write("linkscope capture: -o needs a file name\n")
            return 2
        output = args[1]
        args = args[2:]
    if not args or args[0] in ("-h", "--help"):
        sys.stderr.write(__doc__ or "")
        return 0 if args else 2
    script = args[0]
    if not os.path.isfile(script):
        sys.stderr.write(f"linkscope capture: no such program: {script}\n")
        return 1
    if "libpmpi_count" not in os.environ.get("LD_PRELOAD", ""):
        from mpi4py import MPI

        from .mpi4py_hook import install

        install(MPI, os.environ, output)
    sys.argv = args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
