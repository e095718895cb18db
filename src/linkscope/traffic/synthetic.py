"""Synthetic traffic patterns: the communication of well-known algorithms as TrafficMatrix.

Ranks of a process grid are numbered row-major, the last dimension fastest (as
``MPI_Cart_create`` does without reordering). Every exchange is one message of the given size
per direction; a periodic dimension of size 2 sends twice to the same neighbour (once for each
side), as a real halo exchange does.

>>> stencil((4, 4), periodic=True, size_bytes=10).bytes[0].tolist()[:5]
[0.0, 10.0, 0.0, 10.0, 10.0]
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

from ..collectives import TABLE, collective
from ..errors import UserError
from .matrix import HISTOGRAM_BINS, TrafficMatrix, check_rank_count, check_sparse_rank_count, from_entries, histogram_bin

PATTERNS = ("stencil2d", "stencil3d", "ring", "all-to-all", "tree", "random", "random-graph", "graph")


def parse_grid(text: str) -> tuple[int, ...]:
    """``"4x4"`` -> (4, 4); ``"2x2x4"`` -> (2, 2, 4).

    >>> parse_grid("2x3x4")
    (2, 3, 4)
    """
    if not re.fullmatch(r"\s*[0-9]+(\s*[xX]\s*[0-9]+)*\s*", str(text)):  # ASCII digits only
        raise UserError(f"not a process grid: {text!r}", hint="use AxB or AxBxC, e.g. 4x4 or 2x2x4")
    dims = tuple(int(part) for part in re.split(r"[xX]", str(text).replace(" ", "")))
    if any(d < 1 for d in dims):
        raise UserError(f"process grid {text!r} has a dimension below 1")
    return dims


def _finish(bytes_: np.ndarray, messages: np.ndarray, sizes: Iterable[tuple[int, int]], origin: str) -> TrafficMatrix:
    hist = [0] * HISTOGRAM_BINS
    for size_bytes, count in sizes:
        hist[histogram_bin(size_bytes)] += count
    return TrafficMatrix(bytes=bytes_, messages=messages, size_histogram=tuple(hist), origin=f"synthetic:{origin}")


def stencil(
    grid: Sequence[int],
    periodic: bool | Sequence[bool] = False,
    size_bytes: int = 1 << 20,
    weights: Sequence[float] | None = None,
) -> TrafficMatrix:
    """Halo exchange on a process grid: each rank sends ``size_bytes * weights[axis]`` to each
    neighbour along each axis (``weights`` default to 1: equal axes)."""
    dims = tuple(int(d) for d in grid)
    if not dims or any(d < 1 for d in dims):
        raise UserError(f"bad process grid {grid!r}")
    wrap = tuple(periodic) if isinstance(periodic, (list, tuple)) else (bool(periodic),) * len(dims)
    if len(wrap) != len(dims):
        raise UserError(f"{len(wrap)} periodic flags for a {len(dims)}-D grid")
    axis_weights = tuple(float(w) for w in weights) if weights is not None else (1.0,) * len(dims)
    if len(axis_weights) != len(dims) or not all(np.isfinite(w) and w >= 0 for w in axis_weights):
        raise UserError(f"stencil weights {weights!r} must be {len(dims)} finite non-negative numbers (one per axis)")
    _check_size(size_bytes, max(axis_weights))
    n = _grid_ranks(dims)
    strides = [int(np.prod(dims[i + 1:])) for i in range(len(dims))]
    coords = np.indices(dims).reshape(len(dims), n)  # row-major: rank r has coords[:, r]
    ranks = np.arange(n)
    src, dst, amounts = [], [], []
    for axis, (d, w) in enumerate(zip(dims, axis_weights)):
        for step in (-1, 1):
            c = coords[axis] + step
            keep = (c >= 0) & (c < d) if not wrap[axis] else np.ones(n, dtype=bool)
            peer = ranks + (c % d - coords[axis]) * strides[axis]
            keep &= peer != ranks
            src.append(ranks[keep])
            dst.append(peer[keep])
            amounts.append(np.full(int(keep.sum()), round(size_bytes * w), dtype=np.float64))
    dims_text = "x".join(map(str, dims))
    name = f"stencil{len(dims)}d {dims_text}{' periodic' if all(wrap) else ''}"
    if weights is not None:
        name += f" weights={','.join(f'{w:g}' for w in axis_weights)}"
    return _finish_entries(n, np.concatenate(src), np.concatenate(dst), np.concatenate(amounts), name)


def _finish_entries(ranks: int, src: np.ndarray, dst: np.ndarray, amounts: np.ndarray, origin: str) -> TrafficMatrix:
    """One message of ``amounts[k]`` bytes from ``src[k]`` to ``dst[k]`` each, as a TrafficMatrix
    built without an N x N array (``matrix.from_entries``: sparse above DENSE_UP_TO ranks)."""
    hist = [0] * HISTOGRAM_BINS
    values, counts = np.unique(amounts, return_counts=True)
    for size_bytes, count in zip(values.tolist(), counts.tolist()):
        hist[histogram_bin(int(size_bytes))] += int(count)
    return from_entries(ranks, src, dst, amounts, np.ones_like(amounts), size_histogram=tuple(hist),
                        origin=f"synthetic:{origin}")


def random_graph(ranks: int, degree: int = 16, size_bytes: int = 1 << 20, seed: int = 0) -> TrafficMatrix:
    """Each rank sends to ``degree`` distinct other ranks drawn uniformly at random, a volume drawn
    uniformly from 1..16 times ``size_bytes / 16`` each; reproducible from ``seed``. Built without
    an N x N array (sparse above DENSE_UP_TO ranks)."""
    _check_ranks(ranks, 2, dense=False)
    if not 1 <= degree < ranks:
        raise UserError(f"random-graph degree must be in 1..{ranks - 1} for {ranks} ranks, got {degree}")
    if seed < 0:
        raise UserError(f"random seed must be a non-negative integer, got {seed}")
    rng = np.random.default_rng(seed)
    chosen = np.empty((ranks, degree), dtype=np.int64)
    for r0 in range(0, ranks, 4096):  # blocks of ranks: a few MiB at a time
        rows = np.arange(r0, min(r0 + 4096, ranks))
        # a draw from the ranks other than r: 0..ranks-2, shifted past r; keys make them distinct
        keys = rng.random((len(rows), ranks - 1)) if ranks <= 4 * degree else None
        if keys is not None:
            pick = np.argsort(keys, axis=1)[:, :degree]
        else:
            pick = np.empty((len(rows), degree), dtype=np.int64)
            for k in range(len(rows)):
                pick[k] = rng.choice(ranks - 1, size=degree, replace=False)
        chosen[rows] = pick + (pick >= rows[:, None])
    src = np.repeat(np.arange(ranks), degree)
    amounts = rng.integers(1, 17, size=ranks * degree).astype(np.float64) * max(size_bytes // 16, 1)
    return _finish_entries(ranks, src, chosen.ravel(), amounts, f"random-graph {ranks} degree={degree} seed={seed}")


def ring(ranks: int, size_bytes: int = 1 << 20, bidirectional: bool = False) -> TrafficMatrix:
    """Each rank sends to the next (and, bidirectional, to the previous) rank, wrapping around."""
    _check_ranks(ranks, 2)
    bytes_ = np.zeros((ranks, ranks))
    messages = np.zeros((ranks, ranks))
    for r in range(ranks):
        peers = {(r + 1) % ranks} | ({(r - 1) % ranks} if bidirectional else set())
        for p in peers:
            bytes_[r, p] += size_bytes
            messages[r, p] += 1
    count = int(messages.sum())
    return _finish(bytes_, messages, [(size_bytes, count)], f"ring {ranks}{' bidirectional' if bidirectional else ''}")


def all_to_all(ranks: int, size_bytes: int = 1 << 20) -> TrafficMatrix:
    """Every rank sends ``size_bytes`` to every other rank."""
    _check_ranks(ranks, 2)
    messages = np.ones((ranks, ranks)) - np.eye(ranks)
    return _finish(messages * size_bytes, messages, [(size_bytes, ranks * (ranks - 1))], f"all-to-all {ranks}")


def _collective_name(op: str) -> str | None:
    """The descriptor's name for ``op`` (any of its spellings), None when it names no collective."""
    try:
        return collective(op).name
    except UserError:
        return None


