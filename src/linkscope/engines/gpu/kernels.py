"""Kernels of the GPU engine (CUDA C, also valid HIP C++), compiled by the runtime's compiler
(NVRTC on CUDA, hipRTC on ROCm, through CuPy ``RawModule``) and loaded on every GPU before anything
is timed. ``source_for(dialect)`` puts a small vendor prelude (the platform row's ``kernels``) (the nanosecond timer and the
streaming-load/store hints) before the shared source; the Hopper bulk-copy kernels are CUDA only.

Why preload: loading a module makes the driver synchronise the device, so loading it in the middle
of a timed region (or behind a start gate that is still closed) would stall or deadlock; nvbandwidth
preloads its kernels for the same reason.

Kernels (all ``extern "C"``, names below):

* ``gate_spin``: one thread spins on a flag in host-mapped pinned memory until the host releases
  it, with a ``%globaltimer`` timeout so a bug cannot hang the GPU; it records a timeout in a
  second flag.
* ``copy_u4_<U>``: device copy with 16-byte (``uint4``) accesses, ``U`` independent loads in flight
  per thread before the stores, grid-stride; the bytes beyond the last whole ``uint4`` are copied
  byte by byte. ``loops`` copies of the buffer in one launch (the repetitions of one timed region,
  as nvbandwidth's copy kernels loop ``loopCount`` times inside the kernel): back-to-back launches
  would pay each kernel's ramp-up and drain, a third of the time of a 1 MiB copy on H100.
  Used for ``sm-push`` (run on the source GPU, storing into peer memory) and ``sm-pull`` (run on
  the destination GPU, loading from peer memory).
* ``fill_pattern`` / ``check_pattern``: a position-dependent pattern (a 32-bit hash of the word
  index and a seed), written to a source and counted for mismatches in a destination;
  ``poison`` overwrites with 0xA5 bytes, which the pattern check rejects.
* ``copy_bulk_<piece>_<stages>``: the Hopper bulk-copy (TMA) variant of the SM copy.
* ``pointer_chase``: one thread follows a linked list of node addresses (device remote-read
  latency).
* ``flag_pingpong``: two blocks on two GPUs bounce a counter through each other's memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from ...platforms import KernelDialect, by_key

#: Unroll factors compiled for the SM copy (independent uint4 loads in flight per thread).
COPY_UNROLLS = (1, 2, 4, 8, 12, 16)
#: Unrolls whose kernels are compiled for at most this many threads a block (__launch_bounds__: 12 or
#: 16 uint4 values a thread need the registers 1024-thread blocks cannot give without spilling).
COPY_MAX_THREADS = {12: 512, 16: 512}
#: (piece bytes, shared-memory stages) compiled for the bulk-copy (TMA) SM copy.
BULK_SHAPES = ((4096, 4), (8192, 4), (16384, 2), (8192, 2))

GATE_TIMEOUT_NS = 10_000_000_000  # 10 s: far above any gated region, low enough not to hang a run

SOURCE = r"""

// Pattern word for 32-bit word index i: a finaliser-style integer hash (well mixed, cheap).
__device__ __forceinline__ u32 pattern_word(u64 i, u32 seed) {
    u32 x = (u32)i ^ (u32)(i >> 32) * 0x9E3779B9u ^ seed;
    x ^= x >> 16; x *= 0x7FEB352Du;
    x ^= x >> 15; x *= 0x846CA68Bu;
    x ^= x >> 16;
    return x;
}

extern "C" __global__ void gate_spin(const volatile u32* flag, volatile u32* timed_out, u64 timeout_ns) {
    u64 t0 = global_ns();
    while (*flag == 0u) {
        if (global_ns() - t0 > timeout_ns) { *timed_out = 1u; break; }
    }
}

