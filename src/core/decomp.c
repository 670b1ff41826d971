/* Dense linear algebra (wick_linalg_*): the matrices in the last two dims of a
 * float32 or float64 tensor, batched over the others, on any device. Each
 * call copies its operands to the host in float64, runs the CPU backend's
 * decomposition kernels (src/cpu/cpu_decomp.c) and gives results in the
 * input's dtype and device. Nothing is recorded for autograd here: the Lua
 * layer (wick.linalg) differentiates them with formulas written in ops. */
#include "autograd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

/* The operand's batch and matrix sizes, after the checks every op shares. */
static wick_status matrix_dims(const char *op, const wick_tensor *a, int square, int64_t *batch, int64_t *m,
                               int64_t *n) {
    if (!a) return wick_fail(WICK_ERR_ARGUMENT, "%s: NULL argument", op);
    if (a->ndim < 2)
        return wick_fail(WICK_ERR_SHAPE, "%s: The input tensor A must have at least 2 dimensions (got %d)", op,
                         a->ndim);
    if (a->dtype != WICK_FLOAT32 && a->dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_DTYPE, "%s: Expected a floating point tensor of dtype float32 or float64 (got %s)",
                         op, wick_dtype_name(a->dtype));
    if (wk_is_meta(a)) return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not available on the meta device", op);
    const char *name = "A";
    TRY(wk_check_same_device(op, 1, &a, &name)); /* also where Ctrl-C stops it */
    *m = a->sizes[a->ndim - 2], *n = a->sizes[a->ndim - 1];
    *batch = wk_numel(a->ndim - 2, a->sizes);
    if (square && *m != *n)
        return wick_fail(WICK_ERR_SHAPE, "%s: A must be batches of square matrices, but they are %lld by %lld matrices",
                         op, (long long)*m, (long long)*n);
    return WICK_OK;
}

/* A private contiguous float64 host copy of t (the kernels overwrite it). */
static wick_status host_copy(wick_tensor **out, const wick_tensor *t) {
    wick_tensor *h, *c;
    wick_status st;
    WK_NO_GRAD(st = wick_to(&h, (wick_tensor *)t, (wick_options){WICK_FLOAT64, wick_cpu()}));
    if (st) return st;
    if (h != t && wick_tensor_is_contiguous(h) && h->offset == 0) return *out = h, WICK_OK;
    WK_NO_GRAD(st = wick_clone(&c, h));
    wick_tensor_release(h);
    if (!st) *out = c;
    return st;
}

/* A float64 host tensor of a's batch dims followed by up to two more. */
static wick_status host_result(wick_tensor **out, const wick_tensor *a, int extra, int64_t d0, int64_t d1) {
    int64_t sizes[WICK_MAX_DIMS];
    int nd = a->ndim - 2;
    memcpy(sizes, a->sizes, sizeof(int64_t) * (size_t)nd);
    if (extra > 0) sizes[nd++] = d0;
    if (extra > 1) sizes[nd++] = d1;
    return wk_tensor_new(out, nd, sizes, WICK_FLOAT64, wick_cpu());
}

/* *r (a host result, taken) in a's dtype and device. */
static wick_status give_back(wick_tensor **r, const wick_tensor *a) {
    wick_tensor *t;
    wick_status st;
    WK_NO_GRAD(st = wick_to(&t, *r, (wick_options){a->dtype, a->storage->device}));
    wick_tensor_release(*r);
    *r = st ? NULL : t;
    return st;
}

static wick_status run(wk_decomp_args *args, int **info) {
    *info = NULL;
    if (args->batch == 0 || args->m == 0 || args->n == 0) return WICK_OK;
    if (!(*info = calloc((size_t)args->batch, sizeof **info))) return wick_fail(WICK_ERR_OOM, "linalg: out of memory");
    args->info = *info;
    return wk_cpu_backend.decompose(args);
}

/* The first failed matrix of the batch, in PyTorch's words (an LU's: the `what` that could
 * not be completed, "solve" or "inversion"); the batch element counted from 1, as wick's indices. */
static wick_status check_info(const char *op, const int *info, int64_t batch, wk_decomp_kind kind, const char *what) {
    for (int64_t b = 0; info && b < batch; b++) {
        if (!info[b]) continue;
        char where[48] = "";
        if (batch > 1) snprintf(where, sizeof where, " (batch element %lld)", (long long)b + 1);
        switch (kind) {
        case WK_DECOMP_LU:
            return wick_fail(WICK_ERR_ARGUMENT,
                             "%s%s: The diagonal element %d is zero, the %s could not be completed because the "
                             "input matrix is singular.",
                             op, where, info[b], what);
        case WK_DECOMP_CHOLESKY:
            return wick_fail(WICK_ERR_ARGUMENT,
                             "%s%s: The factorization could not be completed because the input is not "
                             "positive-definite (the leading minor of order %d is not positive-definite).",
                             op, where, info[b]);
        default:
            return wick_fail(WICK_ERR_ARGUMENT, "%s%s: The algorithm failed to converge", op, where);
        }
    }
    return WICK_OK;
}

