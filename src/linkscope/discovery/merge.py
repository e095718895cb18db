"""Put a GPU backend's part (GPUs, their fabric links, NVSwitch) together with the host part
(sysfs PCIe tree, NUMA nodes, NICs) into one Topology.

When no sysfs facts are given, the host side is reduced to one CPU per NUMA node seen by the GPUs
and one PCIe link per GPU (rate from the GPU backend, else a datasheet default), with a note.
GPUs that the sysfs tree does not show (containers often hide it) are attached the same way, with a
note naming them.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..topology.model import Device, DeviceKind, Link, LinkKind, Provenance, Topology
from ..topology.synthetic import PCIE_GEN4_X16_GB_PER_S, UPI_GB_PER_S
from .sysfs import build_host


@dataclass(frozen=True)
class GpuPart:
    """What a GPU backend found.

    Attributes:
        gpus: GPU devices with topology indices 0..n-1.
        devices: other devices the backend knows (the NVSwitch plane).
        links: fabric links (nvlink, xgmi).
        host_links: per GPU id, the link to the host when the backend knows its rate (PCIe gen/width),
            with ``a`` = the GPU id and ``b`` = "" (filled in with the CPU id here).
        cores: per NUMA node, CPU ids the backend reports as local (used only without sysfs).
        notes, sources: carried into the Topology.
    """

    gpus: tuple[Device, ...]
    devices: tuple[Device, ...] = ()
    links: tuple[Link, ...] = ()
    host_links: Mapping[str, Link] = field(default_factory=dict)
    cores: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


def _host_link(part: GpuPart, gpu: Device, cpu_id: str) -> Link:
    known = part.host_links.get(gpu.id)
    if known is not None:
        return replace(known, a=gpu.id, b=cpu_id)
    return Link(gpu.id, cpu_id, LinkKind.PCIE, 1, PCIE_GEN4_X16_GB_PER_S, provenance=Provenance.DATASHEET,
                source="GPU host link rate unknown: assumed PCIe Gen4 x16", generation="PCIe Gen4 x16 (assumed)")


def assemble(
    name: str,
    part: GpuPart,
    sysfs_facts: Mapping[str, Any] | None = None,
    *,
    source: str,
    description: str = "",
    notes: Iterable[str] = (),
) -> Topology:
    """The merged Topology (``is_this_system`` False; the live path sets it)."""
    all_notes = list(notes) + list(part.notes)
    gpus = list(part.gpus)
    devices: list[Device] = []
    links: list[Link] = list(part.links)
    if sysfs_facts is not None:
        host = build_host(sysfs_facts, {g.pci_bus_id: g.id for g in gpus if g.pci_bus_id})
        all_notes.extend(host.notes)
        devices.extend(host.devices)
        links.extend(host.links)
        gpus = [g if g.numa_node is not None or host.gpu_numa.get(g.id) is None
                else replace(g, numa_node=host.gpu_numa[g.id]) for g in gpus]
        cpus = {d.numa_node: d.id for d in host.devices if d.kind is DeviceKind.CPU}
        missing = [g for g in gpus if g.id not in host.attached]
        if missing:
            all_notes.append("sysfs does not show " + ", ".join(f"{g.id} ({g.pci_bus_id})" for g in missing)
                             + " in the PCIe tree: attached directly to its NUMA node's CPU")
        for g in missing:
            cpu = cpus.get(g.numa_node) or (min(cpus.items(), key=lambda kv: kv[0] if kv[0] is not None else -1)[1]
                                            if cpus else None)
            if cpu is None:
                devices.append(Device(id="cpu0", kind=DeviceKind.CPU, name="CPU", numa_node=0))
                cpus[0] = cpu = "cpu0"
            links.append(_host_link(part, g, cpu))
    else:
        all_notes.append("no sysfs facts: PCIe switches, host bridges and NICs are not modelled; "
                         "each GPU is linked straight to its NUMA node's CPU")
        nodes = sorted({g.numa_node if g.numa_node is not None else 0 for g in gpus}) or [0]
        for n in nodes:
            cores = tuple(part.cores.get(n, ()))
            devices.append(Device(id=f"cpu{n}", kind=DeviceKind.CPU, name=f"NUMA node {n}", numa_node=n, cores=cores))
        for i, x in enumerate(nodes):
            for y in nodes[i + 1:]:
                links.append(Link(f"cpu{x}", f"cpu{y}", LinkKind.UPI, 1, UPI_GB_PER_S, provenance=Provenance.DATASHEET,
                                  source="socket interconnect unknown: datasheet default"))
        for g in gpus:
            links.append(_host_link(part, g, f"cpu{g.numa_node if g.numa_node is not None else 0}"))
    ordered = sorted(gpus, key=lambda d: d.index or 0) + devices + list(part.devices)
    return Topology(name=name, devices=tuple(ordered), links=tuple(links), source=source, description=description,
                    sources=tuple(part.sources), notes=tuple(all_notes))
