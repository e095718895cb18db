"""``linkscope model predict|calibrate|check|params``: the fabric model from the command line."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from ..atomic import check_paths
from ..errors import ConfigError, UserError
from ..patterns.methods import DEFAULT_METHOD
from .common import (
    NIC_HELP,
    STDOUT,
    json_option,
    parse_gpu_list,
    stderr_console,
    stdout_console,
    with_nic_option,
    write_json_output,
)
from .topoinput import TopologyInput, from_option, gpu_model_option, preset_option, synthetic_option

model_app = typer.Typer(
    name="model",
    help="Predict transfers with the fabric model; calibrate it from a measured run; check it against one.",
    no_args_is_help=True,
)


def _load_record(path: Path):
    from ..results import io as run_io

    return run_io.load(path)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "N/A" if value is None else f"{value:.{digits}f}"


def _parse_flows(text: str) -> list[tuple]:
    flows = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if "->" not in part:
            raise ConfigError(f"bad flow {part!r} in --flows", hint="write flows as SRC->DST, e.g. 0->1,2->3 or host->0")
        a, b = (x.strip() for x in part.split("->", 1))
        flows.append(tuple(x if x == "host" else _int(x, part) for x in (a, b)))
    if not flows:
        raise ConfigError("--flows is empty", hint="e.g. --flows 0->1,2->3")
    return flows


def _int(text: str, part: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"bad endpoint {text!r} in flow {part!r}", hint="use a GPU index or 'host'") from None


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")


@model_app.command("predict")
def predict_cmd(
    preset: str | None = preset_option("A shipped preset."),
    from_file: Path | None = from_option(),
    synthetic: str | None = synthetic_option("e.g. nvswitch:8, pcie:2x4, fattree:4x8."),
    gpu_model: str | None = gpu_model_option(),
    method: str = typer.Option(DEFAULT_METHOD.key, "--method", help="Transfer method (see: linkscope bench --list)."),
    pattern: str = typer.Option("pairs", "--pattern",
                                help="A built-in pattern (bench --list): pairs, ring, matrix, all-to-one, one-to-all, all-to-all, "
                                     "all-to-host, host-to-all ..."),
    flows: str | None = typer.Option(None, "--flows", help="Explicit concurrent flows, e.g. 0->1,2->3,host->4."),
    gpus: str | None = typer.Option(None, "--gpus", help="GPU indices for --pattern, e.g. 0,1,2,3 (default all)."),
    sizes: str = typer.Option("64MiB", "--sizes", help="Sizes per transfer: 8,4KiB,64MiB or 8:1GiB."),
    rtol: float | None = typer.Option(
        None, "--rtol",
        help="Completion tolerance of the flow simulation, the speed/accuracy knob: 0 = exact (one event per "
             "completion); r > 0 = finishes within 2r of exact, far fewer events. Default: exact below 5,000 "
             "concurrent transfers, 0.01 above."),
    nic: str | None = typer.Option(None, "--nic", help=NIC_HELP),
    json_path: str | None = json_option("the predictions"),
) -> None:
    """Predict what a group of concurrent transfers gets (labelled predicted).

    Example: linkscope model predict --preset pcie-8gpu-2socket --method staged-pinned --flows 0->1,2->3
    """
    from ..model.groups import predict_groups
    from ..model.predict import FabricModel, check_rtol
    from ..units import parse_sizes

    gpu_list = parse_gpu_list(gpus)
    check_paths(inputs={"--from": from_file}, outputs={"--json": json_path})
    if rtol is not None:
        check_rtol(rtol)  # a bad tolerance is refused before any work
    topology = TopologyInput(preset, from_file, synthetic, gpu_model).resolve(allow_fallback=True)
    topology, nic_choice = with_nic_option(topology, nic)  # --nic, else UCX_NET_DEVICES / NCCL_IB_HCA, else nearest
    size_list = parse_sizes(sizes)
    model = FabricModel(topology)
    rows = predict_groups(model, size_list, method, flows=_parse_flows(flows) if flows else None, pattern=pattern,
                          gpus=gpu_list, rtol=rtol)
    if write_json_output(json_path, json.dumps({"topology": topology.name, "nic": model.nic_spec.text, "predictions": rows},
                                               indent=2)):
        return
    _render_predictions(rows, topology.name, nic_choice)


def _render_predictions(rows: list[dict[str, Any]], topology_name: str, nic_choice: str | None) -> None:
    from ..report.console import Column, print_fitted
    from ..units import format_size

    columns = [Column("group", key=True), Column("src", key=True), Column("dst", key=True), Column("size", key=True),
               Column("GB/s"), Column("time (us)", "us"), Column("theoretical (GB/s)", "theo GB/s")]
    table_rows = [[str(r["group"]), str(r["src"]), str(r["dst"]), format_size(r["size_bytes"]), _fmt(r["predicted_gb_per_s"]),
                   _fmt(r["elapsed_us"], 2), _fmt(r["theoretical_gb_per_s"])] for r in rows]
    nics = f", NICs {nic_choice}" if nic_choice else ""
    console = stdout_console()
    print_fitted(console, f"predicted on {topology_name}{nics} (model, not measured)", columns, table_rows)
    bound = sum(1 for r in rows if r["limited_by"] == "copy engines")
    if bound:
        console.print(f"note: {bound} of {len(rows)} copies are copy-engine bound (each GPU sends to and receives from "
                      "several GPUs at once): the copy engines, not the links, set their rate", markup=False)
    if any(r["start_us"] > 0 for r in rows):
        from ..model.host_copies import SERIAL_NOTE

        console.print(f"note: {SERIAL_NOTE} (each row's time is its own; --json gives each start_us)", markup=False)


@model_app.command("params")
def params_cmd(
    topology: str | None = typer.Option(None, "--topology",
                                        help="A topology file, preset or synthetic spec whose model_params override the defaults."),
    fitted: bool = typer.Option(False, "--fitted", help="Only the fitted parameters, each with its rows and scope."),
    json_path: str | None = json_option("the parameters"),
) -> None:
    """List the model's parameters: value, provenance and source; a fitted one also names the machine
    kind, GPU count, library and rows it was fitted on and the scope it is meant for.

    Example: linkscope model params --fitted
    """
    from ..model.fits import FITS
    from ..model.params import ModelParams

    check_paths(outputs={"--json": json_path})
    params = (ModelParams.for_topology(TopologyInput.from_value(topology).resolve(allow_fallback=False)) if topology
              else ModelParams.defaults())
    rows: list[dict[str, Any]] = []
    for key in sorted(params.values):
        fit = FITS.get(key) if params.is_default(key) else None
        if fitted and fit is None:
            continue
        rows.append({"key": key, "value": params.values[key], "provenance": "fitted" if fit else params.provenance.get(key, ""),
                     "source": params.sources.get(key, ""), "fit": fit.as_dict() if fit else None})
    if write_json_output(json_path, json.dumps({"parameters": rows}, indent=2)):
        return
    from ..report.console import Column, print_fitted

    columns = [Column("parameter", key=True), Column("value"), Column("provenance", "prov."),
               Column("fitted on / source", "source", wrap=True), Column("scope", wrap=True)]
    table = []
    for r in rows:
        fit = r["fit"]
        where = (f"{fit['machine']}, {fit['gpu_count']} GPUs, {fit['library'] or 'no library'}: {fit['rows']}" if fit
                 else r["source"])
        table.append([r["key"], f"{r['value']:g}", r["provenance"], where, fit["scope"]["text"] if fit else ""])
    n_fit = sum(r["fit"] is not None for r in rows)
    print_fitted(stdout_console(), f"model parameters ({len(rows)}; {n_fit} fitted)", columns, table)


@model_app.command("calibrate")
def calibrate_cmd(
    results: Path = typer.Argument(..., help="A measured RunRecord (bench --json output)."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the calibrated topology here (default: stdout)."),
    topology: str | None = typer.Option(None, "--topology", help="Topology file/preset/spec (default: the one in RESULTS)."),
    json_path: str | None = json_option("the fit report (--json - needs -o for the topology)"),
) -> None:
    """Fit link efficiencies and per-method overheads/caps from measurements; write a calibrated topology.

    Example: linkscope model calibrate run.json -o calibrated.json
    """
    from ..atomic import write_text_atomic
    from ..model.calibrate import calibrate
    from ..topology import io as topo_io

    check_paths(inputs={"RESULTS": results, "--topology": topology if topology and Path(topology).is_file() else None},
                outputs={"--output": output, "--json": json_path})
    if json_path == "-" and output is None:
        raise ConfigError("--json - prints the fit report on stdout; give -o FILE for the calibrated topology")
    record = _load_record(results)
    topo = TopologyInput.from_value(topology).resolve(allow_fallback=False) if topology else None
    result = calibrate(record, topo, source=str(results))
    err = stderr_console()
    if output is not None:
        try:
            write_text_atomic(output, topo_io.dumps(result.topology))
        except OSError as exc:
            raise UserError(f"cannot write {output}: {exc.strerror or exc}") from exc
    if json_path == "-":
        write_json_output(json_path, json.dumps(result.as_dict(), indent=2))
    elif output is None:
        typer.echo(topo_io.dumps(result.topology), nl=False)
    for key, value in sorted(result.fitted.items()):
        err.print(f"fitted {key} = {value:.4g}", markup=False)
    if result.not_fitted:
        err.print(f"not fitted ({len(result.not_fitted)}), one line each:", markup=False)
        for key, why in sorted(result.not_fitted.items()):  # one per line: a 4,000-character line helped no one
            err.print(f"  {key}: {why}", markup=False)
    for note in result.notes:
        err.print(f"note: {note}", markup=False)
    if result.check and result.check.n_compared:
        err.print(f"calibrated model vs measured: median |error| {result.check.median_abs_rel_error:.1%}, "
                  f"worst {result.check.worst_abs_rel_error:.1%} over {result.check.n_compared} entries", markup=False)
    if output is not None and str(output) != STDOUT:
        err.print(f"wrote {output}", markup=False)
    if json_path not in (None, "-"):
        write_json_output(json_path, json.dumps(result.as_dict(), indent=2))


@model_app.command("check")
def check_cmd(
    results: Path = typer.Argument(..., help="A measured RunRecord (bench --json output)."),
    topology: str | None = typer.Option(None, "--topology", help="Topology file/preset/spec (default: the one in RESULTS)."),
    json_path: str | None = json_option("every entry and the summary"),
    max_error: float | None = typer.Option(None, "--max-error", min=0.0,
                                           help="Exit 3 when the worst |relative error| exceeds this (e.g. 0.1)."),
    allow_mismatch: bool = typer.Option(False, "--allow-mismatch",
                                        help="Compare even when RESULTS comes from another machine than --topology (GPU count, models or "
                                             "links differ)."),
    params_from: Path | None = typer.Option(
        None, "--params-from",
        help="Take the model parameters (model_params) of this topology file, e.g. one `model calibrate` wrote for another "
             "machine, and apply them to RESULTS' own topology: calibrate on one run, check on another."),
) -> None:
    """Predicted vs measured for every bandwidth entry, with the relative error and a summary.

    Refuses a --topology that does not match the machine of RESULTS (GPU count, GPU models, links)
    unless --allow-mismatch; says so when RESULTS is simulated (the model compared with itself).

    Example: linkscope model check run.json --topology calibrated.json
    """
    from ..model.check import check

    if params_from is not None and topology is not None:
        raise ConfigError("--params-from applies another file's parameters to RESULTS' own topology; "
                          "give --topology or --params-from, not both")
    check_paths(inputs={"RESULTS": results, "--params-from": params_from}, outputs={"--json": json_path})
    record = _load_record(results)
    topo = TopologyInput.from_value(topology).resolve(allow_fallback=False) if topology else None
    params = None
    if params_from is not None:
        from ..topology import io as topo_io

        params = dict(topo_io.load(params_from).model_params or {})
        if not params:
            raise UserError(f"--params-from {params_from}: the topology has no model_params",
                            hint="give a topology that `linkscope model calibrate RUN -o FILE` wrote")
    report = check(record, topo, params)
    if report.mismatches and not allow_mismatch:
        raise UserError(f"{results} does not come from a machine like {report.topology!r}: " + "; ".join(report.mismatches),
                        hint="check the record against its own topology (no --topology) or a calibrated copy of it; "
                             "--allow-mismatch compares anyway")
    notes = [f"MISMATCH: {m}" for m in report.mismatches]
    if report.compares_model_with_itself:
        notes.append(f"{report.record_provenance.upper()} record: its numbers come from the model, so this compares the "
                     "model with itself (errors near 0% say nothing about hardware)")
    err_console = stderr_console()
    for note in notes:
        err_console.print(f"warning: {note}", style="bold yellow", markup=False)
    if not write_json_output(json_path, json.dumps(report.as_dict(), indent=2, allow_nan=False)):
        _render_check(report, notes)
    if max_error is not None and (report.worst_abs_rel_error is None or report.worst_abs_rel_error > max_error):
        worst = "no entry could be compared" if report.worst_abs_rel_error is None else \
            f"worst |error| {report.worst_abs_rel_error:.1%} (entry {report.worst_index})"
        stderr_console().print(f"model check: {worst} exceeds --max-error {max_error:g}", markup=False)
        raise typer.Exit(3)


def _render_check(report, notes: list[str]) -> None:
    """Predicted vs measured, entry by entry, the notes, and the summary by method."""
    from ..report.console import Column, print_fitted
    from ..units import format_size

    what = "measured" if not report.compares_model_with_itself else report.record_provenance
    columns = [Column("#", key=True), Column("src"), Column("dst"), Column("method", justify="left"),
               Column("pattern", justify="left"), Column("dir", justify="left"), Column("size"),
               Column(f"{what} (GB/s)", f"{what[:4]}. GB/s"), Column("predicted (GB/s)", "pred. GB/s"),
               Column("error", justify="left", wrap=True)]
    rows = []
    for e in report.entries:
        err = "N/A" if e.rel_error is None else f"{e.rel_error:+.1%}"
        rows.append([str(e.index), str(e.src), str(e.dst), e.method, e.pattern, e.direction, format_size(e.size_bytes),
                     _fmt(e.measured_gb_per_s), _fmt(e.predicted_gb_per_s), err if not e.note else f"{err} ({e.note})"])
    console = stdout_console()
    print_fitted(console, f"model check on {report.topology}: predicted vs {what}", columns, rows)
    for note in notes:
        console.print(f"{note}", style="bold yellow", markup=False)
    if report.n_compared:
        console.print(f"summary: {report.n_compared} entries, median |error| {report.median_abs_rel_error:.1%}, "
                      f"worst {report.worst_abs_rel_error:.1%} (entry {report.worst_index})", markup=False)
        for method, s in report.by_method.items():
            console.print(f"  {method}: n={int(s['n'])} median {s['median_abs_rel_error']:.1%} worst {s['worst_abs_rel_error']:.1%}",
                          markup=False)
    else:
        console.print("summary: no entry could be compared", markup=False)
