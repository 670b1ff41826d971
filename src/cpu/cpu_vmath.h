/* Vectorised float32 math for the CPU kernels: exp, tanh, erf, sigmoid on 16
 * lanes at a time, written once with GCC/Clang vector extensions. The code is
 * plain C over 64-byte vectors; a kernel marked WK_VSIMD is compiled for
 * AVX-512 (x86-64-v4), AVX2+FMA (x86-64-v3) and the baseline, and the loader
 * picks by CPU (function multiversioning, like WK_SIMD in cpu.h). On other
 * CPUs the compiler splits the vectors into what the target has.
 *
 * Accuracy (spec/norm_spec.lua checks it against libm over the float range,
 * including denormals, huge values, infinities and NaN): a few ulp.
 *   exp:  Cody-Waite reduction by ln 2, degree-7 polynomial (Cephes' expf
 *         coefficients), scaling in two steps so denormal results are right;
 *         exp(x) = inf above 88.72284, 0 below -103.97, NaN stays NaN. Within
 *         1 ulp; the elementwise exp op uses wk_vexp_rounded instead (the
 *         correctly rounded value but about once in 10^5), the fused kernels
 *         (softmax, cross entropy) this one.
 *   tanh: x + x^3 P(x^2) for |x| < 0.625 (Cephes' tanhf coefficients), else
 *         sign(x) (1 - 2 / (exp(2|x|) + 1)).
 *   erf:  x P(x^2) for |x| < 1, else 1 - exp(-x^2 + R(|x|)), P and R fitted by
 *         least squares to erf and log(erfc(x)) + x^2 (relative error 1.4e-9
 *         and absolute 6.5e-9 in double). */
#ifndef WICK_CPU_VMATH_H
#define WICK_CPU_VMATH_H

#include <stdint.h>
#include <string.h>
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__)
/* 64-byte vectors are only ever passed between always_inline helpers */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

#define WK_VL 16 /* lanes */
typedef float wk_vf __attribute__((vector_size(64)));
typedef int32_t wk_vi __attribute__((vector_size(64)));
typedef uint32_t wk_vu __attribute__((vector_size(64)));

/* A kernel compiled for AVX-512, AVX2+FMA and the baseline (see the top). */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(WICK_TSAN)
#define WK_VSIMD __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define WK_VSIMD
#endif
/* helpers are inlined into each clone, so they get its instruction set */
#define WK_VI static inline __attribute__((always_inline))

WK_VI wk_vf wk_vsplat(float c) { return (wk_vf){0} + c; }
WK_VI wk_vf wk_vload(const float *p) {
    wk_vf v;
    memcpy(&v, p, sizeof v);
    return v;
}
WK_VI void wk_vstore(float *p, wk_vf v) { memcpy(p, &v, sizeof v); }
/* The first n (< WK_VL) lanes from p, the rest `fill`. */
WK_VI wk_vf wk_vload_part(const float *p, int64_t n, float fill) {
    float b[WK_VL];
    for (int i = 0; i < WK_VL; i++) b[i] = i < n ? p[i] : fill;
    return wk_vload(b);
}
WK_VI void wk_vstore_part(float *p, wk_vf v, int64_t n) {
    float b[WK_VL];
    wk_vstore(b, v);
    for (int64_t i = 0; i < n; i++) p[i] = b[i];
}
/* mask ? a : b, mask lanes all ones or all zeros (a comparison's result) */
WK_VI wk_vf wk_vsel(wk_vi mask, wk_vf a, wk_vf b) { return (wk_vf)((mask & (wk_vi)a) | (~mask & (wk_vi)b)); }
WK_VI wk_vf wk_vabs(wk_vf x) { return (wk_vf)((wk_vi)x & 0x7fffffff); }
/* |a| with the sign of s */
WK_VI wk_vf wk_vcopysign(wk_vf a, wk_vf s) {
    return (wk_vf)(((wk_vi)a & 0x7fffffff) | ((wk_vi)s & (int32_t)0x80000000u));
}
/* Comparisons of two vectors without vector comparison operators: GCC 12
 * turns those (unlike comparisons with a constant) into scalar code when they
 * sit in these helpers inlined into target_clones functions, so masks come
 * from sign bits instead.
 * wk_vlt(a, b): a < b for numbers, exact with denormals (a - b is 0 only when
 * a == b); callers keep NaN out or handle it (wk_visnan). */
