/* Neural-network ops: 2-D convolution, max and average pooling. Checks, shapes,
 * compute dtypes and autograd here; kernels in the backends (conv2d_forward,
 * conv2d_backward, max_pool2d, ...). Kernels compute in float32 or float64 on
 * contiguous data: other floating dtypes are converted around them, and results
 * go back to the input's dtype (the autograd engine converts gradients). */
#include "autocast.h"
#include "nn_ops.h"

#include <stdio.h>

#define TRY WK_NN_TRY

wick_status wk_nn_as_compute(wick_tensor **out, const wick_tensor *t, wick_dtype cd) {
    wick_tensor *c;
    TRY(wick_to(&c, (wick_tensor *)t, (wick_options){cd, t->storage->device}));
    wick_status st = wick_contiguous(out, c);
    wick_tensor_release(c);
    return st;
}

wick_status wk_nn_convert_to(wick_tensor **t, wick_dtype dtype) {
    if ((*t)->dtype == dtype) return WICK_OK;
    wick_tensor *r;
    TRY(wick_to(&r, *t, (wick_options){dtype, (*t)->storage->device}));
    wick_tensor_release(*t);
    *t = r;
    return WICK_OK;
}

wick_status wk_nn_unsupported_on(const char *op, const wick_tensor *t) {
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
                         "conv2d: Given groups=%d, expected weight to be at least %d at dimension 1, but got weight of "
                         "size %s instead",
                         p[P_GROUPS], p[P_GROUPS], wk_shape_str(4, ws, s1, sizeof s1));
    if (ws[0] % groups)
        return wick_fail(WICK_ERR_SHAPE,
                         "conv2d: Given groups=%d, expected weight to be divisible by %d at dimension 1, but got weight "
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
    wick_dtype cd = wk_nn_compute_dtype(input->dtype);
    int64_t shape[4];
    int nd = conv_out_shape(&a, unbatched, shape);
    wick_tensor *r = NULL, *x = NULL, *w = NULL, *b = NULL;
    wick_status st = wk_tensor_new(&r, nd, shape, wk_is_meta(input) ? input->dtype : cd, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->conv2d_forward) {
        st = wk_nn_unsupported_on("conv2d", input);
        goto done;
    }
    if ((st = wk_nn_as_compute(&x, input, cd)) || (st = wk_nn_as_compute(&w, weight, cd)) || (bias && (st = wk_nn_as_compute(&b, bias, cd))))
        goto done;
    a.dtype = cd;
    a.device = dev.index;
    if ((st = be->conv2d_forward(&a, wk_data(r), wk_data(x), wk_data(w), b ? wk_data(b) : NULL))) goto done;
    st = wk_nn_convert_to(&r, input->dtype);
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

/* The weight gradient of a convolution with recorded ops (create_graph):
 * x4 [N, C, H, W] the convolution's input, g4 [N, O, OH, OW] the gradient of
 * its output, sdp = {stride h, w, padding h, w, dilation h, w}. Per group:
 * conv2d(x^T, g^T) with stride and dilation swapped ([C/G, O/G, >= KH, >= KW]),
 * cut to the kernel and transposed; the groups joined along dim 0. Its own
 * backward is again convolutions, so any order of derivative works. */
wick_status wk_nn_conv2d_weight_grad(wick_tensor **out, wick_tensor *x4, wick_tensor *g4, const int *sdp,
                                     int groups, int64_t kh, int64_t kw) {
    size_t nbytes = sizeof(wick_tensor *) * (size_t)groups;
    wick_tensor *xt = NULL, *gt = NULL, **parts = wk_malloc(nbytes);
    if (!parts) return wick_fail(WICK_ERR_OOM, "ConvolutionBackward: out of memory");
    memset(parts, 0, nbytes);
    int64_t cg = x4->sizes[1] / groups, og = g4->sizes[1] / groups;
    wick_status st = wick_transpose(&xt, x4, 0, 1);
    if (!st) st = wick_transpose(&gt, g4, 0, 1);
    for (int i = 0; !st && i < groups; i++) {
        wick_tensor *xi = NULL, *gi = NULL, *u = NULL, *cut = NULL, *t = NULL;
        st = wick_narrow(&xi, xt, 0, i * cg, cg);
        if (!st) st = wick_narrow(&gi, gt, 0, i * og, og);
        if (!st) st = wick_conv2d(&u, xi, gi, NULL, sdp[4], sdp[5], sdp[2], sdp[3], sdp[0], sdp[1], 1);
        if (!st) st = wick_narrow(&cut, u, 2, 0, kh);
        if (!st) st = wick_narrow(&t, cut, 3, 0, kw);
        if (!st) st = wick_transpose(&parts[i], t, 0, 1);
        wick_tensor_release(xi);
        wick_tensor_release(gi);
        wick_tensor_release(u);
        wick_tensor_release(cut);
        wick_tensor_release(t);
    }
    if (!st && groups == 1) *out = parts[0], parts[0] = NULL;
    else if (!st) st = wick_cat(out, groups, (const wick_tensor *const *)parts, 0);
    for (int i = 0; i < groups; i++) wick_tensor_release(parts[i]);
    wk_free(parts, nbytes);
    wick_tensor_release(xt);
    wick_tensor_release(gt);
    return st;
}

/* conv2d's backward written with recorded ops, for create_graph:
 * grad_input = conv_transpose2d(g, w) (output_padding restores H, W),
 * grad_weight = wk_nn_conv2d_weight_grad, grad_bias = g summed over N, OH, OW.
 * Their own backwards give the second derivative (a WGAN-GP penalty through a
 * convolutional critic, StyleGAN2's path-length penalty through its grouped
 * modulated convolutions). */
static wick_status conv2d_backward_recorded(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    const int *p = n->ints;
    bool unbatched = p[P_UNBATCHED];
    wick_tensor *w = n->saved[1], *x = n->saved[0], *g4 = NULL, *x4 = NULL, *t = NULL;
    wick_status st = WICK_OK;
    const int64_t *chw = n->sizes + (unbatched ? 0 : 1);
    if (unbatched) {
        if ((st = wick_unsqueeze(&g4, g, 0))) return st;
    } else {
        wick_tensor_retain(g);
        g4 = g;
    }
    int64_t kh = w->sizes[2], kw = w->sizes[3], oh = g4->sizes[2], ow = g4->sizes[3];
    if (wk_nn_wants(n, 0)) {
        int stride[2] = {p[P_SH], p[P_SW]}, pad[2] = {p[P_PH], p[P_PW]}, dil[2] = {p[P_DH], p[P_DW]};
        int outpad[2] = {(int)(chw[1] - ((oh - 1) * p[P_SH] - 2 * p[P_PH] + p[P_DH] * (kh - 1) + 1)),
                         (int)(chw[2] - ((ow - 1) * p[P_SW] - 2 * p[P_PW] + p[P_DW] * (kw - 1) + 1))};
        st = wick_conv_transpose2d(&t, g4, w, NULL, stride, pad, outpad, dil, p[P_GROUPS]);
        if (!st && unbatched) st = wick_squeeze(&grads[0], t, 0);
        else if (!st) grads[0] = t, t = NULL;
    }
    if (!st && wk_nn_wants(n, 1)) { /* [C, N, H, W] * [O, N, OH, OW] -> [C, O, >= KH, >= KW] */
        if (unbatched) st = wick_unsqueeze(&x4, x, 0);
        else wick_tensor_retain(x), x4 = x;
        if (!st) st = wk_nn_conv2d_weight_grad(&grads[1], x4, g4, p, p[P_GROUPS], kh, kw);
    }
    if (!st && n->n_inputs > 2 && wk_nn_wants(n, 2)) st = wk_nn_sum_nhw(&grads[2], g4);
    wick_tensor_release(g4);
    wick_tensor_release(x4);
    wick_tensor_release(t);
    return st;
}

/* g [N, C, H, W] summed over N, H and W (with recorded ops): the bias gradient */
wick_status wk_nn_sum_nhw(wick_tensor **out, const wick_tensor *g) {
    wick_tensor *s1 = NULL, *s2 = NULL;
    wick_status st = wick_reduce(&s1, NULL, WICK_SUM, g, 3, 0, 0);
    if (!st) st = wick_reduce(&s2, NULL, WICK_SUM, s1, 2, 0, 0);
    if (!st) st = wick_reduce(out, NULL, WICK_SUM, s2, 0, 0, 0);
    wick_tensor_release(s1);
    wick_tensor_release(s2);
    return st;
}

/* saved[0]: the input (when the weight needs a gradient), saved[1]: the weight;
 * sizes: the input's shape; ints: the parameters (P_*). */
static wick_status conv2d_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    const int *p = n->ints;
    if (wk_grad_mode) return conv2d_backward_recorded(n, g, grads); /* create_graph */
    bool need_in = wk_nn_wants(n, 0), need_w = wk_nn_wants(n, 1), need_b = n->n_inputs > 2 && wk_nn_wants(n, 2);
    bool unbatched = p[P_UNBATCHED];
    wick_tensor *w_orig = n->saved[1], *x_orig = n->saved[0];
    wick_device dev = g->storage->device;
    wick_dtype cd = wk_nn_compute_dtype(w_orig->dtype);
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
            st = wk_nn_unsupported_on("conv2d backward", g);
            goto done;
        }
        if ((st = wk_nn_as_compute(&gc, g, cd)) || (need_in && (st = wk_nn_as_compute(&w, w_orig, cd))) ||
            (need_w && (st = wk_nn_as_compute(&x, x_orig, cd))))
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

