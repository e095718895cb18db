"""cli/common.py: the one GPU-list parser, and every command that takes --gpus refusing the same bad
values with the same one line (existence is checked against the topology afterwards)."""
from __future__ import annotations

import pytest

from linkscope.cli import main
from linkscope.cli.common import parse_gpu_list
from linkscope.cli.topoinput import TopologyInput
from linkscope.errors import UserError

HINT = "use comma-separated non-negative integers, e.g. --gpus 0,1,3"


def test_parse_gpu_list_accepts_indices_in_the_given_order():
    assert parse_gpu_list(None) is None
    assert parse_gpu_list("3") == [3]
    assert parse_gpu_list(" 2, 0 ,1,") == [2, 0, 1]
    assert parse_gpu_list("10,007") == [10, 7]


@pytest.mark.parametrize("text, message", [
    ("", "--gpus '': empty GPU list"),
    (" , ", "--gpus ' , ': empty GPU list"),
    ("a", "--gpus 'a': 'a' is not a GPU index"),
    ("0,x", "--gpus '0,x': 'x' is not a GPU index"),
    ("-1", "--gpus '-1': '-1' is not a GPU index"),
    ("+1", "--gpus '+1': '+1' is not a GPU index"),
    ("1.0", "--gpus '1.0': '1.0' is not a GPU index"),
    ("0 1", "--gpus '0 1': '0 1' is not a GPU index"),
    ("\u0661", "is not a GPU index"),  # a non-ASCII digit that int() would take
    ("all", "--gpus 'all': 'all' is not a GPU index"),  # 'all' is the caller's (watch) form
    ("0,1,0", "--gpus '0,1,0': GPU 0 is listed twice"),
])
def test_parse_gpu_list_refuses_with_one_line_naming_the_value(text, message):
    with pytest.raises(UserError) as info:
        parse_gpu_list(text)
    line = info.value.one_line()
    assert message in line
    assert "\n" not in line
    if "listed twice" not in message:
        assert info.value.hint == HINT


def test_parse_gpu_list_names_the_option_it_parses():
    with pytest.raises(UserError, match=r"^--devices '0,z': 'z' is not a GPU index$") as info:
        parse_gpu_list("0,z", option="--devices")
    assert "--devices 0,1,3" in info.value.hint


@pytest.mark.parametrize("command", [
    ["bench", "--synthetic", "nvswitch:4"],
    ["bench", "latency", "--synthetic", "nvswitch:4"],
    ["topo", "--synthetic", "nvswitch:4"],
    ["model", "predict", "--synthetic", "nvswitch:4"],
    ["bench", "nccl", "--backend", "sim"],
    ["bench", "stencil", "--backend", "sim"],
])
@pytest.mark.parametrize("gpus, message", [
    ("0,x", "--gpus '0,x': 'x' is not a GPU index"),
    ("1,1", "--gpus '1,1': GPU 1 is listed twice"),
    (",", "--gpus ',': empty GPU list"),
])
def test_every_command_refuses_a_bad_gpu_list_alike(capsys, command, gpus, message):
    code = main([*command, "--gpus", gpus])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith("linkscope: error: ") and err.count("\n") == 1, err
    assert message in err
    assert "bad endpoint" not in err  # model predict used to blame a flow


@pytest.mark.parametrize("command", [
    ["bench", "--synthetic", "nvswitch:4", "--sizes", "1MiB", "--reps", "3"],
    ["topo", "--synthetic", "nvswitch:4"],
    ["model", "predict", "--synthetic", "nvswitch:4"],
])
def test_a_gpu_that_does_not_exist_is_still_checked_against_the_topology(capsys, command):
    assert main([*command, "--gpus", "0,9"]) == 1
    assert "GPU 9 does not exist in 'nvswitch:4' (valid GPU indices: 0..3)" in capsys.readouterr().err


