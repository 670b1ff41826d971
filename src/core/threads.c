/* A small thread pool for wick's CPU kernels and, through them, the BLAS library:
 * the CPU backend keeps BLAS on one thread and splits large products over this
 * pool (cpu_gemm.c), so one pool owns the cores. A job is cut into parts that the
 * caller and the workers claim one by one, so the caller never sits waiting for
 * a worker that has not started yet (on a busy machine it runs that part
 * itself). Between jobs a worker watches for the next one for a short while
 * (WICK_SPIN_US, default 300 us, GNU OpenMP's order of magnitude: a training
 * step's parallel ops come that close together, with the data loader's batch
 * and the Lua between them, and waking a sleeping thread costs tens of us on a
 * VM: the MLP epoch at 2 threads, Xeon VM, alternating runs, took 1.35 s with
 * 50 us against 1.06 with 300), yielding the CPU to any other runnable thread
 * while it watches, then sleeps on a condition variable;
 * the caller waits for the last parts the same way. Tiny ops never touch the
 * pool: wk_parallel_for runs inline below its grain size. Per process; its
 * workers watch the interrupt flag of the thread whose job they run. */
#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* Tells the matrix library the thread budget: the CPU backend (its table's
 * set_num_threads) keeps it at one thread, so the core knows no BLAS. */
static void blas_set_num_threads(int n) {
    if (wk_cpu_backend.set_num_threads) wk_cpu_backend.set_num_threads(n);
}

#define MAX_THREADS 64

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_start = PTHREAD_COND_INITIALIZER, job_done = PTHREAD_COND_INITIALIZER;
static int num_threads = 0; /* atomic; 0: not yet decided */
static int workers_started = 0;
/* A job is cut into `parts` parts of the range; the caller and the workers claim
 * them one at a time, so a worker that wakes late (a busy machine) leaves its part
 * to the caller instead of keeping it waiting. The cut depends only on n and the
 * thread count, never on who runs which part. */
typedef struct {
    wk_range_fn fn;
    void *ctx;
    int64_t n, piece;
    int parts;
    wick_interrupt_flag *flag; /* the caller's: its workers watch it for this job */
} pool_job;
static pool_job job; /* written under job_lock before generation moves; workers copy it under the lock */
/* written under job_lock, atomically: watch() reads it without the lock */
static uint64_t generation = 0;
/* atomic: the low 32 bits of the job's generation, above the number of parts claimed */
static uint64_t claims = 0;
static uint64_t done = 0;  /* atomic: parts of the current job finished */
static int job_stopped = 0; /* atomic: a part of the current job stopped early */
static _Thread_local int inside_job = 0;
static _Thread_local bool nested_stop = 0; /* a wk_parallel_for inside a range stopped early */

/* ---- waiting: a short watch, then sleep ---- */

static int64_t spin_ns = -1; /* atomic; -1: not yet read from WICK_SPIN_US */

