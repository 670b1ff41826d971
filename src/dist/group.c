/* The dist engine: the default process group, its comm thread and watchdog,
 * the checks every collective makes (devices, shapes, dtypes; the signature
 * compared across ranks), staging of non-contiguous tensors, avg, and the
 * public C API of include/wick_dist.h. The backends (mpi.c, nccl.c) move
 * contiguous buffers only (dist.h says what they may assume).
 *
 * Ordering: every rank must issue collectives in program order. A synchronous
 * call runs inline on the calling thread when nothing is queued (no thread
 * hop: the measured cost of a small all_reduce is the MPI call's); otherwise
 * it queues behind the async work and waits. Async work (async_op) runs in
 * order on the group's one comm thread with blocking MPI calls; but an async
 * send or recv starts at once on the caller's thread (the backend's
 * p2p_start: MPI_Isend / MPI_Irecv, in program order), so that a ring's
 * isend-then-recv never waits for itself. Its transfer is tested (p2p_test)
 * by work:wait() and is_completed(), by the watchdog on every look, and
 * before the group goes.
 *
 * The watchdog: a thread that looks every timeout/20 (at most 0.5 s) at the
 * op running now (its sequence number and start time are atomics the running
 * thread writes, so a collective costs no wake-up); one running past the
 * timeout prints "wick.distributed: rank R: <op> #N did not complete within
 * T s ..." and aborts the job (MPI_Abort). For asynchronous backends it polls
 * the events of the outstanding work instead. */
#include "dist.h"
#ifdef WICK_DIST_NCCL
#include "nccl_backend.h" /* wk_dist_nccl_abort */
#endif

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum kind { K_ALL_REDUCE = 1, K_BROADCAST, K_ALL_GATHER, K_ALL_GATHER_INTO, K_REDUCE_SCATTER, K_BARRIER, K_SEND, K_RECV };
static const char *const kind_names[] = {"?",       "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
                                         "reduce_scatter_tensor", "barrier", "send", "recv"};

struct wick_dist_work {
    int refs; /* atomic: the caller's handle, the queue's, the pending list's */
    wk_dist_group *g;          /* may be destroyed before the work's last release */
    const wk_dist_backend *be; /* g's backend (a static table): releases the event without g */
    enum kind kind;
    uint64_t seq;
    wick_dist_op op; /* never AVG here: `divide` says so */
    int peer, device, divide;
    wick_dtype dtype;
    int64_t count;
    wick_tensor *send, *recv; /* contiguous buffers (retained); send may be recv */
    wick_tensor *target;      /* where the result goes when recv is a staging copy (retained) */
    wick_tensor **outs;       /* all_gather's list (retained each) */
    int nouts;
    int heap;                  /* malloc'd (async, or an asynchronous backend's op) */
    int64_t carried;           /* elements the signature check's message carried and reduced (a prefix) */
    int done;                  /* atomic */
    wick_status status;
    void *event;               /* asynchronous backends */
    void *req;                 /* an async send/recv's transfer (p2p_start), until p2p_test says done */
    int64_t start_ns, end_ns;  /* the transfer's start and end (end: when seen done) */
    wick_dist_work *next;      /* queue or pending list */
    char msg[1024];            /* the error (work_finish); last: WORK_INIT leaves it unwritten */
};

/* A call's work on its stack: zeroed but for the message, which only a
 * failure writes (a small all_reduce's whole engine cost is some 200 ns) */
#define WORK_INIT(w)                                              wick_dist_work w;                                             memset(&w, 0, offsetof(wick_dist_work, msg));                 w.msg[0] = '\0'

#define SIG_FIELDS 5      /* a call's signature: kind, dtype, count, op * 2 + divide, peer */
#define PREDICT_SLOTS 64

struct wk_dist_engine {
    void *comm; /* mpi.c's communicator */
    pthread_mutex_t lock;
    pthread_cond_t cond;       /* the comm thread's: work queued, or stop */
    pthread_cond_t wd_cond;    /* the watchdog's: stop (it wakes by its timer otherwise) */
    wick_dist_work *head, *tail;
    int busy;                  /* atomic: an op is running (inline or on the comm thread); set under lock */
    int stop;
    int comm_started, watchdog_started, p2p_init;
    pthread_t comm_thread, watchdog;
    uint64_t seq;              /* collectives and transfers issued so far */
    uint64_t run_seq;          /* atomic: the op running now (0: none) */
    int run_kind;              /* atomic */
    int64_t run_start_ns;      /* atomic */
    wick_dist_work *pending;   /* asynchronous backends: work whose event is outstanding */
    pthread_mutex_t p2p_lock;  /* the async sends and receives in flight (p2p_start), and their tests */
    wick_dist_work *p2p;
    /* the predicted check (below): the same on every rank, fed by agreed signatures only */
    struct predict_slot {
        int64_t from[SIG_FIELDS], to[SIG_FIELDS];
        int streak; /* times in a row `from` was followed by `to` */
    } predict[PREDICT_SLOTS];
    int64_t last[SIG_FIELDS]; /* the last agreed signature */
    int have_last;
    uint64_t checks_predicted, checks_full; /* atomic: wick_dist_check_counts */
    double scratch[WK_MPI_PREDICT_BYTES / sizeof(double) + 1]; /* a predicted all_reduce's message */
};

static wk_dist_group *g_default;
static pthread_mutex_t g_default_lock = PTHREAD_MUTEX_INITIALIZER;
/* completion of any work: one process-wide lock, so a handle outliving its
 * group can still be waited on */
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cond = PTHREAD_COND_INITIALIZER;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The same clock at the kernel tick's resolution (a few ms, behind now_ns by
 * at most that): a synchronous op's start, which only the watchdog reads
 * (a timeout of seconds), for a fifth of the precise clock's cost. */
static int64_t coarse_ns(void) {
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
#else
    return now_ns();
#endif
}

/* ---- names and availability ---- */

static const char *const op_names[WICK_DIST_NUM_OPS] = {"sum", "avg", "max", "min", "product"};

const char *wick_dist_op_name(wick_dist_op op) {
    return (unsigned)op < WICK_DIST_NUM_OPS ? op_names[op] : NULL;
}

wick_status wick_dist_op_parse(const char *name, wick_dist_op *out) {
    for (int i = 0; i < WICK_DIST_NUM_OPS; i++)
        if (name && strcmp(name, op_names[i]) == 0) {
            *out = (wick_dist_op)i;
            return WICK_OK;
        }
    return wick_fail(WICK_ERR_ARGUMENT, "unknown reduce op '%s' (expected 'sum', 'avg', 'max', 'min' or 'product')",
                     name ? name : "(null)");
}

const char *wk_dist_unavailable(void) {
#ifdef WICK_DIST_UNAVAILABLE
    return WICK_DIST_UNAVAILABLE;
#else
    return "";
#endif
}

int wick_dist_is_available(void) { return wk_dist_unavailable()[0] == '\0'; }
const char *wick_dist_unavailable_reason(void) { return wk_dist_unavailable(); }

static wick_status no_group(const char *fn) {
    if (!wick_dist_is_available())
        return wick_fail(WICK_ERR_UNSUPPORTED, "wick.distributed.%s: not available: %s", fn, wk_dist_unavailable());
    return wick_fail(WICK_ERR_ARGUMENT,
                     "wick.distributed.%s: the default process group is not initialized "
                     "(call wick.distributed.init_process_group() first)",
                     fn);
}

/* ---- work bookkeeping ---- */

