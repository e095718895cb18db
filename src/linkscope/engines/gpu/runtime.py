"""The device-runtime seam: the small set of GPU runtime calls the one GPU engine uses.

``DeviceRuntime`` (streams, events, peer access, device and pinned host allocation, kernel compile
and launch, memcpy kinds) has three implementations:

* ``CupyRuntime("cuda")``: CuPy on CUDA (``cupy-cuda12x`` / ``cupy-cuda13x``; kernels by NVRTC);
* ``CupyRuntime("rocm")``: CuPy's ROCm build (``cupy-rocm-7-0``; HIP runtime, kernels by hipRTC);
  CuPy exposes HIP under the same ``cupy.cuda.runtime`` names, and HIP keeps CUDA's flag values
  and peer-access error codes used here;
* ``engines.gpu.fake.FakeRuntime``: host memory and Python kernels, timed by a virtual clock, for
  CPU tests of the whole engine.

This module is the one place linkscope imports CuPy: :func:`cupy_module` (engines, comm, results
and ``linkscope env`` call it). Nothing is imported at module import time.
"""
from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any, Protocol

from ...errors import BackendUnavailable, KernelCompileError, MeasurementError
from ...platforms import of_cupy_build, of_runtime, vendor_of_runtime

HOST_ALLOC_PORTABLE = 1
HOST_ALLOC_MAPPED = 2
HOST_REGISTER_PORTABLE = 1
HOST_REGISTER_MAPPED = 2
EVENT_DISABLE_TIMING = 2
MEMCPY_DEFAULT = 4
ERROR_PEER_ACCESS_ALREADY_ENABLED = 704  # cudaError / hipError: same value
ERROR_PEER_ACCESS_NOT_ENABLED = 705

VENDOR_OF_PLATFORM = vendor_of_runtime()  # CuPy build -> vendor, from the platform table

def cupy_module(name: str = "cupy") -> Any:
    """CuPy (or one of its submodules, ``cupy.cuda.nccl``, ``cupyx``), imported here and only here.
    Raises ImportError (or CuPy's own error when its GPU libraries are missing) like ``import``."""
    return importlib.import_module(name)


class DeviceRuntime(Protocol):
    """What the GPU engine asks of a GPU runtime. Devices are runtime ordinals; pointers are ints;
    streams are objects with ``ptr`` and ``synchronize()``; events are opaque handles."""

    platform: str  # "cuda" | "rocm" | "fake"
    vendor: str  # "nvidia" | "amd"

    def device_count(self) -> int: ...
    def properties(self, ordinal: int) -> dict[str, Any]: ...  # name, sm_count, pci_bus_id, gcn_arch, l2_cache_bytes
    def mem_get_info(self, ordinal: int) -> tuple[int, int]: ...
    def versions(self) -> str: ...
    def synchronize(self, ordinal: int) -> None: ...
    # memory
    def malloc(self, ordinal: int, size_bytes: int) -> int: ...
    def free(self, ordinal: int, ptr: int) -> None: ...
    def host_alloc(self, size_bytes: int, numa_user: bool = False) -> int: ...  # pinned, portable, mapped
    def malloc_uncached(self, ordinal: int, size_bytes: int) -> int: ...  # a peer's stores seen by a running kernel
    def wall_clock_khz(self, ordinal: int) -> int: ...  # rate of the kernels' AMD timer; 0 where unused
    def free_host(self, ptr: int) -> None: ...
    def host_register(self, ptr: int, size_bytes: int) -> None: ...
    def host_unregister(self, ptr: int) -> None: ...
    # streams and events
    def stream(self, ordinal: int) -> Any: ...
    def event_create(self, ordinal: int, timing: bool = True) -> Any: ...
    def event_record(self, event: Any, stream: Any) -> None: ...
    def event_elapsed_s(self, start: Any, end: Any) -> float: ...  # waits for ``end``
    def event_destroy(self, event: Any) -> None: ...
    def stream_wait_event(self, ordinal: int, stream: Any, event: Any) -> None: ...
    # copies
    def memcpy_async(self, ordinal: int, dst: int, src: int, size_bytes: int, stream: Any) -> None: ...
    def memcpy_peer_async(self, ordinal: int, dst: int, dst_ordinal: int, src: int, src_ordinal: int,
                          size_bytes: int, stream: Any) -> None: ...
    def memcpy(self, ordinal: int, dst: int, src: int, size_bytes: int) -> None: ...
    def memset_async(self, ordinal: int, ptr: int, value: int, size_bytes: int, stream: Any) -> None: ...
    # peer access
    def can_access_peer(self, accessor: int, owner: int) -> bool: ...
    def enable_peer(self, accessor: int, owner: int) -> None: ...  # already enabled: fine
    def disable_peer(self, accessor: int, owner: int) -> bool: ...  # True when it had been enabled
    # kernels
    def compile(self, source: str, options: Sequence[str], names: Sequence[str], ordinals: Sequence[int]) -> Any: ...
    def launch(self, module: Any, name: str, ordinal: int, stream: Any, grid: int, block: int, args: tuple) -> None: ...


