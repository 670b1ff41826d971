/* Launch plan of the CUDA fused attention (cuda_attention.cu): plain C, tested
 * on the CPU by tests/test_attention_plan.c.
 *
 * Three kernels, each a block of `tile` threads, one thread per row:
 * - forward: a block takes `tile` query rows of one problem and walks the keys
 *   in tiles of `tile` rows of k and v staged in shared memory, with an online
 *   softmax per thread; its rows' accumulators live in shared memory too;
 * - backward dk/dv: a block owns `tile` keys (k, v and their gradients in
 *   shared memory) and walks the query rows in tiles (q, dO, lse, D staged);
 * - backward dq: a block owns `tile` query rows (their dq in shared memory)
 *   and walks the keys in tiles (k, v staged).
 * Shared memory per block is what bounds the tile: the largest power of two
 * up to WK_ATTN_CUDA_MAX_TILE whose three footprints fit the limit. */
#ifndef WICK_CUDA_ATTENTION_PLAN_H
#define WICK_CUDA_ATTENTION_PLAN_H

#include "../core/scalar_math.h" /* WK_HD */

#include <stddef.h>
#include <stdint.h>

#define WK_ATTN_CUDA_MAX_TILE 64

typedef struct wk_attn_cuda_plan {
    int tile;                                  /* threads per block = rows per tile */
    size_t smem_fwd, smem_bwd_kv, smem_bwd_q;  /* bytes of shared memory per block */
} wk_attn_cuda_plan;

/* Bytes of each kernel's shared memory for a tile of t rows (elem: bytes per element). */
static inline size_t wk_attn_cuda_smem_fwd(int64_t t, int64_t E, int64_t Ev, size_t elem) {
    return elem * (size_t)(t * Ev + t * (E + Ev));
}
static inline size_t wk_attn_cuda_smem_bwd_kv(int64_t t, int64_t E, int64_t Ev, size_t elem) {
    return elem * (size_t)(2 * t * (E + Ev) + t * (E + Ev) + 2 * t);
}
static inline size_t wk_attn_cuda_smem_bwd_q(int64_t t, int64_t E, int64_t Ev, size_t elem) {
    return elem * (size_t)(t * E + t * (E + Ev));
}

/* The plan for head dims E, Ev in elements of `elem` bytes under `limit` bytes
 * of shared memory per block; 0 when not even one row fits (head dims too large). */
static inline int wk_attn_cuda_plan_make(int64_t E, int64_t Ev, size_t elem, size_t limit, wk_attn_cuda_plan *p) {
    if (E < 0 || Ev < 0 || E > ((int64_t)1 << 30) || Ev > ((int64_t)1 << 30)) return 0;
    for (int t = WK_ATTN_CUDA_MAX_TILE; t >= 1; t /= 2) {
        size_t f = wk_attn_cuda_smem_fwd(t, E, Ev, elem), kv = wk_attn_cuda_smem_bwd_kv(t, E, Ev, elem);
        size_t q = wk_attn_cuda_smem_bwd_q(t, E, Ev, elem);
        if (f <= limit && kv <= limit && q <= limit) {
            p->tile = t, p->smem_fwd = f, p->smem_bwd_kv = kv, p->smem_bwd_q = q;
            return 1;
        }
    }
    return 0;
}

/* Blocks of a grid over `rows` rows in tiles of `tile` (at least one, so a launch is valid). */
WK_HD int64_t wk_attn_cuda_tiles(int64_t rows, int tile) { return rows > 0 ? (rows + tile - 1) / tile : 0; }

#endif
