/*
 * wick_dist.h — distributed collectives (the dist layer, src/dist/), part of
 * libwick's C API. Included by wick.h; a C host uses it as it uses wick.h.
 *
 * One process group per process (the default group, as torch.distributed's):
 * wick_dist_init starts it over MPI (the processes were started by mpirun or
 * srun; a program started alone is a world of one), wick_dist_destroy ends it.
 * Ranks are 0-based (MPI ranks). Backends: "mpi" moves CPU tensors, "nccl"
 * moves CUDA tensors (bootstrapped over MPI).
 *
 * Every collective works in place on tensors of any dtype and layout (a
 * non-contiguous tensor is staged through a contiguous copy and written back)
 * and must be called by every rank of the group in the same order with the
 * same sizes and dtypes. Sizes, dtypes, ops or roots that differ across ranks
 * are an error on every rank (WICK_ERR_SHAPE, the group stays usable), never
 * garbage or a hang. A collective that does not complete within the group's
 * timeout (another rank stopped, crashed or never called it) makes the
 * group's watchdog print "wick.distributed: rank R: <op> #N did not complete
 * within T s ..." and abort the whole job (MPI_Abort, non-zero exit).
 *
 * `work`: NULL runs the collective synchronously (it has finished, or for an
 * asynchronous backend such as NCCL it is queued on the device's stream, when
 * the call returns). Non-NULL: the call returns at once with *work set to a
 * handle the caller owns (wick_dist_work_release); the tensors are kept alive
 * until the work is done, and must not be touched before wick_dist_work_wait.
 * Errors found before the work is queued (arguments, devices) are returned by
 * the call; errors of the transfer itself by wick_dist_work_wait.
 */
#ifndef WICK_DIST_H
#define WICK_DIST_H

#include "wick.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wick_dist_op {
    WICK_DIST_SUM = 0,
    WICK_DIST_AVG, /* the sum divided by the world size (floating dtypes only) */
    WICK_DIST_MAX,
    WICK_DIST_MIN,
    WICK_DIST_PRODUCT,
    WICK_DIST_NUM_OPS
} wick_dist_op;

/* "sum", "avg", "max", "min", "product"; NULL for a value outside the enum. */
WICK_API const char *wick_dist_op_name(wick_dist_op op);
/* Parses one of those names; an error lists them. */
WICK_API wick_status wick_dist_op_parse(const char *name, wick_dist_op *out);

typedef struct wick_dist_work wick_dist_work;

/* 1 when wick was built with MPI (WICK_MPI), else 0. */
WICK_API int wick_dist_is_available(void);
/* Why wick_dist_is_available() is 0 ("" when it is 1). */
WICK_API const char *wick_dist_unavailable_reason(void);
/* Starts the default group. backend: "mpi", "nccl", or NULL (NCCL when the
 * current device is CUDA and NCCL loads, else MPI). timeout_s <= 0: 60 s.
 * MPI is initialized on the first call (MPI_THREAD_MULTIPLE) and finalized at
 * process exit. An error when a group is already initialized. */
WICK_API wick_status wick_dist_init(const char *backend, double timeout_s);
WICK_API int wick_dist_is_initialized(void);
/* Ends the default group (waits for its queued work first). */
WICK_API wick_status wick_dist_destroy(void);
/* The group's values; an error (and -1) when no group is initialized. */
WICK_API wick_status wick_dist_rank(int *rank);
WICK_API wick_status wick_dist_world_size(int *size);
/* The rank among the processes of this machine (OMPI_COMM_WORLD_LOCAL_RANK,
 * else MPI's shared-memory split of the group). */
WICK_API wick_status wick_dist_local_rank(int *rank);
/* "mpi" or "nccl"; an error when no group is initialized. */
WICK_API wick_status wick_dist_backend(const char **name);
/* The group's timeout in seconds. */
WICK_API wick_status wick_dist_timeout(double *seconds);
/* How the group's signature checks ran so far: `predicted` passed the
 * predicted check (the ranks' recent calls predicted this one: a one-element
 * message, or for a small CPU all_reduce none beyond its own), `full` took the
 * full check (docs/architecture.md, the dist layer). */
