"""Halo-exchange microbenchmark: what a rank → GPU mapping buys in a real neighbour exchange.

One NCCL rank per GPU on a process grid (ranks row-major, last dimension fastest, as
``MPI_Cart_create`` numbers them). The halos are ``linkscope.traffic.synthetic.stencil``'s traffic
matrix: each exchange every rank sends one message to each neighbour carrying its halos to that
neighbour, and receives one from it, all as one NCCL group of ``ncclSend``/``ncclRecv`` (the way halo codes on NCCL do it).
Halo sizes are swept (1 KiB … 16 MiB by default); each size is timed over ``iters`` exchanges between CUDA events
(``bench stencil`` captures them as CUDA graphs of ``--cuda-graph`` exchanges, 20 by default, so a small halo's time
is NCCL's and the links', not Python's launch of 2 x neighbours calls per GPU), ``runs`` times (4), on each of
``comm_sets`` sets of communicators (3), and the mean and standard deviation of the time per exchange over all of them
are reported. The sets are made one after another, the mappings interleaved (default, auto, default, auto, ...):
NCCL's time for a small operation drifts over seconds (``COMM_SETS``), so one set per mapping, timed in one
window, reads that drift as a gain or a loss. Every mapping is warmed alike before it is timed: its exchange at the largest
size runs for ``MAPPING_WARMUP_S`` of device time (then ``warmup`` exchanges before each size), so the first-timed
mapping does not pay for leaving an idle machine. ``--weighted`` gives axis k halos of ``size / 2**k`` (an elongated
subdomain), so the axes' traffic differs and a mapping has something to optimise.

Mappings: ``default`` puts rank r on the r-th GPU; ``auto`` asks ``linkscope.mapping`` for the
mapping minimising the stencil's traffic cost on the fabric (``mapping.api.map_traffic`` with the
topology's bandwidth costs, or, with emulated slow pairs, costs predicted by the collective model); ``FILE`` reads ``gpu_of_rank`` from a
``linkscope map`` output. With a mapping other than default, both are measured in one run and the
gain ``(t_default - t_mapping) / t_default`` is reported per size. On a uniform NVSwitch node all
mappings are equivalent: the gain is ≈ 0 and said so.

Emulated heterogeneous fabric (single process only): ``emulate_slow_pairs`` lists GPU pairs whose
halo messages go through host memory (D2H copy on the sender's stream, then H2D on the receiver's
stream after an event) instead of NCCL; the auto mapping is told those pairs are slow. Results
from this mode are labelled ``emulated``. Note: staged copies run after the NCCL group on the same
streams, so they are not overlapped with the NVLink traffic (that only makes slow pairs slower).
"""
from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UserError
from ..measure.sweep import StopSignal, boundaries, interrupted
from ..traffic.synthetic import balanced_grid, stencil
from ..units import format_size
from .launch import Job, agree, require
from .nccl import bound_group, graph_launches, time_op, try_graph
from .nccl_backend import Peer, moves_data

DEFAULT_SIZES = tuple(1024 * 4**k for k in range(8))  # 1 KiB … 16 MiB

#: Device time (s) each mapping's exchange runs, at the largest size, before that mapping is timed. Why: the
#: mappings are timed one after the other, and only the first followed an idle machine: on 2 x H200 with
#: --emulate-slow-pairs 0-1, default and auto were the same mapping ([0, 1]) yet the first-timed one read
#: 63.4 us at 64 KiB and the second 46.5 (docs/runs/h200x2-2026-11-28/call2/linkscope/stencil_slow.*), with
#: the 5 warm-up exchanges per size (~0.3 ms) as the only warm-up. A fixed device time, the same for every
#: mapping, puts each one in the same state as the others when its timing starts (clocks and links out of
#: their idle states, host staging buffers touched, NCCL connections made). The value is a choice, not a fit:
#: long against the millisecond-scale power-state changes, short against a run (2 mappings: 0.2 s).
MAPPING_WARMUP_S = 0.1

