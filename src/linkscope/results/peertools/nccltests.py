"""nccl-tests and rccl-tests output (plain text and ``-J`` JSON) as Measurements.

The layout, from nccl-tests 2.19 (src/util.cu ``writeDeviceReport``, ``writeResultHeader``,
``writeBenchmarkLinePreamble/Body``, ``jsonOutputInit``; ../shared/anchors/src/nccl-tests) and
rccl-tests (github.com/ROCm/rccl-tests src/common.cu, which prints ``rccl-tests: Version ...``
and may print the in-place group alone):

* header lines start with ``#``: ``# nccl-tests version V nccl-headers=H nccl-library=L``,
  ``# Collective test starting: all_reduce_perf`` (older versions do not print it), one
  ``#  Rank R Group G Pid P on HOST device D [BUS] NAME`` per rank, the column header naming the
  ``out-of-place`` and ``in-place`` groups (``time algbw busbw #wrong`` each, and ``i_min i_max
  i_p99 i_cv%`` with per-iteration timing);
* one row per size: ``size count type redop root`` then each group; ``N/A`` for what was not
  checked; an asterisk marks an error count over rccl-tests' threshold;
* JSON (``-J FILE``): ``{"version", "args", "env", "nccl_version", "config": {...}, "devices":
  [{rank, device, device_info ...}], "results": [{size, count, type, redop, root, out_of_place:
  {time|cpu_time, alg_bw, bus_bw, nwrong}, in_place: {...}, experiment_name}]}``.

Older layouts (``_Columns``): 1.x (``bytes N type op``, time in ms, ``res``), 2.0-2.12 (``root`` only
for rooted ops, ``error`` = the largest error); a table pasted without its header is read from its
rows' shape. The rank count comes from the ``# Rank`` lines, else from ``check --ranks``; it is never
assumed (a one-rank in-place row moves nothing: waived). A run is complete when its ``# Avg bus
bandwidth`` line is there; two outputs whose lines alternate (a second header before any row, a rank
listed twice, sizes going down) are refused.

The operation comes from the ``Collective test starting`` line or ``experiment_name``
(``all_reduce_perf`` -> allreduce ...), else from the file name, else from the columns (redop and
root say reduce/broadcast; busbw / algbw says allreduce vs reduce_scatter on more than 2 ranks).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ...collectives import op_from_columns, op_of_program, ranks_of_printed_rates
from ...errors import SchemaError
from ...userfiles import refuse_malformed
from ..schema import ALL, Status
from .common import (
    MAX_GB_PER_S,
    MAX_SIZE_BYTES,
    Collector,
    Lines,
    PeerRun,
    RunContext,
    integer,
    number,
    rate_in_bounds,
    unread_line,
)

_RANK = re.compile(r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s*(.*)$")
_STARTING = re.compile(r"^#\s*Collective test (?:starting|concluded):\s*(\S+)")
_NCCL_VERSION = re.compile(r"^#\s*(nccl|rccl)-tests version\s+(\S+)(.*)$")
_RCCL_VERSION = re.compile(r"^rccl-tests:\s*Version\s+(\S+)")


_TYPES = ("float", "double", "half", "bfloat16", "int8", "uint8", "int32", "uint32", "int64", "uint64", "char", "int",
          "f8e4m3", "f8e5m2", "fp8_e4m3", "fp8_e5m2")  # nccl-tests' type names across versions (test_typenames)
_TYPED_ROW = re.compile(rf"^\s*\d+\s+\d+\s+({'|'.join(_TYPES)})\s+\S+\s+\S+\s+\S+", re.M)


def looks_like(text: str) -> bool:
    head = text[:20000]
    return bool(re.search(r"^#\s*(nccl|rccl)-tests version|^rccl-tests: Version|^#?\s*nThread \d+ nGpus \d+|"
                          r"^#?\s*Avg bus bandwidth\s*:|^#\s*Collective test (starting|concluded)", head, re.M)) or \
        ('"results"' in head and '"nccl_version"' in head) or len(_TYPED_ROW.findall(head)) >= 2 or \
        (len(_TYPED_ROW.findall(head)) == 1 and re.search(r"^#?\s*(size|bytes)\s+(count|N)\s+type\b", head, re.M) is not None)


def _tool(version_line: str, names: list[str], text: str = "") -> str:
    """rccl-tests when its version line, an AMD device or an RCCL-only line says so (``RCCL version :``
    banner, the ``# Errors with asterisks`` legend of rccl-tests src/common.cu)."""
    if "rccl" in version_line.lower() or any(re.search(r"\b(AMD|Radeon|Instinct)\b", n) for n in names) or \
            re.search(r"^(RCCL version\s*:|# Errors with asterisks)", text[:200000], re.M):
        return "rccl-tests"
    return "nccl-tests"


def _wrong(token: str) -> int | None:
    token = token.strip().rstrip("*")
    if token in ("N/A", ""):
        return None
    value = float(token) if re.fullmatch(r"\d+(\.\d+)?([eE][+-]?\d+)?", token) else None
    return None if value is None else int(value)


def _add_row(out: Collector, line: int, op: str, ranks: int | None, size: int, fields: dict[str, Any], inplace: bool,
             time_us: float | None, algbw: float | None, busbw: float | None, wrong: int | None,
             max_error: float | None = None) -> None:
    if algbw is None and busbw is None:
        return
    extra = {**fields, "algbw_gb_per_s": algbw, "busbw_gb_per_s": busbw, "time_us": time_us, "wrong": wrong,
             "inplace": inplace}
    if ranks is not None:
        extra["ranks"] = ranks
    if max_error is not None:
        extra["max_error"] = max_error
    if busbw is None:
        extra.pop("busbw_gb_per_s")
    status, reason = Status.OK, ""
    if wrong not in (None, 0):
        status, reason = Status.ERROR, f"{wrong} wrong elements{' (in place)' if inplace else ''}"
    elif ranks == 1 and inplace:
        status, reason = Status.WAIVED, ("one rank in place: nothing moves, so the rate is not a transfer "
                                         "(nccl-tests divides the size by a near-zero time)")
    elif (algbw is not None and not rate_in_bounds(algbw)) or (busbw is not None and not rate_in_bounds(busbw)):
        out.skip(line, f"a rate outside 0 .. {MAX_GB_PER_S:g} GB/s{' (in place)' if inplace else ''}")
        return
    out.add(line, ALL, ALL, f"nccl.{op}", "collective", size, gb_per_s=algbw, latency_us=time_us, scope="total",
            extra=extra, status=status, reason=reason)


@dataclass(frozen=True)
class _Columns:
    """A result row's layout (from the column header, or from the row when the header is missing).

    nccl-tests 1.x (2017): ``bytes N type op [root] time algbw busbw res`` with the time in ms and
    ``res`` the largest error (``%7.0le``); 2.0-2.12: ``size count type redop [root] time algbw busbw
    error`` (time in us, ``error`` the largest error ``%5.0le``; only rooted ops print ``root``);
    2.13+: every op prints ``root`` and ``#wrong`` counts wrong elements; ``-i``-style per-iteration
    columns (``i_min i_max i_p99 i_cv%``) widen each group to 8 (src/common.cu, src/util.cu across tags).
    2.19 (v2.19.6 src/util.cu writeResultHeader / writeBenchmarkLineBody / writeTimestamp): ``-C 1`` labels the
    time column ``cputime``; ``-S 1`` (report_timestamps) adds a ``timestamp`` column, each row ending in
    ``%Y-%m-%d %H:%M:%S`` (two tokens) after its in-place group.
    """

    lead: int = 5  # size count type redop [root]
    width: int = 4  # time algbw busbw #wrong [+4]
    counts_wrong: bool = True  # #wrong (2.13+) or the largest error (before)
    time_scale: float = 1.0  # to us (1.x prints ms)
    from_header: bool = False
    layout: str = ""
    names: tuple[str, ...] = ("size", "count", "type", "redop", "root")  # the lead columns' names
    cpu_time: bool = False  # ``-C 1``: the time column is CPU time per call (``cputime``)


_TIME_LABELS = ("time", "cputime")
_STAMP = re.compile(r"^\d{4}-\d\d-\d\d$"), re.compile(r"^\d\d:\d\d:\d\d$")
"""``-S 1``'s row timestamp (``%Y-%m-%d %H:%M:%S``, v2.19.6 util.h:54): two tokens at the row's end."""


def _columns_of_header(line: str) -> _Columns | None:
    names = line.lstrip("#").split()
    if names and names[-1] == "timestamp":  # -S 1: the row's trailing timestamp (read apart, _row_stamp)
        names = names[:-1]
    label = next((t for t in _TIME_LABELS if t in names), None)
    if len(names) < 6 or names[0] not in ("size", "bytes") or label is None:
        return None
    lead = names.index(label)
    group = names[lead:]
    width = group.index(label, 1) if label in group[1:] else len(group)
    fourth = group[3] if len(group) > 3 else "#wrong"
    v1 = names[0] == "bytes"
    counts = fourth == "#wrong"
    layout = "1.x" if v1 else ("2.13+" if counts else "2.0-2.12")
    return _Columns(lead, max(4, width), counts, 1000.0 if v1 else 1.0, True, layout, tuple(names[:lead]),
                    label == "cputime")


def _row_stamp(tokens: list[str]) -> tuple[list[str], str]:
    """A row's tokens without ``-S 1``'s trailing timestamp, and the timestamp ("" where none)."""
    if len(tokens) > 2 and _STAMP[0].match(tokens[-2]) and _STAMP[1].match(tokens[-1]):
        return tokens[:-2], f"{tokens[-2]} {tokens[-1]}"
    return tokens, ""


def _columns_of_row(tokens: list[str], width: int) -> _Columns | None:
    """The layout of a row printed without a column header: a root column holds a whole number,
    a time column a decimal one."""
    for lead in (5, 4, 3):  # 3: all_gather / broadcast before 2.13 print no redop (v2.9.0 all_gather.cu)
        rest = len(tokens) - lead
        if rest >= 4 and rest % width == 0 and rest // width <= 2:
            if lead == 5 and not re.fullmatch(r"-?\d+", tokens[4]):
                continue
            if lead < 5 and not re.fullmatch(r"\d+(\.\d+)?", tokens[lead]):  # a time: never negative
                continue
            if lead == 3 and re.fullmatch(r"[-\d.]+", tokens[2]):  # the type column is a word
                continue
            counts = not re.search(r"[eE]", tokens[lead + 3])
            return _Columns(lead, width, counts, 1.0, False, "" if counts else "2.0-2.12",
                            ("size", "count", "type", "redop", "root")[:lead])
    return None


@dataclass
class _Section:
    """One binary's output (a file may hold several, appended one after another)."""

    program: str = ""
    ranks: list[tuple[int, str, int, str]] = field(default_factory=list)
    placements: list[bool] = field(default_factory=list)  # in-place flag of each column group
    columns: _Columns | None = None
    width: int = 4
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    closed: bool = False  # "# Avg bus bandwidth" (or "Collective test concluded") seen
    threads: int | None = None
    gpus_per_process: int | None = None
    graph: bool | None = None
    out_of_bounds: int | None = None
    starts: int = 0
    fragments: list[int] = field(default_factory=list)  # lines holding part of a row
    launch: dict[str, int] = field(default_factory=dict)  # threads, gpus_per_thread, graph_iters (the header's)


_HEADER = re.compile(r"^#\s*(?:(?:nccl|rccl)-tests version|Collective test starting:|nThread \d+)")
_NTHREAD = re.compile(r"^#?\s*nThread (\d+) nGpus (\d+)\b(?:.*\bgraph: (\d+))?")
_CLOSE = re.compile(r"^#?\s*Avg bus bandwidth\s*:")
_OOB = re.compile(r"^#?\s*Out of bounds values\s*:\s*(\d+)")
_ROW = re.compile(r"^\d+\s+\d+\s+\S+")


def _interleaved(source: str, line: int, why: str) -> SchemaError:
    return SchemaError(f"{source}:{line}: two nccl-tests outputs are interleaved in this file ({why}); their rows "
                       "cannot be told apart", hint="write each run to its own file (or to one file one after another)")


# NCCL_DEBUG=INFO lines of a variable NCCL read: "NCCL_BUFFSIZE set by environment to 4194304." for every integer
# parameter (src/misc/param.cc:89 ncclLoadParam), "NCCL_ALGO set by environment to Tree" / NCCL_PROTO (graph/tuning.cc:
# 421, 426), at v2.28.9-1; RCCL, NCCL's fork, prints the same
_ENV_INFO = re.compile(r"NCCL INFO (NCCL_[A-Z0-9_]+) set by environment to (.+?)\.?$")


@refuse_malformed("nccl-tests output")
def parse_text(text: str, source: str, stated: RunContext | None = None) -> PeerRun:
    lines = Lines(text, source)
    version_line, version = "", ""
    sections = [_Section()]
    context: dict[str, Any] = {}
    last_size: int | None = None
    env_seen: dict[str, str] = {}
    for n, raw in lines:
        line = raw.strip()
        if not line:
            continue
        m = _ENV_INFO.search(line)
        if m:  # NCCL_DEBUG=INFO: the variables NCCL read from the environment (or nccl.conf)
            env_seen[m.group(1)] = m.group(2).strip()
            continue
        cur = sections[-1]
        if (_HEADER.match(line) or _RCCL_VERSION.match(line)) and (cur.rows or cur.closed):
            cur = _Section()
            sections.append(cur)
            last_size = None
        m = _NCCL_VERSION.match(line)
        if m:
            version_line, version = line, m.group(2)
            lib = re.search(r"(?:nccl|rccl)-library=(\d+)", m.group(3))
            if lib:
                context["nccl_version"] = lib.group(1)
            continue
        m = _RCCL_VERSION.match(line)
        if m:
            version_line, version = line, m.group(1)
            continue
        m = _STARTING.match(line)
        if m:
            if "concluded" in line:
                cur.closed = True
            else:
                cur.starts += 1
                if cur.starts > 1 or cur.rows:
                    raise _interleaved(source, n, f"a second 'Collective test starting' ({m.group(1)}) before the "
                                                  "first run's closing lines")
            cur.program = cur.program or m.group(1)
            continue
        m = _NTHREAD.match(line)
        if m:
            if cur.threads is not None and not cur.rows:
                raise _interleaved(source, n, "a second 'nThread' line before any result row")
            cur.threads, cur.gpus_per_process = int(m.group(1)), int(m.group(2))
            cur.graph = bool(int(m.group(3))) if m.group(3) is not None else False
            # the same keys branch judge reads from each measurement (threads, GPUs per thread, graph iterations)
            cur.launch = {"threads": cur.threads, "gpus_per_thread": cur.gpus_per_process}
            if m.group(3) is not None:
                cur.launch["graph_iters"] = int(m.group(3))
            continue
        m = _RANK.match(line)
        if m:
            rank = int(m.group(1))
            if cur.rows or any(r[0] == rank for r in cur.ranks):
                raise _interleaved(source, n, f"rank {rank} listed twice" if not cur.rows else "a rank line among the rows")
            cur.ranks.append((rank, m.group(2), int(m.group(3)), m.group(4).strip()))
            continue
        if _CLOSE.match(line):
            cur.closed = True
            continue
        m = _OOB.match(line)
        if m:
            cur.out_of_bounds = int(m.group(1))
            continue
        if line.startswith("#"):
            if "out-of-place" in line or "in-place" in line:
                cur.placements = ([False] if "out-of-place" in line else []) + \
                    ([True] if re.search(r"(?<!-of-)\bin-place", line) else [])
            if "i_min" in line:
                cur.width = 8
            cols = _columns_of_header(line)
            if cols is not None:
                cur.columns = cols
            continue
        if re.match(r"^\d+\.\d+\s", line):  # a row's tail: the paste starts (or a write was split) inside it
            cur.fragments.append(n)
            continue
        if _ROW.match(line):
            tokens = line.split()
            if len(tokens) < 8:
                cur.rows.append((n, tokens))  # a cut row: said as unread below
                continue
            size = int(tokens[0]) if len(tokens[0]) < 20 else 0
            if last_size is not None and size < last_size:
                raise _interleaved(source, n, f"size {size} after {last_size} in one table")
            last_size = size
            cur.rows.append((n, tokens))
    orphans = [n for sec in sections if not sec.rows for n in sec.fragments]
    sections = [sec for sec in sections if sec.rows]
    if not sections and lines.cut_line is not None:
        raise SchemaError(f"{source}: no complete result row; " + unread_line(
            [(lines.cut_line, "the last line has no final newline: a number there may be cut short")]))
    if not sections:
        raise SchemaError(f"{source}: no result row of nccl-tests in it",
                          hint="pass the output of an nccl-tests / rccl-tests binary (text, or -J JSON)")
    names = [r[3] for r in sections[0].ranks]
    tool = _tool(version_line, names, "\n".join(lines.lines))
    out = Collector(tool, version, source)
    for frag in orphans:
        out.skip(frag, "part of a result row (the paste starts inside it)")
    notes: list[str] = []
    hosts_seen: dict[str, None] = {}
    incomplete: list[str] = []
    found = RunContext()
    for sec in sections:
        op = op_of_program(sec.program) if sec.program else (op_of_program(source) if len(sections) == 1 else None)
        rows, layout = _read_rows(out, lines, sec)
        known = len(sec.ranks) or (stated.ranks if stated is not None and stated.ranks else 0)
        section_op = op or _op_of_rows(rows, known)
        printed = ranks_of_printed_rates(section_op, [(v[1], v[2]) for r in rows for _, v, _, _ in r[3]
                                                      if v[1] is not None and v[2] is not None]) if rows else None
        ranks, ranks_from, said = _rank_count(sec, stated, printed, section_op, f"{source}:{sec.rows[0][0]}")
        notes.extend(said)
        for rank_line in sec.ranks:
            hosts_seen[rank_line[1]] = None
        if sec.graph is None:  # no 'nThread ... graph: N' header: what the user said, else nccl-tests' defaults:
            said_launch = stated.launch if stated is not None and stated.launch else ""  # -G 0 (common.cu:110
            for row in rows:  # 'int cudaGraphLaunches = 0'), one GPU per thread (-g 1, -t 1: common.cu:90-91)
                row[2]["launch"], row[2]["launch_from"] = (said_launch, "option") if said_launch else ("eager", "default")
                if sec.gpus_per_process is None:
                    row[2].setdefault("gpus_per_thread", 1)
            if not said_launch:
                notes.append(f"{source}:{sec.rows[0][0]}: no 'nThread' header: judged as nccl-tests' defaults ran it "
                             "(eager launch, one GPU per thread); say --launch graph where it ran with -G")
        _emit_rows(out, rows, op, section_op, ranks)
        if layout and layout != "2.13+":
            notes.append(f"{source}:{sec.rows[0][0]}: read as the nccl-tests {layout} layout (the 4th column of each "
                         "group is the largest error, not a count of wrong elements" +
                         ("; times in ms" if layout == "1.x" else "") + ")")
        for frag in sec.fragments:
            out.skip(frag, "part of a result row (the paste starts inside it)")
        if op is None:
            notes.append(f"{source}:{sec.rows[0][0]}: the operation is not named (no 'Collective test starting' or "
                         "'concluded' line): inferred from the columns")
        if not sec.closed:
            incomplete.append(f"{sec.program or op or 'a run'} has no closing '# Avg bus bandwidth' line (cut, or the "
                              "paste stops at the table)")
        if sec.out_of_bounds:
            context["out_of_bounds"] = context.get("out_of_bounds", 0) + sec.out_of_bounds
            notes.append(f"{sec.program or op or 'a run'}: nccl-tests found {sec.out_of_bounds} out-of-bounds values "
                         "(wrong data)")
        found = RunContext(ranks=ranks if found.ranks is None else found.ranks,
                           ranks_from=ranks_from if found.ranks is None else found.ranks_from,
                           gpus_per_process=sec.gpus_per_process or found.gpus_per_process,
                           processes=(ranks // max(1, (sec.gpus_per_process or 1) * (sec.threads or 1))
                                      if ranks_from == "output" and ranks else found.processes),
                           launch=("graph" if sec.graph else "eager") if sec.graph is not None else found.launch,
                           layout=layout or found.layout)
    out.cut(lines)
    if lines.cut_line is not None:
        incomplete.append("the last line has no final newline (cut)")
    hosts = list(hosts_seen)
    if stated is not None and stated.hosts and not hosts:
        hosts = list(stated.hosts)
    if len(hosts) > 1:
        context["hosts"] = hosts
        notes.append(f"the run spans {len(hosts)} hosts ({', '.join(hosts[:4])}); judge it against a topology of them all")
    launch = found.launch
    if stated is not None and stated.launch:
        if launch and launch != stated.launch:
            notes.append(f"--launch {stated.launch}, but the output says {launch}: the output's is used")
        launch = launch or stated.launch
    run_context = RunContext(ranks=found.ranks, ranks_from=found.ranks_from, gpus_per_process=found.gpus_per_process,
                             processes=found.processes, hosts=tuple(hosts), launch=launch, launcher=lines.launcher,
                             layout=found.layout, env=tuple(env_seen.items()))
    if not out.items and out.unread:
        raise SchemaError(f"{source}: no number of it could be read; {unread_line(out.unread)}")
    return PeerRun(tool, version, source, tuple(out.items), tuple(names), context, tuple(notes), unread=tuple(out.unread),
                   complete=not incomplete, incomplete="; ".join(incomplete), run_context=run_context)


_Row = tuple[int, int, dict[str, Any], list[tuple[bool, list[float | None], int | None, float | None]], str, str]


def _read_rows(out: Collector, lines: Lines, sec: _Section) -> tuple[list[_Row], str]:
    """One section's result rows read (what cannot be read is said as unread), and the layout read ("" for
    the newest)."""
    placements = sec.placements or [False, True]
    layout = ""
    rows: list[_Row] = []
    for n, printed in sec.rows:
        tokens, stamp = _row_stamp(printed)
        cols = sec.columns or _columns_of_row(tokens, sec.width)
        if cols is None:
            out.skip(n, f"{len(tokens)} columns fit no nccl-tests layout")
            continue
        layout = layout or cols.layout
        width, lead = cols.width, cols.lead
        rest = tokens[lead:]
        groups = min(len(placements), len(rest) // width)
        if groups == 0 or len(rest) != groups * width:
            out.skip(n, f"a row cut short or too long ({len(tokens)} columns, {lead} + {len(placements)} x {width} expected)")
            continue
        try:
            size = integer(tokens[0], lines, n, "size", limit=MAX_SIZE_BYTES)
            count = integer(tokens[1], lines, n, "count", limit=MAX_SIZE_BYTES)
        except SchemaError as exc:
            out.skip(n, str(exc).split(": ", 1)[-1])
            continue
        named = dict(zip(cols.names, tokens))
        root = named.get("root", "")
        redop = named.get("redop", named.get("op", "none"))
        fields = {"count": count, "type": tokens[2], "redop": redop, "root": root, "test": sec.program,
                  **sec.launch}
        if stamp:
            fields["timestamp"] = stamp
        if cols.cpu_time:
            fields["time_kind"] = "cpu"  # -C 1: host time per call, launch and synchronisation included
        chosen = placements[-groups:] if groups < len(placements) else placements
        parsed: list[tuple[bool, list[float | None], int | None, float | None]] = []
        try:
            for k, inplace in enumerate(chosen):
                cell = rest[k * width:k * width + 4]
                values = [None if c == "N/A" else number(c, lines, n) for c in cell[:3]]
                if values[0] is not None:
                    values[0] *= cols.time_scale
                if cols.counts_wrong:
                    parsed.append((inplace, values, _wrong(cell[3]), None))
                else:
                    err = None if cell[3] == "N/A" else number(cell[3], lines, n, "error")
                    parsed.append((inplace, values, None, err))
        except SchemaError as exc:
            out.skip(n, str(exc).split(": ", 1)[-1])
            continue
        rows.append((n, size, fields, parsed, redop, root))
    return rows, layout


def _op_of_rows(rows: list[_Row], nranks: int) -> str:
    """The op of a table that names none, from its columns (``op_from_columns``): busbw / algbw of the
    fastest row (the printed rates have two decimals, so small rows say nothing)."""
    if not rows:
        return "allreduce"
    top = max(rows, key=lambda r: r[3][0][1][1] or 0.0)
    algbw, busbw = top[3][0][1][1], top[3][0][1][2]
    ratio = busbw / algbw if algbw and busbw is not None else None
    return op_from_columns(top[4], top[5], ratio, nranks)


def _emit_rows(out: Collector, rows: list[_Row], op: str | None, section_op: str, nranks: int | None) -> None:
    for n, size, fields, parsed, _, _ in rows:
        fields["test"] = fields["test"] or op or ""
        if op is None:
            fields["op_inferred"] = True
        for inplace, (time_us, algbw, busbw), wrong, err in parsed:
            _add_row(out, n, section_op, nranks, size, fields, inplace, time_us, algbw, busbw, wrong, err)


def _rank_count(sec: _Section, stated: RunContext | None, printed: tuple[int, int] | None, op: str,
                where: str) -> tuple[int | None, str, list[str]]:
    """The run's rank count, where it came from, and what to tell the user. nccl-tests computed every busbw
    with the run's real rank count, so busbw / algbw (``printed``: the counts it allows) outranks rank lines a
    paste elided or edited ('# Rank 0..4' then '...', one line copied from another run) and ``--ranks``;
    within what it allows, the rank lines, then ``--ranks``, then the one count it leaves, decide."""
    notes: list[str] = []
    said = stated.ranks if stated is not None and stated.ranks else None
    listed = len(sec.ranks) or None
    highest = max((r[0] for r in sec.ranks), default=-1) + 1
    partial = listed is not None and highest > listed  # the paste starts inside the rank list ("# Rank 71" alone)
    lowest, top = printed if printed is not None else (1, 0)

    def allowed(n: int | None) -> bool:
        return n is not None and printed is not None and lowest <= n <= top

    span = f"{lowest}" if top == lowest else f"{lowest}..{top}"
    why = f"busbw / algbw of its rows is the {op} factor of {span} ranks"
    if listed is not None and not partial and (printed is None or allowed(listed)):
        if said is not None and said != listed:
            notes.append(f"--ranks {said}, but the output lists {listed} ranks: the output's count is used")
        return listed, "output", notes
    if partial and (printed is None or top >= highest):
        if said is not None and said >= highest and (printed is None or allowed(said)):
            return said, "option", notes
        if printed is not None and top == lowest:
            return lowest, "output", notes
        notes.append(f"{where}: the output lists {listed} of its rank lines, up to rank {highest - 1}: at least "
                     f"{highest} ranks" + ("" if said else "; say how many with --ranks N"))
        return highest, "output", notes
    if printed is None:
        if said is not None:
            return said, "option", notes
        notes.append(f"{where}: the rank count is not printed (no '# Rank' lines): the collective is judged on the "
                     "GPUs selected (--gpus); say it with --ranks N")
        return None, "", notes
    if listed is not None:  # rank lines the rates contradict: elided or edited
        notes.append(f"{where}: the output lists {listed} rank lines (up to rank {highest - 1}), but {why}: "
                     "the rank lines were elided or edited in the paste; the rates' count is used")
    if allowed(said):
        return said, "option", notes
    if said is not None:
        notes.append(f"--ranks {said}, but {why}: the rates' count is used")
    if top == lowest:
        return lowest, "output", notes
    guess = round((lowest + top) / 2)
    notes.append(f"{where}: {why} (two-decimal rates); judged on {guess}: say the count with --ranks N")
    return guess, "output", notes


@refuse_malformed("nccl-tests JSON")
def parse_json(data: Any, source: str) -> PeerRun:
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise SchemaError(f"{source}: not nccl-tests -J output (no \"results\" list)")
    config: dict[str, Any] = data["config"] if isinstance(data.get("config"), dict) else {}
    listed = data.get("devices") if isinstance(data.get("devices"), list) else config.get("devices")
    devices: list[Any] = [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []
    names = [str(d.get("device_info", "")) for d in devices]
    args = [str(a) for a in data.get("args") or []]
    # one "devices" entry per process; each drives ngpus GPUs from nthreads threads (util.cu jsonOutputInit)
    processes = len({(str(d.get("hostname", "")), str(d.get("pid", ""))) for d in devices}) or None
    per_process = config.get("ngpus") if isinstance(config.get("ngpus"), int) else None
    threads = config.get("nthreads") if isinstance(config.get("nthreads"), int) else 1
    nranks: int | None = processes * per_process * threads if processes and per_process else None
    hosts = tuple(dict.fromkeys(str(d.get("hostname", "")) for d in devices if d.get("hostname")))
    launch = {k: int(config[c]) for k, c in (("threads", "nthreads"), ("gpus_per_thread", "ngpus"), ("graph_iters", "graph"))
              if isinstance(config.get(c), int) and not isinstance(config.get(c), bool)}
    tool = "rccl-tests" if any("rccl" in a.lower() for a in args[:1]) or _tool("", names) == "rccl-tests" else "nccl-tests"
    version = ""  # the JSON names the NCCL library, not the nccl-tests version
    out = Collector(tool, version, source)
    for i, item in enumerate(data["results"]):
        if not isinstance(item, dict):
            raise SchemaError(f"{source}: results[{i}] must be an object")
        size = integer(str(item["size"]), what=f"results[{i}].size")
        program = str(item.get("experiment_name") or (args[0] if args else ""))
        op = op_of_program(program) or op_of_program(source)
        fields = {"count": item.get("count"), "type": item.get("type"), "redop": item.get("redop"),
                  "root": item.get("root"), "test": program, "result_index": i, **launch}
        for key, inplace in (("out_of_place", False), ("in_place", True)):
            group = item.get(key)
            if group is None:
                continue
            if not isinstance(group, dict):
                raise SchemaError(f"{source}: results[{i}].{key} must be an object")
            time = group.get("time", group.get("cpu_time"))
            algbw, busbw = group.get("alg_bw"), group.get("bus_bw")
            vals = [None if v is None else number(str(v), what=f"results[{i}].{key}") for v in (time, algbw, busbw)]
            wrong = group.get("nwrong")
            row_op = op or op_from_columns(str(item.get("redop", "")), str(item.get("root", "")),
                                           vals[2] / vals[1] if vals[1] and vals[2] is not None else None, nranks or 0)
            _add_row(out, 0, row_op, nranks, size, fields, inplace, vals[0], vals[1], vals[2],
                     None if wrong is None else int(float(wrong)))
    if not out.items:
        raise SchemaError(f"{source}: no nccl-tests result in it")
    context = {"nccl_version": str(data.get("nccl_version", "")), "args": args[:20]}
    graph = config.get("graph")
    run_context = RunContext(ranks=nranks, ranks_from="output" if nranks else "", gpus_per_process=per_process,
                             processes=processes, hosts=hosts,
                             launch=("graph" if graph else "eager") if isinstance(graph, int) else "")
    notes = () if nranks else ("the rank count is not in the JSON: the collective is judged on the GPUs selected (--gpus)",)
    if len(hosts) > 1:
        context["hosts"] = list(hosts)
    return PeerRun(tool, version, source, tuple(out.items), tuple(names), context, notes, unread=tuple(out.unread),
                   run_context=run_context)
