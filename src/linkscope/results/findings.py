"""Plain-language findings from a run: the slowest pair and by how much, efficiency against the
topology's theoretical bandwidth, contention factors (a flow's bandwidth in a concurrent pattern /
its bandwidth alone), missing peer access, latency, host links, and whether the fabric is uniform.

Pure: reads a RunRecord (and optionally its Topology), returns sentences.
"""
from __future__ import annotations

import statistics
from typing import Iterable, Sequence

from ..patterns.methods import DEFAULT_METHOD, keys_where
from ..results.schema import Measurement, RunProvenance, RunRecord, Status
from ..units import format_size

UNIFORM_SPREAD = 0.05  # pairs within 5% of the median count as alike
CONCURRENT_PATTERNS = ("pairs", "ring", "all-to-one", "one-to-all", "all-to-all", "file")


def _ok_bw(ms: Iterable[Measurement]) -> list[Measurement]:
    return [m for m in ms if m.status is Status.OK and m.bandwidth is not None]


def _pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def _gb(x: float) -> str:
    return f"{x:.1f} GB/s"


def _matrix_entries(record: RunRecord, method: str, direction: str) -> list[Measurement]:
    """OK matrix entries of one method and direction at the largest size measured."""
    scope = "total" if direction == "bi" else "transfer"
    ms = _ok_bw(m for m in record.measurements
                if m.pattern == "matrix" and m.method == method and m.direction == direction and m.scope == scope
                and isinstance(m.src, int) and isinstance(m.dst, int))
    if not ms:
        return []
    size = max(m.size_bytes for m in ms)
    return [m for m in ms if m.size_bytes == size]


def _methods_in_order(record: RunRecord) -> list[str]:
    seen: list[str] = []
    for m in record.measurements:
        if m.pattern == "matrix" and m.method not in seen:
            seen.append(m.method)
    return sorted(seen, key=lambda k: (k != DEFAULT_METHOD.key, seen.index(k)))


def _pair_findings(record: RunRecord, method: str, uniform_topology: bool | None) -> list[str]:
    out: list[str] = []
    ms = _matrix_entries(record, method, "uni")
    if len(ms) < 2:
        return out
    size = format_size(ms[0].size_bytes)
    values = [m.bandwidth.median for m in ms]  # type: ignore[union-attr]
    slow = min(ms, key=lambda m: m.bandwidth.median)  # type: ignore[union-attr]
    fast = max(ms, key=lambda m: m.bandwidth.median)  # type: ignore[union-attr]
    s, f = slow.bandwidth.median, fast.bandwidth.median  # type: ignore[union-attr]
    median = statistics.median(values)
    out.append(f"Slowest GPU pair ({method}, one way, {size}): GPU{slow.src} -> GPU{slow.dst} at {_gb(s)}, "
               f"{_pct(1 - s / f)} below the fastest (GPU{fast.src} -> GPU{fast.dst}, {_gb(f)}).")
    spread = (f - s) / median if median else 0.0
    if spread <= UNIFORM_SPREAD:
        tail = "" if uniform_topology is not False else " although the topology has different link levels"
        out.append(f"The fabric looks uniform for {method}: all {len(ms)} pairs are within {_pct(spread)} of each other "
                   f"(median {_gb(median)}){tail}.")
    else:
        why = (" while the topology says every pair is alike: look at the slow pairs (a degraded link, clocks, or another job)"
               if uniform_topology else " as the topology's link levels predict" if uniform_topology is False else "")
        out.append(f"The fabric is not uniform for {method}: pairs range from {_gb(s)} to {_gb(f)} ({_pct(spread)} spread){why}.")
    return out


