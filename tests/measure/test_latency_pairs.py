"""bench latency's choices live in the library: which ends each latency kind runs between
(measure.runner.latency_pairs) and which --kind lists are valid (patterns.methods.check_latency_kinds)."""
import pytest

from linkscope.errors import UserError
from linkscope.measure.runner import latency_pairs
from linkscope.patterns.methods import check_latency_kinds
from linkscope.patterns.plan import HOST


def test_each_kind_runs_between_its_ends():
    assert latency_pairs("host-read", [0, 1]) == [(HOST, 0), (HOST, 1)]
    assert latency_pairs("remote-read", [0, 1, 2]) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert latency_pairs("copy", [3]) == [(HOST, 3), (3, HOST)]  # one GPU: host <-> GPU both ways


def test_a_kind_list_is_checked_once_with_the_valid_kinds():
    assert check_latency_kinds(["copy", "host-read"], "copy,host-read") == ["copy", "host-read"]
    with pytest.raises(UserError, match="unknown latency kind 'ping'") as caught:
        check_latency_kinds(["ping"], "ping")
    assert "remote-read" in (caught.value.hint or "")
    with pytest.raises(UserError, match="latency kind 'copy' is listed twice in --kind 'copy, copy'"):
        check_latency_kinds(["copy", "copy"], "copy, copy")
    with pytest.raises(UserError, match="--kind is empty"):
        check_latency_kinds([], "")
