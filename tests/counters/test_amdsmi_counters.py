"""watch on an AMD node: xGMI read/write counters through a fake amdsmi module (documented API)."""
from __future__ import annotations

import pytest

from linkscope.counters.amdsmi import AmdsmiSource, open_counter_source
from linkscope.counters.nvml import FI_NVLINK_DATA_TX_KIB, FieldRequest
from linkscope.counters.watch import WatchOptions, run_watch, to_dict
from linkscope.errors import BackendUnavailable
from tests.counters.fake_nvml import FakeClock
from tests.counters.test_watch import FakeProc
from tests.discovery.fake_amdsmi import FakeAmdSmi

MiB = 1024**2


def _watch(fake: FakeAmdSmi, action, gpus=(0, 1)):
    clock = FakeClock()

    def popen(argv):
        def act():
            clock.advance(0.5)
            action()
        return FakeProc(act, 0)

    return run_watch(WatchOptions(command=("copy",), gpus=gpus, settle_s=0.0), AmdsmiSource(fake), clock=clock,
                     sleep=lambda s: None, popen=popen, now_utc=lambda: "2026-11-23T00:00:00+00:00")


@pytest.mark.parametrize("link_metrics", [True, False])
def test_xgmi_copy_is_seen_per_link_and_called_xgmi(link_metrics: bool) -> None:
    fake = FakeAmdSmi(with_link_metrics=link_metrics)
    if not link_metrics:  # older amdsmi: the gpu_metrics accumulators carry the same counters
        def gpu_metrics(h):
            links = fake._links[h.gcd]
            pad = ["N/A"] * (8 - len(links))
            return {"xgmi_write_data_acc": [fake.write_kb[(h.gcd, k)] for k in range(len(links))] + pad,
                    "xgmi_read_data_acc": [fake.read_kb[(h.gcd, k)] for k in range(len(links))] + pad}
        fake.amdsmi_get_gpu_metrics_info = gpu_metrics

    def copy() -> None:  # 64 MiB GCD0 -> GCD1 striped over their 4 links
        for k in range(4):
            fake.move(0, k, 16 * 1024)

    result = _watch(fake, copy)
    gcd0, gcd1 = result.gpus
    assert gcd0.plan.fabric == "xgmi" and len(gcd0.plan.links) == 7  # 4 to GCD1, 2 to GCD6, 1 to GCD2
    assert gcd0.nvlink_tx.bytes == 64 * MiB and gcd1.nvlink_rx.bytes == 64 * MiB
    assert gcd0.verdict.kind == "nvlink" and "xGMI carried" in gcd0.verdict.message
    assert "PCIe" in gcd0.plan.pcie_unsupported and gcd0.pcie_tx is None  # unknown, never zero
    data = to_dict(result)
    assert data["gpus"][0]["nvlink"]["fabric"] == "xgmi"
    assert {r["bus"] for r in data["timeline"]} == {"xgmi"}


def test_fields_other_than_xgmi_are_unsupported_not_zero() -> None:
    source = AmdsmiSource(FakeAmdSmi())
    tx, pcie = source.read_fields(0, [FieldRequest(FI_NVLINK_DATA_TX_KIB, 0), FieldRequest(197, 0)])
    assert tx.ok and tx.value == 0 and not pcie.ok and pcie.value is None


def test_no_driver_at_all_names_both(monkeypatch) -> None:
    def no_nvml():
        raise BackendUnavailable("counters need an NVIDIA driver (NVML not found: x)")

    monkeypatch.setattr("linkscope.counters.nvml.open_nvml", no_nvml)
    with pytest.raises(BackendUnavailable, match=r"NVIDIA driver.*AMD: amdsmi"):
        open_counter_source()
