import pytest

from linkscope.comm.launch import CollectiveError, serial_job
from linkscope.comm.p2p_matrix import run_p2p_nccl
from linkscope.comm.records import p2p_record
from linkscope.report import textformats

from .conftest import sim_backend


def test_every_ordered_pair_once_and_slow_pair_visible():
    be = sim_backend(spec="pcie:2x2")
    job = serial_job()
    result = run_p2p_nccl(job, be, be.init_all([0, 1, 2]), [1 << 20], iters=2, warmup=1)
    assert len(result.cells) == 6 and all(c.wrong == 0 for c in result.cells)
    m = result.matrix(1 << 20)
    assert m[0][0] is None and m[0][2] < m[0][1]
    record = p2p_record(result, {}, {})
    assert {(x.src, x.dst) for x in record.measurements} == {(i, j) for i in range(3) for j in range(3) if i != j}
    assert "row = sending rank" in textformats.p2p_text(p2p_record(result, {}, {}))


def test_one_rank_is_refused():
    be = sim_backend(1)
    with pytest.raises(CollectiveError, match="at least 2 ranks"):
        run_p2p_nccl(serial_job(), be, be.init_all([0]), [8])


def test_every_pair_is_warmed_before_the_first_timed_cell():
    """Issue 25: the first pair was timed with its connection set-up inside (0->1 read 15.1 GB/s,
    1->0 36.6 on 2 x H100). Every ordered pair exchanges one small message before any timing."""
    be = sim_backend(spec="pcie:2x2")
    events = []
    send, record = be.send, be.record

    def spy_send(peer, buf, count, dst):
        events.append(("send", peer.rank, dst, count))
        return send(peer, buf, count, dst)

    def spy_record(peer):
        events.append(("time", peer.rank))
        return record(peer)

    be.send, be.record = spy_send, spy_record
    run_p2p_nccl(serial_job(), be, be.init_all([0, 1, 2]), [1 << 20], iters=2, warmup=1)
    first_timed = next(i for i, e in enumerate(events) if e[0] == "time")
    warmed = {(e[1], e[2]) for e in events[:first_timed] if e[0] == "send" and e[3] == 1}
    assert warmed == {(i, j) for i in range(3) for j in range(3) if i != j}
