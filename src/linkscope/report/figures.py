"""The report's figures, built from RunRecords: topology graph, bandwidth and latency heatmaps,
bandwidth-vs-size curves, measured vs predicted vs theoretical, concurrency totals, mappings.

Each builder returns ``FigureItem``s (a file stem, a title, a caption, a Matplotlib figure); html.py
embeds them and writes them as PNG. Figures holding simulated numbers carry a SIMULATED watermark
and their series say ``[simulated]``.
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..patterns.methods import latency_timing
from ..results.findings import AGGREGATE_RATE, AGGREGATE_RATE_MEANING, CONCURRENT_PATTERNS
from ..results.schema import ALL, HOST, Measurement, RunProvenance, RunRecord, Status
from ..units import format_size
from . import plots

MAX_HEATMAPS = 16
MAX_SERIES_PER_CURVE = 14


@dataclass(frozen=True)
class FigureItem:
    """One figure: ``name`` is a file stem (letters, digits, '-', '_'); ``fig`` a Matplotlib Figure."""

    name: str
    section: str
    title: str
    caption: str
    fig: Any
    simulated: bool = False


def _slug(text: str) -> str:
    out = "".join(c if c.isalnum() else "-" for c in text.lower())
    while "--" in out:
        out = out.replace("--", "-")
    return out.strip("-")[:60] or "x"


def run_labels(records: Sequence[RunRecord]) -> list[str]:
    """A short legend label per record: context label, else host (the topology for simulated runs) + kind;
    numbered when they repeat."""
    base: list[str] = []
    for r in records:
        ctx = r.context or {}
        where = ctx.get("host") or ctx.get("hostname") or ""
        if is_simulated(r) and r.topology:  # a simulated run describes its topology, not the host it ran on
            where = r.topology.get("name") or where
        label = ctx.get("label") or " ".join(str(x) for x in (where, r.kind) if x)
        base.append(label or f"run {len(base) + 1}")
    counts: dict[str, int] = defaultdict(int)
    for label in base:
        counts[label] += 1
    seen: dict[str, int] = defaultdict(int)
    out = []
    for label in base:
        if counts[label] > 1:
            seen[label] += 1
            label = f"{label} #{seen[label]}"
        out.append(label)
    return out


def is_simulated(record: RunRecord, m: Measurement | None = None) -> bool:
    if m is not None:
        return m.provenance is RunProvenance.SIMULATED
    return record.provenance is RunProvenance.SIMULATED


def _endpoint(value: Any) -> str:
    if value == HOST:
        return "host"
    if value == ALL:
        return "all"
    return f"GPU{value}"


def _is_pair(m: Measurement) -> bool:
    return m.scope == "transfer" and m.src != ALL and m.dst != ALL and (isinstance(m.src, int) or m.src == HOST) \
        and (isinstance(m.dst, int) or m.dst == HOST)


# ---- topology ---------------------------------------------------------------------------------

def topology_figure(topology: Any, title: str, simulated: bool) -> FigureItem:
    """The topology by tiers (report/topology_figure.py), with its description, source and notes."""
    from .topology_figure import draw

    fig = draw(topology, title, simulated)
    caption = (f"{(topology.description or topology.name).rstrip('.')}. Tiers top to bottom: fabric switches, GPUs, "
               f"NICs beside their GPUs, PCIe switches, host bridges, CPUs / NUMA nodes; pass-through bridges are folded "
               f"into their links; the legend gives each kind of link once, per direction (GB/s = 10^9 B/s). "
               f"Source: {topology.source or 'n/a'}.")
    notes = tuple(getattr(topology, "notes", ()) or ())
    if notes:
        from .topology_view import confidence_legend

        legend = confidence_legend(notes)
        caption += " Notes: " + " ".join(n.rstrip(".") + "." for n in notes) + (f" Confidence marks: {legend}." if legend else "")
    return FigureItem(f"topology-{_slug(topology.name)}", "topology", title, caption, fig, simulated)


def topology_figures(records: Sequence[RunRecord], labels: Sequence[str]) -> tuple[list[FigureItem], list[str]]:
    """One drawing per distinct embedded topology; problems (a malformed topology) come back as notes."""
    from .topology_view import embedded_topologies

    items, notes = [], []
    for item in embedded_topologies(records, labels):
        if item.topology is None:
            notes.append(f"{item.label}: embedded topology not drawn ({item.error})")
            continue
        items.append(topology_figure(item.topology, f"Topology: {item.topology.name}", is_simulated(item.record)))
    return items, notes


# ---- heatmaps -------------------------------------------------------------------------------

def natural_key(value: object) -> tuple:
    """Sort key that orders numbers inside text by value: GPU2 before GPU10, ``all→GPU9`` before ``all→GPU10``."""
    import re

    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", str(value)) if part)


def _matrix(entries: list[Measurement], value) -> tuple[list[str], list[list[float | None]], list[list[str]]]:
    ends = sorted({e for m in entries for e in (m.src, m.dst)}, key=lambda e: (isinstance(e, str), str(e) if isinstance(e, str) else e))
    index = {e: i for i, e in enumerate(ends)}
    n = len(ends)
    values: list[list[float | None]] = [[None] * n for _ in range(n)]
    marks = [["" if i != j else "–" for j in range(n)] for i in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j:
                marks[i][j] = "N/A"
    for m in entries:
        i, j = index[m.src], index[m.dst]
        v = value(m)
        if m.status is Status.OK and v is not None:
            values[i][j] = v
        elif m.status is Status.WAIVED:
            marks[i][j] = "waived"
        elif m.status is Status.ERROR:
            marks[i][j] = "error"
    return [_endpoint(e) for e in ends], values, marks


@dataclass(frozen=True)
class HeatPanel:
    """One matrix of the report (pure data): the HTML draws it as a coloured table, ``heatmap_figure``
    as a Matplotlib figure (``--png``). ``quantity`` names its scale: every panel of one quantity
    (``bandwidth``: GB/s per direction or per flow, ``total``: GB/s of both directions of a pair,
    ``latency``: µs) shares one colour scale, so a contended flow never looks as bright as a free one."""

    name: str
    title: str
    caption: str
    names: tuple[str, ...]
    values: tuple[tuple[float | None, ...], ...]
    marks: tuple[tuple[str, ...], ...]
    quantity: str
    unit: str
    fmt: str
    simulated: bool
    #: measured / the route's theoretical bottleneck per cell (None: no theoretical value, or latency)
    efficiency: tuple[tuple[float | None, ...], ...] = ()


#: sequential colour maps (light = little, dark = much): nothing here is an alarm
HEAT_CMAPS = {"bandwidth": "viridis_r", "total": "viridis_r", "latency": "Purples"}


def heatmap_panels(records: Sequence[RunRecord], labels: Sequence[str]) -> list[HeatPanel]:
    panels: list[HeatPanel] = []
    for record, label in zip(records, labels):
        groups: dict[tuple[str, str, str], list[Measurement]] = defaultdict(list)
        for m in record.measurements:
            # GPU-to-GPU pairs only: host transfers are a column, not a matrix (curves and tables show them).
            # One matrix per pattern: a ring's flows must not overwrite the pair matrix's cells.
            ends_ok = m.src != ALL and m.dst != ALL and isinstance(m.src, int) and isinstance(m.dst, int) and m.src != m.dst
            if not ends_ok:
                continue
            # a bi matrix shows each pair's total of both directions (as the console does), mirrored;
            # every other matrix shows its single flows
            if m.pattern == "matrix" and m.direction == "bi":
                if m.scope == "total":
                    groups[(m.method, m.pattern, m.direction)] += [m, m.with_(src=m.dst, dst=m.src)]
            elif m.scope != "total":
                groups[(m.method, m.pattern, m.direction)].append(m)
        order = sorted(groups.items(), key=lambda kv: (kv[0][1] not in ("matrix", "latency"), kv[0]))
        for (method, pattern, direction), entries in order:
            method = method if pattern in ("matrix", "latency") else f"{method} {pattern}"
            bw_sizes = [m.size_bytes for m in entries if m.bandwidth is not None or m.latency is None]
            if bw_sizes:
                size = max(bw_sizes)
                chosen = [m for m in entries if m.size_bytes == size and (m.bandwidth is not None or m.latency is None)]
                measured = [m for m in chosen if m.status is Status.OK]
                # a pattern whose every entry was waived is a line in the problems table, not a grey matrix
                if measured and (len({(m.src, m.dst) for m in chosen}) >= 2 or len({e for m in chosen for e in (m.src, m.dst)}) >= 3):
                    panels.append(_panel(record, label, method, direction, size, chosen, "bandwidth"))
            lat = [m for m in entries if m.latency is not None or (m.bandwidth is None and m.status is not Status.OK)]
            lat_sizes = [m.size_bytes for m in lat if m.latency is not None]
            if lat_sizes:
                size = min(lat_sizes)
                chosen = [m for m in lat if m.size_bytes == size]
                if len({(m.src, m.dst) for m in chosen}) >= 2:
                    panels.append(_panel(record, label, method, direction, size, chosen, "latency"))
            if len(panels) >= MAX_HEATMAPS:
                return panels
    return panels


def heat_scales(panels: Sequence[HeatPanel]) -> dict[str, tuple[float, float]]:
    """One (vmin, vmax) per quantity over every panel of it."""
    out: dict[str, tuple[float, float]] = {}
    for quantity in {p.quantity for p in panels}:
        finite = [v for p in panels if p.quantity == quantity for row in p.values for v in row if v is not None]
        out[quantity] = (0.0, max(finite) if finite else 1.0)
    return out


def _panel(record: RunRecord, label: str, method: str, direction: str, size: int,
           entries: list[Measurement], what: str) -> HeatPanel:
    simulated = is_simulated(record) or any(is_simulated(record, m) for m in entries)
    names, values, marks = _matrix(entries, (lambda m: m.median_gb_per_s) if what == "bandwidth" else (lambda m: m.latency_us))
    eff: tuple[tuple[float | None, ...], ...] = ()
    if what == "bandwidth":
        _, effs, _ = _matrix(entries, _efficiency)
        eff = tuple(tuple(r) for r in effs)
    finite = [v for row in values for v in row if v is not None]
    total = direction == "bi" and what == "bandwidth" and "total" in {m.scope for m in entries}
    if what == "bandwidth":
        fmt = "{:.0f}" if finite and max(finite) >= 100 else "{:.1f}"
        what_text = "both ways (pair total)" if total else ("one way" if direction == "uni" else direction)
        title = f"{label}: {method} {what_text}, {format_size(size)}"
        quantity, unit = ("total", "GB/s (pair total)") if total else ("bandwidth", "GB/s")
    else:
        fmt = "{:.2f}"
        size_text = f", {format_size(size)}" if size else ""
        title = f"{label}: {method}{'' if 'latency' in method else ' latency'}{size_text}"
        quantity, unit = "latency", "µs"
    word = "simulated by the fabric model" if simulated else "median over repetitions"
    unit_text = ("GB/s, pair total (both directions)" if total
                 else "GB/s, per direction" if what == "bandwidth" else f"µs, {latency_timing(method.split()[0])}")
    caption = (f"{word.capitalize()} ({unit_text}); one colour scale for every {unit} matrix of the report; "
               "grey cells are not measured: N/A, waived (the pattern does not apply) or error.")
    return HeatPanel(f"{what}-{_slug(label)}-{_slug(method)}-{direction}", title, caption, tuple(names),
                     tuple(tuple(r) for r in values), tuple(tuple(r) for r in marks), quantity, unit, fmt, simulated, eff)


def _efficiency(m: Measurement) -> float | None:
    """measured / theoretical bottleneck of the route (a pair total against its own, both directions)."""
    theo = _num(m.extra, "theoretical_gb_per_s")
    return m.median_gb_per_s / theo if theo and m.median_gb_per_s is not None else None


def heatmap_figure(panel: HeatPanel, scale: tuple[float, float]) -> FigureItem:
    """The panel as a Matplotlib figure (for ``--png``), on the report's scale of its quantity."""
    n = len(panel.names)
    fig = plots.new_figure(min(max(5.0, 3.2 + 0.55 * n), 11), min(2.6 + 0.45 * n, 9))
    ax = fig.add_subplot(1, 1, 1)
    plots.heatmap(ax, [list(r) for r in panel.values], [list(r) for r in panel.marks], panel.names, panel.names,
                  HEAT_CMAPS[panel.quantity], panel.unit, fig, panel.fmt, vmin=scale[0], vmax=scale[1])
    ax.set_title(panel.title, fontsize=10)
    if panel.simulated:
        plots.stamp_simulated(fig)
    return FigureItem(panel.name, "heatmaps", panel.title, panel.caption, fig, panel.simulated)


