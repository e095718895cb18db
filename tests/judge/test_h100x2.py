"""``linkscope check`` on the recordings of the lent 2 x H100 machine (tests/fixtures/peertools/h100x2,
README there): judged against the machine's own recorded topology."""
from __future__ import annotations

from pathlib import Path

import pytest

from linkscope.discovery.raw import load_recording
from linkscope.judge.expect import Judge
from linkscope.judge.references import ReferenceTable
from linkscope.judge.runs import judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.detect import read

H = Path(__file__).resolve().parents[1] / "fixtures" / "peertools" / "h100x2"
NCCL = Path(__file__).resolve().parents[1] / "fixtures" / "nccl" / "h100x2-2026-11-25"  # the same recording's nccl-tests


@pytest.fixture(scope="module")
def judge() -> Judge:
    return Judge(load_recording(H / "machine-raw"))


@pytest.fixture(scope="module")
def twin() -> Judge:
    """The twin alone (no reference table): what check falls back to on a machine without references."""
    return Judge(load_recording(H / "machine-raw"), references=ReferenceTable({}, {}))


def _judged(judge, name, **kw):
    run = read(NCCL / name[len("nccl-tests-"):] if name.startswith("nccl-tests-") and name.endswith(".txt") else H / name, **kw)
    return list(zip(run.measurements, judge_runs([run], judge)[0].judgements))


def test_nvbandwidth_peer_copies_match_the_twin(judge):
    pairs = [(m, j) for m, j in _judged(judge, "nvbandwidth.txt") if m.bandwidth is not None and m.src != m.dst
             and "host" not in (m.src, m.dst)]
    # read/write ce, sm: 2 cells each; bidirectional ce read/write and sm read: 1, 2 and Total, 2 cells each
    assert len(pairs) == 26
    assert sum(1 for m, _ in pairs if m.scope == "total") == 6
    assert all(j.verdict is Verdict.OK for _, j in pairs), [j.line for _, j in pairs if j.verdict is not Verdict.OK]
    assert all(0.85 < j.fraction < 1.05 for _, j in pairs)
    json_pairs = [(m, j) for m, j in _judged(judge, "nvbandwidth.json") if m.bandwidth is not None and m.src != "host"]
    assert json_pairs and all(j.verdict is Verdict.OK for _, j in json_pairs)


def test_nccl_tests_large_sizes_match_the_twin(judge, twin):
    for name in ("nccl-tests-all_reduce.txt", "nccl-tests-all_reduce.json", "nccl-tests-sendrecv.txt"):
        for who in (judge, twin):
            big = [(m, j) for m, j in _judged(who, name) if m.size_bytes >= 512 << 20]
            assert len(big) == 4 and all(j.verdict is Verdict.OK for _, j in big), name
    one = next(j for m, j in _judged(twin, "nccl-tests-all_reduce.txt") if m.size_bytes == 512 << 20 and not m.extra["inplace"])
    assert one.line.startswith("allreduce 512 MiB busbw 310.2 GB/s on 2 x H100 NV18: twin ")
    assert "(ring, Simple, NVLS off, eager launch)" in one.line and one.line.endswith("ok")
    ref = next(j for m, j in _judged(judge, "nccl-tests-all_reduce.txt") if m.size_bytes == 512 << 20 and not m.extra["inplace"])
    assert "reference" in ref.line and ref.expectation.source == "reference"


def test_small_collectives_without_reference_are_not_blamed_on_links(twin):
    """Without a reference, an uncalibrated twin is not trusted where fixed cost decides the time: not
    judged, with the reason (before: 'low' against the graph-launch twin for an eager run)."""
    small = [j for m, j in _judged(twin, "nccl-tests-all_reduce.txt") if m.size_bytes <= 64 << 10]
    assert small and all(j.verdict is Verdict.UNJUDGED and "latency-bound at this size" in j.reason and not j.cause
                         for j in small)


def test_p2p_disabled_is_judged_as_staged_and_enabled_is_ok(judge):
    judged = _judged(judge, "p2pBandwidthLatencyTest.txt")
    off = [(m, j) for m, j in judged if m.method == "ce-nopeer" and m.bandwidth is not None]
    on = [(m, j) for m, j in judged if m.method == "ce" and m.bandwidth is not None]
    assert len(off) == 4 and len(on) == 4
    # the tool turned peer access off: the staged route through host memory is what it measured (ok), not NVLink
    assert all(j.verdict is Verdict.OK and not j.cause for _, j in off)
    assert "host-staged (NV18 pair) route expects ~38" in off[0][1].line
    assert all(j.verdict is Verdict.OK for _, j in on)


def test_osu_device_buffers_large_messages_ok_host_buffers_not_judged(judge):
    judged = _judged(judge, "osu-DD.txt")
    big = [j for m, j in judged if m.method == "mpi.bw" and m.size_bytes >= 8 << 20]
    assert big and all(j.verdict is Verdict.OK for j in big)
    assert all(j.verdict is Verdict.UNJUDGED for m, j in _judged(judge, "osu-HH.txt"))


