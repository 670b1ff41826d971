/* Indexing by keys, read and write: t[{...}] views (selects, ranges, steps),
 * masks, index tensors, and the writes t[key] = v, masked_fill, masked_scatter_,
 * index_copy_, index_fill_, index_put_.
 *
 * Every write goes through one path (key_put): without autograd it writes in
 * place; when the target is tracked or the value requires grad it writes into
 * a copy, records IndexPutBackward (the target's gradient is g with zeros where
 * written, the value's is g[key]) and the target adopts the copy. Masks become
 * index tensors over the mask's dims merged into one (their positions are
 * found on the CPU: the result's size depends on the values, so it waits for
 * the device anyway, as PyTorch's does). Only the backends' existing kernels
 * are used (copy, fill, where, index_select, scatter, index_add), so every
 * backend has every form. Index tensors are 0-based int64 here; the Lua
 * binding converts its 1-based ones (wick_index_from_one_based). */
#include "autograd.h"

#include <inttypes.h>
#include <stdlib.h>

#define TRY(x)                                                                                                       \
    do {                                                                                                             \
        wick_status try_st_ = (x);                                                                                   \
        if (try_st_) return try_st_;                                                                                 \
    } while (0)

/* ---- strided slices: a view of every step-th element ---- */

static wick_status check_slice(const wick_tensor *t, int *dim, int64_t start, int64_t length, int64_t step) {
    if (t->ndim == 0) return wick_fail(WICK_ERR_INDEX, "slice: cannot slice a 0-dim tensor");
    TRY(wk_wrap_dim("slice", dim, t->ndim));
    int64_t size = t->sizes[*dim];
    if (step < 1) return wick_fail(WICK_ERR_ARGUMENT, "slice: step must be positive, got %" PRId64, step);
    if (start < 0 || length < 0 || start > size || (length > 0 && (length - 1) > (size - 1 - start) / step))
        return wick_fail(WICK_ERR_INDEX,
                         "slice: %" PRId64 " elements from %" PRId64 " by step %" PRId64
                         " reach past the end of dimension %d (size %" PRId64 ")",
                         length, start + 1, step, *dim + 1, size);
    return WICK_OK;
}

static wick_status slice_view(wick_tensor **out, const wick_tensor *t, int dim, int64_t start, int64_t length,
                              int64_t step) {
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    memcpy(sizes, t->sizes, sizeof(int64_t) * t->ndim);
    memcpy(strides, t->strides, sizeof(int64_t) * t->ndim);
    int64_t offset = t->offset + (start < t->sizes[dim] ? start * t->strides[dim] : 0);
    sizes[dim] = length;
    strides[dim] = length > 1 ? t->strides[dim] * step : t->strides[dim];
    return wk_tensor_view(out, t, t->ndim, sizes, strides, offset);
}

static wick_status slice_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *z, *v;
    TRY(wick_full(&z, n->ndim, n->sizes, 0, (wick_options){g->dtype, g->storage->device}));
    wick_status st = slice_view(&v, z, n->ints[0], (int64_t)n->scalars[0], (int64_t)n->scalars[1],
                                (int64_t)n->scalars[2]);
    if (!st) {
        st = wick_copy_(v, g);
        wick_tensor_release(v);
    }
    if (st) return wick_tensor_release(z), st;
    grads[0] = z;
    return WICK_OK;
}

wick_status wick_slice(wick_tensor **out, wick_tensor *t, int dim, int64_t start, int64_t length, int64_t step) {
    TRY(check_slice(t, &dim, start, length, step));
    wick_tensor *r;
    TRY(slice_view(&r, t, dim, start, length, step));
    const wick_tensor *in = t;
    if (!wk_wants_grad(1, &in)) return *out = r, WICK_OK;
    wk_node *n;
    wick_status st = wk_record(r, "SliceBackward", slice_backward, 0, 1, &in, &n);
    if (!st) {
        n->ints[0] = dim;
        n->scalars[0] = (double)start, n->scalars[1] = (double)length, n->scalars[2] = (double)step;
        n->ndim = t->ndim;
        memcpy(n->sizes, t->sizes, sizeof(int64_t) * t->ndim);
    }
    return wk_publish(out, r, st);
}

/* ---- keys ---- */