#define DEFINE_COPY(U, LB)                                                                     \
extern "C" __global__ void __launch_bounds__(LB) copy_u4_##U(const uint4* __restrict__ src,     \
                                                   uint4* __restrict__ dst, u64 n_vec,        \
                                                   const unsigned char* src_tail,             \
                                                   unsigned char* dst_tail, u32 n_tail,       \
                                                   u32 loops) {                               \
    const u64 block_span = (u64)blockDim.x * U;                                                \
    const u64 grid_span = block_span * gridDim.x;                                              \
    for (u32 r = 0; r < loops; ++r) {                                                          \
        u64 base = (u64)blockIdx.x * block_span + threadIdx.x;                                 \
        for (; base + (U - 1) * (u64)blockDim.x < n_vec; base += grid_span) {                  \
            uint4 v[U];                                                                        \
            _Pragma("unroll")                                                                  \
            for (int j = 0; j < U; ++j) v[j] = LOAD_STREAM(src + base + (u64)j * blockDim.x);  \
            _Pragma("unroll")                                                                  \
            for (int j = 0; j < U; ++j) STORE_STREAM(dst + base + (u64)j * blockDim.x, v[j]);   \
        }                                                                                      \
        for (int j = 0; j < U; ++j) {                                                          \
            u64 k = base + (u64)j * blockDim.x;                                                \
            if (k < n_vec) dst[k] = src[k];                                                    \
        }                                                                                      \
        if (blockIdx.x == 0 && threadIdx.x < n_tail) dst_tail[threadIdx.x] = src_tail[threadIdx.x]; \
    }                                                                                          \
}

DEFINE_COPY(1, 1024)
DEFINE_COPY(2, 1024)
DEFINE_COPY(4, 1024)
DEFINE_COPY(8, 1024)
DEFINE_COPY(12, 512)
DEFINE_COPY(16, 512)

extern "C" __global__ void fill_pattern(unsigned char* p, u64 n_bytes, u32 seed) {
    u64 n_words = n_bytes / 4;
    u32* w = (u32*)p;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n_words; i += (u64)gridDim.x * blockDim.x)
        w[i] = pattern_word(i, seed);
    if (blockIdx.x == 0 && threadIdx.x < (n_bytes & 3)) {
        u32 last = pattern_word(n_words, seed);
        p[n_words * 4 + threadIdx.x] = (unsigned char)(last >> (8 * threadIdx.x));
    }
}

extern "C" __global__ void poison(unsigned char* p, u64 n_bytes) {
    u64 n_words = n_bytes / 4;
    u32* w = (u32*)p;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n_words; i += (u64)gridDim.x * blockDim.x)
        w[i] = 0xA5A5A5A5u;
    if (blockIdx.x == 0 && threadIdx.x < (n_bytes & 3)) p[n_words * 4 + threadIdx.x] = 0xA5u;
}

extern "C" __global__ void check_pattern(const unsigned char* p, u64 n_bytes, u32 seed, u64* mismatches) {
    u64 n_words = n_bytes / 4;
    const u32* w = (const u32*)p;
    u64 bad = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n_words; i += (u64)gridDim.x * blockDim.x)
        bad += (w[i] != pattern_word(i, seed));
    if (blockIdx.x == 0 && threadIdx.x < (n_bytes & 3)) {
        u32 last = pattern_word(n_words, seed);
        bad += (p[n_words * 4 + threadIdx.x] != (unsigned char)(last >> (8 * threadIdx.x)));
    }
    if (bad) atomicAdd(mismatches, bad);
}

// One thread follows a linked list whose nodes hold the address of the next node (the list may
// live in a peer GPU's memory or in mapped host memory); each load depends on the previous one.
// CUDA: ld.global.cg (cached in L2, never in the reader's L1), a weak load like nvbandwidth's chase.
// It was tried against the earlier volatile load as the cause of reading 0.85 us where nvbandwidth
// reads 0.83 on H100 NV18: it is not (0.849 us with it, 2026-11-25; docs/benchmarks.md). HIP: a
// volatile load (see the HIP prelude).
// Only block `target` chases (the grid may hold one block per SM, as nvbandwidth's latency kernel
// does, so a series of launches can place the chase on each SM in turn).
extern "C" __global__ void pointer_chase(const u64* start, u64 hops, u64* sink, u32 target) {
    if (blockIdx.x != target) return;
    const u64* p = start;
    for (u64 h = 0; h < hops; ++h) p = (const u64*)LOAD_CHASE((const unsigned long long*)p);
    *sink = (u64)p;
}

