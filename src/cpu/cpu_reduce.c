/* CPU reductions. Floating sums accumulate in double; NaN wins max and min,
 * like PyTorch; ties give the first index. */
#include "cpu.h"

#include <math.h>

typedef struct {
    double value;
    int64_t index;
} reduced_f;

/* Sixteen float lanes (vector registers) over blocks of 256 elements, each
 * block's total then added in double: a lane adds only 16 values in float, so
 * the error stays near that of a double sum at the speed of a float one. */
WK_SIMD static double sum_f32_contiguous(const float *p, int64_t n) {
    double acc = 0;
    int64_t i = 0;
    for (; i + 256 <= n; i += 256) {
        float lane[16] = {0};
        for (int j = 0; j < 256; j += 16)
            for (int k = 0; k < 16; k++) lane[k] += p[i + j + k];
        float block = 0;
        for (int k = 0; k < 16; k++) block += lane[k];
        acc += block;
    }
    for (; i < n; i++) acc += p[i];
    return acc;
}

static reduced_f reduce_double(const wk_reduce_args *a, const char *base) {
    int64_t n = a->inner_size, s = a->inner_stride;
    const float *pf = (const float *)base;
    const double *pd = (const double *)base;
    bool is_f = a->in_dtype == WICK_FLOAT32;
#define AT(i) (is_f ? (double)pf[(i) * s] : pd[(i) * s])
    reduced_f r = {0, 0};
    switch (a->op) {
    case WICK_SUM:
    case WICK_MEAN: {
        double acc = 0;
        if (is_f && s == 1)
            acc = sum_f32_contiguous(pf, n);
        else
            for (int64_t i = 0; i < n; i++) acc += AT(i);
        r.value = a->op == WICK_MEAN ? acc / (double)n : acc;
        break;
    }
    case WICK_PROD: {
        double acc = 1;
        for (int64_t i = 0; i < n; i++) acc *= AT(i);
        r.value = acc;
        break;
    }
    case WICK_VAR:
    case WICK_STD: {
        double mean = 0, ss = 0;
        for (int64_t i = 0; i < n; i++) mean += AT(i);
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++) ss += (AT(i) - mean) * (AT(i) - mean);
        double denom = (double)n - a->correction;
        r.value = ss / (denom > 0 ? denom : 0); /* like PyTorch: max(0, N - correction); 0/0 is NaN, x/0 inf */
        if (a->op == WICK_STD) r.value = sqrt(r.value);
        break;
    }
    default: { /* max, min, argmax, argmin */
        bool want_max = a->op == WICK_MAX || a->op == WICK_ARGMAX;
        double best = AT(0);
        int64_t at = 0;
        for (int64_t i = 1; i < n && best == best; i++) {
            double v = AT(i);
            if (v != v || (want_max ? v > best : v < best)) best = v, at = i;
        }
        r.value = best;
        r.index = at;
        break;
    }
    }
#undef AT
    return r;
}

typedef struct {
    int64_t value, index;
} reduced_i;

static reduced_i reduce_int(const wk_reduce_args *a, const int64_t *p) {
    int64_t n = a->inner_size, s = a->inner_stride;
    reduced_i r = {0, 0};
    switch (a->op) {
    case WICK_SUM:
        for (int64_t i = 0; i < n; i++) r.value = (int64_t)((uint64_t)r.value + (uint64_t)p[i * s]);
        break;
    case WICK_PROD:
        r.value = 1;
        for (int64_t i = 0; i < n; i++) r.value = (int64_t)((uint64_t)r.value * (uint64_t)p[i * s]);
        break;
    default: {
        bool want_max = a->op == WICK_MAX || a->op == WICK_ARGMAX;
        r.value = p[0];
        for (int64_t i = 1; i < n; i++)
            if (want_max ? p[i * s] > r.value : p[i * s] < r.value) r.value = p[i * s], r.index = i;
        break;
    }
    }
    return r;
}

