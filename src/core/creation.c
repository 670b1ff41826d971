/* Creating tensors, copying between dtypes and devices, reading values. */
#include "autograd.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

wick_options wick_default_options(void) { return (wick_options){WICK_FLOAT32, {WICK_CPU, -1}}; }

wick_status wick_empty(wick_tensor **out, int ndim, const int64_t *sizes, wick_options opt) {
    return wk_tensor_new(out, ndim, sizes, opt.dtype, opt.device);
}

wick_status wick_full(wick_tensor **out, int ndim, const int64_t *sizes, double value, wick_options opt) {
    wick_tensor *t;
    wick_status st = wk_check_scalar("full", value, opt.dtype); /* (named as the call: HF's finfo(float64).min into float32) */
    if (!st) st = wk_tensor_new(&t, ndim, sizes, opt.dtype, opt.device);
    if (st) return st;
    WK_COUNTED(t->storage, st = wick_fill_(t, value)); /* (a new tensor: version 0) */
    if (st) {
        wick_tensor_release(t);
        return st;
    }
    *out = t;
    return WICK_OK;
}

/* Builds on the CPU, then moves to the target device. */
static wick_status from_values(wick_tensor **out, int ndim, const int64_t *sizes, const void *values,
                               bool ints, wick_options opt) {
    wick_tensor *t;
    wick_device target = opt.device;
    wick_status st = wk_tensor_new(&t, ndim, sizes, opt.dtype,
                                   target.type == WICK_META ? target : wick_cpu());
    if (st) return st;
    if (target.type == WICK_META) return *out = t, WICK_OK;
    int64_t n = wick_tensor_numel(t);
    size_t es = wk_dtype_size(opt.dtype);
    char *p = wk_data(t);
    for (int64_t i = 0; i < n; i++) {
        if (ints) wk_store_int64(p + i * es, opt.dtype, ((const int64_t *)values)[i]);
        else wk_store_double(p + i * es, opt.dtype, ((const double *)values)[i]);
    }
    if (target.type == WICK_CPU) return *out = t, WICK_OK;
    opt.device = target;
    st = wick_to(out, t, opt);
    wick_tensor_release(t);
    return st;
}

wick_status wick_from_doubles(wick_tensor **out, int ndim, const int64_t *sizes, const double *values,
                              wick_options opt) {
    return from_values(out, ndim, sizes, values, false, opt);
}

wick_status wick_from_int64(wick_tensor **out, int ndim, const int64_t *sizes, const int64_t *values,
                            wick_options opt) {
    return from_values(out, ndim, sizes, values, true, opt);
}

wick_status wick_arange(wick_tensor **out, double start, double stop, double step, wick_options opt) {
    if (step == 0) return wick_fail(WICK_ERR_ARGUMENT, "arange: step must be nonzero");
    if (!isfinite(start) || !isfinite(stop) || !isfinite(step))
        return wick_fail(WICK_ERR_ARGUMENT, "arange: start, stop and step must be finite");
    if ((step > 0 && start > stop) || (step < 0 && start < stop))
        return wick_fail(WICK_ERR_ARGUMENT,
                         "arange: upper bound and lower bound inconsistent with step sign "
                         "(start %g, stop %g, step %g)",
                         start, stop, step);
    double count = ceil((stop - start) / step);
    if (count > 1e15) return wick_fail(WICK_ERR_OOM, "out of memory: arange of %.0f elements", count);
    int64_t n = (int64_t)count;
    wick_tensor *t;
    wick_status st = wk_tensor_new(&t, 1, &n, opt.dtype, opt.device.type == WICK_META ? opt.device : wick_cpu());
    if (st) return st;
    char *p = wk_data(t);
    size_t es = wk_dtype_size(opt.dtype);
    /* PyTorch's integer arange: the count from the numbers, the values from start and step cast to
     * integers first (arange(0, 3.5, 1.5) is 0, 1, 2) */
    if (wk_is_integral(opt.dtype) && !wick_dtype_is_complex(opt.dtype)) start = trunc(start), step = trunc(step);
    for (int64_t i = 0; p && i < n; i++) wk_store_double(p + i * es, opt.dtype, start + (double)i * step);
    if (opt.device.type != WICK_CPU && opt.device.type != WICK_META) {
        st = wick_to(out, t, opt);
        wick_tensor_release(t);
        return st;
    }
    *out = t;
    return WICK_OK;
}

