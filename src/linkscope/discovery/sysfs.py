"""The host side of a node from Linux sysfs: PCIe tree, NICs, NUMA nodes and their cores.

``root`` redirects every read (like hwloc's ``HWLOC_FSROOT``), so a recorded tree extracted into a
folder is read exactly like ``/``. Symlinks are resolved by hand relative to ``root`` (absolute
targets too), and every file, symlink and listed folder is remembered by the reader, which is what
``raw.export_raw`` archives as ``sysfs.tar.gz``.

What is read:

* ``/sys/bus/pci/devices/<bdf>`` — each entry links to ``/sys/devices/pciDDDD:BB/<root port>/.../<bdf>``;
  the folder names along that path are the chain root bus → root port → switch upstream port →
  switch downstream port → … → endpoint. Per device: ``class`` (0x0604 bridge, 0x03xx GPU, 0x02xx
  network, 0x12xx accelerator), ``vendor``, ``device``, ``numa_node``, ``local_cpulist``,
  ``current_link_speed`` / ``current_link_width`` (and the ``max_`` pair);
* ``/sys/class/infiniband/<name>/device`` and ``ports/1/rate``; ``/sys/class/net/<name>/device`` and
  ``speed`` (Mb/s);
* ``/sys/devices/system/node/node<N>/cpulist`` and ``meminfo``; ``/sys/devices/system/cpu/cpu<N>/topology/
  physical_package_id`` for the socket.

PCIe rate per direction: ``topology.pcie`` (GT/s × lanes × encoding / 8), e.g. Gen4 x16 = 31.508 GB/s,
as hwloc reports it.

Model built from the tree (``build_host``): one ``host_bridge`` per root bus (``pciDDDD:BB``, the
root ports folded into it), one ``pcie_switch`` per switch upstream port (its downstream ports
folded into it), one ``cpu`` per NUMA node, ``nic`` devices, and ``pcie`` links whose capacity is the
child's negotiated link. Bridges below a root port are taken in (upstream, downstream) pairs, the
way PCIe switches appear in sysfs.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..topology.model import Device, DeviceKind, Link, LinkKind, Provenance
from ..topology.pcie import pcie_gb_per_s, pcie_generation
from ..topology.synthetic import PCIE_GEN4_X16_GB_PER_S, UPI_GB_PER_S
from ..userfiles import open_regular
from .base import Availability

MAX_SYSFS_FILE_BYTES = 2**20
"""Largest sysfs file read (1 MiB): attributes are at most a page (4 KiB), a PCI config space 4 KiB;
a recorded or hand-made tree with more in one file is not a sysfs tree."""

FACTS_FORMAT = "linkscope.sysfs-facts"
FACTS_VERSION = 1

_BDF_RE = re.compile(r"^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_ROOT_BUS_RE = re.compile(r"^pci[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}$")
_GT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec")

CLASS_BRIDGE_PCI = "0x0604"
# endpoints we keep (class code prefixes): display/3D controllers, network controllers, accelerators
_ENDPOINT_CLASSES = ("0x03", "0x02", "0x12")

VENDORS = {
    "0x10de": "nvidia", "0x1002": "amd", "0x1022": "amd", "0x8086": "intel", "0x15b3": "mellanox",
    "0x10b5": "broadcom", "0x1000": "broadcom", "0x14e4": "broadcom", "0x11f8": "microchip",
    "0x17cb": "hpe", "0x1d9b": "hpe",
}


def normalise_bdf(text: str) -> str:
    """``00000000:07:00.0`` / ``0000:07:00.0`` / ``07:00.0`` → ``0000:07:00.0`` (lower case)."""
    text = text.strip().lower()
    parts = text.split(":")
    if len(parts) == 2:
        parts = ["0000", *parts]
    if len(parts) != 3:
        return text
    domain = parts[0][-4:].rjust(4, "0") if int(parts[0] or "0", 16) < 0x10000 else parts[0]
    return f"{domain}:{parts[1]}:{parts[2]}"


MAX_CPUS = 65536
"""CPU ids accepted in CPU lists and masks: 8 x the largest NR_CPUS Linux builds on x86 (8192 with
MAXSMP, arch/x86/Kconfig, from memory: not re-checked here). A list such as ``0-99999999999`` would
otherwise become a Python list of 10^11 ints before anything looked at it."""


def check_cpu_id(cpu: int, text: str) -> None:
    """Refuse a CPU id outside ``0 .. MAX_CPUS - 1`` (``text`` is the list or mask it came from)."""
    if not 0 <= cpu < MAX_CPUS:
        raise UserError(f"CPU {cpu} in {text[:60]!r} is beyond the {MAX_CPUS} CPUs linkscope accepts")


def parse_cpulist(text: str) -> list[int]:
    """``"0-3,8,10-11"`` → ``[0, 1, 2, 3, 8, 10, 11]``; empty text → ``[]``; ids of ``MAX_CPUS`` or
    more are refused before the list is built."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, _, hi = part.partition("-")
        if not re.fullmatch(r"[0-9]+", lo.strip()) or (hi and not re.fullmatch(r"[0-9]+", hi.strip())):
            raise UserError(f"not a CPU list: {text[:60]!r}")
        first, last = int(lo), int(hi or lo)
        check_cpu_id(last, text)
        cpus.extend(range(first, last + 1))
        if len(cpus) > MAX_CPUS:
            raise UserError(f"CPU list {text[:60]!r} names more than {MAX_CPUS} CPUs")
    return cpus


