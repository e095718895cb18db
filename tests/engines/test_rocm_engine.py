"""The ROCm engine against what HIP does (issue 21 items 4-9, 11): each test fails on the code
before the fix. The runtime is the fake (engines/gpu/fake.py) with AMD answers; the facts it
answers with are upstream's (cited next to each test)."""
from __future__ import annotations

import dataclasses

import pytest

from linkscope.engines.gpu import buffers
from linkscope.engines.gpu.fake import FakeRuntime
from linkscope.engines.gpu.latency import chase_bytes
from linkscope.engines.rocm import RocmEngine
from linkscope.errors import ConfigError, MeasurementError
from linkscope.patterns.plan import HOST, Transfer, TransferPlan
from linkscope.topology.synthetic import synthetic_topology
from linkscope.vendors.amd import HIP_PRELUDE, wall_clock_khz_for_arch

MiB = 1024 * 1024
TOPO = synthetic_topology("nvswitch:2")


def _engine(**runtime: object) -> tuple[RocmEngine, FakeRuntime]:
    rt = FakeRuntime(gpus=int(runtime.pop("gpus", 2)), vendor="amd", **runtime)  # type: ignore[arg-type]
    return RocmEngine(None, runtime=rt), rt


def _run(engine: RocmEngine, method: str, transfers: tuple[Transfer, ...]):
    plan = TransferPlan(pattern="test", direction="uni", method=method, transfers=transfers)
    return engine.run(plan, 1, warmup=0, verify=True)


# ---- item 4: wall_clock64() rate -----------------------------------------------------------------

@pytest.mark.parametrize("khz", [25_000, 100_000])
def test_kernels_are_compiled_with_the_devices_wall_clock_rate(khz: int) -> None:
    """MI200 ticks at 25 MHz, MI300 at 100 MHz (llvm-project libc/src/time/gpu/time_utils.h): the
    rate the device reports is compiled in; the old prelude assumed 10 ns per tick everywhere."""
    _engine(wall_clock_khz_value=khz)
    _, rt = _engine(wall_clock_khz_value=khz)
    assert f"-DWALL_CLOCK_KHZ={khz}" in rt.compile_options[-1]
    assert "#error" in HIP_PRELUDE and "WALL_CLOCK_NS_PER_TICK 10" not in HIP_PRELUDE


def test_wall_clock_rate_by_architecture_when_the_runtime_does_not_say() -> None:
    """gfx94x -> 100000 kHz (TransferBench src/include/EnvVars.hpp:550-567; RCCL rocm-6.2.2
    src/misc/archinfo.cc:63-69 takes the whole gfx94 prefix, not gfx942 alone), gfx900 (Vega 10) ->
    27000 (LLVM libc time_utils.h comment; ROCm/hip#3099), other gfx9 -> 25000."""
    assert wall_clock_khz_for_arch("gfx90a:sramecc+:xnack-") == 25_000
    assert wall_clock_khz_for_arch("gfx908") == 25_000
    assert wall_clock_khz_for_arch("gfx906:sramecc-:xnack-") == 25_000
    assert wall_clock_khz_for_arch("gfx900:xnack-") == 27_000
    for arch in ("gfx940", "gfx941", "gfx942:sramecc+:xnack-"):
        assert wall_clock_khz_for_arch(arch) == 100_000
    with pytest.raises(MeasurementError):
        wall_clock_khz_for_arch("gfx803x")


def test_mixed_wall_clock_rates_are_refused() -> None:
    class Mixed(FakeRuntime):
        def wall_clock_khz(self, ordinal: int) -> int:
            return 25_000 if ordinal == 0 else 100_000

    with pytest.raises(ConfigError, match="different wall-clock rates"):
        RocmEngine(None, runtime=Mixed(gpus=2, vendor="amd"))


# ---- item 5: flags in uncached memory --------------------------------------------------------------

def test_pingpong_flags_live_in_uncached_memory() -> None:
    """TransferBench (src/TransferBench.cpp:1431) and RCCL poll flags in hipDeviceMallocUncached
    memory; the old engine used plain hipMalloc (coarse-grained, may be cached)."""
    engine, rt = _engine()
    uncached_sizes: list[int] = []
    real_uncached = rt.malloc_uncached

    def uncached(ordinal: int, n: int) -> int:
        uncached_sizes.append(n)
        return real_uncached(ordinal, n)

    rt.malloc_uncached = uncached  # type: ignore[method-assign]
    assert engine.latency_us("flag-pingpong", 0, 1, method=None, size_bytes=8, reps=1, warmup=0)
    assert uncached_sizes.count(256) == 2  # one flag on each GPU


# ---- item 6: small peer copies are kernels ---------------------------------------------------------

