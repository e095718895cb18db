"""The compiled event loop renumbers stages and resources as they finish (``kernel._renumber``): the same
answers as the plain full re-solve at every event (the kernel without renumbering, and the NumPy path
re-solving from scratch), flow by flow, on random problems."""
import numpy as np
import pytest
from scipy.sparse import csc_matrix

from linkscope.model import kernel
from linkscope.model.contention import FlowProblem, simulate

pytestmark = pytest.mark.skipif(not kernel.available(), reason="numba missing")


def _random_problem(seed: int, n_flows: int, n_res: int) -> FlowProblem:
    """Flows of one to three stages over random resources: a few stages per resource, weights 1 or
    not, some stages capped, sizes over four decades, start latencies of a few distinct values, a
    resource or two far too large to bind and one identical to another (duplicate rows)."""
    rng = np.random.default_rng(seed)
    n_stages_of = rng.integers(1, 4, n_flows)
    n = int(n_stages_of.sum())
    rows, cols, data = [], [], []
    for j in range(n):
        used = rng.choice(n_res, size=int(rng.integers(1, 5)), replace=False)
        rows += used.tolist()
        cols += [j] * used.size
        data += np.where(rng.random(used.size) < 0.7, 1.0, rng.uniform(0.5, 2.0, used.size)).tolist()
    A = csc_matrix((data, (rows, cols)), shape=(n_res + 1, n))
    A = csc_matrix(A + csc_matrix((A.getrow(0).toarray().ravel(), (np.full(n, n_res), np.arange(n))), shape=A.shape))
    capacity = np.append(rng.uniform(10.0, 100.0, n_res), 1e9)  # the last row: a copy of row 0, never binding
    capacity[rng.integers(0, n_res)] = 1e12
    caps = np.where(rng.random(n) < 0.3, rng.uniform(1.0, 30.0, n), np.inf)
    stage_bytes = np.exp(rng.uniform(np.log(1e4), np.log(1e8), n))
    latency = rng.choice([0.0, 2e-6, 5e-6], n)
    first = np.concatenate([[0], np.cumsum(n_stages_of)[:-1]]).astype(np.int64)
    nxt = np.arange(1, n + 1, dtype=np.int64)
    nxt[np.cumsum(n_stages_of) - 1] = -1
    return FlowProblem(A, capacity, stage_bytes, caps, latency, nxt, first)


def _compiled(p: FlowProblem, rtol: float, renumber: bool) -> tuple[np.ndarray, np.ndarray, int]:
    return kernel.simulate_compiled(p.A, p.capacity_gb_per_s, p.stage_cap_gb_per_s, p.stage_bytes, p.stage_latency_s,
                                    p.stage_next, p.flow_first, rtol, renumber)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("rtol", [0.0, 0.01, 0.05])
def test_renumbered_event_loop_equals_the_plain_full_resolve(seed, rtol):
    p = _random_problem(seed, n_flows=150 + 40 * seed, n_res=30 + 7 * seed)
    done, first, events = _compiled(p, rtol, True)
    done_ref, first_ref, events_ref = _compiled(p, rtol, False)
    assert events == events_ref
    np.testing.assert_allclose(done, done_ref, rtol=1e-9, atol=0)  # every stage, by the caller's numbering
    np.testing.assert_allclose(first, first_ref, rtol=1e-9, atol=0)
    # and the NumPy path re-solving every stage from scratch at every event
    full = simulate(p, rtol=rtol, engine="numpy", full_every=1)
    last = np.flatnonzero(p.stage_next < 0)
    np.testing.assert_allclose(np.sort(done[last]), np.sort(full.finish_s), rtol=1e-9, atol=0)


def test_renumbering_happens_and_drops_what_is_done():
    """``_renumber`` on a small case: done stages leave, the rest are numbered in freeze order then the
    ones not started, resources that can no longer bind leave, and each list keeps its entries."""
    #                 stage: 0    1    2    3
    A = csc_matrix(np.array([[1.0, 1.0, 0.0, 0.0],    # resource 0: stages 0, 1
                             [0.0, 1.0, 1.0, 1.0],    # resource 1: stages 1, 2, 3
                             [0.0, 0.0, 0.0, 2.0]]))  # resource 2: stage 3 only, can never bind
    col_ptr, col_row, col_w, _, _ = kernel._lists(A)
    capacity = np.array([10.0, 10.0, 1e6])
    caps = np.array([np.inf, np.inf, np.inf, 5.0])
    gone = np.array([True, False, False, False])
    seq = np.array([2, 0, 1], dtype=np.int64)  # stage 3 not started
    perm, new_of, cptr, crow, cw, rptr, rcol, cap, order = kernel._renumber(
        col_ptr, col_row, col_w, capacity, caps, np.argsort(caps, kind="mergesort").astype(np.int32), gone, seq, 3)
    assert perm.tolist() == [2, 1, 3]
    assert new_of.tolist() == [-1, 1, 0, 2]
    assert cap.tolist() == [10.0, 10.0]  # resource 1 first (stage 2 uses it), then 0; resource 2 gone
    rebuilt = csc_matrix((cw, crow, cptr), shape=(2, 3)).toarray()
    assert rebuilt.tolist() == [[1.0, 1.0, 1.0], [0.0, 1.0, 0.0]]
    assert rptr.tolist() == [0, 3, 4] and rcol.tolist() == [0, 1, 2, 1]
    assert order.tolist() == [2, 1, 0]  # by cap: stage 3 (cap 5) first, then the uncapped as they were (old 1, 2)


