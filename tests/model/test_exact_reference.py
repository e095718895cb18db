"""The event-driven solver keeps its exact answers: finish times recorded before issue 14's speed
work (tests/model/data/exact_reference.npz, built by make_exact_reference.py at main c5269ca)."""
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse import csc_matrix

from linkscope.model import contention, kernel
from linkscope.model.contention import FlowProblem, simulate

_DATA = np.load(Path(__file__).parent / "data" / "exact_reference.npz")


def _stored(name: str) -> FlowProblem:
    d = _DATA
    A = csc_matrix((d[f"{name}_data"], d[f"{name}_indices"], d[f"{name}_indptr"]), shape=tuple(d[f"{name}_shape"]))
    n = A.shape[1]
    nxt = d[f"{name}_next"] if f"{name}_next" in d else np.full(n, -1, dtype=np.int64)
    first = d[f"{name}_first"] if f"{name}_first" in d else np.arange(n, dtype=np.int64)
    return FlowProblem(A, d[f"{name}_capacity"], d[f"{name}_bytes"], d[f"{name}_cap"], d[f"{name}_latency"], nxt, first)


ENGINES = ["numpy", pytest.param("compiled", marks=pytest.mark.skipif(not kernel.available(), reason="numba missing"))]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["mixed", "equal", "pcie", "staged"])
def test_exact_mode_matches_the_recorded_answers(name, engine):
    result = simulate(_stored(name), rtol=0.0, engine=engine)
    np.testing.assert_allclose(result.finish_s, _DATA[f"{name}_finish"], rtol=1e-9, atol=0)
    np.testing.assert_allclose(result.first_rate_gb_per_s, _DATA[f"{name}_rate"], rtol=1e-9, atol=0)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", ["mixed", "pcie"])
def test_batched_mode_stays_within_its_tolerance(name, engine):
    rtol = 0.01
    result = simulate(_stored(name), rtol=rtol, engine=engine)
    rel = np.abs(result.finish_s / _DATA[f"{name}_finish"] - 1)
    assert rel.max() <= contention.batched_error_bound(rtol)


@pytest.mark.skipif(not kernel.available(), reason="numba missing")
@pytest.mark.parametrize("name", ["mixed", "staged"])
def test_compiled_answers_do_not_depend_on_the_stage_numbering(name):
    """The compiled kernel renumbers stages for memory locality and maps the answers back."""
    p = _stored(name)
    order = np.random.default_rng(3).permutation(p.stage_bytes.size)
    new_of = np.empty_like(order)
    new_of[order] = np.arange(order.size)
    nxt = p.stage_next[order]
    shuffled = FlowProblem(csc_matrix(p.A[:, order]), p.capacity_gb_per_s, p.stage_bytes[order],
                           p.stage_cap_gb_per_s[order], p.stage_latency_s[order],
                           np.where(nxt >= 0, new_of[np.maximum(nxt, 0)], -1), new_of[p.flow_first])
    for rtol in (0.0, 0.01):
        a = simulate(p, rtol=rtol, engine="compiled")
        b = simulate(shuffled, rtol=rtol, engine="compiled")
        assert a.events == b.events
        np.testing.assert_allclose(b.finish_s, a.finish_s, rtol=1e-12, atol=0)  # per flow: flows keep their order
        np.testing.assert_allclose(b.first_rate_gb_per_s, a.first_rate_gb_per_s, rtol=1e-12, atol=0)
