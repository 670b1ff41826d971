/* Fused kernels of the transformer ops: GELU's (and ReLU's) backward, layer_norm forward and
 * backward, cross entropy (log_softmax + nll with class indices) forward and
 * backward. Contiguous operands of one compute dtype; float32 vectorised
 * (cpu_vmath.h), float64 scalar. Rows are split among threads. */
#include "cpu.h"
#include "cpu_vmath.h"

#include <math.h>
#include <stdlib.h>

#define GRAIN_ELEMS 16384

static int64_t row_grain(int64_t per) { return per >= GRAIN_ELEMS ? 1 : GRAIN_ELEMS / (per ? per : 1); }

/* ======================================================================== */
/* Activation backwards: gi = g f'(x), f GELU (exact or tanh form) or ReLU    */
/* ======================================================================== */

typedef struct {
    char *gi;
    const char *g, *x;
    int form; /* WK_ACT_ */
} act_job;

WK_VSIMD static void gelu_bwd_f32(float *gi, const float *g, const float *x, int64_t n, int tanh_form) {
    int64_t i = 0;
    for (; i + WK_VL <= n; i += WK_VL) {
        wk_vf xv = wk_vload(x + i);
        wk_vstore(gi + i, wk_vload(g + i) * (tanh_form ? wk_vgelu_tanh_grad(xv) : wk_vgelu_grad(xv)));
    }
    if (i < n) {
        wk_vf xv = wk_vload_part(x + i, n - i, 0);
        wk_vstore_part(gi + i, wk_vload_part(g + i, n - i, 0) * (tanh_form ? wk_vgelu_tanh_grad(xv) : wk_vgelu_grad(xv)),
                       n - i);
    }
}

/* x <= 0 ? 0 : g, by a mask (a NaN gradient where x <= 0 gives 0, and a NaN x passes g on, as in PyTorch) */
WK_VSIMD static void relu_bwd_f32(float *gi, const float *g, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + WK_VL <= n; i += WK_VL)
        wk_vstore(gi + i, (wk_vf)((wk_vi)wk_vload(g + i) & ~(wk_vload(x + i) <= 0)));
    if (i < n)
        wk_vstore_part(gi + i, (wk_vf)((wk_vi)wk_vload_part(g + i, n - i, 0) & ~(wk_vload_part(x + i, n - i, 0) <= 0)),
                       n - i);
}

static void act_range_f32(void *ctx, int64_t begin, int64_t end) {
    const act_job *j = ctx;
    float *gi = (float *)j->gi + begin;
    const float *g = (const float *)j->g + begin, *x = (const float *)j->x + begin;
    if (j->form == WK_ACT_RELU) relu_bwd_f32(gi, g, x, end - begin);
    else gelu_bwd_f32(gi, g, x, end - begin, j->form == WK_ACT_GELU_TANH);
}

static void act_range_f64(void *ctx, int64_t begin, int64_t end) {
    const act_job *j = ctx;
    double *gi = (double *)j->gi;
    const double *g = (const double *)j->g, *x = (const double *)j->x;
    for (int64_t i = begin; i < end; i++) {
        double v = x[i], d;
        if (j->form == WK_ACT_RELU) {
            gi[i] = v <= 0 ? 0 : g[i];
            continue;
        }
        if (j->form == WK_ACT_GELU_TANH) {
            double t = tanh(0.7978845608028654 * (v + 0.044715 * v * v * v));
            d = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * v * v);
        } else {
            d = 0.5 * (1 + erf(v * 0.7071067811865476)) + v * 0.3989422804014327 * exp(-0.5 * v * v);
        }
        gi[i] = g[i] * d;
    }
}

wick_status cpu_act_backward(const wick_tensor *gi, const wick_tensor *g, const wick_tensor *x, int form) {
    act_job j = {wk_data(gi), wk_data(g), wk_data(x), form};
    return wk_parallel_for(wick_tensor_numel(x), 32768, x->dtype == WICK_FLOAT32 ? act_range_f32 : act_range_f64, &j);
}

/* ======================================================================== */
/* layer_norm                                                                */
/* ======================================================================== */

