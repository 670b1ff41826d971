/* MPI: the transport under every group (start-up, the engine's signature
 * checks, NCCL's bootstrap) and the `mpi` backend, which moves CPU tensors
 * with blocking MPI calls (measured: MPI_Iallreduce polled is 2-4x slower
 * than MPI_Allreduce on this project's machines, so async work runs blocking
 * calls on the group's comm thread instead, group.c). Without MPI (WICK_MPI
 * off) this file only says so. */
#include "dist.h"
#include "../core/internal.h" /* wk_half_to_float, wk_bf16_to_float, ... */

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WICK_WITH_MPI
#include <mpi.h>

typedef struct wk_mpi_comm {
    MPI_Comm comm;
} wk_mpi_comm;

static int we_initialized; /* MPI_Init_thread was ours: finalize at exit */
static MPI_Op half_ops[2][WICK_DIST_NUM_OPS]; /* [0] float16, [1] bfloat16 */
static int half_ops_made;

static wick_status mpi_fail(int rc, const char *what) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
    return wick_fail(WICK_ERR_IO, "wick.distributed: %s failed: %s", what, text);
}
#define MPI_CHECK(call, what)                 \
    do {                                      \
        int rc_ = (call);                     \
        if (rc_ != MPI_SUCCESS) return mpi_fail(rc_, what); \
    } while (0)

/* ---- float16 / bfloat16 reductions: MPI has no such types, so user ops over
 * MPI_UINT16_T that compute in float and round once ---- */
#define HALF_OP(name, to_f, from_f, expr)                                         \
    static void name(void *in, void *inout, int *len, MPI_Datatype *type) {      \
        const uint16_t *a = in;                                                  \
        uint16_t *b = inout;                                                     \
        for (int i = 0; i < *len; i++) {                                         \
            float x = to_f(a[i]), y = to_f(b[i]);                                \
            b[i] = from_f(expr);                                                 \
        }                                                                        \
    }
