/* Elementwise ops: device and shape checks, PyTorch's type promotion, output
 * allocation, then one backend kernel. Kernels compute in float32, float64 or
 * int64; other dtypes are converted around them here. */
#include "autograd.h"

#include <math.h>

#define NAME_OF(id, name) [WICK_##id] = name,
static const char *const unary_names[] = {WICK_UNARY_OPS(NAME_OF)};
static const char *const binary_names[] = {WICK_BINARY_OPS(NAME_OF)};
#undef NAME_OF
_Static_assert(sizeof unary_names / sizeof *unary_names == WICK_NUM_UNARY, "a name for every unary op");
_Static_assert(sizeof binary_names / sizeof *binary_names == WICK_NUM_BINARY, "a name for every binary op");

const char *wick_unary_name(wick_unary_op op) { return (unsigned)op < WICK_NUM_UNARY ? unary_names[op] : "?"; }
const char *wick_binary_name(wick_binary_op op) { return (unsigned)op < WICK_NUM_BINARY ? binary_names[op] : "?"; }

/* integer inputs give float32 (wick.h's dtype rule) */
static bool unary_needs_float(wick_unary_op op) {
    switch (op) {
    case WICK_NEG: case WICK_ABS: case WICK_RELU: case WICK_FLOOR: case WICK_CEIL: case WICK_ROUND:
    case WICK_TRUNC: case WICK_SIGN: case WICK_BITWISE_NOT: return false;
    default: return true;
    }
}
static bool binary_is_compare(wick_binary_op op) { return op >= WICK_EQ && op <= WICK_GE; }
static bool binary_is_bitwise(wick_binary_op op) { return op >= WICK_BITWISE_AND && op <= WICK_RSHIFT; }

/* The bitwise ops' dtype rule: integers and bool, no shifts of bool. */
static wick_status check_bitwise(const char *op, wick_dtype d, bool shift) {
    if (wick_dtype_is_floating(d))
        return wick_fail(WICK_ERR_DTYPE, "%s: only for integer and bool tensors, got %s%s", op, wick_dtype_name(d),
                         shift ? " (whole numbers in a table make float32 tensors: wick.tensor(t, {dtype = 'int64'}))"
                               : " (whole numbers in a table make float32 tensors: wick.tensor(t, {dtype = 'int64'}); "
                                 "for masks, compare first: x:gt(0):logical_and(y:gt(0)))");
    if (shift && d == WICK_BOOL) return wick_fail(WICK_ERR_DTYPE, "%s: not implemented for bool tensors", op);
    return WICK_OK;
}

/* The dtype a kernel computes in for values of dtype d. */
static wick_dtype compute_dtype(wick_dtype d) {
    if (d == WICK_FLOAT64) return WICK_FLOAT64;
    return wick_dtype_is_floating(d) ? WICK_FLOAT32 : WICK_INT64;
}

static const char *type_title(wick_dtype d) {
    static const char *titles[] = {"Float", "Double", "Half",  "BFloat16", "Long",
                                   "Int",   "Byte",   "Bool", "ComplexFloat", "ComplexDouble"};
    _Static_assert(sizeof titles / sizeof *titles == WICK_NUM_DTYPES, "a title per dtype");
    return titles[d];
}

static wick_status check_cast(const char *op, wick_dtype result, wick_dtype out) {
    bool ok = wick_dtype_is_complex(out) || (!wick_dtype_is_complex(result) &&
                                             (wick_dtype_is_floating(out) || !wick_dtype_is_floating(result)));
    if (out == WICK_BOOL && result != WICK_BOOL) ok = false;
    if (!ok)
        return wick_fail(WICK_ERR_DTYPE, "%s: result type %s can't be cast to the desired output type %s", op,
                         type_title(result), type_title(out));
    return WICK_OK;
}

/* PyTorch's result type: dimensioned tensors decide, unless a 0-dim tensor or a
 * number operand is of a higher category (bool < integer < floating < complex). */
static int category(wick_dtype d) {
    return d == WICK_BOOL ? 0 : wick_dtype_is_complex(d) ? 3 : wick_dtype_is_floating(d) ? 2 : 1;
}

