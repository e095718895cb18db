#!/usr/bin/env bash
# 2 x H200 (`nvidia-h200-x2`), 2026-11-28 (night session), call 4, issue 36. Call 3 left open whether linkscope draws
# the slow eager modes more often than nccl-tests in some ops (ten sets a tool could not tell). Here twenty sets a
# tool per op, one process driving both GPUs, eager, 64 B / 1 KiB / 16 KiB: nccl-tests run ten times, then one
# `bench nccl --comm-sets 10`, twice, the order swapped in the second round; sendrecv, allgather, allreduce.
# dist.py compares the two tools' per-set times (quantiles, Mann-Whitney).
#   BUDGET_S=300 bash docs/runs/h200x2-2026-11-28f/visit4.sh
set -uo pipefail
source bench/device_steps.sh
device_begin f4 300 eager_sets
{
device_hello
build_nccl_tests
wait_nccl_tests
for round in 1 2; do
  for op in sendrecv allgather allreduce; do
    nt_run() { for j in $(seq 1 10); do step eager_sets/nt_${op}_r${round}_s$j.txt 20 $B/$(nccl_tests_bin $op) -b 64 -e 16K -f 16 -g 2; done; }
    ls_run() { step eager_sets/ls_${op}_r$round.txt 90 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes 64,1KiB,16KiB --iters 20 --runs 1 --cuda-graph 0 --comm-sets 10 --json "$r/eager_sets/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/f4.log"
device_end f4
