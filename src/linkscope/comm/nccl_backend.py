"""NCCL communicators for the runners: CuPy's ``cupy.cuda.nccl`` or a NumPy twin for tests.

A *peer* is one NCCL rank this process drives (its device, communicator and stream). One process
drives all local GPUs (``initAll``, like nccl-tests ``-g``), or each MPI rank drives one GPU and
rank 0's unique id is broadcast over MPI (``ncclCommInitRank``).

Both backends offer the same calls on arrays of float32 elements (``send``/``recv`` take views):
``allreduce, allgather, reduce_scatter, broadcast, reduce, send, recv``, inside
``group_start()`` / ``group_end()`` (NCCL's group semantics: calls of all local peers are issued
together; send/recv pairs never deadlock). Timing goes through per-peer events.

``FakeNccl`` executes every grouped call with NumPy at ``group_end`` and advances a simulated
clock by ``bytes / pair_gb_per_s`` per transfer (the busiest GPU decides), so runner logic, data
checks, tables and mapping comparisons are tested without GPUs; its times are simulated.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np


@dataclass
class Peer:
    """One NCCL rank driven by this process."""

    rank: int
    device: int
    comm: Any
    stream: Any


class CupyNccl:
    """The real thing: CuPy arrays, NCCL communicators, CUDA events."""

    simulated = False

    def __init__(self) -> None:
        from ..engines.gpu.runtime import cupy_module  # noqa: PLC0415  (the one CuPy import)

        cupy = cupy_module()
        nccl = cupy_module("cupy.cuda.nccl")
        self.cp = cupy
        self.nccl = nccl
        self.xp = cupy

    # -- set-up ---------------------------------------------------------------------------
    def version(self) -> str:
        v = int(self.nccl.get_version())
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 10000 else f"{v // 1000}.{v // 100 % 10}.{v % 100}"

    def device_count(self) -> int:
        return int(self.cp.cuda.runtime.getDeviceCount())

    def init_all(self, devices: Sequence[int]) -> list[Peer]:
        comms = self.nccl.NcclCommunicator.initAll(list(devices))
        peers = []
        for rank, (dev, comm) in enumerate(zip(devices, comms)):
            with self.cp.cuda.Device(dev):
                peers.append(Peer(rank, dev, comm, self.cp.cuda.Stream(non_blocking=True)))
        return peers

    def unique_id(self) -> Any:
        return self.nccl.get_unique_id()

    def init_rank(self, nranks: int, uid: Any, rank: int, device: int) -> Peer:
        with self.cp.cuda.Device(device):
            comm = self.nccl.NcclCommunicator(nranks, uid, rank)
            return Peer(rank, device, comm, self.cp.cuda.Stream(non_blocking=True))

    @contextlib.contextmanager
    def on(self, peer: Peer) -> Iterator[None]:
        with self.cp.cuda.Device(peer.device):
            yield

    def free_bytes(self, peer: Peer) -> int:
        with self.on(peer):
            return int(self.cp.cuda.runtime.memGetInfo()[0])

    def alloc(self, peer: Peer, count: int) -> Any:
        with self.on(peer):
            return self.cp.empty(max(count, 1), dtype=self.cp.float32)

    # -- calls (inside a group) -------------------------------------------------------------
    def group_start(self) -> None:
        self.nccl.groupStart()

    def group_end(self) -> None:
        self.nccl.groupEnd()

    def _a(self, peer: Peer, buf: Any) -> int:
        return int(buf.data.ptr)

    def allreduce(self, p: Peer, send: Any, recv: Any, count: int) -> None:
        p.comm.allReduce(send.data.ptr, recv.data.ptr, count, self.nccl.NCCL_FLOAT32, self.nccl.NCCL_SUM, p.stream.ptr)

    def allgather(self, p: Peer, send: Any, recv: Any, count: int) -> None:
        p.comm.allGather(send.data.ptr, recv.data.ptr, count, self.nccl.NCCL_FLOAT32, p.stream.ptr)

    def reduce_scatter(self, p: Peer, send: Any, recv: Any, recv_count: int) -> None:
        p.comm.reduceScatter(send.data.ptr, recv.data.ptr, recv_count, self.nccl.NCCL_FLOAT32,
                             self.nccl.NCCL_SUM, p.stream.ptr)

    def broadcast(self, p: Peer, send: Any, recv: Any, count: int, root: int) -> None:
        p.comm.broadcast(send.data.ptr, recv.data.ptr, count, self.nccl.NCCL_FLOAT32, root, p.stream.ptr)

    def reduce(self, p: Peer, send: Any, recv: Any, count: int, root: int) -> None:
        p.comm.reduce(send.data.ptr, recv.data.ptr, count, self.nccl.NCCL_FLOAT32, self.nccl.NCCL_SUM, root,
                      p.stream.ptr)

    def send(self, p: Peer, buf: Any, count: int, to: int) -> None:
        p.comm.send(buf.data.ptr, count, self.nccl.NCCL_FLOAT32, to, p.stream.ptr)

    def recv(self, p: Peer, buf: Any, count: int, frm: int) -> None:
        p.comm.recv(buf.data.ptr, count, self.nccl.NCCL_FLOAT32, frm, p.stream.ptr)

    # -- staged copies (emulated slow pairs) ------------------------------------------------
    def pinned(self, count: int) -> np.ndarray:
        from ..engines.gpu.runtime import cupy_module  # noqa: PLC0415

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
        with self.on(p):
            ev = self.cp.cuda.Event()
            ev.record(p.stream)
            return ev

    def elapsed_s(self, start: Any, stop: Any) -> float:
        stop.synchronize()
        return float(self.cp.cuda.get_elapsed_time(start, stop)) / 1e3

    def sync(self, peers: Sequence[Peer]) -> None:
        """Whole-device synchronisation: fills and checks run on the legacy default stream, NCCL on
        each peer's non-blocking stream, which does not order itself after the default stream."""
        for p in peers:
            self.cp.cuda.Device(p.device).synchronize()

    # -- CUDA graphs (optional, small messages) -------------------------------------------------
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
class _FakeClock:
    now_s: float = 0.0


