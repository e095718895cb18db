import pytest

from linkscope.errors import ConfigError, UserError
from linkscope.model.params import ModelParams, default_keys
from linkscope.topology.synthetic import synthetic_topology


def test_defaults_carry_provenance_and_sources():
    p = ModelParams.defaults()
    assert set(default_keys()) <= set(p.values)
    for key in default_keys():
        assert p.provenance[key] in {"default", "measured", "datasheet"}
        assert p.sources[key]
    # the H200 anchors: 395 of 478 GB/s one-way CE, 55.5 of 63 GB/s H2D
    assert p.link_efficiency("nvlink") * 478.116 == pytest.approx(395, abs=1)
    assert p.link_efficiency("pcie") * 63.0 == pytest.approx(55.5, abs=0.1)
    assert p.engine_cap_gb_per_s("amd") == 50.0
    assert p.engine_cap_gb_per_s("nvidia") == float("inf")


def test_overrides_flat_nested_and_with_provenance():
    p = ModelParams.from_mapping({
        "link_efficiency": {"nvlink": 0.7},
        "overhead_us.ce": {"value": 3.0, "provenance": "calibrated", "source": "fit"},
        "engine_cap_gb_per_s.nvidia": 300,
        "no_peer_access": [[0, 1]],
        "something_else": 1,
    })
    assert p.link_efficiency("nvlink") == 0.7 and p.provenance["link_efficiency.nvlink"] == "user"
    assert p.overhead_us("ce") == 3.0 and p.provenance["overhead_us.ce"] == "calibrated"
    assert p.engine_cap_gb_per_s("nvidia") == 300
    assert p.ignored == ("something_else",)


@pytest.mark.parametrize("bad", [{"link_efficiency.nvlink": 0}, {"link_efficiency.nvlink": -1},
                                 {"overhead_us.ce": "fast"}, {"hop_latency_us": True}])
def test_bad_values_are_user_errors(bad):
    with pytest.raises(ConfigError):
        ModelParams.from_mapping(bad)


def test_topology_params_then_overrides():
    topo = synthetic_topology("nvswitch:2").replace(model_params={"overhead_us.ce": 1.0, "overhead_us.h2d": 2.0})
    p = ModelParams.for_topology(topo, {"overhead_us.ce": 7.0})
    assert p.overhead_us("ce") == 7.0 and p.overhead_us("h2d") == 2.0
    with pytest.raises(UserError):
        p["no.such.key"]
    round_trip = ModelParams.from_mapping(p.to_model_params(["overhead_us.ce"]))
    assert round_trip.overhead_us("ce") == 7.0
