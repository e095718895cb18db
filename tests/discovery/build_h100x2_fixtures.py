"""Build the recorded 2 x H100 fixtures (tests/fixtures/machines/h100x2-vm*) from the lead's raw
recording of the lent machine (/work/device-data/machine, 2026-11-25, nvidia-h100-x2, a Firecracker VM,
driver 580.159.04; see tests/fixtures/machines/README.md). Run once by hand:

    PYTHONPATH=src python -m tests.discovery.build_h100x2_fixtures /work/device-data/machine

* ``h100x2-vm``: the recording as it is (clean bill): the ``topology export --raw`` tree of
  ``raw/sysfs.tar.gz`` plus what main's recorder did not take yet and the recording script did:
  every PCI function's ``config`` (read as root: 4096 bytes on the GPUs and host bridge, 256 on the
  virtio devices) and ``resource``, ``/proc/cmdline``, an empty ``/sys/class/iommu`` and no IOMMU
  group (as listed); ``nvml.json`` = ``raw/nvml.json`` (linkscope's own read there) plus BAR1, the
  link health and P2P ``pci`` status read by linkscope's readers from ``nvml_dump.json`` (the real
  NVML answers, trimmed to what those readers ask for).
* ``h100x2-vm-acs``: the same, CHANGED: a PCIe switch (root port 0000:00:08.0, upstream port
  0000:01:00.0, downstream ports 0000:02:00.0 and 0000:02:01.0, synthetic config space with ACS
  control RR+CR on the downstream ports) inserted above the two GPUs, which become 0000:03:00.0
  and 0000:04:00.0 (their real files and config bytes moved), and their NVLinks marked inactive in
  nvml.json (as two H100 PCIe cards without a bridge), so their peer traffic takes that switch.
* ``h100x2-vm-x8``: the same as the first, CHANGED: GPU1 trained at x8 (sysfs current_link_width,
  NVML current width in nvml.json and in the dump).
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pynvml

from linkscope.discovery import nvml, pcihealth, raw, sysfs
from tests.discovery.discovery_fakes import config_space
from tests.discovery.nvml_replay import ReplayNVML, trim

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "machines"


def _tree(machine: Path, root: Path) -> None:
    """raw/sysfs.tar.gz extracted, plus config/resource per PCI function, /proc/cmdline, IOMMU folders."""
    raw.extract_sysfs(machine / "raw" / "sysfs.tar.gz", root)
    for device in sorted((machine / "sysfs" / "devices").iterdir()):
        real = (device / "REALPATH").read_text().strip().lstrip("/")
        folder = root / real
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("config", "resource"):
            if (device / name).exists():
                shutil.copyfile(device / name, folder / name)
    lines = [line for line in (machine / "cmdline.txt").read_text().splitlines() if not line.startswith("#")]
    (root / "proc").mkdir(exist_ok=True)
    (root / "proc" / "cmdline").write_text(lines[0] + "\n")
    (root / "sys" / "class" / "iommu").mkdir(parents=True, exist_ok=True)  # listed empty
    (root / "sys" / "kernel" / "iommu_groups").mkdir(parents=True, exist_ok=True)  # no group


def _nvml_facts(machine: Path, dump: dict) -> dict:
    facts = json.loads((machine / "raw" / "nvml.json").read_text())
    replay = ReplayNVML(dump)
    for g in facts["gpus"]:
        errors = g.setdefault("errors", {})
        g["bar1"] = nvml.read_bar1(replay, g["index"], pynvml.NVMLError, errors)
        g["link_health"] = nvml.read_link_health(replay, g["index"], pynvml.NVMLError)
    for pair in facts["pairs"]:
        status = replay.p2p_pci(pair["a"], pair["b"])
        pair["p2p"]["pci"] = nvml.P2P_STATUS.get(status, str(status)) if status is not None else None
    return facts


def _write(folder: Path, root: Path, nvml_facts: dict, dump: dict | None, note: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    reader = sysfs.SysReader(root)
    facts = sysfs.read_facts(root, reader)
    health = pcihealth.read_facts(facts["pci"], reader=reader)
    (folder / "sysfs.json").write_text(json.dumps(facts, indent=2) + "\n")
    (folder / "pcihealth.json").write_text(json.dumps(health, indent=2) + "\n")
    raw.archive_sysfs(reader, folder / "sysfs.tar.gz")
    (folder / "nvml.json").write_text(json.dumps(nvml_facts, indent=2) + "\n")
    files = ["nvml.json", "sysfs.json", "pcihealth.json", "sysfs.tar.gz"]
    if dump is not None:  # the clean folder only: the changed copies reuse its answers
        (folder / "nvml_dump.json").write_text(json.dumps(dump, indent=1) + "\n")
        files.append("nvml_dump.json")
    manifest = {"format": raw.MANIFEST_FORMAT, "version": 1, "recorded_unix_s": 1795629184, "sysfs_root": "/",
                "files": files,
                "notes": ["recorded on the lent 2 x H100 VM (nvidia-h100-x2), 2026-11-25, by the lead; "
                          "built by tests/discovery/build_h100x2_fixtures.py", note]}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")


def _move(root: Path, old_real: str, new_real: str, old_bdf: str, new_bdf: str) -> None:
    src, dst = root / old_real, root / new_real
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(src), str(dst))
    link = root / "sys" / "bus" / "pci" / "devices" / old_bdf
    link.unlink()
    depth = "../../../"
    (root / "sys" / "bus" / "pci" / "devices" / new_bdf).symlink_to(depth + new_real.removeprefix("sys/"))


def _bridge(root: Path, real: str, vendor: str, device: str, acs_control: int | None) -> None:
    folder = root / real
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("class", "0x060400"), ("vendor", vendor), ("device", device), ("numa_node", "-1"),
                       ("local_cpulist", "0-31"), ("current_link_speed", "32.0 GT/s PCIe"),
                       ("max_link_speed", "32.0 GT/s PCIe"), ("current_link_width", "16"), ("max_link_width", "16")):
        (folder / name).write_text(text + "\n")
    (folder / "config").write_bytes(config_space(acs_control))
    bdf = real.rsplit("/", 1)[-1]
    (root / "sys" / "bus" / "pci" / "devices" / bdf).symlink_to("../../../" + real.removeprefix("sys/"))


def main(machine: Path) -> None:
    dump = trim(json.loads((machine / "nvml_dump.json").read_text()))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "clean"
        _tree(machine, root)
        _write(FIXTURES / "h100x2-vm", root, _nvml_facts(machine, dump), dump,
               "the recording as it was (no change)")

        acs_root = Path(tmp) / "acs"
        _tree(machine, acs_root)
        base = "sys/devices/pci0000:00"
        _bridge(acs_root, f"{base}/0000:00:08.0", "0x8086", "0x347a", None)  # root port, no ACS capability
        _bridge(acs_root, f"{base}/0000:00:08.0/0000:01:00.0", "0x1000", "0xc030", None)  # switch upstream port
        moves = {"0000:00:06.0": ("0000:02:00.0", "0000:03:00.0"), "0000:00:07.0": ("0000:02:01.0", "0000:04:00.0")}
        for old, (dsp, new) in moves.items():
            _bridge(acs_root, f"{base}/0000:00:08.0/0000:01:00.0/{dsp}", "0x1000", "0xc030", 0x000D)  # SV+RR+CR
            _move(acs_root, f"{base}/{old}", f"{base}/0000:00:08.0/0000:01:00.0/{dsp}/{new}", old, new)
        facts = _nvml_facts(machine, dump)
        for g in facts["gpus"]:
            g["pci_bus_id"] = moves[g["pci_bus_id"]][1]
            for link in g["nvlinks"]:
                link.update(active=False, version=None, remote_pci_bus_id=None, remote_device_type=None, speed_mbps=None)
            nv = g["link_health"]["nvlink"]
            for link in nv["links"]:
                link.update(active=False, errors={})
            nv["active_count"] = 0
        for pair in facts["pairs"]:
            pair["p2p"]["nvlink"] = "NOT_SUPPORTED"
            pair["common_ancestor"] = "SINGLE"
        _write(FIXTURES / "h100x2-vm-acs", acs_root, facts, None,
               "CHANGED: a PCIe switch with ACS RR+CR on its downstream ports inserted above the GPUs "
               "(0000:00:06.0 -> 0000:03:00.0, 0000:00:07.0 -> 0000:04:00.0), NVLinks marked inactive")

        x8_root = Path(tmp) / "x8"
        _tree(machine, x8_root)
        (x8_root / base / "0000:00:07.0" / "current_link_width").write_text("8\n")
        x8_dump = json.loads(json.dumps(dump))
        x8_dump["gpus"][1]["pcie_link_width_current"] = 8
        facts = _nvml_facts(machine, x8_dump)
        facts["gpus"][1]["pcie"]["width"] = 8
        _write(FIXTURES / "h100x2-vm-x8", x8_root, facts, None,
               "CHANGED: GPU1 (0000:00:07.0) trained at x8: sysfs current_link_width and NVML current width 16 -> 8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