wick_status wk_nn_record_conv(wick_tensor *out, wk_backward_fn fn, const wick_tensor *input, const wick_tensor *weight,
                              const wick_tensor *bias, const int *p, int np) {
    const wick_tensor *in[3] = {input, weight, bias};
    wk_node *n;
    TRY(wk_record(out, "ConvolutionBackward", fn, 0, bias ? 3 : 2, in, &n));
    memcpy(n->ints, p, sizeof(int) * (size_t)np);
    n->twice = true; /* conv2d_backward_recorded, ct_backward_recorded */
    n->ndim = input->ndim;
    memcpy(n->sizes, input->sizes, sizeof(int64_t) * input->ndim);
    if (weight->requires_grad) TRY(wk_save(n, 0, input, out));
    return wk_save(n, 1, weight, out);
}

wick_status wick_conv2d(wick_tensor **out, const wick_tensor *input, const wick_tensor *weight, const wick_tensor *bias,
                        int stride_h, int stride_w, int pad_h, int pad_w, int dilation_h, int dilation_w, int groups) {
    WK_AUTOCAST(WK_AC_LOWER, 3,
                wick_conv2d(out, c[0], c[1], c[2], stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups),
                input, weight, bias);
    int p[P_COUNT] = {stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, input->ndim == 3};
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = conv2d_forward(&r, input, weight, bias, p));
    if (st) return st;
    const wick_tensor *in[3] = {input, weight, bias};
    return wk_publish(out, r, wk_wants_grad(3, in) ? wk_nn_record_conv(r, conv2d_backward, input, weight, bias, p, P_COUNT) : WICK_OK);
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
    n->twice = true; /* pool2d_record_backward */
    n->ndim = input->ndim;
    memcpy(n->sizes, input->sizes, sizeof(int64_t) * input->ndim);
    return n;
}

/* A pooling's gradient is linear in g. Under create_graph its node takes the
 * incoming gradient gg back through the forward: max pooling picks gg at the
 * saved maxima (a gather over each plane), average pooling averages it with the
 * same window. The node keeps the output's shape in sizes and the window in ints. */
static wick_status pool2d_backward_backward(wk_node *m, wick_tensor *gg, wick_tensor **grads) {
    const int *q = m->ints;
    if (!m->saved[0]) return wick_avg_pool2d(&grads[0], gg, q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7]);
    int nd = m->ndim;
    int64_t planes = wk_numel(nd - 2, m->sizes), in2[2] = {planes, gg->sizes[nd - 2] * gg->sizes[nd - 1]},
            out2[2] = {planes, m->sizes[nd - 2] * m->sizes[nd - 1]};
    wick_tensor *a = NULL, *i = NULL, *r = NULL;
    wick_status st = wick_reshape(&a, gg, 2, in2);
    if (!st) st = wick_reshape(&i, m->saved[0], 2, out2);
    if (!st) st = wick_gather(&r, a, 1, i);
    if (!st) st = wick_reshape(&grads[0], r, nd, m->sizes);
    wick_tensor_release(a);
    wick_tensor_release(i);
    wick_tensor_release(r);
    return st;
}

