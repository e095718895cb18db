#!/usr/bin/env bash
# 2 x H200, 2026-11-28, call 4 (a new lease): medians over interleaved rounds, linkscope and nccl-tests in turn, of
# the launch modes where single runs left ratios below 0.97: eager (one process), and one process per GPU (eager and -G 20).
#   BUDGET_S=480 bash docs/runs/h200x2-2026-11-28/visit4.sh
set -uo pipefail
source bench/device_steps.sh
device_begin x2v4 480 nccl
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
SIZES=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB,32MiB,128MiB,512MiB
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c)"
[ -x /tmp/anchors/bin/all_reduce_perf ] || step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
nccl=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
M=/tmp/nt-mpi
if [ ! -x $M/build/alltoall_perf ]; then
  rm -rf $M; cp -r .anchors/src/nccl-tests $M
  step build-nccl-tests-mpi.log 150 make -C $M -j32 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi CUDA_HOME=/usr/local/cuda NCCL_HOME=$nccl NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90
fi
for round in 1 2 3; do
  for op in allgather alltoall sendrecv allreduce reduce_scatter; do
    bin=$(case $op in allreduce) echo all_reduce;; allgather) echo all_gather;; *) echo $op;; esac)
    step nccl/${bin}_g0_r$round.txt 40 $B/${bin}_perf -b 8 -e 512M -f 4 -g 2
    step nccl/ls_${op}_g0_r$round.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $SIZES --runs 3 --cuda-graph 0 --json "$r/nccl/ls_${op}_g0_r$round.json"
  done
done
for round in 1 2; do
  for op in alltoall allgather; do
    bin=$(case $op in allgather) echo all_gather;; *) echo $op;; esac)
    for g in 0 20; do
      gflag=""; [ $g -gt 0 ] && gflag="-G $g"
      step nccl/mpi_${bin}_g${g}_r$round.txt 50 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/build/${bin}_perf -b 8 -e 512M -f 4 -g 1 $gflag
      step nccl/mpi_ls_${op}_g${g}_r$round.txt 70 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $SIZES --runs 3 --cuda-graph $g --json "$r/nccl/mpi_ls_${op}_g${g}_r$round.json"
    done
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/x2v4.log"
device_end x2v4
