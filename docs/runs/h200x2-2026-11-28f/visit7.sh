#!/usr/bin/env bash
# 2 x H200 (`nvidia-h200-x2`), 2026-11-28 (night session), call 7, issue 36: call 6's design (per-set eager times of
# both tools, after the warm-up pass and with every set made in its turn) for the other ops, one round each as the
# device budget allows: one process, sendrecv / allreduce / reduce_scatter, ten sets a tool; one process per GPU
# (mpirun -n 2), allreduce / alltoall / sendrecv, eight sets a tool. 64 B, 1 KiB, 16 KiB. dist.py reads eager_sets/;
# for the per-GPU folder: bench/beside_peers.py (mpi_eager_sets/).
#   BUDGET_S=250 bash docs/runs/h200x2-2026-11-28f/visit7.sh
set -uo pipefail
source bench/device_steps.sh
device_begin f7 250 eager_sets mpi_eager_sets
{
device_hello
build_nccl_tests
wait_nccl_tests
for op in sendrecv allreduce reduce_scatter; do
  for j in $(seq 1 10); do step eager_sets/nt_${op}_r1_s$j.txt 20 $B/$(nccl_tests_bin $op) -b 64 -e 16K -f 16 -g 2; done
  step eager_sets/ls_${op}_r1.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes 64,1KiB,16KiB --iters 20 --runs 1 --cuda-graph 0 --comm-sets 10 --json "$r/eager_sets/ls_${op}_r1.json"
done
for op in allreduce alltoall sendrecv; do
  step mpi_eager_sets/ls_${op}_r1.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes 64,1KiB,16KiB --iters 20 --runs 1 --cuda-graph 0 --comm-sets 8 --json "$r/mpi_eager_sets/ls_${op}_r1.json"
  for j in $(seq 1 8); do step mpi_eager_sets/nt_${op}_r1_s$j.txt 20 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/$(nccl_tests_bin $op) -b 64 -e 16K -f 16 -g 1; done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/f7.log"
device_end f7
