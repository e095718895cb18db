"""Rich tables for a terminal: bandwidth matrices (rows = source, columns = destination), size
sweeps, concurrent-pattern tables and latency matrices.

Cells are coloured by efficiency = measured median / theoretical bandwidth of the route (the
topology's per-direction bottleneck; a ``bi`` pair total is compared with twice that): green at
85% or more, yellow at 60% or more, red below. ``N/A`` means not measured (waived or error: the
reasons are listed under the tables) — never zero.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..results.findings import AGGREGATE_RATE, CONCURRENT_PATTERNS, RATE_UNIT_NOTE, VERDICT_KEY
from ..results.schema import Measurement, RunProvenance, RunRecord, Status
from ..units import format_rate, format_size

GOOD_EFFICIENCY = 0.85
FAIR_EFFICIENCY = 0.60
_MAX_SWEEP_PAIRS = 8

LEGEND = ("colour = measured / theoretical bandwidth of the route: "
          "[green]>= 85%[/green], [yellow]>= 60%[/yellow], [red]< 60%[/red]; "
          "a concurrent pattern's flow shows its share of the route, uncoloured; "
          "N/A = not measured (waived or error, reasons below); " + RATE_UNIT_NOTE)


def efficiency(m: Measurement) -> float | None:
    theo = m.extra.get("theoretical_gb_per_s") if m.extra else None
    if m.bandwidth is None or not theo:
        return None
    return m.bandwidth.median / float(theo)


def efficiency_style(eff: float | None) -> str:
    if eff is None:
        return ""
    if eff >= GOOD_EFFICIENCY:
        return "green"
    if eff >= FAIR_EFFICIENCY:
        return "yellow"
    return "red"


def is_shared_flow(m: Measurement) -> bool:
    """A flow of a concurrent pattern: it shares its links with the group's other flows, so its part
    of the route's capacity is a share, not an efficiency to alarm about."""
    return m.pattern in CONCURRENT_PATTERNS and m.scope == "transfer"


def _bw_cell(m: Measurement | None) -> Text:
    if m is None or m.status is not Status.OK or m.bandwidth is None:
        return Text("N/A", style="dim")
    return Text(format_rate(m.bandwidth.median), style="" if is_shared_flow(m) else efficiency_style(efficiency(m)))


def _eff_cell(m: Measurement, shared: bool | None = None) -> Text | str:
    eff = efficiency(m)
    if eff is None:
        return ""
    if is_shared_flow(m) if shared is None else shared:
        return Text(f"{eff * 100:.0f}% share")
    return Text(f"{eff * 100:.0f}%", style=efficiency_style(eff))


def _lat_cell(m: Measurement | None) -> Text:
    if m is None or m.status is not Status.OK or m.latency is None:
        return Text("N/A", style="dim")
    return Text(f"{m.latency.median:.2f}")


def _ends(ms: Iterable[Measurement]) -> list[int]:
    return sorted({e for m in ms for e in (m.src, m.dst) if isinstance(e, int) and not isinstance(e, bool)})


def _is_pattern_waiver(m: Measurement) -> bool:
    return m.src == "*" and m.dst == "*" and m.status is not Status.OK and m.scope == "transfer"


def _titled(title: str, table: Table) -> Group:
    """A title line that does not wrap to the table's width, then the table."""
    return Group(Text(title, style="bold"), table)


DEFAULT_WIDTH = 80


@dataclass(frozen=True)
class Column:
    """One column of a :func:`fitted` table: ``short`` is the header used when the full one does not
    fit; ``key`` columns (row labels) are repeated in every column block; ``wrap`` columns hold free
    text that may fold onto several lines (numbers never do)."""

    header: str
    short: str | None = None
    justify: str = "right"
    key: bool = False
    wrap: bool = False
    style: str | None = None


def _cell_width(cell: Text | str) -> int:
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return max((len(line) for line in text.splitlines()), default=0)


def _table_width(widths: Sequence[int]) -> int:
    """Width of a Rich box table with edges and one space of padding each side."""
    return sum(widths) + 3 * len(widths) + 1


_WRAP_MIN = 12


