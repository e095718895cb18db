"""Synthetic topologies from a short spec string (hwloc's ``--input "node:2 2"`` idea).

Every synthetic GPU is a model of the GPU facts table (``topology.gpufacts``): ``gpu_model`` (the CLI's
``--gpu-model NAME``) names it, else the kind's default below; its links, PCIe generation and memory
come from that row unless the spec states them.

Specs:

* ``nvswitch:N[:LINKS[:GBPS]]`` — N GPUs on one NVSwitch plane, LINKS NVLinks each at GBPS per link per
  direction (default: the model's NVLink facts; H100 SXM: 18 x 26.562), one CPU, each GPU on the
  model's host link (PCIe, or NVLink-C2C for GH200 / GB200).
* ``pcie:SxG[:genN][:bridged]`` — S sockets joined by UPI, G GPUs behind one PCIe switch per socket
  (genN: the slots' and switches' PCIe generation, default 4), one NIC (200 Gb/s) on each switch; a GPU
  link trains at the lower of the slot's and the GPU model's generation. Default model: the PCIe card
  of that generation (gen3 V100 PCIe, gen4 A100 80GB PCIe, gen5 H100 PCIe). ``bridged``: GPUs 0-1,
  2-3, ... of a switch joined by the model's NVLink bridge (A100 / H100 PCIe: NV12).
* ``xgmi:N`` — N GPUs, every pair joined by one xGMI (Infinity Fabric) link of the model (default
  MI300X: 7 links of 64 GB/s per direction, so N <= 8), one CPU, each GPU on the model's PCIe.
* ``fattree:NODESxGPUS[:RADIX]`` — a multi-node cluster for model planning (see ``model``):
  NODES nodes of GPUS GPUs on an NVSwitch, one 400 Gb/s NIC per GPU, leaf/spine switches.
* ``cluster:PRESET:NODES[:rails|single]`` — NODES copies of a preset node (its NICs in their PCIe
  places: two HCAs on different switches on a 4 x V100 node, 8 rails on a DGX) joined by InfiniBand
  switches, one per rail joined by a spine (default) or one for all. Its GPUs are the preset's.

>>> synthetic_topology("pcie:2x4").gpu_count
8
>>> synthetic_topology("nvswitch:2", gpu_model="H200").gpus[0].name
'NVIDIA H200 SXM 141GB'
"""
from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import UserError
from .gpufacts import GPU_FACTS, GpuFacts, gpu_facts, gpu_facts_by_key
from .model import MAX_LINK_COUNT, MAX_LINK_GB_PER_S, Device, DeviceKind, Link, LinkKind, Provenance, Topology
from .pcie import GT_OF_GEN, pcie_gen_gb_per_s, pcie_generation

PCIE_GEN4_X16_GB_PER_S = 31.5  # 16 GT/s x 16 lanes x 128/130 / 8 (PCI-SIG; hwloc reports 31.51)
PCIE_GEN5_X16_GB_PER_S = 63.0  # 32 GT/s x 16 x 128/130 / 8
NVLINK4_GB_PER_S = 26.562  # per link per direction as NVML/nvidia-smi report on H100/H200
UPI_GB_PER_S = 62.4  # 3 UPI links x 20.8 GB/s (16 GT/s x 2 bytes x 0.65 payload, Sapphire Rapids class)

_SYN = Provenance.SYNTHETIC

_ASCII_INT = re.compile(r"[0-9]{1,12}")  # str.isdigit and \d accept '²' and other scripts' digits
_ASCII_NUMBER = re.compile(r"[0-9]{1,12}(\.[0-9]{1,12})?")


def spec_int(text: str, what: str, usage: str, *, low: int = 1, high: int | None = None) -> int:
    """One whole number of a spec, ASCII digits only, in ``low .. high``; UserError naming ``what``
    and the spec's ``usage`` otherwise."""
    if not _ASCII_INT.fullmatch(text):
        raise UserError(f"{what} must be a whole number written in ASCII digits, got {text[:40]!r}", hint=usage)
    value = int(text)
    if value < low or (high is not None and value > high):
        bound = f"{low} .. {high}" if high is not None else f"at least {low}"
        raise UserError(f"{what} must be {bound}, got {value}", hint=usage)
    return value


