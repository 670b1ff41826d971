/* The backward formula of every differentiable op of the core, and the record
 * functions that ops call after a successful forward. Backward functions run
 * with grad mode off and are written with the core's own ops, so they work on
 * every backend. The engine reduces broadcast gradients and converts dtypes. */
#include "autograd.h"

#include <math.h>

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

static wick_scalar num(double v) { return (wick_scalar){v, v == floor(v)}; }

/* r = a op b, taking over a's reference (a chain of ops without temporaries). */
static wick_status chain(wick_tensor **a, wick_binary_op op, const wick_tensor *b) {
    wick_tensor *r;
    TRY(wick_binary(&r, op, *a, b));
    wick_tensor_release(*a);
    *a = r;
    return WICK_OK;
}

/* *r where mask holds, 0 elsewhere, taking over *r's reference: a selection, not a product,
 * so an infinite gradient where the mask is off gives 0, not NaN (PyTorch's clamp and
 * maximum backward: cdist's clamp(min=0).sqrt() at a zero distance) */
static wick_status keep_where(wick_tensor **r, const wick_tensor *mask) {
    wick_tensor *zero, *w;
    TRY(wick_full(&zero, 0, NULL, 0, (wick_options){(*r)->dtype, wick_cpu()}));
    wick_status st = wick_where(&w, mask, *r, zero);
    wick_tensor_release(zero);
    TRY(st);
    wick_tensor_release(*r);
    *r = w;
    return WICK_OK;
}

/* *d with its zeros made ones: a denominator whose numerator is 0 wherever
 * it is (the gradient there is 0, not 0 / 0). */
static wick_status nonzero_denominator(wick_tensor **d) {
    wick_tensor *zero;
    TRY(wick_binary_scalar(&zero, WICK_EQ, *d, (wick_scalar){0, 1}, 0));
    wick_status st = chain(d, WICK_ADD, zero);
    wick_tensor_release(zero);
    return st;
}

static wick_status chain_scalar(wick_tensor **a, wick_binary_op op, double s) {
    wick_tensor *r;
    TRY(wick_binary_scalar(&r, op, *a, num(s), 0));
    wick_tensor_release(*a);
    *a = r;
    return WICK_OK;
}

static wick_status retained(wick_tensor **out, wick_tensor *t) {
    wick_tensor_retain(t);
    *out = t;
    return WICK_OK;
}

/* Under create_graph, *r + 0 x: x joins the gradient's graph with a zero
 * derivative, as PyTorch's threshold_backward (relu's backward) has for its
 * input, so a parameter reached only through relu's mask gets zeros in a
 * second backward (a WGAN-GP penalty alone), not none. where(false, x, 0) is
 * 0 even where x is inf or NaN. */
static wick_status zero_edge(wick_tensor **r, const wick_tensor *x) {
    if (!wk_wants_grad(1, &x)) return WICK_OK;
    wick_tensor *no = NULL, *zero = NULL, *z = NULL;
    wick_status st = wick_full(&no, 0, NULL, 0, (wick_options){WICK_BOOL, wick_cpu()});
    if (!st) st = wick_full(&zero, 0, NULL, 0, (wick_options){x->dtype, wick_cpu()});
    if (!st) st = wick_where(&z, no, x, zero);
    if (!st) st = chain(r, WICK_ADD, z);
    wick_tensor_release(no);
    wick_tensor_release(zero);
    wick_tensor_release(z);
    return st;
}

/* ---- unary ---- */

