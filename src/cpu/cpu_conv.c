/* 2-D convolution on the CPU: im2col + GEMM, and its backward (GEMM + col2im).
 *
 * Images are processed in chunks: the columns of a whole chunk are laid side by
 * side ([c/groups * kh * kw, images * oh * ow]), so each group of each chunk is
 * one large GEMM that the BLAS library can thread, rather than one small GEMM
 * per image (a 3x3 kernel over one channel gives K = 9, where BLAS is slow). The
 * result is then moved to [n, o, oh, ow] with the bias added. A chunk of one
 * image writes its product straight into the output (on one thread, chunks stay
 * small: see chunk_images). 1x1 kernels with stride 1 and no padding need no
 * columns: the input plane is the matrix.
 *
 * On one thread, or for a convolution under 2^20 multiply-adds an image,
 * wick's thread pool runs the memory-bound parts (im2col, col2im, moving
 * rows, the bias sums) over (image, channel) pairs and cpu_gemm splits the
 * GEMMs. Otherwise each thread takes a share of the batch (a slot, below) and
 * runs all of it as one thread would. */
#include "cpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Elements of scratch (columns plus the moved product) a chunk may use. */
#define CHUNK_ELEMS ((int64_t)1 << 20)

typedef struct {
    const wk_conv2d_args *a;
    int64_t n0, cur, g; /* first image of the chunk, images in it, group */
    int64_t L, cg, og, K;
    const char *x;      /* input (im2col) */
    char *dx;           /* grad input (col2im) */
    char *col;          /* columns, row stride cur * L */
    char *y;            /* output (finish) or grad output (gather) */
    char *tmp;          /* product, or the gathered grad output: [og, cur * L] */
    const char *bias;
    const int32_t *taps; /* small maps: per tap and output position, the input element read (-1: padding) */
} conv_job;

/* Valid outputs [x0, x1) along one dim for a kernel tap at input offset xoff
 * (input index = o * stride + xoff must lie in [0, w)): columns, or rows alike. */
static void valid_range(int64_t xoff, int64_t sw, int64_t w, int64_t ow, int64_t *x0, int64_t *x1) {
    int64_t lo, hi;
    if (sw == 1) { /* no division: this runs for every tap of every plane */
        lo = xoff >= 0 ? 0 : -xoff;
        hi = w - xoff < 0 ? 0 : w - xoff;
    } else {
        lo = xoff >= 0 ? 0 : (-xoff + sw - 1) / sw;
        hi = w - 1 - xoff < 0 ? 0 : (w - 1 - xoff) / sw + 1;
    }
    if (hi > ow) hi = ow;
    if (lo > hi) lo = hi;
    *x0 = lo, *x1 = hi;
}

/* Whether a tap's valid rows are one run of the input: stride 1 along both
 * dims and rows as wide as the input's (a "same" convolution: ResNet's 3x3
 * with padding 1), so that rows [y0, y1) of a column row are the input's
 * elements from (y0 + yoff) w + xoff on, but for the x0 / w - x1 columns at
 * each row's ends that fall outside their row (zeros in the columns). */
static bool one_run(const wk_conv2d_args *a) { return a->sh == 1 && a->sw == 1 && a->ow == a->w; }

/* im2col of one channel plane: kh * kw rows of oh * ow, `ld` apart. A tap of a
 * one_run convolution is one copy and its border columns zeroed (small maps:
 * a 7x7 map is 7 copies of 7 elements a tap otherwise). */
#define IM2COL(NAME, T)                                                                           \
    static void NAME(const wk_conv2d_args *a, const T *x, T *col, int64_t ld) {                  \
        const int64_t h = a->h, w = a->w, oh = a->oh, ow = a->ow, sw = a->sw;                     \
        const bool run = one_run(a);                                                              \
        for (int64_t i = 0; i < a->kh; i++)                                                       \
            for (int64_t j = 0; j < a->kw; j++) {                                                 \
                T *row = col + (i * a->kw + j) * ld;                                              \
                int64_t xoff = j * a->dw - a->pw, yoff = i * a->dh - a->ph, x0, x1, y0, y1;       \
                valid_range(xoff, sw, w, ow, &x0, &x1);                                           \
                valid_range(yoff, a->sh, h, oh, &y0, &y1);                                         \
                if (y0 > 0) memset(row, 0, sizeof(T) * (size_t)(y0 * ow));                        \
                if (y1 < oh) memset(row + y1 * ow, 0, sizeof(T) * (size_t)((oh - y1) * ow));      \
                if (run && y1 > y0) {                                                             \
                    int64_t d0 = y0 * ow, d1 = y1 * ow, s = (y0 + yoff) * w + xoff;             \
                    int64_t lo = s < 0 ? -s : 0, hi = s + (d1 - d0) > h * w ? s + (d1 - d0) - h * w : 0; \
                    if (d1 - d0 > lo + hi) /* else the tap lies wholly in the padding */        \
                        memcpy(row + d0 + lo, x + s + lo, sizeof(T) * (size_t)(d1 - d0 - lo - hi)); \
                    for (int64_t oy = y0; oy < y1; oy++) {                                        \
                        T *r = row + oy * ow;                                                     \
                        for (int64_t ox = 0; ox < x0; ox++) r[ox] = 0;                            \
                        for (int64_t ox = x1; ox < ow; ox++) r[ox] = 0;                           \
                    }                                                                             \
                    continue;                                                                     \
                }                                                                                 \
                for (int64_t oy = y0; oy < y1; oy++) {                                            \
                    T *r = row + oy * ow;                                                         \
                    const int64_t base = (oy * a->sh + yoff) * w + xoff;                          \
                    for (int64_t ox = 0; ox < x0; ox++) r[ox] = 0;                                \
                    if (sw == 1) memcpy(r + x0, x + base + x0, sizeof(T) * (size_t)(x1 - x0));    \
                    else                                                                          \
                        for (int64_t ox = x0; ox < x1; ox++) r[ox] = x[base + ox * sw];           \
                    for (int64_t ox = x1; ox < ow; ox++) r[ox] = 0;                               \
                }                                                                                 \
            }                                                                                     \
    }
