"""Interchangeable nodes of a cluster: the symmetry that lets the twin time a cluster's grouped send/recv by
classes of flows instead of every pair, exactly (no fit).

Why it is exact. Max-min fair rates are unique. A permutation of the model's devices and resources that maps
every capacity, latency, transit factor and route onto its own (an automorphism of the model) maps the
max-min solution of a set of flows onto the solution of the image set; where it maps the set onto itself,
flows it exchanges get equal rates and, with equal bytes, caps and latencies, finish together. So the flows
of an orbit can be simulated as one that uses, on each orbit of resources, what the whole orbit of flows uses
there spread over the orbit's resources (``NodeSymmetry.fold``), the same max-min problem with one column per
class and one row per class of resources.

``node_symmetry`` proves that *every* permutation of a cluster's nodes is such an automorphism, or says why
not. A node is a part of the topology joined to the rest by network links only (``query.node_labels``) that
holds a GPU; the nodes' devices and resources are matched by position (topology order). It checks:

* every node has the first node's devices (kinds, in order) and local links (same ends by position), and the
  model's per-element arrays agree position by position: each device's transit factor and latency, each
  directed edge's raw and effective capacity, kind, latency, transit factor and duplex share, each host and
  device memory's capacity, each GPU's vendor (copy-engine caps);
* every node's network links go, position by position, to the same devices outside the nodes (the same
  switch for NIC k of every node: identical rails) with the same properties, and none joins two nodes;
* the router answers every node alike (``Router.nodes_alike``: one node structure, nearest NIC, forced
  switch paths);
* peer access between every GPU pair and no per-level overhead (``FabricModel``'s per-pair answers).

Anything else (a node with a slower link, a fat tree whose leaves split the nodes, equal-cost spines chosen by
NIC rank) gives None and the reason: the caller times every pair.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..topology.query import node_labels
from .predict import FabricModel


@dataclass(frozen=True, eq=False)
class NodeSymmetry:
    """A cluster whose nodes are interchangeable for the fabric model (``node_symmetry`` proved it).

    Attributes:
        node_of_gpu: per GPU index, its node (0 .. nodes - 1, in topology order).
        local_of_gpu: per GPU index, its position among its node's devices (the same GPU of every node has
            the same position).
        node_resources: (nodes, positions) resource index at each local position of each node: its local
            links' directed edges, its network links' edges (out of the node, into it), its host memories,
            its device memories.
        resource_node: per resource, the node it belongs to, -1 for one outside every node (switch links).
        resource_local: per resource, its local position in its node, -1 outside the nodes.
    """

    node_of_gpu: np.ndarray
    local_of_gpu: np.ndarray
    node_resources: np.ndarray
    resource_node: np.ndarray
    resource_local: np.ndarray

    def fold(self, cycle: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """(canonical resource, weight scale) per resource for flow classes that are orbits under the cyclic
        permutation of the nodes ``cycle`` (node numbers, distinct; the other nodes stay): a resource of a node
        of the cycle becomes the resource at its position in ``cycle[0]``, scale 1 (its orbit has as many
        resources as a class has flows); every other resource stays, scale ``len(cycle)`` (an orbit of one,
        which every flow of a class crosses where its representative does). The folded weight of a class on
        a canonical row is then what its whole orbit puts on one resource of that row's orbit."""
        m = len(cycle)
        canon = np.arange(self.resource_node.size, dtype=np.int64)
        scale = np.full(canon.size, float(m))
        in_cycle = np.zeros(self.node_resources.shape[0], dtype=bool)
        in_cycle[np.asarray(cycle, dtype=np.int64)] = True
        mine = (self.resource_node >= 0) & in_cycle[np.maximum(self.resource_node, 0)]
        canon[mine] = self.node_resources[cycle[0]][self.resource_local[mine]]
        scale[mine] = 1.0
        return canon, scale


def _rows_equal(x: np.ndarray) -> bool:
    return bool(x.shape[0] < 2 or (x == x[:1]).all())


