/* Flat checkpoints from C: a table of named tensors as a plain safetensors file
 * (docs/checkpoint-format.md), the C counterpart of wick.save_safetensors and of
 * wick.load on a plain safetensors file (lua/wick/serialize.lua). */
#include "wick.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_HEADER (100 * 1024 * 1024)
#define MAX_DIM ((int64_t)1 << 53)
#define MAX_DEPTH 64

static const char *const ST_NAMES[WICK_NUM_DTYPES] = {
    [WICK_FLOAT32] = "F32", [WICK_FLOAT64] = "F64", [WICK_FLOAT16] = "F16", [WICK_BFLOAT16] = "BF16",
    [WICK_INT64] = "I64",   [WICK_INT32] = "I32",   [WICK_UINT8] = "U8",    [WICK_BOOL] = "BOOL",
};

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when invalid:
 * no overlong forms, surrogates or code points beyond U+10FFFF. */
static size_t utf8_seq(const unsigned char *p, size_t n) {
    unsigned c = p[0];
    if (c < 0x80) return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else return 0;
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if (p[k] < 0x80 || p[k] > 0xBF) return 0;
    return len;
}

/* ---- saving --------------------------------------------------------------- */

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
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

static void putf(buf *b, const char *fmt, ...) {
    char tmp[64];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    put(b, tmp, (size_t)n);
}

static void put_json_string(buf *b, const char *s) {
    put(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') put(b, "\\", 1);
        put(b, s, 1);
    }
    put(b, "\"", 1);
}

static const char *name_problem(const char *name) {
    const unsigned char *p = (const unsigned char *)name;
    size_t n = strlen(name);
    if (strcmp(name, "__metadata__") == 0) return "is reserved by safetensors";
    for (size_t i = 0; i < n;) {
        if (p[i] < 0x20 || p[i] == 0x7F) return "contains a control character";
        size_t len = utf8_seq(p + i, n - i);
        if (!len) return "is not valid UTF-8";
        i += len;
    }
    return NULL;
}

/* A CPU tensor holding exactly t's elements in a storage of its own. */
static wick_status host_copy(wick_tensor **out, wick_tensor *t) {
    wick_tensor *d = NULL, *h = NULL;
    wick_status st = wick_detach(&d, t);
    if (st) return st;
    wick_options o = wick_default_options();
    o.dtype = wick_tensor_dtype(t);
    o.device = wick_cpu();
    st = wick_to(&h, d, o);
    wick_tensor_release(d);
    if (st) return st;
    if (!wick_tensor_is_contiguous(h) || wick_tensor_offset(h) != 0 || wick_storage_numel(h) != wick_tensor_numel(h)) {
        wick_tensor *c = NULL;
        st = wick_clone(&c, h);
        wick_tensor_release(h);
        if (st) return st;
        h = c;
    }
    *out = h;
    return WICK_OK;
}

static const char *const *sort_names;
static const wick_tensor *const *sort_tensors;
static int by_size_then_name(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    size_t ea = wick_dtype_size(wick_tensor_dtype(sort_tensors[a]));
    size_t eb = wick_dtype_size(wick_tensor_dtype(sort_tensors[b]));
    if (ea != eb) return ea > eb ? -1 : 1;
    return strcmp(sort_names[a], sort_names[b]);
}

