"""linkscope's one-GPU host-link numbers beside nvbandwidth's (bench/device_onegpu.sh runs both).

    python3 bench/onegpu_compare.py WORK_DIR OUT_JSON

WORK_DIR holds ``nvbandwidth.txt`` (nvbandwidth's plain-text output of the host test cases) and the
linkscope RunRecords ``bench_*.json``, ``latency_host.json`` and ``survey.json``. Prints one table
(nvbandwidth, linkscope, linkscope / nvbandwidth) and writes OUT_JSON.

nvbandwidth's text format (output.cpp, inline_common.h of its source): per test case a line
``Running <key>.``, then either ``<status>: <message>`` (Waived, Error ...) or a description line
(``memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)``; latency cases end in ``(ns)``), a header
row of column labels, one row per matrix row (``N/A`` for a missing cell), a blank line and
``SUM <key> <value>``. Error lines may come anywhere; unknown lines are ignored.
"""
from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GPU = 0  # the GPU compared (nvbandwidth's column, linkscope's index)


@dataclass
class NvbCase:
    """One nvbandwidth test case as printed."""

    key: str
    status: str = "Passed"  # Passed | Waived | Error | Not Found | Running (no result seen)
    message: str = ""
    description: str = ""
    unit: str = ""  # "GB/s" or "ns"
    columns: list[str] = field(default_factory=list)
    rows: list[list[float | None]] = field(default_factory=list)
    sum: float | None = None

    def cell(self, row: int, column: int) -> float | None:
        if row < len(self.rows) and column < len(self.rows[row]):
            return self.rows[row][column]
        return None


_RUNNING = re.compile(r"^Running (\S+?)\.?\s*$")
_STATUS = re.compile(r"^(Waived|Error|Not Found|ERROR)\s*:\s*(.*)$", re.IGNORECASE)
_SUM = re.compile(r"^SUM (\S+) ([-+0-9.eEinfa]+)\s*$")
_UNIT = re.compile(r"\((GB/s|ns|us|µs)\)\s*$")


def _number(token: str) -> float | None:
    if token.upper() == "N/A":
        return None
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_nvbandwidth(text: str) -> dict[str, NvbCase]:
    """Every test case of nvbandwidth's plain-text output, by key. Robust to the version header,
    warnings, error lines, a missing SUM line and results of several cases in one run."""
    cases: dict[str, NvbCase] = {}
    current: NvbCase | None = None
    expect_header = False
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        match = _RUNNING.match(stripped)
        if match:
            current = cases.setdefault(match.group(1), NvbCase(match.group(1), status="Running"))
            expect_header = False
            continue
        if current is None or not stripped:
            continue
        match = _STATUS.match(stripped)
        if match and not current.rows:
            current.status = "Error" if match.group(1).upper() == "ERROR" else match.group(1).title()
            current.message = match.group(2)
            continue
        match = _SUM.match(stripped)
        if match:
            case = cases.get(match.group(1), current)
            case.sum = _number(match.group(2))
            if case.status == "Running":
                case.status = "Passed"
            continue
        unit = _UNIT.search(stripped)
        if unit and not current.rows and not current.description:
            current.description = stripped
            current.unit = {"us": "µs"}.get(unit.group(1), unit.group(1))
            expect_header = True
            continue
        tokens = stripped.split()
        if expect_header:
            current.columns = tokens
            expect_header = False
            continue
        if current.description and len(tokens) >= 2 and all(_number(t) is not None or t.upper() == "N/A" for t in tokens[1:]):
            current.rows.append([_number(t) for t in tokens[1:]])
            if current.status == "Running":
                current.status = "Passed"
    return cases


# ---- linkscope records -------------------------------------------------------------------------

