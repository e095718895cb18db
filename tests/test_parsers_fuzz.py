"""Property-based fuzzing of every parser of user input: whatever the input, it either parses or
raises UserError (one line at the CLI), never another exception.

Documents are fuzzed two ways: arbitrary JSON values, and valid documents with one part replaced
by an arbitrary value or removed (which reaches the checks deep inside a format).
"""
from __future__ import annotations

import copy
import io
import json
import math
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

from linkscope.cli.common import parse_gpu_list  # noqa: E402
from linkscope.errors import UserError  # noqa: E402
from linkscope.mapping import assignment as assignment_io  # noqa: E402
from linkscope.patterns.pattern_file import parse_csv_pattern, parse_json_pattern  # noqa: E402
from linkscope.results import io as run_io  # noqa: E402
from linkscope.topology import io as topo_io  # noqa: E402
from linkscope.topology.presets import load_preset  # noqa: E402
from linkscope.topology.synthetic import synthetic_topology  # noqa: E402
from linkscope.traffic import io as traffic_io  # noqa: E402
from linkscope.traffic.matrix import TrafficMatrix  # noqa: E402
from linkscope.traffic.synthetic import generate, parse_grid, ring  # noqa: E402
from linkscope.units import parse_duration_s, parse_size, parse_sizes  # noqa: E402

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=20)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc[:6]):
            out += _paths(value, prefix + (index,))
    return out


@st.composite
def mutated(draw, valid: dict) -> Any:
    """``valid`` with one node replaced by an arbitrary JSON value, or removed."""
    doc = copy.deepcopy(valid)
    paths = _paths(doc)[1:]
    path = draw(st.sampled_from(paths))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(json_values)
    return doc


def only_user_errors(parse: Callable[[], Any]) -> None:
    """Run ``parse``: a UserError is an accepted answer; any other exception fails the property."""
    try:
        parse()
    except UserError as exc:
        assert str(exc)


TOPOLOGY = topo_io.to_dict(load_preset("hgx-h200-4"))
TRAFFIC = traffic_io.to_dict(ring(4, 1024))
RECORD: dict = {}
MAPPING: dict = {}


@pytest.fixture(scope="module", autouse=True)
def _documents(tmp_path_factory):
    """A real run record and mapping to mutate (made once through the CLI)."""
    import contextlib

    from linkscope.cli import main

    folder = tmp_path_factory.mktemp("fuzz")
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        assert main(["bench", "--backend", "sim", "--preset", "hgx-h200-4", "--sizes", "1MiB", "--reps", "3", "--gpus", "0,1",
                     "--json", str(folder / "run.json")]) == 0
        traffic_io.save_traffic(ring(4, 1024), folder / "t.json")
        assert main(["map", str(folder / "t.json"), "--preset", "hgx-h200-4", "-o", str(folder / "m.json")]) == 0
    RECORD.update(json.loads((folder / "run.json").read_text()))
    MAPPING.update(json.loads((folder / "m.json").read_text()))


# ---- topology JSON ----------------------------------------------------------------------------------

@FUZZ
@given(json_values)
def test_topology_any_json(value):
    only_user_errors(lambda: topo_io.loads(json.dumps(value), origin="fuzz"))


@FUZZ
@given(mutated(TOPOLOGY))
def test_topology_mutated(doc):
    only_user_errors(lambda: topo_io.loads(json.dumps(doc), origin="fuzz"))


@FUZZ
@given(st.text(max_size=40))
def test_topology_any_text(text):
    only_user_errors(lambda: topo_io.loads(text, origin="fuzz"))


@FUZZ
@given(st.text(alphabet=string.ascii_letters + string.digits + ":x-", max_size=20))
def test_synthetic_spec(spec):
    only_user_errors(lambda: synthetic_topology(spec))


# ---- traffic: CSV, .npy, JSON, synthetic options ------------------------------------------------------

@FUZZ
@given(st.text(alphabet="0123456789.,-e+ \n#nafix", max_size=80))
def test_traffic_csv(text):
    only_user_errors(lambda: traffic_io.loads_csv(text, origin="fuzz"))


@FUZZ
@given(mutated(TRAFFIC))
def test_traffic_json_mutated(doc):
    only_user_errors(lambda: traffic_io.from_dict(doc, origin="fuzz"))


