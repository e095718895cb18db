"""SIGTERM and SIGHUP end a command as Ctrl-C does.

A batch system's time limit (SIGTERM from Slurm, ``kill``), a closed terminal or ssh session
(SIGHUP) and Ctrl-C (SIGINT) all stop a run the same way: ``Terminated``, a ``KeyboardInterrupt``,
is raised in the main thread, so every runner's interrupt path runs (the partial record goes to
the sidecar ``NAME.partial.json``, the complete file of an earlier run is left as it was) and the
command exits 128 + the signal's number (``interrupt_status``: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)
with one line naming the signal and the partial files. (Multi-rank sweeps exit 130 on every rank:
the ranks agree on one stop, whatever signal each got.)

The handlers are installed for the duration of ``cli.main`` only, in the main thread only. The
first SIGTERM/SIGHUP raises; later ones are ignored while that interrupt writes what was finished
(a supervisor that wants the process gone sends SIGKILL, which loses nothing either: the target
file was never touched). Multi-rank sweeps install their own handlers while they run
(``measure.sweep.stop_on_signal``: the ranks agree on a stop at a size boundary) and put these back
afterwards.
"""
from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["HANDLED", "Terminated", "interrupt_name", "interrupt_status", "stop_signals"]

HANDLED = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(KeyboardInterrupt):
    """A stop requested by SIGTERM or SIGHUP (handled as Ctrl-C's KeyboardInterrupt)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def interrupt_name(exc: BaseException | None = None) -> str:
    """``"SIGTERM"`` / ``"SIGHUP"`` for a Terminated (the one being handled when ``exc`` is None),
    else ``"Ctrl-C"`` (SIGINT)."""
    if exc is None:
        exc = sys.exc_info()[1]
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:  # a RunInterrupted raised from a Terminated
        if isinstance(exc, Terminated):
            return exc.name
        seen.add(id(exc))
        exc = exc.__context__
    return "Ctrl-C"


def interrupt_status(exc: BaseException | None = None) -> int:
    """The exit status of a command an interrupt ended: 128 + the signal's number, as a shell reports
    a process that signal ended (130 SIGINT, 143 SIGTERM, 129 SIGHUP)."""
    if exc is None:
        exc = sys.exc_info()[1]
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, Terminated):
            return 128 + exc.signum
        seen.add(id(exc))
        exc = exc.__context__
    return 128 + signal.SIGINT


@contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``Terminated`` in the main thread while the block runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        if raised:  # the first one is being handled: let it write what was finished
            return
        raised.append(signum)
        raise Terminated(signum)

    previous: dict[int, Any] = {}
    for sig in HANDLED:
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue  # nohup and friends asked for the signal to be ignored: keep it so
        try:
            previous[sig] = signal.signal(sig, on_signal)
        except (OSError, ValueError):  # pragma: no cover - platforms without the signal
            continue
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
