"""The broken-node cause rate of ``refbuild --rates`` (issue 33): each broken recording declares the cause it
was made with, and the counter counts the low rows that name it. These pin the counter, not its figure."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from linkscope.errors import LinkscopeError
from linkscope.judge import refbuild
from linkscope.judge.expect import Judge
from linkscope.judge.references import shipped
from linkscope.judge.runs import judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.detect import read
from linkscope.topology.io import from_dict, load

ROOT = Path(__file__).resolve().parents[2]
JUDGE = ROOT / "src" / "linkscope" / "judge"
P2P_OFF = "docs/runs/h200x2-2026-11-28b/call1/broken/p2p_off_sendrecv.txt"
TOPO = "docs/runs/h200x2-2026-11-28/call1/linkscope/topo.json"


def _recording(causes: tuple[str, ...]) -> refbuild.Recording:
    return refbuild.Recording((P2P_OFF,), "h200x2-2026-11-28b call 1", "2026-11-28", "broken", TOPO, causes=causes)


def test_a_broken_recording_must_declare_its_cause_and_only_it():
    with pytest.raises(LinkscopeError, match="declares the causes"):
        refbuild.Recording((P2P_OFF,), "lease", "2026-11-28", "broken", TOPO)
    with pytest.raises(LinkscopeError, match="only a broken recording"):
        refbuild.Recording((P2P_OFF,), "lease", "2026-11-28", "held-out", TOPO, causes=("collective-no-p2p",))


def test_every_declared_cause_is_a_key_check_names():
    """A declared cause that no code path of the judge can name would make a file's rate 0 for a typo."""
    source = "\n".join(p.read_text() for p in JUDGE.glob("*.py"))
    literals = set(re.findall(r'"([a-z][a-z0-9-]+)"', source))
    composed = ("collective-forced-channels-", "collective-forced-")  # f"collective-forced-channels-{cap}" and algo/proto
    for rec in refbuild.RECORDINGS:
        assert (rec.role == "broken") == bool(rec.causes)
        for key in rec.causes:
            assert key in literals or key.startswith(composed), (rec.files, key)


def test_the_counter_counts_low_rows_naming_a_declared_cause():
    """The counter against a count made here row by row with check's own path (judge_runs)."""
    run = read(ROOT / P2P_OFF)
    judgements = judge_runs([run], Judge(load(ROOT / TOPO), references=shipped()))[0].judgements
    low = [j for j in judgements if j.verdict is Verdict.LOW]
    named = sum(j.cause_key == "collective-no-p2p" for j in low)
    assert low and named  # the file is a broken node: some rows are low, some name the cause
    (row,) = refbuild.rates(ROOT, shipped(), ("broken",), [_recording(("collective-no-p2p",))])
    assert row["counts"]["low"] == len(low)
    assert row["causes_right"] == named
    assert sum(row["low_causes"].values()) == len(low)
    # a cause it was not made with: none of its low rows count, and the line says what they named instead
    (wrong,) = refbuild.rates(ROOT, shipped(), ("broken",), [_recording(("pcie-link-degraded",))])
    assert wrong["causes_right"] == 0
    lines, right, total = refbuild.cause_rates([wrong])
    assert (right, total) == (0, len(low))
    assert f"0 of {len(low)} low rows name pcie-link-degraded" in lines[0] and f"{named} collective-no-p2p" in lines[0]


def test_cause_rates_sums_broken_files_only():
    rows = [{"file": "a", "counts": {"low": 4, "ok": 3}, "low_causes": {"x": 3, "": 1}, "causes": ["x"], "causes_right": 3},
            {"file": "b", "counts": {"low": 2}, "low_causes": {"y": 1, "z": 1}, "causes": ["y", "z"], "causes_right": 2},
            {"file": "healthy", "counts": {"low": 5, "ok": 90}, "low_causes": {"": 5}}]
    lines, right, low = refbuild.cause_rates(rows)
    assert (right, low) == (5, 6) and len(lines) == 2
    assert "3 of 4 low rows name x (else: 1 no cause); 3 ok, 0 not judged" in lines[0]


@pytest.mark.parametrize("op", ["all_reduce", "sendrecv"])
def test_nccl_through_host_memory_names_its_cause_at_mid_sizes(op):
    """NCCL_P2P_DISABLE=1 on 2 x H200: the 2-8 MiB rows were low with no cause while the twin's no-P2P path
    filled an 8 MiB staging chunk; NCCL's SHM pipeline moves 512 KiB steps (shm.cc), so every low row now
    names it."""
    run = read(ROOT / f"docs/runs/h200x2-2026-11-28b/call1/broken/p2p_off_{op}.txt")
    judgements = judge_runs([run], Judge(load(ROOT / TOPO), references=shipped()))[0].judgements
    low = [j for j in judgements if j.verdict is Verdict.LOW]
    assert any("2 MiB" in j.subject for j in low) and any("8 MiB" in j.subject for j in low)
    assert [j.subject for j in low if j.cause_key != "collective-no-p2p"] == []


