"""Every released layout of each peer tool, every common launcher prefix, and outputs that are cut,
doubled or interleaved (issues #34 and #40). Each test names the defect it pins; the layouts are
the tools' own printf formats at the tags named (github.com/NVIDIA/nvbandwidth, NVIDIA/nccl-tests,
ROCm/TransferBench), written here in those formats, not copied from a run."""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from linkscope.cli import main
from linkscope.errors import SchemaError, UserError
from linkscope.results.peertools import nccltests, nvbandwidth, osu, p2p_sample, transferbench
from linkscope.results.peertools.common import RunContext
from linkscope.results.peertools.detect import parse, read_all
from linkscope.results.schema import HOST, Status

MiB = 1024 * 1024

# nccl-tests 2.13+ (src/common.cu writeResultHeader at v2.13.0), 2 ranks
NCCL_HEAD = """# nThread 1 nGpus 2 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 \
validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  40117 on    node001 device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  40117 on    node001 device  1 [0x0f] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""
NCCL_ROWS = """    33554432       8388608     float     sum      -1    131.1  255.96  255.96      0    130.6  256.94  256.94      0
   134217728      33554432     float     sum      -1    487.5  275.31  275.31      0    487.2  275.49  275.49      0
"""
NCCL_TAIL = """# Out of bounds values : 0 OK
# Avg bus bandwidth    : 265.9
#
"""


def _run(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


# ---- nccl-tests / rccl-tests -------------------------------------------------------------------------
def _allreduce_rows(ranks: int) -> str:
    """NCCL_ROWS' sizes and algbw with the busbw an allreduce over ``ranks`` ranks prints (2(n-1)/n x algbw)."""
    out = []
    for size, t, algbw in ((33554432, 131.1, 255.96), (134217728, 487.5, 275.31)):
        busbw = algbw * 2 * (ranks - 1) / ranks
        out.append(f"{size:>12} {size // 4:>14}     float     sum      -1  {t:7.1f} {algbw:7.2f} {busbw:7.2f}      0  "
                   f"{t:7.1f} {algbw:7.2f} {busbw:7.2f}      0\n")
    return "".join(out)


BCAST_ROWS = """    33554432       8388608     float    none       0    131.1  255.96  255.96      0    130.6  256.94  256.94      0
"""


def test_nccl_table_without_header_is_read_and_never_assumes_one_rank():
    """#34: a table pasted without '# nThread ... nGpus' was refused, and with --format it silently
    assumed one rank. Its busbw / algbw is the op's factor of the run's rank count, so an allreduce table
    says its count; a broadcast's (factor 1) says nothing, and --ranks fills it."""
    run = parse(_allreduce_rows(8) + NCCL_TAIL, "all_reduce.txt", fmt="nccl-tests")
    assert len(run.measurements) == 4 and {m.extra["ranks"] for m in run.measurements} == {8}
    assert (run.run_context.ranks, run.run_context.ranks_from) == (8, "output")
    bcast = parse(BCAST_ROWS + NCCL_TAIL, "broadcast.txt", fmt="nccl-tests")
    assert all("ranks" not in m.extra for m in bcast.measurements) and bcast.run_context.ranks is None
    assert any("rank count is not printed" in n for n in bcast.notes)
    stated = parse(BCAST_ROWS + NCCL_TAIL, "broadcast.txt", fmt="nccl-tests", stated=RunContext(ranks=8))
    assert {m.extra["ranks"] for m in stated.measurements} == {8}
    assert (stated.run_context.ranks, stated.run_context.ranks_from) == (8, "option")


def test_the_printed_rates_outrank_rank_lines_a_paste_elided_or_edited():
    """#34, coreweave/nccl-tests README: rank lines 0-4 then '...' over a 32-rank table, and a 'Rank 143'
    line copied from another run over a 128-rank table. nccl-tests computed busbw with the real count."""
    head = NCCL_HEAD.replace("#  Rank  1 Group", "#  Rank  1 Group").split("#\n#   ")[0]
    elided = parse(head + "...\n" + "\n".join(NCCL_HEAD.splitlines()[-3:]) + "\n" + _allreduce_rows(32) + NCCL_TAIL,
                   "log.txt")
    assert {m.extra["ranks"] for m in elided.measurements} == {32}
    assert any("elided or edited" in n for n in elided.notes)
    rank143 = "#  Rank 143 Group  0 Pid  14840 on slurm-gb200-207-171 device  3 [0x01] NVIDIA Graphics Device\n#\n"
    edited = parse(rank143 + "\n".join(NCCL_HEAD.splitlines()[-3:]) + "\n" + _allreduce_rows(128) + NCCL_TAIL,
                   "log.txt", stated=RunContext(ranks=144))
    assert {m.extra["ranks"] for m in edited.measurements} == {128}
    assert any("--ranks 144, but" in n for n in edited.notes)
    # a complete rank list the rates agree with keeps its count, whatever --ranks says
    full = parse(NCCL_HEAD + NCCL_ROWS + NCCL_TAIL, "all_reduce.txt", stated=RunContext(ranks=144))
    assert {m.extra["ranks"] for m in full.measurements} == {2}


