"""Parsers of peer tools' outputs: real outputs (tests/fixtures/peertools, each naming its source)
become Measurements with the right endpoints, methods, sizes, units and provenance; malformed
files are one-line SchemaErrors naming the file and line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from linkscope.errors import SchemaError, UserError
from linkscope.results.peertools import nccltests, nvbandwidth, osu, p2p_sample, transferbench
from linkscope.results.peertools.common import Outcome
from linkscope.results.peertools.detect import parse, read
from linkscope.results.schema import ALL, HOST, Status

FX = Path(__file__).resolve().parents[1] / "fixtures" / "peertools"
NVB_ONE = Path(__file__).resolve().parents[1] / "fixtures" / "nvbandwidth" / "onegpu_sample.txt"


def _by(run, **want):
    return [m for m in run.measurements if all(getattr(m, k) == v for k, v in want.items())]


def test_detects_each_tool_from_content():
    tools = {p.name: read(p).tool for p in FX.glob("*.txt")}
    assert tools == {"p2p-h100x8-disabled-nccl1264.txt": "p2pBandwidthLatencyTest",
                     "nvbandwidth-a6000x6-read-ce-nvbandwidth50.txt": "nvbandwidth",
                     "nvbandwidth-rtx4090x8-host-nvbandwidth15.txt": "nvbandwidth",
                     "nccl-tests-h200x1-smbi.txt": "nccl-tests",
                     "rccl-tests-mi300x8-hpc-ai-envs30.txt": "rccl-tests",
                     "transferbench-pr50.txt": "TransferBench"}


def test_p2p_disabled_matrix():
    run = read(FX / "p2p-h100x8-disabled-nccl1264.txt")
    assert len(run.measurements) == 64
    m = _by(run, src=0, dst=1)[0]
    assert (m.method, m.direction, m.size_bytes, m.median_gb_per_s) == ("ce-nopeer", "uni", 160_000_000, 37.19)
    assert m.extra["peer_access"] is False and m.extra["source_line"] == 14
    local = _by(run, src=3, dst=3)[0]
    assert local.method == "local" and local.extra["counts_read_and_write"] and local.median_gb_per_s == 2499.38


def test_p2p_enabled_bidirectional_and_latency():
    text = "\n".join([
        "Device: 0, NVIDIA H100 80GB HBM3, pciBusID: 19, pciDeviceID: 0, pciDomainID:0",
        "Device: 1, NVIDIA H100 80GB HBM3, pciBusID: 3b, pciDeviceID: 0, pciDomainID:0",
        "Device=0 CAN Access Peer Device=1",
        "Device=1 CAN Access Peer Device=0",
        "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)",
        "   D\\D     0      1 ",
        "     0 2600.00 740.50 ",
        "     1 741.00 2610.00 ",
        "P2P=Enabled Latency (P2P Writes) Matrix (us)",
        "   GPU     0      1 ",
        "     0   2.10   2.30 ",
        "     1   2.25   2.11 ",
        "",
        "   CPU     0      1 ",
        "     0   2.70   1.90 ",
        "     1   2.00   2.70 ",
    ]) + "\n"
    run = p2p_sample.parse_text(text, "p2p.txt")
    assert run.gpus == ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3")
    bi = _by(run, src=0, dst=1, method="ce")
    assert bi[0].direction == "bi" and bi[0].scope == "total" and bi[0].moved_bytes == 2 * 160_000_000
    assert bi[0].extra["peer_access"] is True
    lat = [m for m in run.measurements if m.latency is not None]
    assert [(m.src, m.dst, m.latency_us, m.extra["latency_kind"]) for m in lat] == [
        (0, 1, 2.30, "copy"), (1, 0, 2.25, "copy"), (0, 1, 1.90, "copy (host-timed)"), (1, 0, 2.00, "copy (host-timed)")]


def test_nvbandwidth_text_read_and_host_cases():
    run = read(FX / "nvbandwidth-a6000x6-read-ce-nvbandwidth50.txt")
    assert run.version == "v0.8" and len(run.measurements) == 30  # 6 x 6 minus the N/A diagonal
    m = run.measurements[0]  # row 0, column 1: GPU0 reads GPU1 (the copy goes 1 -> 0)
    assert (m.src, m.dst, m.method, m.median_gb_per_s, m.size_bytes) == (1, 0, "ce-read", 26.34, 512 << 20)
    assert "no 'Running' line" in run.notes[0]
    host = read(FX / "nvbandwidth-rtx4090x8-host-nvbandwidth15.txt")
    assert len(host.gpus) == 8 and host.context["driver_version"] == "545.29.06"
    h2d = _by(host, src=HOST, dst=3)[0]
    d2h = _by(host, src=7, dst=HOST)[0]
    assert (h2d.method, h2d.median_gb_per_s, d2h.method, d2h.median_gb_per_s) == ("h2d", 26.30, "d2h", 26.83)


def test_nvbandwidth_size_latency_and_bidirectional_matrices():
    """The 2 x H100 recording: latencies in ns become µs, ``size_bytes`` is the run's -b, and a
    bidirectional testcase's three matrices (SUM lines between them) are all read."""
    h100 = FX / "h100x2"
    run = nvbandwidth.parse_text((h100 / "nvbandwidth-b1.txt").read_text(), "b1.txt", size_bytes=1 << 20)
    assert {m.size_bytes for m in run.measurements} == {1 << 20}
    full = read(h100 / "nvbandwidth.txt")
    lat = [m for m in full.measurements if m.latency is not None]
    assert [(m.src, m.method) for m in lat][:2] == [(1, "remote-read"), (0, "remote-read")]
    assert all(0.5 < m.latency_us < 2.0 for m in lat)  # printed in ns: 826.x -> 0.826 µs
    bidir = [m for m in full.measurements if m.extra["test"] == "device_to_device_bidirectional_memcpy_read_ce"]
    assert len(bidir) == 6 and sorted(m.scope for m in bidir) == ["total"] * 2 + ["transfer"] * 4