IM2COL(im2col_f32, float)
IM2COL(im2col_f64, double)

/* col2im of one channel plane: the plane is overwritten with the sum of the
 * column entries that read each of its elements. A tap of a one_run
 * convolution zeroes its border columns in `col` (scratch: the product's
 * columns) and adds one run. */
#define COL2IM(NAME, T)                                                                           \
    static void NAME(const wk_conv2d_args *a, T *dx, T *col, int64_t ld) {                       \
        const int64_t h = a->h, w = a->w, oh = a->oh, ow = a->ow, sw = a->sw;                     \
        const bool run = one_run(a);                                                              \
        memset(dx, 0, sizeof(T) * (size_t)(h * w));                                               \
        for (int64_t i = 0; i < a->kh; i++)                                                       \
            for (int64_t j = 0; j < a->kw; j++) {                                                 \
                T *row = col + (i * a->kw + j) * ld;                                              \
                int64_t xoff = j * a->dw - a->pw, yoff = i * a->dh - a->ph, x0, x1, y0, y1;       \
                valid_range(xoff, sw, w, ow, &x0, &x1);                                           \
                valid_range(yoff, a->sh, h, oh, &y0, &y1);                                         \
                if (run && y1 > y0) {                                                             \
                    for (int64_t oy = y0; oy < y1; oy++) {                                        \
                        T *r = row + oy * ow;                                                     \
                        for (int64_t ox = 0; ox < x0; ox++) r[ox] = 0;                            \
                        for (int64_t ox = x1; ox < ow; ox++) r[ox] = 0;                           \
                    }                                                                             \
                    int64_t d0 = y0 * ow, d1 = y1 * ow, s = (y0 + yoff) * w + xoff;             \
                    int64_t lo = s < 0 ? -s : 0, hi = s + (d1 - d0) > h * w ? s + (d1 - d0) - h * w : 0; \
                    T *restrict d = dx + s;                                                       \
                    const T *restrict r = row + d0;                                               \
                    for (int64_t e = lo; e < d1 - d0 - hi; e++) d[e] += r[e];                     \
                    continue;                                                                     \
                }                                                                                 \
                for (int64_t oy = y0; oy < y1; oy++) {                                            \
                    const T *r = row + oy * ow;                                                   \
                    T *d = dx + (oy * a->sh + yoff) * w + xoff;                                   \
                    if (sw == 1)                                                                  \
                        for (int64_t ox = x0; ox < x1; ox++) d[ox] += r[ox];                      \
                    else                                                                          \
                        for (int64_t ox = x0; ox < x1; ox++) d[ox * sw] += r[ox];                 \
                }                                                                                 \
            }                                                                                     \
    }
COL2IM(col2im_f32, float)
COL2IM(col2im_f64, double)

/* The same through the table of a small map (conv_job.taps): one gather
 * (col2im: one scatter-add) per plane, no work per tap or row. */
#define TAPS(NAME, T)                                                                             \
    static void NAME##_taps(const conv_job *j, const T *x, T *col, int64_t ld) {                  \
        const int64_t L = j->L, n = j->a->kh * j->a->kw;                                          \
        for (int64_t t = 0; t < n; t++)                                                           \
            for (int64_t l = 0; l < L; l++) {                                                     \
                const int32_t e = j->taps[t * L + l];                                             \
                col[t * ld + l] = e >= 0 ? x[e] : 0;                                              \
            }                                                                                     \
    }                                                                                             \
    static void NAME##_taps_back(const conv_job *j, T *dx, const T *col, int64_t ld) {            \
        const int64_t L = j->L, n = j->a->kh * j->a->kw;                                          \
        memset(dx, 0, sizeof(T) * (size_t)(j->a->h * j->a->w));                                   \
        for (int64_t t = 0; t < n; t++)                                                           \
            for (int64_t l = 0; l < L; l++) {                                                     \
                const int32_t e = j->taps[t * L + l];                                             \
                if (e >= 0) dx[e] += col[t * ld + l];                                             \
            }                                                                                     \
    }
TAPS(gather_f32, float)
TAPS(gather_f64, double)

