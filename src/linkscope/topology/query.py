"""Read-only questions about a Topology: routes, levels, hops, distance, theoretical bandwidth,
nearest NICs and cores.

Routing rule (what a peer copy takes on the real machine):

1. between two GPUs, a path over the GPU fabric alone (NVLink, xGMI, NVSwitch) when one exists:
   fewest hops, then widest bottleneck. NVIDIA GPUs never forward NVLink traffic; AMD GCDs forward
   xGMI traffic (multi-hop xGMI);
2. otherwise the host path over PCIe / socket links (and, between nodes, the network), with the
   same preference. A GPU is never a transit point except for xGMI and for its own NVLink-C2C link
   to a Grace CPU, which it bridges to the NVLink fabric (GH200 / GB200: "each GPU can access the
   memory of all other Grace CPUs and GPUs in the NVLink domain", NVIDIA GH200 NVL32 / GB200 NVL72
   product pages), so a Grace CPU reaches every GPU of its NVLink domain; a NIC only bridges PCIe
   and network.

These queries serve node-scale use (topo, levels, mapping costs). The fabric model (``model``)
builds its own directed graph for large simulations.
"""
from __future__ import annotations

import heapq
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import TopologyError
from .levels import PairLevel
from .model import Device, DeviceKind, Link, LinkKind, Topology

if TYPE_CHECKING:
    import numpy as np

FABRIC_KINDS = (LinkKind.NVLINK, LinkKind.XGMI)
_NETWORK_WEIGHT = 100.0


def _is_c2c(topology: Topology, link: Link) -> bool:
    """An NVLink between a GPU and a CPU: NVLink-C2C of a Grace superchip."""
    kinds = {topology.by_id[link.a].kind, topology.by_id[link.b].kind}
    return link.kind is LinkKind.NVLINK and kinds == {DeviceKind.GPU, DeviceKind.CPU}


def _transit_ok(topology: Topology, node: Device, in_link: Link | None, out_link: Link) -> bool:
    if in_link is None:  # the source itself
        return True
    if out_link is in_link:  # never back over the link it came in by
        return False
    in_kind, out_kind = in_link.kind, out_link.kind
    if node.kind is DeviceKind.GPU:
        if in_kind is LinkKind.XGMI or out_kind is LinkKind.XGMI:
            return True
        # its own C2C bridged to the NVLink fabric (never C2C to C2C: a GPU does not join two CPUs)
        return in_kind is out_kind is LinkKind.NVLINK and _is_c2c(topology, in_link) != _is_c2c(topology, out_link)
    if node.kind is DeviceKind.NIC:
        return {in_kind, out_kind} == {LinkKind.PCIE, LinkKind.NETWORK}
    return True


def _shortest(topology: Topology, src: str, dst: str, kinds: Sequence[LinkKind] | None) -> tuple[Link, ...] | None:
    """Dijkstra over (device, the link it arrived by) states; weight 1 a hop (100 for network hops)
    plus a tie-break that prefers wider links. Returns the links in order, or None."""
    devices = topology.by_id
    adjacency: dict[str, list[Link]] = {}
    fabric_only = kinds is not None and set(kinds) <= set(FABRIC_KINDS)
    for link in topology.links:
        if kinds is not None and link.kind not in kinds:
            continue
        if fabric_only and not all(devices[end].kind in (DeviceKind.GPU, DeviceKind.NVSWITCH) for end in (link.a, link.b)):
            continue  # the GPU fabric phase never crosses a CPU (CPU-GCD Infinity Fabric links)
        adjacency.setdefault(link.a, []).append(link)
        adjacency.setdefault(link.b, []).append(link)
    State = tuple[str, Link | None]
    start: State = (src, None)
    best: dict[State, float] = {start: 0.0}
    back: dict[State, tuple[State, Link]] = {}
    heap: list[tuple[float, int, State]] = [(0.0, 0, start)]
    counter = 0
    while heap:
        cost, _, state = heapq.heappop(heap)
        node, in_link = state
        if cost > best.get(state, float("inf")):
            continue
        if node == dst:
            path: list[Link] = []
            while state != start:
                state, link = back[state]
                path.append(link)
            return tuple(reversed(path))
        for link in adjacency.get(node, ()):
            if node != src and not _transit_ok(topology, devices[node], in_link, link):
                continue
            nxt = link.other(node)
            weight = (_NETWORK_WEIGHT if link.kind is LinkKind.NETWORK else 1.0) + 1e-3 / max(link.capacity_gb_per_s, 1e-9)
            new_state: State = (nxt, link)
            new_cost = cost + weight
            if new_cost < best.get(new_state, float("inf")):
                best[new_state] = new_cost
                back[new_state] = (state, link)
                counter += 1
                heapq.heappush(heap, (new_cost, counter, new_state))
    return None


