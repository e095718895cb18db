import pytest

from linkscope.model.collectives import OPS, algbw_gb_per_s, busbw_factor, busbw_gb_per_s, layout
from linkscope.errors import UserError


@pytest.mark.parametrize("op,n,factor", [
    ("allreduce", 2, 1.0), ("allreduce", 4, 1.5), ("allreduce", 8, 1.75),
    ("allgather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("alltoall", 2, 0.5),
    ("broadcast", 8, 1.0), ("reduce", 4, 1.0), ("sendrecv", 2, 1.0),
])
def test_busbw_factors_match_nccl_tests(op, n, factor):
    assert busbw_factor(op, n) == pytest.approx(factor)


def test_one_rank_has_no_bus_traffic_for_allreduce():
    assert busbw_factor("allreduce", 1) == 0.0


def test_bandwidths():
    assert algbw_gb_per_s(1_000_000_000, 0.5) == pytest.approx(2.0)
    assert busbw_gb_per_s("allreduce", 4, 1_000_000_000, 1.0) == pytest.approx(1.5)
    with pytest.raises(ValueError):
        algbw_gb_per_s(8, 0.0)


def test_layouts_follow_nccl_tests_conventions():
    ag = layout("allgather", 1 << 20, 4)
    assert (ag.send_count, ag.recv_count, ag.size_bytes) == (65536, 262144, 1 << 20)
    rs = layout("reduce_scatter", 1 << 20, 4)
    assert (rs.send_count, rs.recv_count) == (262144, 65536)
    a2a = layout("alltoall", 1000, 3)  # 250 floats -> 83 per peer, 249 used
    assert (a2a.chunk_count, a2a.send_count, a2a.size_bytes) == (83, 249, 996)
    sr = layout("sendrecv", 8, 2)
    assert (sr.send_count, sr.recv_count, sr.size_bytes) == (2, 2, 8)


def test_unknown_op_names_choices():
    with pytest.raises(UserError) as exc:
        busbw_factor("allreduc", 2)
    assert exc.value.one_line() == "unknown collective 'allreduc' (valid operations: " + ", ".join(OPS) + ")"
