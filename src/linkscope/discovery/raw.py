"""Record what discovery reads (the golden-fixture recorder behind ``linkscope topo export --raw DIR``)
and rebuild a Topology from such a recording.

A recording folder holds, where available:

* ``nvml.json`` — ``nvml.read_facts`` output;
* ``sysfs.json`` — ``sysfs.read_facts`` output, and ``sysfs.tar.gz`` — every sysfs file, symlink
  and listed folder discovery touched (symlinks kept as symlinks, file sizes as read, not the
  4096 bytes sysfs claims), to be read again with ``sysfs.read_facts(root=<extracted folder>)``;
* ``pcihealth.json`` — ``pcihealth.read_facts`` output (ACS per bridge from the PCI config space,
  BARs, IOMMU groups and mode, the P2P-related kernel parameters, whether this is a VM); the config
  files and ``/proc/cmdline`` it read are in ``sysfs.tar.gz`` too, so ``load_health_facts`` reads
  them again (an edited config file in the archive gives a new diagnosis);
* ``amdsmi.json`` — ``amdsmi.read_facts`` output where the amdsmi package works;
* the ROCm SMI outputs named in ``rocm.COMMANDS`` (``rocm-smi-showtopo.txt``, ``amd-smi-topology.json``, ...);
* ``manifest.json`` — what was recorded and why anything is missing.

Recording never fails for a missing backend: the reason goes into the manifest.
"""
from __future__ import annotations

import io
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..atomic import write_bytes_atomic, write_json_atomic, write_text_atomic
from ..errors import BackendUnavailable, UserError
from ..topology.model import Topology
from ..userfiles import extract_tar_bounded, loads_strict, read_text, refuse_malformed
from ..userschema import validate
from . import amdsmi, nvml, pcihealth, rocm, sysfs
from .recording_schema import SCHEMAS

MANIFEST_FORMAT = "linkscope.raw-recording"


def archive_sysfs(reader: sysfs.SysReader, path: Path) -> None:
    """Write the folders, symlinks and files ``reader`` touched as a tar.gz (names relative to root)."""
    buffer = io.BytesIO()  # about 1 MiB; written through the one output writer (atomic, no leftover)
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        names: set[str] = set()

        def add_dir(name: str) -> None:
            parts = name.split("/")
            for i in range(1, len(parts) + 1):
                sub = "/".join(parts[:i])
                if sub and sub not in names and sub not in reader.links:
                    names.add(sub)
                    info = tarfile.TarInfo(sub)
                    info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
                    tar.addfile(info)

        for folder in sorted(reader.dirs):
            add_dir(folder)
        for name, text in sorted(reader.files.items()):
            add_dir(name.rsplit("/", 1)[0] if "/" in name else "")
            data = (text + "\n").encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o444, 0
            tar.addfile(info, io.BytesIO(data))
        for name, blob in sorted(reader.blobs.items()):  # binary files (PCI config space) byte for byte
            add_dir(name.rsplit("/", 1)[0] if "/" in name else "")
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(blob), 0o444, 0
            tar.addfile(info, io.BytesIO(blob))
        for name, target in sorted(reader.links.items()):
            add_dir(name.rsplit("/", 1)[0] if "/" in name else "")
            info = tarfile.TarInfo(name)
            info.type, info.linkname, info.mode, info.mtime = tarfile.SYMTYPE, target, 0o777, 0
            tar.addfile(info)
    write_bytes_atomic(path, buffer.getvalue())


def extract_sysfs(archive: Path, destination: Path) -> None:
    """Extract a recorded sysfs tree (refusing members that would land outside ``destination``)."""
    extract_tar_bounded(archive, destination, "recorded sysfs tree")