def _resolve(topology: Topology, ref: str | int | Device) -> Device:
    if isinstance(ref, Device):
        return ref
    if isinstance(ref, int):
        return topology.gpu(ref)
    return topology.device(ref)


def route(topology: Topology, a: str | int | Device, b: str | int | Device) -> tuple[Link, ...]:
    """The links a transfer from ``a`` to ``b`` crosses (ints are GPU indices, strings device ids)."""
    src, dst = _resolve(topology, a), _resolve(topology, b)
    return _cached_route(topology, src.id, dst.id)


@lru_cache(maxsize=65536)
def _cached_route(topology: Topology, src: str, dst: str) -> tuple[Link, ...]:
    if src == dst:
        return ()
    devices = topology.by_id
    if devices[src].is_gpu and devices[dst].is_gpu:
        fabric = _shortest(topology, src, dst, FABRIC_KINDS)
        if fabric is not None:
            return fabric
    path = _shortest(topology, src, dst, None)
    if path is None:
        raise TopologyError(f"no route between {src!r} and {dst!r} in {topology.name!r}: the topology is disconnected")
    return path


def route_devices(topology: Topology, a: str | int | Device, b: str | int | Device) -> tuple[str, ...]:
    """Device ids along the route, both ends included."""
    src = _resolve(topology, a)
    ids = [src.id]
    for link in route(topology, a, b):
        ids.append(link.other(ids[-1]))
    return tuple(ids)


def hops(topology: Topology, a: str | int | Device, b: str | int | Device) -> int:
    return len(route(topology, a, b))


def pair_level(topology: Topology, a: str | int | Device, b: str | int | Device) -> PairLevel:
    """nvidia-smi style level of a pair (see ``levels``)."""
    src, dst = _resolve(topology, a), _resolve(topology, b)
    if src.id == dst.id:
        return PairLevel("X")
    links = route(topology, src, dst)
    kinds = {link.kind for link in links}
    if kinds == {LinkKind.NVLINK}:
        return PairLevel("NV", min(link.count for link in links))
    if kinds == {LinkKind.XGMI}:
        gpu_transits = sum(1 for d in route_devices(topology, src, dst)[1:-1] if topology.by_id[d].is_gpu)
        if gpu_transits == 0:
            return PairLevel("XGMI", min(link.count for link in links))
        return PairLevel("XGMI-HOP", gpu_transits + 1)
    if LinkKind.NETWORK in kinds:
        return PairLevel("NET")
    if LinkKind.UPI in kinds:
        return PairLevel("SYS")
    inner = [topology.by_id[d] for d in route_devices(topology, src, dst)[1:-1]]
    bridges = sum(1 for d in inner if d.kind is DeviceKind.HOST_BRIDGE)
    cpus = sum(1 for d in inner if d.kind is DeviceKind.CPU)
    if cpus > 1:
        return PairLevel("SYS")
    if bridges > 1:
        return PairLevel("NODE")
    if bridges == 1 or cpus == 1:
        return PairLevel("PHB")
    switches = sum(1 for d in inner if d.kind is DeviceKind.PCIE_SWITCH)
    # A PCIe endpoint (a NIC) attached to a GPU of another package is reached through that package's
    # GPUs: more than one switch's worth of hops (PXB). The GCDs of one package (MI250X) share its NIC.
    ends = [d for d in (src, dst) if d.is_gpu]
    own_packages = {d.package for d in ends if d.package is not None}
    foreign = sum(1 for d in inner if d.is_gpu and (d.package is None or d.package not in own_packages))
    return PairLevel("PXB" if switches > 1 or foreign else "PIX")


def distance(topology: Topology, a: str | int | Device, b: str | int | Device) -> int:
    """The distance metric: max level − pair level (0 for a device with itself)."""
    return pair_level(topology, a, b).distance


def theoretical_gb_per_s(topology: Topology, a: str | int | Device, b: str | int | Device) -> float:
    """Per-direction bottleneck capacity of the route (GB/s); inf for a device with itself."""
    links = route(topology, a, b)
    if not links:
        return float("inf")
    return min(link.capacity_gb_per_s for link in links)


def egress_gb_per_s(topology: Topology, src: str | int | Device, peers: Sequence[str | int | Device]) -> float:
    """Per-direction capacity out of ``src`` towards ``peers`` over the routes it takes to them (GB/s): the
    maximum flow from ``src`` to the peers on the union of ``route(src, p)`` links, each link directed as its
    route crosses it. It is what a collective's rings can carry out of one GPU at once: on a full xGMI mesh
    every route is its own link, so all of them (RCCL runs one ring per link-disjoint Hamiltonian cycle); on
    an NVSwitch node every route leaves through the GPU's bonded NVLinks to the switch, so their count; on a
    PCIe box through the GPU's uplink. inf with no peer other than ``src``."""
    start = _resolve(topology, src).id
    ends = {_resolve(topology, p).id for p in peers} - {start}
    if not ends:
        return float("inf")
    capacity: dict[str, dict[str, float]] = {}
    for end in ends:
        here = start
        for link in route(topology, start, end):
            there = link.other(here)
            capacity.setdefault(here, {})[there] = link.capacity_gb_per_s
            here = there
    sink = "\0sink"  # no device id holds a NUL
    for end in ends:
        capacity.setdefault(end, {})[sink] = float("inf")
    return _max_flow(capacity, start, sink)