#define HALF_OPS(prefix, to_f, from_f)                                                  \
    HALF_OP(prefix##_sum, to_f, from_f, x + y)                                          \
    HALF_OP(prefix##_max, to_f, from_f, (x != x || x > y) ? x : y)                      \
    HALF_OP(prefix##_min, to_f, from_f, (x != x || x < y) ? x : y)                      \
    HALF_OP(prefix##_prod, to_f, from_f, x * y)
HALF_OPS(f16, wk_half_to_float, wk_float_to_half)
HALF_OPS(bf16, wk_bf16_to_float, wk_float_to_bf16)

static wick_status make_half_ops(void) {
    MPI_User_function *fns[2][WICK_DIST_NUM_OPS] = {
        {f16_sum, f16_sum, f16_max, f16_min, f16_prod}, {bf16_sum, bf16_sum, bf16_max, bf16_min, bf16_prod}};
    for (int h = 0; h < 2; h++)
        for (int op = 0; op < WICK_DIST_NUM_OPS; op++)
            MPI_CHECK(MPI_Op_create(fns[h][op], 1, &half_ops[h][op]), "MPI_Op_create");
    half_ops_made = 1;
    return WICK_OK;
}

static MPI_Datatype mpi_type(wick_dtype dt) {
    switch (dt) {
    case WICK_FLOAT32: return MPI_FLOAT;
    case WICK_FLOAT64: return MPI_DOUBLE;
    case WICK_INT64: return MPI_INT64_T;
    case WICK_INT32: return MPI_INT32_T;
    case WICK_FLOAT16:
    case WICK_BFLOAT16: return MPI_UINT16_T;
    default: return MPI_UINT8_T; /* uint8, bool */
    }
}

/* bool: sum and max are "or", product and min "and" (values are 0 or 1) */
static MPI_Op mpi_op(wick_dtype dt, wick_dist_op op) {
    if (dt == WICK_FLOAT16 || dt == WICK_BFLOAT16) return half_ops[dt == WICK_BFLOAT16][op];
    if (dt == WICK_BOOL) return (op == WICK_DIST_SUM || op == WICK_DIST_MAX) ? MPI_MAX : MPI_MIN;
    switch (op) {
    case WICK_DIST_MAX: return MPI_MAX;
    case WICK_DIST_MIN: return MPI_MIN;
    case WICK_DIST_PRODUCT: return MPI_PROD;
    default: return MPI_SUM;
    }
}

static wick_status make_check_op(void);

/* A rank that exits with a failure status while its group is initialized
 * (os.exit(1), an uncaught error under a plain `luajit`; the runner aborts
 * before it gets here) ends the whole job at once: MPI_Finalize would wait
 * for peers that may be waiting in a collective for this rank until their
 * watchdogs fire. A clean exit finalizes as usual. */
static void abort_if_failing(int status) {
    int rank = -1;
    if (status == 0 || !wick_dist_is_initialized() || wick_dist_rank(&rank) != WICK_OK) return;
    fprintf(stderr,
            "[rank %d] wick.distributed: this process is exiting with status %d while its process group is "
            "initialized: ending the whole job, so that no rank waits for it\n",
            rank, status);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
}

static void finalize_at_exit_status(int status) {
    abort_if_failing(status);
    wk_dist_shutdown(); /* the default group's threads first */
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Finalize();
}

/* glibc's on_exit passes the exit status; elsewhere atexit cannot see it.
 * (Unlike atexit, on_exit does not run when the library that registered it
 * is unloaded: the modules and libwick.so are linked -z nodelete, CMakeLists.txt.) */
#ifdef __GLIBC__
static void finalize_on_exit(int status, void *arg) {
    (void)arg;
    finalize_at_exit_status(status);
}
#define REGISTER_FINALIZE() on_exit(finalize_on_exit, NULL)
#else
static void finalize_at_exit(void) { finalize_at_exit_status(0); }
#define REGISTER_FINALIZE() atexit(finalize_at_exit)
#endif

wick_status wk_mpi_start(void) {
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (fin)
        return wick_fail(WICK_ERR_UNSUPPORTED,
                         "wick.distributed.init_process_group: MPI was finalized in this process already");
    if (!inited) {
        int provided = 0;
        MPI_CHECK(MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
        we_initialized = 1;
        REGISTER_FINALIZE();
        if (provided < MPI_THREAD_MULTIPLE)
            return wick_fail(WICK_ERR_UNSUPPORTED,
                             "wick.distributed.init_process_group: this MPI does not provide MPI_THREAD_MULTIPLE "
                             "(got level %d), which wick's comm and watchdog threads need",
                             provided);
    } else {
        int provided = 0;
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_MULTIPLE)
            return wick_fail(WICK_ERR_UNSUPPORTED,
                             "wick.distributed.init_process_group: MPI was initialized by the host without "
                             "MPI_THREAD_MULTIPLE (level %d), which wick's comm and watchdog threads need",
                             provided);
    }
    if (!half_ops_made) {
        wick_status st = make_half_ops();
        if (!st) st = make_check_op();
        return st;
    }
    return WICK_OK;
}

int wk_mpi_started(void) {
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    return inited && !fin;
}

static int env_int(const char *name, int *out) {
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > INT_MAX) return 0;
    *out = (int)x;
    return 1;
}

wick_status wk_mpi_comm_new(void **comm, int *rank, int *size, int *local_rank) {
    wk_mpi_comm *c = calloc(1, sizeof *c);
    if (!c) return wick_fail(WICK_ERR_OOM, "wick.distributed: out of memory");
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
    if (rc != MPI_SUCCESS) {
        free(c);
        return mpi_fail(rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(c->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(c->comm, rank);
    MPI_Comm_size(c->comm, size);
    if (!env_int("OMPI_COMM_WORLD_LOCAL_RANK", local_rank)) {
        MPI_Comm node;
        rc = MPI_Comm_split_type(c->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        if (rc != MPI_SUCCESS) {
            MPI_Comm_free(&c->comm);
            free(c);
            return mpi_fail(rc, "MPI_Comm_split_type");
        }
        MPI_Comm_rank(node, local_rank);
        MPI_Comm_free(&node);
    }
    *comm = c;
    return WICK_OK;
}

void wk_mpi_comm_free(void **comm) {
    wk_mpi_comm *c = *comm;
    if (!c) return;
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Comm_free(&c->comm);
    free(c);
    *comm = NULL;
}

/* ---- the signature check: one message of a fixed size ----
 * Every rank's check is one MPI_Allreduce of one check_msg, whatever the
 * collective, so ranks that disagree still meet in it (never a count that
 * differs, never a hang). It carries the fields and their negations (so the
 * max of both gives each field's max and min) and, for a small all_reduce,
 * the payload itself (all of it up to 256 bytes, else its first 256): when
 * every partial result agrees on the signature, the op reduces the payload
 * too, so a small all_reduce is done in one round trip instead of two. */
typedef struct check_msg {
    int64_t n, bad;                     /* fields in use; 1 once two partial results disagreed */
    int64_t f[2 * WK_DIST_MAX_FIELDS];  /* fields, then their negations */
    int64_t pdtype, pop, pcount;        /* the payload: dtype, op, elements (0: none) */
    unsigned char payload[WK_MPI_INLINE_BYTES];
} check_msg;
static MPI_Datatype check_type;
static MPI_Op check_op;

/* b = a op b over n elements of dtype (the inline payload) */
#define RED_CASES(T, U)                                                            \
    {                                                                              \
        const T *x = a;                                                            \
        T *y = b;                                                                  \
        for (int64_t i = 0; i < n; i++) {                                          \
            if (op == WICK_DIST_MAX) y[i] = x[i] > y[i] ? x[i] : y[i];             \
            else if (op == WICK_DIST_MIN) y[i] = x[i] < y[i] ? x[i] : y[i];        \
            else if (op == WICK_DIST_PRODUCT) y[i] = (T)((U)x[i] * (U)y[i]);       \
            else y[i] = (T)((U)x[i] + (U)y[i]);                                    \
        }                                                                          \
    }                                                                              \
    break;
static void reduce_inline(const void *a, void *b, int64_t dtype, int64_t op, int64_t n) {
    int len = (int)n;
    switch ((wick_dtype)dtype) {
    case WICK_FLOAT32: RED_CASES(float, float)
    case WICK_FLOAT64: RED_CASES(double, double)
    case WICK_INT64: RED_CASES(int64_t, uint64_t)
    case WICK_INT32: RED_CASES(int32_t, uint32_t)
    case WICK_UINT8: RED_CASES(uint8_t, uint32_t)
    case WICK_BOOL: {
        const uint8_t *x = a;
        uint8_t *y = b;
        int any = op == WICK_DIST_SUM || op == WICK_DIST_MAX;
        for (int64_t i = 0; i < n; i++) y[i] = any ? (x[i] | y[i]) : (x[i] & y[i]);
        break;
    }
    case WICK_FLOAT16:
    case WICK_BFLOAT16: {
        int h = dtype == WICK_BFLOAT16;
        MPI_User_function *fns[2][4] = {{f16_sum, f16_max, f16_min, f16_prod}, {bf16_sum, bf16_max, bf16_min, bf16_prod}};
        int k = op == WICK_DIST_MAX ? 1 : op == WICK_DIST_MIN ? 2 : op == WICK_DIST_PRODUCT ? 3 : 0;
        fns[h][k]((void *)a, b, &len, NULL);
        break;
    }
    default: break;
    }
}

static void check_reduce(void *in, void *inout, int *len, MPI_Datatype *type) {
    for (int m = 0; m < *len; m++) {
        const check_msg *a = (const check_msg *)in + m;
        check_msg *b = (check_msg *)inout + m;
        /* partial results of ranks that agree are identical, fields, negations and all */
        int same = !a->bad && !b->bad && a->n == b->n && memcmp(a->f, b->f, sizeof a->f) == 0 &&
                   a->pdtype == b->pdtype && a->pop == b->pop && a->pcount == b->pcount &&
                   b->pcount >= 0 && b->pcount * (int64_t)wick_dtype_size((wick_dtype)b->pdtype) <= WK_MPI_INLINE_BYTES;
        if (same && b->pcount > 0) reduce_inline(a->payload, b->payload, b->pdtype, b->pop, b->pcount);
        if (!same) b->bad = 1;
        for (int i = 0; i < 2 * WK_DIST_MAX_FIELDS; i++) b->f[i] = a->f[i] > b->f[i] ? a->f[i] : b->f[i];
    }
}

static wick_status make_check_op(void) {
    MPI_CHECK(MPI_Type_contiguous((int)sizeof(check_msg), MPI_BYTE, &check_type), "MPI_Type_contiguous");
    MPI_CHECK(MPI_Type_commit(&check_type), "MPI_Type_commit");
    MPI_CHECK(MPI_Op_create(check_reduce, 1, &check_op), "MPI_Op_create");
    return WICK_OK;
}

wick_status wk_mpi_check(void *comm, const int64_t *fields, int64_t *lo, int64_t *hi, int n, int *bad,
                         void *payload, wick_dtype dtype, wick_dist_op op, int64_t count, int64_t *carried) {
    check_msg m;
    memset(&m, 0, offsetof(check_msg, payload));
    m.n = n;
    for (int i = 0; i < WK_DIST_MAX_FIELDS; i++) {
        int64_t v = i < n ? fields[i] : 0;
        m.f[i] = v;
        m.f[WK_DIST_MAX_FIELDS + i] = -v;
    }
    size_t esize = wick_dtype_size(dtype);
    int64_t take = payload && count > 0 && esize ? count : 0;
    if (take > (int64_t)(WK_MPI_INLINE_BYTES / (esize ? esize : 1))) take = (int64_t)(WK_MPI_INLINE_BYTES / esize);
    if (take) {
        m.pdtype = dtype;
        m.pop = op;
        m.pcount = take;
        memcpy(m.payload, payload, (size_t)take * esize);
    }
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &m, 1, check_type, check_op, ((wk_mpi_comm *)comm)->comm),
              "MPI_Allreduce (the signature check)");
    for (int i = 0; i < n; i++) {
        hi[i] = m.f[i];
        lo[i] = -m.f[WK_DIST_MAX_FIELDS + i];
    }
    *bad = (int)m.bad;
    *carried = take && !m.bad ? take : 0;
    if (*carried) memcpy(payload, m.payload, (size_t)take * esize);
    return WICK_OK;
}

/* ---- the predicted check (group.c says when it runs) ----
 * One MPI_Allreduce that every rank posts alike, its shape fixed by the
 * prediction alone, whatever the rank's own call. Each rank contributes a flag
 * in the message's own dtype that MPI's own op turns into "every rank made
 * the predicted call": 1 or 0 summed (all when the sum is the world size), 1
 * or 0 for min and product (all when 1), -1 or 0 for max (all when -1). */
int wk_mpi_predictable(wick_dtype dtype, wick_dist_op op, int64_t count) {
    int exact = dtype == WICK_FLOAT32 || dtype == WICK_FLOAT64 || dtype == WICK_INT32 || dtype == WICK_INT64;
    return exact && op != WICK_DIST_AVG && count >= 0 &&
           count <= (int64_t)(WK_MPI_PREDICT_BYTES / wick_dtype_size(dtype));
}

static void put_flag(void *p, wick_dtype dt, int v) {
    switch (dt) {
    case WICK_FLOAT32: *(float *)p = (float)v; break;
    case WICK_FLOAT64: *(double *)p = v; break;
    case WICK_INT32: *(int32_t *)p = v; break;
    default: *(int64_t *)p = v; break; /* int64 (wk_mpi_predictable) */
    }
}

static double get_flag(const void *p, wick_dtype dt) {
    switch (dt) {
    case WICK_FLOAT32: return *(const float *)p;
    case WICK_FLOAT64: return *(const double *)p;
    case WICK_INT32: return *(const int32_t *)p;
    default: return (double)*(const int64_t *)p;
    }
}

wick_status wk_mpi_all_agree(void *comm, int mine, int *all) {
    int v = mine ? 1 : 0;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, ((wk_mpi_comm *)comm)->comm),
              "MPI_Allreduce (the predicted check)");
    *all = v == 1;
    return WICK_OK;
}

wick_status wk_mpi_all_reduce_predicted(void *comm, void *data, void *scratch, int64_t count, wick_dtype dtype,
                                        wick_dist_op op, int size, int *all) {
    size_t bytes = (size_t)count * wick_dtype_size(dtype);
    int yes = op == WICK_DIST_MAX ? -1 : 1;
    if (data) memcpy(scratch, data, bytes);
    else memset(scratch, 0, bytes);
    put_flag((char *)scratch + bytes, dtype, data ? yes : 0);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, scratch, (int)count + 1, mpi_type(dtype), mpi_op(dtype, op),
                            ((wk_mpi_comm *)comm)->comm),
              "MPI_Allreduce (the predicted all_reduce)");
    *all = get_flag((char *)scratch + bytes, dtype) == (op == WICK_DIST_SUM ? size : yes);
    if (*all) memcpy(data, scratch, bytes);
    return WICK_OK;
}

wick_status wk_mpi_bcast_bytes(void *comm, void *buf, size_t n, int root) {
    if (n > INT_MAX) return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed: bootstrap message too large");
    MPI_CHECK(MPI_Bcast(buf, (int)n, MPI_BYTE, root, ((wk_mpi_comm *)comm)->comm), "MPI_Bcast");
    return WICK_OK;
}

wick_status wk_mpi_send_bytes(void *comm, const void *buf, size_t n, int peer, int tag) {
    if (n > INT_MAX) return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed: message too large");
    MPI_CHECK(MPI_Send(buf, (int)n, MPI_BYTE, peer, tag, ((wk_mpi_comm *)comm)->comm), "MPI_Send");
    return WICK_OK;
}

wick_status wk_mpi_recv_bytes(void *comm, void *buf, size_t n, int peer, int tag) {
    if (n > INT_MAX) return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed: message too large");
    MPI_Status st;
    MPI_CHECK(MPI_Recv(buf, (int)n, MPI_BYTE, peer, tag, ((wk_mpi_comm *)comm)->comm, &st), "MPI_Recv");
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if ((size_t)got != n)
        return wick_fail(WICK_ERR_SHAPE, "wick.distributed: rank %d sent %d bytes, %zu expected", peer, got, n);
    return WICK_OK;
}

void wk_mpi_abort(int code) {
    if (wk_mpi_started()) MPI_Abort(MPI_COMM_WORLD, code);
}

/* ---- the mpi backend ---- */

static MPI_Comm comm_of(wk_dist_group *g) { return ((wk_mpi_comm *)wk_dist_group_comm(g))->comm; }

static wick_status too_large(int64_t count) {
    return wick_fail(WICK_ERR_UNSUPPORTED,
                     "wick.distributed: the mpi backend moves at most %d elements per rank in one call, got %lld",
                     INT_MAX, (long long)count);
}

static wick_status mpi_init(wk_dist_group *g) { return WICK_OK; }
static void mpi_destroy(wk_dist_group *g) {}

static wick_status mpi_all_reduce(wk_dist_group *g, void *buf, int64_t count, wick_dtype dt, wick_dist_op op,
                                  int device) {
    if (count > INT_MAX) return too_large(count);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(dt), mpi_op(dt, op), comm_of(g)),
              "MPI_Allreduce");
    return WICK_OK;
}

