/* bfloat16 matrix products on Intel AMX (Sapphire Rapids and later).
 *
 * Widened to float32, a bfloat16 product runs at sgemm speed; PyTorch (through
 * oneDNN) uses the AMX tile unit instead, ten times faster on the CPUs that
 * have it. This kernel does the same in the plainest form that keeps the unit
 * busy:
 *
 *   1. A is copied tile by tile (16 rows x 32 bfloat16), padded with zeros to
 *      multiples of 32 rows and columns;
 *   2. B is copied tile by tile in the "VNNI" layout the unit reads: a tile
 *      row holds the pairs (B[2p][j], B[2p+1][j]) of 16 columns j;
 *   3. each 32 x 32 block of C lives in four 16 x 16 float32 tiles while the
 *      k loop feeds them two tiles of A and two of B per 32-wide step
 *      (TDPBF16PS: products of bfloat16 pairs accumulated in float32);
 *   4. alpha, beta and the rounding to bfloat16 happen once per block, as it
 *      leaves the tiles.
 *
 * Blocks of 32 rows are shared among the thread pool; each worker configures
 * its own tiles (tile state is per thread) and releases them.
 *
 * The unit is used only when the CPU reports AMX-TILE and AMX-BF16, and Linux
 * grants the process the tile state (arch_prctl ARCH_REQ_XCOMP_PERM, Linux
 * 5.16+); WICK_NO_AMX=1 turns it off, which is how the fallback is tested on
 * machines that have the unit. Under valgrind the CPUID it shows lacks AMX, so
 * the fallback runs there. */
#define _GNU_SOURCE /* syscall() */
#include "cpu.h"

#include <stdlib.h>

#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
#define WK_AMX_BUILD 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#ifdef WK_AMX_BUILD

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
#define BLOCK 32 /* rows and columns of C per block; k step per tile pair */

/* -1: not probed yet, 0: no, 1: yes */
static int amx_state = -1;

