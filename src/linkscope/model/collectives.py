"""Collectives: sizes and bus-bandwidth factors as nccl-tests defines them, and their predicted time.

The first half is a pure table (nccl-tests' conventions); the second, ``CollectiveModel``, times
an NCCL-style collective on a topology with the fabric model (docs/comm.md explains the method).

nccl-tests (``doc/PERFORMANCE.md``) reports for each operation a *size* S in bytes, the time t of
one operation, the algorithm bandwidth ``algbw = S / t`` and the bus bandwidth
``busbw = algbw * factor(n)``, where the factor makes busbw comparable with the hardware's
per-GPU link speed whatever the number of ranks n:

* **allreduce** ``2(n-1)/n``: a ring (or any optimal) allreduce is a reduce-scatter followed by an
  allgather; each rank sends and receives ``(n-1)/n * S`` bytes in each phase, so every rank's
  links carry ``2(n-1)/n * S`` while the user sees S.
* **allgather** ``(n-1)/n``: S is the *received* total (n chunks of S/n); each rank must receive
  the n-1 chunks it does not own.
* **reduce_scatter** ``(n-1)/n``: S is the *sent* total per rank (n chunks of S/n); each rank
  must send the n-1 chunks it does not keep.
* **broadcast**, **reduce** ``1``: every byte crosses the root's link once (pipelined chain or
  tree), so busbw = algbw.
* **alltoall** ``(n-1)/n``: S is each rank's send total (n chunks of S/n); the chunk to itself
  does not leave the GPU.
* **sendrecv** ``1``: each rank sends S to its right neighbour and receives S from its left one
  (a ring shift); each byte crosses one link once.

Sizes: ``count`` elements of ``dtype_bytes`` each are rounded down so the per-rank chunks are
whole (nccl-tests does the same), and the size actually used is reported.

>>> round(busbw_factor("allreduce", 4), 3)
1.5
>>> busbw_factor("broadcast", 8)
1.0
>>> layout("allgather", 4096, 4, 4).size_bytes
4096
>>> layout("allgather", 4100, 4, 4).send_count
256
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..errors import ConfigError, UserError
from ..patterns.methods import SM_PUSH, STAGED_PINNED
from .contention import simulate
from .predict import FabricModel

OPS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv")


def busbw_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``op`` on ``ranks`` ranks (derivations in the module doc)."""
    _check_op(op)
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    n = float(ranks)
    if op == "allreduce":
        return 2.0 * (n - 1.0) / n
    if op in ("allgather", "reduce_scatter", "alltoall"):
        return (n - 1.0) / n
    return 1.0  # broadcast, reduce, sendrecv


def algbw_gb_per_s(size_bytes: int, time_s: float) -> float:
    """Algorithm bandwidth S / t in decimal GB/s."""
    if time_s <= 0:
        raise ValueError(f"time must be positive, got {time_s}")
    return size_bytes / time_s / 1e9


def busbw_gb_per_s(op: str, ranks: int, size_bytes: int, time_s: float) -> float:
    return algbw_gb_per_s(size_bytes, time_s) * busbw_factor(op, ranks)


@dataclass(frozen=True)
class Layout:
    """Element counts of one operation at one nominal size.

    Attributes:
        op: the operation.
        ranks: number of ranks.
        send_count: elements each rank's send buffer holds.
        recv_count: elements each rank's receive buffer holds.
        chunk_count: elements per peer (alltoall), per rank (allgather, reduce_scatter), else count.
        size_bytes: the size S nccl-tests reports (after rounding), used for algbw.
    """

    op: str
    ranks: int
    send_count: int
    recv_count: int
    chunk_count: int
    size_bytes: int


def layout(op: str, size_bytes: int, ranks: int, dtype_bytes: int = 4) -> Layout:
    """The buffers of ``op`` at nominal size ``size_bytes`` (nccl-tests' conventions)."""
    _check_op(op)
    if size_bytes < 0 or ranks < 1 or dtype_bytes < 1:
        raise ValueError("size, ranks and dtype size must be positive")
    count = size_bytes // dtype_bytes
    if op in ("allgather", "reduce_scatter", "alltoall"):
        chunk = count // ranks
        total = chunk * ranks
        if op == "allgather":
            return Layout(op, ranks, chunk, total, chunk, total * dtype_bytes)
        if op == "reduce_scatter":
            return Layout(op, ranks, total, chunk, chunk, total * dtype_bytes)
        return Layout(op, ranks, total, total, chunk, total * dtype_bytes)
    return Layout(op, ranks, count, count, count, count * dtype_bytes)


