/* Fused scaled-dot-product attention on the CPU, flash-attention style: each
 * task takes a tile of query rows (forward) or one problem (backward), walks
 * the keys in tiles of ATTN_BC with an online softmax (a running maximum and
 * sum per row) and never holds more than a tile of scores. The backward
 * recomputes each tile's weights from q, k and the saved log-sum-exp. float32
 * runs on 16-wide vectors (GCC vector extensions, compiled for AVX-512, AVX2
 * and the baseline, picked at load time); float64 on plain loops. */
#include "cpu.h"
#include "cpu_vmath.h"

#include "../core/attention.h"

#include <math.h>

/* the vector helpers are always inlined: no vector crosses a call, whatever the clone */
#pragma GCC diagnostic ignored "-Wpsabi"

#define ATTN_BR 64 /* query rows per tile */
#define ATTN_BC 64 /* keys per tile */

#define ATTN_INLINE static inline __attribute__((always_inline))
/* float32 is compiled for AVX-512 (x86-64-v4), AVX2 + FMA (x86-64-v3) and the
 * baseline, and picked by the CPU at run time */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define ATTN_MULTI 1
#else
#define ATTN_MULTI 0
#endif

/* ---- float32: 16-wide vectors, one copy per instruction set ---- */

typedef wk_vf v16;
typedef wk_vi v16i;

#define T float
#define ATTN_T16 ATTN_MULTI /* __builtin_shuffle is GCC's */
#define ATTN_WIDE 0 /* gemm's blocking for 16 registers (AVX2) */
#if ATTN_MULTI
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#undef ATTN_WIDE
#define SFX f32v4
#define ATTN_WIDE 1 /* 32 vector registers */
#include "cpu_attention_vec.h"
#include "cpu_attention_impl.h"
#undef ATTN_WIDE
#define ATTN_WIDE 0
#undef SFX
#pragma GCC pop_options
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define SFX f32v3
#include "cpu_attention_vec.h"
#include "cpu_attention_impl.h"
#undef SFX
#pragma GCC pop_options
#endif
#define SFX f32
#include "cpu_attention_vec.h"
#include "cpu_attention_impl.h"
#undef SFX
#undef ATTN_WIDE
#undef ATTN_T16
#undef T

/* ---- float64: plain loops ---- */

ATTN_INLINE void gemm_f64(int64_t M, int64_t N, int64_t K, const double *A, int64_t lda, int64_t ak, const double *B,
                          int64_t ldb, double *C, int64_t ldc, int init) {
    for (int64_t r = 0; r < M; r++) {
        double *c = C + r * ldc;
        if (init)
            for (int64_t n = 0; n < N; n++) c[n] = 0;
        for (int64_t kk = 0; kk < K; kk++) {
            const double a = A[r * lda + kk * ak], *b = B + kk * ldb;
            for (int64_t n = 0; n < N; n++) c[n] += a * b[n];
        }
    }
}

ATTN_INLINE double exprow_f64(double *s, int64_t n, double sub) {
    double sum = 0;
    for (int64_t c = 0; c < n; c++) sum += s[c] = exp(s[c] - sub);
    return sum;
}

ATTN_INLINE double rowmax_f64(const double *s, int64_t n) {
    double m = -INFINITY;
    for (int64_t c = 0; c < n; c++) m = s[c] > m ? s[c] : m;
    return m;
}

ATTN_INLINE double exp1_f64(double x) { return exp(x); }
ATTN_INLINE double log1_f64(double x) { return log(x); }

#define T double
#define ATTN_T16 0
#define SFX f64
#include "cpu_attention_impl.h"
#undef T
#undef ATTN_T16
#undef SFX

/* ---- tasks over threads ---- */

typedef struct attn_job {
    const wk_attn_args *a;
    int64_t tiles; /* query tiles per problem (forward) */
    int failed;    /* scratch refused (atomic) */
} attn_job;

/* A range's scratch, 64-byte aligned; NULL (and the job marked) when refused. */
static void *scratch_get(attn_job *j, int64_t elems, size_t *nbytes) {
    *nbytes = (size_t)(elems > 0 ? elems : 1) * wk_dtype_size(j->a->dtype);
    void *p = wk_malloc_aligned(*nbytes, 64);
    if (!p) __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return p;
}

typedef void (*fwd_f32_fn)(const wk_attn_args *a, int64_t b, int64_t i0, float *scratch);
typedef void (*bwd_f32_fn)(const wk_attn_args *a, int64_t b, float *scratch);

/* The float32 copy this CPU runs best. */
static void pick_f32(fwd_f32_fn *fwd, bwd_f32_fn *bwd) {
    *fwd = fwd_task_f32, *bwd = bwd_task_f32;
#if ATTN_MULTI
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq"))
        *fwd = fwd_task_f32v4, *bwd = bwd_task_f32v4;
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        *fwd = fwd_task_f32v3, *bwd = bwd_task_f32v3;
#endif
}

static void fwd_range(void *ctx, int64_t begin, int64_t end) {
    attn_job *j = ctx;
    const wk_attn_args *a = j->a;
    bool f32 = a->dtype == WICK_FLOAT32;
    size_t nbytes;
    void *s = scratch_get(j, f32 ? fwd_scratch_f32(a) : fwd_scratch_f64(a), &nbytes);
    if (!s) return;
    fwd_f32_fn fwd;
    bwd_f32_fn bwd;
    pick_f32(&fwd, &bwd);
    for (int64_t t = begin; t < end; t++) {
        int64_t b = t / j->tiles, i0 = t % j->tiles * ATTN_BR;
        if (f32) fwd(a, b, i0, s);
        else fwd_task_f64(a, b, i0, s);
    }
    wk_free(s, nbytes);
}

static void bwd_range(void *ctx, int64_t begin, int64_t end) {
    attn_job *j = ctx;
    const wk_attn_args *a = j->a;
    bool f32 = a->dtype == WICK_FLOAT32;
    size_t nbytes;
    void *s = scratch_get(j, f32 ? bwd_scratch_f32(a) : bwd_scratch_f64(a), &nbytes);
    if (!s) return;
    fwd_f32_fn fwd;
    bwd_f32_fn bwd;
    pick_f32(&fwd, &bwd);
    for (int64_t b = begin; b < end; b++) {
        if (f32) bwd(a, b, s);
        else bwd_task_f64(a, b, s);
    }
    wk_free(s, nbytes);
}

static wick_status finish(const attn_job *j, wick_status st, const char *what) {
    if (st) return st;
    if (__atomic_load_n(&j->failed, __ATOMIC_RELAXED))
        return wick_fail(WICK_ERR_OOM, "scaled_dot_product_attention: out of memory allocating the %s's scratch", what);
    return WICK_OK;
}

wick_status cpu_attention_forward(const wk_attn_args *a) {
    attn_job j = {a, (a->L + ATTN_BR - 1) / ATTN_BR, 0};
    return finish(&j, wk_parallel_for(a->batch * j.tiles, 1, fwd_range, &j), "forward");
}

wick_status cpu_attention_backward(const wk_attn_args *a) {
    attn_job j = {a, 0, 0};
    return finish(&j, wk_parallel_for(a->batch, 1, bwd_range, &j), "backward");
}
