"""What decides whether peer (P2P) PCIe traffic goes straight through a switch or bounces through the
host: ACS control bits per bridge, the IOMMU mode, BAR sizes and whether this is a virtual machine.
Read from sysfs with the discovery ``SysReader`` (so ``topology export --raw`` records the same files,
PCI config space byte for byte) and kept as JSON-able facts; ``diagnose.health`` judges them.

What is read, and what it needs:

* ``/sys/bus/pci/devices/<bdf>/config`` of every bridge and endpoint on a GPU's or NIC's path. The
  kernel gives an unprivileged reader only the first 64 bytes (128 for CardBus bridges); the whole
  config space (4096 bytes on PCIe, where the extended capabilities live) needs CAP_SYS_ADMIN, i.e.
  root (``pci_read_config`` in drivers/pci/pci-sysfs.c: ``size = 64`` unless
  ``file_ns_capable(filp, &init_user_ns, CAP_SYS_ADMIN)``). Without it ACS reads as "not readable".
* The ACS extended capability (id 0x000D) in that space: capability register at +4, control at +6,
  bits SV 0x01, TB 0x02, RR 0x04, CR 0x08, UF 0x10, EC 0x20, DT 0x40 (include/uapi/linux/pci_regs.h,
  ``PCI_EXT_CAP_ID_ACS``, ``PCI_ACS_*``). RR (P2P request redirect), CR (P2P completion redirect) and
  EC (P2P egress control) are the bits that send peer traffic up to the root complex: the three the
  kernel's ``pci=disable_acs_redir=<bdf>`` boot option clears (drivers/pci/pci.c ``pci_setup`` and
  ``pci_disable_acs_redir``: ``PCI_ACS_RR | PCI_ACS_CR | PCI_ACS_EC``; kernel-parameters.txt ``pci=``).
* ``/sys/bus/pci/devices/<bdf>/resource``: one line per BAR (start, end, flags), world-readable.
* ``/sys/bus/pci/devices/<bdf>/iommu_group`` (a link to ``/sys/kernel/iommu_groups/<n>``) and that
  group's ``type``: ``DMA`` / ``DMA-FQ`` = translated by the IOMMU, ``identity`` = not translated
  (passthrough), ``blocked`` / ``unmanaged`` (e.g. bound to vfio) (Documentation/ABI/testing/
  sysfs-kernel-iommu_groups, kernel 5.11+); ``/sys/class/iommu`` (one entry per IOMMU unit the kernel
  registered: ``dmar0`` on Intel VT-d, ``ivhd0`` on AMD-Vi; empty when the IOMMU is off).
* ``/proc/cmdline`` (``iommu=pt``, ``iommu=off``, ``intel_iommu=``, ``amd_iommu=``,
  ``iommu.passthrough=``, ``pci=`` (``pci=disable_acs_redir=``), ``pcie_acs_override=``).
* ``/sys/class/dmi/id/sys_vendor`` and ``product_name``, ``/sys/hypervisor/type``, and paravirtual
  PCI devices (a virtio NIC): a virtual machine sees the hypervisor's emulated bridges and IOMMU,
  not the host's, so the health report says so.
All of these but the extended config space are world-readable.
"""
from __future__ import annotations

import re
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .sysfs import SysReader

FACTS_FORMAT = "linkscope.pcihealth-facts"
FACTS_VERSION = 1

PCI_CFG_SPACE_BYTES = 256  # conventional config space; the extended space runs to 4096 on PCIe
PCI_EXT_CFG_SPACE_BYTES = 4096
UNPRIVILEGED_CONFIG_BYTES = 64  # drivers/pci/pci-sysfs.c pci_read_config without CAP_SYS_ADMIN
EXT_CAP_ID_ACS = 0x000D
ACS_CAP_OFFSET = 0x04
ACS_CTRL_OFFSET = 0x06
#: ACS capability/control bits (include/uapi/linux/pci_regs.h), in register order.
ACS_BITS: tuple[tuple[str, int, str], ...] = (
    ("SV", 0x01, "source validation"),
    ("TB", 0x02, "translation blocking"),
    ("RR", 0x04, "P2P request redirect"),
    ("CR", 0x08, "P2P completion redirect"),
    ("UF", 0x10, "upstream forwarding"),
    ("EC", 0x20, "P2P egress control"),
    ("DT", 0x40, "direct translated P2P"),
)
#: the control bits that send peer requests/completions up to the root complex (what
#: ``pci=disable_acs_redir=`` clears).
ACS_REDIRECT_BITS = ("RR", "CR", "EC")
PRIVILEGE_NOTE = ("the PCIe extended config space (where ACS lives) is readable only with CAP_SYS_ADMIN "
                  "(run as root, e.g. sudo); without it the kernel returns the first 64 bytes")

