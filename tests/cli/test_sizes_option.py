"""``--sizes`` everywhere (issue 26): the commands that measure at one size (survey, bench latency,
check) take ``--sizes`` as the documented spelling, keep ``--size`` as a hidden alias, and refuse a
list or range with one line."""
from __future__ import annotations

import json

import pytest

from linkscope.cli import main

SIM = ["bench", "latency", "--backend", "sim", "--preset", "hgx-h200-4", "--gpus", "0,1", "--kind", "copy"]


@pytest.mark.parametrize("command", [["survey"], ["bench", "latency"], ["check"]])
def test_help_documents_sizes_and_hides_size(command, capsys):
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--sizes" in out
    assert "--size " not in out.replace("--sizes", "")


@pytest.mark.parametrize("spelling", ["--sizes", "--size"])
def test_latency_copy_size_from_either_spelling(spelling, capsys):
    assert main([*SIM, spelling, "4KiB", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {m["size_bytes"] for m in data["measurements"]} == {4096}


def test_survey_sizes_sets_the_matrix_size(tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["survey", "--preset", "hgx-h200-4", "--sizes", "16MiB", "-o", str(out), "--no-report",
                 "--no-diagnosis"]) == 0
    data = json.loads(out.read_text())
    assert max(m["size_bytes"] for m in data["measurements"]) == 16 * 2**20
