"""``linkscope survey``: the main job — topology, the default measurement suite and findings."""
from __future__ import annotations

from pathlib import Path

import typer

from ..atomic import check_paths
from ..errors import UserError
from .common import (
    STDOUT,
    check_backend,
    finish,
    make_engine,
    measure_options,
    measure_with,
    one_size_bytes,
    run_context,
    size_alias_option,
    stderr_console,
    stdout_console,
    write_error,
)
from .topoinput import TopologyInput, fallback_note_for, from_option, gpu_model_option, preset_option, synthetic_option


def _render_survey(record, topology) -> None:
    from ..report.console import render_record

    console = stdout_console()
    label = " [bold reverse yellow] SIMULATED [/]" if record.provenance.value == "simulated" else ""
    console.print(f"[bold]linkscope survey[/bold]{label}: {topology.name} ({topology.source or 'live'}), "
                  f"{topology.gpu_count} GPU{'s' if topology.gpu_count != 1 else ''}")
    if topology.description:
        console.print(topology.description, style="dim", markup=False)
    render_record(console, record)


def _pcie_probe(engine, topology):
    """The GPUs' PCIe link state reader (NVML's on NVIDIA: the platform row's ``pcie_probe``), read by
    the survey right after the host copies (real GPUs of this machine only; None elsewhere)."""
    if engine.capabilities().provenance == "simulated" or not topology.is_this_system:
        return None
    from ..platforms import pcie_probe_for

    return pcie_probe_for(g.vendor for g in topology.gpus)


def _diagnostics(engine, topology):
    """The survey's diagnosis (health section, link error counters around each step, host-bounce
    check) on real GPUs of this machine; None elsewhere (a simulated survey has no links to check)."""
    if engine.capabilities().provenance == "simulated" or not topology.is_this_system:
        return None
    from ..counters.sources import open_counter_source
    from ..diagnose import gather
    from ..diagnose.survey import SurveyDiagnostics
    from ..errors import BackendUnavailable

    try:
        source = open_counter_source()
    except BackendUnavailable as exc:
        stderr_console().print(f"note: link error counters not sampled: {exc}", style="yellow", markup=False)
        source = None
    return SurveyDiagnostics(topology, inputs=gather.live(), source=source)


def _write_report(record, path: Path) -> None:
    err = stderr_console()
    try:
        from ..report import html
    except ImportError as exc:
        err.print(f"note: HTML report skipped: linkscope.report.html is not available ({exc})", style="yellow", markup=False)
        return
    try:
        html.write_report([record], path)
    except OSError as exc:
        raise write_error(path, exc) from exc
    err.print(f"wrote {path}", markup=False)


def _after_write(record, output: Path, report: Path | None) -> None:
    if report is not None:  # "wrote OUTPUT" is said by finish, as for every command
        _write_report(record, report)


def register(app: typer.Typer) -> None:
    @app.command("survey")
    def survey(
        output: Path = typer.Option(Path("survey.json"), "-o", "--output", help="Where to write the survey RunRecord JSON."),
        report: Path | None = typer.Option(None, "--report", help="Where to write the HTML report (default: the JSON path with .html)."),
        no_report: bool = typer.Option(False, "--no-report", help="Do not write the HTML report."),
        backend: str = typer.Option("auto", "--backend", help="auto (cuda when usable here, else sim), cuda, rocm or sim."),
        preset: str | None = preset_option("Survey (sim) a shipped preset instead of this machine."),
        from_file: Path | None = from_option(),
        synthetic: str | None = synthetic_option("A synthetic topology, e.g. nvswitch:8."),
        gpu_model: str | None = gpu_model_option(),
        sizes: str | None = typer.Option(None, "--sizes",
                                         help="Transfer size of the matrices and patterns (one size; default 512MiB)."),
        size: str | None = size_alias_option(),
        time_budget: str | None = typer.Option(None, "--time-budget", help="Per plan and size (default 150ms)."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the data check."),
        osu: bool = typer.Option(False, "--osu", help="Print OSU-style text instead of tables."),
        no_diagnosis: bool = typer.Option(False, "--no-diagnosis",
                                          help="Skip the P2P routing health, the link error counters and the host-bounce check."),
    ) -> None:
        """Survey this machine: topology, CE and SM matrices (one way and both ways), the latency matrix,
        host<->device per GPU, concurrent patterns, a size sweep, and findings in plain words. Without
        GPUs it surveys the simulated default preset (hgx-h200-4), clearly labelled SIMULATED.

        Example: linkscope survey -o survey.json --report report.html
        """
        from dataclasses import replace

        from ..measure.survey import SURVEY_MEASURE_OPTIONS, SurveyOptions, run_survey

        check_backend(backend)
        report = _report_path(output, report, no_report)
        check_paths(inputs={"--from": from_file}, outputs={"--output": output, "--report": report})
        size_bytes = one_size_bytes(sizes, size, "512MiB", "256MiB")
        assert size_bytes is not None  # a default is given
        options = measure_options(reps=None, warmup=None, time_budget=time_budget, target_ci=None, no_verify=no_verify,
                                  chunk=None, base=SURVEY_MEASURE_OPTIONS)
        sweep = tuple(s for s in SurveyOptions().sweep_sizes_bytes if s < size_bytes) + (size_bytes,)
        survey_options = replace(SurveyOptions(), size_bytes=size_bytes, sweep_sizes_bytes=sweep, measure=options)
        topology = TopologyInput(preset, from_file, synthetic, gpu_model).resolve(allow_fallback=backend in ("auto", "sim"),
                                                                                     fallback_note=fallback_note_for(backend))
        engine = make_engine(backend, topology)
        json_path = str(output)
        diagnostics = None if no_diagnosis else _diagnostics(engine, topology)
        if engine.capabilities().provenance == "simulated":
            stderr_console().print("note: SIMULATED survey: numbers come from the fabric model, not from hardware",
                                   style="bold yellow")
        record = measure_with(engine, lambda progress, on_partial: run_survey(
            engine, topology, survey_options, progress=progress, on_partial=on_partial, context=run_context(topology, engine),
            pcie_probe=_pcie_probe(engine, topology), diagnostics=diagnostics), json_path=json_path, unit="steps",
            close=diagnostics.close if diagnostics is not None else None)
        finish(record, json_path=json_path, csv_path=None, osu=osu, render=lambda r: _render_survey(r, topology),
               before_exit=lambda r: _after_write(r, output, report))


def _report_path(output: Path, report: Path | None, no_report: bool) -> Path | None:
    """The HTML report beside ``--output`` (the JSON path with .html) unless ``--report`` names one or
    ``--no-report``; none for ``-o -`` (the record goes to stdout) unless ``--report`` names one."""
    if report is None and not no_report and str(output) == STDOUT:
        no_report = True  # -o -: the record goes to stdout; an HTML report only where --report names one
    if report is None and not no_report:
        report = output.with_suffix(".html")
        if report == output:
            raise UserError(f"--output {output}: the HTML report's default name (the JSON path with .html) is the same file",
                            hint="name the JSON file .json, or give --report FILE or --no-report")
    return None if no_report else report
