import pytest

from linkscope.errors import TopologyError
from linkscope.topology import query
from linkscope.topology.model import Device, DeviceKind, Link, LinkKind, Topology
from linkscope.topology.synthetic import synthetic_topology


def gpu(i, **kw):
    return Device(id=f"gpu{i}", kind=DeviceKind.GPU, index=i, **kw)


def test_validation_rejects_bad_topologies():
    with pytest.raises(TopologyError, match="twice"):
        Topology("t", (gpu(0), gpu(0)), ())
    with pytest.raises(TopologyError, match="does not exist"):
        Topology("t", (gpu(0),), (Link("gpu0", "gpu9", LinkKind.NVLINK, 1, 25.0),))
    with pytest.raises(TopologyError, match="0..1"):
        Topology("t", (gpu(0), gpu(2)), ())
    with pytest.raises(TopologyError, match="itself"):
        Topology("t", (gpu(0),), (Link("gpu0", "gpu0", LinkKind.NVLINK, 1, 25.0),))
    with pytest.raises(TopologyError, match="bandwidth"):
        Topology("t", (gpu(0), gpu(1)), (Link("gpu0", "gpu1", LinkKind.NVLINK, 1, 0.0),))


def test_gpu_lookup_error_lists_valid_indices():
    t = synthetic_topology("nvswitch:4")
    with pytest.raises(TopologyError) as info:
        t.gpu(7)
    assert "0..3" in info.value.one_line()


def test_pcie_levels_bandwidth_nic_cores():
    t = synthetic_topology("pcie:2x4")
    assert query.pair_level(t, 0, 0).code == "X"
    assert query.pair_level(t, 0, 1).code == "PIX"
    assert query.pair_level(t, 0, 4).code == "SYS"
    assert query.distance(t, 0, 1) < query.distance(t, 0, 4)
    assert query.theoretical_gb_per_s(t, 0, 1) == pytest.approx(31.508)  # PCIe Gen4 x16 (topology.pcie)
    assert [n.device_name for n in query.nearest_nics(t, 5)] == ["mlx5_1"]
    assert query.nearest_cores(t, 5) == tuple(range(32, 64))
    assert query.hops(t, 0, 1) == 2
    assert not query.is_uniform(t)


def test_nvswitch_levels_and_uniformity():
    t = synthetic_topology("nvswitch:4")
    assert {query.pair_level(t, a, b).code for a in range(4) for b in range(4) if a != b} == {"NV18"}
    assert query.theoretical_gb_per_s(t, 0, 3) == pytest.approx(18 * 26.562)
    assert query.is_uniform(t)


def test_fabric_preferred_and_xgmi_multihop():
    devices = (
        Device("cpu0", DeviceKind.CPU, numa_node=0),
        gpu(0, vendor="amd"), gpu(1, vendor="amd"), gpu(2, vendor="amd"),
    )
    links = (
        Link("gpu0", "gpu1", LinkKind.XGMI, 4, 50.0),
        Link("gpu1", "gpu2", LinkKind.XGMI, 1, 50.0),
        *(Link(f"gpu{i}", "cpu0", LinkKind.XGMI, 1, 36.0) for i in range(3)),
    )
    t = Topology("amd", devices, links)
    assert query.pair_level(t, 0, 1).code == "XGMI4"
    assert query.theoretical_gb_per_s(t, 0, 1) == pytest.approx(200.0)
    level = query.pair_level(t, 0, 2)
    assert level.code == "XGMI-2hop" and level.distance == 2
    assert query.route_devices(t, 0, 2) == ("gpu0", "gpu1", "gpu2")


def test_nvlink_never_transits_a_gpu():
    # gpu0-gpu1 and gpu1-gpu2 joined by NVLink; gpu0->gpu2 must go over PCIe, not through gpu1.
    devices = (Device("cpu0", DeviceKind.CPU), gpu(0), gpu(1), gpu(2))
    links = (
        Link("gpu0", "gpu1", LinkKind.NVLINK, 2, 25.0),
        Link("gpu1", "gpu2", LinkKind.NVLINK, 2, 25.0),
        *(Link(f"gpu{i}", "cpu0", LinkKind.PCIE, 1, 15.75) for i in range(3)),
    )
    t = Topology("v", devices, links)
    assert query.pair_level(t, 0, 1).code == "NV2"
    assert query.pair_level(t, 0, 2).code == "PHB"
    assert query.route_devices(t, 0, 2) == ("gpu0", "cpu0", "gpu2")


def test_disconnected_device_is_a_clear_error():
    t = Topology("d", (gpu(0), gpu(1)), ())
    with pytest.raises(TopologyError, match="disconnected"):
        query.route(t, 0, 1)


def test_a_gpu_bridges_its_c2c_to_the_nvlink_fabric_but_not_nvlink_to_nvlink_nor_c2c_to_c2c():
    """Two Grace superchips on one NVLink switch (the GB200 NVL72 shape): a Grace reaches the other
    superchip's GPU over its own C2C and the switch; a GPU still never forwards NVLink to NVLink, and
    two CPUs on the C2C links of one GPU are not joined through it."""
    devices = (
        Device("cpu0", DeviceKind.CPU, numa_node=0), Device("cpu1", DeviceKind.CPU, numa_node=1),
        Device("cpu2", DeviceKind.CPU, numa_node=2),
        Device("sw", DeviceKind.NVSWITCH), gpu(0, numa_node=0), gpu(1, numa_node=1), gpu(2),
    )
    links = (
        Link("gpu0", "cpu0", LinkKind.NVLINK, 1, 450.0), Link("gpu1", "cpu1", LinkKind.NVLINK, 1, 450.0),
        Link("gpu0", "sw", LinkKind.NVLINK, 18, 50.0), Link("gpu1", "sw", LinkKind.NVLINK, 18, 50.0),
        Link("gpu2", "gpu0", LinkKind.NVLINK, 4, 25.0), Link("gpu2", "cpu2", LinkKind.NVLINK, 1, 450.0),
    )
    t = Topology("two-superchips", devices, links)
    assert query.route_devices(t, "cpu0", "gpu1") == ("cpu0", "gpu0", "sw", "gpu1")
    assert query.route_devices(t, 0, 1) == ("gpu0", "sw", "gpu1")
    with pytest.raises(TopologyError, match="disconnected"):
        query.route(t, "sw", "gpu2")  # would need gpu0 to forward NVLink to NVLink
    t2 = Topology("one-gpu-two-cpus", (Device("cpu0", DeviceKind.CPU), Device("cpu1", DeviceKind.CPU), gpu(0)),
                  (Link("gpu0", "cpu0", LinkKind.NVLINK, 1, 450.0), Link("gpu0", "cpu1", LinkKind.NVLINK, 1, 450.0)))
    with pytest.raises(TopologyError, match="disconnected"):
        query.route(t2, "cpu0", "cpu1")
