#!/usr/bin/env bash
# Thirteenth visit on 2 x H100 (issues 27 and 22), one lease. BUDGET_S=450 bash bench/device_x2_visit13.sh
# 1. bench mpi bw/bibw DD with the warm-up that leaves the first (CUDA IPC set-up) window out, beside OSU,
#    two rounds; bw with 16 MiB not first; bw_probe.py: constant vs random data vs a view of 256 MiB buffers;
# 2. host-read (each SM in turn) and remote-read through the engine beside nvbandwidth, two rounds;
# 3. nccl-tests alltoall 64 MiB-1 GiB eager / -G 10 and allreduce Tree/LL 1-4 MiB (the twin's last misses);
# 4. the survey on the final code (time, host-read in turn), the GPU tests.
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin v13 450 peers mpi nccl linkscope
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
if cuda_mpi; then
  for rep in a b; do
    for t in bw bibw; do
      step mpi/osu_${t}_DD_$rep.txt 60 $run2 $osu/osu_${t}_256m -d cuda D D
      step mpi/ls_${t}_DD_$rep.txt 60 $run2 python3 -m linkscope bench mpi --test $t --buffers DD --sizes 16MiB,64MiB,256MiB --json "$r/mpi/ls_${t}_DD_$rep.json"
    done
    step mpi/ls_bw_DD_1first_$rep.txt 60 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 1MiB,16MiB,64MiB --json "$r/mpi/ls_bw_DD_1first_$rep.json"
    step mpi/py_probe_16_$rep.txt 60 env VARIANTS=persistent/pool,persistent/random,persistent/view $run2 python3 bench/mpi_overhead/bw_probe.py 16777216 4
  done
fi
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
for round in 1 2; do
  step peers/nvbandwidth-latency-r$round.txt 40 $B/nvbandwidth -t host_device_latency_sm device_to_device_latency_sm
  step linkscope/latency-r$round.txt 60 python3 -m linkscope bench latency --kind host-read,remote-read --gpus 0,1 --json "$r/linkscope/latency-r$round.json"
done
step nccl/alltoall_eager.txt 60 $B/alltoall_perf -b 64M -e 1G -f 2 -g 2
step nccl/alltoall_G10.txt 60 $B/alltoall_perf -b 64M -e 1G -f 2 -g 2 -G 10
for round in 1 2; do
  step nccl/all_reduce_Tree_LL_r$round.txt 40 env NCCL_ALGO=Tree NCCL_PROTO=LL $B/all_reduce_perf -b 1M -e 4M -f 2 -g 2
done
step linkscope/survey.txt 120 /usr/bin/time -v python3 -m linkscope survey -o "$r/linkscope/survey.json" --no-report
step linkscope/gpu-tests.txt 150 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/measure tests/comm
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v13.log"
device_end v13
