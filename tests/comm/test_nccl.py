"""The NCCL runner against its simulated backend (SimNccl): data checks, tables, errors."""
import numpy as np
import pytest

from linkscope.comm.launch import CollectiveError, serial_job
from linkscope.comm.nccl import make_peers, run_nccl
from linkscope.comm.nccl_backend import SimNccl
from linkscope.comm.records import nccl_record
from linkscope.model.collectives import OP_TABLE, OPS
from linkscope.report import textformats
from linkscope.topology.synthetic import synthetic_topology

from .conftest import sim_backend


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("gpus", [2, 3])
def test_every_op_checks_clean(op, gpus):
    be = sim_backend(gpus)
    job = serial_job()
    peers = make_peers(job, be, None)
    result = run_nccl(job, be, peers, op, [8, 4096, 1 << 16], iters=3, warmup=1)
    assert [r.wrong for r in result.rows] == [0, 0, 0]
    assert result.simulated and result.ranks == gpus
    assert all(r.time_us > 0 for r in result.rows)


class Corrupting(SimNccl):
    def _move_data(self):
        groups = list(self._unsynced)
        super()._move_data()
        for _, calls in groups:
            for call in calls:
                if call[3] is not None:
                    call[3][:1] += 1.0  # every receive buffer gets one wrong element


def test_wrong_elements_are_counted_and_fail_the_record():
    be = Corrupting(synthetic_topology("nvswitch:2"))
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [1024], iters=2, warmup=0)
    assert result.rows[0].wrong == 2
    text = textformats.nccl_tests_text(nccl_record(result, {}, {}))
    assert "FAILED" in text
    record = nccl_record(result, {}, {})
    assert record.errors and record.errors[0].reason == "2 wrong elements"


def test_table_and_record_fields():
    be = sim_backend(4)
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [1 << 20], iters=2, warmup=1, runs=3)
    row = result.rows[0]
    assert row.busbw_gb_per_s == pytest.approx(row.algbw_gb_per_s * 1.5)
    text = textformats.nccl_tests_text(nccl_record(result, {}, {}))
    assert "#wrong" in text and "(GB/s)" in text and "SIMULATED" in text
    m = nccl_record(result, {"ranks": 1}, {"op": "allreduce"}).measurements[0]
    assert m.method == "nccl.allreduce" and m.extra["busbw_gb_per_s"] == pytest.approx(row.busbw_gb_per_s)
    assert m.latency.n == 3 and m.provenance.value == "simulated"


def test_sizes_beyond_free_memory_are_refused():
    be = sim_backend(2, free=1 << 20)
    job = serial_job()
    with pytest.raises(CollectiveError, match="needs 8 MiB on GPU 0, only 1 MiB is free"):
        run_nccl(job, be, make_peers(job, be, None), "allreduce", [4 << 20])


def test_duplicate_gpus_refused():
    with pytest.raises(CollectiveError, match="twice"):
        make_peers(serial_job(), sim_backend(2), [0, 0])


def test_alltoall_moves_chunks_to_the_right_ranks():
    be = sim_backend(3)
    peers = be.init_all([0, 1, 2])
    send = [np.arange(6, dtype=np.float32) + 10 * r for r in range(3)]
    recv = [np.zeros(6, dtype=np.float32) for _ in range(3)]
    be.group_start()
    for p in peers:
        for k in range(3):
            be.send(p, send[p.rank][2 * k:2 * k + 2], 2, k)
            be.recv(p, recv[p.rank][2 * k:2 * k + 2], 2, k)
    be.group_end()
    be.sync(peers)  # as on a GPU: the data is there once the streams are synchronised
    assert recv[1].tolist() == [2, 3, 12, 13, 22, 23]


@pytest.mark.parametrize("op", OPS)
def test_in_place_runs_every_op_with_nccl_tests_offsets(op):
    be = sim_backend(3)
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), op, [4096, 1 << 16], iters=2, warmup=1, inplace=True)
    chunked = OP_TABLE[op].layout != "whole"  # rounded down to whole chunks of 3 ranks
    sizes = [4092, 65532] if chunked else [4096, 65536]
    assert [(r.size_bytes, r.inplace) for r in result.rows] == [(s, p) for s in sizes for p in (False, True)]
    for r in result.rows:
        if r.inplace and op in ("alltoall", "sendrecv"):
            assert r.wrong is None  # NCCL defines no in-place alltoall/sendrecv: not checked (nccl-tests)
        else:
            assert r.wrong == 0


def test_in_place_buffers_alias_as_in_nccl_tests():
    from linkscope.comm.nccl import _Buffers
    from linkscope.model.collectives import layout

    be = sim_backend(4)
    peers = be.init_all([0, 1, 2, 3])
    for op in ("allreduce", "allgather", "reduce_scatter", "broadcast"):
        lay = layout(op, 4096, 4)
        bufs = _Buffers.allocate(be, peers, lay)
        out = bufs.views(op, peers, lay, False)
        inp = bufs.views(op, peers, lay, True)
        assert not any(np.shares_memory(s, r) for s, r in zip(out.send, out.recv))
        assert all(np.shares_memory(s, r) for s, r in zip(inp.send, inp.recv))
    lay = layout("allgather", 4096, 4)
    inp = _Buffers.allocate(be, peers, lay).views("allgather", peers, lay, True)
    # rank 2 sends from its own slot of the receive buffer: recv + 2 * chunk
    assert inp.send[2].ctypes.data == inp.recv[2].ctypes.data + 2 * lay.chunk_count * 4


