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

/* One line: (key, position) pairs, insertion sort on runs of SORT_RUN, then
 * bottom-up merges between two buffers. A pair moves before another only when
 * its key strictly goes first, so equal keys keep their order (stable). Only
 * the first k go out (topk); when k is small against n they are selected by a
 * heap of k instead (the pair goes before another when its key does, or the
 * keys tie and its position is earlier: the same order). */
#define SORT_RUN 16
#define DEFINE_SORT_LINE(name, T, BEFORE)                                                              \
    typedef struct {                                                                                   \
        T key;                                                                                         \
        int64_t pos;                                                                                   \
    } name##_pair;                                                                                     \
    static inline int name##_first(T a, T b, int desc) { return desc ? BEFORE(b, a) : BEFORE(a, b); }  \
    static inline int name##_pfirst(name##_pair x, name##_pair y, int desc) {                          \
        return name##_first(x.key, y.key, desc) || (!name##_first(y.key, x.key, desc) && x.pos < y.pos); \
    }                                                                                                  \
    /* restores the heap below i: the root is the pair that goes last */                               \
    static void name##_sift(name##_pair *h, int64_t k, int64_t i, int desc) {                          \
        for (;;) {                                                                                     \
            int64_t c = 2 * i + 1, worst = i;                                                          \
            if (c < k && name##_pfirst(h[worst], h[c], desc)) worst = c;                               \
            if (c + 1 < k && name##_pfirst(h[worst], h[c + 1], desc)) worst = c + 1;                   \
            if (worst == i) return;                                                                    \
            name##_pair t = h[i];                                                                      \
            h[i] = h[worst], h[worst] = t;                                                             \
            i = worst;                                                                                 \
        }                                                                                              \
    }                                                                                                  \
    static void name##_select(const T *in, int64_t stride, int64_t n, int64_t k, int desc, T *values,  \
                              int64_t *indices, name##_pair *h) {                                      \
        for (int64_t i = 0; i < k; i++) h[i] = (name##_pair){in[i * stride], i};                       \
        for (int64_t i = k / 2 - 1; i >= 0; i--) name##_sift(h, k, i, desc);                           \
        for (int64_t i = k; i < n; i++) {                                                              \
            name##_pair x = {in[i * stride], i};                                                       \
            if (name##_pfirst(x, h[0], desc)) {                                                        \
                h[0] = x;                                                                              \
                name##_sift(h, k, 0, desc);                                                            \
            }                                                                                          \
        }                                                                                              \
        for (int64_t m = k; m > 0; m--) { /* the last of the m left goes to place m - 1 */             \
            values[(m - 1) * stride] = h[0].key;                                                       \
            indices[(m - 1) * stride] = h[0].pos;                                                      \
            h[0] = h[m - 1];                                                                           \
            name##_sift(h, m - 1, 0, desc);                                                            \
        }                                                                                              \
    }                                                                                                  \
    static void name(const char *in_, int64_t stride, int64_t n, int64_t k, int desc, char *values_,  \
                     int64_t *indices, void *scratch) {                                                \
        const T *in = (const T *)in_;                                                                  \
        T *values = (T *)values_;                                                                      \
        name##_pair *a = scratch, *b = a + n;                                                          \
        if (k == 0) return;                                                                            \
        if (k * 8 < n) {                                                                               \
            name##_select(in, stride, n, k, desc, values, indices, a);                                 \
            return;                                                                                    \
        }                                                                                              \
        for (int64_t i = 0; i < n; i++) a[i] = (name##_pair){in[i * stride], i};                       \
        for (int64_t lo = 0; lo < n; lo += SORT_RUN) {                                                 \
            int64_t hi = lo + SORT_RUN < n ? lo + SORT_RUN : n;                                        \
            for (int64_t i = lo + 1; i < hi; i++) {                                                    \
                name##_pair x = a[i];                                                                  \
                int64_t j = i;                                                                         \
                while (j > lo && name##_first(x.key, a[j - 1].key, desc)) a[j] = a[j - 1], j--;        \
                a[j] = x;                                                                              \
            }                                                                                          \
        }                                                                                              \
        for (int64_t w = SORT_RUN; w < n; w *= 2) {                                                    \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                                \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;           \
                int64_t i = lo, j = mid, o = lo;                                                       \
                while (i < mid && j < hi) /* the right one only when strictly first */                \
                    b[o++] = name##_first(a[j].key, a[i].key, desc) ? a[j++] : a[i++];                 \
                while (i < mid) b[o++] = a[i++];                                                       \
                while (j < hi) b[o++] = a[j++];                                                        \
            }                                                                                          \
            name##_pair *t = a;                                                                        \
            a = b, b = t;                                                                              \
        }                                                                                              \
        for (int64_t i = 0; i < k; i++) {                                                              \
            values[i * stride] = a[i].key;                                                             \
            indices[i * stride] = a[i].pos;                                                            \
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
    /* two buffers of (key, position) pairs; a pair takes at most 16 bytes */
    void *scratch = malloc((size_t)n * 2 * 16);
    if (!scratch) {
        __atomic_store_n(&job->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t line = begin; line < end; line++) {
        int64_t o = line / a->inner, j = line % a->inner;
        int64_t base = o * n * a->inner + j, obase = o * a->k * a->inner + j;
        const char *in = a->in + base * es;
        char *values = a->values + obase * es;
        int64_t *indices = a->indices + obase;
        if (a->dtype == WICK_FLOAT32) sort_line_f32(in, a->inner, n, a->k, a->descending, values, indices, scratch);
        else if (a->dtype == WICK_FLOAT64) sort_line_f64(in, a->inner, n, a->k, a->descending, values, indices, scratch);
        else sort_line_i64(in, a->inner, n, a->k, a->descending, values, indices, scratch);
    }
    free(scratch);
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

DEFINE_SCAN(scan_f64, double)

/* float32 accumulates in double, as PyTorch's CPU scans do (a normalised
 * pdf's cumsum ends at 1, not 1.0000001: NeRF's searchsorted picks PyTorch's
 * bin); the accumulators for up to SCAN_BLOCK inner positions at a time. */
#define SCAN_BLOCK 256
static void scan_f32(const wk_scan_args *a, int64_t o) {
    int64_t n = a->n, inner = a->inner;
    const float *in = (const float *)a->in + o * n * inner;
    float *out = (float *)a->out + o * n * inner;
    double acc[SCAN_BLOCK];
    for (int64_t j0 = 0; j0 < inner; j0 += SCAN_BLOCK) {
        int64_t m = inner - j0 < SCAN_BLOCK ? inner - j0 : SCAN_BLOCK;
        for (int64_t s = 0; s < n; s++) {
            int64_t k = a->reverse ? n - 1 - s : s;
            const float *x = in + k * inner + j0;
            float *y = out + k * inner + j0;
            if (s == 0) {
                for (int64_t j = 0; j < m; j++) acc[j] = x[j];
            } else if (a->prod) {
                for (int64_t j = 0; j < m; j++) acc[j] *= x[j];
            } else {
                for (int64_t j = 0; j < m; j++) acc[j] += x[j];
            }
            for (int64_t j = 0; j < m; j++) y[j] = (float)acc[j];
        }
    }
}
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
