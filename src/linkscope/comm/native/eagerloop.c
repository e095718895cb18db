/* linkscope: the native eager launch loop of `bench nccl` (comm/eagerloop.py builds and loads it).
 *
 * What nccl-tests' eager loop does (nccl-tests 2.19.6 src/common.cu, BenchTime 727-745 and startColl
 * 548-619): for each iteration, ncclGroupStart(); one call per local GPU (or the op's sends and
 * receives, which its alltoall/sendrecv runColl groups itself); ncclGroupEnd(). A lone call (one GPU
 * per process, one collective) is issued without a group, as startColl does when nGpus == 1. Nothing
 * else happens between two iterations: no synchronisation, no event; the caller times around the whole
 * loop and synchronises after it. This file does the same
 * with the NCCL functions the caller found in the library already loaded in the process (CuPy's), so
 * nothing here links against NCCL or CUDA.
 *
 * Each call is typed by its family (NCCL's own prototypes, nccl.h): no varargs, no generic calls.
 * ncclResult_t, ncclDataType_t and ncclRedOp_t are C enums (int); ncclComm_t and the stream are
 * pointers. Returns 0, or the first non-zero code: of ncclGroupStart, of a call (the group is still
 * closed with ncclGroupEnd, whose own code is then ignored), or of ncclGroupEnd; the loop stops there.
 * LS_BAD_FAMILY (negative, never an NCCL code) for a call of an unknown family.
 */
#define _POSIX_C_SOURCE 199309L
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef void *ls_comm;
typedef void *ls_stream;

enum ls_family {
    LS_REDUCE = 1,    /* ncclAllReduce, ncclReduceScatter */
    LS_GATHER = 2,    /* ncclAllGather */
    LS_P2P = 3,       /* ncclSend, ncclRecv */
    LS_ROOTED = 4,    /* ncclReduce */
    LS_BROADCAST = 5, /* ncclBroadcast */
};
#define LS_BAD_FAMILY (-1)

typedef int (*ls_group_fn)(void);
typedef int (*ls_reduce_fn)(const void *, void *, size_t, int, int, ls_comm, ls_stream);
typedef int (*ls_gather_fn)(const void *, void *, size_t, int, ls_comm, ls_stream);
typedef int (*ls_p2p_fn)(void *, size_t, int, int, ls_comm, ls_stream);
typedef int (*ls_rooted_fn)(const void *, void *, size_t, int, int, int, ls_comm, ls_stream);
typedef int (*ls_broadcast_fn)(const void *, void *, size_t, int, int, ls_comm, ls_stream);

/* One bound call. Mirrored field for field by comm/eagerloop.py (_Call). */
typedef struct {
    int32_t family;
    int32_t datatype;
    int32_t redop;
    int32_t peer;     /* send/recv: the other rank; reduce/broadcast: the root */
    void (*fn)(void); /* the NCCL function, cast back to its family's type before the call */
    void *send;       /* send/recv: the one buffer */
    void *recv;
    size_t count;
    ls_comm comm;
    ls_stream stream;
} ls_call;

static int ls_issue(const ls_call *c)
{
    switch (c->family) {
    case LS_REDUCE:
        return ((ls_reduce_fn)c->fn)(c->send, c->recv, c->count, c->datatype, c->redop, c->comm, c->stream);
    case LS_GATHER:
        return ((ls_gather_fn)c->fn)(c->send, c->recv, c->count, c->datatype, c->comm, c->stream);
    case LS_P2P:
        return ((ls_p2p_fn)c->fn)(c->send, c->count, c->datatype, c->peer, c->comm, c->stream);
    case LS_ROOTED:
        return ((ls_rooted_fn)c->fn)(c->send, c->recv, c->count, c->datatype, c->redop, c->peer, c->comm, c->stream);
    case LS_BROADCAST:
        return ((ls_broadcast_fn)c->fn)(c->send, c->recv, c->count, c->datatype, c->peer, c->comm, c->stream);
    default:
        return LS_BAD_FAMILY;
    }
}

static int64_t ls_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* `iters` groups of the `ncalls` calls (a lone call: `iters` calls). `calls` holds `nvariants` sets of `ncalls`
 * calls, one after another: iteration i issues set i mod nvariants, the same operation on buffers moved along, as
 * nccl-tests moves its buffers by one size at each iteration (common.cu startColl: "to avoid cache effects").
 * `enqueue_ns` (NULL: not kept) receives the host time of each iteration, ncclGroupStart to the return of
 * ncclGroupEnd: the launch cost of one operation. */
int ls_eager_loop(ls_group_fn group_start, ls_group_fn group_end, const ls_call *calls, int32_t ncalls,
                  int32_t nvariants, int64_t iters, int64_t *enqueue_ns)
{
    int grouped = ncalls > 1;
    if (nvariants < 1)
        nvariants = 1;
    for (int64_t i = 0; i < iters; i++) {
        const ls_call *set = calls + (size_t)(i % nvariants) * (size_t)ncalls;
        int64_t t0 = enqueue_ns ? ls_now_ns() : 0;
        int first = grouped ? group_start() : 0;
        if (first != 0)
            return first;
        for (int32_t k = 0; k < ncalls && first == 0; k++)
            first = ls_issue(&set[k]);
        int closed = grouped ? group_end() : 0;
        if (first == 0)
            first = closed;
        if (enqueue_ns)
            enqueue_ns[i] = ls_now_ns() - t0;
        if (first != 0)
            return first;
    }
    return 0;
}
