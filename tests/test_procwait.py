"""procwait.signals_held: a signal that comes while a child is being started is delivered when the block ends."""
import os
import signal

import pytest

from linkscope.procwait import signals_held


class Stop(Exception):
    pass


def _raise(_number, _frame):
    raise Stop()


@pytest.fixture
def term_raises():
    before = signal.signal(signal.SIGTERM, _raise)
    yield
    signal.signal(signal.SIGTERM, before)


def test_a_signal_inside_the_block_is_raised_when_it_ends(term_raises):
    reached = []
    with pytest.raises(Stop), signals_held():
        os.kill(os.getpid(), signal.SIGTERM)
        reached.append("after the signal")  # not interrupted: the handler waits for the block's end
    assert reached == ["after the signal"]
    assert signal.getsignal(signal.SIGTERM) is _raise  # the handler is back


def test_without_a_signal_nothing_is_raised_and_the_handlers_are_back(term_raises):
    with signals_held():
        pass
    assert signal.getsignal(signal.SIGTERM) is _raise
    with pytest.raises(Stop):
        os.kill(os.getpid(), signal.SIGTERM)
