import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from linkscope.cli import main

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_map_prints_mapping_cost_and_saving(tmp_path, capsys):
    traffic = tmp_path / "t.json"
    assert main(["traffic", "gen", "stencil3d", "--grid", "2x2x4", "--periodic", "-o", str(traffic)]) == 0
    out = tmp_path / "m.json"
    assert main(["map", str(traffic), "--preset", "k80-16", "--metric", "bandwidth", "-o", str(out),
                 "--time-limit", "5"]) == 0
    text = capsys.readouterr().out
    assert "gpu_of_rank:" in text and "default:" in text and "saves " in text
    data = json.loads(out.read_text())
    assert data["cost"] < data["default_cost"] and data["metric"] == "bandwidth"


def test_map_on_uniform_fabric_and_emitters(tmp_path, capsys):
    traffic = tmp_path / "t.csv"
    main(["traffic", "gen", "ring", "--ranks", "8", "-o", str(traffic)])
    assert main(["map", str(traffic), "--preset", "dgx-a100"]) == 0
    assert "mapping cannot help on this fabric: every GPU pair is NV12 (uniform)" in capsys.readouterr().out
    assert main(["map", str(traffic), "--preset", "pcie-8gpu-2socket", "--emit", "slurm"]) == 0
    assert "--gpu-bind=map_gpu:" in capsys.readouterr().out
    assert main(["map", str(traffic), "--preset", "pcie-8gpu-2socket", "--emit", "env", "--emit-to",
                 str(tmp_path / "env")]) == 0
    assert (tmp_path / "env" / "rank7.env").read_text().startswith("export CUDA_VISIBLE_DEVICES=")


def test_map_user_errors(tmp_path, capsys):
    traffic = tmp_path / "t.csv"
    main(["traffic", "gen", "ring", "--ranks", "8", "-o", str(traffic)])
    assert main(["map", str(traffic), "--preset", "k80-16", "--metric", "hops"]) == 1
    assert "unknown metric 'hops'" in capsys.readouterr().err
    assert main(["map", str(traffic), "--preset", "hgx-h200-4"]) == 1
    assert "8 ranks but 4 GPUs" in capsys.readouterr().err


