"""Shared CLI helpers: consoles, option parsing (GPU lists), output options, and what the measuring
commands (``bench``, ``bench latency``, ``survey``) share: engine, context, progress bar, partial and final
outputs. The topology of a command is ``topoinput``'s; output-path checks are ``atomic.check_paths``.

Vendor and measuring modules are imported inside the functions, so importing this module stays cheap.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from ..atomic import STDOUT, check_paths
from ..errors import ConfigError, UserError
from . import EXIT_WITH_ERRORS

_GPU_INDEX = re.compile(r"[0-9]+")
#: What --nic accepts (bench, map); model/nics.py parses it.
NIC_HELP = ("NIC(s) for transfers between nodes, as UCX_NET_DEVICES / NCCL_IB_HCA name them: mlx5_0, "
            "mlx5_0,mlx5_1 (spread), ^mlx5_1, nearest, any (UCX's unspecified multi-rail). Default: "
            "UCX_NET_DEVICES or NCCL_IB_HCA from the environment, else nearest.")


class _Console(Console):
    """Rich's console, except that a closed pipe is raised as the BrokenPipeError it is (rich exits 1
    itself, silently), so ``cli.main`` ends every command the same way (see its module text)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(32, "Broken pipe")


#: Width of numeric tables sent to a pipe or a file when COLUMNS does not say: one row a line, for grep.
PIPED_TABLE_WIDTH = 200


def _columns() -> int | None:
    """COLUMNS as the user set it (at least 40), else None."""
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) >= 40 else None


def stdout_console() -> Console:
    """Data goes to stdout; colour follows NO_COLOR / FORCE_COLOR / the terminal. Piped: COLUMNS when
    set, else ``PIPED_TABLE_WIDTH``."""
    return _Console(highlight=False, emoji=False, soft_wrap=False,
                    width=None if os.isatty(1) else (_columns() or PIPED_TABLE_WIDTH))


#: Width of prose tables (``env``, ``bench --list``) sent to a pipe or a file: what a terminal or a
#: pager shows, unless COLUMNS says otherwise or ``--wide`` asks for long lines.
PIPED_TEXT_WIDTH = 100
WIDE_HELP = "Long lines: do not fold the table to the terminal (or to 100 columns when piped)."


def text_console(wide: bool = False) -> Console:
    """A stdout console for tables of words: the terminal's width, COLUMNS, or ``PIPED_TEXT_WIDTH`` when
    piped, so cells fold instead of making 200-column lines; ``wide``: no folding below 400 columns."""
    if wide:
        return Console(highlight=False, emoji=False, soft_wrap=False, width=400)
    if os.isatty(1):
        return Console(highlight=False, emoji=False, soft_wrap=False)
    return Console(highlight=False, emoji=False, soft_wrap=False, width=_columns() or PIPED_TEXT_WIDTH)


def stderr_console() -> Console:
    """Progress, warnings and notes go to stderr; a note stays one line when stderr is not a terminal
    (log files, ``2> err.txt``), so it can be grepped."""
    tty = os.isatty(2)
    return _Console(stderr=True, highlight=False, emoji=False, soft_wrap=not tty, width=None if tty else 200)


def json_option(what: str) -> Any:
    """The ``--json FILE`` option of every command: ``what`` (e.g. "the topology model") as JSON to
    FILE, ``-`` for stdout (``write_json_output`` writes it)."""
    return typer.Option(None, "--json", metavar="FILE", help=f"Write {what} as JSON to FILE ('-' = stdout).")


def write_json_output(path: str | Path | None, text: str | Callable[[], str]) -> bool:
    """``--json PATH`` of a command that prints a table otherwise: ``text`` (JSON) on stdout for
    ``-``, else atomically to the file (``atomic``) and "wrote FILE" on stderr. Returns True when
    stdout got the JSON (the caller then prints nothing else there); ``None`` writes nothing.
    ``text`` may be a function that builds the JSON: it runs only when there is somewhere to write
    it (a 32,768-rank mapping's JSON takes about a second to build)."""
    from ..atomic import write_text_atomic

    if path is None:
        return False
    if callable(text):
        text = text()
    if str(path) == STDOUT:
        typer.echo(text, nl=not text.endswith("\n"))
        return True
    write_text_atomic(path, text if text.endswith("\n") else text + "\n")
    stderr_console().print(f"wrote {path}", markup=False)
    return False


