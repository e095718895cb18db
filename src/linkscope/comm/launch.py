"""Running under mpirun / srun: late MPI start, rank → GPU binding, rank-0 output, clean failure.

Rules every multi-process runner follows (mpi4py ``run.py`` semantics):

* MPI is initialised only here, after the command line was parsed (``start_mpi``), and only when
  the process was started by a launcher (``launched_by_mpi``); a plain ``linkscope bench nccl``
  runs single-process with a one-rank ``SerialComm`` and needs no MPI at all.
* Only rank 0 writes data (``Job.echo``); other ranks stay quiet.
* A problem every rank sees at the same point raises ``CollectiveError`` on every rank (``agree``
  turns a problem seen by *some* ranks into one seen by all): rank 0 prints one line and every
  rank exits 1, normally, so mpirun ends the job without killing ranks (Open MPI 4.1 still waits
  ``odls_base_sigkill_timeout``, 1 s, after a non-zero exit: 1.37 s against 0.38 s for exit 0, measured).
* Anything else (a bug, a CUDA error on one rank) aborts the whole job with
  ``MPI_Abort`` (``abort_on_exception``) so no rank is left waiting in a collective.
"""
from __future__ import annotations

import socket
import sys
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError
from ..rankenv import launched_by_mpi, local_rank_from_env


class CollectiveError(UserError):
    """A user error raised on every rank at the same point: rank 0 reports it, all exit 1."""


@dataclass(frozen=True)
class GpuBinding:
    """Which CUDA device this rank uses, and why (recorded in the run context)."""

    cuda_ordinal: int
    reason: str


def bind_gpu(
    *,
    world_rank: int,
    local_rank: int | None,
    visible_gpus: int,
    environ: Mapping[str, str],
    gpu_of_rank: Sequence[int] | None = None,
) -> GpuBinding:
    """Local rank → CUDA device.

    Order: a mapping (``gpu_of_rank[world_rank]``, a local GPU index); one visible device
    (``linkscope launch`` or the site's wrapper set CUDA_VISIBLE_DEVICES per rank, so use it);
    else local rank modulo the visible devices.
    """
    if visible_gpus < 1:
        raise UserError(f"rank {world_rank}: no GPU visible (CUDA_VISIBLE_DEVICES={environ.get('CUDA_VISIBLE_DEVICES')!r})")
    if gpu_of_rank is not None:
        if world_rank >= len(gpu_of_rank):
            raise UserError(f"the mapping places {len(gpu_of_rank)} ranks but this is rank {world_rank}")
        gpu = int(gpu_of_rank[world_rank])
        if visible_gpus == 1:
            return GpuBinding(0, f"mapping says GPU {gpu}; CUDA_VISIBLE_DEVICES already selects one device")
        if not 0 <= gpu < visible_gpus:
            raise UserError(f"the mapping puts rank {world_rank} on GPU {gpu} but {visible_gpus} GPUs are visible")
        return GpuBinding(gpu, "mapping")
    if visible_gpus == 1:
        return GpuBinding(0, f"one visible device (CUDA_VISIBLE_DEVICES={environ.get('CUDA_VISIBLE_DEVICES', '')!r})")
    if local_rank is None:
        local_rank = world_rank
        return GpuBinding(local_rank % visible_gpus, "world rank modulo visible GPUs (no local-rank variable)")
    return GpuBinding(local_rank % visible_gpus, "local rank modulo visible GPUs")


class SerialComm:
    """A one-rank stand-in for an mpi4py communicator (single-process runs need no MPI).

    Implements only the calls the runners use, with mpi4py's lower-case (pickle) semantics.
    """

    rank = 0
    size = 1

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def bcast(self, obj: Any, root: int = 0) -> Any:
        return obj

    def allgather(self, obj: Any) -> list[Any]:
        return [obj]

    def gather(self, obj: Any, root: int = 0) -> list[Any]:
        return [obj]

    def allreduce(self, obj: Any, op: Any = None) -> Any:
        return obj

    def Barrier(self) -> None:
        return None

    barrier = Barrier

    def Abort(self, errorcode: int = 1) -> None:
        raise SystemExit(errorcode)


