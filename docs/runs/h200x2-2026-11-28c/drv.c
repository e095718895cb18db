/* A standalone eager NCCL driver for one experiment of issue 36 (2 x H200, 2026-11-28, visit c1): the same loop as
 * linkscope's native eager loop (src/linkscope/comm/native/eagerloop.c: ncclGroupStart, one call per GPU,
 * ncclGroupEnd, nothing between iterations), in a C process of its own, so that the process (Python + CuPy vs a
 * plain C program), the timing method (CUDA events on each stream vs a host clock around launches + sync) and the
 * per-iteration buffer shift (nccl-tests common.cu startColl) can be changed one at a time.
 *   drv OP NGPUS ITERS RUNS TIMING SHIFT SIZE...   OP: allgather|allreduce|sendrecv; TIMING: ev|host; SHIFT: 0|1
 * (sendrecv as nccl-tests' sendrecv.cu: each GPU sends to the next and receives from the previous, in a group)
 * Prints one line per size and run: "OP SIZE_BYTES RUN TIME_US_PER_OP", or with DRV_GENERATIONS=K (call 6) the
 * whole measurement K times in the one process, each time with new communicators and streams (the old ones
 * destroyed first): "OP SIZE_BYTES RUN TIME_US_PER_OP GENERATION". DRV_RENEW=comms|streams (h200x2-2026-11-28f, call 2)
 * renews only the communicators or only the streams at each generation (default: both).  Built with
 *   nvcc -O2 drv.c -lnccl (or gcc with the CUDA and NCCL include/lib paths).
 */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "cuda %s: %s\n", #x, cudaGetErrorString(e_)); exit(2); } } while (0)
#define NK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) { fprintf(stderr, "nccl %s: %s\n", #x, ncclGetErrorString(r_)); exit(2); } } while (0)
#define MAXG 8
#define SPAN ((size_t)64 << 20)

static double now_s(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }

