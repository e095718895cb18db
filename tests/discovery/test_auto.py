from __future__ import annotations

from pathlib import Path

import pytest

from linkscope.discovery import auto, nvml, rocm
from linkscope.discovery.base import Availability
from linkscope.errors import BackendUnavailable, ConfigError, UserError
from linkscope.topology import io, presets
from linkscope.topology.model import DeviceKind
from linkscope.topology.synthetic import synthetic_topology
from tests.discovery.discovery_fakes import build_pcie_2s_sysfs, pcie_2s_nvml


def _no_gpu() -> None:
    raise BackendUnavailable("no GPU discovered here (NVML: NVML library not found: counters and live discovery "
                             "need an NVIDIA driver; ROCm: neither amd-smi nor rocm-smi is on PATH (no ROCm install))")


def test_more_than_one_source_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="choose one topology source, got --preset a and --synthetic pcie:1x2"):
        auto.resolve_topology("a", None, "pcie:1x2", allow_fallback=True)


def test_synthetic_and_file_sources(tmp_path: Path) -> None:
    topo, note = auto.resolve_topology(synthetic="pcie:2x2", allow_fallback=False)
    assert topo.gpu_count == 4 and note is None
    path = tmp_path / "t.json"
    io.save(synthetic_topology("nvswitch:4"), path)
    loaded, note = auto.resolve_topology(from_file=str(path), allow_fallback=False)
    assert loaded.gpu_count == 4 and note is None
    with pytest.raises(UserError, match="topology file not found"):
        auto.resolve_topology(from_file=str(tmp_path / "missing.json"), allow_fallback=True)


def test_unknown_preset_lists_valid_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(presets, "preset_names", lambda: ["dgx-h100", "hgx-h200-4"])
    with pytest.raises(UserError) as info:
        auto.resolve_topology(preset="dgx-h1000", allow_fallback=True)
    assert "unknown preset 'dgx-h1000'" in info.value.one_line()
    assert "valid presets: dgx-h100, hgx-h200-4" in info.value.one_line()


def test_live_discovery_is_used_when_nothing_is_named() -> None:
    live = synthetic_topology("nvswitch:2").replace(is_this_system=True)
    topo, note = auto.resolve_topology(allow_fallback=True, discover=lambda: live)
    assert topo is live and note is None


def test_fallback_note_names_the_reason_and_the_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in = synthetic_topology("nvswitch:4")
    monkeypatch.setattr(auto, "load_preset", lambda name: stand_in.replace(name=name, source=f"preset:{name}"))
    topo, note = auto.resolve_topology(allow_fallback=True, discover=_no_gpu)
    assert note == ("no GPU discovered here (NVML: NVML library not found: counters and live discovery need an NVIDIA "
                    "driver; ROCm: neither amd-smi nor rocm-smi is on PATH (no ROCm install)): using the simulated "
                    "default preset hgx-h200-4")
    assert topo.name == "hgx-h200-4" and not topo.is_this_system and note in topo.notes


def test_without_fallback_the_reason_is_raised() -> None:
    with pytest.raises(BackendUnavailable, match="no GPU discovered here"):
        auto.resolve_topology(allow_fallback=False, discover=_no_gpu)


@pytest.mark.skipif("hgx-h200-4" not in (presets.preset_names() if (Path(presets.__file__).parent / "presets").is_dir() else []),
                    reason="preset files not installed yet")
def test_real_fallback_preset_loads() -> None:
    topo, note = auto.resolve_topology(allow_fallback=True, discover=_no_gpu)
    assert topo.gpu_count == 4 and note and "hgx-h200-4" in note
    with pytest.raises(UserError) as info:
        auto.resolve_topology(preset="no-such-machine", allow_fallback=True)
    assert "valid presets: " in info.value.one_line() and "hgx-h200-4" in info.value.one_line()


def test_discover_live_without_backends_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvml, "probe", lambda: Availability("nvml", False, "NVML library not found: x"))
    monkeypatch.setattr(rocm, "probe", lambda: Availability("rocm", False, "no rocm tools"))
    with pytest.raises(BackendUnavailable, match=r"no GPU discovered here \(NVML: NVML library not found: x; amdsmi: .*; ROCm: no rocm "
                                                 r"tools\)"):
        auto.discover_live()


def test_discover_live_merges_nvml_and_sysfs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    build_pcie_2s_sysfs(tmp_path)
    fake = pcie_2s_nvml()
    monkeypatch.setattr(nvml, "_import_pynvml", lambda: fake)
    topo = auto.discover_live(sysfs_root=tmp_path)
    assert topo.is_this_system and topo.source == "nvml+sysfs"
    assert len(topo.of_kind(DeviceKind.PCIE_SWITCH)) == 2 and topo.gpu_count == 8


def test_discover_live_without_sysfs_notes_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = pcie_2s_nvml()
    monkeypatch.setattr(nvml, "_import_pynvml", lambda: fake)
    topo = auto.discover_live(sysfs_root=tmp_path)
    assert topo.source == "nvml" and any("no sysfs PCI tree" in n for n in topo.notes)


def test_discover_live_on_this_machine_is_clear() -> None:
    try:
        topo = auto.discover_live()
    except BackendUnavailable as exc:
        assert str(exc).startswith("no GPU discovered here (NVML: ")
    else:
        assert topo.is_this_system and topo.gpu_count >= 1