def fitted(title: str, columns: Sequence[Column], rows: Sequence[Sequence[Text | str]], width: int | None) -> list[Group]:
    """Tables that show every cell whole within ``width`` columns.

    First with the full headers; when those do not fit, with the short ones and free-text columns
    folded; when that still does not fit, the non-key columns are split into blocks, each printed
    with the key columns (``columns 1-6 of 16`` in the title). A number is never cut to ``1…``.
    """
    width = width or DEFAULT_WIDTH
    body = [max((_cell_width(r[i]) for r in rows), default=0) for i in range(len(columns))]

    def widths(short: bool) -> list[int]:
        out = []
        for i, c in enumerate(columns):
            header = (c.short or c.header) if short else c.header
            w = max(body[i], len(header))
            if short and c.wrap:
                w = min(w, max(_WRAP_MIN, max((len(word) for r in rows for word in str(r[i]).split()), default=0)))
            out.append(w)
        return out

    short = _table_width(widths(False)) > width
    ws = widths(short)
    keys = [i for i, c in enumerate(columns) if c.key]
    others = [i for i, c in enumerate(columns) if not c.key]
    blocks: list[list[int]] = []
    budget = width - _table_width([ws[i] for i in keys])
    current: list[int] = []
    used = 0
    for i in others:
        if current and used + ws[i] + 3 > budget:
            blocks.append(current)
            current, used = [], 0
        current.append(i)
        used += ws[i] + 3
    if current or not blocks:
        blocks.append(current)
    out = []
    for n, block in enumerate(blocks):
        table = Table()
        chosen = keys + block
        for i in chosen:
            c = columns[i]
            header = (c.short or c.header) if short else c.header
            table.add_column(header, justify=c.justify, style=c.style, no_wrap=not c.wrap,  # type: ignore[arg-type]
                             overflow="fold", min_width=ws[i] if not c.wrap else None, max_width=ws[i] if c.wrap else None)
        for r in rows:
            table.add_row(*[r[i] for i in chosen])
        part = ""
        if len(blocks) > 1 and block:
            part = f" [part {n + 1} of {len(blocks)}: columns {columns[block[0]].header} to {columns[block[-1]].header}]"
        out.append(_titled(title + part, table))
    return out


def print_fitted(console: Console, title: str, columns: Sequence[Column], rows: Sequence[Sequence[Text | str]]) -> None:
    for group in fitted(title, columns, rows, console.width):
        console.print(group)


def matrix_table(cells: Mapping[tuple[int | str, int | str], Measurement], gpus: Sequence[int], title: str, *, latency: bool = False,
                 symmetric: bool = False, width: int | None = None) -> list[Group]:
    """Rows = source GPU, columns = destination GPU; ``symmetric`` mirrors pair totals. Wide matrices
    are split into blocks of destination columns, each with the source column."""
    columns = [Column("src \\ dst", "src\\dst", key=True, style="bold")] + [Column(f"GPU{g}", str(g)) for g in gpus]
    rows = []
    for a in gpus:
        row: list[Text | str] = [f"GPU{a}"]
        for b in gpus:
            if a == b:
                row.append(Text("-", style="dim"))
                continue
            m = cells.get((a, b)) or (cells.get((b, a)) if symmetric else None)
            row.append(_lat_cell(m) if latency else _bw_cell(m))
        rows.append(row)
    return fitted(title, columns, rows, width)


def sweep_table(series: dict[str, list[Measurement]], title: str, width: int | None = None) -> list[Group]:
    """Rows = size, columns = series (e.g. pairs)."""
    columns = [Column("size", key=True, style="bold")] + [Column(name) for name in series]
    sizes = sorted({m.size_bytes for ms in series.values() for m in ms})
    by = {name: {m.size_bytes: m for m in ms} for name, ms in series.items()}
    rows: list[list[Text | str]] = [[format_size(size), *[_bw_cell(by[name].get(size)) for name in series]] for size in sizes]
    return fitted(title, columns, rows, width)


ENTRY_COLUMNS = (Column("size", key=True), Column("flow", key=True, justify="left"), Column("median GB/s", "med GB/s"),
                 Column("theor. GB/s", "theo GB/s"), Column("eff."), Column("status", justify="left"), Column("min"),
                 Column("max"), Column("CV %", "CV%"), Column("n"), Column("group", justify="left", wrap=True))


