"""The native eager launch loop (comm/native/eagerloop.c through comm.eagerloop), on a CPU: the loop is
compiled with the system C compiler and driven against a FAKE NCCL shared library built here from a
tiny C file that logs every call (function, arguments) and can fail at a chosen call. What is checked is
what the loop hands NCCL, in which order, how often, and what it does with an error code."""
from __future__ import annotations

import ctypes
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from linkscope import cbuild
from linkscope.comm import eagerloop
from linkscope.comm.launch import serial_job
from linkscope.comm.nccl import _Buffers, calls, make_peers, prepared, run_nccl
from linkscope.comm.nccl_backend import CupyNccl, Peer, SimNccl
from linkscope.comm.records import nccl_record
from linkscope.errors import BackendUnavailable, MeasurementError, UserError
from linkscope.model.collectives import layout
from linkscope.topology.synthetic import synthetic_topology

CC = cbuild.find_c_compiler(os.environ)
needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler (cc/gcc/clang or $CC): .ci/run installs gcc")

FAKE_NCCL = r"""
#include <stddef.h>
#include <stdint.h>
typedef struct { int32_t fn, datatype, redop, peer; uint64_t send, recv, count, comm, stream; } rec;
rec fake_log[4096];
int fake_n = 0, fake_fail_at = -1, fake_fail_code = 0;
static int note(int fn, const void *s, const void *r, size_t c, int dt, int op, int peer, void *comm, void *st) {
    int i = fake_n;
    if (fake_n < 4096) {
        rec x = {fn, dt, op, peer, (uint64_t)(uintptr_t)s, (uint64_t)(uintptr_t)r, c,
                 (uint64_t)(uintptr_t)comm, (uint64_t)(uintptr_t)st};
        fake_log[fake_n++] = x;
    }
    return i == fake_fail_at ? fake_fail_code : 0;
}
int ncclGroupStart(void) { return note(1, 0, 0, 0, -1, -1, -1, 0, 0); }
int ncclGroupEnd(void) { return note(2, 0, 0, 0, -1, -1, -1, 0, 0); }
int ncclAllReduce(const void *s, void *r, size_t c, int dt, int op, void *comm, void *st)
    { return note(10, s, r, c, dt, op, -1, comm, st); }
int ncclReduceScatter(const void *s, void *r, size_t c, int dt, int op, void *comm, void *st)
    { return note(11, s, r, c, dt, op, -1, comm, st); }
int ncclAllGather(const void *s, void *r, size_t c, int dt, void *comm, void *st)
    { return note(12, s, r, c, dt, -1, -1, comm, st); }
int ncclSend(const void *s, size_t c, int dt, int peer, void *comm, void *st)
    { return note(13, s, 0, c, dt, -1, peer, comm, st); }
int ncclRecv(void *r, size_t c, int dt, int peer, void *comm, void *st)
    { return note(14, 0, r, c, dt, -1, peer, comm, st); }
int ncclReduce(const void *s, void *r, size_t c, int dt, int op, int root, void *comm, void *st)
    { return note(15, s, r, c, dt, op, root, comm, st); }
int ncclBroadcast(const void *s, void *r, size_t c, int dt, int root, void *comm, void *st)
    { return note(16, s, r, c, dt, -1, root, comm, st); }
int ncclAlltoAll(const void *s, void *r, size_t c, int dt, void *comm, void *st)
    { return note(17, s, r, c, dt, -1, -1, comm, st); }
int ncclGather(const void *s, void *r, size_t c, int dt, int root, void *comm, void *st)
    { return note(18, s, r, c, dt, -1, root, comm, st); }
int ncclScatter(const void *s, void *r, size_t c, int dt, int root, void *comm, void *st)
    { return note(19, s, r, c, dt, -1, root, comm, st); }
const char *ncclGetErrorString(int code) { return code == 3 ? "internal error (fake)" : "other error (fake)"; }
"""
NAMES = {1: "GroupStart", 2: "GroupEnd", 10: "AllReduce", 11: "ReduceScatter", 12: "AllGather", 13: "Send",
         14: "Recv", 15: "Reduce", 16: "Broadcast",
         17: "AlltoAll", 18: "Gather", 19: "Scatter"}


