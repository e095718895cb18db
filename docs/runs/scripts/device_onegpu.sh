#!/usr/bin/env bash
# One-GPU host link: linkscope beside nvbandwidth on GPU 0, in one call (<= 200 s on one GPU).
#   bash bench/device_onegpu.sh          (from the repository root; results under $OUT)
# 1. builds nvbandwidth from .anchors (skipped when /tmp/anchors/bin/nvbandwidth exists);
# 2. nvbandwidth: H2D/D2H CE and SM, both-ways-at-once CE and SM, device-local copy and the
#    host<->device SM pointer-chase latency, 512 MiB buffers, plain text -> $WORK/nvbandwidth.txt;
# 3. the matching linkscope bench entries on the real GPU (--backend cuda, 512 MiB) and bench latency
#    --kind host-read; then `linkscope survey` (real GPU);
# 4. bench/onegpu_compare.py prints the side-by-side table with ratios and writes $OUT/onegpu.json
#    (the only files under $OUT: onegpu.json and onegpu.log; the raw outputs stay in $WORK).
# Every step has its own timeout; a failed step leaves N/A in the table, never stops the script.
set -uo pipefail
export PYTHONPATH=src NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/linkscope-out}; work=${WORK:-/tmp/linkscope-onegpu}; mkdir -p "$out" "$work"
start=$(date +%s)
lap() { echo "== [$(( $(date +%s) - start )) s] $*"; }
lsc() { python3 -m linkscope "$@"; }
{
lap "$(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv,noheader 2>&1 | head -4)"
if [ ! -x /tmp/anchors/bin/nvbandwidth ]; then
  lap "build nvbandwidth (.anchors/build.sh)"
  timeout 150 bash .anchors/build.sh /tmp/anchors > "$work/build.log" 2>&1; grep "anchors:" "$work/build.log"
fi
[ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
lap "nvbandwidth"
tests="host_to_device_memcpy_ce device_to_host_memcpy_ce host_to_device_bidirectional_memcpy_ce device_to_host_bidirectional_memcpy_ce
host_to_device_memcpy_sm device_to_host_memcpy_sm host_to_device_bidirectional_memcpy_sm device_to_host_bidirectional_memcpy_sm
device_local_copy host_device_latency_sm"
if [ -x /tmp/anchors/bin/nvbandwidth ]; then
  timeout 90 /tmp/anchors/bin/nvbandwidth -b 512 -t $tests > "$work/nvbandwidth.txt" 2>&1; echo "nvbandwidth exit $?"
  grep -E "^(Running|SUM|Waived|Error)" "$work/nvbandwidth.txt"
else
  echo "nvbandwidth not built: its column stays N/A" | tee "$work/nvbandwidth.txt"
fi
lap "linkscope bench (GPU 0, 512 MiB, cuda)"
b() { local name=$1; shift; timeout 40 python3 -m linkscope bench --backend cuda --gpus 0 --sizes 512MiB --json "$work/$name.json" "$@" > "$work/$name.txt" 2>&1 || echo "bench $name failed: $(tail -1 "$work/$name.txt")"; }
b bench_h2d --pattern host --method h2d
b bench_d2h --pattern host --method d2h
b bench_host_bi_ce --pattern host --method ce --direction bi
b bench_h2d_sm --pattern host-to-all --method sm-push
b bench_d2h_sm --pattern all-to-host --method sm-push
b bench_host_bi_sm --pattern host --method sm-push --direction bi
b bench_local --pattern local --method local
lap "linkscope bench latency --kind host-read (and the one-GPU default)"
timeout 30 python3 -m linkscope bench latency --backend cuda --gpus 0 --kind host-read --json "$work/latency_host.json" > "$work/latency_host.txt" 2>&1 \
  || echo "host-read latency: $(tail -1 "$work/latency_host.txt")"
timeout 30 python3 -m linkscope bench latency --backend cuda --gpus 0 2>&1 | tail -12
lap "linkscope survey (real GPU)"
/usr/bin/time -f "survey wall %e s" timeout 90 python3 -m linkscope survey --backend cuda -o "$work/survey.json" --no-report > "$work/survey.txt" 2>&1; echo "survey exit $?"
grep "survey wall" "$work/survey.txt"
grep -A40 "^findings:" "$work/survey.txt" | head -20
lap "compare"
python3 bench/onegpu_compare.py "$work" "$out/onegpu.json"
lap "done"
} 2>&1 | tee "$out/onegpu.log"