static void work_release_tensors(wick_dist_work *w) {
    if (w->recv != w->send) wick_tensor_release(w->recv);
    wick_tensor_release(w->send);
    wick_tensor_release(w->target);
    for (int i = 0; i < w->nouts; i++) wick_tensor_release(w->outs[i]);
    free(w->outs);
    w->send = w->recv = w->target = NULL;
    w->outs = NULL;
    w->nouts = 0;
}

static void work_unref(wick_dist_work *w) {
    if (!w || !w->heap) return;
    if (__atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    work_release_tensors(w);
    if (w->event && w->be && w->be->event_release) w->be->event_release(w->event);
    free(w);
}

/* the work's status and message, once; wakes the waiters */
static void work_finish(wick_dist_work *w, wick_status st) {
    w->end_ns = now_ns();
    if (st != WICK_OK) snprintf(w->msg, sizeof w->msg, "%s", wick_last_error());
    w->status = st;
    pthread_mutex_lock(&work_lock);
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&work_cond);
    pthread_mutex_unlock(&work_lock);
}

/* ---- running one op (inline or on the comm thread) ---- */

static wick_status fail_mismatch(wick_dist_work *w, const char *what, long long lo, long long hi) {
    return wick_fail(WICK_ERR_SHAPE,
                     "wick.distributed.%s #%llu: %s differ across ranks (%lld on some, %lld on others): every rank "
                     "must call the same collectives with the same sizes and dtypes",
                     kind_names[w->kind], (unsigned long long)w->seq, what, lo, hi);
}

static void *data_of(wick_tensor *t) { return t ? wick_tensor_data(t) : NULL; }

/* The signature check: kind, dtype, count, op and root compared over ranks,
 * so a mismatch is the same error on every rank (and no data moved). */
static void signature_of(const wick_dist_work *w, int64_t f[SIG_FIELDS]) {
    /* all_gather into a list and into one tensor move the same bytes: either may meet the other */
    f[0] = w->kind == K_ALL_GATHER_INTO ? K_ALL_GATHER : w->kind;
    int barrier = w->kind == K_BARRIER;
    f[1] = barrier ? 0 : w->dtype;
    f[2] = barrier ? 0 : w->count;
    f[3] = barrier ? 0 : (int64_t)w->op * 2 + w->divide;
    f[4] = barrier ? 0 : w->peer;
}

static wick_status full_check(wk_dist_group *g, wick_dist_work *w, const int64_t f[SIG_FIELDS]) {
    int64_t lo[SIG_FIELDS], hi[SIG_FIELDS];
    int n = w->kind == K_BARRIER ? 1 : SIG_FIELDS, bad = 0;
    /* an all_reduce on CPU rides in the check's own message, all of it up to
     * 256 bytes, else its first 256 (the same decision on every rank: it depends
     * on fields the check compares) */
    int carry = g->be == &wk_dist_mpi_backend && w->kind == K_ALL_REDUCE && w->count > 0;
    wick_status st = wk_mpi_check(g->engine->comm, f, lo, hi, n, &bad, carry ? data_of(w->recv) : NULL, w->dtype,
                                  w->op, w->count, &w->carried);
    if (st) return st;
    if (lo[0] != hi[0])
        return wick_fail(WICK_ERR_SHAPE,
                         "wick.distributed.%s #%llu: the ranks called different collectives here (%s on some, %s on "
                         "others): every rank must call the same collectives in the same order",
                         kind_names[w->kind], (unsigned long long)w->seq, kind_names[lo[0] >= 1 && lo[0] <= 8 ? lo[0] : 0],
                         kind_names[hi[0] >= 1 && hi[0] <= 8 ? hi[0] : 0]);
    if (n == 1) return WICK_OK;
    if (lo[1] != hi[1])
        return wick_fail(WICK_ERR_SHAPE,
                         "wick.distributed.%s #%llu: the tensors' dtypes differ across ranks (%s on some, %s on "
                         "others): every rank must pass the same sizes and dtypes",
                         kind_names[w->kind], (unsigned long long)w->seq, wick_dtype_name((wick_dtype)lo[1]),
                         wick_dtype_name((wick_dtype)hi[1]));
    if (lo[2] != hi[2]) return fail_mismatch(w, "the tensors' numbers of elements", lo[2], hi[2]);
    if (lo[3] != hi[3])
        return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.%s #%llu: the reduce op differs across ranks (%s and %s)",
                         kind_names[w->kind], (unsigned long long)w->seq,
                         lo[3] & 1 ? "avg" : op_names[lo[3] / 2], hi[3] & 1 ? "avg" : op_names[hi[3] / 2]);
    if (lo[4] != hi[4]) return fail_mismatch(w, "the src ranks", lo[4], hi[4]);
    if (bad)
        return wick_fail(WICK_ERR_SHAPE, "wick.distributed.%s #%llu: the ranks' calls differ: every rank must call the "
                         "same collectives with the same sizes and dtypes", kind_names[w->kind], (unsigned long long)w->seq);
    return WICK_OK;
}

/* The predicted check. The full check is a round trip of its own before the
 * data's (a third of a 4 KiB all_reduce's time). Programs repeat their calls
 * (a training step's buckets, a benchmark's loop), so every rank keeps the
 * same table of which agreed signature followed which (fed only by checks
 * every rank passed, cleared by a check that failed on every rank): when the
 * last agreed call A was followed by B the last two times, the next check
 * predicts B and is a cheaper message whose shape depends on B alone, so every
 * rank posts the same one whatever it called: a flag "my call is B", or, for
 * a CPU all_reduce of up to WK_MPI_PREDICT_BYTES, the payload and the flag in
 * one message (mpi.c), the whole all_reduce in one round trip. When any
 * rank's call is not B, every rank sees it and the full check follows. */
static struct predict_slot *predict_slot(struct wk_dist_engine *e, const int64_t f[SIG_FIELDS]) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < SIG_FIELDS; i++) h = (h ^ (uint64_t)f[i]) * 1099511628211ull;
    return &e->predict[(h >> 32) % PREDICT_SLOTS];
}

static const int64_t *predicted(struct wk_dist_engine *e) {
    if (!e->have_last) return NULL;
    struct predict_slot *s = predict_slot(e, e->last);
    return s->streak >= 2 && memcmp(s->from, e->last, sizeof s->from) == 0 ? s->to : NULL;
}

static void remember(struct wk_dist_engine *e, const int64_t f[SIG_FIELDS], bool hit) {
    if (e->have_last && !hit) { /* (a hit is a slot at its full streak already) */
        struct predict_slot *s = predict_slot(e, e->last);
        if (s->streak && memcmp(s->from, e->last, sizeof s->from) == 0 && memcmp(s->to, f, sizeof s->to) == 0) {
            if (s->streak < 2) s->streak++;
        } else {
            memcpy(s->from, e->last, sizeof s->from);
            memcpy(s->to, f, sizeof s->to);
            s->streak = 1;
        }
    }
    memcpy(e->last, f, sizeof e->last);
    e->have_last = 1;
}

/* *all: every rank's call is p (then w is checked; an all_reduce it carried
 * is done, w->carried = w->count) */
static wick_status predicted_check(wk_dist_group *g, wick_dist_work *w, const int64_t f[SIG_FIELDS],
                                   const int64_t p[SIG_FIELDS], int *all) {
    int match = memcmp(f, p, SIG_FIELDS * sizeof *f) == 0;
    wick_dtype dt = (wick_dtype)p[1];
    wick_dist_op op = (wick_dist_op)(p[3] / 2);
    if (g->be == &wk_dist_mpi_backend && p[0] == K_ALL_REDUCE && wk_mpi_predictable(dt, op, p[2])) {
        wick_status st = wk_mpi_all_reduce_predicted(g->engine->comm, match ? data_of(w->recv) : NULL,
                                                     g->engine->scratch, p[2], dt, op, g->size, all);
        if (!st && *all) w->carried = w->count;
        return st;
    }
    return wk_mpi_all_agree(g->engine->comm, match, all);
}

