"""AMD's pure pieces for its platform row: the HIP runtime's traits under CuPy's ROCm build (the
calls CuPy does not expose, through ``libamdhip64``) and the HIP kernel dialect (hipRTC). Nothing
here imports CuPy; ``engines/gpu/runtime`` passes its handles in."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import ConfigError, MeasurementError

HIP_HOST_MALLOC_COHERENT = 0x40000000  # fine-grained: the GPU sees host stores while it polls
HIP_HOST_MALLOC_NUMA_USER = 0x20000000  # hipHostMalloc: honour the calling thread's NUMA policy
HIP_DEVICE_MALLOC_UNCACHED = 0x3  # hipExtMallocWithFlags: fine-grained and uncached (hip_runtime_api.h)
#: hipDeviceAttributeWallClockRate: the AMD-specific attribute after hipDeviceAttributeFineGrainSupport
#: (10016 in hip_runtime_api.h, counted from hipDeviceAttributeAmdSpecificBegin = 10000; the test
#: checks it against the installed HIP header); in kHz, the rate ``wall_clock64()`` ticks at.
HIP_DEVICE_ATTRIBUTE_WALL_CLOCK_RATE = 10017

WALL_CLOCK_KHZ_MI300 = 100_000
WALL_CLOCK_KHZ_GFX9 = 25_000
WALL_CLOCK_KHZ_VEGA10 = 27_000


def parse_rocm_version(text: str | None) -> tuple[int, int] | None:
    """(major, minor) of ``6.1.2`` / ``6.1.2-112``; None when unknown.

    >>> parse_rocm_version("6.1.2-112"), parse_rocm_version(None)
    ((6, 1), None)
    """
    if not text:
        return None
    parts = text.split("-")[0].split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


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


# wall_clock64() counts at a constant rate that differs by architecture: 25 MHz on gfx9 up to gfx90a
# (MI200; 27 MHz on gfx900), 100 MHz on gfx94x (MI300) (wall_clock_khz_for_arch names the
# sources). The engine passes the device's hipDeviceAttributeWallClockRate as -DWALL_CLOCK_KHZ
# (timer_options); without it the source does not compile, so no default can be wrong.
# hipRTC includes hip/hip_runtime.h itself; an offline hipcc needs HIP_OFFLINE_INCLUDE put first.
HIP_OFFLINE_INCLUDE = "#include <hip/hip_runtime.h>\n"
HIP_PRELUDE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;
#ifndef WALL_CLOCK_KHZ
#error "WALL_CLOCK_KHZ (hipDeviceAttributeWallClockRate of the device, kHz) must be defined"
#endif
__device__ __forceinline__ u64 global_ns() { return (u64)((double)wall_clock64() * (1000000.0 / WALL_CLOCK_KHZ)); }
#define LOAD_STREAM(p) (*(p))
#define STORE_STREAM(p, v) (*(p) = (v))
#define LOAD_CHASE(p) (*(const volatile u64*)(p))
"""


class HipRuntimeTraits:
    """What differs on ROCm in ``CupyRuntime``: coherent (fine-grained) pinned host memory, uncached
    device memory for polled flags, and the wall-clock rate of the kernels' timer."""

    api = "HIP"
    device_word = "AMD"
    cupy_is_hip = True
    fake_arch = "gfx90a:sramecc+:xnack-"  # an MI250X GCD, as CuPy's ROCm build reports its gcnArchName

    def host_alloc_flags(self, numa_user: bool) -> int:
        """Coherent, and with ``numa_user`` placed by the calling thread's NUMA policy
        (hipHostMallocNumaUser, as TransferBench allocates its host buffers: src/TransferBench.cpp:1388-1396)."""
        return HIP_HOST_MALLOC_COHERENT | (HIP_HOST_MALLOC_NUMA_USER if numa_user else 0)

    def _hip(self, runtime: Any) -> Any:
        """The HIP runtime library CuPy's ROCm build uses, for the calls CuPy does not expose (kept
        on ``runtime``)."""
        import ctypes

        if getattr(runtime, "_libhip", None) is None:
            runtime._libhip = ctypes.CDLL("libamdhip64.so", mode=ctypes.RTLD_GLOBAL)
        return runtime._libhip

    def malloc_uncached(self, runtime: Any, ordinal: int, size_bytes: int) -> int | None:
        """``hipExtMallocWithFlags(hipDeviceMallocUncached)`` (TransferBench src/TransferBench.cpp:1431,
        RCCL's flags likewise); plain ``hipMalloc`` memory is coarse-grained and may be cached."""
        import ctypes

        ptr = ctypes.c_void_p()
        with runtime._dev(ordinal):
            rc = self._hip(runtime).hipExtMallocWithFlags(ctypes.byref(ptr), ctypes.c_size_t(size_bytes),
                                                          ctypes.c_uint(HIP_DEVICE_MALLOC_UNCACHED))
        if rc != 0 or not ptr.value:
            raise MeasurementError(f"hipExtMallocWithFlags(hipDeviceMallocUncached) of {size_bytes} bytes on "
                                   f"device {ordinal} failed (hipError {rc})")
        return int(ptr.value)

    def wall_clock_khz(self, runtime: Any, ordinal: int) -> int:
        """hipDeviceAttributeWallClockRate (kHz), else the rate the GPU's architecture is known to
        have (``wall_clock_khz_for_arch``)."""
        try:
            value = int(runtime.rt.deviceGetAttribute(HIP_DEVICE_ATTRIBUTE_WALL_CLOCK_RATE, ordinal))
        except Exception:
            value = 0
        return value if value > 0 else wall_clock_khz_for_arch(runtime.properties(ordinal).get("gcn_arch", ""))


class HipKernelDialect:
    """hipRTC's HIP C++: the prelude above (``wall_clock64`` timer); no bulk-copy kernels."""

    compiler = "hipRTC"
    prelude = HIP_PRELUDE
    bulk_copies = False

    def timer_options(self, rt: Any, ordinals: Sequence[int]) -> tuple[str, ...]:
        """``-DWALL_CLOCK_KHZ=<rate>``: every device's hipDeviceAttributeWallClockRate (one module
        serves all devices, so they must agree)."""
        rates = {o: int(rt.wall_clock_khz(o)) for o in ordinals}
        if len(set(rates.values())) > 1:
            raise ConfigError(f"devices tick at different wall-clock rates (kHz by device: {rates}): one kernel module "
                              "cannot time them all", hint="select devices of one kind (HIP_VISIBLE_DEVICES)")
        rate = next(iter(rates.values()), 0)
        if rate <= 0:
            raise ConfigError("the HIP runtime reports no wall-clock rate: device-side times cannot be converted")
        return (f"-DWALL_CLOCK_KHZ={rate}",)




RUNTIME = HipRuntimeTraits()
KERNELS = HipKernelDialect()
