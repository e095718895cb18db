from pathlib import Path

import pytest

from linkscope.results.findings import findings
from linkscope.results.schema import Measurement, RunProvenance, RunRecord, Status
from linkscope.results.stats import Stats


def bw(src, dst, value, *, pattern="matrix", direction="uni", scope="transfer", method="ce", theo=478.0, size=256 << 20, **kw):
    return Measurement(src=src, dst=dst, method=method, pattern=pattern, direction=direction, size_bytes=size,
                       bandwidth=Stats(n=5, median=value, min=value, max=value, mean=value, stddev=0.0), scope=scope,
                       extra={"theoretical_gb_per_s": theo} if theo else {}, **kw)


def record(*ms, provenance=RunProvenance.MEASURED):
    return RunRecord(kind="survey", provenance=provenance, created_utc="", measurements=tuple(ms))


def test_slowest_pair_efficiency_and_uniformity():
    r = record(bw(0, 1, 400.0), bw(1, 0, 396.0), bw(0, 2, 300.0), bw(2, 0, 398.0))
    text = findings(r, uniform_topology=True)
    assert text[0] == ("Slowest GPU pair (ce, one way, 256 MiB): GPU0 -> GPU2 at 300.0 GB/s, 25% below the fastest "
                       "(GPU0 -> GPU1, 400.0 GB/s).")
    assert "not uniform for ce" in text[1] and "degraded link" in text[1]
    assert text[2].startswith("ce one-way copies reach 83% of the theoretical 478.0 GB/s (median over 4 pairs; 63%–84%)")


def test_uniform_fabric_and_simulated_label():
    r = record(bw(0, 1, 400.0), bw(1, 0, 398.0), provenance=RunProvenance.SIMULATED)
    text = findings(r, uniform_topology=True)
    assert text[0].startswith("SIMULATED")
    assert any("looks uniform for ce" in t for t in text)


def test_contention_factor_against_alone():
    r = record(bw(0, 1, 400.0), bw(2, 1, 400.0), bw(0, 1, 200.0, pattern="all-to-one"), bw(2, 1, 200.0, pattern="all-to-one"),
               bw("*", 1, 400.0, pattern="all-to-one", scope="total"))
    line = next(t for t in findings(r) if t.startswith("All-to-one"))
    assert "each flow gets 0.50× its bandwidth alone (median over 2 flows)" in line
    assert "aggregate rate per receiver (bytes / elapsed) 400.0 GB/s (84% of the theoretical 478.0 GB/s)" in line


def test_missing_peer_access_latency_and_errors():
    r = record(
        Measurement(src=0, dst=3, method="ce", pattern="matrix", direction="uni", size_bytes=8, status=Status.WAIVED,
                    reason="no peer access between GPU 0 and GPU 3"),
        Measurement(src=0, dst=1, method="remote-read", pattern="latency", direction="uni", size_bytes=0,
                    latency=Stats(n=3, median=0.82, min=0.8, max=0.9, mean=0.83, stddev=0.01)),
        Measurement(src=1, dst=0, method="ce", pattern="matrix", direction="uni", size_bytes=8, status=Status.ERROR,
                    reason="CUDARuntimeError: boom"),
    )
    text = findings(r)
    assert any(t.startswith("Peer access (P2P) is missing for 1 GPU pair (GPU0–GPU3)") for t in text)
    assert "Device remote-read latency (round trip): median 0.82 us." in text
    assert text[-1] == "1 entry failed; the first: ce 1 -> 0: CUDARuntimeError: boom"


def test_a_reason_that_only_mentions_ce_nopeer_is_not_missing_peer_access():
    r = record(
        bw(0, 1, 400.0),
        Measurement(src=0, dst=1, method="sm-pull", pattern="matrix", direction="uni", size_bytes=8, status=Status.WAIVED,
                    reason="method 'sm-pull' is not offered by the sim engine (it offers: ce, ce-nopeer, staged)"),
    )
    text = findings(r)
    assert not any(t.startswith("Peer access (P2P) is missing") for t in text)
    assert "Peer access works between every GPU pair measured." in text


def _pcie_record(links, *ms, extra=None):
    devices = [{"id": f"gpu{g}", "kind": "gpu", "index": g, "attributes": {"pcie_link": link}} for g, link in links.items()]
    return RunRecord(kind="survey", provenance=RunProvenance.MEASURED, created_utc="", measurements=tuple(ms),
                     topology={"devices": devices}, extra=extra or {})


