"""Hierarchical mapping for many nodes: ranks -> nodes by balanced partitioning (minimising the
traffic that crosses the network), then ranks -> GPUs inside each node (exact for small nodes,
heuristic otherwise), on a cluster of identical nodes.

Costs come from a ``ClusterCost`` (``cluster``): the node's matrix on one node, the network's
structure across nodes. Ranks go to hosts by METIS along the network's hierarchy (groups of near
hosts first, such as the nodes under one leaf switch, then hosts within a group). The default mapping (rank r on node r // g, GPU r % g)
is kept when the search does not beat it.
"""
from __future__ import annotations

import itertools
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .cluster import ClusterCost
from .exact import solve_exact
from .heuristic import solve_heuristic
from .partition import KL_UP_TO, partition, refine_with_distances
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


def host_groups(host_cost: np.ndarray, hosts: Sequence[int]) -> list[list[int]]:
    """Split ``hosts`` into groups of hosts that are closest to each other (connected parts of
    the pairs at the smallest cost among them, e.g. the nodes under one leaf switch); one group
    per host when every pair costs the same."""
    hosts = list(hosts)
    if len(hosts) <= 1:
        return [hosts]
    sub = host_cost[np.ix_(hosts, hosts)]
    np.fill_diagonal(sub, np.inf)  # sub is a copy: the smallest cost between two different hosts
    near = sub <= sub.min() * (1 + 1e-9) + 1e-300
    if near.sum() == len(hosts) * (len(hosts) - 1):  # every pair equally near (4,096 hosts: 16M pairs)
        return [[h] for h in hosts]
    from scipy.sparse.csgraph import connected_components

    rows, cols = np.nonzero(near)
    count, label = connected_components(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=near.shape),
                                        directed=False)
    if count == 1:
        return [[h] for h in hosts]
    return [[hosts[i] for i in np.nonzero(label == c)[0]] for c in range(count)]


FANOUT_UP_TO = 256
"""A split of the ranks into more groups of near hosts than this (4,096 hosts under 1,024 leaf
switches) is done in two steps: first into about sqrt(groups) runs of consecutive groups, then
each run into its groups. The partitioner's work per vertex grows with the number of parts
(``partition._kway_refine`` keeps a vertices x parts table: 32,768 x 4,096 doubles is 1 GiB)."""
BOTTOM_UP_HOSTS_UP_TO = 1024
"""Up to this many hosts, the bottom-up placement (ranks straight into hosts) is tried as well;
above, one part per host is the expensive split ``FANOUT_UP_TO`` avoids."""
LIGHT_ABOVE_HOSTS = 1024
"""Above this many hosts every piece is partitioned ``light`` (one METIS start, fewer cuts: 4,096
hosts gave 1,024 pieces x 8 seeds x 2 kinds, 16,000 METIS calls, 15 of 24 s at 32,768 ranks)."""


def chunked(groups: list[list[int]]) -> list[list[int]]:
    """``groups`` as they are, or, when there are more than ``FANOUT_UP_TO``, joined into about
    sqrt(len(groups)) runs of consecutive groups (the recursion then splits each run into its
    groups again: ``host_groups`` of a run finds them, all its pairs being no nearer).

    >>> [len(run) for run in chunked([[h] for h in range(300)])][:3]
    [18, 18, 18]
    """
    if len(groups) <= FANOUT_UP_TO:
        return groups
    runs = int(np.ceil(np.sqrt(len(groups))))
    bounds = np.linspace(0, len(groups), runs + 1).round().astype(int)
    return [[h for group in groups[a:b] for h in group] for a, b in itertools.pairwise(bounds.tolist()) if b > a]


REFINE_HOSTS_UP_TO = 128
"""Up to this many hosts, host placements are polished by distance-aware swaps."""
SEEDS_UP_TO = 1024
"""Up to this many (padded) ranks, host placement is tried with two partitioner seeds."""
POLISH_UP_TO = 32
"""Up to this many GPUs, the answer is polished by 2-opt on the whole cluster's pair costs."""


def spread(count: int, capacities: Sequence[int]) -> list[int]:
    """``count`` items over parts in proportion to their capacities (largest remainders), each at
    most its capacity.

    >>> spread(10, [4, 4, 4, 4])
    [3, 3, 2, 2]
    """
    total = sum(capacities)
    exact = [count * c / total for c in capacities]
    sizes = [min(int(x), c) for x, c in zip(exact, capacities)]
    order = sorted(range(len(capacities)), key=lambda k: (-(exact[k] - sizes[k]), k))
    k = 0
    while sum(sizes) < count:
        j = order[k % len(order)]
        if sizes[j] < capacities[j]:
            sizes[j] += 1
        k += 1
    return sizes


