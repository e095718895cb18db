import itertools
from pathlib import Path

import numpy as np
import pytest

from linkscope.errors import UserError
from linkscope.model.collectives import OPS, algbw_gb_per_s, busbw_factor, busbw_gb_per_s, layout


@pytest.mark.parametrize("op,n,factor", [
    ("allreduce", 2, 1.0), ("allreduce", 4, 1.5), ("allreduce", 8, 1.75),
    ("allgather", 4, 0.75), ("reduce_scatter", 8, 0.875), ("alltoall", 2, 0.5),
    ("broadcast", 8, 1.0), ("reduce", 4, 1.0), ("sendrecv", 2, 1.0),
])
def test_busbw_factors_match_nccl_tests(op, n, factor):
    assert busbw_factor(op, n) == pytest.approx(factor)


def test_one_rank_has_no_bus_traffic_for_allreduce():
    assert busbw_factor("allreduce", 1) == 0.0


def test_bandwidths():
    assert algbw_gb_per_s(1_000_000_000, 0.5) == pytest.approx(2.0)
    assert busbw_gb_per_s("allreduce", 4, 1_000_000_000, 1.0) == pytest.approx(1.5)
    with pytest.raises(ValueError):
        algbw_gb_per_s(8, 0.0)


def test_layouts_follow_nccl_tests_conventions():
    ag = layout("allgather", 1 << 20, 4)
    assert (ag.send_count, ag.recv_count, ag.size_bytes) == (65536, 262144, 1 << 20)
    rs = layout("reduce_scatter", 1 << 20, 4)
    assert (rs.send_count, rs.recv_count) == (262144, 65536)
    a2a = layout("alltoall", 1000, 3)  # 250 floats -> 83 per peer, 249 used
    assert (a2a.chunk_count, a2a.send_count, a2a.size_bytes) == (83, 249, 996)
    sr = layout("sendrecv", 8, 2)
    assert (sr.send_count, sr.recv_count, sr.size_bytes) == (2, 2, 8)


def test_unknown_op_names_choices():
    with pytest.raises(UserError) as exc:
        busbw_factor("allreduc", 2)
    assert exc.value.one_line() == "unknown collective 'allreduc' (valid operations: " + ", ".join(OPS) + ")"


# ---- the simulated collective: CollectiveModel on the fabric model -----------------------------------
from linkscope.errors import ConfigError  # noqa: E402
from linkscope.model.collectives import CollectiveModel  # noqa: E402
from linkscope.topology.presets import load_preset  # noqa: E402
from linkscope.topology.synthetic import synthetic_topology  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20
_ROOT = Path(__file__).resolve().parents[2]
# docs/benchmarks.md, 2 x H200 NV18, NCCL 2.28.9, 2026-11-22 (nvidia-h200-x2): allreduce out-of-place
# busbw at 1 GiB 326.8 GB/s (pinned rerun, one process); sendrecv at 1 GiB 360.1-361.1 GB/s.
MEASURED_ALLREDUCE_BUSBW = 326.8
MEASURED_SENDRECV_BUSBW = (360.1, 361.1)


def test_two_h200_prediction_is_within_10_percent_of_the_measurement():
    model = CollectiveModel.of(load_preset("hgx-h200-4"), launch="eager")  # `bench nccl`: no graph above 1 MiB
    allreduce = model.predict("allreduce", [0, 1], GIB).chosen
    sendrecv = model.predict("sendrecv", [0, 1], GIB).chosen
    assert allreduce.algorithm == "ring"
    assert abs(allreduce.busbw_gb_per_s / MEASURED_ALLREDUCE_BUSBW - 1) <= 0.10
    for measured in MEASURED_SENDRECV_BUSBW:
        assert abs(sendrecv.busbw_gb_per_s / measured - 1) <= 0.10


def test_numbers_come_from_the_links():
    """Half the NVLinks per GPU: half the busbw at large sizes; the latency floor stays."""
    full = CollectiveModel.of(synthetic_topology("nvswitch:4:18"))
    half = CollectiveModel.of(synthetic_topology("nvswitch:4:9"))
    big_full, big_half = (m.predict("allreduce", [0, 1, 2, 3], GIB).chosen for m in (full, half))
    # about half: the local receive pass of each ring loop does not use the links
    assert big_half.busbw_gb_per_s == pytest.approx(big_full.busbw_gb_per_s / 2, rel=0.05)
    small_full, small_half = (m.predict("allreduce", [0, 1, 2, 3], 8).time_us for m in (full, half))
    assert small_full == pytest.approx(small_half, rel=0.01) and small_full >= full.launch_us


NVLS_OFF = {"NCCL_NVLS_ENABLE": "0"}


def test_ring_latency_grows_with_ranks_and_busbw_does_not():
    model = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF)
    two, eight = (model.predict("allreduce", list(range(n)), 8).time_us for n in (2, 8))
    assert eight > two  # 2(n-1) ring steps, each paying NCCL's per-step latency
    bw2, bw8 = (model.predict("allreduce", list(range(n)), GIB).chosen.busbw_gb_per_s for n in (2, 8))
    # busbw is normalised for n, but with 2 ranks the ring's two directions join the same two GPUs (the
    # duplex loss nvbandwidth measures) and each loop's local receive pass follows only 2 link steps,
    # 14 with 8 (measured: 2 x H200 326.8, 4 x H200 356.7 GB/s, docs/benchmarks.md)
    assert bw2 < bw8 < 1.15 * bw2


def test_pcie_ring_crossing_sockets_is_slower_than_within_a_switch():
    model = CollectiveModel.of(synthetic_topology("pcie:2x2"))
    near = model.predict("sendrecv", [0, 1], GIB).chosen.busbw_gb_per_s
    far = model.predict("sendrecv", [0, 2], GIB).chosen.busbw_gb_per_s
    assert far < near


def test_alltoall_is_grouped_p2p_sharing_each_gpus_links():
    """256 MiB per peer: 16 of the 32 p2p channels each (enqueue.cc:891-901); rounds 0 and 1 start at
    channels 0 and 16, rounds 2 and 3 at 8 and 24 (bit-reversed bases, channel.h:19-31), so each channel
    carries two rounds. All four are one epoch (rounds 0-7): NCCL puts them in one work batch per channel
    and splits the CTA's warps (enqueue.cc addWorkBatchToPlan, sendrecv.h:103-111), so they run at once, in
    one wave (the old twin ran them in two). The GPU's links bound it, at the share a GPU keeps when it
    sends to several peers at once (nccl_p2p_fanout_efficiency, fitted on the 4 x H200 eager 512 MiB row):
    the held-out 4 x H200 -G 20 alltoall at 64 MiB (283.3 GB/s, ../shared/recordings/h200x4-2026-11-28)
    within 10%; the old twin's 368 (its link alone, the 370 of nccl-tests#212 for one peer) was +30%."""
    model = CollectiveModel.of(load_preset("hgx-h200-4"))
    pred = model.predict("alltoall", [0, 1, 2, 3], GIB).chosen
    assert pred.algorithm == "p2p" and pred.protocol == "Simple" and pred.steps == 1
    graph = CollectiveModel.of(load_preset("hgx-h200-4"), env={"NCCL_NVLS_ENABLE": "0"}, launch="graph")
    assert abs(graph.predict("alltoall", [0, 1, 2, 3], 64 * MIB).chosen.busbw_gb_per_s / 283.3 - 1) <= 0.10
    # one peer per GPU (sendrecv): the links' full share
    one_peer = graph.predict("sendrecv", [0, 1, 2, 3], GIB).chosen.busbw_gb_per_s
    assert one_peer > pred.busbw_gb_per_s * 1.15