/* y = (x - mean) rstd w + b over rows of n; mean and rstd saved per row. */
WK_VSIMD static void ln_row_f32(const wk_norm_args *a, int64_t r) {
    int64_t n = a->n, full = n - n % WK_VL, rest = n - full, k;
    const float *x = (const float *)a->x + r * n, *w = (const float *)a->w, *b = (const float *)a->b;
    float *y = (float *)a->y + r * n;
    wk_vf vs = wk_vsplat(0);
    for (k = 0; k < full; k += WK_VL) vs += wk_vload(x + k);
    if (rest) vs += wk_vload_part(x + full, rest, 0);
    float mean = wk_vhsum(vs) / (float)n;
    wk_vf vq = wk_vsplat(0); /* two passes: no cancellation in the variance */
    for (k = 0; k < full; k += WK_VL) {
        wk_vf d = wk_vload(x + k) - mean;
        vq += d * d;
    }
    if (rest) {
        wk_vf d = wk_vload_part(x + full, rest, mean) - mean;
        vq += d * d;
    }
    float rstd = 1.0f / sqrtf(wk_vhsum(vq) / (float)n + (float)a->eps);
    ((float *)a->mean)[r] = mean;
    ((float *)a->rstd)[r] = rstd;
    for (k = 0; k < n; k += WK_VL) {
        int64_t m = n - k < WK_VL ? n - k : WK_VL;
        wk_vf v = (m == WK_VL ? wk_vload(x + k) : wk_vload_part(x + k, m, 0)) - mean;
        v = v * rstd;
        if (w) v = v * (m == WK_VL ? wk_vload(w + k) : wk_vload_part(w + k, m, 0));
        if (b) v = v + (m == WK_VL ? wk_vload(b + k) : wk_vload_part(b + k, m, 0));
        if (m == WK_VL) wk_vstore(y + k, v);
        else wk_vstore_part(y + k, v, m);
    }
}

static void ln_row_f64(const wk_norm_args *a, int64_t r) {
    int64_t n = a->n;
    const double *x = (const double *)a->x + r * n, *w = (const double *)a->w, *b = (const double *)a->b;
    double *y = (double *)a->y + r * n, s = 0, q = 0;
    for (int64_t k = 0; k < n; k++) s += x[k];
    double mean = s / (double)n;
    for (int64_t k = 0; k < n; k++) q += (x[k] - mean) * (x[k] - mean);
    double rstd = 1.0 / sqrt(q / (double)n + a->eps);
    ((double *)a->mean)[r] = mean;
    ((double *)a->rstd)[r] = rstd;
    for (int64_t k = 0; k < n; k++) {
        double v = (x[k] - mean) * rstd;
        if (w) v *= w[k];
        if (b) v += b[k];
        y[k] = v;
    }
}

static void ln_range(void *ctx, int64_t begin, int64_t end) {
    const wk_norm_args *a = ctx;
    for (int64_t r = begin; r < end; r++) a->dtype == WICK_FLOAT32 ? ln_row_f32(a, r) : ln_row_f64(a, r);
}

wick_status cpu_layer_norm(const wk_norm_args *a) {
    if (!a->rows || !a->n) return WICK_OK;
    return wk_parallel_for(a->rows, row_grain(a->n), ln_range, (void *)a);
}

/* Backward of one row: xhat = (x - mean) rstd, gh = g w,
 * gx = rstd (gh - mean(gh) - xhat mean(gh xhat)); gw += g xhat, gb += g into
 * the piece's own accumulators. */
