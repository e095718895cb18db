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

The operation comes from the ``Collective test starting`` line or ``experiment_name``
(``all_reduce_perf`` -> allreduce ...), else from the file name, else from the columns (redop and
root say reduce/broadcast; busbw / algbw says allreduce vs reduce_scatter on more than 2 ranks).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import SchemaError
from ...userfiles import refuse_malformed
from ..schema import ALL, Status
from .common import MAX_SIZE_BYTES, Collector, Lines, PeerRun, check_rate, integer, number

OPS_OF_BINARY = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reduce_scatter",
                 "broadcast": "broadcast", "reduce": "reduce", "alltoall": "alltoall", "sendrecv": "sendrecv",
                 "gather": "gather", "scatter": "scatter", "hypercube": "hypercube", "alltoallv": "alltoallv"}
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s*(.*)$")
_STARTING = re.compile(r"^#\s*Collective test (?:starting|concluded):\s*(\S+)")
# how the run was launched (src/common.cu prints it): threads, GPUs each thread drives, CUDA-graph iterations
_ARGS = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+).*?\bgraph:\s*(\d+)")
_NCCL_VERSION = re.compile(r"^#\s*(nccl|rccl)-tests version\s+(\S+)(.*)$")
_RCCL_VERSION = re.compile(r"^rccl-tests:\s*Version\s+(\S+)")


def looks_like(text: str) -> bool:
    head = text[:20000]
    return bool(re.search(r"^#\s*(nccl|rccl)-tests version|^rccl-tests: Version|^# nThread \d+ nGpus \d+", head, re.M)) or \
        ('"results"' in head and '"nccl_version"' in head)


def op_of_program(name: str) -> str | None:
    """``all_reduce_perf`` (or a path or file name containing it) -> ``allreduce``; None if unknown."""
    stem = Path(str(name)).name.lower()
    for key in sorted(OPS_OF_BINARY, key=len, reverse=True):
        if re.search(rf"(^|[^a-z]){key}(_perf|_mpi|[^a-z]|$)", stem):
            return OPS_OF_BINARY[key]
    return None


def _op_from_columns(redop: str, root: str, busbw_over_algbw: float | None, ranks: int) -> str:
    """The op when nothing names it: a root says reduce (with a reduction) or broadcast; without a
    root, a reduction is allreduce or reduce_scatter, told apart by busbw / algbw (2(n-1)/n vs (n-1)/n);
    no reduction and no root: allgather (alltoall and sendrecv print the same columns)."""
    rooted = root.strip() not in ("-1", "")
    reducing = redop.strip().lower() not in ("none", "")
    if rooted:
        return "reduce" if reducing else "broadcast"
    if reducing:
        if ranks > 2 and busbw_over_algbw is not None:
            return "allreduce" if busbw_over_algbw > 1.5 * (ranks - 1) / ranks else "reduce_scatter"
        return "allreduce"
    return "allgather"


def _tool(version_line: str, names: list[str]) -> str:
    if "rccl" in version_line.lower() or any(re.search(r"\b(AMD|Radeon|Instinct)\b", n) for n in names):
        return "rccl-tests"
    return "nccl-tests"


def _wrong(token: str) -> int | None:
    token = token.strip().rstrip("*")
    if token in ("N/A", ""):
        return None
    value = float(token) if re.fullmatch(r"\d+(\.\d+)?([eE][+-]?\d+)?", token) else None
    return None if value is None else int(value)


def _add_row(out: Collector, line: int, op: str, ranks: int, size: int, fields: dict[str, Any], inplace: bool,
             time_us: float | None, algbw: float | None, busbw: float | None, wrong: int | None) -> None:
    if algbw is None and busbw is None:
        return
    extra = {**fields, "algbw_gb_per_s": algbw, "busbw_gb_per_s": busbw, "time_us": time_us, "wrong": wrong,
             "inplace": inplace, "ranks": ranks}
    if busbw is None:
        extra.pop("busbw_gb_per_s")
    ok = wrong in (None, 0)
    out.add(line, ALL, ALL, f"nccl.{op}", "collective", size, gb_per_s=algbw, latency_us=time_us, scope="total",
            extra=extra, status=Status.OK if ok else Status.ERROR,
            reason="" if ok else f"{wrong} wrong elements{' (in place)' if inplace else ''}")


@dataclass
class _Section:
    """One binary's output (a file may hold several, appended one after another)."""

    program: str = ""
    ranks: list[tuple[int, str, int, str]] = field(default_factory=list)
    placements: list[bool] = field(default_factory=list)  # in-place flag of each column group
    width: int = 4
    rows: list[tuple[int, list[str]]] = field(default_factory=list)
    closed: bool = False
    launch: dict[str, int] = field(default_factory=dict)  # threads, gpus_per_thread, graph_iters (the header's)


_HEADER = re.compile(r"^#\s*(?:(?:nccl|rccl)-tests version|Collective test starting:|nThread \d+)")