#: Sets of communicators each mapping is timed on, made in turn with the mappings interleaved. Why: the host cost of
#: a small eager NCCL operation drifts in time on the machines measured (steady for ~0.1 s, up to a third apart
#: after a pause of 0.3 s, also for a bare cudaMemcpyAsync with no NCCL: docs/runs/h200x1-2026-11-29b calls 2-3);
#: on 2 x H200 ~13 or ~18.5 us per 2-GPU allreduce or sendrecv at 8 B-32 KiB, eight sets made one after another
#: in one process reading 13.4 18.1 13.6 19.8 16.7 17.3 12.8 18.5 (docs/runs/h200x2-2026-11-28c/call6, drv.c).
#: Each mapping was timed on one set in one window, so two identical mappings read 63.4 vs 46.5 us and then
#: +30.6% apart at 64 KiB (docs/runs/h200x2-2026-11-28 and -28b, call 2). With several sets per mapping, made
#: in turn and interleaved, each mapping samples several windows and the drift lands in the spread (and in the
#: gain verdict's noise) instead of in the mean of one mapping. 3 is a choice: the fewest that give a spread;
#: --comm-sets sets it.
COMM_SETS = 3


@dataclass(frozen=True)
class Message:
    """One halo message of one exchange: ``src`` sends ``count`` float32 to ``dst``.

    ``send_offset``/``recv_offset`` place it in the sender's send buffer and receiver's receive
    buffer (elements)."""

    src: int
    dst: int
    count: int
    send_offset: int = 0
    recv_offset: int = 0


def axis_weights(dims: int, weighted: bool) -> tuple[float, ...]:
    return tuple(1.0 / 2**k for k in range(dims)) if weighted else (1.0,) * dims


def traffic_matrix(grid: Sequence[int], periodic: bool, size_bytes: int, weighted: bool) -> Any:
    """The stencil's TrafficMatrix (``traffic.synthetic.stencil``): what is exchanged and what the
    mapper optimises are the same numbers."""
    return stencil(tuple(grid), periodic, size_bytes, axis_weights(len(grid), weighted) if weighted else None)


