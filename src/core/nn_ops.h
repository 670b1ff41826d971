/* What the neural-network ops of src/core (nn_ops.c, conv_transpose.c,
 * upsample.c) share: kernels compute in float32 or float64 on contiguous data,
 * other floating dtypes are converted around them. */
#ifndef WICK_NN_OPS_H
#define WICK_NN_OPS_H

#include "autograd.h"

#define WK_NN_TRY(expr)                                                                           \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

/* whether input i of node n wants a gradient */
static inline bool wk_nn_wants(const wk_node *n, int i) { return n->edges[i].node || n->edges[i].leaf; }

/* float64 stays float64; every other floating dtype computes in float32 */
static inline wick_dtype wk_nn_compute_dtype(wick_dtype d) { return d == WICK_FLOAT64 ? WICK_FLOAT64 : WICK_FLOAT32; }

/* t as a contiguous tensor of dtype cd on its own device (t itself, retained, when it is one). */
wick_status wk_nn_as_compute(wick_tensor **out, const wick_tensor *t, wick_dtype cd);
/* *t converted to dtype (in place of the reference) */
wick_status wk_nn_convert_to(wick_tensor **t, wick_dtype dtype);
/* "op: not implemented on <device>" */
wick_status wk_nn_unsupported_on(const char *op, const wick_tensor *t);
/* Records a convolution (conv2d, conv_transpose2d) for backward: its node
 * keeps the np int parameters p and input's shape, and saves the input (when
 * the weight needs a gradient) and the weight. */
wick_status wk_nn_record_conv(wick_tensor *out, wk_backward_fn fn, const wick_tensor *input, const wick_tensor *weight,
                              const wick_tensor *bias, const int *p, int np);

/* The weight gradient of a convolution written with recorded ops (its
 * input x4 [N, C, H, W], the gradient of its output g4 [N, O, OH, OW], sdp =
 * {stride h, w, padding h, w, dilation h, w}): conv2d's and
 * conv_transpose2d's backward under create_graph. */
wick_status wk_nn_conv2d_weight_grad(wick_tensor **out, wick_tensor *x4, wick_tensor *g4, const int *sdp,
                                     int groups, int64_t kh, int64_t kw);
/* g [N, C, H, W] summed over N, H and W with recorded ops (a bias gradient) */
wick_status wk_nn_sum_nhw(wick_tensor **out, const wick_tensor *g);

#endif
