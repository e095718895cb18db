#!/usr/bin/env bash
# 2 x H200, 2026-11-28 (evening), call 4. Two things call 3 left:
#  a. per GPU, linkscope's eager alltoall took 12-14 us where nccl-tests took 8-11: nccl-tests 2.19.6 calls NCCL 2.28's
#     ncclAlltoAll (alltoall.cu:317-321), linkscope grouped sends and receives. linkscope now calls ncclAlltoAll too:
#     paired rounds, per GPU and one process.
#  b. sendrecv (one process) and allreduce: does nccl-tests' per-iteration buffer shift (common.cu startColl) change
#     the eager time? drv.c with and without it, alternating, many short processes.
#   BUDGET_S=330 bash docs/runs/h200x2-2026-11-28c/visit4.sh
set -uo pipefail
source bench/device_steps.sh
device_begin c4 330 nt ls mpi drv
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
here=docs/runs/h200x2-2026-11-28c
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
step build-drv.log 60 $cuda/bin/nvcc -O2 -I$nccl/include -L$nccl/lib $here/drv.c -lnccl -o /tmp/drv
B=/tmp/bnt/build M=/tmp/nt-mpi/build
S=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB
for round in 1 2 3 4; do
  run_nt() { step mpi/nt_alltoall_r$round.txt 40 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/alltoall_perf -b 8 -e 8M -f 4 -g 1; }
  run_ls() { step mpi/ls_alltoall_r$round.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op alltoall --sizes $S --iters 20 --runs 3 --cuda-graph 0 --json "$r/mpi/ls_alltoall_r$round.json"; }
  if [ $((round % 2)) = 1 ]; then run_nt; run_ls; else run_ls; run_nt; fi
  run_nt() { step nt/alltoall_r$round.txt 30 $B/alltoall_perf -b 8 -e 8M -f 4 -g 2; }
  run_ls() { step ls/alltoall_r$round.txt 40 python3 -m linkscope bench nccl --op alltoall --gpus 0,1 --sizes $S --iters 20 --runs 3 --cuda-graph 0 --json "$r/ls/alltoall_r$round.json"; }
  if [ $((round % 2)) = 1 ]; then run_nt; run_ls; else run_ls; run_nt; fi
done
sizes="8 32 128 512 2048 8192 32768"
for round in $(seq 1 10); do
  for op in sendrecv allreduce; do
    for sh in 0 1; do
      [ $((round % 2)) = 1 ] && s2=$sh || s2=$((1 - sh))
      step drv/${op}_ev${s2}_r$round.txt 20 /tmp/drv $op 2 20 3 ev $s2 $sizes
    done
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/c4.log"
device_end c4
