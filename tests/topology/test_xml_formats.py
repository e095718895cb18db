"""hwloc XML and NCCL topology XML: import from real tool output, export for NCCL, safe parsing."""
from __future__ import annotations

import json
from pathlib import Path
from xml.etree.ElementTree import tostring

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkscope.cli import main
from linkscope.discovery import nccl_xml, xmlfile
from linkscope.discovery.auto import resolve_topology
from linkscope.discovery.hwloc_xml import parse_bitmap
from linkscope.errors import LinkscopeError, UserError
from linkscope.topology import query
from linkscope.topology.model import DeviceKind, LinkKind, Provenance
from linkscope.topology.presets import load_preset

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
DEVBOX = FIXTURES / "hwloc" / "devbox-2core.xml"  # lstopo 2.9.0 --of xml on the 2-core CPU machine
DGX2 = FIXTURES / "hwloc" / "hwloc-test-nvidiaDGX2.xml"  # open-mpi/hwloc tests/hwloc/xml/nvidiaDGX2.xml
POWER8 = FIXTURES / "hwloc" / "hwloc-test-power8gpudistances.xml"  # open-mpi/hwloc tests/hwloc/xml/
NCCL_H100 = FIXTURES / "nccl" / "h100-8gpu-nvswitch.xml"


def test_lstopo_of_the_cpu_machine_imports_host_and_nic() -> None:
    topo = xmlfile.load(DEVBOX)
    assert topo.gpu_count == 0 and not topo.is_this_system
    (cpu,) = topo.of_kind(DeviceKind.CPU)
    assert cpu.cores == (0, 1) and cpu.memory_bytes == 10966216704
    (nic,) = topo.of_kind(DeviceKind.NIC)
    assert nic.device_name == "eth0" and nic.pci_bus_id == "0000:00:03.0" and nic.line_rate_gbit_per_s is None
    link = next(l for l in topo.links_of("eth0"))
    assert "assumed" in (link.generation or "") and any("0000:00:03.0" in n for n in topo.notes)
    assert any("NIC line rates" in n for n in topo.notes)


def test_hwloc_dgx2_nvswitch_pcie_tree_and_numa() -> None:
    topo = xmlfile.load(DGX2)
    assert topo.gpu_count == 16
    assert topo.gpu(0).name == "Tesla V100-SXM3-32GB-H" and topo.gpu(0).uuid.startswith("GPU-d3977428")
    assert topo.gpu(0).nvml_index == 0 and topo.gpu(0).pci_bus_id == "0000:34:00.0"
    (plane,) = topo.of_kind(DeviceKind.NVSWITCH)
    assert plane.attributes["physical_switches"] == 12
    to_plane = [l for l in topo.links if l.b == "nvswitch"]
    assert len(to_plane) == 16 and {(l.count, l.link_gb_per_s) for l in to_plane} == {(6, 25.0)}
    assert all(l.provenance is Provenance.OS for l in to_plane)
    assert str(query.pair_level(topo, 0, 15)) == "NV6" and query.theoretical_gb_per_s(topo, 0, 15) == 150.0
    # PCIe: two levels of PLX switches under each root complex, Gen3 x16 as hwloc gives it
    assert len(topo.of_kind(DeviceKind.PCIE_SWITCH)) == 12 and len(topo.of_kind(DeviceKind.HOST_BRIDGE)) == 4
    gpu_link = next(l for l in topo.links_of("gpu0") if l.kind is LinkKind.PCIE)
    assert gpu_link.link_gb_per_s == pytest.approx(15.754, abs=1e-3)
    assert {topo.gpu(i).numa_node for i in range(8)} == {0} and {topo.gpu(i).numa_node for i in range(8, 16)} == {1}


