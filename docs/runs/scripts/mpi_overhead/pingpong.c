/* osu_latency's loop (MPI_Send then MPI_Recv, MPI_CHAR, tag 1) and osu_allreduce's (one timed
 * MPI_Allreduce of SIZE/4 floats, a barrier after it) in many short rounds; prints min, p10 and median
 * over the rounds, so a shared, loaded machine still shows the unloaded latency (issue 27).
 *   mpicc -O2 -o /tmp/pingpong bench/mpi_overhead/pingpong.c
 *   mpirun -n 2 --bind-to none /tmp/pingpong THREAD(0 single, 1 multiple) SIZE ROUNDS ITERS [MODE]
 * MODE (build with -DWITH_CUDA -lcudart): host (default), ctx (host buffers in a process that holds a
 * CUDA context on GPU $LOCAL_RANK, as a CuPy process does), device (cudaMalloc'ed buffers there). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef WITH_CUDA
#include <cuda_runtime.h>
#endif

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(int rank, const char *what, const char *level, const char *mode, int size, double *us, int rounds) {
    qsort(us, rounds, sizeof(double), cmp);
    if (rank == 0)
        printf("C %-9s %-8s %-6s %5d B: min %.3f p10 %.3f median %.3f us\n", what, level, mode, size, us[0],
               us[rounds / 10], us[rounds / 2]);
}

int main(int argc, char **argv) {
    int multiple = atoi(argv[1]), size = atoi(argv[2]), rounds = atoi(argv[3]), iters = atoi(argv[4]), got, rank;
    const char *mode = argc > 5 ? argv[5] : "host";
#ifdef WITH_CUDA
    if (strcmp(mode, "host") != 0) {  /* the GPU is chosen before MPI starts, as OSU does with LOCAL_RANK */
        const char *lr = getenv("LOCAL_RANK");
        cudaSetDevice(lr ? atoi(lr) : 0);
        cudaFree(0);
    }
#else
    if (strcmp(mode, "host") != 0) { fprintf(stderr, "MODE %s needs -DWITH_CUDA\n", mode); return 2; }
#endif
    if (multiple) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &got); else MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *s, *r;
    float *fs, *fr;
    int count = size / 4 > 0 ? size / 4 : 1;
#ifdef WITH_CUDA
    if (strcmp(mode, "device") == 0) {
        cudaMalloc((void **)&s, size + 1); cudaMalloc((void **)&r, size + 1);
        cudaMalloc((void **)&fs, count * sizeof(float)); cudaMalloc((void **)&fr, count * sizeof(float));
    } else
#endif
    {
        s = calloc(size + 1, 1); r = calloc(size + 1, 1);
        fs = calloc(count, sizeof(float)); fr = calloc(count, sizeof(float));
    }
    double *us = malloc(rounds * sizeof(double)), *ar = malloc(rounds * sizeof(double));
    for (int k = -1; k < rounds; k++) {  /* round -1: warm-up */
        int n = k < 0 ? 200 : iters;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                MPI_Send(s, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(r, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(r, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(s, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
            }
        }
        if (k >= 0) us[k] = (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
        double timer = 0.0;  /* osu_allreduce's loop: each call timed alone, a barrier after it */
        for (int i = 0; i < n; i++) {
            double a = MPI_Wtime();
            MPI_Allreduce(fs, fr, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            timer += MPI_Wtime() - a;
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (k >= 0) ar[k] = timer * 1e6 / n;
    }
    const char *level = multiple ? "multiple" : "single";
    report(rank, "pingpong", level, mode, size, us, rounds);
    report(rank, "allreduce", level, mode, size, ar, rounds);
    MPI_Finalize();
    return 0;
}
