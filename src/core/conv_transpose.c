/* 2-D transposed convolution (torch.nn.functional.conv_transpose2d): the
 * gradient of a convolution with respect to its input, so it runs on the
 * convolution kernels of the backends (conv2d_forward, conv2d_backward) with
 * the roles swapped. With x [N, Cin, H, W] and weight [Cin, Cout / groups, kH,
 * kW], the convolution whose input-gradient this is maps [N, Cout, oH, oW] to
 * [N, Cin, H, W] with the same weight, stride, padding and dilation:
 *   forward      y  = conv2d's grad_input (x as the grad output)
 *   grad of x       = conv2d forward of the grad output
 *   grad of W       = conv2d's grad_weight (x as the grad output, g as the input)
 *   grad of bias    = the grad output summed over images and positions.
 * oH = (H - 1) sH - 2 pH + dH (kH - 1) + output_padding_h + 1, and likewise oW;
 * the kernels are told H and W as the convolution's output size, so an
 * output_padding that a convolution would not give back (allowed when below the
 * dilation) needs no special case. */
#include "autocast.h"
#include "nn_ops.h"

#define TRY WK_NN_TRY
#define OP "conv_transpose2d"

enum { T_SH, T_SW, T_PH, T_PW, T_OPH, T_OPW, T_DH, T_DW, T_GROUPS, T_UNBATCHED, T_COUNT };

static wick_status ct_check_params(const int *p) {
    if (p[T_SH] <= 0 || p[T_SW] <= 0) return wick_fail(WICK_ERR_ARGUMENT, OP ": non-positive stride is not supported");
    if (p[T_PH] < 0 || p[T_PW] < 0) return wick_fail(WICK_ERR_ARGUMENT, OP ": negative padding is not supported");
    if (p[T_OPH] < 0 || p[T_OPW] < 0)
        return wick_fail(WICK_ERR_ARGUMENT, OP ": negative output_padding is not supported");
    if (p[T_DH] <= 0 || p[T_DW] <= 0)
        return wick_fail(WICK_ERR_ARGUMENT, OP ": dilation should be greater than zero, but got [%d, %d]", p[T_DH],
                         p[T_DW]);
    if (p[T_GROUPS] <= 0) return wick_fail(WICK_ERR_ARGUMENT, OP ": non-positive groups is not supported");
    if ((p[T_OPH] >= p[T_SH] && p[T_OPH] >= p[T_DH]) || (p[T_OPW] >= p[T_SW] && p[T_OPW] >= p[T_DW]))
        return wick_fail(WICK_ERR_ARGUMENT,
                         OP ": output padding must be smaller than either stride or dilation, but got "
                            "output_padding_height: %d output_padding_width: %d stride_height: %d stride_width: %d "
                            "dilation_height: %d dilation_width: %d",
                         p[T_OPH], p[T_OPW], p[T_SH], p[T_SW], p[T_DH], p[T_DW]);
    return WICK_OK;
}

