"""linkscope's one-GPU host-link numbers beside nvbandwidth's (docs/runs/scripts/device_onegpu.sh runs both).

    PYTHONPATH=src python3 tests/benchtables/onegpu_compare.py WORK_DIR OUT_JSON

WORK_DIR holds ``nvbandwidth.txt`` (nvbandwidth's plain-text output of the host test cases) and the
linkscope RunRecords ``bench_*.json``, ``latency_host.json`` and ``survey.json``. Prints one table
(nvbandwidth, linkscope, linkscope / nvbandwidth) and writes OUT_JSON.

nvbandwidth's text is read by linkscope's own parser (results.peertools.nvbandwidth, the one
``linkscope check`` uses): its measurements give the numbers (latency already in µs), its
``outcomes`` say why a testcase has none (waived, error, started without a result, not run).
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

GPU = 0  # the GPU compared (nvbandwidth's column, linkscope's index)


def read_nvbandwidth(path: Path) -> Any:
    """nvbandwidth's output at ``path`` as a PeerRun, or None when the file is missing or holds no
    nvbandwidth result (the parser's reason goes to stderr)."""
    from linkscope.errors import SchemaError
    from linkscope.results.peertools import nvbandwidth

    if not path.exists():
        return None
    try:
        return nvbandwidth.parse_text(path.read_text(errors="replace"), str(path))
    except SchemaError as e:
        print(f"onegpu_compare: {e}", file=sys.stderr)
        return None


def nvbandwidth_value(run: Any, test: str, gpu: int) -> float | None:
    """nvbandwidth's number for testcase ``test`` at GPU ``gpu`` (its column; GB/s, or µs for a
    latency testcase), None where it printed none (N/A, waived, not run)."""
    for m in run.measurements if run is not None else ():
        if m.extra.get("test") == test and gpu in (m.src, m.dst):
            return m.latency_us if m.latency is not None else m.median_gb_per_s
    return None


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


# (label, nvbandwidth testcase, unit, linkscope file, selector)
ROWS: tuple[tuple[str, str, str, str, dict[str, Any]], ...] = (
    ("H2D CE pinned", "host_to_device_memcpy_ce", "GB/s", "bench_h2d.json",
     dict(method="h2d", src="host", dst=GPU, pattern="host")),
    ("D2H CE pinned", "device_to_host_memcpy_ce", "GB/s", "bench_d2h.json",
     dict(method="d2h", src=GPU, dst="host", pattern="host")),
    ("H2D CE, both ways at once", "host_to_device_bidirectional_memcpy_ce", "GB/s", "bench_host_bi_ce.json",
     dict(method="ce", src="host", dst=GPU, pattern="host", direction="bi")),
    ("D2H CE, both ways at once", "device_to_host_bidirectional_memcpy_ce", "GB/s", "bench_host_bi_ce.json",
     dict(method="ce", src=GPU, dst="host", pattern="host", direction="bi")),
    ("H2D SM", "host_to_device_memcpy_sm", "GB/s", "bench_h2d_sm.json",
     dict(method="sm-push", src="host", dst=GPU)),
    ("D2H SM", "device_to_host_memcpy_sm", "GB/s", "bench_d2h_sm.json",
     dict(method="sm-push", src=GPU, dst="host")),
    ("H2D SM, both ways at once", "host_to_device_bidirectional_memcpy_sm", "GB/s", "bench_host_bi_sm.json",
     dict(method="sm-push", src="host", dst=GPU, pattern="host", direction="bi")),
    ("D2H SM, both ways at once", "device_to_host_bidirectional_memcpy_sm", "GB/s", "bench_host_bi_sm.json",
     dict(method="sm-push", src=GPU, dst="host", pattern="host", direction="bi")),
    ("device-local copy", "device_local_copy", "GB/s", "bench_local.json",
     dict(method="local", src=GPU, dst=GPU)),
    ("host<->GPU latency (SM pointer chase)", "host_device_latency_sm", "µs", "latency_host.json",
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
    run = read_nvbandwidth(work / "nvbandwidth.txt")
    outcomes = run.outcomes if run is not None else {}
    rows = []
    for label, key, unit, filename, selector in ROWS:
        outcome = outcomes.get(key)
        nvb = nvbandwidth_value(run, key, GPU)
        ours = linkscope_value(_load(work / filename), **selector)
        ratio = ours / nvb if ours is not None and nvb else None
        if outcome is None:
            note = "nvbandwidth: not run or not found"
        elif outcome.status == "Running":
            note = "nvbandwidth started it but printed no result"
        else:
            note = "" if outcome.status == "Passed" else f"nvbandwidth {outcome.status}: {outcome.message}".strip()
        rows.append({"row": label, "unit": unit, "nvbandwidth_test": key, "nvbandwidth": nvb, "linkscope": ours,
                     "ratio": ratio, "note": note})
    survey = _load(work / "survey.json")
    survey_rows = [{"row": label, "unit": "µs" if sel.get("latency") else "GB/s", "linkscope": linkscope_value(survey, **sel)}
                   for label, sel in SURVEY_ROWS]
    return {"rows": rows, "survey": survey_rows, "survey_findings": (survey or {}).get("findings", []),
            "nvbandwidth_cases": {k: asdict(v) for k, v in outcomes.items()}}


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
