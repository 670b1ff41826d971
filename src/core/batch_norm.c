/* Batch normalisation over the channel dim (wick_batch_norm, include/wick.h):
 * the checks, the running statistics, and the autograd node. One fused kernel
 * each way (wick_backend.batch_norm / batch_norm_backward: the CPU's in
 * src/cpu/cpu_norm.c, CUDA's in src/cuda/cuda_norm.cu) on x viewed as
 * [N, C, S] contiguous; float16 and bfloat16 compute in float32. */
#include "nn_ops.h"

#define TRY WK_NN_TRY

enum { BN_TRAINING, BN_HAS_W, BN_HAS_B };

static wick_status bn_check_param(const wick_tensor *x, const wick_tensor *t, const char *name) {
    if (!t) return WICK_OK;
    if (!wick_dtype_is_floating(t->dtype))
        return wick_fail(WICK_ERR_DTYPE, "batch_norm: expected %s of a floating-point dtype, but got %s", name,
                         wick_dtype_name(t->dtype));
    /* PyTorch's mixed dtypes: a float16 or bfloat16 input with float32 parameters, else one dtype
     * (a float32 batch into a float64 model stops here, not at the next layer) */
    bool mixed = (x->dtype == WICK_FLOAT16 || x->dtype == WICK_BFLOAT16) && t->dtype == WICK_FLOAT32;
    if (t->dtype != x->dtype && !mixed)
        return wick_fail(WICK_ERR_DTYPE, "batch_norm: expected %s of dtype %s (the input's), but got %s", name,
                         wick_dtype_name(x->dtype), wick_dtype_name(t->dtype));
    if (t->ndim != 1 || t->sizes[0] != x->sizes[1]) {
        char s[WK_SHAPE_BUF];
        return wick_fail(WICK_ERR_SHAPE, "batch_norm: expected %s of shape [%lld] (the input's channels), but got %s",
                         name, (long long)x->sizes[1], wk_shape_str(t->ndim, t->sizes, s, sizeof s));
    }
    return WICK_OK;
}

/* x [N, C, *]; every parameter NULL or [C]; *n_, *s_: N and the product of the rest. */
static wick_status bn_check(const wick_tensor *x, const wick_tensor *w, const wick_tensor *b, const wick_tensor *rm,
                            const wick_tensor *rv, int training, int64_t *n_, int64_t *s_) {
    const wick_tensor *ts[5] = {x, w, b, rm, rv};
    const char *names[5] = {"input", "weight", "bias", "running_mean", "running_var"};
    const wick_tensor *present[5];
    const char *present_names[5];
    int count = 0;
    for (int i = 0; i < 5; i++)
        if (ts[i]) present[count] = ts[i], present_names[count++] = names[i];
    TRY(wk_check_same_device("batch_norm", count, present, present_names));
    if (!wick_dtype_is_floating(x->dtype))
        return wick_fail(WICK_ERR_DTYPE, "batch_norm: expected a floating-point input, but got %s",
                         wick_dtype_name(x->dtype));
    if (x->ndim < 2) return wick_fail(WICK_ERR_SHAPE, "batch_norm: expected at least 2-D input, got %d-D", x->ndim);
    if ((rm == NULL) != (rv == NULL))
        return wick_fail(WICK_ERR_ARGUMENT, "batch_norm: give running_mean and running_var together, or neither");
    if (!training && !rm)
        return wick_fail(WICK_ERR_ARGUMENT, "batch_norm: running_mean and running_var are required when not training");
    for (int i = 1; i < 5; i++) TRY(bn_check_param(x, ts[i], names[i]));
    int64_t s = 1;
    for (int i = 2; i < x->ndim; i++) s *= x->sizes[i];
    *n_ = x->sizes[0], *s_ = s;
    if (training && x->sizes[0] * s == 1 && x->sizes[1] > 0) { /* (none is an empty result, as PyTorch's) */
        char sh[WK_SHAPE_BUF];
        return wick_fail(WICK_ERR_ARGUMENT, "batch_norm: Expected more than 1 value per channel when training, got input size %s",
                         wk_shape_str(x->ndim, x->sizes, sh, sizeof sh));
    }
    return WICK_OK;
}

/* A running statistic as the kernel updates it: *work is t itself when t is
 * contiguous in the compute dtype, else a converted copy to write back. */
static wick_status running_work(wick_tensor **work, wick_tensor *t, wick_dtype cd) {
    if (t->dtype == cd && wick_tensor_is_contiguous(t)) return wick_tensor_retain(t), *work = t, WICK_OK;
    return wk_nn_as_compute(work, t, cd);
}

