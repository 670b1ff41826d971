/* 2-D max and average pooling on the CPU, forward and backward, with PyTorch's
 * window rules: a window starts at o * stride - pad and is clipped to the input;
 * max pooling propagates NaN and reports the first maximum's flat position in
 * its plane; average pooling divides by the window's size including padding
 * (count_include_pad, but never counting positions beyond input + pad, which
 * ceil_mode can reach) or by the number of input elements in it. Planes are
 * independent, so the pool splits the work by plane. */
#include "cpu.h"

#include <math.h>

typedef struct {
    const wk_pool2d_args *a;
    char *out;
    int64_t *indices;
    const char *in;
} pool_job;

/* 2x2 windows at stride 2 inside the input (no padding, no window past its
 * edge: ceil_mode may add one): the four candidates compared in the general
 * loop's order, without its bounds (the usual max_pool2d(x, 2)). */
#define MAX_POOL_2X2(NAME, T)                                                                     \
    static void NAME(const wk_pool2d_args *a, T *out, int64_t *indices, const T *in, int64_t begin, \
                     int64_t end) {                                                               \
        const int64_t w = a->w, oh = a->oh, ow = a->ow;                                           \
        for (int64_t p = begin; p < end; p++) {                                                   \
            const T *x = in + p * a->h * w;                                                       \
            T *y = out + p * oh * ow;                                                             \
            int64_t *ix = indices ? indices + p * oh * ow : NULL;                                 \
            for (int64_t oy = 0; oy < oh; oy++) {                                                 \
                const T *r0 = x + 2 * oy * w, *r1 = r0 + w;                                       \
                for (int64_t ox = 0; ox < ow; ox++) {                                             \
                    const int64_t c = 2 * ox;                                                     \
                    T best = r0[c];                                                               \
                    int64_t at = 2 * oy * w + c;                                                  \
                    if (r0[c + 1] > best || isnan(r0[c + 1])) best = r0[c + 1], at = 2 * oy * w + c + 1; \
                    if (r1[c] > best || isnan(r1[c])) best = r1[c], at = (2 * oy + 1) * w + c;    \
                    if (r1[c + 1] > best || isnan(r1[c + 1])) best = r1[c + 1], at = (2 * oy + 1) * w + c + 1; \
                    y[oy * ow + ox] = best;                                                       \
                    if (ix) ix[oy * ow + ox] = at;                                                \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
MAX_POOL_2X2(max_pool_2x2_f32, float)
MAX_POOL_2X2(max_pool_2x2_f64, double)

static bool plain_2x2(const wk_pool2d_args *a) {
    return a->kh == 2 && a->kw == 2 && a->sh == 2 && a->sw == 2 && a->ph == 0 && a->pw == 0 && 2 * a->oh <= a->h &&
           2 * a->ow <= a->w;
}

#define MAX_POOL(NAME, T)                                                                         \
    static void NAME(const wk_pool2d_args *a, T *out, int64_t *indices, const T *in, int64_t begin, \
                     int64_t end) {                                                               \
        const int64_t h = a->h, w = a->w, oh = a->oh, ow = a->ow;                                 \
        for (int64_t p = begin; p < end; p++) {                                                   \
            const T *x = in + p * h * w;                                                          \
            T *y = out + p * oh * ow;                                                             \
            int64_t *ix = indices ? indices + p * oh * ow : NULL;                                 \
            for (int64_t oy = 0; oy < oh; oy++) {                                                 \
                int64_t hs = oy * a->sh - a->ph, he = hs + a->kh;                                 \
                if (he > h) he = h;                                                               \
                if (hs < 0) hs = 0;                                                               \
                for (int64_t ox = 0; ox < ow; ox++) {                                             \
                    int64_t ws = ox * a->sw - a->pw, we = ws + a->kw;                             \
                    if (we > w) we = w;                                                           \
                    if (ws < 0) ws = 0;                                                           \
                    T best = -INFINITY;                                                           \
                    int64_t at = hs * w + ws;                                                     \
                    for (int64_t iy = hs; iy < he; iy++)                                          \
                        for (int64_t xx = ws; xx < we; xx++) {                                    \
                            T v = x[iy * w + xx];                                                 \
                            if (v > best || isnan(v)) best = v, at = iy * w + xx;                 \
                        }                                                                         \
                    y[oy * ow + ox] = best;                                                       \
                    if (ix) ix[oy * ow + ox] = at;                                                \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
MAX_POOL(max_pool_f32, float)
MAX_POOL(max_pool_f64, double)

static void max_pool_range(void *ctx, int64_t begin, int64_t end) {
    const pool_job *j = ctx;
    if (plain_2x2(j->a) && j->a->dtype == WICK_FLOAT32)
        max_pool_2x2_f32(j->a, (float *)j->out, j->indices, (const float *)j->in, begin, end);
    else if (plain_2x2(j->a))
        max_pool_2x2_f64(j->a, (double *)j->out, j->indices, (const double *)j->in, begin, end);
    else if (j->a->dtype == WICK_FLOAT32)
        max_pool_f32(j->a, (float *)j->out, j->indices, (const float *)j->in, begin, end);
    else
        max_pool_f64(j->a, (double *)j->out, j->indices, (const double *)j->in, begin, end);
}

static int64_t grain_for(const wk_pool2d_args *a, int64_t per_output) {
    int64_t work = a->oh * a->ow * per_output + a->h * a->w;
    int64_t g = 32768 / (work > 0 ? work : 1);
    return g > 0 ? g : 1;
}

wick_status cpu_max_pool2d(const wk_pool2d_args *a, char *out, int64_t *indices, const char *input) {
    pool_job j = {a, out, indices, input};
    return wk_parallel_for(a->planes, grain_for(a, a->kh * a->kw), max_pool_range, &j);
}

#define MAX_POOL_BACK(NAME, T)                                                                    \
    static void NAME(const wk_pool2d_args *a, T *gi, const T *go, const int64_t *indices, int64_t begin, \
                     int64_t end) {                                                               \
        const int64_t hw = a->h * a->w, ohw = a->oh * a->ow;                                      \
        for (int64_t p = begin; p < end; p++) {                                                   \
            T *d = gi + p * hw;                                                                   \
            const T *g = go + p * ohw;                                                            \
            const int64_t *ix = indices + p * ohw;                                                \
            memset(d, 0, sizeof(T) * (size_t)hw);                                                 \
            for (int64_t k = 0; k < ohw; k++) d[ix[k]] += g[k];                                   \
        }                                                                                         \
    }
MAX_POOL_BACK(max_pool_back_f32, float)
MAX_POOL_BACK(max_pool_back_f64, double)

static void max_pool_back_range(void *ctx, int64_t begin, int64_t end) {
    const pool_job *j = ctx;
    if (j->a->dtype == WICK_FLOAT32)
        max_pool_back_f32(j->a, (float *)j->out, (const float *)j->in, j->indices, begin, end);
    else
        max_pool_back_f64(j->a, (double *)j->out, (const double *)j->in, j->indices, begin, end);
}

wick_status cpu_max_pool2d_backward(const wk_pool2d_args *a, char *grad_input, const char *grad_out, const int64_t *indices) {
    pool_job j = {a, grad_input, (int64_t *)indices, grad_out};
    return wk_parallel_for(a->planes, grain_for(a, 1), max_pool_back_range, &j);
}

/* The window of output (oy, ox) clipped to the input, and its divisor; false
 * when the clipped window is empty (the output is then 0). */
static bool avg_window(const wk_pool2d_args *a, int64_t oy, int64_t ox, int64_t *hs, int64_t *he, int64_t *ws,
                       int64_t *we, double *divisor) {
    int64_t h0 = oy * a->sh - a->ph, w0 = ox * a->sw - a->pw;
    int64_t h1 = h0 + a->kh, w1 = w0 + a->kw;
    if (h1 > a->h + a->ph) h1 = a->h + a->ph;
    if (w1 > a->w + a->pw) w1 = a->w + a->pw;
    int64_t padded = (h1 - h0) * (w1 - w0);
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    if (h1 > a->h) h1 = a->h;
    if (w1 > a->w) w1 = a->w;
    *hs = h0, *he = h1, *ws = w0, *we = w1;
    if (h0 >= h1 || w0 >= w1) return false;
    *divisor = (double)(a->count_include_pad ? padded : (h1 - h0) * (w1 - w0));
    return true;
}

#define AVG_POOL(NAME, T)                                                                         \
    static void NAME(const wk_pool2d_args *a, T *out, const T *in, int64_t begin, int64_t end) {  \
        const int64_t w = a->w;                                                                   \
        for (int64_t p = begin; p < end; p++) {                                                   \
            const T *x = in + p * a->h * w;                                                       \
            T *y = out + p * a->oh * a->ow;                                                       \
            for (int64_t oy = 0; oy < a->oh; oy++)                                                \
                for (int64_t ox = 0; ox < a->ow; ox++) {                                          \
                    int64_t hs, he, ws, we;                                                       \
                    double div;                                                                   \
                    if (!avg_window(a, oy, ox, &hs, &he, &ws, &we, &div)) {                       \
                        y[oy * a->ow + ox] = 0;                                                   \
                        continue;                                                                 \
                    }                                                                             \
                    T s = 0;                                                                      \
                    for (int64_t iy = hs; iy < he; iy++)                                          \
                        for (int64_t xx = ws; xx < we; xx++) s += x[iy * w + xx];                 \
                    y[oy * a->ow + ox] = s / (T)div;                                              \
                }                                                                                 \
        }                                                                                         \
    }
AVG_POOL(avg_pool_f32, float)
AVG_POOL(avg_pool_f64, double)

static void avg_pool_range(void *ctx, int64_t begin, int64_t end) {
    const pool_job *j = ctx;
    if (j->a->dtype == WICK_FLOAT32) avg_pool_f32(j->a, (float *)j->out, (const float *)j->in, begin, end);
    else avg_pool_f64(j->a, (double *)j->out, (const double *)j->in, begin, end);
}

wick_status cpu_avg_pool2d(const wk_pool2d_args *a, char *out, const char *input) {
    pool_job j = {a, out, NULL, input};
    return wk_parallel_for(a->planes, grain_for(a, a->kh * a->kw), avg_pool_range, &j);
}

#define AVG_POOL_BACK(NAME, T)                                                                    \
    static void NAME(const wk_pool2d_args *a, T *gi, const T *go, int64_t begin, int64_t end) {   \
        const int64_t w = a->w;                                                                   \
        for (int64_t p = begin; p < end; p++) {                                                   \
            T *d = gi + p * a->h * w;                                                             \
            const T *g = go + p * a->oh * a->ow;                                                  \
            memset(d, 0, sizeof(T) * (size_t)(a->h * w));                                         \
            for (int64_t oy = 0; oy < a->oh; oy++)                                                \
                for (int64_t ox = 0; ox < a->ow; ox++) {                                          \
                    int64_t hs, he, ws, we;                                                       \
                    double div;                                                                   \
                    if (!avg_window(a, oy, ox, &hs, &he, &ws, &we, &div)) continue;               \
                    T v = g[oy * a->ow + ox] / (T)div;                                            \
                    for (int64_t iy = hs; iy < he; iy++)                                          \
                        for (int64_t xx = ws; xx < we; xx++) d[iy * w + xx] += v;                 \
                }                                                                                 \
        }                                                                                         \
    }
AVG_POOL_BACK(avg_pool_back_f32, float)
AVG_POOL_BACK(avg_pool_back_f64, double)

static void avg_pool_back_range(void *ctx, int64_t begin, int64_t end) {
    const pool_job *j = ctx;
    if (j->a->dtype == WICK_FLOAT32) avg_pool_back_f32(j->a, (float *)j->out, (const float *)j->in, begin, end);
    else avg_pool_back_f64(j->a, (double *)j->out, (const double *)j->in, begin, end);
}

wick_status cpu_avg_pool2d_backward(const wk_pool2d_args *a, char *grad_input, const char *grad_out) {
    pool_job j = {a, grad_input, NULL, grad_out};
    return wk_parallel_for(a->planes, grain_for(a, a->kh * a->kw), avg_pool_back_range, &j);
}
