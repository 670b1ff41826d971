/* Fused scaled-dot-product attention: what the core (attention.c) gives the
 * backends' kernels (cpu_attention.c, cuda_attention.cu). Plain C, also read by
 * nvcc: the index math below runs on the CPU and on the GPU. */
#ifndef WICK_ATTENTION_H
#define WICK_ATTENTION_H

#include "scalar_math.h" /* WK_HD */
#include "wick.h"

#include <stdint.h>

enum { WK_ATTN_MASK_NONE = 0, WK_ATTN_MASK_BOOL = 1, WK_ATTN_MASK_FLOAT = 2 };

/* One call of the forward or backward kernel. q, k, v hold `dtype` (float32
 * or float64) with their last dim contiguous; the batch is the broadcast of
 * their leading dims (and the mask's), flattened to `batch` problems, each
 * q [L, E], k [S, E], v [S, Ev]. Problem b's operands start at
 * wk_attn_offset(a, <operand's batch strides>, b, kv) elements. */
typedef struct wk_attn_args {
    int device;
    wick_dtype dtype;
    int batch_ndim;
    int64_t batch_sizes[WICK_MAX_DIMS];
    int64_t q_bs[WICK_MAX_DIMS], k_bs[WICK_MAX_DIMS], v_bs[WICK_MAX_DIMS], m_bs[WICK_MAX_DIMS];
    /* grouped-query attention: k's and v's index along the last batch dim is
     * the query's divided by kv_group (1: no grouping) */
    int64_t kv_group;
    int64_t batch, L, S, E, Ev;
    int64_t q_rs, k_rs, v_rs; /* row strides (elements) */
    int mask_kind;            /* WK_ATTN_MASK_*: bool (true takes part) or added floats in dtype */
    int64_t m_rs, m_cs;       /* the mask's row and column strides */
    int causal;               /* key j takes part in query i's row iff j <= i (top-left aligned) */
    double scale, dropout_p;
    /* dropout: element (b, i, j) is kept iff wk_uniform(seed, offset + (b L + i) S + j) >= dropout_p */
    uint64_t seed, offset;
    const char *q, *k, *v, *mask;
    char *out; /* forward: contiguous [batch, L, Ev] */
    char *lse; /* forward writes, backward reads: contiguous [batch, L], log-sum-exp of each
                  row's scaled scores (+inf for a row with no key taking part) */
    /* backward: grad_out and out contiguous [batch, L, Ev]; dq [batch, L, E],
     * dk [batch, S, E], dv [batch, S, Ev] contiguous, one slice per problem
     * (the core sums broadcast and grouped ones), overwritten */
    const char *grad_out, *fwd_out;
    char *dq, *dk, *dv;
} wk_attn_args;

/* Element offset of problem b's first element for an operand with batch
 * strides `bs`; kv: the operand is k or v (grouped-query indexing). */
WK_HD int64_t wk_attn_offset(const wk_attn_args *a, const int64_t *bs, int64_t b, int kv) {
    int64_t off = 0;
    for (int d = a->batch_ndim - 1; d >= 0; d--) {
        int64_t n = a->batch_sizes[d], i = b % n;
        b /= n;
        if (kv && d == a->batch_ndim - 1) i /= a->kv_group;
        off += i * bs[d];
    }
    return off;
}

/* The dropout counter of element (b, i, j). */
WK_HD uint64_t wk_attn_counter(const wk_attn_args *a, int64_t b, int64_t i, int64_t j) {
    return a->offset + ((uint64_t)b * (uint64_t)a->L + (uint64_t)i) * (uint64_t)a->S + (uint64_t)j;
}

/* Keys that can take part in rows [i0, i0 + rows): all S, or up to the last row's diagonal. */
WK_HD int64_t wk_attn_key_end(const wk_attn_args *a, int64_t i0, int64_t rows) {
    if (!a->causal) return a->S;
    return i0 + rows < a->S ? i0 + rows : a->S;
}

#endif
