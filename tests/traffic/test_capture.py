import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from linkscope.errors import BackendUnavailable, UserError
from linkscope.traffic.capture import ROWS_ENV, build_interposer, launch_command
from linkscope.traffic.capture.rows import Row, format_row, merge_rows, parse_row
from linkscope.traffic.io import load_traffic

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _row(rank, size=4, host="h", local=-1):
    b = [0] * size
    b[(rank + 1) % size] = 10 * (rank + 1)
    return Row(rank, size, host, local, tuple(b), tuple(int(x > 0) for x in b), (0,) * 64, {"MPI_Barrier": (1, 0)})


def test_rows_round_trip_and_merge():
    rows = [parse_row(format_row(_row(k, host=f"n{k // 2}"))) for k in range(4)]
    m = merge_rows(rows, "captured:test")
    assert m.bytes[0, 1] == 10 and m.bytes[3, 0] == 40
    assert m.hosts == ("n0", "n0", "n1", "n1") and m.local_ranks == (0, 1, 0, 1)
    assert m.collectives["MPI_Barrier"] == {"calls": 4, "bytes": 0}


def test_merge_reports_missing_or_duplicate_ranks():
    with pytest.raises(UserError, match=r"rank\(s\) \[1, 2, 3\]"):
        merge_rows([_row(0)], "x")
    with pytest.raises(UserError, match="two traffic rows for rank 0"):
        merge_rows([_row(0), _row(0)], "x")
    with pytest.raises(UserError, match="truncated"):
        parse_row(format_row(_row(0)).replace("end\n", ""))


def test_launch_command_injects_per_launcher(tmp_path):
    lib, rows = Path("/c/libpmpi_count.so"), tmp_path
    argv, env = launch_command(["mpirun", "-n", "4", "./app"], lib, rows, "ompi", {})
    assert argv[:5] == ["mpirun", "-x", f"LD_PRELOAD={lib}", "-x", f"{ROWS_ENV}={rows}"]
    assert "LD_PRELOAD" not in env and env[ROWS_ENV] == str(rows)
    argv, _ = launch_command(["mpiexec", "-n", "4", "./app"], lib, rows, "hydra", {"LD_PRELOAD": "/x.so"})
    assert argv[1:4] == ["-genv", "LD_PRELOAD", f"{lib}:/x.so"]
    argv, _ = launch_command(["srun", "./app"], lib, rows, "srun", {})
    assert argv[1].startswith("--export=ALL,LD_PRELOAD=")
    argv, env = launch_command(["./app"], lib, rows, "env", {})
    assert argv == ["./app"] and env["LD_PRELOAD"] == str(lib)


def test_missing_mpicc_is_a_clear_error(tmp_path):
    with pytest.raises(BackendUnavailable, match="not found on PATH"):
        build_interposer({"PATH": str(tmp_path), "HOME": str(tmp_path)}, mpicc="no-such-mpicc")


# ---- real MPI (CI installs Open MPI) ---------------------------------------------------------
needs_mpi = pytest.mark.skipif(not (shutil.which("mpirun") and shutil.which("mpicc")), reason="needs mpirun and mpicc")

APP_C = r"""
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int r, n, i, rr, rn;
    MPI_Request q[4];
    MPI_Comm rev;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    double *buf = calloc(100000, 8), *rbuf = calloc(100000, 8);
    int next = (r + 1) % n, prev = (r + n - 1) % n;
    if (r % 2 == 0) { MPI_Send(buf, 1000 * (r + 1), MPI_DOUBLE, next, 0, MPI_COMM_WORLD);
                      MPI_Recv(rbuf, 100000, MPI_DOUBLE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); }
    else { MPI_Recv(rbuf, 100000, MPI_DOUBLE, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
           MPI_Send(buf, 1000 * (r + 1), MPI_DOUBLE, next, 0, MPI_COMM_WORLD); }
    MPI_Irecv(rbuf, 100, MPI_INT, next, 1, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(buf, 7, MPI_INT, prev, 1, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    MPI_Send_init(buf, 5, MPI_CHAR, next, 2, MPI_COMM_WORLD, &q[2]);
    MPI_Recv_init(rbuf, 5, MPI_CHAR, prev, 2, MPI_COMM_WORLD, &q[3]);
    for (i = 0; i < 3; i++) { MPI_Startall(2, &q[2]); MPI_Waitall(2, &q[2], MPI_STATUSES_IGNORE); }
    MPI_Request_free(&q[2]); MPI_Request_free(&q[3]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, n - r, &rev);
    MPI_Comm_rank(rev, &rr); MPI_Comm_size(rev, &rn);
    MPI_Sendrecv(buf, 11, MPI_FLOAT, (rr + 1) % rn, 3, rbuf, 11, MPI_FLOAT, (rr + rn - 1) % rn, 3, rev,
                 MPI_STATUS_IGNORE);
    MPI_Comm_free(&rev);
    if (r == 0) MPI_Ssend(buf, 13, MPI_BYTE, 3, 4, MPI_COMM_WORLD);
    if (r == 3) MPI_Recv(rbuf, 13, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(buf, 10, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, buf, 16, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    free(buf); free(rbuf);
    MPI_Finalize();
    return 0;
}
"""