enum { KEY_VIEW, KEY_INDEX };
typedef struct wk_key {
    int kind;
    /* KEY_VIEW: entries for the dims from the first */
    int n;
    const wick_key_entry *entries;
    /* KEY_INDEX: along `dim` of t with its first `lead` dims merged into one
     * (lead 1: t as it is; 0: a new leading dim of size 1) */
    int lead, dim, accumulate;
    const wick_tensor *index; /* 0-based, int64, 1-D, contiguous, on t's device */
} wk_key;

/* t's shape with its first `lead` dims merged. */
static int merged_shape(const wick_tensor *t, int lead, int64_t *sizes) {
    if (lead == 1) {
        memcpy(sizes, t->sizes, sizeof(int64_t) * t->ndim);
        return t->ndim;
    }
    int64_t l = 1;
    for (int d = 0; d < lead; d++) l *= t->sizes[d];
    sizes[0] = l;
    for (int d = lead; d < t->ndim; d++) sizes[d - lead + 1] = t->sizes[d];
    return t->ndim - lead + 1;
}

/* t viewed through the key's entries (recorded when t is tracked). */
static wick_status view_entries(wick_tensor **out, wick_tensor *t, int n, const wick_key_entry *e) {
    if (n > t->ndim)
        return wick_fail(WICK_ERR_INDEX, "too many indices for tensor of dimension %d (got %d)", t->ndim, n);
    wick_tensor *cur = t, *next = NULL;
    wick_tensor_retain(t);
    wick_status st = WICK_OK;
    for (int i = 0, d = 0; i < n && !st; i++) {
        if (e[i].select) st = wick_select(&next, cur, d, e[i].start);
        else if (e[i].step == 1 && e[i].start == 0 && e[i].length == cur->sizes[d]) {
            d++;
            continue;
        } else if (e[i].step == 1) st = wick_narrow(&next, cur, d++, e[i].start, e[i].length);
        else st = wick_slice(&next, cur, d++, e[i].start, e[i].length, e[i].step);
        if (!st) {
            wick_tensor_release(cur);
            cur = next;
        }
    }
    if (!st && cur == t) { /* a key of whole dims: still a new view */
        st = t->ndim ? wick_narrow(&next, t, 0, 0, t->sizes[0]) : wick_reshape(&next, t, 0, NULL);
        if (!st) {
            wick_tensor_release(cur);
            cur = next;
        }
    }
    if (st) return wick_tensor_release(cur), st;
    *out = cur;
    return WICK_OK;
}

/* The shape of t[key]. */
static int region_shape(const wick_tensor *t, const wk_key *k, int64_t *sizes) {
    if (k->kind == KEY_INDEX) {
        int n = merged_shape(t, k->lead, sizes);
        sizes[k->dim] = wick_tensor_numel(k->index);
        return n;
    }
    int n = 0;
    for (int i = 0; i < k->n; i++)
        if (!k->entries[i].select) sizes[n++] = k->entries[i].length;
    for (int d = k->n; d < t->ndim; d++) sizes[n++] = t->sizes[d];
    return n;
}

/* t[key]: a view (KEY_VIEW) or a copy (KEY_INDEX), recorded when t is tracked. */
static wick_status key_read(wick_tensor **out, wick_tensor *t, const wk_key *k) {
    if (k->kind == KEY_VIEW) return view_entries(out, t, k->n, k->entries);
    int64_t sizes[WICK_MAX_DIMS];
    int n = merged_shape(t, k->lead, sizes);
    wick_tensor *m;
    TRY(wick_reshape(&m, t, n, sizes));
    wick_status st = wick_index_select(out, m, k->dim, k->index);
    wick_tensor_release(m);
    return st;
}

/* out = src along dim at the index positions (the last of repeated positions wins). */
static wick_status index_write(wick_tensor *m, const wk_key *k, const wick_tensor *src) {
    int64_t count = wick_tensor_numel(k->index);
    if (count == 0) return WICK_OK;
    if (k->accumulate) return wick_index_add_(m, k->dim, k->index, src);
    int64_t shape[WICK_MAX_DIMS];
    for (int d = 0; d < m->ndim; d++) shape[d] = d == k->dim ? count : 1;
    wick_tensor *iv, *ie;
    TRY(wick_view(&iv, (wick_tensor *)k->index, m->ndim, shape));
    wick_status st = wick_expand(&ie, iv, src->ndim, src->sizes);
    wick_tensor_release(iv);
    if (st) return st;
    st = wick_scatter_(m, k->dim, ie, src);
    wick_tensor_release(ie);
    return st;
}

