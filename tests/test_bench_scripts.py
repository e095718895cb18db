"""The bench scripts' command lines: --help answers and writes nothing (it used to run the
benchmark and write a file named ``--help``)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_mapping_scale_help_runs_nothing(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "mapping_scale.py"), "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env={"PYTHONPATH": str(ROOT / "src"),
                                                                          "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "usage: bench/mapping_scale.py" in done.stdout and "--only" in done.stdout
    assert list(tmp_path.iterdir()) == []  # no benchmark ran, no file named --help (or any other)