#: what a DMI vendor/product string says about a hypervisor (lower-case substrings).
_HYPERVISOR_HINTS = ("qemu", "kvm", "vmware", "virtualbox", "xen", "amazon ec2", "google compute engine",
                     "openstack", "bochs", "cloud hypervisor", "virtual machine", "parallels")


def _bit_names(value: int) -> list[str]:
    return [name for name, bit, _ in ACS_BITS if value & bit]


def parse_config(data: bytes) -> dict[str, Any]:
    """ACS from the bytes of one device's config space.

    ``status``: ``read`` (ACS found: ``capability`` and ``control`` bit names, ``control_raw``),
    ``absent`` (full extended space read, no ACS capability), ``not-readable`` (only the first
    ``readable_bytes`` could be read: the 64 (128 for CardBus) an unprivileged reader gets; needs
    root) or ``no-extended-space`` (exactly 256 bytes, which only a privileged reader gets, and
    only from a device whose config size the kernel set to 256: a conventional PCI device, such
    as a legacy virtio device, or a platform without extended config access; or 4096 bytes with
    an empty extended capability list).
    """
    n = len(data)
    out: dict[str, Any] = {"readable_bytes": n, "status": "", "acs": None}
    if n < PCI_CFG_SPACE_BYTES:
        out["status"] = "not-readable"
        return out
    if n == PCI_CFG_SPACE_BYTES:
        out["status"] = "no-extended-space"
        return out
    offset, seen = 0x100, set()
    first = True
    while offset and offset + 4 <= n and offset not in seen:
        seen.add(offset)
        (header,) = struct.unpack_from("<I", data, offset)
        if header in (0, 0xFFFFFFFF):
            if first:
                out["status"] = "no-extended-space"
                return out
            break
        first = False
        cap_id, nxt = header & 0xFFFF, (header >> 20) & 0xFFC
        if cap_id == EXT_CAP_ID_ACS and offset + ACS_CTRL_OFFSET + 2 <= n:
            (cap,) = struct.unpack_from("<H", data, offset + ACS_CAP_OFFSET)
            (ctrl,) = struct.unpack_from("<H", data, offset + ACS_CTRL_OFFSET)
            out["status"] = "read"
            out["acs"] = {"offset": offset, "capability": _bit_names(cap), "control": _bit_names(ctrl),
                          "control_raw": ctrl}
            return out
        offset = nxt
    out["status"] = "absent"
    return out


def set_acs_control(data: bytes, control: int) -> bytes:
    """``data`` with the ACS control register set to ``control`` (for building fixtures from a
    recording: "this port with redirect bits set"). ValueError when there is no ACS capability."""
    parsed = parse_config(data)
    if parsed["status"] != "read":
        raise ValueError(f"no ACS capability in these {len(data)} config bytes ({parsed['status']})")
    offset = parsed["acs"]["offset"] + ACS_CTRL_OFFSET
    return data[:offset] + struct.pack("<H", control & 0xFFFF) + data[offset + 2:]


def parse_resources(text: str | None) -> list[dict[str, Any]]:
    """BARs from a sysfs ``resource`` file: ``index``, ``size_bytes``, ``prefetchable``, ``is_64bit``
    for every non-empty line among the first six (the BARs; the 7th is the expansion ROM)."""
    bars: list[dict[str, Any]] = []
    for index, line in enumerate((text or "").splitlines()[:6]):
        parts = line.split()
        if len(parts) != 3:
            continue
        try:
            start, end, flags = (int(p, 16) for p in parts)
        except ValueError:
            continue
        if end <= start:
            continue
        bars.append({"index": index, "size_bytes": end - start + 1, "prefetchable": bool(flags & 0x2000),
                     "is_64bit": bool(flags & 0x100000)})
    return bars


