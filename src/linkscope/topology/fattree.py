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
from .model import MAX_LINK_GB_PER_S, Device, DeviceKind, Link, LinkKind, Provenance, Topology, gc_paused, many

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
    with gc_paused():
        devices, links, n_leaf, n_spine = _build(nodes, per, radix, nic_gbit, nic_gb_per_s, facts)
        spec = ":".join(args)
        return Topology(
            name=f"fattree:{spec}", devices=tuple(devices), links=tuple(links), source=f"synthetic:fattree:{spec}",
            description=(f"{nodes} nodes x {per} GPUs (NVSwitch, one {nic_gbit:g} Gb/s NIC per GPU), two-level "
                         f"non-blocking fat tree: {n_leaf} leaves, {n_spine} spines (synthetic)"),
        )


def _build(nodes: int, per: int, radix: int, nic_gbit: float, nic_gb_per_s: float, facts: GpuFacts
           ) -> tuple[list[Device], list[Link], int, int]:
    """The devices and links in topology order, made in bulk (``model.many``: one kind of element at a time).

    Order (the model's edges and resources are numbered by it): per node its CPU, its NVSwitch plane, then per GPU
    the GPU, its PCIe switch and its NIC; then the spines, then the leaves. Links: per node and GPU its NVLink, GPU
    - switch, NIC - switch, switch - CPU; then per leaf its NICs' links and its links to every spine."""
    gpus_all = nodes * per
    node_of = [n for n in range(nodes) for _ in range(per)]
    slot_of = list(range(per)) * nodes
    gpu_ids = [f"n{n}.gpu{g}" for n, g in zip(node_of, slot_of)]
    sw_ids = [f"n{n}.pcie{g}" for n, g in zip(node_of, slot_of)]
    nic_ids = [f"n{n}.nic{g}" for n, g in zip(node_of, slot_of)]
    cpu_ids = [f"n{n}.cpu" for n in range(nodes)]
    nvs_ids = [f"n{n}.nvswitch" for n in range(nodes)]
    block = 2 + 3 * per  # devices of one node
    devices: list = [None] * (nodes * block)
    devices[0::block] = many(Device, {"id": cpu_ids}, kind=DeviceKind.CPU, name="CPU", numa_node=0, socket=0,
                             cores=tuple(range(64)), memory_bw_gb_per_s=300.0)
    devices[1::block] = many(Device, {"id": nvs_ids}, kind=DeviceKind.NVSWITCH, name="NVSwitch plane")
    gpus = many(Device, {"id": gpu_ids, "index": range(gpus_all)}, kind=DeviceKind.GPU, name=facts.name,
                vendor=facts.vendor, numa_node=0, memory_bytes=facts.memory_bytes)
    switches = many(Device, {"id": sw_ids}, kind=DeviceKind.PCIE_SWITCH, name="PCIe Gen5 switch", numa_node=0)
    nics = many(Device, {"id": nic_ids, "device_name": [f"n{n}.mlx5_{g}" for n, g in zip(node_of, slot_of)]},
                kind=DeviceKind.NIC, name="NIC", numa_node=0, line_rate_gbit_per_s=nic_gbit)
    for g in range(per):
        devices[2 + 3 * g::block] = gpus[g::per]
        devices[3 + 3 * g::block] = switches[g::per]
        devices[4 + 3 * g::block] = nics[g::per]
    pcie = {"kind": LinkKind.PCIE, "count": 1, "link_gb_per_s": synthetic.PCIE_GEN5_X16_GB_PER_S, "latency_us": 0.3,
            "provenance": _SYN}
    links: list = [None] * (4 * gpus_all)
    links[0::4] = many(Link, {"a": gpu_ids, "b": [nvs_ids[n] for n in node_of]}, kind=LinkKind.NVLINK,
                       count=facts.nvlink_links, link_gb_per_s=facts.nvlink_gb_per_s_per_link, latency_us=0.35,
                       provenance=_SYN, generation=f"NVLink{facts.nvlink_generation}")
    links[1::4] = many(Link, {"a": gpu_ids, "b": sw_ids}, **pcie)
    links[2::4] = many(Link, {"a": nic_ids, "b": sw_ids}, **pcie)
    links[3::4] = many(Link, {"a": sw_ids, "b": [cpu_ids[n] for n in node_of]}, **pcie)
    down = radix // 2
    n_leaf = math.ceil(gpus_all / down)
    n_spine = radix // 2 if n_leaf > 1 else 0
    spine_ids = [f"spine{s}" for s in range(n_spine)]
    leaf_ids = [f"leaf{leaf}" for leaf in range(n_leaf)]
    devices += many(Device, {"id": spine_ids}, kind=DeviceKind.NETWORK_SWITCH, name="spine switch")
    devices += many(Device, {"id": leaf_ids}, kind=DeviceKind.NETWORK_SWITCH, name="leaf switch")
    to_leaf = many(Link, {"a": nic_ids, "b": [leaf_ids[k // down] for k in range(gpus_all)]}, kind=LinkKind.NETWORK,
                   count=1, link_gb_per_s=nic_gb_per_s, latency_us=0.6, provenance=_SYN)
    to_spine = many(Link, {"a": [lid for lid in leaf_ids for _ in spine_ids], "b": spine_ids * n_leaf},
                    kind=LinkKind.NETWORK, count=1, link_gb_per_s=nic_gb_per_s, latency_us=0.3, provenance=_SYN)
    for leaf in range(n_leaf):
        links += to_leaf[leaf * down:(leaf + 1) * down]
        links += to_spine[leaf * n_spine:(leaf + 1) * n_spine]
    return devices, links, n_leaf, n_spine


synthetic.register_builder("fattree", synthetic_fattree, "h100-sxm")
