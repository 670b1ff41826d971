/* Scaled-dot-product attention as one fused op (flash-attention style): checks,
 * shapes, broadcasting, compute dtypes and autograd here; the kernels
 * (attention_forward / attention_backward of a backend) tile over keys with an
 * online softmax and never hold the L x S matrix. The forward saves each row's
 * log-sum-exp; the backward recomputes the weights from q, k and it. */
#include "autocast.h"
#include "attention.h"

#include "autograd.h"

#include <math.h>

#define OP "scaled_dot_product_attention"

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

static wick_dtype compute_dtype(wick_dtype d) { return d == WICK_FLOAT64 ? WICK_FLOAT64 : WICK_FLOAT32; }

static const char *shape_of(const wick_tensor *t, char *buf) { return wk_shape_str(t->ndim, t->sizes, buf, WK_SHAPE_BUF); }

/* The size and stride of an operand's batch dim d of nb (right-aligned; 1 and 0 when absent). */
static void batch_dim(const wick_tensor *t, int nb, int d, int64_t *size, int64_t *stride) {
    int dx = d - (nb - (t->ndim - 2));
    *size = dx >= 0 ? t->sizes[dx] : 1;
    *stride = dx >= 0 && *size != 1 ? t->strides[dx] : 0;
}

/* PyTorch's checks, in its order, on the operands as given. */
static wick_status check_operands(const wick_tensor *q, const wick_tensor *k, const wick_tensor *v,
                                  const wick_tensor *mask, double dropout_p, int causal) {
    const wick_tensor *ts[4] = {q, k, v, mask};
    const char *names[4] = {"query", "key", "value", "attn_mask"};
    TRY(wk_check_same_device(OP, mask ? 4 : 3, ts, names));
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": Expected query, key, and value to all be at least 2 dimensional, but got query.dim: %d "
                            "key.dim: %d and value.dim: %d instead.",
                         q->ndim, k->ndim, v->ndim);
    if (q->dtype != k->dtype || q->dtype != v->dtype)
        return wick_fail(WICK_ERR_DTYPE,
                         OP ": Expected query, key, and value to have the same dtype, but got query.dtype: %s "
                            "key.dtype: %s and value.dtype: %s instead.",
                         wick_dtype_name(q->dtype), wick_dtype_name(k->dtype), wick_dtype_name(v->dtype));
    if (!wick_dtype_is_floating(q->dtype))
        return wick_fail(WICK_ERR_DTYPE, OP ": expected floating-point query, key and value, but got %s",
                         wick_dtype_name(q->dtype));
    if (mask && mask->dtype != WICK_BOOL && mask->dtype != WICK_FLOAT32 && mask->dtype != q->dtype)
        return wick_fail(WICK_ERR_DTYPE,
                         OP ": Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: "
                            "%s and query.dtype: %s instead.",
                         wick_dtype_name(mask->dtype), wick_dtype_name(q->dtype));
    if (mask && causal)
        return wick_fail(WICK_ERR_ARGUMENT, OP ": Explicit attn_mask should not be set when is_causal=True");
    if (!(dropout_p >= 0 && dropout_p <= 1))
        return wick_fail(WICK_ERR_ARGUMENT, OP ": dropout probability has to be between 0 and 1, but got %g", dropout_p);
    char s1[WK_SHAPE_BUF], s2[WK_SHAPE_BUF];
    if (k->sizes[k->ndim - 1] != q->sizes[q->ndim - 1])
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": expected key's last dim to match query's (E = %lld), but got query %s and key %s",
                         (long long)q->sizes[q->ndim - 1], shape_of(q, s1), shape_of(k, s2));
    if (v->sizes[v->ndim - 2] != k->sizes[k->ndim - 2])
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": expected value's dim -2 to match key's (S = %lld), but got key %s and value %s",
                         (long long)k->sizes[k->ndim - 2], shape_of(k, s1), shape_of(v, s2));
    return WICK_OK;
}