/* one writer (the thread running ops, one at a time), readers anywhere: no locked add */
static void count_check(uint64_t *c) { __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED); }

static wick_status check_signature(wk_dist_group *g, wick_dist_work *w) {
    struct wk_dist_engine *e = g->engine;
    int64_t f[SIG_FIELDS];
    signature_of(w, f);
    const int64_t *p = predicted(e);
    int all = 0;
    wick_status st = p ? predicted_check(g, w, f, p, &all) : WICK_OK;
    if (!st && !all) {
        st = full_check(g, w, f);
        count_check(&e->checks_full);
    } else if (!st) {
        count_check(&e->checks_predicted);
    }
    if (st) e->have_last = 0;
    else remember(e, f, all);
    return st;
}

static wick_status call_backend(wk_dist_group *g, wick_dist_work *w) {
    const wk_dist_backend *be = g->be;
    switch (w->kind) {
    case K_ALL_REDUCE: /* what the signature check did not carry */
        return be->all_reduce(g, (char *)data_of(w->recv) + w->carried * (int64_t)wick_dtype_size(w->dtype),
                              w->count - w->carried, w->dtype, w->op, w->device);
    case K_BROADCAST: return be->broadcast(g, data_of(w->recv), w->count, w->dtype, w->peer, w->device);
    case K_ALL_GATHER:
    case K_ALL_GATHER_INTO:
        return be->all_gather(g, data_of(w->send), data_of(w->recv), w->count, w->dtype, w->device);
    case K_REDUCE_SCATTER:
        return be->reduce_scatter(g, data_of(w->send), data_of(w->recv), w->count, w->dtype, w->op, w->device);
    case K_BARRIER: /* the signature check, an allreduce, already waited for every rank */
        return be->asynchronous ? be->barrier(g, w->device) : WICK_OK;
    case K_SEND: return be->send(g, data_of(w->send), w->count, w->dtype, w->peer, w->device);
    case K_RECV: return be->recv(g, data_of(w->recv), w->count, w->dtype, w->peer, w->device);
    }
    return WICK_ERR_ARGUMENT;
}

/* After the transfer: avg's division, then the staged result written back.
 * Unrecorded (a collective is not differentiable; PyTorch's c10d writes
 * leaves that require grad too). */
static wick_status finish_result_unrecorded(wk_dist_group *g, wick_dist_work *w);
static wick_status finish_result(wk_dist_group *g, wick_dist_work *w) {
    if (!w->divide && !w->outs && !w->target) return WICK_OK;
    int grad = wick_is_grad_enabled();
    if (grad) wick_set_grad_enabled(0);
    wick_status st = finish_result_unrecorded(g, w);
    if (grad) wick_set_grad_enabled(1);
    return st;
}

static wick_status finish_result_unrecorded(wk_dist_group *g, wick_dist_work *w) {
    wick_status st;
    if (w->divide) {
        wick_scalar s = {(double)g->size, 1};
        if ((st = wick_binary_scalar_(WICK_DIV, w->recv, s))) return st;
    }
    if (w->outs) { /* all_gather: rank r's slice into outs[r] */
        for (int r = 0; r < w->nouts; r++) {
            wick_tensor *slice = NULL, *shaped = NULL;
            st = wick_narrow(&slice, w->recv, 0, r * w->count, w->count);
            if (!st)
                st = wick_view(&shaped, slice, wick_tensor_ndim(w->outs[r]), wick_tensor_sizes(w->outs[r]));
            if (!st) st = wick_copy_(w->outs[r], shaped);
            wick_tensor_release(shaped);
            wick_tensor_release(slice);
            if (st) return st;
        }
    } else if (w->target) {
        wick_tensor *shaped = NULL;
        st = wick_view(&shaped, w->recv, wick_tensor_ndim(w->target), wick_tensor_sizes(w->target));
        if (!st) st = wick_copy_(w->target, shaped);
        wick_tensor_release(shaped);
        if (st) return st;
    }
    return WICK_OK;
}

/* w is the op running now (the watchdog's view) until run_seq is cleared */
static void mark_running(struct wk_dist_engine *e, const wick_dist_work *w) {
    __atomic_store_n(&e->run_start_ns, w->start_ns, __ATOMIC_RELAXED);
    __atomic_store_n(&e->run_kind, (int)w->kind, __ATOMIC_RELAXED);
    __atomic_store_n(&e->run_seq, w->seq, __ATOMIC_RELEASE);
}

static void p2p_wait_recvs_from(wk_dist_group *g, int peer);
static wick_status run_op(wk_dist_group *g, wick_dist_work *w) {
    struct wk_dist_engine *e = g->engine;
    w->start_ns = w->heap ? now_ns() : coarse_ns(); /* a handle's seconds are the precise clock's */
    mark_running(e, w);
    wick_status st = WICK_OK;
    if (w->kind != K_SEND && w->kind != K_RECV) st = check_signature(g, w);
    else if (w->kind == K_RECV && g->be->p2p_test) p2p_wait_recvs_from(g, w->peer);
    if (!st && !(w->kind == K_ALL_REDUCE && w->carried == w->count)) st = call_backend(g, w);
    __atomic_store_n(&e->run_seq, 0, __ATOMIC_RELEASE);
    if (!st && !g->be->asynchronous) st = finish_result(g, w);
    return st;
}

/* ---- the comm thread (synchronous backends) ---- */

