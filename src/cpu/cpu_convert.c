/* float16 and bfloat16 to and from float32 over contiguous runs: the copies of
 * `:to` and autocast, and the widening of the 16-bit products (cpu_gemm.c).
 * Three ways, the fastest the CPU has: AVX-512 (16 an instruction,
 * cpu_gemm_avx512.c; off with WICK_NO_AVX512_16BIT=1), F16C and AVX2 (8 an
 * instruction for float16; bfloat16 is shifts and an add the compiler
 * vectorises), else the scalar conversions of dtype.c, which the strided
 * copies use too. All widen exactly and round to nearest even; a NaN stays a
 * NaN (its payload may differ between the ways). */
#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define WK_F16C_BUILD 1
#define WK_F16C __attribute__((target("avx2,f16c")))

/* AVX2 with the OS's saving of its state (the builtin checks XCR0), and F16C
 * (CPUID 1, ECX bit 29: a feature name clang's builtin does not know) */
static bool have_f16c(void) {
    static int v = -1;
    unsigned a, b, c, d;
    if (v < 0)
        __atomic_store_n(&v, __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)),
                         __ATOMIC_RELAXED);
    return __atomic_load_n(&v, __ATOMIC_RELAXED);
}

WK_F16C static void widen_half_f16c(float *dst, const uint16_t *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++) dst[i] = _cvtsh_ss(src[i]);
}

WK_F16C static void round_half_f16c(uint16_t *dst, const float *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        __asm__("" : "+x"(h)); /* a register result: VCVTPS2PH into memory is slow on Intel */
        _mm_storeu_si128((__m128i *)(dst + i), h);
    }
    for (; i < n; i++) dst[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}
#endif

WK_SIMD static void bf16_widen(float *dst, const uint16_t *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = wk_bf16_to_float(src[i]);
}

WK_SIMD static void bf16_round(uint16_t *dst, const float *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = wk_float_to_bf16(src[i]);
}

void cpu_widen_16(float *dst, const uint16_t *src, wick_dtype dtype, int64_t n) {
    if (cpu_avx512_widen_16(dst, src, dtype, n)) return;
    if (dtype == WICK_BFLOAT16) bf16_widen(dst, src, n);
#ifdef WK_F16C_BUILD
    else if (have_f16c()) widen_half_f16c(dst, src, n);
#endif
    else
        for (int64_t i = 0; i < n; i++) dst[i] = wk_half_to_float(src[i]);
}

void cpu_round_16(uint16_t *dst, const float *src, wick_dtype dtype, int64_t n) {
    if (cpu_avx512_round_16(dst, src, dtype, n)) return;
    if (dtype == WICK_BFLOAT16) bf16_round(dst, src, n);
#ifdef WK_F16C_BUILD
    else if (have_f16c()) round_half_f16c(dst, src, n);
#endif
    else
        for (int64_t i = 0; i < n; i++) dst[i] = wk_float_to_half(src[i]);
}
