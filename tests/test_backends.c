/* CPU-vs-GPU comparison of every backend kernel, through the public C API.
 *
 * Each case builds the same inputs on the CPU and on cuda:0 (values from a
 * seeded generator, made on the CPU and moved with wick_to; views such as
 * transposes, expands and narrows are then taken on each device), runs one op
 * on both, moves the GPU results back and compares them element by element:
 * integers and bools exactly, floats within a relative tolerance per dtype
 * (float32 1e-5, float64 1e-12, float16 1e-3, bfloat16 8e-3: one bfloat16 ulp
 * is 2^-8), in proportion to |expected| + 1, plus, for ops that add up many
 * products (reductions, matrix products, convolutions, gradients), in
 * proportion to the same op run over |inputs|. NaN must meet NaN and an
 * infinity the same infinity. Where the CPU fails, the GPU must fail with the
 * same status. With `backward`, a case also compares the gradients that
 * wick_backward gives its floating inputs (loss = sum(output * w)).
 *
 * Covered: every unary and binary op (also in place, with numbers, with
 * alpha), clamp, where, copies between every dtype pair (into strided views,
 * across devices), fill, every reduction over each dim and over all, softmax
 * and log_softmax, rand and randn after manual_seed, mm/bmm/matmul/addmm/
 * linear/mse_loss, index_select, gather, scatter, scatter_add, index_add, cat,
 * conv2d, conv_transpose2d, upsample2d (nearest and bilinear), grid_sample2d (every
 * mode and padding, with NaN and huge coordinates), max_pool2d and
 * avg_pool2d with their backward, a small MLP, and the fused recurrent layer
 * (wick_rnn_layer, every mode) with its backward.
 *
 * One line per failing case, then a summary; exit 1 on any mismatch, 77 (the
 * ctest SKIP_RETURN_CODE) where no CUDA GPU is usable. */
#include "wick.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wick_device CPU, GPU;
static int n_cases, n_failed;

/* ---- inputs ---- */

/* How an input's values are made. */
enum {
    V_FLOAT,    /* floats in [-3, 3); integers in [-300, 300] (uint8: [0, 255]); random bools */
    V_SPECIAL,  /* as V_FLOAT plus NaN, +-inf, -0, large and tiny values, integer extremes */
    V_SMALL,    /* integers in [-2, 2] (many ties) */
    V_POSITIVE, /* in [0.5, 2) */
    V_INDEX,    /* integers in [0, hi) */
    V_PERM,     /* integers in [0, hi), distinct along dim `pdim` (scatter without collisions) */
    V_BADINDEX  /* as V_INDEX, but element 0 is hi (out of range) */
};

/* How the tensor is laid out on the device. */
enum {
    L_CONTIG,     /* fresh and contiguous */
    L_TRANSPOSED, /* the last two dims of a contiguous tensor swapped */
    L_EXPANDED,   /* dim 0 expanded from size 1 (stride 0) */
    L_NARROWED,   /* a narrow of a wider last dim (offset, non-contiguous) */
    L_CPU         /* stays on the CPU in both runs (0-d scalars, cross-device copies) */
};

typedef struct {
    wick_dtype dtype;
    int ndim;
    int64_t sizes[4];
    int layout, values, pdim, grad;
    int64_t hi;
    uint64_t seed;
} input_spec;

static uint64_t next_seed = 1;

/* "33x65" -> {33, 65}; "" is 0-d */
static input_spec in_(wick_dtype dtype, int layout, int values, const char *shape) {
    input_spec s;
    memset(&s, 0, sizeof s);
    s.dtype = dtype;
    s.layout = layout;
    s.values = values;
    s.seed = next_seed++;
    for (const char *p = shape; *p;) {
        s.sizes[s.ndim++] = strtoll(p, (char **)&p, 10);
        if (*p == 'x') p++;
    }
    if (s.ndim < 2 && s.layout == L_TRANSPOSED) s.layout = L_CONTIG;
    if (s.ndim < 1 && (s.layout == L_EXPANDED || s.layout == L_NARROWED)) s.layout = L_CONTIG;
    return s;
}

static input_spec index_(int values, const char *shape, int64_t hi, int pdim) {
    input_spec s = in_(WICK_INT64, L_CONTIG, values, shape);
    s.hi = hi;
    s.pdim = pdim;
    return s;
}

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t numel_of(int ndim, const int64_t *sizes) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= sizes[i];
    return n;
}

/* Value i of a contiguous tensor of `sizes` (the base of the view). */
static double gen_double(const input_spec *s, int ndim, const int64_t *sizes, int64_t i) {
    uint64_t r = mix64(s->seed * 0x9e3779b97f4a7c15ULL + mix64((uint64_t)i + 1));
    double u = (double)(r >> 11) * (1.0 / 9007199254740992.0);
    bool fl = wick_dtype_is_floating(s->dtype);
    uint64_t pick = (r >> 3) % 29;
    switch (s->values) {
    case V_SMALL:
        return s->dtype == WICK_BOOL ? (double)(r & 1) : s->dtype == WICK_UINT8 ? (double)(r % 5) : (double)(int64_t)(r % 5) - 2;
    case V_POSITIVE: return fl ? 0.5 + 1.5 * u : (double)(1 + r % 3);
    case V_INDEX: return (double)(r % (uint64_t)s->hi);
    case V_BADINDEX: return i == 0 ? (double)s->hi : (double)(r % (uint64_t)s->hi);
    case V_PERM: {
        int64_t rest = i, c = 0, along = 0;
        for (int d = ndim - 1; d >= 0; d--) {
            int64_t k = rest % sizes[d];
            rest /= sizes[d];
            if (d == s->pdim) along = k;
            else c = c * 7 + k;
        }
        return (double)((along + c) % s->hi);
    }
    default: break;
    }
    if (s->dtype == WICK_BOOL) return (double)(r & 1);
    if (s->values == V_SPECIAL) {
        if (fl) {
            switch (pick) {
            case 0: return NAN;
            case 1: return INFINITY;
            case 2: return -INFINITY;
            case 3: return -0.0;
            case 4: return 1e30;
            case 5: return 70000.5;
            case 6: return 1e-6;
            case 7: return -1e-30;
            default: break;
            }
        } else {
            switch (pick) {
            case 0: return s->dtype == WICK_UINT8 ? 255 : s->dtype == WICK_INT32 ? 2147483647.0 : 4611686018427387904.0;
            case 1: return s->dtype == WICK_UINT8 ? 0 : s->dtype == WICK_INT32 ? -2147483648.0 : -4611686018427387904.0;
            default: break;
            }
        }
    }
    if (fl) return 6 * u - 3;
    if (s->dtype == WICK_UINT8) return (double)(r % 256);
    return (double)(int64_t)(r % 601) - 300;
}

typedef struct {
    wick_tensor *view; /* what the op gets */
    wick_tensor *base; /* the leaf behind it (gradients accumulate there) */
} input_t;

/* Makes the input on `dev` (abs_values: |value|, for the tolerance's scale run). */
static wick_status materialize(const input_spec *s, wick_device dev, int abs_values, input_t *out) {
    int nd = s->ndim;
    int64_t bs[4];
    memcpy(bs, s->sizes, sizeof bs);
    if (s->layout == L_TRANSPOSED) {
        bs[nd - 1] = s->sizes[nd - 2];
        bs[nd - 2] = s->sizes[nd - 1];
    } else if (s->layout == L_EXPANDED) {
        bs[0] = 1;
    } else if (s->layout == L_NARROWED) {
        bs[nd - 1] += 3;
    }
    int64_t n = numel_of(nd, bs);
    double *vals = malloc(sizeof(double) * (size_t)(n ? n : 1));
    int64_t *ivals = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    bool big_ints = s->dtype == WICK_INT64 && s->values == V_SPECIAL;
    for (int64_t i = 0; i < n; i++) {
        vals[i] = gen_double(s, nd, bs, i);
        if (abs_values) vals[i] = fabs(vals[i]);
        ivals[i] = (int64_t)vals[i];
        if (big_ints && i % 11 == 5) ivals[i] = (int64_t)mix64(s->seed + (uint64_t)i); /* beyond 2^53 */
    }
    wick_options cpu_opt = {s->dtype, CPU, 0};
    wick_tensor *cpu_base = NULL, *base = NULL, *view = NULL;
    wick_status st = big_ints ? wick_from_int64(&cpu_base, nd, bs, ivals, cpu_opt)
                              : wick_from_doubles(&cpu_base, nd, bs, vals, cpu_opt);
    free(vals);
    free(ivals);
    if (st) return st;
    wick_device where = s->layout == L_CPU ? CPU : dev;
    st = wick_to(&base, cpu_base, (wick_options){s->dtype, where, 0});
    wick_tensor_release(cpu_base);
    if (st) return st;
    if (s->grad && (st = wick_set_requires_grad(base, 1))) {
        wick_tensor_release(base);
        return st;
    }
    switch (s->layout) {
    case L_TRANSPOSED: st = wick_transpose(&view, base, nd - 2, nd - 1); break;
    case L_EXPANDED: st = wick_expand(&view, base, nd, s->sizes); break;
    case L_NARROWED: st = wick_narrow(&view, base, nd - 1, 1, s->sizes[nd - 1]); break;
    default: wick_tensor_retain(base); view = base; break;
    }
    if (st) {
        wick_tensor_release(base);
        return st;
    }
    out->view = view;
    out->base = base;
    return WICK_OK;
}

