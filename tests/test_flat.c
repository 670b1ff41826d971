/* Flat checkpoints (plain safetensors) from C: wick_save_flat / wick_load_flat.
 * Usage: test_flat SOURCE_DIR (for spec/fixtures/from_python.safetensors). */
#include "wick.h"

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

static wick_options opts(wick_dtype d) {
    wick_options o = wick_default_options();
    o.dtype = d;
    return o;
}

static double at(const wick_tensor *t, int64_t i) { /* element i of a contiguous tensor */
    return wick_value_as_double((const char *)wick_tensor_data(t) + i * (int64_t)wick_dtype_size(wick_tensor_dtype(t)),
                                wick_tensor_dtype(t));
}

static int find(int n, char **names, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return -1;
}

static int same(const wick_tensor *a, const wick_tensor *b) {
    if (wick_tensor_dtype(a) != wick_tensor_dtype(b) || wick_tensor_ndim(a) != wick_tensor_ndim(b)) return 0;
    for (int d = 0; d < wick_tensor_ndim(a); d++)
        if (wick_tensor_sizes(a)[d] != wick_tensor_sizes(b)[d]) return 0;
    wick_tensor *ca = NULL, *cb = NULL;
    if (wick_contiguous(&ca, (wick_tensor *)a) || wick_contiguous(&cb, (wick_tensor *)b)) return 0;
    int ok = 1;
    for (int64_t i = 0; i < wick_tensor_numel(ca); i++) ok &= at(ca, i) == at(cb, i);
    wick_tensor_release(ca);
    wick_tensor_release(cb);
    return ok;
}

static void test_round_trip(void) {
    enum { N = 12 };
    wick_tensor *t[N] = {0};
    const char *names[N] = {"f32", "f64", "f16", "bf16", "i64", "i32", "u8", "bool",
                            "scalar", "empty", "transposed", "quote\"back\\slash \xc3\xa9"};
    int64_t s23[2] = {2, 3}, s05[2] = {0, 5}, s34[2] = {3, 4};
    for (int d = 0; d < 8; d++) {
        CHECK(wick_arange(&t[d], 0, 6, 1, opts((wick_dtype)d)) == WICK_OK);
        wick_tensor *v = NULL;
        CHECK(wick_view(&v, t[d], 2, s23) == WICK_OK);
        wick_tensor_release(t[d]);
        t[d] = v;
    }
    CHECK(wick_full(&t[8], 0, NULL, 2.5, opts(WICK_FLOAT64)) == WICK_OK);
    CHECK(wick_empty(&t[9], 2, s05, opts(WICK_INT32)) == WICK_OK);
    wick_tensor *m = NULL;
    CHECK(wick_randn(&m, 2, s34, opts(WICK_FLOAT32)) == WICK_OK);
    CHECK(wick_transpose(&t[10], m, 0, 1) == WICK_OK);
    CHECK(!wick_tensor_is_contiguous(t[10]));
    wick_tensor *n1 = NULL;
    CHECK(wick_narrow(&n1, m, 0, 1, 1) == WICK_OK); /* contiguous, but a part of its storage */
    t[11] = n1;
    CHECK(wick_save_flat(tmp("all.safetensors"), N, names, (const wick_tensor *const *)t) == WICK_OK);
    int n = 0;
    char **ln = NULL;
    wick_tensor **lt = NULL;
    CHECK(wick_load_flat(tmp("all.safetensors"), &n, &ln, &lt) == WICK_OK);
    CHECK(n == N);
    for (int i = 0; i < N && n == N; i++) {
        int j = find(n, ln, names[i]);
        CHECK(j >= 0);
        if (j < 0) continue;
        CHECK(same(t[i], lt[j]));
        CHECK(wick_device_equal(wick_tensor_device(lt[j]), wick_cpu()));
        /* every entry is aligned in the file */
        CHECK((uintptr_t)wick_tensor_data(lt[j]) % wick_dtype_size(wick_tensor_dtype(lt[j])) == 0);
    }
    CHECK(n == N && wick_tensor_ndim(lt[find(n, ln, "scalar")]) == 0);
    /* a loaded tensor is writable and private */
    if (n == N) CHECK(wick_fill_(lt[find(n, ln, "f32")], 7) == WICK_OK);
    wick_free_flat(n, ln, lt);
    CHECK(wick_load_flat(tmp("all.safetensors"), &n, &ln, &lt) == WICK_OK);
    if (n == N) CHECK(at(lt[find(n, ln, "f32")], 1) == 1);
    wick_free_flat(n, ln, lt);
    /* empty table */
    CHECK(wick_save_flat(tmp("none.safetensors"), 0, NULL, NULL) == WICK_OK);
    CHECK(wick_load_flat(tmp("none.safetensors"), &n, &ln, &lt) == WICK_OK && n == 0);
    wick_free_flat(n, ln, lt);
    /* bad names */
    const char *dup[2] = {"a", "a"}, *meta[1] = {"__metadata__"}, *ctl[1] = {"a\nb"}, *bad[1] = {"\xff"};
    const wick_tensor *two[2] = {t[0], t[1]};
    CHECK(wick_save_flat(tmp("x"), 2, dup, two) == WICK_ERR_ARGUMENT && strstr(wick_last_error(), "duplicate"));
    CHECK(wick_save_flat(tmp("x"), 1, meta, two) == WICK_ERR_ARGUMENT && strstr(wick_last_error(), "reserved"));
    CHECK(wick_save_flat(tmp("x"), 1, ctl, two) == WICK_ERR_ARGUMENT && strstr(wick_last_error(), "control"));
    CHECK(wick_save_flat(tmp("x"), 1, bad, two) == WICK_ERR_ARGUMENT && strstr(wick_last_error(), "UTF-8"));
    CHECK(access(tmp("x"), F_OK) != 0);
    for (int i = 0; i < N; i++) wick_tensor_release(t[i]);
    wick_tensor_release(m);
}