WK_VSIMD static void lnb_row_f32(const wk_norm_args *a, int64_t r, float *gw, float *gb) {
    int64_t n = a->n, k;
    const float *x = (const float *)a->x + r * n, *g = (const float *)a->g + r * n, *w = (const float *)a->w;
    float mean = ((const float *)a->mean)[r], rstd = ((const float *)a->rstd)[r];
    wk_vf s1 = wk_vsplat(0), s2 = wk_vsplat(0);
    for (k = 0; k < n; k += WK_VL) {
        int64_t m = n - k < WK_VL ? n - k : WK_VL;
        wk_vf xv = m == WK_VL ? wk_vload(x + k) : wk_vload_part(x + k, m, 0);
        wk_vf gv = m == WK_VL ? wk_vload(g + k) : wk_vload_part(g + k, m, 0);
        wk_vf xh = (xv - mean) * rstd;
        if (gw) {
            wk_vf acc = (m == WK_VL ? wk_vload(gw + k) : wk_vload_part(gw + k, m, 0)) + gv * xh;
            m == WK_VL ? wk_vstore(gw + k, acc) : wk_vstore_part(gw + k, acc, m);
        }
        if (gb) {
            wk_vf acc = (m == WK_VL ? wk_vload(gb + k) : wk_vload_part(gb + k, m, 0)) + gv;
            m == WK_VL ? wk_vstore(gb + k, acc) : wk_vstore_part(gb + k, acc, m);
        }
        if (w) gv = gv * (m == WK_VL ? wk_vload(w + k) : wk_vload_part(w + k, m, 0));
        s1 += gv;
        s2 += gv * xh;
    }
    if (!a->gx) return;
    float m1 = wk_vhsum(s1) / (float)n, m2 = wk_vhsum(s2) / (float)n;
    float *gx = (float *)a->gx + r * n;
    for (k = 0; k < n; k += WK_VL) {
        int64_t m = n - k < WK_VL ? n - k : WK_VL;
        wk_vf xv = m == WK_VL ? wk_vload(x + k) : wk_vload_part(x + k, m, 0);
        wk_vf gv = m == WK_VL ? wk_vload(g + k) : wk_vload_part(g + k, m, 0);
        if (w) gv = gv * (m == WK_VL ? wk_vload(w + k) : wk_vload_part(w + k, m, 0));
        wk_vf v = rstd * (gv - m1 - (xv - mean) * rstd * m2);
        m == WK_VL ? wk_vstore(gx + k, v) : wk_vstore_part(gx + k, v, m);
    }
}

static void lnb_row_f64(const wk_norm_args *a, int64_t r, double *gw, double *gb) {
    int64_t n = a->n;
    const double *x = (const double *)a->x + r * n, *g = (const double *)a->g + r * n, *w = (const double *)a->w;
    double mean = ((const double *)a->mean)[r], rstd = ((const double *)a->rstd)[r], s1 = 0, s2 = 0;
    for (int64_t k = 0; k < n; k++) {
        double xh = (x[k] - mean) * rstd, gv = g[k];
        if (gw) gw[k] += gv * xh;
        if (gb) gb[k] += gv;
        if (w) gv *= w[k];
        s1 += gv;
        s2 += gv * xh;
    }
    if (!a->gx) return;
    double m1 = s1 / (double)n, m2 = s2 / (double)n, *gx = (double *)a->gx + r * n;
    for (int64_t k = 0; k < n; k++) gx[k] = rstd * ((w ? g[k] * w[k] : g[k]) - m1 - (x[k] - mean) * rstd * m2);
}

typedef struct {
    const wk_norm_args *a;
    int64_t rows_per_piece;
    char *partial; /* [pieces][2][n] accumulators of gw and gb */
} lnb_job;

static void lnb_range(void *ctx, int64_t begin, int64_t end) {
    const lnb_job *j = ctx;
    const wk_norm_args *a = j->a;
    size_t es = wk_dtype_size(a->dtype);
    for (int64_t p = begin; p < end; p++) {
        char *gw = a->gw ? j->partial + (size_t)(2 * p) * a->n * es : NULL;
        char *gb = a->gb ? j->partial + (size_t)(2 * p + 1) * a->n * es : NULL;
        int64_t r0 = p * j->rows_per_piece, r1 = r0 + j->rows_per_piece < a->rows ? r0 + j->rows_per_piece : a->rows;
        for (int64_t r = r0; r < r1; r++)
            a->dtype == WICK_FLOAT32 ? lnb_row_f32(a, r, (float *)gw, (float *)gb)
                                     : lnb_row_f64(a, r, (double *)gw, (double *)gb);
    }
}