def spec_number(text: str, what: str, usage: str, *, high: float) -> float:
    """One positive decimal number of a spec (``26.5``), ASCII digits only, at most ``high``."""
    if not _ASCII_NUMBER.fullmatch(text):
        raise UserError(f"{what} must be a number written in ASCII digits (e.g. 26.5), got {text[:40]!r}", hint=usage)
    value = float(text)
    if not 0 < value <= high:
        raise UserError(f"{what} must be above 0 and at most {high:g}, got {text}", hint=usage)
    return value


_NVSWITCH_USAGE = "nvswitch:N[:LINKS[:GBPS]], e.g. nvswitch:8 or nvswitch:8:18:26.562"
_FACTS_NOTE = "GPU facts table (linkscope.topology.gpufacts)"


def _gpu(index: int, facts: GpuFacts, numa: int = 0) -> Device:
    """A synthetic GPU of model ``facts`` (its name resolves back to the same facts row)."""
    return Device(id=f"gpu{index}", kind=DeviceKind.GPU, name=facts.name, index=index, vendor=facts.vendor,
                  numa_node=numa, memory_bytes=facts.memory_bytes,
                  attributes={"source": f"synthetic GPU: {facts.name} ({_FACTS_NOTE}, row {facts.key})"})


def _host_link(gpu_id: str, host_id: str, facts: GpuFacts, *, slot_gen: int | None = None) -> Link:
    """The GPU's host link: PCIe at the lower of the slot's and the model's generation, or NVLink-C2C
    (Grace Hopper / Grace Blackwell: the GPU has no PCIe link to its CPU)."""
    if facts.pcie_generation is None and facts.c2c_gb_per_s:
        return Link(gpu_id, host_id, LinkKind.NVLINK, 1, facts.c2c_gb_per_s, provenance=_SYN, latency_us=0.5,
                    generation="NVLink-C2C", source=f"{facts.name} NVLink-C2C per direction: {facts.source('c2c_gb_per_s')}")
    gen = facts.pcie_generation or slot_gen or 4
    if slot_gen is not None:
        gen = min(gen, slot_gen)
    lanes = facts.pcie_lanes or 16
    rate = pcie_gen_gb_per_s(gen, lanes) or PCIE_GEN4_X16_GB_PER_S
    return Link(gpu_id, host_id, LinkKind.PCIE, 1, rate, provenance=_SYN, latency_us=0.5,
                generation=pcie_generation(GT_OF_GEN[gen], lanes),
                source=f"{facts.name} PCIe Gen{facts.pcie_generation} x{lanes}"
                       f"{f' in a Gen{slot_gen} slot' if slot_gen is not None else ''}: {facts.source('pcie_generation')}")


def _nvswitch(args: list[str], facts: GpuFacts) -> Topology:
    if not args or not args[0]:
        raise UserError("nvswitch spec needs a GPU count: nvswitch:N[:LINKS[:GBPS]]")
    if len(args) > 3:
        raise UserError(f"nvswitch spec has {len(args)} fields; expected at most 3", hint=_NVSWITCH_USAGE)
    n = spec_int(args[0], "nvswitch GPU count N", _NVSWITCH_USAGE)
    if len(args) < 3 and (facts.nvlink_links is None or facts.nvlink_gb_per_s_per_link is None):
        raise UserError(f"GPU model {facts.name!r} has no NVLink in the facts table",
                        hint="give LINKS and GBPS (nvswitch:N:LINKS:GBPS), or use pcie:SxG for PCIe-only GPUs")
    links_per_gpu = (spec_int(args[1], "nvswitch LINKS", _NVSWITCH_USAGE, high=MAX_LINK_COUNT) if len(args) > 1
                     else int(facts.nvlink_links or 0))
    per_link = (spec_number(args[2], "nvswitch GBPS", _NVSWITCH_USAGE, high=MAX_LINK_GB_PER_S) if len(args) > 2
                else float(facts.nvlink_gb_per_s_per_link or 0.0))
    generation = f"NVLink{facts.nvlink_generation}" if facts.nvlink_generation and len(args) < 3 else None
    devices = [
        Device(id="cpu0", kind=DeviceKind.CPU, name="CPU", numa_node=0, socket=0, cores=tuple(range(32))),
        Device(id="nvswitch", kind=DeviceKind.NVSWITCH, name="NVSwitch plane"),
    ]
    links = []
    for i in range(n):
        devices.append(_gpu(i, facts))
        links.append(Link(f"gpu{i}", "nvswitch", LinkKind.NVLINK, links_per_gpu, per_link, provenance=_SYN, latency_us=0.5,
                          generation=generation, source=f"{facts.name} NVLink: {facts.source('nvlink_gb_per_s_per_link')}"
                          if len(args) < 3 else "spec"))
        links.append(_host_link(f"gpu{i}", "cpu0", facts))
    spec = ":".join(args)
    return Topology(name=f"nvswitch:{spec}", devices=tuple(devices), links=tuple(links),
                    source=f"synthetic:nvswitch:{spec}",
                    description=f"{n} x {facts.name} on one NVSwitch plane, NV{links_per_gpu} each (synthetic)")


