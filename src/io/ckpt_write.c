/* Writing checkpoints (ckpt.h, docs/checkpoint-format.md): the safetensors
 * header is built here, for a wick checkpoint with the tree as JSON text in
 * __metadata__["wick"] and each storage's device and CRC-32C; the header and
 * then each storage straight from its memory go to the file atomically
 * (wick_write_storages_atomic, src/io/file.c). */
#define _GNU_SOURCE
#include "ckpt.h"
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT "wick-checkpoint-1"

const char *wk_ckpt_st_dtype(wick_dtype d); /* ckpt_read.c */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (b->len + n + 1 > cap) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static void put_int(buf *b, int64_t v) {
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    put(b, tmp, (size_t)n);
}

/* A JSON string: '"', '\\' and control characters escaped, other bytes as they are. */
static void put_string(buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    put(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != 0x7F && c != '"' && c != '\\') continue;
        put(b, s + run, i - run);
        run = i + 1;
        char e[7] = {'\\', 0};
        switch (c) {
        case '"': e[1] = '"'; break;
        case '\\': e[1] = '\\'; break;
        case '\b': e[1] = 'b'; break;
        case '\f': e[1] = 'f'; break;
        case '\n': e[1] = 'n'; break;
        case '\r': e[1] = 'r'; break;
        case '\t': e[1] = 't'; break;
        default: e[1] = 'u', e[2] = '0', e[3] = '0', e[4] = hex[c >> 4], e[5] = hex[c & 15];
        }
        put(b, e, strlen(e));
    }
    put(b, s + run, n - run);
    put(b, "\"", 1);
}

static void put_ints(buf *b, int n, const int64_t *v) {
    put(b, "[", 1);
    for (int i = 0; i < n; i++) {
        if (i) put(b, ",", 1);
        put_int(b, v[i]);
    }
    put(b, "]", 1);
}

/* %.17g (every double round-trips), or nan, inf, -inf */
static void put_number_text(buf *b, double v) {
    char tmp[40];
    if (isnan(v)) snprintf(tmp, sizeof tmp, "nan");
    else if (isinf(v)) snprintf(tmp, sizeof tmp, v > 0 ? "inf" : "-inf");
    else wk_json_format_g17(tmp, sizeof tmp, v);
    put_string(b, tmp, strlen(tmp));
}

/* VALUE of docs/checkpoint-format.md, object keys in sorted order. */
static void put_value(buf *b, const wk_ckpt *c, const wk_ckpt_value *v) {
    switch (v->kind) {
    case WK_CKPT_NUMBER:
        puts_(b, "{\"number\":");
        put_number_text(b, v->as.number);
        break;
    case WK_CKPT_STRING:
        puts_(b, "{\"string\":");
        put_string(b, v->as.string.bytes, v->as.string.len);
        break;
    case WK_CKPT_BOOLEAN: puts_(b, v->as.boolean ? "{\"boolean\":true" : "{\"boolean\":false"); break;
    case WK_CKPT_TABLE:
        puts_(b, v->as.table.dict ? "{\"dict\":true,\"table\":[" : "{\"table\":[");
        for (int i = 0, first = 1; i < v->as.table.n; i++) {
            if (v->as.table.pairs[i].value->kind == WK_CKPT_NIL) continue; /* an absent key */
            put(b, first ? "[" : ",[", first ? 1 : 2);
            first = 0;
            put_value(b, c, v->as.table.pairs[i].key);
            put(b, ",", 1);
            put_value(b, c, v->as.table.pairs[i].value);
            put(b, "]", 1);
        }
        put(b, "]", 1);
        break;
    case WK_CKPT_TENSOR: {
        const wk_ckpt_storage *s = &c->storages[v->as.tensor.storage];
        puts_(b, "{\"tensor\":{\"dtype\":");
        const char *dn = wick_dtype_name(v->as.tensor.dtype);
        put_string(b, dn, strlen(dn));
        puts_(b, ",\"offset\":");
        put_int(b, v->as.tensor.offset);
        puts_(b, ",\"shape\":");
        put_ints(b, v->as.tensor.ndim, v->as.tensor.sizes);
        puts_(b, ",\"storage\":");
        put_string(b, s->name, strlen(s->name));
        puts_(b, ",\"strides\":");
        put_ints(b, v->as.tensor.ndim, v->as.tensor.strides);
        put(b, "}", 1);
        break;
    }
    case WK_CKPT_NIL: return; /* not in the format: skipped in tables, refused as the root */
    }
    put(b, "}", 1);
}

