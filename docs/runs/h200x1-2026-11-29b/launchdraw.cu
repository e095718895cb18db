/* What draws the host cost of a small eager launch (issue 36; 1 x H200, 2026-11-29, call 2)?
 * The 2-GPU draw (docs/benchmarks.md "The eager draw is the communicator set's") also shows on one GPU (call 1:
 * a one-rank communicator's send/receive to itself 6.2-6.9 or 9.0-9.7 us per op from one set to the next, and its
 * allreduce, a plain cudaMemcpyAsync in NCCL (onerank.cu:48-53), 4.6-7.0). This program drops NCCL from the timed
 * loop: it times back-to-back launches of one call, generation after generation in one process, with an action
 * between generations: none, sleep (the thread blocks 300 ms: the vCPU may idle and be placed anew by the host),
 * spin (300 ms busy on the CPU), comm (a one-rank NCCL communicator made and destroyed, as a set of bench nccl).
 *   launchdraw ACTION GENERATIONS CALL ALLOC     CALL: memcpy (cudaMemcpyAsync 8 B device to device, as NCCL's
 *   one-rank allreduce) | kernel (an empty kernel); ALLOC: cuda (cudaMalloc) | nccl (ncclMemAlloc, as bench nccl
 *   and nccl-tests)
 * Prints per generation: "ACTION GEN CPU HOST_US_PER_CALL GPU_US_PER_CALL" (CPU: sched_getcpu() after the
 * action; host: median over 5 runs of the launch loop's host time / 20 calls; gpu: median over 5 runs of the
 * events around the 20 calls / 20).   nvcc -O2 launchdraw.cu -lnccl -o launchdraw */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "cuda %s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { fprintf(stderr, "nccl %s: %s\n", #x, ncclGetErrorString(r_)); exit(2); } } while (0)

__global__ void empty_kernel(void) {}

static double now_s(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }

extern "C" int draw_main(int argc, char **argv)
{
    if (argc < 5) { fprintf(stderr, "usage: launchdraw none|sleep|spin|comm GENERATIONS memcpy|kernel cuda|nccl\n"); return 2; }
    const char *action = argv[1];
    int gens = atoi(argv[2]), memcpy_call = strcmp(argv[3], "memcpy") == 0, nccl_alloc = strcmp(argv[4], "nccl") == 0;
    const int iters = 20, runs = 5;
    CK(cudaSetDevice(0));
    void *src, *dst;
    if (nccl_alloc) { NK(ncclMemAlloc(&src, 1 << 21)); NK(ncclMemAlloc(&dst, 1 << 21)); }
    else { CK(cudaMalloc(&src, 1 << 21)); CK(cudaMalloc(&dst, 1 << 21)); }
    cudaStream_t st; CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1; CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
    for (int gen = 0; gen < gens; gen++) {
        if (strcmp(action, "sleep") == 0) usleep(300000);
        else if (strcmp(action, "spin") == 0) { double t = now_s(); while (now_s() - t < 0.3) {} }
        else if (strcmp(action, "comm") == 0) { ncclComm_t c; int d = 0; NK(ncclCommInitAll(&c, 1, &d)); NK(ncclCommDestroy(c)); }
        int cpu = sched_getcpu();
        double host[runs], gpu[runs];
        for (int w = 0; w < 10; w++) {
            if (memcpy_call) CK(cudaMemcpyAsync(dst, src, 8, cudaMemcpyDefault, st)); else empty_kernel<<<1, 32, 0, st>>>();
        }
        CK(cudaStreamSynchronize(st));
        for (int r = 0; r < runs; r++) {
            CK(cudaEventRecord(e0, st));
            double t0 = now_s();
            for (int i = 0; i < iters; i++) {
                if (memcpy_call) CK(cudaMemcpyAsync(dst, src, 8, cudaMemcpyDefault, st)); else empty_kernel<<<1, 32, 0, st>>>();
            }
            host[r] = (now_s() - t0) * 1e6 / iters;
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms; CK(cudaEventElapsedTime(&ms, e0, e1)); gpu[r] = ms * 1e3 / iters;
        }
        qsort(host, runs, sizeof(double), cmp); qsort(gpu, runs, sizeof(double), cmp);
        printf("%s %d %d %.2f %.2f\n", action, gen, cpu, host[runs / 2], gpu[runs / 2]);
        fflush(stdout);
    }
    return 0;
}

#ifndef DRAW_LIB
int main(int argc, char **argv) { return draw_main(argc, argv); }
#endif
