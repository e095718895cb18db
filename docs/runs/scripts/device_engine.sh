#!/usr/bin/env bash
# The GPU engine after the device-runtime refactor (issue 10), on one GPU (H100 or H200), <= 150 s:
# 1. the GPU-marked tests, the engine contract suite on cuda included (counts printed);
# 2. h2d/d2h pinned and pageable, the local copy and the latency kinds on GPU 0 at 256 MiB
#    (compare with docs/benchmarks.md: h2d/d2h pinned 55.5/55.3 GB/s on H200, remote-read 0.85 us).
# Writes $OUT/engine.json.
set -uo pipefail
export PYTHONPATH=src NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/linkscope-out}; mkdir -p "$out"
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
echo "== GPU tests (-m gpu)"
timeout 100 python3 -m pytest -q -m gpu -p no:cacheprovider tests/ 2>&1 | tail -6
echo "== contract suite on cuda"
timeout 30 python3 -m pytest -q -m gpu -p no:cacheprovider tests/engines/test_contract.py 2>&1 | tail -2
echo "== engine numbers, GPU 0"
timeout 60 python3 bench/device_engine.py "$out/engine.json"
echo "exit $?"
