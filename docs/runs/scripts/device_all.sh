#!/usr/bin/env bash
# One device call: GPU tests, a real survey (timed), bench CLI runs, comm suite. Writes under $OUT.
set -uo pipefail
export PYTHONPATH=src NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/linkscope-out}; mkdir -p "$out"
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c)"
echo "== GPU tests"; timeout 240 python3 -m pytest -q -m "gpu or multi_gpu or nccl" -p no:cacheprovider --continue-on-collection-errors tests 2>&1 | tail -15
echo "== survey"; /usr/bin/time -f "survey wall %e s" python3 -m linkscope survey -o "$out/survey.json" --report "$out/survey.html"
echo "== bench ce,sm-push bi"; python3 -m linkscope bench --backend cuda --method ce,sm-push --direction bi --sizes 256MiB --json "$out/bench_bi.json"
echo "== bench sweep osu"; python3 -m linkscope bench --backend cuda --method ce --gpus 0,1 --sizes 8:1GiB --osu | tail -30
echo "== comm suite"; [ -f bench/comm_suite.py ] && timeout 200 python3 bench/comm_suite.py 2>&1 | tail -40
} 2>&1 | tee "$out/device_all.log"
