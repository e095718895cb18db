"""``Topology.columns`` (the devices and links as arrays, read by the fabric model and ``node_labels``) holds
what the objects hold, element by element, and the model built on it gives the per-link answers it gave when
it read the objects one by one (issue 41: a build linear in the cluster)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from linkscope.model.graph import FabricGraph
from linkscope.model.params import ModelParams
from linkscope.topology.model import DeviceKind, LinkKind, Topology
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology

TOPOLOGIES = [lambda: load_preset("dgx-h100"), lambda: load_preset("pcie-8gpu-2socket"), lambda: load_preset("mi250x-8gcd"),
              lambda: synthetic_topology("cluster:dgx-h100:3"), lambda: synthetic_topology("fattree:4x8:4")]


@pytest.mark.parametrize("make", TOPOLOGIES)
def test_columns_hold_what_the_objects_hold(make):
    topo: Topology = make()
    cols = topo.columns()
    assert list(cols.index) == [d.id for d in topo.devices]
    assert [list(DeviceKind)[k] for k in cols.device_kind] == [d.kind for d in topo.devices]
    assert [topo.devices[k].id for k in cols.link_a] == [link.a for link in topo.links]
    assert [topo.devices[k].id for k in cols.link_b] == [link.b for link in topo.links]
    assert [list(LinkKind)[k] for k in cols.link_kind] == [link.kind for link in topo.links]
    assert cols.link_count.tolist() == [link.count for link in topo.links]
    assert cols.link_gb_per_s.tolist() == [link.link_gb_per_s for link in topo.links]
    assert [None if np.isnan(x) else x for x in cols.link_latency_us.tolist()] == [link.latency_us for link in topo.links]
    assert cols.link_generation == tuple(link.generation for link in topo.links)
    assert topo.columns() is cols  # made once


def _per_link_efficiency(graph: FabricGraph, params: ModelParams) -> np.ndarray:
    return np.repeat([params.link_efficiency(link.kind.value, link.generation) for link in graph.topology.links], 2)


@pytest.mark.parametrize("make", TOPOLOGIES)
def test_model_arrays_from_columns_equal_the_per_link_reading(make):
    topo = make()
    graph = FabricGraph.from_topology(topo)
    params = ModelParams.for_topology(topo, None)
    np.testing.assert_array_equal(graph.edge_efficiency(params), _per_link_efficiency(graph, params))
    index = {d.id: k for k, d in enumerate(topo.devices)}
    np.testing.assert_array_equal(graph.edge_src[0::2], [index[link.a] for link in topo.links])
    np.testing.assert_array_equal(graph.edge_raw_gb_per_s[1::2], [link.count * link.link_gb_per_s for link in topo.links])
    assert graph.cpu_ids == tuple(d.id for d in topo.devices if d.kind is DeviceKind.CPU)


def test_link_latency_defaults_to_the_gpu_models_nvswitch_hop():
    """An NVLink between a GPU and an NVSwitch without latency_us takes the GPU model's hop; a GPU whose name
    the facts table does not know but whose PCI id it does is looked up by the id (not by the name alone)."""
    base = load_preset("dgx-h100")
    gpu0 = base.gpus[0]
    renamed = dataclasses.replace(gpu0, name="Mystery GPU", attributes={"pci_device_id": "0x233010DE"})
    nameless = dataclasses.replace(base.gpus[1], name="Mystery GPU")
    devices = tuple(renamed if d.id == gpu0.id else nameless if d.id == base.gpus[1].id else d for d in base.devices)
    links = tuple(dataclasses.replace(link, latency_us=None) if link.kind is LinkKind.NVLINK else link for link in base.links)
    topo = dataclasses.replace(base, devices=devices, links=links)
    graph = FabricGraph.from_topology(topo)
    params = ModelParams.for_topology(topo, None)
    lat = graph.edge_latency(params)
    from linkscope.topology.gpufacts import facts_of_device

    for i, link in enumerate(topo.links):
        if link.kind is not LinkKind.NVLINK:
            continue
        gpu = topo.by_id[link.a] if topo.by_id[link.a].kind is DeviceKind.GPU else topo.by_id[link.b]
        facts = facts_of_device(gpu)
        expected = facts.nvswitch_hop_latency_us if facts is not None and facts.nvswitch_hop_latency_us else None
        if expected is not None:
            assert lat[2 * i] == lat[2 * i + 1] == pytest.approx(expected)
        else:
            assert lat[2 * i] == lat[2 * i + 1] == float(params["hop_latency_us"])
    assert facts_of_device(renamed) is not None and facts_of_device(nameless) is None