// The chase on every SM at once (one single-thread block per SM, as nvbandwidth's latency figure is
// a mean over all SMs): block b starts at starts[b] (spread along the one cycle), times its own hops
// with the global timer, and leaves where it stopped in ends[b] (the next region starts there).
extern "C" __global__ void pointer_chase_each(const u64* starts, u64 hops, u64* ends, u64* ns) {
    if (threadIdx.x != 0) return;
    const u64* p = (const u64*)starts[blockIdx.x];
    u64 t0 = global_ns();
    for (u64 h = 0; h < hops; ++h) p = (const u64*)LOAD_CHASE((const unsigned long long*)p);
    u64 t1 = global_ns();
    ends[blockIdx.x] = (u64)p;
    ns[blockIdx.x] = t1 - t0;
}

// Ping-pong: the kernel on GPU `me` waits until its local flag holds the value it expects, then
// stores the next value into the peer's flag (peer memory), with a system-scope fence after the
// store. `first` starts the exchange. Times are from %globaltimer, between the first and the
// last value received, so launch skew between the two GPUs is not counted.
extern "C" __global__ void flag_pingpong(volatile u32* local_flag, volatile u32* peer_flag, u32 rounds,
                                         u32 first, u64 timeout_ns, u64* out) {
    u64 t_start = 0, t_end = 0, t0 = global_ns();
    u32 expect = first ? 0u : 1u;
    u32 timed_out = 0;
    if (first) { *peer_flag = 1u; __threadfence_system(); expect = 2u; }
    for (u32 r = 0; r < rounds; ++r) {
        while (*local_flag != expect) {
            if (global_ns() - t0 > timeout_ns) { timed_out = 1; break; }
        }
        if (timed_out) break;
        u64 now = global_ns();
        if (r == 0) t_start = now;
        t_end = now;
        *peer_flag = expect + 1u;
        __threadfence_system();
        expect += 2u;
    }
    out[0] = t_start; out[1] = t_end; out[2] = timed_out;
}
"""

BULK_SOURCE = r"""
// Hopper bulk-copy (TMA) variant: thread 0 of each block streams CHUNK-byte pieces through STAGES
// shared-memory buffers: cp.async.bulk global->shared completing on an mbarrier, then
// cp.async.bulk shared->global (bulk_group); a stage is refilled once the store that read it is
// done reading. Pieces are dealt to blocks grid-stride; warp 1 of block 0 copies the remainder
// (the bytes after the last whole piece) with uint4 and byte accesses.
__device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }

