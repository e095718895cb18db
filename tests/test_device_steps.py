"""bench/device_steps.sh, the step runner every device visit sources: a step's output lands in its file with
one line in steps.txt, a step past the budget is skipped (not run), a step past its limit is stopped, and
device_end packs the folder. Runs bash only: no GPU, no MPI."""
from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_steps_budget_limit_and_pack(tmp_path):
    name = f"stepstest{tmp_path.name[-12:]}"
    script = f"""
set -uo pipefail
source bench/device_steps.sh
device_begin {name} 30 sub
step sub/hello.txt 10 echo hello
step sub/slow.txt 1 sleep 5
budget=0
step sub/never.txt 10 touch {tmp_path}/ran
cuda_mpi && echo mpi || echo nompi
echo done > "$r/{name}.log"
device_end {name}
"""
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out"), "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("nompi")  # no CUDA-aware MPI prefix here
    steps = (Path("/tmp") / name / "steps.txt").read_text().splitlines()
    assert steps[0].startswith("sub/hello.txt rc=0 ") and steps[0].endswith(":: echo hello")
    assert steps[1].startswith("sub/slow.txt rc=124 ")  # timeout(1) stopped it at its limit
    assert steps[2] == "SKIP sub/never.txt (budget)" and not (tmp_path / "ran").exists()
    assert (Path("/tmp") / name / "sub/hello.txt").read_text() == "hello\n"
    with tarfile.open(tmp_path / "out" / f"{name}.tar.gz") as tar:
        assert f"{name}/sub/hello.txt" in tar.getnames()
    assert (tmp_path / "out" / f"{name}.log").read_text() == "done\n"
    subprocess.run(["rm", "-rf", str(Path("/tmp") / name)], check=True)


def test_nccl_tests_program_names_and_paired_order():
    script = """
source bench/device_steps.sh
for op in allreduce allgather reduce_scatter alltoall sendrecv; do nccl_tests_bin $op; done
a() { echo A; }; b() { echo B; }
paired 1 a b; paired 2 a b
"""
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=30,
                          env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf",
                                   "sendrecv_perf", "A", "B", "B", "A"]
