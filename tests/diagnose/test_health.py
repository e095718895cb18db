"""P2P routing health from sysfs facts: ACS per bridge from config space, IOMMU mode, BAR1, driver
P2P status; on the synthetic dual-socket PCIe machine (two Microchip switches, 4 GPUs each)."""
from __future__ import annotations

import struct
from pathlib import Path

import pytest

from linkscope.diagnose.health import build_report
from linkscope.discovery import nvml, pcihealth, raw, sysfs
from tests.discovery import discovery_fakes as fakes

BRIDGES = (["0000:00:01.0", "0000:01:00.0"] + [f"0000:02:{k:02x}.0" for k in range(5)]
           + ["0000:80:01.0", "0000:81:00.0"] + [f"0000:82:{k:02x}.0" for k in range(5)])


def _machine(root: Path, *, acs: dict[str, int] | None = None, config_bytes: int = 4096, iommu: str | None = "identity",
             cmdline: str = "BOOT_IMAGE=/vmlinuz ro iommu=pt", vm: tuple[str, str] = ("Supermicro", "SYS-4029GP-TRT")) -> Path:
    fakes.build_pcie_2s_sysfs(root)
    tree = fakes.SysfsTree(root)
    for bdf in BRIDGES:
        tree.config(bdf, fakes.config_space((acs or {}).get(bdf, 0), size=config_bytes))
    for k, bus in enumerate(fakes.PCIE_2S_GPU_BUSES):
        tree.resource(bus, [(0xF000000000 + k * 0x1000000, 16 * 1024**2, 0x40200),
                            (0x38000000000 + k * 2**37, 2**37, 0x14220C)])
        if iommu is not None:
            tree.iommu_group(bus, 40 + k, iommu)
    if iommu is not None:
        tree.iommu_unit("dmar0")
    (root / "sys/class/iommu").mkdir(parents=True, exist_ok=True)
    tree.cmdline(cmdline)
    tree.dmi(*vm)
    return root


def _report(root: Path, nvml_module=None):
    reader = sysfs.SysReader(root)
    facts = sysfs.read_facts(root, reader)
    health = pcihealth.read_facts(facts["pci"], reader=reader)
    nvml_facts = nvml.read_facts(nvml_module or fakes.pcie_2s_nvml(), cpu_count=128, hostname="pcie-2s")
    topology = nvml.facts_to_topology(nvml_facts, facts)
    return build_report(topology, sysfs_facts=facts, health_facts=health, vendor_facts={"nvidia": nvml_facts}), health


def test_parse_config_reads_acs_control_bits_and_says_when_only_64_bytes_were_readable():
    full = pcihealth.parse_config(fakes.config_space(0x1D))  # SV + RR + CR + UF
    assert full["status"] == "read" and full["acs"]["offset"] == 0x148
    assert full["acs"]["control"] == ["SV", "RR", "CR", "UF"]
    assert full["acs"]["capability"] == ["SV", "TB", "RR", "CR", "UF", "DT"]
    assert pcihealth.parse_config(fakes.config_space(0x1D, size=64))["status"] == "not-readable"
    assert pcihealth.parse_config(fakes.config_space(None))["status"] == "absent"
    assert pcihealth.parse_config(bytes(4096))["status"] == "no-extended-space"
    # 256 bytes come only to a privileged reader, from a device whose config size is 256 (a legacy
    # virtio device of the recorded H100 VM, 0000:00:01.0, and of this CPU machine)
    assert pcihealth.parse_config(fakes.config_space(0x1D)[:256])["status"] == "no-extended-space"
    assert pcihealth.parse_config(fakes.config_space(0x1D, size=128))["status"] == "not-readable"
    # a loop in the capability list ends instead of spinning
    looped = bytearray(fakes.config_space(None))
    struct.pack_into("<I", looped, 0x100, 0x0001 | (0x100 << 20))
    assert pcihealth.parse_config(bytes(looped))["status"] == "absent"


def test_set_acs_control_changes_only_the_control_register():
    data = fakes.config_space(0)
    changed = pcihealth.set_acs_control(data, 0x0C)
    assert pcihealth.parse_config(changed)["acs"]["control"] == ["RR", "CR"]
    assert sum(a != b for a, b in zip(data, changed)) == 1
    with pytest.raises(ValueError):
        pcihealth.set_acs_control(fakes.config_space(None), 0)


