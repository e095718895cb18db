"""Verdicts on whole files: every number of each parsed run judged, a summary, and the RunRecord
that ``linkscope check --json`` writes (imported numbers with the topology's GPU numbers, the
topology embedded, the verdicts in ``extra["check"]``), so ``report``, ``model check`` and
``model calibrate`` read imported results like linkscope's own.
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..counters.linkerrors import all_links_active
from ..counters.watch import background_total
from ..model.check import record_gpus
from ..patterns.methods import LOCAL
from ..results.peertools.common import PeerRun
from ..results.schema import ALL, Measurement, RunProvenance, RunRecord, now_utc
from ..topology import io as topo_io
from .expect import Judge
from .verdict import Judgement, Thresholds, Verdict, decide

VERDICT_ORDER = (Verdict.OK, Verdict.LOW, Verdict.HIGH, Verdict.UNJUDGED)


@dataclass(frozen=True)
class JudgedRun:
    """One file: its parsed run and one judgement per measurement (same order)."""

    run: PeerRun
    judgements: tuple[Judgement, ...]

    def where(self, index: int) -> str:
        extra = self.run.measurements[index].extra or {}
        line = extra.get("source_line")
        if line:
            return f"{self.run.source}:{line}"
        return f"{self.run.source} #{index}" if self.run.record is not None else self.run.source


@dataclass(frozen=True)
class Summary:
    """Verdict counts, overall and per tool, and the worst judged number."""

    counts: Mapping[str, int]
    by_tool: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    worst: Judgement | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def line(self) -> str:
        parts = [f"{self.counts.get(v.value, 0)} {v.value}" for v in VERDICT_ORDER if self.counts.get(v.value)]
        text = f"{self.total} number{'s' if self.total != 1 else ''}: {', '.join(parts) or 'none'}"
        if self.worst is not None and self.worst.fraction is not None and self.worst.verdict is not Verdict.OK:
            text += f"; worst: {self.worst.subject} at {self.worst.fraction:.0%} of the {self.worst.expectation.source}"
        return text

    def tool_lines(self) -> list[str]:
        out = []
        for tool, counts in self.by_tool.items():
            parts = [f"{counts.get(v.value, 0)} {v.value}" for v in VERDICT_ORDER if counts.get(v.value)]
            out.append(f"{tool}: {', '.join(parts)}")
        return out


def with_group_transfers(measurements: Sequence[Measurement]) -> list[Measurement]:
    """linkscope's own records: entries that ran at the same time share ``group`` (and size, method,
    pattern, direction); each bandwidth entry of a group with several transfers, or an aggregate
    (``src``/``dst`` ``"*"``), gets the group's transfers in ``extra["transfers"]`` so it is judged
    against the concurrent prediction, as ``model check`` groups them (model/check.py)."""
    groups: dict[tuple, list[tuple[Any, Any]]] = {}
    for m in measurements:
        if m.group is None or m.bandwidth is None or (m.extra or {}).get("transfers"):
            continue
        key: tuple = (m.group, m.size_bytes, m.method, m.pattern, m.direction)
        flows = groups.setdefault(key, [])
        if ALL in (m.src, m.dst) or m.src == m.dst:
            continue
        pairs = [(m.src, m.dst), (m.dst, m.src)] if m.direction == "bi" and m.scope != "transfer" else [(m.src, m.dst)]
        for pair in pairs:
            if pair not in flows:
                flows.append(pair)
    rates: dict[tuple, list[list[Any]]] = {}  # each flow's measured rate, for the group's total (a slow flow names it)
    for m in measurements:
        if m.group is not None and m.bandwidth is not None and m.scope == "transfer" and ALL not in (m.src, m.dst) \
                and m.src != m.dst and m.direction == "uni":
            rates.setdefault((m.group, m.size_bytes, m.method, m.pattern, m.direction), []).append(
                [m.src, m.dst, m.bandwidth.median])
    out = []
    for m in measurements:
        key = (m.group, m.size_bytes, m.method, m.pattern, m.direction)
        found = groups.get(key) if m.group is not None and m.bandwidth is not None else None
        if found and (len(found) > 1 or ALL in (m.src, m.dst)) and not (m.extra or {}).get("transfers"):
            extra = {**dict(m.extra or {}), "transfers": [list(f) for f in found]}
            if ALL in (m.src, m.dst) and len(rates.get(key, ())) == len(found):
                extra["flow_gb_per_s"] = rates[key]
            m = m.with_(extra=extra)
        out.append(m)
    return out


SHARED_LOAD_KEY = "shared-load"


def _busy_gpus(record: RunRecord | None) -> dict[int, str]:
    """GPU (topology number) -> what the survey saw on its links with nothing of its own running, for
    the GPUs it found shared with another load (``extra["background"]``, diagnose.survey)."""
    background = (record.extra or {}).get("background") if record is not None else None
    if not isinstance(background, Mapping):
        return {}
    busy = set(g for g in background.get("busy_gpus") or () if isinstance(g, int))
    out: dict[int, str] = {}
    for when in ("before", "after"):
        for name, rates in (background.get(when) or {}).items():
            if isinstance(rates, Mapping) and rates.get("gpu") in busy and rates["gpu"] not in out:
                total = background_total(rates)
                out[rates["gpu"]] = f"{name} carried {total / 1e9:.1f} GB/s with nothing of the run's own running"
    return out


def _gpus_of(m: Measurement) -> set[Any]:
    extra = m.extra or {}
    ends = {m.src, m.dst} | {e for pair in extra.get("transfers") or () for e in pair} | set(extra.get("rank_gpus") or ())
    return {e for e in ends if isinstance(e, int)}


def _with_shared_load(j: Judgement, why: str, key: str, thresholds: Thresholds) -> Judgement:
    """A low number measured on a GPU another load was using: that load, seen on the links' counters
    (``shared-load``) or inferred from the record (``shared-load-inferred``, ``_inferred_shared_load``), is
    the cause, ahead of a cause read from the value alone (a half-width link gives what a shared one does)."""
    if j.verdict is not Verdict.LOW or not why:
        return j
    if j.cause:
        j = decide(j.subject, j.measured, replace(j.expectation, alternatives=()), thresholds)
    cause = (f"another load shared the links ({why})" if key == SHARED_LOAD_KEY else
             f"another load likely shared these GPUs, inferred as the record has no background sample ({why}); a GPU "
             "held back by power or heat is the other reading (nvidia-smi -q -d PERFORMANCE)")
    return replace(j, reason=f"{j.reason}; {cause}", cause=cause, cause_key=key)


INFERRED_SHARED_KEY = "shared-load-inferred"


def _inferred_shared_load(run: PeerRun, measurements: Sequence[Measurement], judgements: Sequence[Judgement],
                          judge: Judge) -> dict[int, str]:
    """GPU (the tool's number) -> why another load was likely on it, for a linkscope record without the
    survey's background sample: the GPU's copy inside its own memory is low against its reference while the
    record's link state (``extra["link_errors"]``, at the start and the end) shows every one of its links
    active. A link down or trained down cannot slow a copy that crosses no link; another process using the
    GPU's memory and copy engines does (2 x H200 beside noisy.py: local copies 80-81% of the reference,
    docs/runs/h200x2-2026-11-28b call 1 and call 2)."""
    record = run.record
    if record is None or "background" in (record.extra or {}):
        return {}
    snapshots = (record.extra or {}).get("link_errors") or {}
    start, end = snapshots.get("start"), snapshots.get("end")
    if not isinstance(start, Mapping) or not isinstance(end, Mapping):
        return {}
    up, after = all_links_active(start), all_links_active(end)
    out: dict[int, str] = {}
    for m, j in zip(measurements, judgements):
        if m.method != LOCAL.key or m.src != m.dst or not isinstance(m.src, int) or j.verdict is not Verdict.LOW \
                or j.expectation.reference is None or j.fraction is None:
            continue
        gpu = judge.gpu(m.src)
        if gpu in up and after.get(gpu) == up[gpu]:
            out[m.src] = (f"GPU{m.src}'s copy inside its own memory ran at {j.fraction:.0%} of its reference while all "
                          f"{up[gpu]} of its links stayed active: no link fault slows a copy that crosses no link")
    return out


FORCED_PREFIX = "collective-forced-"
HALF_RATE_KEY = "collective-half-rate"
#: A cause that holds for a whole run or not at all (a forced algorithm/protocol: NCCL_ALGO / NCCL_PROTO, one
#: setting for the whole process; the links at half their rate: links down or another load) is kept only when
#: it is the closest cause of every low row of that collective in the file and within this of each: one curve
#: explains the run or none does (a shared link halves every size a little differently from how LL does, and
#: the two meet at some sizes). The half-rate curve gets more room: another load's share moves with the size.
#: Decisions, not fits.
RUN_WIDE_WITHIN = {FORCED_PREFIX: 0.15, HALF_RATE_KEY: 0.2}


def _run_wide(key: str) -> float | None:
    """The tolerance of a run-wide cause ``key`` (RUN_WIDE_WITHIN), None for a cause of one number."""
    return next((within for prefix, within in RUN_WIDE_WITHIN.items() if key.startswith(prefix)), None)


def _one_run_wide_cause(judgements: list[Judgement], measurements: Sequence[Measurement],
                      thresholds: Thresholds) -> list[Judgement]:
    """Run-wide causes (``_run_wide``) kept only where one of them explains every low row of its collective
    within its tolerance (the closest such curve over the rows when several do); each row is judged again
    with that one run-wide cause, or none, among its alternatives."""
    by_op: dict[str, list[int]] = {}
    for i, (m, j) in enumerate(zip(measurements, judgements)):
        if m.pattern == "collective" and j.verdict is Verdict.LOW:
            by_op.setdefault(m.method, []).append(i)
    out = list(judgements)
    for rows in by_op.values():
        if not any(_run_wide(a.key) is not None for i in rows for a in judgements[i].expectation.alternatives):
            continue
        best: tuple[float, str] | None = None
        keys = set.intersection(*({a.key for a in judgements[i].expectation.alternatives if _run_wide(a.key) is not None}
                                  for i in rows))
        for key in sorted(keys):
            within = _run_wide(key) or 0.0
            errors = []
            for i in rows:
                j = judgements[i]
                alt = next(a for a in j.expectation.alternatives if a.key == key)
                errors.append(abs(j.measured / alt.value - 1) if j.measured is not None and alt.value > 0 else math.inf)
            if max(errors) <= within and (best is None or sum(errors) < best[0]):
                best = (sum(errors), key)
        chosen = best[1] if best is not None else None
        for i in rows:
            j = judgements[i]
            exp = replace(j.expectation, alternatives=tuple(a for a in j.expectation.alternatives
                                                            if _run_wide(a.key) is None or a.key == chosen))
            out[i] = decide(j.subject, j.measured, exp, thresholds)
    return out


#: The transports NCCL falls back to between GPUs of one node (expect.py): through host memory (SHM) and its
#: network transport (sockets). NCCL picks one per peer when it sets up the communicator
#: (src/transport.cc ncclTransportP2pSetup, v2.28.9: the first transport whose canConnect accepts the pair), so
#: a run's every size goes through the same one.
TRANSPORT_KEYS = ("collective-no-p2p", "collective-network-transport")


def _one_transport(judgements: list[Judgement], measurements: Sequence[Measurement],
                   thresholds: Thresholds) -> list[Judgement]:
    """A transport cause, read where the value decides it (sizes the twin calls bandwidth-bound: fixed cost
    at most ``Thresholds.latency_bound`` of its time), holds for every size of that collective in the run:
    the low rows with no cause of their own (latency-bound sizes, where the value cannot tell a transport
    apart, and sizes where the twin's transport curve is off) are put down to it. Only where one
    transport is the one cause named among the bandwidth-bound low rows and names at least half of them,
    and those low rows are at least half of the bandwidth-bound rows (a decision, not a fit: one stray
    match, such as a channel cap crossing the host-memory curve at one size, or one slow timing among ok
    sizes, is no evidence: the transport would slow them all). The other way round, a transport named only
    at sizes that cannot tell it, in a run whose bandwidth-bound sizes were judged and do not show it, is
    dropped: the run's transport is not that one."""
    by_op: dict[str, list[int]] = {}
    for i, (m, j) in enumerate(zip(measurements, judgements)):
        if m.pattern == "collective" and j.verdict is not Verdict.UNJUDGED:
            by_op.setdefault(m.method, []).append(i)
    out = list(judgements)
    for rows in by_op.values():
        shares = {i: judgements[i].expectation.fixed_share for i in rows}
        bandwidth_bound = [i for i, share in shares.items() if share is not None and share <= thresholds.latency_bound]
        low_bound = [i for i in bandwidth_bound if judgements[i].verdict is Verdict.LOW]
        named = {judgements[i].cause_key for i in low_bound} - {""}
        key = next(iter(named)) if len(named) == 1 and named <= set(TRANSPORT_KEYS) else ""
        if key and 2 * sum(judgements[i].cause_key == key for i in low_bound) < len(low_bound):
            key = ""
        if key and 2 * len(low_bound) < len(bandwidth_bound):
            key = ""  # most bandwidth-bound sizes are ok: the run's one transport is not the slow one
        for i in rows:
            j = judgements[i]
            if j.verdict is not Verdict.LOW:
                continue
            if j.cause_key in TRANSPORT_KEYS and j.cause_key != key and bandwidth_bound:
                exp = replace(j.expectation, alternatives=tuple(a for a in j.expectation.alternatives
                                                                if a.key not in TRANSPORT_KEYS))
                out[i] = j = decide(j.subject, j.measured, exp, thresholds)
            alt = next((a for a in j.expectation.alternatives if a.key == key), None) if key else None
            if j.cause_key or alt is None:
                continue
            cause = (f"{alt.cause}: the run's bandwidth-bound sizes went through it, and NCCL picks a transport per "
                     "peer when it sets up the communicator, once for every size")
            out[i] = replace(j, reason=f"{j.reason}; {cause}", cause=cause, cause_key=key)
    return out


LONE_ROW_KEY = "lone-row"


def _series_key(m: Measurement) -> tuple:
    """The curve a number belongs to: one tool's method, pattern, direction, ends and placement, over sizes."""
    extra = m.extra or {}
    return (m.method, m.pattern, m.direction, m.src, m.dst, m.scope, bool(extra.get("inplace")))


def _lone_rows(judgements: list[Judgement], measurements: Sequence[Measurement]) -> list[Judgement]:
    """A low number with no cause (or a cause of the whole run, which the ok sizes refute) whose curve is ok at the
    sizes right below and right above it, and whose other
    placement (nccl-tests' in-place / out-of-place column at the same size) is ok too, is one timing off its own
    run, not a property of the machine: nccl-tests and OSU time each row once (one loop of iterations), so a
    transient (another process, a clock change) lands on one row, while a link, a transport or a protocol that
    is slow shows at several sizes or in both columns. Such a number is not judged, and says why (rocm-blogs'
    8 x MI300X all_reduce: 4 MiB in place 56.9 GB/s busbw between 105.4 and 169.4, out of place 141.9)."""
    by_series: dict[tuple, list[int]] = {}
    for i, m in enumerate(measurements):
        if m.size_bytes:
            by_series.setdefault(_series_key(m), []).append(i)
    at: dict[tuple, int] = {(_series_key(measurements[i]), measurements[i].size_bytes): i
                            for rows in by_series.values() for i in rows}
    out = list(judgements)
    for key, rows in by_series.items():
        rows = sorted(rows, key=lambda i: measurements[i].size_bytes)
        for before, i, after in zip(rows, rows[1:], rows[2:]):
            j = judgements[i]
            # a cause of the whole run (the links at half rate, a forced setting, a transport) would slow the ok
            # neighbours too: they refute it, so such a row can be alone as well as one with no cause
            run_wide = _run_wide(j.cause_key) is not None or j.cause_key in TRANSPORT_KEYS
            if j.verdict is not Verdict.LOW or (j.cause_key and not run_wide) or \
                    judgements[before].verdict is not Verdict.OK or judgements[after].verdict is not Verdict.OK:
                continue
            other = at.get((key[:-1] + (not key[-1],), measurements[i].size_bytes))
            if other is not None and judgements[other].verdict is not Verdict.OK:
                continue
            out[i] = replace(j, verdict=Verdict.UNJUDGED, fraction=None, cause_key=LONE_ROW_KEY, reason=(
                f"not judged: {j.reason.split(';')[0]}, alone: the sizes below and above"
                f"{' and the other placement at this size' if other is not None else ''} are ok, so this is one "
                "timing off its own run (re-run to confirm)"))
    return out


def prepared(run: PeerRun) -> list[Measurement]:
    """A run's measurements as they are judged: a linkscope record's concurrent groups with their
    transfers, and its collectives with the GPU of each rank and the GPUs each process drove."""
    measurements = list(run.measurements)
    hosts = len(set(run.run_context.hosts))
    if hosts > 1:  # a run over several hosts: its ranks are spread over as many nodes of the topology
        measurements = [m.with_(extra={**dict(m.extra or {}), "hosts": hosts}) for m in measurements]
    if run.run_context.env:  # the environment the run was launched with (check --env)
        env = dict(run.run_context.env)
        measurements = [m.with_(extra={**dict(m.extra or {}), "env": {**env, **dict((m.extra or {}).get("env") or {})}})
                        for m in measurements]
    if run.record is not None:
        measurements = with_group_transfers(measurements)
        rank_gpus = record_gpus(run.record)
        per_process = (run.record.context or {}).get("devices_per_process")
        per = len(per_process[0]) if isinstance(per_process, list) and per_process and isinstance(per_process[0], list) \
            else None
        if rank_gpus:  # a linkscope collective record says which GPU each rank drove
            extra = {"rank_gpus": rank_gpus, **({"gpus_per_process": per} if per else {})}
            measurements = [m.with_(extra={**extra, **dict(m.extra or {})}) if m.pattern == "collective" else m
                            for m in measurements]
        busy = _busy_gpus(run.record)
        if busy:
            measurements = [m.with_(extra={**dict(m.extra or {}), "shared_load": "; ".join(busy[g] for g in sorted(gpus))})
                            if (gpus := _gpus_of(m) & busy.keys()) else m for m in measurements]
    return measurements


def judge_runs(runs: Sequence[PeerRun], judge: Judge) -> list[JudgedRun]:
    """Every number of every run judged (a run needing more GPUs than selected is a TopologyError)."""
    out = []
    for run in runs:
        judge.check_fit(run.measurements, run.source)
        measurements = prepared(run)
        judgements = _one_run_wide_cause([judge.judge(m) for m in measurements], measurements, judge.thresholds)
        judgements = _one_transport(judgements, measurements, judge.thresholds)
        judgements = _lone_rows(judgements, measurements)
        inferred = _inferred_shared_load(run, measurements, judgements, judge)
        judged = []
        for j, m in zip(judgements, measurements):
            j = _with_shared_load(j, (m.extra or {}).get("shared_load", ""), SHARED_LOAD_KEY, judge.thresholds)
            why = "; ".join(inferred[g] for g in sorted(_gpus_of(m) & inferred.keys()))
            judged.append(_with_shared_load(j, why, INFERRED_SHARED_KEY, judge.thresholds) if not j.cause_key.startswith(
                SHARED_LOAD_KEY) else j)
        out.append(JudgedRun(run, tuple(judged)))
    return out


def summarize(judged: Sequence[JudgedRun]) -> Summary:
    counts: Counter[str] = Counter()
    by_tool: dict[str, Counter[str]] = {}
    worst: Judgement | None = None
    for jr in judged:
        tool = jr.run.tool
        for j in jr.judgements:
            counts[j.verdict.value] += 1
            by_tool.setdefault(tool, Counter())[j.verdict.value] += 1
            if j.fraction is not None and j.verdict is not Verdict.OK:
                distance = abs(j.fraction - 1)
                if worst is None or worst.fraction is None or distance > abs(worst.fraction - 1):
                    worst = j
    return Summary(dict(counts), {k: dict(v) for k, v in by_tool.items()}, worst)


def below(judged: Sequence[JudgedRun], fraction: float) -> list[tuple[JudgedRun, int]]:
    """(run, index) of every judged number below ``fraction`` of its expectation."""
    return [(jr, i) for jr in judged for i, j in enumerate(jr.judgements)
            if j.fraction is not None and j.fraction < fraction]


def health_failures(judged: Sequence[JudgedRun]) -> list[str]:
    """Why a health check fails besides low numbers: nothing judged, wrong data (nccl-tests #wrong,
    out-of-bounds values, an nvbandwidth data check), an incomplete output."""
    reasons = []
    numbers = [j for jr in judged for j in jr.judgements]
    if not any(j.verdict.value != "not judged" for j in numbers):
        reasons.append(f"nothing was judged ({len(numbers)} number{'s' if len(numbers) != 1 else ''} read, none judged)")
    for jr in judged:
        run = jr.run
        wrong = sum(1 for m in run.measurements if m.status.value == "error")
        if wrong or (run.context or {}).get("out_of_bounds"):
            reasons.append(f"{run.source}: wrong data ({wrong or run.context.get('out_of_bounds')} "
                           f"{'rows with #wrong > 0' if wrong else 'out-of-bounds values'})")
        failed = [k for k, o in (run.outcomes or {}).items() if o.status == "Error"]
        if failed:
            reasons.append(f"{run.source}: {len(failed)} testcase{'s' if len(failed) != 1 else ''} ended in an error "
                           f"({', '.join(failed[:3])})")
        if not run.complete:
            reasons.append(f"{run.source}: incomplete output ({run.incomplete})")
    return reasons


def _mapped(m: Measurement, judge: Judge) -> Measurement:
    """``m`` with the topology's GPU numbers (``--gpus`` applied)."""
    changes: dict[str, Any] = {"src": judge.gpu(m.src), "dst": judge.gpu(m.dst)}
    extra = dict(m.extra or {})
    if extra.get("transfers"):
        extra["transfers"] = [[judge.gpu(a), judge.gpu(b)] for a, b in extra["transfers"]]
    changes["extra"] = extra
    return m.with_(**changes)


def to_record(judged: Sequence[JudgedRun], judge: Judge) -> RunRecord:
    """One RunRecord of every judged number: measurements in the topology's GPU numbers, the
    topology embedded, the verdict of each in ``extra["check"]["verdicts"]`` (same order)."""
    measurements: list[Measurement] = []
    verdicts: list[dict[str, Any]] = []
    sources = []
    for jr in judged:
        sources.append({"file": jr.run.source, "tool": jr.run.tool, "version": jr.run.version, "gpus": list(jr.run.gpus),
                        "notes": list(jr.run.notes), "count": len(jr.judgements)})
        for i, (m, j) in enumerate(zip(jr.run.measurements, jr.judgements)):
            measurements.append(_mapped(m, judge))
            verdicts.append({**j.as_dict(), "tool": jr.run.tool, "where": jr.where(i)})
    tools = sorted({jr.run.tool for jr in judged})
    summary = summarize(judged)
    first = judged[0].run if len(judged) == 1 else None
    context: dict[str, Any] = {"gpus": [judge.topology.gpu(g).name for g in judge.gpus], "tools": tools}
    if first is not None and first.record is not None:
        context = {**dict(first.record.context), **context}
    options = {"command": "check", "gpus": list(judge.gpus), "sources": [s["file"] for s in sources]}
    extra = {"check": {"thresholds": judge.thresholds.__dict__, "thresholds_text": judge.thresholds.text(),
                       "topology": judge.topology.name, "sources": sources, "verdicts": verdicts,
                       "summary": {"counts": dict(summary.counts), "by_tool": {k: dict(v) for k, v in summary.by_tool.items()},
                                   "line": summary.line()}}}
    notes = tuple(f"{jr.run.source}: {note}" for jr in judged for note in jr.run.notes)
    return RunRecord("check", RunProvenance.MEASURED, now_utc(), context, options, topo_io.to_dict(judge.topology),
                     tuple(measurements), notes, True, extra)


__all__ = ["JudgedRun", "Summary", "below", "judge_runs", "prepared", "summarize", "to_record"]
