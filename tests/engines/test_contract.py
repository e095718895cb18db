"""The engine contract (engines/base.py), one suite for every engine: sim, the GPU engine over the
fake runtime (NVIDIA and AMD meanings), and on a GPU machine the cuda engine (marked ``gpu``)."""
import ctypes
import itertools

import numpy as np
import pytest

from linkscope.engines.base import NOT_CHECKED
from linkscope.errors import ConfigError, UserError
from linkscope.measure.options import MeasureOptions
from linkscope.measure.runner import BenchSpec, run_bench
from linkscope.patterns.methods import LATENCY_KINDS, METHODS, endpoint_reason, methods_for
from linkscope.patterns.plan import HOST, Transfer, TransferPlan
from linkscope.patterns.registry import get_pattern, patterns
from linkscope.results.schema import Status
from linkscope.topology.synthetic import synthetic_topology

TOPO = synthetic_topology("nvswitch:2")
SIZE = 64 * 1024


def _sim(topology=TOPO):
    from linkscope.engines.sim import SimEngine

    return SimEngine(topology)


def _fake(topology=TOPO, vendor="nvidia"):
    from linkscope.engines.gpu.fake import FakeEngine

    return FakeEngine(topology, vendor=vendor, memory_bytes=80 * 1024**3)


def _cuda(topology=None):
    from linkscope.engines.cuda import CudaEngine

    return CudaEngine(topology)


ENGINES = [pytest.param(_sim, id="sim"), pytest.param(_fake, id="fake"),
           pytest.param(_cuda, id="cuda", marks=pytest.mark.gpu)]


@pytest.fixture(params=ENGINES, scope="module")
def engine(request):
    if request.param is _cuda:
        pytest.importorskip("cupy")
        try:
            eng = _cuda()
        except UserError as exc:
            pytest.skip(exc.one_line())
        if eng.gpu_count() < 1:
            pytest.skip("no GPU")
    else:
        eng = request.param()
    yield eng
    eng.close()


def _ends(n):
    ends = list(range(min(n, 2))) + [HOST]
    return list(itertools.product(ends, ends))


def _plan(method, src, dst, size=SIZE):
    return TransferPlan("contract", "uni", method, (Transfer(src, dst, size),))


def test_accept_or_waive_follows_the_method_table(engine):
    """Every (method x endpoints): accepted exactly when the method table's rule accepts it."""
    offered = {m.key for m in engine.capabilities().methods}
    for m in METHODS:
        for src, dst in _ends(engine.gpu_count()):
            if src == HOST and dst == HOST:
                continue
            reason = engine.waiver(_plan(m.key, src, dst))
            expect_ok = m.key in offered and endpoint_reason(m, src, dst) is None
            if engine.gpu_count() < 2 and isinstance(src, int) and isinstance(dst, int) and src != dst:
                continue
            if expect_ok and reason and m.needs_peer_access and reason.startswith("no peer access"):
                continue  # a hardware fact of this machine (a PCIe pair without P2P), not a rule
            assert (reason is None) == expect_ok, (m.key, src, dst, reason)


def test_bad_input_is_a_waiver_then_a_config_error(engine):
    n = engine.gpu_count()
    for plan in (_plan("warp-drive", 0, 0), _plan("local", 0, n + 3)):
        reason = engine.waiver(plan)
        assert reason and "\n" not in reason
        with pytest.raises(ConfigError):
            engine.run(plan, 1, warmup=0, verify=False)
    with pytest.raises(ConfigError):
        engine.run(_plan("local", 0, 0), 0, warmup=0, verify=False)
    with pytest.raises(ConfigError):
        engine.latency_us("telepathy", 0, 0, method=None, size_bytes=8, reps=1, warmup=0)
    with pytest.raises(UserError):
        engine.latency_us("host-read", HOST, n + 3, method=None, size_bytes=8, reps=1, warmup=0)
    with pytest.raises(ConfigError):
        engine.latency_us("host-read", 0, 0, method=None, size_bytes=8, reps=1, warmup=0)


def test_memory_waiver(engine):
    reason = engine.waiver(_plan("local", 0, 0, size=10**15))
    assert reason and "does not fit" in reason