static wick_status ct_check_shapes(const wick_tensor *input, const wick_tensor *weight, const wick_tensor *bias,
                                   int groups) {
    char s1[WK_SHAPE_BUF], s2[WK_SHAPE_BUF];
    if (input->ndim != 3 && input->ndim != 4)
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of "
                            "size: %s",
                         wk_shape_str(input->ndim, input->sizes, s1, sizeof s1));
    if (weight->ndim != 4)
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": expected a 4D weight [in_channels, out_channels / groups, kH, kW], but got weight of "
                            "size %s",
                         wk_shape_str(weight->ndim, weight->sizes, s1, sizeof s1));
    const int64_t *ws = weight->sizes, c_in = input->sizes[input->ndim - 3];
    if (ws[2] <= 0 || ws[3] <= 0)
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": kernel size should be greater than zero, but got kernel_height: %lld kernel_width: %lld",
                         (long long)ws[2], (long long)ws[3]);
    if (ws[0] % groups)
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": Given groups=%d, expected weight to be divisible by %d at dimension 1, but got weight "
                            "of size %s instead",
                         groups, groups, wk_shape_str(4, ws, s1, sizeof s1));
    if (c_in != ws[0])
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": Given transposed=1, weight of size %s, expected input%s to have %lld channels, but got "
                            "%lld channels instead",
                         wk_shape_str(4, ws, s1, sizeof s1), wk_shape_str(input->ndim, input->sizes, s2, sizeof s2),
                         (long long)ws[0], (long long)c_in);
    int64_t c_out;
    if (__builtin_mul_overflow(ws[1], (int64_t)groups, &c_out))
        return wick_fail(WICK_ERR_SHAPE, OP ": out_channels overflow");
    if (bias && (bias->ndim != 1 || bias->sizes[0] != c_out))
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": Given transposed=1, weight of size %s, expected bias to be 1-dimensional with %lld "
                            "elements, but got bias of size %s instead",
                         wk_shape_str(4, ws, s1, sizeof s1), (long long)c_out,
                         wk_shape_str(bias->ndim, bias->sizes, s2, sizeof s2));
    if (!wick_dtype_is_floating(input->dtype))
        return wick_fail(WICK_ERR_DTYPE, OP ": expected a floating-point input, but got %s",
                         wick_dtype_name(input->dtype));
    if (weight->dtype != input->dtype || (bias && bias->dtype != input->dtype))
        return wick_fail(WICK_ERR_DTYPE, OP ": Input type (%s) and %s type (%s) should be the same",
                         wick_dtype_name(input->dtype), weight->dtype != input->dtype ? "weight" : "bias",
                         wick_dtype_name(weight->dtype != input->dtype ? weight->dtype : bias->dtype));
    return WICK_OK;
}

/* (in - 1) s - 2 p + d (k - 1) + op + 1, or -1 when it does not fit */
static int64_t ct_out_size(int64_t in, int64_t k, int s, int p, int op, int d) {
    int64_t a, b, r;
    if (__builtin_mul_overflow(in - 1, (int64_t)s, &a) || __builtin_mul_overflow((int64_t)d, k - 1, &b) ||
        __builtin_add_overflow(a, b, &r) || __builtin_add_overflow(r, (int64_t)op + 1 - 2 * (int64_t)p, &r))
        return -1;
    return r;
}

/* The convolution whose input-gradient the transposed convolution is: its
 * input is the transposed output (Cout, oH, oW), its output the transposed
 * input (Cin, H, W). n: images; x4: the transposed input as [N, Cin, H, W]. */
static wick_status ct_args(wk_conv2d_args *a, const int64_t *x4, const int64_t *ws, const int *p) {
    *a = (wk_conv2d_args){.n = x4[0], .c = ws[1] * p[T_GROUPS], .o = x4[1], .kh = ws[2], .kw = ws[3],
                          .oh = x4[2], .ow = x4[3], .sh = p[T_SH], .sw = p[T_SW], .ph = p[T_PH], .pw = p[T_PW],
                          .dh = p[T_DH], .dw = p[T_DW], .groups = p[T_GROUPS]};
    a->h = ct_out_size(x4[2], ws[2], p[T_SH], p[T_PH], p[T_OPH], p[T_DH]);
    a->w = ct_out_size(x4[3], ws[3], p[T_SW], p[T_PW], p[T_OPW], p[T_DW]);
    if (a->h <= 0 || a->w <= 0)
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": Given input size per channel: (%lld x %lld). Calculated output size per channel: (%lld "
                            "x %lld). Output size is too small",
                         (long long)x4[2], (long long)x4[3], (long long)a->h, (long long)a->w);
    return WICK_OK;
}

static void ct_input4(const wick_tensor *input, int64_t *x4) {
    bool unbatched = input->ndim == 3;
    x4[0] = unbatched ? 1 : input->sizes[0];
    memcpy(x4 + 1, input->sizes + (unbatched ? 0 : 1), sizeof(int64_t) * 3);
}

