#!/usr/bin/env bash
# 1 x H200 (`nvidia-h200`), 2026-11-29, call 7, issue 36: after the fix of call 6's finding (gather and scatter are
# one ncclGather / ncclScatter per rank where the loaded NCCL has them, as nccl-tests 2.19.6 calls them), both ops
# beside nccl-tests in both launch modes, 8 B-512 MiB, two rounds (order swapped), and the GPU tests on the tree.
#   BUDGET_S=300 bash docs/runs/h200x1-2026-11-29b/visit7.sh
set -uo pipefail
source bench/device_steps.sh
device_begin g7 300 eager graph
{
device_hello
build_nccl_tests
step gpu-tests.txt 120 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
wait_nccl_tests
S=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB,32MiB,128MiB,512MiB
for k in 1 2; do
  for op in gather scatter; do
    for mode in eager graph; do
      if [ $mode = eager ]; then G=0; g=(); else G=20; g=(-G 20); fi
      nt_run() { step $mode/nt_${op}_r$k.txt 40 $B/$(nccl_tests_bin $op) -b 8 -e 512M -f 4 -g 1 "${g[@]}"; }
      ls_run() { step $mode/ls_${op}_r$k.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph $G --json "$r/$mode/ls_${op}_r$k.json"; }
      paired $k nt_run ls_run
    done
  done
done
python3 bench/beside_peers.py "$r" | tee "$r/table.txt"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/g7.log"
device_end g7
