"""``fattree:NODESxGPUS[:RADIX[:NIC_GBIT]]``: a synthetic multi-node cluster for model planning.

Each node: one CPU, GPUS GPUs on one NVSwitch plane (the GPU model's NVLinks; default H100 SXM, NV18 x 26.562 GB/s),
each GPU with its own 400 Gb/s NIC behind one PCIe Gen5 switch (GPU and NIC share it, as on
DGX H100), the switches under the CPU. The network is a two-level folded Clos (leaf/spine) of
switches with RADIX ports: RADIX/2 NICs per leaf, RADIX/2 spines, one link from every leaf to every
spine, so the tree is non-blocking (full bisection). Spines are assumed to have as many ports as
there are leaves (the builder does not enforce the switch radix on spines).

>>> t = synthetic_fattree(["4x8", "16"])
>>> (t.gpu_count, len(t.of_kind(DeviceKind.NETWORK_SWITCH)))
(32, 12)
"""
from __future__ import annotations

import math
import re

from ..errors import UserError
from . import synthetic
from .gpufacts import GpuFacts, gpu_facts_by_key
from .model import MAX_LINK_GB_PER_S, Device, DeviceKind, Link, LinkKind, Provenance, Topology

_SYN = Provenance.SYNTHETIC
DEFAULT_RADIX = 64
DEFAULT_NIC_GBIT = 400.0


def synthetic_fattree(args: list[str], facts: GpuFacts | None = None) -> Topology:
    """The fat tree of ``args``; its GPUs of model ``facts`` (default H100 SXM), NVLinks from the model's facts."""
    facts = facts or gpu_facts_by_key(synthetic.DEFAULT_GPU_MODEL["fattree"])
    assert facts is not None
    if facts.nvlink_links is None or facts.nvlink_gb_per_s_per_link is None:
        raise UserError(f"GPU model {facts.name!r} has no NVLink in the facts table: a fattree node is an NVSwitch plane")
    usage = "fattree:NODESxGPUS[:RADIX[:NIC_GBIT]], e.g. fattree:512x8"
    match = re.fullmatch(r"([0-9]+)x([0-9]+)", args[0] if args else "")
    if not match or len(args) > 3:
        raise UserError(f"fattree spec is {usage}")
    nodes, per = int(match.group(1)), int(match.group(2))
    radix = synthetic.spec_int(args[1], "fattree RADIX", usage, low=2, high=4096) if len(args) > 1 else DEFAULT_RADIX
    nic_gbit = (synthetic.spec_number(args[2], "fattree NIC_GBIT", usage, high=8 * MAX_LINK_GB_PER_S) if len(args) > 2
                else DEFAULT_NIC_GBIT)
    if nodes < 1 or per < 1 or radix < 2 or radix % 2 or nic_gbit <= 0:
        raise UserError("fattree needs NODES >= 1, GPUS >= 1, an even RADIX >= 2 and NIC_GBIT > 0")
    nic_gb_per_s = nic_gbit / 8.0
    devices: list[Device] = []
    links: list[Link] = []
    gpu_index = 0
    nics: list[str] = []
    for n in range(nodes):
        cpu = f"n{n}.cpu"
        nvs = f"n{n}.nvswitch"
        devices.append(Device(id=cpu, kind=DeviceKind.CPU, name="CPU", numa_node=0, socket=0,
                              cores=tuple(range(64)), memory_bw_gb_per_s=300.0))
        devices.append(Device(id=nvs, kind=DeviceKind.NVSWITCH, name="NVSwitch plane"))
        for g in range(per):
            gid, sw, nic = f"n{n}.gpu{g}", f"n{n}.pcie{g}", f"n{n}.nic{g}"
            devices.append(Device(id=gid, kind=DeviceKind.GPU, name=facts.name, index=gpu_index, vendor=facts.vendor,
                                  numa_node=0, memory_bytes=facts.memory_bytes))
            devices.append(Device(id=sw, kind=DeviceKind.PCIE_SWITCH, name="PCIe Gen5 switch", numa_node=0))
            devices.append(Device(id=nic, kind=DeviceKind.NIC, name="NIC", device_name=f"n{n}.mlx5_{g}",
                                  numa_node=0, line_rate_gbit_per_s=nic_gbit))
            links.append(Link(gid, nvs, LinkKind.NVLINK, facts.nvlink_links, facts.nvlink_gb_per_s_per_link, latency_us=0.35,
                              provenance=_SYN, generation=f"NVLink{facts.nvlink_generation}"))
            links.append(Link(gid, sw, LinkKind.PCIE, 1, synthetic.PCIE_GEN5_X16_GB_PER_S, latency_us=0.3, provenance=_SYN))
            links.append(Link(nic, sw, LinkKind.PCIE, 1, synthetic.PCIE_GEN5_X16_GB_PER_S, latency_us=0.3, provenance=_SYN))
            links.append(Link(sw, cpu, LinkKind.PCIE, 1, synthetic.PCIE_GEN5_X16_GB_PER_S, latency_us=0.3, provenance=_SYN))
            nics.append(nic)
            gpu_index += 1
    down = radix // 2
    n_leaf = math.ceil(len(nics) / down)
    n_spine = radix // 2 if n_leaf > 1 else 0
    for s in range(n_spine):
        devices.append(Device(id=f"spine{s}", kind=DeviceKind.NETWORK_SWITCH, name="spine switch"))
    for leaf in range(n_leaf):
        lid = f"leaf{leaf}"
        devices.append(Device(id=lid, kind=DeviceKind.NETWORK_SWITCH, name="leaf switch"))
        for nic in nics[leaf * down:(leaf + 1) * down]:
            links.append(Link(nic, lid, LinkKind.NETWORK, 1, nic_gb_per_s, latency_us=0.6, provenance=_SYN))
        for s in range(n_spine):
            links.append(Link(lid, f"spine{s}", LinkKind.NETWORK, 1, nic_gb_per_s, latency_us=0.3, provenance=_SYN))
    spec = ":".join(args)
    return Topology(
        name=f"fattree:{spec}", devices=tuple(devices), links=tuple(links), source=f"synthetic:fattree:{spec}",
        description=(f"{nodes} nodes x {per} GPUs (NVSwitch, one {nic_gbit:g} Gb/s NIC per GPU), two-level "
                     f"non-blocking fat tree: {n_leaf} leaves, {n_spine} spines (synthetic)"),
    )


synthetic.register_builder("fattree", synthetic_fattree, "h100-sxm")