static wick_status unary_formula(wk_node *n, wick_tensor *g, wick_tensor *x, wick_tensor *y, wick_tensor **out) {
    wick_tensor *r = NULL, *t;
    switch ((wick_unary_op)n->op) {
    case WICK_NEG: TRY(wick_unary(&r, WICK_NEG, g)); break;
    case WICK_ABS: /* g sign(x), PyTorch's (sign 0 at 0 and NaN: an infinite g stays infinite, MAPE's) */
        TRY(wick_unary(&r, WICK_SIGN, x));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_EXP: TRY(wick_binary(&r, WICK_MUL, g, y)); break;
    case WICK_LOG: TRY(wick_binary(&r, WICK_DIV, g, x)); break;
    case WICK_SQRT: /* g / (2 sqrt x) */
        TRY(wick_binary_scalar(&t, WICK_MUL, y, num(2), 0));
        {
            wick_status st = wick_binary(&r, WICK_DIV, g, t);
            wick_tensor_release(t);
            TRY(st);
        }
        break;
    case WICK_TANH: /* g (1 - y^2) */
        TRY(wick_binary(&t, WICK_MUL, y, y));
        TRY(wick_binary_scalar(&r, WICK_SUB, t, num(1), 1));
        wick_tensor_release(t);
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_SIGMOID: /* g y (1 - y) */
        TRY(wick_binary_scalar(&r, WICK_SUB, y, num(1), 1));
        TRY(chain(&r, WICK_MUL, y));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_RELU:
        /* fused where the backend has it and no dtype changes (x <= 0 ? 0 : g,
         * PyTorch's threshold_backward: a NaN gradient at x <= 0 gives 0, and
         * a NaN x passes g on) */
        if (!wk_grad_mode && x->storage->backend && x->storage->backend->act_backward && g->dtype == x->dtype &&
            (x->dtype == WICK_FLOAT32 || x->dtype == WICK_FLOAT64)) {
            TRY(wk_act_backward(&r, g, x, WK_ACT_RELU));
            break;
        }
        {
            wick_tensor *off = NULL, *zero = NULL;
            TRY(wick_binary_scalar(&off, WICK_LE, x, num(0), 0));
            wick_status st = wick_full(&zero, 0, NULL, 0, (wick_options){g->dtype, wick_cpu()});
            if (!st) st = wick_where(&r, off, zero, g);
            wick_tensor_release(off);
            wick_tensor_release(zero);
            TRY(st);
        }
        if (wk_grad_mode) TRY(zero_edge(&r, x));
        break;
    case WICK_ERF: /* g 2/sqrt(pi) exp(-x^2) */
        TRY(wick_binary(&r, WICK_MUL, x, x));
        TRY(chain_scalar(&r, WICK_MUL, -1));
        TRY(wick_unary(&t, WICK_EXP, r));
        wick_tensor_release(r);
        r = t;
        TRY(chain_scalar(&r, WICK_MUL, 1.1283791670955126));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_GELU_TANH: TRY(wk_act_backward(&r, g, x, WK_ACT_GELU_TANH)); break;
    case WICK_GELU: { /* g (Phi(x) + x phi(x)), Phi(x) = (1 + erf(x/sqrt 2))/2 */
        if (!wk_grad_mode && x->storage->backend && x->storage->backend->act_backward) { /* fused */
            TRY(wk_act_backward(&r, g, x, WK_ACT_GELU));
            break;
        }
        wick_tensor *phi;
        TRY(wick_binary(&t, WICK_MUL, x, x));
        TRY(chain_scalar(&t, WICK_MUL, -0.5));
        TRY(wick_unary(&phi, WICK_EXP, t));
        wick_tensor_release(t);
        TRY(chain_scalar(&phi, WICK_MUL, 0.3989422804014327));
        TRY(chain(&phi, WICK_MUL, x));
        TRY(wick_binary_scalar(&t, WICK_MUL, x, num(0.7071067811865476), 0));
        TRY(wick_unary(&r, WICK_ERF, t));
        wick_tensor_release(t);
        TRY(chain_scalar(&r, WICK_ADD, 1));
        TRY(chain_scalar(&r, WICK_MUL, 0.5));
        wick_status st = chain(&r, WICK_ADD, phi);
        wick_tensor_release(phi);
        TRY(st);
        TRY(chain(&r, WICK_MUL, g));
        break;
    }
    case WICK_SIN: /* g cos x */
        TRY(wick_unary(&r, WICK_COS, x));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_COS: /* -g sin x */
        TRY(wick_unary(&r, WICK_SIN, x));
        TRY(chain_scalar(&r, WICK_MUL, -1));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_TAN: /* g (1 + y^2) */
        TRY(wick_binary(&r, WICK_MUL, y, y));
        TRY(chain_scalar(&r, WICK_ADD, 1));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_ASIN:
    case WICK_ACOS: /* +-g / sqrt(1 - x^2) */
        TRY(wick_binary(&r, WICK_MUL, x, x));
        TRY(chain_scalar(&r, WICK_MUL, -1));
        TRY(chain_scalar(&r, WICK_ADD, 1));
        TRY(wick_unary(&t, WICK_RSQRT, r));
        wick_tensor_release(r);
        r = t;
        if (n->op == WICK_ACOS) TRY(chain_scalar(&r, WICK_MUL, -1));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_ATAN: /* g / (1 + x^2) */
        TRY(wick_binary(&r, WICK_MUL, x, x));
        TRY(chain_scalar(&r, WICK_ADD, 1));
        TRY(wick_binary(&t, WICK_DIV, g, r));
        wick_tensor_release(r);
        r = t;
        break;
    case WICK_SINH:
    case WICK_COSH: /* g cosh x, g sinh x */
        TRY(wick_unary(&r, n->op == WICK_SINH ? WICK_COSH : WICK_SINH, x));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_LOG2:
    case WICK_LOG10: /* g / (x ln base) */
        TRY(wick_binary_scalar(&t, WICK_MUL, x, num(n->op == WICK_LOG2 ? 0.6931471805599453 : 2.302585092994046), 0));
        {
            wick_status st = wick_binary(&r, WICK_DIV, g, t);
            wick_tensor_release(t);
            TRY(st);
        }
        break;
    case WICK_LOG1P: /* g / (1 + x) */
        TRY(wick_binary_scalar(&t, WICK_ADD, x, num(1), 0));
        {
            wick_status st = wick_binary(&r, WICK_DIV, g, t);
            wick_tensor_release(t);
            TRY(st);
        }
        break;
    case WICK_EXPM1: /* g (y + 1) */
        TRY(wick_binary_scalar(&r, WICK_ADD, y, num(1), 0));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_RSQRT: /* -g y^3 / 2 */
        TRY(wick_binary(&r, WICK_MUL, y, y));
        TRY(chain(&r, WICK_MUL, y));
        TRY(chain_scalar(&r, WICK_MUL, -0.5));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_RECIPROCAL: /* -g y^2 */
        TRY(wick_binary(&r, WICK_MUL, y, y));
        TRY(chain_scalar(&r, WICK_MUL, -1));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_FRAC: TRY(retained(&r, g)); break;
    case WICK_FLOOR:
    case WICK_CEIL:
    case WICK_ROUND:
    case WICK_TRUNC:
    case WICK_SIGN: /* steps: zero almost everywhere, like PyTorch */
        TRY(wick_full(&r, g->ndim, g->sizes, 0, (wick_options){g->dtype, g->storage->device}));
        break;
    case WICK_ERFC: /* -g 2/sqrt(pi) exp(-x^2) */
        TRY(wick_binary(&r, WICK_MUL, x, x));
        TRY(chain_scalar(&r, WICK_MUL, -1));
        TRY(wick_unary(&t, WICK_EXP, r));
        wick_tensor_release(r);
        r = t;
        TRY(chain_scalar(&r, WICK_MUL, -1.1283791670955126));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_ERFINV: /* g sqrt(pi)/2 exp(y^2) */
        TRY(wick_binary(&r, WICK_MUL, y, y));
        TRY(wick_unary(&t, WICK_EXP, r));
        wick_tensor_release(r);
        r = t;
        TRY(chain_scalar(&r, WICK_MUL, 0.88622692545275801365));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_LGAMMA: /* g digamma(x) */
    case WICK_DIGAMMA: /* g trigamma(x) */
        TRY(wick_unary(&r, n->op == WICK_LGAMMA ? WICK_DIGAMMA : WICK_TRIGAMMA, x));
        TRY(chain(&r, WICK_MUL, g));
        break;
    case WICK_TRIGAMMA:
        return wick_fail(WICK_ERR_UNSUPPORTED,
                         "polygamma(1, x) has no derivative in this version of wick (polygamma of order 2 is not "
                         "implemented)");
    default: return wick_fail(WICK_ERR_UNSUPPORTED, "no derivative for %s", wick_unary_name((wick_unary_op)n->op));
    }
    *out = r;
    return WICK_OK;
}

/* t in float32 (a new reference), or NULL for NULL */
static wick_status widened(wick_tensor **out, wick_tensor *t) {
    *out = NULL;
    return t ? wick_to(out, t, (wick_options){WICK_FLOAT32, t->storage->device}) : WICK_OK;
}

/* The backward of tanh, sigmoid and gelu is one kernel in PyTorch (tanh_backward, ...), computed
 * in float32 for float16 and bfloat16 and rounded once; wick's formulas are several ops, so for
 * those dtypes they run in float32 and the gradient is rounded at the end (in bfloat16, rounding
 * after each op changed half of tanh's gradients by an ulp). */
static wick_status unary_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *x = n->saved[0], *y = n->saved[1];
    bool fused = n->op == WICK_TANH || n->op == WICK_SIGMOID || n->op == WICK_GELU;
    if (!fused || (g->dtype != WICK_FLOAT16 && g->dtype != WICK_BFLOAT16)) return unary_formula(n, g, x, y, &grads[0]);
    wick_tensor *g32 = NULL, *x32 = NULL, *y32 = NULL, *r = NULL;
    wick_status st = widened(&g32, g);
    if (!st) st = widened(&x32, x);
    if (!st) st = widened(&y32, y);
    if (!st) st = unary_formula(n, g32, x32, y32, &r);
    if (!st) st = wick_to(&grads[0], r, (wick_options){g->dtype, g->storage->device});
    wick_tensor_release(g32);
    wick_tensor_release(x32);
    wick_tensor_release(y32);
    wick_tensor_release(r);
    return st;
}

