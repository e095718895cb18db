"""``--gpu-model`` names the GPUs of a ``--synthetic`` topology on every command that takes one: the
one topology resolver (discovery.auto) reads it, an unknown model is one line and exit 1, and the model
changes what the twin says (links, local copy, latency)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from linkscope.cli import main

FIXTURE_NVB = Path(__file__).parents[1] / "fixtures" / "peertools" / "h100x2" / "nvbandwidth.txt"


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def traffic(tmp_path: Path) -> Path:
    path = tmp_path / "t.csv"
    assert main(["traffic", "gen", "ring", "--ranks", "2", "-o", str(path)]) == 0
    return path


def _commands(tmp_path: Path, traffic: Path) -> list[list[str]]:
    return [
        ["topo"],
        ["bench", "--backend", "sim", "--sizes", "1MiB"],
        ["bench", "latency", "--backend", "sim", "--reps", "2"],
        ["bench", "nccl", "--backend", "sim", "--sizes", "1MiB"],
        ["bench", "stencil", "--backend", "sim"],
        ["model", "predict", "--pattern", "ring", "--sizes", "1MiB"],
        ["survey", "--backend", "sim", "-o", str(tmp_path / "s.json")],
        ["map", str(traffic)],
        ["check", str(FIXTURE_NVB)],
    ]


def test_unknown_gpu_model_is_one_line_on_every_command(capsys, tmp_path: Path, traffic: Path) -> None:
    for argv in _commands(tmp_path, traffic):
        code, _, err = _run(capsys, *argv, "--synthetic", "nvswitch:2", "--gpu-model", "GTX 1070")
        assert code == 1, (argv, err)
        lines = [line for line in err.splitlines() if line.startswith("linkscope: error:")]
        assert len(lines) == 1 and "unknown GPU model 'GTX 1070'" in lines[0], (argv, err)
        assert "Traceback" not in err


def test_known_gpu_model_runs_on_every_command(capsys, tmp_path: Path, traffic: Path) -> None:
    for argv in _commands(tmp_path, traffic):
        code, _, err = _run(capsys, *argv, "--synthetic", "nvswitch:2", "--gpu-model", "H100")
        assert code in (0, 3), (argv, err)  # check exits 3 when a number is not ok


def test_gpu_model_without_synthetic_is_refused(capsys) -> None:
    code, _, err = _run(capsys, "topo", "--preset", "dgx-h100", "--gpu-model", "H100")
    assert code == 1 and "needs --synthetic" in err


def test_gpu_model_changes_links_and_twin(capsys, tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "topo", "--synthetic", "nvswitch:2", "--gpu-model", "B200", "--json", "-")
    assert code == 0
    data = json.loads(out)
    assert {d["name"] for d in data["devices"] if d["kind"] == "gpu"} == {"NVIDIA B200"}
    assert any(link.get("generation") == "NVLink5" and link["count"] == 18 for link in data["links"])

    def flag_us(model: str) -> float:
        out_file = tmp_path / f"lat-{model}.json"
        assert main(["bench", "latency", "--backend", "sim", "--synthetic", "nvswitch:2", "--gpu-model", model,
                     "--kind", "flag-pingpong", "--reps", "2", "--json", str(out_file)]) == 0
        record = json.loads(out_file.read_text())
        return next(m["latency_us"] for m in record["measurements"] if m["src"] == 0 and m["dst"] == 1)

    assert flag_us("H100") > flag_us("H200") + 0.1  # measured 0.84-0.88 vs 0.59-0.73 us


def test_check_judges_the_local_copy_against_the_named_model(capsys) -> None:
    """The H100 pair's nvbandwidth local copy (1489-1491 GB/s) is ok against H100 facts, high against K80's."""
    code, out, _ = _run(capsys, "check", str(FIXTURE_NVB), "--synthetic", "nvswitch:2", "--gpu-model", "H100")
    local = [line for line in out.splitlines() if " local " in line]
    assert local and all(line.strip().startswith("ok") for line in local), out
    code, out, _ = _run(capsys, "check", str(FIXTURE_NVB), "--synthetic", "pcie:1x2:gen3", "--gpu-model", "K80")
    local = [line for line in out.splitlines() if " local " in line]
    assert local and all(line.strip().startswith("suspicious-high") for line in local), out
