"""``linkscope check FILE...``: is this number normal? Verdicts on linkscope's and peer tools' results."""
from __future__ import annotations

import re
from pathlib import Path

import typer

from ..atomic import check_paths
from ..errors import UserError
from .common import one_size_bytes, parse_gpu_list, size_alias_option, stdout_console, write_error
from .topoinput import TopologyInput, from_option, gpu_model_option, preset_option, synthetic_option

EXIT_LOW = 3


def register(app: typer.Typer) -> None:
    app.command("check")(check)


def _fraction(value: float | None, option: str) -> float | None:
    if value is not None and not 0.0 < value <= 10.0:
        raise UserError(f"{option} must be a fraction of the expected value, e.g. 0.8; got {value:g}")
    return value


def check(
    files: list[Path] = typer.Argument(
        ..., metavar="FILE...",
        help="Results files: linkscope RunRecord JSON, nvbandwidth (text or -j), nccl-tests / rccl-tests (text or -J), OSU, "
             "p2pBandwidthLatencyTest, TransferBench."),
    fmt: str | None = typer.Option(None, "--format", help="Force the format: linkscope, nvbandwidth, nccl-tests, osu, p2p, "
                                                          "transferbench (default: from the content)."),
    preset: str | None = preset_option("The results came from a machine like this shipped preset."),
    from_file: Path | None = from_option(),
    synthetic: str | None = synthetic_option("A synthetic topology, e.g. nvswitch:2, pcie:2x4."),
    gpu_model: str | None = gpu_model_option(),
    gpus: str | None = typer.Option(None, "--gpus", help="The topology's GPUs the tool ran on, in the tool's order, e.g. 2,3 "
                                                         "(default: 0..n-1)."),
    ranks: int | None = typer.Option(None, "--ranks", min=1, max=1_000_000,
                                     help="Ranks of a collective whose output does not list them (nccl-tests pasted "
                                          "without its '# Rank' lines); the output's own count wins."),
    hosts: str | None = typer.Option(None, "--hosts", help="Hosts the run spanned, comma-separated, where the output does "
                                                           "not name them."),
    launch: str | None = typer.Option(None, "--launch", help="How collectives were launched where the output does not say: "
                                                             "eager or graph (nccl-tests -G)."),
    env: list[str] | None = typer.Option(None, "--env", metavar="NAME=VALUE[,...]",
                                         help="Environment the run was launched with that changes what moves the bytes, "
                                              "e.g. HSA_ENABLE_SDMA=0 (ROCm copies on blit kernels, not SDMA engines), "
                                              "NCCL_ALGO=Tree,NCCL_PROTO=LL or NCCL_GRAPH_REGISTER=0 (the twin's NCCL "
                                              "tuner reads them); repeatable; a value may hold commas "
                                              "(NCCL_ALGO=Ring,Tree)."),
    calibration: Path | None = typer.Option(None, "--calibration",
                                            help="A calibrated topology (model calibrate -o): judge against its twin."),
    sizes: str | None = typer.Option(None, "--sizes", help="Buffer size where the output does not print it (nvbandwidth -b: "
                                                           "its version's default, 64MiB to v0.6, 512MiB from v0.7; "
                                                           "p2pBandwidthLatencyTest: 160MB)."),
    size: str | None = size_alias_option(),
    low_below: float = typer.Option(0.8, "--low-below", help="Low below this fraction of the expected value."),
    high_above: float = typer.Option(1.15, "--high-above", help="Suspicious-high above this fraction of the expected value."),
    fail_below: float | None = typer.Option(None, "--fail-below",
                                            help="Exit 3 when any number is below this fraction of its expected value "
                                                 "(health checks), e.g. 0.8; also when nothing was judged, data "
                                                 "was wrong (#wrong, a failed data check) or an output is cut."),
    problems_only: bool = typer.Option(False, "--problems-only",
                                       help="Print only the numbers that are not ok (the summary still counts every one)."),
    explain: str | None = typer.Option(None, "--explain", metavar="N|TEXT",
                                       help="Print how the verdict on one number was reached (facts, reference or twin, band, "
                                            "verdict) instead of the list: N = its position in the list (1-based), TEXT = a piece "
                                            "of its printed line (at most 5 matches are explained)."),
    json_path: str | None = typer.Option(None, "--json", help="Write every number, with its verdict, as a RunRecord to FILE "
                                                              "('-' = stdout): report, model check and calibrate read it."),
) -> None:
    """Judge every number of the given results against the topology they ran on: the route's
    theoretical bottleneck, the twin's prediction (and the calibrated twin's), and a verdict
    (ok / low / suspicious-high) with the reason; a summary at the end. The topology is this
    machine's unless --preset, --from or --synthetic names another (a linkscope record checked alone:
    its own).

    Example: linkscope check nvbandwidth.txt all_reduce.txt --preset dgx-h100 --gpus 0,1
    """
    from ..judge.expect import Judge
    from ..judge.runs import judge_runs
    from ..judge.verdict import Thresholds
    from ..results.peertools.detect import FORMATS, read_all
    from ..topology.io import load as load_topology

    if fmt is not None and fmt not in FORMATS:
        raise UserError(f"unknown --format {fmt!r}", hint=f"valid formats: {', '.join(FORMATS)}")
    thresholds = Thresholds(low_below=low_below, high_above=high_above)
    _fraction(fail_below, "--fail-below")
    gpu_list = parse_gpu_list(gpus)
    size_bytes = one_size_bytes(sizes, size, None, "512MiB")
    check_paths(inputs={"FILE": list(files), "--from": from_file, "--calibration": calibration},
                outputs={"--json": json_path})
    runs, dropped = read_all(files, fmt, size_bytes, _stated(ranks, hosts, launch, env))
    if dropped:
        from .common import stderr_console

        for line in dropped:
            stderr_console().print(f"check: {line}", markup=False, soft_wrap=True)
    embedded = next((r.record.topology for r in runs if r.record is not None and r.record.topology), None)
    topology = TopologyInput(preset, from_file, synthetic, gpu_model).resolve(
        allow_fallback=False, recorded=embedded if len(runs) == 1 else None,
        missing_hint="name the machine the results came from: --preset NAME, --from FILE or --synthetic SPEC")
    calibrated = load_topology(calibration) if calibration is not None else None
    judge = Judge(topology, gpus=gpu_list, calibrated=calibrated, thresholds=thresholds)
    judged = judge_runs(runs, judge)
    if json_path is not None:
        _write_json(judged, judge, json_path)
    if explain is not None and json_path != "-":
        from ..judge.explain import explained

        console = stdout_console()
        for line in explained(judge, judged, explain):
            console.print(line, markup=False, soft_wrap=True)
    elif json_path != "-":
        _render(judged, judge, topology.name, thresholds, problems_only)
    if fail_below is not None:
        _fail_below(judged, fail_below)


