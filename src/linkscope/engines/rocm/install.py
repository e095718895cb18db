"""What an AMD node lacks for the ROCm engine, and what to install: ``linkscope env``'s ROCm row.

The only CuPy ROCm wheel on PyPI is ``cupy-rocm-7-0`` (ROCm 7); on ROCm 6 CuPy is built from
source (CuPy docs, install_rocm: ``CUPY_INSTALL_USE_HIP=1``, ``ROCM_HOME``, ``HCC_AMDGPU_TARGET``).
Either way CuPy's ROCm build loads these ROCm libraries (the sonames a packaged CuPy-ROCm links,
archlinux.org python-cupy-rocm 13.6 "Soname List": libamdhip64, libhipblas, libhipfft,
libhiprand, libhipsparse, librccl, librocblas, librocsolver, libroctx64) and compiles kernels
with hipRTC (libhiprtc) and its own elementwise kernels with ``hipcc``. This module only looks at
files: it never starts the HIP runtime.
"""
from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

#: library stem -> the ROCm package that ships it (AMD's apt/yum package names)
REQUIRED_LIBRARIES: Mapping[str, str] = {
    "amdhip64": "hip-runtime-amd", "hiprtc": "hip-runtime-amd", "hipblas": "hipblas", "hipfft": "hipfft",
    "hiprand": "hiprand", "hipsparse": "hipsparse", "rccl": "rccl", "rocblas": "rocblas",
    "rocsolver": "rocsolver", "roctx64": "roctracer",
}
CUPY_WHEELS = ("cupy-rocm-7-0", "cupy-rocm-6-0", "cupy-rocm-5-0", "cupy", "cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x")


def rocm_version(rocm: Path) -> str | None:
    """``6.2.1`` from ``<ROCM_PATH>/.info/version`` (``6.2.1-112``), or None."""
    try:
        text = (rocm / ".info" / "version").read_text().strip()
    except OSError:
        return None
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    return ".".join(g for g in match.groups() if g is not None) if match else None


def _has_library(rocm: Path, stem: str) -> bool:
    for folder in (rocm / "lib", rocm / "lib64"):
        try:
            if any(name == f"lib{stem}.so" or name.startswith(f"lib{stem}.so.") for name in os.listdir(folder)):
                return True
        except OSError:
            continue
    return False


def _installed_cupy() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    for dist in CUPY_WHEELS:
        try:
            return f"{dist} {version(dist)}"
        except PackageNotFoundError:
            continue
    return None


def install_report(env: Mapping[str, str] | None = None, *, which: Callable[[str], str | None] = shutil.which,
                   installed_cupy: Callable[[], str | None] = _installed_cupy) -> dict[str, Any]:
    """``{"ok", "version", "reason", "missing", "install"}`` for ``linkscope env``: the ROCm found,
    each missing piece, and the commands that add them (ROCm 6 and 7 paths differ)."""
    env = dict(os.environ if env is None else env)
    rocm = Path(env.get("ROCM_PATH") or env.get("ROCM_HOME") or "/opt/rocm")
    version = rocm_version(rocm)
    if version is None and not rocm.is_dir():
        return {"ok": False, "version": None, "missing": ["ROCm"],
                "reason": f"no ROCm install at {rocm} (set ROCM_PATH if it lives elsewhere)",
                "install": "install ROCm 6.x or 7.x (https://rocm.docs.amd.com), then see docs/amd.md"}
    missing_libs = [stem for stem in REQUIRED_LIBRARIES if not _has_library(rocm, stem)]
    hipcc = (rocm / "bin" / "hipcc").exists() or which("hipcc") is not None
    cupy = installed_cupy()
    major = int(version.split(".")[0]) if version else None
    missing = [f"lib{s}.so" for s in missing_libs] + ([] if hipcc else ["hipcc"])
    steps: list[str] = []
    packages = sorted({REQUIRED_LIBRARIES[s] for s in missing_libs} | (set() if hipcc else {"hipcc"}))
    if packages:
        steps.append(f"apt install {' '.join(packages)} (or the same names with dnf/zypper)")
    if cupy is None or not cupy.startswith(("cupy-rocm", "cupy ")):
        missing.append("CuPy's ROCm build" + (f" (found {cupy})" if cupy else ""))
        if major is not None and major >= 7:
            steps.append("pip install 'linkscope[rocm7]' (cupy-rocm-7-0)")
        else:
            steps.append(f"no CuPy wheel for ROCm {version or '?'} on PyPI: build it: CUPY_INSTALL_USE_HIP=1 "
                         f"ROCM_HOME={rocm} HCC_AMDGPU_TARGET=<gfx90a for MI200, gfx942 for MI300> "
                         "pip install --no-binary cupy cupy")
    elif cupy.startswith("cupy-rocm-7") and major is not None and major < 7:
        missing.append(f"a CuPy built for ROCm {version} ({cupy} is for ROCm 7)")
        steps.append("pip uninstall cupy-rocm-7-0, then build CuPy from source (docs/amd.md, ROCm 6)")
    found = f"ROCm {version or 'unknown version'} at {rocm}" + (f", {cupy}" if cupy else "")
    if not missing:
        return {"ok": True, "version": found, "missing": [], "reason": "", "install": ""}
    return {"ok": False, "version": found, "missing": missing, "reason": f"missing: {', '.join(missing)}",
            "install": "; ".join(steps)}
