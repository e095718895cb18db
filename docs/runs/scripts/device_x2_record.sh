#!/usr/bin/env bash
# One device call on 2 GPUs: record the machine and the peer tools for fixtures and the twin (issues 22-24, 27).
#   bash bench/device_x2_record.sh      (repo root; .anchors/ = a copy of ../shared/anchors, carried)
# Writes under $OUT: record.tar.gz (every output, one file per command, named below), record.log.
# Bounded by BUDGET_S (default 540): steps are skipped once it has passed.
set -uo pipefail
t0=$(date +%s); budget=${BUDGET_S:-540}
out=${OUT:-/tmp/x2out}; mkdir -p "$out"
r=/tmp/rec; rm -rf "$r"; mkdir -p "$r"/{peers,nccl,machine,linkscope}
export PYTHONPATH=$PWD/src NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
left() { echo $(( budget - ($(date +%s) - t0) )); }
step() {  # step FILE LIMIT CMD...: stdout+stderr to FILE, header in the log
  local f=$1 lim=$2; shift 2
  local l; l=$(left); if [ "$l" -lt 10 ]; then echo "SKIP $f (budget)" | tee -a "$r/steps.txt"; return 0; fi
  [ "$lim" -gt "$l" ] && lim=$l
  local s; s=$(date +%s)
  { echo "# command: $*"; echo "# date: $(date -u +%FT%TZ)"; } > "$r/$f"
  timeout -k 5 "$lim" "$@" >> "$r/$f" 2>&1; local rc=$?
  echo "$f rc=$rc $(( $(date +%s) - s ))s :: $*" | tee -a "$r/steps.txt"
}
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
step machine/nvidia-smi-q.txt 30 nvidia-smi -q
step machine/nvidia-smi-topo-m.txt 20 nvidia-smi topo -m
step machine/nvidia-smi-topo-p2p.txt 20 bash -c 'for c in r w n a p; do echo "## -p2p $c"; nvidia-smi topo -p2p $c; done'
step machine/nvidia-smi-nvlink.txt 30 bash -c 'nvidia-smi nvlink -s; nvidia-smi nvlink -e; nvidia-smi nvlink -c'
step machine/nvml_dump.log 60 python3 bench/nvml_dump.py "$r/machine/nvml_dump.json"
step machine/cmdline.txt 5 bash -c 'cat /proc/cmdline; echo "## iommu"; ls -la /sys/class/iommu/ 2>&1; for g in /sys/kernel/iommu_groups/*; do echo "$g $(cat $g/type 2>/dev/null) $(ls $g/devices 2>/dev/null | tr "\n" " ")"; done 2>&1 | head -200; echo "## dmesg iommu"; dmesg 2>/dev/null | grep -iE "iommu|dmar|acs|AMD-Vi" | head -40'
step machine/lspci.txt 20 bash -c 'command -v lspci && lspci -vvv -xxxx || echo "no lspci"'
step machine/sysfs_pci.log 60 python3 - "$r/machine/sysfs" <<'PY'
import os, sys, shutil
dst = sys.argv[1]; base = "/sys/bus/pci/devices"
names = ("config", "vendor", "device", "class", "subsystem_vendor", "subsystem_device", "revision", "current_link_speed",
         "current_link_width", "max_link_speed", "max_link_width", "numa_node", "local_cpulist", "local_cpus",
         "resource", "irq", "enable", "driver_override", "d3cold_allowed", "secondary_bus_number", "subordinate_bus_number",
         "aer_dev_correctable", "aer_dev_fatal", "aer_dev_nonfatal", "reset_method", "ari_enabled")
count = 0
for d in sorted(os.listdir(base)):
    real = os.path.realpath(os.path.join(base, d)); out = os.path.join(dst, "devices", d); os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "REALPATH"), "w") as f: f.write(real + "\n")
    for link in ("driver", "iommu_group", "physfn"):
        p = os.path.join(real, link)
        if os.path.islink(p):
            with open(os.path.join(out, link.upper() + "_LINK"), "w") as f: f.write(os.readlink(p) + "\n")
    for n in names:
        p = os.path.join(real, n)
        try:
            data = open(p, "rb").read()
        except OSError as e:
            data = f"<unreadable: {e.strerror}>".encode()
        with open(os.path.join(out, n), "wb") as f: f.write(data)
    for rs in sorted(x for x in os.listdir(real) if x.startswith("resource") and x[8:].isdigit() or x.endswith("_resize")):
        try:
            st = os.stat(os.path.join(real, rs)); open(os.path.join(out, rs + ".size"), "w").write(f"{st.st_size}\n")
        except OSError: pass
    count += 1
