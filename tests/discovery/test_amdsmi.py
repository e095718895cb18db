from __future__ import annotations

import pytest

from linkscope.discovery import amdsmi, auto, rocm
from linkscope.errors import BackendUnavailable
from linkscope.topology import query
from linkscope.topology.model import LinkKind, Provenance
from tests.discovery.discovery_fakes import MI250X_LINKS
from tests.discovery.fake_amdsmi import FakeAmdSmi


def _xgmi(topo):
    return {(int(l.a[3:]), int(l.b[3:])): l for l in topo.links if l.kind is LinkKind.XGMI}


@pytest.mark.parametrize("layout", ["6", "7"])
@pytest.mark.parametrize("gpu", ["mi250x", "mi300x"])
def test_upstream_link_metrics_placeholders_fall_back_to_bandwidth(layout: str, gpu: str) -> None:
    """Upstream fills all 8 link-metric slots, types each XGMI and leaves the peer unset: the
    links still come out, counted from max/min bandwidth, and the topology says so (the old code
    counted 0 links per pair and dropped every one, silently)."""
    fake = FakeAmdSmi(layout=layout, gpu=gpu)
    topo = amdsmi.discover(module=fake)
    links = _xgmi(topo)
    assert {tuple(sorted(k)): l.count for k, l in links.items()} == fake.graph
    rate = fake.link_mbps / 1000
    assert all(l.provenance is Provenance.OS and l.link_gb_per_s == rate for l in links.values())
    assert all("link count from amdsmi max/min bandwidth" in l.source for l in links.values())
    # 7.x: the slots are placeholders; 6.x: the Python layer has no amdsmi_get_link_metrics at all
    # (ROCm/amdsmi rocm-6.0.0 ... rocm-6.2.2 py-interface/amdsmi_interface.py), so it always falls back
    why = "placeholder" if layout == "7" else "not available"
    assert any(why in n and "max/min bandwidth" in n for n in topo.notes)


def test_resolved_peer_addresses_count_links_directly() -> None:
    """7.x with the xgmi port map: the slots name their peers, and the count comes from them."""
    fake = FakeAmdSmi(layout="7", resolve_peers=True)
    fake.amdsmi_get_minmax_bandwidth_between_processors = lambda a, b: {"min_bandwidth": 50000, "max_bandwidth": 50000}
    links = _xgmi(amdsmi.discover(module=fake))
    assert {tuple(sorted(k)): l.count for k, l in links.items()} == MI250X_LINKS  # not max/min (which says 1)
    assert all("amdsmi_get_link_metrics peer addresses" in l.source for l in links.values())


def test_mi250x_facts_and_levels() -> None:
    topo = amdsmi.discover(module=FakeAmdSmi())
    assert topo.gpu(0).name == "AMD Instinct MI250X" and topo.gpu(4).numa_node == 0
    assert topo.gpu(2).pci_bus_id == "0000:c9:00.0" and topo.gpu(0).ordinals == {"amd": 0}
    assert str(query.pair_level(topo, 0, 1)) == "XGMI4" and str(query.pair_level(topo, 0, 7)).startswith("XGMI-")
    assert not any("hops is 1" in n for n in topo.notes)


def test_numa_4294967295_is_unknown() -> None:
    """amdsmi_topo_get_numa_node_number is a c_uint32: the kernel's -1 arrives as 2**32-1."""
    topo = amdsmi.discover(module=FakeAmdSmi(numa_unknown=True))
    assert all(g.numa_node is None for g in topo.gpus)
    assert any("4294967295" in n for n in topo.notes)


@pytest.mark.parametrize("layout", ["6", "7"])
def test_enum_layouts_6_and_7(layout: str) -> None:
    fake = FakeAmdSmi(layout=layout)
    io_xgmi, slot_xgmi = amdsmi.xgmi_type_values(fake)
    assert (io_xgmi, slot_xgmi) == ((2, 1) if layout == "6" else (2, 2))
    pcie = 1  # PCIe pair: AmdSmiIoLinkType.PCIEXPRESS (6.x) and AMDSMI_LINK_TYPE_PCIE (7.x) are both 1
    fake.amdsmi_topo_get_link_type = lambda a, b: {"hops": 2, "type": pcie}
    assert not _xgmi(amdsmi.discover(module=fake))


def test_older_amdsmi_without_link_metrics_uses_max_over_min() -> None:
    topo = amdsmi.discover(module=FakeAmdSmi(with_link_metrics=False))
    assert {tuple(sorted(k)): l.count for k, l in _xgmi(topo).items()} == MI250X_LINKS
    assert any("link_metrics not available" in n for n in topo.notes)


def test_same_topology_as_the_text_parsers() -> None:
    from pathlib import Path

    machine = Path(__file__).resolve().parents[1] / "fixtures" / "machines" / "mi250x-8gcd"
    outputs = {n: (machine / n).read_text() for n in rocm.COMMANDS if (machine / n).exists()}
    text = rocm.facts_to_topology(rocm.parse_outputs(outputs))
    live = amdsmi.discover(module=FakeAmdSmi())
    assert [str(query.pair_level(live, 0, j)) for j in range(1, 8)] == \
        [str(query.pair_level(text, 0, j)) for j in range(1, 8)]


def test_probe_reasons() -> None:
    assert amdsmi.probe(FakeAmdSmi()).ok
    bad = amdsmi.probe(FakeAmdSmi(fail_init=True))
    assert not bad.ok and "amdsmi" in bad.reason
    real = amdsmi.probe()  # no amdsmi package on the CPU machine
    assert not real.ok and real.reason


def test_live_discovery_prefers_amdsmi_then_falls_back(monkeypatch) -> None:
    monkeypatch.setattr(auto.nvml, "probe", lambda *a, **k: amdsmi.Availability("nvml", False, "no NVIDIA driver"))
    fake = FakeAmdSmi()
    monkeypatch.setattr(amdsmi, "import_amdsmi", lambda: (fake.amdsmi_init(), fake)[1])
    topo = auto.discover_live(sysfs_root=None)
    assert topo.is_this_system and topo.gpu_count == 8 and topo.source.startswith("amdsmi")
    monkeypatch.setattr(amdsmi, "import_amdsmi", lambda: (_ for _ in ()).throw(BackendUnavailable("no amdsmi")))
    monkeypatch.setattr(auto.rocm, "probe", lambda *a, **k: amdsmi.Availability("rocm", False, "no rocm-smi"))
    try:
        auto.discover_live(sysfs_root=None)
    except BackendUnavailable as exc:
        assert "amdsmi" in str(exc) and "rocm-smi" in str(exc)
    else:
        raise AssertionError("expected BackendUnavailable")


def test_raw_recording_keeps_amdsmi_facts(tmp_path) -> None:
    from linkscope.discovery import raw

    written = raw.export_raw(tmp_path / "rec", amdsmi_module=FakeAmdSmi(), which=lambda _: None)
    assert (tmp_path / "rec" / "amdsmi.json") in written
    topo = raw.load_recording(tmp_path / "rec")
    assert topo.gpu_count == 8 and {tuple(sorted(k)): l.count for k, l in _xgmi(topo).items()} == MI250X_LINKS
