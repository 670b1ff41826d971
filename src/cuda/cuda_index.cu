/* CUDA kernels for index_select, gather, scatter, scatter_add and index_add,
 * with cpu_index.c's contracts: 0-based int64 indices (contiguous, on the
 * device), operands of any strides and any dtype.
 *
 * Indices are checked by the kernels that use them, without waiting for the
 * GPU: a thread that meets an index out of range skips its element and, if it
 * is the first, fills the device's error record (cuda_host.h: op, value,
 * dimension, size, set with atomicCAS so the first one wins). The op returns
 * at once; the next wait for the device (a copy to the CPU, item(),
 * wick.cuda.synchronize, the end of a batch of copies) reports the error,
 * saying that it was detected asynchronously, as PyTorch's device-side
 * assertions do. The elements with good indices have then been written (the
 * CPU checks up front and writes nothing). The value named is the first one a
 * thread met, not necessarily the first in order as on the CPU.
 *
 * scatter keeps the CPU's last-writer rule: where several index elements of
 * one line along `dim` name the same target, the last one in row-major order
 * wins. A thread writes only when no later element of its line names its
 * target: for short lines it looks ahead itself; for long ones a first pass
 * records the winner of each target with atomicMax in scratch memory. A target
 * tensor whose elements overlap (a stride-0 dim, from expand) is written by one
 * thread in the CPU's order.
 *
 * scatter_add and index_add accumulate with atomics, so for floating dtypes the
 * order of the additions, and so the rounding of the sums, may vary from run to
 * run (not bitwise deterministic, unlike the CPU's serial loop). Each single
 * addition rounds like the CPU's (which adds in double and stores in the dtype;
 * for float32 and the 16-bit floats that equals one correctly rounded addition).
 * Integers add with wraparound; the CPU adds int64 through double, which
 * differs only beyond 2^53. */
#include "cuda.h"
#include "cuda_dtype.cuh"

#include <inttypes.h>
#include <limits.h>

#define WK_NO_DEVICE WICK_ERR_DEVICE /* the runtime set the message */

namespace { /* internal linkage: kernels and helpers stay private to this file */

#define GRID_STRIDE(e, n) \
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < (n); e += (int64_t)gridDim.x * blockDim.x)

/* ---- geometry ---- */

/* An iteration shape and the strides (elements) of the two operands walked over
 * it: one in full ("f": the output of index_select and gather, the source of
 * scatter and index_add) and one through the index along `dim` ("x": whose
 * stride along dim multiplies the index value). A 0-d tensor is seen as [1]. */
typedef struct {
    int ndim, dim;
    int64_t sizes[WICK_MAX_DIMS];
    int64_t fs[WICK_MAX_DIMS];
    int64_t xs[WICK_MAX_DIMS];
} index_geom;

/* Drops size-1 dims and merges neighbours that are contiguous in both operands
 * (dim always stays on its own), so that e.g. index_select over contiguous
 * tensors walks a 3-D [outer, n, inner] shape. Row-major order is kept. */
static void geom_build(index_geom *g, int ndim, const int64_t *sizes, const int64_t *fs, const int64_t *xs, int dim) {
    int n = 0;
    g->dim = 0;
    for (int d = 0; d < ndim; d++) {
        if (sizes[d] == 1 && d != dim) continue;
        if (n > 0 && d != dim && g->dim != n - 1 && g->fs[n - 1] == fs[d] * sizes[d] &&
            g->xs[n - 1] == xs[d] * sizes[d]) {
            g->sizes[n - 1] *= sizes[d], g->fs[n - 1] = fs[d], g->xs[n - 1] = xs[d];
            continue;
        }
        if (d == dim) g->dim = n;
        g->sizes[n] = sizes[d], g->fs[n] = fs[d], g->xs[n] = xs[d];
        n++;
    }
    if (n == 0) /* a 0-d tensor */
        g->sizes[0] = 1, g->fs[0] = 0, g->xs[0] = 0, g->dim = 0, n = 1;
    g->ndim = n;
}

/* Offsets of element e of the iteration in both operands (x without dim's
 * term) and its coordinate along dim. */
__device__ __forceinline__ void locate(const index_geom &g, int64_t e, int64_t *f, int64_t *x, int64_t *j) {
    int64_t fo = 0, xo = 0, jd = 0;
    for (int d = g.ndim - 1; d >= 0; d--) {
        int64_t i = e % g.sizes[d];
        e /= g.sizes[d];
        fo += i * g.fs[d];
        if (d == g.dim) jd = i;
        else xo += i * g.xs[d];
    }
    *f = fo, *x = xo, *j = jd;
}