def test_model_predict_uses_the_gpus_given(capsys):
    assert main(["model", "predict", "--synthetic", "nvswitch:4", "--gpus", "2,3", "--pattern", "ring", "--json", "-"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)["predictions"]
    assert sorted((r["src"], r["dst"]) for r in rows) == [(2, 3), (3, 2)]


def test_topology_input_prints_the_fallback_note_on_stderr(capsys):
    from linkscope.errors import BackendUnavailable

    def no_gpu():
        raise BackendUnavailable("no GPU discovered here (NVML: absent; ROCm: absent)")

    topology = TopologyInput().resolve(allow_fallback=True, discover=no_gpu)
    captured = capsys.readouterr()
    assert topology.name == "hgx-h200-4"
    assert captured.out == ""
    assert "note: no GPU discovered here (NVML: absent; ROCm: absent): using the simulated default preset hgx-h200-4" in captured.err
    with pytest.raises(BackendUnavailable):
        TopologyInput().resolve(allow_fallback=False, discover=no_gpu)
    with pytest.raises(BackendUnavailable) as caught:
        TopologyInput().resolve(allow_fallback=False, discover=no_gpu, missing_hint="name the machine")
    assert caught.value.hint == "name the machine"


def test_topology_input_reads_one_value_as_a_file_a_preset_or_a_spec(tmp_path):
    from linkscope.errors import UserError

    folder = tmp_path / "rec"
    folder.mkdir()
    assert TopologyInput.from_value("hgx-h200-4") == TopologyInput(preset="hgx-h200-4")
    assert TopologyInput.from_value("preset:hgx-h200-4") == TopologyInput(preset="hgx-h200-4")
    assert TopologyInput.from_value("nvswitch:8") == TopologyInput(synthetic="nvswitch:8")
    assert TopologyInput.from_value(str(folder)) == TopologyInput(from_file=str(folder))
    with pytest.raises(UserError, match="--topology 'no-such' is not a file, a preset or a synthetic spec"):
        TopologyInput.from_value("no-such")
    assert TopologyInput.from_value("nvswitch:2").resolve(allow_fallback=False).gpus


def test_topology_input_names_itself_and_prefers_a_recorded_topology_only_when_none_is_named():
    from linkscope.topology.io import to_dict
    from linkscope.topology.synthetic import synthetic_topology

    assert TopologyInput(synthetic="pcie:2x2").flag("x") == "--synthetic pcie:2x2"
    assert TopologyInput(from_file="a.json").flag("x") == "--from a.json"
    assert TopologyInput().flag("hgx-h200-4") == "--preset hgx-h200-4"
    assert not TopologyInput(gpu_model="H100").given and TopologyInput(preset="p").given
    recorded = to_dict(synthetic_topology("nvswitch:2"))
    assert len(TopologyInput().resolve(allow_fallback=False, recorded=recorded).gpus) == 2
    named = TopologyInput(synthetic="nvswitch:4").resolve(allow_fallback=False, recorded=recorded)
    assert len(named.gpus) == 4


def test_map_refuses_two_topology_sources_through_the_shared_resolver(tmp_path, capsys):
    traffic = tmp_path / "t.csv"
    traffic.write_text("0,1\n1,0\n")
    assert main(["map", str(traffic), "--preset", "hgx-h200-4", "--synthetic", "nvswitch:2"]) == 1
    assert "choose one topology source" in capsys.readouterr().err


def test_progress_counts_in_the_unit_of_the_work():
    """Issue 39: the survey's bar counted '0/20000' abstract units; it now counts steps (each step's
    transfers in its label) and shows the time left."""
    from dataclasses import replace

    from fakes import FakeEngine
    from rich.console import Console

    from linkscope.cli.common import progress_bar
    from linkscope.measure.survey import SurveyOptions, run_survey
    from linkscope.topology.synthetic import synthetic_topology

    topo = synthetic_topology("nvswitch:2")
    calls = []
    run_survey(FakeEngine(topo), topo, replace(SurveyOptions(size_bytes=1 << 20, sweep_sizes_bytes=(1 << 20,)),
                                               peer_methods=("ce",)), progress=lambda d, t, label: calls.append((d, t, label)))
    steps = calls[-1][1]
    assert calls[-1][:2] == (steps, steps) and steps < 50 and {t for _, t, _ in calls} == {steps}
    console = Console(record=True, force_terminal=True, width=160)
    with progress_bar(enabled=True, unit="steps", console=console) as update:
        update(3, 20, "ce matrix: ce matrix 0->1 1 MiB (2 of 4)")
    text = console.export_text()
    assert "3 of 20 steps" in text and "left" in text and "/20000" not in text


def test_json_output_is_built_only_when_written(tmp_path):
    """``write_json_output`` takes a builder: nothing is built without ``--json`` (a 32,768-rank
    mapping's JSON takes about a second), and the built text is what the file gets."""
    from linkscope.cli.common import write_json_output

    calls = []

    def build() -> str:
        calls.append(1)
        return '{"a": 1}'

    assert write_json_output(None, build) is False
    assert calls == []
    out = tmp_path / "out.json"
    assert write_json_output(str(out), build) is False
    assert calls == [1]
    assert out.read_text() == '{"a": 1}\n'