static void *comm_main(void *arg) {
    wk_dist_group *g = arg;
    struct wk_dist_engine *e = g->engine;
    pthread_mutex_lock(&e->lock);
    for (;;) {
        while (!e->head && !e->stop) pthread_cond_wait(&e->cond, &e->lock);
        if (!e->head) break; /* stopping, and nothing left */
        wick_dist_work *w = e->head;
        e->head = w->next;
        if (!e->head) e->tail = NULL;
        w->next = NULL;
        __atomic_store_n(&e->busy, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&e->lock);
        wick_status st = run_op(g, w);
        int heap = w->heap; /* a stack work (a sync call's) is gone once finished */
        if (heap) work_release_tensors(w); /* async: nothing of the caller's is held past done */
        work_finish(w, st);
        if (heap) work_unref(w); /* the queue's reference */
        pthread_mutex_lock(&e->lock);
        __atomic_store_n(&e->busy, 0, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- async send/recv in flight (synchronous backends with p2p_start) ---- */

/* A receive from `peer` in flight before `w` (or anywhere: w NULL), under p2p_lock. */
static bool recv_before(const struct wk_dist_engine *e, const wick_dist_work *w, int peer) {
    for (const wick_dist_work *x = e->p2p; x && x != w; x = x->next)
        if (x->kind == K_RECV && x->peer == peer) return true;
    return false;
}

/* Tests every transfer in flight once, oldest first (a receive only when none
 * from its peer is before it); the finished ones get their result (a staged
 * recv's copy), their status and leave the list. */
static void p2p_progress(wk_dist_group *g) {
    struct wk_dist_engine *e = g->engine;
    pthread_mutex_lock(&e->p2p_lock);
    for (wick_dist_work **pp = &e->p2p; *pp;) {
        wick_dist_work *w = *pp;
        int done = 0;
        wick_status st = WICK_OK;
        if (w->kind != K_RECV || !recv_before(e, w, w->peer)) st = g->be->p2p_test(g, w->req, &done);
        if (!done) {
            pp = &w->next;
            continue;
        }
        w->req = NULL;
        *pp = w->next;
        w->next = NULL;
        if (!st) st = finish_result(g, w);
        work_release_tensors(w);
        work_finish(w, st);
        work_unref(w); /* the list's reference */
    }
    pthread_mutex_unlock(&e->p2p_lock);
}

/* A blocking recv from `peer`: first every async one from it posted before
 * (the watchdog ends the job if their messages never come). */
static void p2p_wait_recvs_from(wk_dist_group *g, int peer) {
    struct wk_dist_engine *e = g->engine;
    for (int spins = 0;; spins++) {
        pthread_mutex_lock(&e->p2p_lock);
        bool pending = recv_before(e, NULL, peer);
        pthread_mutex_unlock(&e->p2p_lock);
        if (!pending) return;
        p2p_progress(g);
        if (spins < 1000) sched_yield();
        else nanosleep(&(struct timespec){0, 50000}, NULL);
    }
}

/* The oldest transfer in flight past `limit` ns, or NULL (under p2p_lock). */
static const wick_dist_work *p2p_overdue(struct wk_dist_engine *e, int64_t now, int64_t limit) {
    for (const wick_dist_work *w = e->p2p; w; w = w->next)
        if (now - w->start_ns > limit) return w;
    return NULL;
}

/* Until every transfer in flight is over (the watchdog ends the job if a peer
 * never comes): the waits of work:wait() and of the group's end. Yields the
 * core while it tests, then sleeps 50 us between tests. */
static void p2p_wait(wk_dist_group *g, const wick_dist_work *w) {
    struct wk_dist_engine *e = g->engine;
    for (int spins = 0;; spins++) {
        p2p_progress(g);
        if (w) {
            if (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) return;
        } else {
            pthread_mutex_lock(&e->p2p_lock);
            bool empty = e->p2p == NULL;
            pthread_mutex_unlock(&e->p2p_lock);
            if (empty) return;
        }
        if (spins < 1000) sched_yield();
        else nanosleep(&(struct timespec){0, 50000}, NULL);
    }
}

/* ---- the watchdog ---- */

/* Ends the job from the watchdog: NCCL's communicator first (its kernels may
 * wait for a dead peer), then MPI_Abort. */
static void watchdog_abort(wk_dist_group *g) {
#ifdef WICK_DIST_NCCL
    wk_dist_nccl_abort(g);
#endif
    wk_mpi_abort(1);
    _exit(1);
}

static void watchdog_fire(wk_dist_group *g, int kind, uint64_t seq, const char *detail) {
    fprintf(stderr,
            "wick.distributed: rank %d: %s #%llu did not complete within %g s%s (a rank stopped, crashed, or did not "
            "call it); aborting the job\n",
            g->rank, kind_names[kind >= 1 && kind <= 8 ? kind : 0], (unsigned long long)seq, g->timeout_s,
            detail ? detail : "");
    fflush(stderr);
    watchdog_abort(g);
}

static void watchdog_check_events(wk_dist_group *g, int64_t now, int64_t limit) {
    struct wk_dist_engine *e = g->engine;
    wick_dist_work **pp = &e->pending;
    while (*pp) {
        wick_dist_work *w = *pp;
        int q = g->be->event_query(g, w->event);
        if (q < 0) {
            fprintf(stderr, "wick.distributed: rank %d: %s #%llu failed: %s; aborting the job\n", g->rank,
                    kind_names[w->kind], (unsigned long long)w->seq, wick_last_error());
            fflush(stderr);
            watchdog_abort(g);
        }
        if (q == 1) {
            *pp = w->next;
            w->next = NULL;
            if (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) work_finish(w, WICK_OK);
            work_unref(w);
            continue;
        }
        if (now - w->start_ns > limit) watchdog_fire(g, w->kind, w->seq, NULL);
        pp = &w->next;
    }
}

static void *watchdog_main(void *arg) {
    wk_dist_group *g = arg;
    struct wk_dist_engine *e = g->engine;
    double poll = g->timeout_s / 20;
    if (poll > 0.5) poll = 0.5;
    if (poll < 0.01) poll = 0.01;
    int64_t poll_ns = (int64_t)(poll * 1e9), limit = (int64_t)(g->timeout_s * 1e9);
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        int64_t t = (int64_t)ts.tv_nsec + poll_ns;
        ts.tv_sec += t / 1000000000;
        ts.tv_nsec = t % 1000000000;
        pthread_cond_timedwait(&e->wd_cond, &e->lock, &ts);
        if (e->stop) break;
        int64_t now = now_ns();
        uint64_t seq = __atomic_load_n(&e->run_seq, __ATOMIC_ACQUIRE);
        if (seq) {
            int64_t start = __atomic_load_n(&e->run_start_ns, __ATOMIC_RELAXED);
            int kind = __atomic_load_n(&e->run_kind, __ATOMIC_RELAXED);
            if (now - start > limit && __atomic_load_n(&e->run_seq, __ATOMIC_ACQUIRE) == seq)
                watchdog_fire(g, kind, seq, NULL);
        }
        if (g->be->asynchronous) watchdog_check_events(g, now, limit);
        if (g->be->p2p_test) {
            p2p_progress(g); /* also a transfer nobody waits for leaves the list */
            pthread_mutex_lock(&e->p2p_lock);
            const wick_dist_work *late = p2p_overdue(e, now, limit);
            if (late) watchdog_fire(g, late->kind, late->seq, NULL);
            pthread_mutex_unlock(&e->p2p_lock);
        }
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- the group ---- */

static void group_free(wk_dist_group *g) {
    if (!g) return;
    struct wk_dist_engine *e = g->engine;
    if (e) {
        if (e->p2p_init) p2p_wait(g, NULL); /* the watchdog still watches */
        pthread_mutex_lock(&e->lock);
        e->stop = 1;
        pthread_cond_broadcast(&e->cond);
        pthread_cond_broadcast(&e->wd_cond);
        pthread_mutex_unlock(&e->lock);
        if (e->comm_started) pthread_join(e->comm_thread, NULL); /* drains the queue first */
        if (e->watchdog_started) pthread_join(e->watchdog, NULL);
        /* an asynchronous backend's outstanding work: wait for it */
        while (e->pending) {
            wick_dist_work *w = e->pending;
            e->pending = w->next;
            wick_status st = g->be->event_wait(g, w->event);
            if (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) || st) work_finish(w, st);
            work_unref(w);
        }
        if (g->be && g->be->destroy && e->comm) g->be->destroy(g);
        wk_mpi_comm_free(&e->comm);
        pthread_cond_destroy(&e->cond);
        pthread_cond_destroy(&e->wd_cond);
        pthread_mutex_destroy(&e->lock);
        if (e->p2p_init) pthread_mutex_destroy(&e->p2p_lock);
        free(e);
    }
    free(g);
}

static const wk_dist_backend *backend_named(const char *name) {
    if (!name) {
#ifdef WICK_DIST_NCCL
        if (wk_dist_nccl_usable()) return &wk_dist_nccl_backend;
#endif
        return &wk_dist_mpi_backend;
    }
    if (strcmp(name, "mpi") == 0) return &wk_dist_mpi_backend;
#ifdef WICK_DIST_NCCL
    if (strcmp(name, "nccl") == 0) return &wk_dist_nccl_backend;
#endif
    return NULL;
}

wick_status wick_dist_init(const char *backend, double timeout_s) {
    if (!wick_dist_is_available()) return no_group("init_process_group");
    const wk_dist_backend *be = backend_named(backend);
    if (!be) {
        if (backend && strcmp(backend, "nccl") == 0)
            return wick_fail(WICK_ERR_UNSUPPORTED,
                             "wick.distributed.init_process_group: backend 'nccl' needs a CUDA build of wick");
        return wick_fail(WICK_ERR_ARGUMENT,
                         "wick.distributed.init_process_group: unknown backend '%s' (expected 'mpi' or 'nccl')",
                         backend);
    }
    return wk_dist_init_backend(be, timeout_s);
}

wick_status wk_dist_init_backend(const wk_dist_backend *be, double timeout_s) {
    if (!wick_dist_is_available()) return no_group("init_process_group");
    if (!(timeout_s == timeout_s) || timeout_s < 0 || timeout_s > 1e9)
        return wick_fail(WICK_ERR_ARGUMENT,
                         "wick.distributed.init_process_group: timeout must be a positive number of seconds, got %g",
                         timeout_s);
    if (timeout_s == 0) timeout_s = 60;
    pthread_mutex_lock(&g_default_lock);
    wick_status st = WICK_OK;
    wk_dist_group *g = NULL;
    if (g_default) {
        st = wick_fail(WICK_ERR_ARGUMENT,
                       "wick.distributed.init_process_group: the default process group is already initialized "
                       "(destroy_process_group() first)");
        goto done;
    }
    if ((st = wk_mpi_start())) goto done;
    g = calloc(1, sizeof *g);
    struct wk_dist_engine *e = g ? calloc(1, sizeof *e) : NULL;
    if (!e) {
        free(g);
        g = NULL;
        st = wick_fail(WICK_ERR_OOM, "wick.distributed.init_process_group: out of memory");
        goto done;
    }
    g->engine = e;
    g->be = be;
    g->timeout_s = timeout_s;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->cond, NULL);
    pthread_cond_init(&e->wd_cond, NULL);
    pthread_mutex_init(&e->p2p_lock, NULL);
    e->p2p_init = 1;
    if ((st = wk_mpi_comm_new(&e->comm, &g->rank, &g->size, &g->local_rank))) goto done;
    if ((st = be->init(g))) {
        g->be = NULL; /* no destroy after a failed init */
        goto done;
    }
    if (!be->asynchronous) {
        if (pthread_create(&e->comm_thread, NULL, comm_main, g)) {
            st = wick_fail(WICK_ERR_OOM, "wick.distributed.init_process_group: cannot start the comm thread");
            goto done;
        }
        e->comm_started = 1;
    }
    if (pthread_create(&e->watchdog, NULL, watchdog_main, g)) {
        st = wick_fail(WICK_ERR_OOM, "wick.distributed.init_process_group: cannot start the watchdog thread");
        goto done;
    }
    e->watchdog_started = 1;
    g_default = g;
    g = NULL;
done:
    if (g) group_free(g);
    pthread_mutex_unlock(&g_default_lock);
    return st;
}

int wick_dist_is_initialized(void) { return __atomic_load_n(&g_default, __ATOMIC_ACQUIRE) != NULL; }

wick_status wick_dist_destroy(void) {
    pthread_mutex_lock(&g_default_lock);
    wk_dist_group *g = g_default;
    g_default = NULL;
    pthread_mutex_unlock(&g_default_lock);
    if (!g) return no_group("destroy_process_group");
    group_free(g);
    return WICK_OK;
}

void wk_dist_shutdown(void) {
    pthread_mutex_lock(&g_default_lock);
    wk_dist_group *g = g_default;
    g_default = NULL;
    pthread_mutex_unlock(&g_default_lock);
    group_free(g);
}

void *wk_dist_group_comm(wk_dist_group *g) { return g->engine->comm; }

wick_status wk_dist_bootstrap_broadcast(wk_dist_group *g, void *buf, size_t n, int root) {
    return wk_mpi_bcast_bytes(g->engine->comm, buf, n, root);
}

#define GROUP_OR_FAIL(fn)                \
    wk_dist_group *g = g_default;        \
    if (!g) return no_group(fn)

wick_status wick_dist_rank(int *rank) {
    GROUP_OR_FAIL("get_rank");
    *rank = g->rank;
    return WICK_OK;
}
wick_status wick_dist_world_size(int *size) {
    GROUP_OR_FAIL("get_world_size");
    *size = g->size;
    return WICK_OK;
}
wick_status wick_dist_local_rank(int *rank) {
    GROUP_OR_FAIL("get_local_rank");
    *rank = g->local_rank;
    return WICK_OK;
}
wick_status wick_dist_backend(const char **name) {
    GROUP_OR_FAIL("get_backend");
    *name = g->be->name;
    return WICK_OK;
}
wick_status wick_dist_timeout(double *seconds) {
    GROUP_OR_FAIL("get_timeout");
    *seconds = g->timeout_s;
    return WICK_OK;
}
wick_status wick_dist_check_counts(uint64_t *predicted, uint64_t *full) {
    if (!predicted || !full) return wick_fail(WICK_ERR_ARGUMENT, "wick_dist_check_counts: predicted and full must not be NULL");
    GROUP_OR_FAIL("check_counts");
    *predicted = __atomic_load_n(&g->engine->checks_predicted, __ATOMIC_RELAXED);
    *full = __atomic_load_n(&g->engine->checks_full, __ATOMIC_RELAXED);
    return WICK_OK;
}

void wick_dist_abort(int code, const char *msg) {
    if (msg) {
        fprintf(stderr, "%s\n", msg);
        fflush(stderr);
    }
    wk_mpi_abort(code);
    _exit(code);
}

/* ---- submitting ---- */

/* Runs w now (inline) when nothing is queued, else behind the queue; w is
 * the caller's (stack) and finished on return. */
static wick_status submit_sync(wk_dist_group *g, wick_dist_work *w) {
    struct wk_dist_engine *e = g->engine;
    pthread_mutex_lock(&e->lock);
    if (!e->head && !__atomic_load_n(&e->busy, __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&e->busy, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&e->lock);
        wick_status st = run_op(g, w);
        /* no lock to let go of it: a submitter that still sees it set queues
         * behind (the comm thread runs its op), one that sees it clear also
         * sees everything this op wrote (release / acquire) */
        __atomic_store_n(&e->busy, 0, __ATOMIC_RELEASE);
        return st;
    }
    /* behind async work: the comm thread runs it; wait for it here */
    w->next = NULL;
    if (e->tail) e->tail->next = w;
    else e->head = w;
    e->tail = w;
    pthread_cond_signal(&e->cond); /* the comm thread */
    pthread_mutex_unlock(&e->lock);
    pthread_mutex_lock(&work_lock);
    while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) pthread_cond_wait(&work_cond, &work_lock);
    pthread_mutex_unlock(&work_lock);
    if (w->status) wick_fail(w->status, "%s", w->msg);
    return w->status;
}

static wick_status submit_async(wk_dist_group *g, wick_dist_work *w, wick_dist_work **out) {
    struct wk_dist_engine *e = g->engine;
    wick_dist_work *h = malloc(sizeof *h);
    if (!h) return wick_fail(WICK_ERR_OOM, "wick.distributed.%s: out of memory", kind_names[w->kind]);
    *h = *w;
    h->heap = 1;
    h->refs = 2; /* the caller's handle and the queue's */
    /* the tensors now belong to h */
    memset(w, 0, sizeof *w);
    pthread_mutex_lock(&e->lock);
    h->next = NULL;
    if (e->tail) e->tail->next = h;
    else e->head = h;
    e->tail = h;
    pthread_cond_signal(&e->cond); /* the comm thread */
    pthread_mutex_unlock(&e->lock);
    *out = h;
    return WICK_OK;
}

/* An asynchronous backend's op, queued and finished on the stream: w's
 * state moves to a handle on the pending list (the watchdog's) with its
 * event; *out gets the handle when asked for. */
static wick_status pend_on_stream(wk_dist_group *g, wick_dist_work *w, wick_dist_work **out) {
    struct wk_dist_engine *e = g->engine;
    wick_dist_work *h = malloc(sizeof *h);
    if (!h) return wick_fail(WICK_ERR_OOM, "wick.distributed.%s: out of memory", kind_names[w->kind]);
    *h = *w;
    memset(w, 0, sizeof *w);
    h->heap = 1;
    h->refs = out ? 2 : 1;
    work_release_tensors(h); /* stream-ordered: the caching allocator reuses them only after the op */
    wick_status st = g->be->event_record(g, h->device, &h->event);
    if (st) {
        free(h);
        return st;
    }
    h->start_ns = now_ns();
    pthread_mutex_lock(&e->lock);
    h->next = e->pending;
    e->pending = h;
    pthread_mutex_unlock(&e->lock);
    if (out) *out = h;
    return WICK_OK;
}

/* Asynchronous backends: everything on the calling thread. */
static wick_status submit_queued_on_stream(wk_dist_group *g, wick_dist_work *w, wick_dist_work **out) {
    wick_status st = run_op(g, w);
    if (!st) st = finish_result(g, w); /* queued on the same stream: ordered after the op */
    return st ? st : pend_on_stream(g, w, out);
}

/* An async send or recv: started now (p2p_start), tested once, and on the
 * in-flight list (the handle's and the list's references) until it is over. */
static wick_status submit_p2p(wk_dist_group *g, wick_dist_work *w, wick_dist_work **out) {
    struct wk_dist_engine *e = g->engine;
    wick_dist_work *h = malloc(sizeof *h);
    if (!h) return wick_fail(WICK_ERR_OOM, "wick.distributed.%s: out of memory", kind_names[w->kind]);
    *h = *w;
    h->heap = 1;
    h->refs = 2;
    h->start_ns = now_ns();
    pthread_mutex_lock(&e->p2p_lock);
    int is_recv = h->kind == K_RECV;
    wick_status st = g->be->p2p_start(g, is_recv, data_of(is_recv ? h->recv : h->send), h->count, h->dtype, h->peer,
                                      h->device, &h->req);
    if (st) {
        pthread_mutex_unlock(&e->p2p_lock);
        free(h); /* w still holds the tensors */
        return st;
    }
    memset(w, 0, sizeof *w); /* the tensors now belong to h */
    wick_dist_work **tail = &e->p2p; /* oldest first */
    while (*tail) tail = &(*tail)->next;
    *tail = h;
    pthread_mutex_unlock(&e->p2p_lock);
    p2p_progress(g); /* an eager send is over at once */
    *out = h;
    return WICK_OK;
}

static wick_status submit(wk_dist_group *g, wick_dist_work *w, wick_dist_work **out) {
    w->g = g;
    w->be = g->be;
    w->seq = ++g->engine->seq;
    wick_status st;
    if (g->be->asynchronous) st = submit_queued_on_stream(g, w, out);
    else if (out && (w->kind == K_SEND || w->kind == K_RECV) && g->be->p2p_start) st = submit_p2p(g, w, out);
    else if (out) st = submit_async(g, w, out);
    else st = submit_sync(g, w);
    work_release_tensors(w); /* what is still the caller's (sync, or a failed submit) */
    return st;
}

/* ---- the collectives' checks and staging ---- */

static wick_status check_device(wk_dist_group *g, const char *fn, const wick_tensor *t, const char *what,
                                int *device) {
    wick_device d = wick_tensor_device(t);
    if (d.type != g->be->device_type) {
        char buf[32];
        return wick_fail(WICK_ERR_DEVICE,
                         "wick.distributed.%s: %s is on %s, but the %s backend moves %s tensors", fn, what,
                         wick_device_format(d, buf, sizeof buf), g->be->name,
                         g->be->device_type == WICK_CUDA ? "cuda" : "cpu");
    }
    int index = d.type == WICK_CUDA ? d.index : -1;
    if (*device != -2 && *device != index)
        return wick_fail(WICK_ERR_DEVICE, "wick.distributed.%s: the tensors are on different devices", fn);
    *device = index;
    return WICK_OK;
}

/* A contiguous copy of t (clone: always a fresh one), unrecorded by autograd. */
static wick_status copy_of(wick_tensor *t, wick_tensor **out, int clone) {
    int grad = wick_is_grad_enabled();
    if (grad) wick_set_grad_enabled(0);
    wick_status st = clone ? wick_clone(out, t) : wick_contiguous(out, t);
    if (grad) wick_set_grad_enabled(1);
    return st;
}

/* A contiguous tensor with t's data: t itself (retained) or a copy. */
static wick_status contiguous_of(wick_tensor *t, wick_tensor **out) {
    if (wick_tensor_is_contiguous(t)) {
        wick_tensor_retain(t);
        *out = t;
        return WICK_OK;
    }
    return copy_of(t, out, 0);
}

/* A fresh contiguous tensor of n elements of t's dtype on t's device. */
static wick_status empty_like_n(wick_tensor *t, int64_t n, wick_tensor **out) {
    wick_options o = wick_default_options();
    o.dtype = wick_tensor_dtype(t);
    o.device = wick_tensor_device(t);
    return wick_empty(out, 1, &n, o);
}

static wick_status check_op(const char *fn, wick_dist_op op, wick_dtype dt, wick_dist_work *w) {
    if ((unsigned)op >= WICK_DIST_NUM_OPS)
        return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.%s: unknown reduce op %d", fn, (int)op);
    if (op == WICK_DIST_AVG) {
        if (!wick_dtype_is_floating(dt))
            return wick_fail(WICK_ERR_DTYPE,
                             "wick.distributed.%s: op 'avg' needs a floating point tensor, got %s (use 'sum')", fn,
                             wick_dtype_name(dt));
        w->divide = 1;
        op = WICK_DIST_SUM;
    }
    w->op = op;
    return WICK_OK;
}

static wick_status check_rank(wk_dist_group *g, const char *fn, const char *what, int r, int not_self) {
    if (r < 0 || r >= g->size)
        return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.%s: %s must be a rank from 0 to %d, got %d", fn, what,
                         g->size - 1, r);
    if (not_self && r == g->rank)
        return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.%s: %s is this process's own rank (%d)", fn, what, r);
    return WICK_OK;
}