/* ---- the bounds check ---- */

/* What a kernel needs to check its indices: the valid range [0, size) along
 * dim, and where to report one outside it. */
typedef struct {
    wk_device_error *rec;
    int64_t size;
    int32_t op, dim;
} index_bound;

/* true when v lies in range; otherwise the first thread to get here fills the
 * record (flag 0 -> 1 wins it; the fields are read only after a wait). */
__device__ __forceinline__ bool index_ok(int64_t v, const index_bound &b) {
    if (v >= 0 && v < b.size) return true;
    if (atomicCAS(&b.rec->flag, 0u, 1u) == 0u) {
        b.rec->op = b.op;
        b.rec->dim = b.dim;
        b.rec->value = v;
        b.rec->size = b.size;
    }
    return false;
}

/* Only the check, for ops that move no element (an empty output or source
 * with indices), so that a bad index is reported as on the CPU. */
__global__ void check_kernel(const int64_t *idx, int64_t n, index_bound b) {
    GRID_STRIDE(e, n) (void)index_ok(idx[e], b);
}

/* The bound of an op on `device` (stream s); rec NULL after setting the error. */
static index_bound make_bound(int device, cudaStream_t s, const char *op, wk_device_error_op id, int dim,
                              int64_t size) {
    index_bound b = {wk_cuda_error_record(device, s, op), size, (int32_t)id, (int32_t)dim};
    return b;
}

/* check_kernel over the n indices (n > 0). */
static wick_status check_only(const char *op, wk_device_error_op id, int device, cudaStream_t s, const int64_t *idx,
                              int64_t n, int dim, int64_t size) {
    index_bound b = make_bound(device, s, op, id, dim, size);
    if (!b.rec) return WK_NO_DEVICE;
    check_kernel<<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(idx, n, b);
    return wk_cuda_check_launch(op, device);
}

/* ---- moves: index_select, gather, scatter (elements of any dtype) ---- */

/* full[f] = indexed[x + v * stride]: index_select (v = idx[j], the coordinate
 * along dim) and gather (v = idx[e], the index walked in step) */
template <typename T>
__global__ void select_kernel(index_geom g, int64_t n, T *full, const T *indexed, const int64_t *idx,
                              int per_element, index_bound b) {
    GRID_STRIDE(e, n) {
        int64_t f, x, j;
        locate(g, e, &f, &x, &j);
        int64_t v = idx[per_element ? e : j];
        if (!index_ok(v, b)) continue;
        full[f] = indexed[x + v * g.xs[g.dim]];
    }
}

/* The lines of scatter's index: element e = (line_outer * ld + j) * inner + r
 * has coordinate j along dim; its target is line (line_outer * inner + r),
 * position idx[e] (of `size`). */
typedef struct {
    int64_t ld, inner, size;
    const unsigned int *winner; /* [lines * size]: 1 + the winning j, or NULL: look ahead */
} scatter_lines;

__global__ void scatter_winner_kernel(int64_t n, const int64_t *idx, scatter_lines l, unsigned int *winner,
                                      index_bound b) {
    GRID_STRIDE(e, n) {
        if (!index_ok(idx[e], b)) continue;
        int64_t j = e / l.inner % l.ld, line = e / (l.inner * l.ld) * l.inner + e % l.inner;
        atomicMax(winner + line * l.size + idx[e], (unsigned int)(j + 1));
    }
}

/* indexed[x + v * stride] = full[f] where this element is its target's last writer */
template <typename T>
__global__ void scatter_kernel(index_geom g, int64_t n, T *indexed, const T *full, const int64_t *idx,
                               scatter_lines l, index_bound b) {
    GRID_STRIDE(e, n) {
        const int64_t v = idx[e], j = e / l.inner % l.ld;
        if (!index_ok(v, b)) continue;
        bool last = true;
        if (l.winner) {
            int64_t line = e / (l.inner * l.ld) * l.inner + e % l.inner;
            last = l.winner[line * l.size + v] == (unsigned int)(j + 1);
        } else {
            for (int64_t p = e + l.inner, jj = j + 1; jj < l.ld && last; jj++, p += l.inner) last = idx[p] != v;
        }
        if (!last) continue;
        int64_t f, x, jd;
        locate(g, e, &f, &x, &jd);
        indexed[x + v * g.xs[g.dim]] = full[f];
    }
}

