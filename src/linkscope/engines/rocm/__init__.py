"""The ROCm engine: the one GPU engine (engines/gpu) over CuPy's ROCm build (HIP runtime, hipRTC
kernels), for AMD Instinct GPUs and GCDs (MI250X: one GCD = one device).

Methods are the method table's AMD meanings: ``ce`` is a runtime peer copy done by an SDMA engine;
``ce-blit`` is the same call in a runtime started with ``HSA_ENABLE_SDMA=0`` (ROCr then copies with
blit kernels on the CUs); ``sm-push`` / ``sm-pull`` are linkscope's own copy kernel on the CUs.
``HSA_ENABLE_SDMA`` is read when the HIP runtime starts, so one process can only do one of the two:
the engine records the value it started with (``process_env``) and the runner runs methods that
need another value in a child process (``measure.child``).

Not run on AMD hardware by us (no AMD GPU was available): tested on CPU through the fake runtime;
see docs/amd.md.
"""
from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...errors import BackendUnavailable
from ...patterns.methods import CE_NOPEER, CE_READ, get_method
from ...vendors.amd import parse_rocm_version
from ..gpu.engine import GpuEngine
from ..gpu.ops import SmLaunch

__all__ = ["RocmEngine", "SmLaunch", "probe"]

#: Environment variables that change how the HIP runtime copies (recorded with the engine).
ENV_KEYS = ("HSA_ENABLE_SDMA", "HSA_ENABLE_PEER_SDMA", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
            "HSA_FORCE_FINE_GRAIN_PCIE", "ROC_P2P_SDMA_SIZE", "GPU_MAX_HW_QUEUES")
#: ROCclr sends a copy between two devices of at most this many KiB to a blit kernel, not SDMA
#: (clr rocclr/utils/flags.hpp:220 ``ROC_P2P_SDMA_SIZE`` default 1024, "the minimum size in KB for
#: P2P transfer with SDMA"; rocclr/device/rocm/rocblit.cpp:2249 ``sizeIn[0] > sdma_p2p_threshold_``).
#: No per-call kind overrides it: hipMemcpyDeviceToDeviceNoCU is checked only after the P2P case
#: (hipamd/src/hip_memory.cpp:484-490).
P2P_SDMA_MIN_KIB_DEFAULT = 1024
#: HIP gives each device this many hardware queues; more streams share them (clr
#: rocclr/utils/flags.hpp:152 ``GPU_MAX_HW_QUEUES`` default 4; TransferBench warns past it,
#: src/TransferBench.cpp:498-506).
HW_QUEUES_DEFAULT = 4


def _int_env(env: dict[str, str], key: str, default: int) -> int:
    try:
        return int(env.get(key, default))
    except ValueError:
        return default


#: From this ROCm release a peer copy of at most ROC_P2P_SDMA_SIZE KiB is always a blit kernel (clr
#: rocm-6.2.0+ ``rocclr/device/rocm/rocblit.cpp`` copyBuffer, rocm-6.2.2:2258-2264:
#: ``sizeIn[0] > sdma_p2p_threshold_`` or a kernel limited to 16 workgroups). Before it (rocm-5.7.0
#: rocblit.cpp:2232, rocm-6.0.0:2243, rocm-6.1.2:2289) a small copy becomes a kernel only when a
#: kernel dispatch is pending on that queue: ``p2p = size > ROC_P2P_SDMA_SIZE*Ki || !IsPendingDispatch()``.
SMALL_P2P_ALWAYS_KERNEL_FROM = (6, 2)


