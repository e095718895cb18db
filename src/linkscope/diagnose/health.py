"""P2P routing health: for every GPU pair and GPU-NIC pair, the PCIe path from sysfs and, per bridge
on it, the ACS control bits that redirect peer traffic; the IOMMU mode; BAR1 per GPU; the driver's
P2P status. Pure: built from facts (live or recorded), so a recording gives the same report anywhere.

What a check needs is in ``discovery.pcihealth`` (ACS needs root: the report says so and does not
guess). The fixes are the documented ones:

* ACS redirect on a bridge: NCCL's troubleshooting guide, section "PCI Access Control Services (ACS)"
  (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs):
  disable IO virtualization / VT-d in the BIOS, or clear ACS with ``setpci -s <bdf> ECAP_ACS+0x6.w=0000``
  (as root, again after each reboot); the kernel's ``pci=disable_acs_redir=<bdf>`` boot option clears
  RR/CR/EC on the named ports (Documentation/admin-guide/kernel-parameters.txt).
* IOMMU translating GPU DMA: the same NCCL section ("IO virtualization (also known as VT-d or IOMMU)
  can interfere with GPU Direct by redirecting all PCI point-to-point traffic to the CPU root
  complex"); boot with ``iommu=pt`` (passthrough: kernel-parameters.txt ``iommu=pt``) or disable
  VT-d / AMD-Vi in the BIOS where no VM or device isolation needs it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import platforms
from ..discovery.pcihealth import ACS_REDIRECT_BITS, PRIVILEGE_NOTE
from ..discovery.sysfs import normalise_bdf
from ..topology import query
from ..topology.model import Device, DeviceKind, Topology

NCCL_ACS_DOC = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#pci-access-control-services-acs"
FIX_ACS = ("clear ACS on that port: in the BIOS disable IO virtualization/VT-d/ACS, or as root "
           "'setpci -s {bdf} ECAP_ACS+0x6.w=0000' (until reboot), or boot with 'pci=disable_acs_redir={bdf}' "
           f"(NCCL troubleshooting, ACS: {NCCL_ACS_DOC}; kernel option pci=disable_acs_redir, drivers/pci/pci.c)")
FIX_IOMMU = ("boot with 'iommu=pt' (IOMMU passthrough for host devices) or disable VT-d/AMD-Vi in the BIOS if no VM "
             f"or device isolation needs it (NCCL troubleshooting, ACS/IOMMU: {NCCL_ACS_DOC}; kernel-parameters.txt iommu=pt)")
#: what NVML's P2P status codes mean (nvmlGpuP2PStatus_t, nvml.h), in words.
P2P_MEANING = {
    "CHIPSET_NOT_SUPPORTED": "the chipset/platform does not support P2P between them (often ACS or IOMMU on the path, or a VM)",
    "GPU_NOT_SUPPORTED": "the GPU does not support P2P",
    "IOH_TOPOLOGY_NOT_SUPPORTED": "P2P across this I/O-hub topology (e.g. across CPU sockets) is not supported",
    "DISABLED_BY_REGKEY": "P2P is disabled by a driver registry key",
    "NOT_SUPPORTED": "the driver does not offer P2P of this kind between them",
    "UNKNOWN": "unknown",
}
GiB = 1024**3


@dataclass(frozen=True)
class PortCheck:
    """One bridge on a PCIe path.

    Attributes:
        bdf: its PCI address.
        role: root port | switch upstream port | switch downstream port.
        status: the ACS read status (``discovery.pcihealth.parse_config``) or ``unknown`` (no facts).
        control: ACS control bits set; ``redirect`` those among RR/CR/EC.
        readable_bytes: config bytes the reader got.
        decides: the port sits below the pair's lowest common PCIe switch, where its ACS bits decide
            whether peer traffic crosses the switch or goes up to the root complex; a pair whose
            common point is the root complex crosses it anyway.
    """

    bdf: str
    role: str
    status: str
    control: tuple[str, ...] = ()
    redirect: tuple[str, ...] = ()
    readable_bytes: int = 0
    decides: bool = False


@dataclass(frozen=True)
class PathCheck:
    """A GPU pair or GPU-NIC pair: how its peer traffic goes and what on the path may redirect it."""

    a: str
    b: str
    level: str
    over: str  # nvlink | xgmi | pcie
    ports: tuple[PortCheck, ...]
    p2p: Mapping[str, Any] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.a}-{self.b}"


@dataclass(frozen=True)
class HealthReport:
    """The P2P routing health of one machine (live or recorded)."""

    paths: tuple[PathCheck, ...]
    iommu: Mapping[str, Any]
    bar1: tuple[str, ...]
    virtual_machine: Mapping[str, Any]
    problems: tuple[str, ...]
    unknown: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def clean(self) -> bool:
        return not self.problems

    def path(self, a: str, b: str) -> PathCheck | None:
        return next((p for p in self.paths if {p.a, p.b} == {a, b}), None)

    def lines(self) -> list[str]:
        """The health section as printed by ``topo --health``: VM, IOMMU, BAR1, every bridge on a
        PCIe peer path with its ACS state (once), every pair's path and driver P2P status, then the
        problems, what could not be read, and the verdict."""
        out = []
        vm = self.virtual_machine
        if vm.get("detected"):
            out.append(f"Virtual machine ({vm.get('evidence')}): the bridges, ACS bits and IOMMU seen here are the "
                       "hypervisor's virtual ones; the host's cannot be read from inside the guest.")
        mode = self.iommu.get("mode", "unknown")
        out.append(f"IOMMU: {mode} ({'; '.join(self.iommu.get('evidence', [])) or 'no evidence readable'}).")
        out.extend(_grouped(self.bar1))
        bridges: dict[str, PortCheck] = {}
        for p in self.paths:
            for q in p.ports:
                bridges.setdefault(q.bdf, q)
        for q in sorted(bridges.values(), key=lambda q: q.bdf):
            out.append(f"Bridge {_port_text(q)}.")
        for p in self.paths:
            via = " > ".join(q.bdf for q in p.ports) or "no PCIe bridge"
            status = ", ".join(f"{k} {v}" for k, v in p.p2p.items() if v is not None)
            out.append(f"{p.label}: {p.level}, peer traffic over {p.over}; PCIe path {via}"
                       + (f"; driver P2P {status}" if status else "") + ".")
        out.extend(f"Problem: {x}" for x in self.problems)
        out.extend(f"Not readable: {x}" for x in self.unknown)
        out.extend(self.notes)
        out.append(self.verdict())
        return out

    def summary_lines(self) -> list[str]:
        """The health section in a few lines (the survey's findings): VM, IOMMU, BAR1, the bridges on
        PCIe peer paths and what their ACS says, problems, what could not be read and why, verdict."""
        out = [line for line in self.lines()[:2] if line.startswith(("Virtual machine", "IOMMU"))]
        out.extend(_grouped(self.bar1))
        bridges: dict[str, PortCheck] = {q.bdf: q for p in self.paths if p.over == "pcie" for q in p.ports}
        if bridges:
            states: dict[str, int] = {}
            for q in bridges.values():
                key = f"ACS {'+'.join(q.control) or 'all off'}" if q.status == "read" else _port_text(q).split("[", 1)[1][:-1]
                states[key] = states.get(key, 0) + 1
            out.append(f"{len(bridges)} bridge{'s' if len(bridges) != 1 else ''} on PCIe peer paths: "
                       + ", ".join(f"{n} {k}" for k, n in states.items()) + ".")
        elif self.paths:
            out.append("No PCIe bridge carries GPU peer traffic here (" + ", ".join(
                sorted({f"{p.over} {p.level}" for p in self.paths if p.a.startswith("gpu") and p.b.startswith("gpu")})) + ").")
        out.extend(f"Problem: {x}" for x in self.problems)
        out.extend(f"Not readable: {x}" for x in self.unknown)
        out.append(self.verdict())
        return out

    def verdict(self) -> str:
        if self.problems:
            return f"P2P routing health: {len(self.problems)} problem{'s' if len(self.problems) != 1 else ''} found."
        if self.unknown:
            return ("P2P routing health: no problem in what could be read; some checks could not be made "
                    f"({len(self.unknown)} not readable).")
        return ("P2P routing health: clean (no ACS redirect on any PCIe peer path, IOMMU not translating, "
                "driver P2P OK, BAR1 large).")

    def to_dict(self) -> dict[str, Any]:
        return {
            "clean": self.clean,
            "verdict": self.verdict(),
            "iommu": dict(self.iommu),
            "virtual_machine": dict(self.virtual_machine),
            "bar1": list(self.bar1),
            "problems": list(self.problems),
            "unknown": list(self.unknown),
            "notes": list(self.notes),
            "paths": [{"a": p.a, "b": p.b, "level": p.level, "over": p.over, "p2p": dict(p.p2p),
                       "problems": list(p.problems), "unknown": list(p.unknown),
                       "ports": [{"bdf": q.bdf, "role": q.role, "acs_status": q.status, "acs_control": list(q.control),
                                  "redirect": list(q.redirect), "readable_bytes": q.readable_bytes} for q in p.ports]}
                      for p in self.paths],
        }


def _grouped(lines: tuple[str, ...]) -> list[str]:
    """``gpu0 BAR1 ...`` lines that say the same of several GPUs, as one line naming them."""
    by_text: dict[str, list[str]] = {}
    for line in lines:
        who, _, rest = line.partition(" ")
        by_text.setdefault(rest, []).append(who)
    return [f"{', '.join(who)} {rest}" if len(who) <= 2 else f"{who[0]}..{who[-1]} ({len(who)} GPUs) {rest}"
            for rest, who in by_text.items()]


def _port_text(q: PortCheck) -> str:
    if q.status == "read":
        acs = f"ACS {'+'.join(q.control) if q.control else 'all off'}"
    elif q.status == "absent":
        acs = "no ACS capability"
    elif q.status == "not-readable":
        acs = f"ACS not readable ({q.readable_bytes} bytes)"
    elif q.status == "missing":
        acs = "config space not recorded"
    else:
        acs = f"ACS {q.status}"
    return f"{q.role} {q.bdf} [{acs}]"


def _role(index: int) -> str:
    """Role of ``chain[index]`` (index 0 is the root bus): root port, then (upstream, downstream)
    switch port pairs, the way ``discovery.sysfs.build_host`` reads the tree."""
    if index == 1:
        return "root port"
    return "switch upstream port" if (index - 2) % 2 == 0 else "switch downstream port"


def _path_ports(chain_a: list[str], chain_b: list[str], health: Mapping[str, Any]) -> list[PortCheck]:
    k = 0
    while k < min(len(chain_a), len(chain_b)) and chain_a[k] == chain_b[k]:
        k += 1
    indices: list[tuple[int, str]] = []
    if k >= 2:
        indices.append((k - 1, chain_a[k - 1]))  # the lowest common bridge
    indices += [(i, chain_a[i]) for i in range(max(k, 1), len(chain_a) - 1)]
    indices += [(i, chain_b[i]) for i in range(max(k, 1), len(chain_b) - 1)]
    ports = []
    devices = health.get("devices", {}) if health else {}
    under_switch = k - 1 >= 2  # the lowest common element is a switch port, not the root bus or a root port
    for i, bdf in indices:
        decides = under_switch and i >= k
        facts = devices.get(bdf)
        if facts is None:
            ports.append(PortCheck(bdf, _role(i), "unknown", decides=decides))
            continue
        config = facts.get("config") or {}
        acs = config.get("acs") or {}
        control = tuple(acs.get("control", ()))
        ports.append(PortCheck(bdf, _role(i), str(config.get("status", "unknown")), control,
                               tuple(b for b in control if b in ACS_REDIRECT_BITS), int(config.get("readable_bytes", 0)),
                               decides))
    return ports


def _facts_readers(vendor_facts: Mapping[str, Mapping[str, Any]] | None) -> list[tuple[Any, Mapping[str, Any]]]:
    """(the platform's facts reader, its facts) for each platform that gave facts (its row's ``facts``)."""
    out = []
    for key, facts in (vendor_facts or {}).items():
        platform = platforms.by_key(key)
        if platform.facts and facts:
            out.append((platforms.load(platform.facts), facts))
    return out


def _bar1_lines(topology: Topology, vendor_facts: Mapping[str, Mapping[str, Any]] | None,
                health: Mapping[str, Any] | None, problems: list[str], unknown: list[str]) -> list[str]:
    out = []
    by_bus: dict[str, Mapping[str, Any]] = {}
    for reader, facts in _facts_readers(vendor_facts):
        by_bus.update(reader.gpu_records(facts))
    in_sysfs = {p.key for p in platforms.hardware_platforms() if p.facts and platforms.load(p.facts).vram_bar_in_sysfs}
    devices = (health or {}).get("devices", {})
    for gpu in topology.gpus:
        bus = normalise_bdf(gpu.pci_bus_id or "")
        memory = gpu.memory_bytes
        record = by_bus.get(bus)
        if record is not None:
            bar1 = record.get("bar1")
            if not bar1:
                unknown.append(f"{gpu.id} BAR1: NVML gave no BAR1 info ({(record.get('errors') or {}).get('bar1', 'not recorded')})")
                continue
            total = int(bar1["total_bytes"])
            text = f"{gpu.id} BAR1 {total / GiB:.0f} GiB"
            if memory:
                text += f" maps all {memory / GiB:.0f} GiB of memory" if total >= memory else f" of {memory / GiB:.0f} GiB memory"
            out.append(text + ".")
            if total < GiB:
                problems.append(f"{gpu.id} BAR1 is only {total // 1024**2} MiB: peer mappings and GPUDirect RDMA go through "
                                "a small window; enable 'Above 4G decoding' and Resizable BAR in the BIOS")
            continue
        bars = (devices.get(bus) or {}).get("bars") or []
        if bars and gpu.vendor in in_sysfs:  # the largest BAR is the VRAM BAR (AMD)
            largest = max(b["size_bytes"] for b in bars)
            if memory and largest >= memory:
                out.append(f"{gpu.id} VRAM BAR {largest / GiB:.0f} GiB maps all {memory / GiB:.0f} GiB (resizable BAR on).")
            else:
                out.append(f"{gpu.id} largest BAR {largest / 1024**2:.0f} MiB"
                           + (f" of {memory / GiB:.0f} GiB VRAM: resizable BAR is off or not supported by the slot" if memory else "")
                           + ".")
        elif gpu.vendor:
            unknown.append(f"{gpu.id} BAR1: no NVML facts and no sysfs BARs recorded")
    return out


def _narrow_links(topology: Topology, pci: Mapping[str, Any], in_vm: bool) -> list[str]:
    """PCIe links on the GPUs' and NICs' paths that trained narrower than both ends allow (sysfs
    ``current_link_width`` below ``max_link_width`` of the device and of the port above it). In a
    VM only the passed-through endpoints count: the emulated bridges report made-up widths."""
    out = []
    seen: set[str] = set()
    names = {normalise_bdf(d.pci_bus_id): f"PCIe switch {d.id}" if d.kind is DeviceKind.PCIE_SWITCH else d.id
             for d in topology.devices if d.pci_bus_id}
    for dev in [*topology.gpus, *(d for d in topology.devices if d.kind is DeviceKind.NIC)]:
        bus = normalise_bdf(dev.pci_bus_id or "")
        chain = (pci.get(bus) or {}).get("chain") or []
        members = [b for b in chain[1:] if b in pci]
        for i, bdf in enumerate(members):
            if bdf in seen or (in_vm and bdf != bus):
                continue
            seen.add(bdf)
            link = pci[bdf].get("link") or {}
            width, most = link.get("width"), link.get("max_width")
            upstream = (pci[members[i - 1]].get("link") or {}).get("max_width") if i > 0 else None
            allowed = min(w for w in (most, upstream) if w) if (most or upstream) else None
            if width and allowed and width < allowed:
                what = names.get(bdf, f"PCIe {_role(chain.index(bdf))} {bdf}")
                out.append(f"the PCIe link of {what} ({bdf}) trained x{width} of x{allowed} possible: reseat the card, "
                           "check the riser/cable or the slot's lane sharing (BIOS bifurcation)")
    return out


def _pairs_text(labels: list[str], limit: int = 6) -> str:
    shown = ", ".join(labels[:limit])
    return f"{shown} and {len(labels) - limit} more pairs" if len(labels) > limit else shown


def _endpoints(topology: Topology) -> list[tuple[Device, Device]]:
    gpus = list(topology.gpus)
    nics = [d for d in topology.devices if d.kind is DeviceKind.NIC and d.pci_bus_id]
    pairs = [(a, b) for i, a in enumerate(gpus) for b in gpus[i + 1:]]
    pairs += [(g, n) for g in gpus for n in nics]
    return pairs


def build_report(topology: Topology, *, sysfs_facts: Mapping[str, Any] | None, health_facts: Mapping[str, Any] | None,
                 vendor_facts: Mapping[str, Mapping[str, Any]] | None = None) -> HealthReport:
    """The health report of ``topology`` from the facts of its machine (any may be None: what is
    missing becomes a 'not readable' line, never a guess). ``vendor_facts``: each platform's
    discovery facts by platform key (NVML's, amdsmi's), read through its row's ``facts``."""
    problems: list[str] = []
    unknown: list[str] = []
    notes: list[str] = []
    pci = (sysfs_facts or {}).get("pci", {})
    if not pci:
        unknown.append("PCIe paths: no sysfs facts (not Linux, or the recording has no sysfs tree)")
    if health_facts is None:
        unknown.append("ACS, IOMMU and BARs: no config-space/IOMMU facts recorded")
    iommu = dict((health_facts or {}).get("iommu") or {"mode": "unknown", "evidence": []})
    vm = dict((health_facts or {}).get("virtual_machine") or {"detected": None, "evidence": "not read"})
    p2p_of: dict[frozenset[str], dict[str, Any]] = {}
    for reader, facts in _facts_readers(vendor_facts):
        p2p_of.update(reader.p2p_pairs(facts))
    paths: list[PathCheck] = []
    unreadable_ports: set[str] = set()
    redirecting: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
    refused: dict[str, dict[str, list[str]]] = {}  # status -> pair -> capabilities
    translated_pairs: list[str] = []
    for a, b in _endpoints(topology):
        level = query.pair_level(topology, a, b)
        over = {"NV": "nvlink", "XGMI": "xgmi"}.get(level.family, "pcie")
        bus_a, bus_b = normalise_bdf(a.pci_bus_id or ""), normalise_bdf(b.pci_bus_id or "")
        ports = _path_ports(pci[bus_a]["chain"], pci[bus_b]["chain"], health_facts or {}) if bus_a in pci and bus_b in pci else []
        pair_problems: list[str] = []
        pair_unknown: list[str] = []
        if over == "pcie":
            for q in ports:
                if not q.decides:
                    continue  # above the common switch, or a path through the root complex: ACS does not reroute it
                if q.redirect:
                    redirecting.setdefault((q.bdf, q.role, q.redirect), []).append(f"{a.id}-{b.id}")
                    pair_problems.append(f"ACS {'+'.join(q.redirect)} set on {q.role} {q.bdf}")
                elif q.status in ("not-readable", "missing", "unknown"):
                    unreadable_ports.add(q.bdf)
            if iommu.get("mode") == "translated":
                translated_pairs.append(f"{a.id}-{b.id}")
                pair_problems.append("the IOMMU translates the DMA of both ends")
        p2p = p2p_of.get(frozenset((bus_a, bus_b)), {})
        if a.is_gpu and b.is_gpu:
            # a route over a GPU fabric is judged by the driver's status named after it (NVML's "nvlink")
            wanted = (over,) if over in p2p else ("read", "write", "pci", "accessible")
            bad = {k: v for k, v in p2p.items() if k in wanted and v not in (None, "OK")}
            for k, v in bad.items():
                pair_problems.append(f"driver P2P {k} {v}")
                refused.setdefault(str(v), {}).setdefault(f"{a.id}-{b.id}", []).append(k)
            if not p2p:
                pair_unknown.append(f"driver P2P status {a.id}-{b.id}: not recorded")
        paths.append(PathCheck(a.id, b.id, level.code, over, tuple(ports), p2p, tuple(pair_problems), tuple(pair_unknown)))
        unknown.extend(pair_unknown)
    for status, pairs in refused.items():
        caps = sorted({c for cs in pairs.values() for c in cs})
        problems.append(f"driver P2P status {status} ({', '.join(caps)}) for {_pairs_text(list(pairs))}: "
                        f"{P2P_MEANING.get(status, status)}")
    for (bdf, role, bits), labels in redirecting.items():
        problems.append(f"ACS {'+'.join(bits)} set on {role} {bdf}: peer requests on {_pairs_text(labels)} are redirected "
                        f"up to the root complex instead of crossing the switch; fix: {FIX_ACS.format(bdf=bdf)}")
    if translated_pairs:
        problems.append(f"the IOMMU translates the GPUs' and NICs' DMA (group type DMA): peer traffic on "
                        f"{_pairs_text(translated_pairs)} may be routed through the root complex; fix: {FIX_IOMMU}")
    on_paths = {q.bdf: q for p in paths for q in p.ports if q.bdf in unreadable_ports}
    short = sorted(b for b, q in on_paths.items() if q.status == "not-readable")
    absent = sorted(b for b, q in on_paths.items() if q.status != "not-readable")
    if short:
        sizes = sorted({on_paths[b].readable_bytes for b in short})
        unknown.append(f"ACS of {len(short)} bridge{'s' if len(short) != 1 else ''} on PCIe peer paths "
                       f"({', '.join(short[:6])}{' ...' if len(short) > 6 else ''}): only "
                       f"{'/'.join(str(s) for s in sizes)} bytes of config space readable; {PRIVILEGE_NOTE}")
    if absent:
        unknown.append(f"ACS of {len(absent)} bridge{'s' if len(absent) != 1 else ''} on PCIe peer paths "
                       f"({', '.join(absent[:6])}{' ...' if len(absent) > 6 else ''}): no config space file read "
                       "(not recorded in this folder, or not present in sysfs)")
    if iommu.get("mode") in ("unknown", "mixed"):
        unknown.append(f"IOMMU mode {iommu.get('mode')}: {'; '.join(iommu.get('evidence', []))}")
    if health_facts is not None and not health_facts.get("cmdline_read", True):
        unknown.append("/proc/cmdline: not readable or not recorded")
    problems.extend(_narrow_links(topology, pci, bool(vm.get("detected"))))
    bar1 = _bar1_lines(topology, vendor_facts, health_facts, problems, unknown)
    if vm.get("detected") and not problems:
        notes.append("In a VM, 'clean' covers what the guest sees; slow peer copies can still come from the host's "
                     "ACS/IOMMU settings or from a hypervisor that does not pass P2P through.")
    return HealthReport(tuple(paths), iommu, tuple(bar1), vm, tuple(dict.fromkeys(problems)), tuple(dict.fromkeys(unknown)),
                        tuple(notes))