/* ---- cases ---- */

typedef enum {
    K_UNARY, K_UNARY_, K_BINARY, K_BINARY_, K_SCALAR, K_SCALAR_FIRST, K_SCALAR_, K_ADD_SCALED, K_CLAMP, K_CLAMP_,
    K_WHERE, K_TO, K_COPY_INTO, K_CONTIGUOUS, K_FILL, K_REDUCE, K_SOFTMAX, K_LOG_SOFTMAX, K_RAND, K_RANDN, K_MM,
    K_BMM, K_MATMUL, K_ADDMM, K_LINEAR, K_MSE, K_INDEX_SELECT, K_GATHER, K_SCATTER, K_SCATTER_, K_SCATTER_ADD_,
    K_INDEX_ADD_, K_CAT, K_CONV2D, K_MAX_POOL, K_AVG_POOL, K_MLP, K_RNN, K_CONV_T, K_UPSAMPLE, K_GRID_SAMPLE
} kind;

static const char *kind_names[] = {
    "unary", "unary_", "binary", "binary_", "binary_scalar", "scalar_binary", "binary_scalar_", "add_scaled", "clamp",
    "clamp_", "where", "to", "copy_", "contiguous", "fill_", "reduce", "softmax", "log_softmax", "rand", "randn", "mm",
    "bmm", "matmul", "addmm", "linear", "mse_loss", "index_select", "gather", "scatter", "scatter_", "scatter_add_",
    "index_add_", "cat", "conv2d", "max_pool2d", "avg_pool2d", "mlp", "rnn_layer", "conv_transpose2d", "upsample2d",
    "grid_sample2d"};

/* How outputs are compared. */
enum { C_ELEM, C_ACCUM };

#define MAX_IN 6
#define MAX_OUT 10
typedef struct {
    kind k;
    int op;
    double x[4];
    int i[10];
    wick_dtype dtype;
    int nin;
    input_spec in[MAX_IN];
    int compare;
    int backward;
} op_case;

static op_case case_(kind k, int op, int nin, ...) {
    op_case c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.op = op;
    c.nin = nin;
    c.compare = C_ELEM;
    va_list ap;
    va_start(ap, nin);
    for (int j = 0; j < nin; j++) c.in[j] = va_arg(ap, input_spec);
    va_end(ap);
    return c;
}

static const char *op_name(const op_case *c) {
    switch (c->k) {
    case K_UNARY:
    case K_UNARY_: return wick_unary_name((wick_unary_op)c->op);
    case K_BINARY:
    case K_BINARY_:
    case K_SCALAR:
    case K_SCALAR_FIRST:
    case K_SCALAR_: return wick_binary_name((wick_binary_op)c->op);
    case K_REDUCE: return wick_reduce_name((wick_reduce_op)c->op);
    default: return "";
    }
}

static void describe(const op_case *c, char *buf, size_t size) {
    static const char layouts[] = "CTENP"; /* contiguous, transposed, expanded, narrowed, on the cpu */
    int n = snprintf(buf, size, "%s %s", kind_names[c->k], op_name(c));
    for (int j = 0; j < c->nin && n < (int)size; j++) {
        n += snprintf(buf + n, size - (size_t)n, "%s%s[", j ? ", " : " (", wick_dtype_name(c->in[j].dtype));
        for (int d = 0; d < c->in[j].ndim && n < (int)size; d++)
            n += snprintf(buf + n, size - (size_t)n, "%s%lld", d ? "x" : "", (long long)c->in[j].sizes[d]);
        if (n < (int)size) n += snprintf(buf + n, size - (size_t)n, "]%c", layouts[c->in[j].layout]);
    }
    if (c->nin && n < (int)size) n += snprintf(buf + n, size - (size_t)n, ")");
    if (n < (int)size && (c->x[0] || c->x[1] || c->i[0] || c->i[1] || c->i[2]))
        snprintf(buf + n, size - (size_t)n, " x=%g,%g i=%d,%d,%d,%d dtype=%s", c->x[0], c->x[1], c->i[0], c->i[1],
                 c->i[2], c->i[3], wick_dtype_name(c->dtype));
}

static wick_status run_op(const op_case *c, wick_device dev, input_t *in, wick_tensor **out, int *nout) {
    wick_tensor **r = out, *a = c->nin > 0 ? in[0].view : NULL, *b = c->nin > 1 ? in[1].view : NULL;
    wick_tensor *t2 = c->nin > 2 ? in[2].view : NULL;
    wick_scalar sc = {c->x[0], c->i[0]};
    wick_status st = WICK_OK;
    *nout = 1;
#define INPLACE(call) (st = (call), st ? st : (wick_tensor_retain(a), r[0] = a, WICK_OK))
    switch (c->k) {
    case K_UNARY: return wick_unary(r, (wick_unary_op)c->op, a);
    case K_UNARY_: return INPLACE(wick_unary_((wick_unary_op)c->op, a));
    case K_BINARY: return wick_binary(r, (wick_binary_op)c->op, a, b);
    case K_BINARY_: return INPLACE(wick_binary_((wick_binary_op)c->op, a, b));
    case K_SCALAR: return wick_binary_scalar(r, (wick_binary_op)c->op, a, sc, 0);
    case K_SCALAR_FIRST: return wick_binary_scalar(r, (wick_binary_op)c->op, a, sc, 1);
    case K_SCALAR_: return INPLACE(wick_binary_scalar_((wick_binary_op)c->op, a, sc));
    case K_ADD_SCALED: return wick_add_scaled(r, a, b, c->x[0]);
    case K_CLAMP: return wick_clamp(r, a, c->x[0], c->x[1]);
    case K_CLAMP_: return INPLACE(wick_clamp_(a, c->x[0], c->x[1]));
    case K_WHERE: return wick_where(r, a, b, t2);
    case K_TO: return wick_to(r, a, (wick_options){c->dtype, wick_tensor_device(a), 0});
    case K_COPY_INTO: /* into input 1, from input 0 */
        if ((st = wick_copy_(b, a))) return st;
        wick_tensor_retain(b);
        r[0] = b;
        return WICK_OK;
    case K_CONTIGUOUS: return wick_contiguous(r, a);
    case K_FILL: return INPLACE(wick_fill_(a, c->x[0]));
    case K_REDUCE: {
        bool idx = c->op == WICK_MAX || c->op == WICK_MIN;
        r[1] = NULL;
        st = wick_reduce(r, idx && c->i[0] >= 0 ? &r[1] : NULL, (wick_reduce_op)c->op, a, c->i[0], c->i[1], c->i[2]);
        if (!st && r[1]) *nout = 2;
        return st;
    }
    case K_SOFTMAX: return wick_softmax(r, a, c->i[0]);
    case K_LOG_SOFTMAX: return wick_log_softmax(r, a, c->i[0]);
    case K_RAND:
    case K_RANDN: {
        wick_options o = {c->dtype, dev, 0};
        const input_spec *s = &c->in[0];
        wick_manual_seed((uint64_t)c->i[0]);
        for (int j = 0; j < c->i[1]; j++) { /* earlier draws move the generator's offset */
            wick_tensor *skip;
            if ((st = c->k == K_RAND ? wick_rand(&skip, s->ndim, s->sizes, o) : wick_randn(&skip, s->ndim, s->sizes, o)))
                return st;
            wick_tensor_release(skip);
        }
        return c->k == K_RAND ? wick_rand(r, s->ndim, s->sizes, o) : wick_randn(r, s->ndim, s->sizes, o);
    }
    case K_MM: return wick_mm(r, a, b);
    case K_BMM: return wick_bmm(r, a, b);
    case K_MATMUL: return wick_matmul(r, a, b);
    case K_ADDMM: return wick_addmm(r, a, b, t2, c->x[0], c->x[1]);
    case K_LINEAR: return wick_linear(r, a, b, t2);
    case K_MSE: return wick_mse_loss(r, a, b, c->i[0]);
    case K_INDEX_SELECT: return wick_index_select(r, a, c->i[0], b);
    case K_GATHER: return wick_gather(r, a, c->i[0], b);
    case K_SCATTER: return wick_scatter(r, a, c->i[0], b, t2);
    case K_SCATTER_: return INPLACE(wick_scatter_(a, c->i[0], b, t2));
    case K_SCATTER_ADD_: return INPLACE(wick_scatter_add_(a, c->i[0], b, t2));
    case K_INDEX_ADD_: return INPLACE(wick_index_add_(a, c->i[0], b, t2));
    case K_CAT: {
        const wick_tensor *ts[2] = {a, b};
        return wick_cat(r, 2, ts, c->i[0]);
    }
    case K_CONV2D:
        return wick_conv2d(r, a, b, t2, c->i[0], c->i[1], c->i[2], c->i[3], c->i[4], c->i[5], c->i[6]);
    case K_CONV_T: /* i: stride h, w, padding h, w, output_padding h, w, dilation h, w, groups */
        return wick_conv_transpose2d(r, a, b, t2, &c->i[0], &c->i[2], &c->i[4], &c->i[6], c->i[8]);
    case K_UPSAMPLE: /* i: out_h, out_w, mode, align_corners; x: scale_h, scale_w */
        return wick_upsample2d(r, a, c->i[0], c->i[1], c->i[2], c->i[3], c->x[0], c->x[1]);
    case K_GRID_SAMPLE: /* i: mode, padding_mode, align_corners */
        return wick_grid_sample2d(r, a, b, c->i[0], c->i[1], c->i[2]);
    case K_MAX_POOL:
        r[1] = NULL;
        st = wick_max_pool2d(r, &r[1], a, c->i[0], c->i[1], c->i[2], c->i[3], c->i[4], c->i[5], c->i[6]);
        if (!st) *nout = 2;
        return st;
    case K_AVG_POOL:
        return wick_avg_pool2d(r, a, c->i[0], c->i[1], c->i[2], c->i[3], c->i[4], c->i[5], c->i[6], c->i[7]);
    case K_MLP: { /* x, w1, b1, w2, b2, target: mean NLL of log_softmax(relu(x w1^T + b1) w2^T + b2) */
        wick_tensor *h = NULL, *h2 = NULL, *z = NULL, *lp = NULL, *picked = NULL, *m = NULL;
        if (!(st = wick_linear(&h, a, in[1].view, in[2].view)) && !(st = wick_unary(&h2, WICK_RELU, h)) &&
            !(st = wick_linear(&z, h2, in[3].view, in[4].view)) && !(st = wick_log_softmax(&lp, z, 1)) &&
            !(st = wick_gather(&picked, lp, 1, in[5].view)) && !(st = wick_reduce(&m, NULL, WICK_MEAN, picked, -1, 0, 0)))
            st = wick_unary(r, WICK_NEG, m);
        wick_tensor_release(h), wick_tensor_release(h2), wick_tensor_release(z);
        wick_tensor_release(lp), wick_tensor_release(picked), wick_tensor_release(m);
        return st;
    }
    case K_RNN: { /* gi, h0, w_hh, b_hh, c0 (LSTM); i: mode, reverse, lengths 0, 1, ... (on the CPU) */
        wick_tensor *len = NULL;
        if (c->i[2] && (st = wick_arange(&len, 0, (double)c->in[0].sizes[1], 1, (wick_options){WICK_INT64, CPU, 0})))
            return st;
        st = wick_rnn_layer(r, (wick_rnn_mode)c->i[0], a, b, c->i[0] == WICK_RNN_LSTM ? in[4].view : NULL, t2,
                            in[3].view, len, c->i[1]);
        wick_tensor_release(len);
        return st;
    }
    }
#undef INPLACE
    return wick_fail(WICK_ERR_ARGUMENT, "test_backends: unknown case kind %d", (int)c->k);
}

