#!/usr/bin/env bash
# A CUDA-aware MPI and OSU 5.3 with CUDA buffers, built on the GPU machine from carried sources.
#
#   bash bench/build_cuda_mpi.sh            -> $PREFIX/bin/{mpirun,mpicc,ompi_info}, $PREFIX/osu/osu_*,
#                                              $PREFIX/env.sh (source it: PATH, LD_LIBRARY_PATH, OPAL_PREFIX)
#
# The MPI: Open MPI 4.1.x (Debian's orig tarball, which ships a generated configure: no autotools)
# configured --with-cuda and without UCX: pml ob1 + btl smcuda moves device buffers between ranks of
# one node by CUDA IPC (cuIpcGetMemHandle/cuIpcOpenMemHandle, also between two ranks on the same GPU,
# btl_smcuda_use_cuda_ipc_same_gpu=1 by default) and stages through host memory otherwise; coll/cuda
# reduces device buffers through host memory. libcuda is dlopen'ed at run time, so only cuda.h is needed
# to build. hwloc, libevent and PMIx are the bundled copies: the installed prefix runs on any glibc
# >= the build machine's, wherever it is unpacked (OPAL_PREFIX).
#
# Environment (all optional):
#   CUDA_MPI_PREFIX    install prefix (default /opt/cuda-mpi)
#   CUDA_HOME          CUDA toolkit (default /usr/local/cuda; needs include/cuda.h, lib64/libcudart)
#   OMPI_TARBALL       Open MPI source tarball (default: the first .h15/openmpi_4.1*.tar.* or openmpi-4.1*.tar.*)
#   CUDA_MPI_CACHE     a tarball of an installed prefix (made by this script): unpacked instead of building
#   CUDA_MPI_CACHE_OUT write the installed prefix here as a tarball after building (xz, ~10 MiB)
#   OSU_SRC            OSU 5.3 source (default .anchors/src/osu-micro-benchmarks)
#   JOBS               make -j (default nproc)
#   NO_BUILD=1         never build Open MPI: use $PREFIX or CUDA_MPI_CACHE, else fail (for short device calls)
#   CACHE_ALWAYS=1     write CUDA_MPI_CACHE_OUT even when nothing was built now
#
# Time (nvidia-h200, 16 cores): see docs/benchmarks.md "GPU-aware MPI"; configure is serial (~1 min),
# make -j16 about 2 to 3 minutes, OSU about 20 s.
#
# OSU 5.3 and CUDA 13: cuda.h 13 maps cuCtxCreate to cuCtxCreate_v4(ctx, params, flags, dev), so the
# build copy's two calls get a NULL params argument (same context as before). OSU 5.3's pt2pt tests
# sweep 1 B .. MAX_MSG_SIZE (4 MiB, compiled in, no -m option): the build copy makes that macro
# overridable and builds osu_bw/osu_bibw twice more, up to 16 MiB (osu_bw_16m) and 256 MiB (osu_bw_256m).
# (OSU 5.3 calls cuCtxCreate in osu_pt2pt.c, osu_coll.c and osu_1sc.c: every call is patched.)
# Nothing else in OSU is changed.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
prefix=${CUDA_MPI_PREFIX:-/opt/cuda-mpi}
cuda=${CUDA_HOME:-/usr/local/cuda}
jobs=${JOBS:-$(nproc)}
osu_src=${OSU_SRC:-$here/.anchors/src/osu-micro-benchmarks}
work=${CUDA_MPI_WORK:-/tmp/cuda-mpi-build}
log() { echo "build_cuda_mpi: $*" >&2; }
now() { date +%s; }
mkdir -p "$work"

write_env() {
  cat > "$prefix/env.sh" <<EOF
export OPAL_PREFIX=$prefix
export PATH=$prefix/bin:\$PATH
export LD_LIBRARY_PATH=$prefix/lib:\${LD_LIBRARY_PATH:-}
EOF
}

