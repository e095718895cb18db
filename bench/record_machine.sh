#!/usr/bin/env bash
# Record this GPU machine for golden fixtures and show what linkscope sees.
# Usage (device machine, repo root): bash bench/record_machine.sh NAME   -> $OUT/NAME.tar.gz, $OUT/record.log
set -uo pipefail
name=${1:-machine}
out=${OUT:-/tmp/linkscope-out}
mkdir -p "$out"
export PYTHONPATH=src NCCL_NVLS_ENABLE=0
{
  echo "== date: $(date -u +%FT%TZ)  host: $(hostname)"
  nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,driver_version --format=csv
  nvidia-smi topo -m
  nvidia-smi nvlink -s | head -40
  python3 -c 'import sys, typer, rich, numpy; print("python", sys.version.split()[0], "typer", typer.__version__, "rich", rich.__version__ if hasattr(rich, "__version__") else "?", "numpy", numpy.__version__)'
  python3 -c 'import cupy; print("cupy", cupy.__version__); from cupy.cuda import nccl; print("nccl", nccl.get_version())'
  python3 -m linkscope env
  python3 -m linkscope topo
  python3 -c "from pathlib import Path; from linkscope.discovery.raw import export_raw; print(export_raw(Path('/tmp/rec/$name')))"
  python3 -m linkscope topo --json - > /tmp/rec/$name/live_topology.json
} 2>&1 | tee "$out/record.log"
tar -C /tmp/rec -czf "$out/$name.tar.gz" "$name"
