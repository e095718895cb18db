"""References keyed by what decides the number (issue 33): a latency by the GPU's latency class, a copy the
host decides by the class and judged one-sided; nccl-tests' single graph launch is its own launch mode;
a latency kind and the hosts' copies pool their own spread between leases."""
from __future__ import annotations

from pathlib import Path

import pytest

from linkscope.judge.expect import Judge
from linkscope.judge.references import RefKey, family_of, host_decided, pool_of, shipped
from linkscope.judge.verdict import Verdict
from linkscope.results.schema import HOST, Measurement
from linkscope.results.stats import Stats
from linkscope.topology.io import load

ROOT = Path(__file__).resolve().parents[2]
H200X4 = ROOT / "tests" / "fixtures" / "recordings" / "h200x4-2026-11-28" / "linkscope" / "topo.json"
H100X2 = ROOT / "tests" / "fixtures" / "peertools" / "h100x2" / "machine-raw"


@pytest.fixture(scope="module")
def h200x4() -> Judge:
    return Judge(load(H200X4))


def _d2h(size: int, gb_per_s: float) -> Measurement:
    return Measurement(0, HOST, "ce", "pair", "uni", size, bandwidth=Stats.from_samples([gb_per_s] * 5))


def _flag(us: float) -> Measurement:
    return Measurement(0, 1, "flag-pingpong", "latency", "uni", 0, latency=Stats.single(us),
                       extra={"latency_kind": "flag-pingpong"})


def test_host_decided_keys():
    host = "host pcie 63"
    assert host_decided(RefKey("h200", host, "d2h", "pair", "uni", 4096, "", "GB/s"))  # small: the host's fixed cost
    assert host_decided(RefKey("h200", host, "h2d-pageable", "pair", "uni", 512 << 20, "", "GB/s"))  # the host's memcpy
    assert host_decided(RefKey("h200", host, "h2d", "pair", "bi", 512 << 20, "", "GB/s"))  # both ways: root complex
    assert not host_decided(RefKey("h200", host, "h2d", "pair", "uni", 512 << 20, "", "GB/s"))  # the link decides
    assert not host_decided(RefKey("h200", "NV18", "ce", "pair", "uni", 4096, "", "GB/s"))
    assert pool_of(RefKey("h200", host, "h2d", "pair", "bi", 512 << 20, "", "GB/s")) == "copy/host"
    assert pool_of(RefKey("h200", "NV18", "latency.flag-pingpong", "pair", "uni", 0, "", "us")) == \
        "latency/latency.flag-pingpong"
    assert family_of(RefKey("h200", "NV18", "latency.flag-pingpong", "pair", "uni", 0, "", "us")) == "latency"


def test_latency_and_host_copies_are_keyed_by_the_latency_class(h200x4):
    from linkscope.discovery.auto import resolve_topology

    h100 = Judge(resolve_topology(None, str(H100X2), None, allow_fallback=False)[0])
    assert h200x4.ref_key(_flag(0.7)) == h100.ref_key(_flag(0.7))
    assert h200x4.ref_key(_flag(0.7)).gpu == "hopper"  # type: ignore[union-attr]
    assert h200x4.ref_key(_d2h(4096, 2.0)).gpu == "hopper"  # type: ignore[union-attr]
    # a link-bound copy keeps the SKU: the H200's and the H100's local copies differ by their memory
    local = Measurement(0, 0, "local", "pair", "uni", 512 << 20, bandwidth=Stats.from_samples([2080.0] * 5))
    assert h200x4.ref_key(local).gpu == "h200"  # type: ignore[union-attr]
    assert h200x4.ref_key(_d2h(512 << 20, 55.0)).gpu == "h200"  # type: ignore[union-attr]


def test_a_faster_host_is_no_fault_but_a_slower_one_is_low(h200x4):
    ref = shipped().get(h200x4.ref_key(_d2h(4096, 1.0)))
    assert ref is not None and len(ref.leases) >= 2
    fast = h200x4.judge(_d2h(4096, ref.median * (1 + ref.band) * 1.2))
    assert fast.verdict is Verdict.OK and "the host" in fast.reason and "faster than the" in fast.reason
    slow = h200x4.judge(_d2h(4096, ref.median / (1 + ref.band) / 1.3))
    assert slow.verdict is Verdict.LOW
    # above what the hardware can give is still suspicious-high, one-sided or not
    assert h200x4.judge(_d2h(4096, 500.0)).verdict is Verdict.HIGH


def test_a_link_bound_host_copy_stays_two_sided(h200x4):
    ref = shipped().get(h200x4.ref_key(_d2h(512 << 20, 1.0)))
    assert ref is not None and not host_decided(ref.key)
    m = _d2h(512 << 20, ref.median * (1 + ref.band) * 1.05)
    j = h200x4.judge(m)
    assert j.verdict is not Verdict.OK or j.fraction is None or j.fraction <= 1 + ref.band


def test_flag_pingpong_band_comes_from_its_own_kind_between_hopper_leases(h200x4):
    ref = shipped().get(h200x4.ref_key(_flag(0.7)))
    assert ref is not None and len(ref.leases) >= 2  # H100 and H200 leases: one class
    chase = shipped().get(h200x4.ref_key(Measurement(0, 1, "remote-read", "latency", "uni", 0, latency=Stats.single(0.83),
                                                     extra={"latency_kind": "remote-read"})))
    assert chase is not None and chase.band < ref.band  # the chase's band is not widened by the flag's spread
    assert chase.band <= 0.15


def test_one_graph_launch_is_its_own_launch_mode(h200x4):
    def coll(graph: int) -> Measurement:
        return Measurement(0, 0, "nccl.allreduce", "collective", "uni", 8, bandwidth=Stats.single(0.01),
                           extra={"graph_iters": graph, "gpus_per_thread": 1})

    assert h200x4.launch(coll(1)) == "graph x1 1/thread"
    assert h200x4.launch(coll(20)) == "graph 1/thread"
    assert h200x4.launch(coll(0)) == "eager 1/thread"