/* Grouped-query attention: how many query heads (dim -3) share one of k's and v's. */
static wick_status gqa_group(const wick_tensor *q, const wick_tensor *k, const wick_tensor *v, int gqa, int64_t *group) {
    *group = 1;
    if (!gqa || q->ndim < 3 || k->ndim < 3 || v->ndim < 3) return WICK_OK;
    int64_t hq = q->sizes[q->ndim - 3], hk = k->sizes[k->ndim - 3], hv = v->sizes[v->ndim - 3];
    if (hk == hq && hv == hq) return WICK_OK;
    if (hk != hv || hk == 0 || hq % hk)
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": with enable_gqa, the number of query heads (%lld, dim -3) must be a multiple of the "
                            "key and value heads, which must be equal, but got %lld key heads and %lld value heads",
                         (long long)hq, (long long)hk, (long long)hv);
    *group = hq / hk;
    return WICK_OK;
}

/* The broadcast batch and each operand's batch strides; the mask's geometry. */
static wick_status plan_batch(const wick_tensor *q, const wick_tensor *k, const wick_tensor *v,
                              const wick_tensor *mask, wk_attn_args *a) {
    int nb = q->ndim;
    if (k->ndim > nb) nb = k->ndim;
    if (v->ndim > nb) nb = v->ndim;
    nb -= 2;
    a->batch_ndim = nb;
    a->batch = 1;
    char s1[WK_SHAPE_BUF], s2[WK_SHAPE_BUF], s3[WK_SHAPE_BUF];
    for (int d = 0; d < nb; d++) {
        int64_t sq, sk, sv;
        batch_dim(q, nb, d, &sq, &a->q_bs[d]);
        batch_dim(k, nb, d, &sk, &a->k_bs[d]);
        batch_dim(v, nb, d, &sv, &a->v_bs[d]);
        if (d == nb - 1 && a->kv_group > 1) { /* grouped heads: k's index is q's / group */
            sk *= a->kv_group, sv *= a->kv_group;
            a->k_bs[d] = k->strides[k->ndim - 3], a->v_bs[d] = v->strides[v->ndim - 3];
        }
        int64_t n = sq != 1 ? sq : sk != 1 ? sk : sv;
        if ((sq != 1 && sq != n) || (sk != 1 && sk != n) || (sv != 1 && sv != n)) {
            /* fewer key/value heads than query heads (dim -3): grouped-query attention */
            bool gqa = d == nb - 1 && a->kv_group == 1 && sk == sv && sk > 0 && sq % sk == 0 && sq > sk;
            return wick_fail(WICK_ERR_SHAPE,
                             OP ": the batch dims of query %s, key %s and value %s do not broadcast (dim %d)%s",
                             shape_of(q, s1), shape_of(k, s2), shape_of(v, s3), d + 1,
                             gqa ? "; for grouped-query attention (fewer key/value heads), pass enable_gqa = true" : "");
        }
        a->batch_sizes[d] = n;
        a->batch *= n;
    }
    a->L = q->sizes[q->ndim - 2], a->E = q->sizes[q->ndim - 1];
    a->S = k->sizes[k->ndim - 2], a->Ev = v->sizes[v->ndim - 1];
    a->q_rs = q->strides[q->ndim - 2], a->k_rs = k->strides[k->ndim - 2], a->v_rs = v->strides[v->ndim - 2];
    a->mask_kind = WK_ATTN_MASK_NONE;
    a->m_rs = a->m_cs = 0;
    if (!mask) return WICK_OK;
    a->mask_kind = mask->dtype == WICK_BOOL ? WK_ATTN_MASK_BOOL : WK_ATTN_MASK_FLOAT;
    int nm = mask->ndim;
    bool ok = nm - 2 <= nb;
    int64_t full[WICK_MAX_DIMS + 2];
    memcpy(full, a->batch_sizes, sizeof(int64_t) * nb);
    full[nb] = a->L, full[nb + 1] = a->S;
    for (int d = 0; ok && d < nm; d++) {
        int64_t want = full[nb + 2 - nm + d], got = mask->sizes[d];
        ok = got == 1 || got == want;
    }
    if (!ok)
        return wick_fail(WICK_ERR_SHAPE, OP ": attn_mask of shape %s does not broadcast to the attention's shape %s",
                         shape_of(mask, s1), wk_shape_str(nb + 2, full, s2, sizeof s2));
    for (int d = 0; d < nb; d++) {
        int dm = d - (nb - (nm - 2));
        a->m_bs[d] = dm >= 0 && mask->sizes[dm] != 1 ? mask->strides[dm] : 0;
    }
    if (nm >= 1 && mask->sizes[nm - 1] != 1) a->m_cs = mask->strides[nm - 1];
    if (nm >= 2 && mask->sizes[nm - 2] != 1) a->m_rs = mask->strides[nm - 2];
    return WICK_OK;
}