/* t[key] = v (or the number s when v is NULL), in place, recording nothing.
 * For KEY_INDEX, v has the region's shape. */
static wick_status key_write(wick_tensor *t, const wk_key *k, const wick_tensor *v, double s) {
    wick_status st;
    if (k->kind == KEY_VIEW) {
        wick_tensor *w;
        TRY(view_entries(&w, t, k->n, k->entries));
        st = v ? wick_copy_(w, v) : wick_fill_(w, s);
        wick_tensor_release(w);
        return st;
    }
    if (wk_is_meta(t)) return WICK_OK;
    int64_t sizes[WICK_MAX_DIMS];
    int n = merged_shape(t, k->lead, sizes);
    wick_tensor *m = NULL, *c = NULL, *src = NULL, *scalar = NULL;
    if (k->lead != 1 && !wick_tensor_is_contiguous(t)) { /* write a contiguous copy, then copy it back */
        if ((st = wick_clone(&c, t))) return st;
        if (!(st = key_write(c, k, v, s))) st = wick_copy_(t, c);
        wick_tensor_release(c);
        return st;
    }
    if ((st = wick_view(&m, t, n, sizes))) return st;
    if (v) src = (wick_tensor *)v, wick_tensor_retain(src);
    else {
        int64_t rs[WICK_MAX_DIMS];
        int rn = region_shape(t, k, rs);
        if (!(st = wick_full(&scalar, 0, NULL, s, (wick_options){t->dtype, t->storage->device})))
            st = wick_expand(&src, scalar, rn, rs);
    }
    if (!st) st = index_write(m, k, src);
    wick_tensor_release(m);
    wick_tensor_release(src);
    wick_tensor_release(scalar);
    return st;
}

static wick_status put_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_key_entry entries[WICK_MAX_DIMS];
    wk_key k = {.kind = n->ints[0], .lead = n->ints[1], .dim = n->ints[2], .accumulate = n->ints[3], .n = n->ints[4]};
    if (k.kind == KEY_VIEW) {
        const int64_t *p = (const int64_t *)wk_data(n->saved[0]);
        for (int i = 0; i < k.n; i++)
            entries[i] = (wick_key_entry){(int)p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]};
        k.entries = entries;
    } else {
        k.index = n->saved[0];
    }
    if (n->edges[0].leaf || n->edges[0].node) {
        wick_tensor *gx;
        TRY(wick_clone(&gx, g));
        wick_status st = k.accumulate ? WICK_OK : key_write(gx, &k, NULL, 0);
        if (st) return wick_tensor_release(gx), st;
        grads[0] = gx;
    }
    if (n->n_inputs > 1 && (n->edges[1].leaf || n->edges[1].node)) TRY(key_read(&grads[1], g, &k));
    return WICK_OK;
}

static wick_status record_put(wick_tensor *r, const wick_tensor *t, const wk_key *k, const wick_tensor *v) {
    const wick_tensor *inputs[2] = {t, v};
    wk_node *n;
    TRY(wk_record(r, "IndexPutBackward", put_backward, 0, v ? 2 : 1, inputs, &n));
    n->ints[0] = k->kind, n->ints[1] = k->lead, n->ints[2] = k->dim, n->ints[3] = k->accumulate, n->ints[4] = k->n;
    if (k->kind == KEY_INDEX) return wk_save(n, 0, k->index, r);
    int64_t plan[4 * WICK_MAX_DIMS + 1], len = 4 * k->n;
    for (int i = 0; i < k->n; i++) {
        const wick_key_entry *e = &k->entries[i];
        plan[4 * i] = e->select, plan[4 * i + 1] = e->start, plan[4 * i + 2] = e->length, plan[4 * i + 3] = e->step;
    }
    wick_tensor *p;
    TRY(wick_from_int64(&p, 1, &len, plan, (wick_options){WICK_INT64, {WICK_CPU, -1}}));
    wick_status st = wk_save(n, 0, p, r);
    wick_tensor_release(p);
    return st;
}

