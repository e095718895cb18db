#!/usr/bin/env bash
# 4 x H200, 2026-11-28 (second evening session), call 4: the eager rows of call 2 (one round each) in paired rounds,
# 16 B-4 MiB: one process driving the four GPUs, five ops, four rounds; one process per GPU, three ops, three rounds
# (nccl-tests without -G, linkscope --cuda-graph 0; order swapped each round).
#   BUDGET_S=480 bash docs/runs/h200x4-2026-11-28d/visit4.sh
set -uo pipefail
source bench/device_steps.sh
device_begin d4 480 eager mpi_eager
{
device_hello
build_nccl_tests
wait_nccl_tests
S=16,64,256,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB
for round in 2 3 4 5; do
  for op in sendrecv alltoall allreduce allgather reduce_scatter; do
    nt_run() { step eager/nt_${op}_r$round.txt 30 $B/$(nccl_tests_bin $op) -b 16 -e 4M -f 4 -g 4; }
    ls_run() { step eager/ls_${op}_r$round.txt 40 python3 -m linkscope bench nccl --op $op --gpus 0,1,2,3 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --json "$r/eager/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
for round in 2 3 4; do
  for op in alltoall sendrecv allgather; do
    nt_run() { step mpi_eager/nt_${op}_r$round.txt 30 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/$(nccl_tests_bin $op) -b 16 -e 4M -f 4 -g 1; }
    ls_run() { step mpi_eager/ls_${op}_r$round.txt 40 mpirun -n 4 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 1 --cuda-graph 0 --json "$r/mpi_eager/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/d4.log"
device_end d4