def heatmap_figures(records: Sequence[RunRecord], labels: Sequence[str]) -> list[FigureItem]:
    panels = heatmap_panels(records, labels)
    scales = heat_scales(panels)
    return [heatmap_figure(p, scales[p.quantity]) for p in panels]


# ---- bandwidth vs size ----------------------------------------------------------------------

@dataclass(frozen=True)
class Series:
    label: str
    sizes: tuple[int, ...]
    values: tuple[float, ...]
    simulated: bool
    pairs: int
    total: bool = False


def size_series(records: Sequence[RunRecord], labels: Sequence[str], what: str = "bandwidth") -> list[Series]:
    """One series per (run, method, pattern, direction, scope) with >= 2 sizes; median over entries
    (e.g. pairs) at each size, ok entries only."""
    out = []
    for record, label in zip(records, labels):
        groups: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
        npairs: dict[tuple, set] = defaultdict(set)
        sim: dict[tuple, bool] = defaultdict(bool)
        for m in record.measurements:
            v = m.median_gb_per_s if what == "bandwidth" else m.latency_us
            if m.status is not Status.OK or v is None or m.pattern in _COMM_PATTERNS:
                continue
            key = (m.method, m.pattern, m.direction, m.scope)
            groups[key][m.size_bytes].append(v)
            npairs[key].add((m.src, m.dst))
            sim[key] = sim[key] or is_simulated(record, m) or is_simulated(record)
        for key, by_size in sorted(groups.items()):
            if len(by_size) < 2:
                continue
            method, pattern, direction, scope = key
            sizes = tuple(sorted(by_size))
            tail = f" ({pattern}, {direction}{', total' if scope == 'total' else ''})"
            name = f"{label}: {method}{tail}" + (" [simulated]" if sim[key] else "")
            out.append(Series(name, sizes, tuple(statistics.median(by_size[s]) for s in sizes), sim[key], len(npairs[key]),
                              scope == "total" or ALL in {e for pair in npairs[key] for e in pair}))
    return out


