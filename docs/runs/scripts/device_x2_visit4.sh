#!/usr/bin/env bash
# Fourth visit on 2 x H100 (issue 27's open rows, issue 22's forced-protocol references): one call.
#   BUDGET_S=520 bash bench/device_x2_visit4.sh   (repo root; carry .anchors and .cache27/cuda-mpi-prefix.tar.xz)
# 1. GPU-aware MPI, round 3, and where bench mpi's time goes beside OSU: C and mpi4py loops (pingpong.c,
#    pingpong.py) with host buffers, host buffers in a process holding a CUDA context, and device buffers;
#    mpi4py's call cost on this CPU; the 256 MiB bw/bibw rows. Runs first, before anything compiles.
# 2. peers built (nvbandwidth, nccl-tests); copies 1-64 MiB beside nvbandwidth -b, three interleaved rounds;
#    remote-read latency beside nvbandwidth and by chase order/size/stride (bench/chase_order.py).
# 3. nccl-tests forced algorithm/protocol twice, and -G 10 up to 1 GiB (the twin's references).
# 4. the GPU tests. Writes $OUT/v4.tar.gz and $OUT/v4.log.
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin v4 520 peers nccl mpi linkscope
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c) $(git rev-parse --short HEAD 2>/dev/null)"
nproc; uptime
# ---- 1. MPI ------------------------------------------------------------------------------------------
if cuda_mpi; then
  step mpi/pingpong-build.txt 60 mpicc -O2 -DWITH_CUDA -I/usr/local/cuda/include bench/mpi_overhead/pingpong.c -L/usr/local/cuda/lib64 -lcudart -o /tmp/pingpong
  step mpi/call_cost-build.txt 30 mpicc -O2 bench/mpi_overhead/call_cost.c -o /tmp/call_cost
  d=mpi/r3; mkdir -p "$r/$d"
  for rep in a b; do
    step $d/osu_lat_DD_$rep.txt 40 $run2 $osu/osu_latency -d cuda D D
    step $d/ls_lat_DD_$rep.txt 40 $run2 python3 -m linkscope bench mpi --test latency --buffers DD --sizes 8,1KiB --json "$r/$d/ls_lat_DD_$rep.json"
    step $d/osu_lat_HH_$rep.txt 30 $run2 $osu/osu_latency H H
    step $d/ls_lat_HH_$rep.txt 30 $run2 python3 -m linkscope bench mpi --test latency --buffers HH --sizes 8,1KiB --json "$r/$d/ls_lat_HH_$rep.json"
    step $d/osu_ar_HH_$rep.txt 30 $run2 $osu/osu_allreduce -m 8
    step $d/ls_ar_HH_$rep.txt 30 $run2 python3 -m linkscope bench mpi --test allreduce --buffers HH --sizes 8 --json "$r/$d/ls_ar_HH_$rep.json"
    for mode in host ctx device; do
      step mpi/c_pingpong_${mode}_$rep.txt 40 $run2 /tmp/pingpong 0 8 20 500 $mode
      step mpi/py_pingpong_${mode}_$rep.txt 40 env MPI4PY_RC_THREAD_LEVEL=single $run2 python3 bench/mpi_overhead/pingpong.py 8 20 500 $mode
    done
  done
  step mpi/call_cost_c.txt 30 mpirun -n 1 /tmp/call_cost
  step mpi/call_cost_py.txt 60 env MPI4PY_RC_THREAD_LEVEL=single mpirun -n 1 python3 bench/mpi_overhead/call_cost.py
  step $d/osu_bw_DD.txt 40 $run2 $osu/osu_bw_16m -d cuda D D
  step $d/ls_bw_DD.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_DD.json"
  step $d/osu_bibw_DD.txt 40 $run2 $osu/osu_bibw_16m -d cuda D D
  step $d/ls_bibw_DD.txt 40 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bibw_DD.json"
  step $d/osu_bw_HH.txt 30 $run2 $osu/osu_bw_16m -d cuda H H
  step $d/ls_bw_HH.txt 30 $run2 python3 -m linkscope bench mpi --test bw --buffers HH --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_HH.json"
  # 256 MiB: device and host ends (OSU built with MAX_MSG_SIZE 256 MiB: osu_bw_256m / osu_bibw_256m)
  step $d/osu_bw256_DD.txt 60 $run2 $osu/osu_bw_256m -d cuda D D
  step $d/ls_bw256_DD.txt 60 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64MiB,256MiB --json "$r/$d/ls_bw256_DD.json"
  step $d/osu_bibw256_DD.txt 60 $run2 $osu/osu_bibw_256m -d cuda D D
  step $d/ls_bibw256_DD.txt 60 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64MiB,256MiB --json "$r/$d/ls_bibw256_DD.json"
  step $d/osu_bw256_DH.txt 60 $run2 $osu/osu_bw_256m -d cuda D H
  step $d/ls_bw256_DH.txt 60 $run2 python3 -m linkscope bench mpi --test bw --buffers DH --sizes 64MiB,256MiB --json "$r/$d/ls_bw256_DH.json"
  step $d/osu_bw256_HH.txt 60 $run2 $osu/osu_bw_256m -d cuda H H
  step $d/ls_bw256_HH.txt 60 $run2 python3 -m linkscope bench mpi --test bw --buffers HH --sizes 64MiB,256MiB --json "$r/$d/ls_bw256_HH.json"
