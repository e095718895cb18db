"""bench/simgrid_compare.py: the exported flow problem is the one linkscope solves (SimGrid itself runs
only where the system python3 has Debian's python3-simgrid)."""
import subprocess

import numpy as np
import pytest

from linkscope.model.contention import simulate
from tests import benchscripts

sc = benchscripts.load("simgrid_compare")


def _has_simgrid() -> bool:
    try:
        return subprocess.run(["/usr/bin/python3", "-c", "import simgrid"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def test_export_keeps_links_routes_caps_and_latencies():
    _, problem = sc.build(2, 4, 30, True, 1 << 20, 3)
    data = sc.export(problem, "Full")
    assert len(data["flows"]) == 30 and data["optim"] == "Full"
    A = problem.A.tocsc()
    for j, (size, latency, cap, route) in enumerate(data["flows"]):
        rows = A.indices[A.indptr[j]:A.indptr[j + 1]]
        assert [data["links"][i][1] for i in route] == pytest.approx(problem.capacity_gb_per_s[rows] * 1e9)
        assert size == problem.stage_bytes[j] and latency == problem.stage_latency_s[j]
        assert cap == pytest.approx(problem.stage_cap_gb_per_s[j] * 1e9)


@pytest.mark.skipif(not _has_simgrid(), reason="system python3 without python3-simgrid")
def test_simgrid_agrees_with_the_exact_model():
    _, problem = sc.build(2, 4, 40, True, 1 << 22, 5)
    result = sc.run_simgrid(sc.export(problem, "Full"), 120)
    exact = simulate(problem, rtol=0.0)
    np.testing.assert_allclose(result["finish_s"], exact.finish_s, rtol=1e-9)
