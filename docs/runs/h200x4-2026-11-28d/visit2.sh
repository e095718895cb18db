#!/usr/bin/env bash
# 4 x H200, 2026-11-28 (second evening session), call 2 (right after call 1, on the same machine when it is still held):
# bench stencil on four real GPUs, default vs auto, and with --emulate-slow-pairs 0-1 (the twin's predictions were
# made before, on the CPU machine: pred/); the copy-engine queues on four GPUs (ce_queue.csv: copies from one GPU to
# different peers, into one GPU, the all-to-all as three permutation rounds and at once; ce and sm-push); bench nccl
# eager (no graphs, nccl-tests without -G) 16 B-1 GiB beside nccl-tests, one process and one process per GPU.
#   BUDGET_S=540 bash docs/runs/h200x4-2026-11-28d/visit2.sh
set -uo pipefail
source bench/device_steps.sh
device_begin d2 540 linkscope eager mpi_eager
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
if [ -x /tmp/bnt/build/all_reduce_perf ] && [ -x /tmp/nt-mpi/build/all_reduce_perf ]; then
  nccl_tests_env; B=/tmp/bnt/build M=/tmp/nt-mpi/build; echo "nccl-tests kept from call 1"
else
  build_nccl_tests
fi
D=docs/runs/h200x4-2026-11-28d
step linkscope/stencil.txt 90 python3 -m linkscope bench stencil --dims 2 --mapping auto --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil.json"
step linkscope/stencil_slow.txt 90 python3 -m linkscope bench stencil --dims 2 --mapping auto --emulate-slow-pairs 0-1 --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_slow.json"
step linkscope/ce_queue.txt 120 python3 -m linkscope bench --method ce,sm-push --pattern $D/ce_queue.csv --sizes 64MiB,512MiB --reps 20 --json "$r/linkscope/ce_queue.json"
step linkscope/a2a_ce.txt 60 python3 -m linkscope bench --method ce --pattern all-to-all --sizes 64MiB,512MiB --reps 50 --json "$r/linkscope/a2a_ce.json"
[ -n "${nt_pid:-}" ] && wait_nccl_tests
bin_of() { case $1 in allreduce) echo all_reduce;; allgather) echo all_gather;; reduce_scatter) echo reduce_scatter;; *) echo $1;; esac; }
S=16,64,256,1KiB,4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB,64MiB,256MiB,1GiB
for op in allreduce allgather reduce_scatter alltoall sendrecv; do
  step eager/nt_${op}_r1.txt 40 $B/$(bin_of $op)_perf -b 16 -e 1G -f 4 -g 4
  step eager/ls_${op}_r1.txt 60 python3 -m linkscope bench nccl --op $op --gpus 0,1,2,3 --sizes $S --iters 20 --runs 1 --cuda-graph 0 --json "$r/eager/ls_${op}_r1.json"
done
for op in allreduce allgather reduce_scatter alltoall sendrecv; do
  step mpi_eager/ls_${op}_r1.txt 60 mpirun -n 4 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $S --iters 20 --runs 1 --cuda-graph 0 --json "$r/mpi_eager/ls_${op}_r1.json"
  step mpi_eager/nt_${op}_r1.txt 40 mpirun -n 4 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/$(bin_of $op)_perf -b 16 -e 1G -f 4 -g 1
done
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/d2.log"
device_end d2
