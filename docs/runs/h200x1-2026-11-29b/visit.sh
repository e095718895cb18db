#!/usr/bin/env bash
# 1 x H200 (`nvidia-h200`), 2026-11-29, issue 36 with the one kind lent (the 2-GPU kinds are withheld this session).
# (1) The GPU tests on today's main. (2) Does the two-mode eager draw of a communicator set (2 GPUs: ~13 or ~19 us per
# small op, fixed per set; docs/benchmarks.md "The eager draw is the communicator set's") happen on one GPU? A one-rank
# communicator's send/receive to itself goes through NCCL's planner and launch path (enqueue.cc ncclLaunchPrepare /
# ncclLaunchKernel / ncclLaunchFinish: the deviceStream join, the scratch event), its allreduce does not
# (enqueue.cc:2569, ncclLaunchOneRank: a plain copy kernel on the user stream). drv.c (../h200x2-2026-11-28c) makes
# 10 generations a process, two processes a setting: the default (only the communicators renewed), only the streams
# renewed, the one-rank allreduce (the control without NCCL's launch path), one hardware queue
# (CUDA_DEVICE_MAX_CONNECTIONS=1), NCCL's implicit launch order (NCCL_LAUNCH_ORDER_IMPLICIT=1). (3) bench nccl's
# per-set times on one GPU (--comm-sets 10, eager) beside nccl-tests -g 1 run as ten processes, sendrecv (the
# planner path) 8 B-4 MiB, and -G 20 vs --cuda-graph 20: the launch path's cost on one GPU, side by side.
#   BUDGET_S=540 bash docs/runs/h200x1-2026-11-29b/visit.sh
set -uo pipefail
source bench/device_steps.sh
device_begin g1 540 drv eager_sets graphs
drv_dir=docs/runs/h200x2-2026-11-28c
{
device_hello
build_nccl_tests
step build-drv.log 60 ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc -O2 -I$NCCL_HOME/include -L$NCCL_HOME/lib $drv_dir/drv.c -lnccl -o /tmp/drv
step gpu-tests.txt 200 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
for p in 1 2; do
  step drv/default_p$p.txt 40 env DRV_GENERATIONS=10 DRV_RENEW=comms /tmp/drv sendrecv 1 20 3 ev 0 8 2048
  step drv/streams_p$p.txt 40 env DRV_GENERATIONS=10 DRV_RENEW=streams /tmp/drv sendrecv 1 20 3 ev 0 8 2048
  step drv/onerank-allreduce_p$p.txt 40 env DRV_GENERATIONS=10 DRV_RENEW=comms /tmp/drv allreduce 1 20 3 ev 0 8 2048
  step drv/CUDA_DEVICE_MAX_CONNECTIONS=1_p$p.txt 40 env DRV_GENERATIONS=10 DRV_RENEW=comms CUDA_DEVICE_MAX_CONNECTIONS=1 /tmp/drv sendrecv 1 20 3 ev 0 8 2048
  step drv/NCCL_LAUNCH_ORDER_IMPLICIT=1_p$p.txt 40 env DRV_GENERATIONS=10 DRV_RENEW=comms NCCL_LAUNCH_ORDER_IMPLICIT=1 /tmp/drv sendrecv 1 20 3 ev 0 8 2048
  step drv/host-timing_p$p.txt 40 env DRV_GENERATIONS=10 DRV_RENEW=comms /tmp/drv sendrecv 1 20 3 host 0 8 2048
done
python3 docs/runs/h200x2-2026-11-28f/modes.py "$r/drv" | tee "$r/modes.txt"
wait_nccl_tests
S=8,64,512,4KiB,32KiB,256KiB,2MiB
for op in sendrecv allreduce; do
  step eager_sets/ls_${op}_r1.txt 90 python3 -m linkscope bench nccl --op $op --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --comm-sets 10 --json "$r/eager_sets/ls_${op}_r1.json"
  for j in $(seq 1 10); do step eager_sets/nt_${op}_r1_s$j.txt 20 $B/$(nccl_tests_bin $op) -b 8 -e 2M -f 8 -g 1; done
  for round in 1 2; do
    nt_run() { step graphs/nt_${op}_r$round.txt 30 $B/$(nccl_tests_bin $op) -b 8 -e 2M -f 8 -g 1 -G 20; }
    ls_run() { step graphs/ls_${op}_r$round.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph 20 --json "$r/graphs/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/g1.log"
device_end g1
