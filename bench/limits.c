/* bench/limits.c — the raw limits the wick benchmarks are compared with:
 *   sgemm_N      raw cblas_sgemm GFLOP/s on N x N float32 (C preallocated), N = 256..2048
 *   triad_16M    GB/s of a plain C loop a[i] = b[i] + c[i] on 16M floats, counted
 *                as 3 x 4 bytes per element (read b, read c, write a), buffers warm
 * and, as diagnostics (same byte count):
 *   triad_fresh_16M      the same loop into a freshly malloc'd output each time
 *                        (page faults of the new buffer included, as in an
 *                        out-of-place op that allocates its result)
 *   triad_fresh_thp_16M  the same with the fresh buffer madvise'd MADV_HUGEPAGE
 *   inplace_16M          a[i] += b[i], warm buffers
 * Usage: bench_limits [threads]   (default 1; sets OpenBLAS threads and the triad's)
 * Output: one `name<TAB>value` line per measurement, median of several repeats. */
#define _DEFAULT_SOURCE
#include <cblas.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* The limit is the matrix library wick itself links (CMake passes which). */
#ifdef WICK_BLAS_BLIS
void bli_thread_set_num_threads(long n);
#define blas_set_num_threads(n) bli_thread_set_num_threads(n)
#else
#define blas_set_num_threads(n) openblas_set_num_threads(n)
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define REPEATS 5

/* ---- sgemm ---- */

static void bench_sgemm(int n, int iters, int repeats) {
    float *a = malloc(sizeof(float) * n * n), *b = malloc(sizeof(float) * n * n), *c = malloc(sizeof(float) * n * n);
    for (int i = 0; i < n * n; i++) {
        a[i] = (float)((i * 7 % 13) - 6) / 13.0f;
        b[i] = (float)((i * 5 % 11) - 5) / 11.0f;
        c[i] = 0;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n); /* warm-up */
    double t[REPEATS];
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        for (int i = 0; i < iters; i++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
        t[r] = (now() - t0) / iters;
    }
    double s = median(t, repeats);
    printf("sgemm_%d\t%.3f\n", n, 2.0 * n * n * n / s * 1e-9);
    fflush(stdout);
    free(a);
    free(b);
    free(c);
}

/* ---- triad ---- */

#define TRIAD_N (16 * 1024 * 1024)

typedef struct {
    float *restrict a;
    const float *restrict b, *restrict c;
    int64_t begin, end;
} triad_job;

static void *triad_part(void *p) {
    triad_job *j = p;
    float *restrict a = j->a;
    const float *restrict b = j->b, *restrict c = j->c;
    if (a == c) /* the in-place form a[i] += b[i] */
        for (int64_t i = j->begin; i < j->end; i++) a[i] += b[i];
    else
        for (int64_t i = j->begin; i < j->end; i++) a[i] = b[i] + c[i];
    return NULL;
}

static void triad(float *a, const float *b, const float *c, int64_t n, int threads) {
    pthread_t tid[64];
    triad_job jobs[64];
    for (int k = 0; k < threads; k++) {
        jobs[k] = (triad_job){a, b, c, n * k / threads, n * (k + 1) / threads};
        if (k > 0) pthread_create(&tid[k], NULL, triad_part, &jobs[k]);
    }
    triad_part(&jobs[0]);
    for (int k = 1; k < threads; k++) pthread_join(tid[k], NULL);
}

/* mode 0: a = b + c into a warm buffer (the limit); the rest are diagnostics:
 * 1: a = b + c into a fresh malloc each time (its page faults timed, like an
 *    out-of-place op that allocates its output); 2: the same with the fresh
 *    buffer advised MADV_HUGEPAGE; 3: in place, a += b (warm). */
static void bench_triad(const char *name, int mode, int threads) {
    size_t bytes = sizeof(float) * TRIAD_N;
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    if (!a || !b || !c) {
        fprintf(stderr, "bench_limits: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < TRIAD_N; i++) {
        a[i] = 0;
        b[i] = (float)(i & 1023);
        c[i] = 1.0f;
    }
    enum { REPS = 7 };
    double t[REPS];
    float sum = 0;
    for (int r = -1; r < REPS; r++) { /* r = -1: warm-up */
        float *out = a;
        if (mode == 1 || mode == 2) {
            void *p = NULL;
            if (posix_memalign(&p, 2 << 20, bytes)) exit(1);
            out = p;
        }
        double t0 = now();
        if (mode == 2) madvise(out, bytes, MADV_HUGEPAGE);
        triad(out, b, mode == 3 ? out : c, TRIAD_N, threads);
        if (r >= 0) t[r] = now() - t0;
        sum += out[TRIAD_N / 2];
        if (out != a) free(out);
    }
    volatile float sink = sum;
    (void)sink;
    printf("%s\t%.3f\n", name, 3.0 * 4 * TRIAD_N / median(t, REPS) * 1e-9);
    fflush(stdout);
    free(a);
    free(b);
    free(c);
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    if (threads < 1 || threads > 64) {
        fprintf(stderr, "usage: bench_limits [threads 1..64]\n");
        return 1;
    }
    blas_set_num_threads(threads);
    /* the same counts as bench/ops.lua and bench/ops_torch.py */
    static const int sizes[] = {256, 512, 1024, 2048}, iters[] = {20, 5, 1, 1}, repeats[] = {5, 5, 5, 3};
    for (int i = 0; i < 4; i++) bench_sgemm(sizes[i], iters[i], repeats[i]);
    bench_triad("triad_16M", 0, threads);
    bench_triad("triad_fresh_16M", 1, threads);
    bench_triad("triad_fresh_thp_16M", 2, threads);
    bench_triad("inplace_16M", 3, threads);
    return 0;
}
