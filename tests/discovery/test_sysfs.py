from __future__ import annotations

import os
from pathlib import Path

import pytest

from linkscope.discovery import sysfs
from linkscope.errors import UserError
from linkscope.topology import query
from linkscope.topology.model import Device, DeviceKind, Topology
from tests.discovery.discovery_fakes import SysfsTree, build_pcie_2s_sysfs


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    build_pcie_2s_sysfs(tmp_path)
    return tmp_path


def test_pcie_rates_match_hwloc_and_pci_sig() -> None:
    assert sysfs.pcie_gb_per_s(16.0, 16) == pytest.approx(31.508, abs=1e-3)
    assert sysfs.pcie_gb_per_s(32.0, 16) == pytest.approx(63.015, abs=1e-3)
    assert sysfs.pcie_gb_per_s(8.0, 16) == pytest.approx(15.754, abs=1e-3)
    assert sysfs.pcie_gb_per_s(2.5, 1) == pytest.approx(0.25)
    assert sysfs.pcie_generation(16.0, 16) == "PCIe Gen4 x16"


def test_cpulist_and_bdf_normalisation() -> None:
    assert sysfs.parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert sysfs.parse_cpulist("") == []
    assert sysfs.normalise_bdf("00000000:3B:00.0") == "0000:3b:00.0"
    assert sysfs.normalise_bdf("3b:00.0") == "0000:3b:00.0"
    with pytest.raises(UserError, match="not a CPU list"):
        sysfs.parse_cpulist("0-x")


def test_read_facts_follows_symlinks_to_the_bridge_chain(tree: Path) -> None:
    facts = sysfs.read_facts(tree)
    gpu = facts["pci"]["0000:83:00.0"]
    assert gpu["chain"] == ["pci0000:80", "0000:80:01.0", "0000:81:00.0", "0000:82:00.0", "0000:83:00.0"]
    assert gpu["class"] == "0x030200" and gpu["numa_node"] == 1
    assert gpu["link"] == {"speed_gt_per_s": 16.0, "max_speed_gt_per_s": 16.0, "width": 16, "max_width": 16}
    nics = {n["name"]: n for n in facts["nics"]}
    assert nics["mlx5_1"]["pci_bus_id"] == "0000:87:00.0" and nics["mlx5_1"]["rate_gbit_per_s"] == 200.0
    assert nics["mlx5_1"]["netdevs"] == ["ib1"]  # the IPoIB netdev folds into the IB NIC
    assert nics["eno1"]["rate_gbit_per_s"] == 1.0
    assert "lo" not in nics  # virtual interfaces have no PCI device
    assert [n["node"] for n in facts["numa"]] == [0, 1]
    assert facts["numa"][1]["cpus"][:2] == [32, 33] and facts["numa"][1]["socket"] == 1
    assert facts["numa"][0]["memory_bytes"] == 263_000_000 * 1024


def test_absolute_symlinks_are_resolved_under_root(tmp_path: Path) -> None:
    t = SysfsTree(tmp_path)
    t.device(["pci0000:00", "0000:00:02.0"], "0x060400", "0x8086", "0x1", 0)
    t.device(["pci0000:00", "0000:00:02.0", "0000:01:00.0"], "0x030200", "0x10de", "0x2330", 0)
    link = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    link.unlink()
    os.symlink("/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0", link)  # absolute, as a dump may hold
    facts = sysfs.read_facts(tmp_path)
    assert facts["pci"]["0000:01:00.0"]["chain"] == ["pci0000:00", "0000:00:02.0", "0000:01:00.0"]


def test_missing_pci_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UserError) as info:
        sysfs.read_facts(tmp_path)
    assert str(tmp_path / "sys/bus/pci/devices") in str(info.value)
    assert "\n" not in info.value.one_line()


def test_missing_class_file_names_the_path(tree: Path) -> None:
    target = tree / "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:01.0/0000:84:00.0/class"
    target.unlink()
    with pytest.raises(UserError, match=r"sysfs file missing: .*0000:84:00.0/class"):
        sysfs.read_facts(tree)


def test_missing_optional_files_become_none(tree: Path) -> None:
    (tree / "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0/numa_node").unlink()
    facts = sysfs.read_facts(tree)
    assert facts["pci"]["0000:03:00.0"]["numa_node"] is None


def test_probe(tree: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    assert sysfs.probe(tree).ok
    empty = tmp_path_factory.mktemp("empty")
    result = sysfs.probe(empty)
    assert not result.ok and "no PCI devices folder" in result.reason


def _topology(tree: Path) -> Topology:
    facts = sysfs.read_facts(tree)
    gpus = sorted(b for b, d in facts["pci"].items() if d["class"] == "0x030200")
    host = sysfs.build_host(facts, {b: f"gpu{i}" for i, b in enumerate(gpus)})
    devices = [Device(id=f"gpu{i}", kind=DeviceKind.GPU, index=i, pci_bus_id=b) for i, b in enumerate(gpus)]
    return Topology(name="t", devices=tuple(devices) + host.devices, links=host.links)


def test_build_host_models_switches_bridges_and_levels(tree: Path) -> None:
    topo = _topology(tree)
    assert len(topo.of_kind(DeviceKind.PCIE_SWITCH)) == 2
    assert len(topo.of_kind(DeviceKind.HOST_BRIDGE)) == 2
    assert topo.device("sw0").vendor == "microchip" and topo.device("sw0").pci_bus_id == "0000:01:00.0"
    assert str(query.pair_level(topo, 0, 1)) == "PIX"
    assert str(query.pair_level(topo, 0, 4)) == "SYS"
    assert [n.id for n in query.nearest_nics(topo, 5)] == ["mlx5_1"]
    assert query.theoretical_gb_per_s(topo, 0, 1) == pytest.approx(31.508, abs=1e-3)
    assert query.local_cpu(topo, 6).id == "cpu1"
    # the BMC VGA device is read but not linked: it is not one of the GPUs asked for
    assert all(l.b != "0000:09:00.0" for l in topo.links)


def test_build_host_two_switch_levels_give_pxb(tmp_path: Path) -> None:
    t = SysfsTree(tmp_path)
    rb, rp = "pci0000:00", "0000:00:01.0"
    t.device([rb, rp], "0x060400", "0x8086", "0x1", 0)
    t.device([rb, rp, "0000:01:00.0"], "0x060400", "0x10b5", "0x8747", 0)  # switch A upstream
    t.device([rb, rp, "0000:01:00.0", "0000:02:08.0"], "0x060400", "0x10b5", "0x8747", 0)
    for k, (usp, dsp, ep) in enumerate((("0000:03:00.0", "0000:04:08.0", "0000:05:00.0"),
                                        ("0000:06:00.0", "0000:07:08.0", "0000:08:00.0"))):
        base = [rb, rp, "0000:01:00.0", f"0000:02:{0x08 + 8 * k:02x}.0"]
        if k == 1:
            t.device(base, "0x060400", "0x10b5", "0x8747", 0)
        t.device([*base, usp], "0x060400", "0x10b5", "0x8747", 0)  # board switch (K80 style)
        t.device([*base, usp, dsp], "0x060400", "0x10b5", "0x8747", 0)
        t.device([*base, usp, dsp, ep], "0x030200", "0x10de", "0x102d", 0, speed="8.0 GT/s PCIe")
    t.numa_node(0, "0-7", 1000, 0, 0)
    topo = _topology(tmp_path)
    assert len(topo.of_kind(DeviceKind.PCIE_SWITCH)) == 3
    assert str(query.pair_level(topo, 0, 1)) == "PXB"