/* Runs the case on `dev`: outputs, then (backward) the gradients of the inputs
 * marked `grad`. All results end up on the CPU. */
static wick_status run_case_on(const op_case *c, wick_device dev, int abs_values, wick_tensor **res, int *nres) {
    input_t in[MAX_IN];
    memset(in, 0, sizeof in);
    wick_tensor *out[MAX_OUT] = {0};
    int nout = 0;
    *nres = 0;
    wick_status st = WICK_OK;
    for (int j = 0; j < c->nin && !st; j++) {
        input_spec s = c->in[j];
        s.grad = c->backward && s.grad;
        st = materialize(&s, dev, abs_values && wick_dtype_is_floating(s.dtype), &in[j]);
    }
    if (!st) st = run_op(c, dev, in, out, &nout);
    if (!st && c->backward) {
        /* loss = sum(out * w), w fixed per case */
        input_spec ws = in_(wick_tensor_dtype(out[0]), L_CONTIG, V_FLOAT, "");
        ws.ndim = wick_tensor_ndim(out[0]);
        memcpy(ws.sizes, wick_tensor_sizes(out[0]), sizeof(int64_t) * (size_t)ws.ndim);
        ws.seed = c->in[0].seed + 1000003;
        input_t w = {0};
        wick_tensor *p = NULL, *loss = NULL;
        if (!(st = materialize(&ws, wick_tensor_device(out[0]), abs_values, &w)) &&
            !(st = wick_binary(&p, WICK_MUL, out[0], w.view)) && !(st = wick_reduce(&loss, NULL, WICK_SUM, p, -1, 0, 0)))
            st = wick_backward(loss, NULL, 0);
        wick_tensor_release(w.view), wick_tensor_release(w.base), wick_tensor_release(p), wick_tensor_release(loss);
        for (int j = 0; j < c->nin && !st; j++)
            if (c->in[j].grad) {
                wick_tensor *g = wick_grad(in[j].base);
                if (!g) {
                    st = wick_fail(WICK_ERR_ARGUMENT, "test_backends: input %d got no gradient", j + 1);
                    break;
                }
                wick_tensor_retain(g);
                out[nout++] = g;
            }
    }
    for (int j = 0; j < nout && !st; j++) {
        wick_tensor *detached = NULL, *moved = NULL;
        if (!(st = wick_detach(&detached, out[j])) &&
            !(st = wick_to(&moved, detached, (wick_options){wick_tensor_dtype(out[j]), CPU, 0})))
            res[(*nres)++] = moved;
        wick_tensor_release(detached);
    }
    for (int j = 0; j < nout; j++) wick_tensor_release(out[j]);
    for (int j = 0; j < c->nin; j++) wick_tensor_release(in[j].view), wick_tensor_release(in[j].base);
    if (st)
        for (int j = 0; j < *nres; j++) wick_tensor_release(res[j]);
    return st;
}

/* ---- comparison ---- */

static double tolerance(wick_dtype d) {
    switch (d) {
    case WICK_FLOAT32: return 1e-5;
    case WICK_FLOAT64: return 1e-12;
    case WICK_FLOAT16: return 1e-3;
    case WICK_BFLOAT16: return 8e-3;
    default: return 0;
    }
}

static const char *element(const wick_tensor *t, int64_t lin) {
    int64_t off = 0;
    for (int d = wick_tensor_ndim(t) - 1; d >= 0; d--) {
        off += (lin % wick_tensor_sizes(t)[d]) * wick_tensor_strides(t)[d];
        lin /= wick_tensor_sizes(t)[d];
    }
    return (const char *)wick_tensor_data(t) + off * (int64_t)wick_dtype_size(wick_tensor_dtype(t));
}

static int64_t load_int(const char *p, wick_dtype d) {
    int64_t v64;
    int32_t v32;
    switch (d) {
    case WICK_INT64: memcpy(&v64, p, 8); return v64;
    case WICK_INT32: memcpy(&v32, p, 4); return v32;
    default: return *(const uint8_t *)p;
    }
}

