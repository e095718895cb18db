"""The guide's examples run, and what they print is what the guide shows (a doc-test of the CLI).

A code block of docs/guide.md preceded by the line ``<!-- doctest -->`` is checked: its first line
is ``$ linkscope ARGS`` (run from a scratch folder, with the checkout's ``src`` first on the path);
every other line is expected output. An expected line matches an output line when its pieces
between ``...`` / ``…`` elisions appear in that line in order (whitespace collapsed); a line of
just ``...`` stands for lines left out. The lines must match in order. A block may say
``<!-- doctest: exit N -->`` for a command that must exit N.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide.md"
MARK = re.compile(r"^<!-- doctest(?::\s*exit (\d+))? -->\s*$")


def blocks(text: str) -> list[tuple[int, int, str, list[str]]]:
    """(line number, expected exit code, command, expected lines) of every marked block."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        mark = MARK.match(line)
        if not mark:
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        body = []
        while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
            if not lines[j].strip() and (j + 1 >= len(lines) or not lines[j + 1].startswith("    ")):
                break
            body.append(lines[j][4:])
            j += 1
        assert body and body[0].startswith("$ linkscope "), f"guide.md:{i + 1}: a doctest block starts with '$ linkscope'"
        out.append((i + 1, int(mark.group(1) or 0), body[0][2:], [b for b in body[1:] if b.strip()]))
    return out


def _norm(text: str) -> str:
    return " ".join(text.split())


def matches(expected: str, actual: str) -> bool:
    pieces = [_norm(p) for p in re.split(r"\.\.\.|…", expected) if _norm(p)]
    at = 0
    norm = _norm(actual)
    for piece in pieces:
        k = norm.find(piece, at)
        if k < 0:
            return False
        at = k + len(piece)
    return True


def check_output(expected: list[str], output: str) -> list[str]:
    """The expected lines not found, in order, in ``output`` (empty when the block holds)."""
    lines = output.splitlines()
    at = 0
    missing = []
    for exp in expected:
        if _norm(exp) in ("...", "…"):
            continue
        k = next((n for n in range(at, len(lines)) if matches(exp, lines[n])), None)
        if k is None:
            missing.append(exp)
        else:
            at = k + 1
    return missing


GUIDE_BLOCKS = blocks(GUIDE.read_text())


def test_the_guide_has_checked_examples():
    assert len(GUIDE_BLOCKS) >= 5


def test_the_matcher_fails_on_a_changed_number():
    out = "│      GPU0 │    - │ 26.9 │  8.4 │\n"
    assert check_output(["│      GPU0 │    - │ 26.9 │  8.4 │"], out) == []
    assert check_output(["│      GPU0 │    - │ 26.9 │  9.4 │"], out) != []
    assert check_output(["│ GPU0 │ - │ 26.9 │ ..."], out) == []


@pytest.mark.parametrize("line,code,command,expected", GUIDE_BLOCKS, ids=[f"guide.md:{b[0]}" for b in GUIDE_BLOCKS])
def test_guide_example(line, code, command, expected, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLUMNS="200", NO_COLOR="1", TERM="dumb")
    args = shlex.split(command)[1:]
    done = subprocess.run([sys.executable, "-m", "linkscope", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == code, f"guide.md:{line}: `{command}` exited {done.returncode}\n{done.stderr[-2000:]}"
    missing = check_output(expected, done.stdout + done.stderr)
    assert not missing, (f"guide.md:{line}: `{command}` no longer prints these lines:\n" + "\n".join(missing)
                         + "\n--- it printed:\n" + (done.stdout + done.stderr)[-4000:])