_COMM_PATTERNS = ("collective", "stencil")
"""Drawn by comm_figures (busbw per placement, time per mapping), not by the generic curves."""


def _line_figure(name: str, title: str, ylabel: str, caption: str,
                 lines: list[tuple[str, list[tuple[int, float]], bool]], log_y: bool = False) -> FigureItem:
    """One figure of value-vs-size lines (label, points, simulated); dashed lines are simulated."""
    fig = plots.new_figure(8.0, 4.8)
    ax = fig.add_subplot(1, 1, 1)
    sizes: set[int] = set()
    for label, points, simulated in lines:
        xs, ys = zip(*sorted(points))
        ax.plot(xs, ys, marker="o", ms=3, lw=1.4, label=label + (" [simulated]" if simulated else ""),
                ls="--" if simulated else "-")
        sizes.update(xs)
    plots.log2_size_axis(ax, sorted(sizes))
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("message size")
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    ax.set_title(title, fontsize=10)
    simulated = bool(lines) and all(sim for _, _, sim in lines)
    if simulated:
        plots.stamp_simulated(fig)
    return FigureItem(name, "comm", title, caption, fig, simulated)


def comm_figures(records: Sequence[RunRecord], labels: Sequence[str]) -> list[FigureItem]:
    """``bench nccl``: busbw and time vs size (one line per run, operation and placement);
    ``bench stencil``: time per halo exchange vs halo size, default mapping against the chosen one.
    (``bench mpi`` and ``bench p2p`` records are drawn by the generic curves and heatmaps.)"""
    busbw: list[tuple[str, list[tuple[int, float]], bool]] = []
    times: list[tuple[str, list[tuple[int, float]], bool]] = []
    stencil: list[tuple[str, list[tuple[int, float]], bool]] = []
    for record, label in zip(records, labels):
        groups: dict[tuple, list[Measurement]] = defaultdict(list)
        for m in record.measurements:
            if m.status is Status.OK and m.pattern in _COMM_PATTERNS:
                place = ("in place" if m.extra.get("inplace") else "out of place") if m.pattern == "collective" \
                    else str(m.extra.get("mapping", "?"))
                groups[(m.pattern, m.method, place)].append(m)
        sim = is_simulated(record)
        for (pattern, method, place), ms in sorted(groups.items()):
            if pattern == "collective":
                bus = [(m.size_bytes, float(m.extra["busbw_gb_per_s"])) for m in ms if _num(m.extra, "busbw_gb_per_s")]
                if bus:
                    busbw.append((f"{label}: {method} ({place})", bus, sim))
                lat = [(m.size_bytes, m.latency_us) for m in ms if m.latency_us]
                if lat:
                    times.append((f"{label}: {method} ({place})", lat, sim))
            else:
                lat = [(m.size_bytes, m.latency.mean) for m in ms if m.latency is not None]
                if lat:
                    stencil.append((f"{label}: mapping {place}", lat, sim))
    items = []
    if busbw:
        items.append(_line_figure("nccl-busbw-vs-size", "NCCL bus bandwidth vs size", "busbw (GB/s)",
                                  "nccl-tests' bus bandwidth: algbw x the operation's factor (2(n-1)/n for allreduce), "
                                  "comparable with one GPU's link speed whatever the rank count.", busbw))
    if times:
        items.append(_line_figure("nccl-time-vs-size", "NCCL time per operation vs size", "time (µs)",
                                  "Median time of one operation; the small-size plateau is the latency floor.",
                                  times, log_y=True))
    if stencil:
        items.append(_line_figure("stencil-time-vs-size", "Halo exchange: default vs mapped", "time per exchange (µs)",
                                  "Mean time of one halo exchange per mapping; a mapping below the default line "
                                  "saves that much per exchange.", stencil, log_y=True))
    return items