/* jobs over (image of the chunk, channel of the group) */
static void im2col_range(void *ctx, int64_t begin, int64_t end) {
    const conv_job *j = ctx;
    const wk_conv2d_args *a = j->a;
    size_t es = wk_dtype_size(a->dtype);
    int64_t plane = a->h * a->w, ld = j->cur * j->L;
    for (int64_t t = begin; t < end; t++) {
        int64_t i = t / j->cg, c = t % j->cg;
        const char *x = j->x + (((j->n0 + i) * a->c + j->g * j->cg + c) * plane) * (int64_t)es;
        char *col = j->col + (c * a->kh * a->kw * ld + i * j->L) * (int64_t)es;
        if (j->taps && a->dtype == WICK_FLOAT32) gather_f32_taps(j, (const float *)x, (float *)col, ld);
        else if (j->taps) gather_f64_taps(j, (const double *)x, (double *)col, ld);
        else if (a->dtype == WICK_FLOAT32) im2col_f32(a, (const float *)x, (float *)col, ld);
        else im2col_f64(a, (const double *)x, (double *)col, ld);
    }
}

static void col2im_range(void *ctx, int64_t begin, int64_t end) {
    const conv_job *j = ctx;
    const wk_conv2d_args *a = j->a;
    size_t es = wk_dtype_size(a->dtype);
    int64_t plane = a->h * a->w, ld = j->cur * j->L;
    for (int64_t t = begin; t < end; t++) {
        int64_t i = t / j->cg, c = t % j->cg;
        char *dx = j->dx + (((j->n0 + i) * a->c + j->g * j->cg + c) * plane) * (int64_t)es;
        char *col = j->col + (c * a->kh * a->kw * ld + i * j->L) * (int64_t)es;
        if (j->taps && a->dtype == WICK_FLOAT32) gather_f32_taps_back(j, (float *)dx, (const float *)col, ld);
        else if (j->taps) gather_f64_taps_back(j, (double *)dx, (const double *)col, ld);
        else if (a->dtype == WICK_FLOAT32) col2im_f32(a, (float *)dx, (float *)col, ld);
        else col2im_f64(a, (double *)dx, (double *)col, ld);
    }
}

/* jobs over (image of the chunk, output channel of the group): the product row
 * (in tmp when the chunk has several images, else already in place) plus bias */
#define FINISH(NAME, T)                                                                           \
    static void NAME(const conv_job *j, int64_t begin, int64_t end) {                            \
        const wk_conv2d_args *a = j->a;                                                           \
        const int64_t L = j->L;                                                                   \
        for (int64_t t = begin; t < end; t++) {                                                   \
            int64_t i = t / j->og, o = t % j->og;                                                 \
            T *dst = (T *)j->y + ((j->n0 + i) * a->o + j->g * j->og + o) * L;                    \
            T b = j->bias ? ((const T *)j->bias)[j->g * j->og + o] : 0;                           \
            if (j->tmp) {                                                                         \
                const T *src = (const T *)j->tmp + o * j->cur * L + i * L;                        \
                for (int64_t l = 0; l < L; l++) dst[l] = src[l] + b;                              \
            } else if (j->bias) {                                                                 \
                for (int64_t l = 0; l < L; l++) dst[l] += b;                                      \
            }                                                                                     \
        }                                                                                         \
    }
FINISH(finish_f32, float)
FINISH(finish_f64, double)

static void finish_range(void *ctx, int64_t begin, int64_t end) {
    const conv_job *j = ctx;
    if (j->a->dtype == WICK_FLOAT32) finish_f32(j, begin, end);
    else finish_f64(j, begin, end);
}

/* the reverse move: grad output rows of the chunk side by side in tmp */
static void gather_range(void *ctx, int64_t begin, int64_t end) {
    const conv_job *j = ctx;
    const wk_conv2d_args *a = j->a;
    size_t es = wk_dtype_size(a->dtype), row = (size_t)j->L * es;
    for (int64_t t = begin; t < end; t++) {
        int64_t i = t / j->og, o = t % j->og;
        memcpy(j->tmp + (o * j->cur * j->L + i * j->L) * (int64_t)es,
               j->y + (((j->n0 + i) * a->o + j->g * j->og + o) * j->L) * (int64_t)es, row);
    }
}

static int64_t grain_for(int64_t work_per_job) {
    int64_t g = 32768 / (work_per_job > 0 ? work_per_job : 1);
    return g > 0 ? g : 1;
}

static bool is_direct(const wk_conv2d_args *a) {
    return a->kh == 1 && a->kw == 1 && a->sh == 1 && a->sw == 1 && a->ph == 0 && a->pw == 0 &&
           a->oh == a->h && a->ow == a->w; /* (a transposed convolution's output_padding can differ) */
}

/* Images per chunk: scratch of (rows per image) * L elements each, within the
 * budget. On one thread, moving the product costs more than smaller GEMMs lose
 * (measured: 3.0 vs 3.7 ms for 128 MNIST images, 32 3x3 filters), so a chunk
 * only grows until its GEMM has some 2^18 multiply-adds, but at least until it
 * has MIN_COLUMNS columns (cur * L): a deep layer on small maps (ResNet's 256
 * channels at 2x2, 2^21 multiply-adds an image) would otherwise run one
 * matrix-vector-like product per image and stream its weights once per image
 * (measured: 10x slower backward than one wide GEMM). */
