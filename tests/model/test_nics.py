"""The NIC a transfer uses between nodes: chosen like UCX_NET_DEVICES / NCCL_IB_HCA, honoured by routes."""
import pytest

from linkscope.errors import ConfigError
from linkscope.model.nics import parse_nic_spec, select_nics, with_nic_choice
from linkscope.model.predict import FabricModel
from linkscope.topology.synthetic import synthetic_topology

GiB = 1 << 30


@pytest.fixture(scope="module")
def v100x2():
    return synthetic_topology("cluster:v100-4-nvlink-ib:2")


def test_parse_like_ucx_and_nccl():
    assert parse_nic_spec(None).rule == "nearest"
    assert parse_nic_spec("mlx5_0:1").names == ("mlx5_0",)
    spec = parse_nic_spec("^mlx5_1")
    assert spec.exclude and spec.names == ("mlx5_1",) and spec.text == "^mlx5_1"
    assert parse_nic_spec("=mlx5_0,mlx5_1").names == ("mlx5_0", "mlx5_1")
    assert parse_nic_spec("any").rule == "any"
    with pytest.raises(ConfigError):
        parse_nic_spec(",")


def test_two_hcas_on_different_switches_near_beats_unspecified_beats_far(v100x2):
    assert v100x2.gpu_count == 8
    assert [n.device_name for n in select_nics(v100x2, 0)] == ["mlx5_0"]
    assert [n.device_name for n in select_nics(v100x2, 2)] == ["mlx5_1"]
    assert [n.device_name for n in select_nics(v100x2, 0, "any")] == ["mlx5_0", "mlx5_1"]
    bw = {spec: FabricModel(v100x2, nics=spec).predict([(0, 4, GiB)], "ce")[0].gb_per_s
          for spec in ("mlx5_0", "any", "mlx5_1")}
    assert bw["mlx5_0"] > 3 * bw["any"] and bw["any"] > 1.5 * bw["mlx5_1"]
    assert bw["mlx5_0"] <= 12.5  # EDR line rate
    assert FabricModel(v100x2).predict([(0, 4, GiB)], "ce")[0].gb_per_s == pytest.approx(bw["mlx5_0"])


def test_the_route_goes_through_the_chosen_nic(v100x2):
    model = FabricModel(v100x2, nics="mlx5_1")
    (edges,) = model.router.lanes("n0.gpu0", "n1.gpu0")
    passed = {model.graph.node_ids[i] for i in model.graph.edge_dst[edges]}
    assert {"n0.mlx5_1", "n1.mlx5_1", "rail1"} <= passed and "n0.mlx5_0" not in passed
    spread = FabricModel(v100x2, nics="mlx5_0,mlx5_1").router.lanes("n0.gpu0", "n1.gpu0")
    assert len(spread) == 2


def test_rails_are_joined_by_a_non_blocking_spine(v100x2):
    # GPU0 of node 0 sits by mlx5_0 (rail 0), GPU2 of node 1 by mlx5_1 (rail 1): nearest crosses the spine
    model = FabricModel(v100x2)
    (edges,) = model.router.lanes("n0.gpu0", "n1.gpu2")
    passed = [model.graph.node_ids[i] for i in model.graph.edge_dst[edges]]
    assert {"n0.mlx5_0", "rail0", "spine", "rail1", "n1.mlx5_1"} <= set(passed)
    (same_rail,) = model.router.lanes("n0.gpu0", "n1.gpu0")
    assert "spine" not in {model.graph.node_ids[i] for i in model.graph.edge_dst[same_rail]}
    cross, within = model.predict([(0, 6, GiB)], "ce")[0], model.predict([(0, 4, GiB)], "ce")[0]
    assert cross.gb_per_s == pytest.approx(within.gb_per_s, rel=0.01)  # the spine is no bottleneck
    assert cross.latency_us > within.latency_us  # two more switch hops
    # every node's rail-0 NIC sending at once still fits the rail-0 uplink (non-blocking)
    four = synthetic_topology("cluster:v100-4-nvlink-ib:4")
    flows = [(4 * n, 4 * ((n + 1) % 4) + 2, GiB) for n in range(4)]  # each to the next node's rail-1 GPU
    rates = [p.gb_per_s for p in FabricModel(four).predict(flows, "ce")]
    assert min(rates) == pytest.approx(within.gb_per_s, rel=0.01)


def test_topology_choice_and_clear_errors(v100x2):
    chosen = with_nic_choice(v100x2, "mlx5_1")
    assert FabricModel(chosen).nic_spec.names == ("mlx5_1",)
    with pytest.raises(ConfigError, match="mlx5_7"):
        with_nic_choice(v100x2, "mlx5_7")
    with pytest.raises(ConfigError, match="several NICs"):
        FabricModel(v100x2, nics="any").peer_problem([0] * 70, [4] * 70, [1] * 70)


def test_dgx_rails_pick_each_gpus_own_compute_nic():
    topo = synthetic_topology("cluster:dgx-h100:2")
    names = [select_nics(topo, g)[0].device_name for g in range(8)]
    assert names == ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    model = FabricModel(topo)
    assert model.router.nics_of(topo.gpu(11))[0].id == "n1.mlx5_5"


def test_cluster_scale_synthetics_are_accepted_flat_nodes_stay_bounded():
    from linkscope.errors import UserError

    assert synthetic_topology("fattree:512x8").gpu_count == 4096  # the scale benchmark's cluster
    with pytest.raises(UserError, match="more than 1024 GPUs"):
        synthetic_topology("nvswitch:2048")
    with pytest.raises(UserError, match="more than 32768 GPUs"):
        synthetic_topology("cluster:dgx-h100:5000")
