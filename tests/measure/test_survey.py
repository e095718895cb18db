from dataclasses import replace

import pytest
from fakes import FakeEngine

from linkscope.measure.survey import SurveyOptions, run_survey
from linkscope.results.schema import Status
from linkscope.topology.synthetic import synthetic_topology

TOPO = synthetic_topology("nvswitch:4")
MiB = 1024**2
SMALL = SurveyOptions(size_bytes=16 * MiB, sweep_sizes_bytes=(4096, MiB, 16 * MiB))


def test_survey_runs_every_step_with_unique_groups_and_findings():
    record = run_survey(FakeEngine(TOPO), TOPO, SMALL)
    assert record.kind == "survey" and record.complete
    keys = {(m.method, m.pattern, m.direction) for m in record.measurements}
    for key in [("ce", "matrix", "uni"), ("ce", "matrix", "bi"), ("sm-push", "matrix", "uni"), ("sm-push", "matrix", "bi"),
                ("remote-read", "latency", "uni"), ("flag-pingpong", "latency", "uni"), ("h2d", "host", "uni"),
                ("d2h", "host", "uni"), ("ce", "ring", "uni"), ("ce", "all-to-one", "uni"), ("ce", "all-to-all", "uni"),
                ("ce", "sweep", "uni")]:
        assert key in keys
    for key in [("h2d-pageable", "host", "uni"), ("d2h-pageable", "host", "uni"), ("ce", "host", "bi"),
                ("local", "local", "uni"), ("h2d", "sweep", "uni"), ("d2h-pageable", "sweep", "uni")]:
        assert key in keys
    not_ok = [m for m in record.measurements if m.status is not Status.OK]
    # the fake engine offers every latency kind, host-read included: nothing is waived or fails
    assert not not_ok
    assert ("host-read", "latency", "uni") in keys
    # every concurrent group has its own index across steps
    groups = {}
    for m in record.measurements:
        groups.setdefault(m.group, set()).add((m.method, m.pattern, m.direction, m.size_bytes))
    assert all(len(v) == 1 for v in groups.values())
    assert [m.size_bytes for m in record.measurements if m.pattern == "sweep" and m.method == "ce"] == [4096, MiB, 16 * MiB]
    text = " ".join(record.findings)
    assert "Slowest GPU pair" not in text and "uniform" in text and "All-to-one (ce" in text  # equal pairs: no "slowest"
    assert "Device remote-read latency" in text and "Host <-> device" in text
    assert record.options["survey"]["size_bytes"] == 16 * MiB


def test_survey_on_one_gpu_checks_the_host_link_and_skips_pair_steps():
    topo = synthetic_topology("nvswitch:1")
    record = run_survey(FakeEngine(topo), topo, SMALL)
    assert not [m for m in record.measurements if m.pattern in ("matrix", "ring", "all-to-one", "all-to-all")]
    assert not [m for m in record.measurements if m.pattern == "latency" and m.method != "host-read"]
    ok = {(m.method, m.pattern, m.direction) for m in record.measurements if m.status is Status.OK}
    assert {("h2d", "host", "uni"), ("d2h", "host", "uni"), ("h2d-pageable", "host", "uni"), ("d2h-pageable", "host", "uni"),
            ("ce", "host", "bi"), ("local", "local", "uni"), ("h2d", "sweep", "uni")} <= ok
    sweep = [m for m in record.measurements if m.pattern == "sweep"]
    assert {m.method for m in sweep} == {"h2d", "d2h", "h2d-pageable", "d2h-pageable"} and len(sweep) == 12
    text = " ".join(record.findings)
    assert "One GPU (GPU0)" in text and "Host <-> device, GPU0: pinned h2d" in text and "both ways at once" in text
    assert "device-local copy" in text and "Slowest GPU pair" not in text