wick_status cpu_layer_norm_backward(const wk_norm_args *a) {
    size_t es = wk_dtype_size(a->dtype);
    if (a->gw) memset(a->gw, 0, (size_t)a->n * es);
    if (a->gb) memset(a->gb, 0, (size_t)a->n * es);
    if (!a->rows || !a->n) return WICK_OK;
    int64_t per = row_grain(a->n), pieces = (a->rows + per - 1) / per;
    int threads = wick_get_num_threads();
    if (pieces > 4 * (int64_t)threads) { /* few pieces: few partial sums to add up */
        pieces = 4 * (int64_t)threads;
        per = (a->rows + pieces - 1) / pieces;
        pieces = (a->rows + per - 1) / per;
    }
    lnb_job j = {a, per, NULL};
    if (a->gw || a->gb) {
        j.partial = calloc((size_t)pieces * 2 * (size_t)a->n, es);
        if (!j.partial) return wick_fail(WICK_ERR_OOM, "layer_norm backward: out of memory");
    }
    wick_status st = wk_parallel_for(pieces, 1, lnb_range, &j);
    if (!st && j.partial)
        for (int64_t p = 0; p < pieces; p++)
            for (int which = 0; which < 2; which++) {
                char *dst = which ? a->gb : a->gw;
                if (!dst) continue;
                const char *src = j.partial + (size_t)(2 * p + which) * a->n * es;
                if (a->dtype == WICK_FLOAT32)
                    for (int64_t k = 0; k < a->n; k++) ((float *)dst)[k] += ((const float *)src)[k];
                else
                    for (int64_t k = 0; k < a->n; k++) ((double *)dst)[k] += ((const double *)src)[k];
            }
    free(j.partial);
    return st;
}

/* ======================================================================== */
/* batch_norm                                                                */
/* ======================================================================== */

/* One channel ch of x [n, c, s]: element (i, ch, j) at i c s + ch s + j. The
 * sums run in double (n s values per channel; float sums drift at ResNet's
 * 200k), two passes so that the variance has no cancellation. */
#define BN_FORWARD(NAME, T, SQRT)                                                                     \
    WK_SIMD static void NAME(const wk_bn_args *a, int64_t ch) {                                       \
        const int64_t n = a->n, s = a->s, stride = a->c * s;                                         \
        const T *x = (const T *)a->x + ch * s;                                                        \
        T *y = (T *)a->y + ch * s;                                                                    \
        T mean, rstd;                                                                                 \
        if (a->training) {                                                                            \
            double sum = 0, q = 0, count = (double)(n * s);                                          \
            for (int64_t i = 0; i < n; i++)                                                           \
                for (int64_t j = 0; j < s; j++) sum += x[i * stride + j];                             \
            double m = sum / count;                                                                   \
            for (int64_t i = 0; i < n; i++)                                                           \
                for (int64_t j = 0; j < s; j++) {                                                     \
                    double d = x[i * stride + j] - m;                                                 \
                    q += d * d;                                                                       \
                }                                                                                     \
            double var = q / count;                                                                   \
            mean = (T)m, rstd = (T)(1 / sqrt(var + a->eps));                                          \
            if (a->running_mean) {                                                                    \
                T *rm = (T *)a->running_mean, *rv = (T *)a->running_var;                              \
                rm[ch] = (T)((1 - a->momentum) * rm[ch] + a->momentum * m);                           \
                rv[ch] = (T)((1 - a->momentum) * rv[ch] + a->momentum * var * count / (count - 1));    \
            }                                                                                         \
        } else {                                                                                      \
            mean = ((const T *)a->running_mean)[ch];                                                  \
            rstd = (T)1 / SQRT(((const T *)a->running_var)[ch] + (T)a->eps);                          \
        }                                                                                             \
        ((T *)a->mean)[ch] = mean, ((T *)a->rstd)[ch] = rstd;                                         \
        const T scale = rstd * (a->w ? ((const T *)a->w)[ch] : (T)1);                                 \
        const T shift = (a->b ? ((const T *)a->b)[ch] : (T)0) - mean * scale;                         \
        for (int64_t i = 0; i < n; i++)                                                               \
            for (int64_t j = 0; j < s; j++) y[i * stride + j] = x[i * stride + j] * scale + shift;    \
    }

BN_FORWARD(bn_channel_f32, float, sqrtf)
BN_FORWARD(bn_channel_f64, double, sqrt)

