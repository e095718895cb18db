"""FabricModel.copy_engine_bound (model/issue_queues.py): an issuing GPU's copy-engine peer copies queue, kernel
copies reach a share of each link.

Measured figures: 4 x H200 NV18, 2026-11-28, docs/runs/h200x4-2026-11-28d/call2/linkscope/ce_queue.txt and
a2a_ce.txt (main 1d7095e; 64 and 512 MiB, 20 and 50 repetitions)."""
import itertools
import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from linkscope.model import issue_queues
from linkscope.model.fits import FITS
from linkscope.model.params import ModelParams, default_keys
from linkscope.model.predict import FabricModel, group_elapsed_s
from linkscope.patterns.plan import Transfer, TransferPlan
from linkscope.topology.io import load
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology

H200X4 = Path(__file__).resolve().parents[1] / "fixtures" / "nccl" / "h200x4-2026-11-28" / "topo.json"
MIB = 1 << 20
A2A = [(a, b) for a in range(4) for b in range(4) if a != b]


def _total(preds):
    return sum(p.size_bytes for p in preds) / group_elapsed_s(preds) / 1e9


@pytest.fixture(scope="module")
def h200x4():
    return FabricModel(load(H200X4))


def test_ce_all_to_all_spread_is_the_queue_order(h200x4):
    """The 12-copy CE all-to-all: measured median 817-937 GB/s (two runs, and 731-943 over the earlier leases),
    minimum 677-680, maximum 1163-1557 (CV 12-20%); the twin's spread over all 6^4 queue orders covers it with
    no fitted constant (the retired fit ce_mesh_efficiency gave one number, 863)."""
    for size in (64 * MIB, 512 * MIB):
        ce = h200x4.predict([(a, b, size) for a, b in A2A], "ce")
        q = ce[0].queue
        assert q is not None and all(p.queue is q for p in ce)
        assert q.exhaustive and q.orders == 6 ** 4
        assert 731 * 0.85 <= _total(ce) <= 943 * 1.15 and abs(_total(ce) / q.total_gb_per_s_median - 1) < 1e-9
        assert 677 * 0.95 <= q.total_gb_per_s_min <= 680 * 1.05  # every GPU's last copy into one GPU at once
        assert 1163 <= q.total_gb_per_s_max <= 1557 * 1.05  # the lucky order: no two copies into one GPU at once
        assert q.total_gb_per_s_min < q.total_gb_per_s_mean < q.total_gb_per_s_max
        assert {p.limited_by for p in ce} == {"copy engines"}
        # each copy: the expectation over the orders (by symmetry the same for all 12; measured flow medians 79-197)
        rates = [p.gb_per_s for p in ce]
        assert max(rates) - min(rates) < 1e-6 * max(rates) and 100 < rates[0] < 150
        assert "queue orders (all 1296 orders)" in q.text()


def test_one_gpu_to_several_peers_queues_into_one_gpu_shares(h200x4):
    """0 -> 1, 2, 3 at once: 387.9 / 394.6 GB/s in all (one copy's rate), flow medians 194 / 197.5 (the middle
    of 1/1, 1/2, 1/3); 1, 2 -> 0: 198 + 198, no queue (two issuers); a permutation keeps each copy's rate."""
    for size, total, flow in ((64 * MIB, 387.9, 194.1), (512 * MIB, 394.6, 197.5)):
        fan = h200x4.predict([(0, b, size) for b in (1, 2, 3)], "ce")
        assert abs(_total(fan) / total - 1) < 0.03
        assert all(abs(p.gb_per_s / flow - 1) < 0.03 for p in fan)  # E[finish] = 2 x one copy's time
        assert fan[0].queue is not None and fan[0].queue.orders == 6
        assert fan[0].queue.total_gb_per_s_min == pytest.approx(fan[0].queue.total_gb_per_s_max)  # one queue: one total
        into = h200x4.predict([(1, 0, size), (2, 0, size)], "ce")
        assert into[0].queue is None and {p.limited_by for p in into} == {""}
        assert all(abs(p.gb_per_s / 198.5 - 1) < 0.03 for p in into)
        ring = h200x4.predict([(a, (a + 1) % 4, size) for a in range(4)], "ce")
        assert ring[0].queue is None and 1524 * 0.97 < _total(ring) < 1547 * 1.03


