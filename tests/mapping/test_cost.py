import pytest

from linkscope.errors import UserError
from linkscope.mapping.cost import predictor_cost, results_cost, topology_cost
from linkscope.topology.synthetic import synthetic_topology


def test_distance_matrix_from_levels():
    topo = synthetic_topology("pcie:2x4")
    cost = topology_cost(topo, "distance")
    c = cost.costs[0]
    assert c[0, 1] == 3  # PIX: one switch
    assert c[0, 4] == 7  # SYS: across the sockets
    assert c[0, 0] == 0
    assert cost.flows == ("bytes",)


def test_alpha_beta_has_a_latency_and_a_bandwidth_term():
    topo = synthetic_topology("pcie:2x4")
    cost = topology_cost(topo, "alpha-beta")
    assert cost.flows == ("messages", "bytes")
    latency, per_byte = cost.costs
    assert latency[0, 4] > latency[0, 1] > 0  # the cross-socket route has more hops
    # µs per byte at the rate the fabric model gives the pair alone: PCIe Gen4 x16 (31.5 GB/s raw) less its
    # link efficiency and the switch's transit factor (model.pairs.pair_matrices)
    from linkscope.model.pairs import pair_matrices

    rate = pair_matrices(topo)["bandwidth_gb_per_s"][0, 1]
    assert rate < 31.5 and per_byte[0, 1] == pytest.approx(1e6 / (rate * 1e9))


def test_uniform_fabric_costs_are_uniform():
    assert topology_cost(synthetic_topology("nvswitch:4"), "bandwidth").is_uniform()
    assert not topology_cost(synthetic_topology("pcie:2x4"), "distance").is_uniform()


def _record(pairs):
    return {"measurements": [
        {"src": s, "dst": d, "method": "ce", "size_bytes": size, "median_gb_per_s": bw, "latency_us": lat, "status": "ok"}
        for s, d, size, bw, lat in pairs]}


def test_results_cost_uses_largest_size_and_fills_reverse_direction():
    record = _record([(0, 1, 1024, 1.0, 2.0), (0, 1, 1 << 26, 10.0, None), (1, 0, 1 << 26, 20.0, 3.0),
                      (0, 2, 1 << 26, 5.0, 4.0), (1, 2, 1 << 26, 40.0, 1.0)])
    cost = results_cost(record, "bandwidth")
    per_byte = cost.costs[0]
    assert per_byte[0, 1] == pytest.approx(1e6 / 10e9)
    assert per_byte[2, 0] == pytest.approx(1e6 / 5e9)  # from 0->2
    lat = results_cost(record, "latency").costs[0]
    assert lat[0, 1] == 2.0 and lat[2, 1] == 1.0


def test_results_cost_names_a_missing_pair():
    with pytest.raises(UserError, match="GPU pair 0->2"):
        results_cost(_record([(0, 1, 1, 1.0, None), (1, 2, 1, 1.0, None)]), "bandwidth")
    with pytest.raises(UserError, match="distance metric needs a topology"):
        results_cost(_record([(0, 1, 1, 1.0, None)]), "distance")


def test_predictor_seam_takes_any_pair_time_predictor():
    def predict(i, j, size):
        return 1e-6 + size / (50e9 if abs(i - j) == 1 else 10e9)

    ab = predictor_cost(3, "alpha-beta", predict)
    assert ab.costs[0][0, 1] == pytest.approx(1.0, rel=1e-3)  # latency in µs
    assert ab.costs[1][0, 1] < ab.costs[1][0, 2]  # the faster pair costs less per byte
    with pytest.raises(UserError, match="fabric model"):
        predictor_cost(3, "model", predict)


def test_model_metric_needs_a_topology_not_measured_results():
    record = _record([(0, 1, 1 << 26, 10.0, 2.0), (1, 0, 1 << 26, 10.0, 2.0)])
    with pytest.raises(UserError, match="fabric model") as info:
        results_cost(record, "model")
    assert "linkscope model calibrate" in info.value.hint


def test_unknown_metric():
    with pytest.raises(UserError, match="unknown metric .hops."):
        topology_cost(synthetic_topology("pcie:1x2"), "hops")
