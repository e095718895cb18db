"""``linkscope audit`` on AMD nodes: each rank's GPU is the one HIP would give it under the
ROCR_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES it inherited.

Data shaped as upstream returns it: the KFD table as amdkfd writes ``topology/nodes/<n>/properties``
(tests/discovery/fake_amdsmi.py ``kfd_rows``), amdsmi 6.x / 7.x through ``FakeAmdSmi``. Rules
(src/linkscope/discovery/hipdevices.py names the lines): ROCr ``amd_filter_device.cpp:75-207`` at
rocm-systems release/rocm-rel-7.0 (ROCR_VISIBLE_DEVICES indexes the KFD GPUs), clr
``rocdevice.cpp`` rocm-6.2.2:500-551 (HIP_VISIBLE_DEVICES, else CUDA_VISIBLE_DEVICES, indexes what
ROCr left; ``GPU-`` tokens from 6.2) and rocm-6.1.2:491-525 (integers only).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from linkscope.comm.audit import judge
from linkscope.comm.probe import probe
from linkscope.discovery import amdsmi
from linkscope.discovery.hipdevices import KfdGpu, kfd_facts
from linkscope.topology.presets import load_preset
from tests.discovery.fake_amdsmi import FakeAmdSmi, kfd_table

KFD_ORDER = [1, 0, 3, 2, 5, 4, 7, 6]  # amdkfd's node order differs from amdsmi's (ascending PCI address)


def _kfd(tmp_path: Path, fake: FakeAmdSmi) -> list[KfdGpu]:
    return kfd_table(fake, tmp_path / "kfd")


def _record(rank: int, env: dict[str, str], kfd: list[KfdGpu] | None, version: str | None = "6.2.1") -> dict:
    return {"format": "linkscope.audit-probe", "world_rank": rank, "local_rank": rank, "host": "h", "cpus": [rank],
            "smt_siblings": {str(rank): [rank]}, "machine_cpus": 128, "machine_numa_nodes": [0, 1],
            "memory": {"mems_allowed": [0, 1]}, "visible_env": env, "gpus": [], "nic_env": {},
            "kfd_gpus": kfd_facts(kfd), "rocm_version": version if kfd is not None else None}


def _index_of_bus(topology, bus: str | None) -> int:
    return next(int(d.index or 0) for d in topology.gpus if d.pci_bus_id == bus)


@pytest.mark.parametrize("layout", ["6", "7"])
@pytest.mark.parametrize("gpu", ["mi250x", "mi300x"])
def test_slurm_like_rocr_visible_devices_gives_each_rank_the_gpu_hip_gives_it(tmp_path, layout, gpu):
    """Slurm-like: ROCR_VISIBLE_DEVICES=4,5,6,7 for the job, local rank r: HIP device r is KFD GPU 4+r
    (not topology GPU r, what the audit judged before)."""
    fake = FakeAmdSmi(layout=layout, gpu=gpu, kfd_order=KFD_ORDER)
    topology = amdsmi.discover(module=fake)
    kfd = _kfd(tmp_path, fake)
    records = [_record(r, {"ROCR_VISIBLE_DEVICES": "4,5,6,7"}, kfd) for r in range(4)]
    report = judge(records, topology)
    got = [v.gpu for v in report.ranks]
    assert got == [_index_of_bus(topology, kfd[4 + r].pci_bus_id) for r in range(4)]
    assert got != [0, 1, 2, 3]
    assert all("ROCR_VISIBLE_DEVICES" in v.gpu_source and "KFD table" in v.gpu_source for v in report.ranks)


@pytest.mark.parametrize("selector", ["HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"])
def test_hip_or_cuda_visible_devices_index_the_gpus_rocr_left(tmp_path, selector):
    fake = FakeAmdSmi(gpu="mi300x", kfd_order=KFD_ORDER)
    topology = amdsmi.discover(module=fake)
    kfd = _kfd(tmp_path, fake)
    records = [_record(r, {"ROCR_VISIBLE_DEVICES": "7,6,5,4", selector: str(r)}, kfd) for r in range(4)]
    report = judge(records, topology)
    assert [v.gpu for v in report.ranks] == [_index_of_bus(topology, kfd[7 - r].pci_bus_id) for r in range(4)]
    # HIP_VISIBLE_DEVICES wins over CUDA_VISIBLE_DEVICES when both are set (rocdevice.cpp rocm-6.2.2:500-502)
    both = judge([_record(0, {"HIP_VISIBLE_DEVICES": "2", "CUDA_VISIBLE_DEVICES": "5"}, kfd)], topology)
    assert both.ranks[0].gpu == _index_of_bus(topology, kfd[2].pci_bus_id)


def test_gpu_uuid_tokens_count_from_rocm_6_2_and_amdsmi_uuids_never(tmp_path):
    fake = FakeAmdSmi(gpu="mi300x", kfd_order=KFD_ORDER)
    topology = amdsmi.discover(module=fake)
    kfd = _kfd(tmp_path, fake)
    token = {"HIP_VISIBLE_DEVICES": kfd[2].hip_uuid or ""}
    assert judge([_record(0, token, kfd, "6.2.0")], topology).ranks[0].gpu == _index_of_bus(topology, kfd[2].pci_bus_id)
    old = judge([_record(0, token, kfd, "6.1.2")], topology)
    assert old.ranks[0].gpu is None and any("HIP shows this rank no GPU" in n for n in old.notes)
    # amdsmi's UUID (what launch exported before issue 37): HIP rejects it, the rank has no GPU
    amd_uuid = {"HIP_VISIBLE_DEVICES": fake.amdsmi_get_gpu_device_uuid(fake.handles[3])}
    rejected = judge([_record(0, amd_uuid, kfd)], topology)
    assert rejected.ranks[0].gpu is None and "no GPU" in rejected.ranks[0].gpu_source


def test_a_gpu_hidden_from_the_rank_shifts_every_index(tmp_path):
    """A cgroup (Slurm ConstrainDevices) hides GPUs 0-3: libhsakmt drops them, so HIP device 0 is the
    first GPU the rank can open."""
    fake = FakeAmdSmi(gpu="mi250x", kfd_order=KFD_ORDER)
    topology = amdsmi.discover(module=fake)
    full = _kfd(tmp_path, fake)
    seen = full[4:]
    report = judge([_record(r, {}, seen) for r in range(4)], topology)
    assert [v.gpu for v in report.ranks] == [_index_of_bus(topology, g.pci_bus_id) for g in seen]


def test_without_a_kfd_table_the_topology_hip_order_is_assumed_and_said():
    """A probe that read no KFD table (older record, or /sys/class/kfd unreadable): the topology's
    hip_ordinal stands for the KFD order. On the mi300x-8 preset (GPUs 4-7 on socket 1) ranks on
    socket 0's cores with ROCR_VISIBLE_DEVICES=4,5,6,7 are NUMA-far from their GPUs."""
    topology = load_preset("mi300x-8")
    records = [_record(r, {"ROCR_VISIBLE_DEVICES": "4,5,6,7"}, None) for r in range(4)]
    report = judge(records, topology)
    assert [v.gpu for v in report.ranks] == [4, 5, 6, 7]
    assert all("assumed" in v.gpu_source for v in report.ranks)
    assert {p.kind for p in report.problems} >= {"numa-far"}