WK_VI wk_vi wk_vlt(wk_vf a, wk_vf b) { return (wk_vi)(a - b) >> 31; }
WK_VI wk_vi wk_visnan(wk_vf x) { return (0x7f800000 - ((wk_vi)x & 0x7fffffff)) >> 31; }
/* lanes where the bits of x equal those of c */
WK_VI wk_vi wk_vsame(wk_vf x, float c) {
    wk_vi d = (wk_vi)x ^ (wk_vi)wk_vsplat(c);
    return ((d - 1) & ~d) >> 31;
}
/* NaN-propagating max, like the scalar loops' `x > m || x != x` (equal
 * infinities give NaN in b - a, but either is then the answer) */
WK_VI wk_vf wk_vmax(wk_vf a, wk_vf b) {
    wk_vi nb = wk_visnan(b);
    return wk_vsel(wk_visnan(a) | (wk_vlt(b, a) & ~nb), a, b);
}
/* horizontal sum and (NaN-propagating) max, as trees of vector shuffles */
#define WK_VHALVES(v, OP)                                                                        \
    do {                                                                                         \
        v = OP(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7)); \
        v = OP(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8, 9, 10, 11)); \
        v = OP(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14, 15, 12, 13)); \
        v = OP(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14)); \
    } while (0)
WK_VI wk_vf wk_vadd_(wk_vf a, wk_vf b) { return a + b; }
WK_VI float wk_vhsum(wk_vf v) {
    WK_VHALVES(v, wk_vadd_);
    return v[0];
}
WK_VI float wk_vhmax(wk_vf v) {
    WK_VHALVES(v, wk_vmax);
    return v[0];
}
/* The lanes of the last whole vector of a row (the one ending at the row's
 * end) that the row's full vectors before it did not cover: the last `rest`. */
WK_VI wk_vi wk_vtail(int64_t rest) {
    const wk_vi iota = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    return ((int32_t)(WK_VL - rest) - 1 - iota) >> 31; /* iota >= WK_VL - rest */
}

/* exp(x) */
WK_VI wk_vf wk_vexp(wk_vf x) {
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    wk_vi nan = x != x;
    wk_vf xc = wk_vsel(x < -104.0f, wk_vsplat(-104.0f), x);
    xc = wk_vsel(xc > 89.0f, wk_vsplat(89.0f), xc);
    xc = wk_vsel(nan, wk_vsplat(0), xc);
    wk_vf t = xc * 1.44269504088896341f + magic;
    wk_vf n = t - magic;
    wk_vi ni = (wk_vi)t - (wk_vi)wk_vsplat(magic);
    wk_vf r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    wk_vf y = 1.9875691500e-4f * r + 1.3981999507e-3f;
    y = y * r + 8.3334519073e-3f;
    y = y * r + 4.1665795894e-2f;
    y = y * r + 1.6666665459e-1f;
    y = y * r + 5.0000001201e-1f;
    y = y * (r * r) + r + 1.0f;
    wk_vi n1 = ni >> 1, n2 = ni - n1; /* 2^n in two factors: n reaches -150 and 128 */
    wk_vf s1 = (wk_vf)((n1 + 127) << 23), s2 = (wk_vf)((n2 + 127) << 23);
    return wk_vsel(nan, x, y * s1 * s2);
}

/* exp(x) of WK_VL doubles for |x| <= 110: n = round(x / ln 2), r = x - n ln 2 (ln 2
 * in two parts, the first of 32 bits so n times it is exact), e^r by its
 * Taylor polynomial of degree 10 (|r| <= ln2/2: truncation below 3e-13
 * relative), times 2^n made in the exponent bits (n in [-159, 159]). */