wick_status wk_record_unary(wick_tensor *out, wick_unary_op op, const wick_tensor *a) {
    static const char *const names[] = {
        [WICK_NEG] = "NegBackward", [WICK_ABS] = "AbsBackward", [WICK_EXP] = "ExpBackward",
        [WICK_LOG] = "LogBackward", [WICK_SQRT] = "SqrtBackward", [WICK_TANH] = "TanhBackward",
        [WICK_SIGMOID] = "SigmoidBackward", [WICK_RELU] = "ReluBackward", [WICK_ERF] = "ErfBackward",
        [WICK_GELU] = "GeluBackward", [WICK_GELU_TANH] = "GeluBackward", [WICK_SIN] = "SinBackward",
        [WICK_COS] = "CosBackward", [WICK_TAN] = "TanBackward", [WICK_ASIN] = "AsinBackward",
        [WICK_ACOS] = "AcosBackward", [WICK_ATAN] = "AtanBackward", [WICK_SINH] = "SinhBackward",
        [WICK_COSH] = "CoshBackward", [WICK_LOG2] = "Log2Backward", [WICK_LOG10] = "Log10Backward",
        [WICK_LOG1P] = "Log1pBackward", [WICK_EXPM1] = "Expm1Backward", [WICK_RSQRT] = "RsqrtBackward",
        [WICK_RECIPROCAL] = "ReciprocalBackward", [WICK_FRAC] = "FracBackward", [WICK_FLOOR] = "FloorBackward",
        [WICK_CEIL] = "CeilBackward", [WICK_ROUND] = "RoundBackward", [WICK_TRUNC] = "TruncBackward",
        [WICK_SIGN] = "SignBackward", [WICK_ERFC] = "ErfcBackward", [WICK_ERFINV] = "ErfinvBackward",
        [WICK_LGAMMA] = "LgammaBackward", [WICK_DIGAMMA] = "DigammaBackward", [WICK_TRIGAMMA] = "PolygammaBackward",
        [WICK_BITWISE_NOT] = NULL /* integers only: never tracked */};
    _Static_assert(sizeof names / sizeof *names == WICK_NUM_UNARY, "a backward name for every unary op");
    if (!names[op]) return wick_fail(WICK_ERR_DTYPE, "%s: has no gradient", wick_unary_name(op));
    wk_node *n;
    TRY(wk_record(out, names[op], unary_backward, op, 1, &a, &n));
    n->twice = op != WICK_GELU_TANH; /* the others' formulas are recorded ops (fused ones only without grad) */
    switch (op) { /* what the formula reads: the output, nothing, or the input */
    case WICK_EXP: case WICK_SQRT: case WICK_TANH: case WICK_SIGMOID: case WICK_TAN: case WICK_EXPM1:
    case WICK_RSQRT: case WICK_RECIPROCAL: case WICK_ERFINV: return wk_save(n, 1, out, out);
    case WICK_NEG: case WICK_FRAC: case WICK_FLOOR: case WICK_CEIL: case WICK_ROUND: case WICK_TRUNC:
    case WICK_SIGN: return WICK_OK;
    default: return wk_save(n, 0, a, out);
    }
}

/* ---- binary ---- */

/* *t = (mask ? 0 : *t) */
static wick_status zero_where(wick_tensor **t, const wick_tensor *mask) {
    wick_tensor *zero, *r;
    TRY(wick_full(&zero, 0, NULL, 0, (wick_options){(*t)->dtype, wick_cpu()}));
    wick_status st = wick_where(&r, mask, zero, *t);
    wick_tensor_release(zero);
    TRY(st);
    wick_tensor_release(*t);
    *t = r;
    return WICK_OK;
}

static wick_status binary_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *a = n->saved[0], *b = n->saved[1], *t;
    double alpha = n->scalars[0];
    bool need_a = n->edges[0].node || n->edges[0].leaf, need_b = n->edges[1].node || n->edges[1].leaf;
    switch ((wick_binary_op)n->op) {
    case WICK_ADD:
    case WICK_SUB:
        if (need_a) TRY(retained(&grads[0], g));
        if (need_b) TRY(wick_binary_scalar(&grads[1], WICK_MUL, g, num(n->op == WICK_SUB ? -alpha : alpha), 0));
        break;
    case WICK_MUL:
        if (need_a) TRY(wick_binary(&grads[0], WICK_MUL, g, b));
        if (need_b) TRY(wick_binary(&grads[1], WICK_MUL, g, a));
        break;
    case WICK_DIV:
        if (need_a) TRY(wick_binary(&grads[0], WICK_DIV, g, b));
        if (need_b) { /* -g a / b^2 */
            TRY(wick_binary(&t, WICK_MUL, g, a));
            TRY(chain(&t, WICK_DIV, b));
            TRY(chain(&t, WICK_DIV, b));
            TRY(wick_unary(&grads[1], WICK_NEG, t));
            wick_tensor_release(t);
        }
        break;
    case WICK_POW:
        if (need_a) { /* g b a^(b-1) */
            TRY(wick_binary_scalar(&t, WICK_SUB, b, num(1), 0));
            wick_tensor *p;
            wick_status st = wick_binary(&p, WICK_POW, a, t);
            wick_tensor_release(t);
            TRY(st);
            TRY(chain(&p, WICK_MUL, b));
            TRY(chain(&p, WICK_MUL, g));
            /* 0 where b == 0, like PyTorch (not 0 * 0^-1 = nan at a == 0) */
            if (!(st = wick_binary_scalar(&t, WICK_EQ, b, num(0), 0))) {
                st = zero_where(&p, t);
                wick_tensor_release(t);
            }
            if (st) return wick_tensor_release(p), st;
            grads[0] = p;
        }
        if (need_b) { /* g a^b log a, and 0 where a == 0 and b >= 0, like PyTorch */
            TRY(wick_binary(&t, WICK_POW, a, b));
            wick_tensor *l, *m;
            TRY(wick_unary(&l, WICK_LOG, a));
            wick_status st = chain(&t, WICK_MUL, l);
            wick_tensor_release(l);
            TRY(st);
            TRY(chain(&t, WICK_MUL, g));
            /* u = (b >= 0 ? 0 : t), then t = (a == 0 ? u : t) */
            wick_tensor *u = t;
            wick_tensor_retain(u);
            if (!(st = wick_binary_scalar(&m, WICK_GE, b, num(0), 0))) {
                st = zero_where(&u, m);
                wick_tensor_release(m);
            }
            if (!st && !(st = wick_binary_scalar(&m, WICK_EQ, a, num(0), 0))) {
                wick_tensor *r;
                if (!(st = wick_where(&r, m, u, t))) {
                    wick_tensor_release(t);
                    t = r;
                }
                wick_tensor_release(m);
            }
            wick_tensor_release(u);
            if (st) return wick_tensor_release(t), st;
            grads[1] = t;
        }
        break;
    case WICK_MAXIMUM:
    case WICK_MINIMUM: { /* the larger (smaller) side gets g; ties split it evenly, like PyTorch
                          * (where(a == b, g / 2, g) masked where the side loses: a NaN keeps g on both) */
        wick_binary_op lose = n->op == WICK_MAXIMUM ? WICK_LT : WICK_GT;
        wick_tensor *eq, *m;
        TRY(wick_binary(&eq, WICK_EQ, a, b));
        TRY(chain_scalar(&eq, WICK_MUL, 0.5));
        for (int side = 0; side < 2; side++) {
            if (!(side ? need_b : need_a)) continue;
            wick_tensor *keep = NULL, *out = NULL;
            m = NULL;
            wick_status st = wick_binary(&out, lose, side ? b : a, side ? a : b);
            if (!st) st = chain(&out, WICK_ADD, eq);
            if (!st) st = wick_binary_scalar(&m, WICK_SUB, out, num(1), 1); /* the side's share: 1, 1/2 at a tie, 0 */
            wick_tensor_release(out);
            if (!st) st = wick_binary_scalar(&keep, WICK_GT, m, num(0), 0);
            if (!st) st = chain(&m, WICK_MUL, g);
            if (!st) st = keep_where(&m, keep); /* the losing side: 0, also for an infinite g */
            wick_tensor_release(keep);
            if (st) return wick_tensor_release(m), wick_tensor_release(eq), st;
            grads[side] = m;
        }
        wick_tensor_release(eq);
        break;
    }
    case WICK_FMOD:
    case WICK_REMAINDER: /* a - q b with q = trunc(a / b) (fmod), floor(a / b) (remainder): g and -g q */
        if (need_a) TRY(retained(&grads[0], g));
        if (need_b) {
            TRY(wick_binary(&t, WICK_DIV, a, b));
            wick_tensor *q;
            wick_status st = wick_unary(&q, n->op == WICK_FMOD ? WICK_TRUNC : WICK_FLOOR, t);
            wick_tensor_release(t);
            TRY(st);
            TRY(chain_scalar(&q, WICK_MUL, -1));
            TRY(chain(&q, WICK_MUL, g));
            grads[1] = q;
        }
        break;
    case WICK_ATAN2: { /* atan2(a, b): g b / (a^2 + b^2), -g a / (a^2 + b^2) */
        wick_tensor *d, *s2;
        TRY(wick_binary(&d, WICK_MUL, a, a));
        wick_status st = wick_binary(&s2, WICK_MUL, b, b);
        if (!st) st = chain(&d, WICK_ADD, s2);
        wick_tensor_release(s2);
        if (!st) st = nonzero_denominator(&d); /* at (0, 0): 0, as PyTorch's */
        for (int side = 0; !st && side < 2; side++) {
            if (!(side ? need_b : need_a)) continue;
            wick_tensor *m;
            st = wick_binary(&m, WICK_MUL, g, side ? a : b);
            if (!st) st = chain(&m, WICK_DIV, d);
            if (!st && side) st = chain_scalar(&m, WICK_MUL, -1);
            if (!st) grads[side] = m;
        }
        wick_tensor_release(d);
        TRY(st);
        break;
    }
    default: break; /* comparisons have no gradient */
    }
    return WICK_OK;
}

