from __future__ import annotations

from pathlib import Path

import pytest

from linkscope.discovery import rocm
from linkscope.errors import BackendUnavailable, UserError
from linkscope.topology import query
from linkscope.topology.model import LinkKind, Provenance
from tests.discovery.discovery_fakes import MI250X_LINKS, mi250x_showtopo

MACHINE = Path(__file__).resolve().parents[1] / "fixtures" / "machines" / "mi250x-8gcd"


def _outputs(*names: str) -> dict[str, str]:
    return {name: (MACHINE / name).read_text() for name in names}


# rocm_smi_lib#108 verbatim layout (4 GPUs over PCIe)
ISSUE_108 = """\
======================= ROCm System Management Interface =======================
=========================== Weight between two GPUs ============================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            52           52           52
GPU1   52           0            52           52
GPU2   52           52           0            52
GPU3   52           52           52           0

============================ Hops between two GPUs =============================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            3            3            3
GPU1   3            0            3            3
GPU2   3            3            0            3
GPU3   3            3            3            0

========================== Link Type between two GPUs ==========================
       GPU0         GPU1         GPU2         GPU3
GPU0   0            PCIE         PCIE         PCIE
GPU1   PCIE         0            PCIE         PCIE
GPU2   PCIE         PCIE         0            PCIE
GPU3   PCIE         PCIE         PCIE         0

================================== Numa Nodes ==================================
GPU[0]\t\t: (Topology) Numa Node: 0
GPU[0]\t\t: (Topology) Numa Affinity: 0
GPU[1]\t\t: (Topology) Numa Node: 1
GPU[1]\t\t: (Topology) Numa Affinity: 1
GPU[2]\t\t: (Topology) Numa Node: 3
GPU[2]\t\t: (Topology) Numa Affinity: 3
GPU[3]\t\t: (Topology) Numa Node: 2
GPU[3]\t\t: (Topology) Numa Affinity: 2
============================= End of ROCm SMI Log ==============================
"""


def test_parse_showtopo_documented_layout() -> None:
    parsed = rocm.parse_showtopo(ISSUE_108)
    assert parsed["weight"][(0, 3)] == 52 and parsed["hops"][(2, 1)] == 3
    assert parsed["link_type"][(1, 2)] == "PCIE"
    assert parsed["numa_node"] == {0: 0, 1: 1, 2: 3, 3: 2}


def test_pcie_only_amd_node_has_no_fabric_links() -> None:
    topo = rocm.facts_to_topology(rocm.parse_outputs({"rocm-smi-showtopo.txt": ISSUE_108}))
    assert topo.gpu_count == 4 and not [l for l in topo.links if l.kind is LinkKind.XGMI]
    assert str(query.pair_level(topo, 0, 1)) == "SYS"  # NUMA 0 and 1: across the socket link


def test_parse_showtopo_rejects_other_text() -> None:
    with pytest.raises(UserError, match="not rocm-smi --showtopo output"):
        rocm.parse_showtopo("GPU[0] : Card Series: MI250X\n")
    broken = ISSUE_108.replace("GPU1   52           0            52           52", "GPU1   52 0")
    with pytest.raises(UserError, match="row GPU1 has 2 values, expected 4"):
        rocm.parse_showtopo(broken)


def test_amdsmi_json_gives_link_counts_from_bandwidth() -> None:
    parsed = rocm.parse_amdsmi_topology_json((MACHINE / "amd-smi-topology.json").read_text())
    assert parsed["bandwidth_mbps"][(0, 1)] == (50000, 200000)
    assert parsed["bandwidth_mbps"][(0, 3)] == (50000, 0)
    with pytest.raises(UserError, match="not JSON"):
        rocm.parse_amdsmi_topology_json("{oops")


