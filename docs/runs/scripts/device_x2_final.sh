#!/usr/bin/env bash
# Second visit on 2 x H100 (issue 27 and the checks of issues 22-24): peers side by side with linkscope,
# NCCL's own estimate, MPI round 2, the survey of the merged code. Writes $OUT/final.tar.gz and final.log.
#   bash bench/device_x2_final.sh   (repo root; carry .anchors and .cache27/cuda-mpi-prefix.tar.xz)
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin fin ${BUDGET_S:-420} peers nccl mpi linkscope
out=${OUT:-/tmp/x2final}; mkdir -p "$out"
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
# the merged code on the GPUs: survey (health, counters), topo --health, GPU tests of the engines
step linkscope/survey.txt 120 python3 -m linkscope survey -o "$r/linkscope/survey.json" --no-report
step linkscope/topo-health.txt 60 python3 -m linkscope topo --health
step linkscope/topo-health.json 60 python3 -m linkscope topo --health --json -
step linkscope/export-raw.txt 60 python3 -m linkscope topo export --raw "$r/linkscope/raw"
step linkscope/peercheck.txt 90 python3 -m linkscope bench --method ce,ce-nopeer,staged-pinned --gpus 0,1 --sizes 256MiB --json "$r/linkscope/peercheck.json"
step linkscope/health-run.txt 60 python3 -m linkscope topo --health --run "$r/linkscope/peercheck.json"
step linkscope/watch.txt 60 python3 -m linkscope watch --json "$r/linkscope/watch.json" -- python3 bench/copy_once.py 0 1 1GiB
wheel=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])' 2>/dev/null)
step nccl/cupy-nccl.txt 30 python3 -c "import cupy, cupy.cuda.nccl as n; print('cupy', cupy.__version__, 'nccl', n.get_version()); print([l.split()[-1] for l in open('/proc/self/maps') if 'libnccl' in l][:1])"
step nccl/estimate-build.log 60 /usr/local/cuda/bin/nvcc -O2 bench/nccl_estimate.cu -I"$wheel/include" -L"$wheel/lib" -lnccl -o /tmp/nccl_estimate
export LD_LIBRARY_PATH=$wheel/lib:${LD_LIBRARY_PATH:-}
if [ -x /tmp/nccl_estimate ]; then
  step nccl/estimate-default.txt 40 /tmp/nccl_estimate 8 1073741824
  for a in Ring Tree; do for p in LL LL128 Simple; do
    step nccl/estimate-${a}-${p}.txt 30 env NCCL_ALGO=$a NCCL_PROTO=$p /tmp/nccl_estimate 8 1073741824
  done; done
fi
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin
# peers side by side: copies 1-64 MiB, latency
for mib in 1 16 64; do
  step peers/nvbandwidth-b$mib.txt 40 $B/nvbandwidth -b $mib -t device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce device_to_device_memcpy_read_sm device_to_device_memcpy_write_sm
done
step linkscope/bench-sizes.txt 90 python3 -m linkscope bench --method ce,sm-push,sm-pull --gpus 0,1 --sizes 1MiB,4MiB,16MiB,64MiB --json "$r/linkscope/bench-sizes.json"
step peers/nvbandwidth-latency.txt 40 $B/nvbandwidth -t device_to_device_latency_sm
step linkscope/latency.txt 60 python3 -m linkscope bench latency --kind remote-read --json "$r/linkscope/latency.json"
step peers/nvbandwidth-b1-again.txt 40 $B/nvbandwidth -b 1 -t device_to_device_memcpy_write_ce device_to_device_memcpy_write_sm device_to_device_memcpy_read_sm
# NCCL small sizes: nccl-tests -G 10 with the wheel's NCCL and with the library CuPy loads, and linkscope
step nccl/all_reduce_G10.txt 60 $B/all_reduce_perf -b 8 -e 1M -f 2 -g 2 -G 10
cupylib=$(sed -n 2p "$r/nccl/cupy-nccl.txt" | tr -d "[]'")
[ -f "$cupylib" ] && step nccl/all_reduce_G10_cupylib.txt 60 env LD_PRELOAD="$cupylib" $B/all_reduce_perf -b 8 -e 1M -f 2 -g 2 -G 10
step linkscope/nccl-small.txt 90 python3 -m linkscope bench nccl --op allreduce --sizes 8:1MiB --json "$r/linkscope/nccl-small.json"
# MPI round 2 (CUDA-aware Open MPI unpacked from the first visit's cache)
if cuda_mpi; then
  for round in 1 2; do
    d=mpi/r$round; mkdir -p "$r/$d"
    step $d/osu_lat_DD.txt 40 $run2 $osu/osu_latency -d cuda D D
    step $d/ls_lat_DD.txt 40 $run2 python3 -m linkscope bench mpi --test latency --buffers DD --sizes 8,1KiB --json "$r/$d/ls_lat_DD.json"
    step $d/osu_bw_DD.txt 40 $run2 $osu/osu_bw_16m -d cuda D D
    step $d/ls_bw_DD.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_DD.json"
    step $d/osu_bibw_DD.txt 40 $run2 $osu/osu_bibw_16m -d cuda D D
    step $d/ls_bibw_DD.txt 40 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bibw_DD.json"
    step $d/osu_lat_HH.txt 30 $run2 $osu/osu_latency H H
    step $d/ls_lat_HH.txt 30 $run2 python3 -m linkscope bench mpi --test latency --buffers HH --sizes 8,1KiB --json "$r/$d/ls_lat_HH.json"
    step $d/osu_bw_HH.txt 30 $run2 $osu/osu_bw_16m -d cuda H H
    step $d/ls_bw_HH.txt 30 $run2 python3 -m linkscope bench mpi --test bw --buffers HH --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_HH.json"
    # issue 27 (branch mpi): allreduce HH 8 B, and bench mpi at mpi4py's old thread level (MPI_THREAD_MULTIPLE) for the A/B
    step $d/osu_ar_HH.txt 30 $run2 $osu/osu_allreduce -m 8
    step $d/ls_ar_HH.txt 30 $run2 python3 -m linkscope bench mpi --test allreduce --buffers HH --sizes 8 --json "$r/$d/ls_ar_HH.json"
    step $d/ls_lat_HH_multiple.txt 30 env MPI4PY_RC_THREAD_LEVEL=multiple $run2 python3 -m linkscope bench mpi --test latency --buffers HH --sizes 8,1KiB --json "$r/$d/ls_lat_HH_multiple.json"
    step $d/ls_ar_HH_multiple.txt 30 env MPI4PY_RC_THREAD_LEVEL=multiple $run2 python3 -m linkscope bench mpi --test allreduce --buffers HH --sizes 8 --json "$r/$d/ls_ar_HH_multiple.json"
  done
  step linkscope/p2p-mpi.txt 60 $run2 python3 -m linkscope bench p2p --mpi --sizes 1MiB,64MiB --json "$r/linkscope/p2p-mpi.json"
  step linkscope/audit.txt 60 python3 -m linkscope audit -- mpirun -n 2 --bind-to none
fi
# last: the GPU tests of the merged code
step linkscope/gpu-tests.txt 120 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/comm/test_gpu_comm.py tests/measure
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/fin.log"
cp "$r/fin.log" "$out/final.log"
tar -C /tmp -czf "$out/final.tar.gz" fin
