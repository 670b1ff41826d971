/* Reading checkpoints (ckpt.h, docs/checkpoint-format.md): the file is opened
 * once; a zip goes to the PyTorch reader, anything else is a safetensors
 * container whose header is parsed by the one JSON parser (json.c) and whose
 * entries are all checked before anything is mapped. A wick checkpoint's tree
 * (JSON text in __metadata__["wick"]) is parsed by the same parser and turned
 * into wk_ckpt values; a plain safetensors file becomes a table name -> tensor. */
#define _GNU_SOURCE /* qsort_r */
#include "ckpt.h"
#include "json.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_HEADER (100 * 1024 * 1024)
#define MAX_DIM ((int64_t)1 << 53)
#define HEADER_DEPTH 64
#define META_DEPTH 400
#define TREE_DEPTH 200
#define FORMAT "wick-checkpoint-1"

/* safetensors' dtype codes (a file-format fact: wick's names are the core's) */
static const char *const ST_NAMES[WICK_NUM_DTYPES] = {
    [WICK_FLOAT32] = "F32", [WICK_FLOAT64] = "F64", [WICK_FLOAT16] = "F16", [WICK_BFLOAT16] = "BF16",
    [WICK_INT64] = "I64",   [WICK_INT32] = "I32",   [WICK_UINT8] = "U8",    [WICK_BOOL] = "BOOL",
    [WICK_COMPLEX64] = "C64", [WICK_COMPLEX128] = "C128",
};

const char *wk_ckpt_st_dtype(wick_dtype d) { return (unsigned)d < WICK_NUM_DTYPES ? ST_NAMES[d] : NULL; }

typedef struct {
    const char *name; /* in the arena */
    int item;         /* its value's index in the header object */
    wick_dtype dtype;
    int ndim;
    int64_t shape[WICK_MAX_DIMS];
    int64_t begin, end, numel;
} entry;

typedef struct {
    wk_ckpt_source src;
    wk_ckpt *c;
    entry *es;
    int count;
    const wk_json *meta;
    int flat;
} reader;

static void *arena_alloc(void *ctx, size_t size) { return wk_ckpt_alloc(ctx, size); }

static wick_status failf(const reader *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wick_status st = wk_ckpt_failv(r->src.who, r->src.path, fmt, ap);
    va_end(ap);
    return st;
}

static wick_status oom(const reader *r) {
    return wick_fail(WICK_ERR_OOM, "%s: out of memory reading %s", r->src.who, r->src.path);
}

/* ---- the header: entries ---- */

/* A non-negative integer no larger than 2^53, as written (digits only). */
static wick_status uint_of(const reader *r, const wk_json *v, int64_t *out, const char *what) {
    size_t at = v->pos + 1;
    if (v->type != WK_JSON_NUMBER || v->as.number.text[0] == '-')
        return failf(r, "corrupt header: %s that is not a non-negative integer at byte %zu", what, at);
    const char *s = v->as.number.text;
    size_t n = v->as.number.len, i = 0;
    int64_t x = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        x = x * 10 + (s[i] - '0');
        if (x > MAX_DIM) return failf(r, "corrupt header: %s larger than 2^53 at byte %zu", what, at);
    }
    if (i < n) return failf(r, "corrupt header: %s that is not an integer at byte %zu", what, at);
    if (s[0] == '0' && n > 1) return failf(r, "corrupt header: %s with a leading zero at byte %zu", what, at);
    *out = x;
    return WICK_OK;
}