/* v made to fit a region of shape rs: leading size-1 dims dropped, a CPU
 * scalar moved to the region's device, then expanded (all recorded). */
static wick_status fit_value(wick_tensor **out, wick_device dev, int rn, const int64_t *rs, const wick_tensor *v) {
    int64_t bs[WICK_MAX_DIMS];
    int bn, skip = 0;
    while (v->ndim - skip > rn && v->sizes[skip] == 1) skip++;
    char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
    if (v->ndim - skip > rn || wk_broadcast_shapes("index", rn, rs, v->ndim - skip, v->sizes + skip, &bn, bs) ||
        bn != rn || memcmp(bs, rs, sizeof(int64_t) * rn) != 0)
        return wick_fail(WICK_ERR_SHAPE, "shape mismatch: value tensor of shape %s cannot be broadcast to indexing result of shape %s",
                         wk_shape_str(v->ndim, v->sizes, a, sizeof a), wk_shape_str(rn, rs, b, sizeof b));
    wick_tensor *cur = (wick_tensor *)v, *next;
    wick_tensor_retain(cur);
    wick_status st = WICK_OK;
    if (skip) {
        if ((st = wick_reshape(&next, cur, v->ndim - skip, v->sizes + skip))) goto done;
        wick_tensor_release(cur), cur = next;
    }
    if (!wick_device_equal(cur->storage->device, dev)) { /* a 0-dim CPU value */
        if ((st = wick_to(&next, cur, (wick_options){cur->dtype, dev}))) goto done;
        wick_tensor_release(cur), cur = next;
    }
    if (cur->ndim != rn || memcmp(cur->sizes, rs, sizeof(int64_t) * rn) != 0) {
        if ((st = wick_expand(&next, cur, rn, rs))) goto done;
        wick_tensor_release(cur), cur = next;
    }
done:
    if (st) return wick_tensor_release(cur), st;
    *out = cur;
    return WICK_OK;
}

/* t[key] = v or s: in place, or recorded and adopted (see the top). */
static wick_status key_put(const char *op, wick_tensor *t, const wk_key *k, const wick_tensor *value, double s) {
    wick_status st;
    if (value) {
        const wick_tensor *ts[2] = {t, value};
        const char *names[2] = {"self", "value"};
        TRY(wk_check_same_device(op, 2, ts, names));
    }
    wick_tensor *v = NULL, *r = NULL;
    int64_t rs[WICK_MAX_DIMS];
    int rn = region_shape(t, k, rs);
    if (value && (st = fit_value(&v, t->storage->device, rn, rs, value))) return st;
    bool record = false;
    const wick_tensor *ins[1] = {v};
    if ((st = wk_check_inplace(op, t, v ? 1 : 0, ins, &record))) goto done;
    if (!record) {
        WK_NO_GRAD(st = key_write(t, k, v, s));
        goto done;
    }
    WK_NO_GRAD(st = wick_clone(&r, t); if (!st) st = key_write(r, k, v, s));
    if (!st) st = record_put(r, t, k, v);
    if (!st) st = wk_adopt_inplace(t, r);
done:
    wick_tensor_release(v);
    wick_tensor_release(r);
    return st;
}

/* ---- the views: t[{...}] ---- */

wick_status wick_index_view(wick_tensor **out, wick_tensor *t, int n, const wick_key_entry *entries) {
    if (n < 0 || n > WICK_MAX_DIMS) return wick_fail(WICK_ERR_ARGUMENT, "index: at most %d entries", WICK_MAX_DIMS);
    return view_entries(out, t, n, entries);
}

wick_status wick_index_view_put_(wick_tensor *t, int n, const wick_key_entry *entries, const wick_tensor *value,
                                 double s) {
    wick_tensor *probe; /* checks the key (and finds its shape) before anything is written */
    wick_status st;
    WK_NO_GRAD(st = wick_index_view(&probe, t, n, entries));
    if (st) return st;
    wick_tensor_release(probe);
    wk_key k = {.kind = KEY_VIEW, .n = n, .entries = entries};
    return key_put("index_put_", t, &k, value, s);
}

/* ---- index tensors ---- */

