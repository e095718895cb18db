#!/usr/bin/env bash
# OSU 5.3 vs linkscope bench mpi, same CUDA-aware MPI, same GPU, same sizes (issue 15), on the GPU machine.
#
#   bash bench/device_mpi_osu.sh        (from the repo root; or from a copy: LINKSCOPE_ROOT=.h15)
#
# Builds (or unpacks, CUDA_MPI_CACHE) the CUDA-aware Open MPI and OSU with bench/build_cuda_mpi.sh,
# then runs, two ranks on GPU 0 (CUDA IPC within one device; LOCAL_RANK unset, so OSU uses device 0):
#   osu_latency / osu_bw / osu_bibw  -d cuda  D D, H H, D H    vs  linkscope bench mpi --test ... --buffers DD|HH|DH
#   osu_allreduce -d cuda (and host)                            vs  linkscope bench mpi --test allreduce
#   linkscope --stage-through-host, and both tools with btl_smcuda_use_cuda_ipc=0 (MPI stages silently)
#   GPU-awareness verdict of the Debian MPI (refusal) and of this one; tests/comm/test_gpu_mpi.py
# Prints the table; writes $OUT/mpi_osu.json, $OUT/mpi_osu.log (every command and its output) and, when
# it built the MPI, $OUT/cuda-mpi-prefix.tar.xz (carry it back as CUDA_MPI_CACHE next time).
# Bounded: steps are skipped once BUDGET_S (default 560) seconds have passed.
set -uo pipefail
t_start=$(date +%s)
budget=${BUDGET_S:-560}
root=${LINKSCOPE_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
out=${OUT:-/tmp/mpi_osu_out}; mkdir -p "$out"
w=/tmp/mpi_osu; rm -rf "$w"; mkdir -p "$w"
logf=$out/mpi_osu.log; : > "$logf"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export PYTHONPATH=$root/src PYTHONUNBUFFERED=1
export CUDA_MPI_PREFIX=${CUDA_MPI_PREFIX:-/opt/cuda-mpi}
[ -z "${OSU_SRC:-}" ] && for d in "$PWD/.anchors" "$root/.anchors" "$root/../shared/anchors"; do
  [ -d "$d/src/osu-micro-benchmarks" ] && export OSU_SRC=$d/src/osu-micro-benchmarks && break; done
[ -z "${OMPI_TARBALL:-}" ] && export OMPI_TARBALL=$(ls "$PWD"/.h15/openmpi*4.1*.tar.* "$root"/openmpi*4.1*.tar.* 2>/dev/null | head -1)
[ -z "${CUDA_MPI_CACHE:-}" ] && export CUDA_MPI_CACHE=$(ls "$PWD"/.h15/cuda-mpi-prefix.tar.xz "$root"/cuda-mpi-prefix.tar.xz 2>/dev/null | head -1)
py=${PYTHON:-python3}; export py
elapsed() { echo $(( $(date +%s) - t_start )); }
say() { echo "$*" | tee -a "$logf"; }

# step NAME LIMIT_S CMD...: run with a time limit, output to $w/NAME.txt and the log, rc to $w/NAME.rc
step() {
  local name=$1 limit=$2; shift 2
  local left=$(( budget - $(elapsed) ))
  if [ "$left" -lt 15 ]; then echo skipped > "$w/$name.rc"; say "== $name: SKIPPED (budget)"; return 0; fi
  [ "$limit" -gt "$left" ] && limit=$left
  local t0; t0=$(date +%s)
  timeout -k 5 "$limit" bash -c '"$@"' step "$@" > "$w/$name.txt" 2> "$w/$name.err"  # bash: run2/ls_mpi are functions
  local rc=$?
  echo "$rc" > "$w/$name.rc"
  { echo "== $name (rc=$rc, $(( $(date +%s) - t0 )) s): $*"; cat "$w/$name.txt"; sed -n '1,40p' "$w/$name.err"; } >> "$logf"
  echo "step $name rc=$rc $(( $(date +%s) - t0 )) s" >&2
}

say "# device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1); $(date -u +%FT%TZ)"
say "# nvcc: $(nvcc --version 2>/dev/null | tail -1); python3: $($py -c 'import mpi4py, cupy, sys; print(sys.version.split()[0], "mpi4py", mpi4py.__version__, "cupy", cupy.__version__)' 2>&1)"

# The Debian MPI first (before PATH changes): linkscope must refuse D buffers and say why.
step debian_dd 60 mpirun -n 2 "$py" -m linkscope bench mpi --test bw --buffers DD --sizes 1MiB
say "# Debian MPI verdict: $(grep -h 'linkscope: error' "$w/debian_dd.err" | head -1)"

step build 480 env CUDA_MPI_CACHE_OUT="$w/cuda-mpi-prefix.tar.xz" bash "$root/bench/build_cuda_mpi.sh"
cat "$w/build.err" >&2
if [ ! -f "$CUDA_MPI_PREFIX/env.sh" ]; then say "no CUDA-aware MPI: see the build step above"; exit 1; fi
[ -f "$w/cuda-mpi-prefix.tar.xz" ] && cp "$w/cuda-mpi-prefix.tar.xz" "$out/"
# shellcheck disable=SC1091
source "$CUDA_MPI_PREFIX/env.sh"
say "# MPI: $(ompi_info --parsable --all | grep -E 'mpi_built_with_cuda_support:value|^ompi:version:full' | tr '\n' ' ')"
step which_libmpi 60 mpirun -n 1 "$py" -c "from mpi4py import MPI; print(MPI.Get_library_version().splitlines()[0]); print([l.split()[-1] for l in open('/proc/self/maps') if 'libmpi.so' in l][0])"
osu=$CUDA_MPI_PREFIX/osu
# both tools launched alike; OSU 5.3 picks its GPU from LOCAL_RANK (GPU_PER_RANK=1: rank i on GPU i, else both on GPU 0)
if [ "${GPU_PER_RANK:-0}" = 1 ]; then
  run2() {  # leading --mca NAME VALUE triples stay mpirun's
    local pre=(); while [ "${1:-}" = "--mca" ]; do pre+=("$1" "$2" "$3"); shift 3; done
    mpirun -n 2 --bind-to none "${pre[@]}" bash -c 'export LOCAL_RANK=$OMPI_COMM_WORLD_LOCAL_RANK; exec "$@"' run2 "$@"
  }
else
  run2() { mpirun -n 2 --bind-to none "$@"; }
fi
ls_mpi() { run2 "$py" -m linkscope bench mpi "$@"; }
export -f run2 ls_mpi; export py
ipc=(--mca btl_smcuda_cuda_ipc_verbose 10)

# D D: the real GPU path first
step osu_lat_DD 60 run2 "${ipc[@]}" "$osu/osu_latency" -d cuda D D
step ls_lat_DD 60 ls_mpi --test latency --buffers DD --sizes 8,1KiB --json "$w/ls_lat_DD.json"
step osu_bw_DD 60 run2 "$osu/osu_bw_16m" -d cuda D D
step ls_bw_DD 60 ls_mpi --test bw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$w/ls_bw_DD.json"
step osu_bibw_DD 60 run2 "$osu/osu_bibw_16m" -d cuda D D
step ls_bibw_DD 60 ls_mpi --test bibw --buffers DD --sizes 64KiB,1MiB,16MiB --json "$w/ls_bibw_DD.json"
step osu_bw256_DD 60 run2 "$osu/osu_bw_256m" -d cuda D D
step ls_bw256_DD 60 ls_mpi --test bw --buffers DD --sizes 256MiB --iterations 20 --warmup 2 --json "$w/ls_bw256_DD.json"
step osu_bibw256_DD 60 run2 "$osu/osu_bibw_256m" -d cuda D D
step ls_bibw256_DD 60 ls_mpi --test bibw --buffers DD --sizes 256MiB --iterations 20 --warmup 2 --json "$w/ls_bibw256_DD.json"
step osu_ar_DD 90 run2 "$osu/osu_allreduce" -d cuda -m 67108864
step ls_ar_DD 90 ls_mpi --test allreduce --buffers DD --sizes 8,1MiB,64MiB --json "$w/ls_ar_DD.json"
# linkscope's explicit staging, and MPI's silent staging (smcuda without CUDA IPC)
step ls_bw_DD_staged 90 ls_mpi --test bw --buffers DD --stage-through-host --sizes 1MiB,16MiB,256MiB --iterations 4 --warmup 1 --json "$w/ls_bw_DD_staged.json"
step osu_bw_DD_noipc 90 run2 --mca btl_smcuda_use_cuda_ipc 0 "$osu/osu_bw_16m" -d cuda D D
step ls_bw_DD_noipc 90 env OMPI_MCA_btl_smcuda_use_cuda_ipc=0 mpirun -n 2 --bind-to none "$py" -m linkscope bench mpi --test bw --buffers DD --sizes 1MiB,16MiB --json "$w/ls_bw_DD_noipc.json"
# the GPU tests: pass with CUDA IPC, and the staging detector must fail without it
step gpu_tests 150 "$py" -m pytest -q -x -p no:cacheprovider "$root/tests/comm/test_gpu_mpi.py"
step gpu_tests_noipc 120 env OMPI_MCA_btl_smcuda_use_cuda_ipc=0 "$py" -m pytest -q -x -p no:cacheprovider "$root/tests/comm/test_gpu_mpi.py" -k staged
# H H and D H (host memory bandwidth is lower: 256 MiB with 2 iterations on both sides)
for b in HH DH; do
  o1=${b:0:1}; o2=${b:1:1}
  step osu_lat_$b 60 run2 "$osu/osu_latency" -d cuda $o1 $o2
  step ls_lat_$b 60 ls_mpi --test latency --buffers $b --sizes 8,1KiB --json "$w/ls_lat_$b.json"
  step osu_bw_$b 60 run2 "$osu/osu_bw_16m" -d cuda $o1 $o2
  step ls_bw_$b 60 ls_mpi --test bw --buffers $b --sizes 64KiB,1MiB,16MiB --json "$w/ls_bw_$b.json"
  step osu_bibw_$b 60 run2 "$osu/osu_bibw_16m" -d cuda $o1 $o2
  step ls_bibw_$b 60 ls_mpi --test bibw --buffers $b --sizes 64KiB,1MiB,16MiB --json "$w/ls_bibw_$b.json"
done
step osu_ar_HH 60 run2 "$osu/osu_allreduce" -m 67108864
step ls_ar_HH 60 ls_mpi --test allreduce --buffers HH --sizes 8,1MiB,64MiB --json "$w/ls_ar_HH.json"
for b in HH DH; do
  o1=${b:0:1}; o2=${b:1:1}
  step osu_bw256_$b 60 run2 "$osu/osu_bw_256m" -d cuda -i 2 -x 1 $o1 $o2
  step ls_bw256_$b 60 ls_mpi --test bw --buffers $b --sizes 256MiB --iterations 2 --warmup 1 --json "$w/ls_bw256_$b.json"
  step osu_bibw256_$b 60 run2 "$osu/osu_bibw_256m" -d cuda -i 2 -x 1 $o1 $o2
  step ls_bibw256_$b 60 ls_mpi --test bibw --buffers $b --sizes 256MiB --iterations 2 --warmup 1 --json "$w/ls_bibw256_$b.json"
done

"$py" "$root/bench/mpi_osu_table.py" "$w" "$out/mpi_osu.json" | tee -a "$logf"
say "# total $(elapsed) s"
