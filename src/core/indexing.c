/* index_select, gather, scatter, cat, stack, softmax: checks and shapes here,
 * kernels in the backends. Index tensors are 0-based int64 in C. */
#include "autocast.h"
#include "autograd.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static wick_status check_index_tensor(const char *op, const wick_tensor *index) {
    if (index->dtype != WICK_INT64 && index->dtype != WICK_INT32)
        return wick_fail(WICK_ERR_DTYPE, "%s: expected the index to be an int64 tensor, but got %s", op,
                         wick_dtype_name(index->dtype));
    return WICK_OK;
}

/* The index as a contiguous int64 tensor on the index's device. */
static wick_status index_as_int64(wick_tensor **out, const wick_tensor *index) {
    wick_tensor *t;
    wick_status st = wick_to(&t, (wick_tensor *)index, (wick_options){WICK_INT64, index->storage->device});
    if (st) return st;
    st = wick_contiguous(out, t);
    wick_tensor_release(t);
    return st;
}

static wick_status index_select_forward(wick_tensor **out, const wick_tensor *a, int dim, const wick_tensor *index) {
    const wick_tensor *ts[2] = {a, index};
    const char *names[2] = {"self", "index"};
    wick_status st = wk_check_same_device_any("index_select", 2, ts, names);
    if (st || (st = check_index_tensor("index_select", index)) || (st = wk_wrap_dim("index_select", &dim, a->ndim)))
        return st;
    if (index->ndim > 1)
        return wick_fail(WICK_ERR_SHAPE, "index_select: the index must be a vector (1-D), got %d-D", index->ndim);
    if (a->ndim == 0 && wick_tensor_numel(index) != 1)
        return wick_fail(WICK_ERR_SHAPE, "index_select: a 0-d tensor takes exactly one index, got %lld",
                         (long long)wick_tensor_numel(index));
    int64_t shape[WICK_MAX_DIMS];
    memcpy(shape, a->sizes, sizeof shape);
    if (a->ndim > 0) shape[dim] = wick_tensor_numel(index);
    wick_tensor *r, *idx = NULL;
    if ((st = wk_tensor_new(&r, a->ndim, shape, a->dtype, a->storage->device))) return st;
    if (!wk_is_meta(r) && !(st = index_as_int64(&idx, index)))
        st = r->storage->backend->index_select(r, a, dim, idx);
    wick_tensor_release(idx);
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

static wick_status check_gather_shapes(const char *op, const wick_tensor *a, int dim, const wick_tensor *index,
                                       const char *other_name) {
    char x[WK_SHAPE_BUF], y[WK_SHAPE_BUF];
    if (index->ndim != a->ndim)
        return wick_fail(WICK_ERR_SHAPE, "%s: index tensor must have the same number of dimensions as %s (%d vs %d)",
                         op, other_name, index->ndim, a->ndim);
    for (int d = 0; d < a->ndim; d++)
        if (d != dim && index->sizes[d] > a->sizes[d])
            return wick_fail(WICK_ERR_SHAPE, "%s: size mismatch: index %s is larger than %s %s apart from dimension %d", op,
                             wk_shape_str(index->ndim, index->sizes, x, sizeof x), other_name,
                             wk_shape_str(a->ndim, a->sizes, y, sizeof y), dim + 1);
    return WICK_OK;
}

static wick_status gather_forward(wick_tensor **out, const wick_tensor *a, int dim, const wick_tensor *index) {
    const wick_tensor *ts[2] = {a, index};
    const char *names[2] = {"self", "index"};
    wick_status st = wk_check_same_device_any("gather", 2, ts, names);
    if (st || (st = check_index_tensor("gather", index)) || (st = wk_wrap_dim("gather", &dim, a->ndim)) ||
        (st = check_gather_shapes("gather", a, dim, index, "input")))
        return st;
    wick_tensor *r, *idx = NULL;
    if ((st = wk_tensor_new(&r, index->ndim, index->sizes, a->dtype, a->storage->device))) return st;
    if (!wk_is_meta(r) && !(st = index_as_int64(&idx, index))) st = r->storage->backend->gather(r, a, dim, idx);
    wick_tensor_release(idx);
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

static wick_status scatter_common(const char *op, wick_tensor *a, int dim, const wick_tensor *index,
                                  const wick_tensor *src, bool add);

/* scatter_ and scatter_add_ of complex tensors: of their real views, the index
 * repeated for both parts of each pair */
static wick_status complex_scatter(const char *op, wick_tensor *a, int dim, const wick_tensor *index,
                                   const wick_tensor *src, bool add) {
    wick_tensor *ar = NULL, *sc = NULL, *sr = NULL, *iu = NULL, *ie = NULL;
    wick_status st = wk_wrap_dim(op, &dim, a->ndim);
    if (!st && !wick_dtype_is_complex(a->dtype))
        st = wick_fail(WICK_ERR_DTYPE, "%s: a %s source does not fit a %s tensor", op, wick_dtype_name(src->dtype),
                       wick_dtype_name(a->dtype));
    if (!st && index->ndim != a->ndim) st = check_gather_shapes(op, a, dim, index, "self");
    if (!st) st = wick_to(&sc, (wick_tensor *)src, (wick_options){a->dtype, src->storage->device, 0});
    if (!st) st = wick_view_as_real(&ar, a);
    if (!st) st = wick_view_as_real(&sr, sc);
    if (!st) st = wick_unsqueeze(&iu, (wick_tensor *)index, index->ndim);
    if (!st) {
        int64_t sizes[WICK_MAX_DIMS];
        memcpy(sizes, index->sizes, sizeof(int64_t) * (size_t)index->ndim);
        sizes[index->ndim] = 2;
        st = wick_expand(&ie, iu, index->ndim + 1, sizes);
    }
    if (!st) st = scatter_common(op, ar, dim, ie, sr, add);
    wick_tensor_release(ar);
    wick_tensor_release(sc);
    wick_tensor_release(sr);
    wick_tensor_release(iu);
    wick_tensor_release(ie);
    return st;
}

static wick_status scatter_common(const char *op, wick_tensor *a, int dim, const wick_tensor *index,
                                  const wick_tensor *src, bool add) {
    if (wick_dtype_is_complex(a->dtype) || wick_dtype_is_complex(src->dtype))
        return complex_scatter(op, a, dim, index, src, add);
    const wick_tensor *ts[3] = {a, index, src};
    const char *names[3] = {"self", "index", "src"};
    wick_status st = wk_check_same_device(op, 3, ts, names);
    if (st || (st = check_index_tensor(op, index)) || (st = wk_wrap_dim(op, &dim, a->ndim)) ||
        (st = check_gather_shapes(op, a, dim, index, "self")) || (st = check_gather_shapes(op, src, -1, index, "src")) ||
        (st = wk_check_writable(op, a)) || (st = wk_check_inplace(op, a, 1, &src, NULL)))
        return st;
    if (wk_is_meta(a)) return WICK_OK;
    wick_tensor *idx, *s;
    if ((st = index_as_int64(&idx, index))) return st;
    wick_tensor *copy = NULL; /* a source over a's own memory: read before any write */
    if (src->storage == a->storage) WK_NO_GRAD(st = wick_clone(&copy, src));
    if (!st && !(st = wick_to(&s, copy ? copy : (wick_tensor *)src, (wick_options){a->dtype, a->storage->device}))) {
        st = add ? a->storage->backend->scatter_add(a, dim, idx, s) : a->storage->backend->scatter(a, dim, idx, s);
        wick_tensor_release(s);
    }
    wick_tensor_release(copy);
    wick_tensor_release(idx);
    return st;
}

wick_status wick_scatter_(wick_tensor *a, int dim, const wick_tensor *index, const wick_tensor *src) {
    return scatter_common("scatter", a, dim, index, src, false);
}

wick_status wick_scatter_add_(wick_tensor *a, int dim, const wick_tensor *index, const wick_tensor *src) {
    return scatter_common("scatter_add", a, dim, index, src, true);
}

/* index_add_ of complex tensors: of their real views, each pair at its place */
static wick_status complex_index_add_(wick_tensor *a, int dim, const wick_tensor *index, const wick_tensor *src) {
    wick_tensor *ar = NULL, *sc = NULL, *sr = NULL;
    wick_status st = wk_wrap_dim("index_add_", &dim, a->ndim);
    if (!st && !wick_dtype_is_complex(a->dtype))
        st = wick_fail(WICK_ERR_DTYPE, "index_add_: a %s source does not fit a %s tensor", wick_dtype_name(src->dtype),
                       wick_dtype_name(a->dtype));
    if (!st) st = wick_to(&sc, (wick_tensor *)src, (wick_options){a->dtype, src->storage->device, 0});
    if (!st) st = wick_view_as_real(&ar, a);
    if (!st) st = wick_view_as_real(&sr, sc);
    if (!st) st = wick_index_add_(ar, dim, index, sr);
    wick_tensor_release(ar);
    wick_tensor_release(sc);
    wick_tensor_release(sr);
    return st;
}

wick_status wick_index_add_(wick_tensor *a, int dim, const wick_tensor *index, const wick_tensor *src) {
    if (wick_dtype_is_complex(a->dtype) || wick_dtype_is_complex(src->dtype))
        return complex_index_add_(a, dim, index, src);
    const wick_tensor *ts[3] = {a, index, src};
    const char *names[3] = {"self", "index", "source"};
    wick_status st = wk_check_same_device("index_add_", 3, ts, names);
    if (st || (st = check_index_tensor("index_add_", index)) || (st = wk_wrap_dim("index_add_", &dim, a->ndim)) ||
        (st = wk_check_inplace("index_add_", a, 1, &src, NULL)))
        return st;
    bool fits = index->ndim <= 1 && src->ndim == a->ndim && (a->ndim > 0 || wick_tensor_numel(index) == 1);
    for (int d = 0; fits && d < a->ndim; d++)
        fits = src->sizes[d] == (d == dim ? wick_tensor_numel(index) : a->sizes[d]);
    if (!fits) {
        char x[WK_SHAPE_BUF], y[WK_SHAPE_BUF];
        return wick_fail(WICK_ERR_SHAPE, "index_add_: source of shape %s does not fit self %s with %lld indices along dimension %d",
                         wk_shape_str(src->ndim, src->sizes, x, sizeof x), wk_shape_str(a->ndim, a->sizes, y, sizeof y),
                         (long long)wick_tensor_numel(index), dim + 1);
    }
    if (wk_is_meta(a)) return WICK_OK;
    wick_tensor *idx, *s;
    if ((st = index_as_int64(&idx, index))) return st;
    if (!(st = wick_to(&s, (wick_tensor *)src, (wick_options){a->dtype, a->storage->device}))) {
        st = a->storage->backend->index_add(a, dim, idx, s);
        wick_tensor_release(s);
    }
    wick_tensor_release(idx);
    return st;
}

wick_status wick_scatter(wick_tensor **out, const wick_tensor *a, int dim, const wick_tensor *index,
                         const wick_tensor *src) {
    wick_tensor *r = NULL;
    wick_status st = wick_clone(&r, a);
    if (st) return st;
    if ((st = wick_scatter_(r, dim, index, src))) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

static wick_status cat_forward(wick_tensor **out, int count, const wick_tensor *const *ts, int dim) {
    if (count < 1) return wick_fail(WICK_ERR_ARGUMENT, "cat: expected a non-empty list of tensors");
    const char *names[1] = {"tensors"};
    for (int i = 1; i < count; i++) {
        const wick_tensor *pair[2] = {ts[0], ts[i]};
        const char *pnames[2] = {names[0], names[0]};
        wick_status st = wk_check_same_device_any("cat", 2, pair, pnames);
        if (st) return st;
    }
    const wick_tensor *first = ts[0];
    if (first->ndim == 0) return wick_fail(WICK_ERR_SHAPE, "cat: zero-dimensional tensor (at position 1) cannot be concatenated");
    wick_status st = wk_wrap_dim("cat", &dim, first->ndim);
    if (st) return st;
    int64_t shape[WICK_MAX_DIMS];
    memcpy(shape, first->sizes, sizeof shape);
    shape[dim] = 0;
    wick_dtype dtype = first->dtype;
    for (int i = 0; i < count; i++) {
        const wick_tensor *t = ts[i];
        char x[WK_SHAPE_BUF], y[WK_SHAPE_BUF];
        bool fits = t->ndim == first->ndim;
        for (int d = 0; fits && d < t->ndim; d++)
            if (d != dim && t->sizes[d] != first->sizes[d]) fits = false;
        if (!fits)
            return wick_fail(WICK_ERR_SHAPE,
                             "cat: size mismatch: tensor 1 has shape %s and tensor %d has shape %s; sizes must "
                             "match except in dimension %d",
                             wk_shape_str(first->ndim, first->sizes, x, sizeof x), i + 1,
                             wk_shape_str(t->ndim, t->sizes, y, sizeof y), dim + 1);
        if (__builtin_add_overflow(shape[dim], t->sizes[dim], &shape[dim]))
            return wick_fail(WICK_ERR_SHAPE, "cat: the size of the result along dimension %d overflows", dim + 1);
        dtype = wick_promote_types(dtype, t->dtype);
    }
    wick_tensor *r;
    if ((st = wk_tensor_new(&r, first->ndim, shape, dtype, first->storage->device))) return st;
    int64_t at = 0;
    for (int i = 0; i < count && !st && !wk_is_meta(r); i++) {
        wick_tensor *slot;
        if (!(st = wick_narrow(&slot, r, dim, at, ts[i]->sizes[dim]))) {
            st = wick_copy_(slot, ts[i]);
            wick_tensor_release(slot);
        }
        at += ts[i]->sizes[dim];
    }
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

wick_status wick_stack(wick_tensor **out, int count, const wick_tensor *const *ts, int dim) {
    if (count < 1) return wick_fail(WICK_ERR_ARGUMENT, "stack: expected a non-empty list of tensors");
    if (count > 1 << 20) return wick_fail(WICK_ERR_ARGUMENT, "stack: too many tensors (%d)", count);
    int n = ts[0]->ndim + 1;
    if (dim < -n || dim >= n)
        return wick_fail(WICK_ERR_INDEX, "stack: dimension %d out of range (expected 1 to %d, or -%d to -1)",
                         dim >= 0 ? dim + 1 : dim, n, n);
    if (dim < 0) dim += n;
    wick_tensor **parts = calloc((size_t)count, sizeof *parts);
    if (!parts) return wick_fail(WICK_ERR_OOM, "out of memory in stack");
    wick_status st = WICK_OK;
    for (int i = 0; i < count && !st; i++) {
        if (ts[i]->ndim != ts[0]->ndim || memcmp(ts[i]->sizes, ts[0]->sizes, sizeof(int64_t) * ts[0]->ndim) != 0) {
            char x[WK_SHAPE_BUF], y[WK_SHAPE_BUF];
            st = wick_fail(WICK_ERR_SHAPE, "stack expects each tensor to be equal size, but got %s at entry 1 and %s at entry %d",
                           wk_shape_str(ts[0]->ndim, ts[0]->sizes, x, sizeof x),
                           wk_shape_str(ts[i]->ndim, ts[i]->sizes, y, sizeof y), i + 1);
            break;
        }
        st = wick_unsqueeze(&parts[i], (wick_tensor *)ts[i], dim);
    }
    if (!st) st = wick_cat(out, count, (const wick_tensor *const *)parts, dim);
    if (!st && (*out)->grad_fn) (*out)->grad_fn->name = "StackBackward"; /* (PyTorch's name for the node) */
    for (int i = 0; i < count; i++) wick_tensor_release(parts[i]);
    free(parts);
    return st;
}

static wick_status softmax(wick_tensor **out, const wick_tensor *a, int dim, int log) {
    const char *op = log ? "log_softmax" : "softmax";
    wick_status st = wk_wrap_dim(op, &dim, a->ndim);
    if (st) return st;
    if (!wick_dtype_is_floating(a->dtype))
        return wick_fail(WICK_ERR_DTYPE, "%s: expected a floating-point tensor, got %s", op, wick_dtype_name(a->dtype));
    wick_dtype cd = a->dtype == WICK_FLOAT64 ? WICK_FLOAT64 : WICK_FLOAT32;
    wick_device dev = a->storage->device;
    wick_tensor *in = NULL, *c = NULL, *r = NULL;
    if ((st = wk_tensor_new(&r, a->ndim, a->sizes, cd, dev))) return st;
    if (!wk_is_meta(r)) {
        if ((st = wick_to(&in, (wick_tensor *)a, (wick_options){cd, dev})) || (st = wick_contiguous(&c, in))) goto done;
        if ((st = r->storage->backend->softmax(r, c, a->ndim ? dim : 0, log))) goto done;
    }
    if (cd != a->dtype) {
        wick_tensor *conv;
        if ((st = wick_to(&conv, r, (wick_options){a->dtype, dev}))) goto done;
        wick_tensor_release(r);
        r = conv;
    }
    *out = r;
    r = NULL;
done:
    wick_tensor_release(in);
    wick_tensor_release(c);
    wick_tensor_release(r);
    return st;
}

/* ---- the recorded forms ---- */

wick_status wick_index_select(wick_tensor **out, const wick_tensor *a, int dim, const wick_tensor *index) {
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = index_select_forward(&r, a, dim, index));
    if (st || !wk_wants_grad(1, &a)) return st ? st : (*out = r, WICK_OK);
    wk_wrap_dim("index_select", &dim, a->ndim);
    return wk_publish(out, r, wk_record_index_select(r, a, dim, index));
}

wick_status wick_gather(wick_tensor **out, const wick_tensor *a, int dim, const wick_tensor *index) {
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = gather_forward(&r, a, dim, index));
    if (st || !wk_wants_grad(1, &a)) return st ? st : (*out = r, WICK_OK);
    wk_wrap_dim("gather", &dim, a->ndim);
    return wk_publish(out, r, wk_record_gather(r, a, dim, index));
}

wick_status wick_cat(wick_tensor **out, int count, const wick_tensor *const *ts, int dim) {
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = cat_forward(&r, count, ts, dim));
    if (st || !wk_wants_grad(count, ts)) return st ? st : (*out = r, WICK_OK);
    wk_wrap_dim("cat", &dim, ts[0]->ndim);
    return wk_publish(out, r, wk_record_cat(r, count, ts, dim));
}

static wick_status recorded_softmax(wick_tensor **out, const wick_tensor *a, int dim, int log) {
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = softmax(&r, a, dim, log));
    if (st || !wk_wants_grad(1, &a)) return st ? st : (*out = r, WICK_OK);
    wk_wrap_dim("softmax", &dim, a->ndim);
    return wk_publish(out, r, wk_record_softmax(r, a, a->ndim ? dim : 0, log));
}

wick_status wick_softmax(wick_tensor **out, const wick_tensor *a, int dim) {
    WK_AUTOCAST(WK_AC_FP32_CUDA, 1, wick_softmax(out, c[0], dim), a);
    return recorded_softmax(out, a, dim, 0);
}
wick_status wick_log_softmax(wick_tensor **out, const wick_tensor *a, int dim) {
    WK_AUTOCAST(WK_AC_FP32_CUDA, 1, wick_log_softmax(out, c[0], dim), a);
    return recorded_softmax(out, a, dim, 1);
}