wick_status wick_save_flat(const char *path, int n, const char *const *names, const wick_tensor *const *tensors) {
    if (!path) return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: expected a file path");
    if (n < 0 || (n > 0 && (!names || !tensors)))
        return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: %s: bad count or arrays", path);
    for (int i = 0; i < n; i++) {
        if (!names[i] || !tensors[i])
            return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: %s: entry %d has no name or no tensor", path, i + 1);
        const char *why = name_problem(names[i]);
        if (why) return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: %s: the name of entry %d %s", path, i + 1, why);
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0)
                return wick_fail(WICK_ERR_ARGUMENT, "wick_save_flat: %s: duplicate name '%s'", path, names[i]);
    }
    wick_tensor **host = calloc(n > 0 ? (size_t)n : 1, sizeof *host);
    int *order = malloc((n > 0 ? (size_t)n : 1) * sizeof *order);
    const wick_tensor **ordered = malloc((n > 0 ? (size_t)n : 1) * sizeof *ordered);
    buf b = {0};
    wick_status st = WICK_OK;
    if (!host || !order || !ordered) {
        st = wick_fail(WICK_ERR_OOM, "wick_save_flat: out of memory writing %s", path);
        goto done;
    }
    for (int i = 0; i < n && !st; i++) {
        st = host_copy(&host[i], (wick_tensor *)tensors[i]);
        if (st) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", wick_last_error());
            st = wick_fail(st, "wick_save_flat: %s: entry '%s': %s", path, names[i], msg);
        }
        order[i] = i;
    }
    if (st) goto done;
    sort_names = names, sort_tensors = (const wick_tensor *const *)host;
    qsort(order, (size_t)n, sizeof *order, by_size_then_name);
    put(&b, "\0\0\0\0\0\0\0\0{", 9);
    int64_t offset = 0;
    for (int k = 0; k < n; k++) {
        wick_tensor *t = host[order[k]];
        int64_t nbytes = wick_tensor_numel(t) * (int64_t)wick_dtype_size(wick_tensor_dtype(t));
        if (k) put(&b, ",", 1);
        put_json_string(&b, names[order[k]]);
        put(&b, ":{\"dtype\":\"", 11);
        put(&b, ST_NAMES[wick_tensor_dtype(t)], strlen(ST_NAMES[wick_tensor_dtype(t)]));
        put(&b, "\",\"shape\":[", 11);
        for (int d = 0; d < wick_tensor_ndim(t); d++) putf(&b, d ? ",%lld" : "%lld", (long long)wick_tensor_sizes(t)[d]);
        putf(&b, "],\"data_offsets\":[%lld,", (long long)offset);
        putf(&b, "%lld]}", (long long)(offset + nbytes));
        offset += nbytes;
        ordered[k] = t;
    }
    put(&b, "}", 1);
    while (!b.oom && b.len % 8 != 0) put(&b, " ", 1); /* each entry starts aligned */
    if (b.oom) {
        st = wick_fail(WICK_ERR_OOM, "wick_save_flat: out of memory writing %s", path);
        goto done;
    }
    uint64_t hlen = (uint64_t)(b.len - 8);
    for (int i = 0; i < 8; i++) b.p[i] = (char)(hlen >> (8 * i) & 0xFF);
    st = wick_write_storages_atomic(path, b.p, b.len, n, ordered);
done:
    if (host)
        for (int i = 0; i < n; i++) wick_tensor_release(host[i]);
    free(host);
    free(order);
    free(ordered);
    free(b.p);
    return st;
}

/* ---- loading -------------------------------------------------------------- */

typedef struct {
    char *name;
    wick_dtype dtype;
    int ndim;
    int64_t shape[WICK_MAX_DIMS];
    int64_t begin, end, numel;
} entry;

typedef struct {
    const char *s, *path;
    size_t pos, n;
    wick_status st;
} parser;

static int perr(parser *p, const char *fmt, ...) {
    if (p->st) return -1;
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->st = wick_fail(WICK_ERR_IO, "wick_load_flat: %s: corrupt header: %s at byte %zu", p->path, msg, p->pos + 1);
    return -1;
}

static void ws(parser *p) {
    while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' || p->s[p->pos] == '\r' || p->s[p->pos] == '\n'))
        p->pos++;
}

static int expect(parser *p, char c) {
    ws(p);
    if (p->pos >= p->n || p->s[p->pos] != c) return perr(p, "expected '%c'", c);
    p->pos++;
    return 0;
}

static int hex4(parser *p, unsigned *out) {
    if (p->n - p->pos < 4) return perr(p, "a short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return perr(p, "a bad \\u escape");
    }
    *out = v;
    return 0;
}

/* A JSON string; *out (malloc'd, NUL-terminated) when out is not NULL. Strings
 * holding U+0000 are refused (they cannot be C names). */
