/* Fused scaled-dot-product attention on CUDA, flash-attention style, with the
 * CPU kernel's contract (src/core/attention.h): the forward walks the keys in
 * tiles staged in shared memory with an online softmax per query row and
 * saves each row's log-sum-exp; the backward recomputes the weights from q, k
 * and it, in two kernels (dk/dv per key tile, dq per query tile) so that no
 * gradient needs atomics. Dropout draws wk_uniform(seed, wk_attn_counter(...)),
 * the CPU's numbers. Launch plans: cuda_attention_plan.h (tested on the CPU). */
#include "cuda.h"

#include "../core/attention.h"
#include "cuda_attention_plan.h"

namespace { /* everything but the entry points is internal to this file */

#define OP "scaled_dot_product_attention"
#define SMEM_LIMIT (48 * 1024) /* shared memory a block gets without opting in */

__device__ __forceinline__ float at_exp(float x) { return expf(x); }
__device__ __forceinline__ double at_exp(double x) { return exp(x); }
__device__ __forceinline__ float at_log(float x) { return logf(x); }
__device__ __forceinline__ double at_log(double x) { return log(x); }

template <typename T> __device__ __forceinline__ T at_inf() { return (T)INFINITY; }

/* Query i's scaled score against key j (k row in kr), -inf where the mask or
 * the causal rule take the key out; mrow: the mask's row i (NULL: none). */
template <typename T>
__device__ __forceinline__ T at_score(const wk_attn_args &a, const T *qr, const T *kr, const char *mrow, int64_t i,
                                      int64_t j) {
    if (a.causal && j > i) return -at_inf<T>();
    if (a.mask_kind == WK_ATTN_MASK_BOOL && !((const uint8_t *)mrow)[j * a.m_cs]) return -at_inf<T>();
    T s = 0;
    for (int64_t e = 0; e < a.E; e++) s += qr[e] * kr[e];
    s *= (T)a.scale;
    if (a.mask_kind == WK_ATTN_MASK_FLOAT) s += ((const T *)mrow)[j * a.m_cs];
    return s;
}

template <typename T> __device__ __forceinline__ const char *at_mask_row(const wk_attn_args &a, int64_t b, int64_t i) {
    if (a.mask_kind == WK_ATTN_MASK_NONE) return NULL;
    size_t es = a.mask_kind == WK_ATTN_MASK_BOOL ? 1 : sizeof(T);
    return a.mask + (wk_attn_offset(&a, a.m_bs, b, 0) + i * a.m_rs) * (int64_t)es;
}

/* The dropout factor of element (b, i, j): 0 or 1 / (1 - p); 1 without dropout. */
template <typename T> __device__ __forceinline__ T at_drop(const wk_attn_args &a, int64_t b, int64_t i, int64_t j) {
    if (!(a.dropout_p > 0)) return 1;
    if (wk_uniform(a.seed, wk_attn_counter(&a, b, i, j)) < a.dropout_p) return 0;
    return (T)(1.0 / (1.0 - a.dropout_p));
}

/* rows r0 .. r0 + n of an operand with row stride rs and w columns into dst [n][w] */
template <typename T>
__device__ __forceinline__ void at_stage(T *dst, const T *src, int64_t rs, int64_t n, int64_t w) {
    for (int64_t x = threadIdx.x; x < n * w; x += blockDim.x) dst[x] = src[(x / w) * rs + x % w];
}

template <typename T> __global__ void attn_fwd_kernel(wk_attn_args a, int tile) {
    extern __shared__ unsigned char at_smem[];
    T *acc = (T *)at_smem, *ks = acc + tile * a.Ev, *vs = ks + tile * a.E;
    const int64_t tiles = wk_attn_cuda_tiles(a.L, tile), E = a.E, Ev = a.Ev;
    for (int64_t blk = blockIdx.x; blk < a.batch * tiles; blk += gridDim.x) {
        const int64_t b = blk / tiles, i0 = blk % tiles * tile, rows = a.L - i0 < tile ? a.L - i0 : tile;
        const int r = threadIdx.x;
        const int64_t i = i0 + r;
        const bool live = r < rows;
        const T *q = (const T *)a.q + wk_attn_offset(&a, a.q_bs, b, 0) + i * a.q_rs;
        const T *k = (const T *)a.k + wk_attn_offset(&a, a.k_bs, b, 1);
        const T *v = (const T *)a.v + wk_attn_offset(&a, a.v_bs, b, 1);
        const char *mrow = live ? at_mask_row<T>(a, b, i) : NULL;
        T *ar = acc + r * Ev, m = -at_inf<T>(), l = 0;
        for (int64_t e = 0; e < Ev; e++) ar[e] = 0;
        const int64_t jend = wk_attn_key_end(&a, i0, rows);
        for (int64_t j0 = 0; j0 < jend; j0 += tile) {
            const int64_t cols = jend - j0 < tile ? jend - j0 : tile;
            __syncthreads(); /* the previous tile is done with */
            at_stage(ks, k + j0 * a.k_rs, a.k_rs, cols, E);
            at_stage(vs, v + j0 * a.v_rs, a.v_rs, cols, Ev);
            __syncthreads();
            if (!live) continue;
            for (int64_t c = 0; c < cols; c++) {
                T s = at_score<T>(a, q, ks + c * E, mrow, i, j0 + c);
                if (s == -at_inf<T>()) continue;
                if (s > m) { /* a new maximum: rescale what came before */
                    T alpha = m == -at_inf<T>() ? 0 : at_exp(m - s);
                    l *= alpha;
                    for (int64_t e = 0; e < Ev; e++) ar[e] *= alpha;
                    m = s;
                }
                T p = at_exp(s - m);
                l += p;
                p *= at_drop<T>(a, b, i, j0 + c);
                for (int64_t e = 0; e < Ev; e++) ar[e] += p * vs[c * Ev + e];
            }
        }
        if (live) {
            T *out = (T *)a.out + (b * a.L + i) * Ev, inv = l > 0 ? 1 / l : 0;
            for (int64_t e = 0; e < Ev; e++) out[e] = ar[e] * inv;
            ((T *)a.lse)[b * a.L + i] = l > 0 ? m + at_log(l) : at_inf<T>();
        }
        __syncthreads(); /* acc is reused by the next block-row */
    }
}

/* D_i = dO_i . O_i for every row of every problem */
template <typename T> __global__ void attn_rowdot_kernel(wk_attn_args a, T *d) {
    for (int64_t x = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; x < a.batch * a.L; x += (int64_t)gridDim.x * blockDim.x) {
        const T *go = (const T *)a.grad_out + x * a.Ev, *o = (const T *)a.fwd_out + x * a.Ev;
        T s = 0;
        for (int64_t e = 0; e < a.Ev; e++) s += go[e] * o[e];
        d[x] = s;
    }
}

/* dk and dv of `tile` keys per block */
template <typename T> __global__ void attn_bwd_kv_kernel(wk_attn_args a, const T *dsum, int tile) {
    extern __shared__ unsigned char at_smem[];
    const int64_t E = a.E, Ev = a.Ev, tiles = wk_attn_cuda_tiles(a.S, tile);
    T *kst = (T *)at_smem, *vst = kst + tile * E, *dks = vst + tile * Ev, *dvs = dks + tile * E;
    T *qs = dvs + tile * Ev, *dos = qs + tile * E, *ls = dos + tile * Ev, *ds = ls + tile;
    for (int64_t blk = blockIdx.x; blk < a.batch * tiles; blk += gridDim.x) {
        const int64_t b = blk / tiles, j0 = blk % tiles * tile, cols = a.S - j0 < tile ? a.S - j0 : tile;
        const int c = threadIdx.x;
        const int64_t j = j0 + c;
        const bool live = c < cols;
        const T *q = (const T *)a.q + wk_attn_offset(&a, a.q_bs, b, 0);
        const T *k = (const T *)a.k + wk_attn_offset(&a, a.k_bs, b, 1);
        const T *v = (const T *)a.v + wk_attn_offset(&a, a.v_bs, b, 1);
        const T *go = (const T *)a.grad_out + b * a.L * Ev, *lse = (const T *)a.lse + b * a.L, *dd = dsum + b * a.L;
        T *kr = kst + c * E, *vr = vst + c * Ev, *dkr = dks + c * E, *dvr = dvs + c * Ev;
        if (live) {
            for (int64_t e = 0; e < E; e++) kr[e] = k[j * a.k_rs + e], dkr[e] = 0;
            for (int64_t e = 0; e < Ev; e++) vr[e] = v[j * a.v_rs + e], dvr[e] = 0;
        }
        for (int64_t i0 = a.causal ? j0 : 0; i0 < a.L; i0 += tile) {
            const int64_t rows = a.L - i0 < tile ? a.L - i0 : tile;
            __syncthreads();
            at_stage(qs, q + i0 * a.q_rs, a.q_rs, rows, E);
            at_stage(dos, go + i0 * Ev, Ev, rows, Ev);
            for (int64_t x = threadIdx.x; x < rows; x += blockDim.x) ls[x] = lse[i0 + x], ds[x] = dd[i0 + x];
            __syncthreads();
            if (!live) continue;
            for (int64_t rr = 0; rr < rows; rr++) {
                const int64_t i = i0 + rr;
                if (ls[rr] == at_inf<T>()) continue; /* a row no key takes part in */
                T s = at_score<T>(a, qs + rr * E, kr, at_mask_row<T>(a, b, i), i, j);
                if (s == -at_inf<T>()) continue;
                T p = at_exp(s - ls[rr]), z = at_drop<T>(a, b, i, j), dp = 0;
                const T *dor = dos + rr * Ev;
                for (int64_t e = 0; e < Ev; e++) dvr[e] += p * z * dor[e], dp += dor[e] * vr[e];
                T dsc = p * (dp * z - ds[rr]) * (T)a.scale;
                for (int64_t e = 0; e < E; e++) dkr[e] += dsc * qs[rr * E + e];
            }
        }
        if (live) {
            T *dk = (T *)a.dk + (b * a.S + j) * E, *dv = (T *)a.dv + (b * a.S + j) * Ev;
            for (int64_t e = 0; e < E; e++) dk[e] = dkr[e];
            for (int64_t e = 0; e < Ev; e++) dv[e] = dvr[e];
        }
        __syncthreads();
    }
}

/* dq of `tile` query rows per block */
template <typename T> __global__ void attn_bwd_q_kernel(wk_attn_args a, const T *dsum, int tile) {
    extern __shared__ unsigned char at_smem[];
    const int64_t E = a.E, Ev = a.Ev, tiles = wk_attn_cuda_tiles(a.L, tile);
    T *dqs = (T *)at_smem, *ks = dqs + tile * E, *vs = ks + tile * E;
    for (int64_t blk = blockIdx.x; blk < a.batch * tiles; blk += gridDim.x) {
        const int64_t b = blk / tiles, i0 = blk % tiles * tile, rows = a.L - i0 < tile ? a.L - i0 : tile;
        const int r = threadIdx.x;
        const int64_t i = i0 + r;
        const bool live = r < rows;
        const T *q = (const T *)a.q + wk_attn_offset(&a, a.q_bs, b, 0) + i * a.q_rs;
        const T *k = (const T *)a.k + wk_attn_offset(&a, a.k_bs, b, 1);
        const T *v = (const T *)a.v + wk_attn_offset(&a, a.v_bs, b, 1);
        const T *dor = (const T *)a.grad_out + (b * a.L + i) * Ev;
        const T lse = live ? ((const T *)a.lse)[b * a.L + i] : at_inf<T>(), di = live ? dsum[b * a.L + i] : 0;
        const char *mrow = live ? at_mask_row<T>(a, b, i) : NULL;
        T *dqr = dqs + r * E;
        for (int64_t e = 0; e < E; e++) dqr[e] = 0;
        const int64_t jend = wk_attn_key_end(&a, i0, rows);
        for (int64_t j0 = 0; j0 < jend; j0 += tile) {
            const int64_t cols = jend - j0 < tile ? jend - j0 : tile;
            __syncthreads();
            at_stage(ks, k + j0 * a.k_rs, a.k_rs, cols, E);
            at_stage(vs, v + j0 * a.v_rs, a.v_rs, cols, Ev);
            __syncthreads();
            if (!live || lse == at_inf<T>()) continue;
            for (int64_t c = 0; c < cols; c++) {
                T s = at_score<T>(a, q, ks + c * E, mrow, i, j0 + c);
                if (s == -at_inf<T>()) continue;
                T p = at_exp(s - lse), z = at_drop<T>(a, b, i, j0 + c), dp = 0;
                for (int64_t e = 0; e < Ev; e++) dp += dor[e] * vs[c * Ev + e];
                T dsc = p * (dp * z - di) * (T)a.scale;
                for (int64_t e = 0; e < E; e++) dqr[e] += dsc * ks[c * E + e];
            }
        }
        if (live) {
            T *dq = (T *)a.dq + (b * a.L + i) * E;
            for (int64_t e = 0; e < E; e++) dq[e] = dqr[e];
        }
        __syncthreads();
    }
}

unsigned grid_of(int64_t blocks) { return (unsigned)(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks); }

/* The plan and stream of a call; WICK_OK with *s == NULL when there is nothing to do. */
wick_status at_begin(const wk_attn_args *a, int64_t work, wk_attn_cuda_plan *p, cudaStream_t *s) {
    *s = NULL;
    if (a->dtype != WICK_FLOAT32 && a->dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_UNSUPPORTED, OP ": not implemented for %s on cuda", wick_dtype_name(a->dtype));
    if (!wk_attn_cuda_plan_make(a->E, a->Ev, wk_dtype_size(a->dtype), SMEM_LIMIT, p))
        return wick_fail(WICK_ERR_UNSUPPORTED, OP ": head dims E = %lld and Ev = %lld are too large for the CUDA kernel",
                         (long long)a->E, (long long)a->Ev);
    if (work == 0) return WICK_OK;
    return (*s = wk_cuda_enter(a->device, OP)) ? WICK_OK : WICK_ERR_DEVICE;
}

template <typename T> wick_status at_backward(const wk_attn_args *a, const wk_attn_cuda_plan &p, cudaStream_t s) {
    size_t nbytes = sizeof(T) * (size_t)(a->batch * a->L);
    T *d = nbytes ? (T *)wk_cuda_alloc_scratch(nbytes, a->device) : NULL;
    if (nbytes && !d) return wick_fail(WICK_ERR_OOM, OP ": out of memory (CUDA scratch of %zu bytes)", nbytes);
    wick_status st = WICK_OK;
    if (nbytes) attn_rowdot_kernel<T><<<wk_cuda_blocks(a->batch * a->L), WK_CUDA_THREADS, 0, s>>>(*a, d);
    if (!(st = wk_cuda_check_launch(OP, a->device)) && a->S > 0) {
        attn_bwd_kv_kernel<T><<<grid_of(a->batch * wk_attn_cuda_tiles(a->S, p.tile)), p.tile, p.smem_bwd_kv, s>>>(*a, d, p.tile);
        st = wk_cuda_check_launch(OP, a->device);
    }
    if (!st && a->L > 0) {
        attn_bwd_q_kernel<T><<<grid_of(a->batch * wk_attn_cuda_tiles(a->L, p.tile)), p.tile, p.smem_bwd_q, s>>>(*a, d, p.tile);
        st = wk_cuda_check_launch(OP, a->device);
    }
    if (d) wk_cuda_free_scratch(d, nbytes, a->device);
    return st;
}

} // namespace

