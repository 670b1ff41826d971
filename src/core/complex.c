/* Complex tensors. complex64 and complex128 hold pairs of float32 or float64,
 * the real part first. view_as_real shows a complex tensor as a real one with
 * a last dim of size 2 on the same memory, view_as_complex the reverse, and
 * every complex op here is composed of real ops on such views: it runs on
 * every backend, and autograd differentiates it as PyTorch does (the gradient
 * of a complex z is dL/d(re z) + i dL/d(im z), the complex view of the
 * gradient of z's real view). An op that is not composed here refuses
 * complex operands (wk_check_real). */
#include "autograd.h"

#include <inttypes.h>
#include <math.h>

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

static bool is_complex(const wick_tensor *t) { return t && wick_dtype_is_complex(t->dtype); }

wick_status wk_check_real(const char *op, int n, const wick_tensor *const *ts) {
    for (int i = 0; i < n; i++)
        if (is_complex(ts[i]))
            return wick_fail(WICK_ERR_DTYPE,
                             "%s: not implemented for %s tensors (complex tensors take +, -, *, /, pow, where, "
                             "matmul, linear, sum, mean, abs, exp, log, sqrt, tanh, sigmoid, sin, cos, tan, sinh, "
                             "cosh, conj, angle, real, imag, views, indexing, scatter and copies; "
                             "wick.view_as_real(z) gives the rest its parts)",
                             op, wick_dtype_name(ts[i]->dtype));
    return WICK_OK;
}

/* ---- the two views ---- */

static wick_status view_as_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    if (n->op == 1) return wick_view_as_real(&grads[0], g); /* the gradient of view_as_complex's input */
    wick_tensor *c;
    TRY(wick_contiguous(&c, g));
    wick_status st = wick_view_as_complex(&grads[0], c);
    wick_tensor_release(c);
    return st;
}

/* A view of t's memory as `dtype` (sizes, strides and offset in its elements). */
static wick_status view_as(wick_tensor **out, wick_tensor *t, wick_dtype dtype, int ndim, const int64_t *sizes,
                           const int64_t *strides, int64_t offset, int to_complex) {
    wick_tensor *r;
    TRY(wk_tensor_view_dtype(&r, t, dtype, ndim, sizes, strides, offset));
    const wick_tensor *in = t;
    wk_node *node = NULL;
    wick_status st = wk_wants_grad(1, &in)
                         ? wk_record(r, to_complex ? "ViewAsComplexBackward0" : "ViewAsRealBackward0",
                                     view_as_backward, to_complex, 1, &in, &node)
                         : WICK_OK;
    if (node) node->twice = true; /* its backward is the other view: differentiable again */
    return wk_publish(out, r, st);
}

wick_status wick_view_as_real(wick_tensor **out, wick_tensor *t) {
    if (!is_complex(t))
        return wick_fail(WICK_ERR_DTYPE, "view_as_real is only supported for complex tensors, got %s",
                         wick_dtype_name(t->dtype));
    if (t->ndim >= WICK_MAX_DIMS)
        return wick_fail(WICK_ERR_SHAPE, "view_as_real: a tensor has at most %d dimensions", WICK_MAX_DIMS);
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS], offset;
    for (int i = 0; i < t->ndim; i++) {
        sizes[i] = t->sizes[i];
        if (__builtin_mul_overflow(t->strides[i], 2, &strides[i]))
            return wick_fail(WICK_ERR_SHAPE, "view_as_real: stride %" PRId64 " overflows", t->strides[i]);
    }
    sizes[t->ndim] = 2, strides[t->ndim] = 1;
    if (__builtin_mul_overflow(t->offset, 2, &offset))
        return wick_fail(WICK_ERR_INDEX, "view_as_real: the storage offset overflows");
    return view_as(out, t, wk_complex_part(t->dtype), t->ndim + 1, sizes, strides, offset, 0);
}