#define MIN_COLUMNS 128

/* Multiply-adds of one image through one group's GEMM, in double: a hostile
 * shape's product of sizes must not overflow int64. */
static double group_macs(const wk_conv2d_args *a) {
    return (double)(a->o / a->groups) * (double)(a->c / a->groups) * (double)a->kh * (double)a->kw * (double)a->oh *
           (double)a->ow;
}

static int64_t chunk_images(const wk_conv2d_args *a, int64_t rows, int64_t L, int64_t images, bool small) {
    int64_t per = rows * L > 0 ? rows * L : 1, nb = CHUNK_ELEMS / per;
    if (nb < 1) nb = 1;
    if (small) {
        double macs = group_macs(a);
        int64_t enough = macs >= 1 ? (int64_t)((double)((int64_t)1 << 18) / macs) : (int64_t)1 << 18;
        int64_t wide = (MIN_COLUMNS + L - 1) / (L > 0 ? L : 1);
        if (enough < wide) enough = wide;
        if (enough < nb) nb = enough > 0 ? enough : 1;
    }
    return nb < images ? nb : images;
}

static wick_status scratch(char **p, size_t nbytes) {
    *p = NULL;
    if (nbytes == 0) return WICK_OK;
    if (!(*p = wk_cpu_backend.alloc(nbytes, 0))) {
        wk_cpu_backend.empty_cache();
        if (!(*p = wk_cpu_backend.alloc(nbytes, 0)))
            return wick_fail(WICK_ERR_OOM, "conv2d: out of memory allocating %zu bytes of scratch", nbytes);
    }
    return WICK_OK;
}

static void release(char *p, size_t nbytes) {
    if (p) wk_cpu_backend.free(p, nbytes, 0);
}

static wick_status gemm(const wk_conv2d_args *a, int ta, int tb, int64_t m, int64_t n, int64_t k, const char *A,
                        int64_t lda, const char *B, int64_t ldb, char *C, int64_t ldc, double beta) {
    wk_gemm_args g = {.dtype = a->dtype, .trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k,
                      .a = A, .lda = lda > 0 ? lda : 1, .b = B, .ldb = ldb > 0 ? ldb : 1,
                      .c = C, .ldc = ldc > 0 ? ldc : 1, .alpha = 1, .beta = beta};
    return cpu_gemm(&g);
}

/* The shape of the work shared by forward and backward: sizes per group, how
 * many images go through one GEMM, and the scratch buffers for them. */
typedef struct {
    int64_t es, L, cg, og, K, nb;
    bool direct;
    char *col, *tmp;
    size_t col_bytes, tmp_bytes;
    int32_t *taps; /* maps of at most TAPS_MAX_L output positions: kh * kw * L entries */
    size_t taps_bytes;
} conv_plan;

/* Output maps up to this many positions im2col through a table. */
#define TAPS_MAX_L 64

static void fill_taps(const wk_conv2d_args *a, int32_t *taps) {
    for (int64_t i = 0; i < a->kh; i++)
        for (int64_t j = 0; j < a->kw; j++)
            for (int64_t oy = 0; oy < a->oh; oy++)
                for (int64_t ox = 0; ox < a->ow; ox++) {
                    int64_t iy = oy * a->sh + i * a->dh - a->ph, ix = ox * a->sw + j * a->dw - a->pw;
                    *taps++ = iy >= 0 && iy < a->h && ix >= 0 && ix < a->w ? (int32_t)(iy * a->w + ix) : -1;
                }
}

static void plan_dims(conv_plan *p, const wk_conv2d_args *a) {
    p->es = (int64_t)wk_dtype_size(a->dtype), p->L = a->oh * a->ow;
    p->cg = a->c / a->groups, p->og = a->o / a->groups, p->K = p->cg * a->kh * a->kw;
    p->col = p->tmp = NULL, p->col_bytes = p->tmp_bytes = 0;
    p->taps = NULL, p->taps_bytes = 0;
}

static wick_status plan_scratch(conv_plan *p, const wk_conv2d_args *a, int64_t images, bool small) {
    /* a 1x1 kernel on a map of fewer than MIN_COLUMNS positions still takes
     * columns (a copy of the input): one GEMM for a chunk of images instead of
     * a matrix-vector product per image (ResNet's 3x3 convolutions on 1x1 maps,
     * cut to their centre tap: 64 passes over a 512 x 512 weight a batch) */
    p->direct = is_direct(a) && p->L >= MIN_COLUMNS;
    p->nb = p->direct ? 1 : chunk_images(a, p->K + p->og, p->L, images, small);
    p->col_bytes = p->direct ? 0 : (size_t)(p->K * p->nb * p->L * p->es);
    p->tmp_bytes = p->nb > 1 ? (size_t)(p->og * p->nb * p->L * p->es) : 0;
    /* (a plane of a small map has fewer than 2^31 elements) */
    bool table = !p->direct && p->L <= TAPS_MAX_L && a->h * a->w < INT32_MAX;
    p->taps_bytes = table ? (size_t)(a->kh * a->kw * p->L) * sizeof(int32_t) : 0;
    wick_status st = scratch(&p->col, p->col_bytes);
    if (!st && (st = scratch(&p->tmp, p->tmp_bytes))) release(p->col, p->col_bytes);
    if (!st && (st = scratch((char **)&p->taps, p->taps_bytes))) {
        release(p->col, p->col_bytes);
        release(p->tmp, p->tmp_bytes);
    }
    if (!st && p->taps) fill_taps(a, p->taps);
    return st;
}

