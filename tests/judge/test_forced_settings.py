"""A low collective is put down to a forced algorithm/protocol (NCCL_ALGO / NCCL_PROTO) only when that one
setting's curve explains every low row of the run; real 2 x H200 outputs of 2026-11-28 (docs/runs/
h200x2-2026-11-28b/call1): `NCCL_PROTO=LL all_reduce_perf` against a healthy node with a noisy neighbour
(another process copying both ways between the GPUs), whose rows cross LL's curve at some sizes."""
from __future__ import annotations

from pathlib import Path

from linkscope.judge.expect import Judge
from linkscope.judge.runs import FORCED_PREFIX, judge_runs
from linkscope.judge.verdict import Verdict
from linkscope.results.peertools.detect import read
from linkscope.topology import io as topo_io

ROOT = Path(__file__).resolve().parents[2]
CALL = ROOT / "docs/runs/h200x2-2026-11-28b/call1"
TOPO = ROOT / "docs/runs/h200x2-2026-11-28/call1/linkscope/topo.json"


def _lows(path: Path):
    judged = judge_runs([read(path)], Judge(topo_io.load(TOPO)))[0]
    return [j for j in judged.judgements if j.verdict is Verdict.LOW]


def test_forced_ll_run_is_put_down_to_nccl_proto_ll():
    lows = _lows(CALL / "nccl/all_reduce_proto_LL.txt")
    assert len(lows) >= 4
    assert all(j.cause_key == FORCED_PREFIX + "ring-ll" for j in lows)
    assert all("NCCL_PROTO=LL" in j.reason for j in lows)


def test_noisy_neighbour_run_is_not_put_down_to_a_forced_protocol():
    lows = _lows(CALL / "broken/noisy_all_reduce.txt")
    assert len(lows) >= 4
    assert not any(j.cause_key.startswith(FORCED_PREFIX) for j in lows)


def test_healthy_runs_get_no_forced_cause():
    for name in ("all_reduce_g0.txt", "all_reduce_g20.txt", "all_reduce_algo_Tree.txt", "all_reduce_proto_LL128.txt"):
        judged = judge_runs([read(CALL / "nccl" / name)], Judge(topo_io.load(TOPO)))[0]
        assert not [j for j in judged.judgements if j.verdict is Verdict.LOW], name


def test_sockets_between_gpus_of_one_node_are_named_as_the_network_transport():
    """NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1: 2-3 GB/s, ten times below NCCL through host memory."""
    lows = _lows(CALL / "broken/p2p_shm_off_all_reduce.txt")
    assert len(lows) >= 6 and all(j.cause_key == "collective-network-transport" for j in lows)
    assert "is below a fifth of what NCCL's slowest path inside a node (through host memory) gives" in lows[-1].reason
    shm = _lows(CALL / "broken/p2p_off_all_reduce.txt")  # through host memory: not the network
    assert shm and not any(j.cause_key == "collective-network-transport" for j in shm)
    assert any(j.cause_key == "collective-no-p2p" for j in shm)


def test_noisy_neighbour_nccl_run_is_put_down_to_the_links_at_half_their_rate():
    """The same noisy all_reduce: 48-59% of the twin at every size, one curve at half the links' rate (within 20%
    on every low row), named with both of its causes (a shared link or half the links down), not LL (whose curve
    leaves the run at 256 MiB-1 GiB) and not on a healthy run or a channel-capped one (27% and below)."""
    lows = _lows(CALL / "broken/noisy_all_reduce.txt")
    assert lows and all(j.cause_key == "collective-half-rate" for j in lows)
    assert "shared with another load" in lows[0].cause and "half of them down" in lows[0].cause
    capped = _lows(CALL / "broken/nchannels2_all_reduce.txt")
    assert capped and not any(j.cause_key == "collective-half-rate" for j in capped)


def test_channel_capped_run_is_put_down_to_nccl_max_nchannels():
    """NCCL_MAX_NCHANNELS=2 all_reduce_perf on 2 x H200: 10-41.8 GB/s where NCCL's 24 channels give 20-313. The
    twin's 2-channel curve (each channel at one CTA's rate, model.collectives CollectiveModel._caps) is within the
    run-wide tolerance of every low row, so each names the cap; with each channel at the links' share of 24
    channels (the twin before, 27 GB/s at 512 MiB) none did."""
    lows = _lows(CALL / "broken/nchannels2_all_reduce.txt")
    assert len(lows) >= 8
    assert all(j.cause_key == FORCED_PREFIX + "channels-2" for j in lows), [j.cause_key for j in lows]
    assert "NCCL_MAX_NCHANNELS=2" in lows[-1].reason