static wick_status mpi_broadcast(wk_dist_group *g, void *buf, int64_t count, wick_dtype dt, int root, int device) {
    if (count > INT_MAX) return too_large(count);
    MPI_CHECK(MPI_Bcast(buf, (int)count, mpi_type(dt), root, comm_of(g)), "MPI_Bcast");
    return WICK_OK;
}

static wick_status mpi_all_gather(wk_dist_group *g, const void *send, void *recv, int64_t count, wick_dtype dt,
                                  int device) {
    if (count > INT_MAX) return too_large(count);
    MPI_Datatype t = mpi_type(dt);
    MPI_CHECK(MPI_Allgather(send, (int)count, t, recv, (int)count, t, comm_of(g)), "MPI_Allgather");
    return WICK_OK;
}

static wick_status mpi_reduce_scatter(wk_dist_group *g, const void *send, void *recv, int64_t count,
                                      wick_dtype dt, wick_dist_op op, int device) {
    if (count > INT_MAX) return too_large(count);
    MPI_CHECK(MPI_Reduce_scatter_block(send, recv, (int)count, mpi_type(dt), mpi_op(dt, op), comm_of(g)),
              "MPI_Reduce_scatter_block");
    return WICK_OK;
}

/* A message's tag carries its dtype, so the receiver can check it. */
#define TAG_BASE 1000

