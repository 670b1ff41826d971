/* The dist layer's inside: the process group and the backend table.
 *
 * The engine (group.c) owns the group, its comm thread, its watchdog, the
 * signature checks, staging of non-contiguous tensors, the device checks and
 * the avg division. A backend (mpi.c, nccl.c) only moves contiguous buffers:
 * it fills one `wk_dist_backend` table. Its entries are called with
 *   - buffers of the backend's device type (device_type), contiguous, of
 *     `count` elements of `dtype` (any wick dtype: float32, float64, float16,
 *     bfloat16, int64, int32, uint8, bool), never NULL unless count == 0;
 *   - sizes, dtypes, ops and roots already checked equal on every rank;
 *   - op never WICK_DIST_AVG (the engine sums and divides);
 *   - one call at a time per group, in the same order on every rank.
 * Each entry returns WICK_OK or a status with wick_fail's message set (the
 * engine prefixes nothing: write "nccl: ncclAllReduce failed: ..." yourself).
 *
 * Synchronous backends (asynchronous == 0, MPI): an entry returns when the
 * transfer has finished. The engine runs it inline on the calling thread or on
 * the group's comm thread (async_op work), and its watchdog aborts the job
 * when one runs past the timeout.
 *
 * Asynchronous backends (asynchronous == 1, NCCL): an entry returns once the
 * transfer is queued on the stream of the tensors' device (wick's one stream
 * per device: later wick ops on that device see the result without a wait).
 * The engine calls every entry on the calling thread. After each entry it
 * calls event_record(g, device, &ev) and keeps the event: a work handle is
 * complete when event_query says so; work_wait calls event_wait; the watchdog
 * thread calls event_query (from its own thread) on each outstanding event
 * and aborts the job when one is pending past the timeout (or query < 0);
 * event_release when the engine no longer needs it (from any thread; the
 * group may be destroyed by then, so it is not given).
 *
 * Bootstrap: a backend that needs to exchange bytes at init (NCCL's unique
 * id) calls wk_dist_bootstrap_broadcast, which runs over MPI. */
#ifndef WK_DIST_H
#define WK_DIST_H

#include "wick_dist.h"

#include <stdint.h>

typedef struct wk_dist_group wk_dist_group;

/* one op of a backend's p2p_batch: a contiguous buffer of count elements */
typedef struct wk_dist_p2p {
    int is_recv;
    void *buf;
    int64_t count;
    wick_dtype dtype;
    int peer;
} wk_dist_p2p;

