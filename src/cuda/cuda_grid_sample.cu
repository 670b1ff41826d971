/* 2-D grid sampling on CUDA (bilinear, nearest), forward and backward, with
 * the CPU's coordinate arithmetic (src/core/grid_sample.h). One thread per grid
 * point of a batch element, looping over the channels: the forward writes that
 * point's output in every channel, the backward sums the grid's gradient over
 * the channels and adds the input's with atomicAdd (grad_input zeroed first),
 * as PyTorch's CUDA kernel does: those sums' order can vary from run to run. */
#include "cuda.h"

#include "../core/grid_sample.h"

#define WK_NO_DEVICE WICK_ERR_DEVICE /* the runtime set the message */

namespace {

#define GRID_STRIDE(e, n) \
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < (n); e += (int64_t)gridDim.x * blockDim.x)

typedef struct {
    int64_t n, c, h, w, oh, ow;
    int mode, padding, align_corners;
} gs_geom;

static gs_geom geom_of(const wk_grid_sample_args *a) {
    gs_geom g = {a->n, a->c, a->h, a->w, a->oh, a->ow, a->mode, a->padding, a->align_corners};
    return g;
}

__device__ inline void point_of(const gs_geom &g, const float *at, wk_grid_taps_float *pt) {
    wk_grid_point_float(at, g.h, g.w, g.mode, g.padding, g.align_corners, pt);
}
__device__ inline void point_of(const gs_geom &g, const double *at, wk_grid_taps_double *pt) {
    wk_grid_point_double(at, g.h, g.w, g.mode, g.padding, g.align_corners, pt);
}

template <typename T, typename Pt> __global__ void gs_forward_kernel(gs_geom g, T *out, const T *in, const T *grid) {
    const int64_t P = g.oh * g.ow, HW = g.h * g.w;
    GRID_STRIDE(e, g.n * P) {
        const int64_t b = e / P, p = e % P;
        Pt pt;
        point_of(g, grid + e * 2, &pt);
        for (int64_t c = 0; c < g.c; c++) {
            const T *plane = in + (b * g.c + c) * HW;
            T s = 0;
            for (int k = 0; k < 4; k++)
                if (pt.at[k] >= 0) s += pt.w[k] * plane[pt.at[k]];
            out[(b * g.c + c) * P + p] = s;
        }
    }
}

template <typename T, typename Pt>
__global__ void gs_backward_kernel(gs_geom g, const T *gout, const T *in, const T *grid, T *gin, T *ggrid) {
    const int64_t P = g.oh * g.ow, HW = g.h * g.w;
    GRID_STRIDE(e, g.n * P) {
        const int64_t b = e / P, p = e % P;
        Pt pt;
        point_of(g, grid + e * 2, &pt);
        T gx = 0, gy = 0;
        for (int64_t c = 0; c < g.c; c++) {
            const T go = gout[(b * g.c + c) * P + p];
            if (gin) {
                T *plane = gin + (b * g.c + c) * HW;
                for (int k = 0; k < 4; k++)
                    if (pt.at[k] >= 0) atomicAdd(plane + pt.at[k], pt.w[k] * go);
            }
            if (ggrid && g.mode == WK_GRID_BILINEAR) {
                const T *plane = in + (b * g.c + c) * HW;
                T v[4];
                for (int k = 0; k < 4; k++) v[k] = pt.at[k] >= 0 ? plane[pt.at[k]] : (T)0;
                gx += go * ((v[1] - v[0]) * (1 - pt.fy) + (v[3] - v[2]) * pt.fy);
                gy += go * ((v[2] - v[0]) * (1 - pt.fx) + (v[3] - v[1]) * pt.fx);
            }
        }
        if (ggrid) ggrid[e * 2] = gx * pt.dx, ggrid[e * 2 + 1] = gy * pt.dy;
    }
}

static wick_status gs_begin(const wk_grid_sample_args *a, const char *op, cudaStream_t *s) {
    *s = NULL;
    if (a->dtype != WICK_FLOAT32 && a->dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not implemented for %s tensors on cuda", op,
                         wick_dtype_name(a->dtype));
    return (*s = wk_cuda_enter(a->device, op)) ? WICK_OK : WK_NO_DEVICE;
}

} // namespace

extern "C" wick_status cuda_grid_sample2d(const wk_grid_sample_args *a, char *out, const char *input, const char *grid) {
    const char *op = "grid_sample";
    int64_t n = a->n * a->oh * a->ow;
    if (n == 0 || a->c == 0) return WICK_OK;
    cudaStream_t s;
    wick_status st = gs_begin(a, op, &s);
    if (st) return st;
    gs_geom g = geom_of(a);
    if (a->dtype == WICK_FLOAT32)
        gs_forward_kernel<float, wk_grid_taps_float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(
            g, (float *)out, (const float *)input, (const float *)grid);
    else
        gs_forward_kernel<double, wk_grid_taps_double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(
            g, (double *)out, (const double *)input, (const double *)grid);
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_grid_sample2d_backward(const wk_grid_sample_args *a, const char *grad_out,
                                                   const char *input, const char *grid, char *grad_input,
                                                   char *grad_grid) {
    const char *op = "grid_sample backward";
    int64_t n = a->n * a->oh * a->ow, es = (int64_t)wk_dtype_size(a->dtype);
    int64_t in_bytes = a->n * a->c * a->h * a->w * es;
    cudaStream_t s;
    wick_status st = gs_begin(a, op, &s);
    if (st) return st;
    if (grad_input && in_bytes > 0 &&
        (st = wk_cuda_check(cudaMemsetAsync(grad_input, 0, (size_t)in_bytes, s), op, a->device)))
        return st;
    if (n == 0) return WICK_OK;
    gs_geom g = geom_of(a);
    if (a->dtype == WICK_FLOAT32)
        gs_backward_kernel<float, wk_grid_taps_float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(
            g, (const float *)grad_out, (const float *)input, (const float *)grid, (float *)grad_input,
            (float *)grad_grid);
    else
        gs_backward_kernel<double, wk_grid_taps_double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(
            g, (const double *)grad_out, (const double *)input, (const double *)grid, (double *)grad_input,
            (double *)grad_grid);
    return wk_cuda_check_launch(op, a->device);
}