/* Every check, then the kernel's geometry (no pointers). */
static wick_status plan(const wick_tensor *q, const wick_tensor *k, const wick_tensor *v, const wick_tensor *mask,
                        double dropout_p, int causal, double scale, int gqa, wk_attn_args *a) {
    memset(a, 0, sizeof *a);
    TRY(check_operands(q, k, v, mask, dropout_p, causal));
    TRY(gqa_group(q, k, v, gqa, &a->kv_group));
    TRY(plan_batch(q, k, v, mask, a));
    a->causal = causal != 0;
    a->dropout_p = dropout_p;
    a->scale = isnan(scale) ? 1.0 / sqrt((double)(a->E > 0 ? a->E : 1)) : scale;
    a->dtype = compute_dtype(q->dtype);
    a->device = q->storage->device.index;
    return WICK_OK;
}

/* [batch..., rows, cols] */
static int batch_shape(const wk_attn_args *a, int64_t rows, int64_t cols, int64_t *shape) {
    memcpy(shape, a->batch_sizes, sizeof(int64_t) * a->batch_ndim);
    shape[a->batch_ndim] = rows, shape[a->batch_ndim + 1] = cols;
    return a->batch_ndim + 2;
}

/* t in dtype cd with a contiguous last dim (t itself, retained, when it is so). */
static wick_status as_operand(wick_tensor **out, const wick_tensor *t, wick_dtype cd) {
    wick_tensor *c;
    TRY(wick_to(&c, (wick_tensor *)t, (wick_options){cd, t->storage->device}));
    if (c->strides[c->ndim - 1] == 1 || c->sizes[c->ndim - 1] <= 1) return *out = c, WICK_OK;
    wick_status st = wick_contiguous(out, c);
    wick_tensor_release(c);
    return st;
}

static wick_status unsupported_on(const wick_tensor *t, const char *what) {
    char dev[32];
    return wick_fail(WICK_ERR_UNSUPPORTED, OP ": %s not implemented on %s", what,
                     wick_device_format(t->storage->device, dev, sizeof dev));
}

/* The compute-dtype operands of a kernel call, and their plan. */
typedef struct operands {
    wick_tensor *q, *k, *v, *mask;
} operands;

static void operands_release(operands *o) {
    wick_tensor_release(o->q);
    wick_tensor_release(o->k);
    wick_tensor_release(o->v);
    wick_tensor_release(o->mask);
    memset(o, 0, sizeof *o);
}

static wick_status operands_get(operands *o, const wick_tensor *q, const wick_tensor *k, const wick_tensor *v,
                                const wick_tensor *mask, wk_attn_args *a) {
    memset(o, 0, sizeof *o);
    wick_dtype cd = a->dtype;
    wick_status st;
    if ((st = as_operand(&o->q, q, cd)) || (st = as_operand(&o->k, k, cd)) || (st = as_operand(&o->v, v, cd)) ||
        (mask && mask->dtype != WICK_BOOL &&
         (st = wick_to(&o->mask, (wick_tensor *)mask, (wick_options){cd, mask->storage->device}))))
        goto fail;
    if (mask && !o->mask) wick_tensor_retain(o->mask = (wick_tensor *)mask);
    /* the geometry of the converted operands (the checks passed on the originals) */
    wk_attn_args b;
    if ((st = plan(o->q, o->k, o->v, o->mask, a->dropout_p, a->causal, a->scale, a->kv_group > 1, &b))) goto fail;
    b.seed = a->seed, b.offset = a->offset;
    *a = b;
    a->q = wk_data(o->q), a->k = wk_data(o->k), a->v = wk_data(o->v);
    a->mask = o->mask ? wk_data(o->mask) : NULL;
    return WICK_OK;
fail:
    operands_release(o);
    return st;
}

