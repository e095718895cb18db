#!/usr/bin/env bash
# Fifth visit on 2 x H100 (issue 27): one call, after visit 4 (bench/device_x2_visit4.sh) found
#  - host-buffer MPI calls of the CUDA-aware Open MPI cost more in a process holding a CUDA context;
#  - persistent requests beat Send/Recv for ping-pong there (now bench mpi's latency loop);
#  - bench mpi bw/bibw DD at 64 MiB 0.83-0.91x of OSU as the first size of a short sweep;
#  - remote-read 0.853 us in every chase order/size/stride at 2 MiB against nvbandwidth's 0.828;
#  - sm-push/sm-pull 0.990-0.996x of nvbandwidth at 16-64 MiB.
#   BUDGET_S=520 bash bench/device_x2_visit5.sh   (repo root; carry .anchors and .cache27)
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin v5 520 peers mpi/r4 linkscope
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
uptime
if cuda_mpi; then
  d=mpi/r4
  step mpi/cuda_state_ar_HH.txt 40 $run2 python3 bench/mpi_overhead/cuda_state.py bench mpi --test allreduce --buffers HH --sizes 8
  step mpi/cuda_state_lat_HH.txt 40 $run2 python3 bench/mpi_overhead/cuda_state.py bench mpi --test latency --buffers HH --sizes 8
  for rep in a b; do
    for mode in host init ctxafter; do
      step mpi/py_pingpong_${mode}_$rep.txt 40 env MPI4PY_RC_THREAD_LEVEL=single $run2 python3 bench/mpi_overhead/pingpong.py 8 20 500 $mode
    done
    step $d/osu_lat_DD_$rep.txt 40 $run2 $osu/osu_latency -d cuda D D
    step $d/ls_lat_DD_$rep.txt 40 $run2 python3 -m linkscope bench mpi --test latency --buffers DD --sizes 8,1KiB --json "$r/$d/ls_lat_DD_$rep.json"
    step $d/osu_lat_HH_$rep.txt 30 $run2 $osu/osu_latency H H
    step $d/ls_lat_HH_$rep.txt 30 $run2 python3 -m linkscope bench mpi --test latency --buffers HH --sizes 8,1KiB --json "$r/$d/ls_lat_HH_$rep.json"
    step $d/osu_ar_HH_$rep.txt 30 $run2 $osu/osu_allreduce -m 8
    step $d/ls_ar_HH_$rep.txt 30 $run2 python3 -m linkscope bench mpi --test allreduce --buffers HH --sizes 8 --json "$r/$d/ls_ar_HH_$rep.json"
    step $d/osu_bw_DD_$rep.txt 40 $run2 $osu/osu_bw_16m -d cuda D D
    step $d/ls_bw_DD_$rep.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_DD_$rep.json"
    step $d/osu_bw_HH_$rep.txt 30 $run2 $osu/osu_bw_16m -d cuda H H
    step $d/ls_bw_HH_$rep.txt 30 $run2 python3 -m linkscope bench mpi --test bw --buffers HH --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_HH_$rep.json"
  done
  # 64 MiB: first size of a short sweep (defaults: 2 timed windows after 1), after 16 MiB, and with OSU's counts
  step $d/osu_bw256_DD.txt 60 $run2 $osu/osu_bw_256m -d cuda D D
  step $d/ls_bw64_first.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64MiB,256MiB --json "$r/$d/ls_bw64_first.json"
  step $d/ls_bw64_after16.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 16MiB,64MiB,256MiB --json "$r/$d/ls_bw64_after16.json"
  step $d/ls_bw64_osucounts.txt 60 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64MiB --iterations 20 --warmup 2 --json "$r/$d/ls_bw64_osucounts.json"
  step $d/osu_bibw256_DD.txt 60 $run2 $osu/osu_bibw_256m -d cuda D D
  step $d/ls_bibw64_first.txt 40 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64MiB,256MiB --json "$r/$d/ls_bibw64_first.json"
  step $d/ls_bibw64_osucounts.txt 60 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64MiB --iterations 20 --warmup 2 --json "$r/$d/ls_bibw64_osucounts.json"
fi
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
step linkscope/chase-order.txt 120 python3 bench/chase_order.py 1 "$r/linkscope/chase-order.json"
step peers/nvbandwidth-latency.txt 40 $B/nvbandwidth -t device_to_device_latency_sm
step linkscope/latency.txt 60 python3 -m linkscope bench latency --kind remote-read --json "$r/linkscope/latency.json"
step linkscope/sm-launch-sweep.txt 150 python3 bench/sm_launch_sweep.py "$r/linkscope/sm-launch-sweep.json"
for mib in 16 64; do
  step peers/nvbandwidth-b$mib.txt 40 $B/nvbandwidth -b $mib -t device_to_device_memcpy_read_sm device_to_device_memcpy_write_sm
done
step linkscope/bench-sizes.txt 90 python3 -m linkscope bench --method ce,sm-push,sm-pull --gpus 0,1 --sizes 1MiB,16MiB,64MiB --json "$r/linkscope/bench-sizes.json"
step linkscope/gpu-tests.txt 120 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/measure
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v5.log"
device_end v5
