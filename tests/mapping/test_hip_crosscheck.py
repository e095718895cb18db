"""``map`` on AMD: the HIP ordinals a mapping exports (discovery's ``hip_ordinal``) are checked by PCI
address against the node's live KFD table, corrected where they differ, and otherwise the mapping
says what it assumed.

Data shaped as upstream returns it: amdsmi 6.x has no ``amdsmi_get_gpu_enumeration_info`` (ROCm/amdsmi
``py-interface/amdsmi_interface.py`` rocm-6.0.0 ... rocm-6.2.2), so discovery assumes ascending PCI
address; amdkfd numbers the GPU nodes in probe order (the fake's ``kfd_order``), the order libhsakmt
and HIP enumerate (rocm-systems release/rocm-rel-7.0 ``libhsakmt/src/topology.c:648-722``).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from linkscope.cli import main
from linkscope.discovery import amdsmi, hipdevices
from linkscope.discovery.hipdevices import KfdGpu, hip_view
from linkscope.mapping.amd import check_hip_ordinals
from linkscope.mapping.api import map_traffic
from linkscope.mapping.cost import topology_cost
from linkscope.mapping.emit import env_files
from linkscope.topology.io import save
from linkscope.traffic.io import save_traffic
from linkscope.traffic.synthetic import ring
from tests.discovery.fake_amdsmi import FakeAmdSmi, kfd_table

KFD_ORDER = [1, 0, 3, 2, 5, 4, 7, 6]


def _kfd(tmp_path: Path, fake: FakeAmdSmi) -> list[KfdGpu]:
    return kfd_table(fake, tmp_path / "kfd")


def _exports(folder: Path) -> dict[int, str]:
    out = {}
    for path in folder.glob("rank*.env"):
        for line in path.read_text().splitlines():
            if line.startswith("export HIP_VISIBLE_DEVICES="):
                out[int(path.stem[4:])] = line.split("=", 1)[1]
    return out


@pytest.mark.parametrize("gpu", ["mi250x", "mi300x"])
def test_map_emit_env_corrects_hip_ordinals_from_the_live_kfd_table(tmp_path, monkeypatch, capsys, gpu):
    """amdsmi 6.x: discovery assumed bus order; on the node the KFD order differs. The env files must
    export, for each rank, the KFD position of its GPU's PCI address (what HIP numbers it)."""
    fake = FakeAmdSmi(layout="6", gpu=gpu, kfd_order=KFD_ORDER)
    topology = amdsmi.discover(module=fake)
    assert any("ascending PCI address" in n for n in topology.notes)
    save(topology, tmp_path / "topo.json")
    save_traffic(ring(8), tmp_path / "traffic.json")
    kfd = _kfd(tmp_path, fake)
    monkeypatch.setattr(hipdevices, "read_kfd_gpus", lambda: kfd)
    out = tmp_path / "env"
    assert main(["map", str(tmp_path / "traffic.json"), "--from", str(tmp_path / "topo.json"), "--emit", "env",
                 "--emit-to", str(out), "-o", str(tmp_path / "m.json")]) == 0
    err = capsys.readouterr().err
    assert "HIP ordinals corrected" in " ".join(err.split())
    exported = _exports(out)
    assert len(exported) == 8
    import json

    buses = json.loads((tmp_path / "m.json").read_text())["pci_bus_id_of_rank"]
    for rank, value in exported.items():
        seen = hip_view({"HIP_VISIBLE_DEVICES": value}, kfd)
        assert [kfd[i].pci_bus_id for i in seen] == [buses[rank]], (rank, value)
    assert "HIP ordinals corrected" in (out / "rank0.env").read_text()


def test_agreeing_ordinals_are_said_to_agree_and_kept(tmp_path):
    fake = FakeAmdSmi(layout="7", gpu="mi300x", kfd_order=KFD_ORDER)  # 7.x states hip_id: already KFD order
    topology = amdsmi.discover(module=fake)
    assignment = map_traffic(ring(8), topology_cost(topology, "bandwidth"), topology)
    checked, said = check_hip_ordinals(assignment, _kfd(tmp_path, fake), topology.gpu_count)
    assert "all 8 ranks agree" in said and checked.visible_device_of_rank == assignment.visible_device_of_rank


def test_without_a_table_or_on_another_node_the_mapping_says_what_it_assumed(tmp_path):
    fake = FakeAmdSmi(layout="6", gpu="mi250x", kfd_order=KFD_ORDER)
    topology = amdsmi.discover(module=fake)
    assignment = map_traffic(ring(8), topology_cost(topology, "bandwidth"), topology)
    none, said = check_hip_ordinals(assignment, None, 8)
    assert said.startswith("HIP ordinals assumed") and said in none.notes
    assert none.visible_device_of_rank == assignment.visible_device_of_rank
    assert said in "".join(env_files(none).values())
    other = [KfdGpu(2 + i, 0, f"0000:{0xa0 + i:02x}:00.0") for i in range(8)]
    _, said = check_hip_ordinals(assignment, other, 8)
    assert "another node's" in said
    hidden = _kfd(tmp_path, fake)[:4]  # a cgroup hides half the node from map's own process
    kept, said = check_hip_ordinals(assignment, hidden, 8)
    assert "4 of the node's 8 GPUs" in said and kept.visible_device_of_rank == assignment.visible_device_of_rank


def test_a_preset_without_pci_addresses_says_its_ordinals_are_assumed(tmp_path, capsys):
    save_traffic(ring(8), tmp_path / "traffic.json")
    assert main(["map", str(tmp_path / "traffic.json"), "--preset", "mi300x-8", "--emit", "env",
                 "--emit-to", str(tmp_path / "env")]) == 0
    assert "no PCI address" in " ".join(capsys.readouterr().err.split())