wick_status wick_view_as_complex(wick_tensor **out, wick_tensor *t) {
    if (t->dtype != WICK_FLOAT32 && t->dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_DTYPE, "view_as_complex is only supported for float32 and float64 tensors, got %s",
                         wick_dtype_name(t->dtype));
    int n = t->ndim - 1;
    if (n < 0 || t->sizes[n] != 2)
        return wick_fail(WICK_ERR_SHAPE, "view_as_complex: Tensor must have a last dimension of size 2");
    if (t->strides[n] != 1)
        return wick_fail(WICK_ERR_SHAPE, "view_as_complex: Tensor must have a last dimension with stride 1 "
                                         "(call :contiguous() first)");
    int64_t strides[WICK_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        if (t->strides[i] % 2)
            return wick_fail(WICK_ERR_SHAPE, "view_as_complex: Tensor must have a stride divisible by 2 for all but "
                                             "last dimension (call :contiguous() first)");
        strides[i] = t->strides[i] / 2;
    }
    if (t->offset % 2)
        return wick_fail(WICK_ERR_SHAPE, "view_as_complex: Tensor must have a storage_offset divisible by 2");
    return view_as(out, t, wk_complex_of(t->dtype), n, t->sizes, strides, t->offset / 2, 1);
}

/* ---- composing real ops ----
 * The temporaries of one composed op, released together; the first failure
 * sticks and makes every later step a no-op returning NULL, so a formula
 * reads as one expression. */
#define MAX_TEMPS 64
typedef struct {
    wick_status st;
    int n;
    wick_tensor *t[MAX_TEMPS];
} scratch;

/* r (`made` points at it) joins the temporaries once `st` (the call that made
 * it, evaluated before *made is read here) succeeded */
static wick_tensor *kept(scratch *s, wick_status st, wick_tensor **made) {
    wick_tensor *r = *made;
    if (st) {
        s->st = st;
        return NULL;
    }
    if (s->n == MAX_TEMPS) { /* a formula here never needs that many */
        wick_tensor_release(r);
        s->st = wick_fail(WICK_ERR_ARGUMENT, "complex: internal error: too many temporaries");
        return NULL;
    }
    return s->t[s->n++] = r;
}
static bool failed(scratch *s, const wick_tensor *a, const wick_tensor *b) {
    if (!s->st && (!a || !b)) s->st = wick_fail(WICK_ERR_ARGUMENT, "complex: internal error: a missing operand");
    return s->st;
}

