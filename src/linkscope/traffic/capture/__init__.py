"""Capturing the traffic of a real MPI program, without changing it.

* C/C++/Fortran-through-C programs: a PMPI interposer (``pmpi_count.c``, shipped here) built with
  the system's ``mpicc`` on first use into a cache directory, preloaded into every rank with
  ``LD_PRELOAD``; ``profile`` runs the launcher command, then merges the rows the ranks wrote.
* mpi4py programs: ``python -m linkscope.traffic.capture app.py`` wraps the communicator methods
  (see ``mpi4py_hook``) and writes the same rows.

How the preload reaches the ranks (``inject``):

* ``ompi``: Open MPI's ``mpirun -x LD_PRELOAD=... -x LINKSCOPE_TRAFFIC_DIR=...`` (needed for ranks
  on other hosts; local ranks would inherit the environment anyway);
* ``hydra``: MPICH/Intel MPI ``mpiexec -genv LD_PRELOAD ...``;
* ``srun``: ``srun --export=ALL,LD_PRELOAD=...``;
* ``env``: set the variables for the whole command (a singleton run, or a launcher that passes
  its environment on).

Ranks on other hosts need the library path and the rows directory on a shared file system.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ...cbuild import build_library
from ...errors import BackendUnavailable, UserError
from ..matrix import TrafficMatrix
from .rows import merge_rows, read_rows

ROWS_ENV = "LINKSCOPE_TRAFFIC_DIR"
LIBRARY_NAME = "libpmpi_count.so"
INJECT_MODES = ("auto", "ompi", "hydra", "srun", "env")


def interposer_source() -> str:
    return (resources.files("linkscope.traffic.capture") / "pmpi_count.c").read_text()


def build_interposer(environ: Mapping[str, str], mpicc: str | None = None, cache: Path | None = None) -> Path:
    """Compile the interposer with ``mpicc`` (once per source and MPI installation) and return it."""
    compiler = mpicc or environ.get("MPICC") or "mpicc"
    path = shutil.which(compiler, path=environ.get("PATH"))
    if path is None:
        raise BackendUnavailable(
            f"cannot build the traffic interposer: {compiler!r} not found on PATH",
            hint="install an MPI development package (e.g. apt-get install libopenmpi-dev), set MPICC, "
                 "or capture an mpi4py program with: python -m linkscope.traffic.capture app.py")
    try:
        show = subprocess.run([path, "-show"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        show = ""
    return build_library(interposer_source(), LIBRARY_NAME, path, kind="pmpi", environ=environ, key_extra=show,
                         cache=cache)


def detect_launcher(command: Sequence[str]) -> str:
    """Which injection a launcher command needs (``auto`` resolved)."""
    name = Path(command[0]).name if command else ""
    if name == "srun":
        return "srun"
    if name in ("mpirun", "mpiexec", "orterun", "prterun", "mpiexec.hydra"):
        try:
            text = subprocess.run([command[0], "--version"], capture_output=True, text=True, timeout=30)
            version = (text.stdout + text.stderr).lower()
        except (OSError, subprocess.TimeoutExpired):
            version = ""
        if "open mpi" in version or "open-mpi" in version or "openrte" in version or name in ("orterun", "prterun"):
            return "ompi"
        if "hydra" in version or "mpich" in version or "intel" in version:
            return "hydra"
    return "env"


def launch_command(command: Sequence[str], library: Path, rows_dir: Path, inject: str,
                   environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command to run and the environment to run it with."""
    if not command:
        raise UserError("no command to profile", hint="linkscope profile -o traffic.json -- mpirun -n 4 ./app")
    if inject not in INJECT_MODES:
        raise UserError(f"unknown --inject {inject!r}", hint=f"valid: {', '.join(INJECT_MODES)}")
    mode = detect_launcher(command) if inject == "auto" else inject
    preload = str(library) + (":" + environ["LD_PRELOAD"] if environ.get("LD_PRELOAD") else "")
    env = dict(environ)
    env[ROWS_ENV] = str(rows_dir)
    argv = list(command)
    if mode == "ompi":
        argv[1:1] = ["-x", f"LD_PRELOAD={preload}", "-x", f"{ROWS_ENV}={rows_dir}"]
    elif mode == "hydra":
        argv[1:1] = ["-genv", "LD_PRELOAD", preload, "-genv", ROWS_ENV, str(rows_dir)]
    elif mode == "srun":
        argv[1:1] = [f"--export=ALL,LD_PRELOAD={preload},{ROWS_ENV}={rows_dir}"]
    else:
        env["LD_PRELOAD"] = preload
    return argv, env


@dataclass(frozen=True)
class ProfileResult:
    matrix: TrafficMatrix | None
    returncode: int
    rows_dir: Path
    command: tuple[str, ...]


def profile(
    command: Sequence[str],
    environ: Mapping[str, str],
    *,
    inject: str = "auto",
    rows_dir: Path | None = None,
    keep_rows: bool = False,
    mpicc: str | None = None,
) -> ProfileResult:
    """Build (or reuse) the interposer, run ``command`` with it preloaded, merge the rows. The rows go
    to a temporary folder this call creates and removes whatever happens (unless ``keep_rows``), or to
    ``rows_dir``, which must not hold rows already (a user's files there are never removed)."""
    library = build_interposer(environ, mpicc)
    own_dir = rows_dir is None
    if rows_dir is not None:
        folder = Path(rows_dir)
        folder.mkdir(parents=True, exist_ok=True)
        if any(folder.glob("rank-*.txt")):
            raise UserError(f"--rows-dir {folder} already holds rank-*.txt rows (of an earlier run?)",
                            hint="give an empty folder, or remove those rows first")
    else:
        folder = Path(tempfile.mkdtemp(prefix="linkscope-traffic-"))
    try:
        argv, env = launch_command(command, library, folder, inject, environ)
        try:
            returncode = subprocess.run(argv, env=env).returncode
        except FileNotFoundError:
            raise UserError(f"command not found: {argv[0]}") from None
        rows = read_rows(folder)
        matrix = merge_rows(rows, origin="captured:" + " ".join(command)) if rows else None
    finally:
        if own_dir and not keep_rows:
            shutil.rmtree(folder, ignore_errors=True)
    return ProfileResult(matrix, returncode, folder, tuple(argv))
