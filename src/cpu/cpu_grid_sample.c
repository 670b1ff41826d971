/* 2-D grid sampling on the CPU (bilinear, nearest), forward and backward, with
 * the coordinate arithmetic of src/core/grid_sample.h. Work goes out in tiles
 * of one batch element's grid points: a tile's taps are computed once, then
 * every channel plane is read (forward) at them. The backward runs in two
 * passes so that no two threads write one element: the grid's gradient by tiles
 * of points (summing over the channels), the input's by blocks of channel planes
 * (scattering every point's gradient in order): deterministic. */
#include "cpu.h"

#include "../core/grid_sample.h"

#include <string.h>

enum { TILE = 64 };

typedef struct {
    const wk_grid_sample_args *a;
    const char *gout, *input, *grid;
    char *out, *grad_grid;
    int64_t tiles; /* per batch element */
    int64_t cblock; /* channels per task of the input's gradient */
} gs_job;

#define GS_KERNELS(T)                                                                             \
    /* the taps of points [p0, p0 + m) of batch element b */                                      \
    static void tile_points_##T(const gs_job *j, int64_t b, int64_t p0, int64_t m, wk_grid_taps_##T *pts) {  \
        const wk_grid_sample_args *a = j->a;                                                      \
        const T *g = (const T *)j->grid + (b * a->oh * a->ow + p0) * 2;                           \
        for (int64_t i = 0; i < m; i++)                                                           \
            wk_grid_point_##T(g + 2 * i, a->h, a->w, a->mode, a->padding, a->align_corners, &pts[i]);  \
    }                                                                                             \
    static T read_##T(const T *plane, const wk_grid_taps_##T *pt) {                               \
        T s = 0;                                                                                  \
        for (int k = 0; k < 4; k++)                                                               \
            if (pt->at[k] >= 0) s += pt->w[k] * plane[pt->at[k]];                                 \
        return s;                                                                                 \
    }                                                                                             \
    static void forward_##T(void *ctx, int64_t begin, int64_t end) {                              \
        const gs_job *j = ctx;                                                                    \
        const wk_grid_sample_args *a = j->a;                                                      \
        const int64_t P = a->oh * a->ow, HW = a->h * a->w;                                        \
        wk_grid_taps_##T pts[TILE];                                                              \
        for (int64_t t = begin; t < end; t++) {                                                   \
            int64_t b = t / j->tiles, p0 = t % j->tiles * TILE, m = P - p0 < TILE ? P - p0 : TILE; \
            tile_points_##T(j, b, p0, m, pts);                                                    \
            const T *x = (const T *)j->input + b * a->c * HW;                                     \
            T *o = (T *)j->out + b * a->c * P + p0;                                               \
            for (int64_t c = 0; c < a->c; c++) { /* the channel plane stays in cache over the tile */\
                const T *plane = x + c * HW;                                                      \
                T *oc = o + c * P;                                                                \
                for (int64_t i = 0; i < m; i++) {                                                 \
                    const wk_grid_taps_##T *pt = &pts[i];                                         \
                    if (pt->full) {                                                               \
                        const T *q = plane + pt->at[0];                                           \
                        oc[i] = pt->w[0] * q[0] + pt->w[1] * q[1] + pt->w[2] * q[a->w] + pt->w[3] * q[a->w + 1];\
                    } else {                                                                      \
                        oc[i] = read_##T(plane, pt);                                              \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                 \
    }                                                                                             \
    /* the grid's gradient at a tile's points: sum over channels of g times the read's slope */   \
    static void grad_grid_##T(void *ctx, int64_t begin, int64_t end) {                            \
        const gs_job *j = ctx;                                                                    \
        const wk_grid_sample_args *a = j->a;                                                      \
        const int64_t P = a->oh * a->ow, HW = a->h * a->w, dw = a->w;                             \
        wk_grid_taps_##T pts[TILE];                                                               \
        for (int64_t t = begin; t < end; t++) {                                                   \
            int64_t b = t / j->tiles, p0 = t % j->tiles * TILE, m = P - p0 < TILE ? P - p0 : TILE;\
            T *out = (T *)j->grad_grid + (b * P + p0) * 2;                                        \
            if (a->mode == WK_GRID_NEAREST) { /* piecewise constant: zero */                      \
                memset(out, 0, sizeof(T) * 2 * (size_t)m);                                        \
                continue;                                                                         \
            }                                                                                     \
            tile_points_##T(j, b, p0, m, pts);                                                    \
            const T *x = (const T *)j->input + b * a->c * HW;                                     \
            for (int64_t i = 0; i < m; i++) {                                                     \
                const wk_grid_taps_##T *pt = &pts[i];                                             \
                const T fx = pt->fx, fy = pt->fy;                                                 \
                const T *go = (const T *)j->gout + b * a->c * P + p0 + i;                         \
                T gx = 0, gy = 0, v[4];                                                           \
                for (int64_t c = 0; c < a->c; c++, go += P) {                                     \
                    if (pt->full) {                                                               \
                        const T *q = x + c * HW + pt->at[0];                                      \
                        v[0] = q[0], v[1] = q[1], v[2] = q[dw], v[3] = q[dw + 1];                 \
                    } else {                                                                      \
                        for (int k = 0; k < 4; k++) v[k] = pt->at[k] >= 0 ? x[c * HW + pt->at[k]] : 0;\
                    }                                                                             \
                    gx += *go * ((v[1] - v[0]) * (1 - fy) + (v[3] - v[2]) * fy);                  \
                    gy += *go * ((v[2] - v[0]) * (1 - fx) + (v[3] - v[1]) * fx);                  \
                }                                                                                 \
                out[2 * i] = gx * pt->dx, out[2 * i + 1] = gy * pt->dy;                           \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    /* the input's gradient of a block of channel planes of one batch element: zeroed, then       \
     * every point's gradient scattered to its taps, in the points' order */                      \
    static void grad_input_##T(void *ctx, int64_t begin, int64_t end) {                           \
        const gs_job *j = ctx;                                                                    \
        const wk_grid_sample_args *a = j->a;                                                      \
        const int64_t P = a->oh * a->ow, HW = a->h * a->w, dw = a->w;                             \
        const int64_t blocks = (a->c + j->cblock - 1) / j->cblock;                                \
        wk_grid_taps_##T pts[TILE];                                                               \
        for (int64_t t = begin; t < end; t++) {                                                   \
            int64_t b = t / blocks, c0 = t % blocks * j->cblock;                                  \
            int64_t c1 = c0 + j->cblock < a->c ? c0 + j->cblock : a->c;                           \
            T *gx = (T *)j->out + (b * a->c + c0) * HW;                                           \
            memset(gx, 0, sizeof(T) * (size_t)((c1 - c0) * HW));                                  \
            for (int64_t p0 = 0; p0 < P; p0 += TILE) {                                            \
                int64_t m = P - p0 < TILE ? P - p0 : TILE;                                        \
                tile_points_##T(j, b, p0, m, pts);                                                \
                for (int64_t i = 0; i < m; i++) {                                                 \
                    const wk_grid_taps_##T *pt = &pts[i];                                         \
                    const T w0 = pt->w[0], w1 = pt->w[1], w2 = pt->w[2], w3 = pt->w[3];           \
                    const T *go = (const T *)j->gout + (b * a->c + c0) * P + p0 + i;              \
                    for (int64_t c = 0; c < c1 - c0; c++, go += P) {                              \
                        T *plane = gx + c * HW;                                                   \
                        if (pt->full) {                                                           \
                            T *q = plane + pt->at[0];                                             \
                            q[0] += w0 * *go, q[1] += w1 * *go, q[dw] += w2 * *go, q[dw + 1] += w3 * *go;\
                        } else {                                                                  \
                            for (int k = 0; k < 4; k++)                                           \
                                if (pt->at[k] >= 0) plane[pt->at[k]] += pt->w[k] * *go;           \
                        }                                                                         \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
GS_KERNELS(float)
GS_KERNELS(double)

static gs_job job_of(const wk_grid_sample_args *a) {
    return (gs_job){.a = a, .tiles = (a->oh * a->ow + TILE - 1) / TILE};
}

/* how many tasks of per_task multiply-adds make a piece of about 32k */
static int64_t grain_of(int64_t per_task) { return per_task > 0 && per_task < 32768 ? 32768 / per_task : 1; }

wick_status cpu_grid_sample2d(const wk_grid_sample_args *a, char *out, const char *input, const char *grid) {
    if (a->n == 0 || a->c == 0 || a->oh == 0 || a->ow == 0) return WICK_OK;
    gs_job j = job_of(a);
    j.out = out, j.input = input, j.grid = grid;
    return wk_parallel_for(a->n * j.tiles, grain_of(TILE * a->c * 4), a->dtype == WICK_FLOAT32 ? forward_float : forward_double,
                           &j);
}

wick_status cpu_grid_sample2d_backward(const wk_grid_sample_args *a, const char *grad_out, const char *input,
                                       const char *grid, char *grad_input, char *grad_grid) {
    gs_job j = job_of(a);
    j.gout = grad_out, j.input = input, j.grid = grid;
    const int64_t P = a->oh * a->ow;
    wick_status st = WICK_OK;
    if (grad_grid && a->n * P > 0) {
        j.grad_grid = grad_grid;
        if (a->c == 0) memset(grad_grid, 0, (size_t)(a->n * P * 2) * wk_dtype_size(a->dtype));
        else st = wk_parallel_for(a->n * j.tiles, grain_of(TILE * a->c * 8),
                                  a->dtype == WICK_FLOAT32 ? grad_grid_float : grad_grid_double, &j);
    }
    if (!st && grad_input && a->n * a->c > 0) {
        /* blocks of channels: enough tasks for the threads (two each), each sharing its taps widely */
        int64_t want = 2 * (int64_t)wick_get_num_threads(), per = (want + a->n - 1) / a->n;
        per = per < 1 ? 1 : per > a->c ? a->c : per;
        j.cblock = (a->c + per - 1) / per;
        j.out = grad_input;
        int64_t tasks = a->n * ((a->c + j.cblock - 1) / j.cblock);
        st = wk_parallel_for(tasks, grain_of(P * j.cblock * 4 + a->h * a->w * j.cblock),
                             a->dtype == WICK_FLOAT32 ? grad_input_float : grad_input_double, &j);
    }
    return st;
}
