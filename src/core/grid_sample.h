/* The coordinate arithmetic of 2-D grid sampling (torch.nn.functional.
 * grid_sample's "bilinear" and "nearest" modes), written once for the CPU and
 * CUDA kernels. A grid value g in [-1, 1] becomes a source position along an
 * axis of `size` pixels, then goes through the padding mode; each step also
 * gives its derivative, so the kernels can take the gradient to the grid.
 * T is the compute type (float for float32, as PyTorch's). */
#ifndef WICK_GRID_SAMPLE_H
#define WICK_GRID_SAMPLE_H

#include "scalar_math.h" /* WK_HD */

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

enum { WK_GRID_BILINEAR = 0, WK_GRID_NEAREST = 1 };
enum { WK_GRID_ZEROS = 0, WK_GRID_BORDER = 1, WK_GRID_REFLECTION = 2 };

/* whether pixel (x, y) lies in a w x h plane */
WK_HD bool wk_grid_inside(int64_t x, int64_t y, int64_t w, int64_t h) { return x >= 0 && x < w && y >= 0 && y < h; }

#define WK_GRID_POINT_TYPE(T)                                                                     \
    typedef struct {                                                                              \
        int64_t at[4];                                                                            \
        T w[4], fx, fy, dx, dy;                                                                   \
        bool full; /* bilinear, all four taps inside: at[k] = at[0] + {0, 1, w, w + 1} */        \
    } wk_grid_taps_##T;
WK_GRID_POINT_TYPE(float)
WK_GRID_POINT_TYPE(double)

#define WK_GRID_SOURCE(T)                                                                         \
    /* c folded into [lo2 / 2, hi2 / 2] by mirroring at the bounds (twice the bounds are passed,  \
     * so that align_corners = false mirrors about the pixels' outer edges); *d: dc'/dc */        \
    WK_HD T wk_grid_reflect_##T(T c, T lo2, T hi2, T *d) {                                        \
        if (lo2 == hi2) {                                                                         \
            *d = 0;                                                                               \
            return 0;                                                                             \
        }                                                                                         \
        T lo = lo2 / 2, span = (hi2 - lo2) / 2, sign = 1;                                         \
        c -= lo;                                                                                  \
        if (c < 0) c = -c, sign = -1;                                                             \
        T extra = (T)fmod(c, span);                                                               \
        if (fmod(floor(c / span), (T)2) == 0) {                                                   \
            *d = sign;                                                                            \
            return extra + lo;                                                                    \
        }                                                                                         \
        *d = -sign;                                                                               \
        return span - extra + lo;                                                                 \
    }                                                                                             \
    /* c clamped to [0, size - 1]; *d: 1 strictly inside, else 0 */                              \
    WK_HD T wk_grid_clip_##T(T c, int64_t size, T *d) {                                           \
        T top = (T)(size - 1);                                                                    \
        *d = c > 0 && c < top ? 1 : 0;                                                            \
        return c <= 0 ? 0 : c >= top ? top : c;                                                   \
    }                                                                                             \
    /* The source position of grid value g along an axis of `size` pixels under the padding     \
     * mode; *d: its derivative by g. A NaN g stays NaN (and an infinite one under reflection): \
     * wk_grid_point reads zero there. */                                                         \
    WK_HD T wk_grid_source_##T(T g, int64_t size, int padding, int align_corners, T *d) {         \
        T s = (T)size;                                                                            \
        T c = align_corners ? (g + 1) / 2 * (s - 1) : ((g + 1) * s - 1) / 2;                      \
        T dc = align_corners ? (s - 1) / 2 : s / 2, dp = 1;                                       \
        if (padding == WK_GRID_BORDER) {                                                          \
            c = wk_grid_clip_##T(c, size, &dp);                                                   \
        } else if (padding == WK_GRID_REFLECTION) {                                               \
            T dr, dk;                                                                             \
            c = align_corners ? wk_grid_reflect_##T(c, 0, 2 * (s - 1), &dr)                       \
                              : wk_grid_reflect_##T(c, -1, 2 * s - 1, &dr);                       \
            c = wk_grid_clip_##T(c, size, &dk);                                                   \
            dp = dr * dk;                                                                         \
        }                                                                                         \
        *d = dc * dp;                                                                             \
        return c;                                                                                 \
    }                                                                                             \
    /* The taps of one grid point g = (x, y) on an h x w plane: pt->at[k] the offsets (y w + x) \
     * of the top-left, top-right, bottom-left and bottom-right pixels (-1: outside, reads zero) \
     * and pt->w[k] their weights; fx, fy the position's fractions past the top-left pixel and  \
     * dx, dy the source positions' derivatives by g (the nearest mode: one tap, weight 1) */    \
    WK_HD void wk_grid_point_##T(const T *g, int64_t h, int64_t w, int mode, int padding, int align_corners, \
                                 wk_grid_taps_##T *pt) {                                         \
        T x = wk_grid_source_##T(g[0], w, padding, align_corners, &pt->dx);                       \
        T y = wk_grid_source_##T(g[1], h, padding, align_corners, &pt->dy);                       \
        for (int k = 0; k < 4; k++) pt->at[k] = -1, pt->w[k] = 0;                                 \
        pt->fx = pt->fy = 0;                                                                      \
        pt->full = false;                                                                         \
        if (mode == WK_GRID_NEAREST) {                                                            \
            if (!(x > -1 && x < (T)w && y > -1 && y < (T)h)) return; /* (NaN too) */              \
            int64_t xi = (int64_t)rint(x), yi = (int64_t)rint(y); /* ties to even, as nearbyint */ \
            if (wk_grid_inside(xi, yi, w, h)) pt->at[0] = yi * w + xi, pt->w[0] = 1;              \
            return;                                                                               \
        }                                                                                         \
        if (!(x > -2 && x < (T)w + 1 && y > -2 && y < (T)h + 1)) return; /* no tap inside */     \
        T x0 = floor(x), y0 = floor(y);                                                           \
        T fx = x - x0, fy = y - y0;                                                               \
        int64_t xi = (int64_t)x0, yi = (int64_t)y0;                                               \
        const T ws[4] = {(1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy};             \
        for (int k = 0; k < 4; k++) {                                                             \
            int64_t px = xi + (k & 1), py = yi + (k >> 1);                                        \
            if (wk_grid_inside(px, py, w, h)) pt->at[k] = py * w + px, pt->w[k] = ws[k];          \
        }                                                                                         \
        pt->fx = fx, pt->fy = fy;                                                                 \
        pt->full = pt->at[0] >= 0 && pt->at[3] >= 0;                                              \
    }
WK_GRID_SOURCE(float)
WK_GRID_SOURCE(double)

#endif
