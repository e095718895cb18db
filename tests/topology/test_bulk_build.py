"""Devices and links made in bulk (``model.many``) are those ``__init__`` makes, and the fat tree built with
them is, element for element and in the same order, the one built a device and a link at a time (issue 41)."""
from __future__ import annotations

import dataclasses
import gc
import math

import pytest

from linkscope.topology import synthetic
from linkscope.topology.gpufacts import gpu_facts
from linkscope.topology.model import Device, DeviceKind, Link, LinkKind, Provenance, Topology, gc_paused, many
from linkscope.topology.synthetic import synthetic_topology


def _same(a: object, b: object) -> bool:
    """Equal field for field, with the same types (1 and 1.0 are equal, but not the same field)."""
    return a == b and all(type(getattr(a, f.name)) is type(getattr(b, f.name)) for f in dataclasses.fields(a))


def test_many_makes_what_init_makes():
    ids = [f"n{k}.gpu" for k in range(5)]
    made = many(Device, {"id": ids, "index": range(5)}, kind=DeviceKind.GPU, name="H", numa_node=1, attributes={"x": 1})
    for k, d in enumerate(made):
        assert _same(d, Device(id=ids[k], index=k, kind=DeviceKind.GPU, name="H", numa_node=1, attributes={"x": 1}))
    assert len({id(d.ordinals) for d in made}) == 5  # a fresh default per element, as __init__ gives
    links = many(Link, {"a": ids, "b": ids[::-1]}, kind=LinkKind.PCIE, link_gb_per_s=63.0, provenance=Provenance.SYNTHETIC)
    for k, link in enumerate(links):
        assert _same(link, Link(ids[k], ids[4 - k], LinkKind.PCIE, link_gb_per_s=63.0, provenance=Provenance.SYNTHETIC))
        assert hash(link) == hash(Link(ids[k], ids[4 - k], LinkKind.PCIE, link_gb_per_s=63.0, provenance=Provenance.SYNTHETIC))
    with pytest.raises(dataclasses.FrozenInstanceError):
        links[0].a = "x"  # still frozen
    assert many(Link, {"a": [], "b": []}, kind=LinkKind.PCIE) == []
    with pytest.raises(ValueError, match="unequal"):
        many(Link, {"a": ids, "b": ids[:2]}, kind=LinkKind.PCIE)
    with pytest.raises(TypeError):
        many(Link, {"a": ids, "b": ids}, kind=LinkKind.PCIE, colour="red")  # an unknown field, as __init__ says


def test_gc_paused_restores_the_collector():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # left off, as it was
    finally:
        gc.enable()


def _fattree_one_by_one(nodes: int, per: int, radix: int, nic_gbit: float, facts) -> tuple[tuple, tuple]:
    """The element-by-element build the bulk one replaced (topology/fattree.py up to main fb2b5f7): the oracle."""
    syn = Provenance.SYNTHETIC
    pcie = synthetic.PCIE_GEN5_X16_GB_PER_S
    devices, links, nics = [], [], []
    gpu_index = 0
    for n in range(nodes):
        cpu, nvs = f"n{n}.cpu", f"n{n}.nvswitch"
        devices.append(Device(id=cpu, kind=DeviceKind.CPU, name="CPU", numa_node=0, socket=0, cores=tuple(range(64)),
                              memory_bw_gb_per_s=300.0))
        devices.append(Device(id=nvs, kind=DeviceKind.NVSWITCH, name="NVSwitch plane"))
        for g in range(per):
            gid, sw, nic = f"n{n}.gpu{g}", f"n{n}.pcie{g}", f"n{n}.nic{g}"
            devices.append(Device(id=gid, kind=DeviceKind.GPU, name=facts.name, index=gpu_index, vendor=facts.vendor,
                                  numa_node=0, memory_bytes=facts.memory_bytes))
            devices.append(Device(id=sw, kind=DeviceKind.PCIE_SWITCH, name="PCIe Gen5 switch", numa_node=0))
            devices.append(Device(id=nic, kind=DeviceKind.NIC, name="NIC", device_name=f"n{n}.mlx5_{g}", numa_node=0,
                                  line_rate_gbit_per_s=nic_gbit))
            links.append(Link(gid, nvs, LinkKind.NVLINK, facts.nvlink_links, facts.nvlink_gb_per_s_per_link, latency_us=0.35,
                              provenance=syn, generation=f"NVLink{facts.nvlink_generation}"))
            for a, b in ((gid, sw), (nic, sw), (sw, cpu)):
                links.append(Link(a, b, LinkKind.PCIE, 1, pcie, latency_us=0.3, provenance=syn))
            nics.append(nic)
            gpu_index += 1
    down = radix // 2
    n_leaf = math.ceil(len(nics) / down)
    n_spine = radix // 2 if n_leaf > 1 else 0
    devices += [Device(id=f"spine{s}", kind=DeviceKind.NETWORK_SWITCH, name="spine switch") for s in range(n_spine)]
    for leaf in range(n_leaf):
        devices.append(Device(id=f"leaf{leaf}", kind=DeviceKind.NETWORK_SWITCH, name="leaf switch"))
        for nic in nics[leaf * down:(leaf + 1) * down]:
            links.append(Link(nic, f"leaf{leaf}", LinkKind.NETWORK, 1, nic_gbit / 8.0, latency_us=0.6, provenance=syn))
        for s in range(n_spine):
            links.append(Link(f"leaf{leaf}", f"spine{s}", LinkKind.NETWORK, 1, nic_gbit / 8.0, latency_us=0.3, provenance=syn))
    return tuple(devices), tuple(links)


@pytest.mark.parametrize(("spec", "model"), [("fattree:1x1", None), ("fattree:3x5:6", None), ("fattree:7x3:4", None),
                                             ("fattree:12x2:4:100", None), ("fattree:33x2:8", "H200"),
                                             ("fattree:64x8", None)])
def test_fattree_is_the_element_by_element_build(spec, model):
    topo = synthetic_topology(spec, gpu_model=model)
    fields = spec.split(":")[1:]
    nodes, per = (int(x) for x in fields[0].split("x"))
    radix = int(fields[1]) if len(fields) > 1 else 64
    nic_gbit = float(fields[2]) if len(fields) > 2 else 400.0
    facts = gpu_facts(model or "h100-sxm")
    devices, links = _fattree_one_by_one(nodes, per, radix, nic_gbit, facts)
    assert len(topo.devices) == len(devices) and len(topo.links) == len(links)
    assert all(_same(a, b) for a, b in zip(topo.devices, devices))
    assert all(_same(a, b) for a, b in zip(topo.links, links))
    assert topo == Topology(name=topo.name, devices=devices, links=links, source=topo.source, description=topo.description)
