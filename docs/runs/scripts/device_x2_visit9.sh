#!/usr/bin/env bash
# Ninth visit on 2 x H100 (issue 27): ce/sm copies at 64 MiB with 16 copies a region beside nvbandwidth,
# the survey's time on the final code, the GPU tests. BUDGET_S=200 bash bench/device_x2_visit9.sh
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin v9 200 peers linkscope
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
for round in 1 2 3; do
  step peers/nvbandwidth-b64-r$round.txt 40 $B/nvbandwidth -b 64 -t device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce device_to_device_memcpy_read_sm device_to_device_memcpy_write_sm
  step linkscope/bench-64-r$round.txt 60 python3 -m linkscope bench --method ce,sm-push,sm-pull --gpus 0,1 --sizes 64MiB --json "$r/linkscope/bench-64-r$round.json"
done
step linkscope/survey.txt 120 /usr/bin/time -v python3 -m linkscope survey -o "$r/linkscope/survey.json" --no-report
step linkscope/gpu-tests.txt 150 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/measure
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v9.log"
device_end v9