/* gi, the gradient pool2d_backward computed from g: recorded for create_graph. */
static wick_status pool2d_record_backward(wick_tensor *gi, const wick_tensor *g, const wk_node *n) {
    if (!wk_wants_grad(1, &g)) return WICK_OK;
    wk_node *m;
    const char *name = n->saved[0] ? "MaxPool2DWithIndicesBackwardBackward" : "AvgPool2DBackwardBackward";
    TRY(wk_record(gi, name, pool2d_backward_backward, 0, 1, &g, &m));
    m->twice = true;
    memcpy(m->ints, n->ints, sizeof(int) * 8);
    m->ndim = g->ndim;
    memcpy(m->sizes, g->sizes, sizeof(int64_t) * g->ndim);
    return n->saved[0] ? wk_save(m, 0, n->saved[0], gi) : WICK_OK;
}

/* The backward of both poolings: max pooling saved the indices of its maxima
 * (saved[0]) and sends each gradient there; average pooling spreads it. */
static wick_status pool2d_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    const wick_tensor *indices = n->saved[0];
    const char *op = indices ? "max_pool2d backward" : "avg_pool2d backward";
    wick_dtype cd = wk_nn_compute_dtype(g->dtype);
    wick_tensor *gi, *gc = NULL;
    TRY(wk_tensor_new(&gi, n->ndim, n->sizes, cd, g->storage->device));
    wick_status st = WICK_OK;
    if (!wk_is_meta(gi)) {
        wk_pool2d_args a = pool_args_of(n, cd, g->storage->device.index);
        const wick_backend *be = gi->storage->backend;
        if (indices ? !be->max_pool2d_backward : !be->avg_pool2d_backward) st = wk_nn_unsupported_on(op, g);
        else if (!(st = wk_nn_as_compute(&gc, g, cd))) {
            if (indices) st = be->max_pool2d_backward(&a, wk_data(gi), wk_data(gc), (const int64_t *)wk_data(indices));
            else st = be->avg_pool2d_backward(&a, wk_data(gi), wk_data(gc));
        }
    }
    wick_tensor_release(gc);
    if (!st) st = pool2d_record_backward(gi, g, n); /* create_graph */
    if (st) return wick_tensor_release(gi), st;
    grads[0] = gi;
    return WICK_OK;
}

/* ---- max_pool2d ---- */

static wick_status max_pool2d_forward(wick_tensor **out, wick_tensor **indices, const wick_tensor *input, const int *q) {
    wk_pool2d_args a;
    TRY(pool_check("max_pool2d", input, q[0], q[1], q[2], q[3], q[4], q[5], q[6], &a));
    wick_device dev = input->storage->device;
    wick_dtype cd = wk_nn_compute_dtype(input->dtype);
    int64_t shape[4];
    pool_out_shape(input, &a, shape);
    wick_tensor *r = NULL, *idx = NULL, *x = NULL;
    wick_status st = wk_tensor_new(&r, input->ndim, shape, wk_is_meta(input) ? input->dtype : cd, dev);
    if (!st && indices) st = wk_tensor_new(&idx, input->ndim, shape, WICK_INT64, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->max_pool2d) {
        st = wk_nn_unsupported_on("max_pool2d", input);
        goto done;
    }
    if ((st = wk_nn_as_compute(&x, input, cd))) goto done;
    a.dtype = cd;
    a.device = dev.index;
    if (!(st = be->max_pool2d(&a, wk_data(r), idx ? (int64_t *)wk_data(idx) : NULL, wk_data(x))))
        st = wk_nn_convert_to(&r, input->dtype);
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
    TRY(wk_check_real("max_pool2d", 1, &input));
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
    wick_dtype cd = wk_nn_compute_dtype(input->dtype);
    int64_t shape[4];
    pool_out_shape(input, &a, shape);
    wick_tensor *r = NULL, *x = NULL;
    wick_status st = wk_tensor_new(&r, input->ndim, shape, wk_is_meta(input) ? input->dtype : cd, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->avg_pool2d) {
        st = wk_nn_unsupported_on("avg_pool2d", input);
        goto done;
    }
    if ((st = wk_nn_as_compute(&x, input, cd))) goto done;
    a.dtype = cd;
    a.device = dev.index;
    if (!(st = be->avg_pool2d(&a, wk_data(r), wk_data(x)))) st = wk_nn_convert_to(&r, input->dtype);
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
    TRY(wk_check_real("avg_pool2d", 1, &input));
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = avg_pool2d_forward(&r, input, q));
    if (st) return st;
    if (!wk_wants_grad(1, &input)) return *out = r, WICK_OK;
    pool_record_common(r, input, "AvgPool2DBackward", pool2d_backward, q, &st);
    return wk_publish(out, r, st);
}

/* ======================================================================== */
/* fused transformer ops: GELU and softmax backwards, layer_norm, cross      */
/* entropy (the kernels: softmax_backward, act_backward, layer_norm, ...)    */
/* ======================================================================== */

/* A fresh tensor shaped like `shape_of` in the compute dtype. */
static wick_status new_like(wick_tensor **out, const wick_tensor *shape_of, wick_dtype cd) {
    return wk_tensor_new(out, shape_of->ndim, shape_of->sizes, cd, shape_of->storage->device);
}

/* gi = g f'(x) for the activation `form` (WK_ACT_: GELU exact or tanh, ReLU),
 * in the compute dtype. */
wick_status wk_act_backward(wick_tensor **out, const wick_tensor *g, const wick_tensor *x, int form) {
    wick_dtype cd = wk_nn_compute_dtype(x->dtype);
    wick_tensor *r = NULL, *gc = NULL, *xc = NULL;
    wick_status st = new_like(&r, x, cd);
    if (!st && !wk_is_meta(r)) {
        const wick_backend *be = r->storage->backend;
        if (!be->act_backward) st = wk_nn_unsupported_on(form == WK_ACT_RELU ? "relu backward" : "gelu backward", x);
        else if (!(st = wk_nn_as_compute(&gc, g, cd)) && !(st = wk_nn_as_compute(&xc, x, cd)))
            st = be->act_backward(r, gc, xc, form);
    }
    wick_tensor_release(gc);
    wick_tensor_release(xc);
    if (st) return wick_tensor_release(r), st;
    *out = r;
    return WICK_OK;
}