fi
[ -n "${ONLY_MPI:-}" ] && { echo "== total $(( $(date +%s) - t0 )) s (ONLY_MPI)"; } && { cp "$r/steps.txt" "$out/"; tar -C /tmp -czf "$out/v4mpi.tar.gz" v4; exit 0; }
# ---- 2. peers: copies and latency ----------------------------------------------------------------
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
for round in 1 2 3; do
  for mib in 1 16 64; do
    step peers/nvbandwidth-b$mib-r$round.txt 40 $B/nvbandwidth -b $mib -t device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce device_to_device_memcpy_read_sm device_to_device_memcpy_write_sm
  done
  step linkscope/bench-sizes-r$round.txt 90 python3 -m linkscope bench --method ce,sm-push,sm-pull --gpus 0,1 --sizes 1MiB,16MiB,64MiB --json "$r/linkscope/bench-sizes-r$round.json"
done
for round in 1 2; do
  step peers/nvbandwidth-latency-r$round.txt 40 $B/nvbandwidth -t device_to_device_latency_sm
  step linkscope/latency-r$round.txt 60 python3 -m linkscope bench latency --kind remote-read --json "$r/linkscope/latency-r$round.json"
done
step linkscope/chase-order.txt 120 python3 bench/chase_order.py 2 "$r/linkscope/chase-order.json"
# ---- 3. NCCL references for the twin ---------------------------------------------------------------
for round in 1 2; do
  for a in Ring Tree; do for p in LL LL128; do
    step nccl/all_reduce_${a}_${p}_r$round.txt 40 env NCCL_ALGO=$a NCCL_PROTO=$p $B/all_reduce_perf -b 1M -e 1G -f 4 -g 2
  done; done
done
for op in all_reduce all_gather reduce_scatter alltoall; do
  step nccl/${op}_G10_big.txt 60 $B/${op}_perf -b 1M -e 1G -f 4 -g 2 -G 10
done
step nccl/alltoall_eager_again.txt 40 $B/alltoall_perf -b 8 -e 1M -f 2 -g 2
step nccl/alltoall_G10_small.txt 40 $B/alltoall_perf -b 8 -e 1M -f 2 -g 2 -G 10
# ---- 4. GPU tests -------------------------------------------------------------------------------------
step linkscope/gpu-tests.txt 120 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/measure
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v4.log"
device_end v4