static void bn_range(void *ctx, int64_t begin, int64_t end) {
    const wk_bn_args *a = ctx;
    for (int64_t ch = begin; ch < end; ch++) a->dtype == WICK_FLOAT32 ? bn_channel_f32(a, ch) : bn_channel_f64(a, ch);
}

/* grain: about 32k values per piece */
static int64_t bn_grain(const wk_bn_args *a) {
    int64_t per = a->n * a->s;
    return per >= 32768 ? 1 : 32768 / (per ? per : 1);
}

wick_status cpu_batch_norm(const wk_bn_args *a) {
    if (!a->c) return WICK_OK;
    return wk_parallel_for(a->c, bn_grain(a), bn_range, (void *)a);
}

/* Backward of one channel: xhat = (x - mean) rstd, sg = sum g, sgx = sum g xhat;
 * gw = sgx, gb = sg; gx = w rstd (g - sg / M - xhat sgx / M) in training
 * (M = n s values), w rstd g with the running statistics. */
#define BN_BACKWARD(NAME, T)                                                                          \
    WK_SIMD static void NAME(const wk_bn_args *a, int64_t ch) {                                       \
        const int64_t n = a->n, s = a->s, stride = a->c * s;                                         \
        const T *x = (const T *)a->x + ch * s, *g = (const T *)a->g + ch * s;                         \
        const T mean = ((const T *)a->mean)[ch], rstd = ((const T *)a->rstd)[ch];                     \
        double sg = 0, dot = 0;                                                                       \
        for (int64_t i = 0; i < n; i++)                                                               \
            for (int64_t j = 0; j < s; j++) {                                                         \
                double gv = g[i * stride + j];                                                        \
                sg += gv;                                                                             \
                dot += gv * (double)(x[i * stride + j] - mean);                                       \
            }                                                                                         \
        if (a->gw) ((T *)a->gw)[ch] = (T)(dot * rstd);                                                \
        if (a->gb) ((T *)a->gb)[ch] = (T)sg;                                                          \
        if (!a->gx) return;                                                                           \
        T *gx = (T *)a->gx + ch * s;                                                                  \
        const T scale = rstd * (a->w ? ((const T *)a->w)[ch] : (T)1);                                 \
        const double count = (double)(n * s);                                                         \
        const T mg = a->training ? (T)(sg / count) : (T)0;                                            \
        const T proj = a->training ? (T)(dot * rstd * rstd / count) : (T)0;                           \
        for (int64_t i = 0; i < n; i++)                                                               \
            for (int64_t j = 0; j < s; j++) {                                                         \
                int64_t k = i * stride + j;                                                           \
                gx[k] = (g[k] - (x[k] - mean) * proj - mg) * scale;                                   \
            }                                                                                         \
    }

BN_BACKWARD(bnb_channel_f32, float)
BN_BACKWARD(bnb_channel_f64, double)

static void bnb_range(void *ctx, int64_t begin, int64_t end) {
    const wk_bn_args *a = ctx;
    for (int64_t ch = begin; ch < end; ch++) a->dtype == WICK_FLOAT32 ? bnb_channel_f32(a, ch) : bnb_channel_f64(a, ch);
}

wick_status cpu_batch_norm_backward(const wk_bn_args *a) {
    if (!a->c) return WICK_OK;
    return wk_parallel_for(a->c, bn_grain(a), bnb_range, (void *)a);
}

/* ======================================================================== */
/* cross entropy with class indices                                          */
/* ======================================================================== */

/* Row r's target as a 0-based class, -1 when ignored. (Checked before.) */
static int64_t ce_class(const wk_ce_args *a, int64_t r) {
    int64_t t = a->target[r];
    return a->has_ignore && t == a->ignore_index ? -1 : t - 1;
}

/* The row's max and sum exp(x - max), kept apart (log_softmax is (x - max) -
 * log(sum), as PyTorch's: max + log(sum) rounds log(sum) away next to a large
 * max); also, when `smooth`, sum_c w_c (max - x_c) and sum_c w_c (the
 * smoothing term's; 0 otherwise).
 * Rows of a vector or more: whole vectors, then the row's last whole vector
 * with its new lanes masked (see cpu_softmax.c); the logs come later, a vector
 * of rows at once. */
