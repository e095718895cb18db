"""Runs over several hosts judged against a cluster topology (``--synthetic cluster:PRESET:NODES``):
nccl-tests collectives whose ranks span the nodes (the twin's multi-node rings), and OSU point-to-point
between GPU buffers on two hosts (the route GPU -> NIC -> network -> NIC -> GPU, GPUDirect RDMA)."""
from __future__ import annotations

import pytest

from linkscope.judge.expect import Judge
from linkscope.judge.runs import judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.common import RunContext
from linkscope.results.peertools.detect import parse
from linkscope.topology.presets import load_preset
from linkscope.topology.synthetic import synthetic_topology


def _nccl_tests(rows: list[tuple[int, float]], ranks: int = 16, hosts: tuple[str, ...] = ("node-a", "node-b")) -> str:
    """An all_reduce_perf output of ``ranks`` ranks, one GPU each, in blocks over ``hosts`` (nccl-tests
    2.13+ layout, its rank lines naming the host), busbw as given (algbw = busbw / (2(n-1)/n))."""
    per = ranks // len(hosts)
    out = ["# nThread 1 nGpus 1 minBytes 67108864 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 "
           "agg iters: 1 validation: 1 graph: 0", "#", "# Using devices"]
    out += [f"#  Rank {r:2d} Group  0 Pid {1000 + r:6d} on {hosts[r // per]:>10s} device {r % per:2d} [0x{r % per:02x}] "
            "NVIDIA H100 80GB HBM3" for r in range(ranks)]
    out += ["#", "#" + " " * 62 + "out-of-place                       in-place",
            "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
            "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)"]
    for size, busbw in rows:
        algbw = busbw / (2 * (ranks - 1) / ranks)
        t = size / algbw / 1e3
        out.append(f"{size:>12d}  {size // 4:>12d}     float     sum      -1  {t:7.1f}  {algbw:6.2f}  {busbw:6.2f}      0  "
                   f"{t:7.1f}  {algbw:6.2f}  {busbw:6.2f}      0")
    return "\n".join(out) + "\n"


def _osu_bw(mb_per_s: float) -> str:
    lines = ["# OSU MPI-CUDA Bandwidth Test v7.3", "# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)",
             "# Size      Bandwidth (MB/s)"]
    return "\n".join(lines + [f"{1 << k:<20d}{mb_per_s:.2f}" for k in range(22, 25)]) + "\n"  # 4-16 MiB


def _judged(text: str, topology, hosts: tuple[str, ...] = ()):
    run = parse(text, "run.txt", stated=RunContext(hosts=hosts) if hosts else None)
    judged = judge_runs([run], Judge(topology))[0]
    return list(zip(judged.run.measurements, judged.judgements))


@pytest.fixture(scope="module")
def h100_pair():
    return synthetic_topology("cluster:dgx-h100:2")


@pytest.fixture(scope="module")
def a100_pair():
    return synthetic_topology("cluster:dgx-a100:2")  # one 200 Gb/s (25 GB/s) HDR NIC per GPU


def test_a_healthy_two_node_allreduce_is_judged_against_the_multi_node_twin(h100_pair):
    # the 2 x HGX H100 run of NVIDIA/nccl-tests#309: busbw 448.9 GB/s at 1 GiB (1 GiB only: the twin is within 2%)
    judged = _judged(_nccl_tests([(1 << 30, 448.9)]), h100_pair)
    assert len(judged) == 2 and all(j.verdict is Verdict.OK for _, j in judged), [j.line for _, j in judged]
    assert all(j.expectation.twin is not None and "above the route" not in j.line for _, j in judged)


def test_a_slow_two_node_allreduce_is_low(h100_pair):
    judged = _judged(_nccl_tests([(1 << 30, 150.0)]), h100_pair)
    assert judged and all(j.verdict is Verdict.LOW for _, j in judged)


