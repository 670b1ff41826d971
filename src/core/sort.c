/* Sorting and scans along a dimension: wick_sort, wick_cumsum, wick_cumprod.
 * The core checks arguments, brings the input to one contiguous compute dtype
 * (float32, float64 or int64), calls the backend's sort or scan kernel over an
 * [outer, n, inner] layout, and records autograd:
 *   sort values   - a gather of the input at the sorted indices (GatherBackward);
 *   cumsum        - the gradient summed from the end (a reverse scan);
 *   cumprod       - reverse cumsum of (grad * out), divided by the input; where
 *                   the input has zeros, PyTorch's special case (see
 *                   cumprod_backward_zeros). */
#include "autocast.h"
#include "autograd.h"

#include <string.h>

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

static wick_dtype compute_dtype(wick_dtype d) {
    if (d == WICK_FLOAT64) return WICK_FLOAT64;
    return wick_dtype_is_floating(d) ? WICK_FLOAT32 : WICK_INT64;
}

/* [outer, n, inner] around the wrapped dim (a 0-dim tensor is one element). */
static void line_layout(const wick_tensor *a, int dim, int64_t *outer, int64_t *n, int64_t *inner) {
    *outer = 1, *n = 1, *inner = 1;
    for (int i = 0; i < a->ndim; i++) {
        if (i < dim) *outer *= a->sizes[i];
        else if (i == dim) *n = a->sizes[i];
        else *inner *= a->sizes[i];
    }
}

/* a converted to dtype cd on its device, contiguous (a new reference). */
static wick_status contiguous_as(wick_tensor **out, const wick_tensor *a, wick_dtype cd) {
    wick_tensor *conv;
    TRY(wick_to(&conv, (wick_tensor *)a, (wick_options){cd, a->storage->device, 0}));
    wick_status st = wick_contiguous(out, conv);
    wick_tensor_release(conv);
    return st;
}

/* r converted to dtype d (r's reference is taken over). */
static wick_status convert_result(wick_tensor **r, wick_dtype d) {
    if ((*r)->dtype == d) return WICK_OK;
    wick_tensor *conv;
    TRY(wick_to(&conv, *r, (wick_options){d, (*r)->storage->device, 0}));
    wick_tensor_release(*r);
    *r = conv;
    return WICK_OK;
}

/* ---- sort ---- */

/* k < 0: the whole line (sort); otherwise the first k of it (topk) */
static wick_status sort_forward(wick_tensor **values, wick_tensor **indices, const wick_tensor *a, int dim,
                                int descending, int64_t k) {
    const char *op = k < 0 ? "sort" : "topk";
    TRY(wk_check_interrupt(op));
    TRY(wk_check_real(op, 1, &a));
    TRY(wk_wrap_dim(op, &dim, a->ndim));
    int64_t n = a->ndim ? a->sizes[dim] : 1, sizes[WICK_MAX_DIMS];
    if (k > n)
        return wick_fail(WICK_ERR_INDEX, "topk: selected index k out of range (k = %lld, but dimension %d has size %lld)",
                         (long long)k, dim + 1, (long long)n);
    if (k < 0) k = n;
    memcpy(sizes, a->sizes, sizeof(int64_t) * (size_t)a->ndim);
    if (a->ndim) sizes[dim] = k;
    wick_device dev = a->storage->device;
    wick_dtype cd = compute_dtype(a->dtype);
    wick_tensor *v = NULL, *idx = NULL, *in = NULL;
    wick_status st;
    if ((st = wk_tensor_new(&v, a->ndim, sizes, cd, dev)) || (st = wk_tensor_new(&idx, a->ndim, sizes, WICK_INT64, dev)))
        goto fail;
    if (!wk_is_meta(v) && wick_tensor_numel(v) > 0) {
        if ((st = contiguous_as(&in, a, cd))) goto fail;
        wk_sort_args args = {.device = dev.index, .dtype = cd, .k = k, .descending = descending, .in = wk_data(in),
                             .values = wk_data(v), .indices = (int64_t *)wk_data(idx)};
        line_layout(a, dim, &args.outer, &args.n, &args.inner);
        if ((st = v->storage->backend->sort(&args))) goto fail;
    }
    if ((st = convert_result(&v, a->dtype))) goto fail;
    wick_tensor_release(in);
    *values = v;
    *indices = idx;
    return WICK_OK;
fail:
    wick_tensor_release(in);
    wick_tensor_release(v);
    wick_tensor_release(idx);
    return st;
}

static wick_status recorded_sort(wick_tensor **values, wick_tensor **indices, const wick_tensor *a, int dim,
                                 int descending, int64_t k) {
    wick_tensor *v = NULL, *idx = NULL;
    wick_status st;
    WK_NO_GRAD(st = sort_forward(&v, &idx, a, dim, descending, k));
    if (st) return st;
    if (wk_wants_grad(1, &a)) {
        wk_wrap_dim("sort", &dim, a->ndim);
        /* the values are a gather of the input; a 0-dim input is its own value */
        st = a->ndim ? wk_record_gather(v, a, dim, idx)
                     : wk_record_view(v, a, WK_VIEW_IDENTITY, 0, 0, 0, 0, NULL);
        if (st) {
            wick_tensor_release(v);
            wick_tensor_release(idx);
            return st;
        }
    }
    *values = v;
    *indices = idx;
    return WICK_OK;
}