def size_alias_option() -> Any:
    """``--size``: the hidden old spelling of ``--sizes`` in a command that measures at one size."""
    return typer.Option(None, "--size", hidden=True, help="Old spelling of --sizes.")


def one_size_bytes(sizes: str | None, size: str | None, default: str | None, example: str) -> int | None:
    """The one size of ``--sizes`` (or its hidden old spelling ``--size``) in bytes, ``default``
    when neither is given (``None`` stays ``None``). A list or range is refused here, where the
    command measures at one size; so are both spellings at once and a size that is not positive."""
    from ..units import parse_size

    if sizes is not None and size is not None:
        raise ConfigError("--sizes and --size are one option (--size is its old spelling); give it once")
    option = "--size" if size is not None else "--sizes"
    text = sizes if sizes is not None else size if size is not None else default
    if text is None:
        return None
    if "," in text or ":" in text:
        raise ConfigError(f"{option} {text!r}: this command takes one size, not a list or range", hint=f"e.g. {option} {example}")
    size_bytes = parse_size(text)
    if size_bytes <= 0:
        raise UserError(f"{option} must be positive, got {text!r}", hint=f"e.g. {option} {example}")
    return size_bytes


def write_error(path: str | Path, exc: OSError) -> UserError:
    """An OSError while writing an output, as a one-line UserError."""
    return UserError(f"cannot write {path}: {exc.strerror or exc}")


def parse_gpu_list(text: str | None, option: str = "--gpus") -> list[int] | None:
    """A comma-separated list of GPU indices (non-negative integers), e.g. ``0,1,3``; ``None`` (option
    not given) stays ``None``. An empty list, an item that is not an index, and an index listed twice
    are UserErrors naming ``option`` and the bad value. Whether the GPUs exist is the caller's check
    (against its topology or NVML); forms such as ``all`` are the caller's too."""
    if text is None:
        return None
    hint = f"use comma-separated non-negative integers, e.g. {option} 0,1,3"
    items = [part.strip() for part in text.split(",") if part.strip()]
    if not items:
        raise UserError(f"{option} {text!r}: empty GPU list", hint=hint)
    values: list[int] = []
    for item in items:
        if not _GPU_INDEX.fullmatch(item):
            raise UserError(f"{option} {text!r}: {item!r} is not a GPU index", hint=hint)
        if int(item) in values:
            raise UserError(f"{option} {text!r}: GPU {int(item)} is listed twice")
        values.append(int(item))
    return values


def parse_gpu_tuple(text: str | None, option: str = "--gpus") -> tuple[int, ...] | None:
    """``parse_gpu_list`` as a tuple (what the measuring options hold)."""
    parsed = parse_gpu_list(text, option)
    return tuple(parsed) if parsed is not None else None


# ---- measuring commands (bench, bench latency, survey) ------------------------------
def with_nic_option(topology, nic: str | None):
    """``(topology, choice)``: the topology whose model, routes and mapping use ``--nic`` or, without
    it, UCX_NET_DEVICES / NCCL_IB_HCA from the environment (what the libraries will read), else
    nearest (choice None). Names are checked against the topology's NICs; a choice from the
    environment on a topology without any NIC is left aside with a note."""
    from ..model.nics import choice_in_environment, with_nic_choice
    from ..topology.model import DeviceKind

    if nic is not None:
        return with_nic_choice(topology, nic), nic
    found = choice_in_environment(os.environ)
    if found is None:
        return topology, None
    value, var = found
    if not topology.of_kind(DeviceKind.NIC):
        stderr_console().print(f"note: {var}={value} left aside: {topology.name!r} has no NIC", style="yellow", markup=False)
        return topology, None
    try:
        return with_nic_choice(topology, value), value
    except UserError as exc:
        raise type(exc)(f"{var}={value!r} from the environment: {exc}", hint=exc.hint) from None


def check_backend(backend: str) -> str:
    """An unknown ``--backend`` is refused before anything is discovered or measured."""
    from ..engines.registry import BACKENDS

    if backend not in BACKENDS:
        raise UserError(f"unknown backend {backend!r}", hint=f"valid backends: {', '.join(BACKENDS)}")
    return backend