typedef double wk_vd __attribute__((vector_size(128))); /* WK_VL doubles */
typedef int64_t wk_vl __attribute__((vector_size(128)));
WK_VI wk_vd wk_vexp_f64(wk_vd x) {
    const wk_vd magic = (wk_vd){0} + 6755399441055744.0; /* 1.5 * 2^52: adding it rounds to an integer */
    wk_vd t = x * 1.4426950408889634 + magic;
    wk_vd n = t - magic;
    wk_vl ni = (wk_vl)t - (wk_vl)magic;
    wk_vd r = x - n * 0.6931471803691238;
    r = r - n * 1.9082149292705877e-10;
    wk_vd p = r * (1.0 / 3628800) + 1.0 / 362880; /* 1/k!, k = 10 down to 0 */
    p = p * r + 1.0 / 40320;
    p = p * r + 1.0 / 5040;
    p = p * r + 1.0 / 720;
    p = p * r + 1.0 / 120;
    p = p * r + 1.0 / 24;
    p = p * r + 1.0 / 6;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    return p * (wk_vd)((ni + 1023) << 52);
}
/* exp(x) rounded once from a double within 3e-13 of it: the correctly
 * rounded float but where exp(x) lies that close to a midpoint between two
 * floats (about one input in 10^5); denormal results, inf above 88.72284 and
 * 0 below -103.97 by the one rounding; NaN stays NaN. Twice wk_vexp's work. */
WK_VI wk_vf wk_vexp_rounded(wk_vf x) {
    wk_vi nan = x != x;
    wk_vf xc = wk_vsel(x < -110.0f, wk_vsplat(-110.0f), x);
    xc = wk_vsel(xc > 100.0f, wk_vsplat(100.0f), xc);
    xc = wk_vsel(nan, wk_vsplat(0), xc);
    return wk_vsel(nan, x, __builtin_convertvector(wk_vexp_f64(__builtin_convertvector(xc, wk_vd)), wk_vf));
}

/* exp(x) for the arguments of softmax rows (x - max <= 0): the same
 * reduction, a degree-6 polynomial (minimax, 3.3e-9 relative on [-ln2/2,
 * ln2/2]) and one scaling, no overflow path: results below 2^-126 (x < -87.34)
 * are 0 or normal instead of denormals, x above 88 is not handled. NaN stays
 * NaN (the scale is then 0, NaN * 0). Half the work of wk_vexp. */
WK_VI wk_vf wk_vexp_le0(wk_vf x) {
    const float magic = 12582912.0f + 127.0f; /* rounds to an integer, plus the exponent's bias */
    x = wk_vsel(x < -87.5f, wk_vsplat(-88.0f), x); /* n = -127 there: the scale is 0 */
    wk_vf k = x * 1.44269504088896341f + magic;
    wk_vf n = k - magic;
    wk_vf r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    wk_vf p = 0.00138131308f * r + 0.008369416f;
    p = p * r + 0.041668456f;
    p = p * r + 0.166665152f;
    p = p * r + 0.49999994f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p * (wk_vf)((wk_vi)k << 23); /* (n + 127) << 23 is 2^n */
}
/* log(x) for x >= 0 (the sums of softmax rows): Cephes' logf (x = 2^e m, m in
 * [sqrt(1/2), sqrt 2), log(m) = f - f^2/2 + f^3 P(f), f = m - 1, ln 2 in two
 * parts), about 1 ulp for normal x; 0 gives -inf, NaN stays NaN, denormals
 * and infinities are not handled (sums are >= 1 or 0 there). */
WK_VI wk_vf wk_vlog_sum(wk_vf x) {
    wk_vi bits = (wk_vi)x;
    wk_vi e = (bits >> 23) - 127;
    wk_vf m = (wk_vf)((bits & 0x007fffff) | 0x3f800000); /* [1, 2) */
    wk_vi big = (wk_vi)(1.41421356f - m) >> 31;         /* m > sqrt 2: halve it */
    m = wk_vsel(big, m * 0.5f, m);
    wk_vf ef = __builtin_convertvector(e - big, wk_vf);  /* big is -1 there */
    wk_vf f = m - 1.0f, z = f * f;
    wk_vf p = 7.0376836292e-2f * f - 1.1514610310e-1f;
    p = p * f + 1.1676998740e-1f;
    p = p * f - 1.2420140846e-1f;
    p = p * f + 1.4249322787e-1f;
    p = p * f - 1.6668057665e-1f;
    p = p * f + 2.0000714765e-1f;
    p = p * f - 2.4999993993e-1f;
    p = p * f + 3.3333331174e-1f;
    wk_vf y = f * z * p + ef * -2.12194440e-4f - 0.5f * z;
    y = f + y + ef * 0.693359375f;
    y = wk_vsel(wk_vsame(x, 0.0f), wk_vsplat(-INFINITY), y);
    return wk_vsel(wk_visnan(x), x, y);
}
/* log(x) for every x: wk_vlog_sum, with denormals scaled by 2^23 first; +-0
 * gives -inf, x < 0 NaN, +inf stays +inf, NaN NaN (masks from the bits, as
 * above). About 1 ulp. */
