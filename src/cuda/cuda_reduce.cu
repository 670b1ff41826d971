/* CUDA reductions: sum, mean, prod, max, min, argmax, argmin, var, std over
 * the inner (reduced) dim of each output element, as src/cpu/cpu_reduce.c
 * defines them: floats accumulate in double, NaN wins max and min, ties give
 * the first index, var/std take two passes (mean, then squared deviations)
 * divided by max(0, N - correction), int64 sums and products wrap around.
 *
 * Three kernels, chosen by wk_reduce_plan (cuda_tile.h, tested on the CPU in
 * tests/test_cuda_tile.c) from the shapes alone, so each shape always gets the
 * same arithmetic:
 * - direct: a group of G threads (1, 32 or 256) per output: a thread folds
 *   every G-th element in order, then the group combines its partials in a
 *   fixed tree in shared memory. G = 1 (short dims) is the CPU's order. This is
 *   the last-dim path: a warp or a block per contiguous row.
 * - tiled: a strided reduced dim. A block covers tile_x adjacent outputs
 *   (neighbouring threads read neighbouring memory) and splits the reduced dim
 *   over tile_y threads, whose partials meet in a fixed tree in shared memory.
 * - split: few outputs over a long dim: chunks of it, one block each, whose
 *   partials a second kernel combines the same way.
 * Nothing depends on timing (no atomics), so a reduction gives the same bits
 * on every run. Output positions use 32-bit index math where the plan allows. */
#include "cuda.h"
#include "cuda_dtype.cuh"
#include "cuda_tile.h"

#include <type_traits>

#define RED_THREADS WK_TILE_THREADS

