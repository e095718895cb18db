import json

import pytest

from linkscope.errors import SchemaError
from linkscope.measure.stats import Stats
from linkscope.results import io
from linkscope.results.schema import Measurement, RunProvenance, RunRecord, Status


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