def tree(ranks: int, size_bytes: int = 1 << 20, op: str = "bcast", root: int = 0) -> TrafficMatrix:
    """Binary-tree broadcast (parent -> children) or reduce (children -> parent) from ``root``: a rooted
    chain operation of the collective descriptor (``bcast``/``broadcast``, ``reduce``), whose ``reduces``
    says the direction. Tree position i has children 2i+1 and 2i+2; position i is rank (i + root) mod N."""
    _check_ranks(ranks, 2)
    chains = [c for c in TABLE if c.pattern == "chain"]
    spec = next((c for c in chains if c.name == _collective_name(op)), None)
    if spec is None:
        raise UserError(f"unknown tree operation {op!r}",
                        hint="valid: " + ", ".join(name for c in chains for name in (*c.aliases, c.name)))
    if not 0 <= root < ranks:
        raise UserError(f"tree root {root} is not a rank of 0..{ranks - 1}")
    bytes_ = np.zeros((ranks, ranks))
    for pos in range(ranks):
        for child in (2 * pos + 1, 2 * pos + 2):
            if child < ranks:
                parent_rank, child_rank = (pos + root) % ranks, (child + root) % ranks
                src, dst = (child_rank, parent_rank) if spec.reduces else (parent_rank, child_rank)
                bytes_[src, dst] += size_bytes
    messages = (bytes_ > 0).astype(float)
    return _finish(bytes_, messages, [(size_bytes, ranks - 1)], f"tree-{op} {ranks} root={root}")