/* Empty when they agree; else one line saying where they first differ. */
static bool compare(const wick_tensor *gpu, const wick_tensor *cpu, const wick_tensor *scale, char *why, size_t size) {
    wick_dtype d = wick_tensor_dtype(cpu);
    int nd = wick_tensor_ndim(cpu);
    if (wick_tensor_dtype(gpu) != d || wick_tensor_ndim(gpu) != nd ||
        memcmp(wick_tensor_sizes(gpu), wick_tensor_sizes(cpu), sizeof(int64_t) * (size_t)nd) != 0) {
        snprintf(why, size, "dtype or shape differ: gpu %s %dd, cpu %s %dd", wick_dtype_name(wick_tensor_dtype(gpu)),
                 wick_tensor_ndim(gpu), wick_dtype_name(d), nd);
        return false;
    }
    int64_t n = wick_tensor_numel(cpu), bad = 0, first = -1;
    double fg = 0, fc = 0, tol = tolerance(d);
    bool fl = wick_dtype_is_floating(d);
    for (int64_t i = 0; i < n; i++) {
        const char *pg = element(gpu, i), *pc = element(cpu, i);
        bool ok;
        double g = wick_value_as_double(pg, d), e = wick_value_as_double(pc, d);
        if (!fl) {
            ok = load_int(pg, d) == load_int(pc, d);
        } else if (g != g || e != e) {
            ok = g != g && e != e;
        } else if (isinf(g) || isinf(e)) {
            ok = g == e;
        } else {
            double s = scale ? fabs(wick_value_as_double(element(scale, i), d)) : 0;
            if (!(s == s) || isinf(s)) s = 0;
            ok = fabs(g - e) <= tol * (fabs(e) + s + 1);
        }
        if (!ok && bad++ == 0) first = i, fg = g, fc = e;
    }
    if (bad) {
        snprintf(why, size, "%lld of %lld elements differ, first at %lld: gpu %.17g vs cpu %.17g", (long long)bad,
                 (long long)n, (long long)first, fg, fc);
        return false;
    }
    return true;
}

static void fail_line(const op_case *c, const char *fmt, ...) {
    char desc[512], msg[512];
    describe(c, desc, sizeof desc);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("FAIL %s%s: %s\n", desc, c->backward ? " +backward" : "", msg);
    fflush(stdout);
}

static void run_case(op_case c) {
    n_cases++;
    wick_tensor *rc[MAX_OUT], *rg[MAX_OUT], *rs[MAX_OUT];
    int nc = 0, ng = 0, ns = 0;
    char cpu_err[300] = "";
    wick_status sc = run_case_on(&c, CPU, 0, rc, &nc);
    if (sc) snprintf(cpu_err, sizeof cpu_err, "%s", wick_last_error());
    wick_status sg = run_case_on(&c, GPU, 0, rg, &ng);
    if (sc != sg) {
        n_failed++;
        fail_line(&c, "status cpu %d (%s) vs gpu %d (%s)", sc, cpu_err, sg, sg ? wick_last_error() : "");
    } else if (!sc) {
        bool scaled = c.compare == C_ACCUM || c.backward;
        if (scaled && run_case_on(&c, CPU, 1, rs, &ns)) ns = 0;
        char why[400];
        for (int j = 0; j < nc; j++) {
            const wick_tensor *scale = scaled && j < ns ? rs[j] : NULL;
            if (!compare(rg[j], rc[j], scale, why, sizeof why)) {
                n_failed++;
                fail_line(&c, "result %d: %s", j + 1, why);
                break;
            }
        }
        for (int j = 0; j < ns; j++) wick_tensor_release(rs[j]);
    }
    for (int j = 0; j < nc; j++) wick_tensor_release(rc[j]);
    for (int j = 0; j < ng; j++) wick_tensor_release(rg[j]);
}

/* ---- the cases ---- */

static const wick_dtype ALL[] = {WICK_FLOAT32, WICK_FLOAT64, WICK_FLOAT16, WICK_BFLOAT16,
                                 WICK_INT64,   WICK_INT32,   WICK_UINT8,   WICK_BOOL};
#define N_ALL 8
static const wick_dtype FLOATS[] = {WICK_FLOAT32, WICK_FLOAT64, WICK_FLOAT16, WICK_BFLOAT16};

static int values_for(wick_dtype d) { return wick_dtype_is_floating(d) ? V_SPECIAL : V_FLOAT; }

static void unary_cases(void) {
    static const struct {
        int layout;
        const char *shape;
    } forms[] = {{L_CONTIG, "33x65"}, {L_TRANSPOSED, "33x65"}, {L_EXPANDED, "4x65"}, {L_NARROWED, "7x9"},
                 {L_CONTIG, ""},      {L_CONTIG, "0x3"},      {L_CONTIG, "3000"}};
    for (int op = 0; op < WICK_NUM_UNARY; op++)
        for (int t = 0; t < N_ALL; t++)
            for (size_t f = 0; f < sizeof forms / sizeof *forms; f++)
                run_case(case_(K_UNARY, op, 1, in_(ALL[t], forms[f].layout, values_for(ALL[t]), forms[f].shape)));
    static const wick_dtype inplace[] = {WICK_FLOAT32, WICK_FLOAT64, WICK_INT64, WICK_FLOAT16};
    for (int op = 0; op < WICK_NUM_UNARY; op++)
        for (int t = 0; t < 4; t++) {
            run_case(case_(K_UNARY_, op, 1, in_(inplace[t], L_TRANSPOSED, values_for(inplace[t]), "17x9")));
            run_case(case_(K_UNARY_, op, 1, in_(inplace[t], L_EXPANDED, values_for(inplace[t]), "3x5"))); /* fails */
        }
    /* gradients of the float ones */
    for (int op = 0; op < WICK_NUM_UNARY; op++)
        for (int t = 0; t < 2; t++) {
            op_case c = case_(K_UNARY, op, 1, in_(FLOATS[t], L_TRANSPOSED, V_POSITIVE, "6x7"));
            c.in[0].grad = 1;
            c.backward = 1;
            run_case(c);
        }
}

static void binary_cases(void) {
    static const wick_dtype pairs[][2] = {
        {WICK_FLOAT32, WICK_FLOAT32}, {WICK_FLOAT64, WICK_FLOAT64}, {WICK_FLOAT16, WICK_FLOAT16},
        {WICK_BFLOAT16, WICK_BFLOAT16}, {WICK_INT64, WICK_INT64}, {WICK_INT32, WICK_INT32}, {WICK_UINT8, WICK_UINT8},
        {WICK_BOOL, WICK_BOOL}, {WICK_FLOAT32, WICK_FLOAT64}, {WICK_INT64, WICK_FLOAT32}, {WICK_INT32, WICK_UINT8},
        {WICK_FLOAT16, WICK_BFLOAT16}, {WICK_FLOAT16, WICK_FLOAT32}, {WICK_BOOL, WICK_INT64},
        {WICK_UINT8, WICK_FLOAT16}, {WICK_BFLOAT16, WICK_INT32}};
    static const struct {
        int la, lb;
        const char *sa, *sb;
    } shapes[] = {{L_CONTIG, L_CONTIG, "33x65", "33x65"}, {L_CONTIG, L_CONTIG, "33x1", "1x65"},
                  {L_TRANSPOSED, L_NARROWED, "33x65", "65"}, {L_CONTIG, L_CPU, "5x6", ""},
                  {L_CONTIG, L_EXPANDED, "", "4x5"},         {L_CONTIG, L_CONTIG, "0x3", "3"},
                  {L_CONTIG, L_CONTIG, "", ""},              {L_NARROWED, L_TRANSPOSED, "2x3x40", "2x3x40"},
                  /* the broadcast plans (src/cuda/cuda_ew_plan.h): row, column, a row over a
                   * 3-d coalesced to two dims, the general walk, a CPU scalar first */
                  {L_CONTIG, L_CONTIG, "33x65", "65"},       {L_CONTIG, L_CONTIG, "33x65", "33x1"},
                  {L_CONTIG, L_CONTIG, "4x5x67", "67"},      {L_TRANSPOSED, L_CONTIG, "3x5x7", "5x1"},
                  {L_CPU, L_CONTIG, "", "33x65"}};
    for (int op = 0; op < WICK_NUM_BINARY; op++)
        for (size_t p = 0; p < sizeof pairs / sizeof *pairs; p++)
            for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
                int va = op >= WICK_EQ ? V_SMALL : values_for(pairs[p][0]);
                int vb = op >= WICK_EQ || op == WICK_POW ? V_SMALL : values_for(pairs[p][1]);
                run_case(case_(K_BINARY, op, 2, in_(pairs[p][0], shapes[s].la, va, shapes[s].sa),
                               in_(pairs[p][1], shapes[s].lb, vb, shapes[s].sb)));
            }
    /* in place, into strided views; some must fail the cast check on both devices */
    static const int ops_[] = {WICK_ADD, WICK_MUL, WICK_DIV, WICK_MAXIMUM, WICK_POW, WICK_SUB};
    for (size_t o = 0; o < sizeof ops_ / sizeof *ops_; o++)
        for (size_t p = 0; p < 10; p++)
            run_case(case_(K_BINARY_, ops_[o], 2, in_(pairs[p][0], L_TRANSPOSED, values_for(pairs[p][0]), "9x7"),
                           in_(pairs[p][1], L_CONTIG, V_SMALL, "7")));
    /* with numbers */
    static const int sops[] = {WICK_ADD, WICK_SUB, WICK_MUL, WICK_DIV, WICK_POW, WICK_MAXIMUM, WICK_GT, WICK_EQ};
    static const struct {
        double v;
        int is_int;
    } nums[] = {{2, 1}, {2.5, 0}, {-1, 1}, {0, 1}};
    for (size_t o = 0; o < sizeof sops / sizeof *sops; o++)
        for (int t = 0; t < N_ALL; t++)
            for (size_t k = 0; k < sizeof nums / sizeof *nums; k++)
                for (int kind3 = 0; kind3 < 3; kind3++) {
                    op_case c = case_(kind3 == 0 ? K_SCALAR : kind3 == 1 ? K_SCALAR_FIRST : K_SCALAR_, sops[o], 1,
                                      in_(ALL[t], L_TRANSPOSED, values_for(ALL[t]), "12x11"));
                    c.x[0] = nums[k].v;
                    c.i[0] = nums[k].is_int;
                    run_case(c);
                }
    /* numbers beside contiguous tensors (the contiguous plan with a host value) */
    for (size_t o = 0; o < sizeof sops / sizeof *sops; o++)
        for (int t = 0; t < N_ALL; t++)
            for (int kind3 = 0; kind3 < 3; kind3++) {
                op_case c = case_(kind3 == 0 ? K_SCALAR : kind3 == 1 ? K_SCALAR_FIRST : K_SCALAR_, sops[o], 1,
                                  in_(ALL[t], L_CONTIG, values_for(ALL[t]), "1000"));
                c.x[0] = 2.5;
                c.i[0] = 0;
                run_case(c);
            }
    /* add with alpha */
    static const double alphas[] = {2.5, -1, 3, 1};
    for (int t = 0; t < N_ALL; t++)
        for (int k = 0; k < 4; k++) {
            op_case c = case_(K_ADD_SCALED, 0, 2, in_(ALL[t], L_CONTIG, values_for(ALL[t]), "33x65"),
                              in_(ALL[t], L_TRANSPOSED, values_for(ALL[t]), "33x65"));
            c.x[0] = alphas[k];
            run_case(c);
        }
    /* gradients, with broadcasting (summed back to each input's shape) */
    static const int gops[] = {WICK_ADD, WICK_SUB, WICK_MUL, WICK_DIV, WICK_POW, WICK_MAXIMUM, WICK_MINIMUM};
    for (size_t o = 0; o < sizeof gops / sizeof *gops; o++)
        for (int t = 0; t < 2; t++) {
            op_case c = case_(K_BINARY, gops[o], 2, in_(FLOATS[t], L_CONTIG, V_POSITIVE, "5x1x4"),
                              in_(FLOATS[t], L_CONTIG, V_POSITIVE, "3x4"));
            c.in[0].grad = c.in[1].grad = 1;
            c.backward = 1;
            run_case(c);
        }
}

