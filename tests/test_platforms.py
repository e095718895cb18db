"""The platform table is the one place that picks a vendor: every consumer reads it."""
from __future__ import annotations

from linkscope import platforms
from linkscope.discovery import registry as discovery_registry
from linkscope.engines import registry as engine_registry
from linkscope.engines.gpu.runtime import VENDOR_OF_PLATFORM
from linkscope.patterns.methods import VENDORS


def test_every_reference_in_the_table_resolves() -> None:
    for p in platforms.PLATFORMS:
        refs = [p.engine_factory, p.engine_probe, p.discover, p.counters,
                *(ref for _, ref in p.env_rows), *(ref for _, ref in p.version_probes)]
        for ref in filter(None, refs):
            assert callable(platforms.load(ref)), ref
        assert set(p.discovery_backends) <= set(discovery_registry.PROBES)


def test_consumers_follow_the_table() -> None:
    assert engine_registry.engine_names() == ("auto", *(p.engine for p in platforms.PLATFORMS))
    assert VENDOR_OF_PLATFORM == {"cuda": "nvidia", "rocm": "amd"}
    assert set(VENDORS) == {p.key for p in platforms.hardware_platforms()}


def test_a_new_platform_row_reaches_the_engine_registry(monkeypatch) -> None:
    """A third vendor is one row: --backend accepts its engine without touching the registry."""
    import dataclasses

    from linkscope.topology.synthetic import synthetic_topology

    extra = dataclasses.replace(platforms.SIM, key="levelzero-sim", engine="lz")
    monkeypatch.setattr(platforms, "PLATFORMS", (*platforms.PLATFORMS, extra))
    engine = engine_registry.create_engine("lz", synthetic_topology("nvswitch:2"))
    assert engine.capabilities().provenance == "simulated"
