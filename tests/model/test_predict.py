"""Behaviour the issue demands of the model, on the shipped presets."""
import pytest

from linkscope.errors import ConfigError, TopologyError, UserError
from linkscope.model.predict import FabricModel, predict
from linkscope.patterns.plan import Transfer, TransferPlan
from linkscope.topology import query
from linkscope.topology.model import Device, DeviceKind
from linkscope.topology.presets import load_preset

BIG = 256 * 2**20


def gbps(model, flows, method):
    return [p.gb_per_s for p in model.predict([(a, b, BIG) for a, b in flows], method)]


@pytest.fixture(scope="module")
def pcie():
    return FabricModel(load_preset("pcie-8gpu-2socket"))


def test_pcie_same_switch_faster_than_cross_socket(pcie):
    topo = pcie.topology
    assert query.pair_level(topo, 0, 1).code == "PIX" and query.pair_level(topo, 0, 4).code == "SYS"
    # P2P stops at the socket (the preset's p2p_max_level NODE): across it the driver stages through the host
    with pytest.raises(ConfigError, match="no peer access"):
        pcie.predict([(0, 4, 1 << 20)], "ce")
    same, cross = gbps(pcie, [(0, 1)], "ce")[0], gbps(pcie, [(0, 4)], "ce-nopeer")[0]
    assert same > 1.3 * cross


def test_pcie_host_staged_pairs_share_the_switch_uplink(pcie):
    # staged through pinned host buffers: both copies go up and down the one switch uplink at once
    alone = gbps(pcie, [(0, 1)], "staged-pinned")[0]
    both = gbps(pcie, [(0, 1), (2, 3)], "staged-pinned")
    assert both[0] == pytest.approx(both[1])
    assert both[0] == pytest.approx(alone / 2, rel=0.1)


@pytest.mark.parametrize("method,flows", [("staged", [(0, 1), (2, 3)]), ("staged", [(0, 4), (1, 5)]),
                                          ("h2d-pageable", [("host", 0), ("host", 1)]),
                                          ("d2h-pageable", [(0, "host"), (4, "host")])])
def test_pageable_copies_of_one_host_run_one_after_another(pcie, method, flows):
    # the seed system's 8-GPU PCIe box: two pageable copies at once are serialised (the host thread waits
    # for each; the driver stages through one buffer), so together they move what one copy moves alone.
    # The old model overlapped them: 1.39x one copy (staged 0->1 with 2->3), 2 x 0.69x (h2d-pageable).
    size = 256 << 20
    alone = [pcie.predict([(a, b, size)], method)[0] for a, b in flows]
    both = pcie.predict([(a, b, size) for a, b in flows], method)
    assert [p.gb_per_s for p in both] == pytest.approx([p.gb_per_s for p in alone], rel=1e-9)  # each at its own rate
    assert both[0].start_s == 0.0 and both[1].start_s == pytest.approx(both[0].elapsed_s)  # the second waits
    group_gb_per_s = 2 * size / max(p.finish_s for p in both) / 1e9
    assert group_gb_per_s == pytest.approx(alone[0].gb_per_s, rel=0.01)


def test_pageable_rate_is_the_host_copy_rate_below_the_pinned_dma(pcie):
    # staged through pinned bounce buffers, the host thread's copy (per direction) bounds the rate;
    # a copy faster than the link leaves the pinned DMA rate (model.host_copies, facts 1-3)
    pinned = gbps(pcie, [("host", 0)], "h2d")[0]
    assert gbps(pcie, [("host", 0)], "h2d-pageable")[0] == pytest.approx(7.8, rel=0.01)
    assert gbps(pcie, [(0, "host")], "d2h-pageable")[0] == pytest.approx(10.83, rel=0.01)
    fast = FabricModel(pcie.topology, {"host_memcpy_gb_per_s.h2d": 1000.0})
    assert gbps(fast, [("host", 0)], "h2d-pageable")[0] == pytest.approx(pinned, rel=0.01)
    legacy = FabricModel(pcie.topology, {"host_memcpy_gb_per_s": 5.0})  # older files: one rate, both directions
    assert gbps(legacy, [("host", 0)], "h2d-pageable")[0] == pytest.approx(5.0, rel=0.01)
    assert gbps(legacy, [(0, "host")], "d2h-pageable")[0] == pytest.approx(5.0, rel=0.01)
    # staged: D2H into pageable memory, then H2D from it, each at its pageable rate
    assert gbps(pcie, [(0, 1)], "staged")[0] == pytest.approx(1 / (1 / 7.8 + 1 / 10.83), rel=0.01)


def test_pcie_driver_staged_copies_slow_each_other(pcie):
    alone = gbps(pcie, [(0, 1)], "ce-nopeer")[0]
    assert gbps(pcie, [(0, 1), (2, 3)], "ce-nopeer")[0] < 0.8 * alone


def test_pcie_peer_copies_in_one_switch_do_not_slow_each_other(pcie):
    alone = gbps(pcie, [(0, 1)], "ce")[0]
    assert gbps(pcie, [(0, 1), (2, 3)], "ce") == pytest.approx([alone, alone], rel=1e-9)