/* a number's own type: the default one of its category (a float number is the default float dtype) */
static wick_dtype number_type(wick_dtype d) {
    int c = category(d);
    return c == 2 ? wick_default_float_dtype() : c == 1 ? WICK_INT64 : d;
}

/* PyTorch's combine_categories: the dtype of a higher tier (tensors of dims over 0-dim ones over
 * numbers) unless the lower's category is higher; a complex one over a floating higher keeps the
 * higher's width (float64 beside a 0-dim complex64 is complex128, float32 beside a complex128 one
 * complex64: SoundStream's exp(1j * angle)) */
static wick_dtype over(wick_dtype higher, wick_dtype lower) {
    int ch = category(higher), cl = category(lower);
    if (cl == 3 && ch == 2) return wk_complex_of(higher);
    return cl > ch ? lower : higher;
}

/* numbers: which of a and b are wrapped numbers (1 and 2), as 0-dim tensors of their values */
static wick_dtype result_type_of(const wick_tensor *a, const wick_tensor *b, int numbers) {
    const wick_tensor *ts[2] = {a, b};
    int have[3] = {0};
    wick_dtype tier[3] = {WICK_BOOL, WICK_BOOL, WICK_BOOL};
    for (int i = 0; i < 2; i++) {
        if (!ts[i]) continue;
        int k = (numbers & (1 << i)) ? 2 : ts[i]->ndim == 0 ? 1 : 0;
        tier[k] = have[k] ? wick_promote_types(tier[k], ts[i]->dtype) : ts[i]->dtype;
        have[k] = 1;
    }
    if (!have[0] && !have[1]) return number_type(tier[2]); /* numbers only: where(m, 0.5, -1.5) */
    if (have[2]) tier[2] = number_type(tier[2]); /* numbers take the default dtypes */
    wick_dtype lower = have[1] && have[2] ? over(tier[1], tier[2]) : have[1] ? tier[1] : tier[2];
    return have[0] ? over(tier[0], lower) : lower;
}
static wick_dtype result_type(const wick_tensor *a, const wick_tensor *b, bool b_is_number) {
    return result_type_of(a, b, b_is_number ? 2 : 0);
}

/* Makes `t` usable by a kernel of `dtype` on `dev`: the same tensor (retained)
 * when it already is, else a converted copy. A 0-dim CPU scalar stays on the CPU
 * (converted there if needed): wk_iter_init puts its value in the kernel's
 * arguments, so an op on a GPU neither copies it over nor waits. */
static wick_status as_operand(wick_tensor **out, const wick_tensor *t, wick_dtype dtype, wick_device dev) {
    if (t->ndim == 0 && t->storage->device.type == WICK_CPU) dev = wick_cpu();
    return wick_to(out, (wick_tensor *)t, (wick_options){dtype, dev});
}

wick_status wk_check_writable(const char *op, const wick_tensor *t) {
    for (int i = 0; i < t->ndim; i++)
        if (t->strides[i] == 0 && t->sizes[i] > 1)
            return wick_fail(WICK_ERR_ARGUMENT,
                             "%s: unsupported operation: more than one element of the written-to tensor "
                             "refers to a single memory location (an expanded view); call :clone() first",
                             op);
    return WICK_OK;
}

/* Runs a kernel over `out` and up to three inputs. When out's dtype differs from
 * the compute dtype, the kernel writes a temporary that is then copied into out. */
typedef struct kernel_call {
    enum { K_UNARY, K_BINARY, K_CLAMP, K_WHERE } kind;
    int op;
    double x, y; /* alpha, or clamp bounds */
} kernel_call;

static wick_status launch(const wick_backend *be, const kernel_call *k, const wk_iter *it) {
    switch (k->kind) {
    case K_UNARY: return be->unary((wick_unary_op)k->op, it);
    case K_BINARY: return be->binary((wick_binary_op)k->op, it, k->x);
    case K_CLAMP: return be->clamp(it, k->x, k->y);
    case K_WHERE: return be->where(it);
    }
    return WICK_OK;
}

