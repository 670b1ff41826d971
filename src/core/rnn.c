/* The fused recurrent layer (wick_rnn_layer): checks, the time loop and
 * autograd here; the per-step element math in the backends (rnn_step,
 * rnn_step_backward over src/core/rnn.h's wk_rnn_fwd / wk_rnn_bwd), the
 * products through the backend's gemm. Forward per step: gh = h W_hh^T (one
 * gemm, W_hh transposed once before the loop), then the gates in one pass that
 * also writes the step's output and saves what the backward needs (the
 * workspace). Backward per step, last to first: the gate gradients in one pass,
 * then dh += dgh W_hh (one gemm); after the loop dW_hh = dgh^T hprev over all
 * steps (one gemm) and db_hh = the column sums of dgh. The gradients of x,
 * W_ih and b_ih follow from the caller's one product gi = x W_ih^T + b_ih. */
#include "autocast.h"
#include "rnn.h"

#include "autograd.h"

#define OP "rnn_layer"

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

static const char *mode_name(int mode) {
    static const char *const names[] = {"RNN_TANH", "RNN_RELU", "LSTM", "GRU"};
    return mode >= 0 && mode <= WICK_RNN_GRU ? names[mode] : "?";
}

/* t must be [d0, d1] (or [d0] when d1 < 0) of dtype `dtype`. */
static wick_status check_shape(const wick_tensor *t, const char *what, int64_t d0, int64_t d1, wick_dtype dtype) {
    char got[WK_SHAPE_BUF];
    int nd = d1 < 0 ? 1 : 2;
    if (t->ndim != nd || t->sizes[0] != d0 || (nd == 2 && t->sizes[1] != d1)) {
        if (nd == 1)
            return wick_fail(WICK_ERR_SHAPE, OP ": expected %s of shape [%lld], got %s", what, (long long)d0,
                             wk_shape_str(t->ndim, t->sizes, got, sizeof got));
        return wick_fail(WICK_ERR_SHAPE, OP ": expected %s of shape [%lld, %lld], got %s", what, (long long)d0,
                         (long long)d1, wk_shape_str(t->ndim, t->sizes, got, sizeof got));
    }
    if (t->dtype != dtype)
        return wick_fail(WICK_ERR_DTYPE, OP ": expected %s of dtype %s (the input's), got %s", what,
                         wick_dtype_name(dtype), wick_dtype_name(t->dtype));
    return WICK_OK;
}

/* lengths: int64 [B] on the CPU, each in [0, T]. */
static wick_status check_lengths(const wick_tensor *len, int64_t T, int64_t B) {
    char got[WK_SHAPE_BUF];
    if (len->dtype != WICK_INT64 || len->ndim != 1 || len->sizes[0] != B)
        return wick_fail(WICK_ERR_SHAPE, OP ": expected lengths as an int64 tensor of shape [%lld], got %s %s",
                         (long long)B, wick_dtype_name(len->dtype), wk_shape_str(len->ndim, len->sizes, got, sizeof got));
    if (len->storage->device.type != WICK_CPU)
        return wick_fail(WICK_ERR_DEVICE, OP ": lengths must be on the CPU (like PyTorch's pack_padded_sequence)");
    const int64_t *p = (const int64_t *)wk_data(len);
    for (int64_t b = 0; b < B; b++) {
        int64_t v = p[b * len->strides[0]];
        if (v < 0 || v > T)
            return wick_fail(WICK_ERR_ARGUMENT, OP ": lengths[%lld] = %lld is outside [0, %lld] (the sequence length)",
                             (long long)b + 1, (long long)v, (long long)T);
    }
    return WICK_OK;
}

/* Sizes T, B, H, G from the operands, after every check. */
typedef struct geometry {
    int64_t T, B, H, G, W;
    wick_dtype dtype;
} geometry;

