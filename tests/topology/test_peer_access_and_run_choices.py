"""Topology.model_params split: machine facts on peer access (PeerAccess) and the run's choices
(RunChoices) are typed fields; files and callers that kept them in model_params still work."""
import json

import pytest

from linkscope.errors import SchemaError, TopologyError
from linkscope.model.nics import nic_choice_of, with_nic_choice
from linkscope.model.params import ModelParams
from linkscope.model.predict import FabricModel
from linkscope.patterns.base import no_peer_access_pairs
from linkscope.topology import io
from linkscope.topology.model import PeerAccess, RunChoices
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology


def _old_file(tmp_path):
    """A topology file as linkscope wrote it before the split: facts and choices inside model_params."""
    data = io.to_dict(load_preset("v100-4-nvlink-ib").replace(peer_access=PeerAccess()))
    data["model_params"] = {"p2p_max_level": "PIX", "p2p_max_level_source": "measured on the box",
                            "no_peer_access": [[3, 1]], "nic_devices": "mlx5_1",
                            "link_efficiency.nvlink": {"value": 0.9, "provenance": "calibrated", "source": "x"}}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data))
    return path


def test_an_old_file_is_migrated_into_typed_fields_and_written_back_in_the_new_form(tmp_path):
    topo = io.load(_old_file(tmp_path))
    assert topo.peer_access == PeerAccess(max_level="PIX", source="measured on the box", denied_pairs=((1, 3),))
    assert topo.run_choices == RunChoices(nic_devices="mlx5_1")
    assert set(topo.model_params) == {"link_efficiency.nvlink"}  # only model parameters are left
    out = io.to_dict(topo)
    assert out["peer_access"] == {"max_level": "PIX", "source": "measured on the box", "denied_pairs": [[1, 3]]}
    assert out["run_choices"] == {"nic_devices": "mlx5_1"} and set(out["model_params"]) == {"link_efficiency.nvlink"}
    assert io.loads(io.dumps(topo)) == topo
    # every reader goes by the typed fields
    assert frozenset((1, 3)) in no_peer_access_pairs(topo)
    assert nic_choice_of(topo).names == ("mlx5_1",)
    model = FabricModel(topo)
    assert model.params["link_efficiency.nvlink"] == 0.9 and not model.params.ignored
    assert "PIX" in (model.peer_access(0, 2) or "")  # beyond PIX: no P2P


def test_callers_that_still_pass_the_old_keys_keep_working():
    base = load_preset("pcie-8gpu-2socket")
    assert base.peer_access.max_level == "NODE" and base.model_params == {}
    topo = base.replace(model_params={"no_peer_access": [[0, 1]]})
    assert topo.peer_access.denied_pairs == ((0, 1),) and topo.peer_access.max_level == "NODE"
    with pytest.raises(TopologyError, match="pair of GPU indices"):
        base.replace(model_params={"no_peer_access": [[0, 1, 2]]})


def test_the_nic_choice_is_a_run_choice_not_a_model_parameter():
    topo = with_nic_choice(load_preset("v100-4-nvlink-ib"), "mlx5_1")
    assert topo.run_choices.nic_devices == "mlx5_1" and "nic_devices" not in topo.model_params
    assert ModelParams.for_topology(topo).ignored == ()


@pytest.mark.parametrize("field,value,match", [
    ("peer_access", [1], "peer_access must be an object"),
    ("peer_access", {"max_level": 3}, "max_level"),
    ("peer_access", {"denied_pairs": [[0]]}, "denied_pairs"),
    ("peer_access", {"denied_pairs": [[0, -1]]}, "denied_pairs"),
    ("run_choices", {"nic_devices": 5}, "nic_devices"),
    ("run_choices", "mlx5_0", "run_choices must be an object"),
])
def test_bad_typed_fields_in_a_file_are_refused_with_their_path(field, value, match):
    data = io.to_dict(load_preset("hgx-h200-4"))
    data[field] = value
    with pytest.raises(SchemaError, match=match):
        io.from_dict(data)


def test_a_synthetic_cluster_and_a_host_of_it_carry_the_denied_pairs_with_their_gpu_numbers():
    from linkscope.mapping.cluster import _host_topology

    base_pairs = load_preset("v100-4-nvlink-ib").peer_access
    assert base_pairs.max_level == "NODE"
    cluster = synthetic_topology("cluster:v100-4-nvlink-ib:2")
    assert cluster.peer_access.max_level == "NODE"
    marked = cluster.replace(peer_access=PeerAccess(max_level="NODE", denied_pairs=((4, 6),)))
    members = [d.id for d in marked.devices if d.id.startswith("n1.")]
    host = _host_topology(marked, members, [4, 5, 6, 7], "n1")
    assert host.peer_access.denied_pairs == ((0, 2),)  # GPUs 4 and 6 are that host's 0 and 2
