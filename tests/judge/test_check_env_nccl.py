"""``check --env`` carries the NCCL variables a run was launched with to the twin's replayed tuner, and the
reference table (runs under NCCL's defaults) steps aside for them."""
import json
from pathlib import Path

import pytest

from linkscope.cli import main
from linkscope.cli.cmd_check import _stated
from linkscope.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
H100 = ROOT / "tests/fixtures/peertools"
MACHINE = H100 / "h100x2/machine-raw"
V11 = H100 / "h100x2-visits11-13/visit11/nccl"
V13 = H100 / "h100x2-visits11-13/visit13/nccl"


def _verdicts(tmp_path: Path, src: Path, *options: str) -> list[dict]:
    out = tmp_path / "check.json"
    main(["check", str(src), "--from", str(MACHINE), "--json", str(out), *options])
    return json.loads(out.read_text())["extra"]["check"]["verdicts"]


def test_graph_register_off_is_judged_as_launched(tmp_path):
    """allgather -G 10 with NCCL_GRAPH_REGISTER=0 (2 x H100): against the registered runs' references 10 of 12
    rows read low (77-87%); told the environment, the twin without registration reads all 12 ok."""
    src = V11 / "all_gather_G10_noreg_r1.txt"
    assert sum(v["verdict"] == "low" for v in _verdicts(tmp_path, src)) >= 8
    told = _verdicts(tmp_path, src, "--env", "NCCL_GRAPH_REGISTER=0")
    assert all(v["verdict"] == "ok" for v in told)
    assert all("reference" not in v["reason"] for v in told)


def test_forced_algorithm_and_protocol_reach_the_twin(tmp_path):
    told = _verdicts(tmp_path, V13 / "all_reduce_Tree_LL_r2.txt", "--env", "NCCL_ALGO=Tree", "--env", "NCCL_PROTO=LL")
    judged = [v for v in told if v["verdict"] != "not judged"]
    assert judged and all("tree, LL" in v["reason"] for v in judged)


def test_env_option_is_repeatable_and_a_value_may_hold_commas():
    ctx = _stated(None, None, None, ["NCCL_ALGO=Ring,Tree,NCCL_PROTO=LL", "HSA_ENABLE_SDMA=0", "NCCL_PROTO=Simple"])
    assert dict(ctx.env) == {"NCCL_ALGO": "Ring,Tree", "NCCL_PROTO": "Simple", "HSA_ENABLE_SDMA": "0"}
    assert _stated(None, None, None, "NCCL_GRAPH_REGISTER=0").env == (("NCCL_GRAPH_REGISTER", "0"),)
    # a value's commas go on after any pair of the option, not only its first
    assert dict(_stated(None, None, None, ["NCCL_PROTO=LL,NCCL_ALGO=Ring,Tree"]).env) == {"NCCL_PROTO": "LL",
                                                                                        "NCCL_ALGO": "Ring,Tree"}
    with pytest.raises(UserError):
        _stated(None, None, None, ["=x"])
    with pytest.raises(UserError):
        _stated(None, None, None, ["Tree,NCCL_PROTO=LL"])


def test_the_variables_nccl_debug_info_prints_are_the_runs_environment(tmp_path):
    """With NCCL_DEBUG=INFO, NCCL prints each variable it read ("NCCL_ALGO set by environment to Tree",
    tuning.cc:426; integers as "NCCL_BUFFSIZE set by environment to 4194304.", param.cc:89): the output says it."""
    lines = (V13 / "all_reduce_Tree_LL_r2.txt").read_text().splitlines(keepends=True)
    info = ["vm:3020:3020 [0] NCCL INFO NCCL_ALGO set by environment to Tree\n",
            "vm:3020:3020 [0] NCCL INFO NCCL_PROTO set by environment to LL\n",
            "vm:3020:3020 [0] NCCL INFO NCCL_NVLS_ENABLE set by environment to 0.\n"]
    src = tmp_path / "all_reduce_perf.txt"
    src.write_text("".join(lines[:5] + info + lines[5:]))
    from linkscope.results.peertools.detect import read
    assert dict(read(src).run_context.env) == {"NCCL_ALGO": "Tree", "NCCL_PROTO": "LL", "NCCL_NVLS_ENABLE": "0"}
    judged = [v for v in _verdicts(tmp_path, src) if v["verdict"] != "not judged"]
    assert judged and all("tree, LL" in v["reason"] for v in judged)