class _Rec(ctypes.Structure):
    _fields_ = [("fn", ctypes.c_int32), ("datatype", ctypes.c_int32), ("redop", ctypes.c_int32),
                ("peer", ctypes.c_int32), ("send", ctypes.c_uint64), ("recv", ctypes.c_uint64),
                ("count", ctypes.c_uint64), ("comm", ctypes.c_uint64), ("stream", ctypes.c_uint64)]


class FakeNccl:
    """The fake library, loaded, with its log read back as tuples."""

    def __init__(self, path: Path) -> None:
        self.lib = ctypes.CDLL(str(path))
        self.log_array = (_Rec * 4096).in_dll(self.lib, "fake_log")
        self.n = ctypes.c_int.in_dll(self.lib, "fake_n")
        self.fail_at = ctypes.c_int.in_dll(self.lib, "fake_fail_at")
        self.fail_code = ctypes.c_int.in_dll(self.lib, "fake_fail_code")

    def __getattr__(self, name):  # the NCCL symbols, as on a ctypes.CDLL
        return getattr(self.lib, name)

    def log(self) -> list[tuple]:
        out = []
        for r in self.log_array[:self.n.value]:
            out.append((NAMES[r.fn], r.send, r.recv, r.count, r.datatype, r.redop, r.peer, r.comm, r.stream))
        return out

    def reset(self, fail_at: int = -1, code: int = 0) -> None:
        self.n.value, self.fail_at.value, self.fail_code.value = 0, fail_at, code


@pytest.fixture(scope="module")
def fake_nccl(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("fake_nccl")
    (folder / "fake_nccl.c").write_text(FAKE_NCCL)
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(folder / "libfakenccl.so"), str(folder / "fake_nccl.c")],
                   check=True, capture_output=True)
    return FakeNccl(folder / "libfakenccl.so")


@pytest.fixture(autouse=True)
def no_loaded_library(monkeypatch):
    """No NCCL loaded in the process unless a test says so (``has_function`` and ``bind`` look there): on a
    GPU machine an earlier test may have loaded the real one, whose ncclAlltoAll would change the calls."""
    import linkscope.comm.nccl_backend as nb

    monkeypatch.setattr(nb, "_nccl_library", lambda: None)


@pytest.fixture()
def env(tmp_path):
    """A private cache for each test (the library is built there once per test)."""
    eagerloop._built.clear()
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}


class Buf:
    """A float32 device buffer as the backend's bind reads it (``.data.ptr``), sliceable like a CuPy view."""

    def __init__(self, ptr: int, n: int) -> None:
        self.data, self.n = SimpleNamespace(ptr=ptr), n

    def __getitem__(self, s: slice) -> Buf:
        start, stop, _ = s.indices(self.n)
        return Buf(self.data.ptr + 4 * start, stop - start)

    def __setitem__(self, s: slice, value: float) -> None:  # the runner's fills: no data here
        return None


class Comm:
    """CuPy's NcclCommunicator as the loop reads it: ``.comm`` is the ncclComm_t (an int); its methods
    (the Python loop's calls) do nothing."""

    def __init__(self, handle: int) -> None:
        self.comm = handle

    def __getattr__(self, name):
        return lambda *args: None


FLOAT32, SUM = 7, 0  # the fake CuPy's NCCL constants


def _cupy_backend():
    nccl = SimpleNamespace(NCCL_FLOAT32=FLOAT32, NCCL_SUM=SUM)
    return CupyNccl(cp=SimpleNamespace(), nccl=nccl, runtime=SimpleNamespace())


def _peers(n: int) -> list[Peer]:
    return [Peer(r, r, Comm(0xC0 + r), SimpleNamespace(ptr=0x5000 + r)) for r in range(n)]


