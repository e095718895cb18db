import json
import sys

import pytest
from fakes import FakeEngine
from typer.testing import CliRunner

from linkscope.cli import app
from linkscope.engines import registry

runner = CliRunner()
ARGS = ["--synthetic", "nvswitch:4", "--size", "16MiB"]


@pytest.fixture
def fake(monkeypatch):
    made = {}

    def create(backend, topology, *, on_note=None):
        made["engine"] = FakeEngine(topology, **made.get("kwargs", {}))
        return made["engine"]

    monkeypatch.setattr(registry, "create_engine", create)
    return made


def test_survey_writes_json_with_findings(fake, tmp_path):
    out = tmp_path / "survey.json"
    result = runner.invoke(app, ["survey", *ARGS, "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["kind"] == "survey" and data["complete"] and data["topology"]["name"] == "nvswitch:4"
    assert any(f.startswith("The fabric looks uniform") for f in data["findings"])  # equal pairs: no "slowest pair"
    patterns = {m["pattern"] for m in data["measurements"]}
    assert patterns == {"matrix", "latency", "host", "local", "ring", "all-to-one", "all-to-all", "sweep"}
    assert "findings:" in result.stdout and "linkscope survey" in result.stdout
    assert "SIMULATED" not in result.stdout
    assert data["options"]["survey"]["sweep_sizes_bytes"][-1] == 16 * 1024**2


def test_simulated_survey_is_labelled(fake, tmp_path):
    fake["kwargs"] = {"provenance": "simulated"}
    out = tmp_path / "survey.json"
    result = runner.invoke(app, ["survey", *ARGS, "-o", str(out)])
    assert result.exit_code == 0
    assert "SIMULATED" in result.stdout and "SIMULATED" in result.stderr
    data = json.loads(out.read_text())
    assert data["provenance"] == "simulated"
    assert data["findings"][0].startswith("SIMULATED")


def test_survey_report_calls_write_report(fake, tmp_path, monkeypatch):
    import types

    calls = []
    stub = types.ModuleType("linkscope.report.html")
    stub.write_report = lambda records, path: calls.append((records, path))
    monkeypatch.setitem(sys.modules, "linkscope.report.html", stub)
    import linkscope.report as report_pkg

    monkeypatch.setattr(report_pkg, "html", stub, raising=False)
    report = tmp_path / "report.html"
    result = runner.invoke(app, ["survey", *ARGS, "-o", str(tmp_path / "s.json"), "--report", str(report)])
    assert result.exit_code == 0
    ((records, path),) = calls
    assert path == report and records[0].kind == "survey"


def test_survey_report_skipped_without_html_module(fake, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "linkscope.report.html", None)  # import fails
    import linkscope.report as report_pkg

    monkeypatch.delattr(report_pkg, "html", raising=False)
    result = runner.invoke(app, ["survey", *ARGS, "-o", str(tmp_path / "s.json"), "--report", str(tmp_path / "r.html")])
    assert result.exit_code == 0
    assert "HTML report skipped" in result.stderr


def test_survey_interrupted_writes_partial(fake, tmp_path):
    fake["kwargs"] = {"interrupt_after_runs": 20}
    out = tmp_path / "survey.json"
    result = runner.invoke(app, ["survey", *ARGS, "-o", str(out)])
    assert result.exit_code == 130
    assert not out.exists()  # a partial record never takes the complete file's name
    data = json.loads((tmp_path / "survey.partial.json").read_text())
    assert data["complete"] is False and data["measurements"]


def test_survey_errors_exit_3(fake, tmp_path):
    fake["kwargs"] = {"fail_on": lambda plan: plan.pattern == "ring"}
    result = runner.invoke(app, ["survey", *ARGS, "-o", str(tmp_path / "s.json")])
    assert result.exit_code == 3
    assert "failed" in result.stdout


def test_survey_end_to_end_on_sim(tmp_path):
    out = tmp_path / "survey.json"
    result = runner.invoke(app, ["survey", "--backend", "sim", "--preset", "hgx-h200-4", "-o", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["provenance"] == "simulated" and data["findings"]
    assert "SIMULATED" in result.stdout
