"""The sweep loop's stop and checkpoint mechanism, for every multi-size (and multi-rank) runner.

A runner only describes what to time (one step per size, pair or job); this module does the rest:

* ``boundaries`` checks, before each step, whether the ranks agreed to stop;
* ``Checkpoint`` is rank 0's partial record, written atomically after every finished step to the
  files asked for, remembering which files exist (an interrupt names only those);
* ``run_sweep`` runs a whole sweep under ``stop_on_signal``: on an agreed stop or Ctrl-C rank 0
  writes the partial record (``complete: false``), prints the partial table, and every rank
  returns 130 (``EXIT_INTERRUPTED``); after a hard stop the job is aborted with 130.

Ctrl-C in a multi-process sweep: every rank stops at the same point and nothing measured is lost.

How a stop request reaches the ranks depends on the launcher:

* a plain process: the terminal's SIGINT raises ``KeyboardInterrupt`` at once (Python's default);
* ``mpirun`` (Open MPI 4.1): each rank is in its own process group, so Ctrl-C reaches only mpirun,
  which sends SIGTERM to every rank and SIGKILL ``odls_base_sigkill_timeout`` (1 s) later;
* ``srun`` and wrappers that share the terminal's process group: SIGINT reaches every rank, or
  only some of them when a signal is sent by hand.

A rank that stops on its own in the middle of a message leaves its partner waiting for ever, so
``stop_on_signal`` turns the first SIGINT/SIGTERM of a multi-rank job into a *request* (a flag),
and the runners call ``StopSignal.agreed`` at each size boundary: one small collective
(``allreduce`` of the flags) after which every rank knows whether any rank was asked to stop, so all
ranks leave the sweep at the same boundary and rank 0 writes what was finished. A second signal
raises ``KeyboardInterrupt`` at once (hard stop: the CLI writes rank 0's rows and aborts the job).

Runners report an early end by raising ``RunInterrupted`` (a ``KeyboardInterrupt``) with rank 0's
partial result attached; the CLI saves it with ``complete=False`` and exits 130.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")

EXIT_INTERRUPTED = 130
EXIT_WITH_ERRORS = 3


class Job(Protocol):
    """The ranks of a sweep (``comm.launch.Job``; a serial job for one process)."""

    @property
    def rank(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def comm(self) -> Any: ...
    @property
    def uses_mpi(self) -> bool: ...

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class RunInterrupted(KeyboardInterrupt):
    """A sweep ended early.

    Attributes:
        partial: rank 0's result with every finished size/pair (None on other ranks, or when the
            runner had not started measuring).
        agreed: True when every rank stopped at the same boundary (the job can exit normally);
            False after a hard stop (a second signal, or a KeyboardInterrupt mid-size), when other
            ranks may still be inside a message and the job must be aborted.
    """

    def __init__(self, partial: Any, *, agreed: bool) -> None:
        super().__init__("interrupted")
        self.partial = partial
        self.agreed = agreed


class StopRequested(KeyboardInterrupt):
    """Raised inside a runner's loop when all ranks agreed to stop (turned into RunInterrupted)."""


class StopSignal:
    """A stop request set by a signal handler (or by hand) and agreed on collectively."""

    def __init__(self) -> None:
        self.requested = False
        self.signals_seen = 0

    def request(self) -> None:
        self.requested = True

    def agreed(self, job: Job) -> bool:
        """Collective on multi-rank jobs: True on every rank when any rank has a request."""
        if job.size <= 1:
            return self.requested
        return int(job.comm.allreduce(1 if self.requested else 0)) > 0

    def check(self, job: Job) -> None:
        """Raise StopRequested on every rank when the ranks agree to stop (a size boundary)."""
        if self.agreed(job):
            raise StopRequested()


def boundaries(job: Job, items: Iterable[T], stop: StopSignal | None) -> Iterator[T]:
    """``items`` with a collective stop check before each one (every rank must iterate alike)."""
    for item in items:
        if stop is not None:
            stop.check(job)
        yield item


def interrupted(job: Job, exc: BaseException, partial: Callable[[], Any]) -> RunInterrupted:
    """The RunInterrupted a runner raises for ``exc``; ``partial()`` builds rank 0's result so far."""
    if isinstance(exc, RunInterrupted):
        return exc
    return RunInterrupted(partial() if job.rank == 0 else None, agreed=isinstance(exc, StopRequested))


@contextmanager
def stop_on_signal(job: Job) -> Iterator[StopSignal]:
    """Install SIGINT/SIGTERM handlers for the duration of a sweep (main thread only).

    Multi-rank: the first signal sets the request, a second raises KeyboardInterrupt. One rank
    started by a launcher: SIGTERM raises KeyboardInterrupt like SIGINT does (Open MPI's mpirun
    forwards Ctrl-C as SIGTERM). A plain process keeps Python's SIGINT behaviour.
    """
    stop = StopSignal()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous: dict[int, Any] = {}

    def on_signal(signum: int, frame: Any) -> None:
        stop.signals_seen += 1
        if job.size > 1 and stop.signals_seen == 1:
            stop.request()
            return
        raise KeyboardInterrupt()

    wanted = STOP_SIGNALS if job.size > 1 else ((signal.SIGTERM,) if job.uses_mpi else ())
    for sig in wanted:
        previous[sig] = signal.signal(sig, on_signal)
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


