/* CUDA sort and scans along one dim (wk_sort_args, wk_scan_args in
 * src/core/internal.h), with the CPU's results (src/cpu/cpu_sort.c): a stable
 * sort, NaN above every number, 0-based positions.
 *
 * Sort: a line of n keys, padded to a power of two P, goes through a bitonic
 * network over (key, position) pairs. Positions are distinct, so the order is
 * total and the result stable. The plan (cuda_sort_plan.h, tested on the CPU
 * by tests/test_sort_plan.c) picks:
 * - shared: P <= WK_SORT_SHARED_MAX: one block per line, keys and positions in
 *   shared memory, one thread per compare-exchange pair, every pass inside one
 *   launch;
 * - global: longer lines: the keys and positions in scratch memory, one launch
 *   per pass of the network over all lines at once.
 * Only the first k of each sorted line are written (k = n for sort; topk).
 *
 * Scan (wk_scan_plan): many short lines take one thread each, in order;
 * otherwise one block per line, which goes through the line in chunks of the
 * block's size, each an inclusive Hillis-Steele scan in shared memory plus the
 * carry of the chunks before it. Sums of floats then come in another order
 * than the CPU's sequential loop (rounding differs in the last bits). */
#include "cuda.h"
#include "cuda_sort_plan.h"

namespace { /* everything but the entry points is internal to this file */

/* One compare-exchange of the network (cuda_sort_plan.h): pair t of pass (k, j). */
template <typename T>
__device__ __forceinline__ void exchange(T *key, int64_t *pos, int64_t t, int64_t k, int64_t j, int64_t n, int desc) {
    WK_BITONIC_EXCHANGE(T, key, pos, t, k, j, n, desc);
}

template <typename T>
__global__ void sort_shared(const T *in, T *values, int64_t *indices, int64_t lines, int64_t n, int64_t inner,
                            int64_t P, int64_t kout, int desc) {
    extern __shared__ int64_t sh_pos[]; /* P positions, then P keys (int64 first: aligned for any T) */
    T *sh_key = (T *)(sh_pos + P);
    for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
        int64_t base = (line / inner) * n * inner + line % inner;
        for (int64_t i = threadIdx.x; i < P; i += blockDim.x) {
            sh_pos[i] = i;
            sh_key[i] = i < n ? in[base + i * inner] : (T)0;
        }
        __syncthreads();
        for (int64_t k = 2; k <= P; k <<= 1)
            for (int64_t j = k >> 1; j > 0; j >>= 1) {
                for (int64_t t = threadIdx.x; t < P / 2; t += blockDim.x) exchange(sh_key, sh_pos, t, k, j, n, desc);
                __syncthreads();
            }
        int64_t obase = (line / inner) * kout * inner + line % inner; /* the first kout go out */
        for (int64_t i = threadIdx.x; i < kout; i += blockDim.x) {
            values[obase + i * inner] = sh_key[i];
            indices[obase + i * inner] = sh_pos[i];
        }
        __syncthreads(); /* before the next line reuses shared memory */
    }
}

template <typename T>
__global__ void sort_load(const T *in, T *key, int64_t *pos, int64_t lines, int64_t n, int64_t inner, int64_t P) {
    int64_t total = lines * P;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t line = e / P, i = e % P, base = (line / inner) * n * inner + line % inner;
        pos[e] = i;
        key[e] = i < n ? in[base + i * inner] : (T)0;
    }
}

template <typename T>
__global__ void sort_pass(T *key, int64_t *pos, int64_t lines, int64_t n, int64_t P, int64_t k, int64_t j, int desc) {
    int64_t half = P / 2, total = lines * half;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t line = e / half;
        exchange(key + line * P, pos + line * P, e % half, k, j, n, desc);
    }
}

template <typename T>
__global__ void sort_store(const T *key, const int64_t *pos, T *values, int64_t *indices, int64_t lines, int64_t kout,
                           int64_t inner, int64_t P) {
    int64_t total = lines * kout;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t line = e / kout, i = e % kout, obase = (line / inner) * kout * inner + line % inner;
        values[obase + i * inner] = key[line * P + i];
        indices[obase + i * inner] = pos[line * P + i];
    }
}

static unsigned line_blocks(int64_t lines) { return (unsigned)(lines < 65535 * 32 ? lines : 65535 * 32); }

template <typename T> static wick_status sort_launch(const wk_sort_args *a, cudaStream_t stream) {
    int64_t lines = a->outer * a->inner, n = a->n;
    wk_sort_plan p = wk_sort_plan_for(n, sizeof(T));
    const T *in = (const T *)a->in;
    T *values = (T *)a->values;
    if (p.shared) {
        sort_shared<T><<<line_blocks(lines), p.threads, p.smem, stream>>>(in, values, a->indices, lines, n, a->inner,
                                                                          p.padded, a->k, a->descending);
        return wk_cuda_check_launch("sort", a->device);
    }
    size_t nkey = (size_t)(lines * p.padded) * sizeof(T), npos = (size_t)(lines * p.padded) * sizeof(int64_t);
    T *key = (T *)wk_cuda_alloc_scratch(nkey, a->device);
    int64_t *pos = key ? (int64_t *)wk_cuda_alloc_scratch(npos, a->device) : NULL;
    if (!pos) {
        if (key) wk_cuda_free_scratch(key, nkey, a->device);
        return wick_fail(WICK_ERR_OOM, "sort: out of memory allocating %zu bytes of scratch on cuda:%d", nkey + npos,
                         a->device);
    }
    sort_load<T><<<wk_cuda_blocks(lines * p.padded), WK_CUDA_THREADS, 0, stream>>>(in, key, pos, lines, n, a->inner,
                                                                                   p.padded);
    for (int64_t k = 2; k <= p.padded; k <<= 1)
        for (int64_t j = k >> 1; j > 0; j >>= 1)
            sort_pass<T><<<wk_cuda_blocks(lines * p.padded / 2), WK_CUDA_THREADS, 0, stream>>>(
                key, pos, lines, n, p.padded, k, j, a->descending);
    sort_store<T><<<wk_cuda_blocks(lines * a->k), WK_CUDA_THREADS, 0, stream>>>(key, pos, values, a->indices, lines,
                                                                                 a->k, a->inner, p.padded);
    wick_status st = wk_cuda_check_launch("sort", a->device);
    wk_cuda_free_scratch(pos, npos, a->device); /* the stream orders the reuse */
    wk_cuda_free_scratch(key, nkey, a->device);
    return st;
}

