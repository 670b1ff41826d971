/* The fused recurrent layer's step kernels on CUDA: a thread per (batch row,
 * hidden unit) element of a step, with the element math of src/core/rnn.h (the
 * CPU's, cpu_rnn.c, is the same). The time loop and the per-step products
 * (cuBLAS, through the backend's gemm) are the core's (src/core/rnn.c); every
 * launch goes on the device's one stream, so the steps stay ordered. */
#include "cuda.h"

#include "../core/rnn.h"

namespace {

WK_RNN_ELEMENT(f, float, expf, tanhf)
WK_RNN_ELEMENT(d, double, exp, tanh)

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

template <int BACKWARD, int F64> __global__ void step_kernel(wk_rnn_args a) {
    GRID_STRIDE(i, a.B * a.H) {
        int64_t b = i / a.H, j = i % a.H;
        if (BACKWARD) {
            if (F64) wk_rnn_bwd_d(&a, b, j);
            else wk_rnn_bwd_f(&a, b, j);
        } else {
            if (F64) wk_rnn_fwd_d(&a, b, j);
            else wk_rnn_fwd_f(&a, b, j);
        }
    }
}

template <int BACKWARD> wick_status launch(const wk_rnn_args *a, const char *op) {
    int64_t n = a->B * a->H;
    if (n == 0) return WICK_OK;
    cudaStream_t s = wk_cuda_enter(a->device, op);
    if (!s) return WICK_ERR_DEVICE; /* the runtime set the message */
    if (a->dtype == WICK_FLOAT64) step_kernel<BACKWARD, 1><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(*a);
    else step_kernel<BACKWARD, 0><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(*a);
    return wk_cuda_check_launch(op, a->device);
}

} // namespace

extern "C" wick_status cuda_rnn_step(const wk_rnn_args *a) { return launch<0>(a, "rnn_layer"); }
extern "C" wick_status cuda_rnn_step_backward(const wk_rnn_args *a) { return launch<1>(a, "rnn_layer backward"); }