static wick_status index_dtype_check(const char *op, const wick_tensor *index) {
    if (index->dtype != WICK_INT64 && index->dtype != WICK_INT32)
        return wick_fail(WICK_ERR_DTYPE, "%s: expected the index to be an int64 tensor, but got %s", op,
                         wick_dtype_name(index->dtype));
    return WICK_OK;
}

wick_status wick_index_from_one_based(wick_tensor **out, const wick_tensor *index, int64_t size, int dim) {
    TRY(index_dtype_check("index", index));
    wick_device dev = index->storage->device;
    if (wk_is_meta(index)) return wick_to(out, (wick_tensor *)index, (wick_options){WICK_INT64, dev});
    wick_tensor *cpu, *c;
    TRY(wick_to(&cpu, (wick_tensor *)index, (wick_options){WICK_INT64, {WICK_CPU, -1}}));
    wick_status st = wick_clone(&c, cpu); /* a fresh contiguous copy to convert in place */
    wick_tensor_release(cpu);
    if (st) return st;
    int64_t *p = (int64_t *)wk_data(c), n = wick_tensor_numel(c);
    for (int64_t i = 0; i < n && !st; i++) {
        int64_t v = p[i];
        if (v == 0)
            st = wick_fail(WICK_ERR_INDEX, "index 0 is invalid: indices count from 1 (and from -1 backwards)");
        else if (v > size || v < -size)
            st = wick_fail(WICK_ERR_INDEX, "index %" PRId64 " is out of bounds for dimension %d with size %" PRId64, v,
                           dim + 1, size);
        else p[i] = v > 0 ? v - 1 : v + size;
    }
    if (!st && dev.type != WICK_CPU) {
        wick_tensor *d;
        if (!(st = wick_to(&d, c, (wick_options){WICK_INT64, dev}))) {
            wick_tensor_release(c);
            c = d;
        }
    }
    if (st) return wick_tensor_release(c), st;
    *out = c;
    return WICK_OK;
}

/* The index flattened to 1-D, int64 and contiguous, after the usual checks. */
static wick_status flat_index(wick_tensor **out, const char *op, const wick_tensor *t, int *dim,
                              const wick_tensor *index) {
    const wick_tensor *ts[2] = {t, index};
    const char *names[2] = {"self", "index"};
    TRY(wk_check_same_device(op, 2, ts, names));
    TRY(index_dtype_check(op, index));
    if (t->ndim == 0) return wick_fail(WICK_ERR_INDEX, "%s: cannot index a 0-dim tensor with an index tensor", op);
    TRY(wk_wrap_dim(op, dim, t->ndim));
    wick_tensor *i64, *flat;
    TRY(wick_to(&i64, (wick_tensor *)index, (wick_options){WICK_INT64, index->storage->device}));
    int64_t n = wick_tensor_numel(index);
    wick_status st = wick_reshape(&flat, i64, 1, &n);
    wick_tensor_release(i64);
    if (st) return st;
    st = wick_contiguous(out, flat);
    wick_tensor_release(flat);
    return st;
}

/* sizes[:dim] + index.shape + sizes[dim+1:] */
static int indexed_shape(const wick_tensor *t, int dim, const wick_tensor *index, int64_t *sizes) {
    int n = 0;
    for (int d = 0; d < dim; d++) sizes[n++] = t->sizes[d];
    for (int d = 0; d < index->ndim; d++) sizes[n++] = index->sizes[d];
    for (int d = dim + 1; d < t->ndim; d++) sizes[n++] = t->sizes[d];
    return n;
}

static wick_status check_indexed_dims(const char *op, const wick_tensor *t, const wick_tensor *index) {
    if (t->ndim - 1 + index->ndim > WICK_MAX_DIMS)
        return wick_fail(WICK_ERR_SHAPE, "%s: the result would have more than %d dimensions", op, WICK_MAX_DIMS);
    return WICK_OK;
}

wick_status wick_index_tensor(wick_tensor **out, wick_tensor *t, int dim, const wick_tensor *index) {
    wick_tensor *flat, *r;
    TRY(flat_index(&flat, "index", t, &dim, index));
    wick_status st = check_indexed_dims("index", t, index);
    if (!st) st = wick_index_select(&r, t, dim, flat);
    wick_tensor_release(flat);
    if (st) return st;
    int64_t sizes[WICK_MAX_DIMS];
    int n = indexed_shape(t, dim, index, sizes);
    st = wick_reshape(out, r, n, sizes);
    wick_tensor_release(r);
    return st;
}