def test_a_paste_starting_inside_the_rank_list_counts_the_ranks_it_implies():
    """#34: a paste whose rank list starts at '# Rank 71' (coreweave/nccl-tests#43, a 72-rank NVL72 run) was
    read as one rank, so a 72-rank allreduce was judged as a one-GPU copy. Where the rates say nothing of the
    count (a broadcast), the rank line gives a lower bound and --ranks the rest."""
    rank71 = "#  Rank 71 Group  0 Pid  14840 on slurm-gb200-207-171 device  3 [0x01] NVIDIA Graphics Device\n#\n"
    table = "\n".join(NCCL_HEAD.splitlines()[-3:]) + "\n"
    run = parse(rank71 + table + BCAST_ROWS + NCCL_TAIL, "broadcast.txt")
    assert {m.extra["ranks"] for m in run.measurements} == {72}
    assert any("at least 72 ranks" in n for n in run.notes)
    stated = parse(rank71 + table + BCAST_ROWS + NCCL_TAIL, "broadcast.txt", stated=RunContext(ranks=144))
    assert {m.extra["ranks"] for m in stated.measurements} == {144} and stated.run_context.ranks_from == "option"
    rates = parse(rank71 + table + _allreduce_rows(72) + NCCL_TAIL, "all_reduce.txt")
    assert {m.extra["ranks"] for m in rates.measurements} == {72}


@pytest.mark.parametrize("prefix", ["0: ", "  0: ", "[1,0]<stdout>:", "> ", "2024-05-02T10:11:12.123Z ",
                                    "2024-05-02T10:11:12.123456789+00:00 stdout F ", "[2024-05-02 10:11:12,123] ",
                                    "nccl-worker-1  | ", "\x1b[32m"])
def test_launcher_prefixes_and_quoting_are_taken_off(prefix):
    """#34: rows prefixed by srun --label, mpirun --tag-output or '> ' quoting did not parse; nor did a container
    runtime's log lines (CRI), Python logging's stamps, docker compose's service column or terminal colour codes."""
    text = "".join(prefix + line + "\n" for line in ("# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903\n"
                                                       "# Collective test starting: all_reduce_perf\n" + NCCL_HEAD +
                                                       NCCL_ROWS + NCCL_TAIL).splitlines())
    run = parse(text, "log.txt")
    assert run.tool == "nccl-tests" and len(run.measurements) == 4 and run.complete
    assert run.run_context.ranks == 2 and run.run_context.launcher
    assert {m.method for m in run.measurements} == {"nccl.allreduce"}


@pytest.mark.parametrize("prefix", ["svc-1  | 2024-05-01T10:00:00.123456789Z ",  # docker compose logs -t
                                    "2024-05-01T10:00:00.123456789Z ",  # kubectl logs --timestamps
                                    "[pod/nccl-0/worker] 2024-05-01T10:00:00.123456789Z ",  # kubectl --prefix too
                                    "May 01 10:00:00 node01 all_reduce_perf[4242]: ",  # journalctl
                                    "2024-05-01T10:00:00+0000 node01 all_reduce_perf[4242]: ",  # journalctl -o short-iso
                                    "May 01 10:00:00 ", "00:00:01.123456 ",  # ts, ts -s
                                    "0: 2024-05-01T10:00:00.123Z ",  # srun --label over a time-stamped log
                                    "2024-05-01T10:00:00.123Z [1,0]<stdout>:",  # a CI stamp over --tag-output
                                    "> svc-1  | "])
def test_launcher_prefixes_nested_in_any_order_are_taken_off(prefix):
    """#34: the prefixes were tried in one fixed order, once each, so a docker compose column before an RFC 3339
    stamp (`docker compose logs -t`) left the stamp on every line and nothing parsed; journalctl's and ts's stamps
    and kubectl's --prefix were not known at all. Each layer is now peeled where it is the outer one."""
    body = ("# nccl-tests version 2.13.8 nccl-headers=21903 nccl-library=21903\n" + NCCL_HEAD + NCCL_ROWS + NCCL_TAIL)
    text = "\ufeff" + "".join(prefix + line + "\n" for line in body.splitlines())
    run = parse(text, "log.txt")
    assert run.tool == "nccl-tests" and len(run.measurements) == 4 and run.complete and not run.unread
    assert run.run_context.ranks == 2 and run.run_context.launcher


def test_nccl_2_0_to_2_12_layout_no_root_and_error_column():
    """#34: the pre-2.13 layout (allreduce prints no root column; the 4th column is the largest
    error, %5.0le) was misread: the op became reduce, an in-place time became '25 wrong elements'.
    v2.9.0 src/all_reduce.cu print_header / common.cu PRINT("  %7s  %6.2f  %6.2f  %5.0le")."""
    text = """# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
""" + "".join(f"#   Rank  {r} Pid  12345 on      dgx01 device  {r} [0x{r:02x}] Tesla V100-SXM2-32GB\n" for r in range(8)) + """#
#                                                     out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   134217728      33554432   float     sum   1095.6  122.51  214.39  1e-06   1094.2  122.66  214.66  1e-06
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 214.5
#
"""
    run = parse(text, "all_reduce_perf.log")
    assert [m.status for m in run.measurements] == [Status.OK, Status.OK]
    out_of_place, in_place = run.measurements
    assert out_of_place.method == "nccl.allreduce" and out_of_place.extra["root"] == ""
    assert out_of_place.extra["time_us"] == 1095.6 and out_of_place.extra["busbw_gb_per_s"] == 214.39
    assert in_place.extra["max_error"] == 1e-06 and in_place.extra["wrong"] is None
    assert run.run_context.layout == "2.0-2.12" and run.run_context.ranks == 8


