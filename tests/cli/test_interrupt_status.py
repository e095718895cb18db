"""Interrupts and closed pipes end every command the same way (issue 40): one line and 128 + the
signal's number (130 Ctrl-C, 143 SIGTERM), never the bare exit 130 of the CLI framework; a reader
that stops reading (``| head``) ends it quietly with 141, never a traceback or a silent exit 1.

Each child is held (tests/cli/hold_run.py ``read``) at the moment it reads its first input; the test
waits for that line, then signals: no sleeps, no races."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from linkscope.cli import main

ROOT = Path(__file__).resolve().parents[2]
HOLD = Path(__file__).with_name("hold_run.py")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT / "src"), NO_COLOR="1")


def _default_signals() -> None:
    """In the child: SIGINT as a terminal's foreground job has it (a test runner's worker may ignore
    it, and an ignored SIGINT is inherited, and rightly kept by linkscope)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("inputs")
    assert main(["traffic", "gen", "ring", "--ranks", "4", "-o", str(folder / "t.json")]) == 0
    assert main(["bench", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--reps", "3",
                 "--json", str(folder / "run.json")]) == 0
    (folder / "nvb.txt").write_text("nvbandwidth Version: v0.8\nRunning device_local_copy.\n"
                                    "memcpy local GPU(column) bandwidth (GB/s)\n           0\n 0   1512.30\n")
    return folder


COMMANDS = {
    "check": ["check", "{f}/nvb.txt", "--preset", "dgx-h100"],
    "map": ["map", "{f}/t.json", "--preset", "hgx-h200-4"],
    "report": ["report", "{f}/run.json", "-o", "{f}/r.html"],
    "model-check": ["model", "check", "{f}/run.json"],
}


@pytest.mark.parametrize("signum, status, line", [
    (signal.SIGINT, 130, "linkscope: error: interrupted"),
    (signal.SIGTERM, 143, "linkscope: error: interrupted by SIGTERM"),
], ids=["INT", "TERM"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_interrupt_is_one_line_and_the_conventional_status(inputs, name, signum, status, line):
    argv = [w.format(f=inputs) for w in COMMANDS[name]]
    proc = subprocess.Popen([sys.executable, str(HOLD), "read", "--", *argv], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals)
    assert proc.stderr is not None and proc.stderr.readline().strip() == "HOLD"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)  # a guard against a hang, not a timing assertion
    assert proc.returncode == status, err
    assert err.strip().splitlines() == [line], err


@pytest.mark.parametrize("argv", [["topo", "--preset", "dgx-h100"], ["traffic", "show", "{f}/t.json"],
                                  ["map", "{f}/t.json", "--preset", "hgx-h200-4"],
                                  ["check", "{f}/nvb.txt", "--preset", "dgx-h100"],
                                  ["traffic", "show", "{f}/t.json", "--json", "-"]])
def test_a_closed_pipe_ends_quietly_with_141(inputs, argv):
    """``linkscope ... | head`` exited 1 silently (the CLI framework's own broken-pipe handling)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "linkscope", *[w.format(f=inputs) for w in argv]], env=_env(),
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.returncode == 141, done.stderr
    assert done.stderr == "", done.stderr


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["TERM", "INT"])
def test_a_simulation_inside_native_code_stops_at_once(signum, status):
    """``bench --backend sim`` on a large fabric acted on SIGTERM 13-60 s late: Python runs handlers
    only between bytecodes. Here the run is held in one native call that would take hours; the
    communicate() guard is what fails when the signal is not acted on."""
    import time

    proc = subprocess.Popen([sys.executable, str(HOLD), "native", "--", "bench", "--backend", "sim", "--preset",
                             "hgx-h200-4", "--sizes", "1MiB"], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_signals)
    assert proc.stderr is not None and proc.stderr.readline().strip() == "HOLD"
    sent = time.monotonic()
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    assert proc.returncode == status, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("linkscope: ") and "interrupted" in lines[0], err
    assert took < 30, took  # a guard: the watchdog ends it 0.5 s after the signal
