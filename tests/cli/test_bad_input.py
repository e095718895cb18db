"""Bad input as a user meets it, through the whole CLI: one line on stderr, no traceback, the exit
code CLI.md promises (1 user error, 2 usage), and nothing half-done (no run before a refusal, no
file written). Also: --help examples, --debug, and stdout hygiene of --json."""
from __future__ import annotations

import json
import math
import sys
import tarfile
from pathlib import Path

import pytest
from fakes import FakeEngine

from linkscope.cli import main
from linkscope.engines import registry
from linkscope.errors import UserError
from linkscope.topology import io as topo_io
from linkscope.topology.presets import load_preset, preset_names

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "machines"
SYN = ["--synthetic", "nvswitch:4"]
QUICK = ["--sizes", "1MiB", "--reps", "3"]
GiB = 1024**3


@pytest.fixture
def fake(monkeypatch):
    """Every engine is a FakeEngine (kwargs from made["kwargs"]); made["engine"] is the last one."""
    made: dict = {}

    def create(backend, topology, *, on_note=None):
        made["engine"] = FakeEngine(topology, **made.get("kwargs", {}))
        return made["engine"]

    monkeypatch.setattr(registry, "create_engine", create)
    return made


def one_line_error(capsys, code: int, expected_code: int = 1) -> str:
    """The stderr of a refused command: exactly one line, no traceback, the right exit code."""
    err = capsys.readouterr().err
    assert code == expected_code, err
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("linkscope: error: "), err
    return err


def topo_file(tmp_path: Path, name: str, change) -> Path:
    data = topo_io.to_dict(load_preset("hgx-h200-4"))
    change(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))  # Python writes NaN / Infinity as such: a file users may meet
    return path


# ---- topology files, presets, specs ------------------------------------------------------------

@pytest.mark.parametrize("name, change, message", [
    ("v99.json", lambda d: d.update(schema_version=99), "topology schema version 99 is newer than this linkscope understands"),
    ("v0.json", lambda d: d.update(schema_version=0), "unknown topology schema version 0"),
    ("fmt.json", lambda d: d.update(format="other"), "not a linkscope topology (format is 'other'"),
    ("nan.json", lambda d: d["links"][0].update(link_gb_per_s=math.nan), "NaN is not a number JSON allows"),
    ("inf.json", lambda d: d["links"][0].update(link_gb_per_s=math.inf), "Infinity is not a number JSON allows"),
    ("lat.json", lambda d: d["links"][0].update(latency_us=-1.0), "latency_us must not be negative"),
    ("kind.json", lambda d: d["devices"][0].update(kind="banana"), "unknown value 'banana' (valid: gpu, cpu"),
    ("str.json", lambda d: d["links"][0].update(link_gb_per_s="fast"), "field 'link_gb_per_s' has the wrong type (str)"),
])
def test_bad_topology_file(tmp_path, capsys, name, change, message):
    path = topo_file(tmp_path, name, change)
    err = one_line_error(capsys, main(["topo", "--from", str(path)]))
    assert message in err and str(path) in err


