"""Predict what concurrent transfers get: routes per method, engine limits, max-min contention.

``predict(topology, plan)`` is the pure entry point used by mapping and reports; ``FabricModel``
keeps the graph, routes and parameters of one topology for repeated use (the ``sim`` engine, the
calibration fit, the scale benchmark).

How each method moves bytes (``"host"`` = host memory of the CPU nearest the GPU end):

=================  =========================================================================
ce, ce-read,        GPU to GPU over the peer route (fabric first, else PCIe / socket link);
ce-write            copy-engine cap of the GPU's vendor; P2P access required
sm-push, sm-pull    same route; capped at ``method_efficiency`` x the route's raw bottleneck
ce-nopeer           the driver stages through host memory of src's NUMA node, pipelined: one
                    stage over src -> CPU -> dst, host memory written and read (weight 2)
staged-pinned       the same path through a pinned host buffer, double-buffered in chunks
                    (one chunk of pipeline fill added to the latency)
staged              pageable staging, not pipelined: D2H then H2D, each at its pageable rate
h2d, d2h            host memory <-> GPU over PCIe (or the CPU-GPU fabric link), host memory weight 1
h2d-pageable, ...   the same through the driver's staging buffer: the smaller of the pinned rate and
                    one host thread's copy rate of that direction, host memory weight 2 (host_copies)
local               a copy inside one GPU's memory (read + write: device memory weight 2)
=================  =========================================================================

A peer copy's rate alone (the smaller of its method cap and its route's effective bottleneck) is
further multiplied by ``p2p_transit_efficiency`` for each PCIe switch, host bridge, CPU and forwarding
GPU (an AMD GCD relaying xGMI traffic) it passes and each socket link it crosses (a per-transfer cap;
NVSwitch planes cost nothing); per element where the device states it (``ModelParams.element_transit``).
Each device passed also adds its ``transit_latency_us``. Time of a transfer = its latency (per-method overhead
+ per-hop latencies) + the bytes at the max-min fair rate, recomputed at every start and completion.

The issuing GPU: its copy-engine peer copies queue (served one at a time, in an order the driver picks; the
prediction is the expectation over the orders) and its kernel copies share its SMs (``model.issue_queues``;
``FabricModel.copy_engine_bound``).

The transfers of a group through pageable host memory (``h2d-pageable``, ``d2h-pageable``, ``staged``) do
not overlap: the host thread that issues them waits for each (``host_copies.serialised``). Each then
runs alone, starting when the one before it ends (``TransferPrediction.start_s``).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter

import numpy as np
from scipy.sparse import csc_matrix, csr_matrix
from scipy.sparse.csgraph import dijkstra

from ..errors import ConfigError, TopologyError
from ..patterns.methods import CE_NOPEER, D2H, DEFAULT_METHOD, H2D, LOCAL, STAGED, STAGED_PINNED, get_method, keys_where
from ..patterns.plan import HOST, Transfer, TransferPlan
from ..topology import query
from ..topology.gpufacts import facts_of_device
from ..topology.levels import DISTANCE_OF_CODE
from ..topology.model import Device, DeviceKind, LinkKind, Topology
from .budget import check_model_budget
from .contention import FlowProblem, SimResult, simulate
from .graph import KIND_CODE, NODE_KIND_CODE, FabricGraph
from .host_copies import host_copy_rate_gb_per_s, serialised, staging_fill_s, staging_rate_gb_per_s
from .issue_queues import QueuedResult, QueueOrders, can_simulate, issuer_queues, issuer_rows, simulate_orders
from .nics import NicSpec, nic_choice_of
from .params import METHODS, ModelParams
from .pathsums import route_sums
from .routing import Router

# method vocabulary from the one method table (patterns/methods.py)
PEER_METHODS = keys_where(needs_peer_access=True)
# devices whose forwarding costs a peer copy bandwidth (factor) and latency; NVSwitch planes cost nothing
_TRANSIT_DEVICE_KINDS = frozenset({"pcie_switch", "host_bridge", "cpu", "gpu"})
NEEDS_PEER_ACCESS = frozenset(PEER_METHODS)
COPY_ENGINE_METHODS = frozenset(set(keys_where(unit=("copy-engine", "host-staging"))) - {LOCAL.key})
HOST_METHODS = keys_where(endpoints=("host-to-gpu", "gpu-to-host"))
DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024
AUTO_RTOL_FLOWS = 5000
MAX_RTOL = 0.5  # a batch window of 2 x rtol = the whole time range: no longer a simulation
_GB = 1e9


def auto_rtol(n_flows: int, rtol: float | None) -> float:
    """The speed/accuracy knob of the event-driven completion (``contention.simulate``): ``rtol`` as
    given, else exact below AUTO_RTOL_FLOWS flows and 1% above. Finish times stay within
    ``contention.batched_error_bound(rtol)`` = 2 x rtol of exact (measured: at most 1.4 x rtol, median
    0.05 x rtol, on 5,000 to 50,000 mixed-size flows of the scale benchmark, docs/benchmarks.md
    "Fabric model at scale"); events drop to about log(finish-time range) / (2 x rtol), so 5% is
    about 4x faster than 1% on 100,000 mixed-size flows."""
    if rtol is not None:
        return check_rtol(rtol)
    return 0.0 if n_flows < AUTO_RTOL_FLOWS else 0.01


def check_rtol(rtol: float) -> float:
    """``rtol`` if it is a completion tolerance the simulation takes (0 to MAX_RTOL), else ConfigError."""
    if not 0.0 <= rtol <= MAX_RTOL:  # NaN fails too
        raise ConfigError(f"completion tolerance rtol must be between 0 (exact) and {MAX_RTOL:g}, got {rtol:g}",
                          hint="0.01 keeps finish times within 2% of exact; 0 is exact")
    return rtol


@dataclass(frozen=True)
class TransferPrediction:
    """Predicted outcome of one transfer of a concurrent group.

    Attributes:
        src, dst, method, size_bytes, role: the transfer.
        elapsed_s: from its start to its last byte, seconds.
        gb_per_s: size_bytes / elapsed_s in GB/s (0.0 for an empty transfer).
        start_s: when it starts after the group's common start: 0.0, except for copies through
            pageable host memory, which run one after another (``host_copies``).
        latency_us: the fixed part: overhead + per-hop latency (+ pipeline fill).
        rate_gb_per_s: max-min fair rate of its first stage once everything has started.
        theoretical_gb_per_s: raw bottleneck capacity of its route.
        limited_by: ``copy engines`` when its issuing GPU's copy engines queue it with other copies
            (``copy_engine_bound``, ``model.issue_queues``).
        queue: for a group whose copy-engine copies queue, the spread of the group's total over the queue
            orders (the same object on every transfer of the group); None otherwise. Its
            ``elapsed_s_median`` is the group's elapsed time (``group_elapsed_s``): each transfer's
            ``elapsed_s`` is its expectation over the orders, and the slowest of those is not the group's.
    """

    src: int | str
    dst: int | str
    method: str
    size_bytes: int
    elapsed_s: float
    gb_per_s: float
    latency_us: float
    rate_gb_per_s: float
    theoretical_gb_per_s: float
    role: str = "measured"
    start_s: float = 0.0
    limited_by: str = ""  # "copy engines" where the GPUs' copy engines, not the links, set its rate
    queue: QueueOrders | None = None

    @property
    def finish_s(self) -> float:
        """From the group's common start to its last byte, seconds."""
        return self.start_s + self.elapsed_s