namespace { /* everything but the entry points is internal to this file */

/* What a thread accumulates: a value and, for max/min, the index (into the
 * reduced dim) where it was found; index < 0 while no element has been seen. */
template <typename A> struct red_val {
    A value;
    int64_t index;
};

/* The fold of one op: a sum (also mean, and var's first pass), a product, a
 * maximum or minimum (also argmax/argmin), or var's squared deviations. */
enum { K_SUM, K_PROD, K_MAX, K_MIN, K_SQDEV };

__host__ __device__ static constexpr int fold_kind(int op) {
    return op == WICK_PROD ? K_PROD
         : (op == WICK_MAX || op == WICK_ARGMAX) ? K_MAX
         : (op == WICK_MIN || op == WICK_ARGMIN) ? K_MIN
         : K_SUM; /* sum, mean; var and std start with the sum */
}

__host__ __device__ static constexpr bool is_var(int op) { return op == WICK_VAR || op == WICK_STD; }

template <typename A, int KIND> __device__ __forceinline__ red_val<A> red_identity() {
    red_val<A> r;
    r.value = KIND == K_PROD ? (A)1 : (A)0;
    r.index = KIND == K_MAX || KIND == K_MIN ? -1 : 0;
    return r;
}

__device__ __forceinline__ double red_add(double a, double b) { return a + b; }
__device__ __forceinline__ int64_t red_add(int64_t a, int64_t b) { return wk_wrap_add(a, b); }
__device__ __forceinline__ double red_mul(double a, double b) { return a * b; }
__device__ __forceinline__ int64_t red_mul(int64_t a, int64_t b) { return wk_wrap_mul(a, b); }

/* Adds element i (value x) to a thread's partial; elements come in increasing i.
 * max/min: NaN wins and stops the search; a strictly better value replaces, so
 * the first of equal values stays. */
template <typename A, int KIND>
__device__ __forceinline__ void red_fold(red_val<A> &r, A x, int64_t i, double mean) {
    if constexpr (KIND == K_SUM) {
        r.value = red_add(r.value, x);
    } else if constexpr (KIND == K_PROD) {
        r.value = red_mul(r.value, x);
    } else if constexpr (KIND == K_SQDEV) {
        double d = (double)x - mean;
        r.value = (A)((double)r.value + wk_muld(d, d)); /* two roundings, like the CPU (no FMA) */
    } else {
        bool better = KIND == K_MAX ? x > r.value : x < r.value;
        if (r.index < 0 || (r.value == r.value && (x != x || better))) {
            r.value = x;
            r.index = i;
        }
    }
}

/* Combines two partials: for max/min the NaN, else the better value, else on a
 * tie the smaller index, which is what the CPU's single pass finds. */
template <typename A, int KIND>
__device__ __forceinline__ red_val<A> red_combine(red_val<A> a, red_val<A> b) {
    if constexpr (KIND == K_SUM || KIND == K_SQDEV) {
        a.value = red_add(a.value, b.value);
        return a;
    }
    if constexpr (KIND == K_PROD) {
        a.value = red_mul(a.value, b.value);
        return a;
    }
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    bool an = a.value != a.value, bn = b.value != b.value;
    if (an || bn) {
        if (an && bn) return a.index <= b.index ? a : b;
        return an ? a : b;
    }
    bool b_better = KIND == K_MAX ? b.value > a.value : b.value < a.value;
    bool a_better = KIND == K_MAX ? a.value > b.value : a.value < b.value;
    if (b_better) return b;
    if (a_better) return a;
    return a.index <= b.index ? a : b;
}

/* A thread's fold over elements first, first + step, ... below end. */
template <typename T, typename A, int KIND>
__device__ __forceinline__ red_val<A> red_fold_range(const T *in, int64_t stride, int64_t first, int64_t end,
                                                     int64_t step, double mean) {
    red_val<A> r = red_identity<A, KIND>();
    for (int64_t i = first; i < end; i += step) red_fold<A, KIND>(r, (A)in[i * stride], i, mean);
    return r;
}

/* The combined partial of each group of G consecutive threads, given to every
 * thread of the group. Every thread of the block must call it (it syncs). */
template <typename A, int KIND, int G>
__device__ __forceinline__ red_val<A> red_group(red_val<A> r, A *sv, int64_t *si) {
    if (G == 1) return r;
    int tid = threadIdx.x, lane = tid % G, head = tid - lane;
    sv[tid] = r.value;
    si[tid] = r.index;
    if (G <= 32) __syncwarp(); else __syncthreads();
#pragma unroll
    for (int s = G / 2; s > 0; s >>= 1) {
        if (lane < s) {
            red_val<A> a = {sv[tid], si[tid]}, b = {sv[tid + s], si[tid + s]};
            a = red_combine<A, KIND>(a, b);
            sv[tid] = a.value;
            si[tid] = a.index;
        }
        if (G <= 32) __syncwarp(); else __syncthreads();
    }
    red_val<A> out = {sv[head], si[head]};
    if (G <= 32) __syncwarp(); else __syncthreads(); /* before the arrays are reused */
    return out;
}

/* Where output o's input, output and index live (the CPU's outer walk). */
struct red_place {
    int64_t in, out, idx;
};

__device__ __forceinline__ red_place red_locate(const wk_reduce_args &a, int64_t o, int idx32) {
    red_place p;
    if (idx32) { /* uniform over the grid: no divergence */
        int32_t in, out, idx;
        wk_red_locate32((int32_t)o, a.outer_ndim, a.outer_sizes, a.in_outer_strides, a.out_outer_strides,
                        a.idx_outer_strides, &in, &out, &idx);
        p.in = in, p.out = out, p.idx = idx;
    } else {
        wk_red_locate64(o, a.outer_ndim, a.outer_sizes, a.in_outer_strides, a.out_outer_strides,
                        a.idx_outer_strides, &p.in, &p.out, &p.idx);
    }
    return p;
}

/* Writes output o from its reduced value (var/std: the sum of squared
 * deviations), as cpu_reduce.c's reduce_range does. */
template <typename A, int OP>
__device__ __forceinline__ void red_store(const wk_reduce_args &a, const red_place &p, red_val<A> r) {
    int64_t n = a.inner_size;
    char *out = a.out + p.out * wk_cu_dtype_size(a.out_dtype);
    int64_t index = r.index < 0 ? 0 : r.index;
    if constexpr (OP == WICK_ARGMAX || OP == WICK_ARGMIN) {
        *(int64_t *)out = index;
    } else if constexpr (std::is_integral<A>::value) { /* int64 input: int64 output */
        *(int64_t *)out = r.value;
    } else {
        double v = (double)r.value;
        if (OP == WICK_MEAN) {
            v = v / (double)n;
        } else if (is_var(OP)) {
            double denom = (double)n - a.correction;
            v = v / (denom > 0 ? denom : 0); /* like PyTorch: max(0, N - correction) */
            if (OP == WICK_STD) v = sqrt(v);
        }
        wk_cu_store_double(out, a.out_dtype, v);
    }
    if (a.indices) ((int64_t *)a.indices)[p.idx] = index;
}

/* ---- direct: a group of G threads per output ---- */

template <typename T, typename A, int OP, int G>
__global__ void __launch_bounds__(RED_THREADS) reduce_direct(const wk_reduce_args a, int64_t outer, int idx32) {
    constexpr int PER_BLOCK = RED_THREADS / G;
    constexpr int KIND = fold_kind(OP);
    __shared__ A sv[G == 1 ? 1 : RED_THREADS];
    __shared__ int64_t si[G == 1 ? 1 : RED_THREADS];
    int lane = threadIdx.x % G, group = threadIdx.x / G;
    int64_t n = a.inner_size, stride = a.inner_stride;
    /* the loop is uniform over the block, so every thread reaches the syncs */
    for (int64_t base = (int64_t)blockIdx.x * PER_BLOCK; base < outer; base += (int64_t)gridDim.x * PER_BLOCK) {
        int64_t o = base + group;
        bool active = o < outer;
        red_place p = {0, 0, 0};
        if (active) p = red_locate(a, o, idx32);
        const T *in = (const T *)a.in + p.in;
        int64_t end = active ? n : 0;
        red_val<A> r = red_fold_range<T, A, KIND>(in, stride, lane, end, G, 0);
        r = red_group<A, KIND, G>(r, sv, si);
        if constexpr (is_var(OP)) {
            double mean = (double)r.value / (double)n;
            r = red_fold_range<T, A, K_SQDEV>(in, stride, lane, end, G, mean);
            r = red_group<A, K_SQDEV, G>(r, sv, si);
        }
        if (active && lane == 0) red_store<A, OP>(a, p, r);
    }
}

/* ---- tiled: tile_x adjacent outputs per block, the reduced dim over tile_y threads ---- */

/* The combined partial of the tile_y threads of each output (column tx), given
 * to all of them: the fixed tree of cuda_tile.h. Every thread must call it. */
template <typename A, int KIND>
__device__ __forceinline__ red_val<A> red_tile_tree(red_val<A> r, A *sv, int64_t *si, int tx, int ty, int tile_x,
                                                    int tile_y) {
    int tid = threadIdx.x;
    sv[tid] = r.value;
    si[tid] = r.index;
    __syncthreads();
    for (int s = tile_y / 2; s > 0; s >>= 1) {
        if (ty < s) {
            int other = tid + s * tile_x;
            red_val<A> x = {sv[tid], si[tid]}, y = {sv[other], si[other]};
            x = red_combine<A, KIND>(x, y);
            sv[tid] = x.value;
            si[tid] = x.index;
        }
        __syncthreads();
    }
    red_val<A> out = {sv[tx], si[tx]};
    __syncthreads(); /* before the arrays are reused */
    return out;
}

template <typename T, typename A, int OP>
__global__ void __launch_bounds__(RED_THREADS)
    reduce_tiled(const wk_reduce_args a, int64_t outer, int64_t tiles, int tile_x, int tile_y, int idx32) {
    constexpr int KIND = fold_kind(OP);
    __shared__ A sv[RED_THREADS];
    __shared__ int64_t si[RED_THREADS];
    int tx = threadIdx.x % tile_x, ty = threadIdx.x / tile_x;
    int64_t n = a.inner_size, stride = a.inner_stride;
    /* the loop is uniform over the block, so every thread reaches the syncs */
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        int64_t o = wk_red_tile_output(tile, tx, tile_x);
        bool active = o < outer;
        red_place p = {0, 0, 0};
        if (active) p = red_locate(a, o, idx32);
        const T *in = (const T *)a.in + p.in;
        int64_t end = active ? n : 0;
        red_val<A> r = red_fold_range<T, A, KIND>(in, stride, ty, end, tile_y, 0);
        r = red_tile_tree<A, KIND>(r, sv, si, tx, ty, tile_x, tile_y);
        if constexpr (is_var(OP)) {
            double mean = (double)r.value / (double)n;
            r = red_fold_range<T, A, K_SQDEV>(in, stride, ty, end, tile_y, mean);
            r = red_tile_tree<A, K_SQDEV>(r, sv, si, tx, ty, tile_x, tile_y);
        }
        if (active && ty == 0) red_store<A, OP>(a, p, r);
    }
}

