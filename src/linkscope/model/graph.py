"""The directed graph of the fabric model, built from any Topology.

Each undirected ``Link`` becomes two directed edges (``2*i`` from ``a`` to ``b``, ``2*i+1`` back),
each with the link's per-direction capacity ``count * link_gb_per_s`` (bonded links add up). Besides
the edges the model has two more kinds of shared resource:

* host memory of each CPU / NUMA node (``memory_bw_gb_per_s`` of the CPU device, else the
  ``host_memory_bw_gb_per_s`` parameter): device-to-host writes and host-to-device reads both
  consume it;
* device memory of each GPU (``attributes["memory_bw_gb_per_s"]``, else a ``device_memory_bw_gb_per_s``
  set by the topology, a calibration or the user, else the GPU model's facts (``topology.gpufacts``:
  twice its device-local copy, read + write), else the ``device_memory_bw_gb_per_s`` default), used by
  ``local`` copies (read and write).

Latency of a link without ``latency_us``: ``hop_latency_us`` where set by a topology, calibration or
user; else, for an NVLink between a GPU and an NVSwitch, the GPU model's measured remote read split
over its four hops (``GpuFacts.nvswitch_hop_latency_us``); else the ``hop_latency_us`` default.

Resource indices: edges ``[0, 2L)``, then host memories (one per CPU), then device memories (one per GPU).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np

from ..topology.gpufacts import GpuFacts, facts_of_device, gpu_facts
from ..topology.model import Device, DeviceKind, Link, LinkKind, Topology, cached_on
from .params import LINK_KINDS, ModelParams

KIND_CODE = {kind: i for i, kind in enumerate(LINK_KINDS)}
NODE_KINDS = tuple(k.value for k in DeviceKind)
NODE_KIND_CODE = {kind: i for i, kind in enumerate(NODE_KINDS)}
# from the topology's columns (positions in the enums) to the codes here
_DEVICE_KIND_TO_NODE = np.array([NODE_KIND_CODE[k.value] for k in DeviceKind], dtype=np.int8)
_LINK_KIND_TO_CODE = np.array([KIND_CODE[k.value] for k in LinkKind], dtype=np.int8)
_CPU_POSITION = list(DeviceKind).index(DeviceKind.CPU)


@dataclass(frozen=True, eq=False)
class FabricGraph:
    """Directed edges and shared resources of a topology (arrays indexed by edge / node).

    Attributes:
        topology: the source topology.
        node_ids: device ids in topology order; ``node_index`` maps back.
        node_kind: NODE_KINDS code of each node.
        edge_src, edge_dst: node indices of each directed edge.
        edge_raw_gb_per_s: theoretical capacity of each directed edge (count * link_gb_per_s).
        edge_kind: LINK_KINDS code of each edge.
        edge_latency_us: the link's latency_us, NaN where the topology does not say.
        cpu_ids, gpu_ids: CPU and GPU device ids in resource order.
    """

    topology: Topology
    node_ids: tuple[str, ...]
    node_index: Mapping[str, int]
    node_kind: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_raw_gb_per_s: np.ndarray
    edge_kind: np.ndarray
    edge_latency_us: np.ndarray
    cpu_ids: tuple[str, ...]
    gpu_ids: tuple[str, ...]

    @classmethod
    def from_topology(cls, topology: Topology) -> FabricGraph:
        cols = topology.columns()
        node_ids = tuple(d.id for d in topology.devices) if len(cols.index) != len(topology.devices) else tuple(cols.index)
        node_index = cols.index
        node_kind = _DEVICE_KIND_TO_NODE[cols.device_kind]
        a, b = cols.link_a, cols.link_b
        per_link_raw = cols.link_count * cols.link_gb_per_s
        per_link_kind = _LINK_KIND_TO_CODE[cols.link_kind]
        # edge 2i runs a -> b, edge 2i + 1 back
        src = np.column_stack([a, b]).ravel()
        dst = np.column_stack([b, a]).ravel()
        raw, kind, lat = (np.repeat(x, 2) for x in (per_link_raw, per_link_kind, cols.link_latency_us))
        cpus = tuple(node_ids[i] for i in np.nonzero(cols.device_kind == _CPU_POSITION)[0].tolist())
        gpus = tuple(map(attrgetter("id"), topology.gpus))
        return cls(topology, node_ids, node_index, node_kind, src, dst, raw, kind, lat, cpus, gpus)

    # ---- sizes and resource indices ----------------------------------------------------------
    @property
    def n_edges(self) -> int:
        return len(self.edge_src)

    @property
    def n_resources(self) -> int:
        return self.n_edges + len(self.cpu_ids) + len(self.gpu_ids)

    def host_memory_resource(self, cpu_id: str) -> int:
        slot = self.__dict__.get("_cpu_slot")
        if slot is None:  # a dict, not tuple.index: one look-up per CPU of a cluster stays O(1)
            slot = {c: k for k, c in enumerate(self.cpu_ids)}
            object.__setattr__(self, "_cpu_slot", slot)
        found = slot.get(cpu_id)
        if found is None:
            raise ValueError(f"{cpu_id!r} is not a CPU of the fabric graph")
        return self.n_edges + found

    def device_memory_resource(self, gpu_index: int) -> int:
        return self.n_edges + len(self.cpu_ids) + gpu_index

    @property
    def gpu_nodes(self) -> np.ndarray:
        """Node index of each GPU, in GPU index order (``gpu_ids``)."""
        return self._cached("_gpu_nodes", lambda: np.fromiter(map(self.node_index.__getitem__, self.gpu_ids), dtype=np.int64,
                                                              count=len(self.gpu_ids)))

    # ---- edges -----------------------------------------------------------------------------------
    def _cached(self, key: str, build: Callable[[], Any]) -> Any:
        """A look-up table built on first use (the graph is immutable)."""
        return cached_on(self, key, build)

    def edge_of(self, link: Link, from_id: str) -> int:
        """Directed edge of ``link`` leaving ``from_id``."""
        def build() -> dict[Link, int]:
            index: dict[Link, int] = {}
            for i, each in enumerate(self.topology.links):
                index.setdefault(each, i)
            return index

        i = self._cached("_link_index", build)[link]
        return 2 * i if link.a == from_id else 2 * i + 1

    def pair_table(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted keys ``u * n_nodes + v``, directed edge) for every pair of nodes joined by a link:
        where parallel links join them, the widest (the first of equals)."""
        def build() -> tuple[np.ndarray, np.ndarray]:
            n = len(self.node_ids)
            keys = self.edge_src * n + self.edge_dst
            edges = np.arange(self.n_edges, dtype=np.int64)
            order = np.lexsort((edges, -self.edge_raw_gb_per_s, keys))
            keys, edges = keys[order], edges[order]
            first = np.ones(keys.size, dtype=bool)
            first[1:] = keys[1:] != keys[:-1]
            return keys[first], edges[first]

        return self._cached("_pair_table", build)

    def edges_between(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Directed edges from nodes u to nodes v (arrays; the widest where several links join them);
        KeyError where a pair has no link."""
        keys, edges = self.pair_table()
        q = np.asarray(u, dtype=np.int64) * len(self.node_ids) + np.asarray(v, dtype=np.int64)
        pos = np.minimum(np.searchsorted(keys, q), max(keys.size - 1, 0))
        if keys.size == 0 or (keys[pos] != q).any():
            raise KeyError("no link between the nodes asked")
        return edges[pos]

    def edge_between(self, u: int, v: int) -> int:
        """Directed edge from node u to node v (the widest when several links join them)."""
        return int(self.edges_between(np.array([u]), np.array([v]))[0])

    def edges_of_route(self, src_id: str, links: tuple[Link, ...]) -> np.ndarray:
        """Directed edge ids of a route given as links in order from ``src_id``."""
        out = np.empty(len(links), dtype=np.int64)
        here = src_id
        for k, link in enumerate(links):
            out[k] = self.edge_of(link, here)
            here = link.other(here)
        return out

    # ---- capacities -------------------------------------------------------------------------------
    def edge_efficiency(self, params: ModelParams) -> np.ndarray:
        """Efficiency of each directed edge: per link, per generation, per kind (``ModelParams.link_efficiency``);
        while ``link_efficiency.xgmi`` holds its default, an xGMI link between GPUs whose model states a usable
        rate (``GpuFacts.xgmi_usable_gb_per_s_per_link``) takes that rate's share of the model's raw one."""
        out = self._edge_efficiency_from_params(params)
        if params.is_default("link_efficiency.xgmi"):
            self._apply_xgmi_usable(out, params)
        return out

    def _apply_xgmi_usable(self, out: np.ndarray, params: ModelParams) -> None:
        """The GPU model's usable xGMI fraction on its xGMI links, where no per-link key is set (see
        ``edge_efficiency``); a link whose two GPUs state different fractions takes the smaller."""
        fabric_links = [i for i, link in enumerate(self.topology.links) if link.kind is LinkKind.XGMI
                        and params.per_link_efficiency(f"{link.a}|{link.b}") is None]
        if not fabric_links:
            return
        index, devices = self.node_index, self.topology.devices
        ends = sorted({end for i in fabric_links for end in (self.topology.links[i].a, self.topology.links[i].b)})
        fraction = {d: _xgmi_usable_fraction(f) for d, f in zip(ends, _facts_of([devices[index[d]] for d in ends]))}
        for i in fabric_links:
            link = self.topology.links[i]
            known = [f for f in (fraction[link.a], fraction[link.b]) if f is not None]
            if known:
                out[2 * i] = out[2 * i + 1] = min(known)

    def _edge_efficiency_from_params(self, params: ModelParams) -> np.ndarray:
        if any(k.startswith("link_efficiency.link.") for k in params.values):
            out = np.empty(self.n_edges)
            for i, link in enumerate(self.topology.links):
                out[2 * i] = out[2 * i + 1] = params.link_efficiency(link.kind.value, link.generation, f"{link.a}|{link.b}")
            return out
        # one answer per (kind, generation) present, spread over the links by array indexing
        cols = self.topology.columns()
        generations = list(dict.fromkeys(cols.link_generation))
        position = {g: k for k, g in enumerate(generations)}
        code = np.fromiter(map(position.__getitem__, cols.link_generation), dtype=np.int64, count=len(cols.link_generation))
        pairs, inverse = np.unique(cols.link_kind.astype(np.int64) * max(1, len(generations)) + code, return_inverse=True)
        kinds = list(LinkKind)
        table = np.array([params.link_efficiency(kinds[k // max(1, len(generations))].value, generations[k % max(1, len(generations))])
                          for k in pairs.tolist()], dtype=float)
        return np.repeat(table[inverse.reshape(-1)] if table.size else np.empty(0), 2)

    def edge_latency(self, params: ModelParams) -> np.ndarray:
        """Latency per directed edge in µs where the link does not say: the set ``hop_latency_us``, else the
        GPU model's NVSwitch hop (facts), else the ``hop_latency_us`` default (module docstring)."""
        default = np.full(self.n_edges, float(params["hop_latency_us"]))
        if params.is_default("hop_latency_us"):
            cols = self.topology.columns()
            gpu, nvswitch = (list(DeviceKind).index(k) for k in (DeviceKind.GPU, DeviceKind.NVSWITCH))
            ka, kb = cols.device_kind[cols.link_a], cols.device_kind[cols.link_b]
            links = np.nonzero(np.isnan(cols.link_latency_us) & (cols.link_kind == list(LinkKind).index(LinkKind.NVLINK))
                               & (((ka == gpu) & (kb == nvswitch)) | ((ka == nvswitch) & (kb == gpu))))[0]
            ends = np.where(ka[links] == gpu, cols.link_a[links], cols.link_b[links])
            facts = _facts_of([self.topology.devices[k] for k in ends.tolist()])
            hop = np.array([np.nan if f is None or f.nvswitch_hop_latency_us is None else f.nvswitch_hop_latency_us
                            for f in facts], dtype=float)
            known = ~np.isnan(hop)
            default[2 * links[known]] = hop[known]
            default[2 * links[known] + 1] = hop[known]
        return np.where(np.isnan(self.edge_latency_us), default, self.edge_latency_us)

    def capacities(self, params: ModelParams) -> np.ndarray:
        """Effective capacity (GB/s) of every resource: edges, host memories, device memories."""
        edges = self.edge_raw_gb_per_s * self.edge_efficiency(params)
        devices, index = self.topology.devices, self.node_index
        host = [devices[index[c]].memory_bw_gb_per_s or float(params["host_memory_bw_gb_per_s"]) for c in self.cpu_ids]
        dev = []
        fallback = float(params["device_memory_bw_gb_per_s"])
        use_facts = params.is_default("device_memory_bw_gb_per_s")
        gpus = self.topology.gpus
        facts_of = _facts_of(gpus) if use_facts else [None] * len(gpus)
        for g, facts in zip(gpus, facts_of):
            value = g.attributes.get("memory_bw_gb_per_s") if g.attributes else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                dev.append(float(value))
                continue
            copy_gb_per_s = facts.copy_memory_gb_per_s if facts is not None else None
            dev.append(copy_gb_per_s if copy_gb_per_s else fallback)
        return np.concatenate([edges, np.asarray(host, dtype=float), np.asarray(dev, dtype=float)])

    def degree(self, device_id: str) -> int:
        """Number of links of a device."""
        deg = self.__dict__.get("_degree")
        if deg is None:
            deg = np.bincount(self.edge_src, minlength=len(self.node_ids))
            object.__setattr__(self, "_degree", deg)
        return int(deg[self.node_index[device_id]])

    def has_network(self) -> bool:
        return bool(np.any(self.edge_kind == KIND_CODE[LinkKind.NETWORK.value]))


def _xgmi_usable_fraction(facts: GpuFacts | None) -> float | None:
    """A GPU model's usable share of its xGMI link rate (usable / raw per direction), None where not stated."""
    if facts is None or not facts.xgmi_usable_gb_per_s_per_link or not facts.xgmi_gb_per_s_per_link:
        return None
    return min(1.0, facts.xgmi_usable_gb_per_s_per_link / facts.xgmi_gb_per_s_per_link)


def _facts_of(devices: Sequence[Device]) -> list[GpuFacts | None]:
    """``facts_of_device`` of each device, the product-name look-up (which it tries first) made once per name."""
    by_name: dict[str | None, GpuFacts | None] = {}
    out: list[GpuFacts | None] = []
    for d in devices:
        if d.kind is not DeviceKind.GPU:
            out.append(None)
            continue
        if d.name not in by_name:
            by_name[d.name] = gpu_facts(d.name)
        found = by_name[d.name]
        out.append(found if found is not None else facts_of_device(d))
    return out
