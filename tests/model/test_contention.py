import numpy as np
import pytest
from scipy.sparse import csc_matrix

from linkscope.model.contention import FlowProblem, batched_error_bound, max_min_rates, simulate

INF = np.inf


def test_max_min_textbook():
    # link0 cap 10 shared by f0,f1; link1 cap 4 shared by f1,f2 -> f1=f2=2, f0 gets the rest of link0
    A = csc_matrix(np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]))
    assert max_min_rates(A, np.array([10.0, 4.0]), np.array([INF] * 3)).tolist() == [8.0, 2.0, 2.0]


def test_caps_and_weights():
    A = csc_matrix(np.array([[1.0, 1.0, 1.0]]))
    r = max_min_rates(A, np.array([30.0]), np.array([5.0, INF, INF]))
    assert r.tolist() == pytest.approx([5.0, 12.5, 12.5])
    # weight 2: a staged copy writing and reading host memory uses it twice
    A = csc_matrix(np.array([[2.0, 1.0]]))
    assert max_min_rates(A, np.array([30.0]), np.array([INF, INF])).tolist() == pytest.approx([10.0, 10.0])


def test_random_problems_are_feasible_and_max_min():
    rng = np.random.default_rng(0)
    for _ in range(20):
        dense = (rng.random((15, 40)) < 0.2).astype(float)
        dense[rng.integers(0, 15, 40), np.arange(40)] = 1.0
        cap = rng.uniform(1, 10, 15)
        caps = np.where(rng.random(40) < 0.2, rng.uniform(0.1, 2, 40), INF)
        r = max_min_rates(csc_matrix(dense), cap, caps)
        assert (dense @ r <= cap * (1 + 1e-9)).all() and (r <= caps * (1 + 1e-12)).all()
        # every flow is either at its cap or crosses a saturated resource where it is among the largest
        sat = dense @ r >= cap * (1 - 1e-9)
        for j in range(40):
            if r[j] >= caps[j] * (1 - 1e-9):
                continue
            on = np.nonzero(dense[:, j] > 0)[0]
            assert any(sat[i] and r[j] >= r[dense[i] > 0].max() * (1 - 1e-9) for i in on)


def _problem(A, cap, sizes, latency=None, caps=None, nxt=None, first=None):
    n = A.shape[1]
    return FlowProblem(csc_matrix(A), np.asarray(cap, float), np.asarray(sizes, float),
                       np.full(n, INF) if caps is None else np.asarray(caps, float),
                       np.zeros(n) if latency is None else np.asarray(latency, float),
                       np.full(n, -1) if nxt is None else np.asarray(nxt), np.arange(n) if first is None else np.asarray(first))


def test_event_driven_completion_speeds_up_the_rest():
    # two flows share 10 GB/s: 1 GB and 3 GB. The small one finishes at 0.2 s, the big one then runs alone.
    res = simulate(_problem(np.array([[1.0, 1.0]]), [10.0], [1e9, 3e9]))
    assert res.finish_s.tolist() == pytest.approx([0.2, 0.4])
    assert res.first_rate_gb_per_s.tolist() == pytest.approx([5.0, 5.0])


def test_latency_delays_start_and_stages_run_in_sequence():
    # flow 0 = stages 0 then 1 (different resources); flow 1 starts after 0.1 s on resource 1
    A = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    res = simulate(_problem(A, [10.0, 10.0], [1e9, 1e9, 1e9], latency=[0.0, 0.05, 0.1], nxt=[1, -1, -1], first=[0, 2]))
    # stage 0 ends at 0.1; stage 1 ready at 0.15; flow 1 alone on resource 1 from 0.1 to 0.15 (0.5 GB), then sharing
    # both at 5 GB/s: flow 1 has 0.5 GB left -> done at 0.25, then stage 1 alone: 0.5 GB moved, 0.5 left at 10 -> 0.3
    assert res.finish_s.tolist() == pytest.approx([0.3, 0.25])


def test_incremental_refill_equals_full_recompute():
    rng = np.random.default_rng(1)
    dense = (rng.random((30, 300)) < 0.1).astype(float)
    dense[rng.integers(0, 30, 300), np.arange(300)] = 1.0
    prob = _problem(dense, rng.uniform(5, 50, 30), rng.integers(1, 10**9, 300), latency=rng.uniform(0, 1e-3, 300))
    a, b = simulate(prob), simulate(prob, full_every=1)
    assert np.allclose(a.finish_s, b.finish_s, rtol=1e-9)
    c = simulate(prob, rtol=0.01)
    assert np.abs(c.finish_s / a.finish_s - 1).max() < 0.02


def _random_problem(rng, n_res, n_flows, density, mixed=True, staged=False):
    dense = (rng.random((n_res, n_flows)) < density).astype(float)
    dense[rng.integers(0, n_res, n_flows), np.arange(n_flows)] = 1.0
    if staged:  # some entries used twice (a staged copy writing and reading host memory)
        dense *= np.where(rng.random(dense.shape) < 0.1, 2.0, 1.0)
    sizes = np.exp(rng.uniform(np.log(4096), np.log(64 * 2**20), n_flows)) if mixed else np.full(n_flows, 2**26)
    caps = np.where(rng.random(n_flows) < 0.2, rng.uniform(1, 20, n_flows), INF)
    return _problem(dense, rng.uniform(5, 50, n_res), sizes, latency=rng.choice([1e-6, 3e-6, 2e-5], n_flows), caps=caps)