static wick_status check(int mode, const wick_tensor *gi, const wick_tensor *h0, const wick_tensor *c0,
                         const wick_tensor *w_hh, const wick_tensor *b_hh, const wick_tensor *lengths, geometry *g) {
    if (mode < WICK_RNN_TANH || mode > WICK_RNN_GRU) return wick_fail(WICK_ERR_ARGUMENT, OP ": invalid mode %d", mode);
    const wick_tensor *ts[5] = {gi, h0, w_hh, c0, b_hh};
    const char *names[5] = {"input", "hx", "weight_hh", "c0", "bias_hh"};
    int n = 3;
    if (c0) n = 4;
    if (b_hh) ts[n] = b_hh, names[n] = "bias_hh", n++;
    TRY(wk_check_same_device(OP, n, ts, names));
    if (gi->dtype != WICK_FLOAT32 && gi->dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_DTYPE, OP ": expected float32 or float64, got %s", wick_dtype_name(gi->dtype));
    char got[WK_SHAPE_BUF];
    if (gi->ndim != 3)
        return wick_fail(WICK_ERR_SHAPE, OP ": expected the input projections [T, B, gates * H], got %s",
                         wk_shape_str(gi->ndim, gi->sizes, got, sizeof got));
    if (w_hh->ndim != 2)
        return wick_fail(WICK_ERR_SHAPE, OP ": expected weight_hh of shape [gates * H, H], got %s",
                         wk_shape_str(w_hh->ndim, w_hh->sizes, got, sizeof got));
    int gates = wk_rnn_gates(mode);
    g->T = gi->sizes[0], g->B = gi->sizes[1], g->H = w_hh->sizes[1], g->G = gi->sizes[2];
    if (g->H < 1) return wick_fail(WICK_ERR_SHAPE, OP ": hidden size must be at least 1, got %lld", (long long)g->H);
    if (g->G != gates * g->H)
        return wick_fail(WICK_ERR_SHAPE, OP ": %s with hidden size %lld needs %d * %lld = %lld input projections, got %lld",
                         mode_name(mode), (long long)g->H, gates, (long long)g->H, (long long)(gates * g->H),
                         (long long)g->G);
    g->W = wk_rnn_ws_units(mode) * g->H;
    g->dtype = gi->dtype;
    TRY(check_shape(w_hh, "weight_hh", g->G, g->H, gi->dtype));
    TRY(check_shape(h0, "hx", g->B, g->H, gi->dtype));
    if ((mode == WICK_RNN_LSTM) != (c0 != NULL))
        return wick_fail(WICK_ERR_ARGUMENT, OP ": %s", c0 ? "only an LSTM has a cell state" : "an LSTM needs c0");
    if (c0) TRY(check_shape(c0, "c0", g->B, g->H, gi->dtype));
    if (b_hh) TRY(check_shape(b_hh, "bias_hh", g->G, -1, gi->dtype));
    if (lengths) TRY(check_lengths(lengths, g->T, g->B));
    return WICK_OK;
}

/* The tensors of one run, all contiguous in the compute dtype (references). */
typedef struct operands {
    wick_tensor *gi, *h0, *c0, *w_hh, *b_hh, *lengths;
} operands;

static void operands_release(operands *o) {
    wick_tensor_release(o->gi);
    wick_tensor_release(o->h0);
    wick_tensor_release(o->c0);
    wick_tensor_release(o->w_hh);
    wick_tensor_release(o->b_hh);
    wick_tensor_release(o->lengths);
    memset(o, 0, sizeof *o);
}

static wick_status contiguous_or_null(wick_tensor **out, const wick_tensor *t) {
    *out = NULL;
    return t ? wick_contiguous(out, (wick_tensor *)t) : WICK_OK;
}

/* lengths on the op's device (a contiguous int64 copy there). */
static wick_status lengths_on(wick_tensor **out, const wick_tensor *len, wick_device dev) {
    *out = NULL;
    if (!len) return WICK_OK;
    wick_tensor *t;
    TRY(wick_to(&t, (wick_tensor *)len, (wick_options){WICK_INT64, dev}));
    wick_status st = wick_contiguous(out, t);
    wick_tensor_release(t);
    return st;
}

