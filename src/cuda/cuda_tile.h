/* Launch geometry and index math of the CUDA reductions (cuda_reduce.cu) and
 * softmax (cuda_softmax.cu), in plain C so that tests/test_cuda_tile.c runs
 * them on the CPU: the plan functions choose the kernel, block and grid sizes,
 * tile sizes and 32- or 64-bit index math from the shapes alone; the index
 * functions are the very ones the kernels call (__host__ __device__), and the
 * test loops over blockIdx/threadIdx with them to prove the arithmetic without
 * a GPU.
 *
 * Kernels (WK_TILE_THREADS threads a block; blocks loop over `units` with a
 * stride of gridDim.x):
 * - DIRECT: a group of `group` threads (1, 32 or 256) per output or softmax row;
 *   the last-dim path (a warp or a block per row) and short reduced dims.
 * - TILED: a strided reduced dim. A block covers tile_x adjacent outputs
 *   (threadIdx.x % tile_x, along the contiguous output dim, so a warp's loads
 *   are adjacent in memory) and splits the reduced dim over tile_y threads
 *   (threadIdx.x / tile_x): thread ty folds elements ty, ty + tile_y, ... in
 *   order, then the tile_y partials of each output meet in a fixed tree in
 *   shared memory (step s = tile_y/2 ... 1: partial ty takes in partial ty + s).
 * - SPLIT (reductions): few outputs over a long dim: `split` chunks of `chunk`
 *   elements per output, one block each, then a combining kernel. */
#ifndef WICK_CUDA_TILE_H
#define WICK_CUDA_TILE_H

#include <stdint.h>

#ifdef __CUDACC__
#define WK_TILE_FN static inline __host__ __device__
#else
#define WK_TILE_FN static inline
#endif

#define WK_TILE_THREADS 256
#define WK_TILE_MAX_BLOCKS ((int64_t)65535 * 32) /* the kernels loop over the rest */
/* 32-bit index math where every offset, count and index stays below this: 2^31
 * less room for a grid stride or a thread step added past the end. */
#define WK_INDEX32_LIMIT (((int64_t)1 << 31) - ((int64_t)1 << 22))

enum { WK_TILE_DIRECT, WK_TILE_TILED, WK_TILE_SPLIT };

typedef struct wk_tile_plan {
    int kind;
    int group;            /* DIRECT: threads per output (1, 32 or WK_TILE_THREADS) */
    int tile_x, tile_y;   /* TILED: tile_x * tile_y == WK_TILE_THREADS */
    int64_t split, chunk; /* SPLIT: chunks per output, elements per chunk */
    int64_t units;        /* what the blocks loop over: output groups, tiles, or outputs * split */
    unsigned blocks;      /* grid size: min(units, WK_TILE_MAX_BLOCKS), at least 1 */
    int index32;          /* every offset, count and index fits in int32 */
} wk_tile_plan;

WK_TILE_FN int64_t wk_tile_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

WK_TILE_FN unsigned wk_tile_blocks(int64_t units) {
    return (unsigned)(units < 1 ? 1 : units > WK_TILE_MAX_BLOCKS ? WK_TILE_MAX_BLOCKS : units);
}

/* tile_x: the smallest power of two >= count, at most 32 (a warp's width). */
WK_TILE_FN int wk_tile_width(int64_t count) {
    int x = 1;
    while (x < 32 && x < count) x *= 2;
    return x;
}

WK_TILE_FN void wk_tile_set_tiled(wk_tile_plan *p, int64_t along_x, int64_t groups) {
    p->kind = WK_TILE_TILED;
    p->tile_x = wk_tile_width(along_x);
    p->tile_y = WK_TILE_THREADS / p->tile_x;
    p->units = groups * wk_tile_ceil_div(along_x, p->tile_x);
}

/* A reduction of `outer` outputs over `n` elements `stride` apart. `span` is
 * one more than the largest |offset| (in elements) of the input, the output
 * and the indices (see wk_reduce_span in cuda_reduce.cu). */