static wick_tensor *bin(scratch *s, wick_binary_op op, const wick_tensor *a, const wick_tensor *b) {
    wick_tensor *r = NULL;
    return failed(s, a, b) ? NULL : kept(s, wick_binary(&r, op, a, b), &r);
}
static wick_tensor *add(scratch *s, const wick_tensor *a, const wick_tensor *b) { return bin(s, WICK_ADD, a, b); }
static wick_tensor *sub(scratch *s, const wick_tensor *a, const wick_tensor *b) { return bin(s, WICK_SUB, a, b); }
static wick_tensor *mul(scratch *s, const wick_tensor *a, const wick_tensor *b) { return bin(s, WICK_MUL, a, b); }
static wick_tensor *dvd(scratch *s, const wick_tensor *a, const wick_tensor *b) { return bin(s, WICK_DIV, a, b); }
static wick_tensor *un(scratch *s, wick_unary_op op, const wick_tensor *a) {
    wick_tensor *r = NULL;
    return failed(s, a, a) ? NULL : kept(s, wick_unary(&r, op, a), &r);
}
static wick_tensor *as_real(scratch *s, const wick_tensor *z) {
    wick_tensor *r = NULL;
    return failed(s, z, z) ? NULL : kept(s, wick_view_as_real(&r, (wick_tensor *)z), &r);
}
/* a real tensor with a last dim of 2 as complex (copied when its layout needs) */
static wick_tensor *as_complex(scratch *s, const wick_tensor *x) {
    wick_tensor *r = NULL, *c = NULL;
    if (failed(s, x, x)) return NULL;
    if (!kept(s, wick_contiguous(&c, (wick_tensor *)x), &c)) return NULL;
    return kept(s, wick_view_as_complex(&r, c), &r);
}
/* z's real and imaginary parts (views); a real z is its own real part, im NULL */
static void parts(scratch *s, const wick_tensor *z, wick_tensor **re, wick_tensor **im) {
    *re = *im = NULL;
    if (s->st) return;
    if (!is_complex(z)) {
        wick_tensor_retain((wick_tensor *)z);
        *re = kept(s, WICK_OK, (wick_tensor **)&z);
        return;
    }
    wick_tensor *v = as_real(s, z), *r = NULL, *i = NULL;
    if (!v) return;
    *re = kept(s, wick_select(&r, v, z->ndim, 0), &r);
    if (*re) *im = kept(s, wick_select(&i, v, z->ndim, 1), &i);
}
/* re + i im: two real tensors of one shape */
static wick_tensor *make_complex(scratch *s, const wick_tensor *re, const wick_tensor *im) {
    wick_tensor *r = NULL;
    if (failed(s, re, im)) return NULL;
    const wick_tensor *pair[2] = {re, im};
    return as_complex(s, kept(s, wick_stack(&r, 2, pair, re->ndim), &r));
}
/* t converted to `dtype` (a recorded copy: a real t gets the real part of its gradient) */
static wick_tensor *converted(scratch *s, const wick_tensor *t, wick_dtype dtype) {
    wick_tensor *r = NULL;
    if (failed(s, t, t)) return NULL;
    return kept(s, wick_to(&r, (wick_tensor *)t, (wick_options){dtype, t->storage->device, 0}), &r);
}
/* a real t beside the pairs of a complex operand (a 0-dim t as it is: it stays
 * a scalar that does not promote) */
static wick_tensor *unsqueezed_last(scratch *s, const wick_tensor *t) {
    wick_tensor *r = NULL;
    if (failed(s, t, t)) return NULL;
    if (t->ndim == 0) return (wick_tensor *)t;
    return kept(s, wick_unsqueeze(&r, (wick_tensor *)t, t->ndim), &r);
}
/* *out = r (retained), the temporaries freed: the end of every composed op */
static wick_status finish(scratch *s, wick_tensor **out, wick_tensor *r) {
    if (!s->st && out && !r) s->st = wick_fail(WICK_ERR_ARGUMENT, "complex: internal error: no result");
    if (!s->st && out) {
        wick_tensor_retain(r);
        *out = r;
    }
    while (s->n) wick_tensor_release(s->t[--s->n]);
    return s->st;
}

/* ---- arithmetic ---- */

static wick_tensor *number(scratch *s, double v, wick_dtype dtype);