def test_nccl_1x_layout_time_in_ms():
    """nccl-tests 1.x (2017, b188a15 src/all_reduce.cu): 'bytes N type op', time in ms (%7.3f)."""
    text = """nThread 1 nGpus 2 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
#   Rank  0 on     host01 device  0 [0x04] Tesla P100-SXM2-16GB
#   Rank  1 on     host01 device  1 [0x05] Tesla P100-SXM2-16GB
#                                 out-of-place                    in-place
#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res
     1048576        262144   float     sum    0.089  11.78  11.78    0e+00    0.088  11.92  11.92    0e+00
 Out of bounds values : 0 OK
 Avg bus bandwidth    : 11.85
"""
    run = parse(text, "all_reduce.txt", fmt="nccl-tests")
    m = run.measurements[0]
    assert m.extra["time_us"] == pytest.approx(89.0) and m.median_gb_per_s == 11.78
    assert run.run_context.layout == "1.x" and run.complete


def test_one_rank_in_place_rate_is_not_judged_and_the_file_is_read():
    """#34: a one-rank run's in-place algbw (1.78e6 GB/s: nothing moves) tripped a bound and the
    whole file was rejected."""
    text = NCCL_HEAD.replace("nGpus 2", "nGpus 1").replace(
        "#  Rank  1 Group  0 Pid  40117 on    node001 device  1 [0x0f] NVIDIA H100 80GB HBM3\n", "") + \
        "    16777216       4194304     float     sum      -1    11.50  1459.2    0.00      0     0.01  1777216.00    0.00      0\n" + \
        NCCL_TAIL
    run = parse(text, "all_reduce.txt")
    assert [m.status for m in run.measurements] == [Status.OK, Status.WAIVED]
    assert "nothing moves" in run.measurements[1].reason


def test_interleaved_nccl_outputs_are_refused():
    """#40: two interleaved nccl-tests outputs were judged as one 4-GPU allreduce (all_gather rows too)."""
    a = ("# Collective test starting: all_reduce_perf\n" + NCCL_HEAD + NCCL_ROWS + NCCL_TAIL).splitlines()
    b = ("# Collective test starting: all_gather_perf\n" + NCCL_HEAD + NCCL_ROWS.replace("sum", "none") +
         NCCL_TAIL).splitlines()
    mixed = "".join(x + "\n" + y + "\n" for x, y in zip(a, b))
    with pytest.raises(UserError, match="interleaved"):
        parse(mixed, "both.txt")
    # one after the other is two runs, both read
    run = parse("\n".join(a + b) + "\n", "both.txt")
    assert {m.method for m in run.measurements} == {"nccl.allreduce", "nccl.allgather"}


def test_nccl_without_closing_line_is_incomplete_and_a_cut_row_is_not_read():
    """#40: an output cut inside its last row was read as real."""
    text = NCCL_HEAD + NCCL_ROWS + "   268435456      67108864     float     sum      -1    960.1  27"
    run = parse(text, "all_reduce.txt")
    assert len(run.measurements) == 4 and not run.complete
    assert "Avg bus bandwidth" in run.incomplete
    assert run.unread and "no final newline" in run.unread_line()


# ---- nvbandwidth ------------------------------------------------------------------------------------
NVB_V02 = """nvbandwidth Version: v0.2
Built from Git version: 3ba8ff2

NOTE: This tool reports current measured bandwidth on your system.
Additional system-specific tuning may be required to achieve maximal peak bandwidth.

CUDA Runtime Version: 12000
CUDA Driver Version: 12000
Driver Version: 525.85.12

Device 0: NVIDIA H800
Device 1: NVIDIA H800

Running device_to_device_bidirectional_memcpy_read_sm.
memcpy SM GPU(row) -> GPU(column) bandwidth (GB/s)
          0         1
0       N/A    728.50
1    729.10       N/A

SUM device_to_device_bidirectional_memcpy_read_sm 1457.60

Running device_to_device_bidirectional_memcpy_read_ce.
memcpy CE GPU(row) <-> GPU(column) bandwidth (GB/s)
          0         1
0       N/A    367.20
1    367.90       N/A

SUM device_to_device_bidirectional_memcpy_read_ce 735.10

"""


def test_nvbandwidth_v02_sm_bidirectional_values_are_sums_and_default_64mib():
    """#34: v0.2's SM bidirectional values are the sum of both directions (memcpy.h v0.2:
    MemcpyOperationSM defaults to SUM_BW) but were read as one direction; its default buffer is
    64 MiB (common.h v0.2-v0.6), not 512."""
    run = parse(NVB_V02, "nvb.txt")
    sm = [m for m in run.measurements if m.extra["test"].endswith("_sm")]
    assert sm and all(m.direction == "bi" and m.scope == "total" for m in sm)
    ce = [m for m in run.measurements if m.extra["test"].endswith("_ce")]
    assert ce and all(m.direction == "bi" and m.scope == "transfer" for m in ce)  # USE_FIRST_BW: one copy
    assert {m.size_bytes for m in run.measurements} == {64 * MiB}
    assert run.run_context.default_size_bytes == 64 * MiB and run.run_context.size_from == "default of v0.2"
    assert run.complete
    v08 = parse(NVB_V02.replace("v0.2", "v0.8"), "nvb.txt")
    assert {m.size_bytes for m in v08.measurements} == {512 * MiB}
    assert {m.size_bytes for m in parse(NVB_V02, "nvb.txt", size_bytes=MiB).measurements} == {MiB}