def test_fill_agrees_with_textbook_progressive_filling():
    # reference: one level per round, lowest saturating resource first
    def reference(dense, cap, caps):
        n = dense.shape[1]
        rates, frozen, level = np.zeros(n), np.zeros(n, bool), 0.0
        while not frozen.all():
            load = dense[:, ~frozen].sum(axis=1)
            rem = cap - dense @ np.where(frozen, rates, level)
            with np.errstate(divide="ignore", invalid="ignore"):
                step = np.where(load > 0, rem / load, INF)
            inc = min(step.min(), (caps[~frozen] - level).min())
            level += inc
            sat = (load > 0) & (step <= inc * (1 + 1e-12) + 1e-15)
            hit = (dense[sat] > 0).any(axis=0) | (caps <= level * (1 + 1e-12))
            new = hit & ~frozen
            rates[new] = level
            frozen |= new
        return rates

    rng = np.random.default_rng(3)
    for _ in range(30):
        nr, nc = int(rng.integers(2, 12)), int(rng.integers(1, 30))
        dense = (rng.random((nr, nc)) < 0.3).astype(float) * rng.choice([1.0, 2.0], (nr, nc), p=[0.8, 0.2])
        dense[rng.integers(0, nr, nc), np.arange(nc)] = 1.0
        cap = rng.uniform(0.5, 10, nr)
        caps = np.where(rng.random(nc) < 0.3, rng.uniform(0.1, 5, nc), INF)
        assert max_min_rates(csc_matrix(dense), cap, caps) == pytest.approx(reference(dense, cap, caps), rel=1e-9)


@pytest.mark.parametrize("seed,density", [(2, 0.05), (3, 0.15), (4, 0.3)])
def test_local_updates_equal_full_recompute_with_mixed_sizes(seed, density):
    # exact event-driven simulation with local updates == re-solving everything at every event
    rng = np.random.default_rng(seed)
    prob = _random_problem(rng, 40, 400, density, staged=seed == 3)
    local, full = simulate(prob), simulate(prob, full_every=1)
    assert local.events == full.events
    assert np.allclose(local.finish_s, full.finish_s, rtol=1e-9)
    assert np.allclose(local.first_rate_gb_per_s, full.first_rate_gb_per_s, rtol=1e-9)


def test_batched_completion_stays_within_tolerance_of_exact():
    rng = np.random.default_rng(5)
    prob = _random_problem(rng, 80, 500, 0.03)
    exact = simulate(prob)  # exact local updates (checked against full recomputes above)
    for rtol in (0.01, 0.001):
        batched = simulate(prob, rtol=rtol)
        assert batched.events < exact.events
        assert np.abs(batched.finish_s / exact.finish_s - 1).max() < batched_error_bound(rtol)


@pytest.mark.parametrize("engine", ["numpy", "compiled"])
def test_a_batch_is_released_half_way_through_its_window(engine):
    # three flows share one 3 GB/s link (1 GB/s each): 1 GB and 1.015 GB finish at 1.0 s and 1.015 s,
    # inside the 2 x rtol window of the first completion at rtol 1%, so one event takes both, at
    # 1.01 s (the middle); the 10 GB flow moved 1.01 GB by then and has the link alone afterwards
    prob = FlowProblem(A=csc_matrix(np.ones((1, 3))), capacity_gb_per_s=np.array([3.0]),
                       stage_bytes=np.array([1.0e9, 1.015e9, 10.0e9]), stage_cap_gb_per_s=np.full(3, INF),
                       stage_latency_s=np.zeros(3), stage_next=np.full(3, -1), flow_first=np.arange(3))
    batched = simulate(prob, rtol=0.01, engine=engine)
    assert batched.events == 2
    assert batched.finish_s[:2] == pytest.approx([1.0, 1.015], rel=1e-12)  # each keeps its own finish
    assert batched.finish_s[2] == pytest.approx(1.01 + (10.0 - 1.01) / 3.0, rel=1e-12)
    exact = simulate(prob, engine=engine)
    assert abs(batched.finish_s[2] / exact.finish_s[2] - 1) < 0.01


def test_multi_stage_flows_with_local_updates():
    # staged copies: stage 0 (weight 2 on host memory) then stage 1, mixed with single-stage flows
    rng = np.random.default_rng(6)
    n_res, n_flows = 12, 60
    cols, nxt, first, lat = [], [], [], []
    for f in range(n_flows):
        two = f % 3 == 0
        first.append(len(cols))
        for k in range(2 if two else 1):
            col = (rng.random(n_res) < 0.25).astype(float)
            col[rng.integers(0, n_res)] = 1.0
            if two:
                col[0] = 2.0  # host memory
            cols.append(col)
            nxt.append(len(cols) if two and k == 0 else -1)
            lat.append(rng.uniform(0, 1e-4))
    dense = np.array(cols).T
    prob = _problem(dense, rng.uniform(5, 50, n_res), rng.integers(1, 10**9, dense.shape[1]), latency=lat,
                    nxt=nxt, first=first)
    a, b = simulate(prob), simulate(prob, full_every=1)
    assert np.allclose(a.finish_s, b.finish_s, rtol=1e-9) and np.isfinite(a.finish_s).all()


def test_zero_size_and_unconstrained_stages_finish_at_their_start():
    A = np.array([[1.0, 1.0, 0.0]])
    res = simulate(_problem(A, [10.0], [0.0, 1e9, 5e8], latency=[0.1, 0.0, 0.2]))
    # stage 2 uses no resource and has no cap: it finishes when it starts
    assert res.finish_s.tolist() == pytest.approx([0.1, 0.1, 0.2])


def test_zero_capacity_stalls_with_an_error():
    with pytest.raises(RuntimeError, match="stalled"):
        simulate(_problem(np.array([[1.0]]), [0.0], [1e9]))
