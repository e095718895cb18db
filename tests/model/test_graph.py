import numpy as np
import pytest

from linkscope.model.graph import FabricGraph
from linkscope.model.params import ModelParams
from linkscope.topology.gpufacts import gpu_facts
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology


def test_each_link_is_two_directed_edges_with_bonded_capacity():
    topo = load_preset("mi250x-8gcd")
    g = FabricGraph.from_topology(topo)
    assert g.n_edges == 2 * len(topo.links)
    for i, link in enumerate(topo.links):
        a, b = g.node_index[link.a], g.node_index[link.b]
        assert (g.edge_src[2 * i], g.edge_dst[2 * i]) == (a, b)
        assert (g.edge_src[2 * i + 1], g.edge_dst[2 * i + 1]) == (b, a)
        assert g.edge_raw_gb_per_s[2 * i] == g.edge_raw_gb_per_s[2 * i + 1] == link.count * link.link_gb_per_s
    four = next(i for i, l in enumerate(topo.links) if l.count == 4)
    assert g.edge_raw_gb_per_s[2 * four] == 200.0


def test_capacities_include_host_and_device_memory():
    topo = synthetic_topology("pcie:2x2")
    g = FabricGraph.from_topology(topo)
    p = ModelParams.defaults()
    cap = g.capacities(p)
    assert cap.size == g.n_resources == g.n_edges + 2 + 4
    assert cap[g.host_memory_resource("cpu0")] == 150.0  # the CPU's memory_bw_gb_per_s
    # the synthetic GPUs are A100 80GB PCIe: twice their device-local copy (GPU facts table), not the 3000 default
    facts = gpu_facts("NVIDIA A100 80GB PCIe")
    assert facts is not None and cap[g.device_memory_resource(3)] == pytest.approx(facts.copy_memory_gb_per_s)
    assert cap[g.device_memory_resource(3)] != p["device_memory_bw_gb_per_s"]
    pcie = np.nonzero(g.edge_kind == 2)[0]
    assert np.allclose(cap[pcie], 31.508 * p.link_efficiency("pcie"))
