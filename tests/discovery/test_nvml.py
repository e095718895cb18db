from __future__ import annotations

import json

import pynvml
import pytest

from linkscope.discovery import nvml
from linkscope.errors import BackendUnavailable
from linkscope.topology import query
from linkscope.topology.model import DeviceKind, LinkKind, Provenance
from tests.discovery.discovery_fakes import FakeGpu, FakeNVML, dgx_h100_nvml, hgx_h200_4_nvml, pcie_2s_nvml


def test_probe_without_library_says_why() -> None:
    fake = FakeNVML(gpus=[], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    result = nvml.probe(fake)
    assert not result.ok
    assert result.reason == "NVML library not found: counters and live discovery need an NVIDIA driver"


def test_probe_driver_not_loaded_and_no_gpu() -> None:
    assert "driver not loaded" in nvml.probe(FakeNVML(gpus=[], init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)).reason
    empty = nvml.probe(FakeNVML(gpus=[]))
    assert not empty.ok and "sees no GPU" in empty.reason and empty.version == "550.90.07"


def test_probe_ok_reports_driver_and_shuts_down() -> None:
    fake = hgx_h200_4_nvml()
    result = nvml.probe(fake)
    assert result.ok and result.version == "550.90.07"
    assert fake.calls == ["init", "shutdown"]


def test_probe_on_this_machine_never_raises() -> None:
    result = nvml.probe()
    assert result.name == "nvml"
    if not result.ok:
        assert result.reason


def test_read_facts_is_json_and_complete() -> None:
    facts = nvml.read_facts(pcie_2s_nvml(), cpu_count=128, hostname="h")
    json.dumps(facts, allow_nan=False)
    g0 = facts["gpus"][0]
    assert g0["pci_bus_id"] == "0000:03:00.0"  # NVML's 8-digit domain normalised
    assert g0["cpu_affinity"][:3] == [0, 1, 2] and 64 in g0["cpu_affinity"] and 32 not in g0["cpu_affinity"]
    assert g0["pcie"] == {"gen": 4, "width": 16, "max_gen": 4, "max_width": 16}  # GPU max gen: not supported by the fake
    assert g0["nvlinks"] == [] and "nvlink" in g0["errors"]  # no NVLink: NVML says Not Supported
    pair = next(p for p in facts["pairs"] if (p["a"], p["b"]) == (0, 4))
    assert pair["p2p"] == {"read": "CHIPSET_NOT_SUPPORTED", "write": "CHIPSET_NOT_SUPPORTED",
                           "nvlink": "NOT_SUPPORTED", "atomics": "NOT_SUPPORTED", "pci": "CHIPSET_NOT_SUPPORTED"}
    assert pair["common_ancestor"] == "SYSTEM"
    assert len(facts["pairs"]) == 28


def test_read_facts_reads_links_speed_and_remote() -> None:
    facts = nvml.read_facts(hgx_h200_4_nvml(), cpu_count=96, hostname="h")
    links = facts["gpus"][0]["nvlinks"]
    assert len(links) == 18 and all(l["active"] for l in links)
    assert links[0] == {"link": 0, "active": True, "version": 6, "remote_pci_bus_id": "0000:3b:00.0",
                        "remote_device_type": "GPU", "speed_mbps": 26562}


def test_read_facts_without_numa_api_records_the_error() -> None:
    fake = FakeNVML(gpus=[FakeGpu(bus_id="00000000:07:00.0", numa_node=None, pcie=None)])
    facts = nvml.read_facts(fake, cpu_count=8, hostname="h")
    assert facts["gpus"][0]["numa_node"] is None and "numa_node" in facts["gpus"][0]["errors"]
    assert facts["gpus"][0]["pcie"] is None


def test_read_facts_init_failure_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailable, match="NVML library not found"):
        nvml.read_facts(FakeNVML(gpus=[], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND))


def test_direct_nvlink_pairs_are_bonded() -> None:
    topo = nvml.facts_to_topology(nvml.read_facts(hgx_h200_4_nvml(), cpu_count=96, hostname="h200"))
    nvlinks = [l for l in topo.links if l.kind is LinkKind.NVLINK]
    assert len(nvlinks) == 6 and {l.count for l in nvlinks} == {6}
    assert {l.link_gb_per_s for l in nvlinks} == {26.562} and nvlinks[0].provenance is Provenance.OS
    assert nvlinks[0].generation == "NVLink4"
    assert str(query.pair_level(topo, 0, 3)) == "NV6"
    assert query.theoretical_gb_per_s(topo, 0, 3) == pytest.approx(6 * 26.562)
    assert topo.name == "h200" and topo.source == "nvml"