_PCIE_USAGE = "pcie:SxG[:genN][:bridged] (S sockets, G GPUs behind one switch per socket), e.g. pcie:2x4 or pcie:2x4:gen5"
PCIE_DEFAULT_MODEL = {3: "v100-pcie", 4: "a100-pcie-80gb", 5: "h100-pcie"}
"""The facts row of a ``pcie`` spec's GPUs when no model is named: the PCIe card of that generation."""


def _pcie(args: list[str], facts: GpuFacts | None) -> Topology:
    match = re.fullmatch(r"([0-9]{1,6})x([0-9]{1,6})", args[0] if args else "")
    if not match or len(args) > 3:
        raise UserError(f"pcie spec is {_PCIE_USAGE}")
    sockets, per = int(match.group(1)), int(match.group(2))
    if sockets < 1 or per < 1:
        raise UserError("pcie spec needs at least one socket and one GPU per socket", hint=_PCIE_USAGE)
    gen, bridged = 4, False
    for extra in args[1:]:
        found = re.fullmatch(r"gen([0-9]{1,2})", extra.lower())
        if found and int(found.group(1)) in GT_OF_GEN:
            gen = int(found.group(1))
        elif extra.lower() == "bridged" and not bridged:
            bridged = True
        else:
            raise UserError(f"pcie spec field {extra[:40]!r} is neither genN (N = {min(GT_OF_GEN)}..{max(GT_OF_GEN)}) "
                            "nor bridged", hint=_PCIE_USAGE)
    if facts is None:
        key = PCIE_DEFAULT_MODEL.get(gen)
        if key is None:
            raise UserError(f"no default GPU model for a PCIe Gen{gen} spec", hint="name one with --gpu-model NAME")
        facts = gpu_facts_by_key(key)
        assert facts is not None
    if bridged and (facts.nvlink_links is None or facts.nvlink_gb_per_s_per_link is None):
        raise UserError(f"GPU model {facts.name!r} has no NVLink bridge in the facts table",
                        hint="drop :bridged, or name a bridged model (--gpu-model A100-PCIE-40GB, H100 PCIe, H100 NVL, A40)")
    if bridged and per % 2:
        raise UserError(f"pcie:{args[0]}:bridged pairs GPUs behind each switch: G must be even, got {per}")
    slot = pcie_gen_gb_per_s(gen, 16) or PCIE_GEN4_X16_GB_PER_S
    slot_label = pcie_generation(GT_OF_GEN[gen], 16)
    devices, links = [], []
    index = 0
    for s in range(sockets):
        devices.append(Device(id=f"cpu{s}", kind=DeviceKind.CPU, name="CPU", numa_node=s, socket=s,
                              cores=tuple(range(s * 32, (s + 1) * 32)), memory_bw_gb_per_s=150.0))
        devices.append(Device(id=f"sw{s}", kind=DeviceKind.PCIE_SWITCH, name=f"PCIe Gen{gen} switch", numa_node=s))
        links.append(Link(f"sw{s}", f"cpu{s}", LinkKind.PCIE, 1, slot, provenance=_SYN, latency_us=0.5, generation=slot_label))
        devices.append(Device(id=f"nic{s}", kind=DeviceKind.NIC, name="NIC", device_name=f"mlx5_{s}",
                              numa_node=s, line_rate_gbit_per_s=200.0))
        links.append(Link(f"nic{s}", f"sw{s}", LinkKind.PCIE, 1, slot, provenance=_SYN, latency_us=0.5, generation=slot_label))
        for k in range(per):
            devices.append(_gpu(index, facts, numa=s))
            links.append(_host_link(f"gpu{index}", f"sw{s}", facts, slot_gen=gen))
            if bridged and k % 2:
                links.append(Link(f"gpu{index - 1}", f"gpu{index}", LinkKind.NVLINK, int(facts.nvlink_links or 0),
                                  float(facts.nvlink_gb_per_s_per_link or 0.0), provenance=_SYN, latency_us=0.3,
                                  generation=f"NVLink{facts.nvlink_generation}" if facts.nvlink_generation else None,
                                  source=f"{facts.name} NVLink bridge: {facts.source('nvlink_links')}"))
            index += 1
    for s in range(sockets - 1):
        links.append(Link(f"cpu{s}", f"cpu{s + 1}", LinkKind.UPI, 1, UPI_GB_PER_S, provenance=_SYN, latency_us=0.3))
    spec = ":".join(args)
    return Topology(name=f"pcie:{spec}", devices=tuple(devices), links=tuple(links), source=f"synthetic:pcie:{spec}",
                    description=f"{sockets} socket(s), {per} x {facts.name} behind one PCIe Gen{gen} switch each"
                                f"{', NVLink-bridged pairs' if bridged else ''} (synthetic)")