WK_TILE_FN wk_tile_plan wk_reduce_plan(int64_t outer, int64_t n, int64_t stride, int64_t span) {
    wk_tile_plan p = {WK_TILE_DIRECT, 1, 1, 1, 1, 0, 0, 1, 0};
    if (stride != 1 && n > 8) {
        wk_tile_set_tiled(&p, outer, 1);
    } else if (n > 16) { /* contiguous rows: a warp or a block per row */
        p.group = n <= 1024 ? 32 : WK_TILE_THREADS;
    }
    if ((p.kind == WK_TILE_TILED || p.group == WK_TILE_THREADS) && outer > 0 && outer < 1024 && n >= 16384) {
        int64_t S = (n + 4095) / 4096, fill = (2048 + outer - 1) / outer;
        if (S > fill) S = fill;
        if (S >= 2) {
            p.kind = WK_TILE_SPLIT;
            p.group = WK_TILE_THREADS;
            p.tile_x = p.tile_y = 1;
            p.split = S;
            p.chunk = (n + S - 1) / S;
        }
    }
    if (p.kind == WK_TILE_DIRECT) p.units = wk_tile_ceil_div(outer, WK_TILE_THREADS / p.group);
    else if (p.kind == WK_TILE_SPLIT) p.units = outer * p.split;
    p.blocks = wk_tile_blocks(p.units);
    p.index32 = span < WK_INDEX32_LIMIT && outer < WK_INDEX32_LIMIT && n < WK_INDEX32_LIMIT &&
                p.units < WK_INDEX32_LIMIT;
    return p;
}

/* Softmax along a dim of d elements, inner apart, for outer * inner rows of a
 * contiguous tensor. inner == 1: the last-dim path (a thread, warp or block per
 * row); inner > 1 and d > 4: tiles of tile_x adjacent rows (adjacent in memory)
 * of one outer index, d split over tile_y threads. */
WK_TILE_FN wk_tile_plan wk_softmax_plan(int64_t outer, int64_t d, int64_t inner) {
    wk_tile_plan p = {WK_TILE_DIRECT, 1, 1, 1, 1, 0, 0, 1, 0};
    if (inner > 1 && d > 4) wk_tile_set_tiled(&p, inner, outer);
    else if (inner == 1) p.group = d <= 32 ? 1 : d <= 1024 ? 32 : WK_TILE_THREADS;
    if (p.kind == WK_TILE_DIRECT) p.units = wk_tile_ceil_div(outer * inner, WK_TILE_THREADS / p.group);
    p.blocks = wk_tile_blocks(p.units);
    p.index32 = outer * d * inner < WK_INDEX32_LIMIT && p.units < WK_INDEX32_LIMIT;
    return p;
}

/* ---- index functions (the kernels' own; IDX is int64_t, or int32_t under index32) ---- */

/* The output that thread tx of tile `tile` covers (TILED reductions). */
WK_TILE_FN int64_t wk_red_tile_output(int64_t tile, int tx, int tile_x) { return tile * tile_x + tx; }

/* Where output o's input, output and index elements are: the CPU's outer walk
 * (cpu_reduce.c) over the kept dims, last dim fastest. */
#define WK_RED_LOCATE(NAME, IDX)                                                                                 \
    WK_TILE_FN void NAME(IDX o, int ndim, const int64_t *sizes, const int64_t *in_st, const int64_t *out_st,       \
                         const int64_t *idx_st, IDX *in, IDX *out, IDX *idx) {                                   \
        IDX rest = o, pi = 0, po = 0, px = 0;                                                                    \
        for (int d = ndim - 1; d >= 0; d--) {                                                                    \
            IDX size = (IDX)sizes[d], i = rest % size;                                                           \
            rest /= size;                                                                                        \
            pi += i * (IDX)in_st[d];                                                                             \
            po += i * (IDX)out_st[d];                                                                            \
            px += i * (IDX)idx_st[d];                                                                            \
        }                                                                                                        \
        *in = pi;                                                                                                \
        *out = po;                                                                                               \
        *idx = px;                                                                                               \
    }
WK_RED_LOCATE(wk_red_locate64, int64_t)
WK_RED_LOCATE(wk_red_locate32, int32_t)
#undef WK_RED_LOCATE

/* TILED softmax: thread tx of tile `tile` has the row at offset *base (its
 * elements at *base + k * inner, k < d); false when the tile's last rows run
 * past inner (the thread still joins the block's syncs). */
#define WK_SM_TILE_ROW(NAME, IDX)                                                                                \
    WK_TILE_FN int NAME(IDX tile, int tx, int tile_x, IDX d, IDX inner, IDX *base) {                             \
        IDX per = (inner + tile_x - 1) / tile_x, o = tile / per, i = tile % per * tile_x + tx;                   \
        *base = o * d * inner + i;                                                                               \
        return i < inner;                                                                                        \
    }
WK_SM_TILE_ROW(wk_sm_tile_row64, int64_t)
WK_SM_TILE_ROW(wk_sm_tile_row32, int32_t)
#undef WK_SM_TILE_ROW

/* DIRECT softmax: row r (of outer * inner) starts at offset *base. */
WK_TILE_FN int64_t wk_sm_row_base(int64_t row, int64_t d, int64_t inner) {
    return row / inner * d * inner + row % inner;
}

#endif