def test_nvbandwidth_outcome_of_each_testcase():
    """tests/fixtures/nvbandwidth/onegpu_sample.txt is SYNTHETIC (hand-written in nvbandwidth's layout
    for tests/benchtables/onegpu_compare.py; see tests/benchtables/test_onegpu.py): a waived case, an N/A cell, a case
    that started and printed only a CUDA error."""
    run = nvbandwidth.parse_text(NVB_ONE.read_text(), str(NVB_ONE))
    assert run.outcomes["host_to_device_memcpy_ce"] == Outcome("Passed")
    assert run.outcomes["host_to_device_memcpy_sm"] == Outcome("Passed")  # printed N/A: ran, no number
    assert not [m for m in run.measurements if m.extra["test"] == "host_to_device_memcpy_sm"]
    assert run.outcomes["device_to_host_memcpy_sm"] == Outcome("Waived")
    assert run.outcomes["host_to_device_bidirectional_memcpy_sm"] == Outcome("Running")  # no result
    assert "device_to_host_memcpy_sm: waived by nvbandwidth" in run.notes
    assert "host_to_device_bidirectional_memcpy_sm: started, printed no result" in run.notes
    real = read(FX / "h100x2" / "nvbandwidth.txt")
    assert len(real.outcomes) == 15 and {o.status for o in real.outcomes.values()} == {"Passed"} and not real.notes


def test_nvbandwidth_error_waived_and_unknown_testcases_as_nvbandwidth_prints_them():
    """nvbandwidth.cpp runTestcase: ``Error: <message>`` after ``Running <key>.``; a waived case prints only
    ``Waived: `` (unnamed in text); an unknown -t key ``ERROR: Testcase <key> not found!``. A run where
    nothing passed is still nvbandwidth's output (its outcomes say why), not a refusal."""
    text = ("nvbandwidth Version: v0.8\n\nRunning host_to_device_memcpy_ce.\nError: cudaErrorInvalidValue in run\n"
            "Waived: \nERROR: Testcase bogus_ce not found!\n")
    run = nvbandwidth.parse_text(text, "nvb.txt")
    assert not run.measurements
    assert run.outcomes == {"host_to_device_memcpy_ce": Outcome("Error", "cudaErrorInvalidValue in run"),
                            "bogus_ce": Outcome("Not Found", "Testcase bogus_ce not found!")}
    assert any("unnamed in text output" in n and "waived" in n for n in run.notes)
    doc = {"nvbandwidth": {"testcases": [{"name": "device_to_host_memcpy_sm", "status": "Waived"},
                                         {"name": "device_local_copy", "status": "Error", "error": "oom"}]}}
    assert parse(json.dumps(doc), "n.json").outcomes == {"device_to_host_memcpy_sm": Outcome("Waived"),
                                                         "device_local_copy": Outcome("Error", "oom")}