def _max_flow(capacity: dict[str, dict[str, float]], source: str, sink: str) -> float:
    """Edmonds-Karp (shortest augmenting paths) over a small directed graph of float capacities."""
    residual: dict[str, dict[str, float]] = {}
    for a, outs in capacity.items():
        for b, cap in outs.items():
            residual.setdefault(a, {})[b] = residual.get(a, {}).get(b, 0.0) + cap
            residual.setdefault(b, {}).setdefault(a, 0.0)
    total = 0.0
    while True:
        parent: dict[str, str] = {source: source}
        queue = [source]
        for node in queue:  # breadth first: the list grows while it is read
            for nxt, cap in residual.get(node, {}).items():
                if cap > 1e-12 and nxt not in parent:
                    parent[nxt] = node
                    queue.append(nxt)
        if sink not in parent:
            return total
        path, node = [], sink
        while node != source:
            path.append((parent[node], node))
            node = parent[node]
        push = min(residual[a][b] for a, b in path)
        for a, b in path:
            residual[a][b] -= push
            residual[b][a] += push
        total += push


def level_matrix(topology: Topology) -> list[list[PairLevel]]:
    gpus = topology.gpus
    return [[pair_level(topology, g, h) for h in gpus] for g in gpus]


def bandwidth_matrix(topology: Topology) -> list[list[float | None]]:
    """Theoretical GB/s per direction for each ordered GPU pair; None on the diagonal."""
    gpus = topology.gpus
    return [[None if g.id == h.id else theoretical_gb_per_s(topology, g, h) for h in gpus] for g in gpus]


def node_labels(topology: Topology) -> np.ndarray:
    """The node (host) of each device, in topology order, as a NumPy array of labels: the connected
    parts of the topology without its network links (scipy's ``connected_components`` numbering).
    The model's routes, the NIC choice and the mapping's hosts all split a topology this way. Computed once
    per topology (read-only array: the twin asks for it a dozen times per collective of a cluster)."""
    import numpy as np
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    def build() -> np.ndarray:
        table = topology.columns()
        local = table.link_kind != list(LinkKind).index(LinkKind.NETWORK)
        rows, cols = table.link_a[local], table.link_b[local]
        n = len(topology.devices)
        labels = connected_components(coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)), directed=False)[1]
        labels.flags.writeable = False
        return labels

    return topology._cached("_node_labels", build)


def nearest_nics(topology: Topology, gpu: int | str | Device) -> tuple[Device, ...]:
    """The NICs at the smallest distance from the GPU (ties all returned, then by hops)."""
    g = _resolve(topology, gpu)
    nics = topology.of_kind(DeviceKind.NIC)
    if not nics:
        return ()
    scored = []
    for nic in nics:
        try:
            scored.append((distance(topology, g, nic), hops(topology, g, nic), nic))
        except TopologyError:
            continue
    if not scored:
        return ()
    best = min(s[:2] for s in scored)
    return tuple(nic for d, h, nic in scored if (d, h) == best)


def local_cpu(topology: Topology, gpu: int | str | Device) -> Device | None:
    """The CPU / NUMA node a GPU is attached to: same numa_node, else the nearest CPU by route."""
    g = _resolve(topology, gpu)
    cpus = topology.of_kind(DeviceKind.CPU)
    if g.numa_node is not None:
        for cpu in cpus:
            if cpu.numa_node == g.numa_node:
                return cpu
    reachable = []
    for cpu in cpus:
        try:
            reachable.append((hops(topology, g, cpu), cpu.id, cpu))
        except TopologyError:
            continue
    return min(reachable)[2] if reachable else None


def nearest_cores(topology: Topology, gpu: int | str | Device) -> tuple[int, ...]:
    cpu = local_cpu(topology, gpu)
    return cpu.cores if cpu else ()


def is_uniform(topology: Topology) -> bool:
    """True when every GPU pair has the same level and theoretical bandwidth (mapping cannot help)."""
    gpus = topology.gpus
    seen = {
        (pair_level(topology, g, h).code, round(theoretical_gb_per_s(topology, g, h), 6))
        for i, g in enumerate(gpus)
        for h in gpus[i + 1 :]
    }
    return len(seen) <= 1
