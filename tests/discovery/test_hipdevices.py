"""HIP device selection on AMD nodes, on data shaped as upstream returns it.

Rules (src/linkscope/discovery/hipdevices.py names the lines): libhsakmt topology.c (KFD order,
unopenable render nodes dropped), ROCr amd_filter_device.cpp:75-207 (ROCR_VISIBLE_DEVICES), clr
rocdevice.cpp rocm-6.2.2:500-551 / rocm-6.1.2:491-525 (HIP_VISIBLE_DEVICES, GPU- tokens from 6.2),
amdsmi 7.0.2 amdsmi_interface.py:1959-1996 (hip_id, hip_uuid).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from linkscope.discovery import amdsmi
from linkscope.discovery.hipdevices import (
    KfdGpu,
    choose_device,
    hip_view,
    hip_visible,
    read_kfd_gpus,
    rocr_visible,
)
from linkscope.errors import UserError
from linkscope.mapping.api import map_traffic
from linkscope.mapping.assignment import from_dict, to_dict
from linkscope.mapping.cost import topology_cost
from linkscope.mapping.emit import env_files, launch_plan
from linkscope.traffic.synthetic import ring
from tests.discovery.fake_amdsmi import FakeAmdSmi, write_kfd_tree


def kfd_tree(root: Path, fake: FakeAmdSmi) -> Path:
    """The fake's KFD table as amdkfd's sysfs: nodes/<n>/properties (``name value`` lines)."""
    return write_kfd_tree(fake, root)


def _all_open(_dev: Path, _minor: int) -> bool:
    return True


def _gpus(fake: FakeAmdSmi, tmp_path: Path, opens=_all_open) -> list[KfdGpu]:
    gpus = read_kfd_gpus(kfd_tree(tmp_path, fake), tmp_path / "dri", render_opens=opens)
    assert gpus is not None
    return gpus


def test_kfd_table_is_read_in_node_order_and_skips_cpus_and_hidden_gpus(tmp_path: Path) -> None:
    fake = FakeAmdSmi(gpu="mi300x", kfd_order=[7, 6, 5, 4, 3, 2, 1, 0])
    hidden = {128 + 6}  # a cgroup hides GPU 6's render node: libhsakmt drops it (topology.c:713-717)
    gpus = _gpus(fake, tmp_path, lambda _d, minor: minor not in hidden)
    assert [g.pci_bus_id for g in gpus] == [fake.bus[i] for i in (7, 5, 4, 3, 2, 1, 0)]
    assert gpus[0].node_id == 2 and gpus[0].hip_uuid == f"GPU-{fake.unique_ids[7]:016x}"
    assert read_kfd_gpus(tmp_path / "absent") is None


def test_rocr_visible_devices_follows_rocr_rules() -> None:
    gpus = [KfdGpu(2 + i, 0xABC0 + i, f"0000:{i:02x}:00.0") for i in range(4)]
    assert rocr_visible(None, gpus) == [0, 1, 2, 3]
    assert rocr_visible("", gpus) == []  # set but empty: no GPU (amd_filter_device.cpp:76-80)
    assert rocr_visible("3,1", gpus) == [3, 1]
    assert rocr_visible("0x2, 0", gpus) == [2, 0]  # strtol base 0, tokens trimmed
    assert rocr_visible("1,1,2", gpus) == [1]  # a repeated index ends the list
    assert rocr_visible("1,x,2", gpus) == [1]
    assert rocr_visible("gpu-000000000000abc2,0", gpus) == [2, 0]  # upper-cased, UUID prefix
    assert rocr_visible("GPU-0000", gpus) == []  # prefix of several: ambiguous, ends the list


def test_hip_visible_devices_takes_gpu_tokens_only_from_rocm_6_2() -> None:
    agents = [KfdGpu(2 + i, 0xABC0 + i, None) for i in range(4)]
    uuid = agents[2].hip_uuid
    assert uuid == "GPU-000000000000abc2"
    assert hip_visible(f"{uuid},0", agents, uuid_tokens=True) == [2, 0]  # rocm-6.2.2 rocdevice.cpp:518-531
    assert hip_visible(f"{uuid},0", agents, uuid_tokens=False) == []  # rocm-6.1.2: not an integer, list ends
    assert hip_visible(uuid.upper(), agents) == []  # clr matches case-sensitively
    assert hip_visible("1,1,3", agents) == [1, 3]  # clr skips a repeat
    assert hip_visible("01", agents) == []  # str(int(t)) == t
    # amdsmi's own UUID format is never accepted: the rank would see no GPU
    assert hip_visible("1eff740c-0000-1000-80ea-a1b2c3d4e500", agents) == []


@pytest.mark.parametrize("layout", ["6", "7"])
@pytest.mark.parametrize("gpu", ["mi250x", "mi300x"])
@pytest.mark.parametrize("inherited", [{}, {"ROCR_VISIBLE_DEVICES": "4,5,6,7"},
                                       {"ROCR_VISIBLE_DEVICES": "7,6,5,4", "CUDA_VISIBLE_DEVICES": "0,1,2,3"},
                                       {"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "3,2,1,0"}])
def test_launch_exports_a_device_hip_accepts(tmp_path: Path, layout: str, gpu: str, inherited: dict) -> None:
    """A mapping of 4 ranks onto GPUs 4-7 of a fake MI250X / MI300X node (amdsmi 6.x / 7.x), run
    under a Slurm-like inherited ROCR_VISIBLE_DEVICES: each rank's exported variables, read by
    HIP's rules against the node's KFD table, select exactly the GPU the mapping chose, by bus id."""
    fake = FakeAmdSmi(layout=layout, gpu=gpu, kfd_order=[0, 1, 2, 3, 5, 4, 7, 6])
    topology = amdsmi.discover(module=fake)
    kfd = _gpus(fake, tmp_path)
    traffic = ring(8)
    assignment = map_traffic(traffic, topology_cost(topology, "bandwidth"), topology)
    assignment = from_dict(to_dict(assignment))  # through the mapping file
    assert assignment.gpu_vendor == "amd" and assignment.pci_bus_id_of_rank
    for rank in range(8):
        want = assignment.pci_bus_id_of_rank[rank]
        env = {"SLURM_LOCALID": str(rank), **inherited}
        in_job = [kfd[i].pci_bus_id for i in hip_view(inherited, kfd)]
        if want not in in_job:
            with pytest.raises(UserError, match="outside the GPUs this job was given"):
                launch_plan(assignment, env, live_gpus=kfd)
            continue
        plan = launch_plan(assignment, env, live_gpus=kfd)
        child = {**env, **plan.env}
        seen = hip_view(child, kfd, uuid_tokens=layout == "7")
        assert [kfd[i].pci_bus_id for i in seen] == [want], (plan.env, plan.device_says)
        assert want in plan.device_says


def test_hip_ordinal_follows_kfd_order_not_amdsmi_index(tmp_path: Path) -> None:
    """amdsmi 7.x states hip_id; the topology's hip_ordinal follows it (KFD order), never the amdsmi
    index; env files name that ordinal, never amdsmi's UUID."""
    order = [1, 0, 3, 2, 5, 4, 7, 6]
    topology = amdsmi.discover(module=FakeAmdSmi(layout="7", gpu="mi300x", kfd_order=order))
    assert [g.ordinals["amd"] for g in topology.gpus] == [order.index(i) for i in range(8)]
    assert topology.gpus[0].attributes["hip_uuid"].startswith("GPU-")
    assignment = map_traffic(ring(8), topology_cost(topology, "bandwidth"), topology)
    files = env_files(assignment)
    for text in sorted(files):
        assert "ROCR_VISIBLE_DEVICES" in files[text]  # says what it does not cover
    values = [line.split("=", 1)[1] for f in files.values() for line in f.splitlines()
              if line.startswith("export HIP_VISIBLE_DEVICES=")]
    assert all(v.isdigit() for v in values) and len(values) == 8


def test_6x_without_enumeration_assumes_bus_order_and_says_so() -> None:
    topology = amdsmi.discover(module=FakeAmdSmi(layout="6", gpu="mi250x"))
    assert [g.ordinals["amd"] for g in topology.gpus] == list(range(8))
    assert any("ascending PCI address" in n for n in topology.notes)


def test_a_bus_id_not_on_this_node_is_one_clear_error(tmp_path: Path) -> None:
    kfd = _gpus(FakeAmdSmi(gpu="mi250x"), tmp_path)
    with pytest.raises(UserError, match="not among the GPUs this process can open"):
        choose_device({}, kfd, pci_bus_id="0000:99:00.0")
