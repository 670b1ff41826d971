/* Internal to wick: the one JSON parser of the checkpoint engine (src/io/json.c),
 * for safetensors headers and the wick tree inside them. Strict RFC 8259:
 * UTF-8 checked in strings (no overlong forms, surrogates or code points beyond
 * U+10FFFF; \u escapes decoded, pairs combined, lone surrogates refused),
 * nesting bounded, nothing after the value. Values live in the caller's arena. */
#ifndef WICK_IO_JSON_H
#define WICK_IO_JSON_H
#include <stddef.h>
#include <stdint.h>

typedef enum wk_json_type {
    WK_JSON_NULL = 0,
    WK_JSON_BOOL,
    WK_JSON_NUMBER,
    WK_JSON_STRING,
    WK_JSON_ARRAY,
    WK_JSON_OBJECT,
} wk_json_type;

typedef struct wk_json wk_json;
struct wk_json {
    wk_json_type type;
    size_t pos; /* 0-based byte of the text where the value starts */
    union {
        int boolean;
        struct {
            const char *text; /* the number as written (not NUL-terminated) */
            size_t len;
        } number;
        struct {
            const char *s; /* decoded, NUL-terminated (may hold NULs: len counts) */
            size_t len;
        } string;
        struct {
            wk_json **items;
            wk_json **keys; /* objects: STRING values, one per item; NULL for arrays */
            int n;
        } list;
    } as;
};

typedef void *(*wk_json_alloc)(void *ctx, size_t size); /* zeroed memory, NULL when out of memory */

typedef struct wk_json_error {
    char what[160]; /* "expected '}'", "out of memory", ... */
    size_t pos;     /* 0-based byte */
    int oom;
} wk_json_error;

/* Parses text[0, n) as one JSON value (surrounding whitespace allowed); 0 and
 * *out, or -1 and *err. */
int wk_json_parse(const char *text, size_t n, int max_depth, wk_json_alloc alloc, void *ctx, wk_json **out,
                  wk_json_error *err);

/* The value of key in an object (the last when repeated), NULL when absent or
 * obj is not an object. */
const wk_json *wk_json_get(const wk_json *obj, const char *key);

/* The number's value as a double (strtod of its text, locale-independent for
 * JSON's grammar: digits, '.', 'e'). */
double wk_json_number(const wk_json *v);
/* s[0, len) as a whole as a double (C locale); 1, or 0 when it is not one number. */
int wk_json_strtod(const char *s, size_t len, double *out);

/* v as "%.17g" in the C locale (every double round-trips); its length. */
int wk_json_format_g17(char *buf, size_t size, double v);

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 when invalid. */
size_t wk_utf8_seq(const unsigned char *p, size_t n);

#endif