wick_status wick_eye(wick_tensor **out, int64_t n, int64_t m, wick_options opt) {
    int64_t sizes[2] = {n, m < 0 ? n : m};
    wick_tensor *t, *diag;
    wick_status st = wick_full(&t, 2, sizes, 0, opt);
    if (st) return st;
    /* the diagonal is a strided view: fill it in place */
    int64_t len = sizes[0] < sizes[1] ? sizes[0] : sizes[1], stride = sizes[1] + 1;
    if ((st = wk_tensor_view(&diag, t, 1, &len, &stride, 0)) || (st = wick_fill_(diag, 1))) {
        wick_tensor_release(t);
        return st;
    }
    wick_tensor_release(diag);
    *out = t;
    return WICK_OK;
}

static wick_status random_fill(wick_tensor **out, int ndim, const int64_t *sizes, wick_options opt,
                               int normal) {
    bool cplx = wick_dtype_is_complex(opt.dtype);
    if (!wick_dtype_is_floating(opt.dtype) && !cplx)
        return wick_fail(WICK_ERR_DTYPE, "%s: expected a floating-point or complex dtype, got %s",
                         normal ? "randn" : "rand", wick_dtype_name(opt.dtype));
    wick_tensor *t, *parts = NULL;
    wick_status st = wk_tensor_new(&t, ndim, sizes, opt.dtype, opt.device);
    if (st) return st;
    /* a complex tensor: its parts drawn as a real tensor's (PyTorch's randn
     * gives each part variance 1/2, so that |z|^2 has mean 1) */
    if (cplx && t->storage->backend) WK_NO_GRAD(st = wick_view_as_real(&parts, t));
    wick_tensor *target = parts ? parts : t;
    if (!st && t->storage->backend) {
        uint64_t seed, offset, n = (uint64_t)wick_tensor_numel(target);
        wk_rng_reserve(normal ? 2 * n : n, &seed, &offset);
        st = t->storage->backend->random(target, normal, seed, offset);
    }
    if (!st && parts && normal) WK_NO_GRAD(st = wick_binary_scalar_(WICK_MUL, parts, (wick_scalar){M_SQRT1_2, 0}));
    wick_tensor_release(parts);
    if (st) return wick_tensor_release(t), st;
    *out = t;
    return WICK_OK;
}

wick_status wick_rand(wick_tensor **out, int ndim, const int64_t *sizes, wick_options opt) {
    return random_fill(out, ndim, sizes, opt, 0);
}
wick_status wick_randn(wick_tensor **out, int ndim, const int64_t *sizes, wick_options opt) {
    return random_fill(out, ndim, sizes, opt, 1);
}

/* ---- copy, fill, clone, to ---- */

static wick_status copy_as(wick_tensor **out, const wick_tensor *t, wick_options opt);

/* Between devices the bytes cross as one contiguous block in dst's dtype:
 * broadcasting, conversion and strides are handled on one side or the other. */
static wick_status copy_across(wick_tensor *dst, const wick_tensor *src, int non_blocking) {
    wick_device dd = dst->storage->device, sd = src->storage->device;
    const wick_backend *be = dd.type != WICK_CPU ? dst->storage->backend : src->storage->backend;
    if (!be->transfer) return wick_fail(WICK_ERR_UNSUPPORTED, "copy_: no copies between these devices");
    wick_tensor *e = NULL, *s = NULL, *d = NULL;
    wick_status st;
    WK_NO_GRAD(st = wick_expand(&e, (wick_tensor *)src, dst->ndim, dst->sizes));
    if (!st && e->dtype == dst->dtype && wick_tensor_is_contiguous(e)) wick_tensor_retain(s = e);
    else if (!st) st = copy_as(&s, e, (wick_options){dst->dtype, sd, 0});
    if (!st && wick_tensor_is_contiguous(dst)) wick_tensor_retain(d = dst);
    else if (!st) st = wk_tensor_new(&d, dst->ndim, dst->sizes, dst->dtype, dd);
    if (!st) {
        size_t nbytes = (size_t)wick_tensor_numel(dst) * wk_dtype_size(dst->dtype);
        if (nbytes) st = be->transfer(wk_data(d), dd, wk_data(s), sd, nbytes, non_blocking);
    }
    if (!st && d != dst) st = wick_copy_(dst, d);
    wick_tensor_release(e);
    wick_tensor_release(s);
    wick_tensor_release(d);
    return st;
}

/* copy_ that autograd records (dst or src tracked): src as dst's shape, dtype
 * and device through recorded ops, which dst takes over (wk_adopt_inplace):
 * src gets the gradient, dst's old values none, as PyTorch's CopyBackwards. */
