"""Plain-text outputs of a RunRecord: CSV (one row per measurement, every JSON field, plain cells),
OSU-style
text (any record; ``bench mpi`` records in OSU's own layout), nccl-tests' table (``bench nccl``),
the stencil and p2p-matrix tables. The comm commands stream the same lines as sizes finish.

OSU conventions (OSU Micro-Benchmarks ``osu_bw`` / ``osu_latency``): a ``#`` header line with the
column names, then one line per message size: the size in bytes left-aligned in 10 columns and the
value right-aligned in 20 columns with 2 decimals; bandwidth in MB/s with **MB = 10**6 bytes**,
latency in microseconds. Lines starting with ``#`` are comments, so a series header and skipped
(waived / error) sizes are written as comments and the numbers stay parseable.
"""
from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Iterable
from typing import Any

from ..collectives import OP_TABLE
from ..results.io import measurement_to_dict
from ..results.peertools.osu import LINKSCOPE_TITLE_SUFFIX
from ..results.schema import Measurement, RunRecord, Status

_SIZE_WIDTH = 10
_FIELD_WIDTH = 20


CSV_SIGNIFICANT = 6  # digits kept of a float: 478.11600000000004 -> 478.116 (the medians' own noise is larger)


def _cell(value: Any) -> Any:
    """A plain CSV cell: no JSON inside (lists joined with "; ", mappings as key=value), floats
    rounded to ``CSV_SIGNIFICANT`` significant digits, booleans as true/false."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(float(f"{value:.{CSV_SIGNIFICANT}g}")) if value == value else "nan"
    if isinstance(value, dict):
        return "; ".join(f"{k}={_cell(v)}" for k, v in sorted(value.items()))
    if isinstance(value, (list, tuple)):
        return "; ".join(str(_cell(v)) for v in value)
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
                    lines.append(osu_row(m.size_bytes, value).rstrip("\n"))
                else:
                    lines.append(f"# {m.size_bytes} {m.status.value}: {m.reason or 'no value'}")
    return "\n".join(lines) + ("\n" if lines else "")


def osu_row(size_bytes: int, value: float) -> str:
    """One OSU data line, ``%-10d%20.2f``, newline-terminated."""
    return f"{size_bytes:<{_SIZE_WIDTH}d}{value:>{_FIELD_WIDTH}.2f}\n"


# ---- bench mpi: OSU's own layout -----------------------------------------------------------------------
_OSU_TITLE = {"latency": "OSU MPI Latency Test", "bw": "OSU MPI Bandwidth Test",
              "bibw": "OSU MPI Bi-Directional Bandwidth Test", "allreduce": "OSU MPI Allreduce Latency Test"}


def _mpi(record: RunRecord) -> dict[str, Any]:
    return dict(record.extra.get("mpi") or {})


def mpi_osu_lines(record: RunRecord) -> list[Measurement]:
    """The measurements behind OSU's lines, by size: the pair (one pair) or the aggregate (several)."""
    info = _mpi(record)
    pairs = info.get("pairs") or []
    aggregate = len(pairs) > 1 or info.get("test") == "allreduce"
    chosen = [m for m in record.measurements if "osu_value" in m.extra and (m.scope == "total") == aggregate]
    return sorted(chosen, key=lambda m: m.size_bytes)


def mpi_osu_header(record: RunRecord) -> str:
    """The title and column header lines of a ``bench mpi`` record, newline-terminated."""
    info = _mpi(record)
    test, pairs = info.get("test", "latency"), info.get("pairs") or []
    if test == "allreduce":
        ranks = pairs[0][1] + 1 if pairs else "?"
        return (f"# {_OSU_TITLE[test]} {LINKSCOPE_TITLE_SUFFIX}\n"
                f"# buffers {info.get('buffers', '?')}, method {info.get('method', '?')}, {ranks} ranks, "
                "MPI_FLOAT MPI_SUM, latency averaged over ranks\n# Size       Avg Latency(us)\n")
    lines = [f"# {_OSU_TITLE.get(test, test)} {LINKSCOPE_TITLE_SUFFIX}",
             f"# buffers {info.get('buffers', '?')}, method {info.get('method', '?')}, pairs "
             + ", ".join(f"{a}<->{b}" for a, b in pairs)
             + (" (bandwidth summed over pairs)" if len(pairs) > 1 and test != "latency" else "")
             + (" (latency averaged over pairs)" if len(pairs) > 1 and test == "latency" else "")]
    lines.append("# Size          Latency (us)" if test == "latency" else "# Size      Bandwidth (MB/s)")
    return "\n".join(lines) + "\n"