wick_status wk_record_binary(wick_tensor *out, wick_binary_op op, const wick_tensor *a, const wick_tensor *b,
                             double alpha) {
    static const char *const names[WICK_NUM_BINARY] = {
        [WICK_ADD] = "AddBackward", [WICK_SUB] = "SubBackward", [WICK_MUL] = "MulBackward",
        [WICK_DIV] = "DivBackward", [WICK_POW] = "PowBackward", [WICK_MAXIMUM] = "MaximumBackward",
        [WICK_MINIMUM] = "MinimumBackward", [WICK_FMOD] = "FmodBackward", [WICK_REMAINDER] = "RemainderBackward",
        [WICK_ATAN2] = "Atan2Backward"};
    if (!names[op]) return WICK_OK; /* comparisons: bool results are not differentiable */
    const wick_tensor *in[2] = {a, b};
    wk_node *n;
    TRY(wk_record(out, names[op], binary_backward, op, 2, in, &n));
    n->twice = true;
    n->scalars[0] = alpha;
    if (op == WICK_ADD || op == WICK_SUB) return WICK_OK;
    /* mul and div need a only for b's gradient (mul needs b only for a's): as
     * PyTorch, x[1] * 2 keeps no view of x alive, so x[1] = x[1] * 2 may write x */
    bool need_a = n->edges[0].node || n->edges[0].leaf, need_b = n->edges[1].node || n->edges[1].leaf;
    if ((op != WICK_MUL && op != WICK_DIV) || need_b) TRY(wk_save(n, 0, a, out));
    if (op != WICK_MUL || need_a) TRY(wk_save(n, 1, b, out));
    return WICK_OK;
}

/* ---- clamp, where ---- */

/* g where lo < x < hi, 0 elsewhere (on the bounds too, as PyTorch 2's); an
 * infinite bound is no bound (clamp_min's gradient at x = inf is g). Clamp's
 * keeps g where x is inside (a NaN x gets 0), hardtanh's (n->op 1) zeroes it
 * where x is outside (a NaN x keeps g), as PyTorch's two backwards. */
static wick_status clamp_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    const double bound[2] = {n->scalars[0], n->scalars[1]};
    const wick_binary_op inside[2] = {WICK_GT, WICK_LT}, outside[2] = {WICK_LE, WICK_GE};
    bool hardtanh = n->op == 1;
    wick_tensor *x = n->saved[0], *r = NULL, *mask = NULL, *zero = NULL;
    wick_status st = retained(&r, g);
    if (!st && hardtanh) st = wick_full(&zero, 0, NULL, 0, (wick_options){g->dtype, wick_cpu()});
    for (int i = 0; i < 2 && !st; i++) {
        if (bound[i] == (i ? INFINITY : -INFINITY)) continue;
        st = wick_binary_scalar(&mask, hardtanh ? outside[i] : inside[i], x, num(bound[i]), 0);
        if (!st && !hardtanh) st = keep_where(&r, mask);
        if (!st && hardtanh) {
            wick_tensor *w = NULL;
            st = wick_where(&w, mask, zero, r);
            wick_tensor_release(r), r = w;
        }
        wick_tensor_release(mask), mask = NULL;
    }
    wick_tensor_release(zero);
    if (st) return wick_tensor_release(r), st;
    grads[0] = r;
    return WICK_OK;
}

wick_status wk_record_clamp(wick_tensor *out, const wick_tensor *a, double lo, double hi, bool hardtanh) {
    wk_node *n;
    TRY(wk_record(out, hardtanh ? "HardtanhBackward" : "ClampBackward", clamp_backward, hardtanh, 1, &a, &n));
    n->twice = true;
    n->scalars[0] = lo, n->scalars[1] = hi;
    return wk_save(n, 0, a, out);
}