def group_elapsed_s(predictions: Sequence[TransferPrediction]) -> float:
    """A concurrent group's elapsed time, from its common start to its last byte (seconds): the latest
    finish; for copies queued on their issuing GPUs' copy engines, the group's time in the median queue
    order (``TransferPrediction.queue``), since each copy's own prediction is an expectation over orders."""
    for p in predictions:
        if p.queue is not None:
            return p.queue.elapsed_s_median
    return max((p.finish_s for p in predictions), default=0.0)


@dataclass
class _Stage:
    resources: np.ndarray
    weights: np.ndarray
    cap_gb_per_s: float
    latency_s: float
    size_bytes: int
    raw_gb_per_s: float


@dataclass(frozen=True)
class OneStageArrays:
    """One stage per transfer, as arrays (``FabricModel.one_stage_arrays``): transfer k uses resources
    ``indices[indptr[k]:indptr[k + 1]]`` with ``weights`` (same slice); its rate cap (GB/s), latency (s,
    the method's overhead included) and the raw rate of its narrowest link (GB/s)."""

    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray
    cap_gb_per_s: np.ndarray
    latency_s: np.ndarray
    raw_gb_per_s: np.ndarray


def _flow_tuple(item: Transfer | Sequence) -> tuple[int | str, int | str, int, str]:
    if isinstance(item, Transfer):
        return item.src, item.dst, int(item.size_bytes), item.role
    src, dst, size = item[0], item[1], item[2]
    role = item[3] if len(item) > 3 else "measured"
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)):
        raise ConfigError(f"transfer size must be an integer number of bytes, got {size!r}")
    return src, dst, int(size), role