wick_status wick_sort(wick_tensor **values, wick_tensor **indices, const wick_tensor *a, int dim, int descending) {
    return recorded_sort(values, indices, a, dim, descending, -1);
}

wick_status wick_topk(wick_tensor **values, wick_tensor **indices, const wick_tensor *a, int64_t k, int dim,
                      int largest) {
    if (k < 0) return wick_fail(WICK_ERR_ARGUMENT, "topk: k must be non-negative, got %lld", (long long)k);
    return recorded_sort(values, indices, a, dim, largest, k);
}

/* ---- scans ---- */

static wick_status scan_forward(wick_tensor **out, const wick_tensor *a, int dim, int dtype, int prod, int reverse) {
    const char *op = prod ? "cumprod" : "cumsum";
    TRY(wk_check_interrupt(op));
    TRY(wk_check_real(op, 1, &a));
    TRY(wk_wrap_dim(op, &dim, a->ndim));
    if (dtype < -1 || dtype >= WICK_NUM_DTYPES) return wick_fail(WICK_ERR_ARGUMENT, "%s: invalid dtype %d", op, dtype);
    wick_dtype rd = dtype >= 0 ? (wick_dtype)dtype : wk_is_integral(a->dtype) ? WICK_INT64 : a->dtype;
    wick_dtype cd = compute_dtype(rd);
    wick_device dev = a->storage->device;
    wick_tensor *r = NULL, *in = NULL;
    wick_status st;
    if ((st = wk_tensor_new(&r, a->ndim, a->sizes, cd, dev))) return st;
    if (!wk_is_meta(r) && wick_tensor_numel(a) > 0) {
        if ((st = contiguous_as(&in, a, cd))) goto fail;
        wk_scan_args args = {.device = dev.index, .dtype = cd, .prod = prod, .reverse = reverse, .in = wk_data(in),
                             .out = wk_data(r)};
        line_layout(a, dim, &args.outer, &args.n, &args.inner);
        if ((st = r->storage->backend->scan(&args))) goto fail;
    }
    if ((st = convert_result(&r, rd))) goto fail;
    wick_tensor_release(in);
    *out = r;
    return WICK_OK;
fail:
    wick_tensor_release(in);
    wick_tensor_release(r);
    return st;
}

/* A scan with a dtype (cumsum(dim, {dtype = float32}) of float64): its gradient in
 * the input's dtype before the backward's arithmetic, as PyTorch's grad.to(self.dtype) */
static wick_status in_input_dtype(const wk_node *n, wick_tensor *g, wick_tensor **own) {
    *own = NULL;
    if (g->dtype == n->edges[0].dtype) return WICK_OK;
    return wick_to(own, g, (wick_options){n->edges[0].dtype, g->storage->device});
}

/* The sum from the end: a reverse scan; under create_graph the same written
 * with recorded ops, sum(g) - cumsum(g) + g, so it differentiates again. */
static wick_status cumsum_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *own;
    TRY(in_input_dtype(n, g, &own));
    if (own) {
        wick_status st = cumsum_backward(n, own, grads);
        wick_tensor_release(own);
        return st;
    }
    if (!wk_grad_mode) return scan_forward(&grads[0], g, n->ints[0], -1, 0, 1);
    wick_tensor *total = NULL, *run = NULL, *d = NULL;
    wick_status st = wick_reduce(&total, NULL, WICK_SUM, g, n->ints[0], 1, 0);
    if (!st) st = wick_cumsum(&run, g, n->ints[0], -1);
    if (!st) st = wick_binary(&d, WICK_SUB, total, run);
    if (!st) st = wick_binary(&grads[0], WICK_ADD, d, g);
    wick_tensor_release(total);
    wick_tensor_release(run);
    wick_tensor_release(d);
    return st;
}

/* The reverse cumsum of g * y along dim. */
static wick_status rev_cumsum_of_product(wick_tensor **out, const wick_tensor *g, const wick_tensor *y, int dim) {
    wick_tensor *t;
    TRY(wick_binary(&t, WICK_MUL, g, y));
    wick_status st = scan_forward(out, t, dim, -1, 0, 1);
    wick_tensor_release(t);
    return st;
}

/* Whether t has an element equal to 0. */
static wick_status has_zero(const wick_tensor *t, bool *out) {
    wick_tensor *z = NULL, *any = NULL;
    double v = 0;
    *out = false;
    if (wick_tensor_numel(t) == 0) return WICK_OK;
    wick_status st = wick_binary_scalar(&z, WICK_EQ, t, (wick_scalar){0, 1}, 0);
    if (!st) st = wick_reduce(&any, NULL, WICK_MAX, z, -1, 0, 0);
    if (!st) st = wick_item_double(any, &v);
    wick_tensor_release(z);
    wick_tensor_release(any);
    *out = v != 0;
    return st;
}

