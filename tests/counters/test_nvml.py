"""The thin NVML reader, against a stand-in for the pynvml module (no driver needed)."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from linkscope.counters import nvml as cnvml
from linkscope.counters.nvml import FieldRequest, PynvmlSource, check_gpu_indices, open_nvml
from linkscope.errors import BackendUnavailable, UserError
from tests.counters.fake_nvml import FakeGpu, FakeNVML


class _NVMLError(Exception):
    def __init__(self, value: int) -> None:
        super().__init__(f"NVML error {value}")
        self.value = value


def _fake_pynvml(field_values, link_states=None, count=2):
    calls = []

    def get_field_values(handle, ids):
        calls.append(ids)
        if field_values == "raise":
            raise _NVMLError(999)
        return [field_values[i] for i in range(len(ids))]

    def link_state(handle, link):
        if link_states is None:
            raise _NVMLError(3)
        if link >= len(link_states):
            raise _NVMLError(2)
        return link_states[link]

    mod = SimpleNamespace(
        NVMLError=_NVMLError,
        NVML_NVLINK_MAX_LINKS=18,
        NVML_PCIE_UTIL_TX_BYTES=0,
        NVML_PCIE_UTIL_RX_BYTES=1,
        nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
        nvmlDeviceGetCount=lambda: count,
        nvmlDeviceGetFieldValues=get_field_values,
        nvmlDeviceGetNvLinkState=link_state,
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetPciInfo=lambda h: SimpleNamespace(busId=b"00000000:1B:00.0"),
        nvmlDeviceGetUUID=lambda h: "GPU-abc",
        nvmlDeviceGetPcieThroughput=lambda h, c: (_ for _ in ()).throw(_NVMLError(3)),
        nvmlShutdown=lambda: None,
    )
    return mod, calls


def _fv(ret, vtype=3, value=0):
    v = SimpleNamespace(uiVal=value, ulVal=value, ullVal=value, sllVal=value, siVal=value, usVal=value, dVal=float(value))
    return SimpleNamespace(nvmlReturn=ret, valueType=vtype, value=v)


def test_read_fields_keeps_per_field_errors_and_never_returns_zero_for_them():
    mod, calls = _fake_pynvml([_fv(0, 3, 12345), _fv(3), _fv(0, 1, 7)])
    src = PynvmlSource(mod)
    out = src.read_fields(0, [FieldRequest(138, 0), FieldRequest(139, 0), FieldRequest(197, 0)])
    assert calls == [[(138, 0), (139, 0), (197, 0)]]  # scopeId = link index goes through
    assert (out[0].ok, out[0].value, out[0].modulus) == (True, 12345, 2**64)
    assert (out[1].ok, out[1].value, out[1].error) == (False, None, "NOT_SUPPORTED")
    assert (out[2].value, out[2].modulus) == (7, 2**32)  # unsigned int counters wrap at 2**32


def test_read_fields_whole_call_failure_marks_every_field():
    mod, _ = _fake_pynvml("raise")
    out = PynvmlSource(mod).read_fields(0, [FieldRequest(138, 1), FieldRequest(139, 1)])
    assert [r.ok for r in out] == [False, False]
    assert all(r.value is None and "nvmlDeviceGetFieldValues" in r.error for r in out)


def test_active_nvlinks_and_unsupported():
    mod, _ = _fake_pynvml([], link_states=[1, 1, 0, 1])
    assert PynvmlSource(mod).active_nvlinks(0) == (0, 1, 3)
    mod, _ = _fake_pynvml([], link_states=None)
    with pytest.raises(cnvml.CounterUnsupported):
        PynvmlSource(mod).active_nvlinks(0)


def test_gpu_info_normalises_bus_id():
    mod, _ = _fake_pynvml([])
    info = PynvmlSource(mod).gpu_info(1)
    assert (info.name, info.pci_bus_id, info.uuid, info.nvml_index) == ("NVIDIA H200", "0000:1b:00.0", "GPU-abc", 1)


def test_pcie_throughput_unsupported_raises():
    mod, _ = _fake_pynvml([])
    with pytest.raises(cnvml.CounterUnsupported, match="nvmlDeviceGetPcieThroughput"):
        PynvmlSource(mod).pcie_throughput_kb_per_s(0, True)


def test_open_nvml_without_driver_says_counters_need_a_driver(monkeypatch):
    import pynvml

    def fail():
        raise pynvml.NVMLError_LibraryNotFound()

    monkeypatch.setattr(pynvml, "nvmlInit", fail)
    with pytest.raises(BackendUnavailable, match=r"counters need an NVIDIA driver \(NVML not found: "):
        open_nvml()


def test_check_gpu_indices():
    src = FakeNVML([FakeGpu(), FakeGpu()])
    assert check_gpu_indices(src, None) == (0, 1)
    assert check_gpu_indices(src, (1, 1, 0)) == (1, 0)
    with pytest.raises(UserError, match="GPU 3 does not exist") as info:
        check_gpu_indices(src, (0, 3))
    assert "valid indices 0..1" in info.value.one_line()