def test_more_hosts_than_nodes_is_not_judged_with_the_reason(h100_pair):
    judged = _judged(_nccl_tests([(1 << 30, 448.9)], ranks=16, hosts=("a", "b", "c", "d")), h100_pair)
    assert all(j.verdict is Verdict.UNJUDGED and "spans 4 hosts" in j.reason for _, j in judged)


def test_two_node_osu_device_buffers_broken_is_low_with_a_cause_healthy_is_ok(a100_pair):
    broken = _judged(_osu_bw(3800.0), a100_pair, hosts=("n0", "n1"))
    assert broken and all(j.verdict is Verdict.LOW and "GPUDirect RDMA" in j.cause for _, j in broken)
    assert all("over the network" in j.line for _, j in broken)
    healthy = _judged(_osu_bw(24000.0), a100_pair, hosts=("n0", "n1"))
    assert healthy and all(j.verdict is Verdict.OK for _, j in healthy), [j.line for _, j in healthy]
    assert all(j.expectation.theoretical is not None and j.expectation.theoretical <= 25.0 for _, j in healthy)


def test_two_node_osu_against_one_node_is_not_judged_with_the_reason():
    judged = _judged(_osu_bw(24000.0), load_preset("dgx-a100"), hosts=("n0", "n1"))
    assert all(j.verdict is Verdict.UNJUDGED and "one node" in j.reason for _, j in judged)


# ---- real multi-node outputs of public threads (tests/fixtures/public, sidecars name URL and conclusion) ----
def _public(name: str, topology, ranks: int, hosts: tuple[str, ...] = ()):
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "fixtures" / "public" / f"{name}.txt"
    run = parse(path.read_text(), str(path), "nccl-tests", stated=RunContext(ranks=ranks, ranks_from="option", hosts=hosts))
    judged = judge_runs([run], Judge(topology))[0]
    return list(zip(judged.run.measurements, judged.judgements))


def test_a_real_broken_two_node_run_is_low(h100_pair):
    # NVIDIA/nccl-tests#319: 2 x HGX H100 (8 x 400G IB each) on the DOCA host stack, 44 GB/s busbw where the same
    # hosts give >= 450 with MLNX_OFED: every number low against the two-node twin
    judged = _public("nccl-tests-h100x16-doca-ncclt319", h100_pair, 16, ("lccn09", "lccn19"))
    assert len(judged) == 20 and all(j.verdict is Verdict.LOW for _, j in judged), [j.line for _, j in judged][:3]
    assert all("16 x H100" in j.line for _, j in judged)


def test_a_real_three_node_run_is_judged_against_the_cluster_it_is_given():
    # NVIDIA/nccl-tests#119: 3 x 8 A100 with 4 HDR NICs each, 96 GB/s busbw ("perfect", NVIDIA). Its machine is
    # cluster:hgx-a100-8-4nic:3: every number is judged over three nodes, and the twin of that machine expects
    # less than the twin of three 8-NIC DGX A100 (half the NICs a node)
    judged = _public("nccl-tests-a100x24-4hdr-ncclt119", synthetic_topology("cluster:hgx-a100-8-4nic:3"), 24,
                     ("pod01", "pod02", "pod03"))
    assert len(judged) == 12 and all(j.verdict is not Verdict.UNJUDGED for _, j in judged)
    assert all("24 x A100" in j.line and j.expectation.twin is not None for _, j in judged)
    dgx = _public("nccl-tests-a100x24-4hdr-ncclt119", synthetic_topology("cluster:dgx-a100:3"), 24,
                  ("pod01", "pod02", "pod03"))
    assert all(j.expectation.twin < d.expectation.twin for (_, j), (_, d) in zip(judged, dgx))
    # NVIDIA's target is 4 NICs x 24 GB/s = 96 GB/s, which the run reaches: every number ok (the twin had 43.7,
    # two of a node's four rings leaving through one NIC, and called all 12 suspicious-high)
    assert all(j.verdict is Verdict.OK for _, j in judged), [j.line for _, j in judged][:2]
