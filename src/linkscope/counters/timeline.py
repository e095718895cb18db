"""From raw counter readings to bytes moved, peak rates and a timeline.

Cumulative counters are diffed. A reading lower than the previous one is a wrap-around: the counter's
modulus (from NVML's value type: 2**32 for ``unsigned int``, 2**64 for ``unsigned long long``) is
added once. If the corrected step is still impossible (faster than ``max_plausible_bytes_per_s``)
the counter was reset (driver reload, reset by another tool): that interval is unknown, the total is
marked incomplete, and nothing is turned into a zero. A reading that failed makes its intervals
unknown in the same way.

Rate counters (PCIe throughput in KB/s over 20 ms windows) are integrated with the trapezoid rule:
an estimate whose resolution is the sampling interval, labelled ``estimate``.

>>> from linkscope.counters.sampler import CounterKey, CounterSpec, CounterSeries, Point, CUMULATIVE
>>> spec = CounterSpec(CounterKey(0, "pcie", -1, "tx"), CUMULATIVE, None, 1, "test")
>>> s = CounterSeries(spec, [Point(0.0, 2**32 - 10, modulus=2**32), Point(1.0, 20, modulus=2**32)])
>>> t = total(s)
>>> (t.bytes, t.wraps, t.complete)
(30, 1, True)
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..units import GB
from .sampler import CUMULATIVE, CounterKey, CounterSeries

# No single counter of today's hardware moves 2 TB/s (an NVLink5 GPU totals 900 GB/s per direction).
MAX_PLAUSIBLE_BYTES_PER_S = 2e12


@dataclass(frozen=True)
class Interval:
    """Bytes moved on one counter between two readings (None when unknown, with the reason)."""

    t0_s: float
    t1_s: float
    bytes: float | None
    note: str = ""

    @property
    def rate_gb_per_s(self) -> float | None:
        if self.bytes is None or self.t1_s <= self.t0_s:
            return None
        return self.bytes / (self.t1_s - self.t0_s) / GB


@dataclass(frozen=True)
class CounterTotal:
    """Totals of one counter over the watch.

    Attributes:
        key: which counter.
        source: where the numbers come from (NVML field or integrated PCIe throughput).
        bytes: bytes moved over the known intervals; None when no interval is known.
        complete: every interval was known (no failed reading, no reset).
        estimate: True for integrated rates (PCIe throughput API), False for exact byte counters.
        peak_gb_per_s: highest interval rate (depends on the sampling interval), None if unknown.
        wraps: wrap-arounds corrected.
        notes: resets and failed readings, one line each (deduplicated).
    """

    key: CounterKey
    source: str
    bytes: int | None
    complete: bool
    estimate: bool
    peak_gb_per_s: float | None
    wraps: int = 0
    notes: tuple[str, ...] = ()


def intervals(series: CounterSeries, max_plausible_bytes_per_s: float = MAX_PLAUSIBLE_BYTES_PER_S) -> list[Interval]:
    """The per-interval bytes of one counter."""
    spec = series.spec
    out: list[Interval] = []
    pts = series.points
    for p0, p1 in itertools.pairwise(pts):
        dt = p1.t_s - p0.t_s
        if p0.raw is None or p1.raw is None:
            reason = p1.error or p0.error or "reading failed"
            out.append(Interval(p0.t_s, p1.t_s, None, f"reading failed: {reason}"))
            continue
        if spec.mode == CUMULATIVE:
            step = p1.raw - p0.raw
            note = ""
            if step < 0:
                modulus = p1.modulus or p0.modulus
                if modulus is None:
                    out.append(Interval(p0.t_s, p1.t_s, None, "counter went backwards (reset?)"))
                    continue
                step += modulus
                note = "wrapped"
            moved = float(step * spec.bytes_per_unit)
            if dt > 0 and moved / dt > max_plausible_bytes_per_s:
                out.append(Interval(p0.t_s, p1.t_s, None, "counter reset (implausible step)"))
                continue
            out.append(Interval(p0.t_s, p1.t_s, moved, note))
        else:
            rate0 = p0.raw * spec.bytes_per_unit
            rate1 = p1.raw * spec.bytes_per_unit
            out.append(Interval(p0.t_s, p1.t_s, (rate0 + rate1) / 2 * max(dt, 0.0), ""))
    return out


def total(series: CounterSeries, max_plausible_bytes_per_s: float = MAX_PLAUSIBLE_BYTES_PER_S) -> CounterTotal:
    spec = series.spec
    parts = intervals(series, max_plausible_bytes_per_s)
    known = [iv for iv in parts if iv.bytes is not None]
    notes = tuple(dict.fromkeys(iv.note for iv in parts if iv.bytes is None))
    rates = [iv.rate_gb_per_s for iv in known if iv.rate_gb_per_s is not None]
    peak: float | None = max(rates) if rates else None
    if spec.mode != CUMULATIVE:
        samples = [p.raw * spec.bytes_per_unit / GB for p in series.points if p.raw is not None]
        peak = max(samples) if samples else None
    if len(series.points) < 2:
        notes = notes + ("fewer than two readings",)
    return CounterTotal(
        key=spec.key,
        source=spec.source,
        bytes=round(sum(iv.bytes for iv in known)) if known else None,  # type: ignore[misc]
        complete=bool(parts) and len(known) == len(parts),
        estimate=spec.mode != CUMULATIVE,
        peak_gb_per_s=peak,
        wraps=sum(1 for iv in known if iv.note == "wrapped"),
        notes=notes,
    )


def timeline_rows(series_list: list[CounterSeries], t_origin_s: float) -> list[dict]:
    """Flat rows for JSON/CSV: one per (counter, interval), time relative to ``t_origin_s``."""
    rows = []
    for series in series_list:
        key = series.spec.key
        cumulative = 0.0
        for iv in intervals(series):
            if iv.bytes is not None:
                cumulative += iv.bytes
            rows.append({
                "t_start_s": round(iv.t0_s - t_origin_s, 6),
                "t_end_s": round(iv.t1_s - t_origin_s, 6),
                "gpu": key.gpu,
                "bus": key.bus,
                "link": key.link if key.bus != "pcie" else None,
                "direction": key.direction,
                "bytes": round(iv.bytes) if iv.bytes is not None else None,
                "rate_gb_per_s": round(iv.rate_gb_per_s, 6) if iv.rate_gb_per_s is not None else None,
                "cumulative_bytes": round(cumulative),
                "note": iv.note,
            })
    rows.sort(key=lambda r: (r["t_start_s"], r["gpu"], r["bus"], r["link"] if r["link"] is not None else -1, r["direction"]))
    return rows
