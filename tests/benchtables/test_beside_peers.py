"""bench/beside_peers.py on the committed calls of 2026-11-28: the tables of docs/benchmarks.md "Four GPUs beside
the peers" come out of the recorded nccl-tests outputs and bench nccl records."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).parents[2]
_spec = importlib.util.spec_from_file_location("beside_peers", ROOT / "bench" / "beside_peers.py")
assert _spec is not None and _spec.loader is not None
beside_peers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(beside_peers)

X4 = ROOT / "docs/runs/h200x4-2026-11-28d"


def test_the_four_gpu_table_pools_rounds_over_calls_and_names_the_rows_under_the_bar():
    text = beside_peers.table([X4 / "call1", X4 / "call2", X4 / "call3"], 0.97)
    assert "67 of 67 rows >= 0.97." in text  # one process, graphs, six rounds at 16 B-1 MiB
    assert "66 of 67 rows >= 0.97; under: reduce_scatter 64 B." in text
    assert "| 4 MiB | 1.06 (42.4 / 39.8 us) [2] |" in text
    first_rounds = beside_peers.table([X4 / "call1"], 0.97)  # two rounds only: the per-set draw shows
    assert "reduce_scatter 64 B" in first_rounds.split("### one process per GPU")[0]


def test_rows_pair_by_size_and_skip_what_one_tool_lacks(tmp_path):
    mode = tmp_path / "graph"
    mode.mkdir()
    (mode / "nt_allreduce_r1.txt").write_text("#  size count\n           0  0 float sum -1 0.1 0 0 0\n"
                                              "          64  16 float sum -1  8.00 0.01 0.01 0\n"
                                              "         256  64 float sum -1  9.00 0.03 0.03 0\n")
    meas = [{"size_bytes": 64, "latency_us": 10.0, "extra": {"inplace": False}},
            {"size_bytes": 64, "latency_us": 1.0, "extra": {"inplace": True}},
            {"size_bytes": 1024, "latency_us": 3.0, "extra": {}}]
    (mode / "ls_allreduce_r1.json").write_text(json.dumps({"measurements": meas}))
    pairs = beside_peers.paired_rows([tmp_path], "graph")
    assert dict(pairs) == {("allreduce", 64): [(8.0, 10.0)]}  # in-place row and unpaired sizes left out
    assert "**0.80 (8.0 / 10.0 us)**" in beside_peers.table([tmp_path], 0.97)


def test_rounds_of_several_sets_pool_each_tools_sets(tmp_path):
    """eager_sets/: nccl-tests run three times in a round (one process, one set each) beside one bench nccl
    --comm-sets 3: the median set of each tool, or with --statistic min the fastest."""
    mode = tmp_path / "eager_sets"
    mode.mkdir()
    for j, t in enumerate((13.0, 19.0, 14.0), start=1):
        (mode / f"nt_allreduce_r1_s{j}.txt").write_text(f"          64  16 float sum -1  {t:.2f} 0.01 0.01 0\n")
    meas = [{"size_bytes": 64, "latency_us": 18.0, "extra": {"inplace": False, "set_times_us": [18.0, 12.5, 19.0]}}]
    (mode / "ls_allreduce_r1.json").write_text(json.dumps({"measurements": meas}))
    assert dict(beside_peers.paired_rows([tmp_path], "eager_sets")) == {("allreduce", 64): [(14.0, 18.0)]}
    assert dict(beside_peers.paired_rows([tmp_path], "eager_sets", "min")) == {("allreduce", 64): [(13.0, 12.5)]}
    assert "(each tool's min over its sets)" in beside_peers.table([tmp_path], 0.97, "min")