_XGMI_USAGE = "xgmi:N (N GPUs, every pair joined by one xGMI link), e.g. xgmi:8"


def _xgmi(args: list[str], facts: GpuFacts) -> Topology:
    if len(args) != 1:
        raise UserError(f"xgmi spec is {_XGMI_USAGE}")
    n = spec_int(args[0], "xgmi GPU count N", _XGMI_USAGE)
    if not facts.xgmi_links or not facts.xgmi_gb_per_s_per_link or facts.gcds_per_package > 1:
        raise UserError(f"GPU model {facts.name!r} has no per-GPU xGMI mesh in the facts table",
                        hint="name one with --gpu-model (MI300X, MI325X, MI210, MI100); MI250X: --preset mi250x-8gcd")
    if n - 1 > facts.xgmi_links:
        raise UserError(f"a full xGMI mesh of {n} x {facts.name} needs {n - 1} links per GPU; it has {facts.xgmi_links}",
                        hint=f"at most xgmi:{facts.xgmi_links + 1}")
    devices = [Device(id="cpu0", kind=DeviceKind.CPU, name="CPU", numa_node=0, socket=0, cores=tuple(range(32)))]
    links = []
    for i in range(n):
        devices.append(_gpu(i, facts))
        links.append(_host_link(f"gpu{i}", "cpu0", facts))
        for j in range(i):
            links.append(Link(f"gpu{j}", f"gpu{i}", LinkKind.XGMI, 1, float(facts.xgmi_gb_per_s_per_link), provenance=_SYN,
                              latency_us=0.5, generation="xGMI",
                              source=f"{facts.name} xGMI per link per direction: {facts.source('xgmi_gb_per_s_per_link')}"))
    return Topology(name=f"xgmi:{args[0]}", devices=tuple(devices), links=tuple(links), source=f"synthetic:xgmi:{args[0]}",
                    description=f"{n} x {facts.name}, every pair joined by one xGMI link (synthetic)")


NET_LINK_LATENCY_US = 0.6  # NIC <-> switch port, typical InfiniBand switch hop (order of magnitude) [L]