static wick_status running_writeback(wick_tensor *t, wick_tensor *work) {
    if (work == t) return wk_bump_version(t), WICK_OK;
    return wick_copy_(t, work);
}

/* y, and per channel the mean and 1/std that normalised it (compute dtype). */
static wick_status bn_forward(wick_tensor **y, wick_tensor **mean, wick_tensor **rstd, const wick_tensor *x,
                              const wick_tensor *w, const wick_tensor *b, wick_tensor *rm, wick_tensor *rv,
                              int training, double momentum, double eps) {
    int64_t n = 0, s = 0;
    TRY(bn_check(x, w, b, rm, rv, training, &n, &s));
    wick_dtype cd = wk_nn_compute_dtype(x->dtype);
    wick_device dev = x->storage->device;
    int64_t c = x->sizes[1];
    wick_tensor *r = NULL, *m = NULL, *sd = NULL, *xc = NULL, *wc = NULL, *bc = NULL, *rmw = NULL, *rvw = NULL;
    wick_status st = wk_tensor_new(&r, x->ndim, x->sizes, wk_is_meta(x) ? x->dtype : cd, dev);
    if (st || (st = wk_tensor_new(&m, 1, &c, cd, dev)) || (st = wk_tensor_new(&sd, 1, &c, cd, dev)) || wk_is_meta(r))
        goto done;
    if (n * s == 0) { /* an empty batch (Mask R-CNN's mask head with no positive box): an empty result, the
                       * running statistics untouched, and zero statistics saved (zero weight gradients) */
        if (!(st = wick_fill_(m, 0))) st = wick_fill_(sd, 0);
        if (!st) st = wk_nn_convert_to(&r, x->dtype);
        goto done;
    }
    const wick_backend *be = r->storage->backend;
    if (!be->batch_norm) {
        st = wk_nn_unsupported_on("batch_norm", x);
        goto done;
    }
    if ((st = wk_nn_as_compute(&xc, x, cd)) || (w && (st = wk_nn_as_compute(&wc, w, cd))) ||
        (b && (st = wk_nn_as_compute(&bc, b, cd))) || (rm && (st = running_work(&rmw, rm, cd))) ||
        (rv && (st = running_work(&rvw, rv, cd))))
        goto done;
    wk_bn_args a = {.device = dev.index, .dtype = cd, .n = n, .c = c, .s = s, .eps = eps, .momentum = momentum,
                    .training = training, .x = wk_data(xc), .w = wc ? wk_data(wc) : NULL,
                    .b = bc ? wk_data(bc) : NULL, .y = wk_data(r), .mean = wk_data(m), .rstd = wk_data(sd),
                    .running_mean = rmw ? wk_data(rmw) : NULL, .running_var = rvw ? wk_data(rvw) : NULL};
    if ((st = be->batch_norm(&a))) goto done;
    if (training && rm && ((st = running_writeback(rm, rmw)) || (st = running_writeback(rv, rvw)))) goto done;
    st = wk_nn_convert_to(&r, x->dtype);
done:
    wick_tensor_release(xc);
    wick_tensor_release(wc);
    wick_tensor_release(bc);
    wick_tensor_release(rmw);
    wick_tensor_release(rvw);
    if (st) {
        wick_tensor_release(r);
        wick_tensor_release(m);
        wick_tensor_release(sd);
        return st;
    }
    *y = r, *mean = m, *rstd = sd;
    return WICK_OK;
}

/* t [N, C, S] reduced over N and S by `op`, kept as [1, C, 1]. */
static wick_status bn_channel_reduce(wick_tensor **out, wick_reduce_op op, const wick_tensor *t) {
    wick_tensor *a = NULL;
    wick_status st = wick_reduce(&a, NULL, op, t, 2, 1, 0);
    if (!st) st = wick_reduce(out, NULL, op, a, 0, 1, 0);
    wick_tensor_release(a);
    return st;
}

/* a [C] (a weight or a saved statistic) as [1, C, 1]. */
static wick_status bn_per_channel(wick_tensor **out, wick_tensor *a) {
    int64_t shape[3] = {1, a->sizes[0], 1};
    return wick_reshape(out, a, 3, shape);
}

/* *a = *a op b */
static wick_status bn_chain(wick_tensor **a, wick_binary_op op, const wick_tensor *b) {
    wick_tensor *r;
    TRY(wick_binary(&r, op, *a, b));
    wick_tensor_release(*a);
    *a = r;
    return WICK_OK;
}

/* xhat and rstd ([1, C, 1]) of x3 [N, C, S] for the backward. In training the
 * statistics are recomputed with ops, so that they carry x's graph; in
 * evaluation they are the running ones the forward saved (constants). */
