"""Waiting for a child process without going deaf to signals.

A signal can be delivered to any thread of the process. While the main thread sits in one blocking
``waitpid`` (``Popen.wait()`` without a timeout) it never returns to Python, so the Python-level handler
(``cli.signals``) does not run; its watchdog then ends linkscope after half a second without the
command's own cleanup (audit's launcher group, watch's command). A CI run of 2026-11-28 saw a launcher
that ignores SIGTERM outlive audit that way. ``wait_in_slices`` waits in short slices and returns to
Python between them, so the handler runs within one slice.
"""
from __future__ import annotations

import subprocess
import time

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