static wick_status copy_recorded(wick_tensor *dst, const wick_tensor *src) {
    wick_tensor *e = NULL, *r = NULL;
    /* (a leaf src takes a recorded view, so that dst has a node to reach it by) */
    bool same = src->grad_fn && src->ndim == dst->ndim && memcmp(src->sizes, dst->sizes, sizeof(int64_t) * src->ndim) == 0;
    wick_status st = same ? (wick_tensor_retain((wick_tensor *)src), e = (wick_tensor *)src, WICK_OK)
                          : wick_expand(&e, (wick_tensor *)src, dst->ndim, dst->sizes);
    if (!st) st = wick_to(&r, e, (wick_options){dst->dtype, dst->storage->device, 0});
    wick_tensor_release(e);
    if (!st) st = wk_adopt_inplace(dst, r);
    wick_tensor_release(r);
    return st;
}

wick_status wick_copy_(wick_tensor *dst, const wick_tensor *src) {
    int n;
    int64_t shape[WICK_MAX_DIMS];
    wick_status st = wk_broadcast_shapes("copy_", dst->ndim, dst->sizes, src->ndim, src->sizes, &n, shape);
    if (st) return st;
    if (n != dst->ndim || memcmp(shape, dst->sizes, sizeof(int64_t) * n) != 0) {
        char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
        return wick_fail(WICK_ERR_SHAPE, "copy_: size mismatch: source %s cannot be copied into %s",
                         wk_shape_str(src->ndim, src->sizes, a, sizeof a),
                         wk_shape_str(dst->ndim, dst->sizes, b, sizeof b));
    }
    bool record = false;
    if ((st = wk_check_writable("copy_", dst))) return st;
    if ((st = wk_check_inplace("copy_", dst, 1, &src, &record))) return st;
    if (record) return copy_recorded(dst, src);
    wick_device dd = dst->storage->device, sd = src->storage->device;
    if (dd.type == WICK_META) return WICK_OK;
    if (sd.type == WICK_META)
        return wick_fail(WICK_ERR_DEVICE, "copy_: cannot copy out of a meta tensor: it has no data (a module built on meta: m:to_empty{device = ...})");
    if (wick_dtype_is_complex(dst->dtype) || wick_dtype_is_complex(src->dtype))
        return wk_complex_copy(dst, src); /* the real views' copies (complex.c) */
    /* a source laid over the destination's memory otherwise (x:copy_(x:t()))
     * would be read after it was written: copied out first */
    wick_tensor *own = NULL;
    if (src->storage == dst->storage && !wk_same_layout(src, dst)) {
        WK_NO_GRAD(st = wick_clone(&own, src));
        if (st) return st;
        src = own;
    }
    /* a 0-dim CPU source goes by value in the kernel's arguments (wk_iter_init) */
    bool by_value = src->ndim == 0 && sd.type == WICK_CPU;
    if (!wick_device_equal(dd, sd) && !by_value) {
        st = copy_across(dst, src, 0);
    } else {
        wk_iter it;
        const wick_tensor *ops[2] = {dst, src};
        wk_iter_init(&it, 2, ops);
        st = dst->storage->backend->copy(&it);
    }
    wick_tensor_release(own);
    return st;
}

wick_status wick_fill_(wick_tensor *t, double value) {
    bool record = false;
    wick_status st = wk_check_scalar("fill_", value, t->dtype);
    if (!st) st = wk_check_inplace("fill_", t, 0, NULL, &record);
    if (st) return st;
    if (record) { /* a tracked t: it becomes a constant, out of the graph (its old values get no gradient) */
        wick_tensor *c = NULL;
        WK_NO_GRAD(st = wick_full(&c, t->ndim, t->sizes, value, (wick_options){t->dtype, t->storage->device, 0}));
        if (!st) st = wk_adopt_inplace(t, c);
        wick_tensor_release(c);
        return st;
    }
    if (!t->storage->backend) return WICK_OK; /* meta */
    if (wick_dtype_is_complex(t->dtype)) return wk_complex_fill(t, value, 0);
    wk_iter it;
    const wick_tensor *ops[1] = {t};
    wk_iter_init(&it, 1, ops);
    return t->storage->backend->fill(&it, value);
}