def _check_op(op: str) -> None:
    if op not in OPS:
        raise UserError(f"unknown collective {op!r}", hint=f"valid operations: {', '.join(OPS)}")


# ---- predicted time: ring / tree / pairwise on the fabric model ---------------------------------------
TRANSPORT_METHOD = SM_PUSH.key
"""How NCCL moves bytes between GPUs with peer access: its kernels load and store peer memory (P2P
transport, Simple protocol), so a transfer's cap is the model's SM-copy cap."""
NO_PEER_METHOD = STAGED_PINNED.key
"""Between GPUs without peer access NCCL goes through pinned host memory (SHM transport)."""
ALGORITHMS = ("ring", "tree", "pairwise", "local")


@dataclass(frozen=True)
class AlgorithmPrediction:
    """One algorithm's predicted time for one collective at one size.

    Attributes:
        algorithm: ring (ring steps; a pipelined chain for broadcast/reduce; the ring shift of
            sendrecv), tree (double binary tree, allreduce only), pairwise (alltoall), local (one rank).
        time_us: launch floor + transport time.
        algbw_gb_per_s, busbw_gb_per_s: nccl-tests' S / t and algbw x busbw_factor.
        steps: sequential communication steps (each pays the route latency).
    """

    algorithm: str
    time_us: float
    algbw_gb_per_s: float
    busbw_gb_per_s: float
    steps: int


@dataclass(frozen=True)
class CollectivePrediction:
    """Every algorithm considered for ``op`` on ``gpus`` at ``size_bytes``; ``chosen`` is the fastest
    one that NCCL would consider (tree only when the ranks span more than one node)."""

    op: str
    gpus: tuple[int, ...]
    size_bytes: int
    chosen: AlgorithmPrediction
    algorithms: tuple[AlgorithmPrediction, ...]

    @property
    def time_us(self) -> float:
        return self.chosen.time_us

    def as_dict(self) -> dict[str, object]:
        return {"algorithm": self.chosen.algorithm,
                "algorithms": {a.algorithm: {"time_us": a.time_us, "algbw_gb_per_s": a.algbw_gb_per_s,
                                             "busbw_gb_per_s": a.busbw_gb_per_s, "steps": a.steps}
                               for a in self.algorithms}}


Flow = tuple[int, int, float]