static wick_status check_tensor(const char *fn, const wick_tensor *t, const char *what) {
    if (!t) return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.%s: %s is NULL", fn, what);
    if (wick_dtype_is_complex(wick_tensor_dtype(t)))
        return wick_fail(WICK_ERR_DTYPE,
                         "wick.distributed.%s: %s is %s, which the collectives do not take: pass "
                         "wick.view_as_real(t) (a sum of its parts is the complex sum)",
                         fn, what, wick_dtype_name(wick_tensor_dtype(t)));
    return WICK_OK;
}

/* the buffer of an in-place op on t: t, or a staging copy written back after */
static wick_status stage_inplace(wick_dist_work *w, wick_tensor *t, int copy_in) {
    wick_status st;
    w->dtype = wick_tensor_dtype(t);
    w->count = wick_tensor_numel(t);
    if (wick_tensor_is_contiguous(t)) {
        wick_tensor_retain(t);
        w->recv = w->send = t;
        return WICK_OK;
    }
    if (copy_in) st = copy_of(t, &w->recv, 0);
    else st = empty_like_n(t, w->count, &w->recv);
    if (st) return st;
    w->send = w->recv;
    wick_tensor_retain(t);
    w->target = t;
    return WICK_OK;
}

wick_status wick_dist_all_reduce(wick_tensor *t, wick_dist_op op, wick_dist_work **work) {
    const char *fn = "all_reduce";
    GROUP_OR_FAIL(fn);
    WORK_INIT(w);
    wick_status st;
    w.kind = K_ALL_REDUCE;
    w.device = -2;
    if ((st = check_tensor(fn, t, "the tensor")) || (st = check_device(g, fn, t, "the tensor", &w.device)) ||
        (st = check_op(fn, op, wick_tensor_dtype(t), &w)) || (st = stage_inplace(&w, t, 1))) {
        work_release_tensors(&w);
        return st;
    }
    return submit(g, &w, work);
}

