"""NCCL's trees: which rank sends to which in a tree allreduce, per channel (NCCL's structure, not its tuner).

Every fact is NVIDIA/nccl at tag v2.28.9-1 (``fetch github:NVIDIA/nccl``), cited as file:line.

- Within a node a tree channel is a chain of the node's GPUs in the tree graph's order: GPU i's parent is
  GPU i-1 and its one child GPU i+1 (graph/connect.cc:52-61 ``channel->tree.up = treeIntra[i-1]``,
  ``tree.down[0] = treeIntra[i+1]``); search.cc:758 draws it ``GPU a -> GPU b -> .. -> GPU x``.
- Across nodes the channels form a double binary tree over NODES, not over ranks (connect.cc:146
  ``ncclGetDtree(nNodes, node, ...)``): tree 0 is ``ncclGetBtree`` (graph/trees.cc:31-65), tree 1 its mirror
  for an even node count and its shift by one for an odd one (trees.cc:88-109), so a node that is a leaf in
  one tree is interior in the other. Search channel c runs tree 0 and its duplicate c + nChannels runs tree 1
  (connect.cc:147-172 ``channel1 = channel0 + nChannels``; duplication connect.cc:69-72, 452).
- Only the ends of a node's chain join the inter-node tree (connect.cc:52-59): the chain's first GPU sends to
  the parent node (``treeToParent = treeIntra[0]``); a child node attaches to its parent node's first GPU
  (pattern TREE, all NIC traffic on one GPU) or, for the balanced tree, its first child to the second GPU
  (``child0Index = 1``; graph.h:95-97). The child attaches to the parent's ``treeToChild0`` or
  ``treeToChild1`` by its child type (connect.cc:154-163).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BALANCED_TREE, SPLIT_TREE, TREE = 1, 2, 3  # graph.h:95-97 (NCCL_TOPO_PATTERN_*)


@dataclass(frozen=True)
class TreeLinks:
    """One node's place in one binary tree over nodes: its parent (-1 at the root), its two children (-1:
    none) and which of its parent's children it is (0: ``down0``, 1: ``down1``; -1 at the root)."""

    up: int
    down0: int
    down1: int
    child_type: int


def btree(nranks: int, rank: int) -> TreeLinks:
    """``ncclGetBtree`` (trees.cc:31-65): the binary tree over ``nranks`` rooted at 0 that alternates leaves
    and interior ranks (every odd rank a leaf)."""
    if not 0 <= rank < nranks:
        raise ValueError(f"rank {rank} is not in a tree of {nranks}")
    bit = 1
    while bit < nranks:
        if bit & rank:
            break
        bit <<= 1
    if rank == 0:
        return TreeLinks(-1, -1, bit >> 1 if nranks > 1 else -1, -1)
    up = (rank ^ bit) | (bit << 1)
    if up >= nranks:
        up = rank ^ bit
    child_type = 0 if rank < up else 1
    lowbit = bit >> 1
    down0 = -1 if lowbit == 0 else rank - lowbit
    down1 = -1 if lowbit == 0 else rank + lowbit
    while down1 >= nranks:  # trees.cc:58-61, as written: the bound walks down one bit at a time
        down1 = -1 if lowbit == 0 else rank + lowbit
        lowbit >>= 1
    return TreeLinks(up, down0, down1, child_type)


def dtree(nranks: int, rank: int) -> tuple[TreeLinks, TreeLinks]:
    """``ncclGetDtree`` (trees.cc:88-109): tree 0 is ``btree``; tree 1 its mirror (rank -> nranks-1-rank) for an
    even ``nranks``, its shift by one for an odd one."""
    first = btree(nranks, rank)
    if nranks % 2 == 1:
        t = btree(nranks, (rank - 1 + nranks) % nranks)

        def back(x: int) -> int:
            return -1 if x == -1 else (x + 1) % nranks
    else:
        t = btree(nranks, nranks - 1 - rank)

        def back(x: int) -> int:
            return -1 if x == -1 else nranks - 1 - x
    return first, TreeLinks(back(t.up), back(t.down0), back(t.down1), t.child_type)


def channel_tree(chains: Sequence[Sequence[int]], tree: int, patterns: int | Sequence[int] = TREE) -> list[tuple[int, int]]:
    """The (child rank, parent rank) edges of one tree channel: ``chains`` holds each node's chain of ranks in
    NCCL's node order (first GPU first), ``tree`` 0 or 1 (which of ``dtree``'s trees the channel runs),
    ``patterns`` each node's tree pattern (``TREE``, ``BALANCED_TREE`` or ``SPLIT_TREE``; one for all). A child
    node attaches where its parent node's pattern puts that child: connect.cc:54-55 read the parent node's
    graph, gathered per node (init.cc:1105-1108 nodesTreePatterns). The root node's first GPU is the channel's
    root; every other rank has exactly one parent."""
    n_nodes = len(chains)
    if tree not in (0, 1):
        raise ValueError(f"a double binary tree has trees 0 and 1, not {tree}")
    pattern_of = [patterns] * n_nodes if isinstance(patterns, int) else list(patterns)
    edges = []
    for node, chain in enumerate(chains):
        edges += [(chain[i], chain[i - 1]) for i in range(1, len(chain))]  # connect.cc:60-61
        links = dtree(n_nodes, node)[tree]
        if links.up >= 0:
            parent, pattern = chains[links.up], pattern_of[links.up]
            # connect.cc:54-55: where the parent's children attach (index into its chain)
            slot = (1 if pattern in (BALANCED_TREE, SPLIT_TREE) else 0, 1 if pattern == SPLIT_TREE else 0)
            edges.append((chain[0], parent[min(slot[links.child_type], len(parent) - 1)]))
    return edges


def tree_depth(edges: Sequence[tuple[int, int]]) -> int:
    """Hops from the root to the deepest rank of a tree given by its (child, parent) edges (pointer doubling
    over the parent array: log2(depth) vectorised passes, not a walk per rank)."""
    if not edges:
        return 0
    pairs = np.asarray(edges, dtype=np.int64)
    ids, index = np.unique(pairs, return_inverse=True)
    index = index.reshape(pairs.shape)
    ancestor = np.full(ids.size, -1, dtype=np.int64)
    ancestor[index[:, 0]] = index[:, 1]
    hops = (ancestor >= 0).astype(np.int64)  # hops from each rank to ``ancestor`` (-1: the root reached)
    while np.any(ancestor >= 0):
        has = ancestor >= 0
        up = np.where(has, ancestor, 0)
        hops = np.where(has, hops + hops[up], hops)
        ancestor = np.where(has, ancestor[up], -1)
    return int(hops.max())