def _op_calls(op: str, size: int, n: int = 2):
    peers = _peers(n)
    lay = layout(op, size, n)
    send = [Buf(0x100000 * (r + 1), max(lay.send_count, 1)) for r in range(n)]
    recv = [Buf(0x100000 * (r + 1) + 0x80000, max(lay.recv_count, 1)) for r in range(n)]
    return calls(_cupy_backend(), op, peers, _Buffers(send, recv), lay, n), lay


def _native(op: str, size: int, fake, env, n: int = 2):
    todo, lay = _op_calls(op, size, n)
    loop, why = eagerloop.native_loop(_cupy_backend(), todo, environ=env, nccl=fake)
    assert loop is not None, why
    return loop, lay


GS = ("GroupStart", 0, 0, 0, -1, -1, -1, 0, 0)
GE = ("GroupEnd", 0, 0, 0, -1, -1, -1, 0, 0)


@needs_cc
def test_allreduce_group_is_issued_n_times_with_the_bound_arguments(fake_nccl, env):
    loop, lay = _native("allreduce", 1 << 10, fake_nccl, env)
    fake_nccl.reset()
    loop.run(3)
    one = [GS,
           ("AllReduce", 0x100000, 0x180000, lay.send_count, FLOAT32, SUM, -1, 0xC0, 0x5000),
           ("AllReduce", 0x200000, 0x280000, lay.send_count, FLOAT32, SUM, -1, 0xC1, 0x5001),
           GE]
    assert fake_nccl.log() == one * 3


@needs_cc
def test_a_lone_collective_is_issued_without_a_group_as_nccl_tests_does_with_one_gpu(fake_nccl, env):
    loop, lay = _native("allreduce", 1 << 10, fake_nccl, env, n=1)
    fake_nccl.reset()
    loop.run(3)
    assert fake_nccl.log() == [("AllReduce", 0x100000, 0x180000, lay.send_count, FLOAT32, SUM, -1, 0xC0, 0x5000)] * 3
    loop, _ = _native("sendrecv", 1 << 10, fake_nccl, env, n=1)  # a send and a receive: grouped
    fake_nccl.reset()
    loop.run(1)
    assert [e[0] for e in fake_nccl.log()] == ["GroupStart", "Send", "Recv", "GroupEnd"]


@needs_cc
def test_alltoall_sends_and_receives_in_the_runner_order_with_offsets_and_peers(fake_nccl, env):
    loop, lay = _native("alltoall", 1 << 12, fake_nccl, env)
    fake_nccl.reset()
    loop.run(2)
    c = lay.chunk_count
    group = [GS]
    for r in range(2):  # comm.nccl.calls: each peer's sends (chunk k to rank k), then its receives
        base_s, base_r = 0x100000 * (r + 1), 0x100000 * (r + 1) + 0x80000
        group += [("Send", base_s + 4 * k * c, 0, c, FLOAT32, -1, k, 0xC0 + r, 0x5000 + r) for k in range(2)]
        group += [("Recv", 0, base_r + 4 * k * c, c, FLOAT32, -1, k, 0xC0 + r, 0x5000 + r) for k in range(2)]
    assert fake_nccl.log() == group + [GE] + group + [GE]


def _one_call_per_rank_in_both_loops(fake_nccl, env, op: str, fn: str, root: int):
    """``op`` on two ranks is one ``fn`` call per rank (chunk count, ``root``) in the native loop (two launches) and
    in the Python loop (one): the launch of the Python loop and the layout, for more checks."""
    todo, lay = _op_calls(op, 1 << 12)
    assert [name for name, _ in todo] == [op, op]
    one = [GS] + [(fn, 0x100000 * (r + 1), 0x100000 * (r + 1) + 0x80000, lay.chunk_count, FLOAT32, -1, root,
                   0xC0 + r, 0x5000 + r) for r in range(2)] + [GE]
    loop, why = eagerloop.native_loop(_cupy_backend(), todo, environ=env, nccl=fake_nccl)
    assert loop is not None, why
    fake_nccl.reset()
    loop.run(2)
    assert fake_nccl.log() == one * 2
    backend = _cupy_backend()
    backend.group_start, backend.group_end = fake_nccl.ncclGroupStart, fake_nccl.ncclGroupEnd
    launch = prepared(backend, op, _peers(2), _Buffers(
        [Buf(0x100000 * (r + 1), lay.send_count) for r in range(2)],
        [Buf(0x100000 * (r + 1) + 0x80000, lay.recv_count) for r in range(2)]), lay, 2)
    fake_nccl.reset()
    launch()
    assert fake_nccl.log() == one
    return launch, lay