def mpi_osu_footer(record: RunRecord) -> str:
    """What follows the rows: the sizes whose data check failed (empty when all passed)."""
    bad = [m.size_bytes for m in mpi_osu_lines(record) if m.verified is False or m.status is Status.ERROR]
    return f"# DATA CHECK FAILED at sizes {', '.join(map(str, bad))}\n" if bad else ""


def mpi_osu_text(record: RunRecord) -> str:
    """OSU's layout: header, ``%-10d%20.2f`` per size, footer (``bench mpi`` streams the same lines)."""
    return mpi_osu_header(record) + "".join(osu_row(m.size_bytes, float(m.extra["osu_value"]))
                                            for m in mpi_osu_lines(record)) + mpi_osu_footer(record)


# ---- bench nccl: nccl-tests' text layout -----------------------------------------------------------------
# The layout of nccl-tests 2.19 (src/util.cu of /work/shared/anchors/src/nccl-tests: writeDeviceReport
# lines 622-640 and 667-720, writeResultHeader 737-762, writeBenchmarkLinePreamble 454-457,
# writeBenchmarkLineBody 497-510 with getFloatStr 488-493, writeResultFooter 777-780): its header lines,
# "# Using devices", both column groups (out-of-place, in-place), "# Out of bounds values" and
# "# Avg bus bandwidth" (the mean busbw over every timed line, both placements, as common.cu 895-896
# and 1831 compute it), so parsers of nccl-tests output read this text as they read nccl-tests'.
# An in-place group that was not run (no --inplace) is written N/A.

def _nccl(record: RunRecord) -> dict[str, Any]:
    return dict(record.extra.get("nccl") or {})


def _nccl_has_inplace(record: RunRecord) -> bool:
    return any(m.extra.get("inplace") for m in record.measurements)


def nccl_sizes(record: RunRecord) -> list[int]:
    """Sizes of an NCCL record in run order (each once)."""
    return list(dict.fromkeys(m.size_bytes for m in record.measurements))


def _float_str(value: float, width: int) -> str:
    """nccl-tests' getFloatStr: 2 decimals, then 1, then 0, then exponent, whatever fits ``width``."""
    for text in (f"{value:{width}.2f}", f"{value:{width}.1f}", f"{value:{width}.0f}"):
        if len(text) <= width:
            return text
    return f"{value:{width}.1e}" if width >= 7 else f"{value:{width}.0e}"


