#!/usr/bin/env bash
# Eleventh visit on 2 x H100 (issues 27 and 22), one lease. BUDGET_S=560 bash bench/device_x2_visit11.sh
# 1. where bench mpi bw DD loses 0.3-0.7% to osu_bw at 16-64 MiB: osu_bw, bw_probe.c (OSU's Isend loop and
#    the persistent loop alternating in one process), bw_probe.py (the same from mpi4py, CuPy pool and bare
#    cudaMalloc buffers) and bench mpi, interleaved, two rounds;
# 2. host-read latency after the all-SM chase and the chase refactor, beside nvbandwidth (and remote-read);
# 3. nccl-tests allgather / reduce_scatter 4-128 MiB eager, -G 10, -G 10 with NCCL_GRAPH_REGISTER=0, two
#    rounds, and allreduce / alltoall 256 MiB-1 GiB eager and -G 10 (the twin's last misses);
# 4. pageable h2d/d2h at 256 MiB three times in the lease (its spread);
# 5. the GPU tests (engines, measure, comm) on the final code.
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin v11 560 peers mpi nccl linkscope
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
if cuda_mpi; then
  step mpi/probe-build.txt 30 mpicc -O2 -DWITH_CUDA -I"${CUDA_HOME:-/usr/local/cuda}/include" -o "$r/bw_probe" \
    bench/mpi_overhead/bw_probe.c -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lcudart
  for rep in a b; do
    step mpi/osu_bw_DD_$rep.txt 60 $run2 $osu/osu_bw_256m -d cuda D D
    for mib in 16 64; do
      step mpi/c_probe_${mib}_$rep.txt 40 $run2 "$r/bw_probe" $((mib * 1048576)) 6
      step mpi/py_probe_${mib}_$rep.txt 60 $run2 python3 bench/mpi_overhead/bw_probe.py $((mib * 1048576)) 4
    done
    step mpi/ls_bw_DD_$rep.txt 60 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 16MiB,64MiB --json "$r/mpi/ls_bw_DD_$rep.json"
  done
fi
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
for round in 1 2; do
  step peers/nvbandwidth-hostlat-r$round.txt 40 $B/nvbandwidth -t host_device_latency_sm device_to_device_latency_sm
  step linkscope/latency-r$round.txt 60 python3 -m linkscope bench latency --kind host-read,remote-read --gpus 0,1 --json "$r/linkscope/latency-r$round.json"
done
for round in 1 2; do
  for op in all_gather reduce_scatter; do
    step nccl/${op}_eager_r$round.txt 40 $B/${op}_perf -b 4M -e 128M -f 2 -g 2
    step nccl/${op}_G10_r$round.txt 40 $B/${op}_perf -b 4M -e 128M -f 2 -g 2 -G 10
    step nccl/${op}_G10_noreg_r$round.txt 40 env NCCL_GRAPH_REGISTER=0 $B/${op}_perf -b 4M -e 128M -f 2 -g 2 -G 10
  done
done
for op in all_reduce alltoall; do
  step nccl/${op}_big_eager.txt 60 $B/${op}_perf -b 256M -e 1G -f 2 -g 2
  step nccl/${op}_big_G10.txt 60 $B/${op}_perf -b 256M -e 1G -f 2 -g 2 -G 10
done
for round in 1 2 3; do
  step linkscope/pageable-r$round.txt 60 python3 -m linkscope bench --pattern host --method h2d-pageable,d2h-pageable --gpus 0,1 --sizes 16MiB,256MiB --json "$r/linkscope/pageable-r$round.json"
done
step linkscope/gpu-tests.txt 150 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/measure tests/comm
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v11.log"
device_end v11