def _merged_label(labels: Sequence[str]) -> str:
    """``run: ce, d2h, h2d (sweep, uni) [simulated]`` from labels that differ only in their method."""
    parts = []
    for label in labels:
        run, _, rest = label.partition(": ")
        method, _, tail = rest.partition(" (")
        parts.append((run, method, tail))
    if len({(run, tail) for run, _, tail in parts}) == 1:
        run, _, tail = parts[0]
        return f"{run}: {', '.join(m for _, m, _ in parts)} ({tail}"
    return " = ".join(labels)


def merge_identical(series: Sequence[Series], rel: float = 0.005) -> list[Series]:
    """Series with the same sizes and values (within ``rel``) as one line with one legend entry
    naming them all: lines drawn on top of each other would leave legend entries without a visible line."""
    out: list[Series] = []
    members: list[list[Series]] = []
    for s in series:
        for k, first in enumerate(out):
            if (first.sizes == s.sizes and first.simulated == s.simulated and first.total == s.total
                    and all(abs(a - b) <= rel * max(abs(a), abs(b), 1e-12) for a, b in zip(first.values, s.values))):
                members[k].append(s)
                break
        else:
            out.append(s)
            members.append([s])
    return [group[0] if len(group) == 1 else Series(_merged_label([g.label for g in group]), group[0].sizes,
                                                     group[0].values, group[0].simulated,
                                                     max(g.pairs for g in group), group[0].total)
            for group in members]