def _step(sizes: list[int]) -> str:
    ordered = sorted(set(sizes))
    if len(ordered) > 1 and all(b % a == 0 for a, b in itertools.pairwise(ordered)):
        factors = {b // a for a, b in itertools.pairwise(ordered)}
        if len(factors) == 1:
            return f"{factors.pop()}(factor)"
    steps = {b - a for a, b in itertools.pairwise(ordered)}
    return f"{steps.pop()}(bytes)" if len(steps) == 1 else "0(list of sizes)"


def _program(record: RunRecord) -> str:
    """``linkscope_all_reduce (bench nccl --op allreduce)``: one word naming nccl-tests' binary of the
    operation first, as readers take the operation from that word (all_reduce_perf -> allreduce)."""
    op = _nccl(record).get("op")
    spec = OP_TABLE.get(str(op))
    binary = spec.program if spec is not None else str(op)
    return f"linkscope_{binary} (bench nccl --op {op})"


def _bus_id(topology: Any, device: int) -> str:
    """``[0000:00:06]`` (domain:bus:device, as nccl-tests prints it) from the embedded topology, or dashes."""
    for d in (topology or {}).get("devices", []):
        if d.get("kind") == "gpu" and d.get("index") == device and d.get("pci_bus_id"):
            return str(d["pci_bus_id"]).rsplit(".", 1)[0]
    return "----:--:--"


def nccl_tests_header(record: RunRecord) -> str:
    """nccl-tests' header lines (version line replaced by linkscope's own), the device lines and the
    column headers of both groups."""
    info = _nccl(record)
    ctx = record.context or {}
    opts = record.options or {}
    sizes = list(opts.get("sizes") or nccl_sizes(record))
    per_process = info.get("devices_per_process") or [[]]
    names = list(ctx.get("gpus") or [])
    hosts = list(ctx.get("hosts_per_rank") or [ctx.get("host") or "?"])
    simulated = record.provenance.value == "simulated"
    lines = [f"# linkscope bench nccl in nccl-tests' layout: NCCL {info.get('version')}, float32"
             + (" (SIMULATED)" if simulated else ""),
             f"# Collective test starting: {_program(record)}",
             f"# nThread 1 nGpus {len(per_process[0]) if per_process else 1} minBytes {min(sizes) if sizes else 0} "
             f"maxBytes {max(sizes) if sizes else 0} step: {_step(sizes)} warmup iters: {info.get('warmup')} "
             f"iters: {info.get('iters')} agg iters: 1 validation: {1 if opts.get('verify', True) else 0} "
             f"graph: {opts.get('cuda_graph') or 0} unalign: 0",
             "#", "# Using devices"]
    rank = 0
    for process, devices in enumerate(per_process):
        host = hosts[process] if process < len(hosts) else hosts[-1]
        for device in devices:
            name = names[device] if isinstance(device, int) and device < len(names) else "?"
            # Pid 0: not recorded (no user process has it); a dash would break readers that expect digits
            lines.append(f"#  Rank {rank:2d} Group  0 Pid {0:6d} on {host:>10} device {device:2d} "
                         f"[{_bus_id(record.topology, device)}] {name}")
            rank += 1
    lines.append("#")
    lines.append(f"# {'':>10}  {'':>12}  {'':>8}  {'':>6}  {'':>6}           out-of-place                       in-place          ")
    lines.append(f"# {'size':>10}  {'count':>12}  {'type':>8}  {'redop':>6}  {'root':>6}  {'time':>7}  {'algbw':>6}  "
                 f"{'busbw':>6}  {'#wrong':>6}  {'time':>7}  {'algbw':>6}  {'busbw':>6}  {'#wrong':>6} ")
    lines.append(f"# {'(B)':>10}  {'(elements)':>12}  {'':>8}  {'':>6}  {'':>6}  {'(us)':>7}  {'(GB/s)':>6}  "
                 f"{'(GB/s)':>6}  {'':>6}  {'(us)':>7}  {'(GB/s)':>6}  {'(GB/s)':>6}  {'':>6} ")
    return "\n".join(lines) + "\n"


def _nccl_group(m: Measurement | None) -> str:
    if m is None:
        return f"  {'N/A':>7}  {'N/A':>6}  {'N/A':>6}  {'N/A':>6}"
    wrong = m.extra.get("wrong")
    body = (f"  {_float_str(m.extra['time_us'], 7)}  {_float_str(m.extra['algbw_gb_per_s'], 6)}  "
            f"{_float_str(m.extra['busbw_gb_per_s'], 6)}")
    return body + (f"  {'N/A':>6}" if wrong is None else f"  {wrong:6g}")


def nccl_tests_row(record: RunRecord, size_bytes: int) -> str:
    """The data line of one size: the out-of-place group, then the in-place group (N/A when not run)."""
    op = _nccl(record).get("op")
    at = [m for m in record.measurements if m.size_bytes == size_bytes]
    out = next((m for m in at if not m.extra.get("inplace")), None)
    inp = next((m for m in at if m.extra.get("inplace")), None)
    first = out or inp
    count = first.extra.get("count", 0) if first is not None else 0
    spec = OP_TABLE.get(str(op))  # what nccl-tests prints for the operation's program (the descriptor's)
    redop, root = (spec.tool_redop, spec.tool_root) if spec is not None else ("none", -1)
    return f"{size_bytes:12d}  {count:12d}  {'float':>8}  {redop:>6}  {root:6d}" + _nccl_group(out) + _nccl_group(inp) + "\n"


def _prediction_line(size_bytes: int, pred: dict[str, Any]) -> str:
    """One simulated size: NCCL's choice (algorithm/protocol, channels, NCCL's own estimate) and the
    twin's busbw of every algorithm/protocol NCCL considered."""
    chosen = pred["algorithm"] + (f"/{pred['protocol']}" if pred.get("protocol") else "")
    extra = []
    if pred.get("channels"):
        extra.append(f"{pred['channels']} channels")
    if pred.get("nccl_estimate_us") is not None:
        extra.append(f"NCCL's estimate {pred['nccl_estimate_us']:.2f} us, twin {pred.get('time_us', 0.0):.2f} us")
    algos = ", ".join(f"{name} {v['busbw_gb_per_s']:.1f}" for name, v in pred["algorithms"].items())
    detail = f" ({'; '.join(extra)})" if extra else ""
    line = (f"# simulated {size_bytes} B: {chosen} chosen by NCCL's tuner, the least of its own estimates{detail}; "
            f"twin busbw GB/s per algorithm/protocol: {algos}")
    rated = {name: float(v["busbw_gb_per_s"]) for name, v in pred["algorithms"].items() if v.get("busbw_gb_per_s")}
    best = max(rated, key=lambda k: rated[k]) if rated else None
    if best is not None and chosen in rated and best != chosen and rated[best] > 1.05 * rated[chosen]:
        line += (f"; the twin rates {best} {rated[best] / rated[chosen] - 1:.0%} faster than NCCL's choice "
                 "(NCCL picks by its estimate, not by the twin)")
    return line


def nccl_tests_footer(record: RunRecord) -> str:
    """nccl-tests' footer (out-of-bounds count, average busbw over every timed line, the concluding
    line), then linkscope's notes and, for a simulated run, the model's algorithm per size."""
    wrong = sum(int(m.extra.get("wrong") or 0) for m in record.measurements)
    busbw = [float(m.extra["busbw_gb_per_s"]) for m in record.measurements if m.extra.get("busbw_gb_per_s") is not None]
    avg = sum(busbw) / len(busbw) if busbw else 0.0
    lines = [f"# {'Out of bounds values':<20} : {wrong} {'FAILED' if wrong else 'OK'}",
             f"# {'Avg bus bandwidth':<20} : {avg:g} ",
             "#", f"# Collective test concluded: {_program(record)}", "#"]
    lines += [f"# note: {note}" for note in _nccl(record).get("notes", [])]
    for m in record.measurements:
        pred = m.extra.get("prediction")
        if pred and not m.extra.get("inplace"):
            lines.append(_prediction_line(m.size_bytes, pred))
    return "\n".join(lines) + "\n"


def nccl_tests_text(record: RunRecord) -> str:
    """nccl-tests' text of an NCCL record: header, one line per size, footer."""
    return nccl_tests_header(record) + "".join(nccl_tests_row(record, s) for s in nccl_sizes(record)) \
        + nccl_tests_footer(record)


# ---- bench stencil and bench p2p -----------------------------------------------------------------------
def stencil_text(record: RunRecord) -> str:
    """Time per halo exchange by (size, mapping), the gains over default and their verdicts."""
    info = dict(record.extra.get("stencil") or {})
    slow = info.get("emulated_slow_pairs") or []
    label = " (EMULATED slow pairs: " + ",".join(f"{a}-{b}" for a, b in slow) + ")" if slow else ""
    lines = [f"# linkscope stencil: grid {'x'.join(map(str, info.get('grid', [])))}"
             f"{' periodic' if info.get('periodic') else ''}{' weighted' if info.get('weighted') else ''}{label}"
             + (" (SIMULATED)" if record.provenance.value == "simulated" else "")]
    graphed = {bool(m.extra.get("cuda_graph")) for m in record.measurements}
    if graphed:
        lines.append("# launches: " + ("CUDA graphs of " + str(record.options.get("cuda_graph")) + " exchanges"
                                      if graphed == {True} else "eager (each exchange from Python)"
                                      if graphed == {False} else "mixed (see notes)"))
    for name, g in (info.get("gpu_of_rank") or {}).items():
        lines.append(f"# mapping {name}: gpu_of_rank {list(g)}")
    lines.append(f"#{'halo (B)':>11} {'mapping':>10} {'time (us)':>11} {'stddev':>8} {'runs':>5} {'#wrong':>7}")
    for m in record.measurements:
        lat = m.latency
        wrong = m.extra.get("wrong")
        lines.append(f" {m.size_bytes:>11d} {m.extra.get('mapping', '?'):>10} {lat.mean if lat else 0.0:>11.2f} "
                     f"{lat.stddev if lat else 0.0:>8.2f} {m.extra.get('runs', lat.n if lat else 0):>5d} "
                     f"{'N/A' if wrong is None else wrong:>7}")
    for name, gains in (info.get("gains") or {}).items():
        for size, gain in gains:
            lines.append(f"# gain of {name} over default at {size} B: {gain:+.1%}")
        verdict = (info.get("verdicts") or {}).get(name)
        if verdict:
            lines.append(f"# {name}: {verdict}")
    lines += [f"# note: {note}" for note in info.get("notes", [])]
    return "\n".join(lines) + "\n"


def p2p_text(record: RunRecord) -> str:
    """One ranks x ranks bandwidth matrix per size (row = sending rank; N/A on the diagonal)."""
    info = dict(record.extra.get("p2p") or {})
    ranks = int(info.get("ranks", 0))
    lines = []
    for size in sorted({m.size_bytes for m in record.measurements}):
        lines.append(f"# p2p {info.get('transport')} bandwidth (GB/s), size {size} B, row = sending rank"
                     + (" (SIMULATED)" if record.provenance.value == "simulated" else ""))
        lines.append("    " + "".join(f"{j:>9d}" for j in range(ranks)))
        cells = {(m.src, m.dst): m.median_gb_per_s for m in record.measurements if m.size_bytes == size}
        for i in range(ranks):
            row = [cells.get((i, j)) for j in range(ranks)]
            lines.append(f"{i:>4d}" + "".join(f"{'N/A' if v is None else f'{v:.2f}':>9}" for v in row))
    bad = [m for m in record.measurements if m.extra.get("wrong")]
    if bad:
        lines.append(f"# DATA CHECK FAILED for {len(bad)} pair/size cells")
    return "\n".join(lines) + "\n"
