"""Counting the traffic of an mpi4py program from inside Python.

mpi4py's communicator classes are extension types whose methods cannot be patched in place, so
``install`` replaces ``MPI.COMM_WORLD`` with an instance of a counting subclass (same
communicator handle) before the program runs; communicators derived from it (Dup, Split,
Create_cart, Create_group, Create) are counting ones too. Counted: send/ssend/isend/issend/
bsend/ibsend (pickled size), Send/Ssend/Bsend/Rsend/Isend/Issend/Ibsend/Irsend, sendrecv/Sendrecv/
Sendrecv_replace; collectives are recorded by name with this rank's contribution.
Communicators made another way (``MPI.Intracomm(handle)``) are not counted.
"""
from __future__ import annotations

import atexit
import os
import socket
from collections.abc import Callable
from typing import Any

from ..matrix import HISTOGRAM_BINS, histogram_bin
from .rows import Row, format_row


class Counter:
    """The counts of this rank (world numbering)."""

    def __init__(self, rank: int, size: int, host: str, local_rank: int) -> None:
        self.rank, self.size, self.host, self.local_rank = rank, size, host, local_rank
        self.bytes = [0] * size
        self.messages = [0] * size
        self.histogram = [0] * HISTOGRAM_BINS
        self.collectives: dict[str, list[int]] = {}

    def send(self, world_dest: int | None, nbytes: int) -> None:
        if world_dest is None or not 0 <= world_dest < self.size:
            return
        self.bytes[world_dest] += nbytes
        self.messages[world_dest] += 1
        self.histogram[histogram_bin(nbytes)] += 1

    def collective(self, name: str, nbytes: int) -> None:
        item = self.collectives.setdefault(name, [0, 0])
        item[0] += 1
        item[1] += nbytes

    def row(self) -> Row:
        return Row(self.rank, self.size, self.host, self.local_rank, tuple(self.bytes), tuple(self.messages),
                   tuple(self.histogram), {k: (v[0], v[1]) for k, v in self.collectives.items()}, source="mpi4py")


def buffer_bytes(spec: Any, MPI: Any) -> int:
    """Bytes of a buffer argument: an object with the buffer protocol / ``nbytes``, or the list
    forms ``[data, datatype]``, ``[data, count, datatype]``, ``[data, (count, disp), datatype]``."""
    if isinstance(spec, (list, tuple)):
        if len(spec) >= 3 and isinstance(spec[-1], MPI.Datatype):
            count = spec[1][0] if isinstance(spec[1], (list, tuple)) else spec[1]
            if isinstance(count, int):
                return int(count) * spec[-1].Get_size()
        return buffer_bytes(spec[0], MPI) if spec else 0
    nbytes = getattr(spec, "nbytes", None)
    if isinstance(nbytes, int):
        return nbytes
    try:
        return memoryview(spec).nbytes
    except TypeError:
        return 0


def _pickled_bytes(obj: Any, MPI: Any) -> int:
    try:
        return len(MPI.pickle.dumps(obj))
    except Exception:  # an object mpi4py cannot pickle fails in the real call anyway
        return 0