#define DEFINE_BULK(CHUNK, STAGES)                                                              \
extern "C" __global__ void __launch_bounds__(64) copy_bulk_##CHUNK##_##STAGES(                  \
        const unsigned char* __restrict__ src, unsigned char* __restrict__ dst, u64 n_bytes) {  \
    __shared__ __align__(128) unsigned char buf[STAGES][CHUNK];                                 \
    __shared__ __align__(8) u64 bar[STAGES];                                                    \
    const u64 n_chunks = n_bytes / CHUNK;                                                       \
    if (threadIdx.x == 0) {                                                                     \
        u64 mine = n_chunks > blockIdx.x ? (n_chunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0; \
        for (int s = 0; s < STAGES; ++s)                                                        \
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(smem_addr(&bar[s])));  \
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");                     \
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");                           \
        for (u64 j = 0; j < (u64)(STAGES - 1) && j < mine; ++j) {                               \
            u64 off = (blockIdx.x + j * gridDim.x) * (u64)CHUNK;                                \
            u32 b = smem_addr(&bar[j]);                                                         \
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(CHUNK) : "memory"); \
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" \
                         :: "r"(smem_addr(buf[j])), "l"(src + off), "r"(CHUNK), "r"(b) : "memory"); \
        }                                                                                       \
        for (u64 k = 0; k < mine; ++k) {                                                        \
            int s = (int)(k % STAGES);                                                          \
            u32 parity = (u32)((k / STAGES) & 1);                                               \
            u32 done = 0;                                                                       \
            while (!done)                                                                       \
                asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" \
                             : "=r"(done) : "r"(smem_addr(&bar[s])), "r"(parity) : "memory");  \
            u64 off = (blockIdx.x + k * gridDim.x) * (u64)CHUNK;                                \
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"          \
                         :: "l"(dst + off), "r"(smem_addr(buf[s])), "r"(CHUNK) : "memory");     \
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");                          \
            u64 j = k + STAGES - 1;                                                             \
            if (j < mine) {                                                                     \
                if (k >= 1) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");     \
                int t = (int)(j % STAGES);                                                      \
                u64 offj = (blockIdx.x + j * gridDim.x) * (u64)CHUNK;                           \
                u32 b = smem_addr(&bar[t]);                                                     \
                asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(CHUNK) : "memory"); \
                asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" \
                             :: "r"(smem_addr(buf[t])), "l"(src + offj), "r"(CHUNK), "r"(b) : "memory"); \
            }                                                                                   \
        }                                                                                       \
        asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");                              \
    } else if (blockIdx.x == 0 && threadIdx.x >= 32) {                                          \
        u64 start = n_chunks * CHUNK;                                                           \
        u64 rem = n_bytes - start;                                                              \
        const uint4* s4 = (const uint4*)(src + start);                                          \
        uint4* d4 = (uint4*)(dst + start);                                                      \
        for (u64 i = threadIdx.x - 32; i < rem / 16; i += 32) d4[i] = s4[i];                   \
        u64 tail = start + (rem / 16) * 16;                                                     \
        if (threadIdx.x - 32 < n_bytes - tail) dst[tail + threadIdx.x - 32] = src[tail + threadIdx.x - 32]; \
    }                                                                                           \
}

DEFINE_BULK(4096, 4)
DEFINE_BULK(8192, 4)
DEFINE_BULK(16384, 2)
DEFINE_BULK(8192, 2)

"""

KERNEL_NAMES = (
    "gate_spin",
    "fill_pattern",
    "poison",
    "check_pattern",
    "pointer_chase",
    "pointer_chase_each",
    "flag_pingpong",
    *(f"copy_u4_{u}" for u in COPY_UNROLLS),
)
BULK_NAMES = tuple(f"copy_bulk_{c}_{st}" for c, st in BULK_SHAPES)

OPTIONS = ("-std=c++17",)


def source_for(dialect: KernelDialect) -> tuple[str, tuple[str, ...]]:
    """(source, kernel names) in a platform's kernel dialect (its row's ``kernels``): its prelude, the
    shared source, and the bulk-copy kernels where the dialect compiles them."""
    if dialect.bulk_copies:
        return dialect.prelude + SOURCE + BULK_SOURCE, KERNEL_NAMES + BULK_NAMES
    return dialect.prelude + SOURCE, KERNEL_NAMES


@dataclass
class KernelSet:
    """Kernels of one module, loaded on the given ordinals by the runtime ``rt``."""

    rt: Any
    module: Any
    ordinals: tuple[int, ...]
    names: tuple[str, ...] = ()

    def has(self, name: str) -> bool:
        return name in self.names

    def launch(self, lane: Any, name: str, grid: int, threads: int, args: tuple[Any, ...]) -> None:
        self.rt.launch(self.module, name, lane.ordinal, lane.stream, grid, threads, args)


def compile_and_preload(rt: Any, ordinals: tuple[int, ...], options: tuple[str, ...] = OPTIONS) -> KernelSet:
    """Compile the platform's source and load every kernel on every ordinal (KernelCompileError
    with the source, options and compiler log when that fails)."""
    dialect = by_key(rt.vendor).kernels  # a fake runtime names the vendor it stands in for
    if dialect is None:
        raise ConfigError(f"platform {rt.vendor!r} has no kernel dialect")
    source, names = source_for(dialect)
    module = rt.compile(source, tuple(options) + dialect.timer_options(rt, tuple(ordinals)), names, ordinals)
    return KernelSet(rt=rt, module=module, ordinals=tuple(ordinals), names=names)