static wick_status operands_get(operands *o, const wick_tensor *gi, const wick_tensor *h0, const wick_tensor *c0,
                                const wick_tensor *w_hh, const wick_tensor *b_hh, const wick_tensor *lengths) {
    memset(o, 0, sizeof *o);
    wick_status st;
    if ((st = contiguous_or_null(&o->gi, gi)) || (st = contiguous_or_null(&o->h0, h0)) ||
        (st = contiguous_or_null(&o->c0, c0)) || (st = contiguous_or_null(&o->w_hh, w_hh)) ||
        (st = contiguous_or_null(&o->b_hh, b_hh)) || (st = lengths_on(&o->lengths, lengths, gi->storage->device)))
        operands_release(o);
    return st;
}

static wk_rnn_args base_args(int mode, const geometry *g, const wick_tensor *gi) {
    wk_rnn_args a;
    memset(&a, 0, sizeof a);
    a.device = gi->storage->device.index;
    a.dtype = gi->dtype;
    a.mode = mode;
    a.T = g->T, a.B = g->B, a.H = g->H, a.G = g->G, a.W = g->W;
    return a;
}

static wick_status unsupported_on(const wick_tensor *t) {
    char dev[32];
    return wick_fail(WICK_ERR_UNSUPPORTED, OP ": not implemented on %s",
                     wick_device_format(t->storage->device, dev, sizeof dev));
}

/* Row `index` of [rows, B, H] tensor t, as a fresh [B, H] view. */
static wick_status row_of(wick_tensor **out, wick_tensor *t, int64_t index) { return wick_select(out, t, 0, index); }

/* dst's row `index` = src. */
static wick_status copy_into_row(wick_tensor *dst, int64_t index, const wick_tensor *src) {
    wick_tensor *row;
    TRY(row_of(&row, dst, index));
    wick_status st = wick_copy_(row, src);
    wick_tensor_release(row);
    return st;
}

/* W^T as a contiguous copy ([H, G] from [G, H]): the per-step product reads it plainly. */
static wick_status transposed_copy(wick_tensor **out, wick_tensor *w) {
    wick_tensor *t;
    TRY(wick_transpose(&t, w, 0, 1));
    wick_tensor *c;
    wick_status st = wk_tensor_new(&c, 2, t->sizes, t->dtype, t->storage->device);
    if (!st && (st = wick_copy_(c, t))) wick_tensor_release(c);
    wick_tensor_release(t);
    if (!st) *out = c;
    return st;
}

/* The per-step product c = a b (+ c when accumulate): a [B, K] rows, b [K, N]
 * plain, all contiguous. */
static wick_status step_gemm(const wick_backend *be, const wk_rnn_args *a, const char *x, int64_t K, const char *w,
                             int64_t N, char *c, int accumulate) {
    wk_gemm_args m = {.device = a->device, .dtype = a->dtype, .trans_a = 0, .trans_b = 0, .m = a->B, .n = N, .k = K,
                      .a = x, .lda = K, .b = w, .ldb = N, .c = c, .ldc = N, .alpha = 1, .beta = accumulate ? 1 : 0};
    return be->gemm(&m);
}

/* Steps below which W_hh is read transposed in place rather than copied
 * once: the copy ([G, H], 16 MB at H = 1024) costs more than the few products
 * it serves (a sampling loop calls the layer one step at a time). */
#define RNN_COPY_MIN_STEPS 8

static int64_t time_of(const geometry *g, int64_t s, int reverse) { return reverse ? g->T - 1 - s : s; }

/* The time loop of the forward. out [T + 1 (+1), B, H] holds h (and c) in its
 * last rows as the state throughout. */
