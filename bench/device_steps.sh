# Sourced by the device visits (bench/device_x2_*.sh): the one home of their step runner and of the CUDA-aware
# MPI set-up. Run from the repository root on the device machine.
#   device_begin NAME BUDGET_DEFAULT SUBDIR...   t0, budget ($BUDGET_S or the default), out ($OUT or /tmp/x2NAME),
#                                                r (/tmp/NAME, emptied, with the SUBDIRs), the environment of every visit
#   step FILE LIMIT CMD...                       CMD's stdout+stderr to $r/FILE, under timeout(1) within the budget;
#                                                one line per step in $r/steps.txt (FILE rc= seconds :: CMD)
#   cuda_mpi                                     the CUDA-aware Open MPI + OSU 5.3 unpacked from .cache27 (never built
#                                                here): sets osu (the OSU binaries) and run2 (mpirun -n 2 with
#                                                LOCAL_RANK per rank, as OSU picks its GPU); false without it
#   device_hello                                 the carried wheels (.whl) onto PYTHONPATH, and one line: date, GPUs,
#                                                commit, CPU count
#   nccl_tests_env                               LD_LIBRARY_PATH and NCCL_HOME for the image's NCCL wheel (nccl-tests
#                                                link against it, as linkscope's CuPy does)
#   build_nccl_tests                             nccl-tests from .anchors in the background, plain (-g N: $B) and MPI
#                                                (mpirun -n N -g 1: $M); wait_nccl_tests waits for both
#   nccl_tests_bin OP                            nccl-tests' program of a bench nccl op (allreduce -> all_reduce_perf)
#   paired ROUND FIRST SECOND                    two commands (functions) back to back, their order swapped every
#                                                other round (the paired design of docs/benchmarks.md)
#   device_end NAME                              $r/NAME.log and $out/NAME.tar.gz (the whole $r)
device_begin() {
  name=$1; budget=${BUDGET_S:-$2}; shift 2
  t0=$(date +%s); out=${OUT:-/tmp/x2$name}; mkdir -p "$out"
  r=/tmp/$name; rm -rf "$r"; mkdir -p "$r"
  for sub in "$@"; do mkdir -p "$r/$sub"; done
  export PYTHONPATH=$PWD/src NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
}
device_hello() {
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PWD/src:/tmp/site
  echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c) $(git log -1 --format=%h 2>/dev/null) nproc=$(nproc)"
}
left() { echo $(( budget - ($(date +%s) - t0) )); }
step() {
  local f=$1 lim=$2; shift 2
  local l; l=$(left); if [ "$l" -lt 8 ]; then echo "SKIP $f (budget)" | tee -a "$r/steps.txt"; return 0; fi
  [ "$lim" -gt "$l" ] && lim=$l
  local s; s=$(date +%s)
  timeout -k 5 "$lim" "$@" > "$r/$f" 2>&1; local rc=$?
  echo "$f rc=$rc $(( $(date +%s) - s ))s :: $*" | tee -a "$r/steps.txt"
}
cuda_mpi() {
  step mpi/build.txt 120 env CUDA_MPI_CACHE="$PWD/.cache27/cuda-mpi-prefix.tar.xz" BUILD_OSU=0 NO_BUILD=1 bash bench/build_cuda_mpi.sh
  [ -f /opt/cuda-mpi/env.sh ] || return 1
  source /opt/cuda-mpi/env.sh; osu=/opt/cuda-mpi/osu
  # run2 is a file, not a shell function: step runs its command under timeout(1), which cannot run functions
  run2=$r/run2; printf '%s\n' '#!/usr/bin/env bash' \
    'exec mpirun -n 2 --bind-to none bash -c '"'"'export LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK; exec "$@"'"'"' run2 "$@"' > "$run2"
  chmod +x "$run2"
}
nccl_tests_env() {
  NCCL_HOME=$(python3 -c 'import importlib.util as u; print(list(u.find_spec("nvidia.nccl").submodule_search_locations)[0])')
  [ -e "$NCCL_HOME/lib/libnccl.so" ] || ln -sf libnccl.so.2 "$NCCL_HOME/lib/libnccl.so"
  export NCCL_HOME LD_LIBRARY_PATH=$NCCL_HOME/lib:${LD_LIBRARY_PATH:-}
}
build_nccl_tests() {
  nccl_tests_env
  local cuda=${CUDA_HOME:-/usr/local/cuda} gen=-gencode=arch=compute_90,code=sm_90
  B=/tmp/bnt/build M=/tmp/nt-mpi/build
  mkdir -p /tmp/bnt /tmp/nt-mpi && cp -r .anchors/src/nccl-tests/. /tmp/bnt/ && cp -r .anchors/src/nccl-tests/. /tmp/nt-mpi/
  step build-nccl-tests.log 150 make -C /tmp/bnt -j8 CUDA_HOME=$cuda NCCL_HOME=$NCCL_HOME NVCC_GENCODE=$gen &
  nt_pid=$!
  step build-nccl-tests-mpi.log 150 make -C /tmp/nt-mpi -j8 MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi CUDA_HOME=$cuda NCCL_HOME=$NCCL_HOME NVCC_GENCODE=$gen &
  nt_mpi_pid=$!
}
nccl_tests_bin() {
  case $1 in allreduce) echo all_reduce_perf;; allgather) echo all_gather_perf;; reduce_scatter) echo reduce_scatter_perf;;
    *) echo "$1_perf";; esac
}
paired() { if [ $(( $1 % 2 )) = 1 ]; then $2; $3; else $3; $2; fi; }
wait_nccl_tests() { wait "$nt_pid" "$nt_mpi_pid"; }
device_end() {
  cp "$r/$1.log" "$out/" 2>/dev/null
  tar -C /tmp -czf "$out/$1.tar.gz" "$1"
}
