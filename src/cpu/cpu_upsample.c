/* 2-D upsampling on the CPU (nearest, bilinear), forward and backward, with
 * PyTorch's index arithmetic (src/core/upsample.h). The source rows and
 * columns (and bilinear weights) of every output row and column are computed
 * once per call; the planes are then shared among wick's threads. The backward
 * scatters each plane's output gradients into its (zeroed) input plane in
 * row-major output order, one thread per plane: deterministic. */
#include "cpu.h"

#include "../core/upsample.h"

#include <stdlib.h>

/* the source indices and weights of one axis */
typedef struct {
    int64_t *i0, *step;
    void *l1; /* float or double */
} axis_map;

typedef struct {
    const wk_upsample_args *a;
    axis_map y, x;
    char *out;
    const char *in;
} up_job;

#define AXIS_FILL(T)                                                                              \
    static void axis_fill_##T(axis_map *m, int64_t in, int64_t out, const wk_upsample_args *a, double scale) { \
        for (int64_t d = 0; d < out; d++) {                                                       \
            if (a->mode == 0) {                                                                   \
                m->i0[d] = wk_nearest_index(d, in, out, scale);                                   \
                m->step[d] = 0, ((T *)m->l1)[d] = 0;                                              \
            } else {                                                                              \
                wk_linear_index_##T(d, in, out, a->align_corners, scale, &m->i0[d], &m->step[d],  \
                                    (T *)m->l1 + d);                                              \
            }                                                                                     \
        }                                                                                         \
    }
AXIS_FILL(float)
AXIS_FILL(double)

