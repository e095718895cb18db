"""The facts a health report needs, read live from this machine or from a recorded folder
(``topology export --raw``), so the same report comes out of both."""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import platforms
from ..counters import linkerrors
from ..discovery import pcihealth, raw, sysfs
from ..errors import BackendUnavailable, UserError
from ..topology.model import Topology
from ..userfiles import read_text
from .health import HealthReport, build_report


@dataclass(frozen=True)
class HealthInputs:
    """What ``build_report`` reads; None where a source was not available (said in ``notes``)."""

    sysfs_facts: Mapping[str, Any] | None
    health_facts: Mapping[str, Any] | None
    vendor_facts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # platform key -> its facts
    notes: tuple[str, ...] = field(default=())
    live_link_health: Mapping[str, Any] | None = None  # PCI bus id -> link health, read live

    def link_snapshot(self, topology: Topology) -> dict[str, Any]:
        """The link state and error counters as a ``counters.linkerrors`` snapshot keyed by the
        topology's GPU index: read live through the platform's counter source, or (a recording)
        the link health recorded in a platform's facts (NVML's; the row's ``facts.link_health``)."""
        by_bus = {(g.pci_bus_id or "").lower(): g.index for g in topology.gpus}
        if self.live_link_health is not None:
            return {"gpus": {str(by_bus.get(bus.lower(), k)): health
                             for k, (bus, health) in enumerate(sorted(self.live_link_health.items()))}}
        out: dict[str, Any] = {}
        for key, facts in self.vendor_facts.items():
            ref = platforms.by_key(key).facts
            for bus, index, health in platforms.load(ref).link_health(facts) if ref else ():
                out[str(by_bus.get(bus.lower(), index))] = health
        return {"gpus": out}

    def unrecorded_link_health(self) -> str:
        """Why a recording shows no link state: said by the platform whose facts it holds."""
        for key in self.vendor_facts:
            ref = platforms.by_key(key).facts
            if ref:
                return str(platforms.load(ref).unrecorded_link_health)
        return "not read (no NVML facts: an AMD node, or NVML unavailable)"

    def report(self, topology: Topology) -> HealthReport:
        report = build_report(topology, sysfs_facts=self.sysfs_facts, health_facts=self.health_facts,
                              vendor_facts=self.vendor_facts)
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
    facts: dict[str, Any] = {}
    for platform in platforms.hardware_platforms():  # the vendors' discovery facts, as the platform table says
        if platform.health_facts:
            try:
                facts[platform.key] = platforms.load(platform.health_facts)()
            except BackendUnavailable:
                continue  # not this vendor's machine
            except Exception as exc:
                notes.append(f"{platform.label}: {type(exc).__name__}: {exc}")
    return HealthInputs(sysfs_facts, health_facts, facts, tuple(notes), _live_link_health(notes))


def _live_link_health(notes: list[str]) -> dict[str, Any] | None:
    """Link state and error counters of every GPU now, by PCI bus id, through the counter source
    the platform table picks (NVML, amdsmi); None when none opens here."""
    from ..counters.sources import open_counter_source

    try:
        source = open_counter_source()
    except BackendUnavailable:
        return None
    try:
        out = {}
        for i in range(source.device_count()):
            health = linkerrors.take(source, [i])["gpus"].get(str(i))
            out[source.gpu_info(i).pci_bus_id or str(i)] = health
        return out
    except Exception as exc:
        notes.append(f"link health: {type(exc).__name__}: {exc}")
        return None
    finally:
        source.close()


def recorded(directory: Path) -> HealthInputs:
    """The facts of a recorded folder (``sysfs.tar.gz`` / ``sysfs.json``, ``pcihealth.json``,
    ``nvml.json``, ``amdsmi.json``, and ``lspci*.txt`` hex dumps for config space the tree lacks)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"recording folder not found: {directory}")
    notes = []

    def load(name: str) -> dict[str, Any] | None:
        path = directory / name
        return raw.load_recorded(path) if path.exists() or path.is_symlink() else None

    sysfs_facts = raw.load_sysfs_facts(directory)
    health_facts = raw.load_health_facts(directory)
    for path in sorted(directory.glob("lspci*.txt")):  # a root 'lspci -vvv -xxxx' beside the tree has the full space
        dumps = pcihealth.parse_lspci_hex(read_text(path, "recorded lspci output", errors="replace"))
        if dumps and health_facts is not None:
            health_facts = pcihealth.overlay_config(health_facts, dumps, path.name)
            notes.append(f"config space of bridges not readable in the sysfs tree taken from {path.name} where it has it")
    if health_facts is None:
        notes.append(f"{directory} has no config-space/IOMMU recording (recorded before linkscope recorded them?)")
    recorded_facts = {}
    for platform in platforms.hardware_platforms():  # each vendor's facts file, as its row names it
        if platform.facts:
            facts = load(platforms.load(platform.facts).recorded_file)
            if facts is not None:
                recorded_facts[platform.key] = facts
    return HealthInputs(sysfs_facts, health_facts, recorded_facts, tuple(notes))
