#!/usr/bin/env bash
# Issue 12 on one GPU (<= 120 s): `bench nccl` in one process (allreduce; sendrecv to itself, or
# skipped with the reason), sizes 8 B ... 1 GiB, then the GPU/NCCL-marked comm tests. Prints a
# table; writes $OUT/comm.json.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH=src NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/linkscope-out}; mkdir -p "$out"
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sort | uniq -c)"
timeout 115 python3 bench/device_comm.py "$out/comm.json"
