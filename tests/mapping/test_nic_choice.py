"""One NIC choice for bench (the fabric model's routes), map (each rank's NICs and cross-host costs)
and launch (UCX_NET_DEVICES / NCCL_IB_HCA): same GPU and spec, same NIC."""
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from linkscope.cli import main
from linkscope.cli.common import with_nic_option
from linkscope.errors import UserError
from linkscope.mapping.api import _nics_and_cores, map_onto
from linkscope.mapping.emit import env_files, launch_plan
from linkscope.model.nics import select_nics
from linkscope.model.predict import FabricModel
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.synthetic import ring

SRC = str(Path(__file__).resolve().parents[2] / "src")
V100X2 = "cluster:v100-4-nvlink-ib:2"  # two 4 x V100 nodes, mlx5_0 by GPU0/1, mlx5_1 by GPU2/3, one switch per rail, joined by a spine


def _bench_nics(topology, gpu: int) -> list[str]:
    """The NICs bench's model routes GPU ``gpu``'s inter-node traffic through."""
    return [n.device_name for n in FabricModel(topology).router.nics_of(topology.gpu(gpu))]


def _map_json(tmp_path, capsys, synthetic: str, *nic: str) -> dict:
    traffic = tmp_path / "t.json"
    if not traffic.exists():
        assert main(["traffic", "gen", "all-to-all", "--ranks", "8", "-o", str(traffic)]) == 0
    capsys.readouterr()
    assert main(["map", str(traffic), "--synthetic", synthetic, "--json", "-", *nic]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("synthetic, spec, gpu0_nics", [
    (V100X2, "mlx5_0", ["mlx5_0"]),                    # near for GPU0/1, far for GPU2/3
    (V100X2, "mlx5_1", ["mlx5_1"]),                    # far for GPU0/1
    (V100X2, "mlx5_0,mlx5_1", ["mlx5_0", "mlx5_1"]),   # spread over both
    (V100X2, None, ["mlx5_0"]),                        # nearest (the rails joined by the spine)
    (V100X2 + ":single", None, ["mlx5_0"]),            # nearest, one switch
    (V100X2 + ":single", "any", ["mlx5_0", "mlx5_1"]),  # UCX unspecified: the nearest first, then the other
])
def test_map_and_bench_choose_the_same_nic_for_each_gpu(tmp_path, capsys, monkeypatch, synthetic, spec, gpu0_nics):
    for var in ("UCX_NET_DEVICES", "NCCL_IB_HCA"):
        monkeypatch.delenv(var, raising=False)
    topology, choice = with_nic_option(synthetic_topology(synthetic), spec)  # what bench does with --nic
    assert choice == spec and _bench_nics(topology, 0) == gpu0_nics
    data = _map_json(tmp_path, capsys, synthetic, *(["--nic", spec] if spec else []))
    assert data["nic_choice"] == (spec or "nearest")
    seen = set()
    for rank, nics in enumerate(data["nics_of_rank"]):
        gpu = 4 * data["node_of_rank"][rank] + data["gpu_of_rank"][rank]
        assert nics == _bench_nics(topology, gpu), (rank, gpu)
        seen.add(data["gpu_of_rank"][rank])
    assert seen == {0, 1, 2, 3}  # near and far GPUs both checked
    assert data["nics_of_node"] == [["mlx5_0", "mlx5_1"]] * 2


def test_the_environment_choice_is_read_alike_by_bench_and_map(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("UCX_NET_DEVICES", "mlx5_1:1")
    monkeypatch.setenv("NCCL_IB_HCA", "=mlx5_0")  # UCX_NET_DEVICES comes first, as bench always read it
    topology, choice = with_nic_option(synthetic_topology(V100X2), None)
    assert choice == "mlx5_1:1" and _bench_nics(topology, 0) == ["mlx5_1"]
    data = _map_json(tmp_path, capsys, V100X2)
    assert data["nic_choice"] == "mlx5_1" and {tuple(n) for n in data["nics_of_rank"]} == {("mlx5_1",)}
    assert with_nic_option(load_preset("hgx-h200-4"), None) == (load_preset("hgx-h200-4"), None)  # no NIC: left aside
    assert "left aside" in capsys.readouterr().err


def test_the_cross_host_cost_follows_the_nic_choice():
    from linkscope.mapping.cluster import topology_cluster_cost

    topo = synthetic_topology(V100X2)
    near = topology_cluster_cost(topo, "latency", nics="mlx5_0").access[0]
    far = topology_cluster_cost(topo, "latency", nics="mlx5_1").access[0]
    assert near[0] < far[0] and near[2] > far[2]  # GPU0 sits by mlx5_0, GPU2 by mlx5_1
    one = topology_cluster_cost(topo, "bandwidth", nics="mlx5_0").access[0][0]
    two = topology_cluster_cost(topo, "bandwidth", nics="mlx5_0,mlx5_1").access[0][0]
    assert two == pytest.approx(one / 2)  # µs per byte: two EDR rails share the bytes
    # nearest puts GPUs on both rails; the spine joins them, two switch hops more than within a rail
    nearest = topology_cluster_cost(topo, "latency")
    assert nearest.access[0][0] == pytest.approx(near[0]) and nearest.access[0][2] == pytest.approx(far[2])
    assert map_onto(ring(8), topo, "latency").nic_choice == "nearest"
    apart = dataclasses.replace(topo, devices=tuple(d for d in topo.devices if d.id != "spine"),
                                links=tuple(link for link in topo.links if "spine" not in (link.a, link.b)))
    with pytest.raises(UserError, match="no network path between rail0 and rail1"):
        map_onto(ring(8), apart, "latency")  # without the spine nothing joins the rails nearest uses
    assert map_onto(ring(8), apart, "latency", nics="mlx5_0").nic_choice == "mlx5_0"
    assert map_onto(ring(8), topo, "latency", nics="mlx5_1").nic_choice == "mlx5_1"


def test_nic_of_a_gpu_does_not_depend_on_which_rank_runs_there():
    """The mapping used to hand equally near NICs out in rank order, so GPU 7 of a DGX A100 got
    mlx5_8 when ranks came in reverse, while the model routed it through mlx5_9 (GPU 2k+1 -> the
    second NIC of its switch): now both follow select_nics."""
    topo = load_preset("dgx-a100")
    forward, _ = _nics_and_cores(topo, list(range(8)))
    backward, _ = _nics_and_cores(topo, list(reversed(range(8))))
    assert list(reversed(backward)) == list(forward)
    assert [n for (n,) in forward] == [select_nics(topo, g)[0].device_name for g in range(8)]
    assert len({n for (n,) in forward}) == 8  # still spread: one NIC per GPU


def _mapping(tmp_path, capsys, *args: str) -> Path:
    traffic = tmp_path / "t.json"
    assert main(["traffic", "gen", "ring", "--ranks", "4", "-o", str(traffic)]) == 0
    out = tmp_path / "m.json"
    assert main(["map", str(traffic), *args, "-o", str(out)]) == 0
    capsys.readouterr()
    return out


def test_launch_nic_overrides_the_mappings_nics(tmp_path, capsys):
    from linkscope.mapping.assignment import load_assignment

    a = load_assignment(_mapping(tmp_path, capsys, "--preset", "v100-4-nvlink-ib"))
    assert a.nic_choice == "nearest" and a.nics_of_node == (("mlx5_0", "mlx5_1"),)
    rank_on_gpu0 = a.gpu_of_rank.index(0)
    env = {"OMPI_COMM_WORLD_LOCAL_RANK": str(rank_on_gpu0)}
    assert launch_plan(a, env).env["UCX_NET_DEVICES"] == "mlx5_0:1"  # the mapping's: nearest
    plan = launch_plan(a, env, "mlx5_1")
    assert plan.env["UCX_NET_DEVICES"] == "mlx5_1:1" and plan.env["NCCL_IB_HCA"] == "=mlx5_1" and not plan.unset
    assert launch_plan(a, env, "^mlx5_1").env["NCCL_IB_HCA"] == "=mlx5_0"
    assert launch_plan(a, env, "mlx5_0:1,mlx5_1").env["UCX_NET_DEVICES"] == "mlx5_0:1,mlx5_1:1"
    assert launch_plan(a, env, "nearest").env == launch_plan(a, env).env
    anyway = launch_plan(a, env, "any")
    assert "UCX_NET_DEVICES" not in anyway.env and anyway.unset == ("UCX_NET_DEVICES", "NCCL_IB_HCA")
    with pytest.raises(UserError, match="no NIC named mlx5_3 on this node"):
        launch_plan(a, env, "mlx5_0,mlx5_3")


def test_map_nic_reaches_env_files_and_multi_node_launch(tmp_path, capsys):
    from linkscope.mapping.assignment import load_assignment

    a = load_assignment(_mapping(tmp_path, capsys, "--synthetic", "fattree:2x2:2", "--nic", "^mlx5_0"))
    assert a.node_of_rank is not None and a.nic_choice == "^mlx5_0"
    files = env_files(a)
    for rank in range(a.ranks):
        host = a.host_of_rank[rank]
        assert a.nics_of_rank[rank] == (f"{host}.mlx5_1",)  # each node's own NIC names
        assert f"export NCCL_IB_HCA=={host}.mlx5_1\n" in files[f"rank{rank}.env"]
    last = a.ranks - 1
    plan = launch_plan(a, {"OMPI_COMM_WORLD_RANK": str(last)}, "mlx5_0")  # names resolve on the rank's own node
    assert plan.env["NCCL_IB_HCA"] == f"={a.host_of_rank[last]}.mlx5_0" and a.host_of_rank[last] != a.host_of_rank[0]
    a_any = load_assignment(_mapping(tmp_path, capsys, "--preset", "v100-4-nvlink-ib", "--nic", "any"))
    assert env_files(a_any)["rank0.env"].startswith("unset UCX_NET_DEVICES\nunset NCCL_IB_HCA\n")
    assert "UCX_NET_DEVICES=" not in env_files(a_any)["rank0.env"]


def test_launch_cli_sets_the_nic_variables_it_chose(tmp_path, capsys):
    mapping = _mapping(tmp_path, capsys, "--preset", "v100-4-nvlink-ib")
    chosen = json.loads(mapping.read_text())
    rank = chosen["gpu_of_rank"].index(3)  # GPU3's nearest NIC is mlx5_1
    assert chosen["nics_of_rank"][rank] == ["mlx5_1"]
    env = dict(os.environ, OMPI_COMM_WORLD_LOCAL_RANK=str(rank), UCX_NET_DEVICES="mlx5_9:1",
               PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    show = 'echo "ucx=${UCX_NET_DEVICES-unset} nccl=${NCCL_IB_HCA-unset}"'

    def launch(*nic: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "linkscope", "launch", "--mapping", str(mapping), "--no-bind",
                               *nic, "--", "sh", "-c", show], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert launch() == "ucx=mlx5_1:1 nccl==mlx5_1"  # the mapping's NIC wins over the inherited variable
    assert launch("--nic", "mlx5_0") == "ucx=mlx5_0:1 nccl==mlx5_0"
    assert launch("--nic", "any") == "ucx=unset nccl=unset"