def test_p2p_rounds_of_one_epoch_share_the_ctas_warps():
    """sendrecv.h:103-111 with NCCL's 640-thread p2p block (enqueue.cc:1045): 20 warps per channel, split
    evenly among the batch's works, each work's above 4 warps giving one more to the send than to the
    receive: 10 send warps alone, 5 with two works, 3 with three or four, 1 with eight."""
    from linkscope.model import nccl_tuning as nt

    assert [nt.p2p_send_warp_share(k) for k in (1, 2, 3, 4, 8)] == pytest.approx([1.0, 0.5, 0.3, 0.3, 0.1])
    topo = load_preset("dgx-h100")
    model = CollectiveModel.of(topo, env=NVLS_OFF, launch="eager")
    # 1 GiB on 2 GPUs: 512 MiB to itself and to the peer, 32 channels each, both rounds on every channel
    a2a = model.p2p(model.p2p_flows("alltoall", [0, 1], GIB), [0, 1])
    assert (a2a.waves, a2a.channels) == (1, 32)


_ALLTOALL = [("visit13/nccl/alltoall_eager.txt", "eager"), ("visit13/nccl/alltoall_G10.txt", "graph"),
             ("visit11/nccl/alltoall_big_eager.txt", "eager"), ("visit11/nccl/alltoall_big_G10.txt", "graph")]


@pytest.mark.parametrize("name,launch", _ALLTOALL)
def test_two_h100_alltoall_curves_within_10_percent(name, launch):
    """nccl-tests alltoall 64 MiB-1 GiB (visit 13) and 256 MiB-1 GiB (visit 11), 2 x H100, eager and -G 10.
    The old twin: -G 10 +13.5 / +15.0 / +23.3% at 256 MiB / 512 MiB / 1 GiB (registered sends at the FIFO's
    channel rate; at 1 GiB the copy to itself and the send to the peer one after the other), eager 1 GiB
    +8.6%. Fitted: nccl_p2p_registered_channel_factor to -G 10 512 MiB (both visits); the rest tests it and
    the warp sharing (1 GiB: 32 channels, two rounds on each)."""
    rows = _visit(name)
    model = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF, launch=launch)
    for size, (time_us, _) in rows.items():
        pred = model.predict("alltoall", [0, 1], size).chosen
        assert abs(pred.time_us / time_us - 1) <= 0.10, (size, pred.time_us, time_us)


def test_two_h200_alltoall_64mib_within_10_percent_of_the_measurement():
    """docs/benchmarks.md (2 x H200 NV18, NCCL 2.28.9, 2026-11-22): alltoall 64 MiB 138 us, busbw 242.8 GB/s.
    The old model ran every pair at once at the SM-copy cap (347.7, +43%); NCCL's p2p uses 8 of its 16
    p2p channels per peer at this size (enqueue.cc:1053-1056). `bench nccl` captures CUDA graphs only up to
    1 MiB (comm/nccl.py), so this run was launched eagerly: NCCL did not register its buffers."""
    model = CollectiveModel.of(load_preset("hgx-h200-4"), env=NVLS_OFF, launch="eager")
    pred = model.predict("alltoall", [0, 1], 64 << 20).chosen
    assert pred.channels == 16
    assert abs(pred.busbw_gb_per_s / 242.8 - 1) <= 0.10


def test_dgx_h100_allreduce_takes_nvls_like_nccl_and_lands_on_the_public_figures():
    """nccl-tests#290/#212, nccl#1374: ~476-480 GB/s busbw on 8 x H100 with NVLS (the old model: 326.6,
    no NVLS path); NCCL_NVLS_ENABLE=0: 330-360 (nccl#1221, nccl-tests#326)."""
    on = CollectiveModel.of(load_preset("dgx-h100")).predict("allreduce", list(range(8)), GIB).chosen
    assert (on.algorithm, on.protocol) == ("nvls", "Simple")
    assert abs(on.busbw_gb_per_s / 478 - 1) <= 0.10
    off = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF).predict("allreduce", list(range(8)), GIB).chosen
    assert (off.algorithm, off.protocol) == ("ring", "Simple")
    assert 330 * 0.9 <= off.busbw_gb_per_s <= 360 * 1.1


def test_protocol_follows_size_as_nccl_chooses():
    model = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF)
    chosen = [model.predict("allreduce", [0, 1], s).chosen for s in (8, 1 << 20, 64 << 20)]
    assert [(c.algorithm, c.protocol) for c in chosen] == [("ring", "LL"), ("ring", "LL"), ("ring", "Simple")]
    # enqueue.cc:1888-1891; search: 12 x 30 GB/s, run on 24 channels (connect.cc:452), as NCCL 2.28.9 logs
    assert chosen[0].channels == 1 and chosen[2].channels == 24
    for c in chosen:  # NCCL's own estimate is printed beside the twin's
        assert c.nccl_estimate_us is not None and c.nccl_estimate_us > 0


def test_nccl_algo_proto_and_channel_limits_are_honoured():
    topo = load_preset("dgx-h100")
    forced = CollectiveModel.of(topo, env={**NVLS_OFF, "NCCL_PROTO": "Simple"}).predict("allreduce", [0, 1], 8).chosen
    assert forced.protocol == "Simple"
    tree = CollectiveModel.of(topo, env={"NCCL_ALGO": "allreduce:tree"}).predict("allreduce", list(range(8)), GIB)
    assert {a.algorithm for a in tree.algorithms} == {"tree"}
    not_ll = CollectiveModel.of(topo, env={**NVLS_OFF, "NCCL_PROTO": "^LL"}).predict("allreduce", [0, 1], 8).chosen
    assert not_ll.protocol != "LL"
    wide = CollectiveModel.of(topo, env=NVLS_OFF).predict("allreduce", [0, 1], 64 << 20).chosen
    narrow = CollectiveModel.of(topo, env={**NVLS_OFF, "NCCL_MAX_NCHANNELS": "2"}).predict("allreduce", [0, 1], 64 << 20)
    assert narrow.chosen.channels == 2 and narrow.chosen.busbw_gb_per_s < 0.5 * wide.busbw_gb_per_s
    with pytest.raises(UserError, match="NCCL_ALGO"):
        CollectiveModel.of(topo, env={"NCCL_ALGO": "rings"}).predict("allreduce", [0, 1], 8)
    with pytest.raises(UserError, match="no NCCL algorithm"):
        CollectiveModel.of(topo, env={"NCCL_ALGO": "broadcast:tree"}).predict("broadcast", [0, 1], 8)