cuda_aware() {  # the built library says it was built with CUDA
  OPAL_PREFIX=$prefix LD_LIBRARY_PATH=$prefix/lib "$prefix/bin/ompi_info" --parsable --all 2>/dev/null \
    | grep -q "mpi_built_with_cuda_support:value:true"
}

build_ompi() {
  if [ -x "$prefix/bin/mpicc" ] && cuda_aware; then log "Open MPI: already at $prefix"; return 0; fi
  if [ -n "${CUDA_MPI_CACHE:-}" ] && [ -f "$CUDA_MPI_CACHE" ]; then
    mkdir -p "$prefix" && tar -xJf "$CUDA_MPI_CACHE" -C "$prefix" && write_env
    if cuda_aware; then log "Open MPI: unpacked $CUDA_MPI_CACHE into $prefix"; return 0; fi
    log "Open MPI: $CUDA_MPI_CACHE did not give a CUDA-aware MPI; building"
  fi
  [ "${NO_BUILD:-0}" = 1 ] && { log "NO_BUILD=1: not building Open MPI"; return 1; }
  local tarball=${OMPI_TARBALL:-}
  if [ -z "$tarball" ]; then
    tarball=$(ls "$here"/.h15/openmpi_4.1*.orig.tar.* "$here"/.h15/openmpi-4.1*.tar.* 2>/dev/null | head -1)
  fi
  [ -f "$tarball" ] || { log "no Open MPI source tarball (set OMPI_TARBALL)"; return 1; }
  [ -f "$cuda/include/cuda.h" ] || { log "no $cuda/include/cuda.h (set CUDA_HOME)"; return 1; }
  local t0; t0=$(now)
  rm -rf "$work/ompi-src" && mkdir -p "$work/ompi-src" && tar -xf "$tarball" -C "$work/ompi-src" --strip-components=1 || return 1
  mkdir -p "$work/ompi-build" && cd "$work/ompi-build" || return 1
  log "Open MPI: configure ($tarball)"
  "$work/ompi-src/configure" --prefix="$prefix" --with-cuda="$cuda" \
      --without-ucx --without-verbs --without-ofi --without-psm --without-psm2 \
      --disable-mpi-fortran --disable-oshmem --disable-io-romio --disable-mpi-java \
      --with-hwloc=internal --with-libevent=internal --with-pmix=internal \
      --disable-dependency-tracking --enable-mca-no-build=btl-openib,btl-uct,btl-usnic,pml-ucx,osc-ucx,coll-hcoll,coll-fca,io-ompio,fs,fbtl,sharedfp,topo-treematch,vprotocol \
      > "$work/ompi-configure.log" 2>&1 || { tail -30 "$work/ompi-configure.log" >&2; return 1; }
  local t1; t1=$(now)
  log "Open MPI: make -j$jobs (configure took $((t1 - t0)) s)"
  make -j"$jobs" > "$work/ompi-make.log" 2>&1 && make install > "$work/ompi-install.log" 2>&1 \
    || { grep -n "error" "$work/ompi-make.log" | tail -20 >&2; tail -20 "$work/ompi-make.log" >&2; return 1; }
  write_env
  local t2; t2=$(now)
  log "Open MPI: built in $((t2 - t0)) s (configure $((t1 - t0)) s, make+install $((t2 - t1)) s)"
  echo "ompi_build_s=$((t2 - t0)) ompi_configure_s=$((t1 - t0))" > "$prefix/build-times.txt"
  BUILT_NOW=1
  cuda_aware || { log "Open MPI: built, but ompi_info does not say CUDA"; return 1; }
}

