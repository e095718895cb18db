"""``linkscope check`` end to end on recorded outputs: one verdict line per number, the summary,
the peer-access-disabled fixture judged low with its reason, --fail-below, and --json as a
RunRecord that model check reads."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from linkscope.cli import main
from linkscope.judge.expect import Judge
from linkscope.judge.runs import judge_runs, summarize, to_record
from linkscope.judge.verdict import Verdict
from linkscope.model.check import check as model_check
from linkscope.results.io import from_dict
from linkscope.results.peertools.detect import read
from linkscope.topology.presets import load_preset

FX = Path(__file__).resolve().parents[1] / "fixtures" / "peertools"
P2P_OFF = FX / "p2p-h100x8-disabled-nccl1264.txt"


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_peer_access_disabled_fixture_is_judged_on_the_host_staged_route():
    # p2pBandwidthLatencyTest's P2P=Disabled matrix: copies the tool ran without peer access, on a healthy
    # HGX H100 (NVIDIA/nccl#1264): judged against the staged route through host memory, never against NVLink
    judged = judge_runs([read(P2P_OFF)], Judge(load_preset("dgx-h100")))[0]
    pairs = [j for m, j in zip(judged.run.measurements, judged.judgements) if m.src != m.dst]
    assert len(pairs) == 56 and all(j.verdict is Verdict.OK for j in pairs)
    assert all(j.expectation.twin is not None and j.expectation.twin < 64 for j in pairs)  # a Gen5 x16 host link
    assert all(j.expectation.theoretical is not None and j.expectation.theoretical < 64 for j in pairs)
    assert "host-staged (NV18 pair)" in pairs[0].line
    local = [j for m, j in zip(judged.run.measurements, judged.judgements) if m.src == m.dst]
    assert all(j.verdict is Verdict.OK for j in local)  # 2,475 GB/s read + write counted: the twin x 2


def _staged_as_peer(tmp_path) -> Path:
    """The P2P=Disabled numbers printed as a P2P=Enabled matrix: peer copies at the staged rate, what an
    HGX whose peer copies bounce through host memory shows (a broken machine)."""
    path = tmp_path / "p2p-staged-as-peer.txt"
    path.write_text(P2P_OFF.read_text().replace("P2P=Disabled", "P2P=Enabled"))
    return path


def test_peer_copies_at_the_staged_rate_are_low_with_the_cause(tmp_path):
    judged = judge_runs([read(_staged_as_peer(tmp_path))], Judge(load_preset("dgx-h100")))[0]
    pairs = [j for m, j in zip(judged.run.measurements, judged.judgements) if m.src != m.dst]
    assert len(pairs) == 56 and all(j.verdict is Verdict.LOW and j.cause == "peer access likely off" for j in pairs)


def test_cli_one_line_per_number_and_summary(tmp_path):
    code, out, err = _run(["check", str(P2P_OFF), "--preset", "dgx-h100"])
    assert code == 0, err
    verdict_lines = [line for line in out.splitlines() if line.startswith("  ") and "[" in line and "GB/s" in line]
    assert len(verdict_lines) == 64
    assert all(line.rstrip().endswith(("txt:14]", "txt:15]", "txt:16]", "txt:17]", "txt:18]", "txt:19]", "txt:20]", "txt:21]"))
               for line in verdict_lines)
    assert "summary: 64 numbers: 64 ok" in out
    assert "low below 80%" in out  # the thresholds are stated


def test_fail_below_exits_3_and_thresholds_are_settable(tmp_path):
    staged = _staged_as_peer(tmp_path)
    code, _, err = _run(["check", str(staged), "--preset", "dgx-h100", "--fail-below", "0.5"])
    assert code == 3 and "56 numbers below 50%" in err
    code, out, _ = _run(["check", str(staged), "--preset", "dgx-h100", "--low-below", "0.05"])
    assert code == 0 and "64 numbers: 64 ok" in out


def test_gpus_must_fit():
    code, _, err = _run(["check", str(P2P_OFF), "--preset", "dgx-h100", "--gpus", "0,1"])
    assert code == 1 and "uses 8 GPUs" in err and err.count("linkscope: error:") == 1


def test_json_record_feeds_model_check(tmp_path):
    path = tmp_path / "checked.json"
    nccl = tmp_path / "allreduce.txt"
    nccl.write_text((FX / "rccl-tests-mi300x8-hpc-ai-envs30.txt").read_text().replace("AMD Instinct MI300X", "NVIDIA H100 80GB HBM3"))
    code, _, err = _run(["check", str(P2P_OFF), str(nccl), "--preset", "dgx-h100", "--json", str(path)])
    assert code == 0, err
    assert err.count(f"wrote {path}") == 1, err  # every file written is named, once
    record = from_dict(json.loads(path.read_text()))
    assert record.kind == "check" and len(record.measurements) == 66
    verdicts = record.extra["check"]["verdicts"]
    assert len(verdicts) == 66 and verdicts[1]["verdict"] == "ok" and verdicts[1]["where"].endswith(":14")
    report = model_check(record)  # the embedded topology
    compared = [e for e in report.entries if e.rel_error is not None]
    nopeer = [e for e in compared if e.method == "ce-nopeer"]  # P2P=Disabled: the staged copy, as the twin predicts it
    assert len(nopeer) == 56 and max(abs(e.rel_error) for e in nopeer) < 0.1
    assert any(e.method == "nccl.allreduce" for e in compared)


def test_gpus_map_onto_the_topology(tmp_path):
    run = read(FX / "nvbandwidth-a6000x6-read-ce-nvbandwidth50.txt")
    judge = Judge(load_preset("pcie-8gpu-2socket"), gpus=[2, 3, 4, 5, 6, 7])
    judged = judge_runs([run], judge)
    record = to_record(judged, judge)
    assert {m.src for m in record.measurements} == {2, 3, 4, 5, 6, 7}
    assert summarize(judged).total == 30


@pytest.mark.parametrize("name", sorted(p.name for p in FX.glob("*.txt")))
def test_every_fixture_is_judged_line_by_line(name):
    preset = {"rccl-tests-mi300x8-hpc-ai-envs30.txt": "mi250x-8gcd", "transferbench-pr50.txt": "mi250x-8gcd",
              "nvbandwidth-a6000x6-read-ce-nvbandwidth50.txt": "pcie-8gpu-2socket",
              "nvbandwidth-rtx4090x8-host-nvbandwidth15.txt": "pcie-8gpu-2socket"}.get(name, "dgx-h100")
    code, out, err = _run(["check", str(FX / name), "--preset", preset])
    assert code == 0, err
    run = read(FX / name)
    lines = [line for line in out.splitlines() if line.startswith("  ") and line.rstrip().endswith("]")]
    assert len(lines) == len(run.measurements) > 0
    assert f"summary: {len(run.measurements)} number" in out


def test_a_run_on_other_gpus_is_flagged():
    code, out, _ = _run(["check", str(FX / "rccl-tests-mi300x8-hpc-ai-envs30.txt"), "--preset", "mi250x-8gcd"])
    assert code == 0 and "warning: the results ran on MI300X, 'mi250x-8gcd' has MI250X" in out
    code, out, _ = _run(["check", str(P2P_OFF), "--preset", "dgx-h100"])
    assert "warning:" not in out  # the fixture names no GPU: nothing to compare


SURVEY = Path(__file__).resolve().parents[2] / "docs" / "runs" / "survey-512MiB-h200x2-2026-11-22.json"


def test_linkscope_survey_with_its_calibration_is_all_ok(tmp_path):
    """A measured 2 x H200 survey against its own embedded topology: the concurrent groups and the
    aggregates are judged like model check groups them; with the calibration fitted from it, every
    number is ok (the uncalibrated twin overestimates small-copy overhead: 4 KiB is suspicious-high)."""
    cal = tmp_path / "cal.json"
    assert _run(["model", "calibrate", str(SURVEY), "-o", str(cal)])[0] == 0
    code, out, err = _run(["check", str(SURVEY), "--calibration", str(cal)])
    assert code == 0, err
    assert "summary: 32 numbers: 32 ok" in out
    assert "all ce 512 MiB 774.4 GB/s: NV18 route expects ~782 (calibrated twin, ce)" in out
    code, out, _ = _run(["check", str(SURVEY)])
    assert "GPU0->GPU1 ce 4 KiB 1.71 GB/s" in out and "not judged" not in out


def test_problems_only_hides_ok_lines_but_counts_them(tmp_path):
    code, out, _ = _run(["check", str(_staged_as_peer(tmp_path)), "--preset", "dgx-h100", "--problems-only"])
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("  ") and line.rstrip().endswith("]")]
    assert len(lines) == 56 and all(line.strip().startswith("low") for line in lines)
    assert "(8 ok not shown: --problems-only)" in out and "summary: 64 numbers: 8 ok, 56 low" in out