static int64_t spin_budget(void) {
    int64_t ns = __atomic_load_n(&spin_ns, __ATOMIC_RELAXED);
    if (ns >= 0) return ns;
    const char *env = getenv("WICK_SPIN_US");
    long us = env ? atol(env) : 300;
    ns = (us < 0 ? 0 : us > 10000 ? 10000 : us) * 1000; /* at most 10 ms */
    __atomic_store_n(&spin_ns, ns, __ATOMIC_RELAXED);
    return ns;
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Watches *v for up to the spin budget until (*v == value) == equal; false when
 * the budget ran out. The caller then takes job_lock and checks again (and sleeps
 * on the condition variable if it must). */
static bool watch(const uint64_t *v, uint64_t value, bool equal) {
    int64_t budget = spin_budget(), start = 0;
    for (int i = 0; budget > 0; i++) {
        if ((__atomic_load_n(v, __ATOMIC_ACQUIRE) == value) == equal) return true;
        if (i < 64) {
            cpu_relax();
            continue;
        }
        sched_yield(); /* another runnable thread (the one awaited, on a busy machine) goes first */
        int64_t t = now_ns();
        if (!start) start = t;
        else if (t - start > budget) break;
    }
    return false;
}

static int default_threads(void) {
    const char *env = getenv("WICK_NUM_THREADS");
    if (!env) env = getenv("OMP_NUM_THREADS");
    int n = env ? atoi(env) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n;
}

/* Long ranges run in pieces of `piece` units with a look at the interrupt flag
 * between them, so an interrupt stops a long kernel. True when it stopped
 * before the end: the kernel's op then fails (wk_parallel_for's status). */
static bool run_range(wk_range_fn fn, void *ctx, int64_t begin, int64_t end, int64_t piece,
                      const wick_interrupt_flag *flag) {
    while (begin < end) {
        if (wk_interrupt_raised(flag)) return true;
        int64_t stop = end - begin > piece ? begin + piece : end;
        fn(ctx, begin, stop);
        if (nested_stop) return nested_stop = false, true;
        begin = stop;
    }
    return false;
}

static int64_t piece_of(int64_t grain) { return grain < (1 << 14) ? (int64_t)1 << 20 : grain * 64; }

static uint64_t tag_of(uint64_t gen) { return (gen & 0xffffffffu) << 32; }

/* The next unclaimed part of job `gen`, or -1 when none is left or the job is over. */
static int64_t claim(uint64_t gen, int parts) {
    uint64_t v = __atomic_load_n(&claims, __ATOMIC_ACQUIRE);
    for (;;) {
        if ((v & ~(uint64_t)0xffffffffu) != tag_of(gen) || (int64_t)(v & 0xffffffffu) >= parts) return -1;
        if (__atomic_compare_exchange_n(&claims, &v, v + 1, true, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return (int64_t)(v & 0xffffffffu);
    }
}

/* Runs parts of job `gen` while there are some to claim. A worker finishing the
 * last one wakes the caller (`notify`). */
static void run_parts(const pool_job *j, uint64_t gen, bool notify) {
    for (int64_t p; (p = claim(gen, j->parts)) >= 0;) {
        if (run_range(j->fn, j->ctx, j->n * p / j->parts, j->n * (p + 1) / j->parts, j->piece, j->flag))
            __atomic_store_n(&job_stopped, 1, __ATOMIC_RELAXED);
        if (__atomic_add_fetch(&done, 1, __ATOMIC_ACQ_REL) == (uint64_t)j->parts && notify) {
            pthread_mutex_lock(&job_lock); /* the caller checks `done` under it before sleeping */
            pthread_cond_signal(&job_done);
            pthread_mutex_unlock(&job_lock);
        }
    }
}

static void *worker_main(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t seen = 0;
    inside_job = 1;
    pthread_mutex_lock(&job_lock);
    for (;;) {
        if (generation == seen) { /* watch for the next job a while before sleeping */
            pthread_mutex_unlock(&job_lock);
            watch(&generation, seen, false);
            pthread_mutex_lock(&job_lock);
        }
        while (generation == seen) pthread_cond_wait(&job_start, &job_lock);
        seen = generation;
        if (id >= job.parts) continue; /* a smaller job than this pool */
        pool_job j = job;
        pthread_mutex_unlock(&job_lock);
        wick_interrupt_watch(j.flag); /* nested checks in this part look at the caller's flag */
        run_parts(&j, seen, true);
        pthread_mutex_lock(&job_lock);
    }
    return NULL;
}

int wick_get_num_threads(void) {
    int n = __atomic_load_n(&num_threads, __ATOMIC_RELAXED);
    if (n) return n;
    /* decided once: a concurrent wick_set_num_threads wins over the default */
    int expected = 0, d = default_threads();
    pthread_mutex_lock(&pool_lock);
    if (__atomic_compare_exchange_n(&num_threads, &expected, d, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        blas_set_num_threads(d);
    pthread_mutex_unlock(&pool_lock);
    return __atomic_load_n(&num_threads, __ATOMIC_RELAXED);
}

/* Waits for the running job (pool_lock), so a job's split never changes under it. */
void wick_set_num_threads(int n) {
    if (n < 1) n = 1;
    if (n > MAX_THREADS) n = MAX_THREADS;
    pthread_mutex_lock(&pool_lock);
    __atomic_store_n(&num_threads, n, __ATOMIC_RELAXED);
    blas_set_num_threads(n);
    pthread_mutex_unlock(&pool_lock);
}

/* The status of a range that stopped early: the outermost call lowers the flag
 * and fails; one nested in another job's range marks that range as stopped. */
static wick_status stopped_early(wick_interrupt_flag *flag) {
    if (inside_job) {
        nested_stop = true;
    } else {
        wick_interrupt_take(flag);
    }
    return wk_interrupted(NULL);
}

wick_status wk_parallel_for(int64_t n, int64_t grain, wk_range_fn fn, void *ctx) {
    wick_interrupt_flag *flag = wk_interrupt_watched();
    int threads = wick_get_num_threads();
    if (threads == 1 || n < 2 * grain || inside_job || pthread_mutex_trylock(&pool_lock) != 0)
        return run_range(fn, ctx, 0, n, piece_of(grain), flag) ? stopped_early(flag) : WICK_OK;
    int parts = (int)(n / grain < threads ? n / grain : threads);
    pthread_mutex_lock(&job_lock);
    while (workers_started < parts - 1) { /* workers 1 .. parts - 1 take part; the caller too */
        pthread_t tid;
        if (pthread_create(&tid, NULL, worker_main, (void *)(intptr_t)(workers_started + 1)) != 0) break;
        pthread_detach(tid);
        workers_started++;
    }
    pool_job j = {fn, ctx, n, piece_of(grain), parts, flag};
    uint64_t gen = generation + 1;
    job = j;
    __atomic_store_n(&done, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&job_stopped, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&claims, tag_of(gen), __ATOMIC_RELEASE);
    __atomic_store_n(&generation, gen, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&job_start);
    pthread_mutex_unlock(&job_lock);
    inside_job = 1;
    run_parts(&j, gen, false);
    inside_job = 0;
    watch(&done, (uint64_t)parts, true); /* the workers' parts usually end about now */
    pthread_mutex_lock(&job_lock);
    while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) != (uint64_t)parts) pthread_cond_wait(&job_done, &job_lock);
    pthread_mutex_unlock(&job_lock);
    bool stopped = __atomic_load_n(&job_stopped, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&pool_lock);
    return stopped ? stopped_early(flag) : WICK_OK;
}

void wk_parallel_for_whole(int64_t n, int64_t grain, wk_range_fn fn, void *ctx) {
    static wick_interrupt_flag never; /* never raised: the parts (and the workers) watch it */
    wick_interrupt_flag *before = wick_interrupt_watch(&never);
    wick_status st = wk_parallel_for(n, grain, fn, ctx);
    wick_interrupt_watch(before);
    (void)st; /* only an interrupt fails it */
}
