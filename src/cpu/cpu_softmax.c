/* Softmax and log-softmax along one dim of a contiguous float tensor seen as
 * [outer, d, inner], and their backwards. Stable: the maximum is subtracted
 * before exponentiating; a row of -inf gives NaN like PyTorch. log_softmax is
 * (x - max) - log(sum), in that order, as PyTorch's: x - (max + log(sum))
 * rounds log(sum) away next to a large max (1e17 in float64; 1e4 in float32
 * loses 4e-4). float32 rows are vectorised (cpu_vmath.h); float64 stays
 * scalar. Rows split among threads. */
#include "cpu.h"
#include "cpu_vmath.h"

#include <math.h>

#define GRAIN_ELEMS 16384 /* elements per thread piece, at least */

typedef struct {
    char *out;
    const char *in, *g; /* g: the backward's incoming gradient */
    int64_t outer, d, inner;
    int log;
} sm_job;

static int64_t sm_grain(int64_t per) { return per >= GRAIN_ELEMS ? 1 : GRAIN_ELEMS / (per ? per : 1); }

/* ---- float32, one contiguous row (inner == 1) ---- */

/* Rows shorter than a vector: padded lanes (-inf, whose results are not stored) */
WK_VSIMD static void sm_short_f32(float *y, const float *x, int64_t d, int log) {
    wk_vf v = wk_vload_part(x, d, -INFINITY);
    float max = wk_vhmax(v);
    if (isinf(max) && max < 0) max = 0; /* all -inf: exp(-inf - 0) = 0, the sum 0, NaN below */
    wk_vf sh = v - max, e = wk_vexp(sh);
    float sum = wk_vhsum(e);
    if (log) wk_vstore_part(y, sh - logf(sum), d);
    else wk_vstore_part(y, e * (1.0f / sum), d);
}

/* Rows of a vector or more: whole vectors, then the last whole vector of the
 * row (overlapping the one before) for the tail, its new lanes masked in the
 * sums; what is stored there is recomputed from x, so the overlap gets the
 * same values twice. */
WK_VSIMD static void sm_row_f32(float *y, const float *x, int64_t d, int log) {
    int64_t k, full = d - d % WK_VL, rest = d - full;
    const float *xl = x + d - WK_VL;
    float *yl = y + d - WK_VL;
    wk_vi tail = wk_vtail(rest);
    wk_vf vm = wk_vload(xl);
    for (k = 0; k < full; k += WK_VL) vm = wk_vmax_plain(vm, wk_vload(x + k));
    float max = wk_vhmax_plain(vm); /* a NaN makes the sum NaN anyway */
    if (isinf(max) && max < 0) max = 0;
    wk_vf vs = wk_vsplat(0);
    if (log) {
        for (k = 0; k < full; k += WK_VL) vs += wk_vexp_le0(wk_vload(x + k) - max);
        if (rest) vs += wk_vsel(tail, wk_vexp_le0(wk_vload(xl) - max), wk_vsplat(0));
        float ls = logf(wk_vhsum(vs));
        for (k = 0; k < full; k += WK_VL) wk_vstore(y + k, (wk_vload(x + k) - max) - ls);
        if (rest) wk_vstore(yl, (wk_vload(xl) - max) - ls);
        return;
    }
    for (k = 0; k < full; k += WK_VL) {
        wk_vf e = wk_vexp_le0(wk_vload(x + k) - max);
        vs += e;
        wk_vstore(y + k, e);
    }
    wk_vf el = wk_vexp_le0(wk_vload(xl) - max);
    if (rest) vs += wk_vsel(tail, el, wk_vsplat(0));
    float inv = 1.0f / wk_vhsum(vs);
    for (k = 0; k < full; k += WK_VL) wk_vstore(y + k, wk_vload(y + k) * inv);
    if (rest) wk_vstore(yl, el * inv);
}

/* Rows of WK_VL to SM_REG_VECS * WK_VL elements, held in registers, two rows
 * at a time: one load, max, exp and sum, one store (the last vector ends at the row's end and
 * overlaps the one before; its repeated lanes are left out of the sum and get
 * the same values twice). `nv` is a constant in each instance below. */