def rocm_runtime_notes(method: str, ops: Sequence[Any], process_env: dict[str, str],
                       rocm_version: tuple[int, int] | None = None) -> list[str]:
    """Where HIP does something else than the method's name says, for one (plan, size):

    * a runtime copy between two GPUs of at most ROC_P2P_SDMA_SIZE KiB (1 MiB by default) is done by
      a blit kernel on the CUs, not by SDMA, from ROCm 6.2 always; in 5.7-6.1 only when a kernel
      dispatch is pending on the copy's queue (``SMALL_P2P_ALWAYS_KERNEL_FROM``), which the note says
      instead (unknown version: both rules are named): ``ce``, ``ce-read``, ``ce-write``,
      ``ce-nopeer`` rows at those sizes (``ce-blit`` is a kernel at every size);
    * ``ce-read``: above the threshold ROCr's source-GPU SDMA engine pushes (rocr-runtime
      runtime.cpp:574); at or below it the blit kernel runs on the queue that issued it, the
      destination's: a pull;
    * more streams on one device than GPU_MAX_HW_QUEUES (4) share hardware queues, so "concurrent"
      transfers may run one after another."""
    notes: list[str] = []
    info = get_method(method)
    sdma_off = process_env.get("HSA_ENABLE_SDMA") == "0" or bool(info.env_for("amd"))
    threshold = _int_env(process_env, "ROC_P2P_SDMA_SIZE", P2P_SDMA_MIN_KIB_DEFAULT) * 1024
    if info.unit == "copy-engine" and not sdma_off:
        small = sorted({op.size_bytes for op in ops if isinstance(op.src_place, int) and isinstance(op.dst_place, int)
                        and op.src_place != op.dst_place and op.size_bytes <= threshold})
        limit = f"<= {threshold // 1024} KiB"
        how = "(ROC_P2P_SDMA_SIZE; set ROC_P2P_SDMA_SIZE=0 before start to force SDMA)"
        if small and rocm_version is not None and rocm_version >= SMALL_P2P_ALWAYS_KERNEL_FROM:
            notes.append(f"runtime chose a kernel: HIP {rocm_version[0]}.{rocm_version[1]} copies between GPUs of "
                         f"{limit} with a blit kernel on the CUs, not SDMA {how}: {method} at this size is a kernel copy")
        elif small and rocm_version is not None:
            notes.append(f"runtime may choose a kernel: HIP {rocm_version[0]}.{rocm_version[1]} (before 6.2) copies "
                         f"between GPUs of {limit} with a blit kernel only when a kernel dispatch is pending on the "
                         f"copy's queue, else with SDMA (clr rocblit.cpp:2289 at rocm-6.1.2) {how}")
        elif small:
            notes.append(f"runtime chose a kernel (ROCm 6.2+) or may have (5.7-6.1: only with a kernel dispatch "
                         f"pending on the queue): HIP copies between GPUs of {limit} with a blit kernel {how}; "
                         "the ROCm version was not found (ROCM_PATH/.info/version)")
    if method == CE_READ.key and not sdma_off:
        peer = [op.size_bytes for op in ops if isinstance(op.src_place, int) and isinstance(op.dst_place, int)
                and op.src_place != op.dst_place]
        if peer and max(peer) <= threshold:
            notes.append("ce-read on ROCm at this size: a blit kernel on the queue that issued the copy, the "
                         "destination's, reads the source: a pull (the source's SDMA engine pushes only above "
                         f"{threshold // 1024} KiB)")
        else:
            notes.append("ce-read on ROCm: ROCr copies between two GPUs with the source GPU's engine whichever stream "
                         "issues the copy (rocr-runtime core/runtime/runtime.cpp:574): this row is the source pushing, "
                         "like ce-write; only its stream ordering differs")
    if method == CE_NOPEER.key:
        notes.append("ce-nopeer on ROCm: HIP picks the copy path by whether the GPUs can reach each other "
                     "(ROCclr p2pAgents, rocvirtual.cpp:2155-2170), not by hipDeviceEnablePeerAccess; where they "
                     "can (xGMI), this is ce's copy, not a host-staged one")
    queues = _int_env(process_env, "GPU_MAX_HW_QUEUES", HW_QUEUES_DEFAULT)
    per_device = Counter(lane.ordinal for op in ops for lane in {id(l): l for l in op.lanes}.values())
    crowded = {d: n for d, n in sorted(per_device.items()) if n > queues}
    if crowded:
        worst = max(crowded.values())
        notes.append(f"{', '.join(f'{n} streams on device {d}' for d, n in crowded.items())} share "
                     f"GPU_MAX_HW_QUEUES={queues} hardware queues: concurrent transfers may serialise "
                     f"(start with GPU_MAX_HW_QUEUES={worst} to give each its own)")
    return notes
KFD_TOPOLOGY = "/sys/class/kfd/kfd/topology/nodes"


def probe() -> str | None:
    """Why the ROCm engine cannot run here (one line), or None. Cheap: no HIP runtime is started
    unless an AMD GPU node and CuPy's ROCm build are both present."""
    amd = False
    try:
        for node in os.listdir(KFD_TOPOLOGY):
            try:
                with open(os.path.join(KFD_TOPOLOGY, node, "properties")) as fh:
                    props = dict(line.split(None, 1) for line in fh if " " in line)
            except OSError:
                continue
            if props.get("simd_count", "0").strip() not in ("0", ""):
                amd = True
                break
    except OSError:
        return "no AMD GPU here (no amdgpu/KFD device: /sys/class/kfd is absent)"
    if not amd:
        return "no AMD GPU here (KFD lists CPU nodes only)"
    try:
        from ..gpu.runtime import cupy_module

        rt = cupy_module("cupy.cuda.runtime")
    except Exception as exc:
        return f"AMD GPU present but CuPy's ROCm build is not importable ({type(exc).__name__}: {exc}); pip install 'linkscope[rocm7]'"
    if not getattr(rt, "is_hip", False):
        return "AMD GPU present but the installed CuPy is its CUDA build; pip install 'linkscope[rocm7]' (cupy-rocm-7-0)"
    return None


class RocmEngine(GpuEngine):
    """GpuEngine over ``CupyRuntime("rocm")``; ``runtime`` may be given (tests pass a fake)."""

    def __init__(self, topology: object | None = None, *, runtime: Any = None, **kwargs: Any) -> None:
        if runtime is None:
            why = probe()
            if why:
                raise BackendUnavailable(f"the rocm engine cannot run here: {why}", hint="use --backend sim")
            from ..gpu.runtime import CupyRuntime

            runtime = CupyRuntime("rocm")
        env = {k: os.environ[k] for k in ENV_KEYS if k in os.environ}
        super().__init__(runtime, topology, name="rocm", process_env=env,
                         child_factory=("linkscope.engines.rocm:RocmEngine", {}), **kwargs)

    def runtime_notes(self, method: str, ops: Sequence[Any]) -> list[str]:
        return rocm_runtime_notes(method, ops, self.process_env, self.rocm_version)

    @property
    def rocm_version(self) -> tuple[int, int] | None:
        """(major, minor) of the ROCm install (``ROCM_PATH``/.info/version), None when unknown."""
        from pathlib import Path

        from .install import rocm_version

        return parse_rocm_version(rocm_version(Path(os.environ.get("ROCM_PATH") or "/opt/rocm")))

    def chase_cache_bytes(self, ordinal: int) -> int:
        """A GCD's L2 caches coarse-grained peer and host memory (8 MB per MI250X GCD, the CDNA2
        white paper; the runtime's l2CacheSize is used): the chase is sized past it."""
        return int(self.rt.properties(ordinal).get("l2_cache_bytes", 0) or 0)