def _efficiency_findings(record: RunRecord, method: str) -> list[str]:
    out = []
    for direction, what in (("uni", "one-way copies"), ("bi", "bidirectional pair totals")):
        ms = [m for m in _matrix_entries(record, method, direction) if m.extra.get("theoretical_gb_per_s")]
        if not ms:
            continue
        effs = [m.bandwidth.median / float(m.extra["theoretical_gb_per_s"]) for m in ms]  # type: ignore[union-attr]
        theos = sorted({round(float(m.extra["theoretical_gb_per_s"]), 1) for m in ms})
        theo_text = _gb(theos[0]) if len(theos) == 1 else f"{_gb(theos[0])}–{_gb(theos[-1])}"
        spread = f"; {_pct(min(effs))}–{_pct(max(effs))}" if len(effs) > 1 else ""
        out.append(f"{method} {what} reach {_pct(statistics.median(effs))} of the theoretical {theo_text} "
                   f"(median over {len(ms)} pair{'s' if len(ms) != 1 else ''}{spread}).")
    return out


def _alone(record: RunRecord, method: str) -> dict[tuple[int, int], dict[int, float]]:
    out: dict[tuple[int, int], dict[int, float]] = {}
    for m in _ok_bw(record.measurements):
        if m.pattern == "matrix" and m.direction == "uni" and m.method == method and m.scope == "transfer":
            out.setdefault((m.src, m.dst), {})[m.size_bytes] = m.bandwidth.median  # type: ignore[union-attr,index]
    return out


def _contention_findings(record: RunRecord) -> list[str]:
    out = []
    keys: list[tuple[str, str, str]] = []
    for m in record.measurements:
        key = (m.pattern, m.method, m.direction)
        if m.pattern in CONCURRENT_PATTERNS and key not in keys:
            keys.append(key)
    for pattern, method, direction in keys:
        ms = [m for m in _ok_bw(record.measurements) if (m.pattern, m.method, m.direction) == (pattern, method, direction)]
        if not ms:
            continue
        size = max(m.size_bytes for m in ms)
        flows = [m for m in ms if m.scope == "transfer" and m.size_bytes == size]
        totals = [m for m in ms if m.scope == "total" and m.size_bytes == size]
        alone = _alone(record, method)
        factors = []
        for m in flows:
            by_size = alone.get((m.src, m.dst))  # type: ignore[arg-type]
            if by_size:
                ref = by_size.get(m.size_bytes) or by_size[max(by_size)]
                factors.append(m.bandwidth.median / ref)  # type: ignore[union-attr]
        label = f"{pattern} ({method}{', bi' if direction == 'bi' else ''}, {format_size(size)})"
        parts = []
        if factors:
            parts.append(f"each flow gets {statistics.median(factors):.2f}× its bandwidth alone "
                         f"(median over {len(factors)} flow{'s' if len(factors) != 1 else ''})")
        if totals:
            tot = statistics.median(m.bandwidth.median for m in totals)  # type: ignore[union-attr]
            what = {"all-to-one": "per receiver", "one-to-all": "per sender"}.get(pattern, "for the group")
            text = f"total {what} {_gb(tot)}"
            theos = [float(m.extra["theoretical_gb_per_s"]) for m in totals if m.extra.get("theoretical_gb_per_s")]
            if theos:
                text += f" ({_pct(tot / statistics.median(theos))} of the theoretical {_gb(statistics.median(theos))})"
            parts.append(text)
        if parts:
            out.append(f"{label[0].upper()}{label[1:]}: {'; '.join(parts)}.")
    return out


def _peer_findings(record: RunRecord) -> list[str]:
    missing: set[tuple[int, int]] = set()
    methods: set[str] = set()
    for m in record.measurements:
        # the waiver text of the planner and of the engines; not any reason that merely mentions ce-nopeer
        if m.status is not Status.OK and "no peer access" in m.reason.lower() and isinstance(m.src, int) and isinstance(m.dst, int):
            missing.add((min(m.src, m.dst), max(m.src, m.dst)))
            methods.add(m.method)
    if missing:
        pairs = ", ".join(f"GPU{a}–GPU{b}" for a, b in sorted(missing)[:8]) + (" …" if len(missing) > 8 else "")
        return [f"Peer access (P2P) is missing for {len(missing)} GPU pair{'s' if len(missing) != 1 else ''} ({pairs}): "
                f"{', '.join(sorted(methods))} could not run there; ce-nopeer or staged-pinned still move data through the host."]
    peer_ok = [m for m in _ok_bw(record.measurements)
               if isinstance(m.src, int) and isinstance(m.dst, int) and m.src != m.dst and m.method in keys_where(needs_peer_access=True)]
    if peer_ok:
        return ["Peer access works between every GPU pair measured."]
    return []