def _expected(n=4):
    """What APP_C sends, worked out by hand: bytes[r][s] and messages[r][s]."""
    b = np.zeros((n, n))
    m = np.zeros((n, n))
    for r in range(n):
        nxt, prev = (r + 1) % n, (r - 1) % n
        for dest, size_bytes, messages in (
                (nxt, 8000 * (r + 1), 1),   # MPI_Send of 1000*(r+1) doubles
                (prev, 28, 1),              # MPI_Isend of 7 ints
                (nxt, 15, 3),               # 3 x MPI_Start of 5 chars
                (prev, 44, 1)):             # Sendrecv on the reversed comm: world r-1
            b[r, dest] += size_bytes
            m[r, dest] += messages
    b[0, 3] += 13                                         # MPI_Ssend of 13 bytes
    m[0, 3] += 1
    return b, m


def _mpi_env(tmp_path):
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", XDG_CACHE_HOME=str(tmp_path / "cache"),
               PYTHONPATH=SRC + os.pathsep + env.get("PYTHONPATH", ""), OMPI_MCA_rmaps_base_oversubscribe="1")
    return env


@pytest.mark.mpi
@needs_mpi
def test_profile_captures_exactly_what_the_program_sent(tmp_path):
    (tmp_path / "app.c").write_text(APP_C)
    subprocess.run(["mpicc", "-o", str(tmp_path / "app"), str(tmp_path / "app.c")], check=True)
    out = tmp_path / "traffic.json"
    proc = subprocess.run([sys.executable, "-m", "linkscope", "profile", "-o", str(out), "--",
                           "mpirun", "-n", "4", str(tmp_path / "app")],
                          env=_mpi_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    expected_bytes, expected_messages = _expected()
    assert load_traffic(out).dense_bytes().astype(int).tolist() == expected_bytes.astype(int).tolist()
    assert data["messages"] == expected_messages.astype(int).tolist()
    assert data["collectives"]["MPI_Allreduce"] == {"calls": 4, "bytes": 4 * 16 * 8}
    assert len(data["hosts"]) == 4 and sorted(data["local_ranks"]) == [0, 1, 2, 3]
    assert (tmp_path / "cache" / "linkscope" / "pmpi").is_dir()  # built into the cache


APP_PY = """
from mpi4py import MPI
import numpy as np
comm = MPI.COMM_WORLD
r, n = comm.Get_rank(), comm.Get_size()
out = np.empty(1000, dtype=np.float64)
comm.Sendrecv(np.zeros(100 * (r + 1)), (r + 1) % n, recvbuf=out, source=(r - 1) % n)
if r == 0:
    comm.Send([np.zeros(50), 10, MPI.DOUBLE], 2)
if r == 2:
    comm.Recv([out, 10, MPI.DOUBLE], 0)
cart = comm.Create_cart([n], periods=[True])
src, dst = cart.Shift(0, 1)
cart.Sendrecv(np.ones(7, dtype=np.int32), dst, recvbuf=np.empty(7, dtype=np.int32), source=src)
comm.allreduce(r)
"""


@pytest.mark.mpi
@needs_mpi
def test_mpi4py_capture_counts_buffer_sends(tmp_path):
    pytest.importorskip("mpi4py")
    (tmp_path / "app.py").write_text(APP_PY)
    out = tmp_path / "t.json"
    proc = subprocess.run(["mpirun", "-n", "4", sys.executable, "-m", "linkscope.traffic.capture", "-o", str(out),
                           str(tmp_path / "app.py")], env=_mpi_env(tmp_path), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    b = np.zeros((4, 4), dtype=int)
    for r in range(4):
        b[r, (r + 1) % 4] += 800 * (r + 1) + 28
    b[0, 2] += 80
    assert load_traffic(out).dense_bytes().astype(int).tolist() == b.tolist()  # dense or CSR in the file
    assert data["collectives"]["allreduce"]["calls"] == 4


@pytest.mark.parametrize("command, inject", [(["no-such-program-linkscope"], "env"), (["true"], "magic")])
def test_a_failed_profile_leaves_no_temporary_folder(tmp_path, monkeypatch, command, inject):
    import tempfile

    from linkscope.traffic import capture

    monkeypatch.setattr(capture, "build_interposer", lambda environ, mpicc=None: tmp_path / "libfake.so")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    with pytest.raises(UserError):
        capture.profile(command, dict(os.environ), inject=inject)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_profile_never_removes_rows_already_in_rows_dir(tmp_path, monkeypatch):
    from linkscope.traffic import capture

    monkeypatch.setattr(capture, "build_interposer", lambda environ, mpicc=None: tmp_path / "libfake.so")
    (tmp_path / "rows").mkdir()
    (tmp_path / "rows" / "rank-0.txt").write_text("mine\n")
    with pytest.raises(UserError, match="already holds rank-"):
        capture.profile(["true"], dict(os.environ), inject="env", rows_dir=tmp_path / "rows")
    assert (tmp_path / "rows" / "rank-0.txt").read_text() == "mine\n"
