#!/usr/bin/env bash
# 2 x H200, 2026-11-28 (evening), call 2. Call 1 showed the eager small-size times are a property of the process
# (one process of drv.c, nccl-tests or linkscope runs at ~12 us per allreduce, another at ~17, steady within
# itself). Is it where the launching thread runs? The same loop pinned to one CPU (taskset -c C) against unpinned,
# round-robin, three rounds; nccl-tests and linkscope the same way. lscpu -e says which CPUs share a core/socket.
#   BUDGET_S=300 bash docs/runs/h200x2-2026-11-28c/visit2.sh
set -uo pipefail
source bench/device_steps.sh
device_begin c2 300 nt drv ls
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
here=docs/runs/h200x2-2026-11-28c
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
[ -e "$nccl/lib/libnccl.so" ] || ln -sf libnccl.so.2 "$nccl/lib/libnccl.so"
export LD_LIBRARY_PATH=$nccl/lib:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/bnt && cp -r .anchors/src/nccl-tests /tmp/bnt/
step lscpu.txt 10 bash -c "lscpu; lscpu -e; cat /proc/cmdline; numactl -H 2>&1 | head"
step build-nccl-tests.log 150 make -C /tmp/bnt/nccl-tests -j16 CUDA_HOME=$cuda NCCL_HOME=$nccl NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90 all_reduce_perf
step build-drv.log 60 $cuda/bin/nvcc -O2 -I$nccl/include -L$nccl/lib $here/drv.c -lnccl -o /tmp/drv
B=/tmp/bnt/nccl-tests/build
sizes="8 32 128 512 2048 8192 32768"
for round in 1 2 3; do
  for c in any 0 7 15 16 23 31; do
    pin=(); [ $c = any ] || pin=(taskset -c $c)
    step drv/allreduce_c${c}_r$round.txt 20 "${pin[@]}" /tmp/drv allreduce 2 20 3 ev 0 $sizes
    step nt/allreduce_c${c}_r$round.txt 20 "${pin[@]}" $B/all_reduce_perf -b 8 -e 32K -f 4 -g 2
  done
  for c in any 0 16; do
    pin=(); [ $c = any ] || pin=(taskset -c $c)
    step ls/allreduce_c${c}_r$round.txt 40 "${pin[@]}" python3 -m linkscope bench nccl --op allreduce --gpus 0,1 --sizes 8,32,128,512,2KiB,8KiB,32KiB --iters 20 --runs 3 --cuda-graph 0 --json "$r/ls/allreduce_c${c}_r$round.json"
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/c2.log"
device_end c2