class CollectiveModel:
    """NCCL-style collectives timed by the fabric model of one topology.

    Every step of an algorithm is a group of concurrent GPU-to-GPU flows, simulated with max-min
    contention on the topology's links (``FabricModel``); a reducing step costs its bytes divided by
    ``nccl_reduce_efficiency``; one operation pays ``nccl_launch_us`` once (the latency floor).
    """

    def __init__(self, fabric: FabricModel) -> None:
        self.fabric = fabric
        self.launch_us = fabric.params["nccl_launch_us"]
        self.reduce_efficiency = fabric.params["nccl_reduce_efficiency"]
        self._multi_node = fabric.graph.has_network()

    @classmethod
    def of(cls, topology: object, params: object = None) -> CollectiveModel:
        return cls(FabricModel(topology, params))  # type: ignore[arg-type]

    def method(self, src: int, dst: int) -> str:
        """The transport between two GPUs: ``local`` inside one, P2P where peer access exists, else host."""
        if src == dst:
            return "local"
        return TRANSPORT_METHOD if self.fabric.peer_access(src, dst) is None else NO_PEER_METHOD

    def flows_time_s(self, flows: Sequence[Flow], *, reduce: bool = False, method: str | None = None) -> float:
        """Seconds until the last of concurrent flows (src GPU, dst GPU, bytes) ends: route latency
        plus bytes at the max-min fair rate (no per-call overhead: the launch is counted once per
        operation). ``reduce``: the receiver reduces what arrives (bytes / nccl_reduce_efficiency)."""
        if not flows:
            return 0.0
        stages, overhead = [], []
        for src, dst, nbytes in flows:
            how = method if method is not None and src != dst else self.method(src, dst)
            size = float(nbytes) / (self.reduce_efficiency if reduce else 1.0)
            stages.append(self.fabric.stages(src, dst, round(size), how))
            overhead.append(self.fabric.params.overhead_us(how) * 1e-6)
        problem = self.fabric._problem(stages)
        first = problem.flow_first
        latency = problem.stage_latency_s.copy()
        latency[first] = np.maximum(latency[first] - np.asarray(overhead), 0.0)
        result = simulate(replace(problem, stage_latency_s=latency))
        return float(np.max(result.finish_s))

    def _route_latency_s(self, flows: Sequence[tuple[int, int]]) -> float:
        return self.flows_time_s([(a, b, 0) for a, b in flows])

    def _algorithm(self, name: str, op: str, n: int, size_bytes: int, time_s: float, steps: int) -> AlgorithmPrediction:
        t_us = self.launch_us + time_s * 1e6
        algbw = size_bytes / (t_us * 1e-6) / 1e9 if size_bytes else 0.0
        return AlgorithmPrediction(name, t_us, algbw, algbw * busbw_factor(op, n), steps)

    def predict(self, op: str, gpus: Sequence[int], size_bytes: int) -> CollectivePrediction:
        """Predicted time of ``op`` over ranks on ``gpus`` (rank order = ring order) at nccl-tests'
        size S (``layout(...).size_bytes``)."""
        _check_op(op)
        ranks = [int(g) for g in gpus]
        n = len(ranks)
        if n < 1:
            raise ConfigError("a collective needs at least one rank")
        if len(set(ranks)) != n:
            raise ConfigError(f"a GPU appears twice among the ranks: {ranks}")
        for g in ranks:
            self.fabric.gpu(g)  # an unknown GPU index is a clear error
        S = float(size_bytes)
        options: list[AlgorithmPrediction] = []
        if n == 1:
            copy = self.flows_time_s([(ranks[0], ranks[0], S)]) if op != "reduce_scatter" else 0.0
            options.append(self._algorithm("local", op, 1, size_bytes, copy, 0))
        elif op in ("allreduce", "allgather", "reduce_scatter"):
            ring = [(ranks[i], ranks[(i + 1) % n]) for i in range(n)]
            chunk = S / n
            red = self.flows_time_s([(a, b, chunk) for a, b in ring], reduce=True)
            cpy = self.flows_time_s([(a, b, chunk) for a, b in ring])
            steps = {"allreduce": 2 * (n - 1), "allgather": n - 1, "reduce_scatter": n - 1}[op]
            t = {"allreduce": (n - 1) * (red + cpy), "allgather": (n - 1) * cpy, "reduce_scatter": (n - 1) * red}[op]
            options.append(self._algorithm("ring", op, n, size_bytes, t, steps))
            if op == "allreduce" and self._multi_node:
                options.append(self._tree(op, ranks, size_bytes))
        elif op in ("broadcast", "reduce"):
            chain = [(ranks[i], ranks[i + 1]) for i in range(n - 1)]
            if op == "reduce":
                chain = [(b, a) for a, b in reversed(chain)]
            t = self.flows_time_s([(a, b, S) for a, b in chain], reduce=op == "reduce")
            t += (n - 2) * self._route_latency_s(chain)  # pipeline fill along the chain
            options.append(self._algorithm("ring", op, n, size_bytes, t, n - 1))
        elif op == "alltoall":
            chunk = S / n
            flows = [(a, b, chunk) for a in ranks for b in ranks if a != b]
            options.append(self._algorithm("pairwise", op, n, size_bytes, self.flows_time_s(flows), 1))
        else:  # sendrecv: the ring shift
            flows = [(ranks[i], ranks[(i + 1) % n], S) for i in range(n)]
            options.append(self._algorithm("ring", op, n, size_bytes, self.flows_time_s(flows), 1))
        chosen = min(options, key=lambda a: a.time_us)
        return CollectivePrediction(op, tuple(ranks), int(size_bytes), chosen, tuple(options))

    def _tree(self, op: str, ranks: list[int], size_bytes: int) -> AlgorithmPrediction:
        """Double binary tree (NCCL 2.4+): two complementary trees, each reducing half the data up to
        its root and broadcasting it down, pipelined; here tree A is a heap over the rank order and
        tree B the same over the reversed order, all four directions of traffic concurrent."""
        n = len(ranks)
        half = size_bytes / 2.0
        up: list[Flow] = []
        down: list[Flow] = []
        for order in (ranks, ranks[::-1]):
            for i in range(1, n):
                child, parent = order[i], order[(i - 1) // 2]
                up.append((child, parent, half))
                down.append((parent, child, half))
        depth = int(np.floor(np.log2(n))) + 1
        t = max(self.flows_time_s(up, reduce=True), self.flows_time_s(down))
        t += (2 * depth - 2) * self._route_latency_s([(a, b) for a, b, _ in up])
        return self._algorithm("tree", op, n, size_bytes, t, 2 * (depth - 1))