class FabricModel:
    """The fabric model of one topology: graph, routes, parameters, resource capacities."""

    def __init__(self, topology: Topology, params: ModelParams | dict | None = None, *,
                 nics: str | NicSpec | None = None, peer_fallback: bool = False) -> None:
        """``nics``: the NIC choice for inter-node transfers (``model.nics``: a UCX_NET_DEVICES /
        NCCL_IB_HCA style value, ``nearest`` or ``any``); default the topology's
        ``run_choices.nic_devices``, else nearest. ``peer_fallback``: a copy-engine peer copy
        between GPUs without peer access is modelled as the driver runs cudaMemcpyPeer there (staged
        through host memory, ``ce-nopeer``) instead of being refused."""
        check_model_budget(topology)  # before anything is built: every simulation and prediction (budget.py)
        self.topology = topology
        self.peer_fallback = peer_fallback
        self.params = ModelParams.for_topology(topology, params)
        self.graph = FabricGraph.from_topology(topology)
        self.nic_spec = nic_choice_of(topology, nics)
        self.router = Router(self.graph, self.nic_spec)
        self._element_keys = any(".device." in k for k in self.params.values)
        self.capacity = self.graph.capacities(self.params)
        self.edge_latency_s = self.graph.edge_latency(self.params) * 1e-6
        p = self.params
        self._node_transit_log, self._node_transit_s = self._node_transit()
        self._edge_transit_log = np.where(self.graph.edge_kind == KIND_CODE[LinkKind.UPI.value],
                                          np.log(p.transit_efficiency("upi")), 0.0)
        self._gpu_by_index = {g.index: g for g in topology.gpus}
        self._duplex = self._duplex_efficiency()
        self._duplex_edges = self._duplex < 1.0  # the edges whose share can shrink, fixed per model
        self._host_memory_rows = np.array([self.graph.host_memory_resource(c) for c in self.graph.cpu_ids], dtype=np.int64)
        self._level_keys = any(k.startswith("overhead_us.") and "@" in k for k in self.params.values)
        self._family: dict[tuple[str, str], str] = {}
        self._no_peer: set[frozenset[int]] | None = None
        self._all_peers: bool | None = None
        self._peer_stages: dict[tuple[int, int, str, float], _Stage] = {}
        self._access: dict[tuple[int, int], str | None] = {}  # peer_access answers (the topology is fixed)

    def _node_transit(self) -> tuple[np.ndarray, np.ndarray]:
        """Per device, the log of the bandwidth factor and the latency (s) a peer copy passing through it gets
        (``ModelParams.element_transit``): once per kind for the devices whose own attributes and per-element
        keys say nothing, one by one for the others."""
        p = self.params
        devices = self.topology.devices
        node_log = np.zeros(len(devices))
        node_lat = np.zeros(len(devices))
        codes = [NODE_KIND_CODE[k] for k in _TRANSIT_DEVICE_KINDS]
        transit = np.nonzero(np.isin(self.graph.node_kind, codes))[0].tolist()
        attributes = map(attrgetter("attributes"), map(devices.__getitem__, transit))
        specific = [k for k, attrs in zip(transit, attributes)
                    if self._element_keys or (attrs and ("p2p_transit_efficiency" in attrs or "transit_latency_us" in attrs))]
        done = np.zeros(len(devices), dtype=bool)
        for k in specific:
            factor, latency_us = p.element_transit(devices[k])
            node_log[k], node_lat[k] = np.log(factor), latency_us * 1e-6
            done[k] = True
        for code in codes:
            rest = np.nonzero((self.graph.node_kind == code) & ~done)[0]
            if rest.size:
                factor, latency_us = p.element_transit(devices[int(rest[0])])
                node_log[rest], node_lat[rest] = np.log(factor), latency_us * 1e-6
        return node_log, node_lat

    def _duplex_efficiency(self) -> np.ndarray:
        """Per directed edge, the share of its capacity it keeps while its reverse carries a flow too:
        ``pcie_duplex_efficiency_down`` on a GPU's own PCIe link in the direction away from the
        nearest CPU (host to device), ``_up`` towards it, 1 elsewhere. Only a GPU's link: that is
        where it was measured (nvbandwidth's bidirectional host copy), and on the 2 x H100 VM a
        one-way ``staged-pinned`` copy 0 -> 1, whose two legs cross the shared host-bridge link in
        opposite directions, keeps its full rate (49.9 GB/s, docs/runs/survey-h100x2-2026-11-25-run2.json)."""
        g = self.graph
        out = np.ones(g.n_edges)
        gpu = g.node_kind == NODE_KIND_CODE[DeviceKind.GPU.value]
        pcie = (g.edge_kind == KIND_CODE[LinkKind.PCIE.value]) & (gpu[g.edge_src] | gpu[g.edge_dst])
        cpus = [g.node_index[c] for c in g.cpu_ids]
        if not pcie.any() or not cpus:
            return out
        adjacency = csr_matrix((np.ones(g.n_edges), (g.edge_src, g.edge_dst)), shape=(len(g.node_ids),) * 2)
        # hops to the nearest CPU: one multi-source search from every CPU at once (linear in the graph),
        # not one search per CPU
        hops = dijkstra(adjacency, unweighted=True, indices=cpus, min_only=True)
        down = pcie & (hops[g.edge_dst] > hops[g.edge_src])
        up = pcie & (hops[g.edge_dst] < hops[g.edge_src])
        out[down] = self.params["pcie_duplex_efficiency_down"]
        out[up] = self.params["pcie_duplex_efficiency_up"]
        return out

    def _capacity_for(self, A: csc_matrix) -> np.ndarray:
        """Resource capacities for one plan: a GPU's PCIe edge whose reverse also carries a stage of the
        plan keeps its duplex share, where both stages move host memory (a host copy, or a leg of a
        staged copy: the stages that use a host-memory resource). That is what was measured
        (nvbandwidth's bidirectional host copy); peer traffic in both directions of a GPU's link is not
        slowed by it (no measurement says so: on the PCIe presets a stencil exchange is P2P both ways).
        Static over the plan: the share stays after the reverse flow ends."""
        n = self.graph.n_edges
        if not self._duplex_edges.any():
            return self.capacity
        col_of = np.repeat(np.arange(A.shape[1]), np.diff(A.indptr))
        host_cols = np.zeros(A.shape[1], dtype=bool)
        host_cols[col_of[np.isin(A.indices, self._host_memory_rows)]] = True
        used = np.zeros(n, dtype=bool)
        on_edge = (A.indices < n) & host_cols[col_of]
        used[A.indices[on_edge]] = True
        both = used & used[np.arange(n) ^ 1]  # edges 2i and 2i + 1 are the two directions of link i
        shrink = both & self._duplex_edges
        if not shrink.any():
            return self.capacity
        capacity = self.capacity.copy()
        capacity[:n][shrink] *= self._duplex[shrink]
        return capacity

    # ---- endpoints and access ---------------------------------------------------------------------
    def gpu(self, ref: int | str) -> Device:
        if isinstance(ref, (int, np.integer)) and not isinstance(ref, bool):
            found = self._gpu_by_index.get(int(ref))
            if found is None:
                return self.topology.gpu(int(ref))  # raises TopologyError naming the valid indices
            return found
        if isinstance(ref, str) and ref.isdigit():
            return self.gpu(int(ref))
        raise ConfigError(f"not a GPU index: {ref!r}", hint=f"use 0..{self.topology.gpu_count - 1} or 'host'")

    def peer_access(self, a: int, b: int) -> str | None:
        """None when GPUs a and b can access each other's memory, else the reason they cannot.

        The topology says so as the patterns package reads it (``patterns.base.no_peer_access_pairs``:
        ``peer_access.denied_pairs``, and NVML P2P statuses recorded in the GPU
        attribute ``p2p``), by a GPU attribute ``p2p: false`` (no P2P at all), or by
        ``peer_access.max_level`` (e.g. ``"PHB"``: farther pairs have no P2P).
        """
        if self._peers_everywhere() and a in self._gpu_by_index and b in self._gpu_by_index:
            return None
        key = (a, b)
        if key in self._access:
            return self._access[key]
        reason = self._peer_access(a, b)
        self._access[key] = reason
        return reason

    def _peers_everywhere(self) -> bool:
        """Whether every GPU pair has peer access by what ``_peer_access`` reads: no GPU without P2P, no
        pair refused (denied pairs, recorded statuses), no ``peer_access.max_level``. Decided once."""
        if self._all_peers is None:
            if self._no_peer is None:
                from ..patterns.base import no_peer_access_pairs

                self._no_peer = no_peer_access_pairs(self.topology)
            self._all_peers = (not self._no_peer and not self.topology.peer_access.max_level
                               and not any(g.attributes and (g.attributes.get("p2p", True) is False
                                                             or g.attributes.get("p2p_supported", True) is False)
                                           for g in self._gpu_by_index.values()))
        return self._all_peers

    def _peer_access(self, a: int, b: int) -> str | None:
        ga, gb = self.gpu(a), self.gpu(b)
        for g in (ga, gb):
            attrs = g.attributes or {}
            if attrs.get("p2p", True) is False or attrs.get("p2p_supported", True) is False:
                return f"no peer access: {g.label} does not support P2P"
        if self._no_peer is None:
            from ..patterns.base import no_peer_access_pairs

            self._no_peer = no_peer_access_pairs(self.topology)
        if frozenset((ga.index, gb.index)) in self._no_peer:
            return f"no peer access between {ga.label} and {gb.label}"
        max_level = self.topology.peer_access.max_level
        if max_level:
            family = "".join(ch for ch in str(max_level) if not ch.isdigit()) or str(max_level)
            if family not in DISTANCE_OF_CODE:
                raise ConfigError(f"peer_access.max_level {max_level!r} is not a level", hint=f"valid: {', '.join(DISTANCE_OF_CODE)}")
            level = query.pair_level(self.topology, ga, gb)
            # within a node only: GPUs of two nodes meet through their NICs (GPUDirect RDMA), not P2P
            if not level.code.startswith("NET") and level.distance > DISTANCE_OF_CODE[family]:
                return (f"no peer access between {ga.label} and {gb.label}: {level.code} is beyond {max_level} "
                        "(the topology's peer_access.max_level)")
        return None

    def route_gb_per_s(self, src: int | str, dst: int | str) -> float:
        """What the route's links carry between two GPUs (each link's capacity times its kind's
        efficiency, the narrowest; between nodes the first lane's): the rate a NIC's own DMA reaches
        over it (GPUDirect RDMA), with no copy method's efficiency on top."""
        return self._eff_min(self._path(self.gpu(src), self.gpu(dst)))

    # ---- routes -> stages ---------------------------------------------------------------------------
    def _path(self, a: Device, b: Device) -> np.ndarray:
        return self.router.path(a.id, b.id)

    def _raw(self, edges: np.ndarray) -> float:
        return float(self.graph.edge_raw_gb_per_s[edges].min()) if edges.size else float("inf")

    def _eff_min(self, edges: np.ndarray) -> float:
        return float(self.capacity[edges].min()) if edges.size else float("inf")

    def _transit(self, edges: np.ndarray) -> float:
        if edges.size == 0:
            return 1.0
        heads = self.graph.edge_dst[edges[:-1]]
        return float(np.exp(self._node_transit_log[heads].sum() + self._edge_transit_log[edges].sum()))

    def _lat(self, edges: np.ndarray) -> float:
        """Latency of a route: every hop's latency plus what each device it passes through adds."""
        if edges.size == 0:
            return 0.0
        return float(self.edge_latency_s[edges].sum() + self._node_transit_s[self.graph.edge_dst[edges[:-1]]].sum())

    def _level_overhead_s(self, method: str, a: Device, b: Device) -> float:
        """Per-protocol cost of ``method`` at the pair's level (``overhead_us.<method>@<LEVEL>``)."""
        if not self._level_keys:
            return 0.0
        key = (a.id, b.id)
        family = self._family.get(key)
        if family is None:
            code = query.pair_level(self.topology, a, b).code
            family = self._family[key] = "".join(ch for ch in code if not ch.isdigit()) or code
        return self.params.level_overhead_us(method, family) * 1e-6

    def _engine_cap(self, method: str, gpu: Device) -> float:
        return self.params.engine_cap_gb_per_s(gpu.vendor) if method in COPY_ENGINE_METHODS else float("inf")

    def _normalise(self, src: int | str, dst: int | str, method: str) -> tuple[str, str]:
        """(effective method, cap method): host endpoints turn copy methods into h2d/d2h."""
        if method not in METHODS:
            raise ConfigError(f"unknown transfer method {method!r}", hint=f"valid methods: {', '.join(METHODS)}")
        src_host, dst_host = src == HOST, dst == HOST
        if src_host and dst_host:
            raise ConfigError("a transfer from host to host is not a GPU transfer")
        if not (src_host or dst_host):
            if method in HOST_METHODS:
                raise ConfigError(f"method {method!r} needs 'host' at one end, got {src!r} -> {dst!r}")
            return method, method
        if method in PEER_METHODS or method in HOST_METHODS:
            base = H2D.key if src_host else D2H.key
            if method in HOST_METHODS:
                if (get_method(method).host_ends == "src") != src_host:
                    raise ConfigError(f"method {method!r} does not match {src!r} -> {dst!r}")
                return method, method
            return base, method
        raise ConfigError(f"method {method!r} moves data between GPUs; it cannot have 'host' as an end")

    def stages(self, src: int | str, dst: int | str, size_bytes: int, method: str,
               chunk_bytes: int | None = None) -> list[_Stage]:
        """The stages of one transfer (validates the endpoints; raises UserError subclasses)."""
        if size_bytes < 0:
            raise ConfigError(f"transfer size must not be negative: {size_bytes} ({src} -> {dst})")
        eff_method, cap_method = self._normalise(src, dst, method)
        p = self.params
        overhead_s = p.overhead_us(cap_method) * 1e-6
        if eff_method in HOST_METHODS:
            gpu = self.gpu(dst if src == HOST else src)
            cpu = self.router.local_cpu(gpu)
            edges = self._path(cpu, gpu) if src == HOST else self._path(gpu, cpu)
            raw = self._raw(edges)
            cap = min(p.method_efficiency(cap_method) * raw, self._engine_cap(eff_method, gpu))
            weight = 1.0
            fill_s = 0.0
            if get_method(eff_method).pageable:
                direction = H2D.key if src == HOST else D2H.key
                dma = min(cap, self._eff_min(edges))
                cap = staging_rate_gb_per_s(dma, host_copy_rate_gb_per_s(p, direction, size_bytes))
                fill_s = staging_fill_s(p, size_bytes, dma)
                weight = 2.0
            res = np.append(edges, self.graph.host_memory_resource(cpu.id))
            wts = np.append(np.ones(edges.size), weight)
            return [_Stage(res, wts, cap, overhead_s + self._lat(edges) + fill_s, size_bytes, raw)]
        a, b = self.gpu(src), self.gpu(dst)
        if eff_method != LOCAL.key and a.id != b.id:
            overhead_s += self._level_overhead_s(cap_method, a, b)
        if eff_method == LOCAL.key:
            if a.id != b.id:
                raise ConfigError(f"method {LOCAL.key!r} copies inside one GPU; got {a.label} -> {b.label}")
            assert a.index is not None  # gpu() gives GPUs, which have an index
            res = np.array([self.graph.device_memory_resource(a.index)], dtype=np.int64)
            return [_Stage(res, np.array([2.0]), float("inf"), overhead_s, size_bytes,
                           float(self.capacity[res[0]]))]
        if a.id == b.id:
            raise ConfigError(f"transfer from {a.label} to itself with method {method!r}",
                              hint=f"use method {LOCAL.key!r} for a copy inside one GPU")
        if eff_method in NEEDS_PEER_ACCESS:
            assert a.index is not None and b.index is not None  # gpu() gives GPUs, which have an index
            key = (a.index, b.index, method, overhead_s)
            known = self._peer_stages.get(key)  # a peer copy's stage depends on its size only by its bytes
            if known is not None:
                return [_Stage(known.resources, known.weights, known.cap_gb_per_s, known.latency_s, size_bytes,
                               known.raw_gb_per_s)]
            reason = self.peer_access(a.index, b.index)
            if reason and self.peer_fallback and get_method(eff_method).unit == "copy-engine":
                return self.stages(src, dst, size_bytes, CE_NOPEER.key, chunk_bytes)
            if reason:
                raise ConfigError(f"{reason}; method {method!r} needs it", hint="use ce-nopeer, staged or staged-pinned")
            stage = self._peer_stage(a, b, size_bytes, method, overhead_s)
            self._peer_stages[key] = stage
            return [stage]
        # host-staged methods: through host memory of the CPU nearest src
        cpu = self.router.local_cpu(a)
        leg1, leg2 = self._path(a, cpu), self._path(cpu, b)
        mem = self.graph.host_memory_resource(cpu.id)
        engine = min(self._engine_cap(method, a), self._engine_cap(method, b))
        if eff_method == STAGED.key:  # D2H into pageable memory, then H2D from it
            out = []
            for k, (leg, direction) in enumerate(((leg1, D2H.key), (leg2, H2D.key))):
                raw = self._raw(leg)
                dma = min(p.method_efficiency(method) * raw, engine, self._eff_min(leg))
                cap = staging_rate_gb_per_s(dma, host_copy_rate_gb_per_s(p, direction, size_bytes))
                out.append(_Stage(np.append(leg, mem), np.append(np.ones(leg.size), 2.0), cap,
                                  (overhead_s if k == 0 else 0.0) + self._lat(leg) + staging_fill_s(p, size_bytes, dma),
                                  size_bytes, raw))
            return out
        edges = np.concatenate([leg1, leg2])
        raw = self._raw(edges)
        cap = min(p.method_efficiency(method) * raw, engine)
        latency = overhead_s + self._lat(edges)
        if eff_method == STAGED_PINNED.key:
            chunk = DEFAULT_CHUNK_BYTES if chunk_bytes is None else int(chunk_bytes)
            latency += min(size_bytes, chunk) / (min(cap, self._eff_min(leg1)) * _GB)
        return [_Stage(np.append(edges, mem), np.append(np.ones(edges.size), 2.0), cap, latency, size_bytes, raw)]

    def prefetch_routes(self, pairs: Sequence[tuple[int, int]]) -> None:
        """Route many GPU pairs (indices) of a cluster in one vectorised pass before ``stages`` asks for
        them one by one (``Router.prefetch``); indices that are not GPUs are left to ``stages`` to report."""
        ids = self.graph.gpu_ids
        ok = [(int(a), int(b)) for a, b in pairs if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer))
              and 0 <= a < len(ids) and 0 <= b < len(ids)]
        self.router.prefetch([ids[a] for a, _ in ok], [ids[b] for _, b in ok])

    def _peer_stage(self, a: Device, b: Device, size_bytes: int, method: str, overhead_s: float) -> _Stage:
        """The one stage of a peer copy between GPUs a and b (peer access checked by the caller)."""
        p = self.params
        initiator = b if get_method(method).issuer == "dst" else a
        lanes = self.router.lanes(a.id, b.id)
        if len(lanes) > 1:  # spread over several NICs: bytes split evenly, each lane carries rate / n
            n = len(lanes)
            alone = min(min(p.method_efficiency(method) * self._raw(e), self._eff_min(e)) * self._transit(e)
                        for e in lanes) * n
            raw = min(self._raw(e) for e in lanes) * n
            cap = min(alone, self._engine_cap(method, initiator))
            edges = np.concatenate(lanes)
            return _Stage(edges, np.full(edges.size, 1.0 / n), cap,
                           overhead_s + max(self._lat(e) for e in lanes), size_bytes, raw)
        edges = lanes[0]
        raw = self._raw(edges)
        alone = min(p.method_efficiency(method) * raw, self._eff_min(edges)) * self._transit(edges)
        cap = min(alone, self._engine_cap(method, initiator))
        return _Stage(edges, np.ones(edges.size), cap, overhead_s + self._lat(edges), size_bytes, raw)

    def one_stage_arrays(self, src: Sequence[int], dst: Sequence[int], methods: Sequence[str]) -> OneStageArrays | None:
        """The stage of each of many transfers between GPUs (indices), computed with array operations and
        equal, number for number, to what ``stages`` gives one by one: a peer copy over one route (the
        route's edges, weight 1) or a copy inside one GPU (``local``). None where some transfer is anything
        else (a host-staged method, a pair without peer access, a transfer spread over several NIC lanes,
        an index that is not a GPU): the caller asks ``stages``, which handles and reports those.

        Same numbers: sums over a route add the same elements in the same order as ``_lat`` / ``_transit``
        (routes of one length are summed as the rows of one matrix, which NumPy adds exactly as it adds
        one route's array), minima are exact."""
        n = len(src)
        if len(dst) != n or len(methods) != n:
            raise ValueError("src, dst and methods must have one entry per transfer")
        p = self.params
        s_arr = np.asarray(src, dtype=np.int64)
        d_arr = np.asarray(dst, dtype=np.int64)
        ids = self.graph.gpu_ids
        n_gpu = len(ids)
        if n and (min(s_arr.min(), d_arr.min()) < 0 or max(s_arr.max(), d_arr.max()) >= n_gpu
                  or any(self._gpu_by_index.get(k) is None or self._gpu_by_index[k].id != ids[k] for k in range(n_gpu))):
            return None
        local = s_arr == d_arr
        overhead_of = {m: p.overhead_us(m) * 1e-6 for m in set(methods)}
        for m in overhead_of:
            if m != LOCAL.key and m not in NEEDS_PEER_ACCESS:
                return None
        overhead = np.array([overhead_of[m] for m in methods], dtype=float)
        if any((m == LOCAL.key) != bool(is_local) for m, is_local in zip(methods, local.tolist())):
            return None
        remote = np.nonzero(~local)[0]
        if not self._peers_everywhere() and any(self.peer_access(int(s_arr[k]), int(d_arr[k])) is not None
                                                for k in remote.tolist()):
            return None
        if self._level_keys:
            for k in remote.tolist():
                overhead[k] += self._level_overhead_s(methods[k], self.gpu(int(s_arr[k])), self.gpu(int(d_arr[k])))
        if self.router.one_lane:  # every transfer takes its one route: all of them in one vectorised pass
            nodes = self.graph.gpu_nodes
            try:
                path_ptr, path_edges = self.router.node_paths(nodes[s_arr[remote]], nodes[d_arr[remote]])
            except (TopologyError, ConfigError, KeyError):  # ``stages`` reports it, pair by pair
                return None
            route_lengths = np.diff(path_ptr)
        else:
            paths = []
            for k in remote.tolist():
                lanes = self.router.lanes(ids[int(s_arr[k])], ids[int(d_arr[k])])
                if len(lanes) != 1:
                    return None
                paths.append(lanes[0])
            route_lengths = np.array([e.size for e in paths], dtype=np.int64)
            path_edges = np.concatenate(paths) if paths else np.empty(0, dtype=np.int64)
        lengths = np.zeros(n, dtype=np.int64)
        lengths[remote] = route_lengths
        lengths[local] = 1
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        indices = np.empty(int(indptr[-1]), dtype=np.int64)
        weights = np.ones(indices.size)
        cap = np.full(n, np.inf)
        raw = np.empty(n)
        latency = overhead.copy()
        if local.any():
            rows = self.graph.device_memory_resource(0) + s_arr[local]
            indices[indptr[:-1][local]] = rows
            weights[indptr[:-1][local]] = 2.0
            raw[local] = self.capacity[rows]
        if remote.size:
            lens_r = lengths[remote]
            if (lens_r == 0).any():
                return None
            skip = np.repeat(indptr[remote] - np.concatenate([[0], np.cumsum(lens_r)[:-1]]), lens_r)
            indices[skip + np.arange(int(lens_r.sum()))] = path_edges
            eff = np.array([p.method_efficiency(methods[k]) for k in remote.tolist()])
            vendor_cap = {m: {g.vendor: self._engine_cap(m, g) for g in self._gpu_by_index.values()}
                          for m in overhead_of if m != LOCAL.key}
            initiator = [d_arr[k] if get_method(methods[k]).issuer == "dst" else s_arr[k] for k in remote.tolist()]
            engine = np.array([vendor_cap[methods[k]][self._gpu_by_index[int(g)].vendor]
                               for k, g in zip(remote.tolist(), initiator)])
            for length in np.unique(lengths[remote]).tolist():
                rows_k = remote[lengths[remote] == length]
                E = indices[indptr[rows_k][:, None] + np.arange(length)]
                heads = self.graph.edge_dst[E[:, :-1]]
                r = self.graph.edge_raw_gb_per_s[E].min(axis=1)
                eff_min = self.capacity[E].min(axis=1)
                transit = np.exp(self._node_transit_log[heads].sum(axis=1) + self._edge_transit_log[E].sum(axis=1))
                where = np.searchsorted(remote, rows_k)
                alone = np.minimum(eff[where] * r, eff_min) * transit
                cap[rows_k] = np.minimum(alone, engine[where])
                raw[rows_k] = r
                latency[rows_k] += self.edge_latency_s[E].sum(axis=1) + self._node_transit_s[heads].sum(axis=1)
        return OneStageArrays(indptr, indices, weights, cap, latency, raw)

    def one_stage_problem(self, stages: OneStageArrays, size_bytes: np.ndarray, *, cap_gb_per_s: np.ndarray | None = None,
                          weight_scale: np.ndarray | None = None) -> FlowProblem:
        """The problem of one-stage flows given as arrays, as ``_problem`` builds it from their ``_Stage``
        lists: ``cap_gb_per_s`` replaces the stages' caps, ``weight_scale`` multiplies each flow's weights
        (a flow standing for that many identical ones)."""
        n = stages.cap_gb_per_s.size
        data = stages.weights if weight_scale is None else stages.weights * np.repeat(weight_scale, np.diff(stages.indptr))
        A = csc_matrix((data, stages.indices, stages.indptr), shape=(self.graph.n_resources, n))
        A.sum_duplicates()  # as _problem: a route may use one resource twice
        return FlowProblem(
            A=A,
            capacity_gb_per_s=self._capacity_for(A),
            stage_bytes=np.asarray(size_bytes, dtype=float),
            stage_cap_gb_per_s=stages.cap_gb_per_s if cap_gb_per_s is None else np.asarray(cap_gb_per_s, dtype=float),
            stage_latency_s=stages.latency_s,
            stage_next=np.full(n, -1, dtype=np.int64),
            flow_first=np.arange(n, dtype=np.int64),
        )

    # ---- problems ---------------------------------------------------------------------------------------
    def _problem(self, flows: list[list[_Stage]]) -> FlowProblem:
        stages = [s for flow in flows for s in flow]
        lengths = np.array([s.resources.size for s in stages], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        indices = np.concatenate([s.resources for s in stages]) if stages else np.empty(0, dtype=np.int64)
        data = np.concatenate([s.weights for s in stages]) if stages else np.empty(0)
        A = csc_matrix((data, indices, indptr), shape=(self.graph.n_resources, len(stages)))
        A.sum_duplicates()  # a route may use one resource twice (e.g. staged through one uplink)
        nxt = np.full(len(stages), -1, dtype=np.int64)
        first = np.empty(len(flows), dtype=np.int64)
        k = 0
        for f, flow in enumerate(flows):
            first[f] = k
            for j in range(len(flow) - 1):
                nxt[k + j] = k + j + 1
            k += len(flow)
        return FlowProblem(
            A=A,
            capacity_gb_per_s=self._capacity_for(A),
            stage_bytes=np.array([s.size_bytes for s in stages], dtype=float),
            stage_cap_gb_per_s=np.array([s.cap_gb_per_s for s in stages], dtype=float),
            stage_latency_s=np.array([s.latency_s for s in stages], dtype=float),
            stage_next=nxt,
            flow_first=first,
        )

    def predict(self, transfers: TransferPlan | Iterable[Transfer | Sequence], method: str | None = None, *,
                chunk_bytes: int | None = None, rtol: float | None = None) -> list[TransferPrediction]:
        """Predict a concurrent group: a TransferPlan, or transfers / (src, dst, size_bytes) tuples
        with ``method``. Results are in input order. ``rtol``: completion batching (see
        ``contention.simulate``); default exact below AUTO_RTOL_FLOWS transfers, 1% above."""
        if isinstance(transfers, TransferPlan):
            method = method or transfers.method
            items = [_flow_tuple(t) for t in transfers.transfers]
        else:
            items = [_flow_tuple(t) for t in transfers]
        if method is None:
            raise ConfigError("no transfer method given", hint=f"valid methods: {', '.join(METHODS)}")
        flows = [self.stages(src, dst, size, method, chunk_bytes) for src, dst, size, _ in items]
        if not flows:
            return []
        queued: QueuedResult | None = None
        bound: set[int] = set()
        if serialised(method) and len(flows) > 1:  # one after another, each alone (host_copies)
            results = [simulate(self._problem([flow]), rtol=0.0) for flow in flows]
            finish = [float(r.finish_s[0]) for r in results]
            rates = [float(r.first_rate_gb_per_s[0]) for r in results]
            starts = np.concatenate([[0.0], np.cumsum(finish)[:-1]]).tolist()
        else:
            problem, queued, bound = self.copy_engine_bound(items, method, flows)
            if queued is not None:
                finish, rates = queued.finish_s.tolist(), queued.rate_gb_per_s.tolist()
            else:
                result = simulate(problem, rtol=auto_rtol(len(flows), rtol))
                finish = [float(x) for x in result.finish_s]
                rates = [float(x) for x in result.first_rate_gb_per_s]
            starts = [0.0] * len(flows)
        spread = queued.spread if queued is not None else None
        out = []
        for k, ((src, dst, size, role), flow, fin, rate, start) in enumerate(zip(items, flows, finish, rates, starts)):
            out.append(TransferPrediction(
                src=src, dst=dst, method=method, size_bytes=size, elapsed_s=fin,
                gb_per_s=size / fin / _GB if size and fin > 0 else 0.0,
                latency_us=sum(s.latency_s for s in flow) * 1e6,
                rate_gb_per_s=rate,
                theoretical_gb_per_s=min(s.raw_gb_per_s for s in flow),
                role=role,
                start_s=start,
                limited_by="copy engines" if k in bound else "",
                queue=spread,
            ))
        return out

    def copy_engine_bound(self, items: list[tuple[int | str, int | str, int, str]], method: str,
                          flows: list[list[_Stage]]) -> tuple[FlowProblem, QueuedResult | None, set[int]]:
        """The problem of a concurrent group as the GPUs' copy engines and kernels move it
        (``model.issue_queues``, where the measurements are): (the problem, the queued result or None, the
        indices of the copies the copy engines' queues hold, marked ``limited_by: copy engines``).

        A copy-engine peer method (``ce``, ``ce-read``, ``ce-write``) on a vendor whose engines queue
        (``copy_engine_queue.<vendor>``): each issuing GPU (``Method.issuer``) serves its peer copies one
        at a time; each copy's prediction is the expectation over the queue orders, and the group's total
        over the orders is ``TransferPrediction.queue``. A group too large to simulate order by order
        (``issue_queues.can_simulate``): each issuing GPU's copies share one resource at the rate of the
        fastest of them alone (the queue's total time, not its order). Copies with a host end, copies
        between GPUs without peer access (``peer_fallback``) and an issuer's single copy are left as they
        are. Kernel copies (``sm-push``, ``sm-pull``, ``ce-blit``): ``kernel_link_bound``."""
        problem = self._problem(flows)
        spec = get_method(method)
        if method not in NEEDS_PEER_ACCESS or spec.unit not in ("copy-engine", "kernel"):
            return problem, None, set()
        issuers: list[int | None] = []
        for (src, dst, _, _), flow in zip(items, flows):
            issuer: int | None = None
            if src != HOST and dst != HOST and len(flow) == 1:
                a, b = self.gpu(src).index, self.gpu(dst).index
                if a is not None and b is not None and a != b and self.peer_access(a, b) is None:
                    issuer = b if spec.issuer == "dst" else a
            issuers.append(issuer)
        if spec.unit == "kernel":
            return self.kernel_link_bound(problem, [k for k, g in enumerate(issuers) if g is not None], method), None, set()
        end = 1 if spec.issuer == "dst" else 0  # the issuer's end of each copy
        queues = [q for q in issuer_queues(issuers) if self.params.copy_engine_queue(self.gpu(items[q[0]][end]).vendor)]
        if not queues:
            return problem, None, set()
        bound = {k for q in queues for k in q}
        if can_simulate(queues):
            return problem, simulate_orders(problem, queues, float(sum(size for _, _, size, _ in items))), bound
        heads = [problem.flow_first[np.asarray(q)] for q in queues]
        return issuer_rows(problem, heads, [float(problem.stage_cap_gb_per_s[h].max()) for h in heads]), None, bound

    def kernel_link_bound(self, problem: FlowProblem, peer_flows: Sequence[int], method: str) -> FlowProblem:
        """``problem`` with each link that the peer kernel copies ``peer_flows`` cross carrying at most
        ``method_efficiency.<method>`` of its raw rate in all, as one such copy alone does (a kernel's
        stores or loads reach that share of a link whether one copy or several fill it). Measured on
        4 x H200 NV18, 2026-11-28 (docs/runs/h200x4-2026-11-28d/call2/linkscope/ce_queue.txt): sm-push from
        one GPU to 2 or 3 peers 367-369 GB/s in all and into one GPU from two 374.5, one copy alone 368-370,
        where the links carry 394 for copy-engine copies; on a mesh (a link per peer) each copy keeps its
        own link's share."""
        if not peer_flows:
            return problem
        n = self.graph.n_edges
        A = problem.A
        cols = problem.flow_first[np.asarray(peer_flows, dtype=np.int64)]
        rows = np.concatenate([A.indices[A.indptr[c]:A.indptr[c + 1]] for c in cols.tolist()])
        links = np.unique(rows[rows < n])
        capacity = np.array(problem.capacity_gb_per_s, dtype=float)  # a copy: the model's array is shared
        capacity[links] = np.minimum(capacity[links], self.params.method_efficiency(method) * self.graph.edge_raw_gb_per_s[links])
        return dataclasses.replace(problem, capacity_gb_per_s=capacity)

    # ---- the fast path for very many GPU-to-GPU flows -----------------------------------------------------
    def peer_problem(self, src: np.ndarray, dst: np.ndarray, size_bytes: np.ndarray, method: str = DEFAULT_METHOD.key) -> FlowProblem:
        """Single-stage GPU-to-GPU flows (a peer method), built with array operations; for planning
        at cluster scale. P2P access is assumed (no waiver checks)."""
        if method not in PEER_METHODS:
            raise ConfigError(f"the array path takes a peer method ({', '.join(PEER_METHODS)}), got {method!r}")
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        size_bytes = np.asarray(size_bytes, dtype=float)
        n_gpu = self.topology.gpu_count
        for arr, _name in ((src, "src"), (dst, "dst")):
            bad = (arr < 0) | (arr >= n_gpu)
            if bad.any():
                self.topology.gpu(int(arr[bad][0]))
        if (src == dst).any():
            i = int(np.nonzero(src == dst)[0][0])
            raise ConfigError(f"transfer from GPU {int(src[i])} to itself (flow {i})", hint="use method 'local'")
        if (size_bytes < 0).any():
            raise ConfigError(f"transfer size must not be negative: {float(size_bytes[size_bytes < 0][0]):.0f}")
        gpu_nodes = self.graph.gpu_nodes
        indptr, indices = self.router.node_paths(gpu_nodes[src], gpu_nodes[dst])
        n_flows = src.size
        A = csc_matrix((np.ones(indices.size), indices, indptr), shape=(self.graph.n_resources, n_flows))
        # per flow: the narrowest edge (raw and effective), the latency and the log of the transit factors along
        # the route, the node crossed after each edge but the last counted (route_sums: one compiled pass)
        heads = self.graph.edge_dst
        raw, eff_min, lat, transit_log = route_sums(indptr, indices, self.graph.edge_raw_gb_per_s, self.capacity,
                                                    self.edge_latency_s, self._edge_transit_log,
                                                    self._node_transit_s[heads], self._node_transit_log[heads])
        gpu_vendors = [g.vendor for g in self.topology.gpus]
        cap_of = {v: self.params.engine_cap_gb_per_s(v) if method in COPY_ENGINE_METHODS else np.inf
                  for v in set(gpu_vendors)}
        vendors = np.array([cap_of[v] for v in gpu_vendors])
        initiator = dst if get_method(method).issuer == "dst" else src
        alone = np.minimum(self.params.method_efficiency(method) * raw, eff_min) * np.exp(transit_log)
        cap = np.minimum(alone, vendors[initiator])
        return FlowProblem(
            A=A,
            capacity_gb_per_s=self.capacity,
            stage_bytes=size_bytes,
            stage_cap_gb_per_s=cap,
            stage_latency_s=lat + self.params.overhead_us(method) * 1e-6,
            stage_next=np.full(n_flows, -1, dtype=np.int64),
            flow_first=np.arange(n_flows, dtype=np.int64),
        )

    def predict_peer_arrays(self, src, dst, size_bytes, method: str = DEFAULT_METHOD.key, *, rtol: float | None = None) -> SimResult:
        """Finish times of many concurrent GPU-to-GPU flows (arrays of GPU indices and sizes)."""
        return simulate(self.peer_problem(src, dst, size_bytes, method), rtol=auto_rtol(len(src), rtol))

    # ---- latency --------------------------------------------------------------------------------------------
    def latency_us(self, kind: str, src: int | str, dst: int | str, *, method: str | None = None, size_bytes: int = 8) -> float:
        """Predicted latency in µs: ``copy`` (a small copy with ``method``), ``remote-read``
        (pointer chase: base + round trip over the route), ``flag-pingpong`` (one way: base + route)."""
        if kind == "copy":
            chosen = method or (DEFAULT_METHOD.key if HOST not in (src, dst) else (H2D.key if src == HOST else D2H.key))
            return self.predict([(src, dst, size_bytes)], chosen)[0].elapsed_s * 1e6
        if kind not in ("remote-read", "flag-pingpong"):
            raise ConfigError(f"unknown latency kind {kind!r}", hint="valid: remote-read, flag-pingpong, copy")
        if src == HOST and dst == HOST:
            raise ConfigError("a latency from host to host is not a GPU latency")
        ends = []
        for ref, other in ((src, dst), (dst, src)):
            if ref == HOST:
                ends.append(self.router.local_cpu(self.gpu(other)))
            else:
                ends.append(self.gpu(ref))
        if ends[0].id == ends[1].id:
            raise ConfigError(f"latency from {ends[0].label} to itself", hint="pick two different devices")
        if kind == "remote-read":
            measured = self._host_read_fact_us(src, dst)
            if measured is not None:
                return measured
        one_way = self._lat(self._path(ends[0], ends[1])) * 1e6
        if kind == "remote-read":
            back = self._lat(self._path(ends[1], ends[0])) * 1e6
            return self.latency_base_us(kind, src) + one_way + back
        return self.latency_base_us(kind, src) + one_way

    def _host_read_fact_us(self, src: int | str, dst: int | str) -> float | None:
        """A GPU's pointer chase through host memory as its model's measured round trip
        (``GpuFacts.host_read_latency_us``): one end the host, and no hop latency or remote-read base set by
        a calibration or the user. The chase's time is the GPU's request crossing PCIe, the root complex and
        host DRAM and back; a route's hop latencies leave out the DRAM and root complex (the presets' PCIe
        hops of 0.3 us gave 0.6 us on hgx-h200-4's one-hop route and 1.8 us behind dgx-h100's two PCIe
        switches, where H200 and H100 hosts both measure 1.19-1.22 us). None otherwise: the route's sum."""
        if HOST not in (src, dst) or not (self.params.is_default("hop_latency_us")
                                          and self.params.is_default("remote_read_base_us")):
            return None
        facts = facts_of_device(self.gpu(dst if src == HOST else src))
        return None if facts is None else facts.host_read_latency_us

    def latency_base_us(self, kind: str, src: int | str) -> float:
        """Fixed part of a ``remote-read`` or ``flag-pingpong`` latency from ``src``: the parameter
        (``remote_read_base_us`` / ``flag_base_us``) where a topology, calibration or user set it, else
        for a flag the GPU model's (``GpuFacts.flag_base_us``, measured per model), else the default."""
        key = "remote_read_base_us" if kind == "remote-read" else "flag_base_us"
        if kind == "flag-pingpong" and src != HOST and self.params.is_default(key):
            facts = facts_of_device(self.gpu(src))
            base = facts.flag_base_us if facts is not None else None
            if base is not None:
                return base
        return self.params[key]


def predict(topology: Topology, plan: TransferPlan | Iterable[Transfer | Sequence], method: str | None = None, *,
            params: ModelParams | dict | None = None, chunk_bytes: int | None = None) -> list[TransferPrediction]:
    """Per-transfer predicted seconds and GB/s of one concurrent group on ``topology``."""
    return FabricModel(topology, params).predict(plan, method, chunk_bytes=chunk_bytes)


__all__ = ["COPY_ENGINE_METHODS", "NEEDS_PEER_ACCESS", "PEER_METHODS", "FabricModel", "TransferPrediction", "group_elapsed_s",
           "predict"]
