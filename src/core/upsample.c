/* 2-D upsampling (torch.nn.functional.interpolate's "nearest" and "bilinear"
 * modes on [N, C, H, W]): checks, shapes, compute dtypes and autograd here;
 * kernels in the backends (upsample2d, upsample2d_backward), with PyTorch's
 * index arithmetic (upsample.h). */
#include "nn_ops.h"

#define TRY WK_NN_TRY
#define OP "upsample2d"

enum { U_MODE, U_ALIGN, U_OH, U_OW, U_COUNT };

static wick_status up_check(const wick_tensor *x, int64_t oh, int64_t ow, int mode) {
    char s1[WK_SHAPE_BUF];
    if (mode != 0 && mode != 1) return wick_fail(WICK_ERR_ARGUMENT, OP ": unknown mode %d", mode);
    if (x->ndim != 4)
        return wick_fail(WICK_ERR_SHAPE, OP ": expected a 4-D input [N, C, H, W], but got input of size %s",
                         wk_shape_str(x->ndim, x->sizes, s1, sizeof s1));
    if (x->sizes[2] <= 0 || x->sizes[3] <= 0 || oh <= 0 || ow <= 0)
        return wick_fail(WICK_ERR_SHAPE,
                         OP ": Input and output sizes should be greater than 0, but got input (H: %lld, W: %lld) "
                            "output (H: %lld, W: %lld)",
                         (long long)x->sizes[2], (long long)x->sizes[3], (long long)oh, (long long)ow);
    if (!wick_dtype_is_floating(x->dtype))
        return wick_fail(WICK_ERR_DTYPE, OP ": expected a floating-point input, but got %s", wick_dtype_name(x->dtype));
    int64_t planes, n;
    if (__builtin_mul_overflow(x->sizes[0], x->sizes[1], &planes) || __builtin_mul_overflow(planes, oh, &n) ||
        __builtin_mul_overflow(n, ow, &n))
        return wick_fail(WICK_ERR_SHAPE, OP ": the output size overflows");
    return WICK_OK;
}

static wk_upsample_args up_args(const int64_t *in4, const int *p, const double *scales, wick_dtype cd, int device) {
    return (wk_upsample_args){.device = device, .dtype = cd, .planes = in4[0] * in4[1], .h = in4[2], .w = in4[3],
                              .oh = p[U_OH], .ow = p[U_OW], .mode = p[U_MODE], .align_corners = p[U_ALIGN],
                              .scale_h = scales[0], .scale_w = scales[1]};
}

static wick_status up_forward(wick_tensor **out, const wick_tensor *input, const int *p, const double *scales) {
    wick_dtype cd = wk_nn_compute_dtype(input->dtype);
    wick_device dev = input->storage->device;
    int64_t shape[4] = {input->sizes[0], input->sizes[1], p[U_OH], p[U_OW]};
    wick_tensor *r = NULL, *x = NULL;
    wick_status st = wk_tensor_new(&r, 4, shape, wk_is_meta(input) ? input->dtype : cd, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->upsample2d) {
        st = wk_nn_unsupported_on(OP, input);
        goto done;
    }
    if ((st = wk_nn_as_compute(&x, input, cd))) goto done;
    wk_upsample_args a = up_args(input->sizes, p, scales, cd, dev.index);
    if (!(st = be->upsample2d(&a, wk_data(r), wk_data(x)))) st = wk_nn_convert_to(&r, input->dtype);
done:
    wick_tensor_release(x);
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

/* The gradient is linear in g: under create_graph its node takes the incoming
 * gradient gg back through the forward (the backward's adjoint), with the
 * forward node's ints and scalars. */
static wick_status up_backward_backward(wk_node *m, wick_tensor *gg, wick_tensor **grads) {
    const int *p = m->ints;
    return wick_upsample2d(&grads[0], gg, p[U_OH], p[U_OW], p[U_MODE], p[U_ALIGN], m->scalars[0], m->scalars[1]);
}

/* gi, the gradient up_backward computed from g: recorded for create_graph (MAML's inner step) */
static wick_status up_record_backward(wick_tensor *gi, const wick_tensor *g, const wk_node *n) {
    if (!wk_wants_grad(1, &g)) return WICK_OK;
    wk_node *m;
    TRY(wk_record(gi, n->ints[U_MODE] ? "UpsampleBilinear2DBackwardBackward" : "UpsampleNearest2DBackwardBackward",
                  up_backward_backward, 0, 1, &g, &m));
    m->twice = true;
    memcpy(m->ints, n->ints, sizeof(int) * U_COUNT);
    memcpy(m->scalars, n->scalars, sizeof(double) * 2);
    return WICK_OK;
}

/* sizes: the input's shape; ints: U_*; scalars: scale_h, scale_w */
static wick_status up_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_device dev = g->storage->device;
    wick_dtype cd = wk_nn_compute_dtype(n->edges[0].dtype);
    wick_tensor *gi = NULL, *gc = NULL;
    wick_status st = wk_tensor_new(&gi, 4, n->sizes, cd, dev);
    if (st || wk_is_meta(g)) goto done;
    const wick_backend *be = g->storage->backend;
    if (!be->upsample2d_backward) {
        st = wk_nn_unsupported_on(OP " backward", g);
        goto done;
    }
    if ((st = wk_nn_as_compute(&gc, g, cd))) goto done;
    wk_upsample_args a = up_args(n->sizes, n->ints, n->scalars, cd, dev.index);
    st = be->upsample2d_backward(&a, wk_data(gi), wk_data(gc));
    if (!st) st = up_record_backward(gi, g, n); /* create_graph */
done:
    wick_tensor_release(gc);
    if (st) {
        wick_tensor_release(gi);
        return st;
    }
    grads[0] = gi;
    return WICK_OK;
}

wick_status wick_upsample2d(wick_tensor **out, const wick_tensor *input, int64_t out_h, int64_t out_w, int mode,
                            int align_corners, double scale_h, double scale_w) {
    TRY(wk_check_real(OP, 1, &input));
    TRY(up_check(input, out_h, out_w, mode));
    if (out_h > INT32_MAX || out_w > INT32_MAX) return wick_fail(WICK_ERR_SHAPE, OP ": output size beyond 2^31");
    int p[U_COUNT] = {mode, align_corners ? 1 : 0, (int)out_h, (int)out_w};
    double scales[2] = {scale_h > 0 ? scale_h : 0, scale_w > 0 ? scale_w : 0};
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = up_forward(&r, input, p, scales));
    if (st) return st;
    const wick_tensor *in[1] = {input};
    wk_node *n = NULL;
    wick_status rs = WICK_OK;
    if (wk_wants_grad(1, in) && !(rs = wk_record(r, mode ? "UpsampleBilinear2DBackward" : "UpsampleNearest2DBackward",
                                                 up_backward, 0, 1, in, &n))) {
        memcpy(n->ints, p, sizeof p);
        memcpy(n->scalars, scales, sizeof scales);
        n->twice = true; /* up_record_backward */
        n->ndim = 4;
        memcpy(n->sizes, input->sizes, sizeof(int64_t) * 4);
    }
    return wk_publish(out, r, rs);
}
