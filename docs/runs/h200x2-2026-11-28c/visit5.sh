#!/usr/bin/env bash
# 2 x H200, 2026-11-28 (evening), call 5: the GPU tests on the ncclAlltoAll change, and one hypothesis for the
# per-GPU eager gap left by call 4 (linkscope 12-13 us per small alltoall/allgather where nccl-tests takes 10-11):
# does a linkscope rank hold a CUDA context on the other rank's GPU too? nvidia-smi lists the compute processes of
# each GPU during a run; the same runs with CUDA_VISIBLE_DEVICES set per rank (each process sees one GPU), paired.
#   BUDGET_S=300 bash docs/runs/h200x2-2026-11-28c/visit5.sh
set -uo pipefail
source bench/device_steps.sh
device_begin c5 300 mpi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
step gpu-tests.txt 150 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
cuda=${CUDA_HOME:-/usr/local/cuda}
nccl=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
[ -e "$nccl/lib/libnccl.so" ] || ln -sf libnccl.so.2 "$nccl/lib/libnccl.so"
export LD_LIBRARY_PATH=$nccl/lib:${LD_LIBRARY_PATH:-}
mkdir -p /tmp/nt-mpi && cp -r .anchors/src/nccl-tests/. /tmp/nt-mpi/
step build-nccl-tests-mpi.log 150 make -C /tmp/nt-mpi -j16 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi CUDA_HOME=$cuda NCCL_HOME=$nccl NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90
M=/tmp/nt-mpi/build
S=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB
iso=$r/iso; printf '%s\n' '#!/usr/bin/env bash' 'export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK; exec "$@"' > "$iso"; chmod +x "$iso"
( sleep 6; nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv > "$r/mpi/apps_during_ls.txt" 2>&1 ) &
step mpi/ls_allgather_probe.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op allgather --sizes 8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB,32MiB,128MiB,512MiB --iters 20 --runs 3 --cuda-graph 0
wait
for round in 1 2 3; do
  for op in allgather alltoall; do
    bin=$(case $op in allgather) echo all_gather;; *) echo $op;; esac)
    step mpi/nt_${op}_r$round.txt 40 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/${bin}_perf -b 8 -e 8M -f 4 -g 1
    step mpi/ls_${op}_r$round.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 3 --cuda-graph 0 --json "$r/mpi/ls_${op}_r$round.json"
    step mpi/lsiso_${op}_r$round.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $iso python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 3 --cuda-graph 0 --json "$r/mpi/lsiso_${op}_r$round.json"
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/c5.log"
device_end c5
