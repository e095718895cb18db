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