/* ---- the ops ---- */

/* A X = B, its errors named as op's (linalg.solve, linalg.inv), a singular A's saying what failed */
static wick_status solve(const char *op, const char *what, wick_tensor **out, const wick_tensor *a,
                         const wick_tensor *b) {
    int64_t batch = 0, m = 0, n = 0, bb = 0, bm = 0, k = 0;
    TRY(matrix_dims(op, a, 1, &batch, &m, &n));
    TRY(matrix_dims(op, b, 0, &bb, &bm, &k));
    if (a->ndim != b->ndim || memcmp(a->sizes, b->sizes, sizeof(int64_t) * (size_t)(a->ndim - 2)) != 0 || bm != n) {
        char sa[WK_SHAPE_BUF], sb[WK_SHAPE_BUF];
        return wick_fail(WICK_ERR_SHAPE,
                         "%s: Incompatible shapes of A and B for the equation AX = B (%s and %s): B must be [..., %lld, "
                         "k] with A's batch dims",
                         op, wk_shape_str(a->ndim, a->sizes, sa, sizeof sa),
                         wk_shape_str(b->ndim, b->sizes, sb, sizeof sb), (long long)n);
    }
    if (a->dtype != b->dtype)
        return wick_fail(WICK_ERR_DTYPE, "%s: Expected A and B to have the same dtype, but found A of type %s and B "
                         "of type %s instead", op, wick_dtype_name(a->dtype), wick_dtype_name(b->dtype));
    const wick_tensor *ops[2] = {a, b};
    const char *names[2] = {"A", "B"};
    TRY(wk_check_same_device(op, 2, ops, names));
    wick_tensor *h = NULL, *x = NULL, *piv = NULL;
    int *info = NULL;
    wick_status st = host_copy(&h, a);
    if (!st) st = host_copy(&x, b);
    if (!st) st = host_result(&piv, a, 1, n, 0);
    if (!st) {
        wk_decomp_args args = {.kind = WK_DECOMP_SOLVE, .batch = batch, .m = n, .n = n, .k = k, .a = (double *)wk_data(h),
                               .r = (double *)wk_data(x), .pivots = (int64_t *)wk_data(piv)};
        if (k == 0) args.batch = 0;
        st = run(&args, &info);
    }
    if (!st) st = check_info(op, info, batch, WK_DECOMP_LU, what);
    if (!st) st = give_back(&x, a);
    free(info);
    wick_tensor_release(h);
    wick_tensor_release(piv);
    if (st) return wick_tensor_release(x), st;
    *out = x;
    return WICK_OK;
}

wick_status wick_linalg_solve(wick_tensor **out, const wick_tensor *a, const wick_tensor *b) {
    return solve("linalg.solve", "solve", out, a, b);
}

wick_status wick_linalg_inv(wick_tensor **out, const wick_tensor *a) {
    int64_t batch = 0, m = 0, n = 0;
    TRY(matrix_dims("linalg.inv", a, 1, &batch, &m, &n));
    wick_tensor *eye = NULL, *b = NULL;
    wick_status st = wick_eye(&eye, n, n, (wick_options){a->dtype, a->storage->device});
    if (!st) st = wick_expand(&b, eye, a->ndim, a->sizes); /* (A's batch of identities, read in place) */
    if (!st) st = solve("linalg.inv", "inversion", out, a, b);
    wick_tensor_release(b);
    wick_tensor_release(eye);
    return st;
}

wick_status wick_linalg_slogdet(wick_tensor **sign, wick_tensor **logabsdet, const wick_tensor *a) {
    int64_t batch = 0, m = 0, n = 0;
    TRY(matrix_dims("linalg.slogdet", a, 1, &batch, &m, &n));
    wick_tensor *h = NULL, *piv = NULL, *res = NULL, *s = NULL, *l = NULL;
    int *info = NULL;
    wick_status st = host_copy(&h, a);
    if (!st) st = host_result(&piv, a, 1, n, 0);
    if (!st) st = host_result(&res, a, 1, 2, 0);
    if (!st) {
        double *w = (double *)wk_data(res);
        for (int64_t b = 0; b < batch; b++) w[2 * b] = 1, w[2 * b + 1] = 0; /* 0 x 0: det 1 */
        wk_decomp_args args = {.kind = WK_DECOMP_DET, .batch = batch, .m = n, .n = n, .a = (double *)wk_data(h),
                               .w = w, .pivots = (int64_t *)wk_data(piv)};
        st = run(&args, &info);
    }
    if (!st) st = wick_select(&s, res, res->ndim - 1, 0);
    if (!st) st = wick_select(&l, res, res->ndim - 1, 1);
    wick_tensor *sc = NULL, *lc = NULL;
    if (!st) WK_NO_GRAD(st = wick_contiguous(&sc, s); if (!st) st = wick_contiguous(&lc, l));
    if (!st) st = give_back(&sc, a);
    if (!st) st = give_back(&lc, a);
    free(info);
    wick_tensor *all[] = {h, piv, res, s, l};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wick_tensor_release(all[i]);
    if (st) {
        wick_tensor_release(sc);
        wick_tensor_release(lc);
        return st;
    }
    *sign = sc, *logabsdet = lc;
    return WICK_OK;
}

