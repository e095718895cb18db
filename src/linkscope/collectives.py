"""The collective descriptor: one row per operation, as nccl-tests keeps one ``testColl`` per op
(src/all_reduce.cu, src/all_gather.cu ... each defines its sizes, bus-bandwidth factor, in-place
offsets, data check and library call). Everything linkscope knows of one collective lives here,
once: the real backend (comm/nccl_backend.py), the runner (comm/nccl.py), the simulated backend, the
predictor (model/collectives.py), the text formats (report/textformats.py), the nccl-tests reader
(results/peertools/nccltests.py) and ``--op`` read it; nothing else branches on an operation's name
(tests/test_collective_descriptor.py scans the tree for such branches). Adding an operation, or a
variant of one (another root, another reduction), is one more row of ``TABLE``.

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
* **gather**, **scatter** ``(n-1)/n``: S is the root's total (n chunks of S/n); the root receives
  (sends) the n-1 chunks of the other ranks. NCCL has no gather/scatter call: nccl-tests, and
  linkscope, group ``ncclSend``/``ncclRecv`` to/from root 0.

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
>>> collective("all_reduce").name
'allreduce'
>>> op_of_program("/opt/nccl-tests/build/reduce_scatter_perf")
'reduce_scatter'
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

import numpy as np

from .errors import UserError


# ---- the data check (nccl-tests' InitData / check, in linkscope's exact-in-float32 form) ------------------
def check_values(xp: Any, rank: int, start: int, count: int) -> Any:
    """The data check's input: element i of rank r's send buffer is ``(i mod 13) + r + 1`` (exact in float32)."""
    idx = xp.arange(start, start + count, dtype=xp.int64)
    return ((idx % 13) + rank + 1).astype(xp.float32)


def _sum_values(xp: Any, n: int, start: int, count: int) -> Any:
    """The sum of ``check_values`` over n ranks."""
    idx = xp.arange(start, start + count, dtype=xp.int64)
    return (n * (idx % 13) + n * (n + 1) // 2).astype(xp.float32)


def _concat(xp: Any, parts: list[Any]) -> Any:
    return xp.concatenate(parts) if parts else xp.zeros(0, xp.float32)


def _ref_allgather(xp: Any, rank: int, n: int, lay: Layout, root: int) -> Any:
    return _concat(xp, [check_values(xp, k, 0, lay.chunk_count) for k in range(n)]) if lay.chunk_count else xp.zeros(0, xp.float32)


def _ref_alltoall(xp: Any, rank: int, n: int, lay: Layout, root: int) -> Any:
    c = lay.chunk_count
    return _concat(xp, [check_values(xp, k, rank * c, c) for k in range(n)]) if c else xp.zeros(0, xp.float32)


# ---- what the library computes, with NumPy (the simulated backend's data path) ---------------------------
Sends = Sequence[np.ndarray]
"""Every rank's send buffer, in rank order."""


def _np_allreduce(sends: Sends, count: int, root: int) -> list[np.ndarray | None]:
    total = np.sum([s[:count] for s in sends], axis=0)
    return [total for _ in sends]


def _np_allgather(sends: Sends, count: int, root: int) -> list[np.ndarray | None]:
    whole = np.concatenate([s[:count] for s in sends])
    return [whole for _ in sends]


def _np_reduce_scatter(sends: Sends, count: int, root: int) -> list[np.ndarray | None]:
    total = np.sum([s[:count * len(sends)] for s in sends], axis=0)
    return [total[r * count:(r + 1) * count] for r in range(len(sends))]


def _np_broadcast(sends: Sends, count: int, root: int) -> list[np.ndarray | None]:
    return [sends[root][:count] for _ in sends]


def _np_reduce(sends: Sends, count: int, root: int) -> list[np.ndarray | None]:
    total = np.sum([s[:count] for s in sends], axis=0)
    return [total if r == root else None for r in range(len(sends))]


# ---- grouped send/recv (operations NCCL has no call for) --------------------------------------------------
Exchange = tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]
"""(peer, element offset, count) of one rank's sends, then of its receives."""


def _ex_alltoall(rank: int, n: int, lay: Layout, root: int) -> Exchange:
    c = lay.chunk_count
    return [(k, k * c, c) for k in range(n)], [(k, k * c, c) for k in range(n)]


