/* NumPy's files for wick.load (ckpt.h, docs/checkpoint-format.md): an .npy
 * file (np.save: the magic "\x93NUMPY", a version, the header length, a
 * header that is a Python dict literal {'descr': '<f4', 'fortran_order':
 * False, 'shape': (2, 3), } padded with spaces, then the elements) becomes
 * one tensor; an .npz archive (np.savez: a stored zip of such files) a dict of
 * them, named as the archive names them less ".npy". The header is parsed here
 * and nowhere else; the elements stay in the file (mapped, or read where an
 * archive entry is not aligned), checked against the file's size, and an
 * archive entry against the zip's CRC-32. */
#include "ckpt.h"
#include "zip.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC "\x93NUMPY"
#define MAGIC_LEN 6
#define MAX_HEADER (1 << 20)

typedef struct {
    const char *who, *path, *entry; /* entry: the archive's name of the array, or NULL */
} npy_where;

static wick_status failf(const npy_where *w, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (w->entry) return wick_fail(WICK_ERR_IO, "%s: %s: array '%s': %s", w->who, w->path, w->entry, what);
    return wick_fail(WICK_ERR_IO, "%s: %s: %s", w->who, w->path, what);
}

static wick_status oom(const npy_where *w) {
    return wick_fail(WICK_ERR_OOM, "%s: out of memory reading %s", w->who, w->path);
}

/* ---- the header ---- */

typedef struct {
    wick_dtype dtype;
    bool fortran;
    int ndim;
    int64_t sizes[WICK_MAX_DIMS];
} npy_header;

typedef struct {
    const char *p, *end;
} cursor;

static void skip_space(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}
static bool take(cursor *c, char ch) {
    skip_space(c);
    if (c->p < c->end && *c->p == ch) return c->p++, true;
    return false;
}
/* a quoted string ('...' or "...", no escapes: numpy writes none in these fields) */
static bool string_of(cursor *c, const char **s, size_t *len) {
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return false;
    char q = *c->p++;
    const char *start = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\') return false;
        c->p++;
    }
    if (c->p >= c->end) return false;
    *s = start, *len = (size_t)(c->p - start);
    c->p++;
    return true;
}
static bool word(cursor *c, const char *w) {
    size_t n = strlen(w);
    skip_space(c);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n)) return false;
    c->p += n;
    return true;
}

/* numpy's kinds and sizes that wick has */
static const struct {
    char kind;
    int size;
    wick_dtype dtype;
} TYPES[] = {
    {'f', 2, WICK_FLOAT16}, {'f', 4, WICK_FLOAT32}, {'f', 8, WICK_FLOAT64},     {'i', 4, WICK_INT32},
    {'i', 8, WICK_INT64},   {'u', 1, WICK_UINT8},   {'b', 1, WICK_BOOL},        {'c', 8, WICK_COMPLEX64},
    {'c', 16, WICK_COMPLEX128},
};

int wk_numpy_dtype(char kind, int size, wick_dtype *out) {
    for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++)
        if (TYPES[i].kind == kind && TYPES[i].size == size) return *out = TYPES[i].dtype, 1;
    return 0;
}

/* numpy's type string ('<f4', '|b1', '<c16', ...) as a wick dtype */
static wick_status dtype_of(const npy_where *w, const char *s, size_t len, wick_dtype *out) {
    char order = len > 0 ? s[0] : 0, kind = len > 1 ? s[1] : 0;
    int size = 0;
    for (size_t i = 2; i < len && i < 5; i++) {
        if (s[i] < '0' || s[i] > '9') return failf(w, "unsupported dtype '%.*s'", (int)len, s);
        size = size * 10 + (s[i] - '0');
    }
    if (kind == 'O') return failf(w, "an array of Python objects (dtype 'O', pickled) cannot be read: save numbers");
    if (len < 3 || len > 4 || (order != '<' && order != '|' && order != '=' && order != '>'))
        return failf(w, "unsupported dtype '%.*s' (a structured or unusual dtype)", (int)(len < 40 ? len : 40), s);
    if (wk_numpy_dtype(kind, size, out)) {
        if (order == '>' && size > 1)
            return failf(w, "the array is big-endian ('%.*s'); only little-endian arrays are supported "
                            "(numpy: a.astype(a.dtype.newbyteorder('<')))",
                         (int)len, s);
        return WICK_OK;
    }
    return failf(w, "dtype '%.*s' has no wick dtype (wick has float16/32/64, int32, int64, uint8, bool, complex64/128: "
                    "convert it with a.astype(...) before saving)",
                 (int)len, s);
}

