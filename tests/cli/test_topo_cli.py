import json

from linkscope.cli import main


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_topo_synthetic_table(capsys):
    code, out, err = run(capsys, "topo", "--synthetic", "pcie:2x4")
    assert code == 0
    assert "PIX" in out and "SYS" in out and "31.5" in out and "mlx5_1" in out
    assert "NOT this system" in out


def test_topo_json_round_trips(capsys, tmp_path):
    code, out, _ = run(capsys, "topo", "--synthetic", "nvswitch:4", "--json", "-")
    assert code == 0
    data = json.loads(out)
    assert data["format"] == "linkscope.topology" and len([d for d in data["devices"] if d["kind"] == "gpu"]) == 4
    path = tmp_path / "t.json"
    path.write_text(out)
    code, out, _ = run(capsys, "topo", "--from", str(path))
    assert code == 0 and "NV18" in out


def test_topo_bad_inputs_are_one_line(capsys, tmp_path):
    code, out, err = run(capsys, "topo", "--preset", "no-such-machine")
    assert code == 1 and "unknown preset" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    code, _, err = run(capsys, "topo", "--from", str(bad))
    assert code == 1 and "not valid JSON" in err
    code, _, err = run(capsys, "topo", "--synthetic", "nvswitch:4", "--gpus", "0,9")
    assert code == 1 and "GPU 9 does not exist" in err
    code, _, err = run(capsys, "topo", "--synthetic", "warp:9")
    assert code == 1 and "unknown synthetic topology" in err


def test_usage_error_exit_code(capsys):
    code, _, _ = run(capsys, "topo", "--no-such-flag")
    assert code == 2


def test_env_json_never_crashes(capsys):
    code, out, _ = run(capsys, "env", "--json", "-")
    assert code == 0
    data = json.loads(out)
    assert data["versions"]["linkscope"]
    assert all("ok" in b for b in data["backends"])


def test_bus_ids_are_printed_verbatim(capsys):
    """Rich turns ':ab:' into an emoji unless told not to; bus ids must print as they are."""
    code, out, _ = run(capsys, "topo", "--from", "tests/fixtures/nccl/h100-8gpu-nvswitch.xml")
    assert code == 0
    assert "0000:ab:00.0" in out or "ab:00.0" in out
    assert "\U0001f18e" not in out
