"""AMD GPUs (GCDs) and xGMI links from ``rocm-smi`` / ``amd-smi`` output.

No AMD GPU was available while this was written: the parsers are tested on recorded outputs that
follow the documented formats (``rocm-smi --showtopo`` as printed in ROCm/rocm_smi_lib#108 and the
ROCm MI200 system-optimisation guide; ``amd-smi topology --json`` and ``amd-smi list --json`` as
built by ``amdsmi_cli/amdsmi_commands.py``: one object per GPU with ``gpu``, ``link_accessibility``,
``weight``, ``hops``, ``link_type``, ``numa_bandwidth`` keyed ``gpu_<id>``). Verify on a real node
with ``linkscope topo export --raw DIR``.

Reading the numbers (sources in docs/discovery.md):

* ``hops`` is 1 for every pair reachable over xGMI, direct or not (ROCm/rocm-systems#5763,
  open-mpi/hwloc#775), so it is not used to find direct links;
* ``weight`` is 15 × the xGMI hop count for xGMI pairs (amdkfd), so the smallest xGMI weight marks
  direct pairs;
* ``numa_bandwidth`` ("min-max", MB/s) on MI200 is min = one link, max = links × 50000, 0 for
  indirect peers (amdkfd ``amdgpu_amdkfd_get_xgmi_bandwidth_mbytes``: x16 × 25 Gbps / 8), so
  max / min is the number of xGMI links. Without it the link count is unknown and 1 is assumed
  (with a note).

Per-link rate: 50 GB/s per direction, the MI200 datasheet value ("25 GT/s … 50 GB/s for a 16-wide
link", ROCm MI250 microarchitecture page), labelled ``datasheet``. GCD–CPU on MI250X nodes (HPE
Cray EX235a): one Infinity Fabric link of 36 GB/s per direction (OLCF Frontier user guide).
"""
from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import BackendUnavailable, UserError
from ..topology.model import Device, DeviceKind, Link, LinkKind, Provenance, Topology
from ..topology.pcie import pcie_gb_per_s, pcie_generation
from .base import Availability
from .merge import GpuPart, assemble
from .sysfs import normalise_bdf

XGMI_MI200_GB_PER_S = 50.0
MI250X_CPU_GCD_GB_PER_S = 36.0
XGMI_SOURCE = ("ROCm MI250 microarchitecture: 25 GT/s x16 = 50 GB/s per link per direction (datasheet; "
               "amdkfd assumes the same: x16 x 25 Gbps / 8)")

XGMI_OS_SOURCE = "amdsmi_get_minmax_bandwidth_between_processors: min = one xGMI link (MB/s, amdkfd io_link)"

# what raw recording runs, and the file each output is stored in
COMMANDS: dict[str, list[str]] = {
    "rocm-smi-showtopo.txt": ["rocm-smi", "--showtopo"],
    "rocm-smi-showbus.txt": ["rocm-smi", "--showbus"],
    "rocm-smi-showproductname.txt": ["rocm-smi", "--showproductname"],
    "amd-smi-topology.json": ["amd-smi", "topology", "--json"],
    "amd-smi-topology.txt": ["amd-smi", "topology"],
    "amd-smi-list.json": ["amd-smi", "list", "--json"],
}


def probe(which: Callable[[str], str | None] = shutil.which) -> Availability:
    """ROCm discovery works when ``amd-smi`` or ``rocm-smi`` is on PATH."""
    found = [tool for tool in ("amd-smi", "rocm-smi") if which(tool)]
    if found:
        return Availability("rocm", True, version=None, reason=f"using {', '.join(found)}")
    return Availability("rocm", False, "neither amd-smi nor rocm-smi is on PATH (no ROCm install)")