static void reduce_range(void *ctx, int64_t begin, int64_t end) {
    const wk_reduce_args *a = ctx;
    size_t ei = wk_dtype_size(a->in_dtype), eo = wk_dtype_size(a->out_dtype);
    bool arg = a->op == WICK_ARGMAX || a->op == WICK_ARGMIN;
    for (int64_t o = begin; o < end; o++) {
        int64_t in_off = 0, out_off = 0, idx_off = 0, rest = o;
        for (int d = a->outer_ndim - 1; d >= 0; d--) {
            int64_t i = rest % a->outer_sizes[d];
            rest /= a->outer_sizes[d];
            in_off += i * a->in_outer_strides[d];
            out_off += i * a->out_outer_strides[d];
            idx_off += i * a->idx_outer_strides[d];
        }
        const char *in = a->in + in_off * (int64_t)ei;
        char *out = a->out + out_off * (int64_t)eo;
        int64_t index;
        if (a->in_dtype == WICK_INT64) {
            reduced_i r = reduce_int(a, (const int64_t *)in);
            *(int64_t *)out = arg ? r.index : r.value;
            index = r.index;
        } else {
            reduced_f r = reduce_double(a, in);
            if (arg) *(int64_t *)out = r.index;
            else wk_store_double(out, a->out_dtype, r.value);
            index = r.index;
        }
        if (a->indices) ((int64_t *)a->indices)[idx_off] = index;
    }
}

/* ---- sums down columns ----
 * A sum (or mean) over a strided dim whose outputs lie side by side in the
 * input and the output (the last kept dim has stride 1 in both): a column sum
 * of a row-major matrix, every bias gradient. One output at a time would walk
 * each column a cache line per element; instead a block of COLUMN_BLOCK
 * outputs is added row by row. Each output still adds in double and in the
 * order of the reduced dim, as reduce_double does: the same bits. */
#define COLUMN_BLOCK 512

static bool column_sum(const wk_reduce_args *a) {
    int last = a->outer_ndim - 1;
    return (a->op == WICK_SUM || a->op == WICK_MEAN) && (a->in_dtype == WICK_FLOAT32 || a->in_dtype == WICK_FLOAT64) &&
           last >= 0 && a->inner_stride != 1 && a->in_outer_strides[last] == 1 && a->out_outer_strides[last] == 1 &&
           a->outer_sizes[last] >= 16 && !a->indices;
}

WK_SIMD static void column_add_f32(double *acc, const float *p, int64_t n) {
    for (int64_t j = 0; j < n; j++) acc[j] += p[j];
}

WK_SIMD static void column_add_f64(double *acc, const double *p, int64_t n) {
    for (int64_t j = 0; j < n; j++) acc[j] += p[j];
}

static void column_sum_range(void *ctx, int64_t begin, int64_t end) {
    const wk_reduce_args *a = ctx;
    int last = a->outer_ndim - 1;
    int64_t width = a->outer_sizes[last], blocks = (width + COLUMN_BLOCK - 1) / COLUMN_BLOCK;
    size_t ei = wk_dtype_size(a->in_dtype), eo = wk_dtype_size(a->out_dtype);
    double acc[COLUMN_BLOCK];
    for (int64_t t = begin; t < end; t++) {
        int64_t j0 = t % blocks * COLUMN_BLOCK, nj = width - j0 < COLUMN_BLOCK ? width - j0 : COLUMN_BLOCK;
        int64_t in_off = j0, out_off = j0, rest = t / blocks;
        for (int d = last - 1; d >= 0; d--) {
            int64_t i = rest % a->outer_sizes[d];
            rest /= a->outer_sizes[d];
            in_off += i * a->in_outer_strides[d];
            out_off += i * a->out_outer_strides[d];
        }
        for (int64_t j = 0; j < nj; j++) acc[j] = 0;
        const char *in = a->in + in_off * (int64_t)ei;
        for (int64_t i = 0; i < a->inner_size; i++) {
            const char *row = in + i * a->inner_stride * (int64_t)ei;
            if (a->in_dtype == WICK_FLOAT32) column_add_f32(acc, (const float *)row, nj);
            else column_add_f64(acc, (const double *)row, nj);
        }
        char *out = a->out + out_off * (int64_t)eo;
        for (int64_t j = 0; j < nj; j++)
            wk_store_double(out + j * (int64_t)eo, a->out_dtype,
                            a->op == WICK_MEAN ? acc[j] / (double)a->inner_size : acc[j]);
    }
}

wick_status cpu_reduce(const wk_reduce_args *a) {
    int64_t outer = wk_numel(a->outer_ndim, a->outer_sizes);
    if (column_sum(a) && outer > 0) {
        int64_t width = a->outer_sizes[a->outer_ndim - 1], per = a->inner_size * COLUMN_BLOCK;
        int64_t units = outer / width * ((width + COLUMN_BLOCK - 1) / COLUMN_BLOCK);
        return wk_parallel_for(units, per > 0 ? 32768 / per + 1 : 32768, column_sum_range, (void *)a);
    }
    int64_t grain = a->inner_size > 0 ? 32768 / a->inner_size + 1 : 32768;
    return wk_parallel_for(outer, grain, reduce_range, (void *)a);
}