def test_nvbandwidth_every_test_waived_is_an_answer():
    """#34: a run where every test is waived (no P2P) exited 1 'no testcase matrix'. v0.2-v0.4
    print 'Waiving <key>.' (nvbandwidth.cpp runTestcase); later versions 'Waived: '."""
    text = ("nvbandwidth Version: v0.2\n\nDevice 0: NVIDIA GeForce RTX 4090\nDevice 1: NVIDIA GeForce RTX 4090\n\n"
            "Waiving device_to_device_memcpy_read_ce.\n\nWaiving device_to_device_memcpy_write_ce.\n\n")
    run = parse(text, "nvb.txt")
    assert not run.measurements
    assert {k: o.status for k, o in run.outcomes.items()} == {"device_to_device_memcpy_read_ce": "Waived",
                                                               "device_to_device_memcpy_write_ce": "Waived"}
    assert any("every testcase was waived" in n for n in run.notes)


def test_nvbandwidth_data_check_assert_is_named():
    """#34: a data-check ASSERT showed only as 'printed no result'."""
    text = ("nvbandwidth Version: v0.8\n\nRunning device_to_device_memcpy_write_ce.\n"
            " Invalid value when checking the pattern at 0x7f3a40000000\n"
            " Current offset : 1024 \n"
            "[CUDA_ERROR_ASSERT] device-side assert triggered in expression cuStreamSynchronize(stream) on node1 in "
            "void MemcpyOperation::doMemcpy() : memcpy.cpp:470\n")
    run = parse(text, "nvb.txt")
    assert run.outcomes["device_to_device_memcpy_write_ce"].status == "Error"
    assert any("data check failed" in n for n in run.notes)


def test_nvbandwidth_quoted_with_greater_than_is_detected():
    """#34: output quoted with '> ' (a forum reply) was not detected."""
    quoted = "".join("> " + line + "\n" for line in NVB_V02.splitlines())
    run = parse(quoted, "reply.txt")
    assert run.tool == "nvbandwidth" and len(run.measurements) == 4 and run.run_context.launcher == "> quoting"


def test_nvbandwidth_number_cut_at_end_of_file_is_not_read():
    """#40: "395.14" cut to "39" became 39 GB/s, 'low ... peer access likely off', exit 0."""
    full = NVB_V02.replace("v0.2", "v0.8")
    cut = full[:full.index("367.90") + 2]  # ... "1    36"
    run = parse(cut, "nvb.txt")
    assert 36.0 not in [m.median_gb_per_s for m in run.measurements]
    assert not run.complete and run.unread


def test_nvbandwidth_running_without_sum_and_matrix_cut_are_incomplete():
    """#40: a matrix cut mid-way reported '3 numbers: 3 ok'; 'Running X' with no 'SUM X' was complete."""
    full = NVB_V02.replace("v0.2", "v0.8")
    cut = full[:full.index("1    367.90")]  # ends after row 0 of the last matrix, with its newline
    run = parse(cut, "nvb.txt")
    assert not run.complete
    assert "1 of its 2 rows" in run.incomplete and "no closing SUM" in run.incomplete
    assert run.outcomes["device_to_device_bidirectional_memcpy_read_ce"].status == "Running"
    assert run.outcomes["device_to_device_bidirectional_memcpy_read_sm"].status == "Passed"


# ---- OSU ---------------------------------------------------------------------------------------------
OSU_HD = """# OSU MPI-CUDA Bandwidth Test v7.1
# Send Buffer on HOST (H) and Receive Buffer on DEVICE (D)
# Size      Bandwidth (MB/s)
1                       0.52
4194304             13514.20
"""


def test_osu_host_device_buffers_have_a_gpu_end():
    """#34: H D and D H buffers were 'host memory to host memory'."""
    run = parse(OSU_HD, "osu_bw.txt")
    assert {(m.src, m.dst) for m in run.measurements} == {(HOST, 1)}
    dh = parse(OSU_HD.replace("HOST (H) and Receive Buffer on DEVICE (D)", "DEVICE (D) and Receive Buffer on HOST (H)"),
               "osu_bw.txt")
    assert {(m.src, m.dst) for m in dh.measurements} == {(0, HOST)}
    assert run.run_context.buffers == ("H D",) and run.run_context.ranks == 2


def test_osu_number_cut_at_end_of_file_is_not_read():
    """#40: OSU "13514.20" cut to "135" became 0.135 GB/s."""
    run = parse(OSU_HD[:OSU_HD.index("13514.20") + 3], "osu_bw.txt")
    assert [m.size_bytes for m in run.measurements] == [1]
    assert not run.complete and "no final newline" in run.unread_line()


# ---- p2pBandwidthLatencyTest -------------------------------------------------------------------------
P2P_CANNOT = """[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]
Device: 0, NVIDIA A100-PCIE-40GB, pciBusID: 17, pciDeviceID: 0, pciDomainID:0
Device: 1, NVIDIA A100-PCIE-40GB, pciBusID: 65, pciDeviceID: 0, pciDomainID:0
Device=0 CANNOT Access Peer Device=1
Device=1 CANNOT Access Peer Device=0

Unidirectional P2P=Enabled Bandwidth (P2P Writes) Matrix (GB/s)
   D\\D     0      1
     0 1290.30  11.12
     1  11.05 1291.10
"""