static void clamp_where_cases(void) {
    static const double bounds[][2] = {{-1, 1.5}, {-INFINITY, 0}, {0.5, INFINITY}, {-2.5, -2.5}, {1e10, 1e11}, {2, 1}};
    for (int t = 0; t < N_ALL; t++)
        for (int b = 0; b < 6; b++)
            for (int l = 0; l < 2; l++) {
                op_case c = case_(l ? K_CLAMP_ : K_CLAMP, 0, 1,
                                  in_(ALL[t], l ? L_TRANSPOSED : L_NARROWED, values_for(ALL[t]), "33x65"));
                c.x[0] = bounds[b][0];
                c.x[1] = bounds[b][1];
                run_case(c);
            }
    for (int t = 0; t < 2; t++) {
        op_case c = case_(K_CLAMP, 0, 1, in_(FLOATS[t], L_CONTIG, V_FLOAT, "9x8"));
        c.x[0] = -1, c.x[1] = 1.5, c.in[0].grad = 1, c.backward = 1;
        run_case(c);
    }
    static const wick_dtype conds[] = {WICK_BOOL, WICK_UINT8, WICK_FLOAT32};
    for (int cd = 0; cd < 3; cd++)
        for (int t = 0; t < N_ALL; t++) {
            wick_dtype d = ALL[t], e = ALL[(t + 1) % N_ALL];
            int vc = cd == 1 ? V_SMALL : V_FLOAT;
            run_case(case_(K_WHERE, 0, 3, in_(conds[cd], L_CONTIG, vc, "33x65"), in_(d, L_TRANSPOSED, values_for(d), "33x65"),
                           in_(d, L_CONTIG, values_for(d), "33x65")));
            run_case(case_(K_WHERE, 0, 3, in_(conds[cd], L_TRANSPOSED, vc, "33x65"), in_(d, L_CONTIG, values_for(d), "33x1"),
                           in_(e, L_CPU, values_for(e), "")));
            run_case(case_(K_WHERE, 0, 3, in_(conds[cd], L_CONTIG, vc, ""), in_(d, L_EXPANDED, values_for(d), "4x5"),
                           in_(e, L_NARROWED, values_for(e), "4x5")));
            /* a CPU scalar condition and a CPU scalar value: both go by value */
            run_case(case_(K_WHERE, 0, 3, in_(conds[cd], L_CPU, vc, ""), in_(d, L_CONTIG, values_for(d), "33x65"),
                           in_(d, L_CPU, values_for(d), "")));
        }
    op_case c = case_(K_WHERE, 0, 3, in_(WICK_BOOL, L_CONTIG, V_FLOAT, "6x5"), in_(WICK_FLOAT64, L_CONTIG, V_FLOAT, "6x5"),
                      in_(WICK_FLOAT64, L_CONTIG, V_FLOAT, "5"));
    c.in[1].grad = c.in[2].grad = 1, c.backward = 1;
    run_case(c);
}

static void copy_fill_cases(void) {
    static const struct {
        int layout;
        const char *shape;
    } forms[] = {{L_CONTIG, "33x65"}, {L_TRANSPOSED, "33x65"}, {L_EXPANDED, "4x65"}, {L_NARROWED, "2x3x7"},
                 {L_CONTIG, ""},      {L_CONTIG, "0x3"}};
    for (int f = 0; f < N_ALL; f++)
        for (int t = 0; t < N_ALL; t++) {
            for (size_t k = 0; k < sizeof forms / sizeof *forms; k++) {
                op_case c = case_(K_TO, 0, 1, in_(ALL[f], forms[k].layout, V_SPECIAL, forms[k].shape));
                c.dtype = ALL[t];
                run_case(c);
            }
            /* copy_ into a strided view on the GPU, from the GPU and from the CPU */
            run_case(case_(K_COPY_INTO, 0, 2, in_(ALL[f], L_NARROWED, V_SPECIAL, "17x9"), in_(ALL[t], L_TRANSPOSED, V_FLOAT, "17x9")));
            run_case(case_(K_COPY_INTO, 0, 2, in_(ALL[f], L_CPU, V_SPECIAL, "17x9"), in_(ALL[t], L_TRANSPOSED, V_FLOAT, "17x9")));
            run_case(case_(K_COPY_INTO, 0, 2, in_(ALL[f], L_CONTIG, V_SPECIAL, "1x9"), in_(ALL[t], L_NARROWED, V_FLOAT, "17x9")));
        }
    for (int t = 0; t < N_ALL; t++) {
        run_case(case_(K_CONTIGUOUS, 0, 1, in_(ALL[t], L_TRANSPOSED, V_SPECIAL, "2x33x65")));
        run_case(case_(K_CONTIGUOUS, 0, 1, in_(ALL[t], L_EXPANDED, V_SPECIAL, "5x7")));
        run_case(case_(K_CAT, 0, 2, in_(ALL[t], L_TRANSPOSED, V_SPECIAL, "3x4"), in_(ALL[(t + 3) % N_ALL], L_CONTIG, V_SPECIAL, "2x4")));
    }
    static const double vals[] = {1.5, -2.7, NAN, INFINITY, -INFINITY, 300, -1, 65519, 1e10, 1e-8};
    for (int t = 0; t < N_ALL; t++)
        for (int v = 0; v < 10; v++)
            for (int l = 0; l < 3; l++) {
                op_case c = case_(K_FILL, 0, 1, in_(ALL[t], l == 0 ? L_CONTIG : l == 1 ? L_TRANSPOSED : L_NARROWED, V_FLOAT, "17x9"));
                c.x[0] = vals[v];
                run_case(c);
            }
}

