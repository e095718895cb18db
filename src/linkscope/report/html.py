"""One self-contained HTML report from RunRecords (``linkscope report``; ``linkscope survey`` calls
``write_report``).

Self-contained: figures are PNGs embedded as base64 ``data:`` URIs, the CSS is inline, there is no
JavaScript and no external resource, so the file opens offline and can be mailed. ``png_dir`` writes
the same figures as PNG files. Runs whose provenance is simulated are flagged by a banner, a
SIMULATED watermark on their figures and a ``[simulated]`` mark on their series.
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_files_atomic, write_text_atomic
from ..results.findings import AGGREGATE_RATE, RATE_UNIT_NOTE, VERDICT_KEY, is_derived, rederived
from ..results.schema import RunProvenance, RunRecord, Status
from ..units import format_size
from . import figures as F
from . import plots
from .checks import check_section

MAX_PROBLEM_ROWS = 200
MAX_OPEN_FINDINGS = 6  # findings shown before the rest fold
_GPU_NUMBER = re.compile(r"\b(GPU|GCD|gpu|rank) ?\d+")

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#1b2631;color:#fff;padding:18px 28px}
header h1{margin:0;font-size:24px} header p{margin:4px 0 0;color:#cfd8dc;font-size:13px}
main{padding:10px 28px 40px;max-width:1200px}
section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:18px 0;padding:12px 18px}
h2{font-size:18px;margin:6px 0 10px;border-bottom:2px solid #76b900;padding-bottom:4px}
figure{margin:10px 0 18px} figure img{max-width:100%;max-height:460px;height:auto;width:auto;border:1px solid #eee}
figcaption{font-size:12px;color:#555;margin-top:4px}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0} th,td{border:1px solid #ddd;padding:3px 8px;text-align:left}
th{background:#f0f3f5} td.num{text-align:right;font-variant-numeric:tabular-nums}
.banner{background:#fdecea;border:2px solid #d62728;color:#a01515;padding:10px 16px;border-radius:6px;font-weight:600;margin-top:14px}
.tag{display:inline-block;padding:1px 6px;border-radius:3px;font-size:11px;font-weight:600}
.sim{background:#d62728;color:#fff} .meas{background:#2ca02c;color:#fff} .pred{background:#ff7f0e;color:#fff}
.ok{color:#2ca02c} .waived{color:#8c6d1f} .error{color:#d62728;font-weight:600}
ul.findings li{margin:3px 0} .muted{color:#777;font-size:12px}
div.topo{overflow-x:auto} div.topo table{font-size:11px} div.topo td,div.topo th{padding:1px 4px;white-space:nowrap}
table.heat caption{caption-side:top;text-align:left;font-weight:600;padding:2px 0 4px}
table.heat td,table.heat th{text-align:center;padding:3px 6px;min-width:3.2em} table.heat td.na{background:#e0e0e0;color:#666}
.scale{font-size:11px;color:#555} .swatch{display:inline-block;width:14px;height:10px;margin:0 2px 0 8px;vertical-align:middle}
section#verdict{border-left:6px solid #76b900} section#verdict.bad{border-left-color:#d62728}
p.verdict{font-size:17px;font-weight:600;margin:4px 0 8px} ul.wrong li{margin:2px 0}
details{margin:6px 0} details>summary{cursor:pointer;color:#1b4f72;font-size:13px;margin:4px 0}
div.grid{display:flex;flex-wrap:wrap;gap:4px 22px;align-items:flex-start} div.grid figure{margin:4px 0 8px}
div.wide{overflow-x:auto;max-width:100%}
"""


@dataclass(frozen=True)
class ReportResult:
    """What ``write_report`` wrote: the HTML path, the figure names, and PNG files (if asked)."""

    path: Path
    figures: tuple[str, ...]
    png_files: tuple[Path, ...]
    notes: tuple[str, ...]


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _tag(provenance: RunProvenance) -> str:
    cls = {"simulated": "sim", "measured": "meas", "predicted": "pred"}[provenance.value]
    text = provenance.value.upper() if provenance is RunProvenance.SIMULATED else provenance.value
    return f'<span class="tag {cls}">{_e(text)}</span>'