def _ex_sendrecv(rank: int, n: int, lay: Layout, root: int) -> Exchange:
    return [((rank + 1) % n, 0, lay.send_count)], [((rank - 1) % n, 0, lay.recv_count)]


def _ex_gather(rank: int, n: int, lay: Layout, root: int) -> Exchange:
    c = lay.chunk_count
    return [(root, 0, c)], ([(k, k * c, c) for k in range(n)] if rank == root else [])


def _ex_scatter(rank: int, n: int, lay: Layout, root: int) -> Exchange:
    c = lay.chunk_count
    return ([(k, k * c, c) for k in range(n)] if rank == root else []), [(root, 0, c)]


# ---- the library call, as data ---------------------------------------------------------------------------
@dataclass(frozen=True)
class LibraryCall:
    """One NCCL-API function and how its arguments are laid out.

    Attributes:
        function: the C function (nccl.h; RCCL's rccl.h declares the same names).
        method: CuPy's ``NcclCommunicator`` method for it (cupy/cuda/nccl.pyx), which takes the C
            arguments without the communicator.
        args: the method's arguments in order: ``send``/``recv`` (buffer pointers), ``count`` (elements),
            ``dtype``, ``redop``, ``root``, ``stream``.
        count: which ``Layout`` count the ``count`` argument is (``send_count`` or ``recv_count``).
    """

    function: str
    method: str
    args: tuple[str, ...]
    count: str = "send_count"


#: nccl.h (NCCL 2.19+): ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
#: ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream); ncclReduceScatter(sendbuff,
#: recvbuff, recvcount, datatype, op, comm, stream); ncclBroadcast(sendbuff, recvbuff, count, datatype,
#: root, comm, stream); ncclReduce(sendbuff, recvbuff, count, datatype, op, root, comm, stream). As called
#: by nccl-tests (src/all_reduce.cu:507, all_gather.cu:50, reduce_scatter.cu:49, broadcast.cu:50, reduce.cu:46).
_ALLREDUCE = LibraryCall("ncclAllReduce", "allReduce", ("send", "recv", "count", "dtype", "redop", "stream"))
_ALLGATHER = LibraryCall("ncclAllGather", "allGather", ("send", "recv", "count", "dtype", "stream"))
_REDUCE_SCATTER = LibraryCall("ncclReduceScatter", "reduceScatter", ("send", "recv", "count", "dtype", "redop", "stream"),
                              count="recv_count")
_BROADCAST = LibraryCall("ncclBroadcast", "broadcast", ("send", "recv", "count", "dtype", "root", "stream"))
_REDUCE = LibraryCall("ncclReduce", "reduce", ("send", "recv", "count", "dtype", "redop", "root", "stream"))
#: One call for what is otherwise grouped sends and receives (``CollectiveOp.fused_nccl``): NCCL 2.28 added
#: ncclAlltoAll(sendbuff, recvbuff, count, datatype, comm, stream), count the elements each rank sends to each rank
#: (nccl.h of 2.28), and nccl-tests 2.19.6 calls it whenever the library is 2.28 or later (src/alltoall.cu:317-321),
#: falling back to grouped ncclSend/ncclRecv before that (alltoall.cu:324-333). RCCL has had its own
#: ncclAllToAll with the same arguments (rccl's nccl.h.in, an RCCL extension; read, never run here). CuPy has no
#: method for either (empty ``method``): the backend calls the loaded library's symbol.
_ALLTOALL_NCCL = LibraryCall("ncclAlltoAll", "", ("send", "recv", "count", "dtype", "stream"), count="chunk_count")
_ALLTOALL_RCCL = LibraryCall("ncclAllToAll", "", ("send", "recv", "count", "dtype", "stream"), count="chunk_count")
#: NCCL 2.28 also added ncclGather(sendbuff, recvbuff, count, datatype, root, comm, stream) and ncclScatter(sendbuff,
#: recvbuff, count, datatype, root, comm, stream), count the elements each rank sends (gather) or receives (scatter)
#: (nccl.h.in of v2.28.9-1, 475 and 490), and nccl-tests 2.19.6 calls them whenever it is built against 2.28 or later
#: (src/gather.cu:57-58, scatter.cu:53-54), grouped ncclSend/ncclRecv before. On one rank they are not the same
#: work: NCCL runs a one-rank collective as a copy on the user stream (enqueue.cc:2569, onerank.cu:48-53), a grouped
#: send/receive to itself as a kernel through its planner (1 x H200, 2026-11-29: gather in graphs 1.0-1.4 us against
#: 4.4-5.6 us at 32 B-512 KiB; docs/runs/h200x1-2026-11-29b call 6). RCCL declares ncclGather/ncclScatter too (an
#: RCCL extension, nccl.h.in), but rccl-tests' gather and scatter issue grouped ncclSend/ncclRecv (src/gather.cu,
#: ROCm/rccl-tests 213abee), so on RCCL linkscope keeps the grouped calls, as the peer tool does.
_GATHER_NCCL = LibraryCall("ncclGather", "", ("send", "recv", "count", "dtype", "root", "stream"), count="chunk_count")
_SCATTER_NCCL = LibraryCall("ncclScatter", "", ("send", "recv", "count", "dtype", "root", "stream"), count="chunk_count")