build_osu() {
  [ -d "$osu_src" ] || { log "no OSU source at $osu_src"; return 1; }
  local t0; t0=$(now)
  local b=$work/osu
  rm -rf "$b" && cp -r "$osu_src" "$b" && cd "$b" || return 1
  # the snapshot ships a generated configure: keep make from regenerating it (no automake needed)
  touch aclocal.m4; sleep 1; touch configure; find . -name Makefile.in -exec touch {} +; touch config.h.in 2>/dev/null
  if grep -q "cuCtxCreate_v4" "$cuda/include/cuda.h"; then  # CUDA 13: cuCtxCreate(ctx, params, flags, dev)
    grep -rl 'cuCtxCreate(&cuContext, 0, cuDevice)' mpi | xargs -r sed -i 's/cuCtxCreate(&cuContext, 0, cuDevice)/cuCtxCreate(\&cuContext, NULL, 0, cuDevice)/'
  fi
  sed -i 's/^#define MAX_MSG_SIZE (1<<22)$/#ifndef MAX_MSG_SIZE\n#define MAX_MSG_SIZE (1<<22)\n#endif/' mpi/pt2pt/osu_pt2pt.h
  local stubs=""; [ -d "$cuda/lib64/stubs" ] && stubs="-L$cuda/lib64/stubs"
  local am="ACLOCAL=: AUTOCONF=: AUTOMAKE=: AUTOHEADER=:"
  ./configure CC="$prefix/bin/mpicc" CXX="$prefix/bin/mpicxx" --enable-cuda=basic --with-cuda="$cuda" \
      LDFLAGS="$stubs" --prefix="$b/install" > "$work/osu.log" 2>&1 \
    && make -j"$jobs" $am >> "$work/osu.log" 2>&1 || { tail -30 "$work/osu.log" >&2; return 1; }
  mkdir -p "$prefix/osu"
  cp mpi/pt2pt/osu_latency mpi/pt2pt/osu_bw mpi/pt2pt/osu_bibw mpi/collective/osu_allreduce "$prefix/osu/" || return 1
  local max name
  for max in 16777216:16m 268435456:256m; do
    name=${max#*:}
    make -C mpi/pt2pt clean $am >> "$work/osu.log" 2>&1
    make -C mpi/pt2pt -j"$jobs" osu_bw osu_bibw CFLAGS="-O2 -DMAX_MSG_SIZE=${max%%:*}" $am >> "$work/osu.log" 2>&1 \
      || { tail -20 "$work/osu.log" >&2; return 1; }
    cp mpi/pt2pt/osu_bw "$prefix/osu/osu_bw_$name" && cp mpi/pt2pt/osu_bibw "$prefix/osu/osu_bibw_$name"
  done
  log "OSU 5.3 (CUDA) built in $(( $(now) - t0 )) s: $(ls "$prefix/osu" | tr '\n' ' ')"
}

if [ "${NO_BUILD:-0}" = 1 ] && ! { [ -x "$prefix/bin/mpicc" ] && cuda_aware; } && [ ! -f "${CUDA_MPI_CACHE:-}" ]; then
  log "NO_BUILD=1 and neither an MPI at $prefix nor a CUDA_MPI_CACHE tarball"; exit 1
fi
build_ompi || { log "Open MPI FAILED"; exit 1; }
osu_rc=0
if [ "${BUILD_OSU:-1}" = 1 ]; then build_osu || { log "OSU FAILED (see $work/osu.log)"; osu_rc=2; }; fi
if [ -n "${CUDA_MPI_CACHE_OUT:-}" ] && { [ "${BUILT_NOW:-0}" = 1 ] || [ "${CACHE_ALWAYS:-0}" = 1 ]; }; then  # the prefix, OSU binaries included
  rm -rf "$prefix/share/doc" "$prefix/share/man"
  tar -cf - -C "$prefix" . | xz -T0 -6 > "$CUDA_MPI_CACHE_OUT" && log "cached $prefix as $CUDA_MPI_CACHE_OUT ($(du -h "$CUDA_MPI_CACHE_OUT" | cut -f1))"
fi
[ "$osu_rc" = 0 ] && log "done: source $prefix/env.sh"
exit "$osu_rc"
