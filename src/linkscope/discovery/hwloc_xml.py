"""A Topology from hwloc XML (``lstopo --of xml``; hwloc 2.x writes ``<topology version="2.0">``,
hwloc 3 writes ``version="3.0"``: both are read).

What hwloc records, and where it lands (element and attribute names from hwloc's XML as written by
lstopo 2.9 on the CPU machine and by hwloc's own test files, tests/hwloc/xml/*.xml):

* ``NUMANode`` objects (``os_index``, ``cpuset``, ``local_memory``) inside a ``Package`` → one
  ``cpu`` device per NUMA node with its cores (the cpuset's bits), memory and socket; the package's
  ``CPUModel``/``CPUVendor``/``CPUFamilyNumber``/``CPUModelNumber`` infos are kept as attributes;
* ``Bridge`` objects: ``bridge_type="0-1"`` is a host bridge (root complex, ``bridge_pci`` names
  its bus range), ``1-1`` bridges are root ports and PCIe switch ports (``depth`` 1 = root port,
  then upstream/downstream pairs, the way sysfs shows them);
* ``PCIDev`` objects: ``pci_busid``, ``pci_type`` (``"0302 [10de:1db8] [10de:131d] a1"`` = class,
  vendor:device, subsystem, revision) and ``pci_link_speed`` (GB/s per direction, hwloc computes
  it as GT/s × lanes × encoding / 8; 0 when the OS does not report it);
* ``OSDev`` objects under a PCIDev: GPUs (``nvml0``, ``cuda0``, ``rsmi0``, with ``GPUModel``,
  ``NVIDIAUUID``/``AMDUUID`` infos), OpenFabrics devices (``mlx5_0``, InfiniBand) and network
  interfaces (``eth0``, ``ib0``);
* ``distances2`` / ``distances2hetero`` matrices: ``NVLinkBandwidth`` (MB/s per pair, hwloc sums a
  per-link rate of 20000 for NVLink 1, 25000 for NVLink 2–4, 50000 for NVLink 5 over the links of
  the pair: hwloc/topology-nvml.c) between GPUs, NVSwitch PCIDevs and CPU packages;
  ``XGMIBandwidth`` (hwloc/topology-rsmi.c writes a fixed 100000 MB/s for every xGMI pair).

What hwloc does not record is left out and named in the topology's notes: NIC line rates, GPU
memory sizes, CUDA ordinals, the socket interconnect's rate, and PCIe link speeds the OS did not
report (those links get linkscope's usual labelled Gen4 x16 assumption). GPUs are numbered in PCI
bus order (CUDA's default order is fastest-first; set ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` to match).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from .. import platforms
from ..errors import UserError
from ..topology.model import Device, DeviceKind, Link, LinkKind, Provenance, Topology
from .merge import GpuPart, assemble
from .sysfs import MAX_CPUS, VENDORS, normalise_bdf
from .xmlfile import attr_float, attr_int

HWLOC_NVLINK_SOURCE = ("hwloc NVLinkBandwidth matrix (MB/s per pair; hwloc sums 20000 per NVLink1, 25000 per "
                       "NVLink2-4, 50000 per NVLink5 link: hwloc/topology-nvml.c)")
HWLOC_XGMI_SOURCE = ("hwloc XGMIBandwidth matrix: hwloc writes a fixed 100000 MB/s for every xGMI-reachable pair "
                     "(hwloc/topology-rsmi.c), not a measured or per-link rate")
_PCI_TYPE_RE = re.compile(r"^\s*([0-9a-fA-F]{4})\s*\[([0-9a-fA-F]{4}):([0-9a-fA-F]{4})\]")
_BRIDGE_PCI_RE = re.compile(r"^\s*([0-9a-fA-F]{4,8}):\[([0-9a-fA-F]{2})-([0-9a-fA-F]{2})\]")
# hwloc 2.x XML: osdev_type is an enum; hwloc 3 XML: a bit mask.
_V2_OSDEV = {0: "storage", 1: "gpu", 2: "network", 3: "openfabrics", 4: "dma", 5: "coproc"}
_V3_OSDEV_BITS = {1: "storage", 2: "memory", 4: "gpu", 8: "coproc", 16: "network", 32: "openfabrics", 64: "dma"}
_BLACKWELL_RE = re.compile(r"\b(G?B[123]00)\b", re.IGNORECASE)


def _uuid(infos: dict[str, str]) -> str | None:
    """A GPU's UUID from the info a vendor's hwloc backend keeps it in (``NVIDIAUUID``, ``AMDUUID``)."""
    return next((infos[n.hwloc_uuid_info] for n in platforms.xml_names().values() if infos.get(n.hwloc_uuid_info)),
                None)


def parse_bitmap(text: str | None) -> list[int]:
    """hwloc bitmap string (``0x00000303,0x03030000,,0x0``: 32-bit words, most significant first, an
    empty word is zero, a ``0xf...f`` word is an infinite tail) → the set bits, ascending."""
    if not text:
        return []
    words = text.strip().split(",")
    if len(words) > MAX_CPUS // 32:
        raise UserError(f"hwloc bitmap {text[:60]!r}... has {len(words)} words; at most {MAX_CPUS // 32} "
                        f"({MAX_CPUS} CPUs) are accepted")
    bits: list[int] = []
    for position, word in enumerate(reversed(words)):
        word = word.strip().lower()
        if not word or "..." in word:
            continue
        try:
            value = int(word, 16)
        except ValueError:
            raise UserError(f"not an hwloc bitmap: {text[:60]!r}") from None
        bits.extend(position * 32 + b for b in range(32) if value >> b & 1)
    return sorted(bits)


def _infos(element: Element) -> dict[str, str]:
    return {i.get("name", ""): i.get("value", "") for i in element.findall("info")}


def _osdev_kinds(element: Element, version_major: int) -> set[str]:
    value = element.get("osdev_type")
    try:
        number = int(value or "")
    except ValueError:
        return set()
    if version_major >= 3:
        return {name for bit, name in _V3_OSDEV_BITS.items() if number & bit}
    return {_V2_OSDEV[number]} if number in _V2_OSDEV else set()


class _Reader:
    """One walk over the object tree, collecting sysfs-style facts, GPUs and distance matrices."""

    def __init__(self, root: Element, origin: str) -> None:
        self.origin = origin
        version = root.get("version", "")
        major = version.split(".")[0]
        if not major.isdigit() or int(major) < 2:
            raise UserError(f"{origin}: hwloc XML version {version!r} is not supported (need 2.x or 3.x)",
                            hint="re-export with a current lstopo: lstopo --of xml FILE.xml")
        self.version_major = int(major)
        self.by_gp: dict[str, Element] = {}
        self.parent: dict[int, Element] = {}
        self.numa: list[dict[str, Any]] = []
        self.numa_of_package: dict[str, int] = {}
        self.package_infos: dict[int, dict[str, str]] = {}
        self.pci: dict[str, dict[str, Any]] = {}
        self.gpus: dict[str, dict[str, Any]] = {}  # bdf -> facts
        self.nvswitches: set[str] = set()
        self.nics: dict[str, dict[str, Any]] = {}
        self.machine_infos: dict[str, str] = {}
        self.unknown_speed: list[str] = []
        top = root.find("object")
        if top is None:
            raise UserError(f"{origin}: hwloc XML has no <object> (is it lstopo --of xml output?)")
        # hwloc 3.x XML keeps the topology's own infos (HostName, OSName ...) as <info> children of
        # <topology>, after the objects (open-mpi/hwloc tests/hwloc/xml/power8gpudistances.xml, our
        # fixture hwloc-test-power8gpudistances.xml:236); 2.x keeps them in the Machine object
        self.machine_infos = {**_infos(root), **_infos(top)}
        self._walk(top, package=None, nodes=None, chain=None)

    # -- tree ---------------------------------------------------------------------------------
    def _walk(self, obj: Element, package: int | None, nodes: list[int] | None, chain: list[str] | None) -> None:
        kind = obj.get("type", "")
        gp = obj.get("gp_index")
        if gp is not None:
            self.by_gp[f"{kind}:{gp}"] = obj
        if obj.get("nodeset"):
            nodes = [n for n in parse_bitmap(obj.get("nodeset"))] or nodes
        if kind == "Package":
            package = attr_int(obj, "os_index", self.origin)
            if package is not None:
                self.package_infos[package] = _infos(obj)
        elif kind == "NUMANode":
            node = attr_int(obj, "os_index", self.origin)
            if node is None:
                raise UserError(f"{self.origin}: a NUMANode has no os_index")
            self.numa.append({"node": node, "cpus": parse_bitmap(obj.get("cpuset")),
                              "memory_bytes": attr_int(obj, "local_memory", self.origin), "socket": package})
            if gp is not None and package is not None:
                self.numa_of_package.setdefault(f"Package:{package}", node)
        elif kind == "Bridge" and obj.get("bridge_type", "").startswith("0-"):
            match = _BRIDGE_PCI_RE.match(obj.get("bridge_pci", ""))
            if not match:
                raise UserError(f"{self.origin}: host bridge gp_index={gp} has no readable bridge_pci "
                                f"({obj.get('bridge_pci', '')[:40]!r})")
            chain = [f"pci{match.group(1)[-4:].lower()}:{match.group(2).lower()}"]
        elif kind in ("Bridge", "PCIDev"):
            self._pci(obj, kind, nodes, chain)
            bdf = normalise_bdf(obj.get("pci_busid", ""))
            chain = (chain or [f"pci{bdf[:7]}"]) + [bdf]
        elif kind == "OSDev":
            self._osdev(obj, chain)
        for child in obj.findall("object"):
            self._walk(child, package, nodes, chain)

    def _pci(self, obj: Element, kind: str, nodes: list[int] | None, chain: list[str] | None) -> None:
        bdf_text = obj.get("pci_busid")
        if not bdf_text:
            raise UserError(f"{self.origin}: a {kind} object has no pci_busid")
        bdf = normalise_bdf(bdf_text)
        match = _PCI_TYPE_RE.match(obj.get("pci_type", ""))
        if not match:
            raise UserError(f"{self.origin}: {kind} {bdf}: pci_type {obj.get('pci_type', '')[:40]!r} is not "
                            "'CCCC [vvvv:dddd] ...'")
        cls, vendor, device = (f"0x{g.lower()}" for g in match.groups())
        speed = attr_float(obj, "pci_link_speed", self.origin)
        link: dict[str, Any] = {"speed_gt_per_s": None, "width": None}
        if speed and speed > 0:
            link["gb_per_s"] = round(speed, 3)
            link["source"] = "hwloc pci_link_speed"
        self.pci[bdf] = {"class": cls, "vendor": vendor, "device": device,
                         "numa_node": min(nodes) if nodes else None, "local_cpulist": None, "link": link,
                         "chain": list(chain or [f"pci{bdf[:7]}"]) + [bdf], "subtype": obj.get("subtype")}
        gpu_vendor = platforms.vendor_of_pci_id(vendor)
        if kind == "PCIDev" and gpu_vendor is not None and cls.startswith(("0x03", "0x12")):
            self.gpus[bdf] = {"vendor": gpu_vendor, "device": device, "infos": {}, "osdevs": []}
        if kind == "PCIDev" and ((vendor == "0x10de" and cls == "0x0680") or obj.get("subtype") == "NVSwitch"):
            self.nvswitches.add(bdf)

    def _osdev(self, obj: Element, chain: list[str] | None) -> None:
        parent_bdf = chain[-1] if chain and not chain[-1].startswith("pci") else None
        kinds = _osdev_kinds(obj, self.version_major)
        name = obj.get("name", "")
        infos = _infos(obj)
        if parent_bdf is None:
            return
        if kinds & {"gpu", "coproc"} or any(infos.get("Backend") in n.hwloc_backends for n in platforms.xml_names().values()):
            gpu = self.gpus.get(parent_bdf)
            if gpu is None and parent_bdf in self.pci:
                info = self.pci[parent_bdf]
                gpu = self.gpus[parent_bdf] = {"vendor": VENDORS.get(info["vendor"]) or info["vendor"],
                                               "device": info["device"], "infos": {}, "osdevs": []}
            if gpu is not None:
                gpu["infos"].update(infos)
                gpu["osdevs"].append(name)
                self._osdev_gp(obj, parent_bdf)
        elif kinds & {"openfabrics", "network"}:
            nic = self.nics.setdefault(parent_bdf, {"name": None, "pci_bus_id": parent_bdf, "type": None,
                                                    "rate_gbit_per_s": None, "netdevs": []})
            if "openfabrics" in kinds:
                nic["name"] = name
                layer = infos.get("Port1LinkLayer", "")
                nic["type"] = "ethernet" if layer.lower() == "ethernet" else "infiniband"
            else:
                nic["netdevs"].append(name)
            self._osdev_gp(obj, parent_bdf)

    def _osdev_gp(self, obj: Element, bdf: str) -> None:
        gp = obj.get("gp_index")
        if gp is not None:
            self.by_gp[f"OSDev:{gp}"] = obj
            obj.set("linkscope-bdf", bdf)

    # -- distances ------------------------------------------------------------------------------
    def matrices(self, root: Element) -> dict[str, tuple[list[Element | None], list[int]]]:
        out: dict[str, tuple[list[Element | None], list[int]]] = {}
        for dist in list(root.findall("distances2")) + list(root.findall("distances2hetero")):
            name = dist.get("name", "")
            n = attr_int(dist, "nbobjs", self.origin) or 0
            tokens = " ".join(i.text or "" for i in dist.findall("indexes")).split()
            values_text = " ".join(v.text or "" for v in dist.findall("u64values")).split()
            if len(tokens) != n or len(values_text) != n * n:
                raise UserError(f"{self.origin}: distances matrix {name!r} has {len(tokens)} objects and "
                                f"{len(values_text)} values for nbobjs={n}")
            try:
                values = [int(v) for v in values_text]
            except ValueError:
                raise UserError(f"{self.origin}: distances matrix {name!r} holds a value that is not an integer") from None
            objs: list[Element | None] = []
            for token in tokens:
                if ":" in token:  # hetero: Type:gp_index
                    objs.append(self.by_gp.get(token))
                elif dist.get("indexing") == "gp":
                    objs.append(self.by_gp.get(f"{dist.get('type')}:{token}"))
                else:
                    objs.append(None)  # os-indexed homogeneous matrices (NUMALatency): not used
            out[name] = (objs, values)
        return out


def _endpoint(reader: _Reader, obj: Element | None) -> tuple[str, str] | None:
    """(kind, key) of a distances object: ("gpu", bdf), ("nvswitch", bdf), ("cpu", numa) or None."""
    if obj is None:
        return None
    kind = obj.get("type")
    if kind == "OSDev":
        bdf = obj.get("linkscope-bdf")
        return ("gpu", bdf) if bdf in reader.gpus else None
    if kind == "PCIDev":
        bdf = normalise_bdf(obj.get("pci_busid", ""))
        if bdf in reader.gpus:
            return ("gpu", bdf)
        if bdf in reader.nvswitches:
            return ("nvswitch", bdf)
        return None
    if kind == "Package":
        node = reader.numa_of_package.get(f"Package:{obj.get('os_index')}")
        return ("cpu", str(node)) if node is not None else None
    return None


def _per_nvlink_mb_per_s(total: int, model: str) -> int:
    if _BLACKWELL_RE.search(model):
        return 50000
    if total % 25000 and not total % 20000:
        return 20000
    return 25000


def topology_from_xml(root: Element, *, origin: str = "<hwloc xml>") -> Topology:
    """The Topology an hwloc XML tree describes (``is_this_system`` False)."""
    reader = _Reader(root, origin)
    notes: list[str] = []
    gpu_bdfs = sorted(reader.gpus)
    gpus: list[Device] = []
    for pos, bdf in enumerate(gpu_bdfs):
        g = reader.gpus[bdf]
        infos = g["infos"]
        platform = platforms.of_vendor(g["vendor"])
        model = infos.get("GPUModel") or f"{platform.label if platform else g['vendor'].title()} GPU [{g['device']}]"
        nvml = next((int(n[4:]) for n in g["osdevs"] if re.fullmatch(r"nvml\d+", n)), None)
        attrs: dict[str, Any] = {"hwloc_osdevs": list(g["osdevs"])} if g["osdevs"] else {}
        attrs.update({"vendor_id": reader.pci[bdf]["vendor"], "device_id": reader.pci[bdf]["device"]})
        gpus.append(Device(id=f"gpu{pos}", kind=DeviceKind.GPU, name=model, index=pos, vendor=g["vendor"],
                           uuid=_uuid(infos), pci_bus_id=bdf,
                           numa_node=reader.pci[bdf]["numa_node"], nvml_index=nvml, attributes=attrs))
    gpu_id = {bdf: f"gpu{pos}" for pos, bdf in enumerate(gpu_bdfs)}
    # NICs: an OpenFabrics name wins (mlx5_0), else the first network interface
    nics = []
    for bdf, nic in sorted(reader.nics.items()):
        if bdf not in reader.pci:
            continue
        name = nic["name"] or (nic["netdevs"][0] if nic["netdevs"] else None)
        if not name:
            continue
        nic_type = nic["type"] or ("infiniband" if reader.pci[bdf]["class"] == "0x0207" else "ethernet")
        nics.append({"name": name, "pci_bus_id": bdf, "type": nic_type, "rate_gbit_per_s": None,
                     "netdevs": list(nic["netdevs"])})
    numa = sorted(reader.numa, key=lambda n: n["node"])
    if not numa:
        notes.append("hwloc XML has no NUMANode: one node assumed")
        numa = [{"node": 0, "cpus": [], "memory_bytes": None, "socket": None}]
    facts = {"pci": reader.pci, "nics": nics, "numa": numa, "notes": []}

    links: list[Link] = []
    devices: list[Device] = []
    matrices = reader.matrices(root)
    nvswitch_count: dict[str, int] = {}
    nvswitch_rate: dict[str, float] = {}
    if "NVLinkBandwidth" in matrices:
        objs, values = matrices["NVLinkBandwidth"]
        n = len(objs)
        ends = [_endpoint(reader, o) for o in objs]
        for i in range(n):
            for j in range(n):
                value = values[i * n + j]
                a, b = ends[i], ends[j]
                if i == j or value <= 0 or a is None or b is None or a[0] != "gpu":
                    continue
                model = gpus[gpu_bdfs.index(a[1])].name
                per_link = _per_nvlink_mb_per_s(value, model)
                count = max(1, round(value / per_link))
                if b[0] == "gpu" and i < j:
                    links.append(Link(gpu_id[a[1]], gpu_id[b[1]], LinkKind.NVLINK, count, per_link / 1000,
                                      provenance=Provenance.OS, source=HWLOC_NVLINK_SOURCE))
                elif b[0] == "nvswitch":
                    nvswitch_count[gpu_id[a[1]]] = nvswitch_count.get(gpu_id[a[1]], 0) + count
                    nvswitch_rate[gpu_id[a[1]]] = per_link / 1000
                elif b[0] == "cpu":
                    links.append(Link(gpu_id[a[1]], f"cpu{b[1]}", LinkKind.NVLINK, count, per_link / 1000,
                                      provenance=Provenance.OS, source=HWLOC_NVLINK_SOURCE))
        notes.append("NVLink counts are hwloc's pair bandwidth divided by its per-link rate "
                     "(hwloc records bandwidth, not link counts or NVLink versions)")
    if nvswitch_count:
        devices.append(Device(id="nvswitch", kind=DeviceKind.NVSWITCH, name="NVSwitch", vendor="nvidia",
                              attributes={"physical_switches": len(reader.nvswitches)}))
        for gid, count in sorted(nvswitch_count.items()):
            links.append(Link(gid, "nvswitch", LinkKind.NVLINK, count, nvswitch_rate[gid], provenance=Provenance.OS,
                              source=HWLOC_NVLINK_SOURCE))
    if "XGMIBandwidth" in matrices:
        objs, values = matrices["XGMIBandwidth"]
        n = len(objs)
        ends = [_endpoint(reader, o) for o in objs]
        for i in range(n):
            for j in range(i + 1, n):
                a, b = ends[i], ends[j]
                if values[i * n + j] > 0 and a and b and a[0] == b[0] == "gpu":
                    links.append(Link(gpu_id[a[1]], gpu_id[b[1]], LinkKind.XGMI, 1, values[i * n + j] / 1000,
                                      provenance=Provenance.OS, source=HWLOC_XGMI_SOURCE))
        notes.append("xGMI links are hwloc's XGMIBandwidth pairs: hwloc marks every xGMI-reachable pair (direct or "
                     "routed) with a fixed 100 GB/s, so link counts and direct-vs-routed are not known")
    if gpus and not any(l.kind in (LinkKind.NVLINK, LinkKind.XGMI) for l in links):
        notes.append("hwloc XML has no NVLinkBandwidth/XGMIBandwidth matrix: GPU fabric links not known "
                     "(lstopo records them only when built with NVML / ROCm SMI)")
    unknown = sorted(b for b in set(gpu_bdfs) | {n["pci_bus_id"] for n in nics}
                     if not reader.pci[b]["link"].get("gb_per_s"))
    if unknown:
        notes.append("hwloc does not know the PCIe link speed of " + ", ".join(unknown)
                     + ": Gen4 x16 assumed (labelled)")
    missing = ["NIC line rates", "socket interconnect rate"]
    if gpus:
        missing += ["GPU memory sizes", "CUDA ordinals (GPUs numbered in PCI bus order)"]
    notes.append("not in hwloc XML: " + ", ".join(missing))

    part = GpuPart(gpus=tuple(gpus), devices=tuple(devices), links=tuple(links), notes=tuple(notes),
                   sources=(f"hwloc XML {origin}",))
    host = reader.machine_infos.get("HostName") or Path(origin).stem
    product = gpus[0].name if gpus else "no GPU"
    topology = assemble(host, part, facts, source=f"hwloc-xml:{origin}",
                        description=f"{len(gpus)} × {product}, from hwloc XML" if gpus else "host from hwloc XML (no GPU)")
    return _with_cpu_infos(topology, reader, numa)


def _with_cpu_infos(topology: Topology, reader: _Reader, numa: list[dict[str, Any]]) -> Topology:
    socket_of = {f"cpu{n['node']}": n.get("socket") for n in numa}
    arch = reader.machine_infos.get("Architecture")
    devices = []
    for d in topology.devices:
        socket = socket_of.get(d.id)
        if d.kind is DeviceKind.CPU and socket is not None:
            infos = reader.package_infos.get(socket, {})
            attrs = dict(d.attributes)
            for key, info in (("cpu_vendor", "CPUVendor"), ("cpu_family", "CPUFamilyNumber"),
                              ("cpu_model_number", "CPUModelNumber")):
                if infos.get(info):
                    attrs[key] = infos[info]
            if arch:
                attrs["arch"] = arch
            name = infos.get("CPUModel") or d.name
            from dataclasses import replace

            d = replace(d, name=name, attributes=attrs)
        devices.append(d)
    return topology.replace(devices=tuple(devices))