static wick_status forward(wick_tensor **out, wick_tensor **lse_out, const wick_tensor *q, const wick_tensor *k,
                           const wick_tensor *v, const wick_tensor *mask, wk_attn_args *a) {
    int64_t shape[WICK_MAX_DIMS + 2];
    int nd = batch_shape(a, a->L, a->Ev, shape);
    if (nd > WICK_MAX_DIMS) return wick_fail(WICK_ERR_SHAPE, OP ": too many dims");
    int64_t lse_shape[2] = {a->batch, a->L};
    wick_device dev = q->storage->device;
    bool meta = wk_is_meta(q);
    wick_tensor *r = NULL, *lse = NULL;
    operands o = {0};
    wick_status st = wk_tensor_new(&r, nd, shape, meta ? q->dtype : a->dtype, dev);
    if (!st) st = wk_tensor_new(&lse, 2, lse_shape, a->dtype, dev);
    if (st || meta) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->attention_forward) {
        st = unsupported_on(q, "forward");
        goto done;
    }
    if (a->dropout_p > 0) { /* one draw per weight */
        int64_t n;
        if (__builtin_mul_overflow(a->batch * a->L, a->S, &n)) {
            st = wick_fail(WICK_ERR_ARGUMENT, OP ": too many attention weights for dropout (%lld x %lld x %lld)",
                           (long long)a->batch, (long long)a->L, (long long)a->S);
            goto done;
        }
        wk_rng_reserve((uint64_t)n, &a->seed, &a->offset);
    }
    if ((st = operands_get(&o, q, k, v, mask, a))) goto done;
    a->out = wk_data(r), a->lse = wk_data(lse);
    if (a->batch * a->L > 0 && (st = be->attention_forward(a))) goto done;
    if (r->dtype != q->dtype) {
        wick_tensor *c;
        if ((st = wick_to(&c, r, (wick_options){q->dtype, dev}))) goto done;
        wick_tensor_release(r);
        r = c;
    }
done:
    operands_release(&o);
    if (st) {
        wick_tensor_release(r);
        wick_tensor_release(lse);
        return st;
    }
    *out = r, *lse_out = lse;
    return WICK_OK;
}

/* Sums the grouped heads of a k or v gradient [..., Hq, S, X] to [..., Hq / group, S, X]. */
static wick_status sum_groups(wick_tensor **g, int64_t group) {
    wick_tensor *t = *g, *v, *s;
    int nd = t->ndim;
    if (group <= 1 || nd + 1 > WICK_MAX_DIMS) return WICK_OK;
    int64_t shape[WICK_MAX_DIMS];
    memcpy(shape, t->sizes, sizeof(int64_t) * (nd - 3));
    shape[nd - 3] = t->sizes[nd - 3] / group, shape[nd - 2] = group;
    shape[nd - 1] = t->sizes[nd - 2], shape[nd] = t->sizes[nd - 1];
    TRY(wick_reshape(&v, t, nd + 1, shape));
    wick_status st = wick_reduce(&s, NULL, WICK_SUM, v, nd - 2, 0, 0);
    wick_tensor_release(v);
    if (st) return st;
    wick_tensor_release(t);
    *g = s;
    return WICK_OK;
}

/* saved: q, k, v, out, lse, mask; ints: causal, enable_gqa; scalars: dropout_p,
 * scale; sizes: the dropout seed and offset. */
