#!/usr/bin/env bash
# 2 x H200 (`nvidia-h200-x2`), 2026-11-28 (night session), call 6, issue 36. Call 5 (with the warm-up pass) showed
# every first set of a linkscope process slow (allgather and alltoall 18.5-22.5 us in all six processes, later sets
# 12-20 like nccl-tests' processes). bench nccl made its first set before the run's context (vendor versions, NVML)
# and the others right before their turn; now every set is made in its turn. The GPU tests on this tree, then
# call 5's design for allgather and alltoall: twenty sets a tool, nccl-tests ten processes beside one
# `bench nccl --comm-sets 10`, twice, order swapped. dist.py compares the per-set times.
#   BUDGET_S=300 bash docs/runs/h200x2-2026-11-28f/visit6.sh
set -uo pipefail
source bench/device_steps.sh
device_begin f6 300 eager_sets
{
device_hello
build_nccl_tests
step gpu-tests.txt 120 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
wait_nccl_tests
for round in 1 2; do
  for op in allgather alltoall; do
    nt_run() { for j in $(seq 1 10); do step eager_sets/nt_${op}_r${round}_s$j.txt 20 $B/$(nccl_tests_bin $op) -b 64 -e 16K -f 16 -g 2; done; }
    ls_run() { step eager_sets/ls_${op}_r$round.txt 90 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes 64,1KiB,16KiB --iters 20 --runs 1 --cuda-graph 0 --comm-sets 10 --json "$r/eager_sets/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/f6.log"
device_end f6
