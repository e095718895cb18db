/*
 * linkscope PMPI interposer: counts the bytes and messages each rank sends to each other rank.
 *
 * Built by linkscope with the system's mpicc on first use and preloaded into every rank
 * (LD_PRELOAD). Point-to-point sends (blocking, non-blocking, synchronous, buffered, ready,
 * persistent + MPI_Start/MPI_Startall, sendrecv) are counted per destination in
 * MPI_COMM_WORLD ranks; collectives are recorded by name with the bytes this rank contributed.
 * At MPI_Finalize each rank writes its row to $LINKSCOPE_TRAFFIC_DIR/rank-<N>.txt (text, see
 * linkscope/traffic/capture/rows.py for the format). Nothing is written when the variable is unset.
 *
 * Written for linkscope (Apache-2.0). Limitations: counters are not thread-safe (an
 * MPI_THREAD_MULTIPLE program sending from several threads at once may lose counts); only the C
 * bindings are intercepted where the MPI library's Fortran bindings bypass them.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LS_BINS 64
#define LS_MAX_COLL 48

static int ls_rank = -1, ls_size = 0, ls_local_rank = -1;
static char ls_host[MPI_MAX_PROCESSOR_NAME + 1];
static unsigned long long *ls_bytes = NULL, *ls_msgs = NULL;
static unsigned long long ls_hist[LS_BINS];
static MPI_Group ls_world_group = MPI_GROUP_NULL;

struct ls_coll { const char *name; unsigned long long calls, bytes; };
static struct ls_coll ls_colls[LS_MAX_COLL];
static int ls_ncoll = 0;

struct ls_persist { MPI_Request req; int dest; unsigned long long bytes; };
static struct ls_persist *ls_persist = NULL;
static int ls_npersist = 0, ls_cap_persist = 0;

static int ls_bin(unsigned long long n) {
    int b = 0;
    while (n) { b++; n >>= 1; }
    return b < LS_BINS ? b : LS_BINS - 1;
}

static unsigned long long ls_type_bytes(int count, MPI_Datatype type) {
    int size = 0;
    if (count <= 0) return 0;
    PMPI_Type_size(type, &size);
    return (unsigned long long)count * (unsigned long long)(size > 0 ? size : 0);
}

/* dest in comm -> rank in MPI_COMM_WORLD (-1 for MPI_PROC_NULL or unknown) */
static int ls_world_rank(int dest, MPI_Comm comm) {
    int inter = 0, out = MPI_UNDEFINED;
    MPI_Group group;
    if (dest == MPI_PROC_NULL || dest < 0 || ls_size <= 0) return -1;
    if (comm == MPI_COMM_WORLD) return dest;
    PMPI_Comm_test_inter(comm, &inter);
    if (inter) PMPI_Comm_remote_group(comm, &group); else PMPI_Comm_group(comm, &group);
    PMPI_Group_translate_ranks(group, 1, &dest, ls_world_group, &out);
    PMPI_Group_free(&group);
    return (out == MPI_UNDEFINED || out < 0 || out >= ls_size) ? -1 : out;
}

static void ls_count_world(int wdest, unsigned long long bytes) {
    if (wdest < 0 || ls_bytes == NULL) return;
    ls_bytes[wdest] += bytes;
    ls_msgs[wdest] += 1;
    ls_hist[ls_bin(bytes)] += 1;
}

static void ls_count(int dest, MPI_Comm comm, int count, MPI_Datatype type) {
    if (ls_bytes == NULL) return;
    ls_count_world(ls_world_rank(dest, comm), ls_type_bytes(count, type));
}

static void ls_coll(const char *name, unsigned long long bytes) {
    int i;
    for (i = 0; i < ls_ncoll; i++) {
        if (strcmp(ls_colls[i].name, name) == 0) { ls_colls[i].calls++; ls_colls[i].bytes += bytes; return; }
    }
    if (ls_ncoll < LS_MAX_COLL) {
        ls_colls[ls_ncoll].name = name; ls_colls[ls_ncoll].calls = 1; ls_colls[ls_ncoll].bytes = bytes; ls_ncoll++;
    }
}

static void ls_persist_add(MPI_Request req, int dest, MPI_Comm comm, int count, MPI_Datatype type) {
    if (ls_npersist == ls_cap_persist) {
        int cap = ls_cap_persist ? 2 * ls_cap_persist : 64;
        struct ls_persist *grown = realloc(ls_persist, (size_t)cap * sizeof(*grown));
        if (grown == NULL) return;
        ls_persist = grown; ls_cap_persist = cap;
    }
    ls_persist[ls_npersist].req = req;
    ls_persist[ls_npersist].dest = ls_world_rank(dest, comm);
    ls_persist[ls_npersist].bytes = ls_type_bytes(count, type);
    ls_npersist++;
}

