"""Counter plans (what a GPU answers) and the sampler, on a fake NVML and a fake clock."""
from __future__ import annotations

import threading
import time

from linkscope.counters.nvml import FI_NVLINK_DATA_RX_KIB, FI_NVLINK_DATA_TX_KIB
from linkscope.counters.sampler import (
    CUMULATIVE,
    NVLINK,
    PCIE,
    PCIE_FROM_COUNTERS,
    PCIE_FROM_THROUGHPUT,
    RATE,
    Sampler,
    plan_gpu,
)
from tests.counters.fake_nvml import FakeClock, FakeGpu, FakeNVML


def test_plan_full_support():
    plan = plan_gpu(FakeNVML([FakeGpu(links=18)]), 0)
    nv = [c for c in plan.counters if c.key.bus == NVLINK]
    assert len(nv) == 36 and all(c.mode == CUMULATIVE and c.bytes_per_unit == 1024 for c in nv)
    assert plan.pcie_source == PCIE_FROM_COUNTERS and plan.nvlink_unsupported == ""
    assert {c.request.field_id for c in nv} == {FI_NVLINK_DATA_TX_KIB, FI_NVLINK_DATA_RX_KIB}
    assert {c.request.scope_id for c in nv} == set(range(18))


def test_plan_falls_back_to_pcie_throughput_then_unsupported():
    plan = plan_gpu(FakeNVML([FakeGpu(pcie_counters=False)]), 0)
    assert plan.pcie_source == PCIE_FROM_THROUGHPUT
    assert all(c.mode == RATE for c in plan.counters if c.key.bus == PCIE)
    plan = plan_gpu(FakeNVML([FakeGpu(pcie_counters=False, pcie_throughput=False)]), 0)
    assert plan.pcie_source == "" and "NOT_SUPPORTED" in plan.pcie_unsupported
    assert not any(c.key.bus == PCIE for c in plan.counters)


def test_plan_records_unsupported_links_and_no_nvlink():
    gpu = FakeGpu(links=4, refuse={(FI_NVLINK_DATA_TX_KIB, 2)})
    plan = plan_gpu(FakeNVML([gpu]), 0)
    assert [(k.label, why) for k, why in plan.unsupported] == [("gpu0.nvlink2.tx", "NOT_SUPPORTED")]
    assert len([c for c in plan.counters if c.key.bus == NVLINK]) == 7
    plan = plan_gpu(FakeNVML([FakeGpu(nvlink_supported=False)]), 0)
    assert plan.links == () and "not supported" in plan.nvlink_unsupported
    plan = plan_gpu(FakeNVML([FakeGpu(links=0)]), 0)
    assert plan.nvlink_unsupported == "no active NVLink"


def test_sampler_records_raw_values_and_failed_readings():
    nv = FakeNVML([FakeGpu(links=2)])
    clock = FakeClock()
    sampler = Sampler(nv, [plan_gpu(nv, 0)], 0.1, clock=clock)
    sampler.sample()
    nv.nvlink(0, 1, tx_bytes=1024 * 1000)
    clock.advance(0.1)
    nv.gpus[0].fail_reads = 1
    sampler.sample()
    clock.advance(0.1)
    sampler.sample()
    series = {s.spec.key.label: s for s in sampler.series()}
    pts = series["gpu0.nvlink1.tx"].points
    assert [p.raw for p in pts] == [0, None, 1000]
    assert pts[1].error == "GPU_IS_LOST"
    assert [round(p.t_s - 100.0, 3) for p in pts] == [0.0, 0.1, 0.2]


def test_sampler_thread_samples_at_the_interval():
    # Awaits an event (the fifth read), not a wall-clock sleep: a busy machine only makes it slower.
    # The fixed-rate schedule never samples early: the k-th sample comes at least k intervals after start.
    fifth = threading.Event()

    class Counting(FakeNVML):
        def read_fields(self, index, requests):
            out = super().read_fields(index, requests)
            if self.reads >= self.start_reads + 5:
                fifth.set()
            return out

    nv = Counting([FakeGpu(links=1)])
    nv.start_reads = 1 << 30
    interval_s = 0.01
    sampler = Sampler(nv, [plan_gpu(nv, 0)], interval_s)
    nv.start_reads = nv.reads  # planning reads the fields too
    t0 = time.monotonic()
    sampler.start()
    assert fifth.wait(timeout=600), "the sampler thread never read five times"
    sampler.stop()
    pts = sampler.series()[0].points
    assert len(pts) >= 5
    assert all(p.t_s - t0 >= (k + 1) * interval_s - 1e-3 for k, p in enumerate(pts))
    assert sampler.thread_error is None