class NoOp(SimNccl):
    def group_end(self):
        self._pending = None  # the operation silently does nothing
        self.clock.now_s += 5e-6


def test_in_place_check_catches_an_operation_that_does_nothing():
    be = NoOp(synthetic_topology("nvswitch:2"))
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [1024], iters=1, warmup=0, inplace=True)
    assert all(r.wrong == 256 * 2 for r in result.rows)  # in place the buffer still holds the input


def test_in_place_table_has_both_column_groups_and_record_fields():
    be = sim_backend(2)
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "sendrecv", [8, 4096], iters=2, warmup=0, inplace=True)
    text = textformats.nccl_tests_text(nccl_record(result, {}, {}))
    assert "out-of-place" in text and "in-place" in text
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert [len(r) for r in rows] == [13, 13] and rows[1][-1] == "N/A" and rows[1][8] == "0"
    ms = nccl_record(result, {}, {}).measurements
    assert [(m.size_bytes, m.extra["inplace"]) for m in ms] == [(8, False), (8, True), (4096, False), (4096, True)]
    assert all(m.method == "nccl.sendrecv" and {"algbw_gb_per_s", "busbw_gb_per_s", "wrong"} <= set(m.extra)
               for m in ms)
    assert ms[1].verified is None and ms[0].verified is True


def test_default_run_is_out_of_place_only_and_its_in_place_columns_say_n_a():
    # nccl-tests always prints both column groups; a group that was not run is N/A, never a number
    be = sim_backend(2)
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [8, 4096], iters=2, warmup=0)
    text = textformats.nccl_tests_text(nccl_record(result, {}, {}))
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    assert [len(r) for r in rows] == [13, 13] and all(r[9:] == ["N/A"] * 4 for r in rows)
    assert all(m.extra["inplace"] is False for m in nccl_record(result, {}, {}).measurements)


def test_simulated_repeats_advance_the_clock_each_time_but_move_data_once():
    be = sim_backend(2)
    peers = be.init_all([0, 1])
    send = [np.full(4, 1.0 + r, dtype=np.float32) for r in range(2)]
    recv = [np.zeros(4, dtype=np.float32) for _ in range(2)]
    t0 = be.record(peers[0])
    for _ in range(3):
        be.group_start()
        for p in peers:
            be.collective("allreduce", p, send[p.rank], recv[p.rank], 4)
        be.group_end()
    one = be.model.predict("allreduce", [0, 1], 16).time_us * 1e-6
    assert be.elapsed_s(t0, be.record(peers[0])) == pytest.approx(3 * one)
    assert len(be._unsynced) == 1 and recv[0].tolist() == [0.0] * 4
    be.sync(peers)
    assert recv[0].tolist() == recv[1].tolist() == [3.0] * 4 and not be._unsynced


def test_simulated_buffers_are_bounded_and_unmoved_data_is_not_checked():
    """A simulated 1 GiB collective must not allocate 1 GiB buffers (issue 22: the old backend was
    killed at 23.7 GB for an 8-rank 1 GiB allreduce); sizes beyond the limit are timed, #wrong N/A."""
    from linkscope.topology.presets import load_preset

    be = SimNccl(load_preset("dgx-h100"))
    job = serial_job()
    peers = make_peers(job, be, None)
    assert be.alloc(peers[0], 1 << 28).nbytes <= 4 << 20
    result = run_nccl(job, be, peers, "allreduce", [1 << 20, 1 << 30], iters=2, warmup=1)
    assert [r.wrong for r in result.rows] == [0, None]  # 1 MiB checked, 1 GiB timed only
    assert result.rows[1].busbw_gb_per_s > 300 and any("#wrong N/A" in n for n in result.notes)
    unchecked = run_nccl(job, be, peers, "allgather", [8 << 20], iters=1, warmup=0, verify=False)
    assert unchecked.rows[0].wrong is None and not unchecked.notes  # --no-verify: N/A, no data note


def test_every_size_is_warmed_once_in_sweep_order_before_the_first_row(monkeypatch):
    """nccl-tests' warm-up pass (common.cu TimeTest): one operation at every size before the first timed row, so
    the first size of new communicators is not timed cold (2 x H200: sendrecv 64 B 24-27 us in every set, the
    next sizes 14-25)."""
    import linkscope.comm.nccl as runner

    be = sim_backend(2)
    job = serial_job()
    peers = make_peers(job, be, None)
    order: list[tuple[str, int]] = []
    real_prepared, real_time_op = runner.prepared, runner.time_op
    monkeypatch.setattr(runner, "prepared", lambda backend, op, ps, bufs, lay, n: (
        order.append(("launch", lay.size_bytes)), real_prepared(backend, op, ps, bufs, lay, n))[1])
    monkeypatch.setattr(runner, "time_op", lambda *a, **k: (order.append(("timed", 0)), real_time_op(*a, **k))[1])
    run_nccl(job, be, peers, "sendrecv", [64, 4096, 1 << 16], iters=2, warmup=1)
    first_timed = order.index(("timed", 0))
    assert [size for kind, size in order[:3]] == [64, 4096, 1 << 16] and first_timed > 3