@needs_cc
def test_alltoall_is_one_ncclAlltoAll_per_rank_where_the_library_has_it_in_both_loops(fake_nccl, env, monkeypatch):
    """nccl-tests 2.19.6 calls ncclAlltoAll from NCCL 2.28 on (alltoall.cu:317-321): so does linkscope, through
    the loaded library's symbol (CuPy has no method for it), in the native loop and in the Python loop alike."""
    import linkscope.comm.nccl_backend as nb

    monkeypatch.setattr(nb, "_nccl_library", lambda: fake_nccl)
    launch, _ = _one_call_per_rank_in_both_loops(fake_nccl, env, "alltoall", "AlltoAll", -1)
    fake_nccl.reset(fail_at=1, code=3)
    with pytest.raises(MeasurementError, match=r"NCCL error 3 \(internal error \(fake\)\) in ncclAlltoAll"):
        launch()


@needs_cc
@pytest.mark.parametrize("op,fn", [("gather", "Gather"), ("scatter", "Scatter")])
def test_gather_and_scatter_are_one_library_call_per_rank_on_nccl_and_grouped_on_rccl(fake_nccl, env, monkeypatch,
                                                                                       op, fn):
    """nccl-tests 2.19.6 built against NCCL 2.28 calls ncclGather / ncclScatter (gather.cu:57-58, scatter.cu:53-54),
    which NCCL runs on one rank as a copy, not as a kernel: linkscope calls them too where the loaded NCCL has them,
    root 0 and the per-rank chunk as count, in both loops; rccl-tests issues grouped sends and receives, and so does
    linkscope on RCCL; without the symbol, grouped sends and receives on NCCL too."""
    import linkscope.comm.nccl_backend as nb

    monkeypatch.setattr(nb, "_nccl_library", lambda: fake_nccl)
    _, lay = _one_call_per_rank_in_both_loops(fake_nccl, env, op, fn, 0)
    send = [Buf(0x100000 * (r + 1), lay.send_count) for r in range(2)]
    recv = [Buf(0x100000 * (r + 1) + 0x80000, lay.recv_count) for r in range(2)]
    rccl = _cupy_backend()
    monkeypatch.setattr(CupyNccl, "library", property(lambda self: "RCCL"))
    grouped = [name for name, _ in calls(rccl, op, _peers(2), _Buffers(send, recv), lay, 2)]
    assert grouped and set(grouped) <= {"send", "recv"}
    monkeypatch.setattr(CupyNccl, "library", property(lambda self: "NCCL"))
    monkeypatch.setattr(nb, "_nccl_library", lambda: SimpleNamespace())  # an NCCL before 2.28
    assert set(name for name, _ in calls(_cupy_backend(), op, _peers(2), _Buffers(send, recv), lay, 2)) == {"send", "recv"}


@needs_cc
@pytest.mark.parametrize("op,fn,redop,root", [("allgather", "AllGather", -1, -1),
                                              ("reduce_scatter", "ReduceScatter", SUM, -1),
                                              ("broadcast", "Broadcast", -1, 0), ("reduce", "Reduce", SUM, 0)])
def test_each_signature_family_reaches_its_nccl_function_with_its_arguments(fake_nccl, env, op, fn, redop, root):
    loop, lay = _native(op, 1 << 12, fake_nccl, env)
    fake_nccl.reset()
    loop.run(1)
    count = lay.recv_count if op == "reduce_scatter" else lay.send_count
    assert fake_nccl.log() == [GS] + [
        (fn, 0x100000 * (r + 1), 0x100000 * (r + 1) + 0x80000, count, FLOAT32, redop, root, 0xC0 + r, 0x5000 + r)
        for r in range(2)] + [GE]