static int parse_string(parser *p, char **out) {
    if (expect(p, '"')) return -1;
    /* the decoded string is never longer than its source */
    size_t cap = 1;
    for (size_t i = p->pos; i < p->n && p->s[i] != '"'; i++, cap++)
        if (p->s[i] == '\\' && i + 1 < p->n) i++, cap++;
    char *d = out ? malloc(cap + 4) : NULL;
    if (out && !d) {
        p->st = wick_fail(WICK_ERR_OOM, "wick_load_flat: out of memory reading %s", p->path);
        return -1;
    }
    size_t len = 0;
    for (;;) {
        if (p->pos >= p->n) {
            free(d);
            return perr(p, "an unterminated string");
        }
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            free(d);
            return perr(p, "a control character in a string");
        }
        if (c != '\\') {
            size_t k = utf8_seq((const unsigned char *)p->s + p->pos, p->n - p->pos);
            if (!k) {
                free(d);
                return perr(p, "invalid UTF-8");
            }
            if (d) memcpy(d + len, p->s + p->pos, k);
            len += k, p->pos += k;
            continue;
        }
        p->pos++;
        if (p->pos >= p->n) {
            free(d);
            return perr(p, "an unterminated string");
        }
        char e = p->s[p->pos++];
        char simple = e == '"' ? '"' : e == '\\' ? '\\' : e == '/' ? '/' : e == 'b' ? '\b' : e == 'f' ? '\f'
                    : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : 0;
        if (simple) {
            if (d) d[len] = simple;
            len++;
            continue;
        }
        if (e != 'u') {
            free(d);
            return perr(p, "a bad escape");
        }
        unsigned cp;
        if (hex4(p, &cp)) {
            free(d);
            return -1;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            free(d);
            return perr(p, "a lone low surrogate");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            unsigned lo;
            if (p->n - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') {
                free(d);
                return perr(p, "a lone high surrogate");
            }
            p->pos += 2;
            if (hex4(p, &lo)) {
                free(d);
                return -1;
            }
            if (lo < 0xDC00 || lo > 0xDFFF) {
                free(d);
                return perr(p, "a lone high surrogate");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0) {
            free(d);
            return perr(p, "a NUL character in a string");
        }
        /* a \uXXXX escape (6 bytes, or 12 for a pair) encodes to at most 4 bytes */
        unsigned char u[4];
        size_t k;
        if (cp < 0x80) u[0] = (unsigned char)cp, k = 1;
        else if (cp < 0x800) u[0] = (unsigned char)(0xC0 | cp >> 6), u[1] = (unsigned char)(0x80 | (cp & 0x3F)), k = 2;
        else if (cp < 0x10000)
            u[0] = (unsigned char)(0xE0 | cp >> 12), u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)),
            u[2] = (unsigned char)(0x80 | (cp & 0x3F)), k = 3;
        else
            u[0] = (unsigned char)(0xF0 | cp >> 18), u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F)),
            u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (unsigned char)(0x80 | (cp & 0x3F)), k = 4;
        if (d) memcpy(d + len, u, k);
        len += k;
    }
    if (d) {
        d[len] = '\0';
        *out = d;
    }
    return 0;
}

/* A non-negative integer no larger than 2^53 (digits only). */
static int parse_uint(parser *p, int64_t *out, const char *what) {
    ws(p);
    size_t start = p->pos;
    int64_t v = 0;
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        v = v * 10 + (p->s[p->pos] - '0');
        p->pos++;
        if (v > MAX_DIM) return perr(p, "%s larger than 2^53", what);
    }
    if (p->pos == start) return perr(p, "%s that is not a non-negative integer", what);
    if (p->s[start] == '0' && p->pos - start > 1) return perr(p, "%s with a leading zero", what);
    if (p->pos < p->n && (p->s[p->pos] == '.' || p->s[p->pos] == 'e' || p->s[p->pos] == 'E'))
        return perr(p, "%s that is not an integer", what);
    *out = v;
    return 0;
}

/* Any JSON value, checked and dropped (the __metadata__ object, unknown keys). */
static int skip_value(parser *p, int depth) {
    if (depth > MAX_DEPTH) return perr(p, "nesting deeper than %d levels", MAX_DEPTH);
    ws(p);
    if (p->pos >= p->n) return perr(p, "a missing value");
    char c = p->s[p->pos];
    if (c == '"') return parse_string(p, NULL);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        p->pos++;
        ws(p);
        if (p->pos < p->n && p->s[p->pos] == close) {
            p->pos++;
            return 0;
        }
        for (;;) {
            if (c == '{' && (parse_string(p, NULL) || expect(p, ':'))) return -1;
            if (skip_value(p, depth + 1)) return -1;
            ws(p);
            if (p->pos < p->n && p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            return expect(p, close);
        }
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(words[i]);
        if (p->n - p->pos >= k && memcmp(p->s + p->pos, words[i], k) == 0) {
            p->pos += k;
            return 0;
        }
    }
    /* a JSON number */
    size_t start = p->pos;
    if (p->s[p->pos] == '-') p->pos++;
    size_t digits = p->pos;
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    if (p->pos == digits) return perr(p, "an unexpected character");
    if (p->s[digits] == '0' && p->pos - digits > 1) return perr(p, "a number with a leading zero");
    if (p->pos < p->n && p->s[p->pos] == '.') {
        size_t f = ++p->pos;
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
        if (p->pos == f) return perr(p, "a bad number");
    }
    if (p->pos < p->n && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->n && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
        size_t e = p->pos;
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
        if (p->pos == e) return perr(p, "a bad number");
    }
    (void)start;
    return 0;
}

