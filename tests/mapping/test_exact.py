import itertools

import numpy as np
import pytest

from linkscope.mapping.exact import solve_exact
from linkscope.mapping.heuristic import ALTERNATIVES, solve_heuristic
from linkscope.mapping.problem import MappingProblem, swap_delta
from linkscope.mapping.symmetry import Automorphisms, colour_matrix, twin_classes


def _brute(problem):
    return min(problem.objective(p) for p in itertools.permutations(range(problem.size)))


def _tree_cost(n=8):
    c = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                c[i, j] = 1 if i // 2 == j // 2 else (2 if i // 4 == j // 4 else 4)
    return c


@pytest.mark.parametrize("seed", range(12))
def test_branch_and_bound_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 7))
    flows, costs = [], []
    for _ in range(int(rng.integers(1, 3))):  # one or two terms (alpha-beta has two)
        flows.append(rng.integers(0, 6, (n, n)) * (rng.random((n, n)) < 0.6))
        c = rng.integers(1, 5, (n, n)).astype(float)
        costs.append(c + c.T if seed % 2 else c)  # symmetric and asymmetric costs
    ranks = n - int(seed % 3 == 0)  # sometimes fewer ranks than GPUs
    problem = MappingProblem(tuple(f[:ranks, :ranks] for f in flows), tuple(costs), ranks)
    result = solve_exact(problem)
    assert result.optimal
    assert result.cost == pytest.approx(_brute(problem))
    assert result.cost == pytest.approx(problem.objective(result.perm))


def test_symmetric_fabric_is_proven_with_few_nodes():
    c = _tree_cost(8)
    rng = np.random.default_rng(1)
    f = rng.integers(0, 9, (8, 8)) * (rng.random((8, 8)) < 0.4)
    problem = MappingProblem((f,), (c,), 8)
    result = solve_exact(problem)
    assert result.optimal and result.cost == pytest.approx(_brute(problem))
    assert result.nodes < 2000  # symmetry pruning: 8! = 40320 leaves without it


def test_node_budget_returns_unproven_answer_deterministically():
    rng = np.random.default_rng(0)
    n = 12
    f = rng.random((n, n))
    c = rng.random((n, n))
    problem = MappingProblem((f,), (c,), n)
    first = solve_exact(problem, node_limit=300)
    again = solve_exact(problem, node_limit=300)
    assert not first.optimal
    assert first.lower_bound is not None and first.lower_bound <= first.cost
    assert (first.perm, first.cost, first.nodes) == (again.perm, again.cost, again.nodes)  # no clock involved
    assert first.nodes == 301


def test_symmetry_helpers():
    colours = colour_matrix([_tree_cost(8)])
    assert twin_classes(colours) == [0, 0, 2, 2, 4, 4, 6, 6]
    autos = Automorphisms(colours)
    assert set(autos.orbits(())) == {0}  # every GPU is equivalent at the start
    rep = autos.orbits((0,))
    assert rep[1] == 1 and rep[2] == rep[3] == 2 and rep[4] == rep[7] == 4


def test_swap_delta_is_exact():
    rng = np.random.default_rng(3)
    f, c = rng.random((6, 6)), rng.random((6, 6))
    problem = MappingProblem((f,), (c,), 6)
    p = np.array([3, 1, 0, 5, 2, 4])
    q = p.copy()
    q[1], q[4] = q[4], q[1]
    assert swap_delta(problem, p, 1, 4) == pytest.approx(problem.objective(q) - problem.objective(p))


def test_heuristic_is_never_worse_than_identity_and_close_to_optimal():
    c = _tree_cost(8)
    for seed in range(4):
        rng = np.random.default_rng(seed)
        f = rng.integers(0, 9, (8, 8)) * (rng.random((8, 8)) < 0.4)
        problem = MappingProblem((f,), (c,), 8)
        h = solve_heuristic(problem)
        assert h.cost <= problem.objective(range(8)) + 1e-9
        assert h.cost <= 1.02 * solve_exact(problem).cost


def test_heuristic_carries_distinct_runner_ups_cheapest_first():
    c = _tree_cost(8)
    rng = np.random.default_rng(7)
    f = rng.integers(0, 9, (8, 8)) * (rng.random((8, 8)) < 0.4)
    problem = MappingProblem((f,), (c,), 8)
    h = solve_heuristic(problem)
    assert 1 <= len(h.alternatives) <= ALTERNATIVES
    assert h.perm not in h.alternatives and len(set(h.alternatives)) == len(h.alternatives)
    costs = [problem.objective(p) for p in h.alternatives]
    assert costs == sorted(costs) and costs[0] >= h.cost - 1e-9
    assert all(sorted(p) == list(range(8)) for p in h.alternatives)
