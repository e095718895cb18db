"""``linkscope topo``: what is linked to what (levels, theoretical GB/s, affinity)."""
from __future__ import annotations

from pathlib import Path

import typer

from ..atomic import check_output_dir, check_paths
from ..errors import UserError
from .common import STDOUT, json_option, parse_gpu_list, stderr_console, stdout_console, write_error, write_json_output
from .topoinput import TopologyInput, from_option, gpu_model_option, preset_option, synthetic_option

EXPORT_FORMATS = ("nccl-xml",)


def register(app: typer.Typer) -> None:
    topo_app = typer.Typer(
        invoke_without_command=True,
        no_args_is_help=False,
    )

    @topo_app.callback()
    def topo(
        ctx: typer.Context,
        preset: str | None = preset_option("A shipped preset (see --list-presets)."),
        from_file: Path | None = from_option(),
        synthetic: str | None = synthetic_option("e.g. nvswitch:8, pcie:2x4."),
        gpu_model: str | None = gpu_model_option(),
        json_path: str | None = json_option("the topology model (with --health: the health report)"),
        output: Path | None = typer.Option(None, "-o", "--output",
                                           help="Also write the JSON model (or, with --export, that format) to this file."),
        export_format: str | None = typer.Option(None, "--export",
                                                 help="Write the topology in another tool's format to -o: nccl-xml (for NCCL_TOPO_FILE)."),
        placeholder_bus_ids: bool = typer.Option(False, "--placeholder-bus-ids",
                                                 help="--export nccl-xml of a topology without PCI bus ids (a preset): write "
                                                      "made-up ids, marked as placeholders in the file (else refused)."),
        gpus: str | None = typer.Option(None, "--gpus", help="Show only these GPUs, e.g. 0,1."),
        list_presets: bool = typer.Option(False, "--list-presets", help="List the shipped presets."),
        sysfs_root: Path | None = typer.Option(None, "--sysfs-root",
                                               help="Live discovery reads sysfs under this root instead of / (a recorded tree)."),
        health: bool = typer.Option(False, "--health",
                                    help="P2P routing health (ACS per bridge, IOMMU, BAR1, driver P2P status) and link "
                                         "state/error counters, of this machine or a folder recorded by 'topo export --raw'."),
        run: Path | None = typer.Option(None, "--run",
                                        help="With --health: a RunRecord measured there (e.g. bench --method "
                                             "ce,ce-nopeer,staged-pinned --json): pairs whose peer copies bounce "
                                             "through the host, and the suspect element behind slow pairs."),
    ) -> None:
        """Show the GPU topology: levels (nvidia-smi codes), theoretical GB/s, NUMA, cores, nearest NIC.

        Of this machine (live discovery), a preset, a file, a recorded folder or a synthetic spec.

        Examples: linkscope topo;  linkscope topo --preset mi250x-8gcd;  linkscope topo --json t.json;
        linkscope topo --from tests/fixtures/machines/hgx-h200-2;  linkscope topo --from node.xml (hwloc or NCCL XML);
        linkscope topo --export nccl-xml -o nccl-topo.xml;  sudo linkscope topo --health (ACS needs root)
        """
        if ctx.invoked_subcommand is not None:
            return
        if list_presets:
            _list_presets()
            return
        from ..discovery.auto import discover_live

        check_paths(inputs={"--from": from_file}, outputs={"--output": output, "--json": json_path})
        choice = TopologyInput(preset, from_file, synthetic, gpu_model)
        requested = _check_options(choice, export_format, output, gpus, sysfs_root, health, run)
        discover = None if sysfs_root is None else (lambda: discover_live(sysfs_root, strict_sysfs=True))
        check_paths(inputs={"--run": run})
        record = None
        if run is not None:  # read it first: a bad file fails before discovery
            from ..results.io import load as load_record

            record = load_record(run)
        if health and (preset is not None or synthetic is not None or export_format is not None or output is not None
                       or (from_file is not None and not Path(from_file).is_dir())):
            raise UserError("--health reads this machine or a folder recorded by 'linkscope topo export --raw'",
                            hint="drop --preset/--synthetic/--export/-o, or give --from a recorded folder")
        # the topology view prints the fallback note among the topology's notes: not twice
        topology = choice.resolve(allow_fallback=not choice.given and not health, discover=discover,
                                  fallback_note=None if json_path is None and output is None else "why")
        if health:
            _print_health(topology, from_file, sysfs_root, json_path, run, record)
        elif export_format == "nccl-xml":
            _export_nccl_xml(topology, output, placeholder_bus_ids)
        else:
            _show(topology, requested, output, json_path)

    @topo_app.command("export")
    def export(
        raw: Path = typer.Option(..., "--raw", help="Directory to record what discovery reads (golden fixture)."),
        sysfs_root: Path | None = typer.Option(None, "--sysfs-root",
                                               help="Read sysfs under this root instead of / (must then be complete)."),
    ) -> None:
        """Record what discovery reads on this machine (NVML facts, sysfs tree, rocm-smi output).

        Prints the files written (stdout); what could not be recorded goes to stderr and manifest.json.

        Example: linkscope topo export --raw fixtures/mynode
        """
        from ..discovery.raw import export_raw

        check_output_dir(raw, "--raw")
        written = export_raw(raw, sysfs_root=sysfs_root or Path("/"), require_sysfs=sysfs_root is not None)
        for path in written:
            typer.echo(str(path))
        notes = _manifest_notes(written)
        err = stderr_console()
        for note in notes:
            err.print(f"note: not recorded: {note}", style="yellow", markup=False)
        if len(written) <= 1:  # the manifest alone
            raise UserError(f"nothing was recorded in {raw} (see the notes above and {raw}/manifest.json)")

    app.add_typer(topo_app, name="topo")