@dataclass
class FakeNccl:
    """NumPy twin of CupyNccl for one process driving several fake GPUs.

    Attributes:
        gpus: number of fake devices.
        pair_gb_per_s: GB/s of a transfer between two devices (default: 100 for every pair).
        host_gb_per_s: GB/s of a staged copy through host memory (each of D2H and H2D).
        latency_s: fixed cost of one grouped launch.
        free: bytes each fake device reports free.
    """

    gpus: int = 4
    pair_gb_per_s: Callable[[int, int], float] = lambda a, b: 100.0
    host_gb_per_s: float = 10.0
    latency_s: float = 5e-6
    free: int = 1 << 34
    simulated: bool = True
    clock: _FakeClock = field(default_factory=_FakeClock)
    _pending: list[tuple] | None = None

    xp = np

    def version(self) -> str:
        return "fake"

    def device_count(self) -> int:
        return self.gpus

    def init_all(self, devices: Sequence[int]) -> list[Peer]:
        if len(set(devices)) != len(devices):
            raise RuntimeError("NCCL error: invalid usage (duplicate GPU)")
        return [Peer(r, d, None, None) for r, d in enumerate(devices)]

    def unique_id(self) -> Any:
        return (0,) * 128

    def init_rank(self, nranks: int, uid: Any, rank: int, device: int) -> Peer:
        raise RuntimeError("FakeNccl drives fake GPUs of one process only")

    @contextlib.contextmanager
    def on(self, peer: Peer) -> Iterator[None]:
        yield

    def free_bytes(self, peer: Peer) -> int:
        return self.free

    def alloc(self, peer: Peer, count: int) -> np.ndarray:
        return np.empty(max(count, 1), dtype=np.float32)

    def group_start(self) -> None:
        self._pending = []

    def _add(self, *call: Any) -> None:
        if self._pending is None:
            raise RuntimeError("fake NCCL call outside a group")
        self._pending.append(call)

    def allreduce(self, p, send, recv, count):  # noqa: ANN001
        self._add("allreduce", p, send, recv, count, None)

    def allgather(self, p, send, recv, count):  # noqa: ANN001
        self._add("allgather", p, send, recv, count, None)

    def reduce_scatter(self, p, send, recv, recv_count):  # noqa: ANN001
        self._add("reduce_scatter", p, send, recv, recv_count, None)

    def broadcast(self, p, send, recv, count, root):  # noqa: ANN001
        self._add("broadcast", p, send, recv, count, root)

    def reduce(self, p, send, recv, count, root):  # noqa: ANN001
        self._add("reduce", p, send, recv, count, root)

    def send(self, p, buf, count, to):  # noqa: ANN001
        self._add("send", p, buf, None, count, to)

    def recv(self, p, buf, count, frm):  # noqa: ANN001
        self._add("recv", p, None, buf, count, frm)

    def group_end(self) -> None:
        calls, self._pending = self._pending or [], None
        busy: dict[int, float] = {}

        def charge(a: Peer, b: Peer, nbytes: float) -> None:
            if a.device == b.device:
                return
            t = nbytes / (self.pair_gb_per_s(a.device, b.device) * 1e9)
            busy[a.device] = busy.get(a.device, 0.0) + t

        kinds = {c[0] for c in calls}
        for kind in kinds - {"send", "recv"}:
            mine = sorted((c for c in calls if c[0] == kind), key=lambda c: c[1].rank)
            n = len(mine)
            sends = [np.asarray(c[2]) for c in mine]
            count = mine[0][4]
            if kind == "allreduce":
                total = np.sum([s[:count] for s in sends], axis=0)
                for c in mine:
                    c[3][:count] = total
            elif kind == "allgather":
                for c in mine:
                    for k, s in enumerate(sends):
                        c[3][k * count:(k + 1) * count] = s[:count]
            elif kind == "reduce_scatter":
                total = np.sum([s[:count * n] for s in sends], axis=0)
                for c in mine:
                    r = c[1].rank
                    c[3][:count] = total[r * count:(r + 1) * count]
            elif kind == "broadcast":
                root = mine[0][5]
                for c in mine:
                    c[3][:count] = sends[root][:count]
            elif kind == "reduce":
                root = mine[0][5]
                mine[root][3][:count] = np.sum([s[:count] for s in sends], axis=0)
            ring = [c[1] for c in mine]
            factor = {"allreduce": 2.0 * (n - 1) / n, "broadcast": 1.0, "reduce": 1.0}.get(kind, (n - 1) / n)
            for i, p in enumerate(ring):
                charge(p, ring[(i + 1) % n], factor * count * 4 * (n if kind in ("allgather", "reduce_scatter") else 1))
        sends = [c for c in calls if c[0] == "send"]
        recvs = [c for c in calls if c[0] == "recv"]
        peers = {c[1].rank: c[1] for c in calls}
        payload = [np.array(s[2][:s[4]]) for s in sends]  # all sends read before any receive lands
        for s, data in zip(sends, payload):
            src, dst = s[1], s[5]
            match = next((r for r in recvs if r[1].rank == dst and r[5] == src.rank), None)
            if match is None:
                raise RuntimeError(f"fake NCCL: send {src.rank}->{dst} has no matching recv (would hang)")
            recvs.remove(match)
            match[3][:s[4]] = data
            charge(src, peers[dst], s[4] * 4)
        if recvs:
            raise RuntimeError("fake NCCL: recv without a matching send (would hang)")
        self.clock.now_s += self.latency_s + (max(busy.values()) if busy else 0.0)

    def pinned(self, count: int) -> np.ndarray:
        return np.empty(max(count, 1), dtype=np.float32)

    def new_event(self, peer: Peer) -> Any:
        return None

    def staged_copy(self, src, src_buf, host, dst, dst_buf, count, event) -> None:  # noqa: ANN001
        host[:count] = src_buf[:count]
        dst_buf[:count] = host[:count]
        self.clock.now_s += 2 * count * 4 / (self.host_gb_per_s * 1e9)

    def record(self, p: Peer) -> float:
        return self.clock.now_s

    def elapsed_s(self, start: float, stop: float) -> float:
        return stop - start

    def sync(self, peers: Sequence[Peer]) -> None:
        return None

    def capture(self, peers, body):  # noqa: ANN001
        raise RuntimeError("fake NCCL has no CUDA graphs")

    def launch(self, peers, graphs):  # noqa: ANN001
        raise RuntimeError("fake NCCL has no CUDA graphs")

    def destroy(self, peers: Sequence[Peer]) -> None:
        return None

    def to_numpy(self, buf: Any) -> np.ndarray:
        return np.asarray(buf)