/* The backward of softmax (y its output) or log_softmax (y the log-probabilities)
 * along dim; NULL *out with WICK_OK when the backend has no fused kernel. */
wick_status wk_softmax_backward(wick_tensor **out, const wick_tensor *g, const wick_tensor *y, int dim, int log) {
    *out = NULL;
    if (wk_is_meta(y) || !y->storage->backend->softmax_backward) return WICK_OK;
    wick_dtype cd = wk_nn_compute_dtype(y->dtype);
    wick_tensor *r = NULL, *gc = NULL, *yc = NULL;
    wick_status st = new_like(&r, y, cd);
    if (!st && !(st = wk_nn_as_compute(&gc, g, cd)) && !(st = wk_nn_as_compute(&yc, y, cd)))
        st = r->storage->backend->softmax_backward(r, gc, yc, y->ndim ? dim : 0, log);
    wick_tensor_release(gc);
    wick_tensor_release(yc);
    if (st) return wick_tensor_release(r), st;
    *out = r;
    return WICK_OK;
}

/* ---- layer_norm ---- */

enum { LN_HAS_W, LN_HAS_B, LN_DIMS };

static wick_status ln_check(const wick_tensor *x, int nd, const wick_tensor *w, const wick_tensor *b, int64_t *rows,
                            int64_t *n) {
    const wick_tensor *ts[3] = {x, w ? w : b, w ? b : NULL};
    const char *names[3] = {"input", w ? "weight" : "bias", "bias"};
    TRY(wk_check_same_device("layer_norm", 1 + (w != NULL) + (b != NULL), ts, names));
    if (!wick_dtype_is_floating(x->dtype))
        return wick_fail(WICK_ERR_DTYPE, "layer_norm: expected a floating-point input, but got %s",
                         wick_dtype_name(x->dtype));
    if (nd < 0 || nd > x->ndim)
        return wick_fail(WICK_ERR_SHAPE, "layer_norm: normalized_shape of %d dimension(s) for an input of %d", nd,
                         x->ndim);
    int lead = x->ndim - nd;
    *rows = 1, *n = 1;
    for (int i = 0; i < x->ndim; i++) *(i < lead ? rows : n) *= x->sizes[i];
    const wick_tensor *wb[2] = {w, b};
    for (int k = 0; k < 2; k++) {
        const wick_tensor *t = wb[k];
        if (!t) continue;
        char s1[WK_SHAPE_BUF], s2[WK_SHAPE_BUF];
        if (t->ndim != nd || memcmp(t->sizes, x->sizes + lead, sizeof(int64_t) * nd))
            return wick_fail(WICK_ERR_SHAPE, "layer_norm: expected %s of shape %s, but got %s", k ? "bias" : "weight",
                             wk_shape_str(nd, x->sizes + lead, s1, sizeof s1), wk_shape_str(t->ndim, t->sizes, s2, sizeof s2));
        /* PyTorch's one mix: float32 parameters for a float16 or bfloat16 input (computed in float32) */
        bool mixed = (x->dtype == WICK_FLOAT16 || x->dtype == WICK_BFLOAT16) && t->dtype == WICK_FLOAT32;
        if (t->dtype != x->dtype && !mixed)
            return wick_fail(WICK_ERR_DTYPE, "layer_norm: expected %s of dtype %s, but got %s", k ? "bias" : "weight",
                             wick_dtype_name(x->dtype), wick_dtype_name(t->dtype));
    }
    return WICK_OK;
}

/* y, and mean and rstd per row (compute dtype) for the backward. */
static wick_status ln_forward(wick_tensor **y, wick_tensor **mean, wick_tensor **rstd, const wick_tensor *x, int nd,
                              const wick_tensor *w, const wick_tensor *b, double eps) {
    int64_t rows = 0, n = 0;
    TRY(ln_check(x, nd, w, b, &rows, &n));
    wick_dtype cd = wk_nn_compute_dtype(x->dtype);
    wick_device dev = x->storage->device;
    wick_tensor *r = NULL, *m = NULL, *s = NULL, *xc = NULL, *wc = NULL, *bc = NULL;
    wick_status st = wk_tensor_new(&r, x->ndim, x->sizes, wk_is_meta(x) ? x->dtype : cd, dev);
    if (st || (st = wk_tensor_new(&m, 1, &rows, cd, dev)) || (st = wk_tensor_new(&s, 1, &rows, cd, dev)) || wk_is_meta(r))
        goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->layer_norm) {
        st = wk_nn_unsupported_on("layer_norm", x);
        goto done;
    }
    if ((st = wk_nn_as_compute(&xc, x, cd)) || (w && (st = wk_nn_as_compute(&wc, w, cd))) || (b && (st = wk_nn_as_compute(&bc, b, cd))))
        goto done;
    wk_norm_args a = {.device = dev.index, .dtype = cd, .rows = rows, .n = n, .eps = eps, .x = wk_data(xc),
                      .w = wc ? wk_data(wc) : NULL, .b = bc ? wk_data(bc) : NULL, .y = wk_data(r),
                      .mean = wk_data(m), .rstd = wk_data(s)};
    if ((st = be->layer_norm(&a))) goto done;
    st = wk_nn_convert_to(&r, x->dtype);
done:
    wick_tensor_release(xc);
    wick_tensor_release(wc);
    wick_tensor_release(bc);
    if (st) {
        wick_tensor_release(r);
        wick_tensor_release(m);
        wick_tensor_release(s);
        return st;
    }
    *y = r, *mean = m, *rstd = s;
    return WICK_OK;
}

static wick_status chain_op(wick_tensor **a, wick_binary_op op, const wick_tensor *b);

/* layer_norm's backward with recorded ops, for create_graph (a gradient
 * penalty through a critic with LayerNorm). On x as [rows, n] and xhat =
 * (x - mean) rstd, recomputed from x with ops so it carries x's graph:
 *   gy = g w,  gx = rstd (gy - mean(gy) - xhat mean(gy xhat)),
 *   gw = sum over rows of g xhat,  gb = sum over rows of g. */
