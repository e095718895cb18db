import types

import pytest

from linkscope.engines import registry
from linkscope.errors import BackendUnavailable, UserError
from linkscope.patterns.methods import find_method, method_keys
from linkscope.topology.synthetic import synthetic_topology

TOPO = synthetic_topology("nvswitch:2")


def test_names_and_catalogue():
    assert registry.engine_names() == ("auto", "cuda", "rocm", "sim")
    keys = method_keys()
    for key in ("ce", "ce-read", "ce-write", "ce-nopeer", "sm-push", "sm-pull", "staged", "staged-pinned", "h2d", "d2h", "local"):
        assert key in keys
    assert find_method("ce").needs_peer_access and not find_method("ce-nopeer").needs_peer_access
    assert find_method("h2d").host_endpoint and not find_method("h2d").peer


def test_unknown_and_rocm():
    with pytest.raises(UserError) as exc:
        registry.create_engine("opencl", TOPO)
    assert exc.value.one_line() == "unknown backend 'opencl' (valid backends: auto, cuda, rocm, sim)"
    with pytest.raises(BackendUnavailable, match="rocm engine cannot run here") as exc:
        registry.create_engine("rocm", TOPO)
    assert "\n" not in exc.value.one_line()


def test_cuda_refuses_a_topology_that_is_not_this_machine():
    with pytest.raises(BackendUnavailable, match="measures this machine"):
        registry.create_engine("cuda", TOPO)


def test_auto_falls_back_to_sim_with_a_note(monkeypatch):
    made = []
    fake_sim = types.SimpleNamespace(SimEngine=lambda topology: made.append(topology) or "sim-engine")
    real_import = registry.importlib.import_module
    monkeypatch.setattr(registry.importlib, "import_module",
                        lambda name: fake_sim if name == "linkscope.engines.sim" else real_import(name))
    notes = []
    assert registry.create_engine("auto", TOPO, on_note=notes.append) == "sim-engine"
    assert made == [TOPO] and "SIMULATED" in notes[0] and "not this machine" in notes[0]


def test_auto_on_this_system_without_cuda_falls_back(monkeypatch):
    live = TOPO.replace(is_this_system=True)
    fake_sim = types.SimpleNamespace(SimEngine=lambda topology: "sim-engine")

    def fake_import(name):
        if name == "linkscope.engines.cuda":
            raise ImportError("No module named 'cupy'")
        return fake_sim

    monkeypatch.setattr(registry.importlib, "import_module", fake_import)
    notes = []
    assert registry.create_engine("auto", live, on_note=notes.append) == "sim-engine"
    assert "cupy" in notes[0]
    with pytest.raises(BackendUnavailable, match="cuda engine cannot be loaded: No module named 'cupy'"):
        registry.create_engine("cuda", live)
