/* CPU elementwise kernels: the scalar expressions of scalar_math.h instantiated
 * for float, double and int64, run over an iterator one inner "run" at a time.
 * Contiguous runs get plain loops that the compiler vectorises. */
#include "cpu.h"

#include "../core/scalar_math.h"
#include "cpu_vmath.h"

#define GRAIN 32768

/* Calls fn on every run of consecutive innermost elements in [begin, end). */
static void for_each_run(const wk_iter *it, int64_t begin, int64_t end, cpu_run_fn fn, const void *extra) {
    if (begin >= end) return; /* nothing to do (and an empty dim must not be divided by) */
    int nd = it->ndim, nops = it->nops;
    int64_t idx[WICK_MAX_DIMS], lin = begin;
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = lin % it->sizes[d];
        lin /= it->sizes[d];
    }
    int64_t inner = it->sizes[nd - 1], pos = begin, s[WK_MAX_OPERANDS];
    size_t es[WK_MAX_OPERANDS];
    char *base[WK_MAX_OPERANDS]; /* a host value (stride 0) is read where the iterator holds it */
    for (int k = 0; k < nops; k++) {
        s[k] = it->strides[k][nd - 1];
        es[k] = wk_dtype_size(it->dtypes[k]);
        base[k] = wk_iter_operand(it, k);
    }
    while (pos < end) {
        char *p[WK_MAX_OPERANDS];
        for (int k = 0; k < nops; k++) {
            int64_t off = 0;
            for (int d = 0; d < nd; d++) off += idx[d] * it->strides[k][d];
            p[k] = base[k] + off * (int64_t)es[k];
        }
        int64_t n = inner - idx[nd - 1];
        if (n > end - pos) n = end - pos;
        fn(p, s, n, extra);
        pos += n;
        idx[nd - 1] += n;
        for (int d = nd - 1; d > 0 && idx[d] >= it->sizes[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

typedef struct {
    const wk_iter *it;
    cpu_run_fn fn;
    const void *extra;
} run_job;

static void run_range(void *ctx, int64_t begin, int64_t end) {
    const run_job *j = ctx;
    for_each_run(j->it, begin, end, j->fn, j->extra);
}

wick_status cpu_run(const wk_iter *it, cpu_run_fn fn, const void *extra) {
    run_job j = {it, fn, extra};
    return wk_parallel_for(it->numel, GRAIN, run_range, &j); /* fails when an interrupt stopped it */
}

/* ---- loops (WK_SIMD: compiled for AVX2 and the baseline, see cpu.h) ---- */

#define UNARY_RUN(NAME, T, EXPR)                                                                \
    WK_SIMD static void NAME(char **p, const int64_t *s, int64_t n, const void *extra) {                \
        (void)extra;                                                                            \
        T *o = (T *)p[0];                                                                       \
        const T *in = (const T *)p[1];                                                          \
        if (s[0] == 1 && s[1] == 1) {                                                           \
            for (int64_t i = 0; i < n; i++) { T x = in[i]; o[i] = (EXPR); }                      \
        } else {                                                                                \
            for (int64_t i = 0; i < n; i++) { T x = in[i * s[1]]; o[i * s[0]] = (EXPR); }        \
        }                                                                                       \
    }

/* The loops of one binary op; alpha (add/sub only) is a compile-time 1 in the
 * common case so that `a + alpha * b` costs one add. */
#define BINARY_LOOPS(T, TO, EXPR)                                                               \
    if (s[0] == 1 && s[1] == 1 && s[2] == 1) {                                                  \
        for (int64_t i = 0; i < n; i++) { T a = x[i], b = y[i]; o[i] = (EXPR); }                 \
    } else if (s[0] == 1 && s[1] == 1 && s[2] == 0) {                                           \
        T b = y[0];                                                                             \
        for (int64_t i = 0; i < n; i++) { T a = x[i]; o[i] = (EXPR); }                           \
    } else if (s[0] == 1 && s[1] == 0 && s[2] == 1) {                                           \
        T a = x[0];                                                                             \
        for (int64_t i = 0; i < n; i++) { T b = y[i]; o[i] = (EXPR); }                           \
    } else {                                                                                    \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T a = x[i * s[1]], b = y[i * s[2]];                                                 \
            o[i * s[0]] = (EXPR);                                                               \
        }                                                                                       \
    }
#define BINARY_RUN(NAME, T, TO, EXPR)                                                           \
    WK_SIMD static void NAME(char **p, const int64_t *s, int64_t n, const void *extra) {        \
        TO *o = (TO *)p[0];                                                                     \
        const T *x = (const T *)p[1], *y = (const T *)p[2];                                     \
        const double alpha_in = extra ? *(const double *)extra : 1;                             \
        if (alpha_in == 1) {                                                                    \
            const T alpha = 1;                                                                  \
            (void)alpha;                                                                        \
            BINARY_LOOPS(T, TO, EXPR)                                                           \
        } else {                                                                                \
            const T alpha = (T)alpha_in;                                                        \
            (void)alpha;                                                                        \
            BINARY_LOOPS(T, TO, EXPR)                                                           \
        }                                                                                       \
    }

/* unary */
#define UNARY_F32(ID, FE, DE) UNARY_RUN(unary_f32_##ID, float, FE)
#define UNARY_F64(ID, FE, DE) UNARY_RUN(unary_f64_##ID, double, DE)
#define UNARY_I64(ID, IE) UNARY_RUN(unary_i64_##ID, int64_t, IE)
WK_UNARY_FLOAT_MATH(UNARY_F32)
WK_UNARY_FLOAT_MATH(UNARY_F64)
WK_UNARY_INT_MATH(UNARY_I64)
#define ENTRY_F32(ID, FE, DE) [WICK_##ID] = unary_f32_##ID,
#define ENTRY_F64(ID, FE, DE) [WICK_##ID] = unary_f64_##ID,
#define ENTRY_I64(ID, IE) [WICK_##ID] = unary_i64_##ID,
static const cpu_run_fn unary_runs[3][WICK_NUM_UNARY] = {
    {WK_UNARY_FLOAT_MATH(ENTRY_F32)}, {WK_UNARY_FLOAT_MATH(ENTRY_F64)}, {WK_UNARY_INT_MATH(ENTRY_I64)}};
#undef ENTRY_F32
#undef ENTRY_F64
#undef ENTRY_I64

/* A strided run (a transposed view, a 0-dim tensor) of a vector op, gathered
 * into vectors: every layout gives the bits a contiguous run gives, as PyTorch's. */
#define VEC_STRIDED(VFN)                                                                        \
    for (int64_t i = 0; i < n; i += WK_VL) {                                                    \
        int64_t m = n - i < WK_VL ? n - i : WK_VL;                                             \
        wk_vf v = wk_vsplat(0);                                                                 \
        for (int64_t k = 0; k < m; k++) v[k] = ((const float *)p[1])[(i + k) * s[1]];          \
        wk_vf r = VFN(v);                                                                       \
        for (int64_t k = 0; k < m; k++) ((float *)p[0])[(i + k) * s[0]] = r[k];                \
    }

/* float32 transcendental ops, 16 lanes at a time (cpu_vmath.h: a few ulp from libm) */
#define VEC_UNARY(ID, VFN)                                                                      \
    WK_VSIMD static void vec_f32_##ID(char **p, const int64_t *s, int64_t n, const void *extra) { \
        (void)extra;                                                                            \
        if (s[0] != 1 || s[1] != 1) {                                                           \
            VEC_STRIDED(VFN)                                                                    \
            return;                                                                             \
        }                                                                                       \
        float *o = (float *)p[0];                                                               \
        const float *in = (const float *)p[1];                                                  \
        int64_t i = 0;                                                                          \
        for (; i + WK_VL <= n; i += WK_VL) wk_vstore(o + i, VFN(wk_vload(in + i)));             \
        if (i < n) wk_vstore_part(o + i, VFN(wk_vload_part(in + i, n - i, 0)), n - i);          \
    }
VEC_UNARY(EXP, wk_vexp_rounded)
VEC_UNARY(TANH, wk_vtanh)
VEC_UNARY(SIGMOID, wk_vsigmoid)
VEC_UNARY(ERF, wk_verf)
VEC_UNARY(GELU, wk_vgelu)
VEC_UNARY(GELU_TANH, wk_vgelu_tanh)
VEC_UNARY(LOG, wk_vlog)
/* sin and cos: lanes of |x| < 8192 through wk_vsincos, any other lane through
 * libm (a large argument's reduction needs more digits; NaN and inf too), so
 * that an element's bits never depend on its neighbours */
#define VEC_TRIG(ID, COS)                                                                       \
    WK_VI wk_vf vtrig_##ID(wk_vf v) {                                                           \
        if (wk_vtrig_in_range(v)) return wk_vsincos(v, COS);                                    \
        wk_vf safe = v;                                                                         \
        for (int k = 0; k < WK_VL; k++)                                                         \
            if (!(fabsf(v[k]) < 8192.0f)) safe[k] = 0;                                          \
        wk_vf r = wk_vsincos(safe, COS);                                                        \
        for (int k = 0; k < WK_VL; k++)                                                         \
            if (!(fabsf(v[k]) < 8192.0f)) r[k] = COS ? cosf(v[k]) : sinf(v[k]);                 \
        return r;                                                                               \
    }                                                                                           \
    VEC_UNARY(ID, vtrig_##ID)
VEC_TRIG(SIN, 0)
VEC_TRIG(COS, 1)
static const cpu_run_fn vec_unary_runs[WICK_NUM_UNARY] = {
    [WICK_EXP] = vec_f32_EXP, [WICK_LOG] = vec_f32_LOG, [WICK_SIN] = vec_f32_SIN, [WICK_COS] = vec_f32_COS, [WICK_TANH] = vec_f32_TANH, [WICK_SIGMOID] = vec_f32_SIGMOID,
    [WICK_ERF] = vec_f32_ERF, [WICK_GELU] = vec_f32_GELU, [WICK_GELU_TANH] = vec_f32_GELU_TANH};

/* binary */
#define BINARY_F32(ID, FE, DE, IE) BINARY_RUN(binary_f32_##ID, float, float, FE)
#define BINARY_F64(ID, FE, DE, IE) BINARY_RUN(binary_f64_##ID, double, double, DE)
#define BINARY_I64(ID, FE, DE, IE) BINARY_RUN(binary_i64_##ID, int64_t, int64_t, IE)
WK_BINARY_MATH(BINARY_F32)
WK_BINARY_MATH(BINARY_F64)
WK_BINARY_MATH(BINARY_I64)
#define BINARY_INT_ONLY(ID, IE) BINARY_RUN(binary_i64_##ID, int64_t, int64_t, IE)
WK_BINARY_INT_ONLY_MATH(BINARY_INT_ONLY)
#define COMPARE_F32(ID, E) BINARY_RUN(compare_f32_##ID, float, uint8_t, E)
#define COMPARE_F64(ID, E) BINARY_RUN(compare_f64_##ID, double, uint8_t, E)
#define COMPARE_I64(ID, E) BINARY_RUN(compare_i64_##ID, int64_t, uint8_t, E)
WK_COMPARE_MATH(COMPARE_F32)
WK_COMPARE_MATH(COMPARE_F64)
WK_COMPARE_MATH(COMPARE_I64)
#define ENTRY_F32(ID, FE, DE, IE) [WICK_##ID] = binary_f32_##ID,
#define ENTRY_F64(ID, FE, DE, IE) [WICK_##ID] = binary_f64_##ID,
#define ENTRY_I64(ID, FE, DE, IE) [WICK_##ID] = binary_i64_##ID,
#define CENTRY_F32(ID, E) [WICK_##ID] = compare_f32_##ID,
#define CENTRY_F64(ID, E) [WICK_##ID] = compare_f64_##ID,
#define CENTRY_I64(ID, E) [WICK_##ID] = compare_i64_##ID,
#define IENTRY_I64(ID, IE) [WICK_##ID] = binary_i64_##ID,
static const cpu_run_fn binary_runs[3][WICK_NUM_BINARY] = {
    {WK_BINARY_MATH(ENTRY_F32) WK_COMPARE_MATH(CENTRY_F32)},
    {WK_BINARY_MATH(ENTRY_F64) WK_COMPARE_MATH(CENTRY_F64)},
    {WK_BINARY_MATH(ENTRY_I64) WK_COMPARE_MATH(CENTRY_I64) WK_BINARY_INT_ONLY_MATH(IENTRY_I64)}};

/* 0 float32, 1 float64, 2 int64: the compute dtype of operand `k`. */
static int type_slot(const wk_iter *it, int k) {
    return it->dtypes[k] == WICK_FLOAT32 ? 0 : it->dtypes[k] == WICK_FLOAT64 ? 1 : 2;
}

wick_status cpu_unary(wick_unary_op op, const wk_iter *it) {
    int slot = type_slot(it, 1);
    cpu_run_fn fn = slot == 0 && vec_unary_runs[op] ? vec_unary_runs[op] : unary_runs[slot][op];
    return cpu_run(it, fn, NULL);
}

cpu_run_fn cpu_binary_run(int op, wick_dtype compute) {
    return binary_runs[compute == WICK_FLOAT32 ? 0 : compute == WICK_FLOAT64 ? 1 : 2][op];
}

wick_status cpu_binary(wick_binary_op op, const wk_iter *it, double alpha) {
    return cpu_run(it, binary_runs[type_slot(it, 1)][op], &alpha);
}

/* clamp: NaN passes through, like PyTorch */
typedef struct {
    double lo, hi;
} bounds;
#define CLAMP_RUN(NAME, T, LO, HI)                                                              \
    static void NAME(char **p, const int64_t *s, int64_t n, const void *extra) {                \
        const bounds *b = extra;                                                                \
        T lo = LO, hi = HI;                                                                     \
        T *o = (T *)p[0];                                                                       \
        const T *in = (const T *)p[1];                                                          \
        for (int64_t i = 0; i < n; i++) {                                                       \
            T x = in[i * s[1]];                                                                 \
            o[i * s[0]] = x < lo ? lo : x > hi ? hi : x;                                        \
        }                                                                                       \
    }
CLAMP_RUN(clamp_f32, float, (float)b->lo, (float)b->hi)
CLAMP_RUN(clamp_f64, double, b->lo, b->hi)
CLAMP_RUN(clamp_i64, int64_t, wk_clamp_lo_i64(b->lo), wk_clamp_hi_i64(b->hi))

wick_status cpu_clamp(const wk_iter *it, double lo, double hi) {
    static const cpu_run_fn runs[3] = {clamp_f32, clamp_f64, clamp_i64};
    bounds b = {lo, hi};
    return cpu_run(it, runs[type_slot(it, 1)], &b);
}

#define WHERE_RUN(NAME, T)                                                                      \
    static void NAME(char **p, const int64_t *s, int64_t n, const void *extra) {                \
        (void)extra;                                                                            \
        T *o = (T *)p[0];                                                                       \
        const uint8_t *c = (const uint8_t *)p[1];                                               \
        const T *x = (const T *)p[2], *y = (const T *)p[3];                                     \
        for (int64_t i = 0; i < n; i++) o[i * s[0]] = c[i * s[1]] ? x[i * s[2]] : y[i * s[3]];  \
    }
WHERE_RUN(where_f32, float)
WHERE_RUN(where_f64, double)
WHERE_RUN(where_i64, int64_t)

wick_status cpu_where(const wk_iter *it) {
    static const cpu_run_fn runs[3] = {where_f32, where_f64, where_i64};
    return cpu_run(it, runs[type_slot(it, 2)], NULL);
}