WK_VSIMD static void ce_stats_long_f32(const float *x, const float *w, int64_t c, int smooth, float *max_out,
                                       float *sum_out, float *sum_wd, float *sum_w) {
    int64_t k, full = c - c % WK_VL, rest = c - full;
    const float *xl = x + c - WK_VL;
    wk_vi tail = wk_vtail(rest);
    wk_vf vm = wk_vload(xl);
    for (k = 0; k < full; k += WK_VL) vm = wk_vmax_plain(vm, wk_vload(x + k));
    float max = wk_vhmax_plain(vm); /* a NaN makes the sum NaN anyway */
    if (isinf(max) && max < 0) max = 0;
    /* vd: sum w (x - max), negated at the end */
    wk_vf vs = wk_vsplat(0), vd = wk_vsplat(0), vw = wk_vsplat(0), zero = wk_vsplat(0);
    for (k = 0; k < full; k += WK_VL) {
        wk_vf dv = wk_vload(x + k) - max;
        vs += wk_vexp_le0(dv);
        if (!smooth) continue;
        if (w) {
            wk_vf wv = wk_vload(w + k);
            vd += wv * dv;
            vw += wv;
        } else {
            vd += dv;
        }
    }
    if (rest) {
        wk_vf dv = wk_vload(xl) - max;
        vs += wk_vsel(tail, wk_vexp_le0(dv), zero);
        if (smooth && w) {
            wk_vf wv = wk_vsel(tail, wk_vload(w + c - WK_VL), zero);
            vd += wk_vsel(tail, wv * dv, zero);
            vw += wv;
        } else if (smooth) {
            vd += wk_vsel(tail, dv, zero);
        }
    }
    *sum_wd = smooth ? -wk_vhsum(vd) : 0;
    *sum_w = !smooth ? 0 : w ? wk_vhsum(vw) : (float)c;
    *max_out = max;
    *sum_out = wk_vhsum(vs);
}

/* log(sum) of WK_VL rows at once, in place */
WK_VSIMD static void ce_logs_f32(float *sum) { wk_vstore(sum, wk_vlog_sum(wk_vload(sum))); }

/* rows shorter than a vector: the max, log(sum exp(x - max)) and the sums as above */
WK_VSIMD static void ce_stats_short_f32(const float *x, const float *w, int64_t c, int smooth, float *max_out,
                                        float *ls_out, float *sum_wd, float *sum_w) {
    int64_t k, full = c - c % WK_VL, rest = c - full;
    wk_vf vm = wk_vsplat(-INFINITY);
    for (k = 0; k < full; k += WK_VL) vm = wk_vmax(vm, wk_vload(x + k));
    if (rest) vm = wk_vmax(vm, wk_vload_part(x + full, rest, -INFINITY));
    float max = wk_vhmax(vm);
    if (isinf(max) && max < 0) max = 0;
    wk_vf vs = wk_vsplat(0), vd = wk_vsplat(0), vw = wk_vsplat(0);
    for (k = 0; k < c; k += WK_VL) {
        int64_t m = c - k < WK_VL ? c - k : WK_VL;
        wk_vf xv = m == WK_VL ? wk_vload(x + k) : wk_vload_part(x + k, m, -INFINITY);
        vs += wk_vexp(xv - max);
        if (!smooth) continue;
        wk_vf dv = (m == WK_VL ? xv : wk_vload_part(x + k, m, max)) - max; /* padding lanes: 0 */
        if (w) {
            wk_vf wv = m == WK_VL ? wk_vload(w + k) : wk_vload_part(w + k, m, 0);
            vd += wv * dv;
            vw += wv;
        } else {
            vd += dv;
        }
    }
    *sum_wd = smooth ? -wk_vhsum(vd) : 0;
    *sum_w = !smooth ? 0 : w ? wk_vhsum(vw) : (float)c;
    *max_out = max;
    *ls_out = logf(wk_vhsum(vs));
}

