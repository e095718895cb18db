"""Link error counters and link state: the NVML reader against a pynvml-shaped fake (the calls and
field ids of nvidia-ml-py), the AMD reader against the amdsmi fake, and the comparison of snapshots."""
from __future__ import annotations

import pynvml
import pytest

from linkscope.counters import linkerrors
from linkscope.counters.nvml import PynvmlSource
from linkscope.discovery import nvml
from tests.discovery import discovery_fakes as fakes


def _h100_pair(**gpu_kwargs) -> fakes.FakeNVML:
    a, b = "00000000:18:00.0", "00000000:2a:00.0"
    gpus = [fakes.FakeGpu(bus_id=bus, name="NVIDIA H100 80GB HBM3", memory_bytes=85_520_809_984, pcie=(5, 16),
                          nvlinks=[(peer, 0, 6, 26562)] * 18, **gpu_kwargs)
            for bus, peer in ((a, b), (b, a))]
    return fakes.FakeNVML(gpus=gpus)


def test_read_link_health_reads_every_link_and_the_pcie_counters():
    fake = _h100_pair(pcie_fields={pynvml.NVML_FI_DEV_PCIE_L0_TO_RECOVERY_COUNTER: 3})
    fake.gpus[0].nvlink_errors[(13, pynvml.NVML_NVLINK_ERROR_DL_REPLAY)] = 7
    health = nvml.read_link_health(fake, 0, pynvml.NVMLError)
    links = health["nvlink"]["links"]
    assert len(links) == 18 and health["nvlink"]["active_count"] == 18
    assert links[13]["errors"] == {"replay": 7, "recovery": 0, "crc_flit": 0, "crc_data": 0, "ecc_data": 0}
    assert health["nvlink"]["totals"]["replay"] is None  # the _TOTAL ids: NOT_SUPPORTED on H100 (driver 580)
    assert health["pcie"]["gen"] == 5 and health["pcie"]["width"] == 16
    counters = health["pcie"]["counters"]
    assert counters["replay"] == 0 and counters["l0_to_recovery"] == 3
    assert counters["bad_tlp"] is None  # NOT_SUPPORTED stays unknown, never 0


def test_scoped_error_fields_are_the_fallback_for_every_link():
    fake = _h100_pair(nvlink_error_counter_supported=False)  # error_fields="scoped", as the recorded H100
    fake.gpus[0].nvlink_errors[(15, pynvml.NVML_NVLINK_ERROR_DL_REPLAY)] = 4
    health = nvml.read_link_health(fake, 0, pynvml.NVMLError)
    links = health["nvlink"]["links"]
    assert links[15]["errors"]["replay"] == 4  # NVML_FI_DEV_NVLINK_ERROR_DL_REPLAY, scopeId 15
    assert links[15]["errors"]["crc_data"] is None and "nvlink15_crc_data" in health["errors"]  # no scoped field
    assert "nvlink15_replay" not in health["errors"]


def test_legacy_error_fields_cover_links_0_to_11_only():
    fake = _h100_pair(nvlink_error_counter_supported=False, error_fields="legacy")
    fake.gpus[0].nvlink_errors[(2, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT)] = 4
    health = nvml.read_link_health(fake, 0, pynvml.NVMLError)
    links = health["nvlink"]["links"]
    assert links[2]["errors"]["crc_flit"] == 4  # NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L2
    assert links[12]["errors"]["crc_flit"] is None and "nvlink12_crc_flit" in health["errors"]
    assert health["nvlink"]["totals"]["crc_flit"] == 4


def test_read_facts_records_bar1_and_link_health():
    facts = nvml.read_facts(_h100_pair(), cpu_count=64, hostname="h100x2")
    g0 = facts["gpus"][0]
    assert g0["bar1"]["total_bytes"] == 128 * 1024**3
    assert g0["link_health"]["nvlink"]["active_count"] == 18
    assert facts["pairs"][0]["p2p"]["pci"] == "OK"


def test_pynvml_source_link_health_and_snapshot_changes_name_the_link_and_step():
    fake = _h100_pair()
    source = PynvmlSource(fake)
    before = linkerrors.take(source, [0, 1])
    fake.gpus[1].nvlink_errors[(5, pynvml.NVML_NVLINK_ERROR_DL_REPLAY)] = 12
    fake.gpus[0].pcie_replay = 9
    after = linkerrors.take(source, [0, 1])
    issues = linkerrors.changes(before, after, "ce matrix uni")
    assert [(i.element, i.kind) for i in issues] == [("GPU0 PCIe link", "errors-grew"), ("GPU1 NVLink 5", "errors-grew")]
    assert issues[1].sentence == "GPU1 NVLink 5 error counters grew during 'ce matrix uni': replay +12 (0 -> 12)."
    assert linkerrors.changes(after, after, "again") == []