def check_outputs(*, json_path: str | None, csv_path: str | None, osu: bool = False,
                  inputs: dict[str, Any] | None = None) -> None:
    """Output options that cannot work together, files that cannot be written, and outputs that
    would overwrite an input or each other are refused before anything is measured."""
    to_stdout = [flag for flag, value in (("--json", json_path), ("--csv", csv_path)) if value == "-"]
    if len(to_stdout) > 1:
        raise ConfigError("--json - and --csv - would both write to stdout", hint="send one of them to a file")
    if to_stdout and osu:
        raise ConfigError(f"{to_stdout[0]} - and --osu would both write to stdout", hint=f"send {to_stdout[0]} to a file")
    check_paths(inputs=inputs, outputs={"--json": json_path, "--csv": csv_path})


def make_engine(backend: str, topology):
    from ..engines import registry

    err = stderr_console()
    return registry.create_engine(backend, topology,
                                  on_note=lambda text: err.print(f"note: {text}", style="bold yellow", markup=False))


def run_context(topology, engine) -> dict[str, Any]:
    from ..results.context import collect_context

    caps = engine.capabilities()
    return collect_context(os.environ, gpu_names=[g.name for g in topology.gpus], engine=caps.name,
                           topology_source=topology.source or topology.name,
                           probe_vendor=caps.provenance != "simulated")


@contextmanager
def progress_bar(enabled: bool | None = None, unit: str = "transfers", console: Console | None = None
                 ) -> Iterator[Callable[[int, int, str], None]]:
    """A progress callback drawing a Rich bar on stderr (silent when stderr is not a terminal), counted
    in the unit of the work: ``3 of 20 steps`` of a survey, ``5 of 12 transfers`` of a bench (one pair
    or one concurrent group at one size), then the time spent and the time left."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    console = console or stderr_console()
    show = console.is_terminal if enabled is None else enabled
    from rich.text import Text

    class Count(TextColumn):
        def render(self, task):
            return Text("" if task.total is None else f"{task.completed:.0f} of {task.total:.0f} {unit}")

    progress = Progress(TextColumn("{task.description}"), BarColumn(), Count(""), TimeElapsedColumn(),
                        TextColumn("left"), TimeRemainingColumn(), console=console, transient=True, disable=not show)
    task = progress.add_task("measuring", total=None)

    def update(done: int, total: int, label: str) -> None:
        progress.update(task, completed=done, total=total, description=label[:60])

    with progress:
        yield update


def write_outputs(record, *, json_path: str | None, csv_path: str | None) -> list[str]:
    """The record as JSON and/or CSV (``-``: stdout), each file written atomically; returns the files
    written. A partial record (``complete`` False) goes to each file's sidecar, ``NAME.partial.json``
    (``cli.keep``): only a complete record replaces the file the user named."""
    from ..atomic import write_text_atomic
    from ..report.textformats import to_csv
    from ..results.io import save, to_dict
    from .keep import write_record_file

    def guarded(write: Callable[[str], None]) -> Callable[[str], None]:
        def run(path: str) -> None:
            try:
                write(path)
            except OSError as exc:
                raise write_error(path, exc) from exc
        return run

    written: list[str] = []
    if json_path == "-":
        import json

        typer.echo(json.dumps(to_dict(record), indent=2, allow_nan=False))
    elif json_path:
        written.append(write_record_file(json_path, record.complete, guarded(lambda p: save(record, p))))
    if csv_path == "-":
        typer.echo(to_csv(record), nl=False)
    elif csv_path:
        written.append(write_record_file(csv_path, record.complete, guarded(lambda p: write_text_atomic(p, to_csv(record)))))
    return written


def partial_writer(json_path: str | Path | None, csv_path: str | Path | None = None, stdout: Any = None):
    """The sweep's Checkpoint for ``--json`` / ``--csv`` files (stdout gets only the final record):
    each partial record is written atomically to the files' sidecars (``NAME.partial.json``) after
    every finished step; a checkpoint that cannot be written is a note, never the end of the run.
    ``-`` writes the complete record to ``stdout`` (default: ``sys.stdout`` at that time)."""
    import sys

    from ..measure.sweep import Checkpoint

    paths = {"json_path": str(json_path) if json_path and str(json_path) != STDOUT else None,
             "csv_path": str(csv_path) if csv_path and str(csv_path) != STDOUT else None}
    streams = {"json_path": STDOUT if json_path is not None and str(json_path) == STDOUT else None,
               "csv_path": STDOUT if csv_path is not None and str(csv_path) == STDOUT else None}
    warned: list[str] = []

    def write(record) -> list[str]:
        if record.complete and any(streams.values()):
            import contextlib

            with contextlib.redirect_stdout(stdout or sys.stdout):
                write_outputs(record, **streams)
        if not any(paths.values()):
            return []
        try:
            return write_outputs(record, **paths)
        except UserError as exc:
            if record.complete:
                raise
            if not warned:  # once: the run goes on, the final write may still work
                warned.append(exc.one_line())
                stderr_console().print(f"note: checkpoint not written: {exc.one_line()}", style="yellow", markup=False)
            return []

    return Checkpoint(write, targets=[p for p in paths.values() if p])


def interrupted(checkpoint) -> typer.Exit:
    """Ctrl-C (or SIGTERM/SIGHUP) of a single-process sweep: one line naming the signal and only the
    partial files that exist; exit 128 + the signal's number (130 Ctrl-C, 143 SIGTERM)."""
    from .signals import interrupt_name, interrupt_status

    name = interrupt_name()
    by = "" if name == "Ctrl-C" else f" by {name}"
    stderr_console().print(f"linkscope: interrupted{by}{checkpoint.where()}", style="bold red", markup=False)
    return typer.Exit(interrupt_status())