@dataclass
class Checkpoint:
    """Rank 0's latest partial record and the files it is in.

    ``write(record)`` writes the record atomically and returns the paths it wrote (the CLI's
    writer sends a partial record to the sidecars ``NAME.partial.json`` and only a complete one to
    the files the user named); ``Checkpoint(record)`` calls it after every finished step.
    ``written`` keeps the files that exist, so an interrupt in the first seconds claims none;
    ``targets`` are the files the user named, which a partial record never replaces.
    """

    write: Callable[[Any], Sequence[str]]
    record: Any = None
    written: list[str] = field(default_factory=list)
    targets: Sequence[str] = ()

    def __call__(self, record: Any) -> list[str]:
        """Write ``record``; returns the files this call wrote."""
        self.record = record
        paths = list(self.write(record))
        for path in paths:
            if path not in self.written:
                self.written.append(path)
        return paths

    def where(self) -> str:
        """``"; partial results written to a.partial.json (a.json left as it was)"`` for the files
        that exist, else ``""``."""
        if not self.written:
            return ""
        kept = [t for t in self.targets if t not in self.written and os.path.exists(t)]
        left = f" ({', '.join(kept)} left as {'it was' if len(kept) == 1 else 'they were'})" if kept else ""
        return f"; partial results written to {', '.join(self.written)}{left}"


@dataclass(frozen=True)
class SweepOutput:
    """How a sweep's result becomes output (all called on rank 0 only).

    Attributes:
        to_record: (result, complete) -> RunRecord.
        text: the whole table of a result (printed at the end, or of the partial result on a stop).
        done: what a partial result holds, e.g. ``"2 of 4 sizes"``.
        stream: prints the rows that are new since the last call (tables that grow as sizes finish).
        footer: what follows streamed rows at the end (instead of ``text``).
    """

    to_record: Callable[[Any, bool], Any]
    text: Callable[[Any], str]
    done: Callable[[Any], str]
    stream: Callable[[Any], None] | None = None
    footer: Callable[[Any], str] | None = None


def run_sweep(job: Job, run: Callable[[Callable[[Any], None] | None, StopSignal], R | None], out: SweepOutput,
              checkpoint: Checkpoint, echo: Callable[[str], None]) -> int:
    """Run one sweep under the stop-signal guard and finish it; returns the exit code.

    ``run(on_step, stop)`` calls the runner, which calls ``on_step(result_so_far)`` on rank 0 after
    every finished step and checks ``stop`` at each boundary. On rank 0, every step streams the new
    rows and rewrites the checkpoint; at the end rank 0 prints and writes the complete record
    (exit 3 when a measurement failed its data check). On an interrupt: the partial record and
    table, one line on stderr naming only files that exist, and 130 on every rank.
    """

    def on_step(partial: Any) -> None:
        checkpoint(out.to_record(partial, False))  # on disk before its rows are shown
        if out.stream is not None:
            out.stream(partial)

    try:
        with stop_on_signal(job) as stop:
            result = run(on_step if job.rank == 0 else None, stop)
    except RunInterrupted as exc:
        if job.rank == 0:
            _finish_interrupted(exc.partial, out, checkpoint)
        if not exc.agreed and job.size > 1:
            job.comm.Abort(EXIT_INTERRUPTED)
        return EXIT_INTERRUPTED
    if result is None:
        return 0
    echo(out.footer(result) if out.stream is not None and out.footer is not None else out.text(result))
    record = out.to_record(result, True)
    for path in checkpoint(record):  # the complete record: each file the user named, said once
        sys.stderr.write(f"wrote {path}\n")
    if record.measurements and all(m.status.value == "waived" for m in record.measurements):
        sys.stderr.write("linkscope: error: nothing was measured: every entry was waived (reasons in the JSON 'reason' fields)\n")
        return EXIT_WITH_ERRORS
    return EXIT_WITH_ERRORS if record.errors else 0


def _finish_interrupted(partial: Any, out: SweepOutput, checkpoint: Checkpoint) -> None:
    what = out.done(partial) if partial is not None else "nothing"
    if partial is not None:
        table = out.footer(partial) if out.stream is not None and out.footer is not None else out.text(partial)
        if table:
            sys.stdout.write(table)
            sys.stdout.flush()
        record = out.to_record(partial, False)
        checkpoint(record.with_(findings=tuple(record.findings) + (f"interrupted: {what} finished",)))
    sys.stderr.write(f"linkscope: interrupted after {what} finished{checkpoint.where()}\n")
    sys.stderr.flush()