/* ---- split: S chunks per output, one block each, then a combining pass ---- */

/* Partial of chunk c of output o in part[o * S + c]; var's second pass reads
 * the output's mean from means. */
template <typename T, typename A, int KIND>
__global__ void __launch_bounds__(RED_THREADS)
    reduce_partial(const wk_reduce_args a, int64_t outer, int64_t S, int64_t chunk, red_val<A> *part,
                   const double *means, int idx32) {
    __shared__ A sv[RED_THREADS];
    __shared__ int64_t si[RED_THREADS];
    int64_t n = a.inner_size;
    for (int64_t b = blockIdx.x; b < outer * S; b += gridDim.x) {
        int64_t o = b / S, begin = b % S * chunk, end = begin + chunk < n ? begin + chunk : n;
        red_place p = red_locate(a, o, idx32);
        double mean = KIND == K_SQDEV ? means[o] : 0;
        red_val<A> r = red_fold_range<T, A, KIND>((const T *)a.in + p.in, a.inner_stride, begin + threadIdx.x,
                                                  end, RED_THREADS, mean);
        r = red_group<A, KIND, RED_THREADS>(r, sv, si);
        if (threadIdx.x == 0) part[b] = r;
    }
}

/* A block per output combines its S partials (a thread folds every 256th in
 * chunk order, then the block's fixed tree), then writes the output, or (means
 * != NULL) only the mean for var's second pass. */
