#!/usr/bin/env bash
# 1 x H200 (`nvidia-h200`), 2026-11-29, call 6, issue 36: every op of bench nccl beside nccl-tests on the one GPU lent,
# both launch modes, 8 B-512 MiB (x4 steps), one round (order swapped op by op): eager (nccl-tests -g 1, bench nccl
# --cuda-graph 0) and graphs (-G 20, --cuda-graph 20). One rank: NCCL issues the collectives as a copy on the user
# stream (enqueue.cc:2569, onerank.cu), sendrecv/gather/scatter/alltoall through its planner; so these rows measure
# the launch path and the GPU's own copy, not a link. bench/beside_peers.py prints the table.
#   BUDGET_S=420 bash docs/runs/h200x1-2026-11-29b/visit6.sh
set -uo pipefail
source bench/device_steps.sh
device_begin g6 420 eager graph
{
device_hello
build_nccl_tests
wait_nccl_tests
S=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB,32MiB,128MiB,512MiB
k=0
for op in allreduce allgather reduce_scatter alltoall sendrecv broadcast reduce gather scatter; do
  k=$((k + 1))
  for mode in eager graph; do
    if [ $mode = eager ]; then G=0; g=(); else G=20; g=(-G 20); fi
    nt_run() { step $mode/nt_${op}_r1.txt 40 $B/$(nccl_tests_bin $op) -b 8 -e 512M -f 4 -g 1 "${g[@]}"; }
    ls_run() { step $mode/ls_${op}_r1.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph $G --json "$r/$mode/ls_${op}_r1.json"; }
    paired $k nt_run ls_run
  done
done
python3 bench/beside_peers.py "$r" | tee "$r/table.txt"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/g6.log"
device_end g6
