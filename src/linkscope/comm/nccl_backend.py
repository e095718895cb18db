"""The collective backend seam: ``CollectiveBackend`` (Protocol), NCCL/RCCL through CuPy, and a
simulated backend timed by the fabric model.

A *peer* is one NCCL rank this process drives (its device, communicator and stream). One process
drives all local GPUs (``initAll``, like nccl-tests ``-g``), or each MPI rank drives one GPU and
rank 0's unique id is broadcast over MPI (``ncclCommInitRank``).

Every backend offers the same calls on arrays of float32 elements (``send``/``recv`` take views):
``collective(op, ...)`` for every operation with a library call in the collective descriptor
(``linkscope.collectives``: which function, which arguments, what it computes), and ``send, recv``, inside
``group_start()`` / ``group_end()`` (NCCL's group semantics: calls of all local peers are issued
together; send/recv pairs never deadlock). Timing goes through per-peer events.

* ``CupyNccl``: ``cupy.cuda.nccl``. On a ROCm build of CuPy the same module is backed by RCCL, so
  ``--backend rocm`` uses this class too (the version string says which library answered).
* ``SimNccl``: executes every grouped call with NumPy at the next ``sync`` (data checks stay real) and
  advances a simulated clock by what ``model.collectives.CollectiveModel`` predicts for the group on
  the chosen topology: ring/tree steps as concurrent flows with max-min contention on the
  topology's links, a reduce-step factor and a launch floor (docs/comm.md). Its numbers are labelled
  simulated.
"""
from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from .. import platforms
from ..collectives import OP_TABLE, P2P_CALLS, library_call
from ..errors import MeasurementError, UserError


@dataclass
class Peer:
    """One NCCL rank driven by this process."""

    rank: int
    device: int
    comm: Any
    stream: Any


class CollectiveCalls(Protocol):
    """The collective library itself: communicators and the calls of one NCCL group. Buffers,
    streams and events come from the device side."""

    def version(self) -> str: ...
    def init_all(self, devices: Sequence[int]) -> list[Peer]: ...
    def unique_id(self) -> Any: ...
    def init_rank(self, nranks: int, uid: Any, rank: int, device: int) -> Peer: ...
    def group_start(self) -> None: ...
    def group_end(self) -> None: ...
    def collective(self, op: str, p: Peer, send: Any, recv: Any, count: int, root: int | None = None) -> None:
        """One library call of ``op`` (the descriptor's; ``count`` as its call counts, ``root`` its root)."""
    def send(self, p: Peer, buf: Any, count: int, to: int) -> None: ...
    def recv(self, p: Peer, buf: Any, count: int, frm: int) -> None: ...
    def destroy(self, peers: Sequence[Peer]) -> None: ...


class DeviceSide(Protocol):
    """What the runners need from the devices around the calls: memory, events, synchronisation,
    CUDA graphs. The real backend takes device count, free memory, streams, events and
    synchronisation from the engines' device runtime (``engines.gpu.runtime.CupyRuntime``); its
    array buffers stay CuPy arrays (the data checks index them)."""

    @property
    def simulated(self) -> bool: ...
    @property
    def xp(self) -> Any: ...
    @property
    def data_limit_bytes(self) -> int | None:
        """Largest buffer (bytes) whose data really moves; None: every buffer (real backends)."""

    def device_count(self) -> int: ...
    def on(self, peer: Peer) -> contextlib.AbstractContextManager[None]: ...
    def free_bytes(self, peer: Peer) -> int: ...
    def alloc(self, peer: Peer, count: int) -> Any: ...
    def pinned(self, count: int) -> np.ndarray: ...
    def new_event(self, peer: Peer) -> Any: ...
    def staged_copy(self, src: Peer, src_buf: Any, host: np.ndarray, dst: Peer, dst_buf: Any, count: int,
                    event: Any) -> None: ...
    def record(self, p: Peer) -> Any: ...
    def elapsed_s(self, start: Any, stop: Any) -> float: ...
    def sync(self, peers: Sequence[Peer]) -> None: ...
    def capture(self, peers: Sequence[Peer], body: Callable[[], None]) -> list[Any]: ...
    def launch(self, peers: Sequence[Peer], graphs: Sequence[Any]) -> None: ...
    def to_numpy(self, buf: Any) -> np.ndarray: ...


