/* The calls of call_cost.py from C (thread CPU time, best of 5), issue 27.
 *   mpicc -O2 -o /tmp/call_cost bench/mpi_overhead/call_cost.c && mpirun -n 1 /tmp/call_cost */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static char big[65536];

int main(int argc, char **argv) {
    const int n = 2000000, nw = 20000;
    double best[5] = {1e9, 1e9, 1e9, 1e9, 1e9}, t0, v;
    float a[2] = {1, 1}, b[2];
    MPI_Request q[64];
    MPI_Init(&argc, &argv);
    for (int k = 0; k < 5; k++) {
        t0 = cpu_s();
        for (int i = 0; i < n; i++) MPI_Send(big, 8, MPI_CHAR, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
        v = (cpu_s() - t0) / n * 1e9; if (v < best[0]) best[0] = v;
        t0 = cpu_s();
        for (int i = 0; i < n; i++) MPI_Recv(big, 8, MPI_CHAR, MPI_PROC_NULL, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        v = (cpu_s() - t0) / n * 1e9; if (v < best[1]) best[1] = v;
        t0 = cpu_s();
        for (int i = 0; i < n; i++) MPI_Allreduce(a, b, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_SELF);
        v = (cpu_s() - t0) / n * 1e9; if (v < best[2]) best[2] = v;
        t0 = cpu_s();
        for (int i = 0; i < n; i++) { MPI_Wtime(); MPI_Wtime(); }
        v = (cpu_s() - t0) / n * 1e9; if (v < best[3]) best[3] = v;
        t0 = cpu_s();
        for (int i = 0; i < nw; i++) {  /* one osu_bw window: 64 MPI_Isend, MPI_Waitall, the 4-byte ack */
            for (int j = 0; j < 64; j++) MPI_Isend(big, 65536, MPI_CHAR, MPI_PROC_NULL, 100, MPI_COMM_WORLD, q + j);
            MPI_Waitall(64, q, MPI_STATUSES_IGNORE);
            MPI_Recv(big, 4, MPI_CHAR, MPI_PROC_NULL, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        v = (cpu_s() - t0) / nw * 1e9; if (v < best[4]) best[4] = v;
    }
    printf("# C, MPI_Init (thread level single), best of 5\n");
    printf("send                     %9.1f ns per call\nrecv                     %9.1f ns per call\n", best[0], best[1]);
    printf("allreduce                %9.1f ns per call\nwtime_pair               %9.1f ns per call\n", best[2], best[3]);
    printf("window_isend             %9.1f ns per call\n", best[4]);
    MPI_Finalize();
    return 0;
}