def test_queue_matches_a_direct_enumeration(h200x4):
    """The queue model written out by hand for the all-to-all (each issuer one copy at a time at the pair rate;
    copies into one GPU share its ingress evenly): the same min, median and max as the twin's queues."""
    size = 64 * MIB
    one = h200x4.predict([(0, 1, size)], "ce")[0]
    latency_s, pair = one.latency_us * 1e-6, one.rate_gb_per_s * 1e9
    ingress = h200x4.predict([(1, 0, size), (2, 0, size)], "ce")[0].rate_gb_per_s * 2e9

    def makespan(orders):
        queues, left, t = [list(o) for o in orders], [float(size)] * 4, latency_s
        while any(queues):
            active = {g: q[0] for g, q in enumerate(queues) if q}
            into = [list(active.values()).count(d) for d in range(4)]
            rate = {g: min(pair, ingress / into[d]) for g, d in active.items()}
            dt = min(left[g] / rate[g] for g in active)
            t += dt
            for g in active:
                left[g] -= rate[g] * dt
                if left[g] <= 1e-3:
                    queues[g].pop(0)
                    left[g] = float(size)
        return t

    peers = [[d for d in range(4) if d != g] for g in range(4)]
    totals = sorted(12 * size / makespan(c) / 1e9 for c in itertools.product(*(itertools.permutations(p) for p in peers)))
    q = h200x4.predict([(a, b, size) for a, b in A2A], "ce")[0].queue
    assert q.total_gb_per_s_min == pytest.approx(totals[0], rel=1e-3)
    assert q.total_gb_per_s_max == pytest.approx(totals[-1], rel=1e-3)
    assert q.total_gb_per_s_mean == pytest.approx(statistics.mean(totals), rel=1e-3)


def test_two_gpus_copies_to_one_peer_queue_both_ways_do_not():
    """2 x H200 (docs/benchmarks.md "The mechanism on 2 GPUs"): four CE copies 0 -> 1 move together what one
    moves (395.1 GB/s), the i-th to finish waited for i-1 others; one copy each way: 774 GB/s, no queue."""
    model = FabricModel(synthetic_topology("nvswitch:2", "H200"))
    size = 512 * MIB
    one = model.predict([(0, 1, size)], "ce")[0]
    four = model.predict([(0, 1, size)] * 4, "ce")
    assert four[0].queue is not None and four[0].queue.orders == 24
    assert abs(_total(four) / 395.1 - 1) < 0.03
    service_s = size / (one.rate_gb_per_s * 1e9)
    # expected finish: latency + (1 + 2 + 3 + 4) / 4 services
    assert four[0].elapsed_s == pytest.approx(one.latency_us * 1e-6 + 2.5 * service_s, rel=1e-6)
    both = model.predict([(0, 1, size), (1, 0, size)], "ce")
    assert both[0].queue is None and abs(_total(both) / 774.1 - 1) < 0.03


def test_read_copies_queue_on_the_destination():
    """ce-read is issued by the destination (Method.issuer): copies read by one GPU queue there."""
    model = FabricModel(load(H200X4))
    reads = model.predict([(b, 0, 64 * MIB) for b in (1, 2, 3)], "ce-read")
    assert reads[0].queue is not None and {p.limited_by for p in reads} == {"copy engines"}
    writes = model.predict([(b, 0, 64 * MIB) for b in (1, 2, 3)], "ce-write")
    assert writes[0].queue is None


def test_kernel_copies_reach_a_share_of_each_link(h200x4):
    """sm-push, measured (twin before this change): one GPU to 2-3 peers 367-369 GB/s (394), into one GPU from
    two 374.5 (394), permutation 1445-1454 (1474.7), all-to-all 1412-1418 (1577.6). A mesh keeps a link per peer."""
    size = 512 * MIB
    fan = h200x4.predict([(0, b, size) for b in (1, 2, 3)], "sm-push")
    assert 367 * 0.98 < _total(fan) < 369 * 1.02
    into = h200x4.predict([(1, 0, size), (2, 0, size)], "sm-push")
    assert 374.5 * 0.97 < _total(into) < 374.5 * 1.01
    a2a = h200x4.predict([(a, b, size) for a, b in A2A], "sm-push")
    assert 1412 < _total(a2a) < 1418 * 1.05 and a2a[0].queue is None and {p.limited_by for p in a2a} == {""}
    ring = h200x4.predict([(a, (a + 1) % 4, size) for a in range(4)], "sm-push")
    assert abs(_total(ring) / 1474.7 - 1) < 0.01  # unchanged: one copy per link
    mesh = FabricModel(load_preset("mi300x-8"))  # one xGMI link per peer: each copy alone on its link
    alone = mesh.predict([(0, 1, size)], "sm-push")[0].gb_per_s
    fan8 = mesh.predict([(0, b, size) for b in range(1, 8)], "sm-push")
    assert _total(fan8) > 6 * alone