@FUZZ
@given(json_values)
def test_traffic_json_any(value):
    only_user_errors(lambda: traffic_io.from_dict(value, origin="fuzz"))


npy_arrays = hnp.arrays(
    dtype=st.one_of(hnp.integer_dtypes(), hnp.unsigned_integer_dtypes(), hnp.floating_dtypes(), hnp.complex_number_dtypes(),
                    hnp.boolean_dtypes(), hnp.unicode_string_dtypes(max_len=3), hnp.datetime64_dtypes()),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))


@FUZZ
@given(npy_arrays)
def test_traffic_npy_arrays(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    only_user_errors(lambda: _load_npy_bytes(buffer.getvalue()))


@FUZZ
@given(st.binary(max_size=200))
def test_traffic_npy_bytes(data):
    only_user_errors(lambda: _load_npy_bytes(b"\x93NUMPY" + data))


def _load_npy_bytes(data: bytes):
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.npy"
        path.write_bytes(data)
        return traffic_io.load_traffic(path)


@FUZZ
@given(st.lists(st.lists(st.one_of(st.floats(), st.integers(-(2**70), 2**70)), min_size=0, max_size=4), max_size=4))
def test_traffic_matrix_values(rows):
    only_user_errors(lambda: TrafficMatrix(bytes=rows))


@FUZZ
@given(pattern=st.sampled_from(["stencil2d", "stencil3d", "ring", "all-to-all", "tree", "random", "graph", "x"]),
       ranks=st.one_of(st.none(), st.integers(-5, 70000)),
       grid=st.one_of(st.none(), st.lists(st.integers(0, 50), min_size=1, max_size=4).map(tuple)),
       size=st.integers(0, 2**62),
       weights=st.one_of(st.none(), st.lists(st.floats(), max_size=4)),
       density=st.floats(), seed=st.integers(-3, 2**40),
       edges=st.one_of(st.none(), st.lists(st.lists(st.floats(-3, 70000), max_size=4), max_size=4)))
def test_traffic_generate(pattern, ranks, grid, size, weights, density, seed, edges):
    if ranks is not None and ranks > 300:
        ranks = ranks if ranks > 8192 else 300  # large-but-allowed would only be slow, not different
    only_user_errors(lambda: generate(pattern, ranks=ranks, grid=grid, size_bytes=size, weights=weights,
                                      density=density, seed=seed, edges=edges))


@FUZZ
@given(st.text(alphabet="0123456789xX -", max_size=16))
def test_grid(text):
    only_user_errors(lambda: parse_grid(text))


# ---- pattern files ---------------------------------------------------------------------------------------

@FUZZ
@given(json_values)
def test_pattern_json_any(value):
    only_user_errors(lambda: parse_json_pattern(json.dumps(value), source="fuzz"))


@FUZZ
@given(st.text(alphabet="0123456789,host\n #KMGiB-.", max_size=60))
def test_pattern_csv(text):
    only_user_errors(lambda: parse_csv_pattern(text, source="fuzz"))


# ---- mapping JSON and run records -------------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_mapping_mutated(data):
    doc = data.draw(mutated(MAPPING))
    only_user_errors(lambda: assignment_io.from_dict(doc, origin="fuzz"))


@FUZZ
@given(json_values)
def test_mapping_any(value):
    only_user_errors(lambda: assignment_io.from_dict(value, origin="fuzz"))


@FUZZ
@given(st.data())
def test_run_record_mutated(data):
    doc = data.draw(mutated(RECORD))
    only_user_errors(lambda: run_io.from_dict(doc))


# ---- sizes, durations, GPU lists ------------------------------------------------------------------------

size_text = st.one_of(st.text(max_size=12), st.text(alphabet="0123456789.:,KMGTPiBkmgtpb -e", max_size=14))


@FUZZ
@given(size_text)
def test_sizes(text):
    only_user_errors(lambda: parse_size(text))
    only_user_errors(lambda: parse_sizes(text))


@FUZZ
@given(st.integers(-(2**80), 2**80))
def test_size_ints(value):
    only_user_errors(lambda: parse_size(value))


@FUZZ
@given(st.one_of(st.text(max_size=12), st.text(alphabet="0123456789.usmin µ", max_size=12)))
def test_durations(text):
    only_user_errors(lambda: parse_duration_s(text))


@FUZZ
@given(st.one_of(st.text(max_size=12), st.text(alphabet="0123456789, -", max_size=16)))
def test_gpu_lists(text):
    only_user_errors(lambda: parse_gpu_list(text))


# ---- peer tools' outputs (linkscope check) ---------------------------------------------------------------

PEER_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "peertools"
PEER_TEXTS = [p.read_text() for p in sorted(PEER_FIXTURES.glob("*.txt"))]
PEER_FORMATS = (None, "nvbandwidth", "nccl-tests", "osu", "p2p", "transferbench")


def _judge():
    from linkscope.judge.expect import Judge

    return Judge(load_preset("dgx-h100"))


_JUDGE = _judge()


@st.composite
def mutated_lines(draw) -> str:
    """A real output with a few lines replaced, duplicated, cut or made of arbitrary text."""
    lines = draw(st.sampled_from(PEER_TEXTS)).splitlines()
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        action = draw(st.integers(0, 3))
        if action == 0:
            lines[i] = draw(st.text(alphabet=string.printable, max_size=60))
        elif action == 1:
            lines.insert(i, lines[i])
        elif action == 2:
            lines[i] = lines[i][: draw(st.integers(0, max(len(lines[i]), 1)))]
        else:
            tokens = lines[i].split()
            if tokens:
                tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(["N/A", "-1", "1e999", "nan", "x", "99999",
                                                                                       "", "0", "3.5"]))
                lines[i] = " ".join(tokens)
    return "\n".join(lines)


