/* CUDA softmax and log-softmax along one dim of a contiguous float32 or
 * float64 tensor, as src/cpu/cpu_softmax.c computes them: the row's maximum
 * (NaN wins; all -inf counts as 0) is subtracted before exponentiating, the
 * sum is taken in the tensor's own type, then every element is written.
 *
 * A row is the reduced dim at one (outer, inner) position, so its elements lie
 * `inner` apart. A group of G threads takes a row through the three passes:
 * G = 1 (the CPU's order of operations) where rows are short, or where they are
 * strided and many, so neighbouring threads read neighbouring memory; a warp or
 * a block with a fixed tree in shared memory otherwise. */
#include "cuda.h"

namespace { /* everything but the entry points is internal to this file */

#define SM_THREADS 256

__device__ __forceinline__ float sm_exp(float x) { return expf(x); }
__device__ __forceinline__ double sm_exp(double x) { return exp(x); }
__device__ __forceinline__ float sm_log(float x) { return logf(x); }
__device__ __forceinline__ double sm_log(double x) { return log(x); }
__device__ __forceinline__ float sm_max(float a, float b) { return wk_maxf(a, b); }
__device__ __forceinline__ double sm_max(double a, double b) { return wk_maxd(a, b); }

/* The max (MAX) or sum of v over each group of G consecutive threads, given to
 * every thread of the group. Every thread of the block must call it. */
template <typename T, int G, bool MAX> __device__ __forceinline__ T sm_group(T v, T *sh) {
    if (G == 1) return v;
    int tid = threadIdx.x, lane = tid % G, head = tid - lane;
    sh[tid] = v;
    if (G <= 32) __syncwarp(); else __syncthreads();
#pragma unroll
    for (int s = G / 2; s > 0; s >>= 1) {
        if (lane < s) sh[tid] = MAX ? sm_max(sh[tid], sh[tid + s]) : sh[tid] + sh[tid + s];
        if (G <= 32) __syncwarp(); else __syncthreads();
    }
    T out = sh[head];
    if (G <= 32) __syncwarp(); else __syncthreads(); /* before sh is reused */
    return out;
}

template <typename T, int G>
__global__ void __launch_bounds__(SM_THREADS)
    softmax_kernel(T *out, const T *in, int64_t rows, int64_t d, int64_t inner, int take_log) {
    constexpr int PER_BLOCK = SM_THREADS / G;
    __shared__ T sh[G == 1 ? 1 : SM_THREADS];
    int lane = threadIdx.x % G, group = threadIdx.x / G;
    /* uniform over the block, so every thread reaches the syncs */
    for (int64_t base = (int64_t)blockIdx.x * PER_BLOCK; base < rows; base += (int64_t)gridDim.x * PER_BLOCK) {
        int64_t row = base + group, n = row < rows ? d : 0;
        int64_t o = row / inner, i = row % inner;
        const T *x = in + o * d * inner + i;
        T *y = out + o * d * inner + i;
        T max;
        if (G == 1) { /* the CPU's loop: starts from the first element */
            max = n ? x[0] : (T)0;
            for (int64_t k = 1; k < n; k++)
                if (x[k * inner] > max || x[k * inner] != x[k * inner]) max = x[k * inner];
        } else {
            max = -(T)INFINITY;
            for (int64_t k = lane; k < n; k += G) max = sm_max(max, x[k * inner]);
            max = sm_group<T, G, true>(max, sh);
        }
        if (isinf(max) && max < 0) max = 0; /* all -inf: keep NaN-free arithmetic */
        T sum = 0;
        for (int64_t k = lane; k < n; k += G) sum += sm_exp(x[k * inner] - max);
        sum = sm_group<T, G, false>(sum, sh);
        if (take_log) {
            T lse = max + sm_log(sum);
            for (int64_t k = lane; k < n; k += G) y[k * inner] = x[k * inner] - lse;
        } else {
            for (int64_t k = lane; k < n; k += G) y[k * inner] = sm_exp(x[k * inner] - max) / sum;
        }
    }
}

template <typename T>
static void softmax_launch(T *out, const T *in, int64_t outer, int64_t d, int64_t inner, int log,
                           cudaStream_t stream) {
    int64_t rows = outer * inner;
    int G = d <= 32 || (inner > 1 && rows >= 4096) ? 1 : d <= 1024 ? 32 : SM_THREADS;
    int64_t per_block = SM_THREADS / G, b = (rows + per_block - 1) / per_block;
    unsigned blocks = (unsigned)(b > 65535 * 32 ? 65535 * 32 : b); /* the kernel loops over the rest */
    switch (G) {
    case 1: softmax_kernel<T, 1><<<blocks, SM_THREADS, 0, stream>>>(out, in, rows, d, inner, log); break;
    case 32: softmax_kernel<T, 32><<<blocks, SM_THREADS, 0, stream>>>(out, in, rows, d, inner, log); break;
    default: softmax_kernel<T, SM_THREADS><<<blocks, SM_THREADS, 0, stream>>>(out, in, rows, d, inner, log); break;
    }
}

} // namespace

extern "C" wick_status cuda_softmax(const wick_tensor *out, const wick_tensor *in, int dim, int log) {
    const char *name = log ? "log_softmax" : "softmax";
    int64_t outer = 1, inner = 1, d = in->ndim ? in->sizes[dim] : 1;
    for (int i = 0; i < dim; i++) outer *= in->sizes[i];
    for (int i = dim + 1; i < in->ndim; i++) inner *= in->sizes[i];
    if (outer == 0 || inner == 0 || d == 0) return WICK_OK; /* no element */
    int device = in->storage->device.index;
    cudaStream_t stream = wk_cuda_enter(device, name);
    if (!stream) return WICK_ERR_DEVICE; /* wk_cuda_enter has set the message */
    if (in->dtype == WICK_FLOAT32)
        softmax_launch<float>((float *)wk_data(out), (const float *)wk_data(in), outer, d, inner, log, stream);
    else
        softmax_launch<double>((double *)wk_data(out), (const double *)wk_data(in), outer, d, inner, log, stream);
    return wk_cuda_check_launch(name, device);
}