@needs_cc
def test_a_failing_call_stops_the_loop_after_closing_its_group_and_raises_the_code(fake_nccl, env):
    loop, _ = _native("allreduce", 1 << 10, fake_nccl, env)
    fake_nccl.reset(fail_at=6, code=3)  # iteration 2: GS(4), AR(5), AR(6) fails
    with pytest.raises(MeasurementError, match=r"NCCL error 3 \(internal error \(fake\)\)"):
        loop.run(10)
    assert [e[0] for e in fake_nccl.log()] == ["GroupStart", "AllReduce", "AllReduce", "GroupEnd",
                                               "GroupStart", "AllReduce", "AllReduce", "GroupEnd"]


@needs_cc
def test_an_error_of_group_end_or_group_start_is_returned(fake_nccl, env):
    loop, _ = _native("allgather", 1 << 10, fake_nccl, env)
    fake_nccl.reset(fail_at=3, code=5)
    with pytest.raises(MeasurementError, match="NCCL error 5"):
        loop.run(4)
    assert fake_nccl.n.value == 4
    fake_nccl.reset(fail_at=0, code=2)
    with pytest.raises(MeasurementError, match="NCCL error 2"):
        loop.run(4)
    assert [e[0] for e in fake_nccl.log()] == ["GroupStart"]


@needs_cc
def test_timed_runs_give_one_host_time_per_launch(fake_nccl, env):
    loop, _ = _native("sendrecv", 1 << 10, fake_nccl, env)
    fake_nccl.reset()
    times = loop.run_timed(5)
    assert len(times) == 5 and all(t >= 0 for t in times)
    assert [e[0] for e in fake_nccl.log()].count("GroupStart") == 5


def test_without_a_compiler_the_python_loop_is_used_and_said_once(monkeypatch, env):
    monkeypatch.setattr(eagerloop, "find_c_compiler", lambda environ: None)
    todo, _ = _op_calls("allreduce", 1 << 10)
    loop, why = eagerloop.native_loop(_cupy_backend(), todo, environ=env, nccl=SimpleNamespace())
    assert loop is None and "no C compiler" in why
    notes: list[str] = []
    assert eagerloop.eager_loop(serial_job(), _cupy_backend(), todo, notes, env) is None
    assert len(notes) == 1 and notes[0].startswith("eager launches from the Python loop (launch_path python)")


def test_the_python_loop_can_be_asked_for_and_a_bad_choice_is_one_line(env):
    todo, _ = _op_calls("allreduce", 1 << 10)
    loop, why = eagerloop.native_loop(_cupy_backend(), todo, environ=dict(env, LINKSCOPE_EAGER_LOOP="python"))
    assert loop is None and why == "LINKSCOPE_EAGER_LOOP=python asked for it"
    with pytest.raises(UserError, match="LINKSCOPE_EAGER_LOOP='fast' is not a launch loop"):
        eagerloop.native_loop(_cupy_backend(), todo, environ=dict(env, LINKSCOPE_EAGER_LOOP="fast"))


def test_a_library_without_the_symbols_or_a_simulated_backend_falls_back(env):
    todo, _ = _op_calls("allreduce", 1 << 10)
    loop, why = eagerloop.native_loop(_cupy_backend(), todo, environ=env, nccl=SimpleNamespace(ncclGroupStart=1))
    assert loop is None and "ncclAllReduce" in why and "ncclGroupEnd" in why
    sim = SimNccl(synthetic_topology("nvswitch:2"))
    assert eagerloop.native_loop(sim, todo, environ=env) == (None, "")


@needs_cc
def test_a_compiler_that_fails_gives_one_line_and_the_fallback(tmp_path, env, fake_nccl):
    bad = tmp_path / "badcc"
    bad.write_text("#!/bin/sh\necho 'bad: cannot compile' >&2\nexit 1\n")
    bad.chmod(0o755)
    env = dict(env, CC=str(bad))
    todo, _ = _op_calls("allreduce", 1 << 10)
    loop, why = eagerloop.native_loop(_cupy_backend(), todo, environ=env, nccl=fake_nccl)
    assert loop is None and "failed to build" in why and "bad: cannot compile" in why and "\n" not in why