def test_iommu_mode_from_group_types_units_and_cmdline():
    assert pcihealth.iommu_mode([], {}, {})["mode"] == "off"
    assert pcihealth.iommu_mode(["dmar0"], {"40": "identity"}, {"iommu": "pt"})["mode"] == "passthrough"
    assert pcihealth.iommu_mode(["dmar0"], {"40": "DMA-FQ", "41": "DMA"}, {})["mode"] == "translated"
    assert pcihealth.iommu_mode(["dmar0"], {"40": "DMA", "41": "identity"}, {})["mode"] == "mixed"
    assert pcihealth.iommu_mode(["ivhd0"], {"40": None}, {"iommu": "pt"})["mode"] == "passthrough"
    assert pcihealth.iommu_mode(["ivhd0"], {"40": None}, {})["mode"] == "unknown"
    assert pcihealth.iommu_mode(None, {}, {})["mode"] == "unknown"  # /sys/class/iommu not read: not "off"
    assert pcihealth.iommu_mode(None, {}, {"intel_iommu": "off"})["mode"] == "off"


def test_clean_machine_gets_a_clean_bill(tmp_path):
    report, health = _report(_machine(tmp_path))
    assert health["iommu"]["mode"] == "passthrough" and health["virtual_machine"]["detected"] is False
    assert "identity" in health["iommu"]["evidence"][-1]  # from the group types, not only the command line
    same_switch = report.path("gpu0", "gpu1")
    assert same_switch is not None and same_switch.over == "pcie" and same_switch.level == "PIX"
    assert [q.bdf for q in same_switch.ports] == ["0000:01:00.0", "0000:02:00.0", "0000:02:01.0"]
    assert [q.role for q in same_switch.ports] == ["switch upstream port", "switch downstream port", "switch downstream port"]
    # across sockets the driver refuses P2P (the fake's CHIPSET_NOT_SUPPORTED): named, so not clean
    assert [p for p in report.problems if "CHIPSET_NOT_SUPPORTED" in p] == [
        "driver P2P status CHIPSET_NOT_SUPPORTED (pci, read, write) for gpu0-gpu4, gpu0-gpu5, gpu0-gpu6, gpu0-gpu7, "
        "gpu1-gpu4, gpu1-gpu5 and 10 more pairs: the chipset/platform does not support P2P between them (often ACS or "
        "IOMMU on the path, or a VM)"]
    within = [p for p in report.problems if "gpu0-gpu1" in p]
    assert within == [] and not report.unknown
    assert "gpu0..gpu7 (8 GPUs) BAR1 128 GiB maps all 80 GiB of memory." in report.lines()
    assert "Bridge switch downstream port 0000:02:01.0 [ACS all off]." in report.lines()


def test_clean_bill_when_every_pair_can_peer(tmp_path):
    fake = fakes.pcie_2s_nvml()
    fake.p2p = {}  # every status OK
    report, _ = _report(_machine(tmp_path), fake)
    assert report.clean and not report.unknown
    assert report.verdict().startswith("P2P routing health: clean")


def test_acs_redirect_on_a_switch_port_is_named_with_the_fix(tmp_path):
    report, _ = _report(_machine(tmp_path, acs={"0000:02:01.0": 0x1D}))  # SV RR CR UF on GPU1's downstream port
    named = [p for p in report.problems if "0000:02:01.0" in p]
    # only the pairs under that switch: across sockets the traffic crosses the root complexes anyway
    assert len(named) == 1 and named[0].startswith("ACS RR+CR set on switch downstream port 0000:02:01.0: peer requests on "
                                                   "gpu0-gpu1, gpu1-gpu2, gpu1-gpu3, gpu1-mlx5_0 are redirected")
    assert "setpci -s 0000:02:01.0 ECAP_ACS+0x6.w=0000" in named[0] and "pci=disable_acs_redir=0000:02:01.0" in named[0]
    assert not any("0000:02:00.0" in p for p in report.problems)  # GPU0's port has ACS off
    # the pair of GPU0 and GPU2 does not cross GPU1's port: not blamed on it
    assert not any("gpu0-gpu2" in p and "ACS" in p for p in report.problems)


def test_unprivileged_reader_says_acs_is_not_readable_and_why(tmp_path):
    report, _ = _report(_machine(tmp_path, acs={"0000:02:01.0": 0x1D}, config_bytes=64))
    assert not any("ACS RR" in p or "0000:02:01.0" in p for p in report.problems)  # not guessed
    text = " ".join(report.unknown)
    assert "only 64 bytes of config space readable" in text and "CAP_SYS_ADMIN" in text


def test_translating_iommu_and_a_vm_are_said(tmp_path):
    report, health = _report(_machine(tmp_path, iommu="DMA-FQ", cmdline="ro intel_iommu=on", vm=("QEMU", "Standard PC (Q35)")))
    assert health["iommu"]["mode"] == "translated"
    assert any("IOMMU translates the GPUs" in p and "iommu=pt" in p for p in report.problems)
    assert report.lines()[0].startswith("Virtual machine (DMI says 'QEMU / Standard PC (Q35)')")