def _list_presets() -> None:
    from ..topology.presets import load_preset, preset_names

    for name in preset_names():
        typer.echo(f"{name}\t{load_preset(name).description}")


def _check_options(choice: TopologyInput, export_format: str | None, output: Path | None, gpus: str | None,
                   sysfs_root: Path | None, health: bool, run: Path | None) -> list[int] | None:
    """Options of ``topo`` that cannot work together are refused before anything is read; returns ``--gpus``."""
    if export_format is not None:
        if export_format not in EXPORT_FORMATS:
            raise UserError(f"unknown --export format {export_format!r}", hint=f"valid: {', '.join(EXPORT_FORMATS)}")
        if output is None:
            raise UserError("--export needs -o FILE", hint="e.g. linkscope topo --export nccl-xml -o nccl-topo.xml")
    requested = parse_gpu_list(gpus)
    if sysfs_root is not None and choice.given:
        raise UserError("--sysfs-root applies to live discovery only",
                        hint="drop --preset/--from/--synthetic, or drop --sysfs-root")
    if run is not None and not health:
        raise UserError("--run goes with --health", hint="linkscope topo --health --run run.json")
    return requested


def _export_nccl_xml(topology, output: Path | None, placeholders: bool) -> None:
    from ..atomic import write_text_atomic
    from ..discovery.nccl_xml import export_xml

    text, notes = export_xml(topology, placeholders=placeholders)
    assert output is not None  # --export without -o was refused before
    try:
        write_text_atomic(output, text)
    except OSError as exc:
        raise write_error(output, exc) from exc
    for note in notes:
        stderr_console().print(f"note: {note}", style="yellow", markup=False)
    stderr_console().print(f"wrote NCCL topology XML to {output} (use: NCCL_TOPO_FILE={output})", markup=False)


def _show(topology, requested: list[int] | None, output: Path | None, json_path: str | None) -> None:
    """``-o`` (the JSON model), ``--json`` and the tables of the topology view."""
    from ..patterns.base import select_gpus
    from ..topology import io

    selected = list(select_gpus(topology, requested)) if requested is not None else None
    if output is not None:
        try:
            io.save(topology, output)
        except OSError as exc:
            raise write_error(output, exc) from exc
        if str(output) == STDOUT:  # -o -: stdout holds the topology JSON alone
            return
        stderr_console().print(f"wrote {output}", markup=False)
    if json_path is not None:
        if selected is not None:
            stderr_console().print("note: --gpus selects the GPUs of the tables; --json writes the whole model",
                                   style="yellow", markup=False)
        if write_json_output(json_path, lambda: io.dumps(topology)):
            return
    from ..report.topology_view import build_view, render_rich

    render_rich(build_view(topology, selected), stdout_console())


def _print_health(topology, from_file: Path | None, sysfs_root: Path | None, json_path: str | None, run: Path | None = None,
                  record=None) -> None:
    """The health section (and the link state and error counters NVML gave) of a live machine or a
    recording; with ``run``, what its measurements prove (host bounces) and the suspects (``diagnose.examine``)."""
    import json

    from ..counters import linkerrors
    from ..diagnose.examine import examine

    exam = examine(topology, recording=Path(from_file) if from_file is not None else None, sysfs_root=sysfs_root or Path("/"),
                   record=record, record_name=str(run))
    for note in exam.notes:
        stderr_console().print(f"note: {note}", style="yellow", markup=False)
    inputs, report, snapshot, issues = exam.inputs, exam.report, exam.snapshot, exam.issues
    proofs, suspects = list(exam.proofs), list(exam.suspects)
    if json_path is not None and write_json_output(json_path, json.dumps(exam.to_dict(), indent=2)):
        return
    out = stdout_console()
    where = f"recording {from_file}" if from_file is not None else "this machine"
    out.print(f"[bold]P2P routing health[/bold] of {where} ({topology.name})")
    for line in report.lines():
        out.print(f"  {line}", markup=False)
    out.print("[bold]Link state and error counters[/bold] (NVML/amdsmi, cumulative since the driver loaded)")
    if snapshot["gpus"]:
        lines = linkerrors.summary(snapshot)
    else:
        lines = [inputs.unrecorded_link_health()]
    for line in lines + [i.sentence for i in issues]:
        out.print(f"  {line}", markup=False)
    if record is not None:
        out.print(f"[bold]What the measurements of {run} show[/bold]")
        for line in proofs + [s.sentence for s in suspects] or ["no pair bounces through the host and no pair is slow"]:
            out.print(f"  {line}", markup=False)


def _manifest_notes(written: list[Path]) -> list[str]:
    import json

    manifest = next((p for p in written if p.name == "manifest.json"), None)
    if manifest is None:
        return []
    try:
        return [str(n) for n in json.loads(manifest.read_text()).get("notes", [])]
    except (OSError, ValueError):
        return []