def _num(value: float | None, digits: int = 1) -> str:
    return "N/A" if value is None else f"{value:.{digits}f}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            cls = ' class="num"' if i in numeric else ""
            cells.append(f"<td{cls}>{cell}</td>")  # cells are escaped by the caller (some hold markup)
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _gpus_text(context: Any) -> str:
    gpus = (context or {}).get("gpus")
    if isinstance(gpus, list):
        names = [g.get("name", "GPU") if isinstance(g, dict) else str(g) for g in gpus]
        if names and len(set(names)) == 1:
            return f"{len(names)} × {names[0]}"
        return ", ".join(names)
    return str(gpus) if gpus is not None else ""


def _runs_section(records: Sequence[RunRecord], labels: Sequence[str]) -> str:
    """One row per run; the host and driver columns only where some run knows them."""
    rows = []
    for r, label in zip(records, labels):
        ctx = r.context or {}
        counts = {s: sum(1 for m in r.measurements if m.status is s) for s in Status}
        rows.append([
            _e(label), _e(r.kind), _tag(r.provenance), _e(r.created_utc), _e(ctx.get("host") or ctx.get("hostname") or ""),
            _e(_gpus_text(ctx)), _e(ctx.get("driver") or ctx.get("driver_version") or ""),
            str(counts[Status.OK]), str(counts[Status.WAIVED]),
            f'<span class="{"error" if counts[Status.ERROR] else "ok"}">{counts[Status.ERROR]}</span>',
            "yes" if r.complete else '<span class="error">no (interrupted)</span>',
        ])
    headers = ["run", "kind", "provenance", "created (UTC)", "host", "GPUs", "driver", "ok", "waived", "errors", "complete"]
    keep = [i for i, h in enumerate(headers) if h not in ("host", "driver") or any(row[i] for row in rows)]
    numeric = [keep.index(i) for i in (7, 8, 9)]
    table = _table([headers[i] for i in keep], [[row[i] for i in keep] for row in rows], numeric=numeric)
    return f'<section id="runs"><h2>Runs</h2>{table}</section>'


def report_findings(record: RunRecord) -> list[str]:
    """The record's findings as this version states them (``findings.rederived``: derived again from
    its numbers and today's facts, so an old record does not repeat what was wrong when it was
    written), with per-link facts collapsed: the corrected-error lines of a record written before they
    were one line per fabric become that line (``linkerrors.corrected_lines``, from
    ``extra["link_errors"]``)."""
    from ..counters.linkerrors import corrected_lines, issue_from_dict

    lines = list(rederived(record))
    marker = " corrected-error counters grew "
    old = [i for i, f in enumerate(lines) if marker in f]
    issues = ((record.extra or {}).get("link_errors") or {}).get("issues") if isinstance(record.extra, dict) else None
    if len(old) < 2 or not isinstance(issues, list):
        return lines
    parsed = [i for i in (issue_from_dict(d) for d in issues if isinstance(d, dict)) if i is not None]
    collapsed = corrected_lines(parsed)
    if not collapsed:
        return lines
    keep = [f for i, f in enumerate(lines) if i not in old]
    return keep[:old[0]] + collapsed + keep[old[0]:]


def _verdict_section(records: Sequence[RunRecord], labels: Sequence[str]) -> str:
    """The verdict of each run (``extra["verdict"]``, made by ``judge.headline``), then what is wrong."""
    parts, bad = [], False
    for r, label in zip(records, labels):
        verdict = (r.extra or {}).get(VERDICT_KEY)
        name = f"{_e(label)}: " if len(records) > 1 else ""
        if not isinstance(verdict, dict) or not verdict.get("line"):
            errors = sum(1 for m in r.measurements if m.status is Status.ERROR)
            parts.append(f'<p class="verdict">{name}no verdict: the run has no topology to judge it against '
                         f"({len(r.measurements)} entries, {errors} failed); the evidence follows.</p>")
            continue
        line = str(verdict["line"])
        bad = bad or not line.startswith(("healthy", "SIMULATED"))
        problems = [str(p) for p in verdict.get("problems") or []]
        wrong = ("<p><b>What is wrong</b></p><ul class=\"wrong\">" + "".join(f"<li>{_e(p)}</li>" for p in problems) + "</ul>"
                 if problems else "")
        parts.append(f'<p class="verdict">{name}{_e(line)}</p>{wrong}')
    cls = ' class="bad"' if bad else ""
    return f'<section id="verdict"{cls}><h2>Verdict</h2>{"".join(parts)}</section>'