def test_p2p_cannot_access_peer_means_no_peer_copies():
    """#34: the P2P=Enabled matrix was judged as peer copies when the file says CANNOT Access Peer."""
    run = parse(P2P_CANNOT, "p2p.txt")
    pairs = [m for m in run.measurements if m.src != m.dst]
    assert {m.method for m in pairs} == {"ce-nopeer"} and not any(m.extra["peer_access"] for m in pairs)
    assert any("CANNOT access" in n for n in run.notes)


def test_p2p_file_starting_with_bidirectional_is_detected():
    """#34: a file whose first block is 'Bidirectional P2P=' was not detected."""
    text = ("Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n   D\\D     0      1\n"
            "     0 2600.00 740.50\n     1 741.00 2610.00\n")
    run = parse(text, "p2p.txt")
    assert run.tool == "p2pBandwidthLatencyTest" and len(run.measurements) == 4


def test_p2p_matrix_cut_midway_is_incomplete():
    run = parse(P2P_CANNOT[:P2P_CANNOT.index("     1  11.05")], "p2p.txt")
    assert not run.complete and "1 of its 2 rows" in run.incomplete


# ---- TransferBench -----------------------------------------------------------------------------------
def test_transferbench_bidirectional_rows_with_the_sum_arrow():
    """#34: every '<->' row failed ('11 values under 10 columns': '<-' was tried first) and the whole
    file exited 1."""
    text = """TransferBench v1.50
Bytes Per Direction 268435456
Bidirectional copy peak bandwidth GB/s [Local read / Remote write] (GPU-Executor: GFX)
 SRC\\DST      GPU 00    GPU 01
  GPU 00  ->     N/A     49.71
  GPU 00  <-     N/A     49.80
  GPU 00 <->     N/A     99.51
  GPU 01  ->   49.80       N/A
  GPU 01  <-   49.71       N/A
  GPU 01 <->   99.51       N/A
"""
    run = parse(text, "tb.txt")
    totals = [m for m in run.measurements if m.scope == "total"]
    assert len(run.measurements) == 6 and len(totals) == 2
    assert {(m.src, m.dst, m.median_gb_per_s) for m in totals} == {(0, 1, 99.51), (1, 0, 99.51)}


def test_transferbench_scaling_preset_is_read():
    """#34: the scaling preset's output was not read (TransferBench.cpp RunScalingBenchmark, v1.52)."""
    text = """TransferBench v1.52
GPU-GFX Scaling benchmark:
==========================
- Copying 268435456 bytes from GPU 0 to other devices
- All numbers reported as GB/sec

NumCUs  CPU00       GPU00       GPU01
   1     12.10       40.20       20.30
   2     22.40       80.10       39.90
 Best    22.40(  2)   80.10(  2)   39.90(  2)
"""
    run = transferbench.parse_text(text, "tb.txt")
    best = [m for m in run.measurements if m.ok]
    assert {(m.src, m.dst, m.method, m.median_gb_per_s) for m in best} == {
        (0, HOST, "sm-push", 22.40), (0, 0, "local", 80.10), (0, 1, "sm-push", 39.90)}
    assert len(run.measurements) == 9 and all(m.reason for m in run.measurements if not m.ok)


TB_160_A2A = """TransferBench v1.60.00
GPU-GFX All-To-All benchmark:
==========================
- Copying 67108864 bytes between directly connected pairs of GPUs using 4 CUs (6 Transfers)
Test 1:
 Executor: GPU 00 |   90.100 GB/s |    1.490 ms |    134217728 bytes | 92.000 GB/s (sum)
     Transfer 00  |   46.000 GB/s |    1.459 ms |     67108864 bytes | F0 -> G000:004 -> F1
     Transfer 01  |   46.000 GB/s |    1.459 ms |     67108864 bytes | F0 -> G000:004 -> F2
 Executor: GPU 01 |   90.200 GB/s |    1.488 ms |    134217728 bytes | 92.000 GB/s (sum)
     Transfer 02  |   46.000 GB/s |    1.459 ms |     67108864 bytes | F1 -> G001:004 -> F0
     Transfer 03  |   46.000 GB/s |    1.459 ms |     67108864 bytes | F1 -> G001:004 -> F2
 Executor: GPU 02 |   90.300 GB/s |    1.486 ms |    134217728 bytes | 92.000 GB/s (sum)
     Transfer 04  |   46.000 GB/s |    1.459 ms |     67108864 bytes | F2 -> G002:004 -> F0
     Transfer 05  |   46.000 GB/s |    1.459 ms |     67108864 bytes | F2 -> G002:004 -> F1
 Aggregate (CPU)  |  250.000 GB/s |    1.611 ms |    402653184 bytes | Overhead: 0.121 ms

Summary: [67108864 bytes per Transfer]
==========================================================
SRC\\DST  GPU 00     GPU 01     GPU 02        STotal      Actual
GPU 00      N/A     46.000     46.000        92.000     92.000
GPU 01   46.000        N/A     46.000        92.000     92.000
GPU 02   46.000     46.000        N/A        92.000     92.000

RTotal   92.000     92.000     92.000       276.000     92.000     92.000

Average   bandwidth (GPU Timed):   46.000 GB/s
Aggregate bandwidth (GPU Timed):  276.000 GB/s
Aggregate bandwidth (CPU Timed):  250.000 GB/s
"""