# ---- the descriptor --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CollectiveOp:
    """One collective (one row of ``TABLE``).

    Attributes:
        name: the operation (``--op``, the RunRecord's ``op``).
        layout: ``whole`` (send and receive S), ``gather`` (send S/n, receive S), ``scatter`` (send S,
            receive S/n) or ``exchange`` (send and receive S in n chunks).
        busbw: ``allreduce`` (2(n-1)/n), ``chunks`` ((n-1)/n) or ``one`` (1): nccl-tests' factor.
        in_place: ``same`` (one buffer), ``recv_slot`` (send from the rank's slot of the receive
            buffer), ``send_slot`` (receive into the rank's slot of the send buffer) or ``undefined``
            (NCCL defines none: timed, not checked).
        reference: what rank r's receive buffer must hold after the data check's input
            (``check_values``); None: nothing to check on that rank.
        aliases: other spellings ``--op`` accepts (nccl-tests' program stem, hyphenated forms).
        redop: the reduction (``sum``), None for an operation that reduces nothing.
        root: the root rank of a rooted operation, None otherwise.
        nccl, rccl: the library call (None: grouped ncclSend/ncclRecv, ``exchanges``). RCCL keeps NCCL's
            API (rccl.h), so both rows are the same call today; a library that differs gets its own.
        compute: what the library computes from every rank's send buffer (NumPy; the simulated
            backend's data path); None for grouped send/recv (the sends carry the data).
        exchanges: the grouped send/recv of one rank (None for library calls).
        shift_invariant: every rank sends to the same peer offsets (peer - rank mod n) with the same counts
            (alltoall, sendrecv; not a rooted operation), so rank 0's exchanges describe every rank's
            (``peer_offsets``; tests/test_collective_descriptor.py checks it on every rank of small groups).
        fused_nccl, fused_rccl: one library call that does the grouped exchanges, used where the loaded library
            has its symbol, as the peer tool does (alltoall; gather and scatter on NCCL); the exchanges stay the
            operation's definition (the simulated backend and the twin read them) and the fallback.
        nccl_func: the NCCL function whose algorithms NCCL's tuner times for this operation
            (model/nccl_tuning.py ``FUNCS``); None: not a tuned collective (grouped send/recv).
        pattern: how the twin times it: ``ring`` (ring steps), ``chain`` (a pipelined chain from or to
            the root) or ``p2p`` (grouped send/recv).
        phases: the ring's (or chain's) passes in order, ``reduce`` or ``copy``: allreduce is a reduce
            pass then a copy pass (2(n-1) ring steps), allgather one copy pass, reduce_scatter one reduce
            pass; a chain's one pass reduces towards the root (reduce) or copies from it (broadcast).
        one_rank_copy: on one rank the twin times a local copy of S (reduce_scatter: none).
        program: the peer tools' program stem (nccl-tests / rccl-tests ``<program>_perf``).
        tool_redop, tool_root: what nccl-tests prints in its ``redop`` and ``root`` columns for this
            program (``TimeTest`` calls: sendrecv.cu:120 prints the default reduction, broadcast.cu:103,
            reduce.cu:104, gather.cu:117 and scatter.cu:113 print the root, the others -1).
    """

    name: str
    layout: str
    busbw: str
    in_place: str
    reference: Callable[[Any, int, int, Layout, int], Any | None]
    aliases: tuple[str, ...] = ()
    redop: str | None = None
    root: int | None = None
    nccl: LibraryCall | None = None
    rccl: LibraryCall | None = None
    compute: Callable[[Sends, int, int], list[np.ndarray | None]] | None = None
    exchanges_of: Callable[[int, int, Layout, int], Exchange] | None = None
    fused_nccl: LibraryCall | None = None
    fused_rccl: LibraryCall | None = None
    nccl_func: str | None = None
    pattern: str = "p2p"
    phases: tuple[str, ...] = ()
    one_rank_copy: bool = True
    program: str = ""
    tool_redop: str = "none"
    tool_root: int = -1
    shift_invariant: bool = False

    # -- sizes -------------------------------------------------------------------------------------------
    def busbw_factor(self, ranks: int) -> float:
        n = float(ranks)
        return 2.0 * (n - 1.0) / n if self.busbw == "allreduce" else (n - 1.0) / n if self.busbw == "chunks" else 1.0

    def ranks_of_factor(self, factor: float) -> float | None:
        """The (real) rank count whose busbw factor is ``factor``: the inverse of ``busbw_factor``; None
        where the factor says nothing of the ranks (``one``) or lies beyond every rank count (inf)."""
        top = 2.0 if self.busbw == "allreduce" else 1.0 if self.busbw == "chunks" else None
        if top is None or factor >= top:
            return None
        return top / (top - max(0.0, factor))

    def bytes_per_rank(self, size_bytes: int, ranks: int) -> float:
        """Bytes each rank's links carry at size S on the best algorithm (S x the busbw factor)."""
        return size_bytes * self.busbw_factor(ranks)

    def call_counts(self, count: int, ranks: int) -> tuple[int, int]:
        """Elements the send and receive buffer of one library call with ``count`` must hold."""
        return (count * ranks if self.layout == "scatter" else count,
                count * ranks if self.layout == "gather" else count)

    def size_of_call(self, count: int, ranks: int, dtype_bytes: int = 4) -> int:
        """nccl-tests' size S of one library call with ``count`` elements over ``ranks`` ranks."""
        return count * dtype_bytes * (ranks if self.layout in ("gather", "scatter") else 1)

    def reported_count(self, lay: Layout) -> int:
        """The ``count`` column nccl-tests prints: the count argument of the library call (common.cu prints
        ``args->nbytes / wordSize``, the call's count: all_gather.cu:10-17 its send count, reduce_scatter its
        receive count, alltoall its count per peer), so S/n on n ranks for every op that splits S in chunks."""
        return lay.chunk_count if self.layout in ("gather", "scatter", "exchange") else lay.send_count

    # -- calls ---------------------------------------------------------------------------------------
    @property
    def grouped(self) -> bool:
        """Grouped ncclSend/ncclRecv (no library call of its own)."""
        return self.nccl is None

    def call(self, library: str) -> LibraryCall | None:
        """The call of ``library`` (``NCCL`` or ``RCCL``; platforms.py ``collective_library``)."""
        return self.rccl if library.upper() == "RCCL" else self.nccl

    def fused_call(self, library: str) -> LibraryCall | None:
        """The one call of ``library`` that replaces the grouped exchanges (None: none)."""
        return self.fused_rccl if library.upper() == "RCCL" else self.fused_nccl

    def exchanges(self, rank: int, n: int, lay: Layout, root: int = 0) -> Exchange:
        """Grouped send/recv operations: (peer, element offset, count) of this rank's sends and receives
        (nccl-tests' alltoall, sendrecv, gather and scatter); empty for library calls."""
        return self.exchanges_of(rank, n, lay, root) if self.exchanges_of is not None else ([], [])

    def peer_offsets(self, n: int, lay: Layout) -> list[tuple[int, int]] | None:
        """(peer offset, count) of every rank's sends, in offset order, where the operation is
        ``shift_invariant`` (rank r sends count elements to rank (r + offset) mod n); None otherwise."""
        if not self.shift_invariant:
            return None
        return sorted((peer % n, count) for peer, _, count in self.exchanges(0, n, lay)[0])

    # -- the twin ------------------------------------------------------------------------------------
    @property
    def reduces(self) -> bool:
        return "reduce" in self.phases

    @property
    def ends_with_copy(self) -> bool:
        """The output is written by a copy (the last pass copies): what NCCL can run on registered
        user buffers, and a last pass that reads one buffer, not two."""
        return bool(self.phases) and self.phases[-1] == "copy"

    def ring_steps(self, ranks: int) -> int:
        """Sequential steps of the ring: n-1 per pass."""
        return (ranks - 1) * len(self.phases)

    def ring_time_s(self, ranks: int, reduce_step_s: float, copy_step_s: float) -> float:
        """Seconds of the ring's passes: n-1 steps per pass, each a reduce step or a copy step."""
        return (ranks - 1) * sum(reduce_step_s if phase == "reduce" else copy_step_s for phase in self.phases)


