"""Issue 39: every command that writes a record writes it to stdout for ``--json -``, ``--json
/dev/stdout`` and ``-o -`` (stdout is a stream, not a file to replace, so /dev/stdout is no longer
refused as a symbolic link), and stdout then holds that JSON alone (the tables go to stderr)."""
from __future__ import annotations

import json

import pytest

from linkscope.atomic import stdout_alias
from linkscope.cli import main
from linkscope.cli.keep import stdout_names


@pytest.fixture(scope="module")
def run_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("stdout") / "run.json"
    assert main(["bench", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--gpus", "0,1", "--json", str(path)]) == 0
    return str(path)


COMMANDS = {
    "bench-nccl": (["bench", "nccl", "--backend", "sim", "--preset", "dgx-h100", "--sizes", "1MiB,4MiB"], "--json"),
    "bench-stencil": (["bench", "stencil", "--backend", "sim", "--preset", "dgx-h100", "--sizes", "1MiB"], "--json"),
    "bench": (["bench", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--gpus", "0,1"], "--json"),
    "bench-latency": (["bench", "latency", "--preset", "hgx-h200-4", "--gpus", "0,1"], "--json"),
    "survey": (["survey", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--no-report"], "-o"),
    "topo": (["topo", "--preset", "hgx-h200-4"], "-o"),
    "check": (["check", "{run}"], "--json"),
    "model-calibrate": (["model", "calibrate", "{run}"], "-o"),
}


@pytest.mark.parametrize("target", ["-", "/dev/stdout"])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_record_goes_to_stdout_alone(name, target, run_file, capsys):
    argv, option = COMMANDS[name]
    code = main([a.format(run=run_file) for a in argv] + [option, target])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)  # stdout is the JSON and nothing else
    assert isinstance(data, dict) and data


def test_report_html_to_stdout(run_file, capsys):
    assert main(["report", run_file, "-o", "-"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("<!DOCTYPE html>") and "wrote" not in err


def test_stdout_names_are_mapped_only_for_output_options():
    assert stdout_names(["bench", "--json", "/dev/stdout", "--from", "/dev/stdout"]) == \
        ["bench", "--json", "-", "--from", "/dev/stdout"]
    assert stdout_names(["topo", "-o=/dev/fd/1", "--", "cat", "--json", "/dev/stdout"]) == \
        ["topo", "-o=-", "--", "cat", "--json", "/dev/stdout"]
    assert stdout_alias("-") and stdout_alias("/proc/self/fd/1") and not stdout_alias("/tmp/x.json")


def test_survey_to_stdout_writes_no_report_named_after_the_dash(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["survey", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "1MiB", "-o", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "survey"
    assert list(tmp_path.iterdir()) == []  # no '-.html', no '-'
