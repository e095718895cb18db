"""Several hosts for real on one machine: network namespaces with sshd, and mpirun --host across them.

Two hosts (``lsn0``, ``lsn1``: own addresses in 198.18.x.0/24, own host names, an sshd each), two
ranks on each. Covered: ``bench p2p --mpi`` on host buffers, ``profile`` of a C MPI program, ``map
--nodes`` from the captured matrix (the hosts it saw), ``launch`` with the mapping's rankfile; every
record carries each rank's host. Skipped, with the reason, where namespaces or sshd are not
available (not root, no openssh-server). The namespaces are removed even when a test fails.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from linkscope.traffic.io import load_traffic

from .conftest import ROOT, mpirun_available
from .netns_hosts import NetnsHosts, unavailable

WHY = unavailable() or ("" if mpirun_available() and shutil.which("mpicc") else "needs mpirun, mpicc and mpi4py")
pytestmark = [pytest.mark.mpi, pytest.mark.skipif(bool(WHY), reason=WHY or "available"),
              pytest.mark.xdist_group("netns-hosts")]  # one set of namespaces and sshds, in one worker

FORWARD = ("PYTHONPATH", "OMPI_ALLOW_RUN_AS_ROOT", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "XDG_CACHE_HOME")

# rank r sends (r + 1) KiB round the ring, and 1 MiB between ranks 0 and 2 (on different hosts
# when placed by slot), so a mapping onto two 2-GPU nodes puts 0 and 2 together.
APP_C = r"""
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int r, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char *buf = calloc(1 << 20, 1), *rbuf = calloc(1 << 20, 1);
    MPI_Sendrecv(buf, 1024 * (r + 1), MPI_BYTE, (r + 1) % n, 0, rbuf, 1 << 20, MPI_BYTE, (r + n - 1) % n, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (r == 0 || r == 2)
        MPI_Sendrecv(buf, 1 << 20, MPI_BYTE, 2 - r, 1, rbuf, 1 << 20, MPI_BYTE, 2 - r, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    free(buf); free(rbuf);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    with NetnsHosts(2, tmp_path_factory.mktemp("netns")) as made:
        yield made


def _env(tmp) -> dict[str, str]:
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", PYTHONPATH=str(ROOT / "src"),
               XDG_CACHE_HOME=str(tmp / "cache"))
    env.pop("OMPI_MCA_rmaps_base_oversubscribe", None)  # slots come from --host here
    return env


def _linkscope(*args: str) -> list[str]:
    return [sys.executable, "-m", "linkscope", *args]


def test_bench_p2p_mpi_across_hosts(hosts, tmp_path):
    out = tmp_path / "p2p.json"
    done = hosts.run(hosts.mpirun_args(2, 4, FORWARD) + _linkscope("bench", "p2p", "--mpi", "--buffers", "H",
                                                                   "--sizes", "4KiB", "--json", str(out)),
                     env=_env(tmp_path), timeout_s=60)
    assert done.returncode == 0, done.stderr
    rec = json.loads(out.read_text())
    assert rec["context"]["hosts_per_rank"] == ["lsn0", "lsn0", "lsn1", "lsn1"]
    assert rec["context"]["hosts"] == ["lsn0", "lsn1"]
    pairs = {(m["src"], m["dst"]) for m in rec["measurements"]}
    assert (0, 3) in pairs and (3, 0) in pairs  # host-to-host pairs measured
    assert all(m["verified"] is True for m in rec["measurements"])


def test_profile_map_launch_across_hosts(hosts, tmp_path):
    env = _env(tmp_path)
    (tmp_path / "app.c").write_text(APP_C)
    subprocess.run(["mpicc", "-o", str(tmp_path / "app"), str(tmp_path / "app.c")], check=True, timeout=60)
    traffic = tmp_path / "traffic.json"
    done = hosts.run(_linkscope("profile", "-o", str(traffic), "--", *hosts.mpirun_args(2, 4, FORWARD),
                                str(tmp_path / "app")), env=env, timeout_s=90)
    assert done.returncode == 0, done.stderr
    data = json.loads(traffic.read_text())
    assert data["hosts"] == ["lsn0", "lsn0", "lsn1", "lsn1"]
    captured = load_traffic(traffic).dense_bytes()  # the file holds it dense or as CSR, whichever is smaller
    assert captured[0, 2] == 1 << 20 and captured[2, 0] == 1 << 20

    mapping, rankfile = tmp_path / "mapping.json", tmp_path / "rankfile"
    done = subprocess.run(_linkscope("map", str(traffic), "--synthetic", "nvswitch:2", "--nodes", "2",
                                     "-o", str(mapping), "--emit", "rankfile", "--emit-to", str(rankfile)),
                          env=env, capture_output=True, text=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assigned = json.loads(mapping.read_text())
    host_of_rank = assigned["host_of_rank"]
    assert sorted(host_of_rank) == ["lsn0", "lsn0", "lsn1", "lsn1"]  # the hosts the capture saw
    assert host_of_rank[0] == host_of_rank[2]  # the 1 MiB pair shares a node

    lines = rankfile.read_text().splitlines()
    assert [line.split("=")[1].split()[0] for line in lines if line.startswith("rank ")] == host_of_rank
    # the synthetic node's cores (0-31) are not this machine's: keep the hosts, let Open MPI pick slots
    rankfile.write_text("\n".join(line.split(" slot=")[0] + " slot=*" if line.startswith("rank ") else line
                                  for line in lines) + "\n")
    # each rank writes its own file (the namespaces share the file system): ranks printing to one
    # mpirun stdout can interleave mid-line
    seen_dir = tmp_path / "seen"
    seen_dir.mkdir()
    show = (f"import os, socket; r = os.environ['OMPI_COMM_WORLD_RANK']; "
            f"open(os.path.join({str(seen_dir)!r}, r), 'w').write("
            f"' '.join([r, socket.gethostname(), str(os.environ.get('CUDA_VISIBLE_DEVICES'))]))")
    args = hosts.mpirun_args(2, 4, FORWARD)
    host_at = args.index("--host")
    args[host_at:host_at + 2] = ["--rankfile", str(rankfile), "--bind-to", "none"]
    done = hosts.run(args + _linkscope("launch", "--mapping", str(mapping), "--no-bind", "--",
                                       sys.executable, "-c", show), env=env, timeout_s=60)
    assert done.returncode == 0, done.stderr
    seen = {int(r): (h, d) for r, h, d in (f.read_text().split() for f in seen_dir.iterdir())}
    assert {r: h for r, (h, _) in seen.items()} == dict(enumerate(host_of_rank))
    assert {r: d for r, (_, d) in seen.items()} == {r: str(v) for r, v in enumerate(assigned["visible_device_of_rank"])}


def test_audit_names_a_bad_placement_across_hosts(hosts, tmp_path):
    """A deliberately bad placement under mpirun on two hosts, judged against dgx-h100 (GPUs 0-3 on
    NUMA 0 with cores 0-55, GPUs 4-7 on NUMA 1): rank 1 bound to core 1 (NUMA 0) but on GPU 4,
    ranks 2 and 3 (lsn1) both on GPU 2, and every rank told UCX_NET_DEVICES=mlx5_11 (on NUMA 1)."""
    env = _env(tmp_path)
    out = tmp_path / "audit.json"
    args = hosts.mpirun_args(2, 4, FORWARD) + ["--bind-to", "core", "--map-by", "core",
                                               "-x", "UCX_NET_DEVICES=mlx5_11:1"]
    done = hosts.run(_linkscope("audit", "--preset", "dgx-h100", "--gpus", "0,4,2,2", "--json", str(out),
                                "--dir", str(tmp_path / "probes"), "--", *args), env=env, timeout_s=90, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert [(r["rank"], r["host"], r["gpu"]) for r in report["ranks"]] == [
        (0, "lsn0", 0), (1, "lsn0", 4), (2, "lsn1", 2), (3, "lsn1", 2)]
    assert report["launcher"] == "ompi"
    assert all(len(r["cpus"]) == 1 for r in report["ranks"])  # --bind-to core: one CPU each, as the probe saw
    kinds = {(p["kind"], tuple(p["ranks"])) for p in report["problems"]}
    assert ("numa-far", (1,)) in kinds  # GPU 4 is on NUMA 1, core 1 on NUMA 0
    assert ("numa-far", (0,)) not in kinds  # GPU 0 and core 0 are both on NUMA 0
    assert ("gpu-shared", (2, 3)) in kinds
    assert {r for k, ranks in kinds if k == "nic-far" for r in ranks} == {0, 1, 2, 3}  # mlx5_11 is no GPU's nearest
    text = done.stdout
    assert "PROBLEM numa-far: rank 1 on lsn0 uses GPU 4" in text
    assert "fix: rank 1: cores 56-111,168-223 (cpu1, local to GPU 4)" in text
    assert "fix: mpirun --map-by ppr:4:numa --bind-to core" in text
    assert "PROBLEM gpu-shared: ranks 2, 3 share GPU 2 on lsn1" in text
    assert "UCX_NET_DEVICES=mlx5_0:1" in text and "UCX_NET_DEVICES=mlx5_4:1" in text  # GPU 0's and GPU 2's nearest
    assert "simulated" in text
