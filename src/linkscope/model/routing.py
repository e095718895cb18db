"""Routes: which directed edges a transfer between two devices crosses.

Node scale (a topology without network links): ``topology.query.route`` (GPU fabric first, then
the PCIe / socket path; NVIDIA GPUs never forward, AMD GCDs forward xGMI), cached per pair.

Cluster scale (network links present), hierarchical so that 100,000 flows on thousands of GPUs
route in well under a second:

* the topology splits into *components* (nodes) joined only by network links;
* components with the same structure share one small representative topology, on which
  ``query.route`` answers intra-node routes and ``nics.select_nics`` picks each GPU's NIC
  (nearest, ties spread by the GPU's local order: the rule the mapping and ``launch`` use); the answers are cached per structure;
* between nodes a transfer goes GPU -> its NIC -> network -> the peer's NIC -> GPU; the network
  part walks shortest switch paths, choosing among equal-cost next hops by the destination NIC's
  rank (d-mod-k, as static fat-tree routing does: a permutation between two leaves spreads over
  all spines), with hop distances from each egress switch computed once by breadth-first search.

Many pairs at once (``Router.node_paths``, the array path of ``FabricModel.peer_problem``): nodes are grouped by
structure in one pass of array operations; each end's NIC and its route to it are worked out once per (structure,
position in the node) and spread over the ends by indexing, and the network part goes hop by hop over all pairs
at once, with the edges between switches read from a table (issue 41: the routes of a million pairs of a
32,768-GPU fat tree in about 0.3 s, the answers of ``path`` pair by pair).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components, shortest_path

from ..errors import ConfigError, TopologyError
from ..topology import query
from ..topology.levels import PairLevel
from ..topology.model import Device, DeviceKind, Link, LinkKind, Topology
from .graph import KIND_CODE, NODE_KIND_CODE, FabricGraph
from .nics import NicSpec, choose_from, select_nics

_NET = KIND_CODE[LinkKind.NETWORK.value]
_SWITCH = NODE_KIND_CODE[DeviceKind.NETWORK_SWITCH.value]
_NIC = NODE_KIND_CODE[DeviceKind.NIC.value]
_FORCED_PAIRS_CHECKED = 1 << 16  # nodes_alike: switch pairs whose paths it walks (rails x rails in practice)
_DENSE_SWITCH_PAIRS = 1 << 22  # switch pairs up to which tables by (switch, switch) are dense arrays (32 MB of int64)


def check_connected(topology: Topology, device_id: str, degree: int | None = None) -> None:
    """A clear error for a device with no link at all (``degree``: its link count, if known)."""
    if (degree if degree is not None else len(topology.links_of(device_id))) == 0:
        dev = topology.device(device_id)
        raise TopologyError(f"{dev.label} ({dev.id}) has no link in {topology.name!r}: the topology is disconnected",
                            hint="add its links to the topology file")


@dataclass
class _Structure:
    """A representative node topology shared by components of identical structure."""

    topology: Topology
    routes: dict[tuple[int, int], np.ndarray]  # (local src, local dst) -> rows of (local link, reversed)
    nic_of_gpu: dict[int, int | None]
    nearest: dict[int, tuple[int, ...]] = field(default_factory=dict)  # local GPU -> local nearest NICs
    levels: dict[tuple[int, int], PairLevel] = field(default_factory=dict)  # local pair -> level


class Router:
    """Routes between device ids of one FabricGraph, cached."""

    def __init__(self, graph: FabricGraph, nic_spec: NicSpec | None = None) -> None:
        self.graph = graph
        self.topology = graph.topology
        self.nic_spec = nic_spec or NicSpec()
        self._cache: dict[tuple[str, str], np.ndarray] = {}
        self._hier = _Hierarchy(graph, self.nic_spec) if graph.has_network() else None

    @property
    def one_lane(self) -> bool:
        """Whether every transfer takes one route (``lanes`` gives ``path``'s): no NIC choice that
        spreads a transfer over several NICs."""
        return self._hier is None or self.nic_spec.rule == "nearest"

    def lanes(self, src_id: str, dst_id: str) -> list[np.ndarray]:
        """Routes of one transfer, one per NIC lane (several when the NIC choice spreads a transfer
        over several NICs: its bytes split evenly over them); one route within a node."""
        if self._hier is None or self.one_lane:  # the cached route
            return [self.path(src_id, dst_id)]
        return self._hier.lanes(src_id, dst_id)

    def nics_of(self, gpu: Device) -> tuple[Device, ...]:
        """The NIC(s) the GPU's inter-node traffic uses under this router's NIC choice."""
        if self._hier is None:
            return ()
        node = self.graph.node_index[gpu.id]
        return tuple(self.topology.devices[i] for i in self._hier._nics_of(node).tolist())

    def nearest_nics(self, gpu: Device) -> tuple[Device, ...]:
        """``query.nearest_nics`` of a GPU, answered on its node's representative topology in a cluster
        (a NIC of another node is always farther than one of its own: through the network), once per
        node structure; the whole topology's answer where the node has no NIC or there is no network."""
        if self._hier is not None:
            found = self._hier.nearest_nics(gpu)
            if found:
                return found
        return query.nearest_nics(self.topology, gpu)

    def pair_level(self, a: Device, b: Device) -> PairLevel:
        """``query.pair_level`` of two devices; for two of one node of a cluster answered on the node's
        representative topology (the route between them stays in the node), once per node structure."""
        if self._hier is not None:
            found = self._hier.pair_level(a, b)
            if found is not None:
                return found
        return query.pair_level(self.topology, a, b)

    def path(self, src_id: str, dst_id: str) -> np.ndarray:
        """Directed edge ids from ``src_id`` to ``dst_id`` (empty for a device with itself)."""
        key = (src_id, dst_id)
        edges = self._cache.get(key)
        if edges is None:
            if src_id == dst_id:
                edges = np.empty(0, dtype=np.int64)
            elif self._hier is not None:
                edges = self._hier.path(src_id, dst_id)
            else:
                for end in (src_id, dst_id):
                    check_connected(self.topology, end, self.graph.degree(end))
                links = query.route(self.topology, src_id, dst_id)
                edges = self.graph.edges_of_route(src_id, links)
            self._cache[key] = edges
        return edges

    def paths(self, src_ids: list[str], dst_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Routes of many pairs at once as (indptr, edge ids), CSR style: pair k's edges are
        ``indices[indptr[k]:indptr[k+1]]``. Vectorised between nodes of a cluster."""
        index = self.graph.node_index
        s = np.fromiter((index[x] for x in src_ids), dtype=np.int64, count=len(src_ids))
        d = np.fromiter((index[x] for x in dst_ids), dtype=np.int64, count=len(dst_ids))
        return self.node_paths(s, d)

    def prefetch(self, src_ids: list[str], dst_ids: list[str]) -> None:
        """Route the pairs not routed yet in one vectorised pass (cluster, one NIC per GPU), so that
        ``path`` answers them from the cache; pairs it cannot route are left to ``path`` (its errors)."""
        if self._hier is None or self.nic_spec.rule != "nearest":
            return
        todo = list({(a, b) for a, b in zip(src_ids, dst_ids) if a != b and (a, b) not in self._cache})
        if len(todo) <= 64:
            return
        index = self.graph.node_index
        try:
            indptr, indices = self.node_paths(np.array([index[a] for a, _ in todo], dtype=np.int64),
                                              np.array([index[b] for _, b in todo], dtype=np.int64))
        except (TopologyError, ConfigError, KeyError):
            return
        for k, key in enumerate(todo):
            self._cache[key] = indices[indptr[k]:indptr[k + 1]]

    def node_paths(self, s: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``paths`` of node indices (arrays)."""
        if self._hier is not None and s.size > 64:
            return self._hier.paths_array(s, d, self.path)
        ids = self.graph.node_ids
        paths = [self.path(ids[a], ids[b]) for a, b in zip(s.tolist(), d.tolist())]
        lengths = np.fromiter((p.size for p in paths), dtype=np.int64, count=len(paths))
        indptr = np.concatenate([[0], np.cumsum(lengths)])
        return indptr, (np.concatenate(paths) if paths else np.empty(0, dtype=np.int64))

    def nodes_alike(self, comps: list[int]) -> str | None:
        """None when this router routes the nodes ``comps`` (component numbers of ``query.node_labels``) alike,
        position by position, so that any permutation of them maps every route onto a route; else why not.
        Alike: one NIC per GPU chosen nearest on the node's structure, every node of one structure (the
        routes inside a node and the NIC choice are answered on it), and a forced path between nodes: every NIC
        hangs on one switch and between any two such switches every hop has one candidate, so no equal-cost
        choice depends on a NIC's rank in the cluster (``_network_path``). That the nodes' network links reach
        the same switches is the caller's to check (``model.symmetry``)."""
        hier = self._hier
        if hier is None:
            return "no network: one node"
        if self.nic_spec.rule != "nearest":
            return f"NIC choice {self.nic_spec.text!r} is not 'nearest'"
        first = hier._structure(comps[0])
        if any(hier._structure(c) is not first for c in comps[1:]):
            return "the nodes differ in structure (devices or links)"
        attach: set[int] = set()
        chosen = set(comps)
        for nic in np.nonzero(self.graph.node_kind == _NIC)[0].tolist():
            if int(hier.comp_of[nic]) not in chosen:
                continue
            switches = [v for v in hier.net_neighbours(nic) if self.graph.node_kind[v] == _SWITCH]
            if len(switches) > 1 or len(hier.net_neighbours(nic)) != len(switches):
                return f"NIC {self.graph.node_ids[nic]!r} has several network links or a link to a non-switch"
            attach.update(switches)
        if len(attach) ** 2 > _FORCED_PAIRS_CHECKED:
            return f"{len(attach)} switches carry NICs: too many pairs to prove forced paths between them"
        for a in attach:
            for b in attach:
                here, target = int(hier.sw_pos[a]), int(hier.sw_pos[b])
                if not np.isfinite(hier._hop_distance(np.array([here]), np.array([target]))[0]):
                    return "the network is disconnected"
                while here != target:
                    hops = hier._hops_towards(here, target)
                    if hops.size != 1:
                        return "equal-cost network paths (the choice among them depends on the NIC's rank)"
                    here = int(hops[0])
        return None

    def local_cpu(self, gpu: Device) -> Device:
        """The CPU (host memory) nearest a GPU: same NUMA node, else nearest by route."""
        if self._hier is not None:
            cpu = self._hier.local_cpu(gpu)
        else:
            cpu = query.local_cpu(self.topology, gpu)
        if cpu is None:
            raise TopologyError(f"{gpu.label} has no CPU / host memory it can reach in {self.topology.name!r}")
        return cpu


class _Hierarchy:
    def __init__(self, graph: FabricGraph, nic_spec: NicSpec) -> None:
        self.graph = graph
        self.nic_spec = nic_spec
        self._nics: dict[int, np.ndarray] = {}
        topo = graph.topology
        n = len(graph.node_ids)
        local = graph.edge_kind[0::2] != _NET
        self.comp_of = query.node_labels(topo)
        self.n_comp = int(self.comp_of.max()) + 1 if n else 0
        # members and local links of each component, in topology order
        order = np.argsort(self.comp_of, kind="stable")
        bounds = np.searchsorted(self.comp_of[order], np.arange(self.n_comp + 1))
        self.members = [order[bounds[c]:bounds[c + 1]] for c in range(self.n_comp)]
        link_comp = self.comp_of[graph.edge_src[0::2]]
        link_ids = np.nonzero(local)[0]
        lorder = link_ids[np.argsort(link_comp[link_ids], kind="stable")]
        lbounds = np.searchsorted(link_comp[lorder], np.arange(self.n_comp + 1))
        self.comp_links = [lorder[lbounds[c]:lbounds[c + 1]] for c in range(self.n_comp)]
        # position of each device among its component's members (topology order)
        self.local_index = np.empty(n, dtype=np.int64)
        self.local_index[order] = np.arange(n) - bounds[self.comp_of[order]]
        self._sorted = (order, bounds, lorder, lbounds)
        self._structures: dict[int, _Structure] = {}
        self._structure_of: dict[int, _Structure] = {}
        self._uplinks: dict[tuple[int, int], np.ndarray] = {}
        self._downlinks: dict[tuple[int, int], np.ndarray] = {}
        self._nic: dict[int, int] = {}
        # network switch graph, on the switches alone (positions ``sw_pos``): searches over it cost the
        # switches and their links, not every device of the cluster
        net = ~local
        na, nb = graph.edge_src[0::2][net], graph.edge_dst[0::2][net]
        self.switch_nodes = np.nonzero(graph.node_kind == _SWITCH)[0]
        self.sw_pos = np.full(n, -1, dtype=np.int64)
        self.sw_pos[self.switch_nodes] = np.arange(self.switch_nodes.size)
        both_sw = (graph.node_kind[na] == _SWITCH) & (graph.node_kind[nb] == _SWITCH)
        m = self.switch_nodes.size
        pa, pb = self.sw_pos[na[both_sw]], self.sw_pos[nb[both_sw]]
        adj = coo_matrix((np.ones(pa.size), (pa, pb)), shape=(m, m)).tocsr()
        self.switch_adj = ((adj + adj.T) > 0).tocsr()
        self.switch_adj.sort_indices()
        # every node's network neighbours in link order, as arrays (``net_neighbours``): a list per NIC of a cluster
        # would be tens of thousands of objects for the garbage collector
        ends_from = np.column_stack([na, nb]).ravel()
        ends_to = np.column_stack([nb, na]).ravel()
        self._net_ptr = np.concatenate([[0], np.cumsum(np.bincount(ends_from, minlength=n))])
        self._net_adj = ends_to[np.argsort(ends_from, kind="stable")]
        self.twin_rep = self._twin_classes()
        self._dist: dict[int, np.ndarray] = {}
        self._next_hops: dict[tuple[int, int], np.ndarray] = {}
        self.topology = topo

    def net_neighbours(self, node: int) -> list[int]:
        """The nodes joined to ``node`` by a network link, in link order (one entry per link)."""
        return self._net_adj[self._net_ptr[node]:self._net_ptr[node + 1]].tolist()

    # ---- per-structure representative topologies ----------------------------------------------
    def _structure(self, comp: int) -> _Structure:
        found = self._structure_of.get(comp)
        if found is not None:
            return found
        group = int(self._groups().of[comp])
        structure = self._structures.get(group)
        if structure is None:
            topo = self.topology
            members = self.members[comp]
            devices = [topo.devices[i] for i in members.tolist()]
            links = [topo.links[i] for i in self.comp_links[comp].tolist()]
            loc = {d.id: k for k, d in enumerate(devices)}
            gpu_order = sorted((d.index, k) for k, d in enumerate(devices) if d.is_gpu)
            local_gpu_index = {k: i for i, (_, k) in enumerate(gpu_order)}
            rep_devices = tuple(
                Device(id=f"d{k}", kind=d.kind, index=local_gpu_index.get(k), numa_node=d.numa_node,
                       vendor=d.vendor, device_name=f"d{k}" if d.kind is DeviceKind.NIC else None)
                for k, d in enumerate(devices)
            )
            rep_links = tuple(Link(f"d{loc[l.a]}", f"d{loc[l.b]}", l.kind, l.count, l.link_gb_per_s) for l in links)
            rep = Topology(name=f"{topo.name}/node", devices=rep_devices, links=rep_links)
            structure = _Structure(rep, {}, {})
            self._structures[group] = structure
        self._structure_of[comp] = structure
        return structure

    def _local_route(self, comp: int, src: int, dst: int) -> np.ndarray:
        """Global directed edges between two nodes of one component."""
        for node in (src, dst):
            check_connected(self.topology, self.graph.node_ids[node], self.graph.degree(self.graph.node_ids[node]))
        rows = self._local_rows(comp, int(self.local_index[src]), int(self.local_index[dst]))
        return 2 * self.comp_links[comp][rows[:, 0]] + rows[:, 1]

    def _local_rows(self, comp: int, ls: int, ld: int) -> np.ndarray:
        """The route between local devices ``ls`` and ``ld`` on the component's structure, as rows of (local
        link, reversed): the same for every component of that structure, so computed once for them all."""
        st = self._structure(comp)
        rows = st.routes.get((ls, ld))
        if rows is None:
            rep = st.topology
            rep_index = {link: j for j, link in enumerate(rep.links)}
            here = f"d{ls}"
            out = []
            for link in query.route(rep, here, f"d{ld}"):
                out.append((rep_index[link], 0 if link.a == here else 1))
                here = link.other(here)
            rows = np.asarray(out, dtype=np.int64).reshape(-1, 2)
            st.routes[(ls, ld)] = rows
        return rows

    def _local_nic(self, comp: int, local_gpu: int) -> int:
        """The local NIC a GPU (local index) of the component uses under the 'nearest' rule, -1 for none:
        ``select_nics`` on the structure's representative (the rule the mapping uses), once per structure."""
        st = self._structure(comp)
        if local_gpu not in st.nic_of_gpu:
            nics = select_nics(st.topology, st.topology.device(f"d{local_gpu}"))
            st.nic_of_gpu[local_gpu] = int(nics[0].id[1:]) if nics else None
        found = st.nic_of_gpu[local_gpu]
        return -1 if found is None else found

    def _groups(self) -> _Groups:
        """The components grouped by structure (``_Groups``), in one pass of array operations."""
        found = self.__dict__.get("_group_table")
        if found is None:
            found = self._group_table = _group_components(self)
        return found

    def _nic_of(self, gpu_node: int) -> int:
        nic = self._nic.get(gpu_node)
        if nic is None:
            comp = int(self.comp_of[gpu_node])
            local_nic = self._local_nic(comp, int(self.local_index[gpu_node]))
            if local_nic < 0:
                dev = self.topology.devices[gpu_node]
                raise TopologyError(f"no route from {dev.label} to another node: its node has no NIC in {self.topology.name!r}")
            nic = int(self.members[comp][local_nic])
            self._nic[gpu_node] = nic
        return nic

    def _nics_of(self, node: int) -> np.ndarray:
        """NIC node ids a GPU's (or NIC's) inter-node traffic uses under the NIC choice."""
        found = self._nics.get(node)
        if found is None:
            if self.graph.node_kind[node] == _NIC:
                found = np.array([node], dtype=np.int64)
            elif self.nic_spec.rule == "nearest":
                found = np.array([self._nic_of(node)], dtype=np.int64)
            else:
                comp = int(self.comp_of[node])
                devs = self.topology.devices
                members = self.members[comp].tolist()
                node_nics = tuple(devs[i] for i in members if devs[i].kind is DeviceKind.NIC)
                nearest: tuple[Device, ...] = ()
                if self.nic_spec.rule == "any":
                    st = self._structure(comp)
                    rep_gpu = st.topology.device(f"d{int(self.local_index[node])}")
                    nearest = tuple(devs[members[int(n.id[1:])]] for n in query.nearest_nics(st.topology, rep_gpu))
                chosen = choose_from(self.nic_spec, devs[node], node_nics, nearest)
                if not chosen:
                    raise TopologyError(f"no route from {devs[node].label} to another node: its node has no NIC in {self.topology.name!r}")
                index = self.graph.node_index
                found = np.array([index[n.id] for n in chosen], dtype=np.int64)
            self._nics[node] = found
        return found

    def lanes(self, src_id: str, dst_id: str) -> list[np.ndarray]:
        graph = self.graph
        s, d = graph.node_index[src_id], graph.node_index[dst_id]
        if self.comp_of[s] == self.comp_of[d] or self.nic_spec.rule == "nearest":
            return [self.path(src_id, dst_id)]
        self._check_ends(s, d)
        ns, nd = self._nics_of(s), self._nics_of(d)
        n = max(ns.size, nd.size)
        out = []
        for k in range(n):
            a, b = int(ns[k % ns.size]), int(nd[k % nd.size])
            out.append(np.concatenate([self._uplink(s, a), np.asarray(self._network_path(a, b), dtype=np.int64),
                                       self._downlink(d, b)]))
        return out

    def _check_ends(self, s: int, d: int) -> None:
        devs = self.topology.devices
        for end in (s, d):
            if not devs[end].is_gpu and self.graph.node_kind[end] != _NIC:
                raise TopologyError(f"transfers between nodes are modelled between GPUs (or NICs), not from {devs[end].label}")
            check_connected(self.topology, devs[end].id, self.graph.degree(devs[end].id))

    def nearest_nics(self, gpu: Device) -> tuple[Device, ...]:
        node = self.graph.node_index[gpu.id]
        comp = int(self.comp_of[node])
        st = self._structure(comp)
        local = st.nearest.get(int(self.local_index[node]))
        if local is None:
            rep_gpu = st.topology.device(f"d{int(self.local_index[node])}")
            local = tuple(int(n.id[1:]) for n in query.nearest_nics(st.topology, rep_gpu))
            st.nearest[int(self.local_index[node])] = local
        members = self.members[comp]
        return tuple(self.topology.devices[int(members[k])] for k in local)

    def pair_level(self, a: Device, b: Device) -> PairLevel | None:
        na, nb = self.graph.node_index[a.id], self.graph.node_index[b.id]
        comp = int(self.comp_of[na])
        if comp != int(self.comp_of[nb]):
            return None
        st = self._structure(comp)
        key = (int(self.local_index[na]), int(self.local_index[nb]))
        level = st.levels.get(key)
        if level is None:
            level = st.levels[key] = query.pair_level(st.topology, f"d{key[0]}", f"d{key[1]}")
        return level

    def local_cpu(self, gpu: Device) -> Device | None:
        comp = int(self.comp_of[self.graph.node_index[gpu.id]])
        cpus = [self.topology.devices[i] for i in self.members[comp].tolist()
                if self.topology.devices[i].kind is DeviceKind.CPU]
        for cpu in cpus:
            if gpu.numa_node is not None and cpu.numa_node == gpu.numa_node:
                return cpu
        best = None
        for cpu in cpus:
            try:
                hops = len(self._local_route(comp, self.graph.node_index[gpu.id], self.graph.node_index[cpu.id]))
            except TopologyError:
                continue
            if best is None or hops < best[0]:
                best = (hops, cpu)
        return best[1] if best else None

    # ---- network ------------------------------------------------------------------------------
    def _twin_classes(self) -> np.ndarray:
        """For each switch (by position), the first switch with exactly the same switch neighbours (the
        leaves of a fat tree under the same spines). Such twins are interchangeable: swapping two of
        them maps the switch graph onto itself, so the routes towards one are those towards the other
        with the two swapped (``_hops_towards``). One search per class of twins instead of one per
        destination switch, exactly."""
        adj = self.switch_adj
        rep = np.arange(adj.shape[0], dtype=np.int64)
        first: dict[bytes, int] = {}
        for k in range(adj.shape[0]):
            row = adj.indices[adj.indptr[k]:adj.indptr[k + 1]]
            if row.size:  # an isolated switch is no twin: it reaches nothing
                rep[k] = first.setdefault(row.tobytes(), k)
        return rep

    def _distances(self, rep: int) -> np.ndarray:
        """Hops from every switch to switch ``rep`` (positions), infinite where unreachable."""
        dist = self._dist.get(rep)
        if dist is None:
            dist = shortest_path(self.switch_adj, unweighted=True, directed=False, indices=rep)
            self._dist[rep] = dist
        return dist

    def _next(self, here: int, rep: int) -> np.ndarray:
        """Switch positions one hop nearer ``rep`` from ``here``, in node order (positions follow it)."""
        key = (here, rep)
        hops = self._next_hops.get(key)
        if hops is None:
            dist = self._distances(rep)
            row = self.switch_adj.indices[self.switch_adj.indptr[here]:self.switch_adj.indptr[here + 1]]
            hops = row[dist[row] == dist[here] - 1]
            self._next_hops[key] = hops
        return hops

    @staticmethod
    def _swap(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """x with a and b exchanged, elementwise."""
        return np.where(x == a, b, np.where(x == b, a, x))

    def _hop_distance(self, here: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Hops between switch positions (arrays), through the twin class of each target."""
        rep = self.twin_rep[target]
        moved = self._swap(here, target, rep)
        out = np.empty(here.size)
        for r in np.unique(rep).tolist():
            sel = rep == r
            out[sel] = self._distances(r)[moved[sel]]
        return out

    def _hops_towards(self, here: int, target: int) -> np.ndarray:
        """Switch positions one hop nearer ``target`` from ``here``, in node order: those of the
        target's twin representative with the target and the representative swapped (a set that holds
        either of the two has one member, so the swap keeps the order)."""
        rep = int(self.twin_rep[target])
        if rep == target:
            return self._next(here, rep)
        moved = rep if here == target else target if here == rep else here
        hops = self._next(moved, rep)
        return self._swap(hops, np.int64(target), np.int64(rep))

    def _nic_rank(self) -> np.ndarray:
        """Position of each NIC among the NICs (destination-based, d-mod-k style ECMP choice)."""
        rank = self.__dict__.get("_rank")
        if rank is None:
            nic = self.graph.node_kind == _NIC
            rank = np.cumsum(nic) - 1
            self._rank = rank
        return rank

    def _network_path(self, nic_a: int, nic_b: int) -> list[int]:
        graph = self.graph
        h = int(self._nic_rank()[nic_b])
        nb_a = self.net_neighbours(nic_a)
        nb_b = self.net_neighbours(nic_b)
        if nic_b in nb_a:
            return [graph.edge_between(nic_a, nic_b)]
        sw_a = [s for s in nb_a if graph.node_kind[s] == _SWITCH]
        sw_b = [s for s in nb_b if graph.node_kind[s] == _SWITCH]
        if not sw_a or not sw_b:
            raise TopologyError(f"no network route between {graph.node_ids[nic_a]!r} and {graph.node_ids[nic_b]!r}")
        start = sw_a[int(self._nic_rank()[nic_a]) % len(sw_a)]
        target = sw_b[h % len(sw_b)]
        pos_start, pos_target = int(self.sw_pos[start]), int(self.sw_pos[target])
        if not np.isfinite(self._hop_distance(np.array([pos_start]), np.array([pos_target]))[0]):
            raise TopologyError(f"no network route between {graph.node_ids[nic_a]!r} and {graph.node_ids[nic_b]!r}: the network is "
                                "disconnected")
        edges = [graph.edge_between(nic_a, start)]
        here, div = pos_start, 1
        while here != pos_target:
            hops = self._hops_towards(here, pos_target)
            nxt = int(hops[(h // div) % len(hops)])
            div *= len(hops)
            edges.append(graph.edge_between(int(self.switch_nodes[here]), int(self.switch_nodes[nxt])))
            here = nxt
        edges.append(graph.edge_between(target, nic_b))
        return edges

    # ---- vectorised routes for many pairs -------------------------------------------------------
    def _edge_lookup(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        try:
            return self.graph.edges_between(u, v)
        except KeyError:  # pragma: no cover
            raise TopologyError("internal: a network hop has no link") from None

    def _padded(self, arrays: list[np.ndarray]) -> np.ndarray:
        width = max((a.size for a in arrays), default=0)
        out = np.full((len(arrays), width), -1, dtype=np.int64)
        for k, a in enumerate(arrays):
            out[k, :a.size] = a
        return out

    def paths_array(self, s: np.ndarray, d: np.ndarray, single) -> tuple[np.ndarray, np.ndarray]:
        """Routes of many pairs of node indices as (indptr, edge ids), each pair's edges those ``path`` gives.

        Between nodes: the NIC of each distinct end and its route to it once per (node structure, position in
        the node) (the 'nearest' rule; other rules once per end), spread over the ends by array indexing; the
        network part by ``_network_array``. Within a node: once per (structure, position of each end)."""
        graph = self.graph
        n_nodes = len(graph.node_ids)
        same = self.comp_of[s] == self.comp_of[d]
        intra = np.nonzero(same)[0]
        inter = np.nonzero(~same)[0]
        blocks = []  # (pairs, rows of edges padded with -1)
        if inter.size:
            si, di = s[inter], d[inter]
            # endpoints: GPUs or NICs with at least one link
            degree = self._degrees()
            for ends in (si, di):
                kinds = graph.node_kind[ends]
                bad = (kinds != NODE_KIND_CODE[DeviceKind.GPU.value]) & (kinds != _NIC)
                if bad.any():  # the one-pair path's error (a route of a device with itself would be empty)
                    self._check_ends(int(ends[bad][0]), int(ends[bad][0]))
                uniq = _unique_nodes(ends, n_nodes)[0]
                if (degree[uniq] == 0).any():
                    check_connected(self.topology, graph.node_ids[int(uniq[degree[uniq] == 0][0])], 0)  # raises
            # NICs and the routes to and from them once per distinct end, then spread over the pairs
            up_u, up_inv = _unique_nodes(si, n_nodes)
            dn_u, dn_inv = _unique_nodes(di, n_nodes)
            if self.nic_spec.rule == "nearest":
                nic_up, up = self._end_routes(up_u, upward=True)
                nic_dn, down = self._end_routes(dn_u, upward=False)
            else:
                nic_up = self._nic_array(up_u)
                up = self._padded([self._uplink(int(u), int(n)) for u, n in zip(up_u, nic_up)])
                nic_dn = self._nic_array(dn_u)
                down = self._padded([self._downlink(int(u), int(n)) for u, n in zip(dn_u, nic_dn)])
            net = self._network_array(nic_up[up_inv], nic_dn[dn_inv])
            blocks.append((inter, [up[up_inv]] + [c[:, None] for c in net] + [down[dn_inv]]))
        if intra.size:
            blocks.append((intra, [self._intra_rows(s[intra], d[intra], single)]))
        # one row per pair, its edges in order, -1 where shorter than the longest
        rows_all = np.full((s.size, max(sum(p.shape[1] for p in parts) for _, parts in blocks)), -1, dtype=np.int64)
        for pairs, parts in blocks:
            col = 0
            for part in parts:
                if pairs.size == s.size:  # all pairs (in order): no index to scatter through
                    rows_all[:, col:col + part.shape[1]] = part
                else:
                    rows_all[pairs, col:col + part.shape[1]] = part
                col += part.shape[1]
        mask = rows_all >= 0
        indptr = np.zeros(s.size + 1, dtype=np.int64)
        np.cumsum(mask.sum(axis=1), out=indptr[1:])
        return indptr, rows_all[mask]

    def _degrees(self) -> np.ndarray:
        """Links of each node (graph order)."""
        self.graph.degree(self.graph.node_ids[0])  # builds the table
        return self.graph.__dict__["_degree"]

    def _end_routes(self, nodes: np.ndarray, *, upward: bool) -> tuple[np.ndarray, np.ndarray]:
        """For distinct end nodes (GPUs or NICs, ascending) under the 'nearest' rule: the NIC each uses and the
        route from the end to it (``upward``; else from the NIC to the end) as rows padded with -1, the answers of
        ``_nics_of`` and ``_uplink`` / ``_downlink``. Worked out once per (structure, position in the node): the
        GPU at position k of every node of a structure uses that node's NIC at the same position, over the same
        local links."""
        graph = self.graph
        nic = nodes.copy()  # a NIC end is its own NIC, with an empty route to it
        at = np.nonzero(graph.node_kind[nodes] != _NIC)[0]
        parts: list[tuple[np.ndarray, np.ndarray]] = []
        if at.size:
            groups = self._groups()
            ends = nodes[at]
            comp = self.comp_of[ends]
            group = groups.of[comp]
            loc = self.local_index[ends]
            _, first, inv = np.unique(group * groups.width + loc, return_index=True, return_inverse=True)
            inv = inv.reshape(-1)
            local_nic = np.array([self._local_nic(int(comp[f]), int(loc[f])) for f in first.tolist()], dtype=np.int64)
            if (local_nic < 0).any():
                self._nic_of(int(ends[local_nic[inv] < 0].min()))  # raises, naming the first such end
            order = np.argsort(inv, kind="stable")
            bounds = np.searchsorted(inv[order], np.arange(first.size + 1))
            for k, f in enumerate(first.tolist()):
                sel = order[bounds[k]:bounds[k + 1]]
                c, g, lg, ln = int(comp[f]), int(group[f]), int(loc[f]), int(local_nic[k])
                rows = groups.row[comp[sel]]
                nic[at[sel]] = groups.members[g][rows, ln]
                local = self._local_rows(c, lg, ln) if upward else self._local_rows(c, ln, lg)
                parts.append((at[sel], 2 * groups.links[g][rows[:, None], local[:, 0]] + local[:, 1]))
        out = np.full((nodes.size, max((p.shape[1] for _, p in parts), default=0)), -1, dtype=np.int64)
        for where, edges in parts:
            out[where, :edges.shape[1]] = edges
        return nic, out

    def _intra_rows(self, s: np.ndarray, d: np.ndarray, single) -> np.ndarray:
        """Routes of pairs within one node each (``path``'s answers) as rows padded with -1: once per
        (structure, position of the source, position of the destination), spread over the pairs."""
        graph = self.graph
        degree = self._degrees()
        alone = (degree[s] == 0) | (degree[d] == 0)
        if (alone & (s != d)).any():
            k = int(np.nonzero(alone & (s != d))[0][0])
            single(graph.node_ids[int(s[k])], graph.node_ids[int(d[k])])  # raises, naming the device
        pairs = np.nonzero(s != d)[0]  # a device with itself: no edge
        groups = self._groups()
        comp = self.comp_of[s[pairs]]
        ls, ld = self.local_index[s[pairs]], self.local_index[d[pairs]]
        w = groups.width
        if groups.of.size * w * w < 2**62:
            _, first, inv = np.unique((groups.of[comp] * w + ls) * w + ld, return_index=True, return_inverse=True)
        else:  # pragma: no cover - a key of three numbers too wide for 64 bits
            _, first, inv = np.unique(np.column_stack([groups.of[comp], ls, ld]), axis=0, return_index=True,
                                      return_inverse=True)
        inv = inv.reshape(-1)
        order = np.argsort(inv, kind="stable")
        bounds = np.searchsorted(inv[order], np.arange(first.size + 1))
        parts = []
        for k in np.argsort(first, kind="stable").tolist():  # in the pairs' order: the first failing pair raises
            f = int(first[k])
            c = int(comp[f])
            local = self._local_rows(c, int(ls[f]), int(ld[f]))
            sel = order[bounds[k]:bounds[k + 1]]
            g = int(groups.of[c])
            parts.append((pairs[sel], 2 * groups.links[g][groups.row[comp[sel]][:, None], local[:, 0]] + local[:, 1]))
        out = np.full((s.size, max((p.shape[1] for _, p in parts), default=0)), -1, dtype=np.int64)
        for where, edges in parts:
            out[where, :edges.shape[1]] = edges
        return out

    def _nic_array(self, nodes: np.ndarray) -> np.ndarray:
        out = np.empty(nodes.size, dtype=np.int64)
        uniq, inv = _unique_nodes(nodes, len(self.graph.node_ids))
        picked = [self._nics_of(int(u)) for u in uniq.tolist()]
        if any(p.size > 1 for p in picked):
            raise ConfigError(f"NIC choice {self.nic_spec.text!r} spreads transfers over several NICs; the array path "
                              "takes one NIC per GPU", hint="use FabricModel.predict for spread transfers")
        vals = np.array([int(p[0]) for p in picked], dtype=np.int64)
        out[:] = vals[inv]
        return out

    def _uplink(self, s: int, nic: int) -> np.ndarray:
        up = self._uplinks.get((s, nic))
        if up is None:
            up = self._local_route(int(self.comp_of[s]), s, nic) if nic != s else np.empty(0, dtype=np.int64)
            self._uplinks[(s, nic)] = up
        return up

    def _downlink(self, d: int, nic: int) -> np.ndarray:
        down = self._downlinks.get((d, nic))
        if down is None:
            down = self._local_route(int(self.comp_of[d]), nic, d) if nic != d else np.empty(0, dtype=np.int64)
            self._downlinks[(d, nic)] = down
        return down

    def _switch_table(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """CSR (indptr, switch ids) of the switches each node attaches to by network links, with the directed
        edge from the node to each such switch and back (``edges_between``: the widest of parallel links)."""
        table = self.__dict__.get("_nic_switches")
        if table is None:
            n = len(self.graph.node_ids)
            owner = np.repeat(np.arange(n), np.diff(self._net_ptr))
            keep = self.graph.node_kind[self._net_adj] == _SWITCH
            lengths = np.bincount(owner[keep], minlength=n)
            switches = self._net_adj[keep]
            table = (np.concatenate([[0], np.cumsum(lengths)]), switches,
                     self._edge_lookup(owner[keep], switches), self._edge_lookup(switches, owner[keep]))
            self._nic_switches = table
        return table

    def _switch_edges(self, here: np.ndarray, there: np.ndarray) -> np.ndarray:
        """Directed edges between switch positions (arrays): ``edges_between`` of their nodes, read from a
        table of every pair of adjacent switches (dense where the switches are few)."""
        m = self.switch_nodes.size
        if m * m > _DENSE_SWITCH_PAIRS:
            return self._edge_lookup(self.switch_nodes[here], self.switch_nodes[there])
        table = self.__dict__.get("_sw_edge")
        if table is None:
            adj = self.switch_adj.tocoo()
            table = np.full((m, m), -1, dtype=np.int64)
            table[adj.row, adj.col] = self._edge_lookup(self.switch_nodes[adj.row], self.switch_nodes[adj.col])
            self._sw_edge = table
        return table[here, there]

    def _switch_parts(self) -> np.ndarray:
        """Connected part of the switch graph of each switch (position): two switches have a finite hop
        distance exactly when they are in the same part."""
        parts = self.__dict__.get("_sw_parts")
        if parts is None:
            parts = self._sw_parts = connected_components(self.switch_adj, directed=False)[1]
        return parts

    def _network_array(self, nic_s: np.ndarray, nic_d: np.ndarray) -> list[np.ndarray]:
        """The network part of each pair's route between NICs, as columns of edges (-1 where the route is shorter)."""
        graph = self.graph
        rank = self._nic_rank()
        h = rank[nic_d]
        owner = np.repeat(np.arange(len(graph.node_ids)), np.diff(self._net_ptr))
        # back-to-back NICs: rare; route those pairs one by one
        if ((graph.node_kind[owner] == _NIC) & (graph.node_kind[self._net_adj] == _NIC)).any():
            rows = [np.asarray(self._network_path(int(a), int(b)), dtype=np.int64) for a, b in zip(nic_s.tolist(), nic_d.tolist())]
            return list(self._padded(rows).T)
        ptr, sw, edge_to, edge_from = self._switch_table()
        cnt_s, cnt_d = ptr[nic_s + 1] - ptr[nic_s], ptr[nic_d + 1] - ptr[nic_d]
        if (cnt_s == 0).any() or (cnt_d == 0).any():
            k = int(np.nonzero((cnt_s == 0) | (cnt_d == 0))[0][0])
            self._network_path(int(nic_s[k]), int(nic_d[k]))  # raises with the names
        entry_s = ptr[nic_s] + rank[nic_s] % cnt_s
        entry_d = ptr[nic_d] + h % cnt_d
        here = self.sw_pos[sw[entry_s]]
        pos_target = self.sw_pos[sw[entry_d]]
        cols = [edge_to[entry_s]]
        parts = self._switch_parts()
        far = parts[here] != parts[pos_target]
        if far.any():
            k = int(np.nonzero(far)[0][0])
            self._network_path(int(nic_s[k]), int(nic_d[k]))  # raises with the names
        rep = self.twin_rep[pos_target]
        div = np.ones(here.size, dtype=np.int64)
        moving = np.nonzero(here != pos_target)[0]
        m = self.switch_nodes.size
        while moving.size:
            # next hops by (switch, twin representative of the target): the target and its representative
            # swapped on the way in and out (_hops_towards), so a fat tree's leaves share one table
            at, tgt, rp = here[moving], pos_target[moving], rep[moving]
            key = self._swap(at, tgt, rp) * m + rp
            uniq, inv = _unique_nodes(key, m * m) if m * m <= _DENSE_SWITCH_PAIRS else np.unique(key, return_inverse=True)
            cands = [self._next(int(k // m), int(k % m)) for k in uniq.tolist()]
            table = self._padded(cands)
            counts = np.array([c.size for c in cands], dtype=np.int64)[inv.reshape(-1)]
            inv = inv.reshape(-1)
            pick = self._swap(table[inv, (h[moving] // div[moving]) % counts], tgt, rp)
            div[moving] *= counts
            col = np.full(here.size, -1, dtype=np.int64)
            col[moving] = self._switch_edges(at, pick)
            cols.append(col)
            here[moving] = pick
            moving = moving[pick != tgt]
        cols.append(edge_from[entry_d])
        return cols

    def path(self, src_id: str, dst_id: str) -> np.ndarray:
        graph = self.graph
        s, d = graph.node_index[src_id], graph.node_index[dst_id]
        cs, cd = int(self.comp_of[s]), int(self.comp_of[d])
        if cs == cd:
            return self._local_route(cs, s, d)
        self._check_ends(s, d)
        nic_s = int(self._nics_of(s)[0])
        nic_d = int(self._nics_of(d)[0])
        return np.concatenate([self._uplink(s, nic_s), np.asarray(self._network_path(nic_s, nic_d), dtype=np.int64),
                               self._downlink(d, nic_d)])


def _unique_nodes(nodes: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(nodes, return_inverse=True)`` for node indices in ``0..n_nodes - 1``, by marking instead of
    sorting: linear in the nodes and the graph (a million pairs' ends of a cluster in milliseconds)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    seen = np.zeros(n_nodes, dtype=bool)
    seen[nodes] = True
    uniq = np.nonzero(seen)[0]
    position = np.empty(n_nodes, dtype=np.int64)
    position[uniq] = np.arange(uniq.size)
    return uniq, position[nodes]


@dataclass(frozen=True)
class _Groups:
    """The components (nodes) of a cluster grouped by structure: the same devices in the same order joined by
    the same local links (kind, count, GB/s), as ``_structure`` shares a representative between them.

    Attributes:
        of: group of each component (groups numbered by their first component).
        row: row of each component in its group's tables.
        members: per group, the node ids of its components' devices, one row per component, local order.
        links: per group, the link ids of its components' local links, one row per component, local order.
        width: the most devices of a component (local positions are below it).
    """

    of: np.ndarray
    row: np.ndarray
    members: list[np.ndarray]
    links: list[np.ndarray]
    width: int


def _group_components(hier: _Hierarchy) -> _Groups:
    """``_Groups`` of a hierarchy: components of equal (devices, local links) counts side by side, one row of
    numbers per component (device kinds; each link's local ends, kind, count and GB/s bits), equal rows one group."""
    cols = hier.topology.columns()
    kinds = hier.graph.node_kind.astype(np.int64)
    order, bounds, lorder, lbounds = hier._sorted
    sizes, counts = np.diff(bounds), np.diff(lbounds)
    shape = sizes * (int(counts.max(initial=0)) + 1) + counts
    by_shape = np.argsort(shape, kind="stable")
    cuts = np.flatnonzero(np.diff(shape[by_shape])) + 1
    found: list[np.ndarray] = []  # the components of each group, ascending
    for comps in np.split(by_shape, cuts):
        if comps.size == 0:
            continue
        size, count = int(sizes[comps[0]]), int(counts[comps[0]])
        mem = order[bounds[comps][:, None] + np.arange(size)]
        lk = lorder[lbounds[comps][:, None] + np.arange(count)]
        rows = np.concatenate([kinds[mem], hier.local_index[cols.link_a[lk]], hier.local_index[cols.link_b[lk]],
                               cols.link_kind[lk].astype(np.int64), cols.link_count[lk].astype(np.int64),
                               cols.link_gb_per_s[lk].astype(float).view(np.int64)], axis=1)
        inv = _equal_rows(rows)
        same = np.argsort(inv, kind="stable")
        found.extend(np.split(comps[same], np.flatnonzero(np.diff(inv[same])) + 1))
    found.sort(key=lambda comps: int(comps[0]))
    of = np.empty(hier.n_comp, dtype=np.int64)
    row = np.empty(hier.n_comp, dtype=np.int64)
    members, links = [], []
    for g, comps in enumerate(found):
        of[comps] = g
        row[comps] = np.arange(comps.size)
        size, count = int(sizes[comps[0]]), int(counts[comps[0]])
        members.append(order[bounds[comps][:, None] + np.arange(size)])
        links.append(lorder[lbounds[comps][:, None] + np.arange(count)])
    return _Groups(of, row, members, links, int(sizes.max(initial=1)))


def _equal_rows(rows: np.ndarray) -> np.ndarray:
    """A label per row of an integer matrix, equal exactly for equal rows (``np.unique(rows, axis=0,
    return_inverse=True)``'s grouping, not its numbering): rows grouped by a 64-bit hash, each checked
    entry by entry against the first of its group; ``np.unique`` where two different rows share a hash."""
    if rows.shape[1] == 0:
        return np.zeros(rows.shape[0], dtype=np.int64)
    _, first, inv = np.unique(_row_keys(rows), return_index=True, return_inverse=True)
    inv = inv.reshape(-1)
    if (rows == rows[first[inv]]).all():
        return inv
    return np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1)  # pragma: no cover - a hash collision


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """A 64-bit key per row of an integer matrix: the wrapping sum of its entries times fixed odd multipliers."""
    mult = np.random.default_rng(0x5EED).integers(1, 2**62, rows.shape[1], dtype=np.int64).astype(np.uint64) | np.uint64(1)
    with np.errstate(over="ignore"):
        return (rows.astype(np.uint64) * mult).sum(axis=1, dtype=np.uint64)