/* targets that share memory: one thread, in the CPU's order */
template <typename T>
__global__ void scatter_serial_kernel(index_geom g, int64_t n, T *indexed, const T *full, const int64_t *idx,
                                      index_bound b) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int64_t e = 0; e < n; e++) {
        if (!index_ok(idx[e], b)) continue;
        int64_t f, x, j;
        locate(g, e, &f, &x, &j);
        indexed[x + idx[e] * g.xs[g.dim]] = full[f];
    }
}

/* The element type that moves es bytes. */
#define BY_ELEMENT_SIZE(es, CALL)                                                                  \
    switch (es) {                                                                                  \
    case 1: { typedef uint8_t T; CALL; } break;                                                    \
    case 2: { typedef uint16_t T; CALL; } break;                                                   \
    case 4: { typedef uint32_t T; CALL; } break;                                                   \
    default: { typedef unsigned long long T; CALL; } break;                                        \
    }

/* index_select and gather */
static wick_status select_common(const char *op, wk_device_error_op id, wick_tensor *out, const wick_tensor *in,
                                 int dim, const wick_tensor *index, bool per_element) {
    const int64_t *idx = (const int64_t *)wk_data(index);
    int64_t n_idx = wick_tensor_numel(index), size = in->ndim ? in->sizes[dim] : 1;
    int device = out->storage->device.index;
    cudaStream_t s = wk_cuda_enter(device, op);
    if (!s) return WK_NO_DEVICE;
    /* index_select walks the output's shape, gather the index's (the same) */
    int64_t total = wick_tensor_numel(out);
    if (total == 0) return n_idx ? check_only(op, id, device, s, idx, n_idx, dim, size) : WICK_OK;
    if (n_idx == 0) /* a 0-d input with an empty index (the CPU reads past the index): its one element */
        return wk_cuda_check(cudaMemcpyAsync(wk_data(out), wk_data(in), wk_dtype_size(out->dtype),
                                             cudaMemcpyDeviceToDevice, s), op, device);
    index_bound b = make_bound(device, s, op, id, dim, size);
    if (!b.rec) return WK_NO_DEVICE;
    index_geom g;
    geom_build(&g, out->ndim, out->sizes, out->strides, in->strides, out->ndim ? dim : 0);
    BY_ELEMENT_SIZE(wk_dtype_size(out->dtype),
                    (select_kernel<T><<<wk_cuda_blocks(total), WK_CUDA_THREADS, 0, s>>>(
                        g, total, (T *)wk_data(out), (const T *)wk_data(in), idx, per_element, b)))
    return wk_cuda_check_launch(op, device);
}

} // namespace

extern "C" wick_status cuda_index_select(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index) {
    return select_common("index_select", WK_DEVERR_INDEX_SELECT, out, in, dim, index, false);
}

extern "C" wick_status cuda_gather(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index) {
    return select_common("gather", WK_DEVERR_GATHER, out, in, dim, index, true);
}

namespace {

/* Elements of t share memory (an expanded view). */
static bool overlaps(const wick_tensor *t) {
    for (int d = 0; d < t->ndim; d++)
        if (t->strides[d] == 0 && t->sizes[d] > 1) return true;
    return false;
}

/* Lines longer than this, with more than LOOKAHEAD_WORK comparisons in all, use
 * the winner pass instead of looking ahead. */
#define LOOKAHEAD_LINE 64
#define LOOKAHEAD_WORK ((int64_t)1 << 26)

/* The winner pass: scratch of 32-bit winners per target, filled; *winner is
 * left NULL on failure. */
static wick_status mark_winners(const char *op, int device, cudaStream_t s, int64_t n, const int64_t *idx,
                                const scatter_lines *l, const index_bound &b, unsigned int **winner,
                                size_t *nbytes) {
    *nbytes = (size_t)(n / l->ld) * (size_t)l->size * sizeof **winner;
    if (!(*winner = (unsigned int *)wk_cuda_alloc_scratch(*nbytes, device)))
        return wick_fail(WICK_ERR_OOM, "%s: out of memory allocating %zu bytes of scratch on cuda:%d", op, *nbytes,
                         device);
    cudaError_t err = cudaMemsetAsync(*winner, 0, *nbytes, s);
    if (err == cudaSuccess) {
        scatter_winner_kernel<<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(n, idx, *l, *winner, b);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess) return WICK_OK;
    wk_cuda_free_scratch(*winner, *nbytes, device);
    *winner = NULL;
    return wk_cuda_check(err, op, device);
}

} // namespace