/* t[index along dim] = value: value broadcasts to the indexed shape. */
static wick_status index_tensor_put(const char *op, wick_tensor *t, int dim, const wick_tensor *index,
                                    const wick_tensor *value, double s, int accumulate, bool exact) {
    wick_tensor *flat, *v = NULL, *vr = NULL;
    TRY(flat_index(&flat, op, t, &dim, index));
    wk_key k = {.kind = KEY_INDEX, .lead = 1, .dim = dim, .accumulate = accumulate, .index = flat};
    wick_status st = check_indexed_dims(op, t, index);
    if (!st && value) {
        const wick_tensor *ts[2] = {t, value};
        const char *names[2] = {"self", "value"};
        st = wk_check_same_device(op, 2, ts, names);
    }
    if (!st && value) { /* fit the value to the indexed shape, then flatten it like the index */
        int64_t sizes[WICK_MAX_DIMS], rs[WICK_MAX_DIMS];
        int n = indexed_shape(t, dim, index, sizes);
        char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
        if (exact && (value->ndim != n || memcmp(value->sizes, sizes, sizeof(int64_t) * n)))
            st = wick_fail(WICK_ERR_SHAPE, "%s: source of shape %s does not match the indexed shape %s", op,
                           wk_shape_str(value->ndim, value->sizes, a, sizeof a), wk_shape_str(n, sizes, b, sizeof b));
        if (!st) st = fit_value(&v, t->storage->device, n, sizes, value);
        int rn = region_shape(t, &k, rs);
        if (!st) st = wick_reshape(&vr, v, rn, rs);
    }
    if (!st) st = key_put(op, t, &k, vr, s);
    wick_tensor_release(flat);
    wick_tensor_release(v);
    wick_tensor_release(vr);
    return st;
}

wick_status wick_index_tensor_put_(wick_tensor *t, int dim, const wick_tensor *index, const wick_tensor *value,
                                   double s, int accumulate) {
    return index_tensor_put("index_put_", t, dim, index, value, s, accumulate, false);
}

wick_status wick_index_copy_(wick_tensor *t, int dim, const wick_tensor *index, const wick_tensor *source) {
    return index_tensor_put("index_copy_", t, dim, index, source, 0, 0, true);
}

wick_status wick_index_fill_(wick_tensor *t, int dim, const wick_tensor *index, const wick_tensor *value, double s) {
    if (value && value->ndim != 0)
        return wick_fail(WICK_ERR_ARGUMENT, "index_fill_: only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)",
                         value->ndim);
    return index_tensor_put("index_fill_", t, dim, index, value, s, 0, false);
}

/* ---- masks ---- */

static wick_status check_mask(const char *op, const wick_tensor *t, const wick_tensor *mask, bool prefix) {
    if (mask->dtype != WICK_BOOL && mask->dtype != WICK_UINT8)
        return wick_fail(WICK_ERR_DTYPE, "%s: expected a bool mask, but got %s", op, wick_dtype_name(mask->dtype));
    const wick_tensor *ts[2] = {t, mask};
    const char *names[2] = {"self", "mask"};
    TRY(wk_check_same_device(op, 2, ts, names));
    if (!prefix) return WICK_OK;
    char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
    if (mask->ndim > t->ndim)
        return wick_fail(WICK_ERR_INDEX, "%s: too many indices for tensor of dimension %d (a mask of shape %s)", op,
                         t->ndim, wk_shape_str(mask->ndim, mask->sizes, a, sizeof a));
    for (int d = 0; d < mask->ndim; d++)
        if (mask->sizes[d] != t->sizes[d])
            return wick_fail(WICK_ERR_INDEX,
                             "%s: the shape of the mask %s at index %d does not match the shape of the indexed tensor %s at index %d",
                             op, wk_shape_str(mask->ndim, mask->sizes, a, sizeof a), d + 1,
                             wk_shape_str(t->ndim, t->sizes, b, sizeof b), d + 1);
    return WICK_OK;
}