static void reduce_cases(void) {
    static const struct {
        int layout;
        const char *shape;
        int all_dtypes;
    } shapes[] = {{L_CONTIG, "7", 1},          {L_CONTIG, "5x300", 1},       {L_CONTIG, "3x20000", 0},
                  {L_CONTIG, "20000x3", 0},     {L_CONTIG, "2x3x4", 1},       {L_CONTIG, "4x0", 1},
                  {L_TRANSPOSED, "33x65", 1},   {L_CONTIG, "40x1100", 0},     {L_TRANSPOSED, "300x20", 0},
                  {L_CONTIG, "", 1},            {L_NARROWED, "6x5x9", 1},     {L_CONTIG, "17000x20", 0}};
    static const wick_dtype few[] = {WICK_FLOAT32, WICK_FLOAT64, WICK_INT64, WICK_FLOAT16};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        int nt = shapes[s].all_dtypes ? N_ALL : 4;
        for (int t = 0; t < nt; t++) {
            wick_dtype d = shapes[s].all_dtypes ? ALL[t] : few[t];
            for (int variant = 0; variant < 2; variant++) {
                input_spec x = in_(d, shapes[s].layout, variant ? V_SMALL : values_for(d), shapes[s].shape);
                for (int op = 0; op < WICK_NUM_REDUCE; op++)
                    for (int dim = -1; dim < x.ndim; dim++)
                        for (int keep = 0; keep < (shapes[s].all_dtypes ? 2 : 1); keep++) {
                            static const int corrections[] = {1, 0, 5};
                            bool var = op == WICK_VAR || op == WICK_STD;
                            for (int k = 0; k < (var ? 3 : 1); k++) {
                                op_case c = case_(K_REDUCE, op, 1, x);
                                c.i[0] = dim, c.i[1] = keep, c.i[2] = corrections[k];
                                c.compare = C_ACCUM;
                                run_case(c);
                            }
                        }
            }
        }
    }
    /* gradients */
    for (int op = 0; op < WICK_NUM_REDUCE; op++) {
        if (op == WICK_ARGMAX || op == WICK_ARGMIN) continue;
        for (int dim = -1; dim < 2; dim++) {
            op_case c = case_(K_REDUCE, op, 1, in_(WICK_FLOAT64, L_TRANSPOSED, V_POSITIVE, "6x7"));
            c.i[0] = dim, c.i[2] = 1, c.in[0].grad = 1, c.backward = 1, c.compare = C_ACCUM;
            run_case(c);
        }
    }
}

static void softmax_cases(void) {
    static const char *shapes[] = {"4x10", "3x2000", "5x100", "6x7x5", "100x50", "", "0x5", "5000x3", "1", "2x3x1500"};
    for (int t = 0; t < 4; t++)
        for (int s = 0; s < 10; s++)
            for (int v = 0; v < 2; v++)
                for (int lg = 0; lg < 2; lg++) {
                    input_spec x = in_(FLOATS[t], L_CONTIG, v ? V_SPECIAL : V_FLOAT, shapes[s]);
                    for (int dim = 0; dim < (x.ndim ? x.ndim : 1); dim++) {
                        op_case c = case_(lg ? K_LOG_SOFTMAX : K_SOFTMAX, 0, 1, x);
                        c.i[0] = dim;
                        run_case(c);
                    }
                }
    run_case(case_(K_SOFTMAX, 0, 1, in_(WICK_INT64, L_CONTIG, V_FLOAT, "3x4"))); /* fails on both */
    for (int lg = 0; lg < 2; lg++)
        for (int dim = 0; dim < 2; dim++) {
            op_case c = case_(lg ? K_LOG_SOFTMAX : K_SOFTMAX, 0, 1, in_(WICK_FLOAT64, L_TRANSPOSED, V_FLOAT, "5x8"));
            c.i[0] = dim, c.in[0].grad = 1, c.backward = 1;
            run_case(c);
        }
}

static void random_cases(void) {
    static const char *shapes[] = {"1000", "33x65", "0", "", "3"};
    for (int normal = 0; normal < 2; normal++)
        for (int t = 0; t < N_ALL; t++)
            for (int s = 0; s < 5; s++)
                for (int skip = 0; skip < 2; skip++) {
                    op_case c = case_(normal ? K_RANDN : K_RAND, 0, 0);
                    c.in[0] = in_(ALL[t], L_CONTIG, V_FLOAT, shapes[s]);
                    c.dtype = ALL[t];
                    c.i[0] = 1234567 + s * 7 + t;
                    c.i[1] = skip * 3;
                    run_case(c);
                }
}

static void linalg_cases(void) {
    static const wick_dtype dts[] = {WICK_FLOAT32, WICK_FLOAT64, WICK_FLOAT16, WICK_BFLOAT16, WICK_INT64};
    for (int t = 0; t < 5; t++) {
        wick_dtype d = dts[t];
        int v = wick_dtype_is_floating(d) ? V_FLOAT : V_SMALL;
        op_case cs[] = {
            case_(K_MM, 0, 2, in_(d, L_CONTIG, v, "17x33"), in_(d, L_CONTIG, v, "33x9")),
            case_(K_MM, 0, 2, in_(d, L_TRANSPOSED, v, "17x33"), in_(d, L_CONTIG, v, "33x9")),
            case_(K_MM, 0, 2, in_(d, L_CONTIG, v, "17x33"), in_(d, L_TRANSPOSED, v, "33x9")),
            case_(K_MM, 0, 2, in_(d, L_NARROWED, v, "17x33"), in_(d, L_NARROWED, v, "33x9")),
            case_(K_MM, 0, 2, in_(d, L_CONTIG, v, "0x5"), in_(d, L_CONTIG, v, "5x3")),
            case_(K_MM, 0, 2, in_(d, L_CONTIG, v, "4x0"), in_(d, L_CONTIG, v, "0x3")),
            case_(K_MM, 0, 2, in_(d, L_CONTIG, v, "130x257"), in_(d, L_TRANSPOSED, v, "257x70")),
            case_(K_BMM, 0, 2, in_(d, L_CONTIG, v, "3x4x5"), in_(d, L_TRANSPOSED, v, "3x5x6")),
            case_(K_MATMUL, 0, 2, in_(d, L_CONTIG, v, "7"), in_(d, L_CONTIG, v, "7")),
            case_(K_MATMUL, 0, 2, in_(d, L_CONTIG, v, "4x7"), in_(d, L_CONTIG, v, "7")),
            case_(K_MATMUL, 0, 2, in_(d, L_CONTIG, v, "7"), in_(d, L_TRANSPOSED, v, "7x3")),
            case_(K_MATMUL, 0, 2, in_(d, L_CONTIG, v, "2x3x4x5"), in_(d, L_CONTIG, v, "5x6")),
            case_(K_MATMUL, 0, 2, in_(d, L_EXPANDED, v, "3x4x5"), in_(d, L_CONTIG, v, "3x5x2")),
            case_(K_ADDMM, 0, 3, in_(d, L_CONTIG, v, "9"), in_(d, L_CONTIG, v, "17x33"), in_(d, L_TRANSPOSED, v, "33x9")),
            case_(K_LINEAR, 0, 3, in_(d, L_CONTIG, v, "8x33"), in_(d, L_CONTIG, v, "9x33"), in_(d, L_CONTIG, v, "9")),
            case_(K_LINEAR, 0, 2, in_(d, L_TRANSPOSED, v, "8x33"), in_(d, L_CONTIG, v, "9x33")),
        };
        for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
            cs[k].compare = C_ACCUM;
            if (cs[k].k == K_ADDMM) cs[k].x[0] = 0.5, cs[k].x[1] = -2;
            run_case(cs[k]);
            if (t < 2) { /* and the gradients */
                for (int j = 0; j < cs[k].nin; j++) cs[k].in[j].grad = 1;
                cs[k].backward = 1;
                run_case(cs[k]);
            }
        }
    }
    for (int t = 0; t < 2; t++)
        for (int red = 0; red < 3; red++) {
            op_case c = case_(K_MSE, 0, 2, in_(FLOATS[t], L_CONTIG, V_FLOAT, "8x5"), in_(FLOATS[t], L_TRANSPOSED, V_FLOAT, "8x5"));
            c.i[0] = red, c.compare = C_ACCUM, c.in[0].grad = c.in[1].grad = 1, c.backward = 1;
            run_case(c);
        }
}