def _run(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 and done.stdout.strip() else None


def read_outputs(run: Callable[[list[str]], str | None] = _run,
                 which: Callable[[str], str | None] = shutil.which) -> dict[str, str]:
    """Run the SMI commands that exist here; file name → output text."""
    outputs = {}
    for name, argv in COMMANDS.items():
        if which(argv[0]):
            text = run(argv)
            if text:
                outputs[name] = text
    return outputs


# ---- parsers ----------------------------------------------------------------------------------------

_TITLE_RE = re.compile(r"^=+\s*(.*?)\s*=+\s*$")
_GPU_LINE_RE = re.compile(r"^GPU\[(\d+)\]\s*:\s*(.*)$")


def _sections(text: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        match = _TITLE_RE.match(line.strip())
        if match:
            title = match.group(1).strip()
            current = sections.setdefault(title.lower(), []) if title else None
            continue
        if current is not None and line.strip():
            current.append(line)
    return sections


def _matrix(lines: list[str], what: str) -> dict[tuple[int, int], str]:
    if not lines:
        return {}
    header = lines[0].split()
    cols = []
    for token in header:
        if not re.fullmatch(r"GPU\d+", token):
            raise UserError(f"rocm-smi {what} table: unexpected column header {token!r}")
        cols.append(int(token[3:]))
    cells: dict[tuple[int, int], str] = {}
    for line in lines[1:]:
        tokens = line.split()
        if not tokens or not re.fullmatch(r"GPU\d+", tokens[0]):
            continue
        row = int(tokens[0][3:])
        if len(tokens) - 1 != len(cols):
            raise UserError(f"rocm-smi {what} table: row GPU{row} has {len(tokens) - 1} values, expected {len(cols)}")
        for col, value in zip(cols, tokens[1:]):
            cells[(row, col)] = value
    return cells


def parse_showtopo(text: str) -> dict[str, Any]:
    """``rocm-smi --showtopo`` → {"weight": {(i, j): int}, "hops": ..., "link_type": {(i, j): str},
    "numa_node": {i: int}}. Raises UserError on text that is not that output."""
    sections = _sections(text)
    if "weight between two gpus" not in sections and "link type between two gpus" not in sections:
        raise UserError("not rocm-smi --showtopo output (no 'Weight between two GPUs' or 'Link Type between two GPUs' section)")
    out: dict[str, Any] = {"weight": {}, "hops": {}, "link_type": {}, "numa_node": {}}
    for key, title in (("weight", "weight between two gpus"), ("hops", "hops between two gpus")):
        for cell, value in _matrix(sections.get(title, []), key).items():
            if value.isdigit():
                out[key][cell] = int(value)
    for cell, value in _matrix(sections.get("link type between two gpus", []), "link type").items():
        if not value.isdigit():
            out["link_type"][cell] = "XGMI" if value.upper() in ("XGMI", "XMGI") else value.upper()
    # "Numa Node" is rsmi_topo_get_numa_node_number (a uint32 printed through a c_int32, so the
    # kernel's "none" arrives as -1) and "Numa Affinity" the device's sysfs numa_node (-1: none),
    # rocm-systems release/rocm-rel-7.0 projects/rocm-smi-lib/python_smi_tools/rocm_smi.py:3428-3441;
    # a negative value is unknown (None), never node -1, and Affinity stands in where Node has none
    affinity: dict[int, int] = {}
    for line in sections.get("numa nodes", []):
        match = _GPU_LINE_RE.match(line.strip())
        if match:
            gpu = int(match.group(1))
            node = re.search(r"Numa Node:\s*(-?\d+)", match.group(2))
            if node and int(node.group(1)) >= 0 and int(node.group(1)) != 2**32 - 1:
                out["numa_node"][gpu] = int(node.group(1))
            near = re.search(r"Numa Affinity:\s*(-?\d+)", match.group(2))
            if near and int(near.group(1)) >= 0:
                affinity[gpu] = int(near.group(1))
    for gpu, node_id in affinity.items():
        out["numa_node"].setdefault(gpu, node_id)
    return out


def parse_gpu_lines(text: str, label: str) -> dict[int, str]:
    """``GPU[0]\t\t: PCI Bus: 0000:C1:00.0`` style lines → {0: "0000:C1:00.0"} for the given label."""
    out = {}
    pattern = re.compile(re.escape(label) + r"\s*:\s*(.+)$", re.IGNORECASE)
    for line in text.splitlines():
        match = _GPU_LINE_RE.match(line.strip())
        if match:
            value = pattern.search(match.group(2))
            if value:
                out[int(match.group(1))] = value.group(1).strip()
    return out


def _cell(value: Any) -> Any:
    if isinstance(value, dict) and "value" in value:
        return value["value"]
    return value


def _store_topology_cell(out: dict[str, Any], target: str, src: int, dst: int, value: Any) -> None:
    value = _cell(value)
    if target in ("weight", "hops") and isinstance(value, int) and not isinstance(value, bool):
        out[target][(src, dst)] = value
    elif target == "link_type" and isinstance(value, str):
        out[target][(src, dst)] = "XGMI" if value.upper() in ("XGMI", "XMGI") else value.upper()
    elif target == "bandwidth_mbps" and isinstance(value, str):
        bw = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", value)
        if bw:
            out[target][(src, dst)] = (int(bw.group(1)), int(bw.group(2)))
    elif target == "accessible" and isinstance(value, bool):
        out[target][(src, dst)] = value
    elif target == "accessible" and isinstance(value, str) and value.upper() in ("ENABLED", "DISABLED"):
        out[target][(src, dst)] = value.upper() == "ENABLED"


#: ``amd-smi topology --json`` before ROCm 6.1.1: per GPU, one object per property keyed ``gpu_<id>``.
_KEYED_FIELDS = (("weight", "weight"), ("hops", "hops"), ("link_type", "link_type"),
                 ("numa_bandwidth", "bandwidth_mbps"), ("link_accessibility", "accessible"))
#: ROCm >= 6.1.1 (ROCm/amdsmi rocm-6.1.1 ``amdsmi_cli/amdsmi_commands.py:2852``, rocm-6.2.0 :2927;
#: rocm-6.1.0 and rocm-6.0.2 have only the keyed layout): per GPU a
#: ``links`` list of {gpu, bdf, weight, link_status, link_type, num_hops, bandwidth, ...}.
_LINK_FIELDS = (("weight", "weight"), ("num_hops", "hops"), ("link_type", "link_type"),
                ("bandwidth", "bandwidth_mbps"), ("link_status", "accessible"))


def parse_amdsmi_topology_json(text: str) -> dict[str, Any]:
    """``amd-smi topology --json`` → the same shape as ``parse_showtopo`` plus
    "bandwidth_mbps": {(i, j): (min, max)}, "accessible": {(i, j): bool} and "bdf": {i: str}.

    Both layouts amd-smi has printed are read: the keyed one (``"weight": {"gpu_1": 15}``) and,
    from ROCm 6.1.1, the per-GPU ``links`` list. Anything else is one UserError naming what was
    found, never an empty machine."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(f"amd-smi topology --json output is not JSON: {exc.msg} (line {exc.lineno})") from None
    if isinstance(data, dict):
        data = data.get("gpu_data") or data.get("topology") or [data]
    if not isinstance(data, list):
        raise UserError("amd-smi topology --json: expected a list of GPU objects")
    out: dict[str, Any] = {"weight": {}, "hops": {}, "link_type": {}, "bandwidth_mbps": {}, "accessible": {},
                           "numa_node": {}, "bdf": {}}
    for item in data:
        if not isinstance(item, dict) or "gpu" not in item:
            raise UserError("amd-smi topology --json: an entry has no 'gpu' field")
        try:
            src = int(item["gpu"])
        except (TypeError, ValueError):
            raise UserError(f"amd-smi topology --json: 'gpu' is not a GPU index: {item['gpu']!r}") from None
        if isinstance(item.get("bdf"), str):
            out["bdf"][src] = item["bdf"]
        if isinstance(item.get("links"), list):  # ROCm >= 6.1.1
            for link in item["links"]:
                if not isinstance(link, dict) or not isinstance(link.get("gpu"), int):
                    raise UserError("amd-smi topology --json: a 'links' entry has no integer 'gpu'")
                dst = int(link["gpu"])
                if isinstance(link.get("bdf"), str):
                    out["bdf"].setdefault(dst, link["bdf"])
                if dst == src:
                    continue
                for key, target in _LINK_FIELDS:
                    if key in link:
                        _store_topology_cell(out, target, src, dst, link[key])
            continue
        keyed = [key for key, _ in _KEYED_FIELDS if isinstance(item.get(key), dict)]
        if not keyed:
            found = ", ".join(sorted(str(k) for k in item)) or "nothing"
            raise UserError(f"amd-smi topology --json: unrecognised layout for GPU {src} (keys: {found}); "
                            "expected a 'links' list (ROCm >= 6.1.1) or per-property tables keyed gpu_<id>",
                            hint="record it with linkscope topo export --raw DIR and attach it to a bug report")
        for key, target in _KEYED_FIELDS:
            for dst_key, raw in (item.get(key) or {}).items():
                match = re.fullmatch(r"gpu_?(\d+)", str(dst_key))
                if not match:
                    continue
                dst = int(match.group(1))
                if dst != src:
                    _store_topology_cell(out, target, src, dst, raw)
    return out


def parse_outputs(outputs: Mapping[str, str]) -> dict[str, Any]:
    """Recorded SMI outputs (file name → text, see COMMANDS) → JSON-able facts."""
    topo: dict[str, Any] = {"weight": {}, "hops": {}, "link_type": {}, "bandwidth_mbps": {}, "numa_node": {}}
    topo_bdf: dict[int, str] = {}
    used = []
    if "rocm-smi-showtopo.txt" in outputs:
        topo.update({k: v for k, v in parse_showtopo(outputs["rocm-smi-showtopo.txt"]).items() if v})
        used.append("rocm-smi --showtopo")
    if "amd-smi-topology.json" in outputs:
        amd = parse_amdsmi_topology_json(outputs["amd-smi-topology.json"])
        for key in ("weight", "hops", "link_type", "bandwidth_mbps"):
            if amd[key]:
                topo[key] = {**topo.get(key, {}), **amd[key]}
        topo_bdf = amd["bdf"]
        used.append("amd-smi topology --json")
    if not used:
        raise BackendUnavailable("no rocm-smi --showtopo or amd-smi topology --json output to read")
    bus = {**topo_bdf, **parse_gpu_lines(outputs.get("rocm-smi-showbus.txt", ""), "PCI Bus")}
    names = parse_gpu_lines(outputs.get("rocm-smi-showproductname.txt", ""), "Card Series")
    uuids: dict[int, str] = {}
    if "amd-smi-list.json" in outputs:
        try:
            listed = json.loads(outputs["amd-smi-list.json"])
        except json.JSONDecodeError as exc:
            raise UserError(f"amd-smi list --json output is not JSON: {exc.msg}") from None
        for item in listed if isinstance(listed, list) else []:
            if isinstance(item, dict) and "gpu" in item:
                if item.get("bdf"):
                    bus.setdefault(int(item["gpu"]), str(item["bdf"]))
                if item.get("uuid"):
                    uuids[int(item["gpu"])] = str(item["uuid"])
    indices = sorted({i for cells in (topo["weight"], topo["link_type"], topo["hops"]) for pair in cells for i in pair}
                     | set(topo["numa_node"]) | set(bus))
    if not indices:
        raise UserError(f"{' and '.join(used)} output names no GPU",
                        hint="record it with linkscope topo export --raw DIR and attach it to a bug report")
    gpus = [{"index": i, "pci_bus_id": normalise_bdf(bus[i]) if i in bus else None, "name": names.get(i),
             "uuid": uuids.get(i), "numa_node": topo["numa_node"].get(i)} for i in indices]
    pairs = []
    for a in indices:
        for b in indices:
            if a < b:
                bw = topo["bandwidth_mbps"].get((a, b)) or topo["bandwidth_mbps"].get((b, a))
                pairs.append({"a": a, "b": b, "link_type": topo["link_type"].get((a, b)) or topo["link_type"].get((b, a)),
                              "weight": topo["weight"].get((a, b), topo["weight"].get((b, a))),
                              "hops": topo["hops"].get((a, b), topo["hops"].get((b, a))),
                              "bandwidth_mbps": list(bw) if bw else None})
    return {"format": "linkscope.rocm-facts", "version": 1, "from": used, "gpus": gpus, "pairs": pairs}


def hip_ordinals(records: list[Mapping[str, Any]], kfd_gpus: Any = None) -> tuple[list[int | None], str]:
    """Each GPU's HIP ordinal with no visibility variable set, and a note saying where it came from:
    the KFD topology of this node when it was read (``hipdevices.read_kfd_gpus``, matched by PCI
    address: the order HIP enumerates), else amdsmi 7.x ``hip_id``, else ascending PCI address (the
    usual KFD order, assumed). Never the SMI index: amdsmi and rocm-smi number GPUs their own way."""
    from .hipdevices import ordinals_by_bus

    buses = [g.get("pci_bus_id") for g in records]
    if isinstance(kfd_gpus, list) and kfd_gpus:
        order = [normalise_bdf(str(k.get("pci_bus_id"))) if k.get("pci_bus_id") else None for k in kfd_gpus]
        found = [order.index(normalise_bdf(b)) if b and normalise_bdf(b) in order else None for b in buses]
        ids = [g.get("hip_id") for g in records]
        if all(isinstance(i, int) for i in ids) and ids != found:
            return found, (f"amdsmi hip_id {ids} differs from this node's KFD order by PCI address {found}; "
                           "the KFD order is what HIP enumerates and is used")
        return found, ""
    stated = [g["hip_id"] for g in records if isinstance(g.get("hip_id"), int)]
    if stated and len(stated) == len(records):
        return list(stated), ""
    if any(buses):
        return ordinals_by_bus(buses), ("HIP ordinals assumed to follow ascending PCI address (KFD order; this "
                                        "amdsmi/rocm-smi does not state them): launch checks them against the "
                                        "node's KFD topology")
    return [None] * len(records), ""


def facts_to_topology(facts: Mapping[str, Any], sysfs_facts: Mapping[str, Any] | None = None,
                      *, name: str = "rocm") -> Topology:
    """GCDs as GPUs, direct xGMI pairs as bonded xgmi links; pure, from parsed facts."""
    notes: list[str] = []
    records = sorted(facts.get("gpus", []), key=lambda g: g["index"])
    pos_of = {g["index"]: pos for pos, g in enumerate(records)}
    gpus = []
    host_links: dict[str, Link] = {}
    ordinals, how = hip_ordinals(records, facts.get("kfd_gpus"))
    if how:
        notes.append(how)
    for pos, g in enumerate(records):
        product = g.get("name") or "AMD GPU"
        numa = g.get("numa_node")
        attributes: dict[str, Any] = {"smi_index": g["index"]}
        if g.get("hip_uuid"):
            attributes["hip_uuid"] = g["hip_uuid"]
        hip = ordinals[pos]
        gpus.append(Device(id=f"gpu{pos}", kind=DeviceKind.GPU, name=product, index=pos, vendor="amd",
                           uuid=g.get("uuid"), pci_bus_id=g.get("pci_bus_id"),
                           numa_node=numa if isinstance(numa, int) and numa >= 0 else None,
                           ordinals={} if hip is None else {"amd": hip}, attributes=attributes))
        if "MI250" in product.upper():
            host_links[f"gpu{pos}"] = Link(f"gpu{pos}", "", LinkKind.PCIE, 1, MI250X_CPU_GCD_GB_PER_S,
                                           provenance=Provenance.DATASHEET, generation="Infinity Fabric CPU-GCD",
                                           source="OLCF Frontier user guide: 36 GB/s per direction CPU-GCD")
    xgmi = [p for p in facts.get("pairs", []) if p.get("link_type") == "XGMI"]
    have_bw = any(p.get("bandwidth_mbps") for p in xgmi)
    weights = [p["weight"] for p in xgmi if isinstance(p.get("weight"), int) and p["weight"] > 0]
    direct_weight = min(weights) if weights else None
    links: list[Link] = []
    unknown_count = False
    rate_from_os = bool(facts.get("xgmi_rate_from_min_bandwidth"))
    for p in xgmi:
        a, b = pos_of.get(p["a"]), pos_of.get(p["b"])
        if a is None or b is None:
            continue
        bw = p.get("bandwidth_mbps")
        if isinstance(p.get("link_count"), int):  # amdsmi link metrics: links to this peer, counted
            if p["link_count"] < 1:
                continue
            count = p["link_count"]
        elif have_bw:
            if not bw or bw[1] <= 0:
                continue  # indirect peer: max bandwidth 0
            lo, hi = bw
            count = max(1, round(hi / lo)) if lo > 0 else max(1, round(hi / (XGMI_MI200_GB_PER_S * 1000)))
        elif direct_weight is not None:
            if p.get("weight") != direct_weight:
                continue
            count, unknown_count = 1, True
        else:
            count, unknown_count = 1, True
        if rate_from_os and bw and bw[0] > 0:
            counted = p.get("link_count_from") or ("max/min bandwidth" if have_bw else "weight (1 assumed)")
            links.append(Link(f"gpu{a}", f"gpu{b}", LinkKind.XGMI, count, bw[0] / 1000, provenance=Provenance.OS,
                              source=f"{XGMI_OS_SOURCE}; link count from {counted}", generation="xGMI (Infinity Fabric)"))
            continue
        links.append(Link(f"gpu{a}", f"gpu{b}", LinkKind.XGMI, count, XGMI_MI200_GB_PER_S,
                          provenance=Provenance.DATASHEET, source=XGMI_SOURCE, generation="xGMI (Infinity Fabric)"))
    if unknown_count:
        notes.append("xGMI link counts are not in rocm-smi output: direct pairs (smallest xGMI weight) "
                     "assumed to have 1 link; record amd-smi topology --json for counts")
    if any(l.provenance is Provenance.DATASHEET for l in links):
        notes.append(f"xGMI rate {XGMI_MI200_GB_PER_S:g} GB/s per link per direction is a datasheet value, not measured")
    if "amdsmi" not in facts.get("from", []):
        notes.append("rocm-smi/amd-smi hops is 1 for every xGMI pair; routes here follow the direct links only")
    notes.extend(str(n) for n in facts.get("notes", []))
    for g in records:  # a host link the backend measured (amdsmi PCIe info) wins over the datasheet guess
        pcie = g.get("pcie") or {}
        pos = pos_of[g["index"]]
        if pcie.get("speed_gt_per_s") and pcie.get("width") and f"gpu{pos}" not in host_links:
            host_links[f"gpu{pos}"] = Link(f"gpu{pos}", "", LinkKind.PCIE, 1,
                                           pcie_gb_per_s(pcie["speed_gt_per_s"], pcie["width"]),
                                           provenance=Provenance.OS, source="amdsmi_get_pcie_info pcie_metric",
                                           generation=pcie_generation(pcie["speed_gt_per_s"], pcie["width"]))
    part = GpuPart(gpus=tuple(gpus), links=tuple(links), host_links=host_links, notes=tuple(notes),
                   sources=(f"{' + '.join(facts.get('from', []))}: GCDs, link type, weight, NUMA node",
                            XGMI_SOURCE))
    product = gpus[0].name if gpus else "AMD GPU"
    backend = "amdsmi" if "amdsmi" in facts.get("from", []) else "rocm"
    return assemble(name, part, sysfs_facts, source=f"{backend}+sysfs" if sysfs_facts is not None else backend,
                    description=f"{len(gpus)} × {product} (xGMI), from {'amdsmi' if backend == 'amdsmi' else 'ROCm SMI output'}")


def discover(sysfs_facts: Mapping[str, Any] | None = None) -> Topology:
    """Live: run the SMI tools now."""
    outputs = read_outputs()
    return facts_to_topology(parse_outputs(outputs), sysfs_facts, name=socket.gethostname())
