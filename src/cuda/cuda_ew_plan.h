/* How a GPU elementwise kernel finds its operands' elements: the plan chosen
 * on the host from a wk_iter, and the index math of each plan.
 *
 * Plain C, shared by src/cuda/cuda_elementwise.cu (which compiles the offset
 * functions for the device too) and tests/test_ew_plan.c (which runs them on
 * the CPU against a reference walk, so the arithmetic is proven without a GPU).
 *
 * Kinds (after wk_iter_init's coalescing):
 *   CONTIGUOUS  one dim, every operand stride 1 or 0 (a broadcast scalar):
 *               offset = i or 0
 *   LINEAR      one dim, any strides: offset = i * stride
 *   TWO_D       two dims [rows, cols] (a row broadcast [B, C] op [C], a column
 *               broadcast [B, C] op [B, 1], a transposed operand, an outer
 *               product [B, 1] op [C]): one 32-bit division gives (row, col),
 *               offset = row * s0 + col * s1; only with 32-bit indices
 *   GENERAL     any dims: one division per dim
 * index32: the element count and every operand's largest offset fit 31 bits,
 * so TWO_D and GENERAL divide and multiply in 32 bits; otherwise 64. */
#ifndef WICK_EW_PLAN_H
#define WICK_EW_PLAN_H

#include "../core/internal.h"

#include <stdint.h>

#ifdef __CUDACC__
#define WK_EW_FN static __host__ __device__ __forceinline__
#else
#define WK_EW_FN static inline
#endif

enum { WK_EW_CONTIGUOUS, WK_EW_LINEAR, WK_EW_TWO_D, WK_EW_GENERAL };

typedef struct wk_ew_plan {
    int kind;
    int index32;
} wk_ew_plan;

/* The largest element offset operand k reaches, or -1 when it is negative or
 * does not fit 31 bits (strides are >= 0 in wick; checked anyway). */
static inline int64_t wk_ew_max_offset31(const wk_iter *it, int k) {
    int64_t acc = 0;
    for (int d = 0; d < it->ndim; d++) {
        int64_t s = it->strides[k][d], n = it->sizes[d] - 1;
        if (s < 0) return -1;
        if (s == 0 || n <= 0) continue;
        if (n > (INT32_MAX - acc) / s) return -1;
        acc += n * s;
    }
    return acc;
}

static inline int wk_ew_fits32(const wk_iter *it) {
    if (it->numel > INT32_MAX) return 0;
    for (int k = 0; k < it->nops; k++)
        if (wk_ew_max_offset31(it, k) < 0) return 0;
    return 1;
}

/* The plan for an iterator (as wk_iter_init builds them: ndim >= 1). */
static inline wk_ew_plan wk_ew_plan_for(const wk_iter *it) {
    wk_ew_plan p = {WK_EW_GENERAL, wk_ew_fits32(it)};
    if (it->ndim == 1) {
        p.kind = WK_EW_CONTIGUOUS;
        for (int k = 0; k < it->nops; k++)
            if (it->strides[k][0] != 1 && it->strides[k][0] != 0) p.kind = WK_EW_LINEAR;
    } else if (it->ndim == 2 && p.index32) {
        p.kind = WK_EW_TWO_D;
    }
    return p;
}

/* Elements per 16-byte vector access in the contiguous plan: 16 / element size
 * when every operand has one element size, and each one with data has stride 1
 * and a 16-byte-aligned base (host values are splatted); else 1 (no vectors).
 * The vector kernel covers elements [0, numel / width * width) by vectors and
 * the rest one by one. */
static inline int wk_ew_vector_width(const wk_iter *it, wk_ew_plan p) {
    if (p.kind != WK_EW_CONTIGUOUS || it->numel < 2) return 1;
    size_t es = wk_dtype_size(it->dtypes[0]);
    if (es == 0 || es > 8) return 1;
    for (int k = 0; k < it->nops; k++) {
        if (wk_dtype_size(it->dtypes[k]) != es) return 1;
        if (it->host_values >> k & 1) continue;
        if (it->strides[k][0] != 1 || (uintptr_t)it->data[k] % 16 != 0) return 1;
    }
    return (int)(16 / es);
}

/* ---- the index math: element offsets of linear index i in operands 0..n-1 ---- */

WK_EW_FN void wk_ew_offsets_contiguous(const wk_iter *it, int n, int64_t i, int64_t *off) {
    for (int k = 0; k < n; k++) off[k] = it->strides[k][0] ? i : 0;
}

WK_EW_FN void wk_ew_offsets_linear(const wk_iter *it, int n, int64_t i, int64_t *off) {
    for (int k = 0; k < n; k++) off[k] = i * it->strides[k][0];
}

/* TWO_D: the plan guarantees every value below fits 31 bits */
WK_EW_FN void wk_ew_offsets_two_d(const wk_iter *it, int n, uint32_t i, int64_t *off) {
    uint32_t cols = (uint32_t)it->sizes[1], row = i / cols, col = i - row * cols;
    for (int k = 0; k < n; k++)
        off[k] = (int64_t)(row * (uint32_t)it->strides[k][0] + col * (uint32_t)it->strides[k][1]);
}

WK_EW_FN void wk_ew_offsets_general32(const wk_iter *it, int n, uint32_t i, int64_t *off) {
    uint32_t o[WK_MAX_OPERANDS] = {0, 0, 0, 0}, rest = i;
    for (int d = it->ndim - 1; d > 0; d--) {
        uint32_t size = (uint32_t)it->sizes[d], q = rest / size, idx = rest - q * size;
        rest = q;
        for (int k = 0; k < n; k++) o[k] += idx * (uint32_t)it->strides[k][d];
    }
    for (int k = 0; k < n; k++) off[k] = (int64_t)(o[k] + rest * (uint32_t)it->strides[k][0]);
}

WK_EW_FN void wk_ew_offsets_general64(const wk_iter *it, int n, int64_t i, int64_t *off) {
    for (int k = 0; k < n; k++) off[k] = 0;
    int64_t rest = i;
    for (int d = it->ndim - 1; d > 0; d--) {
        int64_t size = it->sizes[d], idx = rest % size;
        rest /= size;
        for (int k = 0; k < n; k++) off[k] += idx * it->strides[k][d];
    }
    for (int k = 0; k < n; k++) off[k] += rest * it->strides[k][0]; /* the outermost dim */
}

#endif
