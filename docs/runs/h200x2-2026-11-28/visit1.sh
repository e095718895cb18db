#!/usr/bin/env bash
# 2 x H200 (nvidia-h200-x2), 2026-11-28, call 1: peers built beside; held-out lease for the verdicts (issue 33);
# bench nccl vs nccl-tests, one process, every op, eager and CUDA graphs (issue 36); CE vs SM both ways (the
# copy-engine mechanism, issue 36); watch --expect nvlink with peer access on and off (issue 33).
#   BUDGET_S=560 bash docs/runs/h200x2-2026-11-28/visit1.sh    (repository root; .anchors and .whl carried)
set -uo pipefail
source bench/device_steps.sh
device_begin x2v1 560 peers linkscope nccl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
SIZES=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB,32MiB,128MiB,512MiB
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
nvidia-smi topo -m > "$r/peers/topo-m.txt" 2>&1
[ -x /tmp/anchors/bin/nvbandwidth ] || step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
step peers/nvbandwidth-selected.txt 90 $B/nvbandwidth -t device_to_device_memcpy_write_ce device_to_device_memcpy_read_ce device_to_device_bidirectional_memcpy_write_ce device_to_device_memcpy_write_sm device_to_device_memcpy_read_sm device_to_device_bidirectional_memcpy_write_sm host_to_device_memcpy_ce device_to_host_memcpy_ce device_local_copy device_to_device_latency_sm host_device_latency_sm
step linkscope/survey.txt 120 /usr/bin/time -v python3 -m linkscope survey -o "$r/linkscope/survey.json" --no-report
step linkscope/topo.txt 30 python3 -m linkscope topo -o "$r/linkscope/topo.json"
step linkscope/bi.txt 60 python3 -m linkscope bench --method ce,sm-push --pattern matrix --direction bi --sizes 64MiB,512MiB --json "$r/linkscope/bi.json"
step linkscope/watch_nvlink.txt 40 python3 -m linkscope watch --expect nvlink --json "$r/linkscope/watch_nvlink.json" -- python3 bench/copy_once.py 0 1 4GiB
step linkscope/watch_nopeer.txt 60 python3 -m linkscope watch --expect nvlink --json "$r/linkscope/watch_nopeer.json" -- python3 bench/copy_once.py 0 1 2GiB --method ce-nopeer
for op in allreduce allgather reduce_scatter alltoall sendrecv; do
  bin=$(case $op in allreduce) echo all_reduce;; allgather) echo all_gather;; *) echo $op;; esac)
  for g in 0 20; do
    gflag=""; [ $g -gt 0 ] && gflag="-G $g"
    step nccl/${bin}_g$g.txt 40 $B/${bin}_perf -b 8 -e 512M -f 4 -g 2 $gflag
    step nccl/ls_${op}_g$g.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $SIZES --runs 3 --cuda-graph $g --json "$r/nccl/ls_${op}_g$g.json"
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/x2v1.log"
device_end x2v1