WK_VI wk_vf wk_vlog(wk_vf x) {
    wk_vi bits = (wk_vi)x, mag = bits & 0x7fffffff, sign = bits >> 31;
    wk_vi zero = (mag - 1) >> 31;
    wk_vi tiny = ((mag - 0x00800000) >> 31) & ~zero & ~sign;
    wk_vi inf = ((mag ^ 0x7f800000) - 1) >> 31 & ~sign;
    /* (negative lanes and zeros, replaced below, go in as 1: wk_vlog_sum takes x >= 0) */
    wk_vf y = wk_vlog_sum(wk_vsel(sign | zero, wk_vsplat(1.0f), wk_vsel(tiny, x * 8388608.0f, x)));
    y = wk_vsel(tiny, y - 15.942385152878742f, y); /* log(2^23) */
    y = wk_vsel(inf, x, y);
    y = wk_vsel(sign & ~zero, wk_vsplat(NAN), y);
    return wk_vsel(zero, wk_vsplat(-INFINITY), y);
}
/* sin(x) (cosine = 0) or cos(x) (1) for |x| < 8192, evaluated in double and
 * rounded once to float: Cephes' double sin/cos (the octant of x by 4/pi, pi/4
 * in three parts, one of two polynomials on [-pi/4, pi/4], 1e-16), so within
 * half an ulp but for rare double roundings, as PyTorch's (Cephes' float
 * polynomials reached 1.25 ulp: positional-encoding tables differed in the
 * last bit). Callers keep larger |x|, infinities and NaN out
 * (wk_vtrig_in_range), which the reduction would lose. */
WK_VI wk_vf wk_vsincos(wk_vf xf, int cosine) {
    const wk_vl sign_bit = (wk_vl){0} | INT64_MIN;
    wk_vd x = __builtin_convertvector(xf, wk_vd);
    wk_vd ax = (wk_vd)((wk_vl)x & ~sign_bit);
    wk_vl j = __builtin_convertvector(ax * 1.27323954473516268615, wk_vl);
    j += j & 1; /* the even octant: [-pi/4, pi/4] around a multiple of pi/2 */
    wk_vd y = __builtin_convertvector(j, wk_vd);
    wk_vd z = ((ax - y * 7.85398125648498535156e-1) - y * 3.77489470793079817668e-8) - y * 2.69515142907905952645e-15;
    wk_vd zz = z * z;
    wk_vd s = ((((1.58962301576546568060e-10 * zz - 2.50507477628578072866e-8) * zz + 2.75573136213857245213e-6) * zz -
                1.98412698295895385996e-4) * zz + 8.33333333332211858878e-3) * zz - 1.66666666666666307295e-1;
    s = z + z * zz * s;
    wk_vd c = ((((-1.13585365213876817300e-11 * zz + 2.08757008419747316778e-9) * zz - 2.75573141792967388112e-7) * zz +
                2.48015872888517045348e-5) * zz - 1.38888888888730564116e-3) * zz + 4.16666666666665929218e-2;
    c = 1.0 - 0.5 * zz + zz * zz * c;
    wk_vl odd = -((j >> 1) & 1);             /* all ones where the other polynomial serves */
    wk_vl flip = -((j >> 2) & 1) & sign_bit; /* the sign bit where the result changes sign */
    wk_vl r;
    if (cosine) {
        r = ((wk_vl)s & odd) | ((wk_vl)c & ~odd);
        flip ^= odd & sign_bit;
    } else {
        r = ((wk_vl)c & odd) | ((wk_vl)s & ~odd);
        flip ^= (wk_vl)x & sign_bit; /* sin is odd */
    }
    return __builtin_convertvector((wk_vd)(r ^ flip), wk_vf);
}
/* whether every lane is finite with |x| < 8192 (wk_vsincos's range) */
WK_VI int wk_vtrig_in_range(wk_vf x) {
    wk_vi out = ((wk_vi)wk_vsplat(8192.0f) - ((wk_vi)x & 0x7fffffff) - 1) >> 31; /* |x| >= 8192, inf, NaN */
    int any = 0;
    for (int i = 0; i < WK_VL; i++) any |= out[i];
    return !any;
}
/* max of two vectors where NaN need not propagate (a NaN in a softmax row
 * makes its sum NaN anyway), and its horizontal form */