@pytest.mark.parametrize("name", ["hgx-h200-4", "dgx-h100", "dgx-a100"])
def test_nvswitch_pairs_equal_bidir_double_all_to_one_receiver_bound(name):
    model = FabricModel(load_preset(name))
    n = model.topology.gpu_count
    values = {round(v, 9) for a in range(n) for b in range(n) if a != b for v in gbps(model, [(a, b)], "ce")}
    assert len(values) == 1
    uni = values.pop()
    assert sum(gbps(model, [(0, 1), (1, 0)], "ce")) == pytest.approx(2 * uni, rel=1e-6)
    into = gbps(model, [(i, 0) for i in range(1, n)], "ce")
    receiver = model.capacity[[e for e in range(model.graph.n_edges)
                               if model.graph.node_ids[model.graph.edge_dst[e]] == "gpu0"
                               and model.graph.edge_kind[e] == 0]].sum()
    assert sum(into) == pytest.approx(receiver, rel=0.02)
    assert sum(into) < 1.05 * uni


def test_h200_defaults_match_the_anchors():
    model = FabricModel(load_preset("hgx-h200-4"))
    big = 1 << 30
    ce = model.predict([(0, 1, big)], "ce")[0].gb_per_s
    sm = model.predict([(0, 1, big)], "sm-push")[0].gb_per_s
    h2d = model.predict([("host", 0, big)], "h2d")[0].gb_per_s
    nopeer = model.predict([(0, 1, big)], "ce-nopeer")[0].gb_per_s
    assert 390 <= ce <= 396 and 365 <= sm <= 372 and 55 <= h2d <= 56 and 37 <= nopeer <= 39.5


def test_mi250x_kernel_copies_scale_with_links_dma_capped():
    model = FabricModel(load_preset("mi250x-8gcd"))
    topo = model.topology
    assert query.pair_level(topo, 0, 1).code == "XGMI4" and query.pair_level(topo, 0, 2).code == "XGMI1"
    four, one = gbps(model, [(0, 1)], "sm-push")[0], gbps(model, [(0, 2)], "sm-push")[0]
    assert four / one == pytest.approx(4.0, rel=0.05)
    for a in range(8):
        for b in range(8):
            if a != b:
                ce = gbps(model, [(a, b)], "ce")[0]
                assert 0.75 * 50 <= ce <= 50.0  # the SDMA engine caps every pair near 50 GB/s
    assert gbps(model, [(0, 1)], "ce")[0] == pytest.approx(50.0, rel=0.01)


def test_k80_bandwidth_falls_level_by_level_latency_much_less():
    model = FabricModel(load_preset("k80-16"))
    topo = model.topology
    levels = {}
    for j in range(1, 16):
        levels.setdefault(query.pair_level(topo, 0, j).code, j)
    order = ["PIX", "PXB", "PHB", "SYS"]
    assert all(code in levels for code in order)
    # peer copies at the three PCIe levels; across QPI P2P stops (the preset's p2p_max_level), host staging instead
    bw = [gbps(model, [(0, levels[c])], "ce")[0] for c in order[:3]]
    lat = [model.latency_us("copy", 0, levels[c], method="ce", size_bytes=8) for c in order[:3]]
    with pytest.raises(ConfigError, match="no peer access"):
        model.predict([(0, levels["SYS"], 8)], "ce")
    bw.append(gbps(model, [(0, levels["SYS"])], "ce-nopeer")[0])
    lat.append(model.latency_us("copy", 0, levels["SYS"], method="ce-nopeer", size_bytes=8))
    assert bw[0] > bw[1] > bw[2]
    assert lat[0] < lat[1] < lat[2] < lat[3]
    # latency rises only slightly per PCIe level (switch and root-complex transit terms, not whole hops)
    assert lat[2] / lat[0] < 1.25 < bw[0] / bw[2]
    nopeer_same_socket = model.latency_us("copy", 0, levels["PHB"], method="ce-nopeer", size_bytes=8)
    assert lat[3] > nopeer_same_socket  # the staging protocol costs more across sockets
    rr = [model.latency_us("remote-read", 0, levels[c]) for c in order]
    assert rr == sorted(rr) and rr[0] > 0


def test_small_messages_latency_bound_large_bandwidth_bound():
    model = FabricModel(load_preset("hgx-h200-4"))
    small = model.predict([(0, 1, 8)], "ce")[0]
    large = model.predict([(0, 1, 1 << 30)], "ce")[0]
    assert small.elapsed_s * 1e6 == pytest.approx(small.latency_us, rel=1e-3)
    assert large.latency_us * 1e-6 < 0.01 * large.elapsed_s


def test_predict_accepts_a_plan_and_keeps_order():
    topo = load_preset("hgx-h200-4")
    plan = TransferPlan("ring", "uni", "ce", tuple(Transfer(i, (i + 1) % 4, BIG) for i in range(4)))
    out = predict(topo, plan)
    assert [(p.src, p.dst) for p in out] == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert all(p.method == "ce" and p.size_bytes == BIG and p.elapsed_s > 0 for p in out)