static wick_status bn_normalised(const wk_node *node, const wick_tensor *x3, wick_tensor **xhat, wick_tensor **rstd) {
    wick_tensor *mu = NULL, *var = NULL, *r = NULL;
    wick_status st;
    if (node->ints[BN_TRAINING]) {
        wick_tensor *sq = NULL;
        st = bn_channel_reduce(&mu, WICK_MEAN, x3);
        if (!st) st = wick_binary(xhat, WICK_SUB, x3, mu);
        if (!st) st = wick_binary(&sq, WICK_MUL, *xhat, *xhat);
        if (!st) st = bn_channel_reduce(&var, WICK_MEAN, sq);
        if (!st) st = wick_binary_scalar(&r, WICK_ADD, var, (wick_scalar){node->scalars[0], 0}, 0);
        wick_tensor_release(sq);
        if (!st) st = wick_unary(rstd, WICK_RSQRT, r);
    } else {
        st = bn_per_channel(&mu, node->saved[2]);
        if (!st) st = bn_per_channel(rstd, node->saved[3]);
        if (!st) st = wick_binary(xhat, WICK_SUB, x3, mu);
    }
    if (!st) st = bn_chain(xhat, WICK_MUL, *rstd);
    wick_tensor_release(mu);
    wick_tensor_release(var);
    wick_tensor_release(r);
    return st;
}

/* batch_norm's backward with recorded ops, for create_graph (MAML's inner
 * loop, a gradient penalty through a critic with batch norm). On x as
 * [N, C, S], with xhat and rstd per channel (bn_normalised):
 *   gy = g w;  gx = rstd (gy - mean(gy) - xhat mean(gy xhat)) in training,
 *   gx = rstd gy in evaluation (the statistics do not depend on x there);
 *   gw = the sum of g xhat over N and S,  gb = the sum of g. */
static wick_status bn_backward_recorded(wk_node *node, wick_tensor *g, wick_tensor **grads) {
    const int *p = node->ints;
    wick_tensor *x = node->saved[0], *w = node->saved[1];
    int iw = p[BN_HAS_W] ? 1 : -1, ib = p[BN_HAS_B] ? 1 + p[BN_HAS_W] : -1;
    int64_t shape[3] = {x->sizes[0], x->sizes[1], 1};
    for (int i = 2; i < x->ndim; i++) shape[2] *= x->sizes[i];
    wick_tensor *x3 = NULL, *g3 = NULL, *rstd = NULL, *xhat = NULL, *gy = NULL, *t = NULL, *m = NULL;
    wick_status st = wick_reshape(&x3, x, 3, shape);
    if (!st) st = wick_reshape(&g3, g, 3, shape);
    if (!st) st = bn_normalised(node, x3, &xhat, &rstd);
    if (!st && wk_nn_wants(node, 0)) {
        if (w) st = bn_per_channel(&t, w);
        if (!st) st = w ? wick_binary(&gy, WICK_MUL, g3, t) : (wick_tensor_retain(g3), gy = g3, WICK_OK);
        wick_tensor_release(t), t = NULL;
        if (!st && p[BN_TRAINING]) {
            if (!(st = bn_channel_reduce(&m, WICK_MEAN, gy)) && !(st = wick_binary(&t, WICK_MUL, gy, xhat)))
                st = bn_chain(&gy, WICK_SUB, m);
            wick_tensor_release(m), m = NULL;
            if (!st) st = bn_channel_reduce(&m, WICK_MEAN, t);
            if (!st) st = bn_chain(&m, WICK_MUL, xhat); /* xhat mean(gy xhat) */
            if (!st) st = bn_chain(&gy, WICK_SUB, m);
            wick_tensor_release(t), t = NULL;
            wick_tensor_release(m), m = NULL;
        }
        if (!st) st = bn_chain(&gy, WICK_MUL, rstd);
        if (!st) st = wick_reshape(&grads[0], gy, x->ndim, x->sizes);
    }
    if (!st && iw > 0 && wk_nn_wants(node, iw)) {
        if (!(st = wick_binary(&t, WICK_MUL, g3, xhat)) && !(st = bn_channel_reduce(&m, WICK_SUM, t)))
            st = wick_reshape(&grads[iw], m, 1, shape + 1);
        wick_tensor_release(t), t = NULL;
        wick_tensor_release(m), m = NULL;
    }
    if (!st && ib > 0 && wk_nn_wants(node, ib) && !(st = bn_channel_reduce(&m, WICK_SUM, g3)))
        st = wick_reshape(&grads[ib], m, 1, shape + 1);
    wick_tensor *all[] = {x3, g3, rstd, xhat, gy, t, m};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wick_tensor_release(all[i]);
    return st;
}

