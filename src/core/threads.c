/* A small thread pool for wick's own CPU kernels, sharing one thread budget with
 * the BLAS library. Workers sleep on a condition variable between jobs (no
 * spinning against the BLAS library's own threads), and tiny ops never touch the
 * pool: wk_parallel_for runs inline below its grain size. Per process; its workers
 * watch the interrupt flag of the thread whose job they run. */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

/* The matrix library's own thread count: the CPU backend sets it (its table's
 * set_num_threads), so the core knows no BLAS. */
static void blas_set_num_threads(int n) {
    if (wk_cpu_backend.set_num_threads) wk_cpu_backend.set_num_threads(n);
}

#define MAX_THREADS 64

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_start = PTHREAD_COND_INITIALIZER, job_done = PTHREAD_COND_INITIALIZER;
static int num_threads = 0; /* atomic; 0: not yet decided */
static int workers_started = 0;
static uint64_t generation = 0;
static int pending = 0;
static struct {
    wk_range_fn fn;
    void *ctx;
    int64_t n, piece;
    int parts;
    wick_interrupt_flag *flag; /* the caller's: its workers watch it for this job */
    bool stopped;              /* a worker stopped early */
} job;
static _Thread_local int inside_job = 0;
static _Thread_local bool nested_stop = 0; /* a wk_parallel_for inside a range stopped early */

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

static bool run_part(int part) {
    int64_t begin = job.n * part / job.parts, end = job.n * (part + 1) / job.parts;
    return run_range(job.fn, job.ctx, begin, end, job.piece, job.flag);
}

static void *worker_main(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t seen = 0;
    inside_job = 1;
    pthread_mutex_lock(&job_lock);
    for (;;) {
        while (generation == seen) pthread_cond_wait(&job_start, &job_lock);
        seen = generation;
        if (id >= job.parts) continue;
        pthread_mutex_unlock(&job_lock);
        wick_interrupt_watch(job.flag); /* nested checks in this part look at the caller's flag */
        bool stopped = run_part(id);
        pthread_mutex_lock(&job_lock);
        if (stopped) job.stopped = true;
        if (--pending == 0) pthread_cond_signal(&job_done);
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
    while (workers_started < parts - 1) { /* worker i runs part i; the caller runs part 0 */
        pthread_t tid;
        if (pthread_create(&tid, NULL, worker_main, (void *)(intptr_t)(workers_started + 1)) != 0) break;
        pthread_detach(tid);
        workers_started++;
    }
    if (parts > workers_started + 1) parts = workers_started + 1;
    job.fn = fn, job.ctx = ctx, job.n = n, job.parts = parts, job.piece = piece_of(grain);
    job.flag = flag, job.stopped = false;
    pending = parts - 1;
    generation++;
    pthread_cond_broadcast(&job_start);
    pthread_mutex_unlock(&job_lock);
    inside_job = 1;
    bool stopped = run_part(0);
    inside_job = 0;
    pthread_mutex_lock(&job_lock);
    while (pending > 0) pthread_cond_wait(&job_done, &job_lock);
    stopped = stopped || job.stopped;
    pthread_mutex_unlock(&job_lock);
    pthread_mutex_unlock(&pool_lock);
    return stopped ? stopped_early(flag) : WICK_OK;
}