def test_capped_channels_run_at_one_ctas_rate_not_the_links_share_at_the_default_count():
    """2 x H200 NV18, NCCL_MAX_NCHANNELS=2 all_reduce_perf (docs/runs/h200x2-2026-11-28b/call1/broken, NCCL
    2.28.9): 41.6-41.7 GB/s busbw at 128-512 MiB, 20.8 a channel. The twin gave each channel the links' share
    at NCCL's default 24 channels (15 GB/s x the duplex 0.9): 26.9-27.0. A channel is one CTA running the Simple
    primitive a p2p send runs, so it carries what a p2p channel carries (19.6 GB/s, 2 x H100 sendrecv) while the
    links have room; from 16 channels the links' share binds again. Default channels: unchanged."""
    from linkscope.topology import io as topo_io

    topo = topo_io.load(_ROOT / "docs/runs/h200x2-2026-11-28/call1/linkscope/topo.json")
    measured = {8 * MIB: 39.55, 128 * MIB: 41.58, 512 * MIB: 41.70}
    capped = CollectiveModel.of(topo, env={"NCCL_MAX_NCHANNELS": "2"}, launch="eager")
    for size, busbw in measured.items():
        chosen = capped.predict("allreduce", [0, 1], size).chosen
        assert chosen.channels == 2 and abs(chosen.busbw_gb_per_s / busbw - 1) <= 0.15, (size, chosen.busbw_gb_per_s)
    rates = [CollectiveModel.of(topo, env={"NCCL_MAX_NCHANNELS": str(c)}, launch="eager")
             .predict("allreduce", [0, 1], 512 * MIB).chosen.busbw_gb_per_s for c in (1, 2, 4, 8)]
    assert all(1.8 <= b / a <= 2.05 for a, b in itertools.pairwise(rates)), rates  # CTA-bound: twice the channels, twice
    default = CollectiveModel.of(topo, launch="eager").predict("allreduce", [0, 1], 512 * MIB).chosen
    assert default.channels == 24 and abs(default.busbw_gb_per_s / 313 - 1) <= 0.05  # the links bind, as before


def test_nvls_on_one_node_pays_its_pipeline_fill_and_72_ranks_have_32_heads():
    """Single-node NVLS allreduce (all_reduce.h:404-460 at v2.28.9-1): scatter warps hand each loop's chunks to
    the heads' reduce warps, which hand them to the gather warps: two rounds (every channel's every head one
    chunk) cross before the pipeline streams. An NVL72 rack has 32 heads (NCCL_MAX_NVLS_ARITY) for 72 ranks, so
    a head's links carry S(1 + 1/32). The rack's curve now rises with the size as the public run does
    (coreweave/nccl-tests#43: 586 GB/s at 512 MiB, 835-847 at 4-8 GiB), where it was flat (975 at 512 MiB, 1001
    at 8 GiB); 8 x H100 at 4 GiB stays on NVIDIA's 480."""
    rack = CollectiveModel.of(load_preset("gb200-nvl72"))
    ranks = list(range(72))
    mid, big = (rack.predict("allreduce", ranks, size).chosen for size in (512 * MIB, 8 * GIB))
    assert mid.algorithm == big.algorithm == "nvls"
    assert mid.busbw_gb_per_s < 0.87 * big.busbw_gb_per_s
    dgx = CollectiveModel.of(load_preset("dgx-h100")).predict("allreduce", list(range(8)), 4 * GIB).chosen
    assert dgx.algorithm == "nvls" and abs(dgx.busbw_gb_per_s / 480 - 1) <= 0.05


def test_nccl_considers_tree_on_one_node_and_picks_the_least_estimate():
    single = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF).predict("allreduce", list(range(8)), GIB)
    assert {a.algorithm for a in single.algorithms} == {"ring", "tree"}
    assert {a.protocol for a in single.algorithms} == {"LL", "LL128", "Simple"}
    best = min(single.algorithms, key=lambda a: a.nccl_estimate_us or 0.0)
    assert single.chosen == best  # NCCL's choice is by its estimate, the twin times it
    assert set(single.as_dict()["algorithms"]) == {a.key for a in single.algorithms}


def test_bad_ranks_are_clear_errors():
    model = CollectiveModel.of(load_preset("hgx-h200-4"))
    with pytest.raises(ConfigError, match="appears twice"):
        model.predict("allreduce", [0, 0], 8)
    with pytest.raises(Exception, match="GPU 9"):
        model.predict("allreduce", [0, 9], 8)
    assert model.predict("allreduce", [2], 1 << 20).chosen.algorithm == "local"


def test_op_table_describes_gather_and_scatter_like_nccl_tests():
    from linkscope.model.collectives import OP_TABLE

    assert busbw_factor("gather", 4) == pytest.approx(0.75) and busbw_factor("scatter", 8) == pytest.approx(0.875)
    g = layout("gather", 1 << 20, 4)
    assert (g.send_count, g.recv_count) == (65536, 262144)
    sends, recvs = OP_TABLE["scatter"].exchanges(0, 4, layout("scatter", 1 << 20, 4))
    assert [peer for peer, _, _ in sends] == [0, 1, 2, 3] and recvs == [(0, 0, 65536)]
    assert OP_TABLE["gather"].reference(np, 1, 4, g, 0) is None  # only the root receives
    pred = CollectiveModel.of(load_preset("hgx-h200-4")).predict("gather", [0, 1, 2, 3], GIB).chosen
    assert pred.algorithm == "p2p"


@pytest.mark.parametrize("size,measured", [(64 << 20, 265.9), (512 << 20, 316.8)])
def test_two_h100_allreduce_mid_and_large_sizes_within_10_percent(size, measured):
    """Issue 22: nccl-tests 2.19.6 on the lent 2 x H100 (NV18), NVLS off: 265.9 / 316.8 GB/s busbw at
    64 / 512 MiB. The old model (one flat rate, no channels, no pipeline fill) gave 317 (+19%) at 64 MiB."""
    pred = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF).predict("allreduce", [0, 1], size).chosen
    assert (pred.algorithm, pred.protocol) == ("ring", "Simple")
    assert abs(pred.busbw_gb_per_s / measured - 1) <= 0.10


def test_dgx_a100_allreduce_within_10_percent_of_the_public_figure():
    """nccl-tests#175 (as cited by issue 22): 232.5 GB/s busbw on 8 x A100; the old model gave 204.9 (-12%)."""
    pred = CollectiveModel.of(load_preset("dgx-a100")).predict("allreduce", list(range(8)), 4 << 30).chosen
    assert pred.algorithm == "ring" and abs(pred.busbw_gb_per_s / 232.5 - 1) <= 0.10