static wick_status mpi_send(wk_dist_group *g, const void *buf, int64_t count, wick_dtype dt, int peer, int device) {
    if (count > INT_MAX) return too_large(count);
    MPI_CHECK(MPI_Send(buf, (int)count, mpi_type(dt), peer, TAG_BASE + (int)dt, comm_of(g)), "MPI_Send");
    return WICK_OK;
}

/* A message of `bytes` bytes with tag TAG_BASE + sent_dtype arrived for a
 * tensor of `count` elements of dt: WICK_OK when it fits, else the error. */
static wick_status recv_matches(int peer, int sent_dtype, int bytes, int64_t count, wick_dtype dt) {
    if (sent_dtype == (int)dt && (int64_t)bytes == count * (int64_t)wick_dtype_size(dt)) return WICK_OK;
    if (sent_dtype < 0 || sent_dtype >= WICK_NUM_DTYPES)
        return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.recv: rank %d sent a message that is not wick's", peer);
    size_t ssize = wick_dtype_size((wick_dtype)sent_dtype);
    return wick_fail(WICK_ERR_SHAPE,
                     "wick.distributed.recv: rank %d sent %lld elements of %s, but the tensor holds %lld of %s "
                     "(send and recv need the same dtype and number of elements)",
                     peer, (long long)(bytes / (int)ssize), wick_dtype_name((wick_dtype)sent_dtype), (long long)count,
                     wick_dtype_name(dt));
}