def test_pcie_link_narrower_than_possible_or_in_a_slower_slot_is_a_finding():
    link = {"current_generation": 4, "current_width": 8, "max_generation": 4, "max_width": 16, "gpu_max_generation": 5}
    text = " ".join(findings(_pcie_record({0: link})))
    assert "GPU0 PCIe link: runs x8 of x16 possible" in text
    assert "the GPU supports Gen5 but the slot or platform allows only Gen4" in text
    narrow_slot = {"current_generation": 4, "current_width": 8, "max_generation": 4, "max_width": 8}
    assert "narrower slot or riser" in " ".join(findings(_pcie_record({0: narrow_slot})))


def test_idle_lower_generation_is_not_called_downtrained_unless_bandwidth_or_the_loaded_state_says_so():
    idle = {"current_generation": 1, "current_width": 16, "max_generation": 5, "max_width": 16}
    fast = bw("host", 0, 55.0, pattern="host", method="h2d", theo=63.0)
    text = " ".join(findings(_pcie_record({0: idle}, fast)))
    assert "downtrained" not in text and "Gen1 x16 at discovery, Gen5 x16 possible: idle GPUs lower" in text
    slow = bw("host", 0, 6.5, pattern="host", method="h2d", theo=63.0)
    text = " ".join(findings(_pcie_record({0: idle}, slow)))
    assert "runs Gen1 of Gen5 possible (at discovery); pinned copies reach 6.5 GB/s of the 63.0 GB/s" in text
    loaded = {"0": {"gen": 5, "width": 16}}
    text = " ".join(findings(_pcie_record({0: idle}, fast, extra={"pcie_after_host_copies": loaded})))
    assert "GPU0's PCIe link: Gen5 x16, its maximum (read right after the host copies)." in text and "downtrained" not in text


def test_host_line_summary_names_pinned_pageable_both_ways_local_and_latency():
    lat = Measurement(src="host", dst=0, method="host-read", pattern="latency", direction="uni", size_bytes=0,
                      latency=Stats(n=5, median=1.21, min=1.2, max=1.3, mean=1.22, stddev=0.01))
    r = record(bw("host", 0, 55.5, pattern="host", method="h2d", theo=63.0), bw(0, "host", 55.3, pattern="host", method="d2h", theo=63.0),
               bw("host", 0, 20.0, pattern="host", method="h2d-pageable"), bw(0, "host", 18.0, pattern="host", method="d2h-pageable"),
               bw("host", 0, 110.0, pattern="host", method="ce", direction="bi", scope="total"),
               bw(0, 0, 1500.0, pattern="local", method="local", theo=None), lat)
    (line,) = [t for t in findings(r) if t.startswith("Host <-> device")]
    assert line == ("Host <-> device, GPU0: pinned h2d 55.5 GB/s (88% of 63.0 GB/s), pinned d2h 55.3 GB/s (88% of 63.0 GB/s), "
                    "pageable h2d 20.0 GB/s, pageable d2h 18.0 GB/s, both ways at once (pair total) 110.0 GB/s, "
                    "device-local copy 1500.0 GB/s, host-read latency (round trip) 1.21 us.")
    assert not any("copy latency" in t for t in findings(r))


def test_no_slowest_pair_among_equal_pairs():
    text = findings(record(bw(0, 1, 393.1), bw(1, 0, 393.1)))
    assert not any("Slowest" in t for t in text) and any("looks uniform" in t for t in text)


def test_a_pair_measured_with_peer_access_is_never_called_missing():
    # a ring over GPUs 0,1,4 is waived for the one pair 1-4; its entry's ends (0 -> 1) were measured with ce
    r = record(
        bw(0, 1, 26.9), bw(1, 0, 26.9),
        Measurement(src=0, dst=1, method="ce", pattern="ring", direction="uni", size_bytes=8, status=Status.WAIVED,
                    reason="no peer access between GPU 1 and GPU 4; method 'ce' needs it (try ce-nopeer)"),
        Measurement(src=0, dst=4, method="ce", pattern="matrix", direction="uni", size_bytes=8, status=Status.WAIVED,
                    reason="no peer access between GPU 0 and GPU 4"),
    )
    line = next(t for t in findings(r) if t.startswith("Peer access"))
    assert line.startswith("Peer access (P2P) is missing for 2 GPU pairs (GPU0–GPU4, GPU1–GPU4)")
    assert "GPU0–GPU1" not in line