static wick_status attention_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *q = n->saved[0], *k = n->saved[1], *v = n->saved[2], *out = n->saved[3], *lse = n->saved[4];
    wick_tensor *mask = n->saved[5];
    wk_attn_args a;
    TRY(plan(q, k, v, mask, n->scalars[0], n->ints[0], n->scalars[1], n->ints[1], &a));
    a.seed = (uint64_t)n->sizes[0], a.offset = (uint64_t)n->sizes[1];
    wick_device dev = g->storage->device;
    int64_t sq[WICK_MAX_DIMS + 2], sk[WICK_MAX_DIMS + 2], sv[WICK_MAX_DIMS + 2];
    int nd = batch_shape(&a, a.L, a.E, sq);
    batch_shape(&a, a.S, a.E, sk);
    batch_shape(&a, a.S, a.Ev, sv);
    wick_tensor *dq = NULL, *dk = NULL, *dv = NULL, *gc = NULL, *oc = NULL;
    operands o = {0};
    int64_t group = a.kv_group;
    wick_status st;
    if ((st = wk_tensor_new(&dq, nd, sq, a.dtype, dev)) || (st = wk_tensor_new(&dk, nd, sk, a.dtype, dev)) ||
        (st = wk_tensor_new(&dv, nd, sv, a.dtype, dev)))
        goto done;
    if (!wk_is_meta(g)) {
        const wick_backend *be = g->storage->backend;
        if (!be->attention_backward) {
            st = unsupported_on(g, "backward");
            goto done;
        }
        if ((st = operands_get(&o, q, k, v, mask, &a))) goto done;
        wick_tensor *gt = NULL;
        if ((st = wick_to(&gt, g, (wick_options){a.dtype, dev}))) goto done;
        st = wick_contiguous(&gc, gt);
        wick_tensor_release(gt);
        if (st || (st = wick_to(&gt, out, (wick_options){a.dtype, dev}))) goto done;
        st = wick_contiguous(&oc, gt);
        wick_tensor_release(gt);
        if (st) goto done;
        a.grad_out = wk_data(gc), a.fwd_out = wk_data(oc), a.lse = wk_data(lse);
        a.dq = wk_data(dq), a.dk = wk_data(dk), a.dv = wk_data(dv);
        if ((st = be->attention_backward(&a))) goto done;
    }
    if ((st = sum_groups(&dk, group)) || (st = sum_groups(&dv, group))) goto done;
    grads[0] = dq, grads[1] = dk, grads[2] = dv;
    dq = dk = dv = NULL;
done:
    operands_release(&o);
    wick_tensor_release(gc);
    wick_tensor_release(oc);
    wick_tensor_release(dq);
    wick_tensor_release(dk);
    wick_tensor_release(dv);
    return st;
}

static wick_status record(wick_tensor *out, wick_tensor *lse, const wick_tensor *q, const wick_tensor *k,
                          const wick_tensor *v, const wick_tensor *mask, const wk_attn_args *a) {
    const wick_tensor *in[3] = {q, k, v};
    wk_node *n;
    TRY(wk_record(out, "ScaledDotProductFlashAttentionBackward", attention_backward, 0, 3, in, &n));
    n->ints[0] = a->causal, n->ints[1] = a->kv_group > 1;
    n->scalars[0] = a->dropout_p, n->scalars[1] = a->scale;
    n->sizes[0] = (int64_t)a->seed, n->sizes[1] = (int64_t)a->offset;
    TRY(wk_save(n, 0, q, out));
    TRY(wk_save(n, 1, k, out));
    TRY(wk_save(n, 2, v, out));
    TRY(wk_save(n, 3, out, out));
    TRY(wk_save(n, 4, lse, out));
    return mask ? wk_save(n, 5, mask, out) : WICK_OK;
}

wick_status wick_scaled_dot_product_attention(wick_tensor **out, const wick_tensor *q, const wick_tensor *k,
                                              const wick_tensor *v, const wick_tensor *attn_mask, double dropout_p,
                                              int is_causal, double scale, int enable_gqa) {
    WK_AUTOCAST(WK_AC_LOWER, 4,
                wick_scaled_dot_product_attention(out, c[0], c[1], c[2], c[3], dropout_p, is_causal, scale, enable_gqa),
                q, k, v, attn_mask);
    TRY(wk_check_interrupt(OP));
    wk_attn_args a;
    TRY(plan(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, &a));
    const wick_tensor *in[3] = {q, k, v};
    bool grad = wk_wants_grad(3, in);
    if (attn_mask && attn_mask->requires_grad && wk_grad_mode)
        return wick_fail(WICK_ERR_UNSUPPORTED,
                         OP ": an attn_mask that requires grad is not supported (its gradient is an L x S matrix, "
                            "which this fused op never forms); detach it or compose the attention from matmul and "
                            "softmax");
    wick_tensor *r = NULL, *lse = NULL;
    wick_status st;
    WK_NO_GRAD(st = forward(&r, &lse, q, k, v, attn_mask, &a));
    if (st) return st;
    st = grad ? record(r, lse, q, k, v, attn_mask, &a) : WICK_OK;
    wick_tensor_release(lse);
    return wk_publish(out, r, st);
}