# ---- the run: bench nccl's eager path uses it, and says which loop it used ----------------------------------------
class NativeCapable(SimNccl):
    """A simulated fabric standing in for a real backend on the launch path: it binds calls as CupyNccl
    does (plain pointers) and its peers carry communicator handles, so the native loop can drive them."""

    simulated = False

    def __init__(self, topology):
        super().__init__(topology)
        self.ticks = 0.0
        self.buffers = 0
        self.real = _cupy_backend()

    def init_all(self, devices):
        return [Peer(r, d, Comm(0xC0 + r), SimpleNamespace(ptr=0x5000 + r))
                for r, d in enumerate(devices)]

    def alloc(self, peer, count):
        self.buffers += 1
        return Buf(0x100000 * self.buffers, max(count, 1))

    def bind(self, name, args):
        return self.real.bind(name, args)

    def record(self, p):
        self.ticks += 1.0
        return self.ticks * 1e-3

    def sync(self, peers):
        return None


@needs_cc
def test_bench_nccl_eager_rows_are_launched_by_the_native_loop(fake_nccl, env, monkeypatch):
    import linkscope.comm.nccl_backend as nb

    monkeypatch.setattr(nb, "_nccl_library", lambda: fake_nccl)
    monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
    be = NativeCapable(synthetic_topology("nvswitch:2"))
    job = serial_job()
    fake_nccl.reset()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [1 << 10, 1 << 12], iters=4, warmup=3,
                      runs=2, verify=False)
    assert [r.launch_path for r in result.rows] == ["native", "native"]
    assert all(r.launch_us is not None and r.launch_us >= 0 for r in result.rows)
    # per size: 3 warm-up launches + 2 runs x 4 timed launches, all through the fake library
    assert [e[0] for e in fake_nccl.log()].count("GroupStart") == 2 * (3 + 2 * 4)
    assert nccl_record(result, {}, {}).measurements[0].extra["launch_path"] == "native"
    assert not any("Python loop" in n for n in result.notes)


def test_bench_nccl_falls_back_to_python_without_a_compiler_and_records_it(monkeypatch, env):
    monkeypatch.setattr(eagerloop, "find_c_compiler", lambda environ: None)
    be = NativeCapable(synthetic_topology("nvswitch:2"))
    made: list[str] = []
    be.bind = lambda name, args: ((lambda *a: made.append(name)), args)  # type: ignore[method-assign]
    job = serial_job()
    result = run_nccl(job, be, make_peers(job, be, None), "allreduce", [1 << 10, 1 << 12], iters=4, warmup=3,
                      runs=1, verify=False)
    assert [r.launch_path for r in result.rows] == ["python", "python"]
    # per size and GPU: the warm-up pass's one (comm.nccl.warm_every_size), 3 warm-up and 4 timed launches
    assert made.count("allreduce") == 2 * 2 * (1 + 3 + 4)
    fallback = [n for n in result.notes if "Python loop" in n]
    assert len(fallback) == 1 and "no C compiler" in fallback[0]
    assert nccl_record(result, {}, {}).measurements[0].extra["launch_path"] == "python"


# ---- the cache: private, keyed by source, atomic ------------------------------------------------------------------
@needs_cc
def test_the_library_is_built_once_per_source_in_a_private_folder(tmp_path, env):
    src = "int answer(void) { return 42; }\n"
    one = cbuild.build_library(src, "libx.so", CC, kind="t", environ=env)
    assert one.parent.parent.parent == Path(env["XDG_CACHE_HOME"]) / "linkscope"
    stamp = one.stat().st_mtime_ns
    assert cbuild.build_library(src, "libx.so", CC, kind="t", environ=env) == one and one.stat().st_mtime_ns == stamp
    other = cbuild.build_library(src + "int more(void) { return 1; }\n", "libx.so", CC, kind="t", environ=env)
    assert other != one
    for folder in (one.parent, one.parent.parent, one.parent.parent.parent):
        assert folder.stat().st_mode & 0o077 == 0
    assert sorted(p.name for p in one.parent.iterdir()) == ["libx.so"]  # no temporary left behind
    assert ctypes.CDLL(str(one)).answer() == 42