/* The header dict's three fields, in any order, each once. */
static wick_status parse_header(const npy_where *w, const char *text, size_t len, npy_header *h) {
    cursor c = {text, text + len};
    bool seen[3] = {false, false, false};
    memset(h, 0, sizeof *h);
    if (!take(&c, '{')) return failf(w, "corrupt header (not a dict)");
    while (!take(&c, '}')) {
        const char *key, *s;
        size_t klen, slen;
        if (!string_of(&c, &key, &klen) || !take(&c, ':')) return failf(w, "corrupt header (a key)");
        int k = klen == 5 && !memcmp(key, "descr", 5) ? 0
              : klen == 13 && !memcmp(key, "fortran_order", 13) ? 1
              : klen == 5 && !memcmp(key, "shape", 5) ? 2
              : -1;
        if (k < 0) return failf(w, "corrupt header (the key '%.*s')", (int)(klen < 40 ? klen : 40), key);
        if (seen[k]) return failf(w, "corrupt header (the key '%.*s' twice)", (int)klen, key);
        seen[k] = true;
        if (k == 0) {
            skip_space(&c);
            if (c.p < c.end && *c.p == '[') return failf(w, "a structured array (fields) cannot be read");
            if (!string_of(&c, &s, &slen)) return failf(w, "corrupt header (descr)");
            wick_status st = dtype_of(w, s, slen, &h->dtype);
            if (st) return st;
        } else if (k == 1) {
            if (word(&c, "True")) h->fortran = true;
            else if (!word(&c, "False")) return failf(w, "corrupt header (fortran_order)");
        } else {
            if (!take(&c, '(')) return failf(w, "corrupt header (shape)");
            while (!take(&c, ')')) {
                skip_space(&c);
                int64_t v = 0;
                const char *start = c.p;
                while (c.p < c.end && *c.p >= '0' && *c.p <= '9') {
                    if (v > (INT64_MAX - 9) / 10) return failf(w, "corrupt header (a size too large)");
                    v = v * 10 + (*c.p++ - '0');
                }
                if (c.p == start) return failf(w, "corrupt header (shape)");
                if (h->ndim == WICK_MAX_DIMS) return failf(w, "more than %d dimensions", WICK_MAX_DIMS);
                h->sizes[h->ndim++] = v;
                if (!take(&c, ',') && !(skip_space(&c), c.p < c.end && *c.p == ')'))
                    return failf(w, "corrupt header (shape)");
            }
        }
        if (!take(&c, ',') && !(skip_space(&c), c.p < c.end && *c.p == '}')) return failf(w, "corrupt header");
    }
    if (!seen[0] || !seen[1] || !seen[2]) return failf(w, "corrupt header (descr, fortran_order and shape are required)");
    return WICK_OK;
}

/* ---- one array ---- */

/* The array whose .npy bytes start at `offset` (`size` bytes of the file): its
 * storage (named `name`, elements at its data's offset) and its view, into c.
 * *crc: the CRC-32 of the header bytes, for an archive entry's check. */
typedef int (*reader_fn)(void *ctx, void *buf, int64_t offset, size_t n); /* 0, or -1 on a short read */
static wick_status read_array(wk_ckpt *c, const npy_where *w, reader_fn fd_read, void *ctx,
                              int64_t offset, int64_t size, const char *name, wk_ckpt_value **out, uint32_t *crc) {
    unsigned char pre[12];
    if (size < 10 || fd_read(ctx, pre, offset, 10)) return failf(w, "not a NumPy array (shorter than its header)");
    if (memcmp(pre, MAGIC, MAGIC_LEN)) return failf(w, "not a NumPy .npy array (no \\x93NUMPY magic)");
    int major = pre[6];
    if (major < 1 || major > 3) return failf(w, "unsupported .npy format version %d.%d", major, pre[7]);
    int64_t hlen, at;
    if (major == 1) hlen = pre[8] | pre[9] << 8, at = 10;
    else {
        if (size < 12 || fd_read(ctx, pre + 10, offset + 10, 2)) return failf(w, "not a NumPy array (a short header)");
        hlen = (int64_t)pre[8] | (int64_t)pre[9] << 8 | (int64_t)pre[10] << 16 | (int64_t)pre[11] << 24, at = 12;
    }
    if (hlen > MAX_HEADER || hlen > size - at) return failf(w, "corrupt header (its length runs past the file)");
    char *text = malloc((size_t)hlen + 1);
    if (!text) return oom(w);
    if (fd_read(ctx, text, offset + at, (size_t)hlen)) {
        free(text);
        return failf(w, "cannot read the header");
    }
    npy_header h;
    wick_status st = parse_header(w, text, (size_t)hlen, &h);
    *crc = wick_crc32(wick_crc32(0, pre, (size_t)at), text, (size_t)hlen);
    free(text);
    if (st) return st;
    /* the product of the sizes, zeros left out too (the strides below), and the bytes: no overflow */
    int64_t numel = 1, span = 1, bytes, es = (int64_t)wick_dtype_size(h.dtype), data = at + hlen;
    for (int i = 0; i < h.ndim; i++)
        if (__builtin_mul_overflow(numel, h.sizes[i], &numel) ||
            __builtin_mul_overflow(span, h.sizes[i] > 0 ? h.sizes[i] : 1, &span))
            return failf(w, "sizes overflow");
    if (__builtin_mul_overflow(numel, es, &bytes)) return failf(w, "sizes overflow");
    if (bytes != size - data)
        return failf(w, "the data is %lld bytes, but the header's shape and dtype need %lld", (long long)(size - data),
                     (long long)bytes);
    int64_t strides[WICK_MAX_DIMS], step = 1;
    for (int k = 0; k < h.ndim; k++) { /* row-major, or column-major for fortran_order */
        int i = h.fortran ? k : h.ndim - 1 - k;
        strides[i] = step;
        step *= h.sizes[i] > 0 ? h.sizes[i] : 1;
    }
    int s = wk_ckpt_add_storage(c, name, "cpu", h.dtype, numel);
    if (s < 0) return oom(w);
    c->storages[s].file_offset = offset + data;
    *out = wk_ckpt_tensor(c, s, h.dtype, h.ndim, h.sizes, strides, 0);
    return *out ? WICK_OK : oom(w);
}