/* Where a line of x has zeros (PyTorch's special case, in ops): with z its
 * first zero, the quotient holds before z, every gradient after z is 0, and
 * z's own is the reverse cumsum of g * cumprod(x with x_z = 1) at z. */
static wick_status cumprod_backward_zeros(wick_tensor **out, const wick_tensor *x, const wick_tensor *y,
                                          const wick_tensor *g, int dim) {
    wick_tensor *zero = NULL, *seen = NULL, *before = NULL, *once = NULL, *first = NULL, *one = NULL, *nil = NULL;
    wick_tensor *safe = NULL, *s = NULL, *q = NULL, *a = NULL, *x1 = NULL, *y1 = NULL, *s1 = NULL, *b = NULL;
    wick_status st;
    if ((st = wick_binary_scalar(&zero, WICK_EQ, x, (wick_scalar){0, 1}, 0))) goto done;
    if ((st = scan_forward(&seen, zero, dim, WICK_INT64, 0, 0))) goto done; /* zeros so far */
    if ((st = wick_binary_scalar(&before, WICK_EQ, seen, (wick_scalar){0, 1}, 0))) goto done;
    if ((st = wick_binary_scalar(&once, WICK_EQ, seen, (wick_scalar){1, 1}, 0))) goto done;
    if ((st = wick_where(&first, zero, once, zero))) goto done; /* the first zero */
    if ((st = wick_full(&one, 0, NULL, 1, (wick_options){x->dtype, x->storage->device}))) goto done;
    if ((st = wick_full(&nil, 0, NULL, 0, (wick_options){g->dtype, g->storage->device}))) goto done;
    if ((st = wick_where(&safe, before, x, one))) goto done;
    if ((st = rev_cumsum_of_product(&s, g, y, dim))) goto done;
    if ((st = wick_binary(&q, WICK_DIV, s, safe))) goto done;
    if ((st = wick_where(&a, before, q, nil))) goto done;
    if ((st = wick_where(&x1, first, one, x))) goto done;
    if ((st = wick_cumprod(&y1, x1, dim, -1))) goto done;
    if ((st = rev_cumsum_of_product(&s1, g, y1, dim))) goto done;
    if ((st = wick_where(&b, first, s1, nil))) goto done;
    st = wick_binary(out, WICK_ADD, a, b);
done:;
    wick_tensor *all[] = {zero, seen, before, once, first, one, nil, safe, s, q, a, x1, y1, s1, b};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wick_tensor_release(all[i]);
    return st;
}

static wick_status cumprod_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *x = n->saved[0], *y = n->saved[1], *s, *own;
    TRY(in_input_dtype(n, g, &own));
    if (own) {
        wick_status st = cumprod_backward(n, own, grads);
        wick_tensor_release(own);
        return st;
    }
    bool zeros;
    TRY(has_zero(x, &zeros));
    if (zeros) return cumprod_backward_zeros(&grads[0], x, y, g, n->ints[0]);
    TRY(rev_cumsum_of_product(&s, g, y, n->ints[0]));
    wick_status st = wick_binary(&grads[0], WICK_DIV, s, x);
    wick_tensor_release(s);
    return st;
}

static wick_status recorded_scan(wick_tensor **out, const wick_tensor *a, int dim, int dtype, int prod) {
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = scan_forward(&r, a, dim, dtype, prod, 0));
    if (st || !wk_wants_grad(1, &a) || !wick_dtype_is_floating(r->dtype)) return st ? st : (*out = r, WICK_OK);
    wk_wrap_dim("cumsum", &dim, a->ndim);
    wk_node *node;
    st = wk_record(r, prod ? "CumprodBackward" : "CumsumBackward", prod ? cumprod_backward : cumsum_backward, 0, 1,
                   &a, &node);
    if (!st) {
        node->ints[0] = dim;
        node->twice = !prod; /* cumsum_backward records under create_graph */
        if (prod && !(st = wk_save(node, 0, a, r))) st = wk_save(node, 1, r, r);
    }
    return wk_publish(out, r, st);
}

wick_status wick_cumsum(wick_tensor **out, const wick_tensor *a, int dim, int dtype) {
    WK_AUTOCAST(dtype < 0 ? WK_AC_FP32_CUDA : WK_AC_NONE, 1, wick_cumsum(out, c[0], dim, dtype), a);
    return recorded_scan(out, a, dim, dtype, 0);
}

wick_status wick_cumprod(wick_tensor **out, const wick_tensor *a, int dim, int dtype) {
    WK_AUTOCAST(dtype < 0 ? WK_AC_FP32_CUDA : WK_AC_NONE, 1, wick_cumprod(out, c[0], dim, dtype), a);
    return recorded_scan(out, a, dim, dtype, 1);
}