/* inputs[i] must already have the compute dtype (except a where-condition). */
static wick_status run_kernel(const kernel_call *k, wick_tensor *out, wick_dtype kernel_out_dtype, int n,
                              wick_tensor *const *inputs) {
    const wick_backend *be = out->storage->backend;
    wick_tensor *target = out;
    wick_status st = WICK_OK;
    if (out->dtype != kernel_out_dtype && (st = wk_tensor_new(&target, out->ndim, out->sizes, kernel_out_dtype,
                                                             out->storage->device)))
        return st;
    const wick_tensor *ops[WK_MAX_OPERANDS] = {target};
    for (int i = 0; i < n; i++) ops[i + 1] = inputs[i];
    wk_iter it;
    wk_iter_init(&it, n + 1, ops);
    st = launch(be, k, &it);
    if (target != out) {
        if (!st) st = wick_copy_(out, target);
        wick_tensor_release(target);
    }
    return st;
}

/* The shared body of every elementwise op: checks, output, operand conversion, kernel.
 * `inplace` is the tensor to write into, or NULL for a new output in *out. */
static wick_status elementwise(wick_tensor **out, wick_tensor *inplace, const char *op, const kernel_call *k,
                               int n, const wick_tensor *const *inputs, const char *const *names,
                               wick_dtype result, wick_dtype compute, wick_dtype kernel_out,
                               const wick_dtype *input_dtypes) {
    wick_status st = wk_check_same_device(op, n, inputs, names);
    if (st) return st;
    /* the device of the op: that of the first tensor that is not a CPU scalar */
    wick_device dev = inputs[0]->storage->device;
    for (int i = 0; i < n; i++)
        if (inputs[i]->ndim > 0 || inputs[i]->storage->device.type != WICK_CPU) {
            dev = inputs[i]->storage->device;
            break;
        }
    int ndim = inputs[0]->ndim;
    int64_t shape[WICK_MAX_DIMS];
    memcpy(shape, inputs[0]->sizes, sizeof(int64_t) * ndim);
    for (int i = 1; i < n; i++)
        if ((st = wk_broadcast_shapes(op, ndim, shape, inputs[i]->ndim, inputs[i]->sizes, &ndim, shape))) return st;
    wick_tensor *target = inplace;
    if (inplace) {
        char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
        if (ndim != inplace->ndim || memcmp(shape, inplace->sizes, sizeof(int64_t) * ndim) != 0)
            return wick_fail(WICK_ERR_SHAPE,
                             "%s: size mismatch: output with shape %s doesn't match the broadcast shape %s", op,
                             wk_shape_str(inplace->ndim, inplace->sizes, a, sizeof a), wk_shape_str(ndim, shape, b, sizeof b));
        if ((st = check_cast(op, result, inplace->dtype)) || (st = wk_check_writable(op, inplace))) return st;
    } else if ((st = wk_tensor_new(&target, ndim, shape, result, dev))) {
        return st;
    }
    if (dev.type != WICK_META) {
        wick_tensor *conv[WK_MAX_OPERANDS] = {0};
        for (int i = 0; i < n && !st; i++) {
            st = as_operand(&conv[i], inputs[i], input_dtypes ? input_dtypes[i] : compute, dev);
            /* an input that overlaps the written-to tensor in another layout would
             * be read after parts of it were overwritten: read a copy instead */
            if (!st && inplace && conv[i] != inplace && conv[i]->storage == inplace->storage) {
                wick_tensor *copy;
                if (!(st = wick_clone(&copy, conv[i]))) {
                    wick_tensor_release(conv[i]);
                    conv[i] = copy;
                }
            }
        }
        if (!st) st = run_kernel(k, target, kernel_out, n, conv);
        for (int i = 0; i < n; i++) wick_tensor_release(conv[i]);
    }
    if (st) {
        if (!inplace) wick_tensor_release(target);
        return st;
    }
    if (!inplace) *out = target;
    return WICK_OK;
}

/* An in-place op that autograd records: `result` was computed out of place
 * (recording its node, or failing with `st`); the in-place checks then apply to
 * it, and `target` takes it over. */