static void test_known_bytes(void) {
    wick_tensor *a = NULL, *b = NULL;
    int64_t s2[1] = {2};
    CHECK(wick_full(&a, 1, s2, 1, opts(WICK_UINT8)) == WICK_OK);
    CHECK(wick_full(&b, 0, NULL, 1, opts(WICK_FLOAT32)) == WICK_OK);
    const char *names[2] = {"u", "f"};
    const wick_tensor *ts[2] = {a, b};
    CHECK(wick_save_flat(tmp("known.safetensors"), 2, names, ts) == WICK_OK);
    const char json[] = "{\"f\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
                        "\"u\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]}}";
    size_t jl = strlen(json), padded = (jl + 7) / 8 * 8;
    unsigned char want[256];
    memset(want, 0, 8);
    want[0] = (unsigned char)padded;
    memcpy(want + 8, json, jl);
    memset(want + 8 + jl, ' ', padded - jl);
    const unsigned char data[6] = {0, 0, 0x80, 0x3f, 1, 1};
    memcpy(want + 8 + padded, data, 6);
    unsigned char got[256];
    FILE *f = fopen(tmp("known.safetensors"), "rb");
    size_t gl = f ? fread(got, 1, sizeof got, f) : 0;
    if (f) fclose(f);
    CHECK(gl == 8 + padded + 6 && memcmp(got, want, gl) == 0);
    wick_tensor_release(a);
    wick_tensor_release(b);
}

static void test_python_file(const char *src) {
    char path[512];
    snprintf(path, sizeof path, "%s/spec/fixtures/from_python.safetensors", src);
    int n = 0;
    char **ln = NULL;
    wick_tensor **lt = NULL;
    CHECK(wick_load_flat(path, &n, &ln, &lt) == WICK_OK);
    CHECK(n == 4);
    if (n != 4) return;
    int w = find(n, ln, "weight"), ids = find(n, ln, "ids"), half = find(n, ln, "half"), mask = find(n, ln, "mask");
    CHECK(w >= 0 && ids >= 0 && half >= 0 && mask >= 0);
    if (w < 0 || ids < 0 || half < 0 || mask < 0) return;
    CHECK(wick_tensor_dtype(lt[w]) == WICK_FLOAT32 && wick_tensor_ndim(lt[w]) == 2 && wick_tensor_sizes(lt[w])[0] == 2 &&
          wick_tensor_sizes(lt[w])[1] == 3);
    for (int i = 0; i < 6; i++) CHECK(at(lt[w], i) == i);
    CHECK(wick_tensor_dtype(lt[ids]) == WICK_INT64 && at(lt[ids], 0) == 1 && at(lt[ids], 1) == -2 && at(lt[ids], 2) == 3);
    CHECK(wick_tensor_dtype(lt[half]) == WICK_FLOAT16 && at(lt[half], 0) == 0.5 && at(lt[half], 1) == -1);
    CHECK(wick_tensor_dtype(lt[mask]) == WICK_BOOL && at(lt[mask], 0) == 1 && at(lt[mask], 1) == 0 &&
          at(lt[mask], 2) == 1);
    wick_free_flat(n, ln, lt);
}

/* A file of an 8-byte size (claimed, or the JSON's length when claim < 0), the
 * JSON, then `data` bytes of data. */
