"""The shipped preset topologies: format, citations, and the levels / bandwidths / NICs / cores that the
queries derive from them (the facts are in docs/presets.md)."""
from __future__ import annotations

import itertools
import json
from importlib import resources

import pytest

from linkscope.errors import UserError
from linkscope.topology import io
from linkscope.topology import query as q
from linkscope.topology.model import DeviceKind, LinkKind
from linkscope.topology.presets import DEFAULT_PRESET, load_preset, preset_names

jsonschema = pytest.importorskip("jsonschema")

EXPECTED = {
    "hgx-h200-4", "dgx-h100", "dgx-a100", "mi250x-8gcd", "k80-16", "pcie-8gpu-2socket", "v100-4-nvlink-ib",
    "mi300x-8", "mi325x-8", "hgx-a100-8-4nic",
}
SCHEMA = json.loads(io.SCHEMA_FILE.read_text())


def _raw(name: str) -> str:
    return (resources.files("linkscope.topology") / "presets" / f"{name}.json").read_text()


def _level(t, a, b) -> str:
    return q.pair_level(t, a, b).code


def _gpu_pairs(t):
    gpus = t.gpus
    return [(g, h) for i, g in enumerate(gpus) for h in gpus[i + 1 :]]


# ---- every preset ----------------------------------------------------------------------------------

def test_the_expected_presets_ship_and_the_default_is_one_of_them():
    assert set(preset_names()) >= EXPECTED
    assert DEFAULT_PRESET in preset_names()


def test_unknown_preset_is_a_user_error_listing_the_valid_names():
    with pytest.raises(UserError) as exc:
        load_preset("dgx-h1000")
    assert "dgx-h100" in str(exc.value.hint)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_validates_against_the_json_schema(name):
    data = json.loads(_raw(name))
    jsonschema.Draft202012Validator(SCHEMA).validate(data)
    assert data["format"] == "linkscope.topology" and data["schema_version"] == 1
    assert data["name"] == name


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_preset_round_trips_and_is_stored_in_canonical_form(name):
    t = load_preset(name)
    assert io.loads(io.dumps(t)) == t
    # the file is exactly what io.to_dict writes, so regenerated files give clean diffs
    assert io.dumps(t) == _raw(name)
    assert t.source == f"preset:{name}" and t.is_this_system is False


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_number_is_cited(name):
    t = load_preset(name)
    assert t.sources and all(s.strip() for s in t.sources)
    assert t.description.strip()
    for link in t.links:
        assert link.source.strip(), f"{link.a}-{link.b} has no source"
        assert link.latency_us is not None and 0 <= link.latency_us < 5, f"{link.a}-{link.b} latency"
        assert link.generation, f"{link.a}-{link.b} has no generation"
    for d in t.devices:
        if d.kind in (DeviceKind.GPU, DeviceKind.CPU, DeviceKind.NIC, DeviceKind.NVSWITCH):
            assert str(d.attributes.get("source", "")).strip(), f"{d.id} has no source attribute"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_device_fields_required_by_the_preset_conventions(name):
    t = load_preset(name)
    assert [g.index for g in t.gpus] == list(range(t.gpu_count))
    for g in t.gpus:
        assert g.vendor in ("nvidia", "amd") and g.name and g.memory_bytes and g.numa_node is not None
        assert g.ordinal() == g.index
    cpus = t.of_kind(DeviceKind.CPU)
    assert cpus
    numa_nodes = [c.numa_node for c in cpus]
    assert len(set(numa_nodes)) == len(cpus), "one CPU device per NUMA node"
    all_cores = [core for c in cpus for core in c.cores]
    assert len(all_cores) == len(set(all_cores)), "a logical core belongs to one NUMA node"
    for c in cpus:
        assert c.cores and c.socket is not None
        if name != "hgx-h200-4":  # host side of this project's machine is unknown (documented)
            assert c.memory_bw_gb_per_s and c.memory_bw_gb_per_s > 0
    for g in t.gpus:
        assert g.numa_node in numa_nodes
    for nic in t.of_kind(DeviceKind.NIC):
        assert nic.device_name and nic.line_rate_gbit_per_s and nic.line_rate_gbit_per_s > 0
    for sw in t.of_kind(DeviceKind.NVSWITCH):
        assert sw.attributes["physical_switches"] >= 1
        for g in t.gpus:  # one bonded link per GPU
            assert sum(1 for link in t.links_of(g.id) if link.joins(g.id, sw.id)) == 1


