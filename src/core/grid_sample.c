/* 2-D grid sampling (torch.nn.functional.grid_sample's "bilinear" and
 * "nearest" modes on [N, C, H, W] with a grid [N, Ho, Wo, 2]): checks, shapes,
 * compute dtypes and autograd here; kernels in the backends (grid_sample2d,
 * grid_sample2d_backward), with the coordinate arithmetic of grid_sample.h.
 * Differentiable once in input and grid: the backward is a kernel, not
 * recorded ops (wick.nn.functional's grid_sample takes gradients of gradients
 * through its composed form, as PyTorch does). */
#include "grid_sample.h"

#include "nn_ops.h"

#define TRY WK_NN_TRY
#define OP "grid_sample"

enum { G_MODE, G_PADDING, G_ALIGN, G_COUNT };

static wick_status gs_check(const wick_tensor *input, const wick_tensor *grid, int mode, int padding) {
    char s1[WK_SHAPE_BUF], s2[WK_SHAPE_BUF];
    if (mode != WK_GRID_BILINEAR && mode != WK_GRID_NEAREST)
        return wick_fail(WICK_ERR_ARGUMENT, OP ": unknown mode %d (0 bilinear, 1 nearest)", mode);
    if (padding < WK_GRID_ZEROS || padding > WK_GRID_REFLECTION)
        return wick_fail(WICK_ERR_ARGUMENT, OP ": unknown padding mode %d (0 zeros, 1 border, 2 reflection)", padding);
    if (input->ndim != 4 || grid->ndim != 4 || grid->sizes[3] != 2 || grid->sizes[0] != input->sizes[0])
        return wick_fail(WICK_ERR_SHAPE, OP ": expected an input [N, C, H, W] and a grid [N, H_out, W_out, 2], got %s and %s",
                         wk_shape_str(input->ndim, input->sizes, s1, sizeof s1),
                         wk_shape_str(grid->ndim, grid->sizes, s2, sizeof s2));
    if (input->sizes[2] == 0 || input->sizes[3] == 0)
        return wick_fail(WICK_ERR_SHAPE, OP ": expected an input with non-empty spatial dims, got %s",
                         wk_shape_str(input->ndim, input->sizes, s1, sizeof s1));
    if (!wick_dtype_is_floating(input->dtype))
        return wick_fail(WICK_ERR_DTYPE, OP ": expected a floating-point input, got %s", wick_dtype_name(input->dtype));
    if (grid->dtype != input->dtype)
        return wick_fail(WICK_ERR_DTYPE, OP ": expected grid to have the input's dtype %s, got %s",
                         wick_dtype_name(input->dtype), wick_dtype_name(grid->dtype));
    int64_t planes, n;
    if (__builtin_mul_overflow(input->sizes[0], input->sizes[1], &planes) ||
        __builtin_mul_overflow(planes, grid->sizes[1], &n) || __builtin_mul_overflow(n, grid->sizes[2], &n))
        return wick_fail(WICK_ERR_SHAPE, OP ": the output size overflows");
    return WICK_OK;
}

static wk_grid_sample_args gs_args(const int64_t *in4, const int64_t *grid4, const int *p, wick_dtype cd, int device) {
    return (wk_grid_sample_args){.device = device, .dtype = cd, .n = in4[0], .c = in4[1], .h = in4[2], .w = in4[3],
                                 .oh = grid4[1], .ow = grid4[2], .mode = p[G_MODE], .padding = p[G_PADDING],
                                 .align_corners = p[G_ALIGN]};
}