def _cluster(args: list[str], facts: GpuFacts | None) -> Topology:
    """``cluster:PRESET:NODES[:rails|single]``: NODES copies of a preset node joined by InfiniBand switches.

    Every NIC of a node keeps its PCIe place and name (``mlx5_1`` stays the far HCA of a GPU), so the
    NIC a transfer uses matters between nodes. ``rails`` (default): NIC k of every node on switch
    ``rail<k>`` (the rail-optimised wiring of DGX clusters), the rails joined by a non-blocking
    ``spine`` (a transfer between NICs of different rails takes two more switch hops);
    ``single``: all NICs on one switch.
    Storage NICs (attribute role=storage) are left out of the network. Link rate = the NIC's line rate.
    """
    from .presets import load_preset, preset_names

    usage = "cluster:PRESET:NODES[:rails|single], e.g. cluster:v100-4-nvlink-ib:2"
    if facts is not None:
        raise UserError("--gpu-model does not apply to cluster specs: the preset names its GPUs", hint=usage)
    if len(args) < 2 or len(args) > 3:
        raise UserError(f"cluster spec is {usage}", hint=f"presets: {', '.join(preset_names())}")
    nodes = spec_int(args[1], "cluster NODES", usage, high=MAX_CLUSTER_GPUS)
    base = load_preset(args[0])
    if nodes * base.gpu_count > MAX_CLUSTER_GPUS:
        raise UserError(f"cluster {':'.join(args)!r} has more than {MAX_CLUSTER_GPUS} GPUs")
    wiring = args[2] if len(args) > 2 else "rails"
    if wiring not in ("rails", "single"):
        raise UserError(f"cluster wiring must be rails or single, got {wiring!r}")
    nics = [d for d in base.devices if d.kind is DeviceKind.NIC and (d.attributes or {}).get("role") != "storage"]
    if not nics:
        raise UserError(f"preset {args[0]!r} has no NIC to join nodes with")
    from dataclasses import replace as dc_replace

    per = base.gpu_count
    devices: list[Device] = []
    links: list[Link] = []
    for n in range(nodes):
        for d in base.devices:
            devices.append(dc_replace(d, id=f"n{n}.{d.id}", index=None if d.index is None else n * per + d.index,
                                      nvml_index=d.nvml_index))
        for link in base.links:
            links.append(dc_replace(link, a=f"n{n}.{link.a}", b=f"n{n}.{link.b}"))
    switches = [f"rail{k}" for k in range(len(nics))] if wiring == "rails" else ["ibswitch"]
    for sw in switches:
        devices.append(Device(id=sw, kind=DeviceKind.NETWORK_SWITCH, name="InfiniBand switch"))
    for n in range(nodes):
        for k, nic in enumerate(nics):
            rate = (nic.line_rate_gbit_per_s or 100.0) / 8.0
            links.append(Link(f"n{n}.{nic.id}", switches[k if wiring == "rails" else 0], LinkKind.NETWORK, 1, rate,
                              latency_us=NET_LINK_LATENCY_US, provenance=_SYN,
                              source=f"NIC line rate {nic.line_rate_gbit_per_s or 100.0:g} Gb/s / 8 per direction",
                              generation="InfiniBand"))
    if len(switches) > 1:  # rail-optimised fabrics join the rails' leaves through spines: one non-blocking spine
        devices.append(Device(id="spine", kind=DeviceKind.NETWORK_SWITCH, name="InfiniBand spine switch"))
        for k, (sw, nic) in enumerate(zip(switches, nics)):
            rate = (nic.line_rate_gbit_per_s or 100.0) / 8.0
            # as bonded links (nodes x the NIC's rate in all: the same capacity), at most MAX_LINK_COUNT of them:
            # one link of nodes x rate exceeds any physical link, and the topology check refuses it from about
            # 2,000 nodes of 400 Gb/s NICs
            bonds = min(nodes, MAX_LINK_COUNT)
            links.append(Link(sw, "spine", LinkKind.NETWORK, bonds, nodes * rate / bonds, latency_us=NET_LINK_LATENCY_US,
                              provenance=_SYN, generation="InfiniBand",
                              source=f"rail {k} to spine: {nodes} x the rail's NIC rate (non-blocking, as rail-optimised "
                                     "fat trees are built)"))
    spec = ":".join(args)
    return Topology(name=f"cluster:{spec}", devices=tuple(devices), links=tuple(links), source=f"synthetic:cluster:{spec}",
                    description=f"{nodes} x {base.name} ({base.gpu_count} GPUs and {len(nics)} NIC(s) each, PCIe places "
                                f"kept), {'one switch per NIC rail, rails joined by a spine' if wiring == 'rails' else 'one switch'} "
                                "(synthetic)",
                    sources=base.sources, model_params=dict(base.model_params or {}),
                    peer_access=dc_replace(base.peer_access, denied_pairs=tuple(
                        (n * per + a, n * per + b) for n in range(nodes) for a, b in base.peer_access.denied_pairs)),
                    run_choices=base.run_choices)


