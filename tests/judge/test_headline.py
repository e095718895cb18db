"""Issue 39: the verdict of a whole run in one line, then what is wrong (judge.headline)."""
from __future__ import annotations

from pathlib import Path

from linkscope.judge.headline import run_verdict, with_verdict
from linkscope.results.findings import VERDICT_KEY
from linkscope.results.io import load
from linkscope.results.schema import RunProvenance

H100X2 = Path(__file__).resolve().parents[1] / "fixtures" / "peertools" / "h100x2-visits11-13" / "visit13" / "linkscope" / "survey.json"


def test_a_measured_survey_gets_one_line_and_its_problems_worst_first():
    record = load(H100X2)
    verdict = run_verdict(record)
    assert verdict is not None
    assert verdict.line.startswith(("healthy: ", "problems found: ")) and "numbers as expected on vm" in verdict.line
    # the line says what each number was held against: references of healthy runs first, the twin after
    assert "against references of healthy runs" in verdict.line and "of the twin of" not in verdict.line
    assert "2 x NVIDIA H100" in verdict.line
    rated = sum(verdict.counts.get(k, 0) for k in ("ok", "low", "suspicious-high"))
    assert f"{verdict.counts.get('ok', 0)} of {rated} numbers" in verdict.line
    assert all(p.startswith(("low: ", "suspicious-high: ", "failed: ", "...")) for p in verdict.problems)
    lows = [p for p in verdict.problems if p.startswith("low")]
    assert verdict.problems[:len(lows)] == tuple(lows)  # low before suspicious-high


def test_a_slowed_pair_turns_the_verdict_and_is_named():
    record = load(H100X2)
    slowed = tuple(m.with_(bandwidth=m.bandwidth.__class__(**{**m.bandwidth.__dict__, "median": m.bandwidth.median / 3}))
                   if m.pattern == "matrix" and m.method == "ce" and m.direction == "uni" and m.bandwidth is not None else m
                   for m in record.measurements)
    verdict = run_verdict(record.with_(measurements=slowed))
    assert verdict is not None and verdict.line.startswith("problems found")
    assert any(p.startswith("low: ce pairs:") for p in verdict.problems)


def test_a_simulated_run_is_not_judged_by_its_own_twin_and_says_so():
    record = load(H100X2).with_(provenance=RunProvenance.SIMULATED)
    verdict = run_verdict(record)
    assert verdict is not None and verdict.line.startswith("SIMULATED run of") and "none is judged" in verdict.line


def test_with_verdict_stores_it_once_and_a_record_without_topology_has_none():
    record = with_verdict(load(H100X2))
    assert record.extra[VERDICT_KEY]["line"]
    assert with_verdict(record) is record
    bare = record.with_(topology=None, extra={})
    assert run_verdict(bare) is None and with_verdict(bare) is bare
