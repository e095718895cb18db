"""The guide's and the README's examples run, and what they print is what they show (a doc-test of the CLI).

A code block of docs/guide.md or README.md preceded by a line ``<!-- doctest -->`` is checked. Its
lines ``$ linkscope ARGS`` are run in order, each followed by the lines it must print (its expected
output); ``$ cd ...`` lines are skipped. Commands run with the checkout's ``src`` first on the path,
from a scratch folder that holds links to the checkout's ``docs`` and ``tests`` (so ``docs/runs/...``
is read and ``-o cal.json`` lands in the scratch folder), or from the checkout folder the marker names
(``<!-- doctest: cwd tests/fixtures/peertools -->``, for commands that only read). An expected line
matches an output line when its pieces between ``...`` / ``…`` elisions appear in that line in order
(whitespace collapsed); a line of just ``...`` stands for lines left out. The lines must match in
order. ``<!-- doctest: exit N -->`` is a last command that must exit N.

Every number quoted with a unit (GB/s, µs, us, ms, s, %, x) in those files outside such a block must
be one a doc-test block of the same file checks, or a measured one quoted from docs/benchmarks.md
(where each has its device, date and command) or a kept record under docs/runs:
``test_every_number_has_a_source``. So a simulated number that drifts fails its doc-test, and a
measured one must have its source.
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
README = ROOT / "README.md"
DOCS = (GUIDE, README)
MARK = re.compile(r"^<!-- doctest(?::\s*(.*?))?\s*-->\s*$")


def _options(text: str | None) -> tuple[int, str | None]:
    code, cwd = 0, None
    for part in (p.strip() for p in (text or "").split(",") if p.strip()):
        key, _, value = part.partition(" ")
        if key == "exit":
            code = int(value)
        elif key == "cwd":
            cwd = value.strip()
        else:
            raise AssertionError(f"unknown doctest option {part!r}")
    return code, cwd


def _block_lines(lines: list[str], start: int) -> tuple[list[str], set[int]]:
    """The indented block after line ``start`` (its text and its line indices)."""
    j = start + 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    body, where = [], set()
    while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
        if not lines[j].strip() and (j + 1 >= len(lines) or not lines[j + 1].startswith("    ")):
            break
        body.append(lines[j][4:])
        where.add(j)
        j += 1
    return body, where


def blocks(text: str, name: str = "guide.md") -> list[tuple[str, int, str | None, list[tuple[str, list[str]]]]]:
    """(where, expected exit code of the last command, cwd, [(command, expected lines)]) of every marked block."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        mark = MARK.match(line)
        if not mark:
            continue
        code, cwd = _options(mark.group(1))
        body, _ = _block_lines(lines, i)
        runs: list[tuple[str, list[str]]] = []
        for b in body:
            if b.startswith("$ cd "):
                continue
            if b.startswith("$ linkscope "):
                runs.append((b[2:].split("  #")[0].strip(), []))
            elif b.strip():
                assert runs, f"{name}:{i + 1}: a doctest block starts with '$ linkscope'"
                runs[-1][1].append(b)
        assert runs, f"{name}:{i + 1}: a doctest block starts with '$ linkscope'"
        out.append((f"{name}:{i + 1}", code, cwd, runs))
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


GUIDE_BLOCKS = [b for path in DOCS for b in blocks(path.read_text(), path.name)]


def test_the_guide_has_checked_examples():
    assert len(GUIDE_BLOCKS) >= 5


def test_the_matcher_fails_on_a_changed_number():
    out = "│      GPU0 │    - │ 26.9 │  8.4 │\n"
    assert check_output(["│      GPU0 │    - │ 26.9 │  8.4 │"], out) == []
    assert check_output(["│      GPU0 │    - │ 26.9 │  9.4 │"], out) != []
    assert check_output(["│ GPU0 │ - │ 26.9 │ ..."], out) == []


def _scratch(tmp_path: Path) -> Path:
    for name in ("docs", "tests"):
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


@pytest.mark.parametrize("where,code,cwd,runs", GUIDE_BLOCKS, ids=[b[0] for b in GUIDE_BLOCKS])
def test_guide_example(where, code, cwd, runs, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), COLUMNS="200", NO_COLOR="1", TERM="dumb")
    folder = ROOT / cwd if cwd else _scratch(tmp_path)
    for n, (command, expected) in enumerate(runs):
        done = subprocess.run([sys.executable, "-m", "linkscope", *shlex.split(command)[1:]], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600)
        want = code if n == len(runs) - 1 else 0
        assert done.returncode == want, f"{where}: `{command}` exited {done.returncode}\n{done.stderr[-2000:]}"
        missing = check_output(expected, done.stdout + done.stderr)
        assert not missing, (f"{where}: `{command}` no longer prints these lines:\n" + "\n".join(missing)
                             + "\n--- it printed:\n" + (done.stdout + done.stderr)[-4000:])


NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(GB/s|µs|us|ms|s\b|%|x\b|×)")


def unsourced_numbers(text: str, sources: str) -> list[str]:
    """Numbers with a unit outside doctest blocks that no source quotes (module docstring)."""
    lines = text.splitlines()
    skip: set[int] = set()
    for i, line in enumerate(lines):
        if MARK.match(line):
            skip |= _block_lines(lines, i)[1]
    tested = "\n".join(lines[k] for k in skip)  # prose may quote what a doc-test checks
    sources = sources + "\n" + tested
    out = []
    for k, line in enumerate(lines):
        if k in skip:
            continue
        for m in NUMBER.finditer(line):
            number = m.group(1)
            quoted = re.compile(rf"(?<![\w.]){re.escape(number)}(?![\d])")
            if not quoted.search(sources):  # the number itself, not digits inside a longer one
                out.append(f"{k + 1}: {m.group(0)}: {line.strip()[:120]}")
    return out


def _sources() -> str:
    kept = [p.read_text(errors="replace") for p in sorted((ROOT / "docs" / "runs").rglob("*")) if p.is_file()
            and p.suffix in (".json", ".txt", ".md")]
    return "\n".join([(ROOT / "docs" / "benchmarks.md").read_text(), *kept])


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_every_number_has_a_source(path):
    missing = unsourced_numbers(path.read_text(), _sources())
    assert not missing, f"{path.name}: numbers neither doc-tested nor in docs/benchmarks.md or docs/runs:\n" + "\n".join(missing)


def test_a_number_without_a_source_is_found():
    text = "prose 12.5 GB/s here\n\n<!-- doctest -->\n\n    $ linkscope env\n    99.9 GB/s\n"
    assert unsourced_numbers(text, "nothing") == ["1: 12.5 GB/s: prose 12.5 GB/s here"]
    assert unsourced_numbers(text, "quoted 12.5 GB/s there") == []
    assert unsourced_numbers(text, "112.5 GB/s or 12.55 us") != []  # digits inside another number are no source


def test_the_guide_quotes_the_one_definition_of_an_aggregate_rate():
    """Issue 39: the guide said a total "sums several flows" (line 8) and "not a sum" (line 163); the
    findings, the tables, the report caption and the guide now read one definition."""
    from linkscope.report.figures import contention_figure  # noqa: F401  (the caption reads the same constant)
    from linkscope.results.findings import AGGREGATE_RATE_MEANING

    text = " ".join(GUIDE.read_text().split())
    assert AGGREGATE_RATE_MEANING in text
    assert "sums several flows" not in text