def test_host_endpoint_resolves_to_the_nearest_cpu():
    model = FabricModel(load_preset("pcie-8gpu-2socket"))
    s0 = model.stages("host", 1, 1, "h2d")[0]
    s1 = model.stages("host", 5, 1, "h2d")[0]
    assert model.graph.host_memory_resource("cpu0") in s0.resources
    assert model.graph.host_memory_resource("cpu1") in s1.resources
    # all four GPUs of a switch pulling from host share its uplink
    one = model.predict([("host", 0, BIG)], "h2d")[0].gb_per_s
    four = model.predict([("host", g, BIG) for g in range(4)], "h2d")
    assert sum(p.gb_per_s for p in four) == pytest.approx(one, rel=0.01)


# ---- bad input --------------------------------------------------------------------------------
def test_transfer_to_itself():
    with pytest.raises(ConfigError, match="itself"):
        predict(load_preset("hgx-h200-4"), [(1, 1, 100)], "ce")
    assert predict(load_preset("hgx-h200-4"), [(1, 1, 1 << 20)], "local")[0].gb_per_s > 0


def test_negative_size_and_missing_device_and_unknown_method():
    topo = load_preset("hgx-h200-4")
    with pytest.raises(ConfigError, match="negative"):
        predict(topo, [(0, 1, -5)], "ce")
    with pytest.raises(TopologyError, match="GPU 7 does not exist"):
        predict(topo, [(0, 7, 10)], "ce")
    with pytest.raises(ConfigError, match="unknown transfer method"):
        predict(topo, [(0, 1, 10)], "teleport")
    with pytest.raises(ConfigError):
        predict(topo, [("host", "host", 10)], "h2d")
    with pytest.raises(ConfigError):
        predict(topo, [(0, 1, 10)], "h2d")


def test_disconnected_device():
    topo = load_preset("hgx-h200-4")
    lonely = Device(id="gpu4", kind=DeviceKind.GPU, name="GPU", index=4, vendor="nvidia", numa_node=0)
    topo = topo.replace(devices=topo.devices + (lonely,))
    with pytest.raises(TopologyError, match="disconnected"):
        predict(topo, [(0, 4, 10)], "ce")
    assert issubclass(TopologyError, UserError)


def test_no_peer_access_pairs_refuse_peer_methods():
    topo = load_preset("pcie-8gpu-2socket")
    topo = topo.replace(model_params={"no_peer_access": [[0, 4]]})
    with pytest.raises(ConfigError, match="no peer access"):
        predict(topo, [(0, 4, 10)], "ce")
    assert predict(topo, [(0, 4, 1 << 20)], "ce-nopeer")[0].gb_per_s > 0
    topo = topo.replace(model_params={"p2p_max_level": "PIX"})
    assert FabricModel(topo).peer_access(0, 4) and FabricModel(topo).peer_access(0, 1) is None


def test_pageable_h2d_source_that_fits_the_host_cache_is_copied_faster(pcie):
    # forum t/56270 and the 2 x H100 survey: 16 MiB pageable h2d runs at the cached copy rate, 256 MiB at
    # the DRAM one (model.host_copies, fact 5); d2h writes the user's buffer and has no such step
    p = pcie.params
    small = pcie.predict([("host", 0, 16 << 20)], "h2d-pageable")[0]
    big = pcie.predict([("host", 0, 256 << 20)], "h2d-pageable")[0]
    assert small.rate_gb_per_s == pytest.approx(7.8 * p["host_copy_cache_speedup"], rel=1e-6)
    assert big.rate_gb_per_s == pytest.approx(7.8, rel=1e-6)
    d2h = [pcie.predict([(0, "host", s)], "d2h-pageable")[0].rate_gb_per_s for s in (16 << 20, 256 << 20)]
    assert d2h[0] == pytest.approx(d2h[1])


def test_a_pageable_copy_of_one_staging_chunk_is_dma_then_host_copy_one_after_the_other(pcie):
    # the 2 x H100 host: pageable d2h of 64 KiB-1 MiB = the pinned copy's time + the host copy's; from 16 MiB
    # the host copy alone sets the pace, after one chunk of DMA (model.host_copies, staging_fill_s)
    p = pcie.params
    dma = pcie.predict([(0, "host", 1 << 30)], "d2h")[0].rate_gb_per_s
    copy = p.host_memcpy_gb_per_s("d2h")
    lat = p.overhead_us("d2h-pageable") * 1e-6 + pcie._lat(pcie._path(pcie.gpu(0), pcie.router.local_cpu(pcie.gpu(0))))
    small = pcie.predict([(0, "host", 1 << 20)], "d2h-pageable")[0]
    assert small.elapsed_s == pytest.approx(lat + (1 << 20) / (dma * 1e9) + (1 << 20) / (copy * 1e9), rel=1e-6)
    big = pcie.predict([(0, "host", 256 << 20)], "d2h-pageable")[0]
    chunk = p["pageable_staging_chunk_bytes"]
    assert big.elapsed_s == pytest.approx(lat + chunk / (dma * 1e9) + (256 << 20) / (copy * 1e9), rel=1e-6)
