"""Nothing already measured is lost (issue 25): real child processes are killed, terminated, hung up
on, interrupted or denied their final write at chosen moments, and the complete file of an earlier
run must be left byte for byte, with the partial results in the sidecar ``NAME.partial.json``.

Each child runs ``tests/cli/hold_run.py``, which stops the simulated run at a chosen moment and
says ``HOLD`` on stderr; the test waits for that line (an event, never a fixed sleep), then acts.
"""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOLD = Path(__file__).with_name("hold_run.py")
OLD = b'{"format": "yesterday\'s complete result", "complete": true}\n'
SURVEY = ["survey", "--preset", "hgx-h200-4", "--no-report", "--time-budget", "5ms"]


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), NO_COLOR="1")
    env.pop("LINKSCOPE_DEBUG", None)
    return env


def _start(hold: str, argv: list[str], **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(HOLD), hold, "--", *argv], cwd=ROOT, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _wait_for_hold(proc: subprocess.Popen) -> str:
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.strip() == "HOLD":
            return "".join(seen)
        seen.append(line)
    proc.wait(timeout=60)
    raise AssertionError(f"the child ended (exit {proc.returncode}) before it held: {''.join(seen)}")


def _finish(proc: subprocess.Popen) -> tuple[int, str]:
    _, err = proc.communicate(timeout=120)  # a guard against a hung child, not a timing assertion
    return proc.returncode, err


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["KILL", "TERM", "HUP", "INT"])
@pytest.mark.parametrize("hold", ["run:13", "run:40"])  # after the first survey step; in the middle
def test_survey_stopped_mid_run_leaves_the_old_file(tmp_path, signum, hold):
    target = tmp_path / "survey.json"
    target.write_bytes(OLD)
    proc = _start(hold, [*SURVEY, "-o", str(target)])
    _wait_for_hold(proc)
    sidecar = tmp_path / "survey.partial.json"
    assert sidecar.exists(), "a finished step is checkpointed before the next one starts"
    proc.send_signal(signum)
    code, err = _finish(proc)
    assert target.read_bytes() == OLD
    partial = json.loads(sidecar.read_text())
    assert partial["complete"] is False and partial["measurements"]
    if signum == signal.SIGKILL:
        assert code == -signal.SIGKILL
        return
    assert code == 128 + signum, err  # 130 INT, 143 TERM, 129 HUP: as a shell reports the signal
    assert "Traceback" not in err
    line = " ".join(err.split())
    by = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
    assert f"linkscope: interrupted{by}; partial results written to {sidecar} ({target} left as it was)" in line, err


def test_kill_during_the_final_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "survey.json"
    target.write_bytes(OLD)
    proc = _start("final", [*SURVEY, "-o", str(target)])
    _wait_for_hold(proc)  # the complete record is in a temporary file beside the target
    proc.send_signal(signal.SIGKILL)
    _finish(proc)
    assert target.read_bytes() == OLD
    assert json.loads((tmp_path / "survey.partial.json").read_text())["complete"] is False


def test_term_during_the_final_write_leaves_the_old_file(tmp_path):
    target = tmp_path / "survey.json"
    target.write_bytes(OLD)
    proc = _start("final", [*SURVEY, "-o", str(target)])
    _wait_for_hold(proc)
    proc.send_signal(signal.SIGTERM)
    code, err = _finish(proc)
    assert code == 143 and "Traceback" not in err, err
    assert target.read_bytes() == OLD


def test_failed_final_write_leaves_the_old_file_and_names_the_partial_results(tmp_path):
    """RLIMIT_FSIZE below the complete record's size: the checkpoints fit, the final write fails."""
    complete = tmp_path / "complete.json"
    done = subprocess.run([sys.executable, "-m", "linkscope", *SURVEY, "-o", str(complete)], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    limit = complete.stat().st_size - 1
    target = tmp_path / "survey.json"
    target.write_bytes(OLD)

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    failed = subprocess.run([sys.executable, "-m", "linkscope", *SURVEY, "-o", str(target)], cwd=ROOT, env=_env(),
                            capture_output=True, text=True, timeout=120, preexec_fn=small_files)
    err = " ".join(failed.stderr.split())
    assert failed.returncode == 1 and "Traceback" not in err, failed.stderr
    sidecar = tmp_path / "survey.partial.json"
    assert (f"linkscope: error: cannot write {target}: File too large; {target} was left as it was; "
            f"the partial results of this run are in {sidecar}") in err
    assert target.read_bytes() == OLD
    assert json.loads(sidecar.read_text())["complete"] is False
    assert not list(tmp_path.glob(".linkscope-*"))


def test_a_complete_run_replaces_the_file_and_removes_the_sidecar(tmp_path):
    target, sidecar = tmp_path / "survey.json", tmp_path / "survey.partial.json"
    target.write_bytes(OLD)
    sidecar.write_text("{}\n")  # left by a run killed earlier
    done = subprocess.run([sys.executable, "-m", "linkscope", *SURVEY, "-o", str(target)], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(target.read_text())["complete"] is True
    assert not sidecar.exists()


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["KILL", "TERM"])
def test_bench_json_and_csv_stopped_mid_run_leave_the_old_files(tmp_path, signum):
    js, csv = tmp_path / "run.json", tmp_path / "run.csv"
    js.write_bytes(OLD)
    csv.write_bytes(b"old,csv\n")
    proc = _start("run:4", ["bench", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "1MiB,2MiB",
                            "--reps", "3", "--json", str(js), "--csv", str(csv)])
    _wait_for_hold(proc)
    proc.send_signal(signum)
    code, err = _finish(proc)
    assert js.read_bytes() == OLD and csv.read_bytes() == b"old,csv\n"
    assert json.loads((tmp_path / "run.partial.json").read_text())["complete"] is False
    assert (tmp_path / "run.partial.csv").exists()
    if signum == signal.SIGTERM:
        assert code == 143 and "interrupted by SIGTERM" in err, err


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("argv", [["topo", "--preset", "hgx-h200-4"], ["topo", "--preset", "hgx-h200-4", "--json", "-"],
                                  ["bench", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--reps", "3",
                                   "--json", "-"]])
def test_stdout_to_a_full_device_is_one_line(argv):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "linkscope", *argv], cwd=ROOT, env=_env(), stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("linkscope: error: ")]
    assert errors == ["linkscope: error: cannot write the output: No space left on device (stdout or a file it was "
                      "redirected to)"], done.stderr


def test_stop_signals_keep_an_ignored_hangup_and_restore_handlers():
    """nohup ignores SIGHUP: linkscope keeps it ignored; SIGTERM raises Terminated (a KeyboardInterrupt)."""
    from linkscope.cli.signals import Terminated, interrupt_name, stop_signals

    before_hup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    before_term = signal.getsignal(signal.SIGTERM)
    try:
        with stop_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            with pytest.raises(Terminated) as info:
                os.kill(os.getpid(), signal.SIGTERM)  # Python runs the handler before the next bytecode
                for _ in range(1000):
                    pass
            assert isinstance(info.value, KeyboardInterrupt) and interrupt_name(info.value) == "SIGTERM"
        assert signal.getsignal(signal.SIGTERM) == before_term
    finally:
        signal.signal(signal.SIGHUP, before_hup)
