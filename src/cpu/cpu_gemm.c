/* CPU matrix products: BLAS (BLIS or OpenBLAS, CMakeLists.txt) for float32/float64
 * (a transposed right operand with many rows copied to its plain layout first),
 * wick's AVX-512 kernels (cpu_gemm_avx512.c) for float32 with few rows or
 * columns and for bfloat16 where VDPBF16PS is the faster instruction, AMX for
 * bfloat16, float16/bfloat16 otherwise widened to float32 and back around the
 * float32 route, a plain loop for small float matrices (below the cost of
 * entering BLAS) and for the integer dtypes. */
#include "cpu.h"

#include <cblas.h>

/* From this many multiply-adds on, a bfloat16 product goes to the AMX unit
 * where there is one (its operands are padded to blocks of 32). */
#define AMX_MIN_FLOPS (32 * 32 * 32)

/* Below this many multiply-adds a straight loop beats cblas_sgemm's entry cost. */
#define SMALL_GEMM_FLOPS 4096

/* C = alpha A @ B + beta C for small matrices (beta 0: C is not read, as in
 * BLAS). Each row of C is built in
 * registers from rows of B scaled by elements of A; for rows of up to 8 elements
 * the row length is a compile-time constant, so the loop is fully unrolled. */
#define SMALL_ROWS(T, N)                                                                          \
    for (int64_t i = 0; i < m; i++) {                                                             \
        T acc[N] = {0};                                                                           \
        for (int64_t p = 0; p < k; p++) {                                                         \
            const T av = a[i * ai + p * ap];                                                      \
            for (int j = 0; j < N; j++) acc[j] += av * b[p * bp + j * bj];                        \
        }                                                                                         \
        for (int j = 0; j < N; j++)                                                               \
            c[i * ldc + j] = beta == 0 ? alpha * acc[j] : alpha * acc[j] + beta * c[i * ldc + j];       \
    }
#define SMALL_GEMM(NAME, T)                                                                       \
    static void NAME(const wk_gemm_args *g) {                                                     \
        const T *restrict a = (const T *)g->a, *restrict b = (const T *)g->b;                    \
        T *restrict c = (T *)g->c;                                                                \
        const int64_t m = g->m, n = g->n, k = g->k, ldc = g->ldc;                                 \
        const T alpha = (T)g->alpha, beta = (T)g->beta;                                           \
        const int64_t ai = g->trans_a ? 1 : g->lda, ap = g->trans_a ? g->lda : 1;                 \
        const int64_t bp = g->trans_b ? 1 : g->ldb, bj = g->trans_b ? g->ldb : 1;                 \
        switch (n) {                                                                              \
        case 1: SMALL_ROWS(T, 1) return;                                                          \
        case 2: SMALL_ROWS(T, 2) return;                                                          \
        case 3: SMALL_ROWS(T, 3) return;                                                          \
        case 4: SMALL_ROWS(T, 4) return;                                                          \
        case 8: SMALL_ROWS(T, 8) return;                                                          \
        default:                                                                                  \
            if (bj == 1) { /* rows of B are contiguous: build rows of C from them */              \
                for (int64_t i = 0; i < m; i++) {                                                 \
                    T *restrict row = c + i * ldc;                                                \
                    for (int64_t j = 0; j < n; j++) row[j] = beta == 0 ? 0 : beta * row[j];       \
                    for (int64_t p = 0; p < k; p++) {                                             \
                        const T av = alpha * a[i * ai + p * ap];                                  \
                        const T *restrict brow = b + p * bp;                                      \
                        for (int64_t j = 0; j < n; j++) row[j] += av * brow[j];                   \
                    }                                                                             \
                }                                                                                 \
                return;                                                                           \
            }                                                                                     \
            for (int64_t i = 0; i < m; i++) /* columns of B are contiguous: dot products */       \
                for (int64_t j = 0; j < n; j++) {                                                 \
                    T acc = 0;                                                                    \
                    for (int64_t p = 0; p < k; p++) acc += a[i * ai + p * ap] * b[p * bp + j * bj]; \
                    c[i * ldc + j] = beta == 0 ? alpha * acc : alpha * acc + beta * c[i * ldc + j]; \
                }                                                                                 \
        }                                                                                         \
    }
