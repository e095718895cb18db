import json

import pytest

from linkscope.errors import SchemaError
from linkscope.results import io
from linkscope.results.schema import Measurement, RunProvenance, RunRecord, Status
from linkscope.results.stats import Stats


def record():
    ok = Measurement(0, 1, "ce", "matrix", "uni", 1 << 20, 1 << 20, Stats.from_samples([390.0, 394.0, 396.0]))
    lat = Measurement(0, 1, "remote-read", "latency", "uni", 8, 0, None, Stats.from_samples([0.8, 0.82]))
    waived = Measurement(0, 1, "ce-nopeer", "matrix", "uni", 1 << 20, status=Status.WAIVED, reason="no peer access")
    return RunRecord("bench", RunProvenance.MEASURED, "2026-11-22T00:00:00Z", {"host": "x"}, {"sizes": [1 << 20]},
                     None, (ok, lat, waived))


def test_round_trip_and_field_names(tmp_path):
    path = tmp_path / "run.json"
    io.save(record(), path)
    data = json.loads(path.read_text())
    m = data["measurements"][0]
    for key in ("src", "dst", "method", "pattern", "direction", "size_bytes", "moved_bytes", "median_gb_per_s",
                "min_gb_per_s", "max_gb_per_s", "mean_gb_per_s", "stddev_gb_per_s", "cv", "n", "latency_us",
                "status", "reason", "provenance"):
        assert key in m
    assert m["median_gb_per_s"] == 394.0
    assert data["measurements"][1]["latency_us"] == pytest.approx(0.81)
    assert data["measurements"][2]["median_gb_per_s"] is None  # missing is null, not zero
    assert io.load(path) == record()


def test_wrong_schema_is_clear(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"format": "linkscope.topology", "schema_version": 1}))
    with pytest.raises(SchemaError, match="not a linkscope run record"):
        io.load(path)
    path.write_text(json.dumps({"format": "linkscope.run", "schema_version": 7, "measurements": []}))
    with pytest.raises(SchemaError, match="newer"):
        io.load(path)


def test_load_refuses_nan_wrong_endpoints_and_names_other_linkscope_files(tmp_path):
    def write(data, text=None):
        path = tmp_path / "r.json"
        path.write_text(text if text is not None else json.dumps(data))
        return path

    m = {"src": 0, "dst": 1, "method": "ce", "pattern": "matrix", "size_bytes": 8, "median_gb_per_s": 1.0}
    base = {"format": "linkscope.run", "schema_version": 1}
    with pytest.raises(SchemaError, match="NaN is not a number JSON allows"):
        io.load(write(None, json.dumps({**base, "measurements": [{**m, "median_gb_per_s": float("nan")}]})))
    with pytest.raises(SchemaError, match="must be a finite number"):
        io.from_dict({**base, "measurements": [{**m, "latency_us": float("inf")}]})
    with pytest.raises(SchemaError, match=r"src must be a GPU index.*\$\.measurements\[0\]\.src"):
        io.load(write({**base, "measurements": [{**m, "src": {"gpu": 0}}]}))
    with pytest.raises(SchemaError, match="unknown run record schema version 0"):
        io.load(write({**base, "schema_version": 0, "measurements": []}))
    with pytest.raises(SchemaError, match="this is a topology file") as info:
        io.load(write({"format": "linkscope.topology", "schema_version": 1}))
    assert "bench --json" in info.value.one_line()