def test_state_issues_below_width_fewer_links_and_generation_only_under_load():
    fake = _h100_pair(pcie_max=(5, 16))
    fake.gpus[0].pcie = (4, 8)
    fake.gpus[1].nvlinks = fake.gpus[1].nvlinks[:17]
    fake.gpus[1].inactive_links = 1
    snap = linkerrors.take(PynvmlSource(fake), [0, 1])
    idle = linkerrors.state_issues(snap)
    assert [(i.element, i.kind) for i in idle] == [("GPU0 PCIe link", "below-width"), ("GPU1 NVLink", "fewer-links")]
    assert idle[0].detail == "x8 of x16" and "inactive: 17" in idle[1].detail
    loaded = linkerrors.state_issues(snap, "host", loaded=True, names={0: "gpu0"})
    assert ("gpu0 PCIe link", "below-speed") in [(i.element, i.kind) for i in loaded]


def test_a_gpu_that_fails_to_answer_is_kept_as_an_error_not_a_crash():
    class Broken:
        def link_health(self, index):
            raise RuntimeError("GPU is lost")

    snap = linkerrors.take(Broken(), [0])
    assert snap["gpus"]["0"] == {"error": "RuntimeError: GPU is lost"}
    assert linkerrors.changes(snap, snap, "x") == [] and "could not read" in linkerrors.summary(snap)[0]
    assert linkerrors.take(object(), [0])["unsupported"]


def test_amd_link_health_from_amdsmi_pcie_info_and_xgmi_status():
    from linkscope.counters.amdsmi import AmdsmiSource
    from tests.discovery.fake_amdsmi import FakeAmdSmi

    amd = FakeAmdSmi(gpu="mi300x")  # MI300X: per-link xGMI accumulators (MI250X has none: no active link counted)
    source = AmdsmiSource(amd)
    before = linkerrors.take(source, [0, 1])
    h0 = before["gpus"]["0"]
    assert h0["pcie"]["gen"] == 4 and h0["pcie"]["width"] == 16 and h0["pcie"]["counters"]["naks_sent"] is None
    assert h0["nvlink"]["active_count"] == len(source.active_nvlinks(0)) > 0 and h0["fabric"] == "xgmi"
    amd.pcie_replays[1] = 4
    amd.xgmi_status[0] = 1
    amd.pcie_width[1] = 8
    after = linkerrors.take(source, [0, 1])
    issues = linkerrors.changes(before, after, "all-to-all")
    assert ("GPU0 xGMI 0", "errors-grew") in [(i.element, i.kind) for i in issues]
    assert ("GPU1 PCIe link", "errors-grew") in [(i.element, i.kind) for i in issues]
    assert [(i.element, i.kind) for i in linkerrors.state_issues(after)] == [("GPU1 PCIe link", "below-width")]


def test_amd_placeholders_are_unknown_and_p2p_accessibility_is_recorded():
    from linkscope.discovery import amdsmi
    from tests.discovery.fake_amdsmi import FakeAmdSmi

    amd = FakeAmdSmi(gpu="mi300x")
    amd.pcie_replays[0] = 2**64 - 1  # amdsmi's all-ones "not supported"
    health = amdsmi.read_link_health(amd, amd.amdsmi_get_processor_handles()[0], [0, 1])
    assert health["pcie"]["counters"]["replay"] is None and health["pcie"]["counters"]["l0_to_recovery"] == 0
    facts = amdsmi.read_facts(amd)
    assert {p["p2p_accessible"] for p in facts["pairs"]} == {True}


def test_corrected_error_growth_is_its_own_kind_and_not_a_suspect_alone():
    fake = _h100_pair()
    source = PynvmlSource(fake)
    before = linkerrors.take(source, [0, 1])
    fake.gpus[0].nvlink_errors[(3, pynvml.NVML_NVLINK_ERROR_DL_ECC_DATA)] = 5   # FEC-corrected, as on the recorded H100
    fake.gpus[0].nvlink_errors[(4, pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA)] = 2
    fake.gpus[1].nvlink_errors[(7, pynvml.NVML_NVLINK_ERROR_DL_RECOVERY)] = 1  # a link retrained: not corrected
    issues = linkerrors.changes(before, linkerrors.take(source, [0, 1]), "all-to-all")
    assert [(i.element, i.kind) for i in issues] == [("GPU0 NVLink 3", "corrected-grew"), ("GPU0 NVLink 4", "corrected-grew"),
                                                      ("GPU1 NVLink 7", "errors-grew")]
    from linkscope.diagnose.survey import _issue_lines

    lines = _issue_lines(issues)
    assert lines[0] == "GPU1 NVLink 7 error counters grew during 'all-to-all': recovery +1 (0 -> 1)."
    assert lines[1].startswith("NVLink corrected-error counters grew on 2 links of GPU0 during 1 step "
                               "(ECC (data) +5, CRC (data) +2 in all)")