/* out (in the compute dtype, [N, Cout, oH, oW]) += bias per channel */
static wick_status ct_add_bias(wick_tensor *out, const wick_tensor *bias) {
    int64_t shape[3] = {bias->sizes[0], 1, 1};
    wick_tensor *b = NULL, *v = NULL;
    wick_status st = wk_nn_as_compute(&b, bias, out->dtype);
    if (!st && !(st = wick_view(&v, b, 3, shape))) st = wick_binary_(WICK_ADD, out, v);
    wick_tensor_release(v);
    wick_tensor_release(b);
    return st;
}

static wick_status ct_forward(wick_tensor **out, const wick_tensor *input, const wick_tensor *weight,
                              const wick_tensor *bias, const int *p) {
    const wick_tensor *ts[3] = {input, weight, bias};
    const char *names[3] = {"input", "weight", "bias"};
    TRY(wk_check_same_device(OP, bias ? 3 : 2, ts, names));
    TRY(ct_check_params(p));
    TRY(ct_check_shapes(input, weight, bias, p[T_GROUPS]));
    int64_t x4[4];
    ct_input4(input, x4);
    wk_conv2d_args a;
    TRY(ct_args(&a, x4, weight->sizes, p));
    bool unbatched = input->ndim == 3;
    int64_t shape4[4] = {a.n, a.c, a.h, a.w};
    wick_device dev = input->storage->device;
    wick_dtype cd = wk_nn_compute_dtype(input->dtype);
    wick_tensor *r = NULL, *x = NULL, *w = NULL;
    wick_status st = wk_tensor_new(&r, 4 - unbatched, shape4 + unbatched, wk_is_meta(input) ? input->dtype : cd, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->conv2d_backward) {
        st = wk_nn_unsupported_on(OP, input);
        goto done;
    }
    if ((st = wk_nn_as_compute(&x, input, cd)) || (st = wk_nn_as_compute(&w, weight, cd))) goto done;
    a.dtype = cd;
    a.device = dev.index;
    if ((st = be->conv2d_backward(&a, wk_data(x), NULL, wk_data(w), wk_data(r), NULL, NULL))) goto done;
    if (bias && (st = ct_add_bias(r, bias))) goto done;
    st = wk_nn_convert_to(&r, input->dtype);
done:
    wick_tensor_release(x);
    wick_tensor_release(w);
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

/* grad of the bias: g [N, Cout, oH, oW] (compute dtype) summed over dims 0, 2, 3 */
static wick_status ct_bias_grad(wick_tensor **out, wick_tensor *g, const wk_conv2d_args *a) {
    int64_t shape[3] = {a->n, a->c, a->h * a->w};
    wick_tensor *v = NULL, *s = NULL;
    wick_status st = wick_view(&v, g, 3, shape);
    if (!st && !(st = wick_reduce(&s, NULL, WICK_SUM, v, 2, 0, 0))) st = wick_reduce(out, NULL, WICK_SUM, s, 0, 0, 0);
    wick_tensor_release(v);
    wick_tensor_release(s);
    return st;
}

/* The backward with recorded ops, for create_graph: the input's gradient is
 * the convolution forward of g, the weight's that convolution's weight
 * gradient with g as its input and x as its output's gradient, the bias's g
 * summed. Each is differentiable again (conv2d's own recorded backward). */
static wick_status ct_backward_recorded(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    const int *p = n->ints;
    wick_tensor *w = n->saved[1], *x = n->saved[0], *g4 = NULL, *x4 = NULL;
    wick_status st = WICK_OK;
    if (wk_nn_wants(n, 0))
        TRY(wick_conv2d(&grads[0], g, w, NULL, p[T_SH], p[T_SW], p[T_PH], p[T_PW], p[T_DH], p[T_DW], p[T_GROUPS]));
    if (p[T_UNBATCHED]) st = wick_unsqueeze(&g4, g, 0);
    else wick_tensor_retain(g), g4 = g;
    if (!st && wk_nn_wants(n, 1)) {
        const int sdp[6] = {p[T_SH], p[T_SW], p[T_PH], p[T_PW], p[T_DH], p[T_DW]};
        if (p[T_UNBATCHED]) st = wick_unsqueeze(&x4, x, 0);
        else wick_tensor_retain(x), x4 = x;
        if (!st) st = wk_nn_conv2d_weight_grad(&grads[1], g4, x4, sdp, p[T_GROUPS], w->sizes[2], w->sizes[3]);
    }
    if (!st && n->n_inputs > 2 && wk_nn_wants(n, 2)) st = wk_nn_sum_nhw(&grads[2], g4);
    wick_tensor_release(g4);
    wick_tensor_release(x4);
    return st;
}

/* saved[0]: the input (when the weight needs a gradient), saved[1]: the weight;
 * sizes: the input's shape; ints: the parameters (T_*). */
static wick_status ct_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    if (wk_grad_mode) return ct_backward_recorded(n, g, grads); /* create_graph */
    const int *p = n->ints;
    bool need_in = wk_nn_wants(n, 0), need_w = wk_nn_wants(n, 1), need_b = n->n_inputs > 2 && wk_nn_wants(n, 2);
    wick_tensor *w_orig = n->saved[1], *x_orig = n->saved[0];
    wick_device dev = g->storage->device;
    wick_dtype cd = wk_nn_compute_dtype(w_orig->dtype);
    int64_t x4[4];
    if (p[T_UNBATCHED]) x4[0] = 1, memcpy(x4 + 1, n->sizes, sizeof(int64_t) * 3);
    else memcpy(x4, n->sizes, sizeof(int64_t) * 4);
    wk_conv2d_args a;
    TRY(ct_args(&a, x4, w_orig->sizes, p));
    a.dtype = cd, a.device = dev.index;
    wick_tensor *gi = NULL, *gw = NULL, *gb = NULL, *gc = NULL, *x = NULL, *w = NULL;
    wick_status st = WICK_OK;
    if ((need_in && (st = wk_tensor_new(&gi, n->ndim, n->sizes, cd, dev))) ||
        (need_w && (st = wk_tensor_new(&gw, 4, w_orig->sizes, cd, dev))))
        goto done;
    if (!wk_is_meta(g)) {
        const wick_backend *be = g->storage->backend;
        if (!be->conv2d_forward || !be->conv2d_backward) {
            st = wk_nn_unsupported_on(OP " backward", g);
            goto done;
        }
        if ((st = wk_nn_as_compute(&gc, g, cd)) || (need_in && (st = wk_nn_as_compute(&w, w_orig, cd))) ||
            (need_w && (st = wk_nn_as_compute(&x, x_orig, cd))))
            goto done;
        if (gi && (st = be->conv2d_forward(&a, wk_data(gi), wk_data(gc), wk_data(w), NULL))) goto done;
        if (gw && (st = be->conv2d_backward(&a, wk_data(x), wk_data(gc), NULL, NULL, wk_data(gw), NULL))) goto done;
        if (need_b && (st = ct_bias_grad(&gb, gc, &a))) goto done;
    } else if (need_b) {
        st = wk_tensor_new(&gb, 1, &a.c, cd, dev);
        if (st) goto done;
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

wick_status wick_conv_transpose2d(wick_tensor **out, const wick_tensor *input, const wick_tensor *weight,
                                  const wick_tensor *bias, const int stride[2], const int padding[2],
                                  const int output_padding[2], const int dilation[2], int groups) {
    WK_AUTOCAST(WK_AC_LOWER, 3,
                wick_conv_transpose2d(out, c[0], c[1], c[2], stride, padding, output_padding, dilation, groups), input,
                weight, bias);
    int p[T_COUNT] = {stride[0], stride[1], padding[0], padding[1], output_padding[0], output_padding[1],
                      dilation[0], dilation[1], groups, input->ndim == 3};
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = ct_forward(&r, input, weight, bias, p));
    if (st) return st;
    const wick_tensor *in[3] = {input, weight, bias};
    return wk_publish(out, r,
                      wk_wants_grad(3, in) ? wk_nn_record_conv(r, ct_backward, input, weight, bias, p, T_COUNT) : WICK_OK);
}