@needs_cc
def test_a_cache_others_could_write_is_tightened_or_rebuilt_and_a_link_refused(tmp_path, env):
    src = "int answer(void) { return 42; }\n"
    lib = cbuild.build_library(src, "libx.so", CC, kind="t", environ=env)
    first = lib.stat().st_ino
    lib.chmod(0o777)  # anyone could have replaced it: built again
    again = cbuild.build_library(src, "libx.so", CC, kind="t", environ=env)
    assert again == lib and lib.stat().st_ino != first and lib.stat().st_mode & 0o022 == 0
    root = Path(env["XDG_CACHE_HOME"]) / "linkscope"
    root.chmod(0o777)  # an older linkscope's folder under umask 0: ours, so the write bits go
    cbuild.build_library(src, "libx.so", CC, kind="t", environ=env)
    assert root.stat().st_mode & 0o777 == 0o755
    lib.unlink()
    lib.symlink_to(tmp_path / "elsewhere.so")
    with pytest.raises(BackendUnavailable, match="not a plain file"):
        cbuild.build_library(src, "libx.so", CC, kind="t", environ=env)


@pytest.mark.skipif(os.getuid() != 0, reason="only root can give a folder to another user")
def test_a_cache_folder_of_another_user_is_refused(env):
    root = Path(env["XDG_CACHE_HOME"]) / "linkscope"
    root.mkdir(parents=True)
    os.chown(root, 1, 1)
    with pytest.raises(BackendUnavailable, match="belongs to another user"):
        cbuild.private_folder(root, "t")


def test_a_relative_xdg_cache_home_is_ignored(tmp_path):
    assert cbuild.cache_root({"XDG_CACHE_HOME": "rel", "HOME": str(tmp_path)}) == tmp_path / ".cache" / "linkscope"


def test_a_rank_of_a_process_per_gpu_job_makes_its_gpu_current_for_good():
    """CUDA 12's cudaSetDevice opens the device's context: a rank left at GPU 0 opened one there each time a
    ``with Device(d)`` block ended (rank 1 held 518 MiB on GPU 0, 2 x H200 call 5). init_rank makes its own GPU
    the current one, so the blocks return to it."""
    current = [0]

    class Device:
        def __init__(self, ordinal):
            self.ordinal = ordinal

        def use(self):
            current[0] = self.ordinal

        def __enter__(self):
            self.saved, current[0] = current[0], self.ordinal

        def __exit__(self, *exc):
            current[0] = self.saved

    made = []
    cp = SimpleNamespace(cuda=SimpleNamespace(Device=Device))
    nccl = SimpleNamespace(NcclCommunicator=lambda n, uid, rank: made.append(current[0]) or Comm(0xC1))
    runtime = SimpleNamespace(stream=lambda ordinal: SimpleNamespace(ptr=0x51))
    backend = CupyNccl(cp=cp, nccl=nccl, runtime=runtime)
    peer = backend.init_rank(2, b"uid", 1, 1)
    assert made == [1] and peer.device == 1
    assert current[0] == 1  # still GPU 1 after init: later `with Device(1)` blocks return to GPU 1, not GPU 0
    with Device(1):
        pass
    assert current[0] == 1


