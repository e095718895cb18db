"""Clusters: a Topology of several hosts (or ``--nodes K`` copies of one node) as a cost model
built from its structure, without a GPU-pair matrix.

A host is a connected part of the topology once network links are removed; the network part is
what is left (switches joined by network links). Every host must have the same inner layout (a
cluster of identical nodes). The cost of a GPU pair is then

* on one host: the node's own GPU-pair cost (``topology_cost`` on one host, a g x g matrix);
* on two hosts: ``combine(access[x], fabric[s(a, x), s(b, y)], access[y])`` per term, where
  ``access[x]`` is local GPU x's way out (the route to the NIC(s) ``model.nics`` chooses, nearest by
  default, and the NIC's network link; several NICs share the bytes, the first gives the switch),
  ``s(a, x)`` the network switch the NIC of GPU x on host a plugs into, and ``fabric`` the
  switch-to-switch cost (shortest-latency path; latency added up, the narrowest link for
  bandwidth). Latency terms add (``sum``); per-byte terms take the slowest part (``max``).

Building it costs one route per local GPU plus a shortest-path search over the switches: no
O(n^2) route queries and no O(n^3) step, whatever the number of hosts.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..errors import UserError
from ..model.nics import NicSpec, nic_choice_of, nics_by_gpu
from ..patterns.methods import DEFAULT_METHOD
from ..topology import query
from ..topology.levels import DISTANCE_OF_CODE
from ..topology.model import Device, DeviceKind, LinkKind, Topology
from .cost import DEFAULT_LINK_LATENCY_US, CostModel, software_latency_us, topology_cost


@dataclass(frozen=True)
class ClusterCost:
    """Per-term costs of a cluster of ``hosts`` identical nodes of ``g`` GPUs.

    Attributes:
        node: the node's CostModel (g x g per term; its metric, flows and unit are the cluster's).
        hosts: number of hosts.
        attach: hosts x g: network switch (index into ``fabric``) behind each GPU's NIC.
        access: one length-g vector per term: cost of local GPU x's way to its switch.
        fabric: one switches x switches matrix per term (diagonal: NIC to NIC through one switch).
        combine: per term, ``sum`` (latency-like) or ``max`` (per-byte: the narrowest part).
        host_names: one name per host.
        gpu_of_host: hosts x g: the topology's global GPU index of each (host, local GPU), or
            None for ``--nodes`` copies of one node.
        nic_names: per host, its NICs' OS names in host 0's order (host 0's name -> host k's
            name by position); None for copies.
        uuids: per host and local GPU, the GPU UUID where the topology knows it.
        topology: name of the cluster ('' for copies).
        notes: how the cross-host costs were obtained.
    """

    node: CostModel
    hosts: int
    attach: np.ndarray
    access: tuple[np.ndarray, ...]
    fabric: tuple[np.ndarray, ...]
    combine: tuple[str, ...]
    host_names: tuple[str, ...]
    gpu_of_host: np.ndarray | None = None
    nic_names: tuple[tuple[str, ...], ...] | None = None
    uuids: tuple[tuple[str | None, ...], ...] | None = None
    topology: str = ""
    notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def gpus_per_host(self) -> int:
        return self.node.gpus

    @property
    def flows(self) -> tuple[str, ...]:
        return self.node.flows

    def pair_cost(self, term: int, host_a: np.ndarray, gpu_a: np.ndarray, host_b: np.ndarray,
                  gpu_b: np.ndarray) -> np.ndarray:
        """Cost per unit of flow of each (host_a, gpu_a) -> (host_b, gpu_b) pair (arrays)."""
        inner = self.node.costs[term][gpu_a, gpu_b]
        sa, sb = self.attach[host_a, gpu_a], self.attach[host_b, gpu_b]
        acc, fab = self.access[term], self.fabric[term][sa, sb]
        if self.combine[term] == "sum":
            cross = acc[gpu_a] + fab + acc[gpu_b]
        else:
            cross = np.maximum(np.maximum(acc[gpu_a], fab), acc[gpu_b])
        return np.where(host_a == host_b, inner, cross)

    def host_cost(self, term: int) -> np.ndarray:
        """hosts x hosts: cost of a pair of local GPU 0s on two hosts (0 on the diagonal); the
        cross-host branch of ``pair_cost`` over whole rows (no hosts^2 index arrays: 4,096 hosts)."""
        switch = self.attach[:, 0]
        acc, out = float(self.access[term][0]), self.fabric[term][np.ix_(switch, switch)]  # a fresh array
        if self.combine[term] == "sum":  # in place (hosts^2 temporaries: 128 MiB each at 4,096 hosts)
            out += acc
            out += acc
        else:
            np.maximum(out, acc, out=out)
        np.fill_diagonal(out, 0.0)
        return out

    def objective(self, flows: Sequence[sp.spmatrix], host_of_rank: np.ndarray, gpu_of_rank: np.ndarray) -> float:
        """Sum over terms and rank pairs of flow x pair cost."""
        total = 0.0
        for term, f in enumerate(flows):
            coo = sp.coo_matrix(f)
            if coo.nnz == 0:
                continue
            cost = self.pair_cost(term, host_of_rank[coo.row], gpu_of_rank[coo.row],
                                  host_of_rank[coo.col], gpu_of_rank[coo.col])
            total += float((coo.data * cost).sum())
        return total


def copies(node: CostModel, nodes: int, network: Sequence[float], host_names: Sequence[str] | None = None,
           node_name: str = "node") -> ClusterCost:
    """``nodes`` copies of one node joined by a network of constant per-term cost ``network``."""
    names = tuple(host_names) if host_names else tuple(f"{node_name}{k}" for k in range(nodes))
    if len(names) < nodes:
        raise UserError(f"{len(names)} host names for {nodes} nodes")
    g = node.gpus
    return ClusterCost(node, nodes, np.zeros((nodes, g), dtype=int), tuple(np.zeros(g) for _ in node.flows),
                       tuple(np.full((1, 1), float(c)) for c in network), tuple("max" for _ in node.flows),
                       names[:nodes])


# ---- hosts of a topology -------------------------------------------------------------------------
@dataclass(frozen=True)
class Hosts:
    """The hosts of a topology: ``components[k]`` device ids of host k (hosts ordered by their
    lowest GPU index), ``gpus[k]`` its global GPU indices (ascending), ``switches`` the network part."""

    components: tuple[tuple[str, ...], ...]
    gpus: tuple[tuple[int, ...], ...]
    switches: tuple[str, ...]


def split_hosts(topology: Topology) -> Hosts:
    """Hosts = connected parts of the topology without its network links."""
    ids = [d.id for d in topology.devices]
    position = {d: k for k, d in enumerate(ids)}
    networked = {end for link in topology.links if link.kind is LinkKind.NETWORK for end in (link.a, link.b)}
    label = query.node_labels(topology)
    by_label: dict[int, list[str]] = {}
    for k, d in enumerate(ids):
        by_label.setdefault(int(label[k]), []).append(d)
    gpu_sets: dict[int, list[int]] = {}
    for dev in topology.devices:
        if dev.is_gpu and dev.index is not None:
            gpu_sets.setdefault(int(label[position[dev.id]]), []).append(int(dev.index))
    host_labels = sorted(gpu_sets, key=lambda lab: min(gpu_sets[lab]))
    switches = tuple(d for lab, members in by_label.items() if lab not in gpu_sets for d in members
                     if d in networked)
    return Hosts(tuple(tuple(by_label[lab]) for lab in host_labels),
                 tuple(tuple(sorted(gpu_sets[lab])) for lab in host_labels), switches)


def _host_topology(topology: Topology, members: Sequence[str], gpus: Sequence[int], name: str) -> Topology:
    """One host as its own Topology (GPUs renumbered 0..g-1 in global order, network links dropped)."""
    keep = set(members)
    local = {g: k for k, g in enumerate(gpus)}
    devices = tuple(replace(d, index=local[d.index]) if d.is_gpu and d.index is not None else d
                    for d in topology.devices if d.id in keep)
    links = tuple(link for link in topology.links if link.a in keep and link.b in keep)
    denied = tuple((local[a], local[b]) for a, b in topology.peer_access.denied_pairs if a in local and b in local)
    return Topology(name=name, devices=devices, links=links, source=topology.source,
                    description=f"one host of {topology.name}", model_params=topology.model_params,
                    peer_access=replace(topology.peer_access, denied_pairs=denied), run_choices=topology.run_choices)


def _signatures(topology: Topology, hosts: Hosts) -> list[tuple]:
    """Per host: its devices' kinds and names and its links' kinds and numbers, sorted."""
    by_id = topology.by_id
    host_of = {d: k for k, members in enumerate(hosts.components) for d in members}
    links: list[list[tuple]] = [[] for _ in hosts.components]
    for link in topology.links:
        k = host_of.get(link.a)
        if k is not None and host_of.get(link.b) == k:
            links[k].append((link.kind.value, link.count, link.link_gb_per_s, link.latency_us or -1.0))
    return [(tuple(sorted((by_id[d].kind.value, by_id[d].name, len(by_id[d].cores)) for d in members)),
             tuple(sorted(links[k]))) for k, members in enumerate(hosts.components)]


def _link_latency(link) -> float:
    return float(link.latency_us) if link.latency_us is not None else DEFAULT_LINK_LATENCY_US[link.kind]


def _fabric(topology: Topology, switches: Sequence[str]) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Switch-to-switch latency (µs) and bottleneck bandwidth (GB/s) over network links, along the
    lowest-latency path (ties: fewer hops); latency inf between switches no path joins."""
    index = {s: k for k, s in enumerate(switches)}
    m = len(switches)
    lat = np.zeros((m, m))
    cap = np.full((m, m), np.inf)
    rows, cols, weights, caps = [], [], [], []
    for link in topology.links:
        if link.kind is LinkKind.NETWORK and link.a in index and link.b in index:
            for a, b in ((link.a, link.b), (link.b, link.a)):
                rows.append(index[a])
                cols.append(index[b])
                weights.append(_link_latency(link) + 1e-9)  # the epsilon prefers fewer hops on ties
                caps.append(link.capacity_gb_per_s)
    if m == 0:
        return lat, cap, index
    capacity = sp.csr_matrix((caps, (rows, cols)), shape=(m, m)).toarray()
    graph = sp.csr_matrix((weights, (rows, cols)), shape=(m, m))
    dist, pred = dijkstra(graph, directed=True, return_predecessors=True)
    # the bottleneck along each path, for all pairs at once, one hop further per round: a pair's
    # value is min(its predecessor pair's value, the last link), ready once that pair's is
    done = np.eye(m, dtype=bool)
    todo = np.isfinite(dist) & ~done
    while todo.any():
        s_idx, t_idx = np.nonzero(todo)
        p_idx = pred[s_idx, t_idx]
        ready = done[s_idx, p_idx]
        if not ready.any():
            break  # cannot happen on a predecessor tree; a guard against looping forever
        s_idx, t_idx, p_idx = s_idx[ready], t_idx[ready], p_idx[ready]
        cap[s_idx, t_idx] = np.minimum(cap[s_idx, p_idx], capacity[p_idx, t_idx])
        done[s_idx, t_idx] = True
        todo[s_idx, t_idx] = False
    return np.round(dist, 6), cap, index  # rounding drops the hop epsilon; inf: no path


