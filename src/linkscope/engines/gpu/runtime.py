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
from ...platforms import by_key, vendor_of_runtime

HOST_ALLOC_PORTABLE = 1
HOST_ALLOC_MAPPED = 2
HIP_HOST_MALLOC_COHERENT = 0x40000000  # fine-grained: the GPU sees host stores while it polls
HIP_HOST_MALLOC_NUMA_USER = 0x20000000  # hipHostMalloc: honour the calling thread's NUMA policy
HIP_DEVICE_MALLOC_UNCACHED = 0x3  # hipExtMallocWithFlags: fine-grained and uncached (hip_runtime_api.h)
#: hipDeviceAttributeWallClockRate: the AMD-specific attribute after hipDeviceAttributeFineGrainSupport
#: (10016 in hip_runtime_api.h, counted from hipDeviceAttributeAmdSpecificBegin = 10000; the test
#: checks it against the installed HIP header); in kHz, the rate ``wall_clock64()`` ticks at.
HIP_DEVICE_ATTRIBUTE_WALL_CLOCK_RATE = 10017
HOST_REGISTER_PORTABLE = 1
HOST_REGISTER_MAPPED = 2
EVENT_DISABLE_TIMING = 2
MEMCPY_DEFAULT = 4
ERROR_PEER_ACCESS_ALREADY_ENABLED = 704  # cudaError / hipError: same value
ERROR_PEER_ACCESS_NOT_ENABLED = 705

VENDOR_OF_PLATFORM = vendor_of_runtime()  # CuPy build -> vendor, from the platform table

WALL_CLOCK_KHZ_MI300 = 100_000
WALL_CLOCK_KHZ_GFX9 = 25_000
WALL_CLOCK_KHZ_VEGA10 = 27_000


