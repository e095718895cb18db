"""On a machine without GPUs, the fallback to the simulated default preset is said once, not once by
discovery and again by the engine (or the NCCL backend)."""
from __future__ import annotations

import pytest

from linkscope.cli import main
from linkscope.discovery.auto import discover_live
from linkscope.errors import BackendUnavailable


@pytest.fixture
def no_gpu():
    try:
        discover_live()
    except BackendUnavailable:
        return
    pytest.skip("this machine has a GPU: no fallback to the simulated preset")


@pytest.mark.parametrize("argv", [["bench", "--sizes", "1MiB", "--gpus", "0,1"],
                                  ["bench", "nccl", "--sizes", "8", "--iters", "1", "--warmup", "0"],
                                  ["bench", "latency", "--gpus", "0,1"]])
def test_the_simulated_fallback_is_said_once(no_gpu, capsys, argv):
    assert main(argv) == 0
    err = capsys.readouterr().err
    notes = [line for line in err.splitlines() if "note:" in line and ("simulat" in line.lower() or "SIMULATED" in line)]
    assert len(notes) == 1, err


def test_a_named_preset_still_says_the_engine_is_simulated(capsys):
    assert main(["bench", "--preset", "dgx-h100", "--sizes", "1MiB", "--gpus", "0,1"]) == 0
    assert "note: using the SIMULATED engine: topology 'dgx-h100' is not this machine" in capsys.readouterr().err


@pytest.mark.parametrize("argv,files", [
    (["bench", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--gpus", "0,1", "--json", "{d}/b.json", "--csv", "{d}/b.csv"],
     ["b.json", "b.csv"]),
    (["bench", "latency", "--preset", "hgx-h200-4", "--gpus", "0,1", "--json", "{d}/l.json"], ["l.json"]),
    (["topo", "--preset", "hgx-h200-4", "-o", "{d}/t.json"], ["t.json"]),
    (["survey", "--preset", "hgx-h200-4", "--size", "16MiB", "-o", "{d}/s.json", "--no-report"], ["s.json"]),
    # the comm sweeps (measure/sweep.py): the complete record's file, once (checkpoints go to the sidecar silently)
    (["bench", "nccl", "--backend", "sim", "--preset", "hgx-h200-4", "--gpus", "0,1", "--sizes", "8,1KiB,1MiB",
      "--iters", "1", "--warmup", "0", "--json", "{d}/n.json"], ["n.json"]),
])
def test_every_file_written_is_named_once(tmp_path, capsys, argv, files):
    assert main([a.format(d=tmp_path) for a in argv]) == 0
    err = capsys.readouterr().err
    for name in files:
        assert err.count(f"wrote {tmp_path / name}") == 1, err


# ---- issue 39: notes only where they apply; CLI habits --------------------------------------------------
@pytest.mark.parametrize("argv,expect", [
    (["bench", "--backend", "sim", "--sizes", "1MiB", "--gpus", "0,1"], 1),  # a short 'simulating the default preset'
    (["bench", "--list"], 0),
    (["topo"], 1),  # the topology view's own note, not a second one on stderr
])
def test_no_gpu_discovered_is_said_once_and_only_where_it_applies(no_gpu, capsys, argv, expect):
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert (out + err).count("no GPU discovered") == (1 if argv == ["topo"] else 0)
    if argv[:3] == ["bench", "--backend", "sim"]:
        assert "note: simulating the default preset hgx-h200-4" in err


def test_version(capsys):
    from linkscope import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"linkscope {__version__}"


@pytest.mark.parametrize("argv", [["env"], ["bench", "--list"]])
def test_word_tables_fit_a_pipe_unless_wide(capsys, monkeypatch, argv):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(argv) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 100
    assert main([*argv, "--wide"]) == 0
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) > 100


def test_model_calibrate_lists_what_was_not_fitted_one_line_each(tmp_path, capsys):
    run = tmp_path / "run.json"
    assert main(["bench", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--gpus", "0,1", "--json", str(run)]) == 0
    capsys.readouterr()
    assert main(["model", "calibrate", str(run), "-o", str(tmp_path / "cal.json")]) == 0
    err = capsys.readouterr().err
    assert "not fitted (" in err and max(len(line) for line in err.splitlines()) < 400