def _all(name: str) -> tuple[str, ...]:
    """``all_reduce`` and ``all-reduce`` for ``allreduce``."""
    return (f"all_{name[3:]}", f"all-{name[3:]}")


TABLE: tuple[CollectiveOp, ...] = (
    CollectiveOp("allreduce", "whole", "allreduce", "same",
                 lambda xp, r, n, lay, root: _sum_values(xp, n, 0, lay.recv_count), aliases=_all("allreduce"),
                 redop="sum", nccl=_ALLREDUCE, rccl=_ALLREDUCE, compute=_np_allreduce, nccl_func="allreduce",
                 pattern="ring", phases=("reduce", "copy"), program="all_reduce", tool_redop="sum"),
    CollectiveOp("allgather", "gather", "chunks", "recv_slot", _ref_allgather, aliases=_all("allgather"),
                 nccl=_ALLGATHER, rccl=_ALLGATHER, compute=_np_allgather, nccl_func="allgather",
                 pattern="ring", phases=("copy",), program="all_gather"),
    CollectiveOp("reduce_scatter", "scatter", "chunks", "send_slot",
                 lambda xp, r, n, lay, root: _sum_values(xp, n, r * lay.chunk_count, lay.chunk_count),
                 aliases=("reducescatter", "reduce-scatter"), redop="sum", nccl=_REDUCE_SCATTER, rccl=_REDUCE_SCATTER,
                 compute=_np_reduce_scatter, nccl_func="reduce_scatter", pattern="ring", phases=("reduce",),
                 one_rank_copy=False, program="reduce_scatter", tool_redop="sum"),
    CollectiveOp("broadcast", "whole", "one", "same",
                 lambda xp, r, n, lay, root: check_values(xp, root, 0, lay.recv_count), aliases=("bcast",),
                 root=0, nccl=_BROADCAST, rccl=_BROADCAST, compute=_np_broadcast, nccl_func="broadcast",
                 pattern="chain", phases=("copy",), program="broadcast", tool_root=0),
    CollectiveOp("reduce", "whole", "one", "same",
                 lambda xp, r, n, lay, root: _sum_values(xp, n, 0, lay.recv_count) if r == root else None,
                 redop="sum", root=0, nccl=_REDUCE, rccl=_REDUCE, compute=_np_reduce, nccl_func="reduce",
                 pattern="chain", phases=("reduce",), program="reduce", tool_redop="sum", tool_root=0),
    CollectiveOp("alltoall", "exchange", "chunks", "undefined", _ref_alltoall, aliases=("all_to_all",),
                 exchanges_of=_ex_alltoall, fused_nccl=_ALLTOALL_NCCL, fused_rccl=_ALLTOALL_RCCL, program="alltoall",
                 shift_invariant=True),
    CollectiveOp("sendrecv", "whole", "one", "undefined",
                 lambda xp, r, n, lay, root: check_values(xp, (r - 1) % n, 0, lay.recv_count),
                 aliases=("send_recv",), exchanges_of=_ex_sendrecv, program="sendrecv", tool_redop="sum",
                 shift_invariant=True),
    CollectiveOp("gather", "gather", "chunks", "recv_slot",
                 lambda xp, r, n, lay, root: _ref_allgather(xp, r, n, lay, root) if r == root else None,
                 root=0, exchanges_of=_ex_gather, fused_nccl=_GATHER_NCCL, program="gather", tool_root=0),
    CollectiveOp("scatter", "scatter", "chunks", "send_slot",
                 lambda xp, r, n, lay, root: check_values(xp, root, r * lay.chunk_count, lay.chunk_count),
                 root=0, exchanges_of=_ex_scatter, fused_nccl=_SCATTER_NCCL, program="scatter", tool_root=0),
)
OP_TABLE: dict[str, CollectiveOp] = {op.name: op for op in TABLE}
OPS = tuple(OP_TABLE)
P2P_OPS = tuple(op.name for op in TABLE if op.grouped)

