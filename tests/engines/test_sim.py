"""The sim engine against the TransferEngine contract (the same contract the cuda engine meets)."""
import pytest

from linkscope.engines.base import LATENCY_KINDS, GroupResult
from linkscope.engines.sim import SimEngine
from linkscope.errors import UserError
from linkscope.model.predict import FabricModel
from linkscope.patterns.plan import Transfer, TransferPlan
from linkscope.topology.presets import load_preset

MiB = 1 << 20


def _plan(method, pairs, size=64 * MiB, pattern="pairs"):
    return TransferPlan(pattern, "uni", method, tuple(Transfer(a, b, size) for a, b in pairs))


@pytest.fixture(scope="module")
def engine():
    return SimEngine(load_preset("hgx-h200-4"), params=None)


def test_capabilities_and_basics(engine):
    caps = engine.capabilities()
    assert caps.name == "sim" and caps.provenance == "simulated" and caps.concurrent
    keys = [m.key for m in caps.methods]
    assert {"ce", "ce-read", "ce-write", "ce-nopeer", "sm-push", "sm-pull", "staged", "staged-pinned",
            "h2d", "d2h", "h2d-pageable", "d2h-pageable", "local"} == set(keys)
    assert caps.method("ce").needs_peer_access and not caps.method("ce-nopeer").needs_peer_access
    assert caps.method("h2d").host_endpoint and not caps.method("h2d").peer
    assert engine.gpu_count() == 4
    assert engine.free_memory_bytes(0) > 100 * 2**30
    assert tuple(caps.latency_kinds) == LATENCY_KINDS


def test_run_contract(engine):
    plan = _plan("ce", [(0, 1), (1, 2), (2, 3), (3, 0)], pattern="ring")
    result = engine.run(plan, 5, warmup=2, verify=True, chunk_bytes=None)
    assert isinstance(result, GroupResult)
    assert len(result.timings) == len(plan.transfers) and len(result.group_elapsed_s) == 5
    for t, timing in zip(plan.transfers, result.timings):
        assert len(timing.elapsed_s) == 5 and all(e > 0 for e in timing.elapsed_s)
        assert timing.moved_bytes == t.size_bytes and timing.verified is None
    assert result.group_elapsed_s[0] == max(t.elapsed_s[0] for t in result.timings)
    # deterministic and equal to the model's prediction
    again = engine.run(plan, 5, warmup=0, verify=False)
    assert again.timings == result.timings
    expected = FabricModel(load_preset("hgx-h200-4")).predict(plan)
    assert [t.elapsed_s[0] for t in result.timings] == pytest.approx([p.elapsed_s for p in expected])


def test_seeded_noise_is_reproducible():
    topo = load_preset("hgx-h200-4")
    a = SimEngine(topo, noise_rel=0.02, seed=7).run(_plan("ce", [(0, 1)]), 10, warmup=0, verify=False)
    b = SimEngine(topo, noise_rel=0.02, seed=7).run(_plan("ce", [(0, 1)]), 10, warmup=0, verify=False)
    assert a.timings == b.timings and len(set(a.timings[0].elapsed_s)) > 1


def test_waivers_and_errors():
    topo = load_preset("pcie-8gpu-2socket").replace(model_params={"no_peer_access": [[0, 4]]})
    eng = SimEngine(topo)
    assert "no peer access" in eng.waiver(_plan("ce", [(0, 4)]))
    assert eng.waiver(_plan("ce-nopeer", [(0, 4)])) is None
    assert eng.waiver(_plan("ce", [(0, 1)])) is None
    # bad plans are waivers (as on the GPU engine), and running one is a ConfigError
    assert "GPU 9 does not exist" in eng.waiver(_plan("ce", [(0, 9)]))
    assert "unknown method 'warp-drive'" in eng.waiver(_plan("warp-drive", [(0, 1)]))
    assert "use 'local'" in eng.waiver(_plan("ce", [(2, 2)]))
    with pytest.raises(UserError):
        eng.run(_plan("ce", [(2, 2)]), 1, warmup=0, verify=False)


def test_waiver_for_a_pair_without_route():
    from linkscope.topology.model import Device, DeviceKind

    topo = load_preset("hgx-h200-4")
    lonely = Device(id="gpu4", kind=DeviceKind.GPU, name="GPU", index=4, vendor="nvidia", numa_node=0)
    eng = SimEngine(topo.replace(devices=topo.devices + (lonely,)))
    reason = eng.waiver(_plan("ce-nopeer", [(0, 4)]))
    assert reason and "no route" in reason


def test_latency_kinds(engine):
    rr = engine.latency_us("remote-read", 0, 1, method=None, size_bytes=8, reps=4, warmup=1)
    ping = engine.latency_us("flag-pingpong", 0, 1, method=None, size_bytes=8, reps=4, warmup=1)
    copy = engine.latency_us("copy", 0, 1, method="ce", size_bytes=8, reps=4, warmup=1)
    host = engine.latency_us("copy", "host", 1, method="h2d", size_bytes=8, reps=1, warmup=0)
    assert len(rr) == 4 and len(set(rr)) == 1 and rr[0] > ping[0] > 0
    assert copy[0] > ping[0] and host[0] > 0
    with pytest.raises(UserError):
        engine.latency_us("telepathy", 0, 1, method=None, size_bytes=8, reps=1, warmup=0)


def test_staged_copies_report_chunk_effect():
    eng = SimEngine(load_preset("hgx-h200-4"))
    small = eng.run(_plan("staged-pinned", [(0, 1)], size=256 * MiB), 1, warmup=0, verify=False, chunk_bytes=1 * MiB)
    large = eng.run(_plan("staged-pinned", [(0, 1)], size=256 * MiB), 1, warmup=0, verify=False, chunk_bytes=64 * MiB)
    assert small.timings[0].elapsed_s[0] < large.timings[0].elapsed_s[0]


def test_pageable_group_runs_one_after_another_as_the_cuda_engine_runs_it(engine):
    # the cuda engine issues a group's pageable copies from one thread, one after another, times each alone
    # and reports the group as their sum, with SERIAL_NOTE; the simulated twin now does the same
    from linkscope.model.host_copies import SERIAL_NOTE

    plan = TransferPlan("all-to-host", "uni", "d2h-pageable", (Transfer(0, "host", 64 * MiB), Transfer(1, "host", 64 * MiB)))
    result = engine.run(plan, 3, warmup=0, verify=False, chunk_bytes=None)
    alone = engine.run(_plan("d2h-pageable", [(0, "host")], pattern="host"), 1, warmup=0, verify=False,
                       chunk_bytes=None).timings[0].elapsed_s[0]
    assert result.timings[0].elapsed_s[0] == pytest.approx(alone) and result.timings[1].elapsed_s[0] == pytest.approx(alone)
    assert result.group_elapsed_s[0] == pytest.approx(2 * alone)  # overlapped, it was less than 2x
    assert SERIAL_NOTE in result.notes
