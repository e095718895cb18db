import pytest

from linkscope.errors import TopologyError, UserError
from linkscope.patterns.pattern_file import load_pattern_file, parse_csv_pattern, parse_json_pattern
from linkscope.patterns.registry import resolve_pattern
from linkscope.topology.synthetic import synthetic_topology

TOPO = synthetic_topology("nvswitch:4")


def test_json_groups_with_fixed_and_sweep_sizes():
    pat = parse_json_pattern('{"groups": [[[0, 1], [2, 3, "64MiB"]], [{"src": 1, "dst": "host"}]]}', "p.json")
    plans = pat.plan(TOPO, (), 4096, "ce", "uni")
    assert [[(t.src, t.dst, t.size_bytes) for t in p.transfers] for p in plans] == [
        [(0, 1, 4096), (2, 3, 64 * 1024**2)], [(1, "host", 4096)]]
    assert plans[0].aggregate == "sum" and plans[1].aggregate == "none"


def test_csv_blank_lines_separate_groups(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("src,dst,size\n# comment\n0,1\n1,2,1K\n\n3,0\n")
    pat = load_pattern_file(path)
    assert [[(t.src, t.dst, t.size_bytes) for t in g] for g in pat.groups] == [[(0, 1, None), (1, 2, 1024)], [(3, 0, None)]]
    assert resolve_pattern(str(path)).groups == pat.groups


def test_gpu_that_does_not_exist_is_a_user_error():
    pat = parse_csv_pattern("0,9\n", "bad.csv")
    with pytest.raises(TopologyError, match="names GPU 9, which does not exist"):
        pat.applies_to(TOPO, (0, 1), None)


@pytest.mark.parametrize("text, message", [
    ("0\n", "expected src,dst"),
    ("0,gpu1\n", "bad transfer end"),
    ("0,1,lots\n", "not a size"),
])
def test_bad_csv_lines(text, message):
    with pytest.raises(UserError, match=message):
        parse_csv_pattern(text, "x.csv")


def test_bad_json():
    with pytest.raises(UserError, match="not valid JSON"):
        parse_json_pattern("{", "x.json")
    with pytest.raises(UserError, match="non-empty list"):
        parse_json_pattern('{"groups": [[]]}', "x.json")


def test_unknown_pattern_lists_valid_ones():
    with pytest.raises(UserError) as exc:
        resolve_pattern("ringg")
    assert "unknown pattern 'ringg'" in str(exc.value) and "all-to-one" in exc.value.hint
    with pytest.raises(UserError, match="pattern file not found"):
        resolve_pattern("missing/file.json")
