#!/usr/bin/env bash
# 2 x H200, 2026-11-28 (evening session), call 1: where does linkscope's eager small-size gap to nccl-tests come from
# (issue 36)? One variable at a time, interleaved rounds, 8 B-512 KiB (the host-bound sizes), allgather and allreduce:
#   nt        nccl-tests 2.19.6 eager (-g 2, one thread drives both GPUs: its default)
#   drv/ev0   drv.c: linkscope's loop in a plain C process, CUDA events on each stream, no buffer shift
#   drv/host1 drv.c: nccl-tests' way: host clock around launches + stream sync, buffer shifted every iteration
#   drv/ev1   events + shift;  drv/host0  host clock, no shift
#   ls        linkscope bench nccl --cuda-graph 0 (native eager loop);  lspy  LINKSCOPE_EAGER_LOOP=python
#   lsomp     linkscope with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 (NumPy's BLAS threads)
#   BUDGET_S=420 bash docs/runs/h200x2-2026-11-28c/visit1.sh
set -uo pipefail
source bench/device_steps.sh
device_begin c1 420 nt drv ls
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
here=docs/runs/h200x2-2026-11-28c
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
[ -e "$nccl/lib/libnccl.so" ] || ln -sf libnccl.so.2 "$nccl/lib/libnccl.so"
export LD_LIBRARY_PATH=$nccl/lib:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/bnt && cp -r .anchors/src/nccl-tests /tmp/bnt/
step build-nccl-tests.log 150 make -C /tmp/bnt/nccl-tests -j16 CUDA_HOME=$cuda NCCL_HOME=$nccl NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90
step build-drv.log 60 $cuda/bin/nvcc -O2 -I$nccl/include -L$nccl/lib $here/drv.c -lnccl -o /tmp/drv
B=/tmp/bnt/nccl-tests/build
sizes="8 32 128 512 2048 8192 32768 131072 524288"
lsizes=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB
step ls/where.txt 30 python3 -c "import cupy; from cupy.cuda import nccl; print('cupy', cupy.__version__, 'nccl', nccl.get_version()); import ctypes, os; print(open('/proc/self/maps').read().count('libnccl'), [l.split()[-1] for l in open('/proc/self/maps') if 'libnccl' in l][:1])"
for round in 1 2 3 4; do
  for op in allgather allreduce; do
    bin=$(case $op in allreduce) echo all_reduce;; allgather) echo all_gather;; esac)
    step nt/${op}_r$round.txt 30 $B/${bin}_perf -b 8 -e 512K -f 4 -g 2
    for cfg in "ev 0" "host 1" "ev 1" "host 0"; do
      set -- $cfg
      step drv/${op}_$1$2_r$round.txt 30 /tmp/drv $op 2 20 3 $1 $2 $sizes
    done
    step ls/${op}_r$round.txt 40 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $lsizes --iters 20 --runs 3 --cuda-graph 0 --json "$r/ls/${op}_r$round.json"
    step ls/${op}_py_r$round.txt 40 env LINKSCOPE_EAGER_LOOP=python python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $lsizes --iters 20 --runs 3 --cuda-graph 0 --json "$r/ls/${op}_py_r$round.json"
    [ $round -le 2 ] && step ls/${op}_omp_r$round.txt 40 env OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $lsizes --iters 20 --runs 3 --cuda-graph 0 --json "$r/ls/${op}_omp_r$round.json"
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/c1.log"
device_end c1