/* ---- scans ---- */

#define SCAN_THREADS 256

template <typename T> __device__ __forceinline__ T combine(T a, T b, int prod) { return prod ? a * b : a + b; }
/* int64 wraps on overflow, like the CPU's */
template <> __device__ __forceinline__ int64_t combine<int64_t>(int64_t a, int64_t b, int prod) {
    return (int64_t)(prod ? (uint64_t)a * (uint64_t)b : (uint64_t)a + (uint64_t)b);
}

template <typename T>
__global__ void __launch_bounds__(SCAN_THREADS)
    scan_kernel(const T *in, T *out, int64_t lines, int64_t n, int64_t inner, int prod, int reverse) {
    __shared__ T sh[SCAN_THREADS];
    const T identity = prod ? (T)1 : (T)0;
    for (int64_t line = blockIdx.x; line < lines; line += gridDim.x) {
        int64_t base = (line / inner) * n * inner + line % inner;
        T carry = identity;
        for (int64_t start = 0; start < n; start += SCAN_THREADS) {
            int64_t s = start + threadIdx.x, k = reverse ? n - 1 - s : s;
            T v = s < n ? in[base + k * inner] : identity;
            sh[threadIdx.x] = v;
            __syncthreads();
            for (int off = 1; off < SCAN_THREADS; off <<= 1) {
                T other = threadIdx.x >= (unsigned)off ? sh[threadIdx.x - off] : identity;
                __syncthreads();
                v = combine(other, v, prod);
                sh[threadIdx.x] = v;
                __syncthreads();
            }
            if (s < n) out[base + k * inner] = combine(carry, v, prod);
            carry = combine(carry, sh[SCAN_THREADS - 1], prod);
            __syncthreads(); /* before the next chunk overwrites sh */
        }
    }
}

/* one thread per line, in the line's order (short lines, many of them) */
template <typename T>
__global__ void scan_lines(const T *in, T *out, int64_t lines, int64_t n, int64_t inner, int prod, int reverse) {
    for (int64_t line = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; line < lines;
         line += (int64_t)gridDim.x * blockDim.x) {
        int64_t base = (line / inner) * n * inner + line % inner;
        T acc = prod ? (T)1 : (T)0;
        for (int64_t s = 0; s < n; s++) {
            int64_t k = reverse ? n - 1 - s : s;
            acc = combine(acc, in[base + k * inner], prod);
            out[base + k * inner] = acc;
        }
    }
}

template <typename T> static void scan_launch(const wk_scan_args *a, int64_t lines, cudaStream_t stream) {
    const T *in = (const T *)a->in;
    T *out = (T *)a->out;
    if (wk_scan_plan(a->n, lines) == WK_SCAN_THREAD)
        scan_lines<T><<<wk_cuda_blocks(lines), WK_CUDA_THREADS, 0, stream>>>(in, out, lines, a->n, a->inner, a->prod,
                                                                           a->reverse);
    else
        scan_kernel<T><<<line_blocks(lines), SCAN_THREADS, 0, stream>>>(in, out, lines, a->n, a->inner, a->prod,
                                                                        a->reverse);
}

} // namespace

extern "C" wick_status cuda_sort(const wk_sort_args *a) {
    if (a->outer * a->inner == 0 || a->n == 0 || a->k == 0) return WICK_OK;
    cudaStream_t stream = wk_cuda_enter(a->device, "sort");
    if (!stream) return WICK_ERR_DEVICE; /* wk_cuda_enter has set the message */
    switch (a->dtype) {
    case WICK_FLOAT32: return sort_launch<float>(a, stream);
    case WICK_FLOAT64: return sort_launch<double>(a, stream);
    default: return sort_launch<int64_t>(a, stream);
    }
}

extern "C" wick_status cuda_scan(const wk_scan_args *a) {
    const char *name = a->prod ? "cumprod" : "cumsum";
    int64_t lines = a->outer * a->inner;
    if (lines == 0 || a->n == 0) return WICK_OK;
    cudaStream_t stream = wk_cuda_enter(a->device, name);
    if (!stream) return WICK_ERR_DEVICE;
    switch (a->dtype) {
    case WICK_FLOAT32: scan_launch<float>(a, lines, stream); break;
    case WICK_FLOAT64: scan_launch<double>(a, lines, stream); break;
    default: scan_launch<int64_t>(a, lines, stream); break;
    }
    return wk_cuda_check_launch(name, a->device);
}