def node_symmetry(fabric: FabricModel) -> tuple[NodeSymmetry | None, str]:
    """The proof that any permutation of the cluster's nodes is an automorphism of ``fabric`` (module doc), or
    None and the reason it is not (or cannot be shown)."""
    topo = fabric.topology
    graph = fabric.graph
    labels = np.asarray(node_labels(topo))
    n_dev = labels.size
    gpu_nodes = graph.gpu_nodes
    comps = np.unique(labels[gpu_nodes]) if gpu_nodes.size else np.empty(0, dtype=np.int64)
    if comps.size < 2:
        return None, "one node"
    if not fabric._peers_everywhere():
        return None, "some GPU pair has no peer access"
    if fabric._level_keys:
        return None, "per-level overheads are set (overhead_us.<method>@<LEVEL>)"
    is_node = np.zeros(int(labels.max()) + 1, dtype=bool)
    is_node[comps] = True
    node_num = np.full(is_node.size, -1, dtype=np.int64)
    node_num[comps] = np.arange(comps.size)
    # devices by node, in topology order: equal counts, then a (nodes, devices) matrix
    dev_node = node_num[labels]
    order = np.argsort(dev_node, kind="stable")
    order = order[dev_node[order] >= 0]
    sizes = np.bincount(dev_node[order], minlength=comps.size)
    if (sizes != sizes[0]).any():
        return None, "the nodes have different numbers of devices"
    members = order.reshape(comps.size, int(sizes[0]))
    local_of_dev = np.full(n_dev, -1, dtype=np.int64)
    local_of_dev[members] = np.arange(members.shape[1])
    for name, arr in (("kind", graph.node_kind), ("transit factor", fabric._node_transit_log),
                      ("transit latency", fabric._node_transit_s)):
        if not _rows_equal(arr[members]):
            return None, f"the nodes' devices differ in {name}"
    # links: local (both ends in one node), network links of a node (one end in it), between switches
    ea, eb = graph.edge_src[0::2], graph.edge_dst[0::2]
    na, nb = dev_node[ea], dev_node[eb]
    if ((na >= 0) & (nb >= 0) & (na != nb)).any():
        return None, "a link joins two nodes directly"
    local = (na >= 0) & (na == nb)
    lk = np.nonzero(local)[0]
    lk = lk[np.argsort(na[lk], kind="stable")]
    counts = np.bincount(na[lk], minlength=comps.size)
    if (counts != counts[0]).any():
        return None, "the nodes have different numbers of local links"
    local_links = lk.reshape(comps.size, int(counts[0]))
    # a node's network links, its end first: sorted by its end's position, the far end, then the link's figures
    out = (na >= 0) ^ (nb >= 0)
    ok = np.nonzero(out)[0]
    home = np.where(na[ok] >= 0, na[ok], nb[ok])
    near = np.where(na[ok] >= 0, ea[ok], eb[ok])
    far = np.where(na[ok] >= 0, eb[ok], ea[ok])
    leaving = np.where(na[ok] >= 0, 2 * ok, 2 * ok + 1)  # the directed edge out of the node
    raw = graph.edge_raw_gb_per_s[leaving]
    srt = np.lexsort((ok, raw, far, local_of_dev[near], home))
    ok, home, near, far, leaving = ok[srt], home[srt], near[srt], far[srt], leaving[srt]
    counts = np.bincount(home, minlength=comps.size)
    if (counts != counts[0]).any():
        return None, "the nodes have different numbers of network links"
    shape = (comps.size, int(counts[0]))
    if not (_rows_equal(local_of_dev[near].reshape(shape)) and _rows_equal(far.reshape(shape))):
        return None, "the nodes' network links reach different devices (not identical rails)"
    leaving = leaving.reshape(shape)
    edges = np.concatenate([np.stack([2 * local_links, 2 * local_links + 1], axis=2).reshape(comps.size, -1),
                            leaving, leaving ^ 1], axis=1)
    for arr in (graph.edge_src, graph.edge_dst):
        ends = arr[edges]  # a node's own device by its position, any other by its index
        if not _rows_equal(np.where(local_of_dev[ends] >= 0, local_of_dev[ends], -1 - ends)):
            return None, "the nodes' links join different devices"
    n_edges = graph.n_edges
    for name, arr in (("capacity", fabric.capacity[:n_edges]), ("raw capacity", graph.edge_raw_gb_per_s),
                      ("kind", graph.edge_kind), ("latency", fabric.edge_latency_s),
                      ("transit factor", fabric._edge_transit_log), ("duplex share", fabric._duplex)):
        if not _rows_equal(arr[edges]):
            return None, f"the nodes' links differ in {name}"
    cpu_rows = np.array([graph.host_memory_resource(c) for c in graph.cpu_ids], dtype=np.int64)
    cpu_node = dev_node[[graph.node_index[c] for c in graph.cpu_ids]] if graph.cpu_ids else np.empty(0, dtype=np.int64)
    gpu_index = np.arange(len(graph.gpu_ids), dtype=np.int64)
    if any(fabric._gpu_by_index.get(k) is None or fabric._gpu_by_index[k].id != graph.gpu_ids[k] for k in range(gpu_index.size)):
        return None, "GPU indices are not 0 .. GPUs - 1 in resource order"
    gpu_node = dev_node[gpu_nodes]
    memories = []
    for rows, owner in ((cpu_rows[cpu_node >= 0], cpu_node[cpu_node >= 0]),
                        (graph.device_memory_resource(0) + gpu_index, gpu_node)):
        per = np.bincount(owner, minlength=comps.size)
        if (per != per[0]).any():
            return None, "the nodes have different numbers of CPUs or GPUs"
        memories.append(rows[np.argsort(owner, kind="stable")].reshape(comps.size, int(per[0])))
    if not _rows_equal(fabric.capacity[np.concatenate(memories, axis=1)]):
        return None, "the nodes' memories differ in bandwidth"
    by_gpu = np.argsort(gpu_node, kind="stable").reshape(comps.size, -1)
    vendors = np.array([fabric._gpu_by_index[int(g)].vendor or "" for g in range(gpu_index.size)])
    if not _rows_equal(vendors[by_gpu]) or not _rows_equal(local_of_dev[gpu_nodes][by_gpu]):
        return None, "the nodes' GPUs differ in vendor or place"
    reason = fabric.router.nodes_alike(comps.tolist())
    if reason is not None:
        return None, reason
    node_resources = np.concatenate([edges] + memories, axis=1)
    resource_node = np.full(graph.n_resources, -1, dtype=np.int64)
    resource_local = np.full(graph.n_resources, -1, dtype=np.int64)
    resource_node[node_resources] = np.arange(comps.size)[:, None]
    resource_local[node_resources] = np.arange(node_resources.shape[1])[None, :]
    return NodeSymmetry(gpu_node, local_of_dev[gpu_nodes], node_resources, resource_node, resource_local), ""