def test_transferbench_160_executor_letters_are_read():
    """v1.60 prints a Transfer's executor as its config letter and %03d (``G000:004``; v1.52 printed
    ``GPU00:004``): no Transfer line was read and the file exited 1 ('no TransferBench result'). The
    executor totals and the a2a summary matrix are said as unread, not left unaccounted."""
    run = transferbench.parse_text(TB_160_A2A, "tb.txt")
    assert run.version == "1.60.00"
    assert [(m.src, m.dst, m.method, m.extra["subexecutors"]) for m in run.measurements] == [
        (0, 1, "sm-push", 4), (0, 2, "sm-push", 4), (1, 0, "sm-push", 4), (1, 2, "sm-push", 4),
        (2, 0, "sm-push", 4), (2, 1, "sm-push", 4)]
    assert all(len(m.extra["transfers"]) == 6 for m in run.measurements)
    nic = transferbench.parse_text("TransferBench v1.60.00\n     Transfer 00  |   40.000 GB/s |    1.678 ms |"
                                   "     67108864 bytes | G0 -> I000:002 -> G1\n", "tb.txt")
    assert [m.method for m in nic.measurements] == ["transferbench.nic"]  # ExeTypeStr "CGDIN": I is the NIC
    unread = {n for n, _ in run.unread}
    numbered = {n for n, line in enumerate(TB_160_A2A.splitlines(), 1) if "GB/s" in line or line.startswith(("GPU 0", "RTotal"))}
    read = {m.extra["source_line"] for m in run.measurements}
    assert numbered <= unread | read


def test_transferbench_kernel_flows_on_their_own_cus_and_links_are_judged(tmp_path):
    """Each Transfer of a GPU executor runs on the CUs it names (its subexecutors), so on a full mesh the
    a2a's flows share neither CUs nor links: each is judged against its link. Before, every flow was 'not
    judged: one flow of a concurrent transferbench' (the judge asked for one copy per source GPU)."""
    path = tmp_path / "tb.txt"
    path.write_text(TB_160_A2A)
    out = tmp_path / "c.json"
    with contextlib.redirect_stdout(io.StringIO()):
        main(["check", str(path), "--preset", "mi300x-8", "--json", str(out)])
    import json
    verdicts = [v["verdict"] for v in json.loads(out.read_text())["extra"]["check"]["verdicts"]]
    assert len(verdicts) == 6 and set(verdicts) == {"ok"}


# ---- one row never rejects the file; every number accounted for --------------------------------------
def test_a_bad_row_is_left_out_with_its_reason_not_the_file():
    text = NVB_V02.replace("1    729.10       N/A", "1    729.10")
    run = parse(text, "nvb.txt")
    assert len(run.measurements) == 3 and "1 values under 2 columns" in run.unread_line()


def test_modules_still_parse_directly():
    assert nvbandwidth.parse_text(NVB_V02, "x").tool == "nvbandwidth"
    assert nccltests.parse_text(NCCL_HEAD + NCCL_ROWS + NCCL_TAIL, "x").run_context.launch == "eager"
    assert osu.parse_text(OSU_HD, "x").tool == "osu"
    assert p2p_sample.parse_text(P2P_CANNOT, "x").tool == "p2pBandwidthLatencyTest"


# ---- check: twice, fail-below -----------------------------------------------------------------------
def test_the_same_file_given_twice_is_counted_once(tmp_path):
    """#40: the same file given twice counted twice."""
    path = tmp_path / "all_reduce.txt"
    path.write_text(NCCL_HEAD + NCCL_ROWS + NCCL_TAIL)
    copy = tmp_path / "copy.txt"
    copy.write_text(path.read_text())
    runs, dropped = read_all([path, path, copy])
    assert len(runs) == 1 and len(dropped) == 2
    code, out, err = _run(["check", str(path), str(copy), "--synthetic", "nvswitch:2"])
    assert code == 0 and "counted once" in err and "summary: 4 numbers" in out


def test_fail_below_fails_when_nothing_was_judged(tmp_path):
    """#40: --fail-below exited 0 when nothing could be judged."""
    path = tmp_path / "nvb.txt"
    path.write_text("nvbandwidth Version: v0.2\n\nWaiving device_to_device_memcpy_read_ce.\n\n")
    code, out, err = _run(["check", str(path), "--synthetic", "nvswitch:2"])
    assert code == 0, err  # the waiver is the answer
    code, _, err = _run(["check", str(path), "--synthetic", "nvswitch:2", "--fail-below", "0.8"])
    assert code == 3 and "nothing was judged" in err


def test_fail_below_fails_when_data_was_wrong(tmp_path):
    """#40: --fail-below exited 0 when #wrong > 0."""
    path = tmp_path / "all_reduce.txt"
    path.write_text(NCCL_HEAD + NCCL_ROWS.replace("256.94      0", "256.94     12") + NCCL_TAIL)
    code, _, err = _run(["check", str(path), "--synthetic", "nvswitch:2", "--fail-below", "0.01"])
    assert code == 3 and "wrong data" in err


