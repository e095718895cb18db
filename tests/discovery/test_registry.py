from __future__ import annotations

import pytest

from linkscope.discovery import registry


def test_probes_cover_every_backend() -> None:
    result = registry.probes()
    assert [a.name for a in result] == ["nvml", "sysfs", "amdsmi", "rocm"]
    assert all(a.ok or a.reason for a in result)


def test_a_crashing_probe_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom():
        raise RuntimeError("bad driver")

    monkeypatch.setitem(registry.PROBES, "rocm", boom)
    rocm = registry.probes()[3]
    assert not rocm.ok and rocm.reason == "probe failed: RuntimeError: bad driver"


def test_amd_paths_say_they_never_ran_on_hardware() -> None:
    assert "no AMD GPU" in registry.TESTED_ON["amdsmi"] and "no AMD GPU" in registry.TESTED_ON["rocm"]
    assert set(registry.NAMES) <= set(registry.TESTED_ON)