int wick_dist_try_all_reduce(wick_tensor *t, wick_dist_op op) {
    if (!g_default || wick_profiling || !t) return 1;
    return wick_dist_all_reduce(t, op, NULL) == WICK_OK ? 0 : -1;
}

wick_status wick_dist_broadcast(wick_tensor *t, int src, wick_dist_work **work) {
    const char *fn = "broadcast";
    GROUP_OR_FAIL(fn);
    WORK_INIT(w);
    wick_status st;
    w.kind = K_BROADCAST;
    w.device = -2;
    w.peer = src;
    if ((st = check_tensor(fn, t, "the tensor")) || (st = check_rank(g, fn, "src", src, 0)) ||
        (st = check_device(g, fn, t, "the tensor", &w.device)) || (st = stage_inplace(&w, t, 1))) {
        work_release_tensors(&w);
        return st;
    }
    return submit(g, &w, work);
}

static int shares(const wick_tensor *a, const wick_tensor *b) {
    return wick_tensor_storage_id(a) == wick_tensor_storage_id(b);
}

/* the send side of a gather or scatter: a contiguous t that shares no memory with `other` */
static wick_status stage_send(wick_dist_work *w, wick_tensor *t, const wick_tensor *other) {
    if (shares(t, other)) return copy_of(t, &w->send, 1);
    return contiguous_of(t, &w->send);
}