static void ls_persist_start(MPI_Request req) {
    int i;
    for (i = 0; i < ls_npersist; i++) {
        if (ls_persist[i].req == req) { ls_count_world(ls_persist[i].dest, ls_persist[i].bytes); return; }
    }
}

static void ls_setup(void) {
    MPI_Comm shared;
    int len = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &ls_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &ls_size);
    PMPI_Comm_group(MPI_COMM_WORLD, &ls_world_group);
    ls_bytes = calloc((size_t)ls_size, sizeof(*ls_bytes));
    ls_msgs = calloc((size_t)ls_size, sizeof(*ls_msgs));
    memset(ls_hist, 0, sizeof(ls_hist));
    PMPI_Get_processor_name(ls_host, &len);
    ls_host[len] = '\0';
    if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared) == MPI_SUCCESS) {
        PMPI_Comm_rank(shared, &ls_local_rank);
        PMPI_Comm_free(&shared);
    }
}

static void ls_write_row(void) {
    const char *dir = getenv("LINKSCOPE_TRAFFIC_DIR");
    char path[4096], tmp[4200];
    FILE *out;
    int i;
    if (dir == NULL || ls_bytes == NULL) return;
    snprintf(path, sizeof(path), "%s/rank-%d.txt", dir, ls_rank);
    snprintf(tmp, sizeof(tmp), "%s/.rank-%d.txt.%d.tmp", dir, ls_rank, (int)getpid());
    out = fopen(tmp, "w");
    if (out == NULL) { fprintf(stderr, "linkscope: cannot write traffic row %s\n", tmp); return; }
    fprintf(out, "linkscope-traffic-row 1\nsource pmpi\nrank %d\nsize %d\nhost %s\nlocal_rank %d\n",
            ls_rank, ls_size, ls_host, ls_local_rank);
    fprintf(out, "bytes");
    for (i = 0; i < ls_size; i++) fprintf(out, " %llu", ls_bytes[i]);
    fprintf(out, "\nmessages");
    for (i = 0; i < ls_size; i++) fprintf(out, " %llu", ls_msgs[i]);
    fprintf(out, "\nhist");
    for (i = 0; i < LS_BINS; i++) fprintf(out, " %llu", ls_hist[i]);
    fprintf(out, "\n");
    for (i = 0; i < ls_ncoll; i++) fprintf(out, "coll %s %llu %llu\n", ls_colls[i].name, ls_colls[i].calls, ls_colls[i].bytes);
    fprintf(out, "end\n");
    fclose(out);
    rename(tmp, path);
}

/* ---- init / finalize ------------------------------------------------------------------- */
int MPI_Init(int *argc, char ***argv) {
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) ls_setup();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) ls_setup();
    return rc;
}

int MPI_Finalize(void) {
    ls_write_row();
    if (ls_world_group != MPI_GROUP_NULL) PMPI_Group_free(&ls_world_group);
    return PMPI_Finalize();
}

/* ---- point to point ---------------------------------------------------------------------- */
int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    ls_count(dest, comm, count, type);
    return PMPI_Send(buf, count, type, dest, tag, comm);
}
int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    ls_count(dest, comm, count, type);
    return PMPI_Ssend(buf, count, type, dest, tag, comm);
}
int MPI_Bsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    ls_count(dest, comm, count, type);
    return PMPI_Bsend(buf, count, type, dest, tag, comm);
}
int MPI_Rsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
    ls_count(dest, comm, count, type);
    return PMPI_Rsend(buf, count, type, dest, tag, comm);
}
int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    ls_count(dest, comm, count, type);
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}
int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    ls_count(dest, comm, count, type);
    return PMPI_Issend(buf, count, type, dest, tag, comm, req);
}
int MPI_Ibsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    ls_count(dest, comm, count, type);
    return PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
}
int MPI_Irsend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    ls_count(dest, comm, count, type);
    return PMPI_Irsend(buf, count, type, dest, tag, comm, req);
}
int MPI_Send_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    int rc = PMPI_Send_init(buf, count, type, dest, tag, comm, req);
    if (rc == MPI_SUCCESS) ls_persist_add(*req, dest, comm, count, type);
    return rc;
}
int MPI_Ssend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    int rc = PMPI_Ssend_init(buf, count, type, dest, tag, comm, req);
    if (rc == MPI_SUCCESS) ls_persist_add(*req, dest, comm, count, type);
    return rc;
}
int MPI_Bsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    int rc = PMPI_Bsend_init(buf, count, type, dest, tag, comm, req);
    if (rc == MPI_SUCCESS) ls_persist_add(*req, dest, comm, count, type);
    return rc;
}
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request *req) {
    int rc = PMPI_Rsend_init(buf, count, type, dest, tag, comm, req);
    if (rc == MPI_SUCCESS) ls_persist_add(*req, dest, comm, count, type);
    return rc;
}
int MPI_Start(MPI_Request *req) {
    ls_persist_start(*req);
    return PMPI_Start(req);
}
int MPI_Startall(int count, MPI_Request reqs[]) {
    int i;
    for (i = 0; i < count; i++) ls_persist_start(reqs[i]);
    return PMPI_Startall(count, reqs);
}
int MPI_Request_free(MPI_Request *req) {
    int i;
    for (i = 0; i < ls_npersist; i++) {
        if (ls_persist[i].req == *req) { ls_persist[i] = ls_persist[--ls_npersist]; break; }
    }
    return PMPI_Request_free(req);
}
int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                 void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status *status) {
    ls_count(dest, comm, scount, stype);
    return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
}
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                         MPI_Comm comm, MPI_Status *status) {
    ls_count(dest, comm, count, type);
    return PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status);
}

