"""``--json PATH`` in every command (issue 26): ``-`` prints the JSON on stdout (and nothing else
there), a file name writes the same JSON atomically with "wrote FILE" once on stderr and leaves the
table on stdout; the old switch spelling (``--json`` without a value) is a usage error (exit 2),
never a file named after the next option."""
from __future__ import annotations

import json
import os

import pytest

from linkscope.cli import main


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A traffic matrix and a (simulated) bench RunRecord for the commands that read one."""
    folder = tmp_path_factory.mktemp("json-inputs")
    traffic, run = folder / "traffic.json", folder / "run.json"
    assert main(["traffic", "gen", "ring", "--ranks", "4", "-o", str(traffic)]) == 0
    assert main(["bench", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--gpus", "0,1", "--json", str(run)]) == 0
    return {"traffic": str(traffic), "run": str(run)}


COMMANDS = {
    "env": ["env"],
    "topo": ["topo", "--synthetic", "pcie:2x4"],
    "map": ["map", "{traffic}", "--synthetic", "pcie:2x4"],
    "model-predict": ["model", "predict", "--synthetic", "nvswitch:4", "--gpus", "0,1", "--sizes", "1MiB"],
    "model-check": ["model", "check", "{run}"],
    "model-calibrate": ["model", "calibrate", "{run}", "-o", "{d}/calibrated.json"],
    "traffic-show": ["traffic", "show", "{traffic}"],
}


def _argv(name, inputs, folder, *extra):
    return [a.format(d=folder, **inputs) for a in COMMANDS[name]] + list(extra)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_json_takes_a_path_and_dash_is_stdout(name, inputs, tmp_path, capsys):
    assert main(_argv(name, inputs, tmp_path, "--json", "-")) == 0, capsys.readouterr().err
    on_stdout = json.loads(capsys.readouterr().out)  # nothing but the JSON on stdout
    target = tmp_path / "out.json"
    assert main(_argv(name, inputs, tmp_path, "--json", str(target))) == 0
    captured = capsys.readouterr()
    assert captured.err.count(f"wrote {target}") == 1, captured.err
    in_file = json.loads(target.read_text())
    if name != "env":  # env's report holds the time it was made; map's how long the search took
        assert {k: v for k, v in in_file.items() if k != "elapsed_s"} == {k: v for k, v in on_stdout.items() if k != "elapsed_s"}
    assert set(in_file) == set(on_stdout)
    if name != "model-calibrate":  # calibrate's stdout is empty with -o; the others print their table
        assert captured.out.strip() and not captured.out.lstrip().startswith("{"), captured.out
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".linkscope-")]  # the atomic writer's temp is gone


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_old_switch_spelling_is_a_usage_error(name, inputs, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(_argv(name, inputs, tmp_path, "--json")) == 2
    assert "Option '--json' requires an argument" in capsys.readouterr().err
    # followed by another option: refused as a usage error, and no file named after that option
    assert main(_argv(name, inputs, tmp_path, "--json", "--debug-not-a-file")) == 2
    assert "--json takes a file name" in capsys.readouterr().err
    assert not (tmp_path / "--debug-not-a-file").exists()


def test_topo_health_json_to_a_file(tmp_path, capsys):
    rec = os.path.join(os.path.dirname(__file__), "..", "fixtures", "machines", "hgx-h200-2")
    target = tmp_path / "health.json"
    code = main(["topo", "--health", "--from", rec, "--json", str(target)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"wrote {target}" in captured.err
    assert set(json.loads(target.read_text())) >= {"health", "link_health", "link_issues"}
    assert "P2P routing health" in captured.out


def test_calibrate_json_to_stdout_still_needs_o(inputs, capsys):
    assert main(["model", "calibrate", inputs["run"], "--json", "-"]) == 1
    assert "give -o FILE" in capsys.readouterr().err