static wick_status run_forward(int mode, const geometry *g, const operands *o, wick_tensor *out, wick_tensor *ws,
                               int reverse) {
    const wick_backend *be = out->storage->backend;
    if (!be->rnn_step) return unsupported_on(out);
    wick_tensor *whhT = NULL, *gh = NULL;
    int64_t gh_shape[2] = {g->B, g->G};
    wick_status st;
    int copy = g->T >= RNN_COPY_MIN_STEPS;
    if ((st = copy_into_row(out, g->T, o->h0)) || (o->c0 && (st = copy_into_row(out, g->T + 1, o->c0))) ||
        (copy && (st = transposed_copy(&whhT, o->w_hh))) ||
        (st = wk_tensor_new(&gh, 2, gh_shape, out->dtype, out->storage->device)))
        goto done;
    wk_rnn_args a = base_args(mode, g, out);
    size_t es = wick_dtype_size(out->dtype);
    char *base = wk_data(out);
    a.lengths = o->lengths ? (const int64_t *)wk_data(o->lengths) : NULL;
    a.gi = wk_data(o->gi), a.gh = wk_data(gh), a.b_hh = o->b_hh ? wk_data(o->b_hh) : NULL;
    a.h = base + (size_t)(g->T * g->B * g->H) * es;
    a.c = o->c0 ? a.h + (size_t)(g->B * g->H) * es : NULL;
    a.ws = wk_data(ws), a.out = base;
    for (int64_t s = 0; s < g->T && !st; s++) {
        a.t = time_of(g, s, reverse);
        if ((st = wk_check_interrupt(OP))) break;
        if (copy) st = step_gemm(be, &a, a.h, g->H, wk_data(whhT), g->G, wk_data(gh), 0);
        else { /* gh = h W_hh^T, W_hh [G, H] read as it is */
            wk_gemm_args m = {.device = a.device, .dtype = a.dtype, .trans_b = 1, .m = g->B, .n = g->G, .k = g->H,
                              .a = a.h, .lda = g->H, .b = wk_data(o->w_hh), .ldb = g->H, .c = wk_data(gh),
                              .ldc = g->G, .alpha = 1};
            st = be->gemm(&m);
        }
        if (st) break;
        st = be->rnn_step(&a);
    }
done:
    wick_tensor_release(whhT);
    wick_tensor_release(gh);
    return st;
}

static wick_status forward(wick_tensor **out_, wick_tensor **ws_, int mode, const geometry *g, const wick_tensor *gi,
                           const wick_tensor *h0, const wick_tensor *c0, const wick_tensor *w_hh,
                           const wick_tensor *b_hh, const wick_tensor *lengths, int reverse, operands *o) {
    int64_t shape[3] = {g->T + 1 + (mode == WICK_RNN_LSTM), g->B, g->H}, ws_shape[3] = {g->T, g->B, g->W};
    wick_device dev = gi->storage->device;
    wick_tensor *out = NULL, *ws = NULL;
    wick_status st = wk_tensor_new(&out, 3, shape, gi->dtype, dev);
    if (!st) st = wk_tensor_new(&ws, 3, ws_shape, gi->dtype, dev);
    if (!st && !wk_is_meta(out) && !(st = operands_get(o, gi, h0, c0, w_hh, b_hh, lengths)))
        st = run_forward(mode, g, o, out, ws, reverse);
    if (st) {
        wick_tensor_release(out);
        wick_tensor_release(ws);
        return st;
    }
    *out_ = out, *ws_ = ws;
    return WICK_OK;
}

/* ---- backward ---- */

/* The gradients of one run: dgi [T, B, G], dh [B, H] and dc (the carries, then
 * the gradients of h0 and c0), dgh (GRU: its own [T, B, G]; else dgi), dw, db. */
typedef struct grads {
    wick_tensor *dgi, *dh, *dc, *dgh, *dw, *db;
} grads;

static void grads_release(grads *r) {
    wick_tensor_release(r->dgi);
    wick_tensor_release(r->dh);
    wick_tensor_release(r->dc);
    if (r->dgh != r->dgi) wick_tensor_release(r->dgh);
    wick_tensor_release(r->dw);
    wick_tensor_release(r->db);
    memset(r, 0, sizeof *r);
}

/* A fresh copy of row `index` of g. */
static wick_status row_copy(wick_tensor **out, wick_tensor *g, int64_t index) {
    wick_tensor *row;
    TRY(row_of(&row, g, index));
    wick_status st = wk_tensor_new(out, 2, row->sizes, row->dtype, row->storage->device);
    if (!st && (st = wick_copy_(*out, row))) wick_tensor_release(*out), *out = NULL;
    wick_tensor_release(row);
    return st;
}

