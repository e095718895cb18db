"""Numeric tables sent to a pipe keep one row a line (200 columns) unless COLUMNS says how wide the reader is."""
from __future__ import annotations

import subprocess
import sys


def _widest(env_columns: str | None) -> int:
    import os

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if env_columns is not None:
        env["COLUMNS"] = env_columns
    out = subprocess.run([sys.executable, "-m", "linkscope", "topo", "--preset", "mi250x-8gcd"], capture_output=True,
                         text=True, env=env, check=True).stdout
    return max(len(line) for line in out.splitlines())


def test_columns_sets_the_width_of_a_piped_numeric_table():
    assert _widest("100") <= 100
    assert 100 < _widest(None) <= 200