static const char *hostile(const char *json, long long claim, size_t data) {
    static int k = 0;
    static char path[512];
    snprintf(path, sizeof path, "%s/hostile%d.safetensors", dir, k++);
    FILE *f = fopen(path, "wb");
    unsigned long long len = claim < 0 ? strlen(json) : (unsigned long long)claim;
    for (int i = 0; i < 8; i++) fputc((int)(len >> (8 * i) & 0xFF), f);
    fwrite(json, 1, strlen(json), f);
    for (size_t i = 0; i < data; i++) fputc(i & 0xFF, f);
    fclose(f);
    return path;
}

static void expect_error(const char *path, const char *what, int line) {
    int n = 7;
    char **ln = (char **)1;
    wick_tensor **lt = (wick_tensor **)1;
    wick_status st = wick_load_flat(path, &n, &ln, &lt);
    checks++;
    if (st != WICK_ERR_IO || !strstr(wick_last_error(), path) || !strstr(wick_last_error(), what) || n != 0 || ln || lt) {
        failures++;
        fprintf(stderr, "%s:%d: expected an error with '%s', got %d: %s\n", __FILE__, line, what, st, wick_last_error());
        if (st == WICK_OK) wick_free_flat(n, ln, lt);
    }
}
#define BAD(json, claim, data, what) expect_error(hostile(json, claim, data), what, __LINE__)

static void test_hostile(void) {
    char deep[400] = "{\"__metadata__\":{\"k\":";
    for (int i = 0; i < 100; i++) strcat(deep, "[");
    char big[200];
    FILE *f = fopen(tmp("short.safetensors"), "wb");
    fwrite("\x10\0\0", 1, 3, f);
    fclose(f);
    expect_error(tmp("short.safetensors"), "shorter than", __LINE__);
    expect_error(tmp("missing.safetensors"), "cannot open", __LINE__);
    const char *ok = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    BAD(ok, 4000, 0, "truncated: the header claims 4000");
    BAD(ok, 1LL << 40, 8, "does not fit");
    BAD(ok, 0, 8, "does not fit");
    BAD(ok, -1, 4, "truncated: 'a' ends");
    BAD(ok, -1, 12, "4 unexpected bytes");
    BAD("[1, 2]", -1, 0, "not a safetensors file");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", -1, 8, "trailing");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", -1, 8, "expected '}'");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],}}", -1, 8, "corrupt header");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{}}", -1, 8, "duplicate");
    BAD("{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", -1, 8, "unknown or unsupported dtype");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", -1, 8, "lacks");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}", -1, 16, "data_offsets [0, 16] for 2");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", -1, 8, "data_offsets [8, 0]");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
        -1, 12, "overlaps");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", -1, 8, "not a non-negative integer");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", -1, 8, "not an integer");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", -1, 8, "larger than 2^53");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", -1, 8, "too large");
    BAD("{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", -1, 1,
        "more than 16 dimensions");
    snprintf(big, sizeof big, "{\"a\":{\"dtype\":\"U8\",\"shape\":[%lld],\"data_offsets\":[0,%lld]}}", 1LL << 53,
             1LL << 53);
    BAD(big, -1, 8, "truncated: 'a' ends");
    BAD(deep, -1, 0, "nesting deeper");
    BAD("{\"__metadata__\":[]}", -1, 0, "not an object");
    BAD("{\"a\\ud800\":{}}", -1, 0, "surrogate");
    BAD("{\"a\\x\":{}}", -1, 0, "bad escape");
    BAD("{\"a\xc0\x80\":{}}", -1, 0, "UTF-8");
    BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}\xff", -1, 8, "trailing");
    /* accepted: metadata, escapes, an unaligned writer (read instead of mapped) */
    const char *fine = "{\"__metadata__\":{\"k\":\"v\\\"\\u00e9\",\"n\":[1,-2.5e3,true,null]},"
                       "\"b\\u00e9\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                       "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1,5]}}";
    int n = 0;
    char **ln = NULL;
    wick_tensor **lt = NULL;
    CHECK(wick_load_flat(hostile(fine, -1, 5), &n, &ln, &lt) == WICK_OK);
    CHECK(n == 2 && strcmp(ln[0], "b\xc3\xa9") == 0 && strcmp(ln[1], "w") == 0);
    if (n == 2) CHECK(at(lt[0], 0) == 0 && wick_tensor_numel(lt[1]) == 1);
    wick_free_flat(n, ln, lt);
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "/tmp/wick_test_flat_XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_round_trip();
    test_known_bytes();
    test_python_file(argc > 1 ? argv[1] : ".");
    test_hostile();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("%d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
