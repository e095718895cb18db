import numpy as np
import pytest

from linkscope.comm.buffers import FakeDeviceArray
from linkscope.comm.gpu_aware import (
    GpuAwareness,
    check_device_buffers,
    detect,
    forced,
    is_device_buffer,
    parse_gpu_aware_choice,
    parse_ompi_info,
)
from linkscope.comm.launch import CollectiveError

OMPI = "Open MPI v4.1.6, package: Debian OpenMPI, ident: 4.1.6"


def no_mpix(symbol):
    return None


def test_open_mpi_asks_mpix_query():
    seen = []

    def mpix(symbol):
        seen.append(symbol)
        return 1 if symbol == "MPIX_Query_cuda_support" else None

    a = detect(OMPI, {}, mpix=mpix, ompi_info=lambda: None)
    assert a.of("cuda") is True and a.device_buffers_ok
    assert "MPIX_Query_cuda_support() = 1" in a.how
    assert seen == ["MPIX_Query_cuda_support", "MPIX_Query_rocm_support"]


def test_open_mpi_without_cuda_is_refused():
    a = detect(OMPI, {}, mpix=lambda s: 0, ompi_info=lambda: None)
    assert a.of("cuda") is False and not a.device_buffers_ok


def test_verdict_names_the_kind_and_the_evidence():
    debian = detect(OMPI, {}, mpix=lambda s: 0 if s == "MPIX_Query_cuda_support" else None, ompi_info=lambda: None)
    assert debian.describe() == "not CUDA-aware (MPIX_Query_cuda_support() = 0)"
    built = detect(OMPI, {}, mpix=lambda s: 1 if s == "MPIX_Query_cuda_support" else None, ompi_info=lambda: None)
    assert built.describe() == "CUDA-aware (MPIX_Query_cuda_support() = 1)"
    assert built.as_dict()["verdict"] == "CUDA-aware"
    rocm = detect("Open MPI v5.0.5", {}, mpix=lambda s: int(s == "MPIX_Query_rocm_support"), ompi_info=lambda: None)
    assert rocm.verdict == "ROCm-aware"
    assert GpuAwareness({}, "?").verdict == "GPU-awareness unknown"
    assert GpuAwareness({"cuda": False, "rocm": False}, "?").verdict == "neither CUDA- nor ROCm-aware"
    with pytest.raises(CollectiveError, match=r"this one is not CUDA-aware \(MPIX_Query_cuda_support\(\) = 0\)"):
        check_device_buffers("DD", debian, stage_through_host=False)


def test_ompi_info_fallback():
    text = ("mca:opal:base:param:opal_built_with_cuda_support:value:false\n"
            "mca:mpi:base:param:mpi_built_with_cuda_support:value:true\n")
    assert parse_ompi_info(text) is False  # the first matching line wins
    a = detect(OMPI, {}, mpix=no_mpix, ompi_info=lambda: "mca:mpi:base:param:mpi_built_with_cuda_support:value:true")
    assert a.of("cuda") is True and "ompi_info" in a.how
    assert detect(OMPI, {}, mpix=no_mpix, ompi_info=lambda: None).of("cuda") is None


@pytest.mark.parametrize("lib,env,expected", [
    ("MVAPICH2 Version 2.3.7", {"MV2_USE_CUDA": "1"}, True),
    ("MVAPICH2 Version 2.3.7", {}, False),
    ("MPI VERSION : CRAY MPICH version 8.1.27", {"MPICH_GPU_SUPPORT_ENABLED": "1"}, True),
    ("MPI VERSION : CRAY MPICH version 8.1.27", {"MPICH_GPU_SUPPORT_ENABLED": "0"}, False),
    ("MPICH Version: 4.1.2", {}, None),
])
def test_vendor_variables(lib, env, expected):
    assert detect(lib, env, mpix=no_mpix, ompi_info=lambda: None).of("cuda") is expected


def test_memory_alloc_kinds():
    a = detect("MPICH Version: 4.2", {}, memory_kinds="system,mpi,cuda:device,cuda:host")
    assert a.of("cuda") is True and a.of("rocm") is False


def test_device_buffers_refused_unless_staged_or_aware():
    no = GpuAwareness({"cuda": False}, "MPIX_Query_cuda_support() = 0")
    with pytest.raises(CollectiveError, match="--buffers DH needs a GPU-aware MPI.*MPIX_Query_cuda_support") as exc:
        check_device_buffers("DH", no, stage_through_host=False)
    assert "--stage-through-host" in exc.value.one_line()
    check_device_buffers("DH", no, stage_through_host=True)
    check_device_buffers("HH", no, stage_through_host=False)
    check_device_buffers("DD", forced(True), stage_through_host=False)


def test_device_buffer_detection():
    host = np.zeros(8, dtype=np.uint8)
    assert not is_device_buffer(host)
    fake = FakeDeviceArray(host)
    assert is_device_buffer(fake)
    assert fake.__cuda_array_interface__["data"][0] == host.ctypes.data


def test_gpu_aware_choice():
    assert parse_gpu_aware_choice("auto") is None
    assert parse_gpu_aware_choice("YES") is True
    assert parse_gpu_aware_choice("no") is False
    with pytest.raises(Exception) as exc:
        parse_gpu_aware_choice("maybe")
    assert "auto, yes, no" in exc.value.one_line()


def test_the_record_keeps_one_answer_per_runtime_row():
    """The run context's ``gpu_aware`` keeps a key per platform row's runtime (cuda, rocm), absent answers as null."""
    unknown = detect(OMPI, {}, mpix=no_mpix, ompi_info=lambda: None)
    assert unknown.as_dict() == {"cuda": None, "rocm": None, "forced": False, "verdict": "GPU-awareness unknown",
                                 "how": "Open MPI without MPIX_Query_cuda_support or ompi_info: unknown"}
    assert forced(False).as_dict() == {"cuda": False, "rocm": False, "how": "forced by --gpu-aware", "forced": True,
                                       "verdict": "neither CUDA- nor ROCm-aware"}
    mvapich = detect("MVAPICH2 Version 2.3.7", {"MV2_USE_CUDA": "1"}, mpix=no_mpix, ompi_info=lambda: None)
    assert mvapich.as_dict()["rocm"] is None and mvapich.how == "MVAPICH2: MV2_USE_CUDA=1"
