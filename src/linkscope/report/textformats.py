"""Plain-text outputs: CSV (one row per measurement, every JSON field) and OSU-style text.

OSU conventions (OSU Micro-Benchmarks ``osu_bw`` / ``osu_latency``): a ``#`` header line with the
column names, then one line per message size: the size in bytes left-aligned in 10 columns and the
value right-aligned in 20 columns with 2 decimals; bandwidth in MB/s with **MB = 10**6 bytes**,
latency in microseconds. Lines starting with ``#`` are comments, so a series header and skipped
(waived / error) sizes are written as comments and the numbers stay parseable.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any, Iterable

from ..results.io import measurement_to_dict
from ..results.schema import Measurement, RunRecord, Status

_SIZE_WIDTH = 10
_FIELD_WIDTH = 20


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return value


def to_csv(record: RunRecord) -> str:
    """One row per measurement; columns are the JSON fields, with ``extra`` keys as ``extra.<key>``."""
    rows = []
    columns: list[str] = []
    for m in record.measurements:
        data = measurement_to_dict(m)
        extra = data.pop("extra", {}) or {}
        row = dict(data)
        for key, value in extra.items():
            row[f"extra.{key}"] = value
        for key in row:
            if key not in columns:
                columns.append(key)
        rows.append(row)
    if not columns:
        empty = Measurement(src=0, dst=0, method="", pattern="", direction="uni", size_bytes=0)
        columns = [k for k in measurement_to_dict(empty) if k != "extra"]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: _cell(row.get(k)) for k in columns})
    return out.getvalue()


def _series_key(m: Measurement) -> tuple:
    group = str(m.extra.get("label", "")) if m.pattern == "file" else ""  # a file may repeat a pair in several groups
    return (m.method, m.pattern, m.direction, str(m.src), str(m.dst), m.scope, group)


def _series(measurements: Iterable[Measurement]) -> dict[tuple, list[Measurement]]:
    groups: dict[tuple, list[Measurement]] = {}
    for m in measurements:
        groups.setdefault(_series_key(m), []).append(m)
    return groups


def _title(m: Measurement, provenance: str) -> str:
    what = f"{m.src} -> {m.dst}" if m.scope == "transfer" else f"total {m.src} -> {m.dst}"
    label = m.extra.get("label")
    extra = f" [{label}]" if label and m.pattern not in ("matrix", "latency") else ""
    return f"# linkscope {m.method} {m.pattern} {m.direction} {what}{extra} ({provenance})"


def _is_latency(m: Measurement) -> bool:
    return m.latency is not None or m.pattern == "latency"


def _osu_value(m: Measurement) -> float | None:
    """The number of an OSU line: bandwidth in MB/s (1e6 B/s) or latency in us; None when not measured."""
    if m.status is not Status.OK:
        return None
    if _is_latency(m):
        return m.latency.median if m.latency is not None else None
    return m.bandwidth.median * 1e3 if m.bandwidth is not None else None  # GB/s (1e9 B/s) -> MB/s


def to_osu(record: RunRecord) -> str:
    """OSU-style text: one block per series (method, pattern, direction, src, dst, scope); bandwidth
    series first, then latency series."""
    lines: list[str] = []
    provenance = record.provenance.value
    bandwidth = [m for m in record.measurements if not _is_latency(m)]
    latency = [m for m in record.measurements if _is_latency(m)]
    for measurements, column in ((bandwidth, "Bandwidth (MB/s)"), (latency, "Latency (us)")):
        for series in _series(measurements).values():
            if lines:
                lines.append("")
            lines.append(_title(series[0], provenance))
            lines.append(f"{'# Size':<{_SIZE_WIDTH}}{column:>{_FIELD_WIDTH}}")
            for m in sorted(series, key=lambda x: x.size_bytes):
                value = _osu_value(m)
                if value is not None:
                    lines.append(f"{m.size_bytes:<{_SIZE_WIDTH}d}{value:>{_FIELD_WIDTH}.2f}")
                else:
                    lines.append(f"# {m.size_bytes} {m.status.value}: {m.reason or 'no value'}")
    return "\n".join(lines) + ("\n" if lines else "")