def _recorded(name):
    """size -> (time us, busbw) of an nccl-tests table in the 2 x H100 fixture (out-of-place columns)."""
    from pathlib import Path

    path = Path(__file__).parents[1] / "fixtures/nccl/h100x2-2026-11-25" / name
    rows = {}
    for line in path.read_text().splitlines():
        cols = line.split()
        if len(cols) >= 8 and cols[0].isdigit():
            rows[int(cols[0])] = (float(cols[5]), float(cols[7]))
    return rows


@pytest.mark.parametrize("name,op,env,sizes", [
    ("all_reduce.txt", "allreduce", {}, (64 << 20, 1 << 30)),
    ("all_reduce_Ring_Simple.txt", "allreduce", {"NCCL_ALGO": "Ring", "NCCL_PROTO": "Simple"}, (64 << 20, 1 << 30)),
    ("all_reduce_Tree_Simple.txt", "allreduce", {"NCCL_ALGO": "Tree", "NCCL_PROTO": "Simple"}, (64 << 20, 1 << 30)),
    ("sendrecv.txt", "sendrecv", {}, (64 << 20, 256 << 20, 1 << 30)),
    ("alltoall.txt", "alltoall", {}, (64 << 20, 512 << 20, 1 << 30)),
    ("broadcast.txt", "broadcast", {}, (64 << 20, 1 << 30)),
    ("all_gather.txt", "allgather", {}, (1 << 30,)),
    ("reduce_scatter.txt", "reduce_scatter", {}, (1 << 30,)),
])
def test_two_h100_recordings_within_10_percent(name, op, env, sizes):
    """The lent 2 x H100 (tests/fixtures/nccl/h100x2-2026-11-25, NCCL 2.28.9, NVLS off). The old model:
    allreduce 64 MiB +19%, alltoall 64 MiB +43% (on H200), allgather 1 GiB +34%, no tree;
    nccl_p2p_channel_factor is fitted to the sendrecv slope between 2 and 16 MiB per channel, so the
    sendrecv rows test its fit only. These runs launched eagerly (no -G), so NCCL used its FIFOs:
    predicted eager with each run's host time. Allgather and reduce_scatter at 64 MiB are the table's
    known misses (-10.7 / -13.1%, docs/benchmarks.md)."""
    rows = _recorded(name)
    model = CollectiveModel.of(load_preset("dgx-h100"), env={**NVLS_OFF, **env}, launch="eager",
                               eager_host_us=_run_host_us(rows))
    for size in sizes:
        pred = model.predict(op, [0, 1], size).chosen
        assert abs(pred.busbw_gb_per_s / rows[size][1] - 1) <= 0.10, (size, pred.busbw_gb_per_s, rows[size][1])


def test_two_h100_allreduce_1mib_with_cuda_graphs_within_25_percent():
    """all_reduce_G10.txt (nccl-tests -G 10): 14.02 us at 1 MiB; NCCL and the twin pick ring/LL."""
    pred = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF).predict("allreduce", [0, 1], 1 << 20).chosen
    assert pred.protocol == "LL" and abs(pred.time_us / _recorded("all_reduce_G10.txt")[1 << 20][0] - 1) <= 0.25


def test_collnet_needs_the_env_and_a_sharp_network_like_nccl():
    """NCCL runs CollNet only with NCCL_COLLNET_ENABLE=1 and a network that reduces (the SHARP plugin):
    the twin offers collnet_direct / collnet_chain only when the topology marks a switch ``sharp``."""
    import dataclasses

    from linkscope.topology.model import DeviceKind

    base = synthetic_topology("fattree:2x4")
    devices = [dataclasses.replace(d, name="NVIDIA H100 80GB HBM3") if d.is_gpu else d for d in base.devices]
    plain = dataclasses.replace(base, devices=type(base.devices)(devices))
    sharp = dataclasses.replace(plain, devices=type(base.devices)(
        dataclasses.replace(d, attributes={**(d.attributes or {}), "sharp": True})
        if d.kind is DeviceKind.NETWORK_SWITCH else d for d in devices))
    env = {"NCCL_COLLNET_ENABLE": "1"}

    def algos(topo, env):
        return {a.algorithm for a in CollectiveModel.of(topo, env=env).predict("allreduce", list(range(8)), GIB).algorithms}

    assert "collnet_direct" not in algos(plain, env) and "collnet_direct" not in algos(sharp, {})
    assert {"collnet_direct", "collnet_chain"} <= algos(sharp, env)


def _run_host_us(rows):
    """A run's host time per eager operation: its fastest 8 B-1 KiB row (bench/twin_vs_collectives.py)."""
    return min(t for size, (t, _) in rows.items() if 8 <= size <= 1024)


@pytest.mark.parametrize("name,op", [
    ("all_reduce.txt", "allreduce"), ("all_gather.txt", "allgather"), ("reduce_scatter.txt", "reduce_scatter"),
    ("broadcast.txt", "broadcast"), ("sendrecv.txt", "sendrecv"), ("alltoall.txt", "alltoall"),
])
def test_two_h100_eager_1mib_within_25_percent_with_the_runs_host_time(name, op):
    """nccl-tests without -G launches every operation from the host: an operation takes max(device +
    nccl_eager_launch_us, the host's time), the host's time being the run's own (its fastest 8 B-1 KiB
    row: 13.7-21.1 us across these files) plus nccl_eager_host_per_channel_us per further channel task.
    A grouped alltoall of 1 MiB builds 24 channel tasks per rank: 27.2 us, where the old model
    (device + 7.6 us) said 20.2 (-34%)."""
    rows = _recorded(name)
    eager = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF, launch="eager", eager_host_us=_run_host_us(rows))
    e = eager.predict(op, [0, 1], 1 << 20).chosen
    assert abs(e.time_us / rows[1 << 20][0] - 1) <= 0.25, (e.time_us, rows[1 << 20][0])


def test_eager_launch_hides_but_for_a_gap_and_a_slow_host_hides_too():
    """The same all_reduce_perf command twice (all_reduce.txt, all_reduce_rerun.txt): 8 B takes 13.86
    and 20.22 us (two hosts' speeds), 4, 16 and 32 MiB within 2% of each other: the host's own time hides
    behind longer kernels, max(device + gap, host). The gap is what eager adds to the same device path:
    visits 11-12 ran allgather / reduce_scatter eager and under -G 10 without registration (the same
    FIFOs) on one lease: 4-128 MiB 1.24 us apart (median of 36 pairs), not the 7.6 us of the old
    constant, which was fitted at 8 B-1 KiB where the host bounds the eager time anyway. The twin is
    within 15% of the fast run's 4-32 MiB rows (the Simple ring's fixed time overshoots at 4 MiB: +13%)."""
    fast, slow = _recorded("all_reduce.txt"), _recorded("all_reduce_rerun.txt")
    models = [CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF, launch="eager", eager_host_us=_run_host_us(r))
              for r in (fast, slow)]
    assert [m.predict("allreduce", [0, 1], 8).chosen.time_us for m in models] == pytest.approx([13.86, 20.22], abs=0.01)
    for size in (4 << 20, 8 << 20, 16 << 20, 32 << 20):
        times = [m.predict("allreduce", [0, 1], size).chosen.time_us for m in models]
        assert times[0] == pytest.approx(times[1])  # the slow host is hidden
        assert abs(times[0] / fast[size][0] - 1) <= 0.15, (size, times[0], fast[size][0])


