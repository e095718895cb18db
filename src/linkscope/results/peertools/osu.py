"""OSU micro-benchmarks output (pt2pt and collective text, host or ``-d cuda|rocm`` buffers) as
Measurements.

The layout, from OSU 5.3 (mpi/pt2pt/osu_pt2pt.c ``print_header``, osu_pt2pt.h / osu_coll.h
``HEADER``, osu_bw.c / osu_latency.c / osu_bibw.c row printing, mpi/collective/osu_coll.c; in
../shared/anchors/src/osu-micro-benchmarks), which later versions keep:

* ``# OSU MPI[-CUDA|-ROCM|-OPENACC] <Name> Test v<version>``: ``Bandwidth``, ``Bi-Directional
  Bandwidth``, ``Latency``, or a collective's ``<Op> Latency`` (``Allreduce``, ``Bcast`` ...);
* ``# Send Buffer on DEVICE (D) and Receive Buffer on HOST (H)`` with device buffers (none: host);
* ``# Size`` and the column names: ``Bandwidth (MB/s)`` (OSU's MB = 10^6 bytes: size / 1e6 x
  window x iterations / seconds), ``Latency (us)``, ``Avg Latency(us)`` (more columns after it in
  later versions);
* one row per size: ``%-10d%*.*f``.

Point-to-point tests run between rank 0 and rank 1; OSU selects each rank's GPU by its local rank
(GPU0 and GPU1 on one node), so the numbers are GPU0 -> GPU1 (``-d cuda D D``) unless the job
placed the ranks otherwise. Several tests in one file (outputs appended) are read one after another.

``linkscope bench mpi`` prints the same layout (report/textformats.py ``mpi_osu_text``) with its own
title suffix and buffer line: ``# OSU MPI Bandwidth Test (linkscope, OSU semantics)`` and
``# buffers DD, method mpi.bw, pairs 0<->1``. Its rows are read the same way, with ``tool`` =
``linkscope`` in each measurement's provenance (and as the run's tool when every table in the file is
linkscope's), so bench scripts read both tools' text through this one parser.
"""
from __future__ import annotations

import re

from ...errors import SchemaError
from ...userfiles import refuse_malformed
from ..schema import ALL, HOST, Endpoint, Status
from .common import MAX_GB_PER_S, Collector, Lines, PeerRun, RunContext, integer, number, rate_in_bounds, unread_line

TOOL = "osu"
LINKSCOPE_TITLE_SUFFIX = "(linkscope, OSU semantics)"
"""What ``linkscope bench mpi`` puts after OSU's title (report/textformats.py writes it, this parser reads it)."""
_TITLE = re.compile(r"^#\s*OSU MPI(?:-(CUDA|ROCM|OPENACC|MANAGED))?\s+(.+?)\s+Test(?:\s+v(\S+))?"
                    rf"(\s+{re.escape(LINKSCOPE_TITLE_SUFFIX)})?\s*$", re.I)
_BUFFERS = re.compile(r"Send Buffer on \w+ \((\w)\) and Receive Buffer on \w+ \((\w)\)", re.I)
_PAIRS = re.compile(r"^#\s*\[\s*pairs:\s*(\d+)\s*\](?:\s*\[\s*window size:\s*(\w+)\s*\])?", re.I)
"""osu_mbw_mr's ``# [ pairs: %d ] [ window size: %d ]`` (mpi/pt2pt/osu_mbw_mr.c; ``varied`` with ``-v``)."""
_LINKSCOPE_BUFFERS = re.compile(r"^#\s*buffers ([DHM])([DHM]),", re.I)  # textformats.mpi_osu_header


def looks_like(text: str) -> bool:
    return bool(re.search(r"^#\s*OSU MPI", text[:20000], re.M))


def _test(name: str) -> tuple[str, str]:
    """(method suffix, unit) of an OSU test title: ``bw``/``bibw`` (MB/s), ``latency`` or a
    collective's name (us)."""
    low = name.lower().strip()
    if low == "bandwidth":
        return "bw", "MB/s"
    if low in ("bi-directional bandwidth", "bidirectional bandwidth"):
        return "bibw", "MB/s"
    if low == "latency":
        return "latency", "us"
    if low == "multiple bandwidth / message rate":  # osu_mbw_mr: pairs' aggregate MB/s, then messages/s
        return "mbw_mr", "MB/s"
    if low.endswith(" latency"):
        return re.sub(r"[^a-z0-9_]", "", low[: -len(" latency")].replace(" ", "_").replace("-", "_")) or "collective", "us"
    return re.sub(r"[^a-z0-9_]", "", low.replace(" ", "_")) or "unknown", "?"


