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
from typing import Any

from ...errors import BackendUnavailable
from ..gpu.engine import GpuEngine
from ..gpu.ops import SmLaunch

__all__ = ["RocmEngine", "SmLaunch", "probe"]

#: Environment variables that change how the HIP runtime copies (recorded with the engine).
ENV_KEYS = ("HSA_ENABLE_SDMA", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HSA_FORCE_FINE_GRAIN_PCIE")
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