static wick_status gs_forward(wick_tensor **out, const wick_tensor *input, const wick_tensor *grid, const int *p) {
    wick_dtype cd = wk_nn_compute_dtype(input->dtype);
    wick_device dev = input->storage->device;
    int64_t shape[4] = {input->sizes[0], input->sizes[1], grid->sizes[1], grid->sizes[2]};
    wick_tensor *r = NULL, *x = NULL, *gr = NULL;
    wick_status st = wk_tensor_new(&r, 4, shape, wk_is_meta(input) ? input->dtype : cd, dev);
    if (st || wk_is_meta(r)) goto done;
    const wick_backend *be = r->storage->backend;
    if (!be->grid_sample2d) {
        st = wk_nn_unsupported_on(OP, input);
        goto done;
    }
    if ((st = wk_nn_as_compute(&x, input, cd)) || (st = wk_nn_as_compute(&gr, grid, cd))) goto done;
    wk_grid_sample_args a = gs_args(input->sizes, grid->sizes, p, cd, dev.index);
    if (!(st = be->grid_sample2d(&a, wk_data(r), wk_data(x), wk_data(gr)))) st = wk_nn_convert_to(&r, input->dtype);
done:
    wick_tensor_release(x);
    wick_tensor_release(gr);
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

static wick_status gs_backward_kernel(wick_tensor **grad_input, wick_tensor **grad_grid, const wick_tensor *g,
                                      const wick_tensor *input, const wick_tensor *grid, const int *p) {
    wick_device dev = g->storage->device;
    wick_dtype cd = wk_nn_compute_dtype(input->dtype);
    wick_tensor *gi = NULL, *gg = NULL, *gc = NULL, *x = NULL, *gr = NULL;
    wick_status st = WICK_OK;
    if (grad_input && (st = wk_tensor_new(&gi, 4, input->sizes, cd, dev))) goto done;
    if (grad_grid && (st = wk_tensor_new(&gg, 4, grid->sizes, cd, dev))) goto done;
    if (wk_is_meta(g)) goto done;
    const wick_backend *be = g->storage->backend;
    if (!be->grid_sample2d_backward) {
        st = wk_nn_unsupported_on(OP " backward", g);
        goto done;
    }
    if ((st = wk_nn_as_compute(&gc, g, cd)) || (st = wk_nn_as_compute(&x, input, cd)) ||
        (st = wk_nn_as_compute(&gr, grid, cd)))
        goto done;
    wk_grid_sample_args a = gs_args(input->sizes, grid->sizes, p, cd, dev.index);
    st = be->grid_sample2d_backward(&a, wk_data(gc), wk_data(x), wk_data(gr), gi ? wk_data(gi) : NULL,
                                    gg ? wk_data(gg) : NULL);
    if (!st && gi) st = wk_nn_convert_to(&gi, input->dtype);
    if (!st && gg) st = wk_nn_convert_to(&gg, grid->dtype);
done:
    wick_tensor_release(gc);
    wick_tensor_release(x);
    wick_tensor_release(gr);
    if (st) {
        wick_tensor_release(gi);
        wick_tensor_release(gg);
        return st;
    }
    if (grad_input) *grad_input = gi;
    if (grad_grid) *grad_grid = gg;
    return WICK_OK;
}

/* saved: input, grid; ints: G_*. The gradients of the wanted inputs. */
static wick_status gs_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    return gs_backward_kernel(wk_nn_wants(n, 0) ? &grads[0] : NULL, wk_nn_wants(n, 1) ? &grads[1] : NULL, g,
                              n->saved[0], n->saved[1], n->ints);
}

wick_status wick_grid_sample2d_backward(wick_tensor **grad_input, wick_tensor **grad_grid, const wick_tensor *grad_out,
                                        const wick_tensor *input, const wick_tensor *grid, int mode, int padding_mode,
                                        int align_corners) {
    const wick_tensor *in[3] = {grad_out, input, grid};
    static const char *const names[3] = {"grad_output", "input", "grid"};
    char s1[WK_SHAPE_BUF];
    TRY(wk_check_same_device(OP " backward", 3, in, names));
    TRY(gs_check(input, grid, mode, padding_mode));
    int64_t shape[4] = {input->sizes[0], input->sizes[1], grid->sizes[1], grid->sizes[2]};
    if (grad_out->ndim != 4 || memcmp(grad_out->sizes, shape, sizeof shape) || grad_out->dtype != input->dtype)
        return wick_fail(WICK_ERR_SHAPE, OP " backward: expected grad_output of the output's shape and dtype, got %s %s",
                         wk_shape_str(grad_out->ndim, grad_out->sizes, s1, sizeof s1), wick_dtype_name(grad_out->dtype));
    int p[G_COUNT] = {mode, padding_mode, align_corners ? 1 : 0};
    wick_status st;
    WK_NO_GRAD(st = gs_backward_kernel(grad_input, grad_grid, grad_out, input, grid, p));
    return st;
}

wick_status wick_grid_sample2d(wick_tensor **out, const wick_tensor *input, const wick_tensor *grid, int mode,
                               int padding_mode, int align_corners) {
    const wick_tensor *in[2] = {input, grid};
    static const char *const names[2] = {"input", "grid"};
    TRY(wk_check_same_device(OP, 2, in, names));
    TRY(gs_check(input, grid, mode, padding_mode));
    int p[G_COUNT] = {mode, padding_mode, align_corners ? 1 : 0};
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = gs_forward(&r, input, grid, p));
    if (st) return st;
    wk_node *n = NULL;
    wick_status rs = WICK_OK;
    if (wk_wants_grad(2, in) &&
        !(rs = wk_record(r, "GridSampler2DBackward", gs_backward, 0, 2, in, &n))) {
        memcpy(n->ints, p, sizeof p);
        if (!(rs = wk_save(n, 0, input, r))) rs = wk_save(n, 1, grid, r);
    }
    return wk_publish(out, r, rs);
}
