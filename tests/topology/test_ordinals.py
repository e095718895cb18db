"""A device's runtime ordinals are one map keyed by platform (``Device.ordinals``); topologies and
run records written before it stored ``cuda_ordinal`` / ``hip_ordinal`` and must load the same."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from linkscope import platforms
from linkscope.errors import SchemaError
from linkscope.results import io as results_io
from linkscope.topology import io

ROOT = Path(__file__).resolve().parents[2]
LEGACY = {p.ordinal_field: p.key for p in platforms.PLATFORMS if p.ordinal_field}


def _stored_with_legacy_fields() -> list[Path]:
    out = []
    for folder in (ROOT / "tests" / "fixtures", ROOT / "docs" / "runs"):
        for path in sorted(folder.rglob("*.json")):
            text = path.read_text(errors="replace")
            if any(f'"{field}"' in text for field in LEGACY):
                out.append(path)
    return out


def _legacy_ordinals(topology: dict) -> dict[str, dict[str, int]]:
    return {d["id"]: {LEGACY[k]: v for k, v in d.items() if k in LEGACY} for d in topology["devices"]
            if any(k in LEGACY for k in d)}


def test_old_records_are_found() -> None:
    """The scan below is not empty: fixtures and docs/runs hold files of both kinds with old fields."""
    kinds = {json.loads(p.read_text()).get("format") for p in _stored_with_legacy_fields()}
    assert {"linkscope.topology", "linkscope.run"} <= kinds


@pytest.mark.parametrize("path", _stored_with_legacy_fields(), ids=lambda p: str(p.relative_to(ROOT)))
def test_stored_files_with_the_old_ordinal_fields_still_load(path: Path) -> None:
    data = json.loads(path.read_text())
    if data["format"] == "linkscope.topology":
        raw, topology = data, io.load(path)
    else:
        raw, topology = data["topology"], io.from_dict(results_io.load(path).topology)
    want = _legacy_ordinals(raw)
    assert want, path
    for device_id, ordinals in want.items():
        assert dict(topology.device(device_id).ordinals) == ordinals
    written = io.to_dict(topology)
    assert not any(k in LEGACY for d in written["devices"] for k in d)  # written as ordinals only
    assert io.from_dict(written) == topology


def test_old_and_new_forms_give_the_same_topology() -> None:
    new = json.loads((ROOT / "tests/fixtures/machines/mi250x-8gcd/expected_topology.json").read_text())
    old = json.loads(json.dumps(new))
    for d in old["devices"]:
        for key, value in d.pop("ordinals", {}).items():
            d[next(f for f, k in LEGACY.items() if k == key)] = value
    assert any("hip_ordinal" in d for d in old["devices"])
    assert io.from_dict(old) == io.from_dict(new)
    assert io.from_dict(new).gpu(3).ordinal() == io.from_dict(new).gpu(3).ordinals["amd"]


@pytest.mark.parametrize("bad", [{"ordinals": {"nvidia": -1}}, {"ordinals": {"amd": True}}, {"ordinals": [0]},
                                 {"cuda_ordinal": "0"}])
def test_bad_ordinals_are_refused_with_their_path(bad: dict) -> None:
    data = {"format": "linkscope.topology", "schema_version": 1, "name": "t", "links": [],
            "devices": [{"id": "gpu0", "kind": "gpu", "index": 0, "vendor": "nvidia", **bad}]}
    with pytest.raises(SchemaError, match="ordinal"):
        io.from_dict(data)