static wick_status copy_as(wick_tensor **out, const wick_tensor *t, wick_options opt) {
    wick_tensor *c;
    wick_status st = wk_tensor_new(&c, t->ndim, t->sizes, opt.dtype, opt.device);
    if (st) return st;
    bool across = !wick_device_equal(opt.device, t->storage->device) && t->storage->backend;
    if (c->storage->backend && (st = across ? copy_across(c, t, opt.non_blocking) : wick_copy_(c, t))) {
        wick_tensor_release(c);
        return st;
    }
    /* (a new storage: filling it is no write anyone saw, so its _version starts at 0, as PyTorch's clone) */
    __atomic_store_n(&c->storage->version, 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&c->storage->data_writes, 0u, __ATOMIC_RELAXED);
    *out = c;
    return WICK_OK;
}

/* A copy that autograd sees as the identity (the engine converts the gradient
 * back to the input's dtype and device). */
static wick_status recorded_copy(wick_tensor **out, const wick_tensor *t, wick_options opt, const char *node) {
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = copy_as(&r, t, opt));
    if (st) return st;
    /* a cast to an integer or bool dtype is not differentiable (PyTorch's: no history, no gradient through it) */
    bool differentiable = wick_dtype_is_floating(opt.dtype) || wick_dtype_is_complex(opt.dtype);
    return wk_publish(out, r, differentiable && wk_wants_grad(1, &t) ? wk_record_copy(r, t, node) : WICK_OK);
}

wick_status wick_clone(wick_tensor **out, const wick_tensor *t) {
    return recorded_copy(out, t, (wick_options){t->dtype, t->storage->device}, "CloneBackward");
}

wick_status wick_to(wick_tensor **out, wick_tensor *t, wick_options opt) {
    if (opt.dtype == t->dtype && wick_device_equal(opt.device, t->storage->device)) {
        wick_tensor_retain(t);
        *out = t;
        return WICK_OK;
    }
    return recorded_copy(out, t, opt, "ToCopyBackward");
}

static wick_status check_item(const wick_tensor *t) {
    if (wick_tensor_numel(t) != 1)
        return wick_fail(WICK_ERR_SHAPE,
                         "a Tensor with %" PRId64 " elements cannot be converted to a number (item() "
                         "needs exactly one element)",
                         wick_tensor_numel(t));
    if (wk_is_meta(t)) return wick_fail(WICK_ERR_DEVICE, "item(): a meta tensor has no data to read");
    if (wick_dtype_is_complex(t->dtype)) /* (nor do the 8 bytes below hold a complex128) */
        return wick_fail(WICK_ERR_DTYPE,
                         "item(): a %s value has two parts, which one number cannot hold: read t.real:item() and "
                         "t.imag:item()",
                         wick_dtype_name(t->dtype));
    return WICK_OK;
}

/* The element of a one-element tensor, copied to the CPU when it lives elsewhere. */
static wick_status item_bytes(const wick_tensor *t, char *bytes) {
    wick_status st = check_item(t);
    if (st) return st;
    size_t size = wk_dtype_size(t->dtype);
    if (t->storage->device.type == WICK_CPU) {
        memcpy(bytes, wk_data(t), size);
        return WICK_OK;
    }
    return t->storage->backend->transfer(bytes, wick_cpu(), wk_data(t), t->storage->device, size, 0);
}

wick_status wick_item_double(const wick_tensor *t, double *out) {
    char bytes[8];
    wick_status st = item_bytes(t, bytes);
    if (!st) *out = wk_load_double(bytes, t->dtype);
    return st;
}

wick_status wick_item_int64(const wick_tensor *t, int64_t *out) {
    char bytes[8];
    wick_status st = item_bytes(t, bytes);
    if (!st) *out = wk_load_int64(bytes, t->dtype);
    return st;
}

double wick_get_double(const wick_tensor *t, int64_t linear) {
    if (!t || t->storage->device.type != WICK_CPU || linear < 0 || linear >= wick_tensor_numel(t)) {
        if (t && t->storage->device.type != WICK_CPU) wick_fail(WICK_ERR_DEVICE, "wick_get_double: the tensor is not on the CPU");
        else wick_fail(WICK_ERR_INDEX, "wick_get_double: position %" PRId64 " is outside the tensor", linear);
        return NAN;
    }
    int64_t off = 0;
    for (int i = t->ndim - 1; i >= 0; i--) {
        off += (linear % t->sizes[i]) * t->strides[i];
        linear /= t->sizes[i];
    }
    return wk_load_double((const char *)t->storage->data + (t->offset + off) * wk_dtype_size(t->dtype),
                          t->dtype);
}