def test_fail_below_fails_on_an_incomplete_output(tmp_path):
    path = tmp_path / "all_reduce.txt"
    path.write_text(NCCL_HEAD + NCCL_ROWS)
    code, out, err = _run(["check", str(path), "--synthetic", "nvswitch:2"])
    assert code == 0 and "incomplete" in out
    code, _, err = _run(["check", str(path), "--synthetic", "nvswitch:2", "--fail-below", "0.01"])
    assert code == 3 and "incomplete output" in err


def test_check_ranks_hosts_launch_options(tmp_path):
    path = tmp_path / "rows.txt"
    path.write_text(BCAST_ROWS + NCCL_TAIL)
    code, out, err = _run(["check", str(path), "--format", "nccl-tests", "--synthetic", "nvswitch:8", "--ranks", "8",
                           "--launch", "graph", "--json", str(tmp_path / "r.json")])
    assert code == 0, err
    import json
    record = json.loads((tmp_path / "r.json").read_text())
    assert {m["extra"]["ranks"] for m in record["measurements"]} == {8}
    code, _, err = _run(["check", str(path), "--format", "nccl-tests", "--synthetic", "nvswitch:8", "--launch", "lazy"])
    assert code == 1 and "--launch" in err and "Traceback" not in err


def test_all_tools_keep_one_number_per_line_provenance():
    run = parse(NVB_V02, "nvb.txt")
    keys = [(m.extra["tool"], m.extra["tool_version"], m.extra["source_file"], m.extra["source_line"], m.src, m.dst)
            for m in run.measurements]
    assert len(keys) == len(set(keys)) and all(k[1] == "v0.2" for k in keys)


def test_unknown_fixture_path_is_a_user_error(tmp_path):
    with pytest.raises(UserError):
        read_all([Path(tmp_path / "missing.txt")])


def _twin_of(tmp_path, text: str, *options: str) -> list[dict]:
    import json
    path = tmp_path / "t.txt"
    path.write_text(text)
    out = tmp_path / "t.json"
    code, _, err = _run(["check", str(path), "--format", "nccl-tests", "--synthetic", "nvswitch:8", *options,
                         "--json", str(out)])
    assert code in (0, 3), err
    return json.loads(out.read_text())["extra"]["check"]["verdicts"]


def test_a_headerless_table_is_judged_as_nccl_tests_defaults_ran_it_unless_launch_is_said(tmp_path):
    """#34: --launch was accepted but never reached the judge (every headerless table was judged as graph
    launches); nccl-tests' own default is eager (-G 0, common.cu:110) with one GPU per thread (-g 1)."""
    default = _twin_of(tmp_path, _allreduce_rows(8) + NCCL_TAIL)
    assert all("eager launch" in v["expectation"]["detail"] for v in default if v["expectation"]["detail"])
    said = _twin_of(tmp_path, _allreduce_rows(8) + NCCL_TAIL, "--launch", "graph")
    assert all("graph launch" in v["expectation"]["detail"] for v in said if v["expectation"]["detail"])


def test_the_header_s_gpus_per_thread_sets_the_twin_s_eager_host_time(tmp_path):
    """#34: the judge's twin took every eager launch as one thread driving all ranks; nccl-tests' header says
    how many GPUs each thread drove (nGpus): 8 GPUs from one thread cost the host 8 launches an operation."""
    def header(gpus: int) -> str:
        return NCCL_HEAD.replace("nGpus 2", f"nGpus {gpus}").split("# Using devices")[0]
    small = "       65536         16384     float     sum      -1    30.00    2.18    3.82      0    30.00    2.18    3.82      0\n"
    cols = "\n".join(NCCL_HEAD.splitlines()[-3:]) + "\n"
    one = _twin_of(tmp_path, header(1) + cols + small + _allreduce_rows(8) + NCCL_TAIL, "--ranks", "8")
    eight = _twin_of(tmp_path, header(8) + cols + small + _allreduce_rows(8) + NCCL_TAIL, "--ranks", "8")
    # the 64 KiB row: the share of the twin's time that is fixed cost (launches, latencies) grows with the host's
    fixed_one, fixed_eight = one[0]["expectation"]["fixed_share"], eight[0]["expectation"]["fixed_share"]
    assert fixed_one is not None and fixed_eight is not None and fixed_one < 0.8 * fixed_eight


# ---- the environment a run was launched with ----------------------------------------------------------
OSU_ROCM_DD_16M = """# OSU MPI-ROCM Bandwidth Test v7.0
# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)
# Size      Bandwidth (MB/s)
16777216           140000.00
"""


def _verdicts(tmp_path, *args: str) -> tuple[int, list[dict]]:
    import json

    path = tmp_path / "osu.txt"
    path.write_text(OSU_ROCM_DD_16M)
    out = tmp_path / "c.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(["check", str(path), "--preset", "mi250x-8gcd", "--gpus", "0,1", "--json", str(out), *args])
    return code, (json.loads(out.read_text())["extra"]["check"]["verdicts"] if out.exists() else [])


