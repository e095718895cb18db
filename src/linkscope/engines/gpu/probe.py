"""Cheap facts about the CUDA side (through engines.gpu.runtime's one CuPy import), without building an engine: whether CuPy
and a GPU are usable (never raises for "not installed"), and the peer-access matrix (cudaDeviceCanAccessPeer)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str


def probe() -> Availability:
    from .runtime import cupy_module

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


def peer_access_matrix() -> list[list[bool]]:
    """``m[i][j]``: CUDA device i can access device j's memory (True on the diagonal)."""
    from .runtime import cupy_module

    runtime = cupy_module("cupy.cuda.runtime")

    n = int(runtime.getDeviceCount())
    return [[i == j or bool(runtime.deviceCanAccessPeer(i, j)) for j in range(n)] for i in range(n)]


def peer_waiver(a: int, b: int, matrix: list[list[bool]]) -> str | None:
    """The waiver reason for a GPU pair without peer access in either direction, else None."""
    if matrix[a][b] and matrix[b][a]:
        return None
    return f"no peer access between GPU {a} and GPU {b}"
