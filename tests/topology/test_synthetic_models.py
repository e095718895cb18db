"""Synthetic topologies name their GPUs from the facts table and take the PCIe generation, bridges and
xGMI meshes; every preset's GPUs resolve to facts."""
from __future__ import annotations

import pytest

from linkscope.errors import UserError
from linkscope.model.predict import FabricModel
from linkscope.topology import query
from linkscope.topology.gpufacts import GPU_FACTS, facts_of_device, gpu_facts
from linkscope.topology.model import LinkKind
from linkscope.topology.presets import load_preset, preset_names
from linkscope.topology.synthetic import synthetic_topology

MiB = 2**20


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_gpu_has_facts(name: str) -> None:
    topology = load_preset(name)
    for gpu in topology.gpus:
        assert facts_of_device(gpu) is not None, f"{name}: {gpu.name!r}"


@pytest.mark.parametrize("spec", ["nvswitch:4", "pcie:2x2", "pcie:1x2:gen3", "pcie:1x2:gen5", "xgmi:8", "fattree:2x2:2",
                                  "cluster:dgx-h100:2"])
def test_every_synthetic_gpu_has_facts(spec: str) -> None:
    for gpu in synthetic_topology(spec).gpus:
        assert facts_of_device(gpu) is not None, f"{spec}: {gpu.name!r}"


def test_every_facts_row_name_resolves_to_its_row() -> None:
    for row in GPU_FACTS:
        assert gpu_facts(row.name) is row, row.name


def test_gen5_pcie_host_copy_bottleneck() -> None:
    """pcie:SxG was fixed at Gen4: a Gen5 host copy (55 GB/s measured on H200) was judged against 31.5."""
    gen5 = synthetic_topology("pcie:2x4:gen5")
    assert gen5.gpus[0].name == "NVIDIA H100 PCIe"
    assert query.theoretical_gb_per_s(gen5, "cpu0", 0) == pytest.approx(63.0, abs=0.1)
    h2d = FabricModel(gen5).predict([("host", 0, 512 * MiB)], "h2d")[0].gb_per_s
    assert 50 < h2d < 63  # measured 55.0-55.5 on PCIe Gen5 x16 (H200, H100)
    gen4 = synthetic_topology("pcie:2x4")
    assert query.theoretical_gb_per_s(gen4, "cpu0", 0) == pytest.approx(31.5, abs=0.1)
    # a Gen4 GPU in Gen5 slots trains at Gen4
    a100 = synthetic_topology("pcie:2x4:gen5", gpu_model="A100 80GB PCIe")
    assert query.theoretical_gb_per_s(a100, "cpu0", 0) == pytest.approx(31.5, abs=0.1)


def test_models_set_links_and_memory() -> None:
    b200 = synthetic_topology("nvswitch:8", gpu_model="B200")
    assert b200.gpus[0].name == "NVIDIA B200"
    nvlink = next(link for link in b200.links if link.kind is LinkKind.NVLINK)
    assert (nvlink.count, nvlink.link_gb_per_s, nvlink.generation) == (18, 50.0, "NVLink5")
    assert query.theoretical_gb_per_s(b200, 0, 1) == pytest.approx(900.0)
    gh = synthetic_topology("nvswitch:2", gpu_model="GH200")
    host = next(link for link in gh.links if link.a == "gpu0" and link.b == "cpu0")
    assert host.generation == "NVLink-C2C" and host.link_gb_per_s == pytest.approx(450.0)
    # stated links win over the model's
    stated = synthetic_topology("nvswitch:2:12:25", gpu_model="H200")
    assert query.theoretical_gb_per_s(stated, 0, 1) == pytest.approx(300.0)


def test_bridged_pairs_and_xgmi_mesh() -> None:
    bridged = synthetic_topology("pcie:2x4:gen4:bridged", gpu_model="A100-PCIE-40GB")
    assert query.pair_level(bridged, 0, 1).code == "NV12"
    assert query.pair_level(bridged, 1, 2).code == "PIX"
    assert query.pair_level(bridged, 0, 4).code == "SYS"
    mesh = synthetic_topology("xgmi:8")
    assert mesh.gpus[0].name == "AMD Instinct MI300X"
    assert query.pair_level(mesh, 0, 7).code.startswith("XGMI")
    assert query.theoretical_gb_per_s(mesh, 0, 7) == pytest.approx(64.0)


@pytest.mark.parametrize(("spec", "model", "needle"), [
    ("nvswitch:2", "GTX 1070", "unknown GPU model 'GTX 1070'"),
    ("nvswitch:2", "L40S", "has no NVLink"),
    ("pcie:1x2:bridged", "L40S", "has no NVLink bridge"),
    ("pcie:1x3:bridged", "A100-PCIE-40GB", "G must be even"),
    ("pcie:1x2:gen9", None, "neither genN"),
    ("pcie:1x2:gen6", None, "no default GPU model"),
    ("xgmi:9", None, "needs 8 links per GPU"),
    ("xgmi:2", "H100", "no per-GPU xGMI mesh"),
    ("cluster:dgx-h100:2", "H100", "does not apply to cluster"),
])
def test_bad_models_and_specs_are_user_errors(spec: str, model: str | None, needle: str) -> None:
    with pytest.raises(UserError) as info:
        synthetic_topology(spec, gpu_model=model)
    assert needle in info.value.one_line()


def test_a_cluster_of_32768_gpus_builds_with_a_non_blocking_spine():
    """cluster:dgx-h100:4096 failed: each rail's spine link claimed 4096 x 50 GB/s as one link (more than any
    physical link); it is bonded links now, the same capacity."""
    from linkscope.topology.model import MAX_LINK_COUNT
    from linkscope.topology.synthetic import synthetic_topology

    for nodes in (2, 4096):
        topo = synthetic_topology(f"cluster:dgx-h100:{nodes}")
        spine = [link for link in topo.links if "spine" in (link.a, link.b)]
        assert spine and all(link.count <= MAX_LINK_COUNT for link in spine)
        assert all(abs(link.count * link.link_gb_per_s - nodes * 50.0) < 1e-6 for link in spine)  # 400 Gb/s NICs
    assert topo.gpu_count == 32768
