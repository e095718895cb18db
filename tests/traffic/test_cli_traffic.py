import json

from linkscope.cli import main
from linkscope.traffic.io import load_traffic


def test_traffic_gen_writes_the_stencil(tmp_path):
    out = tmp_path / "t.json"
    assert main(["traffic", "gen", "stencil2d", "--grid", "4x4", "--periodic", "--bytes", "1MiB", "-o", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["format"] == "linkscope.traffic" and data["ranks"] == 16
    assert load_traffic(out).bytes[0][1] == 1 << 20


def test_traffic_gen_bad_grid_is_a_user_error(tmp_path, capsys):
    assert main(["traffic", "gen", "stencil2d", "--grid", "4-4", "-o", str(tmp_path / "t.csv")]) == 1
    assert "not a process grid" in capsys.readouterr().err