def test_nvbandwidth_json_bidirectional_rows_split():
    doc = {"nvbandwidth": {"version": "v0.8", "GPU Device list": ["0: NVIDIA H100 80GB HBM3 (00000000:19:00): (h)",
                                                                    "1: NVIDIA H100 80GB HBM3 (00000000:3b:00): (h)"],
                           "testcases": [
                               {"name": "device_to_device_bidirectional_memcpy_write_ce", "status": "Passed",
                                "bandwidth_description": "memcpy CE GPU(row) <-> GPU(column) Total bandwidth (GB/s)",
                                "bandwidth_matrix": [["N/A", "370.1"], ["371.0", "N/A"], ["N/A", "369.9"], ["370.5", "N/A"],
                                                     ["N/A", "740.0"], ["741.5", "N/A"]], "sum": 2963.0},
                               {"name": "device_to_device_memcpy_read_sm", "status": "Waived"}]}}
    run = parse(json.dumps(doc), "nvb.json")
    assert run.gpus == ("NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3")
    totals = [m for m in run.measurements if m.scope == "total"]
    assert [(m.src, m.dst, m.median_gb_per_s) for m in totals] == [(0, 1, 740.0), (1, 0, 741.5)]
    ones = [m for m in run.measurements if m.scope == "transfer"]
    assert len(ones) == 4 and all(m.direction == "bi" and m.extra["transfers"] for m in ones)
    assert any("Waived" in n for n in run.notes)


def test_nccl_tests_text_one_gpu_and_rccl():
    run = read(FX / "nccl-tests-h200x1-smbi.txt")
    assert {m.method for m in run.measurements} == {"nccl.allreduce"}  # from "Collective test concluded"
    oop = [m for m in run.measurements if not m.extra["inplace"]]
    assert [m.size_bytes for m in oop] == [8, 1024, 131072, 16777216]
    assert oop[-1].extra["time_us"] == 11.50 and oop[-1].median_gb_per_s == 1459.2 and oop[-1].extra["ranks"] == 1
    rccl = read(FX / "rccl-tests-mi300x8-hpc-ai-envs30.txt")
    assert rccl.tool == "rccl-tests" and rccl.version == "develop:83d38d9" and len(rccl.gpus) == 8
    first = rccl.measurements[0]
    # no op line: busbw / algbw = 161.14 / 92.08 = 1.75 = 2 x 7/8 on 8 ranks: allreduce
    assert first.method == "nccl.allreduce" and first.extra["busbw_gb_per_s"] == 161.14 and first.extra["op_inferred"]


def test_nccl_tests_json_and_wrong_elements():
    doc = {"version": 1, "args": ["./build/all_gather_perf", "-b", "8"], "nccl_version": 22809,
           "config": {"nthreads": 1, "ngpus": 2}, "devices": [{"rank": 0, "device_info": "NVIDIA H100 80GB HBM3"},
                                                              {"rank": 1, "device_info": "NVIDIA H100 80GB HBM3"}],
           "results": [{"size": 1048576, "count": 131072, "type": "float", "redop": "none", "root": "-1",
                        "out_of_place": {"time": 10.0, "alg_bw": 104.86, "bus_bw": 52.43, "nwrong": 0},
                        "in_place": {"time": 10.5, "alg_bw": 99.86, "bus_bw": 49.93, "nwrong": 3},
                        "experiment_name": "all_gather_perf"}]}
    run = parse(json.dumps(doc), "ag.json")
    assert [m.method for m in run.measurements] == ["nccl.allgather", "nccl.allgather"]
    assert run.measurements[1].status is Status.ERROR and "3 wrong" in run.measurements[1].reason
    assert all(m.src == ALL and m.extra["ranks"] == 2 for m in run.measurements)


def test_nccl_tests_text_with_op_line_and_two_ranks():
    text = "\n".join([
        "# nccl-tests version 2.17.6 nccl-headers=22809 nccl-library=22809",
        "# Collective test starting: sendrecv_perf",
        "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
        "#  Rank  0 Group  0 Pid   1234 on       node device  0 [0000:19:00] NVIDIA H100 80GB HBM3",
        "#  Rank  1 Group  0 Pid   1234 on       node device  1 [0000:3b:00] NVIDIA H100 80GB HBM3",
        "#",
        "#                                                              out-of-place                       in-place          ",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
        "   536870912     134217728     float     sum      -1   1456.2  368.68  368.68       0   1455.0  368.98  368.98     N/A",
    ]) + "\n"
    run = nccltests.parse_text(text, "sr.txt")
    assert run.version == "2.17.6" and run.context["nccl_version"] == "22809"
    assert [m.method for m in run.measurements] == ["nccl.sendrecv"] * 2
    assert run.measurements[1].extra["wrong"] is None and run.measurements[1].ok