def test_hwloc_power8_direct_nvlinks_and_nvlink_to_cpu() -> None:
    topo = xmlfile.load(POWER8)
    assert topo.gpu_count == 4
    pairs = {frozenset((l.a, l.b)): l for l in topo.links if l.kind is LinkKind.NVLINK}
    # 40000 MB/s between GPU pairs = 2 x NVLink1 (20000 per link in hwloc)
    assert pairs[frozenset(("gpu0", "gpu1"))].count == 2 and pairs[frozenset(("gpu0", "gpu1"))].link_gb_per_s == 20.0
    assert frozenset(("gpu0", "cpu0")) in pairs and frozenset(("gpu2", "cpu1")) in pairs
    assert frozenset(("gpu0", "gpu2")) not in pairs  # hwloc says 0: not invented
    assert str(query.pair_level(topo, 0, 1)) == "NV2"


def test_nccl_dump_imports_switches_nics_and_nvswitch() -> None:
    topo = xmlfile.load(NCCL_H100)
    assert topo.gpu_count == 8 and len(topo.of_kind(DeviceKind.PCIE_SWITCH)) == 8
    assert topo.gpu(3).ordinals == {"nvidia": 3} and topo.gpu(3).pci_bus_id == "0000:5d:00.0"
    assert str(query.pair_level(topo, 0, 7)) == "NV18"
    assert query.theoretical_gb_per_s(topo, 0, 7) == pytest.approx(18 * 25.0)
    assert [d.id for d in query.nearest_nics(topo, 5)] == ["mlx5_5"]
    nic = topo.device("mlx5_5")
    assert nic.line_rate_gbit_per_s == 400.0 and nic.attributes["type"] == "infiniband"
    assert topo.device("cpu1").cores[:3] == (56, 57, 58)


def test_export_round_trip_keeps_tree_counts_and_nics() -> None:
    topo = xmlfile.load(NCCL_H100)
    text, notes = nccl_xml.export_xml(topo)
    assert "<!--" not in text and " />" not in text and not text.startswith("<?xml")
    again = nccl_xml.topology_from_xml(xmlfile.parse(text, "exported"), origin="exported")
    assert again.gpu_count == 8 and len(again.links) == len(topo.links)
    for i in range(8):
        assert again.gpu(i).pci_bus_id == topo.gpu(i).pci_bus_id
        assert [d.id for d in query.nearest_nics(again, i)] == [d.id for d in query.nearest_nics(topo, i)]
        assert query.theoretical_gb_per_s(again, 0, i) == query.theoretical_gb_per_s(topo, 0, i) if i else True
    root = xmlfile.parse(text, "x")
    cpu = root.find("cpu")
    assert cpu.get("arch") == "x86_64" and cpu.get("modelid") == "143"
    pci = cpu.find("pci/pci")
    assert pci.get("link_speed") == "32.0 GT/s PCIe" and pci.get("link_width") == "16"
    assert pci.find("gpu/nvlink").get("count") == "18" and pci.find("gpu/nvlink").get("tclass") == "0x068000"


@pytest.mark.parametrize("source", ["preset", "hwloc", "synthetic"])
def test_export_from_any_topology(source: str) -> None:
    topo = {"preset": lambda: load_preset("hgx-h200-4"), "hwloc": lambda: xmlfile.load(DGX2),
            "synthetic": lambda: resolve_topology(synthetic="pcie:2x4", allow_fallback=False)[0]}[source]()
    text, notes = nccl_xml.export_xml(topo, placeholders=True)
    again = nccl_xml.topology_from_xml(xmlfile.parse(text, "e"), origin="e")
    assert again.gpu_count == topo.gpu_count
    assert [str(query.pair_level(again, 0, j)) for j in range(1, topo.gpu_count)] == \
        [str(query.pair_level(topo, 0, j)) for j in range(1, topo.gpu_count)]
    if source != "hwloc":
        assert any("placeholder" in n for n in notes)  # presets have no bus ids: said, not hidden
        assert xmlfile.parse(text, "e").get(nccl_xml.PLACEHOLDER_ATTRIBUTE)  # and in the file itself
        with pytest.raises(UserError, match="no PCI bus id"):  # without the flag: refused
            nccl_xml.export_xml(topo)
    else:
        assert nccl_xml.PLACEHOLDER_ATTRIBUTE not in text