def _low(name: str) -> list:
    run = read(ROOT / f"docs/runs/h200x2-2026-11-28b/call1/broken/{name}")
    judgements = judge_runs([run], Judge(load(ROOT / TOPO), references=shipped()))[0].judgements
    return [j for j in judgements if j.verdict is Verdict.LOW]


def test_a_transport_read_at_large_sizes_holds_for_every_size_of_the_run():
    """NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: the sockets are read from the bandwidth-bound sizes (under a fifth
    of the host-memory path); the latency-bound sizes of the same communicator (8 B-128 KiB, about twice the
    healthy time) had no cause."""
    low = _low("p2p_shm_off_sendrecv.txt")
    assert any(j.subject.startswith("sendrecv 8 B ") for j in low)
    assert [j.subject for j in low if j.cause_key != "collective-network-transport"] == []
    small = next(j for j in low if j.subject.startswith("sendrecv 8 B "))
    assert "once for every size" in small.reason


def test_one_stray_transport_match_is_neither_spread_nor_kept():
    """NCCL_MAX_NCHANNELS=2: the latency-bound 512 KiB row crosses the host-memory curve; the run's other low
    rows are not put down to it (the transport must name at least half of the bandwidth-bound low rows), and
    that row no longer names it either: the run's bandwidth-bound sizes were judged and do not show it."""
    low = _low("nchannels2_all_reduce.txt")
    assert len(low) >= 8
    assert not any(j.cause_key in ("collective-no-p2p", "collective-network-transport") for j in low)


def test_the_no_peer_alternative_is_launched_as_the_run_was():
    """An eager nccl-tests run (graph: 0): the host-memory twin was built with the CUDA-graph launch, so at 8 B
    'without P2P' came out 3 x faster than the run's own eager twin."""
    run = read(ROOT / "docs/runs/h200x2-2026-11-28b/call1/broken/p2p_off_all_reduce.txt")
    judge = Judge(load(ROOT / TOPO), references=shipped())
    m = next(m for m in run.measurements if m.size_bytes == 8)
    exp = judge.expect(m)
    alt = next(a for a in exp.alternatives if a.key == "collective-no-p2p")
    assert exp.twin is not None and alt.value <= exp.twin * 1.05


OLD_NOISY = ROOT / "docs/runs/h200x2-2026-11-28b/call1/broken/noisy_survey.json"


def _survey_low(path: Path) -> list:
    run = read(path)
    judge = Judge(from_dict(dict(run.record.topology)), references=shipped())
    return [j for j in judge_runs([run], judge)[0].judgements if j.verdict is Verdict.LOW]


def test_a_survey_without_background_infers_the_shared_load_from_its_own_record():
    """The survey beside noisy.py recorded before the background check existed: its GPUs' copies inside their own
    memory are low (80-81%) while every NVLink stayed active; sm-push pairs were put down to 'links down'."""
    low = _survey_low(OLD_NOISY)
    assert [j.subject for j in low if j.cause_key not in refbuild.NOISY_NEIGHBOUR] == []
    sm = [j for j in low if " sm-push " in j.subject]
    assert sm and all(j.cause_key == "shared-load-inferred" for j in sm)
    assert "all 18 of its links stayed active" in sm[0].reason


def _edited(tmp_path: Path, edit) -> Path:
    data = json.loads(OLD_NOISY.read_text())
    edit(data)
    out = tmp_path / "survey.json"
    out.write_text(json.dumps(data))
    return out


def test_no_inference_when_a_link_went_down_or_the_local_copy_is_healthy(tmp_path):
    def link_down(data):
        data["extra"]["link_errors"]["end"]["gpus"]["0"]["nvlink"]["links"][3]["active"] = False
        data["extra"]["link_errors"]["end"]["gpus"]["1"]["nvlink"]["links"][3]["active"] = False

    def healthy_local(data):
        for m in data["measurements"]:
            if m["method"] == "local":
                for k in ("median_gb_per_s", "min_gb_per_s", "max_gb_per_s", "mean_gb_per_s"):
                    m[k] = 2080.0

    for edit in (link_down, healthy_local):
        low = _survey_low(_edited(tmp_path, edit))
        assert not any(j.cause_key == "shared-load-inferred" for j in low), edit.__name__
        assert any(j.cause_key == "link-degraded" for j in low if " sm-push " in j.subject)