static void plan_release(conv_plan *p) {
    release(p->col, p->col_bytes);
    release(p->tmp, p->tmp_bytes);
    release((char *)p->taps, p->taps_bytes);
}

/* The columns of job j's images as a [K, cur * L] matrix in *B: the input
 * itself for a direct (1x1) convolution, else im2col into the plan's buffer
 * (NULL when K is 0: no input channel, nothing to read). Fails when an
 * interrupt stopped im2col (the error is set). */
static wick_status columns(const conv_plan *p, conv_job *j, const char *input, const char **B, int64_t *ld) {
    const wk_conv2d_args *a = j->a;
    if (p->direct) {
        *ld = p->L;
        *B = input + (j->n0 * a->c + j->g * p->cg) * p->L * p->es;
        return WICK_OK;
    }
    *ld = j->cur * p->L;
    *B = p->col;
    return wk_parallel_for(j->cur * p->cg, grain_for(a->kh * a->kw * p->L), im2col_range, j);
}

/* ---- taps that never touch the input ----
 * A kernel row i reads input rows oy sh + i dh - ph for oy in [0, oh); when
 * none of them lies in [0, h) (padding on a map smaller than the kernel:
 * ResNet's 3x3 convolutions on 1x1 maps read only the centre tap), its
 * columns are all zeros and its products add nothing. Such rows and columns
 * of the kernel are cut off: the convolution runs with the kernel's used
 * window (kh0.., kw0..) and the padding shifted to match, which is exact. */
static void used_range(int64_t k, int64_t d, int64_t p, int64_t s, int64_t in, int64_t out, int64_t *k0, int64_t *k1) {
    *k0 = k, *k1 = 0;
    for (int64_t i = 0; i < k; i++) {
        int64_t lo = i * d - p, hi = (out - 1) * s + i * d - p; /* the rows tap i reads, first and last */
        if (lo <= in - 1 && hi >= 0) {
            if (*k0 > i) *k0 = i;
            *k1 = i + 1;
        }
    }
}

/* The cropped problem in *c and its window's origin; false when every tap is
 * used (or none: the general path handles an all-padding window). */
static bool crop_taps(const wk_conv2d_args *a, wk_conv2d_args *c, int64_t *i0, int64_t *j0) {
    int64_t i1, j1;
    used_range(a->kh, a->dh, a->ph, a->sh, a->h, a->oh, i0, &i1);
    used_range(a->kw, a->dw, a->pw, a->sw, a->w, a->ow, j0, &j1);
    if (i1 <= *i0 || j1 <= *j0 || (i1 - *i0 == a->kh && j1 - *j0 == a->kw)) return false;
    *c = *a;
    c->kh = i1 - *i0, c->kw = j1 - *j0;
    c->ph = a->ph - *i0 * a->dh, c->pw = a->pw - *j0 * a->dw; /* may be negative: an offset into the input */
    return true;
}

/* Copies the window [i0, i0 + c->kh) x [j0, j0 + c->kw) of every filter of
 * `full` (a's kernel) to `win` (c's kernel), or back (to_full: the rest of the
 * full kernel's gradient is zero). */
#define MOVE_WINDOW(NAME, T)                                                                      \
    static void NAME(const wk_conv2d_args *a, const wk_conv2d_args *c, int64_t i0, int64_t j0, T *full, T *win, \
                     bool to_full) {                                                                \
        const int64_t filters = a->o * (a->c / a->groups), kh = c->kh, kw = c->kw;                  \
        if (to_full) memset(full, 0, sizeof(T) * (size_t)(filters * a->kh * a->kw));                \
        for (int64_t f = 0; f < filters; f++)                                                       \
            for (int64_t i = 0; i < kh; i++) {                                                      \
                T *fp = full + (f * a->kh + i0 + i) * a->kw + j0, *wp = win + (f * kh + i) * kw;    \
                for (int64_t j = 0; j < kw; j++) {                                                  \
                    if (to_full) fp[j] = wp[j];                                                     \
                    else wp[j] = fp[j];                                                             \
                }                                                                                   \
            }                                                                                       \
    }
MOVE_WINDOW(move_window_f32, float)
MOVE_WINDOW(move_window_f64, double)

/* (an element loop: the window is often one tap, where a memcpy per filter
 * row cost more than the product) */
static void move_window(const wk_conv2d_args *a, const wk_conv2d_args *c, int64_t i0, int64_t j0, char *full, char *win,
                        bool to_full) {
    if (a->dtype == WICK_FLOAT32) move_window_f32(a, c, i0, j0, (float *)full, (float *)win, to_full);
    else move_window_f64(a, c, i0, j0, (double *)full, (double *)win, to_full);
}

