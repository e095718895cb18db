"""The CUDA engine: the one GPU engine (engines/gpu) over CuPy on CUDA.

Importing this package costs nothing on a machine without CuPy; building ``CudaEngine`` raises
``BackendUnavailable`` there (CuPy is imported only by ``engines.gpu.runtime``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ..gpu.engine import GpuEngine
from ..gpu.ops import SmLaunch

__all__ = ["CudaEngine", "SmLaunch", "probe"]

#: Environment variables that change how the CUDA runtime copies (recorded with the engine).
ENV_KEYS = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_MAX_CONNECTIONS")


class CudaEngine(GpuEngine):
    """GpuEngine over ``CupyRuntime("cuda")``; ``runtime`` may be given (tests pass a fake)."""

    def __init__(self, topology: object | None = None, *, runtime: Any = None, **kwargs: Any) -> None:
        if runtime is None:
            from ..gpu.runtime import CupyRuntime

            runtime = CupyRuntime("cuda")
        # what this process's runtime started with (a fact of the process, read once here)
        env = {k: os.environ[k] for k in ENV_KEYS if k in os.environ}
        super().__init__(runtime, topology, name="cuda", process_env=env,
                         child_factory=("linkscope.engines.cuda:CudaEngine", {}), **kwargs)


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str


def probe() -> Availability:
    """Whether CuPy's CUDA build and a CUDA GPU are usable here (the NVIDIA row's ``engine_probe``),
    without building an engine; never raises for "not installed"."""
    from ..gpu.runtime import cupy_module

    try:
        cupy = cupy_module()
        runtime = cupy_module("cupy.cuda.runtime")
    except Exception as exc:
        return Availability(False, f"CuPy not importable: {exc}")
    try:
        n = int(runtime.getDeviceCount())
    except Exception as exc:
        return Availability(False, f"CUDA runtime reports no usable device: {exc}")
    if getattr(runtime, "is_hip", False):
        return Availability(False, "the installed CuPy is its ROCm build (use --backend rocm)")
    if n == 0:
        return Availability(False, "no CUDA device visible")
    return Availability(True, f"{n} CUDA device{'s' if n != 1 else ''} (CuPy {cupy.__version__}, runtime {runtime.runtimeGetVersion()})")
