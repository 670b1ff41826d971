/* 2-D upsampling on CUDA (nearest, bilinear), forward and backward, with the
 * CPU's index arithmetic (src/core/upsample.h, PyTorch's). Forward: one thread
 * per output element. Backward: grad_input is zeroed, then one thread per
 * output element adds its gradient to the (one or four) input elements it read
 * with atomicAdd, as PyTorch's CUDA kernels do: the float sums' order (and so
 * their last bits) can vary from run to run. */
#include "cuda.h"

#include "../core/upsample.h"

#define WK_NO_DEVICE WICK_ERR_DEVICE /* the runtime set the message */

namespace {

#define GRID_STRIDE(e, n) \
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < (n); e += (int64_t)gridDim.x * blockDim.x)

typedef struct {
    int64_t planes, h, w, oh, ow;
    int mode, align_corners;
    double scale_h, scale_w;
} up_geom;

static up_geom geom_of(const wk_upsample_args *a) {
    up_geom g = {a->planes, a->h, a->w, a->oh, a->ow, a->mode, a->align_corners, a->scale_h, a->scale_w};
    return g;
}

__device__ inline void linear_index(int64_t d, int64_t in, int64_t out, int ac, double s, int64_t *i0, int64_t *st,
                                    float *l) {
    wk_linear_index_float(d, in, out, ac, s, i0, st, l);
}
__device__ inline void linear_index(int64_t d, int64_t in, int64_t out, int ac, double s, int64_t *i0, int64_t *st,
                                    double *l) {
    wk_linear_index_double(d, in, out, ac, s, i0, st, l);
}

template <typename T> __global__ void up_forward_kernel(up_geom g, T *out, const T *in) {
    GRID_STRIDE(e, g.planes * g.oh * g.ow) {
        const int64_t ox = e % g.ow, oy = e / g.ow % g.oh, p = e / (g.ow * g.oh);
        const T *x = in + p * g.h * g.w;
        if (g.mode == 0) {
            out[e] = x[wk_nearest_index(oy, g.h, g.oh, g.scale_h) * g.w + wk_nearest_index(ox, g.w, g.ow, g.scale_w)];
            continue;
        }
        int64_t y0, ys, x0, xs;
        T h1, w1;
        linear_index(oy, g.h, g.oh, g.align_corners, g.scale_h, &y0, &ys, &h1);
        linear_index(ox, g.w, g.ow, g.align_corners, g.scale_w, &x0, &xs, &w1);
        const T h0 = 1 - h1, w0 = 1 - w1, *r0 = x + y0 * g.w, *r1 = r0 + ys * g.w;
        out[e] = h0 * (w0 * r0[x0] + w1 * r0[x0 + xs]) + h1 * (w0 * r1[x0] + w1 * r1[x0 + xs]);
    }
}

template <typename T> __global__ void up_backward_kernel(up_geom g, T *gin, const T *gout) {
    GRID_STRIDE(e, g.planes * g.oh * g.ow) {
        const int64_t ox = e % g.ow, oy = e / g.ow % g.oh, p = e / (g.ow * g.oh);
        T *gx = gin + p * g.h * g.w;
        const T v = gout[e];
        if (g.mode == 0) {
            atomicAdd(gx + wk_nearest_index(oy, g.h, g.oh, g.scale_h) * g.w + wk_nearest_index(ox, g.w, g.ow, g.scale_w),
                      v);
            continue;
        }
        int64_t y0, ys, x0, xs;
        T h1, w1;
        linear_index(oy, g.h, g.oh, g.align_corners, g.scale_h, &y0, &ys, &h1);
        linear_index(ox, g.w, g.ow, g.align_corners, g.scale_w, &x0, &xs, &w1);
        const T h0 = 1 - h1, w0 = 1 - w1;
        T *r0 = gx + y0 * g.w, *r1 = r0 + ys * g.w;
        atomicAdd(r0 + x0, h0 * w0 * v);
        atomicAdd(r0 + x0 + xs, h0 * w1 * v);
        atomicAdd(r1 + x0, h1 * w0 * v);
        atomicAdd(r1 + x0 + xs, h1 * w1 * v);
    }
}

static wick_status up_begin(const wk_upsample_args *a, const char *op, cudaStream_t *s) {
    *s = NULL;
    if (a->dtype != WICK_FLOAT32 && a->dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not implemented for %s tensors on cuda", op,
                         wick_dtype_name(a->dtype));
    return (*s = wk_cuda_enter(a->device, op)) ? WICK_OK : WK_NO_DEVICE;
}

} // namespace

extern "C" wick_status cuda_upsample2d(const wk_upsample_args *a, char *out, const char *input) {
    const char *op = "upsample2d";
    int64_t n = a->planes * a->oh * a->ow;
    if (n == 0) return WICK_OK;
    cudaStream_t s;
    wick_status st = up_begin(a, op, &s);
    if (st) return st;
    up_geom g = geom_of(a);
    if (a->dtype == WICK_FLOAT32)
        up_forward_kernel<float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (float *)out, (const float *)input);
    else
        up_forward_kernel<double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (double *)out,
                                                                                 (const double *)input);
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_upsample2d_backward(const wk_upsample_args *a, char *grad_input, const char *grad_out) {
    const char *op = "upsample2d backward";
    int64_t n = a->planes * a->oh * a->ow, in_bytes = a->planes * a->h * a->w * (int64_t)wk_dtype_size(a->dtype);
    if (in_bytes == 0) return WICK_OK;
    cudaStream_t s;
    wick_status st = up_begin(a, op, &s);
    if (st) return st;
    if ((st = wk_cuda_check(cudaMemsetAsync(grad_input, 0, (size_t)in_bytes, s), op, a->device))) return st;
    if (n == 0) return WICK_OK;
    up_geom g = geom_of(a);
    if (a->dtype == WICK_FLOAT32)
        up_backward_kernel<float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (float *)grad_input,
                                                                                 (const float *)grad_out);
    else
        up_backward_kernel<double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(g, (double *)grad_input,
                                                                                  (const double *)grad_out);
    return wk_cuda_check_launch(op, a->device);
}
