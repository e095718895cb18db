#!/usr/bin/env bash
# Twelfth visit on 2 x H100 (issues 27 and 22), one lease. BUDGET_S=400 bash bench/device_x2_visit12.sh
# 1. bench mpi bw/bibw DD at 16-256 MiB, its default warm-up (0.1 s a size) and 150 warm-up windows, beside
#    osu_bw/osu_bibw, two rounds (visit 10: the loop itself is level with OSU's in one process, bw_probe);
# 2. the chase spread over the SMs (bench/chase_modes.py) beside nvbandwidth's two latency tests, two rounds;
# 3. nccl-tests allgather, reduce_scatter and allreduce 4 MiB-1 GiB eager and -G 10 (allgather also with
#    NCCL_GRAPH_REGISTER=0): one lease's curve for the twin's Simple ring.
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin v12 400 peers mpi nccl linkscope
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
if cuda_mpi; then
  for rep in a b; do
    for t in bw bibw; do
      step mpi/osu_${t}_DD_$rep.txt 60 $run2 $osu/osu_${t}_256m -d cuda D D
      step mpi/ls_${t}_DD_$rep.txt 60 $run2 python3 -m linkscope bench mpi --test $t --buffers DD --sizes 16MiB,64MiB,256MiB --json "$r/mpi/ls_${t}_DD_$rep.json"
      step mpi/ls_${t}_DD_warm150_$rep.txt 60 $run2 python3 -m linkscope bench mpi --test $t --buffers DD --sizes 16MiB,64MiB --warmup 150 --json "$r/mpi/ls_${t}_DD_warm150_$rep.json"
    done
  done
fi
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
for round in 1 2; do
  step peers/nvbandwidth-latency-r$round.txt 40 $B/nvbandwidth -t host_device_latency_sm device_to_device_latency_sm
  step linkscope/chase-modes-r$round.txt 90 python3 bench/chase_modes.py 1 "$r/linkscope/chase-modes-r$round.json"
done
for op in all_gather reduce_scatter all_reduce; do
  step nccl/${op}_eager.txt 60 $B/${op}_perf -b 4M -e 1G -f 2 -g 2
  step nccl/${op}_G10.txt 60 $B/${op}_perf -b 4M -e 1G -f 2 -g 2 -G 10
done
step nccl/all_gather_G10_noreg.txt 60 env NCCL_GRAPH_REGISTER=0 $B/all_gather_perf -b 4M -e 1G -f 2 -g 2 -G 10
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v12.log"
device_end v12
