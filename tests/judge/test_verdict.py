"""The verdict core: decide() on hand-made expectations, and Judge on the twin of a preset."""
from __future__ import annotations

import pytest

from linkscope.errors import ConfigError, TopologyError
from linkscope.judge.expect import Judge, max_gpu_used
from linkscope.judge.references import ReferenceTable
from linkscope.judge.verdict import Alternative, Expectation, Thresholds, Verdict, decide
from linkscope.results.schema import ALL, Measurement, Status
from linkscope.results.stats import Stats
from linkscope.topology.presets import load_preset

SIZE = 512 << 20


def _bw(src, dst, method, value, **kw) -> Measurement:
    return Measurement(src, dst, method, kw.pop("pattern", "matrix"), kw.pop("direction", "uni"), kw.pop("size", SIZE),
                       bandwidth=Stats.single(value), **kw)


def test_decide_ok_low_high_and_unjudged():
    exp = Expectation(theoretical=478.0, twin=393.0, route="NV18", detail="ce")
    assert decide("x", 390.0, exp).verdict is Verdict.OK
    low = decide("x", 200.0, exp)
    assert low.verdict is Verdict.LOW and low.cause == "" and "51%: low" in low.reason
    assert decide("x", 470.0, exp).verdict is Verdict.HIGH  # 120% of the twin
    above = decide("x", 500.0, Expectation(theoretical=478.0, twin=480.0))
    assert above.verdict is Verdict.HIGH and "theoretical bottleneck 478" in above.reason
    none = decide("x", 10.0, Expectation(note="not modelled"))
    assert none.verdict is Verdict.UNJUDGED and none.fraction is None and "not modelled" in none.reason
    assert decide("x", None, exp).verdict is Verdict.UNJUDGED


def test_decide_names_the_cause_that_explains_a_low_number():
    exp = Expectation(twin=393.0, route="NV18", alternatives=(
        Alternative("PCIe staging through host memory", 38.5, "peer access likely off"),
        Alternative("something else", 150.0, "other")))
    judged = decide("GPU0->GPU1 ce 37 GB/s", 37.0, exp)
    assert judged.verdict is Verdict.LOW and judged.cause == "peer access likely off"
    assert "37 is what PCIe staging through host memory gives (~38.5): peer access likely off" in judged.line
    assert decide("x", 90.0, exp).cause == ""  # 90 is near neither alternative


def test_latency_is_judged_lower_is_better():
    exp = Expectation(unit="us", twin=2.0)
    assert decide("x", 2.1, exp).verdict is Verdict.OK
    slow = decide("x", 5.0, exp)
    assert slow.verdict is Verdict.LOW and slow.fraction == pytest.approx(0.4)
    assert decide("x", 1.0, exp).verdict is Verdict.HIGH


def test_thresholds_are_settable_and_checked():
    exp = Expectation(twin=100.0)
    assert decide("x", 85.0, exp, Thresholds(low_below=0.9)).verdict is Verdict.LOW
    assert decide("x", 85.0, exp, Thresholds(low_below=0.8)).verdict is Verdict.OK
    for bad in ({"low_below": 0.0}, {"low_below": 1.5}, {"high_above": 0.9}, {"low_below": float("nan")}):
        with pytest.raises(ConfigError):
            Thresholds(**bad)
    assert "80%" in Thresholds().text()


@pytest.fixture(scope="module")
def judge() -> Judge:
    return Judge(load_preset("dgx-h100"), gpus=[0, 1], references=ReferenceTable({}, {}))  # the twin's verdicts


def test_peer_copy_without_peer_access_is_low_with_the_reason(judge):
    judged = judge.judge(_bw(0, 1, "ce", 37.0))
    assert judged.verdict is Verdict.LOW
    assert judged.cause == "peer access likely off" and judged.cause_key == "no-peer-access"
    assert judged.line.startswith("GPU0->GPU1 ce 512 MiB 37.0 GB/s: NV18 route expects ~3")
    declared = judge.judge(_bw(0, 1, "ce", 37.0, extra={"peer_access": False}))
    assert "as the tool says" in declared.cause


def test_twin_matching_numbers_are_ok(judge):
    assert judge.judge(_bw(0, 1, "ce", 390.0)).verdict is Verdict.OK
    assert judge.judge(_bw(0, 1, "ce", 740.0, direction="bi", scope="total")).verdict is Verdict.OK
    coll = Measurement(ALL, ALL, "nccl.allreduce", "collective", "uni", SIZE, bandwidth=Stats.single(316.8),
                       extra={"busbw_gb_per_s": 316.8, "ranks": 2})
    judged = judge.judge(coll)
    assert judged.verdict is Verdict.OK
    assert judged.line.startswith("allreduce 512 MiB busbw 316.8 GB/s on 2 x H100 NV18: twin 3")


def test_collective_without_p2p_is_explained(judge):
    coll = Measurement(ALL, ALL, "nccl.allreduce", "collective", "uni", SIZE, bandwidth=Stats.single(45.0),
                       extra={"busbw_gb_per_s": 45.0, "ranks": 2})
    judged = judge.judge(coll)
    assert judged.verdict is Verdict.LOW and "peer-to-peer" in judged.cause and judged.cause_key == "collective-no-p2p"


def test_what_the_twin_does_not_model_is_not_judged(judge):
    assert judge.judge(_bw(0, 1, "mpi.bw", 10.0, extra={"buffers": "H H"})).verdict is Verdict.UNJUDGED
    assert judge.judge(_bw(0, 1, "frobnicate", 10.0)).verdict is Verdict.UNJUDGED
    failed = _bw(0, 1, "ce", 10.0, status=Status.ERROR, reason="wrong data")
    assert "wrong data" in judge.judge(failed).reason


def test_gpus_map_the_tool_onto_the_topology():
    topo = load_preset("dgx-h100")
    judge = Judge(topo, gpus=[6, 7])
    assert judge.gpu(0) == 6 and judge.gpu(1) == 7
    many = [_bw(0, 2, "ce", 390.0)]
    assert max_gpu_used(many) == 3
    with pytest.raises(TopologyError, match="uses 3 GPUs"):
        judge.check_fit(many, "the file")
    with pytest.raises(TopologyError):
        Judge(topo, gpus=[8])