static void index_cases(void) {
    static const wick_dtype dts[] = {WICK_FLOAT32, WICK_FLOAT64, WICK_INT64, WICK_FLOAT16, WICK_BOOL, WICK_UINT8};
    for (int t = 0; t < 6; t++) {
        wick_dtype d = dts[t];
        int v = values_for(d);
        for (int dim = 0; dim < 2; dim++) {
            int64_t hi = dim ? 6 : 5;
            op_case cs[] = {
                case_(K_INDEX_SELECT, 0, 2, in_(d, L_TRANSPOSED, v, "5x6"), index_(V_INDEX, "7", hi, 0)),
                case_(K_INDEX_SELECT, 0, 2, in_(d, L_CONTIG, v, "5x6"), index_(V_BADINDEX, "7", hi, 0)),
                case_(K_GATHER, 0, 2, in_(d, L_CONTIG, v, "5x6"), index_(V_INDEX, "3x4", hi, 0)),
                case_(K_GATHER, 0, 2, in_(d, L_NARROWED, v, "5x6"), index_(V_BADINDEX, "3x4", hi, 0)),
                case_(K_SCATTER, 0, 3, in_(d, L_CONTIG, v, "5x6"), index_(V_PERM, dim ? "5x4" : "3x6", hi, dim),
                      in_(d, L_TRANSPOSED, v, dim ? "5x4" : "3x6")),
                case_(K_SCATTER_, 0, 3, in_(d, L_TRANSPOSED, v, "5x6"), index_(V_PERM, dim ? "5x4" : "3x6", hi, dim),
                      in_(d, L_CONTIG, v, dim ? "5x4" : "3x6")),
                case_(K_SCATTER_, 0, 3, in_(d, L_CONTIG, v, "5x6"), index_(V_BADINDEX, "3x4", hi, dim),
                      in_(d, L_CONTIG, v, "3x4")),
                case_(K_SCATTER_ADD_, 0, 3, in_(d, L_CONTIG, v, "5x6"), index_(V_INDEX, "4x6", hi, dim),
                      in_(d, L_CONTIG, v, "4x6")),
                case_(K_INDEX_ADD_, 0, 3, in_(d, L_TRANSPOSED, v, "5x6"), index_(V_INDEX, "9", hi, 0),
                      in_(d, L_CONTIG, v, dim ? "5x9" : "9x6")),
                case_(K_INDEX_ADD_, 0, 3, in_(d, L_CONTIG, v, "5x6"), index_(V_BADINDEX, "9", hi, 0),
                      in_(d, L_CONTIG, v, dim ? "5x9" : "9x6")),
            };
            for (size_t k = 0; k < sizeof cs / sizeof *cs; k++) {
                cs[k].i[0] = dim;
                if (cs[k].k == K_SCATTER_ADD_ || cs[k].k == K_INDEX_ADD_) cs[k].compare = C_ACCUM;
                run_case(cs[k]);
            }
        }
    }
    /* gradients (index_select and gather backward go through index_add and scatter_add) */
    for (int t = 0; t < 2; t++)
        for (int dim = 0; dim < 2; dim++) {
            op_case a = case_(K_INDEX_SELECT, 0, 2, in_(FLOATS[t], L_CONTIG, V_FLOAT, "5x6"), index_(V_INDEX, "9", dim ? 6 : 5, 0));
            op_case b = case_(K_GATHER, 0, 2, in_(FLOATS[t], L_CONTIG, V_FLOAT, "5x6"), index_(V_INDEX, "4x6", dim ? 6 : 5, 0));
            a.i[0] = b.i[0] = dim;
            a.in[0].grad = b.in[0].grad = 1;
            a.backward = b.backward = 1;
            run_case(a);
            run_case(b);
        }
}

/* Runs c, then (with `backward`) c again with the gradients of every input. */
static void run_fwd_bwd(op_case c, bool backward) {
    run_case(c);
    if (!backward) return;
    for (int j = 0; j < c.nin; j++) c.in[j].grad = 1;
    c.backward = 1;
    run_case(c);
}

/* A convolution case (conv2d or conv_transpose2d): input x, weight w, bias b
 * ("" for none), the np ints of its parameters; backward in float32/64. */
static void conv_case(kind k, wick_dtype d, const char *x, const char *w, const char *b, const int *p, int np) {
    op_case c = case_(k, 0, 3, in_(d, L_CONTIG, V_FLOAT, x), in_(d, L_CONTIG, V_FLOAT, w), in_(d, L_CONTIG, V_FLOAT, b));
    if (!b[0]) c.nin = 2;
    memcpy(c.i, p, sizeof(int) * (size_t)np);
    c.compare = C_ACCUM;
    run_fwd_bwd(c, d == WICK_FLOAT32 || d == WICK_FLOAT64);
}

static void nn_cases(void) {
    static const struct {
        const char *x, *w, *b; /* b "": no bias */
        int sh, sw, ph, pw, dh, dw, groups;
    } convs[] = {{"2x3x9x8", "4x3x3x3", "4", 1, 1, 1, 1, 1, 1, 1},   {"2x3x9x8", "4x3x3x3", "", 2, 2, 0, 0, 2, 2, 1},
                 {"1x4x7x7", "6x2x3x2", "6", 1, 2, 1, 0, 1, 1, 2},   {"3x9x8", "5x3x1x1", "5", 1, 1, 0, 0, 1, 1, 1},
                 {"2x2x5x5", "3x2x5x5", "3", 1, 1, 2, 2, 1, 1, 1},   {"4x3x16x16", "8x3x3x3", "8", 2, 1, 1, 1, 1, 1, 1}};
    for (int t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof convs / sizeof *convs; k++) {
            int p[7] = {convs[k].sh, convs[k].sw, convs[k].ph, convs[k].pw, convs[k].dh, convs[k].dw, convs[k].groups};
            conv_case(K_CONV2D, FLOATS[t], convs[k].x, convs[k].w, convs[k].b, p, 7);
        }
    /* transposed convolutions: x, w [Cin, Cout / groups, kH, kW], b; stride, padding, output_padding, dilation */
    static const struct {
        const char *x, *w, *b;
        int p[9];
    } convts[] = {{"2x4x5x5", "4x3x3x3", "3", {2, 2, 1, 1, 1, 1, 1, 1, 1}},  /* dcgan's upsampling layer */
                  {"2x8x1x1", "8x4x4x4", "", {1, 1, 0, 0, 0, 0, 1, 1, 1}},   /* dcgan's first layer */
                  {"1x4x4x6", "4x2x4x4", "2", {2, 1, 1, 0, 0, 0, 1, 1, 1}},
                  {"2x4x3x3", "4x3x2x3", "6", {1, 2, 0, 1, 0, 1, 2, 1, 2}},  /* groups 2, dilation */
                  {"3x5x4", "3x2x1x1", "2", {1, 1, 0, 0, 0, 0, 1, 1, 1}}};   /* unbatched, 1x1 */
    for (int t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof convts / sizeof *convts; k++) {
            conv_case(K_CONV_T, FLOATS[t], convts[k].x, convts[k].w, convts[k].b, convts[k].p, 9);
        }
    /* upsampling of [2, 3, 5, 4]: out_h, out_w, mode (0 nearest, 1 bilinear), align_corners; 1 / scale_factor */
    static const struct {
        int i[4];
        double sh, sw;
    } ups[] = {{{10, 8, 0, 0}, 0, 0},     {{7, 9, 0, 0}, 0, 0},   {{3, 2, 0, 0}, 0, 0}, {{10, 8, 1, 0}, 0, 0},
               {{9, 7, 1, 1}, 0, 0},      {{3, 2, 1, 0}, 0, 0},   {{3, 2, 1, 1}, 0, 0}, {{12, 10, 1, 0}, 1 / 2.5, 1 / 2.5},
               {{7, 6, 0, 0}, 1 / 1.5, 1 / 1.5}};
    for (int t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof ups / sizeof *ups; k++) {
            op_case c = case_(K_UPSAMPLE, 0, 1, in_(FLOATS[t], k % 2 ? L_TRANSPOSED : L_CONTIG, V_FLOAT, "2x3x5x4"));
            memcpy(c.i, ups[k].i, sizeof ups[k].i);
            c.x[0] = ups[k].sh, c.x[1] = ups[k].sw;
            c.compare = C_ACCUM;
            run_fwd_bwd(c, t < 2);
        }
    /* grid sampling of [2, 3, 5, 4] at a [2, 6, 7, 2] grid of values in [-3, 3) (most outside), or
     * with NaN, infinities and huge values: every mode (0 bilinear, 1 nearest), padding (zeros,
     * border, reflection) and align_corners */
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 12; k++) {
            op_case c = case_(K_GRID_SAMPLE, 0, 2, in_(FLOATS[t], k % 2 ? L_TRANSPOSED : L_CONTIG, V_FLOAT, "2x3x5x4"),
                              in_(FLOATS[t], L_CONTIG, k % 4 == 3 ? V_SPECIAL : V_FLOAT, "2x6x7x2"));
            c.i[0] = k / 6, c.i[1] = k / 2 % 3, c.i[2] = k % 2;
            c.compare = C_ACCUM;
            run_fwd_bwd(c, t < 2);
        }
    static const int pools[][7] = {{2, 2, 2, 2, 0, 0, 0}, {3, 3, 2, 2, 1, 1, 0}, {3, 3, 1, 1, 1, 1, 1},
                                   {2, 3, 1, 2, 1, 1, 1}, {3, 2, 3, 2, 0, 1, 1}};
    for (int t = 0; t < 3; t++)
        for (int k = 0; k < 5; k++)
            for (int v = 0; v < 3; v++) {
                wick_dtype d = FLOATS[t];
                int vals = v == 0 ? V_FLOAT : v == 1 ? V_SMALL : V_SPECIAL;
                op_case mp = case_(K_MAX_POOL, 0, 1, in_(d, L_CONTIG, vals, "2x3x9x10"));
                memcpy(mp.i, pools[k], sizeof pools[k]);
                run_case(mp);
                for (int cip = 0; cip < 2; cip++) {
                    op_case ap = case_(K_AVG_POOL, 0, 1, in_(d, L_CONTIG, vals, "3x9x10"));
                    memcpy(ap.i, pools[k], sizeof pools[k]);
                    ap.i[7] = cip;
                    ap.compare = C_ACCUM;
                    run_case(ap);
                    if (t < 2 && v < 2) {
                        ap.in[0].grad = 1, ap.backward = 1;
                        run_case(ap);
                    }
                }
                if (t < 2 && v < 2) {
                    mp.in[0].grad = 1, mp.backward = 1;
                    run_case(mp);
                }
            }
    for (int t = 0; t < 2; t++) {
        wick_dtype d = FLOATS[t];
        op_case m = case_(K_MLP, 0, 6, in_(d, L_CONTIG, V_FLOAT, "16x20"), in_(d, L_CONTIG, V_FLOAT, "32x20"),
                          in_(d, L_CONTIG, V_FLOAT, "32"), in_(d, L_CONTIG, V_FLOAT, "10x32"), in_(d, L_CONTIG, V_FLOAT, "10"),
                          index_(V_INDEX, "16x1", 10, 0));
        for (int j = 0; j < 5; j++) m.in[j].grad = 1;
        m.backward = 1;
        m.compare = C_ACCUM;
        run_case(m);
    }
}