def test_recording_keeps_config_bytes_and_a_changed_archive_gives_a_new_diagnosis(tmp_path):
    root = _machine(tmp_path / "root")
    written = raw.export_raw(tmp_path / "rec", root, require_sysfs=True, nvml_module=fakes.pcie_2s_nvml(),
                             rocm_run=lambda argv: None, which=lambda name: None, amdsmi_module=None)
    assert (tmp_path / "rec" / "pcihealth.json") in written
    again = raw.load_health_facts(tmp_path / "rec")
    assert again is not None and again["devices"]["0000:02:01.0"]["config"]["acs"]["control"] == []
    assert again["iommu"]["mode"] == "passthrough" and again["cmdline"] == {"iommu": "pt"}


def test_parse_lspci_hex_dump():
    text = ("0000:02:01.0 PCI bridge: Microchip Technology PM40100 Switchtec PFX 100xG4 (rev b0)\n"
            "00: f8 11 00 40 07 04 10 00 b0 00 04 06 08 00 01 00\n"
            "10: 00 00 00 00 00 00 00 00 02 04 04 00 f1 01 00 00\n"
            "\n03:00.0 3D controller: NVIDIA Corporation GA100 [A100 PCIe 80GB] (rev a1)\n"
            "00: de 10 b5 20 46 05 10 00 a1 00 02 03 00 00 00 00\n")
    dumps = pcihealth.parse_lspci_hex(text)
    assert set(dumps) == {"0000:02:01.0", "0000:03:00.0"}
    assert len(dumps["0000:02:01.0"]) == 32 and dumps["0000:02:01.0"][:2] == b"\xf8\x11"


def test_topo_health_reads_a_recording_and_names_the_redirecting_port(tmp_path, capsys):
    from linkscope.cli import main

    root = _machine(tmp_path / "root", acs={"0000:82:02.0": 0x05})  # SV + RR on GPU6's downstream port
    fake = fakes.pcie_2s_nvml()
    fake.gpus[6].pcie = (4, 8)  # and GPU6 trained at x8 of x16
    fake.gpus[6].pcie_max = (4, 16)
    raw.export_raw(tmp_path / "rec", root, require_sysfs=True, nvml_module=fake, rocm_run=lambda argv: None,
                   which=lambda name: None, amdsmi_module=None)
    code = main(["topo", "--health", "--from", str(tmp_path / "rec"), "--json", "-"])
    out, err = capsys.readouterr()
    assert code == 0, err
    import json

    data = json.loads(out)
    assert data["health"]["clean"] is False
    assert any(p.startswith("ACS RR set on switch downstream port 0000:82:02.0") for p in data["health"]["problems"])
    assert [i["sentence"] for i in data["link_issues"]] == ["GPU6 PCIe link runs below its width: x8 of x16."]
    code = main(["topo", "--health", "--from", str(tmp_path / "rec")])
    out, _ = capsys.readouterr()
    assert code == 0 and "Bridge switch downstream port 0000:82:02.0 [ACS SV+RR]." in out
    assert "GPU6 PCIe link runs below its width: x8 of x16." in out


def _lspci_dump(bdf: str, data: bytes) -> str:
    lines = [f"{bdf[5:]} PCI bridge: Microchip Technology PM40100 Switchtec PFX 100xG4 (rev b0)"]
    lines += [f"{off:02x}: " + " ".join(f"{b:02x}" for b in data[off:off + 16]) if off < 0x100 else
              f"{off:03x}: " + " ".join(f"{b:02x}" for b in data[off:off + 16]) for off in range(0, len(data), 16)]
    return "\n".join(lines) + "\n\n"


def test_a_root_lspci_dump_beside_a_64_byte_tree_supplies_the_acs_bits(tmp_path):
    from linkscope.diagnose import gather

    root = _machine(tmp_path / "root", config_bytes=64)  # recorded without root
    rec = tmp_path / "rec"
    raw.export_raw(rec, root, require_sysfs=True, nvml_module=fakes.pcie_2s_nvml(), rocm_run=lambda argv: None,
                   which=lambda name: None, amdsmi_module=None)
    text = "".join(_lspci_dump(b, fakes.config_space(0x0C if b == "0000:82:01.0" else 0)) for b in BRIDGES)
    (rec / "lspci-vvv-xxxx.txt").write_text(text)
    inputs = gather.recorded(rec)
    assert inputs.health_facts["devices"]["0000:82:01.0"]["config_source"] == "lspci-vvv-xxxx.txt"
    topology = raw.load_recording(rec)
    report = inputs.report(topology)
    assert any(p.startswith("ACS RR+CR set on switch downstream port 0000:82:01.0") for p in report.problems)
    assert not any("bytes of config space readable" in u for u in report.unknown)


