/* Neural-network ops: 2-D convolution, max and average pooling. Checks, shapes,
 * compute dtypes and autograd here; kernels in the backends (conv2d_forward,
 * conv2d_backward, max_pool2d, ...). Kernels compute in float32 or float64 on
 * contiguous data: other floating dtypes are converted around them, and results
 * go back to the input's dtype (the autograd engine converts gradients). */
#include "autograd.h"

#include <stdio.h>

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

static bool wants(const wk_node *n, int i) { return n->edges[i].node || n->edges[i].leaf; }

static wick_dtype compute_dtype(wick_dtype d) { return d == WICK_FLOAT64 ? WICK_FLOAT64 : WICK_FLOAT32; }

/* t as a contiguous tensor of dtype cd on its own device (t itself, retained, when it is one). */
static wick_status as_compute(wick_tensor **out, const wick_tensor *t, wick_dtype cd) {
    wick_tensor *c;
    TRY(wick_to(&c, (wick_tensor *)t, (wick_options){cd, t->storage->device}));
    wick_status st = wick_contiguous(out, c);
    wick_tensor_release(c);
    return st;
}

/* *t converted to dtype (in place of the reference) */
static wick_status convert_to(wick_tensor **t, wick_dtype dtype) {
    if ((*t)->dtype == dtype) return WICK_OK;
    wick_tensor *r;
    TRY(wick_to(&r, *t, (wick_options){dtype, (*t)->storage->device}));
    wick_tensor_release(*t);
    *t = r;
    return WICK_OK;
}

static wick_status unsupported_on(const char *op, const wick_tensor *t) {
    char dev[32];
    return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not implemented on %s", op,
                     wick_device_format(t->storage->device, dev, sizeof dev));
}

/* ======================================================================== */
/* conv2d                                                                    */
/* ======================================================================== */

enum { P_SH, P_SW, P_PH, P_PW, P_DH, P_DW, P_GROUPS, P_UNBATCHED, P_COUNT };

