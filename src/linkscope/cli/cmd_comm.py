"""``linkscope bench mpi|nccl|stencil|p2p``: multi-process benchmarks (run under mpirun/srun).

The ``bench`` group belongs to cmd_bench.py; ``extend(app)`` (called after every module's
``register``) adds these subcommands to it. This module parses and checks options and calls
``linkscope.comm.bench``, which holds the logic.

Output: data on stdout from rank 0 only; every rank of a bad run exits 1 with one message on
rank 0; data-check failures exit 3.

Interrupts: rank 0 rewrites ``--json`` (atomically, ``complete: false``) after every finished size
or pair, so even a SIGKILL loses only the size in progress. On Ctrl-C / SIGTERM the ranks agree to
stop at the next size boundary (``linkscope.measure.sweep``), rank 0 writes what was finished and
every rank exits 130. ``bench mpi`` and ``bench nccl`` stream their table rows as sizes finish
(as OSU and nccl-tests do); ``bench stencil`` and ``bench p2p`` print the partial table on stop.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from ..atomic import check_paths
from ..collectives import op_help
from ..errors import UserError
from ..measure.options import MAX_REPS, MAX_RUNS
from .common import STDOUT, parse_gpu_tuple, partial_writer
from .topoinput import FROM_HELP, TopologyInput, from_option, gpu_model_option, preset_option, synthetic_option

_BACKEND_HELP = ("auto | cuda | rocm | sim. auto: NCCL through CuPy when a GPU is usable and no other machine's "
                 "topology is named, else simulated; "
                 "rocm: RCCL through CuPy's ROCm build; sim: NumPy data, times predicted by the fabric model "
                 "of --preset/--from/--synthetic (labelled SIMULATED).")


def _progress(text: str, echo: bool = True) -> None:
    """Progress line on stderr (rank 0 calls it; tests patch it to interrupt a sweep); ``echo`` False
    where the command already prints that line's result on stdout (``bench nccl``'s rows)."""
    from ..comm.bench import progress_line

    if echo:
        progress_line(text)


def _run(body: Callable[[Any], int], json_path: Path | None, inputs: dict[str, Any] | None = None,
         echo_progress: bool = True) -> None:
    """Run a command body on every rank: paths checked first (``check_paths``), user errors
    reported by rank 0 only, exit codes kept."""
    import contextlib
    import sys

    from ..comm.bench import Session
    from ..rankenv import world_rank_from_env

    environ = dict(os.environ)
    check_paths(inputs=inputs, outputs={"--json": json_path})
    to_stdout = json_path is not None and str(json_path) == STDOUT
    session = Session(environ, partial_writer(json_path, stdout=sys.stdout),
                      (lambda text: _progress(text)) if echo_progress else (lambda text: _progress(text, echo=False)))
    try:
        # --json -: stdout holds the record alone; the tables (OSU, nccl-tests text) go to stderr
        with contextlib.redirect_stdout(sys.stderr) if to_stdout else contextlib.nullcontext():
            code = body(session)
    except UserError:
        if (world_rank_from_env(environ) or 0) != 0:
            raise typer.Exit(1) from None
        raise
    except SystemExit as exc:  # run_collectively's quiet exit on ranks other than 0
        raise typer.Exit(int(exc.code or 0)) from None
    if code:
        raise typer.Exit(code)


def _sizes(text: str) -> tuple[int, ...]:
    from ..units import parse_sizes

    return tuple(parse_sizes(text))


def _cuda_graph_option(what: str, tail: str) -> Any:
    """``--cuda-graph N`` of bench nccl and bench stencil: N of ``what`` captured per CUDA graph (default 20)."""
    return typer.Option(20, "--cuda-graph", min=0, max=MAX_REPS,
                        help=f"Capture this many {what} per CUDA graph at every size, so the times are NCCL's, not"
                             f" Python launches{tail}")


_PRESET = preset_option("Topology preset (simulated backend; stencil --mapping auto).")
_FROM = from_option(FROM_HELP + " (simulated backend; --mapping auto)")
_SYNTHETIC = synthetic_option("Synthetic topology, e.g. nvswitch:4 (simulated backend; --mapping auto).")
_GPU_MODEL = gpu_model_option()


def register_bench_subcommands(bench_app: typer.Typer) -> None:
    """Add ``mpi``, ``nccl``, ``stencil`` and ``p2p`` to the ``bench`` group."""

    @bench_app.command("mpi")
    def bench_mpi(
        test: str = typer.Option("latency", "--test",
                                 help="latency | bw | bibw | allreduce (osu_latency, osu_bw, osu_bibw, osu_allreduce)."),
        buffers: str = typer.Option("HH", "--buffers", help="HH | DD | DH | HD (H, D mean HH, DD); first letter: rank 0's side."),
        sizes: str = typer.Option("1:4MiB", "--sizes", help="Message sizes: list or power-of-two range, 1 B … 1 GiB."),
        iterations: int | None = typer.Option(None, "--iterations", min=1, max=MAX_REPS,
                                              help="Timed iterations per size (default: OSU's, scaled by size)."),
        warmup: int | None = typer.Option(None, "--warmup", min=0, max=MAX_REPS, help="Untimed iterations per size (default: OSU's skip)."),
        window: int = typer.Option(64, "--window", min=1, max=MAX_REPS, help="Back-to-back messages per bw iteration (OSU: 64)."),
        runs: int = typer.Option(1, "--runs", min=1, max=MAX_RUNS, help="Timed runs per size (median reported)."),
        stage_through_host: bool = typer.Option(False, "--stage-through-host",
                                                help="Copy device buffers through host memory around each send/recv "
                                                     "(method mpi.*+staged)."),
        gpu_aware: str = typer.Option("auto", "--gpu-aware", help="auto | yes | no: override GPU-awareness detection."),
        fake_device: bool = typer.Option(False, "--fake-device", hidden=True,
                                         help="Tests: D buffers are host memory behind __cuda_array_interface__."),
        json_path: Path | None = typer.Option(None, "--json", help="Write the RunRecord here ('-' = stdout)."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the received-data check."),
    ) -> None:
        """MPI point-to-point latency / bandwidth and allreduce latency with OSU semantics (run under mpirun/srun).

        Example: mpirun -n 2 linkscope bench mpi --test bw --buffers HH --sizes 1:4MiB --json bw.json
        """
        from ..comm import bench
        from ..comm.gpu_aware import parse_gpu_aware_choice
        from ..comm.mpi_p2p import BUFFER_CHOICES, TESTS

        buf = {"H": "HH", "D": "DD"}.get(buffers.upper(), buffers.upper())
        if test not in TESTS:
            raise UserError(f"--test {test!r} is not valid", hint=f"valid choices: {', '.join(TESTS)}")
        if buf not in BUFFER_CHOICES:
            raise UserError(f"--buffers {buffers!r} is not valid", hint="valid choices: H, D, HH, DD, DH, HD")
        opts = bench.MpiOptions(test, buf, _sizes(sizes), iterations, warmup, window, runs, stage_through_host,
                                parse_gpu_aware_choice(gpu_aware), fake_device, not no_verify)
        _run(lambda session: bench.bench_mpi(session, opts), json_path)

    @bench_app.command("nccl")
    def bench_nccl(
        op: str = typer.Option("allreduce", "--op",
                               help=f"{op_help()} (gather/scatter: grouped send/recv to/from rank 0, as nccl-tests)."),
        sizes: str = typer.Option("8:128MiB", "--sizes", help="Sizes (nccl-tests' S): list or power-of-two range."),
        iters: int = typer.Option(20, "--iters", "-n", min=1, max=MAX_REPS, help="Timed operations per size (nccl-tests -n)."),
        warmup: int = typer.Option(5, "--warmup", "-w", min=0, max=MAX_REPS, help="Untimed operations per size (nccl-tests -w)."),
        runs: int = typer.Option(1, "--runs", min=1, max=MAX_RUNS, help="Timed runs per size (median reported)."),
        comm_sets: int = typer.Option(1, "--comm-sets", min=1, max=MAX_RUNS,
                                      help="Sets of NCCL communicators timed one after another, each made anew (the "
                                           "median set reported; a small eager op's time drifts over seconds, so "
                                           "each set samples another window)."),
        gpus: str | None = typer.Option(None, "--gpus", help="Single process: GPUs to drive (default all)."),
        cuda_graph: int = _cuda_graph_option("operations", " (nccl-tests -G N: compare with it); 0: launch each operation"
                                                           " from Python (compare with nccl-tests without -G)."),
        backend: str = typer.Option("auto", "--backend", help=_BACKEND_HELP),
        preset: str | None = _PRESET,
        from_file: Path | None = _FROM,
        synthetic: str | None = _SYNTHETIC,
        gpu_model: str | None = _GPU_MODEL,
        json_path: Path | None = typer.Option(None, "--json", help="Write the RunRecord here ('-' = stdout)."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the data check (#wrong shows N/A)."),
        inplace: bool = typer.Option(False, "--inplace",
                                     help="Also time every size in place and print both column groups (out-of-place | in-place), as "
                                          "nccl-tests does."),
    ) -> None:
        """NCCL collectives, nccl-tests style: time, algbw, busbw, #wrong.

        One process drives all local GPUs (like nccl-tests -g), or under mpirun one GPU per rank.
        Out-of-place by default; --inplace adds nccl-tests' in-place columns. With --backend sim
        the times are predicted from the topology's links (docs/comm.md) and labelled SIMULATED.

        Example: linkscope bench nccl --op allreduce --sizes 8:1GiB --iters 20 --warmup 5 --inplace
        Example: linkscope bench nccl --backend sim --preset hgx-h200-4 --gpus 0,1 --sizes 1GiB
        """
        from ..collectives import OPS, collective
        from ..comm import bench

        try:
            op = collective(op).name
        except UserError:
            raise UserError(f"--op {op!r} is not valid", hint=f"valid choices: {', '.join(OPS)}") from None
        opts = bench.NcclOptions(op, _sizes(sizes), iters, warmup, runs, parse_gpu_tuple(gpus), cuda_graph, backend,
                                 not no_verify, inplace, comm_sets)
        choice = TopologyInput(preset, from_file, synthetic, gpu_model)
        topology = choice.lazy(allow_fallback=True)
        # each size's row is on stdout as it finishes: no second copy on stderr
        _run(lambda session: bench.bench_nccl(session, opts, topology, choice.given), json_path, echo_progress=False)

    @bench_app.command("stencil")
    def bench_stencil(
        dims: int = typer.Option(2, "--dims", help="2 | 3: process-grid dimensions."),
        periodic: bool = typer.Option(False, "--periodic", help="Wrap around (torus)."),
        weighted: bool = typer.Option(False, "--weighted", help="Axis k halos are size / 2**k (anisotropic)."),
        mapping: str = typer.Option("default", "--mapping", help="default | auto | FILE (linkscope map output)."),
        grid: str | None = typer.Option(None, "--grid", help="Process grid AxB[xC] (default: balanced over the GPUs/ranks)."),
        sizes: str = typer.Option("1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB", "--sizes", help="Halo message sizes."),
        iters: int = typer.Option(50, "--iters", min=1, max=MAX_REPS, help="Exchanges per timed run."),
        warmup: int = typer.Option(5, "--warmup", min=0, max=MAX_REPS, help="Untimed exchanges per size."),
        runs: int = typer.Option(4, "--runs", min=1, max=MAX_RUNS, help="Timed runs per size (mean and stddev)."),
        comm_sets: int | None = typer.Option(None, "--comm-sets", min=1, max=MAX_RUNS,
                                             help="Sets of NCCL communicators each mapping is timed on, interleaved "
                                                  "(default 3)."),
        cuda_graph: int = _cuda_graph_option("exchanges", "; 0: launch each exchange from Python. With "
                                                          "--emulate-slow-pairs every exchange is launched eagerly."),
        gpus: str | None = typer.Option(None, "--gpus", help="Single process: GPUs to use (default all)."),
        emulate_slow_pairs: str | None = typer.Option(None, "--emulate-slow-pairs",
                                                      help="GPU pairs staged through host memory, e.g. 0-1,2-3 (labelled emulated)."),
        preset: str | None = _PRESET,
        from_file: Path | None = _FROM,
        synthetic: str | None = _SYNTHETIC,
        gpu_model: str | None = _GPU_MODEL,
        backend: str = typer.Option("auto", "--backend", help=_BACKEND_HELP),
        json_path: Path | None = typer.Option(None, "--json", help="Write the RunRecord here ('-' = stdout)."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the halo data check."),
    ) -> None:
        """Halo-exchange microbenchmark: default vs a chosen rank → GPU mapping.

        Example: linkscope bench stencil --dims 2 --periodic --mapping auto --emulate-slow-pairs 0-1,2-3
        """
        from ..comm import bench
        from ..comm.stencil import parse_slow_pairs

        if dims not in (2, 3):
            raise UserError(f"--dims {dims} is not valid", hint="valid choices: 2, 3")
        opts = bench.StencilOptions(dims, periodic, weighted, mapping, grid, _sizes(sizes), iters, warmup, runs,
                                    parse_gpu_tuple(gpus), parse_slow_pairs(emulate_slow_pairs), backend, not no_verify,
                                    comm_sets, cuda_graph)
        choice = TopologyInput(preset, from_file, synthetic, gpu_model)
        topology = choice.lazy(allow_fallback=True)
        inputs = {"--from": from_file, "--mapping": mapping if Path(mapping).is_file() else None}
        _run(lambda session: bench.bench_stencil(session, opts, topology if choice.given else None, topology), json_path,
             inputs)

    @bench_app.command("p2p")
    def bench_p2p(
        mpi: bool = typer.Option(False, "--mpi", help="Measure every rank pair of the MPI job (required)."),
        sizes: str = typer.Option("1MiB,64MiB", "--sizes", help="Message sizes."),
        buffers: str = typer.Option("D", "--buffers", help="D: GPU ranks over NCCL send/recv; H: MPI on host buffers."),
        iters: int = typer.Option(20, "--iters", min=1, max=MAX_REPS, help="Timed messages per pair and size (NCCL)."),
        warmup: int = typer.Option(5, "--warmup", min=0, max=MAX_REPS, help="Untimed messages per pair and size (NCCL)."),
        backend: str = typer.Option("auto", "--backend", help=_BACKEND_HELP + " sim: single process only."),
        preset: str | None = _PRESET,
        from_file: Path | None = _FROM,
        synthetic: str | None = _SYNTHETIC,
        gpu_model: str | None = _GPU_MODEL,
        json_path: Path | None = typer.Option(None, "--json", help="Write the RunRecord (one matrix) here ('-' = stdout)."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the data check."),
    ) -> None:
        """Every rank pair of the job in turn (others idle), intra- and inter-node, as one matrix.

        Example: mpirun -n 8 --map-by ppr:4:node linkscope bench p2p --mpi --sizes 64MiB --json cluster.json
        """
        from ..comm import bench

        if not mpi:
            raise UserError("bench p2p measures the ranks of an MPI job: add --mpi and run under mpirun/srun",
                            hint="for the GPUs of one node use: linkscope bench --pattern matrix")
        buf = buffers.upper()
        if buf not in ("H", "D"):
            raise UserError(f"--buffers {buffers!r} is not valid", hint="valid choices: H, D")
        opts = bench.P2POptions(_sizes(sizes), buf, iters, warmup, backend, not no_verify)
        topology = TopologyInput(preset, from_file, synthetic, gpu_model).lazy(allow_fallback=True)
        _run(lambda session: bench.bench_p2p(session, opts, topology), json_path, {"--from": from_file})


def register(app: typer.Typer) -> None:
    """Nothing at the top level: these are subcommands of ``bench`` (see ``extend``)."""


def extend(app: typer.Typer) -> None:
    """Add the subcommands to the ``bench`` group, which every module's ``register`` has created by now."""
    for info in getattr(app, "registered_groups", []):
        if info.name == "bench" and info.typer_instance is not None:
            register_bench_subcommands(info.typer_instance)
            return
    raise RuntimeError("cmd_comm: no 'bench' group registered (cmd_bench.py must register it)")
