#!/usr/bin/env bash
# 4 x H200, 2026-11-28 (second evening session), call 3, with bench stencil in CUDA graphs (--cuda-graph, default 20):
# the GPU tests; the stencil on four GPUs in graphs, default vs auto (the same mapping here) and vs a permuted mapping
# (permuted_mapping.json), and with --emulate-slow-pairs 0-1 (eager, 6 communicator sets); the twin's predictions were
# made before, on the CPU machine (pred/). Then more rounds of the small sizes in graphs beside nccl-tests -G 20
# (16 B-1 MiB): one process, five ops, four rounds; one process per GPU, three ops, three rounds (order swapped).
#   BUDGET_S=540 bash docs/runs/h200x4-2026-11-28d/visit3.sh
set -uo pipefail
source bench/device_steps.sh
device_begin d3 540 linkscope graph mpi_graph
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
build_nccl_tests
D=docs/runs/h200x4-2026-11-28d
step gpu-tests.txt 150 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
wait_nccl_tests
step linkscope/stencil_graph.txt 90 python3 -m linkscope bench stencil --dims 2 --mapping auto --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_graph.json"
step linkscope/stencil_perm_graph.txt 90 python3 -m linkscope bench stencil --dims 2 --mapping $D/permuted_mapping.json --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_perm_graph.json"
step linkscope/stencil_slow6.txt 120 python3 -m linkscope bench stencil --dims 2 --mapping auto --emulate-slow-pairs 0-1 --comm-sets 6 --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_slow6.json"
S=16,64,256,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB
bin_of() { case $1 in allreduce) echo all_reduce;; allgather) echo all_gather;; reduce_scatter) echo reduce_scatter;; *) echo $1;; esac; }
for round in 3 4 5 6; do
  for op in reduce_scatter alltoall allgather allreduce sendrecv; do
    run_nt() { step graph/nt_${op}_r$round.txt 30 $B/$(bin_of $op)_perf -b 16 -e 1M -f 4 -g 4 -G 20; }
    run_ls() { step graph/ls_${op}_r$round.txt 40 python3 -m linkscope bench nccl --op $op --gpus 0,1,2,3 --sizes $S --iters 20 --runs 1 --cuda-graph 20 --json "$r/graph/ls_${op}_r$round.json"; }
    if [ $((round % 2)) = 1 ]; then run_nt; run_ls; else run_ls; run_nt; fi
  done
done
for round in 2 3 4; do
  for op in allgather reduce_scatter alltoall; do
    run_nt() { step mpi_graph/nt_${op}_r$round.txt 30 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/$(bin_of $op)_perf -b 16 -e 1M -f 4 -g 1 -G 20; }
    run_ls() { step mpi_graph/ls_${op}_r$round.txt 40 mpirun -n 4 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 1 --cuda-graph 20 --json "$r/mpi_graph/ls_${op}_r$round.json"; }
    if [ $((round % 2)) = 1 ]; then run_nt; run_ls; else run_ls; run_nt; fi
  done
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/d3.log"
device_end d3