/* Checks in PyTorch's order and fills the kernel's arguments (dtype unset). */
static wick_status conv2d_check(const wick_tensor *input, const wick_tensor *weight, const wick_tensor *bias,
                                const int *p, wk_conv2d_args *a) {
    const wick_tensor *ts[3] = {input, weight, bias};
    const char *names[3] = {"input", "weight", "bias"};
    TRY(wk_check_same_device("conv2d", bias ? 3 : 2, ts, names));
    char s1[WK_SHAPE_BUF], s2[WK_SHAPE_BUF];
    if (p[P_SH] <= 0 || p[P_SW] <= 0) return wick_fail(WICK_ERR_ARGUMENT, "conv2d: non-positive stride is not supported");
    if (p[P_PH] < 0 || p[P_PW] < 0) return wick_fail(WICK_ERR_ARGUMENT, "conv2d: negative padding is not supported");
    if (p[P_DH] <= 0 || p[P_DW] <= 0)
        return wick_fail(WICK_ERR_ARGUMENT, "conv2d: dilation should be greater than zero, but got [%d, %d]", p[P_DH],
                         p[P_DW]);
    if (p[P_GROUPS] <= 0) return wick_fail(WICK_ERR_ARGUMENT, "conv2d: non-positive groups is not supported");
    if (input->ndim != 3 && input->ndim != 4)
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: %s",
                         wk_shape_str(input->ndim, input->sizes, s1, sizeof s1));
    if (weight->ndim != 4)
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: expected a 4D weight [out_channels, in_channels / groups, kH, kW], but got weight "
                         "of size %s",
                         wk_shape_str(weight->ndim, weight->sizes, s1, sizeof s1));
    if (weight->sizes[2] <= 0 || weight->sizes[3] <= 0)
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: kernel size should be greater than zero, but got kernel_height: %lld kernel_width: %lld",
                         (long long)weight->sizes[2], (long long)weight->sizes[3]);
    int64_t in4[4];
    bool unbatched = input->ndim == 3;
    in4[0] = unbatched ? 1 : input->sizes[0];
    memcpy(in4 + 1, input->sizes + (unbatched ? 0 : 1), sizeof(int64_t) * 3);
    const int64_t *ws = weight->sizes, groups = p[P_GROUPS];
    if (ws[0] < groups)
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: Given groups=%d, expected weight to be at least %d at dimension 0, but got weight of "
                         "size %s instead",
                         p[P_GROUPS], p[P_GROUPS], wk_shape_str(4, ws, s1, sizeof s1));
    if (ws[0] % groups)
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: Given groups=%d, expected weight to be divisible by %d at dimension 0, but got weight "
                         "of size %s instead",
                         p[P_GROUPS], p[P_GROUPS], wk_shape_str(4, ws, s1, sizeof s1));
    if (in4[1] != ws[1] * groups)
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: Given groups=%d, weight of size %s, expected input%s to have %lld channels, but got "
                         "%lld channels instead",
                         p[P_GROUPS], wk_shape_str(4, ws, s1, sizeof s1), wk_shape_str(4, in4, s2, sizeof s2),
                         (long long)(ws[1] * groups), (long long)in4[1]);
    if (bias && (bias->ndim != 1 || bias->sizes[0] != ws[0]))
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: Given weight of size %s, expected bias to be 1-dimensional with %lld elements, but "
                         "got bias of size %s instead",
                         wk_shape_str(4, ws, s1, sizeof s1), (long long)ws[0],
                         wk_shape_str(bias->ndim, bias->sizes, s2, sizeof s2));
    int64_t padded_h = in4[2] + 2 * (int64_t)p[P_PH], padded_w = in4[3] + 2 * (int64_t)p[P_PW];
    int64_t kh, kw; /* the dilated kernel's extent (a huge one cannot fit any input) */
    if (__builtin_mul_overflow((int64_t)p[P_DH], ws[2] - 1, &kh) || __builtin_mul_overflow((int64_t)p[P_DW], ws[3] - 1, &kw))
        kh = kw = INT64_MAX;
    else
        kh++, kw++;
    if (padded_h < kh || padded_w < kw)
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: Calculated padded input size per channel: (%lld x %lld). Kernel size: (%lld x %lld). "
                         "Kernel size can't be greater than actual input size",
                         (long long)padded_h, (long long)padded_w, (long long)kh, (long long)kw);
    if (!wick_dtype_is_floating(input->dtype))
        return wick_fail(WICK_ERR_DTYPE, "conv2d: expected a floating-point input, but got %s",
                         wick_dtype_name(input->dtype));
    if (weight->dtype != input->dtype)
        return wick_fail(WICK_ERR_DTYPE, "conv2d: Input type (%s) and weight type (%s) should be the same",
                         wick_dtype_name(input->dtype), wick_dtype_name(weight->dtype));
    if (bias && bias->dtype != input->dtype)
        return wick_fail(WICK_ERR_DTYPE, "conv2d: Input type (%s) and bias type (%s) should be the same",
                         wick_dtype_name(input->dtype), wick_dtype_name(bias->dtype));
    *a = (wk_conv2d_args){.n = in4[0], .c = in4[1], .h = in4[2], .w = in4[3],
                          .o = ws[0], .kh = ws[2], .kw = ws[3],
                          .oh = (padded_h - kh) / p[P_SH] + 1, .ow = (padded_w - kw) / p[P_SW] + 1,
                          .sh = p[P_SH], .sw = p[P_SW], .ph = p[P_PH], .pw = p[P_PW],
                          .dh = p[P_DH], .dw = p[P_DW], .groups = groups};
    return WICK_OK;
}

/* Shape of the output: [n, o, oh, ow], or [o, oh, ow] unbatched. */
static int conv_out_shape(const wk_conv2d_args *a, bool unbatched, int64_t *shape) {
    int64_t s[4] = {a->n, a->o, a->oh, a->ow};
    memcpy(shape, s + unbatched, sizeof(int64_t) * (4 - unbatched));
    return 4 - unbatched;
}