class CollectiveBackend(CollectiveCalls, DeviceSide, Protocol):
    """What the NCCL runners (nccl, stencil, p2p) need: the collective calls and the device side."""


@functools.cache
def _loaded_nccl_library() -> Any:
    """The NCCL (or RCCL) shared library CuPy loaded, through ctypes (cached once found); OSError when none
    is in the process yet (not cached: CuPy loads NCCL with its first communicator)."""
    import ctypes
    import os

    # RTLD_NOLOAD: only a library already in the process (the one CuPy's NCCL module linked), never a second copy
    mode = getattr(os, "RTLD_NOLOAD", 0) | ctypes.RTLD_GLOBAL
    for name in ("libnccl.so.2", "librccl.so.1", "libnccl.so", "librccl.so"):
        try:
            return ctypes.CDLL(name, mode=mode)
        except OSError:
            continue
    raise OSError("no NCCL or RCCL library loaded")


def _nccl_library() -> Any | None:
    try:
        return _loaded_nccl_library()
    except OSError:
        return None


def library_name(backend: Any) -> str:
    """The collective library a backend's calls go to (``NCCL``, or ``RCCL`` on ROCm: ``CupyNccl.library``);
    NCCL for a backend that does not say (the simulated one, test doubles)."""
    library = getattr(backend, "library", "NCCL")
    return library if isinstance(library, str) else "NCCL"


#: ctypes type of each argument name of a ``LibraryCall`` (nccl.h: pointers, size_t counts, int enums and ranks).
_CTYPE_OF_ARG = {"send": "c_void_p", "recv": "c_void_p", "buffer": "c_void_p", "count": "c_size_t",
                 "dtype": "c_int", "redop": "c_int", "root": "c_int", "peer": "c_int", "stream": "c_void_p"}


class LibraryFunction:
    """A call of the loaded library CuPy has no method for, made the way CuPy's methods are called: the plain
    arguments of ``LibraryCall.args`` (the communicator left out), so the Python loop and the native loop
    (``comm.eagerloop``, which reads the same plain arguments) both take it. nccl.h puts the communicator
    just before the stream. A non-zero ncclResult_t raises MeasurementError with the library's own words."""

    def __init__(self, library: Any, function: str, args: Sequence[str], comm: int) -> None:
        import ctypes

        self.function, self._library, self._comm = function, library, ctypes.c_void_p(comm)
        self._fn = getattr(library, function)
        types = [getattr(ctypes, _CTYPE_OF_ARG[a]) for a in args]
        self._fn.argtypes = [*types[:-1], ctypes.c_void_p, types[-1]]
        self._fn.restype = ctypes.c_int

    def __call__(self, *plain: Any) -> None:
        code = self._fn(*plain[:-1], self._comm, plain[-1])
        if code != 0:
            raise library_error(self._library, code, f"in {self.function}")


def library_error(library: Any, code: int, where: str) -> Exception:
    """MeasurementError for a non-zero ncclResult_t, in the library's own words (ncclGetErrorString)."""
    import ctypes

    text = ""
    describe = getattr(library, "ncclGetErrorString", None)
    if describe is not None:
        describe.restype, describe.argtypes = ctypes.c_char_p, [ctypes.c_int]
        text = (describe(code) or b"").decode(errors="replace")
    return MeasurementError(f"NCCL error {code}{f' ({text})' if text else ''} {where}")