@dataclass(frozen=True)
class Job:
    """The ranks of this run as one object: the communicator, who we are, where everyone runs.

    Attributes:
        comm: an mpi4py communicator, or a SerialComm.
        rank, size: this rank and the world size.
        hosts: host name of every rank (gathered at start).
        local_rank: rank within this host where known.
        mpi_library: ``MPI_Get_library_version`` first line, or ``""`` without MPI.
        mpi_vendor: (name, version) from mpi4py, or None.
        mpi_thread_level: the level MPI provided (``MPI_Query_thread``: "single" ... "multiple"),
            ``""`` without MPI.
        out: where rank 0 writes data (stdout by default).
    """

    comm: Any
    rank: int
    size: int
    hosts: tuple[str, ...]
    local_rank: int | None
    mpi_library: str = ""
    mpi_vendor: tuple[str, str] | None = None
    mpi_thread_level: str = ""
    out: Any = field(default=None, compare=False)

    @property
    def uses_mpi(self) -> bool:
        return not isinstance(self.comm, SerialComm)

    def echo(self, text: str) -> None:
        """Data on stdout, rank 0 only."""
        if self.rank == 0:
            stream = self.out or sys.stdout
            stream.write(text if text.endswith("\n") else text + "\n")
            stream.flush()

    def note(self, text: str) -> None:
        """A progress note on stderr, rank 0 only."""
        if self.rank == 0:
            sys.stderr.write(f"linkscope: {text}\n")
            sys.stderr.flush()

    def context(self) -> dict[str, Any]:
        """What the RunRecord's context records about the job."""
        ctx: dict[str, Any] = {
            "ranks": self.size,
            "hosts_per_rank": list(self.hosts),
            "hosts": sorted(set(self.hosts)),
            "launcher": "mpi" if self.uses_mpi else "none",
        }
        if self.mpi_library:
            ctx["mpi_library"] = self.mpi_library
        if self.mpi_vendor:
            ctx["mpi_vendor"] = f"{self.mpi_vendor[0]} {self.mpi_vendor[1]}"
        if self.mpi_thread_level:
            ctx["mpi_thread_level"] = self.mpi_thread_level
        return ctx


def serial_job(out: Any = None) -> Job:
    return Job(SerialComm(), 0, 1, (socket.gethostname(),), 0, out=out)


THREAD_LEVELS = ("single", "funneled", "serialized", "multiple")


def start_mpi(environ: Mapping[str, str], out: Any = None, *, thread_level: str | None = None) -> Job:
    """Initialise MPI (late: call after parsing options) and describe the job.

    ``thread_level`` asks MPI for that level (one of THREAD_LEVELS) instead of mpi4py's default,
    ``"multiple"``; it only takes effect when this call is the one that initialises MPI, and
    ``MPI4PY_RC_THREAD_LEVEL`` in the environment still wins (mpi4py reads it when MPI starts). The
    level MPI provided is recorded in the job either way.
    """
    try:
        import mpi4py

        if thread_level is not None and "mpi4py.MPI" not in sys.modules:
            mpi4py.rc.thread_level = thread_level
        from mpi4py import MPI
    except ImportError as exc:
        raise UserError("mpi4py is not installed", hint="pip install mpi4py (and an MPI library)") from exc
    except RuntimeError as exc:  # mpi4py cannot load libmpi
        raise UserError(f"MPI cannot start: {exc}") from exc
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    hosts = tuple(comm.allgather(MPI.Get_processor_name()))
    try:
        library = MPI.Get_library_version().replace("\x00", "").strip().splitlines()[0].strip()
    except Exception:
        library = ""
    vendor_name, vendor_version = MPI.get_vendor()
    version = ".".join(str(v) for v in vendor_version)
    levels = {getattr(MPI, f"THREAD_{name.upper()}"): name for name in THREAD_LEVELS}
    provided = levels.get(MPI.Query_thread(), str(MPI.Query_thread()))
    return Job(comm, rank, size, hosts, local_rank_from_env(environ), library, (vendor_name, version), provided, out)


def job_for(environ: Mapping[str, str], out: Any = None) -> Job:
    """MPI when a launcher started us, else a serial job."""
    return start_mpi(environ, out) if launched_by_mpi(environ) else serial_job(out)


def agree(job: Job, problem: str | None) -> None:
    """Collective: raise the first rank's problem on every rank (naming the rank), or return."""
    problems = job.comm.allgather(problem)
    for rank, text in enumerate(problems):
        if text:
            where = f"rank {rank} ({job.hosts[rank] if rank < len(job.hosts) else '?'}): " if job.size > 1 else ""
            raise CollectiveError(f"{where}{text}")


def require(job: Job, condition: bool, message: str, hint: str | None = None) -> None:
    """A check every rank evaluates identically (world size, grid shape): no communication."""
    if not condition:
        raise CollectiveError(message, hint)


@contextmanager
def abort_on_exception(job: Job, stderr: Any = None) -> Iterator[None]:
    """Run a multi-rank body; on an error only some ranks see, abort the world (no hangs).

    ``CollectiveError`` passes through on every rank (the CLI exits 1, rank 0 prints it).
    ``KeyboardInterrupt`` passes through. Any other exception on a multi-rank job prints the
    rank's traceback (or one line for a UserError) and calls ``MPI_Abort``.
    """
    try:
        yield
    except (CollectiveError, KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:
        if job.size <= 1:
            raise
        stream = stderr or sys.stderr
        if isinstance(exc, UserError):
            stream.write(f"linkscope: error on rank {job.rank} ({job.hosts[job.rank]}): {exc.one_line()}\n")
        else:
            stream.write(f"linkscope: unhandled error on rank {job.rank} ({job.hosts[job.rank]}), aborting all ranks\n")
            traceback.print_exc(file=stream)
        stream.flush()
        job.comm.Abort(1)
        raise


def run_collectively(job: Job, body: Callable[[], Any]) -> Any:
    """``body()`` under ``abort_on_exception``; a CollectiveError is re-raised on rank 0 only,
    other ranks turn it into a quiet exit 1 (``SystemExit(1)``)."""
    try:
        with abort_on_exception(job):
            return body()
    except CollectiveError:
        if job.rank == 0:
            raise
        raise SystemExit(1) from None