static wick_status conv2d_forward(wick_tensor **out, const wick_tensor *input, const wick_tensor *weight,
                                  const wick_tensor *bias, const int *p) {
    wk_conv2d_args a;
    TRY(conv2d_check(input, weight, bias, p, &a));
    bool unbatched = input->ndim == 3;
    wick_device dev = input->storage->device;
    wick_dtype cd = compute_dtype(input->dtype);
    int64_t shape[4];
    int nd = conv_out_shape(&a, unbatched, shape);
    wick_tensor *r = NULL, *x = NULL, *w = NULL, *b = NULL;
    wick_status st = wk_tensor_new(&r, nd, shape, wk_is_meta(input) ? input->dtype : cd, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->conv2d_forward) {
        st = unsupported_on("conv2d", input);
        goto done;
    }
    if ((st = as_compute(&x, input, cd)) || (st = as_compute(&w, weight, cd)) || (bias && (st = as_compute(&b, bias, cd))))
        goto done;
    a.dtype = cd;
    a.device = dev.index;
    if ((st = be->conv2d_forward(&a, wk_data(r), wk_data(x), wk_data(w), b ? wk_data(b) : NULL))) goto done;
    st = convert_to(&r, input->dtype);
done:
    wick_tensor_release(x);
    wick_tensor_release(w);
    wick_tensor_release(b);
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

/* saved[0]: the input (when the weight needs a gradient), saved[1]: the weight;
 * sizes: the input's shape; ints: the parameters (P_*). */
static wick_status conv2d_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    const int *p = n->ints;
    bool need_in = wants(n, 0), need_w = wants(n, 1), need_b = n->n_inputs > 2 && wants(n, 2);
    bool unbatched = p[P_UNBATCHED];
    wick_tensor *w_orig = n->saved[1], *x_orig = n->saved[0];
    wick_device dev = g->storage->device;
    wick_dtype cd = compute_dtype(w_orig->dtype);
    const int64_t *chw = n->sizes + (unbatched ? 0 : 1); /* C, H, W */
    wk_conv2d_args a = {.device = dev.index, .dtype = cd, .n = unbatched ? 1 : n->sizes[0], .c = chw[0], .h = chw[1], .w = chw[2],
                         .o = w_orig->sizes[0], .kh = w_orig->sizes[2], .kw = w_orig->sizes[3],
                         .sh = p[P_SH], .sw = p[P_SW], .ph = p[P_PH], .pw = p[P_PW],
                         .dh = p[P_DH], .dw = p[P_DW], .groups = p[P_GROUPS]};
    a.oh = (a.h + 2 * a.ph - a.dh * (a.kh - 1) - 1) / a.sh + 1;
    a.ow = (a.w + 2 * a.pw - a.dw * (a.kw - 1) - 1) / a.sw + 1;
    int64_t in4[4] = {a.n, a.c, a.h, a.w}, b_size = a.o;
    wick_tensor *gi = NULL, *gw = NULL, *gb = NULL, *gc = NULL, *x = NULL, *w = NULL;
    wick_status st = WICK_OK;
    if ((need_in && (st = wk_tensor_new(&gi, 4, in4, cd, dev))) ||
        (need_w && (st = wk_tensor_new(&gw, 4, w_orig->sizes, cd, dev))) ||
        (need_b && (st = wk_tensor_new(&gb, 1, &b_size, cd, dev))))
        goto done;
    if (!wk_is_meta(g)) {
        const wick_backend *be = g->storage->backend;
        if (!be->conv2d_backward) {
            st = unsupported_on("conv2d backward", g);
            goto done;
        }
        if ((st = as_compute(&gc, g, cd)) || (need_in && (st = as_compute(&w, w_orig, cd))) ||
            (need_w && (st = as_compute(&x, x_orig, cd))))
            goto done;
        st = be->conv2d_backward(&a, wk_data(gc), x ? wk_data(x) : NULL, w ? wk_data(w) : NULL,
                                 gi ? wk_data(gi) : NULL, gw ? wk_data(gw) : NULL, gb ? wk_data(gb) : NULL);
        if (st) goto done;
    }
    if (gi && unbatched) { /* [1, C, H, W] -> [C, H, W] */
        wick_tensor *v;
        if ((st = wick_reshape(&v, gi, 3, in4 + 1))) goto done;
        wick_tensor_release(gi);
        gi = v;
    }
    grads[0] = gi, grads[1] = gw;
    if (n->n_inputs > 2) grads[2] = gb;
    gi = gw = gb = NULL;
done:
    wick_tensor_release(gi);
    wick_tensor_release(gw);
    wick_tensor_release(gb);
    wick_tensor_release(gc);
    wick_tensor_release(x);
    wick_tensor_release(w);
    return st;
}

