"""The multi-process benchmarks as library calls: ``bench mpi | nccl | stencil | p2p`` without the CLI.

Each ``bench_*`` function takes the parsed options, starts (or not) MPI, binds a GPU per rank,
describes what to time to its runner (``mpi_p2p``, ``nccl``, ``stencil``, ``p2p_matrix``) and hands
the sweep to ``measure.sweep.run_sweep``: rank 0 streams rows, checkpoints the partial RunRecord
after every size, and on Ctrl-C / SIGTERM every rank stops at the same boundary and returns 130.
Output text comes from ``report.textformats`` over the RunRecord (``comm.records``). Every
function returns the exit code, the same on every rank (0, 3 data-check failure, 130 interrupted).
"""
from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UserError
from ..measure.sweep import Checkpoint, SweepOutput, run_sweep
from ..report import textformats as tf
from ..results.context import collect_context
from .launch import Job, bind_gpu, job_for, run_collectively, start_mpi
from .nccl_backend import CollectiveBackend, collective_backend


@dataclass(frozen=True)
class Session:
    """What every comm command shares: the environment (read by the CLI), where rank 0 checkpoints,
    and how progress is reported (stderr; tests replace it to interrupt a sweep)."""

    environ: Mapping[str, str]
    checkpoint: Checkpoint
    progress: Callable[[str], None]


def progress_line(text: str) -> None:
    """Progress line on stderr (rank 0 calls it)."""
    print(f"linkscope: {text}", file=sys.stderr, flush=True)


def job_context(job: Job, environ: Mapping[str, str], *, simulated: bool, topology: Any = None,
                touch_gpu: bool = True) -> dict[str, Any]:
    """The RunRecord context of a comm run: the shared context (versions, host, the environment
    variables that change behaviour, secrets filtered) and the job's ranks and hosts.

    ``touch_gpu=False`` leaves the vendor libraries alone (no CUDA/NCCL/NVML versions): a host-buffer
    ``bench mpi`` must not initialise the GPU driver, because a CUDA-aware MPI's host-buffer calls then
    cost more (2 x H100, Open MPI 4.1.4: an 8 B allreduce from mpi4py 2.1-2.4 us in a process that never
    touched CUDA, 3.0-3.2 once cuInit ran, 4.4-4.5 with a context; docs/runs/scripts/mpi_overhead/pingpong.py)."""
    ctx = collect_context(environ, gpu_names=[g.name for g in topology.gpus] if topology is not None else (),
                          engine="sim" if simulated else "nccl/mpi",
                          topology_source=(topology.source or topology.name) if topology is not None else None,
                          probe_vendor=touch_gpu and not simulated)
    ctx.update(job.context())
    return ctx


def _of(done: int, total: int, noun: str) -> str:
    return f"{done} of {total} {noun}"


def _local_gpu(job: Job, backend: CollectiveBackend, environ: Mapping[str, str],
               gpu_of_rank: Sequence[int] | None = None) -> int:
    binding = bind_gpu(world_rank=job.rank, local_rank=job.local_rank, visible_gpus=backend.device_count(),
                       environ=environ, gpu_of_rank=gpu_of_rank)
    return binding.cuda_ordinal


def _bcast_code(job: Job, body: Callable[[], int]) -> int:
    return int(job.comm.bcast(run_collectively(job, body), root=0))


def _backend(name: str, topology: Callable[[], Any], named_topology: bool = False,
             env: Mapping[str, str] | None = None) -> CollectiveBackend:
    backend, note = collective_backend(name, topology, named_topology=named_topology, env=env)
    if note:
        progress_line(f"note: {note}")
    return backend


def _topology_dict(backend: CollectiveBackend) -> dict[str, Any] | None:
    topology = getattr(backend, "topology", None)
    if topology is None:
        return None
    from ..topology.io import to_dict

    return to_dict(topology)


# ---- bench mpi ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MpiOptions:
    test: str
    buffers: str
    sizes: tuple[int, ...]
    iterations: int | None
    warmup: int | None
    window: int
    runs: int
    stage_through_host: bool
    gpu_aware: bool | None
    fake_device: bool
    verify: bool