def halo_messages(grid: Sequence[int], periodic: bool, size_bytes: int, weighted: bool = False) -> list[Message]:
    """Every message of one exchange: one per (rank, neighbour) of the stencil's traffic matrix,
    carrying what that rank sends to it (its halos along every axis that reaches that neighbour)."""
    sent = traffic_matrix(grid, periodic, size_bytes, weighted).offdiagonal_bytes()
    send_pos: dict[int, int] = {}
    recv_pos: dict[int, int] = {}
    msgs: list[Message] = []
    for src, dst in zip(*np.nonzero(sent)):
        src, dst = int(src), int(dst)
        count = max(1, int(sent[src, dst]) // 4)
        so, ro = send_pos.get(src, 0), recv_pos.get(dst, 0)
        send_pos[src], recv_pos[dst] = so + count, ro + count
        msgs.append(Message(src, dst, count, so, ro))
    return msgs


def parse_slow_pairs(text: str | None) -> tuple[tuple[int, int], ...]:
    """``"0-1,2-3"`` → ((0, 1), (2, 3))."""
    if not text:
        return ()
    pairs = []
    for part in text.split(","):
        a, sep, b = part.strip().partition("-")
        if not sep or not (a.strip().isascii() and a.strip().isdigit() and b.strip().isascii() and b.strip().isdigit()) \
                or a.strip() == b.strip():
            raise UserError(f"bad GPU pair {part.strip()!r} in --emulate-slow-pairs",
                            hint="use distinct GPU indices like 0-1,2-3")
        pairs.append((int(a), int(b)))
    return tuple(pairs)


def choose_mapping(
    mapping: str,
    grid: Sequence[int],
    periodic: bool,
    weighted: bool,
    gpus: int,
    *,
    topology: Any = None,
    slow_pairs: Sequence[tuple[int, int]] = (),
    size_bytes: int = 1 << 20,
) -> tuple[tuple[int, ...], dict[str, Any]]:
    """(gpu_of_rank, info) for ``default``, ``auto`` or a mapping FILE. GPU numbers are indices into
    the GPUs the benchmark uses (0..gpus-1)."""
    ranks = int(np.prod(grid))
    if mapping == "default":
        return tuple(range(ranks)), {"mapping": "default"}
    if mapping == "auto":
        from ..mapping.api import map_traffic
        from ..mapping.cost import predictor_cost, topology_cost

        traffic = traffic_matrix(grid, periodic, size_bytes, weighted)
        if topology is not None and topology.gpu_count != gpus:
            raise UserError(f"the topology has {topology.gpu_count} GPUs but the benchmark uses {gpus}")
        if slow_pairs:
            cost = predictor_cost(gpus, "bandwidth", _pair_time(topology, gpus, slow_pairs))
            source = (f"fabric model of {topology.name if topology is not None else 'a uniform NVSwitch node'}"
                      " + emulated slow pairs " + ",".join(f"{a}-{b}" for a, b in slow_pairs))
        elif topology is not None:
            cost = topology_cost(topology, "bandwidth")
            source = cost.source
        else:
            cost = predictor_cost(gpus, "bandwidth", _pair_time(None, gpus, ()))
            source = "uniform (no topology given)"
        assignment = map_traffic(traffic, cost, topology if not slow_pairs else None)
        info = {"mapping": "auto", "cost_us": assignment.cost, "default_cost_us": assignment.default_cost,
                "solver": assignment.solver, "optimal": assignment.optimal, "cost_source": source,
                "notes": list(assignment.notes)}
        return tuple(assignment.gpu_of_rank), info
    from ..mapping.assignment import load_assignment

    assignment = load_assignment(mapping)
    gpu_of_rank = tuple(int(g) for g in assignment.gpu_of_rank)
    if len(gpu_of_rank) != ranks:
        raise UserError(f"mapping {mapping} places {len(gpu_of_rank)} ranks but the grid has {ranks}")
    if sorted(gpu_of_rank) != sorted(set(gpu_of_rank)) or max(gpu_of_rank) >= gpus:
        raise UserError(f"mapping {mapping} must put each rank on a distinct GPU in 0..{gpus - 1}, got {gpu_of_rank}")
    return gpu_of_rank, {"mapping": str(mapping), "solver": assignment.solver}


def _pair_time(topology: Any, gpus: int, slow_pairs: Sequence[tuple[int, int]]) -> Callable[[int, int, int], float]:
    """Seconds for one message between two of the benchmark's GPUs, from the collective model of
    ``topology`` (None: a uniform NVSwitch node of ``gpus`` GPUs); an emulated slow pair goes through
    pinned host memory, as the benchmark stages it."""
    from ..model.collectives import NO_PEER_METHOD, CollectiveModel
    from ..topology.synthetic import synthetic_topology

    model = CollectiveModel.of(topology if topology is not None else synthetic_topology(f"nvswitch:{gpus}"))
    slow = {frozenset(p) for p in slow_pairs}

    def seconds(a: int, b: int, size_bytes: int) -> float:
        method = NO_PEER_METHOD if frozenset((a, b)) in slow else None
        return model.launch_us * 1e-6 + model.flows_time_s([(a, b, size_bytes)], method=method)

    return seconds


@dataclass(frozen=True)
class StencilRow:
    """One mapping at one halo size: time per exchange over ``runs`` runs on each of ``sets`` communicator
    sets (µs; ``runs_us`` in the order they ran, set after set)."""

    mapping: str
    size_bytes: int
    mean_us: float
    stddev_us: float
    runs_us: tuple[float, ...]
    exchange_bytes: int
    wrong: int | None
    sets: int = 1
    graph: bool = False  # timed as launches of CUDA graphs of exchanges (False: each exchange launched eagerly)


@dataclass(frozen=True)
class StencilResult:
    grid: tuple[int, ...]
    periodic: bool
    weighted: bool
    gpu_of_rank: dict[str, tuple[int, ...]]
    rows: tuple[StencilRow, ...]
    emulated_slow_pairs: tuple[tuple[int, int], ...]
    mapping_info: dict[str, Any]
    simulated: bool = False
    notes: tuple[str, ...] = field(default=())

    def gains(self, mapping: str) -> list[tuple[int, float]]:
        """(size, relative time saved by ``mapping`` versus default) per size."""
        out = []
        for size in sorted({r.size_bytes for r in self.rows}):
            d = next((r for r in self.rows if r.size_bytes == size and r.mapping == "default"), None)
            m = next((r for r in self.rows if r.size_bytes == size and r.mapping == mapping), None)
            if d and m and d.mean_us > 0:
                out.append((size, (d.mean_us - m.mean_us) / d.mean_us))
        return out


class _Exchange:
    """Buffers and launch of one exchange for the local peers under one mapping."""

    def __init__(self, backend: Any, peers: Sequence[Peer], msgs: Sequence[Message], device_of_rank: Sequence[int],
                 slow: set[frozenset[int]]) -> None:
        self.backend, self.peers = backend, list(peers)
        self.by_rank = {p.rank: p for p in peers}
        self.msgs = list(msgs)
        self.slow_msgs = [m for m in msgs if frozenset((device_of_rank[m.src], device_of_rank[m.dst])) in slow]
        self.nccl_msgs = [m for m in msgs if m not in self.slow_msgs]
        send_total = {r: sum(m.count for m in msgs if m.src == r) for r in self.by_rank}
        recv_total = {r: sum(m.count for m in msgs if m.dst == r) for r in self.by_rank}
        self.max_count = max([*send_total.values(), *recv_total.values(), 0])
        self.send = {r: backend.alloc(p, send_total[r]) for r, p in self.by_rank.items()}
        self.recv = {r: backend.alloc(p, recv_total[r]) for r, p in self.by_rank.items()}
        # the group's calls, their views cut and bound once (as bench nccl's), and the staged copies' arguments
        # (views, pinned host buffer, event) made once: an eager exchange costs the library's calls and the copies,
        # not a CuPy view and a Python call per halo
        self._staged = [(self.by_rank[m.src], self.send[m.src][m.send_offset:m.send_offset + m.count],
                         backend.pinned(m.count), self.by_rank[m.dst],
                         self.recv[m.dst][m.recv_offset:m.recv_offset + m.count], m.count,
                         backend.new_event(self.by_rank[m.src])) for m in self.slow_msgs]
        group: list[tuple[str, tuple]] = []
        for m in self.nccl_msgs:
            if m.src in self.by_rank:
                view = self.send[m.src][m.send_offset:m.send_offset + m.count]
                group.append(("send", (self.by_rank[m.src], view, m.count, m.dst)))
            if m.dst in self.by_rank:
                view = self.recv[m.dst][m.recv_offset:m.recv_offset + m.count]
                group.append(("recv", (self.by_rank[m.dst], view, m.count, m.src)))
        self._group = bound_group(backend, group)

    def launch(self) -> None:
        self._group()
        for args in self._staged:
            self.backend.staged_copy(*args)

    def check(self) -> int:
        """Send buffers carry (rank, position) codes; after one exchange every halo must match."""
        b, xp = self.backend, self.backend.xp
        for r, p in self.by_rank.items():
            with b.on(p):
                n = int(self.send[r].size)
                self.send[r][:] = (xp.arange(n, dtype=xp.int64) % 1021 + 1024 * (r + 1)).astype(xp.float32)
                self.recv[r][:] = -1.0
        b.sync(self.peers)
        self.launch()
        b.sync(self.peers)
        wrong = 0
        for m in self.msgs:
            if m.dst not in self.by_rank:
                continue
            with b.on(self.by_rank[m.dst]):
                idx = xp.arange(m.send_offset, m.send_offset + m.count, dtype=xp.int64)
                want = (idx % 1021 + 1024 * (m.src + 1)).astype(xp.float32)
                got = self.recv[m.dst][m.recv_offset:m.recv_offset + m.count]
                wrong += int(xp.count_nonzero(got != want))
        return wrong


def stencil_peers(job: Job, backend: Any, devices: Sequence[int]) -> Callable[[Sequence[int]], list[Peer]]:
    """``make_peers(device_of_rank)`` for ``run_stencil``: one process drives every rank's GPU
    (``devices[device_of_rank[r]]``), or each MPI rank its own, with rank 0's unique id broadcast."""
    devs = list(devices)

    def make(device_of_rank: Sequence[int]) -> list[Peer]:
        if job.size == 1:
            return backend.init_all([devs[i] for i in device_of_rank])
        uid = backend.unique_id() if job.rank == 0 else None
        uid = job.comm.bcast(uid, root=0)
        return [backend.init_rank(job.size, uid, job.rank, devs[device_of_rank[job.rank]] % len(devs))]

    return make


def run_stencil(
    job: Job,
    backend: Any,
    make_peers: Callable[[Sequence[int]], list[Peer]],
    grid: Sequence[int],
    mappings: dict[str, tuple[int, ...]],
    *,
    periodic: bool = False,
    weighted: bool = False,
    sizes: Sequence[int] = DEFAULT_SIZES,
    iters: int = 50,
    warmup: int = 5,
    runs: int = 4,
    verify: bool = True,
    slow_pairs: Sequence[tuple[int, int]] = (),
    mapping_info: dict[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[StencilResult], None] | None = None,
    stop: StopSignal | None = None,
    comm_sets: int = COMM_SETS,
    graph_iters: int = 0,
) -> StencilResult | None:
    """Time the halo exchange under each mapping (``default`` first), on ``comm_sets`` sets of communicators
    each (the mappings interleaved: ``COMM_SETS``). ``make_peers(device_of_rank)`` creates the NCCL peers this
    process drives for that placement (and is torn down after).

    ``graph_iters`` > 0: each size's exchange is captured ``graph_iters`` times into a CUDA graph per GPU and the
    graphs are launched (``nccl.graph_launches``), so the time is the fabric's and NCCL's, not the host's launches
    (as ``bench nccl --cuda-graph``). Emulated slow pairs stage through host buffers between the GPUs' streams,
    which a per-GPU capture cannot hold: with them every mapping is launched eagerly, and the run says so.

    ``checkpoint`` is called on rank 0 after every finished (mapping, size) with the result so
    far; ``stop`` is checked collectively before each one (an agreed stop or a KeyboardInterrupt
    raises RunInterrupted with the finished rows)."""
    ranks = int(np.prod(grid))
    world = len(next(iter(mappings.values()))) if job.size == 1 else job.size
    require(job, world == ranks,
            f"the process grid {'x'.join(map(str, grid))} has {ranks} ranks but the job has {world} "
            f"({'GPUs' if job.size == 1 else 'MPI ranks'})",
            "give --grid matching the number of GPUs/ranks, or leave it out to pick a balanced grid")
    require(job, not slow_pairs or job.size == 1,
            "--emulate-slow-pairs stages copies between GPUs of one process: run without mpirun")
    require(job, iters >= 1 and runs >= 1 and warmup >= 0 and comm_sets >= 1,
            "iterations, runs and communicator sets must be >= 1")
    slow = {frozenset(p) for p in slow_pairs}
    graph_notes: list[str] = []
    if graph_iters and slow_pairs:
        graph_notes.append("emulated slow pairs stage through host memory between the GPUs' streams, which CUDA graphs "
                           "captured per GPU cannot hold: every mapping launched eagerly")
        graph_iters = 0
    graph_of: dict[tuple[str, int], bool] = {}
    samples_of: dict[tuple[str, int], list[float]] = {}  # (mapping, size) -> every run, set after set (runs a set)
    wrong_of: dict[tuple[str, int], int | None] = {}
    bytes_of: dict[int, int] = {}
    warmed: dict[str, list[int]] = {}

    def result_so_far() -> StencilResult:
        rows = []
        for (name, size), samples in samples_of.items():
            mean = float(np.mean(samples))
            std = float(np.std(samples, ddof=1)) if len(samples) > 1 else 0.0
            rows.append(StencilRow(name, size, mean, std, tuple(samples), bytes_of[size], wrong_of[(name, size)],
                                   len(samples) // runs, graph_of[(name, size)]))
        out_notes = [f"mapping {name} warmed with {', '.join(map(str, counts))} exchanges of {format_size(max(sizes))} "
                     f"(>= {MAPPING_WARMUP_S * 1e3:.0f} ms{' simulated' if backend.simulated else ''} each time) before "
                     f"it was timed on each of its {len(counts)} communicator set{'s' if len(counts) > 1 else ''}"
                     for name, counts in warmed.items()]
        if comm_sets > 1:
            out_notes.append(f"each mapping timed on {comm_sets} sets of communicators, made in turn with the mappings "
                             "interleaved: NCCL's time for small operations is fixed when a set is made")
        out_notes.extend(dict.fromkeys(graph_notes))
        if len({g for g in graph_of.values()}) > 1:
            out_notes.append("rows differ in launch mode (CUDA graphs where capture worked, eager elsewhere): "
                             "compare mappings only at sizes launched alike")
        if len(mappings) > 1 and all(mappings["default"] == m for m in mappings.values()):
            out_notes.append("the chosen mapping equals the default: gain is 0 by construction")
        return StencilResult(tuple(grid), periodic, weighted, dict(mappings), tuple(rows), tuple(slow_pairs),
                             dict(mapping_info or {}), bool(backend.simulated), tuple(out_notes))

    try:
        for _set, (name, device_of_rank) in itertools.product(range(comm_sets), mappings.items()):
            peers = make_peers(device_of_rank)
            try:
                big = halo_messages(grid, periodic, max(sizes), weighted)
                need = max(sum(m.count for m in big if m.src == p.rank) + sum(m.count for m in big if m.dst == p.rank)
                           for p in peers) * 4
                free = min(backend.free_bytes(p) for p in peers)
                agree(job, None if need < 0.9 * free else
                      f"halos up to {format_size(max(sizes))} need {format_size(need)} per GPU, "
                      f"{format_size(free)} free")
                warm = _warm_mapping(job, backend, peers, _Exchange(backend, peers, big, device_of_rank, slow),
                                     max(warmup, 1))
                warmed.setdefault(name, []).append(warm)
                for size in boundaries(job, sizes, stop):
                    msgs = halo_messages(grid, periodic, size, weighted)
                    ex = _Exchange(backend, peers, msgs, device_of_rank, slow)
                    for _ in range(warmup):
                        ex.launch()
                    launch, per_launch, graph_used = ex.launch, 1, False
                    if graph_iters:
                        graph_used, launch, per_launch = try_graph(job, backend, peers, ex.launch, graph_iters,
                                                                   graph_notes)
                    samples = []
                    for _ in range(runs):
                        job.comm.Barrier()
                        t = time_op(backend, peers, launch, graph_launches(iters, per_launch)) / per_launch
                        if job.size > 1:
                            t = max(job.comm.allgather(t))
                        samples.append(t * 1e6)
                    wrong = ex.check() if verify and moves_data(backend, ex.max_count) else None
                    if wrong is not None and job.size > 1:
                        wrong = job.comm.allreduce(wrong)
                    key = (name, size)
                    graph_of[key] = graph_of.get(key, graph_used) and graph_used
                    samples_of.setdefault(key, []).extend(samples)
                    before = wrong_of.get(key)
                    wrong_of[key] = wrong if before is None else before + (wrong or 0)
                    bytes_of[size] = sum(m.count for m in msgs) * 4
                    del ex, launch
                    if job.rank == 0:
                        if checkpoint:
                            checkpoint(result_so_far())
                        if progress:
                            progress(f"stencil {name} {format_size(size)} (communicator set "
                                     f"{len(samples_of[key]) // runs}): {np.mean(samples):.1f} ± "
                                     f"{np.std(samples, ddof=1) if len(samples) > 1 else 0.0:.1f} us")
            finally:
                backend.destroy(peers)
    except KeyboardInterrupt as exc:
        raise interrupted(job, exc, result_so_far) from None
    if job.rank != 0:
        return None
    return result_so_far()


def _warm_mapping(job: Job, backend: Any, peers: Sequence[Peer], ex: _Exchange, block: int) -> int:
    """Run ``ex`` in blocks of ``block`` exchanges until ``MAPPING_WARMUP_S`` of device time has passed
    (events; the slowest rank's time, so every rank runs the same blocks); returns the exchanges run."""
    done, elapsed_s = 0, 0.0
    while elapsed_s < MAPPING_WARMUP_S:
        t = time_op(backend, peers, ex.launch, block) * block
        if job.size > 1:
            t = max(job.comm.allgather(t))
        done += block
        elapsed_s += t
        if t <= 0:  # a clock that does not move (a fake): one block is all there is to do
            break
        block = min(block * 2, 4096)
    return done


def uniform_gain_note(gains: Sequence[tuple[int, float]], stddev_rel: float) -> str:
    """Plain-language verdict on the gains (≈ 0 when within noise)."""
    if not gains:
        return "no mapping other than default was measured"
    worst = max(abs(g) for _, g in gains)
    mean = sum(g for _, g in gains) / len(gains)
    if worst <= max(0.02, 2 * stddev_rel):
        return f"gain ≈ 0 (|gain| ≤ {worst:.1%}, within run-to-run noise): the fabric treats these GPUs alike"
    return f"mean gain {mean:+.1%} over default (range {min(g for _, g in gains):+.1%} … {max(g for _, g in gains):+.1%})"


def process_grid(job_ranks: int, dims: int, grid_text: str | None) -> tuple[int, ...]:
    if dims not in (2, 3):
        raise UserError(f"--dims {dims} is not valid", hint="valid choices: 2, 3")
    if grid_text:
        from ..traffic.synthetic import parse_grid

        grid = parse_grid(grid_text)
        if len(grid) != dims:
            raise UserError(f"--grid {grid_text} has {len(grid)} dimensions but --dims is {dims}")
        return grid
    return balanced_grid(job_ranks, dims)