def test_small_peer_ce_rows_say_the_runtime_chose_a_kernel() -> None:
    """ROCclr: peer copies of <= ROC_P2P_SDMA_SIZE (1024) KiB go to a blit kernel (clr
    rocclr/device/rocm/rocblit.cpp:2249, rocclr/utils/flags.hpp:220)."""
    engine, _ = _engine()
    small = _run(engine, "ce", (Transfer(0, 1, 1 * MiB),))
    big = _run(engine, "ce", (Transfer(0, 1, 1 * MiB + 4096),))
    assert any("runtime chose a kernel" in n for n in small.notes)
    assert not any("runtime chose a kernel" in n for n in big.notes)
    h2d = _run(engine, "h2d", (Transfer(HOST, 0, 64 * 1024),))  # host copies keep SDMA (GPU_FORCE_BLIT_COPY_SIZE 0)
    assert not any("runtime chose a kernel" in n for n in h2d.notes)


def test_roc_p2p_sdma_size_moves_the_threshold() -> None:
    engine, _ = _engine()
    engine.process_env["ROC_P2P_SDMA_SIZE"] = "0"
    assert not any("runtime chose a kernel" in n for n in _run(engine, "ce", (Transfer(0, 1, 4096),)).notes)


@pytest.mark.parametrize(("version", "says"), [((6, 2), "runtime chose a kernel: HIP 6.2"),
                                                ((7, 0), "runtime chose a kernel: HIP 7.0"),
                                                ((6, 1), "only when a kernel dispatch is pending"),
                                                ((5, 7), "only when a kernel dispatch is pending")])
def test_small_peer_copy_rule_follows_the_rocm_version(monkeypatch, version, says) -> None:
    """clr rocblit.cpp copyBuffer: rocm-6.2.2:2258-2264 a peer copy <= ROC_P2P_SDMA_SIZE KiB is always a
    kernel; rocm-6.1.2:2289 (and 5.7.0:2232) only when a kernel dispatch is pending on the queue."""
    monkeypatch.setattr(RocmEngine, "rocm_version", property(lambda self: version))
    engine, _ = _engine()
    notes = _run(engine, "ce", (Transfer(0, 1, 64 * 1024),)).notes
    assert any(says in n for n in notes)
    if version < (6, 2):
        assert not any(n.startswith("runtime chose a kernel") for n in notes)


def test_small_ce_read_is_a_pull_on_the_destinations_queue() -> None:
    """At <= ROC_P2P_SDMA_SIZE KiB the blit kernel runs on the issuing (destination's) queue: not the
    source's SDMA engine pushing, which holds above the threshold only."""
    engine, _ = _engine()
    small = _run(engine, "ce-read", (Transfer(0, 1, 64 * 1024),)).notes
    assert any("a pull" in n for n in small) and not any("source pushing" in n for n in small)
    assert any("source pushing" in n for n in _run(engine, "ce-read", (Transfer(0, 1, 4 * MiB),)).notes)


def test_ce_nopeer_on_rocm_says_what_it_really_is() -> None:
    """ROCclr chooses P2P by reachability (p2pAgents), not by the peer-access state."""
    engine, _ = _engine()
    assert any("this is ce's copy" in n for n in _run(engine, "ce-nopeer", (Transfer(0, 1, 4 * MiB),)).notes)


def test_ce_read_on_rocm_says_the_source_engine_copies() -> None:
    """rocr-runtime runtime.cpp:574: copy_agent = src_agent when it is a GPU; clr rocblit.cpp:668-671
    passes both GPUs' agents for a peer copy whatever stream issues it."""
    engine, _ = _engine()
    notes = _run(engine, "ce-read", (Transfer(0, 1, 4 * MiB),)).notes
    assert any("source GPU's engine" in n for n in notes)


# ---- item 7: NUMA-placed pinned memory on HIP --------------------------------------------------------

def test_pinned_buffers_are_numa_placed_when_register_is_refused(monkeypatch) -> None:
    """CuPy's HIP hostRegister fails; the old code then fell back to an unplaced hipHostMalloc and
    hid it. Now: prefer the node, hipHostMalloc(hipHostMallocNumaUser) (TransferBench's way)."""
    rt = FakeRuntime(gpus=1, vendor="amd", host_register_fails=True)
    policy: list[int | None] = []
    monkeypatch.setattr(buffers, "numa_node_count", lambda: 2)
    monkeypatch.setattr(buffers, "_prefer_node", lambda node: policy.append(node) or True)
    monkeypatch.setattr(buffers, "page_node", lambda ptr: 1)
    buf = buffers.PinnedHostBuffer.allocate(rt, 1 * MiB, numa_node=1)
    try:
        assert buf.numa_placed and buf.numa_landed == 1 and buf.ptr in rt.numa_user_allocs
        assert policy == [1, None]  # set for the allocation, then restored
    finally:
        buf.free()


