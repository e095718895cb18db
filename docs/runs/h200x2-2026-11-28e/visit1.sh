#!/usr/bin/env bash
# 2 x H200 (`nvidia-h200-x2`), 2026-11-28 (second evening session), on the session's merged main: the GPU tests;
# bench nccl beside nccl-tests 2.19.6 built in this call, 16 B-1 GiB (x4), five ops, CUDA graphs of 20 (linkscope's
# default, nccl-tests -G 20): one process driving both GPUs (three rounds, order swapped each round) and one process
# per GPU (mpirun -n 2, two rounds); bench stencil on two GPUs in graphs and eager (the exchange now bound once).
#   BUDGET_S=540 bash docs/runs/h200x2-2026-11-28e/visit1.sh        (bench/beside_peers.py reads the result)
set -uo pipefail
source bench/device_steps.sh
device_begin e1 540 linkscope graph mpi_graph
{
device_hello
nvidia-smi topo -m > "$r/topo.txt" 2>&1
build_nccl_tests
step gpu-tests.txt 150 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
wait_nccl_tests
step linkscope/stencil_graph.txt 60 python3 -m linkscope bench stencil --dims 2 --mapping auto --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_graph.json"
step linkscope/stencil_eager.txt 60 python3 -m linkscope bench stencil --dims 2 --mapping auto --cuda-graph 0 --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_eager.json"
S=16,64,256,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB,1GiB
for round in 1 2 3; do
  for op in allreduce allgather reduce_scatter alltoall sendrecv; do
    nt_run() { step graph/nt_${op}_r$round.txt 40 $B/$(nccl_tests_bin $op) -b 16 -e 1G -f 4 -g 2 -G 20; }
    ls_run() { step graph/ls_${op}_r$round.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $S --iters 20 --runs 1 --cuda-graph 20 --json "$r/graph/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
for round in 1 2; do
  for op in allreduce allgather reduce_scatter alltoall sendrecv; do
    nt_run() { step mpi_graph/nt_${op}_r$round.txt 40 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/$(nccl_tests_bin $op) -b 16 -e 1G -f 4 -g 1 -G 20; }
    ls_run() { step mpi_graph/ls_${op}_r$round.txt 60 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 1 --cuda-graph 20 --json "$r/mpi_graph/ls_${op}_r$round.json"; }
    paired $round nt_run ls_run
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/e1.log"
device_end e1