def test_verified_semantics_moved_bytes_and_timing_shape(engine):
    plan = _plan("local", 0, 0)
    off = engine.run(plan, 3, warmup=1, verify=False)
    assert [t.verified for t in off.timings] == [None]
    on = engine.run(plan, 3, warmup=1, verify=True)
    for result in (off, on):
        assert len(result.timings) == 1 and len(result.group_elapsed_s) == 3
        t = result.timings[0]
        assert len(t.elapsed_s) == 3 and all(e > 0 for e in t.elapsed_s)
        assert 0 < t.moved_bytes <= SIZE
    verified = on.timings[0].verified
    # with verify on: a real check (True here), or None only with a note saying why nothing was checked
    assert verified is True or (verified is None and any(n.startswith(NOT_CHECKED) for n in on.notes))


def test_latency_kinds_all_answer(engine):
    kinds = engine.capabilities().latency_kinds
    assert set(LATENCY_KINDS) <= set(kinds)
    values = engine.latency_us("host-read", HOST, 0, method=None, size_bytes=8, reps=2, warmup=1)
    assert len(values) == 2 and all(v > 0 for v in values)
    if engine.gpu_count() >= 2:
        for kind in ("remote-read", "flag-pingpong", "copy"):
            if engine.waiver(_plan("sm-push", 0, 1)):  # no peer access here: the peer kinds cannot run
                break
            values = engine.latency_us(kind, 0, 1, method=None, size_bytes=8, reps=2, warmup=1)
            assert len(values) == 2 and all(v > 0 for v in values)


def test_runner_records_agree_between_sim_and_fake():
    """Same plans through the runner: same entries, statuses and reasons on sim and the fake GPU engine."""
    opts = MeasureOptions(warmup=0, min_reps=1, max_reps=1, verify=True)

    def summary(eng):
        rows = []
        for pat in patterns():
            for m in METHODS:
                if m.key not in {x.key for x in eng.capabilities().methods}:
                    continue
                rec = run_bench(eng, TOPO, BenchSpec(pat, (m.key,)), [SIZE], opts)
                rows += [(m.key, pat.key, x.src, x.dst, x.status, x.reason, x.verified is False) for x in rec.measurements]
        return rows

    sim, fake = _sim(), _fake()
    assert summary(sim) == summary(fake)


def test_old_disagreements_are_gone():
    """all-to-host with ce: accepted (host ends allowed for ce) on every engine; a 10^15 B plan is
    a waived row, not an abort; the runner never aborts on an engine's bad-plan UserError."""
    opts = MeasureOptions(warmup=0, min_reps=1, max_reps=1)
    for eng in (_sim(), _fake()):
        rec = run_bench(eng, TOPO, BenchSpec(get_pattern("all-to-host"), ("ce",)), [SIZE], opts)
        assert {m.status for m in rec.measurements} == {Status.OK}
        rec = run_bench(eng, TOPO, BenchSpec(get_pattern("matrix"), ("ce",)), [10**15], opts)
        assert {m.status for m in rec.measurements} == {Status.WAIVED}
        assert all("does not fit" in m.reason for m in rec.measurements)


def test_amd_methods_and_the_child_process_for_ce_blit(monkeypatch):
    """On AMD, ce-blit needs HSA_ENABLE_SDMA=0 at runtime start: the runner runs it in a child process
    started with it (the fake engine records the variable as the real one does) and merges the rows."""
    from linkscope.engines.gpu.fake import FakeEngine

    monkeypatch.delenv("HSA_ENABLE_SDMA", raising=False)
    eng = FakeEngine(TOPO, vendor="amd", env_keys=["HSA_ENABLE_SDMA"])
    assert "ce-blit" in {m.key for m in eng.capabilities().methods}
    assert "HSA_ENABLE_SDMA=0" in eng.waiver(_plan("ce-blit", 0, 1))  # not in this process
    opts = MeasureOptions(warmup=0, min_reps=1, max_reps=1)
    rec = run_bench(eng, TOPO, BenchSpec(get_pattern("matrix"), ("ce", "ce-blit")), [SIZE], opts)
    assert [(m.method, m.src, m.dst, m.status) for m in rec.measurements] == [
        ("ce", 0, 1, Status.OK), ("ce", 1, 0, Status.OK), ("ce-blit", 0, 1, Status.OK), ("ce-blit", 1, 0, Status.OK)]
    assert [m.group for m in rec.measurements] == [0, 1, 2, 3] and all(m.verified for m in rec.measurements)
    assert [m.extra.get("process_env") for m in rec.measurements] == [None, None, {"HSA_ENABLE_SDMA": "0"}, {"HSA_ENABLE_SDMA": "0"}]
    assert {m.key for m in methods_for("nvidia")} == {m.key for m in METHODS} - {"ce-blit"}