def test_osu_device_buffers_and_collective():
    text = "\n".join([
        "# OSU MPI-CUDA Bandwidth Test v5.3",
        "# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)",
        "# Size      Bandwidth (MB/s)",
        "1048576            121715.80",
        "[vm:26145] 1 more process has sent help message help-mpi-common-cuda.txt",
        "16777216          1498916.55",
        "# OSU MPI-CUDA Allreduce Latency Test v5.3",
        "# Size       Avg Latency(us)",
        "8                      12.34",
    ]) + "\n"
    run = osu.parse_text(text, "osu.txt")
    assert run.version == "5.3"
    bw = [m for m in run.measurements if m.method == "mpi.bw"]
    assert [(m.src, m.dst, m.size_bytes) for m in bw] == [(0, 1, 1048576), (0, 1, 16777216)]
    assert [m.median_gb_per_s for m in bw] == pytest.approx([121.7158, 1498.91655])  # OSU MB/s = 10^6 B/s
    assert bw[0].extra["buffers"] == "D D" and bw[0].extra["source_line"] == 4
    coll = [m for m in run.measurements if m.method == "mpi.allreduce"]
    assert coll[0].latency_us == 12.34 and coll[0].src == ALL


def test_osu_parser_reads_linkscope_bench_mpi_text_as_linkscope_writes_it():
    """``bench mpi`` prints OSU's layout with its own title suffix and buffer line; the OSU parser reads it
    (tool linkscope), from a real recording (tests/fixtures/mpi/h100x2-2026-11-25) and from the writer."""
    from linkscope.report.textformats import mpi_osu_text
    from linkscope.results import io as run_io

    fx = FX.parent / "mpi" / "h100x2-2026-11-25" / "r1"
    run = osu.parse_text((fx / "ls_bw_DD.txt").read_text(), "ls_bw_DD.txt")
    assert run.tool == "linkscope" and {m.extra["tool"] for m in run.measurements} == {"linkscope"}
    assert [(m.src, m.dst, m.method, m.extra["buffers"], m.size_bytes, m.extra["osu_value"]) for m in run.measurements] == [
        (0, 1, "mpi.bw", "D D", 65536, 10605.94), (0, 1, "mpi.bw", "D D", 1048576, 161400.38),
        (0, 1, "mpi.bw", "D D", 16777216, 352585.17)]
    for name in ("ls_bw_DD", "ls_lat_HH", "ls_bibw_DD", "ls_ar_HH"):
        record = run_io.from_dict(json.loads((fx / f"{name}.json").read_text()))
        again = osu.parse_text(mpi_osu_text(record), name)
        printed = osu.parse_text((fx / f"{name}.txt").read_text(), name)
        assert [(m.method, m.src, m.size_bytes, m.extra["osu_value"], m.extra["buffers"]) for m in again.measurements] == \
            [(m.method, m.src, m.size_bytes, m.extra["osu_value"], m.extra["buffers"]) for m in printed.measurements]
    osu_own = osu.parse_text((fx / "osu_bw_DD.txt").read_text(), "osu_bw_DD.txt")
    assert osu_own.tool == "osu" and osu_own.measurements[0].extra["tool"] == "osu"


def test_transferbench_config_and_p2p():
    run = read(FX / "transferbench-pr50.txt")
    first = run.measurements[0]
    assert (first.src, first.dst, first.method, first.median_gb_per_s, first.size_bytes) == (0, 1, "sm-push", 33.52, 67108864)
    p2p = run.measurements[1:]
    assert len(p2p) == 6  # the "->" row only; min/max rows left out
    assert {m.method for m in p2p} == {"transferbench.cpu"}  # a CPU executor: not modelled
    dma = transferbench.parse_text(" Transfer 00 , 45.000 GB/s , 1.0 ms , 1048576 bytes , G1 -> DMA00:001 -> G0\n", "t.csv")
    assert dma.measurements[0].method == "ce-read"  # the destination's copy engine reads the peer


