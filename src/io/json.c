/* The checkpoint engine's JSON parser (json.h): one recursive descent over the
 * text, values in the caller's arena, containers collected on a scratch stack
 * and copied out when they close. */
#define _GNU_SOURCE
#include "json.h"

#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t wk_utf8_seq(const unsigned char *p, size_t n) {
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

typedef struct {
    const char *s;
    size_t pos, n;
    int max_depth;
    wk_json_alloc alloc;
    void *ctx;
    wk_json_error *err;
    wk_json **stack; /* items (and keys) of the open containers */
    size_t top, cap;
} parser;

static int fail(parser *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err->what, sizeof p->err->what, fmt, ap);
    va_end(ap);
    p->err->pos = p->pos;
    return -1;
}

static int oom(parser *p) {
    p->err->oom = 1;
    return fail(p, "out of memory");
}

static void ws(parser *p) {
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\r' && c != '\n') break;
        p->pos++;
    }
}

static int peek(parser *p) { return p->pos < p->n ? (unsigned char)p->s[p->pos] : -1; }

static wk_json *node(parser *p, wk_json_type type, size_t pos) {
    wk_json *v = p->alloc(p->ctx, sizeof *v);
    if (v) v->type = type, v->pos = pos;
    return v;
}

static int push(parser *p, wk_json *v) {
    if (p->top == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        wk_json **s = realloc(p->stack, cap * sizeof *s);
        if (!s) return oom(p);
        p->stack = s, p->cap = cap;
    }
    p->stack[p->top++] = v;
    return 0;
}

static int hex4(parser *p, unsigned *out) {
    if (p->n - p->pos < 4) return fail(p, "a short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos++];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return fail(p, "a bad \\u escape");
    }
    *out = v;
    return 0;
}