/* plane by plane: out[oy, ox] from the input plane */
#define UP_FORWARD(T)                                                                             \
    static void forward_##T(const up_job *j, int64_t begin, int64_t end) {                       \
        const wk_upsample_args *a = j->a;                                                         \
        const T *ly = j->y.l1, *lx = j->x.l1;                                                     \
        for (int64_t p = begin; p < end; p++) {                                                   \
            const T *x = (const T *)j->in + p * a->h * a->w;                                      \
            T *y = (T *)j->out + p * a->oh * a->ow;                                               \
            for (int64_t oy = 0; oy < a->oh; oy++) {                                              \
                const T *r0 = x + j->y.i0[oy] * a->w, *r1 = r0 + j->y.step[oy] * a->w;            \
                T *row = y + oy * a->ow;                                                          \
                if (a->mode == 0) {                                                               \
                    for (int64_t ox = 0; ox < a->ow; ox++) row[ox] = r0[j->x.i0[ox]];             \
                    continue;                                                                     \
                }                                                                                 \
                const T h1 = ly[oy], h0 = 1 - h1;                                                 \
                for (int64_t ox = 0; ox < a->ow; ox++) {                                          \
                    const int64_t c0 = j->x.i0[ox], c1 = c0 + j->x.step[ox];                      \
                    const T w1 = lx[ox], w0 = 1 - w1;                                             \
                    row[ox] = h0 * (w0 * r0[c0] + w1 * r0[c1]) + h1 * (w0 * r1[c0] + w1 * r1[c1]); \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
UP_FORWARD(float)
UP_FORWARD(double)

/* plane by plane: the input plane's gradient, the output gradients scattered */
#define UP_BACKWARD(T)                                                                            \
    static void backward_##T(const up_job *j, int64_t begin, int64_t end) {                      \
        const wk_upsample_args *a = j->a;                                                         \
        const T *ly = j->y.l1, *lx = j->x.l1;                                                     \
        for (int64_t p = begin; p < end; p++) {                                                   \
            T *gx = (T *)j->out + p * a->h * a->w;                                                \
            const T *gy = (const T *)j->in + p * a->oh * a->ow;                                   \
            memset(gx, 0, sizeof(T) * (size_t)(a->h * a->w));                                     \
            for (int64_t oy = 0; oy < a->oh; oy++) {                                              \
                T *r0 = gx + j->y.i0[oy] * a->w, *r1 = r0 + j->y.step[oy] * a->w;                 \
                const T *row = gy + oy * a->ow;                                                   \
                if (a->mode == 0) {                                                               \
                    for (int64_t ox = 0; ox < a->ow; ox++) r0[j->x.i0[ox]] += row[ox];            \
                    continue;                                                                     \
                }                                                                                 \
                const T h1 = ly[oy], h0 = 1 - h1;                                                 \
                for (int64_t ox = 0; ox < a->ow; ox++) {                                          \
                    const int64_t c0 = j->x.i0[ox], c1 = c0 + j->x.step[ox];                      \
                    const T w1 = lx[ox], w0 = 1 - w1, g = row[ox];                                \
                    r0[c0] += h0 * w0 * g;                                                        \
                    r0[c1] += h0 * w1 * g;                                                        \
                    r1[c0] += h1 * w0 * g;                                                        \
                    r1[c1] += h1 * w1 * g;                                                        \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }
UP_BACKWARD(float)
UP_BACKWARD(double)

static void forward_range(void *ctx, int64_t begin, int64_t end) {
    const up_job *j = ctx;
    if (j->a->dtype == WICK_FLOAT32) forward_float(j, begin, end);
    else forward_double(j, begin, end);
}

static void backward_range(void *ctx, int64_t begin, int64_t end) {
    const up_job *j = ctx;
    if (j->a->dtype == WICK_FLOAT32) backward_float(j, begin, end);
    else backward_double(j, begin, end);
}

/* the two axis maps in one block (freed by the caller), or an OOM status */
static wick_status maps_init(up_job *j, void **block) {
    const wk_upsample_args *a = j->a;
    size_t es = wk_dtype_size(a->dtype), n = (size_t)(a->oh + a->ow);
    char *b = malloc(n * (2 * sizeof(int64_t) + es) + 1);
    if (!(*block = b)) return wick_fail(WICK_ERR_OOM, "upsample: out of memory for %zu indices", n);
    j->y.i0 = (int64_t *)b, j->y.step = j->y.i0 + a->oh;
    j->x.i0 = j->y.step + a->oh, j->x.step = j->x.i0 + a->ow;
    j->y.l1 = j->x.step + a->ow, j->x.l1 = (char *)j->y.l1 + (size_t)a->oh * es;
    if (a->dtype == WICK_FLOAT32) {
        axis_fill_float(&j->y, a->h, a->oh, a, a->scale_h);
        axis_fill_float(&j->x, a->w, a->ow, a, a->scale_w);
    } else {
        axis_fill_double(&j->y, a->h, a->oh, a, a->scale_h);
        axis_fill_double(&j->x, a->w, a->ow, a, a->scale_w);
    }
    return WICK_OK;
}

static wick_status run(const wk_upsample_args *a, char *out, const char *in, wk_range_fn fn, int64_t per_plane) {
    if (a->planes == 0 || a->oh == 0 || a->ow == 0 || a->h == 0 || a->w == 0) return WICK_OK;
    up_job j = {.a = a, .out = out, .in = in};
    void *block;
    wick_status st = maps_init(&j, &block);
    if (st) return st;
    int64_t grain = 32768 / (per_plane > 0 ? per_plane : 1);
    st = wk_parallel_for(a->planes, grain > 0 ? grain : 1, fn, &j);
    free(block);
    return st;
}

wick_status cpu_upsample2d(const wk_upsample_args *a, char *out, const char *input) {
    return run(a, out, input, forward_range, a->oh * a->ow);
}

wick_status cpu_upsample2d_backward(const wk_upsample_args *a, char *grad_input, const char *grad_out) {
    if (a->oh == 0 || a->ow == 0) { /* nothing flows back */
        memset(grad_input, 0, (size_t)(a->planes * a->h * a->w) * wk_dtype_size(a->dtype));
        return WICK_OK;
    }
    return run(a, grad_input, grad_out, backward_range, a->oh * a->ow);
}