@dataclass
class _Memo:
    """What ``_best_hosts``'s placements share (its ``host_cost`` fixed): partitions of identical
    pieces, and the groups of each set of hosts."""

    parts: dict[bytes, np.ndarray] = field(default_factory=dict)
    groups: dict[tuple[int, ...], list[list[int]]] = field(default_factory=dict)


def _bottom_up(weight: sp.csr_matrix, host_cost: np.ndarray, g: int, seed: int,
               memo: _Memo | None = None) -> np.ndarray:
    """Ranks split straight into hosts, then hosts placed on the hosts' positions by a partition of
    the host-to-host traffic along the network's hierarchy. The ranks (``weight``'s size, at most
    hosts x g) are spread over the hosts in proportion."""
    hosts = host_cost.shape[0]
    memo = memo if memo is not None else _Memo()
    parts = partition(weight, spread(weight.shape[0], [g] * hosts), seed=seed, memo=memo.parts)
    onehot = sp.csr_matrix((np.ones(len(parts)), (np.arange(len(parts)), parts)), shape=(len(parts), hosts))
    quotient = (onehot.T @ weight @ onehot).tocsr()
    quotient.setdiag(0)
    quotient.eliminate_zeros()
    slot = _top_down(quotient, host_cost, 1, seed, bisection=False, memo=memo)  # host slot of each part
    return slot[parts]


def _top_down(weight: sp.csr_matrix, host_cost: np.ndarray, g: int, seed: int, bisection: bool = True,
              memo: _Memo | None = None) -> np.ndarray:
    """Host of each rank: split the ranks over groups of near hosts, then each group's ranks over
    its hosts, recursively (the partitioner sees the network's own hierarchy). With fewer ranks
    than slots (``weight`` unpadded), each group gets its share in proportion to its slots."""
    host_of = np.zeros(weight.shape[0], dtype=int)
    small = bisection and weight.shape[0] <= KL_UP_TO
    memo = memo if memo is not None else _Memo()
    light = host_cost.shape[0] > LIGHT_ABOVE_HOSTS

    def recurse(ranks: np.ndarray, hosts: list[int]) -> None:
        if len(hosts) == 1:
            host_of[ranks] = hosts[0]
            return
        groups = memo.groups.get(tuple(hosts))
        if groups is None:
            groups = memo.groups[tuple(hosts)] = chunked(host_groups(host_cost, hosts))
        sizes = spread(len(ranks), [len(group) * g for group in groups])
        parts = partition(weight[ranks][:, ranks], sizes, seed=seed, bisection=small, memo=memo.parts, light=light)
        for k, group in enumerate(groups):
            recurse(ranks[parts == k], group)

    recurse(np.arange(weight.shape[0]), list(range(host_cost.shape[0])))
    return host_of


def _best_hosts(weight: sp.csr_matrix, host_cost: np.ndarray, g: int, seed: int,
                ranks: int) -> np.ndarray:
    """Host of each rank: the best of top-down and bottom-up placements, with one or two seeds,
    each polished by distance-aware swaps when there are few hosts. Compared by the partitioning
    weight times the host-to-host cost (what a pair on two hosts costs more than one on a host)."""
    hosts = host_cost.shape[0]
    seeds = (seed, seed + 1) if weight.shape[0] <= SEEDS_UP_TO else (seed,)
    scale = host_cost / max(float(host_cost.max()), 1e-300)
    best, best_value = None, float("inf")
    coo = sp.coo_matrix(weight)
    # padded: silent ranks fill the free slots (the talking ranks are packed); real: only the
    # ranks, spread over the hosts in proportion (a partition without silent ranks to shuffle)
    graphs = [weight] if ranks == weight.shape[0] else [weight, weight[:ranks][:, :ranks].tocsr()]
    memo = _Memo()  # identical pieces (a stencil's blocks) are partitioned once
    for s in seeds:
        for graph in graphs:
            for build in (_top_down, _bottom_up):
                if build is _bottom_up and (hosts <= 2 or hosts > BOTTOM_UP_HOSTS_UP_TO):
                    continue
                placed = build(graph, host_cost, g, s, memo=memo)
                if hosts <= REFINE_HOSTS_UP_TO:
                    placed = refine_with_distances(graph, placed, scale)
                placed = placed[:ranks]
                value = float((coo.data * scale[placed[coo.row], placed[coo.col]]).sum())
                if value < best_value * (1 - 1e-12):
                    best, best_value = placed.copy(), value
    assert best is not None
    return best