def test_hsa_enable_sdma_0_judges_a_rocm_mpi_copy_on_blit_kernels(tmp_path):
    """OSU D D between the two GCDs of an MI250 run with HSA_ENABLE_SDMA=0 (ROCr copies on blit kernels over
    all four xGMI links): 140 GB/s was 'suspicious-high' against one SDMA engine's ~49, because nothing could
    say how the run was launched; ``check --env HSA_ENABLE_SDMA=0`` says it and the copy is judged as ce-blit."""
    _, before = _verdicts(tmp_path)
    assert [v["verdict"] for v in before] == ["suspicious-high"]
    _, after = _verdicts(tmp_path, "--env", "HSA_ENABLE_SDMA=0")
    assert [v["verdict"] for v in after] == ["ok"] and "ce-blit" in after[0]["reason"]


def test_a_malformed_env_is_one_clear_line(tmp_path):
    code, verdicts = _verdicts(tmp_path, "--env", "HSA_ENABLE_SDMA")
    assert code != 0 and not verdicts


OSU_MBW_MR = """# OSU MPI-CUDA Multiple Bandwidth / Message Rate Test v7.3
# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)
# [ pairs: 8 ] [ window size: 64 ]
# Size                  MB/s        Messages/s
1                      12.81       12812345.12
4194304             92345.12          22016.23
"""


def test_osu_mbw_mr_is_read_as_the_pairs_sum_and_not_judged():
    """#34 (blind8): osu_mbw_mr ('Multiple Bandwidth / Message Rate', mpi/pt2pt/osu_mbw_mr.c: '# [ pairs: %d ] [ window
    size: %d ]', then '# Size  MB/s  Messages/s' rows '%-*d%*.*f%*.*f') exited 1 'no OSU result in it'. Its MB/s is
    the sum over the pairs (rank i -> rank i + pairs), on GPUs the output does not name: read, not judged."""
    run = parse(OSU_MBW_MR, "osu_mbw_mr.txt")
    assert [m.method for m in run.measurements] == ["mpi.mbw_mr"] * 2
    last = run.measurements[-1]
    assert last.median_gb_per_s == pytest.approx(92.34512) and last.extra["pairs"] == 8
    assert last.extra["messages_per_s"] == pytest.approx(22016.23)
    assert last.status is Status.WAIVED and "8 pairs" in last.reason
    varied = OSU_MBW_MR.replace("[ window size: 64 ]", "[ window size: varied ]")
    with pytest.raises(SchemaError, match="varied window sizes"):
        parse(varied, "osu_mbw_mr_v.txt")


def _nccl_2_19(time_label: str = "time", stamps: bool = False) -> str:
    """An all_reduce in nccl-tests 2.19's layout, printed with v2.19.6's formats (src/util.cu writeResultHeader,
    writeBenchmarkLinePreamble, writeBenchmarkLineBody, writeTimestamp): ``-C 1`` labels the time ``cputime``,
    ``-S 1`` ends each row with ``%Y-%m-%d %H:%M:%S`` under a ``timestamp`` label."""
    pad, label, fmt = (19, "timestamp", "%Y-%m-%d %H:%M:%S") if stamps else (0, "", "")
    cols = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n"
    text = ("# nccl-tests version 2.19.6 nccl-headers=22803 nccl-library=22803\n"
            "# Collective test starting: all_reduce_perf\n"
            "# nThread 1 nGpus 2 minBytes 1073741824 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 "
            "agg iters: 1 validation: 1 graph: 0 unalign: 0\n#\n# Using devices\n"
            "#  Rank  0 Group  0 Pid   4242 on node01 device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n"
            "#  Rank  1 Group  0 Pid   4242 on node01 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3\n#\n")
    groups = "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n"
    text += groups % (("",) * 5)  # the printf formats are the tool's, kept as printed
    text += cols % ("size", "count", "type", "redop", "root", time_label, "algbw", "busbw", "#wrong", time_label,
                    "algbw", "busbw", "#wrong", pad, label)
    text += cols % ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "",
                    pad, fmt)
    for size, t in ((1 << 30, 3500.0), (1 << 31, 7000.0)):
        bw = size / (t * 1e-6) / 1e9
        body = "  %7s  %6s  %6s  %6g" % (f"{t:.1f}", f"{bw:.2f}", f"{bw:.2f}", 0)  # noqa: UP031 - nccl-tests' format
        lead = "%12li  %12li  %8s  %6s  %6s" % (size, size // 4, "float", "sum", f"{-1:6d}")  # noqa: UP031 - likewise
        row = lead + body + body
        text += row + (" 2026-07-09 16:03:21" if stamps else "") + "\n"
    return text + "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 306.8 \n#\n# Collective test concluded: all_reduce_perf\n"


def test_nccl_2_19_timestamp_column_and_cputime_label_are_read():
    """#34 (blind8): nccl-tests 2.19's -S 1 (report_timestamps) ends every row with a date and a time, so every row
    was 'cut short or too long' and the file exited 1; -C 1 labels the time 'cputime', and that header was not taken
    for a column header (the rows were read by guessing, the time not marked as CPU time)."""
    stamped = parse(_nccl_2_19(stamps=True), "all_reduce_perf.log")
    assert len(stamped.measurements) == 4 and not stamped.unread
    assert stamped.measurements[0].extra["timestamp"] == "2026-07-09 16:03:21"
    assert stamped.measurements[0].extra["time_us"] == 3500.0
    cpu = parse(_nccl_2_19(time_label="cputime"), "all_reduce_perf.log")
    assert len(cpu.measurements) == 4 and {m.extra.get("time_kind") for m in cpu.measurements} == {"cpu"}