def test_small_buffer_size_is_taken_from_the_option(judge):
    judged = _judged(judge, "nvbandwidth-b1.txt", size_bytes=1 << 20)
    assert {m.size_bytes for m, _ in judged} == {1 << 20}
    assert all(j.verdict is not Verdict.UNJUDGED for _, j in judged)


def test_a_small_buffer_without_its_size_is_not_judged_as_the_default(judge):
    """nvbandwidth warns (NOTE) when -b is below its default and never prints the size: its 1 MiB rates were
    judged as 512 MiB copies, 18-87% of the reference, low. Without --sizes they are not judged, and say why."""
    judged = _judged(judge, "nvbandwidth-b1.txt")
    rates = [(m, j) for m, j in judged if m.bandwidth is not None]
    assert rates and all(j.verdict is Verdict.UNJUDGED and "--sizes" in j.reason for _, j in rates)
    assert all("size unknown" in j.subject for _, j in rates)
    assert "unknown" in read(H / "nvbandwidth-b1.txt").run_context.size_from
    peers = [j for m, j in _judged(judge, "nvbandwidth.txt") if m.bandwidth is not None and m.src != m.dst
             and "host" not in (m.src, m.dst)]
    assert peers and all(j.verdict is Verdict.OK for j in peers)  # no NOTE: judged at the default


def test_a_small_buffer_in_json_output_is_not_judged_as_the_default(judge, tmp_path):
    """nvbandwidth -j keeps the NOTE as nvbandwidth.warning (json_output.cpp recordWarning)."""
    import json
    data = json.loads((H / "nvbandwidth.json").read_text())
    data["nvbandwidth"]["warning"] = ("NOTE: You have chosen a buffer size that is smaller than the default buffer size. "
                                      "It is suggested to use the default buffer size (64MB) to achieve maximal peak bandwidth.")
    small = tmp_path / "small.json"
    small.write_text(json.dumps(data))
    run = read(small)
    rates = [m for m in run.measurements if m.bandwidth is not None]
    assert rates and all(m.extra.get("size_unknown") for m in rates)
    assert not any((m.extra or {}).get("size_unknown") for m in read(small, size_bytes=1 << 20).measurements)
    assert not any((m.extra or {}).get("size_unknown") for m in read(H / "nvbandwidth.json").measurements)


def test_imported_numbers_calibrate_the_twin(judge):
    """check --json's record feeds model calibrate: nvbandwidth's peer copies fit the NVLink efficiency."""
    from linkscope.judge.runs import to_record
    from linkscope.model.calibrate import calibrate

    run = read(H / "nvbandwidth.txt")
    record = to_record(judge_runs([run], judge), judge)
    result = calibrate(record)
    assert 0.8 < result.fitted["link_efficiency.nvlink"] < 0.9
    assert result.check is not None and result.check.median_abs_rel_error < 0.05


def test_small_collectives_are_judged_in_their_launch_mode(judge):
    """nccl-tests' header says how it ran (``graph: 10`` vs ``graph: 0``): each is judged against the
    reference of its own launch mode, so neither the graph run (6.4 us) nor the eager one (~15 us) is
    called low or high for being launched the way it was."""
    graph = [(m, j) for m, j in _judged(judge, "nccl-tests-all_reduce_G10.txt") if m.size_bytes < 64 << 10]
    plain = [(m, j) for m, j in _judged(judge, "nccl-tests-all_reduce.txt") if m.size_bytes < 64 << 10]
    assert graph and plain
    assert {judge.launch(m) for m, _ in graph} == {"graph 2/thread"} and {judge.launch(m) for m, _ in plain} == {"eager 2/thread"}
    assert all(j.verdict is Verdict.OK and j.expectation.source == "reference" for _, j in graph + plain)


def test_pageable_host_copies_are_not_blamed_on_the_pcie_link(judge):
    """A pageable copy is bound by the host's memcpy, so 'PCIe link trained down' is never its cause
    (the survey's pageable copies run at 7-14 GB/s on this VM, under the twin's 20)."""
    judged = _judged(judge, "linkscope-survey.json")
    pageable = [j for m, j in judged if m.method.endswith("-pageable") and m.bandwidth is not None]
    assert pageable and all(j.cause_key != "pcie-link-degraded" for j in pageable)


def test_a_staged_copy_latency_resting_on_an_assumed_overhead_is_not_judged(judge):
    """P2P=Disabled latencies (15-17.5 us on this healthy pair) against a twin whose staged-copy overhead is
    an assumed 10 us: not judged, with the reason (before: low against the peer copy, with a cause)."""
    staged = [j for m, j in _judged(judge, "p2pBandwidthLatencyTest.txt")
              if m.method == "ce-nopeer" and m.latency is not None and (m.extra or {}).get("latency_kind") == "copy"]
    assert staged and all(j.verdict is Verdict.UNJUDGED and "is an assumption" in j.reason for j in staged)
