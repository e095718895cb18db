import pytest

from linkscope.errors import UserError
from linkscope.mapping.assignment import Assignment, from_dict, load_assignment, save_assignment, to_dict
from linkscope.mapping.emit import env_files, launch_plan, rankfile, slurm_line


def _assignment(**changes):
    base = dict(gpu_of_rank=(2, 0, 3, 1), cost=1.0, default_cost=2.0, metric="bandwidth", solver="branch-and-bound",
                optimal=True, nics_of_rank=(("mlx5_1",), ("mlx5_0",), ("mlx5_1",), ("mlx5_0",)),
                cores_of_rank=((8, 9), (0, 1), (10, 11), (2, 3)), visible_device_of_rank=("2", "0", "3", "1"),
                gpu_vendor="nvidia")
    base.update(changes)
    return Assignment(**base)


def test_json_round_trip_has_the_cli_fields(tmp_path):
    a = _assignment()
    data = to_dict(a)
    for key in ("gpu_of_rank", "cost", "default_cost", "metric", "solver", "optimal"):
        assert key in data
    assert data["saved_fraction"] == 0.5
    save_assignment(a, tmp_path / "m.json")
    assert load_assignment(tmp_path / "m.json") == a
    with pytest.raises(UserError, match="missing 'cost'"):
        from_dict({"gpu_of_rank": [0]})


def test_model_metric_fields_round_trip(tmp_path):
    a = _assignment(metric="model", unit="µs", cost=150.0, default_cost=300.0, exchange_time_us=150.0,
                    default_exchange_time_us=300.0, pairwise_cost=900.0, default_pairwise_cost=1200.0, optimal=False)
    save_assignment(a, tmp_path / "m.json")
    back = load_assignment(tmp_path / "m.json")
    assert back == a and back.pairwise_cost == 900.0 and back.default_exchange_time_us == 300.0
    assert a.summary() == "saves 50.0% of the default mapping's predicted exchange time"
    assert to_dict(_assignment())["exchange_time_us"] is None  # other metrics have no exchange prediction
    with pytest.raises(UserError, match="pairwise_cost must be a number"):
        from_dict({**to_dict(a), "pairwise_cost": "fast"})


@pytest.mark.parametrize("var", ["OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID",
                                 "LOCAL_RANK"])
def test_launch_plan_reads_each_launchers_local_rank(var):
    plan = launch_plan(_assignment(), {var: "2"})
    assert plan.rank == 2 and plan.rank_source == var
    assert plan.env["CUDA_VISIBLE_DEVICES"] == "3" and "HIP_VISIBLE_DEVICES" not in plan.env
    assert plan.env["UCX_NET_DEVICES"] == "mlx5_1:1" and plan.env["NCCL_IB_HCA"] == "=mlx5_1"
    assert plan.cores == (10, 11)


def test_launch_plan_errors():
    with pytest.raises(UserError, match="none of OMPI_COMM_WORLD_LOCAL_RANK"):
        launch_plan(_assignment(), {})
    with pytest.raises(UserError, match="rank 7 is not in the mapping"):
        launch_plan(_assignment(), {"SLURM_LOCALID": "7"})


def test_amd_gets_hip_visible_devices():
    plan = launch_plan(_assignment(gpu_vendor="amd"), {"LOCAL_RANK": "0"})
    assert plan.env["HIP_VISIBLE_DEVICES"] == "2" and "CUDA_VISIBLE_DEVICES" not in plan.env


def test_rankfile_slurm_and_env_files():
    a = _assignment()
    text = rankfile(a)
    assert "rank 0=localhost slot=8-9" in text and "rank 3=localhost slot=2-3" in text
    line = slurm_line(a).splitlines()
    assert "need the whole node" in line[0] and not any("UUID" in x for x in line)  # no UUIDs known
    assert line[-1].startswith("--exclusive --gpu-bind=map_gpu:2,0,3,1 --cpu-bind=mask_cpu:0x300,0x3,")
    uuids = ("GPU-a", "GPU-b", "GPU-c", "GPU-d")
    assert "by GPU UUID (any allocation): srun" in slurm_line(_assignment(visible_device_of_rank=uuids))
    files = env_files(a)
    assert files["rank1.env"].splitlines()[0] == "export CUDA_VISIBLE_DEVICES=0"


def test_multi_node_uses_global_rank_and_hosts():
    a = _assignment(node_of_rank=(0, 0, 1, 1), host_of_rank=("a", "a", "b", "b"))
    assert launch_plan(a, {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_LOCAL_RANK": "1"}).rank == 3
    assert "rank 2=b slot=10-11" in rankfile(a)


def test_open_mpi_4_rankfile_lists_one_hardware_thread_per_core():
    # "slot=6,30" (a core and its SMT sibling) reads as two cores in Open MPI's logical numbering;
    # one thread per physical core is the same core set with or without the physical flag's siblings
    a = _assignment(cores_of_rank=((6, 30), (7, 31), (8, 9, 32, 33), (10, 34)),
                    core_index_of_rank=((6,), (7,), (8, 9), (10,)))
    text = rankfile(a)
    assert "rank 0=localhost slot=6\n" in text and "rank 2=localhost slot=8-9\n" in text
    assert "30" not in text.split("\n", 1)[1] and "rmaps_rank_file_physical 1" in text


def test_sbatch_script_is_runnable_and_requests_the_gpus(tmp_path):
    import subprocess

    from linkscope.mapping.emit import sbatch_script

    text = sbatch_script(_assignment())
    assert text.startswith("#!/bin/bash\n")
    assert "#SBATCH --ntasks=4\n" in text and "#SBATCH --gres=gpu:4\n" in text and "#SBATCH --gpus-per-node=4\n" in text
    assert "\nsrun --gpu-bind=map_gpu:2,0,3,1 --cpu-bind=mask_cpu:0x300,0x3," in text and text.endswith(" ./app\n")
    script = tmp_path / "job.sbatch"
    script.write_text(text)
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    multi = sbatch_script(_assignment(node_of_rank=(0, 0, 1, 1), gpu_of_rank=(0, 1, 1, 0)))
    assert "#SBATCH --nodes=2\n" in multi and "srun linkscope launch --mapping mapping.json -- ./app" in multi


def test_launch_warns_when_the_job_has_another_number_of_ranks_than_the_mapping(tmp_path, capfd):
    """Issue 39: 2 ranks launched with a 4-rank mapping said nothing."""
    from linkscope.cli import main
    from linkscope.mapping.emit import size_mismatch

    a = _assignment()
    assert size_mismatch(a, {"OMPI_COMM_WORLD_LOCAL_SIZE": "4"}) is None
    assert size_mismatch(a, {}) is None
    text = size_mismatch(a, {"OMPI_COMM_WORLD_LOCAL_SIZE": "2"})
    assert text is not None and "2 ranks on this node" in text and "made for 4" in text
    save_assignment(a, tmp_path / "m.json")
    import os
    from unittest import mock

    with mock.patch.dict(os.environ, {"OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"}), \
            mock.patch("os.execvpe", side_effect=SystemExit(0)):
        try:
            main(["launch", "--mapping", str(tmp_path / "m.json"), "--no-bind", "--", "true"])
        except SystemExit:
            pass
    assert "warning: the job has 2 ranks on this node" in capfd.readouterr().err