def test_corrected_growth_over_many_steps_is_one_line_per_fabric():
    """A clean 2 x H100 survey added a few corrected CRC/ECC data errors on most links in every step; one
    line per step and GPU made eight findings of a healthy machine (2026-11-25): now one line per GPU."""
    fake = _h100_pair()
    source = PynvmlSource(fake)
    issues = []
    for n, step in enumerate(("ce matrix uni", "ce matrix bi", "sm-push matrix uni"), start=1):
        before = linkerrors.take(source, [0, 1])
        for link in (n, n + 5):
            fake.gpus[0].nvlink_errors[(link, pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA)] = n
        issues += linkerrors.changes(before, linkerrors.take(source, [0, 1]), step)
    from linkscope.diagnose.survey import _issue_lines

    lines = _issue_lines(issues)
    assert len(lines) == 1
    assert lines[0].startswith("NVLink corrected-error counters grew on 6 links of GPU0 during 3 steps (CRC (data) +")


def test_corrected_growth_on_every_link_of_every_gpu_is_one_line_with_counts():
    """Issue 39: the 4 x H200 survey listed the 18 NVLink numbers once per GPU (four findings); now one
    line with the link and GPU counts and the growth added up."""
    issues = [linkerrors.LinkIssue(g, f"GPU{g} NVLink {k}", linkerrors.CORRECTED_GREW, step, "CRC (data) +2 (1 -> 3)", k)
              for g in range(4) for k in range(18) for step in ("a", "b")]
    lines = linkerrors.corrected_lines(issues)
    assert lines == [lines[0]] and lines[0].startswith(
        "NVLink corrected-error counters grew on 18 links of each of 4 GPUs (GPU0–GPU3) during 2 steps (CRC (data) +288 in all)")
    assert "0, 1, 2" not in lines[0]



# ---- rates and verdicts (judge_growth) ---------------------------------------------------------

def _snap(t, crc=0, ecc=0, replay=0, recovery=0, pcie_replay=0, links=2, peer="0000:05:00.0"):
    link_entries = [{"link": k, "active": True, "remote_pci_bus_id": peer,
                     "errors": {"replay": replay, "recovery": recovery, "crc_flit": 0, "crc_data": crc, "ecc_data": ecc}}
                    for k in range(links)]
    return {"taken_unix_s": t, "gpus": {"0": {"nvlink": {"links": link_entries, "active_count": links, "link_count": links},
                                              "pcie": {"gen": 5, "width": 16, "counters": {"replay": pcie_replay}}}}}


def test_corrected_growth_on_a_healthy_nvlink4_node_is_normal_with_a_rate():
    """The recorded healthy 4 x H200: CRC (data) and ECC (data) grow by a few per link per step."""
    from linkscope.counters.linkerrors import OK, judge_growth

    out = judge_growth(_snap(1000.0, crc=170, ecc=260), _snap(1040.0, crc=172, ecc=263), "survey",
                       moved_bytes={0: 2e12})
    (v,) = out
    assert v.level == OK and v.deltas == {"crc_data": 4, "ecc_data": 6}
    assert v.per_s == pytest.approx(10 / 40)
    assert "per TB moved" in v.reason and "DCGM" in v.reason and "peer 0000:05:00.0" in v.reason
    assert v.links[0][1] == "0000:05:00.0"


def test_replay_recovery_and_crc_rate_fail_as_dcgm_does():
    from linkscope.counters.linkerrors import FAIL, judge_growth

    (v,) = judge_growth(_snap(0.0), _snap(60.0, replay=1), "x")
    assert v.level == FAIL and "replay" in v.reason
    (v,) = judge_growth(_snap(0.0), _snap(10.0, crc=600), "x")  # 1200 in 10 s over 2 links: 120/s
    assert v.level == FAIL and v.per_s == pytest.approx(120.0)


def test_pcie_replays_warn_above_eight_per_minute_and_no_time_is_not_judged():
    from linkscope.counters.linkerrors import NOT_JUDGED, OK, WARN, judge_growth

    (v,) = judge_growth(_snap(0.0), _snap(60.0, pcie_replay=9), "x")
    assert v.level == WARN and v.element.endswith("PCIe link")
    (v,) = judge_growth(_snap(0.0), _snap(60.0, pcie_replay=3), "x")
    assert v.level == OK
    before, after = _snap(0.0, crc=1), _snap(5.0, crc=2)
    del before["taken_unix_s"]
    (v,) = judge_growth(before, after, "x")
    assert v.level == NOT_JUDGED and "no rate" in v.reason


def test_survey_findings_collapse_normal_growth_into_one_line():
    from linkscope.counters.linkerrors import judge_growth, judged_lines

    before = _snap(0.0, crc=1)
    before["gpus"]["1"] = before["gpus"]["0"]
    after = _snap(30.0, crc=3)
    after["gpus"]["1"] = _snap(30.0, crc=4)["gpus"]["0"]
    lines = judged_lines(judge_growth(before, after))
    assert len(lines) == 1 and "GPU0 NVLink, GPU1 NVLink" in lines[0] and "normal" in lines[0]