def curve_figures(records: Sequence[RunRecord], labels: Sequence[str]) -> list[FigureItem]:
    """Per-transfer and aggregate (concurrent total) curves apart, so one scale fits each; series that
    coincide are one line (``merge_identical``), so every legend entry has a visible line."""
    items = []
    for what, unit, ylabel in (("bandwidth", "GB/s", "bandwidth (GB/s, per direction)"), ("latency", "µs", "latency (µs)")):
        every = merge_identical(size_series(records, labels, what))
        for scope, scope_title in (("transfer", ""), ("total", " (aggregate of concurrent transfers)")):
            series = [s for s in every if s.total == (scope == "total")]
            if not series:
                continue
            chunks = [series[i:i + MAX_SERIES_PER_CURVE] for i in range(0, len(series), MAX_SERIES_PER_CURVE)]
            for k, chunk in enumerate(chunks):
                fig = plots.new_figure(8.0, 4.8)
                ax = fig.add_subplot(1, 1, 1)
                all_sizes: set[int] = set()
                for s in chunk:
                    ax.plot(s.sizes, s.values, marker="o", ms=3, lw=1.4, label=s.label, ls="--" if s.simulated else "-")
                    all_sizes.update(s.sizes)
                plots.log2_size_axis(ax, sorted(all_sizes))
                if what == "latency":
                    ax.set_yscale("log")
                ax.set_xlabel("message size")
                ax.set_ylabel(ylabel if scope == "transfer" else ylabel.replace("per direction", "sum"))
                ax.grid(True, which="major", alpha=0.3)
                ax.legend(fontsize=8, loc="best")
                title = f"{what.capitalize()} vs message size{scope_title}" + (f" ({k + 1}/{len(chunks)})" if len(chunks) > 1 else "")
                ax.set_title(title, fontsize=10)
                simulated = any(s.simulated for s in chunk)
                if simulated and all(s.simulated for s in chunk):
                    plots.stamp_simulated(fig)
                caption = (f"One line per run, method, pattern and direction; each point is the median over the pairs "
                           f"measured at that size ({unit}). Dashed lines, marked [simulated], come from the model.")
                items.append(FigureItem(f"{what}-vs-size-{scope}-{k + 1}", "curves", title, caption, fig, simulated))
    return items