/* the receive side: out itself when contiguous, else a buffer copied into out after */
static wick_status stage_recv(wick_dist_work *w, wick_tensor *out) {
    if (wick_tensor_is_contiguous(out)) {
        wick_tensor_retain(out);
        w->recv = out;
        return WICK_OK;
    }
    wick_status st = empty_like_n(out, wick_tensor_numel(out), &w->recv);
    if (st) return st;
    wick_tensor_retain(out);
    w->target = out;
    return WICK_OK;
}

static wick_status same_dtype(const char *fn, const wick_tensor *out, const wick_tensor *t, const char *what) {
    if (wick_tensor_dtype(out) != wick_tensor_dtype(t))
        return wick_fail(WICK_ERR_DTYPE, "wick.distributed.%s: %s is %s, but the tensor is %s", fn, what,
                         wick_dtype_name(wick_tensor_dtype(out)), wick_dtype_name(wick_tensor_dtype(t)));
    return WICK_OK;
}

wick_status wick_dist_all_gather(wick_tensor *const *outs, int n, wick_tensor *t, wick_dist_work **work) {
    const char *fn = "all_gather";
    GROUP_OR_FAIL(fn);
    WORK_INIT(w);
    wick_status st;
    w.kind = K_ALL_GATHER;
    w.device = -2;
    if ((st = check_tensor(fn, t, "the tensor")) || (st = check_device(g, fn, t, "the tensor", &w.device)))
        return st;
    if (!outs || n != g->size)
        return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.%s: the list must hold world size (%d) tensors, got %d",
                         fn, g->size, outs ? n : 0);
    int nd = wick_tensor_ndim(t);
    for (int r = 0; r < n; r++) {
        char what[64];
        snprintf(what, sizeof what, "list[%d]", r + 1);
        if ((st = check_tensor(fn, outs[r], what)) || (st = check_device(g, fn, outs[r], what, &w.device)) ||
            (st = same_dtype(fn, outs[r], t, what)))
            return st;
        if (wick_tensor_ndim(outs[r]) != nd ||
            memcmp(wick_tensor_sizes(outs[r]), wick_tensor_sizes(t), sizeof(int64_t) * (size_t)nd) != 0)
            return wick_fail(WICK_ERR_SHAPE, "wick.distributed.%s: %s must have the tensor's shape", fn, what);
        for (int q = 0; q < r; q++)
            if (shares(outs[q], outs[r]) && wick_tensor_numel(t) > 0)
                return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.%s: list[%d] and %s share memory", fn, q + 1,
                                 what);
    }
    w.dtype = wick_tensor_dtype(t);
    w.count = wick_tensor_numel(t);
    w.outs = calloc(n > 0 ? (size_t)n : 1, sizeof *w.outs);
    if (!w.outs) return wick_fail(WICK_ERR_OOM, "wick.distributed.%s: out of memory", fn);
    for (int r = 0; r < n; r++) {
        wick_tensor_retain(outs[r]);
        w.outs[r] = outs[r];
    }
    w.nouts = n;
    int t_in_list = 0;
    for (int r = 0; r < n; r++) t_in_list |= shares(outs[r], t);
    if ((st = t_in_list ? copy_of(t, &w.send, 1) : contiguous_of(t, &w.send)) ||
        (st = empty_like_n(t, w.count * n, &w.recv))) {
        work_release_tensors(&w);
        return st;
    }
    return submit(g, &w, work);
}

wick_status wick_dist_all_gather_into_tensor(wick_tensor *out, wick_tensor *t, wick_dist_work **work) {
    const char *fn = "all_gather_into_tensor";
    GROUP_OR_FAIL(fn);
    WORK_INIT(w);
    wick_status st;
    w.kind = K_ALL_GATHER_INTO;
    w.device = -2;
    if ((st = check_tensor(fn, out, "out")) || (st = check_tensor(fn, t, "the tensor")) ||
        (st = check_device(g, fn, out, "out", &w.device)) || (st = check_device(g, fn, t, "the tensor", &w.device)) ||
        (st = same_dtype(fn, out, t, "out")))
        return st;
    w.dtype = wick_tensor_dtype(t);
    w.count = wick_tensor_numel(t);
    if (wick_tensor_numel(out) != w.count * g->size)
        return wick_fail(WICK_ERR_SHAPE,
                         "wick.distributed.%s: out must hold world size (%d) x the tensor's %lld elements, got %lld",
                         fn, g->size, (long long)w.count, (long long)wick_tensor_numel(out));
    if ((st = stage_send(&w, t, out)) || (st = stage_recv(&w, out))) {
        work_release_tensors(&w);
        return st;
    }
    return submit(g, &w, work);
}

wick_status wick_dist_reduce_scatter_tensor(wick_tensor *out, wick_tensor *t, wick_dist_op op,
                                            wick_dist_work **work) {
    const char *fn = "reduce_scatter_tensor";
    GROUP_OR_FAIL(fn);
    WORK_INIT(w);
    wick_status st;
    w.kind = K_REDUCE_SCATTER;
    w.device = -2;
    if ((st = check_tensor(fn, out, "out")) || (st = check_tensor(fn, t, "the tensor")) ||
        (st = check_device(g, fn, out, "out", &w.device)) || (st = check_device(g, fn, t, "the tensor", &w.device)) ||
        (st = same_dtype(fn, out, t, "out")) || (st = check_op(fn, op, wick_tensor_dtype(t), &w)))
        return st;
    w.dtype = wick_tensor_dtype(t);
    w.count = wick_tensor_numel(out);
    if (wick_tensor_numel(t) != w.count * g->size)
        return wick_fail(WICK_ERR_SHAPE,
                         "wick.distributed.%s: the tensor must hold world size (%d) x out's %lld elements, got %lld",
                         fn, g->size, (long long)w.count, (long long)wick_tensor_numel(t));
    if ((st = stage_send(&w, t, out)) || (st = stage_recv(&w, out))) {
        work_release_tensors(&w);
        return st;
    }
    return submit(g, &w, work);
}