class SysReader:
    """Reads files under ``root`` as if it were ``/``, resolving symlinks relative to ``root``.

    Remembers what it touched (``files``: relative path → text, ``blobs``: relative path → the
    bytes of a binary file such as a PCI ``config``, ``links``: relative path → link text, ``dirs``:
    listed folders) so a recorder can archive exactly that.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.files: dict[str, str] = {}
        self.blobs: dict[str, bytes] = {}
        self.links: dict[str, str] = {}
        self.dirs: set[str] = set()

    def shown(self, rel: str) -> Path:
        return self.root / rel.lstrip("/")

    def resolve(self, rel: str) -> str:
        """The real path (relative to root, no leading slash) of ``rel``, symlinks followed."""
        parts = [p for p in rel.strip("/").split("/") if p]
        resolved: list[str] = []
        followed = 0
        while parts:
            comp = parts.pop(0)
            if comp == ".":
                continue
            if comp == "..":
                if resolved:
                    resolved.pop()
                continue
            resolved.append(comp)
            current = "/".join(resolved)
            full = self.root / current
            if full.is_symlink():
                followed += 1
                if followed > 64:
                    raise UserError(f"symlink loop under {full}")
                target = os.readlink(full)
                self.links[current] = target
                resolved.pop()
                if target.startswith("/"):
                    resolved = []
                parts = [p for p in target.split("/") if p] + parts
        return "/".join(resolved)

    def exists(self, rel: str) -> bool:
        return (self.root / self.resolve(rel)).exists()

    def read(self, rel: str, *, required: bool = False) -> str | None:
        """Stripped file text, None when absent or unreadable (UserError naming the path if required)."""
        real = self.resolve(rel)
        try:
            with open_regular(self.root / real, "sysfs file", max_bytes=MAX_SYSFS_FILE_BYTES) as handle:
                text = handle.read(MAX_SYSFS_FILE_BYTES).decode("utf-8", errors="replace").strip()
        except FileNotFoundError:
            if required:
                raise UserError(f"sysfs file missing: {self.shown(rel)}",
                                hint="is this a Linux sysfs tree (or a complete recorded one)?") from None
            return None
        except OSError:  # some sysfs attributes fail to read (EINVAL/EIO) on some devices
            if required:
                raise UserError(f"sysfs file unreadable: {self.shown(rel)}") from None
            return None
        self.files[real] = text
        return text

    def read_bytes(self, rel: str, limit: int = 4096) -> bytes | None:
        """The bytes of a binary file (at most ``limit``), None when absent or unreadable. A PCI
        ``config`` file gives as many bytes as the kernel lets this user read (64 without
        CAP_SYS_ADMIN, see ``discovery.pcihealth``), and exactly those are remembered."""
        real = self.resolve(rel)
        try:
            with open_regular(self.root / real, "sysfs file", max_bytes=MAX_SYSFS_FILE_BYTES) as handle:
                data = handle.read(limit)
        except OSError:
            return None
        self.blobs[real] = data
        return data

    def listdir(self, rel: str, *, required: bool = False) -> list[str]:
        real = self.resolve(rel)
        try:
            names = sorted(os.listdir(self.root / real))
        except (FileNotFoundError, NotADirectoryError):
            if required:
                raise UserError(f"sysfs folder missing: {self.shown(rel)}",
                                hint="is this a Linux sysfs tree (or a complete recorded one)?") from None
            return []
        self.dirs.add(real)
        return names


def probe(root: Path = Path("/")) -> Availability:
    folder = Path(root) / "sys" / "bus" / "pci" / "devices"
    if folder.is_dir():
        return Availability("sysfs", True, version=None)
    return Availability("sysfs", False, f"no PCI devices folder at {folder} (not Linux, or /sys not mounted)")


def _int_or_none(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def _link_fields(reader: SysReader, base: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, name in (("speed_gt_per_s", "current_link_speed"), ("max_speed_gt_per_s", "max_link_speed")):
        text = reader.read(f"{base}/{name}")
        match = _GT_RE.match(text or "")
        out[key] = float(match.group(1)) if match else None
    for key, name in (("width", "current_link_width"), ("max_width", "max_link_width")):
        value = _int_or_none(reader.read(f"{base}/{name}"))
        out[key] = value if value else None
    return out


def _chain(reader: SysReader, bdf: str) -> list[tuple[str, str]]:
    """(name, real folder) of the root bus and every PCI device from it down to ``bdf``."""
    real = reader.resolve(f"sys/bus/pci/devices/{bdf}")
    names = real.split("/")
    return [(n, "/".join(names[: i + 1])) for i, n in enumerate(names) if _ROOT_BUS_RE.match(n) or _BDF_RE.match(n)]


def read_facts(root: Path = Path("/"), reader: SysReader | None = None) -> dict[str, Any]:
    """Everything discovery uses from sysfs, as JSON-able data. Raises UserError naming a missing
    required path (``/sys/bus/pci/devices`` or a device's ``class``); optional files become None
    or a note."""
    reader = reader or SysReader(Path(root))
    notes: list[str] = []
    classes: dict[str, str] = {}
    for entry in reader.listdir("sys/bus/pci/devices", required=True):
        cls = reader.read(f"sys/bus/pci/devices/{entry}/class", required=True)
        classes[entry] = (cls or "").lower()
    endpoints = [b for b, c in classes.items() if c.startswith(_ENDPOINT_CLASSES)]
    keep: dict[str, tuple[list[str], str]] = {}
    for bdf in endpoints:
        chain = _chain(reader, bdf)
        for i, (name, folder) in enumerate(chain):
            if _BDF_RE.match(name) and name not in keep:
                keep[name] = ([n for n, _ in chain[: i + 1]], folder)
    pci: dict[str, Any] = {}
    for bdf in sorted(keep):
        base = keep[bdf][1]
        cls = (reader.read(f"{base}/class", required=True) or "").lower() if bdf not in classes else classes[bdf]
        numa_node = _int_or_none(reader.read(f"{base}/numa_node"))
        pci[bdf] = {
            "class": cls,
            "vendor": (reader.read(f"{base}/vendor") or "").lower() or None,
            "device": (reader.read(f"{base}/device") or "").lower() or None,
            "numa_node": numa_node if numa_node is not None and numa_node >= 0 else None,
            "local_cpulist": reader.read(f"{base}/local_cpulist"),
            "link": _link_fields(reader, base),
            "chain": keep[bdf][0],
        }
    nics = _read_nics(reader, pci, notes)
    numa = _read_numa(reader, notes)
    return {"format": FACTS_FORMAT, "version": FACTS_VERSION, "pci": pci, "nics": nics, "numa": numa, "notes": notes}


def _read_nics(reader: SysReader, pci: Mapping[str, Any], notes: list[str]) -> list[dict[str, Any]]:
    nics: dict[str, dict[str, Any]] = {}
    for name in reader.listdir("sys/class/infiniband"):
        if not reader.exists(f"sys/class/infiniband/{name}/device"):
            continue
        bdf = reader.resolve(f"sys/class/infiniband/{name}/device").rsplit("/", 1)[-1]
        rate_text = reader.read(f"sys/class/infiniband/{name}/ports/1/rate")
        match = _RATE_RE.match(rate_text or "")
        nics[bdf] = {"name": name, "pci_bus_id": bdf, "type": "infiniband",
                     "rate_gbit_per_s": float(match.group(1)) if match else None, "netdevs": []}
    for name in reader.listdir("sys/class/net"):
        if not reader.exists(f"sys/class/net/{name}/device"):
            continue  # virtual interface (lo, bridges, veth)
        bdf = reader.resolve(f"sys/class/net/{name}/device").rsplit("/", 1)[-1]
        if bdf not in pci:
            continue
        if bdf in nics:
            nics[bdf]["netdevs"].append(name)
            continue
        speed = _int_or_none(reader.read(f"sys/class/net/{name}/speed"))
        nics[bdf] = {"name": name, "pci_bus_id": bdf, "type": "ethernet",
                     "rate_gbit_per_s": speed / 1000 if speed and speed > 0 else None, "netdevs": [name]}
    for bdf in nics:
        if bdf not in pci:
            notes.append(f"sysfs: NIC {nics[bdf]['name']} at {bdf} is not in the PCI tree; left out")
    return [nics[b] for b in sorted(nics) if b in pci]


def _read_numa(reader: SysReader, notes: list[str]) -> list[dict[str, Any]]:
    nodes = []
    names = [n for n in reader.listdir("sys/devices/system/node") if re.fullmatch(r"node\d+", n)]
    for name in sorted(names, key=lambda n: int(n[4:])):
        node = int(name[4:])
        cpus = parse_cpulist(reader.read(f"sys/devices/system/node/{name}/cpulist") or "")
        meminfo = reader.read(f"sys/devices/system/node/{name}/meminfo") or ""
        match = re.search(r"MemTotal:\s+(\d+)\s*kB", meminfo)
        socket = None
        if cpus:
            socket = _int_or_none(reader.read(f"sys/devices/system/cpu/cpu{cpus[0]}/topology/physical_package_id"))
        nodes.append({"node": node, "cpus": cpus, "memory_bytes": int(match.group(1)) * 1024 if match else None,
                      "socket": socket})
    if not nodes:
        cpus = parse_cpulist(reader.read("sys/devices/system/cpu/online") or "")
        notes.append(f"sysfs: no NUMA nodes under {reader.shown('sys/devices/system/node')}; assuming one node")
        nodes.append({"node": 0, "cpus": cpus, "memory_bytes": None, "socket": 0 if cpus else None})
    return nodes


# ---- facts → devices and links ------------------------------------------------------------------

@dataclass(frozen=True)
class HostParts:
    """The host side built from sysfs facts.

    Attributes:
        devices: CPUs, host bridges, PCIe switches, NICs (no GPUs).
        links: pcie links (including those ending at the GPUs named in ``gpu_ids``) and upi links.
        attached: GPU ids that were found in the PCIe tree and linked.
        gpu_numa: NUMA node of each attached GPU as sysfs reports it.
        notes: what could not be modelled.
    """

    devices: tuple[Device, ...]
    links: tuple[Link, ...]
    attached: frozenset[str]
    gpu_numa: Mapping[str, int | None] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _pcie_link(a: str, b: str, info: Mapping[str, Any] | None, fallback: Mapping[str, Any] | None = None) -> Link:
    for source in (info, fallback):
        if source and source.get("speed_gt_per_s") and source.get("width"):
            speed, width = source["speed_gt_per_s"], source["width"]
            return Link(a, b, LinkKind.PCIE, 1, pcie_gb_per_s(speed, width), provenance=Provenance.OS,
                        source="sysfs current_link_speed/current_link_width", generation=pcie_generation(speed, width))
        if source and source.get("gb_per_s"):  # a recorded rate without gen/width (hwloc pci_link_speed)
            return Link(a, b, LinkKind.PCIE, 1, float(source["gb_per_s"]), provenance=Provenance.OS,
                        source=str(source.get("source") or "recorded PCIe link rate"))
    return Link(a, b, LinkKind.PCIE, 1, PCIE_GEN4_X16_GB_PER_S, provenance=Provenance.DATASHEET,
                source="link speed not in sysfs: assumed PCIe Gen4 x16", generation="PCIe Gen4 x16 (assumed)")


def build_host(facts: Mapping[str, Any], gpu_ids: Mapping[str, str]) -> HostParts:
    """Devices and links of the host side. ``gpu_ids`` maps a GPU's PCI bus id to its device id;
    those endpoints are linked into the tree (the caller creates the GPU devices)."""
    notes = list(facts.get("notes", []))
    pci: Mapping[str, Any] = facts.get("pci", {})
    numa_nodes = facts.get("numa", [])
    cpu_ids = {n["node"]: f"cpu{n['node']}" for n in numa_nodes}
    devices: list[Device] = []
    links: list[Link] = []
    for n in numa_nodes:
        devices.append(Device(id=cpu_ids[n["node"]], kind=DeviceKind.CPU, name=f"NUMA node {n['node']}",
                              numa_node=n["node"], socket=n.get("socket"), cores=tuple(n.get("cpus", [])),
                              memory_bytes=n.get("memory_bytes")))
    ordered = sorted(cpu_ids)
    for i, x in enumerate(ordered):
        for y in ordered[i + 1:]:
            links.append(Link(cpu_ids[x], cpu_ids[y], LinkKind.UPI, 1, UPI_GB_PER_S, provenance=Provenance.DATASHEET,
                              source="socket interconnect not in sysfs: datasheet default (3 UPI links, Sapphire Rapids class)"))

    wanted_gpus = {normalise_bdf(b): gid for b, gid in gpu_ids.items()}
    nic_by_bdf = {n["pci_bus_id"]: n for n in facts.get("nics", [])}
    endpoints = sorted(b for b in pci if b in wanted_gpus or b in nic_by_bdf)
    root_buses: dict[str, set[int]] = {}
    switches: dict[str, str] = {}  # upstream-port bdf -> root bus
    edges: list[tuple[tuple[str, str], tuple[str, str], Mapping[str, Any] | None, Mapping[str, Any] | None]] = []
    for bdf in endpoints:
        chain = pci[bdf]["chain"]
        if not chain or not _ROOT_BUS_RE.match(chain[0]):
            notes.append(f"sysfs: {bdf} has no root bus in its path; left out")
            continue
        root_bus = chain[0]
        bridges = chain[1:-1]
        numa = next((pci[b]["numa_node"] for b in chain[1:] if b in pci and pci[b]["numa_node"] is not None), None)
        root_buses.setdefault(root_bus, set())
        if numa is not None:
            root_buses[root_bus].add(numa)
        parent: tuple[str, str] = ("hb", root_bus)
        parent_link = pci[bridges[0]]["link"] if bridges else None
        for k in range(1, len(bridges), 2):  # bridges[0] is the root port; then (upstream, downstream) pairs
            upstream = bridges[k]
            switches[upstream] = root_bus
            edges.append((parent, ("sw", upstream), pci[upstream]["link"], parent_link))
            parent = ("sw", upstream)
            parent_link = pci[bridges[k + 1]]["link"] if k + 1 < len(bridges) else None
        edges.append((parent, ("ep", bdf), pci[bdf]["link"], parent_link))

    hb_ids = {rb: f"hb{i}" for i, rb in enumerate(sorted(root_buses))}
    sw_ids = {up: f"sw{i}" for i, up in enumerate(sorted(switches))}

    def device_id(node: tuple[str, str]) -> str:
        kind, key = node
        if kind == "hb":
            return hb_ids[key]
        if kind == "sw":
            return sw_ids[key]
        return wanted_gpus.get(key) or nic_by_bdf[key]["name"]

    single_cpu = cpu_ids[ordered[0]] if len(ordered) == 1 else None
    for rb, hb in hb_ids.items():
        nodes = root_buses[rb]
        numa = min(nodes) if nodes else None
        if len(nodes) > 1:
            notes.append(f"sysfs: devices under {rb} report NUMA nodes {sorted(nodes)}; attached to node {numa}")
        devices.append(Device(id=hb, kind=DeviceKind.HOST_BRIDGE, name=f"PCIe root complex {rb}", numa_node=numa,
                              attributes={"root_bus": rb}))
    for up, sw in sw_ids.items():
        info = pci[up]
        vendor = VENDORS.get(info.get("vendor") or "")
        devices.append(Device(id=sw, kind=DeviceKind.PCIE_SWITCH, name="PCIe switch", vendor=vendor,
                              pci_bus_id=up, numa_node=info.get("numa_node"),
                              attributes={"vendor_id": info.get("vendor"), "device_id": info.get("device")}))
    for bdf, nic in nic_by_bdf.items():
        if bdf not in pci or bdf not in endpoints:
            continue
        info = pci[bdf]
        attrs: dict[str, Any] = {"type": nic["type"]}
        if nic.get("netdevs"):
            attrs["netdevs"] = list(nic["netdevs"])
        devices.append(Device(id=nic["name"], kind=DeviceKind.NIC, name=f"{nic['type']} NIC",
                              vendor=VENDORS.get(info.get("vendor") or ""), pci_bus_id=bdf,
                              numa_node=info.get("numa_node"), device_name=nic["name"],
                              line_rate_gbit_per_s=nic.get("rate_gbit_per_s"), attributes=attrs))

    seen: set[frozenset[str]] = set()
    widest_under: dict[str, float] = {}
    for parent, child, info, fallback in edges:
        a, b = device_id(parent), device_id(child)
        if frozenset((a, b)) in seen:
            continue
        seen.add(frozenset((a, b)))
        link = _pcie_link(a, b, info, fallback)
        links.append(link)
        if parent[0] == "hb":
            widest_under[a] = max(widest_under.get(a, 0.0), link.capacity_gb_per_s)
    for rb, hb in hb_ids.items():
        nodes = root_buses[rb]
        cpu = cpu_ids.get(min(nodes)) if nodes else single_cpu
        if cpu is None:
            cpu = cpu_ids[ordered[0]] if ordered else None
            notes.append(f"sysfs: NUMA node of {rb} unknown; attached to {cpu}")
        if cpu is None:
            continue
        links.append(Link(hb, cpu, LinkKind.PCIE, 1, widest_under.get(hb, PCIE_GEN4_X16_GB_PER_S),
                          provenance=Provenance.DATASHEET,
                          source="root complex modelled as non-blocking: capacity of its widest root-port link"))
    attached = frozenset(wanted_gpus[b] for b in endpoints if b in wanted_gpus)
    gpu_numa = {wanted_gpus[b]: pci[b]["numa_node"] for b in endpoints if b in wanted_gpus}
    return HostParts(tuple(devices), tuple(links), attached, gpu_numa, tuple(notes))