static wick_status where_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *c = n->saved[0], *zero;
    TRY(wick_full(&zero, 0, NULL, 0, (wick_options){g->dtype, wick_cpu()}));
    wick_status st = WICK_OK;
    if (n->edges[1].node || n->edges[1].leaf) st = wick_where(&grads[1], c, g, zero);
    if (!st && (n->edges[2].node || n->edges[2].leaf)) st = wick_where(&grads[2], c, zero, g);
    wick_tensor_release(zero);
    return st;
}

wick_status wk_record_where(wick_tensor *out, const wick_tensor *cond, const wick_tensor *a, const wick_tensor *b) {
    const wick_tensor *in[3] = {NULL, a, b};
    wk_node *n;
    TRY(wk_record(out, "WhereBackward", where_backward, 0, 3, in, &n));
    n->twice = true;
    return wk_save(n, 0, cond, out);
}

/* The gradient a backward spread with index_add / scatter(_add) from g is
 * linear in g: under create_graph its own backward takes the incoming
 * gradient back through the forward op, index_select (op 0) or gather (op 1). */
static wick_status reindex_backward(wk_node *n, wick_tensor *gg, wick_tensor **grads) {
    return n->op ? wick_gather(&grads[0], gg, n->ints[0], n->saved[0])
                 : wick_index_select(&grads[0], gg, n->ints[0], n->saved[0]);
}

/* r = the spread of g (computed without grad): recorded as reindex's output under create_graph. */
static wick_status record_spread(wick_tensor *r, const wick_tensor *g, int gather, int dim, const wick_tensor *index) {
    if (!wk_wants_grad(1, &g)) return WICK_OK;
    wk_node *m;
    TRY(wk_record(r, gather ? "ScatterAddBackward" : "IndexAddBackward", reindex_backward, gather, 1, &g, &m));
    m->twice = true;
    m->ints[0] = dim;
    return wk_save(m, 0, index, r);
}

/* ---- reductions ---- */

/* g (reduced over `dim`, or over everything) spread back to the input's shape. */
static wick_status expand_back(wick_tensor **out, wick_tensor *g, const wk_node *n, int dim, int keepdim) {
    wick_tensor *u;
    if (dim >= 0 && !keepdim) TRY(wick_unsqueeze(&u, g, dim));
    else TRY(retained(&u, g));
    wick_status st = wick_expand(out, u, n->ndim, n->sizes);
    wick_tensor_release(u);
    return st;
}

/* prod: exact also with zeros, like PyTorch. With p the product of a slice's
 * nonzero elements and z its number of zeros: z = 0 gives g p / x; z = 1 gives
 * g p at the zero and 0 elsewhere; more zeros give 0 everywhere. */
static wick_status prod_backward(const wk_node *n, wick_tensor *g, const wick_tensor *x, int dim, int keepdim,
                                 wick_tensor **out) {
    wick_tensor *zm = NULL, *zf = NULL, *one = NULL, *xnz = NULL, *p = NULL, *cnt = NULL, *c = NULL, *r = NULL,
                *t = NULL, *e = NULL;
    wick_options opt = {x->dtype, x->storage->device};
    wick_status st;
    if ((st = wick_binary_scalar(&zm, WICK_EQ, x, num(0), 0)) || (st = wick_to(&zf, zm, opt)) ||
        (st = wick_full(&one, 0, NULL, 1, (wick_options){x->dtype, wick_cpu()})) ||
        (st = wick_where(&xnz, zm, one, x)) || (st = wick_reduce(&p, NULL, WICK_PROD, xnz, dim, 1, 0)) ||
        (st = wick_reduce(&cnt, NULL, WICK_SUM, zf, dim, 1, 0)))
        goto done;
    /* r = (z == 0) p / x_nz + (z == 1) zeros p */
    if ((st = wick_binary_scalar(&c, WICK_EQ, cnt, num(0), 0)) || (st = wick_binary(&r, WICK_MUL, c, p)) ||
        (st = chain(&r, WICK_DIV, xnz)))
        goto done;
    wick_tensor_release(c);
    c = NULL;
    if ((st = wick_binary_scalar(&c, WICK_EQ, cnt, num(1), 0)) || (st = wick_binary(&t, WICK_MUL, c, p)) ||
        (st = chain(&t, WICK_MUL, zf)) || (st = chain(&r, WICK_ADD, t)))
        goto done;
    if ((st = expand_back(&e, g, n, dim, keepdim)) || (st = chain(&r, WICK_MUL, e))) goto done;
    *out = r;
    r = NULL;
done:;
    wick_tensor *all[] = {zm, zf, one, xnz, p, cnt, c, r, t, e};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wick_tensor_release(all[i]);
    return st;
}

static wick_status reduce_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *x = n->saved[0], *y = n->saved[1], *idx = n->saved[2], *e, *t;
    int dim = n->ints[0], keepdim = n->ints[1];
    int64_t count = dim >= 0 ? (n->ndim ? n->sizes[dim] : 1) : wk_numel(n->ndim, n->sizes);
    switch ((wick_reduce_op)n->op) {
    case WICK_SUM: return expand_back(&grads[0], g, n, dim, keepdim);
    case WICK_MEAN:
        TRY(expand_back(&e, g, n, dim, keepdim));
        TRY(wick_binary_scalar(&grads[0], WICK_DIV, e, num((double)count), 0));
        wick_tensor_release(e);
        return WICK_OK;
    case WICK_PROD: return prod_backward(n, g, x, dim, keepdim, &grads[0]);
    case WICK_VAR:
    case WICK_STD: { /* var: g 2 (x - mean) / (n - c);  std: g (x - mean) / ((n - c) std) */
        wick_tensor *mean, *d;
        TRY(wick_reduce(&mean, NULL, WICK_MEAN, x, dim, 1, 0));
        wick_status st = wick_binary(&d, WICK_SUB, x, mean);
        wick_tensor_release(mean);
        TRY(st);
        double denom = (double)count - n->ints[2];
        TRY(chain_scalar(&d, WICK_MUL, n->op == WICK_VAR ? 2 / denom : 1 / denom));
        TRY(expand_back(&e, g, n, dim, keepdim));
        TRY(chain(&d, WICK_MUL, e));
        wick_tensor_release(e);
        if (n->op == WICK_STD) {
            TRY(expand_back(&e, y, n, dim, keepdim));
            st = nonzero_denominator(&e); /* a constant input (std 0): 0, as PyTorch's */
            if (!st) st = chain(&d, WICK_DIV, e);
            wick_tensor_release(e);
            TRY(st);
        }
        grads[0] = d;
        return WICK_OK;
    }
    case WICK_MAX:
    case WICK_MIN:
        if (idx) { /* along a dim: the gradient goes to the chosen index */
            wick_tensor *z, *gi, *ii;
            TRY(wick_full(&z, n->ndim, n->sizes, 0, (wick_options){g->dtype, g->storage->device}));
            wick_status st = keepdim ? retained(&gi, g) : wick_unsqueeze(&gi, g, dim);
            if (!st) st = keepdim ? retained(&ii, idx) : wick_unsqueeze(&ii, idx, dim);
            if (!st) {
                WK_NO_GRAD(st = wick_scatter_(z, dim, ii, gi));
                if (!st) st = record_spread(z, gi, 1, dim, ii); /* create_graph */
                wick_tensor_release(ii);
            }
            wick_tensor_release(gi);
            if (st) return wick_tensor_release(z), st;
            grads[0] = z;
            return WICK_OK;
        } else { /* over everything: split evenly among the elements equal to the result */
            wick_tensor *m, *cnt;
            TRY(wick_binary(&m, WICK_EQ, x, y));
            TRY(wick_to(&t, m, (wick_options){g->dtype, g->storage->device}));
            wick_tensor_release(m);
            TRY(wick_reduce(&cnt, NULL, WICK_SUM, t, -1, 0, 0));
            TRY(chain(&t, WICK_DIV, cnt));
            wick_tensor_release(cnt);
            TRY(chain(&t, WICK_MUL, g));
            grads[0] = t;
            return WICK_OK;
        }
    default: return WICK_OK; /* argmax/argmin: integer results */
    }
}