/* Probes first: a message of another dtype or size is received into scratch
 * memory (so the sender completes) and reported. */
static wick_status mpi_recv(wk_dist_group *g, void *buf, int64_t count, wick_dtype dt, int peer, int device) {
    if (count > INT_MAX) return too_large(count);
    MPI_Message msg;
    MPI_Status st;
    MPI_CHECK(MPI_Mprobe(peer, MPI_ANY_TAG, comm_of(g), &msg, &st), "MPI_Mprobe");
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    if (recv_matches(peer, st.MPI_TAG - TAG_BASE, bytes, count, dt)) {
        void *scratch = malloc(bytes > 0 ? (size_t)bytes : 1);
        if (!scratch) return wick_fail(WICK_ERR_OOM, "wick.distributed.recv: out of memory");
        int rc = MPI_Mrecv(scratch, bytes, MPI_BYTE, &msg, &st);
        free(scratch);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Mrecv");
        return recv_matches(peer, st.MPI_TAG - TAG_BASE, bytes, count, dt);
    }
    MPI_CHECK(MPI_Mrecv(buf, (int)count, mpi_type(dt), &msg, &st), "MPI_Mrecv");
    return WICK_OK;
}

/* async send/recv. A send is MPI_Isend, posted at once. A receive probes
 * (MPI_Improbe) each time it is tested until its message is there, checks it
 * as mpi_recv does (a message of another dtype or size is taken into scratch
 * memory and reported: Open MPI 4.1's single-copy path writes a truncated
 * message past the buffer), then receives it (MPI_Imrecv). The engine tests
 * the receives from one peer in the order they were posted. */
