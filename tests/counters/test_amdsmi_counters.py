"""watch on an AMD node: xGMI read/write counters through a fake amdsmi module (documented API)."""
from __future__ import annotations

import pytest

from linkscope.counters.amdsmi import AmdsmiSource
from linkscope.counters.nvml import FI_NVLINK_DATA_TX_KIB, FieldRequest
from linkscope.counters.sources import open_counter_source
from linkscope.counters.watch import WatchOptions, run_watch, to_dict
from linkscope.errors import BackendUnavailable
from tests.counters.fake_nvml import FakeClock
from tests.counters.test_watch import FakeProc
from tests.discovery.fake_amdsmi import FakeAmdSmi

MiB = 1024**2


def _watch(fake: FakeAmdSmi, action, gpus=(0, 1), expect=None):
    clock = FakeClock()

    def popen(argv):
        def act():
            clock.advance(0.5)
            action()
        return FakeProc(act, 0)

    return run_watch(WatchOptions(command=("copy",), gpus=gpus, settle_s=0.0, expect=expect), AmdsmiSource(fake),
                     clock=clock, sleep=lambda s: None, popen=popen, now_utc=lambda: "2026-11-23T00:00:00+00:00")


# amdsmi_get_link_metrics is in the Python layer from 7.x only (absent from py-interface/amdsmi_interface.py at
# ROCm/amdsmi rocm-6.0.0 ... rocm-6.2.2; 7.0.2 wheel amdsmi_interface.py:3260): 6.x always reads gpu metrics
@pytest.mark.parametrize(("layout", "link_metrics"), [("6", False), ("7", True), ("7", False)])
def test_mi300x_xgmi_copy_is_seen_per_link_and_called_xgmi(layout: str, link_metrics: bool) -> None:
    """MI300 (gpu metrics v1.4+) has per-link accumulators: through link metrics (8 slots) or,
    on an older amdsmi, the gpu metrics lists."""
    fake = FakeAmdSmi(layout=layout, gpu="mi300x", with_link_metrics=link_metrics)

    def copy() -> None:  # 64 MiB GPU0 -> GPU1 over their one link
        fake.move(0, 0, 64 * 1024)

    result = _watch(fake, copy, expect="nvlink")
    gpu0, gpu1 = result.gpus
    assert gpu0.plan.fabric == "xgmi" and len(gpu0.plan.links) == 8  # the 8 slots amdsmi reports
    assert gpu0.nvlink_tx.bytes == 64 * MiB and gpu1.nvlink_rx.bytes == 64 * MiB
    assert gpu0.verdict.kind == "nvlink" and "xGMI carried" in gpu0.verdict.message
    assert "PCIe" in gpu0.plan.pcie_unsupported and gpu0.pcie_tx is None  # unknown, never zero
    assert result.expect is not None and result.expect.passed is True
    data = to_dict(result)
    assert data["gpus"][0]["nvlink"]["fabric"] == "xgmi"
    assert {r["bus"] for r in data["timeline"]} == {"xgmi"}


# amdsmi_get_link_metrics is in the Python layer from 7.x only (absent from py-interface/amdsmi_interface.py at
# ROCm/amdsmi rocm-6.0.0 ... rocm-6.2.2; 7.0.2 wheel amdsmi_interface.py:3260): 6.x always reads gpu metrics
@pytest.mark.parametrize(("layout", "link_metrics"), [("6", False), ("7", True), ("7", False)])
def test_mi250x_placeholders_are_unsupported_not_idle(layout: str, link_metrics: bool) -> None:
    """MI200 has no xGMI accumulators: amdsmi returns 2**64-1 (link metrics) or "N/A" (gpu
    metrics). That is "unsupported", never an idle link, and --expect neither passes nor fails."""
    fake = FakeAmdSmi(layout=layout, gpu="mi250x", with_link_metrics=link_metrics)
    result = _watch(fake, lambda: None, expect="nvlink")
    gcd0 = result.gpus[0]
    assert "placeholders" in gcd0.plan.nvlink_unsupported and gcd0.nvlink_tx is None
    assert gcd0.verdict.kind == "unknown" and gcd0.verdict.kind != "idle"
    assert result.expect is not None and result.expect.passed is None and "undecided" in result.expect.reason
    assert result.final_exit_code == 0


def test_fields_other_than_xgmi_are_unsupported_not_zero() -> None:
    source = AmdsmiSource(FakeAmdSmi(gpu="mi300x"))
    tx, pcie = source.read_fields(0, [FieldRequest(FI_NVLINK_DATA_TX_KIB, 0), FieldRequest(197, 0)])
    assert tx.ok and tx.value == 0 and not pcie.ok and pcie.value is None


def test_no_driver_at_all_names_both(monkeypatch) -> None:
    def no_nvml():
        raise BackendUnavailable("counters need an NVIDIA driver (NVML not found: x)")

    monkeypatch.setattr("linkscope.counters.nvml.open_nvml", no_nvml)
    with pytest.raises(BackendUnavailable, match=r"NVIDIA: counters need an NVIDIA driver.*AMD: amdsmi"):
        open_counter_source()
