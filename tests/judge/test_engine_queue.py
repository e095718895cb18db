"""Totals of copies queued on one GPU's copy engines (issue 33): the queue's order changes between runs and the
total with it, so such a total is judged with the queue's spread, not the copy floor."""
from __future__ import annotations

from pathlib import Path

from linkscope.judge.expect import Judge
from linkscope.judge.references import shipped
from linkscope.judge.runs import judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.detect import read
from linkscope.topology.io import load

ROOT = Path(__file__).resolve().parents[2]
REC = ROOT / "tests" / "fixtures" / "recordings" / "h200x4-2026-11-28"


def _judged(name: str):
    run = read(REC / name)
    return list(zip(run.measurements, judge_runs([run], Judge(load(REC / "linkscope" / "topo.json"), references=shipped()))[0]
                    .judgements))


def test_the_issuing_gpu_decides_which_copies_queue():
    judge = Judge(load(REC / "linkscope" / "topo.json"), references=shipped())
    queues = {(m.pattern, m.method): judge.engine_queue(m) for m in read(REC / "nvbandwidth-all.txt").measurements
              if m.scope == "total" and m.pattern in ("one-to-all", "all-to-one")}
    assert queues[("one-to-all", "ce-write")] == 3  # the source's engines issue its three copies
    assert queues[("all-to-one", "ce-read")] == 3  # the destination reads from three peers with its own engines
    assert queues[("all-to-one", "ce-write")] == 1  # each source's engines issue one copy
    assert queues[("one-to-all", "ce-read")] == 1
    assert queues.get(("one-to-all", "sm-push"), 0) == 0  # SM copies are no copy-engine queue


def test_one_to_all_ce_totals_of_a_held_out_run_are_ok():
    """nvbandwidth-all (held out): the source GPUs' one-to-all CE totals are 339, 396, 365, 339 where the reference
    run gave 365 for each: the queue's order, not a fault. With the copy floor (5%) three of them were flagged."""
    rows = [(m, j) for m, j in _judged("nvbandwidth-all.txt") if m.pattern == "one-to-all" and m.method == "ce-write"]
    assert len(rows) == 4
    assert [j.verdict for _, j in rows] == [Verdict.OK] * 4
    assert "copy-engine queue" in rows[0][1].reason