wick_status wick_linalg_lu_factor(wick_tensor **lu, wick_tensor **pivots, wick_tensor **info, const wick_tensor *a) {
    int64_t batch = 0, m = 0, n = 0;
    TRY(matrix_dims("linalg.lu_factor", a, 0, &batch, &m, &n));
    int64_t k = m < n ? m : n;
    wick_tensor *h = NULL, *piv = NULL, *p32 = NULL, *inf = NULL;
    int *codes = NULL;
    wick_status st = host_copy(&h, a);
    if (!st) st = host_result(&piv, a, 1, k, 0); /* (int64 row indices in float64's room) */
    if (!st) {
        wk_decomp_args args = {.kind = WK_DECOMP_LU, .batch = batch, .m = m, .n = n, .a = (double *)wk_data(h),
                               .pivots = (int64_t *)wk_data(piv)};
        st = run(&args, &codes);
    }
    int64_t sizes[WICK_MAX_DIMS];
    memcpy(sizes, a->sizes, sizeof(int64_t) * (size_t)(a->ndim - 2));
    sizes[a->ndim - 2] = k;
    if (!st) st = wk_tensor_new(&p32, a->ndim - 1, sizes, WICK_INT32, wick_cpu());
    if (!st) st = wk_tensor_new(&inf, a->ndim - 2, sizes, WICK_INT32, wick_cpu());
    if (!st) { /* LAPACK's (and PyTorch's) 1-based pivots, info 0 or the first zero pivot (1-based) */
        const int64_t *src = (const int64_t *)wk_data(piv);
        int32_t *dst = (int32_t *)wk_data(p32), *code = (int32_t *)wk_data(inf);
        for (int64_t i = 0; i < batch * k; i++) dst[i] = (int32_t)(src[i] + 1);
        for (int64_t b = 0; b < batch; b++) code[b] = codes ? codes[b] : 0;
    }
    if (!st) st = give_back(&h, a);
    wick_tensor *on = NULL, *oi = NULL;
    if (!st) WK_NO_GRAD(st = wick_to(&on, p32, (wick_options){WICK_INT32, a->storage->device}));
    if (!st) WK_NO_GRAD(st = wick_to(&oi, inf, (wick_options){WICK_INT32, a->storage->device}));
    free(codes);
    wick_tensor_release(piv);
    wick_tensor_release(p32);
    wick_tensor_release(inf);
    if (st) {
        wick_tensor_release(h);
        wick_tensor_release(on);
        wick_tensor_release(oi);
        return st;
    }
    *lu = h, *pivots = on, *info = oi;
    return WICK_OK;
}

wick_status wick_linalg_cholesky(wick_tensor **out, const wick_tensor *a) {
    static const char *op = "linalg.cholesky";
    int64_t batch = 0, m = 0, n = 0;
    TRY(matrix_dims(op, a, 1, &batch, &m, &n));
    wick_tensor *h = NULL;
    int *info = NULL;
    wick_status st = host_copy(&h, a);
    if (!st) {
        wk_decomp_args args = {.kind = WK_DECOMP_CHOLESKY, .batch = batch, .m = n, .n = n, .a = (double *)wk_data(h)};
        st = run(&args, &info);
    }
    if (!st) st = check_info(op, info, batch, WK_DECOMP_CHOLESKY, NULL);
    if (!st) st = give_back(&h, a);
    free(info);
    if (st) return wick_tensor_release(h), st;
    *out = h;
    return WICK_OK;
}

