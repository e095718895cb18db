"""SIGTERM and SIGHUP end a command as Ctrl-C does.

A batch system's time limit (SIGTERM from Slurm, ``kill``), a closed terminal or ssh session
(SIGHUP) and Ctrl-C (SIGINT) all stop a run the same way: ``Terminated``, a ``KeyboardInterrupt``,
is raised in the main thread, so every runner's interrupt path runs (the partial record goes to
the sidecar ``NAME.partial.json``, the complete file of an earlier run is left as it was) and the
command exits 128 + the signal's number (``interrupt_status``: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)
with one line naming the signal and the partial files. (Multi-rank sweeps exit 130 on every rank:
the ranks agree on one stop, whatever signal each got.)

A main thread inside one long native call (SciPy, NumPy on a large fabric) runs no Python handler
until the call returns; a watchdog thread sees the signal at once (``signal.set_wakeup_fd``) and, when
the handler has not run ``STUCK_GRACE_S`` later, prints the line and ends the process with the same
status: a simulation stops within a second of SIGTERM, whatever it is computing.

The handlers are installed for the duration of ``cli.main`` only, in the main thread only. The
first SIGTERM/SIGHUP raises; later ones are ignored while that interrupt writes what was finished
(a supervisor that wants the process gone sends SIGKILL, which loses nothing either: the target
file was never touched). Multi-rank sweeps install their own handlers while they run
(``measure.sweep.stop_on_signal``: the ranks agree on a stop at a size boundary) and put these back
afterwards.
"""
from __future__ import annotations

import os
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


STUCK_GRACE_S = 0.5
"""How long the main thread may take to act on a signal before the watchdog ends the process. Python
runs a signal handler only between bytecodes: inside one long native call (SciPy's shortest paths on
a 32,768-GPU fabric, a NumPy operation on a large matrix) a SIGTERM waited 13-60 s."""


class _Watchdog:
    """Sees every handled signal at once through ``signal.set_wakeup_fd`` (written by the C-level
    handler even while the main thread is inside native code); when the main thread has not run the
    Python handler ``STUCK_GRACE_S`` later, it writes the one line and ends the process with 128 + the
    signal. It stands down when the handler ran (the main thread is writing what was finished) and when
    another handler has replaced linkscope's (a multi-rank sweep's coordinated stop)."""

    def __init__(self, handlers: dict[int, Any], answered: threading.Event, grace_s: float) -> None:
        self.handlers, self.answered, self.grace_s = handlers, answered, grace_s
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.write_fd, False)
        self.previous_fd = signal.set_wakeup_fd(self.write_fd, warn_on_full_buffer=False)
        self.thread = threading.Thread(target=self._watch, name="linkscope-signal-watchdog", daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while True:
            try:
                data = os.read(self.read_fd, 64)
            except OSError:
                return
            if not data or 0 in data:  # closed, or the stop byte
                return
            for signum in data:
                ours = self.handlers.get(signum)
                if ours is None or self.answered.wait(self.grace_s):
                    continue
                if signal.getsignal(signum) is not ours:  # a sweep's own handler took over
                    continue
                name = signal.Signals(signum).name
                os.write(2, f"linkscope: error: interrupted by {name} (inside a long computation: stopped "
                            f"after {self.grace_s:g} s; results written before are kept)\n".encode())
                os._exit(128 + signum)

    def stop(self) -> None:
        signal.set_wakeup_fd(self.previous_fd)
        try:
            os.write(self.write_fd, b"\0")
        except OSError:
            pass
        self.thread.join(timeout=5)
        os.close(self.write_fd)
        os.close(self.read_fd)


@contextmanager
def stop_signals(grace_s: float = STUCK_GRACE_S) -> Iterator[None]:
    """SIGTERM and SIGHUP raise ``Terminated``, SIGINT ``KeyboardInterrupt``, in the main thread while
    the block runs; a main thread stuck in native code is ended ``grace_s`` after the signal
    (``_Watchdog``)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised: list[int] = []
    answered = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        answered.set()
        if raised:  # the first one is being handled: let it write what was finished
            return
        raised.append(signum)
        raise Terminated(signum)

    def on_interrupt(signum: int, frame: Any) -> None:
        answered.set()
        raise KeyboardInterrupt()

    previous: dict[int, Any] = {}
    ours: dict[int, Any] = {}
    for sig, handler in [*((sig, on_signal) for sig in HANDLED), (signal.SIGINT, on_interrupt)]:
        if signal.getsignal(sig) is signal.SIG_IGN:
            continue  # nohup, or a background job of a script: the signal was asked to be ignored
        try:
            previous[sig] = signal.signal(sig, handler)
            ours[sig] = handler
        except (OSError, ValueError):  # pragma: no cover - platforms without the signal
            continue
    watchdog = _Watchdog(ours, answered, grace_s) if ours else None
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if watchdog is not None:
            watchdog.stop()