def neighbour_graph(
    ranks: int, edges: Iterable[Sequence[float]], size_bytes: int = 1 << 20, symmetric: bool = True
) -> TrafficMatrix:
    """Nearest-neighbour exchange on a given graph: ``edges`` are (a, b) or (a, b, weight); each
    edge carries ``size_bytes * weight`` from a to b (and back when ``symmetric``)."""
    _check_ranks(ranks, 1)
    bytes_ = np.zeros((ranks, ranks))
    messages = np.zeros((ranks, ranks))
    sizes: dict[int, int] = {}
    for edge in edges:
        a, b, weight = _edge(edge)
        _check_size(size_bytes, weight)
        for x in (a, b):
            if not 0 <= x < ranks:
                raise UserError(f"graph edge {a}-{b} names rank {x}, outside 0..{ranks - 1}")
        if a == b:
            continue
        amount = round(size_bytes * weight)
        for src, dst in ((a, b), (b, a)) if symmetric else ((a, b),):
            bytes_[src, dst] += amount
            messages[src, dst] += 1
            sizes[amount] = sizes.get(amount, 0) + 1
    return _finish(bytes_, messages, sizes.items(), f"graph {ranks} ranks")


def random_sparse(
    ranks: int, size_bytes: int = 1 << 20, density: float = 0.3, seed: int = 0, symmetric: bool = True
) -> TrafficMatrix:
    """Each ordered (or, symmetric, unordered) pair talks with probability ``density``, with a
    volume drawn uniformly from 1..16 times ``size_bytes / 16``; reproducible from ``seed``."""
    _check_ranks(ranks, 2)
    if not 0 < density <= 1:
        raise UserError(f"random density must be in (0, 1], got {density}")
    if seed < 0:
        raise UserError(f"random seed must be a non-negative integer, got {seed}")
    rng = np.random.default_rng(seed)
    talk = rng.random((ranks, ranks)) < density
    volume = rng.integers(1, 17, size=(ranks, ranks)) * max(size_bytes // 16, 1)
    if symmetric:
        talk = np.triu(talk, 1)
        talk = talk | talk.T
        volume = np.triu(volume, 1) + np.triu(volume, 1).T
    np.fill_diagonal(talk, False)
    bytes_ = np.where(talk, volume, 0).astype(float)
    messages = talk.astype(float)
    sizes: dict[int, int] = {}
    for v in bytes_[talk]:
        sizes[int(v)] = sizes.get(int(v), 0) + 1
    return _finish(bytes_, messages, sizes.items(), f"random {ranks} density={density:g} seed={seed}")


def _check_ranks(ranks: int, minimum: int, dense: bool = True) -> None:
    """At least ``minimum`` ranks, and at most MAX_RANKS for a pattern built dense (MAX_SPARSE_RANKS
    for one built from entries)."""
    if int(ranks) < minimum:
        raise UserError(f"need at least {minimum} ranks, got {ranks}")
    (check_rank_count if dense else check_sparse_rank_count)(int(ranks), "the traffic pattern")


def _grid_ranks(dims: Sequence[int]) -> int:
    """Ranks of a process grid, refused above MAX_SPARSE_RANKS (before a product can overflow):
    a stencil is built sparse."""
    n = 1
    for d in dims:
        n *= int(d)
        check_sparse_rank_count(n, f"grid {'x'.join(map(str, dims))}")
    return n


def _check_size(size_bytes: float, weight: float = 1.0) -> None:
    """Bytes per message: a finite, non-negative number below 2**63 once weighted."""
    amount = float(size_bytes) * float(weight)
    if not np.isfinite(amount) or amount < 0 or amount >= 2.0**63:
        raise UserError(f"message size {size_bytes} x weight {weight:g} is not a byte count (0 .. 2**63)")


def _edge(edge: Sequence[float]) -> tuple[int, int, float]:
    """(a, b, weight) of a graph edge: whole, non-negative rank numbers and a finite weight >= 0."""
    if len(edge) not in (2, 3):
        raise UserError(f"graph edge {tuple(edge)!r} must be (a, b) or (a, b, weight)")
    ends = []
    for x in edge[:2]:
        value = float(x)
        if not (np.isfinite(value) and value.is_integer() and value >= 0):
            raise UserError(f"graph edge {tuple(edge)!r}: rank {x!r} is not a rank number (0, 1, 2, ...)")
        ends.append(int(value))
    weight = float(edge[2]) if len(edge) == 3 else 1.0
    if not (np.isfinite(weight) and weight >= 0):
        raise UserError(f"graph edge {tuple(edge)!r}: weight {weight:g} must be a finite number >= 0")
    return ends[0], ends[1], weight


def generate(
    pattern: str,
    *,
    ranks: int | None = None,
    grid: Sequence[int] | None = None,
    periodic: bool = False,
    size_bytes: int = 1 << 20,
    weights: Sequence[float] | None = None,
    op: str = "bcast",
    density: float = 0.3,
    seed: int = 0,
    bidirectional: bool = False,
    edges: Iterable[Sequence[float]] | None = None,
    degree: int = 16,
) -> TrafficMatrix:
    """One entry point for the CLI: the pattern by name with its options."""
    if pattern not in PATTERNS:
        raise UserError(f"unknown traffic pattern {pattern!r}", hint=f"valid: {', '.join(PATTERNS)}")
    _check_size(size_bytes)
    if ranks is not None:
        _check_ranks(ranks, 1, dense=pattern not in ("stencil2d", "stencil3d", "random-graph"))
    if pattern in ("stencil2d", "stencil3d"):
        want = 2 if pattern == "stencil2d" else 3
        if grid is None:
            if ranks is None:
                raise UserError(f"{pattern} needs --grid (e.g. {'4x4' if want == 2 else '2x2x2'}) or --ranks")
            grid = balanced_grid(int(ranks), want)
        if len(grid) != want:
            raise UserError(f"{pattern} needs a {want}-D grid, got {'x'.join(map(str, grid))}")
        if ranks is not None and _grid_ranks(grid) != ranks:
            raise UserError(f"grid {'x'.join(map(str, grid))} has {_grid_ranks(grid)} ranks, not --ranks {ranks}")
        return stencil(grid, periodic, size_bytes, weights)
    count = ranks if ranks is not None else (_grid_ranks(grid) if grid else None)
    if pattern != "graph":
        if count is None:
            raise UserError(f"{pattern} needs --ranks N")
        if pattern == "ring":
            return ring(count, size_bytes, bidirectional)
        if pattern == "all-to-all":
            return all_to_all(count, size_bytes)
        if pattern == "tree":
            return tree(count, size_bytes, op)
        if pattern == "random":
            return random_sparse(count, size_bytes, density, seed)
        if pattern == "random-graph":
            return random_graph(count, degree, size_bytes, seed)
    if pattern == "graph":
        if edges is None:
            raise UserError("graph pattern needs edges")
        checked = [_edge(e) for e in edges]
        if not checked:
            raise UserError("graph pattern needs at least one edge")
        if count is None:
            used = {x for a, b, _ in checked for x in (a, b)}
            count = 1 + max(used)
            check_rank_count(count, "the edge list")
            if len(used) < count:
                unused = sorted(set(range(count)) - used)
                raise UserError(f"the edges name ranks up to {count - 1}, but {len(unused)} rank(s) in between "
                                f"(first: {unused[0]}) appear in no edge",
                                hint=f"give --ranks {count} if the job really has {count} ranks")
        return neighbour_graph(count, checked, size_bytes)
    raise UserError(f"unknown traffic pattern {pattern!r}", hint=f"valid patterns: {', '.join(PATTERNS)}")


def balanced_grid(ranks: int, dims: int) -> tuple[int, ...]:
    """The most cubic factorisation of ``ranks`` into ``dims`` factors (MPI_Dims_create's idea).

    >>> balanced_grid(16, 2), balanced_grid(8, 3), balanced_grid(12, 3)
    ((4, 4), (2, 2, 2), (3, 2, 2))
    """
    best: tuple[int, ...] | None = None

    def factorisations(n: int, k: int, start: int) -> Iterable[tuple[int, ...]]:
        if k == 1:
            if n >= start:
                yield (n,)
            return
        for f in range(start, n + 1):
            if n % f == 0:
                for rest in factorisations(n // f, k - 1, f):
                    yield (f,) + rest

    for combo in factorisations(ranks, dims, 1):
        if best is None or max(combo) - min(combo) < max(best) - min(best):
            best = combo
    if best is None:
        raise UserError(f"cannot factor {ranks} ranks into a {dims}-D grid")
    return tuple(sorted(best, reverse=True))