wick_status wk_record_reduce(wick_tensor *out, const wick_tensor *indices, wick_reduce_op op, const wick_tensor *a,
                             int dim, int keepdim, int correction) {
    static const char *names[] = {"SumBackward", "MeanBackward", "ProdBackward", "MaxBackward", "MinBackward",
                                  "ArgmaxBackward", "ArgminBackward", "VarBackward", "StdBackward"};
    if (op == WICK_ARGMAX || op == WICK_ARGMIN) return WICK_OK;
    wk_node *n;
    TRY(wk_record(out, names[op], reduce_backward, op, 1, &a, &n));
    n->twice = true;
    n->ints[0] = dim, n->ints[1] = keepdim, n->ints[2] = correction;
    n->ndim = a->ndim;
    memcpy(n->sizes, a->sizes, sizeof(int64_t) * a->ndim);
    if (op == WICK_SUM || op == WICK_MEAN) return WICK_OK; /* the shape is all they need */
    /* max and min along a dim need only their indices, as PyTorch's: the input may
     * change in place afterwards (Grounding DINO's x - x.max(-1)[0], then a masked_fill_) */
    bool by_index = indices && (op == WICK_MAX || op == WICK_MIN);
    if (!by_index) {
        TRY(wk_save(n, 0, a, out));
        TRY(wk_save(n, 1, out, out));
    }
    if (!indices) return WICK_OK;
    /* a copy: the caller owns the indices it got and may change them in place (the Lua
     * binding makes them 1-based that way) */
    wick_tensor *own;
    TRY(wick_clone(&own, indices));
    wick_status st = wk_save(n, 2, own, out);
    wick_tensor_release(own);
    return st;
}

/* ---- matrix products ---- */

static wick_status transposed(wick_tensor **out, const wick_tensor *t) {
    return wick_transpose(out, (wick_tensor *)t, t->ndim - 2, t->ndim - 1);
}

static wick_status addmm_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *m1 = n->saved[0], *m2 = n->saved[1], *t;
    double beta = n->scalars[0], alpha = n->scalars[1];
    if (n->edges[0].node || n->edges[0].leaf) /* beta = 0 gives zeros, like PyTorch */
        TRY(beta == 1 ? retained(&grads[0], g) : wick_binary_scalar(&grads[0], WICK_MUL, g, num(beta), 0));
    if (n->edges[1].node || n->edges[1].leaf) { /* alpha g m2^T */
        TRY(transposed(&t, m2));
        wick_status st = wick_mm(&grads[1], g, t);
        wick_tensor_release(t);
        TRY(st);
        if (alpha != 1) TRY(chain_scalar(&grads[1], WICK_MUL, alpha));
    }
    if (n->edges[2].node || n->edges[2].leaf) { /* alpha m1^T g */
        TRY(transposed(&t, m1));
        wick_status st = wick_mm(&grads[2], t, g);
        wick_tensor_release(t);
        TRY(st);
        if (alpha != 1) TRY(chain_scalar(&grads[2], WICK_MUL, alpha));
    }
    return WICK_OK;
}

wick_status wk_record_addmm(wick_tensor *out, const wick_tensor *input, const wick_tensor *m1, const wick_tensor *m2,
                            double beta, double alpha) {
    const wick_tensor *in[3] = {input, m1, m2};
    wk_node *n;
    TRY(wk_record(out, input ? "AddmmBackward" : "MmBackward", addmm_backward, 0, 3, in, &n));
    n->twice = true;
    n->scalars[0] = beta, n->scalars[1] = alpha;
    if (m2->requires_grad) TRY(wk_save(n, 0, m1, out));
    if (m1->requires_grad) TRY(wk_save(n, 1, m2, out));
    return WICK_OK;
}

/* y = x w^T + b:  gx = g w,  gw = g^T x,  gb = g (the engine sums it to [out]) */
/* y = x W^T + b on x [..., in] as [rows, in]: gx = g W, gW = g^T x, gb = g
 * (summed to b's shape by the engine) */
static wick_status linear_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *x = n->saved[0], *w = n->saved[1], *t = NULL, *g2 = NULL, *x2 = NULL, *gx = NULL;
    int64_t rows[2] = {wk_numel(g->ndim - 1, g->sizes), g->sizes[g->ndim - 1]};
    wick_status st = g->ndim > 2 ? wick_reshape(&g2, g, 2, rows) : retained(&g2, g);
    if (!st && (n->edges[0].node || n->edges[0].leaf)) {
        st = wick_mm(&gx, g2, w);
        if (!st) st = g->ndim > 2 ? wick_reshape(&grads[0], gx, n->ndim, n->sizes) : retained(&grads[0], gx);
    }
    if (!st && (n->edges[1].node || n->edges[1].leaf)) {
        int64_t xrows[2] = {rows[0], x->sizes[x->ndim - 1]};
        st = x->ndim > 2 ? wick_reshape(&x2, x, 2, xrows) : retained(&x2, x);
        if (!st) st = wick_transpose(&t, g2, 0, 1);
        if (!st) st = wick_mm(&grads[1], t, x2);
    }
    if (!st && (n->edges[2].node || n->edges[2].leaf)) st = retained(&grads[2], g);
    wick_tensor *all[] = {t, g2, x2, gx};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wick_tensor_release(all[i]);
    return st;
}

wick_status wk_record_linear(wick_tensor *out, const wick_tensor *x, const wick_tensor *weight, const wick_tensor *bias) {
    const wick_tensor *in[3] = {x, weight, bias};
    wk_node *n;
    TRY(wk_record(out, "LinearBackward", linear_backward, 0, 3, in, &n));
    n->twice = true;
    n->ndim = x->ndim; /* the input's shape: its gradient's */
    memcpy(n->sizes, x->sizes, sizeof(int64_t) * x->ndim);
    if (weight->requires_grad) TRY(wk_save(n, 0, x, out));
    if (x->requires_grad) TRY(wk_save(n, 1, weight, out));
    return WICK_OK;
}