#: nccl.h: ncclSend(sendbuff, count, datatype, peer, comm, stream), ncclRecv(recvbuff, count, datatype, peer, comm,
#: stream): the grouped calls of the operations without a call of their own (CuPy's send/recv take the same).
SEND_CALL = LibraryCall("ncclSend", "send", ("buffer", "count", "dtype", "peer", "stream"))
RECV_CALL = LibraryCall("ncclRecv", "recv", ("buffer", "count", "dtype", "peer", "stream"))
P2P_CALLS = {"send": SEND_CALL, "recv": RECV_CALL}


def library_call(name: str, library: str = "NCCL") -> LibraryCall | None:
    """The library call named ``name`` in a bound launch: ``send``/``recv``, or an operation's own call in
    ``library`` (None: an operation made of grouped sends and receives, or no such name)."""
    if name in P2P_CALLS:
        return P2P_CALLS[name]
    spec = OP_TABLE.get(name)
    return (spec.call(library) or spec.fused_call(library)) if spec is not None else None


#: nccl-tests programs linkscope reads but does not run (no descriptor): their rows keep the program's name.
PEER_ONLY_PROGRAMS = ("hypercube", "alltoallv")
#: The lead columns nccl-tests (2.13+) prints before its out-of-place and in-place groups (util.cu writeResultHeader).
TOOL_LEAD_COLUMNS = ("size", "count", "type", "redop", "root")
#: The columns of each group (out-of-place, in-place).
TOOL_GROUP_COLUMNS = ("time", "algbw", "busbw", "#wrong")