# ---- moving buffers: each operation of a run on the next position, as nccl-tests' startColl ---------------------
def test_buffer_shifts_move_by_one_size_within_both_buffers_up_to_the_iterations():
    from linkscope.comm.nccl import MAX_BUFFER_SHIFTS, buffer_shifts

    big = layout("allgather", 1 << 16, 4)  # send 4096, receive 16384 elements
    lay = layout("allgather", 1 << 12, 4)  # send 256, receive 1024: 16 positions fit both
    assert buffer_shifts(lay, big, 20) == [(k * 256, k * 1024) for k in range(16)]
    assert buffer_shifts(lay, big, 5) == [(k * 256, k * 1024) for k in range(5)]
    assert buffer_shifts(big, big, 20) == [(0, 0)]  # the largest size has one position, as in nccl-tests
    tiny = layout("allreduce", 8, 2)
    assert len(buffer_shifts(tiny, layout("allreduce", 1 << 30, 2), 10**6)) == MAX_BUFFER_SHIFTS
    for op in ("reduce_scatter", "gather", "scatter", "alltoall", "sendrecv", "broadcast"):
        small, large = layout(op, 3 << 10, 3), layout(op, 3 << 14, 3)
        for s, r in buffer_shifts(small, large, 100):  # every position lies inside both buffers
            assert s + max(small.send_count, 1) <= max(large.send_count, 1)
            assert r + max(small.recv_count, 1) <= max(large.recv_count, 1)


def _pointers(log, fn):
    return [(e[1], e[2]) for e in log if e[0] == fn]


@needs_cc
def test_each_eager_operation_of_a_run_uses_the_next_buffer_position_from_the_first(fake_nccl, env, monkeypatch):
    """nccl-tests moves its buffers by one size at every iteration so that no operation finds its data in the L2
    cache (common.cu startColl): so does bench nccl, in the native loop, each timed run and the warm-up starting
    at the first position; the sweep's largest size has only the one position."""
    import linkscope.comm.nccl_backend as nb

    monkeypatch.setattr(nb, "_nccl_library", lambda: fake_nccl)
    monkeypatch.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
    be = NativeCapable(synthetic_topology("nvswitch:2"))
    job = serial_job()
    fake_nccl.reset()
    run_nccl(job, be, make_peers(job, be, None), "allreduce", [1 << 10, 1 << 12], iters=4, warmup=3, runs=2,
             verify=False)
    rank0 = _pointers(fake_nccl.log(), "AllReduce")[::2]  # the group's first call: rank 0's
    send0, recv0 = rank0[0]  # the first position of the first size
    step = 1 << 10  # one size, in bytes
    first = [(send0 + k * step, recv0 + k * step) for k in range(4)]
    # first size: 3 warm-up launches (positions 0-2), then 2 runs of 4 (positions 0-3 each)
    assert rank0[:3 + 8] == first[:3] + first + first
    assert set(rank0[3 + 8:]) == {(send0, recv0)}  # the largest size: one position


def test_python_loop_and_graphs_move_the_buffers_too(monkeypatch, env):
    """Without the native loop (no compiler) the Python loop issues the positions in the same order, and a captured
    graph of N operations holds N positions."""
    monkeypatch.setattr(eagerloop, "find_c_compiler", lambda environ: None)
    be = NativeCapable(synthetic_topology("nvswitch:2"))
    seen: list[int] = []
    real_bind = be.bind

    def bind(name, args):
        fn, plain = real_bind(name, args)
        return (lambda *a: seen.append(a[0])), plain
    be.bind = bind  # type: ignore[method-assign]
    job = serial_job()
    peers = make_peers(job, be, None)
    run_nccl(job, be, peers, "allreduce", [1 << 10, 1 << 13], iters=3, warmup=2, runs=1, verify=False)
    rank0 = seen[::2]
    base, step = rank0[0], 1 << 10
    assert rank0[2:2 + 2 + 3] == [base, base + step, base, base + step, base + 2 * step]
    captured: list[int] = []
    be2 = NativeCapable(synthetic_topology("nvswitch:2"))
    real_bind2 = be2.bind
    be2.bind = lambda name, args: ((lambda *a: captured.append(a[0])), real_bind2(name, args)[1])  # type: ignore
    result = run_nccl(job, be2, make_peers(job, be2, None), "allreduce", [1 << 10, 1 << 13], iters=4, warmup=0,
                      runs=1, verify=False, graph_iters=4)
    assert result.rows[0].graph
    rank0 = captured[::2]
    base = rank0[0]
    assert rank0[2:6] == [base + k * step for k in range(4)]  # the graph of the first size: four positions