def test_sniffing_and_cli_round_trip(tmp_path: Path, capsys) -> None:
    out = tmp_path / "n.xml"
    assert main(["topo", "--from", str(DGX2), "--export", "nccl-xml", "-o", str(out)]) == 0
    assert out.read_text().startswith('<system version="1"')
    no_suffix = tmp_path / "dump"
    no_suffix.write_text(out.read_text())
    assert main(["topo", "--from", str(no_suffix), "--json", "-"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert sum(1 for d in data["devices"] if d["kind"] == "gpu") == 16
    assert main(["topo", "--preset", "hgx-h200-4", "--export", "nccl-xml"]) == 1
    assert "--export needs -o" in capsys.readouterr().err


def test_map_and_sim_bench_on_imported_hwloc(tmp_path: Path, capsys) -> None:
    traffic = tmp_path / "t.json"
    assert main(["traffic", "gen", "ring", "--ranks", "8", "-o", str(traffic)]) == 0
    assert main(["map", str(traffic), "--from", str(DGX2), "--time-limit", "1"]) == 0
    assert "gpu_of_rank" in capsys.readouterr().out
    record = tmp_path / "r.json"
    assert main(["bench", "--backend", "sim", "--from", str(DGX2), "--gpus", "0,8", "--sizes", "1MiB",
                 "--reps", "2", "--json", str(record)]) == 0
    data = json.loads(record.read_text())
    assert data["measurements"] and all(m["provenance"] == "simulated" for m in data["measurements"])


@pytest.mark.parametrize("text, message", [
    ('<!DOCTYPE x [<!ENTITY a "aaaa">]><topology version="2.0">&a;</topology>', "entity"),
    ('<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><system version="1">&e;</system>', "entity"),
    ("<topology version=\"2.0\"><object></topology>", "not well-formed"),
    ("<foo/>", "neither hwloc"),
    ('<system version="2"><cpu numaid="0"/></system>', "version"),
    ('<system version="1"/>', "no <cpu>"),
    ('<system version="1"><cpu numaid="0"><pci busid="zz" class="0x03"/></cpu></system>', "busid"),
    ('<topology version="1.0"><object type="Machine"/></topology>', "not supported"),
    ('<topology version="2.0"><object type="Machine"><object type="PCIDev" pci_busid="0000:01:00.0" '
     'pci_type="bad"/></object></topology>', "pci_type"),
])
def test_bad_files_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(UserError) as info:
        xmlfile.load(path)
    line = info.value.one_line()
    assert message in line and "\n" not in line


def test_bitmaps() -> None:
    assert parse_bitmap("0x00000303,0x03030000,,0x0") == [80, 81, 88, 89, 96, 97, 104, 105]
    assert nccl_xml.cpumask_cores("00000000,00ffffff")[-1] == 23
    assert nccl_xml.cores_cpumask((0, 1, 33)) == "00000002,00000003"


_TAGS = st.sampled_from(["system", "cpu", "pci", "gpu", "nvlink", "nic", "net", "topology", "object", "info",
                         "distances2", "indexes", "u64values"])
_ATTRS = st.dictionaries(st.sampled_from(["version", "numaid", "busid", "class", "link_speed", "link_width", "count",
                                          "tclass", "target", "type", "pci_busid", "pci_type", "os_index", "cpuset",
                                          "nbobjs", "name", "speed", "dev", "sm", "bridge_type", "bridge_pci"]),
                         st.text(alphabet="0123456789abcdefx:.[]- GT/s", max_size=14), max_size=5)


@st.composite
def _element(draw, depth: int = 0) -> str:
    tag = draw(_TAGS)
    attrs = " ".join(f'{k}="{v}"' for k, v in draw(_ATTRS).items())
    kids = "" if depth > 3 else "".join(draw(st.lists(_element(depth + 1), max_size=3)))
    return f"<{tag} {attrs}>{kids}</{tag}>"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_element(), st.text(max_size=200)))
