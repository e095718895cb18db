"""The TrafficMatrix: how much each rank sends to each other rank.

``bytes[r, s]`` is the number of bytes rank ``r`` sent to rank ``s`` (row = sender), ``messages``
the number of point-to-point messages, where known. A captured matrix also carries a
message-size histogram, the collectives each job called, and where each rank ran (host, local
rank). Self-traffic (the diagonal) is kept as given but ignored by mapping.

Arrays are stored read-only so the frozen dataclass really is immutable.

Dense or sparse: ``bytes`` (and ``messages``) is a NumPy N x N array, or a SciPy CSR matrix for
a job of more than ``DENSE_UP_TO`` ranks given in a sparse form (a sparse file, ``from_entries``:
the synthetic patterns and the capture build through it). A sparse matrix of up to
``DENSE_UP_TO`` ranks is stored dense (at most 32 MiB each, and every consumer reads it). Steps that
need the dense N x N form (``offdiagonal_bytes``) refuse a sparse job of more than ``MAX_RANKS``;
the cluster mapper reads the sparse form (``sparse_offdiagonal_bytes``) and never densifies.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..errors import UserError

MAX_RANKS = 8192
"""The largest job a traffic matrix may describe: two dense N x N float64 matrices take 1 GiB at
8192 ranks (and mapping works on N x N cost terms); checked before anything is allocated."""

DENSE_UP_TO = 2048
"""A sparse matrix of up to this many ranks is stored dense (32 MiB per N x N float64 matrix)."""
MAX_SPARSE_RANKS = 1 << 20
"""The largest job a sparse traffic matrix may describe (jobs of 16k-100k GPUs exist)."""
MAX_NONZEROS = 1 << 26
"""The most talking pairs a sparse matrix may hold (about 0.8 GiB as CSR with its messages)."""

HISTOGRAM_BINS = 64
"""Message-size histogram: bin 0 counts empty messages, bin k (k >= 1) sizes in [2**(k-1), 2**k)."""


def histogram_bin(size_bytes: int) -> int:
    """Bin of a message size: 0 for 0 bytes, else ``size_bytes.bit_length()`` (capped).

    >>> [histogram_bin(s) for s in (0, 1, 2, 3, 4, 1024)]
    [0, 1, 2, 2, 3, 11]
    """
    return min(int(size_bytes).bit_length(), HISTOGRAM_BINS - 1)


class TrafficError(UserError):
    """A traffic matrix that is not square, negative, not finite or inconsistent."""


def check_rank_count(ranks: int, what: str = "traffic matrix") -> None:
    """Refuse a job larger than ``MAX_RANKS`` before its matrices are allocated."""
    if ranks > MAX_RANKS:
        raise TrafficError(f"{what} has {ranks} ranks; linkscope handles up to {MAX_RANKS} "
                           f"(two dense N x N matrices would need {2 * 8 * float(ranks) ** 2 / 2**30:,.3g} GiB)")


def _as_sparse(values: Any, what: str, ranks: int | None = None) -> sp.csr_matrix:
    """A checked, canonical (sorted, duplicates summed), read-only CSR matrix."""
    if values.ndim != 2 or values.shape[0] != values.shape[1]:
        raise TrafficError(f"{what} must be a square N x N matrix, got shape {tuple(values.shape)}")
    n = int(values.shape[0])
    if n == 0:
        raise TrafficError(f"{what} is empty (0 ranks)")
    if ranks is not None and n != ranks:
        raise TrafficError(f"{what} is {n} x {n} but the byte matrix is {ranks} x {ranks}")
    if n > MAX_SPARSE_RANKS:
        raise TrafficError(f"{what} has {n} ranks; linkscope handles up to {MAX_SPARSE_RANKS} in a sparse matrix")
    if values.nnz > MAX_NONZEROS:
        raise TrafficError(f"{what} holds {values.nnz} entries; linkscope handles up to {MAX_NONZEROS}")
    if values.dtype.kind not in "iuf":
        raise TrafficError(f"{what} is not numeric: it holds {values.dtype} values", hint="byte counts are real numbers")
    out = sp.csr_matrix(values, dtype=np.float64, copy=True)
    out.sum_duplicates()
    out.sort_indices()
    data = out.data
    if not np.all(np.isfinite(data)) or np.any(data < 0):
        bad = int(np.nonzero(~np.isfinite(data) | (data < 0))[0][0])
        r = int(np.searchsorted(out.indptr, bad, side="right") - 1)
        value = data[bad]
        kind = "non-finite" if not np.isfinite(value) else "negative"
        raise TrafficError(f"{what} has a {kind} value {value:g} at row {r}, column {int(out.indices[bad])}")
    out.eliminate_zeros()
    for array in (out.data, out.indices, out.indptr):
        array.setflags(write=False)
    return out


def _stored(values: Any, what: str, ranks: int | None = None) -> np.ndarray | sp.csr_matrix:
    """The stored form of a matrix: sparse input above DENSE_UP_TO ranks stays sparse, all else dense."""
    if sp.issparse(values):
        matrix = _as_sparse(values, what, ranks)
        if matrix.shape[0] > DENSE_UP_TO:
            return matrix
        values = matrix.toarray()
    return _as_matrix(values, what)


def _as_matrix(values: Any, what: str) -> np.ndarray:
    try:
        raw = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise TrafficError(f"{what} is not numeric: {exc}") from None
    if raw.dtype.kind not in "iuf":
        kind = {"c": "complex numbers", "b": "true/false values", "O": "missing or mixed values",
                "U": "text", "S": "text"}.get(raw.dtype.kind, f"{raw.dtype} values")
        raise TrafficError(f"{what} is not numeric: it holds {kind}", hint="byte counts are real numbers")
    if raw.ndim != 2 or raw.shape[0] != raw.shape[1]:
        raise TrafficError(f"{what} must be a square N x N matrix, got shape {tuple(raw.shape)}")
    if raw.shape[0] == 0:
        raise TrafficError(f"{what} is empty (0 ranks)")
    check_rank_count(raw.shape[0], what)
    array = np.array(raw, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        r, s = np.argwhere(~np.isfinite(array))[0]
        raise TrafficError(f"{what} has a non-finite value {array[r, s]} at row {r}, column {s}")
    if np.any(array < 0):
        r, s = np.argwhere(array < 0)[0]
        raise TrafficError(f"{what} has a negative value {array[r, s]:g} at row {r}, column {s}")
    array.setflags(write=False)
    return array


@dataclass(frozen=True)
class TrafficMatrix:
    """Rank-to-rank traffic of one job.

    Attributes:
        bytes: N x N float array, bytes sent from rank r (row) to rank s (column); a CSR matrix
            above ``DENSE_UP_TO`` ranks when given sparse (see the module doc).
        messages: N x N message counts (dense or sparse as ``bytes``), or None when unknown.
        size_histogram: HISTOGRAM_BINS message counts by size (see ``histogram_bin``), or None.
        hosts: host name of each rank, or None when unknown.
        local_ranks: rank within its host, or None when unknown.
        origin: where it came from: ``captured:<command>``, ``synthetic:<pattern>``, ``file:<path>``.
        collectives: collective name -> {"calls": int, "bytes": int} summed over ranks (captured).
    """

    bytes: np.ndarray | sp.csr_matrix
    messages: np.ndarray | sp.csr_matrix | None = None
    size_histogram: tuple[int, ...] | None = None
    hosts: tuple[str, ...] | None = None
    local_ranks: tuple[int, ...] | None = None
    origin: str = ""
    collectives: Mapping[str, Mapping[str, int]] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        stored = _stored(self.bytes, "traffic matrix")
        object.__setattr__(self, "bytes", stored)
        n = stored.shape[0]
        if self.messages is not None:
            if sp.issparse(stored):
                messages: np.ndarray | sp.csr_matrix = _as_sparse(sp.csr_matrix(self.messages), "message-count matrix", n)
            else:
                given: Any = self.messages
                messages = _as_matrix(given.toarray() if sp.issparse(given) else given, "message-count matrix")
            if messages.shape != stored.shape:
                raise TrafficError(f"message-count matrix is {messages.shape[0]} x {messages.shape[0]} "
                                   f"but the byte matrix is {n} x {n}")
            object.__setattr__(self, "messages", messages)
        if self.size_histogram is not None:
            hist = tuple(int(v) for v in self.size_histogram)
            if any(v < 0 for v in hist):
                raise TrafficError("message-size histogram has a negative count")
            object.__setattr__(self, "size_histogram", hist)
        if self.hosts is not None:
            if len(self.hosts) != n:
                raise TrafficError(f"{len(self.hosts)} host names for {n} ranks")
            object.__setattr__(self, "hosts", tuple(str(h) for h in self.hosts))
        if self.local_ranks is not None:
            if len(self.local_ranks) != n:
                raise TrafficError(f"{len(self.local_ranks)} local ranks for {n} ranks")
            object.__setattr__(self, "local_ranks", tuple(int(v) for v in self.local_ranks))

    @property
    def ranks(self) -> int:
        return int(self.bytes.shape[0])

    @property
    def is_sparse(self) -> bool:
        """True when stored as CSR (a sparse job of more than ``DENSE_UP_TO`` ranks)."""
        return bool(sp.issparse(self.bytes))

    @property
    def total_bytes(self) -> float:
        """Bytes sent between distinct ranks (the diagonal excluded)."""
        return float(self.bytes.sum() - self.bytes.diagonal().sum())

    @property
    def talking_pairs(self) -> int:
        """Ordered pairs of distinct ranks with traffic (the off-diagonal non-zeros)."""
        return int(self.sparse_offdiagonal_bytes().nnz)

    def _dense(self, matrix: np.ndarray | sp.csr_matrix, what: str) -> np.ndarray:
        if not sp.issparse(matrix):
            return np.array(matrix, dtype=np.float64)
        if self.ranks > MAX_RANKS:
            raise TrafficError(f"the {what} of {self.ranks} ranks is stored sparse; this step needs it dense "
                               f"(N x N), which linkscope allows up to {MAX_RANKS} ranks",
                               hint="map it onto a cluster (a multi-host topology or --nodes), which keeps it sparse")
        csr: Any = matrix
        return np.asarray(csr.toarray(), dtype=np.float64)

    def dense_bytes(self) -> np.ndarray:
        """``bytes`` as a dense N x N array, diagonal included (refused above MAX_RANKS)."""
        return self._dense(self.bytes, "traffic matrix")

    def dense_messages(self) -> np.ndarray | None:
        """``messages`` as a dense N x N array (None when unknown; refused above MAX_RANKS)."""
        return None if self.messages is None else self._dense(self.messages, "message-count matrix")

    def offdiagonal_bytes(self) -> np.ndarray:
        """A writable dense copy of ``bytes`` with a zero diagonal."""
        out = self._dense(self.bytes, "traffic matrix")
        np.fill_diagonal(out, 0.0)
        return out

    def offdiagonal_messages(self) -> np.ndarray:
        """Message counts (dense) with a zero diagonal; estimated as one message per non-zero pair when unknown."""
        if self.messages is None:
            out = (self._dense(self.bytes, "traffic matrix") > 0).astype(np.float64)
        else:
            out = self._dense(self.messages, "message-count matrix")
        np.fill_diagonal(out, 0.0)
        return out

    def sparse_offdiagonal_bytes(self) -> sp.csr_matrix:
        """``bytes`` as a new CSR matrix without its diagonal (dense or sparse storage alike)."""
        return _without_diagonal(self.bytes)

    def sparse_offdiagonal_messages(self) -> sp.csr_matrix:
        """Message counts as CSR without the diagonal; one per talking pair when unknown."""
        if self.messages is None:
            out = self.sparse_offdiagonal_bytes()
            out.data = np.ones_like(out.data)
            return out
        return _without_diagonal(self.messages)

    def mean_message_bytes(self) -> float | None:
        """Average point-to-point message size, or None without message counts."""
        if self.messages is None:
            return None
        count = float(self.sparse_offdiagonal_messages().sum())
        return self.total_bytes / count if count else None

    def hosts_in_rank_order(self) -> tuple[str, ...]:
        """Distinct host names in the order ranks first appear on them (empty when unknown)."""
        return tuple(dict.fromkeys(self.hosts)) if self.hosts else ()

    def hosts_list(self) -> list[str]:
        return sorted(set(self.hosts)) if self.hosts else []

    def permuted(self, order: Sequence[int]) -> TrafficMatrix:
        """The matrix with rank ``i`` of the result being rank ``order[i]`` of this one."""
        idx = np.asarray(order, dtype=int)

        def take(m: np.ndarray | sp.csr_matrix) -> np.ndarray | sp.csr_matrix:
            return m[idx][:, idx] if sp.issparse(m) else m[np.ix_(idx, idx)]

        return TrafficMatrix(
            bytes=take(self.bytes),
            messages=None if self.messages is None else take(self.messages),
            size_histogram=self.size_histogram,
            origin=f"{self.origin} (permuted)",
        )


def _without_diagonal(matrix: np.ndarray | sp.csr_matrix) -> sp.csr_matrix:
    out = sp.csr_matrix(matrix, dtype=np.float64, copy=True)
    out.setdiag(0)
    out.eliminate_zeros()
    return out


def from_entries(
    ranks: int,
    src: Any,
    dst: Any,
    bytes_: Any,
    messages: Any = None,
    **fields: Any,
) -> TrafficMatrix:
    """A TrafficMatrix from (src, dst, bytes[, messages]) entries, repeated pairs summed, without an
    N x N array: sparse above ``DENSE_UP_TO`` ranks, dense below (``fields``: the other attributes)."""
    check_sparse_rank_count(ranks)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if src.size and (src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= ranks):
        bad = int(np.nonzero((src < 0) | (src >= ranks) | (dst < 0) | (dst >= ranks))[0][0])
        raise TrafficError(f"entry {bad} names rank pair {int(src[bad])} -> {int(dst[bad])}, outside 0..{ranks - 1}")

    def build(values: Any) -> sp.csr_matrix:
        return sp.csr_matrix((np.asarray(values, dtype=np.float64), (src, dst)), shape=(ranks, ranks))

    return TrafficMatrix(bytes=build(bytes_), messages=None if messages is None else build(messages), **fields)


def check_sparse_rank_count(ranks: int, what: str = "traffic matrix") -> None:
    """Refuse a sparse job larger than ``MAX_SPARSE_RANKS`` (or of no rank) before allocating."""
    if ranks < 1:
        raise TrafficError(f"{what} is empty (0 ranks)")
    if ranks > MAX_SPARSE_RANKS:
        raise TrafficError(f"{what} has {ranks} ranks; linkscope handles up to {MAX_SPARSE_RANKS} (sparse)")
