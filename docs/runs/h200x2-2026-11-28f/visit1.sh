#!/usr/bin/env bash
# 2 x H200 (`nvidia-h200-x2`), 2026-11-28 (night session), call 1, issue 36. (1) The GPU tests on main. (2) What
# decides the two-mode eager time of a set of communicators (~13 or ~18 us per small op on 2 GPUs, fixed per set:
# docs/benchmarks.md "Eager small sizes, one variable at a time")? drv.c (../h200x2-2026-11-28c) makes new
# communicators and streams 8 times in a process, two processes per environment: the default, one hardware queue per
# GPU for every stream (CUDA_DEVICE_MAX_CONNECTIONS=1), 32 queues (=32), and NCCL without its graph-mixing
# synchronisation (NCCL_GRAPH_MIXING_SUPPORT=0). modes.py prints the generations' medians per environment and picks the
# fastest one whose generations agree (max/min < 1.12). (3) Eager paired rounds, nccl-tests 2.19.6 (built here)
# against bench nccl --cuda-graph 0, 16 B-4 MiB, under that environment: one process (5 ops, 4 rounds) and one process
# per GPU (3 ops, 3 rounds).
#   BUDGET_S=560 bash docs/runs/h200x2-2026-11-28f/visit1.sh
set -uo pipefail
source bench/device_steps.sh
device_begin f1 560 drv eager mpi_eager
here=docs/runs/h200x2-2026-11-28f
{
device_hello
build_nccl_tests
step build-drv.log 60 ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc -O2 -I$NCCL_HOME/include -L$NCCL_HOME/lib docs/runs/h200x2-2026-11-28c/drv.c -lnccl -o /tmp/drv
step gpu-tests.txt 170 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
wait_nccl_tests
for p in 1 2; do
  for e in DRV_DEFAULT=1 CUDA_DEVICE_MAX_CONNECTIONS=1 CUDA_DEVICE_MAX_CONNECTIONS=32 NCCL_GRAPH_MIXING_SUPPORT=0; do
    name=$e; [ "$e" = DRV_DEFAULT=1 ] && name=default
    step drv/${name}_p$p.txt 40 env DRV_GENERATIONS=8 $e /tmp/drv allreduce 2 20 3 ev 0 8 2048
  done
done
python3 $here/modes.py "$r/drv" | tee "$r/modes.txt"
chosen=$(tail -1 "$r/modes.txt"); xs=()
if [ "$chosen" != default ]; then export "$chosen"; xs=(-x "${chosen%%=*}"); fi
echo "== eager rounds under: $chosen"
S=16,64,256,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB
for round in 1 2 3 4; do
  for op in allreduce allgather reduce_scatter alltoall sendrecv; do
    nt_run() { step eager/nt_${op}_r$round.txt 30 $B/$(nccl_tests_bin $op) -b 16 -e 4M -f 4 -g 2; }
    ls_run() { step eager/ls_${op}_r$round.txt 40 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --json "$r/eager/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
for round in 1 2 3; do
  for op in allreduce alltoall sendrecv; do
    nt_run() { step mpi_eager/nt_${op}_r$round.txt 30 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE "${xs[@]}" $M/$(nccl_tests_bin $op) -b 16 -e 4M -f 4 -g 1; }
    ls_run() { step mpi_eager/ls_${op}_r$round.txt 40 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE "${xs[@]}" python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 1 --cuda-graph 0 --json "$r/mpi_eager/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/f1.log"
device_end f1
