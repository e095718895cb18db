/* osu_latency's loop (MPI_Send then MPI_Recv, MPI_CHAR, tag 1) in many short rounds; prints min, p10
 * and median over the rounds, so a shared, loaded machine still shows the unloaded latency (issue 27).
 *   mpicc -O2 -o /tmp/pingpong bench/mpi_overhead/pingpong.c
 *   mpirun -n 2 --bind-to none /tmp/pingpong THREAD(0 single, 1 multiple) SIZE ROUNDS ITERS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int multiple = atoi(argv[1]), size = atoi(argv[2]), rounds = atoi(argv[3]), iters = atoi(argv[4]), got, rank;
    if (multiple) MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &got); else MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *s = calloc(size + 1, 1), *r = calloc(size + 1, 1);
    double *us = malloc(rounds * sizeof(double));
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
    }
    qsort(us, rounds, sizeof(double), cmp);
    if (rank == 0)
        printf("C %-8s %5d B: min %.3f p10 %.3f median %.3f us\n", multiple ? "multiple" : "single", size, us[0],
               us[rounds / 10], us[rounds / 2]);
    MPI_Finalize();
    return 0;
}