# ---- measured vs predicted vs theoretical -----------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    run: str
    name: str
    size_bytes: int
    measured_gb_per_s: float
    predicted_gb_per_s: float | None
    theoretical_gb_per_s: float | None
    simulated: bool
    group: str = ""

    @property
    def efficiency(self) -> float | None:
        """measured / theoretical, None without a theoretical value."""
        if not self.theoretical_gb_per_s:
            return None
        return self.measured_gb_per_s / self.theoretical_gb_per_s

    @property
    def vs_predicted(self) -> float | None:
        if not self.predicted_gb_per_s:
            return None
        return self.measured_gb_per_s / self.predicted_gb_per_s


def _num(extra: Any, key: str) -> float | None:
    value = (extra or {}).get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def comparisons(records: Sequence[RunRecord], labels: Sequence[str]) -> list[Comparison]:
    """Entries that carry a theoretical or predicted value, at the largest size of each entry."""
    best: dict[tuple, Measurement] = {}
    owner: dict[tuple, tuple[RunRecord, str]] = {}
    for record, label in zip(records, labels):
        for m in record.measurements:
            if m.status is not Status.OK or m.median_gb_per_s is None:
                continue
            if _num(m.extra, "theoretical_gb_per_s") is None and _num(m.extra, "predicted_gb_per_s") is None:
                continue
            if m.pattern == "sweep" and _num(m.extra, "predicted_gb_per_s") is None:
                continue  # a sweep's largest size repeats the matrix or host line; the curves show the sweep
            key = (label, m.method, m.pattern, m.direction, m.scope, str(m.src), str(m.dst))
            if key not in best or m.size_bytes > best[key].size_bytes:
                best[key] = m
                owner[key] = (record, label)
    out = []
    for key, m in best.items():
        record, label = owner[key]
        name = f"{_endpoint(m.src)}→{_endpoint(m.dst)} {m.method}" + (f" {m.pattern}" if m.pattern not in ("matrix", "pairs") else "")
        out.append(Comparison(label, name, m.size_bytes, float(m.median_gb_per_s),  # type: ignore[arg-type]
                              _num(m.extra, "predicted_gb_per_s"), _num(m.extra, "theoretical_gb_per_s"),
                              is_simulated(record, m) or is_simulated(record),
                              f"{m.method} {m.pattern} {m.direction}" + (" total" if m.scope == "total" else "")))
    return out


def comparison_figures(items: list[Comparison]) -> list[FigureItem]:
    """One figure per run: per method/pattern the median over its pairs of measured, predicted and
    theoretical bandwidth (the table beside it lists every pair)."""
    import numpy as np

    out = []
    runs = list(dict.fromkeys(c.run for c in items))
    for run in runs:
        groups: dict[str, list[Comparison]] = defaultdict(list)
        for c in items:
            if c.run == run:
                groups[c.group].append(c)
        names = sorted(groups)[:20]

        def med(values: list[float | None]) -> float:
            known = [v for v in values if v is not None]
            return statistics.median(known) if known else float("nan")

        measured = [med([c.measured_gb_per_s for c in groups[g]]) for g in names]
        predicted = [med([c.predicted_gb_per_s for c in groups[g]]) for g in names]
        theoretical = [med([c.theoretical_gb_per_s for c in groups[g]]) for g in names]
        simulated = all(c.simulated for g in names for c in groups[g])
        word = "simulated" if simulated else "measured"
        has_pred = any(not math.isnan(v) for v in predicted)
        # horizontal bars: the labels stay readable (9 pt) however many groups there are
        fig = plots.new_figure(10.0, 1.4 + 0.45 * len(names) * (3 if has_pred else 2) / 2)
        ax = fig.add_subplot(1, 1, 1)
        y = np.arange(len(names))[::-1]
        h = 0.27 if has_pred else 0.38
        ax.barh(y + h, measured, h, label=word, color="#1f77b4")
        if has_pred:
            ax.barh(y, predicted, h, label="predicted (model)", color="#ff7f0e")
        ax.barh(y - h if has_pred else y, theoretical, h, label="theoretical (links)", color="#bbbbbb")
        for yi, mv, tv, g in zip(y, measured, theoretical, names):
            if not math.isnan(tv) and tv:
                # a concurrent pattern's flow shares its links: its part of the route is a share
                share = g.split(" ")[1:2] != [] and g.split(" ")[1] in CONCURRENT_PATTERNS and not g.endswith(" total")
                ax.text(mv, yi + h, f" {mv:.1f} GB/s = {100 * mv / tv:.0f}%{' share' if share else ''}", ha="left",
                        va="center", fontsize=8)
        ax.set_yticks(y)
        ax.set_yticklabels([f"{g} ({len(groups[g])})" for g in names], fontsize=9)
        ax.set_xlabel("GB/s")
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: the bar labels never run into it
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_xlim(0, max([v for v in measured + theoretical + predicted if not math.isnan(v)] or [1.0]) * 1.25)
        title = f"{run}: {word} vs {'predicted vs ' if has_pred else ''}theoretical"
        ax.set_title(title, fontsize=10)
        if simulated:
            plots.stamp_simulated(fig)
        caption = (f"Median over the entries of each method/pattern (their count in brackets), at the largest size; "
                   f"the percentage after a {word} bar is its efficiency ({word} / theoretical), or, for one flow of "
                   f"a concurrent pattern, its share of the route it shares with the others.")
        out.append(FigureItem(f"measured-vs-predicted-{_slug(run)}", "model", title, caption, fig, simulated))
    return out


