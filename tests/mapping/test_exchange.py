"""Choosing among candidate mappings by predicted exchange time (fake predictors)."""
import numpy as np

from linkscope.mapping.exchange import choose_by_exchange
from linkscope.mapping.problem import MappingProblem


def _uniform_problem(n: int, flow: np.ndarray) -> MappingProblem:
    cost = np.ones((n, n)) - np.eye(n)
    return MappingProblem((flow,), (cost,), flow.shape[0])


class CountingPredictor:
    """Exchange time = the largest bytes / rate of a transfer; transfers touching GPU ``slow``
    run at 1/10 the rate. Counts calls."""

    def __init__(self, slow: int) -> None:
        self.slow = slow
        self.calls = 0

    def __call__(self, transfers):
        self.calls += 1
        return max((b / (1e8 if self.slow in (s, d) else 1e9) for s, d, b in transfers), default=0.0)


def test_picks_the_candidate_with_the_lowest_exchange_time_and_caches():
    # ranks 0 and 1 talk; 3 GPUs, GPU 0 is slow: any mapping keeping both off GPU 0 is better
    flow = np.zeros((3, 3))
    flow[0, 1] = flow[1, 0] = 1e6
    problem = _uniform_problem(3, flow)
    predict = CountingPredictor(slow=0)
    choice = choose_by_exchange(problem, predict, flow,
                                [[0, 1, 2], [2, 1, 0], [2, 1, 0]], polish=False)
    assert set(choice.perm[:2]) == {1, 2}
    assert choice.default_exchange_time_us == 1e4 and choice.exchange_time_us == 1e3
    assert choice.evaluated == 2 and predict.calls == 2  # the repeated candidate was cached


def test_default_wins_when_no_candidate_is_better_and_polish_finds_one():
    flow = np.zeros((4, 4))
    flow[0, 1] = flow[1, 0] = 1e6
    problem = _uniform_problem(4, flow)
    no_polish = choose_by_exchange(problem, CountingPredictor(slow=1), flow, [[1, 0, 2, 3]],
                                   polish=False)
    assert no_polish.perm == (0, 1, 2, 3)  # the only candidate is no better: keep the default
    polished = choose_by_exchange(problem, CountingPredictor(slow=1), flow, [[1, 0, 2, 3]])
    assert 1 not in polished.perm[:2] and polished.exchange_time_us == 1e3


def test_polish_respects_its_budget():
    flow = np.zeros((4, 4))
    flow[0, 1] = flow[1, 0] = 1e6
    problem = _uniform_problem(4, flow)
    capped = choose_by_exchange(problem, CountingPredictor(slow=1), flow, [], max_evaluations=0)
    assert capped.evaluated == 1 and capped.perm == (0, 1, 2, 3)


def test_fewer_ranks_than_gpus_can_move_to_an_unused_gpu():
    flow = np.zeros((2, 2))
    flow[0, 1] = flow[1, 0] = 1e6
    problem = _uniform_problem(3, flow)  # 2 ranks, 3 GPUs
    choice = choose_by_exchange(problem, CountingPredictor(slow=0), flow, [])
    assert 0 not in choice.perm[:2]