def _load(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def linkscope_value(record: dict[str, Any] | None, *, method: str, src: Any, dst: Any, pattern: str | None = None,
                    direction: str | None = None, latency: bool = False) -> float | None:
    """The median (GB/s, or µs with ``latency``) of the ok entry that matches, at its largest size."""
    if not record:
        return None
    best = None
    for m in record.get("measurements", []):
        if m.get("status") != "ok" or m.get("method") != method or m.get("src") != src or m.get("dst") != dst:
            continue
        if pattern is not None and m.get("pattern") != pattern:
            continue
        if direction is not None and m.get("direction") != direction:
            continue
        if m.get("scope", "transfer") != "transfer":
            continue
        value = m.get("latency_us") if latency else m.get("median_gb_per_s")
        if value is None:
            continue
        if best is None or m.get("size_bytes", 0) > best[0]:
            best = (m.get("size_bytes", 0), float(value))
    return None if best is None else best[1]


# (label, nvbandwidth key, nvbandwidth (row, column), unit, linkscope file, selector)
ROWS: tuple[tuple[str, str, tuple[int, int], str, str, dict[str, Any]], ...] = (
    ("H2D CE pinned", "host_to_device_memcpy_ce", (0, GPU), "GB/s", "bench_h2d.json",
     dict(method="h2d", src="host", dst=GPU, pattern="host")),
    ("D2H CE pinned", "device_to_host_memcpy_ce", (0, GPU), "GB/s", "bench_d2h.json",
     dict(method="d2h", src=GPU, dst="host", pattern="host")),
    ("H2D CE, both ways at once", "host_to_device_bidirectional_memcpy_ce", (0, GPU), "GB/s", "bench_host_bi_ce.json",
     dict(method="ce", src="host", dst=GPU, pattern="host", direction="bi")),
    ("D2H CE, both ways at once", "device_to_host_bidirectional_memcpy_ce", (0, GPU), "GB/s", "bench_host_bi_ce.json",
     dict(method="ce", src=GPU, dst="host", pattern="host", direction="bi")),
    ("H2D SM", "host_to_device_memcpy_sm", (0, GPU), "GB/s", "bench_h2d_sm.json",
     dict(method="sm-push", src="host", dst=GPU)),
    ("D2H SM", "device_to_host_memcpy_sm", (0, GPU), "GB/s", "bench_d2h_sm.json",
     dict(method="sm-push", src=GPU, dst="host")),
    ("H2D SM, both ways at once", "host_to_device_bidirectional_memcpy_sm", (0, GPU), "GB/s", "bench_host_bi_sm.json",
     dict(method="sm-push", src="host", dst=GPU, pattern="host", direction="bi")),
    ("D2H SM, both ways at once", "device_to_host_bidirectional_memcpy_sm", (0, GPU), "GB/s", "bench_host_bi_sm.json",
     dict(method="sm-push", src=GPU, dst="host", pattern="host", direction="bi")),
    ("device-local copy", "device_local_copy", (0, GPU), "GB/s", "bench_local.json",
     dict(method="local", src=GPU, dst=GPU)),
    ("host<->GPU latency (SM pointer chase)", "host_device_latency_sm", (0, GPU), "µs", "latency_host.json",
     dict(method="host-read", src="host", dst=GPU, latency=True)),
)

SURVEY_ROWS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("survey: H2D pinned", dict(method="h2d", src="host", dst=GPU, pattern="host")),
    ("survey: D2H pinned", dict(method="d2h", src=GPU, dst="host", pattern="host")),
    ("survey: H2D pageable", dict(method="h2d-pageable", src="host", dst=GPU, pattern="host")),
    ("survey: D2H pageable", dict(method="d2h-pageable", src=GPU, dst="host", pattern="host")),
    ("survey: H2D, both ways at once", dict(method="ce", src="host", dst=GPU, pattern="host", direction="bi")),
    ("survey: D2H, both ways at once", dict(method="ce", src=GPU, dst="host", pattern="host", direction="bi")),
    ("survey: device-local copy", dict(method="local", src=GPU, dst=GPU, pattern="local")),
    ("survey: host-read latency", dict(method="host-read", src="host", dst=GPU, latency=True)),
)


def compare(work: Path) -> dict[str, Any]:
    text = (work / "nvbandwidth.txt").read_text(errors="replace") if (work / "nvbandwidth.txt").exists() else ""
    cases = parse_nvbandwidth(text)
    rows = []
    for label, key, (r, c), unit, filename, selector in ROWS:
        case = cases.get(key)
        nvb = case.cell(r, c) if case else None
        if nvb is not None and case is not None and case.unit == "ns":
            nvb /= 1000.0  # ns -> µs
        ours = linkscope_value(_load(work / filename), **selector)
        ratio = ours / nvb if ours is not None and nvb else None
        note = "" if case is None else ("" if case.status == "Passed" else "nvbandwidth started it but printed no result"
                                        if case.status == "Running" else f"nvbandwidth {case.status}: {case.message}".strip())
        if case is None:
            note = "nvbandwidth: not run or not found"
        rows.append({"row": label, "unit": unit, "nvbandwidth_test": key, "nvbandwidth": nvb, "linkscope": ours,
                     "ratio": ratio, "note": note})
    survey = _load(work / "survey.json")
    survey_rows = [{"row": label, "unit": "µs" if sel.get("latency") else "GB/s", "linkscope": linkscope_value(survey, **sel)}
                   for label, sel in SURVEY_ROWS]
    return {"rows": rows, "survey": survey_rows, "survey_findings": (survey or {}).get("findings", []),
            "nvbandwidth_cases": {k: asdict(v) for k, v in cases.items()}}


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "N/A"
    return f"{value:.2f}" if unit == "µs" else f"{value:.1f}"


def table(result: dict[str, Any]) -> str:
    lines = [f"{'':38s} {'unit':>5s} {'nvbandwidth':>12s} {'linkscope':>10s} {'ratio':>6s}  note"]
    for r in result["rows"]:
        ratio = "N/A" if r["ratio"] is None else f"{r['ratio']:.3f}"
        lines.append(f"{r['row']:38s} {r['unit']:>5s} {_fmt(r['nvbandwidth'], r['unit']):>12s} "
                     f"{_fmt(r['linkscope'], r['unit']):>10s} {ratio:>6s}  {r['note']}")
    lines.append("")
    for r in result["survey"]:
        lines.append(f"{r['row']:38s} {r['unit']:>5s} {'':>12s} {_fmt(r['linkscope'], r['unit']):>10s}")
    if result["survey_findings"]:
        lines.append("survey findings:")
        lines += [f"  - {f}" for f in result["survey_findings"]]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    work, out = Path(argv[1]), Path(argv[2])
    result = compare(work)
    print(table(result))
    out.write_text(json.dumps(result, indent=2, default=str))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