def _aliases() -> dict[str, str]:
    out: dict[str, str] = {}
    for op in TABLE:
        for spelling in (op.name, *op.aliases, op.program):
            if spelling:
                out.setdefault(spelling.lower(), op.name)
    return out


def collective(name: str) -> CollectiveOp:
    """The descriptor of ``name`` (an operation or one of its aliases); UserError listing the valid ones."""
    found = _aliases().get(str(name).strip().lower())
    if found is None:
        raise UserError(f"unknown collective {name!r}", hint=f"valid operations: {', '.join(OPS)}")
    return OP_TABLE[found]


def _check_op(op: str) -> None:
    if op not in OP_TABLE:
        raise UserError(f"unknown collective {op!r}", hint=f"valid operations: {', '.join(OP_TABLE)}")


def op_help() -> str:
    """``--op``'s choices, for help texts."""
    return " | ".join(OPS)


# ---- the peer tools (nccl-tests / rccl-tests) ------------------------------------------------------------
def program_of(op: str) -> str:
    """The nccl-tests program that runs ``op`` (``all_reduce_perf``)."""
    _check_op(op)
    return f"{OP_TABLE[op].program}_perf"


def op_of_program(name: str) -> str | None:
    """``all_reduce_perf`` (or a path or file name containing it) -> ``allreduce``; a program linkscope does
    not run (``PEER_ONLY_PROGRAMS``) keeps its name; None if unknown."""
    stem = PurePath(str(name)).name.lower()
    programs = {op.program: op.name for op in TABLE} | {p: p for p in PEER_ONLY_PROGRAMS}
    for key in sorted(programs, key=len, reverse=True):
        if re.search(rf"(^|[^a-z]){key}(_perf|_mpi|[^a-z]|$)", stem):
            return programs[key]
    return None