static wick_status conv_forward(const wk_conv2d_args *a, char *out, const char *input, const char *weight,
                                const char *bias);
static wick_status conv_backward(const wk_conv2d_args *a, const char *grad_out, const char *input, const char *weight,
                                 char *grad_input, char *grad_weight, char *grad_bias);

static size_t window_bytes(const wk_conv2d_args *c) {
    return (size_t)(c->o * (c->c / c->groups) * c->kh * c->kw) * wk_dtype_size(c->dtype);
}

wick_status cpu_conv2d_forward(const wk_conv2d_args *a, char *out, const char *input, const char *weight,
                               const char *bias) {
    wk_conv2d_args c;
    int64_t i0, j0;
    if (!crop_taps(a, &c, &i0, &j0)) return conv_forward(a, out, input, weight, bias);
    char *w = NULL;
    size_t bytes = window_bytes(&c);
    wick_status st = scratch(&w, bytes);
    if (st) return st;
    move_window(a, &c, i0, j0, (char *)weight, w, false);
    st = conv_forward(&c, out, input, w, bias);
    release(w, bytes);
    return st;
}

wick_status cpu_conv2d_backward(const wk_conv2d_args *a, const char *grad_out, const char *input, const char *weight,
                                char *grad_input, char *grad_weight, char *grad_bias) {
    wk_conv2d_args c;
    int64_t i0, j0;
    if (!crop_taps(a, &c, &i0, &j0)) return conv_backward(a, grad_out, input, weight, grad_input, grad_weight, grad_bias);
    char *w = NULL, *gw = NULL; /* (the weight is read only for grad_input; it may be NULL without) */
    size_t bytes = window_bytes(&c);
    wick_status st = weight ? scratch(&w, bytes) : WICK_OK;
    if (!st && grad_weight && (st = scratch(&gw, bytes))) release(w, bytes);
    if (st) return st;
    if (weight) move_window(a, &c, i0, j0, (char *)weight, w, false);
    st = conv_backward(&c, grad_out, input, w, grad_input, gw, grad_bias);
    if (!st && grad_weight) move_window(a, &c, i0, j0, grad_weight, gw, true);
    release(w, bytes);
    release(gw, bytes);
    return st;
}

/* Images [n_lo, n_hi) in chunks of the plan (small: the one-thread chunking). */
static wick_status forward_images(const wk_conv2d_args *a, int64_t n_lo, int64_t n_hi, bool small, char *out,
                                  const char *input, const char *weight, const char *bias) {
    conv_plan p;
    plan_dims(&p, a);
    const int64_t es = p.es, L = p.L, og = p.og, K = p.K;
    wick_status st = plan_scratch(&p, a, n_hi - n_lo, small);
    if (st) return st;
    char *tmp = p.tmp;
    for (int64_t n0 = n_lo; n0 < n_hi && !st; n0 += p.nb) {
        int64_t cur = n_hi - n0 < p.nb ? n_hi - n0 : p.nb;
        for (int64_t g = 0; g < a->groups && !st; g++) {
            conv_job j = {.a = a, .n0 = n0, .cur = cur, .g = g, .L = L, .cg = p.cg, .og = og, .K = K,
                          .x = input, .col = p.col, .y = out, .tmp = cur > 1 ? tmp : NULL, .bias = bias,
                          .taps = p.taps};
            int64_t ldb;
            const char *B;
            char *C = cur > 1 ? tmp : out + (n0 * a->o + g * og) * L * es;
            if (!(st = columns(&p, &j, input, &B, &ldb)))
                st = gemm(a, 0, 0, og, cur * L, K, weight + g * og * K * es, K, B, ldb, C, cur * L, 0);
            if (!st && (cur > 1 || bias)) st = wk_parallel_for(cur * og, grain_for(L), finish_range, &j);
        }
    }
    plan_release(&p);
    return st;
}

/* ---- the batch over threads ----
 * With several threads, the images are cut into one share per thread (a
 * slot); each slot runs the one-thread chunking on its share with its own
 * scratch, and everything inside it (im2col, the GEMMs, the moves) runs on
 * its thread (the pool runs nested work inline). Splitting each GEMM and copy
 * instead synchronised the threads a dozen times a chunk: the MNIST CNN's
 * convolutions ran 1.45-1.5x faster on 2 threads than on 1. The weight
 * gradient of slot s > 0 goes to a buffer of its own, added to slot 0's in
 * slot order afterwards (so a thread count gives the same bits every run). */
#define SLOT_MIN_MACS ((int64_t)1 << 20)     /* per image: below this, the chunked path */
#define SLOT_MAX_GW_BYTES ((size_t)64 << 20) /* the slots' weight gradients at most */

typedef struct {
    wick_status status;
    char msg[256]; /* the slot's error (its thread's last error) */
} slot_result;

