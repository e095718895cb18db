"""Waiting for a child process without going deaf to signals.

A signal can be delivered to any thread of the process. While the main thread sits in one blocking
``waitpid`` (``Popen.wait()`` without a timeout) it never returns to Python, so the Python-level handler
(``cli.signals``) does not run; its watchdog then ends linkscope after half a second without the
command's own cleanup (audit's launcher group, watch's command). A CI run of 2026-11-28 saw a launcher
that ignores SIGTERM outlive audit that way. ``wait_in_slices`` waits in short slices and returns to
Python between them, so the handler runs within one slice.

The other window is a child's start: a signal handled between ``Popen`` starting the child and the line that
keeps its handle raises where nothing can end that child yet (a CI run of 2026-11-28, 18:10 UTC: SIGTERM sent to
audit as soon as its launcher had started left the launcher and its child running). ``signals_held`` holds
SIGINT, SIGTERM and SIGHUP over that window and delivers them when it closes.
"""
from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

WAIT_SLICE_S = 0.05


def wait_in_slices(proc: subprocess.Popen, timeout_s: float | None = None) -> int:
    """``proc.wait(timeout_s)`` in slices of ``WAIT_SLICE_S`` (signal handlers run between them);
    ``subprocess.TimeoutExpired`` once ``timeout_s`` has passed."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        left = WAIT_SLICE_S if deadline is None else min(WAIT_SLICE_S, deadline - time.monotonic())
        if left <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout_s or 0.0)
        try:
            return proc.wait(timeout=left)
        except subprocess.TimeoutExpired:
            continue


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP (those with a Python handler) over the block: one that comes meanwhile is
    delivered to that handler when the block ends. Start a child and keep its handle inside the block, and the
    handler's exception comes where the child can be ended. Outside the main thread (no handlers there) it holds
    nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    held: dict[int, Any] = {}
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None and callable(signal.getsignal(sig)):
            held[sig] = signal.signal(sig, lambda number, _frame: pending.append(number))
    try:
        yield
    finally:
        for sig, handler in held.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(pending):
            signal.raise_signal(sig)