wick_status wick_dist_barrier(wick_dist_work **work) {
    GROUP_OR_FAIL("barrier");
    WORK_INIT(w);
    w.kind = K_BARRIER;
    w.device = -1;
    w.dtype = WICK_UINT8;
    return submit(g, &w, work);
}

/* A send's or recv's work, checked and staged (not submitted); on an error
 * the caller releases w's tensors. */
static wick_status p2p_prepare(wk_dist_group *g, int is_recv, wick_tensor *t, int peer, wick_dist_work *w) {
    const char *fn = is_recv ? "recv" : "send";
    wick_status st;
    w->kind = is_recv ? K_RECV : K_SEND;
    w->device = -2;
    w->peer = peer;
    if ((st = check_tensor(fn, t, "the tensor")) || (st = check_rank(g, fn, is_recv ? "src" : "dst", peer, 1)) ||
        (st = check_device(g, fn, t, "the tensor", &w->device)))
        return st;
    if (is_recv) return stage_inplace(w, t, 0);
    w->dtype = wick_tensor_dtype(t);
    w->count = wick_tensor_numel(t);
    return contiguous_of(t, &w->send);
}

static wick_status p2p_one(int is_recv, wick_tensor *t, int peer, wick_dist_work **work) {
    GROUP_OR_FAIL(is_recv ? "recv" : "send");
    WORK_INIT(w);
    wick_status st = p2p_prepare(g, is_recv, t, peer, &w);
    if (st) {
        work_release_tensors(&w);
        return st;
    }
    return submit(g, &w, work);
}

wick_status wick_dist_send(wick_tensor *t, int dst, wick_dist_work **work) { return p2p_one(0, t, dst, work); }
wick_status wick_dist_recv(wick_tensor *t, int src, wick_dist_work **work) { return p2p_one(1, t, src, work); }

/* An asynchronous backend's batch: queued as one (p2p_batch), each op's
 * staged result written back on the stream, then a handle per op. */
static wick_status batch_on_stream(wk_dist_group *g, wick_dist_work *ws, int n, wick_dist_work **works) {
    struct wk_dist_engine *e = g->engine;
    wk_dist_p2p *d = malloc(sizeof *d * (size_t)n);
    if (!d) return wick_fail(WICK_ERR_OOM, "wick.distributed.batch_isend_irecv: out of memory");
    for (int i = 0; i < n; i++) {
        wick_dist_work *w = &ws[i];
        w->g = g;
        w->be = g->be;
        w->seq = ++e->seq;
        w->start_ns = now_ns();
        d[i] = (wk_dist_p2p){w->kind == K_RECV, data_of(w->kind == K_RECV ? w->recv : w->send), w->count, w->dtype,
                             w->peer};
    }
    mark_running(e, &ws[0]);
    wick_status st = g->be->p2p_batch(g, d, n, ws[0].device);
    __atomic_store_n(&e->run_seq, 0, __ATOMIC_RELEASE);
    free(d);
    for (int i = 0; i < n && !st; i++) st = finish_result(g, &ws[i]);
    for (int i = 0; i < n && !st; i++) st = pend_on_stream(g, &ws[i], &works[i]);
    return st;
}

wick_status wick_dist_batch_isend_irecv(const wick_dist_p2p_op *ops, int n, wick_dist_work **works) {
    const char *fn = "batch_isend_irecv";
    GROUP_OR_FAIL(fn);
    if (!ops || !works || n < 1 || n > (1 << 20))
        return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed.%s: expected a non-empty list of P2POp (got %d)", fn,
                         n);
    for (int i = 0; i < n; i++) works[i] = NULL;
    wick_dist_work *ws = malloc(sizeof *ws * (size_t)n);
    if (!ws) return wick_fail(WICK_ERR_OOM, "wick.distributed.%s: out of memory", fn);
    for (int i = 0; i < n; i++) {
        memset(&ws[i], 0, offsetof(wick_dist_work, msg));
        ws[i].msg[0] = '\0';
    }
    wick_status st = WICK_OK;
    for (int i = 0; i < n && !st; i++) {
        st = p2p_prepare(g, ops[i].is_recv != 0, ops[i].tensor, ops[i].peer, &ws[i]);
        if (!st && g->be->asynchronous && ws[i].device != ws[0].device)
            st = wick_fail(WICK_ERR_DEVICE,
                           "wick.distributed.%s: op %d's tensor is on cuda:%d, op 1's on cuda:%d (a batch moves "
                           "tensors of one device)",
                           fn, i + 1, ws[i].device, ws[0].device);
    }
    if (!st && g->be->asynchronous && g->be->p2p_batch) st = batch_on_stream(g, ws, n, works);
    else
        for (int i = 0; i < n && !st; i++) { /* each started (p2p_start) or queued in order */
            ws[i].g = g;
            ws[i].seq = ++g->engine->seq;
            st = g->be->asynchronous ? submit_queued_on_stream(g, &ws[i], &works[i])
                 : g->be->p2p_start  ? submit_p2p(g, &ws[i], &works[i])
                                     : submit_async(g, &ws[i], &works[i]);
        }
    for (int i = 0; i < n; i++) work_release_tensors(&ws[i]); /* what no handle took */
    free(ws);
    if (st)
        for (int i = 0; i < n; i++) {
            wick_dist_work_release(works[i]); /* started ones finish on their own */
            works[i] = NULL;
        }
    return st;
}

/* ---- work handles ---- */

/* the group whose in-flight list holds w, or NULL */
static wk_dist_group *p2p_group_of(const wick_dist_work *w) {
    wk_dist_group *g = g_default;
    return g && g == w->g && (w->kind == K_SEND || w->kind == K_RECV) && g->be->p2p_start ? g : NULL;
}

wick_status wick_dist_work_wait(wick_dist_work *w) {
    if (!w) return wick_fail(WICK_ERR_ARGUMENT, "wick.distributed: wait on a NULL work");
    wk_dist_group *pg = __atomic_load_n(&w->done, __ATOMIC_ACQUIRE) ? NULL : p2p_group_of(w);
    if (pg) p2p_wait(pg, w);
    if (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) && w->event) {
        /* an asynchronous backend's: the watchdog marks it done; wait for the event here */
        wk_dist_group *g = g_default;
        if (g && g == w->g) {
            wick_status st = g->be->event_wait(g, w->event);
            if (st) return st;
            work_finish(w, WICK_OK); /* the watchdog takes it off its list at its next look */
        }
    }
    pthread_mutex_lock(&work_lock);
    while (!__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) && !w->event) pthread_cond_wait(&work_cond, &work_lock);
    pthread_mutex_unlock(&work_lock);
    if (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) && w->status) return wick_fail(w->status, "%s", w->msg);
    return WICK_OK;
}

int wick_dist_work_is_completed(wick_dist_work *w) {
    if (!w) return 0;
    if (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) return 1;
    wk_dist_group *pg = p2p_group_of(w);
    if (pg) {
        p2p_progress(pg);
        return __atomic_load_n(&w->done, __ATOMIC_ACQUIRE);
    }
    if (w->event) {
        wk_dist_group *g = g_default;
        return g && g == w->g && g->be->event_query(g, w->event) == 1;
    }
    return 0;
}

void wick_dist_work_release(wick_dist_work *w) { work_unref(w); }

double wick_dist_work_seconds(wick_dist_work *w) {
    if (!w || !__atomic_load_n(&w->done, __ATOMIC_ACQUIRE)) return -1;
    return (double)(w->end_ns - w->start_ns) * 1e-9;
}