@pytest.mark.parametrize("text,needle", [
    ("hello\n", "not the output of a tool"),
    ("nvbandwidth Version: v0.8\n", "no nvbandwidth result"),
    ("nvbandwidth Version: v0.8\nRunning device_local_copy.\nmemcpy local GPU(column) bandwidth (GB/s)\n   0   1\n 0  12.0\n",
     "line 5: 1 values under 2 columns"),
    ("nvbandwidth Version: v0.8\nRunning device_local_copy.\nmemcpy local GPU(column) bandwidth (GB/s)\n   0\n 0  1e9\n",
     "outside"),
    ("nvbandwidth Version: v0.8\nRunning device_local_copy.\nmemcpy local GPU(column) bandwidth (GB/s)\n   0\n 0  fast\n",
     "'fast' is not a number"),
    ("# nThread 1 nGpus 1 minBytes 8\n        8      2   float   sum   -1   1.0  x  y   0\n", "is not a number"),
    ("# OSU MPI Bandwidth Test v5.3\n12 34\n", "no OSU result"),
    ("Unidirectional P2P=Disabled Bandwidth Matrix (GB/s)\n   D\\D  0  1\n  0  1.0\n", "1 values under 2 columns"),
    ("TransferBench v1.52\n", "no TransferBench result"),
    ('{"nvbandwidth": {"testcases": 3}}', "must be a list"),
    ('{"results": [{"size": -1}]}', "not a whole number"),
    ('{"something": 1}', "no tool linkscope reads"),
    ("nvbandwidth Version: v0.8\nRunning device_local_copy.\nmemcpy local GPU(column) bandwidth (GB/s)\n   99999\n 0  1.0\n",
     "larger than"),
])
def test_malformed_outputs_are_one_line_errors(text, needle):
    with pytest.raises(UserError) as info:
        parse(text, "bad.txt")
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_size_bounds_and_forced_format(tmp_path):
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(33 * 1024 * 1024)
    with pytest.raises(SchemaError, match="more than"):
        read(big)
    with pytest.raises(SchemaError, match="no OSU result"):
        read(FX / "transferbench-pr50.txt", "osu")
    with pytest.raises(UserError, match="unknown --format"):
        parse("x", "x", "excel")


def test_nccl_tests_outputs_appended_in_one_file_keep_their_own_op_and_ranks():
    """Two binaries' outputs in one file (2 x H100 allreduce then allgather): each row keeps its own
    operation and the rank count of its own header, not the last one's or the sum of both."""
    nccl = FX.parent / "nccl" / "h100x2-2026-11-25"
    text = (nccl / "all_reduce.txt").read_text() + (nccl / "all_gather.txt").read_text()
    run = parse(text, "both.txt")
    methods = [m.method for m in run.measurements]
    assert methods[:56] == ["nccl.allreduce"] * 56 and methods[56:] == ["nccl.allgather"] * 56
    assert {m.extra["ranks"] for m in run.measurements} == {2} and len(run.gpus) == 2


def test_nvbandwidth_runs_appended_in_one_file():
    """A second run appended to the file lists its devices again: read, not refused."""
    h100 = FX / "h100x2"
    text = (h100 / "nvbandwidth-b1.txt").read_text() + (h100 / "nvbandwidth.txt").read_text()
    run = parse(text, "both.txt")
    assert len(run.gpus) == 2
    assert len(run.measurements) == len(read(h100 / "nvbandwidth-b1.txt").measurements) + len(read(h100 / "nvbandwidth.txt").measurements)


def test_transferbench_healthcheck_fail_lines():
    """The healthcheck preset's layout, written here from TransferBench 1.52's printf formats
    (RunHealthCheck; no public recording found): FAIL lines become measurements, PASS a note."""
    text = "\n".join([
        "TransferBench v1.52",
        "Testing unidirectional reads from CPU ........PASS",
        "Testing unidirectional writes to  CPU ........FAIL (1 test(s))",
        " GPU 03: Measured:  41.20 GB/s      Criteria:  48.00 GB/s",
        "Testing bidirectional  reads + writes ........FAIL (1 test(s))",
        " GPU 05: Measured:  80.10 GB/s      Criteria:  96.00 GB/s",
        "Testing all-to-all XGMI copies        ........FAIL (2 test(s))",
        " GPU 00 to GPU 07:  31.00 GB/s      Criteria:  40.00 GB/s",
        " GPU 07 to GPU 00:  30.50 GB/s      Criteria:  40.00 GB/s",
    ]) + "\n"
    run = transferbench.parse_text(text, "hc.txt")
    got = [(m.src, m.dst, m.method, m.direction, m.median_gb_per_s, m.extra["criterion_gb_per_s"]) for m in run.measurements]
    assert got[:2] == [(3, HOST, "sm-push", "uni", 41.2, 48.0), (HOST, 5, "sm-pull", "bi", 80.1, 96.0)]
    assert got[2:] == [(0, 7, "sm-push", "uni", 31.0, 40.0), (7, 0, "sm-push", "uni", 30.5, 40.0)]
    assert len(run.measurements[2].extra["transfers"]) == 8 * 7  # every GPU to every other, at once
    assert any("PASS" in note for note in run.notes)
