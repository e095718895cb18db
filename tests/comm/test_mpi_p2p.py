"""OSU runners under mpirun -n 2 / -n 4 with host (and fake device) buffers, and the bad inputs."""
import json
import shutil
import subprocess
import sys

import pytest

from linkscope.comm.mpi_p2p import LARGE_MESSAGE_BYTES, Schedule

from .conftest import ROOT, mpi_env, mpirun, mpirun_popen, needs_mpi


def test_schedule_scales_with_size():
    s = Schedule()
    assert s.plan("latency", 8) == (10000, 100, 1)
    assert s.plan("latency", LARGE_MESSAGE_BYTES * 2) == (1000, 10, 1)
    assert s.plan("bw", 8) == (100, 10, 64)
    assert s.plan("bw", 1 << 20) == (20, 2, 64)
    assert s.plan("bw", 64 << 20) == (20, 2, 64)  # OSU's counts at 64 MiB (fewer read 0.83-0.90x of OSU)
    iters, skip, window = s.plan("bw", 1 << 30)
    assert window == 64 and iters * window * (1 << 30) <= 2 * s.max_bytes_per_size
    iters, skip, window = s.plan("bw", 4 << 30)
    assert window == 20 and iters * window * (4 << 30) <= 2 * s.max_bytes_per_size
    assert Schedule(iterations=7, warmup=0).plan("bibw", 1 << 20) == (7, 0, 64)


def test_allreduce_schedule_is_osu_collectives():
    s = Schedule()
    assert s.plan("allreduce", 8) == (1000, 200, 1)
    assert s.plan("allreduce", 4 * LARGE_MESSAGE_BYTES) == (1000, 200, 1)  # large counts elements
    assert s.plan("allreduce", 4 * LARGE_MESSAGE_BYTES + 4) == (100, 10, 1)


def _osu_rows(stdout):
    return [line.split() for line in stdout.splitlines() if line and not line.startswith("#")]


@pytest.mark.mpi
@needs_mpi
@pytest.mark.parametrize("test,header", [("latency", "# Size          Latency (us)"),
                                          ("bw", "# Size      Bandwidth (MB/s)"),
                                          ("bibw", "# Size      Bandwidth (MB/s)")])
