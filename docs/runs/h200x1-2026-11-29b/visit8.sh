#!/usr/bin/env bash
# 1 x H200 (`nvidia-h200`), 2026-11-29, call 8, issue 36: after bench nccl moves its buffers by one size at every
# operation as nccl-tests' startColl does (comm.nccl.buffer_shifts; call 6: 2-8 MiB one-rank copies read 1.7x
# nccl-tests on the same, L2-resident buffers), allreduce / allgather / sendrecv / gather beside nccl-tests, graphs
# and eager, 8 B-512 MiB, two rounds (order swapped), and the GPU tests on the tree.
#   BUDGET_S=280 bash docs/runs/h200x1-2026-11-29b/visit8.sh
set -uo pipefail
source bench/device_steps.sh
device_begin g8 280 eager graph
{
device_hello
build_nccl_tests
step gpu-tests.txt 100 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
wait_nccl_tests
S=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB,32MiB,128MiB,512MiB
for k in 1 2; do
  for op in allreduce allgather sendrecv gather; do
    for mode in graph eager; do
      if [ $mode = eager ]; then G=0; g=(); else G=20; g=(-G 20); fi
      nt_run() { step $mode/nt_${op}_r$k.txt 40 $B/$(nccl_tests_bin $op) -b 8 -e 512M -f 4 -g 1 "${g[@]}"; }
      ls_run() { step $mode/ls_${op}_r$k.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph $G --json "$r/$mode/ls_${op}_r$k.json"; }
      paired $k nt_run ls_run
    done
  done
done
python3 bench/beside_peers.py "$r" | tee "$r/table.txt"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/g8.log"
device_end g8