_CMDLINE_KEYS = ("iommu", "intel_iommu", "amd_iommu", "iommu.passthrough", "iommu.strict", "pci", "pcie_acs_override")


def parse_cmdline(text: str | None) -> dict[str, str]:
    """The kernel parameters that matter for P2P (``iommu=pt`` → ``{"iommu": "pt"}``)."""
    out: dict[str, str] = {}
    for token in (text or "").split():
        key, _, value = token.partition("=")
        if key in _CMDLINE_KEYS:
            out[key] = value
    return out


def iommu_mode(units: list[str] | None, group_types: Mapping[str, str | None], cmdline: Mapping[str, str]) -> dict[str, Any]:
    """``mode`` off | passthrough | translated | mixed | unknown of the IOMMU for the devices whose
    groups are in ``group_types`` (group → type file text, None when the kernel has no such file),
    with the ``evidence`` sentences it rests on. ``units`` None: /sys/class/iommu could not be read
    (or was not recorded), so "off" cannot be told from "not looked at"."""
    evidence: list[str] = []
    opts = ", ".join(f"{k}={v}" if v else k for k, v in cmdline.items() if k.endswith("iommu") or k.startswith("iommu"))
    if opts:
        evidence.append(f"kernel command line: {opts}")
    if units is None and not group_types:
        evidence.append("/sys/class/iommu not readable or not recorded")
        off = cmdline.get("iommu") == "off" or cmdline.get("intel_iommu") == "off" or cmdline.get("amd_iommu") == "off"
        return {"mode": "off" if off else "unknown", "evidence": evidence, "units": []}
    units = units or []
    if not units and not group_types:
        evidence.append("no IOMMU unit registered (/sys/class/iommu is empty) and the devices have no IOMMU group")
        return {"mode": "off", "evidence": evidence, "units": []}
    evidence.append(f"IOMMU units: {', '.join(units) if units else 'none listed'}")
    types = {g: (t or "").strip() for g, t in group_types.items()}
    known = {g: t for g, t in types.items() if t}
    if known:
        kinds = sorted(set(known.values()))
        evidence.append(f"IOMMU group types of the GPUs and NICs: {', '.join(kinds)} "
                        f"(groups {', '.join(sorted(known, key=lambda g: int(g) if g.isdigit() else 0))})")
        translated = {t for t in kinds if t.upper().startswith("DMA")}
        if translated and len(translated) == len(kinds):
            return {"mode": "translated", "evidence": evidence, "units": units}
        if kinds == ["identity"]:
            return {"mode": "passthrough", "evidence": evidence, "units": units}
        return {"mode": "mixed", "evidence": evidence, "units": units}
    if group_types:
        evidence.append("the IOMMU groups have no readable 'type' file (kernel older than 5.6?)")
    if cmdline.get("iommu") == "pt" or cmdline.get("iommu.passthrough") == "1":
        return {"mode": "passthrough", "evidence": evidence, "units": units}
    return {"mode": "unknown", "evidence": evidence, "units": units}


#: PCI vendor ids of paravirtual devices that exist only inside a guest (virtio: Red Hat 0x1af4,
#: VMware 0x15ad, Microsoft Hyper-V 0x1414, Parallels 0x1ab8; the PCI ID repository's vendor list).
PARAVIRTUAL_VENDORS = {"0x1af4": "virtio", "0x15ad": "VMware", "0x1414": "Hyper-V", "0x1ab8": "Parallels"}