class CupyRuntime:
    """``DeviceRuntime`` over CuPy (CUDA build or ROCm build: ``platform`` says which one is wanted;
    building it raises BackendUnavailable when CuPy is missing, is the other platform's build, or
    sees no device)."""

    def __init__(self, platform: str = "cuda") -> None:
        row = of_runtime(platform)  # ValueError for a runtime no platform has
        assert row.runtime_traits is not None, f"platform {row.key} names no runtime traits"
        self.platform = platform
        self.vendor = row.key
        self.traits = row.runtime_traits
        self.compiler = row.kernels.compiler if row.kernels is not None else platform
        wheel = row.cupy_wheel
        try:
            self.cp = cupy_module()
            self.rt = cupy_module("cupy.cuda.runtime")
        except Exception as exc:  # ImportError, or CuPy failing to find its GPU libraries
            raise BackendUnavailable(f"CuPy is not usable here: {exc}", hint=f"install {wheel}") from exc
        built = bool(getattr(self.rt, "is_hip", False))
        if built != self.traits.cupy_is_hip:
            other = of_cupy_build(built)
            raise BackendUnavailable(f"the installed CuPy is its {other.runtime_traits.api if other and other.runtime_traits else 'other'} "
                                     f"build; the {platform} engine needs {wheel}")
        try:
            count = int(self.rt.getDeviceCount())
        except Exception as exc:
            raise BackendUnavailable(f"no {self.traits.device_word} device usable: {exc}") from exc
        if count == 0:
            raise BackendUnavailable(f"no {self.traits.device_word} device visible")

    # ---- facts --------------------------------------------------------------------------------
    def _dev(self, ordinal: int) -> Any:
        return self.cp.cuda.Device(ordinal)

    def device_count(self) -> int:
        return int(self.rt.getDeviceCount())

    def properties(self, ordinal: int) -> dict[str, Any]:
        props = self.rt.getDeviceProperties(ordinal)
        name = props.get("name", b"")
        try:
            bus = self._dev(ordinal).pci_bus_id
        except Exception:
            bus = None
        arch = props.get("gcnArchName", b"")  # AMD only (e.g. gfx90a:sramecc+:xnack-)
        return {"name": name.decode() if isinstance(name, bytes) else str(name),
                "sm_count": int(props["multiProcessorCount"]), "pci_bus_id": bus,
                "gcn_arch": arch.decode() if isinstance(arch, bytes) else str(arch or ""),
                "l2_cache_bytes": int(props.get("l2CacheSize", 0) or 0)}

    def mem_get_info(self, ordinal: int) -> tuple[int, int]:
        with self._dev(ordinal):
            free, total = self.rt.memGetInfo()
        return int(free), int(total)

    def versions(self) -> str:
        return f"CuPy {self.cp.__version__}, {self.traits.api} runtime {self.rt.runtimeGetVersion()}"

    def synchronize(self, ordinal: int) -> None:
        with self._dev(ordinal):
            self._dev(ordinal).synchronize()

    # ---- memory -------------------------------------------------------------------------------
    def malloc(self, ordinal: int, size_bytes: int) -> int:
        with self._dev(ordinal):
            return int(self.rt.malloc(size_bytes))

    def free(self, ordinal: int, ptr: int) -> None:
        with self._dev(ordinal):
            self.rt.free(ptr)

    def host_alloc(self, size_bytes: int, numa_user: bool = False) -> int:
        """Pinned, portable, mapped host memory, with the flags the vendor adds (``RuntimeTraits``:
        on ROCm coherent, and with ``numa_user`` placed by the calling thread's NUMA policy)."""
        flags = HOST_ALLOC_PORTABLE | HOST_ALLOC_MAPPED | self.traits.host_alloc_flags(numa_user)
        return int(self.rt.hostAlloc(size_bytes, flags))

    def malloc_uncached(self, ordinal: int, size_bytes: int) -> int:
        """Device memory a kernel polling it sees a peer's stores in (the vendor's allocation where it
        needs one, ``RuntimeTraits.malloc_uncached``; else ordinary memory with volatile accesses)."""
        ptr = self.traits.malloc_uncached(self, ordinal, size_bytes)
        return self.malloc(ordinal, size_bytes) if ptr is None else ptr

    def wall_clock_khz(self, ordinal: int) -> int:
        """The rate (kHz) of the kernels' device timer where it needs one (ROCm), else 0."""
        return self.traits.wall_clock_khz(self, ordinal)

    def free_host(self, ptr: int) -> None:
        self.rt.freeHost(ptr)

    def host_register(self, ptr: int, size_bytes: int) -> None:
        self.rt.hostRegister(ptr, size_bytes, HOST_REGISTER_PORTABLE | HOST_REGISTER_MAPPED)

    def host_unregister(self, ptr: int) -> None:
        self.rt.hostUnregister(ptr)

    # ---- streams and events -------------------------------------------------------------------
    def stream(self, ordinal: int) -> Any:
        with self._dev(ordinal):
            return self.cp.cuda.Stream(non_blocking=True)

    def event_create(self, ordinal: int, timing: bool = True) -> Any:
        with self._dev(ordinal):
            return int(self.rt.eventCreateWithFlags(0 if timing else EVENT_DISABLE_TIMING))

    def event_record(self, event: Any, stream: Any) -> None:
        self.rt.eventRecord(event, int(stream.ptr))

    def event_elapsed_s(self, start: Any, end: Any) -> float:
        self.rt.eventSynchronize(end)
        return float(self.rt.eventElapsedTime(start, end)) / 1e3

    def event_destroy(self, event: Any) -> None:
        self.rt.eventDestroy(event)

    def stream_wait_event(self, ordinal: int, stream: Any, event: Any) -> None:
        with self._dev(ordinal):
            self.rt.streamWaitEvent(int(stream.ptr), event, 0)

    # ---- copies -------------------------------------------------------------------------------
    def memcpy_async(self, ordinal: int, dst: int, src: int, size_bytes: int, stream: Any) -> None:
        with self._dev(ordinal):
            self.rt.memcpyAsync(dst, src, size_bytes, MEMCPY_DEFAULT, int(stream.ptr))

    def memcpy_peer_async(self, ordinal: int, dst: int, dst_ordinal: int, src: int, src_ordinal: int,
                          size_bytes: int, stream: Any) -> None:
        with self._dev(ordinal):
            self.rt.memcpyPeerAsync(dst, dst_ordinal, src, src_ordinal, size_bytes, int(stream.ptr))

    def memcpy(self, ordinal: int, dst: int, src: int, size_bytes: int) -> None:
        with self._dev(ordinal):
            self.rt.memcpy(dst, src, size_bytes, MEMCPY_DEFAULT)

    def memset_async(self, ordinal: int, ptr: int, value: int, size_bytes: int, stream: Any) -> None:
        with self._dev(ordinal):
            self.rt.memsetAsync(ptr, value, size_bytes, int(stream.ptr))

    # ---- peer access --------------------------------------------------------------------------
    def can_access_peer(self, accessor: int, owner: int) -> bool:
        return bool(self.rt.deviceCanAccessPeer(accessor, owner))

    def enable_peer(self, accessor: int, owner: int) -> None:
        with self._dev(accessor):
            try:
                self.rt.deviceEnablePeerAccess(owner)
            except self.rt.CUDARuntimeError as exc:
                if getattr(exc, "status", None) != ERROR_PEER_ACCESS_ALREADY_ENABLED:
                    raise MeasurementError(f"enabling peer access {accessor} -> {owner} failed: {exc}") from exc

    def disable_peer(self, accessor: int, owner: int) -> bool:
        with self._dev(accessor):
            try:
                self.rt.deviceDisablePeerAccess(owner)
                return True
            except self.rt.CUDARuntimeError as exc:
                if getattr(exc, "status", None) != ERROR_PEER_ACCESS_NOT_ENABLED:
                    raise MeasurementError(f"disabling peer access {accessor} -> {owner} failed: {exc}") from exc
                return False

    # ---- kernels ------------------------------------------------------------------------------
    def compile(self, source: str, options: Sequence[str], names: Sequence[str], ordinals: Sequence[int]) -> Any:
        """Compile (NVRTC or hipRTC) and load every kernel on every ordinal now (loading syncs the
        device, so it must never happen inside a timed region)."""
        module = self.cp.RawModule(code=source, options=tuple(options), backend="nvrtc")
        compiler = self.compiler
        for ordinal in ordinals:
            with self._dev(ordinal):
                for name in names:
                    try:
                        fn = module.get_function(name)
                        _ = fn.num_regs  # forces compile + module load on this device, now
                    except Exception as exc:  # CuPy's CompileException or a driver error while loading
                        log = exc.dump() if hasattr(exc, "dump") else str(exc)
                        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                        raise KernelCompileError(f"cannot build kernel {name!r} ({compiler}) for device {ordinal}: {first}",
                                                 source=source, options=tuple(options), log=str(log)) from exc
        return module

    def launch(self, module: Any, name: str, ordinal: int, stream: Any, grid: int, block: int, args: tuple) -> None:
        fn = module.get_function(name)
        with self._dev(ordinal), stream:
            fn((grid,), (block,), args)


def _cuda_version_text(value: int) -> str:
    """CUDA encodes 12.4 as 12040."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def cupy_version() -> str:
    """The run context's ``cupy`` version (the platform table's version probes)."""
    return str(cupy_module().__version__)


def cuda_runtime_version() -> str:
    return _cuda_version_text(int(cupy_module("cupy.cuda.runtime").runtimeGetVersion()))


def cuda_driver_api_version() -> str:
    return _cuda_version_text(int(cupy_module("cupy.cuda.runtime").driverGetVersion()))


def nccl_version() -> str:
    """``cupy.cuda.nccl.get_version()``: 21803 -> 2.18.3 (older 4-digit codes: 2708 -> 2.7.8)."""
    value = int(cupy_module("cupy.cuda.nccl").get_version())
    if value >= 10000:
        return f"{value // 10000}.{(value % 10000) // 100}.{value % 100}"
    return f"{value // 1000}.{(value % 1000) // 100}.{value % 100}"


__all__ = ["VENDOR_OF_PLATFORM", "CupyRuntime", "DeviceRuntime", "cupy_module"]