def test_eager_minus_graph_on_the_same_fifos_is_the_fitted_gap():
    """Visits 11-12 (tests/fixtures/peertools/h100x2-visits11-13): allgather and reduce_scatter eager vs
    -G 10 with the FIFOs (allgather NCCL_GRAPH_REGISTER=0; reduce_scatter is never registered), 4-128
    MiB: eager - graph has median 1.24 us (nccl_eager_launch_us); the twin's eager and graph predictions
    of the same device path differ by exactly that at those sizes, where the old constant put 7.6 us."""
    import statistics

    diffs = []
    for eager, graph in _VISIT_PAIRS:
        e, g = _visit(eager), _visit(graph)
        diffs += [e[s][0] - g[s][0] for s in (4 << 20, 8 << 20, 16 << 20, 32 << 20, 64 << 20, 128 << 20)]
    assert len(diffs) == 36 and statistics.median(diffs) == pytest.approx(1.24, abs=0.01)
    topo = load_preset("dgx-h100")
    fifo = {**NVLS_OFF, "NCCL_GRAPH_REGISTER": "0"}
    eager = CollectiveModel.of(topo, env=fifo, launch="eager", eager_host_us=13.7)
    graph = CollectiveModel.of(topo, env=fifo)
    for op in ("allgather", "reduce_scatter"):
        for size in (4 << 20, 64 << 20):
            gap = eager.predict(op, [0, 1], size).time_us - graph.predict(op, [0, 1], size).time_us
            assert gap == pytest.approx(1.24)


_VISITS = "fixtures/peertools/h100x2-visits11-13"
_VISIT_PAIRS = [("visit12/nccl/all_gather_eager.txt", "visit12/nccl/all_gather_G10_noreg.txt"),
                ("visit12/nccl/reduce_scatter_eager.txt", "visit12/nccl/reduce_scatter_G10.txt")] + [
    (f"visit11/nccl/{op}_eager_r{r}.txt", f"visit11/nccl/{op}_G10_noreg_r{r}.txt")
    for op in ("all_gather", "reduce_scatter") for r in (1, 2)]


def _visit(name):
    """size -> (time us, busbw) of a visit 11-12 nccl-tests table (out-of-place columns)."""
    return _visit4(name, _VISITS)


_CURVES = [(f"visit12/nccl/{f}.txt", op, "graph" if "G10" in f else "eager", env) for f, op, env in (
    ("all_gather_eager", "allgather", {}), ("all_gather_G10", "allgather", {}),
    ("all_gather_G10_noreg", "allgather", {"NCCL_GRAPH_REGISTER": "0"}),
    ("reduce_scatter_eager", "reduce_scatter", {}), ("reduce_scatter_G10", "reduce_scatter", {}),
    ("all_reduce_eager", "allreduce", {}), ("all_reduce_G10", "allreduce", {}))] + [
    ("visit11/nccl/all_reduce_big_eager.txt", "allreduce", "eager", {}),
    ("visit11/nccl/all_reduce_big_G10.txt", "allreduce", "graph", {})]


@pytest.mark.parametrize("name,op,launch,env", _CURVES)
def test_simple_ring_follows_the_visit_11_12_curves(name, op, launch, env):
    """One lease's nccl-tests curves, 4 MiB-1 GiB (visit 12) and allreduce 256 MiB-1 GiB (visit 11),
    2 x H100 NV18, NCCL 2.28.9, NVLS off: the twin within 10% from 64 MiB, 25% below. The old twin (a
    fill of half the link time below ~96 MiB) missed 64-128 MiB: allgather -G 10 +20.5 / +15.6%,
    reduce_scatter eager +15.2 / +13.2%, allgather -G 10 at 4 MiB -33%. Fitted to these files: the
    Simple ring's fixed time (allgather -G 10, 4-64 MiB), the CTAs' copy rate (allgather 64 MiB with and
    without registration) and the hidden share (allgather 1 GiB with and without); everything else,
    reduce_scatter and allreduce entirely, is a test."""
    rows = _visit(name)
    model = CollectiveModel.of(load_preset("dgx-h100"), env={**NVLS_OFF, **env}, launch=launch)
    for size, (time_us, _) in rows.items():
        pred = model.predict(op, [0, 1], size).chosen
        assert (pred.algorithm, pred.protocol) == ("ring", "Simple")
        target = 0.10 if size >= 64 << 20 else 0.25
        assert abs(pred.time_us / time_us - 1) <= target, (size, pred.time_us, time_us)


def test_the_unhidden_copy_is_one_loop_then_a_share():
    """What registration saves in allgather -G 10 is the last receive's copy that the links do not hide:
    measured (with NCCL_GRAPH_REGISTER=0 minus with) 34.1-36.3 us at 64 MiB (one loop per channel: all
    of it), 61.8-64.1 at 128 MiB, 102.1 at 256 MiB, 185.3 at 512 MiB (the first loop's 2 MiB per channel,
    then about half). The twin, fitted at 64 MiB and 1 GiB only, gives the middle sizes within 10%; the
    old twin (the whole copy at the GPU's memory rate, 1500 GB/s) gave 44.7 us at 128 MiB (-29%)."""
    topo = load_preset("dgx-h100")
    reg = CollectiveModel.of(topo, env=NVLS_OFF)
    fifo = CollectiveModel.of(topo, env={**NVLS_OFF, "NCCL_GRAPH_REGISTER": "0"})
    pairs = [("visit12/nccl/all_gather_G10.txt", "visit12/nccl/all_gather_G10_noreg.txt")] + [
        (f"visit11/nccl/all_gather_G10_r{r}.txt", f"visit11/nccl/all_gather_G10_noreg_r{r}.txt") for r in (1, 2)]
    for a, b in pairs:
        with_reg, without = _visit(a), _visit(b)
        for size in (128 << 20, 256 << 20, 512 << 20):
            if size not in with_reg:
                continue
            measured = without[size][0] - with_reg[size][0]
            twin = fifo.predict("allgather", [0, 1], size).time_us - reg.predict("allgather", [0, 1], size).time_us
            assert abs(twin / measured - 1) <= 0.10, (a, size, twin, measured)


