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
    if (wk_grad_mode) /* create_graph: recorded ops (cat, or index_add for a step > 1) */
        return wk_pad_slice_step(&grads[0], g, n->ndim, n->sizes, n->ints[0], (int64_t)n->scalars[0],
                                 (int64_t)n->scalars[2]);
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
    wk_note_view_base(r, t);
    const wick_tensor *in = t;
    if (!wk_wants_grad(1, &in)) return *out = r, WICK_OK;
    wk_node *n;
    wick_status st = wk_record(r, "SliceBackward", slice_backward, 0, 1, &in, &n);
    if (!st) {
        n->ints[0] = dim;
        n->scalars[0] = (double)start, n->scalars[1] = (double)length, n->scalars[2] = (double)step;
        n->twice = true;
        n->ndim = t->ndim;
        memcpy(n->sizes, t->sizes, sizeof(int64_t) * t->ndim);
    }
    return wk_publish(out, r, st);
}

/* ---- keys ---- */

/* A key: views first (n entries for the dims from the first, n may be 0), then,
 * when index is not NULL, positions along a group of the view's dims: dims
 * [dim, dim + group) merged into one (group 0: a new dim of size 1 there). */
typedef struct wk_key {
    int n;
    const wick_key_entry *entries;
    const wick_tensor *index; /* 0-based, int64, 1-D, contiguous, on t's device */
    int dim, group, accumulate;
} wk_key;

/* The shape of t viewed through n entries. */
static int view_shape(const wick_tensor *t, int n, const wick_key_entry *e, int64_t *sizes) {
    int m = 0;
    for (int i = 0; i < n; i++)
        if (!e[i].select) sizes[m++] = e[i].length;
    for (int d = n; d < t->ndim; d++) sizes[m++] = t->sizes[d];
    return m;
}

/* sizes (ndim n) with dims [dim, dim + group) merged into one of size `merged`
 * (their product when merged < 0). */
static int merge_dims(int n, int64_t *sizes, int dim, int group, int64_t merged) {
    if (merged < 0) {
        merged = 1;
        for (int d = dim; d < dim + group; d++) merged *= sizes[d];
    }
    int64_t tail[WICK_MAX_DIMS];
    int nt = n - dim - group;
    memcpy(tail, sizes + dim + group, sizeof(int64_t) * (size_t)nt);
    sizes[dim] = merged;
    memcpy(sizes + dim + 1, tail, sizeof(int64_t) * (size_t)nt);
    return dim + 1 + nt;
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
        st = t->ndim ? wick_narrow(&next, t, 0, 0, t->sizes[0]) : wick_reshape(&next, t, 0, t->sizes);
        if (!st) {
            wick_tensor_release(cur);
            cur = next;
        }
    }
    if (st) return wick_tensor_release(cur), st;
    *out = cur;
    return WICK_OK;
}

/* The key's views of t, or t itself when there are none and an index follows. */
static wick_status key_view(wick_tensor **out, wick_tensor *t, const wk_key *k) {
    if (k->n == 0 && k->index) {
        wick_tensor_retain(t);
        *out = t;
        return WICK_OK;
    }
    return view_entries(out, t, k->n, k->entries);
}

/* The shape of t[key] (the index's positions as one dim). */
static int region_shape(const wick_tensor *t, const wk_key *k, int64_t *sizes) {
    int n = view_shape(t, k->n, k->entries, sizes);
    return k->index ? merge_dims(n, sizes, k->dim, k->group, wick_tensor_numel(k->index)) : n;
}

/* t[key]: a view, or a copy when there is an index; recorded when t is tracked. */
static wick_status key_read(wick_tensor **out, wick_tensor *t, const wk_key *k) {
    wick_tensor *v, *m;
    TRY(key_view(&v, t, k));
    if (!k->index) return *out = v, WICK_OK;
    int64_t sizes[WICK_MAX_DIMS];
    memcpy(sizes, v->sizes, sizeof(int64_t) * v->ndim);
    int n = merge_dims(v->ndim, sizes, k->dim, k->group, -1);
    wick_status st = wick_reshape(&m, v, n, sizes);
    wick_tensor_release(v);
    if (st) return st;
    st = wick_index_select(out, m, k->dim, k->index);
    wick_tensor_release(m);
    return st;
}