@FUZZ
@given(mutated_lines(), st.sampled_from(PEER_FORMATS))
def test_peer_outputs_mutated(text, fmt):
    from linkscope.results.peertools.detect import parse

    only_user_errors(lambda: parse(text, "fuzz.txt", fmt))


@FUZZ
@given(st.text(max_size=200), st.sampled_from(PEER_FORMATS))
def test_peer_outputs_any_text(text, fmt):
    from linkscope.results.peertools.detect import parse

    only_user_errors(lambda: parse(text, "fuzz.txt", fmt))


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # each judges up to 170 numbers
@given(mutated_lines())
def test_peer_outputs_mutated_are_judged_without_tracebacks(text):
    """What parses is judged: a verdict per number, or one UserError (a GPU that does not fit)."""
    from linkscope.judge.runs import judge_runs
    from linkscope.results.peertools.detect import parse

    def run() -> None:
        parsed = parse(text, "fuzz.txt")
        judged = judge_runs([parsed], _JUDGE)[0]
        assert len(judged.judgements) == len(parsed.measurements)

    only_user_errors(run)


NVB_JSON = {"nvbandwidth": {"version": "v0.8", "GPU Device list": ["0: NVIDIA H100 80GB HBM3 (00000000:19:00): (h)"],
                            "testcases": [{"name": "device_to_device_bidirectional_memcpy_read_ce", "status": "Passed",
                                           "bandwidth_matrix": [["N/A", "1"], ["2", "N/A"], ["N/A", "1"], ["2", "N/A"],
                                                                ["N/A", "3"], ["4", "N/A"]]},
                                          {"name": "host_to_device_memcpy_ce", "status": "Passed", "bandwidth_matrix": [["55.1"]]}]}}
NCCL_JSON = {"version": 1, "args": ["all_reduce_perf"], "devices": [{"device_info": "NVIDIA H100"}],
             "results": [{"size": 1024, "count": 256, "type": "float", "redop": "sum", "root": "-1",
                          "out_of_place": {"time": 5.0, "alg_bw": 0.2, "bus_bw": 0.3, "nwrong": 0}, "in_place": None}]}


@FUZZ
@given(st.one_of(mutated(NVB_JSON), mutated(NCCL_JSON), json_values))
def test_peer_json_mutated(doc):
    from linkscope.results.peertools.detect import parse

    text = json.dumps(doc)
    only_user_errors(lambda: parse(text if text.startswith("{") else "{" + text, "fuzz.json"))


def test_the_fuzzers_find_what_they_look_for():
    """The properties can fail: a parser that raises something else is caught."""
    with pytest.raises(ValueError):
        only_user_errors(lambda: int("x"))
    assert math.isfinite(parse_size("1KiB"))