def test_grouped_p2p_host_time_counts_channels_per_round():
    """NCCL builds one work batch per channel of each p2p round (enqueue.cc:968-975): a 1 MiB alltoall on
    2 GPUs has 2 rounds, the copy to itself on 8 channels (Simple) and the peer's 512 KiB on 16 (LL: up
    to 32 x 16 KiB), 24 in all; a 1 MiB sendrecv one round of 16 (Simple)."""
    model = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF, launch="eager")
    a2a = model.p2p(model.p2p_flows("alltoall", [0, 1], 1 << 20), [0, 1])
    sr = model.p2p(model.p2p_flows("sendrecv", [0, 1], 1 << 20), [0, 1])
    assert (a2a.channel_tasks, sr.channel_tasks) == (24, 16)
    assert a2a.time_us == pytest.approx(max(a2a.device_us + model.fabric.params["nccl_eager_launch_us"],
                                            model.host_us(24, 2, p2p=True)))
    # a grouped send/recv's host path per GPU is longer than a collective's (nccl_eager_host_p2p_per_gpu_us)
    assert model.host_us(24, 2, p2p=True) - model.host_us(24, 2) == pytest.approx(
        2 * model.fabric.params["nccl_eager_host_p2p_per_gpu_us"])


def test_eager_host_time_grows_with_the_gpus_one_thread_drives():
    """nccl-tests -g 4 (one thread, four GPUs): the host launches each GPU's kernel (group.cc:259-309), so
    the 4 x H200 eager 1 MiB rows take 36-55 us where two GPUs took 14-21; under mpirun with one GPU per
    process the host time is one GPU's."""
    four = CollectiveModel.of(load_preset("hgx-h200-4"), env=NVLS_OFF, launch="eager")
    one = CollectiveModel.of(load_preset("hgx-h200-4"), env=NVLS_OFF, launch="eager", gpus_per_thread=1)
    assert four.host_us(1, 4) == pytest.approx(4 * one.host_us(1, 4))
    small = four.predict("allreduce", [0, 1, 2, 3], 1 << 20).time_us
    assert 35.0 <= small <= 55.0 and one.predict("allreduce", [0, 1, 2, 3], 1 << 20).time_us < small
    with pytest.raises(ConfigError, match="GPUs driven by one thread"):
        CollectiveModel.of(load_preset("hgx-h200-4"), launch="eager", gpus_per_thread=0)


def test_eager_floor_is_the_recorded_small_size_time_and_launch_mode_is_checked():
    """The 8 B allreduce: eager 13.9-15.2 us, -G 10 6.4 us (tests/fixtures/nccl/h100x2-2026-11-25); a bad
    eager host time is refused."""
    eager = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF, launch="eager")
    graph = CollectiveModel.of(load_preset("dgx-h100"), env=NVLS_OFF)
    assert 14.0 * 0.9 <= eager.predict("allreduce", [0, 1], 8).time_us <= 15.2 * 1.1
    assert abs(graph.predict("allreduce", [0, 1], 8).time_us / 6.39 - 1) <= 0.25  # the twin: 7.5 us
    with pytest.raises(ConfigError, match="launch mode 'lazy'"):
        CollectiveModel.of(load_preset("dgx-h100"), launch="lazy")
    with pytest.raises(ConfigError, match="eager host time"):
        CollectiveModel.of(load_preset("dgx-h100"), launch="eager", eager_host_us=-1.0)


@pytest.mark.parametrize("algo,proto,sizes", [
    ("Ring", "LL", (64 << 20, 1 << 30)), ("Ring", "LL128", (64 << 20, 1 << 30)),
    ("Tree", "LL", (64 << 20, 1 << 30)), ("Tree", "LL128", (64 << 20, 1 << 30)),
])
def test_two_h100_forced_ll_and_ll128_within_10_percent(algo, proto, sizes):
    """The forced LL / LL128 rows (all_reduce_{Ring,Tree}_{LL,LL128}.txt). LL and LL128 are bound by the
    threads that store lines, not by the links: nccl_ll_thread_mb_per_s and nccl_ll128_thread_mb_per_s
    are fitted to the Ring 1 GiB rows alone; Ring 64 MiB and both Tree rows test them (a non-root tree
    rank sends up with 448 of its 640 threads, all_reduce.h runTreeSplit). The old model (NCCL's llMaxBw
    and tree factors as caps): Ring/LL +11 / +12%, Ring/LL128 64 MiB +18%, Tree/LL +29 / +33%,
    Tree/LL128 +39 / +53%."""
    model = CollectiveModel.of(load_preset("dgx-h100"), env={**NVLS_OFF, "NCCL_ALGO": algo, "NCCL_PROTO": proto})
    rows = _recorded(f"all_reduce_{algo}_{proto}.txt")
    for size in sizes:
        pred = model.predict("allreduce", [0, 1], size).chosen
        assert (pred.algorithm, pred.protocol) == (algo.lower(), proto)
        assert abs(pred.busbw_gb_per_s / rows[size][1] - 1) <= 0.10, (size, pred.busbw_gb_per_s, rows[size][1])


def test_tree_ll_is_bound_by_the_up_senders_threads():
    """On 2 GPUs every tree channel is a chain: the child sends up with 70% of its threads (448 of 640),
    the root sends down with all 640, so a tree's LL rate is the ring's per-thread rate x 448 x 12
    channels; a 25% faster thread makes the tree about 25% faster (the old model capped it at NCCL's
    llMaxBw, whatever the threads)."""
    from linkscope.model import nccl_tuning as nt
    from linkscope.model.params import ModelParams

    assert nt.tree_up_threads(nt.LL) == 448 and nt.tree_up_threads(nt.LL128) == 448 and nt.TREE_NTHREADS == 640
    topo = load_preset("dgx-h100")
    env = {**NVLS_OFF, "NCCL_ALGO": "Tree", "NCCL_PROTO": "LL"}
    base = CollectiveModel.of(topo, env=env).predict("allreduce", [0, 1], 1 << 30).chosen
    rate = ModelParams.for_topology(topo)["nccl_ll_thread_mb_per_s"]
    fast = CollectiveModel.of(topo, ModelParams.for_topology(topo, {"nccl_ll_thread_mb_per_s": 1.25 * rate}),
                              env=env).predict("allreduce", [0, 1], 1 << 30).chosen
    assert 1.18 <= fast.busbw_gb_per_s / base.busbw_gb_per_s <= 1.25
    # the tree's LL data rate: 2 trees x (12 channels x 448 threads x rate) carrying S/2 each
    expected_busbw = 12 * 448 * rate / 1000.0 * 2
    assert abs(base.busbw_gb_per_s / expected_busbw - 1) <= 0.08