static int file_read(void *ctx, void *buf, int64_t offset, size_t n) {
    const wk_ckpt_source *src = ctx;
    size_t have = 0;
    while (have < n) {
        ssize_t got = pread(src->fd, (char *)buf + have, n - have, (off_t)(offset + (int64_t)have));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        have += (size_t)got;
    }
    return 0;
}
static int zip_read(void *ctx, void *buf, int64_t offset, size_t n) { return wk_zip_read(ctx, buf, offset, n) ? -1 : 0; }

wick_status wk_ckpt_read_npy(wk_ckpt *c, const wk_ckpt_source *src) {
    npy_where w = {src->who, src->path, NULL};
    uint32_t crc;
    wk_ckpt_value *v = NULL;
    c->format = WK_CKPT_NUMPY;
    wick_status st = read_array(c, &w, file_read, (void *)src, 0, src->size, "array", &v, &crc);
    if (!st) st = wk_ckpt_map_storages(c, src);
    if (!st) c->root = v, st = wk_ckpt_make_views(c, src);
    return st;
}

/* ---- an archive ---- */

static bool is_npy_name(const wk_zip_entry *e) {
    return e->name_len > 4 && !memcmp(e->name + e->name_len - 4, ".npy", 4) && !memchr(e->name, '\0', e->name_len);
}

bool wk_zip_is_npz(const wk_zip *z) {
    bool any = false;
    for (int64_t i = 0; i < z->n; i++) {
        const wk_zip_entry *e = &z->entries[i];
        if (e->name_len >= 8 && !memcmp(e->name + e->name_len - 8, "data.pkl", 8)) return false;
        any = any || is_npy_name(e);
    }
    return any;
}

wick_status wk_ckpt_read_npz(wk_ckpt *c, const wk_ckpt_source *src, const wk_zip *z) {
    c->format = WK_CKPT_NUMPY;
    wk_ckpt_value *dict = wk_ckpt_table(c);
    npy_where w = {src->who, src->path, NULL};
    if (!dict) return oom(&w);
    dict->as.table.dict = true;
    uint32_t *crcs = calloc((size_t)(z->n > 0 ? z->n : 1), sizeof *crcs);
    const wk_zip_entry **of = calloc((size_t)(z->n > 0 ? z->n : 1), sizeof *of);
    wick_status st = crcs && of ? WICK_OK : oom(&w);
    for (int64_t i = 0; i < z->n && !st; i++) {
        const wk_zip_entry *e = &z->entries[i];
        if (!is_npy_name(e)) continue;
        w.entry = e->name;
        wk_ckpt_value *v = NULL, *key = wk_ckpt_string(c, e->name, e->name_len - 4);
        st = key ? read_array(c, &w, zip_read, (void *)z, e->offset, e->size, e->name, &v, &crcs[c->nstorages])
                 : oom(&w);
        if (!st) of[c->nstorages - 1] = e;
        if (!st && wk_ckpt_table_add(c, dict, key, v)) st = oom(&w);
    }
    if (!st) st = wk_ckpt_map_storages(c, src);
    for (int i = 0; i < c->nstorages && !st && src->verify != 0; i++) { /* the zip's CRC-32 of header and data */
        const wk_ckpt_storage *s = &c->storages[i];
        size_t bytes = (size_t)s->numel * wick_dtype_size(s->dtype);
        if (wick_crc32(crcs[i], wick_tensor_data(s->data), bytes) != of[i]->crc)
            st = wick_fail(WICK_ERR_IO,
                           "%s: %s: corrupt zip archive (CRC-32 mismatch in '%s': the data is corrupt; wick.load(path, "
                           "{verify = false}) skips the check)",
                           src->who, src->path, of[i]->name);
    }
    if (!st) c->root = dict, st = wk_ckpt_make_views(c, src);
    free(crcs);
    free(of);
    return st;
}
