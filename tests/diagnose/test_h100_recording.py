"""The diagnosis on the recorded 2 x H100 machine (nvidia-h100-x2, a Firecracker VM, driver 580.159.04,
recorded by the lead on 2026-11-25; folders built by tests/discovery/build_h100x2_fixtures.py):
the recording as it is gets the clean bill; the copy with ACS redirect bits on a (synthetic) switch
port names that port; the copy with GPU1 trained at x8 names GPU1's link."""
from __future__ import annotations

import json
from pathlib import Path

import pynvml

from linkscope.diagnose import bounce, gather, suspect
from linkscope.discovery import nvml, raw
from linkscope.results.io import load as load_run
from linkscope.results.schema import Measurement, RunProvenance, RunRecord
from linkscope.results.stats import Stats
from tests.discovery.nvml_replay import ReplayNVML

MACHINES = Path(__file__).parents[1] / "fixtures" / "machines"
MiB = 1024**2


def _report(name: str):
    folder = MACHINES / name
    topology = raw.load_recording(folder)
    inputs = gather.recorded(folder)
    return topology, inputs, inputs.report(topology)


def test_link_health_in_the_fixture_is_what_the_reader_makes_of_the_real_nvml_answers():
    folder = MACHINES / "h100x2-vm"
    replay = ReplayNVML.load(folder / "nvml_dump.json")
    facts = json.loads((folder / "nvml.json").read_text())
    for g in facts["gpus"]:
        assert nvml.read_link_health(replay, g["index"], pynvml.NVMLError) == g["link_health"]
    h0 = facts["gpus"][0]["link_health"]
    # what the real H100 answered: 18 active links, the per-link call for every counter, ECC and CRC
    # data counts non-zero (cumulative since the driver loaded), the legacy _TOTAL ids not supported
    assert h0["nvlink"]["active_count"] == 18 and h0["nvlink"]["link_count"] == 18
    assert sum(link["errors"]["crc_data"] for link in h0["nvlink"]["links"]) == 203
    assert h0["nvlink"]["totals"] == {"crc_flit": None, "crc_data": None, "replay": None, "recovery": None}
    assert h0["pcie"]["counters"]["replay"] == 2 and h0["pcie"]["counters"]["l0_to_recovery"] == 230
    assert facts["gpus"][0]["bar1"]["total_bytes"] == 128 * 1024**3


def test_the_recording_as_it_is_gets_the_clean_bill_and_says_it_is_a_vm():
    topology, inputs, report = _report("h100x2-vm")
    assert report.clean and not report.unknown
    lines = report.lines()
    assert lines[0].startswith("Virtual machine (virtio device 0000:00:03.0 (vendor 0x1af4))")
    assert "IOMMU: off" in lines[1]
    assert "gpu0, gpu1 BAR1 128 GiB maps all 80 GiB of memory." in lines
    assert report.path("gpu0", "gpu1").over == "nvlink"
    # the GPUs' own config space was read whole (as root): no ACS capability on an endpoint
    devices = inputs.health_facts["devices"]
    assert devices["0000:00:06.0"]["config"] == {"readable_bytes": 4096, "status": "absent", "acs": None}
    from linkscope.counters import linkerrors

    snapshot = {"gpus": {str(g["index"]): g["link_health"] for g in inputs.vendor_facts["nvidia"]["gpus"]}}
    assert linkerrors.state_issues(snapshot) == []


def test_the_real_survey_of_this_machine_names_no_suspect_and_no_bounce():
    topology, _, report = _report("h100x2-vm")
    record = load_run(MACHINES / "h100x2-vm" / "survey.json")
    assert bounce.find_bounces(record) == []
    assert suspect.slow_pairs(record, topology) == []  # ce ~396 GB/s on NV18: the verdict core says ok
    assert suspect.suspects(record, topology, report=report) == []


def test_acs_redirect_on_the_switch_port_is_named_and_explains_a_bouncing_pair():
    topology, _, report = _report("h100x2-vm-acs")
    acs = [p for p in report.problems if p.startswith("ACS RR+CR")]
    assert [p.split(" are ")[0] for p in acs] == [
        "ACS RR+CR set on switch downstream port 0000:02:00.0: peer requests on gpu0-gpu1",
        "ACS RR+CR set on switch downstream port 0000:02:01.0: peer requests on gpu0-gpu1"]
    assert "Bridge switch downstream port 0000:02:00.0 [ACS SV+RR+CR]." in report.lines()
    # a pair that bounces: ce no faster than ce-nopeer. 37.2 GB/s is the P2P=Disabled row of the
    # recorded p2pBandwidthLatencyTest (/work/device-data/peers, what staging through the host gives here)
    stats = Stats.from_samples([37.2, 37.2, 37.2])
    record = RunRecord(kind="bench", provenance=RunProvenance.MEASURED, created_utc="2026-11-25T18:00:00Z", measurements=(
        Measurement(0, 1, "ce", "matrix", "uni", 512 * MiB, bandwidth=stats),
        Measurement(0, 1, "ce-nopeer", "p2p-check", "uni", 512 * MiB, bandwidth=stats)))
    found = bounce.find_bounces(record)
    assert len(found) == 1
    text = bounce.explain(found[0], report)
    assert "Likely cause: ACS RR+CR on switch downstream port 0000:02:00.0" in text and "setpci -s 0000:02:00.0" in text
    suspects = suspect.suspects(record, topology, report=report, bounces=found)
    assert suspects[0].element == "PCIe switch downstream port 0000:02:00.0"


