"""The HIP kernels compiled by a real HIP compiler, offline, for MI200 (gfx90a) and the MI300
family (gfx940). Skips only where no ``hipcc`` is installed (Debian bookworm: ``apt-get install
hipcc``, ROCm 5.2.3; .ci/run installs it). hipRTC adds ``#include <hip/hip_runtime.h>`` itself; an
offline compile needs it first (``vendors.amd.HIP_OFFLINE_INCLUDE``)."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from linkscope.engines.gpu.kernels import OPTIONS, source_for
from linkscope.platforms import AMD
from linkscope.vendors.amd import HIP_DEVICE_ATTRIBUTE_WALL_CLOCK_RATE, HIP_OFFLINE_INCLUDE

HIPCC = shutil.which("hipcc")
pytestmark = pytest.mark.skipif(HIPCC is None, reason="no hipcc installed (Debian: apt-get install hipcc)")


def _compile(tmp_path: Path, arch: str, defines: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    source, _ = source_for(AMD.kernels)
    src = tmp_path / "kernels.hip"
    src.write_text(HIP_OFFLINE_INCLUDE + source)
    argv = [str(HIPCC), f"--offload-arch={arch}", "--cuda-device-only", "--no-gpu-bundle-output", "-c",
            *OPTIONS, *defines, "-o", str(tmp_path / f"kernels-{arch}.co"), str(src)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.parametrize("arch,khz", [("gfx90a", 25_000), ("gfx940", 100_000)])
def test_hip_kernels_compile_for_mi200_and_mi300(tmp_path: Path, arch: str, khz: int) -> None:
    done = _compile(tmp_path, arch, (f"-DWALL_CLOCK_KHZ={khz}",))
    assert done.returncode == 0, done.stderr[-3000:]
    code_object = (tmp_path / f"kernels-{arch}.co").read_bytes()
    assert code_object[:4] == b"\x7fELF"
    _, names = source_for(AMD.kernels)
    missing = [n for n in names if n.encode() not in code_object]
    assert not missing, f"kernels missing from the {arch} code object: {missing}"


def test_without_the_wall_clock_rate_the_source_does_not_compile(tmp_path: Path) -> None:
    done = _compile(tmp_path, "gfx90a", ())
    assert done.returncode != 0 and "WALL_CLOCK_KHZ" in done.stderr


def test_wall_clock_attribute_value_matches_the_hip_header(tmp_path: Path) -> None:
    """hipDeviceAttributeWallClockRate follows hipDeviceAttributeFineGrainSupport in the AMD range of
    hipDeviceAttribute_t; headers older than the attribute (ROCm 5.2.3) end at FineGrainSupport."""
    header = Path(str(HIPCC)).resolve().parents[1] / "include" / "hip" / "hip_runtime_api.h"
    if not header.exists():
        header = Path("/usr/include/hip/hip_runtime_api.h")
    has_attr = bool(re.search(r"\bhipDeviceAttributeWallClockRate\b", header.read_text(errors="replace")))
    name = "hipDeviceAttributeWallClockRate" if has_attr else "hipDeviceAttributeFineGrainSupport"
    want = HIP_DEVICE_ATTRIBUTE_WALL_CLOCK_RATE if has_attr else HIP_DEVICE_ATTRIBUTE_WALL_CLOCK_RATE - 1
    check = tmp_path / "attr.cpp"
    check.write_text(f'#include <hip/hip_runtime_api.h>\nstatic_assert({name} == {want}, "{name}");\n')
    done = subprocess.run([str(HIPCC), "-fsyntax-only", "-D__HIP_PLATFORM_AMD__", str(check)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
