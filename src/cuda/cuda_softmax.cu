/* CUDA softmax and log-softmax along one dim of a contiguous float32 or
 * float64 tensor, as src/cpu/cpu_softmax.c computes them: the row's maximum
 * (NaN wins; all -inf counts as 0) is subtracted before exponentiating, the
 * sum is taken in the tensor's own type, then every element is written
 * (log_softmax: (x - max) - log(sum), in that order, as PyTorch's).
 *
 * A row is the softmax dim at one (outer, inner) position, so its elements lie
 * `inner` apart. wk_softmax_plan (cuda_tile.h, tested on the CPU in
 * tests/test_cuda_tile.c) picks one of two kernels from the shape:
 * - direct (inner == 1, the last dim; or rows of at most 4): a group of G
 *   threads takes a row through the three passes: G = 1 (the CPU's order of
 *   operations) where rows are short, a warp or a block with a fixed tree in
 *   shared memory otherwise;
 * - tiled (a strided dim): a block covers tile_x adjacent rows of one outer
 *   index (adjacent in memory, so loads coalesce) and splits each row over
 *   tile_y threads; max and sum meet in a fixed tree in shared memory. */
#include "cuda.h"
#include "cuda_tile.h"

namespace { /* everything but the entry points is internal to this file */

#define SM_THREADS WK_TILE_THREADS

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
        int64_t b = row < rows ? wk_sm_row_base(row, d, inner) : 0;
        const T *x = in + b;
        T *y = out + b;
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
            T ls = sm_log(sum);
            for (int64_t k = lane; k < n; k += G) y[k * inner] = (x[k * inner] - max) - ls;
        } else {
            for (int64_t k = lane; k < n; k += G) y[k * inner] = sm_exp(x[k * inner] - max) / sum;
        }
    }
}

__device__ __forceinline__ int wk_sm_tile_row(int64_t t, int tx, int w, int64_t d, int64_t inner, int64_t *b) {
    return wk_sm_tile_row64(t, tx, w, d, inner, b);
}
__device__ __forceinline__ int wk_sm_tile_row(int32_t t, int tx, int w, int32_t d, int32_t inner, int32_t *b) {
    return wk_sm_tile_row32(t, tx, w, d, inner, b);
}

/* The max (MAX) or sum of each column tx over its tile_y threads, given to all
 * of them: the fixed tree of cuda_tile.h. Every thread must call it. */
template <typename T, bool MAX> __device__ __forceinline__ T sm_tile_tree(T v, T *sh, int tx, int ty, int tile_x, int tile_y) {
    int tid = threadIdx.x;
    sh[tid] = v;
    __syncthreads();
    for (int s = tile_y / 2; s > 0; s >>= 1) {
        if (ty < s) sh[tid] = MAX ? sm_max(sh[tid], sh[tid + s * tile_x]) : sh[tid] + sh[tid + s * tile_x];
        __syncthreads();
    }
    T out = sh[tx];
    __syncthreads(); /* before sh is reused */
    return out;
}

template <typename T, typename IDX>
__global__ void __launch_bounds__(SM_THREADS)
    softmax_tiled(T *out, const T *in, IDX tiles, IDX d, IDX inner, int tile_x, int tile_y, int take_log) {
    __shared__ T sh[SM_THREADS];
    int tx = threadIdx.x % tile_x, ty = threadIdx.x / tile_x;
    /* uniform over the block, so every thread reaches the syncs */
    for (IDX tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        IDX b;
        IDX n = wk_sm_tile_row(tile, tx, tile_x, d, inner, &b) ? d : 0;
        const T *x = in + b;
        T *y = out + b;
        T max = -(T)INFINITY;
        for (IDX k = ty; k < n; k += tile_y) max = sm_max(max, x[k * inner]);
        max = sm_tile_tree<T, true>(max, sh, tx, ty, tile_x, tile_y);
        if (isinf(max) && max < 0) max = 0; /* all -inf: keep NaN-free arithmetic */
        T sum = 0;
        for (IDX k = ty; k < n; k += tile_y) sum += sm_exp(x[k * inner] - max);
        sum = sm_tile_tree<T, false>(sum, sh, tx, ty, tile_x, tile_y);
        if (take_log) {
            T ls = sm_log(sum);
            for (IDX k = ty; k < n; k += tile_y) y[k * inner] = (x[k * inner] - max) - ls;
        } else {
            for (IDX k = ty; k < n; k += tile_y) y[k * inner] = sm_exp(x[k * inner] - max) / sum;
        }
    }
}

template <typename T>
static void softmax_launch(T *out, const T *in, int64_t outer, int64_t d, int64_t inner, int log,
                           cudaStream_t stream) {
    wk_tile_plan p = wk_softmax_plan(outer, d, inner);
    unsigned blocks = p.blocks;
    if (p.kind == WK_TILE_TILED) {
        if (p.index32)
            softmax_tiled<T, int32_t><<<blocks, SM_THREADS, 0, stream>>>(out, in, (int32_t)p.units, (int32_t)d,
                                                                         (int32_t)inner, p.tile_x, p.tile_y, log);
        else
            softmax_tiled<T, int64_t><<<blocks, SM_THREADS, 0, stream>>>(out, in, p.units, d, inner, p.tile_x,
                                                                         p.tile_y, log);
        return;
    }
    int64_t rows = outer * inner;
    switch (p.group) {
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
