/* Matrix products: shape and dtype checks, then the backend's gemm. Views that
 * are transposes of contiguous matrices are passed to the backend as transposes,
 * never copied here (the CPU backend untransposes a right operand itself where
 * BLIS is slower on it: cpu_gemm.c). */
#include "autocast.h"
#include "autograd.h"

#include <math.h>
#include <stdio.h>

bool wk_gemm_layout(const wick_tensor *t, int *trans, int64_t *ld) {
    int64_t r = t->sizes[0], c = t->sizes[1], s0 = t->strides[0], s1 = t->strides[1];
    if ((s1 == 1 || c == 1) && s0 >= (c > 1 ? c : 1)) return *trans = 0, *ld = s0 > 0 ? s0 : 1, true;
    if ((s0 == 1 || r == 1) && s1 >= (r > 1 ? r : 1)) return *trans = 1, *ld = s1 > 0 ? s1 : 1, true;
    return false;
}

static wick_status check_matmul_dtypes(const char *op, const wick_tensor *a, const wick_tensor *b) {
    if (a->dtype != b->dtype)
        return wick_fail(WICK_ERR_DTYPE, "%s: expected both operands to have the same dtype, but got %s and %s", op,
                         wick_dtype_name(a->dtype), wick_dtype_name(b->dtype));
    if (a->dtype == WICK_BOOL) return wick_fail(WICK_ERR_DTYPE, "%s: not implemented for bool tensors", op);
    return WICK_OK;
}

static wick_status check_2d(const char *op, const char *arg, const wick_tensor *t) {
    if (t->ndim != 2)
        return wick_fail(WICK_ERR_SHAPE, "%s: %s must be a matrix (2-D), got a %d-D tensor", op, arg, t->ndim);
    return WICK_OK;
}

/* c (contiguous, m x n) = alpha * a @ b + beta * c for 2-D views a and b. */
static wick_status gemm_2d(wick_tensor *c, const wick_tensor *a, const wick_tensor *b, double alpha, double beta) {
    const wick_tensor *ops[2] = {a, b};
    wick_tensor *tmp[2] = {NULL, NULL};
    int trans[2];
    int64_t ld[2];
    wick_status st = WICK_OK;
    for (int i = 0; i < 2 && !st; i++) {
        if (wk_gemm_layout(ops[i], &trans[i], &ld[i])) continue;
        if (!(st = wick_clone(&tmp[i], ops[i]))) {
            ops[i] = tmp[i];
            wk_gemm_layout(ops[i], &trans[i], &ld[i]);
        }
    }
    if (!st) {
        wk_gemm_args g = {.device = c->storage->device.index, .dtype = c->dtype, .trans_a = trans[0], .trans_b = trans[1],
                          .m = a->sizes[0], .n = b->sizes[1], .k = a->sizes[1],
                          .a = wk_data(ops[0]), .lda = ld[0], .b = wk_data(ops[1]), .ldb = ld[1],
                          .c = wk_data(c), .ldc = c->sizes[1] > 0 ? c->sizes[1] : 1,
                          .alpha = alpha, .beta = beta};
        st = c->storage->backend->gemm(&g);
    }
    wick_tensor_release(tmp[0]);
    wick_tensor_release(tmp[1]);
    return st;
}

static wick_status mm_shapes(const char *op, const wick_tensor *a, const wick_tensor *b) {
    if (a->sizes[a->ndim - 1] != b->sizes[b->ndim - 2])
        return wick_fail(WICK_ERR_SHAPE, "%s: mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)", op,
                         (long long)a->sizes[a->ndim - 2], (long long)a->sizes[a->ndim - 1],
                         (long long)b->sizes[b->ndim - 2], (long long)b->sizes[b->ndim - 1]);
    return WICK_OK;
}

