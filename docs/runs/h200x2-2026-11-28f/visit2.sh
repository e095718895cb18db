#!/usr/bin/env bash
# 2 x H200 (`nvidia-h200-x2`), 2026-11-28 (night session), call 2, issue 36. Call 1 showed that neither the hardware
# queues (CUDA_DEVICE_MAX_CONNECTIONS=1 or 32) nor NCCL's graph-mixing synchronisation decide the two-mode eager time
# of a set of communicators. Here drv.c (../h200x2-2026-11-28c, 8 generations a process, two processes each) renews
# only the communicators (DRV_RENEW=comms: the streams stay) or only the streams (DRV_RENEW=streams), and, renewing
# both, NCCL's host memory without cuMem (NCCL_CUMEM_HOST_ENABLE=0), all its memory without cuMem (NCCL_CUMEM_ENABLE=0),
# and every thread of the process on one core (taskset -c 2).
#   BUDGET_S=200 bash docs/runs/h200x2-2026-11-28f/visit2.sh
set -uo pipefail
source bench/device_steps.sh
device_begin f2 200 drv
here=docs/runs/h200x2-2026-11-28f
{
device_hello
nccl_tests_env
step build-drv.log 60 ${CUDA_HOME:-/usr/local/cuda}/bin/nvcc -O2 -I$NCCL_HOME/include -L$NCCL_HOME/lib docs/runs/h200x2-2026-11-28c/drv.c -lnccl -o /tmp/drv
for p in 1 2; do
  for e in DRV_DEFAULT=1 DRV_RENEW=comms DRV_RENEW=streams NCCL_CUMEM_HOST_ENABLE=0 NCCL_CUMEM_ENABLE=0; do
    name=$e; [ "$e" = DRV_DEFAULT=1 ] && name=default
    step drv/${name}_p$p.txt 40 env DRV_GENERATIONS=8 $e /tmp/drv allreduce 2 20 3 ev 0 8 2048
  done
  step drv/taskset-c2_p$p.txt 40 env DRV_GENERATIONS=8 taskset -c 2 /tmp/drv allreduce 2 20 3 ev 0 8 2048
done
python3 $here/modes.py "$r/drv" | tee "$r/modes.txt"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/f2.log"
device_end f2
