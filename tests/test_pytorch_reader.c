/* The PyTorch zip reader of the checkpoint engine (src/io/pytorch.c, zip.c):
 * the fixtures torch.save wrote, zips made here (zip64 too), hostile pickles,
 * and every truncation and byte flip of a real checkpoint (an error naming the
 * file or a good load, never a crash: run under ASan in CI's sanitizer build).
 * Usage: test_pytorch_reader SOURCE_DIR (for spec/fixtures). */
#define _GNU_SOURCE /* memmem, mkdtemp */
#include "../src/io/ckpt.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char dir[256], fixtures[512];

static const char *tmp(const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* The reader on path, as the engine calls it: the file opened once. */
static wick_status load(const char *path, int verify, wk_ckpt **out) {
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return wick_fail(WICK_ERR_IO, "cannot open %s", path);
    struct stat sb;
    fstat(fd, &sb);
    wk_ckpt_source src = {path, "test", fd, (int64_t)sb.st_size, verify};
    wk_ckpt *c = wk_ckpt_new(WK_CKPT_PYTORCH);
    wick_status st = c ? wk_ckpt_read_pytorch(c, &src) : WICK_ERR_OOM;
    close(fd);
    if (st) wk_ckpt_free(c);
    else *out = c;
    return st;
}

/* Whether the last error is "test: <path>: ..." (or the refusal naming it). */
static int names_file(const char *path) {
    char head[600];
    snprintf(head, sizeof head, "test: %s: ", path);
    const char *m = wick_last_error();
    return strncmp(m, head, strlen(head)) == 0 || (strncmp(m, "test: refusing to load ", 23) == 0 && strstr(m, path));
}

static int has(const char *text) { return strstr(wick_last_error(), text) != NULL; }

static wk_ckpt_value *field(const wk_ckpt_value *t, const char *key) {
    if (!t || t->kind != WK_CKPT_TABLE) return NULL;
    for (int i = 0; i < t->as.table.n; i++) {
        const wk_ckpt_value *k = t->as.table.pairs[i].key;
        if (k->kind == WK_CKPT_STRING && strcmp(k->as.string.bytes, key) == 0) return t->as.table.pairs[i].value;
    }
    return NULL;
}

static double element(const wk_ckpt_value *v, int64_t i) { /* of a contiguous view */
    const wick_tensor *t = v->as.tensor.view;
    wick_dtype d = wick_tensor_dtype(t);
    return wick_value_as_double((const char *)wick_tensor_data(t) + i * (int64_t)wick_dtype_size(d), d);
}

/* ---- zips made here (spec/pytorch_spec.lua's zip(), in C) ---- */

typedef struct {
    unsigned char *p;
    size_t n, cap;
} bytes;

static void add(bytes *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n) + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void le(bytes *b, uint64_t v, int k) {
    for (int i = 0; i < k; i++) {
        unsigned char c = (unsigned char)(v >> (8 * i));
        add(b, &c, 1);
    }
}

typedef struct {
    const char *name;
    const char *data;
    size_t len;
} file_in_zip;

static void write_zip(const char *path, const file_in_zip *files, int n, int zip64) {
    bytes body = {0}, cd = {0}, out = {0};
    uint64_t FF = 0xFFFF, FFFF = 0xFFFFFFFF;
    for (int i = 0; i < n; i++) {
        const file_in_zip *f = &files[i];
        uint32_t crc = wick_crc32(0, f->data, f->len);
        size_t nl = strlen(f->name);
        uint64_t offset = body.n;
        le(&body, 0x04034b50, 4), le(&body, 45, 2), le(&body, 0, 2), le(&body, 0, 2), le(&body, 0, 4), le(&body, crc, 4);
        le(&body, zip64 ? FFFF : f->len, 4), le(&body, zip64 ? FFFF : f->len, 4);
        le(&body, nl, 2), le(&body, zip64 ? 20 : 0, 2), add(&body, f->name, nl);
        if (zip64) le(&body, 1, 2), le(&body, 16, 2), le(&body, f->len, 8), le(&body, f->len, 8);
        add(&body, f->data, f->len);
        le(&cd, 0x02014b50, 4), le(&cd, 45, 2), le(&cd, 45, 2), le(&cd, 0, 2), le(&cd, 0, 2), le(&cd, 0, 4), le(&cd, crc, 4);
        le(&cd, zip64 ? FFFF : f->len, 4), le(&cd, zip64 ? FFFF : f->len, 4);
        le(&cd, nl, 2), le(&cd, zip64 ? 28 : 0, 2), le(&cd, 0, 2), le(&cd, 0, 2), le(&cd, 0, 2), le(&cd, 0, 4);
        le(&cd, zip64 ? FFFF : offset, 4), add(&cd, f->name, nl);
        if (zip64) le(&cd, 1, 2), le(&cd, 24, 2), le(&cd, f->len, 8), le(&cd, f->len, 8), le(&cd, offset, 8);
    }
    add(&out, body.p, body.n), add(&out, cd.p, cd.n);
    if (zip64) {
        uint64_t rec = out.n;
        le(&out, 0x06064b50, 4), le(&out, 44, 8), le(&out, 45, 2), le(&out, 45, 2), le(&out, 0, 4), le(&out, 0, 4);
        le(&out, (uint64_t)n, 8), le(&out, (uint64_t)n, 8), le(&out, cd.n, 8), le(&out, body.n, 8);
        le(&out, 0x07064b50, 4), le(&out, 0, 4), le(&out, rec, 8), le(&out, 1, 4);
    }
    le(&out, 0x06054b50, 4), le(&out, 0, 2), le(&out, 0, 2);
    le(&out, zip64 ? FF : (uint64_t)n, 2), le(&out, zip64 ? FF : (uint64_t)n, 2);
    le(&out, zip64 ? FFFF : cd.n, 4), le(&out, zip64 ? FFFF : body.n, 4), le(&out, 0, 2);
    FILE *f = fopen(path, "wb");
    fwrite(out.p, 1, out.n, f);
    fclose(f);
    free(body.p), free(cd.p), free(out.p);
}

/* A checkpoint whose data.pkl is protocol 2, pkl, STOP; plus extra entries. */
static const char *pt_with(const char *name, const char *pkl, size_t len, const file_in_zip *extra, int nextra,
                           int zip64) {
    static char path[512];
    snprintf(path, sizeof path, "%s", tmp(name));
    char *data = malloc(len + 3);
    data[0] = (char)0x80, data[1] = 2;
    memcpy(data + 2, pkl, len);
    data[len + 2] = '.';
    file_in_zip files[4] = {{"archive/data.pkl", data, len + 3}};
    for (int i = 0; i < nextra; i++) files[1 + i] = extra[i];
    write_zip(path, files, 1 + nextra, zip64);
    free(data);
    return path;
}
#define PKL(s) s, sizeof(s) - 1

static const char VIEW[] = "ctorch._utils\n_rebuild_tensor_v2\n("
                           "(X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0" "0X\3\0\0\0cpuK\2tQ"
                           "K\0K\2\205K\1\205\211ccollections\nOrderedDict\n)RtR";

/* ---- the tests ---- */

static void test_fixtures(void) {
    char path[600];
    wk_ckpt *c;
    snprintf(path, sizeof path, "%s/pt_state_dict.pt", fixtures);
    CHECK(load(path, -1, &c) == WICK_OK);
    if (c) {
        CHECK(c->format == WK_CKPT_PYTORCH && c->root->kind == WK_CKPT_TABLE && c->root->as.table.n == 4);
        CHECK(c->nstorages == 4);
        const wk_ckpt_value *w = field(c->root, "0.weight");
        CHECK(w && w->kind == WK_CKPT_TENSOR && w->as.tensor.ndim == 2 && w->as.tensor.sizes[0] == 2 &&
              w->as.tensor.sizes[1] == 3 && w->as.tensor.dtype == WICK_FLOAT32 && w->as.tensor.view);
        for (int i = 0; i < c->nstorages; i++) CHECK(strcmp(c->storages[i].device, "cpu") == 0 && c->storages[i].data);
        wk_ckpt_free(c);
    }
    snprintf(path, sizeof path, "%s/pt_mixed.pt", fixtures);
    CHECK(load(path, -1, &c) == WICK_OK);
    if (!c) return;
    const wk_ckpt_value *l = field(c->root, "long"), *b = field(c->root, "base"), *t = field(c->root, "transposed");
    CHECK(l && l->kind == WK_CKPT_TENSOR && l->as.tensor.dtype == WICK_INT64);
    if (l && l->as.tensor.view)
        CHECK(element(l, 0) == 1 && element(l, 1) == -2 && element(l, 2) == 3 && element(l, 3) == 1099511627776.0);
    CHECK(b && t && b->as.tensor.storage == t->as.tensor.storage); /* the transposed view shares its storage */
    CHECK(t && t->as.tensor.strides[0] == 1 && t->as.tensor.strides[1] == 3);
    const wk_ckpt_value *list = field(c->root, "list"), *big = field(c->root, "big"), *nothing = field(c->root, "nothing");
    CHECK(list && list->kind == WK_CKPT_TABLE && list->as.table.n == 3 &&
          list->as.table.pairs[2].value->kind == WK_CKPT_STRING);
    CHECK(big && big->kind == WK_CKPT_NUMBER && big->as.number == -1099511627776.0);
    CHECK(nothing && nothing->kind == WK_CKPT_NIL);
    CHECK(field(field(field(c->root, "nested"), "b"), "c") != NULL);
    wk_ckpt_free(c);
}

static void test_made_zips(void) {
    wk_ckpt *c;
    file_in_zip data = {"archive/data/0", "\0\0\300\77\0\0\0\300", 8}; /* 1.5, -2 */
    for (int zip64 = 0; zip64 <= 1; zip64++) {
        const char *p = pt_with(zip64 ? "zip64.pt" : "zip32.pt", PKL(VIEW), &data, 1, zip64);
        CHECK(load(p, 1, &c) == WICK_OK);
        if (c) {
            CHECK(c->root->kind == WK_CKPT_TENSOR && element(c->root, 0) == 1.5 && element(c->root, 1) == -2);
            wk_ckpt_free(c);
        }
    }
    /* a flipped byte in the storage: the zip's CRC-32, unless verify is 0 */
    file_in_zip bad = {"archive/data/0", "\0\0\300\77\0\0\0\301", 8};
    const char *p = pt_with("crc.pt", PKL(VIEW), &data, 1, 0);
    FILE *f = fopen(p, "r+b");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    char *z = malloc((size_t)size);
    fseek(f, 0, SEEK_SET);
    CHECK(fread(z, 1, (size_t)size, f) == (size_t)size);
    char *at = memmem(z, (size_t)size, data.data, data.len);
    CHECK(at != NULL);
    if (at) fseek(f, at - z, SEEK_SET), fwrite(bad.data, 1, bad.len, f);
    fclose(f);
    free(z);
    CHECK(load(p, -1, &c) == WICK_ERR_IO && names_file(p) && has("CRC-32 mismatch in storage 'archive/data/0'"));
    CHECK(load(p, 0, &c) == WICK_OK);
    if (c) {
        CHECK(element(c->root, 1) != -2);
        wk_ckpt_free(c);
    }
    /* a view past its storage */
    char view5[sizeof VIEW];
    memcpy(view5, VIEW, sizeof VIEW);
    char *k2 = memmem(view5, sizeof VIEW, "K\2\205", 3);
    k2[1] = 5;
    p = pt_with("bounds.pt", view5, sizeof VIEW - 1, &data, 1, 0);
    CHECK(load(p, -1, &c) == WICK_ERR_IO && names_file(p) && has("does not fit its storage"));
    /* a storage's saved location, its dtype used twice, the archive's byte order and its pickles */
    static const char tpu[] = "(X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0" "0X\3\0\0\0tpuK\2tQ";
    p = pt_with("tpu.pt", PKL(tpu), &data, 1, 0);
    CHECK(load(p, -1, &c) == WICK_ERR_IO && names_file(p) && has("storage '0' has an unknown location 'tpu'"));
    static const char twice[] = "(X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0" "0X\3\0\0\0cpuK\2tQ"
                                "(X\7\0\0\0storagectorch\nIntStorage\nX\1\0\0\0" "0X\3\0\0\0cpuK\2tQ\206";
    p = pt_with("twice.pt", PKL(twice), &data, 1, 0);
    CHECK(load(p, -1, &c) == WICK_ERR_IO && has("storage '0' is used as both float32 and int32"));
    file_in_zip big[2] = {{"archive/byteorder", "big", 3}, {"other/data.pkl", "\200\2}.", 4}};
    p = pt_with("big.pt", PKL("}"), big, 1, 0);
    CHECK(load(p, -1, &c) == WICK_ERR_IO && names_file(p) && has("saved big-endian"));
    p = pt_with("two.pt", PKL("}"), big + 1, 1, 0);
    CHECK(load(p, -1, &c) == WICK_ERR_IO && names_file(p) && has("more than one data.pkl"));
    file_in_zip little = {"archive/byteorder", "little", 6};
    p = pt_with("little.pt", PKL("}"), &little, 1, 0);
    CHECK(load(p, -1, &c) == WICK_OK);
    wk_ckpt_free(c);
}

static void test_hostile(void) {
    static const struct {
        const char *name, *pkl;
        size_t len;
        const char *want;
    } cases[] = {
        {"eval", PKL("cbuiltins\neval\n(X\5\0\0\0" "1 + 1tR"), "refusing to load builtins.eval from "},
        {"exec", PKL("\214\10builtins\214\4exec\223(X\1\0\0\0xtR"), "refusing to load builtins.exec from "},
        {"opcode", PKL("}\377"), "unsupported pickle opcode 0xff"},
        {"length", PKL("X\377\377\0\0ab"), "truncated pickle"},
        {"memo", PKL("h\7"), "memo entry 7 is missing"},
        {"stop", PKL("}}"), "STOP with 2 items"},
        {"pop", PKL("s"), "empty stack"},
        {"missing", PKL("(X\7\0\0\0storagectorch\nFloatStorage\nX\1\0\0\0" "0X\3\0\0\0cpuK\2tQ"),
         "lacks the storage 'archive/data/0'"},
        {"setitem", PKL("]K\1K\2s"), "not a dict"},
        {"badglobal", PKL("cos system\nx\n"), "a global with a malformed name \"os system.x\""},
        {"proto", PKL("\200\7"), "unsupported pickle protocol 7"},
        {"persid", PKL("K\1Q"), "unsupported persistent id"},
        {"markpop", PKL("K\1(0"), "POP met a MARK"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        wk_ckpt *c;
        char name[64];
        snprintf(name, sizeof name, "%s.pt", cases[i].name);
        const char *p = pt_with(name, cases[i].pkl, cases[i].len, NULL, 0, 0);
        wick_status st = load(p, -1, &c);
        CHECK(st == WICK_ERR_IO && names_file(p) && has(cases[i].want));
        if (st != WICK_ERR_IO || !has(cases[i].want)) fprintf(stderr, "  case %s: %s\n", cases[i].name, wick_last_error());
    }
    /* shared without a cycle: a tuple holding one dict twice is one value reached twice */
    wk_ckpt *c;
    const char *p = pt_with("shared.pt", PKL("}q\0h\0\206"), NULL, 0, 0);
    CHECK(load(p, -1, &c) == WICK_OK);
    if (c) {
        CHECK(c->root->as.table.n == 2 && c->root->as.table.pairs[0].value == c->root->as.table.pairs[1].value);
        wk_ckpt_free(c);
    }
    /* a list that holds itself, a dict that holds itself: their own values */
    p = pt_with("cycle.pt", PKL("]2a"), NULL, 0, 0);
    CHECK(load(p, -1, &c) == WICK_OK);
    if (c) {
        CHECK(c->root->kind == WK_CKPT_TABLE && c->root->as.table.n == 1 && c->root->as.table.pairs[0].value == c->root);
        wk_ckpt_free(c);
    }
    p = pt_with("dictcycle.pt", PKL("}q\0X\1\0\0\0ah\0s"), NULL, 0, 0);
    CHECK(load(p, -1, &c) == WICK_OK);
    if (c) {
        CHECK(field(c->root, "a") == c->root);
        wk_ckpt_free(c);
    }
    /* x(i+1) = (x(i), x(i)) forty times: 41 values, 2^40 places; each value made once, walked once */
    char chain[1 + 40 * 5];
    chain[0] = '}';
    for (int i = 0; i < 40; i++) memcpy(chain + 1 + 5 * i, "q\0h\0\206", 5);
    p = pt_with("chain.pt", chain, sizeof chain, NULL, 0, 0);
    CHECK(load(p, -1, &c) == WICK_OK);
    if (c) {
        CHECK(c->root->as.table.pairs[0].value == c->root->as.table.pairs[1].value);
        wk_ckpt_free(c);
    }
    /* the bounds: open MARKs, and nesting */
    size_t n = 100001;
    char *marks = malloc(n);
    memset(marks, '(', n);
    p = pt_with("marks.pt", marks, n, NULL, 0, 0);
    CHECK(load(p, -1, &c) == WICK_ERR_IO && has("more than 100000 open MARKs"));
    free(marks);
    n = 3000;
    char *deep = malloc(2 * n);
    memset(deep, ']', n), memset(deep + n, 'a', n - 1);
    p = pt_with("deep.pt", deep, 2 * n - 1, NULL, 0, 0);
    CHECK(load(p, -1, &c) == WICK_ERR_IO && has("nested deeper than"));
    free(deep);
}

/* Every prefix and every one-byte change of a real checkpoint: loads or fails
 * naming the file. */
static void test_damage(void) {
    char path[600];
    snprintf(path, sizeof path, "%s/pt_state_dict.pt", fixtures);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    unsigned char good[4096];
    size_t n = fread(good, 1, sizeof good, f);
    fclose(f);
    const char *p = tmp("damaged.pt");
    int bad = 0, ok = 0;
    for (size_t cut = 0; cut <= n; cut += cut < 64 || cut + 400 > n ? 1 : 11) { /* every cut in the directory */
        f = fopen(p, "wb");
        fwrite(good, 1, cut, f);
        fclose(f);
        wk_ckpt *c;
        wick_status st = load(p, -1, &c);
        if (st == WICK_OK) ok++, wk_ckpt_free(c);
        else bad += !names_file(p);
    }
    CHECK(ok == 1 && bad == 0); /* only the whole file loads */
    for (size_t i = 0; i < n; i++) {
        unsigned char flipped[4096];
        memcpy(flipped, good, n);
        flipped[i] ^= (unsigned char)(i % 7 == 0 ? 0x80 : 0xFF);
        f = fopen(p, "wb");
        fwrite(flipped, 1, n, f);
        fclose(f);
        wk_ckpt *c;
        if (load(p, -1, &c) == WICK_OK) wk_ckpt_free(c);
        else if (!names_file(p)) bad++, fprintf(stderr, "  flip at %zu: %s\n", i, wick_last_error());
    }
    CHECK(bad == 0);
}

int main(int argc, char **argv) {
    snprintf(fixtures, sizeof fixtures, "%s/spec/fixtures", argc > 1 ? argv[1] : ".");
    snprintf(dir, sizeof dir, "/tmp/wick_pt_test_XXXXXX");
    if (!mkdtemp(dir)) return 1;
    test_fixtures();
    test_made_zips();
    test_hostile();
    test_damage();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}