wick_status wick_linalg_qr(wick_tensor **q, wick_tensor **r, const wick_tensor *a, int complete) {
    int64_t batch = 0, m = 0, n = 0;
    TRY(matrix_dims("linalg.qr", a, 0, &batch, &m, &n));
    int64_t kq = complete ? m : (m < n ? m : n);
    wick_tensor *h = NULL, *tq = NULL, *tr = NULL;
    int *info = NULL;
    wick_status st = host_copy(&h, a);
    if (!st) st = host_result(&tq, a, 2, m, kq);
    if (!st) st = host_result(&tr, a, 2, kq, n);
    if (!st) {
        wk_decomp_args args = {.kind = WK_DECOMP_QR, .full = complete, .batch = batch, .m = m, .n = n,
                               .a = (double *)wk_data(h), .q = (double *)wk_data(tq), .r = (double *)wk_data(tr)};
        if (n == 0 && batch && m) { /* Q is the identity's first columns; R is empty */
            double *qd = (double *)wk_data(tq);
            for (int64_t b = 0; b < batch; b++)
                for (int64_t i = 0; i < m; i++)
                    for (int64_t c = 0; c < kq; c++) qd[(b * m + i) * kq + c] = i == c;
        }
        st = run(&args, &info);
    }
    if (!st) st = give_back(&tq, a);
    if (!st) st = give_back(&tr, a);
    free(info);
    wick_tensor_release(h);
    if (st) {
        wick_tensor_release(tq);
        wick_tensor_release(tr);
        return st;
    }
    *q = tq, *r = tr;
    return WICK_OK;
}

wick_status wick_linalg_eigh(wick_tensor **w, wick_tensor **v, const wick_tensor *a) {
    static const char *op = "linalg.eigh";
    int64_t batch = 0, m = 0, n = 0;
    TRY(matrix_dims(op, a, 1, &batch, &m, &n));
    wick_tensor *h = NULL, *tw = NULL, *tv = NULL;
    int *info = NULL;
    wick_status st = host_copy(&h, a);
    if (!st) st = host_result(&tw, a, 1, n, 0);
    if (!st) st = host_result(&tv, a, 2, n, n);
    if (!st) {
        /* PyTorch reads the lower triangle only: mirror it */
        double *d = (double *)wk_data(h);
        for (int64_t b = 0; b < batch; b++)
            for (int64_t i = 0; i < n; i++)
                for (int64_t j = i + 1; j < n; j++) d[(b * n + i) * n + j] = d[(b * n + j) * n + i];
        wk_decomp_args args = {.kind = WK_DECOMP_EIGH, .batch = batch, .m = n, .n = n, .a = d,
                               .q = (double *)wk_data(tv), .w = (double *)wk_data(tw)};
        st = run(&args, &info);
    }
    if (!st) st = check_info(op, info, batch, WK_DECOMP_EIGH, NULL);
    if (!st) st = give_back(&tw, a);
    if (!st) st = give_back(&tv, a);
    free(info);
    wick_tensor_release(h);
    if (st) {
        wick_tensor_release(tw);
        wick_tensor_release(tv);
        return st;
    }
    *w = tw, *v = tv;
    return WICK_OK;
}

wick_status wick_linalg_svd(wick_tensor **u, wick_tensor **s, wick_tensor **vh, const wick_tensor *a,
                            int full_matrices) {
    static const char *op = "linalg.svd";
    int64_t batch = 0, m = 0, n = 0;
    TRY(matrix_dims(op, a, 0, &batch, &m, &n));
    int64_t k = m < n ? m : n, ku = full_matrices ? m : k, kv = full_matrices ? n : k;
    wick_tensor *h = NULL, *tu = NULL, *ts = NULL, *tv = NULL;
    int *info = NULL;
    wick_status st = host_copy(&h, a);
    if (!st) st = host_result(&tu, a, 2, m, ku);
    if (!st) st = host_result(&ts, a, 1, k, 0);
    if (!st) st = host_result(&tv, a, 2, kv, n);
    if (!st && k == 0 && batch) { /* an empty side: the full factors are identities */
        double *du = (double *)wk_data(tu), *dv = (double *)wk_data(tv);
        for (int64_t b = 0; b < batch; b++) {
            for (int64_t i = 0; i < m * ku; i++) du[b * m * ku + i] = i / (ku ? ku : 1) == i % (ku ? ku : 1);
            for (int64_t i = 0; i < kv * n; i++) dv[b * kv * n + i] = i / (n ? n : 1) == i % (n ? n : 1);
        }
    }
    if (!st) {
        wk_decomp_args args = {.kind = WK_DECOMP_SVD, .full = full_matrices, .batch = batch, .m = m, .n = n,
                               .a = (double *)wk_data(h), .q = (double *)wk_data(tu), .r = (double *)wk_data(tv),
                               .w = (double *)wk_data(ts)};
        st = run(&args, &info);
    }
    if (!st) st = check_info(op, info, batch, WK_DECOMP_SVD, NULL);
    if (!st) st = give_back(&tu, a);
    if (!st) st = give_back(&ts, a);
    if (!st) st = give_back(&tv, a);
    free(info);
    wick_tensor_release(h);
    if (st) {
        wick_tensor_release(tu);
        wick_tensor_release(ts);
        wick_tensor_release(tv);
        return st;
    }
    *u = tu, *s = ts, *vh = tv;
    return WICK_OK;
}