static wick_status ln_backward_recorded(wk_node *node, wick_tensor *g, wick_tensor **grads) {
    const int *p = node->ints;
    wick_tensor *x = node->saved[0], *w = node->saved[1];
    int iw = p[LN_HAS_W] ? 1 : -1, ib = p[LN_HAS_B] ? 1 + p[LN_HAS_W] : -1, lead = x->ndim - p[LN_DIMS];
    int64_t shape[2] = {1, 1};
    for (int i = 0; i < x->ndim; i++) shape[i < lead ? 0 : 1] *= x->sizes[i];
    wick_tensor *x2 = NULL, *g2 = NULL, *mu = NULL, *d = NULL, *var = NULL, *rstd = NULL, *xhat = NULL, *gy = NULL,
                *t = NULL, *m1 = NULL, *m2 = NULL, *gx = NULL;
    wick_status st = wick_reshape(&x2, x, 2, shape);
    if (!st) st = wick_reshape(&g2, g, 2, shape);
    if (!st) st = wick_reduce(&mu, NULL, WICK_MEAN, x2, 1, 1, 0);
    if (!st) st = wick_binary(&d, WICK_SUB, x2, mu);
    if (!st) st = wick_binary(&t, WICK_MUL, d, d);
    if (!st) st = wick_reduce(&var, NULL, WICK_MEAN, t, 1, 1, 0);
    if (!st) st = wick_binary_scalar(&m1, WICK_ADD, var, (wick_scalar){node->scalars[0], 0}, 0);
    if (!st) st = wick_unary(&rstd, WICK_RSQRT, m1);
    if (!st) st = wick_binary(&xhat, WICK_MUL, d, rstd);
    wick_tensor_release(t), t = NULL;
    wick_tensor_release(m1), m1 = NULL;
    if (!st && wk_nn_wants(node, 0)) {
        int64_t n1 = shape[1];
        wick_tensor *w1 = NULL;
        if (w) st = wick_reshape(&w1, w, 1, &n1);
        if (!st) st = w ? wick_binary(&gy, WICK_MUL, g2, w1) : (wick_tensor_retain(g2), gy = g2, WICK_OK);
        wick_tensor_release(w1);
        if (!st) st = wick_reduce(&m1, NULL, WICK_MEAN, gy, 1, 1, 0);
        if (!st) st = wick_binary(&t, WICK_MUL, gy, xhat);
        if (!st) st = wick_reduce(&m2, NULL, WICK_MEAN, t, 1, 1, 0);
        wick_tensor_release(t), t = NULL;
        if (!st) st = wick_binary(&t, WICK_MUL, xhat, m2); /* xhat mean(gy xhat) */
        if (!st) st = chain_op(&gy, WICK_SUB, m1);
        if (!st) st = chain_op(&gy, WICK_SUB, t);
        if (!st) st = wick_binary(&gx, WICK_MUL, gy, rstd);
        if (!st) st = wick_reshape(&grads[0], gx, x->ndim, x->sizes);
    }
    if (!st && iw > 0 && wk_nn_wants(node, iw)) {
        wick_tensor *s = NULL, *gxh = NULL;
        if (!(st = wick_binary(&gxh, WICK_MUL, g2, xhat)) && !(st = wick_reduce(&s, NULL, WICK_SUM, gxh, 0, 0, 0)))
            st = wick_reshape(&grads[iw], s, p[LN_DIMS], x->sizes + lead);
        wick_tensor_release(s);
        wick_tensor_release(gxh);
    }
    if (!st && ib > 0 && wk_nn_wants(node, ib)) {
        wick_tensor *s = NULL;
        if (!(st = wick_reduce(&s, NULL, WICK_SUM, g2, 0, 0, 0)))
            st = wick_reshape(&grads[ib], s, p[LN_DIMS], x->sizes + lead);
        wick_tensor_release(s);
    }
    wick_tensor *all[] = {x2, g2, mu, d, var, rstd, xhat, gy, t, m1, m2, gx};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wick_tensor_release(all[i]);
    return st;
}

/* saved: x, weight (or NULL), mean, rstd; ints: LN_HAS_W, LN_HAS_B, LN_DIMS;
 * scalars: eps. */