def test_staged_pinned_notes_where_pages_landed(monkeypatch) -> None:
    monkeypatch.setattr(buffers, "numa_node_count", lambda: 2)
    monkeypatch.setattr(buffers, "_prefer_node", lambda node: True)
    monkeypatch.setattr(buffers, "page_node", lambda ptr: 0)  # the kernel put them elsewhere
    import linkscope.engines.gpu.engine as engine_mod

    monkeypatch.setattr(engine_mod, "numa_node_count", lambda: 2)
    rt = FakeRuntime(gpus=2, vendor="amd", host_register_fails=True)
    topo = synthetic_topology("nvswitch:2")
    gpus = tuple(dataclasses.replace(g, numa_node=1) for g in topo.gpus)
    engine = RocmEngine(dataclasses.replace(topo, devices=gpus + tuple(d for d in topo.devices if d not in topo.gpus)),
                        runtime=rt)
    result = _run(engine, "staged-pinned", (Transfer(0, 1, 2 * MiB),))
    assert any("for NUMA node 1 landed on node(s) 0" in n for n in result.notes)


# ---- item 8: the chase is sized past the reader's L2 -------------------------------------------------

def test_chase_outgrows_the_readers_l2() -> None:
    """A 2 MiB chain fits an MI250X GCD's 8 MB L2 (and an H100's 50 MB): the old chase timed L2 hits."""
    assert chase_bytes(8, 8 * MiB) >= 4 * 8 * MiB  # 256-byte stride, 128-byte line: footprint 2 x L2
    assert chase_bytes(8, 50 * 10**6) >= 4 * 50 * 10**6
    assert chase_bytes(512 * MiB, 8 * MiB) == 512 * MiB


def test_amd_chase_is_sized_past_the_gcds_l2_nvidia_keeps_its_size() -> None:
    engine, rt = _engine(l2_cache_bytes=8 * MiB)
    chased: list[int] = []
    real = rt.malloc

    def malloc(ordinal: int, n: int) -> int:
        chased.append(n)
        return real(ordinal, n)

    rt.malloc = malloc  # type: ignore[method-assign]
    engine.latency_us("remote-read", 0, 1, method=None, size_bytes=8, reps=1, warmup=0)
    assert max(chased) >= 32 * MiB
    from linkscope.engines.gpu.fake import FakeEngine

    nvidia = FakeEngine(gpus=2)
    assert nvidia.chase_cache_bytes(0) == 0


def test_each_region_continues_where_the_last_stopped() -> None:
    engine, rt = _engine(l2_cache_bytes=64 * 1024)
    starts: list[int] = []
    real = rt._k_pointer_chase

    def chase(start: int, hops: int, sink: int, target: int) -> float:
        starts.append(start)
        return real(start, hops, sink, target)

    rt._k_pointer_chase = chase  # type: ignore[method-assign]
    engine.latency_us("remote-read", 0, 1, method=None, size_bytes=8, reps=3, warmup=1)
    assert len(starts) == 4 and len(set(starts)) == 4


# ---- item 9: hardware queues --------------------------------------------------------------------------

def test_more_streams_than_hw_queues_on_one_gcd_is_noted() -> None:
    """HIP gives a device GPU_MAX_HW_QUEUES = 4 queues (clr rocclr/utils/flags.hpp:152); TransferBench
    warns past it. Five copies from GCD 0 share them."""
    engine, _ = _engine(gpus=6)
    result = _run(engine, "ce", tuple(Transfer(0, d, 4 * MiB) for d in range(1, 6)))
    assert any("5 streams on device 0 share GPU_MAX_HW_QUEUES=4" in n for n in result.notes)
    four = _run(engine, "ce", tuple(Transfer(0, d, 4 * MiB) for d in range(1, 5)))
    assert not any("GPU_MAX_HW_QUEUES" in n for n in four.notes)


# ---- item 11: device order by bus id ------------------------------------------------------------------

def test_runtime_order_is_matched_to_discovery_by_bus_id() -> None:
    """amdsmi numbers GCDs its way, HIP its own: the engine follows the PCI bus id."""
    topo = synthetic_topology("nvswitch:2")
    buses = ("0000:c1:00.0", "0000:c6:00.0")
    gpus = tuple(dataclasses.replace(g, pci_bus_id=b) for g, b in zip(topo.gpus, buses))
    topo = dataclasses.replace(topo, devices=gpus + tuple(d for d in topo.devices if d not in topo.gpus))
    rt = FakeRuntime(gpus=2, vendor="amd", bus_ids=tuple(reversed(buses)))
    engine = RocmEngine(topo, runtime=rt)
    assert engine._ordinals == [1, 0]
    assert any("matched by PCI bus id" in n for n in _run(engine, "ce", (Transfer(0, 1, 4 * MiB),)).notes)
