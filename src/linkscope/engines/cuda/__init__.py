"""The CUDA engine: every transfer method on real NVIDIA GPUs, one process driving all local GPUs.

The only package of linkscope that imports CuPy, and only inside functions: importing this
package costs nothing on a machine without CuPy; building ``CudaEngine`` raises
``BackendUnavailable`` there.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["CudaEngine", "METHOD_KEYS", "SmLaunch"]

if TYPE_CHECKING:
    from .engine import CudaEngine as CudaEngine


def __getattr__(name: str) -> Any:
    if name in ("CudaEngine", "METHOD_KEYS", "METHODS"):
        from . import engine

        return getattr(engine, name)
    if name == "SmLaunch":
        from .ops import SmLaunch

        return SmLaunch
    raise AttributeError(name)
