#!/usr/bin/env bash
# 1 x H200 (`nvidia-h200`), 2026-11-29, call 5, issue 36. Call 4: in a fresh bench nccl process the first sets of
# a one-rank sendrecv (an NCCL kernel) read 9-10 us and the sixth ~7, while nccl-tests' fresh processes show no such
# order and the one-rank allreduce (a cudaMemcpyAsync, the copy engine) none either. Guess: the GPU's clock, low
# after the seconds of Python start-up with no GPU work. nvidia-smi samples the SM clock every 50 ms through the
# call (clocks.csv); marks.txt has each step's start and end (epoch seconds).
#   BUDGET_S=200 bash docs/runs/h200x1-2026-11-29b/visit5.sh
set -uo pipefail
source bench/device_steps.sh
device_begin g5 200 eager_sets
{
device_hello
build_nccl_tests
wait_nccl_tests
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,utilization.gpu,power.draw --format=csv,noheader -lms 50 > "$r/clocks.csv" 2>&1 &
smi=$!
mark() { echo "$1 $(date +%s.%N)" >> "$r/marks.txt"; }
S=8,64,512,4KiB,32KiB,256KiB,2MiB
mark idle-start; sleep 4; mark idle-end
for j in 1 2 3; do mark nt$j-start; step eager_sets/nt_sendrecv_r1_s$j.txt 20 $B/sendrecv_perf -b 8 -e 2M -f 8 -g 1; mark nt$j-end; done
sleep 4
mark ls-start; step eager_sets/ls_sendrecv_r1.txt 60 python3 -m linkscope bench nccl --op sendrecv --gpus 0 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --comm-sets 6 --json "$r/eager_sets/ls_sendrecv_r1.json"; mark ls-end
sleep 4
mark nt-after-idle-start; step eager_sets/nt_sendrecv_r1_s4.txt 20 $B/sendrecv_perf -b 8 -e 2M -f 8 -g 1; mark nt-after-idle-end
kill $smi
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/g5.log"
device_end g5