/* a op b where a or b is complex; `result` is the op's result dtype */
static wick_tensor *complex_binary(scratch *s, wick_binary_op op, const wick_tensor *a, const wick_tensor *b,
                                   double alpha, wick_dtype result) {
    wick_tensor *ar, *ai, *br, *bi;
    switch (op) {
    case WICK_ADD:
    case WICK_SUB: {
        wick_tensor *va = as_real(s, converted(s, a, result)), *vb = as_real(s, converted(s, b, result)), *r = NULL;
        if (failed(s, va, vb)) return NULL;
        return as_complex(s, kept(s, wick_add_scaled(&r, va, vb, op == WICK_SUB ? -alpha : alpha), &r));
    }
    case WICK_MUL:
        if (!is_complex(b)) return as_complex(s, mul(s, as_real(s, a), unsqueezed_last(s, b)));
        if (!is_complex(a)) return as_complex(s, mul(s, unsqueezed_last(s, a), as_real(s, b)));
        parts(s, a, &ar, &ai);
        parts(s, b, &br, &bi);
        return make_complex(s, sub(s, mul(s, ar, br), mul(s, ai, bi)), add(s, mul(s, ar, bi), mul(s, ai, br)));
    case WICK_DIV: {
        if (!is_complex(b)) return as_complex(s, dvd(s, as_real(s, a), unsqueezed_last(s, b)));
        parts(s, a, &ar, &ai);
        parts(s, b, &br, &bi);
        wick_tensor *d = add(s, mul(s, br, br), mul(s, bi, bi));
        if (!ai) /* a real: a / b = a conj(b) / |b|^2 */
            return make_complex(s, dvd(s, mul(s, ar, br), d), dvd(s, un(s, WICK_NEG, mul(s, ar, bi)), d));
        return make_complex(s, dvd(s, add(s, mul(s, ar, br), mul(s, ai, bi)), d),
                            dvd(s, sub(s, mul(s, ai, br), mul(s, ar, bi)), d));
    }
    case WICK_POW: { /* a^b = e^(b log a), log the principal one; PyTorch's special numbers exactly:
                      * 1, 2, 3, -1, -2 as products and quotients of a, 0.5 as sqrt a */
        wick_tensor *base = converted(s, a, result);
        double e = b->ndim == 0 && !is_complex(b) && b->storage->device.type == WICK_CPU ? wick_value_as_double(wk_data(b), b->dtype) : 0;
        if (e == 1) { /* a copy */
            parts(s, base, &ar, &ai);
            return make_complex(s, ar, ai);
        }
        if (e == 2 || e == -2) {
            wick_tensor *sq = mul(s, base, base);
            if (e == 2 || !sq) return sq;
            base = sq, e = -1;
        }
        if (e == 3) return mul(s, mul(s, base, base), base);
        if (e == -1) {
            parts(s, base, &ar, &ai);
            return ar ? dvd(s, number(s, 1, ar->dtype), base) : NULL;
        }
        if (e == 0.5) return un(s, WICK_SQRT, base);
        return un(s, WICK_EXP, mul(s, b, un(s, WICK_LOG, base)));
    }
    case WICK_EQ:
    case WICK_NE: { /* both parts equal; either differs */
        wick_tensor *e = bin(s, op, as_real(s, converted(s, a, result)), as_real(s, converted(s, b, result))), *x, *y;
        if (!e) return NULL;
        x = kept(s, wick_select(&x, e, e->ndim - 1, 0), &x);
        y = x ? kept(s, wick_select(&y, e, e->ndim - 1, 1), &y) : NULL;
        return bin(s, op == WICK_EQ ? WICK_BITWISE_AND : WICK_BITWISE_OR, x, y);
    }
    default: {
        const wick_tensor *ops[2] = {a, b};
        s->st = wk_check_real(wick_binary_name(op), 2, ops);
        return NULL;
    }
    }
}

wick_status wk_complex_binary(wick_tensor **out, wick_tensor *inplace, wick_binary_op op, const wick_tensor *a,
                              const wick_tensor *b, double alpha, wick_dtype result) {
    scratch s = {0};
    wick_tensor *r = complex_binary(&s, op, a, b, alpha, result);
    if (!s.st && r && r->dtype != result && op != WICK_EQ && op != WICK_NE) r = converted(&s, r, result);
    if (inplace) {
        if (!s.st) s.st = wick_copy_(inplace, r);
        return finish(&s, NULL, NULL);
    }
    return finish(&s, out, r);
}

/* |z|, and arg z in (-pi, pi] */
/* a 0-dim CPU tensor of `dtype` holding v */
static wick_tensor *number(scratch *s, double v, wick_dtype dtype) {
    wick_tensor *r = NULL;
    return s->st ? NULL : kept(s, wick_full(&r, 0, NULL, v, (wick_options){dtype, wick_cpu(), 0}), &r);
}
static wick_tensor *pick(scratch *s, const wick_tensor *cond, const wick_tensor *a, const wick_tensor *b) {
    wick_tensor *r = NULL;
    return failed(s, cond, a) || failed(s, b, b) ? NULL : kept(s, wick_where(&r, cond, a, b), &r);
}

