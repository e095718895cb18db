"""Suite-wide set-up: keep ``xdist_group`` working, and compile the Numba kernel once.

**Groups.** ``--dist loadgroup`` sends the tests of one ``xdist_group`` to one worker (the html
report's one render, the network namespaces and sshds of the multi-host tests, the mpirun refusals
started together). pytest-xdist 3.8 marks a grouped test by appending ``@group`` to
``item._nodeid``; pytest 9.2 keeps the id in ``item._id`` (a structured ``NodeId``), so that write
changes nothing and every group is silently spread over the workers (pytest-xdist issue #1386, open;
fix proposed in PR #1388, 2026-09). Seen here on 2026-11-25: each group's module fixture ran in both
workers (both built the network namespaces ``lsn0``/``lsn1`` and their sshds). Until xdist is
fixed, ``pytest_collection_modifyitems`` below gives a grouped test the id xdist meant (the same
``@group`` suffix its scheduler parses) where xdist's own write did not take effect.

**Numba.** Under pytest-xdist every worker (and every CLI subprocess) that reaches the compiled event loop
(``model/kernel.py``, ``cache=True``) before its on-disk cache exists compiles it itself: about
6.5 CPU s each on the 2-core CI machine. A fresh clone has no cache, so on 2026-11-25 both workers
compiled it at the same moment (13 CPU s, two tests at 6-10 s). The controller, idle while the
workers import and collect, compiles it once in a background process instead; everyone after that
loads it from the cache (0.3 s). Nothing waits for it: a test that gets there first compiles as
before (same answers), so this changes how long the suite takes, never what it checks.
LINKSCOPE_TEST_NO_WARMUP=1 turns it off (to measure what it saves).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# a two-flow problem through ``simulate(engine="compiled")``: compiles (or loads) every kernel with
# the argument types every real call has (``simulate_compiled`` normalises them)
_WARM_KERNEL = """
import numpy as np
from scipy.sparse import csc_matrix
from linkscope.model import kernel
from linkscope.model.contention import FlowProblem, simulate
if kernel.available():
    simulate(FlowProblem(A=csc_matrix(np.array([[1.0, 1.0], [0.0, 1.0]])), capacity_gb_per_s=np.array([10.0, 5.0]),
                         stage_bytes=np.array([1e9, 2e9]), stage_cap_gb_per_s=np.array([np.inf, np.inf]),
                         stage_latency_s=np.zeros(2), stage_next=np.array([-1, -1]), flow_first=np.array([0, 1])),
             rtol=0.01, engine="compiled")
"""

_warming: list[subprocess.Popen] = []


def _children_find_the_package() -> None:
    """Tests start ``python -m linkscope`` in child processes. CI installs the package, so the children import the
    installed copy (and a file missing from the wheel shows). A checkout run with the package importable only
    through pytest's ``pythonpath`` (pyproject) left the children without it: the tests that start them failed
    with "No module named linkscope". Then, and only then, the checkout's src/ goes on the children's PYTHONPATH."""
    found = subprocess.run([sys.executable, "-c", "import linkscope"], capture_output=True, cwd="/").returncode == 0
    if not found:
        paths = [str(ROOT / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        os.environ["PYTHONPATH"] = os.pathsep.join(paths)


_children_find_the_package()


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own renaming, which works with pytest < 9.2
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not (hasattr(config, "workerinput") and config.getvalue("loadgroup")):
        return
    try:
        from _pytest.nodeid import coerce_node_id  # pytest >= 9.2: structured node ids
    except ImportError:
        return
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid.rpartition("]")[2] and hasattr(item, "_id"):
            item._id = coerce_node_id(f"{item.nodeid}@{'_'.join(names)}")


def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    distributed = bool(getattr(config.option, "numprocesses", 0)) and not hasattr(config, "workerinput")
    if distributed and not os.environ.get("LINKSCOPE_TEST_NO_WARMUP"):
        paths = [str(ROOT / "src"), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
        _warming.append(subprocess.Popen([sys.executable, "-c", _WARM_KERNEL], cwd=ROOT, env=env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def pytest_sessionfinish(session: pytest.Session) -> None:
    for proc in _warming:  # long done in a whole run; a short run (-k) need not wait for it
        if proc.poll() is None:
            proc.terminate()  # Numba writes each cache file whole: a temp file, then os.replace
            # (numba/core/caching.py, IndexDataCacheFile._open_for_write, numba 0.68)
        proc.wait()


@pytest.fixture(autouse=True)
def _no_columns_from_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    """Piped tables take COLUMNS when it is set (cli/common.py); a CI runner that exports it (80) would fold
    every table the tests read. Tests that mean to set it set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)
