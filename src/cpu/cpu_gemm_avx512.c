/* float32 and bfloat16 matrix products on AVX-512, and the 16-bit <-> float32
 * conversions of cpu_gemm.c's widening products.
 *
 * float32 (cpu_gemm.c sends the shapes where C has few rows or columns) runs
 * the FMA micro-kernel below with nothing packed ahead: A is read in place
 * (six row pointers, or six adjacent columns of a transposed A), each k block
 * of a B panel is copied into 32 KiB on the stack as it is needed (a
 * transposed B by 16 x 16 transposes in registers; a plain one read in place
 * under a few panels of A), and C takes the sums of each k block. A panel's
 * last 16, 32 or 48 columns take a kernel of that width (a Linear to 10
 * classes used a quarter of the 64-column one). It is used where 512-bit FMAs
 * do twice the work of 256-bit ones (the test that picks BLIS's 'skx');
 * WICK_NO_AVX512_F32=1 leaves float32 to BLIS.
 *
 * bfloat16 may run the "dot" micro-kernel: VDPBF16PS (AVX512-BF16: Intel
 * Cooper Lake and Sapphire Rapids, AMD Zen 4 and later) multiplies 16 pairs of
 * bfloat16 by 16 pairs and adds each pair's two products to one float32 lane:
 * 64 flops an instruction against the float32 FMA's 32. But on the Xeon
 * (Sapphire Rapids class) this was written on, VDPBF16PS issues at half the
 * rate of VFMADD231PS (84 against 170 GFLOP/s peak), so there the float32
 * product of the operands widened once is as fast; on Zen 4 the dot kernel
 * is. The first bfloat16 product times both instructions in registers for a
 * few microseconds and keeps the faster (WICK_BF16_KERNEL=dot|fma forces one).
 * float16 always widens (AVX-512 has no float16 dot product into float32).
 *
 * The dot kernel is the classic packed GEMM:
 *   1. A is copied into panels of MR rows: for each step of k, MR pairs
 *      (A[i][2p], A[i][2p + 1]), the even k in the low half;
 *   2. B into panels of NR = 64 columns the same way: for each step, 64 pairs
 *      (B[2p][j], B[2p + 1][j]): the "VNNI" layout; both padded with zeros to
 *      whole panels (and an even k);
 *   3. an MR x NR block of C lives in 24 zmm accumulators; each step loads
 *      four vectors of B, broadcasts one pair of A per row, issues 24 VDPBF16PS;
 *   4. k is cut in blocks of KC steps so that a B panel's block (32 KiB) stays
 *      in L1 while the MC rows of A pass by; between blocks the float32 sums
 *      wait in a per-block buffer; after the last, alpha and beta are applied
 *      and C rounded once (nearest even, like wk_float_to_bf16).
 *
 * Blocks of C are shared among the thread pool. The instructions are selected
 * per function (target attributes), so the rest of the build stays portable;
 * the CPU is probed once (AVX512F/BW/VL, F16C and the OS saving the zmm state;
 * for "dot" CPUID leaf 7 subleaf 1, EAX bit 5: AVX512_BF16).
 * WICK_NO_AVX512_16BIT=1 turns the dot kernel and the vector conversions off
 * (how the scalar fallback is tested on CPUs that have them); valgrind's CPUID
 * has no AVX-512, so the fallback runs there too.
 *
 * cpu_avx512_fma_doubles, for the choice of BLIS's kernels (cpu_backend.c),
 * times 512-bit FMAs against 256-bit ones with the same probes. */
#include "cpu.h"

#include <stdlib.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define WK_A512_BUILD 1
#include <cpuid.h>
#include <immintrin.h>
#endif

#ifdef WK_A512_BUILD

#define WK_A512 __attribute__((target("avx512f,avx512bw,avx512vl,f16c")))
#define WK_A512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

#define MR 6          /* rows of C per micro-kernel */
#define NV 4          /* zmm vectors of 16 columns per micro-kernel */
#define NR (16 * NV)  /* columns of C per micro-kernel (a multiple of 32: pack_b_plain) */
#define KC 128        /* k steps per block: NR x KC words of B = 32 KiB */
#define MC (16 * MR)  /* rows of C per block */
#define NC (4 * NR)   /* columns of C per block */

enum { KERNEL_NONE, KERNEL_FMA, KERNEL_DOT };

/* ---- probing ---- */

static bool env_set(const char *name) {
    const char *v = getenv(name);
    return v && *v && *v != '0';
}

/* AVX512F, BW and VL, F16C, and the OS saving SSE, AVX, opmask and zmm state (XCR0) */
static bool have_avx512(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(1, 0, &a, &b, &c, &d) || !(c & (1u << 27)) || !(c & (1u << 29))) return false; /* OSXSAVE, F16C */
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    if (!(b & (1u << 16)) || !(b & (1u << 30)) || !(b & (1u << 31))) return false;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xe6) == 0xe6;
}

static bool have_avx512_bf16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || a < 1) return false; /* a: the last subleaf */
    return __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5));
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Seconds for `n` rounds of 24 independent VDPBF16PS (64 flops each) or
 * VFMADD231PS (32 flops each) in registers: the instructions' issue rate. */