WICK_API wick_status wick_dist_check_counts(uint64_t *predicted, uint64_t *full);

/* ---- collectives (see above for `work`) ---- */
/* t = op over ranks of t. */
WICK_API wick_status wick_dist_all_reduce(wick_tensor *t, wick_dist_op op, wick_dist_work **work);
/* The synchronous all_reduce as a fast path for LuaJIT's FFI (the Lua
 * binding's; a small all_reduce is short enough that the classic C API call
 * shows): 1 without doing anything when it is not for it (no group, the
 * profiler recording, t NULL), else wick_dist_all_reduce(t, op, NULL): 0 when
 * done, -1 when it failed (wick_last_error() says why: the same error). */
WICK_API int wick_dist_try_all_reduce(wick_tensor *t, wick_dist_op op);
/* t = rank src's t. */
WICK_API wick_status wick_dist_broadcast(wick_tensor *t, int src, wick_dist_work **work);
/* outs[r] = rank r's t, for n == world size tensors of t's shape and dtype. */
WICK_API wick_status wick_dist_all_gather(wick_tensor *const *outs, int n, wick_tensor *t,
                                          wick_dist_work **work);
/* out (world size * t's elements, t's dtype) = the ranks' t, rank order, row-major. */
WICK_API wick_status wick_dist_all_gather_into_tensor(wick_tensor *out, wick_tensor *t,
                                                      wick_dist_work **work);
/* out = this rank's share of op over ranks of t (t: world size * out's elements). */
WICK_API wick_status wick_dist_reduce_scatter_tensor(wick_tensor *out, wick_tensor *t, wick_dist_op op,
                                                     wick_dist_work **work);
WICK_API wick_status wick_dist_barrier(wick_dist_work **work);
/* Point to point: the receiver's tensor must have the sender's dtype and element count. */
WICK_API wick_status wick_dist_send(wick_tensor *t, int dst, wick_dist_work **work);
WICK_API wick_status wick_dist_recv(wick_tensor *t, int src, wick_dist_work **work);

/* One transfer of wick_dist_batch_isend_irecv. */
typedef struct wick_dist_p2p_op {
    int is_recv;        /* 0: send tensor to peer; 1: receive tensor from peer */
    wick_tensor *tensor;
    int peer;
} wick_dist_p2p_op;
/* Starts n >= 1 sends and receives together and sets works[0 .. n) to their
 * handles (each the caller's), as torch.distributed.batch_isend_irecv: no
 * transfer of the batch waits for another to start, so a ring whose ranks all
 * send before they receive never deadlocks, on MPI or NCCL (one NCCL group).
 * Every op is checked first (tensor, peer, device; for NCCL one device for
 * all); on an error nothing is started and works[] are NULL. A receive whose
 * sender sent another dtype or size fails at its wait (NCCL: at the call). */
WICK_API wick_status wick_dist_batch_isend_irecv(const wick_dist_p2p_op *ops, int n, wick_dist_work **works);

/* Waits for the work; returns its error, if it failed (every call returns it). */
WICK_API wick_status wick_dist_work_wait(wick_dist_work *work);
/* 1 when the work has finished (successfully or not), else 0. */
WICK_API int wick_dist_work_is_completed(wick_dist_work *work);
/* Seconds the work's transfer ran (for MPI: on the comm thread, from the
 * start of its signature check to the end of the MPI call and the copy back;
 * for NCCL: from queueing to when the engine saw its event done); -1 while
 * it is pending. */
WICK_API double wick_dist_work_seconds(wick_dist_work *work);
/* Drops the caller's reference (NULL is fine). Pending work still completes. */
WICK_API void wick_dist_work_release(wick_dist_work *work);

/* Ends the whole job: prints "msg" (when not NULL) to stderr and calls
 * MPI_Abort with `code` when MPI is initialized, else exits with `code`.
 * For a host whose rank failed (build/wick calls it on an uncaught error while
 * a group is initialized). Never returns. */
WICK_API void wick_dist_abort(int code, const char *msg);

#ifdef __cplusplus
}
#endif
#endif /* WICK_DIST_H */
