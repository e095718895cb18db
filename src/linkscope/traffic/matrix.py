"""The TrafficMatrix: how much each rank sends to each other rank.

``bytes[r, s]`` is the number of bytes rank ``r`` sent to rank ``s`` (row = sender), ``messages``
the number of point-to-point messages, where known. A captured matrix also carries a
message-size histogram, the collectives each job called, and where each rank ran (host, local
rank). Self-traffic (the diagonal) is kept as given but ignored by mapping.

Arrays are stored read-only so the frozen dataclass really is immutable.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UserError

MAX_RANKS = 8192
"""The largest job a traffic matrix may describe: two dense N x N float64 matrices take 1 GiB at
8192 ranks (and mapping works on N x N cost terms); checked before anything is allocated."""

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
        bytes: N x N float array, bytes sent from rank r (row) to rank s (column).
        messages: N x N message counts, or None when unknown (synthetic patterns set it).
        size_histogram: HISTOGRAM_BINS message counts by size (see ``histogram_bin``), or None.
        hosts: host name of each rank, or None when unknown.
        local_ranks: rank within its host, or None when unknown.
        origin: where it came from: ``captured:<command>``, ``synthetic:<pattern>``, ``file:<path>``.
        collectives: collective name -> {"calls": int, "bytes": int} summed over ranks (captured).
    """

    bytes: np.ndarray
    messages: np.ndarray | None = None
    size_histogram: tuple[int, ...] | None = None
    hosts: tuple[str, ...] | None = None
    local_ranks: tuple[int, ...] | None = None
    origin: str = ""
    collectives: Mapping[str, Mapping[str, int]] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bytes", _as_matrix(self.bytes, "traffic matrix"))
        n = self.bytes.shape[0]
        if self.messages is not None:
            messages = _as_matrix(self.messages, "message-count matrix")
            if messages.shape != self.bytes.shape:
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
    def total_bytes(self) -> float:
        """Bytes sent between distinct ranks (the diagonal excluded)."""
        return float(self.bytes.sum() - np.trace(self.bytes))

    def offdiagonal_bytes(self) -> np.ndarray:
        """A writable copy of ``bytes`` with a zero diagonal."""
        out = np.array(self.bytes, dtype=np.float64)
        np.fill_diagonal(out, 0.0)
        return out

    def offdiagonal_messages(self) -> np.ndarray:
        """Message counts with a zero diagonal; estimated as one message per non-zero pair when unknown."""
        if self.messages is None:
            out = (self.bytes > 0).astype(np.float64)
        else:
            out = np.array(self.messages, dtype=np.float64)
        np.fill_diagonal(out, 0.0)
        return out

    def mean_message_bytes(self) -> float | None:
        """Average point-to-point message size, or None without message counts."""
        if self.messages is None:
            return None
        count = float(self.offdiagonal_messages().sum())
        return self.total_bytes / count if count else None

    def hosts_in_rank_order(self) -> tuple[str, ...]:
        """Distinct host names in the order ranks first appear on them (empty when unknown)."""
        return tuple(dict.fromkeys(self.hosts)) if self.hosts else ()

    def hosts_list(self) -> list[str]:
        return sorted(set(self.hosts)) if self.hosts else []

    def permuted(self, order: Sequence[int]) -> TrafficMatrix:
        """The matrix with rank ``i`` of the result being rank ``order[i]`` of this one."""
        idx = np.asarray(order, dtype=int)
        return TrafficMatrix(
            bytes=self.bytes[np.ix_(idx, idx)],
            messages=None if self.messages is None else self.messages[np.ix_(idx, idx)],
            size_histogram=self.size_histogram,
            origin=f"{self.origin} (permuted)",
        )