def _write_json(judged, judge, json_path: str) -> None:
    """Every number with its verdict as a RunRecord (``judge.runs.to_record``)."""
    from ..judge.runs import to_record
    from .common import stderr_console, write_outputs

    try:
        for path in write_outputs(to_record(judged, judge), json_path=json_path, csv_path=None):
            stderr_console().print(f"wrote {path}", markup=False)
    except OSError as exc:
        raise write_error(json_path, exc) from exc


def _render(judged, judge, topology_name: str, thresholds, problems_only: bool) -> None:
    """Every judged number with its verdict, run by run, then the summary."""
    from ..judge.runs import summarize

    console = stdout_console()
    selected = ",".join(map(str, judge.gpus))
    console.print(f"judged against {topology_name!r} (GPUs {selected}); {thresholds.text()}", markup=False, soft_wrap=True)
    for jr in judged:
        run = jr.run
        version = f" {run.version}" if run.version else ""
        console.print(f"\n{run.source}: {run.tool}{version}, {len(jr.judgements)} numbers", markup=False, soft_wrap=True)
        for note in run.notes:
            console.print(f"  note: {note}", markup=False, soft_wrap=True)
        if run.unread:
            console.print(f"  note: {run.unread_line()}", markup=False, soft_wrap=True)
        if not run.complete:
            console.print(f"  warning: the output is incomplete: {run.incomplete}", style="bold yellow", markup=False,
                          soft_wrap=True)
        if run.record is not None and run.record.provenance.value != "measured":
            console.print(f"  warning: a {run.record.provenance.value.upper()} record: its numbers come from the model, so the "
                          "twin judges itself (ok says nothing about hardware)", style="bold yellow", markup=False, soft_wrap=True)
        differ = judge.mismatch(run.gpus)
        if differ:
            console.print(f"  warning: {differ}", style="bold yellow", markup=False, soft_wrap=True)
        hidden = 0
        for i, j in enumerate(jr.judgements):
            if problems_only and j.verdict.value == "ok":
                hidden += 1
                continue
            style = {"ok": "green", "low": "bold red", "suspicious-high": "bold yellow"}.get(j.verdict.value)
            console.print(f"  {j.verdict.value:<15} {j.line}  [{jr.where(i)}]", style=style, markup=False, soft_wrap=True)
        if hidden:
            console.print(f"  ({hidden} ok not shown: --problems-only)", markup=False)
    summary = summarize(judged)
    console.print(f"\nsummary: {summary.line()}", markup=False, soft_wrap=True)
    for line in summary.tool_lines():
        console.print(f"  {line}", markup=False, soft_wrap=True)