static wick_status adopt_result(const char *op, wick_tensor *target, wick_tensor *result, wick_status st) {
    if (st) return st;
    char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
    if (result->ndim != target->ndim || memcmp(result->sizes, target->sizes, sizeof(int64_t) * target->ndim) != 0)
        st = wick_fail(WICK_ERR_SHAPE, "%s: size mismatch: output with shape %s doesn't match the broadcast shape %s",
                       op, wk_shape_str(target->ndim, target->sizes, a, sizeof a),
                       wk_shape_str(result->ndim, result->sizes, b, sizeof b));
    if (!st && !(st = check_cast(op, result->dtype, target->dtype)) && !(st = wk_check_writable(op, target)))
        st = wk_adopt_inplace(target, result);
    wick_tensor_release(result);
    return st;
}

/* ---- unary ---- */

static wick_status unary(wick_tensor **out, wick_tensor *inplace, wick_unary_op op, const wick_tensor *a) {
    if ((unsigned)op >= WICK_NUM_UNARY) return wick_fail(WICK_ERR_ARGUMENT, "invalid unary op %d", op);
    const char *name = unary_names[op];
    if (wick_dtype_is_complex(a->dtype)) return wk_complex_unary(out, inplace, op, a); /* complex.c */
    if (op == WICK_BITWISE_NOT) {
        wick_status bst = check_bitwise(name, a->dtype, false);
        if (bst) return bst;
        if (a->dtype == WICK_BOOL) { /* ~ of a bool is its logical not: the int64 kernel's ~1 would stay true */
            wick_scalar zero = {0, 1};
            return inplace ? wick_binary_scalar_(WICK_EQ, inplace, zero) : wick_binary_scalar(out, WICK_EQ, a, zero, 0);
        }
    }
    if (op == WICK_NEG && a->dtype == WICK_BOOL)
        return wick_fail(WICK_ERR_DTYPE,
                         "neg: negation, the `-` operator, on a bool tensor is not supported; use :logical_not()");
    wick_dtype result = unary_needs_float(op) && !wick_dtype_is_floating(a->dtype) ? wick_default_float_dtype() : a->dtype;
    wick_dtype compute = compute_dtype(result);
    kernel_call k = {K_UNARY, op, 0, 0};
    const char *names[1] = {"input"};
    wick_tensor *r = NULL;
    wick_status st;
    bool record = false;
    if (inplace && (st = wk_check_inplace(name, a, 0, NULL, &record))) return st;
    if (inplace && record) {
        st = unary(&r, NULL, op, a);
        return adopt_result(name, inplace, r, st);
    }
    if (inplace) return elementwise(NULL, inplace, name, &k, 1, &a, names, result, compute, compute, NULL);
    WK_NO_GRAD(st = elementwise(&r, NULL, name, &k, 1, &a, names, result, compute, compute, NULL));
    if (st) return st;
    return wk_publish(out, r, wk_wants_grad(1, &a) ? wk_record_unary(r, op, a) : WICK_OK);
}

wick_status wick_unary(wick_tensor **out, wick_unary_op op, const wick_tensor *a) { return unary(out, NULL, op, a); }
wick_status wick_unary_(wick_unary_op op, wick_tensor *a) { return unary(NULL, a, op, a); }

/* ---- binary ---- */

static wick_status binary(wick_tensor **out, wick_tensor *inplace, wick_binary_op op, const wick_tensor *a,
                          const wick_tensor *b, bool b_is_number, double alpha);

/* A comparison whose promoted dtype computes wider (float16, bfloat16): PyTorch compares in that dtype, so
 * an operand of another dtype (a number, a 0-dim float32 tensor, an integer tensor) is rounded to it first:
 * h:eq(0.1) holds where h holds float16's 0.1, which float32's 0.1 is not. */
static wick_status compare_rounded(wick_tensor **out, wick_tensor *inplace, wick_binary_op op, const wick_tensor *a,
                                   const wick_tensor *b, wick_dtype promoted) {
    const wick_tensor *in[2] = {a, b};
    wick_tensor *cast[2] = {NULL, NULL};
    wick_status st = WICK_OK;
    for (int i = 0; i < 2 && !st; i++)
        if (in[i]->dtype != promoted)
            WK_NO_GRAD(st = wick_to(&cast[i], (wick_tensor *)in[i], (wick_options){promoted, in[i]->storage->device}));
    if (!st) st = binary(out, inplace, op, cast[0] ? cast[0] : a, cast[1] ? cast[1] : b, false, 1);
    for (int i = 0; i < 2; i++) wick_tensor_release(cast[i]);
    return st;
}

