"""``linkscope bench`` (bandwidth) and ``linkscope bench latency``.

``bench_app`` is the ``bench`` group: plain ``linkscope bench [options]`` measures bandwidth (the
group's callback runs when no subcommand is given); other modules add subcommands to it
(``bench_app.command("nccl")(...)``) at import, before the CLI is built.

The helpers it shares with ``cmd_survey`` (topology, engine, context, progress, outputs) live in
``common``.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import typer

from ..errors import UserError
from .common import (
    NIC_HELP,
    WIDE_HELP,
    check_backend,
    check_outputs,
    finish,
    make_engine,
    measure_options,
    measure_with,
    one_size_bytes,
    parse_gpu_list,
    parse_gpu_tuple,
    run_context,
    size_alias_option,
    stderr_console,
    stdout_console,
    text_console,
    with_nic_option,
)
from .topoinput import TopologyInput, fallback_note_for, from_option, gpu_model_option, preset_option, synthetic_option

bench_app = typer.Typer(
    invoke_without_command=True,
    no_args_is_help=False,
)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")


def parse_list(text: str | None, option: str = "list") -> list[str] | None:
    if text is None:
        return None
    items = [part.strip() for part in text.split(",") if part.strip()]
    if not items:
        raise UserError(f"{option} {text!r}: empty list", hint="give comma-separated names")
    return items


def _render(record) -> None:
    from ..report.console import render_record

    render_record(stdout_console(), record)


# ---- bench -----------------------------------------------------------------------------------
def _default_methods(pattern_key: str) -> str:
    """The methods of a plain ``bench --pattern KEY`` (from the method table)."""
    from ..patterns.methods import D2H, DEFAULT_METHOD, H2D, LOCAL

    return {"host": f"{H2D.key},{D2H.key}", "all-to-host": D2H.key, "host-to-all": H2D.key,
            "local": LOCAL.key}.get(pattern_key, DEFAULT_METHOD.key)


def check_methods(methods: Sequence[str], engine) -> tuple[str, ...]:
    from ..patterns.methods import method_keys

    valid = list(method_keys()) + [m.key for m in engine.capabilities().methods if m.key not in method_keys()]
    for m in methods:
        if m not in valid:
            raise UserError(f"unknown method {m!r}", hint=f"valid methods: {', '.join(valid)} (see: linkscope bench --list)")
        if list(methods).count(m) > 1:
            raise UserError(f"method {m!r} is listed twice in --method")
    return tuple(methods)


def print_list(backend: str, preset, from_file, synthetic, gpu_model: str | None = None, wide: bool = False) -> None:
    """Methods (generated from the method table, with this backend's vendor meaning) and patterns."""
    from rich.table import Table

    from ..patterns.methods import LATENCY_KINDS_TABLE, METHODS, UNIT_TEXT
    from ..patterns.registry import patterns

    offered: dict[str, bool] | None = None
    why = ""
    engine_name = backend
    vendor = None
    try:
        topology = TopologyInput(preset, from_file, synthetic, gpu_model).resolve(allow_fallback=True, fallback_note=None)
        engine = make_engine(backend, topology)
        caps = engine.capabilities()
        engine_name = caps.name
        vendor = caps.vendor or next(iter({(g.vendor or "").lower() for g in topology.gpus}), None)
        offered = {m.key: True for m in caps.methods}
        engine.close()
    except UserError as exc:
        why = exc.one_line()
    console = text_console(wide)
    table = Table(title=f"methods (--method) on the {engine_name} backend", title_justify="left")
    for col in ("method", "available", "moved by", "description", f"on {vendor or 'each vendor'}"):
        table.add_column(col)
    for m in METHODS:
        available = "unknown" if offered is None else ("yes" if offered.get(m.key) else "no")
        if vendor and vendor in m.meaning:
            meaning = m.meaning[vendor]
        elif vendor:
            meaning = f"not offered on {vendor}"
        else:
            meaning = "; ".join(f"{v}: {t}" for v, t in m.meaning.items())
        table.add_row(m.key, available, UNIT_TEXT[m.unit], m.description, meaning)
    console.print(table)
    if why:
        console.print(f"backend {backend!r} not usable here: {why}", markup=False)
    table = Table(title="latency kinds (bench latency --kind)", title_justify="left")
    table.add_column("kind")
    table.add_column("description")
    for k in LATENCY_KINDS_TABLE:
        table.add_row(k.key, k.description)
    console.print(table)
    table = Table(title="patterns (--pattern), or a pattern FILE (JSON/CSV groups of src,dst[,size])", title_justify="left")
    table.add_column("pattern")
    table.add_column("description")
    for p in patterns():
        table.add_row(p.key, p.description)
    console.print(table)


_BACKEND_HELP = "auto (cuda when usable on this machine, else sim), cuda, rocm or sim."


@bench_app.callback()
def bench(
    ctx: typer.Context,
    backend: str = typer.Option("auto", "--backend", help=_BACKEND_HELP),
    preset: str | None = preset_option("Measure (sim) a shipped preset topology."),
    from_file: Path | None = from_option(),
    synthetic: str | None = synthetic_option("A synthetic topology, e.g. nvswitch:8, pcie:2x4."),
    gpu_model: str | None = gpu_model_option(),
    method: str | None = typer.Option(None, "--method", help="Comma-separated methods (default ce; see --list)."),
    pattern: str = typer.Option("matrix", "--pattern",
                                help="matrix, pairs, ring, all-to-one, one-to-all, all-to-all, all-to-host, host-to-all, host, local, or a"
                                     " pattern FILE."),
    direction: str = typer.Option("uni", "--direction", help="uni (one way) or bi (both directions at once)."),
    sizes: str = typer.Option("256MiB", "--sizes", help="Sizes: a list 8,4KiB,16MiB,1GiB or a powers-of-two range 8:1GiB."),
    gpus: str | None = typer.Option(None, "--gpus", help="GPU indices to use, e.g. 0,1,2 (default all)."),
    json_path: str | None = typer.Option(None, "--json", help="Write the RunRecord JSON to FILE ('-' = stdout)."),
    csv_path: str | None = typer.Option(None, "--csv", help="Write one CSV row per measurement to FILE ('-' = stdout)."),
    osu: bool = typer.Option(False, "--osu", help="Print OSU-style text (# Size  Bandwidth (MB/s)) instead of tables."),
    list_: bool = typer.Option(False, "--list", help="List methods (and whether this backend has them) and patterns."),
    wide: bool = typer.Option(False, "--wide", help="With --list: " + WIDE_HELP),
    no_verify: bool = typer.Option(False, "--no-verify", help="Skip the data check (on by default)."),
    reps: int | None = typer.Option(None, "--reps", min=1, help="Exactly this many repetitions per plan and size."),
    warmup: int | None = typer.Option(None, "--warmup", min=0, help="Untimed iterations before timing (default 3)."),
    time_budget: str | None = typer.Option(None, "--time-budget",
                                           help="Stop adding repetitions after this long per plan and size (default 1s)."),
    target_ci: float | None = typer.Option(None, "--target-ci",
                                           help="Stop once the 95% CI half-width / mean is below this (default 0.005)."),
    chunk: str | None = typer.Option(None, "--chunk", help="Chunk size of staged-pinned copies (default 8MiB)."),
    nic: str | None = typer.Option(None, "--nic", help=NIC_HELP),
) -> None:
    """Measure link bandwidth between GPUs (and host), per pair or in concurrent patterns;
    `linkscope bench latency` measures latency.

    Examples: linkscope bench --method ce,sm-push --direction bi;  linkscope bench --pattern all-to-one --sizes 4K:1G --json run.json;
    linkscope bench --backend sim --preset hgx-h200-4 --osu
    """
    if ctx.invoked_subcommand is not None:
        return
    if list_:
        check_backend(backend)
        print_list(backend, preset, from_file, synthetic, gpu_model, wide)
        return
    from ..measure.runner import BenchSpec, run_bench
    from ..model.budget import check_pattern_budget
    from ..patterns.base import check_direction, select_gpus
    from ..patterns.registry import resolve_pattern
    from ..units import parse_sizes

    check_backend(backend)
    check_direction(direction)
    check_outputs(json_path=json_path, csv_path=csv_path, osu=osu,
                  inputs={"--from": from_file, "--pattern": pattern if Path(pattern).is_file() else None})
    pat = resolve_pattern(pattern)
    size_list = parse_sizes(sizes)
    gpu_sel = parse_gpu_tuple(gpus)
    options = measure_options(reps=reps, warmup=warmup, time_budget=time_budget, target_ci=target_ci,
                              no_verify=no_verify, chunk=chunk)
    topology = TopologyInput(preset, from_file, synthetic, gpu_model).resolve(allow_fallback=backend in ("auto", "sim"),
                                                                                 fallback_note=fallback_note_for(backend))
    topology, nic_choice = with_nic_option(topology, nic)
    select_gpus(topology, gpu_sel)
    engine = make_engine(backend, topology)

    def work(progress, on_partial):
        methods = check_methods(parse_list(method if method is not None else _default_methods(pat.key), "--method")
                                or [_default_methods("")], engine)
        # a memory estimate before any plan is made
        check_pattern_budget(pat, topology, select_gpus(topology, gpu_sel), size_list, methods, direction, "bench")
        return methods, run_bench(engine, topology, BenchSpec(pat, methods, direction, gpu_sel), size_list, options,
                                  progress=progress, on_partial=on_partial, context=run_context(topology, engine),
                                  run_options={"pattern": pattern, "command": "bench", **({"nic": nic_choice} if nic_choice else {})})

    methods, record = measure_with(engine, work, json_path=json_path, csv_path=csv_path)
    finish(record, json_path=json_path, csv_path=csv_path, osu=osu, render=_render)
    if not osu and json_path != "-" and csv_path != "-" and len(methods) > 1:
        _compare_methods(record, topology)


def _compare_methods(record, topology) -> None:
    from ..results.findings import method_comparison_lines

    console = stdout_console()
    for line in method_comparison_lines(record, topology):
        console.print(line, markup=False, soft_wrap=True)  # one line each, whatever the width


def _one_gpu_latency_kinds(kinds: list[str], explicit: bool, selected: Sequence[int], engine) -> list[str]:
    """On one GPU there is no pair: measure between the host and the GPU instead, and say so."""
    from ..patterns.methods import LATENCY_COPY, LATENCY_HOST_READ, PAIR_LATENCY_KINDS

    pair_only = [k for k in kinds if k in PAIR_LATENCY_KINDS]
    if explicit and pair_only:
        raise UserError(f"latency kind {pair_only[0]!r} needs two GPUs; {len(selected)} GPU selected",
                        hint="on one GPU use --kind host-read (GPU reading host memory) or --kind copy (small host<->GPU copies)")
    if not explicit:
        host_read = LATENCY_HOST_READ.key
        kinds = [host_read] if host_read in engine.capabilities().latency_kinds else [LATENCY_COPY.key]
        stderr_console().print(f"note: one GPU, no GPU pair: measuring host <-> GPU latency ({kinds[0]})", markup=False)
    return kinds


@bench_app.command("latency")
def latency(
    backend: str = typer.Option("auto", "--backend", help=_BACKEND_HELP),
    preset: str | None = preset_option("Measure (sim) a shipped preset topology."),
    from_file: Path | None = from_option(),
    synthetic: str | None = synthetic_option("A synthetic topology, e.g. nvswitch:8."),
    gpu_model: str | None = gpu_model_option(),
    kind: str | None = typer.Option(None, "--kind",
                                    help="remote-read, flag-pingpong, copy, host-read (comma-separated); default remote-read,flag-pingpong"
                                         " between GPUs, and on one GPU the host<->GPU latency (host-read where the engine has it, else "
                                         "copy)."),
    method: str | None = typer.Option(None, "--method", help="Copy method of --kind copy (default ce)."),
    sizes: str | None = typer.Option(None, "--sizes", help="Bytes per copy for --kind copy (one size; default 8)."),
    size: str | None = size_alias_option(),
    gpus: str | None = typer.Option(None, "--gpus", help="GPU indices to use, e.g. 0,1 (default all)."),
    json_path: str | None = typer.Option(None, "--json", help="Write the RunRecord JSON to FILE ('-' = stdout)."),
    csv_path: str | None = typer.Option(None, "--csv", help="Write one CSV row per measurement to FILE ('-' = stdout)."),
    osu: bool = typer.Option(False, "--osu", help="Print OSU-style text (# Size  Latency (us)) instead of tables."),
    reps: int | None = typer.Option(None, "--reps", min=1, help="Latency samples per pair (default 20)."),
    warmup: int | None = typer.Option(None, "--warmup", min=0, help="Untimed iterations first (default 3)."),
) -> None:
    """Latency between GPUs in microseconds: device remote read (pointer chase), one-way flag
    ping-pong, or host-issued small copies per method; every ordered pair of the selected GPUs.

    Example: linkscope bench latency --kind remote-read --gpus 0,1,2,3 --json lat.json
    """
    from ..measure.runner import latency_pairs, run_latency
    from ..patterns.base import select_gpus
    from ..patterns.methods import (
        DEFAULT_METHOD,
        LATENCY_COPY,
        PAIR_LATENCY_KINDS,
        check_latency_kinds,
    )

    method = DEFAULT_METHOD.key if method is None else method
    check_backend(backend)
    check_outputs(json_path=json_path, csv_path=csv_path, osu=osu, inputs={"--from": from_file})
    kinds = check_latency_kinds(parse_list(kind, "--kind") or [], kind) if kind is not None else list(PAIR_LATENCY_KINDS)
    size_bytes = one_size_bytes(sizes, size, "8", "4KiB")
    assert size_bytes is not None  # a default is given
    options = measure_options(reps=None, warmup=warmup, time_budget=None, target_ci=None, no_verify=False,
                              chunk=None, latency_reps=reps)
    topology = TopologyInput(preset, from_file, synthetic, gpu_model).resolve(allow_fallback=backend in ("auto", "sim"),
                                                                                 fallback_note=fallback_note_for(backend))
    selected = select_gpus(topology, parse_gpu_list(gpus))
    engine = make_engine(backend, topology)

    def work(progress, on_partial):
        chosen = _one_gpu_latency_kinds(kinds, kind is not None, selected, engine) if len(selected) < 2 else kinds
        if LATENCY_COPY.key in chosen:
            check_methods([method], engine)
        return run_latency(engine, chosen, {k: latency_pairs(k, selected) for k in chosen}, options, topology=topology,
                           method=method, size_bytes=size_bytes, progress=progress, on_partial=on_partial,
                           context=run_context(topology, engine), run_options={"command": "bench latency"})

    record = measure_with(engine, work, json_path=json_path, csv_path=csv_path)
    finish(record, json_path=json_path, csv_path=csv_path, osu=osu, render=_render)

