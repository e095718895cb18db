#!/usr/bin/env bash
# 2 x H200, 2026-11-28 (evening), call 3: the eager comparison made as a paired design. Calls 1-2 showed that the
# host-bound eager time of one operation (8 B-512 KiB) moves between ~12 and ~21 us from one process to the next and
# over minutes, for nccl-tests, for a plain C program with linkscope's loop (drv.c) and for linkscope alike; a
# comparison of a few runs reads that drift as a gap. Here every round runs nccl-tests and linkscope back to back,
# the order swapped every round, six rounds per op (one process, both GPUs) and four per op per GPU (mpirun -n 2).
#   BUDGET_S=480 bash docs/runs/h200x2-2026-11-28c/visit3.sh
set -uo pipefail
source bench/device_steps.sh
device_begin c3 480 nt ls mpi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
[ -e "$nccl/lib/libnccl.so" ] || ln -sf libnccl.so.2 "$nccl/lib/libnccl.so"
export LD_LIBRARY_PATH=$nccl/lib:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/bnt /tmp/nt-mpi && cp -r .anchors/src/nccl-tests/. /tmp/bnt/ && cp -r .anchors/src/nccl-tests/. /tmp/nt-mpi/
gen=-gencode=arch=compute_90,code=sm_90
step build-nccl-tests.log 150 make -C /tmp/bnt -j16 CUDA_HOME=$cuda NCCL_HOME=$nccl NVCC_GENCODE=$gen
step build-nccl-tests-mpi.log 150 make -C /tmp/nt-mpi -j16 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi CUDA_HOME=$cuda NCCL_HOME=$nccl NVCC_GENCODE=$gen
B=/tmp/bnt/build M=/tmp/nt-mpi/build
S=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB
bin_of() { case $1 in allreduce) echo all_reduce;; allgather) echo all_gather;; reduce_scatter) echo reduce_scatter;; *) echo $1;; esac; }
for round in 1 2 3 4 5 6; do
  for op in allreduce allgather reduce_scatter alltoall sendrecv; do
    run_nt() { step nt/${op}_r$round.txt 30 $B/$(bin_of $op)_perf -b 8 -e 8M -f 4 -g 2; }
    run_ls() { step ls/${op}_r$round.txt 40 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $S --iters 20 --runs 3 --cuda-graph 0 --json "$r/ls/${op}_r$round.json"; }
    if [ $((round % 2)) = 1 ]; then run_nt; run_ls; else run_ls; run_nt; fi
  done
done
for round in 1 2 3 4; do
  for op in allgather alltoall sendrecv; do
    run_nt() { step mpi/nt_${op}_r$round.txt 40 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/$(bin_of $op)_perf -b 8 -e 8M -f 4 -g 1; }
    run_ls() { step mpi/ls_${op}_r$round.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 3 --cuda-graph 0 --json "$r/mpi/ls_${op}_r$round.json"; }
    if [ $((round % 2)) = 1 ]; then run_nt; run_ls; else run_ls; run_nt; fi
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/c3.log"
device_end c3