/* dW_hh = dgh^T hprev over all T * B rows; db_hh = the column sums of dgh, as
 * the product ones[1, T * B] dgh (a reduction over the rows ran at a fraction
 * of the gemm's speed). */
static wick_status weight_grads(const wick_backend *be, const wk_rnn_args *a, grads *r, const wick_tensor *ws,
                                int bias) {
    int64_t rows = a->T * a->B;
    wk_gemm_args m = {.device = a->device, .dtype = a->dtype, .trans_a = 1, .trans_b = 0, .m = a->G, .n = a->H,
                      .k = rows, .a = wk_data(r->dgh), .lda = a->G, .b = wk_data(ws), .ldb = a->W,
                      .c = wk_data(r->dw), .ldc = a->H, .alpha = 1, .beta = 0};
    if (rows == 0) TRY(wick_fill_(r->dw, 0));
    else TRY(be->gemm(&m));
    if (!bias) return WICK_OK;
    wick_device dev = r->dw->storage->device;
    TRY(wk_tensor_new(&r->db, 1, &a->G, a->dtype, dev));
    if (rows == 0) return wick_fill_(r->db, 0);
    wick_tensor *ones;
    TRY(wick_full(&ones, 1, &rows, 1, (wick_options){a->dtype, dev}));
    wk_gemm_args v = {.device = a->device, .dtype = a->dtype, .trans_a = 0, .trans_b = 0, .m = 1, .n = a->G,
                      .k = rows, .a = wk_data(ones), .lda = rows, .b = wk_data(r->dgh), .ldb = a->G,
                      .c = wk_data(r->db), .ldc = a->G, .alpha = 1, .beta = 0};
    wick_status st = be->gemm(&v);
    wick_tensor_release(ones);
    return st;
}

static wick_status run_backward(int mode, const geometry *g, wick_tensor *gout, const wick_tensor *ws,
                                const wick_tensor *w_hh, const wick_tensor *lengths, int reverse, int bias, grads *r) {
    const wick_backend *be = gout->storage->backend;
    wick_device dev = gout->storage->device;
    int64_t tbg[3] = {g->T, g->B, g->G}, gh_shape[2] = {g->G, g->H};
    wick_status st;
    if ((st = wk_tensor_new(&r->dgi, 3, tbg, g->dtype, dev)) || (st = row_copy(&r->dh, gout, g->T)) ||
        (mode == WICK_RNN_LSTM && (st = row_copy(&r->dc, gout, g->T + 1))) ||
        (st = wk_tensor_new(&r->dw, 2, gh_shape, g->dtype, dev)))
        return st;
    if (mode == WICK_RNN_GRU) TRY(wk_tensor_new(&r->dgh, 3, tbg, g->dtype, dev));
    else r->dgh = r->dgi;
    if (wk_is_meta(gout)) {
        if (bias) TRY(wk_tensor_new(&r->db, 1, &g->G, g->dtype, dev));
        return WICK_OK;
    }
    if (!be->rnn_step_backward) return unsupported_on(gout);
    wk_rnn_args a = base_args(mode, g, gout);
    a.lengths = lengths ? (const int64_t *)wk_data(lengths) : NULL;
    a.ws = wk_data(ws), a.gout = wk_data(gout);
    a.dh = wk_data(r->dh), a.dc = r->dc ? wk_data(r->dc) : NULL;
    a.dgi = wk_data(r->dgi), a.dgh = wk_data(r->dgh);
    size_t es = wick_dtype_size(g->dtype);
    for (int64_t s = g->T - 1; s >= 0; s--) {
        a.t = time_of(g, s, reverse);
        TRY(wk_check_interrupt(OP));
        TRY(be->rnn_step_backward(&a));
        TRY(step_gemm(be, &a, a.dgh + (size_t)(a.t * g->B * g->G) * es, g->G, wk_data(w_hh), g->H, a.dh, 1));
    }
    return weight_grads(be, &a, r, ws, bias);
}