static void ce_stats_f64(const double *x, const double *w, int64_t c, int smooth, double *max_out,
                         double *ls_out, double *sum_wd, double *sum_w) {
    double max = x[0], s = 0, sd = 0, sw = 0;
    for (int64_t k = 1; k < c; k++)
        if (x[k] > max || x[k] != x[k]) max = x[k];
    if (isinf(max) && max < 0) max = 0;
    if (smooth)
        for (int64_t k = 0; k < c; k++) {
            double d = max - x[k];
            s += exp(-d);
            sd += w ? w[k] * d : d;
            sw += w ? w[k] : 1;
        }
    else
        for (int64_t k = 0; k < c; k++) s += exp(x[k] - max);
    *sum_wd = sd, *sum_w = sw, *max_out = max, *ls_out = log(s);
}

/* loss_r = wt ((1 - eps) ((max - x_t) + ls) + eps/C sum_c w_c ((max - x_c) + ls))
 * with ls = log(sum_c exp(x_c - max)) and wt the row's weight when there is a
 * class weight (the smoothing term is weighted per class), 0 for an ignored
 * row; row_weight_r: w_t (1 when unweighted), 0 for an ignored row; lse_r =
 * max, lse_{rows + r} = ls (for the backward). */
static void ce_range(void *ctx, int64_t begin, int64_t end) {
    const wk_ce_args *a = ctx;
    int64_t c = a->classes, rows = a->rows;
    double eps = a->smoothing;
    int smooth = eps > 0;
    float maxs[WK_VL], swds[WK_VL], sws[WK_VL], lss[WK_VL];
    for (int64_t r = begin; r < end; r++) {
        int64_t t = ce_class(a, r);
        if (a->dtype == WICK_FLOAT32) {
            const float *x = (const float *)a->x + r * c, *w = (const float *)a->weight;
            int64_t at = (r - begin) % WK_VL;
            if (c >= WK_VL && at == 0) { /* the next block of rows: their log(sum) with one vector log */
                int64_t n = end - r < WK_VL ? end - r : WK_VL;
                for (int64_t i = 0; i < WK_VL; i++) {
                    if (i < n) ce_stats_long_f32(x + i * c, w, c, smooth, &maxs[i], &lss[i], &swds[i], &sws[i]);
                    else maxs[i] = 0, lss[i] = 1;
                }
                ce_logs_f32(lss);
            }
            float swd, sw, max, ls;
            if (c >= WK_VL) swd = swds[at], sw = sws[at], max = maxs[at], ls = lss[at];
            else ce_stats_short_f32(x, w, c, smooth, &max, &ls, &swd, &sw);
            float wt = t < 0 ? 0 : w ? w[t] : 1;
            float loss = t < 0 ? 0 : wt * ((max - x[t]) + ls) * (float)(1 - eps);
            if (eps > 0 && t >= 0) loss += (float)(eps / (double)c) * (swd + sw * ls);
            ((float *)a->lse)[r] = max;
            ((float *)a->lse)[rows + r] = ls;
            ((float *)a->loss)[r] = loss;
            ((float *)a->row_weight)[r] = wt;
        } else {
            const double *x = (const double *)a->x + r * c, *w = (const double *)a->weight;
            double swd, sw, max, ls;
            ce_stats_f64(x, w, c, smooth, &max, &ls, &swd, &sw);
            double wt = t < 0 ? 0 : w ? w[t] : 1;
            double loss = t < 0 ? 0 : wt * ((max - x[t]) + ls) * (1 - eps);
            if (eps > 0 && t >= 0) loss += eps / (double)c * (swd + sw * ls);
            ((double *)a->lse)[r] = max;
            ((double *)a->lse)[rows + r] = ls;
            ((double *)a->loss)[r] = loss;
            ((double *)a->row_weight)[r] = wt;
        }
    }
}

/* targets in [1, C] or the ignored index */
static wick_status ce_check_targets(const wk_ce_args *a) {
    for (int64_t r = 0; r < a->rows; r++) {
        int64_t t = a->target[r];
        if (a->has_ignore && t == a->ignore_index) continue;
        if (t < 1 || t > a->classes)
            return wick_fail(WICK_ERR_INDEX, "cross_entropy: Target %lld is out of bounds (classes are 1 to %lld).",
                             (long long)t, (long long)a->classes);
    }
    return WICK_OK;
}