def bench_mpi(session: Session, opts: MpiOptions) -> int:
    """OSU-style point-to-point latency / bandwidth between rank pairs (under mpirun/srun)."""
    from . import gpu_aware as ga
    from .buffers import CupyDeviceSpace, FakeDeviceSpace, HostSpace
    from .mpi_p2p import Schedule, run_osu
    from .records import osu_record

    environ = session.environ
    # late: options are parsed. MPI_THREAD_SINGLE as osu_latency/osu_bw/osu_allreduce get from MPI_Init
    # (mpi4py asks for MPI_THREAD_MULTIPLE, which puts Open MPI's locks and atomics on every message:
    # ping-pong 8 B 0.51 -> 0.46 us on the CPU box, mpi_p2p's docstring has the numbers).
    job = start_mpi(environ, thread_level="single")

    def inner() -> int:
        awareness = None
        if "D" in opts.buffers:
            awareness = ga.forced(opts.gpu_aware) if opts.gpu_aware is not None else ga.detect(
                job.mpi_library, environ, memory_kinds=ga.memory_alloc_kinds())
            ga.check_device_buffers(opts.buffers, awareness, opts.stage_through_host)
        half = max(job.size // 2, 1)
        letter = opts.buffers[0] if job.rank < half else opts.buffers[1]
        if letter == "H":
            space: Any = HostSpace()
        elif opts.fake_device:
            space = FakeDeviceSpace()
        else:
            from .nccl_backend import CupyNccl

            space = CupyDeviceSpace(_local_gpu(job, CupyNccl(), environ))
        schedule = Schedule(window=opts.window, iterations=opts.iterations, warmup=opts.warmup)
        ctx = job_context(job, environ, simulated=False, touch_gpu="D" in opts.buffers)
        if awareness is not None:
            ctx["gpu_aware"] = awareness.as_dict()
        options = {"test": opts.test, "buffers": opts.buffers, "sizes": list(opts.sizes), "window": opts.window,
                   "runs": opts.runs, "iterations": opts.iterations, "warmup": opts.warmup,
                   "stage_through_host": opts.stage_through_host, "verify": opts.verify,
                   "fake_device": opts.fake_device}
        printed: list[int] = []

        def to_record(result: Any, complete: bool) -> Any:
            return osu_record(result, ctx, options, complete)

        def stream(partial: Any) -> None:  # OSU prints each size as it finishes
            record = to_record(partial, False)
            fresh = [m for m in tf.mpi_osu_lines(record) if m.size_bytes not in printed]
            out = "" if printed else tf.mpi_osu_header(record)
            if not printed and awareness is not None:
                out = f"# MPI: {awareness.describe()}\n" + out
            out += "".join(tf.osu_row(m.size_bytes, float(m.extra["osu_value"])) for m in fresh)
            printed.extend(m.size_bytes for m in fresh)
            job.echo(out)

        output = SweepOutput(to_record, lambda r: tf.mpi_osu_text(to_record(r, True)),
                             lambda r: _of(len(r.per_size()), len(opts.sizes), "sizes"), stream,
                             lambda r: tf.mpi_osu_footer(to_record(r, True)))
        return run_sweep(job, lambda on_step, stop: run_osu(
            job, opts.test, list(opts.sizes), opts.buffers, (space, space), schedule=schedule,
            staged=opts.stage_through_host, verify=opts.verify, runs=opts.runs, checkpoint=on_step, stop=stop),
            output, session.checkpoint, job.echo)

    return _bcast_code(job, inner)


# ---- bench nccl ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NcclOptions:
    op: str
    sizes: tuple[int, ...]
    iters: int
    warmup: int
    runs: int
    gpus: tuple[int, ...] | None
    cuda_graph: int
    backend: str
    verify: bool
    inplace: bool
    comm_sets: int = 1  # sets of communicators timed one after another (comm.nccl.run_nccl_sets)


def bench_nccl(session: Session, opts: NcclOptions, topology: Callable[[], Any], named_topology: bool = False) -> int:
    """NCCL collectives, nccl-tests style; one process drives every GPU of ``gpus`` or one GPU per rank.
    ``named_topology``: the user named one (``auto`` then simulates it)."""
    from ..model.collectives import predict_sweep
    from .nccl import make_peers, nccl_ranks, peer_gpus, run_nccl_sets
    from .records import nccl_record

    environ = session.environ
    backend = _backend(opts.backend, topology, named_topology, session.environ)
    job = job_for(environ)

    def inner() -> int:
        local = _local_gpu(job, backend, environ) if job.size > 1 else None
        gpus = peer_gpus(job, backend, opts.gpus, local_gpu=local)  # each set's communicators are made in its turn
        if backend.simulated:  # every rank's buffers live in this process: estimated before any is made
            from ..model.budget import check_budget, estimate_collective_bytes

            simulated_on = getattr(backend, "topology")  # noqa: B009 - only the simulated backend has one
            limit = getattr(backend, "data_limit_bytes", None) or max(opts.sizes)
            buffer_bytes = min(max(opts.sizes), limit)
            check_budget(estimate_collective_bytes(simulated_on, len(gpus), buffer_bytes),
                         f"bench nccl --backend sim --op {opts.op} on {len(gpus):,} GPUs of {simulated_on.name}",
                         hint="select fewer GPUs (--gpus) or smaller sizes")
        ctx = job_context(job, environ, simulated=backend.simulated, topology=getattr(backend, "topology", None))
        options = {"op": opts.op, "sizes": list(opts.sizes), "iters": opts.iters, "warmup": opts.warmup,
                   "runs": opts.runs, "cuda_graph": opts.cuda_graph, "backend": opts.backend, "verify": opts.verify,
                   "inplace": opts.inplace, "gpus": gpus, "comm_sets": opts.comm_sets}
        topo = _topology_dict(backend)
        model = getattr(backend, "model", None)
        if model is not None and opts.cuda_graph > 0:  # run_nccl captures graphs at every size
            model = getattr(backend, "graph_model", model)
        ranks = nccl_ranks(job, gpus)
        # simulated: the model's choice at every size, asked once, when the sweep is over (the walk of an op from
        # bench nccl reaches the model last, issue 38); the complete record joins it by size. A partial record
        # (a checkpoint, an interrupted run) has the measured rows without the tuner's choice per size.
        predictions: dict[int, Any] = {}
        printed: list[int] = []

        def to_record(result: Any, complete: bool) -> Any:
            if complete and not predictions and model is not None and ranks >= 1:
                predictions.update(predict_sweep(model, opts.op, gpus, opts.sizes, ranks))
            return nccl_record(result, ctx, options, complete, topology=topo, predictions=predictions)

        def stream(partial: Any) -> None:  # nccl-tests prints each size as it finishes (on every set)
            record = to_record(partial, False)
            fresh = [size for size in tf.nccl_sizes(record)
                     if size not in printed and partial.sets_of(size) >= opts.comm_sets]
            out = "" if printed else tf.nccl_tests_header(record)
            out += "".join(tf.nccl_tests_row(record, size) for size in fresh)
            printed.extend(fresh)
            job.echo(out)

        output = SweepOutput(to_record, lambda r: tf.nccl_tests_text(to_record(r, True)),
                             lambda r: _of(len(r.sizes()), len(opts.sizes), "sizes"), stream,
                             lambda r: tf.nccl_tests_footer(to_record(r, True)))
        return run_sweep(job, lambda on_step, stop: run_nccl_sets(
            job, backend, lambda: make_peers(job, backend, gpus, local_gpu=local),
            opts.op, list(opts.sizes), sets=opts.comm_sets, iters=opts.iters, warmup=opts.warmup, runs=opts.runs,
            verify=opts.verify, graph_iters=opts.cuda_graph, inplace=opts.inplace, progress=session.progress,
            checkpoint=on_step, stop=stop), output, session.checkpoint, job.echo)

    return _bcast_code(job, inner)


# ---- bench stencil ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StencilOptions:
    dims: int
    periodic: bool
    weighted: bool
    mapping: str
    grid: str | None
    sizes: tuple[int, ...]
    iters: int
    warmup: int
    runs: int
    gpus: tuple[int, ...] | None
    slow_pairs: tuple[tuple[int, int], ...]
    backend: str
    verify: bool
    comm_sets: int | None = None  # None: comm.stencil.COMM_SETS
    cuda_graph: int = 0  # exchanges per CUDA graph (0: eager launches)


def bench_stencil(session: Session, opts: StencilOptions, topology: Callable[[], Any] | None,
                  sim_topology: Callable[[], Any]) -> int:
    """Halo exchange under the default and a chosen rank → GPU mapping. ``topology`` (None: none
    given) is what ``--mapping auto`` optimises for; ``sim_topology`` what the simulated backend runs on."""
    from .records import stencil_record
    from .stencil import COMM_SETS, choose_mapping, process_grid, run_stencil, stencil_peers

    environ = session.environ
    backend = _backend(opts.backend, sim_topology, env=session.environ)
    job = job_for(environ)
    comm_sets = opts.comm_sets or COMM_SETS

    def inner() -> int:
        all_devs = list(range(backend.device_count()))
        devs = list(opts.gpus) if job.size == 1 and opts.gpus is not None else all_devs
        nranks = len(devs) if job.size == 1 else job.size
        grid = process_grid(nranks, opts.dims, opts.grid)
        for a, b in opts.slow_pairs:
            if max(a, b) >= len(devs):
                raise UserError(f"--emulate-slow-pairs {a}-{b}: only GPUs 0..{len(devs) - 1} are used")
        topo = None
        if opts.mapping == "auto":
            topo = topology() if topology is not None else getattr(backend, "topology", None)
        mappings: dict[str, tuple[int, ...]] = {"default": tuple(range(nranks))}
        info: dict[str, Any] = {"mapping": "default"}
        ranks = 1
        for d in grid:
            ranks *= d
        if ranks == nranks and opts.mapping != "default":
            chosen, info = choose_mapping(opts.mapping, grid, opts.periodic, opts.weighted, len(devs), topology=topo,
                                          slow_pairs=opts.slow_pairs, size_bytes=max(opts.sizes))
            mappings[opts.mapping if opts.mapping == "auto" else "file"] = chosen
        ctx = job_context(job, environ, simulated=backend.simulated, topology=getattr(backend, "topology", None))
        options = {"dims": opts.dims, "periodic": opts.periodic, "weighted": opts.weighted, "mapping": opts.mapping,
                   "grid": list(grid), "sizes": list(opts.sizes), "iters": opts.iters, "warmup": opts.warmup,
                   "runs": opts.runs, "gpus": devs, "emulate_slow_pairs": [list(p) for p in opts.slow_pairs],
                   "backend": opts.backend, "comm_sets": comm_sets, "cuda_graph": opts.cuda_graph}
        total = len(opts.sizes) * len(mappings) * comm_sets

        def to_record(result: Any, complete: bool) -> Any:
            return stencil_record(result, ctx, options, complete)

        output = SweepOutput(to_record, lambda r: tf.stencil_text(to_record(r, True)),
                             lambda r: _of(sum(row.sets for row in r.rows), total, "(mapping, size, set) steps"))
        return run_sweep(job, lambda on_step, stop: run_stencil(
            job, backend, stencil_peers(job, backend, devs), grid, mappings, periodic=opts.periodic,
            weighted=opts.weighted, sizes=list(opts.sizes), iters=opts.iters, warmup=opts.warmup, runs=opts.runs,
            verify=opts.verify, slow_pairs=opts.slow_pairs, mapping_info=info, progress=session.progress,
            checkpoint=on_step, stop=stop, comm_sets=comm_sets, graph_iters=opts.cuda_graph), output, session.checkpoint, job.echo)

    return _bcast_code(job, inner)


# ---- bench p2p --mpi ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class P2POptions:
    sizes: tuple[int, ...]
    buffers: str
    iters: int
    warmup: int
    backend: str
    verify: bool


def bench_p2p(session: Session, opts: P2POptions, topology: Callable[[], Any]) -> int:
    """Every ordered rank pair of the job in turn (the others idle), as one matrix per size."""
    from .buffers import HostSpace
    from .mpi_p2p import Schedule
    from .nccl import make_peers, nccl_ranks
    from .p2p_matrix import run_p2p_mpi, run_p2p_nccl
    from .records import p2p_record

    environ = session.environ
    backend: CollectiveBackend | None = None
    if opts.buffers == "H":
        job = start_mpi(environ)
    else:
        backend = _backend(opts.backend, topology, env=session.environ)
        job = job_for(environ) if backend.simulated else start_mpi(environ)

    def inner() -> int:
        options = {"sizes": list(opts.sizes), "buffers": opts.buffers, "iters": opts.iters, "warmup": opts.warmup,
                   "backend": opts.backend}
        simulated = backend is not None and backend.simulated
        ctx = job_context(job, environ, simulated=simulated, topology=getattr(backend, "topology", None))

        def finish(run: Callable[[Any, Any], Any], ranks: int) -> int:
            total = ranks * (ranks - 1) * len(opts.sizes)

            def to_record(result: Any, complete: bool) -> Any:
                return p2p_record(result, ctx, options, complete)

            output = SweepOutput(to_record, lambda r: tf.p2p_text(to_record(r, True)),
                                 lambda r: _of(len(r.cells), total, "(pair, size) cells"))
            return run_sweep(job, run, output, session.checkpoint, job.echo)

        if backend is None:
            return finish(lambda on_step, stop: run_p2p_mpi(
                job, HostSpace(), list(opts.sizes), schedule=Schedule(iterations=opts.iters, warmup=opts.warmup),
                verify=opts.verify, progress=session.progress, checkpoint=on_step, stop=stop), job.size)
        be = backend
        local = _local_gpu(job, be, environ) if job.size > 1 else None
        peers = make_peers(job, be, None, local_gpu=local)
        try:
            return finish(lambda on_step, stop: run_p2p_nccl(
                job, be, peers, list(opts.sizes), iters=opts.iters, warmup=opts.warmup, verify=opts.verify,
                progress=session.progress, checkpoint=on_step, stop=stop), nccl_ranks(job, peers))
        finally:
            be.destroy(peers)

    return _bcast_code(job, inner)


__all__ = ["MpiOptions", "NcclOptions", "P2POptions", "Session", "StencilOptions", "bench_mpi", "bench_nccl",
           "bench_p2p", "bench_stencil", "job_context", "progress_line"]
