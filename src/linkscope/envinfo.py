"""``linkscope env``: versions and backend availability. Every probe returns a reason instead of
raising (CuPy's ``_eval_or_error`` idea): the report is for bug reports and must never crash."""
from __future__ import annotations

import platform
import shutil
import sys
from collections.abc import Callable
from typing import Any

from . import __version__, platforms


def _version_of(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return "not installed"


def _guard(name: str, probe: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        result = probe()
    except Exception as exc:
        return {"name": name, "ok": False, "reason": f"{type(exc).__name__}: {exc}".splitlines()[0]}
    return {"name": name, **result}


def cupy_row() -> dict[str, Any]:
    from .engines.gpu.runtime import cupy_module  # the one CuPy import

    try:
        cupy = cupy_module()
        runtime = cupy_module("cupy.cuda.runtime")
    except Exception as exc:
        return {"ok": False, "reason": f"CuPy not importable ({type(exc).__name__}: {exc})".splitlines()[0]}

    count = runtime.getDeviceCount()
    if count == 0:
        return {"ok": False, "reason": "CuPy is installed but no CUDA GPU is visible"}
    return {"ok": True, "version": f"CuPy {cupy.__version__}, CUDA runtime {runtime.runtimeGetVersion()}, {count} GPU(s)"}


def nccl_row() -> dict[str, Any]:
    from .engines.gpu.runtime import cupy_module

    try:
        nccl = cupy_module("cupy.cuda.nccl")
    except Exception as exc:
        return {"ok": False, "reason": f"cupy.cuda.nccl not importable ({type(exc).__name__})"}
    return {"ok": True, "version": f"NCCL {nccl.get_version()}"}


def _mpi() -> dict[str, Any]:
    try:
        import mpi4py

        mpi4py.rc.initialize = False
        mpi4py.rc.finalize = False
        from mpi4py import MPI
    except Exception as exc:
        return {"ok": False, "reason": f"mpi4py/MPI not usable ({type(exc).__name__}: {exc})".splitlines()[0]}
    library = MPI.Get_library_version().replace("\x00", "").splitlines()[0].strip()
    return {"ok": True, "version": f"mpi4py {mpi4py.__version__}; {library}"}


def rocm_smi_row() -> dict[str, Any]:
    for tool in ("amd-smi", "rocm-smi"):
        path = shutil.which(tool)
        if path:
            return {"ok": True, "version": f"{tool} at {path}"}
    return {"ok": False, "reason": "neither amd-smi nor rocm-smi is on PATH (no ROCm installation)"}


def rocm_install_row() -> dict[str, Any]:
    """What this node lacks for the ROCm engine and the commands that add it (ROCm 6 vs 7)."""
    from .engines.rocm.install import install_report

    report = install_report()
    if not report["ok"] and report.get("install"):
        report = {**report, "reason": f"{report['reason']}; to install: {report['install']}"}
    return report


def rocm_engine_row() -> dict[str, Any]:
    from .engines.rocm import probe

    note = ("not yet run on AMD hardware: tested on CPU with the fake runtime and upstream-shaped amdsmi; "
            "unverified on a GPU: the wall-clock attribute through CuPy, hipExtMallocWithFlags through ctypes, "
            "NUMA placement with hipHostMallocNumaUser, the 1 MiB SDMA threshold of your ROCm (docs/amd.md)")
    why = probe()
    return {"ok": why is None, "reason": f"{why}; {note}" if why else note, "version": "cupy-rocm (HIP)" if why is None else None}


def numa_row(machine: str | None = None) -> dict[str, Any]:
    """How pinned host buffers are NUMA-placed on this architecture (``engines/gpu/mempolicy``):
    libnuma by name, else the kernel's syscall numbers for x86_64 or the generic table (aarch64:
    GH200/GB200/Grace hosts), else why not."""
    from .engines.gpu.mempolicy import mempolicy

    policy = mempolicy(machine)
    if policy.available:
        return {"ok": True, "version": f"{policy.machine}: {policy.how}"}
    return {"ok": False, "reason": f"{policy.machine}: {policy.why_not}"}


def collect() -> dict[str, Any]:
    versions = {
        "linkscope": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "numpy": _version_of("numpy"),
        "scipy": _version_of("scipy"),
        "typer": _version_of("typer"),
        "rich": _version_of("rich"),
        "nvidia-ml-py": _version_of("nvidia-ml-py"),
        "cupy": next((v for v in (_version_of(n) for n in ("cupy", "cupy-cuda12x", "cupy-cuda13x", "cupy-rocm-7-0", "cupy-rocm-5-0"))
                      if v != "not installed"), "not installed"),
        "mpi4py": _version_of("mpi4py"),
        "matplotlib": _version_of("matplotlib"),
    }
    backends: list[dict[str, Any]] = []
    try:
        from .discovery.registry import TESTED_ON, probes

        for availability in probes():
            backends.append({"name": availability.name, "ok": availability.ok, "reason": availability.reason,
                             "version": availability.version, "tested_on": TESTED_ON.get(availability.name)})
    except ImportError as exc:
        backends.append({"name": "discovery", "ok": False, "reason": f"discovery backends not importable: {exc}"})
    names = {b["name"] for b in backends}
    rows = [(name, ref) for p in platforms.PLATFORMS for name, ref in p.env_rows]  # each vendor's rows, from the table
    for name, ref in rows:
        if name not in names:
            backends.append(_guard(name, platforms.load(ref)))
    if "mpi" not in names:
        backends.append(_guard("mpi", _mpi))
    backends.append(_guard(f"numa placement ({platform.machine()})", numa_row))
    return {"versions": versions, "backends": backends}