# ---- concurrency / contention ------------------------------------------------------------------

@dataclass(frozen=True)
class PatternTotal:
    run: str
    pattern: str
    method: str
    direction: str
    size_bytes: int
    total_gb_per_s: float | None
    theoretical_gb_per_s: float | None
    entries: int
    simulated: bool
    status: str
    reason: str


def pattern_totals(records: Sequence[RunRecord], labels: Sequence[str]) -> list[PatternTotal]:
    """Aggregate entries (``scope=total`` or an endpoint ``*``) at the largest size per pattern/method."""
    best: dict[tuple, Measurement] = {}
    owner: dict[tuple, RunRecord] = {}
    counts: dict[tuple, int] = defaultdict(int)
    for record, label in zip(records, labels):
        for m in record.measurements:
            if not (m.scope == "total" or m.src == ALL or m.dst == ALL):
                continue
            key = (label, m.pattern, m.method, m.direction, str(m.src), str(m.dst))
            counts[key] += 1
            if key not in best or m.size_bytes > best[key].size_bytes:
                best[key] = m
                owner[key] = record
    out = []
    for key, m in sorted(best.items(), key=lambda kv: tuple(natural_key(k) for k in kv[0])):
        label = key[0]
        where = "" if (m.src, m.dst) == (ALL, ALL) else f" {_endpoint(m.src)}→{_endpoint(m.dst)}"
        out.append(PatternTotal(label, m.pattern + where, m.method, m.direction, m.size_bytes, m.median_gb_per_s,
                                _num(m.extra, "theoretical_gb_per_s"), counts[key],
                                is_simulated(owner[key], m) or is_simulated(owner[key]), m.status.value, m.reason))
    return out


def _merge_equal_totals(totals: list[PatternTotal]) -> list[tuple[str, PatternTotal]]:
    """(row label, total) with the groups of one pattern that reached the same total (within 0.5%)
    as one row: ``all-to-one ×8 (all→GPU0 … all→GPU7, each)``."""
    rows: list[tuple[list[PatternTotal], PatternTotal]] = []
    for t in totals:
        base = t.pattern.split(" ")[0]
        for members, first in rows:
            if ((first.run, first.pattern.split(" ")[0], first.method, first.direction, first.theoretical_gb_per_s)
                    == (t.run, base, t.method, t.direction, t.theoretical_gb_per_s)
                    and first.total_gb_per_s is not None and t.total_gb_per_s is not None
                    and abs(first.total_gb_per_s - t.total_gb_per_s) <= 0.005 * max(first.total_gb_per_s, 1e-12)):
                members.append(t)
                break
        else:
            rows.append(([t], t))
    out = []
    for members, first in rows:
        if len(members) == 1:
            out.append((first.pattern, first))
            continue
        wheres = [m.pattern.split(" ", 1)[1] if " " in m.pattern else m.pattern for m in members]
        out.append((f"{first.pattern.split(' ')[0]} ×{len(members)} ({wheres[0]} … {wheres[-1]}, each)", first))
    return out


