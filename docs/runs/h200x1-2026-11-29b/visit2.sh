#!/usr/bin/env bash
# 1 x H200 (`nvidia-h200`), 2026-11-29, call 2, issue 36. Call 1 found (a) the set-to-set draw on one GPU too, and in
# a one-rank allreduce, which NCCL issues as a plain cudaMemcpyAsync (onerank.cu:48-53), and (b) bench nccl's one-rank
# allreduce 7.4-7.6 us per op against nccl-tests' 6.3-6.8 (ten sets / processes each, Mann-Whitney p 0.003-0.014),
# its host enqueue 7.8 us. launchdraw.cu times the bare call with no NCCL in the loop: (1) in a C process, generation
# after generation with an action between (none, sleep 300 ms, spin 300 ms, a one-rank communicator made and
# destroyed), memcpy on ncclMemAlloc buffers and an empty kernel; (2) the same loop (launchdraw.so) called from a
# Python process holding CuPy's context, and from one with linkscope imported and a CuPy NCCL communicator made
# first; (3) a second round of bench nccl vs nccl-tests, allreduce one GPU, ten sets / processes, and bench nccl with
# the Python launch loop (LINKSCOPE_EAGER_LOOP=python) beside it.
#   BUDGET_S=420 bash docs/runs/h200x1-2026-11-29b/visit2.sh
set -uo pipefail
source bench/device_steps.sh
device_begin g2 420 c py sets
here=docs/runs/h200x1-2026-11-29b
{
device_hello
build_nccl_tests
nv=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
step build-draw.log 90 bash -c "$nv -O2 -I$NCCL_HOME/include -L$NCCL_HOME/lib $here/launchdraw.cu -lnccl -o /tmp/launchdraw && $nv -O2 -DDRAW_LIB -shared -Xcompiler -fPIC -I$NCCL_HOME/include -L$NCCL_HOME/lib $here/launchdraw.cu -lnccl -o /tmp/launchdraw.so"
for p in 1 2; do
  for a in none sleep spin comm; do step c/memcpy_${a}_p$p.txt 30 /tmp/launchdraw $a 10 memcpy nccl; done
  for a in none sleep comm; do step c/kernel_${a}_p$p.txt 30 /tmp/launchdraw $a 10 kernel cuda; done
  for a in none sleep comm; do step py/memcpy_${a}_p$p.txt 40 python3 $here/py_draw.py $a 10 memcpy nccl; done
  step py/linkscope-memcpy_none_p$p.txt 60 python3 $here/py_draw.py --linkscope none 10 memcpy nccl
  step py/linkscope-kernel_none_p$p.txt 60 python3 $here/py_draw.py --linkscope none 10 kernel cuda
done
wait_nccl_tests
S=8,64,512,4KiB,32KiB,256KiB,2MiB
step sets/ls_allreduce_r2.txt 90 python3 -m linkscope bench nccl --op allreduce --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --comm-sets 10 --json "$r/sets/ls_allreduce_r2.json"
for j in $(seq 1 10); do step sets/nt_allreduce_r2_s$j.txt 20 $B/all_reduce_perf -b 8 -e 2M -f 8 -g 1; done
step sets/lspy_allreduce_r2.txt 90 env LINKSCOPE_EAGER_LOOP=python python3 -m linkscope bench nccl --op allreduce --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --comm-sets 10 --json "$r/sets/lspy_allreduce_r2.json"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/g2.log"
device_end g2