static wick_status binary(wick_tensor **out, wick_tensor *inplace, wick_binary_op op, const wick_tensor *a,
                          const wick_tensor *b, bool b_is_number, double alpha) {
    if ((unsigned)op >= WICK_NUM_BINARY) return wick_fail(WICK_ERR_ARGUMENT, "invalid binary op %d", op);
    if (op == WICK_POW) alpha = b_is_number; /* a number exponent takes pow's special cases (scalar_math.h) */
    wick_dtype promoted = result_type(a, b, b_is_number);
    wick_dtype result = promoted;
    if (wick_dtype_is_complex(promoted)) { /* composed of real ops: complex.c */
        wick_status cst = inplace ? check_cast(binary_names[op], promoted, inplace->dtype) : WICK_OK;
        return cst ? cst : wk_complex_binary(out, inplace, op, a, b, alpha, promoted);
    }
    if ((op == WICK_DIV || op == WICK_ATAN2) && !wick_dtype_is_floating(promoted))
        result = wick_default_float_dtype(); /* true division; atan2's angle */
    if (op == WICK_SUB && promoted == WICK_BOOL)
        return wick_fail(WICK_ERR_DTYPE, "sub: subtraction, the `-` operator, with two bool tensors is not supported; "
                                         "use :logical_xor() instead");
    if (op == WICK_POW && promoted == WICK_BOOL) /* (a ported `a ^ b` of two masks meant Python's xor) */
        return wick_fail(WICK_ERR_DTYPE, "pow: not implemented for two bool tensors, as in PyTorch (Python's `^` "
                                         "on masks is xor: use :logical_xor() or :bitwise_xor())");
    if (op == WICK_SUB && (a->dtype == WICK_BOOL || (!b_is_number && b->dtype == WICK_BOOL)))
        return wick_fail(WICK_ERR_DTYPE, "sub: subtraction, the `-` operator, with a bool tensor is not supported; "
                                         "to invert a mask use :logical_not() instead");
    if (binary_is_bitwise(op)) {
        wick_status bst = check_bitwise(binary_names[op], promoted, op == WICK_LSHIFT || op == WICK_RSHIFT);
        if (bst) return bst;
    }
    if (binary_is_compare(op) && compute_dtype(promoted) != promoted && (a->dtype != promoted || b->dtype != promoted))
        return compare_rounded(out, inplace, op, a, b, promoted);
    wick_dtype compute = compute_dtype(result);
    wick_dtype kernel_out = compute;
    if (binary_is_compare(op)) {
        compute = compute_dtype(promoted);
        result = WICK_BOOL;
        kernel_out = WICK_BOOL;
    }
    if (!wick_dtype_is_floating(compute) && alpha != floor(alpha))
        return wick_fail(WICK_ERR_ARGUMENT, "%s: for integral input tensors, alpha must not be a fraction (got %g)",
                         binary_names[op], alpha);
    if (!wick_dtype_is_floating(compute) && !(fabs(alpha) < 9.2e18)) /* it becomes an int64 in the kernel */
        return wick_fail(WICK_ERR_ARGUMENT, "%s: for integral input tensors, alpha must fit an int64 (got %g)",
                         binary_names[op], alpha);
    kernel_call k = {K_BINARY, op, alpha, 0};
    const wick_tensor *inputs[2] = {a, b};
    const char *names[2] = {"input", "other"};
    const char *name = binary_names[op];
    wick_tensor *r = NULL;
    wick_status st;
    bool record = false;
    if (inplace && (st = wk_check_inplace(name, inplace, 2, inputs, &record))) return st;
    if (inplace && record) {
        st = binary(&r, NULL, op, a, b, b_is_number, alpha);
        return adopt_result(name, inplace, r, st);
    }
    if (inplace) return elementwise(NULL, inplace, name, &k, 2, inputs, names, result, compute, kernel_out, NULL);
    WK_NO_GRAD(st = elementwise(&r, NULL, name, &k, 2, inputs, names, result, compute, kernel_out, NULL));
    if (st) return st;
    return wk_publish(out, r, wk_wants_grad(2, inputs) ? wk_record_binary(r, op, a, b, alpha) : WICK_OK);
}

