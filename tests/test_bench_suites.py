"""bench/ holds suites only (bench/README.md lists every file), and the suites share one harness that sizes
them to the machine: a step needing more GPUs, or a program not on PATH, is skipped with its reason;
suite.json names every command; a step that runs writes its JSON."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import benchscripts

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"


def listed() -> set[str]:
    """The files bench/README.md's tables name (first column, comma-separated)."""
    names: set[str] = set()
    for line in (BENCH / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and not set(cells[0]) <= set("-") and cells[0] != "file":
            names.update(n.strip() for n in cells[0].split(","))
    return names


def test_bench_holds_only_the_suites_and_tools_its_readme_lists():
    present = {p.name for p in BENCH.iterdir() if p.name != "__pycache__"}
    names = listed()
    assert present - names == set(), f"in bench/ but not in bench/README.md: {sorted(present - names)}"
    assert names - present == set(), f"in bench/README.md but not in bench/: {sorted(names - present)}"
    assert not any(re.search(r"visit|x2_|_run\d|chase_|sm_", n) for n in present if n != "device_steps.sh")
    assert {"copies.py", "collectives.py", "mpi.py", "mapping_scale.py", "model_scale.py", "harness.py"} <= present


def test_the_recorded_scripts_are_history_with_a_readme():
    scripts = ROOT / "docs" / "runs" / "scripts"
    readme = (scripts / "README.md").read_text()
    for path in scripts.iterdir():
        if path.name != "README.md":
            assert path.name in readme or path.name == "mpi_overhead", path.name


def _suite(name: str):
    return benchscripts.load(name)


def _plan(tmp_path: Path, name: str, *options: str) -> dict:
    suite = _suite(name)
    code = suite.run(name, suite.steps, ["--out", str(tmp_path), "--dry-run", *options])
    assert code == 0
    return json.loads((tmp_path / "suite.json").read_text())


def test_a_suite_is_sized_to_the_gpus_it_is_given(tmp_path):
    one = _plan(tmp_path / "one", "copies", "--backend", "sim", "--preset", "hgx-h200-4", "--gpus", "2")
    status = {s["name"]: (s["status"], s["reason"]) for s in one["steps"]}
    assert status["survey"] == ("planned", "") and status["latency"] == ("planned", "")
    assert status["matrix"] == ("skipped", "needs 2 GPUs, 1 here")
    assert status["all-to-all"] == ("skipped", "needs 3 GPUs, 1 here")
    four = _plan(tmp_path / "four", "copies", "--backend", "sim", "--synthetic", "nvswitch:4", "--quick")
    assert four["gpus"] == [0, 1, 2, 3] and {s["status"] for s in four["steps"]} == {"planned"}
    matrix = next(s for s in four["steps"] if s["name"] == "matrix")["command"]
    assert matrix[-4:] == ["--backend", "sim", "--synthetic", "nvswitch:4"] and "0,1,2,3" in matrix
    assert str(tmp_path / "four" / "matrix.json") in matrix


def test_the_collectives_suite_runs_every_op_and_checks_each(tmp_path):
    from linkscope.model.collectives import OPS

    plan = _plan(tmp_path, "collectives", "--backend", "sim", "--preset", "hgx-h200-4", "--quick")
    names = [s["name"] for s in plan["steps"]]
    assert names == [n for op in OPS for n in (f"nccl-{op}", f"check-{op}")]


def test_the_mpi_suite_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    plan = _plan(tmp_path, "mpi", "--backend", "sim", "--preset", "hgx-h200-4", "--gpus", "0")
    reasons = {s["name"]: s["reason"] for s in plan["steps"]}
    assert reasons["latency-HH"] == "mpirun not on PATH" and reasons["bw-DD"] == "needs 2 GPUs, 1 here"


def test_bad_options_are_refused_with_one_line(tmp_path, capsys):
    suite = _suite("copies")
    assert suite.run("copies", suite.steps, ["--out", str(tmp_path), "--backend", "sim", "--preset", "hgx-h200-4",
                                             "--only", "nosuch", "--dry-run"]) == 2
    assert "--only nosuch: no step named nosuch; steps: survey, host" in capsys.readouterr().err
    assert suite.run("copies", suite.steps, ["--out", str(tmp_path), "--backend", "sim", "--preset", "no-such-preset"]) == 2
    assert not (tmp_path / "suite.json").exists()


def test_a_step_that_runs_writes_its_record_and_the_summary(tmp_path):
    suite = _suite("copies")
    assert suite.run("copies", suite.steps, ["--out", str(tmp_path), "--backend", "sim", "--preset", "hgx-h200-4",
                                             "--gpus", "0,1", "--quick", "--only", "latency"]) == 0
    summary = json.loads((tmp_path / "suite.json").read_text())
    (step,) = summary["steps"]
    assert step["status"] == "ok" and step["rc"] == 0 and "latency.json" in step["files"]
    record = json.loads((tmp_path / "latency.json").read_text())
    assert record["provenance"] == "simulated" and record["measurements"]


@pytest.mark.parametrize("name", ["copies", "collectives", "mpi"])
def test_each_suite_documents_its_command(name):
    assert f"bench/{name}.py --out DIR" in (BENCH / "README.md").read_text()


def _builds(best_s: dict[int, float]) -> list[dict]:
    return [{"nodes": gpus // 8, "exit": 0, "result": {"model_best_s": t}} for gpus, t in best_s.items()]


def test_model_scale_judges_build_growth_on_the_rows_above_the_noise_floor():
    """model_scale --suite's linearity rule (issue 41): the least-squares log-log slope of the best builds, against
    n log n's over the same sizes; sizes under the noise floor are not judged, and too few sizes left is not met."""
    from benchscripts import load

    growth = load("model_scale").build_growth
    linear = growth(_builds({4096: 0.1, 8192: 0.2, 16384: 0.4, 32768: 0.8}))
    assert linear["met"] and abs(linear["growth_exponent"] - 1.0) < 1e-9
    quadratic = growth(_builds({4096: 0.1, 8192: 0.4, 16384: 1.6, 32768: 4.9}))
    assert not quadratic["met"] and quadratic["growth_exponent"] > 1.5
    too_slow = growth(_builds({4096: 1.0, 8192: 2.0, 16384: 4.0, 32768: 8.0}))  # linear, but past 5 s at 32k
    assert not too_slow["met"]
    # 4k-8k under the floor (timer noise): judged on 16k-32k alone
    noisy = growth(_builds({4096: 0.001, 8192: 0.015, 16384: 0.4, 32768: 0.8}))
    assert noisy["met"] and abs(noisy["growth_exponent"] - 1.0) < 1e-9
    assert not growth(_builds({4096: 0.001, 8192: 0.002}))["met"]
    assert not growth([])["met"]
    # the CPU seconds' slope is reported beside the judged one, never judged
    rows = _builds({4096: 0.1, 8192: 0.4, 16384: 1.6, 32768: 3.2})
    for row, cpu in zip(rows, (0.1, 0.2, 0.4, 0.8)):
        row["result"]["model_best_cpu_s"] = cpu
    both = growth(rows)
    assert not both["met"] and abs(both["cpu_growth_exponent"] - 1.0) < 1e-9 and "not judged" in both["measured"]
