#!/usr/bin/env bash
# The closing device call: GPU tests, topo, a timed default survey (+ its HTML report), model
# calibrate/check on it, latency kinds, watch acceptance, NCCL sendrecv/allreduce. Files under $OUT.
set -uo pipefail
export PYTHONPATH=src NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/linkscope-out}; mkdir -p "$out"
lsc() { python3 -m linkscope "$@"; }
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
echo "== GPU tests"; timeout 240 python3 -m pytest -q -m "gpu or multi_gpu or nccl" -p no:cacheprovider --continue-on-collection-errors tests 2>&1 | tail -4
echo "== topo"; lsc topo
echo "== survey (default options)"; /usr/bin/time -f "survey wall %e s" python3 -m linkscope survey -o "$out/survey.json"
echo "== model calibrate + check"; lsc model calibrate "$out/survey.json" -o "$out/calibrated.json" 2>&1 | tail -3
lsc model check "$out/survey.json" --topology "$out/calibrated.json" --json "$out/check.json"; lsc model check "$out/survey.json" --topology "$out/calibrated.json" | tail -6
echo "== latency kinds"; lsc bench latency --kind remote-read,flag-pingpong,copy --gpus 0,1 2>&1 | tail -25
echo "== watch"; lsc watch --expect nvlink -- python3 bench/copy_once.py 0 1 1GiB; echo "watch exit $?"
echo "== nccl sendrecv"; lsc bench nccl --op sendrecv --sizes 8,1MiB,1GiB --json "$out/nccl_sendrecv.json"
echo "== nccl sendrecv, no graph"; lsc bench nccl --op sendrecv --sizes 8 --cuda-graph 0
echo "== nccl allreduce"; lsc bench nccl --op allreduce --sizes 8,1MiB,1GiB --json "$out/nccl_allreduce.json"
} 2>&1 | tee "$out/final.log"
