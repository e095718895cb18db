"""The verdict of a whole run in one line, and what is wrong, worst first: the report and the survey
open with it (issue 39: a 4 x H200 report listed 23 findings and no answer).

The one place that calls the judge for a whole run (``run_verdict``); the report reads what it
returns from ``RunRecord.extra["verdict"]`` (``VERDICT_KEY``) and never imports the judge.

What is judged: every bandwidth number at the largest size of its (method, pattern, direction) block
(the sizes below it are the size sweep, latency-bound where the uncalibrated twin's fixed costs
decide), a concurrent group by its aggregate alone (how the flows share is not a fault, and judging
each flow predicts the whole group again: 16 GPUs took 15 s), and every latency, each by
``Judge.judge`` against the twin of the run's own topology. A simulated run is not judged (its
numbers are the twin's own): its line says so.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ..results.findings import VERDICT_KEY
from ..results.schema import Measurement, RunProvenance, RunRecord, Status
from ..topology.model import Topology
from .expect import Judge
from .runs import with_group_transfers
from .verdict import Judgement, Verdict

MAX_PROBLEMS = 8


@dataclass(frozen=True)
class RunVerdict:
    """``line``: the verdict in one line; ``problems``: what is wrong, one line per kind, worst first;
    ``counts``: judged numbers per verdict."""

    line: str
    problems: tuple[str, ...]
    counts: Mapping[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "problems": list(self.problems), "counts": dict(self.counts)}


def _headline_entries(measurements: Sequence[Measurement]) -> list[int]:
    """Indices of the numbers the headline judges (module docstring)."""
    largest: dict[tuple[str, str, str], int] = {}
    aggregated = {m.group for m in measurements if m.scope == "total" and m.group is not None and m.pattern != "matrix"}
    for m in measurements:
        if m.bandwidth is not None:
            key = (m.method, m.pattern, m.direction)
            largest[key] = max(largest.get(key, 0), m.size_bytes)
    return [i for i, m in enumerate(measurements) if m.status is Status.OK and not (m.scope == "transfer" and m.group in aggregated)
            and (m.latency is not None or (m.bandwidth is not None and m.size_bytes == largest[(m.method, m.pattern, m.direction)]))]


def _gpus_text(topology: Topology) -> str:
    names = [g.name for g in topology.gpus]
    return f"{len(names)} x {names[0]}" if names and len(set(names)) == 1 else f"{len(names)} GPUs"


def _block(m: Measurement) -> str:
    what = "aggregate" if m.scope == "total" and m.pattern != "matrix" else ""
    kind = m.pattern if m.pattern not in ("matrix", "latency") else ("pairs" if m.pattern == "matrix" else "latency")
    return " ".join(p for p in (m.method, kind, "both ways" if m.direction == "bi" else "", what) if p)


def _problems(judged: Sequence[tuple[Measurement, Judgement]]) -> list[str]:
    """One line per (block, verdict): how many of the block's numbers, and the worst one."""
    groups: dict[tuple[str, str], list[Judgement]] = {}
    totals: Counter[str] = Counter()
    for m, j in judged:
        totals[_block(m)] += 1
        if j.verdict in (Verdict.LOW, Verdict.HIGH):
            groups.setdefault((_block(m), j.verdict.value), []).append(j)

    def distance(items: list[Judgement]) -> float:
        return max(abs((j.fraction or 1.0) - 1.0) for j in items)

    out = []
    for (block, verdict), items in sorted(groups.items(), key=lambda kv: (kv[0][1] != Verdict.LOW.value, -distance(kv[1]))):
        worst = max(items, key=lambda j: abs((j.fraction or 1.0) - 1.0))
        share = f"{worst.fraction:.0%} of the {worst.expectation.source}" if worst.fraction is not None else worst.reason
        out.append(f"{verdict}: {block}: {len(items)} of {totals[block]} number{'s' if totals[block] != 1 else ''}; "
                   f"worst {worst.subject} at {share}")
    return out


