/* 2-D max and average pooling on CUDA, forward and backward, with the window
 * rules of cpu_pool.c: a window starts at o * stride - pad and is clipped to the
 * input; max pooling propagates NaN (a later NaN replaces an earlier one, as in
 * the CPU's loop) and reports the maximum's flat position in its plane; average
 * pooling divides by the window's size including padding (count_include_pad,
 * never counting positions beyond input + pad) or by the number of input
 * elements in it.
 *
 * Forward kernels run one thread per output element. Backward kernels run one
 * thread per input element and gather the gradients of the outputs whose
 * windows hold it, in the order of the CPU's scatter loop (outputs in row-major
 * order), starting from zero: no atomics, deterministic, and bitwise the CPU's
 * sums. Max pooling's backward relies on the indices being those its forward
 * wrote (each lies in its output's window), which the core guarantees: it keeps
 * them private. */
#include "cuda.h"

#include <math.h>

#define WK_NO_DEVICE WICK_ERR_DEVICE /* the runtime set the message */

namespace { /* internal linkage: kernels and helpers stay private to this file */

/* the geometry as kernel arguments (passed by value) */
typedef struct {
    int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
    int count_include_pad;
} pool_geom;

static pool_geom geom_of(const wk_pool2d_args *a) {
    pool_geom g = {a->planes, a->h, a->w, a->oh, a->ow, a->kh, a->kw, a->sh, a->sw, a->ph, a->pw,
                   a->count_include_pad};
    return g;
}

#define GRID_STRIDE(e, n) \
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < (n); e += (int64_t)gridDim.x * blockDim.x)

/* ---- max pooling ---- */

template <typename T>
__global__ void max_pool_kernel(pool_geom g, T *out, int64_t *indices, const T *in) {
    const int64_t ohw = g.oh * g.ow;
    GRID_STRIDE(e, g.planes * ohw) {
        const int64_t p = e / ohw, oy = e % ohw / g.ow, ox = e % g.ow;
        const T *x = in + p * g.h * g.w;
        int64_t hs = oy * g.sh - g.ph, he = hs + g.kh, ws = ox * g.sw - g.pw, we = ws + g.kw;
        if (he > g.h) he = g.h;
        if (hs < 0) hs = 0;
        if (we > g.w) we = g.w;
        if (ws < 0) ws = 0;
        T best = -INFINITY;
        int64_t at = hs * g.w + ws;
        for (int64_t iy = hs; iy < he; iy++)
            for (int64_t ix = ws; ix < we; ix++) {
                T v = x[iy * g.w + ix];
                if (v > best || v != v) best = v, at = iy * g.w + ix;
            }
        out[e] = best;
        if (indices) indices[e] = at;
    }
}

/* Outputs along one axis whose (unclipped) windows [o * s - pad, o * s - pad + k)
 * hold input position i: o in [*lo, *hi). */
__device__ __forceinline__ void windows_holding(int64_t i, int64_t k, int64_t s, int64_t pad, int64_t n, int64_t *lo,
                                                int64_t *hi) {
    int64_t first = i + pad - k + 1; /* o * s >= first */
    *lo = first <= 0 ? 0 : (first + s - 1) / s;
    int64_t last = (i + pad) / s + 1; /* o * s <= i + pad */
    *hi = last < n ? last : n;
}

template <typename T>
__global__ void max_pool_back_kernel(pool_geom g, T *gi, const T *go, const int64_t *indices) {
    const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
    GRID_STRIDE(e, g.planes * hw) {
        const int64_t p = e / hw, pos = e % hw, iy = pos / g.w, ix = pos % g.w;
        const T *gp = go + p * ohw;
        const int64_t *ip = indices + p * ohw;
        int64_t y0, y1, x0, x1;
        windows_holding(iy, g.kh, g.sh, g.ph, g.oh, &y0, &y1);
        windows_holding(ix, g.kw, g.sw, g.pw, g.ow, &x0, &x1);
        T acc = 0;
        for (int64_t oy = y0; oy < y1; oy++)
            for (int64_t ox = x0; ox < x1; ox++)
                if (ip[oy * g.ow + ox] == pos) acc += gp[oy * g.ow + ox];
        gi[e] = acc;
    }
}

/* ---- average pooling ---- */

/* The window of output (oy, ox) clipped to the input, and its divisor; false
 * when the clipped window is empty (cpu_pool.c's avg_window). */
__device__ __forceinline__ bool avg_window(const pool_geom &a, int64_t oy, int64_t ox, int64_t *hs, int64_t *he,
                                           int64_t *ws, int64_t *we, double *divisor) {
    int64_t h0 = oy * a.sh - a.ph, w0 = ox * a.sw - a.pw;
    int64_t h1 = h0 + a.kh, w1 = w0 + a.kw;
    if (h1 > a.h + a.ph) h1 = a.h + a.ph;
    if (w1 > a.w + a.pw) w1 = a.w + a.pw;
    int64_t padded = (h1 - h0) * (w1 - w0);
    if (h0 < 0) h0 = 0;
    if (w0 < 0) w0 = 0;
    if (h1 > a.h) h1 = a.h;
    if (w1 > a.w) w1 = a.w;
    *hs = h0, *he = h1, *ws = w0, *we = w1;
    if (h0 >= h1 || w0 >= w1) return false;
    *divisor = (double)(a.count_include_pad ? padded : (h1 - h0) * (w1 - w0));
    return true;
}