static wick_tensor *scaled(scratch *s, wick_tensor *t, double c) {
    wick_tensor *r = NULL;
    return s->st || !t ? NULL : kept(s, wick_binary_scalar(&r, WICK_MUL, t, (wick_scalar){c, 0}, 0), &r);
}
/* sqrt(re^2 + im^2); tracked, its gradient at 0 is PyTorch's g sgn(z) = g 0
 * (0, or NaN for an infinite or NaN g), not the NaN of sqrt's infinite slope
 * times 0: there the value is (re + im) 0, which carries that gradient */
static wick_tensor *magnitude(scratch *s, wick_tensor *re, wick_tensor *im) {
    wick_tensor *sq = add(s, mul(s, re, re), mul(s, im, im)), *zero = NULL;
    const wick_tensor *in[1] = {sq};
    if (!sq || !wk_wants_grad(1, in)) return un(s, WICK_SQRT, sq);
    if (!kept(s, wick_binary_scalar(&zero, WICK_EQ, sq, (wick_scalar){0, 1}, 0), &zero)) return NULL;
    wick_tensor *root = un(s, WICK_SQRT, pick(s, zero, number(s, 1, sq->dtype), sq));
    return pick(s, zero, scaled(s, add(s, re, im), 0), root);
}
static wick_tensor *argument(scratch *s, wick_tensor *re, wick_tensor *im) { return bin(s, WICK_ATAN2, im, re); }

static wick_tensor *square(scratch *s, wick_tensor *t) { return mul(s, t, t); }
static wick_tensor *plus_one(scratch *s, wick_tensor *t) { return t ? add(s, t, number(s, 1, t->dtype)) : NULL; }

/* tanh(re + i im) = (t + i u) / (1 + i t u) with t = tanh re, u = tan im:
 * (t (1 + u^2) + i u sech^2 re) / (1 + t^2 u^2), with sech^2 re = 4 e / (1 + e)^2,
 * e = exp(-2 |re|): finite, and so is its gradient, for any re */
static wick_tensor *complex_tanh(scratch *s, wick_tensor *re, wick_tensor *im) {
    wick_tensor *t = un(s, WICK_TANH, re), *u = un(s, WICK_TAN, im), *u2 = square(s, u);
    wick_tensor *d = plus_one(s, mul(s, square(s, t), u2));
    wick_tensor *e = un(s, WICK_EXP, scaled(s, un(s, WICK_ABS, re), -2));
    wick_tensor *sech2 = dvd(s, scaled(s, e, 4), square(s, plus_one(s, e)));
    return make_complex(s, dvd(s, mul(s, t, plus_one(s, u2)), d), dvd(s, mul(s, u, sech2), d));
}