def test_sim_offers_the_methods_of_the_topology_vendor():
    from linkscope.topology.presets import load_preset

    amd = _sim(load_preset("mi250x-8gcd"))
    assert "ce-blit" in {m.key for m in amd.capabilities().methods}
    assert amd.capabilities().env_missing("ce-blit") == {}  # simulated: no child process
    assert "ce-blit" not in {m.key for m in _sim().capabilities().methods}


def test_the_data_check_catches_wrong_data_on_the_fake_runtime():
    from linkscope.engines.gpu.buffers import DeviceBuffer
    from linkscope.engines.gpu.ops import DataCheck

    eng = _fake()
    buf = DeviceBuffer.allocate(eng.rt, 0, SIZE + 3)
    try:
        check = DataCheck(eng._ctx, buf, 0)
        check.fill(seed=7)
        assert check.mismatches(seed=7) == 0 and check.mismatches(seed=8) > 0
        check.poison()
        assert check.mismatches(seed=7) > 0
    finally:
        buf.free()


def test_rocm_and_cuda_engines_are_the_gpu_engine_over_their_runtime():
    from linkscope.engines.cuda import CudaEngine
    from linkscope.engines.gpu.fake import FakeRuntime
    from linkscope.engines.gpu.kernels import source_for
    from linkscope.engines.rocm import RocmEngine

    rocm = RocmEngine(TOPO, runtime=FakeRuntime(gpus=2, vendor="amd"))
    caps = rocm.capabilities()
    assert (caps.name, caps.vendor) == ("rocm", "amd") and caps.method("ce-blit") is not None
    assert rocm.child_factory[0] == "linkscope.engines.rocm:RocmEngine"
    cuda = CudaEngine(TOPO, runtime=FakeRuntime(gpus=2))
    assert cuda.capabilities().method("ce-blit") is None and cuda.capabilities().vendor == "nvidia"
    from linkscope.platforms import AMD

    hip, names = source_for(AMD.kernels)
    assert "%%globaltimer;" not in hip and "__ldcs" not in hip and "cp.async.bulk" not in hip and "wall_clock64" in hip
    assert not any(n.startswith("copy_bulk") for n in names)
    rocm.close()
    cuda.close()


def test_a_failing_child_process_gives_error_rows_not_an_abort(monkeypatch):
    from linkscope.engines.gpu.fake import FakeEngine

    monkeypatch.delenv("HSA_ENABLE_SDMA", raising=False)
    eng = FakeEngine(TOPO, vendor="amd", env_keys=["HSA_ENABLE_SDMA"])
    eng.child_factory = ("linkscope.engines.gpu.fake:NoSuchEngine", {})
    opts = MeasureOptions(warmup=0, min_reps=1, max_reps=1)
    rec = run_bench(eng, TOPO, BenchSpec(get_pattern("matrix"), ("ce-blit",)), [SIZE], opts)
    assert {m.status for m in rec.measurements} == {Status.ERROR}
    assert all("child process with HSA_ENABLE_SDMA=0 exited 1" in m.reason for m in rec.measurements)