static int by_name(const void *pa, const void *pb, void *ctx) {
    const wk_ckpt *c = ctx;
    return strcmp(c->storages[*(const int *)pa].name, c->storages[*(const int *)pb].name);
}

/* {"crc32c":{...},"devices":{...},"tree":VALUE}, storages by name */
static void put_tree(buf *b, const wk_ckpt *c, const uint32_t *crcs) {
    int n = c->nstorages;
    int *index = malloc((n > 0 ? (size_t)n : 1) * sizeof *index);
    if (!index) {
        b->oom = 1;
        return;
    }
    for (int i = 0; i < n; i++) index[i] = i;
    qsort_r(index, (size_t)n, sizeof *index, by_name, (void *)c);
    for (int pass = 0; pass < 2; pass++) {
        puts_(b, pass == 0 ? "{\"crc32c\":{" : "},\"devices\":{");
        for (int i = 0; i < n; i++) {
            const wk_ckpt_storage *s = &c->storages[index[i]];
            if (i) put(b, ",", 1);
            put_string(b, s->name, strlen(s->name));
            put(b, ":", 1);
            if (pass == 0) {
                char hex[9];
                snprintf(hex, sizeof hex, "%08x", (unsigned)crcs[index[i]]);
                put_string(b, hex, 8);
            } else
                put_string(b, s->device, strlen(s->device));
        }
    }
    puts_(b, "},\"tree\":");
    put_value(b, c, c->root);
    put(b, "}", 1);
    free(index);
}

/* the entries' order in the data: largest element size first, then by name */
static int by_size_then_name(const void *pa, const void *pb, void *ctx) {
    const wk_ckpt *c = ctx;
    const wk_ckpt_storage *a = &c->storages[*(const int *)pa], *b = &c->storages[*(const int *)pb];
    size_t ea = wick_dtype_size(a->dtype), eb = wick_dtype_size(b->dtype);
    if (ea != eb) return ea > eb ? -1 : 1;
    return strcmp(a->name, b->name);
}

/* For a plain safetensors file: the shape each storage is written with (the
 * root table's tensor that names it). */
static const wk_ckpt_value *flat_view_of(const wk_ckpt *c, int storage) {
    const wk_ckpt_value *root = c->root;
    if (!root || root->kind != WK_CKPT_TABLE) return NULL;
    if (storage < root->as.table.n) { /* the usual layout: pair i views storage i */
        const wk_ckpt_value *v = root->as.table.pairs[storage].value;
        if (v->kind == WK_CKPT_TENSOR && v->as.tensor.storage == storage) return v;
    }
    for (int i = 0; i < root->as.table.n; i++) {
        const wk_ckpt_value *v = root->as.table.pairs[i].value;
        if (v->kind == WK_CKPT_TENSOR && v->as.tensor.storage == storage) return v;
    }
    return NULL;
}

static const char *bytes_of(const wk_ckpt_storage *s) {
    return (const char *)wick_tensor_data(s->data) - wick_tensor_offset(s->data) * (int64_t)wick_dtype_size(s->dtype);
}

