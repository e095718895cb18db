#!/usr/bin/env bash
# Seventh visit on 2 x H100 (issue 27): bench mpi bw/bibw with the in-call warm-up by time beside OSU, and
# the sm-push shape now the NVIDIA default beside nvbandwidth. BUDGET_S=300 bash bench/device_x2_visit7.sh
set -uo pipefail
source "$(dirname "$0")/device_steps.sh"
device_begin v7 300 peers mpi/r6 linkscope
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort | uniq -c)"
if cuda_mpi; then
  d=mpi/r6
  for rep in a b; do
    step $d/osu_bw_DD_$rep.txt 40 $run2 $osu/osu_bw_16m -d cuda D D
    step $d/ls_bw_DD_$rep.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bw_DD_$rep.json"
    step $d/osu_bibw_DD_$rep.txt 40 $run2 $osu/osu_bibw_16m -d cuda D D
    step $d/ls_bibw_DD_$rep.txt 40 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$r/$d/ls_bibw_DD_$rep.json"
  done
  step $d/osu_bw256_DD.txt 60 $run2 $osu/osu_bw_256m -d cuda D D
  step $d/ls_bw256_DD.txt 40 $run2 python3 -m linkscope bench mpi --test bw --buffers DD --sizes 64MiB,256MiB --json "$r/$d/ls_bw256_DD.json"
  step $d/osu_bibw256_DD.txt 60 $run2 $osu/osu_bibw_256m -d cuda D D
  step $d/ls_bibw256_DD.txt 40 $run2 python3 -m linkscope bench mpi --test bibw --buffers DD --sizes 64MiB,256MiB --json "$r/$d/ls_bibw256_DD.json"
fi
step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
for round in 1 2; do
  for mib in 1 16 64; do
    step peers/nvbandwidth-b$mib-r$round.txt 40 $B/nvbandwidth -b $mib -t device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce device_to_device_memcpy_read_sm device_to_device_memcpy_write_sm
  done
  step linkscope/bench-sizes-r$round.txt 90 python3 -m linkscope bench --method ce,sm-push,sm-pull --gpus 0,1 --sizes 1MiB,16MiB,64MiB --json "$r/linkscope/bench-sizes-r$round.json"
done
step linkscope/gpu-tests.txt 150 python3 -m pytest -q -x -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests/engines tests/measure
echo "== total $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/v7.log"
device_end v7
