"""Broken paths on 2 x H200 (issue 33 "Done when": low with the right cause), made from the healthy outputs of
docs/runs/h200x2-2026-11-28 (the real broken recordings, docs/runs/h200x2-2026-11-28b/call1/broken, are counted by
``refbuild --rates`` and pinned in test_cause_rates.py):

* NCCL without peer-to-peer (NCCL_P2P_DISABLE=1: SHM through host memory): the healthy all_reduce_perf output with
  its rows from 8 MiB at the twin's own no-P2P rate x 0.9-1.2 (synthetic) -> low, cause ``collective-no-p2p``;
* P2P and SHM off (NCCL's socket transport inside the node): the same rows at an eighth of that rate -> low,
  cause ``collective-network-transport`` (main's ceiling at a fifth of host staging), never the no-P2P point cause;
* a noisy neighbour on one pair (linkscope survey records repetitions): the pair's copies at half with their
  repetitions spread -> ``shared-link``; the same half, steady -> ``link-degraded``; nvbandwidth, which prints one
  number per copy -> ``link-degraded-or-shared``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from linkscope.judge.expect import Judge
from linkscope.judge.runs import judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.detect import parse
from linkscope.results.schema import Measurement
from linkscope.results.stats import Stats
from linkscope.topology.io import load

RUNS = Path(__file__).resolve().parents[2] / "docs" / "runs" / "h200x2-2026-11-28" / "call1"
ROW = re.compile(r"^(\s*)(\d+)(\s+\d+\s+\S+\s+\S+\s+-?\d+\s+)(\S+)(\s+)(\S+)(\s+)(\S+)(\s+\S+\s+)(\S+)(\s+)(\S+)(\s+)(\S+)(.*)$")


@pytest.fixture(scope="module")
def judge() -> Judge:
    return Judge(load(RUNS / "linkscope" / "topo.json"))


def _with_rates(text: str, rate_of) -> str:
    """The all_reduce_perf text with rows of 8 MiB and more at ``rate_of(size)`` busbw (2 ranks: algbw = busbw)."""
    out = []
    for line in text.splitlines():
        m = ROW.match(line)
        if not m or int(m.group(2)) < 8 << 20:
            out.append(line)
            continue
        size = int(m.group(2))
        bw = rate_of(size)
        t = f"{size / bw / 1e3:.1f}"
        g = list(m.groups())
        g[3], g[5], g[7], g[9], g[11], g[13] = t, f"{bw:.2f}", f"{bw:.2f}", t, f"{bw:.2f}", f"{bw:.2f}"
        out.append("".join(g))
    return "\n".join(out) + "\n"


def _judged(text: str, judge: Judge):
    run = parse(text, "all_reduce.txt")
    return [(m, j) for m, j in zip(run.measurements, judge_runs([run], judge)[0].judgements) if m.size_bytes >= 8 << 20]


def _no_p2p_rate(judge: Judge, text: str) -> dict[int, float]:
    rates = {}
    for m, j in _judged(text, judge):
        alt = next(a for a in j.expectation.alternatives if a.key == "collective-no-p2p")
        rates[m.size_bytes] = alt.value
    return rates


@pytest.mark.parametrize("scale", [0.9, 1.0, 1.2])
def test_nccl_without_p2p_is_low_with_the_shm_cause(judge, scale):
    text = (RUNS / "nccl" / "all_reduce_g0.txt").read_text()
    staged = _no_p2p_rate(judge, text)
    judged = _judged(_with_rates(text, lambda size: staged[size] * scale), judge)
    assert judged and all(j.verdict is Verdict.LOW and j.cause_key == "collective-no-p2p" for _, j in judged), \
        [j.line for _, j in judged][:2]


def test_between_host_memory_and_one_channel_the_closer_curve_is_named(judge):
    """0.8 x the host-memory (SHM) curve on 2 x H200 lies within 3-13% of what NCCL moves on one channel over
    NVLink (the twin's 18.5-19.6 GB/s; 20.8 measured per channel, docs/runs/h200x2-2026-11-28b): one number per
    size cannot tell NCCL_P2P_DISABLE from NCCL_MAX_NCHANNELS=1 there, and the curve that explains every row
    closer is named, one cause for the run."""
    text = (RUNS / "nccl" / "all_reduce_g0.txt").read_text()
    staged = _no_p2p_rate(judge, text)
    judged = _judged(_with_rates(text, lambda size: staged[size] * 0.8), judge)
    causes = {j.cause_key for _, j in judged}
    assert all(j.verdict is Verdict.LOW for _, j in judged) and len(causes) == 1
    assert causes <= {"collective-no-p2p", "collective-forced-channels-1"}


def test_nccl_on_sockets_is_low_below_host_staging(judge):
    text = (RUNS / "nccl" / "all_reduce_g0.txt").read_text()
    staged = _no_p2p_rate(judge, text)
    judged = _judged(_with_rates(text, lambda size: staged[size] / 8), judge)
    assert judged and all(j.verdict is Verdict.LOW and j.cause_key == "collective-network-transport" for _, j in judged)
    assert all("is below" in j.reason and "sockets" in j.cause for _, j in judged)


def test_the_healthy_output_is_not_low(judge):
    judged = _judged((RUNS / "nccl" / "all_reduce_g0.txt").read_text(), judge)
    assert judged and not any(j.verdict is Verdict.LOW for _, j in judged)


def _pair_copy(judge: Judge, samples: list[float]) -> Measurement:
    return Measurement(0, 1, "ce", "matrix", "uni", 512 << 20, bandwidth=Stats.from_samples(samples))


def test_a_noisy_neighbour_is_told_from_a_link_down_by_the_spread_of_repetitions(judge):
    healthy = judge.judge(_pair_copy(judge, [394.0] * 5))
    assert healthy.verdict is Verdict.OK
    shared = judge.judge(_pair_copy(judge, [120.0, 260.0, 180.0, 230.0, 150.0]))  # half, the load coming and going
    assert shared.verdict is Verdict.LOW and shared.cause_key == "shared-link", shared.line
    steady = judge.judge(_pair_copy(judge, [197.0, 197.5, 196.8, 197.2, 197.1]))
    assert steady.verdict is Verdict.LOW and steady.cause_key == "link-degraded", steady.line


def test_one_number_per_copy_names_both_causes(judge):
    single = judge.judge(_pair_copy(judge, [197.0]))
    assert single.verdict is Verdict.LOW and single.cause_key == "link-degraded-or-shared"
    assert "noisy neighbour" in single.cause and "trained down" in single.cause