@pytest.mark.parametrize("algo,proto", [("Ring", "LL"), ("Ring", "LL128"), ("Tree", "LL"), ("Tree", "LL128")])
def test_forced_ll_and_ll128_hold_on_a_later_lease(algo, proto):
    """Visit 4 (tests/fixtures/peertools/h100x2-visits4-9/visit4, two rounds of the same forced runs on a
    later lease, nothing fitted to them): 64 MiB and 1 GiB within 10% (the old model: +11 to +53%)."""
    from pathlib import Path

    from linkscope.results.peertools.nccltests import parse_text

    model = CollectiveModel.of(load_preset("dgx-h100"), env={**NVLS_OFF, "NCCL_ALGO": algo, "NCCL_PROTO": proto})
    base = Path(__file__).parents[1] / "fixtures/peertools/h100x2-visits4-9/visit4/peers_run/nccl"
    for rnd in (1, 2):
        path = base / f"all_reduce_{algo}_{proto}_r{rnd}.txt"
        rows = {m.size_bytes: float(m.extra["busbw_gb_per_s"])
                for m in parse_text(path.read_text(), str(path)).measurements if not m.extra.get("inplace")}
        for size in (64 << 20, 1 << 30):
            pred = model.predict("allreduce", [0, 1], size).chosen
            assert abs(pred.busbw_gb_per_s / rows[size] - 1) <= 0.10, (rnd, size, pred.busbw_gb_per_s, rows[size])


def _visit4(name, folder="fixtures/peertools/h100x2-visits4-9/visit4/peers_run/nccl"):
    """size -> (time us, busbw) of an nccl-tests table under ``folder`` (visit 4's by default;
    out-of-place columns)."""
    from pathlib import Path

    from linkscope.results.peertools.nccltests import parse_text

    path = Path(__file__).parents[1] / folder / name
    return {m.size_bytes: (float(m.extra["time_us"]), float(m.extra["busbw_gb_per_s"]))
            for m in parse_text(path.read_text(), str(path)).measurements if not m.extra.get("inplace")}


def test_nccl_registers_user_buffers_only_for_captured_simple_ring_and_p2p():
    """coll_reg.cc:181-185 and enqueue.cc:258, 874-888 at v2.28.9-1: captured in a CUDA graph
    (NCCL_GRAPH_REGISTER default 1), Simple, all peers over P2P: ring allgather, broadcast and out-of-place
    allreduce, and grouped send/recv; never reduce_scatter; never eager."""
    topo = load_preset("dgx-h100")
    graph = CollectiveModel.of(topo, env=NVLS_OFF)
    assert all(graph.registers(op, "ring", "Simple", [0, 1]) for op in ("allgather", "allreduce", "broadcast"))
    assert graph.registers(None, "p2p", "Simple", [0, 1]) and graph.registers("alltoall", "p2p", "Simple", [0, 1])
    assert not graph.registers("reduce_scatter", "ring", "Simple", [0, 1])
    assert not graph.registers("allgather", "ring", "LL", [0, 1]) and not graph.registers("allreduce", "tree", "Simple", [0, 1])
    assert not CollectiveModel.of(topo, env=NVLS_OFF, launch="eager").registers("allgather", "ring", "Simple", [0, 1])
    off = CollectiveModel.of(topo, env={**NVLS_OFF, "NCCL_GRAPH_REGISTER": "0"})
    assert not off.registers("allgather", "ring", "Simple", [0, 1]) and not off.registers(None, "p2p", "Simple", [0, 1])


def test_registered_buffers_skip_the_last_receive_and_the_p2p_fifo():
    """Visit 4's -G 10 runs (nothing fitted to them): allgather 1 GiB 317.2 GB/s, alltoall 64 MiB 303.2;
    the twin with NCCL's FIFOs under a graph said 278.4 (-12.2%) and 235.3 (-22.4%). Registered, the peer
    writes the output itself, so the last receive copies nothing (prims_simple.h) and a send is one chunk
    without the FIFO (sendrecv.h useLargeChunk); reduce_scatter, not registered, keeps its time."""
    topo = load_preset("dgx-h100")
    graph = CollectiveModel.of(topo, env=NVLS_OFF)
    fifo = CollectiveModel.of(topo, env={**NVLS_OFF, "NCCL_GRAPH_REGISTER": "0"})
    ag = graph.predict("allgather", [0, 1], GIB).chosen
    a2a = graph.predict("alltoall", [0, 1], 64 << 20).chosen
    assert abs(ag.busbw_gb_per_s / _visit4("all_gather_G10_big.txt")[GIB][1] - 1) <= 0.10
    assert abs(a2a.busbw_gb_per_s / _visit4("alltoall_G10_big.txt")[64 << 20][1] - 1) <= 0.10
    assert ag.time_us < fifo.predict("allgather", [0, 1], GIB).chosen.time_us
    assert a2a.time_us < fifo.predict("alltoall", [0, 1], 64 << 20).chosen.time_us
    for size in (64 << 20, GIB):
        assert graph.predict("reduce_scatter", [0, 1], size).time_us == fifo.predict("reduce_scatter", [0, 1], size).time_us


def test_a_node_uses_every_nic_its_gpus_reach_at_their_best_path():
    """DGX A100: two GPUs and two HDR NICs behind each PCIe switch. NCCL keeps every NIC tied at a GPU's best
    path as local (ncclTopoGetLocal, topo.cc:1548-1572 at v2.28.9-1) and a node's rings use the local NICs of
    all its GPUs (ncclTopoSelectNets, search.cc:531-546): eight rings leave each node, one per NIC. Taking one
    NIC per GPU saw four, the rings of a machine with half the NICs."""
    model = CollectiveModel.of(synthetic_topology("cluster:dgx-a100:2"))
    system = model.nccl_system(list(range(16)))
    assert (system.n_nodes, system.ring.n_channels, system.n_channels) == (2, 8, 16)
    h100 = CollectiveModel.of(synthetic_topology("cluster:dgx-h100:2")).nccl_system(list(range(16)))
    assert h100.ring.n_channels == 8  # one NIC per GPU there: unchanged


def test_a_ring_across_nodes_runs_at_the_nics_rate():
    """NCCL's net transport: the NIC's DMA carries the FIFO between nodes (GPUDirect RDMA), so neither the SM
    copy's share of a link nor the PCIe transit factors bound it. 2 x DGX A100, NCCL_ALGO=Ring, 8 GiB: 8 HDR NICs
    at the maintainers' 24 GB/s each (nccl-tests#119) is 192 GB/s busbw; the twin gave 128.6 with every
    transfer between nodes timed as an SM store (and 63.8 with four NICs). Within a node nothing changes."""
    model = CollectiveModel.of(synthetic_topology("cluster:dgx-a100:2"), env={"NCCL_ALGO": "Ring"})
    ring = model.predict("allreduce", list(range(16)), 8 << 30).chosen
    assert ring.algorithm == "ring" and abs(ring.busbw_gb_per_s / 192 - 1) <= 0.05
    one = CollectiveModel.of(load_preset("dgx-a100"), env={"NCCL_ALGO": "Ring"})
    assert not one._across_nodes(0, 7) and model._across_nodes(0, 8)