/* The fused recurrent layer, every mode, both directions, with and without
 * lengths, forward and backward (gradients of gi, h0, w_hh, b_hh, c0). */
static void rnn_cases(void) {
    static const char *gis[] = {"5x3x4", "5x3x4", "5x3x16", "5x3x12"}; /* H = 4: gates x 4 */
    for (int t = 0; t < 2; t++)
        for (int mode = WICK_RNN_TANH; mode <= WICK_RNN_GRU; mode++)
            for (int v = 0; v < 4; v++) {
                wick_dtype d = FLOATS[t];
                const char *w = mode == WICK_RNN_LSTM ? "16x4" : mode == WICK_RNN_GRU ? "12x4" : "4x4";
                const char *bias = mode == WICK_RNN_LSTM ? "16" : mode == WICK_RNN_GRU ? "12" : "4";
                op_case c = case_(K_RNN, 0, mode == WICK_RNN_LSTM ? 5 : 4, in_(d, L_CONTIG, V_FLOAT, gis[mode]),
                                  in_(d, v == 3 ? L_TRANSPOSED : L_CONTIG, V_FLOAT, "3x4"),
                                  in_(d, L_CONTIG, V_FLOAT, w), in_(d, L_CONTIG, V_FLOAT, bias),
                                  in_(d, L_CONTIG, V_FLOAT, "3x4"));
                c.i[0] = mode, c.i[1] = v & 1, c.i[2] = v >= 2;
                c.compare = C_ACCUM;
                run_case(c);
                for (int j = 0; j < c.nin; j++) c.in[j].grad = 1;
                c.backward = 1;
                run_case(c);
            }
}

/* Reductions and softmax over strided (non-last) dims: the tiled kernels of
 * cuda_reduce.cu / cuda_softmax.cu (tile widths 32, 8, 4 and 2; short dims a
 * thread per output; a long strided dim split over blocks). */
static void tile_cases(void) {
    static const char *shapes[] = {"64x33x40", "3x1000x5", "9x2", "1x5000x2", "2x20000x3", "7x4x9", "3x5x2", "0x9x4"};
    static const int ops[] = {WICK_SUM, WICK_MEAN, WICK_MAX, WICK_ARGMIN, WICK_VAR, WICK_PROD};
    for (int t = 0; t < 2; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
            for (int v = 0; v < 2; v++) {
                input_spec x = in_(FLOATS[t], L_CONTIG, v ? V_SPECIAL : V_FLOAT, shapes[s]);
                for (int dim = 0; dim < x.ndim - 1; dim++) {
                    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
                        op_case c = case_(K_REDUCE, ops[o], 1, x);
                        c.i[0] = dim, c.i[1] = 0, c.i[2] = 1;
                        c.compare = C_ACCUM;
                        run_case(c);
                    }
                    for (int lg = 0; lg < 2; lg++) {
                        op_case c = case_(lg ? K_LOG_SOFTMAX : K_SOFTMAX, 0, 1, x);
                        c.i[0] = dim;
                        run_case(c);
                    }
                }
            }
}

/* The GPU's transform (the DFT matrix product, or a kernel once it has one)
 * against the CPU's FFT kernel, as the real views of complex results. */
static void fft_cases(void) {
    static const int64_t shapes[][2] = {{3, 8}, {2, 12}, {4, 1}, {1, 17}, {5, 100}};
    static const wick_dtype parts[] = {WICK_FLOAT32, WICK_FLOAT64};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int p = 0; p < 2; p++)
            for (int dim = 0; dim < 2; dim++)
                for (int sign = -1; sign <= 1; sign += 2) {
                    n_cases++;
                    wick_options o = {parts[p], CPU, 0};
                    wick_tensor *re = NULL, *im = NULL, *z = NULL, *zg = NULL, *yc = NULL, *yg = NULL, *yh = NULL,
                                *vc = NULL, *vg = NULL, *scale = NULL;
                    wick_status st = wick_randn(&re, 2, shapes[s], o);
                    if (!st) st = wick_randn(&im, 2, shapes[s], o);
                    if (!st) st = wick_complex(&z, re, im);
                    if (!st) st = wick_to(&zg, z, (wick_options){wick_tensor_dtype(z), GPU, 0});
                    if (!st) st = wick_fft_c2c(&yc, z, dim, sign);
                    if (!st) st = wick_fft_c2c(&yg, zg, dim, sign);
                    if (!st) st = wick_to(&yh, yg, (wick_options){wick_tensor_dtype(yg), CPU, 0});
                    if (!st) st = wick_view_as_real(&vc, yc);
                    if (!st) st = wick_view_as_real(&vg, yh);
                    /* a sum of n terms of size ~1: its rounding grows with n */
                    if (!st) st = wick_full(&scale, wick_tensor_ndim(vc), wick_tensor_sizes(vc), 4.0 * (double)shapes[s][dim], o);
                    char why[400];
                    if (st) {
                        n_failed++;
                        printf("FAIL fft %s %lldx%lld dim %d sign %d: %s\n", wick_dtype_name(parts[p]),
                               (long long)shapes[s][0], (long long)shapes[s][1], dim, sign, wick_last_error());
                    } else if (!compare(vg, vc, scale, why, sizeof why)) {
                        n_failed++;
                        printf("FAIL fft %s %lldx%lld dim %d sign %d: %s\n", wick_dtype_name(parts[p]),
                               (long long)shapes[s][0], (long long)shapes[s][1], dim, sign, why);
                    }
                    wick_tensor *all[] = {re, im, z, zg, yc, yg, yh, vc, vg, scale};
                    for (size_t k = 0; k < sizeof all / sizeof *all; k++) wick_tensor_release(all[k]);
                }
}

int main(void) {
    if (!wick_cuda_is_available()) {
        printf("test_backends: skipped (no CUDA GPU)\n");
        return 77;
    }
    CPU = wick_cpu();
    if (wick_device_parse("cuda:0", &GPU)) {
        printf("test_backends: %s\n", wick_last_error());
        return 1;
    }
    int64_t held = wick_cuda_memory_allocated(0);
    unary_cases();
    binary_cases();
    clamp_where_cases();
    copy_fill_cases();
    reduce_cases();
    softmax_cases();
    tile_cases();
    random_cases();
    linalg_cases();
    index_cases();
    nn_cases();
    rnn_cases();
    fft_cases();
    wick_status st = wick_cuda_synchronize(0);
    if (st) {
        n_failed++;
        printf("FAIL synchronize: %s\n", wick_last_error());
    }
    int64_t left = wick_cuda_memory_allocated(0) - held;
    if (left != 0) {
        n_failed++;
        printf("FAIL memory: %lld bytes still allocated on cuda:0 after every tensor was released\n", (long long)left);
    }
    printf("test_backends: %d cases, %d failed\n", n_cases, n_failed);
    return n_failed ? 1 : 0;
}