def op_from_columns(redop: str, root: str, busbw_over_algbw: float | None, ranks: int) -> str:
    """The op of an nccl-tests table that names none, from what its rows print: the ops whose
    ``redop``/``root`` columns read so (a reduction or ``none``, a root or -1), the first in ``TABLE``
    order; between those whose bus-bandwidth factors differ (allreduce vs reduce_scatter), busbw / algbw
    on more than 2 ranks picks the closer factor, among the ops whose factor can be that ratio at all on 2 or
    more ranks (2(n-1)/n >= 1 > (n-1)/n). Without a reduction or root: allgather (alltoall and
    gather print the same columns)."""
    rooted = root.strip() not in ("-1", "")
    reducing = redop.strip().lower() not in ("none", "")
    fits = [op for op in TABLE if (op.tool_root >= 0) == rooted and (op.tool_redop != "none") == reducing
            and op.reduces == reducing]
    if not fits:
        return TABLE[0].name
    if busbw_over_algbw is not None and len(fits) > 1:  # only ops whose factor can be the ratio on 2+ ranks
        ratio = busbw_over_algbw
        fits = [op for op in fits if (op.ranks_of_factor(ratio) or 0.0) >= 2 - 1e-3 or
                (op.busbw == "one" and abs(ratio - 1.0) < 1e-2)] or fits
    if ranks > 2 and busbw_over_algbw is not None and len(fits) > 1:
        return min(fits, key=lambda op: abs(op.busbw_factor(ranks) - busbw_over_algbw)).name
    return fits[0].name


def ranks_of_printed_rates(op: str, rates: Iterable[tuple[float, float]], half_unit: float = 0.005) -> tuple[int, int] | None:
    """The rank counts consistent with every printed (algbw, busbw) pair of an ``op`` table, each printed
    to two decimals (nccl-tests / rccl-tests ``%7.2f``: a printed x is anything within ``half_unit``):
    busbw / algbw is the op's busbw factor, 2(n-1)/n or (n-1)/n, so it fixes n to an interval, narrow
    where the rates are large. Returns (lowest, highest), or None where the op's factor does not depend
    on n, no pair is large enough to say anything, the ratio reaches the factor's limit (no upper bound:
    an all_gather printing busbw = algbw is an older factor or another op, not thousands of ranks), or the
    pairs disagree (rows of different runs)."""
    spec = OP_TABLE[op]
    if spec.busbw == "one":
        return None
    low, high = 1.0, math.inf
    seen = False
    for algbw, busbw in rates:
        if algbw <= 10 * half_unit or busbw < 0:
            continue
        factor_low = max(0.0, busbw - half_unit) / (algbw + half_unit)
        factor_high = (busbw + half_unit) / (algbw - half_unit)
        n_low = spec.ranks_of_factor(factor_low)
        n_high = spec.ranks_of_factor(factor_high)
        if n_low is None:  # even the smallest factor the pair allows is beyond every rank count
            return None
        low, high = max(low, n_low), min(high, math.inf if n_high is None else n_high)
        seen = True
    if not seen or high == math.inf:  # a ratio at the factor's limit: "very many", or another factor (an old
        return None                   # version's, another op's): nothing to count on
    lowest, highest = math.ceil(low - 1e-9), math.floor(high + 1e-9)
    return (lowest, highest) if highest >= lowest else None


# ---- sizes and rates -------------------------------------------------------------------------------------
def busbw_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``op`` on ``ranks`` ranks (derivations in the module doc)."""
    _check_op(op)
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks}")
    return OP_TABLE[op].busbw_factor(ranks)


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
        chunk_count: elements per peer (alltoall), per rank (allgather, reduce_scatter, gather,
            scatter), else count.
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
    kind = OP_TABLE[op].layout
    if kind == "whole":
        return Layout(op, ranks, count, count, count, count * dtype_bytes)
    chunk = count // ranks
    total = chunk * ranks
    if kind == "gather":
        return Layout(op, ranks, chunk, total, chunk, total * dtype_bytes)
    if kind == "scatter":
        return Layout(op, ranks, total, chunk, chunk, total * dtype_bytes)
    return Layout(op, ranks, total, total, chunk, total * dtype_bytes)
