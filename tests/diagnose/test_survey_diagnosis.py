"""The survey with its diagnosis: health section, link counters sampled around each step, the
host-bounce check and the suspect, on the synthetic dual-socket PCIe machine with the fake engine
(real-shaped NVML fake for the counters)."""
from __future__ import annotations

from fakes import FakeEngine

from linkscope.counters.nvml import PynvmlSource
from linkscope.diagnose import bounce, suspect
from linkscope.diagnose.gather import HealthInputs
from linkscope.diagnose.survey import SurveyDiagnostics
from linkscope.discovery import nvml, pcihealth, sysfs
from linkscope.measure.survey import SurveyOptions, run_survey
from linkscope.results.schema import Measurement, RunProvenance, RunRecord
from linkscope.results.stats import Stats
from tests.diagnose.test_health import _machine
from tests.discovery import discovery_fakes as fakes

MiB = 1024**2
SMALL = SurveyOptions(size_bytes=16 * MiB, sweep_sizes_bytes=(MiB, 16 * MiB), concurrent_patterns=())


def _setup(tmp_path, acs=None):
    root = _machine(tmp_path, acs=acs)
    reader = sysfs.SysReader(root)
    sysfs_facts = sysfs.read_facts(root, reader)
    health = pcihealth.read_facts(sysfs_facts["pci"], reader=reader)
    fake_nvml = fakes.pcie_2s_nvml()
    fake_nvml.p2p = {}
    nvml_facts = nvml.read_facts(fake_nvml, cpu_count=128, hostname="pcie-2s")
    topology = nvml.facts_to_topology(nvml_facts, sysfs_facts)
    inputs = HealthInputs(sysfs_facts, health, {"nvidia": nvml_facts})
    return topology, inputs, fake_nvml


def _bouncing_engine(topology, fake_nvml, bouncing=frozenset({(0, 1)})):
    """Host-staged methods run at 30 % of the route; ce on the ``bouncing`` pairs too; ce on
    0->1 adds PCIe replays on GPU1 (NVML index 1) as a flaky link would."""
    def slow(plan):
        pair = next(((t.src, t.dst) for t in plan.transfers), None)
        if plan.method == "ce" and plan.pattern == "matrix" and pair == (0, 1):
            fake_nvml.gpus[1].pcie_replay += 3
        if plan.method in ("ce-nopeer", "staged-pinned"):
            return 0.3
        if plan.method == "ce" and pair in bouncing and plan.pattern == "matrix":
            return 0.3
        return 1.0
    return FakeEngine(topology, slow=slow)


def test_survey_diagnosis_names_the_acs_port_the_counters_and_the_step(tmp_path):
    topology, inputs, fake_nvml = _setup(tmp_path, acs={"0000:02:01.0": 0x1D})
    diag = SurveyDiagnostics(topology, inputs=inputs, source=PynvmlSource(fake_nvml))
    record = run_survey(_bouncing_engine(topology, fake_nvml), topology, SMALL, diagnostics=diag)
    assert "p2p routing check" in record.options["steps"]
    checked = {(m.method, m.src, m.dst) for m in record.measurements if m.pattern == "p2p-check"}
    assert ("ce-nopeer", 0, 1) in checked and ("staged-pinned", 6, 7) in checked and len(checked) == 2 * 28
    text = "\n".join(record.findings)
    assert "GPU0->GPU1: peer copies bounce through the host" in text
    assert "Likely cause: ACS RR+CR on switch downstream port 0000:02:01.0" in text and "setpci" in text
    assert "GPU1 PCIe link error counters grew during 'ce matrix uni': replay +3" in text
    assert record.extra["health"]["clean"] is False
    assert record.extra["link_errors"]["steps"][0]["step"] == "ce matrix uni"
    elements = [s["element"] for s in record.extra["suspects"]]
    assert elements == ["PCIe switch downstream port 0000:02:01.0", "the PCIe link of GPU1 (slot, riser or cable)"]


def test_clean_machine_survey_gets_a_clean_bill_and_quiet_counters(tmp_path):
    topology, inputs, fake_nvml = _setup(tmp_path)
    diag = SurveyDiagnostics(topology, inputs=inputs, source=PynvmlSource(fake_nvml), peer_check=False)
    record = run_survey(FakeEngine(topology), topology, SMALL, diagnostics=diag)
    assert "p2p routing check" not in record.options["steps"]
    text = "\n".join(record.findings)
    assert "P2P routing health: clean" in text
    assert "Link error counters (read before the first step and after each of the" in text and "none grew" in text
    assert "Suspect" not in text and "bounce" not in text