@refuse_malformed("nccl-tests output")
def parse_text(text: str, source: str) -> PeerRun:
    lines = Lines(text, source)
    version_line, version = "", ""
    sections = [_Section()]
    context: dict[str, Any] = {}
    for n, raw in lines:
        line = raw.strip()
        if not line:
            continue
        cur = sections[-1]
        if (_HEADER.match(line) or _RCCL_VERSION.match(line)) and (cur.rows or cur.closed):
            cur = _Section()
            sections.append(cur)
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
            cur.program = cur.program or m.group(1)
            if "concluded" in line:
                cur.closed = True
            continue
        m = _ARGS.match(line)
        if m:
            cur.launch = {"threads": int(m.group(1)), "gpus_per_thread": int(m.group(2)), "graph_iters": int(m.group(3))}
        m = _RANK.match(line)
        if m:
            cur.ranks.append((int(m.group(1)), m.group(2), int(m.group(3)), m.group(4).strip()))
            continue
        if line.startswith("#"):
            if "out-of-place" in line or "in-place" in line:
                cur.placements = ([False] if "out-of-place" in line else []) + \
                    ([True] if re.search(r"(?<!-of-)\bin-place", line) else [])
            if "i_min" in line:
                cur.width = 8
            continue
        tokens = line.split()
        if len(tokens) >= 5 + 3 and tokens[0].isdigit() and tokens[1].isdigit():
            cur.rows.append((n, tokens))
    sections = [sec for sec in sections if sec.rows]
    if not sections:
        raise SchemaError(f"{source}: no result row of nccl-tests in it",
                          hint="pass the output of an nccl-tests / rccl-tests binary (text, or -J JSON)")
    names = [r[3] for r in sections[0].ranks]
    tool = _tool(version_line, names)
    out = Collector(tool, version, source)
    notes: list[str] = []
    hosts_seen: set[str] = set()
    for sec in sections:
        op = op_of_program(sec.program) if sec.program else (op_of_program(source) if len(sections) == 1 else None)
        nranks = len(sec.ranks) or 1
        hosts_seen.update(r[1] for r in sec.ranks)
        _section_rows(out, lines, sec, op, nranks)
        if op is None:
            notes.append(f"{source}:{sec.rows[0][0]}: the operation is not named (no 'Collective test starting' or "
                         "'concluded' line): inferred from the columns")
    hosts = sorted(hosts_seen)
    if len(hosts) > 1:
        context["hosts"] = hosts
        notes.append(f"the run spans {len(hosts)} hosts ({', '.join(hosts[:4])}); judge it against a topology of them all")
    return PeerRun(tool, version, source, tuple(out.items), tuple(names), context, tuple(notes))


def _section_rows(out: Collector, lines: Lines, sec: _Section, op: str | None, nranks: int) -> None:
    """The measurements of one section's result rows."""
    placements = sec.placements or [False, True]
    width = sec.width
    for n, tokens in sec.rows:
        size = integer(tokens[0], lines, n, "size", limit=MAX_SIZE_BYTES)
        count = integer(tokens[1], lines, n, "count", limit=MAX_SIZE_BYTES)
        fields = {"count": count, "type": tokens[2], "redop": tokens[3], "root": tokens[4], "test": sec.program or op or "",
                  **sec.launch}
        rest = tokens[5:]
        groups = min(len(placements), len(rest) // width) if len(rest) >= 4 else 0
        if groups == 0:
            raise lines.error(n, f"a result row needs time, algbw, busbw and #wrong after the root, got {' '.join(rest)[:60]!r}")
        chosen = placements[-groups:] if groups < len(placements) else placements
        parsed = []
        for k, inplace in enumerate(chosen):
            cell = rest[k * width:k * width + 4]
            values = [None if c == "N/A" else number(c, lines, n) for c in cell[:3]]
            for v in values[1:]:
                if v is not None:
                    check_rate(v, lines, n)
            parsed.append((inplace, values, _wrong(cell[3])))
        row_op = op
        if row_op is None:
            first = parsed[0][1]
            ratio = first[2] / first[1] if first[1] and first[2] is not None else None
            row_op = _op_from_columns(tokens[3], tokens[4], ratio, nranks)
            fields["op_inferred"] = True
        for inplace, (time_us, algbw, busbw), wrong in parsed:
            _add_row(out, n, row_op, nranks, size, fields, inplace, time_us, algbw, busbw, wrong)


@refuse_malformed("nccl-tests JSON")
def parse_json(data: Any, source: str) -> PeerRun:
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise SchemaError(f"{source}: not nccl-tests -J output (no \"results\" list)")
    devices: list[Any] = data["devices"] if isinstance(data.get("devices"), list) else []
    names = [str(d.get("device_info", "")) for d in devices if isinstance(d, dict)]
    args = [str(a) for a in data.get("args") or []]
    config: dict[str, Any] = data["config"] if isinstance(data.get("config"), dict) else {}
    nranks = len(devices) or int(config.get("ngpus") or 1) * int(config.get("nthreads") or 1)
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
            for v in vals[1:]:
                if v is not None:
                    check_rate(v, None, 0)
            wrong = group.get("nwrong")
            row_op = op or _op_from_columns(str(item.get("redop", "")), str(item.get("root", "")),
                                           vals[2] / vals[1] if vals[1] and vals[2] is not None else None, nranks)
            _add_row(out, 0, row_op, nranks, size, fields, inplace, vals[0], vals[1], vals[2],
                     None if wrong is None else int(float(wrong)))
    if not out.items:
        raise SchemaError(f"{source}: no nccl-tests result in it")
    context = {"nccl_version": str(data.get("nccl_version", "")), "args": args[:20]}
    return PeerRun(tool, version, source, tuple(out.items), tuple(names), context)