def _polish(flows, cost: ClusterCost, node_of_rank: np.ndarray, gpu_of_rank: np.ndarray, value: float
            ) -> tuple[np.ndarray, np.ndarray, float]:
    """2-opt on the whole cluster as one mapping problem (small clusters only)."""
    from .heuristic import two_opt

    g = cost.gpus_per_host
    n = cost.hosts * g
    host = np.repeat(np.arange(cost.hosts), g)
    local = np.tile(np.arange(g), cost.hosts)
    a, b = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    costs = tuple(cost.pair_cost(t, host[a], local[a], host[b], local[b]) for t in range(len(flows)))
    ranks = flows[0].shape[0]
    problem = MappingProblem(tuple(f.toarray() for f in flows), costs, ranks)
    start = problem.complete(node_of_rank * g + gpu_of_rank)
    perm, polished = two_opt(problem, start)
    from .heuristic import solve_heuristic

    other = solve_heuristic(problem, starts=2, extra_starts=[perm])
    if other.cost < polished:
        perm, polished = np.array(other.perm), other.cost
    if polished < value * (1 - 1e-12):
        slots = perm[:ranks]
        return slots // g, slots % g, cost.objective(flows, slots // g, slots % g)
    return node_of_rank, gpu_of_rank, value


def solve_cluster(
    flows: Sequence[sp.spmatrix | np.ndarray],
    cost: ClusterCost,
    node_budget: int = 20_000,
    seed: int = 0,
) -> ClusterMapping:
    """Map ranks (the flows' size) onto the hosts of ``cost``: ranks to hosts by the partitioner
    along the network's hierarchy, then ranks to GPUs inside each host (branch-and-bound within
    ``node_budget`` explored nodes from a heuristic start; nothing to do on a uniform node)."""
    t0 = time.perf_counter()
    sparse_flows: list[sp.csr_matrix] = [sp.csr_matrix(f, dtype=np.float64) for f in flows]
    for f in sparse_flows:
        f.setdiag(0)
        f.eliminate_zeros()
    flows = sparse_flows
    ranks = flows[0].shape[0]
    g, nodes = cost.gpus_per_host, cost.hosts
    if ranks > nodes * g:
        from ..errors import UserError

        raise UserError(f"{ranks} ranks do not fit on {nodes} nodes x {g} GPUs")
    padded = nodes * g
    # the partitioning weight: each term's flow scaled by how much more a pair on two hosts costs
    weight = sp.csr_matrix((padded, padded))
    host_cost = np.zeros((nodes, nodes))
    for term, f in enumerate(flows):
        mean_inner = cost.node.costs[term].sum() / max(g * (g - 1), 1)
        term_hosts = cost.host_cost(term)
        net = float(term_hosts[~np.eye(nodes, dtype=bool)].mean()) if nodes > 1 else mean_inner
        scale = max(net - mean_inner, net * 1e-3, 1e-30)
        grown = sp.csr_matrix((f.data, f.indices, f.indptr), shape=(ranks, ranks))
        grown.resize((padded, padded))
        weight = weight + grown * scale
        host_cost += term_hosts * max(float(f.sum()), 1e-300)
    weight = weight.tocsr()
    node_of_rank = _best_hosts(weight, host_cost, g, seed, ranks)
    gpu_of_rank = np.zeros(ranks, dtype=int)
    uniform = cost.node.is_uniform()
    cache: dict[bytes, tuple[tuple[int, ...], bool]] = {}
    all_optimal = True
    for node in range(nodes):
        members = np.nonzero(node_of_rank == node)[0]
        if len(members) == 0:
            continue
        if uniform:
            gpu_of_rank[members] = np.arange(len(members))
            continue
        subs = tuple(f[members][:, members].toarray() for f in flows)
        key = b"".join(s.tobytes() for s in subs)
        if key not in cache:
            problem = MappingProblem(subs, tuple(cost.node.costs), len(members))
            heuristic = solve_heuristic(problem, starts=2)
            if g <= 16:
                exact = solve_exact(problem, incumbent=heuristic.perm, node_limit=node_budget)
                cache[key] = (exact.perm, exact.optimal)
            else:
                cache[key] = (heuristic.perm, False)
        perm, optimal = cache[key]
        all_optimal &= optimal
        gpu_of_rank[members] = np.asarray(perm[: len(members)])
    default_node = np.arange(ranks) // g
    default_gpu = np.arange(ranks) % g
    default_cost = cost.objective(flows, default_node, default_gpu)
    value = cost.objective(flows, node_of_rank, gpu_of_rank)
    if nodes * g <= POLISH_UP_TO:
        node_of_rank, gpu_of_rank, value = _polish(flows, cost, node_of_rank, gpu_of_rank, value)
    if value > default_cost:
        node_of_rank, gpu_of_rank, value, all_optimal = default_node, default_gpu, default_cost, False
    return ClusterMapping(tuple(int(x) for x in node_of_rank), tuple(int(x) for x in gpu_of_rank), value,
                          default_cost, all_optimal, time.perf_counter() - t0)