def test_probe_records_the_kfd_table_and_rocm_version(tmp_path):
    fake = FakeAmdSmi(gpu="mi300x", kfd_order=KFD_ORDER)
    kfd = _kfd(tmp_path, fake)
    rocm = tmp_path / "rocm"
    (rocm / ".info").mkdir(parents=True)
    (rocm / ".info" / "version").write_text("6.2.1-112\n")
    env = {"SLURM_PROCID": "1", "SLURM_LOCALID": "1", "ROCR_VISIBLE_DEVICES": "4,5,6,7", "ROCM_PATH": str(rocm)}
    record = probe(env, tmp_path / "sys", tmp_path / "proc", with_nvml=False, measure=False, kfd=lambda: kfd)
    assert record["kfd_gpus"] == kfd_facts(kfd) and record["rocm_version"] == "6.2.1"
    assert record["visible_env"] == {"ROCR_VISIBLE_DEVICES": "4,5,6,7"}
    topology = amdsmi.discover(module=fake)
    assert judge([record], topology).ranks[0].gpu == _index_of_bus(topology, kfd[5].pci_bus_id)
    none = probe(env, tmp_path / "sys", tmp_path / "proc", with_nvml=False, measure=False, kfd=lambda: None)
    assert none["kfd_gpus"] is None and none["rocm_version"] is None


def test_an_nvidia_topology_keeps_the_nvml_rules(tmp_path):
    report = judge([_record(0, {"CUDA_VISIBLE_DEVICES": "3"}, None)], load_preset("dgx-h100"))
    assert (report.ranks[0].gpu, report.ranks[0].gpu_source) == (3, "CUDA_VISIBLE_DEVICES")


def test_malformed_amd_fields_fall_back_to_the_stated_assumption_without_a_traceback():
    record = _record(0, {}, None)
    record.update(visible_env=["ROCR_VISIBLE_DEVICES"], kfd_gpus="nodes", rocm_version=6.2, local_rank="0")
    view = judge([record], load_preset("mi300x-8")).ranks[0]
    assert view.gpu == 0 and "assumed" in view.gpu_source