#define PEAK_LOOP(OP)                                                                             \
    __m512 acc[24];                                                                               \
    for (int i = 0; i < 24; i++) acc[i] = _mm512_setzero_ps();                                    \
    const double t0 = seconds();                                                                  \
    for (int64_t i = 0; i < n; i++) {                                                             \
        _Pragma("GCC unroll 24") for (int j = 0; j < 24; j++) acc[j] = OP;                        \
        __asm__ volatile("" : "+v"(x));                                                           \
    }                                                                                             \
    const double t = seconds() - t0;                                                              \
    for (int i = 1; i < 24; i++) acc[0] = _mm512_add_ps(acc[0], acc[i]);                          \
    volatile float sink = _mm512_reduce_add_ps(acc[0]);                                           \
    (void)sink;                                                                                   \
    return t;
WK_A512_BF16 static double time_dot(int64_t n) {
    __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80), y = x;
    PEAK_LOOP(_mm512_dpbf16_ps(acc[j], x, y))
}
WK_A512 static double time_fma(int64_t n) {
    __m512 x = _mm512_set1_ps(1e-3f), y = _mm512_set1_ps(1.0f);
    PEAK_LOOP(_mm512_fmadd_ps(x, y, acc[j]))
}

/* Seconds for `n` rounds of 24 independent 256-bit FMAs (16 flops each). */
__attribute__((target("avx2,fma"))) static double time_fma256(int64_t n) {
    __m256 x = _mm256_set1_ps(1e-3f), y = _mm256_set1_ps(1.0f), acc[24];
    for (int i = 0; i < 24; i++) acc[i] = _mm256_setzero_ps();
    const double t0 = seconds();
    for (int64_t i = 0; i < n; i++) {
        _Pragma("GCC unroll 24") for (int j = 0; j < 24; j++) acc[j] = _mm256_fmadd_ps(x, y, acc[j]);
        __asm__ volatile("" : "+v"(x));
    }
    const double t = seconds() - t0;
    for (int i = 1; i < 24; i++) acc[0] = _mm256_add_ps(acc[0], acc[i]);
    volatile float sink = _mm256_cvtss_f32(acc[0]);
    (void)sink;
    return t;
}

/* Rounds of 24 FMAs per timing: about 30 us at 3 GHz. */
#define PROBE_ROUNDS 8192

/* 512-bit FMAs for some 0.2 ms, untimed: an Intel core runs them at a fraction
 * of their rate for the first microseconds, until it has switched its
 * frequency licence (timing straight away chose 'haswell' in 1 of 40 runs). */
static void warm_up_512(void) { (void)time_fma(8 * PROBE_ROUNDS); }

/* An AMD core before Zen 5 (family 19h and older: Zen 4) runs a 512-bit FMA as two 256-bit halves:
 * known from CPUID, not timed (on a loaded machine the timing flipped now and then, and with it the
 * kernels and the products' last bits from one process to the next) */
static bool amd_before_zen5(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541u || d != 0x69746e65u || c != 0x444d4163u)
        return false; /* not "AuthenticAMD" */
    if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
    unsigned family = (a >> 8) & 0xfu;
    if (family == 0xfu) family += (a >> 20) & 0xffu;
    return family < 0x1au;
}

static bool measure_fma_doubles(void) {
    if (!have_avx512() || amd_before_zen5()) return false;
    warm_up_512();
    double wide = 1e9, narrow = 1e9;
    for (int r = 0; r < 7; r++) { /* best of 7 alternating timings */
        double t = time_fma(PROBE_ROUNDS);
        wide = t < wide ? t : wide;
        t = time_fma256(PROBE_ROUNDS);
        narrow = t < narrow ? t : narrow;
    }
    return 32 / wide > 1.5 * (16 / narrow);
}

/* Measured once per process (BLIS's kernels and the float32 kernel follow the
 * same answer): -1 not yet, else 0 or 1. */
static int fma_doubles = -1;

