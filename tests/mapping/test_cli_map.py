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
