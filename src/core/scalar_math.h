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

/* A product rounded on its own. nvcc fuses `a + alpha * b` into one FMA (one
 * rounding) where the CPU rounds twice; the intrinsics are never fused, so the
 * GPU gives the CPU's bits. */
WK_HD float wk_mulf(float a, float b) {
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
WK_HD double wk_muld(double a, double b) {
#ifdef __CUDA_ARCH__
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

/* NaN-propagating max/min, like torch.maximum. */
WK_HD float wk_maxf(float a, float b) { return (a != a || a > b) ? a : b; }
WK_HD float wk_minf(float a, float b) { return (a != a || a < b) ? a : b; }
WK_HD double wk_maxd(double a, double b) { return (a != a || a > b) ? a : b; }
WK_HD double wk_mind(double a, double b) { return (a != a || a < b) ? a : b; }
WK_HD int64_t wk_maxi(int64_t a, int64_t b) { return a > b ? a : b; }
WK_HD int64_t wk_mini(int64_t a, int64_t b) { return a < b ? a : b; }
/* The integer bounds of clamp on an integer tensor: the integers inside
 * [lo, hi], saturated at the int64 range (a double outside it converts to no
 * int64; the core refuses NaN bounds for integer tensors). */
WK_HD int64_t wk_clamp_lo_i64(double lo) {
    return lo < -9.2e18 ? INT64_MIN : lo > 9.2e18 ? INT64_MAX : (int64_t)ceil(lo);
}
WK_HD int64_t wk_clamp_hi_i64(double hi) {
    return hi > 9.2e18 ? INT64_MAX : hi < -9.2e18 ? INT64_MIN : (int64_t)floor(hi);
}
/* integer arithmetic wraps around like PyTorch's instead of being undefined */
WK_HD int64_t wk_wrap_add(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }
WK_HD int64_t wk_wrap_mul(int64_t a, int64_t b) { return (int64_t)((uint64_t)a * (uint64_t)b); }
/* pow of a number exponent with PyTorch's special exponents (its
 * pow_tensor_scalar kernels): a square or a cube as products, 0.5 and -0.5 as
 * (r)sqrt, -1 and -2 as reciprocals, pow elsewhere. A scalar exponent is the
 * same for a whole run, so the compiler takes the branches out of the loop and
 * the products vectorise. A tensor exponent takes pow itself, as PyTorch's
 * pow_tensor_tensor (Bloom's alibi slopes, base ** int32 powers): the binary
 * kernel's alpha says which (1: a number, elementwise.c). */
WK_HD float wk_powf(float a, float b) {
    return b == 2.0f    ? a * a
           : b == 3.0f  ? a * a * a
           : b == 0.5f  ? sqrtf(a)
           : b == -1.0f ? 1.0f / a
           : b == -2.0f ? 1.0f / (a * a)
           : b == -0.5f ? 1.0f / sqrtf(a)
                        : powf(a, b);
}
WK_HD double wk_powd(double a, double b) {
    return b == 2.0    ? a * a
           : b == 3.0  ? a * a * a
           : b == 0.5  ? sqrt(a)
           : b == -1.0 ? 1.0 / a
           : b == -2.0 ? 1.0 / (a * a)
           : b == -0.5 ? 1.0 / sqrt(a)
                       : pow(a, b);
}
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

/* GELU's tanh form, x/2 (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3),
 * written x sigmoid(2u), which has no cancellation for negative x. */
WK_HD float wk_gelu_tanhf(float x) {
    return x / (1.0f + expf(-1.5957691216057308f * (x + 0.044715f * x * x * x)));
}
WK_HD double wk_gelu_tanh(double x) { return x / (1.0 + exp(-1.5957691216057308 * (x + 0.044715 * x * x * x))); }

/* ---- special functions, in double (the float kernels round the double result) ---- */

/* log|Gamma(x)|: glibc's lgamma writes the global signgam (a data race between
 * threads), so the CPU calls lgamma_r; +inf at the poles 0, -1, -2, ... */
WK_HD double wk_lgamma(double x) {
#ifdef __CUDA_ARCH__
    return lgamma(x);
#else
    int sign;
    return lgamma_r(x, &sign);
#endif
}

/* digamma (psi = Gamma'/Gamma), as PyTorch's: -inf at +0 (+inf at -0), NaN at
 * the negative integers, reflection below 0, the recurrence psi(x) = psi(x+1) -
 * 1/x up to 10, then the asymptotic series (Abramowitz-Stegun 6.3.18). */
WK_HD double wk_digamma(double x) {
    if (x == 0) return copysign(INFINITY, -x);
    if (x != x || x == INFINITY) return x;
    if (x < 0) {
        if (x == floor(x)) return NAN;
        /* psi(1 - x) - pi / tan(pi x), with the fraction of x (tan's argument exact) */
        double r = x - trunc(x);
        return wk_digamma(1 - x) - 3.14159265358979323846 / tan(3.14159265358979323846 * r);
    }
    double acc = 0;
    while (x < 10) {
        acc -= 1 / x;
        x += 1;
    }
    double y = 1 / (x * x);
    double tail = y * (1.0 / 12 - y * (1.0 / 120 - y * (1.0 / 252 - y * (1.0 / 240 - y * (1.0 / 132 - y * (691.0 / 32760 - y / 12))))));
    return acc + log(x) - 0.5 / x - tail;
}

/* trigamma (polygamma(1, x), digamma's derivative): +inf at 0 and the negative
 * integers, reflection pi^2 / sin^2(pi x) - psi1(1 - x) below 0, the recurrence
 * psi1(x) = psi1(x+1) + 1/x^2 up to 10, then the asymptotic series (6.4.12). */
WK_HD double wk_trigamma(double x) {
    if (x != x) return x;
    if (x == INFINITY) return 0;
    if (x <= 0) {
        if (x == floor(x)) return INFINITY;
        double s = sin(3.14159265358979323846 * (x - trunc(x)));
        return 9.86960440108935861883 / (s * s) - wk_trigamma(1 - x);
    }
    double acc = 0;
    while (x < 10) {
        acc += 1 / (x * x);
        x += 1;
    }
    double y = 1 / (x * x);
    /* 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7) - 1/(30x^9) + 5/(66x^11) - 691/(2730x^13) + 7/(6x^15) */
    double tail = (1.0 / 6 - y * (1.0 / 30 - y * (1.0 / 42 - y * (1.0 / 30 - y * (5.0 / 66 - y * (691.0 / 2730 - y * 7.0 / 6)))))) * y;
    return acc + 1 / x + 0.5 * y + tail / x;
}

/* erfinv: +-inf at +-1, NaN outside [-1, 1]; a starting point from Giles'
 * single-precision approximation ("Approximating the erfinv function", 2010),
 * then Halley's steps on erf (on erfc beyond 0.5, where 1 - |y| is exact) until
 * they stop moving: the double result is good to a few ulp, also in the tail
 * beyond float's range where the starting point is poor. */
WK_HD double wk_erfinv(double y) {
    double a = fabs(y);
    if (!(a <= 1)) return NAN;
    if (a == 1) return copysign(INFINITY, y);
    if (a == 0) return y;
    double w = -log((1 - a) * (1 + a)), p;
    if (w < 5) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    double x = p * a;
    for (int i = 0; i < 12; i++) { /* Halley's steps (erf'' = -2x erf'), until they no longer move x */
        double r = a > 0.5 ? (1 - a) - erfc(x) : erf(x) - a; /* erf(x) - a, without cancellation */
        double step = r / (1.1283791670955126 * exp(-x * x));
        step /= 1 + x * step;
        x -= step;
        if (fabs(step) <= 1e-16 * x) break;
    }
    return copysign(x, y);
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
    X(GELU, 0.5f * x * (1.0f + erff(x * 0.70710678f)), 0.5 * x * (1.0 + erf(x * 0.7071067811865476)))        \
    X(GELU_TANH, wk_gelu_tanhf(x), wk_gelu_tanh(x))                                                         \
    X(SIN, sinf(x), sin(x))                                                                     \
    X(COS, cosf(x), cos(x))                                                                     \
    X(TAN, tanf(x), tan(x))                                                                     \
    X(ASIN, asinf(x), asin(x))                                                                  \
    X(ACOS, acosf(x), acos(x))                                                                  \
    X(ATAN, atanf(x), atan(x))                                                                  \
    X(SINH, sinhf(x), sinh(x))                                                                  \
    X(COSH, coshf(x), cosh(x))                                                                  \
    X(LOG2, log2f(x), log2(x))                                                                  \
    X(LOG10, log10f(x), log10(x))                                                               \
    X(LOG1P, log1pf(x), log1p(x))                                                               \
    X(EXPM1, expm1f(x), expm1(x))                                                               \
    X(RSQRT, 1.0f / sqrtf(x), 1.0 / sqrt(x))                                                    \
    X(RECIPROCAL, 1.0f / x, 1.0 / x)                                                            \
    X(FRAC, x - truncf(x), x - trunc(x))                                                        \
    X(FLOOR, floorf(x), floor(x))                                                               \
    X(CEIL, ceilf(x), ceil(x))                                                                  \
    X(ROUND, rintf(x), rint(x))                                                                 \
    X(TRUNC, truncf(x), trunc(x))                                                               \
    X(SIGN, (float)((x > 0) - (x < 0)), (double)((x > 0) - (x < 0))) /* PyTorch's: 0 of NaN and -0 */ \
    X(ERFC, erfcf(x), erfc(x))                                                                  \
    X(ERFINV, (float)wk_erfinv(x), wk_erfinv(x))                                                \
    X(LGAMMA, (float)wk_lgamma(x), wk_lgamma(x))                                                \
    X(DIGAMMA, (float)wk_digamma(x), wk_digamma(x))                                             \
    X(TRIGAMMA, (float)wk_trigamma(x), wk_trigamma(x))

/* Unary ops on integers only (elementwise.c refuses floating inputs). */
#define WK_UNARY_INT_ONLY_MATH(X) X(BITWISE_NOT, ~x)

/* Unary ops on int64 (the float-only ones never reach an integer kernel). */
#define WK_UNARY_INT_MATH(X)                                                                    \
    WK_UNARY_INT_ONLY_MATH(X)                                                                   \
    X(NEG, (int64_t)(0ULL - (uint64_t)x))                                                       \
    X(ABS, x < 0 ? (int64_t)(0ULL - (uint64_t)x) : x)                                           \
    X(RELU, x < 0 ? 0 : x)                                                                      \
    X(FLOOR, x) X(CEIL, x) X(ROUND, x) X(TRUNC, x)                                              \
    X(SIGN, (int64_t)((x > 0) - (x < 0)))

/* fmod and remainder of integers: 0 for a zero divisor (as DIV), never C's
 * INT64_MIN % -1 */
WK_HD int64_t wk_fmodi(int64_t a, int64_t b) { return b == 0 || b == -1 ? 0 : a % b; }
WK_HD int64_t wk_remi(int64_t a, int64_t b) {
    int64_t r = wk_fmodi(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
/* Python's % on floats: fmod, moved to the divisor's sign */
WK_HD float wk_remf(float a, float b) {
    float r = fmodf(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}
WK_HD double wk_remd(double a, double b) {
    double r = fmod(a, b);
    return r != 0 && (r < 0) != (b < 0) ? r + b : r;
}

/* Binary ops producing the compute type: X(ID, float, double, int64). */
#define WK_BINARY_MATH(X)                                                                       \
    X(ADD, a + wk_mulf(alpha, b), a + wk_muld(alpha, b), wk_wrap_add(a, wk_wrap_mul(alpha, b)))   \
    X(SUB, a - wk_mulf(alpha, b), a - wk_muld(alpha, b), wk_wrap_add(a, wk_wrap_mul(-alpha, b)))  \
    X(MUL, a * b, a * b, wk_wrap_mul(a, b))                                                     \
    X(DIV, a / b, a / b, b == 0 ? 0 : (b == -1 ? wk_wrap_mul(a, -1) : a / b))                   \
    X(POW, alpha != 0 ? wk_powf(a, b) : powf(a, b), alpha != 0 ? wk_powd(a, b) : pow(a, b), wk_ipow(a, b)) \
    X(MAXIMUM, wk_maxf(a, b), wk_maxd(a, b), wk_maxi(a, b))                                     \
    X(MINIMUM, wk_minf(a, b), wk_mind(a, b), wk_mini(a, b))                                     \
    X(FMOD, fmodf(a, b), fmod(a, b), wk_fmodi(a, b))                                            \
    X(REMAINDER, wk_remf(a, b), wk_remd(a, b), wk_remi(a, b))                                   \
    X(ATAN2, atan2f(a, b), atan2(a, b), (int64_t)atan2((double)a, (double)b))

/* Shifts with C's undefined cases defined: a negative amount or one of at
 * least 64 bits shifts everything out (a negative value right: -1). Narrower
 * integer dtypes compute in int64 and wrap when stored, which gives their own
 * width's results. */
WK_HD int64_t wk_shli(int64_t a, int64_t b) { return b < 0 || b >= 64 ? 0 : (int64_t)((uint64_t)a << b); }
WK_HD int64_t wk_shri(int64_t a, int64_t b) { return b < 0 || b >= 64 ? (a < 0 ? -1 : 0) : a >> b; }

/* Binary ops on integers and bool only (elementwise.c refuses floating inputs):
 * X(ID, int64). */
#define WK_BINARY_INT_ONLY_MATH(X)                                                              \
    X(BITWISE_AND, a & b) X(BITWISE_OR, a | b) X(BITWISE_XOR, a ^ b) X(LSHIFT, wk_shli(a, b))    \
    X(RSHIFT, wk_shri(a, b))

/* Comparisons, producing bool for any compute type. */
#define WK_COMPARE_MATH(X)                                                                      \
    X(EQ, a == b) X(NE, a != b) X(LT, a < b) X(LE, a <= b) X(GT, a > b) X(GE, a >= b)

/* The random generator's draws (random.c reserves them; every backend's random
 * kernel computes them): a counter-based generator, so draw `counter` of stream
 * `seed` is a pure function of the two and any backend, in any order, gives
 * the same numbers. */
WK_HD uint64_t wk_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
/* Uniform double in [0, 1) for draw number `counter` of stream `seed`. */
WK_HD double wk_uniform(uint64_t seed, uint64_t counter) {
    uint64_t z = wk_mix64(seed * 0x9e3779b97f4a7c15ULL + wk_mix64(counter + 0x632be59bd9b4e019ULL));
    return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

#endif
