from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from linkscope.discovery import nvml, raw, sysfs
from linkscope.errors import UserError
from linkscope.topology import io
from tests.discovery.discovery_fakes import FakeNVML, build_pcie_2s_sysfs, pcie_2s_nvml


def test_export_raw_records_what_discovery_reads(tmp_path: Path) -> None:
    root = tmp_path / "root"
    build_pcie_2s_sysfs(root)
    out = tmp_path / "rec"
    written = raw.export_raw(out, root, nvml_module=pcie_2s_nvml(), which=lambda name: None)
    assert [p.name for p in written] == ["nvml.json", "sysfs.json", "pcihealth.json", "sysfs.tar.gz", "manifest.json"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["notes"][-1] == "rocm: no rocm-smi / amd-smi output recorded"
    assert manifest["notes"][0].startswith("amdsmi: ")  # no amdsmi package on the CPU machine: a note, not a failure
    with tarfile.open(out / "sysfs.tar.gz") as tar:
        members = {m.name: m for m in tar.getmembers()}
    link = members["sys/bus/pci/devices/0000:83:00.0"]
    assert link.issym() and link.linkname == "../../../devices/pci0000:80/0000:80:01.0/0000:81:00.0/0000:82:00.0/0000:83:00.0"
    assert members["sys/class/infiniband/mlx5_0"].issym()
    rate = members["sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:04.0/0000:07:00.0/infiniband/mlx5_0/ports/1/rate"]
    assert rate.isfile() and rate.size == len("200 Gb/sec (4X HDR)\n")
    # the archive alone gives back the same facts, and the recording the same topology
    assert raw.load_sysfs_facts(out) == json.loads((out / "sysfs.json").read_text())
    direct = nvml.facts_to_topology(json.loads((out / "nvml.json").read_text()), sysfs.read_facts(root))
    assert io.dumps(raw.load_recording(out)) == io.dumps(direct)


def test_export_raw_without_any_backend_still_writes_a_manifest(tmp_path: Path) -> None:
    import pynvml

    absent = FakeNVML(gpus=[], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    written = raw.export_raw(tmp_path / "rec", tmp_path / "nothing", nvml_module=absent, which=lambda name: None)
    assert [p.name for p in written] == ["manifest.json"]
    notes = json.loads((tmp_path / "rec" / "manifest.json").read_text())["notes"]
    assert notes[0] == "nvml: NVML library not found: counters and live discovery need an NVIDIA driver"
    assert notes[1].startswith("sysfs: sysfs folder missing: ")


def test_export_raw_records_rocm_outputs(tmp_path: Path) -> None:
    import pynvml

    absent = FakeNVML(gpus=[], init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    written = raw.export_raw(tmp_path / "rec", tmp_path / "nothing", nvml_module=absent,
                             which=lambda name: name == "rocm-smi" or None,
                             rocm_run=lambda argv: f"output of {' '.join(argv)}\n")
    names = [p.name for p in written]
    assert "rocm-smi-showtopo.txt" in names and "amd-smi-topology.json" not in names
    assert (tmp_path / "rec" / "rocm-smi-showtopo.txt").read_text() == "output of rocm-smi --showtopo\n"


def test_load_recording_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="recording folder not found"):
        raw.load_recording(tmp_path / "nope")
    with pytest.raises(UserError, match="holds no recorded GPU discovery"):
        raw.load_recording(tmp_path)
    (tmp_path / "nvml.json").write_text("{bad")
    with pytest.raises(UserError, match="nvml.json is not valid JSON"):
        raw.load_recording(tmp_path)


def test_extract_refuses_paths_outside_the_folder(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("../escape")
        info.size = 0
        tar.addfile(info)
    with pytest.raises(UserError):
        raw.extract_sysfs(archive, tmp_path / "dest")


def test_export_raw_require_sysfs_refuses_before_writing(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    with pytest.raises(UserError, match="sysfs folder missing"):
        raw.export_raw(out, tmp_path / "empty-root", require_sysfs=True, nvml_module=pcie_2s_nvml(), which=lambda n: None)
    assert not out.exists()
    written = raw.export_raw(out, tmp_path / "empty-root", nvml_module=pcie_2s_nvml(), which=lambda n: None)
    assert [p.name for p in written] == ["nvml.json", "manifest.json"]
    assert any(n.startswith("sysfs: sysfs folder missing") for n in json.loads((out / "manifest.json").read_text())["notes"])


# ---- every recorded file through the bounded reader and its schema (issue 40) ----------------------
@pytest.mark.parametrize("text, needle", [
    ("[]", "must be an object"),
    ('{"gpus": "none"}', "gpus must be a list"),
    ('{"gpus": [{"index": "abc", "pci_bus_id": "0000:01:00.0"}]}', r"index must be a number.*\$\.gpus\[0\]\.index"),
    ('{"gpus": [{"index": 0}]}', "missing field 'pci_bus_id'"),
    ('{"gpus": [{"index": 0, "pci_bus_id": "0000:01:00.0", "nvlinks": [{"link": "x"}]}]}', "link must be a number"),
    ('{"gpus": [], "pairs": [{"a": 0, "b": [1]}]}', "b must be a number"),
])
def test_a_damaged_nvml_recording_is_one_line(tmp_path: Path, text: str, needle: str) -> None:
    from linkscope.diagnose import gather

    (tmp_path / "nvml.json").write_text(text)
    with pytest.raises(UserError, match=needle):
        raw.load_recording(tmp_path)
    with pytest.raises(UserError, match=needle):
        gather.recorded(tmp_path)


@pytest.mark.parametrize("name", ["nvml.json", "sysfs.json", "pcihealth.json"])
def test_a_recorded_file_that_is_a_device_or_fifo_is_refused(tmp_path: Path, name: str) -> None:
    import os

    from linkscope.diagnose import gather

    (tmp_path / "nvml.json").write_text('{"gpus": []}')
    (tmp_path / name).unlink(missing_ok=True)
    (tmp_path / name).symlink_to("/dev/zero")
    with pytest.raises(UserError, match="is a device"):
        gather.recorded(tmp_path) if name != "nvml.json" else raw.load_recording(tmp_path)
    (tmp_path / name).unlink()
    os.mkfifo(tmp_path / name)
    with pytest.raises(UserError, match="FIFO"):
        gather.recorded(tmp_path) if name != "nvml.json" else raw.load_recording(tmp_path)


def test_a_recorded_lspci_fifo_is_refused(tmp_path: Path) -> None:
    import os

    from linkscope.diagnose import gather

    (tmp_path / "pcihealth.json").write_text('{"devices": {}}')
    os.mkfifo(tmp_path / "lspci.txt")
    with pytest.raises(UserError, match="FIFO"):
        gather.recorded(tmp_path)


def test_a_sysfs_archive_that_expands_to_2_gib_is_refused_before_writing(tmp_path: Path) -> None:
    """A 2 MB sysfs.tar.gz expanded to 2 GiB in the temporary folder before an unrelated error."""
    import gzip

    info = tarfile.TarInfo("bus/pci/devices/huge")
    info.size = 2 * 2**30
    (tmp_path / "sysfs.tar.gz").write_bytes(gzip.compress(info.tobuf(format=tarfile.GNU_FORMAT) + b"\0" * 65536))
    (tmp_path / "nvml.json").write_text('{"gpus": []}')
    with pytest.raises(UserError, match="expands to more than 256 MiB"):
        raw.load_recording(tmp_path)
