"""The CUDA engine: the one GPU engine (engines/gpu) over CuPy on CUDA.

Importing this package costs nothing on a machine without CuPy; building ``CudaEngine`` raises
``BackendUnavailable`` there (CuPy is imported only by ``engines.gpu.runtime``).
"""
from __future__ import annotations

import os
from typing import Any

from ..gpu.engine import GpuEngine
from ..gpu.ops import SmLaunch

__all__ = ["CudaEngine", "SmLaunch"]

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