WK_VI wk_vf wk_vmax_plain(wk_vf a, wk_vf b) { return wk_vsel(wk_vlt(a, b), b, a); }
WK_VI float wk_vhmax_plain(wk_vf v) {
    WK_VHALVES(v, wk_vmax_plain);
    return v[0];
}

/* 1 / (1 + exp(-x)), as e / (1 + e) with e = exp(x) for negative x (denormal
 * results instead of 1 / inf) */
WK_VI wk_vf wk_vsigmoid(wk_vf x) {
    wk_vf e = wk_vexp(-wk_vabs(x)), r = 1.0f / (1.0f + e);
    return wk_vsel((wk_vi)x >> 31, e * r, r); /* sign bit: x < 0 (NaN: NaN either way) */
}

/* tanh(x) */
WK_VI wk_vf wk_vtanh(wk_vf x) {
    wk_vf ax = wk_vabs(x), z = x * x;
    wk_vf p = -5.70498872745e-3f * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    wk_vf small = x + x * z * p;
    wk_vf large = wk_vcopysign(1.0f - 2.0f / (wk_vexp(ax + ax) + 1.0f), x);
    return wk_vsel(ax < 0.625f, small, large);
}

/* erf(x) */
WK_VI wk_vf wk_verf(wk_vf x) {
    wk_vf ax = wk_vabs(x), z = x * x;
    wk_vf p = 7.898132518888179e-05f * z - 0.0008024333501742288f;
    p = p * z + 0.005190051580059833f;
    p = p * z - 0.02685480768853367f;
    p = p * z + 0.11283612413718107f;
    p = p * z - 0.376126288427749f;
    p = p * z + 1.128379166510278f;
    wk_vf small = x * p;
    wk_vf a = wk_vsel(ax > 4.0f, wk_vsplat(4.0f), ax); /* erf(4) is 1 in float */
    wk_vf t = a - 2.5f;
    wk_vf r = -6.58234332714084e-08f * t + 1.6140493153668171e-06f;
    r = r * t - 1.297615635960119e-05f;
    r = r * t + 7.739447394479138e-05f;
    r = r * t - 0.0004207069048380434f;
    r = r * t + 0.002165160251378147f;
    r = r * t - 0.010858165548771352f;
    r = r * t + 0.0561063597493641f;
    r = r * t - 0.3526807403828994f;
    r = r * t - 1.5568152770531603f;
    wk_vf large = wk_vcopysign(1.0f - wk_vexp(r - a * a), x);
    return wk_vsel(ax < 1.0f, small, wk_vsel(x != x, x, large));
}

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2, the normal CDF, from erfc(z) / 2 with
 * z = |x| / sqrt 2: erfc(z) / 2 = t 2^(Q(t) - z^2 log2 e), t = 1 / (1 + 0.35 z),
 * Q of degree 6 fitted (Lawson's minimax iteration) to log2(erfc(z) / 2t) +
 * z^2 log2 e over z in [0, 5]: relative error 3.6e-7 in the fit; evaluated in
 * float32 1.1e-6 relative for |x| < 3, 1.9e-6 to |x| = 5 and 3.1e-6 to 7.07
 * (the rounding of x^2 weighs more as |x| grows; without FMA, the baseline
 * clone: 1.4e-6, 2.5e-6, 4.2e-6). One division; 2^y by its
 * own degree-5 polynomial on [-1/2, 1/2] (9.2e-8
 * relative) times t, with 2^n added to the exponent bits (t 2^r is at least
 * 2^-3 and n at least -40 on the fitted range, so the result stays normal).
 * From |x| = 7.0710678 (z = 5) on, and for NaN, the tail is 0: Phi(-7.07) is
 * 7.7e-13, below float32's resolution of Phi near 1 by 10^5 and, as x Phi(x),
 * below 4 ulp of x by 10^6 (so GELU is 0 there, not -5e-12). Lanes outside
 * that range compute garbage (inf, NaN) that the final mask clears, so there
 * is no clamp; the range test is an integer one on the bits of |x| (a float
 * comparison here is scalar code in GCC 12's AVX2 clone, 3x slower). Phi(x) for negative x is that erfc / 2 itself, so it keeps its
 * relative accuracy where x Phi(x) is tiny (1 + erf cancels there). About 16
 * multiply-adds a vector, which is what sets its speed (zmm multiply-adds
 * issue once a cycle on this machine's CPU). */
WK_VI wk_vf wk_vphi_tail(wk_vf x) { /* erfc(|x| / sqrt 2) / 2 */
    wk_vf a = wk_vabs(x);
    wk_vi in = ((wk_vi)a - 0x40e24630) >> 31; /* a < 7.0710678f on the bits (a >= 0; NaN: false) */
    wk_vf t = 1.0f / (1.0f + 0.247487373f * a); /* 0.35 / sqrt 2 */
    wk_vf q = 0.536343735f * t - 2.13772277f;
    q = q * t + 2.80691664f;
    q = q * t - 1.48580097f;
    q = q * t + 1.29907284f;
    q = q * t + 1.31062226f;
    q = q * t - 3.32943223f;
    wk_vf y = q - (a * a) * 0.72134752044448170f; /* log2 e / 2: z^2 log2 e */
    const float magic = 12582912.0f;            /* 1.5 * 2^23: adding it rounds to an integer */
    wk_vf k = y + magic, r = y - (k - magic);   /* y = n + r, r in [-1/2, 1/2] */
    wk_vf p = 0.0013264709850773215f * r + 0.009671499952673912f;
    p = p * r + 0.05550733581185341f;
    p = p * r + 0.24022242426872253f;
    p = p * r + 0.6931470036506653f;
    p = p * r + 1.0f;
    /* k's low bits hold n: n << 23 scales by 2^n (unsigned: the garbage of lanes
     * out of range, cleared by the mask, may wrap) */
    wk_vu h = (wk_vu)(t * p) + ((wk_vu)k << 23);
    return (wk_vf)((wk_vi)h & in);
}
WK_VI wk_vf wk_vphi(wk_vf x) {
    wk_vf h = wk_vphi_tail(x);
    return wk_vsel((wk_vi)x >> 31, h, 1.0f - h); /* sign bit: x < 0 (-0 gives 1/2) */
}
/* GELU, exact form: x Phi(x) = x/2 (1 + erf(x / sqrt 2)); -inf gives NaN, as
 * that formula does */
WK_VI wk_vf wk_vgelu(wk_vf x) { return x * wk_vphi(x); }
/* GELU, tanh form: x/2 (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3) */
WK_VI wk_vf wk_vgelu_tanh(wk_vf x) {
    wk_vf u2 = (2.0f * 0.79788456080286536f) * (x + 0.044715f * x * x * x);
    return x / (1.0f + wk_vexp(-u2));
}
/* their derivatives */
WK_VI wk_vf wk_vgelu_grad(wk_vf x) { return wk_vphi(x) + x * 0.39894228040143268f * wk_vexp_le0(-0.5f * x * x); }
WK_VI wk_vf wk_vgelu_tanh_grad(wk_vf x) {
    wk_vf x2 = x * x;
    wk_vf th = wk_vtanh(0.79788456080286536f * (x + 0.044715f * x2 * x));
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * (0.79788456080286536f * (1.0f + 3.0f * 0.044715f * x2));
}

#endif