def entries_table(ms: Sequence[Measurement], title: str, width: int | None = None) -> list[Group]:
    rows: list[list[Text | str]] = []
    flows_in: dict[int | None, int] = {}
    for m in ms:
        if m.scope == "transfer":
            flows_in[m.group] = flows_in.get(m.group, 0) + 1
    for m in ms:
        bw = m.bandwidth if m.status is Status.OK else None
        theo = m.extra.get("theoretical_gb_per_s")
        rows.append([
            format_size(m.size_bytes),
            f"{m.src} -> {m.dst}" + ("" if m.scope == "transfer" else " pair total" if m.extra.get("aggregate") == "pair"
                                     else f" {AGGREGATE_RATE}"),
            _bw_cell(m),
            format_rate(theo) if theo else "",
            _eff_cell(m, shared=is_shared_flow(m) and (m.group is None or flows_in.get(m.group, 0) > 1)),
            m.status.value,
            format_rate(bw.min) if bw else "",
            format_rate(bw.max) if bw else "",
            f"{bw.cv * 100:.2f}" if bw else "",
            str(bw.n) if bw else "",
            str(m.extra.get("label", "")),
        ])
    # columns that say nothing here are left out, so the numbers fit: status when every entry is ok,
    # group when each label only repeats its flow
    keep = [i for i, c in enumerate(ENTRY_COLUMNS)
            if not (c.header == "status" and all(m.status is Status.OK for m in ms))
            and not (c.header == "group" and all(str(m.extra.get("label", "")) in ("", f"{m.src}->{m.dst}") for m in ms))]
    return fitted(title, [ENTRY_COLUMNS[i] for i in keep], [[row[i] for i in keep] for row in rows], width)


def _print_all(console: Console, groups: list[Group]) -> None:
    for group in groups:
        console.print(group)


def _blocks(ms: Iterable[Measurement]) -> dict[tuple[str, str, str], list[Measurement]]:
    blocks: dict[tuple[str, str, str], list[Measurement]] = {}
    for m in ms:
        blocks.setdefault((m.method, m.pattern, m.direction), []).append(m)
    return blocks


def _matrix_block(console: Console, method: str, direction: str, ms: list[Measurement], provenance: str,
                  pattern: str = "matrix") -> None:
    scope = "total" if direction == "bi" else "transfer"
    cells_ms = [m for m in ms if m.scope == scope and (pattern == "sweep" or (isinstance(m.src, int) and isinstance(m.dst, int)))]
    gpus = _ends(cells_ms)
    sizes = sorted({m.size_bytes for m in cells_ms})
    what = "pair total (both directions)" if direction == "bi" else "one way"
    methods = list(dict.fromkeys(m.method for m in cells_ms))
    one_flow_each = all(len({(m.src, m.dst) for m in cells_ms if m.method == k}) == 1 for k in methods)
    series: dict[str, list[Measurement]] = {}
    for m in cells_ms:
        name = f"{m.src}{'<->' if direction == 'bi' else '->'}{m.dst}"
        if len(methods) > 1:  # several methods: the method names the column (with the flow where it varies)
            name = m.method if one_flow_each else f"{m.method} {name}"
        series.setdefault(name, []).append(m)
    if len(sizes) > 1 and len(series) <= _MAX_SWEEP_PAIRS:
        _print_all(console, sweep_table(series, f"{method} {what}, GB/s by size ({provenance})", console.width))
        return
    for size in sizes:
        cells = {(m.src, m.dst): m for m in cells_ms if m.size_bytes == size}
        _print_all(console, matrix_table(cells, gpus, f"{method} {what}, {format_size(size)}: GB/s ({provenance})",
                                         symmetric=direction == "bi", width=console.width))