template <typename T>
__global__ void avg_pool_kernel(pool_geom g, T *out, const T *in) {
    const int64_t ohw = g.oh * g.ow;
    GRID_STRIDE(e, g.planes * ohw) {
        const int64_t p = e / ohw, oy = e % ohw / g.ow, ox = e % g.ow;
        const T *x = in + p * g.h * g.w;
        int64_t hs, he, ws, we;
        double div;
        if (!avg_window(g, oy, ox, &hs, &he, &ws, &we, &div)) {
            out[e] = 0;
            continue;
        }
        T s = 0;
        for (int64_t iy = hs; iy < he; iy++)
            for (int64_t ix = ws; ix < we; ix++) s += x[iy * g.w + ix];
        out[e] = s / (T)div;
    }
}

template <typename T>
__global__ void avg_pool_back_kernel(pool_geom g, T *gi, const T *go) {
    const int64_t hw = g.h * g.w, ohw = g.oh * g.ow;
    GRID_STRIDE(e, g.planes * hw) {
        const int64_t p = e / hw, pos = e % hw, iy = pos / g.w, ix = pos % g.w;
        const T *gp = go + p * ohw;
        int64_t y0, y1, x0, x1;
        windows_holding(iy, g.kh, g.sh, g.ph, g.oh, &y0, &y1);
        windows_holding(ix, g.kw, g.sw, g.pw, g.ow, &x0, &x1);
        T acc = 0;
        for (int64_t oy = y0; oy < y1; oy++)
            for (int64_t ox = x0; ox < x1; ox++) {
                int64_t hs, he, ws, we;
                double div;
                /* the clipped window may leave this position out */
                if (!avg_window(g, oy, ox, &hs, &he, &ws, &we, &div) || iy < hs || iy >= he || ix < ws || ix >= we)
                    continue;
                acc += gp[oy * g.ow + ox] / (T)div;
            }
        gi[e] = acc;
    }
}

/* ---- entries ---- */

/* The device's stream for an op over n elements of a float32 or float64 plane
 * set; WICK_OK with *s == NULL when there is nothing to do. */
static wick_status pool_begin(const wk_pool2d_args *a, int64_t n, const char *op, cudaStream_t *s) {
    *s = NULL;
    if (a->dtype != WICK_FLOAT32 && a->dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not implemented for %s tensors on cuda", op,
                         wick_dtype_name(a->dtype));
    if (n == 0) return WICK_OK;
    return (*s = wk_cuda_enter(a->device, op)) ? WICK_OK : WK_NO_DEVICE;
}

} // namespace

extern "C" wick_status cuda_max_pool2d(const wk_pool2d_args *a, char *out, int64_t *indices, const char *input) {
    const char *op = "max_pool2d";
    int64_t n = a->planes * a->oh * a->ow;
    cudaStream_t s;
    wick_status st = pool_begin(a, n, op, &s);
    if (st || !s) return st;
    pool_geom g = geom_of(a);
    if (a->dtype == WICK_FLOAT32)
        max_pool_kernel<float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (float *)out, indices,
                                                                              (const float *)input);
    else
        max_pool_kernel<double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (double *)out, indices,
                                                                               (const double *)input);
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_max_pool2d_backward(const wk_pool2d_args *a, char *grad_input, const char *grad_out,
                                                const int64_t *indices) {
    const char *op = "max_pool2d backward";
    int64_t n = a->planes * a->h * a->w;
    cudaStream_t s;
    wick_status st = pool_begin(a, n, op, &s);
    if (st || !s) return st;
    pool_geom g = geom_of(a);
    if (a->dtype == WICK_FLOAT32)
        max_pool_back_kernel<float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (float *)grad_input,
                                                                                   (const float *)grad_out, indices);
    else
        max_pool_back_kernel<double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (double *)grad_input,
                                                                                    (const double *)grad_out, indices);
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_avg_pool2d(const wk_pool2d_args *a, char *out, const char *input) {
    const char *op = "avg_pool2d";
    int64_t n = a->planes * a->oh * a->ow;
    cudaStream_t s;
    wick_status st = pool_begin(a, n, op, &s);
    if (st || !s) return st;
    pool_geom g = geom_of(a);
    if (a->dtype == WICK_FLOAT32)
        avg_pool_kernel<float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (float *)out, (const float *)input);
    else
        avg_pool_kernel<double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (double *)out, (const double *)input);
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_avg_pool2d_backward(const wk_pool2d_args *a, char *grad_input, const char *grad_out) {
    const char *op = "avg_pool2d backward";
    int64_t n = a->planes * a->h * a->w;
    cudaStream_t s;
    wick_status st = pool_begin(a, n, op, &s);
    if (st || !s) return st;
    pool_geom g = geom_of(a);
    if (a->dtype == WICK_FLOAT32)
        avg_pool_back_kernel<float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (float *)grad_input,
                                                                                   (const float *)grad_out);
    else
        avg_pool_back_kernel<double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (double *)grad_input,
                                                                                    (const double *)grad_out);
    return wk_cuda_check_launch(op, a->device);
}