@pytest.mark.parametrize("name", preset_names())
def test_every_shipped_preset_is_connected(name):
    """Every preset on disk (not only the expected list): every GPU pair, every CPU (host memory) to every
    GPU and every GPU to every NIC has a route, so `check` and the twin never stop at "disconnected"."""
    t = load_preset(name)
    for g, h in _gpu_pairs(t):
        assert q.theoretical_gb_per_s(t, g, h) > 0
    for g in t.gpus:
        for nic in t.of_kind(DeviceKind.NIC):
            assert q.hops(t, g, nic) >= 1
        for cpu in t.of_kind(DeviceKind.CPU):
            assert q.hops(t, cpu.id, g.id) >= 1, (cpu.id, g.id)
        assert q.nearest_cores(t, g)


def test_gb200_nvl72_gpus_meet_on_the_nvlink_switch_and_every_grace_reaches_every_gpu_over_c2c():
    t = load_preset("gb200-nvl72")
    assert len(t.gpus) == 72 and len(t.of_kind(DeviceKind.CPU)) == 36
    for g, h in [(0, 1), (0, 2), (0, 71), (35, 36)]:
        path = q.route_devices(t, g, h)
        assert [t.by_id[d].kind for d in path] == [DeviceKind.GPU, DeviceKind.NVSWITCH, DeviceKind.GPU]
        assert q.pair_level(t, g, h).code == "NV18"
    # cpu1 (second Grace of tray 0) to gpu0: its own C2C, its GPU, the switch, gpu0 (it was "no route")
    path = q.route_devices(t, "cpu1", t.gpu(0).id)
    kinds = [t.by_id[d].kind for d in path]
    assert kinds == [DeviceKind.CPU, DeviceKind.GPU, DeviceKind.NVSWITCH, DeviceKind.GPU]
    assert t.by_id[path[1]].numa_node == t.by_id["cpu1"].numa_node


# ---- hgx-h200-4 --------------------------------------------------------------------------------------

def test_hgx_h200_4_is_nv18_everywhere_at_478_gb_per_s():
    t = load_preset("hgx-h200-4")
    assert t.gpu_count == 4
    assert all(g.memory_bytes == 143771 * 2**20 for g in t.gpus)
    for g, h in _gpu_pairs(t):
        assert _level(t, g, h) == "NV18"
        assert q.theoretical_gb_per_s(t, g, h) == pytest.approx(478.1, abs=0.05)
    assert q.is_uniform(t)


# ---- mi250x-8gcd -----------------------------------------------------------------------------------

def test_mi250x_xgmi_levels_and_bandwidths():
    t = load_preset("mi250x-8gcd")
    assert t.gpu_count == 8 and {g.vendor for g in t.gpus} == {"amd"}
    assert _level(t, 0, 1) == "XGMI4" and q.theoretical_gb_per_s(t, 0, 1) == pytest.approx(200.0)
    assert _level(t, 0, 6) == "XGMI2" and q.theoretical_gb_per_s(t, 0, 6) == pytest.approx(100.0)
    assert _level(t, 0, 2) == "XGMI1" and q.theoretical_gb_per_s(t, 0, 2) == pytest.approx(50.0)
    level = q.pair_level(t, 0, 3)
    assert level.family == "XGMI-HOP" and level.count == 2
    # in-package pairs and the published single/double links; everything else is routed over a GCD
    direct = {(0, 1): 4, (2, 3): 4, (4, 5): 4, (6, 7): 4, (0, 6): 2, (2, 4): 2, (0, 2): 1, (1, 3): 1, (4, 6): 1,
              (5, 7): 1, (1, 5): 1, (3, 7): 1}
    for g, h in _gpu_pairs(t):
        pair = (g.index, h.index)
        if pair in direct:
            assert _level(t, g, h) == f"XGMI{direct[pair]}"
        else:
            assert q.pair_level(t, g, h).family == "XGMI-HOP"
    # every package has 5 GPU-GPU links to the other packages (LUMI guide)
    for p in range(4):
        ids = {f"gcd{2 * p}", f"gcd{2 * p + 1}"}
        external = sum(link.count for link in t.links
                       if link.kind is LinkKind.XGMI and len(ids & {link.a, link.b}) == 1
                       and t.device(link.other(next(iter(ids & {link.a, link.b})))).is_gpu)
        assert external == 5