def test_concurrent_sm_copies_on_one_gpu_share_its_sms():
    """Both directions of a host<->GPU pair by SM kernels run on the same GPU: each kernel gets half
    the blocks per SM, so neither waits for the other to retire (it did: H2D got 0.65x nvbandwidth)."""
    from linkscope.patterns.methods import SM_PUSH
    from linkscope.patterns.plan import HOST, Transfer, TransferPlan

    eng = _fake()
    sms = eng.rt.properties(0)["sm_count"]
    per_sm = eng.sm_launch.blocks_per_sm
    size = 64 * 1024**2

    def grids(plan):
        eng.rt.launch_grids.clear()
        eng.run(plan, 1, warmup=0, verify=False)
        return {g for name, _, g in eng.rt.launch_grids if name.startswith("copy_")}

    one = TransferPlan("host", "uni", SM_PUSH.key, (Transfer(HOST, 0, size),), "none", "host->0")
    both = TransferPlan("host", "bi", SM_PUSH.key, (Transfer(HOST, 0, size), Transfer(0, HOST, size)), "sum", "0<->host")
    assert grids(one) == {sms * per_sm}
    assert grids(both) == {sms * (per_sm // 2)}


def test_sm_copies_of_one_region_are_one_launch():
    """The copies of one timed region run as one kernel launch that loops over the buffer (as
    nvbandwidth's copy kernels loop loopCount times): back-to-back launches paid each kernel's
    ramp-up and drain, and sm-push at 1 MiB read 184 GB/s where nvbandwidth read 323 (H100 NV18,
    2026-11-25). The fake's virtual time still counts every copy, so the per-copy time is unchanged."""
    from linkscope.engines.gpu.engine import inner_count
    from linkscope.patterns.methods import SM_PUSH

    eng = _fake()
    size = 1024**2
    plan = TransferPlan("pair", "uni", SM_PUSH.key, (Transfer(0, 1, size),))
    eng.rt.launches.clear()
    result = eng.run(plan, 3, warmup=1, verify=True)
    copies = [n for n in eng.rt.launches if n.startswith("copy_")]
    assert inner_count(size) > 1
    # one timed launch per region (1 warm-up + 3 timed) behind one lead-in launch each, and the data
    # check's own region (no lead-in): 9 launches, not 5 x inner
    assert len(copies) == 9
    assert result.timings[0].verified is True
    from linkscope.engines.gpu.fake import FAKE_RATE_B_PER_S
    per_copy = result.timings[0].elapsed_s[0]
    assert per_copy == pytest.approx(size / FAKE_RATE_B_PER_S["kernel"], rel=1e-2)


def test_in_kernel_loops_only_between_gpus_on_platforms_that_allow_them():
    """A copy with a host end, and every copy on AMD (a GCD's L2 keeps coarse-grained peer lines), is
    one launch per copy: looping inside one kernel there would time the reader's caches, as sm-pull
    did on H100 with streaming loads (1,411-3,207 GB/s over an NV18 link, 2026-11-25)."""
    from linkscope.engines.gpu.engine import LEAD_IN_COPIES, inner_count
    from linkscope.patterns.methods import SM_PULL, SM_PUSH

    size = 1024**2
    inner = inner_count(size)

    def copies(eng, plan):
        eng.rt.launches.clear()
        eng.run(plan, 1, warmup=0, verify=False)
        return len([n for n in eng.rt.launches if n.startswith("copy_")])

    nvidia, amd = _fake(), _fake(vendor="amd")
    pair = TransferPlan("pair", "uni", SM_PULL.key, (Transfer(0, 1, size),))
    host = TransferPlan("host", "uni", SM_PUSH.key, (Transfer(0, HOST, size),))
    assert copies(nvidia, pair) == 1 + 1  # the lead-in launch, then the timed one
    assert copies(nvidia, host) == LEAD_IN_COPIES + inner
    assert copies(amd, pair) == LEAD_IN_COPIES + inner


def test_timed_regions_start_behind_a_lead_in_and_the_checked_region_has_none():
    """Each timed region's start event is recorded behind LEAD_IN_COPIES copies already queued on the
    stream (nvbandwidth's warm-up copies before its start event), so timing starts with the link busy;
    the region whose destination is checked has no lead-in (a lead-in would write the pattern the
    check must see from the timed copies) and is not one of the reported samples."""
    from linkscope.engines.gpu.engine import LEAD_IN_COPIES, inner_count
    from linkscope.patterns.methods import CE

    eng = _fake()
    size = 64 * 1024**2
    log: list[str] = []
    rt, gate = eng.rt, eng._gate
    depth = [0]  # the fake's memcpy_peer_async calls its memcpy_async: count the outer call only

    def counted(orig):
        def copy(*a, **k):
            if not depth[0]:
                log.append("copy")
            depth[0] += 1
            try:
                return orig(*a, **k)
            finally:
                depth[0] -= 1
        return copy

    for name in ("memcpy_async", "memcpy_peer_async"):
        setattr(rt, name, counted(getattr(rt, name)))
    orig_record, orig_arm = rt.event_record, gate.arm
    rt.event_record = lambda *a, **k: (log.append("event"), orig_record(*a, **k))[1]
    gate.arm = lambda *a, **k: (log.append("arm"), orig_arm(*a, **k))[1]
    plan = TransferPlan("pair", "uni", CE.key, (Transfer(0, 1, size),))
    result = eng.run(plan, 3, warmup=1, verify=True)
    regions = "".join("c" if x == "copy" else "e" if x == "event" else "|" for x in log).split("|")[1:]
    inner = inner_count(size)
    lead, timed = "c" * LEAD_IN_COPIES, "c" * inner
    assert len(regions) == 1 + 3 + 1  # warm-up, timed, checked
    assert all(r.startswith(lead + "e") and timed in r for r in regions[:-1])
    assert regions[-1].startswith("e") and regions[-1].count("c") == inner
    assert len(result.timings[0].elapsed_s) == 3 and result.timings[0].verified is True


@pytest.mark.parametrize("order", ["random", "sequential"])
def test_chase_nodes_form_one_cycle_through_every_node(order):
    """Both chase orders visit every node once before coming back (one cycle), each node at its own
    stride; sequential is nvbandwidth's i -> i+1 walk, random a permutation."""
    from linkscope.engines.gpu.latency import chase_nodes

    n, stride_words = 257, 16
    nodes = chase_nodes(n, stride_words, base_address=0, order=order)
    succ = nodes[::stride_words] // (stride_words * 8)
    seen, i = set(), 0
    for _ in range(n):
        seen.add(i)
        i = int(succ[i])
    assert i == 0 and len(seen) == n
    steps = (succ.astype(int) - range(n)) % n
    assert (set(steps.tolist()) == {1}) == (order == "sequential")
    with pytest.raises(ValueError, match="chase order"):
        chase_nodes(n, stride_words, order="backwards")


def test_remote_read_chases_on_every_sm_on_nvidia_and_on_one_block_on_amd():
    """On NVIDIA the chase runs on every SM at once (one block each, each from its own point of the
    cycle, each region continuing where the last stopped) and a sample is the mean over the blocks,
    nvbandwidth's figure; one SM alone read 3% above that mean on 2 x H100. AMD keeps one block."""
    from linkscope.engines.gpu.fake import FAKE_HOP_NS

    nvidia, amd = _fake(), _fake(vendor="amd")
    sms = nvidia.rt.properties(1)["sm_count"]
    starts: list[list[int]] = []
    real = nvidia.rt._k_pointer_chase_each

    def each(begin, hops, ends, ns):
        starts.append(list(np.ctypeslib.as_array((ctypes.c_uint64 * sms).from_address(begin))))
        return real(begin, hops, ends, ns)

    nvidia.rt._k_pointer_chase_each = each
    nvidia.rt.launch_grids.clear()
    got = nvidia.latency_us("remote-read", 0, 1, method=None, size_bytes=2 * 1024**2, reps=3, warmup=1)
    assert [g for n, _, g in nvidia.rt.launch_grids if n.startswith("pointer_chase")] == [sms] * 4
    assert len(starts) == 4 and all(len(set(s)) == sms for s in starts)  # every block its own start
    assert all(a != b for a, b in itertools.pairwise(starts))  # each region continues where the last stopped
    assert got == pytest.approx([FAKE_HOP_NS["peer"] / 1e3] * 3)
    amd.rt.launch_grids.clear()
    amd.latency_us("remote-read", 0, 1, method=None, size_bytes=2 * 1024**2, reps=3, warmup=1)
    assert {(n, g) for n, _, g in amd.rt.launch_grids if n.startswith("pointer_chase")} == {("pointer_chase", 1)}


def test_host_read_chases_on_each_sm_in_turn_on_nvidia_as_nvbandwidth():
    """nvbandwidth's host_device_latency_sm: launch k of a one-block-per-SM grid lets block k chase alone.
    Every SM at once read host memory 2-5% slower on 2 x H100 (132 chasers on one PCIe path), so NVIDIA's
    host-read (and a remote-read through host memory) runs in turn: whole sweeps, IN_TURN_HOPS a launch,
    ``reps`` samples each the mean of consecutive SMs; remote-read between GPUs stays on every SM at once;
    AMD keeps one block."""
    from linkscope.engines.gpu.fake import FAKE_HOP_NS
    from linkscope.engines.gpu.latency import IN_TURN_HOPS

    nvidia, amd = _fake(), _fake(vendor="amd")
    sms = nvidia.rt.properties(1)["sm_count"]
    calls: list[tuple[int, int]] = []
    real = nvidia.rt._k_pointer_chase

    def chase(start, hops, sink, target):
        calls.append((int(hops), int(target)))
        return real(start, hops, sink, target)

    nvidia.rt._k_pointer_chase = chase
    for kind, src in (("host-read", "host"), ("remote-read", "host")):
        calls.clear()
        nvidia.rt.launch_grids.clear()
        got = nvidia.latency_us(kind, src, 1, method=None, size_bytes=2 * 1024**2, reps=sms + 3, warmup=1)
        assert len(got) == sms + 3 and len(calls) == 1 + 2 * sms  # the warm-up launch, then two whole sweeps
        assert {g for n, _, g in nvidia.rt.launch_grids if n.startswith("pointer_chase")} == {sms}
        assert {h for h, _ in calls} == {IN_TURN_HOPS}
        timed = [t for _, t in calls[1:]]  # after the warm-up launch: every block once a sweep
        assert sorted(timed[:sms]) == list(range(sms)) and sorted(timed[sms:]) == list(range(sms))
        assert got == pytest.approx([FAKE_HOP_NS["host"] / 1e3] * (sms + 3), rel=0.01)  # + the launch in the events
    nvidia.rt.launch_grids.clear()
    nvidia.latency_us("remote-read", 0, 1, method=None, size_bytes=2 * 1024**2, reps=3, warmup=1)
    assert {n for n, _, _ in nvidia.rt.launch_grids if n.startswith("pointer_chase")} == {"pointer_chase_each"}
    amd.rt.launch_grids.clear()
    amd.latency_us("host-read", "host", 1, method=None, size_bytes=2 * 1024**2, reps=3, warmup=1)
    assert {(n, g) for n, _, g in amd.rt.launch_grids if n.startswith("pointer_chase")} == {("pointer_chase", 1)}


def test_sm_push_between_gpus_takes_the_platforms_measured_shape_unless_one_is_set():
    """NVIDIA's sm-push between two GPUs runs 256 threads x 1 block per SM x unroll 4 (platforms:
    the best of 18 shapes on 2 x H100, >= nvbandwidth's write_sm at 1-64 MiB); pulls, host ends, AMD
    and an explicitly set launch shape keep theirs."""
    from linkscope.engines.gpu.ops import SmLaunch
    from linkscope.patterns.methods import SM_PULL, SM_PUSH

    def shape(eng, method, src, dst):
        eng._ctx.reset_lanes()
        op = eng._build(method, src, dst, 64 * 1024**2, None)
        try:
            return op.threads, op.grid // eng._ctx.sm_count[op.runner], op.kernel
        finally:
            op.free()

    nvidia, amd = _fake(), _fake(vendor="amd")
    assert shape(nvidia, SM_PUSH.key, 0, 1) == (256, 1, "copy_u4_4")
    assert shape(nvidia, SM_PULL.key, 0, 1) == (512, 4, "copy_u4_4")
    assert shape(nvidia, SM_PUSH.key, 0, HOST) == (512, 4, "copy_u4_4")
    assert shape(amd, SM_PUSH.key, 0, 1) == (512, 4, "copy_u4_4")
    nvidia.sm_launch = SmLaunch(threads=1024, blocks_per_sm=2, unroll=8)
    assert shape(nvidia, SM_PUSH.key, 0, 1) == (1024, 2, "copy_u4_8")


def test_regions_hold_nvbandwidths_16_copies_up_to_64_mib():
    from linkscope.engines.gpu.engine import MAX_INNER, inner_count

    MiB = 1024**2
    assert [inner_count(s * MiB) for s in (1, 16, 64, 128, 256, 512)] == [MAX_INNER, 16, 16, 2, 1, 1]


def test_a_lead_in_is_never_longer_than_the_timed_copies():
    """At 256 MiB and up a region times one copy: one lead-in copy keeps the link busy (four would move
    four times the timed bytes for nothing)."""
    from linkscope.engines.gpu.engine import LEAD_IN_COPIES, inner_count
    from linkscope.patterns.methods import CE

    eng = _fake()
    calls = []
    real = eng.rt.memcpy_peer_async
    eng.rt.memcpy_peer_async = lambda *a, **k: (calls.append(1), real(*a, **k))[1]
    size = 256 * 1024**2
    eng.run(TransferPlan("pair", "uni", CE.key, (Transfer(0, 1, size),)), 2, warmup=1, verify=False)
    assert inner_count(size) == 1 and LEAD_IN_COPIES > 1
    assert len(calls) == 3 * (1 + 1)  # three regions, each one lead-in copy and one timed copy
