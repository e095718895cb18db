"""mapping.request: the rules of ``linkscope map``'s options live in the mapping package, so a library
caller gets the same refusals and defaults as the CLI."""
from pathlib import Path

import numpy as np
import pytest

from linkscope.errors import ConfigError
from linkscope.mapping.request import MapRequest, map_request
from linkscope.topology.synthetic import synthetic_topology
from linkscope.traffic.matrix import TrafficMatrix


@pytest.mark.parametrize("kwargs, message", [
    ({"metric": "speed"}, "unknown metric 'speed'"),
    ({"method": "ce"}, "--method ce applies to --metric model only"),
    ({"nodes": 0}, "--nodes must be at least 1"),
    ({"time_limit_s": float("nan")}, "--time-limit must be a positive number"),
    ({"emit_to": Path("x")}, "--emit-to needs --emit"),
    ({"hosts": "a,a"}, "host names must be non-empty and distinct"),
    ({"hosts": "a", "nodes": 2}, "--hosts names 1 host(s) for --nodes 2"),
])
def test_a_request_that_breaks_a_rule_is_refused_when_made(kwargs, message):
    with pytest.raises(ConfigError) as caught:
        MapRequest(**kwargs)
    assert message in str(caught.value)


def test_emit_targets_default_per_kind():
    assert MapRequest(emit="env").emit_outputs() == ({"--emit-to": None}, {"--emit-to": Path("linkscope-env")})
    assert MapRequest(emit="sbatch").emit_target == Path("job.sbatch")
    assert MapRequest(emit="rankfile-logical").emit_target == Path("rankfile")
    assert MapRequest(emit="slurm").emit_target is None
    assert MapRequest(emit="slurm", emit_to=Path("s.txt")).emit_outputs()[0] == {"--emit-to": Path("s.txt")}


def test_map_request_maps_and_refuses_more_nodes_than_ranks():
    ring = np.zeros((4, 4))
    for i in range(4):
        ring[i, (i + 1) % 4] = 1 << 20
    matrix = TrafficMatrix(ring)
    outcome = map_request(matrix, synthetic_topology("nvswitch:4"), MapRequest())
    assert sorted(outcome.assignment.gpu_of_rank) == [0, 1, 2, 3]
    with pytest.raises(ConfigError, match="more nodes than the traffic has ranks"):
        map_request(matrix, synthetic_topology("nvswitch:4"), MapRequest(nodes=5))