def wall_clock_khz_for_arch(gcn_arch: str) -> int:
    """The rate (kHz) ``wall_clock64()`` ticks at on an AMD architecture, for runtimes that do not
    answer hipDeviceAttributeWallClockRate (clr reads it from ROCr's
    ``HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY`` and leaves 0 where that query fails: clr rocm-6.2.2
    ``rocclr/device/rocm/rocdevice.cpp:1258-1264``; before ROCm 5.4 the attribute failed outright,
    ROCm/hip#3099):

    * 100 MHz: gfx940/941/942 (MI300) and gfx10/11/12. RCCL takes every ``gfx94*`` as 100 MHz
      (rocm-5.7.0 ``src/init.cc:178-181``: ``gcnArch/10 == 94``; rocm-6.0.0 to rocm-6.2.2
      ``src/misc/archinfo.cc:63-69``: prefix ``gfx94``), as does TransferBench
      (``src/include/EnvVars.hpp:550-567``). LLVM libc's table first put gfx940 with the 25 MHz
      parts (llvm-project ``libc/src/time/gpu/time_utils.h`` while it used ``namespace
      __llvm_libc``, 2023: ``__gfx940__`` listed with gfx900-gfx90c) and later moved gfx940/941/942
      to 100 MHz (same file under ``LIBC_NAMESPACE``, beside ``__GFX10__``..``__GFX12__``); it now
      has no table (the runtime sets ``__llvm_libc_clock_freq``; commit 2744685e). The LLVM release
      tags of the two table versions were not read (the repository is too large to fetch here).
      gfx950 (MI350) is taken as 100 MHz: a belief.
    * 27 MHz: gfx900 (Vega 10): the LLVM table's comment ("Vega 10 ... is actually 27 Mhz") and
      ROCm/hip#3099 (gfx900, ROCm 5.3: 27000 kHz expected from the attribute).
    * 25 MHz: the other gfx9 parts up to gfx90a (MI200).

    >>> [wall_clock_khz_for_arch(a) for a in ("gfx90a:sramecc+:xnack-", "gfx942", "gfx900")]
    [25000, 100000, 27000]
    """
    arch = (gcn_arch or "").split(":")[0].strip().lower()
    if arch in ("gfx940", "gfx941", "gfx942", "gfx950") or arch.startswith(("gfx10", "gfx11", "gfx12")):
        return WALL_CLOCK_KHZ_MI300
    if arch == "gfx900":
        return WALL_CLOCK_KHZ_VEGA10
    if arch.startswith("gfx9"):
        return WALL_CLOCK_KHZ_GFX9
    raise MeasurementError(f"the wall-clock rate of AMD architecture {gcn_arch!r} is not known and the HIP "
                           "runtime did not report hipDeviceAttributeWallClockRate: kernel times cannot be trusted")


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
        if platform not in VENDOR_OF_PLATFORM:
            raise ValueError(f"platform must be cuda or rocm, got {platform!r}")
        self.platform = platform
        self.vendor = VENDOR_OF_PLATFORM[platform]
        wheel = by_key(self.vendor).cupy_wheel
        try:
            self.cp = cupy_module()
            self.rt = cupy_module("cupy.cuda.runtime")
        except Exception as exc:  # ImportError, or CuPy failing to find its GPU libraries
            raise BackendUnavailable(f"CuPy is not usable here: {exc}", hint=f"install {wheel}") from exc
        is_hip = bool(getattr(self.rt, "is_hip", False))
        if is_hip != (platform == "rocm"):
            built = "ROCm (HIP)" if is_hip else "CUDA"
            raise BackendUnavailable(f"the installed CuPy is its {built} build; the {platform} engine needs {wheel}")
        try:
            count = int(self.rt.getDeviceCount())
        except Exception as exc:
            raise BackendUnavailable(f"no {'AMD' if is_hip else 'CUDA'} device usable: {exc}") from exc
        if count == 0:
            raise BackendUnavailable(f"no {'AMD' if is_hip else 'CUDA'} device visible")

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
        return f"CuPy {self.cp.__version__}, {'HIP' if self.platform == 'rocm' else 'CUDA'} runtime {self.rt.runtimeGetVersion()}"

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
        """Pinned, portable, mapped host memory. On ROCm, coherent (fine-grained), and with
        ``numa_user`` placed by the calling thread's NUMA policy (hipHostMallocNumaUser, as
        TransferBench allocates its host buffers: src/TransferBench.cpp:1388-1396)."""
        flags = HOST_ALLOC_PORTABLE | HOST_ALLOC_MAPPED
        if self.platform == "rocm":
            flags |= HIP_HOST_MALLOC_COHERENT | (HIP_HOST_MALLOC_NUMA_USER if numa_user else 0)
        return int(self.rt.hostAlloc(size_bytes, flags))

    def _hip(self) -> Any:
        """The HIP runtime library CuPy's ROCm build uses, for the calls CuPy does not expose."""
        import ctypes

        if getattr(self, "_libhip", None) is None:
            self._libhip = ctypes.CDLL("libamdhip64.so", mode=ctypes.RTLD_GLOBAL)
        return self._libhip

    def malloc_uncached(self, ordinal: int, size_bytes: int) -> int:
        """Device memory a kernel polling it sees a peer's stores in: on ROCm
        ``hipExtMallocWithFlags(hipDeviceMallocUncached)`` (TransferBench src/TransferBench.cpp:1431,
        RCCL's flags likewise); plain ``hipMalloc`` memory is coarse-grained and may be cached.
        On CUDA, ordinary memory with volatile accesses and a system fence is enough."""
        if self.platform != "rocm":
            return self.malloc(ordinal, size_bytes)
        import ctypes

        ptr = ctypes.c_void_p()
        with self._dev(ordinal):
            rc = self._hip().hipExtMallocWithFlags(ctypes.byref(ptr), ctypes.c_size_t(size_bytes),
                                                   ctypes.c_uint(HIP_DEVICE_MALLOC_UNCACHED))
        if rc != 0 or not ptr.value:
            raise MeasurementError(f"hipExtMallocWithFlags(hipDeviceMallocUncached) of {size_bytes} bytes on "
                                   f"device {ordinal} failed (hipError {rc})")
        return int(ptr.value)

    def wall_clock_khz(self, ordinal: int) -> int:
        """hipDeviceAttributeWallClockRate (kHz) on ROCm, else the rate the GPU's architecture is
        known to have (``kernels.wall_clock_khz_for_arch``); 0 on CUDA (%globaltimer is in ns)."""
        if self.platform != "rocm":
            return 0
        try:
            value = int(self.rt.deviceGetAttribute(HIP_DEVICE_ATTRIBUTE_WALL_CLOCK_RATE, ordinal))
        except Exception:
            value = 0
        return value if value > 0 else wall_clock_khz_for_arch(self.properties(ordinal).get("gcn_arch", ""))

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
        compiler = "hipRTC" if self.platform == "rocm" else "NVRTC"
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


__all__ = ["VENDOR_OF_PLATFORM", "CupyRuntime", "DeviceRuntime", "cupy_module", "wall_clock_khz_for_arch"]