SMALL_GEMM(small_gemm_f32, float)
SMALL_GEMM(small_gemm_f64, double)

/* Any other dtype: accumulate in double (or int64) element by element. */
static void generic_gemm(const wk_gemm_args *g) {
    size_t es = wk_dtype_size(g->dtype);
    bool ints = !wick_dtype_is_floating(g->dtype);
    for (int64_t i = 0; i < g->m; i++)
        for (int64_t j = 0; j < g->n; j++) {
            double acc = 0;
            int64_t iacc = 0;
            for (int64_t p = 0; p < g->k; p++) {
                int64_t ao = g->trans_a ? p * g->lda + i : i * g->lda + p;
                int64_t bo = g->trans_b ? j * g->ldb + p : p * g->ldb + j;
                if (ints)
                    iacc = wk_wrap_add(iacc, wk_wrap_mul(wk_load_int64(g->a + ao * (int64_t)es, g->dtype),
                                                         wk_load_int64(g->b + bo * (int64_t)es, g->dtype)));
                else
                    acc += wk_load_double(g->a + ao * (int64_t)es, g->dtype) * wk_load_double(g->b + bo * (int64_t)es, g->dtype);
            }
            char *c = g->c + (i * g->ldc + j) * (int64_t)es;
            if (ints) {
                int64_t old = g->beta != 0 ? wk_load_int64(c, g->dtype) : 0;
                /* integer alpha and beta (the core checks), products wrapping like PyTorch's */
                wk_store_int64(c, g->dtype, wk_wrap_add(wk_wrap_mul((int64_t)g->alpha, iacc), wk_wrap_mul((int64_t)g->beta, old)));
            } else {
                double old = g->beta != 0 ? wk_load_double(c, g->dtype) : 0;
                wk_store_double(c, g->dtype, g->alpha * acc + g->beta * old);
            }
        }
}