def test_uniform_speaks_only_for_the_pairs_measured_and_names_the_others():
    waived = [Measurement(src=a, dst=b, method="ce", pattern="matrix", direction="uni", size_bytes=256 << 20,
                          status=Status.WAIVED, reason=f"no peer access between GPU {a} and GPU {b}")
              for a, b in ((0, 2), (2, 0), (0, 3), (3, 0), (1, 2), (2, 1), (1, 3), (3, 1))]
    r = record(bw(0, 1, 26.9), bw(1, 0, 26.9), bw(2, 3, 26.9), bw(3, 2, 26.9), *waived)
    same_switch = {(a, b): ("PIX", 31.5) for a, b in ((0, 1), (1, 0), (2, 3), (3, 2))}
    cross = {(a, b): ("SYS", 20.0) for a in range(4) for b in range(4) if a != b and (a, b) not in same_switch}
    line = next(t for t in findings(r, uniform_topology=False, pair_classes={**same_switch, **cross}) if "uniform" in t)
    assert "over the pairs measured: the 4 ordered pairs" in line
    assert "not measured: 4 GPU pairs (GPU0–GPU2, GPU0–GPU3, GPU1–GPU2, GPU1–GPU3)" in line
    # the measured pairs are all PIX: the topology's other levels are not held against them
    assert "different link levels" not in line


# ---- issue 39: each finding fed a record where its old statement would be false ------------------

def _topo(*gpus, attrs=None):
    return {"devices": [{"kind": "gpu", "index": g, "vendor": v, "attributes": dict(attrs or {})} for g, v in gpus]}


def test_a_group_total_is_called_an_aggregate_rate_and_the_flows_sum_is_given_apart():
    # a ring whose flows add to 83.3 while bytes / elapsed is 61.1 (the slowest flow sets the elapsed time):
    # the old text called 61.1 the group's total
    flows = [bw(a, (a + 1) % 4, v, pattern="ring", group=7) for a, v in enumerate((30.0, 15.3, 20.0, 18.0))]
    total = bw("*", "*", 61.1, pattern="ring", scope="total", group=7, theo=None)
    line = next(t for t in findings(record(*flows, total)) if t.startswith("Ring"))
    assert "the flows' rates add to 83.3 GB/s" in line
    assert "aggregate rate (bytes / elapsed) 61.1 GB/s, lower than the sum because the slowest flow sets the elapsed time" in line
    assert "total for the group" not in line
    # where the flows do add to the aggregate, no "lower" clause
    even = [bw(a, (a + 1) % 4, 20.0, pattern="ring", group=8) for a in range(4)]
    line = next(t for t in findings(record(*even, bw("*", "*", 80.0, pattern="ring", scope="total", group=8, theo=None)))
                if t.startswith("Ring"))
    assert "lower than the sum" not in line and "add to 80.0 GB/s" in line


def test_a_pattern_run_on_each_peer_island_says_so_and_names_the_islands():
    waiver = Measurement(src=0, dst=2, method="ce", pattern="matrix", direction="uni", size_bytes=8, status=Status.WAIVED,
                         reason="no peer access between GPU 0 and GPU 2")
    waivers = [waiver] + [waiver.with_(src=a, dst=b, reason=f"no peer access between GPU {a} and GPU {b}")
                          for a, b in ((0, 3), (1, 2), (1, 3))]
    island1 = [bw(0, 1, 25.0, pattern="ring", group=1), bw(1, 0, 25.0, pattern="ring", group=1),
               bw("*", "*", 50.0, pattern="ring", scope="total", group=1, theo=None)]
    island2 = [bw(2, 3, 25.0, pattern="ring", group=2), bw(3, 2, 25.0, pattern="ring", group=2),
               bw("*", "*", 50.0, pattern="ring", scope="total", group=2, theo=None)]
    line = next(t for t in findings(record(*waivers, *island1, *island2)) if t.startswith("Ring"))
    assert "on 2 GPU groups one after another (GPU0, GPU1; GPU2, GPU3, the peer islands" in line
    assert "per group" in line
    # one group over every GPU: no island wording
    one = [bw(a, (a + 1) % 4, 25.0, pattern="ring", group=3) for a in range(4)]
    line = next(t for t in findings(record(*one)) if t.startswith("Ring"))
    assert "island" not in line and "group" not in line.split(":")[0]


