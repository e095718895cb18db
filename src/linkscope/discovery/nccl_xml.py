"""NCCL topology XML: read it into a Topology, and write one from any Topology.

The format, as NCCL's own loader reads it (NVIDIA/nccl src/graph/xml.cc, topo.cc; read, not copied):

* ``<system version="1">`` holds ``<cpu numaid= affinity= arch= vendor= familyid= modelid=>`` nodes
  (``affinity`` is a Linux cpumask: 32-bit hex words, most significant first, comma separated);
* under a cpu, ``<pci busid= class= vendor= device= link_speed="32.0 GT/s PCIe" link_width="16">``
  nodes nest like the PCIe tree; class ``0x0604..`` is a bridge/switch, ``0x03..`` a GPU,
  ``0x02..`` a NIC; NCCL computes a link's GB/s as width × per-lane rate from ``link_speed``;
* a GPU's pci node holds ``<gpu dev= sm= rank= gdr=>`` with ``<nvlink target=BUSID count=N
  tclass=CLASS/>`` children: ``tclass`` 0x03.. is a peer GPU, ``0x068000`` an NVSwitch (target
  ``fffffff:ffff:ff`` when the switch is not visible, as in VMs), ``0x068001`` the CPU;
* a NIC's pci node holds ``<nic><net name= dev= speed=Mb/s port= gdr= .../></nic>``.

When NCCL loads a file (``NCCL_TOPO_FILE``) it fills what is missing from the running machine for its
own GPUs and NICs and drops nodes no rank uses; so the writer leaves out what linkscope does not
know (``sm``, ``gdr``, CPU ``arch``/``vendor`` of an unknown CPU) rather than guessing it.
"""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element, SubElement, indent, tostring

from .. import platforms
from ..errors import UserError
from ..topology.model import Device, DeviceKind, Link, LinkKind, Provenance, Topology
from ..topology.pcie import GT_OF_GEN, pcie_gb_per_s, pcie_generation
from ..topology.synthetic import PCIE_GEN4_X16_GB_PER_S
from .nvml import NVLINK_DATASHEET_GB_PER_S
from .sysfs import MAX_CPUS, VENDORS, normalise_bdf, parse_cpulist
from .xmlfile import attr_int

NCCL_TOPO_XML_VERSION = 1
NVSWITCH_CLASS = "0x068000"
CPU_CLASS = "0x068001"
GPU_CLASS = "0x030200"
HIDDEN_TARGET = "fffffff:ffff:ff"
_SPEED_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")
_BUSID_RE = re.compile(r"^[0-9a-fA-F]{1,8}:[0-9a-fA-F]{1,2}:[0-9a-fA-F]{1,2}\.[0-7]$")
_NCCL_SOURCE = "NCCL topology XML (NCCL_TOPO_DUMP_FILE format)"
_VENDOR_IDS = {"mellanox": "0x15b3", "intel": "0x8086", "broadcom": "0x1000"}  # NICs' (GPUs': their platform row)


def _nvlink_generation(sm: int | None) -> str | None:
    """NVLink generation of a compute capability (P100 sm60 … B200 sm100), None when unknown."""
    if sm is None:
        return None
    for floor, gen in ((100, "NVLink5"), (90, "NVLink4"), (80, "NVLink3"), (70, "NVLink2"), (60, "NVLink1")):
        if sm >= floor:
            return gen
    return None


def cpumask_cores(mask: str) -> list[int]:
    """``00000000,00ffffff`` (Linux cpumask) → core ids; also accepts a cpulist (``0-23``)."""
    text = mask.strip()
    if not text:
        return []
    if "-" in text or not re.fullmatch(r"[0-9a-fA-Fx,]+", text):
        return parse_cpulist(text)
    cores: list[int] = []
    if len(text.split(",")) > MAX_CPUS // 32:
        raise UserError(f"cpumask {text[:60]!r}... is longer than {MAX_CPUS} CPUs")
    for position, word in enumerate(reversed(text.split(","))):
        word = word.strip().lower().removeprefix("0x")
        value = int(word, 16) if word else 0
        cores.extend(position * 32 + b for b in range(32) if value >> b & 1)
    return sorted(cores)