/* {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]} */
static int parse_entry(parser *p, entry *e) {
    int have_dtype = 0, have_shape = 0, have_offsets = 0;
    if (expect(p, '{')) return -1;
    ws(p);
    if (p->pos < p->n && p->s[p->pos] == '}') return perr(p, "entry '%s' lacks dtype, shape or data_offsets", e->name);
    for (;;) {
        char *key = NULL;
        if (parse_string(p, &key) || expect(p, ':')) {
            free(key);
            return -1;
        }
        int rc = 0;
        if (strcmp(key, "dtype") == 0) {
            char *dt = NULL;
            if (have_dtype++) rc = perr(p, "entry '%s' has two dtypes", e->name);
            else if (!(rc = parse_string(p, &dt))) {
                int found = -1;
                for (int i = 0; i < WICK_NUM_DTYPES; i++)
                    if (strcmp(dt, ST_NAMES[i]) == 0) found = i;
                if (found < 0) rc = perr(p, "entry '%s' has an unknown or unsupported dtype '%.32s'", e->name, dt);
                else e->dtype = (wick_dtype)found;
            }
            free(dt);
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++) rc = perr(p, "entry '%s' has two shapes", e->name);
            else if (!(rc = expect(p, '['))) {
                ws(p);
                if (p->pos < p->n && p->s[p->pos] == ']') p->pos++;
                else
                    for (;;) {
                        if (e->ndim >= WICK_MAX_DIMS) {
                            rc = perr(p, "entry '%s' has more than %d dimensions", e->name, WICK_MAX_DIMS);
                            break;
                        }
                        if ((rc = parse_uint(p, &e->shape[e->ndim++], "a shape dimension"))) break;
                        ws(p);
                        if (p->pos < p->n && p->s[p->pos] == ',') {
                            p->pos++;
                            continue;
                        }
                        rc = expect(p, ']');
                        break;
                    }
            }
        } else if (strcmp(key, "data_offsets") == 0) {
            if (have_offsets++) rc = perr(p, "entry '%s' has two data_offsets", e->name);
            else
                rc = expect(p, '[') || parse_uint(p, &e->begin, "a data offset") || expect(p, ',') ||
                     parse_uint(p, &e->end, "a data offset") || expect(p, ']');
        } else {
            rc = skip_value(p, 2);
        }
        free(key);
        if (rc) return -1;
        ws(p);
        if (p->pos < p->n && p->s[p->pos] == ',') {
            p->pos++;
            continue;
        }
        if (expect(p, '}')) return -1;
        break;
    }
    if (!have_dtype || !have_shape || !have_offsets)
        return perr(p, "entry '%s' lacks dtype, shape or data_offsets", e->name);
    return 0;
}

void wick_free_flat(int n, char **names, wick_tensor **tensors) {
    for (int i = 0; i < n; i++) {
        if (names) free(names[i]);
        if (tensors) wick_tensor_release(tensors[i]);
    }
    free(names);
    free(tensors);
}