static wick_status parse_entry(const reader *r, entry *e, const wk_json *v) {
    int have_dtype = 0, have_shape = 0, have_offsets = 0;
    if (v->type != WK_JSON_OBJECT)
        return failf(r, "corrupt header: entry '%s' lacks dtype, shape or data_offsets", e->name);
    for (int k = 0; k < v->as.list.n; k++) {
        const char *key = v->as.list.keys[k]->as.string.s;
        const wk_json *x = v->as.list.items[k];
        wick_status st = WICK_OK;
        if (strcmp(key, "dtype") == 0) {
            if (have_dtype++) return failf(r, "corrupt header: entry '%s' has two dtypes", e->name);
            int found = -1;
            if (x->type == WK_JSON_STRING)
                for (int i = 0; i < WICK_NUM_DTYPES; i++)
                    if (ST_NAMES[i] && strcmp(x->as.string.s, ST_NAMES[i]) == 0) found = i;
            if (found < 0)
                return failf(r, "corrupt header: entry '%s' lacks dtype, shape or data_offsets (unknown or unsupported dtype '%.32s')",
                             e->name, x->type == WK_JSON_STRING ? x->as.string.s : "?");
            e->dtype = (wick_dtype)found;
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++) return failf(r, "corrupt header: entry '%s' has two shapes", e->name);
            if (x->type != WK_JSON_ARRAY)
                return failf(r, "corrupt header: entry '%s' lacks dtype, shape or data_offsets", e->name);
            if (x->as.list.n > WICK_MAX_DIMS)
                return failf(r, "corrupt header: entry '%s' has more than %d dimensions", e->name, WICK_MAX_DIMS);
            e->ndim = x->as.list.n;
            for (int d = 0; d < e->ndim && !st; d++) st = uint_of(r, x->as.list.items[d], &e->shape[d], "a shape dimension");
        } else if (strcmp(key, "data_offsets") == 0) {
            if (have_offsets++) return failf(r, "corrupt header: entry '%s' has two data_offsets", e->name);
            if (x->type != WK_JSON_ARRAY || x->as.list.n != 2)
                return failf(r, "corrupt header: bad data_offsets for '%s'", e->name);
            st = uint_of(r, x->as.list.items[0], &e->begin, "a data offset");
            if (!st) st = uint_of(r, x->as.list.items[1], &e->end, "a data offset");
        }
        if (st) return st;
    }
    if (!have_dtype || !have_shape || !have_offsets)
        return failf(r, "corrupt header: entry '%s' lacks dtype, shape or data_offsets", e->name);
    return WICK_OK;
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static int by_begin(const void *a, const void *b) {
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* Every size and offset against the data's extent, before anything is read. */
static wick_status check_entries(const reader *r, int64_t data_size) {
    int64_t total = 0;
    for (int i = 0; i < r->count; i++) {
        entry *e = &r->es[i];
        int64_t esize = (int64_t)wick_dtype_size(e->dtype), numel = 1;
        int zero = 0;
        for (int d = 0; d < e->ndim; d++) zero |= e->shape[d] == 0;
        if (zero) numel = 0;
        else
            for (int d = 0; d < e->ndim; d++) {
                if (numel > INT64_MAX / esize / e->shape[d])
                    return failf(r, "corrupt header: '%s' has a shape too large", e->name);
                numel *= e->shape[d];
            }
        if (e->begin > e->end)
            return failf(r, "corrupt header: bad data_offsets for '%s': data_offsets [%lld, %lld] end before they begin",
                         e->name, (long long)e->begin, (long long)e->end);
        if (e->end - e->begin != numel * esize)
            return failf(r, "corrupt header: '%s' has data_offsets [%lld, %lld] for %lld elements of %s: %lld bytes for %lld elements",
                         e->name, (long long)e->begin, (long long)e->end, (long long)numel, wick_dtype_name(e->dtype),
                         (long long)(e->end - e->begin), (long long)numel);
        if (e->end > data_size)
            return failf(r, "truncated: '%s' ends at byte %lld of the data, the file holds %lld", e->name,
                         (long long)e->end, (long long)data_size);
        e->numel = numel;
        if (e->end > total) total = e->end;
    }
    if (total < data_size)
        return failf(r, "corrupt: %lld unexpected bytes after the end of the data", (long long)(data_size - total));
    if (r->count < 2) return WICK_OK;
    entry **sorted = malloc((size_t)r->count * sizeof *sorted);
    if (!sorted) return oom(r);
    for (int i = 0; i < r->count; i++) sorted[i] = &r->es[i];
    qsort(sorted, (size_t)r->count, sizeof *sorted, by_begin);
    int64_t reach = 0;
    const char *last = NULL;
    wick_status st = WICK_OK;
    for (int i = 0; i < r->count && !st; i++) {
        if (sorted[i]->begin == sorted[i]->end) continue;
        if (sorted[i]->begin < reach) st = failf(r, "corrupt header: '%s' overlaps '%s'", sorted[i]->name, last);
        reach = sorted[i]->end, last = sorted[i]->name;
    }
    free(sorted);
    return st;
}

/* The header object: its entries (r->es) and __metadata__ (r->meta). */
static wick_status read_entries(reader *r, const wk_json *root) {
    int n = root->as.list.n;
    r->es = calloc(n > 0 ? (size_t)n : 1, sizeof *r->es);
    if (!r->es) return oom(r);
    for (int i = 0; i < n; i++) {
        const wk_json *key = root->as.list.keys[i], *v = root->as.list.items[i];
        if (strcmp(key->as.string.s, "__metadata__") == 0 && key->as.string.len == 12) {
            if (r->meta) return failf(r, "corrupt header: two __metadata__ objects at byte %zu", key->pos + 1);
            if (v->type != WK_JSON_OBJECT)
                return failf(r, "corrupt header: __metadata__ is not an object at byte %zu", v->pos + 1);
            r->meta = v;
            continue;
        }
        if (strlen(key->as.string.s) != key->as.string.len)
            return failf(r, "corrupt header: a NUL character in a string at byte %zu", key->pos + 1);
        entry *e = &r->es[r->count++];
        e->name = key->as.string.s;
        e->item = i;
    }
    if (r->count > 1) { /* names are unique: checked on a sorted copy */
        entry *copy = malloc((size_t)r->count * sizeof *copy);
        if (!copy) return oom(r);
        memcpy(copy, r->es, (size_t)r->count * sizeof *copy);
        qsort(copy, (size_t)r->count, sizeof *copy, by_name);
        for (int i = 1; i < r->count; i++)
            if (strcmp(copy[i].name, copy[i - 1].name) == 0) {
                wick_status st = failf(r, "corrupt header: duplicate entry '%s'", copy[i].name);
                free(copy);
                return st;
            }
        free(copy);
    }
    for (int i = 0; i < r->count; i++) {
        entry *e = &r->es[i];
        wick_status st = parse_entry(r, e, root->as.list.items[e->item]);
        if (st) return st;
    }
    return WICK_OK;
}

/* ---- the wick tree ---- */

/* The value of key, absent when null (as the format's Lua reader read it). */
static const wk_json *field(const wk_json *obj, const char *key) {
    const wk_json *v = wk_json_get(obj, key);
    return v && v->type != WK_JSON_NULL ? v : NULL;
}

typedef struct {
    const char *name;
    int index;
} name_index;

static int by_index_name(const void *a, const void *b) {
    return strcmp(((const name_index *)a)->name, ((const name_index *)b)->name);
}

typedef struct {
    reader *r;
    name_index *names; /* the storages, sorted by name */
} tree_ctx;

static wick_status tree_fail(const tree_ctx *t, const char *what) {
    return failf(t->r, "corrupt tree: %s", what);
}

/* An integer (as a double) that fits int64 exactly. */
static int int_of(const wk_json *v, int64_t *out) {
    if (!v || v->type != WK_JSON_NUMBER) return 0;
    double d = wk_json_number(v);
    if (!(d == floor(d)) || d < -9.2e18 || d > 9.2e18) return 0;
    *out = (int64_t)d;
    return 1;
}

static int parse_double(const char *s, size_t len, double *out) {
    if (len == 0 || strlen(s) != len) return 0;
    if (strcmp(s, "nan") == 0) return *out = NAN, 1;
    if (strcmp(s, "inf") == 0) return *out = INFINITY, 1;
    if (strcmp(s, "-inf") == 0) return *out = -INFINITY, 1;
    /* as Lua's tonumber read it: surrounding spaces allowed, the rest a decimal number */
    size_t a = 0, b = len;
    while (a < b && (s[a] == ' ' || (s[a] >= '\t' && s[a] <= '\r'))) a++;
    while (b > a && (s[b - 1] == ' ' || (s[b - 1] >= '\t' && s[b - 1] <= '\r'))) b--;
    for (size_t i = a; i < b; i++)
        if (!strchr("0123456789+-.eE", s[i])) return 0;
    return wk_json_strtod(s + a, b - a, out);
}

static wick_status tensor_node(const tree_ctx *t, const wk_json *spec, wk_ckpt_value **out) {
    const wk_json *sname = spec->type == WK_JSON_OBJECT ? field(spec, "storage") : NULL;
    name_index *hit = NULL;
    if (sname && sname->type == WK_JSON_STRING && t->r->count > 0) {
        name_index key = {sname->as.string.s, 0};
        hit = bsearch(&key, t->names, (size_t)t->r->count, sizeof key, by_index_name);
    }
    if (!hit) return tree_fail(t, "a tensor of an unknown storage");
    const wk_ckpt_storage *s = &t->r->c->storages[hit->index];
    const wk_json *dt = field(spec, "dtype");
    if (!dt || dt->type != WK_JSON_STRING || strcmp(dt->as.string.s, wick_dtype_name(s->dtype)) != 0)
        return tree_fail(t, "a tensor whose dtype differs from its storage's");
    const wk_json *shape = field(spec, "shape"), *strides = field(spec, "strides"), *off = field(spec, "offset");
    int64_t sizes[WICK_MAX_DIMS], steps[WICK_MAX_DIMS], offset;
    if (!shape || !strides || shape->type != WK_JSON_ARRAY || strides->type != WK_JSON_ARRAY ||
        shape->as.list.n != strides->as.list.n || shape->as.list.n > WICK_MAX_DIMS || !int_of(off, &offset))
        return tree_fail(t, "a tensor with a bad shape, strides or offset");
    for (int d = 0; d < shape->as.list.n; d++)
        if (!int_of(shape->as.list.items[d], &sizes[d]) || !int_of(strides->as.list.items[d], &steps[d]))
            return tree_fail(t, "a tensor with a bad shape, strides or offset");
    *out = wk_ckpt_tensor(t->r->c, hit->index, s->dtype, shape->as.list.n, sizes, steps, offset);
    return *out ? WICK_OK : oom(t->r);
}

static wick_status tree_node(const tree_ctx *t, const wk_json *node, int depth, wk_ckpt_value **out) {
    wk_ckpt *c = t->r->c;
    if (depth > TREE_DEPTH) return tree_fail(t, "nesting deeper than 200 levels");
    if (!node || node->type != WK_JSON_OBJECT) return tree_fail(t, "a node that is not an object");
    const wk_json *v;
    if ((v = field(node, "number"))) {
        double d;
        if (v->type != WK_JSON_STRING || !parse_double(v->as.string.s, v->as.string.len, &d))
            return tree_fail(t, "a bad number");
        *out = wk_ckpt_number(c, d);
    } else if ((v = field(node, "string"))) {
        if (v->type != WK_JSON_STRING) return tree_fail(t, "a bad string");
        *out = wk_ckpt_string(c, v->as.string.s, v->as.string.len);
    } else if ((v = field(node, "boolean"))) {
        *out = wk_ckpt_boolean(c, v->type == WK_JSON_BOOL && v->as.boolean);
    } else if ((v = field(node, "table"))) {
        if (v->type != WK_JSON_ARRAY) return tree_fail(t, "a bad table entry");
        wk_ckpt_value *tbl = wk_ckpt_table(c);
        if (!tbl) return oom(t->r);
        const wk_json *dict = field(node, "dict");
        tbl->as.table.dict = dict && dict->type == WK_JSON_BOOL && dict->as.boolean;
        for (int i = 0; i < v->as.list.n; i++) {
            const wk_json *pair = v->as.list.items[i];
            if (pair->type != WK_JSON_ARRAY) return tree_fail(t, "a bad table entry");
            wk_ckpt_value *k, *x;
            const wk_json *kj = pair->as.list.n > 0 ? pair->as.list.items[0] : NULL;
            const wk_json *vj = pair->as.list.n > 1 ? pair->as.list.items[1] : NULL;
            wick_status st = tree_node(t, kj && kj->type != WK_JSON_NULL ? kj : NULL, depth + 1, &k);
            if (st) return st;
            if ((k->kind != WK_CKPT_STRING && k->kind != WK_CKPT_NUMBER) || (k->kind == WK_CKPT_NUMBER && isnan(k->as.number)))
                return tree_fail(t, "a table key that is not a string or number");
            st = tree_node(t, vj && vj->type != WK_JSON_NULL ? vj : NULL, depth + 1, &x);
            if (st) return st;
            if (wk_ckpt_table_add(c, tbl, k, x)) return oom(t->r);
        }
        *out = tbl;
    } else if ((v = field(node, "tensor"))) {
        return tensor_node(t, v, out);
    } else
        return tree_fail(t, "an unknown kind of value");
    return *out ? WICK_OK : oom(t->r);
}

/* ---- objects with many keys (devices, checksums): looked up by bsearch ---- */

typedef struct {
    const wk_json *obj;
    int *order; /* item indices sorted by key, equal keys by position */
} key_index;

static int cmp_keys(const wk_json *obj, int a, int b) {
    const wk_json *x = obj->as.list.keys[a], *y = obj->as.list.keys[b];
    size_t n = x->as.string.len < y->as.string.len ? x->as.string.len : y->as.string.len;
    int r = memcmp(x->as.string.s, y->as.string.s, n);
    if (r) return r;
    if (x->as.string.len != y->as.string.len) return x->as.string.len < y->as.string.len ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int by_key_index(const void *pa, const void *pb, void *ctx) {
    return cmp_keys(ctx, *(const int *)pa, *(const int *)pb);
}

static int index_object(key_index *ix, const wk_json *obj) {
    ix->obj = obj, ix->order = NULL;
    if (!obj || obj->as.list.n == 0) return 0;
    ix->order = malloc((size_t)obj->as.list.n * sizeof *ix->order);
    if (!ix->order) return -1;
    for (int i = 0; i < obj->as.list.n; i++) ix->order[i] = i;
    qsort_r(ix->order, (size_t)obj->as.list.n, sizeof *ix->order, by_key_index, (void *)obj);
    return 0;
}

/* The value of key (the last when repeated), absent when null. */
static const wk_json *index_get(const key_index *ix, const char *key) {
    if (!ix->order) return NULL;
    size_t len = strlen(key);
    int lo = 0, hi = ix->obj->as.list.n; /* the first position whose key is > key */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        const wk_json *k = ix->obj->as.list.keys[ix->order[mid]];
        size_t n = k->as.string.len < len ? k->as.string.len : len;
        int r = memcmp(k->as.string.s, key, n);
        if (r == 0) r = k->as.string.len < len ? -1 : k->as.string.len > len;
        if (r <= 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return NULL;
    const wk_json *k = ix->obj->as.list.keys[ix->order[lo - 1]];
    if (k->as.string.len != len || memcmp(k->as.string.s, key, len) != 0) return NULL;
    const wk_json *v = ix->obj->as.list.items[ix->order[lo - 1]];
    return v->type != WK_JSON_NULL ? v : NULL;
}

/* ---- storages from entries ---- */

static int hex8(const wk_json *v, uint32_t *out) {
    if (!v || v->type != WK_JSON_STRING || v->as.string.len != 8) return 0;
    uint32_t x = 0;
    for (int i = 0; i < 8; i++) {
        char ch = v->as.string.s[i];
        unsigned d = ch >= '0' && ch <= '9' ? (unsigned)(ch - '0') : ch >= 'a' && ch <= 'f' ? (unsigned)(ch - 'a' + 10)
                   : ch >= 'A' && ch <= 'F' ? (unsigned)(ch - 'A' + 10) : 16u;
        if (d > 15) return 0;
        x = x << 4 | d;
    }
    *out = x;
    return 1;
}

/* One storage per entry (in the header's order), on the CPU unless devices says. */
static wick_status add_storages(reader *r, const wk_json *devices, const wk_json *sums[2]) {
    static const char *const kinds[2] = {"crc32c", "crc32"};
    key_index dev = {0}, sum[2] = {{0}, {0}};
    wick_status st = WICK_OK;
    if (index_object(&dev, devices) || index_object(&sum[0], sums ? sums[0] : NULL) ||
        index_object(&sum[1], sums ? sums[1] : NULL))
        st = oom(r);
    for (int i = 0; i < r->count && !st; i++) {
        entry *e = &r->es[i];
        const char *device = "cpu";
        if (devices) {
            const wk_json *d = index_get(&dev, e->name);
            wick_device parsed;
            if (!d || d->type != WK_JSON_STRING || strlen(d->as.string.s) != d->as.string.len ||
                wick_device_parse(d->as.string.s, &parsed) != WICK_OK) {
                st = failf(r, "corrupt metadata: storage '%s' has no valid device", e->name);
                break;
            }
            device = d->as.string.s;
        }
        int k = wk_ckpt_add_storage(r->c, e->name, device, e->dtype, e->numel);
        if (k < 0) {
            st = oom(r);
            break;
        }
        for (int j = 0; j < 2 && sums; j++) {
            const wk_json *want = index_get(&sum[j], e->name);
            if (!want) continue;
            uint32_t crc;
            if (!hex8(want, &crc)) {
                st = failf(r, "corrupt metadata: storage '%s' has a bad %s", e->name, kinds[j]);
                break;
            }
            r->c->storages[k].crc_kind = j == 0 ? WK_CKPT_CRC32C : WK_CKPT_CRC32;
            r->c->storages[k].crc = crc;
            break;
        }
    }
    free(dev.order);
    free(sum[0].order);
    free(sum[1].order);
    return st;
}

/* The root of a plain safetensors file (or of wick_load_flat): name -> tensor. */
static wick_status flat_root(reader *r) {
    wk_ckpt *c = r->c;
    c->root = wk_ckpt_table(c);
    if (!c->root) return oom(r);
    for (int i = 0; i < r->count; i++) {
        entry *e = &r->es[i];
        int64_t strides[WICK_MAX_DIMS], step = 1;
        for (int d = e->ndim - 1; d >= 0; d--) strides[d] = step, step *= e->shape[d] ? e->shape[d] : 1;
        wk_ckpt_value *k = wk_ckpt_string(c, e->name, strlen(e->name));
        wk_ckpt_value *v = wk_ckpt_tensor(c, i, e->dtype, e->ndim, e->shape, strides, 0);
        if (!k || !v || wk_ckpt_table_add(c, c->root, k, v)) return oom(r);
    }
    return WICK_OK;
}

/* What __metadata__ makes of the file: a wick checkpoint's storages and tree, or
 * a plain safetensors file. */
static wick_status read_wick(reader *r) {
    const wk_json *meta = r->meta;
    const wk_json *format = meta ? field(meta, "format") : NULL;
    int is_wick = format && format->type == WK_JSON_STRING && strcmp(format->as.string.s, FORMAT) == 0;
    if (r->flat || !is_wick) {
        if (!r->flat && meta && field(meta, "wick")) {
            char what[80];
            if (!format) snprintf(what, sizeof what, "nil");
            else if (format->type == WK_JSON_STRING) snprintf(what, sizeof what, "%.60s", format->as.string.s);
            else snprintf(what, sizeof what, "%.*s", format->type == WK_JSON_NUMBER ? (int)format->as.number.len : 0,
                          format->type == WK_JSON_NUMBER ? format->as.number.text : "");
            return failf(r, "unknown checkpoint format '%s' (this wick reads %s)", what, FORMAT);
        }
        if (!r->flat && r->src.verify == 1 && r->count > 0)
            return failf(r, "verify: a plain safetensors file carries no checksums");
        r->c->format = WK_CKPT_SAFETENSORS;
        wick_status st = add_storages(r, NULL, NULL);
        return st ? st : flat_root(r);
    }
    r->c->format = WK_CKPT_WICK;
    const wk_json *text = field(meta, "wick");
    if (!text || text->type != WK_JSON_STRING) return failf(r, "corrupt metadata: missing tree or devices");
    wk_json *tree;
    wk_json_error err;
    if (wk_json_parse(text->as.string.s, text->as.string.len, META_DEPTH, arena_alloc, r->c, &tree, &err))
        return err.oom ? oom(r) : failf(r, "corrupt metadata: malformed JSON: %s at byte %zu", err.what, err.pos + 1);
    const wk_json *devices = field(tree, "devices");
    if (tree->type != WK_JSON_OBJECT || !devices || devices->type != WK_JSON_OBJECT)
        return failf(r, "corrupt metadata: missing tree or devices");
    const wk_json *sums[2] = {NULL, NULL};
    if (r->src.verify != 0) {
        static const char *const kinds[2] = {"crc32c", "crc32"};
        for (int j = 0; j < 2; j++) {
            sums[j] = field(tree, kinds[j]);
            if (sums[j] && sums[j]->type != WK_JSON_OBJECT)
                return failf(r, "corrupt metadata: %s is not an object", kinds[j]);
        }
    }
    wick_status st = add_storages(r, devices, r->src.verify != 0 ? sums : NULL);
    if (st) return st;
    tree_ctx t = {r, calloc(r->count > 0 ? (size_t)r->count : 1, sizeof(name_index))};
    if (!t.names) return oom(r);
    for (int i = 0; i < r->count; i++) t.names[i] = (name_index){r->c->storages[i].name, i};
    qsort(t.names, (size_t)r->count, sizeof *t.names, by_index_name);
    const wk_json *root = field(tree, "tree");
    st = tree_node(&t, root, 0, &r->c->root);
    free(t.names);
    return st;
}

/* ---- the container ---- */

static wick_status read_safetensors(reader *r, const unsigned char head[8]) {
    const char *what = r->flat ? "not a safetensors file" : "not a wick checkpoint or safetensors file";
    int64_t size = r->src.size;
    uint64_t hn = 0;
    for (int i = 7; i >= 0; i--) hn = hn << 8 | head[i];
    if (hn < 2 || hn > (uint64_t)(size - 8) || hn > MAX_HEADER) {
        char first = 0;
        int brace = size > 8 && pread(r->src.fd, &first, 1, 8) == 1 && first == '{';
        if (hn > (uint64_t)(size - 8) && hn <= MAX_HEADER && brace)
            return failf(r, "truncated: the header claims %llu bytes, the file has %lld after the size",
                         (unsigned long long)hn, (long long)(size - 8));
        return failf(r, "%s (header size %llu does not fit a file of %lld bytes)", what, (unsigned long long)hn,
                     (long long)size);
    }
    char *text = malloc((size_t)hn + 1); /* hn <= the file's size and <= 100 MiB */
    if (!text) return oom(r);
    size_t have = 0;
    while (have < hn) {
        ssize_t got = pread(r->src.fd, text + have, (size_t)hn - have, (off_t)(8 + have));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        have += (size_t)got;
    }
    wick_status st = WICK_OK;
    if (have < hn) st = failf(r, "cannot read the header");
    else if (text[0] != '{') st = failf(r, "%s", what);
    wk_json *root = NULL;
    wk_json_error err;
    if (!st && wk_json_parse(text, (size_t)hn, HEADER_DEPTH, arena_alloc, r->c, &root, &err))
        st = err.oom ? oom(r) : failf(r, "corrupt header: %s at byte %zu", err.what, err.pos + 1);
    if (!st) st = read_entries(r, root);
    if (!st) st = check_entries(r, size - 8 - (int64_t)hn);
    if (!st) st = read_wick(r);
    if (!st)
        for (int i = 0; i < r->c->nstorages; i++) r->c->storages[i].file_offset = 8 + (int64_t)hn + r->es[i].begin;
    if (!st) st = wk_ckpt_map_storages(r->c, &r->src);
    for (int i = 0; i < r->c->nstorages && !st; i++) st = wk_ckpt_verify_storage(r->c, i, &r->src);
    if (!st) st = wk_ckpt_make_views(r->c, &r->src);
    free(text); /* the JSON values point into the arena, not into text, except numbers (used above only) */
    return st;
}

wick_status wk_ckpt_read(wk_ckpt **out, const char *path, const wk_ckpt_read_options *opts) {
    const char *who = opts && opts->who ? opts->who : "wick.load";
    *out = NULL;
    if (!path) return wick_fail(WICK_ERR_ARGUMENT, "%s: expected a file path", who);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return wick_fail(WICK_ERR_IO, "%s: cannot open %s: %s", who, path, strerror(errno));
    reader r = {{path, who, fd, 0, opts ? opts->verify : -1, opts ? opts->mmap : 0, opts ? opts->objects : 0}, NULL,
                NULL, 0, NULL, opts ? opts->flat : 0};
    struct stat sb;
    unsigned char head[8];
    wick_status st = WICK_OK;
    if (fstat(fd, &sb) != 0) st = wick_fail(WICK_ERR_IO, "%s: cannot stat %s: %s", who, path, strerror(errno));
    r.src.size = (int64_t)sb.st_size;
    if (!st && (r.src.size < 8 || pread(fd, head, 8, 0) != 8))
        st = failf(&r, "%s (shorter than its 8-byte header size)",
                   r.flat ? "not a safetensors file" : "not a wick checkpoint or safetensors file");
    if (!st) {
        r.c = wk_ckpt_new(WK_CKPT_WICK);
        if (!r.c) st = oom(&r);
    }
    if (!st) {
        if (!r.flat && memcmp(head, "PK\3\4", 4) == 0) {
            r.c->format = WK_CKPT_PYTORCH;
            st = wk_ckpt_read_pytorch(r.c, &r.src);
        } else if (!r.flat && memcmp(head, "\x93NUMPY", 6) == 0)
            st = wk_ckpt_read_npy(r.c, &r.src);
        else
            st = read_safetensors(&r, head);
    }
    close(fd);
    free(r.es);
    if (st) {
        wk_ckpt_free(r.c);
        return st;
    }
    *out = r.c;
    return WICK_OK;
}