def _findings_section(records: Sequence[RunRecord], labels: Sequence[str]) -> str:
    parts = []
    for r, label in zip(records, labels):
        found = report_findings(r)
        replaced = sum(1 for f in r.findings if is_derived(f) and f not in found)
        if found:
            items = "".join(f"<li>{_e(f)}</li>" for f in found[:MAX_OPEN_FINDINGS])
            if len(found) > MAX_OPEN_FINDINGS:
                items += (f"<li><details><summary>{len(found) - MAX_OPEN_FINDINGS} more findings</summary><ul class=\"findings\">"
                          + "".join(f"<li>{_e(f)}</li>" for f in found[MAX_OPEN_FINDINGS:]) + "</ul></details></li>")
            note = (f'<p class="muted">Derived again from the record\'s numbers and today\'s facts table; '
                    f"{replaced} statement{'s' if replaced != 1 else ''} stored in the record when it was written "
                    "differ and are not shown.</p>" if replaced else "")
            parts.append(f"<h3>{_e(label)}</h3>{note}<ul class=\"findings\">{items}</ul>" if len(records) > 1
                         else f"{note}<ul class=\"findings\">{items}</ul>")
    if not parts:
        return ""
    return f'<section id="findings"><h2>Findings</h2>{"".join(parts)}</section>'