def contention_figure(totals: list[PatternTotal]) -> FigureItem | None:
    rows = _merge_equal_totals([t for t in totals if t.total_gb_per_s is not None])[:24]
    shown = [t for _, t in rows]
    if not shown:
        return None
    import numpy as np

    fig = plots.new_figure(10.0, 1.4 + 0.4 * len(shown))
    ax = fig.add_subplot(1, 1, 1)
    y = np.arange(len(shown))[::-1]
    all_sim = all(t.simulated for t in shown)
    word = "simulated" if all_sim else "measured" if not any(t.simulated for t in shown) else "measured or simulated"
    total = [t.total_gb_per_s for t in shown if t.total_gb_per_s is not None]  # all of shown
    ax.barh(y, total, 0.6, color="#2ca02c", label=f"{word} {AGGREGATE_RATE}")
    theo = [t.theoretical_gb_per_s if t.theoretical_gb_per_s is not None else np.nan for t in shown]
    if not all(np.isnan(theo)):
        ax.scatter(theo, y, marker="|", s=300, color="black", label="theoretical", zorder=3)
    top = max([v for v in total + theo if not np.isnan(v)] or [1.0]) * 1.2
    for yi, t_gb_per_s in zip(y, total):  # the value at the end of its bar (inside when the bar is long enough)
        inside = t_gb_per_s > 0.15 * top
        ax.text(t_gb_per_s, yi, f"{t_gb_per_s:.1f} " if inside else f" {t_gb_per_s:.1f}", ha="right" if inside else "left",
                va="center", fontsize=8, color="white" if inside else "black", zorder=4)
    multi_run = len({t.run for t in shown}) > 1
    ax.set_yticks(y)
    ax.set_yticklabels([(f"{t.run}: " if multi_run else "") + f"{label} {t.method} {t.direction}" for label, t in rows],
                       fontsize=9)
    ax.set_xlabel(f"{AGGREGATE_RATE} (GB/s)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: bar values never run into it
    finite = [v for v in total + theo if not np.isnan(v)]
    ax.set_xlim(0, max(finite) * 1.2)
    title = f"Concurrent patterns: {AGGREGATE_RATE}"
    ax.set_title(title, fontsize=10)
    simulated = any(t.simulated for t in shown)
    if simulated and all(t.simulated for t in shown):
        plots.stamp_simulated(fig)
    caption = f"Each pattern's {AGGREGATE_RATE_MEANING}; at each pattern's largest size."
    return FigureItem("concurrency", "concurrency", title, caption, fig, simulated)


# ---- mappings ---------------------------------------------------------------------------------

def mappings(records: Sequence[RunRecord], labels: Sequence[str]) -> list[tuple[str, dict]]:
    """``extra["mapping"]`` as (label, mapping dict): accepts one mapping, a list, or a name → mapping dict."""
    out = []
    for record, label in zip(records, labels):
        raw = (record.extra or {}).get("mapping")
        if raw is None:
            continue
        entries: Iterable[tuple[str, Any]]
        if isinstance(raw, dict) and "gpu_of_rank" in raw:
            entries = [(raw.get("label") or f"{raw.get('metric', '')} {raw.get('solver', '')}".strip(), raw)]
        elif isinstance(raw, dict):
            entries = list(raw.items())
        elif isinstance(raw, list):
            entries = [(m.get("label") or f"{m.get('metric', '')} {m.get('solver', '')}".strip() if isinstance(m, dict) else str(i), m)
                       for i, m in enumerate(raw)]
        else:
            continue
        for name, m in entries:
            if isinstance(m, dict):
                out.append((f"{label}: {name}" if len(records) > 1 else str(name), m))
    return out


def mapping_figure(items: list[tuple[str, dict]], simulated: bool) -> FigureItem | None:
    rows = [(name, _num(m, "cost"), _num(m, "default_cost"), m) for name, m in items]
    rows = [r for r in rows if r[1] is not None]
    if not rows:
        return None
    import numpy as np

    fig = plots.new_figure(max(6.0, 0.9 * len(rows) + 3), 4.0)
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r[2] if r[2] is not None else np.nan for r in rows], 0.4, label="default mapping", color="#bbbbbb")
    ax.bar(x + 0.2, [r[1] for r in rows], 0.4, label="chosen mapping", color="#9467bd")
    for xi, (_, cost, default, _) in zip(x, rows):
        if default and cost is not None:  # rows without a cost were dropped above
            ax.text(xi + 0.2, cost, f"{100 * (1 - cost / default):+.0f}%".replace("+", "−") if cost < default else "0%",
                    ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels([r[0] for r in rows], rotation=25, ha="right", fontsize=8)
    units = {str(r[3].get("unit") or "") for r in rows} - {""}
    ax.set_ylabel("cost" + (f" ({units.pop()})" if len(units) == 1 else ""))
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    title = "Rank mapping: cost vs the default mapping"
    ax.set_title(title, fontsize=10)
    if simulated:
        plots.stamp_simulated(fig)
    return FigureItem("mapping", "mapping", title, "Lower is better; the label gives the saving.", fig, simulated)