def _tied_problem(seed: int, n_flows: int, n_res: int) -> FlowProblem:
    """One-stage flows over three of ``n_res`` resources, every resource of one capacity, unit weights, one cap
    for all (the scale benchmark's fat tree in small): many stages share a level exactly, and the same level
    comes out of different sums of rates on different resources, so two equal rates can differ by rounding."""
    rng = np.random.default_rng(seed)
    rows = np.concatenate([rng.choice(n_res, 3, replace=False) for _ in range(n_flows)])
    A = csc_matrix((np.ones(rows.size), (rows, np.repeat(np.arange(n_flows), 3))), shape=(n_res, n_flows))
    sizes = np.exp(rng.uniform(np.log(4096), np.log(64 * 2**20), n_flows))
    return FlowProblem(A, np.full(n_res, 46.5), sizes, np.full(n_flows, 43.75), np.full(n_flows, 6.7e-6),
                       np.full(n_flows, -1, dtype=np.int64), np.arange(n_flows, dtype=np.int64))


@pytest.mark.parametrize("seed, n_flows, n_res", [(0, 200, 30), (1, 400, 40), (2, 1000, 80), (3, 200, 30)])
def test_stages_tied_with_the_slowest_finished_one_are_re_solved(seed, n_flows, n_res):
    """After completions only the stages strictly slower than every finished one keep their rates (the levels
    below it saturate as before). A stage whose rate equals a finished stage's, computed a rounding error
    lower, is not one of them: it may speed up. Kept anyway, it ran at its stale rate until its own resource
    changed again (found on these problems: finish times up to twice the full re-solve's). Checked against
    the NumPy path re-solving every stage from scratch at every event (no such shortcut)."""
    p = _tied_problem(seed, n_flows, n_res)
    full = simulate(p, rtol=0.01, engine="numpy", full_every=1)
    for renumber in (True, False):
        done, first, _ = _compiled(p, 0.01, renumber)
        np.testing.assert_allclose(done, full.finish_s, rtol=1e-9, atol=0)
        np.testing.assert_allclose(first, full.first_rate_gb_per_s, rtol=1e-9, atol=0)


@pytest.mark.parametrize("seed", range(4))
def test_unit_weight_solve_equals_the_weighted_one_bit_for_bit(seed, monkeypatch):
    """Where every weight is 1, ``_solve`` reads no weights (``unit``); the sums are the same, so the answers
    are identical to the weighted loop's, bit for bit, with and without renumbering; and problems with other
    weights (``_random_problem``: a third of them not 1) take the weighted loop."""
    p = _tied_problem(seed, 300 + 100 * seed, 30 + 10 * seed)
    assert kernel._unit_weights(np.asarray(p.A.data))
    assert not kernel._unit_weights(np.asarray(_random_problem(seed, 50, 20).A.data))
    for renumber in (True, False):
        done, first, events = _compiled(p, 0.01, renumber)
        with monkeypatch.context() as m:
            m.setattr(kernel, "_unit_weights", lambda col_w: False)
            done_w, first_w, events_w = _compiled(p, 0.01, renumber)
        assert events == events_w
        assert np.array_equal(done, done_w) and np.array_equal(first, first_w)


def test_level_buckets_never_put_a_higher_level_lower():
    """The level queue's only need (``_solve``): a higher level never falls in a lower bucket, from 0 through
    levels far below and above the solve's lowest (clamped at both ends), exact powers of two included."""
    rng = np.random.default_rng(5)
    levels = np.unique(np.concatenate([[0.0, 5e-324, 1e-300, 1e300, np.finfo(float).max],
                                       2.0 ** np.arange(-80, 81), np.exp(rng.uniform(-120, 120, 5000))]))
    for e_lo in (-3, 0, 5):
        b = np.array([kernel._bucket(x, e_lo) for x in levels])
        assert b[0] == 0 and np.all(b[1:] >= 1) and np.all(b < kernel.LEVEL_BUCKETS)
        assert np.all(np.diff(b) >= 0)
    assert kernel._bucket(1.0, 1) < kernel._bucket(1.0 + 2.0 ** -7, 1)  # buckets narrower than 1/256 of a level