bool cpu_avx512_fma_doubles(void) {
    int v = __atomic_load_n(&fma_doubles, __ATOMIC_ACQUIRE);
    if (v < 0) { /* two threads may both measure; the first answer stays */
        int expected = -1, got = measure_fma_doubles();
        __atomic_compare_exchange_n(&fma_doubles, &expected, got, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        v = __atomic_load_n(&fma_doubles, __ATOMIC_ACQUIRE);
    }
    return v;
}

/* The dot kernel when its instruction does more flops a second than the FMA
 * (best of 5 alternating timings after the warm-up: robust to a preemption). */
static bool dot_is_faster(void) {
    double dot = 1e9, fma = 1e9;
    warm_up_512();
    for (int r = 0; r < 5; r++) {
        double t = time_dot(PROBE_ROUNDS);
        dot = t < dot ? t : dot;
        t = time_fma(PROBE_ROUNDS);
        fma = t < fma ? t : fma;
    }
    return 64 / dot > 32 / fma;
}

static int probe(wick_dtype dtype) {
    if (dtype == WICK_FLOAT32) /* where BLIS's own 'skx' kernels would not run at full width, BLIS */
        return env_set("WICK_NO_AVX512_F32") || !cpu_avx512_fma_doubles() ? KERNEL_NONE : KERNEL_FMA;
    if (env_set("WICK_NO_AVX512_16BIT") || !have_avx512()) return KERNEL_NONE;
    if (dtype == WICK_FLOAT16) return KERNEL_FMA;
    if (!have_avx512_bf16()) return KERNEL_FMA;
    const char *force = getenv("WICK_BF16_KERNEL");
    if (force && !strcmp(force, "dot")) return KERNEL_DOT;
    if (force && !strcmp(force, "fma")) return KERNEL_FMA;
    return dot_is_faster() ? KERNEL_DOT : KERNEL_FMA;
}

/* per dtype (bfloat16, float16, float32): -1 not probed yet, else a KERNEL_ value */
static int kernel_state[3] = {-1, -1, -1};

static int kernel_for(wick_dtype dtype) {
    int *state = &kernel_state[dtype == WICK_FLOAT16 ? 1 : dtype == WICK_FLOAT32 ? 2 : 0];
    int s = __atomic_load_n(state, __ATOMIC_ACQUIRE);
    if (s < 0) { /* a race probes twice, with the same answer */
        s = probe(dtype);
        __atomic_store_n(state, s, __ATOMIC_RELEASE);
    }
    return s;
}

bool cpu_gemm_avx512_usable(wick_dtype dtype) {
    if (dtype == WICK_FLOAT32) return kernel_for(dtype) != KERNEL_NONE;
    return dtype == WICK_BFLOAT16 && kernel_for(dtype) == KERNEL_DOT; /* else the widening product (cpu_gemm.c) */
}

typedef struct {
    const wk_gemm_args *g;
    uint32_t *a;         /* panel ip, step p: a[(ip * steps + p) * MR + r] */
    uint32_t *b;         /* panel jp, step p: b[(jp * steps + p) * NR + c] */
    int64_t steps;       /* k pairs; at least 1 */
    int64_t ipb, jpb;    /* panels of A and of B per block of C */
    int64_t m_blocks, n_blocks;
} gemm_job;

static inline int64_t min64(int64_t x, int64_t y) { return x < y ? x : y; }
static inline int64_t ceil_div(int64_t v, int64_t step) { return (v + step - 1) / step; }

/* ---- packing: one panel a step; the padding (rows, columns, an odd k) is written as zeros ---- */

/* pairs of bfloat16 as they are */
static void pack_a_pairs(const gemm_job *j, uint32_t *dst, int64_t i0, int64_t rows) {
    const wk_gemm_args *g = j->g;
    const uint16_t *src = (const uint16_t *)g->a;
    const int64_t k = g->k;
    if (!g->trans_a) { /* A[i][p] = src[i * lda + p]: a pair is two adjacent halves */
        const uint16_t *s = src + i0 * g->lda;
        for (int64_t p = 0; p < k / 2; p++) /* the panel written straight ahead */
            for (int64_t r = 0; r < rows; r++) {
                uint32_t w;
                memcpy(&w, s + r * g->lda + 2 * p, 4);
                dst[p * MR + r] = w;
            }
        if (k & 1)
            for (int64_t r = 0; r < rows; r++) dst[(k / 2) * MR + r] = s[r * g->lda + k - 1];
    } else { /* A[i][p] = src[p * lda + i]: a pair comes from two rows of src */
        for (int64_t p = 0; p < k / 2; p++) {
            const uint16_t *even = src + 2 * p * g->lda + i0, *odd = even + g->lda;
            for (int64_t r = 0; r < rows; r++) dst[p * MR + r] = even[r] | (uint32_t)odd[r] << 16;
        }
        if (k & 1) {
            const uint16_t *last = src + (k - 1) * g->lda + i0;
            for (int64_t r = 0; r < rows; r++) dst[(k / 2) * MR + r] = last[r];
        }
    }
}

WK_A512 static void pack_a(void *ctx, int64_t begin, int64_t end) {
    const gemm_job *j = ctx;
    for (int64_t ip = begin; ip < end; ip++) {
        uint32_t *dst = j->a + ip * j->steps * MR;
        const int64_t i0 = ip * MR, rows = min64(MR, j->g->m - i0);
        if (rows < MR) memset(dst, 0, (size_t)(j->steps * MR) * 4);
        pack_a_pairs(j, dst, i0, rows);
    }
}

/* Plain B (B[p][c] = src[p * ldb + c]), 32 columns a step in registers: two
 * rows of src interleaved. */
WK_A512 static void pack_b_plain(const gemm_job *j, uint32_t *dst, const uint16_t *src, int64_t cols) {
    const int64_t ldb = j->g->ldb, k = j->g->k;
    const __m512i lo_idx = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8, 39, 7, 38,
                                            6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
    const __m512i hi_idx = _mm512_add_epi16(lo_idx, _mm512_set1_epi16(16));
    for (int64_t p = 0; p < j->steps; p++) {
        uint32_t *d = dst + p * NR;
        for (int64_t c0 = 0; c0 < NR; c0 += 32) {
            const int64_t n = cols - c0;
            const __mmask32 m = n >= 32 ? 0xffffffffu : n <= 0 ? 0 : (1u << n) - 1;
            const uint16_t *even = src + 2 * p * ldb + c0;
            const __m512i e = _mm512_maskz_loadu_epi16(m, even);
            const __m512i o = 2 * p + 1 < k ? _mm512_maskz_loadu_epi16(m, even + ldb) : _mm512_setzero_si512();
            _mm512_storeu_si512(d + c0, _mm512_permutex2var_epi16(e, lo_idx, o));
            _mm512_storeu_si512(d + c0 + 16, _mm512_permutex2var_epi16(e, hi_idx, o));
        }
    }
}

/* Sixteen rows of 16 floats transposed in registers: four stages of shuffles,
 * 64 for 256 elements (half the 8 x 8 AVX transpose's count per element). */
WK_A512 static inline void transpose_16x16(__m512 r[16]) {
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 16; i += 2) { /* per 128-bit lane: pairs of rows interleaved */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 16; i += 4) { /* lane l of r[i + c]: column 4 l + c of rows i..i + 3 */
        const __m512d t0 = _mm512_castps_pd(t[i]), t1 = _mm512_castps_pd(t[i + 1]);
        const __m512d t2 = _mm512_castps_pd(t[i + 2]), t3 = _mm512_castps_pd(t[i + 3]);
        r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(t0, t2));
        r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(t0, t2));
        r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(t1, t3));
        r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(t1, t3));
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) { /* lanes 0 and 2 (0x88), 1 and 3 (0xdd) of rows 0-7 and of rows 8-15 */
        t[c] = _mm512_shuffle_f32x4(r[c], r[c + 4], 0x88);
        t[c + 4] = _mm512_shuffle_f32x4(r[c], r[c + 4], 0xdd);
        t[c + 8] = _mm512_shuffle_f32x4(r[c + 8], r[c + 12], 0x88);
        t[c + 12] = _mm512_shuffle_f32x4(r[c + 8], r[c + 12], 0xdd);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; c++) { /* r[c]: column c of all sixteen rows */
        r[c] = _mm512_shuffle_f32x4(t[c], t[c + 8], 0x88);
        r[c + 4] = _mm512_shuffle_f32x4(t[c + 4], t[c + 12], 0x88);
        r[c + 8] = _mm512_shuffle_f32x4(t[c], t[c + 8], 0xdd);
        r[c + 12] = _mm512_shuffle_f32x4(t[c + 4], t[c + 12], 0xdd);
    }
}

