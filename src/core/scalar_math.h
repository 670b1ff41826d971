/* The arithmetic of every elementwise op, written once as scalar expressions.
 * Each backend instantiates these lists for its compute types (float, double,
 * int64_t), so what the CPU tests prove holds for the GPU kernels too. In each
 * expression `x` is the input of a unary op, `a` and `b` the inputs of a binary
 * op, `alpha` the scale of add/sub, and T the compute type. */
#ifndef WICK_SCALAR_MATH_H
#define WICK_SCALAR_MATH_H

#include <math.h>
#include <stdint.h>

#ifdef __CUDACC__
#define WK_HD __host__ __device__ __forceinline__
#else
#define WK_HD static inline
#endif

/* NaN-propagating max/min, like torch.maximum. */
WK_HD float wk_maxf(float a, float b) { return (a != a || a > b) ? a : b; }
WK_HD float wk_minf(float a, float b) { return (a != a || a < b) ? a : b; }
WK_HD double wk_maxd(double a, double b) { return (a != a || a > b) ? a : b; }
WK_HD double wk_mind(double a, double b) { return (a != a || a < b) ? a : b; }
WK_HD int64_t wk_maxi(int64_t a, int64_t b) { return a > b ? a : b; }
WK_HD int64_t wk_mini(int64_t a, int64_t b) { return a < b ? a : b; }
/* integer arithmetic wraps around like PyTorch's instead of being undefined */
WK_HD int64_t wk_wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
WK_HD int64_t wk_wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
WK_HD int64_t wk_ipow(int64_t a, int64_t b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    int64_t r = 1;
    while (b) {
        if (b & 1) r = wk_wrap_mul(r, a);
        a = wk_wrap_mul(a, a);
        b >>= 1;
    }
    return r;
}

/* Unary ops on floating types: X(ID, float expression, double expression). */
#define WK_UNARY_FLOAT_MATH(X)                                                                  \
    X(NEG, -x, -x)                                                                              \
    X(ABS, fabsf(x), fabs(x))                                                                   \
    X(EXP, expf(x), exp(x))                                                                     \
    X(LOG, logf(x), log(x))                                                                     \
    X(SQRT, sqrtf(x), sqrt(x))                                                                  \
    X(TANH, tanhf(x), tanh(x))                                                                  \
    X(SIGMOID, 1.0f / (1.0f + expf(-x)), 1.0 / (1.0 + exp(-x)))                                 \
    X(RELU, x < 0 ? 0.0f : x, x < 0 ? 0.0 : x)                                                 \
    X(ERF, erff(x), erf(x))                                                                     \
    X(GELU, 0.5f * x * (1.0f + erff(x * 0.70710678f)), 0.5 * x * (1.0 + erf(x * 0.7071067811865476)))

/* Unary ops on int64 (the float-only ones never reach an integer kernel). */
#define WK_UNARY_INT_MATH(X)                                                                    \
    X(NEG, (int64_t)(0ULL - (uint64_t)x))                                                       \
    X(ABS, x < 0 ? (int64_t)(0ULL - (uint64_t)x) : x)                                           \
    X(RELU, x < 0 ? 0 : x)

/* Binary ops producing the compute type: X(ID, float, double, int64). */
#define WK_BINARY_MATH(X)                                                                       \
    X(ADD, a + alpha * b, a + alpha * b, wk_wrap_add(a, wk_wrap_mul(alpha, b)))                 \
    X(SUB, a - alpha * b, a - alpha * b, wk_wrap_add(a, wk_wrap_mul(-alpha, b)))                \
    X(MUL, a * b, a * b, wk_wrap_mul(a, b))                                                     \
    X(DIV, a / b, a / b, b == 0 ? 0 : (b == -1 ? wk_wrap_mul(a, -1) : a / b))                   \
    X(POW, powf(a, b), pow(a, b), wk_ipow(a, b))                                                \
    X(MAXIMUM, wk_maxf(a, b), wk_maxd(a, b), wk_maxi(a, b))                                     \
    X(MINIMUM, wk_minf(a, b), wk_mind(a, b), wk_mini(a, b))

/* Comparisons, producing bool for any compute type. */
#define WK_COMPARE_MATH(X)                                                                      \
    X(EQ, a == b) X(NE, a != b) X(LT, a < b) X(LE, a <= b) X(GT, a > b) X(GE, a >= b)

#endif