/* l = reduce((x - y)^2):  gx = 2 (x - y) g [/ n],  gy = -gx */
static wick_status mse_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *d = n->saved[0], *gx;
    double scale = n->ints[0] == 1 ? 2.0 / (double)wick_tensor_numel(d) : 2.0;
    if (wk_grad_mode) { /* create_graph: the difference again, recorded (the saved one has no graph) */
        TRY(wick_binary(&d, WICK_SUB, n->saved[1], n->saved[2]));
        wick_status st = wick_binary(&gx, WICK_MUL, d, g);
        wick_tensor_release(d);
        TRY(st);
    } else
        TRY(wick_binary(&gx, WICK_MUL, d, g));
    TRY(chain_scalar(&gx, WICK_MUL, scale));
    if (n->edges[1].node || n->edges[1].leaf) {
        wick_status st = wick_unary(&grads[1], WICK_NEG, gx);
        if (st) return wick_tensor_release(gx), st;
    }
    if (n->edges[0].node || n->edges[0].leaf) grads[0] = gx;
    else wick_tensor_release(gx);
    return WICK_OK;
}

wick_status wk_record_mse(wick_tensor *out, const wick_tensor *input, const wick_tensor *target,
                          const wick_tensor *diff, int reduction) {
    const wick_tensor *in[2] = {input, target};
    wk_node *n;
    TRY(wk_record(out, "MseLossBackward", mse_backward, 0, 2, in, &n));
    n->twice = true;
    n->ints[0] = reduction;
    TRY(wk_save(n, 1, input, out)); /* for create_graph */
    TRY(wk_save(n, 2, target, out));
    return wk_save(n, 0, diff, out);
}

static wick_status bmm_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *a = n->saved[0], *b = n->saved[1], *t;
    if (n->edges[0].node || n->edges[0].leaf) {
        TRY(transposed(&t, b));
        wick_status st = wick_bmm(&grads[0], g, t);
        wick_tensor_release(t);
        TRY(st);
    }
    if (n->edges[1].node || n->edges[1].leaf) {
        TRY(transposed(&t, a));
        wick_status st = wick_bmm(&grads[1], t, g);
        wick_tensor_release(t);
        TRY(st);
    }
    return WICK_OK;
}

wick_status wk_record_bmm(wick_tensor *out, const wick_tensor *a, const wick_tensor *b) {
    const wick_tensor *in[2] = {a, b};
    wk_node *n;
    TRY(wk_record(out, "BmmBackward", bmm_backward, 0, 2, in, &n));
    n->twice = true;
    if (b->requires_grad) TRY(wk_save(n, 0, a, out));
    if (a->requires_grad) TRY(wk_save(n, 1, b, out));
    return WICK_OK;
}

/* ---- views ---- */

static wick_status view_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    switch (n->op) {
    case WK_VIEW_RESHAPE: return wick_reshape(&grads[0], g, n->ndim, n->sizes);
    case WK_VIEW_TRANSPOSE: return wick_transpose(&grads[0], g, n->ints[0], n->ints[1]);
    case WK_VIEW_PERMUTE: {
        int inverse[WICK_MAX_DIMS];
        for (int i = 0; i < n->ndim; i++) inverse[n->ints[i]] = i;
        return wick_permute(&grads[0], g, n->ndim, inverse);
    }
    case WK_VIEW_SLICE:
    case WK_VIEW_SELECT: { /* zeros of the input's shape with g in the slice */
        wick_tensor *z, *slot, *src;
        int dim = n->ints[0];
        if (wk_grad_mode) { /* create_graph: written with recorded ops */
            TRY(n->op == WK_VIEW_SELECT ? wick_unsqueeze(&src, g, dim) : retained(&src, g));
            wick_status st = wk_pad_slice(&grads[0], src, n->ndim, n->sizes, dim, (int64_t)n->scalars[0]);
            wick_tensor_release(src);
            return st;
        }
        TRY(wick_full(&z, n->ndim, n->sizes, 0, (wick_options){g->dtype, g->storage->device}));
        int64_t start = (int64_t)n->scalars[0], length = (int64_t)n->scalars[1];
        wick_status st = wick_narrow(&slot, z, dim, start, length);
        if (!st) {
            st = n->op == WK_VIEW_SELECT ? wick_unsqueeze(&src, g, dim) : retained(&src, g);
            if (!st) {
                st = wick_copy_(slot, src);
                wick_tensor_release(src);
            }
            wick_tensor_release(slot);
        }
        if (st) return wick_tensor_release(z), st;
        grads[0] = z;
        return WICK_OK;
    }
    default: return retained(&grads[0], g); /* expand (the engine sums), identity */
    }
}

wick_status wk_pad_slice(wick_tensor **out, const wick_tensor *g, int ndim, const int64_t *sizes, int dim,
                         int64_t start) {
    const wick_tensor *parts[3];
    wick_tensor *zeros[2] = {NULL, NULL};
    int64_t s[WICK_MAX_DIMS], len[2] = {start, sizes[dim] - start - g->sizes[dim]};
    int k = 0;
    wick_status st = WICK_OK;
    memcpy(s, g->sizes, sizeof(int64_t) * ndim);
    for (int side = 0; side < 2 && !st; side++) {
        if (len[side] > 0) {
            s[dim] = len[side];
            if (!(st = wick_full(&zeros[side], ndim, s, 0, (wick_options){g->dtype, g->storage->device})))
                parts[k++] = zeros[side];
        }
        if (!side) parts[k++] = g;
    }
    if (!st) st = wick_cat(out, k, parts, dim);
    wick_tensor_release(zeros[0]);
    wick_tensor_release(zeros[1]);
    return st;
}

wick_status wk_pad_slice_step(wick_tensor **out, const wick_tensor *g, int ndim, const int64_t *sizes, int dim,
                              int64_t start, int64_t step) {
    if (step == 1) return wk_pad_slice(out, g, ndim, sizes, dim, start);
    /* every step-th position from start: zeros with g added there (index_add),
     * recorded as the spread it is, so a further backward takes index_select */
    wick_tensor *idx = NULL, *z = NULL;
    wick_status st = wick_arange(&idx, (double)start, (double)(start + g->sizes[dim] * step), (double)step,
                                 (wick_options){WICK_INT64, g->storage->device});
    if (!st) st = wick_full(&z, ndim, sizes, 0, (wick_options){g->dtype, g->storage->device});
    if (!st) WK_NO_GRAD(st = wick_index_add_(z, dim, idx, g));
    if (!st) st = record_spread(z, g, 0, dim, idx);
    wick_tensor_release(idx);
    if (st) return wick_tensor_release(z), st;
    *out = z;
    return WICK_OK;
}