extern "C" wick_status cuda_scatter(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src) {
    const char *op = "scatter";
    const int64_t *idx = (const int64_t *)wk_data(index);
    int64_t n = wick_tensor_numel(index), size = out->ndim ? out->sizes[dim] : 1;
    int device = out->storage->device.index;
    cudaStream_t s = wk_cuda_enter(device, op);
    if (!s) return WK_NO_DEVICE;
    if (n == 0) return WICK_OK;
    index_bound b = make_bound(device, s, op, WK_DEVERR_SCATTER, dim, size);
    if (!b.rec) return WK_NO_DEVICE;
    wick_status st;
    index_geom g;
    geom_build(&g, index->ndim, index->sizes, src->strides, out->strides, index->ndim ? dim : 0);
    size_t es = wk_dtype_size(out->dtype);
    scatter_lines l = {1, 1, size, NULL};
    if (index->ndim) {
        l.ld = index->sizes[dim];
        for (int d = dim + 1; d < index->ndim; d++) l.inner *= index->sizes[d];
    }
    bool lookahead = l.ld <= LOOKAHEAD_LINE || (double)n * (double)l.ld <= (double)LOOKAHEAD_WORK;
    /* one thread, in order: targets that share memory, or lines too long for
     * 32-bit winners (4 billion elements along dim) */
    if (overlaps(out) || (!lookahead && l.ld >= (int64_t)UINT_MAX)) {
        BY_ELEMENT_SIZE(es, (scatter_serial_kernel<T><<<1, 1, 0, s>>>(g, n, (T *)wk_data(out),
                                                                      (const T *)wk_data(src), idx, b)))
        return wk_cuda_check_launch(op, device);
    }
    unsigned int *winner = NULL;
    size_t winner_bytes = 0;
    if (!lookahead && (st = mark_winners(op, device, s, n, idx, &l, b, &winner, &winner_bytes))) return st;
    l.winner = winner;
    BY_ELEMENT_SIZE(es, (scatter_kernel<T><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(
                            g, n, (T *)wk_data(out), (const T *)wk_data(src), idx, l, b)))
    st = wk_cuda_check_launch(op, device);
    if (winner) wk_cuda_free_scratch(winner, winner_bytes, device); /* stream order keeps it alive for the kernel */
    return st;
}

