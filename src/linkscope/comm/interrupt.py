"""Ctrl-C in a multi-process sweep: every rank stops at the same point and nothing measured is lost.

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

import signal
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, TypeVar

from .launch import Job

T = TypeVar("T")

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

    def on_signal(signum: int, frame: Any) -> None:  # noqa: ARG001
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
        for sig, handler in previous.items():
            signal.signal(sig, handler)