/* Bytes of a float32 copy of a rows x cols block (never 0: an allocation of 0 may be NULL). */
static size_t f32_bytes(int64_t rows, int64_t cols) {
    return (size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof(float);
}

/* A rows x cols block of 16-bit floats (row r at h + r * ld) and its float32
 * copy (row r at f + r * cols), converted a range of rows at a time on the pool. */
typedef struct {
    float *f;
    uint16_t *h;
    int64_t cols, ld;
    wick_dtype dtype;
} convert_job;

static void widen_range(void *ctx, int64_t begin, int64_t end) {
    const convert_job *j = ctx;
    for (int64_t r = begin; r < end; r++) cpu_widen_16(j->f + r * j->cols, j->h + r * j->ld, j->dtype, j->cols);
}

static void round_range(void *ctx, int64_t begin, int64_t end) {
    const convert_job *j = ctx;
    for (int64_t r = begin; r < end; r++) cpu_round_16(j->h + r * j->ld, j->f + r * j->cols, j->dtype, j->cols);
}

/* Rows of a conversion per thread: at least 32 Ki elements each. */
static int64_t convert_grain(int64_t cols) { return cols >= 32768 ? 1 : 32768 / (cols > 0 ? cols : 1); }

/* A rows x cols block of 16-bit floats with leading dimension ld, as a
 * contiguous float32 copy (NULL when out of memory; *st set when an
 * interrupt stopped the copy). */
static float *widen_16(const char *src, wick_dtype dtype, int64_t rows, int64_t cols, int64_t ld, wick_status *st) {
    float *out = cpu_alloc(f32_bytes(rows, cols), 0);
    if (!out) return NULL;
    convert_job j = {out, (uint16_t *)src, cols, ld, dtype};
    *st = wk_parallel_for(rows, convert_grain(cols), widen_range, &j);
    return out;
}

/* float16/bfloat16: on the AMX unit (bfloat16, large enough), on the
 * VDPBF16PS kernel (bfloat16, where it is the faster instruction), else
 * widened to float32 once (16 an instruction on AVX-512), multiplied by
 * cpu_gemm's float32 route (BLIS or the AVX-512 kernel), rounded once on the
 * way back. Each is float32 accumulation, as in PyTorch's CPU and cuBLAS's
 * 16-bit products. On the Sapphire Rapids class Xeon of the benchmarks this
 * route took 0.91-1.01x the time of a kernel that packed the operands widened
 * into panels of its own (a scalar conversion an element, and not the float32
 * kernel's blocking), which it replaced. */
static wick_status gemm_16bit(const wk_gemm_args *g) {
    if (g->m * g->n * g->k >= AMX_MIN_FLOPS) {
        if (g->dtype == WICK_BFLOAT16 && cpu_amx_bf16_usable()) return cpu_amx_bf16_gemm(g);
        if (cpu_gemm_avx512_usable(g->dtype)) return cpu_gemm_avx512(g);
    }
    const int64_t a_rows = g->trans_a ? g->k : g->m, a_cols = g->trans_a ? g->m : g->k;
    const int64_t b_rows = g->trans_b ? g->n : g->k, b_cols = g->trans_b ? g->k : g->n;
    wick_status st = WICK_OK;
    float *a = widen_16(g->a, g->dtype, a_rows, a_cols, g->lda, &st);
    float *b = st ? NULL : widen_16(g->b, g->dtype, b_rows, b_cols, g->ldb, &st);
    /* C is read only when beta is not 0; otherwise its copy is just room */
    float *c = st ? NULL
               : g->beta != 0 ? widen_16(g->c, g->dtype, g->m, g->n, g->ldc, &st)
                              : cpu_alloc(f32_bytes(g->m, g->n), 0);
    if (!st && (!a || !b || !c))
        st = wick_fail(WICK_ERR_OOM, "mm: out of memory widening %s matrices to float32 (%lld x %lld x %lld)",
                       wick_dtype_name(g->dtype), (long long)g->m, (long long)g->k, (long long)g->n);
    if (!st) {
        wk_gemm_args w = *g;
        w.dtype = WICK_FLOAT32;
        /* (BLAS wants leading dimensions of at least 1, also for k = 0) */
        w.a = (const char *)a, w.lda = a_cols > 0 ? a_cols : 1;
        w.b = (const char *)b, w.ldb = b_cols > 0 ? b_cols : 1;
        w.c = (char *)c, w.ldc = g->n;
        st = cpu_gemm(&w);
    }
    if (!st) {
        convert_job j = {c, (uint16_t *)g->c, g->n, g->ldc, g->dtype};
        st = wk_parallel_for(g->m, convert_grain(g->n), round_range, &j);
    }
    if (a) cpu_free(a, f32_bytes(a_rows, a_cols), 0);
    if (b) cpu_free(b, f32_bytes(b_rows, b_cols), 0);
    if (c) cpu_free(c, f32_bytes(g->m, g->n), 0);
    return st;
}

/* B^T (k x n, leading dimension ldd) from B (n x k, leading dimension ld) in
 * 16 x 16 blocks: a block's 16 source and 16 destination lines stay in L1 even
 * when the row strides map them all to two cache sets (32 x 32 blocks thrashed
 * at ld = 512). */
#define UNTRANSPOSE(NAME, T)                                                                      \
    static void NAME(T *restrict dst, int64_t ldd, const T *restrict src, int64_t n, int64_t k,   \
                     int64_t ld) {                                                                \
        for (int64_t j0 = 0; j0 < n; j0 += 16)                                                    \
            for (int64_t p0 = 0; p0 < k; p0 += 16) {                                              \
                int64_t j1 = j0 + 16 < n ? j0 + 16 : n, p1 = p0 + 16 < k ? p0 + 16 : k;           \
                for (int64_t p = p0; p < p1; p++)                                                 \
                    for (int64_t j = j0; j < j1; j++) dst[p * ldd + j] = src[j * ld + p];         \
            }                                                                                     \
    }
UNTRANSPOSE(untranspose_f32_scalar, float)
UNTRANSPOSE(untranspose_f64, double)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The same for float32 in 8 x 8 blocks in AVX registers (eight loads, three
 * shuffle stages, eight stores); the edges by the scalar loop. */
__attribute__((target("avx2"))) static void untranspose_f32_avx2(float *restrict dst, int64_t ldd,
                                                                   const float *restrict src, int64_t n, int64_t k,
                                                                   int64_t ld) {
    int64_t n8 = n & ~(int64_t)7, k8 = k & ~(int64_t)7;
    for (int64_t j0 = 0; j0 < n8; j0 += 8)
        for (int64_t p0 = 0; p0 < k8; p0 += 8) {
            const float *s = src + j0 * ld + p0;
            __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ld), r2 = _mm256_loadu_ps(s + 2 * ld),
                   r3 = _mm256_loadu_ps(s + 3 * ld), r4 = _mm256_loadu_ps(s + 4 * ld),
                   r5 = _mm256_loadu_ps(s + 5 * ld), r6 = _mm256_loadu_ps(s + 6 * ld),
                   r7 = _mm256_loadu_ps(s + 7 * ld);
            __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
            __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
            __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
            __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
            __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float *d = dst + p0 * ldd + j0;
            _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
            _mm256_storeu_ps(d + ldd, _mm256_permute2f128_ps(u1, u5, 0x20));
            _mm256_storeu_ps(d + 2 * ldd, _mm256_permute2f128_ps(u2, u6, 0x20));
            _mm256_storeu_ps(d + 3 * ldd, _mm256_permute2f128_ps(u3, u7, 0x20));
            _mm256_storeu_ps(d + 4 * ldd, _mm256_permute2f128_ps(u0, u4, 0x31));
            _mm256_storeu_ps(d + 5 * ldd, _mm256_permute2f128_ps(u1, u5, 0x31));
            _mm256_storeu_ps(d + 6 * ldd, _mm256_permute2f128_ps(u2, u6, 0x31));
            _mm256_storeu_ps(d + 7 * ldd, _mm256_permute2f128_ps(u3, u7, 0x31));
        }
    for (int64_t j = 0; j < n; j++) /* the edges: columns past k8 of every row, rows past n8 */
        for (int64_t p = j < n8 ? k8 : 0; p < k; p++) dst[p * ldd + j] = src[j * ld + p];
}
#endif