def test_malformed_and_missing_topology_file(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{bad")
    assert "is not valid JSON: Expecting property name" in one_line_error(capsys, main(["topo", "--from", str(bad)]))
    missing = tmp_path / "missing.json"
    assert "topology file not found" in one_line_error(capsys, main(["bench", "--from", str(missing)]))


def test_infinite_rate_is_refused_from_a_dict_too():
    data = topo_io.to_dict(load_preset("hgx-h200-4"))
    data["links"][0]["link_gb_per_s"] = math.inf
    with pytest.raises(UserError, match="must be a finite number"):
        topo_io.from_dict(data)


def test_unknown_preset_lists_the_valid_ones(capsys):
    err = one_line_error(capsys, main(["topo", "--preset", "dgx-h900"]))
    assert "unknown preset 'dgx-h900'" in err
    assert all(name in err for name in preset_names())


@pytest.mark.parametrize("args, message", [
    (["--synthetic", "torus:4"], "unknown synthetic topology 'torus:4' (valid kinds: cluster, fattree, nvswitch, pcie, xgmi)"),
    (["--preset", "hgx-h200-4", "--synthetic", "nvswitch:2"], "choose one topology source"),
    (["--preset", "hgx-h200-4", "--gpus", "7"], "GPU 7 does not exist in 'hgx-h200-4' (valid GPU indices: 0..3)"),
    (["--preset", "hgx-h200-4", "--gpus", "0,0"], "GPU 0 is listed twice"),
    (["--preset", "hgx-h200-4", "--gpus", "a"], "--gpus 'a': 'a' is not a GPU index"),
    (["--preset", "hgx-h200-4", "--sysfs-root", "/"], "--sysfs-root applies to live discovery only"),
])
def test_topo_bad_selection(capsys, args, message):
    assert message in one_line_error(capsys, main(["topo", *args]))


def test_topo_unwritable_output_creates_nothing(tmp_path, capsys):
    target = tmp_path / "no" / "such" / "t.json"
    err = one_line_error(capsys, main(["topo", "--preset", "hgx-h200-4", "-o", str(target)]))
    assert f"folder {target.parent} does not exist" in err
    assert not (tmp_path / "no").exists()  # a typo is not turned into new folders
    err = one_line_error(capsys, main(["topo", "--preset", "hgx-h200-4", "-o", str(tmp_path)]))
    assert "is a folder, expected a file name" in err


def test_topo_json_is_clean_json_on_stdout(capsys):
    assert main(["topo", "--preset", "mi250x-8gcd", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert topo_io.from_dict(json.loads(captured.out)) == load_preset("mi250x-8gcd")
    assert captured.err == ""


def test_topo_json_with_gpus_says_the_whole_model_is_written(capsys):
    assert main(["topo", "--preset", "hgx-h200-4", "--json", "-", "--gpus", "0,1"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert "--json writes the whole model" in captured.err


# ---- recorded machines and sysfs dumps -----------------------------------------------------------

def test_topo_from_a_recorded_folder(capsys):
    assert main(["topo", "--from", str(FIXTURES / "hgx-h200-2"), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sum(1 for d in data["devices"] if d["kind"] == "gpu") == 2


def test_recorded_folder_without_gpu_discovery(tmp_path, capsys):
    (tmp_path / "rec").mkdir()
    err = one_line_error(capsys, main(["topo", "--from", str(tmp_path / "rec")]))
    assert "holds no recorded GPU discovery" in err


@pytest.fixture
def broken_sysfs(tmp_path) -> Path:
    """The recorded PCIe machine's sysfs tree with one device's ``class`` file removed."""
    root = tmp_path / "sysroot"
    with tarfile.open(FIXTURES / "pcie-2s-8gpu" / "sysfs.tar.gz") as tar:
        tar.extractall(root, filter="data")
    devices = root / "sys" / "bus" / "pci" / "devices"
    first = sorted(p.name for p in devices.iterdir())[0]
    (devices / first).resolve().joinpath("class").unlink()  # the entry is a symlink into sys/devices
    return root


def test_export_raw_with_incomplete_sysfs_dump_fails_and_writes_nothing(tmp_path, broken_sysfs, capsys):
    out = tmp_path / "rec"
    err = one_line_error(capsys, main(["topo", "export", "--raw", str(out), "--sysfs-root", str(broken_sysfs)]))
    assert "sysfs file missing:" in err and "/class" in err
    assert not out.exists()


def test_live_discovery_with_incomplete_sysfs_root(broken_sysfs, capsys):
    err = one_line_error(capsys, main(["topo", "--sysfs-root", str(broken_sysfs)]))
    assert "sysfs file missing:" in err


def test_export_raw_with_missing_sysfs_root(tmp_path, capsys):
    err = one_line_error(capsys, main(["topo", "export", "--raw", str(tmp_path / "rec"),
                                       "--sysfs-root", str(tmp_path / "nothing-here")]))
    assert "sysfs folder missing" in err


def test_export_raw_tells_on_stderr_what_it_could_not_record(tmp_path, capsys, monkeypatch):
    from linkscope.discovery import raw

    root = tmp_path / "sysroot"
    with tarfile.open(FIXTURES / "pcie-2s-8gpu" / "sysfs.tar.gz") as tar:
        tar.extractall(root, filter="data")
    monkeypatch.setattr(raw.rocm, "read_outputs", lambda **kw: {})
    monkeypatch.setattr(raw.nvml, "probe", lambda module=None: raw.nvml.Availability("nvml", False, "no NVML here"))
    out = tmp_path / "rec"
    assert main(["topo", "export", "--raw", str(out), "--sysfs-root", str(root)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [str(out / n) for n in ("sysfs.json", "pcihealth.json", "sysfs.tar.gz", "manifest.json")]
    assert "note: not recorded: nvml: no NVML here" in captured.err


def test_no_nvml_topo_falls_back_with_a_note_on_stderr(capsys, monkeypatch):
    from linkscope.discovery import auto
    from linkscope.errors import BackendUnavailable

    def discover(*args, **kwargs):
        raise BackendUnavailable("no GPU discovered here (NVML: NVML library not found; ROCm: no rocm-smi)")

    monkeypatch.setattr(auto, "discover_live", discover)
    assert main(["topo", "--json", "-"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["name"] == "hgx-h200-4"
    assert captured.err.count("\n") == 1  # one line even though it is longer than 80 columns
    assert "note: no GPU discovered here (NVML: NVML library not found" in captured.err
    assert "using the simulated default preset hgx-h200-4" in captured.err
    # cuda needs this machine: no fallback, one line
    err = one_line_error(capsys, main(["bench", "--backend", "cuda"]))
    assert "no GPU discovered here" in err


# ---- bench ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--backend", "gpu"], "unknown backend 'gpu' (valid backends: auto, cuda, rocm, sim)"),
    (["--method", "ce,ce"], "method 'ce' is listed twice"),
    (["--sizes", "0"], "sizes must be positive"),
    (["--sizes", "4K:1K"], "bad size range"),
    (["--sizes", "1.5B"], "not a whole number of bytes"),
    (["--json", "-", "--csv", "-"], "--json - and --csv - would both write to stdout"),
    (["--json", "-", "--osu"], "--json - and --osu would both write to stdout"),
    (["--pattern", "missing/p.csv"], "pattern file not found: missing/p.csv"),
])
def test_bench_refuses_before_measuring(fake, capsys, args, message):
    assert message in one_line_error(capsys, main(["bench", *SYN, *QUICK, *args]))
    assert "engine" not in fake or fake["engine"].runs == []


def test_bench_unwritable_output_is_refused_before_measuring(fake, tmp_path, capsys):
    for flag in ("--json", "--csv"):
        err = one_line_error(capsys, main(["bench", *SYN, *QUICK, flag, str(tmp_path / "nope" / "x")]))
        assert f"{flag} {tmp_path / 'nope' / 'x'}: folder {tmp_path / 'nope'} does not exist" in err
        assert "engine" not in fake  # refused before an engine was even created
    assert not (tmp_path / "nope").exists()


def test_bench_unknown_backend_is_named_before_discovery(capsys, monkeypatch):
    from linkscope.discovery import auto

    monkeypatch.setattr(auto, "discover_live", lambda *a, **k: pytest.fail("discovery ran"))
    assert "unknown backend 'foo'" in one_line_error(capsys, main(["bench", "--backend", "foo"]))
    assert "unknown backend 'foo'" in one_line_error(capsys, main(["bench", "--list", "--backend", "foo"]))


def test_bench_json_to_stdout_is_valid_json_only(fake, capsys):
    assert main(["bench", *SYN, *QUICK, "--gpus", "0,1", "--json", "-"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["format"] == "linkscope.run" and len(data["measurements"]) == 2


def test_bench_all_waived_says_so_on_stderr_and_exits_3(fake, capsys, tmp_path):
    out = tmp_path / "r.json"
    assert main(["bench", "--synthetic", "nvswitch:1", *QUICK, "--json", str(out)]) == 3  # nothing measured
    captured = capsys.readouterr()
    assert "needs at least 2 GPUs" in captured.out
    assert "linkscope: error: nothing was measured: the only entry was waived" in captured.err
    assert json.loads(out.read_text())["measurements"][0]["status"] == "waived"


def test_bench_waives_pairs_without_recorded_peer_access(fake, tmp_path):
    out = tmp_path / "p.json"
    topo = FIXTURES / "pcie-2s-8gpu" / "expected_topology.json"
    assert main(["bench", "--from", str(topo), *QUICK, "--method", "sm-push", "--gpus", "0,1,4", "--json", str(out)]) == 0
    status = {(m["src"], m["dst"]): (m["status"], m["reason"]) for m in json.loads(out.read_text())["measurements"]}
    assert status[(0, 1)][0] == "ok"
    assert status[(0, 4)] == ("waived", "no peer access between GPU 0 and GPU 4; method 'sm-push' needs it "
                                         "(try ce-nopeer or staged-pinned)")
    assert status[(4, 1)][0] == "waived"


@pytest.mark.parametrize("args, message", [
    (["--size", "0", "--kind", "copy"], "--size must be positive"),
    (["--kind", "remote-read,remote-read"], "latency kind 'remote-read' is listed twice"),
    (["--gpus", "0,4"], "GPU 4 does not exist"),
    (["--json", str(Path("/nonexistent-linkscope/l.json"))], "does not exist"),
])
def test_bench_latency_bad_input(fake, capsys, args, message):
    assert message in one_line_error(capsys, main(["bench", "latency", *SYN, *args]))


# ---- survey --------------------------------------------------------------------------------------

def test_survey_bad_size_and_outputs(fake, tmp_path, capsys):
    assert "--size must be positive" in one_line_error(capsys, main(["survey", *SYN, "--size", "0", "-o", str(tmp_path / "s.json")]))
    err = one_line_error(capsys, main(["survey", *SYN, "--size", "1MiB", "-o", str(tmp_path / "s.json"),
                                       "--report", str(tmp_path / "nope" / "r.html")]))
    assert "--report" in err and "does not exist" in err
    assert "engine" not in fake and not (tmp_path / "s.json").exists()


def test_survey_keeps_what_fits_and_waives_the_step_that_does_not(fake, tmp_path, capsys):
    fake["kwargs"] = {"free_bytes": 2 * GiB}  # matrices (2 buffers per GPU) fit; all-to-one (3 per receiver) does not
    out = tmp_path / "s.json"
    assert main(["survey", *SYN, "--size", "1GiB", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    waived = {m["pattern"]: m["reason"] for m in data["measurements"] if m["status"] == "waived" and m["method"] != "host-read"}
    assert set(waived) == {"all-to-one", "all-to-all"}
    assert "does not fit in GPU 0's free memory" in waived["all-to-one"]
    assert any(m["pattern"] == "matrix" and m["status"] == "ok" for m in data["measurements"])


def test_survey_size_that_fits_nowhere_is_one_line(fake, tmp_path, capsys):
    fake["kwargs"] = {"free_bytes": GiB}
    err = one_line_error(capsys, main(["survey", *SYN, "--size", "4GiB", "-o", str(tmp_path / "s.json")]))
    assert "does not fit in GPU" in err
    assert fake["engine"].runs == []


# ---- report --------------------------------------------------------------------------------------

def run_file(tmp_path: Path, name: str, measurements: list, **top) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"format": "linkscope.run", "schema_version": 1, "measurements": measurements, **top}))
    return path


M = {"src": 0, "dst": 1, "method": "ce", "pattern": "matrix", "size_bytes": 8, "median_gb_per_s": 1.0}


def test_report_with_no_files_is_usage(capsys):
    assert main(["report"]) == 2
    assert "Missing argument" in capsys.readouterr().err


@pytest.mark.parametrize("content, message", [
    ({**M, "median_gb_per_s": math.nan}, "NaN is not a number JSON allows"),
    ({**M, "src": [0]}, "src must be a GPU index"),
    ({**M, "status": "fine"}, "status must be one of ok, waived, error"),
])
def test_report_bad_results_file(tmp_path, capsys, content, message):
    path = run_file(tmp_path, "r.json", [content])
    assert message in one_line_error(capsys, main(["report", str(path), "-o", str(tmp_path / "r.html")]))
    assert not (tmp_path / "r.html").exists()


def test_report_on_a_topology_or_watch_file(tmp_path, capsys):
    topo = tmp_path / "t.json"
    topo_io.save(load_preset("hgx-h200-4"), topo)
    err = one_line_error(capsys, main(["report", str(topo), "-o", str(tmp_path / "r.html")]))
    assert "this is a topology file ('linkscope.topology'), not a linkscope run record" in err
    assert "bench --json" in err
    watch = tmp_path / "w.json"
    watch.write_text(json.dumps({"format": "linkscope.watch", "schema_version": 1}))
    assert "this is a watch result file" in one_line_error(capsys, main(["report", str(watch), "-o", str(tmp_path / "r.html")]))


def test_report_unwritable_outputs(tmp_path, capsys):
    path = run_file(tmp_path, "r.json", [M])
    assert "does not exist" in one_line_error(capsys, main(["report", str(path), "-o", str(tmp_path / "no" / "r.html")]))
    assert "is a folder" in one_line_error(capsys, main(["report", str(path), "-o", str(tmp_path)]))
    blocker = tmp_path / "file"
    blocker.write_text("")
    err = one_line_error(capsys, main(["report", str(path), "-o", str(tmp_path / "r.html"), "--png", str(blocker / "figs")]))
    assert "--png" in err and "is not a folder" in err
    assert "names the same file as input RUN.json" in one_line_error(capsys, main(["report", str(path), "-o", str(path)]))
    assert json.loads(path.read_text())["measurements"] == [M]


def test_report_of_an_empty_run_says_so(tmp_path, capsys):
    path = run_file(tmp_path, "empty.json", [])
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    assert f"note: {path} holds no measurements" in capsys.readouterr().err


# ---- watch ---------------------------------------------------------------------------------------

@pytest.fixture
def fake_nvml(monkeypatch):
    from tests.counters.fake_nvml import FakeGpu, FakeNVML

    nv = FakeNVML([FakeGpu(links=2), FakeGpu(links=2)])
    monkeypatch.setattr("linkscope.counters.nvml.open_nvml", lambda: nv)
    return nv


def test_watch_unwritable_output_refused_before_the_command_runs(fake_nvml, tmp_path, capsys):
    marker = tmp_path / "ran"
    err = one_line_error(capsys, main(["watch", "--json", str(tmp_path / "no" / "w.json"), "--",
                                       sys.executable, "-c", f"open({str(marker)!r}, 'w')"]))
    assert "--json" in err and "does not exist" in err
    assert not marker.exists()


@pytest.mark.parametrize("args, message", [
    (["--json", "-"], "stdout belongs to the command"),
    (["--gpus", ","], "empty GPU list"),
    (["--gpus", "0,5"], "GPU 5 does not exist"),
    (["--gpus", "0,a"], "--gpus '0,a': 'a' is not a GPU index"),
    (["--interval", "fast"], "not a duration: 'fast'"),
    (["--expect", "pcie"], "unknown --expect value 'pcie' (valid: nvlink)"),
])
def test_watch_bad_input(fake_nvml, capsys, args, message):
    assert message in one_line_error(capsys, main(["watch", *args, "--", sys.executable, "-c", "pass"]))


def test_watch_gpus_all_is_the_default(fake_nvml, capsys):
    assert main(["watch", "--gpus", "all", "--", sys.executable, "-c", "pass"]) == 0
    assert "GPU 1:" in capsys.readouterr().err  # both fake GPUs are watched


def test_watch_command_not_found_keeps_the_shell_code(fake_nvml, capsys):
    err = one_line_error(capsys, main(["watch", "--", "no-such-command-linkscope"]), expected_code=127)
    assert "command not found: no-such-command-linkscope" in err


# ---- help, usage, --debug ------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["env"], ["topo"], ["topo", "export"], ["bench"], ["bench", "latency"],
                                     ["survey"], ["watch"], ["report"]])
def test_every_command_help_has_an_example(capsys, command):
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Usage: linkscope" in out and "Example" in out


def test_no_arguments_shows_help(capsys):
    code = main([])
    captured = capsys.readouterr()
    assert code in (0, 2) and "Usage: linkscope" in captured.out + captured.err
    assert "topo" in captured.out + captured.err


def test_unknown_command_and_option_are_usage_errors(capsys):
    assert main(["frobnicate"]) == 2
    assert "No such command 'frobnicate'" in capsys.readouterr().err
    assert main(["topo", "--bogus"]) == 2
    assert "No such option: --bogus" in capsys.readouterr().err


def test_debug_shows_the_traceback_of_a_user_error():
    with pytest.raises(UserError, match="unknown preset 'nope'"):
        main(["--debug", "topo", "--preset", "nope"])


def test_no_stray_temporary_files_after_a_refused_write(tmp_path, capsys):
    main(["topo", "--preset", "hgx-h200-4", "-o", str(tmp_path / "missing" / "t.json")])
    capsys.readouterr()
    assert list(tmp_path.iterdir()) == []