int main(int argc, char **argv)
{
    if (argc < 8) { fprintf(stderr, "usage: drv OP NGPUS ITERS RUNS ev|host SHIFT SIZE...\n"); return 2; }
    int gather = strcmp(argv[1], "allgather") == 0, sendrecv = strcmp(argv[1], "sendrecv") == 0;
    int n = atoi(argv[2]), iters = atoi(argv[3]), runs = atoi(argv[4]), host = strcmp(argv[5], "host") == 0;
    int shift_on = atoi(argv[6]);
    int devs[MAXG]; ncclComm_t comms[MAXG]; cudaStream_t st[MAXG]; char *sb[MAXG], *rb[MAXG];
    for (int i = 0; i < n; i++) devs[i] = i;
    const char *gens_env = getenv("DRV_GENERATIONS");
    int gens = gens_env ? atoi(gens_env) : 1;
    const char *renew = getenv("DRV_RENEW");
    int renew_comms = !renew || strcmp(renew, "streams") != 0, renew_streams = !renew || strcmp(renew, "comms") != 0;
    for (int i = 0; i < n; i++) {
        CK(cudaSetDevice(i));
        CK(cudaMalloc((void **)&sb[i], SPAN)); CK(cudaMalloc((void **)&rb[i], SPAN * n));
        CK(cudaMemset(sb[i], 0, SPAN)); CK(cudaMemset(rb[i], 0, SPAN * n));
    }
    for (int gen = 0; gen < gens; gen++) {
    if (gen == 0 || renew_comms) NK(ncclCommInitAll(comms, n, devs));
    if (gen == 0 || renew_streams)
        for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking)); }
    CK(cudaSetDevice(0));
    for (int a = 7; a < argc; a++) {
        size_t size = strtoull(argv[a], NULL, 0);              /* nccl-tests' size: the result's bytes */
        size_t count = gather ? size / 4 / n : size / 4;       /* floats per rank sent */
        size_t total = gather ? size : size;                   /* bytes one iteration touches per buffer */
        size_t steps = total ? SPAN / total : 1; if (steps < 1) steps = 1;
        for (int w = 0; w < 6; w++) {                          /* warm-up: 5 launches + the sync op */
            NK(ncclGroupStart());
            for (int i = 0; i < n; i++) {
                if (gather) NK(ncclAllGather(sb[i], rb[i], count, ncclFloat, comms[i], st[i]));
                else if (sendrecv) {
                    NK(ncclGroupStart());
                    NK(ncclSend(sb[i], count, ncclFloat, (i + 1) % n, comms[i], st[i]));
                    NK(ncclRecv(rb[i], count, ncclFloat, (i + n - 1) % n, comms[i], st[i]));
                    NK(ncclGroupEnd());
                }
                else NK(ncclAllReduce(sb[i], rb[i], count, ncclFloat, ncclSum, comms[i], st[i]));
            }
            NK(ncclGroupEnd());
        }
        for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaStreamSynchronize(st[i])); }
        CK(cudaSetDevice(0));
        for (int r = 0; r < runs; r++) {
            cudaEvent_t e0[MAXG], e1[MAXG];
            for (int i = 0; i < n; i++) {
                CK(cudaSetDevice(i)); CK(cudaEventCreate(&e0[i])); CK(cudaEventCreate(&e1[i]));
                CK(cudaStreamSynchronize(st[i]));
            }
            CK(cudaSetDevice(0));
            if (!host) for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaEventRecord(e0[i], st[i])); }
            if (!host) CK(cudaSetDevice(0));
            double t0 = now_s();
            for (int it = 0; it < iters; it++) {
                size_t off = shift_on ? total * (it % steps) : 0;
                NK(ncclGroupStart());
                for (int i = 0; i < n; i++) {
                    if (gather) NK(ncclAllGather(sb[i] + off / n, rb[i] + off, count, ncclFloat, comms[i], st[i]));
                    else if (sendrecv) {
                        NK(ncclGroupStart());
                        NK(ncclSend(sb[i] + off, count, ncclFloat, (i + 1) % n, comms[i], st[i]));
                        NK(ncclRecv(rb[i] + off, count, ncclFloat, (i + n - 1) % n, comms[i], st[i]));
                        NK(ncclGroupEnd());
                    }
                    else NK(ncclAllReduce(sb[i] + off, rb[i] + off, count, ncclFloat, ncclSum, comms[i], st[i]));
                }
                NK(ncclGroupEnd());
            }
            double t_us;
            if (host) {
                for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaStreamSynchronize(st[i])); }
                t_us = (now_s() - t0) * 1e6 / iters;
            } else {
                float worst = 0;
                for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaEventRecord(e1[i], st[i])); }
                for (int i = 0; i < n; i++) {
                    float ms; CK(cudaSetDevice(i)); CK(cudaEventSynchronize(e1[i]));
                    CK(cudaEventElapsedTime(&ms, e0[i], e1[i])); if (ms > worst) worst = ms;
                }
                t_us = worst * 1e3 / iters;
            }
            CK(cudaSetDevice(0));
            if (gens > 1) printf("%s %zu %d %.2f %d\n", argv[1], size, r, t_us, gen);
            else printf("%s %zu %d %.2f\n", argv[1], size, r, t_us);
            fflush(stdout);
            for (int i = 0; i < n; i++) { CK(cudaEventDestroy(e0[i])); CK(cudaEventDestroy(e1[i])); }
        }
    }
    int last = gen == gens - 1;
    for (int i = 0; i < n; i++) { CK(cudaSetDevice(i)); CK(cudaStreamSynchronize(st[i]));
                                  if (last || renew_comms) ncclCommDestroy(comms[i]);
                                  if (last || renew_streams) CK(cudaStreamDestroy(st[i])); }
    CK(cudaSetDevice(0));
    }
    return 0;
}