/* Row-major positions of the mask's true elements: a 1-D int64 tensor on dev. */
static wick_status mask_positions(wick_tensor **out, const char *op, const wick_tensor *mask, wick_device dev) {
    if (wk_is_meta(mask))
        return wick_fail(WICK_ERR_DEVICE,
                         "%s: a mask on the meta device has no values, and the result's size depends on them", op);
    wick_tensor *cpu, *c;
    TRY(wick_to(&cpu, (wick_tensor *)mask, (wick_options){mask->dtype, {WICK_CPU, -1}}));
    wick_status st = wick_contiguous(&c, cpu);
    wick_tensor_release(cpu);
    if (st) return st;
    const unsigned char *m = (const unsigned char *)wk_data(c);
    int64_t n = wick_tensor_numel(c), count = 0;
    for (int64_t i = 0; i < n; i++) count += m[i] != 0;
    int64_t *pos = malloc(sizeof(int64_t) * (size_t)(count ? count : 1));
    if (!pos) {
        wick_tensor_release(c);
        return wick_fail(WICK_ERR_OOM, "out of memory in %s", op);
    }
    for (int64_t i = 0, j = 0; i < n; i++)
        if (m[i]) pos[j++] = i;
    wick_tensor_release(c);
    wick_tensor *p;
    st = wick_from_int64(&p, 1, &count, pos, (wick_options){WICK_INT64, {WICK_CPU, -1}});
    free(pos);
    if (st) return st;
    st = wick_to(out, p, (wick_options){WICK_INT64, dev});
    wick_tensor_release(p);
    return st;
}

wick_status wick_mask_index(wick_tensor **out, wick_tensor *t, const wick_tensor *mask) {
    TRY(check_mask("index", t, mask, true));
    wick_tensor *pos;
    TRY(mask_positions(&pos, "index", mask, t->storage->device));
    wk_key k = {.kind = KEY_INDEX, .lead = mask->ndim, .dim = 0, .index = pos};
    wick_status st = key_read(out, t, &k);
    wick_tensor_release(pos);
    return st;
}

wick_status wick_mask_index_put_(wick_tensor *t, const wick_tensor *mask, const wick_tensor *value, double s) {
    TRY(check_mask("index_put_", t, mask, true));
    if (wk_is_meta(t)) { /* shapes only */
        if (value) {
            const wick_tensor *ts[2] = {t, value};
            const char *names[2] = {"self", "value"};
            TRY(wk_check_same_device("index_put_", 2, ts, names));
        }
        return WICK_OK;
    }
    wick_tensor *pos;
    TRY(mask_positions(&pos, "index_put_", mask, t->storage->device));
    wk_key k = {.kind = KEY_INDEX, .lead = mask->ndim, .dim = 0, .index = pos};
    wick_status st = key_put("index_put_", t, &k, value, s);
    wick_tensor_release(pos);
    return st;
}

/* The mask expanded to t's shape (masked_scatter_, masked_fill_ and the mask
 * of masked_select, which broadcasts both). */
static wick_status expand_mask(wick_tensor **out, const char *op, const wick_tensor *mask, int n, const int64_t *sizes) {
    int bn;
    int64_t bs[WICK_MAX_DIMS];
    char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
    if (wk_broadcast_shapes(op, n, sizes, mask->ndim, mask->sizes, &bn, bs) || bn != n ||
        memcmp(bs, sizes, sizeof(int64_t) * n))
        return wick_fail(WICK_ERR_SHAPE, "%s: the mask of shape %s does not broadcast to the tensor's shape %s", op,
                         wk_shape_str(mask->ndim, mask->sizes, a, sizeof a), wk_shape_str(n, sizes, b, sizeof b));
    return wick_expand(out, (wick_tensor *)mask, n, sizes);
}

wick_status wick_masked_select(wick_tensor **out, const wick_tensor *t, const wick_tensor *mask) {
    TRY(check_mask("masked_select", t, mask, false));
    int n;
    int64_t sizes[WICK_MAX_DIMS];
    TRY(wk_broadcast_shapes("masked_select", t->ndim, t->sizes, mask->ndim, mask->sizes, &n, sizes));
    wick_tensor *te = NULL, *me = NULL;
    wick_status st = wick_expand(&te, (wick_tensor *)t, n, sizes);
    if (!st) st = wick_expand(&me, (wick_tensor *)mask, n, sizes);
    if (!st) st = wick_mask_index(out, te, me);
    wick_tensor_release(te);
    wick_tensor_release(me);
    return st;
}

