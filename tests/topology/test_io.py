import json

import pytest

from linkscope.errors import SchemaError, TopologyError, UserError
from linkscope.topology import io
from linkscope.topology.synthetic import synthetic_topology

jsonschema = pytest.importorskip("jsonschema")


@pytest.mark.parametrize("spec", ["nvswitch:4", "pcie:2x4", "nvswitch:8:12:25"])
def test_round_trip_and_schema(spec):
    t = synthetic_topology(spec)
    data = io.to_dict(t)
    jsonschema.validate(data, json.loads(io.SCHEMA_FILE.read_text()))
    assert io.loads(io.dumps(t)) == t


def test_malformed_json_is_one_clear_line(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text("{not json")
    with pytest.raises(SchemaError, match="not valid JSON"):
        io.load(bad)


def test_wrong_version_and_kind_name_the_path():
    data = io.to_dict(synthetic_topology("nvswitch:2"))
    newer = dict(data, schema_version=99)
    with pytest.raises(SchemaError, match="newer"):
        io.from_dict(newer)
    broken = json.loads(json.dumps(data))
    broken["devices"][2]["kind"] = "quantum"
    with pytest.raises(SchemaError, match=r"\$\.devices\[2\]\.kind"):
        io.from_dict(broken)
    broken = json.loads(json.dumps(data))
    del broken["links"][0]["count"]
    with pytest.raises(SchemaError, match=r"\$\.links\[0\]"):
        io.from_dict(broken)
    broken = json.loads(json.dumps(data))
    broken["links"][0]["b"] = "gpu42"
    with pytest.raises(TopologyError, match="gpu42"):
        io.from_dict(broken)


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="not found"):
        io.load(tmp_path / "nope.json")
