"""NVIDIA's pure pieces for its platform row: the CUDA runtime's traits under CuPy and the CUDA
kernel dialect (NVRTC). Nothing here imports CuPy; ``engines/gpu/runtime`` passes its handles in."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: The nanosecond timer (``%globaltimer``) and the cache hints of the copy and chase kernels:
#: L2-only loads (``ld.global.cg``) keep peer lines out of the reader's L1, streaming stores.
CUDA_PRELUDE = r"""
typedef unsigned long long u64;
typedef unsigned int u32;

__device__ __forceinline__ u64 global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define LOAD_STREAM(p) __ldcg(p)
#define STORE_STREAM(p, v) __stcs((p), (v))
#define LOAD_CHASE(p) __ldcg(p)
"""


class CudaRuntimeTraits:
    """What differs on CUDA in ``CupyRuntime``: nothing beyond the portable, mapped pinned memory."""

    api = "CUDA"
    device_word = "CUDA"
    cupy_is_hip = False
    fake_arch = ""  # CuPy's CUDA build reports no gcnArchName

    def host_alloc_flags(self, numa_user: bool) -> int:
        return 0

    def malloc_uncached(self, runtime: Any, ordinal: int, size_bytes: int) -> int | None:
        """None: ordinary memory with volatile accesses and a system fence is enough on CUDA."""
        return None

    def wall_clock_khz(self, runtime: Any, ordinal: int) -> int:
        return 0  # %globaltimer is in ns


class CudaKernelDialect:
    """NVRTC's CUDA C: the prelude above, plus the Hopper bulk-copy (TMA) kernels."""

    compiler = "NVRTC"
    prelude = CUDA_PRELUDE
    bulk_copies = True

    def timer_options(self, rt: Any, ordinals: Sequence[int]) -> tuple[str, ...]:
        return ()  # %globaltimer needs no rate


RUNTIME = CudaRuntimeTraits()
KERNELS = CudaKernelDialect()
