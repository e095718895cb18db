"""Self-consistency of one run: where two steps measured the same path alone, they must agree.

A survey measures some paths twice in different steps: the copy-engine matrix and the size sweep
both time GPU 0 -> GPU 1 at the survey size; the host step and the host sweep both time
host -> GPU 0 with each host method. Each entry is a transfer timed *alone* (the only measured
transfer of its group), with the same method, endpoints, direction and size, so the two medians
should agree within the run-to-run spread. On 2 x H100 the host sweep once read h2d at 512 MiB as
26.1 GB/s while the host step read 55 (two later surveys: 54.8-54.9): a transient, reported as if
it were the link's speed. Here:

* ``disagree(a, b)``: the medians differ by more than ``max(CONSISTENCY_FLOOR_REL, spread(a) +
  spread(b))`` of the larger, where ``spread`` is an entry's own (max - min) / median over its
  repetitions: a difference its own samples do not cover;
* such a pair is measured again, once each (``remeasure``);
* if the new readings agree, the entries are replaced by them and the first readings are kept in
  ``extra["remeasured"]``, with a finding saying so; if they still disagree, both entries keep
  their first readings, get ``extra["inconsistent"]``, and a finding says which steps disagree.
  Either way ``record.extra["consistency"]`` lists every check that failed: never silent.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..results.schema import Measurement, RunRecord, Status
from ..results.stats import Stats
from ..units import format_size

CONSISTENCY_FLOOR_REL = 0.10
"""Smallest relative difference flagged. Run-to-run differences of one path on real GPUs were within
0.5% (survey CV on 2 x H200, docs/benchmarks.md); 10% leaves room for clocks and the page cache of
pageable copies while catching the 2x transient seen on H100."""

Key = tuple[str, Any, Any, str, int]
Remeasure = Callable[[Measurement], Measurement | None]


def path_key(m: Measurement) -> Key:
    return (m.method, m.src, m.dst, m.direction, m.size_bytes)


def spread(stats: Stats) -> float:
    return (stats.max - stats.min) / stats.median if stats.median > 0 else 0.0


def disagree(a: Stats, b: Stats) -> bool:
    top = max(a.median, b.median)
    if top <= 0:
        return False
    return abs(a.median - b.median) / top > max(CONSISTENCY_FLOOR_REL, spread(a) + spread(b))


def solo_pairs(measurements: Sequence[Measurement], step_of: Mapping[int, str]) -> list[tuple[int, int]]:
    """Index pairs of entries from different steps that timed the same path alone."""
    per_group: dict[int, int] = {}
    for m in measurements:
        if m.group is not None and m.scope == "transfer":
            per_group[m.group] = per_group.get(m.group, 0) + 1
    seen: dict[Key, int] = {}
    pairs: list[tuple[int, int]] = []
    for i, m in enumerate(measurements):
        if (m.status is not Status.OK or m.bandwidth is None or m.scope != "transfer" or m.group is None
                or per_group.get(m.group) != 1):
            continue
        key = path_key(m)
        first = seen.get(key)
        if first is None:
            seen[key] = i
        elif step_of.get(measurements[first].group or -1) != step_of.get(m.group):
            pairs.append((first, i))
    return pairs


@dataclass(frozen=True)
class Check:
    """One disagreement: the two entries, their steps, the first and the repeated medians (GB/s)."""

    first: tuple[int, int]
    steps: tuple[str, str]
    medians: tuple[float, float]
    again: tuple[float, float] | None
    resolved: bool

    def as_dict(self, m: Measurement) -> dict[str, Any]:
        return {"method": m.method, "src": m.src, "dst": m.dst, "direction": m.direction, "size_bytes": m.size_bytes,
                "steps": list(self.steps), "first_gb_per_s": list(self.medians),
                "again_gb_per_s": list(self.again) if self.again else None, "resolved": self.resolved}


def _path_words(m: Measurement) -> str:
    return f"{m.method} {m.src}->{m.dst} at {format_size(m.size_bytes)}"


def finding(check: Check, m: Measurement) -> str:
    (s1, s2), (a, b) = check.steps, check.medians
    first = f"'{s1}' read {a:.1f} GB/s and '{s2}' {b:.1f}"
    if check.again is None:
        return (f"Inconsistent: {_path_words(m)}: {first}, and measuring it again failed; "
                "trust neither without a re-run.")
    a2, b2 = check.again
    if check.resolved:
        return (f"Re-measured {_path_words(m)}: {first}; measured again: {a2:.1f} and {b2:.1f}, which agree. "
                "The record keeps the new readings (the first ones in extra.remeasured): a step was disturbed.")
    return (f"Inconsistent: {_path_words(m)}: {first}; measured again: {a2:.1f} and {b2:.1f}, still apart "
            "beyond their own spread. Both entries are marked extra.inconsistent; trust neither without a re-run.")


def check_consistency(record: RunRecord, step_of: Mapping[int, str], remeasure: Remeasure) -> RunRecord:
    """``record`` with every disagreement between steps re-measured once and reported (see above)."""
    measurements = list(record.measurements)
    checks: list[dict[str, Any]] = []
    found: list[str] = []
    for i, j in solo_pairs(measurements, step_of):
        a, b = measurements[i], measurements[j]
        assert a.bandwidth is not None and b.bandwidth is not None  # solo_pairs keeps measured entries only
        if not disagree(a.bandwidth, b.bandwidth):
            continue
        steps = (step_of.get(a.group or -1, "?"), step_of.get(b.group or -1, "?"))
        medians = (a.bandwidth.median, b.bandwidth.median)
        try:
            new = (remeasure(a), remeasure(b))
        except Exception:  # a failed re-measurement leaves the disagreement reported, never hidden
            new = (None, None)
        na, nb = new
        if na is None or nb is None or na.bandwidth is None or nb.bandwidth is None:
            check = Check((i, j), steps, medians, None, False)
        else:
            resolved = not disagree(na.bandwidth, nb.bandwidth)
            check = Check((i, j), steps, medians, (na.bandwidth.median, nb.bandwidth.median), resolved)
        for index, old, fresh, other in ((i, a, na, steps[1]), (j, b, nb, steps[0])):
            extra = dict(old.extra or {})
            if check.resolved and fresh is not None:
                extra["remeasured"] = {"first_median_gb_per_s": old.bandwidth.median if old.bandwidth else None,
                                       "disagreed_with_step": other}
                measurements[index] = replace(old, bandwidth=fresh.bandwidth, moved_bytes=fresh.moved_bytes,
                                              extra=extra)
            else:
                extra["inconsistent"] = {"disagrees_with_step": other,
                                         "again_gb_per_s": fresh.bandwidth.median if fresh and fresh.bandwidth else None}
                measurements[index] = replace(old, extra=extra)
        checks.append(check.as_dict(a))
        found.append(finding(check, a))
    if not checks:
        return record
    return record.with_(measurements=tuple(measurements), findings=tuple(record.findings) + tuple(found),
                        extra={**dict(record.extra), "consistency": checks})