def cores_cpumask(cores: tuple[int, ...]) -> str:
    """Core ids → Linux cpumask text (the form NCCL dumps)."""
    if not cores:
        return ""
    words = [0] * (max(cores) // 32 + 1)
    for c in cores:
        words[c // 32] |= 1 << (c % 32)
    return ",".join(f"{w:08x}" for w in reversed(words))


# ---- reading ---------------------------------------------------------------------------------------

def _pcie_link(a: str, b: str, node: Element, origin: str) -> Link:
    speed_text = node.get("link_speed", "")
    width = attr_int(node, "link_width", origin) or 0
    match = _SPEED_RE.match(speed_text)
    if match and width > 0:
        gt = float(match.group(1))
        return Link(a, b, LinkKind.PCIE, 1, pcie_gb_per_s(gt, width), provenance=Provenance.OS,
                    source=f"{_NCCL_SOURCE}: link_speed/link_width", generation=pcie_generation(gt, width))
    return Link(a, b, LinkKind.PCIE, 1, PCIE_GEN4_X16_GB_PER_S, provenance=Provenance.DATASHEET,
                source=f"{_NCCL_SOURCE} gives no usable link_speed/link_width: assumed PCIe Gen4 x16",
                generation="PCIe Gen4 x16 (assumed)")


def _busid(node: Element, origin: str) -> str:
    text = node.get("busid", "")
    if not _BUSID_RE.match(text.strip()):
        raise UserError(f"{origin}: <{node.tag}> busid {text[:40]!r} is not a PCI bus id (DDDD:BB:DD.F)")
    return normalise_bdf(text)


def topology_from_xml(root: Element, *, origin: str = "<nccl xml>") -> Topology:
    """The Topology an NCCL topology XML tree describes (``is_this_system`` False)."""
    if root.tag != "system":
        raise UserError(f"{origin}: NCCL topology XML must start with <system>, found <{root.tag[:40]}>")
    version = attr_int(root, "version", origin)
    if version != NCCL_TOPO_XML_VERSION:
        raise UserError(f"{origin}: NCCL topology XML version {root.get('version')!r} is not supported "
                        f"(NCCL reads version {NCCL_TOPO_XML_VERSION})")
    devices: list[Device] = []
    links: list[Link] = []
    notes: list[str] = []
    gpu_nodes: list[tuple[str, Element, Element, int | None]] = []  # (busid, pci, gpu, numa)
    counters = {"sw": 0, "nic": 0}
    cpus = root.findall("cpu")
    if not cpus:
        raise UserError(f"{origin}: NCCL topology XML has no <cpu> node")
    seen_numa: set[int] = set()
    for cpu in cpus:
        numa = attr_int(cpu, "numaid", origin)
        if numa is None or numa < 0:
            numa = max(seen_numa, default=-1) + 1
            notes.append(f"a <cpu> without a usable numaid was numbered {numa}")
        if numa in seen_numa:
            raise UserError(f"{origin}: two <cpu> nodes have numaid {numa}")
        seen_numa.add(numa)
        cpu_attrs = {k: cpu.get(k) for k in ("arch", "vendor", "familyid", "modelid") if cpu.get(k)}
        cores = cpumask_cores(cpu.get("affinity", ""))
        devices.append(Device(id=f"cpu{numa}", kind=DeviceKind.CPU, name=f"NUMA node {numa}", numa_node=numa,
                              cores=tuple(cores), attributes=cpu_attrs))

        def walk(parent_id: str, node: Element, numa: int = numa) -> None:
            for child in node:
                if child.tag == "pci":
                    busid = _busid(child, origin)
                    cls = child.get("class", "").lower()
                    gpu = child.find("gpu")
                    nic = child.find("nic")
                    if gpu is not None:
                        gpu_nodes.append((busid, child, gpu, numa))
                        links.append(_pcie_link(busid, parent_id, child, origin))
                    elif nic is not None:
                        for net in nic.findall("net"):
                            dev_id = _nic(net, busid, numa, devices, origin, counters, child)
                            links.append(_pcie_link(dev_id, parent_id, child, origin))
                    elif cls.startswith("0x0604") or len(child):
                        counters["sw"] += 1
                        sw = f"sw{counters['sw'] - 1}"
                        devices.append(Device(id=sw, kind=DeviceKind.PCIE_SWITCH, name="PCIe switch", pci_bus_id=busid,
                                              vendor=VENDORS.get(child.get("vendor", "").lower()), numa_node=numa,
                                              attributes=_ids(child)))
                        links.append(_pcie_link(sw, parent_id, child, origin))
                        walk(sw, child)
                elif child.tag == "nic":  # a NIC NCCL could not place in the PCI tree
                    for net in child.findall("net"):
                        dev_id = _nic(net, None, numa, devices, origin, counters)
                        links.append(Link(dev_id, parent_id, LinkKind.PCIE, 1, PCIE_GEN4_X16_GB_PER_S,
                                          provenance=Provenance.DATASHEET, generation="PCIe Gen4 x16 (assumed)",
                                          source=f"{_NCCL_SOURCE}: NIC outside the PCI tree, link assumed"))

        walk(f"cpu{numa}", cpu)
    for a, b in ((x, y) for i, x in enumerate(sorted(seen_numa)) for y in sorted(seen_numa)[i + 1:]):
        from ..topology.synthetic import UPI_GB_PER_S

        links.append(Link(f"cpu{a}", f"cpu{b}", LinkKind.UPI, 1, UPI_GB_PER_S, provenance=Provenance.DATASHEET,
                          source="socket interconnect not in NCCL XML: datasheet default"))
    # GPUs: numbered by CUDA device (dev) where given, else in file order
    def order(item: tuple[str, Element, Element, int | None]) -> tuple[int, str]:
        dev = attr_int(item[2], "dev", origin)
        return (dev if dev is not None else 1 << 30, item[0])

    gpu_nodes.sort(key=order)
    gpu_of_bus = {busid: f"gpu{i}" for i, (busid, _, _, _) in enumerate(gpu_nodes)}
    if len(gpu_of_bus) != len(gpu_nodes):
        raise UserError(f"{origin}: two GPUs share a busid")
    nvswitch_links: dict[str, int] = defaultdict(int)
    nvswitch_rate: dict[str, float] = {}
    unknown_rate = False
    for i, (busid, pci, gpu, numa) in enumerate(gpu_nodes):
        sm = attr_int(gpu, "sm", origin)
        dev = attr_int(gpu, "dev", origin)
        gen = _nvlink_generation(sm)
        vendor_id = pci.get("vendor", "").lower()
        attrs: dict[str, Any] = {k: gpu.get(k) for k in ("sm", "gdr") if gpu.get(k)}
        attrs.update(_ids(pci))
        vendor = platforms.vendor_of_pci_id(vendor_id) or platforms.NVIDIA.key  # no id: NCCL's own GPU
        devices.append(Device(id=f"gpu{i}", kind=DeviceKind.GPU, index=i, name=f"GPU (sm {sm})" if sm else "GPU",
                              vendor=vendor, pci_bus_id=busid, numa_node=numa,
                              ordinals={} if dev is None else {vendor: dev}, attributes=attrs))
        links[:] = [l if l.a != busid else Link(f"gpu{i}", l.b, l.kind, l.count, l.link_gb_per_s, l.latency_us,
                                                 l.provenance, l.source, l.generation) for l in links]
        rate = NVLINK_DATASHEET_GB_PER_S.get(gen or "")
        for nv in gpu.findall("nvlink"):
            count = attr_int(nv, "count", origin)
            if count is None or count < 1:
                raise UserError(f"{origin}: <nvlink> of GPU {busid} has no positive count")
            tclass = nv.get("tclass", "").lower()
            link_rate = rate or 25.0
            unknown_rate = unknown_rate or rate is None
            src = (f"{_NCCL_SOURCE}: nvlink count; {gen} datasheet rate per link" if rate
                   else f"{_NCCL_SOURCE}: nvlink count; GPU sm unknown, 25 GB/s per link assumed")
            if tclass.startswith("0x03"):
                peer = gpu_of_bus.get(normalise_bdf(nv.get("target", "")))
                if peer is None:
                    notes.append(f"NVLink of {busid} to {nv.get('target', '')[:20]} (not a GPU in this file) left out")
                elif ((f"gpu{i}" < peer or not any(l.joins(f"gpu{i}", peer) for l in links))
                      and not any(l.joins(f"gpu{i}", peer) and l.kind is LinkKind.NVLINK for l in links)):
                    links.append(Link(f"gpu{i}", peer, LinkKind.NVLINK, count, link_rate,
                                      provenance=Provenance.DATASHEET, source=src, generation=gen))
            elif tclass == CPU_CLASS:
                links.append(Link(f"gpu{i}", f"cpu{numa}", LinkKind.NVLINK, count, link_rate,
                                  provenance=Provenance.DATASHEET, source=src, generation=gen))
            else:  # NVSwitch (0x068000), or a target NCCL could not classify (it assumes NVSwitch too)
                nvswitch_links[f"gpu{i}"] += count
                nvswitch_rate[f"gpu{i}"] = link_rate
    if nvswitch_links:
        devices.append(Device(id="nvswitch", kind=DeviceKind.NVSWITCH, name="NVSwitch", vendor="nvidia"))
        for gid, count in sorted(nvswitch_links.items()):
            links.append(Link(gid, "nvswitch", LinkKind.NVLINK, count, nvswitch_rate[gid],
                              provenance=Provenance.DATASHEET, source=f"{_NCCL_SOURCE}: nvlink counts to NVSwitch"))
    if unknown_rate:
        notes.append("a GPU has no sm attribute: NVLink rate per link assumed 25 GB/s")
    notes.append("not in NCCL XML: GPU names and memory, NUMA memory, socket interconnect rate "
                 "(NVLink per-link rates are datasheet values for the GPU's sm)")
    name = root.get("name") or Path(origin).stem
    ordered = sorted((d for d in devices if d.is_gpu), key=lambda d: d.index or 0) + [d for d in devices if not d.is_gpu]
    return Topology(name=name, devices=tuple(ordered), links=tuple(links), source=f"nccl-xml:{origin}",
                    description=f"{len(gpu_nodes)} GPU(s), from an NCCL topology file", sources=(_NCCL_SOURCE,),
                    notes=tuple(notes))


def _ids(pci: Element) -> dict[str, str]:
    return {key: pci.get(attr, "").lower() for key, attr in (("vendor_id", "vendor"), ("device_id", "device"))
            if pci.get(attr)}


def _nic(net: Element, busid: str | None, numa: int, devices: list[Device], origin: str,
         counters: dict[str, int], pci: Element | None = None) -> str:
    name = net.get("name") or f"nic{counters['nic']}"
    counters["nic"] += 1
    base, n = name, 1
    while any(d.id == name for d in devices):
        n += 1
        name = f"{base}#{n}"
    speed = attr_int(net, "speed", origin)
    attrs = {k: net.get(k) for k in ("dev", "port", "guid", "gdr", "maxconn", "latency") if net.get(k)}
    cls = pci.get("class", "").lower() if pci is not None else ""
    attrs["type"] = "infiniband" if cls.startswith("0x0207") else "ethernet" if cls.startswith("0x0200") else "network"
    if pci is not None:
        attrs.update(_ids(pci))
    vendor = VENDORS.get(pci.get("vendor", "").lower()) if pci is not None else None
    devices.append(Device(id=name, kind=DeviceKind.NIC, name=f"{attrs['type']} NIC", vendor=vendor, pci_bus_id=busid,
                          numa_node=numa,
                          device_name=base, line_rate_gbit_per_s=speed / 1000 if speed and speed > 0 else None,
                          attributes=attrs))
    return name


# ---- writing ---------------------------------------------------------------------------------------

def _speed_width(link: Link) -> tuple[str, int, bool]:
    """(link_speed text, width, exact) for a PCIe link: from its generation when known, else the
    PCIe gen/width (x16 first) whose rate is nearest the link's capacity."""
    match = re.search(r"Gen(\d)\s*x(\d+)", link.generation or "")
    if match and "assumed" not in (link.generation or "") and int(match.group(1)) in GT_OF_GEN:
        return f"{GT_OF_GEN[int(match.group(1))]:.1f} GT/s PCIe", int(match.group(2)), True
    match = re.search(r"PCIe (\d+(?:\.\d+)?) GT/s x(\d+)", link.generation or "")
    if match:
        return f"{float(match.group(1)):.1f} GT/s PCIe", int(match.group(2)), True
    best = min(((gt, w) for w in (16, 8, 4, 2, 1) for gt in GT_OF_GEN.values()),
               key=lambda gw: (abs(pcie_gb_per_s(*gw) - link.capacity_gb_per_s), -gw[1]))
    return f"{best[0]:.1f} GT/s PCIe", best[1], False


PLACEHOLDER_ATTRIBUTE = "linkscope_placeholder_busids"


def export_xml(topology: Topology, *, placeholders: bool = False) -> tuple[str, list[str]]:
    """NCCL topology XML for ``topology`` and the notes on what had to be assumed or left out.

    NCCL matches the XML's ``busid``s to the machine's devices, so a topology without PCI bus ids
    for its GPUs (a preset, a synthetic fabric) is refused: its file would describe no real machine
    (a NIC or switch without one gets a placeholder and a note, as before). With
    ``placeholders`` the made-up ids are written, and the file itself says so: the ``<system>``
    element gets a ``linkscope_placeholder_busids`` attribute (NCCL reads attributes it does not
    know and ignores them; its reader takes no comments and values up to 255 characters)."""
    notes: list[str] = []
    by_id = topology.by_id
    pcie: dict[str, list[Link]] = defaultdict(list)
    for link in topology.links:
        ends = {by_id[link.a].kind, by_id[link.b].kind}
        if link.kind is LinkKind.PCIE or (link.kind is LinkKind.XGMI and DeviceKind.CPU in ends):
            pcie[link.a].append(link)
            pcie[link.b].append(link)
    used_bus: set[str] = {d.pci_bus_id for d in topology.devices if d.pci_bus_id}
    made: dict[str, str] = {}
    next_bus = [0xe0]

    def busid(device: Device) -> str:
        if device.pci_bus_id:
            return device.pci_bus_id
        if device.id not in made:
            while f"0000:{next_bus[0]:02x}:00.0" in used_bus:
                next_bus[0] -= 1
            made[device.id] = f"0000:{next_bus[0]:02x}:00.0"
            used_bus.add(made[device.id])
            next_bus[0] -= 1
        return made[device.id]

    root = Element("system", version=str(NCCL_TOPO_XML_VERSION), name=topology.name[:200] or "linkscope")
    placed: set[str] = set()
    cpus = sorted(topology.of_kind(DeviceKind.CPU), key=lambda d: (d.numa_node if d.numa_node is not None else 0, d.id))
    if not cpus:
        raise UserError(f"topology {topology.name!r} has no CPU device: NCCL's XML needs one per NUMA node")
    inexact: list[str] = []

    def pci_attrs(device: Device, link: Link, cls: str) -> dict[str, str]:
        speed, width, exact = _speed_width(link)
        if not exact:
            inexact.append(device.id)
        attrs = {"busid": busid(device), "class": cls}
        names = platforms.xml_names().get(device.vendor or "")
        vendor = device.attributes.get("vendor_id") or (names.pci_vendor_ids[0] if names else
                                                        _VENDOR_IDS.get(device.vendor or ""))
        if isinstance(vendor, str) and vendor:
            attrs["vendor"] = vendor
        device_id = device.attributes.get("device_id")
        if isinstance(device_id, str) and device_id:
            attrs["device"] = device_id
        attrs["link_speed"] = speed
        attrs["link_width"] = str(width)
        return attrs

    def children(parent: Device, xml_parent: Element, via: Device | None) -> None:
        for link in sorted(pcie.get(parent.id, []), key=lambda l: l.other(parent.id)):
            child = by_id[link.other(parent.id)]
            if child.id in placed or child.kind is DeviceKind.CPU:
                continue
            placed.add(child.id)
            if child.kind is DeviceKind.HOST_BRIDGE:  # NCCL has no root-complex node: its children go to the CPU
                children(child, xml_parent, child)
            elif child.kind is DeviceKind.PCIE_SWITCH:
                node = SubElement(xml_parent, "pci", pci_attrs(child, link, "0x060400"))
                children(child, node, None)
            elif child.kind is DeviceKind.GPU:
                names = platforms.xml_names().get(child.vendor or "")
                node = SubElement(xml_parent, "pci", pci_attrs(child, link, names.nccl_gpu_class if names else GPU_CLASS))
                _gpu(node, child)
            elif child.kind is DeviceKind.NIC:
                is_ib = str(child.attributes.get("type", "")) == "infiniband"
                node = SubElement(xml_parent, "pci", pci_attrs(child, link, "0x020700" if is_ib else "0x020000"))
                net_attrs = {"name": child.device_name or child.id, "dev": str(nic_dev[child.id])}
                if child.line_rate_gbit_per_s:
                    net_attrs["speed"] = str(round(child.line_rate_gbit_per_s * 1000))
                for key in ("port", "guid", "gdr", "maxconn", "latency"):
                    if child.attributes.get(key) is not None:
                        net_attrs[key] = str(child.attributes[key])
                SubElement(SubElement(node, "nic"), "net", net_attrs)

    def _gpu(node: Element, gpu: Device) -> None:
        attrs = {"dev": str(gpu.ordinal())} if gpu.ordinal() is not None else {}
        for key in ("sm", "gdr"):
            if gpu.attributes.get(key) is not None:
                attrs[key] = str(gpu.attributes[key])
        element = SubElement(node, "gpu", attrs)
        total_switch = 0
        for link in topology.links_of(gpu.id):
            if link.kind is not LinkKind.NVLINK:
                continue
            other = by_id[link.other(gpu.id)]
            if other.kind is DeviceKind.GPU:
                SubElement(element, "nvlink", target=busid(other), count=str(link.count), tclass=GPU_CLASS)
            elif other.kind is DeviceKind.NVSWITCH:
                total_switch += link.count
            elif other.kind is DeviceKind.CPU:
                SubElement(element, "nvlink", target=busid(other) if other.pci_bus_id else HIDDEN_TARGET,
                           count=str(link.count), tclass=CPU_CLASS)
        if total_switch:
            switch = next((d for d in topology.of_kind(DeviceKind.NVSWITCH) if d.pci_bus_id), None)
            SubElement(element, "nvlink", target=switch.pci_bus_id if switch and switch.pci_bus_id else HIDDEN_TARGET,
                       count=str(total_switch), tclass=NVSWITCH_CLASS)
        if any(l.kind is LinkKind.XGMI for l in topology.links_of(gpu.id)):
            notes.append(f"{gpu.id}: xGMI links have no NCCL XML element; left out")

    nic_dev = {d.id: i for i, d in enumerate(topology.of_kind(DeviceKind.NIC))}
    for cpu in cpus:
        attrs = {"numaid": str(cpu.numa_node if cpu.numa_node is not None else cpus.index(cpu))}
        if cpu.cores:
            attrs["affinity"] = cores_cpumask(cpu.cores)
        arch = cpu.attributes.get("arch")
        vendor = cpu.attributes.get("vendor") or cpu.attributes.get("cpu_vendor")
        family = cpu.attributes.get("familyid") or cpu.attributes.get("cpu_family")
        model = cpu.attributes.get("modelid") or cpu.attributes.get("cpu_model_number")
        for key, value in (("arch", arch), ("vendor", vendor), ("familyid", family), ("modelid", model)):
            if value:
                attrs[key] = str(value)
        xml_cpu = SubElement(root, "cpu", attrs)
        placed.add(cpu.id)
        children(cpu, xml_cpu, None)
    left = [d.id for d in topology.devices if d.kind in (DeviceKind.GPU, DeviceKind.NIC) and d.id not in placed]
    if left:
        notes.append("not reachable over PCIe from a CPU, left out: " + ", ".join(left))
    made_gpus = sorted(d for d in made if by_id[d].kind is DeviceKind.GPU)
    if made_gpus and not placeholders:
        raise UserError(f"topology {topology.name!r} has no PCI bus id for {len(made_gpus)} GPU(s) ({', '.join(made_gpus[:4])}"
                        f"{' …' if len(made_gpus) > 4 else ''}): NCCL matches its topology file's GPUs to the machine by "
                        "bus id, so this file would match no real machine",
                        hint="export on the machine itself (linkscope topo --export nccl-xml -o FILE), or add "
                             "--placeholder-bus-ids to write made-up ids, marked as such in the file")
    if made_gpus:
        root.set(PLACEHOLDER_ATTRIBUTE, f"{len(made)} made-up bus ids (topology {topology.name[:60]}): not a real machine's")
        notes.append("no PCI bus id in the topology, placeholder ids written for: " + ", ".join(sorted(made)))
    if inexact:
        notes.append("PCIe gen/width not known, nearest to the link rate written for: " + ", ".join(sorted(set(inexact))))
    if any(not c.attributes.get("arch") for c in cpus):
        notes.append("CPU arch/vendor unknown for some NUMA nodes: left for NCCL to fill from the machine")
    indent(root, space="  ")
    # NCCL's reader is hand-written: no XML declaration, no comments (older releases reject them),
    # "/>" without a space before it.
    text = tostring(root, encoding="unicode").replace(" />", "/>")
    return text + "\n", notes