@pytest.mark.mpi
@pytest.mark.skipif(not shutil.which("mpirun"), reason="needs mpirun")
def test_launch_under_mpirun_gives_each_rank_its_device(tmp_path):
    traffic = tmp_path / "t.json"
    main(["traffic", "gen", "stencil2d", "--grid", "2x2", "-o", str(traffic)])
    mapping = tmp_path / "m.json"
    assert main(["map", str(traffic), "--preset", "v100-4-nvlink-ib", "--metric", "distance", "-o", str(mapping)]) == 0
    chosen = json.loads(mapping.read_text())
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    show = 'echo "rank=$OMPI_COMM_WORLD_RANK local=$OMPI_COMM_WORLD_LOCAL_RANK cuda=$CUDA_VISIBLE_DEVICES ucx=$UCX_NET_DEVICES"'
    proc = subprocess.run(["mpirun", "-n", "4", sys.executable, "-m", "linkscope", "launch", "--mapping", str(mapping),
                           "--", "sh", "-c", show], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    seen = {}
    for line in proc.stdout.splitlines():
        fields = dict(item.split("=", 1) for item in line.split())
        seen[int(fields["local"])] = fields
    assert sorted(seen) == [0, 1, 2, 3]
    for local, fields in seen.items():
        assert fields["cuda"] == chosen["visible_device_of_rank"][local]
        assert fields["ucx"] == chosen["nics_of_rank"][local][0] + ":1"


def test_map_with_the_model_metric_reports_exchange_and_pairwise_costs(tmp_path, capsys):
    traffic = tmp_path / "t.json"
    assert main(["traffic", "gen", "stencil3d", "--grid", "2x2x4", "--periodic", "-o", str(traffic)]) == 0
    out = tmp_path / "m.json"
    assert main(["map", str(traffic), "--preset", "k80-16", "--metric", "model", "--time-limit", "1",
                 "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "predicted exchange time (fabric model, method ce, contention included):" in captured.out
    assert "pairwise model cost (sum of message times alone):" in captured.out
    assert "saves " in captured.out and "fabric model with default parameters" in captured.err
    data = json.loads(out.read_text())
    assert data["metric"] == "model" and data["unit"] == "µs"
    assert data["cost"] == data["exchange_time_us"] < data["default_exchange_time_us"] == data["default_cost"]
    assert data["pairwise_cost"] < data["default_pairwise_cost"]


def test_map_model_metric_on_uniform_fabric_says_it_cannot_help(tmp_path, capsys):
    traffic = tmp_path / "t.json"
    main(["traffic", "gen", "stencil2d", "--grid", "2x2", "--periodic", "-o", str(traffic)])
    capsys.readouterr()
    assert main(["map", str(traffic), "--preset", "hgx-h200-4", "--metric", "model"]) == 0
    text = capsys.readouterr().out
    assert "mapping cannot help on this fabric: every GPU pair is NV18 (uniform)" in text
    assert "saves" not in text


def test_map_from_a_calibrated_topology_uses_its_model_params(tmp_path, capsys):
    from linkscope.topology.io import save

    from .test_fabric import bridged_topology, calibrated_params, heavy_pair_traffic

    traffic = tmp_path / "t.csv"
    traffic.write_text("\n".join(",".join(str(int(v)) for v in row) for row in heavy_pair_traffic().bytes) + "\n")
    chosen = {}
    for label, params in (("plain", None), ("calibrated", calibrated_params(nvlink=0.3, pcie=0.9))):
        topo_file = tmp_path / f"{label}.json"
        save(bridged_topology(params), topo_file)
        out = tmp_path / f"{label}-map.json"
        assert main(["map", str(traffic), "--from", str(topo_file), "--metric", "model", "-o", str(out)]) == 0
        chosen[label] = json.loads(out.read_text())
    assert set(chosen["plain"]["gpu_of_rank"][:2]) == {0, 1}  # the heavy pair on the NVLink bridge
    assert set(chosen["calibrated"]["gpu_of_rank"][:2]) != {0, 1}  # calibrated: the bridge is slow
    assert any("2 calibrated parameter(s)" in n for n in chosen["calibrated"]["notes"])
    assert "calibrated parameter" in capsys.readouterr().err


def test_map_model_metric_user_errors(tmp_path, capsys):
    traffic = tmp_path / "t.csv"
    main(["traffic", "gen", "ring", "--ranks", "4", "-o", str(traffic)])
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"measurements": [{"src": 0, "dst": 1, "size_bytes": 1 << 20, "median_gb_per_s": 10.0,
                                                 "status": "ok"}]}))
    capsys.readouterr()
    assert main(["map", str(traffic), "--results", str(run), "--metric", "model"]) == 1
    assert "linkscope model calibrate" in capsys.readouterr().err
    assert main(["map", str(traffic), "--preset", "hgx-h200-4", "--metric", "bandwidth", "--method", "ce"]) == 1
    assert "--method ce applies to --metric model only" in capsys.readouterr().err
    assert main(["map", str(traffic), "--preset", "hgx-h200-4", "--metric", "model", "--method", "d2h"]) == 1
    assert "unknown GPU-to-GPU method 'd2h'" in capsys.readouterr().err


def test_map_on_a_fat_tree_is_hierarchical_with_logical_rankfile(tmp_path, capsys):
    traffic = tmp_path / "t.json"
    assert main(["traffic", "gen", "stencil3d", "--grid", "4x4x2", "-o", str(traffic)]) == 0
    rf = tmp_path / "rf"
    assert main(["map", str(traffic), "--synthetic", "fattree:4x8", "--metric", "latency", "--emit", "rankfile",
                 "--emit-to", str(rf), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["solver"].startswith("hierarchical") and sorted(set(data["host_of_rank"])) == ["n0", "n1", "n2", "n3"]
    assert any("fixed software cost" in n for n in data["notes"])
    assert rf.read_text().splitlines()[1].startswith("rank 0=n")
    assert main(["traffic", "gen", "stencil3d", "--grid", "2x2x4", "--periodic", "-o", str(traffic)]) == 0
    assert main(["map", str(traffic), "--preset", "k80-16", "--emit", "rankfile-logical", "--emit-to", str(rf)]) == 0
    out = capsys.readouterr().out
    assert "not a time prediction" in out and "--map-by rankfile:file=" in rf.read_text()


def test_the_map_command_does_not_import_scipy_optimize_until_a_solver_needs_it():
    """``linkscope map`` at cluster scale never runs the exact or the heuristic solver, and importing
    scipy.optimize costs about 0.25 s of every such command (issue 41: the whole command counts)."""
    code = ("import sys, linkscope.cli, linkscope.cli.cmd_map, linkscope.mapping.api, linkscope.mapping.exact, "
            "linkscope.mapping.heuristic; print(sorted(m for m in ('scipy.optimize', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": SRC})
    assert out.stdout.strip() == "[]"