typedef struct {
    const wk_conv2d_args *a;
    int64_t slots;
    char *out, *grad_input, *grad_weight, *gw; /* gw: slots - 1 buffers of the weight's size */
    const char *input, *weight, *bias, *grad_out;
    slot_result *result;                       /* per slot */
} slot_job;

static void slot_done(const slot_job *sj, int64_t s, wick_status st) {
    sj->result[s].status = st;
    if (st) snprintf(sj->result[s].msg, sizeof sj->result[s].msg, "%s", wick_last_error());
}

static int64_t slots_for(const wk_conv2d_args *a) {
    int64_t threads = wick_get_num_threads();
    if (threads < 2 || a->n < 2 || group_macs(a) * (double)a->groups < (double)SLOT_MIN_MACS) return 1;
    return threads < a->n ? threads : a->n;
}

static void forward_slot(void *ctx, int64_t begin, int64_t end) {
    const slot_job *sj = ctx;
    const wk_conv2d_args *a = sj->a;
    for (int64_t s = begin; s < end; s++)
        slot_done(sj, s, forward_images(a, a->n * s / sj->slots, a->n * (s + 1) / sj->slots, true, sj->out, sj->input,
                                        sj->weight, sj->bias));
}

/* the pool's status (an interrupt), else the first failure in slot order,
 * raised again on the calling thread with its message */
static wick_status slots_status(const slot_result *r, int64_t slots, wick_status st) {
    if (st) return st;
    for (int64_t s = 0; s < slots; s++)
        if (r[s].status) return wick_fail(r[s].status, "%s", r[s].msg);
    return WICK_OK;
}

static wick_status conv_forward(const wk_conv2d_args *a, char *out, const char *input, const char *weight,
                                const char *bias) {
    if (a->n == 0 || a->o == 0 || a->oh * a->ow == 0) return WICK_OK;
    int64_t slots = slots_for(a);
    if (slots < 2) return forward_images(a, 0, a->n, wick_get_num_threads() == 1, out, input, weight, bias);
    slot_result result[slots];
    slot_job sj = {.a = a, .slots = slots, .out = out, .input = input, .weight = weight, .bias = bias,
                   .result = result};
    for (int64_t s = 0; s < slots; s++) result[s].status = WICK_OK;
    return slots_status(result, slots, wk_parallel_for(slots, 1, forward_slot, &sj));
}

/* grad_bias[o] = sum over images and positions of grad_out[n, o, :] */
typedef struct {
    const wk_conv2d_args *a;
    const char *go;
    char *gb;
} bias_job;

/* a sum in 16 independent lanes, which the compiler vectorises */
#define LANE_SUM(NAME, T)                                                                         \
    static double NAME(const T *p, int64_t n) {                                                   \
        T acc[16] = {0};                                                                          \
        int64_t l = 0;                                                                            \
        for (; l + 16 <= n; l += 16)                                                              \
            for (int k = 0; k < 16; k++) acc[k] += p[l + k];                                      \
        double s = 0;                                                                             \
        for (int k = 0; k < 16; k++) s += acc[k];                                                 \
        for (; l < n; l++) s += p[l];                                                             \
        return s;                                                                                 \
    }
LANE_SUM(lane_sum_f32, float)
LANE_SUM(lane_sum_f64, double)

static void bias_range(void *ctx, int64_t begin, int64_t end) {
    const bias_job *j = ctx;
    const wk_conv2d_args *a = j->a;
    const int64_t L = a->oh * a->ow;
    for (int64_t o = begin; o < end; o++) {
        double s = 0;
        for (int64_t n = 0; n < a->n; n++) {
            int64_t at = (n * a->o + o) * L;
            s += a->dtype == WICK_FLOAT32 ? lane_sum_f32((const float *)j->go + at, L)
                                          : lane_sum_f64((const double *)j->go + at, L);
        }
        if (a->dtype == WICK_FLOAT32) ((float *)j->gb)[o] = (float)s;
        else ((double *)j->gb)[o] = s;
    }
}

/* Images [n_lo, n_hi): grad_input's rows, and their weight gradient into
 * grad_weight (written by the first chunk, added to by the rest). */