MAX_SYNTHETIC_GPUS = 1024  # one flat node (nvswitch, pcie): pair and route tables grow with the square
MAX_CLUSTER_GPUS = 32768  # fattree and cluster: routed hierarchically per node (model.routing), built in seconds

Builder = Callable[[list[str], "GpuFacts | None"], Topology]
"""``(spec fields, the named GPU model or None) -> Topology``."""
DEFAULT_GPU_MODEL = {"nvswitch": "h100-sxm", "xgmi": "mi300x", "fattree": "h100-sxm"}
"""Facts row of each kind's GPUs when no model is named (pcie: ``PCIE_DEFAULT_MODEL`` by generation)."""


def _with_default(builder: Callable[[list[str], GpuFacts], Topology], kind: str) -> Builder:
    def build(args: list[str], facts: GpuFacts | None) -> Topology:
        chosen = facts or gpu_facts_by_key(DEFAULT_GPU_MODEL[kind])
        assert chosen is not None
        return builder(args, chosen)
    return build


_BUILDERS: dict[str, Builder] = {"nvswitch": _with_default(_nvswitch, "nvswitch"), "pcie": _pcie,
                                 "xgmi": _with_default(_xgmi, "xgmi"), "cluster": _cluster}


def register_builder(kind: str, builder: Callable[[list[str], GpuFacts], Topology], default_model: str) -> None:
    """Add a spec kind (used at import by modules that define larger synthetic machines); the builder gets
    the named GPU model, else the facts row ``default_model``."""
    DEFAULT_GPU_MODEL[kind] = default_model
    _BUILDERS[kind] = _with_default(builder, kind)


def resolve_gpu_model(name: str) -> GpuFacts:
    """The facts row of ``--gpu-model NAME``; a UserError listing the known models otherwise."""
    found = gpu_facts(name)
    if found is None:
        raise UserError(f"unknown GPU model {name[:80]!r}: no facts for it",
                        hint="known models (name or key): " + ", ".join(f.key for f in GPU_FACTS))
    return found


def synthetic_topology(spec: str, gpu_model: str | None = None) -> Topology:
    """The topology of a synthetic ``spec``, its GPUs of model ``gpu_model`` (a facts-table name, key or PCI
    id; default: the kind's). An unknown model is a UserError, never a borrowed figure."""
    kind, _, rest = spec.partition(":")
    if kind == "fattree" and kind not in _BUILDERS:
        from . import fattree  # noqa: F401  (registers itself)
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise UserError(f"unknown synthetic topology {spec!r}", hint=f"valid kinds: {', '.join(sorted(set(_BUILDERS) | {'fattree'}))}")
    facts = resolve_gpu_model(gpu_model) if gpu_model is not None else None
    gpus = 1
    limit = MAX_CLUSTER_GPUS if kind == "fattree" else MAX_SYNTHETIC_GPUS
    field = rest.split(":")[0] if kind != "cluster" else ""  # cluster: the builder checks nodes x preset GPUs
    for number in re.findall(r"[0-9]+", field):  # nvswitch:N[:..], pcie:SxG, fattree:NxG: the GPUs
        gpus *= int(number)
        if gpus > limit:
            raise UserError(f"synthetic topology {spec!r} has more than {limit} GPUs",
                            hint="pair and route tables grow with the square of the GPU count" if limit == MAX_SYNTHETIC_GPUS
                            else "a larger cluster takes minutes to build")
    args = rest.split(":") if rest else []
    return builder(args, facts)