#define SM_REG_VECS 8
#define SM_ROWS 2 /* rows interleaved: their reductions' latencies overlap */
WK_VI void sm_regs_f32(float *y, const float *x, int64_t d, int log, int nv, int nr, float *mx, float *sm) {
    wk_vf v[SM_ROWS][SM_REG_VECS], m[SM_ROWS], s[SM_ROWS], scale[SM_ROWS];
    float max[SM_ROWS];
    wk_vi tail = wk_vtail(d - (int64_t)(nv - 1) * WK_VL);
#define SM_AT(r, i) ((r) * d + ((i) == nv - 1 ? d - WK_VL : (int64_t)(i) * WK_VL))
#pragma GCC unroll 2
    for (int r = 0; r < nr; r++) {
#pragma GCC unroll 8
        for (int i = 0; i < nv; i++) v[r][i] = wk_vload(x + SM_AT(r, i));
        m[r] = v[r][0];
#pragma GCC unroll 8
        for (int i = 1; i < nv; i++) m[r] = wk_vmax_plain(m[r], v[r][i]);
    }
#pragma GCC unroll 2
    for (int r = 0; r < nr; r++) {
        max[r] = wk_vhmax_plain(m[r]);
        if (isinf(max[r]) && max[r] < 0) max[r] = 0; /* all -inf: exp(-inf - 0) = 0, the sum 0, NaN below */
    }
#pragma GCC unroll 2
    for (int r = 0; r < nr; r++) {
        s[r] = wk_vsplat(0);
#pragma GCC unroll 8
        for (int i = 0; i < nv; i++) {
            wk_vf e = wk_vexp_le0(v[r][i] - max[r]);
            s[r] += i == nv - 1 ? wk_vsel(tail, e, wk_vsplat(0)) : e;
            if (!log) v[r][i] = e;
        }
    }
    if (log) { /* the logs come later, a vector of rows at once */
#pragma GCC unroll 2
        for (int r = 0; r < nr; r++) mx[r] = max[r], sm[r] = wk_vhsum(s[r]);
        return;
    }
#pragma GCC unroll 2
    for (int r = 0; r < nr; r++) scale[r] = wk_vsplat(1.0f / wk_vhsum(s[r]));
#pragma GCC unroll 2
    for (int r = 0; r < nr; r++)
#pragma GCC unroll 8
        for (int i = 0; i < nv; i++) wk_vstore(y + SM_AT(r, i), v[r][i] * scale[r]);
#undef SM_AT
}

/* log_softmax: y = (x - max) - log(sum) for a row whose max and log(sum) are known */
WK_VI void sm_shift_f32(float *y, const float *x, int64_t d, int nv, float max, float ls) {
#pragma GCC unroll 8
    for (int i = 0; i < nv; i++) {
        int64_t at = i == nv - 1 ? d - WK_VL : (int64_t)i * WK_VL;
        wk_vstore(y + at, (wk_vload(x + at) - max) - ls);
    }
}

/* rows [0, rows) of one length: softmax two rows at a time; log_softmax in
 * blocks of WK_VL rows (maxima and sums, one vector log, then the shifts) */
WK_VI void sm_rows_nv_f32(float *y, const float *x, int64_t rows, int64_t d, int log, int nv) {
    float mx[WK_VL], sm[WK_VL];
    if (!log) {
        int64_t r = 0;
        for (; r + SM_ROWS <= rows; r += SM_ROWS) sm_regs_f32(y + r * d, x + r * d, d, 0, nv, SM_ROWS, mx, sm);
        if (r < rows) sm_regs_f32(y + r * d, x + r * d, d, 0, nv, 1, mx, sm);
        return;
    }
    for (int64_t b = 0; b < rows; b += WK_VL) {
        int64_t n = rows - b < WK_VL ? rows - b : WK_VL, r = 0;
        for (; r + SM_ROWS <= n; r += SM_ROWS) sm_regs_f32(NULL, x + (b + r) * d, d, 1, nv, SM_ROWS, mx + r, sm + r);
        if (r < n) sm_regs_f32(NULL, x + (b + r) * d, d, 1, nv, 1, mx + r, sm + r);
        for (r = n; r < WK_VL; r++) mx[r] = 0, sm[r] = 1;
        wk_vstore(sm, wk_vlog_sum(wk_vload(sm))); /* kept apart from the max: see the top */
        for (r = 0; r < n; r++) sm_shift_f32(y + (b + r) * d, x + (b + r) * d, d, nv, mx[r], sm[r]);
    }
}