static bool probe_amx(void) {
    const char *off = getenv("WICK_NO_AMX");
    if (off && *off && *off != '0') return false;
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    bool tile = d & (1u << 24), bf16 = d & (1u << 22);
    if (!tile || !bf16) return false;
    /* the kernel must hand this process the 8 KiB of tile data state */
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

bool cpu_amx_bf16_usable(void) {
    int s = __atomic_load_n(&amx_state, __ATOMIC_ACQUIRE);
    if (s < 0) { /* a race probes twice, with the same answer */
        s = probe_amx() ? 1 : 0;
        __atomic_store_n(&amx_state, s, __ATOMIC_RELEASE);
    }
    return s == 1;
}

/* LDTILECFG's 64-byte operand (palette 1) */
typedef struct {
    uint8_t palette_id;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* Operands are packed tile by tile: a tile is 16 rows of 64 bytes, 1 KiB in
 * one piece, so each TILELOADD reads 16 consecutive cache lines and the k loop
 * walks memory straight ahead. */
#define TILE_ELEMS 512 /* bfloat16 per tile */

typedef struct {
    const wk_gemm_args *g;
    uint16_t *a; /* tile (r, kt): rows 16r.., columns 32kt.. of A */
    uint16_t *b; /* tile (c, kt): k pairs 16kt.., columns 16c.. of B */
    int64_t k_tiles, n_pad;
} amx_job;

static inline int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t blocks_of(int64_t v, int64_t step) { return (v + step - 1) / step; }
static int64_t round_up(int64_t v) { return blocks_of(v, BLOCK) * BLOCK; }

/* A finished 32 x 32 block of A @ B into C at (i0, j0): alpha * block + beta * C,
 * rounded to bfloat16, clipped to C's edges. */
static void store_block(const wk_gemm_args *g, const float *block, int64_t i0, int64_t j0) {
    const float alpha = (float)g->alpha, beta = (float)g->beta;
    const int64_t rows = min64(BLOCK, g->m - i0), cols = min64(BLOCK, g->n - j0);
    for (int64_t r = 0; r < rows; r++) {
        uint16_t *restrict out = (uint16_t *)g->c + (i0 + r) * g->ldc + j0;
        const float *restrict row = block + r * BLOCK;
        if (beta == 0)
            for (int64_t c = 0; c < cols; c++) out[c] = wk_float_to_bf16(alpha * row[c]);
        else
            for (int64_t c = 0; c < cols; c++) out[c] = wk_float_to_bf16(alpha * row[c] + beta * wk_bf16_to_float(out[c]));
    }
}

/* Blocks [begin, end) of 32 rows of C. Tiles 0-3: the four 16 x 16 float32
 * quarters of a C block; 4-5: two 16-row slices of A (32 bfloat16 each); 6-7:
 * two 16-column slices of B in pairs. Each finished block goes through a 4 KiB
 * buffer, still in L1, into C. */
__attribute__((target("amx-tile,amx-bf16"))) static void amx_rows(void *ctx, int64_t begin, int64_t end) {
    const amx_job *j = ctx;
    tile_config cfg = {0};
    cfg.palette_id = 1;
    for (int t = 0; t < 8; t++) cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
    const int64_t kt_n = j->k_tiles;
    float block[BLOCK * BLOCK];
    for (int64_t blk = begin; blk < end; blk++) {
        const uint16_t *a0 = j->a + (2 * blk) * kt_n * TILE_ELEMS, *a1 = a0 + kt_n * TILE_ELEMS;
        for (int64_t j0 = 0; j0 < j->n_pad; j0 += BLOCK) {
            const uint16_t *b0 = j->b + (j0 / 16) * kt_n * TILE_ELEMS, *b1 = b0 + kt_n * TILE_ELEMS;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (int64_t kt = 0; kt < kt_n; kt++) {
                _tile_loadd(4, a0 + kt * TILE_ELEMS, 64);
                _tile_loadd(5, a1 + kt * TILE_ELEMS, 64);
                _tile_loadd(6, b0 + kt * TILE_ELEMS, 64);
                _tile_loadd(7, b1 + kt * TILE_ELEMS, 64);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            _tile_stored(0, block, BLOCK * 4);
            _tile_stored(1, block + 16, BLOCK * 4);
            _tile_stored(2, block + 16 * BLOCK, BLOCK * 4);
            _tile_stored(3, block + 16 * BLOCK + 16, BLOCK * 4);
            store_block(j->g, block, blk * BLOCK, j0);
        }
    }
    _tile_release();
}

/* Where element (row, col) of an operand goes in its tiles: A tiles hold 16
 * rows of 32 k values, B tiles 16 k pairs of 16 columns. */
static inline int64_t a_slot(int64_t i, int64_t p, int64_t kt_n) {
    return ((i / 16) * kt_n + p / 32) * TILE_ELEMS + (i % 16) * 32 + p % 32;
}
static inline int64_t b_slot(int64_t p, int64_t col, int64_t kt_n) {
    return ((col / 16) * kt_n + p / 32) * TILE_ELEMS + ((p % 32) / 2) * 32 + (col % 16) * 2 + p % 2;
}

/* The packing loops go tile by tile and read the source along its rows, for
 * both layouts of each operand (plain and transposed: a backward pass meets
 * both). Each step of the outer loop fills tiles of its own, so the steps are
 * shared among threads. The padding stays zero (memset by the caller). */
static void pack_a(void *ctx, int64_t begin, int64_t end) {
    const amx_job *j = ctx;
    const wk_gemm_args *g = j->g;
    const uint16_t *src = (const uint16_t *)g->a;
    /* the outer loop runs along the source's rows, the inner one across them */
    const int64_t inner = g->trans_a ? g->m : g->k;
    const int64_t outer_step = g->trans_a ? 32 : 16, inner_step = g->trans_a ? 16 : 32;
    for (int64_t o = begin * outer_step; o < end * outer_step; o += outer_step)
        for (int64_t in = 0; in < inner; in += inner_step) {
            const int64_t i0 = g->trans_a ? in : o, p0 = g->trans_a ? o : in;
            uint16_t *tile = j->a + a_slot(i0, p0, j->k_tiles);
            const int64_t rows = min64(16, g->m - i0), cols = min64(32, g->k - p0);
            if (!g->trans_a)
                for (int64_t r = 0; r < rows; r++)
                    memcpy(tile + r * 32, src + (i0 + r) * g->lda + p0, (size_t)cols * 2);
            else /* A[i][p] = src[p * lda + i] */
                for (int64_t c = 0; c < cols; c++) {
                    const uint16_t *s = src + (p0 + c) * g->lda + i0;
                    for (int64_t r = 0; r < rows; r++) tile[r * 32 + c] = s[r];
                }
        }
}

static void pack_b(void *ctx, int64_t begin, int64_t end) {
    const amx_job *j = ctx;
    const wk_gemm_args *g = j->g;
    const uint16_t *src = (const uint16_t *)g->b;
    const int64_t inner = g->trans_b ? g->k : g->n;
    const int64_t outer_step = g->trans_b ? 16 : 32, inner_step = g->trans_b ? 32 : 16;
    for (int64_t o = begin * outer_step; o < end * outer_step; o += outer_step)
        for (int64_t in = 0; in < inner; in += inner_step) {
            const int64_t c0 = g->trans_b ? o : in, p0 = g->trans_b ? in : o;
            /* a tile row holds 16 pairs (B[p][j], B[p + 1][j]), p even: one
             * 32-bit word per column, the even row in the low half */
            uint32_t *tile = (uint32_t *)(j->b + b_slot(p0, c0, j->k_tiles));
            const int64_t cols = min64(16, g->n - c0), depth = min64(32, g->k - p0);
            if (!g->trans_b)
                for (int64_t p = 0; p < depth; p += 2) {
                    const uint16_t *even = src + (p0 + p) * g->ldb + c0, *odd = even + g->ldb;
                    uint32_t *d = tile + (p / 2) * 16;
                    if (p + 1 < depth)
                        for (int64_t c = 0; c < cols; c++) d[c] = even[c] | (uint32_t)odd[c] << 16;
                    else /* an odd k: the last pair's second half is padding */
                        for (int64_t c = 0; c < cols; c++) d[c] = even[c];
                }
            else /* B[p][j] = src[j * ldb + p]: a column of B is a row of src, its pairs adjacent */
                for (int64_t c = 0; c < cols; c++) {
                    const uint16_t *s = src + (c0 + c) * g->ldb + p0;
                    for (int64_t p = 0; p < depth; p += 2)
                        tile[(p / 2) * 16 + c] = s[p] | (p + 1 < depth ? (uint32_t)s[p + 1] << 16 : 0);
                }
        }
}


/* Steps per thread for loops that copy `elems` elements a step: at least 32 Ki
 * elements, or a thread's wake-up costs more than its share saves. */
static int64_t copy_grain(int64_t elems) { return elems >= 32768 ? 1 : 32768 / (elems > 0 ? elems : 1); }

wick_status cpu_amx_bf16_gemm(const wk_gemm_args *g) {
    const int64_t m = g->m, n = g->n, k = g->k;
    const int64_t m_pad = round_up(m), n_pad = round_up(n), k_pad = round_up(k > 0 ? k : 1);
    const size_t a_bytes = (size_t)(m_pad * k_pad) * 2, b_bytes = (size_t)(k_pad * n_pad) * 2;
    amx_job job = {g, wk_malloc(a_bytes), wk_malloc(b_bytes), k_pad / 32, n_pad};
    wick_status st = WICK_OK;
    if (!job.a || !job.b) {
        st = wick_fail(WICK_ERR_OOM, "mm: out of memory packing bfloat16 matrices (%lld x %lld x %lld)", (long long)m,
                       (long long)k, (long long)n);
        goto done;
    }
    if (m != m_pad || k != k_pad) memset(job.a, 0, a_bytes); /* the padding must add nothing */
    if (n != n_pad || k != k_pad) memset(job.b, 0, b_bytes);
    /* each step fails when an interrupt stopped it part way */
    if (g->trans_a) st = wk_parallel_for(blocks_of(k, 32), copy_grain(32 * m), pack_a, &job);
    else st = wk_parallel_for(blocks_of(m, 16), copy_grain(16 * k), pack_a, &job);
    if (st) goto done;
    if (g->trans_b) st = wk_parallel_for(blocks_of(n, 16), copy_grain(16 * k), pack_b, &job);
    else st = wk_parallel_for(blocks_of(k, 32), copy_grain(32 * n), pack_b, &job);
    if (st) goto done;
    st = wk_parallel_for(m_pad / BLOCK, 1, amx_rows, &job); /* a block is 64 n k flops: always worth a thread */
done:
    wk_free(job.a, a_bytes);
    wk_free(job.b, b_bytes);
    return st;
}

#else /* no AMX in this build */

bool cpu_amx_bf16_usable(void) { return false; }

wick_status cpu_amx_bf16_gemm(const wk_gemm_args *g) {
    (void)g;
    return wick_fail(WICK_ERR_UNSUPPORTED, "mm: this build has no AMX kernels");
}

#endif
