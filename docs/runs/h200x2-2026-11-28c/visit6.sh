#!/usr/bin/env bash
# 2 x H200, 2026-11-28 (evening), call 6: is the two-mode eager time (~14 or ~20 us per small op, calls 1-4) decided
# per process or per set of communicators? drv.c makes new communicators 8 times in one process (DRV_GENERATIONS)
# and times allreduce and sendrecv at 8 B-32 KiB each time; four processes per op. If the mode changes between
# generations of one process, it is the communicators (which would also explain bench stencil's 64 KiB difference
# between two identical mappings: each mapping makes its own communicators).
#   BUDGET_S=150 bash docs/runs/h200x2-2026-11-28c/visit6.sh
set -uo pipefail
source bench/device_steps.sh
device_begin c6 150 drv
here=docs/runs/h200x2-2026-11-28c
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
export LD_LIBRARY_PATH=$nccl/lib:${LD_LIBRARY_PATH:-}
[ -e "$nccl/lib/libnccl.so" ] || ln -sf libnccl.so.2 "$nccl/lib/libnccl.so"
step build-drv.log 60 $cuda/bin/nvcc -O2 -I$nccl/include -L$nccl/lib $here/drv.c -lnccl -o /tmp/drv
for p in 1 2 3 4; do
  for op in allreduce sendrecv; do
    step drv/${op}_p$p.txt 40 env DRV_GENERATIONS=8 /tmp/drv $op 2 20 3 ev 0 8 128 2048 32768
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/c6.log"
device_end c6
