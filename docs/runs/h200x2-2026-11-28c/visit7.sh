#!/usr/bin/env bash
# 2 x H200, 2026-11-28 (evening), call 7, on the merged main of the session: the GPU tests; bench stencil with
# --emulate-slow-pairs 0-1 measured (now 3 interleaved communicator sets per mapping) beside the twin's prediction;
# and one more hypothesis for the per-GPU eager gap: mpi4py starts MPI with MPI_THREAD_MULTIPLE by default, nccl-tests
# with MPI_Init (MPI_THREAD_SINGLE): linkscope per GPU with MPI4PY_RC_THREAD_LEVEL=single beside the default, paired
# with nccl-tests, allgather 8 B-8 MiB, three rounds.
#   BUDGET_S=260 bash docs/runs/h200x2-2026-11-28c/visit7.sh
set -uo pipefail
source bench/device_steps.sh
device_begin c7 260 linkscope mpi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
step gpu-tests.txt 150 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
step linkscope/stencil_slow.txt 90 python3 -m linkscope bench stencil --dims 2 --mapping auto --emulate-slow-pairs 0-1 --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_slow.json"
step linkscope/stencil_slow_twin.txt 60 python3 -m linkscope bench stencil --backend sim --dims 2 --mapping auto --emulate-slow-pairs 0-1 --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_slow_twin.json"
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
[ -e "$nccl/lib/libnccl.so" ] || ln -sf libnccl.so.2 "$nccl/lib/libnccl.so"
export LD_LIBRARY_PATH=$nccl/lib:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/nt-mpi && cp -r .anchors/src/nccl-tests/. /tmp/nt-mpi/
step build-nccl-tests-mpi.log 150 make -C /tmp/nt-mpi -j16 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi CUDA_HOME=$cuda NCCL_HOME=$nccl NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90
M=/tmp/nt-mpi/build
S=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB
for round in 1 2 3; do
  step mpi/nt_allgather_r$round.txt 40 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/all_gather_perf -b 8 -e 8M -f 4 -g 1
  step mpi/ls_allgather_r$round.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op allgather --sizes $S --iters 20 --runs 3 --cuda-graph 0 --json "$r/mpi/ls_allgather_r$round.json"
  step mpi/lssingle_allgather_r$round.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x MPI4PY_RC_THREAD_LEVEL=single python3 -m linkscope bench nccl --op allgather --sizes $S --iters 20 --runs 3 --cuda-graph 0 --json "$r/mpi/lssingle_allgather_r$round.json"
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/c7.log"
device_end c7
