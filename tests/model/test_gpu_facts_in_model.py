"""The twin reads per-GPU facts (topology.gpufacts): device-local copies, NVSwitch hop latency, flag base."""
from __future__ import annotations

from dataclasses import replace

import pytest

from linkscope.model.predict import FabricModel
from linkscope.topology.gpufacts import gpu_facts
from linkscope.topology.presets import load_preset

MiB = 2**20


def _renamed(topology, name: str):
    return topology.replace(devices=tuple(replace(d, name=name) if d.is_gpu else d for d in topology.devices))


def _local_gb_per_s(topology, size_bytes: int = 512 * MiB) -> float:
    return FabricModel(topology).predict([(0, 0, size_bytes)], "local")[0].gb_per_s


def test_device_local_copy_follows_the_gpu_model() -> None:
    h200 = load_preset("hgx-h200-4")
    assert _local_gb_per_s(h200) == pytest.approx(2080, rel=0.03)  # measured 2078-2085 (nvbandwidth, 4 x H200)
    k80 = load_preset("k80-16")
    facts = gpu_facts("Tesla K80")
    assert facts is not None and facts.memory_bw_gb_per_s is not None
    assert _local_gb_per_s(k80) < facts.memory_bw_gb_per_s / 2  # read + write share the 240 GB/s
    assert _local_gb_per_s(_renamed(h200, "NVIDIA H100 80GB HBM3")) == pytest.approx(1490, rel=0.03)


def test_calibrated_or_stated_memory_bandwidth_wins_over_the_facts() -> None:
    h200 = load_preset("hgx-h200-4")
    model = FabricModel(h200, {"device_memory_bw_gb_per_s": 3000.0})
    assert model.predict([(0, 0, 512 * MiB)], "local")[0].gb_per_s == pytest.approx(1500, rel=0.02)


def test_unknown_model_keeps_the_default_and_facts_set_latencies() -> None:
    h200 = load_preset("hgx-h200-4")
    unknown = _renamed(h200, "Mystery GPU 9000")
    assert _local_gb_per_s(unknown) == pytest.approx(1500, rel=0.03)  # the 3000 GB/s default, not a borrowed figure


def test_latencies_on_a_discovered_style_topology_use_the_facts() -> None:
    """Links without latency_us (as NVML discovery gives them): remote read and flag from the model's facts."""
    h200 = load_preset("hgx-h200-4")
    bare = h200.replace(links=tuple(replace(link, latency_us=None) for link in h200.links))
    model = FabricModel(bare)
    assert model.latency_us("remote-read", 0, 1) == pytest.approx(0.828, rel=0.02)  # measured 0.824-0.853
    assert model.latency_us("flag-pingpong", 0, 1) == pytest.approx(0.66, rel=0.02)  # measured 0.59-0.73
    h100 = FabricModel(_renamed(bare, "NVIDIA H100 80GB HBM3"))
    assert h100.latency_us("flag-pingpong", 0, 1) == pytest.approx(0.86, rel=0.02)  # measured 0.84-0.88
    unknown = FabricModel(_renamed(bare, "Mystery GPU 9000"))
    assert unknown.latency_us("remote-read", 0, 1) == pytest.approx(4 * 0.3)  # the hop default: nothing borrowed


def test_host_read_is_the_gpu_models_measured_chase_whatever_the_presets_pcie_hops() -> None:
    """nvbandwidth's host_device_latency_sm (a GPU chasing pointers through pinned host memory) crosses the
    host's root complex and DRAM, which the presets' per-hop PCIe latencies leave out: summed hops gave 0.6 us on
    hgx-h200-4 (one hop) and 1.8 us on dgx-h100 (two PCIe switches) where both GPU models measure 1.19-1.22 us."""
    h200 = FabricModel(load_preset("hgx-h200-4"))
    assert h200.latency_us("remote-read", "host", 0) == pytest.approx(1.196)  # facts: 1190.7-1206.5 ns measured
    assert h200.latency_us("remote-read", 0, "host") == pytest.approx(1.196)
    assert FabricModel(load_preset("dgx-h100")).latency_us("remote-read", "host", 3) == pytest.approx(1.21)
    # a GPU model without the fact keeps the route's hops; so does a model whose remote-read base was calibrated
    unknown = FabricModel(_renamed(load_preset("hgx-h200-4"), "Mystery GPU"))
    assert unknown.latency_us("remote-read", "host", 0) == pytest.approx(2 * 0.3)
    calibrated = FabricModel(load_preset("hgx-h200-4"), {"remote_read_base_us": 0.5})
    assert calibrated.latency_us("remote-read", "host", 0) == pytest.approx(0.5 + 2 * 0.3)
    # GPU to GPU is still the NVSwitch route
    assert h200.latency_us("remote-read", 0, 1) == pytest.approx(0.85, rel=0.01)



def _xgmi_capacities_gb_per_s(topology, params=None) -> set[float]:
    model = FabricModel(topology, params)
    xgmi = [2 * i for i, link in enumerate(topology.links) if link.kind.value == "xgmi"]
    return {round(float(model.capacity[e]), 3) for e in xgmi}


def test_an_xgmi_link_carries_the_gpu_models_usable_rate_not_another_models_efficiency() -> None:
    """MI300X's xGMI carries about 48 of its 64 GB/s per direction (AMD's ROCm blog, gpufacts); the kind's default
    efficiency (0.81) was measured on MI250X's links and gave 51.8 GB/s a link, 362 GB/s busbw for an 8-GPU ring."""
    mi300x = load_preset("mi300x-8")
    facts = gpu_facts("AMD Instinct MI300X")
    assert facts is not None and facts.xgmi_usable_gb_per_s_per_link == 48.0
    assert _xgmi_capacities_gb_per_s(mi300x) == {48.0}
    # stated by the user (or a calibration): the stated efficiency wins over the facts, per kind and per link
    assert _xgmi_capacities_gb_per_s(mi300x, {"link_efficiency.xgmi": 0.9}) == {57.6}
    assert _xgmi_capacities_gb_per_s(mi300x, {"link_efficiency.link.gpu0|gpu1": 0.5}) == {32.0, 48.0}
    # a GPU model whose facts give no usable rate keeps the kind's default: nothing borrowed from MI300X
    assert _xgmi_capacities_gb_per_s(_renamed(mi300x, "Mystery GPU 9000")) == {round(64 * 0.81, 3)}