static int by_begin(const void *a, const void *b) {
    const entry *x = *(const entry *const *)a, *y = *(const entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

static wick_status load_entries(const char *path, entry *es, int count, int64_t data_start, int64_t data_size,
                                wick_tensor ***out_tensors) {
    /* every size and offset, before anything is read */
    int64_t total = 0;
    for (int i = 0; i < count; i++) {
        entry *e = &es[i];
        int64_t esize = (int64_t)wick_dtype_size(e->dtype), numel = 1;
        int zero = 0;
        for (int d = 0; d < e->ndim; d++) zero |= e->shape[d] == 0;
        if (zero) numel = 0;
        else
            for (int d = 0; d < e->ndim; d++) {
                if (numel > INT64_MAX / esize / e->shape[d])
                    return wick_fail(WICK_ERR_IO, "wick_load_flat: %s: corrupt header: '%s' has a shape too large", path,
                                     e->name);
                numel *= e->shape[d];
            }
        if (e->begin > e->end || e->end - e->begin != numel * esize)
            return wick_fail(WICK_ERR_IO,
                             "wick_load_flat: %s: corrupt header: '%s' has data_offsets [%lld, %lld] for %lld elements of %s",
                             path, e->name, (long long)e->begin, (long long)e->end, (long long)numel,
                             wick_dtype_name(e->dtype));
        if (e->end > data_size)
            return wick_fail(WICK_ERR_IO, "wick_load_flat: %s: truncated: '%s' ends at byte %lld of the data, the file holds %lld",
                             path, e->name, (long long)e->end, (long long)data_size);
        e->numel = numel;
        if (e->end > total) total = e->end;
    }
    if (total < data_size)
        return wick_fail(WICK_ERR_IO, "wick_load_flat: %s: corrupt: %lld unexpected bytes after the end of the data", path,
                         (long long)(data_size - total));
    size_t nn = count > 0 ? (size_t)count : 1;
    entry **sorted = malloc(nn * sizeof *sorted);
    int64_t *offsets = malloc(nn * sizeof *offsets), *numels = malloc(nn * sizeof *numels);
    wick_dtype *dtypes = malloc(nn * sizeof *dtypes);
    wick_tensor **flat = calloc(nn, sizeof *flat), **tensors = calloc(nn, sizeof *tensors);
    wick_status st = WICK_OK;
    if (!sorted || !offsets || !numels || !dtypes || !flat || !tensors) {
        st = wick_fail(WICK_ERR_OOM, "wick_load_flat: out of memory reading %s", path);
        goto done;
    }
    for (int i = 0; i < count; i++) sorted[i] = &es[i];
    qsort(sorted, (size_t)count, sizeof *sorted, by_begin);
    int64_t reach = 0;
    const char *last = NULL;
    for (int i = 0; i < count; i++) {
        if (sorted[i]->begin == sorted[i]->end) continue;
        if (sorted[i]->begin < reach) {
            st = wick_fail(WICK_ERR_IO, "wick_load_flat: %s: corrupt header: '%s' overlaps '%s'", path, sorted[i]->name, last);
            goto done;
        }
        reach = sorted[i]->end, last = sorted[i]->name;
    }
    for (int i = 0; i < count; i++) {
        offsets[i] = data_start + es[i].begin;
        dtypes[i] = es[i].dtype;
        numels[i] = es[i].numel;
    }
    st = count > 0 ? wick_map_storages(path, count, offsets, dtypes, numels, flat) : WICK_OK;
    if (st && strstr(wick_last_error(), "not aligned")) { /* a writer that did not align its entries */
        st = WICK_OK;
        for (int i = 0; i < count && !st; i++) st = wick_read_storage(&flat[i], path, offsets[i], dtypes[i], numels[i]);
    }
    if (st) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", wick_last_error());
        st = wick_fail(st, "wick_load_flat: %s", msg);
        goto done;
    }
    for (int i = 0; i < count && !st; i++) st = wick_view(&tensors[i], flat[i], es[i].ndim, es[i].shape);
    if (st) goto done;
    *out_tensors = tensors;
    tensors = NULL;
done:
    if (flat)
        for (int i = 0; i < count; i++) wick_tensor_release(flat[i]);
    if (tensors)
        for (int i = 0; i < count; i++) wick_tensor_release(tensors[i]);
    free(sorted);
    free(offsets);
    free(numels);
    free(dtypes);
    free(flat);
    free(tensors);
    return st;
}

wick_status wick_load_flat(const char *path, int *n, char ***names, wick_tensor ***tensors) {
    if (!path || !n || !names || !tensors) return wick_fail(WICK_ERR_ARGUMENT, "wick_load_flat: NULL argument");
    *n = 0, *names = NULL, *tensors = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return wick_fail(WICK_ERR_IO, "wick_load_flat: cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    unsigned char head[8];
    ssize_t got = 0;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return wick_fail(WICK_ERR_IO, "wick_load_flat: cannot stat %s: %s", path, strerror(errno));
    }
    int64_t size = (int64_t)sb.st_size;
    if (size >= 8) got = pread(fd, head, 8, 0);
    if (size < 8 || got != 8) {
        close(fd);
        return wick_fail(WICK_ERR_IO,
                         "wick_load_flat: %s: not a safetensors file (shorter than its 8-byte header size)", path);
    }
    uint64_t hn = 0;
    for (int i = 7; i >= 0; i--) hn = hn << 8 | head[i];
    if (hn < 2 || hn > (uint64_t)(size - 8) || hn > MAX_HEADER) {
        char first = 0;
        int is_brace = size > 8 && pread(fd, &first, 1, 8) == 1 && first == '{';
        close(fd);
        if (hn > (uint64_t)(size - 8) && hn <= MAX_HEADER && is_brace)
            return wick_fail(WICK_ERR_IO, "wick_load_flat: %s: truncated: the header claims %llu bytes, the file has %lld after the size",
                             path, (unsigned long long)hn, (long long)(size - 8));
        return wick_fail(WICK_ERR_IO,
                         "wick_load_flat: %s: not a safetensors file (header size %llu does not fit a file of %lld bytes)", path,
                         (unsigned long long)hn, (long long)size);
    }
    char *text = malloc((size_t)hn + 1); /* hn <= the file's size and <= 100 MiB */
    if (!text) {
        close(fd);
        return wick_fail(WICK_ERR_OOM, "wick_load_flat: out of memory reading %s", path);
    }
    size_t have = 0;
    while (have < hn) {
        ssize_t r = pread(fd, text + have, (size_t)hn - have, (off_t)(8 + have));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        have += (size_t)r;
    }
    close(fd);
    if (have < hn) {
        free(text);
        return wick_fail(WICK_ERR_IO, "wick_load_flat: cannot read the header of %s", path);
    }
    text[hn] = '\0';
    if (text[0] != '{') {
        free(text);
        return wick_fail(WICK_ERR_IO, "wick_load_flat: %s: not a safetensors file", path);
    }
    parser p = {text, path, 0, (size_t)hn, WICK_OK};
    entry *es = NULL;
    int count = 0, cap = 0, metadata = 0;
    if (expect(&p, '{')) goto fail;
    ws(&p);
    if (p.pos < p.n && p.s[p.pos] == '}') p.pos++;
    else
        for (;;) {
            char *key = NULL;
            if (parse_string(&p, &key) || expect(&p, ':')) {
                free(key);
                goto fail;
            }
            if (strcmp(key, "__metadata__") == 0) {
                free(key);
                if (metadata++) {
                    perr(&p, "two __metadata__ objects");
                    goto fail;
                }
                ws(&p);
                if (p.pos >= p.n || p.s[p.pos] != '{') {
                    perr(&p, "__metadata__ is not an object");
                    goto fail;
                }
                if (skip_value(&p, 1)) goto fail;
            } else {
                for (int i = 0; i < count; i++)
                    if (strcmp(es[i].name, key) == 0) {
                        perr(&p, "duplicate entry '%s'", key);
                        free(key);
                        goto fail;
                    }
                if (count == cap) {
                    int ncap = cap ? cap * 2 : 16;
                    entry *ne = realloc(es, (size_t)ncap * sizeof *ne);
                    if (!ne) {
                        free(key);
                        p.st = wick_fail(WICK_ERR_OOM, "wick_load_flat: out of memory reading %s", path);
                        goto fail;
                    }
                    es = ne, cap = ncap;
                }
                memset(&es[count], 0, sizeof es[count]);
                es[count].name = key;
                count++;
                if (parse_entry(&p, &es[count - 1])) goto fail;
            }
            ws(&p);
            if (p.pos < p.n && p.s[p.pos] == ',') {
                p.pos++;
                continue;
            }
            if (expect(&p, '}')) goto fail;
            break;
        }
    ws(&p);
    if (p.pos != p.n) {
        perr(&p, "trailing characters after the header object");
        goto fail;
    }
    free(text);
    text = NULL;
    wick_tensor **ts = NULL;
    wick_status st = load_entries(path, es, count, (int64_t)(8 + hn), size - 8 - (int64_t)hn, &ts);
    if (st) {
        for (int i = 0; i < count; i++) free(es[i].name);
        free(es);
        return st;
    }
    char **ns = malloc((count > 0 ? (size_t)count : 1) * sizeof *ns);
    if (!ns) {
        wick_free_flat(count, NULL, ts);
        for (int i = 0; i < count; i++) free(es[i].name);
        free(es);
        return wick_fail(WICK_ERR_OOM, "wick_load_flat: out of memory reading %s", path);
    }
    for (int i = 0; i < count; i++) ns[i] = es[i].name;
    free(es);
    *n = count, *names = ns, *tensors = ts;
    return WICK_OK;
fail:
    free(text);
    for (int i = 0; i < count; i++) free(es[i].name);
    free(es);
    return p.st ? p.st : wick_fail(WICK_ERR_IO, "wick_load_flat: %s: corrupt header", path);
}