def measure_with(engine, work: Callable[[Callable[[int, int, str], None], Any], Any], *, json_path: str | Path | None,
                 csv_path: str | Path | None = None, unit: str = "transfers", close: Callable[[], None] | None = None) -> Any:
    """The frame of every single-process measuring command: ``work(progress, on_partial)`` runs under a
    progress bar with the partial files written after each step (``partial_writer``); Ctrl-C ends it
    with the partial files named (``interrupted``); the engine (and ``close``) are closed whatever happens."""
    try:
        on_partial = partial_writer(json_path, csv_path)
        try:
            with progress_bar(unit=unit) as progress:
                return work(progress, on_partial)
        except KeyboardInterrupt:
            raise interrupted(on_partial) from None
    finally:
        engine.close()
        if close is not None:
            close()


def measure_options(*, reps: int | None, warmup: int | None, time_budget: str | None, target_ci: float | None,
                    no_verify: bool, chunk: str | None, latency_reps: int | None = None, base=None):
    from dataclasses import replace

    from ..measure.options import MeasureOptions
    from ..units import parse_duration_s, parse_size

    opts = base or MeasureOptions()
    changes: dict[str, Any] = {}
    if reps is not None:
        changes.update(min_reps=reps, max_reps=reps)
    if warmup is not None:
        changes["warmup"] = warmup
    if time_budget is not None:
        changes["time_budget_s"] = parse_duration_s(time_budget)
    if target_ci is not None:
        if not 0 < target_ci < 1:
            raise UserError(f"--target-ci must be a fraction between 0 and 1, got {target_ci}", hint="e.g. 0.005 for 0.5%")
        changes["target_ci_rel"] = target_ci
    if no_verify:
        changes["verify"] = False
    if chunk is not None:
        size = parse_size(chunk)
        if size <= 0:
            raise UserError(f"--chunk must be positive, got {chunk!r}")
        changes["chunk_bytes"] = size
    if latency_reps is not None:
        changes["latency_reps"] = latency_reps
    return replace(opts, **changes)


def finish(record, *, json_path: str | None, csv_path: str | None, osu: bool, render: Callable[[Any], None],
           before_exit: Callable[[Any], None] | None = None) -> None:
    """Write files, print (tables, OSU text, or nothing when JSON/CSV go to stdout), exit 3 on errors.
    ``before_exit`` runs after the files are written (survey: its report), before the exit code.
    Each file written is named on stderr ("wrote FILE")."""
    for path in write_outputs(record, json_path=json_path, csv_path=csv_path):
        stderr_console().print(f"wrote {path}", markup=False)
    if before_exit is not None:
        before_exit(record)
    if osu:
        from ..report.textformats import to_osu

        typer.echo(to_osu(record), nl=False)
    elif json_path != "-" and csv_path != "-":
        render(record)
    if record.measurements and all(m.status.value == "waived" for m in record.measurements):
        n = len(record.measurements)
        which = "the only entry was" if n == 1 else f"all {n} entries were"
        stderr_console().print(f"linkscope: error: nothing was measured: {which} waived (reasons above, or in the JSON "
                               "'reason' fields)", style="bold red", markup=False)
        raise typer.Exit(EXIT_WITH_ERRORS)  # a run that measured nothing did not do its job (README: exit 3)
    if record.errors:
        stderr_console().print(f"linkscope: finished with {len(record.errors)} error entr{'y' if len(record.errors) == 1 else 'ies'}",
                               style="bold red")
        raise typer.Exit(EXIT_WITH_ERRORS)
