#!/usr/bin/env bash
# 1 x H200 (`nvidia-h200`), 2026-11-29, call 4, issue 36. Call 3 (interleaved rounds, one set a process): one-rank
# allreduce at par (0.98-1.19), sendrecv 0.81-0.93 at 8 B-32 KiB (linkscope 10.7-11.6 us, nccl-tests 9.5-10.1);
# in call 1 the same sendrecv with ten sets in one linkscope process read at par, its first five sets 8.6-12.9 us and
# its last five 6.7-10.6. Is a linkscope process's first set slow? Five rounds, order swapped each round: nccl-tests
# sendrecv_perf -g 1 as six processes, bench nccl --comm-sets 6 (one fresh process, six sets); dist.py and the
# per-set index table (setindex.py) read eager_sets/.
#   BUDGET_S=300 bash docs/runs/h200x1-2026-11-29b/visit4.sh
set -uo pipefail
source bench/device_steps.sh
device_begin g4 300 eager_sets
here=docs/runs/h200x1-2026-11-29b
{
device_hello
build_nccl_tests
wait_nccl_tests
S=8,64,512,4KiB,32KiB,256KiB,2MiB
for k in 1 2 3 4 5; do
  nt_run() { for j in 1 2 3 4 5 6; do step eager_sets/nt_sendrecv_r${k}_s$j.txt 20 $B/sendrecv_perf -b 8 -e 2M -f 8 -g 1; done; }
  ls_run() { step eager_sets/ls_sendrecv_r$k.txt 60 python3 -m linkscope bench nccl --op sendrecv --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --comm-sets 6 --json "$r/eager_sets/ls_sendrecv_r$k.json"; }
  paired $k nt_run ls_run
done
python3 bench/beside_peers.py "$r" | tee "$r/table.txt"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/g4.log"
device_end g4