def test_non_uniform_states_the_spread_the_links_predict_and_the_engine_cap():
    # MI250X-like: links of 50, 100 and 200 GB/s predict 4x; SDMA-capped copies measure 38.5-50 (1.3x)
    rates = {(0, 1): (50.0, 200.0), (1, 0): (50.0, 200.0), (0, 2): (38.5, 50.0), (2, 0): (38.5, 50.0),
             (1, 2): (50.0, 100.0), (2, 1): (50.0, 100.0)}
    levels = {200.0: "XGMI4", 100.0: "XGMI2", 50.0: "XGMI1"}
    r = record(*[bw(a, b, v, theo=t) for (a, b), (v, t) in rates.items()]).with_(topology=_topo((0, "amd"), (1, "amd"), (2, "amd")))
    classes = {k: (levels[t], t) for k, (_, t) in rates.items()}
    line = next(t for t in findings(r, uniform_topology=False, pair_classes=classes) if "not uniform" in t)
    assert "the topology's link levels predict 50.0 GB/s to 200.0 GB/s (4.0x), measured 1.3x" in line
    assert "ce reaches only 25% of the widest links (200.0 GB/s): each copy is capped near 50 GB/s by the SDMA engine" in line
    assert "as the topology's link levels predict" not in line
    # the same links with copies that scale with them: "as predicted", no cap
    scaling = {k: (0.8 * t, t) for k, (_, t) in rates.items()}
    r = record(*[bw(a, b, v, theo=t) for (a, b), (v, t) in scaling.items()]).with_(topology=_topo((0, "amd"), (1, "amd"), (2, "amd")))
    line = next(t for t in findings(r, uniform_topology=False, pair_classes=classes) if "not uniform" in t)
    assert "(4.0x), measured 4.0x, as predicted" in line and "capped" not in line


def test_device_local_copy_is_measured_against_this_gpu_models_facts_not_stated_bare():
    from linkscope.topology.gpufacts import gpu_facts

    local = [bw(g, g, 100.0, pattern="local", theo=None) for g in (0, 1)]
    topo = {"devices": [{"kind": "gpu", "index": g, "vendor": "nvidia", "name": "Tesla K80"} for g in (0, 1)]}
    line = next(t for t in findings(record(*local).with_(topology=topo)) if t.startswith("Host"))
    k80 = gpu_facts("Tesla K80")
    assert k80 is not None and k80.local_copy_gb_per_s
    assert f"device-local copy 100.0 GB/s ({100 / k80.local_copy_gb_per_s:.0%} of the {k80.local_copy_gb_per_s:.1f} GB/s" in line
    unknown = {"devices": [{"kind": "gpu", "index": g, "vendor": "nvidia", "name": "Mystery GPU"} for g in (0, 1)]}
    sim = record(*local, provenance=RunProvenance.SIMULATED).with_(topology=unknown)
    line = next(t for t in findings(sim) if t.startswith("Host"))
    assert "the model's default memory bandwidth: no facts for GPU model 'Mystery GPU'" in line


def test_latency_names_a_round_trip_and_a_one_way_time():
    lat = Stats(n=3, median=2.0, min=2.0, max=2.0, mean=2.0, stddev=0.0)
    r = record(Measurement(src=0, dst=1, method="remote-read", pattern="latency", direction="uni", size_bytes=0, latency=lat),
               Measurement(src=0, dst=1, method="flag-pingpong", pattern="latency", direction="uni", size_bytes=0, latency=lat))
    text = findings(r)
    assert "Device remote-read latency (round trip): median 2.00 us." in text
    assert "Flag latency (one way): median 2.00 us." in text


# --- findings of old records are derived again (issue 39) -------------------------------------------

OLD_SURVEY = Path(__file__).resolve().parents[1] / "fixtures" / "recordings" / "h200x4-2026-11-28" / "linkscope" / "survey.json"


def _sim_survey(preset: str) -> RunRecord:
    from linkscope.engines.sim import SimEngine
    from linkscope.measure.survey import SurveyOptions, run_survey
    from linkscope.topology.presets import load_preset

    topo = load_preset(preset)
    return run_survey(SimEngine(topo, params=None), topo, SurveyOptions(size_bytes=1 << 24, sweep_sizes_bytes=(1 << 24,)))


