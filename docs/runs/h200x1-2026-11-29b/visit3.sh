#!/usr/bin/env bash
# 1 x H200 (`nvidia-h200`), 2026-11-29, call 3, issue 36. Call 2: the bare launch cost of one call (cudaMemcpyAsync
# 8 B or an empty kernel, no NCCL) holds within ~0.1 s and moves by up to a third after any 300 ms pause, sleeping,
# spinning or making a communicator alike, in a C process and in a Python process with CuPy and linkscope loaded:
# a draw in time, not of a set. Then a comparison of two tools run one after the other at a few seconds each is a
# comparison of two windows. Here every round runs the three arms back to back in a rotating order, each a process
# of its own with one set: nccl-tests all_reduce_perf -g 1, bench nccl --comm-sets 1 with the native C loop, and
# with the Python loop (LINKSCOPE_EAGER_LOOP=python); 16 rounds, 8 B-2 MiB eager; sendrecv (NCCL's planner path)
# 8 rounds, nccl-tests and the native loop. Then launchdraw's memcpy cost over 60 windows of 300 ms (spin between),
# the draw's time series.   bench/beside_peers.py $r/native $r/python (eager/ in each)
#   BUDGET_S=470 bash docs/runs/h200x1-2026-11-29b/visit3.sh
set -uo pipefail
source bench/device_steps.sh
device_begin g3 470 native/eager python/eager
here=docs/runs/h200x1-2026-11-29b
{
device_hello
build_nccl_tests
nv=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
step build-draw.log 60 $nv -O2 -I$NCCL_HOME/include -L$NCCL_HOME/lib $here/launchdraw.cu -lnccl -o /tmp/launchdraw
wait_nccl_tests
S=8,64,512,4KiB,32KiB,256KiB,2MiB
ls_arm() {  # OP ROUND FOLDER [env...]
  local op=$1 k=$2 d=$3; shift 3
  step $d/eager/ls_${op}_r$k.txt 40 env "$@" python3 -m linkscope bench nccl --op $op --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --comm-sets 1 --json "$r/$d/eager/ls_${op}_r$k.json"
}
nt_arm() { step native/eager/nt_$1_r$2.txt 20 $B/$(nccl_tests_bin $1) -b 8 -e 2M -f 8 -g 1; cp "$r/native/eager/nt_$1_r$2.txt" "$r/python/eager/"; }
for k in $(seq 1 16); do
  case $(( k % 3 )) in
    0) nt_arm allreduce $k; ls_arm allreduce $k native LS_ARM=native; ls_arm allreduce $k python LINKSCOPE_EAGER_LOOP=python;;
    1) ls_arm allreduce $k native LS_ARM=native; ls_arm allreduce $k python LINKSCOPE_EAGER_LOOP=python; nt_arm allreduce $k;;
    2) ls_arm allreduce $k python LINKSCOPE_EAGER_LOOP=python; nt_arm allreduce $k; ls_arm allreduce $k native LS_ARM=native;;
  esac
done
for k in $(seq 1 8); do
  nt_run() { nt_arm sendrecv $k; }
  ls_run() { ls_arm sendrecv $k native LS_ARM=native; }
  paired $k nt_run ls_run
done
step drift.txt 40 /tmp/launchdraw spin 60 memcpy nccl
python3 bench/beside_peers.py "$r/native" | tee "$r/table_native.txt"
python3 bench/beside_peers.py "$r/python" | tee "$r/table_python.txt"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/g3.log"
device_end g3
