/* The checkpoint engine's value tree (ckpt.h): its arena and constructors, and
 * the steps every reader shares: mapping the storages, checking their
 * checksums, making the tree's views. */
#include "ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the arena: chunks that only grow, freed at once ---- */

#define CHUNK (64 * 1024)

typedef struct chunk {
    struct chunk *next;
    size_t used, size;
    max_align_t data[];
} chunk;

struct wk_ckpt_arena {
    chunk *head;
};

void *wk_ckpt_alloc(wk_ckpt *c, size_t size) {
    size = (size + 15) & ~(size_t)15;
    if (size == 0) size = 16;
    chunk *h = c->arena->head;
    if (!h || h->size - h->used < size) {
        size_t want = size > CHUNK / 4 ? size : CHUNK;
        chunk *n = malloc(sizeof *n + want);
        if (!n) return NULL;
        n->used = 0, n->size = want;
        if (size > CHUNK / 4 && h) { /* a big one goes behind the current chunk */
            n->next = h->next, h->next = n;
        } else {
            n->next = h, c->arena->head = n;
        }
        h = n;
    }
    void *p = (char *)h->data + h->used;
    h->used += size;
    memset(p, 0, size);
    return p;
}

char *wk_ckpt_strdup(wk_ckpt *c, const char *s, size_t len) {
    char *d = wk_ckpt_alloc(c, len + 1);
    if (d) memcpy(d, s, len), d[len] = '\0';
    return d;
}

wk_ckpt *wk_ckpt_new(wk_ckpt_format format) {
    wk_ckpt *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->arena = calloc(1, sizeof *c->arena);
    if (!c->arena) {
        free(c);
        return NULL;
    }
    c->format = format;
    return c;
}

void wk_ckpt_free(wk_ckpt *c) {
    if (!c) return;
    for (int i = 0; i < c->nviews; i++) wick_tensor_release(c->views[i]);
    free(c->views);
    for (int i = 0; i < c->nstorages; i++) wick_tensor_release(c->storages[i].data);
    free(c->storages);
    for (chunk *h = c->arena->head, *next; h; h = next) next = h->next, free(h);
    free(c->arena);
    free(c);
}

static wk_ckpt_value *value_of(wk_ckpt *c, wk_ckpt_kind kind) {
    wk_ckpt_value *v = wk_ckpt_alloc(c, sizeof *v);
    if (v) v->kind = kind;
    return v;
}

wk_ckpt_value *wk_ckpt_nil(wk_ckpt *c) { return value_of(c, WK_CKPT_NIL); }

wk_ckpt_value *wk_ckpt_number(wk_ckpt *c, double x) {
    wk_ckpt_value *v = value_of(c, WK_CKPT_NUMBER);
    if (v) v->as.number = x;
    return v;
}

wk_ckpt_value *wk_ckpt_boolean(wk_ckpt *c, int b) {
    wk_ckpt_value *v = value_of(c, WK_CKPT_BOOLEAN);
    if (v) v->as.boolean = b != 0;
    return v;
}

wk_ckpt_value *wk_ckpt_string(wk_ckpt *c, const char *bytes, size_t len) {
    wk_ckpt_value *v = value_of(c, WK_CKPT_STRING);
    char *d = v ? wk_ckpt_strdup(c, bytes, len) : NULL;
    if (!d) return NULL;
    v->as.string.bytes = d, v->as.string.len = len;
    return v;
}

wk_ckpt_value *wk_ckpt_table(wk_ckpt *c) { return value_of(c, WK_CKPT_TABLE); }

int wk_ckpt_table_add(wk_ckpt *c, wk_ckpt_value *t, wk_ckpt_value *key, wk_ckpt_value *value) {
    if (t->as.table.n == t->as.table.cap) {
        int cap = t->as.table.cap ? t->as.table.cap * 2 : 4;
        if (cap > (1 << 28)) return -1;
        wk_ckpt_pair *p = wk_ckpt_alloc(c, (size_t)cap * sizeof *p); /* the old array stays in the arena */
        if (!p) return -1;
        if (t->as.table.n) memcpy(p, t->as.table.pairs, (size_t)t->as.table.n * sizeof *p);
        t->as.table.pairs = p, t->as.table.cap = cap;
    }
    t->as.table.pairs[t->as.table.n++] = (wk_ckpt_pair){key, value};
    return 0;
}

