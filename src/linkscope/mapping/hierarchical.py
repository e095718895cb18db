"""Hierarchical mapping for many nodes: ranks -> nodes by balanced partitioning (minimising the
traffic that crosses the network), then ranks -> GPUs inside each node (exact for small nodes,
heuristic otherwise), on a cluster of identical nodes.

The cost of a pair on different nodes is one network cost per term (``network_costs``); on the
same node it is the node's cost matrix. The default mapping (rank r on node r // g, GPU r % g)
is kept when the search does not beat it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import scipy.sparse as sp

from .exact import solve_exact
from .heuristic import solve_heuristic
from .partition import partition
from .problem import MappingProblem


@dataclass(frozen=True)
class ClusterMapping:
    """Where each rank goes on a cluster: ``node_of_rank`` and ``gpu_of_rank`` (GPU within its node).

    Attributes:
        node_of_rank, gpu_of_rank: per rank.
        cost, default_cost: objective of this mapping and of the default block mapping.
        optimal_within_nodes: every node's inner mapping was proven optimal.
        elapsed_s: wall time.
    """

    node_of_rank: tuple[int, ...]
    gpu_of_rank: tuple[int, ...]
    cost: float
    default_cost: float
    optimal_within_nodes: bool
    elapsed_s: float


def cluster_objective(
    flows: Sequence[sp.spmatrix], node_costs: Sequence[np.ndarray], network_costs: Sequence[float],
    node_of_rank: np.ndarray, gpu_of_rank: np.ndarray,
) -> float:
    total = 0.0
    for f, c, net in zip(flows, node_costs, network_costs):
        coo = sp.coo_matrix(f)
        same = node_of_rank[coo.row] == node_of_rank[coo.col]
        inner = c[gpu_of_rank[coo.row], gpu_of_rank[coo.col]]
        total += float((coo.data * np.where(same, inner, net)).sum())
    return total


def solve_cluster(
    flows: Sequence[sp.spmatrix | np.ndarray],
    node_costs: Sequence[np.ndarray],
    network_costs: Sequence[float],
    nodes: int,
    exact_up_to: int = 10,
    exact_time_limit_s: float = 2.0,
) -> ClusterMapping:
    """Map ``ranks`` (the flows' size) onto ``nodes`` nodes of ``g`` GPUs (the node cost's size)."""
    t0 = time.perf_counter()
    flows = [sp.csr_matrix(f, dtype=np.float64) for f in flows]
    for f in flows:
        f.setdiag(0)
        f.eliminate_zeros()
    ranks = flows[0].shape[0]
    g = node_costs[0].shape[0]
    if ranks > nodes * g:
        from ..errors import UserError

        raise UserError(f"{ranks} ranks do not fit on {nodes} nodes x {g} GPUs")
    padded = nodes * g
    # the partitioning weight: each term's flow scaled by how much more the network costs
    weight = sp.csr_matrix((padded, padded))
    for f, c, net in zip(flows, node_costs, network_costs):
        mean_inner = c.sum() / max(g * (g - 1), 1)
        scale = max(net - mean_inner, net * 1e-3, 1e-30)
        grown = sp.csr_matrix((f.data, f.indices, f.indptr), shape=(ranks, ranks))
        grown.resize((padded, padded))
        weight = weight + grown * scale
    parts = partition(weight, [g] * nodes)
    node_of_rank = parts[:ranks].copy()
    gpu_of_rank = np.zeros(ranks, dtype=int)
    dense_flows = [f.tocsr() for f in flows]
    cache: dict[bytes, tuple[tuple[int, ...], bool]] = {}
    all_optimal = True
    for node in range(nodes):
        members = np.nonzero(node_of_rank == node)[0]
        if len(members) == 0:
            continue
        subs = tuple(f[members][:, members].toarray() for f in dense_flows)
        key = b"".join(s.tobytes() for s in subs)
        if key not in cache:
            problem = MappingProblem(subs, tuple(node_costs), len(members))
            heuristic = solve_heuristic(problem, starts=2)
            if g <= exact_up_to:
                exact = solve_exact(problem, incumbent=heuristic.perm, time_limit_s=exact_time_limit_s)
                cache[key] = (exact.perm, exact.optimal)
            else:
                cache[key] = (heuristic.perm, False)
        perm, optimal = cache[key]
        all_optimal &= optimal
        gpu_of_rank[members] = np.asarray(perm[: len(members)])
    default_node = np.arange(ranks) // g
    default_gpu = np.arange(ranks) % g
    default_cost = cluster_objective(flows, node_costs, network_costs, default_node, default_gpu)
    cost = cluster_objective(flows, node_costs, network_costs, node_of_rank, gpu_of_rank)
    if cost > default_cost:
        node_of_rank, gpu_of_rank, cost, all_optimal = default_node, default_gpu, default_cost, False
    return ClusterMapping(tuple(int(x) for x in node_of_rank), tuple(int(x) for x in gpu_of_rank), cost,
                          default_cost, all_optimal, time.perf_counter() - t0)
