#!/usr/bin/env bash
# Device acceptance for `linkscope watch` (run from the repo root on a multi-GPU NVIDIA machine):
#   PYTHONPATH=src OUT=/tmp/out bash bench/watch_check.sh
# 1. a 1 GiB peer copy GPU 0 -> GPU 1 under --expect nvlink: about 1 GiB on GPU 0 NVLink TX and
#    GPU 1 NVLink RX (within 5 %), exit 0;
# 2. the same copy staged through host memory: PCIe carries it, --expect nvlink exits 3;
# 3. bad input: GPU indices that do not exist, a command that does not exist.
set -u
OUT=${OUT:-/tmp/linkscope-watch}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
export CUDA_DEVICE_ORDER=PCI_BUS_ID   # CUDA ordinals in the order of NVML indices
COPY="bench/copy_once_cupy.py"
[ -f bench/copy_once.py ] && COPY_MAIN="bench/copy_once.py" || COPY_MAIN="$COPY"
LS="python -m linkscope"

echo "== nvidia-smi topo -m"; nvidia-smi topo -m 2>&1 | head -12
echo "== nvidia-smi nvlink -gt d -i 0 (before)"; nvidia-smi nvlink -gt d -i 0 2>&1 | head -6

echo "== 1. peer copy under watch ($COPY_MAIN)"
$LS watch --expect nvlink --json "$OUT/watch_p2p.json" --csv "$OUT/watch_p2p.csv" -- python "$COPY_MAIN" 0 1 1GiB
echo "exit=$?"
echo "== nvidia-smi nvlink -gt d -i 0 (after)"; nvidia-smi nvlink -gt d -i 0 2>&1 | head -6

echo "== 2. staged through host under watch --expect nvlink (expect exit 3)"
$LS watch --expect nvlink --json "$OUT/watch_host.json" -- python "$COPY" 0 1 1GiB --via-host
echo "exit=$?"

echo "== 3. bad input"
$LS watch --gpus 0,1,2,3 -- true; echo "exit=$? (expect 1: GPUs 2 and 3 do not exist here)"
$LS watch -- no-such-command; echo "exit=$? (expect 127)"
$LS watch --interval 50ms -- python -c 'import sys; print("passthrough"); sys.exit(4)'; echo "exit=$? (expect 4)"

echo "== check"
python - "$OUT/watch_p2p.json" "$OUT/watch_host.json" <<'PY'
import json, sys
GiB = 1024**3
p2p = json.load(open(sys.argv[1]))
g = {d["nvml_index"]: d for d in p2p["gpus"]}
def b(d, bus, dirn):
    t = d[bus][dirn]
    return None if t is None else t["bytes"]
rows = [("GPU0 NVLink TX", b(g[0], "nvlink", "tx")), ("GPU1 NVLink RX", b(g[1], "nvlink", "rx")),
        ("GPU0 NVLink RX", b(g[0], "nvlink", "rx")), ("GPU1 NVLink TX", b(g[1], "nvlink", "tx")),
        ("GPU0 PCIe TX+RX", (b(g[0], "pcie", "tx") or 0) + (b(g[0], "pcie", "rx") or 0)),
        ("GPU1 PCIe TX+RX", (b(g[1], "pcie", "tx") or 0) + (b(g[1], "pcie", "rx") or 0))]
print(f"{'counter':18} {'bytes':>14} {'GiB':>8}")
for name, v in rows:
    print(f"{name:18} {v!s:>14} {v / GiB if v is not None else float('nan'):8.4f}")
ok = all(v is not None and abs(v - GiB) <= 0.05 * GiB for _, v in rows[:2])
print("pcie source:", g[0]["pcie"]["source"], "| verdicts:", [d["verdict"]["kind"] for d in p2p["gpus"]])
host = json.load(open(sys.argv[2]))
print("via host verdicts:", [d["verdict"]["message"] for d in host["gpus"]], "exit", host["linkscope_exit_code"])
print("ACCEPTANCE (1 GiB within 5% on GPU0 TX and GPU1 RX):", "PASS" if ok else "FAIL")
PY