/* dst[p * NR + j] = src[j * ld + p] for j < cols, p < len: whole 16 x 16
 * blocks in registers, the edges one by one. */
WK_A512 static void pack_transposed_f32(float *dst, const float *src, int64_t cols, int64_t len, int64_t ld) {
    const int64_t c16 = cols & ~(int64_t)15, l16 = len & ~(int64_t)15;
    for (int64_t j0 = 0; j0 < c16; j0 += 16)
        for (int64_t p0 = 0; p0 < l16; p0 += 16) {
            __m512 r[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + (j0 + i) * ld + p0);
            transpose_16x16(r);
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++) _mm512_storeu_ps(dst + (p0 + i) * NR + j0, r[i]);
        }
    for (int64_t j = 0; j < cols; j++)
        for (int64_t p = j < c16 ? l16 : 0; p < len; p++) dst[p * NR + j] = src[j * ld + p];
}

/* float32: rows [p0, p0 + len) of B's panel at column c0 (cols of them
 * real, the rest zeros), copied as they are: plain B row by row, 16 columns a
 * vector; a transposed B (a row of src is a column of B) by 16 x 16
 * transposes (with the 128 rows of a batch, packing x @ W^T's W took a tenth
 * of the product; these pack it about a quarter faster than the 8 x 8 AVX
 * transposes of cpu_untranspose_f32). */
WK_A512 static void pack_b_f32(const wk_gemm_args *g, float *dst, int64_t c0, int64_t cols, int64_t p0, int64_t len) {
    const float *src = (const float *)g->b;
    if (g->trans_b) {
        if (cols < NR) memset(dst, 0, (size_t)(len * NR) * 4);
        pack_transposed_f32(dst, src + c0 * g->ldb + p0, cols, len, g->ldb);
        return;
    }
    for (int64_t p = 0; p < len; p++) {
        const float *s = src + (p0 + p) * g->ldb + c0;
        for (int64_t v = 0; v < NR; v += 16) {
            const int64_t n = cols - v;
            const __mmask16 m = n >= 16 ? 0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
            _mm512_storeu_ps(dst + p * NR + v, _mm512_maskz_loadu_ps(m, s + v));
        }
    }
}

