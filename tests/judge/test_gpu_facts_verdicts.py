"""Verdicts read the GPU facts: a device-local copy and latencies are judged against the GPU model's facts,
and a model the table does not know is not judged ("no facts for GPU model X"), never a borrowed figure."""
from __future__ import annotations

from dataclasses import replace

from linkscope.judge.expect import Judge
from linkscope.judge.verdict import Verdict
from linkscope.results.schema import Measurement
from linkscope.results.stats import Stats
from linkscope.topology.presets import load_preset

SIZE = 512 << 20


def _local(value: float) -> Measurement:
    return Measurement(0, 0, "local", "local", "uni", SIZE, bandwidth=Stats.single(value))


def _latency(kind: str, value_us: float) -> Measurement:
    return Measurement(0, 1, kind, "latency", "uni", 0, latency=Stats.single(value_us), extra={"latency_kind": kind})


def _bare(name: str | None = None):
    """The H200 preset as NVML discovery gives it: no link latencies (optionally renamed GPUs)."""
    topo = load_preset("hgx-h200-4")
    devices = tuple(replace(d, name=name) if d.is_gpu and name else d for d in topo.devices)
    return topo.replace(devices=devices, links=tuple(replace(link, latency_us=None) for link in topo.links))


def test_h200_local_copy_and_latencies_are_ok() -> None:
    judge = Judge(_bare())
    assert judge.judge(_local(2080.0)).verdict is Verdict.OK  # measured 2078-2085 on 4 x H200
    assert judge.judge(_latency("remote-read", 0.824)).verdict is Verdict.OK  # twin said 1.2 before the facts
    assert judge.judge(_latency("flag-pingpong", 0.656)).verdict is Verdict.OK
    assert judge.judge(_local(1000.0)).verdict is Verdict.LOW


def test_k80_local_copy_above_its_memory_is_not_ok() -> None:
    judge = Judge(load_preset("k80-16"))
    assert judge.judge(_local(1483.0)).verdict is Verdict.HIGH
    assert judge.judge(_local(100.0)).verdict is Verdict.OK


def test_unknown_model_is_not_judged_with_a_reason() -> None:
    judge = Judge(_bare("Mystery GPU 9000"))
    for m in (_local(2080.0), _latency("remote-read", 0.824), _latency("flag-pingpong", 0.65)):
        judged = judge.judge(m)
        assert judged.verdict is Verdict.UNJUDGED
        assert "no facts for GPU model 'Mystery GPU 9000'" in judged.reason