def test_rings_across_nodes_enter_and_leave_through_the_same_nic_so_two_gpus_per_nic_use_every_nic():
    """nccl-tests#119: 3 x 8 A100 with one HDR NIC per GPU pair (hgx-a100-8-4nic). NCCL's ring channel c takes the
    node's NETs in turn and leaves the node through the NET it entered by (search.cc:680, 762, 564-570 at
    v2.28.9-1): in at one GPU of the pair, out from the other. Each NIC carries one channel each way, 4 x 24 =
    96 GB/s busbw (NVIDIA's target, which the run reaches). Rotating the rank order by the channel sent two of
    the four rings out through one NIC: 43.7."""
    model = CollectiveModel.of(synthetic_topology("cluster:hgx-a100-8-4nic:3"))
    ranks = list(range(24))
    system = model.nccl_system(ranks)
    rings = model._node_rings(ranks, system)
    assert len(rings) == 4
    exits = [{ring[8 * k + 7] for ring in rings} for k in range(3)]
    nics = [{model.fabric.router.nics_of(model.fabric.gpu(g))[0].id for g in node} for node in exits]
    assert all(len(n) == 4 for n in nics)  # every NIC of a node carries one ring out of it
    big = model.predict("allreduce", ranks, 1 << 30).chosen
    assert big.algorithm == "ring" and abs(big.busbw_gb_per_s / 96 - 1) <= 0.1


@pytest.mark.parametrize("spec, nic_gb_per_s", [("cluster:mi250x-8gcd:2", 25.0), ("cluster:mi300x-8:2", 50.0)])
def test_rccl_rings_across_nodes_use_every_nic_and_the_nodes_xgmi_rings(spec, nic_gb_per_s):
    """#34 (blind8): RCCL's graph search is NCCL's (search.cc:590, 598-603 at rocm-6.2.2): ring channels take the
    node's NETs in turn while the NETs have bandwidth left, so every NIC carries a ring. The twin ran an AMD
    communicator across nodes as one ring in rank order through one NIC: 2 x 8 MI250X GCDs (4 x 200 Gb/s NICs a
    node) at 23 GB/s busbw where a public run (crickett-hpe/hpc-ai-envs#21) reaches 91, and 2 x 8 MI300X (8 x 400
    Gb/s) at ~46 where a public run reaches 357. Now a ring per (NIC, node xGMI ring), each node's NICs all used."""
    model = CollectiveModel.of(synthetic_topology(spec))
    ranks = list(range(16))
    rings = model._node_rings(ranks, model.nccl_system(ranks))
    assert len(rings) > 1 and all(sorted(r) == ranks for r in rings)
    for node in (range(8), range(8, 16)):
        entries = {next(g for g in r if g in node) for r in rings}  # the GPU each ring enters the node at
        nics = {nic.id for g in entries for nic in model.fabric.router.nics_of(model.fabric.gpu(g))}
        every = {nic.id for g in node for nic in model.fabric.router.nics_of(model.fabric.gpu(g))}
        assert nics == every
    big = model.predict("allreduce", ranks, 1 << 30).chosen
    n_nics = len({nic.id for g in range(8) for nic in model.fabric.router.nics_of(model.fabric.gpu(g))})
    assert 2 * nic_gb_per_s < big.busbw_gb_per_s <= n_nics * nic_gb_per_s


def test_a_gpu_whose_host_link_is_nvlink_c2c_gets_its_c2c_rate_in_nccls_view():
    """#34 (blind8): a GH200's (or GB10's) only host link is NVLink-C2C, so the twin's NCCL system found no PCIe link
    and took a Gen3 x16 guess (12 GB/s): one ring channel, 2 x GH200 with a 400 Gb/s NIC each at 11.9 GB/s busbw
    where the NIC carries 46-48 (nccl-tests#290, #319). NCCL takes a GPU's bandwidth to its CPU 'via P2P or C2C' as
    the GPU's (topo.cc:1581-1587 at v2.28.9-1)."""
    model = CollectiveModel.of(synthetic_topology("cluster:gh200:2"))
    system = model.nccl_system([0, 1])
    assert system.ring.n_channels >= 2 and system.ring.bw_inter > 12.0
    assert 40.0 <= model.predict("allreduce", [0, 1], 8 << 30).chosen.busbw_gb_per_s <= 50.0


def test_two_dgx_sparks_on_one_cable_run_at_one_nic_function():
    """#34 (blind8): a DGX Spark (GB10) had no GPU facts and no topology, so its public nccl-tests pastes could not be
    judged ('unknown GPU model GB10'). The preset's QSFP port is two PCIe Gen5 x4 functions of ~100 Gb/s (users'
    threads, docs/presets.md); the twin routes a GPU's traffic through one of them: 2 ranks at one function's rate
    (12.5 GB/s line, NCCL's ~85%), which one-function runs reach (98 Gb/s busbw, tonyd2wild/...-2x-DGX-Spark#35)."""
    model = CollectiveModel.of(synthetic_topology("cluster:dgx-spark:2"))
    assert model.nccl_system([0, 1]).cc == 121
    busbw = model.predict("allgather", [0, 1], 16 << 30).chosen.busbw_gb_per_s
    assert 9.0 <= busbw <= 12.5


def test_identical_flows_are_one_weighted_flow_and_the_answer_does_not_change():
    """flows_time_s simulates identical flows (same ends, bytes, cap) once, weighing their count on
    every resource: the same finish as simulating every copy (max-min rates are unique, so the copies
    share equally). Checked against the unmerged problem on two DGX nodes, where the copies contend
    on NVLink and on the NICs, and with a second call that reuses the first call's problem."""
    from linkscope.model.collectives import TRANSPORT_METHOD, _flow_classes
    from linkscope.model.contention import simulate

    model = CollectiveModel.of(synthetic_topology("cluster:dgx-h100:2"))
    ring = [(g, (g + 1) % 16, 8 << 20) for g in range(16)]
    flows = ring * 3 + [(0, 9, 1 << 20)] * 2
    classes, counts = _flow_classes(flows, np.full(len(flows), np.inf))
    assert len(classes) == 17 and counts[:16] == [3] * 16 and counts[16] == 2
    fabric = model.fabric
    unmerged = fabric._problem([fabric.stages(a, b, n, TRANSPORT_METHOD) for a, b, n in flows])
    first = unmerged.flow_first
    latency = unmerged.stage_latency_s.copy()
    latency[first] = np.maximum(latency[first] - fabric.params.overhead_us(TRANSPORT_METHOD) * 1e-6, 0.0)
    from dataclasses import replace

    expected = float(np.max(simulate(replace(unmerged, stage_latency_s=latency)).finish_s))
    assert model.flows_time_s(flows) == pytest.approx(expected, rel=1e-9)
    # the same pairs with other bytes: the kept problem with the new bytes, as a fresh model computes it
    bigger = [(a, b, 4 * n) for a, b, n in flows]
    fresh = CollectiveModel.of(synthetic_topology("cluster:dgx-h100:2")).flows_time_s(bigger)
    assert model.flows_time_s(bigger) == pytest.approx(fresh, rel=1e-12)
    assert fresh > 2 * expected
