/* The CPU's sort and scan kernels (wk_sort_args, wk_scan_args in
 * src/core/internal.h): one line of the [outer, n, inner] layout at a time,
 * lines split among threads. The sort is a bottom-up merge sort of positions
 * (stable: a tie keeps the earlier position first), NaN above every number. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

/* ---- sort ---- */

/* "a goes before b" for ascending order with NaN last; descending swaps the
 * keys, so NaN comes first there, as in PyTorch. Ties are left to the merge. */
#define SORT_BEFORE_FLOAT(x, y) ((x) < (y) || ((y) != (y) && (x) == (x)))
#define SORT_BEFORE_INT(x, y) ((x) < (y))

#define DEFINE_SORT_LINE(name, T, BEFORE)                                                              \
    static void name(const T *key, int64_t n, int desc, int64_t *idx, int64_t *tmp) {                  \
        for (int64_t i = 0; i < n; i++) idx[i] = i;                                                    \
        for (int64_t w = 1; w < n; w *= 2) {                                                           \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                                \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;           \
                int64_t i = lo, j = mid, k = lo;                                                       \
                while (i < mid && j < hi) {                                                            \
                    T a = key[idx[i]], b = key[idx[j]];                                                \
                    /* take from the right only when it strictly goes first: stable */                 \
                    int right = desc ? BEFORE(a, b) : BEFORE(b, a);                                    \
                    tmp[k++] = right ? idx[j++] : idx[i++];                                            \
                }                                                                                      \
                while (i < mid) tmp[k++] = idx[i++];                                                   \
                while (j < hi) tmp[k++] = idx[j++];                                                    \
            }                                                                                          \
            for (int64_t i = 0; i < n; i++) idx[i] = tmp[i];                                           \
        }                                                                                              \
    }

DEFINE_SORT_LINE(sort_line_f32, float, SORT_BEFORE_FLOAT)
DEFINE_SORT_LINE(sort_line_f64, double, SORT_BEFORE_FLOAT)
DEFINE_SORT_LINE(sort_line_i64, int64_t, SORT_BEFORE_INT)

typedef struct {
    const wk_sort_args *a;
    int failed; /* scratch memory was refused */
} sort_job;

static void sort_range(void *ctx, int64_t begin, int64_t end) {
    sort_job *job = ctx;
    const wk_sort_args *a = job->a;
    int64_t n = a->n;
    size_t es = wk_dtype_size(a->dtype);
    char *key = malloc((size_t)n * es);
    int64_t *idx = malloc((size_t)n * sizeof *idx), *tmp = malloc((size_t)n * sizeof *tmp);
    if (!key || !idx || !tmp) {
        __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
        goto done;
    }
    for (int64_t line = begin; line < end; line++) {
        int64_t o = line / a->inner, in = line % a->inner;
        int64_t base = o * n * a->inner + in;
        for (int64_t i = 0; i < n; i++) memcpy(key + i * es, a->in + (base + i * a->inner) * es, es);
        if (a->dtype == WICK_FLOAT32) sort_line_f32((const float *)key, n, a->descending, idx, tmp);
        else if (a->dtype == WICK_FLOAT64) sort_line_f64((const double *)key, n, a->descending, idx, tmp);
        else sort_line_i64((const int64_t *)key, n, a->descending, idx, tmp);
        for (int64_t i = 0; i < n; i++) {
            int64_t at = base + i * a->inner;
            memcpy(a->values + at * es, key + idx[i] * es, es);
            a->indices[at] = idx[i];
        }
    }
done:
    free(key);
    free(idx);
    free(tmp);
}

wick_status cpu_sort(const wk_sort_args *a) {
    sort_job job = {a, 0};
    int64_t lines = a->outer * a->inner;
    int64_t grain = a->n >= 4096 ? 1 : 4096 / (a->n > 0 ? a->n : 1);
    wick_status st = wk_parallel_for(lines, grain, sort_range, &job);
    if (st) return st;
    if (job.failed) return wick_fail(WICK_ERR_OOM, "out of memory in sort (scratch for lines of %lld)", (long long)a->n);
    return WICK_OK;
}

/* ---- scans ---- */

/* out[k] = out[k-1] op in[k] along n, for every inner position at once
 * (contiguous rows of `inner`, so the inner loop vectorises). */
#define DEFINE_SCAN(name, T)                                                                           \
    static void name(const wk_scan_args *a, int64_t o) {                                               \
        int64_t n = a->n, inner = a->inner;                                                            \
        const T *in = (const T *)a->in + o * n * inner;                                                \
        T *out = (T *)a->out + o * n * inner;                                                          \
        for (int64_t s = 0; s < n; s++) {                                                              \
            int64_t k = a->reverse ? n - 1 - s : s, prev = a->reverse ? k + 1 : k - 1;                 \
            const T *x = in + k * inner;                                                               \
            T *y = out + k * inner;                                                                    \
            if (s == 0) {                                                                              \
                for (int64_t j = 0; j < inner; j++) y[j] = x[j];                                       \
            } else if (a->prod) {                                                                      \
                const T *p = out + prev * inner;                                                       \
                for (int64_t j = 0; j < inner; j++) y[j] = p[j] * x[j];                                \
            } else {                                                                                   \
                const T *p = out + prev * inner;                                                       \
                for (int64_t j = 0; j < inner; j++) y[j] = p[j] + x[j];                                \
            }                                                                                          \
        }                                                                                              \
    }

DEFINE_SCAN(scan_f32, float)
DEFINE_SCAN(scan_f64, double)
/* int64 wraps on overflow, like PyTorch's (done in unsigned arithmetic: no UB) */
static void scan_i64(const wk_scan_args *a, int64_t o) {
    int64_t n = a->n, inner = a->inner;
    const int64_t *in = (const int64_t *)a->in + o * n * inner;
    int64_t *out = (int64_t *)a->out + o * n * inner;
    for (int64_t s = 0; s < n; s++) {
        int64_t k = a->reverse ? n - 1 - s : s, prev = a->reverse ? k + 1 : k - 1;
        for (int64_t j = 0; j < inner; j++) {
            uint64_t x = (uint64_t)in[k * inner + j];
            if (s > 0) {
                uint64_t p = (uint64_t)out[prev * inner + j];
                x = a->prod ? p * x : p + x;
            }
            out[k * inner + j] = (int64_t)x;
        }
    }
}

static void scan_range(void *ctx, int64_t begin, int64_t end) {
    const wk_scan_args *a = ctx;
    for (int64_t o = begin; o < end; o++) {
        if (a->dtype == WICK_FLOAT32) scan_f32(a, o);
        else if (a->dtype == WICK_FLOAT64) scan_f64(a, o);
        else scan_i64(a, o);
    }
}

wick_status cpu_scan(const wk_scan_args *a) {
    int64_t per = a->n * a->inner;
    int64_t grain = per >= 16384 ? 1 : 16384 / (per > 0 ? per : 1);
    return wk_parallel_for(a->outer, grain, scan_range, (void *)a);
}
