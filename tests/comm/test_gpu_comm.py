"""Real NCCL and device buffers (skipped without CuPy and GPUs)."""
import pytest

from linkscope.comm.launch import serial_job
from linkscope.model.collectives import OPS


def _gpus() -> int:
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(_gpus() < 1, reason="needs a GPU with CuPy")]


def test_device_space_fill_check_and_staging():
    import numpy as np

    from linkscope.comm.buffers import CupyDeviceSpace

    space = CupyDeviceSpace(0)
    buf = space.alloc(10_000)
    space.fill(buf, 10_000, 7)
    assert space.wrong_bytes(buf, 10_000, 7) == 0
    host = np.zeros(10_000, dtype=np.uint8)
    space.to_host(buf, host, 10_000)
    space.poison(buf, 10_000)
    assert space.wrong_bytes(buf, 10_000, 7) == 10_000 - int(np.count_nonzero(host == 0xEE))
    space.from_host(host, buf, 10_000)
    assert space.wrong_bytes(buf, 10_000, 7) == 0


@pytest.mark.nccl
@pytest.mark.multi_gpu
@pytest.mark.skipif(_gpus() < 2, reason="2 GPUs required")
@pytest.mark.parametrize("op", OPS)
def test_real_nccl_ops_are_correct(op):
    from linkscope.comm.nccl import make_peers, run_nccl
    from linkscope.comm.nccl_backend import CupyNccl

    be = CupyNccl()
    job = serial_job()
    peers = make_peers(job, be, [0, 1])
    try:
        result = run_nccl(job, be, peers, op, [8, 1 << 20], iters=5, warmup=2)
    finally:
        be.destroy(peers)
    assert [r.wrong for r in result.rows] == [0, 0]
    assert all(r.time_us > 0 for r in result.rows)


@pytest.mark.nccl
@pytest.mark.multi_gpu
@pytest.mark.skipif(_gpus() < 2, reason="2 GPUs required")
def test_real_stencil_with_emulated_pair():
    from linkscope.comm.nccl_backend import CupyNccl
    from linkscope.comm.stencil import run_stencil

    be = CupyNccl()
    result = run_stencil(serial_job(), be, lambda d: be.init_all(list(d)), (2, 1), {"default": (0, 1)},
                         sizes=[4096], iters=5, runs=2, slow_pairs=((0, 1),))
    assert result.rows[0].wrong == 0 and result.rows[0].mean_us > 0


@pytest.mark.nccl
@pytest.mark.multi_gpu
@pytest.mark.skipif(_gpus() < 2, reason="2 GPUs required")
def test_real_stencil_in_cuda_graphs():
    from linkscope.comm.nccl_backend import CupyNccl
    from linkscope.comm.stencil import run_stencil

    be = CupyNccl()
    result = run_stencil(serial_job(), be, lambda d: be.init_all(list(d)), (2, 1), {"default": (0, 1)},
                         sizes=[4096, 1 << 20], iters=20, runs=2, graph_iters=10)
    assert all(r.graph and r.wrong == 0 and r.mean_us > 0 for r in result.rows), result.notes


@pytest.mark.nccl
@pytest.mark.multi_gpu
@pytest.mark.skipif(_gpus() < 2, reason="2 GPUs required")
@pytest.mark.parametrize("op", OPS)
def test_real_nccl_ops_in_place(op):
    from linkscope.comm.nccl import UNCHECKED_IN_PLACE, make_peers, run_nccl
    from linkscope.comm.nccl_backend import CupyNccl

    be = CupyNccl()
    job = serial_job()
    peers = make_peers(job, be, [0, 1])
    try:
        result = run_nccl(job, be, peers, op, [8, 1 << 20], iters=5, warmup=2, inplace=True)
    finally:
        be.destroy(peers)
    expected = [0, None if op in UNCHECKED_IN_PLACE else 0] * 2
    assert [r.wrong for r in result.rows] == expected
    assert [r.inplace for r in result.rows] == [False, True, False, True]


@pytest.mark.nccl
@pytest.mark.multi_gpu
@pytest.mark.skipif(_gpus() < 2, reason="2 GPUs required")
@pytest.mark.parametrize("op", OPS)
def test_real_nccl_ops_launched_by_the_native_loop_are_correct(op, monkeypatch):
    """The native eager loop (comm.eagerloop) on the real library: the timed rows say ``native``, and the data
    check's operation, issued by the native loop too, leaves every element right (out of place and in place)."""
    import os

    from linkscope.comm import eagerloop
    from linkscope.comm import nccl as runner
    from linkscope.comm.nccl import make_peers, run_nccl
    from linkscope.comm.nccl_backend import CupyNccl

    def native_enqueue(backend, op_, peers, bufs, lay, nranks):
        loop, why = eagerloop.native_loop(backend, runner.calls(backend, op_, peers, bufs, lay, nranks),
                                          environ=os.environ)
        assert loop is not None, why
        loop.run(1)

    monkeypatch.setattr(runner, "enqueue", native_enqueue)
    be = CupyNccl()
    job = serial_job()
    peers = make_peers(job, be, [0, 1])
    try:
        result = run_nccl(job, be, peers, op, [8, 1 << 20], iters=5, warmup=2, inplace=True)
    finally:
        be.destroy(peers)
    assert {r.launch_path for r in result.rows} == {"native"}, result.notes
    assert [r.wrong for r in result.rows if r.wrong is not None] and all(
        r.wrong == 0 for r in result.rows if r.wrong is not None)