typedef struct wk_dist_backend {
    const char *name;              /* "mpi", "nccl": init_process_group{backend = name} */
    wick_device_type device_type;  /* the tensors it moves: WICK_CPU (mpi), WICK_CUDA (nccl) */
    int asynchronous;              /* 0: done on return; 1: queued on the device's stream */

    /* Called once by wick_dist_init after rank, size, local_rank and timeout_s
     * are set; keeps the backend's state in g->backend_state. A failure ends
     * the init (destroy is not called then). */
    wick_status (*init)(wk_dist_group *g);
    /* Frees backend_state. Called once, after all work of the group is done. */
    void (*destroy)(wk_dist_group *g);

    /* buf = op over ranks of buf (in place), count elements */
    wick_status (*all_reduce)(wk_dist_group *g, void *buf, int64_t count, wick_dtype dtype,
                              wick_dist_op op, int device);
    /* buf = rank root's buf */
    wick_status (*broadcast)(wk_dist_group *g, void *buf, int64_t count, wick_dtype dtype, int root,
                             int device);
    /* recv[r * count .. (r + 1) * count) = rank r's send[0 .. count); send and recv do not overlap */
    wick_status (*all_gather)(wk_dist_group *g, const void *send, void *recv, int64_t count,
                              wick_dtype dtype, int device);
    /* recv[0 .. count) = op over ranks of send[rank * count .. (rank + 1) * count);
     * send holds size * count elements; they do not overlap */
    wick_status (*reduce_scatter)(wk_dist_group *g, const void *send, void *recv, int64_t count,
                                  wick_dtype dtype, wick_dist_op op, int device);
    /* point to point; the engine has checked nothing across ranks here: the
     * receiver must find a different count or dtype and fail clearly (mpi.c
     * probes the message) */
    wick_status (*send)(wk_dist_group *g, const void *buf, int64_t count, wick_dtype dtype, int peer,
                        int device);
    wick_status (*recv)(wk_dist_group *g, void *buf, int64_t count, wick_dtype dtype, int peer,
                        int device);
    wick_status (*barrier)(wk_dist_group *g, int device);

    /* synchronous backends, optional: point to point started without waiting
     * (send/recv with async_op), so that a transfer waiting for its peer never
     * holds up the calls after it (a ring's isend, then recv). p2p_start is
     * called on the caller's thread, in program order (the order MPI matches
     * messages in), and sets *req; p2p_test, on any one thread at a time,
     * sets *done to 1 once the transfer is over and then frees req; an error
     * (a message of another dtype or size) is returned with *done = 1. The
     * engine tests a receive only once the receives posted before it from
     * the same peer are over, and a blocking recv waits for those too: the
     * order MPI would match them in. NULL: async send/recv run blocking on
     * the comm thread, in the queue. */
    wick_status (*p2p_start)(wk_dist_group *g, int is_recv, void *buf, int64_t count, wick_dtype dtype, int peer,
                             int device, void **req);
    wick_status (*p2p_test)(wk_dist_group *g, void *req, int *done);
    /* asynchronous backends, optional: a batch of sends and receives queued
     * as one (NCCL: one ncclGroupStart/End, so none waits for another to be
     * queued), all on `device`; the engine records an event per op after it.
     * A receive whose message has another dtype or size still takes it (into
     * memory of its own) so its peer completes, and the call fails. NULL:
     * each op alone, in order (send, recv). */
    wick_status (*p2p_batch)(wk_dist_group *g, const struct wk_dist_p2p *ops, int n, int device);

    /* asynchronous backends only (NULL for synchronous ones) */
    wick_status (*event_record)(wk_dist_group *g, int device, void **event);
    int (*event_query)(wk_dist_group *g, void *event); /* 1 done, 0 pending, < 0 failed (wick_fail set) */
    wick_status (*event_wait)(wk_dist_group *g, void *event); /* blocks the host until done */
    void (*event_release)(void *event);
} wk_dist_backend;

/* `device` above: the CUDA ordinal of the tensors (-1 for CPU tensors). */

/* The group: what backends may read (the first block) and the engine's own. */
struct wk_dist_group {
    const wk_dist_backend *be;
    void *backend_state; /* the backend's, set by its init */
    int rank, size, local_rank;
    double timeout_s;
    struct wk_dist_engine *engine; /* group.c's: queue, threads, MPI communicator */
};

/* rank root's bytes to every rank's buf (n bytes), over the group's MPI
 * communicator; for backends' init. Blocking. */
wick_status wk_dist_bootstrap_broadcast(wk_dist_group *g, void *buf, size_t n, int root);

/* The backends that exist in this build (mpi.c; nccl.c with CUDA). */
extern const wk_dist_backend wk_dist_mpi_backend;
#ifdef WICK_WITH_CUDA
extern const wk_dist_backend wk_dist_nccl_backend;
/* 1 when NCCL can be used here (libnccl loads and a GPU is present), for
 * init_process_group's default backend; never fails. */
int wk_dist_nccl_usable(void);
#endif

/* ---- the engine (group.c) ---- */
/* wick_dist_init with a backend table of the caller's (tests/test_dist.c
 * runs the engine's asynchronous-backend paths on a stand-in table). */
wick_status wk_dist_init_backend(const wk_dist_backend *be, double timeout_s);
/* Destroys the default group, if any, without reporting (at process exit,
 * before MPI_Finalize). */
