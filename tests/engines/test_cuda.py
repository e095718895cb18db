"""CUDA engine on real GPUs: the TransferEngine contract, data checks, waivers, latencies.

Skipped cleanly without CuPy or without a GPU; the two-GPU tests are also marked multi_gpu.
"""
from __future__ import annotations

import pytest

from linkscope.errors import ConfigError
from linkscope.patterns.plan import Transfer, TransferPlan

cupy = pytest.importorskip("cupy")


def _device_count() -> int:
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


N_GPUS = _device_count()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(N_GPUS < 1, reason="needs an NVIDIA GPU")]

MiB = 1024 * 1024


@pytest.fixture(scope="module")
def engine():
    from linkscope.engines.cuda import CudaEngine

    eng = CudaEngine()
    yield eng
    eng.close()


def plan(method: str, *pairs: tuple, size: int = 4 * MiB + 5, direction: str = "uni") -> TransferPlan:
    return TransferPlan(pattern="test", direction=direction, method=method,
                        transfers=tuple(Transfer(s, d, size) for s, d in pairs))


def check_result(result, n_transfers: int, reps: int, size: int) -> None:
    assert len(result.timings) == n_transfers
    assert len(result.group_elapsed_s) == reps
    for t in result.timings:
        assert len(t.elapsed_s) == reps
        assert all(e > 0 for e in t.elapsed_s)
        assert 0 <= t.moved_bytes <= size
        assert t.verified is True


def test_capabilities_list_every_method(engine):
    caps = engine.capabilities()
    keys = {m.key for m in caps.methods}
    assert keys == {"ce", "ce-read", "ce-write", "ce-nopeer", "sm-push", "sm-pull", "staged", "staged-pinned",
                    "h2d", "d2h", "h2d-pageable", "d2h-pageable", "local"}
    assert caps.provenance == "measured"
    assert engine.gpu_count() == N_GPUS
    assert engine.free_memory_bytes(0) > 0


def test_waivers_name_the_problem(engine):
    assert "valid methods" in engine.waiver(plan("ce-wirte", (0, 0)))
    assert "does not exist" in engine.waiver(plan("local", (N_GPUS, N_GPUS)))
    assert "host -> GPU" in engine.waiver(plan("h2d", (0, "host")))
    too_big = engine.free_memory_bytes(0) + 1024 * MiB
    assert "does not fit" in engine.waiver(plan("local", (0, 0), size=too_big))
    with pytest.raises(ConfigError):
        engine.run(plan("local", (0, 0), size=too_big), 1, warmup=0, verify=True)


@pytest.mark.parametrize("method,src,dst", [("local", 0, 0), ("h2d", "host", 0), ("d2h", 0, "host"),
                                            ("h2d-pageable", "host", 0), ("d2h-pageable", 0, "host"),
                                            ("sm-push", 0, "host"), ("sm-pull", "host", 0)])
def test_single_gpu_methods_move_the_right_bytes(engine, method, src, dst):
    size = 4 * MiB + 5  # not a multiple of 16: the SM copy's byte tail is exercised
    result = engine.run(plan(method, (src, dst), size=size), 3, warmup=1, verify=True)
    check_result(result, 1, 3, size)


def test_small_sizes_repeat_inside_a_region(engine):
    result = engine.run(plan("local", (0, 0), size=8), 2, warmup=1, verify=True)
    check_result(result, 1, 2, 8)
    assert any("copies per timed region" in n for n in result.notes)


def test_data_check_detects_a_wrong_destination(engine):
    from linkscope.engines.gpu.buffers import DeviceBuffer
    from linkscope.engines.gpu.ops import DataCheck

    buf = DeviceBuffer.allocate(engine.rt, 0, 1 * MiB + 3)
    try:
        check = DataCheck(engine._ctx, buf, 0)
        check.fill(seed=7)
        assert check.mismatches(seed=7) == 0
        assert check.mismatches(seed=8) > 0
        check.poison()
        assert check.mismatches(seed=7) > 0
    finally:
        buf.free()


@pytest.mark.multi_gpu
@pytest.mark.skipif(N_GPUS < 2, reason="2 GPUs required")
@pytest.mark.parametrize("method", ["ce", "ce-read", "ce-write", "ce-nopeer", "sm-push", "sm-pull", "staged", "staged-pinned"])
def test_peer_methods(engine, method):
    if engine.waiver(plan(method, (0, 1))):
        pytest.skip(engine.waiver(plan(method, (0, 1))))
    size = 3 * MiB + 7
    result = engine.run(plan(method, (0, 1), (1, 0), size=size, direction="bi"), 3, warmup=1, verify=True,
                        chunk_bytes=1 * MiB)
    check_result(result, 2, 3, size)


@pytest.mark.multi_gpu
@pytest.mark.skipif(N_GPUS < 2, reason="2 GPUs required")
@pytest.mark.parametrize("shape", [(4096, 4), (8192, 4), (16384, 2), (8192, 2)])
def test_bulk_sm_copy_moves_the_right_bytes(engine, shape):
    from linkscope.engines.cuda import SmLaunch

    before = engine.sm_launch
    engine.sm_launch = SmLaunch(blocks_per_sm=4, bulk=shape)
    try:
        for size in (3 * MiB + 7, 100):
            for method in ("sm-push", "sm-pull"):
                result = engine.run(plan(method, (0, 1), (1, 0), size=size, direction="bi"), 2, warmup=1, verify=True)
                check_result(result, 2, 2, size)
    finally:
        engine.sm_launch = before


@pytest.mark.multi_gpu
@pytest.mark.skipif(N_GPUS < 2, reason="2 GPUs required")
def test_nopeer_restores_peer_access(engine):
    engine.run(plan("ce", (0, 1)), 1, warmup=0, verify=False)
    assert (0, 1) in engine._ctx.peer.enabled
    engine.run(plan("ce-nopeer", (0, 1)), 1, warmup=0, verify=True)
    assert (0, 1) in engine._ctx.peer.enabled and (1, 0) in engine._ctx.peer.enabled


@pytest.mark.multi_gpu
@pytest.mark.skipif(N_GPUS < 2, reason="2 GPUs required")
def test_latencies_are_plausible(engine):
    rr = engine.latency_us("remote-read", 1, 0, method=None, size_bytes=8, reps=3, warmup=1)
    assert len(rr) == 3 and all(0.05 < x < 20 for x in rr)
    pp = engine.latency_us("flag-pingpong", 0, 1, method=None, size_bytes=4, reps=3, warmup=1)
    assert len(pp) == 3 and all(0.05 < x < 50 for x in pp)
    cp = engine.latency_us("copy", 0, 1, method="ce", size_bytes=8, reps=3, warmup=1)
    assert len(cp) == 3 and all(0 < x < 1000 for x in cp)


def test_local_latency_and_copy_once(engine):
    rr = engine.latency_us("remote-read", 0, 0, method=None, size_bytes=8, reps=2, warmup=1)
    assert all(0.01 < x < 20 for x in rr)
    assert engine.copy_once(0, 0, 1 * MiB, method="local") > 0
    with pytest.raises(ConfigError):
        engine.latency_us("bogus", 0, 0, method=None, size_bytes=8, reps=1, warmup=0)


def test_host_read_latency(engine):
    """GPU 0 pointer-chasing through pinned host memory (nvbandwidth's host_device_latency_sm)."""
    hr = engine.latency_us("host-read", "host", 0, method=None, size_bytes=8, reps=3, warmup=1)
    assert len(hr) == 3 and all(0.2 < x < 50 for x in hr)