void cpu_untranspose_f32(float *dst, int64_t ldd, const float *src, int64_t n, int64_t k, int64_t ld) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("avx2")) {
        untranspose_f32_avx2(dst, ldd, src, n, k, ld);
        return;
    }
#endif
    untranspose_f32_scalar(dst, ldd, src, n, k, ld);
}

/* ---- float32/float64 products on wick's pool ----
 * One pool owns the cores: the matrix library always runs on one thread
 * (cpu_backend.c keeps its count at 1), and a large product is split here into
 * blocks of C, one BLAS call per block on wick's pool (threads.c: no thread
 * waits for long on another; a block a late worker has not claimed, the caller
 * runs). BLIS 0.9's own threads, made per call and spinning at barriers, made
 * the MLP epoch slower on 2 threads than on 1. Every element of C is one dot
 * product over all of k, but BLIS picks its kernel by the shape of the block,
 * so the last bits may differ between thread counts (never between runs at one
 * count: the blocks depend only on the sizes and the count). */

/* A block gets at least this many multiply-adds: about 20 us of one core, well
 * above the cost of waking a worker. */
#define SPLIT_MIN_MACS ((int64_t)1 << 20)
/* Block edges fall on multiples of this many rows or columns (whole cache lines
 * of C and whole micro-tiles of the BLAS kernels). */
#define SPLIT_ALIGN 16

/* Rows of slack after A's copy in a float32 A B^T (below). */
#define NT_SLACK_ROWS 2

/* Debian 12's BLIS 0.9 reads past the end of A in a row-major float32 A B^T (its small-matrix
 * kernels on AMD CPUs, found with a guard page after A: m of 3j + 1 rows, n of 17 and more, up to
 * a row of A beyond; a tensor whose memory ends at a page's end then crashes the process). There A
 * goes through a contiguous copy with NT_SLACK_ROWS zeroed rows after it: m x k more memory
 * traffic against m x k x n multiply-adds. NULL when no copy is needed, or none could be made (the
 * call then reads A in place, as before). */