wick_status wick_binary(wick_tensor **out, wick_binary_op op, const wick_tensor *a, const wick_tensor *b) {
    return binary(out, NULL, op, a, b, false, 1);
}
wick_status wick_binary_(wick_binary_op op, wick_tensor *a, const wick_tensor *b) {
    return binary(NULL, a, op, a, b, false, 1);
}
wick_status wick_add_scaled(wick_tensor **out, const wick_tensor *a, const wick_tensor *b, double alpha) {
    return binary(out, NULL, WICK_ADD, a, b, false, alpha);
}
wick_status wick_add_scaled_(wick_tensor *a, const wick_tensor *b, double alpha) {
    return binary(NULL, a, WICK_ADD, a, b, false, alpha);
}

/* A number operand becomes a 0-dim CPU tensor that ranks below every tensor. */
/* Beside a floating tensor the number is made in the kernel's dtype right away
 * (the result type is the same), which spares a conversion per op. */
static wick_status scalar_tensor(wick_tensor **out, wick_scalar s, const wick_tensor *a) {
    wick_dtype d = s.is_integer == WICK_SCALAR_BOOL ? WICK_BOOL : s.is_integer ? WICK_INT64 : WICK_FLOAT64;
    if (wick_dtype_is_floating(a->dtype)) d = compute_dtype(a->dtype);
    wick_status st = wk_tensor_new(out, 0, NULL, d, wick_cpu());
    if (st) return st;
    wk_store_double(wk_data(*out), d, s.value);
    return WICK_OK;
}

/* PyTorch's check of an integer tensor to a negative integer power (deg ** -1 would
 * otherwise be a silent integer division: 2^-1 = 0) */
static wick_status check_int_pow(wick_binary_op op, const wick_tensor *a, wick_scalar s, int scalar_first) {
    if (op == WICK_POW && !scalar_first && s.is_integer && s.value < 0 && !wick_dtype_is_floating(a->dtype) &&
        !wick_dtype_is_complex(a->dtype))
        return wick_fail(WICK_ERR_ARGUMENT, "pow: Integers to negative integer powers are not allowed (make the "
                                            "tensor floating first: t:float():pow(-1))");
    return WICK_OK;
}

/* PyTorch casts a number beside a float16 / bfloat16 tensor to that dtype first for these ops (its
 * mul, div and the comparisons take the number at full precision): 0.2h + 0.1 is 0.2h + 0.1h */
static wick_scalar rounded_like(wick_binary_op op, const wick_tensor *a, wick_scalar s) {
    if ((a->dtype != WICK_FLOAT16 && a->dtype != WICK_BFLOAT16) ||
        (op != WICK_ADD && op != WICK_SUB && op != WICK_POW && op != WICK_FMOD && op != WICK_REMAINDER))
        return s;
    char buf[8];
    wk_store_double(buf, a->dtype, s.value);
    s.value = wk_load_double(buf, a->dtype);
    return s;
}

wick_status wick_binary_scalar(wick_tensor **out, wick_binary_op op, const wick_tensor *a, wick_scalar s,
                               int scalar_first) {
    wick_status cst = check_int_pow(op, a, s, scalar_first);
    if (cst) return cst;
    s = rounded_like(op, a, s);
    wick_tensor *b;
    wick_status st = scalar_tensor(&b, s, a);
    if (st) return st;
    if (!scalar_first) {
        st = binary(out, NULL, op, a, b, true, 1);
    } else {
        /* number op tensor: the tensor still decides the dtype and the device; the number keeps
         * the compute precision (float32 beside bfloat16 and float16), as in tensor op number
         * (Muon's b * A is A * b), where a 0-dim number beside a tensor of dims cannot promote */
        wick_dtype r = result_type(a, b, true);
        wick_dtype hold = a->ndim > 0 && wick_dtype_is_floating(r) ? compute_dtype(r) : r;
        wick_tensor *full;
        if (!(st = wk_tensor_new(&full, 0, NULL, hold, wick_cpu()))) {
            wk_store_double(wk_data(full), hold, s.value);
            st = binary(out, NULL, op, full, a, false, 1);
            wick_tensor_release(full);
        }
    }
    wick_tensor_release(b);
    return st;
}