@pytest.mark.parametrize("preset", ["mi250x-8gcd", "k80-16", "pcie-8gpu-2socket", "hgx-h200-4"])
def test_every_sentence_of_a_survey_is_told_from_the_notes(preset):
    """A report re-derives exactly what ``findings`` makes: each of its sentences is recognised."""
    from linkscope.results.findings import findings_for, is_derived
    from linkscope.topology.io import from_dict

    r = _sim_survey(preset)
    made = findings_for(r, from_dict(dict(r.topology)))
    assert made and [f for f in made if not is_derived(f)] == []


def test_every_sentence_of_the_constructed_cases_is_recognised_and_notes_are_not():
    from linkscope.results.findings import is_derived

    cases = [record(bw(0, 1, 400.0), bw(1, 0, 396.0), bw(0, 2, 300.0), bw(2, 0, 398.0)),
             record(bw(0, 1, 400.0), bw(1, 0, 398.0), provenance=RunProvenance.SIMULATED),
             record(Measurement(src=0, dst=3, method="ce", pattern="matrix", direction="uni", size_bytes=8,
                                status=Status.WAIVED, reason="no peer access between GPU 0 and GPU 3"),
                    Measurement(src=1, dst=0, method="ce", pattern="matrix", direction="uni", size_bytes=8,
                                status=Status.ERROR, reason="boom")).with_(complete=False)]
    made = [f for r in cases for f in findings(r, uniform_topology=True)]
    assert len(made) >= 5 and [f for f in made if not is_derived(f)] == []
    notes = ["Re-measured d2h-pageable 0->host at 512 MiB: 'host' read 11.3 GB/s and 'host sweep GPU0' 14.5.",
             "P2P health: IOMMU: off.", "P2P routing health: clean.", "interrupted: ce finished",
             "GPU0 NVLink corrected-error counters grew during 15 steps on links 0, 1.",
             "GPU0 PCIe link: ok: no counter grew.", "GPU1 PCIe link runs below its width: x8 of x16."]
    assert [n for n in notes if is_derived(n)] == []


def test_an_old_survey_gets_todays_statements_and_keeps_its_notes():
    """The 4 x H200 survey of 2026-11-28 was written with "total for the group" (bytes / elapsed called a
    total) and "One-way flag latency"; re-derived, it says aggregate rate and what the flows add to, and
    keeps its re-measurement and health notes."""
    from linkscope.results.findings import rederived
    from linkscope.results.io import load

    old = load(OLD_SURVEY)
    assert any("total for the group" in f for f in old.findings)
    now = rederived(old)
    assert not any("total for the group" in f for f in now)
    ring = next(f for f in now if f.startswith("Ring ("))
    assert "the flows' rates add to" in ring and "aggregate rate (bytes / elapsed)" in ring
    assert any(f.startswith("Re-measured d2h-pageable") for f in now)
    assert sum(f.startswith("P2P health: ") for f in now) == sum(f.startswith("P2P health: ") for f in old.findings) > 0
    assert any(f.startswith("Flag latency (one way)") for f in now)


def test_a_borrowed_device_local_figure_is_replaced_by_the_facts_of_the_gpu():
    """An old K80 record said "device-local copy 1483.4 GB/s" (an H200 figure, every preset got it):
    the report states today's sentence, from the K80's own row of the facts table."""
    from linkscope.results.findings import rederived

    r = _sim_survey("k80-16")
    stale = tuple(f for f in r.findings if not f.startswith("Host")) + ("Host <-> device per GPU (median): device-local copy 1483.4 GB/s.",)
    now = rederived(r.with_(findings=stale))
    host = [f for f in now if f.startswith("Host <-> device")]
    assert len(host) == 1 and "1483.4" not in host[0] and "Tesla K80" in host[0]


def test_a_bench_record_keeps_its_notes():
    from linkscope.results.findings import rederived

    r = RunRecord(kind="bench", provenance=RunProvenance.MEASURED, created_utc="", measurements=(bw(0, 1, 400.0),),
                  findings=("nccl-tests text: 2 ranks",))
    assert rederived(r) == ("nccl-tests text: 2 ranks",)