static wick_status addmm_forward(wick_tensor **out, const wick_tensor *input, const wick_tensor *m1,
                                 const wick_tensor *m2, double beta, double alpha) {
    const wick_tensor *ts[3] = {input, m1, m2};
    const char *names[3] = {"self", "mat1", "mat2"};
    const char *op = input ? "addmm" : "mm";
    wick_status st = wk_check_same_device(op, input ? 3 : 2, input ? ts : ts + 1, input ? names : names + 1);
    if (st || (st = check_2d(op, "mat1", m1)) || (st = check_2d(op, "mat2", m2)) ||
        (st = check_matmul_dtypes(op, m1, m2)) || (st = mm_shapes(op, m1, m2)))
        return st;
    if (wk_is_integral(m1->dtype) && !(alpha == floor(alpha) && beta == floor(beta) && fabs(alpha) < 9.2e18 &&
                                       fabs(beta) < 9.2e18))
        return wick_fail(WICK_ERR_ARGUMENT, "%s: for integral input tensors, alpha and beta must be integers, got %g and %g",
                         op, alpha, beta);
    if (input && input->dtype != m1->dtype)
        return wick_fail(WICK_ERR_DTYPE, "addmm: expected self and mat1 to have the same dtype, but got %s and %s",
                         wick_dtype_name(input->dtype), wick_dtype_name(m1->dtype));
    int64_t shape[2] = {m1->sizes[0], m2->sizes[1]};
    wick_tensor *c;
    if ((st = wk_tensor_new(&c, 2, shape, m1->dtype, m1->storage->device))) return st;
    if (input) { /* c = broadcast input, then gemm accumulates into it */
        int n;
        int64_t bshape[WICK_MAX_DIMS];
        if ((st = wk_broadcast_shapes(op, input->ndim, input->sizes, 2, shape, &n, bshape))) goto fail;
        if (n != 2 || bshape[0] != shape[0] || bshape[1] != shape[1]) {
            char x[WK_SHAPE_BUF], y[WK_SHAPE_BUF];
            st = wick_fail(WICK_ERR_SHAPE, "addmm: size mismatch: self %s cannot be broadcast to the product %s",
                           wk_shape_str(input->ndim, input->sizes, x, sizeof x), wk_shape_str(2, shape, y, sizeof y));
            goto fail;
        }
    }
    if (!wk_is_meta(c)) {
        if (input && beta != 0 && (st = wick_copy_(c, input))) goto fail;
        if ((st = gemm_2d(c, m1, m2, alpha, input ? beta : 0))) goto fail;
    }
    *out = c;
    return WICK_OK;
fail:
    wick_tensor_release(c);
    return st;
}

wick_status wick_addmm(wick_tensor **out, const wick_tensor *input, const wick_tensor *m1, const wick_tensor *m2,
                       double beta, double alpha) {
    WK_AUTOCAST(WK_AC_LOWER, 3, wick_addmm(out, c[0], c[1], c[2], beta, alpha), input, m1, m2);
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = addmm_forward(&r, input, m1, m2, beta, alpha));
    if (st) return st;
    const wick_tensor *in[3] = {input, m1, m2};
    return wk_publish(out, r, wk_wants_grad(3, in) ? wk_record_addmm(r, input, m1, m2, beta, alpha) : WICK_OK);
}