static wick_status conv2d_record(wick_tensor *out, const wick_tensor *input, const wick_tensor *weight,
                                 const wick_tensor *bias, const int *p) {
    const wick_tensor *in[3] = {input, weight, bias};
    wk_node *n;
    TRY(wk_record(out, "ConvolutionBackward", conv2d_backward, 0, bias ? 3 : 2, in, &n));
    memcpy(n->ints, p, sizeof(int) * P_COUNT);
    n->ndim = input->ndim;
    memcpy(n->sizes, input->sizes, sizeof(int64_t) * input->ndim);
    if (weight->requires_grad) TRY(wk_save(n, 0, input, out));
    return wk_save(n, 1, weight, out);
}

wick_status wick_conv2d(wick_tensor **out, const wick_tensor *input, const wick_tensor *weight, const wick_tensor *bias,
                        int stride_h, int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w, int groups) {
    int p[P_COUNT] = {stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, input->ndim == 3};
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = conv2d_forward(&r, input, weight, bias, p));
    if (st) return st;
    const wick_tensor *in[3] = {input, weight, bias};
    return wk_publish(out, r, wk_wants_grad(3, in) ? conv2d_record(r, input, weight, bias, p) : WICK_OK);
}

/* ======================================================================== */
/* pooling                                                                   */
/* ======================================================================== */

/* PyTorch's pooling_output_shape (dilation 1): floor division, and in ceil mode
 * the last window must start inside the input or its left padding. */
