#!/usr/bin/env bash
# 2 x H200 (nvidia-h200-x2), visit 2 of 2026-11-28b (issue 36): bench nccl's eager launches from the native loop
# (comm/native/eagerloop.c) beside nccl-tests 2.19.6, built plain and MPI=1 in the same call.
#   1. the launch cost per op of each eager loop (LINKSCOPE_EAGER_LOOP=native|python), allreduce and alltoall;
#   2. one process, eager, all five ops, 8 B - 1 GiB, 3 interleaved rounds (nccl-tests -f 4 stops at 512 MiB, so its
#      1 GiB row is a step of its own);
#   3. bench stencil --emulate-slow-pairs 0-1, default vs auto (the same mapping on 2 GPUs: the gain must be ~0 now that
#      every mapping is warmed alike; call2 read +26.7% at 64 KiB), with the twin's predicted gain beside;
#   4. the GPU tests; 5. one process per GPU under mpirun, eager and -G 20, alltoall/allgather/sendrecv, 8 B - 512 MiB
#      (2 rounds; the second is what the budget leaves). medians.py prints the ratios and launch costs at the end.
# Estimated from the 2026-11-28 calls: builds 86 s, launch costs 20 s, rounds 180 s, stencil 20 s, tests 40 s,
# per GPU 48 s a round.
# Steps are in priority order: when the budget runs out, the last ones are skipped (steps.txt says which).
#   BUDGET_S=420 bash docs/runs/h200x2-2026-11-28b/visit2.sh
set -uo pipefail
source bench/device_steps.sh
device_begin pm2 420 nccl linkscope
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=$PWD/src:/tmp/site
SIZES=8,32,128,512,2KiB,8KiB,32KiB,128KiB,512KiB,2MiB,8MiB,32MiB,128MiB,512MiB,1GiB
SMALL=8,128,2KiB,32KiB,512KiB,2MiB
here=$(dirname "$0")
{
echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) cc: $(cc --version 2>&1 | head -1)"
[ -x /tmp/anchors/bin/all_reduce_perf ] || step build-anchors.log 150 env MPICC=/bin/false bash .anchors/build.sh /tmp/anchors
B=/tmp/anchors/bin; [ -f /tmp/anchors/env.sh ] && source /tmp/anchors/env.sh
nccl=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
M=/tmp/nt-mpi
if [ ! -x $M/build/alltoall_perf ]; then
  rm -rf $M; cp -r .anchors/src/nccl-tests $M
  step build-nccl-tests-mpi.log 150 make -C $M -j32 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi CUDA_HOME=/usr/local/cuda NCCL_HOME=$nccl NVCC_GENCODE=-gencode=arch=compute_90,code=sm_90
fi
# 1. launch cost per op of each loop (the first native run compiles the loop into ~/.cache/linkscope/eagerloop)
for op in allreduce alltoall; do
  for path in native python; do
    step linkscope/launch_${op}_${path}.txt 40 env LINKSCOPE_EAGER_LOOP=$path python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $SMALL --runs 3 --cuda-graph 0 --json "$r/linkscope/launch_${op}_${path}.json"
  done
done
# 2. one process, eager, interleaved rounds
for round in 1 2 3; do
  for op in allgather alltoall sendrecv allreduce reduce_scatter; do
    bin=$(case $op in allreduce) echo all_reduce;; allgather) echo all_gather;; *) echo $op;; esac)
    step nccl/${bin}_g0_r$round.txt 40 $B/${bin}_perf -b 8 -e 512M -f 4 -g 2
    step nccl/${bin}_1g_g0_r$round.txt 30 $B/${bin}_perf -b 1G -e 1G -g 2
    step nccl/ls_${op}_g0_r$round.txt 70 python3 -m linkscope bench nccl --op $op --gpus 0,1 --sizes $SIZES --runs 3 --cuda-graph 0 --json "$r/nccl/ls_${op}_g0_r$round.json"
  done
done
# 3. stencil: measured (auto = default on 2 GPUs) and the twin's prediction (the simulated backend on this machine)
step linkscope/stencil_slow.txt 60 python3 -m linkscope bench stencil --dims 2 --mapping auto --emulate-slow-pairs 0-1 --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_slow.json"
step linkscope/stencil_slow_twin.txt 60 python3 -m linkscope bench stencil --backend sim --dims 2 --mapping auto --emulate-slow-pairs 0-1 --sizes 64KiB,1MiB,16MiB --json "$r/linkscope/stencil_slow_twin.json"
python3 - "$r/linkscope/stencil_slow.json" "$r/linkscope/stencil_slow_twin.json" <<'PY' || true
import json, sys
def load(p):
    try:
        return json.load(open(p))["extra"]["stencil"]
    except (OSError, KeyError, ValueError):
        return None
measured, twin = load(sys.argv[1]), load(sys.argv[2])
if measured:
    info = measured.get("mapping_info") or {}
    cost, base = info.get("cost_us"), info.get("default_cost_us")
    if cost is not None and base:
        print(f"stencil: mapper's predicted gain of auto {(base - cost) / base:+.1%} (cost {cost:.1f} vs default {base:.1f} us)")
    sim = dict((s, g) for s, g in (twin or {}).get("gains", {}).get("auto", []))
    for size, gain in measured.get("gains", {}).get("auto", []):
        p = f"{sim[size]:+.1%}" if size in sim else "n/a"
        print(f"stencil gain of auto at {size} B: measured {gain:+.1%}, twin (simulated) {p}")
PY
# 4. GPU tests (the native loop's own: tests/comm/test_gpu_comm.py::test_real_nccl_ops_launched_by_the_native_loop_are_correct)
step linkscope/gpu-tests.txt 150 python3 -m pytest -q -p no:cacheprovider -m "gpu or multi_gpu or nccl" tests
# 5. one process per GPU under mpirun, eager and -G 20
for round in 1 2; do
  for op in alltoall allgather sendrecv; do
    bin=$(case $op in allgather) echo all_gather;; *) echo $op;; esac)
    for g in 0 20; do
      gflag=""; [ $g -gt 0 ] && gflag="-G $g"
      step nccl/mpi_${bin}_g${g}_r$round.txt 50 mpirun -n 2 --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE $M/build/${bin}_perf -b 8 -e 512M -f 4 -g 1 $gflag
      step nccl/mpi_ls_${op}_g${g}_r$round.txt 70 mpirun -n 2 --bind-to none -x PYTHONPATH -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE python3 -m linkscope bench nccl --op $op --sizes $SIZES --runs 3 --cuda-graph $g --json "$r/nccl/mpi_ls_${op}_g${g}_r$round.json"
    done
  done
done
python3 "$here/medians.py" "$r"
echo "== done $(( $(date +%s) - t0 )) s"
} 2>&1 | tee "$r/pm2.log"
device_end pm2