def test_nvswitch_links_become_one_plane_with_datasheet_rate() -> None:
    topo = nvml.facts_to_topology(nvml.read_facts(dgx_h100_nvml(), cpu_count=224, hostname="dgx"))
    plane = topo.device("nvswitch")
    assert plane.kind is DeviceKind.NVSWITCH and plane.attributes["physical_switches"] == 4
    to_plane = [l for l in topo.links if l.b == "nvswitch"]
    assert len(to_plane) == 8 and {l.count for l in to_plane} == {18}
    assert {l.provenance for l in to_plane} == {Provenance.DATASHEET} and to_plane[0].link_gb_per_s == 25.0
    assert str(query.pair_level(topo, 2, 7)) == "NV18"


def test_gpu_index_follows_pci_bus_order_not_nvml_order() -> None:
    fake = FakeNVML(gpus=[FakeGpu(bus_id="00000000:81:00.0", uuid="GPU-b"), FakeGpu(bus_id="00000000:07:00.0", uuid="GPU-a")])
    topo = nvml.facts_to_topology(nvml.read_facts(fake, cpu_count=8, hostname="h"))
    g0 = topo.gpu(0)
    assert g0.uuid == "GPU-a" and g0.ordinals == {"nvidia": 0} and g0.nvml_index == 1
    assert topo.gpu(1).nvml_index == 0


def test_p2p_status_goes_into_attributes() -> None:
    topo = nvml.facts_to_topology(nvml.read_facts(pcie_2s_nvml(), cpu_count=128, hostname="h"))
    assert topo.gpu(0).attributes["p2p"]["gpu1"]["read"] == "OK"
    assert topo.gpu(5).attributes["p2p"]["gpu0"]["write"] == "CHIPSET_NOT_SUPPORTED"
    assert topo.gpu(0).attributes["nvml_common_ancestor"]["gpu2"] == "SINGLE"


def test_without_sysfs_gpus_hang_off_their_numa_node() -> None:
    topo = nvml.facts_to_topology(nvml.read_facts(pcie_2s_nvml(), cpu_count=128, hostname="h"))
    assert {d.id for d in topo.of_kind(DeviceKind.CPU)} == {"cpu0", "cpu1"}
    assert topo.device("cpu1").cores[:2] == (32, 33)
    assert str(query.pair_level(topo, 0, 1)) == "PHB" and str(query.pair_level(topo, 0, 7)) == "SYS"
    assert any("no sysfs facts" in n for n in topo.notes)
    link = next(l for l in topo.links if l.a == "gpu0")
    assert link.generation == "PCIe Gen4 x16" and link.provenance is Provenance.OS


def test_asymmetric_link_counts_use_the_smaller_with_a_note() -> None:
    a, b = "00000000:01:00.0", "00000000:02:00.0"
    fake = FakeNVML(gpus=[FakeGpu(bus_id=a, nvlinks=[(b, 0, 4, 25000)] * 4),
                          FakeGpu(bus_id=b, nvlinks=[(a, 0, 4, 25000)] * 3)])
    topo = nvml.facts_to_topology(nvml.read_facts(fake, cpu_count=8, hostname="h"))
    (link,) = [l for l in topo.links if l.kind is LinkKind.NVLINK]
    assert link.count == 3 and link.generation == "NVLink3"
    assert any("reports 4 NVLinks" in n for n in topo.notes)


def test_a_failing_mandatory_query_is_one_clear_error() -> None:
    class Broken(FakeNVML):
        def nvmlDeviceGetPciInfo(self, h):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    with pytest.raises(BackendUnavailable, match="NVML query failed: GPU is lost"):
        nvml.read_facts(Broken(gpus=[FakeGpu(bus_id="00000000:07:00.0")]), cpu_count=8, hostname="h")


def test_pcie_link_state_current_and_maximum_reach_the_topology_and_the_probe() -> None:
    from discovery.discovery_fakes import FakeGpu, FakeNVML

    gpus = [FakeGpu(bus_id="00000000:41:00.0", pcie=(5, 16), gpu_max_gen=5),
            FakeGpu(bus_id="00000000:03:00.0", pcie=(3, 8), pcie_max=(4, 16), gpu_max_gen=5)]
    facts = nvml.read_facts(FakeNVML(gpus), cpu_count=8, hostname="h")
    assert facts["gpus"][1]["pcie"] == {"gen": 3, "width": 8, "max_gen": 4, "max_width": 16, "gpu_max_gen": 5}
    topo = nvml.facts_to_topology(facts)
    # topology index = PCI bus id order: 03:00.0 is GPU0
    assert topo.gpu(0).attributes["pcie_link"] == {"current_generation": 3, "current_width": 8, "max_generation": 4,
                                                   "max_width": 16, "gpu_max_generation": 5}
    states = nvml.pcie_link_states(FakeNVML(gpus))
    assert states[0]["width"] == 8 and states[1] == {"gen": 5, "width": 16, "max_gen": 5, "max_width": 16, "gpu_max_gen": 5}