typedef struct {
    MPI_Request req; /* MPI_REQUEST_NULL: a receive not matched yet */
    int is_recv, peer;
    void *buf;
    int64_t count;
    wick_dtype dtype;
} mpi_p2p;

static wick_status mpi_p2p_start(wk_dist_group *g, int is_recv, void *buf, int64_t count, wick_dtype dt, int peer,
                                 int device, void **out) {
    if (count > INT_MAX) return too_large(count);
    mpi_p2p *p = malloc(sizeof *p);
    if (!p) return wick_fail(WICK_ERR_OOM, "wick.distributed.%s: out of memory", is_recv ? "recv" : "send");
    *p = (mpi_p2p){MPI_REQUEST_NULL, is_recv, peer, buf, count, dt};
    if (!is_recv) {
        int rc = MPI_Isend(buf, (int)count, mpi_type(dt), peer, TAG_BASE + (int)dt, comm_of(g), &p->req);
        if (rc != MPI_SUCCESS) {
            free(p);
            return mpi_fail(rc, "MPI_Isend");
        }
    }
    *out = p;
    return WICK_OK;
}

/* A receive's message, if it has come: checked, then received or reported.
 * *done: 1 when the receive is over (an error); else p->req is set once matched. */
static wick_status recv_match(wk_dist_group *g, mpi_p2p *p, int *done) {
    int found = 0;
    MPI_Message msg;
    MPI_Status st;
    MPI_CHECK(MPI_Improbe(p->peer, MPI_ANY_TAG, comm_of(g), &found, &msg, &st), "MPI_Improbe");
    if (!found) return WICK_OK;
    int bytes = 0;
    MPI_Get_count(&st, MPI_BYTE, &bytes);
    if (recv_matches(p->peer, st.MPI_TAG - TAG_BASE, bytes, p->count, p->dtype)) {
        *done = 1;
        void *scratch = malloc(bytes > 0 ? (size_t)bytes : 1);
        if (!scratch) return wick_fail(WICK_ERR_OOM, "wick.distributed.recv: out of memory");
        int rc = MPI_Mrecv(scratch, bytes, MPI_BYTE, &msg, &st);
        free(scratch);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, "MPI_Mrecv");
        return recv_matches(p->peer, st.MPI_TAG - TAG_BASE, bytes, p->count, p->dtype);
    }
    MPI_CHECK(MPI_Imrecv(p->buf, (int)p->count, mpi_type(p->dtype), &msg, &p->req), "MPI_Imrecv");
    return WICK_OK;
}

