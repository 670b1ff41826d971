/* The checkpoint engine (src/io/ckpt.h, ckpt*.c, json.c) from C, without Lua:
 * its JSON parser, a tree of every kind of value written and read back,
 * plain safetensors, checksums, the unaligned fallback, hostile headers and
 * trees (an error naming the file, never a crash: CI runs it under ASan), and
 * every truncation and single byte flip of a small checkpoint. */
#define _GNU_SOURCE /* mkdtemp */
#include "../src/io/ckpt.h"
#include "../src/io/json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static char dir[256];

static const char *tmp(const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static int has(const char *text) { return strstr(wick_last_error(), text) != NULL; }

static void write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) perror(path);
    if (f) fclose(f);
}

static char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)size + 1);
    *n = fread(p, 1, (size_t)size, f);
    fclose(f);
    return p;
}

/* ---- the JSON parser ---- */

static void *plain_alloc(void *ctx, size_t size) {
    wk_ckpt *c = ctx;
    return wk_ckpt_alloc(c, size);
}

static int parses(const char *text, int depth, wk_json **out, wk_json_error *err, wk_ckpt *c) {
    return wk_json_parse(text, strlen(text), depth, plain_alloc, c, out, err) == 0;
}

static void test_json(void) {
    wk_ckpt *c = wk_ckpt_new(WK_CKPT_WICK);
    wk_json *v;
    wk_json_error err;
    CHECK(parses(" {\"a\": [1, -2.5e3, true, false, null, \"x\\u00e9\\ud83d\\ude00\\n\"], \"a\": {}} ", 8, &v, &err, c));
    CHECK(v->type == WK_JSON_OBJECT && v->as.list.n == 2);
    const wk_json *a = wk_json_get(v, "a"); /* the last of a repeated key */
    CHECK(a && a->type == WK_JSON_OBJECT && a->as.list.n == 0);
    const wk_json *arr = v->as.list.items[0];
    CHECK(arr->type == WK_JSON_ARRAY && arr->as.list.n == 6);
    CHECK(wk_json_number(arr->as.list.items[0]) == 1 && wk_json_number(arr->as.list.items[1]) == -2500);
    CHECK(arr->as.list.items[2]->type == WK_JSON_BOOL && arr->as.list.items[2]->as.boolean);
    CHECK(arr->as.list.items[3]->type == WK_JSON_BOOL && !arr->as.list.items[3]->as.boolean);
    CHECK(arr->as.list.items[4]->type == WK_JSON_NULL);
    const wk_json *s = arr->as.list.items[5];
    CHECK(s->type == WK_JSON_STRING && s->as.string.len == 8 && memcmp(s->as.string.s, "x\xc3\xa9\xf0\x9f\x98\x80\n", 8) == 0);
    CHECK(parses("\"a\\u0000b\"", 1, &v, &err, c) && v->as.string.len == 3 && v->as.string.s[1] == '\0');
    /* refusals, each with what and where */
    static const struct {
        const char *text, *what;
        size_t pos;
    } bad[] = {
        {"[1, 2", "expected ']'", 5},
        {"{\"a\" 1}", "expected ':'", 5},
        {"{\"a\":1,}", "expected '\"'", 7},
        {"[01]", "leading zero", 1},
        {"[1.]", "a bad number", 3},
        {"[1e]", "a bad number", 3},
        {"[-]", "an unexpected character", 1},
        {"\"\\ud800\"", "a lone high surrogate", 7},
        {"\"\\udc00\"", "a lone low surrogate", 7},
        {"\"\\x\"", "a bad escape", 2},
        {"\"\xc0\x80\"", "invalid UTF-8", 1},
        {"\"\xed\xa0\x80\"", "invalid UTF-8", 1},
        {"\"a\x01\"", "a control character", 2},
        {"\"abc", "an unterminated string", 4},
        {"[[[[[[[[[[]]]]]]]]]]", "nesting deeper than 8 levels", 9},
        {"{} x", "trailing characters", 3},
        {"", "a missing value", 0},
        {"tru", "an unexpected character", 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int ok = parses(bad[i].text, 8, &v, &err, c);
        CHECK(!ok && strstr(err.what, bad[i].what) && err.pos == bad[i].pos);
        if (ok || !strstr(err.what, bad[i].what) || err.pos != bad[i].pos)
            fprintf(stderr, "  json %zu: '%s': got '%s' at %zu\n", i, bad[i].text, err.what, err.pos);
    }
    double d;
    CHECK(wk_json_strtod("1e308", 5, &d) && d == 1e308);
    CHECK(!wk_json_strtod("1x", 2, &d));
    wk_ckpt_free(c);
}

/* ---- a tree of every kind, written and read back ---- */

static wick_options opts(wick_dtype dtype) {
    wick_options o = wick_default_options();
    o.dtype = dtype;
    return o;
}

static wk_ckpt_value *str(wk_ckpt *c, const char *s) { return wk_ckpt_string(c, s, strlen(s)); }

static const wk_ckpt_value *field(const wk_ckpt_value *t, const char *key) {
    if (!t || t->kind != WK_CKPT_TABLE) return NULL;
    for (int i = 0; i < t->as.table.n; i++) {
        const wk_ckpt_value *k = t->as.table.pairs[i].key;
        if (k->kind == WK_CKPT_STRING && strcmp(k->as.string.bytes, key) == 0) return t->as.table.pairs[i].value;
    }
    return NULL;
}

static double at(const wick_tensor *t, int64_t i) {
    int64_t idx[WICK_MAX_DIMS] = {0};
    int nd = wick_tensor_ndim(t);
    for (int d = nd - 1; d >= 0; d--) idx[d] = i % wick_tensor_sizes(t)[d], i /= wick_tensor_sizes(t)[d];
    int64_t off = 0;
    for (int d = 0; d < nd; d++) off += idx[d] * wick_tensor_strides(t)[d];
    return wick_value_as_double((const char *)wick_tensor_data(t) + off * (int64_t)wick_dtype_size(wick_tensor_dtype(t)),
                                wick_tensor_dtype(t));
}

/* A storage of n elements 0, 1, 2, ... of dtype (bools: all true). */
static int add_storage(wk_ckpt *c, const char *name, const char *device, wick_dtype dtype, int64_t n) {
    wick_tensor *t = NULL;
    CHECK(wick_arange(&t, 0, (double)n, 1, opts(WICK_FLOAT64)) == WICK_OK);
    wick_tensor *u = NULL;
    wick_options o = opts(dtype);
    o.device = wick_cpu();
    if (dtype == WICK_BOOL)
        CHECK(wick_full(&u, 1, &n, 1, o) == WICK_OK);
    else
        CHECK(wick_to(&u, t, o) == WICK_OK);
    wick_tensor_release(t);
    int k = wk_ckpt_add_storage(c, name, device, dtype, n);
    CHECK(k >= 0);
    c->storages[k].data = u;
    return k;
}

static void test_round_trip(void) {
    wk_ckpt *c = wk_ckpt_new(WK_CKPT_WICK);
    c->root = wk_ckpt_table(c);
    int f32 = add_storage(c, "s1", "cpu", WICK_FLOAT32, 12);
    int i64 = add_storage(c, "s2", "cuda:1", WICK_INT64, 5);
    int u8 = add_storage(c, "s3", "cpu", WICK_UINT8, 3);
    int b = add_storage(c, "s4", "cpu", WICK_BOOL, 4);
    int h = add_storage(c, "s5", "cpu", WICK_FLOAT16, 3);
    int64_t s34[2] = {3, 4}, st34[2] = {4, 1}, s43[2] = {4, 3}, st43[2] = {1, 4}, s2[1] = {2}, st2[1] = {2}, zero[1] = {0};
    wk_ckpt_value *list = wk_ckpt_table(c);
    for (int i = 1; i <= 3; i++) wk_ckpt_table_add(c, list, wk_ckpt_number(c, i), wk_ckpt_number(c, i * 10));
    const char nul[] = "a\0b\x01\x7f\"\\\n\xc3\xa9";
    wk_ckpt_table_add(c, c->root, str(c, "w"), wk_ckpt_tensor(c, f32, WICK_FLOAT32, 2, s34, st34, 0));
    wk_ckpt_table_add(c, c->root, str(c, "wt"), wk_ckpt_tensor(c, f32, WICK_FLOAT32, 2, s43, st43, 0));
    wk_ckpt_table_add(c, c->root, str(c, "step"), wk_ckpt_tensor(c, i64, WICK_INT64, 1, s2, st2, 1));
    wk_ckpt_table_add(c, c->root, str(c, "scalar"), wk_ckpt_tensor(c, u8, WICK_UINT8, 0, NULL, NULL, 2));
    wk_ckpt_table_add(c, c->root, str(c, "empty"), wk_ckpt_tensor(c, b, WICK_BOOL, 1, zero, st2, 0));
    wk_ckpt_table_add(c, c->root, str(c, "half"), wk_ckpt_tensor(c, h, WICK_FLOAT16, 1, (int64_t[]){3}, (int64_t[]){1}, 0));
    wk_ckpt_table_add(c, c->root, str(c, "list"), list);
    wk_ckpt_table_add(c, c->root, str(c, "nan"), wk_ckpt_number(c, NAN));
    wk_ckpt_table_add(c, c->root, str(c, "inf"), wk_ckpt_number(c, -INFINITY));
    wk_ckpt_table_add(c, c->root, str(c, "tiny"), wk_ckpt_number(c, 5e-324));
    wk_ckpt_table_add(c, c->root, str(c, "third"), wk_ckpt_number(c, 1.0 / 3));
    wk_ckpt_table_add(c, c->root, str(c, "bytes"), wk_ckpt_string(c, nul, sizeof nul - 1));
    wk_ckpt_table_add(c, c->root, str(c, "yes"), wk_ckpt_boolean(c, 1));
    wk_ckpt_table_add(c, c->root, wk_ckpt_number(c, 2.5), wk_ckpt_boolean(c, 0));
    wk_ckpt_table_add(c, c->root, str(c, "gone"), wk_ckpt_nil(c)); /* a NIL value: no entry */
    const char *path = tmp("tree.wick");
    CHECK(wk_ckpt_write(path, c, "test", 1) == WICK_OK);
    wk_ckpt_free(c);

    wk_ckpt_read_options o = {"test", -1, 0};
    wk_ckpt *r = NULL;
    CHECK(wk_ckpt_read(&r, path, &o) == WICK_OK);
    if (!r) return;
    CHECK(r->format == WK_CKPT_WICK && r->nstorages == 5);
    const wk_ckpt_value *w = field(r->root, "w"), *wt = field(r->root, "wt"), *step = field(r->root, "step");
    CHECK(w && w->kind == WK_CKPT_TENSOR && wt && wt->kind == WK_CKPT_TENSOR && w->as.tensor.storage == wt->as.tensor.storage);
    if (w && wt && w->as.tensor.view && wt->as.tensor.view) {
        CHECK(at(w->as.tensor.view, 5) == 5 && at(wt->as.tensor.view, 1) == 4); /* wt is w transposed */
        CHECK(wick_tensor_storage_id(w->as.tensor.view) == wick_tensor_storage_id(wt->as.tensor.view));
    }
    CHECK(step && step->as.tensor.view && at(step->as.tensor.view, 0) == 1 && at(step->as.tensor.view, 1) == 3);
    if (step) CHECK(strcmp(r->storages[step->as.tensor.storage].device, "cuda:1") == 0);
    const wk_ckpt_value *sc = field(r->root, "scalar"), *e = field(r->root, "empty"), *hv = field(r->root, "half");
    CHECK(sc && sc->as.tensor.view && wick_tensor_ndim(sc->as.tensor.view) == 0 && at(sc->as.tensor.view, 0) == 2);
    CHECK(e && e->as.tensor.view && wick_tensor_numel(e->as.tensor.view) == 0);
    CHECK(hv && hv->as.tensor.view && at(hv->as.tensor.view, 2) == 2);
    const wk_ckpt_value *l = field(r->root, "list");
    CHECK(l && l->kind == WK_CKPT_TABLE && l->as.table.n == 3);
    if (l && l->as.table.n == 3)
        CHECK(l->as.table.pairs[0].key->as.number == 1 && l->as.table.pairs[2].value->as.number == 30);
    const wk_ckpt_value *x;
    CHECK((x = field(r->root, "nan")) && isnan(x->as.number));
    CHECK((x = field(r->root, "inf")) && x->as.number == -INFINITY);
    CHECK((x = field(r->root, "tiny")) && x->as.number == 5e-324);
    CHECK((x = field(r->root, "third")) && x->as.number == 1.0 / 3);
    CHECK((x = field(r->root, "bytes")) && x->as.string.len == sizeof nul - 1 && memcmp(x->as.string.bytes, nul, sizeof nul - 1) == 0);
    CHECK((x = field(r->root, "yes")) && x->kind == WK_CKPT_BOOLEAN && x->as.boolean);
    CHECK(field(r->root, "gone") == NULL);
    for (int i = 0; i < r->nstorages; i++) CHECK(r->storages[i].crc_kind == WK_CKPT_CRC32C);
    wk_ckpt_free(r);

    /* every single byte flip and every truncation: an error naming the file, or a load */
    size_t n;
    char *bytes = read_file(path, &n);
    int loads = 0, errors = 0;
    for (size_t i = 0; bytes && i < n; i++) {
        bytes[i] ^= 0x5a;
        write_file(tmp("flip.wick"), bytes, n);
        bytes[i] ^= 0x5a;
        r = NULL;
        wick_status st = wk_ckpt_read(&r, tmp("flip.wick"), &o);
        if (st) errors += strstr(wick_last_error(), tmp("flip.wick")) != NULL;
        else loads++;
        wk_ckpt_free(r);
    }
    CHECK(errors + loads == (int)n);
    CHECK(errors > (int)n / 2); /* the data carries checksums, the header is checked */
    for (size_t cut = 0; bytes && cut < n; cut += (cut < 64 ? 1 : 7)) {
        write_file(tmp("cut.wick"), bytes, cut);
        r = NULL;
        CHECK(wk_ckpt_read(&r, tmp("cut.wick"), &o) != WICK_OK && has(tmp("cut.wick")));
        wk_ckpt_free(r);
    }
    free(bytes);
    /* (path points into tmp's buffer: used up above) */
    wk_ckpt *nil = wk_ckpt_new(WK_CKPT_WICK);
    nil->root = wk_ckpt_nil(nil);
    CHECK(wk_ckpt_write(tmp("nil.wick"), nil, "test", 1) == WICK_ERR_ARGUMENT && has("cannot save a nil"));
    wk_ckpt_free(nil);
}

/* A checkpoint whose header (tree included) is hand-written, data after it. */
static const char *crafted(const char *name, const char *header, const void *data, size_t n) {
    size_t hl = strlen(header), padded = (hl + 7) / 8 * 8;
    char *p = calloc(1, 8 + padded + n + 1);
    for (int i = 0; i < 8; i++) p[i] = (char)((uint64_t)padded >> (8 * i) & 0xff);
    memcpy(p + 8, header, hl);
    memset(p + 8 + hl, ' ', padded - hl);
    if (n) memcpy(p + 8 + padded, data, n);
    write_file(tmp(name), p, 8 + padded + n);
    free(p);
    return tmp(name);
}

static void expect(const char *path, int verify, const char *what, int line) {
    wk_ckpt_read_options o = {"test", verify, 0};
    wk_ckpt *r = NULL;
    wick_status st = wk_ckpt_read(&r, path, &o);
    checks++;
    if (st == WICK_OK || !has(path) || !has(what)) {
        failures++;
        fprintf(stderr, "%s:%d: expected an error with '%s', got %d: %s\n", __FILE__, line, what, st, wick_last_error());
    }
    wk_ckpt_free(r);
}

#define ENTRY "\"s1\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}"
#define META(tree) "{\"__metadata__\":{\"format\":\"wick-checkpoint-1\",\"wick\":\"" tree "\"}," ENTRY "}"
#define DEV "\\\"devices\\\":{\\\"s1\\\":\\\"cpu\\\"}"
#define T(view) "{" DEV ",\\\"tree\\\":{\\\"tensor\\\":" view "}}"

static void test_hostile(void) {
    const float four[4] = {1, 2, 3, 4};
    const char *ok = crafted("ok.wick", META(T("{\\\"storage\\\":\\\"s1\\\",\\\"dtype\\\":\\\"float32\\\",\\\"shape\\\":[2,2],\\\"strides\\\":[2,1],\\\"offset\\\":0}")), four, 16);
    wk_ckpt_read_options o = {"test", -1, 0};
    wk_ckpt *r = NULL;
    CHECK(wk_ckpt_read(&r, ok, &o) == WICK_OK && r && r->root->kind == WK_CKPT_TENSOR && at(r->root->as.tensor.view, 3) == 4);
    wk_ckpt_free(r);
    o.verify = 1;
    CHECK(wk_ckpt_read(&r, ok, &o) != WICK_OK && has("saved without a checksum"));
#define BAD(view, what) expect(crafted("bad.wick", META(T(view)), four, 16), -1, what, __LINE__)
    BAD("{\\\"storage\\\":\\\"s9\\\",\\\"dtype\\\":\\\"float32\\\",\\\"shape\\\":[],\\\"strides\\\":[],\\\"offset\\\":0}",
        "corrupt tree: a tensor of an unknown storage");
    BAD("{\\\"storage\\\":\\\"s1\\\",\\\"dtype\\\":\\\"int64\\\",\\\"shape\\\":[],\\\"strides\\\":[],\\\"offset\\\":0}",
        "whose dtype differs");
    BAD("{\\\"storage\\\":\\\"s1\\\",\\\"dtype\\\":\\\"float32\\\",\\\"shape\\\":[2],\\\"strides\\\":[],\\\"offset\\\":0}",
        "a bad shape, strides or offset");
    BAD("{\\\"storage\\\":\\\"s1\\\",\\\"dtype\\\":\\\"float32\\\",\\\"shape\\\":[2.5],\\\"strides\\\":[1],\\\"offset\\\":0}",
        "a bad shape, strides or offset");
    BAD("{\\\"storage\\\":\\\"s1\\\",\\\"dtype\\\":\\\"float32\\\",\\\"shape\\\":[3],\\\"strides\\\":[1],\\\"offset\\\":2}",
        "reaches element 4, outside its storage of 4 elements");
    BAD("{\\\"storage\\\":\\\"s1\\\",\\\"dtype\\\":\\\"float32\\\",\\\"shape\\\":[4294967296,4294967296],\\\"strides\\\":[1,1],\\\"offset\\\":0}",
        "invalid shape");
    BAD("{\\\"storage\\\":\\\"s1\\\",\\\"dtype\\\":\\\"float32\\\",\\\"shape\\\":[2049,2049],\\\"strides\\\":[3377699720527872,3377699720527872],\\\"offset\\\":0}",
        "reaches");
#define BADT(tree, what) expect(crafted("bad.wick", META(tree), four, 16), -1, what, __LINE__)
    BADT("{" DEV ",\\\"tree\\\":{\\\"number\\\":\\\"1x\\\"}}", "corrupt tree: a bad number");
    BADT("{" DEV ",\\\"tree\\\":{\\\"number\\\":1}}", "corrupt tree: a bad number");
    BADT("{" DEV ",\\\"tree\\\":{\\\"string\\\":1}}", "corrupt tree: a bad string");
    BADT("{" DEV ",\\\"tree\\\":{\\\"what\\\":1}}", "an unknown kind of value");
    BADT("{" DEV ",\\\"tree\\\":[]}", "a node that is not an object");
    BADT("{" DEV ",\\\"tree\\\":{\\\"table\\\":[[{\\\"boolean\\\":true},{\\\"boolean\\\":true}]]}}",
         "a table key that is not a string or number");
    BADT("{" DEV ",\\\"tree\\\":{\\\"table\\\":[[{\\\"number\\\":\\\"nan\\\"},{\\\"boolean\\\":true}]]}}",
         "a table key that is not a string or number");
    BADT("{" DEV ",\\\"tree\\\":{\\\"table\\\":[1]}}", "a bad table entry");
    BADT("{" DEV ",\\\"tree\\\":{\\\"table\\\":[[{\\\"number\\\":\\\"1\\\"}]]}}", "a node that is not an object");
    BADT("{\\\"tree\\\":{\\\"boolean\\\":true}}", "corrupt metadata: missing tree or devices");
    BADT("{\\\"devices\\\":{\\\"s1\\\":\\\"gpu\\\"},\\\"tree\\\":{\\\"boolean\\\":true}}", "storage 's1' has no valid device");
    BADT("{" DEV ",\\\"crc32c\\\":[],\\\"tree\\\":{\\\"boolean\\\":true}}", "corrupt metadata: crc32c is not an object");
    BADT("{" DEV ",\\\"crc32c\\\":{\\\"s1\\\":\\\"xyz\\\"},\\\"tree\\\":{\\\"boolean\\\":true}}", "storage 's1' has a bad crc32c");
    BADT("{" DEV ",\\\"crc32c\\\":{\\\"s1\\\":\\\"00000000\\\"},\\\"tree\\\":{\\\"boolean\\\":true}}",
         "checksum mismatch in storage 's1' (crc32c expected 00000000, got ");
    BADT("{" DEV ",\\\"crc32\\\":{\\\"s1\\\":\\\"00000000\\\"},\\\"tree\\\":{\\\"boolean\\\":true}}", "crc32 expected 00000000");
    BADT("{" DEV ",\\\"tree\\\":{\\\"boolean\\\":true}", "corrupt metadata: malformed JSON: expected '}'");
    /* a zlib CRC-32 of the right value loads; verify = 0 skips a wrong one */
    char good[600];
    snprintf(good, sizeof good, META("{" DEV ",\\\"crc32\\\":{\\\"s1\\\":\\\"%08x\\\"},\\\"tree\\\":{\\\"boolean\\\":true}}"),
             (unsigned)wick_crc32(0, four, 16));
    r = NULL;
    o.verify = -1;
    CHECK(wk_ckpt_read(&r, crafted("crc32.wick", good, four, 16), &o) == WICK_OK && r && r->root->as.boolean == 1);
    wk_ckpt_free(r);
    o.verify = 0;
    r = NULL;
    CHECK(wk_ckpt_read(&r, crafted("skip.wick", META("{" DEV ",\\\"crc32c\\\":{\\\"s1\\\":\\\"00000000\\\"},\\\"tree\\\":{\\\"boolean\\\":true}}"), four, 16), &o) == WICK_OK);
    wk_ckpt_free(r);
    /* deep trees: 200 levels of tables at most */
    char *deep = malloc(40000), *p = deep;
    p += sprintf(p, "{\"__metadata__\":{\"format\":\"wick-checkpoint-1\",\"wick\":\"{" DEV ",\\\"tree\\\":");
    for (int i = 0; i < 140; i++) p += sprintf(p, "{\\\"table\\\":[[{\\\"number\\\":\\\"1\\\"},");
    p += sprintf(p, "{\\\"boolean\\\":true}");
    for (int i = 0; i < 140; i++) p += sprintf(p, "]]}");
    p += sprintf(p, "}\"}," ENTRY "}");
    expect(crafted("deep.wick", deep, four, 16), -1, "nesting deeper than 400 levels", __LINE__);
    free(deep);
    /* the container */
    expect(crafted("fmt.wick", "{\"__metadata__\":{\"format\":\"wick-checkpoint-9\",\"wick\":\"{}\"}," ENTRY "}", four, 16), -1,
           "unknown checkpoint format 'wick-checkpoint-9' (this wick reads wick-checkpoint-1)", __LINE__);
    expect(crafted("plain.safetensors", "{" ENTRY "}", four, 16), 1, "verify: a plain safetensors file carries no checksums",
           __LINE__);
    expect(crafted("unk.wick", "{\"s1\":{\"dtype\":\"X9\",\"shape\":[4],\"data_offsets\":[0,16]}}", four, 16), -1,
           "lacks dtype, shape or data_offsets", __LINE__);
    expect(crafted("size.wick", "{\"s1\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,16]}}", four, 16), -1,
           "16 bytes for 3 elements", __LINE__);
    expect(crafted("gap.wick", "{" ENTRY "}", four, 12), -1, "truncated: 's1' ends at byte 16 of the data, the file holds 12", __LINE__);
    expect(tmp("nothing.wick"), -1, "cannot open", __LINE__);
}

/* Plain safetensors through the engine: a root table name -> tensor; an
 * unaligned writer's entries are read instead of mapped. */
static void test_plain(void) {
    unsigned char data[5] = {7, 0, 0, 0x80, 0x3f};
    const char *path = crafted("plain.safetensors",
                               "{\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                               "\"w\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[1,5]}}",
                               data, 5);
    wk_ckpt_read_options o = {"test", -1, 0};
    wk_ckpt *r = NULL;
    CHECK(wk_ckpt_read(&r, path, &o) == WICK_OK && r);
    if (!r) return;
    CHECK(r->format == WK_CKPT_SAFETENSORS && r->root->as.table.n == 2 && r->nstorages == 2);
    const wk_ckpt_value *w = field(r->root, "w"), *b = field(r->root, "b");
    CHECK(b && b->as.tensor.view && at(b->as.tensor.view, 0) == 7);
    CHECK(w && w->as.tensor.view && wick_tensor_ndim(w->as.tensor.view) == 2 && at(w->as.tensor.view, 0) == 1.0);
    CHECK(strcmp(r->storages[0].device, "cpu") == 0 && r->storages[0].crc_kind == WK_CKPT_CRC_NONE);
    /* written back as plain safetensors (sorted keys), read again */
    r->format = WK_CKPT_SAFETENSORS;
    CHECK(wk_ckpt_write(tmp("again.safetensors"), r, "test", 1) == WICK_OK);
    wk_ckpt_free(r);
    r = NULL;
    CHECK(wk_ckpt_read(&r, tmp("again.safetensors"), &o) == WICK_OK && r);
    if (r) {
        const wk_ckpt_value *w2 = field(r->root, "w");
        CHECK(w2 && at(w2->as.tensor.view, 0) == 1.0 && wick_tensor_ndim(w2->as.tensor.view) == 2);
        /* F32 first in the data: every entry aligned, so mapped */
        CHECK(r->storages[0].file_offset % 4 == 0 && r->storages[1].file_offset % 4 == 0);
    }
    wk_ckpt_free(r);
    size_t n;
    char *bytes = read_file(tmp("again.safetensors"), &n);
    CHECK(bytes && strstr(bytes + 8, "{\"b\":{\"data_offsets\":[4,5],\"dtype\":\"U8\",\"shape\":[1]},"
                                     "\"w\":{\"data_offsets\":[0,4],\"dtype\":\"F32\",\"shape\":[1,1]}}") == bytes + 8);
    free(bytes);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/wick_test_ckpt_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_json();
    test_round_trip();
    test_hostile();
    test_plain();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