WK_A512 static void pack_b(void *ctx, int64_t begin, int64_t end) {
    const gemm_job *j = ctx;
    const wk_gemm_args *g = j->g;
    const uint16_t *src = (const uint16_t *)g->b;
    const int64_t k = g->k;
    for (int64_t jp = begin; jp < end; jp++) {
        uint32_t *dst = j->b + jp * j->steps * NR;
        const int64_t c0 = jp * NR, cols = min64(NR, g->n - c0);
        if (!g->trans_b) {
            pack_b_plain(j, dst, src + c0, cols);
            continue;
        }
        /* B[p][c] = src[c * ldb + p]: a column of B is a row of src, its pairs
         * adjacent. 16 columns at a time, so that each step of k writes one
         * cache line of the panel while 16 lines of src stay in L1. */
        if (cols < NR) memset(dst, 0, (size_t)(j->steps * NR) * 4);
        for (int64_t cb = 0; cb < cols; cb += 16) {
            const int64_t ce = min64(cb + 16, cols);
            const uint16_t *s = src + (c0 + cb) * g->ldb;
            for (int64_t p = 0; p < k / 2; p++)
                for (int64_t c = cb; c < ce; c++) {
                    uint32_t w;
                    memcpy(&w, s + (c - cb) * g->ldb + 2 * p, 4);
                    dst[p * NR + c] = w;
                }
            if (k & 1)
                for (int64_t c = cb; c < ce; c++) dst[(k / 2) * NR + c] = s[(c - cb) * g->ldb + k - 1];
        }
    }
}

/* ---- the micro-kernels ---- */

/* float32 to bfloat16, nearest even, NaN kept quiet: wk_float_to_bf16 in 16 lanes. */
WK_A512 static inline __m256i round_bf16(__m512 x) {
    const __m512i xi = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(xi, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(xi, _mm512_set1_epi32(0x7fff)), lsb), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(xi, _mm512_set1_epi32(0x7fffffff)),
                                                 _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(xi, 16), _mm512_set1_epi32(0x40));
    return _mm512_cvtepi32_epi16(r);
}

typedef struct {
    int first, last;     /* the first k block (sums start at 0), the last (C is written) */
    float *part;         /* bfloat16 C: the float32 sums between k blocks, NR floats a row;
                            NULL for float32 C, which each k block adds to */
    void *c;             /* C at this block's corner */
    int64_t ldc, rows, cols;
    float alpha, beta;
} tile_out;

/* A row of float32 C (up to 16 nv columns) = alpha * acc + beta * C in the
 * first k block, C + alpha * acc in the others. */
WK_A512 static inline __attribute__((always_inline)) void store_row_f32(float *c, const __m512 *acc, int nv,
                                                                       const tile_out *o) {
    const float beta = o->first ? o->beta : 1;
    for (int v = 0; v < nv; v++) {
        const int64_t n = o->cols - 16 * v;
        if (n <= 0) return;
        const __mmask16 m = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
        __m512 x = o->alpha == 1 ? acc[v] : _mm512_mul_ps(acc[v], _mm512_set1_ps(o->alpha));
        if (beta == 1) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, c + 16 * v));
        else if (beta != 0) x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, c + 16 * v), _mm512_set1_ps(beta), x);
        _mm512_mask_storeu_ps(c + 16 * v, m, x);
    }
}

/* A row of bfloat16 C (up to NR columns) = alpha * acc + beta * C, rounded once. */
WK_A512 static inline void store_row(uint16_t *c, const __m512 *acc, const tile_out *o) {
    for (int v = 0; v < NV; v++) {
        const int64_t n = o->cols - 16 * v;
        if (n <= 0) return;
        const __mmask16 m = n >= 16 ? 0xffff : (__mmask16)((1u << n) - 1);
        __m512 x = o->alpha == 1 ? acc[v] : _mm512_mul_ps(acc[v], _mm512_set1_ps(o->alpha));
        if (o->beta != 0) {
            __m256i h = _mm256_maskz_loadu_epi16(m, c + 16 * v);
            __m512 old = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
            x = _mm512_add_ps(x, _mm512_mul_ps(old, _mm512_set1_ps(o->beta)));
        }
        _mm256_mask_storeu_epi16(c + 16 * v, m, round_bf16(x));
    }
}

/* The sums in and out of a block: from 0 or the buffer; to the buffer or C.
 * Constant indices everywhere, so that the sums stay in registers. */
#define KERNEL_LOAD                                                                               \
    __m512 acc[MR][NV];                                                                           \
    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                          \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                      \
            acc[r][v] = o->first ? _mm512_setzero_ps() : _mm512_loadu_ps(o->part + r * NR + 16 * v);
#define KERNEL_STORE                                                                              \
    if (!o->last) {                                                                               \
        _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++)                                      \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++)                                  \
                _mm512_storeu_ps(o->part + r * NR + 16 * v, acc[r][v]);                           \
        return;                                                                                   \
    }                                                                                             \
    _Pragma("GCC unroll 8") for (int r = 0; r < MR; r++) if (r < o->rows) store_row((uint16_t *)o->c + r * o->ldc, acc[r], o);