wick_status wick_linear(wick_tensor **out, const wick_tensor *x, const wick_tensor *weight, const wick_tensor *bias) {
    WK_AUTOCAST(WK_AC_LOWER, 3, wick_linear(out, c[0], c[1], c[2]), x, weight, bias);
    if (weight->ndim != 2)
        return wick_fail(WICK_ERR_SHAPE, "linear: weight must be 2-D [out, in], got %d-D", weight->ndim);
    if (wick_dtype_is_complex(x->dtype) || wick_dtype_is_complex(weight->dtype) || (bias && wick_dtype_is_complex(bias->dtype)))
        return wk_complex_linear(out, x, weight, bias); /* complex.c */
    wick_tensor *wt = NULL, *r = NULL, *x2 = NULL, *r2 = NULL;
    wick_status st;
    if (x->ndim > 2) { /* [..., in]: the batch dims folded into rows, one product, unfolded (one tensor, no view left) */
        int64_t in = x->sizes[x->ndim - 1], rows2[2] = {in ? wk_numel(x->ndim, x->sizes) / in : 0, in}, shape[WICK_MAX_DIMS];
        memcpy(shape, x->sizes, sizeof(int64_t) * x->ndim);
        shape[x->ndim - 1] = weight->sizes[0];
        WK_NO_GRAD(st = in ? wick_reshape(&x2, (wick_tensor *)x, 2, rows2)
                           : wick_fail(WICK_ERR_SHAPE, "linear: an input of 0 features in more than 2 dims is not supported");
                   if (!st) st = wick_transpose(&wt, (wick_tensor *)weight, 0, 1);
                   if (!st) st = addmm_forward(&r2, bias, x2, wt, bias ? 1 : 0, 1);
                   if (!st) st = wick_reshape(&r, r2, x->ndim, shape));
        wick_tensor_release(x2);
        wick_tensor_release(r2);
    } else {
        WK_NO_GRAD(st = wick_transpose(&wt, (wick_tensor *)weight, 0, 1);
                   if (!st) st = addmm_forward(&r, bias, x, wt, bias ? 1 : 0, 1));
    }
    wick_tensor_release(wt);
    if (st) return st;
    const wick_tensor *in[3] = {x, weight, bias};
    return wk_publish(out, r, wk_wants_grad(3, in) ? wk_record_linear(r, x, weight, bias) : WICK_OK);
}

wick_status wick_mse_loss(wick_tensor **out, const wick_tensor *input, const wick_tensor *target, int reduction) {
    WK_AUTOCAST(WK_AC_FP32, 2, wick_mse_loss(out, c[0], c[1], reduction), input, target);
    if (reduction < 0 || reduction > 2) return wick_fail(WICK_ERR_ARGUMENT, "mse_loss: invalid reduction %d", reduction);
    const wick_tensor *ins[2] = {input, target};
    wick_status cst = wk_check_real("mse_loss", 2, ins);
    if (cst) return cst;
    wick_tensor *d = NULL, *sq = NULL, *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = wick_binary(&d, WICK_SUB, input, target);
               if (!st) st = wick_binary(&sq, WICK_MUL, d, d);
               if (!st) {
                   if (reduction == 0) st = (wick_tensor_retain(sq), r = sq, WICK_OK);
                   else st = wick_reduce(&r, NULL, reduction == 1 ? WICK_MEAN : WICK_SUM, sq, -1, 0, 0);
               });
    wick_tensor_release(sq);
    if (st) {
        wick_tensor_release(d);
        return st;
    }
    const wick_tensor *in[2] = {input, target};
    st = wk_wants_grad(2, in) ? wk_record_mse(r, input, target, d, reduction) : WICK_OK;
    wick_tensor_release(d);
    return wk_publish(out, r, st);
}

wick_status wick_mm(wick_tensor **out, const wick_tensor *a, const wick_tensor *b) {
    if (wick_dtype_is_complex(a->dtype) || wick_dtype_is_complex(b->dtype)) return wk_complex_product(out, wick_mm, a, b);
    return wick_addmm(out, NULL, a, b, 0, 1);
}

