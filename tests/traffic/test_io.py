import json

import numpy as np
import pytest

from linkscope.errors import SchemaError, UserError
from linkscope.traffic.io import from_dict, load_traffic, loads_csv, save_traffic, to_dict
from linkscope.traffic.matrix import TrafficError, TrafficMatrix
from linkscope.traffic.synthetic import stencil


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".json"])
def test_round_trip_keeps_the_bytes(tmp_path, suffix):
    m = stencil((2, 3), periodic=True, size_bytes=1000)
    path = tmp_path / f"t{suffix}"
    save_traffic(m, path)
    back = load_traffic(path)
    assert np.array_equal(back.bytes, m.bytes)
    if suffix == ".json":
        assert np.array_equal(back.messages, m.messages)
        assert back.size_histogram == m.size_histogram
        assert back.origin == m.origin


def test_csv_is_n_lines_of_n_byte_counts(tmp_path):
    m = TrafficMatrix(bytes=[[0, 5], [7, 0]])
    path = tmp_path / "t.csv"
    save_traffic(m, path)
    assert path.read_text() == "0,5\n7,0\n"


def test_json_carries_format_and_version(tmp_path):
    m = TrafficMatrix(bytes=[[0, 1], [2, 0]], hosts=("a", "b"), local_ranks=(0, 0),
                      collectives={"MPI_Allreduce": {"calls": 2, "bytes": 16}})
    data = to_dict(m)
    assert data["format"] == "linkscope.traffic" and data["schema_version"] == 1
    back = from_dict(json.loads(json.dumps(data)))
    assert back.hosts == ("a", "b") and back.collectives["MPI_Allreduce"]["bytes"] == 16


def test_json_with_wrong_format_or_version_is_refused():
    with pytest.raises(SchemaError, match="not a linkscope traffic file"):
        from_dict({"format": "other", "bytes": [[0]]})
    with pytest.raises(SchemaError, match="schema_version"):
        from_dict({"format": "linkscope.traffic", "schema_version": 99, "bytes": [[0]]})


def test_csv_errors_name_the_problem():
    with pytest.raises(TrafficError, match="N lines of N"):
        loads_csv("0,1,2\n3,4,5\n")
    with pytest.raises(TrafficError, match="line 2"):
        loads_csv("0,1\nx,0\n")


def test_unknown_suffix_and_missing_file(tmp_path):
    with pytest.raises(UserError, match="unknown traffic file type"):
        load_traffic(tmp_path / "t.txt")
    with pytest.raises(UserError, match="not found"):
        load_traffic(tmp_path / "nope.json")