static float *nt_padded_a(const wk_gemm_args *g, const float *a, int64_t m, size_t *bytes) {
    if (g->dtype != WICK_FLOAT32 || g->trans_a || !g->trans_b || g->k == 0) return NULL;
    *bytes = (size_t)(m + NT_SLACK_ROWS) * (size_t)g->k * sizeof(float);
    float *p = cpu_alloc(*bytes, 0);
    if (!p) return NULL;
    for (int64_t i = 0; i < m; i++) memcpy(p + i * g->k, a + i * g->lda, (size_t)g->k * sizeof(float));
    memset(p + m * g->k, 0, (size_t)NT_SLACK_ROWS * (size_t)g->k * sizeof(float));
    return p;
}

/* One BLAS call on the block [i0, i1) x [j0, j1) of C. */
static void blas_block(const wk_gemm_args *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t es = (int64_t)wk_dtype_size(g->dtype), m = i1 - i0, n = j1 - j0;
    if (m <= 0 || n <= 0) return;
    const char *a = g->a + (g->trans_a ? i0 : i0 * g->lda) * es;
    const char *b = g->b + (g->trans_b ? j0 * g->ldb : j0) * es;
    char *c = g->c + (i0 * g->ldc + j0) * es;
    enum CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans, tb = g->trans_b ? CblasTrans : CblasNoTrans;
    if (g->dtype == WICK_FLOAT32) {
        size_t padded_bytes = 0;
        float *padded = nt_padded_a(g, (const float *)a, m, &padded_bytes);
        cblas_sgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)g->k, (float)g->alpha,
                    padded ? padded : (const float *)a, padded ? (int)g->k : (int)g->lda, (const float *)b,
                    (int)g->ldb, (float)g->beta, (float *)c, (int)g->ldc);
        if (padded) cpu_free(padded, padded_bytes, 0);
    } else {
        cblas_dgemm(CblasRowMajor, ta, tb, (int)m, (int)n, (int)g->k, g->alpha, (const double *)a, (int)g->lda,
                    (const double *)b, (int)g->ldb, g->beta, (double *)c, (int)g->ldc);
    }
}

/* The t-th of `parts` edges along a dimension of `len`, on SPLIT_ALIGN. */
static int64_t split_edge(int64_t len, int64_t t, int64_t parts) {
    int64_t units = (len + SPLIT_ALIGN - 1) / SPLIT_ALIGN, e = units * t / parts * SPLIT_ALIGN;
    return e < len ? e : len;
}

typedef struct {
    const wk_gemm_args *g;
    int64_t tm, tn; /* a grid of tm x tn blocks of C */
} split_job;

static void split_range(void *ctx, int64_t begin, int64_t end) {
    const split_job *j = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t bi = t / j->tn, bj = t % j->tn;
        blas_block(j->g, split_edge(j->g->m, bi, j->tm), split_edge(j->g->m, bi + 1, j->tm),
                   split_edge(j->g->n, bj, j->tn), split_edge(j->g->n, bj + 1, j->tn));
    }
}

/* How many blocks, and their grid: at most one per thread, each with at least
 * SPLIT_MIN_MACS and SPLIT_ALIGN rows and columns; among the grids, the one whose
 * blocks have the smallest rows + columns (the least packing per multiply-add),
 * columns first on a tie. */
static int64_t split_grid(const wk_gemm_args *g, int64_t *tm, int64_t *tn) {
    int64_t macs = g->m * g->n * g->k, parts = wick_get_num_threads();
    if (parts > macs / SPLIT_MIN_MACS) parts = macs / SPLIT_MIN_MACS;
    int64_t best = INT64_MAX;
    *tm = *tn = 1;
    for (; parts > 1 && best == INT64_MAX; parts--)
        for (int64_t r = 1; r <= parts; r++) {
            if (parts % r) continue;
            int64_t c = parts / r, rows = (g->m + r - 1) / r, cols = (g->n + c - 1) / c;
            if (rows < SPLIT_ALIGN || cols < SPLIT_ALIGN || rows + cols >= best) continue;
            best = rows + cols, *tm = r, *tn = c;
        }
    return *tm * *tn;
}

static wick_status blas_gemm(const wk_gemm_args *g) {
    int64_t tm, tn;
    if (split_grid(g, &tm, &tn) < 2) {
        blas_block(g, 0, g->m, 0, g->n);
        return WICK_OK;
    }
    split_job j = {g, tm, tn};
    return wk_parallel_for(tm * tn, 1, split_range, &j);
}