def virtual_machine(vendor: str | None, product: str | None, hypervisor: str | None,
                    pci_vendors: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """Whether this is a guest: /sys/hypervisor, DMI, or a paravirtual PCI device (``pci_vendors``:
    bus id -> vendor id; Firecracker guests have no DMI at all, but their NIC is virtio).
    ``detected`` None when nothing was readable."""
    text = " ".join(t for t in (vendor, product) if t).lower()
    if hypervisor:
        return {"detected": True, "evidence": f"/sys/hypervisor/type is {hypervisor!r}"}
    for bdf, vid in sorted((pci_vendors or {}).items()):
        if vid in PARAVIRTUAL_VENDORS:
            return {"detected": True, "evidence": f"{PARAVIRTUAL_VENDORS[vid]} device {bdf} (vendor {vid})"}
    hit = next((h for h in _HYPERVISOR_HINTS if h in text), None)
    if hit:
        return {"detected": True, "evidence": f"DMI says {' / '.join(t for t in (vendor, product) if t)!r}"}
    if text:
        return {"detected": False, "evidence": f"DMI says {' / '.join(t for t in (vendor, product) if t)!r}"}
    return {"detected": None, "evidence": "no DMI vendor/product readable"}


def read_facts(pci: Mapping[str, Any], root: Path = Path("/"), reader: SysReader | None = None) -> dict[str, Any]:
    """The P2P-health facts of the devices in ``pci`` (``sysfs.read_facts(...)["pci"]``: every bridge
    and endpoint on a GPU's or NIC's path). Never raises for a missing file: it becomes None/a status."""
    reader = reader or SysReader(Path(root))
    devices: dict[str, Any] = {}
    groups: dict[str, str | None] = {}
    for bdf in sorted(pci):
        base = f"sys/bus/pci/devices/{bdf}"
        data = reader.read_bytes(f"{base}/config")
        # "missing": no config file at all (a recording made before linkscope recorded config space)
        config = parse_config(data) if data is not None else {"readable_bytes": 0, "status": "missing", "acs": None}
        group = None
        if reader.exists(f"{base}/iommu_group"):
            group = reader.resolve(f"{base}/iommu_group").rsplit("/", 1)[-1]
            if group not in groups:
                groups[group] = reader.read(f"sys/kernel/iommu_groups/{group}/type")
        devices[bdf] = {"config": config, "bars": parse_resources(reader.read(f"{base}/resource")), "iommu_group": group}
    units = reader.listdir("sys/class/iommu") if reader.exists("sys/class/iommu") else None
    cmdline_text = reader.read("proc/cmdline")
    cmdline = parse_cmdline(cmdline_text)
    vm = virtual_machine(reader.read("sys/class/dmi/id/sys_vendor"), reader.read("sys/class/dmi/id/product_name"),
                         reader.read("sys/hypervisor/type"), {b: (info or {}).get("vendor") for b, info in pci.items()})
    return {"format": FACTS_FORMAT, "version": FACTS_VERSION, "devices": devices,
            "iommu": iommu_mode(units, groups, cmdline), "iommu_groups": groups,
            "cmdline": cmdline, "cmdline_read": cmdline_text is not None, "virtual_machine": vm}


_LSPCI_HEAD = re.compile(r"^([0-9a-fA-F]{4}:)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s")
_LSPCI_HEX = re.compile(r"^([0-9a-fA-F]{2,3}):((?:\s[0-9a-fA-F]{2})+)\s*$")


def parse_lspci_hex(text: str) -> dict[str, bytes]:
    """Config bytes per device from ``lspci -xxxx`` (or ``-vvv -xxxx``) output: bus id → the bytes
    dumped (4096 when lspci ran as root, 64 otherwise, as the kernel allowed it)."""
    out: dict[str, bytearray] = {}
    current: str | None = None
    for line in text.splitlines():
        head = _LSPCI_HEAD.match(line)
        if head:
            current = ((head.group(1) or "0000:") + head.group(2)).lower()
            out[current] = bytearray()
            continue
        hexline = _LSPCI_HEX.match(line.strip())
        if hexline and current is not None:
            offset = int(hexline.group(1), 16)
            row = bytes(int(b, 16) for b in hexline.group(2).split())
            buf = out[current]
            if offset == len(buf):
                buf.extend(row)
    return {bdf: bytes(buf) for bdf, buf in out.items() if buf}


def overlay_config(facts: Mapping[str, Any], dumps: Mapping[str, bytes], source: str) -> dict[str, Any]:
    """``facts`` with the ACS of every device whose config space was not readable (or not recorded)
    taken from ``dumps`` (bus id -> bytes, e.g. ``parse_lspci_hex`` of a root ``lspci -xxxx``)
    where those hold the extended space; each such device says ``config_source``."""
    devices = {bdf: dict(d) for bdf, d in facts.get("devices", {}).items()}
    for bdf, device in devices.items():
        data = dumps.get(bdf)
        status = (device.get("config") or {}).get("status")
        if data is not None and len(data) > PCI_CFG_SPACE_BYTES and status in ("not-readable", "missing"):
            device["config"] = parse_config(data)
            device["config_source"] = source
    return {**facts, "devices": devices}