def test_mi250x_nics_and_cores():
    t = load_preset("mi250x-8gcd")
    for g in range(8):
        assert [n.device_name for n in q.nearest_nics(t, g)] == [f"hsn{g // 2}"]
    assert q.nearest_cores(t, 0) == tuple(range(48, 64)) + tuple(range(112, 128))
    assert t.gpu(0).attributes["closest_cores"] == "48-55,112-119"
    assert q.nearest_cores(t, 4) == tuple(range(0, 16)) + tuple(range(64, 80))
    assert {link.capacity_gb_per_s for link in t.links if link.kind is LinkKind.XGMI
            and "cpu" in (link.a[:3], link.b[:3])} == {36.0}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_nearest_nic_is_the_nic_at_the_closest_level(name):
    """``topo`` shows levels and the nearest NIC side by side: they must tell the same story."""
    t = load_preset(name)
    nics = t.of_kind(DeviceKind.NIC)
    for g in t.gpus:
        if not nics:
            continue
        distances = {nic.id: q.distance(t, g, nic) for nic in nics}
        closest = {nic_id for nic_id, d in distances.items() if d == min(distances.values())}
        assert {n.id for n in q.nearest_nics(t, g)} == closest, (g.label, distances)


def test_mi250x_gcd_sees_its_package_nic_at_pix_and_the_others_at_pxb():
    t = load_preset("mi250x-8gcd")
    for g in range(8):
        codes = [_level(t, g, nic) for nic in t.of_kind(DeviceKind.NIC)]
        assert codes == ["PIX" if i == g // 2 else "PXB" for i in range(4)], (g, codes)


# ---- k80-16 ----------------------------------------------------------------------------------------

def test_k80_has_exactly_four_levels_with_non_increasing_bandwidth():
    t = load_preset("k80-16")
    assert t.gpu_count == 16
    assert _level(t, 0, 1) == "PIX"
    assert _level(t, 0, 2) == "PXB"
    assert _level(t, 0, 4) == "PHB"
    assert _level(t, 0, 8) == "SYS"
    by_level: dict[str, list[float]] = {}
    for g, h in _gpu_pairs(t):
        by_level.setdefault(_level(t, g, h), []).append(q.theoretical_gb_per_s(t, g, h))
    order = ["PIX", "PXB", "PHB", "SYS"]
    assert set(by_level) == set(order)
    for closer, farther in itertools.pairwise(order):
        assert max(by_level[farther]) <= min(by_level[closer])
    # no P2P across QPI: stated as the preset's p2p_max_level (the QPI link keeps its physical capacity)
    assert t.peer_access.max_level == "PHB" and "p2p_max_level" not in t.model_params
    assert len(by_level["PIX"]) == 8  # one pair per board


# ---- dgx-h100 / dgx-a100 ---------------------------------------------------------------------------

def test_dgx_h100_compute_nic_per_gpu_and_nvidia_smi_levels():
    t = load_preset("dgx-h100")
    expected = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
    for g, nic in enumerate(expected):
        assert [n.device_name for n in q.nearest_nics(t, g)] == [nic]
        assert _level(t, g, nic) == "PXB"
    for g, h in _gpu_pairs(t):
        assert _level(t, g, h) == "NV18"
        assert q.theoretical_gb_per_s(t, g, h) == pytest.approx(478.1, abs=0.05)
    # the rest of the nvidia-smi topo -m matrix in vllm-project/vllm#6746
    assert _level(t, 0, "mlx5_3") == "NODE"
    assert _level(t, 0, "mlx5_1") == "NODE"
    assert _level(t, 0, "mlx5_6") == "SYS"
    assert _level(t, "mlx5_1", "mlx5_2") == "PIX"
    assert _level(t, "mlx5_0", "mlx5_3") == "NODE"
    assert q.nearest_cores(t, 0) == tuple(range(0, 56)) + tuple(range(112, 168))
    assert q.nearest_cores(t, 7) == tuple(range(56, 112)) + tuple(range(168, 224))
    assert t.device("nvswitch").attributes["physical_switches"] == 4


def test_dgx_a100_two_nics_tie_for_each_gpu_of_a_switch():
    t = load_preset("dgx-a100")
    pairs = {0: ("mlx5_0", "mlx5_1"), 2: ("mlx5_2", "mlx5_3"), 4: ("mlx5_6", "mlx5_7"), 6: ("mlx5_8", "mlx5_9")}
    for first, nics in pairs.items():
        for g in (first, first + 1):
            # nearest_nics cannot tell GPU0 -> mlx5_0 from GPU1 -> mlx5_1: both NICs come back, PXB each
            assert {n.device_name for n in q.nearest_nics(t, g)} == set(nics)
            assert all(_level(t, g, nic) == "PXB" for nic in nics)
    for g, h in _gpu_pairs(t):
        assert _level(t, g, h) == "NV12"
        assert q.theoretical_gb_per_s(t, g, h) == pytest.approx(300.0)
    assert _level(t, 0, "mlx5_2") == "SYS"  # another NUMA node (NPS4), as nvidia-smi shows
    numa = [q.local_cpu(t, g).numa_node for g in range(8)]
    assert numa == [3, 3, 1, 1, 7, 7, 5, 5]
    assert q.nearest_cores(t, 0) == tuple(range(48, 64)) + tuple(range(176, 192))
    assert len(t.of_kind(DeviceKind.CPU)) == 8


# ---- pcie-8gpu-2socket / v100-4-nvlink-ib ----------------------------------------------------------

def test_pcie_8gpu_2socket_levels_and_nics():
    t = load_preset("pcie-8gpu-2socket")
    assert _level(t, 0, 1) == "PIX"
    assert _level(t, 0, 4) == "SYS"
    assert q.theoretical_gb_per_s(t, 0, 1) == pytest.approx(31.5)
    assert [n.device_name for n in q.nearest_nics(t, 0)] == ["mlx5_0"]
    assert [n.device_name for n in q.nearest_nics(t, 7)] == ["mlx5_1"]
    assert _level(t, 0, "mlx5_1") == "SYS"


def test_v100_pairs_on_nvlink_and_one_hca_per_socket():
    t = load_preset("v100-4-nvlink-ib")
    assert _level(t, 0, 1) == "NV2" and _level(t, 2, 3) == "NV2"
    assert q.theoretical_gb_per_s(t, 0, 1) == pytest.approx(50.0)
    assert _level(t, 0, 2) == "SYS"
    assert q.theoretical_gb_per_s(t, 0, 2) == pytest.approx(15.75)
    assert [n.device_name for n in q.nearest_nics(t, 1)] == ["mlx5_0"]
    assert [n.device_name for n in q.nearest_nics(t, 2)] == ["mlx5_1"]
    assert _level(t, 0, "mlx5_0") == "PIX" and _level(t, 0, "mlx5_1") == "SYS"
    assert q.nearest_cores(t, 3) == tuple(range(18, 36)) + tuple(range(54, 72))
    assert "all-to-all" in t.description


# ---- mi300x-8, mi325x-8 ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "key"), [("mi300x-8", "mi300x"), ("mi325x-8", "mi325x")])
def test_mi300_class_presets_are_a_full_xgmi_mesh_whose_gpus_resolve_to_the_facts(name: str, key: str) -> None:
    """8 GPUs, one xGMI link per pair (seven links a GPU; AMD MI300X/MI325X datasheets, cited in
    gpufacts), each at the facts table's per-link rate, not at an amdsmi min_bandwidth reading."""
    from linkscope.topology.gpufacts import facts_of_device, gpu_facts_by_key

    t = load_preset(name)
    facts = gpu_facts_by_key(key)
    assert facts is not None and t.gpu_count == 8
    assert all(facts_of_device(g) == facts for g in t.gpus)
    for g, h in _gpu_pairs(t):
        (link,) = q.route(t, g.id, h.id)
        assert link.kind.value == "xgmi" and link.count == 1
        assert link.capacity_gb_per_s == facts.xgmi_gb_per_s_per_link
        assert _level(t, g.id, h.id).startswith("XGMI")
    per_gpu = {g.id: sum(1 for l in t.links if l.kind.value == "xgmi" and g.id in (l.a, l.b)) for g in t.gpus}
    assert set(per_gpu.values()) == {facts.xgmi_links}


def test_mi300x_usable_xgmi_rate_is_amds_documented_figure_and_the_preset_says_so() -> None:
    """AMD ROCm blog (mi300x-rccl-xgmi): 64 GB/s raw per link, ~48 GB/s usable after CRC and protocol
    overhead. The preset's links keep the raw rate (the capacity) and name the usable one."""
    from linkscope.topology.gpufacts import gpu_facts_by_key

    facts = gpu_facts_by_key("mi300x")
    assert facts is not None and facts.xgmi_gb_per_s_per_link == 64.0
    assert facts.xgmi_usable_gb_per_s_per_link == 48.0
    assert "rocm.blogs.amd.com" in facts.sources["xgmi_usable_gb_per_s_per_link"]
    t = load_preset("mi300x-8")
    xgmi = [link for link in t.links if link.kind.value == "xgmi"]
    assert xgmi and all("usable about 48 GB/s" in (link.source or "") for link in xgmi)


# ---- hgx-a100-8-4nic ---------------------------------------------------------------------------------
def test_hgx_a100_4nic_one_hdr_nic_per_two_gpus_and_a_cluster_of_them():
    """NVIDIA/nccl-tests#119's node: 8 x A100 SXM4 NV12, 2 x Xeon 8358, 4 HDR NICs (one per PCIe switch)."""
    from linkscope.topology.synthetic import synthetic_topology

    t = load_preset("hgx-a100-8-4nic")
    assert len(t.gpus) == 8 and {g.name for g in t.gpus} == {"NVIDIA A100-SXM4-40GB"}
    assert {_level(t, g, h) for g, h in _gpu_pairs(t)} == {"NV12"}
    assert all(q.theoretical_gb_per_s(t, g, h) == pytest.approx(300.0) for g, h in _gpu_pairs(t))
    nics = t.of_kind(DeviceKind.NIC)
    assert len(nics) == 4 and {n.line_rate_gbit_per_s for n in nics} == {200.0}
    served = {}
    for g in t.gpus:
        (nic,) = q.nearest_nics(t, g)
        assert _level(t, g, nic) == "PIX"
        served.setdefault(nic.device_name, []).append(g.index)
    assert served == {"mlx5_0": [0, 1], "mlx5_1": [2, 3], "mlx5_2": [4, 5], "mlx5_3": [6, 7]}
    c = synthetic_topology("cluster:hgx-a100-8-4nic:3")
    assert len(c.gpus) == 24
    assert len([link for link in c.links if link.kind is LinkKind.NETWORK]) == 12 + 4  # 4 NICs x 3 nodes, 4 rails
    assert q.theoretical_gb_per_s(c, 0, 8) == pytest.approx(25.0)  # one HDR NIC, 200 Gb/s / 8