def test_eight_gpus_sample_the_orders_deterministically(monkeypatch):
    """8 GPUs: 7!^8 orders; a fixed-seed sample of SAMPLED_ORDERS, the same at every call."""
    model = FabricModel(load_preset("dgx-h100"))
    flows = [(a, b, 64 * MIB) for a in range(8) for b in range(8) if a != b]
    first, again = model.predict(flows, "ce"), FabricModel(load_preset("dgx-h100")).predict(flows, "ce")
    q = first[0].queue
    assert q is not None and not q.exhaustive and q.orders == issue_queues.SAMPLED_ORDERS
    assert q == again[0].queue and [p.elapsed_s for p in first] == [p.elapsed_s for p in again]
    assert "sampled" in q.text()


def test_amd_engines_and_a_switched_off_queue_do_not_queue():
    """copy_engine_queue.<vendor>: measured for NVIDIA only; AMD's SDMA engines are not modelled as a queue, and
    a user or calibration can switch NVIDIA's off."""
    amd = FabricModel(load_preset("mi300x-8"))
    preds = amd.predict([(0, b, 64 * MIB) for b in range(1, 8)], "ce")
    assert preds[0].queue is None and {p.limited_by for p in preds} == {""}
    off = FabricModel(load(H200X4), {"copy_engine_queue.nvidia": 0})
    preds = off.predict([(a, b, 64 * MIB) for a, b in A2A], "ce")
    assert preds[0].queue is None and _total(preds) > 1500


@pytest.mark.parametrize("why", ["no compiled event loop", "cluster-scale group"])
def test_without_order_simulation_the_issuer_shares_its_one_copy_rate(monkeypatch, why):
    """Where the orders are not simulated, an issuer's copies share its one-copy rate evenly: the queue's total
    for one issuer, still marked copy-engine bound, no spread."""
    if why == "no compiled event loop":
        monkeypatch.setattr(issue_queues.kernel, "available", lambda: False)
    else:
        monkeypatch.setattr(issue_queues, "MAX_QUEUED_COPIES", 2)
    model = FabricModel(load(H200X4))
    fan = model.predict([(0, b, 512 * MIB) for b in (1, 2, 3)], "ce")
    assert fan[0].queue is None and {p.limited_by for p in fan} == {"copy engines"}
    assert abs(_total(fan) / 394.6 - 1) < 0.03 and all(abs(p.gb_per_s * 3 / _total(fan) - 1) < 0.01 for p in fan)


def test_queue_orders_and_issuer_queues():
    assert issue_queues.issuer_queues([0, 0, 1, None, 1, 2]) == [[0, 1], [2, 4]]
    assert issue_queues.order_count([[0, 1, 2], [3, 4]]) == 12
    orders, exhaustive = issue_queues.queue_orders([[0, 1, 2], [3, 4]])
    assert exhaustive and len(orders) == 12 and len(set(orders)) == 12
    sampled, exhaustive = issue_queues.queue_orders([[0, 1, 2], [3, 4]], max_exact=5, sampled=7)
    assert not exhaustive and len(sampled) == 7
    assert sampled == issue_queues.queue_orders([[0, 1, 2], [3, 4]], max_exact=5, sampled=7)[0]
    assert all(sorted(o[0]) == [0, 1, 2] and sorted(o[1]) == [3, 4] for o in sampled)


def test_the_fit_is_retired():
    assert "ce_mesh_efficiency" not in FITS and "ce_mesh_efficiency" not in default_keys()
    assert ModelParams.defaults().copy_engine_queue("NVIDIA") and not ModelParams.defaults().copy_engine_queue("amd")


def test_sim_bench_reports_the_median_order_and_says_why():
    """The sim engine's group time is the median order's, and its notes carry the spread."""
    from linkscope.engines.sim import SimEngine

    topo = load(H200X4)
    plan = TransferPlan("all-to-all", "uni", "ce", tuple(Transfer(a, b, 64 * MIB) for a, b in A2A))
    result = SimEngine(topo).run(plan, 3, warmup=0, verify=False)
    q = FabricModel(topo).predict(plan)[0].queue
    assert result.group_elapsed_s == pytest.approx((q.elapsed_s_median,) * 3)
    assert any("queue orders" in n for n in result.notes)
    assert np.allclose([t.elapsed_s[0] for t in result.timings], result.timings[0].elapsed_s[0])


def test_model_predict_says_copy_engine_bound(capsys):
    from linkscope.cli import main

    assert main(["model", "predict", "--from", str(H200X4), "--method", "ce", "--pattern", "all-to-all",
                 "--sizes", "64MiB", "--json", "-"]) == 0
    rows = json.loads(capsys.readouterr().out)["predictions"]
    assert len(rows) == 12 and {r["limited_by"] for r in rows} == {"copy engines"}
    assert main(["model", "predict", "--from", str(H200X4), "--method", "ce", "--pattern", "all-to-all",
                 "--sizes", "64MiB"]) == 0
    assert "copy-engine bound" in capsys.readouterr().out