def test_mi250x_links_match_the_published_graph() -> None:
    facts = rocm.parse_outputs(_outputs("rocm-smi-showtopo.txt", "amd-smi-topology.json", "amd-smi-list.json",
                                        "rocm-smi-showproductname.txt"))
    topo = rocm.facts_to_topology(facts)
    got = {(int(l.a[3:]), int(l.b[3:])): l.count for l in topo.links if l.kind is LinkKind.XGMI}
    assert got == MI250X_LINKS
    assert all(l.link_gb_per_s == 50.0 and l.provenance is Provenance.DATASHEET for l in topo.links if l.kind is LinkKind.XGMI)
    assert str(query.pair_level(topo, 0, 1)) == "XGMI4" and str(query.pair_level(topo, 0, 6)) == "XGMI2"
    assert str(query.pair_level(topo, 0, 3)) == "XGMI-2hop"
    assert topo.gpu(4).numa_node == 0 and topo.gpu(0).pci_bus_id == "0000:c1:00.0"
    assert topo.gpu(0).name == "AMD Instinct MI250X" and topo.gpu(3).ordinals == {"amd": 3}
    assert any("datasheet value" in n for n in topo.notes)


def test_rocm_smi_alone_finds_direct_pairs_by_weight_but_not_counts() -> None:
    topo = rocm.facts_to_topology(rocm.parse_outputs({"rocm-smi-showtopo.txt": mi250x_showtopo()}))
    got = {(int(l.a[3:]), int(l.b[3:])): l.count for l in topo.links if l.kind is LinkKind.XGMI}
    assert set(got) == set(MI250X_LINKS) and set(got.values()) == {1}
    assert any("link counts are not in rocm-smi output" in n for n in topo.notes)


def test_no_output_is_backend_unavailable() -> None:
    with pytest.raises(BackendUnavailable):
        rocm.parse_outputs({})


def test_probe_looks_for_the_tools() -> None:
    assert not rocm.probe(which=lambda name: None).ok
    assert "neither amd-smi nor rocm-smi" in rocm.probe(which=lambda name: None).reason
    assert rocm.probe(which=lambda name: "/opt/rocm/bin/rocm-smi" if name == "rocm-smi" else None).ok


def test_read_outputs_runs_only_present_tools() -> None:
    ran: list[list[str]] = []

    def run(argv: list[str]) -> str | None:
        ran.append(argv)
        return "text" if argv[1] == "--showtopo" else None

    outputs = rocm.read_outputs(run=run, which=lambda name: name == "rocm-smi" or None)
    assert outputs == {"rocm-smi-showtopo.txt": "text"}
    assert all(argv[0] == "rocm-smi" for argv in ran)


def test_recorded_mi250x_agrees_with_the_preset() -> None:
    from linkscope.topology import presets

    try:
        preset = presets.load_preset("mi250x-8gcd")
    except (UserError, FileNotFoundError):
        pytest.skip("preset mi250x-8gcd not installed")

    def xgmi(t):
        index = {g.id: g.index for g in t.gpus}
        return {tuple(sorted((index[l.a], index[l.b]))): (l.count, l.link_gb_per_s)
                for l in t.links if l.kind is LinkKind.XGMI and l.a in index and l.b in index}

    recorded = rocm.facts_to_topology(rocm.parse_outputs(_outputs("rocm-smi-showtopo.txt", "amd-smi-topology.json")))
    assert xgmi(recorded) == xgmi(preset)
    assert [g.numa_node for g in recorded.gpus] == [g.numa_node for g in preset.gpus]


# ---- amd-smi topology --json of ROCm >= 6.1.2 (per-GPU "links" lists) ------------------------------

def amdsmi_cli_topology_json(fake) -> str:
    """What ``amd-smi topology --json`` prints from ROCm 6.1.2 on, built the way amdsmi_cli builds it
    (ROCm/amdsmi rocm-6.2 ``amdsmi_cli/amdsmi_commands.py:3070-3210``: per source GPU ``gpu``,
    ``bdf`` and a ``links`` list over every GPU, itself included as SELF with weight 0, hops 0 and
    bandwidth "N/A"), over the fake amdsmi library."""
    import json

    handles = fake.amdsmi_get_processor_handles()
    out = []
    for i, src in enumerate(handles):
        links = []
        for j, dst in enumerate(handles):
            same = i == j
            bw = fake.amdsmi_get_minmax_bandwidth_between_processors(src, dst) if not same else None
            links.append({"gpu": j, "bdf": fake.amdsmi_get_gpu_device_bdf(dst),
                          "weight": 0 if same else fake.amdsmi_topo_get_link_weight(src, dst),
                          "link_status": "ENABLED", "link_type": "SELF" if same else "XGMI",
                          "num_hops": 0 if same else fake.amdsmi_topo_get_link_type(src, dst)["hops"],
                          "bandwidth": "N/A" if same else f"{bw['min_bandwidth']}-{bw['max_bandwidth']}",
                          "coherent": "SELF" if same else "C", "atomics": "SELF" if same else "64,32",
                          "dma": "SELF" if same else "T", "bi_dir": "SELF" if same else "T"})
        out.append({"gpu": i, "bdf": fake.amdsmi_get_gpu_device_bdf(src), "links": links})
    return json.dumps(out, indent=4)