/* An MR x NR block of C over `steps` k pairs of the panels a and b. */
WK_A512_BF16 static void kernel_dot(const uint32_t *a, const uint32_t *b, int64_t steps, const tile_out *o) {
    KERNEL_LOAD
    for (int64_t p = 0; p < steps; p++) {
        __m512bh bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) bv[v] = (__m512bh)_mm512_loadu_si512(b + p * NR + 16 * v);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m512bh av = (__m512bh)_mm512_set1_epi32((int)a[p * MR + r]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
        }
    }
    KERNEL_STORE
}

/* float32: an MR x (16 nv) block of C over `steps` values of k, A and B read
 * where they are (A[r][p] at a[r * ars + p * aps]; B's row p at b + p * bs, a
 * packed panel or B itself); rows past o->rows repeat the last row and are not
 * stored. nv is a constant in each of the four kernels below (a panel's last
 * columns take the narrowest that covers them), so the sums stay in registers. */
WK_A512 static inline __attribute__((always_inline)) void kernel_f32_nv(const int nv, const float *a, int64_t ars,
                                                                       int64_t aps, const float *b, int64_t bs,
                                                                       int64_t steps, const tile_out *o) {
    __m512 acc[MR][NV];
    const float *ar[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        ar[r] = a + (r < o->rows ? r : o->rows - 1) * ars;
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) acc[r][v] = _mm512_setzero_ps();
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) /* C's tile on its way to L1 while the sums build */
        if (r < o->rows) {
            const char *c = (const char *)((float *)o->c + r * o->ldc);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) _mm_prefetch(c + 64 * v, _MM_HINT_T0);
        }
    for (int64_t p = 0, q = 0; p < steps; p++, q += aps, b += bs) {
        __m512 bv[NV];
#pragma GCC unroll 4
        for (int v = 0; v < nv; v++) bv[v] = _mm512_loadu_ps(b + 16 * v);
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m512 av = _mm512_set1_ps(ar[r][q]);
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
        }
    }
    const float beta = o->first ? o->beta : 1;
    if (o->rows == MR && o->cols == 16 * nv && o->alpha == 1 && (beta == 0 || beta == 1)) { /* no masks */
        float *c = (float *)o->c;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
            for (int v = 0; v < nv; v++) {
                float *cv = c + r * o->ldc + 16 * v;
                _mm512_storeu_ps(cv, beta == 0 ? acc[r][v] : _mm512_add_ps(acc[r][v], _mm512_loadu_ps(cv)));
            }
        return;
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
        if (r < o->rows) store_row_f32((float *)o->c + r * o->ldc, acc[r], nv, o);
}
#define KERNEL_F32(NVC)                                                                           \
    WK_A512 static void kernel_f32_##NVC(const float *a, int64_t ars, int64_t aps, const float *b, \
                                         int64_t bs, int64_t steps, const tile_out *o) {          \
        kernel_f32_nv(NVC, a, ars, aps, b, bs, steps, o);                                         \
    }
KERNEL_F32(1)
KERNEL_F32(2)
KERNEL_F32(3)
KERNEL_F32(4)
typedef void (*kernel_f32_fn)(const float *, int64_t, int64_t, const float *, int64_t, int64_t, const tile_out *);
static const kernel_f32_fn kernels_f32[NV] = {kernel_f32_1, kernel_f32_2, kernel_f32_3, kernel_f32_4};

/* float32: the block [ip0, ip1) x [jp0, jp1) of panels of C, k block by k
 * block; each B panel's k block is packed as it is needed, into 32 KiB that
 * stay in L1 while the block's rows of A pass by (read in place). */
#define F32_FEW_PANELS 4
__attribute__((noinline)) static void compute_f32(const gemm_job *j, int64_t ip0, int64_t ip1, int64_t jp0, int64_t jp1) {
    const wk_gemm_args *g = j->g;
    const float *a = (const float *)g->a;
    const int64_t ars = g->trans_a ? 1 : g->lda, aps = g->trans_a ? g->lda : 1;
    float panel[KC * NR] __attribute__((aligned(64)));
    for (int64_t p0 = 0; p0 < g->k; p0 += KC) {
        const int64_t len = min64(KC, g->k - p0);
        for (int64_t jp = jp0; jp < jp1; jp++) {
            const int64_t c0 = jp * NR, cols = min64(NR, g->n - c0);
            /* a whole panel of a plain B under a few rows of A: read in place */
            const bool in_place = !g->trans_b && cols == NR && ip1 - ip0 <= F32_FEW_PANELS;
            const float *bp = in_place ? (const float *)g->b + p0 * g->ldb + c0 : panel;
            const kernel_f32_fn kernel = kernels_f32[(cols + 15) / 16 - 1];
            if (!in_place) pack_b_f32(g, panel, c0, cols, p0, len);
            for (int64_t ip = ip0; ip < ip1; ip++) {
                const int64_t i0 = ip * MR;
                tile_out o = {p0 == 0, p0 + len == g->k, NULL, (float *)g->c + i0 * g->ldc + c0, g->ldc,
                              min64(MR, g->m - i0), cols, (float)g->alpha, (float)g->beta};
                kernel(a + i0 * ars + p0 * aps, ars, aps, bp, in_place ? g->ldb : NR, len, &o);
            }
        }
    }
}

