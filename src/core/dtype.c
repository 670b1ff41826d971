/* dtypes: names, sizes, PyTorch's promotion, and element conversion. */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define WK_DTYPE_ROW(id, name, bytes, floating, is_signed, digits, cplx) [id] = {name, bytes, floating, is_signed, digits, cplx},
static const wick_dtype_info dtype_info[] = {WK_DTYPE_TABLE(WK_DTYPE_ROW)};
#undef WK_DTYPE_ROW
/* the rows in enum order (wk_dtype_size in internal.h reads them by position) */
#define WK_DTYPE_POSITION(id, name, bytes, floating, is_signed, digits, cplx) WK_POSITION_OF_##id,
enum { WK_DTYPE_TABLE(WK_DTYPE_POSITION) };
#undef WK_DTYPE_POSITION
#define WK_DTYPE_IN_ORDER(id, name, bytes, floating, is_signed, digits, cplx) \
    _Static_assert((int)WK_POSITION_OF_##id == (int)id, "WK_DTYPE_TABLE must list the dtypes in enum order");
WK_DTYPE_TABLE(WK_DTYPE_IN_ORDER)
#undef WK_DTYPE_IN_ORDER
/* a row per enum value and none past it (a row missing in the middle would
 * have a NULL name: spec/facts_spec.lua checks that every dtype has one) */
_Static_assert(sizeof dtype_info / sizeof *dtype_info == WICK_NUM_DTYPES, "WK_DTYPE_TABLE must list every wick_dtype");

const wick_dtype_info *wick_dtype_info_of(wick_dtype d) {
    return (unsigned)d < WICK_NUM_DTYPES && dtype_info[d].name ? &dtype_info[d] : NULL;
}

/* Aliases PyTorch users type. */
static const struct {
    const char *alias;
    wick_dtype dtype;
} dtype_aliases[] = {
    {"float", WICK_FLOAT32}, {"double", WICK_FLOAT64}, {"half", WICK_FLOAT16},
    {"long", WICK_INT64},    {"int", WICK_INT32},      {"byte", WICK_UINT8},
    {"cfloat", WICK_COMPLEX64}, {"cdouble", WICK_COMPLEX128},
};

const char *wick_dtype_alias(int i, wick_dtype *dtype) {
    if (i < 0 || (size_t)i >= sizeof dtype_aliases / sizeof *dtype_aliases) return NULL;
    if (dtype) *dtype = dtype_aliases[i].dtype;
    return dtype_aliases[i].alias;
}

const char *wick_dtype_name(wick_dtype d) {
    return (unsigned)d < WICK_NUM_DTYPES ? dtype_info[d].name : "invalid";
}
size_t wick_dtype_size(wick_dtype d) { return (unsigned)d < WICK_NUM_DTYPES ? dtype_info[d].size : 0; }
int wick_dtype_is_floating(wick_dtype d) { return (unsigned)d < WICK_NUM_DTYPES && dtype_info[d].is_floating; }
int wick_dtype_is_complex(wick_dtype d) { return (unsigned)d < WICK_NUM_DTYPES && dtype_info[d].is_complex; }

wick_dtype wk_complex_part(wick_dtype d) { return d == WICK_COMPLEX128 ? WICK_FLOAT64 : WICK_FLOAT32; }
wick_dtype wk_complex_of(wick_dtype d) {
    return d == WICK_FLOAT64 || d == WICK_COMPLEX128 ? WICK_COMPLEX128 : WICK_COMPLEX64;
}

/* PyTorch's dtypes (and their aliases) that wick does not have: named as such
 * in errors instead of "unknown" (a port's .to(torch.int8), a CharStorage). */
int wk_missing_dtype(const char *name) {
    static const char *const missing[] = {"int8", "int16", "short", "char", "uint16", "uint32", "uint64",
                                          "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                                          "complex32", "chalf", "qint8", "quint8", "qint32", "quint4x2"};
    for (size_t i = 0; i < sizeof missing / sizeof *missing; i++)
        if (strcmp(name, missing[i]) == 0) return 1;
    return 0;
}

wick_status wick_dtype_parse(const char *name, wick_dtype *out) {
    for (int i = 0; i < WICK_NUM_DTYPES; i++)
        if (strcmp(name, dtype_info[i].name) == 0) return *out = (wick_dtype)i, WICK_OK;
    for (size_t i = 0; i < sizeof dtype_aliases / sizeof *dtype_aliases; i++)
        if (strcmp(name, dtype_aliases[i].alias) == 0) return *out = dtype_aliases[i].dtype, WICK_OK;
    char names[128] = ""; /* "float32, ..., uint8 or bool", from the table */
    for (int i = 0; i < WICK_NUM_DTYPES; i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%s", i == 0 ? "" : i == WICK_NUM_DTYPES - 1 ? " or " : ", ",
                 dtype_info[i].name);
    }
    if (wk_missing_dtype(name))
        return wick_fail(WICK_ERR_DTYPE, "dtype '%s' is one of PyTorch's that wick does not have (wick's: %s; int32 holds "
                                         "int8 and int16 values, uint8 unsigned bytes)", name, names);
    return wick_fail(WICK_ERR_DTYPE, "unknown dtype '%s' (expected %s)", name, names);
}

/* Category: 0 bool, 1 integer, 2 floating, 3 complex. */
static int category(wick_dtype d) {
    return d == WICK_BOOL ? 0 : dtype_info[d].is_complex ? 3 : dtype_info[d].is_floating ? 2 : 1;
}

static _Thread_local wick_dtype default_float = WICK_FLOAT32;
void wick_set_default_float_dtype(wick_dtype dtype) {
    if ((unsigned)dtype < WICK_NUM_DTYPES && dtype_info[dtype].is_floating) default_float = dtype;
}
wick_dtype wick_default_float_dtype(void) { return default_float; }

wick_dtype wick_promote_types(wick_dtype a, wick_dtype b) {
    if (a == b) return a;
    int ca = category(a), cb = category(b);
    /* complex with a float: the complex dtype of the wider part (complex64
     * with float64 is complex128); with an integer or bool: the complex one */
    if (ca == 3 && cb == 2) return wk_complex_of(wick_promote_types(wk_complex_part(a), b));
    if (cb == 3 && ca == 2) return wk_complex_of(wick_promote_types(a, wk_complex_part(b)));
    if (ca != cb) return ca > cb ? a : b;
    if (ca == 2) {
        /* float16 with bfloat16 has no common 16-bit type */
        if ((a == WICK_FLOAT16 && b == WICK_BFLOAT16) || (a == WICK_BFLOAT16 && b == WICK_FLOAT16))
            return WICK_FLOAT32;
        return dtype_info[a].size >= dtype_info[b].size ? a : b;
    }
    return dtype_info[a].size >= dtype_info[b].size ? a : b; /* uint8 < int32 < int64 */
}

/* IEEE half and bfloat16, round to nearest even. */
float wk_half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);
    else if (exp) bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man) bits = sign;
    else { /* subnormal */
        float f = ldexpf((float)man, -24);
        return sign ? -f : f;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

uint16_t wk_float_to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0);
    if (ax >= 0x477ff000u) return sign | 0x7c00; /* overflows to inf */
    if (ax < 0x38800000u) {                      /* subnormal or zero in half */
        float a;
        memcpy(&a, &ax, 4);
        return sign | (uint16_t)lrintf(a * 16777216.0f); /* a / 2^-24, nearest even */
    }
    uint32_t rounded = ax + 0xfff + ((ax >> 13) & 1);
    return sign | (uint16_t)((rounded - 0x38000000u) >> 13);
}