/* saved: x, weight (or NULL), mean, rstd; ints: BN_TRAINING, BN_HAS_W, BN_HAS_B;
 * inputs: x, then weight and bias when given. */
static wick_status bn_backward(wk_node *node, wick_tensor *g, wick_tensor **grads) {
    if (wk_grad_mode) return bn_backward_recorded(node, g, grads); /* create_graph */
    const int *p = node->ints;
    wick_tensor *x = node->saved[0], *w = node->saved[1], *mean = node->saved[2], *rstd = node->saved[3];
    int iw = p[BN_HAS_W] ? 1 : -1, ib = p[BN_HAS_B] ? 1 + p[BN_HAS_W] : -1;
    bool need_x = wk_nn_wants(node, 0), need_w = iw > 0 && wk_nn_wants(node, iw), need_b = ib > 0 && wk_nn_wants(node, ib);
    wick_dtype cd = mean->dtype;
    wick_device dev = g->storage->device;
    int64_t c = x->sizes[1], s = 1;
    for (int i = 2; i < x->ndim; i++) s *= x->sizes[i];
    wick_tensor *gx = NULL, *gw = NULL, *gb = NULL, *gc = NULL, *xc = NULL, *wc = NULL;
    wick_status st = WICK_OK;
    if ((need_x && (st = wk_tensor_new(&gx, x->ndim, x->sizes, cd, dev))) ||
        (need_w && (st = wk_tensor_new(&gw, 1, &c, cd, dev))) || (need_b && (st = wk_tensor_new(&gb, 1, &c, cd, dev))))
        goto done;
    if (!wk_is_meta(g)) {
        const wick_backend *be = g->storage->backend;
        if (!be->batch_norm_backward) {
            st = wk_nn_unsupported_on("batch_norm backward", g);
            goto done;
        }
        if ((st = wk_nn_as_compute(&gc, g, cd)) || (st = wk_nn_as_compute(&xc, x, cd)) ||
            (w && (st = wk_nn_as_compute(&wc, w, cd))))
            goto done;
        wk_bn_args a = {.device = dev.index, .dtype = cd, .n = x->sizes[0], .c = c, .s = s,
                        .training = p[BN_TRAINING], .x = wk_data(xc), .w = wc ? wk_data(wc) : NULL, .g = wk_data(gc),
                        .mean = wk_data(mean), .rstd = wk_data(rstd), .gx = gx ? wk_data(gx) : NULL,
                        .gw = gw ? wk_data(gw) : NULL, .gb = gb ? wk_data(gb) : NULL};
        if ((st = be->batch_norm_backward(&a))) goto done;
    }
    grads[0] = gx;
    if (iw > 0) grads[iw] = gw;
    if (ib > 0) grads[ib] = gb;
    gx = gw = gb = NULL;
done:
    wick_tensor_release(gx);
    wick_tensor_release(gw);
    wick_tensor_release(gb);
    wick_tensor_release(gc);
    wick_tensor_release(xc);
    wick_tensor_release(wc);
    return st;
}

wick_status wick_batch_norm(wick_tensor **out, const wick_tensor *x, const wick_tensor *weight, const wick_tensor *bias,
                            wick_tensor *running_mean, wick_tensor *running_var, int training, double momentum,
                            double eps) {
    wick_tensor *r = NULL, *mean = NULL, *rstd = NULL;
    wick_status st;
    WK_NO_GRAD(st = bn_forward(&r, &mean, &rstd, x, weight, bias, running_mean, running_var, training, momentum, eps));
    if (st) return st;
    const wick_tensor *in[3] = {x, weight ? weight : bias, weight ? bias : NULL};
    int count = 1 + (weight != NULL) + (bias != NULL);
    if (wk_wants_grad(count, in)) {
        wk_node *n;
        st = wk_record(r, "NativeBatchNormBackward", bn_backward, 0, count, in, &n);
        if (!st) {
            n->ints[BN_TRAINING] = training != 0;
            n->ints[BN_HAS_W] = weight != NULL;
            n->ints[BN_HAS_B] = bias != NULL;
            n->scalars[0] = eps;
            n->twice = true; /* bn_backward_recorded */
            if (!(st = wk_save(n, 0, x, r)) && !(st = weight ? wk_save(n, 1, weight, r) : WICK_OK) &&
                !(st = wk_save(n, 2, mean, r)))
                st = wk_save(n, 3, rstd, r);
        }
    }
    wick_tensor_release(mean);
    wick_tensor_release(rstd);
    return wk_publish(out, r, st);
}