def run_verdict(record: RunRecord, topology: Topology | None = None) -> RunVerdict | None:
    """The verdict of ``record`` on ``topology`` (default: the record's own); None when the run has
    no topology to judge against or nothing to judge."""
    if topology is None:
        if not record.topology:
            return None
        from ..topology.io import from_dict

        try:
            topology = from_dict(dict(record.topology))
        except UserError:
            return None
    if record.provenance is RunProvenance.SIMULATED:
        errors = sum(1 for m in record.measurements if m.status is Status.ERROR)
        return RunVerdict(f"SIMULATED run of {topology.name} ({_gpus_text(topology)}): its numbers are the twin's own, "
                          f"so none is judged; {len(record.measurements)} entries, {errors} failed",
                          () if not errors else (f"failed: {errors} entr{'y' if errors == 1 else 'ies'}",), {})
    try:
        judge = Judge(topology)
        measurements = with_group_transfers(record.measurements)
        picked = _headline_entries(measurements)
        judge.check_fit([measurements[i] for i in picked])
        judged = [(measurements[i], judge.judge(measurements[i])) for i in picked]
    except UserError:
        return None
    counts = Counter(j.verdict.value for _, j in judged)
    rated = counts[Verdict.OK.value] + counts[Verdict.LOW.value] + counts[Verdict.HIGH.value]
    if not rated:
        return None
    errors = sum(1 for m in record.measurements if m.status is Status.ERROR)
    low, high = counts[Verdict.LOW.value], counts[Verdict.HIGH.value]
    word = "healthy" if not low and not errors else "problems found"
    bounds = judge.thresholds
    sources = Counter(getattr(j.expectation, "source", "") for _, j in judged
                      if j.verdict in (Verdict.OK, Verdict.LOW, Verdict.HIGH))
    against = ", ".join(f"{n} against {'references of healthy runs' if src == 'reference' else 'the twin'}"
                        for src, n in sorted(sources.items()) if src in ("reference", "twin"))
    line = (f"{word}: {counts[Verdict.OK.value]} of {rated} numbers as expected on {topology.name} ({_gpus_text(topology)})"
            + (f" ({against})" if against else f", within {bounds.low_below:.0%}-{bounds.high_above:.0%} of the twin"))
    extras = [f"{low} low" if low else "", f"{high} suspicious-high" if high else "",
              f"{errors} failed" if errors else "", "" if record.complete else "run interrupted"]
    if any(extras):
        line += "; " + ", ".join(e for e in extras if e)
    problems = _problems(judged)
    if errors:
        first = next(m for m in record.measurements if m.status is Status.ERROR)
        problems.insert(0, f"failed: {errors} entr{'y' if errors == 1 else 'ies'}; the first: {first.method} "
                           f"{first.src} -> {first.dst}: {first.reason}")
    if len(problems) > MAX_PROBLEMS:
        problems = problems[:MAX_PROBLEMS] + [f"... and {len(problems) - MAX_PROBLEMS} more (linkscope check)"]
    return RunVerdict(line, tuple(problems), dict(counts))


def with_verdict(record: RunRecord, topology: Topology | None = None, *, again: bool = False) -> RunRecord:
    """``record`` with its verdict in ``extra[VERDICT_KEY]`` (unchanged when it has one, or none can be
    made): what the survey and ``linkscope report`` call, so the judge is asked in one place.
    ``again``: judge a record that has a verdict once more (the report: an old record's stored verdict
    was made by an older judge), keeping the stored one only where no verdict can be made now."""
    if isinstance((record.extra or {}).get(VERDICT_KEY), Mapping) and not again:
        return record
    verdict = run_verdict(record, topology)
    if verdict is None:
        return record
    return record.with_(extra={**dict(record.extra or {}), VERDICT_KEY: verdict.as_dict()})


__all__ = ["VERDICT_KEY", "RunVerdict", "run_verdict", "with_verdict"]