def test_osu_tests_two_ranks(tmp_path, test, header):
    out = tmp_path / "r.json"
    done = mpirun(2, "bench", "mpi", "--test", test, "--sizes", "1,64,4KiB,64KiB", "--iterations", "20",
                  "--warmup", "2", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert header in done.stdout
    rows = _osu_rows(done.stdout)
    assert [int(r[0]) for r in rows] == [1, 64, 4096, 65536]
    # OSU prints two decimals: 1 byte on a busy machine can print 0.00 MB/s; the JSON below keeps the value
    assert all(float(r[1]) >= 0 for r in rows) and float(rows[-1][1]) > 0
    rec = json.loads(out.read_text())
    assert rec["kind"] == "mpi" and rec["context"]["ranks"] == 2 and len(rec["context"]["hosts_per_rank"]) == 2
    assert rec["context"]["mpi_library"] and "\x00" not in rec["context"]["mpi_library"]
    assert rec["context"]["mpi_thread_level"] == "single"  # OSU's MPI_Init, not mpi4py's THREAD_MULTIPLE
    # host buffers leave the GPU libraries alone (a CUDA-aware MPI's host calls cost more once CUDA is up)
    assert not {"cuda_runtime", "cuda_driver_api", "cupy", "nccl", "nvidia_driver"} & set(rec["context"]["versions"])
    ms = rec["measurements"]
    assert {(m["src"], m["dst"]) for m in ms} == {(0, 1)}
    assert all(m["verified"] is True and m["status"] == "ok" for m in ms)
    assert ms[0]["method"] == f"mpi.{test}"
    if test == "latency":
        assert ms[0]["latency_us"] > 0 and ms[0]["median_gb_per_s"] is None
    else:
        assert ms[0]["median_gb_per_s"] > 0


@pytest.mark.mpi
@needs_mpi
def test_four_ranks_run_two_pairs(tmp_path):
    out = tmp_path / "r.json"
    done = mpirun(4, "bench", "mpi", "--test", "bw", "--sizes", "8,8KiB", "--iterations", "5", "--warmup", "1",
                  "--window", "8", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "pairs 0<->2, 1<->3" in done.stdout
    ms = json.loads(out.read_text())["measurements"]
    assert {(m["src"], m["dst"]) for m in ms} == {(0, 2), (1, 3), ("*", "*")}
    assert all(m["verified"] for m in ms)


@pytest.mark.mpi
@needs_mpi
def test_staged_fake_device_buffers(tmp_path):
    out = tmp_path / "r.json"
    done = mpirun(2, "bench", "mpi", "--test", "bw", "--buffers", "DH", "--fake-device", "--stage-through-host",
                  "--sizes", "1,4KiB,1MiB", "--iterations", "4", "--warmup", "1", "--window", "4", "--json", str(out))
    assert done.returncode == 0, done.stderr
    rec = json.loads(out.read_text())
    assert {m["method"] for m in rec["measurements"]} == {"mpi.bw+staged"}
    assert all(m["verified"] for m in rec["measurements"])
    assert rec["context"]["gpu_aware"]["cuda"] in (False, None)


@pytest.mark.mpi
@needs_mpi
def test_forced_gpu_aware_passes_cuda_array_interface_to_mpi(tmp_path):
    out = tmp_path / "r.json"
    done = mpirun(2, "bench", "mpi", "--test", "latency", "--buffers", "DD", "--fake-device", "--gpu-aware", "yes",
                  "--sizes", "8,64KiB", "--iterations", "10", "--warmup", "1", "--json", str(out))
    assert done.returncode == 0, done.stderr
    rec = json.loads(out.read_text())
    assert rec["context"]["gpu_aware"]["forced"] is True
    assert all(m["method"] == "mpi.latency" and m["verified"] for m in rec["measurements"])


def _one_clear_error(done, text):
    assert done.returncode != 0
    errors = [line for line in done.stderr.splitlines() if line.startswith("linkscope: error")]
    assert len(errors) == 1, done.stderr  # rank 0 only
    assert text in errors[0]
    assert "Traceback" not in done.stderr


# ---- refusals under mpirun: rank 0 prints one line, every rank exits 1 ----
# Once a rank exits non-zero, Open MPI 4.1's mpirun ends the job and gives the other ranks
# odls_base_sigkill_timeout (1 s) before it kills them: an mpi4py program whose 2 ranks all exit 1
# took 1.37 s, 0.38 s when they exit 0 (2026-11-25, this machine). So each refusal idles 1 s: they
# are started together, once, in one worker (xdist_group), and each test checks its own run.
REFUSALS: dict[str, tuple[int, tuple[str, ...]]] = {
    "allreduce-mixed-buffers": (2, ("bench", "mpi", "--test", "allreduce", "--buffers", "DH", "--fake-device",
                                    "--stage-through-host", "--sizes", "8")),
    "bw-odd-world": (3, ("bench", "mpi", "--test", "bw", "--sizes", "8")),
    "bw-device-not-gpu-aware": (2, ("bench", "mpi", "--test", "bw", "--buffers", "DD", "--fake-device",
                                    "--gpu-aware", "no", "--sizes", "8")),
    "bw-beyond-memory": (2, ("bench", "mpi", "--test", "bw", "--sizes", "64TiB")),
    "stencil-grid-mismatch": (2, ("bench", "stencil", "--backend", "sim", "--grid", "3x1", "--sizes", "1KiB")),
}
refusal_group = pytest.mark.xdist_group("mpi-refusals")


@pytest.fixture(scope="module")
def refusals() -> dict[str, subprocess.CompletedProcess | None]:
    """Every REFUSALS run, started at once: its finished process, or None where it hung (60 s)."""
    procs = {name: mpirun_popen(n, *args) for name, (n, args) in REFUSALS.items()}
    done: dict[str, subprocess.CompletedProcess | None] = {}
    for name, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=60)
            done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            done[name] = None
    return done


def _refusal(refusals, name: str) -> subprocess.CompletedProcess:
    done = refusals[name]
    if done is None:
        pytest.fail(f"hang: mpirun -n {REFUSALS[name][0]} linkscope {' '.join(REFUSALS[name][1])} did not finish in 60 s")
    return done


@pytest.mark.mpi
@needs_mpi
def test_allreduce_three_ranks_exact_sums(tmp_path):
    out = tmp_path / "r.json"
    done = mpirun(3, "bench", "mpi", "--test", "allreduce", "--sizes", "4,8,1KiB,64KiB", "--iterations", "5",
                  "--warmup", "1", "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "# Size       Avg Latency(us)" in done.stdout and "3 ranks" in done.stdout
    assert [int(r[0]) for r in _osu_rows(done.stdout)] == [4, 8, 1024, 65536]
    ms = json.loads(out.read_text())["measurements"]
    assert all(m["method"] == "mpi.allreduce" and m["src"] == "*" and m["verified"] is True for m in ms)
    assert all(m["latency_us"] > 0 and m["extra"]["ranks"] == 3 for m in ms)


@pytest.mark.mpi
@needs_mpi
@refusal_group
def test_allreduce_staged_fake_device_and_bad_buffers(tmp_path, refusals):
    out = tmp_path / "r.json"
    done = mpirun(2, "bench", "mpi", "--test", "allreduce", "--buffers", "DD", "--fake-device",
                  "--stage-through-host", "--sizes", "8,4KiB", "--iterations", "3", "--warmup", "1",
                  "--json", str(out))
    assert done.returncode == 0, done.stderr
    assert "# MPI: " in done.stdout
    assert {m["method"] for m in json.loads(out.read_text())["measurements"]} == {"mpi.allreduce+staged"}
    _one_clear_error(_refusal(refusals, "allreduce-mixed-buffers"), "runs on one kind of buffer")


@pytest.mark.mpi
@needs_mpi
@refusal_group
def test_odd_world_size_for_bw(refusals):
    _one_clear_error(_refusal(refusals, "bw-odd-world"), "needs an even number of ranks >= 2, got 3")


@pytest.mark.mpi
@needs_mpi
@refusal_group
def test_device_buffers_on_mpi_that_is_not_gpu_aware(refusals):
    _one_clear_error(_refusal(refusals, "bw-device-not-gpu-aware"), "--buffers DD needs a GPU-aware MPI")


@pytest.mark.mpi
@needs_mpi
@refusal_group
def test_sizes_beyond_free_memory(refusals):
    _one_clear_error(_refusal(refusals, "bw-beyond-memory"), "need 64 TiB of host memory")


@pytest.mark.mpi
@needs_mpi
@refusal_group
def test_grid_that_does_not_match_world_size(refusals):
    _one_clear_error(_refusal(refusals, "stencil-grid-mismatch"), "grid 3x1 has 3 ranks but the job has 2")


@pytest.mark.mpi
@needs_mpi
def test_p2p_matrix_host_buffers(tmp_path):
    out = tmp_path / "p.json"
    done = mpirun(3, "bench", "p2p", "--mpi", "--buffers", "H", "--sizes", "4KiB", "--iters", "3", "--warmup", "1",
                  "--json", str(out))
    assert done.returncode == 0, done.stderr
    rec = json.loads(out.read_text())
    pairs = {(m["src"], m["dst"]) for m in rec["measurements"]}
    assert pairs == {(i, j) for i in range(3) for j in range(3) if i != j}
    assert all(m["verified"] for m in rec["measurements"]) and rec["kind"] == "p2p"


# ---- the messages the timed loops send, counted by the PMPI interposer (`linkscope profile`) ----
@pytest.fixture(scope="module")
def profile_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("pmpi-cache")  # the interposer is built once for these tests


def _profiled(tmp_path, cache, test, iterations):
    """`linkscope profile` of one 2-rank `bench mpi` run at 64 B, window 8, 1 warm-up: the traffic record."""
    out = tmp_path / f"{test}-{iterations}.json"
    cmd = [sys.executable, "-m", "linkscope", "profile", "-o", str(out), "--", "mpirun", "--oversubscribe", "-n", "2",
           sys.executable, "-m", "linkscope", "bench", "mpi", "--test", test, "--sizes", "64", "--window", "8",
           "--iterations", str(iterations), "--warmup", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=mpi_env(XDG_CACHE_HOME=str(cache)),
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())


def _delta(a, b, *keys):
    for key in keys:
        a, b = a[key], b[key]
    return a - b


@pytest.mark.mpi
@needs_mpi
@pytest.mark.skipif(not shutil.which("mpicc"), reason="the PMPI interposer is built with mpicc")
@pytest.mark.parametrize("test", ["latency", "bw", "bibw", "allreduce"])
def test_timed_loops_send_exactly_osus_messages(tmp_path, profile_cache, test):
    """Four more iterations add exactly OSU's messages for four iterations (the run's own control
    messages cancel out): osu_latency one 64 B message each way; osu_bw ``window`` messages forward and
    one 4-byte ack back (osu_bw.c: MPI_Send(s_buf, 4, MPI_CHAR, 0, 101, ...)); osu_bibw ``window``
    each way; osu_allreduce one MPI_Allreduce of 16 floats and one MPI_Barrier per rank, no p2p."""
    five, nine = _profiled(tmp_path, profile_cache, test, 5), _profiled(tmp_path, profile_cache, test, 9)
    sent = {(s, d): (_delta(nine, five, "messages", s, d), _delta(nine, five, "bytes", s, d))
            for s, d in ((0, 1), (1, 0))}
    expected = {"latency": {(0, 1): (4, 4 * 64), (1, 0): (4, 4 * 64)},
                "bw": {(0, 1): (4 * 8, 4 * 8 * 64), (1, 0): (4, 4 * 4)},
                "bibw": {(0, 1): (4 * 8, 4 * 8 * 64), (1, 0): (4 * 8, 4 * 8 * 64)},
                "allreduce": {(0, 1): (0, 0), (1, 0): (0, 0)}}[test]
    assert sent == expected
    calls = {name: _delta(nine, five, "collectives", name, "calls") for name in ("MPI_Allreduce", "MPI_Barrier")
             if name in five["collectives"]}
    if test == "allreduce":
        assert calls == {"MPI_Allreduce": 2 * 4, "MPI_Barrier": 2 * 4}
        assert _delta(nine, five, "collectives", "MPI_Allreduce", "bytes") == 2 * 4 * 64
    else:
        assert all(v == 0 for v in calls.values())


# ---- the staged bw path's ack: osu_bw's 4-byte message, as the unstaged path sends it ----
STAGED_BW_LOOP = """
import json
from mpi4py import MPI
from linkscope.comm.buffers import FakeDeviceSpace
from linkscope.comm.mpi_p2p import OSU_ACK_BYTES, _bw_loop, _Side
import numpy as np

class Comm:  # records each message the loop hands MPI, answers with finished requests
    def __init__(self):
        self.calls = []
    def _record(self, name, msg, *args, **kw):
        tag = kw.get("tag", args[1] if len(args) > 1 else None)
        explicit = isinstance(msg, list) and len(msg) == 3 and isinstance(msg[2], MPI.Datatype)
        self.calls.append([name, msg[1] if explicit else np.asarray(msg).nbytes,
                           msg[2].Get_name() if explicit else "deduced from " + np.asarray(msg).dtype.name, tag])
        return MPI.REQUEST_NULL
    def Isend(self, msg, *a, **k): return self._record("Isend", msg, *a, **k)
    def Irecv(self, msg, *a, **k): return self._record("Irecv", msg, *a, **k)
    def Send(self, msg, *a, **k): return self._record("Send", msg, *a, **k)
    def Recv(self, msg, *a, **k): return self._record("Recv", msg, *a, **k)

out = {}
for first in (True, False):
    comm = Comm()
    side = _Side(FakeDeviceSpace(), 64, True, 4, need_send=True, need_recv=True)
    ack = np.zeros(OSU_ACK_BYTES, dtype=np.uint8)
    _bw_loop(comm, side, 64, 2, 1, 4, first, 1 if first else 0, ack, MPI.Wtime)
    out["first" if first else "partner"] = comm.calls
print(json.dumps(out))
"""


@pytest.mark.mpi
@needs_mpi
def test_staged_bw_acks_with_the_unstaged_paths_4_byte_message():
    """The staged bw loop (device buffers through host memory) acks each window as the unstaged loop does:
    one [buffer, 4, MPI.BYTE] message, tag 101 (osu_bw.c: MPI_Send(s_buf, 4, MPI_CHAR, 0, 101, ...)), from/into
    host memory (staging hands MPI host buffers only). A bare uint8 array would go as MPI_UNSIGNED_CHAR, not
    matching an unstaged partner's MPI_BYTE send (HD, DH). One Python process, MPI as a singleton: no mpirun."""
    done = subprocess.run([sys.executable, "-c", STAGED_BW_LOOP], capture_output=True, text=True, timeout=60,
                          env=mpi_env(), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    calls = json.loads(done.stdout.strip().splitlines()[-1])
    per_window = (["Isend", 64, "MPI_BYTE", 100],) * 4 + (["Recv", 4, "MPI_BYTE", 101],)
    assert calls["first"] == list(per_window) * 3  # 2 iterations + 1 warm-up, window 4
    per_window = (["Irecv", 64, "MPI_BYTE", 100],) * 4 + (["Send", 4, "MPI_BYTE", 101],)
    assert calls["partner"] == list(per_window) * 3


@pytest.mark.mpi
@needs_mpi
@pytest.mark.skipif(not shutil.which("mpicc"), reason="the PMPI interposer is built with mpicc")
def test_staged_bw_ack_on_the_wire_is_4_bytes_a_window(tmp_path):
    """One profiled run of `bench mpi --test bw --buffers DD --stage-through-host` (fake device): rank 1 sends
    rank 0 one 4-byte ack per window (20 iterations + 1 warm-up) and, besides, only the run's own few control
    messages (2 messages, 13 B on the CPU box, 2026-11-25); a 1-byte ack would be 21 B of acks."""
    out = tmp_path / "staged.json"
    cmd = [sys.executable, "-m", "linkscope", "profile", "-o", str(out), "--", "mpirun", "--oversubscribe", "-n", "2",
           sys.executable, "-m", "linkscope", "bench", "mpi", "--test", "bw", "--buffers", "DD", "--fake-device",
           "--stage-through-host", "--sizes", "64", "--window", "8", "--iterations", "20", "--warmup", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env=mpi_env(XDG_CACHE_HOME=str(tmp_path / "cache")), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    traffic = json.loads(out.read_text())
    acks = 21
    assert traffic["messages"][0][1] == acks * 8 and traffic["bytes"][0][1] == acks * 8 * 64
    assert acks <= traffic["messages"][1][0] <= acks + 4
    assert acks * 4 <= traffic["bytes"][1][0] < acks * 4 + 32


def test_bw_warms_up_with_its_own_requests_until_rank_0_has_spent_the_minimum_time():
    """Without --warmup, bw/bibw run OSU's skip windows and then more, with the timed loop's own
    persistent requests, until rank 0 has spent WARMUP_MIN_S after the first window (a broadcast keeps
    every rank in step): bw DD at 64 MiB read 0.90x of OSU with 2 timed windows of fresh requests on
    2 x H100. The first window (opening the peer's buffers) counts in neither the time nor the pace:
    a 0.14 s first window ended the warm-up of a 16 MiB first size after 2 windows (visits 11-12)."""
    from linkscope.comm.mpi_p2p import WARMUP_MAX_BATCHES, WARMUP_MIN_S, _warm

    class Comm:  # rank 0's view: bcast returns what rank 0 decided
        def bcast(self, obj, root):
            assert root == 0
            return obj

    def run(step_s, skip, warm_s, first_s=None):
        now, calls = [0.0], []

        def one():
            now[0] += step_s if calls or first_s is None else first_s
            calls.append(1)

        n, pace = _warm(Comm(), one, skip, warm_s, lambda: now[0])
        assert n == len(calls) and pace == pytest.approx(step_s if n > 1 else (first_s or step_s))
        return n

    assert run(WARMUP_MIN_S * 0.3, 2, WARMUP_MIN_S) == 5  # 2 of OSU's, 3 more to pass the minimum after the first
    assert run(WARMUP_MIN_S * 2, 2, WARMUP_MIN_S) == 2
    assert run(0.003, 2, WARMUP_MIN_S, first_s=0.14) == 1 + round(WARMUP_MIN_S / 0.003 + 0.5)  # setup left out
    assert run(WARMUP_MIN_S, 2, 0.0) == 2  # --warmup given: exactly that many
    assert run(WARMUP_MIN_S, 1, 0.0, first_s=0.5) == 1  # one window: its own time is the pace
    assert run(0.0, 0, WARMUP_MIN_S) == WARMUP_MAX_BATCHES
    assert _warm(Comm(), lambda: None, 0, 0.0, lambda: 0.0) == (0, 0.0)  # no warm-up at all


def test_bw_timed_windows_fit_the_time_cap_at_the_warm_up_pace():
    """Without --iterations, rank 0 cuts OSU's iteration count to what fits MAX_TIMED_S at the warm-up's
    pace (at least MIN_TIMED_ITERS) and every rank runs that many: a fast link keeps OSU's 20 windows, a
    host-staged one at ~5 GB/s times 2 of them instead of ~17 s of them."""
    from linkscope.comm.mpi_p2p import MAX_TIMED_S, MIN_TIMED_ITERS, WARMUP_MIN_S, _warm_then_time

    class Comm:
        def bcast(self, obj, root):
            assert root == 0
            return obj

    def run(step_s, iters, cap_s, first_s=None):
        now, calls, counts = [0.0], [], []

        def one():
            now[0] += step_s if calls or first_s is None else first_s
            calls.append(1)

        elapsed = _warm_then_time(Comm(), one, iters, 2, WARMUP_MIN_S, lambda: now[0], counts, cap_s)
        warm, timed = counts[-1]
        assert warm + timed == len(calls) and elapsed == pytest.approx(timed * step_s)
        return timed

    assert run(0.011, 20, MAX_TIMED_S) == 20  # 64 MiB windows over NV18: OSU's count fits
    assert run(0.86, 20, MAX_TIMED_S) == MIN_TIMED_ITERS  # host-staged 64 MiB windows
    assert run(0.2, 20, MAX_TIMED_S) == 5
    assert run(0.86, 20, 0.0) == 20  # --iterations given: exactly that many
    assert run(0.003, 20, MAX_TIMED_S, first_s=0.14) == 20  # a slow first window (CUDA IPC set-up) is not the pace
