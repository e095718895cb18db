/* osu_bw's loop (OSU 5.3: a window of MPI_Isend / MPI_Irecv, MPI_Waitall, a 4-byte ack on tag 101) on
 * cudaMalloc'ed buffers, against the same loop with persistent requests (MPI_Send_init / MPI_Recv_init,
 * MPI_Startall), as `linkscope bench mpi --test bw` runs it: blocks of ITERS windows alternate between the
 * two in one process, so both see the same buffers, link and moment (issue 27: bench mpi bw DD read
 * 0.993-0.997x of osu_bw at 16-64 MiB; is it the persistent requests or the interpreter?).
 *   mpicc -O2 -DWITH_CUDA -o /tmp/bw_probe bench/mpi_overhead/bw_probe.c -lcudart
 *   mpirun -n 2 --bind-to none env LOCAL_RANK=... /tmp/bw_probe SIZE BLOCKS [ITERS=20 WINDOW=64]
 * GPU = $LOCAL_RANK as OSU picks it. Warm-up: 0.1 s of isend windows, then 0.1 s of persistent ones.
 * Prints per block: mode, MB/s (size * window * iters / seconds on rank 0, as OSU). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef WITH_CUDA
#include <cuda_runtime.h>
#endif

enum { MAXW = 256 };

static void window_isend(int rank, char *s, char *r, int size, int window, MPI_Request *q) {
    for (int j = 0; j < window; j++) {
        if (rank == 0)
            MPI_Isend(s, size, MPI_CHAR, 1, 100, MPI_COMM_WORLD, q + j);
        else
            MPI_Irecv(r, size, MPI_CHAR, 0, 100, MPI_COMM_WORLD, q + j);
    }
    MPI_Waitall(window, q, MPI_STATUSES_IGNORE);
    if (rank == 0)
        MPI_Recv(r, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(s, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
}

static void window_persistent(int rank, char *s, char *r, int window, MPI_Request *p) {
    MPI_Startall(window, p);
    MPI_Waitall(window, p, MPI_STATUSES_IGNORE);
    if (rank == 0)
        MPI_Recv(r, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    else
        MPI_Send(s, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
}

/* one block of iters windows in the given mode; seconds on this rank */
static double block(int persistent, int rank, char *s, char *r, int size, int window, int iters, MPI_Request *q,
                    MPI_Request *p) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (persistent)
            window_persistent(rank, s, r, window, p);
        else
            window_isend(rank, s, r, size, window, q);
    }
    return MPI_Wtime() - t0;
}

/* windows of one mode until rank 0 has spent secs (rank 0 decides, as bench mpi's warm-up) */
static void warm(int persistent, int rank, char *s, char *r, int size, int window, MPI_Request *q, MPI_Request *p,
                 double secs) {
    double t0 = MPI_Wtime();
    int more = 1;
    while (more) {
        block(persistent, rank, s, r, size, window, 1, q, p);
        more = MPI_Wtime() - t0 < secs;
        MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: bw_probe SIZE BLOCKS [ITERS WINDOW]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int size = atoi(argv[1]), blocks = atoi(argv[2]);
    int iters = argc > 3 ? atoi(argv[3]) : 20, window = argc > 4 ? atoi(argv[4]) : 64;
    if (window > MAXW) window = MAXW;
    char *s, *r;
#ifdef WITH_CUDA
    const char *lr = getenv("LOCAL_RANK");
    cudaSetDevice(lr ? atoi(lr) : 0);
    cudaMalloc((void **)&s, size);
    cudaMalloc((void **)&r, size);
    cudaMemset(s, 'a', size);
    cudaMemset(r, 'b', size);
    cudaDeviceSynchronize();
    const char *where = "device";
#else
    s = malloc(size);
    r = malloc(size);
    const char *where = "host";
#endif
    MPI_Request q[MAXW], p[MAXW];
    for (int j = 0; j < window; j++) {
        if (rank == 0)
            MPI_Send_init(s, size, MPI_CHAR, 1, 100, MPI_COMM_WORLD, p + j);
        else
            MPI_Recv_init(r, size, MPI_CHAR, 0, 100, MPI_COMM_WORLD, p + j);
    }
    warm(0, rank, s, r, size, window, q, p, 0.1);
    warm(1, rank, s, r, size, window, q, p, 0.1);
    for (int b = 0; b < blocks; b++) {
        for (int persistent = 0; persistent < 2; persistent++) {
            int mode = (b % 2) ? !persistent : persistent; /* ABBA order: neither mode always goes first */
            double secs = block(mode, rank, s, r, size, window, iters, q, p);
            if (rank == 0)
                printf("C %s %s size %d block %d: %.1f MB/s\n", where, mode ? "persistent" : "isend", size, b,
                       (double)size * window * iters / secs / 1e6);
        }
    }
    for (int j = 0; j < window; j++) MPI_Request_free(p + j);
    MPI_Finalize();
    return 0;
}