static wick_status bmm_forward(wick_tensor **out, const wick_tensor *a, const wick_tensor *b) {
    const wick_tensor *ts[2] = {a, b};
    const char *names[2] = {"input", "mat2"};
    wick_status st = wk_check_same_device("bmm", 2, ts, names);
    if (st) return st;
    if (a->ndim != 3 || b->ndim != 3)
        return wick_fail(WICK_ERR_SHAPE, "bmm: expected 3-D tensors, got %d-D and %d-D", a->ndim, b->ndim);
    if ((st = check_matmul_dtypes("bmm", a, b)) || (st = mm_shapes("bmm", a, b))) return st;
    if (a->sizes[0] != b->sizes[0])
        return wick_fail(WICK_ERR_SHAPE, "bmm: batch sizes differ: %lld and %lld", (long long)a->sizes[0],
                         (long long)b->sizes[0]);
    int64_t shape[3] = {a->sizes[0], a->sizes[1], b->sizes[2]};
    wick_tensor *c;
    if ((st = wk_tensor_new(&c, 3, shape, a->dtype, a->storage->device))) return st;
    for (int64_t i = 0; i < shape[0] && !wk_is_meta(c) && !st; i++) {
        wick_tensor *ai, *bi, *ci;
        if ((st = wick_select(&ai, (wick_tensor *)a, 0, i))) break;
        if ((st = wick_select(&bi, (wick_tensor *)b, 0, i))) {
            wick_tensor_release(ai);
            break;
        }
        if (!(st = wick_select(&ci, c, 0, i))) {
            st = gemm_2d(ci, ai, bi, 1, 0);
            wick_tensor_release(ci);
        }
        wick_tensor_release(ai);
        wick_tensor_release(bi);
    }
    if (st) {
        wick_tensor_release(c);
        return st;
    }
    *out = c;
    return WICK_OK;
}

wick_status wick_bmm(wick_tensor **out, const wick_tensor *a, const wick_tensor *b) {
    WK_AUTOCAST(WK_AC_LOWER, 2, wick_bmm(out, c[0], c[1]), a, b);
    if (wick_dtype_is_complex(a->dtype) || wick_dtype_is_complex(b->dtype)) return wk_complex_product(out, wick_bmm, a, b);
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = bmm_forward(&r, a, b));
    if (st) return st;
    const wick_tensor *in[2] = {a, b};
    return wk_publish(out, r, wk_wants_grad(2, in) ? wk_record_bmm(r, a, b) : WICK_OK);
}

