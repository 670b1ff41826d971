/* The index arithmetic of 2-D upsampling (nearest, bilinear), written once for
 * the CPU and CUDA kernels, as PyTorch computes it (UpSample.h): `scale` is the
 * kernel argument (1 / scale_factor when the caller gave one, else 0) and the
 * arithmetic runs in T, the compute type (float for float32, as PyTorch's
 * opmath). */
#ifndef WICK_UPSAMPLE_H
#define WICK_UPSAMPLE_H

#include "scalar_math.h" /* WK_HD */

/* compute_scales_value: the given scale, or in / out */
#define WK_UPSAMPLE_SCALE(T)                                                                      \
    WK_HD T wk_upsample_scale_##T(double scale, int64_t in, int64_t out) {                       \
        return scale > 0 ? (T)scale : (T)in / (T)out;                                             \
    }
WK_UPSAMPLE_SCALE(float)
WK_UPSAMPLE_SCALE(double)

/* nearest: floor(dst * scale) clamped to in - 1 (PyTorch's nearest_idx) */
WK_HD int64_t wk_nearest_index(int64_t dst, int64_t in, int64_t out, double scale) {
    if (out == in) return dst;
    if (out == 2 * in) return dst >> 1;
    float s = wk_upsample_scale_float(scale, in, out);
    int64_t i = (int64_t)floorf((float)dst * s);
    return i < in - 1 ? i : in - 1;
}

/* bilinear along one axis: the lower source index i0, the step to the upper
 * one (0 or 1) and the upper weight l1 (the lower weight is 1 - l1) */
#define WK_LINEAR_INDEX(T)                                                                        \
    WK_HD void wk_linear_index_##T(int64_t dst, int64_t in, int64_t out, int align_corners, double scale,  \
                                   int64_t *i0, int64_t *step, T *l1) {                           \
        if (out == in) {                                                                          \
            *i0 = dst, *step = 0, *l1 = 0;                                                        \
            return;                                                                               \
        }                                                                                         \
        T s = align_corners ? (out > 1 ? (T)(in - 1) / (T)(out - 1) : (T)0)                       \
                            : wk_upsample_scale_##T(scale, in, out);                              \
        T src = align_corners ? s * (T)dst : s * ((T)dst + (T)0.5) - (T)0.5;                      \
        if (src < 0) src = 0;                                                                     \
        int64_t i = (int64_t)src;                                                                 \
        if (i > in - 1) i = in - 1;                                                               \
        T l = src - (T)i;                                                                         \
        *i0 = i;                                                                                  \
        *step = i < in - 1 ? 1 : 0;                                                               \
        *l1 = l < 0 ? (T)0 : l > 1 ? (T)1 : l;                                                    \
    }
WK_LINEAR_INDEX(float)
WK_LINEAR_INDEX(double)

#endif