double wk_load_double(const char *p, wick_dtype d) {
    switch (d) {
    case WICK_FLOAT32: return *(const float *)p;
    case WICK_FLOAT64: return *(const double *)p;
    case WICK_FLOAT16: return wk_half_to_float(*(const uint16_t *)p);
    case WICK_BFLOAT16: return wk_bf16_to_float(*(const uint16_t *)p);
    case WICK_INT64: return (double)*(const int64_t *)p;
    case WICK_INT32: return *(const int32_t *)p;
    case WICK_UINT8: return *(const uint8_t *)p;
    case WICK_BOOL: return *(const uint8_t *)p != 0;
    case WICK_COMPLEX64: return *(const float *)p; /* the real part */
    case WICK_COMPLEX128: return *(const double *)p;
    default: return 0;
    }
}

/* Float to integer conversion saturates instead of invoking undefined behaviour;
 * NaN becomes 0. */
static int64_t double_to_int64(double v) {
    if (!(v == v)) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

double wick_value_as_double(const void *p, wick_dtype dtype) { return wk_load_double(p, dtype); }

int64_t wk_load_int64(const char *p, wick_dtype d) {
    switch (d) {
    case WICK_INT64: return *(const int64_t *)p;
    case WICK_INT32: return *(const int32_t *)p;
    case WICK_UINT8: return *(const uint8_t *)p;
    case WICK_BOOL: return *(const uint8_t *)p != 0;
    default: return double_to_int64(wk_load_double(p, d));
    }
}

void wk_store_double(char *p, wick_dtype d, double v) {
    switch (d) {
    case WICK_FLOAT32: *(float *)p = (float)v; break;
    case WICK_FLOAT64: *(double *)p = v; break;
    case WICK_FLOAT16: *(uint16_t *)p = wk_float_to_half((float)v); break;
    case WICK_BFLOAT16: *(uint16_t *)p = wk_float_to_bf16((float)v); break;
    case WICK_BOOL: *(uint8_t *)p = v != 0; break;
    case WICK_COMPLEX64: ((float *)p)[0] = (float)v, ((float *)p)[1] = 0; break; /* v + 0i */
    case WICK_COMPLEX128: ((double *)p)[0] = v, ((double *)p)[1] = 0; break;
    default: wk_store_int64(p, d, double_to_int64(v)); break;
    }
}

void wk_store_int64(char *p, wick_dtype d, int64_t v) {
    switch (d) {
    case WICK_INT64: *(int64_t *)p = v; break;
    case WICK_INT32: *(int32_t *)p = (int32_t)(uint32_t)v; break; /* wraps like PyTorch */
    case WICK_UINT8: *(uint8_t *)p = (uint8_t)v; break;
    case WICK_BOOL: *(uint8_t *)p = v != 0; break;
    default: wk_store_double(p, d, (double)v); break;
    }
}

/* PyTorch's check of a number written into a tensor (fill_, full,
 * masked_fill, t[i] = v): a finite float beyond the dtype's largest finite
 * value, or an integer dtype's NaN, infinity or out-of-range value, is an error
 * ("value cannot be converted to type float without overflow"), not a silent
 * inf or a wrapped integer. Infinities and NaN fit the floating dtypes. */
wick_status wick_check_value(const char *op, double v, wick_dtype d) { return wk_check_scalar(op, v, d); }

wick_status wk_check_scalar(const char *op, double v, wick_dtype d) {
    double lo, hi;
    const char *type;
    switch (d) {
    case WICK_FLOAT32:
    case WICK_COMPLEX64: lo = -3.4028234663852886e38, hi = 3.4028234663852886e38, type = "float"; break;
    case WICK_FLOAT16: lo = -65504, hi = 65504, type = "c10::Half"; break;
    case WICK_BFLOAT16: lo = -3.3895313892515355e38, hi = 3.3895313892515355e38, type = "c10::BFloat16"; break;
    case WICK_INT64: lo = -9223372036854775808.0, hi = 9223372036854775807.0, type = "int64_t"; break;
    case WICK_INT32: lo = -2147483648.0, hi = 2147483647.0, type = "int"; break;
    case WICK_UINT8: lo = -255, hi = 255, type = "uint8_t"; break; /* (negatives wrap, as PyTorch allows) */
    default: return WICK_OK; /* float64 and bool take any number */
    }
    bool floating = wick_dtype_is_floating(d) || wick_dtype_is_complex(d);
    if (floating ? (isfinite(v) && (v < lo || v > hi)) : !(v >= lo && (d == WICK_INT64 ? v < 9223372036854775808.0 : v <= hi)))
        return wick_fail(WICK_ERR_ARGUMENT, "%s: value cannot be converted to type %s without overflow (%g)", op, type, v);
    return WICK_OK;
}