def _latency_findings(record: RunRecord) -> list[str]:
    out = []
    by_method: dict[str, list[float]] = {}
    for m in record.measurements:
        if m.pattern == "latency" and m.status is Status.OK and m.latency is not None:
            by_method.setdefault(m.method, []).append(m.latency.median)
    names = {"remote-read": "Device remote-read latency", "flag-pingpong": "One-way flag latency"}
    for method, values in by_method.items():
        name = names.get(method, f"{method} copy latency")
        rng = f" ({min(values):.2f}–{max(values):.2f} over {len(values)} pairs)" if len(values) > 1 else ""
        out.append(f"{name}: median {statistics.median(values):.2f} us{rng}.")
    return out


def _host_findings(record: RunRecord) -> list[str]:
    parts = []
    by_method: dict[str, list[Measurement]] = {}
    for m in _ok_bw(record.measurements):
        if m.pattern == "host" and m.scope == "transfer" and m.direction == "uni":
            by_method.setdefault(m.method, []).append(m)
    for method, ms in by_method.items():
        values = [m.bandwidth.median for m in ms]  # type: ignore[union-attr]
        text = f"{method} {_gb(statistics.median(values))}"
        if len(values) > 1 and (max(values) - min(values)) / statistics.median(values) > UNIFORM_SPREAD:
            slow = min(ms, key=lambda m: m.bandwidth.median)  # type: ignore[union-attr]
            text += f" (slowest GPU{slow.src if isinstance(slow.src, int) else slow.dst} at {_gb(slow.bandwidth.median)})"  # type: ignore[union-attr]
        parts.append(text)
    return [f"Host <-> device per GPU (median): {', '.join(parts)}."] if parts else []


def findings(record: RunRecord, *, uniform_topology: bool | None = None) -> tuple[str, ...]:
    """Sentences for the survey; ``uniform_topology`` is ``topology.query.is_uniform`` where known."""
    out: list[str] = []
    if record.provenance is RunProvenance.SIMULATED:
        out.append("SIMULATED: these numbers come from the fabric model, not from hardware.")
    methods = _methods_in_order(record)
    for i, method in enumerate(methods):
        if i == 0:
            out.extend(_pair_findings(record, method, uniform_topology))
        out.extend(_efficiency_findings(record, method))
    out.extend(_contention_findings(record))
    out.extend(_peer_findings(record))
    out.extend(_latency_findings(record))
    out.extend(_host_findings(record))
    errors = [m for m in record.measurements if m.status is Status.ERROR]
    if errors:
        out.append(f"{len(errors)} entr{'y' if len(errors) == 1 else 'ies'} failed; the first: {errors[0].method} "
                   f"{errors[0].src} -> {errors[0].dst}: {errors[0].reason}")
    if not record.complete:
        out.append("The run was interrupted: these findings cover only what was measured.")
    return tuple(out)


def findings_for(record: RunRecord, topology: object | None = None) -> tuple[str, ...]:
    """``findings`` with the uniformity of ``topology`` (a Topology) filled in where given."""
    uniform: bool | None = None
    if topology is not None:
        from ..topology import query

        try:
            uniform = query.is_uniform(topology)  # type: ignore[arg-type]
        except Exception:  # a topology that cannot route: no opinion
            uniform = None
    return findings(record, uniform_topology=uniform)


__all__: Sequence[str] = ("findings", "findings_for")