def test_a_link_trained_below_its_width_is_named(tmp_path):
    root = _machine(tmp_path / "a")
    tree = fakes.SysfsTree(root)
    (root / tree._device_folder("0000:05:00.0") / "current_link_width").write_text("8\n")  # GPU2 at x8
    (root / tree._device_folder("0000:81:00.0") / "current_link_width").write_text("4\n")  # socket 1's switch uplink
    report, _ = _report(root)
    narrow = [p for p in report.problems if "trained" in p]
    assert narrow[0].startswith("the PCIe link of gpu2 (0000:05:00.0) trained x8 of x16 possible")
    assert narrow[1].startswith("the PCIe link of PCIe switch sw1 (0000:81:00.0) trained x4 of x16")
    assert len(narrow) == 2
    vm_root = _machine(tmp_path / "b", vm=("QEMU", "Standard PC (Q35 + ICH9, 2009)"))
    (vm_root / fakes.SysfsTree(vm_root)._device_folder("0000:81:00.0") / "current_link_width").write_text("4\n")
    report, _ = _report(vm_root)
    assert not [p for p in report.problems if "trained" in p]  # an emulated bridge's width says nothing in a VM


def test_vm_detection_from_a_virtio_device_when_there_is_no_dmi():
    vm = pcihealth.virtual_machine(None, None, None, {"0000:00:03.0": "0x1af4", "0000:00:06.0": "0x10de"})
    assert vm == {"detected": True, "evidence": "virtio device 0000:00:03.0 (vendor 0x1af4)"}
    assert pcihealth.virtual_machine(None, None, None, {"0000:00:06.0": "0x10de"})["detected"] is None


def test_amd_resizable_bar_from_the_sysfs_bar_sizes():
    from linkscope.topology.model import Device, DeviceKind, Link, LinkKind, Topology

    gpus = tuple(Device(id=f"gpu{i}", kind=DeviceKind.GPU, name="AMD Instinct MI210", index=i, vendor="amd",
                        pci_bus_id=f"0000:{0x43 + i:02x}:00.0", memory_bytes=64 * 1024**3) for i in range(2))
    topo = Topology("mi210x2", gpus, (Link("gpu0", "gpu1", LinkKind.XGMI, 1, 50.0),))
    health = {"devices": {"0000:43:00.0": {"bars": [{"index": 0, "size_bytes": 64 * 1024**3}]},
                          "0000:44:00.0": {"bars": [{"index": 0, "size_bytes": 256 * 1024**2}]}},
              "iommu": {"mode": "off", "evidence": []}, "virtual_machine": {"detected": False}}
    report = build_report(topo, sysfs_facts=None, health_facts=health)
    lines = report.lines()
    assert "gpu0 VRAM BAR 64 GiB maps all 64 GiB (resizable BAR on)." in lines
    assert "gpu1 largest BAR 256 MiB of 64 GiB VRAM: resizable BAR is off or not supported by the slot." in lines


def test_live_inputs_on_an_amd_node_read_link_health_through_amdsmi(tmp_path, monkeypatch):
    import linkscope.counters.amdsmi as camdsmi
    from linkscope.diagnose import gather
    from linkscope.discovery import amdsmi
    from linkscope.errors import BackendUnavailable
    from tests.discovery.fake_amdsmi import FakeAmdSmi

    fake = FakeAmdSmi(gpu="mi300x")
    fake.pcie_width[2] = 8

    def no_nvml():
        raise BackendUnavailable("no NVIDIA driver")

    def opened():
        fake.amdsmi_init()
        return fake

    monkeypatch.setattr(nvml, "live_facts", no_nvml)
    monkeypatch.setattr("linkscope.counters.nvml.open_nvml", no_nvml)
    monkeypatch.setattr(amdsmi, "import_amdsmi", opened)
    monkeypatch.setattr(camdsmi, "import_amdsmi", opened)
    inputs = gather.live(_machine(tmp_path))  # the platform table picks amdsmi for facts and counters
    assert set(inputs.vendor_facts) == {"amd"} and len(inputs.live_link_health) == 8
    topology = amdsmi.discover(None, module=FakeAmdSmi(gpu="mi300x"))
    from linkscope.counters import linkerrors

    snapshot = inputs.link_snapshot(topology)
    assert [i.sentence for i in linkerrors.state_issues(snapshot)] == ["GPU2 PCIe link runs below its width: x8 of x16."]
