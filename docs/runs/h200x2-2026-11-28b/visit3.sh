#!/usr/bin/env bash
# 2 x H200, 2026-11-28, call 3 (after the house merges of issue 38: collective descriptor, platform rows, thin CLI):
# the GPU tests and a survey on the merged code, and one probe of the eager small-size gap of call 2: does the ratio
# to nccl-tests move with the number of timed operations (a fixed cost per timed loop) or not (a cost per launch)?
#   BUDGET_S=240 bash docs/runs/h200x2-2026-11-28b/visit3.sh
set -uo pipefail
source bench/device_steps.sh
device_begin pm3 240 nccl linkscope
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null)"
step linkscope/gpu-tests.txt 120 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
step linkscope/survey.txt 60 python3 -m linkscope survey -o "$r/linkscope/survey.json" --no-report
[ -x /tmp/anchors/bin/all_reduce_perf ] || step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin
for round in 1 2; do
  for n in 20 200; do
    for op in allgather allreduce; do
      bin=$(case $op in allreduce) echo all_reduce;; allgather) echo all_gather;; esac)
      step nccl/${bin}_n${n}_r$round.txt 30 $B/${bin}_perf -b 8 -e 128K -f 16 -g 2 -n $n
      step nccl/ls_${op}_n${n}_r$round.txt 40 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes 8,128,2KiB,32KiB,128KiB --iters $n --runs 3 --cuda-graph 0 --json "$r/nccl/ls_${op}_n${n}_r$round.json"
    done
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/pm3.log"
device_end pm3