def test_a_link_trained_below_its_width_is_named_from_sysfs_and_from_nvml():
    topology, inputs, report = _report("h100x2-vm-x8")
    assert report.problems == ("the PCIe link of gpu1 (0000:00:07.0) trained x8 of x16 possible: reseat the card, "
                               "check the riser/cable or the slot's lane sharing (BIOS bifurcation)",)
    from linkscope.counters import linkerrors

    snapshot = {"gpus": {str(g["index"]): g["link_health"] for g in inputs.vendor_facts["nvidia"]["gpus"]}}
    assert [i.sentence for i in linkerrors.state_issues(snapshot)] == ["GPU1 PCIe link runs below its width: x8 of x16."]


def test_a_survey_with_the_recorded_health_prints_the_section_and_the_clean_bill():
    from fakes import FakeEngine

    from linkscope.diagnose.survey import SurveyDiagnostics
    from linkscope.measure.survey import SurveyOptions, run_survey

    topology, inputs, _ = _report("h100x2-vm")
    diag = SurveyDiagnostics(topology, inputs=inputs, peer_check=False)
    record = run_survey(FakeEngine(topology), topology, SurveyOptions(size_bytes=16 * MiB, sweep_sizes_bytes=(16 * MiB,)),
                        diagnostics=diag)
    health = [f for f in record.findings if f.startswith("P2P")]
    assert health == [
        "P2P health: Virtual machine (virtio device 0000:00:03.0 (vendor 0x1af4)): the bridges, ACS bits and IOMMU seen "
        "here are the hypervisor's virtual ones; the host's cannot be read from inside the guest.",
        "P2P health: IOMMU: off (no IOMMU unit registered (/sys/class/iommu is empty) and the devices have no IOMMU group).",
        "P2P health: gpu0, gpu1 BAR1 128 GiB maps all 80 GiB of memory.",
        "P2P health: No PCIe bridge carries GPU peer traffic here (nvlink NV18).",
        "P2P routing health: clean (no ACS redirect on any PCIe peer path, IOMMU not translating, driver P2P OK, BAR1 large)."]
    assert record.extra["health"]["clean"] is True


