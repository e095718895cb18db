"""The facts a health report needs, read live from this machine or from a recorded folder
(``topology export --raw``), so the same report comes out of both."""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..discovery import amdsmi, nvml, pcihealth, raw, sysfs
from ..errors import UserError
from ..topology.model import Topology
from .health import HealthReport, build_report


@dataclass(frozen=True)
class HealthInputs:
    """What ``build_report`` reads; None where a source was not available (said in ``notes``)."""

    sysfs_facts: Mapping[str, Any] | None
    health_facts: Mapping[str, Any] | None
    nvml_facts: Mapping[str, Any] | None = None
    amd_facts: Mapping[str, Any] | None = None
    notes: tuple[str, ...] = field(default=())
    amd_link_health: Mapping[str, Any] | None = None  # {"<amdsmi index>": link health}, live only

    def link_snapshot(self, topology: Topology) -> dict[str, Any]:
        """The link state and error counters as a ``counters.linkerrors`` snapshot keyed by the
        topology's GPU index (NVIDIA: ``link_health`` of the NVML facts, live or recorded; AMD: read
        live through amdsmi)."""
        by_bus = {(g.pci_bus_id or "").lower(): g.index for g in topology.gpus}
        out: dict[str, Any] = {}
        for facts, health_of in ((self.nvml_facts, None), (self.amd_facts, self.amd_link_health)):
            for g in (facts or {}).get("gpus", []):
                health = g.get("link_health") if health_of is None else health_of.get(str(g.get("index")))
                if health:
                    out[str(by_bus.get(str(g.get("pci_bus_id") or "").lower(), g.get("index")))] = health
        return {"gpus": out}

    def report(self, topology: Topology) -> HealthReport:
        report = build_report(topology, sysfs_facts=self.sysfs_facts, health_facts=self.health_facts,
                              nvml_facts=self.nvml_facts, amd_facts=self.amd_facts)
        if self.notes:
            from dataclasses import replace

            report = replace(report, notes=tuple(self.notes) + report.notes)
        return report


def live(sysfs_root: Path = Path("/")) -> HealthInputs:
    """Read sysfs (config space, IOMMU, cmdline), NVML and amdsmi now; never raises for a missing
    backend (it becomes a note)."""
    notes: list[str] = []
    root = Path(sysfs_root)
    sysfs_facts = health_facts = None
    try:
        reader = sysfs.SysReader(root)
        sysfs_facts = sysfs.read_facts(root, reader)
        health_facts = pcihealth.read_facts(sysfs_facts["pci"], reader=reader)
    except UserError as exc:
        notes.append(f"sysfs: {exc.one_line()}")
    euid = os.geteuid() if hasattr(os, "geteuid") else None
    if euid not in (None, 0):
        notes.append(f"Running as uid {euid}, not root: ACS (PCIe extended config space) cannot be read; "
                     "'sudo linkscope topo --health' reads it.")
    nvml_facts = amd_facts = None
    if nvml.probe().ok:
        try:
            nvml_facts = nvml.read_facts(nvml._import_pynvml())
        except Exception as exc:
            notes.append(f"NVML: {exc}")
    else:
        try:
            module = amdsmi.import_amdsmi()
        except Exception:
            module = None
        amd_health: dict[str, Any] | None = None
        if module is not None:
            try:
                from ..counters.amdsmi import AmdsmiSource

                source = AmdsmiSource(module)
                amd_health = {str(i): source.link_health(i) for i in range(source.device_count())}
            except Exception as exc:
                notes.append(f"amdsmi link health: {type(exc).__name__}: {exc}")
            try:
                amd_facts = amdsmi.read_facts_and_shut_down(module)
            except Exception as exc:
                notes.append(f"amdsmi: {type(exc).__name__}: {exc}")
        return HealthInputs(sysfs_facts, health_facts, None, amd_facts, tuple(notes), amd_health)
    return HealthInputs(sysfs_facts, health_facts, nvml_facts, amd_facts, tuple(notes))


def recorded(directory: Path) -> HealthInputs:
    """The facts of a recorded folder (``sysfs.tar.gz`` / ``sysfs.json``, ``pcihealth.json``,
    ``nvml.json``, ``amdsmi.json``, and ``lspci*.txt`` hex dumps for config space the tree lacks)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"recording folder not found: {directory}")
    notes = []

    def load(name: str) -> dict[str, Any] | None:
        path = directory / name
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise UserError(f"{path} is not readable JSON: {exc}") from None

    sysfs_facts = raw.load_sysfs_facts(directory)
    health_facts = raw.load_health_facts(directory)
    for path in sorted(directory.glob("lspci*.txt")):  # a root 'lspci -vvv -xxxx' beside the tree has the full space
        dumps = pcihealth.parse_lspci_hex(path.read_text(errors="replace"))
        if dumps and health_facts is not None:
            health_facts = pcihealth.overlay_config(health_facts, dumps, path.name)
            notes.append(f"config space of bridges not readable in the sysfs tree taken from {path.name} where it has it")
    if health_facts is None:
        notes.append(f"{directory} has no config-space/IOMMU recording (recorded before linkscope recorded them?)")
    return HealthInputs(sysfs_facts, health_facts, load("nvml.json"), load("amdsmi.json"), tuple(notes))