namespace {

/* ---- accumulation: scatter_add, index_add ---- */

/* *o += s, atomically, one struct per dtype (T: the stored type) */
struct AddF32 {
    typedef float T;
    static __device__ void add(T *o, T s) { atomicAdd(o, s); }
};
struct AddF64 {
    typedef double T;
    static __device__ void add(T *o, T s) { atomicAdd(o, s); }
};
struct AddI64 {
    typedef unsigned long long T; /* two's complement: unsigned addition wraps like the int64 one */
    static __device__ void add(T *o, T s) { atomicAdd(o, s); }
};
struct AddI32 {
    typedef unsigned int T;
    static __device__ void add(T *o, T s) { atomicAdd(o, s); }
};
/* no 8-bit atomics: a compare-and-swap on the aligned word holding the byte
 * (the caching allocator's blocks are 512-byte aligned and sized, so the word
 * lies in the tensor's own block; its other bytes are written back unchanged) */
struct AddU8 {
    typedef uint8_t T;
    static __device__ void add(T *o, T s) {
        unsigned int *word = (unsigned int *)((uintptr_t)o & ~(uintptr_t)3);
        unsigned int shift = (unsigned int)((uintptr_t)o & 3) * 8, old = *word, assumed;
        do {
            assumed = old;
            unsigned int b = ((assumed >> shift) + s) & 0xffu;
            old = atomicCAS(word, assumed, (assumed & ~(0xffu << shift)) | (b << shift));
        } while (old != assumed);
    }
};
/* (o != 0) + (s != 0) stored as bool: only a true source changes anything */
struct AddBool {
    typedef uint8_t T;
    static __device__ void add(T *o, T s) {
        if (s) *o = 1;
    }
};
/* 16-bit floats: the CPU's double sum, rounded to float and then to the dtype */
template <bool Bf16> struct Add16 {
    typedef unsigned short T;
    static __device__ float load(T v) { return Bf16 ? wk_cu_bf16_to_float(v) : wk_cu_half_to_float(v); }
    static __device__ void add(T *o, T s) {
        const double sv = load(s);
        T old = *o, assumed;
        do {
            assumed = old;
            float sum = (float)((double)load(assumed) + sv);
            old = atomicCAS(o, assumed, Bf16 ? wk_cu_float_to_bf16(sum) : wk_cu_float_to_half(sum));
        } while (old != assumed);
    }
};

/* indexed[x + v * stride] += full[f], v = idx[e] (scatter_add) or idx[j] (index_add) */
template <typename Op>
__global__ void accumulate_kernel(index_geom g, int64_t n, typename Op::T *indexed, const typename Op::T *full,
                                  const int64_t *idx, int per_element, index_bound b) {
    GRID_STRIDE(e, n) {
        int64_t f, x, j;
        locate(g, e, &f, &x, &j);
        int64_t v = idx[per_element ? e : j];
        if (!index_ok(v, b)) continue;
        Op::add(indexed + x + v * g.xs[g.dim], full[f]);
    }
}

template <typename Op>
static void launch_accumulate(const index_geom &g, int64_t n, wick_tensor *out, const wick_tensor *src,
                              const int64_t *idx, int per_element, const index_bound &b, cudaStream_t s) {
    accumulate_kernel<Op><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(
        g, n, (typename Op::T *)wk_data(out), (const typename Op::T *)wk_data(src), idx, per_element, b);
}

/* scatter_add (iterating over the index, per_element) and index_add (over the
 * source, one index per position along dim); out and src have one dtype. */
static wick_status accumulate_common(const char *op, wk_device_error_op id, wick_tensor *out, int dim,
                                     const wick_tensor *index, const wick_tensor *src, bool per_element) {
    const int64_t *idx = (const int64_t *)wk_data(index);
    int64_t n_idx = wick_tensor_numel(index), size = out->ndim ? out->sizes[dim] : 1;
    int device = out->storage->device.index;
    cudaStream_t s = wk_cuda_enter(device, op);
    if (!s) return WK_NO_DEVICE;
    const wick_tensor *walk = per_element ? index : src;
    int64_t total = wick_tensor_numel(walk);
    if (n_idx == 0) return WICK_OK; /* (a 0-d index_add with no index adds nothing) */
    if (total == 0) return check_only(op, id, device, s, idx, n_idx, dim, size);
    index_bound b = make_bound(device, s, op, id, dim, size);
    if (!b.rec) return WK_NO_DEVICE;
    index_geom g;
    geom_build(&g, walk->ndim, walk->sizes, src->strides, out->strides, walk->ndim ? dim : 0);
    switch (out->dtype) {
    case WICK_FLOAT32: launch_accumulate<AddF32>(g, total, out, src, idx, per_element, b, s); break;
    case WICK_FLOAT64: launch_accumulate<AddF64>(g, total, out, src, idx, per_element, b, s); break;
    case WICK_FLOAT16: launch_accumulate<Add16<false> >(g, total, out, src, idx, per_element, b, s); break;
    case WICK_BFLOAT16: launch_accumulate<Add16<true> >(g, total, out, src, idx, per_element, b, s); break;
    case WICK_INT64: launch_accumulate<AddI64>(g, total, out, src, idx, per_element, b, s); break;
    case WICK_INT32: launch_accumulate<AddI32>(g, total, out, src, idx, per_element, b, s); break;
    case WICK_UINT8: launch_accumulate<AddU8>(g, total, out, src, idx, per_element, b, s); break;
    case WICK_BOOL: launch_accumulate<AddBool>(g, total, out, src, idx, per_element, b, s); break;
    default:
        return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not implemented for %s tensors on cuda", op,
                         wick_dtype_name(out->dtype));
    }
    return wk_cuda_check_launch(op, device);
}

} // namespace

extern "C" wick_status cuda_scatter_add(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src) {
    return accumulate_common("scatter_add", WK_DEVERR_SCATTER_ADD, out, dim, index, src, true);
}

extern "C" wick_status cuda_index_add(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src) {
    return accumulate_common("index_add", WK_DEVERR_INDEX_ADD, out, dim, index, src, false);
}