def make_counting_classes(MPI: Any, counter: Counter) -> dict[type, type]:
    """Counting subclasses of Intracomm, Cartcomm, Graphcomm, Distgraphcomm, Intercomm."""
    world_group = MPI.COMM_WORLD.Get_group()
    translations: dict[int, list[int]] = {}
    classes: dict[type, type] = {}

    def world_rank(comm: Any, dest: int) -> int | None:
        if dest == MPI.PROC_NULL or dest < 0:
            return None
        key = id(comm)
        table = translations.get(key)
        if table is None:
            group = comm.Get_remote_group() if comm.Is_inter() else comm.Get_group()
            table = list(MPI.Group.Translate_ranks(group, list(range(group.Get_size())), world_group))
            group.Free()
            translations[key] = table
        value = table[dest] if dest < len(table) else None
        return None if value is None or value == MPI.UNDEFINED else value

    def wrap(result: Any) -> Any:
        cls = classes.get(type(result))
        return cls(result) if cls is not None and result != MPI.COMM_NULL else result

    def p2p_obj(name: str) -> Callable:
        def method(self: Any, obj: Any, dest: int, *args: Any, **kwargs: Any) -> Any:
            counter.send(world_rank(self, dest), _pickled_bytes(obj, MPI))
            return getattr(super(type(self), self), name)(obj, dest, *args, **kwargs)
        return method

    def p2p_buf(name: str) -> Callable:
        def method(self: Any, buf: Any, dest: int, *args: Any, **kwargs: Any) -> Any:
            counter.send(world_rank(self, dest), buffer_bytes(buf, MPI))
            return getattr(super(type(self), self), name)(buf, dest, *args, **kwargs)
        return method

    def sendrecv_obj(self: Any, sendobj: Any, dest: int, *args: Any, **kwargs: Any) -> Any:
        counter.send(world_rank(self, dest), _pickled_bytes(sendobj, MPI))
        return super(type(self), self).sendrecv(sendobj, dest, *args, **kwargs)

    def sendrecv_buf(self: Any, sendbuf: Any, dest: int, *args: Any, **kwargs: Any) -> Any:
        counter.send(world_rank(self, dest), buffer_bytes(sendbuf, MPI))
        return super(type(self), self).Sendrecv(sendbuf, dest, *args, **kwargs)

    def sendrecv_replace(self: Any, buf: Any, dest: int, *args: Any, **kwargs: Any) -> Any:
        counter.send(world_rank(self, dest), buffer_bytes(buf, MPI))
        return super(type(self), self).Sendrecv_replace(buf, dest, *args, **kwargs)

    def collective(name: str, pickled: bool) -> Callable:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            first = args[0] if args else next(iter(kwargs.values()), None)
            size = _pickled_bytes(first, MPI) if pickled else buffer_bytes(first, MPI) if first is not None else 0
            if first is MPI.IN_PLACE:
                size = 0
            counter.collective(name, size)
            return getattr(super(type(self), self), name)(*args, **kwargs)
        return method

    def deriving(name: str) -> Callable:
        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return wrap(getattr(super(type(self), self), name)(*args, **kwargs))
        return method

    body: dict[str, Any] = {}
    for name in ("send", "ssend", "isend", "issend", "bsend", "ibsend"):
        body[name] = p2p_obj(name)
    for name in ("Send", "Ssend", "Bsend", "Rsend", "Isend", "Issend", "Ibsend", "Irsend"):
        body[name] = p2p_buf(name)
    body["sendrecv"] = sendrecv_obj
    body["Sendrecv"] = sendrecv_buf
    body["Sendrecv_replace"] = sendrecv_replace
    for name in ("bcast", "reduce", "allreduce", "gather", "allgather", "scatter", "alltoall"):
        body[name] = collective(name, pickled=True)
    for name in ("Bcast", "Reduce", "Allreduce", "Gather", "Allgather", "Scatter", "Alltoall", "Alltoallv",
                 "Reduce_scatter", "Reduce_scatter_block", "Iallreduce", "Ibcast"):
        body[name] = collective(name, pickled=False)
    body["Barrier"] = collective("Barrier", pickled=False)
    for name in ("Dup", "Split", "Split_type", "Create", "Create_group", "Create_cart", "Create_graph",
                 "Create_dist_graph", "Create_dist_graph_adjacent", "Sub", "Create_intercomm", "Merge"):
        body[name] = deriving(name)
    for base_name in ("Intracomm", "Cartcomm", "Graphcomm", "Distgraphcomm", "Intercomm"):
        base = getattr(MPI, base_name, None)
        if base is None:
            continue
        methods = {k: v for k, v in body.items() if hasattr(base, k)}
        classes[base] = type(f"Counting{base_name}", (base,), methods)
    return classes


def install(MPI: Any, environ: dict[str, str] | os._Environ, output: str | None) -> Counter:
    """Swap in a counting COMM_WORLD and register the row writer at exit."""
    world = MPI.COMM_WORLD
    rank, size = world.Get_rank(), world.Get_size()
    local_rank = -1
    try:
        shared = world.Split_type(MPI.COMM_TYPE_SHARED)
        local_rank = shared.Get_rank()
        shared.Free()
    except Exception:  # an MPI without shared-memory split: leave it to the host names
        pass
    counter = Counter(rank, size, MPI.Get_processor_name() or socket.gethostname(), local_rank)
    classes = make_counting_classes(MPI, counter)
    MPI.COMM_WORLD = classes[MPI.Intracomm](world)
    rows_dir = environ.get("LINKSCOPE_TRAFFIC_DIR")

    def finish() -> None:
        text = format_row(counter.row())
        if rows_dir:
            from ...atomic import write_text_atomic

            write_text_atomic(os.path.join(rows_dir, f"rank-{rank}.txt"), text)
            return
        if MPI.Is_finalized():
            return
        texts = world.gather(text, root=0)
        if rank == 0 and texts is not None:
            from ..io import save_traffic
            from .rows import merge_rows, parse_row

            matrix = merge_rows([parse_row(t) for t in texts], origin="captured:mpi4py")
            save_traffic(matrix, output or "traffic.json")

    atexit.register(finish)
    return counter
