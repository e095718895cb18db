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

Every number quoted with a unit (GB/s, µs, us, ms, s, MiB, GiB, %, x) in those files outside such a
block must be one a doc-test block of the same file prints with that unit, or a measured one quoted from
docs/benchmarks.md (where each has its device, date and command) or a kept record under docs/runs, with
its unit (a table's header names the unit of its cells; a record's key names the unit of its value):
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


#: A quoted number and its unit; a run of numbers before one unit ("369.3 / 373.5 GB/s", "0.60–0.62 µs",
#: "45% to 63%") gives the unit to each. ``x`` and ``×`` count only written against the number ("1.5x"):
#: "6 x RTX A6000" is a count of cards.
_UNIT = r"(GB/s|µs|us|ms|s|MiB|GiB|%|x|×)"
_NUM = r"\d+(?:\.\d+)?"
QUOTE = re.compile(rf"(?<![\w.])([−-]?{_NUM}%?(?:\s*(?:/|–|-|to)\s*[−-]?{_NUM})*)(\s?){_UNIT}(?![\w/])")
SAME_UNIT = {"µs": "us", "×": "x"}
#: Table headers name the unit of their cells ("linkscope (µs, 2 runs)", "GB/s", "│ median │"): these.
HEADER_UNIT = re.compile(r"GB/s|µs|\bus\b|\bms\b|MiB|GiB|%|\(s\)")
TABLE_ROW = re.compile(r"^\s*[|│┃┏┡└┌├╭╰━─]")
#: A JSON value's unit from its key (``median_gb_per_s``, ``latency_us``, Stats under ``bandwidth`` / ``latency``).
JSON_UNIT = (("gb_per_s", "GB/s"), ("_us", "us"), ("_ms", "ms"), ("_s", "s"), ("bandwidth", "GB/s"), ("latency", "us"))


def quotes(line: str) -> list[tuple[str, str]]:
    """(number, unit) of every number quoted with a unit in ``line`` (unit spelled one way: µs as us, × as x)."""
    out = []
    for m in QUOTE.finditer(line):
        numbers, space, unit = m.groups()
        if unit in ("x", "×") and space:
            continue
        unit = SAME_UNIT.get(unit, unit)
        out += [(n.lstrip("−-"), unit) for n in re.findall(_NUM, numbers)]
    return out


#: A value after a name with a unit suffix in printed text: ``fitted overhead_us.ce = 1.967``.
NAMED = re.compile(rf"[a-z]_(us|ms|s|gb_per_s)\b[\w.-]*\s*[=:]\s*({_NUM})")
NAMED_UNIT = {"us": "us", "ms": "ms", "s": "s", "gb_per_s": "GB/s"}


def _table_quotes(lines: list[str]) -> set[tuple[str, str]]:
    """Bare numbers in table rows, with the units the table's header (or the caption line just above it) names."""
    out: set[tuple[str, str]] = set()
    k = 0
    while k < len(lines):
        if not TABLE_ROW.match(lines[k]):
            k += 1
            continue
        j = k
        while j < len(lines) and TABLE_ROW.match(lines[j]):
            j += 1
        units = {SAME_UNIT.get(u, u).strip("()") for u in HEADER_UNIT.findall(" ".join(lines[max(0, k - 1):min(j, k + 3)]))}
        for row in lines[k:j]:
            out |= {(n, u) for n in re.findall(rf"(?<![\w.]){_NUM}(?![\w.])", row) for u in units}
        k = j
    return out


def _json_quotes(data: object, unit: str | None = None, out: set[tuple[str, str]] | None = None) -> set[tuple[str, str]]:
    """Numbers of a kept record with the unit their key names, at every precision a prose quote may round to."""
    out = set() if out is None else out
    if isinstance(data, dict):
        for key, value in data.items():
            named = next((u for suffix, u in JSON_UNIT if str(key).endswith(suffix) or str(key) == suffix.strip("_")), unit)
            _json_quotes(value, named, out)
    elif isinstance(data, list):
        for value in data:
            _json_quotes(value, unit, out)
    elif isinstance(data, (int, float)) and not isinstance(data, bool) and unit is not None:
        out |= {(f"{data:.{d}f}", unit) for d in range(5)}
    return out