wick_status wk_ckpt_write(const char *path, const wk_ckpt *c, const char *who, int sorted_keys) {
    if (!path) return wick_fail(WICK_ERR_ARGUMENT, "%s: expected a file path", who);
    if (c->format == WK_CKPT_WICK && (!c->root || c->root->kind == WK_CKPT_NIL))
        return wick_fail(WICK_ERR_ARGUMENT, "%s: cannot save a nil", who);
    if (c->format == WK_CKPT_PYTORCH) return wick_fail(WICK_ERR_UNSUPPORTED, "%s: PyTorch zips are read, not written", who);
    int n = c->nstorages;
    for (int i = 0; i < n; i++) {
        const wk_ckpt_storage *s = &c->storages[i];
        if (!s->data || wick_tensor_device(s->data).type != WICK_CPU || wick_storage_numel(s->data) != s->numel ||
            wick_tensor_dtype(s->data) != s->dtype)
            return wick_fail(WICK_ERR_ARGUMENT, "%s: %s: storage '%s' is not a CPU storage of %lld elements", who, path,
                             s->name, (long long)s->numel);
    }
    int *order = malloc((n > 0 ? (size_t)n : 1) * sizeof *order);
    uint32_t *crcs = calloc(n > 0 ? (size_t)n : 1, sizeof *crcs);
    const wick_tensor **ordered = malloc((n > 0 ? (size_t)n : 1) * sizeof *ordered);
    int64_t *begins = malloc((n > 0 ? (size_t)n : 1) * sizeof *begins);
    int *names = malloc((n > 0 ? (size_t)n : 1) * sizeof *names);
    buf b = {0}, tree = {0};
    wick_status st = WICK_OK;
    if (!order || !crcs || !ordered || !begins || !names) goto oom;
    for (int i = 0; i < n; i++) order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_size_then_name, (void *)c);
    put(&b, "\0\0\0\0\0\0\0\0{", 9);
    if (c->format == WK_CKPT_WICK) {
        for (int i = 0; i < n; i++)
            crcs[i] = wick_crc32c(0, bytes_of(&c->storages[i]), (size_t)c->storages[i].numel * wick_dtype_size(c->storages[i].dtype));
        put_tree(&tree, c, crcs);
        if (tree.oom) goto oom;
    }
    int64_t offset = 0;
    for (int k = 0; k < n; k++) { /* the data: in size order */
        const wk_ckpt_storage *st_k = &c->storages[order[k]];
        begins[order[k]] = offset;
        offset += st_k->numel * (int64_t)wick_dtype_size(st_k->dtype);
        ordered[k] = st_k->data;
    }
    /* the header's entries: by name with __metadata__ among them, fields sorted
     * (as wick.save always wrote them), or in data order (wick_save_flat's) */
    int *keys = order;
    if (sorted_keys) {
        for (int i = 0; i < n; i++) names[i] = i;
        qsort_r(names, (size_t)n, sizeof *names, by_name, (void *)c);
        keys = names;
    }
    int meta_done = c->format != WK_CKPT_WICK, first = 1;
    for (int k = 0; k <= n; k++) {
        const wk_ckpt_storage *s = k < n ? &c->storages[keys[k]] : NULL;
        if (!meta_done && (!s || !sorted_keys || strcmp("__metadata__", s->name) < 0)) {
            puts_(&b, "\"__metadata__\":{\"format\":\"" FORMAT "\",\"wick\":");
            put_string(&b, tree.p, tree.len);
            put(&b, "}", 1);
            meta_done = 1, first = 0;
        }
        if (!s) break;
        if (!first) put(&b, ",", 1);
        first = 0;
        int64_t begin = begins[keys[k]], end = begin + s->numel * (int64_t)wick_dtype_size(s->dtype);
        const wk_ckpt_value *v = c->format == WK_CKPT_SAFETENSORS ? flat_view_of(c, keys[k]) : NULL;
        put_string(&b, s->name, strlen(s->name));
        if (sorted_keys) {
            puts_(&b, ":{\"data_offsets\":[");
            put_int(&b, begin);
            put(&b, ",", 1);
            put_int(&b, end);
            puts_(&b, "],\"dtype\":\"");
            puts_(&b, wk_ckpt_st_dtype(s->dtype));
            puts_(&b, "\",\"shape\":");
            if (v) put_ints(&b, v->as.tensor.ndim, v->as.tensor.sizes);
            else put_ints(&b, 1, &s->numel);
            put(&b, "}", 1);
        } else {
            puts_(&b, ":{\"dtype\":\"");
            puts_(&b, wk_ckpt_st_dtype(s->dtype));
            puts_(&b, "\",\"shape\":");
            if (v) put_ints(&b, v->as.tensor.ndim, v->as.tensor.sizes);
            else put_ints(&b, 1, &s->numel);
            puts_(&b, ",\"data_offsets\":[");
            put_int(&b, begin);
            put(&b, ",", 1);
            put_int(&b, end);
            puts_(&b, "]}");
        }
    }
    put(&b, "}", 1);
    while (!b.oom && b.len % 8 != 0) put(&b, " ", 1); /* each entry starts aligned */
    if (b.oom) goto oom;
    uint64_t hlen = (uint64_t)(b.len - 8);
    for (int i = 0; i < 8; i++) b.p[i] = (char)(hlen >> (8 * i) & 0xFF);
    st = wick_write_storages_atomic(path, b.p, b.len, n, ordered);
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", wick_last_error());
        st = wick_fail(st, "%s: %s", who, msg);
    }
    goto done;
oom:
    st = wick_fail(WICK_ERR_OOM, "%s: out of memory writing %s", who, path);
done:
    free(order);
    free(crcs);
    free(ordered);
    free(begins);
    free(names);
    free(b.p);
    free(tree.p);
    return st;
}