static size_t utf8_put(unsigned cp, char *d) {
    unsigned char *u = (unsigned char *)d;
    if (cp < 0x80) return u[0] = (unsigned char)cp, 1;
    if (cp < 0x800) return u[0] = (unsigned char)(0xC0 | cp >> 6), u[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return u[0] = (unsigned char)(0xE0 | cp >> 12), u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)),
               u[2] = (unsigned char)(0x80 | (cp & 0x3F)), 3;
    u[0] = (unsigned char)(0xF0 | cp >> 18), u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F)), u[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One escape after the backslash: its bytes at d, their count in *k. */
static int escape(parser *p, char *d, size_t *k) {
    if (p->pos >= p->n) return fail(p, "an unterminated string");
    char e = p->s[p->pos++];
    char simple = e == '"' ? '"' : e == '\\' ? '\\' : e == '/' ? '/' : e == 'b' ? '\b' : e == 'f' ? '\f'
                : e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : 0;
    if (simple) return d[0] = simple, *k = 1, 0;
    if (e != 'u') return p->pos--, fail(p, "a bad escape");
    unsigned cp, lo;
    if (hex4(p, &cp)) return -1;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return fail(p, "a lone low surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p->n - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') return fail(p, "a lone high surrogate");
        p->pos += 2;
        if (hex4(p, &lo)) return -1;
        if (lo < 0xDC00 || lo > 0xDFFF) return fail(p, "a lone high surrogate");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    *k = utf8_put(cp, d);
    return 0;
}

static int string_value(parser *p, wk_json **out) {
    size_t start = p->pos++;
    /* the decoded string is never longer than its source */
    size_t end = p->pos;
    while (end < p->n && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    if (end > p->n) end = p->n;
    char *d = p->alloc(p->ctx, end - p->pos + 1);
    wk_json *v = node(p, WK_JSON_STRING, start);
    if (!d || !v) return oom(p);
    size_t len = 0;
    for (;;) {
        if (p->pos >= p->n) return fail(p, "an unterminated string");
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20) return fail(p, "a control character in a string");
        if (c == '\\') {
            size_t k = 0;
            p->pos++;
            if (escape(p, d + len, &k)) return -1;
            len += k;
            continue;
        }
        if (c < 0x80) { /* the common case, byte by byte */
            d[len++] = (char)c, p->pos++;
            continue;
        }
        size_t k = wk_utf8_seq((const unsigned char *)p->s + p->pos, p->n - p->pos);
        if (!k) return fail(p, "invalid UTF-8");
        memcpy(d + len, p->s + p->pos, k);
        len += k, p->pos += k;
    }
    d[len] = '\0';
    v->as.string.s = d, v->as.string.len = len;
    *out = v;
    return 0;
}

static int number_value(parser *p, wk_json **out) {
    size_t start = p->pos;
    if (p->s[p->pos] == '-') p->pos++;
    size_t digits = p->pos;
    while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    if (p->pos == digits) return p->pos = start, fail(p, "an unexpected character");
    if (p->s[digits] == '0' && p->pos - digits > 1) return p->pos = start, fail(p, "a number with a leading zero");
    if (p->pos < p->n && p->s[p->pos] == '.') {
        size_t f = ++p->pos;
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
        if (p->pos == f) return fail(p, "a bad number");
    }
    if (p->pos < p->n && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
        p->pos++;
        if (p->pos < p->n && (p->s[p->pos] == '+' || p->s[p->pos] == '-')) p->pos++;
        size_t e = p->pos;
        while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
        if (p->pos == e) return fail(p, "a bad number");
    }
    wk_json *v = node(p, WK_JSON_NUMBER, start);
    if (!v) return oom(p);
    v->as.number.text = p->s + start, v->as.number.len = p->pos - start;
    *out = v;
    return 0;
}

static int value(parser *p, int depth, wk_json **out);

static int container(parser *p, int depth, wk_json **out) {
    char open = p->s[p->pos], close = open == '{' ? '}' : ']';
    int object = open == '{';
    wk_json *v = node(p, object ? WK_JSON_OBJECT : WK_JSON_ARRAY, p->pos);
    if (!v) return oom(p);
    p->pos++;
    size_t base = p->top;
    ws(p);
    if (peek(p) == close) p->pos++;
    else
        for (;;) {
            wk_json *item;
            if (object) {
                ws(p);
                if (peek(p) != '"') return fail(p, "expected '\"'");
                if (string_value(p, &item) || push(p, item)) return -1;
                ws(p);
                if (peek(p) != ':') return fail(p, "expected ':'");
                p->pos++;
            }
            if (value(p, depth + 1, &item) || push(p, item)) return -1;
            ws(p);
            if (peek(p) == ',') {
                p->pos++;
                continue;
            }
            if (peek(p) != close) return fail(p, "expected '%c'", close);
            p->pos++;
            break;
        }
    size_t count = p->top - base, n = object ? count / 2 : count;
    if (n > 0x7fffffff) return fail(p, "too many values");
    v->as.list.n = (int)n;
    if (n) {
        v->as.list.items = p->alloc(p->ctx, n * sizeof(wk_json *));
        if (object) v->as.list.keys = p->alloc(p->ctx, n * sizeof(wk_json *));
        if (!v->as.list.items || (object && !v->as.list.keys)) return oom(p);
        for (size_t i = 0; i < n; i++) {
            if (object) v->as.list.keys[i] = p->stack[base + 2 * i], v->as.list.items[i] = p->stack[base + 2 * i + 1];
            else v->as.list.items[i] = p->stack[base + i];
        }
    }
    p->top = base;
    *out = v;
    return 0;
}

static int value(parser *p, int depth, wk_json **out) {
    if (depth > p->max_depth) return fail(p, "nesting deeper than %d levels", p->max_depth);
    ws(p);
    int c = peek(p);
    if (c < 0) return fail(p, "a missing value");
    if (c == '"') return string_value(p, out);
    if (c == '{' || c == '[') return container(p, depth, out);
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(words[i]);
        if (p->n - p->pos >= k && memcmp(p->s + p->pos, words[i], k) == 0) {
            wk_json *v = node(p, i < 2 ? WK_JSON_BOOL : WK_JSON_NULL, p->pos);
            if (!v) return oom(p);
            v->as.boolean = i == 0;
            p->pos += k;
            *out = v;
            return 0;
        }
    }
    return number_value(p, out);
}

int wk_json_parse(const char *text, size_t n, int max_depth, wk_json_alloc alloc, void *ctx, wk_json **out,
                  wk_json_error *err) {
    parser p = {text, 0, n, max_depth, alloc, ctx, err, NULL, 0, 0};
    memset(err, 0, sizeof *err);
    int rc = value(&p, 0, out);
    if (!rc) {
        ws(&p);
        if (p.pos != p.n) rc = fail(&p, "trailing characters after the value");
    }
    free(p.stack);
    return rc;
}

const wk_json *wk_json_get(const wk_json *obj, const char *key) {
    if (!obj || obj->type != WK_JSON_OBJECT) return NULL;
    size_t len = strlen(key);
    for (int i = obj->as.list.n - 1; i >= 0; i--) {
        const wk_json *k = obj->as.list.keys[i];
        if (k->as.string.len == len && memcmp(k->as.string.s, key, len) == 0) return obj->as.list.items[i];
    }
    return NULL;
}

static locale_t c_locale;
static void make_c_locale(void) { c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0); }

int wk_json_strtod(const char *s, size_t len, double *out) {
    char buf[64];
    if (len == 0) return 0;
    char *t = len < sizeof buf ? buf : malloc(len + 1);
    if (!t) return 0;
    memcpy(t, s, len);
    t[len] = '\0';
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_c_locale);
    char *end;
    *out = c_locale ? strtod_l(t, &end, c_locale) : strtod(t, &end);
    int whole = end == t + len;
    if (t != buf) free(t);
    return whole;
}

int wk_json_format_g17(char *buf, size_t size, double v) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_c_locale);
    locale_t old = c_locale ? uselocale(c_locale) : (locale_t)0;
    int n = snprintf(buf, size, "%.17g", v);
    if (old) uselocale(old);
    return n;
}

double wk_json_number(const wk_json *v) {
    double d = 0;
    wk_json_strtod(v->as.number.text, v->as.number.len, &d);
    return d;
}