print("devices", count)
PY
step machine/linkscope-env.txt 60 python3 -m linkscope env
step machine/linkscope-topo.txt 60 python3 -m linkscope topo
step machine/export_raw.log 60 python3 -c "from pathlib import Path; from linkscope.discovery.raw import export_raw; print(export_raw(Path('$r/machine/raw')))"

# peer tools, built from the carried sources
step build-anchors.log 240 bash .anchors/build.sh /tmp/anchors
[ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
B=/tmp/anchors/bin
NVB_TESTS="device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce device_to_device_bidirectional_memcpy_read_ce device_to_device_bidirectional_memcpy_write_ce device_to_device_memcpy_read_sm device_to_device_memcpy_write_sm device_to_device_bidirectional_memcpy_read_sm host_to_device_memcpy_ce device_to_host_memcpy_ce host_to_device_bidirectional_memcpy_ce all_to_host_memcpy_ce host_to_all_memcpy_ce device_local_copy device_to_device_latency_sm host_device_latency_sm"
step peers/nvbandwidth.txt 120 $B/nvbandwidth -t $NVB_TESTS
step peers/nvbandwidth.json 90 $B/nvbandwidth -j -t device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce device_to_device_bidirectional_memcpy_read_ce host_to_device_memcpy_ce device_to_device_latency_sm
for mib in 1 16 64; do
  step peers/nvbandwidth-b$mib.txt 40 $B/nvbandwidth -b $mib -t device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce device_to_device_memcpy_read_sm device_to_device_memcpy_write_sm
done
step peers/p2pBandwidthLatencyTest.txt 90 $B/p2pBandwidthLatencyTest
# nccl-tests: the default choice per op, forced algorithms/protocols for allreduce, CUDA graphs at small sizes
for op in all_reduce all_gather reduce_scatter broadcast sendrecv alltoall; do
  step nccl/${op}.txt 60 $B/${op}_perf -b 8 -e 1G -f 2 -g 2
done
step nccl/all_reduce.json.log 60 $B/all_reduce_perf -b 8 -e 1G -f 2 -g 2 -J "$r/nccl/all_reduce.json"
step nccl/all_reduce_G10.txt 60 $B/all_reduce_perf -b 8 -e 1M -f 2 -g 2 -G 10
for a in Ring Tree; do for p in LL LL128 Simple; do
  step nccl/all_reduce_${a}_${p}.txt 60 env NCCL_ALGO=$a NCCL_PROTO=$p $B/all_reduce_perf -b 8 -e 1G -f 2 -g 2
done; done
for p in LL LL128 Simple; do step nccl/all_gather_Ring_${p}.txt 60 env NCCL_ALGO=Ring NCCL_PROTO=$p $B/all_gather_perf -b 8 -e 1G -f 2 -g 2; done
step nccl/tuning_debug.txt 60 env NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,GRAPH,ENV $B/all_reduce_perf -b 8 -e 8 -g 2 -n 1 -w 0
# NCCL's own estimate (ncclGroupSimulateEnd), default and forced
nccl_home=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])' 2>/dev/null)
step nccl/estimate-build.log 60 /usr/local/cuda/bin/nvcc -O2 bench/nccl_estimate.cu -I"$nccl_home/include" -L"$nccl_home/lib" -lnccl -o /tmp/nccl_estimate
if [ -x /tmp/nccl_estimate ]; then
  step nccl/estimate-default.txt 60 /tmp/nccl_estimate 8 1073741824
  for a in Ring Tree; do for p in LL LL128 Simple; do
    step nccl/estimate-${a}-${p}.txt 60 env NCCL_ALGO=$a NCCL_PROTO=$p /tmp/nccl_estimate 8 1073741824
  done; done
fi
# linkscope beside them
step linkscope/survey.txt 120 python3 -m linkscope survey -o "$r/linkscope/survey.json" --no-report
step linkscope/bench-sizes.txt 90 python3 -m linkscope bench --method ce,sm-push,sm-pull --gpus 0,1 --sizes 1MiB,4MiB,16MiB,64MiB --json "$r/linkscope/bench-sizes.json"
step linkscope/latency.txt 60 python3 -m linkscope bench latency --json "$r/linkscope/latency.json"
step linkscope/nccl-allreduce.txt 90 python3 -m linkscope bench nccl --op allreduce --sizes 8:1GiB --json "$r/linkscope/nccl-allreduce.json"
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/record.log"
cp "$r/record.log" "$out/"
tar -C /tmp -czf "$out/record.tar.gz" rec
ls -la "$out"
