#!/usr/bin/env bash
# Sixth visit on 2 x H100 (issue 27): the final side-by-side after visits 4-5's fixes (all-SM chase,
# host-buffer runs without CUDA, bw warm-up by time, persistent latency loop, lead-in copies).
#   BUDGET_S=540 bash bench/device_x2_visit6.sh   (repo root; carry .anchors and .cache27)
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin v6 540 peers mpi/r5 linkscope
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
uptime
if cuda_mpi; then
  d=mpi/r5
  step mpi/cuda_state_ar_HH.txt 40 $run2 python3 bench/mpi_overhead/cuda_state.py bench mpi --test allreduce --buffers HH --sizes 8
  for rep in a b c; do
    step $d/osu_lat_DD_$rep.txt 40 $run2 $osu/osu_latency -d cuda D D
    step $d/ls_lat_DD_$rep.txt 40 $run2 python3 -m linkscope bench mpi --test latency --buffers DD --sizes 8,1KiB --json "$r/$d/ls_lat_DD_$rep.json"
    step $d/osu_lat_HH_$rep.txt 30 $run2 $osu/osu_latency H H
    step $d/ls_lat_HH_$rep.txt 30 $run2 python3 -m linkscope bench mpi --test latency --buffers HH --sizes 8,1KiB --json "$r/$d/ls_lat_HH_$rep.json"
    step $d/osu_ar_HH_$rep.txt 30 $run2 $osu/osu_allreduce -m 8
    step $d/ls_ar_HH_$rep.txt 30 $run2 python3 -m linkscope bench mpi --test allreduce --buffers HH --sizes 8 --json "$r/$d/ls_ar_HH_$rep.json"
  done
  for rep in a b; do
    step $d/osu_bw_DD_$rep.txt 40 $run2 $osu/osu_bw_16m -d cuda D D
    step $d/ls_bw_DD_$rep.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_DD_$rep.json"
    step $d/osu_bibw_DD_$rep.txt 40 $run2 $osu/osu_bibw_16m -d cuda D D
    step $d/ls_bibw_DD_$rep.txt 40 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bibw_DD_$rep.json"
    step $d/osu_bw_HH_$rep.txt 30 $run2 $osu/osu_bw_16m -d cuda H H
    step $d/ls_bw_HH_$rep.txt 30 $run2 python3 -m linkscope bench mpi --test bw --buffers HH --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_HH_$rep.json"
  done
  step $d/osu_bw256_DD.txt 60 $run2 $osu/osu_bw_256m -d cuda D D
  step $d/ls_bw256_DD.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64MiB,256MiB --json "$r/$d/ls_bw256_DD.json"
  step $d/osu_bibw256_DD.txt 60 $run2 $osu/osu_bibw_256m -d cuda D D
  step $d/ls_bibw256_DD.txt 40 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64MiB,256MiB --json "$r/$d/ls_bibw256_DD.json"
  step $d/ls_bw256_HH.txt 60 $run2 python3 -m linkscope bench mpi --test bw --buffers HH --sizes 64MiB,256MiB --json "$r/$d/ls_bw256_HH.json"
fi
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
for round in 1 2; do
  step peers/nvbandwidth-latency-r$round.txt 40 $B/nvbandwidth -t device_to_device_latency_sm
  step linkscope/latency-r$round.txt 60 python3 -m linkscope bench latency --kind remote-read --json "$r/linkscope/latency-r$round.json"
done
step linkscope/chase-order.txt 120 python3 bench/chase_order.py 1 "$r/linkscope/chase-order.json"
for round in 1 2; do
  for mib in 1 16 64; do
    step peers/nvbandwidth-b$mib-r$round.txt 40 $B/nvbandwidth -b $mib -t device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce device_to_device_memcpy_read_sm device_to_device_memcpy_write_sm
  done
  step linkscope/bench-sizes-r$round.txt 90 python3 -m linkscope bench --method ce,sm-push,sm-pull --gpus 0,1 --sizes 1MiB,16MiB,64MiB --json "$r/linkscope/bench-sizes-r$round.json"
  step linkscope/sm-launch-short-r$round.txt 120 python3 bench/sm_launch_sweep.py "$r/linkscope/sm-launch-short-r$round.json" 1,16,64 short
done
step linkscope/gpu-tests.txt 150 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/measure tests/comm/test_gpu_comm.py
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v6.log"
device_end v6
