#!/usr/bin/env bash
# 4 x H200 (`nvidia-h200-x4`), 2026-11-28 (second evening session), call 1: issue 36's four-GPU rows on today's main.
# The GPU tests on four GPUs; then bench nccl beside nccl-tests 2.19.6 built in this call, 16 B-1 GiB (x4), five ops,
# in the mode linkscope uses by default (CUDA graphs of 20 operations, nccl-tests -G 20): one process driving the
# four GPUs (two rounds, the order of the two tools swapped each round) and one process per GPU (mpirun -n 4).
#   BUDGET_S=540 bash docs/runs/h200x4-2026-11-28d/visit1.sh        (bench/beside_peers.py reads the result)
set -uo pipefail
source bench/device_steps.sh
device_begin d1 540 graph mpi_graph
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
nvidia-smi topo -m > "$r/topo.txt" 2>&1
build_nccl_tests
step gpu-tests.txt 150 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
wait_nccl_tests
S=16,64,256,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB,1GiB
bin_of() { case $1 in allreduce) echo all_reduce;; allgather) echo all_gather;; reduce_scatter) echo reduce_scatter;; *) echo $1;; esac; }
for round in 1 2; do
  for op in allreduce allgather reduce_scatter alltoall sendrecv; do
    run_nt() { step graph/nt_${op}_r$round.txt 40 $B/$(bin_of $op)_perf -b 16 -e 1G -f 4 -g 4 -G 20; }
    run_ls() { step graph/ls_${op}_r$round.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0,1,2,3 --sizes $S --iters 20 --runs 1 --cuda-graph 20 --json "$r/graph/ls_${op}_r$round.json"; }
    if [ $((round % 2)) = 1 ]; then run_nt; run_ls; else run_ls; run_nt; fi
  done
done
for op in allreduce allgather reduce_scatter alltoall sendrecv; do
  step mpi_graph/nt_${op}_r1.txt 40 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/$(bin_of $op)_perf -b 16 -e 1G -f 4 -g 1 -G 20
  step mpi_graph/ls_${op}_r1.txt 60 mpirun -n 4 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 1 --cuda-graph 20 --json "$r/mpi_graph/ls_${op}_r1.json"
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/d1.log"
device_end d1