/* A transposed B (x @ W^T: every linear layer's forward) ran at about two thirds
 * of the plain layout's speed in BLIS 0.9 (nanoGPT's training step, one thread:
 * ~55 against ~80-90 GFLOP/s for m = 768, k = 128, n = 128..512). With many rows
 * the k x n copy to the plain layout is a small part of the m x k x n product;
 * it is made on the pool too, in blocks of columns. */
#define UNTRANSPOSE_MIN_ROWS 64
#define UNTRANSPOSE_GRAIN 64 /* columns of the copy per piece, at least */

typedef struct {
    void *dst;
    const wk_gemm_args *g;
} untranspose_job;

static void untranspose_range(void *ctx, int64_t begin, int64_t end) {
    const untranspose_job *j = ctx;
    const wk_gemm_args *g = j->g;
    if (g->dtype == WICK_FLOAT32)
        cpu_untranspose_f32((float *)j->dst + begin, g->n, (const float *)g->b + begin * g->ldb, end - begin, g->k, g->ldb);
    else
        untranspose_f64((double *)j->dst + begin, g->n, (const double *)g->b + begin * g->ldb, end - begin, g->k,
                        g->ldb);
}

static wick_status gemm_untransposed_b(const wk_gemm_args *g) {
    size_t es = wk_dtype_size(g->dtype), bytes = (size_t)(g->k * g->n) * es;
    void *b = wk_malloc_aligned(bytes, 64);
    if (!b)
        return wick_fail(WICK_ERR_OOM, "mm: out of memory for a %lld x %lld copy of the right operand",
                         (long long)g->k, (long long)g->n);
    untranspose_job uj = {b, g};
    /* pieces of whole 16-column blocks: the copy's blocks stay those of one call */
    int64_t grain = g->k * g->n < SPLIT_MIN_MACS / 16 ? g->n : UNTRANSPOSE_GRAIN;
    wick_status st = wk_parallel_for(g->n, grain, untranspose_range, &uj);
    wk_gemm_args w = *g;
    w.trans_b = 0, w.b = (const char *)b, w.ldb = g->n;
    if (!st) st = blas_gemm(&w);
    wk_free(b, bytes);
    return st;
}

wick_status cpu_gemm(const wk_gemm_args *g) {
    if (g->m == 0 || g->n == 0) return WICK_OK;
    if (g->dtype == WICK_FLOAT16 || g->dtype == WICK_BFLOAT16) return gemm_16bit(g);
    if (g->dtype != WICK_FLOAT32 && g->dtype != WICK_FLOAT64) {
        generic_gemm(g);
        return WICK_OK;
    }
    /* also with a bias in C (beta 1: every Linear): BLIS's 'skx' kernels take
     * some 3 us to enter, ten times a 4x4 product */
    const int64_t S = SMALL_GEMM_FLOPS;
    if (g->k == 0 || (g->m <= S && g->n <= S && g->k <= S && g->m * g->n * g->k <= S)) {
        if (g->dtype == WICK_FLOAT32) small_gemm_f32(g);
        else small_gemm_f64(g);
        return WICK_OK;
    }
    if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX || g->lda > INT32_MAX || g->ldb > INT32_MAX ||
        g->ldc > INT32_MAX)
        return wick_fail(WICK_ERR_UNSUPPORTED, "mm: matrix dimensions beyond 2^31 are not supported by BLAS");
    /* float32 where C has few rows or few columns (a batch of 128 through a
     * Linear, a convolution's weight gradient): wick's AVX-512 kernel reads A
     * (and B) in place, where BLIS pays for packing both; with many rows and
     * columns BLIS's blocking wins (bench/gemm_kernels.sh) */
    if (g->dtype == WICK_FLOAT32 && (g->m <= WK_GEMM_F32_FEW_ROWS || (g->n <= WK_GEMM_F32_FEW_COLS && !g->trans_a)) &&
        cpu_gemm_avx512_usable(WICK_FLOAT32))
        return cpu_gemm_avx512(g);
    if (g->trans_b && g->m >= UNTRANSPOSE_MIN_ROWS && g->n >= 16 && g->k >= 16) return gemm_untransposed_b(g);
    return blas_gemm(g);
}
