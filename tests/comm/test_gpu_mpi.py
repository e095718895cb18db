"""A CUDA-aware MPI on a real GPU: device buffers checked, and no silent staging through host memory.

Runs where the ``mpirun`` on PATH is a CUDA-aware Open MPI (``bench/build_cuda_mpi.sh`` builds one)
and CuPy sees a GPU; two ranks share GPU 0 when there is only one (CUDA IPC within one device).

"Silent staging" is an MPI that accepts device pointers but copies them through host memory (Open
MPI's smcuda without CUDA IPC, UCX without cuda_ipc): the data still arrive, so only the speed tells.
A device-to-device message can beat a host-to-device copy only if it never crosses the host link,
so the D-D bandwidth must exceed twice this GPU's pinned host-to-device copy rate measured here.
(On H200: CUDA IPC within the device moves hundreds of GB/s, host staging tens.)
"""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from linkscope.comm.gpu_aware import parse_ompi_info

from .conftest import mpirun, mpirun_available


def _gpus() -> int:
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def _cuda_aware_mpirun() -> str:
    """Why the MPI on PATH cannot run these tests, or '' when it can."""
    exe = shutil.which("ompi_info")
    if not exe:
        return "no ompi_info on PATH (these tests need a CUDA-aware Open MPI)"
    done = subprocess.run([exe, "--parsable", "--all"], capture_output=True, text=True, timeout=60, check=False)
    if parse_ompi_info(done.stdout) is not True:
        return f"{exe} is not built with CUDA (bench/build_cuda_mpi.sh builds one)"
    return ""


pytestmark = [
    pytest.mark.gpu, pytest.mark.mpi,
    pytest.mark.skipif(_gpus() < 1, reason="needs a GPU with CuPy"),
    pytest.mark.skipif(not mpirun_available(), reason="mpirun and mpi4py required"),
]

SIZE = 64 * 1024 * 1024


@pytest.fixture(scope="module")
def cuda_mpi():
    why = _cuda_aware_mpirun()
    if why:
        pytest.skip(why)


def _pinned_h2d_gb_per_s(nbytes: int) -> float:
    import cupy
    import cupyx

    host = cupyx.empty_pinned((nbytes,), dtype=cupy.uint8)
    dev = cupy.empty(nbytes, dtype=cupy.uint8)
    dev.set(host)  # warm-up
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(5):
        dev.set(host)
    stop.record()
    stop.synchronize()
    return 5 * nbytes / (cupy.cuda.get_elapsed_time(start, stop) / 1e3) / 1e9


def _bw(tmp_path, *extra: str) -> dict:
    out = tmp_path / f"bw{len(extra)}.json"
    done = mpirun(2, "bench", "mpi", "--test", "bw", "--buffers", "DD", "--sizes", str(SIZE), "--iterations", "10",
                  "--warmup", "2", "--window", "16", "--json", str(out), *extra, timeout_s=180)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def test_device_to_device_is_not_staged_through_host(tmp_path, cuda_mpi):
    rec = _bw(tmp_path)
    assert rec["context"]["gpu_aware"]["cuda"] is True and rec["context"]["gpu_aware"]["verdict"] == "CUDA-aware"
    (m,) = rec["measurements"]
    assert m["method"] == "mpi.bw" and m["verified"] is True  # every D-D receive checked
    direct = m["median_gb_per_s"]
    staged = _bw(tmp_path, "--stage-through-host")["measurements"][0]
    assert staged["method"] == "mpi.bw+staged" and staged["verified"] is True
    h2d = _pinned_h2d_gb_per_s(SIZE)
    assert direct > 2 * h2d, (f"D-D through MPI moved {direct:.1f} GB/s, not above twice a pinned host-to-device "
                              f"copy ({h2d:.1f} GB/s): the MPI stages device buffers through host memory")
    assert direct > 2 * staged["median_gb_per_s"], (direct, staged["median_gb_per_s"])


def test_allreduce_on_device_buffers_is_exact(tmp_path, cuda_mpi):
    out = tmp_path / "ar.json"
    done = mpirun(2, "bench", "mpi", "--test", "allreduce", "--buffers", "DD", "--sizes", "8,1MiB",
                  "--iterations", "5", "--warmup", "1", "--json", str(out), timeout_s=120)
    assert done.returncode == 0, done.stderr
    assert "# MPI: CUDA-aware" in done.stdout
    ms = json.loads(out.read_text())["measurements"]
    assert [m["size_bytes"] for m in ms] == [8, 1 << 20]
    assert all(m["method"] == "mpi.allreduce" and m["verified"] is True for m in ms)