wk_ckpt_value *wk_ckpt_tensor(wk_ckpt *c, int storage, wick_dtype dtype, int ndim, const int64_t *sizes,
                              const int64_t *strides, int64_t offset) {
    if (ndim < 0 || ndim > WICK_MAX_DIMS) return NULL;
    wk_ckpt_value *v = value_of(c, WK_CKPT_TENSOR);
    int64_t *dims = wk_ckpt_alloc(c, 2 * WICK_MAX_DIMS * sizeof *dims);
    if (!v || !dims) return NULL;
    if (ndim) memcpy(dims, sizes, (size_t)ndim * sizeof *dims), memcpy(dims + WICK_MAX_DIMS, strides, (size_t)ndim * sizeof *dims);
    v->as.tensor.storage = storage, v->as.tensor.dtype = dtype, v->as.tensor.ndim = ndim;
    v->as.tensor.sizes = dims, v->as.tensor.strides = dims + WICK_MAX_DIMS, v->as.tensor.offset = offset;
    return v;
}

int wk_ckpt_add_storage(wk_ckpt *c, const char *name, const char *device, wick_dtype dtype, int64_t numel) {
    if (c->nstorages == c->cap) {
        int cap = c->cap ? c->cap * 2 : 8;
        if (cap > (1 << 28)) return -1;
        wk_ckpt_storage *s = realloc(c->storages, (size_t)cap * sizeof *s);
        if (!s) return -1;
        c->storages = s, c->cap = cap;
    }
    wk_ckpt_storage *s = &c->storages[c->nstorages];
    memset(s, 0, sizeof *s);
    s->name = wk_ckpt_strdup(c, name, strlen(name));
    s->device = wk_ckpt_strdup(c, device, strlen(device));
    if (!s->name || !s->device) return -1;
    s->dtype = dtype, s->numel = numel;
    return c->nstorages++;
}

/* ---- the steps readers share ---- */

/* "<who>: <path>: <the core's message>" for a failure below the engine */
static wick_status reframe(wick_status st, const wk_ckpt_source *src) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", wick_last_error());
    const char *path = src->path;
    size_t n = strlen(path);
    /* the file's own messages start with the path already */
    if (strncmp(msg, path, n) == 0 && msg[n] == ':') return wick_fail(st, "%s: %s", src->who, msg);
    return wick_fail(st, "%s: %s: %s", src->who, path, msg);
}

wick_status wk_ckpt_map_storages(wk_ckpt *c, const wk_ckpt_source *src) {
    int n = 0, total = c->nstorages;
    for (int i = 0; i < total; i++) n += c->storages[i].data == NULL;
    if (n == 0) return WICK_OK;
    int64_t *offsets = calloc((size_t)n, sizeof *offsets), *numels = calloc((size_t)n, sizeof *numels);
    wick_dtype *dtypes = calloc((size_t)n, sizeof *dtypes);
    wick_tensor **out = calloc((size_t)n, sizeof *out);
    int *which = calloc((size_t)n, sizeof *which);
    wick_status st = WICK_OK;
    if (!offsets || !numels || !dtypes || !out || !which) {
        st = wick_fail(WICK_ERR_OOM, "%s: out of memory reading %s", src->who, src->path);
        goto done;
    }
    /* the storages in the file (a reader may have made the others already: numpy arrays in a pickle) */
    for (int i = 0, j = 0; i < total; i++)
        if (!c->storages[i].data)
            which[j] = i, offsets[j] = c->storages[i].file_offset, numels[j] = c->storages[i].numel,
            dtypes[j++] = c->storages[i].dtype;
    int unaligned = !src->mmap; /* read unless mapping was asked for */
    if (src->mmap) st = wk_io_map_fd(src->fd, src->size, src->path, n, offsets, dtypes, numels, out, &unaligned);
    if (unaligned) { /* read: asked, or a writer that did not align its entries */
        st = WICK_OK;
        for (int i = 0; i < n && !st; i++)
            st = wk_io_read_fd(&out[i], src->fd, src->size, src->path, offsets[i], dtypes[i], numels[i]);
    }
    if (st) {
        st = reframe(st, src);
        for (int i = 0; i < n; i++) wick_tensor_release(out[i]);
        goto done;
    }
    for (int i = 0; i < n; i++) c->storages[which[i]].data = out[i];
done:
    free(offsets);
    free(numels);
    free(dtypes);
    free(out);
    free(which);
    return st;
}

