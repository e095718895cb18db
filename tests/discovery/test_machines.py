"""Golden recordings (hwloc style): tests/fixtures/machines/<name>/ holds recorded discovery inputs
(nvml.json, sysfs.tar.gz / sysfs.json, rocm-smi / amd-smi outputs) and expected_topology.json.
Every folder with inputs is checked; ``LINKSCOPE_UPDATE_GOLDEN=1`` rewrites the expected files
(and regenerates the inputs of the synthetic machines from tests/discovery/discovery_fakes.py)."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from linkscope.discovery import nvml, raw, rocm, sysfs
from linkscope.topology import io
from tests.discovery import discovery_fakes as fakes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "machines"
UPDATE = os.environ.get("LINKSCOPE_UPDATE_GOLDEN") == "1"
INPUTS = ("nvml.json", "sysfs.json", "sysfs.tar.gz", *rocm.COMMANDS)


def _machines() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted(p for p in FIXTURES.iterdir() if p.is_dir() and any((p / name).exists() for name in INPUTS))


def _regenerate_pcie_2s(folder: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fakes.build_pcie_2s_sysfs(root)
        reader = sysfs.SysReader(root)
        facts = sysfs.read_facts(root, reader)
        (folder / "sysfs.json").write_text(json.dumps(facts, indent=2) + "\n")
        raw.archive_sysfs(reader, folder / "sysfs.tar.gz")
    facts = nvml.read_facts(fakes.pcie_2s_nvml(), cpu_count=128, hostname="pcie-2s-8gpu")
    (folder / "nvml.json").write_text(json.dumps(facts, indent=2) + "\n")


def _regenerate_mi250x(folder: Path) -> None:
    (folder / "rocm-smi-showtopo.txt").write_text(fakes.mi250x_showtopo())
    (folder / "rocm-smi-showbus.txt").write_text(fakes.mi250x_gpu_lines("PCI Bus", [b.upper() for b in fakes.MI250X_BUS]))
    (folder / "rocm-smi-showproductname.txt").write_text(fakes.mi250x_gpu_lines("Card Series", ["AMD Instinct MI250X"] * 8))
    (folder / "amd-smi-topology.json").write_text(fakes.mi250x_amdsmi_topology_json())
    (folder / "amd-smi-list.json").write_text(fakes.mi250x_amdsmi_list_json())


SYNTHETIC = {"pcie-2s-8gpu": _regenerate_pcie_2s, "mi250x-8gcd": _regenerate_mi250x}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_machine_inputs_are_current(name: str, tmp_path: Path) -> None:
    folder = FIXTURES / name
    if UPDATE:
        folder.mkdir(parents=True, exist_ok=True)
        SYNTHETIC[name](folder)
    SYNTHETIC[name](tmp_path)
    for path in sorted(tmp_path.iterdir()):
        if path.suffix == ".gz":
            assert raw.load_sysfs_facts(folder) == raw.load_sysfs_facts(tmp_path), f"{folder}/sysfs.tar.gz is stale"
        else:
            assert (folder / path.name).read_text() == path.read_text(), \
                f"{folder / path.name} is stale: rerun with LINKSCOPE_UPDATE_GOLDEN=1"


@pytest.mark.parametrize("machine", _machines(), ids=lambda p: p.name)
def test_recording_gives_the_expected_topology(machine: Path) -> None:
    topology = raw.load_recording(machine)
    text = io.dumps(topology)
    expected = machine / "expected_topology.json"
    if UPDATE:
        expected.write_text(text)
    assert expected.exists(), f"{expected} missing: run with LINKSCOPE_UPDATE_GOLDEN=1 after checking the topology"
    assert text == expected.read_text(), f"{machine.name}: discovery output changed (LINKSCOPE_UPDATE_GOLDEN=1 if intended)"
    assert io.dumps(io.loads(text)) == text  # the expected file is a valid topology
    if (machine / "sysfs.tar.gz").exists() and (machine / "sysfs.json").exists():
        assert raw.load_sysfs_facts(machine) == json.loads((machine / "sysfs.json").read_text())
