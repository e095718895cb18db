"""Collective sizes and bus-bandwidth factors, as nccl-tests defines them (a pure table).

nccl-tests (``doc/PERFORMANCE.md``) reports for each operation a *size* S in bytes, the time t of
one operation, the algorithm bandwidth ``algbw = S / t`` and the bus bandwidth
``busbw = algbw * factor(n)``, where the factor makes busbw comparable with the hardware's
per-GPU link speed whatever the number of ranks n:

* **allreduce** ``2(n-1)/n``: a ring (or any optimal) allreduce is a reduce-scatter followed by an
  allgather; each rank sends and receives ``(n-1)/n * S`` bytes in each phase, so every rank's
  links carry ``2(n-1)/n * S`` while the user sees S.
* **allgather** ``(n-1)/n``: S is the *received* total (n chunks of S/n); each rank must receive
  the n-1 chunks it does not own.
* **reduce_scatter** ``(n-1)/n``: S is the *sent* total per rank (n chunks of S/n); each rank
  must send the n-1 chunks it does not keep.
* **broadcast**, **reduce** ``1``: every byte crosses the root's link once (pipelined chain or
  tree), so busbw = algbw.
* **alltoall** ``(n-1)/n``: S is each rank's send total (n chunks of S/n); the chunk to itself
  does not leave the GPU.
* **sendrecv** ``1``: each rank sends S to its right neighbour and receives S from its left one
  (a ring shift); each byte crosses one link once.

Sizes: ``count`` elements of ``dtype_bytes`` each are rounded down so the per-rank chunks are
whole (nccl-tests does the same), and the size actually used is reported.

>>> round(busbw_factor("allreduce", 4), 3)
1.5
>>> busbw_factor("broadcast", 8)
1.0
>>> layout("allgather", 4096, 4, 4).size_bytes
4096
>>> layout("allgather", 4100, 4, 4).send_count
256
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import UserError

OPS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv")


def busbw_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``op`` on ``ranks`` ranks (derivations in the module doc)."""
    _check_op(op)
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    n = float(ranks)
    if op == "allreduce":
        return 2.0 * (n - 1.0) / n
    if op in ("allgather", "reduce_scatter", "alltoall"):
        return (n - 1.0) / n
    return 1.0  # broadcast, reduce, sendrecv


def algbw_gb_per_s(size_bytes: int, time_s: float) -> float:
    """Algorithm bandwidth S / t in decimal GB/s."""
    if time_s <= 0:
        raise ValueError(f"time must be positive, got {time_s}")
    return size_bytes / time_s / 1e9


def busbw_gb_per_s(op: str, ranks: int, size_bytes: int, time_s: float) -> float:
    return algbw_gb_per_s(size_bytes, time_s) * busbw_factor(op, ranks)


@dataclass(frozen=True)
class Layout:
    """Element counts of one operation at one nominal size.

    Attributes:
        op: the operation.
        ranks: number of ranks.
        send_count: elements each rank's send buffer holds.
        recv_count: elements each rank's receive buffer holds.
        chunk_count: elements per peer (alltoall), per rank (allgather, reduce_scatter), else count.
        size_bytes: the size S nccl-tests reports (after rounding), used for algbw.
    """

    op: str
    ranks: int
    send_count: int
    recv_count: int
    chunk_count: int
    size_bytes: int


def layout(op: str, size_bytes: int, ranks: int, dtype_bytes: int = 4) -> Layout:
    """The buffers of ``op`` at nominal size ``size_bytes`` (nccl-tests' conventions)."""
    _check_op(op)
    if size_bytes < 0 or ranks < 1 or dtype_bytes < 1:
        raise ValueError("size, ranks and dtype size must be positive")
    count = size_bytes // dtype_bytes
    if op in ("allgather", "reduce_scatter", "alltoall"):
        chunk = count // ranks
        total = chunk * ranks
        if op == "allgather":
            return Layout(op, ranks, chunk, total, chunk, total * dtype_bytes)
        if op == "reduce_scatter":
            return Layout(op, ranks, total, chunk, chunk, total * dtype_bytes)
        return Layout(op, ranks, total, total, chunk, total * dtype_bytes)
    return Layout(op, ranks, count, count, count, count * dtype_bytes)


def _check_op(op: str) -> None:
    if op not in OPS:
        raise UserError(f"unknown collective {op!r}", hint=f"valid operations: {', '.join(OPS)}")