/* m[positions along dim] = src (the last of repeated positions wins), or += src. */
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

/* The index part of a write into w (t's view): v has the region's shape. */
static wick_status write_positions(wick_tensor *w, const wk_key *k, const wick_tensor *v, double s) {
    wick_status st = WICK_OK;
    int64_t sizes[WICK_MAX_DIMS];
    memcpy(sizes, w->sizes, sizeof(int64_t) * w->ndim);
    int n = merge_dims(w->ndim, sizes, k->dim, k->group, -1);
    if (k->group != 1 && !wick_tensor_is_contiguous(w)) { /* write a contiguous copy, then copy it back */
        wick_tensor *c;
        TRY(wick_clone(&c, w));
        if (!(st = write_positions(c, k, v, s))) st = wick_copy_(w, c);
        wick_tensor_release(c);
        return st;
    }
    wick_tensor *m = NULL, *src = NULL, *scalar = NULL;
    TRY(wick_view(&m, w, n, sizes));
    if (v) src = (wick_tensor *)v, wick_tensor_retain(src);
    else {
        sizes[k->dim] = wick_tensor_numel(k->index);
        if (!(st = wick_full(&scalar, 0, w->sizes, s, (wick_options){w->dtype, w->storage->device})))
            st = wick_expand(&src, scalar, n, sizes);
    }
    if (!st) st = index_write(m, k, src);
    wick_tensor_release(m);
    wick_tensor_release(src);
    wick_tensor_release(scalar);
    return st;
}

/* t[key] = v (or the number s when v is NULL), in place, recording nothing.
 * With an index, v has the region's shape. */
static wick_status key_write(wick_tensor *t, const wk_key *k, const wick_tensor *v, double s) {
    wick_status st;
    wick_tensor *w;
    TRY(key_view(&w, t, k));
    if (!k->index) st = v ? wick_copy_(w, v) : wick_fill_(w, s);
    else st = wk_is_meta(w) ? WICK_OK : write_positions(w, k, v, s);
    wick_tensor_release(w);
    return st;
}

static wick_status key_put(const char *op, wick_tensor *t, const wk_key *k, const wick_tensor *value, double s,
                           int un, const int64_t *us);