extern "C" wick_status cuda_attention_forward(const struct wk_attn_args *a) {
    wk_attn_cuda_plan p;
    cudaStream_t s;
    wick_status st = at_begin(a, a->batch * a->L, &p, &s);
    if (st || !s) return st;
    unsigned grid = grid_of(a->batch * wk_attn_cuda_tiles(a->L, p.tile));
    if (a->dtype == WICK_FLOAT32) attn_fwd_kernel<float><<<grid, p.tile, p.smem_fwd, s>>>(*a, p.tile);
    else attn_fwd_kernel<double><<<grid, p.tile, p.smem_fwd, s>>>(*a, p.tile);
    return wk_cuda_check_launch(OP, a->device);
}

extern "C" wick_status cuda_attention_backward(const struct wk_attn_args *a) {
    wk_attn_cuda_plan p;
    cudaStream_t s;
    /* dq, dk and dv are overwritten: with nothing to walk they must still be zeros */
    int64_t work = a->batch * (a->L > a->S ? a->L : a->S);
    wick_status st = at_begin(a, work, &p, &s);
    if (st || !s) return st;
    size_t es = wk_dtype_size(a->dtype);
    if (a->S == 0 || a->L == 0) { /* no pairs: every gradient is zero */
        cudaError_t e = cudaMemsetAsync(a->dq, 0, es * (size_t)(a->batch * a->L * a->E), s);
        if (e == cudaSuccess) e = cudaMemsetAsync(a->dk, 0, es * (size_t)(a->batch * a->S * a->E), s);
        if (e == cudaSuccess) e = cudaMemsetAsync(a->dv, 0, es * (size_t)(a->batch * a->S * a->Ev), s);
        return wk_cuda_check(e, OP, a->device);
    }
    return a->dtype == WICK_FLOAT32 ? at_backward<float>(a, p, s) : at_backward<double>(a, p, s);
}