def topology_cluster_cost(topology: Topology, metric: str, method: str = DEFAULT_METHOD.key, hosts: Hosts | None = None,
                          host_names: Sequence[str] | None = None, nics: NicSpec | str | None = None) -> ClusterCost:
    """The ClusterCost of a multi-host topology (see the module doc); ``nics``: the NIC choice
    (``model.nics``; default the topology's, else nearest)."""
    spec = nic_choice_of(topology, nics)
    hosts = hosts or split_hosts(topology)
    sizes = {len(g) for g in hosts.gpus}
    if len(sizes) != 1:
        raise UserError(f"topology {topology.name!r}: hosts hold different numbers of GPUs ({sorted(sizes)})",
                        hint="cluster mapping needs identical nodes; map each node separately")
    signatures = _signatures(topology, hosts)
    for k, signature in enumerate(signatures[1:], start=1):
        if signature != signatures[0]:
            raise UserError(f"topology {topology.name!r}: host {k} differs from host 0 (devices or links)",
                            hint="cluster mapping needs identical nodes; map each node separately")
    g = sizes.pop()
    node_topology = _host_topology(topology, hosts.components[0], hosts.gpus[0], f"{topology.name} host 0")
    node = topology_cost(node_topology, metric, method)
    lat, cap, index = _fabric(topology, hosts.switches)
    by_id = topology.by_id
    nic_link: dict[str, tuple[int, float, float]] = {}
    for link in topology.links:
        if link.kind is LinkKind.NETWORK:
            for nic, sw in ((link.a, link.b), (link.b, link.a)):
                if by_id[nic].kind is DeviceKind.NIC and sw in index and nic not in nic_link:
                    nic_link[nic] = (index[sw], _link_latency(link), link.capacity_gb_per_s)
    nics_of_host = [[d for d in members if by_id[d].kind is DeviceKind.NIC and d in nic_link]
                    for members in hosts.components]
    if not nics_of_host[0]:
        raise UserError(f"topology {topology.name!r}: hosts have no NIC on the network",
                        hint="each host needs a NIC with a network link to a switch")
    local_nics = [d.id for d in node_topology.devices if d.kind is DeviceKind.NIC and d.id in nic_link]
    access_lat, access_bw = np.zeros(g), np.zeros(g)
    nic_pos = np.zeros(g, dtype=int)
    chosen = nics_by_gpu(node_topology, range(g), spec)
    for x in range(g):
        lanes = [n.id for n in chosen[x] if n.id in nic_link] or local_nics[:1]
        nic_pos[x] = nics_of_host[0].index(lanes[0])
        lane_lat, lane_bw = [], []
        for nic in lanes:
            links = query.route(node_topology, x, nic)
            _, nic_lat, nic_cap = nic_link[nic]
            lane_lat.append(sum(_link_latency(link) for link in links) + nic_lat)
            lane_bw.append(min([link.capacity_gb_per_s for link in links] + [nic_cap]))
        access_lat[x] = max(lane_lat)
        access_bw[x] = len(lanes) * min(lane_bw)  # bytes split evenly over the lanes: the slowest one paces them
    attach = np.array([[nic_link[nics[p]][0] for p in nic_pos] for nics in nics_of_host], dtype=int)
    used = np.unique(attach)
    apart = np.argwhere(np.isinf(lat[np.ix_(used, used)]))
    if apart.size:
        a, b = (hosts.switches[int(used[k])] for k in apart[0])
        raise UserError(f"topology {topology.name!r}: no network path between {a} and {b}, which the GPUs' NICs "
                        f"(NIC choice {spec.text}) plug into",
                        hint="choose NICs on one part of the network (--nic), or join the switches in the topology")
    us_per_byte = 1e6 / (cap * 1e9)  # inf capacity (same switch) -> 0
    access_upb = 1e6 / (access_bw * 1e9)
    access: list[np.ndarray] = []
    fabric: list[np.ndarray] = []
    combine: list[str] = []
    notes = list(node.notes)
    for flow, _term in zip(node.flows, range(len(node.flows))):
        if metric == "distance":
            access.append(np.zeros(g))
            fabric.append(np.full(lat.shape, float(DISTANCE_OF_CODE["NET"])))
            combine.append("max")
        elif flow == "messages":
            # the node's latencies carry the fixed software cost on every pair; so do these
            software = software_latency_us(topology, method)[0] if metric != "model" else 0.0
            access.append(access_lat)
            fabric.append(lat + software)
            combine.append("sum")
        else:
            access.append(access_upb)
            fabric.append(us_per_byte)
            combine.append("max")
    if metric == "model":
        notes.append("across hosts the model metric uses the topology's link latencies and bottleneck "
                     "bandwidths (the fabric model covers one host)")
    names = tuple(host_names) if host_names else tuple(_host_name(by_id, members, k)
                                                       for k, members in enumerate(hosts.components))
    if len(names) < len(hosts.gpus):
        raise UserError(f"{len(names)} host names for {len(hosts.gpus)} hosts")
    all_nics = [[d for d in members if by_id[d].kind is DeviceKind.NIC] for members in hosts.components]
    gpu_by_index = {d.index: d for d in topology.devices if d.is_gpu}
    return ClusterCost(node, len(hosts.gpus), attach, tuple(access), tuple(fabric), tuple(combine),
                       names[:len(hosts.gpus)], np.array(hosts.gpus, dtype=int),
                       tuple(tuple(by_id[d].device_name or d for d in nics) for nics in all_nics),
                       tuple(tuple(gpu_by_index[i].uuid for i in gpus) for gpus in hosts.gpus),
                       topology.name, tuple(notes))


def node_topology(topology: Topology, hosts: Hosts | None = None) -> Topology:
    """Host 0 of a multi-host topology as its own Topology (local GPU numbering)."""
    hosts = hosts or split_hosts(topology)
    return _host_topology(topology, hosts.components[0], hosts.gpus[0], f"{topology.name} host 0")


def _host_name(by_id: Mapping[str, Device], members: Sequence[str], k: int) -> str:
    """A host's name: the common ``NAME.`` prefix of its device ids (``n3.gpu0`` -> ``n3``), else ``nodeK``."""
    prefixes = {d.split(".", 1)[0] for d in members if "." in d}
    if len(prefixes) == 1 and all("." in d for d in members):
        return prefixes.pop()
    return f"node{k}"


__all__ = ["ClusterCost", "Hosts", "copies", "node_topology", "split_hosts", "topology_cluster_cost"]