def _fail_below(judged, fraction: float) -> None:
    """``--fail-below``: exit 3 naming each reason (low numbers, nothing judged, wrong data, a cut output)."""
    from ..judge.runs import below, health_failures
    from .common import stderr_console

    failing = below(judged, fraction)
    reasons = health_failures(judged)
    if failing:
        stderr_console().print(f"check: {len(failing)} number{'s' if len(failing) != 1 else ''} below {fraction:.0%} "
                               f"of the expected value (--fail-below)", markup=False)
    for reason in reasons:
        stderr_console().print(f"check: {reason} (--fail-below)", markup=False, soft_wrap=True)
    if failing or reasons:
        raise typer.Exit(EXIT_LOW)


def _stated(ranks: int | None, hosts: str | None, launch: str | None, env: list[str] | str | None = None):
    """What the user said of the run (``--ranks/--hosts/--launch/--env``), or None when nothing."""
    from ..results.peertools.common import RunContext

    if launch is not None and launch not in ("eager", "graph"):
        raise UserError(f"--launch must be eager or graph, got {launch!r}")
    host_list = tuple(h.strip() for h in (hosts or "").split(",") if h.strip())
    pairs: list[tuple[str, str]] = []
    for option in [env] if isinstance(env, str) else (env or []):
        named = False  # a pair of this option came before: an item without '=' goes on its value
        for item in (i.strip() for i in option.split(",") if i.strip()):
            name, sep, value = item.partition("=")
            if not sep and named:
                pairs[-1] = (pairs[-1][0], f"{pairs[-1][1]},{item}")  # NCCL_ALGO=Ring,Tree: the value goes on
                continue
            named = True
            if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.strip()):
                raise UserError(f"--env takes NAME=VALUE pairs separated by commas, got {item!r}")
            pairs.append((name.strip(), value.strip()))
    pairs = list(dict((k, v) for k, v in pairs).items())  # a name given twice: the last holds, as in a shell
    if ranks is None and not host_list and launch is None and not pairs:
        return None
    return RunContext(ranks=ranks, ranks_from="option" if ranks else "", hosts=host_list, launch=launch or "",
                      env=tuple(pairs))


__all__ = ["check", "register"]