void wk_dist_shutdown(void);
/* Why there is no MPI ("" in an MPI build). */
const char *wk_dist_unavailable(void);
/* The most int64 fields a signature check compares. */
#define WK_DIST_MAX_FIELDS 8

/* ---- MPI, the transport under every group (mpi.c) ---- */
/* Process-wide: MPI_Init_thread(MULTIPLE) once (finalized at exit). */
wick_status wk_mpi_start(void);
int wk_mpi_started(void);
/* A communicator for a new group (MPI_Comm_dup of WORLD, errors returned):
 * sets *comm (an opaque MPI_Comm handle), rank, size, local rank. */
wick_status wk_mpi_comm_new(void **comm, int *rank, int *size, int *local_rank);
void wk_mpi_comm_free(void **comm);
/* The engine's signature check, one fixed-size MPI_Allreduce: every rank
 * passes n int64 fields; on return lo[i] / hi[i] are the minimum / maximum of
 * field i over ranks, and *bad is 1 when any two ranks' fields differ. With
 * `payload` (CPU memory, count elements of dtype) the same message carries
 * its first WK_MPI_INLINE_BYTES and reduces them in place with `op` (never
 * AVG) when no rank's fields differ; *carried says how many elements (0 when
 * none): an all_reduce of up to 256 bytes is done in one round trip, a larger
 * one moves the rest in a second. Measured (bench/distributed.sh, Open MPI
 * 4.1 shared memory, 2 ranks): a 4 KiB payload here made the check cost more
 * than the second round trip it saves (4 KiB all_reduce 0.42x raw MPI against
 * 0.67x with 256 bytes; 64 KiB 0.77x against 0.84x): this user-defined op
 * over one big datatype costs Open MPI twice its own op on the same bytes,
 * which the predicted check below uses instead. */
#define WK_MPI_INLINE_BYTES 256
wick_status wk_mpi_check(void *comm, const int64_t *fields, int64_t *lo, int64_t *hi, int n, int *bad,
                         void *payload, wick_dtype dtype, wick_dist_op op, int64_t count, int64_t *carried);
/* The predicted check (group.c: when the ranks' recent calls predict this
 * one): one MPI_Allreduce shaped by the prediction alone, so every rank posts
 * the same message whatever it called. wk_mpi_all_agree: one int; *all is 1
 * when every rank passed mine = 1 (its call is the predicted one).
 * wk_mpi_all_reduce_predicted: for a predicted CPU all_reduce that
 * wk_mpi_predictable accepts (float32, float64, int32 or int64, at most
 * WK_MPI_PREDICT_BYTES): the payload and a flag in one message, reduced with
 * MPI's own op. data: this rank's elements, NULL when its call is not the
 * predicted one; scratch holds count + 1 elements. When *all, data holds the
 * result: the whole all_reduce in one round trip. */
#define WK_MPI_PREDICT_BYTES 16384
int wk_mpi_predictable(wick_dtype dtype, wick_dist_op op, int64_t count);
wick_status wk_mpi_all_agree(void *comm, int mine, int *all);
wick_status wk_mpi_all_reduce_predicted(void *comm, void *data, void *scratch, int64_t count, wick_dtype dtype,
                                        wick_dist_op op, int size, int *all);
wick_status wk_mpi_bcast_bytes(void *comm, void *buf, size_t n, int root);
/* Blocking MPI_Send / MPI_Recv of n bytes (MPI_BYTE) with a tag, for a
 * backend's own headers (nccl.c checks a recv's size and dtype with them);
 * a receive of another size is an error. */
wick_status wk_mpi_send_bytes(void *comm, const void *buf, size_t n, int peer, int tag);
wick_status wk_mpi_recv_bytes(void *comm, void *buf, size_t n, int peer, int tag);
void wk_mpi_abort(int code);
/* The MPI communicator of a group running the mpi backend (backend_state). */
void *wk_dist_group_comm(wk_dist_group *g);

#endif