/* ---- collectives (recorded by name, bytes this rank contributes) ------------------------- */
static int ls_comm_size(MPI_Comm comm) { int n = 0; PMPI_Comm_size(comm, &n); return n; }
static int ls_comm_rank(MPI_Comm comm) { int r = 0; PMPI_Comm_rank(comm, &r); return r; }

int MPI_Barrier(MPI_Comm comm) { ls_coll("MPI_Barrier", 0); return PMPI_Barrier(comm); }
int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm) {
    ls_coll("MPI_Bcast", ls_comm_rank(comm) == root ? ls_type_bytes(count, type) : 0);
    return PMPI_Bcast(buf, count, type, root, comm);
}
int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root, MPI_Comm comm) {
    ls_coll("MPI_Reduce", ls_type_bytes(count, type));
    return PMPI_Reduce(sbuf, rbuf, count, type, op, root, comm);
}
int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    ls_coll("MPI_Allreduce", ls_type_bytes(count, type));
    return PMPI_Allreduce(sbuf, rbuf, count, type, op, comm);
}
int MPI_Iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm, MPI_Request *req) {
    ls_coll("MPI_Iallreduce", ls_type_bytes(count, type));
    return PMPI_Iallreduce(sbuf, rbuf, count, type, op, comm, req);
}
int MPI_Ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req) {
    ls_coll("MPI_Ibcast", ls_comm_rank(comm) == root ? ls_type_bytes(count, type) : 0);
    return PMPI_Ibcast(buf, count, type, root, comm, req);
}
int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
               int root, MPI_Comm comm) {
    ls_coll("MPI_Gather", ls_type_bytes(scount, stype));
    return PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}
int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                int root, MPI_Comm comm) {
    ls_coll("MPI_Scatter", ls_comm_rank(comm) == root ? ls_type_bytes(scount, stype) * ls_comm_size(comm) : 0);
    return PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
}
int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm) {
    ls_coll("MPI_Allgather", ls_type_bytes(scount, stype));
    return PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}
int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                 MPI_Comm comm) {
    ls_coll("MPI_Alltoall", ls_type_bytes(scount, stype) * ls_comm_size(comm));
    return PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
}
int MPI_Ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount, MPI_Datatype rtype,
                  MPI_Comm comm, MPI_Request *req) {
    ls_coll("MPI_Ialltoall", ls_type_bytes(scount, stype) * ls_comm_size(comm));
    return PMPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype, void *rbuf,
                  const int rcounts[], const int rdispls[], MPI_Datatype rtype, MPI_Comm comm) {
    unsigned long long total = 0;
    int i, n = ls_comm_size(comm);
    for (i = 0; i < n; i++) total += ls_type_bytes(scounts[i], stype);
    ls_coll("MPI_Alltoallv", total);
    return PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
}
int MPI_Reduce_scatter(const void *sbuf, void *rbuf, const int rcounts[], MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    unsigned long long total = 0;
    int i, n = ls_comm_size(comm);
    for (i = 0; i < n; i++) total += ls_type_bytes(rcounts[i], type);
    ls_coll("MPI_Reduce_scatter", total);
    return PMPI_Reduce_scatter(sbuf, rbuf, rcounts, type, op, comm);
}
int MPI_Reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
    ls_coll("MPI_Reduce_scatter_block", ls_type_bytes(rcount, type) * ls_comm_size(comm));
    return PMPI_Reduce_scatter_block(sbuf, rbuf, rcount, type, op, comm);
}
