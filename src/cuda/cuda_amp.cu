/* GradScaler's unscale on CUDA (wick_amp_unscale_, src/core/optim.c): one
 * grid-stride pass multiplies a gradient by *inv_scale in place and sets
 * *found_inf to 1 when an element is inf or NaN; both scalars stay on the
 * device, so nothing waits for the GPU. */
#include "cuda.h"

#define WK_NO_DEVICE WICK_ERR_DEVICE /* the runtime set the message */

namespace {

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <typename T>
__global__ void unscale_kernel(T *g, int64_t n, const float *inv_scale, float *found_inf) {
    T inv = (T)*inv_scale;
    int bad = 0;
    GRID_STRIDE(i, n) {
        T x = g[i];
        bad |= !isfinite(x);
        g[i] = x * inv;
    }
    if (bad) *found_inf = 1.0f; /* every writer stores the same value */
}

} // namespace

extern "C" wick_status cuda_amp_unscale(wick_dtype dtype, int device, char *g, int64_t n, const float *inv_scale,
                                        float *found_inf) {
    const char *op = "amp unscale";
    if (dtype != WICK_FLOAT32 && dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not implemented for %s tensors on cuda", op, wick_dtype_name(dtype));
    if (n == 0) return WICK_OK;
    cudaStream_t s = wk_cuda_enter(device, op);
    if (!s) return WK_NO_DEVICE;
    if (dtype == WICK_FLOAT32)
        unscale_kernel<float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>((float *)g, n, inv_scale, found_inf);
    else
        unscale_kernel<double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>((double *)g, n, inv_scale, found_inf);
    return wk_cuda_check_launch(op, device);
}