static wick_tensor *complex_unary(scratch *s, wick_unary_op op, const wick_tensor *a) {
    wick_tensor *re, *im;
    if (op == WICK_NEG) return as_complex(s, un(s, WICK_NEG, as_real(s, a)));
    parts(s, a, &re, &im);
    switch (op) {
    case WICK_SIN: /* sin re cosh im + i cos re sinh im */
        return make_complex(s, mul(s, un(s, WICK_SIN, re), un(s, WICK_COSH, im)),
                            mul(s, un(s, WICK_COS, re), un(s, WICK_SINH, im)));
    case WICK_COS: /* cos re cosh im - i sin re sinh im */
        return make_complex(s, mul(s, un(s, WICK_COS, re), un(s, WICK_COSH, im)),
                            un(s, WICK_NEG, mul(s, un(s, WICK_SIN, re), un(s, WICK_SINH, im))));
    case WICK_SINH: /* sinh re cos im + i cosh re sin im */
        return make_complex(s, mul(s, un(s, WICK_SINH, re), un(s, WICK_COS, im)),
                            mul(s, un(s, WICK_COSH, re), un(s, WICK_SIN, im)));
    case WICK_COSH: /* cosh re cos im + i sinh re sin im */
        return make_complex(s, mul(s, un(s, WICK_COSH, re), un(s, WICK_COS, im)),
                            mul(s, un(s, WICK_SINH, re), un(s, WICK_SIN, im)));
    case WICK_TANH: return complex_tanh(s, re, im);
    case WICK_TAN: { /* -i tanh(i z): tanh(-im + i re) = x + i y gives y - i x */
        wick_tensor *x, *y;
        parts(s, complex_tanh(s, un(s, WICK_NEG, im), re), &x, &y);
        return make_complex(s, y, un(s, WICK_NEG, x));
    }
    case WICK_SIGMOID: { /* (1 + tanh(z / 2)) / 2, finite where 1 / (1 + e^-z) overflows */
        wick_tensor *x, *y;
        parts(s, complex_tanh(s, scaled(s, re, 0.5), scaled(s, im, 0.5)), &x, &y);
        return make_complex(s, scaled(s, plus_one(s, x), 0.5), scaled(s, y, 0.5));
    }
    case WICK_ABS: return magnitude(s, re, im);
    case WICK_EXP: { /* e^re (cos im + i sin im) */
        wick_tensor *m = un(s, WICK_EXP, re);
        return make_complex(s, mul(s, m, un(s, WICK_COS, im)), mul(s, m, un(s, WICK_SIN, im)));
    }
    case WICK_LOG: return make_complex(s, un(s, WICK_LOG, magnitude(s, re, im)), argument(s, re, im));
    case WICK_SQRT: { /* sqrt|z| e^(i arg(z) / 2) */
        wick_tensor *m = un(s, WICK_SQRT, magnitude(s, re, im)), *h = scaled(s, argument(s, re, im), 0.5);
        return make_complex(s, mul(s, m, un(s, WICK_COS, h)), mul(s, m, un(s, WICK_SIN, h)));
    }
    case WICK_RECIPROCAL: { /* conj(z) / |z|^2 */
        wick_tensor *d = add(s, mul(s, re, re), mul(s, im, im));
        return make_complex(s, dvd(s, re, d), dvd(s, un(s, WICK_NEG, im), d));
    }
    default: s->st = wk_check_real(wick_unary_name(op), 1, &a); return NULL;
    }
}

wick_status wk_complex_unary(wick_tensor **out, wick_tensor *inplace, wick_unary_op op, const wick_tensor *a) {
    if (inplace && op == WICK_ABS) /* (its result is real: PyTorch refuses it too) */
        return wick_fail(WICK_ERR_DTYPE, "abs_: in-place abs is not supported for complex tensors (use t:abs())");
    scratch s = {0};
    wick_tensor *r = complex_unary(&s, op, a);
    if (inplace) {
        if (!s.st) s.st = wick_copy_(inplace, r);
        return finish(&s, NULL, NULL);
    }
    return finish(&s, out, r);
}

/* ---- parts, conjugate, construction ---- */

wick_status wick_real(wick_tensor **out, wick_tensor *t) {
    if (!is_complex(t)) { /* PyTorch's real of a real tensor is the tensor */
        wick_tensor_retain(t);
        *out = t;
        return WICK_OK;
    }
    scratch s = {0};
    wick_tensor *re, *im;
    parts(&s, t, &re, &im);
    return finish(&s, out, re);
}

wick_status wick_imag(wick_tensor **out, wick_tensor *t) {
    if (!is_complex(t))
        return wick_fail(WICK_ERR_DTYPE, "imag is not implemented for tensors with non-complex dtypes (got %s)",
                         wick_dtype_name(t->dtype));
    scratch s = {0};
    wick_tensor *re, *im;
    parts(&s, t, &re, &im);
    return finish(&s, out, im);
}

wick_status wick_conj(wick_tensor **out, const wick_tensor *t) {
    scratch s = {0};
    wick_tensor *re, *im, *r;
    if (!is_complex(t)) return wick_clone(out, t); /* (PyTorch's is t itself; a copy reads the same) */
    parts(&s, t, &re, &im);
    r = make_complex(&s, re, un(&s, WICK_NEG, im));
    return finish(&s, out, r);
}