wick_status wick_binary_scalar_(wick_binary_op op, wick_tensor *a, wick_scalar s) {
    wick_status cst = check_int_pow(op, a, s, 0);
    if (cst) return cst;
    s = rounded_like(op, a, s);
    wick_tensor *b;
    wick_status st = scalar_tensor(&b, s, a);
    if (st) return st;
    st = binary(NULL, a, op, a, b, true, 1);
    wick_tensor_release(b);
    return st;
}

/* ---- clamp, where ---- */

static wick_status clamp(wick_tensor **out, wick_tensor *inplace, const wick_tensor *a, double lo, double hi,
                         bool hardtanh) {
    if (a->dtype == WICK_BOOL) return wick_fail(WICK_ERR_DTYPE, "clamp: not implemented for bool tensors");
    if (lo > hi) lo = hi; /* PyTorch's min(max(x, lo), hi): every element is hi */
    if (wk_is_integral(a->dtype) && (isnan(lo) || isnan(hi)))
        return wick_fail(WICK_ERR_ARGUMENT, "clamp: a NaN bound cannot clamp a %s tensor", wick_dtype_name(a->dtype));
    wick_dtype compute = compute_dtype(a->dtype);
    kernel_call k = {K_CLAMP, 0, lo, hi};
    const char *names[1] = {"input"};
    wick_tensor *r = NULL;
    wick_status st;
    bool record = false;
    if (inplace && (st = wk_check_inplace("clamp", a, 0, NULL, &record))) return st;
    if (inplace && record) {
        st = clamp(&r, NULL, a, lo, hi, hardtanh);
        return adopt_result("clamp", inplace, r, st);
    }
    if (inplace) return elementwise(NULL, inplace, "clamp", &k, 1, &a, names, a->dtype, compute, compute, NULL);
    WK_NO_GRAD(st = elementwise(&r, NULL, "clamp", &k, 1, &a, names, a->dtype, compute, compute, NULL));
    if (st) return st;
    return wk_publish(out, r, wk_wants_grad(1, &a) ? wk_record_clamp(r, a, lo, hi, hardtanh) : WICK_OK);
}

wick_status wick_clamp(wick_tensor **out, const wick_tensor *a, double lo, double hi) {
    return clamp(out, NULL, a, lo, hi, false);
}
wick_status wick_clamp_(wick_tensor *a, double lo, double hi) { return clamp(NULL, a, a, lo, hi, false); }
wick_status wick_hardtanh(wick_tensor **out, const wick_tensor *a, double lo, double hi) {
    return clamp(out, NULL, a, lo, hi, true);
}

wick_status wick_where(wick_tensor **out, const wick_tensor *cond, const wick_tensor *a, const wick_tensor *b) {
    return wick_where_numbers(out, cond, a, b, 0);
}

wick_status wick_where_numbers(wick_tensor **out, const wick_tensor *cond, const wick_tensor *a, const wick_tensor *b,
                               int numbers) {
    if (cond->dtype != WICK_BOOL && cond->dtype != WICK_UINT8)
        return wick_fail(WICK_ERR_DTYPE, "where: expected condition to be a bool tensor, but got %s",
                         wick_dtype_name(cond->dtype));
    wick_dtype result = result_type_of(a, b, numbers);
    if (wick_dtype_is_complex(result)) return wk_complex_where(out, cond, a, b, result); /* complex.c */
    wick_dtype compute = compute_dtype(result);
    kernel_call k = {K_WHERE, 0, 0, 0};
    const wick_tensor *inputs[3] = {cond, a, b};
    const char *names[3] = {"condition", "input", "other"};
    const wick_dtype dtypes[3] = {WICK_BOOL, compute, compute};
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = elementwise(&r, NULL, "where", &k, 3, inputs, names, result, compute, compute, dtypes));
    if (st) return st;
    return wk_publish(out, r, wk_wants_grad(3, inputs) ? wk_record_where(r, cond, a, b) : WICK_OK);
}