WK_VSIMD static void sm_rows_regs_f32(float *y, const float *x, int64_t rows, int64_t d, int log) {
    switch ((d + WK_VL - 1) / WK_VL) {
#define SM_CASE(NV)                                    \
    case NV:                                           \
        sm_rows_nv_f32(y, x, rows, d, log, NV);        \
        break;
        SM_CASE(1) SM_CASE(2) SM_CASE(3) SM_CASE(4) SM_CASE(5) SM_CASE(6) SM_CASE(7) SM_CASE(8)
#undef SM_CASE
    }
}

/* ---- float32, WK_VL neighbouring columns of [d, inner] at once ---- */

WK_VSIMD static void sm_cols_f32(float *y, const float *x, int64_t d, int64_t inner, int64_t w, int log) {
    wk_vf vm = wk_vsplat(-INFINITY), vs = wk_vsplat(0);
#define LD(p) (w == WK_VL ? wk_vload(p) : wk_vload_part(p, w, 0))
#define ST(p, v) (w == WK_VL ? wk_vstore(p, v) : wk_vstore_part(p, v, w))
    for (int64_t k = 0; k < d; k++) vm = wk_vmax(vm, LD(x + k * inner));
    vm = wk_vsel(wk_vsame(vm, -INFINITY), wk_vsplat(0), vm);
    for (int64_t k = 0; k < d; k++) {
        wk_vf e = wk_vexp(LD(x + k * inner) - vm);
        vs += e;
        if (!log) ST(y + k * inner, e);
    }
    if (log) {
        float b[WK_VL];
        wk_vstore(b, vs);
        for (int i = 0; i < WK_VL; i++) b[i] = logf(b[i]);
        wk_vf ls = wk_vload(b);
        for (int64_t k = 0; k < d; k++) ST(y + k * inner, (LD(x + k * inner) - vm) - ls);
    } else {
        wk_vf inv = 1.0f / vs;
        for (int64_t k = 0; k < d; k++) ST(y + k * inner, LD(y + k * inner) * inv);
    }
#undef LD
#undef ST
}

static void sm_range_f32(void *ctx, int64_t begin, int64_t end) {
    const sm_job *j = ctx;
    if (j->inner == 1 && j->d >= WK_VL && j->d <= SM_REG_VECS * WK_VL) {
        sm_rows_regs_f32((float *)j->out + begin * j->d, (const float *)j->in + begin * j->d, end - begin, j->d, j->log);
        return;
    }
    for (int64_t r = begin; r < end; r++) {
        float *y = (float *)j->out + r * j->d * j->inner;
        const float *x = (const float *)j->in + r * j->d * j->inner;
        if (j->inner == 1) j->d < WK_VL ? sm_short_f32(y, x, j->d, j->log) : sm_row_f32(y, x, j->d, j->log);
        else
            for (int64_t i = 0; i < j->inner; i += WK_VL)
                sm_cols_f32(y + i, x + i, j->d, j->inner, j->inner - i < WK_VL ? j->inner - i : WK_VL, j->log);
    }
}

/* ---- float64, scalar ---- */

static void sm_range_f64(void *ctx, int64_t begin, int64_t end) {
    const sm_job *j = ctx;
    int64_t d = j->d, inner = j->inner;
    for (int64_t r = begin; r < end; r++)
        for (int64_t i = 0; i < inner; i++) {
            const double *x = (const double *)j->in + r * d * inner + i;
            double *y = (double *)j->out + r * d * inner + i;
            double max = x[0];
            for (int64_t k = 1; k < d; k++)
                if (x[k * inner] > max || x[k * inner] != x[k * inner]) max = x[k * inner];
            if (isinf(max) && max < 0) max = 0;
            double sum = 0;
            for (int64_t k = 0; k < d; k++) sum += exp(x[k * inner] - max);
            if (j->log) {
                double ls = log(sum);
                for (int64_t k = 0; k < d; k++) y[k * inner] = (x[k * inner] - max) - ls;
            } else {
                double inv = 1.0 / sum; /* (a product by the reciprocal, as PyTorch's kernels: the same last bit) */
                for (int64_t k = 0; k < d; k++) y[k * inner] = exp(x[k * inner] - max) * inv;
            }
        }
}

static bool sm_shape(const wick_tensor *in, int dim, sm_job *j) {
    j->outer = 1, j->inner = 1, j->d = in->ndim ? in->sizes[dim] : 1;
    for (int i = 0; i < dim; i++) j->outer *= in->sizes[i];
    for (int i = dim + 1; i < in->ndim; i++) j->inner *= in->sizes[i];
    return j->outer && j->inner && j->d; /* false: no element */
}