/* bfloat16 pairs: the block [ip0, ip1) x [jp0, jp1) of panels of C over all
 * of k: for each k block, a B panel's block stays in L1 while the MC / MR
 * panels of A pass by. */
__attribute__((noinline)) static void compute_16(const gemm_job *j, int64_t ip0, int64_t ip1, int64_t jp0, int64_t jp1) {
    const wk_gemm_args *g = j->g;
    const int64_t steps = j->steps, k_blocks = ceil_div(steps, KC);
    float part[MC / MR][NC / NR][MR * NR] __attribute__((aligned(64)));
    for (int64_t kb = 0; kb < k_blocks; kb++) {
        const int64_t p0 = kb * KC, len = min64(KC, steps - p0);
        for (int64_t jp = jp0; jp < jp1; jp++) {
            const uint32_t *bp = j->b + (jp * steps + p0) * NR;
            for (int64_t ip = ip0; ip < ip1; ip++) {
                const int64_t i0 = ip * MR, c0 = jp * NR;
                tile_out o = {kb == 0, kb == k_blocks - 1, part[ip - ip0][jp - jp0],
                              (uint16_t *)g->c + i0 * g->ldc + c0, g->ldc, min64(MR, g->m - i0),
                              min64(NR, g->n - c0), (float)g->alpha, (float)g->beta};
                kernel_dot(j->a + (ip * steps + p0) * MR, bp, len, &o);
            }
        }
    }
}

/* Blocks [begin, end) of C (choose_blocks). */
static void compute(void *ctx, int64_t begin, int64_t end) {
    const gemm_job *j = ctx;
    const wk_gemm_args *g = j->g;
    for (int64_t blk = begin; blk < end; blk++) {
        const int64_t i_blk = blk / j->n_blocks, j_blk = blk % j->n_blocks;
        const int64_t ip0 = i_blk * j->ipb, ip1 = min64(ip0 + j->ipb, ceil_div(g->m, MR));
        const int64_t jp0 = j_blk * j->jpb, jp1 = min64(jp0 + j->jpb, ceil_div(g->n, NR));
        if (g->dtype == WICK_FLOAT32) compute_f32(j, ip0, ip1, jp0, jp1);
        else compute_16(j, ip0, ip1, jp0, jp1);
    }
}

/* The blocks of C, in panels: 16-bit C has its sums in compute's buffer of MC x
 * NC; float32 C takes blocks of up to F32_MC_PANELS x F32_NC_PANELS (A's block
 * of KC steps stays in L2 while B's panels pass, each panel in L1 for the
 * rows); both halved, the larger side first, until each thread has two or
 * more and all the same number (a 256 x 256 16-bit product was 3 blocks for 2
 * threads: 1.67x oneDNN's time). */
#define F32_MC_PANELS 64
#define F32_NC_PANELS 8
/* Panels per block when `panels` are cut into blocks of at most `most`, as
 * even as they go: the pool gives each thread a contiguous run of blocks, so
 * 86 panels in blocks of 64 and 22 gave one of 2 threads three times the
 * other's work (43 and 43 now). */
static int64_t even_blocks(int64_t panels, int64_t most) { return ceil_div(panels, ceil_div(panels, most)); }

static void choose_blocks(gemm_job *j, int64_t m_panels, int64_t n_panels) {
    const bool f32 = j->g->dtype == WICK_FLOAT32;
    j->ipb = even_blocks(m_panels, f32 ? F32_MC_PANELS : MC / MR);
    j->jpb = even_blocks(n_panels, f32 ? F32_NC_PANELS : NC / NR);
    const int64_t threads = wick_get_num_threads();
    for (int64_t blocks; threads > 1 && (blocks = ceil_div(m_panels, j->ipb) * ceil_div(n_panels, j->jpb),
                                         blocks < 2 * threads || blocks % threads) && (j->ipb > 1 || j->jpb > 1);) {
        if ((j->ipb * MR >= j->jpb * NR && j->ipb > 1) || j->jpb == 1) j->ipb = even_blocks(m_panels, ceil_div(j->ipb, 2));
        else j->jpb = even_blocks(n_panels, ceil_div(j->jpb, 2));
    }
    j->m_blocks = ceil_div(m_panels, j->ipb), j->n_blocks = ceil_div(n_panels, j->jpb);
}

/* Steps per thread for loops that copy `elems` elements a step: at least 32 Ki
 * elements, or a thread's wake-up costs more than its share saves. */
static int64_t copy_grain(int64_t elems) { return elems >= 32768 ? 1 : 32768 / (elems > 0 ? elems : 1); }

/* float32: nothing packed ahead (compute_f32). */
static wick_status gemm_f32(const wk_gemm_args *g) {
    gemm_job job = {g, NULL, NULL, g->k, 0, 0, 0, 0};
    choose_blocks(&job, ceil_div(g->m, MR), ceil_div(g->n, NR));
    return wk_parallel_for(job.m_blocks * job.n_blocks, 1, compute, &job);
}