bool wk_slice_backward_into(wk_node *n, wick_tensor *g, wick_tensor *acc, wick_status *st) {
    if (n->backward != view_backward || (n->op != WK_VIEW_SLICE && n->op != WK_VIEW_SELECT) || !acc || !g ||
        !wk_engine_owned(acc) || acc->dtype != g->dtype || acc->dtype != n->edges[0].dtype ||
        !wick_device_equal(acc->storage->device, g->storage->device) || acc->ndim != n->ndim ||
        memcmp(acc->sizes, n->sizes, sizeof(int64_t) * n->ndim) != 0)
        return false;
    wick_tensor *slot, *src;
    int dim = n->ints[0];
    if ((*st = wick_narrow(&slot, acc, dim, (int64_t)n->scalars[0], (int64_t)n->scalars[1]))) return true;
    *st = n->op == WK_VIEW_SELECT ? wick_unsqueeze(&src, g, dim) : retained(&src, g);
    if (!*st) {
        *st = wick_binary_(WICK_ADD, slot, src);
        wick_tensor_release(src);
    }
    wick_tensor_release(slot);
    return true;
}

static wick_status record_view(wick_tensor *out, const wick_tensor *in, const char *name, int kind, int dim0,
                               int dim1, int64_t start, int64_t length, const int *perm) {
    wk_node *n;
    TRY(wk_record(out, name, view_backward, kind, 1, &in, &n));
    n->twice = true;
    n->ndim = in->ndim;
    memcpy(n->sizes, in->sizes, sizeof(int64_t) * in->ndim);
    n->ints[0] = dim0, n->ints[1] = dim1;
    n->scalars[0] = (double)start, n->scalars[1] = (double)length;
    if (perm) memcpy(n->ints, perm, sizeof(int) * in->ndim);
    return WICK_OK;
}

wick_status wk_record_view(wick_tensor *out, const wick_tensor *in, int kind, int dim0, int dim1, int64_t start,
                           int64_t length, const int *perm) {
    static const char *names[] = {"ViewBackward", "TransposeBackward", "PermuteBackward", "ExpandBackward",
                                  "NarrowBackward", "SelectBackward", "AliasBackward"};
    return record_view(out, in, names[kind], kind, dim0, dim1, start, length, perm);
}

wick_status wk_record_copy(wick_tensor *out, const wick_tensor *in, const char *name) {
    return record_view(out, in, name, WK_VIEW_IDENTITY, 0, 0, 0, 0, NULL);
}

/* ---- indexing, joining, softmax ---- */

static wick_status index_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *z, *index = n->saved[0];
    int dim = n->ints[0];
    wick_tensor *gc = NULL; /* index_add adds whole contiguous rows; a strided g (an expanded
                               * sum's gradient) went element by element, ~10x slower than a copy */
    if (!n->op && !wick_tensor_is_contiguous(g)) TRY(wick_contiguous(&gc, g));
    wick_status st = wick_full(&z, n->ndim, n->sizes, 0, (wick_options){g->dtype, g->storage->device});
    if (st) return wick_tensor_release(gc), st;
    WK_NO_GRAD(st = n->op ? wick_scatter_add_(z, dim, index, g) : wick_index_add_(z, dim, index, gc ? gc : g));
    wick_tensor_release(gc);
    if (!st) st = record_spread(z, g, n->op, dim, index); /* create_graph */
    if (st) return wick_tensor_release(z), st;
    grads[0] = z;
    return WICK_OK;
}

static wick_status record_index(wick_tensor *out, const wick_tensor *a, int dim, const wick_tensor *index,
                                int is_gather) {
    wk_node *n;
    TRY(wk_record(out, is_gather ? "GatherBackward" : "IndexSelectBackward", index_backward, is_gather, 1, &a, &n));
    n->twice = true;
    n->ints[0] = dim;
    n->ndim = a->ndim;
    memcpy(n->sizes, a->sizes, sizeof(int64_t) * a->ndim);
    return wk_save(n, 0, index, out);
}

wick_status wk_record_index_select(wick_tensor *out, const wick_tensor *a, int dim, const wick_tensor *index) {
    return record_index(out, a, dim, index, 0);
}

wick_status wk_record_gather(wick_tensor *out, const wick_tensor *a, int dim, const wick_tensor *index) {
    return record_index(out, a, dim, index, 1);
}

static wick_status cat_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    int dim = n->ints[0];
    int64_t at = 0;
    for (int i = 0; i < n->n_inputs; i++) {
        int64_t len = n->edges[i].sizes[dim];
        if (n->edges[i].leaf || n->edges[i].node) TRY(wick_narrow(&grads[i], g, dim, at, len));
        at += len;
    }
    return WICK_OK;
}

wick_status wk_record_cat(wick_tensor *out, int count, const wick_tensor *const *ts, int dim) {
    wk_node *n;
    TRY(wk_record(out, "CatBackward", cat_backward, 0, count, ts, &n));
    n->twice = true;
    n->ints[0] = dim;
    /* lengths of inputs that need no grad are still needed to find the others */
    for (int i = 0; i < count; i++) {
        wk_edge *e = &n->edges[i];
        if (e->leaf || e->node) continue;
        e->ndim = ts[i]->ndim;
        memcpy(e->sizes, ts[i]->sizes, sizeof(int64_t) * ts[i]->ndim);
    }
    return WICK_OK;
}

static wick_status softmax_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *y = n->saved[0], *s, *t;
    int dim = n->ints[0];
    if (!wk_grad_mode) { /* fused, where the backend has it; create_graph needs the recorded form */
        TRY(wk_softmax_backward(&grads[0], g, y, dim, n->op));
        if (grads[0]) return WICK_OK;
    }
    if (n->op) { /* log_softmax: g - exp(y) sum(g) */
        TRY(wick_reduce(&s, NULL, WICK_SUM, g, dim, 1, 0));
        TRY(wick_unary(&t, WICK_EXP, y));
        TRY(chain(&t, WICK_MUL, s));
        wick_tensor_release(s);
        wick_status st = wick_binary(&grads[0], WICK_SUB, g, t);
        wick_tensor_release(t);
        return st;
    }
    /* softmax: y (g - sum(g y)) */
    TRY(wick_binary(&t, WICK_MUL, g, y));
    TRY(wick_reduce(&s, NULL, WICK_SUM, t, dim, 1, 0));
    wick_tensor_release(t);
    TRY(wick_binary(&t, WICK_SUB, g, s));
    wick_tensor_release(s);
    TRY(chain(&t, WICK_MUL, y));
    grads[0] = t;
    return WICK_OK;
}

wick_status wk_record_softmax(wick_tensor *out, const wick_tensor *a, int dim, int log) {
    wk_node *n;
    TRY(wk_record(out, log ? "LogSoftmaxBackward" : "SoftmaxBackward", softmax_backward, log, 1, &a, &n));
    n->twice = true;
    n->ints[0] = dim;
    return wk_save(n, 0, out, out);
}