def test_fuzzed_xml_never_crashes(tmp_path_factory, text: str) -> None:
    path = tmp_path_factory.mktemp("fz") / "f.xml"
    path.write_text(text)
    try:
        topo = xmlfile.load(path)
    except LinkscopeError as exc:  # UserError / TopologyError: one line, never a traceback
        assert "\n" not in exc.one_line()
    else:
        nccl_xml.export_xml(topo, placeholders=True) if topo.of_kind(DeviceKind.CPU) else None


def test_without_defusedxml_the_same_refusals(monkeypatch, tmp_path: Path) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "defusedxml", None)
    monkeypatch.setitem(sys.modules, "defusedxml.ElementTree", None)
    assert xmlfile.load(NCCL_H100).gpu_count == 8
    path = tmp_path / "bomb.xml"
    path.write_text('<!DOCTYPE x [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;">]><system version="1">&b;</system>')
    with pytest.raises(UserError, match="entity"):
        xmlfile.load(path)


def test_docs_before_after_flattened_vm_view() -> None:
    """docs/topology-files.md's simulated before/after: a VM-flattened tree vs the host's file."""
    root = xmlfile.parse(NCCL_H100.read_text(), "h100")
    flat = ['<system version="1"><cpu numaid="0" affinity="ffffffff">']
    for pci in root.iter("pci"):
        if pci.find("gpu") is not None or pci.find("nic") is not None:
            inner = "".join(tostring(c, encoding="unicode") for c in pci)
            flat.append(f'<pci busid="{pci.get("busid")}" class="{pci.get("class")}" link_speed="32.0 GT/s PCIe" '
                        f'link_width="16">{inner}</pci>')
    flat.append("</cpu></system>")
    vm = nccl_xml.topology_from_xml(xmlfile.parse("".join(flat), "vm"), origin="vm")
    host = xmlfile.load(NCCL_H100)
    assert len(query.nearest_nics(vm, 0)) == 8
    assert {str(query.pair_level(vm, "gpu0", f"mlx5_{i}")) for i in range(8)} == {"PHB"}
    assert [d.id for d in query.nearest_nics(host, 0)] == ["mlx5_0"]
    assert str(query.pair_level(host, "gpu0", "mlx5_0")) == "PIX" and str(query.pair_level(host, "gpu0", "mlx5_4")) == "SYS"


def test_real_nccl_dump_from_the_h200_vm_imports_and_reexports(tmp_path):
    """NCCL's own dump (one H200 in a VM: flattened PCIe, link_width 0) reads, and the export is
    what NCCL then loaded on that machine (docs/runs/scripts/device_ncclxml.sh, 2026-11-23)."""
    from xml.etree import ElementTree

    dump = FIXTURES / "nccl" / "h200-1gpu-dump.xml"
    topo = resolve_topology(from_file=str(dump), allow_fallback=False)[0]
    assert topo.gpu_count == 1
    assert [(d.device_name, d.line_rate_gbit_per_s) for d in topo.devices if d.kind is DeviceKind.NIC] == [("eth0", 10.0)]
    assert topo.gpu(0).pci_bus_id == "0000:00:06.0"
    out = tmp_path / "exported.xml"
    assert main(["topo", "--from", str(dump), "--export", "nccl-xml", "-o", str(out)]) == 0
    root = ElementTree.fromstring(out.read_text())
    gpus = root.findall(".//pci/gpu")
    assert len(gpus) == 1 and gpus[0].get("dev") == "0"
    assert [n.get("name") for n in root.iter("net")] == ["eth0"]