def _m(method, src, dst, gb, size=512 * MiB, pattern="matrix"):
    return Measurement(src=src, dst=dst, method=method, pattern=pattern, direction="uni", size_bytes=size,
                       bandwidth=Stats.from_samples([gb, gb, gb]))


def _record(*ms):
    return RunRecord(kind="bench", provenance=RunProvenance.MEASURED, created_utc="2026-11-25T18:00:00Z",
                     measurements=tuple(ms))


def test_bounce_needs_ce_no_faster_than_a_host_path_at_the_same_size():
    record = _record(
        _m("ce", 0, 1, 24.0), _m("ce-nopeer", 0, 1, 23.5, pattern="p2p-check"),
        _m("ce", 1, 0, 48.0), _m("staged-pinned", 1, 0, 20.0),
        _m("ce", 2, 3, 20.0), _m("staged-pinned", 2, 3, 20.0, size=MiB))
    found = bounce.find_bounces(record)
    assert [(b.src, b.dst, b.reference) for b in found] == [(0, 1, "ce-nopeer")]
    assert bounce.explain(found[0], None).endswith("no health facts to name a cause (run 'linkscope topo --health' on the machine).")


def test_slow_pairs_are_the_verdict_cores_low_ones_and_the_suspect_is_the_gpu_they_share():
    from linkscope.judge.expect import Judge
    from linkscope.topology.synthetic import synthetic_topology

    topo = synthetic_topology("nvswitch:4")
    twin = Judge(topo).expect(_m("ce", 0, 1, 1.0)).twin
    assert twin and twin > 100  # the twin's ce on NV18 through the switch plane
    ms = [_m("ce", a, b, twin if 3 not in (a, b) else 0.4 * twin) for a in range(4) for b in range(4) if a != b]
    record = _record(*ms)
    slow = suspect.slow_pairs(record, topo)
    assert {(p.src, p.dst) for p in slow} == {(a, b) for a in range(4) for b in range(4) if a != b and 3 in (a, b)}
    assert all(p.why.startswith("judged low: NV18 ") for p in slow)  # against the NV18 reference or route
    found = suspect.suspects(record, topo)
    assert [s.element for s in found] == ["GPU3 (every slow pair involves it, no fast pair does)"]


def test_without_the_twins_opinion_slow_means_below_the_level_peers():
    from linkscope.judge.verdict import Expectation, decide
    from linkscope.topology.synthetic import synthetic_topology

    class NoOpinion:
        def judge(self, m):
            return decide("x", m.bandwidth.median, Expectation(note="not modelled"))

    topo = synthetic_topology("nvswitch:4")
    ms = [_m("ce", a, b, 300.0 if 3 not in (a, b) else 150.0) for a in range(4) for b in range(4) if a != b]
    slow = suspect.slow_pairs(_record(*ms), topo, judge=NoOpinion())
    assert {(p.src, p.dst) for p in slow} == {(a, b) for a in range(4) for b in range(4) if a != b and 3 in (a, b)}
    assert slow[0].why == "33% below the median of the 12 NV18 pairs (225.0 GB/s)"


def test_on_a_pcie_route_staged_pinned_close_to_ce_is_not_a_bounce_unless_ce_is_low_too():
    from linkscope.topology.synthetic import synthetic_topology

    topo = synthetic_topology("pcie:1x2")  # one switch, Gen4 x16: 31.5 GB/s theoretical
    healthy = _record(_m("ce", 0, 1, 25.0), _m("staged-pinned", 0, 1, 24.5))  # both links busy either way
    assert bounce.find_bounces(healthy, topo) == []
    assert len(bounce.find_bounces(healthy)) == 1  # without the route, the numbers alone say bounce
    low = _record(_m("ce", 0, 1, 12.0), _m("staged-pinned", 0, 1, 12.5))
    assert [(b.src, b.dst) for b in bounce.find_bounces(low, topo)] == [(0, 1)]
    nopeer = _record(_m("ce", 0, 1, 25.0), _m("ce-nopeer", 0, 1, 24.9))  # the driver's staging: always counts
    assert [b.reference for b in bounce.find_bounces(nopeer, topo)] == ["ce-nopeer"]