template <typename A, int OP, int KIND>
__global__ void __launch_bounds__(RED_THREADS)
    reduce_finish(const wk_reduce_args a, int64_t outer, int64_t S, const red_val<A> *part, double *means,
                  int idx32) {
    __shared__ A sv[RED_THREADS];
    __shared__ int64_t si[RED_THREADS];
    for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
        red_val<A> r = red_identity<A, KIND>();
        for (int64_t c = threadIdx.x; c < S; c += RED_THREADS) r = red_combine<A, KIND>(r, part[o * S + c]);
        r = red_group<A, KIND, RED_THREADS>(r, sv, si);
        if (threadIdx.x != 0) continue;
        if (means) means[o] = (double)r.value / (double)a.inner_size;
        else red_store<A, OP>(a, red_locate(a, o, idx32), r);
    }
}

/* ---- launching ---- */

/* One more than the largest |offset| (in elements) of input, output and
 * indices: what decides 32-bit index math. */
static int64_t reduce_span(const wk_reduce_args *a) {
    int64_t in = (a->inner_size > 0 ? a->inner_size - 1 : 0) * (a->inner_stride < 0 ? -a->inner_stride : a->inner_stride);
    int64_t out = 0, idx = 0;
    for (int d = 0; d < a->outer_ndim; d++) {
        int64_t m = a->outer_sizes[d] - 1, si = a->in_outer_strides[d], so = a->out_outer_strides[d],
                sx = a->idx_outer_strides[d];
        in += m * (si < 0 ? -si : si);
        out += m * (so < 0 ? -so : so);
        idx += m * (sx < 0 ? -sx : sx);
    }
    int64_t span = in > out ? in : out;
    return (span > idx ? span : idx) + 1;
}

template <typename T, typename A, int OP>
static wick_status reduce_split(const wk_reduce_args *a, int64_t outer, const wk_tile_plan &pl, cudaStream_t stream,
                                const char *name) {
    constexpr int KIND = fold_kind(OP);
    int64_t S = pl.split, chunk = pl.chunk;
    size_t part_bytes = (size_t)(outer * S) * sizeof(red_val<A>);
    size_t bytes = part_bytes + (is_var(OP) ? (size_t)outer * sizeof(double) : 0);
    char *scratch = (char *)wk_cuda_alloc_scratch(bytes, a->device);
    if (!scratch) return WICK_ERR_OOM; /* wk_cuda_alloc_scratch has said why */
    red_val<A> *part = (red_val<A> *)scratch;
    double *means = is_var(OP) ? (double *)(scratch + part_bytes) : NULL;
    unsigned blocks = pl.blocks, finish_blocks = wk_tile_blocks(outer);
    int i32 = pl.index32;
    reduce_partial<T, A, KIND><<<blocks, RED_THREADS, 0, stream>>>(*a, outer, S, chunk, part, NULL, i32);
    if (is_var(OP)) {
        reduce_finish<A, OP, KIND><<<finish_blocks, RED_THREADS, 0, stream>>>(*a, outer, S, part, means, i32);
        reduce_partial<T, A, K_SQDEV><<<blocks, RED_THREADS, 0, stream>>>(*a, outer, S, chunk, part, means, i32);
        reduce_finish<A, OP, K_SQDEV><<<finish_blocks, RED_THREADS, 0, stream>>>(*a, outer, S, part, NULL, i32);
    } else {
        reduce_finish<A, OP, KIND><<<finish_blocks, RED_THREADS, 0, stream>>>(*a, outer, S, part, NULL, i32);
    }
    wick_status st = wk_cuda_check_launch(name, a->device);
    wk_cuda_free_scratch(scratch, bytes, a->device); /* the stream orders any reuse after these kernels */
    return st;
}