def _rounded(found: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """``found`` and each number rounded to one decimal fewer: prose may quote 200.0 as 200, 62.6% as 63%
    (not 40.93 as 41: fewer digits than that say less than the source)."""
    out = set(found)
    for number, unit in found:
        decimals = len(number.partition(".")[2])
        if decimals:
            out.add((f"{float(number):.{decimals - 1}f}", unit))
    return out


def sourced(text: str) -> set[tuple[str, str]]:
    """Every (number, unit) a source text states: quoted with its unit, in a table whose header names it,
    or after a name with a unit suffix; each also rounded to fewer decimals."""
    lines = text.splitlines()
    named = {(n, NAMED_UNIT[u]) for line in lines for u, n in NAMED.findall(line)}
    return _rounded({q for line in lines for q in quotes(line)} | _table_quotes(lines) | named)


def unsourced_numbers(text: str, sources: set[tuple[str, str]]) -> list[str]:
    """Numbers with a unit outside doctest blocks whose number and unit no source states (module docstring)."""
    lines = text.splitlines()
    skip: set[int] = set()
    for i, line in enumerate(lines):
        if MARK.match(line):
            skip |= _block_lines(lines, i)[1]
    tested = sourced("\n".join(lines[k] for k in sorted(skip)))  # prose may quote what a doc-test checks
    out = []
    for k, line in enumerate(lines):
        if k in skip:
            continue
        for number, unit in quotes(line):
            if (number, unit) not in sources and (number, unit) not in tested:
                out.append(f"{k + 1}: {number} {unit}: {line.strip()[:120]}")
    return out


def _sources() -> set[tuple[str, str]]:
    import json

    found = sourced((ROOT / "docs" / "benchmarks.md").read_text())
    for p in sorted((ROOT / "docs" / "runs").rglob("*")):
        if p.is_file() and p.suffix in (".txt", ".md", ".log"):
            found |= sourced(p.read_text(errors="replace"))
        elif p.is_file() and p.suffix == ".json":
            try:
                found |= _json_quotes(json.loads(p.read_text()))
            except ValueError:
                continue
    return found


SOURCES: set[tuple[str, str]] = set()


@pytest.mark.parametrize("path", DOCS, ids=[p.name for p in DOCS])
def test_every_number_has_a_source(path):
    if not SOURCES:
        SOURCES.update(_sources())
    missing = unsourced_numbers(path.read_text(), SOURCES)
    assert not missing, (f"{path.name}: numbers whose number and unit neither a doc-test block prints nor "
                         "docs/benchmarks.md or docs/runs states:\n" + "\n".join(missing))


def test_a_number_without_a_source_is_found():
    text = "prose 12.5 GB/s here\n\n<!-- doctest -->\n\n    $ linkscope env\n    99.9 GB/s\n"
    assert unsourced_numbers(text, set()) == ["1: 12.5 GB/s: prose 12.5 GB/s here"]
    assert unsourced_numbers(text, sourced("quoted 12.5 GB/s there")) == []
    assert unsourced_numbers(text, sourced("112.5 GB/s or 12.55 GB/s")) != []  # digits inside another number are no source


def test_a_number_is_sourced_only_with_its_unit():
    """issue 39: the guard matched digits only, so "12.5 us" was sourced by any "12.5" (a GB/s, a ratio)."""
    assert unsourced_numbers("it takes 12.5 us", sourced("12.5 GB/s, 12.5x, 12.5%")) == ["1: 12.5 us: it takes 12.5 us"]
    assert unsourced_numbers("it takes 12.5 µs", sourced("latency 12.5 us")) == []
    assert unsourced_numbers("2.1x faster, 40% of it", sourced("2.1 GB/s; 40 GiB")) == ["1: 2.1 x: 2.1x faster, 40% of it",
                                                                                      "1: 40 %: 2.1x faster, 40% of it"]


def test_each_number_of_a_range_carries_the_unit_and_tables_lend_theirs():
    assert quotes("369.3 / 373.5 GB/s and 0.60–0.62 µs, 6 x RTX") == [("369.3", "GB/s"), ("373.5", "GB/s"),
                                                                      ("0.60", "us"), ("0.62", "us")]
    table = "| pair | linkscope (µs, 2 runs) |\n|---|---|\n| 0-1 | 0.8258 / 0.8254 |\n"
    assert ("0.8254", "us") in sourced(table) and ("0.8254", "GB/s") not in sourced(table)
    assert ("393.8", "GB/s") in _json_quotes({"bandwidth": {"median": 393.79439}})
    assert ("393.7", "GB/s") not in _json_quotes({"bandwidth": {"median": 393.79439}})


def test_the_guide_quotes_the_one_definition_of_an_aggregate_rate():
    """Issue 39: the guide said a total "sums several flows" (line 8) and "not a sum" (line 163); the
    findings, the tables, the report caption and the guide now read one definition."""
    from linkscope.report.figures import contention_figure  # noqa: F401  (the caption reads the same constant)
    from linkscope.results.findings import AGGREGATE_RATE_MEANING

    text = " ".join(GUIDE.read_text().split())
    assert AGGREGATE_RATE_MEANING in text
    assert "sums several flows" not in text