static wick_status put_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_key_entry entries[WICK_MAX_DIMS];
    wk_key k = {.n = n->ints[0], .dim = n->ints[1], .group = n->ints[2], .accumulate = n->ints[3], .index = n->saved[1]};
    if (k.n) {
        const int64_t *p = (const int64_t *)wk_data(n->saved[0]);
        for (int i = 0; i < k.n; i++)
            entries[i] = (wick_key_entry){(int)p[4 * i], p[4 * i + 1], p[4 * i + 2], p[4 * i + 3]};
        k.entries = entries;
    }
    if (n->edges[0].leaf || n->edges[0].node) {
        wick_tensor *gx;
        TRY(wick_clone(&gx, g));
        /* (create_graph: the zeroing recorded, as a put of its own; key_read records by itself) */
        wick_status st = k.accumulate ? WICK_OK : wk_grad_mode ? key_put("index_put_", gx, &k, NULL, 0, 0, NULL)
                                                               : key_write(gx, &k, NULL, 0);
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
    n->twice = true; /* (put_backward records under create_graph: torchdiffeq's solution[i] = y) */
    n->ints[0] = k->n, n->ints[1] = k->dim, n->ints[2] = k->group, n->ints[3] = k->accumulate;
    if (k->index) TRY(wk_save(n, 1, k->index, r));
    if (!k->n) return WICK_OK;
    int64_t plan[4 * WICK_MAX_DIMS], len = 4 * k->n;
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

/* (complex tensors take every write: into a region by copies, through index
 * tensors by scatter_, which takes their real views) */
static wick_status check_value_device(const char *op, const wick_tensor *t, const wick_tensor *value) {
    if (!value) return WICK_OK;
    const wick_tensor *ts[2] = {t, value};
    const char *names[2] = {"self", "value"};
    return wk_check_same_device_any(op, 2, ts, names);
}

/* t[key] = v or s: in place, or recorded and adopted (see the top). v fits
 * the region's shape; with an index, v of the unflattened shape us (un dims)
 * is reshaped to the region's. */
static wick_status key_put(const char *op, wick_tensor *t, const wk_key *k, const wick_tensor *value, double s,
                           int un, const int64_t *us) {
    wick_status st;
    TRY(check_value_device(op, t, value));
    wick_tensor *v = NULL, *fv = NULL, *r = NULL, *own = NULL;
    int64_t rs[WICK_MAX_DIMS];
    int rn = region_shape(t, k, rs);
    if (value && value->storage == t->storage) { /* x[{{2, 5}}] = x[{{1, 4}}]: read before writing */
        TRY(wick_clone(&own, value));
        value = own;
    }
    if (value) {
        if ((st = us ? fit_value(&fv, t->storage->device, un, us, value) : fit_value(&v, t->storage->device, rn, rs, value)))
            goto done;
        if (us && (st = wick_reshape(&v, fv, rn, rs))) goto done;
    }
    bool record = false;
    const wick_tensor *ins[1] = {v};
    if ((st = wk_check_inplace(op, t, v ? 1 : 0, ins, &record))) goto done;
    if (!record) {
        WK_COUNTED(t->storage, WK_NO_GRAD(st = key_write(t, k, v, s)));
        goto done;
    }
    WK_NO_GRAD(st = wick_clone(&r, t); if (!st) st = key_write(r, k, v, s));
    if (!st) st = record_put(r, t, k, v);
    if (!st) st = wk_adopt_inplace(t, r);
done:
    wick_tensor_release(own);
    wick_tensor_release(fv);
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
    wick_tensor *probe; /* checks the key before anything is written */
    wick_status st;
    WK_NO_GRAD(st = wick_index_view(&probe, t, n, entries));
    if (st) return st;
    wick_tensor_release(probe);
    wk_key k = {.n = n, .entries = entries};
    return key_put("index_put_", t, &k, value, s, 0, NULL);
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
            st = wick_fail(WICK_ERR_INDEX,
                           "index 0 is invalid (in an index tensor for dimension %d, of size %" PRId64 "): indices count "
                           "from 1 (and from -1 backwards); a 0-based index from PyTorch (a saved index buffer) needs + 1",
                           dim + 1, size);
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

wick_status wick_index_linear(wick_tensor **out, int k, const wick_tensor *const *indices, const int64_t *sizes) {
    if (k < 1 || k > WICK_MAX_DIMS) return wick_fail(WICK_ERR_ARGUMENT, "index: 1 to %d index tensors, got %d", WICK_MAX_DIMS, k);
    int nb = indices[0]->ndim;
    int64_t shape[WICK_MAX_DIMS];
    memcpy(shape, indices[0]->sizes, sizeof(int64_t) * (size_t)nb);
    for (int j = 1; j < k; j++) /* (the error names the indexing, not the sum below) */
        TRY(wk_broadcast_shapes("index (the indexing tensors could not be broadcast together)", nb, shape,
                                indices[j]->ndim, indices[j]->sizes, &nb, shape));
    wick_tensor *acc = NULL, *next;
    wick_status st = WICK_OK;
    for (int j = 0; j < k && !st; j++) {
        const wick_tensor *ts[2] = {indices[0], indices[j]};
        const char *names[2] = {"indices", "indices"};
        if ((st = wk_check_same_device("index", 2, ts, names)) || (st = index_dtype_check("index", indices[j]))) break;
        if (!acc) { /* acc = i0; then acc = acc * size_j + i_j (broadcasting) */
            st = wick_to(&acc, (wick_tensor *)indices[j], (wick_options){WICK_INT64, indices[j]->storage->device});
            continue;
        }
        wick_tensor *scaled;
        if ((st = wick_binary_scalar(&scaled, WICK_MUL, acc, (wick_scalar){(double)sizes[j], 1}, 0))) break;
        st = wick_binary(&next, WICK_ADD, scaled, indices[j]);
        wick_tensor_release(scaled);
        if (!st && next->dtype != WICK_INT64) {
            wick_tensor *c;
            if (!(st = wick_to(&c, next, (wick_options){WICK_INT64, next->storage->device}))) wick_tensor_release(next), next = c;
        }
        if (!st) wick_tensor_release(acc), acc = next;
    }
    if (st) return wick_tensor_release(acc), st;
    *out = acc;
    return WICK_OK;
}

/* The index flattened to 1-D, int64 and contiguous. */
static wick_status flatten_index(wick_tensor **out, const wick_tensor *index) {
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

/* The checks of a key with an index; *vn and vs: the shape of t's view. */
/* (complex tensors take reads and writes: both move elements, or pairs) */
static wick_status check_key(const char *op, const wick_tensor *t, int n, const wick_key_entry *entries, int dim,
                             int group, const wick_tensor *index, int *vn, int64_t *vs) {
    if (n < 0 || n > t->ndim)
        return wick_fail(WICK_ERR_INDEX, "too many indices for tensor of dimension %d (got %d)", t->ndim, n);
    const wick_tensor *ts[2] = {t, index};
    const char *names[2] = {"self", "index"};
    TRY(wk_check_same_device_any(op, 2, ts, names));
    TRY(index_dtype_check(op, index));
    *vn = view_shape(t, n, entries, vs);
    if (group < 0 || dim < 0 || dim + group > *vn || (group == 0 && dim > *vn))
        return wick_fail(WICK_ERR_INDEX, "%s: dims %d to %d of an index do not exist in a tensor of dimension %d", op,
                         dim + 1, dim + group, *vn);
    if (*vn - group + index->ndim > WICK_MAX_DIMS)
        return wick_fail(WICK_ERR_SHAPE, "%s: the result would have more than %d dimensions", op, WICK_MAX_DIMS);
    return WICK_OK;
}

/* vs with dims [dim, dim + group) replaced by the index's shape. */
static int indexed_shape(int vn, const int64_t *vs, int dim, int group, const wick_tensor *index, int64_t *sizes) {
    int n = 0;
    for (int d = 0; d < dim; d++) sizes[n++] = vs[d];
    for (int d = 0; d < index->ndim; d++) sizes[n++] = index->sizes[d];
    for (int d = dim + group; d < vn; d++) sizes[n++] = vs[d];
    return n;
}

wick_status wick_index_key(wick_tensor **out, wick_tensor *t, int n, const wick_key_entry *entries, int dim, int group,
                           const wick_tensor *index) {
    int vn = 0;
    int64_t vs[WICK_MAX_DIMS], sizes[WICK_MAX_DIMS];
    TRY(check_key("index", t, n, entries, dim, group, index, &vn, vs));
    wick_tensor *flat, *r;
    TRY(flatten_index(&flat, index));
    wk_key k = {.n = n, .entries = entries, .index = flat, .dim = dim, .group = group};
    wick_status st = key_read(&r, t, &k);
    wick_tensor_release(flat);
    if (st) return st;
    int rn = indexed_shape(vn, vs, dim, group, index, sizes);
    st = wick_reshape(out, r, rn, sizes);
    wick_tensor_release(r);
    return st;
}

static wick_status key_index_put(const char *op, wick_tensor *t, int n, const wick_key_entry *entries, int dim,
                                 int group, const wick_tensor *index, const wick_tensor *value, double s, int accumulate,
                                 bool exact) {
    int vn = 0;
    int64_t vs[WICK_MAX_DIMS], sizes[WICK_MAX_DIMS];
    TRY(check_key(op, t, n, entries, dim, group, index, &vn, vs));
    int un = indexed_shape(vn, vs, dim, group, index, sizes);
    if (exact && value && (value->ndim != un || memcmp(value->sizes, sizes, sizeof(int64_t) * un))) {
        char a[WK_SHAPE_BUF], b[WK_SHAPE_BUF];
        return wick_fail(WICK_ERR_SHAPE, "%s: source of shape %s does not match the indexed shape %s", op,
                         wk_shape_str(value->ndim, value->sizes, a, sizeof a), wk_shape_str(un, sizes, b, sizeof b));
    }
    wick_tensor *flat;
    TRY(flatten_index(&flat, index));
    wk_key k = {.n = n, .entries = entries, .index = flat, .dim = dim, .group = group, .accumulate = accumulate};
    wick_status st = key_put(op, t, &k, value, s, un, sizes);
    wick_tensor_release(flat);
    return st;
}

wick_status wick_index_key_put_(wick_tensor *t, int n, const wick_key_entry *entries, int dim, int group,
                                const wick_tensor *index, const wick_tensor *value, double s, int accumulate) {
    return key_index_put("index_put_", t, n, entries, dim, group, index, value, s, accumulate, false);
}

static wick_status check_index_dim(const char *op, const wick_tensor *t, int *dim) {
    if (t->ndim == 0) return wick_fail(WICK_ERR_INDEX, "%s: cannot index a 0-dim tensor with an index tensor", op);
    return wk_wrap_dim(op, dim, t->ndim);
}

wick_status wick_index_tensor(wick_tensor **out, wick_tensor *t, int dim, const wick_tensor *index) {
    TRY(check_index_dim("index", t, &dim));
    return wick_index_key(out, t, 0, NULL, dim, 1, index);
}

wick_status wick_index_tensor_put_(wick_tensor *t, int dim, const wick_tensor *index, const wick_tensor *value,
                                   double s, int accumulate) {
    TRY(check_index_dim("index_put_", t, &dim));
    return key_index_put("index_put_", t, 0, NULL, dim, 1, index, value, s, accumulate, false);
}

wick_status wick_index_copy_(wick_tensor *t, int dim, const wick_tensor *index, const wick_tensor *source) {
    TRY(check_index_dim("index_copy_", t, &dim));
    if (index->ndim != 0) return key_index_put("index_copy_", t, 0, NULL, dim, 1, index, source, 0, 0, true);
    /* a 0-dim index is one position whose dim the source keeps, as PyTorch's (transformer-xl's
     * index_copy_(0, mask.nonzero().squeeze(), emb) when one token falls in a cluster) */
    wick_tensor *one;
    int64_t n = 1;
    TRY(wick_reshape(&one, (wick_tensor *)index, 1, &n)); /* (a view: index stays as it was) */
    wick_status st = key_index_put("index_copy_", t, 0, NULL, dim, 1, one, source, 0, 0, true);
    wick_tensor_release(one);
    return st;
}

wick_status wick_index_fill_(wick_tensor *t, int dim, const wick_tensor *index, const wick_tensor *value, double s) {
    if (value && value->ndim != 0)
        return wick_fail(WICK_ERR_ARGUMENT, "index_fill_: only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)",
                         value->ndim);
    TRY(check_index_dim("index_fill_", t, &dim));
    return key_index_put("index_fill_", t, 0, NULL, dim, 1, index, value, s, 0, false);
}

/* ---- masks ---- */

static wick_status check_mask(const char *op, const wick_tensor *t, const wick_tensor *mask, bool prefix) {
    if (mask->dtype != WICK_BOOL && mask->dtype != WICK_UINT8)
        return wick_fail(WICK_ERR_DTYPE, "%s: expected a bool mask, but got %s", op, wick_dtype_name(mask->dtype));
    const wick_tensor *ts[2] = {t, mask};
    const char *names[2] = {"self", "mask"};
    TRY(wk_check_same_device_any(op, 2, ts, names));
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

wick_status wick_mask_positions(wick_tensor **out, const wick_tensor *mask) {
    if (mask->dtype != WICK_BOOL && mask->dtype != WICK_UINT8)
        return wick_fail(WICK_ERR_DTYPE, "index: expected a bool mask, but got %s", wick_dtype_name(mask->dtype));
    return mask_positions(out, "index", mask, mask->storage->device);
}

wick_status wick_mask_index(wick_tensor **out, wick_tensor *t, const wick_tensor *mask) {
    TRY(check_mask("index", t, mask, true));
    wick_tensor *pos;
    TRY(mask_positions(&pos, "index", mask, t->storage->device));
    wk_key k = {.index = pos, .dim = 0, .group = mask->ndim};
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
            TRY(wk_check_same_device_any("index_put_", 2, ts, names));
        }
        return WICK_OK;
    }
    /* t[mask] = number with a mask of t's own shape is masked_fill_: one pass, no positions list */
    if (!value && mask->dtype == WICK_BOOL && mask->ndim == t->ndim &&
        !memcmp(mask->sizes, t->sizes, sizeof(int64_t) * (size_t)t->ndim))
        return wick_masked_fill_(t, mask, NULL, s);
    wick_tensor *pos;
    TRY(mask_positions(&pos, "index_put_", mask, t->storage->device));
    wk_key k = {.index = pos, .dim = 0, .group = mask->ndim};
    wick_status st = key_put("index_put_", t, &k, value, s, 0, NULL);
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

/* The shape t and a (checked) mask broadcast to: masked_select's and the out-of-place masked_scatter's */
static wick_status mask_broadcast(const char *op, const wick_tensor *t, const wick_tensor *mask, int *n, int64_t *sizes) {
    TRY(check_mask(op, t, mask, false));
    return wk_broadcast_shapes(op, t->ndim, t->sizes, mask->ndim, mask->sizes, n, sizes);
}

wick_status wick_masked_select(wick_tensor **out, const wick_tensor *t, const wick_tensor *mask) {
    int n;
    int64_t sizes[WICK_MAX_DIMS];
    TRY(mask_broadcast("masked_select", t, mask, &n, sizes));
    wick_tensor *te = NULL, *me = NULL;
    wick_status st = wick_expand(&te, (wick_tensor *)t, n, sizes);
    if (!st) st = wick_expand(&me, (wick_tensor *)mask, n, sizes);
    if (!st) st = wick_mask_index(out, te, me);
    wick_tensor_release(te);
    wick_tensor_release(me);
    return st;
}

/* masked_scatter_ into t, its messages naming op (the out-of-place form's own name too) */
static wick_status masked_scatter_into(const char *op, wick_tensor *t, const wick_tensor *mask, const wick_tensor *source) {
    TRY(check_mask(op, t, mask, false));
    const wick_tensor *ts[2] = {t, source};
    const char *names[2] = {"self", "source"};
    TRY(wk_check_same_device_any(op, 2, ts, names));
    if (source->dtype != t->dtype)
        return wick_fail(WICK_ERR_DTYPE, "%s: expected self and source to have the same dtype, but got %s and %s", op,
                         wick_dtype_name(t->dtype), wick_dtype_name(source->dtype));
    wick_tensor *me, *pos = NULL, *flat = NULL, *part = NULL;
    TRY(expand_mask(&me, op, mask, t->ndim, t->sizes));
    wick_status st = WICK_OK;
    if (wk_is_meta(t)) goto done;
    if ((st = mask_positions(&pos, op, me, t->storage->device))) goto done;
    int64_t count = wick_tensor_numel(pos), total = wick_tensor_numel(source);
    if (count > total) {
        st = wick_fail(WICK_ERR_SHAPE, "%s: the mask selects %" PRId64 " elements but source has only %" PRId64, op,
                       count, total);
        goto done;
    }
    if ((st = wick_reshape(&flat, (wick_tensor *)source, 1, &total))) goto done;
    if ((st = wick_narrow(&part, flat, 0, 0, count))) goto done;
    wk_key k = {.index = pos, .dim = 0, .group = t->ndim};
    st = key_put(op, t, &k, part, 0, 0, NULL);
done:
    wick_tensor_release(me);
    wick_tensor_release(pos);
    wick_tensor_release(flat);
    wick_tensor_release(part);
    return st;
}

wick_status wick_masked_scatter_(wick_tensor *t, const wick_tensor *mask, const wick_tensor *source) {
    return masked_scatter_into("masked_scatter_", t, mask, source);
}

/* PyTorch's out-of-place form: self and the mask broadcast together, into a new tensor */
wick_status wick_masked_scatter(wick_tensor **out, const wick_tensor *t, const wick_tensor *mask, const wick_tensor *source) {
    int n;
    int64_t sizes[WICK_MAX_DIMS];
    TRY(mask_broadcast("masked_scatter", t, mask, &n, sizes));
    wick_tensor *te = NULL, *r = NULL;
    wick_status st = wick_expand(&te, (wick_tensor *)t, n, sizes);
    if (!st) st = wick_clone(&r, te);
    if (!st) st = masked_scatter_into("masked_scatter", r, mask, source);
    wick_tensor_release(te);
    if (st) {
        wick_tensor_release(r);
        return st;
    }
    *out = r;
    return WICK_OK;
}

/* where(mask, value, t) with value cast to t's dtype (a 0-dim tensor). */
static wick_status masked_fill_value(wick_tensor **out, const char *op, const wick_tensor *t, const wick_tensor *mask,
                                     const wick_tensor *value, double s) {
    TRY(check_mask(op, t, mask, false));
    int bn;
    int64_t bs[WICK_MAX_DIMS];
    TRY(wk_broadcast_shapes(op, t->ndim, t->sizes, mask->ndim, mask->sizes, &bn, bs)); /* (named here, not as where) */
    wick_tensor *v;
    if (value) {
        if (value->ndim != 0)
            return wick_fail(WICK_ERR_ARGUMENT, "%s: only supports a 0-dimensional value tensor, but got tensor with %d dimension(s)",
                             op, value->ndim);
        const wick_tensor *ts[2] = {t, value};
        const char *names[2] = {"self", "value"};
        TRY(wk_check_same_device_any(op, 2, ts, names));
        TRY(wick_to(&v, (wick_tensor *)value, (wick_options){t->dtype, value->storage->device}));
    } else {
        TRY(wick_full(&v, 0, t->sizes, s, (wick_options){t->dtype, {WICK_CPU, -1}}));
    }
    wick_status st = wick_where(out, mask, v, t);
    wick_tensor_release(v);
    return st;
}

/* t[me] = s in place, recording nothing (me: a mask of t's shape): the
 * backend's masked_fill kernel, or where() where it has none. */
static wick_status fill_masked(wick_tensor *t, const wick_tensor *me, double s) {
    if (wk_is_meta(t)) return WICK_OK;
    const wick_backend *be = t->storage->backend;
    if (be->masked_fill && wick_device_equal(me->storage->device, t->storage->device)) {
        wk_iter it;
        const wick_tensor *ops[2] = {t, me};
        wk_iter_init(&it, 2, ops);
        return be->masked_fill(&it, s);
    }
    wick_tensor *v, *r;
    TRY(wick_full(&v, 0, t->sizes, s, (wick_options){t->dtype, {WICK_CPU, -1}}));
    wick_status st = wick_where(&r, me, v, t);
    wick_tensor_release(v);
    if (st) return st;
    st = wick_copy_(t, r);
    wick_tensor_release(r);
    return st;
}

static wick_status masked_fill_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    wick_tensor *gx;
    if (wk_grad_mode) { /* create_graph: where(mask, 0, g), recorded */
        wick_tensor *zero;
        TRY(wick_full(&zero, 0, NULL, 0, (wick_options){g->dtype, wick_cpu()}));
        wick_status st = wick_where(&grads[0], n->saved[0], zero, g);
        wick_tensor_release(zero);
        return st;
    }
    TRY(wick_clone(&gx, g));
    wick_status st = fill_masked(gx, n->saved[0], 0);
    if (st) return wick_tensor_release(gx), st;
    grads[0] = gx;
    return WICK_OK;
}

/* masked_fill with a number and a mask that broadcasts to t: a copy filled by
 * the kernel, recorded as MaskedFillBackward when t is tracked. */
static wick_status masked_fill_number(wick_tensor **out, const wick_tensor *t, const wick_tensor *me, double s) {
    wick_tensor *r;
    wick_status st;
    WK_NO_GRAD(st = wick_clone(&r, t); if (!st && (st = fill_masked(r, me, s))) wick_tensor_release(r));
    if (st) return st;
    if (!wk_wants_grad(1, &t)) return *out = r, WICK_OK;
    wk_node *n;
    st = wk_record(r, "MaskedFillBackward", masked_fill_backward, 0, 1, &t, &n);
    if (!st) n->twice = true, st = wk_save(n, 0, me, r);
    return wk_publish(out, r, st);
}

static bool mask_fits(const wick_tensor *t, const wick_tensor *mask) {
    int bn;
    int64_t bs[WICK_MAX_DIMS];
    return !wk_broadcast_shapes("masked_fill", t->ndim, t->sizes, mask->ndim, mask->sizes, &bn, bs) && bn == t->ndim &&
           !memcmp(bs, t->sizes, sizeof(int64_t) * t->ndim);
}

wick_status wick_masked_fill(wick_tensor **out, const wick_tensor *t, const wick_tensor *mask, const wick_tensor *value,
                             double s) {
    if (!value) TRY(wk_check_scalar("masked_fill", s, t->dtype));
    /* (a complex t: by where, which takes its pairs; the kernel fills elements) */
    if (value || !mask_fits(t, mask) || wick_dtype_is_complex(t->dtype))
        return masked_fill_value(out, "masked_fill", t, mask, value, s);
    TRY(check_mask("masked_fill", t, mask, false));
    wick_tensor *me;
    TRY(expand_mask(&me, "masked_fill", mask, t->ndim, t->sizes));
    wick_status st = masked_fill_number(out, t, me, s);
    wick_tensor_release(me);
    return st;
}

wick_status wick_masked_fill_(wick_tensor *t, const wick_tensor *mask, const wick_tensor *value, double s) {
    wick_tensor *me, *r = NULL;
    if (!value) TRY(wk_check_scalar("masked_fill_", s, t->dtype));
    TRY(check_mask("masked_fill_", t, mask, false));
    TRY(expand_mask(&me, "masked_fill_", mask, t->ndim, t->sizes));
    const wick_tensor *ins[1] = {value};
    bool record = false;
    wick_status st = wk_check_inplace("masked_fill_", t, value ? 1 : 0, ins, &record);
    if (!st && record) {
        st = value ? masked_fill_value(&r, "masked_fill_", t, me, value, s) : masked_fill_number(&r, t, me, s);
        if (!st) st = wk_adopt_inplace(t, r);
    } else if (!st && !value && !wick_dtype_is_complex(t->dtype)) {
        WK_NO_GRAD(st = fill_masked(t, me, s));
    } else if (!st) {
        WK_COUNTED(t->storage, WK_NO_GRAD(st = masked_fill_value(&r, "masked_fill_", t, me, value, s);
                                          if (!st) st = wick_copy_(t, r)));
    }
    wick_tensor_release(me);
    wick_tensor_release(r);
    return st;
}
