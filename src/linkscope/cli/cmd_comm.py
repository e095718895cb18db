"""``linkscope bench mpi|nccl|stencil|p2p``: multi-process benchmarks (run under mpirun/srun).

The ``bench`` group itself belongs to cmd_bench.py; this module adds its subcommands through
``register_bench_subcommands(bench_app)``. ``register(app)`` (called for every cmd_*.py) wires them
into an already registered ``bench`` group when there is one, and does nothing otherwise.

Output: data on stdout from rank 0 only; every rank of a bad run exits 1 with one message on
rank 0; data-check failures exit 3.

Interrupts: rank 0 rewrites ``--json`` (atomically, ``complete: false``) after every finished size
or pair, so even a SIGKILL loses only the size in progress. On Ctrl-C / SIGTERM the ranks agree to
stop at the next size boundary (``linkscope.comm.interrupt``), rank 0 writes what was finished
and every rank exits 130. ``bench mpi`` and ``bench nccl`` stream their table rows as sizes finish
(as OSU and nccl-tests do); ``bench stencil`` and ``bench p2p`` print the partial table on stop.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from ..errors import UserError
from .common import parse_gpu_list

_ENV_KEYS_PREFIXES = ("NCCL_", "CUDA_", "OMPI_MCA_", "UCX_", "MV2_", "MPICH_", "FI_", "HSA_", "HIP_", "ROCR_")
_ENV_LAUNCHER_INTERNAL = ("OMPI_MCA_orte_", "OMPI_MCA_ess", "OMPI_MCA_pmix", "OMPI_MCA_initial_wdir",
                          "OMPI_MCA_shmem_", "OMPI_MCA_rmaps_base_oversubscribe", "OMPI_MCA_mpi_oversubscribe")


def _env_rank(environ: dict[str, str]) -> int:
    for name in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "PALS_RANKID", "SLURM_PROCID"):
        value = environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def _recorded_env(environ: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in sorted(environ.items())
            if k.startswith(_ENV_KEYS_PREFIXES) and not k.startswith(_ENV_LAUNCHER_INTERNAL)}


def _run(body: Callable[[dict[str, str]], int]) -> None:
    """Run a command body on every rank: user errors reported by rank 0 only, exit codes kept."""
    environ = dict(os.environ)
    try:
        code = body(environ)
    except UserError:
        if _env_rank(environ) != 0:
            raise typer.Exit(1) from None
        raise
    except SystemExit as exc:  # run_collectively's quiet exit on ranks other than 0
        raise typer.Exit(int(exc.code or 0)) from None
    if code:
        raise typer.Exit(code)


def _sizes(text: str) -> list[int]:
    from ..units import parse_sizes

    return parse_sizes(text)


def _save(record: Any, path: Optional[Path]) -> None:
    if path is not None:
        from ..results.io import save
        from .common import write_error

        try:
            save(record, path)
        except OSError as exc:
            raise write_error(path, exc) from None


def _progress(text: str) -> None:
    """Progress line on stderr (rank 0 calls it; tests patch it to interrupt a sweep)."""
    print(f"linkscope: {text}", file=sys.stderr, flush=True)


def _sweep(
    job: Any,
    run: Callable[[Optional[Callable[[Any], None]], Any], Any],
    *,
    json_path: Optional[Path],
    to_record: Callable[[Any, bool], Any],
    text: Callable[[Any], str],
    done: Callable[[Any], str],
    stream: Optional[Callable[[Any], None]] = None,
    footer: Optional[Callable[[Any], str]] = None,
) -> int:
    """Run one sweep under the stop-signal guard and finish it; returns the exit code.

    ``run(checkpoint, stop)`` calls the runner. On rank 0, ``checkpoint`` streams new table rows
    (``stream``) and rewrites ``--json`` with ``complete: false`` after every finished step. At the
    end rank 0 prints ``footer(result)`` (streamed tables) or ``text(result)`` and saves the complete
    record. On an interrupt: the partial record is saved, the partial table printed, and 130
    returned on every rank; after a hard stop (second signal) the job is aborted with 130, since
    other ranks may still be inside a message.
    """
    from ..comm.interrupt import RunInterrupted, stop_on_signal

    def checkpoint(partial: Any) -> None:
        if stream is not None:
            stream(partial)
        _save(to_record(partial, False), json_path)

    try:
        with stop_on_signal(job) as stop:
            result = run(checkpoint if job.rank == 0 else None, stop)
    except RunInterrupted as exc:
        if job.rank == 0:
            _finish_interrupted(exc.partial, json_path, to_record, text, done, footer if stream else None)
        if not exc.agreed and job.size > 1:
            job.comm.Abort(130)
        return 130
    if result is None:
        return 0
    job.echo(footer(result) if stream is not None and footer is not None else text(result))
    record = to_record(result, True)
    _save(record, json_path)
    return 3 if record.errors else 0


def _finish_interrupted(partial: Any, json_path: Optional[Path], to_record: Callable[[Any, bool], Any],
                        text: Callable[[Any], str], done: Callable[[Any], str],
                        footer: Optional[Callable[[Any], str]]) -> None:
    """Rank 0 after a stop: the partial table on stdout, the partial record to --json, one line on stderr."""
    what = done(partial) if partial is not None else "nothing"
    if partial is not None:
        out = footer(partial) if footer is not None else text(partial)
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
        record = to_record(partial, False)
        record = record.with_(findings=tuple(record.findings) + (f"interrupted: {what} finished",))
        _save(record, json_path)
    where = f"; partial results written to {json_path}" if json_path is not None and partial is not None else ""
    sys.stderr.write(f"linkscope: interrupted after {what} finished{where}\n")
    sys.stderr.flush()


def _of(done_count: int, total: int, noun: str) -> str:
    return f"{done_count} of {total} {noun}"


def _base_context(job: Any, environ: dict[str, str]) -> dict[str, Any]:
    import platform

    from .. import __version__ as version

    ctx = job.context()
    ctx.update({"linkscope_version": version, "python": platform.python_version(), "env": _recorded_env(environ)})
    return ctx


def _load_topology(preset: Optional[str], from_file: Optional[Path], synthetic: Optional[str]) -> Any:
    if preset:
        from ..topology.presets import load_preset

        return load_preset(preset)
    if from_file:
        from ..topology.io import load

        return load(from_file)
    if synthetic:
        from ..topology.synthetic import synthetic_topology

        return synthetic_topology(synthetic)
    return None


def _nccl_backend(name: str, gpus_hint: int = 4) -> Any:
    from ..comm.nccl_backend import CupyNccl, FakeNccl

    if name == "sim":
        return FakeNccl(gpus=gpus_hint)
    if name != "cuda":
        raise UserError(f"--backend {name!r} is not valid", hint="valid choices: cuda, sim")
    try:
        return CupyNccl()
    except ImportError as exc:
        raise UserError("NCCL needs CuPy with NCCL support (cupy.cuda.nccl)",
                        hint="pip install cupy-cuda12x; or --backend sim for a simulated run") from exc


def _bind_local_gpu(job: Any, backend: Any, environ: dict[str, str], gpu_of_rank: Any = None) -> int:
    from ..comm.launch import bind_gpu

    binding = bind_gpu(world_rank=job.rank, local_rank=job.local_rank, visible_gpus=backend.device_count(),
                       environ=environ, gpu_of_rank=gpu_of_rank)
    return binding.cuda_ordinal


def register_bench_subcommands(bench_app: typer.Typer) -> None:
    """Add ``mpi``, ``nccl``, ``stencil`` and ``p2p`` to the ``bench`` group."""

    @bench_app.command("mpi")
    def bench_mpi(
        test: str = typer.Option("latency", "--test", help="latency | bw | bibw | allreduce (osu_latency, osu_bw, osu_bibw, osu_allreduce)."),
        buffers: str = typer.Option("HH", "--buffers", help="HH | DD | DH | HD (H, D mean HH, DD); first letter: rank 0's side."),
        sizes: str = typer.Option("1:4MiB", "--sizes", help="Message sizes: list or power-of-two range, 1 B … 1 GiB."),
        iterations: Optional[int] = typer.Option(None, "--iterations", min=1, help="Timed iterations per size (default: OSU's, scaled by size)."),
        warmup: Optional[int] = typer.Option(None, "--warmup", min=0, help="Untimed iterations per size (default: OSU's skip)."),
        window: int = typer.Option(64, "--window", min=1, help="Back-to-back messages per bw iteration (OSU: 64)."),
        runs: int = typer.Option(1, "--runs", min=1, help="Timed runs per size (median reported)."),
        stage_through_host: bool = typer.Option(False, "--stage-through-host", help="Copy device buffers through host memory around each send/recv (method mpi.*+staged)."),
        gpu_aware: str = typer.Option("auto", "--gpu-aware", help="auto | yes | no: override GPU-awareness detection."),
        fake_device: bool = typer.Option(False, "--fake-device", hidden=True, help="Tests: D buffers are host memory behind __cuda_array_interface__."),
        json_path: Optional[Path] = typer.Option(None, "--json", help="Write the RunRecord here."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the received-data check."),
    ) -> None:
        """MPI point-to-point latency / bandwidth and allreduce latency with OSU semantics (run under mpirun/srun).

        Example: mpirun -n 2 linkscope bench mpi --test bw --buffers HH --sizes 1:4MiB --json bw.json
        """

        def body(environ: dict[str, str]) -> int:
            from .common import check_output_file

            check_output_file(json_path, "--json")
            from ..comm import gpu_aware as ga
            from ..comm.buffers import CupyDeviceSpace, FakeDeviceSpace, HostSpace
            from ..comm.launch import run_collectively, start_mpi
            from ..comm.mpi_p2p import BUFFER_CHOICES, TESTS, Schedule, run_osu
            from ..comm.render import osu_footer, osu_header, osu_record, osu_row, osu_text

            buf = {"H": "HH", "D": "DD"}.get(buffers.upper(), buffers.upper())
            if test not in TESTS:
                raise UserError(f"--test {test!r} is not valid", hint=f"valid choices: {', '.join(TESTS)}")
            if buf not in BUFFER_CHOICES:
                raise UserError(f"--buffers {buffers!r} is not valid", hint="valid choices: H, D, HH, DD, DH, HD")
            size_list = _sizes(sizes)
            force = ga.parse_gpu_aware_choice(gpu_aware)
            job = start_mpi(environ)  # late: options are parsed

            def inner() -> int:
                awareness = None
                if "D" in buf:
                    awareness = ga.forced(force) if force is not None else ga.detect(
                        job.mpi_library, environ, memory_kinds=ga.memory_alloc_kinds())
                    ga.check_device_buffers(buf, awareness, stage_through_host)
                half = max(job.size // 2, 1)
                letter = buf[0] if job.rank < half else buf[1]
                if letter == "H":
                    space: Any = HostSpace()
                elif fake_device:
                    space = FakeDeviceSpace()
                else:
                    from ..comm.nccl_backend import CupyNccl

                    gpu = _bind_local_gpu(job, CupyNccl(), environ)
                    space = CupyDeviceSpace(gpu)
                schedule = Schedule(window=window, iterations=iterations, warmup=warmup)
                ctx = _base_context(job, environ)
                if awareness is not None:
                    ctx["gpu_aware"] = awareness.as_dict()
                options = {"test": test, "buffers": buf, "sizes": size_list, "window": window, "runs": runs,
                           "iterations": iterations, "warmup": warmup, "stage_through_host": stage_through_host,
                           "verify": not no_verify, "fake_device": fake_device}
                printed: list[int] = []

                def stream(partial: Any) -> None:  # OSU prints each size as it finishes
                    fresh = [(size, value) for size, value, _ in partial.per_size() if size not in printed]
                    out = "" if printed else osu_header(partial)
                    if not printed and awareness is not None:
                        out = f"# MPI: {awareness.describe()}\n" + out
                    out += "".join(osu_row(size, value) for size, value in fresh)
                    printed.extend(size for size, _ in fresh)
                    job.echo(out)

                return _sweep(
                    job,
                    lambda checkpoint, stop: run_osu(job, test, size_list, buf, (space, space), schedule=schedule,
                                                     staged=stage_through_host, verify=not no_verify, runs=runs,
                                                     checkpoint=checkpoint, stop=stop),
                    json_path=json_path, to_record=lambda r, complete: osu_record(r, ctx, options, complete),
                    text=osu_text, done=lambda r: _of(len(r.per_size()), len(size_list), "sizes"),
                    stream=stream, footer=osu_footer)

            code = run_collectively(job, inner)
            return int(job.comm.bcast(code, root=0))

        _run(body)

    @bench_app.command("nccl")
    def bench_nccl(
        op: str = typer.Option("allreduce", "--op", help="allreduce | allgather | reduce_scatter | broadcast | reduce | alltoall | sendrecv."),
        sizes: str = typer.Option("8:128MiB", "--sizes", help="Sizes (nccl-tests' S): list or power-of-two range."),
        iters: int = typer.Option(20, "--iters", "-n", min=1, help="Timed operations per size (nccl-tests -n)."),
        warmup: int = typer.Option(5, "--warmup", "-w", min=0, help="Untimed operations per size (nccl-tests -w)."),
        runs: int = typer.Option(1, "--runs", min=1, help="Timed runs per size (median reported)."),
        gpus: Optional[str] = typer.Option(None, "--gpus", help="Single process: CUDA devices to drive (default all)."),
        cuda_graph: int = typer.Option(20, "--cuda-graph", min=0, help="Capture this many operations per CUDA graph for sizes <= 1 MiB, so small sizes time NCCL, not Python launches (nccl-tests -G); 0: launch each operation from Python."),
        backend: str = typer.Option("cuda", "--backend", help="cuda | sim (NumPy twin; simulated numbers)."),
        json_path: Optional[Path] = typer.Option(None, "--json", help="Write the RunRecord here."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the data check (#wrong shows N/A)."),
        inplace: bool = typer.Option(False, "--inplace", help="Also time every size in place and print both column groups (out-of-place | in-place), as nccl-tests does."),
    ) -> None:
        """NCCL collectives, nccl-tests style: time, algbw, busbw, #wrong.

        One process drives all local GPUs (like nccl-tests -g), or under mpirun one GPU per rank.
        Out-of-place by default; --inplace adds nccl-tests' in-place columns.

        Example: linkscope bench nccl --op allreduce --sizes 8:1GiB --iters 20 --warmup 5 --inplace
        """

        def body(environ: dict[str, str]) -> int:
            from .common import check_output_file

            check_output_file(json_path, "--json")
            from ..model.collectives import OPS
            from ..comm.launch import job_for, run_collectively
            from ..comm.nccl import make_peers, run_nccl
            from ..comm.render import nccl_footer, nccl_header, nccl_record, nccl_row, nccl_text

            if op not in OPS:
                raise UserError(f"--op {op!r} is not valid", hint=f"valid choices: {', '.join(OPS)}")
            size_list = _sizes(sizes)
            devices = parse_gpu_list(gpus)
            be = _nccl_backend(backend, len(devices) if devices else 4)
            job = job_for(environ)

            def inner() -> int:
                local = _bind_local_gpu(job, be, environ) if job.size > 1 else None
                peers = make_peers(job, be, devices, local_gpu=local)
                ctx = _base_context(job, environ)
                options = {"op": op, "sizes": size_list, "iters": iters, "warmup": warmup, "runs": runs,
                           "cuda_graph": cuda_graph, "backend": backend, "verify": not no_verify,
                           "inplace": inplace}
                printed: list[int] = []

                def stream(partial: Any) -> None:  # nccl-tests prints each size as it finishes
                    fresh = [size for size in partial.sizes() if size not in printed]
                    out = "" if printed else nccl_header(partial)
                    out += "".join(nccl_row(partial, size) for size in fresh)
                    printed.extend(fresh)
                    job.echo(out)

                try:
                    return _sweep(
                        job,
                        lambda checkpoint, stop: run_nccl(job, be, peers, op, size_list, iters=iters, warmup=warmup,
                                                          runs=runs, verify=not no_verify, graph_iters=cuda_graph,
                                                          inplace=inplace, progress=_progress, checkpoint=checkpoint,
                                                          stop=stop),
                        json_path=json_path, to_record=lambda r, complete: nccl_record(r, ctx, options, complete),
                        text=nccl_text, done=lambda r: _of(len(r.sizes()), len(size_list), "sizes"),
                        stream=stream, footer=nccl_footer)
                finally:
                    be.destroy(peers)

            return int(job.comm.bcast(run_collectively(job, inner), root=0))

        _run(body)

    @bench_app.command("stencil")
    def bench_stencil(
        dims: int = typer.Option(2, "--dims", help="2 | 3: process-grid dimensions."),
        periodic: bool = typer.Option(False, "--periodic", help="Wrap around (torus)."),
        weighted: bool = typer.Option(False, "--weighted", help="Axis k halos are size / 2**k (anisotropic)."),
        mapping: str = typer.Option("default", "--mapping", help="default | auto | FILE (linkscope map output)."),
        grid: Optional[str] = typer.Option(None, "--grid", help="Process grid AxB[xC] (default: balanced over the GPUs/ranks)."),
        sizes: str = typer.Option("1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB", "--sizes", help="Halo message sizes."),
        iters: int = typer.Option(50, "--iters", min=1, help="Exchanges per timed run."),
        warmup: int = typer.Option(5, "--warmup", min=0, help="Untimed exchanges per size."),
        runs: int = typer.Option(4, "--runs", min=1, help="Timed runs per size (mean and stddev)."),
        gpus: Optional[str] = typer.Option(None, "--gpus", help="Single process: CUDA devices to use (default all)."),
        emulate_slow_pairs: Optional[str] = typer.Option(None, "--emulate-slow-pairs", help="GPU pairs staged through host memory, e.g. 0-1,2-3 (labelled emulated)."),
        preset: Optional[str] = typer.Option(None, "--preset", help="Topology for --mapping auto (preset name)."),
        from_file: Optional[Path] = typer.Option(None, "--from", help="Topology JSON for --mapping auto."),
        synthetic: Optional[str] = typer.Option(None, "--synthetic", help="Synthetic topology for --mapping auto (e.g. nvswitch:4)."),
        backend: str = typer.Option("cuda", "--backend", help="cuda | sim (NumPy twin; simulated numbers)."),
        json_path: Optional[Path] = typer.Option(None, "--json", help="Write the RunRecord here."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the halo data check."),
    ) -> None:
        """Halo-exchange microbenchmark: default vs a chosen rank → GPU mapping.

        Example: linkscope bench stencil --dims 2 --periodic --mapping auto --emulate-slow-pairs 0-1,2-3
        """

        def body(environ: dict[str, str]) -> int:
            from .common import check_paths

            check_paths(inputs={"--from": from_file, "--mapping": mapping if Path(mapping).is_file() else None},
                        outputs={"--json": json_path})
            from ..comm.launch import job_for, run_collectively
            from ..comm.render import stencil_record, stencil_text
            from ..comm.stencil import choose_mapping, parse_slow_pairs, process_grid, run_stencil

            if dims not in (2, 3):
                raise UserError(f"--dims {dims} is not valid", hint="valid choices: 2, 3")
            size_list = _sizes(sizes)
            slow = parse_slow_pairs(emulate_slow_pairs)
            devices = parse_gpu_list(gpus)
            be = _nccl_backend(backend, len(devices) if devices else 4)
            topology = _load_topology(preset, from_file, synthetic)
            job = job_for(environ)

            def inner() -> int:
                if job.size == 1:
                    devs = devices if devices is not None else list(range(be.device_count()))
                else:
                    devs = list(range(be.device_count()))
                nranks = len(devs) if job.size == 1 else job.size
                g = process_grid(nranks, dims, grid)
                for a, b in slow:
                    if max(a, b) >= len(devs):
                        raise UserError(f"--emulate-slow-pairs {a}-{b}: only GPUs 0..{len(devs) - 1} are used")
                chosen, info = choose_mapping(mapping, g, periodic, weighted, len(devs), topology=topology,
                                              slow_pairs=slow, size_bytes=max(size_list)) \
                    if int(__import__("numpy").prod(g)) == nranks else (None, {})
                mappings = {"default": tuple(range(nranks))}
                if chosen is not None and mapping != "default":
                    mappings[mapping if mapping == "auto" else "file"] = chosen

                def make(device_of_rank: Any) -> Any:
                    if job.size == 1:
                        return be.init_all([devs[i] for i in device_of_rank])
                    uid = be.unique_id() if job.rank == 0 else None
                    uid = job.comm.bcast(uid, root=0)
                    return [be.init_rank(job.size, uid, job.rank, devs[device_of_rank[job.rank]] % len(devs))]

                ctx = _base_context(job, environ)
                options = {"dims": dims, "periodic": periodic, "weighted": weighted, "mapping": mapping,
                           "grid": list(g), "sizes": size_list, "iters": iters, "warmup": warmup, "runs": runs,
                           "gpus": devs, "emulate_slow_pairs": [list(p) for p in slow], "backend": backend}
                total = len(size_list) * len(mappings)
                return _sweep(
                    job,
                    lambda checkpoint, stop: run_stencil(
                        job, be, make, g, mappings, periodic=periodic, weighted=weighted, sizes=size_list, iters=iters,
                        warmup=warmup, runs=runs, verify=not no_verify, slow_pairs=slow, mapping_info=info,
                        progress=_progress, checkpoint=checkpoint, stop=stop),
                    json_path=json_path, to_record=lambda r, complete: stencil_record(r, ctx, options, complete),
                    text=stencil_text, done=lambda r: _of(len(r.rows), total, "(mapping, size) steps"))

            return int(job.comm.bcast(run_collectively(job, inner), root=0))

        _run(body)

    @bench_app.command("p2p")
    def bench_p2p(
        mpi: bool = typer.Option(False, "--mpi", help="Measure every rank pair of the MPI job (required)."),
        sizes: str = typer.Option("1MiB,64MiB", "--sizes", help="Message sizes."),
        buffers: str = typer.Option("D", "--buffers", help="D: GPU ranks over NCCL send/recv; H: MPI on host buffers."),
        iters: int = typer.Option(20, "--iters", min=1, help="Timed messages per pair and size (NCCL)."),
        warmup: int = typer.Option(5, "--warmup", min=0, help="Untimed messages per pair and size (NCCL)."),
        backend: str = typer.Option("cuda", "--backend", help="cuda | sim (single-process NumPy twin)."),
        json_path: Optional[Path] = typer.Option(None, "--json", help="Write the RunRecord (one matrix) here."),
        no_verify: bool = typer.Option(False, "--no-verify", help="Skip the data check."),
    ) -> None:
        """Every rank pair of the job in turn (others idle), intra- and inter-node, as one matrix.

        Example: mpirun -n 8 --map-by ppr:4:node linkscope bench p2p --mpi --sizes 64MiB --json cluster.json
        """

        def body(environ: dict[str, str]) -> int:
            from .common import check_output_file

            check_output_file(json_path, "--json")
            from ..comm.buffers import HostSpace
            from ..comm.launch import job_for, run_collectively, start_mpi
            from ..comm.mpi_p2p import Schedule
            from ..comm.nccl import make_peers, nccl_ranks
            from ..comm.p2p_matrix import run_p2p_mpi, run_p2p_nccl
            from ..comm.render import p2p_record, p2p_text

            if not mpi:
                raise UserError("bench p2p measures the ranks of an MPI job: add --mpi and run under mpirun/srun",
                                hint="for the GPUs of one node use: linkscope bench --pattern matrix")
            buf = buffers.upper()
            if buf not in ("H", "D"):
                raise UserError(f"--buffers {buffers!r} is not valid", hint="valid choices: H, D")
            size_list = _sizes(sizes)
            if buf == "H":
                job = start_mpi(environ)
            else:
                be = _nccl_backend(backend)
                job = job_for(environ) if backend == "sim" else start_mpi(environ)

            def inner() -> int:
                options = {"sizes": size_list, "buffers": buf, "iters": iters, "warmup": warmup, "backend": backend}
                ctx = _base_context(job, environ)

                def finish(run: Callable[[Any, Any], Any], ranks: int) -> int:
                    total = ranks * (ranks - 1) * len(size_list)
                    return _sweep(job, run, json_path=json_path,
                                  to_record=lambda r, complete: p2p_record(r, ctx, options, complete),
                                  text=p2p_text, done=lambda r: _of(len(r.cells), total, "(pair, size) cells"))

                if buf == "H":
                    return finish(lambda checkpoint, stop: run_p2p_mpi(
                        job, HostSpace(), size_list, schedule=Schedule(iterations=iters, warmup=warmup),
                        verify=not no_verify, progress=_progress, checkpoint=checkpoint, stop=stop), job.size)
                local = _bind_local_gpu(job, be, environ) if job.size > 1 else None
                peers = make_peers(job, be, None, local_gpu=local)
                ranks = nccl_ranks(job, peers)
                try:
                    return finish(lambda checkpoint, stop: run_p2p_nccl(
                        job, be, peers, size_list, iters=iters, warmup=warmup, verify=not no_verify,
                        progress=_progress, checkpoint=checkpoint, stop=stop), ranks)
                finally:
                    be.destroy(peers)

            return int(job.comm.bcast(run_collectively(job, inner), root=0))

        _run(body)


def register(app: typer.Typer) -> None:
    """Wire into the ``bench`` group registered by cmd_bench.py, if any (else the lead wires it)."""
    for info in getattr(app, "registered_groups", []):
        if info.name == "bench" and info.typer_instance is not None:
            register_bench_subcommands(info.typer_instance)
            return
