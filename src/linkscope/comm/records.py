"""The comm runners' results as RunRecords (rank 0 only): the one schema, so JSON, CSV, the OSU and
nccl-tests text (``report.textformats``), ``report`` and ``model check`` read them like bench records.

Each record keeps in ``extra`` what its text needs beyond the measurements (``extra["mpi"]``:
test, buffers, pairs; ``extra["nccl"]``: op, ranks, iterations, notes; ``extra["stencil"]``:
grid, mappings, gains, verdicts; ``extra["p2p"]``: ranks, transport), and each OSU line's
measurement its table value (``extra["osu_value"]``: OSU's MB/s or µs).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..results.schema import ALL, Measurement, RunProvenance, RunRecord, Status, now_utc
from ..results.stats import Stats

if TYPE_CHECKING:  # types only: each MPI rank imports this module, and comm.nccl pulls in the model (scipy)
    from .mpi_p2p import OsuResult
    from .nccl import NcclResult
    from .p2p_matrix import P2PMatrix
    from .stencil import StencilResult


def _provenance(simulated: bool) -> RunProvenance:
    return RunProvenance.SIMULATED if simulated else RunProvenance.MEASURED


def _verified(wrong: int | None) -> bool | None:
    return None if wrong is None else wrong == 0


def osu_record(result: OsuResult, context: Mapping[str, Any], options: Mapping[str, Any],
               complete: bool = True) -> RunRecord:
    """One measurement per (pair, size); with several pairs also the OSU line's aggregate
    (``scope`` total: bandwidth summed, latency averaged over pairs)."""
    measurements = []
    direction = "bi" if result.test == "bibw" else "uni"
    single = len(result.pairs) == 1
    for row in result.rows:
        wrong_ok = row.wrong_bytes is None or row.wrong_bytes == 0
        status = Status.OK if wrong_ok else Status.ERROR
        reason = "" if wrong_ok else f"{row.wrong_bytes} received bytes differ from what was sent"
        extra: dict[str, Any] = {"iterations": row.iterations, "warmup": row.warmup, "window": row.window,
                                 "buffers": result.buffers, "wrong_bytes": row.wrong_bytes}
        if single or result.test == "allreduce":
            extra["osu_value"] = row.value
        if result.test == "allreduce":  # one line per size: the latency averaged over ranks
            measurements.append(Measurement(ALL, ALL, result.method, "allreduce", "uni", row.size_bytes, 0, None,
                                            Stats.from_samples(row.runs), status, reason, scope="total",
                                            verified=_verified(row.wrong_bytes),
                                            extra={**extra, "ranks": row.second + 1, "latency": "average over ranks"}))
        elif result.test == "latency":
            measurements.append(Measurement(row.first, row.second, result.method, "pingpong", "uni", row.size_bytes,
                                            2 * row.size_bytes, None, Stats.from_samples(row.runs), status, reason,
                                            verified=_verified(row.wrong_bytes), extra=extra))
        else:
            extra["mb_per_s"] = row.value
            moved = row.size_bytes * row.window * row.iterations * (2 if result.test == "bibw" else 1)
            measurements.append(Measurement(row.first, row.second, result.method, "pairs", direction, row.size_bytes,
                                            moved, Stats.from_samples([v / 1e3 for v in row.runs]), None,  # MB/s -> GB/s
                                            status, reason, verified=_verified(row.wrong_bytes), extra=extra))
    if not single and result.test != "allreduce":
        for size, value, ok in result.per_size():
            stats = Stats.single(value if result.test == "latency" else value / 1e3)
            measurements.append(Measurement(ALL, ALL, result.method, "pairs", direction, size, 0,
                                            None if result.test == "latency" else stats,
                                            stats if result.test == "latency" else None,
                                            Status.OK if ok else Status.ERROR, "" if ok else "data check failed",
                                            scope="total", verified=ok, extra={"osu_value": value}))
    extra_mpi = {"mpi": {"test": result.test, "buffers": result.buffers, "method": result.method,
                         "pairs": [list(p) for p in result.pairs], "notes": list(result.notes)}}
    return RunRecord("mpi", RunProvenance.MEASURED, now_utc(), dict(context), dict(options),
                     measurements=tuple(measurements), findings=tuple(result.notes), complete=complete,
                     extra=extra_mpi)


def nccl_record(result: NcclResult, context: Mapping[str, Any], options: Mapping[str, Any],
                complete: bool = True, *, topology: Mapping[str, Any] | None = None,
                predictions: Mapping[int, Mapping[str, Any]] | None = None) -> RunRecord:
    """One measurement per (size, placement): bandwidth = algbw samples, latency = time samples;
    busbw, #wrong, count, placement in ``extra``. ``predictions`` (simulated runs): size -> the
    collective model's per-algorithm prediction, kept in the entry's extra."""
    prov = _provenance(result.simulated)
    ms = []
    for r in result.rows:
        ok = r.wrong in (None, 0)
        extra: dict[str, Any] = {
            "algbw_gb_per_s": r.algbw_gb_per_s, "busbw_gb_per_s": r.busbw_gb_per_s, "wrong": r.wrong,
            "inplace": r.inplace, "count": r.count, "time_us": r.time_us, "ranks": result.ranks, "cuda_graph": r.graph,
            "launch_us": r.launch_us, "launch_path": r.launch_path}
        if r.set_times_us:
            extra["set_times_us"] = list(r.set_times_us)
        if predictions and r.size_bytes in predictions:
            extra["prediction"] = dict(predictions[r.size_bytes])
        ms.append(Measurement(
            ALL, ALL, f"nccl.{result.op}", "collective", "uni", r.size_bytes, r.size_bytes,
            Stats.from_samples([r.size_bytes / t / 1e3 if t > 0 else 0.0 for t in r.runs_time_us]),
            Stats.from_samples(list(r.runs_time_us)), Status.OK if ok else Status.ERROR,
            "" if ok else f"{r.wrong} wrong elements{' (in place)' if r.inplace else ''}", prov, scope="total",
            verified=_verified(r.wrong), extra=extra))
    ctx = dict(context)
    ctx["nccl_version"] = result.nccl_version
    ctx["devices_per_process"] = [list(d) for d in result.devices_per_rank]
    extra_nccl = {"nccl": {"op": result.op, "ranks": result.ranks, "iters": result.iters, "warmup": result.warmup,
                           "version": result.nccl_version, "devices_per_process": ctx["devices_per_process"],
                           "notes": list(result.notes)}}
    return RunRecord("nccl", prov, now_utc(), ctx, dict(options), topology=topology, measurements=tuple(ms),
                     findings=tuple(result.notes), complete=complete, extra=extra_nccl)


def stencil_record(result: StencilResult, context: Mapping[str, Any], options: Mapping[str, Any],
                   complete: bool = True) -> RunRecord:
    """One measurement per (mapping, halo size): latency = time per exchange over runs."""
    from .stencil import uniform_gain_note  # here: comm.stencil imports the traffic package (scipy)

    prov = _provenance(result.simulated)
    method = "nccl.sendrecv" + ("+emulated" if result.emulated_slow_pairs else "")
    ms = []
    for r in result.rows:
        ok = r.wrong in (None, 0)
        lat = Stats.from_samples(list(r.runs_us))
        bw = Stats.from_samples([r.exchange_bytes / (t / 1e6) / 1e9 for t in r.runs_us if t > 0] or [0.0])
        ms.append(Measurement(ALL, ALL, method, "stencil", "bi", r.size_bytes, r.exchange_bytes, bw, lat,
                              Status.OK if ok else Status.ERROR, "" if ok else f"{r.wrong} wrong elements", prov,
                              scope="total", verified=_verified(r.wrong),
                              extra={"mapping": r.mapping, "gpu_of_rank": list(result.gpu_of_rank[r.mapping]),
                                     "emulated": bool(result.emulated_slow_pairs), "runs": len(r.runs_us),
                                     "comm_sets": r.sets, "cuda_graph": r.graph,
                                     "wrong": r.wrong}))
    rel = max((r.stddev_us / r.mean_us for r in result.rows if r.mean_us > 0), default=0.0)
    extra = {"stencil": {
        "grid": list(result.grid), "periodic": result.periodic, "weighted": result.weighted,
        "gpu_of_rank": {k: list(v) for k, v in result.gpu_of_rank.items()},
        "emulated_slow_pairs": [list(p) for p in result.emulated_slow_pairs],
        "gains": {k: [[s, g] for s, g in result.gains(k)] for k in result.gpu_of_rank if k != "default"},
        "verdicts": {k: uniform_gain_note(result.gains(k), rel) for k in result.gpu_of_rank if k != "default"},
        "mapping_info": result.mapping_info, "notes": list(result.notes)}}
    return RunRecord("stencil", prov, now_utc(), dict(context), dict(options), measurements=tuple(ms),
                     findings=tuple(result.notes), complete=complete, extra=extra)


def p2p_record(result: P2PMatrix, context: Mapping[str, Any], options: Mapping[str, Any],
               complete: bool = True) -> RunRecord:
    """One measurement per (ordered rank pair, size), each pair alone."""
    prov = _provenance(result.simulated)
    method = "nccl.sendrecv" if result.transport == "nccl" else "mpi.bw"
    ms = []
    for c in result.cells:
        ok = c.wrong in (None, 0)
        ms.append(Measurement(c.src, c.dst, method, "matrix", "uni", c.size_bytes, c.size_bytes,
                              Stats.single(c.gb_per_s), Stats.single(c.time_us),
                              Status.OK if ok else Status.ERROR, "" if ok else f"{c.wrong} wrong", prov,
                              verified=_verified(c.wrong), extra={"wrong": c.wrong}))
    ctx = dict(context)
    ctx["devices_per_process"] = [list(d) if isinstance(d, tuple) else d for d in result.devices]
    return RunRecord("p2p", prov, now_utc(), ctx, dict(options), measurements=tuple(ms), complete=complete,
                     extra={"endpoints": "ranks", "p2p": {"ranks": result.ranks, "transport": result.transport}})