wick_status wick_masked_scatter_(wick_tensor *t, const wick_tensor *mask, const wick_tensor *source) {
    TRY(check_mask("masked_scatter_", t, mask, false));
    const wick_tensor *ts[2] = {t, source};
    const char *names[2] = {"self", "source"};
    TRY(wk_check_same_device("masked_scatter_", 2, ts, names));
    if (source->dtype != t->dtype)
        return wick_fail(WICK_ERR_DTYPE, "masked_scatter_: expected self and source to have the same dtype, but got %s and %s",
                         wick_dtype_name(t->dtype), wick_dtype_name(source->dtype));
    wick_tensor *me, *pos = NULL, *flat = NULL, *part = NULL;
    TRY(expand_mask(&me, "masked_scatter_", mask, t->ndim, t->sizes));
    wick_status st = WICK_OK;
    if (wk_is_meta(t)) goto done;
    if ((st = mask_positions(&pos, "masked_scatter_", me, t->storage->device))) goto done;
    int64_t count = wick_tensor_numel(pos), total = wick_tensor_numel(source);
    if (count > total) {
        st = wick_fail(WICK_ERR_SHAPE, "masked_scatter_: the mask selects %" PRId64 " elements but source has only %" PRId64,
                       count, total);
        goto done;
    }
    if ((st = wick_reshape(&flat, (wick_tensor *)source, 1, &total))) goto done;
    if ((st = wick_narrow(&part, flat, 0, 0, count))) goto done;
    wk_key k = {.kind = KEY_INDEX, .lead = t->ndim, .dim = 0, .index = pos};
    st = key_put("masked_scatter_", t, &k, part, 0);
done:
    wick_tensor_release(me);
    wick_tensor_release(pos);
    wick_tensor_release(flat);
    wick_tensor_release(part);
    return st;
}

/* where(mask, value, t) with value cast to t's dtype (a 0-dim tensor). */
static wick_status masked_fill_value(wick_tensor **out, const char *op, const wick_tensor *t, const wick_tensor *mask,
                                     const wick_tensor *value, double s) {
    TRY(check_mask(op, t, mask, false));
    wick_tensor *v;
    if (value) {
        if (value->ndim != 0)
            return wick_fail(WICK_ERR_ARGUMENT, "%s: only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)",
                             op, value->ndim);
        const wick_tensor *ts[2] = {t, value};
        const char *names[2] = {"self", "value"};
        TRY(wk_check_same_device(op, 2, ts, names));
        TRY(wick_to(&v, (wick_tensor *)value, (wick_options){t->dtype, value->storage->device}));
    } else {
        TRY(wick_full(&v, 0, NULL, s, (wick_options){t->dtype, {WICK_CPU, -1}}));
    }
    wick_status st = wick_where(out, mask, v, t);
    wick_tensor_release(v);
    return st;
}

wick_status wick_masked_fill(wick_tensor **out, const wick_tensor *t, const wick_tensor *mask, const wick_tensor *value,
                             double s) {
    return masked_fill_value(out, "masked_fill", t, mask, value, s);
}

wick_status wick_masked_fill_(wick_tensor *t, const wick_tensor *mask, const wick_tensor *value, double s) {
    wick_tensor *me, *r = NULL;
    TRY(expand_mask(&me, "masked_fill_", mask, t->ndim, t->sizes));
    const wick_tensor *ins[1] = {value};
    bool record = false;
    wick_status st = wk_check_inplace("masked_fill_", t, value ? 1 : 0, ins, &record);
    if (!st && record) {
        if (!(st = masked_fill_value(&r, "masked_fill_", t, me, value, s))) st = wk_adopt_inplace(t, r);
    } else if (!st) {
        WK_NO_GRAD(st = masked_fill_value(&r, "masked_fill_", t, me, value, s); if (!st) st = wick_copy_(t, r));
    }
    wick_tensor_release(me);
    wick_tensor_release(r);
    return st;
}
