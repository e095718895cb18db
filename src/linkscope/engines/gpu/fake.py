"""A fake DeviceRuntime for CPU tests of the whole GPU engine: device memory is host memory, kernels
are Python functions doing what the real kernels do (copy, fill/check/poison the data pattern,
pointer chase), and a virtual clock times every stream operation, so runs are deterministic.

Each stream has a ``busy_until`` time on the virtual clock; an operation starts at the later of the
clock's ``now`` and that time and lasts ``FAKE_OVERHEAD_S + bytes / rate``; events record a stream's
``busy_until``; ``stream_wait_event`` moves it forward; ``synchronize`` moves ``now``. The fake
never spins (the start gate's kernel returns at once) and executes each operation when it is
enqueued. ``FakeEngine`` is the GPU engine over it (vendor ``nvidia`` or ``amd``).
"""
from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ... import platforms
from ...errors import MeasurementError
from ...platforms import RuntimeTraits

GiB = 1024**3
FAKE_OVERHEAD_S = 2e-6
FAKE_RATE_B_PER_S = {"copy": 20e9, "peer": 40e9, "kernel": 30e9, "local": 400e9}
FAKE_HOP_NS = {"host": 800.0, "peer": 900.0, "local": 500.0}  # pointer-chase hop, by memory kind
FAKE_FLAG_ONE_WAY_NS = 1500.0