def _figure_html(item: F.FigureItem, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    sim = ' <span class="tag sim">SIMULATED</span>' if item.simulated else ""
    return (f'<figure id="fig-{_e(item.name)}"><img alt="{_e(item.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(item.title)}{sim}. {_e(item.caption)}</figcaption></figure>")


def _comparison_table(items: list[F.Comparison]) -> str:
    """Every entry that has a model prediction; without any, one line says so (the chart beside it
    has the medians against theoretical), rather than a long column of N/A."""
    items = [c for c in items if c.predicted_gb_per_s is not None]
    if not items:
        return ('<p class="muted">No entry of these runs carries a model prediction, so there is no per-entry '
                "table; the chart compares each method and pattern with the theoretical bandwidth of its links. "
                "<code>linkscope model check RUN.json</code> compares a run with the model.</p>")
    word = "simulated" if all(c.simulated for c in items) else "measured" if not any(c.simulated for c in items) \
        else "measured or simulated"
    rows = [[_e(c.run), _e(c.name) + (' <span class="tag sim">SIM</span>' if c.simulated else ""), _e(format_size(c.size_bytes)),
             _num(c.measured_gb_per_s), _num(c.predicted_gb_per_s), _num(c.theoretical_gb_per_s),
             "N/A" if c.efficiency is None else f"{100 * c.efficiency:.0f}%",
             "N/A" if c.vs_predicted is None else f"{100 * c.vs_predicted:.0f}%"] for c in items]
    return _table(["run", "entry", "size", f"{word} (GB/s)", "predicted (GB/s)", "theoretical (GB/s)",
                   "efficiency", f"{word} / predicted"], rows, numeric=(3, 4, 5, 6, 7))


def _totals_table(totals: list[F.PatternTotal]) -> str:
    """One summary row per (run, pattern, method, direction): how many groups, the aggregate rate's
    range and the theoretical; every group's row folds below it (``<details>``)."""
    by: dict[tuple[str, str, str, str], list[F.PatternTotal]] = {}
    for t in totals:
        by.setdefault((t.run, t.pattern.split(" ")[0], t.method, t.direction), []).append(t)
    multi_run = len({t.run for t in totals}) > 1
    rows = []
    for (run, pattern, method, direction), items in by.items():
        rates = [t.total_gb_per_s for t in items if t.total_gb_per_s is not None]
        theos = [t.theoretical_gb_per_s for t in items if t.theoretical_gb_per_s is not None]
        rate = "N/A" if not rates else _num(rates[0]) if max(rates) - min(rates) < 0.05 else f"{_num(min(rates))}–{_num(max(rates))}"
        theo = "" if not theos else _num(theos[0]) if max(theos) - min(theos) < 0.05 else f"{_num(min(theos))}–{_num(max(theos))}"
        bad = [t for t in items if t.status != "ok"]
        status = "ok" if not bad else f"{len(bad)} not ok"
        rows.append(([_e(run)] if multi_run else []) + [
            _e(pattern), _e(method), _e(direction), _e(format_size(max(t.size_bytes for t in items))), str(len(items)), rate, theo,
            f'<span class="{"ok" if not bad else "error"}">{_e(status)}</span>'])
    head = (["run"] if multi_run else []) + ["pattern", "method", "direction", "size", "groups", f"{AGGREGATE_RATE} (GB/s)",
                                              "theoretical (GB/s)", "status"]
    shift = 1 if multi_run else 0
    summary = _table(head, rows, numeric=tuple(i + shift for i in (4, 5, 6)))
    detail_rows = [[_e(t.run), _e(t.pattern), _e(t.method), _e(t.direction), _e(format_size(t.size_bytes)),
                    _num(t.total_gb_per_s), _num(t.theoretical_gb_per_s), str(t.entries),
                    f'<span class="{_e(t.status)}">{_e(t.status)}</span>' + (f" ({_e(t.reason)})" if t.reason else "")]
                   for t in totals]
    detail = _table(["run", "pattern", "method", "direction", "size", f"{AGGREGATE_RATE} (GB/s)", "theoretical (GB/s)",
                     "sizes", "status"], detail_rows, numeric=(5, 6, 7))
    return (f"{summary}<details><summary>every group ({len(totals)} rows)</summary><div class=\"wide\">{detail}</div>"
            "</details>")


def _mapping_table(items: list[tuple[str, dict]]) -> str:
    rows = []
    for name, m in items:
        cost, default = m.get("cost"), m.get("default_cost")
        saved = ""
        if isinstance(cost, (int, float)) and isinstance(default, (int, float)) and default:
            saved = f"{100 * (1 - cost / default):.1f}%"
        rows.append([_e(name), _e(m.get("metric", "")), _e(m.get("solver", "")), _e("yes" if m.get("optimal") else "no"),
                     _e(cost), _e(default), _e(saved), _e(m.get("gpu_of_rank", ""))])
    return _table(["mapping", "metric", "solver", "proven optimal", "cost", "default cost", "saved", "GPU of rank"],
                  rows, numeric=(4, 5, 6))


def _problems_section(records: Sequence[RunRecord], labels: Sequence[str]) -> str:
    """One row per (run, status, method, reason) with how many entries it covers and a few of their
    pairs; every entry folds below (at most ``MAX_PROBLEM_ROWS``)."""
    groups: dict[tuple[str, str, str, str], list[str]] = {}
    rows = []
    for r, label in zip(records, labels):
        for m in r.measurements:
            if m.status is Status.OK:
                continue
            pair = f"{F._endpoint(m.src)}→{F._endpoint(m.dst)}"
            reason = _GPU_NUMBER.sub(r"\1 #", m.reason or "no reason given")  # one row for every pair's same reason
            groups.setdefault((label, m.status.value, m.method, reason), []).append(pair)
            rows.append([_e(label), _e(m.method), _e(m.pattern), _e(pair), _e(format_size(m.size_bytes)),
                         f'<span class="{m.status.value}">{_e(m.status.value)}</span>', _e(m.reason)])
    if not rows:
        return ""
    summary_rows = []
    for (label, status, method, reason), pairs in groups.items():
        shown = sorted(dict.fromkeys(pairs), key=F.natural_key)
        summary_rows.append([_e(label), f'<span class="{status}">{_e(status)}</span>', _e(method), str(len(pairs)),
                             _e(", ".join(shown[:4]) + (" …" if len(shown) > 4 else "")), _e(reason)])
    summary = _table(["run", "status", "method", "entries", "pairs", "reason"], summary_rows, numeric=(3,))
    more = ""
    if len(rows) > MAX_PROBLEM_ROWS:
        more = f'<p class="muted">{len(rows) - MAX_PROBLEM_ROWS} more not shown (see the JSON).</p>'
        rows = rows[:MAX_PROBLEM_ROWS]
    table = _table(["run", "method", "pattern", "pair", "size", "status", "reason"], rows)
    return (f'<section id="problems"><h2>Waived and failed entries</h2>{summary}<details><summary>every entry '
            f"({sum(len(p) for p in groups.values())})</summary>{table}{more}</details></section>")


def _heat_colour(cmap: Any, fraction: float) -> tuple[str, str]:
    """(background, text colour) of a cell: the colour map at ``fraction``, black or white text by luminance."""
    r, g, b, _ = cmap(0.06 + 0.8 * min(max(fraction, 0.0), 1.0))  # neither end of the map: no white, no black cells
    text = "#000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "#fff"
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}", text


EFFICIENCY_CMAP = "RdYlGn"  # red (far below the route's bottleneck) to green (at it)


def _cell(value: float, text: str, fraction: float | None, cmap: Any, title: str = "") -> str:
    if fraction is None:
        return f'<td class="num"{title}>{_e(text)}</td>'
    bg, fg = _heat_colour(cmap, fraction)
    return f'<td class="num" style="background:{bg};color:{fg}"{title}>{_e(text)}</td>'


def _heat_table(panel: F.HeatPanel, scale: tuple[float, float]) -> str:
    """A matrix as an HTML table with coloured cells (no image to draw: the report's matrices cost
    nothing to render and their numbers stay text). A bandwidth cell shows its GB/s and is coloured
    by its efficiency, measured / the route's theoretical bottleneck (50 GB/s on a 200 GB/s link is
    red, not bright); a cell without a theoretical value stays white. Latency is coloured on one
    absolute scale for the report."""
    import matplotlib

    by_eff = panel.quantity != "latency"
    cmap = matplotlib.colormaps[EFFICIENCY_CMAP if by_eff else F.HEAT_CMAPS[panel.quantity]]
    lo, hi = scale
    effs = panel.efficiency or tuple(tuple(None for _ in row) for row in panel.values)

    def fraction(v: float, eff: float | None) -> float | None:
        if by_eff:
            return eff
        return (v - lo) / (hi - lo) if hi > lo else 0.0

    def title(eff: float | None) -> str:
        return f' title="{eff:.0%} of the route\'s theoretical bottleneck"' if eff is not None else ""

    filled = [(a, b, v, e) for a, row, erow in zip(panel.names, panel.values, effs) for b, v, e in zip(panel.names, row, erow)
              if v is not None]
    sim = ' <span class="tag sim">SIMULATED</span>' if panel.simulated else ""
    legend = ('<div class="scale">colour = measured / route bottleneck: '
              + "".join(f'<span class="swatch" style="background:{_heat_colour(cmap, k / 4)[0]}"></span>{25 * k}% '
                        for k in range(5)) + "</div>") if by_eff else (
        f'<div class="scale">{_e(panel.unit)}: '
        + "".join(f'<span class="swatch" style="background:{_heat_colour(cmap, k / 4)[0]}"></span>'
                  f"{_e(panel.fmt.format(lo + (hi - lo) * k / 4))} " for k in range(5)) + "</div>")
    if len(panel.names) > 2 and len(filled) <= len(panel.names):  # a ring's n flows: one row per flow, not a grey matrix
        rows = "".join(f"<tr><th>{_e(a)}→{_e(b)}</th>{_cell(v, panel.fmt.format(v), fraction(v, e), cmap, title(e))}</tr>"
                       for a, b, v, e in sorted(filled, key=lambda f: (F.natural_key(f[0]), F.natural_key(f[1]))))
        return (f'<figure id="fig-{_e(panel.name)}"><table class="heat"><caption>{_e(panel.title)} ({_e(panel.unit)}), '
                f'one row per flow</caption><thead><tr><th>flow</th><th>{_e(panel.unit)}</th></tr></thead><tbody>{rows}</tbody>'
                f"</table>{legend}<figcaption>{sim.strip()} {_e(panel.caption)}</figcaption></figure>")
    head = "".join(f"<th>{_e(n)}</th>" for n in panel.names)
    body = []
    for name, values, marks, erow in zip(panel.names, panel.values, panel.marks, effs):
        cells = []
        for v, mark, e in zip(values, marks, erow):
            if v is None:
                cells.append(f'<td class="na">{_e(mark)}</td>')
            else:
                cells.append(_cell(v, panel.fmt.format(v), fraction(v, e), cmap, title(e)))
        body.append(f"<tr><th>{_e(name)}</th>{''.join(cells)}</tr>")
    return (f'<figure id="fig-{_e(panel.name)}"><table class="heat"><caption>{_e(panel.title)} ({_e(panel.unit)})</caption>'
            f'<thead><tr><th>src \\ dst</th>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>{legend}'
            f"<figcaption>{sim.strip()} {_e(panel.caption)}</figcaption></figure>")


def _heat_section(panels: Sequence[F.HeatPanel], scales: dict[str, tuple[float, float]]) -> str:
    """Per run, its first bandwidth matrix and its first latency matrix open, side by side where
    they fit; every other matrix folds below (``<details>``)."""
    main: list[F.HeatPanel] = []
    seen: set[tuple[str, str]] = set()
    # one-way before pair totals, and the latency of a load (remote read) before the others
    ordered = sorted(panels, key=lambda p: (p.quantity == "total", "remote-read" not in p.name))
    for p in ordered:
        run = p.title.split(":")[0]
        kind = "latency" if p.quantity == "latency" else "bandwidth"
        if (run, kind) not in seen and (kind == "latency" or len(p.names) > 2 or p.quantity != "total"):
            seen.add((run, kind))
            main.append(p)
    rest = [p for p in panels if p not in main]
    out = '<div class="grid">' + "".join(_heat_table(p, scales[p.quantity]) for p in main) + "</div>"
    if rest:
        out += (f"<details><summary>{len(rest)} more matri{'x' if len(rest) == 1 else 'ces'} (both directions, other "
                f"methods, concurrent flows)</summary><div class=\"grid\">"
                + "".join(_heat_table(p, scales[p.quantity]) for p in rest) + "</div></details>")
    return out


def _topo_m_tables(records: Sequence[RunRecord]) -> str:
    """The ``nvidia-smi topo -m`` layout of each distinct embedded topology (levels, CPU and NUMA
    affinity, NIC columns and the NIC legend); a topology that cannot be read is skipped (the
    topology figure's note says why)."""
    from ..errors import UserError
    from ..topology.model import DeviceKind
    from .topology_view import embedded_topologies, topo_m_rows

    out = []
    for item in embedded_topologies(records):
        topology = item.topology
        if topology is None:
            continue
        try:
            rows, legend = topo_m_rows(topology, list(topology.gpus), list(topology.of_kind(DeviceKind.NIC)))
        except UserError:
            continue
        if len(rows) > 1 + 24:  # a cluster's: nvidia-smi's view is one node's
            out.append(f'<p class="muted">{_e(topology.name)}: {len(rows) - 1} GPUs and NICs, too many for one nvidia-smi '
                       "topo -m matrix; linkscope topo --from the RunRecord's topology prints it, split to fit.</p>")
            continue
        table = _table(rows[0], [[_e(c) for c in row] for row in rows[1:]])
        nic = f'<p class="muted">NIC Legend: {_e(", ".join(f"{n}: {name}" for n, name in legend))}</p>' if legend else ""
        out.append(f"<details><summary>{_e(topology.name)}: nvidia-smi topo -m layout</summary>"
                   f'<div class="topo">{table}</div>{nic}</details>')
    return "".join(out)


def build_figures(records: Sequence[RunRecord], *, heatmap_pngs: bool = True) -> tuple[list[F.FigureItem], dict[str, Any], list[str]]:
    """All figures plus the tables' data (comparisons, totals, mappings, heatmap panels) and notes.
    ``heatmap_pngs`` False: the matrices are only data (the HTML draws them as tables)."""
    labels = F.run_labels(records)
    items, notes = F.topology_figures(records, labels)
    panels = F.heatmap_panels(records, labels)
    scales = F.heat_scales(panels)
    if heatmap_pngs:
        items += [F.heatmap_figure(p, scales[p.quantity]) for p in panels]
    items += F.curve_figures(records, labels)
    items += F.comm_figures(records, labels)
    comps = F.comparisons(records, labels)
    items += F.comparison_figures(comps)
    totals = F.pattern_totals(records, labels)
    fig = F.contention_figure(totals)
    if fig:
        items.append(fig)
    maps = F.mappings(records, labels)
    fig = F.mapping_figure(maps, any(F.is_simulated(r) for r in records if (r.extra or {}).get("mapping") is not None))
    if fig:
        items.append(fig)
    # unique file stems
    seen: dict[str, int] = {}
    unique = []
    for item in items:
        n = seen.get(item.name, 0)
        seen[item.name] = n + 1
        unique.append(item if n == 0 else F.FigureItem(f"{item.name}-{n + 1}", item.section, item.title, item.caption,
                                                        item.fig, item.simulated))
    return unique, {"labels": labels, "comparisons": comps, "totals": totals, "mappings": maps, "panels": panels,
                    "scales": scales}, notes


#: Sections whose body folds under one line (the concurrency section keeps its summary table open).
FOLDED = {"curves": "the curves (bandwidth by message size)", "model": "the chart and the per-entry table",
          "concurrency": f"the chart of every pattern's {AGGREGATE_RATE}"}

_SECTIONS = (
    ("topology", "Topology"),
    ("heatmaps", "Bandwidth and latency matrices"),
    ("curves", "Bandwidth vs message size"),
    ("comm", "MPI / NCCL collectives and halo exchange"),
    ("model", "Results vs predicted and theoretical bandwidth"),
    ("concurrency", "Concurrency and contention"),
    ("mapping", "Rank mapping"),
)


def render_html(records: Sequence[RunRecord], pngs: dict[str, bytes] | None = None, *,
                heatmap_pngs: bool = False) -> tuple[str, list[F.FigureItem], list[str]]:
    """The HTML text, the figures (for PNG output) and notes. ``pngs`` caches rendered PNGs by name.
    The matrices are HTML tables; ``heatmap_pngs`` also draws them as figures (for ``--png``)."""
    items, data, notes = build_figures(records, heatmap_pngs=heatmap_pngs)
    labels = data["labels"]
    pngs = {} if pngs is None else pngs
    for item in items:
        pngs[item.name] = plots.png_bytes(item.fig)
    simulated = [label for r, label in zip(records, labels) if r.provenance is RunProvenance.SIMULATED
                 or any(m.provenance is RunProvenance.SIMULATED for m in r.measurements)]
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           "<title>linkscope report</title>", f"<style>{_CSS}</style></head><body>",
           f"<header><h1>linkscope report</h1><p>{len(records)} run(s) · generated {now} · "
           f"{_e(RATE_UNIT_NOTE)}</p></header><main>"]
    if simulated:
        out.append(f'<div class="banner" id="simulated-banner">SIMULATED: the numbers of {_e(", ".join(simulated))} '
                   "come from the fabric model, not from hardware.</div>")
    out.append(_verdict_section(records, labels))
    out.append(_findings_section(records, labels))
    out.append(check_section(records, labels))
    out.append(_runs_section(records, labels))
    for section, heading in _SECTIONS:
        section_items = [i for i in items if i.section == section]
        extra = ""
        if section == "topology":
            extra = _topo_m_tables(records)
        if section == "heatmaps":
            section_items = []  # the tables stand for them (their PNGs, if drawn, go to --png only)
            extra = _heat_section(data["panels"], data["scales"])
        if section == "model" and data["comparisons"]:
            extra = _comparison_table(data["comparisons"])
        elif section == "concurrency" and data["totals"]:
            extra = _totals_table(data["totals"])
        elif section == "mapping" and data["mappings"]:
            extra = _mapping_table(data["mappings"])
        if not section_items and not extra:
            continue
        figs = "".join(_figure_html(i, pngs[i.name]) for i in section_items)
        if section in FOLDED:  # evidence behind the verdict: one line, open on demand
            what = FOLDED[section]
            body = figs + extra if section != "concurrency" else extra + f"<details><summary>{what}</summary>{figs}</details>"
            if section != "concurrency":
                body = f"<details><summary>{what}</summary>{body}</details>"
            out.append(f'<section id="{section}"><h2>{_e(heading)}</h2>{body}</section>')
            continue
        out.append(f'<section id="{section}"><h2>{_e(heading)}</h2>{figs}{extra}</section>')
    out.append(_problems_section(records, labels))
    if notes:
        out.append('<section id="notes"><h2>Notes</h2><ul>' + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></section>")
    if not items:
        out.append('<section><p class="muted">No figure: the runs hold no plottable result.</p></section>')
    out.append('<p class="muted">Made by linkscope. Self-contained: no network access is needed to view this file.</p>')
    out.append("</main></body></html>")
    return "\n".join(p for p in out if p), items, notes


def write_report(records: list[RunRecord], path: str | Path, png_dir: str | Path | None = None) -> ReportResult:
    """Write the HTML report (atomically) and, with ``png_dir``, every figure as ``<name>.png``."""
    from ..errors import UserError

    if not records:
        raise UserError("no run records to report on")
    pngs: dict[str, bytes] = {}
    text, items, notes = render_html(records, pngs, heatmap_pngs=png_dir is not None)
    path = Path(path)
    files: list[Path] = []
    if png_dir is not None:  # the figures first, all or none; then the report that describes them
        files = write_files_atomic(png_dir, {f"{item.name}.png": pngs[item.name] for item in items})
    write_text_atomic(path, text)
    return ReportResult(path, tuple(i.name for i in items), tuple(files), tuple(notes))