wick_status cpu_cross_entropy(const wk_ce_args *a) {
    if (!a->rows) return WICK_OK;
    wick_status st = ce_check_targets(a);
    if (st) return st;
    return wk_parallel_for(a->rows, row_grain(a->classes), ce_range, (void *)a);
}

/* gx_rc = s_r (wt (1 - eps) (p_c - [c = t]) + eps/C (W p_c - w_c)), s_r the
 * row's incoming gradient, W = sum_c w_c; 0 for an ignored row. */
WK_VSIMD static void ceb_row_f32(const wk_ce_args *a, int64_t r, int64_t t) {
    int64_t c = a->classes;
    const float *x = (const float *)a->x + r * c, *w = (const float *)a->weight;
    float *gx = (float *)a->gx + r * c;
    float s = ((const float *)a->scale)[r], max = ((const float *)a->lse)[r],
          ls = ((const float *)a->lse)[a->rows + r];
    float eps = (float)a->smoothing, epsc = (float)(a->smoothing / (double)c);
    float wt = w ? w[t] : 1, big_w = 0;
    if (w && eps > 0)
        for (int64_t k = 0; k < c; k++) big_w += w[k];
    if (!w) big_w = (float)c;
    float cp = s * (wt * (1 - eps) + epsc * big_w); /* the factor of p_c */
    if (c >= WK_VL) { /* whole vectors, then the last whole one (stores recomputed: the overlap agrees) */
        int64_t k = 0;
        for (;; k += WK_VL) {
            if (k + WK_VL > c) k = c - WK_VL;
            wk_vf v = cp * wk_vexp_le0((wk_vload(x + k) - max) - ls); /* x <= max, ls >= 0 */
            if (eps > 0) v -= s * epsc * (w ? wk_vload(w + k) : wk_vsplat(1));
            wk_vstore(gx + k, v);
            if (k + WK_VL == c) break;
        }
        gx[t] -= s * wt * (1 - eps);
        return;
    }
    for (int64_t k = 0; k < c; k += WK_VL) {
        int64_t m = c - k < WK_VL ? c - k : WK_VL;
        wk_vf xv = m == WK_VL ? wk_vload(x + k) : wk_vload_part(x + k, m, 0);
        wk_vf v = cp * wk_vexp((xv - max) - ls);
        if (eps > 0) v -= s * epsc * (w ? (m == WK_VL ? wk_vload(w + k) : wk_vload_part(w + k, m, 0)) : wk_vsplat(1));
        m == WK_VL ? wk_vstore(gx + k, v) : wk_vstore_part(gx + k, v, m);
    }
    gx[t] -= s * wt * (1 - eps);
}

static void ceb_row_f64(const wk_ce_args *a, int64_t r, int64_t t) {
    int64_t c = a->classes;
    const double *x = (const double *)a->x + r * c, *w = (const double *)a->weight;
    double *gx = (double *)a->gx + r * c;
    double s = ((const double *)a->scale)[r], max = ((const double *)a->lse)[r],
           ls = ((const double *)a->lse)[a->rows + r];
    double eps = a->smoothing, epsc = eps / (double)c, wt = w ? w[t] : 1, big_w = 0;
    for (int64_t k = 0; k < c; k++) big_w += w ? w[k] : 1;
    double cp = s * (wt * (1 - eps) + epsc * big_w);
    for (int64_t k = 0; k < c; k++) gx[k] = cp * exp((x[k] - max) - ls) - s * epsc * (w ? w[k] : 1);
    gx[t] -= s * wt * (1 - eps);
}

static void ceb_range(void *ctx, int64_t begin, int64_t end) {
    const wk_ce_args *a = ctx;
    size_t es = wk_dtype_size(a->dtype);
    for (int64_t r = begin; r < end; r++) {
        int64_t t = ce_class(a, r);
        if (t < 0) memset(a->gx + (size_t)(r * a->classes) * es, 0, (size_t)a->classes * es);
        else if (a->dtype == WICK_FLOAT32) ceb_row_f32(a, r, t);
        else ceb_row_f64(a, r, t);
    }
}

wick_status cpu_cross_entropy_backward(const wk_ce_args *a) {
    if (!a->rows) return WICK_OK;
    return wk_parallel_for(a->rows, row_grain(a->classes), ceb_range, (void *)a);
}