def _pattern_words(n_words: int, seed: int, start: int = 0) -> np.ndarray:
    """The kernels' pattern_word(i, seed) for i in [start, start + n_words)."""
    i = np.arange(start, start + n_words, dtype=np.uint64)
    lo = (i & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = (i >> np.uint64(32)).astype(np.uint32)
    with np.errstate(over="ignore"):
        x = lo ^ (hi * np.uint32(0x9E3779B9)) ^ np.uint32(seed)
        x ^= x >> np.uint32(16)
        x *= np.uint32(0x7FEB352D)
        x ^= x >> np.uint32(15)
        x *= np.uint32(0x846CA68B)
        x ^= x >> np.uint32(16)
    return x


def _pattern_bytes(n_bytes: int, seed: int) -> np.ndarray:
    words = _pattern_words(n_bytes // 4 + 1, seed)
    return words.view(np.uint8)[:n_bytes]


def _view(ptr: int, n_bytes: int) -> np.ndarray:
    if n_bytes <= 0:
        return np.zeros(0, dtype=np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * n_bytes).from_address(ptr))


@dataclass
class FakeStream:
    ordinal: int
    ptr: int
    runtime: FakeRuntime
    busy_until: float = 0.0

    def synchronize(self) -> None:
        self.runtime.now = max(self.runtime.now, self.busy_until)

    def __enter__(self) -> FakeStream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@dataclass
class FakeEvent:
    ordinal: int
    timing: bool
    time_s: float | None = None


@dataclass(frozen=True)
class _FakeCupyRuntime:
    """The part of ``cupy.cuda.runtime`` a platform row's ``RuntimeTraits`` call: every device attribute
    asked (the HIP wall-clock rate is the only one) answers the fake's ``wall_clock_khz_value``."""

    fake: FakeRuntime

    def deviceGetAttribute(self, attribute: int, ordinal: int) -> int:
        return self.fake.wall_clock_khz_value


@dataclass
class FakeRuntime:
    """A DeviceRuntime with ``gpus`` devices of ``memory_bytes`` each; ``no_peer`` lists unordered
    GPU pairs without peer access; ``vendor`` picks the method meanings (``nvidia`` / ``amd``)."""

    gpus: int = 2
    memory_bytes: int = 16 * GiB
    no_peer: Sequence[tuple[int, int]] = ()
    vendor: str = "nvidia"
    platform: str = "fake"
    now: float = 0.0
    _arrays: dict[int, tuple[np.ndarray, int | None]] = field(default_factory=dict)  # ptr -> (array, device or None)
    _peer_enabled: set[tuple[int, int]] = field(default_factory=set)
    _streams: int = 0
    _used: dict[int, int] = field(default_factory=dict)
    bus_ids: Sequence[str] = ()  # PCI bus id per ordinal (empty: unknown)
    wall_clock_khz_value: int = 25_000  # AMD: what hipDeviceAttributeWallClockRate answers (MI200)
    l2_cache_bytes: int = 8 * 1024 * 1024  # MI250X GCD: 8 MB L2
    host_register_fails: bool = False  # CuPy's HIP build: hipHostRegister through CuPy returns an error
    compile_options: list[tuple[str, ...]] = field(default_factory=list)
    uncached: set[int] = field(default_factory=set)  # pointers from malloc_uncached
    numa_user_allocs: list[int] = field(default_factory=list)  # pointers from host_alloc(numa_user=True)
    launches: list[str] = field(default_factory=list)
    launch_grids: list[tuple[str, int, int]] = field(default_factory=list)  # (kernel, GPU ordinal, grid)

    # ---- facts ---------------------------------------------------------------------------------
    def device_count(self) -> int:
        return self.gpus

    @property
    def traits(self) -> RuntimeTraits | None:
        """The runtime traits of the vendor's platform row (None: its row has none)."""
        row = platforms.of_vendor(self.vendor)
        return row.runtime_traits if row is not None else None

    @property
    def rt(self) -> _FakeCupyRuntime:
        """What the row's traits call on CuPy's runtime module (``deviceGetAttribute``)."""
        return _FakeCupyRuntime(self)

    def properties(self, ordinal: int) -> dict[str, Any]:
        traits = self.traits
        return {"name": f"Fake {self.vendor} GPU {ordinal}", "sm_count": 4,
                "pci_bus_id": self.bus_ids[ordinal] if ordinal < len(self.bus_ids) else None,
                "gcn_arch": traits.fake_arch if traits is not None else "",
                "l2_cache_bytes": self.l2_cache_bytes}

    def wall_clock_khz(self, ordinal: int) -> int:
        """As ``CupyRuntime``: the row's traits ask the runtime (here ``wall_clock_khz_value``) where they need a rate."""
        traits = self.traits
        return traits.wall_clock_khz(self, ordinal) if traits is not None else 0

    def mem_get_info(self, ordinal: int) -> tuple[int, int]:
        return self.memory_bytes - self._used.get(ordinal, 0), self.memory_bytes

    def versions(self) -> str:
        return "fake runtime"

    def synchronize(self, ordinal: int) -> None:
        return None

    # ---- memory --------------------------------------------------------------------------------
    def _alloc(self, size_bytes: int, device: int | None) -> int:
        arr = np.zeros(max(int(size_bytes), 1), dtype=np.uint8)
        ptr = int(arr.ctypes.data)
        self._arrays[ptr] = (arr, device)
        if device is not None:
            self._used[device] = self._used.get(device, 0) + arr.nbytes
        return ptr

    def malloc(self, ordinal: int, size_bytes: int) -> int:
        if size_bytes + self._used.get(ordinal, 0) > self.memory_bytes:
            raise MeasurementError(f"fake device {ordinal} out of memory")
        return self._alloc(size_bytes, ordinal)

    def free(self, ordinal: int, ptr: int) -> None:
        self.uncached.discard(ptr)
        arr, device = self._arrays.pop(ptr)
        if device is not None:
            self._used[device] -= arr.nbytes

    def malloc_uncached(self, ordinal: int, size_bytes: int) -> int:
        ptr = self.malloc(ordinal, size_bytes)
        self.uncached.add(ptr)
        return ptr

    def host_alloc(self, size_bytes: int, numa_user: bool = False) -> int:
        ptr = self._alloc(size_bytes, None)
        if numa_user:
            self.numa_user_allocs.append(ptr)
        return ptr

    def free_host(self, ptr: int) -> None:
        self._arrays.pop(ptr)

    def host_register(self, ptr: int, size_bytes: int) -> None:
        if self.host_register_fails:
            raise MeasurementError("hipHostRegister: hipErrorInvalidValue (fake)")

    def host_unregister(self, ptr: int) -> None:
        return None

    def _device_of(self, ptr: int) -> int | None:
        for base, (arr, device) in self._arrays.items():
            if base <= ptr < base + arr.nbytes:
                return device
        return None  # pageable host memory (numpy arrays of the engine)

    # ---- streams and events --------------------------------------------------------------------
    def stream(self, ordinal: int) -> FakeStream:
        self._streams += 1
        return FakeStream(ordinal, 0x1000 + self._streams, self)

    def event_create(self, ordinal: int, timing: bool = True) -> FakeEvent:
        return FakeEvent(ordinal, timing)

    def event_record(self, event: FakeEvent, stream: FakeStream) -> None:
        event.time_s = max(stream.busy_until, self.now)

    def event_elapsed_s(self, start: FakeEvent, end: FakeEvent) -> float:
        if start.time_s is None or end.time_s is None:
            raise MeasurementError("fake event not recorded")
        self.now = max(self.now, end.time_s)
        return max(end.time_s - start.time_s, 1e-9)

    def event_destroy(self, event: FakeEvent) -> None:
        return None

    def stream_wait_event(self, ordinal: int, stream: FakeStream, event: FakeEvent) -> None:
        if event.time_s is not None:
            stream.busy_until = max(stream.busy_until, event.time_s)

    def _advance(self, stream: FakeStream, seconds: float) -> None:
        stream.busy_until = max(stream.busy_until, self.now) + FAKE_OVERHEAD_S + seconds

    # ---- copies --------------------------------------------------------------------------------
    def _copy_rate(self, dst: int, src: int) -> float:
        a, b = self._device_of(src), self._device_of(dst)
        if a is not None and b is not None:
            return FAKE_RATE_B_PER_S["local" if a == b else "peer"]
        return FAKE_RATE_B_PER_S["copy"]

    def memcpy_async(self, ordinal: int, dst: int, src: int, size_bytes: int, stream: FakeStream) -> None:
        a, b = self._device_of(src), self._device_of(dst)
        if a is not None and b is not None and a != b and (a, b) not in self._peer_enabled and (b, a) not in self._peer_enabled:
            rate = FAKE_RATE_B_PER_S["copy"] / 2  # staged by the "driver"
        else:
            rate = self._copy_rate(dst, src)
        ctypes.memmove(dst, src, size_bytes)
        self._advance(stream, size_bytes / rate)

    def memcpy_peer_async(self, ordinal: int, dst: int, dst_ordinal: int, src: int, src_ordinal: int,
                          size_bytes: int, stream: FakeStream) -> None:
        self.memcpy_async(ordinal, dst, src, size_bytes, stream)

    def memcpy(self, ordinal: int, dst: int, src: int, size_bytes: int) -> None:
        ctypes.memmove(dst, src, size_bytes)

    def memset_async(self, ordinal: int, ptr: int, value: int, size_bytes: int, stream: FakeStream) -> None:
        ctypes.memset(ptr, value, size_bytes)
        self._advance(stream, 0.0)

    # ---- peer access ---------------------------------------------------------------------------
    def can_access_peer(self, accessor: int, owner: int) -> bool:
        return accessor == owner or frozenset((accessor, owner)) not in {frozenset(p) for p in self.no_peer}

    def enable_peer(self, accessor: int, owner: int) -> None:
        if not self.can_access_peer(accessor, owner):
            raise MeasurementError(f"fake: no peer access {accessor} -> {owner}")
        self._peer_enabled.add((accessor, owner))

    def disable_peer(self, accessor: int, owner: int) -> bool:
        was = (accessor, owner) in self._peer_enabled
        self._peer_enabled.discard((accessor, owner))
        return was

    # ---- kernels -------------------------------------------------------------------------------
    def compile(self, source: str, options: Sequence[str], names: Sequence[str], ordinals: Sequence[int]) -> Any:
        self.compile_options.append(tuple(options))
        missing = [n for n in names if not hasattr(self, "_k_" + n.split("_u4_")[0].split("_bulk_")[0])]
        if missing:
            raise MeasurementError(f"fake runtime has no kernel for {missing}")
        return tuple(names)

    def launch(self, module: Any, name: str, ordinal: int, stream: FakeStream, grid: int, block: int, args: tuple) -> None:
        if name not in module:
            raise MeasurementError(f"kernel {name!r} was not compiled")
        self.launches.append(name)
        self.launch_grids.append((name, ordinal, grid))
        base = name.split("_u4_")[0].split("_bulk_")[0]
        seconds = getattr(self, "_k_" + base)(*[int(a) for a in args])
        self._advance(stream, seconds)

    # Python twins of kernels.py (each returns its virtual duration in seconds)
    def _k_gate_spin(self, flag: int, timed_out: int, timeout_ns: int) -> float:
        return 0.0

    def _k_copy(self, src: int, dst: int, n: int, *tail: int) -> float:
        loops = 1
        if tail:  # copy_u4_U: (src, dst, n_vec, src_tail, dst_tail, n_tail, loops)
            total = n * 16 + tail[2]
            loops = tail[3]
        else:  # copy_bulk: (src, dst, n_bytes)
            total = n
        ctypes.memmove(dst, src, total)
        return loops * total / FAKE_RATE_B_PER_S["kernel"]

    def _k_fill_pattern(self, p: int, n: int, seed: int) -> float:
        _view(p, n)[:] = _pattern_bytes(n, seed)
        return n / FAKE_RATE_B_PER_S["local"]

    def _k_poison(self, p: int, n: int) -> float:
        _view(p, n)[:] = 0xA5
        return n / FAKE_RATE_B_PER_S["local"]

    def _k_check_pattern(self, p: int, n: int, seed: int, counter: int) -> float:
        bad = int(np.count_nonzero(_view(p, n) != _pattern_bytes(n, seed)))
        c = np.ctypeslib.as_array((ctypes.c_uint64 * 1).from_address(counter))
        c[0] += bad
        return n / FAKE_RATE_B_PER_S["local"]

    def _k_pointer_chase(self, start: int, hops: int, sink: int, target: int) -> float:
        where = self._device_of(start)
        p = start
        for _ in range(min(hops, 2000)):  # follow the real list (a broken list raises), time all hops
            p = int(ctypes.c_uint64.from_address(p).value)
        ctypes.c_uint64.from_address(sink).value = p
        kind = "host" if where is None else "peer"
        return hops * FAKE_HOP_NS[kind] * 1e-9

    def _k_pointer_chase_each(self, starts: int, hops: int, ends: int, ns: int) -> float:
        """Each of the grid's blocks chases from its own start (the fake runs them one after another,
        as many as the last launch's grid) and reports its virtual nanoseconds."""
        blocks = self.launch_grids[-1][2]
        begin = np.ctypeslib.as_array((ctypes.c_uint64 * blocks).from_address(starts))
        out_end = np.ctypeslib.as_array((ctypes.c_uint64 * blocks).from_address(ends))
        out_ns = np.ctypeslib.as_array((ctypes.c_uint64 * blocks).from_address(ns))
        seconds = 0.0
        for b in range(blocks):
            sink = ctypes.c_uint64(0)
            seconds = self._k_pointer_chase(int(begin[b]), hops, ctypes.addressof(sink), 0)
            out_end[b] = sink.value
            out_ns[b] = round(seconds * 1e9)
        return seconds  # the blocks run side by side

    def _k_flag_pingpong(self, local_flag: int, peer_flag: int, rounds: int, first: int, timeout_ns: int, out: int) -> float:
        words = np.ctypeslib.as_array((ctypes.c_uint64 * 3).from_address(out))
        words[:] = (0, int(2 * (rounds - 1) * FAKE_FLAG_ONE_WAY_NS), 0)
        return 2 * rounds * FAKE_FLAG_ONE_WAY_NS * 1e-9


def FakeEngine(topology: object | None = None, *, gpus: int | None = None, vendor: str = "nvidia",
               memory_bytes: int = 16 * GiB, no_peer: Sequence[Sequence[int]] = (),
               env_keys: Sequence[str] = (), name: str = "fake") -> Any:
    """The GPU engine over a FakeRuntime (``gpus`` defaults to the topology's GPU count). Its
    ``process_env`` is this process's value of ``env_keys`` (as the real engines record theirs), and
    it can be built again in a child process (``child_factory``)."""
    import os

    from .engine import GpuEngine

    count = gpus if gpus is not None else (getattr(topology, "gpu_count", 0) or 2)
    rt = FakeRuntime(gpus=count, memory_bytes=memory_bytes, no_peer=tuple((int(p[0]), int(p[1])) for p in no_peer), vendor=vendor)
    kwargs = {"gpus": count, "vendor": vendor, "memory_bytes": memory_bytes, "no_peer": [list(p) for p in no_peer],
              "env_keys": list(env_keys), "name": name}
    env = {k: os.environ[k] for k in env_keys if k in os.environ}
    return GpuEngine(rt, topology, name=name, process_env=env, child_factory=("linkscope.engines.gpu.fake:FakeEngine", kwargs))


__all__ = ["FAKE_RATE_B_PER_S", "FakeEngine", "FakeRuntime"]