wick_status wick_angle(wick_tensor **out, const wick_tensor *t) {
    scratch s = {0};
    wick_tensor *re, *im = NULL, *zero = NULL;
    parts(&s, t, &re, &im);
    if (!im && re) { /* a real x: pi where x < 0, else 0 (NaN stays NaN), as atan2(0, x) */
        if (!wick_dtype_is_floating(re->dtype)) re = converted(&s, re, wick_default_float_dtype());
        if (re) im = kept(&s, wick_full(&zero, 0, NULL, 0, (wick_options){re->dtype, wick_cpu(), 0}), &zero);
    }
    return finish(&s, out, argument(&s, re, im));
}

wick_status wick_complex(wick_tensor **out, const wick_tensor *re, const wick_tensor *im) {
    if ((re->dtype != WICK_FLOAT32 && re->dtype != WICK_FLOAT64) || re->dtype != im->dtype)
        return wick_fail(WICK_ERR_DTYPE,
                         "complex: expected both inputs to be float32 or float64 tensors of one dtype, got %s and %s",
                         wick_dtype_name(re->dtype), wick_dtype_name(im->dtype));
    const wick_tensor *ts[2] = {re, im};
    const char *names[2] = {"real", "imag"};
    TRY(wk_check_same_device("complex", 2, ts, names));
    int ndim;
    int64_t shape[WICK_MAX_DIMS];
    TRY(wk_broadcast_shapes("complex", re->ndim, re->sizes, im->ndim, im->sizes, &ndim, shape));
    scratch s = {0};
    wick_tensor *a = NULL, *b = NULL;
    kept(&s, wick_expand(&a, (wick_tensor *)re, ndim, shape), &a);
    if (!s.st) kept(&s, wick_expand(&b, (wick_tensor *)im, ndim, shape), &b);
    return finish(&s, out, make_complex(&s, a, b));
}

/* ---- reductions, products ---- */

wick_status wk_complex_reduce(wick_tensor **out, wick_reduce_op op, const wick_tensor *a, int dim, int keepdim) {
    if (op != WICK_SUM && op != WICK_MEAN) return wk_check_real(wick_reduce_name(op), 1, &a);
    scratch s = {0};
    wick_tensor *v = as_real(&s, a), *r = NULL, *flat = NULL, *shaped = NULL;
    if (v && (dim < 0 || a->ndim == 0)) { /* every element: the pairs as rows */
        int64_t rows[2] = {-1, 2}, kept_shape[WICK_MAX_DIMS + 1];
        kept(&s, wick_reshape(&flat, v, 2, rows), &flat);
        if (flat) kept(&s, wick_reduce(&r, NULL, op, flat, 0, 0, 0), &r);
        if (r && keepdim && a->ndim) {
            for (int i = 0; i < a->ndim; i++) kept_shape[i] = 1;
            kept_shape[a->ndim] = 2;
            kept(&s, wick_reshape(&shaped, r, a->ndim + 1, kept_shape), &shaped);
            r = shaped;
        }
    } else if (v) {
        kept(&s, wick_reduce(&r, NULL, op, v, dim, keepdim, 0), &r);
    }
    return finish(&s, out, as_complex(&s, r));
}

typedef wick_status (*product_fn)(wick_tensor **out, const wick_tensor *a, const wick_tensor *b);
static wick_tensor *product(scratch *s, product_fn fn, const wick_tensor *a, const wick_tensor *b) {
    wick_tensor *r = NULL;
    return failed(s, a, b) ? NULL : kept(s, fn(&r, a, b), &r);
}

