import json

from linkscope.cli import main
from linkscope.engines.sim import SimEngine
from linkscope.results import io as run_io
from linkscope.topology import io as topo_io
from linkscope.topology.presets import load_preset
from model.model_records import plan, record_from


def _record(tmp_path, truth=None):
    eng = SimEngine(load_preset("hgx-h200-4"), truth or {"link_efficiency.nvlink": 0.75, "overhead_us.ce": 8.0})
    rec = record_from(eng, [plan("ce", [(0, 1)]), plan("ce", [(1, 0), (2, 0), (3, 0)], "all-to-one", aggregate="per_dst")],
                      [1 << 12, 1 << 20, 1 << 28])
    path = tmp_path / "run.json"
    run_io.save(rec, path)
    return path


def test_check_json_and_table(tmp_path, capsys):
    path = _record(tmp_path)
    assert main(["model", "check", str(path), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["n_compared"] == 15 and data["summary"]["worst_abs_rel_error"] > 0.05
    assert main(["model", "check", str(path), "--max-error", "0.01"]) == 3
    out = capsys.readouterr().out
    assert "median |error|" in out and "worst" in out


def test_calibrate_then_check_passes(tmp_path, capsys):
    path = _record(tmp_path)
    out = tmp_path / "calibrated.json"
    assert main(["model", "calibrate", str(path), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "fitted link_efficiency.nvlink = 0.75" in err and "not fitted" in err
    topo = topo_io.load(out)
    assert topo.model_params["link_efficiency.nvlink"]["provenance"] == "calibrated"
    assert main(["model", "check", str(path), "--topology", str(out), "--max-error", "0.001"]) == 0


def test_predict_and_bad_input(tmp_path, capsys):
    assert main(["model", "predict", "--preset", "pcie-8gpu-2socket", "--flows", "0->1,2->3", "--method",
                 "staged-pinned", "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["predictions"]) == 2 and data["predictions"][0]["provenance"] == "predicted"
    assert main(["model", "predict", "--synthetic", "nvswitch:4", "--pattern", "ring", "--sizes", "4KiB,1GiB"]) == 0
    capsys.readouterr()
    assert main(["model", "predict", "--preset", "hgx-h200-4", "--flows", "0->0"]) == 1
    assert "itself" in capsys.readouterr().err
    assert main(["model", "predict", "--preset", "hgx-h200-4", "--flows", "0->5"]) == 1
    assert main(["model", "check", str(tmp_path / "missing.json")]) == 1
    assert main(["model", "check", str(_record(tmp_path)), "--topology", "no-such-thing"]) == 1


def test_check_refuses_a_topology_of_another_machine_and_allows_it_on_request(tmp_path, capsys):
    path = _record(tmp_path)  # hgx-h200-4: 4 x H200, NV18
    assert main(["model", "check", str(path), "--topology", "dgx-a100"]) == 1
    err = capsys.readouterr().err
    assert "the record has 4 GPUs, 'dgx-a100' has 8" in err and "the record ran on H200, 'dgx-a100' has A100" in err
    assert err.count("\n") == 1  # one line, no traceback
    assert main(["model", "check", str(path), "--topology", "dgx-a100", "--allow-mismatch", "--json", "-"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert any("GPU models differ" in m for m in data["mismatches"]) and "MISMATCH" in captured.err


def test_check_says_a_simulated_record_compares_the_model_with_itself(tmp_path, capsys):
    from dataclasses import replace

    from linkscope.results.schema import RunProvenance

    path = _record(tmp_path)
    assert main(["model", "check", str(path)]) == 0
    assert "compares the model with itself" not in capsys.readouterr().err
    run_io.save(replace(run_io.load(path), provenance=RunProvenance.SIMULATED), path)
    assert main(["model", "check", str(path)]) == 0
    captured = capsys.readouterr()
    assert "compares the model with itself" in captured.err and "predicted vs simulated" in captured.out
    assert "measured (GB/s)" not in captured.out


def test_predict_takes_the_completion_tolerance(capsys):
    # all-to-all without peer access on the PCIe box: transfers finish at slightly different times,
    # so batching their completions (--rtol) moves some finish times, within its bound of 2 x rtol
    def elapsed(rtol):
        argv = ["model", "predict", "--preset", "pcie-8gpu-2socket", "--method", "ce-nopeer", "--pattern", "all-to-all",
                "--sizes", "64MiB", "--json", "-", "--rtol", rtol]
        assert main(argv) == 0
        return [p["elapsed_us"] for p in json.loads(capsys.readouterr().out)["predictions"]]

    exact, batched = elapsed("0"), elapsed("0.5")
    assert exact != batched
    assert max(abs(b / e - 1) for b, e in zip(batched, exact)) < 2 * 0.5
    assert elapsed("0") == exact


def _predict_gb(capsys, *args, env=None, monkeypatch=None):
    if monkeypatch is not None:
        for var in ("UCX_NET_DEVICES", "NCCL_IB_HCA"):
            monkeypatch.delenv(var, raising=False)
        for var, value in (env or {}).items():
            monkeypatch.setenv(var, value)
    assert main(["model", "predict", "--synthetic", "fattree:2x2:2", "--flows", "0->2", "--sizes", "256MiB",
                 "--json", "-", *args]) == 0
    data = json.loads(capsys.readouterr().out)
    return data["nic"], data["predictions"][0]["predicted_gb_per_s"]


def test_predict_nic_option_and_environment_pick_the_nics_like_bench_and_map(capsys, monkeypatch):
    # GPU0's nearest NIC is n0.mlx5_0 (PIX); mlx5_1 sits behind the host bridge (PHB) on both nodes
    near = _predict_gb(capsys, monkeypatch=monkeypatch)
    assert near[0] == "nearest"
    far = _predict_gb(capsys, "--nic", "mlx5_1", monkeypatch=monkeypatch)
    spread = _predict_gb(capsys, "--nic", "mlx5_0,mlx5_1", monkeypatch=monkeypatch)
    assert far[0] == "mlx5_1" and far[1] < near[1]  # the far NIC costs the host-bridge hop
    assert spread[0] == "mlx5_0,mlx5_1" and spread[1] > near[1]  # two NICs carry halves
    # without --nic the libraries' variables decide, as for bench and map; --nic wins over them
    assert _predict_gb(capsys, env={"UCX_NET_DEVICES": "mlx5_1:1"}, monkeypatch=monkeypatch) == far
    assert _predict_gb(capsys, env={"NCCL_IB_HCA": "mlx5_0,mlx5_1"}, monkeypatch=monkeypatch) == spread
    assert _predict_gb(capsys, "--nic", "nearest", env={"UCX_NET_DEVICES": "mlx5_1:1"}, monkeypatch=monkeypatch) == near
    assert main(["model", "predict", "--synthetic", "fattree:2x2:2", "--flows", "0->2", "--nic", "mlx5_7"]) == 1
    assert "no NIC named mlx5_7" in capsys.readouterr().err


def test_predict_says_pageable_copies_run_one_after_another(capsys):
    args = ["model", "predict", "--preset", "pcie-8gpu-2socket", "--method", "h2d-pageable", "--flows", "host->0,host->1",
            "--sizes", "64MiB"]
    assert main([*args, "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["predictions"]
    assert rows[0]["start_us"] == 0 and rows[1]["start_us"] == rows[0]["elapsed_us"]
    assert main(args) == 0
    assert "ran one after another" in capsys.readouterr().out


def test_check_params_from_applies_another_runs_calibration_to_this_records_topology(tmp_path, capsys):
    # calibrate on one run, check another: the parameters travel, the topology stays the record's own
    truth = {"link_efficiency.nvlink": 0.75, "overhead_us.ce": 8.0}
    cal = tmp_path / "cal.json"
    assert main(["model", "calibrate", str(_record(tmp_path, truth)), "-o", str(cal)]) == 0
    other = tmp_path / "other"
    other.mkdir()
    second = _record(other, truth)  # another run of the same truth
    capsys.readouterr()
    assert main(["model", "check", str(second), "--json", "-"]) == 0
    before = json.loads(capsys.readouterr().out)["summary"]["worst_abs_rel_error"]
    assert main(["model", "check", str(second), "--params-from", str(cal), "--json", "-"]) == 0
    after = json.loads(capsys.readouterr().out)["summary"]["worst_abs_rel_error"]
    assert before > 0.05 and after < 1e-3