@pytest.mark.parametrize("gpu", ["mi250x", "mi300x"])
def test_amd_smi_topology_json_links_layout(gpu: str) -> None:
    """ROCm >= 6.1.2 prints a per-GPU ``links`` list; the old parser found 0 GPUs in it, silently."""
    from tests.discovery.fake_amdsmi import FakeAmdSmi

    fake = FakeAmdSmi(gpu=gpu)
    facts = rocm.parse_outputs({"amd-smi-topology.json": amdsmi_cli_topology_json(fake)})
    topo = rocm.facts_to_topology(facts)
    assert topo.gpu_count == 8 and topo.gpu(2).pci_bus_id == fake.bus[2]
    links = {(int(l.a[3:]), int(l.b[3:])): l.count for l in topo.links if l.kind is LinkKind.XGMI}
    assert links == fake.graph


def test_amd_smi_topology_json_unknown_layout_is_one_clear_line() -> None:
    with pytest.raises(UserError, match=r"unrecognised layout for GPU 0 \(keys: gpu, peers\)"):
        rocm.parse_outputs({"amd-smi-topology.json": '[{"gpu": 0, "peers": []}]'})
    with pytest.raises(UserError, match="names no GPU"):
        rocm.parse_outputs({"amd-smi-topology.json": "[]"})


def test_recorded_pcie_only_rocm_smi_from_rocm_smi_lib_108() -> None:
    """A real rocm-smi --showtopo (4 GPUs on PCIe, ROCm/rocm_smi_lib#108): 4 GPUs, no xGMI link."""
    text = (Path(__file__).resolve().parents[1] / "fixtures" / "smi" / "rocm-smi-showtopo-4gpu-pcie.txt").read_text()
    parsed = rocm.parse_showtopo(text)
    assert parsed["weight"][(0, 1)] == 52 and parsed["hops"][(2, 3)] == 3
    assert set(parsed["link_type"].values()) == {"PCIE"}
    topo = rocm.facts_to_topology(rocm.parse_outputs({"rocm-smi-showtopo.txt": text}))
    assert topo.gpu_count == 4 and not [l for l in topo.links if l.kind is LinkKind.XGMI]


def test_showtopo_numa_minus_one_is_unknown_and_affinity_stands_in() -> None:
    """rocm_smi.py showNumaTopology (rocm-systems release/rocm-rel-7.0 python_smi_tools/rocm_smi.py:
    3428-3441) prints rsmi_topo_get_numa_node_number through a c_int32 and the sysfs numa_node as
    "Numa Affinity"; -1 means none. The old parser stored node -1."""
    text = "\n".join([
        "=========================== ROCm System Management Interface ===========================",
        "========================= Weight between two GPUs =========================",
        "       GPU0         GPU1",
        "GPU0   0            15",
        "GPU1   15           0",
        "================================== Numa Nodes ==================================",
        "GPU[0]\t\t: (Topology) Numa Node: -1",
        "GPU[0]\t\t: (Topology) Numa Affinity: 1",
        "GPU[1]\t\t: (Topology) Numa Node: -1",
        "GPU[1]\t\t: (Topology) Numa Affinity: -1",
        "============================= End of ROCm SMI Log ==============================", ""])
    parsed = rocm.parse_showtopo(text)
    assert parsed["numa_node"] == {0: 1}
    topo = rocm.facts_to_topology(rocm.parse_outputs({"rocm-smi-showtopo.txt": text}))
    assert [g.numa_node for g in topo.gpus] == [1, None]
