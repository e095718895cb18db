"""linkscope env on an AMD node says exactly what is missing and what to install (issue 21 item 10)."""
from __future__ import annotations

from pathlib import Path

from linkscope.engines.rocm.install import REQUIRED_LIBRARIES, install_report


def _rocm(tmp_path: Path, version: str, libs: list[str], hipcc: bool = True) -> Path:
    rocm = tmp_path / "rocm"
    (rocm / ".info").mkdir(parents=True)
    (rocm / ".info" / "version").write_text(f"{version}-112\n")
    (rocm / "lib").mkdir()
    for stem in libs:
        (rocm / "lib" / f"lib{stem}.so.1").write_text("")
    (rocm / "bin").mkdir()
    if hipcc:
        (rocm / "bin" / "hipcc").write_text("")
    return rocm


def test_rocm6_without_rccl_or_cupy_says_what_to_build(tmp_path: Path) -> None:
    rocm = _rocm(tmp_path, "6.2.1", [s for s in REQUIRED_LIBRARIES if s != "rccl"])
    report = install_report({"ROCM_PATH": str(rocm)}, which=lambda _: None, installed_cupy=lambda: None)
    assert not report["ok"] and report["version"].startswith("ROCm 6.2.1")
    assert report["missing"] == ["librccl.so", "CuPy's ROCm build"]
    assert "apt install rccl" in report["install"]
    assert "CUPY_INSTALL_USE_HIP=1" in report["install"] and "no CuPy wheel for ROCm 6.2.1" in report["install"]


def test_rocm7_with_the_cuda_wheel_points_at_cupy_rocm_7_0(tmp_path: Path) -> None:
    rocm = _rocm(tmp_path, "7.0.2", list(REQUIRED_LIBRARIES), hipcc=False)
    report = install_report({"ROCM_PATH": str(rocm)}, which=lambda _: None, installed_cupy=lambda: "cupy-cuda12x 13.6.0")
    assert report["missing"] == ["hipcc", "CuPy's ROCm build (found cupy-cuda12x 13.6.0)"]
    assert "apt install hipcc" in report["install"] and "cupy-rocm-7-0" in report["install"]


def test_rocm6_with_the_rocm7_wheel_is_a_mismatch(tmp_path: Path) -> None:
    rocm = _rocm(tmp_path, "6.1.2", list(REQUIRED_LIBRARIES))
    report = install_report({"ROCM_PATH": str(rocm)}, installed_cupy=lambda: "cupy-rocm-7-0 13.6.0")
    assert not report["ok"] and "is for ROCm 7" in report["reason"]


def test_complete_install_is_ok(tmp_path: Path) -> None:
    rocm = _rocm(tmp_path, "7.0.2", list(REQUIRED_LIBRARIES))
    report = install_report({"ROCM_PATH": str(rocm)}, installed_cupy=lambda: "cupy-rocm-7-0 13.6.0")
    assert report["ok"] and report["missing"] == []


def test_no_rocm_at_all(tmp_path: Path) -> None:
    report = install_report({"ROCM_PATH": str(tmp_path / "none")})
    assert not report["ok"] and "no ROCm install" in report["reason"]


def test_env_has_the_rocm_install_row() -> None:
    from linkscope.envinfo import collect

    names = {b["name"] for b in collect()["backends"]}
    assert "rocm install" in names
