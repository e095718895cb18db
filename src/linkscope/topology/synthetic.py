"""Synthetic topologies from a short spec string (hwloc's ``--input "node:2 2"`` idea).

Specs:

* ``nvswitch:N[:LINKS[:GBPS]]`` — N GPUs on one NVSwitch plane, LINKS NVLinks each (default 18 at
  26.562 GB/s per link per direction, H100/H200 SXM), one CPU, PCIe Gen5 x16 to each GPU.
* ``pcie:SxG`` — S sockets joined by UPI, G GPUs behind one PCIe Gen4 x16 switch per socket, one NIC
  (200 Gb/s) on each switch.
* ``fattree:NODESxGPUS[:RADIX]`` — a multi-node cluster for model planning (see ``model``):
  NODES nodes of GPUS GPUs on an NVSwitch, one 400 Gb/s NIC per GPU, leaf/spine switches.
* ``cluster:PRESET:NODES[:rails|single]`` — NODES copies of a preset node (its NICs in their PCIe
  places: two HCAs on different switches on a 4 x V100 node, 8 rails on a DGX) joined by InfiniBand
  switches, one per rail joined by a spine (default) or one for all.

>>> synthetic_topology("pcie:2x4").gpu_count
8
"""
from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import UserError
from .model import MAX_LINK_COUNT, MAX_LINK_GB_PER_S, Device, DeviceKind, Link, LinkKind, Provenance, Topology

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


def _nvswitch(args: list[str]) -> Topology:
    if not args or not args[0]:
        raise UserError("nvswitch spec needs a GPU count: nvswitch:N[:LINKS[:GBPS]]")
    if len(args) > 3:
        raise UserError(f"nvswitch spec has {len(args)} fields; expected at most 3", hint=_NVSWITCH_USAGE)
    n = spec_int(args[0], "nvswitch GPU count N", _NVSWITCH_USAGE)
    links_per_gpu = spec_int(args[1], "nvswitch LINKS", _NVSWITCH_USAGE, high=MAX_LINK_COUNT) if len(args) > 1 else 18
    per_link = (spec_number(args[2], "nvswitch GBPS", _NVSWITCH_USAGE, high=MAX_LINK_GB_PER_S) if len(args) > 2
                else NVLINK4_GB_PER_S)
    devices = [
        Device(id="cpu0", kind=DeviceKind.CPU, name="CPU", numa_node=0, socket=0, cores=tuple(range(32))),
        Device(id="nvswitch", kind=DeviceKind.NVSWITCH, name="NVSwitch plane"),
    ]
    links = []
    for i in range(n):
        devices.append(Device(id=f"gpu{i}", kind=DeviceKind.GPU, name="GPU", index=i, vendor="nvidia", numa_node=0))
        links.append(Link(f"gpu{i}", "nvswitch", LinkKind.NVLINK, links_per_gpu, per_link, provenance=_SYN, latency_us=0.5))
        links.append(Link(f"gpu{i}", "cpu0", LinkKind.PCIE, 1, PCIE_GEN5_X16_GB_PER_S, provenance=_SYN, latency_us=0.5))
    return Topology(name=f"nvswitch:{':'.join(args)}", devices=tuple(devices), links=tuple(links),
                    source=f"synthetic:nvswitch:{':'.join(args)}",
                    description=f"{n} GPUs on one NVSwitch plane, NV{links_per_gpu} each (synthetic)")


def _pcie(args: list[str]) -> Topology:
    match = re.fullmatch(r"([0-9]+)x([0-9]+)", args[0] if args else "")
    if not match or len(args) > 1:
        raise UserError("pcie spec is pcie:SxG (S sockets, G GPUs behind one switch per socket), e.g. pcie:2x4")
    sockets, per = int(match.group(1)), int(match.group(2))
    if sockets < 1 or per < 1:
        raise UserError("pcie spec needs at least one socket and one GPU per socket")
    devices, links = [], []
    index = 0
    for s in range(sockets):
        devices.append(Device(id=f"cpu{s}", kind=DeviceKind.CPU, name="CPU", numa_node=s, socket=s,
                              cores=tuple(range(s * 32, (s + 1) * 32)), memory_bw_gb_per_s=150.0))
        devices.append(Device(id=f"sw{s}", kind=DeviceKind.PCIE_SWITCH, name="PCIe Gen4 switch", numa_node=s))
        links.append(Link(f"sw{s}", f"cpu{s}", LinkKind.PCIE, 1, PCIE_GEN4_X16_GB_PER_S, provenance=_SYN, latency_us=0.5))
        devices.append(Device(id=f"nic{s}", kind=DeviceKind.NIC, name="NIC", device_name=f"mlx5_{s}",
                              numa_node=s, line_rate_gbit_per_s=200.0))
        links.append(Link(f"nic{s}", f"sw{s}", LinkKind.PCIE, 1, PCIE_GEN4_X16_GB_PER_S, provenance=_SYN, latency_us=0.5))
        for _ in range(per):
            devices.append(Device(id=f"gpu{index}", kind=DeviceKind.GPU, name="GPU", index=index, numa_node=s))
            links.append(Link(f"gpu{index}", f"sw{s}", LinkKind.PCIE, 1, PCIE_GEN4_X16_GB_PER_S, provenance=_SYN, latency_us=0.5))
            index += 1
    for s in range(sockets - 1):
        links.append(Link(f"cpu{s}", f"cpu{s + 1}", LinkKind.UPI, 1, UPI_GB_PER_S, provenance=_SYN, latency_us=0.3))
    return Topology(name=f"pcie:{args[0]}", devices=tuple(devices), links=tuple(links), source=f"synthetic:pcie:{args[0]}",
                    description=f"{sockets} socket(s), {per} GPUs behind one PCIe Gen4 switch each (synthetic)")


NET_LINK_LATENCY_US = 0.6  # NIC <-> switch port, typical InfiniBand switch hop (order of magnitude) [L]


def _cluster(args: list[str]) -> Topology:
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
                                      cuda_ordinal=d.cuda_ordinal, nvml_index=d.nvml_index))
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
            links.append(Link(sw, "spine", LinkKind.NETWORK, 1, nodes * rate, latency_us=NET_LINK_LATENCY_US,
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

_BUILDERS: dict[str, Callable[[list[str]], Topology]] = {"nvswitch": _nvswitch, "pcie": _pcie, "cluster": _cluster}


def register_builder(kind: str, builder: Callable[[list[str]], Topology]) -> None:
    """Add a spec kind (used at import by modules that define larger synthetic machines)."""
    _BUILDERS[kind] = builder


def synthetic_topology(spec: str) -> Topology:
    kind, _, rest = spec.partition(":")
    if kind == "fattree" and kind not in _BUILDERS:
        from . import fattree  # noqa: F401  (registers itself)
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise UserError(f"unknown synthetic topology {spec!r}", hint=f"valid kinds: {', '.join(sorted(set(_BUILDERS) | {'fattree'}))}")
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
    return builder(args)