static wick_status ln_backward(wk_node *node, wick_tensor *g, wick_tensor **grads) {
    if (wk_grad_mode) return ln_backward_recorded(node, g, grads); /* create_graph */
    const int *p = node->ints;
    wick_tensor *x = node->saved[0], *w = node->saved[1], *mean = node->saved[2], *rstd = node->saved[3];
    int iw = p[LN_HAS_W] ? 1 : -1, ib = p[LN_HAS_B] ? 1 + p[LN_HAS_W] : -1;
    bool need_x = wk_nn_wants(node, 0), need_w = iw > 0 && wk_nn_wants(node, iw), need_b = ib > 0 && wk_nn_wants(node, ib);
    wick_dtype cd = mean->dtype;
    wick_device dev = g->storage->device;
    int nd = p[LN_DIMS], lead = x->ndim - nd;
    int64_t rows = 1, n = 1;
    for (int i = 0; i < x->ndim; i++) *(i < lead ? &rows : &n) *= x->sizes[i];
    wick_tensor *gx = NULL, *gw = NULL, *gb = NULL, *gc = NULL, *xc = NULL, *wc = NULL;
    wick_status st = WICK_OK;
    if ((need_x && (st = wk_tensor_new(&gx, x->ndim, x->sizes, cd, dev))) ||
        (need_w && (st = wk_tensor_new(&gw, nd, x->sizes + lead, cd, dev))) ||
        (need_b && (st = wk_tensor_new(&gb, nd, x->sizes + lead, cd, dev))))
        goto done;
    if (!wk_is_meta(g)) {
        const wick_backend *be = g->storage->backend;
        if (!be->layer_norm_backward) {
            st = wk_nn_unsupported_on("layer_norm backward", g);
            goto done;
        }
        if ((st = wk_nn_as_compute(&gc, g, cd)) || (st = wk_nn_as_compute(&xc, x, cd)) || (w && (st = wk_nn_as_compute(&wc, w, cd))))
            goto done;
        wk_norm_args a = {.device = dev.index, .dtype = cd, .rows = rows, .n = n, .x = wk_data(xc),
                          .w = wc ? wk_data(wc) : NULL, .g = wk_data(gc), .mean = wk_data(mean), .rstd = wk_data(rstd),
                          .gx = gx ? wk_data(gx) : NULL, .gw = gw ? wk_data(gw) : NULL, .gb = gb ? wk_data(gb) : NULL};
        if ((st = be->layer_norm_backward(&a))) goto done;
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

wick_status wick_layer_norm(wick_tensor **out, const wick_tensor *x, int normalized_ndim, const wick_tensor *weight,
                            const wick_tensor *bias, double eps) {
    /* float32 on CUDA (PyTorch's list); on the CPU a bfloat16 input with float32
     * weights (a Linear's output under autocast) runs in float32 */
    WK_AUTOCAST(x->storage->device.type == WICK_CUDA ? WK_AC_FP32_CUDA : WK_AC_PROMOTE, 3,
                wick_layer_norm(out, c[0], normalized_ndim, c[1], c[2], eps), x, weight, bias);
    wick_tensor *r = NULL, *mean = NULL, *rstd = NULL;
    wick_status st;
    WK_NO_GRAD(st = ln_forward(&r, &mean, &rstd, x, normalized_ndim, weight, bias, eps));
    if (st) return st;
    const wick_tensor *in[3] = {x, weight ? weight : bias, weight ? bias : NULL};
    int count = 1 + (weight != NULL) + (bias != NULL);
    if (wk_wants_grad(count, in)) {
        wk_node *n;
        st = wk_record(r, "NativeLayerNormBackward", ln_backward, 0, count, in, &n);
        if (!st) {
            n->ints[LN_HAS_W] = weight != NULL;
            n->ints[LN_HAS_B] = bias != NULL;
            n->ints[LN_DIMS] = normalized_ndim;
            n->scalars[0] = eps;
            n->twice = true; /* ln_backward_recorded */
            if (!(st = wk_save(n, 0, x, r)) && !(st = weight ? wk_save(n, 1, weight, r) : WICK_OK) &&
                !(st = wk_save(n, 2, mean, r)))
                st = wk_save(n, 3, rstd, r);
        }
    }
    wick_tensor_release(mean);
    wick_tensor_release(rstd);
    return wk_publish(out, r, st);
}

/* ---- cross entropy with class indices ---- */

enum { CE_REDUCTION, CE_HAS_IGNORE };

static wick_status ce_check(const wick_tensor *x, const wick_tensor *target, const wick_tensor *weight, double smoothing,
                            int reduction) {
    const wick_tensor *ts[3] = {x, target, weight};
    const char *names[3] = {"input", "target", "weight"};
    TRY(wk_check_same_device("cross_entropy", weight ? 3 : 2, ts, names));
    char s1[WK_SHAPE_BUF], s2[WK_SHAPE_BUF];
    if (!wick_dtype_is_floating(x->dtype))
        return wick_fail(WICK_ERR_DTYPE, "cross_entropy: expected a floating-point input, but got %s",
                         wick_dtype_name(x->dtype));
    if (target->dtype != WICK_INT64 && target->dtype != WICK_INT32)
        return wick_fail(WICK_ERR_DTYPE, "cross_entropy: expected class indices of dtype int64 (1-based), got %s",
                         wick_dtype_name(target->dtype));
    if (x->ndim != 2 || target->ndim != 1 || target->sizes[0] != x->sizes[0])
        return wick_fail(WICK_ERR_SHAPE, "cross_entropy: expected input [N, C] and target [N], got input %s and target %s",
                         wk_shape_str(x->ndim, x->sizes, s1, sizeof s1),
                         wk_shape_str(target->ndim, target->sizes, s2, sizeof s2));
    if (weight && (weight->ndim != 1 || weight->sizes[0] != x->sizes[1]))
        return wick_fail(WICK_ERR_SHAPE, "cross_entropy: expected a weight of %lld elements, got %s",
                         (long long)x->sizes[1], wk_shape_str(weight->ndim, weight->sizes, s1, sizeof s1));
    if (weight && !wick_dtype_is_floating(weight->dtype))
        return wick_fail(WICK_ERR_DTYPE, "cross_entropy: expected a floating-point weight, got %s",
                         wick_dtype_name(weight->dtype));
    if (!(smoothing >= 0 && smoothing <= 1))
        return wick_fail(WICK_ERR_ARGUMENT, "cross_entropy: label_smoothing must be between 0 and 1");
    if (reduction < 0 || reduction > 2) return wick_fail(WICK_ERR_ARGUMENT, "cross_entropy: invalid reduction %d", reduction);
    return WICK_OK;
}

static wick_status ce_forward(wick_tensor **out, wick_tensor **lse_denom, const wick_tensor *x, const wick_tensor *target,
                              const wick_tensor *weight, int has_ignore, int64_t ignore_index, double smoothing,
                              int reduction) {
    TRY(ce_check(x, target, weight, smoothing, reduction));
    wick_dtype cd = wk_nn_compute_dtype(x->dtype);
    wick_device dev = x->storage->device;
    int64_t rows = x->sizes[0], rows2 = 2 * rows; /* lse: the maxima, then the log-sums (wk_ce_args) */
    wick_tensor *loss = NULL, *roww = NULL, *lse = NULL, *xc = NULL, *tc = NULL, *wc = NULL, *r = NULL, *den = NULL;
    wick_status st;
    if ((st = wk_tensor_new(&loss, 1, &rows, cd, dev)) || (st = wk_tensor_new(&roww, 1, &rows, cd, dev)) ||
        (st = wk_tensor_new(&lse, 1, &rows2, cd, dev)))
        goto done;
    if (!wk_is_meta(x)) {
        const wick_backend *be = x->storage->backend;
        if (!be->cross_entropy) {
            st = wk_nn_unsupported_on("cross_entropy", x);
            goto done;
        }
        if ((st = wk_nn_as_compute(&xc, x, cd)) || (st = wk_nn_as_compute(&tc, target, WICK_INT64)) ||
            (weight && (st = wk_nn_as_compute(&wc, weight, cd))))
            goto done;
        wk_ce_args a = {.device = dev.index, .dtype = cd, .rows = rows, .classes = x->sizes[1], .x = wk_data(xc),
                        .weight = wc ? wk_data(wc) : NULL, .target = (const int64_t *)wk_data(tc),
                        .ignore_index = ignore_index, .has_ignore = has_ignore, .smoothing = smoothing,
                        .loss = wk_data(loss), .row_weight = wk_data(roww), .lse = wk_data(lse)};
        if ((st = be->cross_entropy(&a))) goto done;
    }
    /* the result, and the mean's denominator after the lse (for the backward) */
    if (reduction == 0) r = loss, loss = NULL;
    else if ((st = wick_reduce(&r, NULL, WICK_SUM, loss, -1, 0, 0))) goto done;
    if (reduction == 1) {
        wick_tensor *q;
        int64_t one = 1;
        if ((st = wick_reduce(&den, NULL, WICK_SUM, roww, -1, 0, 0)) || (st = wick_binary(&q, WICK_DIV, r, den))) goto done;
        wick_tensor_release(r);
        r = q;
        if ((st = wick_reshape(&q, den, 1, &one))) goto done;
        wick_tensor_release(den);
        den = q;
        const wick_tensor *parts[2] = {lse, den};
        if ((st = wick_cat(lse_denom, 2, parts, 0))) goto done;
    } else {
        *lse_denom = lse, lse = NULL;
    }
    if ((st = wk_nn_convert_to(&r, x->dtype))) goto done;
    *out = r, r = NULL;
done:
    wick_tensor_release(loss);
    wick_tensor_release(roww);
    wick_tensor_release(lse);
    wick_tensor_release(xc);
    wick_tensor_release(tc);
    wick_tensor_release(wc);
    wick_tensor_release(r);
    wick_tensor_release(den);
    return st;
}

/* *a = *a op b, taking over *a's reference */
static wick_status chain_op(wick_tensor **a, wick_binary_op op, const wick_tensor *b) {
    wick_tensor *r;
    wick_status st = wick_binary(&r, op, *a, b);
    if (st) return st;
    wick_tensor_release(*a);
    *a = r;
    return WICK_OK;
}

/* *a += k b */
static wick_status add_scaled(wick_tensor **a, const wick_tensor *b, double k) {
    wick_tensor *kb;
    wick_status st = wick_binary_scalar(&kb, WICK_MUL, b, (wick_scalar){k, k == floor(k)}, 0);
    if (!st) st = chain_op(a, WICK_ADD, kb);
    wick_tensor_release(kb);
    return st;
}

/* The constants of cross-entropy's gradient (no graph): with row i's target
 * t, class weights w (1 without), smoothing e over C classes, zero for
 * ignored rows: A_i = (1 - e) w_t + (e / C) sum(w), [N, 1], and
 * B_ic = (1 - e) w_t [c == t] + (e / C) w_c, [N, C]. */
static wick_status ce_constants(const wk_node *node, wick_tensor **A, wick_tensor **B) {
    const wick_tensor *x = node->saved[0], *target = node->saved[1], *w = node->saved[2];
    double e = node->scalars[0];
    int64_t rows = x->sizes[0], classes = x->sizes[1], col[2] = {rows, 1};
    wick_options o = {x->dtype, x->storage->device};
    wick_tensor *valid = NULL, *t = NULL, *zero = NULL, *t0 = NULL, *t0c = NULL, *validf = NULL, *ones = NULL,
                *wt = NULL, *vw = NULL;
    double wsum = (double)classes;
    wick_status st = node->ints[CE_HAS_IGNORE]
                         ? wick_binary_scalar(&valid, WICK_NE, target, (wick_scalar){node->scalars[1], 1}, 0)
                         : wick_full(&valid, 1, &rows, 1, (wick_options){WICK_BOOL, o.device});
    if (!st) st = wick_binary_scalar(&t, WICK_SUB, target, (wick_scalar){1, 1}, 0); /* classes are 1-based */
    if (!st) st = wick_full(&zero, 0, NULL, 0, (wick_options){t->dtype, wick_cpu()});
    if (!st) st = wick_where(&t0, valid, t, zero);
    if (!st) st = wick_to(&validf, valid, o);
    if (!st) st = wick_reshape(&t0c, t0, 2, col);
    if (!st) st = wick_full(B, 2, x->sizes, 0, o);
    if (!st) st = wick_full(&ones, 2, col, 1, o);
    if (!st) st = wick_scatter_(*B, 1, t0c, ones); /* the one-hot targets */
    if (!st) st = w ? wick_index_select(&wt, w, 0, t0) : wick_reshape(&wt, validf, 1, &rows);
    if (!st && w) st = chain_op(&wt, WICK_MUL, validf);
    if (!st && w) {
        wick_tensor *ws = NULL;
        if (!(st = wick_reduce(&ws, NULL, WICK_SUM, w, -1, 0, 0))) st = wick_item_double(ws, &wsum);
        wick_tensor_release(ws);
    }
    if (!st) st = wick_reshape(A, wt, 2, col);
    if (!st) st = chain_op(B, WICK_MUL, *A); /* w_t [c == t] */
    if (!st) st = wick_binary_scalar(&vw, WICK_MUL, *A, (wick_scalar){1 - e, 0}, 0);
    if (!st) wick_tensor_release(*A), *A = vw, vw = NULL;
    if (!st) st = wick_binary_scalar(&vw, WICK_MUL, *B, (wick_scalar){1 - e, 0}, 0);
    if (!st) wick_tensor_release(*B), *B = vw, vw = NULL;
    if (!st && e != 0) { /* the smoothing's share, on valid rows */
        wick_tensor *v2 = NULL;
        if (!(st = wick_reshape(&v2, validf, 2, col))) st = add_scaled(A, v2, e / (double)classes * wsum);
        if (!st) st = w ? wick_binary(&vw, WICK_MUL, v2, w) : wick_expand(&vw, v2, 2, x->sizes);
        if (!st) st = add_scaled(B, vw, e / (double)classes);
        wick_tensor_release(v2);
    }
    wick_tensor *all[] = {valid, t, zero, t0, t0c, validf, ones, wt, vw};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wick_tensor_release(all[i]);
    return st;
}

/* The gradient of cross-entropy with recorded ops, for create_graph (MAML's
 * inner step, a penalty on a classifier's input gradient): gx = s (p A - B)
 * with p = softmax(x) and A, B of ce_constants; s = g over the mean's
 * denominator, g, or g per row (none). p and g carry the graph. */
static wick_status ce_backward_recorded(wk_node *node, wick_tensor *g, wick_tensor **grads) {
    const wick_tensor *x = node->saved[0], *lse = node->saved[3];
    int64_t rows = x->sizes[0], col[2] = {rows, 1};
    wick_tensor *A = NULL, *B = NULL, *r = NULL, *s = NULL, *den = NULL;
    wick_status st;
    WK_NO_GRAD(st = ce_constants(node, &A, &B));
    if (!st) st = wick_softmax(&r, x, 1);
    if (!st) st = chain_op(&r, WICK_MUL, A);
    if (!st) st = chain_op(&r, WICK_SUB, B);
    if (node->ints[CE_REDUCTION] == 1) { /* mean: g over the denominator lse[2 rows] */
        if (!st) st = wick_narrow(&den, (wick_tensor *)lse, 0, 2 * rows, 1);
        if (!st) st = wick_binary(&s, WICK_DIV, g, den);
    } else if (node->ints[CE_REDUCTION] == 0) { /* none: g_i per row */
        if (!st) st = wick_reshape(&s, g, 2, col);
    } else if (!st) {
        wick_tensor_retain(g);
        s = g;
    }
    if (!st) st = chain_op(&r, WICK_MUL, s);
    if (!st) grads[0] = r, r = NULL;
    wick_tensor *all[] = {A, B, r, s, den};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wick_tensor_release(all[i]);
    return st;
}

/* saved: logits, target (int64), weight or NULL, lse ([2 rows]: the maxima, then
 * the log-sums; + the mean's denominator);
 * ints: CE_REDUCTION, CE_HAS_IGNORE; scalars: smoothing, ignore_index. */
static wick_status ce_backward(wk_node *node, wick_tensor *g, wick_tensor **grads) {
    if (wk_grad_mode) return ce_backward_recorded(node, g, grads); /* create_graph */
    wick_tensor *x = node->saved[0], *target = node->saved[1], *w = node->saved[2], *lse = node->saved[3];
    int reduction = node->ints[CE_REDUCTION];
    wick_dtype cd = lse->dtype;
    int64_t rows = x->sizes[0];
    wick_tensor *gx = NULL, *s = NULL, *se = NULL, *sc = NULL, *xc = NULL, *tc = NULL, *wc = NULL;
    wick_status st;
    if ((st = wk_tensor_new(&gx, 2, x->sizes, cd, g->storage->device))) return st;
    if (wk_is_meta(g)) goto out;
    if ((st = wk_nn_as_compute(&s, g, cd))) goto done;
    if (reduction == 1) { /* g / denominator, after the maxima and log-sums */
        wick_tensor *den, *q;
        if ((st = wick_narrow(&den, lse, 0, 2 * rows, 1))) goto done;
        st = wick_binary(&q, WICK_DIV, s, den);
        wick_tensor_release(den);
        if (st) goto done;
        wick_tensor_release(s);
        s = q;
        if (s->ndim) { /* [1] -> [] (a non-NULL sizes pointer: wick_reshape copies 0 bytes from it) */
            const int64_t no_sizes[1] = {0};
            if ((st = wick_reshape(&q, s, 0, no_sizes))) goto done;
            wick_tensor_release(s);
            s = q;
        }
    }
    if ((st = wick_expand(&se, s, 1, &rows)) || (st = wick_contiguous(&sc, se)) || (st = wk_nn_as_compute(&xc, x, cd)) ||
        (st = wk_nn_as_compute(&tc, target, WICK_INT64)) || (w && (st = wk_nn_as_compute(&wc, w, cd))))
        goto done;
    const wick_backend *be = g->storage->backend;
    if (!be->cross_entropy_backward) {
        st = wk_nn_unsupported_on("cross_entropy backward", g);
        goto done;
    }
    wk_ce_args a = {.device = g->storage->device.index, .dtype = cd, .rows = rows, .classes = x->sizes[1],
                    .x = wk_data(xc), .weight = wc ? wk_data(wc) : NULL, .target = (const int64_t *)wk_data(tc),
                    .ignore_index = (int64_t)node->scalars[1], .has_ignore = node->ints[CE_HAS_IGNORE],
                    .smoothing = node->scalars[0], .lse = wk_data(lse), .scale = wk_data(sc), .gx = wk_data(gx)};
    if ((st = be->cross_entropy_backward(&a))) goto done;
out:
    grads[0] = gx, gx = NULL;
done:
    wick_tensor_release(gx);
    wick_tensor_release(s);
    wick_tensor_release(se);
    wick_tensor_release(sc);
    wick_tensor_release(xc);
    wick_tensor_release(tc);
    wick_tensor_release(wc);
    return st;
}

wick_status wick_cross_entropy(wick_tensor **out, const wick_tensor *logits, const wick_tensor *target,
                               const wick_tensor *weight, int has_ignore, int64_t ignore_index, double smoothing,
                               int reduction) {
    WK_AUTOCAST(WK_AC_FP32, 3,
                wick_cross_entropy(out, c[0], c[1], c[2], has_ignore, ignore_index, smoothing, reduction), logits,
                target, weight);
    wick_tensor *r = NULL, *lse = NULL;
    wick_status st;
    WK_NO_GRAD(st = ce_forward(&r, &lse, logits, target, weight, has_ignore, ignore_index, smoothing, reduction));
    if (st) return st;
    if (wk_wants_grad(1, &logits)) {
        wk_node *n;
        st = wk_record(r, "NllLossBackward", ce_backward, 0, 1, &logits, &n);
        if (!st) {
            n->twice = true; /* ce_backward_recorded */
            n->ints[CE_REDUCTION] = reduction;
            n->ints[CE_HAS_IGNORE] = has_ignore;
            n->scalars[0] = smoothing;
            n->scalars[1] = (double)ignore_index;
            if (!(st = wk_save(n, 0, logits, r)) && !(st = wk_save(n, 1, target, r)) &&
                !(st = weight ? wk_save(n, 2, weight, r) : WICK_OK))
                st = wk_save(n, 3, lse, r);
        }
    }
    wick_tensor_release(lse);
    return wk_publish(out, r, st);
}