/* torch.matmul by cases: vectors become matrices, batches broadcast. */
wick_status wick_matmul(wick_tensor **out, const wick_tensor *a, const wick_tensor *b) {
    WK_AUTOCAST(WK_AC_LOWER, 2, wick_matmul(out, c[0], c[1]), a, b);
    if (wick_dtype_is_complex(a->dtype) || wick_dtype_is_complex(b->dtype))
        return wk_complex_product(out, wick_matmul, a, b); /* complex.c */
    const wick_tensor *ts[2] = {a, b};
    const char *names[2] = {"input", "other"};
    wick_status st = wk_check_same_device("matmul", 2, ts, names);
    if (!st) st = check_matmul_dtypes("matmul", a, b); /* (named as the caller's op, not the mm it reaches) */
    if (st) return st;
    if (a->ndim == 0 || b->ndim == 0)
        return wick_fail(WICK_ERR_SHAPE, "matmul: both arguments need at least 1 dimension, got %d-D and %d-D",
                         a->ndim, b->ndim);
    wick_tensor *A = NULL, *B = NULL, *R = NULL;
    wick_tensor *va = (wick_tensor *)a, *vb = (wick_tensor *)b;
    bool a_vec = a->ndim == 1, b_vec = b->ndim == 1;
    /* vectors: a (k) -> (1, k); b (k) -> (k, 1) */
    if ((st = a_vec ? wick_unsqueeze(&A, va, 0) : (wick_tensor_retain(va), A = va, WICK_OK))) return st;
    if ((st = b_vec ? wick_unsqueeze(&B, vb, 1) : (wick_tensor_retain(vb), B = vb, WICK_OK))) goto done;
    if (A->sizes[A->ndim - 1] != B->sizes[B->ndim - 2] && a->ndim == 2 && b->ndim == 2) {
        st = mm_shapes("matmul", A, B); /* PyTorch's words for two matrices */
        goto done;
    }
    if (A->sizes[A->ndim - 1] != B->sizes[B->ndim - 2]) {
        char x[WK_SHAPE_BUF], y[WK_SHAPE_BUF];
        st = wick_fail(WICK_ERR_SHAPE, "matmul: size mismatch: %s vs %s (the last dim of input must equal the "
                       "first matrix dim of other)",
                       wk_shape_str(a->ndim, a->sizes, x, sizeof x), wk_shape_str(b->ndim, b->sizes, y, sizeof y));
        goto done;
    }
    int64_t n = A->sizes[A->ndim - 2], m = B->sizes[B->ndim - 1], k = A->sizes[A->ndim - 1];
    int64_t shape[WICK_MAX_DIMS];
    int nd;
    if (A->ndim == 2 && B->ndim == 2) {
        if ((st = wick_mm(&R, A, B))) goto done;
        nd = 2, shape[0] = n, shape[1] = m;
    } else if (B->ndim == 2) { /* fold the batch of A into rows: one big gemm */
        wick_tensor *flat, *prod;
        int64_t fs[2] = {wick_tensor_numel(A) / (k ? k : 1), k};
        if (k == 0) fs[0] = wk_numel(A->ndim - 1, A->sizes);
        if ((st = wick_reshape(&flat, A, 2, fs))) goto done;
        st = wick_mm(&prod, flat, B);
        wick_tensor_release(flat);
        if (st) goto done;
        nd = A->ndim;
        memcpy(shape, A->sizes, sizeof(int64_t) * nd);
        shape[nd - 1] = m;
        st = wick_reshape(&R, prod, nd, shape);
        wick_tensor_release(prod);
        if (st) goto done;
    } else { /* broadcast the batch dims, then bmm */
        int bn;
        int64_t batch[WICK_MAX_DIMS];
        if ((st = wk_broadcast_shapes("matmul", A->ndim - 2, A->sizes, B->ndim - 2, B->sizes, &bn, batch))) goto done;
        int64_t count = wk_numel(bn, batch), ea[WICK_MAX_DIMS], eb[WICK_MAX_DIMS];
        memcpy(ea, batch, sizeof(int64_t) * bn), ea[bn] = n, ea[bn + 1] = k;
        memcpy(eb, batch, sizeof(int64_t) * bn), eb[bn] = k, eb[bn + 1] = m;
        wick_tensor *xa, *xb, *ra, *rb, *prod;
        int64_t sa[3] = {count, n, k}, sb[3] = {count, k, m};
        if ((st = wick_expand(&xa, A, bn + 2, ea))) goto done;
        if ((st = wick_expand(&xb, B, bn + 2, eb))) { wick_tensor_release(xa); goto done; }
        st = wick_reshape(&ra, xa, 3, sa);
        if (!st && (st = wick_reshape(&rb, xb, 3, sb))) wick_tensor_release(ra);
        wick_tensor_release(xa);
        wick_tensor_release(xb);
        if (st) goto done;
        st = wick_bmm(&prod, ra, rb);
        wick_tensor_release(ra);
        wick_tensor_release(rb);
        if (st) goto done;
        nd = bn + 2;
        memcpy(shape, batch, sizeof(int64_t) * bn), shape[bn] = n, shape[bn + 1] = m;
        st = wick_reshape(&R, prod, nd, shape);
        wick_tensor_release(prod);
        if (st) goto done;
    }
    /* drop the dims that the vectors gained */
    if (a_vec || b_vec) {
        int64_t fs[WICK_MAX_DIMS];
        int fn = 0;
        for (int i = 0; i < nd; i++) {
            if (a_vec && i == nd - 2) continue;
            if (b_vec && i == nd - 1) continue;
            fs[fn++] = shape[i];
        }
        wick_tensor *v;
        if ((st = wick_reshape(&v, R, fn, fs))) goto done;
        wick_tensor_release(R);
        R = v;
    }
    *out = R;
    R = NULL;
done:
    wick_tensor_release(A);
    wick_tensor_release(B);
    wick_tensor_release(R);
    return st;
}