static wick_status backward_images(const wk_conv2d_args *a, int64_t n_lo, int64_t n_hi, bool small,
                                   const char *grad_out, const char *input, const char *weight, char *grad_input,
                                   char *grad_weight) {
    conv_plan p;
    plan_dims(&p, a);
    const int64_t es = p.es, L = p.L, cg = p.cg, og = p.og, K = p.K;
    wick_status st = plan_scratch(&p, a, n_hi - n_lo, small);
    if (st) return st;
    char *col = p.col, *tmp = p.tmp;
    const bool direct = p.direct;
    for (int64_t n0 = n_lo; n0 < n_hi && !st; n0 += p.nb) {
        int64_t cur = n_hi - n0 < p.nb ? n_hi - n0 : p.nb;
        for (int64_t g = 0; g < a->groups && !st; g++) {
            conv_job j = {.a = a, .n0 = n0, .cur = cur, .g = g, .L = L, .cg = cg, .og = og, .K = K,
                          .x = input, .dx = grad_input, .col = col, .y = (char *)grad_out, .tmp = tmp,
                          .taps = p.taps};
            /* the grad output of this group as an [og, cur * L] matrix */
            const char *dy = grad_out + (n0 * a->o + g * og) * L * es;
            int64_t lddy = L;
            if (cur > 1) {
                if ((st = wk_parallel_for(cur * og, grain_for(L), gather_range, &j))) break;
                dy = tmp, lddy = cur * L;
            }
            if (grad_weight) { /* dW_g [og, K] (+)= dy @ columns^T */
                int64_t ldb;
                const char *B;
                if ((st = columns(&p, &j, input, &B, &ldb))) break;
                st = gemm(a, 0, 1, og, K, cur * L, dy, lddy, B, ldb, grad_weight + g * og * K * es, K,
                          n0 > n_lo ? 1 : 0);
                if (st) break;
            }
            if (grad_input) { /* columns = W_g^T @ dy, then col2im */
                if (direct) {
                    st = gemm(a, 1, 0, K, L, og, weight + g * og * K * es, K, dy, lddy,
                              grad_input + (n0 * a->c + g * cg) * L * es, L, 0);
                } else {
                    st = gemm(a, 1, 0, K, cur * L, og, weight + g * og * K * es, K, dy, lddy, col, cur * L, 0);
                    if (!st) st = wk_parallel_for(cur * cg, grain_for(a->kh * a->kw * L), col2im_range, &j);
                }
            }
        }
    }
    plan_release(&p);
    return st;
}

static void backward_slot(void *ctx, int64_t begin, int64_t end) {
    const slot_job *sj = ctx;
    const wk_conv2d_args *a = sj->a;
    const size_t gw_bytes = (size_t)(a->o * (a->c / a->groups) * a->kh * a->kw) * wk_dtype_size(a->dtype);
    for (int64_t s = begin; s < end; s++) {
        char *gw = !sj->grad_weight ? NULL : s == 0 ? sj->grad_weight : sj->gw + (s - 1) * gw_bytes;
        slot_done(sj, s, backward_images(a, a->n * s / sj->slots, a->n * (s + 1) / sj->slots, true, sj->grad_out,
                                         sj->input, sj->weight, sj->grad_input, gw));
    }
}

/* grad_weight += each slot's buffer, in slot order, split over the weight's elements */
typedef struct {
    const slot_job *sj;
    int64_t slots;
} sum_job;

static void sum_slots(void *ctx, int64_t begin, int64_t end) {
    const sum_job *m = ctx;
    const wk_conv2d_args *a = m->sj->a;
    const int64_t n = a->o * (a->c / a->groups) * a->kh * a->kw;
    for (int64_t s = 1; s < m->slots; s++) {
        if (a->dtype == WICK_FLOAT32) {
            float *d = (float *)m->sj->grad_weight;
            const float *x = (const float *)m->sj->gw + (s - 1) * n;
            for (int64_t i = begin; i < end; i++) d[i] += x[i];
        } else {
            double *d = (double *)m->sj->grad_weight;
            const double *x = (const double *)m->sj->gw + (s - 1) * n;
            for (int64_t i = begin; i < end; i++) d[i] += x[i];
        }
    }
}

static wick_status conv_backward(const wk_conv2d_args *a, const char *grad_out, const char *input, const char *weight,
                                 char *grad_input, char *grad_weight, char *grad_bias) {
    const int64_t es = (int64_t)wk_dtype_size(a->dtype), L = a->oh * a->ow;
    const int64_t K = (a->c / a->groups) * a->kh * a->kw;
    if (grad_bias) {
        bias_job bj = {a, grad_out, grad_bias};
        wick_status st = wk_parallel_for(a->o, grain_for(a->n * L), bias_range, &bj);
        if (st) return st;
    }
    if (!grad_input && !grad_weight) return WICK_OK;
    if (a->n == 0 || a->o == 0 || L == 0) { /* nothing flows back */
        if (grad_input) memset(grad_input, 0, (size_t)(a->n * a->c * a->h * a->w * es));
        if (grad_weight) memset(grad_weight, 0, (size_t)(a->o * K * es));
        return WICK_OK;
    }
    int64_t slots = slots_for(a);
    const size_t gw_bytes = (size_t)(a->o * K * es), extra = grad_weight ? (size_t)(slots - 1) * gw_bytes : 0;
    if (slots < 2 || extra > SLOT_MAX_GW_BYTES)
        return backward_images(a, 0, a->n, wick_get_num_threads() == 1, grad_out, input, weight, grad_input,
                               grad_weight);
    slot_result result[slots];
    slot_job sj = {.a = a, .slots = slots, .grad_input = grad_input, .grad_weight = grad_weight, .input = input,
                   .weight = weight, .grad_out = grad_out, .result = result};
    wick_status st = scratch(&sj.gw, extra);
    if (st) return st;
    for (int64_t s = 0; s < slots; s++) result[s].status = WICK_OK;
    st = slots_status(result, slots, wk_parallel_for(slots, 1, backward_slot, &sj));
    if (!st && grad_weight) {
        sum_job m = {&sj, slots};
        st = wk_parallel_for(a->o * K, 32768, sum_slots, &m);
    }
    release(sj.gw, extra);
    return st;
}