def _latency_block(console: Console, method: str, ms: list[Measurement], provenance: str) -> None:
    gpus = _ends(ms)
    for size in sorted({m.size_bytes for m in ms}):
        cells: dict[tuple[int | str, int | str], Measurement] = {
            (m.src, m.dst): m for m in ms if m.size_bytes == size and isinstance(m.src, int) and isinstance(m.dst, int)}
        host = [m for m in ms if m.size_bytes == size and not (isinstance(m.src, int) and isinstance(m.dst, int))]
        size_text = f", {format_size(size)}" if size else ""
        if cells:
            _print_all(console, matrix_table(cells, gpus, f"{method} latency{size_text}: us, median ({provenance})",
                                             latency=True, width=console.width))
        if host:
            rows: list[list[Text | str]] = []
            for m in host:
                lat = m.latency if m.status is Status.OK else None
                rows.append([f"{m.src} -> {m.dst}", _lat_cell(m), f"{lat.min:.2f}" if lat else "",
                             f"{lat.max:.2f}" if lat else "", str(lat.n) if lat else "", m.status.value])
            columns = [Column("flow", key=True, justify="left"), Column("median us"), Column("min"), Column("max"), Column("n"),
                       Column("status", justify="left")]
            print_fitted(console, f"{method} latency{size_text}: us ({provenance})", columns, rows)


def reasons(record: RunRecord) -> list[str]:
    """Unique waiver and error reasons with how many entries each covers."""
    counts: dict[tuple[str, str, str], int] = {}
    for m in record.measurements:
        if m.status is not Status.OK:
            key = (m.status.value, m.method, m.reason or "no reason given")
            counts[key] = counts.get(key, 0) + 1
    return [f"{status} ({method}, {n} entr{'y' if n == 1 else 'ies'}): {reason}" for (status, method, reason), n in counts.items()]


def render_record(console: Console, record: RunRecord, *, show_findings: bool = True) -> None:
    """Every table of a bench, latency or survey record, then the reasons, the legend and findings."""
    provenance = record.provenance.value
    if record.provenance is RunProvenance.SIMULATED:
        console.print(Text("SIMULATED: these numbers come from the fabric model, not from hardware.",
                           style="bold reverse yellow"))
    if not record.complete:
        console.print(Text("INCOMPLETE: the run was interrupted; only what was measured is shown.", style="bold red"))
    verdict = (record.extra or {}).get(VERDICT_KEY)
    if isinstance(verdict, Mapping) and verdict.get("line"):  # the answer first (judge.headline), then the evidence
        line = str(verdict["line"])
        console.print(Text(f"verdict: {line}", style="bold green" if line.startswith("healthy") else "bold"), soft_wrap=True)
        for problem in verdict.get("problems") or []:
            console.print(f"  ! {problem}", markup=False, highlight=False, soft_wrap=True)
    bandwidth = [m for m in record.measurements if m.pattern != "latency"]
    latency = [m for m in record.measurements if m.pattern == "latency"]
    blocks = _blocks(bandwidth)
    sweeps = [key for key in blocks if key[1] == "sweep"]
    for key in sweeps[1:]:  # every sweep of one direction in one table, one column per method and flow
        first = next(k for k in sweeps if k[2] == key[2])
        if first != key:
            blocks[first].extend(blocks.pop(key))
    for (method, pattern, direction), ms in blocks.items():
        if pattern == "sweep":
            method = "/".join(dict.fromkeys(m.method for m in ms))
        whole = [m for m in ms if _is_pattern_waiver(m)]
        rest = [m for m in ms if not _is_pattern_waiver(m)]
        for m in whole[:1]:
            console.print(Text(f"{method} {pattern} {direction}: {m.status.value}: {m.reason}", style="dim"))
        if not rest:
            continue
        if pattern in ("matrix", "sweep"):
            _matrix_block(console, method, direction, rest, provenance, pattern)
        else:
            _print_all(console, entries_table(rest, f"{method} {pattern} {direction} ({provenance})", console.width))
    lat_blocks: dict[str, list[Measurement]] = {}
    for m in latency:
        lat_blocks.setdefault(m.method, []).append(m)
    for method, ms in lat_blocks.items():
        _latency_block(console, method, ms, provenance)
    notes = reasons(record)
    if notes:
        console.print("[bold]not measured:[/bold]")
        for line in notes:
            console.print(f"  {line}", markup=False, highlight=False)
    if bandwidth:
        console.print(LEGEND, style="dim")
    if show_findings and record.findings:
        console.print("[bold]findings:[/bold]")
        for line in record.findings:  # one line each, whatever the width: a finding is grepped, not read in a box
            console.print(f"  - {line}", markup=False, highlight=False, soft_wrap=True)
