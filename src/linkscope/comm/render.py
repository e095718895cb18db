"""Text tables (OSU, nccl-tests) and RunRecords for the comm runners (rank 0 only)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Mapping

from ..measure.stats import Stats
from ..results.schema import ALL, Measurement, RunProvenance, RunRecord, Status
from .mpi_p2p import OsuResult
from .nccl import NcclResult
from .p2p_matrix import P2PMatrix
from .stencil import StencilResult, uniform_gain_note

_OSU_TITLE = {"latency": "OSU MPI Latency Test", "bw": "OSU MPI Bandwidth Test", "bibw": "OSU MPI Bi-Directional Bandwidth Test",
              "allreduce": "OSU MPI Allreduce Latency Test"}


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def osu_header(result: OsuResult) -> str:
    """The title and column header lines (OSU's layout), newline-terminated."""
    pairs = ", ".join(f"{a}<->{b}" for a, b in result.pairs)
    if result.test == "allreduce":
        ranks = result.pairs[0][1] + 1
        return (f"# {_OSU_TITLE[result.test]} (linkscope, OSU semantics)\n"
                f"# buffers {result.buffers}, method {result.method}, {ranks} ranks, MPI_FLOAT MPI_SUM, "
                "latency averaged over ranks\n# Size       Avg Latency(us)\n")
    lines = [f"# {_OSU_TITLE[result.test]} (linkscope, OSU semantics)",
             f"# buffers {result.buffers}, method {result.method}, pairs {pairs}"
             + (" (bandwidth summed over pairs)" if len(result.pairs) > 1 and result.test != "latency" else "")
             + (" (latency averaged over pairs)" if len(result.pairs) > 1 and result.test == "latency" else "")]
    lines.append("# Size          Latency (us)" if result.test == "latency" else "# Size      Bandwidth (MB/s)")
    return "\n".join(lines) + "\n"


def osu_row(size: int, value: float) -> str:
    """One data line, OSU's ``%-10d%20.2f``."""
    return f"{size:<10d}{value:>20.2f}\n"


def osu_footer(result: OsuResult) -> str:
    """What follows the rows: the sizes whose data check failed (empty when all passed)."""
    bad = [size for size, _, ok in result.per_size() if not ok]
    return f"# DATA CHECK FAILED at sizes {', '.join(map(str, bad))}\n" if bad else ""


def osu_text(result: OsuResult) -> str:
    """OSU's own layout: ``%-10d%20.2f`` under ``# Size  Bandwidth (MB/s)`` / ``# Size  Latency (us)``.

    The same text is what ``bench mpi`` streams: the header, one row per finished size, the footer.
    """
    return osu_header(result) + "".join(osu_row(size, value) for size, value, _ in result.per_size()) \
        + osu_footer(result)


def osu_record(result: OsuResult, context: Mapping[str, Any], options: Mapping[str, Any],
               complete: bool = True) -> RunRecord:
    measurements = []
    for row in result.rows:
        wrong_ok = row.wrong_bytes is None or row.wrong_bytes == 0
        status = Status.OK if wrong_ok else Status.ERROR
        reason = "" if wrong_ok else f"{row.wrong_bytes} received bytes differ from what was sent"
        extra = {"iterations": row.iterations, "warmup": row.warmup, "window": row.window,
                 "buffers": result.buffers, "wrong_bytes": row.wrong_bytes}
        if result.test == "allreduce":
            ranks = row.second + 1
            measurements.append(Measurement(ALL, ALL, result.method, "allreduce", "uni", row.size_bytes,
                                            0, None, Stats.from_samples(row.runs),
                                            status, reason, scope="total", verified=_verified(row.wrong_bytes),
                                            extra={**extra, "ranks": ranks, "latency": "average over ranks"}))
        elif result.test == "latency":
            lat = Stats.from_samples(row.runs)
            measurements.append(Measurement(row.first, row.second, result.method, "pingpong", "uni", row.size_bytes,
                                            2 * row.size_bytes, None, lat, status, reason, verified=_verified(row.wrong_bytes),
                                            extra=extra))
        else:
            bw = Stats.from_samples([v / 1e3 for v in row.runs])  # MB/s -> GB/s
            extra["mb_per_s"] = row.value
            moved = row.size_bytes * row.window * row.iterations * (2 if result.test == "bibw" else 1)
            measurements.append(Measurement(row.first, row.second, result.method, "pairs",
                                            "bi" if result.test == "bibw" else "uni", row.size_bytes, moved, bw, None,
                                            status, reason, verified=_verified(row.wrong_bytes), extra=extra))
    if len(result.pairs) > 1 and result.test != "allreduce":
        for size, value, ok in result.per_size():
            stats = Stats.single(value if result.test == "latency" else value / 1e3)
            measurements.append(Measurement(ALL, ALL, result.method, "pairs", "bi" if result.test == "bibw" else "uni",
                                            size, 0, None if result.test == "latency" else stats,
                                            stats if result.test == "latency" else None,
                                            Status.OK if ok else Status.ERROR, "" if ok else "data check failed",
                                            scope="total", verified=ok))
    return RunRecord("mpi", RunProvenance.MEASURED, now_utc(), dict(context), dict(options),
                     measurements=tuple(measurements), complete=complete)


def _verified(wrong: int | None) -> bool | None:
    return None if wrong is None else wrong == 0


_NCCL_GROUP_HEAD = f" {'time':>9} {'algbw':>8} {'busbw':>8} {'#wrong':>7}"
_NCCL_GROUP_UNIT = f" {'(us)':>9} {'(GB/s)':>8} {'(GB/s)':>8} {'':>7}"


def nccl_header(result: NcclResult) -> str:
    """Title and column headers (nccl-tests' columns; a second column group when in place was run)."""
    both = result.has_inplace
    place = "out-of-place and in-place" if both else "out-of-place"
    lines = [f"# linkscope nccl: op {result.op}, {result.ranks} ranks, NCCL {result.nccl_version}, "
             f"iters {result.iters}, warm-up {result.warmup}, float32, {place}"
             + (" (SIMULATED)" if result.simulated else ""),
             f"# devices per process: {list(result.devices_per_rank)}"]
    if both:
        lines.append(f"#{'':>11} {'':>12} {'':>6} {'':>6} {'':>5} {'out-of-place':^35} {'in-place':^35}")
    groups = 2 if both else 1
    lines.append(f"#{'size':>11} {'count':>12} {'type':>6} {'redop':>6} {'root':>5}" + _NCCL_GROUP_HEAD * groups)
    lines.append(f"#{'(B)':>11} {'(elements)':>12} {'':>6} {'':>6} {'':>5}" + _NCCL_GROUP_UNIT * groups)
    return "\n".join(lines) + "\n"


def _nccl_group(row: Any) -> str:
    if row is None:
        return f" {'N/A':>9} {'N/A':>8} {'N/A':>8} {'N/A':>7}"
    wrong = "N/A" if row.wrong is None else str(row.wrong)
    return f" {row.time_us:>9.2f} {row.algbw_gb_per_s:>8.2f} {row.busbw_gb_per_s:>8.2f} {wrong:>7}"


def nccl_row(result: NcclResult, size_bytes: int) -> str:
    """The data line of one size: out-of-place group, then the in-place group when it was run."""
    out, inp = result.row(size_bytes, False), result.row(size_bytes, True)
    first = out or inp
    redop = "sum" if result.op in ("allreduce", "reduce", "reduce_scatter") else "none"
    root = "0" if result.op in ("broadcast", "reduce") else "-1"
    line = f" {size_bytes:>11d} {first.count:>12d} {'float':>6} {redop:>6} {root:>5}" + _nccl_group(out)
    if result.has_inplace:
        line += _nccl_group(inp)
    return line + "\n"


def nccl_footer(result: NcclResult) -> str:
    lines = [f"# Out of bounds values : {result.wrong_total} {'OK' if result.wrong_total == 0 else 'FAILED'}"]
    lines += [f"# note: {note}" for note in result.notes]
    return "\n".join(lines) + "\n"


def nccl_text(result: NcclResult) -> str:
    """nccl-tests' table: header, one line per size (out-of-place, and in-place columns when run),
    the out-of-bounds summary and notes. ``bench nccl`` streams the same lines as sizes finish."""
    return nccl_header(result) + "".join(nccl_row(result, s) for s in result.sizes()) + nccl_footer(result)


def nccl_record(result: NcclResult, context: Mapping[str, Any], options: Mapping[str, Any],
                complete: bool = True) -> RunRecord:
    prov = RunProvenance.SIMULATED if result.simulated else RunProvenance.MEASURED
    ms = []
    for r in result.rows:
        ok = r.wrong in (None, 0)
        ms.append(Measurement(
            ALL, ALL, f"nccl.{result.op}", "collective", "uni", r.size_bytes, r.size_bytes,
            Stats.from_samples([r.size_bytes / t / 1e3 if t > 0 else 0.0 for t in r.runs_time_us]),
            Stats.from_samples(list(r.runs_time_us)), Status.OK if ok else Status.ERROR,
            "" if ok else f"{r.wrong} wrong elements{' (in place)' if r.inplace else ''}", prov, scope="total",
            verified=None if r.wrong is None else r.wrong == 0,
            extra={"algbw_gb_per_s": r.algbw_gb_per_s, "busbw_gb_per_s": r.busbw_gb_per_s, "wrong": r.wrong,
                   "inplace": r.inplace, "count": r.count, "time_us": r.time_us, "ranks": result.ranks,
                   "cuda_graph": r.graph}))
    ctx = dict(context)
    ctx["nccl_version"] = result.nccl_version
    ctx["devices_per_process"] = [list(d) for d in result.devices_per_rank]
    return RunRecord("nccl", prov, now_utc(), ctx, dict(options), measurements=tuple(ms),
                     findings=tuple(result.notes), complete=complete)


def stencil_text(result: StencilResult) -> str:
    label = " (EMULATED slow pairs: " + ",".join(f"{a}-{b}" for a, b in result.emulated_slow_pairs) + ")" \
        if result.emulated_slow_pairs else ""
    lines = [f"# linkscope stencil: grid {'x'.join(map(str, result.grid))}"
             f"{' periodic' if result.periodic else ''}{' weighted' if result.weighted else ''}{label}"
             + (" (SIMULATED)" if result.simulated else "")]
    for name, g in result.gpu_of_rank.items():
        lines.append(f"# mapping {name}: gpu_of_rank {list(g)}")
    lines.append(f"#{'halo (B)':>11} {'mapping':>10} {'time (us)':>11} {'stddev':>8} {'runs':>5} {'#wrong':>7}")
    for r in result.rows:
        lines.append(f" {r.size_bytes:>11d} {r.mapping:>10} {r.mean_us:>11.2f} {r.stddev_us:>8.2f} "
                     f"{len(r.runs_us):>5d} {'N/A' if r.wrong is None else r.wrong:>7}")
    for name in result.gpu_of_rank:
        if name == "default":
            continue
        gains = result.gains(name)
        for size, gain in gains:
            lines.append(f"# gain of {name} over default at {size} B: {gain:+.1%}")
        rel = max((r.stddev_us / r.mean_us for r in result.rows if r.mean_us > 0), default=0.0)
        lines.append(f"# {name}: {uniform_gain_note(gains, rel)}")
    for note in result.notes:
        lines.append(f"# note: {note}")
    return "\n".join(lines) + "\n"


def stencil_record(result: StencilResult, context: Mapping[str, Any], options: Mapping[str, Any],
                   complete: bool = True) -> RunRecord:
    prov = RunProvenance.SIMULATED if result.simulated else RunProvenance.MEASURED
    method = "nccl.sendrecv" + ("+emulated" if result.emulated_slow_pairs else "")
    ms = []
    for r in result.rows:
        ok = r.wrong in (None, 0)
        lat = Stats.from_samples(list(r.runs_us))
        bw = Stats.from_samples([r.exchange_bytes / (t / 1e6) / 1e9 for t in r.runs_us if t > 0] or [0.0])
        ms.append(Measurement(ALL, ALL, method, "stencil", "bi", r.size_bytes, r.exchange_bytes, bw, lat,
                              Status.OK if ok else Status.ERROR, "" if ok else f"{r.wrong} wrong elements", prov,
                              scope="total", verified=None if r.wrong is None else r.wrong == 0,
                              extra={"mapping": r.mapping, "gpu_of_rank": list(result.gpu_of_rank[r.mapping]),
                                     "emulated": bool(result.emulated_slow_pairs)}))
    extra = {"stencil": {
        "grid": list(result.grid), "periodic": result.periodic, "weighted": result.weighted,
        "gpu_of_rank": {k: list(v) for k, v in result.gpu_of_rank.items()},
        "emulated_slow_pairs": [list(p) for p in result.emulated_slow_pairs],
        "gains": {k: [[s, g] for s, g in result.gains(k)] for k in result.gpu_of_rank if k != "default"},
        "mapping_info": result.mapping_info}}
    return RunRecord("stencil", prov, now_utc(), dict(context), dict(options), measurements=tuple(ms),
                     findings=tuple(result.notes), complete=complete, extra=extra)


def p2p_text(result: P2PMatrix) -> str:
    lines = []
    for size in sorted({c.size_bytes for c in result.cells}):
        lines.append(f"# p2p {result.transport} bandwidth (GB/s), size {size} B, row = sending rank"
                     + (" (SIMULATED)" if result.simulated else ""))
        lines.append("    " + "".join(f"{j:>9d}" for j in range(result.ranks)))
        for i, row in enumerate(result.matrix(size)):
            lines.append(f"{i:>4d}" + "".join(f"{'N/A' if v is None else f'{v:.2f}':>9}" for v in row))
    bad = [c for c in result.cells if c.wrong]
    if bad:
        lines.append(f"# DATA CHECK FAILED for {len(bad)} pair/size cells")
    return "\n".join(lines) + "\n"


def p2p_record(result: P2PMatrix, context: Mapping[str, Any], options: Mapping[str, Any],
               complete: bool = True) -> RunRecord:
    prov = RunProvenance.SIMULATED if result.simulated else RunProvenance.MEASURED
    method = "nccl.sendrecv" if result.transport == "nccl" else "mpi.bw"
    ms = []
    for c in result.cells:
        ok = c.wrong in (None, 0)
        ms.append(Measurement(c.src, c.dst, method, "matrix", "uni", c.size_bytes, c.size_bytes,
                              Stats.single(c.gb_per_s), Stats.single(c.time_us),
                              Status.OK if ok else Status.ERROR, "" if ok else f"{c.wrong} wrong", prov,
                              verified=None if c.wrong is None else c.wrong == 0))
    ctx = dict(context)
    ctx["devices_per_process"] = [list(d) if isinstance(d, tuple) else d for d in result.devices]
    return RunRecord("p2p", prov, now_utc(), ctx, dict(options), measurements=tuple(ms),
                     complete=complete, extra={"endpoints": "ranks"})