static int64_t pool_out_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int ceil_mode) {
    int64_t num = in + 2 * pad - (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
    int64_t q = num >= 0 ? num / stride : -((-num + stride - 1) / stride);
    int64_t out = q + 1;
    if (ceil_mode && (out - 1) * stride >= in + pad) out--;
    return out;
}

/* Checks and the kernel's arguments (dtype unset). `is_max` picks the op name. */
static wick_status pool_check(const char *op, const wick_tensor *input, int kh, int kw, int sh, int sw, int ph,
                              int pw, int ceil_mode, wk_pool2d_args *a) {
    char s[WK_SHAPE_BUF];
    int nd = input->ndim;
    bool ok = nd == 3 || nd == 4;
    for (int d = nd - 3; ok && d < nd; d++)
        if (input->sizes[d] == 0) ok = false;
    if (!ok)
        return wick_fail(WICK_ERR_SHAPE,
                         "%s: expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got: "
                         "%s",
                         op, wk_shape_str(nd, input->sizes, s, sizeof s));
    if (!wick_dtype_is_floating(input->dtype))
        return wick_fail(WICK_ERR_DTYPE, "%s: not implemented for %s tensors", op, wick_dtype_name(input->dtype));
    if (kh <= 0 || kw <= 0)
        return wick_fail(WICK_ERR_ARGUMENT, "%s: kernel size should be greater than zero, but got kH: %d kW: %d", op,
                         kh, kw);
    if (sh <= 0 || sw <= 0)
        return wick_fail(WICK_ERR_ARGUMENT, "%s: stride should be greater than zero, but got dH: %d dW: %d", op, sh,
                         sw);
    if (ph < 0 || pw < 0)
        return wick_fail(WICK_ERR_ARGUMENT, "%s: pad must be non-negative, but got pad: %d", op, ph < 0 ? ph : pw);
    if (ph > kh / 2 || pw > kw / 2)
        return wick_fail(WICK_ERR_ARGUMENT, "%s: pad should be at most half of kernel size, but got pad=%d and "
                         "kernel_size=%d", op, ph > kh / 2 ? ph : pw, ph > kh / 2 ? kh : kw);
    int64_t c = input->sizes[nd - 3], h = input->sizes[nd - 2], w = input->sizes[nd - 1];
    int64_t oh = pool_out_size(h, kh, ph, sh, ceil_mode), ow = pool_out_size(w, kw, pw, sw, ceil_mode);
    if (oh < 1 || ow < 1)
        return wick_fail(WICK_ERR_SHAPE,
                         "%s: Given input size: (%lldx%lldx%lld). Calculated output size: (%lldx%lldx%lld). Output "
                         "size is too small",
                         op, (long long)c, (long long)h, (long long)w, (long long)c, (long long)oh, (long long)ow);
    *a = (wk_pool2d_args){.planes = wk_numel(nd - 2, input->sizes), .h = h, .w = w, .oh = oh, .ow = ow,
                          .kh = kh, .kw = kw, .sh = sh, .sw = sw, .ph = ph, .pw = pw};
    return WICK_OK;
}

static void pool_out_shape(const wick_tensor *input, const wk_pool2d_args *a, int64_t *shape) {
    memcpy(shape, input->sizes, sizeof(int64_t) * input->ndim);
    shape[input->ndim - 2] = a->oh;
    shape[input->ndim - 1] = a->ow;
}

/* kernel arguments from a node: sizes = the input's shape, ints = kh kw sh sw ph pw ceil count_include_pad */
static wk_pool2d_args pool_args_of(const wk_node *n, wick_dtype cd, int device) {
    const int *q = n->ints;
    int nd = n->ndim;
    wk_pool2d_args a = {.device = device, .dtype = cd, .planes = wk_numel(nd - 2, n->sizes), .h = n->sizes[nd - 2],
                        .w = n->sizes[nd - 1], .kh = q[0], .kw = q[1], .sh = q[2], .sw = q[3], .ph = q[4],
                        .pw = q[5], .count_include_pad = q[7]};
    a.oh = pool_out_size(a.h, a.kh, a.ph, a.sh, q[6]);
    a.ow = pool_out_size(a.w, a.kw, a.pw, a.sw, q[6]);
    return a;
}

static wk_node *pool_record_common(wick_tensor *out, const wick_tensor *input, const char *name, wk_backward_fn fn,
                                   const int *q, wick_status *st) {
    wk_node *n = NULL;
    if ((*st = wk_record(out, name, fn, 0, 1, &input, &n))) return NULL;
    memcpy(n->ints, q, sizeof(int) * 8);
    n->ndim = input->ndim;
    memcpy(n->sizes, input->sizes, sizeof(int64_t) * input->ndim);
    return n;
}

/* The backward of both poolings: max pooling saved the indices of its maxima
 * (saved[0]) and sends each gradient there; average pooling spreads it. */
static wick_status pool2d_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    const wick_tensor *indices = n->saved[0];
    const char *op = indices ? "max_pool2d backward" : "avg_pool2d backward";
    wick_dtype cd = compute_dtype(g->dtype);
    wick_tensor *gi, *gc = NULL;
    TRY(wk_tensor_new(&gi, n->ndim, n->sizes, cd, g->storage->device));
    wick_status st = WICK_OK;
    if (!wk_is_meta(gi)) {
        wk_pool2d_args a = pool_args_of(n, cd, g->storage->device.index);
        const wick_backend *be = gi->storage->backend;
        if (indices ? !be->max_pool2d_backward : !be->avg_pool2d_backward) st = unsupported_on(op, g);
        else if (!(st = as_compute(&gc, g, cd))) {
            if (indices) st = be->max_pool2d_backward(&a, wk_data(gi), wk_data(gc), (const int64_t *)wk_data(indices));
            else st = be->avg_pool2d_backward(&a, wk_data(gi), wk_data(gc));
        }
    }
    wick_tensor_release(gc);
    if (st) return wick_tensor_release(gi), st;
    grads[0] = gi;
    return WICK_OK;
}

/* ---- max_pool2d ---- */