@refuse_malformed("OSU output")
def parse_text(text: str, source: str) -> PeerRun:
    lines = Lines(text, source)
    out = Collector(TOOL, "", source)
    test, unit, buffers, accel = "", "", "H H", ""
    writer = TOOL  # who printed the current table: OSU, or linkscope bench mpi in OSU's layout
    writers: set[str] = set()
    in_table = False
    last_size: int | None = None
    buffer_kinds: dict[str, None] = {}
    notes: list[str] = []
    versions: set[str] = set()
    pairs: int | None = None
    for n, raw in lines:
        line = raw.strip()
        if not line:
            continue
        m = _TITLE.match(line)
        if m:
            accel = (m.group(1) or "").lower()
            test, unit = _test(m.group(2))
            writer = "linkscope" if m.group(4) else TOOL
            if m.group(3):
                versions.add(m.group(3))
                out.version = m.group(3)
            # an accelerator build prints its buffer line next; until then the buffers are not known
            buffers, in_table, last_size = ("? ?" if accel else "H H"), False, None
            if unit == "?":
                notes.append(f"{source}:{n}: OSU test {m.group(2)!r} is not read by this parser; left out")
            continue
        m = _BUFFERS.search(line) or (_LINKSCOPE_BUFFERS.match(line) if writer != TOOL else None)
        if m:
            buffers = f"{m.group(1).upper()} {m.group(2).upper()}"
            continue
        m = _PAIRS.match(line)
        if m:
            pairs = int(m.group(1))
            if (m.group(2) or "").lower() == "varied":  # -v: a table per window size, sizes down, windows across
                test, unit = "mbw_mr_varied", "?"
                notes.append(f"{source}:{n}: osu_mbw_mr with varied window sizes (-v) is not read by this parser; left out")
            continue
        if line.startswith("#"):
            if line.lower().startswith("# size"):
                if not test:
                    raise lines.error(n, "a '# Size' column header before any '# OSU MPI ... Test' title")
                in_table = unit in ("MB/s", "us")
            continue
        if not in_table:
            if re.match(r"^\d+\s+[\d.]+", line) and not test:
                raise lines.error(n, "a result row before any '# OSU MPI ... Test' title and '# Size' header")
            continue
        tokens = line.split()
        if len(tokens) < 2 or not tokens[0].isdigit():
            continue  # MPI warnings interleaved with the table
        try:
            size = integer(tokens[0], lines, n, "size")
            value = number(tokens[1], lines, n)
        except SchemaError as exc:
            out.skip(n, str(exc).split(": ", 1)[-1])
            continue
        if last_size is not None and size < last_size:
            raise SchemaError(f"{source}:{n}: size {size} after {last_size} in one OSU table: two outputs are interleaved "
                              "in this file, or a title line is missing", hint="give each run its own file")
        last_size = size
        buffer_kinds[buffers] = None
        extra = {"test": f"osu_{test}", "buffers": buffers, "accelerator": accel or "none", "osu_value": value}
        writers.add(writer)
        if writer != TOOL:
            extra.update(tool=writer, tool_version="")
        src, dst = _ends(buffers) if "?" not in buffers else (ALL, ALL)
        if unit == "MB/s":
            gb = value / 1000.0  # OSU MB/s = 10^6 B/s
            if not rate_in_bounds(gb):
                out.skip(n, f"a rate outside 0 .. {MAX_GB_PER_S:g} GB/s")
                continue
            if test == "mbw_mr":  # the sum over the pairs (rank i sends to rank i + pairs, block order)
                rate = {"messages_per_s": number(tokens[2], lines, n)} if len(tokens) > 2 else {}
                out.add(n, ALL, ALL, "mpi.mbw_mr", "pairs", size, gb_per_s=gb, scope="total",
                        extra={**extra, "mb_per_s": value, "pairs": pairs, **rate}, status=Status.WAIVED,
                        reason=f"the sum of {pairs or 'several'} pairs' bandwidth (osu_mbw_mr), and the "
                               "output does not say which GPUs or hosts the pairs ran on")
                continue
            bi = test == "bibw"
            out.add(n, src, dst, f"mpi.{test}", "pairs", size, gb_per_s=gb, direction="bi" if bi else "uni",
                    scope="total" if bi else "transfer", extra={**extra, "mb_per_s": value}, **_unknown(buffers, accel))
        elif test == "latency":
            out.add(n, src, dst, "mpi.latency", "pingpong", size, latency_us=value, extra=extra, **_unknown(buffers, accel))
        else:
            out.add(n, ALL, ALL, f"mpi.{test}", test, size, latency_us=value, scope="total", extra=extra)
    out.cut(lines)
    if not out.items and out.unread:
        raise SchemaError(f"{source}: no complete OSU result; {unread_line(out.unread)}")
    if not out.items and notes:
        raise SchemaError(f"{source}: no OSU result read: {'; '.join(n.split(': ', 1)[-1] for n in notes)}",
                          hint="pass the output of osu_bw, osu_bibw, osu_latency, osu_mbw_mr or an OSU collective")
    if not out.items:
        raise SchemaError(f"{source}: no OSU result in it (no '# OSU MPI ... Test' title followed by a '# Size' table)",
                          hint="pass the output of osu_bw, osu_bibw, osu_latency or an OSU collective")
    version = sorted(versions)[-1] if versions else ""
    tool = "linkscope" if writers == {"linkscope"} else TOOL
    cut = lines.cut_line is not None
    return PeerRun(tool, version, source, tuple(out.items), (), {}, tuple(notes), unread=tuple(out.unread),
                   complete=not cut, incomplete="the last line has no final newline (cut)" if cut else "",
                   run_context=RunContext(ranks=2 if any(m.pattern in ("pairs", "pingpong") for m in out.items) else None,
                                          ranks_from="output" if out.items else "", buffers=tuple(buffer_kinds),
                                          launcher=lines.launcher))


def _unknown(buffers: str, accel: str) -> dict:
    """The status of a point-to-point number whose buffer kinds the output does not print."""
    if "?" not in buffers:
        return {}
    return {"status": Status.WAIVED, "reason": f"OSU-{accel.upper()} printed no buffer line: whether each buffer was on "
                                               "the GPU (D) or in host memory (H) is not known"}


def _ends(buffers: str) -> tuple[Endpoint, Endpoint]:
    """The ends of a point-to-point test's transfer: rank 0 sends, rank 1 receives, each from the
    buffer OSU's ``-d`` put on its device (``D``/``M``: the GPU of its local rank, 0 and 1 on one node)
    or in host memory (``H``). ``D H`` is GPU0 -> host memory, ``H D`` host memory -> GPU1: a GPU
    end each, not host to host."""
    send, recv = (buffers.split() + ["H", "H"])[:2]
    return (0 if send in "DM" else HOST), (1 if recv in "DM" else HOST)
