"""Collectives' predicted time: ``CollectiveModel`` times an NCCL-style collective on a topology with the
fabric model (docs/comm.md explains the method).

What each operation is (sizes, bus-bandwidth factor, in-place rule, library call, reference, and the
ring or chain passes the twin times) is the collective descriptor's (``linkscope.collectives``, one row
per operation); this module reads it and never branches on an operation's name. The descriptor's
names are re-exported here for the model's callers.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.sparse import csc_matrix

from ..collectives import (  # noqa: F401 - re-exported: the model's callers read the descriptor through it
    OP_TABLE,
    OPS,
    P2P_OPS,
    CollectiveOp,
    Layout,
    _check_op,
    algbw_gb_per_s,
    busbw_factor,
    busbw_gb_per_s,
    check_values,
    layout,
)
from ..errors import ConfigError
from ..patterns.methods import LOCAL, SM_PUSH, STAGED_PINNED
from ..topology.model import DeviceKind, LinkKind
from ..topology.query import node_labels
from . import kernel, rccl
from . import nccl_trees as nt_trees
from . import nccl_tuning as nt
from .contention import FlowProblem, simulate
from .fits import Context, fits_report
from .params import generation_key, recording
from .predict import FabricModel
from .symmetry import NodeSymmetry, node_symmetry

# ---- predicted time: NCCL's algorithms and protocols on the fabric model ------------------------------
TRANSPORT_METHOD = SM_PUSH.key
"""How NCCL moves bytes between GPUs with peer access: its kernels load and store peer memory (P2P
transport), so a transfer's cap is the model's SM-copy cap."""
NO_PEER_METHOD = STAGED_PINNED.key
"""Between GPUs without peer access NCCL goes through pinned host memory (SHM transport). Its pipeline moves
one FIFO step at a time, buffsize / NCCL_STEPS (512 KiB by default: NCCL v2.28.9 src/transport/shm.cc:178,212
``conn.stepSize = comm->buffSizes[NCCL_PROTO_SIMPLE]/NCCL_STEPS``), so that step is the chunk of its pipeline
fill, not the driver's staging chunk of a cudaMemcpyPeer (2 x H200 with NCCL_P2P_DISABLE=1, allreduce 8 MiB:
25.6 GB/s measured; 17.3 with an 8 MiB fill, 23.8 with one step; docs/runs/h200x2-2026-11-28b/call1/broken)."""
# methods whose one stage has routes, caps and latency that do not depend on its bytes (a peer copy, a copy inside
# one GPU): flows_time_s reuses a problem built for the same pairs; the staged methods' caps and latencies depend on it
_SIZE_FREE_METHODS = frozenset({TRANSPORT_METHOD, LOCAL.key})
_SKELETONS_KEPT = 8  # problems kept per model (a collective's options reuse a handful)
_COMPILED_FROM_FLOWS = 4096  # flows_time_s: distinct flows from which the exact simulation runs compiled
_ARRAYS_FROM_FLOWS = 4096  # flows_time_s: distinct flows from which one-stage problems are built as arrays
ALGORITHMS = nt.ALGOS + ("p2p", "local")
_ELEMENT_BYTES = 4  # bytes per element of ``layout``'s counts (its default dtype, nccl-tests' float)
PAYLOAD_FRACTION = {"LL": 0.5, "LL128": nt.LL128_DATA_FRACTION, "Simple": 1.0}
"""Data carried per byte on the wire: LL sends 8 B of data with 8 B of flags in each 16 B line (device.h,
``union ncclLLFifoLine``); LL128 15 of every 16 8-byte elements (device.h:105-107); Simple only data."""


@dataclass(frozen=True)
class AlgorithmPrediction:
    """One algorithm and protocol's predicted time for one collective at one size.

    Attributes:
        algorithm: NCCL's algorithm (ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, pat),
            p2p (grouped send/recv: alltoall, sendrecv, gather, scatter), or local (one rank).
        time_us: the twin's time: launch floor + NCCL's per-step latency + data time on the fabric.
        algbw_gb_per_s, busbw_gb_per_s: nccl-tests' S / t and algbw x busbw_factor.
        steps: sequential communication steps.
        protocol: LL, LL128 or Simple.
        channels: NCCL channels (CTAs) the call runs on.
        nccl_estimate_us: NCCL's own estimate (its tuner's latency + bytes / bandwidth), None where
            NCCL's tuner does not time the call (grouped send/recv, one rank, non-NVIDIA GPUs).
        basis: ``fabric`` (data time from the fabric model), ``fabric+nccl`` (NVLS: fabric link rate
            times NCCL's NVLS efficiency) or ``nccl-model`` (NCCL's own bandwidth: CollNet, NVLS-tree, PAT).
    """

    algorithm: str
    time_us: float
    algbw_gb_per_s: float
    busbw_gb_per_s: float
    steps: int
    protocol: str = "Simple"
    channels: int = 0
    nccl_estimate_us: float | None = None
    basis: str = "fabric"
    fits: tuple[str, ...] = ()
    outside_scope: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.algorithm}/{self.protocol}"


@dataclass(frozen=True)
class CollectivePrediction:
    """Every algorithm/protocol NCCL would consider for ``op`` on ``gpus`` at ``size_bytes``;
    ``chosen`` is the one NCCL picks (the least of NCCL's own estimates, as its tuner does), timed by
    the twin."""

    op: str
    gpus: tuple[int, ...]
    size_bytes: int
    chosen: AlgorithmPrediction
    algorithms: tuple[AlgorithmPrediction, ...]

    @property
    def time_us(self) -> float:
        return self.chosen.time_us

    def as_dict(self) -> dict[str, object]:
        return {"algorithm": self.chosen.algorithm, "protocol": self.chosen.protocol,
                "channels": self.chosen.channels, "time_us": self.chosen.time_us,
                "nccl_estimate_us": self.chosen.nccl_estimate_us,
                "fits": list(self.chosen.fits), "outside_scope": list(self.chosen.outside_scope),
                "algorithms": {a.key: {"time_us": a.time_us, "algbw_gb_per_s": a.algbw_gb_per_s,
                                       "busbw_gb_per_s": a.busbw_gb_per_s, "steps": a.steps,
                                       "channels": a.channels, "nccl_estimate_us": a.nccl_estimate_us,
                                       "basis": a.basis}
                               for a in self.algorithms}}


Flow = tuple[int, int, float]


def _nccl_func(spec: CollectiveOp) -> str:
    """The NCCL function whose algorithms NCCL's tuner times for ``spec`` (the descriptor's ``nccl_func``)."""
    if spec.nccl_func is None:
        raise ConfigError(f"{spec.name} is grouped send/recv: NCCL's tuner does not time it")
    return spec.nccl_func


def _ring_passes(spec: CollectiveOp, n: int, reduce_step_s: float, copy_step_s: float) -> tuple[int, float]:
    """Steps and seconds of a ring's passes (the descriptor's ``phases``)."""
    return spec.ring_steps(n), spec.ring_time_s(n, reduce_step_s, copy_step_s)

#: How the operations are launched (a run choice of ``CollectiveModel``): from a CUDA graph or one by
#: one from the host.
LAUNCH_MODES = ("graph", "eager")



class CollectiveModel:
    """NCCL collectives timed by the fabric model of one topology, with NCCL's choices.

    NCCL's tuner (``model.nccl_tuning``, from NCCL's source) decides the algorithm, protocol and
    channels; the twin times that choice: every step of the algorithm is a group of concurrent
    GPU-to-GPU flows simulated with max-min contention on the topology's links (``FabricModel``),
    carrying the protocol's wire bytes, capped per flow by the channels' bandwidth, plus NCCL's
    per-step latencies and one launch floor (``nccl_launch_us``). docs/comm.md has the method.

    ``launch`` is a run choice: ``graph`` (the operations replayed from a CUDA graph, nccl-tests
    ``-G``) or ``eager`` (the host launches each one, nccl-tests' default: 20 operations back to back,
    then one wait, common.cu:727-770). Eager, an operation takes max(device + ``nccl_eager_launch_us``,
    host): a small part of every eager launch is not hidden behind the previous operation's kernels
    (2 x H100, eager minus -G 10 on the same FIFOs: 1.24 us, the median of 36 allgather / reduce_scatter
    pairs at 4-128 MiB), while the host's own time per operation is: a run whose host is slower has a
    higher floor at small sizes (19-22 us) that vanishes behind longer kernels (its 4-32 MiB rows equal
    the faster run's).

    The host time is what the one thread that drives the operation's GPUs spends on it: for each GPU it
    drives, NCCL builds that GPU's plan and launches its kernel (ncclGroupEnd walks every communicator of
    the group, group.cc:259-309 doLaunches: one ncclLaunchKernel per communicator, enqueue.cc:1565), so the
    time grows with ``gpus_per_thread`` (a run choice: every rank of the operation when one process
    drives them all, nccl-tests ``-g N`` with one thread and ``bench nccl`` in one process; 1 under
    ``mpirun`` with a GPU per rank). Per GPU: ``nccl_eager_host_per_gpu_us`` for one channel plus
    ``nccl_eager_host_per_gpu_channel_us`` for every channel task beyond the first (NCCL builds each
    channel's work on the host, enqueue.cc:689-725 for a collective; for grouped send/recv one work batch
    per channel of each round, :968-975). ``eager_host_us``, where given, is a run's own one-channel host
    time for the whole operation (a property of the run: the same nccl-tests command ran at 13.9 and
    20.2 us at 8 B on the same machine); it replaces the per-GPU default, the channel term still adds.
    """

    def __init__(self, fabric: FabricModel, env: Mapping[str, str] | None = None, launch: str = "graph", *,
                 eager_host_us: float | None = None, gpus_per_thread: int | None = None) -> None:
        if launch not in LAUNCH_MODES:
            raise ConfigError(f"launch mode {launch!r} is not one of {', '.join(LAUNCH_MODES)}")
        if eager_host_us is not None and not eager_host_us >= 0:
            raise ConfigError(f"the eager host time must be >= 0 us, got {eager_host_us}")
        if gpus_per_thread is not None and not gpus_per_thread >= 1:
            raise ConfigError(f"GPUs driven by one thread must be >= 1, got {gpus_per_thread}")
        self.fabric = fabric
        self.launch = launch
        # the device floor of one operation (as replayed from a CUDA graph)
        self.launch_us = fabric.params["nccl_launch_us"]
        self.eager_host_us = None if eager_host_us is None else float(eager_host_us)
        self.gpus_per_thread = gpus_per_thread
        self.reduce_efficiency = fabric.params["nccl_reduce_efficiency"]
        self.settings = nt.NcclSettings.from_env(env)
        self._systems: dict[tuple[int, ...], nt.NcclSystem | None] = {}
        self._node_of: dict[int | None, object] | None = None  # GPU index -> node label (_across_nodes)
        self._skeletons: dict[tuple, tuple[FlowProblem, np.ndarray]] = {}  # flows_time_s: problems by their pairs
        self._tree_edge_counts: dict[tuple, tuple[dict[tuple[int, int], int], int]] = {}  # _tree_edges by (ranks, channels)

    @classmethod
    def of(cls, topology: object, params: object = None, env: Mapping[str, str] | None = None,
           launch: str = "graph", **run: Any) -> CollectiveModel:
        return cls(FabricModel(topology, params), env, launch, **run)  # type: ignore[arg-type]

    def host_us(self, channel_tasks: int, ranks: int = 2, p2p: bool = False) -> float:
        """Host time of one eager operation over ``ranks`` GPUs whose work spans ``channel_tasks``
        channels per GPU (a grouped send/recv: the channels of each of a rank's rounds, summed), driven
        by one thread for ``gpus_per_thread`` of them (class doc); ``p2p``: a grouped send/recv, whose
        host path per GPU is longer (``nccl_eager_host_p2p_per_gpu_us``; a run's own host time, measured on
        its own op, has it already)."""
        gpus = min(ranks, self.gpus_per_thread) if self.gpus_per_thread is not None else ranks
        p = self.fabric.params
        if self.eager_host_us is None:
            base = gpus * (p["nccl_eager_host_per_gpu_us"] + (p["nccl_eager_host_p2p_per_gpu_us"] if p2p else 0.0))
        else:
            base = self.eager_host_us
        return base + gpus * p["nccl_eager_host_per_gpu_channel_us"] * max(0, channel_tasks - 1)

    def launched_us(self, device_us: float, channel_tasks: int, ranks: int = 2, p2p: bool = False) -> float:
        """Time of one operation as the run launches it: the device time from a CUDA graph; eager, the
        device time plus the launch's unhidden part, or the host's time where that is longer (class doc)."""
        if self.launch == "graph":
            return device_us
        return max(device_us + self.fabric.params["nccl_eager_launch_us"], self.host_us(channel_tasks, ranks, p2p))

    def registers(self, op: str | None, algorithm: str, protocol: str, ranks: Sequence[int]) -> bool:
        """Whether NCCL runs ``op`` on the user's buffers instead of its intermediate FIFOs. Only when
        launched from a CUDA graph: NCCL registers the buffers it captures (NCCL_GRAPH_REGISTER, default 1,
        enqueue.cc:258; coll_reg.cc:321-322, ``planner.persistent``), when every peer is reached by P2P
        (``isAllDirectP2p``, coll_reg.cc:320) and with Simple (coll_reg.cc:181). Ring: allgather,
        broadcast and out-of-place allreduce (nccl-tests' reported column); not reduce_scatter, reduce or
        an in-place allreduce (coll_reg.cc:183-184). Grouped send/recv: Simple sends to another GPU over P2P
        (enqueue.cc:874-888; ``op`` None: any grouped send/recv); the descriptor's ``ends_with_copy`` says
        which. Trees (coll_reg.cc:185) are not modelled as
        registered."""
        if self.launch != "graph" or not self.settings.graph_register or protocol != "Simple":
            return False
        system = self.nccl_system(list(ranks))
        if system is None or system.n_nodes != 1:
            return False
        if any(self.fabric.peer_access(a, b) is not None for a in ranks for b in ranks if a != b):
            return False
        if algorithm == "p2p":
            return op is None or OP_TABLE[op].grouped
        return algorithm == "ring" and op is not None and OP_TABLE[op].ends_with_copy

    def method(self, src: int, dst: int) -> str:
        """The transport between two GPUs: ``local`` inside one, P2P where peer access exists, else host."""
        if src == dst:
            return "local"
        return TRANSPORT_METHOD if self.fabric.peer_access(src, dst) is None else NO_PEER_METHOD

    def flows_time_s(self, flows: Sequence[Flow], *, reduce: bool = False, method: str | None = None,
                     cap_gb_per_s: float | Sequence[float] = float("inf"), wire: float = 1.0) -> float:
        """Seconds until the last of concurrent flows (src GPU, dst GPU, bytes) ends: route latency
        plus bytes at the max-min fair rate (no per-call overhead: the launch is counted once per
        operation). ``reduce``: the receiver reduces what arrives (bytes / nccl_reduce_efficiency);
        ``wire``: bytes on the wire per payload byte (the protocol); ``cap_gb_per_s``: a per-flow
        wire-rate cap (the channels' bandwidth) on flows between two GPUs, one for all or one per flow.

        Identical flows (same ends, bytes and cap: the channels' rings of a cluster repeat the same
        GPU pairs) are simulated as one flow that weighs its count on every resource it crosses. That
        is exact: max-min rates are unique, so identical flows get equal rates and use count x rate of
        each shared resource, and they finish together (``_flow_classes``)."""
        if not flows:
            return 0.0
        per_flow = np.broadcast_to(np.asarray(cap_gb_per_s, dtype=float), (len(flows),))
        classes, counts = _flow_classes(flows, per_flow)
        return self._classes_time_s(classes, counts, reduce=reduce, method=method, wire=wire)

    def _classes_time_s(self, classes: list[tuple[int, int, float, float]], counts: list[int], *, reduce: bool = False,
                        method: str | None = None, wire: float = 1.0,
                        fold: tuple[np.ndarray, np.ndarray] | None = None) -> float:
        """``flows_time_s`` of distinct flows (src, dst, bytes, cap), each standing for ``counts`` identical ones.
        ``fold``: (canonical resource, weight scale) of ``NodeSymmetry.fold``: each flow stands for its orbit
        under a permutation of the nodes, the problem's rows folded onto the canonical resources."""
        hows = [method if method is not None and src != dst else self.method(src, dst) for src, dst, _, _ in classes]
        sizes = [float(nbytes) * (wire if src != dst else 1.0) / (self.reduce_efficiency if reduce else 1.0)
                 for src, dst, nbytes, _ in classes]
        # the same pairs again (another protocol, the reducing and the copying steps of one ring): the routes,
        # caps and latencies of single-stage methods do not depend on the bytes, only the bytes change
        key = tuple(zip([(a, b) for a, b, _, _ in classes], hows, counts)) \
            if fold is None and all(h in _SIZE_FREE_METHODS for h in hows) else None
        known = self._skeletons.get(key) if key is not None else None
        if known is None:
            found = self._one_stage_problem(classes, hows, sizes, counts) if len(classes) >= _ARRAYS_FROM_FLOWS else None
            if found is None:
                self.fabric.prefetch_routes([(a, b) for a, b, _, _ in classes])  # a cluster's pairs in one pass (scaling only)
                stages = []
                for (src, dst, _, _), how, size, count in zip(classes, hows, sizes, counts):
                    flow = self.fabric.stages(src, dst, round(size), how,
                                              self.settings.buffsize // nt.NCCL_STEPS if how == NO_PEER_METHOD else None)
                    if how == TRANSPORT_METHOD and self._across_nodes(src, dst):
                        flow = [self._net_stage(st) for st in flow]
                    if count > 1:
                        flow = [replace(s, weights=s.weights * count) for s in flow]
                    stages.append(flow)
                problem = self.fabric._problem(stages)
            else:
                problem = found
            overhead = np.array([self.fabric.params.overhead_us(how) * 1e-6 for how in hows])
            if key is not None:
                if len(self._skeletons) >= _SKELETONS_KEPT:
                    self._skeletons.clear()
                self._skeletons[key] = (problem, overhead)
        else:
            problem, overhead = known
            problem = replace(problem, stage_bytes=np.array([float(round(x)) for x in sizes]))
        if fold is not None:  # rows onto their orbits' canonical resources, weighted by what the orbit carries
            canon, scale = fold
            A = problem.A
            folded = csc_matrix((A.data * scale[A.indices], canon[A.indices], A.indptr), shape=A.shape)
            folded.sum_duplicates()
            problem = replace(problem, A=folded, capacity_gb_per_s=self.fabric._capacity_for(folded))
        first = problem.flow_first
        latency = problem.stage_latency_s.copy()
        latency[first] = np.maximum(latency[first] - overhead, 0.0)
        caps = problem.stage_cap_gb_per_s
        class_cap = np.array([c for _, _, _, c in classes], dtype=float)
        if np.isfinite(class_cap).any():  # the channels' cap is a link-side figure: a copy inside one GPU is not capped
            flow_cap = np.full(len(caps), np.inf)
            flow_cap[first] = np.where([src != dst for src, dst, _, _ in classes], class_cap, np.inf)
            caps = np.minimum(caps, flow_cap)
        # exact (rtol 0) either way; a cluster's thousands of flows with a handful of distinct finish times run
        # faster in the compiled full re-solve than in the NumPy path's local updates (same answers to rounding)
        engine = "compiled" if len(classes) >= _COMPILED_FROM_FLOWS and kernel.available() else "auto"
        result = simulate(replace(problem, stage_latency_s=latency, stage_cap_gb_per_s=caps), engine=engine)
        return float(np.max(result.finish_s))

    def _one_stage_problem(self, classes: list[tuple[int, int, float, float]], hows: list[str], sizes: list[float],
                           counts: list[int]) -> FlowProblem | None:
        """``flows_time_s``'s problem built with array operations (``FabricModel.one_stage_arrays``) where every
        flow is one stage (a peer copy over one route, or a copy inside a GPU): the same problem the loop over
        ``stages`` builds, number for number (tests/model/test_scale_structures.py), without a Python object
        per flow. None where some flow is not (the caller's loop handles it)."""
        if any(size < 0 for size in sizes):
            return None
        src = [a for a, _, _, _ in classes]
        dst = [b for _, b, _, _ in classes]
        arrays = self.fabric.one_stage_arrays(src, dst, hows)
        if arrays is None:
            return None
        cap = arrays.cap_gb_per_s.copy()
        net = np.array([how == TRANSPORT_METHOD and self._across_nodes(a, b) for a, b, how in zip(src, dst, hows)], dtype=bool)
        if net.any():  # _net_stage: the narrowest resource the stage uses (weight > 0) caps it
            starts = arrays.indptr[:-1]
            used = arrays.weights > 0
            narrowest = np.minimum.reduceat(np.where(used, self.fabric.capacity[arrays.indices], np.inf), starts)
            has_used = np.add.reduceat(used.astype(np.int64), starts) > 0
            cap[net & has_used] = narrowest[net & has_used]
        return self.fabric.one_stage_problem(arrays, np.array([float(round(x)) for x in sizes]), cap_gb_per_s=cap,
                                             weight_scale=np.asarray(counts, dtype=float))

    def _across_nodes(self, src: int, dst: int) -> bool:
        """Whether GPUs ``src`` and ``dst`` (indices) sit in different nodes of the topology."""
        if self._node_of is None:
            labels = node_labels(self.fabric.topology)
            index = {d.id: k for k, d in enumerate(self.fabric.topology.devices)}
            self._node_of = {g.index: labels[index[g.id]] for g in self.fabric.topology.gpus}
        return self._node_of.get(src) != self._node_of.get(dst)

    def _net_stage(self, stage: Any) -> Any:
        """A stage of a transfer between nodes as NCCL's net transport moves it: the sender's SMs store into
        a FIFO in their own GPU's memory and the NIC's DMA engine carries it to the receiver's (GPUDirect
        RDMA: net_ib.cc ncclIbIsend posts an RDMA write of the FIFO slot, the proxy drives it; net.cc
        sendProxyProgress). No SM store crosses the network, so the SM copy's share of a link
        (``method_efficiency.sm-push``) and the peer copy's PCIe transit factors do not bound it: it runs at
        its route's bottleneck (a NIC: line rate x ``link_efficiency.network``), as the maintainers' 24 GB/s
        per 200 Gb/s NIC and 46-48 per 400 Gb/s (nccl-tests#119, #290) say."""
        used = stage.resources[np.asarray(stage.weights) > 0]
        cap = float(self.fabric.capacity[used].min()) if used.size else stage.cap_gb_per_s
        return replace(stage, cap_gb_per_s=cap)

    def _route_latency_s(self, flows: Sequence[tuple[int, int]]) -> float:
        return self.flows_time_s([(a, b, 0) for a, b in flows])

    def _prediction(self, name: str, op: str, n: int, size_bytes: int, time_us: float, steps: int, protocol: str = "Simple",
                    channels: int = 0, estimate: float | None = None, basis: str = "fabric",
                    channel_tasks: int | None = None) -> AlgorithmPrediction:
        """``time_us`` is the device time; the prediction's is the launched time (``launched_us``)."""
        time_us = self.launched_us(time_us, max(1, channels) if channel_tasks is None else channel_tasks, n,
                                   p2p=name == "p2p")
        algbw = size_bytes / (time_us * 1e-6) / 1e9 if size_bytes and time_us > 0 else 0.0
        return AlgorithmPrediction(name, time_us, algbw, algbw * busbw_factor(op, n), steps, protocol, channels,
                                   estimate, basis)

    # ---- NCCL's view of the ranks ---------------------------------------------------------------------
    def nccl_system(self, ranks: Sequence[int]) -> nt.NcclSystem | None:
        """What NCCL's tuner knows of a communicator over ``ranks`` (None for GPUs NCCL's tuner does
        not describe: other vendors, unknown generations)."""
        key = tuple(ranks)
        if key not in self._systems:
            self._systems[key] = _nccl_system(self.fabric, list(ranks), self.settings)
        return self._systems[key]

    # ---- prediction ----------------------------------------------------------------------------------
    def predict(self, op: str, gpus: Sequence[int], size_bytes: int) -> CollectivePrediction:
        """Predicted time of ``op`` over ranks on ``gpus`` (rank order = ring order) at nccl-tests'
        size S (``layout(...).size_bytes``), with the algorithm and protocol NCCL would choose."""
        _check_op(op)
        spec = OP_TABLE[op]
        ranks = [int(g) for g in gpus]
        n = len(ranks)
        if n < 1:
            raise ConfigError("a collective needs at least one rank")
        if len(set(ranks)) != n:
            raise ConfigError(f"a GPU appears twice among the ranks: {ranks}")
        for g in ranks:
            self.fabric.gpu(g)  # an unknown GPU index is a clear error
        if n == 1:
            copy = self.flows_time_s([(ranks[0], ranks[0], float(size_bytes))]) if spec.one_rank_copy else 0.0
            local = self._prediction("local", op, 1, size_bytes, self.launch_us + copy * 1e6, 0, channels=1)
            return CollectivePrediction(op, tuple(ranks), int(size_bytes), local, (local,))
        system = self.nccl_system(ranks)
        if spec.grouped:
            with recording() as used:
                chosen = self._p2p(op, ranks, int(size_bytes), system)
            chosen = self._with_fits(chosen, used, ranks, system)
            return CollectivePrediction(op, tuple(ranks), int(size_bytes), chosen, (chosen,))
        if system is None:  # not NCCL's tuner: RCCL's rings on AMD GPUs (model.rccl), else one ring / chain
            with recording() as used:
                ring = self._rccl_ring(op, ranks, float(size_bytes))
                if ring is None:
                    ring = self._ring_like(op, ranks, float(size_bytes), "Simple", 0, None, None)
            ring = self._with_fits(ring, used, ranks, system)
            return CollectivePrediction(op, tuple(ranks), int(size_bytes), ring, (ring,))
        tuning = nt.tune(system)
        func = _nccl_func(spec)
        choice = nt.choose(tuning, system, func, int(size_bytes))
        options = []
        for (algo, proto), estimate in choice.estimates_us.items():
            a, p = nt.ALGOS.index(algo), nt.PROTOS.index(proto)
            channels = nt.channels_for(system, func, a, p, int(size_bytes))
            with recording() as used:
                option = self._nccl_algorithm(op, ranks, int(size_bytes), system, tuning, a, p, channels, estimate)
            options.append(self._with_fits(option, used, ranks, system))
        chosen = next(o for o in options if (o.algorithm, o.protocol) == (choice.algorithm, choice.protocol))
        return CollectivePrediction(op, tuple(ranks), int(size_bytes), chosen, tuple(options))

    def _with_fits(self, pred: AlgorithmPrediction, used: set[str], ranks: list[int],
                   system: nt.NcclSystem | None) -> AlgorithmPrediction:
        """``pred`` with the built-in fits it read and a note for each applied outside its scope
        (model/fits.py)."""
        params = self.fabric.params
        fabric = "nvlink" if system is not None and system.intra_hw == nt.HW_NVLINK else "pcie"
        ctx = Context(system.cc if system is not None else None, fabric, len(ranks),
                      system.n_nodes if system is not None else 1, "NCCL" if system is not None else "")
        fits, notes = fits_report(used, ctx, defaults=[k for k in used if params.is_default(k)])
        return replace(pred, fits=fits, outside_scope=notes)

    def _latency_us(self, system: nt.NcclSystem, tuning: nt.Tuning, op: str, a: int, p: int) -> float:
        """The launch floor plus NCCL's latency for the algorithm and protocol without its base part
        (tuning.cc:353-401: per-step hardware latencies; the base latency is a launch cost, which the
        twin takes from the measured ``nccl_launch_us``)."""
        f = nt.FUNCS.index(_nccl_func(OP_TABLE[op]))
        return self.launch_us + max(0.0, tuning.latency_us[f][a][p] - nt.BASE_LATENCY_US[a][p])

    def _nccl_algorithm(self, op: str, ranks: list[int], size_bytes: int, system: nt.NcclSystem, tuning: nt.Tuning,
                        a: int, p: int, channels: int, estimate: float) -> AlgorithmPrediction:
        n = len(ranks)
        algo, proto = nt.ALGOS[a], nt.PROTOS[p]
        lat_us = self._latency_us(system, tuning, op, a, p)
        S = float(size_bytes)
        if a == nt.RING:
            return self._ring_like(op, ranks, S, proto, channels, system, lat_us, estimate)
        if a == nt.TREE:
            return self._tree(op, ranks, S, proto, channels, system, lat_us, estimate)
        if a == nt.NVLS and system.n_nodes == 1:  # across nodes NVLS runs with CollNet: NCCL's bandwidth below
            rate = self._nvls_rate_gb_per_s(ranks, system)
            passes = len(OP_TABLE[op].phases)  # allreduce: a reduce pass, then a copy pass
            # allreduce: every GPU's links carry its whole buffer out (the switch reads it for the heads'
            # multimem reductions) and the whole result in (the heads' multimem stores), and a head also its
            # share of both: S(1 + 1/heads). Heads are the NVLS graph's channels, at most NCCL_MAX_NVLS_ARITY
            # (32, device.h:207; connect.cc:74-89): every GPU up to 32 GPUs, 32 of an NVL72 rack's 72
            # (all_reduce.h:404-460 at v2.28.9-1: only a head's reduce warps run, on its chunk of each loop)
            heads = max(1, min(n, system.nvls.n_channels or n))
            per_link = S * (1.0 + 1.0 / heads) if passes == 2 else S * (n - 1) / n
            t_us = lat_us + per_link / (rate * 1e3)
            if passes == 2 and channels > 0:
                # the pipeline's fill: a loop of every channel moves one chunk per head (a round,
                # nt.nvls_round_bytes); each chunk is handed on twice through NVLS FIFOs, scatter warps to the
                # heads' reduce warps (multimem reduce and store) to the gather warps (all_reduce.h:410-460),
                # so two rounds cross before the pipeline streams, as NVLS-tree's hops each hold one
                t_us += 2 * nt.nvls_round_bytes(system, size_bytes, channels) * (1.0 + 1.0 / heads) / (rate * 1e3)
            return self._prediction(algo, op, n, size_bytes, t_us, passes, proto, channels,
                                    estimate, "fabric+nccl")
        f = nt.FUNCS.index(_nccl_func(OP_TABLE[op]))  # CollNet, NVLS-tree, PAT: NCCL's own bandwidth (not modelled on the fabric)
        bw = tuning.bandwidth[f][a][p]
        t_us = lat_us + S / (1000.0 * bw)
        if a == nt.NVLS_TREE:
            # the pipeline's fill, which NCCL's tuner leaves out (its time is latency + bytes / bandwidth): a
            # chunk reaches the other nodes through the tree's network hops (all_reduce.h:521-620: NVLS reduce,
            # send up, receive, NVLS broadcast; warps handing chunks on through FIFOs), and each hop holds one
            # round of chunks (every channel and head) before the pipeline streams. 2 x HGX H100, 64 MiB: 4
            # rounds of 16 MiB in the whole call, 2 hops: NCCL's 339 us becomes 476 (nccl-tests#309: 466)
            t_us += nt.nvls_tree_net_hops(system) * nt.nvls_tree_round_bytes(system, size_bytes, channels) / (1000.0 * bw)
        return self._prediction(algo, op, n, size_bytes, t_us, 0, proto, channels, estimate, "nccl-model")

    def _caps(self, system: nt.NcclSystem | None, algo: int, proto: str, channels: int,
              link_factor: float = 1.0) -> float:
        """Per-flow payload-rate cap (GB/s) of ``channels`` channels: NCCL's per-channel bandwidth
        for the algorithm and protocol (search.cc graph speed; tuning.cc:304-308 LL and LL128 caps).

        A Simple ring or chain channel gets the least of two rates. The links' share: the ring graph's
        bandwidth (search channels x speed) over the channels the communicator runs (``NcclSystem.n_channels``,
        after NCCL_MIN/MAX_NCHANNELS, connect.cc:490-491), times ``link_factor`` (a loss of the links, such
        as a 2-rank ring's duplex). And what one channel's CTA moves: a ring step and a p2p send are the same
        Simple primitive (prims_simple.h genericOp: the CTA's threads copy a slice from the FIFO or the user
        buffer into the peer's FIFO, then post its tail; ring steps in all_reduce.h runRing, p2p sends in
        sendrecv.h runSend, at v2.28.9-1), so a channel carries at most what a p2p channel carries
        (``_p2p_channel_gb_per_s``: 19.6 GB/s on NV18 Hopper, measured on 2 x H100 sendrecv). NCCL's tuner
        knows neither: its ring bandwidth is the graph's whatever the channel count (tuning.cc:301), so at its
        default channels the links' share (15 GB/s on NV18) is the lesser and nothing changes; capped
        channels (NCCL_MAX_NCHANNELS=2: 180 GB/s of links per channel) run at the CTA's rate. The 2 x H200
        NCCL_MAX_NCHANNELS=2 allreduce (docs/runs/h200x2-2026-11-28b/call1/broken, 20.8 GB/s a channel at
        128-512 MiB) tests it."""
        if system is None or channels <= 0:
            return float("inf")
        ci = system.cc_index
        idx2 = system.n_nodes - 1 if system.n_nodes <= 2 else 2
        ll_max = nt.LL_MAX_BW[ci if system.n_nodes == 1 else (1 if system.amd_cpu else 0)][idx2]
        per_channel = _per_channel_gb_per_s(system)
        if algo == nt.TREE:  # NCCL's tree graph and factors: LL 1/3.8, LL128 7/9 on one node (tuning.cc:306-308)
            graph = system.tree
            tree_channel = graph.n_channels * graph.bw_intra / min(nt.MAXCHANNELS, 2 * system.ring.n_channels)
            tree = channels * min(tree_channel, nt.PER_CH_MAX_TREE_BW[ci][idx2])
            if proto == "LL":
                return min(ll_max, tree / 3.8)
            if proto == "LL128":
                factor = 7.0 / 9.0 if system.n_nodes == 1 else 120.0 / 128.0
                return min(tree * factor, channels * nt.PER_CH_MAX_TREE_LL128_BW[ci][idx2])
            return tree
        if proto == "LL":
            return min(ll_max, channels * per_channel * 0.5)
        if proto == "LL128":
            return channels * nt.PER_CH_MAX_RING_LL128_BW[ci][idx2]
        return channels * self._simple_channel(system, link_factor)[0]

    def _simple_channel(self, system: nt.NcclSystem, link_factor: float = 1.0) -> tuple[float, bool]:
        """(GB/s one Simple ring channel carries, whether its CTA rather than the links bounds it): the
        least of the links' share at the communicator's channel count and a p2p channel's rate (``_caps``)."""
        links = _per_channel_gb_per_s(system, system.n_channels) * link_factor
        cta = self._p2p_channel_gb_per_s(system)
        return min(links, cta), cta < links

    def _p2p_channel_gb_per_s(self, system: nt.NcclSystem) -> float:
        """What one Simple p2p channel (one CTA's send through NCCL's FIFO) carries between GPUs of a node:
        NCCL's per-channel ring bandwidth at its default channels times ``nccl_p2p_channel_factor``."""
        return _per_channel_gb_per_s(system) * self.fabric.params["nccl_p2p_channel_factor"]

    def _thread_gb_per_s(self, proto: str) -> float:
        """Payload one LL / LL128 thread stores per second (GB/s): the protocols' line stores and flag
        polls, not the links, bound them (``nccl_ll_thread_mb_per_s``, ``nccl_ll128_thread_mb_per_s``)."""
        key = "nccl_ll_thread_mb_per_s" if proto == "LL" else "nccl_ll128_thread_mb_per_s"
        return float(self.fabric.params[key]) / 1000.0

    def _fill_s(self, step_s: float, step_bytes: float, slice_bytes: float, channels: int) -> float:
        """Pipeline fill of a chain (broadcast / reduce forwarding hops), a tree or an LL128 ring: each
        channel forwards in slices, so one slice per channel crosses before the pipeline is full (time at
        the step's rate). A Simple ring has none (``_simple_ring_extra_s``)."""
        if step_bytes <= 0 or channels <= 0:
            return 0.0
        return step_s * min(1.0, channels * slice_bytes / step_bytes)

    def _simple_ring_extra_s(self, op: str, ranks: list[int], S: float, channels: int, system: nt.NcclSystem,
                             no_pass: bool) -> float:
        """What a Simple ring (allreduce, allgather, reduce_scatter) adds to its link steps: a fixed time
        per call (``nccl_simple_ring_latency_us``, fitted: the code does not say what it is) and the part
        of the last receive's local pass that the link steps do not hide. ``no_pass``: registered (the pass
        copies nothing), or channels their CTA bounds (``_simple_channel``): the channel's rate, a p2p channel's,
        is what one CTA moves with its receive's copy (a p2p CTA's receive warps copy the FIFO to the output
        while its send warps store), so the pass is in that rate already. Where the links bound the channels,
        the pass is the serial part described below, as measured at NCCL's default channels.

        NCCL splits each rank's share of S over the channels (enqueue.cc:582-640, ``ncclCollCbdPart``) and
        each channel's CTA loops over its part in chunks of stepSize x chunkSteps (the 4 MiB buffer / 8
        steps x 4 = 2 MiB per rank and loop: calcCollChunking, enqueue.cc:1979-2030). In each loop the CTA
        first runs the link steps (all_gather.h:47-67 directCopySend, then directRecvCopyDirectSend for
        n > 2; all_reduce.h:43-71 directSend, directRecvReduce(Copy)DirectSend), then copies (allreduce,
        allgather) or reduces (reduce_scatter) the last arriving chunk into the output (all_gather.h:70-75,
        all_reduce.h:74-80 directRecv; reduce_scatter.h directRecvReduceCopy), one after the other
        (prims_simple.h genericOp). In the first loop every channel does so in lock step, so its local pass
        is not hidden at all; after it the channels drift apart and one channel's local pass overlaps the
        others' link steps: each link step of a loop hides ``nccl_ring_local_hidden_per_step`` of it (at
        most all of it). The pass runs at the ring CTAs' rate, channels x ``nccl_ring_local_cta_gb_per_s``,
        and no faster than a local copy on the fabric.
        """
        n = len(ranks)
        params = self.fabric.params
        extra_s = params["nccl_simple_ring_latency_us"] * 1e-6
        if no_pass:
            return extra_s
        per_gpu = S / n  # what the last receives of all loops write on each GPU
        chunk_bytes = system.settings.buffsize // nt.NCCL_STEPS * nt.ALLREDUCE_CHUNKSTEPS
        first = channels * min(per_gpu / channels, float(chunk_bytes))
        link_steps = OP_TABLE[op].ring_steps(n)
        hidden = min(1.0, link_steps * params["nccl_ring_local_hidden_per_step"])
        unhidden = first + (1.0 - hidden) * (per_gpu - first)
        cta_s = unhidden / (channels * params["nccl_ring_local_cta_gb_per_s"] * 1e9)
        return extra_s + max(cta_s, self.flows_time_s([(g, g, unhidden) for g in ranks]))

    def _ring_like(self, op: str, ranks: list[int], S: float, proto: str, channels: int,
                   system: nt.NcclSystem | None, lat_us: float | None, estimate: float | None = None) -> AlgorithmPrediction:
        """Ring steps (allreduce, allgather, reduce_scatter) or the pipelined chain of broadcast / reduce
        (the descriptor's ``pattern`` and ``phases``)."""
        n = len(ranks)
        spec = OP_TABLE[op]
        wire = 1.0 / PAYLOAD_FRACTION[proto]
        p = nt.PROTOS.index(proto)
        duplex = 1.0
        if (spec.pattern == "ring" and proto == "Simple" and system is not None and channels > 0
                and system.intra_hw == nt.HW_NVLINK and n == 2):
            # two ranks over NVLink: the ring's two directions join the same two GPUs, each copying to the
            # other at once, what nvbandwidth's bidirectional SM copy measures (nccl_ring_duplex_efficiency;
            # measured on NVLink only, so PCIe rings keep the channels' rate). Rings
            # of 4 and 8 GPUs (each sends to one GPU and receives from another) show no such loss: 4 x H200
            # 356.7 GB/s busbw, 8 x H100 330-370 (docs/benchmarks.md), at NCCL's 15 GB/s x 24 channels. A loss of
            # the links: it lowers the links' share of a channel, not what one channel's CTA moves (_caps)
            duplex = self.fabric.params["nccl_ring_duplex_efficiency"]
        cap = self._caps(system, nt.RING, proto, channels, link_factor=duplex)
        if system is not None and channels and proto != "Simple":  # every thread of a ring CTA sends
            cap = min(cap, channels * nt.threads_for(system, _nccl_func(spec), nt.RING, p, int(S)) * self._thread_gb_per_s(proto))
        cap *= wire
        step_bytes = (system.settings.buffsize if system else nt.DEFAULT_BUFFSIZE) // nt.NCCL_STEPS
        fill = 0.0
        if spec.pattern == "ring":
            ring = [(ranks[i], ranks[(i + 1) % n]) for i in range(n)]
            chunk = S / n
            rings = self._node_rings(ranks, system)
            if len(rings) > 1:  # across nodes: the channels' rings leave each node through different NICs
                spread = [(r[i], r[(i + 1) % n]) for r in rings for i in range(n)]
            simple = proto == "Simple" and system is not None and channels > 0
            if len(rings) > 1:
                share = chunk / len(rings)
                red = self.flows_time_s([(a, b, share) for a, b in spread], reduce=True, cap_gb_per_s=cap / len(rings),
                                        wire=wire)
                cpy = self.flows_time_s([(a, b, share) for a, b in spread], cap_gb_per_s=cap / len(rings), wire=wire)
            else:
                red = self.flows_time_s([(a, b, chunk) for a, b in ring], reduce=True, cap_gb_per_s=cap, wire=wire)
                cpy = self.flows_time_s([(a, b, chunk) for a, b in ring], cap_gb_per_s=cap, wire=wire)
            steps, t = _ring_passes(spec, n, red, cpy)
            # The last step of each loop only receives: the channel's CTA copies (allreduce, allgather) or
            # reduces (reduce_scatter) the arriving chunk into the output, a local memory pass that the CTA
            # runs after its sends (all_gather.h / all_reduce.h runRing: ... directRecv last). Over the
            # whole call: S/n bytes on every GPU. Registered (CUDA graph), the peer has written straight into
            # the output: the last receive's source is its destination and genericOp skips the copy
            # (prims_simple.h:251, "skip one copy").
            if proto != "Simple" and system is not None:
                # NCCL's per-step hardware latency (in ``lat_us``, tuning.cc:353-401) is the hop's latency:
                # the fabric's route latency of each step is not added again
                t = max(0.0, t - steps * self._route_latency_s(ring))
            registered = self.registers(op, "ring", proto, ranks)
            if simple and system is not None:
                t += self._simple_ring_extra_s(op, ranks, S, channels, system,
                                               registered or self._simple_channel(system, duplex)[1])
            else:
                local = chunk * (1.0 if spec.ends_with_copy else 1.5)  # a last reduce reads two buffers
                if not registered:
                    t += self.flows_time_s([(g, g, local) for g in ranks])
                if system is not None and channels and proto == "LL128":
                    # a fill with LL128's chunk, one 576000-B step (chunkSteps 1, calcCollChunking). It is
                    # what the 2 x H100 Ring/LL128 rows show (64 MiB 243 GB/s busbw, 1 GiB 299: a ~50 us
                    # offset); the code does not show why (LL128 receivers poll each 128-B line). LL gets
                    # none: every 16-B line carries its own flag and is consumed as it lands (prims_ll.h readLL).
                    real_chunk = min(nt.chunk_payload_bytes(system, nt.RING, p, int(S), channels), -(-S // (channels * n)))
                    fill = self._fill_s(cpy, chunk, real_chunk, channels)
        else:  # broadcast, reduce: a pipelined chain from / to the root
            chain = [(ranks[i], ranks[i + 1]) for i in range(n - 1)]
            if spec.reduces:  # towards the root
                chain = [(b, a) for a, b in reversed(chain)]
            t = self.flows_time_s([(a, b, S) for a, b in chain], reduce=spec.reduces, cap_gb_per_s=cap, wire=wire)
            steps = n - 1
            if proto == "Simple" and channels:  # BROADCAST_SLICESTEPS = 1 step (collectives.h:25-26)
                fill = (n - 2) * self._fill_s(t, S, min(step_bytes, S / channels), channels)
                if system is not None:  # the same Simple kernel's fixed time as the ring's (_simple_ring_extra_s)
                    fill += self.fabric.params["nccl_simple_ring_latency_us"] * 1e-6
            else:
                fill = (n - 2) * self._route_latency_s(chain)
        if lat_us is None:
            lat_us = self.launch_us
        return self._prediction("ring", op, n, int(S), lat_us + (t + fill) * 1e6, steps, proto, channels, estimate)

    def _node_rings(self, ranks: list[int], system: nt.NcclSystem | None) -> list[list[int]]:
        """The rings of a communicator that spans nodes, one per search channel. NCCL's ring channel c takes
        the node's NETs in turn (``nets[(nChannels + i) % netCount]``, search.cc:680 at v2.28.9-1), enters the
        node at a GPU local to that NET (``net.localGpu``, then ncclTopoGetLocal's GPUs, search.cc:726-737) and,
        after the other GPUs, leaves it through the same NET (``NET n -> GPU a -> .. -> GPU x -> NET n``,
        search.cc:762; crossNic 0 keeps the NIC, ncclTopoSearchCheckNet, search.cc:564-570); connectRings
        (connect.cc:94) chains the nodes' rings. So where two GPUs share a NIC (one HDR NIC per GPU pair), the
        ring enters at one and leaves from the other and every NIC carries one channel each way; where a NIC has
        one local GPU, the ring leaves from the GPU before it (the rank order rotated to start at the entry).
        Nodes in rank order; one ring (the rank order) within a node under NCCL; RCCL (AMD GPUs, no NCCL tuner
        system) below."""
        if system is not None and (system.n_nodes <= 1 or system.ring.n_channels <= 1):
            return [ranks]
        if system is None and not all(rccl.is_amd(self.fabric.gpu(r)) for r in ranks):
            return [ranks]
        groups = self._node_groups(ranks)
        if len(groups) <= 1:
            return [ranks]
        if system is not None:
            bases = [[members] for members in groups]
            channels = system.ring.n_channels
        else:
            # RCCL's graph search is NCCL's (search.cc at rocm-6.2.2): a ring channel takes the node's NETs in
            # turn (``nets[(graph->nChannels+i)%netCount]``, :590) and the search keeps adding channels while
            # the NETs have bandwidth left (``net.bw -= bw``, :598-603), so every NIC carries a ring; inside
            # the node a ring follows direct xGMI links (the twin's RCCL rings of that node, model.rccl.rings).
            # One channel per (NIC, node ring), so each NIC carries each of the node's rings once.
            bases = [self._xgmi_orders(members) for members in groups]
            nics = max(len(_nic_order(members, self._nics_by_rank(members))) for members in groups)
            channels = max(1, nics) * max(len(b) for b in bases)
            if channels <= 1:
                return [ranks]
        orders = [self._channel_orders(b, channels) for b in bases]
        return [[r for order in orders for r in order[c]] for c in range(channels)]

    def _node_groups(self, ranks: Sequence[int]) -> list[list[int]]:
        """The ranks of each node, nodes in order of their first rank (NCCL numbers nodes so: init.cc:1099-1108
        at v2.28.9-1), ranks in rank order."""
        labels = node_labels(self.fabric.topology)
        index = {d.id: k for k, d in enumerate(self.fabric.topology.devices)}
        groups: dict[object, list[int]] = {}
        for r in ranks:
            groups.setdefault(labels[index[self.fabric.gpu(r).id]], []).append(r)
        return list(groups.values())

    def _xgmi_orders(self, members: list[int]) -> list[list[int]]:
        """One node's ranks in the orders of the twin's RCCL rings over their direct xGMI links
        (model.rccl.rings), or the rank order where no ring uses direct links only."""
        gpus = [self.fabric.gpu(r) for r in members]
        found, _ = rccl.rings(self._xgmi_arcs(gpus), len(members), rccl.gfx_of(gpus[0]))
        return [[members[k] for k in ring] for ring in found] or [members]

    def _xgmi_arcs(self, gpus: Sequence[Any]) -> set[tuple[int, int]]:
        """The direct xGMI links among ``gpus`` as (i, j) positions in that list, both directions listed (what
        model.rccl reads)."""
        where = {g.id: k for k, g in enumerate(gpus)}
        arcs: set[tuple[int, int]] = set()
        for link in self.fabric.topology.links:
            if link.kind is LinkKind.XGMI and link.a in where and link.b in where and link.a != link.b:
                arcs |= {(where[link.a], where[link.b]), (where[link.b], where[link.a])}
        return arcs

    def _channel_orders(self, bases: list[list[int]], channels: int) -> list[list[int]]:
        """Each ring channel's order of one node's ranks (``_node_rings``): entry GPU first, exit GPU last.
        ``bases``: the node's ring orders, taken in turn once every NIC has carried the previous one."""
        local = self._nics_by_rank(bases[0])
        nics = _nic_order(bases[0], local)
        out = []
        for c in range(channels):
            order, near = _channel_entry(bases[(c // max(1, len(nics))) % len(bases)], local, nics, c)
            if len(near) > 1:  # leave through the same NIC from its other local GPU
                order = [r for r in order if r != near[-1]] + [near[-1]]
            out.append(order)
        return out

    def _nics_by_rank(self, members: Sequence[int]) -> dict[int, list[str]]:
        """The NIC(s) each rank's traffic between nodes takes on the fabric (the router's NIC choice among the
        NICs tied at its best path): the NET a ring or tree channel uses is one of these."""
        return {r: [nic.id for nic in self.fabric.router.nics_of(self.fabric.gpu(r))] for r in members}

    def _rccl_ring(self, op: str, ranks: list[int], S: float) -> AlgorithmPrediction | None:
        """RCCL's ring allreduce / allgather / reduce_scatter on AMD GPUs (model.rccl): the data split
        evenly over RCCL's rings, every ring's step at once on the fabric (its flows share the xGMI links),
        2(n-1) or n-1 steps, Simple. None where RCCL's rings do not apply (not AMD, another op, no ring
        over direct xGMI links)."""
        gpus = [self.fabric.gpu(g) for g in ranks]
        spec = OP_TABLE[op]
        if spec.pattern != "ring" or not all(rccl.is_amd(g) for g in gpus):
            return None
        n = len(ranks)
        arcs = self._xgmi_arcs(gpus)
        gfx = rccl.gfx_of(gpus[0])
        found, channels = rccl.rings(arcs, n, gfx)
        if not found:
            return None
        chunk = S / n / len(found)
        flows = [(ranks[r[k]], ranks[r[(k + 1) % n]], chunk) for r in found for k in range(n)]
        step_lat = rccl.RING_STEP_LATENCY_US.get(rccl.tuning_model(arcs, n, gfx) or -1)
        # RCCL's per-step latency of its tuning model replaces the fabric's route latency per step
        route_s = self._route_latency_s([(a, b) for a, b, _ in flows]) if step_lat else 0.0
        options = []
        for proto in ("Simple", "LL") if step_lat else ("Simple",):
            wire = 1.0 / PAYLOAD_FRACTION[proto]
            red = self.flows_time_s(flows, reduce=True, wire=wire)
            cpy = self.flows_time_s(flows, wire=wire)
            steps, t = _ring_passes(spec, n, red, cpy)
            if step_lat:
                t = max(0.0, t - steps * route_s) + steps * step_lat[proto] * 1e-6
            options.append(self._prediction("ring", op, n, int(S), self.launch_us + t * 1e6, steps, proto, channels,
                                            basis="fabric (RCCL rings)"))
        # RCCL's tuner picks the protocol by its own estimate (latency + size / bandwidth with its per-size correction
        # factors, tuning.cc); the twin takes the faster of its two times, not that estimate
        return min(options, key=lambda o: o.time_us)

    def tree_channels(self, ranks: Sequence[int], system: nt.NcclSystem,
                      channels: int | None = None) -> list[tuple[list[tuple[int, int]], int]]:
        """NCCL's tree channels of a communicator over ``ranks``: each distinct channel's (child rank, parent
        rank) edges and how many of the first ``channels`` run channels (default: all of them) it stands for.
        model/nccl_trees.py has the structure from NCCL's source: a chain per node, a double binary tree over
        the nodes, search channel c running tree 0 and its duplicate c + T tree 1 (connect.cc:147-172 at
        v2.28.9-1; T the tree graph's channels); the run's channels beyond those copy them in turn
        (copyChannels, connect.cc:355-364, 491). One node: every channel is the chain (a tree of one node has
        no links, trees.cc:38-43)."""
        ranks = [int(r) for r in ranks]
        search = max(1, system.tree.n_channels)
        period = max(1, min(2 * search, system.settings.max_channels, nt.MAXCHANNELS))
        run = system.n_channels if channels is None else channels
        counts: dict[tuple[int, int], int] = {}
        for k in range(max(1, run)):
            c = k % period
            key = (c % search, (c // search) % 2 if system.n_nodes > 1 else 0)
            counts[key] = counts.get(key, 0) + 1
        across = system.n_nodes > 1
        nodes = []  # each node's ranks and the NIC(s) each rank's traffic between nodes takes
        for members in self._node_groups(ranks):
            nodes.append((members, self._nics_by_rank(members) if across else {}))
        out = []
        for (c, tree), count in counts.items():
            chains, patterns = zip(*(self._tree_chain(members, local, c, search, across, system.tree_pattern)
                                     for members, local in nodes))
            out.append((nt_trees.channel_tree(chains, tree, patterns), count))
        return out

    def _tree_edges(self, ranks: Sequence[int], system: nt.NcclSystem,
                    channels: int) -> tuple[dict[tuple[int, int], int], int]:
        """``tree_channels`` summed: how many channels use each (child, parent) edge, and the deepest tree's
        hops; made once per (ranks, channels) and read by every protocol's ``_tree``."""
        key = (tuple(int(r) for r in ranks), channels)
        known = self._tree_edge_counts.get(key)
        if known is None:
            counts: dict[tuple[int, int], int] = {}
            hops = 0
            for edges, count in self.tree_channels(ranks, system, channels):
                hops = max(hops, nt_trees.tree_depth(edges))
                for edge in edges:
                    counts[edge] = counts.get(edge, 0) + count
            known = self._tree_edge_counts[key] = (counts, hops)
        return known

    @staticmethod
    def _tree_chain(members: list[int], local: Mapping[int, list[str]], channel: int, search: int,
                    across: bool, pattern: int) -> tuple[list[int], int]:
        """One node's chain for tree search channel ``channel`` and its tree pattern. Across nodes the tree search enters the
        node from a NET at a GPU local to it and chains the other GPUs after it (``NET n -> GPU a -> GPU b -> .. ->
        GPU x``, search.cc:755-769 at v2.28.9-1; NETs taken in turn per channel as the ring's, search.cc:680,
        ``_channel_orders``; ``local``: the NICs of each rank). The balanced tree (NCCL's first try, init.cc:1025)
        also sends from the chain's second GPU to that same NET (search.cc:572, 610-617): where the NET serves two
        of the node's GPUs, they are the chain's first two; where it serves one, a Hopper node takes the plain tree
        (search.cc:1116-1120), which the twin takes for any generation (an older one keeps the balanced tree on a
        farther path to the NIC, not modelled). The pattern is the communicator's, not the channel's: NCCL's search
        settles one pattern for the whole tree graph, so ``pattern`` (``NcclSystem.tree_pattern``, decided once by
        ``_tree_pattern``, which the tuner reads too) is the plain tree on every channel once any NIC serves one GPU
        of its node on Hopper. One node (``search`` channels): the first half of the channels chain
        the GPUs in rank order (the search tries the PCI order first and replays it, search.cc:795-803), the rest
        the other way, once the first direction's links are spent (each GPU the root of half the channels: NCCL
        2.28.9's logged ``Trees`` on 2 x H100, tests/fixtures/nccl/h100x2-2026-11-25, channels 0-5 rooted at rank 0,
        6-11 at rank 1)."""
        if not across:
            return list(members) if channel < -(-search // 2) else members[::-1], nt_trees.BALANCED_TREE
        order, near = _channel_entry(members, local, _nic_order(members, local), channel)
        if len(near) > 1 and pattern == nt_trees.BALANCED_TREE:
            order = [order[0], near[1]] + [r for r in order[1:] if r != near[1]]
            return order, nt_trees.BALANCED_TREE
        return order, nt_trees.TREE

    def _tree(self, op: str, ranks: list[int], S: float, proto: str, channels: int, system: nt.NcclSystem,
              lat_us: float, estimate: float) -> AlgorithmPrediction:
        """NCCL's tree allreduce (``tree_channels``): every channel reduces its share of the data up its tree
        to the root and broadcasts it down, pipelined, up and down at once (all_reduce.h:148-229 runTreeSplit at
        v2.28.9-1: a channel's threads split between the two); every channel's every edge a flow of the
        channel's share, all on the fabric at once."""
        n = len(ranks)
        wire = 1.0 / PAYLOAD_FRACTION[proto]
        p = nt.PROTOS.index(proto)
        nch = max(1, channels)
        share = S / nch  # ncclCollCbdPart: the data split evenly over the call's channels (enqueue.cc:582-640)
        # one channel's rate, each way: the channel's cap (its up and its down flows each run at it)
        cap = self._caps(system, nt.TREE, proto, channels) / nch if channels else float("inf")
        up_cap = down_cap = cap
        if proto != "Simple" and channels:
            # LL / LL128 are bound by the threads that store lines: a non-root rank reduces and sends up
            # with 70% of its CTA's threads, a parent sends down with all of them (all_reduce.h runTreeSplit)
            per_thread = self._thread_gb_per_s(proto)
            up_cap = min(cap, per_thread * nt.tree_up_threads(p))
            down_cap = min(cap, per_thread * nt.TREE_NTHREADS)
        classes: dict[tuple[int, int, float, float], int] = {}
        edge_channels, hops = self._tree_edges(ranks, system, nch)
        for (child, parent), count in edge_channels.items():
            # up (reducing) and down run pipelined at once and share the links: one simulation of both
            for key in ((child, parent, share / self.reduce_efficiency, up_cap * wire),
                        (parent, child, share, down_cap * wire)):
                classes[key] = classes.get(key, 0) + count
        t = self._classes_time_s(list(classes), list(classes.values()), wire=wire) if classes else 0.0
        # as in the ring, the final receive into the output is a local pass after the sends: S/2 per GPU (the
        # heap model's figure, kept: a chain's GPU receives every channel's share into its output as it forwards
        # it, all_reduce.h directRecvCopyDirectSend, and the code does not say how much of that copy is hidden)
        t += self.flows_time_s([(g, g, S / 2.0) for g in ranks])
        if nch >= 2 and proto != "LL" and hops:  # pipeline fill: one chunk (chunkSteps 1) per channel per extra
            # hop (up, then down); LL128's chunk shrinks at small sizes (calcCollChunking); LL has none
            # (see _ring_like)
            step_bytes = nt.chunk_payload_bytes(system, nt.TREE, p, int(S), channels)
            t += (2 * hops - 1) * self._fill_s(t, S, min(step_bytes, share), nch)
        return self._prediction("tree", op, n, int(S), lat_us + t * 1e6, 2 * hops, proto, channels, estimate)

    def _nvls_rate_gb_per_s(self, ranks: list[int], system: nt.NcclSystem) -> float:
        """NVLS per-GPU rate: the GPU's raw NVLink bandwidth to the NVSwitches, at the SM-copy cap
        (``method_efficiency.sm-push``: NVLS moves data with SM multimem loads and stores), times
        NCCL's NVLS efficiency (tuning.cc:134-139: 0.85 on Hopper), the least over ranks."""
        topo = self.fabric.topology
        by_id = topo.by_id
        best = float("inf")
        for g in ranks:
            gid = self.fabric.gpu(g).id
            total = 0.0
            for link in topo.links_of(gid):
                if link.kind is LinkKind.NVLINK and gid in (link.a, link.b):
                    other = by_id[link.b if link.a == gid else link.a]
                    if other.kind is DeviceKind.NVSWITCH:
                        total += link.capacity_gb_per_s
            best = min(best, total)
        return best * self.fabric.params.method_efficiency(TRANSPORT_METHOD) * nt.NVLS_EFFICIENCY[system.cc_index]

    # ---- grouped send/recv (alltoall, sendrecv, gather, scatter) -------------------------------------------
    def p2p_flows(self, op: str, ranks: list[int], size_bytes: int, root: int = 0) -> list[tuple[int, int, float]]:
        """(src rank, dst rank, bytes) of every send of a grouped p2p operation (the op table's exchanges)."""
        n = len(ranks)
        lay = layout(op, size_bytes, n)
        out = []
        for r in range(n):
            for peer, _, count in OP_TABLE[op].exchanges(r, n, lay, root)[0]:
                out.append((r, peer, float(count * _ELEMENT_BYTES)))
        return out

    def _p2p(self, op: str, ranks: list[int], size_bytes: int, system: nt.NcclSystem | None) -> AlgorithmPrediction:
        offsets = OP_TABLE[op].peer_offsets(len(ranks), layout(op, size_bytes, len(ranks)))
        # a shift-invariant exchange over whole interchangeable nodes by classes of flows (no per-pair state: a
        # 1,024-node alltoall has 67 million sends), else every send
        plan = self.p2p_shifted([(d, float(count * _ELEMENT_BYTES)) for d, count in offsets], ranks) if offsets else None
        if plan is None:
            plan = self.p2p(self.p2p_flows(op, ranks, size_bytes), ranks)
        return self._prediction("p2p", op, len(ranks), size_bytes, plan.device_us, plan.waves, plan.protocol,
                                plan.channels, channel_tasks=plan.channel_tasks)

    def p2p(self, sends: Sequence[tuple[int, int, float]], ranks: Sequence[int]) -> P2pTime:
        """One NCCL group of send/recv pairs (src rank, dst rank, bytes) over ranks on GPUs ``ranks``,
        as NCCL schedules it (enqueue.cc:1040-1110): peers in rounds (round d: send to rank + d,
        receive from rank - d), each send striped over ``p2p_plan`` channels with its protocol. Rounds of
        one epoch (8 consecutive rounds) run at once, those sharing a channel splitting its CTA's warps;
        rounds of different epochs whose channels overlap on a sender (or on a receiver) run one after
        the other."""
        ranks = [int(r) for r in ranks]
        n = len(ranks)
        system = self.nccl_system(ranks) if n > 1 else None
        if system is None:
            flows = [(ranks[a], ranks[b], nbytes) for a, b, nbytes in sends]
            device_us = self.launch_us + self.flows_time_s(flows) * 1e6
            return P2pTime(self.launched_us(device_us, max(1, len(sends)), n, p2p=True), 1, "Simple", 0, device_us,
                           max(1, len(sends)))
        # busy: (rank, send | recv) -> epoch -> channels; members: (src, dst, bytes, plan, round, channels)
        waves: list[tuple[dict[tuple[int, str], dict[int, set[int]]],
                          list[tuple[int, int, float, nt.P2pPlan, int, frozenset[int]]]]] = []
        protocols = set()
        max_channels = 0
        rounds: dict[tuple[int, int], int] = {}  # (rank, round) -> channels: one work batch per channel and round

        def clash(busy: dict[int, set[int]], epoch: int, used: frozenset[int]) -> bool:
            return any(e != epoch and chans & used for e, chans in busy.items())

        for a, b, nbytes in sorted(sends, key=lambda s: ((s[1] - s[0]) % n, s[0])):
            delta = (b - a) % n
            epoch = delta // nt.MAX_DEV_WORK_P2P_PER_BATCH
            plan = nt.p2p_plan(system, int(nbytes), self_send=a == b)
            protocols.add(plan.protocol)
            max_channels = max(max_channels, plan.channels)
            rounds[(a, delta)] = max(rounds.get((a, delta), 0), plan.channels)  # its send of the round
            rounds[(b, delta)] = max(rounds.get((b, delta), 0), plan.channels)  # its receive of the round
            used = nt.p2p_round_channels(system, delta, plan.channels)
            # a channel's send and receive connections are separate (the sender's CTA pushes, the receiver's
            # pulls). Rounds of one epoch (8 rounds) on a channel join one work batch and run at once, the CTA's
            # warps split among them (enqueue.cc addWorkBatchToPlan: a new batch only for the same round again
            # or another epoch; sendrecv.h:103-111); a round of another epoch on a channel the sender sends on
            # (or the receiver receives on) waits for that batch: it runs in a later wave
            free = (w for w in waves if not clash(w[0].get((a, "send"), {}), epoch, used)
                    and not clash(w[0].get((b, "recv"), {}), epoch, used))
            busy, members = next(free, ({}, []))
            if not members:
                waves.append((busy, members))
            busy.setdefault((a, "send"), {}).setdefault(epoch, set()).update(used)
            busy.setdefault((b, "recv"), {}).setdefault(epoch, set()).update(used)
            members.append((a, b, nbytes, plan, delta, used))
        per_channel, registered = self._p2p_rates(system, ranks)
        total_s = 0.0
        for _, members in waves:
            works: dict[tuple[int, int], set[int]] = {}  # (rank, channel) -> rounds in its batch: one work each
            for a, b, _, _, delta, used in members:
                for c in used:
                    works.setdefault((a, c), set()).add(delta)
                    works.setdefault((b, c), set()).add(delta)
            groups: dict[tuple[str, int, int], list[tuple[Flow, float]]] = {}
            for a, b, nbytes, plan, _, used in members:
                # the channels' worth of this send: each channel at the sending warps its work gets beside the
                # batch's other works, over what it gets alone (the sender's stores cross the link; the
                # receiver's warps copy locally, from its FIFO, or nothing when registered)
                worth = sum(nt.p2p_send_warp_share(len(works[(a, c)])) for c in used)
                groups.setdefault((plan.protocol, plan.channels, plan.chunk_bytes), []).append(
                    ((ranks[a], ranks[b], nbytes), worth))
            slowest = 0.0
            # a GPU whose sends of one wave go to several other GPUs at once gets less of its links than one
            # sending to one peer (4 x H200: alltoall levels off at 311 GB/s per GPU where sendrecv reaches 353);
            # fitted (nccl_p2p_fanout_efficiency), applied as extra wire bytes so channel caps keep their rate
            peers_of: dict[int, set[int]] = {}
            for a, b, *_ in members:
                if a != b:
                    peers_of.setdefault(a, set()).add(b)
            fanout = any(len(v) > 1 for v in peers_of.values())
            for (proto, channels, chunk), entries in groups.items():
                flows = [f for f, _ in entries]
                remote = [nbytes for a, b, nbytes in flows if a != b]

                def timed(rate: float, wire: float, flows: list[Flow] = flows, entries: list = entries) -> float:
                    return self.flows_time_s(flows, cap_gb_per_s=[worth * rate * wire for _, worth in entries], wire=wire)

                slowest = max(slowest, self._p2p_group_s(proto, channels, chunk, max(remote, default=None), per_channel,
                                                         registered, fanout, timed))
            total_s += slowest  # groups of one wave run at once; the slowest ends it (contention across groups ignored)
        remote_simple = registered and any(plan.protocol == "Simple" and a != b for _, members in waves
                                           for a, b, _, plan, _, _ in members)
        tasks = max((sum(c for (r, _), c in rounds.items() if r == rank) for rank in range(n)), default=1)
        return self._p2p_time(system, n, len(waves), protocols, max_channels, total_s, remote_simple, tasks)

    def _p2p_rates(self, system: nt.NcclSystem, ranks: list[int]) -> tuple[float, bool]:
        """(GB/s of one p2p channel, whether the sends are registered) of a grouped send/recv over ``ranks``."""
        if system.n_nodes == 1:
            per_channel = self._p2p_channel_gb_per_s(system)
        else:
            per_channel = float(nt.P2P_PER_CHANNEL_NET_BW)
        return per_channel, self.registers(None, "p2p", "Simple", ranks)

    def _p2p_group_s(self, proto: str, channels: int, chunk: int, remote_max: float | None, per_channel: float,
                     registered: bool, fanout: bool, timed: Any) -> float:
        """Seconds of one group of a wave's sends (one protocol, channels and chunk): ``timed(rate, wire)``
        simulates its flows at a channel's wire rate, plus the pipeline fill of its largest send to another
        GPU (``remote_max``; None: none)."""
        wire = 1.0 / PAYLOAD_FRACTION[proto] / (self.fabric.params["nccl_p2p_fanout_efficiency"] if fanout else 1.0)
        rate = per_channel * (0.5 if proto == "LL" else 1.0)
        if registered and proto == "Simple":
            rate *= self.fabric.params["nccl_p2p_registered_channel_factor"]
        t = float(timed(rate, wire))
        # pipeline fill: one chunk per channel before the receiver drains it; registered (CUDA graph),
        # a send writes the receiver's buffer in one chunk of NCCL_MAX_NET_SIZE with no FIFO between
        # (sendrecv.h:18-20 useLargeChunk, enqueue.cc:883-884 recvAddr = the registered address)
        if proto == "Simple" and not registered and remote_max is not None:
            t += min(float(chunk), remote_max / channels) / (rate * 1e9)
        return t

    def _p2p_time(self, system: nt.NcclSystem, n: int, waves: int, protocols: set[str], max_channels: int,
                  total_s: float, remote_simple_registered: bool, tasks: int) -> P2pTime:
        """A grouped send/recv's ``P2pTime`` from its waves' data time: NCCL's per-round latency per wave, the
        launch floor, and a registered send's fixed cost."""
        proto = "LL" if protocols == {"LL"} else "Simple"
        hw = nt.HW_LATENCY_US[system.intra_hw if system.n_nodes == 1 else nt.HW_NET][nt.RING][nt.PROTOS.index(proto)]
        device_us = self.launch_us + hw * waves + total_s * 1e6
        if remote_simple_registered:
            # a registered send to another GPU (a copy to itself is not registered, enqueue.cc:874-888 !selfSend)
            device_us += self.fabric.params["nccl_p2p_registered_fixed_us"]
        return P2pTime(self.launched_us(device_us, tasks, n, p2p=True), waves, proto, max_channels, device_us, tasks)

    # ---- grouped send/recv by classes of flows (a cluster of interchangeable nodes) -----------------------
    def _node_symmetry(self) -> NodeSymmetry | None:
        if not hasattr(self, "_symmetry"):
            self._symmetry = node_symmetry(self.fabric)
        return self._symmetry[0]

    def rank_blocks(self, ranks: Sequence[int]) -> tuple[int, list[int]] | None:
        """(ranks per node, the nodes in rank order) where the ranks take whole blocks of interchangeable nodes
        (``model.symmetry``): ``G`` consecutive ranks per node, each block on another node, the same GPUs of
        each node in the same order, at least two nodes; so shifting the ranks by ``G`` is a permutation of the
        nodes (cyclic over those used), an automorphism of the model. None otherwise."""
        symmetry = self._node_symmetry()
        if symmetry is None:
            return None
        r = np.asarray(ranks, dtype=np.int64)
        if not r.size or r.min() < 0 or r.max() >= symmetry.node_of_gpu.size:
            return None
        node, local = symmetry.node_of_gpu[r], symmetry.local_of_gpu[r]
        other = np.nonzero(node != node[0])[0]
        if not other.size or r.size % int(other[0]):
            return None
        g = int(other[0])
        nodes, places = node.reshape(-1, g), local.reshape(-1, g)
        if not (nodes == nodes[:, :1]).all() or np.unique(nodes[:, 0]).size != nodes.shape[0] \
                or not (places == places[:1]).all():
            return None
        return g, nodes[:, 0].tolist()

    def p2p_shifted(self, offsets: Sequence[tuple[int, float]], ranks: Sequence[int]) -> P2pTime | None:
        """``p2p`` of the sends where rank r sends ``bytes`` to rank (r + offset) mod n for every (offset, bytes),
        timed by classes of flows instead of every pair, with the same answer (tests/model/test_p2p_classes.py
        compares the two), or None where that is not proven exact: the offsets repeat, NCCL's tuner does not
        describe the ranks, or they do not take whole blocks of interchangeable nodes (``rank_blocks``).

        Why the same: ``p2p`` places sends in order of (round = offset, rank) into the first wave whose batches
        do not clash. Every rank sends once and receives once per round, and each send of a round touches only
        its own sender's and receiver's channels, so by induction every send of a round sees the same channels
        busy and lands in the same wave (computed here on one rank, with bit masks of the channels). The works
        per channel, a send's warp share and the fan-out then depend on the round alone. A wave's flows
        (rank a -> a + offset) are orbits of the node permutation that shifts the ranks by one node: one class per
        (rank of the first node, offset), its max-min problem folded onto the resources' orbits
        (``NodeSymmetry.fold``). Two classes' problems whose first node's GPUs, far GPU's place, whether the far
        GPU is in the same node, bytes and caps agree are the same problem (any permutation of the nodes that fixes
        the first is an automorphism too), so each is simulated once."""
        ranks = [int(x) for x in ranks]
        n = len(ranks)
        offsets = [(int(d) % max(n, 1), float(b)) for d, b in offsets]
        if n < 2 or not offsets or len({d for d, _ in offsets}) != len(offsets):
            return None
        system = self.nccl_system(ranks)
        blocks = self.rank_blocks(ranks) if system is not None else None
        if system is None or blocks is None:
            return None
        symmetry = self._node_symmetry()
        assert symmetry is not None  # rank_blocks found it
        g, cycle = blocks
        offsets.sort()
        plans = [nt.p2p_plan(system, int(b), self_send=d == 0) for d, b in offsets]
        used = [sorted(nt.p2p_round_channels(system, d, p.channels)) for (d, _), p in zip(offsets, plans)]
        words = max(1, -(-max(max(u, default=0) + 1 for u in used) // 64))
        masks = np.zeros((len(offsets), words), dtype=np.uint64)
        for k, chans in enumerate(used):
            for c in chans:
                masks[k, c // 64] |= np.uint64(1) << np.uint64(c % 64)
        full = np.zeros_like(masks)  # per wave: the channels its rounds use, on a rank's sends (its receives alike)
        before = np.zeros_like(masks)  # per wave: those of rounds of earlier epochs (the ones a round may clash with)
        wave_of = np.empty(len(offsets), dtype=np.int64)
        n_waves, epoch_now = 0, -1
        for k, (d, _) in enumerate(offsets):
            epoch = d // nt.MAX_DEV_WORK_P2P_PER_BATCH
            if epoch != epoch_now:  # rounds arrive in order: every round already placed is of an earlier epoch now
                before[:n_waves] = full[:n_waves]
                epoch_now = epoch
            free = ~(before[:n_waves] & masks[k]).any(axis=1)
            w = int(np.argmax(free)) if free.any() else n_waves
            n_waves = max(n_waves, w + 1)
            full[w] |= masks[k]
            wave_of[k] = w
        per_channel, registered = self._p2p_rates(system, ranks)
        fold = symmetry.fold(cycle)
        local = symmetry.local_of_gpu
        known: dict[tuple, float] = {}
        total_s = 0.0
        for w in range(n_waves):
            members = np.nonzero(wave_of == w)[0].tolist()
            works = np.zeros(words * 64, dtype=np.int64)
            for k in members:
                works[used[k]] += 1
            worth = {k: sum(nt.p2p_send_warp_share(int(works[c])) for c in used[k]) for k in members}
            fanout = sum(1 for k in members if offsets[k][0] != 0) > 1
            groups: dict[tuple[str, int, int], list[int]] = {}
            for k in members:
                groups.setdefault((plans[k].protocol, plans[k].channels, plans[k].chunk_bytes), []).append(k)
            slowest = 0.0
            for (proto, channels, chunk), ks in groups.items():
                remote = [offsets[k][1] for k in ks if offsets[k][0] != 0]

                def timed(rate: float, wire: float, ks: list[int] = ks, worth: dict[int, float] = worth) -> float:
                    sends = [(a, (a + offsets[k][0]) % n, offsets[k][1], worth[k] * rate * wire) for k in ks for a in range(g)]
                    classes = [(ranks[a], ranks[b], nbytes, cap) for a, b, nbytes, cap in sends]
                    # the problem up to a permutation of the nodes that fixes the first (docstring)
                    key = (wire, tuple((int(local[ranks[a]]), int(local[ranks[b]]), b < g, nbytes, cap)
                                       for a, b, nbytes, cap in sends))
                    if key not in known:
                        known[key] = self._classes_time_s(classes, [1] * len(classes), wire=wire, fold=fold)
                    return known[key]

                slowest = max(slowest, self._p2p_group_s(proto, channels, chunk, max(remote, default=None), per_channel,
                                                         registered, fanout, timed))
            total_s += slowest
        remote_simple = registered and any(p.protocol == "Simple" and d != 0 for (d, _), p in zip(offsets, plans))
        return self._p2p_time(system, n, n_waves, {p.protocol for p in plans}, max(p.channels for p in plans), total_s,
                              remote_simple, sum(p.channels for p in plans))


def predict_sweep(model: CollectiveModel, op: str, gpus: Sequence[int], sizes_bytes: Sequence[int], ranks: int) -> dict[int, dict]:
    """The model's prediction of ``op`` over ``gpus`` at every size of a sweep, asked once for the whole
    size list: nccl-tests' size S of each nominal size over ``ranks`` NCCL ranks (``layout``) ->
    ``CollectivePrediction.as_dict()``. A runner joins this table to its rows by size (``bench nccl``
    under the simulated backend) instead of asking the model row by row."""
    laid = dict.fromkeys(layout(op, int(size), ranks).size_bytes for size in sizes_bytes)
    return {size: model.predict(op, gpus, size).as_dict() for size in laid}


def _nic_order(members: Sequence[int], local: Mapping[int, list[str]]) -> list[str]:
    """The NICs of one node's ranks (``local``: each rank's NICs), in the order the ranks first name them."""
    return list(dict.fromkeys(nic for r in members for nic in local.get(r, ())))


def _channel_entry(members: list[int], local: Mapping[int, list[str]], nics: Sequence[str],
                   channel: int) -> tuple[list[int], list[int]]:
    """Where a ring or tree channel enters one node (``local``: each rank's NICs, ``nics``: the node's in turn):
    NCCL's search takes the node's NETs in turn per channel (``nets[(nChannels + i) % netCount]``, search.cc:680
    at v2.28.9-1) and enters at a GPU local to the NET (search.cc:726-737). Returns ``members`` rotated to start at
    that GPU and the NET's local ranks; with no NIC in the node's topology, ``members`` rotated by the channel
    (its first rank the one local)."""
    if not nics:
        k = channel % len(members)
        return members[k:] + members[:k], [members[k]]
    nic = nics[channel % len(nics)]
    near = [r for r in members if nic in local.get(r, ())] or members
    entry = members.index(near[0])
    return members[entry:] + members[:entry], near


def _flow_classes(flows: Sequence[Flow], caps: np.ndarray) -> tuple[list[tuple[int, int, float, float]], list[int]]:
    """The distinct flows (src, dst, bytes, cap) in first-seen order and how many times each occurs."""
    index: dict[tuple[int, int, float, float], int] = {}
    counts: list[int] = []
    for (src, dst, nbytes), cap in zip(flows, caps.tolist()):
        key = (src, dst, float(nbytes), cap)
        k = index.setdefault(key, len(counts))
        if k == len(counts):
            counts.append(1)
        else:
            counts[k] += 1
    return list(index), counts


@dataclass(frozen=True)
class P2pTime:
    """A grouped send/recv: time as launched (``CollectiveModel.launched_us``), the rounds that ran one
    after the other, the protocol, the most channels one send used, the device time (launch floor +
    NCCL's per-round latency + data) and the most channel tasks of a rank (the channels of its rounds)."""

    time_us: float
    waves: int
    protocol: str
    channels: int
    device_us: float = 0.0
    channel_tasks: int = 1


def _per_channel_gb_per_s(system: nt.NcclSystem, channels: int | None = None) -> float:
    """What one run-time channel carries: the ring graph's bandwidth (search channels x speed) over
    ``channels`` (default: the channels NCCL runs by default, twice the search channels, connect.cc:452):
    12 x 30 / 24 = 15 GB/s on NV18 H100/H200."""
    graph = system.ring
    bw = graph.bw_intra if system.n_nodes <= 2 else graph.bw_inter
    return graph.n_channels * bw / (channels or min(nt.MAXCHANNELS, 2 * graph.n_channels))


def _nccl_system(fabric: FabricModel, ranks: list[int], settings: nt.NcclSettings) -> nt.NcclSystem | None:
    """NCCL's view of a communicator over ``ranks`` from the topology (``nccl_tuning.build_system``)."""
    topo = fabric.topology
    gpus = [fabric.gpu(g) for g in ranks]
    ccs = [nt.compute_capability(g) for g in gpus]
    if any(c is None for c in ccs):
        return None
    cc = min(c for c in ccs if c is not None)
    labels = node_labels(topo)
    index = {d.id: k for k, d in enumerate(topo.devices)}
    nodes = [labels[index[g.id]] for g in gpus]
    n_nodes = len(set(nodes))
    nvl = nt.nvlink_bw(cc)
    by_id = topo.by_id
    gpu_bw: list[float] = []
    nvswitch = False
    pci: list[float] = []
    for g in gpus:
        links = 0
        c2c: list[float] = []
        host_pci = len(pci)
        for link in topo.links_of(g.id):
            if gid_in(link, g.id):
                other = by_id[link.b if link.a == g.id else link.a]
                if link.kind is LinkKind.NVLINK:
                    if other.kind is DeviceKind.CPU and "c2c" in (link.generation or "").lower():
                        # a Grace's NVLink-C2C is NCCL's LINK_C2C (topo.cc:671-672 at v2.28.9-1), not an NVLink:
                        # getTotalBw sums LINK_NVL only (search.cc:29-37), so 18 links on a GB200, not 19. NCCL takes
                        # a GPU's bandwidth to its CPU "via P2P or C2C" as the GPU's (topo.cc:1581-1587,
                        # getLocalNetCountByBw); a GPU whose only host link is C2C (GH200, GB10) has no PCIe link here,
                        # so the C2C rate stands for it (else a Gen3 x16 guess capped it at 12 GB/s and one channel)
                        c2c.append(link.count * link.link_gb_per_s)
                        continue
                    links += link.count
                    nvswitch = nvswitch or other.kind is DeviceKind.NVSWITCH
                elif link.kind is LinkKind.PCIE:
                    pci.append(_nccl_pci_bw(link))
        if len(pci) == host_pci and c2c:
            pci.append(sum(c2c))
        gpu_bw.append(links * nvl)
    pair_levels = [fabric.router.pair_level(gpus[i], gpus[(i + 1) % len(gpus)]) for i in range(len(gpus))
                   if nodes[i] == nodes[(i + 1) % len(gpus)]]
    all_nv = all(lv.family == "NV" for lv in pair_levels) and min(gpu_bw) > 0
    if all_nv:
        pair_bw = min((lv.count or 1) * nvl for lv in pair_levels) if pair_levels else min(gpu_bw)
        total = min(gpu_bw)
        peer_channels = 2 * max(1, int(pair_bw / nvl))  # paths.cc:828-831
        hw = nt.HW_NVLINK
    else:
        total = pair_bw = min(pci) if pci else nt.PCI_GEN_SPEED[3] * 16 / 80.0
        peer_channels = 2  # paths.cc:832-833
        hw = nt.HW_PCI
    inter = 0.0
    node_nics, net_path, tree_pattern = 0, 0.0, nt_trees.BALANCED_TREE
    if n_nodes > 1:
        # a GPU's local NICs are every NIC tied at its best path (ncclTopoGetLocal keeps ties, topo.cc:1548-1572
        # at v2.28.9-1), and a node's rings may use the local NICs of any of its GPUs (ncclTopoSelectNets appends
        # each GPU's local nets, search.cc:531-546): two GPUs behind one PCIe switch with two NICs reach both
        nics_of = {g.id: fabric.router.nearest_nics(g) for g in gpus}
        rates = [(nic.line_rate_gbit_per_s or 100.0) / 8.0 for nics in nics_of.values() for nic in nics]  # topo.cc:373
        inter = min(rates) if rates else 12.0
        per_node: dict[str, set[str]] = {}
        for g, node in zip(gpus, nodes):
            per_node.setdefault(node, set()).update(nic.id for nic in nics_of[g.id])
        node_nics = min((len(v) for v in per_node.values()), default=0)  # the NICs a node's GPUs reach
        net_path = min(pci) if pci else 0.0  # a GPU's PCIe link bounds its path to the NIC
        peer_channels = max(peer_channels, 2)
        tree_pattern = _tree_pattern(fabric, gpus, nodes, cc)
    cpus = topo.of_kind(DeviceKind.CPU)
    amd = nt.amd_cpus(c.vendor for c in cpus)
    # CollNet needs in-network reduction: a network switch or NIC the topology marks with the attribute
    # ``sharp`` (or ``collnet``) true, e.g. InfiniBand switches with SHARP
    sharp = any(bool((d.attributes or {}).get("sharp") or (d.attributes or {}).get("collnet"))
                for d in topo.devices if d.kind in (DeviceKind.NETWORK_SWITCH, DeviceKind.NIC))
    return nt.build_system(n_ranks=len(ranks), n_nodes=n_nodes, cc=cc, intra_hw=hw, gpu_bw=total, pair_bw=pair_bw,
                           nvswitch=nvswitch and all_nv, inter_bw=inter, amd_cpu=amd,
                           p2p_peer_channels=peer_channels, collnet_fabric=sharp, settings=settings,
                           nics=node_nics, net_path_bw=net_path, tree_pattern=tree_pattern)


def _tree_pattern(fabric: FabricModel, gpus: Sequence[Any], nodes: Sequence[object], cc: int) -> int:
    """The communicator's tree pattern as NCCL's tuner reads it (``maxTreePattern``, init.cc:1187 at v2.28.9-1):
    the plain tree where a Hopper or later node's NIC serves one of its GPUs (``CollectiveModel._tree_chain``:
    the balanced tree finds no second GPU beside that NET, search.cc:572, 610-617, and the search falls back,
    search.cc:1116-1120), else the balanced tree."""
    if cc < 90:
        return nt_trees.BALANCED_TREE
    served: dict[tuple[object, str], int] = {}
    for g, node in zip(gpus, nodes):
        for nic in fabric.router.nics_of(g):
            served[(node, nic.id)] = served.get((node, nic.id), 0) + 1
    return nt_trees.TREE if any(count == 1 for count in served.values()) else nt_trees.BALANCED_TREE


def gid_in(link: object, device_id: str) -> bool:
    return device_id in (getattr(link, "a", None), getattr(link, "b", None))


def _nccl_pci_bw(link: object) -> float:
    """NCCL's PCIe bandwidth of a link: width x per-lane speed / 80 (topo.cc:423-424), from the
    link's generation text (``PCIe Gen4 x16``); else its GB/s scaled like Gen3 x16 (12 of 15.75)."""
    gen_text = (getattr(link, "generation", None) or "").lower().replace(" ", "")
    gen = generation_key("pcie", gen_text)
    width = 16
    if "x" in gen_text:
        tail = gen_text.rsplit("x", 1)[1]
        width = int(tail) if tail.isdigit() else 16
    if gen and gen[-1].isdigit() and int(gen[-1]) in nt.PCI_GEN_SPEED:
        return width * nt.PCI_GEN_SPEED[int(gen[-1])] / 80.0
    return float(getattr(link, "link_gb_per_s", 15.75)) * 12.0 / 15.75