def test_simulated_one_gpu_survey_does_the_same_steps_labelled_simulated():
    from linkscope.engines.sim import SimEngine

    topo = synthetic_topology("nvswitch:1")
    record = run_survey(SimEngine(topo), topo, SMALL)
    assert record.provenance.value == "simulated" and all(m.provenance.value == "simulated" for m in record.measurements)
    keys = {(m.method, m.pattern, m.direction) for m in record.measurements if m.status is Status.OK}
    assert {("h2d", "host", "uni"), ("d2h-pageable", "host", "uni"), ("ce", "host", "bi"), ("local", "local", "uni")} <= keys
    assert record.findings[0].startswith("SIMULATED")


def test_the_pcie_probe_runs_after_the_host_copies_and_feeds_the_findings():
    topo = synthetic_topology("nvswitch:1")
    calls = []

    def probe():
        calls.append(True)
        return {0: {"gen": 3, "width": 16, "max_gen": 5, "max_width": 16}}

    record = run_survey(FakeEngine(topo), topo, SMALL, pcie_probe=probe)
    assert calls == [True]
    assert record.extra["pcie_after_host_copies"] == {"0": {"gen": 3, "width": 16, "max_gen": 5, "max_width": 16}}
    assert any("GPU0 PCIe link: runs Gen3 of Gen5 possible (right after the host copies)" in f for f in record.findings)

    def broken():
        raise RuntimeError("NVML went away")

    record = run_survey(FakeEngine(topo), topo, SMALL, pcie_probe=broken)
    assert record.extra["pcie_after_host_copies_error"] == "NVML went away" and record.complete


def test_survey_interrupt_writes_what_was_measured():
    engine = FakeEngine(TOPO, interrupt_after_runs=14)  # inside the ce bi matrix step
    seen = []
    with pytest.raises(KeyboardInterrupt):
        run_survey(engine, TOPO, SMALL, on_partial=seen.append)
    partial = seen[-1]  # earlier ones: the checkpoint after every finished step
    assert not any(p.complete for p in seen) and len(seen) >= 2
    assert [len(p.measurements) for p in seen] == sorted(len(p.measurements) for p in seen)
    assert len([m for m in partial.measurements if m.direction == "uni"]) == 12
    assert len([m for m in partial.measurements if m.direction == "bi"]) == 6  # two bi pairs: 2 flows + 1 total each
    assert any("interrupted" in f for f in partial.findings)


def test_survey_progress_is_monotonic():
    calls = []
    run_survey(FakeEngine(TOPO), TOPO, replace(SMALL, peer_methods=("ce",)), progress=lambda d, t, l: calls.append((d, t)))
    done = [d for d, _ in calls]
    assert done == sorted(done) and calls[-1][0] == calls[-1][1]


def test_a_step_that_does_not_fit_is_waived_and_the_rest_is_kept():
    GiB = 1024**3
    opts = replace(SMALL, size_bytes=GiB, sweep_sizes_bytes=(MiB, GiB))
    record = run_survey(FakeEngine(TOPO, free_bytes=2 * GiB), TOPO, opts)  # all-to-one needs 3 GiB on the receiver
    waived = [m for m in record.measurements if m.status is Status.WAIVED and m.method != "host-read"]
    assert {m.pattern for m in waived} == {"all-to-one", "all-to-all"}
    assert all("does not fit in GPU" in m.reason and m.src == "*" for m in waived)
    assert any(m.pattern == "sweep" and m.status is Status.OK for m in record.measurements)
    assert len({m.group for m in record.measurements}) == len({(m.group, m.pattern) for m in record.measurements})


def test_a_first_step_that_does_not_fit_is_refused():
    from linkscope.errors import ConfigError

    with pytest.raises(ConfigError, match="does not fit"):
        run_survey(FakeEngine(TOPO, free_bytes=1024), TOPO, SMALL)


