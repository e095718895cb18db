"""Synthetic topologies from a short spec string (hwloc's ``--input "node:2 2"`` idea).

Specs:

* ``nvswitch:N[:LINKS[:GBPS]]`` — N GPUs on one NVSwitch plane, LINKS NVLinks each (default 18 at
  26.562 GB/s per link per direction, H100/H200 SXM), one CPU, PCIe Gen5 x16 to each GPU.
* ``pcie:SxG`` — S sockets joined by UPI, G GPUs behind one PCIe Gen4 x16 switch per socket, one NIC
  (200 Gb/s) on each switch.
* ``fattree:NODESxGPUS[:RADIX]`` — a multi-node cluster for model planning (see ``model``):
  NODES nodes of GPUS GPUs on an NVSwitch, one 400 Gb/s NIC per GPU, leaf/spine switches.

>>> synthetic_topology("pcie:2x4").gpu_count
8
"""
from __future__ import annotations

import re
from typing import Callable

from ..errors import UserError
from .model import Device, DeviceKind, Link, LinkKind, Provenance, Topology

PCIE_GEN4_X16_GB_PER_S = 31.5  # 16 GT/s x 16 lanes x 128/130 / 8 (PCI-SIG; hwloc reports 31.51)
PCIE_GEN5_X16_GB_PER_S = 63.0  # 32 GT/s x 16 x 128/130 / 8
NVLINK4_GB_PER_S = 26.562  # per link per direction as NVML/nvidia-smi report on H100/H200
UPI_GB_PER_S = 62.4  # 3 UPI links x 20.8 GB/s (16 GT/s x 2 bytes x 0.65 payload, Sapphire Rapids class)

_SYN = Provenance.SYNTHETIC


def _nvswitch(args: list[str]) -> Topology:
    if not args or not args[0].isdigit() or int(args[0]) < 1:
        raise UserError("nvswitch spec needs a GPU count: nvswitch:N[:LINKS[:GBPS]]")
    n = int(args[0])
    links_per_gpu = int(args[1]) if len(args) > 1 else 18
    per_link = float(args[2]) if len(args) > 2 else NVLINK4_GB_PER_S
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
    match = re.fullmatch(r"(\d+)x(\d+)", args[0] if args else "")
    if not match:
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


MAX_SYNTHETIC_GPUS = 1024

_BUILDERS: dict[str, Callable[[list[str]], Topology]] = {"nvswitch": _nvswitch, "pcie": _pcie}


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
    for number in re.findall(r"\d+", rest.split(":")[0]):  # nvswitch:N[:..], pcie:SxG, fattree:NxG: the GPUs
        gpus *= int(number)
        if gpus > MAX_SYNTHETIC_GPUS:
            raise UserError(f"synthetic topology {spec!r} has more than {MAX_SYNTHETIC_GPUS} GPUs",
                            hint="pair and route tables grow with the square of the GPU count")
    args = rest.split(":") if rest else []
    return builder(args)