static wick_status max_pool2d_forward(wick_tensor **out, wick_tensor **indices, const wick_tensor *input, const int *q) {
    wk_pool2d_args a;
    TRY(pool_check("max_pool2d", input, q[0], q[1], q[2], q[3], q[4], q[5], q[6], &a));
    wick_device dev = input->storage->device;
    wick_dtype cd = compute_dtype(input->dtype);
    int64_t shape[4];
    pool_out_shape(input, &a, shape);
    wick_tensor *r = NULL, *idx = NULL, *x = NULL;
    wick_status st = wk_tensor_new(&r, input->ndim, shape, wk_is_meta(input) ? input->dtype : cd, dev);
    if (!st && indices) st = wk_tensor_new(&idx, input->ndim, shape, WICK_INT64, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->max_pool2d) {
        st = unsupported_on("max_pool2d", input);
        goto done;
    }
    if ((st = as_compute(&x, input, cd))) goto done;
    a.dtype = cd;
    a.device = dev.index;
    if (!(st = be->max_pool2d(&a, wk_data(r), idx ? (int64_t *)wk_data(idx) : NULL, wk_data(x))))
        st = convert_to(&r, input->dtype);
done:
    wick_tensor_release(x);
    if (st) {
        wick_tensor_release(r);
        wick_tensor_release(idx);
        return st;
    }
    *out = r;
    if (indices) *indices = idx;
    return WICK_OK;
}

wick_status wick_max_pool2d(wick_tensor **out, wick_tensor **indices, const wick_tensor *input, int kh, int kw, int sh,
                            int sw, int ph, int pw, int ceil_mode) {
    int q[8] = {kh, kw, sh, sw, ph, pw, ceil_mode != 0, 0};
    bool record = wk_wants_grad(1, &input);
    wick_tensor *r = NULL, *idx = NULL, *user_idx = NULL;
    wick_status st;
    WK_NO_GRAD(st = max_pool2d_forward(&r, record || indices ? &idx : NULL, input, q));
    if (st) return st;
    if (record) {
        if (indices && (st = wick_clone(&user_idx, idx))) goto fail; /* the saved indices stay private */
        wk_node *n = pool_record_common(r, input, "MaxPool2DWithIndicesBackward", pool2d_backward, q, &st);
        if (st || (st = wk_save(n, 0, idx, r))) goto fail;
        wick_tensor_release(idx);
        idx = user_idx;
    }
    *out = r;
    if (indices) *indices = idx;
    return WICK_OK;
fail:
    wick_tensor_release(r);
    wick_tensor_release(idx);
    wick_tensor_release(user_idx);
    return st;
}

/* ---- avg_pool2d ---- */

static wick_status avg_pool2d_forward(wick_tensor **out, const wick_tensor *input, const int *q) {
    wk_pool2d_args a;
    TRY(pool_check("avg_pool2d", input, q[0], q[1], q[2], q[3], q[4], q[5], q[6], &a));
    a.count_include_pad = q[7];
    wick_device dev = input->storage->device;
    wick_dtype cd = compute_dtype(input->dtype);
    int64_t shape[4];
    pool_out_shape(input, &a, shape);
    wick_tensor *r = NULL, *x = NULL;
    wick_status st = wk_tensor_new(&r, input->ndim, shape, wk_is_meta(input) ? input->dtype : cd, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->avg_pool2d) {
        st = unsupported_on("avg_pool2d", input);
        goto done;
    }
    if ((st = as_compute(&x, input, cd))) goto done;
    a.dtype = cd;
    a.device = dev.index;
    if (!(st = be->avg_pool2d(&a, wk_data(r), wk_data(x)))) st = convert_to(&r, input->dtype);
done:
    wick_tensor_release(x);
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

wick_status wick_avg_pool2d(wick_tensor **out, const wick_tensor *input, int kh, int kw, int sh, int sw, int ph, int pw,
                            int ceil_mode, int count_include_pad) {
    int q[8] = {kh, kw, sh, sw, ph, pw, ceil_mode != 0, count_include_pad != 0};
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = avg_pool2d_forward(&r, input, q));
    if (st) return st;
    if (!wk_wants_grad(1, &input)) return *out = r, WICK_OK;
    pool_record_common(r, input, "AvgPool2DBackward", pool2d_backward, q, &st);
    return wk_publish(out, r, st);
}