# ---- self-consistency (issue 25): two steps timing the same path alone must agree ------------------
def _slow_host_sweep(times: int | None):
    """h2d host->0 at the survey size, in the host sweep only, reads half speed (``times`` first calls;
    None: every call): an injected inconsistent measurement."""
    calls = [0]

    def slow(plan):
        t = plan.transfers[0]
        if plan.pattern == "sweep" and plan.method == "h2d" and t.size_bytes == SMALL.size_bytes:
            calls[0] += 1
            if times is None or calls[0] <= times:
                return 0.5
        return 1.0
    return slow


def test_survey_flags_a_persistent_inconsistency_in_findings_and_record():
    engine = FakeEngine(TOPO, slow=_slow_host_sweep(None))
    record = run_survey(engine, TOPO, SMALL)
    (check,) = record.extra["consistency"]
    assert check["method"] == "h2d" and check["src"] == "host" and check["dst"] == 0 and not check["resolved"]
    assert set(check["steps"]) == {"host", "host sweep GPU0"} and check["again_gb_per_s"] is not None
    text = " ".join(record.findings)
    assert "Inconsistent: h2d host->0 at 16 MiB" in text and "still apart" in text
    marked = [m for m in record.measurements if "inconsistent" in (m.extra or {})]
    assert len(marked) == 2 and {m.pattern for m in marked} == {"host", "sweep"}
    # measured once more each (the sweep's entry and the host step's entry), not more
    again = [p for p, *_ in engine.runs if p.label.endswith("again")]
    assert len(again) == 2


def test_survey_remeasures_a_transient_and_keeps_both_readings():
    record = run_survey(FakeEngine(TOPO, slow=_slow_host_sweep(1)), TOPO, SMALL)
    (check,) = record.extra["consistency"]
    assert check["resolved"] and check["first_gb_per_s"][0] != check["first_gb_per_s"][1]
    (fixed,) = [m for m in record.measurements if "remeasured" in (m.extra or {}) and m.pattern == "sweep"]
    assert fixed.bandwidth.median > 1.5 * fixed.extra["remeasured"]["first_median_gb_per_s"]
    assert any(f.startswith("Re-measured h2d host->0 at 16 MiB") for f in record.findings)


def test_a_consistent_survey_has_no_consistency_entries():
    record = run_survey(FakeEngine(TOPO), TOPO, SMALL)
    assert "consistency" not in record.extra
    assert not any("Inconsistent" in f or "Re-measured" in f for f in record.findings)


def test_two_socket_pcie_survey_runs_concurrency_per_peer_island_and_staged_and_waives_peer_latency():
    from linkscope.engines.sim import SimEngine
    from linkscope.topology.presets import load_preset

    topo = load_preset("pcie-8gpu-2socket")  # peer access within a socket only (p2p_max_level)
    record = run_survey(SimEngine(topo, params=None), topo, SMALL)
    ok = [m for m in record.measurements if m.status is Status.OK]
    for pattern in ("ring", "all-to-one", "all-to-all"):
        ce = [m for m in ok if m.pattern == pattern and m.method == "ce" and m.scope == "transfer"]
        assert ce and all((m.src < 4) == (m.dst < 4) for m in ce)  # within one socket's island
        staged = [m for m in ok if m.pattern == pattern and m.method == "ce-nopeer" and m.scope == "transfer"]
        assert any((m.src < 4) != (m.dst < 4) for m in staged)  # across the sockets, through the host
        assert not [m for m in record.measurements if m.pattern == pattern and m.status is not Status.OK]
    for kind in ("remote-read", "flag-pingpong"):
        cross = [m for m in record.measurements if m.method == kind and (m.src < 4) != (m.dst < 4)]
        assert len(cross) == 32 and all(m.status is Status.WAIVED and "needs a peer mapping" in m.reason for m in cross)
    text = " ".join(record.findings)
    assert "Peer access (P2P) is missing for 16 GPU pairs" in text and "GPU0–GPU1" not in text
    assert "within GPU0–GPU3 and within GPU4–GPU7" in text
    assert "All-to-all (ce-nopeer" in text and "Ring (ce," in text