def nccl_mem_alloc(cp: Any, nbytes: int) -> Any | None:
    """A CuPy float32 array over ``ncclMemAlloc`` memory on the current device, freed with ``ncclMemFree``
    when the array goes; None when the loaded library has no ``ncclMemAlloc`` (NCCL < 2.19) or it fails."""
    import ctypes
    import weakref

    lib = _nccl_library()
    alloc = getattr(lib, "ncclMemAlloc", None) if lib is not None else None
    free = getattr(lib, "ncclMemFree", None) if lib is not None else None
    if alloc is None or free is None:
        return None
    alloc.argtypes, alloc.restype = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t], ctypes.c_int
    free.argtypes, free.restype = [ctypes.c_void_p], ctypes.c_int
    ptr = ctypes.c_void_p()
    if alloc(ctypes.byref(ptr), ctypes.c_size_t(nbytes)) != 0 or not ptr.value:
        return None
    device = cp.cuda.Device().id

    class _Owner:
        pass

    owner = _Owner()

    def release(address: int = ptr.value, dev: int = device) -> None:
        with cp.cuda.Device(dev):
            free(ctypes.c_void_p(address))

    weakref.finalize(owner, release)
    memory = cp.cuda.UnownedMemory(ptr.value, nbytes, owner, device)
    return cp.ndarray((nbytes // 4,), dtype=cp.float32, memptr=cp.cuda.MemoryPointer(memory, 0))


def _cupy_platform(cp: Any) -> platforms.Platform:
    """The platform row of the CuPy build ``cp`` is (``cupy.cuda.runtime.is_hip``; NVIDIA's when unsaid), the one
    place the build is read: its runtime for the engines' device runtime, its collective library's name."""
    found = platforms.of_cupy_build(bool(getattr(getattr(getattr(cp, "cuda", None), "runtime", None), "is_hip", False)))
    return found if found is not None and found.runtime else platforms.NVIDIA


class CupyNccl:
    """The real thing: CuPy arrays, NCCL (or RCCL on ROCm) communicators, device events."""

    simulated = False
    data_limit_bytes: int | None = None
    alloc_note: str = ""

    def __init__(self, *, cp: Any = None, nccl: Any = None, runtime: Any = None) -> None:
        """``cp``, ``nccl``, ``runtime``: CuPy, its NCCL module and the engines' device runtime
        (imported / built here unless given, as tests give fakes)."""
        from ..engines.gpu.runtime import CupyRuntime, cupy_module

        self.cp = cp if cp is not None else cupy_module()
        self.nccl = nccl if nccl is not None else cupy_module("cupy.cuda.nccl")
        if runtime is None:
            runtime = CupyRuntime(str(_cupy_platform(self.cp).runtime))
        self.runtime = runtime

    @property
    def xp(self) -> Any:
        """The array module of this backend's buffers (CuPy)."""
        return self.cp

    # -- set-up ---------------------------------------------------------------------------
    def version(self) -> str:
        v = int(self.nccl.get_version())
        text = f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 10000 else f"{v // 1000}.{v // 100 % 10}.{v % 100}"
        library = self.library
        return text if library == platforms.NVIDIA.collective_library else f"{library} {text}"

    def device_count(self) -> int:
        return int(self.runtime.device_count())

    def init_all(self, devices: Sequence[int]) -> list[Peer]:
        comms = self.nccl.NcclCommunicator.initAll(list(devices))
        return [Peer(rank, dev, comm, self.runtime.stream(dev)) for rank, (dev, comm) in enumerate(zip(devices, comms))]

    def unique_id(self) -> Any:
        return self.nccl.get_unique_id()

    def init_rank(self, nranks: int, uid: Any, rank: int, device: int) -> Peer:
        """One rank of a process-per-GPU job. Its GPU becomes the process's current device for good, as
        nccl-tests' cudaSetDevice(localRank): every later ``with Device(d)`` then returns to it. Left at GPU 0,
        each return switched to GPU 0, and since CUDA 12 cudaSetDevice initialises that device's context:
        rank 1 of a 2 x H200 run held a 518 MiB context on GPU 0 beside rank 0 (nvidia-smi,
        docs/runs/h200x2-2026-11-28c/call5/mpi/apps_during_ls.txt)."""
        self.cp.cuda.Device(device).use()
        comm = self.nccl.NcclCommunicator(nranks, uid, rank)
        return Peer(rank, device, comm, self.runtime.stream(device))

    @contextlib.contextmanager
    def on(self, peer: Peer) -> Iterator[None]:
        with self.cp.cuda.Device(peer.device):
            yield

    def free_bytes(self, peer: Peer) -> int:
        return int(self.runtime.mem_get_info(peer.device)[0])

    def alloc(self, peer: Peer, count: int) -> Any:
        """A float32 buffer on the peer's GPU, allocated as nccl-tests allocates its buffers (>= 2.19):
        with ``ncclMemAlloc`` (CUDA VMM memory NCCL can register), so an operation captured in a CUDA
        graph has its buffers registered by NCCL (``NCCL_GRAPH_REGISTER``) as in nccl-tests ``-G``.
        CuPy's pool (plain ``cudaMalloc``) was not: on 2 x H200 a graph-launched allgather of
        32-512 MiB took 0.79-0.82x of nccl-tests -G 20's time, alltoall 0.80-0.86x, sendrecv 0.72-0.83x,
        while the eager runs (no registration either side) matched (docs/runs/h200x2-2026-11-28).
        Falls back to CuPy's pool, with ``alloc_note`` saying so, where the library has no
        ``ncclMemAlloc`` (NCCL < 2.19, RCCL builds without it)."""
        with self.on(peer):
            nbytes = max(count, 1) * 4
            buf = nccl_mem_alloc(self.cp, nbytes)
            if buf is None:
                self.alloc_note = ("buffers from CuPy's pool: the NCCL library has no ncclMemAlloc, so graph-launched "
                                   "operations are not registered as in nccl-tests -G")
                return self.cp.empty(max(count, 1), dtype=self.cp.float32)
            return buf

    @property
    def library(self) -> str:
        """The collective library CuPy's NCCL module is backed by here (platforms.py: NCCL, or RCCL on ROCm)."""
        return _cupy_platform(self.cp).collective_library or "NCCL"

    def bind(self, name: str, args: tuple) -> tuple[Callable[..., Any], tuple]:
        """The communicator's own method and its plain arguments for one call (see ``comm.nccl.prepared``):
        pointers, counts and the stream handle resolved once. ``name``: ``send``, ``recv`` or an operation,
        whose method and argument layout are the descriptor's (``LibraryCall`` of this library);
        ``args``: ``(peer, send, recv, count[, root])`` (root: the descriptor's when left out)."""
        nc = self.nccl
        p = args[0]
        stream = p.stream.ptr
        call = library_call(name, self.library)
        if call is None:
            raise ValueError(f"no NCCL call named {name!r}")
        if name in P2P_CALLS:
            _, buf, count, other = args
            values = {"buffer": buf.data.ptr, "count": count, "dtype": nc.NCCL_FLOAT32, "peer": other, "stream": stream}
        else:
            spec = OP_TABLE[name]
            _, send, recv, count, *rest = args
            root = rest[0] if rest and rest[0] is not None else spec.root
            values = {"send": send.data.ptr, "recv": recv.data.ptr, "count": count, "dtype": nc.NCCL_FLOAT32,
                      "redop": getattr(nc, f"NCCL_{(spec.redop or 'sum').upper()}"), "root": root, "stream": stream}
        plain = tuple(values[arg] for arg in call.args)
        if call.method and hasattr(p.comm, call.method):
            return getattr(p.comm, call.method), plain
        library = _nccl_library()
        if library is None or not hasattr(library, call.function):
            raise ValueError(f"the {self.library} library loaded has no {call.function}")
        return LibraryFunction(library, call.function, call.args, int(p.comm.comm)), plain

    def has_function(self, symbol: str) -> bool:
        """Whether the collective library loaded in this process has ``symbol`` (a call CuPy has no method
        for, such as NCCL 2.28's ncclAlltoAll: ``comm.nccl.fused_call``)."""
        library = _nccl_library()
        return library is not None and hasattr(library, symbol)

    # -- calls (inside a group) -------------------------------------------------------------
    def group_start(self) -> None:
        self.nccl.groupStart()

    def group_end(self) -> None:
        self.nccl.groupEnd()

    def _call(self, name: str, args: tuple) -> None:
        fn, plain = self.bind(name, args)
        fn(*plain)

    def collective(self, op: str, p: Peer, send: Any, recv: Any, count: int, root: int | None = None) -> None:
        self._call(op, (p, send, recv, count, root))

    def send(self, p: Peer, buf: Any, count: int, to: int) -> None:
        self._call("send", (p, buf, count, to))

    def recv(self, p: Peer, buf: Any, count: int, frm: int) -> None:
        self._call("recv", (p, buf, count, frm))

    # -- staged copies (emulated slow pairs) ------------------------------------------------
    def pinned(self, count: int) -> np.ndarray:
        from ..engines.gpu.runtime import cupy_module

        return cupy_module("cupyx").empty_pinned((max(count, 1),), dtype=np.float32)

    def new_event(self, peer: Peer) -> Any:
        with self.on(peer):
            return self.cp.cuda.Event(disable_timing=True)

    def staged_copy(self, src: Peer, src_buf: Any, host: np.ndarray, dst: Peer, dst_buf: Any, count: int,
                    event: Any) -> None:
        """D2H on the sender's stream, then H2D on the receiver's stream after it (event)."""
        rt = self.cp.cuda.runtime
        nbytes = count * 4
        with self.on(src):
            rt.memcpyAsync(host.ctypes.data, src_buf.data.ptr, nbytes, rt.memcpyDeviceToHost, src.stream.ptr)
            event.record(src.stream)
        with self.on(dst):
            dst.stream.wait_event(event)
            rt.memcpyAsync(dst_buf.data.ptr, host.ctypes.data, nbytes, rt.memcpyHostToDevice, dst.stream.ptr)

    # -- timing ---------------------------------------------------------------------------
    def record(self, p: Peer) -> Any:
        """A timing event recorded on the peer's stream (the device runtime's; ``elapsed_s`` frees it)."""
        event = self.runtime.event_create(p.device)
        self.runtime.event_record(event, p.stream)
        return event

    def elapsed_s(self, start: Any, stop: Any) -> float:
        """Seconds between two ``record`` events (waits for ``stop``); both events are freed: the
        runners read each pair once."""
        try:
            return float(self.runtime.event_elapsed_s(start, stop))
        finally:
            self.runtime.event_destroy(start)
            self.runtime.event_destroy(stop)

    def sync(self, peers: Sequence[Peer]) -> None:
        """Whole-device synchronisation: fills and checks run on the legacy default stream, NCCL on
        each peer's non-blocking stream, which does not order itself after the default stream."""
        for p in peers:
            self.runtime.synchronize(p.device)

    # -- CUDA graphs (--cuda-graph N: every size, as nccl-tests -G N) -------------------------------------------------
    def capture(self, peers: Sequence[Peer], body: Callable[[], None]) -> list[Any]:
        """Capture ``body`` (grouped NCCL calls on every peer's stream) into one graph per peer."""
        for p in peers:
            with self.on(p):
                p.stream.begin_capture()
        try:
            body()
        finally:
            graphs = []
            for p in peers:
                with self.on(p):
                    graphs.append(p.stream.end_capture())
        return graphs

    def launch(self, peers: Sequence[Peer], graphs: Sequence[Any]) -> None:
        for p, g in zip(peers, graphs):
            with self.on(p):
                g.launch(p.stream)

    def destroy(self, peers: Sequence[Peer]) -> None:
        for p in peers:
            with contextlib.suppress(Exception):
                p.comm.destroy()

    def to_numpy(self, buf: Any) -> np.ndarray:
        return self.cp.asnumpy(buf)


@dataclass
class _SimClock:
    now_s: float = 0.0


_Call = tuple[str, Peer, Any, Any, int, Any]


SIM_DATA_LIMIT_BYTES = 4 << 20
"""A simulated buffer holds at most this many bytes: larger operations are timed, their data does not
move and is not checked (#wrong N/A), so a simulated 1 GiB collective needs no 1 GiB buffers."""


def moves_data(backend: Any, count: int) -> bool:
    """True when a buffer of ``count`` float32 elements really carries data on ``backend``."""
    limit = backend.data_limit_bytes
    return limit is None or count * 4 <= limit


class SimNccl:
    """Simulated collective backend for one process driving the GPUs of a topology.

    Data: every grouped call whose buffers fit ``data_limit_bytes`` runs with NumPy at the next
    ``sync`` (so ``#wrong`` checks are real); buffers are never larger than that limit, larger
    operations only advance the clock (the runners report #wrong N/A for them).
    Time: the group's collectives are predicted by ``CollectiveModel.predict`` (NCCL's algorithm and
    protocol choice, timed on the fabric model), its send/recv pairs as NCCL's grouped p2p on the
    fabric model; staged copies (emulated slow pairs) as a pinned host-staged transfer.

    Attributes:
        topology: the topology whose GPUs are the devices (device i = GPU index i).
        params: model parameter overrides (ModelParams or a mapping), or None.
        free: bytes each simulated device reports free (default: the GPU's memory, else 16 GiB).
        env: the NCCL_* environment the simulated NCCL honours (NCCL_ALGO, NCCL_PROTO, ...).
        data_limit_bytes: the largest buffer that holds data.
    """

    simulated = True
    xp = np
    data_limit_bytes: int | None = SIM_DATA_LIMIT_BYTES

    def __init__(self, topology: Any, params: Any = None, *, free: int | None = None,
                 env: Mapping[str, str] | None = None, data_limit_bytes: int = SIM_DATA_LIMIT_BYTES) -> None:
        from ..model.collectives import CollectiveModel

        self.topology = topology
        # one process drives every GPU (init_all): eager, each operation is launched by this thread for all
        # of its GPUs (CollectiveModel's host time); captured into a CUDA graph (``capture``), replayed
        self.model = CollectiveModel.of(topology, params, env=env, launch="eager")
        self.graph_model = CollectiveModel(self.model.fabric, env, "graph")
        self._captured: list[tuple[tuple, list[_Call]]] | None = None
        self.free = free
        self.data_limit_bytes = data_limit_bytes
        self.clock = _SimClock()
        self._pending: list[_Call] | None = None
        self._unsynced: list[tuple[tuple, list[_Call]]] = []
        self._times: dict[tuple, float] = {}

    def version(self) -> str:
        return f"simulated (fabric model of {self.topology.name})"

    def device_count(self) -> int:
        return int(self.topology.gpu_count)

    def init_all(self, devices: Sequence[int]) -> list[Peer]:
        if len(set(devices)) != len(devices):
            raise RuntimeError("NCCL error: invalid usage (duplicate GPU)")
        for d in devices:
            if not 0 <= d < self.device_count():
                raise UserError(f"GPU {d} is not in topology {self.topology.name} "
                                f"(GPUs 0..{self.device_count() - 1})")
        return [Peer(r, d, None, None) for r, d in enumerate(devices)]

    def unique_id(self) -> Any:
        return (0,) * 128

    def init_rank(self, nranks: int, uid: Any, rank: int, device: int) -> Peer:
        raise UserError("the simulated collective backend drives the GPUs of one process only",
                        hint="run without mpirun (it simulates every GPU of --gpus in one process)")

    @contextlib.contextmanager
    def on(self, peer: Peer) -> Iterator[None]:
        yield

    def free_bytes(self, peer: Peer) -> int:
        if self.free is not None:
            return self.free
        mem = self.topology.gpu(peer.device).memory_bytes
        return int(mem) if mem else 1 << 34

    def alloc(self, peer: Peer, count: int) -> np.ndarray:
        """A buffer of ``count`` elements, or of the data limit when that is smaller (module doc)."""
        limit = max(1, (self.data_limit_bytes or count * 4) // 4)
        return np.empty(max(min(count, limit), 1), dtype=np.float32)

    def group_start(self) -> None:
        self._pending = []

    def _add(self, *call: Any) -> None:
        if self._pending is None:
            raise RuntimeError("simulated NCCL call outside a group")
        self._pending.append(call)

    def collective(self, op: str, p: Peer, send: Any, recv: Any, count: int, root: int | None = None) -> None:
        spec = OP_TABLE.get(op)
        if spec is None or spec.compute is None:
            raise ValueError(f"no NCCL call named {op!r}")
        self._add(op, p, send, recv, count, spec.root if root is None else root)

    def send(self, p: Peer, buf: Any, count: int, to: int) -> None:
        self._add("send", p, buf, None, count, to)

    def recv(self, p: Peer, buf: Any, count: int, frm: int) -> None:
        self._add("recv", p, None, buf, count, frm)

    def group_end(self) -> None:
        """Advance the clock by the group's predicted time; its data moves at the next ``sync``
        (consecutive identical groups move it once: the result of a repeated out-of-place operation
        is the same, and the runners refill buffers before every data check)."""
        calls, self._pending = self._pending or [], None
        key = tuple((c[0], c[1].rank, _address(c[2]), _address(c[3]), c[4], c[5]) for c in calls)
        if self._captured is not None:  # inside ``capture``: recorded, run at ``launch``
            self._captured.append((key, calls))
            return
        self._run_group(key, calls, self.model)

    def _run_group(self, key: tuple, calls: list[_Call], model: Any) -> None:
        timed = (model.launch, key)
        if timed not in self._times:
            self._times[timed] = self._group_time_s(calls, model)
        self.clock.now_s += self._times[timed]
        if not self._unsynced or self._unsynced[-1][0] != key:
            self._unsynced.append((key, calls))

    def _group_time_s(self, calls: Sequence[_Call], model: Any) -> float:
        elapsed_s = 0.0
        for kind in dict.fromkeys(c[0] for c in calls if c[0] not in ("send", "recv")):
            mine = sorted((c for c in calls if c[0] == kind), key=lambda c: c[1].rank)
            n, count = len(mine), mine[0][4]
            size = OP_TABLE[kind].size_of_call(count, n)
            elapsed_s += model.predict(kind, [c[1].device for c in mine], size).time_us * 1e-6
        flows = _match_sends(calls, deliver=False)
        if flows:
            devices = {c[1].rank: c[1].device for c in calls}
            order = sorted(devices)
            sends = [(order.index(c[1].rank), order.index(c[5]), float(c[4] * 4)) for c in calls if c[0] == "send"]
            elapsed_s += model.p2p(sends, [devices[r] for r in order]).time_us * 1e-6
        return elapsed_s

    def _move_data(self) -> None:
        groups, self._unsynced = self._unsynced, []
        for _, calls in groups:
            kinds = [c[0] for c in calls]
            if not all(_fits(c, kinds.count(c[0])) for c in calls):
                continue  # beyond the data limit: timed only (module doc)
            for kind in dict.fromkeys(c[0] for c in calls if c[0] not in ("send", "recv")):
                _execute(kind, sorted((c for c in calls if c[0] == kind), key=lambda c: c[1].rank))
            _match_sends(calls, deliver=True)

    def pinned(self, count: int) -> np.ndarray:
        limit = max(1, (self.data_limit_bytes or count * 4) // 4)
        return np.empty(max(min(count, limit), 1), dtype=np.float32)

    def new_event(self, peer: Peer) -> Any:
        return None

    def staged_copy(self, src: Peer, src_buf: Any, host: np.ndarray, dst: Peer, dst_buf: Any, count: int,
                    event: Any) -> None:
        from ..model.collectives import NO_PEER_METHOD

        self._move_data()  # stream order: the groups before it land first
        if count <= min(len(src_buf), len(dst_buf), len(host)):
            host[:count] = src_buf[:count]
            dst_buf[:count] = host[:count]
        self.clock.now_s += self.model.flows_time_s([(src.device, dst.device, count * 4)], method=NO_PEER_METHOD)

    def record(self, p: Peer) -> float:
        return self.clock.now_s

    def elapsed_s(self, start: float, stop: float) -> float:
        return stop - start

    def sync(self, peers: Sequence[Peer]) -> None:
        self._move_data()

    def capture(self, peers: Sequence[Peer], body: Callable[[], None]) -> list[Any]:
        """Record ``body``'s groups as one simulated CUDA graph (the clock does not move); ``launch``
        replays them timed as NCCL runs a captured operation (``CollectiveModel`` launch="graph": no host
        launch per operation, registered buffers)."""
        self._captured = []
        try:
            body()
            return [list(self._captured)]
        finally:
            self._captured = None

    def launch(self, peers: Sequence[Peer], graphs: Sequence[Any]) -> None:
        for graph in graphs[:1]:  # one graph holds every GPU's groups
            for key, calls in graph:
                self._run_group(key, calls, self.graph_model)

    def destroy(self, peers: Sequence[Peer]) -> None:
        return None

    def to_numpy(self, buf: Any) -> np.ndarray:
        self._move_data()
        return np.asarray(buf)


def _fits(call: _Call, n: int) -> bool:
    """Whether a call's buffers hold all the elements it moves (bounded simulated buffers may not);
    ``n``: ranks of the collective."""
    kind, send, recv, count = call[0], call[2], call[3], call[4]
    if kind in ("send", "recv"):
        buf = send if kind == "send" else recv
        return buf is not None and len(buf) >= count
    need_send, need_recv = OP_TABLE[kind].call_counts(count, n)
    return len(send) >= need_send and len(recv) >= need_recv


def _address(buf: Any) -> int | None:
    return None if buf is None else int(buf.__array_interface__["data"][0])


def _execute(kind: str, mine: Sequence[_Call]) -> None:
    """What the library computes for one collective over the ranks' (send, recv) buffers, in rank order:
    the descriptor's NumPy ``compute``."""
    compute = OP_TABLE[kind].compute
    if compute is None:
        raise ValueError(f"{kind} has no library call")
    outputs = compute([np.asarray(c[2]) for c in mine], mine[0][4], mine[0][5] or 0)
    for c, out in zip(mine, outputs):
        if out is not None:
            c[3][:len(out)] = out


def _match_sends(calls: Sequence[_Call], *, deliver: bool) -> list[tuple[int, int, float]]:
    """Match every grouped send with its recv; returns the flows (src GPU, dst GPU, bytes). With
    ``deliver`` the data moves too (all sends read before any lands). An unmatched send or recv
    would hang NCCL: an error here."""
    sends = [c for c in calls if c[0] == "send"]
    recvs = [c for c in calls if c[0] == "recv"]
    device_of = {c[1].rank: c[1].device for c in calls}
    payload = [np.array(s[2][:s[4]]) if deliver else None for s in sends]
    flows = []
    for s, data in zip(sends, payload):
        src, dst = s[1], s[5]
        match = next((r for r in recvs if r[1].rank == dst and r[5] == src.rank), None)
        if match is None:
            raise RuntimeError(f"simulated NCCL: send {src.rank}->{dst} has no matching recv (would hang)")
        recvs.remove(match)
        if deliver:
            match[3][:s[4]] = data
        flows.append((src.device, device_of[dst], float(s[4] * 4)))
    if recvs:
        raise RuntimeError("simulated NCCL: recv without a matching send (would hang)")
    return flows


BACKEND_CHOICES = platforms.engine_names()  # auto, cuda, rocm, sim: the platform table's engines


def collective_backend(name: str, topology: Callable[[], Any], *, named_topology: bool = False,
                       env: Mapping[str, str] | None = None) -> tuple[CollectiveBackend, str | None]:
    """The backend for ``--backend name`` and a note when ``auto`` chose the simulated one.

    ``topology()`` resolves the topology the simulated backend runs on (called only when needed).
    ``cuda`` and ``rocm`` use CuPy's NCCL module (RCCL on a ROCm build of CuPy). ``auto`` is the
    real backend when it is usable, except when the user named a topology (``named_topology``:
    ``--preset/--from/--synthetic``), which describes another machine: then it simulates that one,
    as ``bench --backend auto`` does. ``env``: the NCCL_* variables the simulated NCCL honours.
    """
    if name not in BACKEND_CHOICES:
        raise UserError(f"--backend {name!r} is not valid", hint=f"valid choices: {', '.join(BACKEND_CHOICES)}")
    if name == "sim":
        return SimNccl(topology(), env=env), None
    if name == "auto" and named_topology:
        sim = SimNccl(topology(), env=env)
        return sim, f"a topology was named: simulated on {sim.topology.name} (--backend cuda measures this machine)"
    try:
        real = CupyNccl()
        count = real.device_count()
    except Exception as exc:
        if name != "auto":
            raise UserError(f"--backend {name} needs CuPy with NCCL/RCCL support and a GPU ({type(exc).__name__}: {exc})",
                            hint="pip install cupy-cuda12x; or --backend sim for a simulated run") from exc
        sim = SimNccl(topology(), env=env)
        from ..discovery.auto import is_fallback

        if is_fallback(sim.topology):  # the no-GPU note of the topology already said it
            return sim, None
        return sim, f"no usable GPU/NCCL here ({type(exc).__name__}): simulated on {sim.topology.name}"
    if count < 1:
        if name != "auto":
            raise UserError(f"--backend {name}: no GPU visible", hint="or --backend sim for a simulated run")
        sim = SimNccl(topology(), env=env)
        return sim, f"no GPU visible: simulated on {sim.topology.name}"
    return real, None
