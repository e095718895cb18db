import numpy as np
import pytest

from linkscope.traffic.matrix import TrafficError, TrafficMatrix, histogram_bin


def test_valid_matrix_is_read_only_and_reports_totals():
    m = TrafficMatrix(bytes=[[5, 1], [2, 0]], messages=[[0, 1], [1, 0]])
    assert m.ranks == 2
    assert m.total_bytes == 3.0  # the diagonal (self-traffic) is not traffic between ranks
    with pytest.raises(ValueError):
        m.bytes[0, 1] = 7
    assert m.mean_message_bytes() == 1.5


@pytest.mark.parametrize(
    "values, message",
    [
        ([[1, 2, 3], [4, 5, 6]], "square"),
        ([[0, -1], [0, 0]], "negative value -1 at row 0, column 1"),
        ([[0, float("nan")], [0, 0]], "non-finite"),
        ([[0, float("inf")], [0, 0]], "non-finite"),
        ([], "square"),
        ([["a", 1], [0, 0]], "not numeric"),
    ],
)
def test_invalid_matrices_are_rejected_with_the_reason(values, message):
    with pytest.raises(TrafficError, match=message):
        TrafficMatrix(bytes=values)


def test_messages_must_match_the_byte_matrix_shape():
    with pytest.raises(TrafficError, match="message-count matrix"):
        TrafficMatrix(bytes=np.zeros((2, 2)), messages=np.zeros((3, 3)))


def test_hosts_and_local_ranks_need_one_entry_per_rank():
    with pytest.raises(TrafficError, match="host names"):
        TrafficMatrix(bytes=np.zeros((2, 2)), hosts=("a",))
    with pytest.raises(TrafficError, match="local ranks"):
        TrafficMatrix(bytes=np.zeros((2, 2)), local_ranks=(0, 1, 2))


def test_unknown_messages_are_estimated_one_per_talking_pair():
    m = TrafficMatrix(bytes=[[0, 10, 0], [0, 0, 0], [4, 0, 9]])
    assert m.offdiagonal_messages().tolist() == [[0, 1, 0], [0, 0, 0], [1, 0, 0]]


def test_histogram_bins():
    assert [histogram_bin(v) for v in (0, 1, 7, 8, 2**70)] == [0, 1, 3, 4, 63]