@pytest.mark.parametrize("seed", range(3))
def test_levels_over_many_octaves_and_ties_solve_as_the_full_resolve(seed):
    """Resources of capacities over 80 octaves (the last bucket of the level queue holds many) and groups of
    equal capacity (equal levels in one bucket): the compiled event loop equals the NumPy path re-solving
    every stage from scratch at every event."""
    p = _random_problem(seed, 120, 25)
    rng = np.random.default_rng(seed)
    capacity = np.where(rng.random(p.capacity_gb_per_s.size) < 0.5, 2.0 ** rng.integers(-40, 41, p.capacity_gb_per_s.size),
                        46.5)
    p = FlowProblem(p.A, capacity, p.stage_bytes, p.stage_cap_gb_per_s, p.stage_latency_s, p.stage_next, p.flow_first)
    full = simulate(p, rtol=0.01, engine="numpy", full_every=1)
    last = np.flatnonzero(p.stage_next < 0)
    for renumber in (True, False):
        done, first, _ = _compiled(p, 0.01, renumber)
        np.testing.assert_allclose(np.sort(done[last]), np.sort(full.finish_s), rtol=1e-9, atol=0)


def _solve_all(A: csc_matrix, capacity: np.ndarray, caps: np.ndarray) -> np.ndarray:
    """``kernel._solve`` once, every stage active, nothing kept: the max-min rates."""
    A = csc_matrix(A)
    A.sort_indices()
    col_ptr, col_row, col_w, row_ptr, row_col = kernel._lists(A)
    n, n_rows = caps.size, capacity.size
    unit = kernel._unit_weights(col_w)
    rates = np.zeros(n)
    kernel._solve(col_ptr, col_row, col_w, row_ptr, row_col, capacity, caps, np.argsort(caps, kind="mergesort").astype(np.int32),
                  np.arange(n), n, rates, np.ones(n, dtype=np.bool_), np.empty(2 * n_rows), np.empty(n_rows),
                  np.empty(n_rows, dtype=np.int32), np.empty(n_rows), np.empty(n_rows, dtype=np.int32),
                  np.empty(kernel.LEVEL_BUCKETS, dtype=np.int32), np.zeros(n), -1.0, np.empty(n, dtype=np.int64), unit,
                  kernel._active_count(col_ptr, col_row, np.arange(n), n, n_rows if unit else 0))
    return rates


@pytest.mark.parametrize("seed", range(8))
def test_one_solve_is_max_min_fair(seed):
    """One solve checked by the definition of max-min fairness, not against another solver: the rates fit every
    resource, and every stage is at its cap or has a full resource on which no stage is faster (its bottleneck).
    Levels over six decades, equal capacities (ties), weights 1 or not, resources whose stages all freeze
    elsewhere (the level queue drops them) and stages capped below any level."""
    rng = np.random.default_rng(seed)
    n, n_res = 400 + 300 * seed, 40 + 15 * seed
    lens = [int(x) for x in rng.integers(1, 5, n)]
    rows = np.concatenate([rng.choice(n_res, k, replace=False) for k in lens])
    cols = np.repeat(np.arange(n), lens)
    weights = np.ones(rows.size) if seed % 2 == 0 else np.where(rng.random(rows.size) < 0.6, 1.0, rng.uniform(0.5, 2.0, rows.size))
    A = csc_matrix((weights, (rows, cols)), shape=(n_res, n))
    capacity = np.where(rng.random(n_res) < 0.5, 46.5, np.exp(rng.uniform(np.log(1e-3), np.log(1e3), n_res)))
    caps = np.where(rng.random(n) < 0.2, np.exp(rng.uniform(np.log(1e-4), np.log(10.0), n)), np.inf)
    rates = _solve_all(A, capacity, caps)
    assert np.all(np.isfinite(rates)) and np.all(rates > 0)
    used = A @ rates
    assert np.all(used <= capacity * (1 + 1e-9))
    full = used >= capacity * (1 - 1e-9)
    R = A.tocsr()
    fastest = np.array([rates[R.indices[R.indptr[i]:R.indptr[i + 1]]].max() if R.indptr[i + 1] > R.indptr[i] else 0.0
                        for i in range(n_res)])
    for j in range(n):
        on = A.indices[A.indptr[j]:A.indptr[j + 1]]
        bottleneck = full[on] & (rates[j] >= fastest[on] * (1 - 1e-9))
        assert rates[j] >= caps[j] * (1 - 1e-9) or bottleneck.any(), j