wick_status cpu_softmax(const wick_tensor *out, const wick_tensor *in, int dim, int log) {
    sm_job j = {.out = wk_data(out), .in = wk_data(in), .log = log};
    if (!sm_shape(in, dim, &j)) return WICK_OK;
    return wk_parallel_for(j.outer, sm_grain(j.d * j.inner), in->dtype == WICK_FLOAT32 ? sm_range_f32 : sm_range_f64,
                           &j);
}

/* ---- backward: softmax gi = y (g - sum(g y)); log_softmax gi = g - exp(y) sum(g) ---- */

WK_VSIMD static void smb_row_f32(float *gi, const float *g, const float *y, int64_t d, int log) {
    if (d < WK_VL) {
        wk_vf gv = wk_vload_part(g, d, 0), yv = wk_vload_part(y, d, 0);
        float s = wk_vhsum(log ? gv : gv * yv);
        wk_vstore_part(gi, log ? gv - wk_vexp_le0(yv) * s : yv * (gv - s), d);
        return;
    }
    int64_t k, full = d - d % WK_VL, rest = d - full;
    wk_vf vs = wk_vsplat(0);
    for (k = 0; k < full; k += WK_VL) vs += log ? wk_vload(g + k) : wk_vload(g + k) * wk_vload(y + k);
    const float *gl = g + d - WK_VL, *yl = y + d - WK_VL;
    if (rest) vs += wk_vsel(wk_vtail(rest), log ? wk_vload(gl) : wk_vload(gl) * wk_vload(yl), wk_vsplat(0));
    float s = wk_vhsum(vs);
    for (k = 0; k < full; k += WK_VL) {
        wk_vf gv = wk_vload(g + k), yv = wk_vload(y + k);
        wk_vstore(gi + k, log ? gv - wk_vexp_le0(yv) * s : yv * (gv - s));
    }
    if (rest) {
        wk_vf gv = wk_vload(gl), yv = wk_vload(yl);
        wk_vstore(gi + d - WK_VL, log ? gv - wk_vexp_le0(yv) * s : yv * (gv - s));
    }
}

#define SMB_STRIDED(NAME, T, EXP)                                                                 \
    static void NAME(T *gi, const T *g, const T *y, int64_t d, int64_t inner, int log) {          \
        for (int64_t i = 0; i < inner; i++) {                                                     \
            T s = 0;                                                                              \
            for (int64_t k = 0; k < d; k++) s += log ? g[k * inner + i] : g[k * inner + i] * y[k * inner + i]; \
            for (int64_t k = 0; k < d; k++) {                                                     \
                int64_t at = k * inner + i;                                                       \
                gi[at] = log ? g[at] - EXP(y[at]) * s : y[at] * (g[at] - s);                      \
            }                                                                                     \
        }                                                                                         \
    }
SMB_STRIDED(smb_strided_f32, float, expf)
SMB_STRIDED(smb_strided_f64, double, exp)

static void smb_range(void *ctx, int64_t begin, int64_t end) {
    const sm_job *j = ctx;
    int64_t span = j->d * j->inner;
    bool f32 = j->log >= 0 && ((j->log & 2) == 0); /* bit 1: float64 */
    int log = j->log & 1;
    for (int64_t r = begin; r < end; r++) {
        if (f32) {
            float *gi = (float *)j->out + r * span;
            const float *g = (const float *)j->g + r * span, *y = (const float *)j->in + r * span;
            if (j->inner == 1) smb_row_f32(gi, g, y, j->d, log);
            else smb_strided_f32(gi, g, y, j->d, j->inner, log);
        } else {
            smb_strided_f64((double *)j->out + r * span, (const double *)j->g + r * span,
                            (const double *)j->in + r * span, j->d, j->inner, log);
        }
    }
}

wick_status cpu_softmax_backward(const wick_tensor *gi, const wick_tensor *g, const wick_tensor *y, int dim, int log) {
    sm_job j = {.out = wk_data(gi), .in = wk_data(y), .g = wk_data(g), .log = (log ? 1 : 0) | (y->dtype == WICK_FLOAT64 ? 2 : 0)};
    if (!sm_shape(y, dim, &j)) return WICK_OK;
    return wk_parallel_for(j.outer, sm_grain(j.d * j.inner), smb_range, &j);
}