def test_topo_health_with_a_run_proves_the_bounce_and_names_the_port(tmp_path, capsys):
    from linkscope.cli import main
    from linkscope.results.io import save

    stats = Stats.from_samples([37.2, 37.2, 37.2])  # the recorded P2P=Disabled rate of this machine, as above
    record = RunRecord(kind="bench", provenance=RunProvenance.MEASURED, created_utc="2026-11-25T18:00:00Z", measurements=(
        Measurement(0, 1, "ce", "matrix", "uni", 512 * MiB, bandwidth=stats),
        Measurement(0, 1, "staged-pinned", "matrix", "uni", 512 * MiB, bandwidth=stats)))
    save(record, tmp_path / "run.json")
    code = main(["topo", "--health", "--from", str(MACHINES / "h100x2-vm-acs"), "--run", str(tmp_path / "run.json")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "GPU0->GPU1: peer copies bounce through the host (ce GPU0->GPU1 37.2 GB/s vs staged-pinned 37.2 GB/s" in out
    assert "Suspect: PCIe switch downstream port 0000:02:00.0" in out
    code = main(["topo", "--health", "--from", str(MACHINES / "h100x2-vm"), "--run",
                 str(MACHINES / "h100x2-vm" / "survey.json")])
    out, _ = capsys.readouterr()
    assert code == 0 and "no pair bounces through the host and no pair is slow" in out


def test_a_ce_matrix_judged_low_as_staging_names_the_acs_port_without_a_peer_check():
    topology, _, report = _report("h100x2-vm-acs")
    # ce at what staging through the host gives on the twin's PCIe route: the verdict core explains it
    from linkscope.judge.expect import Judge

    staged = Judge(topology).expect(Measurement(0, 1, "ce", "matrix", "uni", 512 * MiB)).alternatives[0].value
    stats = Stats.from_samples([staged] * 3)
    record = RunRecord(kind="bench", provenance=RunProvenance.MEASURED, created_utc="2026-11-25T18:00:00Z", measurements=(
        Measurement(0, 1, "ce", "matrix", "uni", 512 * MiB, bandwidth=stats),))
    slow = suspect.slow_pairs(record, topology)
    assert slow and slow[0].cause == "peer access likely off"
    found = suspect.suspects(record, topology, report=report)
    assert found[0].element == "PCIe switch downstream port 0000:02:00.0"
    assert "as staging through host memory would give" in found[0].sentence


def _p2p_sample(text: str):
    from linkscope.results.peertools.detect import parse

    return parse(text, "p2pBandwidthLatencyTest.txt").to_record()


def test_the_real_p2p_sample_with_peer_access_on_and_off_is_no_bounce_and_no_suspect():
    # p2pBandwidthLatencyTest on this machine (2026-11-25): P2P=Disabled 37.2 GB/s is the tool's own
    # staging (peer access off, as it says), P2P=Enabled 364.6 / 392.8 GB/s over NVLink
    topology, _, report = _report("h100x2-vm")
    record = _p2p_sample((MACHINES / "h100x2-vm" / "p2pBandwidthLatencyTest.txt").read_text())
    assert bounce.find_bounces(record, topology) == []
    assert suspect.slow_pairs(record, topology) == []  # the P2P=Disabled entries are the reference, not slow pairs
    assert suspect.suspects(record, topology, report=report) == []


def test_the_p2p_sample_changed_so_enabled_is_no_faster_than_disabled_bounces_and_names_the_port():
    text = (MACHINES / "h100x2-vm" / "p2pBandwidthLatencyTest.txt").read_text()
    # CHANGED from the real output: the P2P=Enabled one-way rates set to the P2P=Disabled ones
    text = text.replace("2865.66 364.61", "2865.66  37.30").replace("392.75 2903.26", " 37.20 2903.26")
    topology, _, report = _report("h100x2-vm-acs")
    record = _p2p_sample(text)
    found = bounce.find_bounces(record, topology)
    assert [(b.src, b.dst, b.reference) for b in found] == [(0, 1, "ce-nopeer"), (1, 0, "ce-nopeer")]
    assert "Likely cause: ACS RR+CR on switch downstream port 0000:02:00.0" in bounce.explain(found[0], report)


def test_a_run_of_another_or_a_simulated_machine_is_said_not_crashed_on(tmp_path, capsys):
    from linkscope.cli import main
    from linkscope.results.io import save

    stats = Stats.from_samples([20.0, 20.0, 20.0])
    record = RunRecord(kind="bench", provenance=RunProvenance.SIMULATED, created_utc="2026-11-25T18:00:00Z", measurements=(
        Measurement(2, 3, "ce", "matrix", "uni", 64 * MiB, bandwidth=stats),
        Measurement(2, 3, "ce-nopeer", "matrix", "uni", 64 * MiB, bandwidth=stats)))
    save(record, tmp_path / "sim.json")
    code = main(["topo", "--health", "--from", str(MACHINES / "h100x2-vm"), "--run", str(tmp_path / "sim.json")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "uses 4 GPUs, 'vm' has 2: the pairs beyond are left out" in err and "is SIMULATED" in err
    assert "Suspect" not in out and "bounce through the host" not in out.split("What the measurements")[1].replace(
        "no pair bounces through the host", "")


def test_the_stored_health_facts_are_what_the_archive_reads_again():
    for name in ("h100x2-vm", "h100x2-vm-acs", "h100x2-vm-x8"):
        folder = MACHINES / name
        assert raw.load_health_facts(folder) == json.loads((folder / "pcihealth.json").read_text()), f"{name}/pcihealth.json is stale"


def test_examine_is_the_health_of_topo_as_one_library_call():
    """diagnose.examine (what ``topo --health`` prints) on the recording with ACS redirect: the port
    is the suspect and the JSON carries it; without a record there are no proofs and no record keys."""
    from linkscope.diagnose.examine import examine

    folder = MACHINES / "h100x2-vm-acs"
    topology = raw.load_recording(folder)
    stats = Stats.from_samples([37.2, 37.2, 37.2])
    record = RunRecord(kind="bench", provenance=RunProvenance.SIMULATED, created_utc="2026-11-25T18:00:00Z", measurements=(
        Measurement(0, 1, "ce", "matrix", "uni", 512 * MiB, bandwidth=stats),
        Measurement(0, 1, "staged-pinned", "matrix", "uni", 512 * MiB, bandwidth=stats)))
    exam = examine(topology, recording=folder, record=record, record_name="run.json")
    assert exam.notes == ("run.json is SIMULATED: it proves nothing about this machine's links",)
    assert any("bounce through the host" in p for p in exam.proofs)
    assert exam.suspects[0].element.startswith("PCIe switch downstream port 0000:02:00.0")
    data = exam.to_dict()
    assert data["host_bounce"] == list(exam.proofs) and data["suspects"][0]["element"] == exam.suspects[0].element
    bare = examine(topology, recording=folder)
    assert not bare.proofs and "host_bounce" not in bare.to_dict() and "health" in bare.to_dict()
