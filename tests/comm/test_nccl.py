"""The NCCL runner against its NumPy twin (FakeNccl): data checks, tables, errors."""
import numpy as np
import pytest

from linkscope.comm.collectives import OPS
from linkscope.comm.launch import CollectiveError, serial_job
from linkscope.comm.nccl import make_peers, run_nccl
from linkscope.comm.nccl_backend import FakeNccl
from linkscope.comm.render import nccl_record, nccl_text


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("gpus", [2, 3])
def test_every_op_checks_clean(op, gpus):
    be = FakeNccl(gpus=gpus)
    job = serial_job()
    peers = make_peers(job, be, None)
    result = run_nccl(job, be, peers, op, [8, 4096, 1 << 16], iters=3, warmup=1)
    assert [r.wrong for r in result.rows] == [0, 0, 0]
    assert result.simulated and result.ranks == gpus
    assert all(r.time_us > 0 for r in result.rows)


class Corrupting(FakeNccl):
    def group_end(self):
        pending = list(self._pending or [])
        super().group_end()
        for call in pending:
            if call[3] is not None:
                call[3][:1] += 1.0  # every receive buffer gets one wrong element


def test_wrong_elements_are_counted_and_fail_the_record():
    be = Corrupting(gpus=2)
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [1024], iters=2, warmup=0)
    assert result.rows[0].wrong == 2
    text = nccl_text(result)
    assert "FAILED" in text
    record = nccl_record(result, {}, {})
    assert record.errors and record.errors[0].reason == "2 wrong elements"


def test_table_and_record_fields():
    be = FakeNccl(gpus=4)
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [1 << 20], iters=2, warmup=1, runs=3)
    row = result.rows[0]
    assert row.busbw_gb_per_s == pytest.approx(row.algbw_gb_per_s * 1.5)
    text = nccl_text(result)
    assert "#wrong" in text and "(GB/s)" in text and "SIMULATED" in text
    m = nccl_record(result, {"ranks": 1}, {"op": "allreduce"}).measurements[0]
    assert m.method == "nccl.allreduce" and m.extra["busbw_gb_per_s"] == pytest.approx(row.busbw_gb_per_s)
    assert m.latency.n == 3 and m.provenance.value == "simulated"


def test_sizes_beyond_free_memory_are_refused():
    be = FakeNccl(gpus=2, free=1 << 20)
    job = serial_job()
    with pytest.raises(CollectiveError, match="needs 8 MiB on GPU 0, only 1 MiB is free"):
        run_nccl(job, be, make_peers(job, be, None), "allreduce", [4 << 20])


def test_duplicate_gpus_refused():
    with pytest.raises(CollectiveError, match="twice"):
        make_peers(serial_job(), FakeNccl(gpus=2), [0, 0])


def test_alltoall_moves_chunks_to_the_right_ranks():
    be = FakeNccl(gpus=3)
    peers = be.init_all([0, 1, 2])
    send = [np.arange(6, dtype=np.float32) + 10 * r for r in range(3)]
    recv = [np.zeros(6, dtype=np.float32) for _ in range(3)]
    be.group_start()
    for p in peers:
        for k in range(3):
            be.send(p, send[p.rank][2 * k:2 * k + 2], 2, k)
            be.recv(p, recv[p.rank][2 * k:2 * k + 2], 2, k)
    be.group_end()
    assert recv[1].tolist() == [2, 3, 12, 13, 22, 23]
