#!/usr/bin/env bash
# 2 x H200 (`nvidia-h200-x2`), 2026-11-28 (night session), call 3, issue 36. Calls 1-2: a small eager op's time is
# drawn when a set of communicators is made and kept for its life (drv.c renewing only the streams keeps one mode per
# process). So each round here gives both tools five sets: nccl-tests run five times (one process, one set each)
# beside one `bench nccl --comm-sets 5`, eager, 16 B-4 MiB; one process (5 ops, 2 rounds) and one process per GPU
# (3 ops, 2 rounds). bench/beside_peers.py reads eager_sets/ and mpi_eager_sets/ (median set, or --statistic min).
#   BUDGET_S=520 bash docs/runs/h200x2-2026-11-28f/visit3.sh
set -uo pipefail
source bench/device_steps.sh
device_begin f3 520 eager_sets mpi_eager_sets
{
device_hello
build_nccl_tests
wait_nccl_tests
S=16,64,256,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB
for round in 1 2; do
  for op in allreduce allgather reduce_scatter alltoall sendrecv; do
    nt_run() { for j in 1 2 3 4 5; do step eager_sets/nt_${op}_r${round}_s$j.txt 30 $B/$(nccl_tests_bin $op) -b 16 -e 4M -f 4 -g 2; done; }
    ls_run() { step eager_sets/ls_${op}_r$round.txt 90 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --comm-sets 5 --json "$r/eager_sets/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
for round in 1 2; do
  for op in allreduce alltoall sendrecv; do
    nt_run() { for j in 1 2 3 4 5; do step mpi_eager_sets/nt_${op}_r${round}_s$j.txt 30 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/$(nccl_tests_bin $op) -b 16 -e 4M -f 4 -g 1; done; }
    ls_run() { step mpi_eager_sets/ls_${op}_r$round.txt 90 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 1 --cuda-graph 0 --comm-sets 5 --json "$r/mpi_eager_sets/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/f3.log"
device_end f3