/* ---- 16-bit <-> float32, 16 elements an instruction (cpu_convert.c's first
 * way: float16 by VCVTPH2PS and VCVTPS2PH, bfloat16 by shifts and round_bf16;
 * the widening is exact, the rounding to nearest even) ---- */

WK_A512 static void widen_run(float *dst, const uint16_t *src, bool half, int64_t n) {
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 m = n - c >= 16 ? 0xffff : (__mmask16)((1u << (n - c)) - 1);
        const __m256i h = _mm256_maskz_loadu_epi16(m, src + c);
        const __m512 f = half ? _mm512_cvtph_ps(h) : _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        _mm512_mask_storeu_ps(dst + c, m, f);
    }
}

WK_A512 static void round_run(uint16_t *dst, const float *src, bool half, int64_t n) {
    for (int64_t c = 0; c < n; c += 16) {
        const __mmask16 m = n - c >= 16 ? 0xffff : (__mmask16)((1u << (n - c)) - 1);
        const __m512 x = _mm512_maskz_loadu_ps(m, src + c);
        __m256i h = half ? _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC) : round_bf16(x);
        __asm__("" : "+v"(h)); /* a register result: VCVTPS2PH into memory takes ~20 cycles here */
        _mm256_mask_storeu_epi16(dst + c, m, h);
    }
}

/* The conversions need AVX512F/BW/VL and F16C, not a 16-bit kernel (nor its probe). */
static bool convert_usable(void) {
    static int v = -1;
    if (v < 0) __atomic_store_n(&v, !env_set("WICK_NO_AVX512_16BIT") && have_avx512(), __ATOMIC_RELAXED);
    return __atomic_load_n(&v, __ATOMIC_RELAXED);
}

bool cpu_avx512_widen_16(float *dst, const uint16_t *src, wick_dtype dtype, int64_t n) {
    if (!convert_usable()) return false;
    widen_run(dst, src, dtype == WICK_FLOAT16, n);
    return true;
}

bool cpu_avx512_round_16(uint16_t *dst, const float *src, wick_dtype dtype, int64_t n) {
    if (!convert_usable()) return false;
    round_run(dst, src, dtype == WICK_FLOAT16, n);
    return true;
}

/* bfloat16 on the dot kernel: both operands packed in pairs, then the blocks of C. */
static wick_status gemm_dot(const wk_gemm_args *g) {
    const int64_t m_panels = ceil_div(g->m, MR), n_panels = ceil_div(g->n, NR);
    const int64_t steps = g->k <= 0 ? 1 : ceil_div(g->k, 2);
    const size_t a_bytes = (size_t)(m_panels * steps * MR) * 4, b_bytes = (size_t)(n_panels * steps * NR) * 4;
    gemm_job job = {g, cpu_alloc(a_bytes, 0), cpu_alloc(b_bytes, 0), steps, 0, 0, 0, 0};
    choose_blocks(&job, m_panels, n_panels);
    wick_status st = WICK_OK;
    if (!job.a || !job.b) {
        st = wick_fail(WICK_ERR_OOM, "mm: out of memory packing %s matrices (%lld x %lld x %lld)",
                       wick_dtype_name(g->dtype), (long long)g->m, (long long)g->k, (long long)g->n);
        goto done;
    }
    if (g->k == 0) { /* no products: the panels are one step of zeros */
        memset(job.a, 0, a_bytes);
        memset(job.b, 0, b_bytes);
    } else {
        /* each step fails when an interrupt stopped it part way */
        st = wk_parallel_for(m_panels, copy_grain(MR * g->k), pack_a, &job);
        if (!st) st = wk_parallel_for(n_panels, copy_grain(NR * g->k), pack_b, &job);
        if (st) goto done;
    }
    /* a block is at least 2 MC NC k flops: worth a thread from k = 8 on */
    st = wk_parallel_for(job.m_blocks * job.n_blocks, g->k >= 8 ? 1 : 4, compute, &job);
done:
    if (job.a) cpu_free(job.a, a_bytes, 0);
    if (job.b) cpu_free(job.b, b_bytes, 0);
    return st;
}

wick_status cpu_gemm_avx512(const wk_gemm_args *g) {
    if (g->dtype == WICK_FLOAT32) return g->k > 0 ? gemm_f32(g) : cpu_gemm(g); /* cpu_gemm: k = 0 is beta C */
    return gemm_dot(g);
}

#else /* not x86-64 with GCC or Clang */

bool cpu_avx512_fma_doubles(void) { return false; }

bool cpu_gemm_avx512_usable(wick_dtype dtype) {
    (void)dtype;
    return false;
}

wick_status cpu_gemm_avx512(const wk_gemm_args *g) {
    (void)g;
    return wick_fail(WICK_ERR_UNSUPPORTED, "mm: this build has no AVX-512 kernels");
}

bool cpu_avx512_widen_16(float *dst, const uint16_t *src, wick_dtype dtype, int64_t n) {
    (void)dst, (void)src, (void)dtype, (void)n;
    return false;
}

bool cpu_avx512_round_16(uint16_t *dst, const float *src, wick_dtype dtype, int64_t n) {
    (void)dst, (void)src, (void)dtype, (void)n;
    return false;
}

#endif
