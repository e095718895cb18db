import json

import pytest
from fakes import FakeEngine
from typer.testing import CliRunner

from linkscope.cli import app, main
from linkscope.engines import registry
from linkscope.patterns.methods import METHODS

runner = CliRunner()
SYN = ["--synthetic", "nvswitch:4"]
QUICK = ["--sizes", "1MiB", "--reps", "3"]


@pytest.fixture
def fake(monkeypatch):
    """Make every engine a FakeEngine; the test may set hooks on the returned holder."""
    made = {}

    def create(backend, topology, *, on_note=None):
        engine = FakeEngine(topology, **made.get("kwargs", {}))
        made["engine"] = engine
        return engine

    monkeypatch.setattr(registry, "create_engine", create)
    return made


def test_bench_matrix_prints_table_and_writes_json(fake, tmp_path):
    out = tmp_path / "run.json"
    result = runner.invoke(app, ["bench", *SYN, *QUICK, "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "ce one way, 1 MiB: GB/s (measured)" in result.stdout
    data = json.loads(out.read_text())
    assert data["format"] == "linkscope.run" and data["complete"] is True and data["kind"] == "bench"
    assert len(data["measurements"]) == 12
    m = data["measurements"][0]
    assert m["status"] == "ok" and m["median_gb_per_s"] > 0 and m["n"] == 3 and m["provenance"] == "measured"
    assert data["options"]["min_reps"] == 3 and data["options"]["pattern"] == "matrix"
    assert "env" in data["context"] and data["context"]["engine"] == "fake"
    assert fake["engine"].closed


def test_bench_osu_and_csv(fake, tmp_path):
    csv_path = tmp_path / "run.csv"
    result = runner.invoke(app, ["bench", *SYN, "--gpus", "0,1", "--sizes", "8,4K", "--reps", "3", "--osu", "--csv", str(csv_path)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert f"{'# Size':<10}{'Bandwidth (MB/s)':>20}" in lines
    numbers = [line.split() for line in lines if line and not line.startswith("#")]
    assert [n[0] for n in numbers] == ["8", "4096", "8", "4096"]
    assert float(numbers[0][1]) == pytest.approx(0.9 * 18 * 26.562 * 1000, rel=0.01)
    assert len(csv_path.read_text().splitlines()) == 5


def test_json_to_stdout_replaces_tables(fake):
    result = runner.invoke(app, ["bench", *SYN, *QUICK, "--gpus", "0,1", "--pattern", "pairs", "--json", "-"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    # one pair: a single flow, so no separate total
    assert [(m["src"], m["dst"], m["scope"]) for m in data["measurements"]] == [(0, 1, "transfer")]
    assert "GB/s" not in result.stdout.split("{", 1)[0]


@pytest.mark.parametrize("args, message", [
    (["--method", "ce,warp"], "unknown method 'warp' (valid methods: ce, ce-read"),
    (["--pattern", "rign"], "unknown pattern 'rign' (valid patterns: matrix, pairs, ring"),
    (["--gpus", "0,9"], "GPU 9 does not exist in 'nvswitch:4' (valid GPU indices: 0..3)"),
    (["--direction", "both"], "unknown direction 'both' (valid directions: uni, bi)"),
    (["--sizes", "12XB"], "unknown size suffix"),
])
def test_bad_input_is_one_line_exit_1(fake, capsys, args, message):
    code = main(["bench", *SYN, *QUICK, *args])
    err = capsys.readouterr().err
    assert code == 1
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_size_that_does_not_fit(fake, capsys):
    fake["kwargs"] = {"free_bytes": 1024**3}
    code = main(["bench", *SYN, "--sizes", "1GiB", "--pattern", "all-to-one"])
    assert code == 1
    assert "1 GiB × 3 buffers does not fit in GPU 0's free memory (1 GiB free)" in capsys.readouterr().err
    assert fake["engine"].runs == []


def test_errors_give_exit_3_and_are_recorded(fake, tmp_path):
    fake["kwargs"] = {"fail_on": lambda plan: plan.label == "1->2"}
    out = tmp_path / "run.json"
    result = runner.invoke(app, ["bench", *SYN, *QUICK, "--json", str(out)])
    assert result.exit_code == 3
    bad = [m for m in json.loads(out.read_text())["measurements"] if m["status"] == "error"]
    assert [(m["src"], m["dst"]) for m in bad] == [(1, 2)] and "fake failure" in bad[0]["reason"]
    assert bad[0]["median_gb_per_s"] is None


def test_ctrl_c_writes_partial_json_and_exits_130(fake, tmp_path):
    fake["kwargs"] = {"interrupt_after_runs": 5}
    out = tmp_path / "run.json"
    result = runner.invoke(app, ["bench", *SYN, *QUICK, "--json", str(out)])
    assert result.exit_code == 130
    assert not out.exists()  # only a complete run takes the name given
    data = json.loads((tmp_path / "run.partial.json").read_text())
    assert data["complete"] is False and len(data["measurements"]) == 5
    assert "interrupted; partial results written to" in result.stderr
    assert not list(tmp_path.glob(".*.tmp"))  # atomic write left no temporary file


def test_list_shows_methods_with_availability_and_patterns(fake):
    fake["kwargs"] = {"methods": [m for m in METHODS if m.key in ("ce", "h2d")]}
    result = runner.invoke(app, ["bench", "--list", *SYN])
    assert result.exit_code == 0
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.stdout.splitlines() if line.count("│") >= 3}
    assert rows["ce"] == "yes" and rows["sm-push"] == "no" and rows["staged-pinned"] == "no"
    for key in ("matrix", "all-to-one", "host-to-all", "local"):
        assert key in result.stdout


def test_host_pattern_defaults_to_h2d_and_d2h(fake, tmp_path):
    out = tmp_path / "h.json"
    result = runner.invoke(app, ["bench", *SYN, *QUICK, "--pattern", "host", "--gpus", "1", "--json", str(out)])
    assert result.exit_code == 0
    ms = json.loads(out.read_text())["measurements"]
    assert [(m["method"], m["src"], m["dst"]) for m in ms] == [("h2d", "host", 1), ("d2h", 1, "host")]


def test_pattern_file(fake, tmp_path):
    pattern = tmp_path / "p.csv"
    pattern.write_text("0,1\n2,3\n\n1,0,4K\n")
    out = tmp_path / "f.json"
    result = runner.invoke(app, ["bench", *SYN, *QUICK, "--pattern", str(pattern), "--json", str(out)])
    assert result.exit_code == 0, result.output
    ms = json.loads(out.read_text())["measurements"]
    assert [(m["src"], m["dst"], m["scope"], m["size_bytes"]) for m in ms] == [
        (0, 1, "transfer", 1048576), (2, 3, "transfer", 1048576), ("*", "*", "total", 1048576), (1, 0, "transfer", 4096)]


def test_latency_subcommand(fake, tmp_path):
    out = tmp_path / "lat.json"
    result = runner.invoke(app, ["bench", "latency", *SYN, "--gpus", "0,1", "--kind", "remote-read", "--reps", "4", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["kind"] == "latency"
    assert ([(m["src"], m["dst"], m["method"], m["latency_n"]) for m in data["measurements"]]
            == [(0, 1, "remote-read", 4), (1, 0, "remote-read", 4)])
    assert "remote-read latency: us" in result.stdout
    result = runner.invoke(app, ["bench", "latency", *SYN, "--gpus", "0,1", "--kind", "copy", "--osu"])
    assert f"{'# Size':<10}{'Latency (us)':>20}" in result.stdout


def test_latency_unknown_kind(fake, capsys):
    assert main(["bench", "latency", *SYN, "--kind", "pointer"]) == 1
    assert "unknown latency kind 'pointer' (valid kinds: remote-read, flag-pingpong, copy, host-read)" in capsys.readouterr().err


def test_backends_that_cannot_run_here(capsys):
    assert main(["bench", *SYN, "--backend", "rocm"]) == 1
    assert "the rocm engine cannot run here: " in capsys.readouterr().err
    assert main(["bench", *SYN, "--backend", "cuda"]) == 1
    err = capsys.readouterr().err
    assert "the cuda engine cannot run here: it measures this machine" in err and "--backend sim" in err
    assert main(["bench", *SYN, "--backend", "gpu"]) == 1
    assert "unknown backend 'gpu' (valid backends: auto, cuda, rocm, sim)" in capsys.readouterr().err


def test_help_has_an_example():
    result = runner.invoke(app, ["bench", "--help"])
    assert result.exit_code == 0 and "Example" in result.stdout and "latency" in result.stdout


def test_bench_sim_preset_end_to_end(tmp_path):
    out = tmp_path / "sim.json"
    result = runner.invoke(app, ["bench", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "64MiB", "--json", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["provenance"] == "simulated" and len(data["measurements"]) == 12
    assert all(m["status"] == "ok" and m["provenance"] == "simulated" and m["median_gb_per_s"] > 0 for m in data["measurements"])
    assert "SIMULATED" in result.stdout


def test_latency_on_one_gpu_measures_host_to_gpu_and_says_so(fake, tmp_path, capsys):
    out = tmp_path / "lat.json"
    assert main(["bench", "latency", "--synthetic", "nvswitch:1", "--reps", "3", "--json", str(out)]) == 0
    captured = capsys.readouterr()
    assert "one GPU, no GPU pair: measuring host <-> GPU latency" in captured.err
    data = json.loads(out.read_text())
    ends = {(m["src"], m["dst"]) for m in data["measurements"]}
    assert ("host", 0) in ends and all(m["status"] == "ok" for m in data["measurements"])
    assert "host -> 0" in captured.out  # a table, not an empty screen
    assert main(["bench", "latency", *SYN, "--gpus", "2", "--kind", "flag-pingpong"]) == 1
    err = capsys.readouterr().err
    assert "needs two GPUs" in err and "--kind host-read" in err and err.count("\n") == 1


def test_mi250x_sdma_blit_and_kernel_matrices_say_why_they_differ(capsys):
    """The AMD done-when: SDMA, blit and kernel-copy matrices for the 8 GCDs, each explained in one line."""
    code = main(["bench", "--backend", "sim", "--preset", "mi250x-8gcd", "--method", "ce,ce-blit,sm-push",
                 "--pattern", "matrix", "--sizes", "16MiB"])
    out = capsys.readouterr().out
    assert code == 0
    lines = {ln.split(":", 1)[0]: ln for ln in out.splitlines() if ln.startswith(("ce:", "ce-blit:", "sm-push:"))}
    assert set(lines) == {"ce", "ce-blit", "sm-push"}
    assert "SDMA" in lines["ce"] and "the engine, not the fabric, is the limit" in lines["ce"]
    assert "faster on its best pairs" in lines["ce"]
    assert "HSA_ENABLE_SDMA=0" in lines["ce-blit"] and "scales with the links" in lines["ce-blit"]
    assert "scales with the links" in lines["sm-push"] and "XGMI4" in lines["sm-push"]