/* saved: ws, w_hh, lengths (device copy); ints: mode, reverse, bias; sizes: T, B, H. */
static wick_status rnn_backward(wk_node *n, wick_tensor *g, wick_tensor **out) {
    int mode = n->ints[0], reverse = n->ints[1], bias = n->ints[2];
    wick_tensor *ws = n->saved[0], *lengths = n->saved[2], *w_hh;
    geometry geo = {n->sizes[0], n->sizes[1], n->sizes[2], wk_rnn_gates(mode) * n->sizes[2],
                    wk_rnn_ws_units(mode) * n->sizes[2], ws->dtype};
    wick_tensor *gc = NULL, *gt = NULL;
    TRY(wick_contiguous(&w_hh, n->saved[1]));
    wick_status st = wick_to(&gt, g, (wick_options){ws->dtype, g->storage->device});
    if (!st) st = wick_contiguous(&gc, gt);
    wick_tensor_release(gt);
    if (st) {
        wick_tensor_release(w_hh);
        return st;
    }
    grads r = {0};
    if ((st = run_backward(mode, &geo, gc, ws, w_hh, lengths, reverse, bias, &r))) goto done;
    out[0] = r.dgi, out[1] = r.dh, out[2] = r.dc, out[3] = r.dw, out[4] = r.db;
    if (r.dgh == r.dgi) r.dgh = NULL;
    r.dgi = r.dh = r.dc = r.dw = r.db = NULL;
done:
    grads_release(&r);
    wick_tensor_release(gc);
    wick_tensor_release(w_hh);
    return st;
}

static wick_status record(wick_tensor *out, const wick_tensor *ws, int mode, const geometry *g, const wick_tensor *gi,
                          const wick_tensor *h0, const wick_tensor *c0, const wick_tensor *w_hh,
                          const wick_tensor *b_hh, const wick_tensor *lengths, int reverse) {
    static const char *const names[] = {"RnnTanhBackward", "RnnReluBackward", "LstmBackward", "GruBackward"};
    const wick_tensor *in[5] = {gi, h0, c0, w_hh, b_hh};
    wk_node *n;
    TRY(wk_record(out, names[mode], rnn_backward, mode, 5, in, &n));
    n->ints[0] = mode, n->ints[1] = reverse, n->ints[2] = b_hh != NULL;
    n->sizes[0] = g->T, n->sizes[1] = g->B, n->sizes[2] = g->H;
    TRY(wk_save(n, 0, ws, out));
    TRY(wk_save(n, 1, w_hh, out));
    return lengths ? wk_save(n, 2, lengths, out) : WICK_OK;
}

wick_status wick_rnn_layer(wick_tensor **out, wick_rnn_mode mode, const wick_tensor *gi, const wick_tensor *h0,
                           const wick_tensor *c0, const wick_tensor *w_hh, const wick_tensor *b_hh,
                           const wick_tensor *lengths, int reverse) {
    /* float32: the fused layer runs in float32 and float64 only */
    WK_AUTOCAST(WK_AC_FP32, 5, wick_rnn_layer(out, mode, c[0], c[1], c[2], c[3], c[4], lengths, reverse), gi, h0, c0,
                w_hh, b_hh);
    TRY(wk_check_interrupt(OP));
    if (!gi || !h0 || !w_hh) return wick_fail(WICK_ERR_ARGUMENT, OP ": input, hx and weight_hh are required");
    geometry g = {0};
    TRY(check((int)mode, gi, h0, c0, w_hh, b_hh, lengths, &g));
    const wick_tensor *in[5] = {gi, h0, c0, w_hh, b_hh};
    bool want = wk_wants_grad(5, in);
    wick_tensor *r = NULL, *ws = NULL;
    operands o;
    memset(&o, 0, sizeof o);
    wick_status st;
    WK_NO_GRAD(st = forward(&r, &ws, (int)mode, &g, gi, h0, c0, w_hh, b_hh, lengths, reverse != 0, &o));
    if (st) {
        operands_release(&o);
        return st;
    }
    st = want ? record(r, ws, (int)mode, &g, gi, h0, c0, w_hh, b_hh, o.lengths, reverse != 0) : WICK_OK;
    operands_release(&o);
    wick_tensor_release(ws);
    return wk_publish(out, r, st);
}
