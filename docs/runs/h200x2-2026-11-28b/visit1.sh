#!/usr/bin/env bash
# 2 x H200, 2026-11-28 (afternoon session), call 1, on main as of 12:40 UTC: rows the twin needs (issue 35: every op
# 1 MiB-1 GiB eager and -G 20, allreduce with forced algorithms and protocols), the copy-engine sharing probe (issue 36:
# ce_share.csv, CE and SM), and broken-node recordings for `check` (issue 33: NCCL_P2P_DISABLE -> SHM through host
# memory, + NCCL_SHM_DISABLE -> sockets, NCCL_MAX_NCHANNELS=2, a noisy neighbour copying both ways during nvbandwidth,
# nccl-tests and a linkscope survey), with a healthy nvbandwidth run of the same lease beside them.
#   BUDGET_S=450 bash docs/runs/h200x2-2026-11-28b/visit1.sh
set -uo pipefail
source bench/device_steps.sh
device_begin pm1 450 nccl linkscope peers broken
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
D=docs/runs/h200x2-2026-11-28b
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c)"
nvidia-smi topo -m > "$r/peers/topo-m.txt" 2>&1
[ -x /tmp/anchors/bin/all_reduce_perf ] || step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
NVB="device_to_device_memcpy_write_ce device_to_device_memcpy_read_ce device_to_device_bidirectional_memcpy_write_ce device_to_device_memcpy_write_sm device_to_device_bidirectional_memcpy_write_sm"
step peers/nvbandwidth-healthy.txt 40 $B/nvbandwidth -t $NVB
# issue 35: twin rows, 1 MiB-1 GiB, each op eager and -G 20
for op in all_reduce all_gather reduce_scatter alltoall sendrecv; do
  step nccl/${op}_g0.txt 40 $B/${op}_perf -b 1M -e 1G -f 2 -g 2
  step nccl/${op}_g20.txt 40 $B/${op}_perf -b 1M -e 1G -f 2 -g 2 -G 20
done
for algo in Ring Tree; do step nccl/all_reduce_algo_$algo.txt 40 env NCCL_ALGO=$algo $B/all_reduce_perf -b 1M -e 1G -f 4 -g 2; done
for proto in LL LL128 Simple; do step nccl/all_reduce_proto_$proto.txt 40 env NCCL_PROTO=$proto $B/all_reduce_perf -b 1M -e 256M -f 4 -g 2; done
# issue 36: copy engines shared by one GPU's concurrent copies, CE against SM
step linkscope/ce_share.txt 60 python3 -m linkscope bench --method ce,sm-push --pattern $D/ce_share.csv --sizes 64MiB,512MiB --json $r/linkscope/ce_share.json
# issue 33: broken nodes
for op in all_reduce sendrecv all_gather; do
  step broken/p2p_off_${op}.txt 40 env NCCL_P2P_DISABLE=1 $B/${op}_perf -b 8 -e 1G -f 4 -g 2
done
for op in all_reduce sendrecv; do
  step broken/p2p_shm_off_${op}.txt 60 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 $B/${op}_perf -b 8 -e 256M -f 4 -g 2 -n 5 -w 2
done
step broken/nchannels2_all_reduce.txt 40 env NCCL_MAX_NCHANNELS=2 $B/all_reduce_perf -b 8 -e 1G -f 4 -g 2
python3 $D/noisy.py 70 > "$r/broken/noisy.log" 2>&1 & npid=$!
sleep 3
step broken/noisy_nvbandwidth.txt 30 $B/nvbandwidth -t $NVB
step broken/noisy_all_reduce.txt 20 $B/all_reduce_perf -b 1M -e 1G -f 4 -g 2
step broken/noisy_survey.txt 40 python3 -m linkscope survey -o $r/broken/noisy_survey.json --no-report
kill $npid 2>/dev/null; wait $npid 2>/dev/null
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/pm1.log"
device_end pm1
