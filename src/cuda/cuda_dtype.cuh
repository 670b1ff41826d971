/* Loads and stores of every wick dtype for the CUDA kernels, with the
 * conversions of src/core/dtype.c bit for bit: float16 and bfloat16 rounded to
 * nearest even the same way, float to integer saturating (NaN to 0), integer
 * to integer wrapping, bool as "not zero". The functions are also compiled for
 * the host, so they can be checked against dtype.c on a machine without a GPU.
 *
 * Also: wk_cu_elem<D>::type, the C type that holds one element of dtype D. */
#ifndef WICK_CUDA_DTYPE_CUH
#define WICK_CUDA_DTYPE_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "wick.h"

#define WK_CU_HD __host__ __device__ __forceinline__

/* ---- bits of a float ---- */

WK_CU_HD uint32_t wk_cu_float_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}

WK_CU_HD float wk_cu_bits_float(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

/* ---- float16 and bfloat16 (the algorithms of wk_half_to_float and friends) ---- */

WK_CU_HD float wk_cu_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);
    else if (exp) bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man) bits = sign;
    else { /* subnormal: man * 2^-24, exact in float (dtype.c's ldexpf) */
        float f = (float)man * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    return wk_cu_bits_float(bits);
}

WK_CU_HD uint16_t wk_cu_float_to_half(float f) {
    uint32_t x = wk_cu_float_bits(f);
    uint16_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);
    if (ax >= 0x477ff000u) return sign | 0x7c00; /* overflows to inf */
    if (ax < 0x38800000u) {                      /* subnormal or zero in half */
        float scaled = wk_cu_bits_float(ax) * 16777216.0f; /* a / 2^-24, exact */
#ifdef __CUDA_ARCH__
        return sign | (uint16_t)__float2int_rn(scaled); /* nearest even, like lrintf */
#else
        return sign | (uint16_t)lrintf(scaled);
#endif
    }
    uint32_t rounded = ax + 0xfff + ((ax >> 13) & 1);
    return sign | (uint16_t)((rounded - 0x38000000u) >> 13);
}

WK_CU_HD float wk_cu_bf16_to_float(uint16_t h) { return wk_cu_bits_float((uint32_t)h << 16); }

WK_CU_HD uint16_t wk_cu_float_to_bf16(float f) {
    uint32_t x = wk_cu_float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* ---- elements as double or int64 (wk_load_double, wk_store_int64, ...) ---- */

/* Saturates instead of invoking undefined behaviour; NaN becomes 0. */
WK_CU_HD int64_t wk_cu_double_to_int64(double v) {
    if (!(v == v)) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

WK_CU_HD double wk_cu_load_double(const char *p, int d) {
    switch (d) {
    case WICK_FLOAT32: return *(const float *)p;
    case WICK_FLOAT64: return *(const double *)p;
    case WICK_FLOAT16: return wk_cu_half_to_float(*(const uint16_t *)p);
    case WICK_BFLOAT16: return wk_cu_bf16_to_float(*(const uint16_t *)p);
    case WICK_INT64: return (double)*(const int64_t *)p;
    case WICK_INT32: return *(const int32_t *)p;
    case WICK_UINT8: return *(const uint8_t *)p;
    case WICK_BOOL: return *(const uint8_t *)p != 0;
    default: return 0;
    }
}

WK_CU_HD int64_t wk_cu_load_int64(const char *p, int d) {
    switch (d) {
    case WICK_INT64: return *(const int64_t *)p;
    case WICK_INT32: return *(const int32_t *)p;
    case WICK_UINT8: return *(const uint8_t *)p;
    case WICK_BOOL: return *(const uint8_t *)p != 0;
    default: return wk_cu_double_to_int64(wk_cu_load_double(p, d));
    }
}

/* A double into one of the floating dtypes (narrow ones through float, like
 * dtype.c). The two stores below share it instead of calling each other. */
WK_CU_HD void wk_cu_store_floating(char *p, int d, double v) {
    switch (d) {
    case WICK_FLOAT32: *(float *)p = (float)v; break;
    case WICK_FLOAT64: *(double *)p = v; break;
    case WICK_FLOAT16: *(uint16_t *)p = wk_cu_float_to_half((float)v); break;
    case WICK_BFLOAT16: *(uint16_t *)p = wk_cu_float_to_bf16((float)v); break;
    default: break;
    }
}

WK_CU_HD void wk_cu_store_int64(char *p, int d, int64_t v) {
    switch (d) {
    case WICK_INT64: *(int64_t *)p = v; break;
    case WICK_INT32: *(int32_t *)p = (int32_t)(uint32_t)v; break; /* wraps like PyTorch */
    case WICK_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case WICK_BOOL: *(uint8_t *)p = v != 0; break;
    default: wk_cu_store_floating(p, d, (double)v); break;
    }
}

WK_CU_HD void wk_cu_store_double(char *p, int d, double v) {
    switch (d) {
    case WICK_BOOL: *(uint8_t *)p = v != 0; break;
    case WICK_INT64:
    case WICK_INT32:
    case WICK_UINT8: wk_cu_store_int64(p, d, wk_cu_double_to_int64(v)); break;
    default: wk_cu_store_floating(p, d, v); break;
    }
}

/* ---- element types ---- */

WK_CU_HD int64_t wk_cu_dtype_size(int d) {
    return d == WICK_FLOAT64 || d == WICK_INT64 ? 8 : d == WICK_FLOAT32 || d == WICK_INT32 ? 4
         : d == WICK_FLOAT16 || d == WICK_BFLOAT16 ? 2 : 1;
}


template <int D> struct wk_cu_elem;
template <> struct wk_cu_elem<WICK_FLOAT32> { typedef float type; };
template <> struct wk_cu_elem<WICK_FLOAT64> { typedef double type; };
template <> struct wk_cu_elem<WICK_FLOAT16> { typedef uint16_t type; };
template <> struct wk_cu_elem<WICK_BFLOAT16> { typedef uint16_t type; };
template <> struct wk_cu_elem<WICK_INT64> { typedef int64_t type; };
template <> struct wk_cu_elem<WICK_INT32> { typedef int32_t type; };
template <> struct wk_cu_elem<WICK_UINT8> { typedef uint8_t type; };
template <> struct wk_cu_elem<WICK_BOOL> { typedef uint8_t type; };

#endif