/* (ar + i ai)(br + i bi) for matmul, mm and bmm; a real operand has no ai or bi */
wick_status wk_complex_product(wick_tensor **out, product_fn fn, const wick_tensor *a, const wick_tensor *b) {
    scratch s = {0};
    wick_tensor *ar, *ai, *br, *bi, *r;
    /* two complex operands of one dtype, or a real one of the complex one's parts' dtype (named as given, not
     * as the parts: complex64 and float64 are what differ) */
    const wick_tensor *c = is_complex(a) ? a : b, *o = c == a ? b : a;
    wick_dtype part = c->dtype == WICK_COMPLEX64 ? WICK_FLOAT32 : WICK_FLOAT64;
    if (is_complex(o) ? o->dtype != c->dtype : o->dtype != part)
        return wick_fail(WICK_ERR_DTYPE, "expected both operands of a product to have the same dtype, got %s and %s",
                         wick_dtype_name(a->dtype), wick_dtype_name(b->dtype));
    parts(&s, a, &ar, &ai);
    parts(&s, b, &br, &bi);
    if (!ai) /* (the parts' dtype must match the real operand's, as for real products) */
        r = make_complex(&s, product(&s, fn, ar, br), product(&s, fn, ar, bi));
    else if (!bi)
        r = make_complex(&s, product(&s, fn, ar, br), product(&s, fn, ai, br));
    else
        r = make_complex(&s, sub(&s, product(&s, fn, ar, br), product(&s, fn, ai, bi)),
                         add(&s, product(&s, fn, ar, bi), product(&s, fn, ai, br)));
    return finish(&s, out, r);
}

/* where(cond, a, b): of the pairs, the condition over both parts */
wick_status wk_complex_where(wick_tensor **out, const wick_tensor *cond, const wick_tensor *a, const wick_tensor *b,
                             wick_dtype result) {
    scratch s = {0};
    wick_tensor *r = NULL, *va = as_real(&s, converted(&s, a, result)), *vb = as_real(&s, converted(&s, b, result)),
                *c = unsqueezed_last(&s, cond);
    if (!failed(&s, va, vb) && c) kept(&s, wick_where(&r, c, va, vb), &r);
    return finish(&s, out, as_complex(&s, r));
}

/* x weight^T + bias, as a matmul of the parts */
wick_status wk_complex_linear(wick_tensor **out, const wick_tensor *x, const wick_tensor *weight, const wick_tensor *bias) {
    scratch s = {0};
    wick_tensor *wt = NULL, *r;
    kept(&s, wick_transpose(&wt, (wick_tensor *)weight, 0, 1), &wt);
    r = product(&s, wick_matmul, x, wt);
    if (bias) r = add(&s, r, bias);
    return finish(&s, out, r);
}

/* ---- copies and fills (not recorded: wick_copy_ and wick_fill_ record) ---- */

static wick_status copy_parts(wick_tensor *dst, const wick_tensor *src) {
    scratch s = {0};
    wick_tensor *dr, *di, *sr, *si;
    parts(&s, dst, &dr, &di);
    parts(&s, src, &sr, &si);
    if (s.st) return finish(&s, NULL, NULL);
    if (di && si) { /* (the pairs broadcast as the elements do) */
        wick_tensor *vd = as_real(&s, dst), *vs = as_real(&s, src);
        if (vd && vs) s.st = wick_copy_(vd, vs);
    } else if (di) {
        if (!(s.st = wick_copy_(dr, sr))) s.st = wick_fill_(di, 0);
    } else {
        s.st = wick_copy_(dr, sr); /* a real dst takes the real part, as PyTorch's */
    }
    return finish(&s, NULL, NULL);
}

wick_status wk_complex_copy(wick_tensor *dst, const wick_tensor *src) {
    wick_status st;
    WK_NO_GRAD(st = copy_parts(dst, src));
    return st;
}

static wick_status fill_parts(wick_tensor *t, double re, double im) {
    scratch s = {0};
    wick_tensor *tr, *ti;
    parts(&s, t, &tr, &ti);
    if (!s.st && !(s.st = wick_fill_(tr, re))) s.st = wick_fill_(ti, im);
    return finish(&s, NULL, NULL);
}

wick_status wk_complex_fill(wick_tensor *t, double re, double im) {
    wick_status st;
    WK_NO_GRAD(st = fill_parts(t, re, im));
    return st;
}