template <typename T, typename A, int OP> static wick_status reduce_typed(const wk_reduce_args *a, int64_t outer) {
    const char *name = wick_reduce_name((wick_reduce_op)OP);
    cudaStream_t stream = wk_cuda_enter(a->device, name);
    if (!stream) return WICK_ERR_DEVICE; /* wk_cuda_enter has set the message */
    wk_tile_plan pl = wk_reduce_plan(outer, a->inner_size, a->inner_stride, reduce_span(a));
    unsigned blocks = pl.blocks;
    int i32 = pl.index32;
    if (pl.kind == WK_TILE_SPLIT) return reduce_split<T, A, OP>(a, outer, pl, stream, name);
    if (pl.kind == WK_TILE_TILED) {
        reduce_tiled<T, A, OP><<<blocks, RED_THREADS, 0, stream>>>(*a, outer, pl.units, pl.tile_x, pl.tile_y, i32);
        return wk_cuda_check_launch(name, a->device);
    }
    switch (pl.group) {
    case 1: reduce_direct<T, A, OP, 1><<<blocks, RED_THREADS, 0, stream>>>(*a, outer, i32); break;
    case 32: reduce_direct<T, A, OP, 32><<<blocks, RED_THREADS, 0, stream>>>(*a, outer, i32); break;
    default: reduce_direct<T, A, OP, RED_THREADS><<<blocks, RED_THREADS, 0, stream>>>(*a, outer, i32); break;
    }
    return wk_cuda_check_launch(name, a->device);
}

template <typename T> static wick_status reduce_floating(const wk_reduce_args *a, int64_t outer) {
#define CASE(id, name) case WICK_##id: return reduce_typed<T, double, WICK_##id>(a, outer);
    switch (a->op) {
        WICK_REDUCE_OPS(CASE)
    default: break;
    }
#undef CASE
    return wick_fail(WICK_ERR_ARGUMENT, "invalid reduction %d", (int)a->op);
}

static wick_status reduce_int64(const wk_reduce_args *a, int64_t outer) {
    switch (a->op) {
    case WICK_SUM: return reduce_typed<int64_t, int64_t, WICK_SUM>(a, outer);
    case WICK_PROD: return reduce_typed<int64_t, int64_t, WICK_PROD>(a, outer);
    case WICK_MAX: return reduce_typed<int64_t, int64_t, WICK_MAX>(a, outer);
    case WICK_MIN: return reduce_typed<int64_t, int64_t, WICK_MIN>(a, outer);
    case WICK_ARGMAX: return reduce_typed<int64_t, int64_t, WICK_ARGMAX>(a, outer);
    case WICK_ARGMIN: return reduce_typed<int64_t, int64_t, WICK_ARGMIN>(a, outer);
    default: /* mean, var and std need a floating input; the core converts first */
        return wick_fail(WICK_ERR_DTYPE, "%s: no CUDA kernel for int64", wick_reduce_name(a->op));
    }
}

} // namespace

extern "C" wick_status cuda_reduce(const wk_reduce_args *a) {
    int64_t outer = wk_numel(a->outer_ndim, a->outer_sizes);
    if (outer == 0) return WICK_OK;
    switch (a->in_dtype) {
    case WICK_FLOAT32: return reduce_floating<float>(a, outer);
    case WICK_FLOAT64: return reduce_floating<double>(a, outer);
    default: return reduce_int64(a, outer);
    }
}