def export_raw(directory: Path, sysfs_root: Path = Path("/"), *,
               require_sysfs: bool = False,
               nvml_module: Any | None = None,
               rocm_run: Callable[[list[str]], str | None] | None = None,
               which: Callable[[str], str | None] | None = None,
               amdsmi_module: Any | None = None) -> list[Path]:
    """Record discovery inputs into ``directory``; returns the files written (manifest last).

    ``require_sysfs`` (a sysfs root the user named): a missing or incomplete tree is a UserError,
    raised before anything is written. ``nvml_module``, ``rocm_run`` and ``which`` replace pynvml,
    subprocess and PATH lookup in tests.
    """
    directory = Path(directory)
    reader = sysfs.SysReader(Path(sysfs_root))
    sysfs_error: UserError | None = None
    sysfs_facts: dict[str, Any] | None = None
    health_facts: dict[str, Any] | None = None
    try:
        sysfs_facts = sysfs.read_facts(Path(sysfs_root), reader)
    except UserError as exc:
        if require_sysfs:
            raise
        sysfs_error = exc
    else:
        health_facts = pcihealth.read_facts(sysfs_facts["pci"], reader=reader)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create {directory}: {exc.strerror}") from exc
    written: list[Path] = []
    notes: list[str] = []
    availability = nvml.probe(nvml_module)
    if availability.ok:
        module = nvml_module if nvml_module is not None else nvml._import_pynvml()
        try:
            facts = nvml.read_facts(module)
        except UserError as exc:
            notes.append(f"nvml: {exc.one_line()}")
        else:
            write_json_atomic(directory / "nvml.json", facts)
            written.append(directory / "nvml.json")
    else:
        notes.append(f"nvml: {availability.reason}")
    if sysfs_error is not None:
        notes.append(f"sysfs: {sysfs_error.one_line()}")
    else:
        write_json_atomic(directory / "sysfs.json", sysfs_facts)
        write_json_atomic(directory / "pcihealth.json", health_facts)
        archive_sysfs(reader, directory / "sysfs.tar.gz")
        written += [directory / "sysfs.json", directory / "pcihealth.json", directory / "sysfs.tar.gz"]
    amd_module = amdsmi_module
    try:
        if amd_module is None:
            amd_module = amdsmi.import_amdsmi()
        else:
            amd_module.amdsmi_init()
    except (BackendUnavailable, Exception) as exc:
        notes.append(f"amdsmi: {exc}")
        amd_module = None
    if amd_module is not None:
        try:
            write_json_atomic(directory / "amdsmi.json", amdsmi.read_facts_and_shut_down(amd_module))
            written.append(directory / "amdsmi.json")
        except Exception as exc:
            notes.append(f"amdsmi: {type(exc).__name__}: {exc}")
    kwargs: dict[str, Any] = {}
    if rocm_run is not None:
        kwargs["run"] = rocm_run
    if which is not None:
        kwargs["which"] = which
    outputs = rocm.read_outputs(**kwargs)
    for name, text in outputs.items():
        write_text_atomic(directory / name, text)
        written.append(directory / name)
    if not outputs:
        notes.append("rocm: no rocm-smi / amd-smi output recorded")
    manifest = {"format": MANIFEST_FORMAT, "version": 1, "recorded_unix_s": int(time.time()),
                "sysfs_root": str(sysfs_root), "files": [p.name for p in written], "notes": notes}
    write_json_atomic(directory / "manifest.json", manifest)
    written.append(directory / "manifest.json")
    return written


def load_recorded(path: Path) -> Any:
    """One JSON file of a recording, read through the bounded reader and checked against its schema
    (``recording_schema.SCHEMAS``, by file name) before any reader sees it."""
    path = Path(path)
    data = loads_strict(read_text(path, "recorded file"), str(path))
    spec = SCHEMAS.get(path.name)
    if spec is not None:
        validate(data, spec, str(path))
    return data


@refuse_malformed("recording")
def _rebuild(build: Callable[..., Topology], *args: Any, **kwargs: Any) -> Topology:
    """A topology from recorded facts; a shape the schema did not foresee is one line (the net)."""
    return build(*args, **kwargs)


def load_sysfs_facts(directory: Path) -> dict[str, Any] | None:
    """Sysfs facts of a recording: read again from ``sysfs.tar.gz`` when present, else ``sysfs.json``."""
    directory = Path(directory)
    archive = directory / "sysfs.tar.gz"
    if archive.exists():
        with tempfile.TemporaryDirectory(prefix="linkscope-sysfs-") as tmp:
            extract_sysfs(archive, Path(tmp))
            return sysfs.read_facts(Path(tmp))
    if (directory / "sysfs.json").exists():
        return load_recorded(directory / "sysfs.json")
    return None


def load_health_facts(directory: Path) -> dict[str, Any] | None:
    """P2P-health facts of a recording: read again from ``sysfs.tar.gz`` when it holds the config
    files, else ``pcihealth.json``; None when the recording has neither."""
    directory = Path(directory)
    archive = directory / "sysfs.tar.gz"
    if archive.exists():
        with tempfile.TemporaryDirectory(prefix="linkscope-sysfs-") as tmp:
            extract_sysfs(archive, Path(tmp))
            reader = sysfs.SysReader(Path(tmp))
            facts = sysfs.read_facts(Path(tmp), reader)
            health = pcihealth.read_facts(facts["pci"], reader=reader)
            if any(d["config"]["status"] != "missing" for d in health["devices"].values()) or \
                    not (directory / "pcihealth.json").exists():
                return health
    if (directory / "pcihealth.json").exists():
        return load_recorded(directory / "pcihealth.json")
    return None


def load_recording(directory: Path) -> Topology:
    """Rebuild the Topology a recording describes (``is_this_system`` False)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"recording folder not found: {directory}")
    sysfs_facts = load_sysfs_facts(directory)
    if (directory / "nvml.json").exists():
        return _rebuild(nvml.facts_to_topology, load_recorded(directory / "nvml.json"), sysfs_facts)
    if (directory / "amdsmi.json").exists():
        return _rebuild(rocm.facts_to_topology, load_recorded(directory / "amdsmi.json"), sysfs_facts, name=directory.name)
    outputs = {name: read_text(directory / name, "recorded file") for name in rocm.COMMANDS if (directory / name).exists()}
    if outputs:
        return _rebuild(rocm.facts_to_topology, rocm.parse_outputs(outputs), sysfs_facts, name=directory.name)
    raise UserError(f"{directory} holds no recorded GPU discovery",
                    hint="expected nvml.json, amdsmi.json, rocm-smi-showtopo.txt or amd-smi-topology.json")
