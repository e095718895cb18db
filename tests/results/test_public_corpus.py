"""The corpus of real outputs pasted in public threads (tests/fixtures/public, and the public ones in
tests/fixtures/peertools): each names its URL, machine, tool and what the thread concluded in a sidecar
JSON. Every file parses (or is refused for the reason its sidecar names: two interleaved outputs, an
output cut before its first complete row), and every printed number is accounted for: read (a
Measurement's ``source_line``, or an iteration line of one), or left out with a reason (``unread``).

``agreement`` measures how often ``check``'s verdict matches the thread's conclusion; the test records
it (tests/fixtures/public/README.md has today's figures) but does not tune to it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from linkscope.errors import SchemaError
from linkscope.results.peertools.common import Lines, RunContext
from linkscope.results.peertools.detect import parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SIDECARS = sorted([*(FIXTURES / "public").glob("*.json"), *(FIXTURES / "peertools").glob("*.json")])
CORPUS = [p for p in SIDECARS if "url" in json.loads(p.read_text())]
CONCLUSIONS = {"healthy", "broken", "unknown"}
_DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?:[eE][-+]?\d+)?")
_CONTEXT = re.compile(r"^(#|SUM |&&&& PERF |.*[Vv]ersion|.*NCCL (INFO|WARN)|Device[:= ]|Driver|CUDA )")


def _load(sidecar: Path) -> tuple[dict, str, Path]:
    meta = json.loads(sidecar.read_text())
    path = sidecar.with_suffix(".txt")
    return meta, path.read_text(), path


def _stated(meta: dict) -> RunContext | None:
    options = meta.get("check_options") or []
    if "--ranks" in options:
        return RunContext(ranks=int(options[options.index("--ranks") + 1]), ranks_from="option")
    return None


def data_lines(text: str, source: str) -> list[int]:
    """Lines that hold printed results: two or more decimal numbers, or a row starting with a number
    and holding one (OSU ``size value``), tool context lines (versions, devices, totals) aside."""
    lines = Lines(text, source)
    found = []
    for n, line in enumerate(lines.lines, start=1):
        stripped = line.strip()
        if not stripped or _CONTEXT.match(stripped):
            continue
        decimals = _DECIMAL.findall(stripped)
        if len(decimals) >= 2 or (decimals and re.match(r"^\d+\s", stripped)):
            found.append(n)
    return found


def test_the_corpus_has_at_least_40_public_outputs_each_with_its_source():
    assert len(CORPUS) >= 40
    for sidecar in CORPUS:
        meta = json.loads(sidecar.read_text())
        assert meta["url"].startswith("https://"), sidecar.name
        assert meta["machine"] and meta["tool"] and meta["conclusion"] in CONCLUSIONS, sidecar.name
        assert sidecar.with_suffix(".txt").is_file(), sidecar.name


@pytest.mark.parametrize("sidecar", CORPUS, ids=lambda p: p.stem)
def test_each_output_parses_with_every_number_accounted_for(sidecar):
    meta, text, path = _load(sidecar)
    if meta.get("expect") == "refused":
        with pytest.raises(SchemaError, match=meta["expect_reason"]):
            parse(text, str(path), meta.get("format"), stated=_stated(meta))
        return
    run = parse(text, str(path), meta.get("format"), stated=_stated(meta))
    read = {m.extra.get("source_line") for m in run.measurements}
    read |= {n for m in run.measurements for n in (m.extra.get("iteration_lines") or ())}
    unread = {n for n, _ in run.unread}
    missing = [n for n in data_lines(text, str(path)) if n not in read | unread]
    assert not missing, f"{path.name}: lines {missing} hold numbers that were neither read nor said as unread"
    assert run.measurements or run.outcomes, path.name
    for m in run.measurements:  # one number per (tool, version, file, line): provenance on each
        assert m.extra["tool"] and m.extra["source_file"] == str(path) and m.extra["source_line"] >= 1
        assert m.ok or m.reason, f"{path.name}:{m.extra['source_line']}: not judged without a reason"
    if meta["archive_cut"]:
        assert not run.complete, f"{path.name}: the archive cut it, the parser says it is complete"


def agreement(tmp: Path) -> dict[str, list[str]]:
    """``check``'s verdict on each file whose thread concluded (healthy / broken) and whose machine can be
    named (``check_args``), against that conclusion: ``agree``, ``disagree`` or ``undecided`` (nothing
    judged). The verdict says broken when a number is low, a testcase ended in an error or was waived, or
    data was wrong; healthy when numbers were judged and none is low."""
    import contextlib
    import io

    from linkscope.cli import main

    result: dict[str, list[str]] = {"agree": [], "disagree": [], "undecided": [], "healthy_low_with_cause": []}
    for sidecar in CORPUS:
        meta, _, path = _load(sidecar)
        if meta["conclusion"] == "unknown" or meta.get("check_args") is None:
            continue
        out_json = tmp / f"{sidecar.stem}.json"
        argv = ["check", str(path), *meta["check_args"], *(meta.get("check_options") or []), "--json", str(out_json)]
        if meta.get("format"):
            argv += ["--format", meta["format"]]
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
        if code not in (0, 3) or not out_json.exists():
            result["undecided"].append(f"{sidecar.stem} (check exit {code}: {err.getvalue().strip()[:80]})")
            continue
        check = json.loads(out_json.read_text())["extra"]["check"]
        verdicts = [v["verdict"] for v in check["verdicts"]]
        run = parse(path.read_text(), str(path), meta.get("format"), stated=_stated(meta))
        signals = any(o.status in ("Error", "Waived") for o in run.outcomes.values()) or \
            any(m.status.value == "error" for m in run.measurements)
        if "low" in verdicts or signals:
            said = "broken"
        elif any(v == "ok" for v in verdicts):
            said = "healthy"
        else:
            result["undecided"].append(f"{sidecar.stem} (nothing judged)")
            continue
        (result["agree"] if said == meta["conclusion"] else result["disagree"]).append(
            f"{sidecar.stem} (thread: {meta['conclusion']}, check: {said})")
        if meta["conclusion"] == "healthy" and any(v["verdict"] == "low" and v["cause"] for v in check["verdicts"]):
            result["healthy_low_with_cause"].append(sidecar.stem)
    return result


def test_agreement_with_the_threads_is_measured(tmp_path, capsys):
    """Recorded, not tuned to: the figures go in tests/fixtures/public/README.md."""
    result = agreement(tmp_path)
    with capsys.disabled():
        print("\npublic corpus agreement:", {k: len(v) for k, v in result.items()})
        for key, names in result.items():
            for name in names:
                print(f"  {key}: {name}")
    assert sum(len(v) for k, v in result.items() if k != "healthy_low_with_cause") > 0