wick_status wk_ckpt_verify_storage(const wk_ckpt *c, int i, const wk_ckpt_source *src) {
    const wk_ckpt_storage *s = &c->storages[i];
    if (src->verify == 0) return WICK_OK;
    if (s->crc_kind == WK_CKPT_CRC_NONE) {
        if (src->verify == 1)
            return wick_fail(WICK_ERR_IO, "%s: %s: verify: storage '%s' was saved without a checksum", src->who,
                             src->path, s->name);
        return WICK_OK;
    }
    const void *p = wick_tensor_data(s->data);
    size_t n = (size_t)s->numel * wick_dtype_size(s->dtype);
    int castagnoli = s->crc_kind == WK_CKPT_CRC32C;
    uint32_t got = castagnoli ? wick_crc32c(0, p, n) : wick_crc32(0, p, n);
    if (got != s->crc)
        return wick_fail(WICK_ERR_IO,
                         "%s: %s: checksum mismatch in storage '%s' (%s expected %08x, got %08x): the data is corrupt "
                         "(wick.load(path, {verify = false}) skips the check)",
                         src->who, src->path, s->name, castagnoli ? "crc32c" : "crc32", (unsigned)s->crc, (unsigned)got);
    return WICK_OK;
}

static wick_status views_of(wk_ckpt *c, wk_ckpt_value *v, const wk_ckpt_source *src, int depth) {
    if (v->kind == WK_CKPT_TABLE) {
        if (v->as.table.mark == c->marks) return WICK_OK; /* reached before (or we are inside it) */
        if (depth > WK_CKPT_MAX_DEPTH)
            return wick_fail(WICK_ERR_IO, "%s: %s: corrupt tree: nesting deeper than %d levels", src->who, src->path,
                             WK_CKPT_MAX_DEPTH);
        v->as.table.mark = c->marks;
        for (int i = 0; i < v->as.table.n; i++) {
            wick_status st = views_of(c, v->as.table.pairs[i].value, src, depth + 1);
            if (st) return st;
        }
        return WICK_OK;
    }
    if (v->kind != WK_CKPT_TENSOR || v->as.tensor.view) return WICK_OK;
    int si = v->as.tensor.storage;
    if (si < 0 || si >= c->nstorages || !c->storages[si].data)
        return wick_fail(WICK_ERR_IO, "%s: %s: corrupt tree: a tensor of an unknown storage", src->who, src->path);
    if (v->as.tensor.dtype != c->storages[si].dtype)
        return wick_fail(WICK_ERR_IO, "%s: %s: corrupt tree: a tensor whose dtype differs from its storage's", src->who,
                         src->path);
    if (c->nviews == c->views_cap) {
        int cap = c->views_cap ? 2 * c->views_cap : 16;
        wick_tensor **more = realloc(c->views, (size_t)cap * sizeof *more);
        if (!more) return wick_fail(WICK_ERR_OOM, "%s: out of memory reading %s", src->who, src->path);
        c->views = more, c->views_cap = cap;
    }
    wick_tensor *view = NULL;
    wick_status st = wick_as_strided(&view, c->storages[si].data, v->as.tensor.ndim, v->as.tensor.sizes,
                                     v->as.tensor.strides, v->as.tensor.offset);
    if (st) { /* the core's view check: "as_strided: <what>" */
        char msg[512];
        const char *m = wick_last_error(), *colon = strstr(m, ": ");
        snprintf(msg, sizeof msg, "%s", colon ? colon + 2 : m);
        return wick_fail(WICK_ERR_IO, "%s: %s: corrupt tree: %s", src->who, src->path, msg);
    }
    c->views[c->nviews++] = view;
    v->as.tensor.view = view;
    return WICK_OK;
}

wick_status wk_ckpt_make_views(wk_ckpt *c, const wk_ckpt_source *src) {
    c->marks++;
    return c->root ? views_of(c, c->root, src, 0) : WICK_OK;
}

wick_status wk_ckpt_failv(const char *who, const char *path, const char *fmt, va_list ap) {
    char msg[768];
    vsnprintf(msg, sizeof msg, fmt, ap);
    return wick_fail(WICK_ERR_IO, "%s: %s: %s", who, path, msg);
}