static wick_status mpi_p2p_test(wk_dist_group *g, void *req, int *done) {
    mpi_p2p *p = req;
    wick_status st = WICK_OK;
    *done = 0;
    if (p->is_recv && p->req == MPI_REQUEST_NULL) st = recv_match(g, p, done);
    if (!st && !*done && p->req != MPI_REQUEST_NULL) {
        int rc = MPI_Test(&p->req, done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            *done = 1;
            st = mpi_fail(rc, p->is_recv ? "MPI_Imrecv" : "MPI_Isend");
        }
    }
    if (st) *done = 1;
    if (*done) free(p);
    return st;
}

static wick_status mpi_barrier(wk_dist_group *g, int device) {
    MPI_CHECK(MPI_Barrier(comm_of(g)), "MPI_Barrier");
    return WICK_OK;
}

const wk_dist_backend wk_dist_mpi_backend = {
    .name = "mpi",
    .device_type = WICK_CPU,
    .asynchronous = 0,
    .init = mpi_init,
    .destroy = mpi_destroy,
    .all_reduce = mpi_all_reduce,
    .broadcast = mpi_broadcast,
    .all_gather = mpi_all_gather,
    .reduce_scatter = mpi_reduce_scatter,
    .send = mpi_send,
    .recv = mpi_recv,
    .barrier = mpi_barrier,
    .p2p_start = mpi_p2p_start,
    .p2p_test = mpi_p2p_test,
};

#else /* no MPI: the layer builds, and every entry says why it cannot run */

static wick_status no_mpi(void) { return wick_fail(WICK_ERR_UNSUPPORTED, "wick.distributed: %s", wk_dist_unavailable()); }
wick_status wk_mpi_start(void) { return no_mpi(); }
int wk_mpi_started(void) { return 0; }
wick_status wk_mpi_comm_new(void **comm, int *rank, int *size, int *local_rank) { return no_mpi(); }
void wk_mpi_comm_free(void **comm) {}
wick_status wk_mpi_check(void *comm, const int64_t *fields, int64_t *lo, int64_t *hi, int n, int *bad,
                         void *payload, wick_dtype dtype, wick_dist_op op, int64_t count, int64_t *carried) {
    return no_mpi();
}
int wk_mpi_predictable(wick_dtype dtype, wick_dist_op op, int64_t count) { return 0; }
wick_status wk_mpi_all_agree(void *comm, int mine, int *all) { return no_mpi(); }
wick_status wk_mpi_all_reduce_predicted(void *comm, void *data, void *scratch, int64_t count, wick_dtype dtype,
                                        wick_dist_op op, int size, int *all) {
    return no_mpi();
}
wick_status wk_mpi_bcast_bytes(void *comm, void *buf, size_t n, int root) { return no_mpi(); }
wick_status wk_mpi_send_bytes(void *comm, const void *buf, size_t n, int peer, int tag) { return no_mpi(); }
wick_status wk_mpi_recv_bytes(void *comm, void *buf, size_t n, int peer, int tag) { return no_mpi(); }
void wk_mpi_abort(int code) {}
const wk_dist_backend wk_dist_mpi_backend = {.name = "mpi", .device_type = WICK_CPU};

#endif
