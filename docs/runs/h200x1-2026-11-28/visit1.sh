#!/usr/bin/env bash
# 1 x H200 (nvidia-h200), 2026-11-28, visit 1 of this session: a held-out lease for the verdicts (issue 33),
# the idle baseline of `watch` on real NVML, the launch cost of bench nccl (issue 36), GPU tests.
#   BUDGET_S=420 bash docs/runs/h200x1-2026-11-28/visit1.sh     (repository root; .anchors and .whl carried)
set -uo pipefail
source bench/device_steps.sh
device_begin v1 420 peers linkscope nccl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader)"
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
step peers/nvbandwidth-all.txt 120 /usr/bin/time -v $B/nvbandwidth
step linkscope/survey.txt 120 /usr/bin/time -v python3 -m linkscope survey -o "$r/linkscope/survey.json" --no-report
step linkscope/topo.txt 30 python3 -m linkscope topo -o "$r/linkscope/topo.json"
step linkscope/check_survey.txt 60 python3 -m linkscope check "$r/linkscope/survey.json"
step linkscope/check_nvbandwidth.txt 60 python3 -m linkscope check "$r/peers/nvbandwidth-all.txt"
# watch: an idle command (sleep) with and without the idle baseline; an h2d-heavy command
step linkscope/watch_sleep_nobaseline.txt 30 python3 -m linkscope watch --baseline 0 --json "$r/linkscope/watch_sleep_nobaseline.json" -- sleep 4
step linkscope/watch_sleep_baseline.txt 30 python3 -m linkscope watch --json "$r/linkscope/watch_sleep_baseline.json" -- sleep 4
step linkscope/watch_local.txt 40 python3 -m linkscope watch --json "$r/linkscope/watch_local.json" -- python3 bench/copy_once.py 0 0 8GiB
# bench nccl on one GPU: eager vs graphs at every size (launch cost per op), beside nccl-tests -g 1
for mode in 0 20; do
  step nccl/ls_allreduce_G$mode.txt 90 python3 -m linkscope bench nccl --op allreduce --gpus 0 --sizes 8,1MiB,4MiB,16MiB,64MiB,256MiB --cuda-graph $mode --runs 3 --json "$r/nccl/ls_allreduce_G$mode.json"
done
step nccl/all_reduce_eager.txt 40 $B/all_reduce_perf -b 8 -e 256M -f 4 -g 1
step nccl/all_reduce_G20.txt 40 $B/all_reduce_perf -b 8 -e 256M -f 4 -g 1 -G 20
step linkscope/gpu-tests.txt 150 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/measure tests/comm tests/counters
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v1.log"
device_end v1
