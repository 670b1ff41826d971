/* PyTorch checkpoints (torch.save's zip format, .pt/.pth) holding state dicts:
 * tensors, dicts, OrderedDicts, lists, tuples, numbers, strings, booleans and
 * None, read into the checkpoint engine's value tree (src/io/ckpt.h).
 *
 * The pickle in <prefix>/data.pkl is read by a DATA-ONLY unpickler: it never
 * imports or calls anything. GLOBAL/STACK_GLOBAL resolve only a short allowlist
 * (OrderedDict, the tensor rebuild functions, the storage types), each of which
 * is a constructor implemented here; anything else is refused with an error
 * naming the file. With torch.load's weights_only=False (the source's objects
 * flag) the rest load as data too, still with nothing imported or called: an
 * instance of another class is a table of its state (its dict items, its
 * __dict__ and its constructor's arguments as items 1, 2, ...) naming its class
 * under "__class__"; protocol 2's bytes (_codecs.encode(text, 'latin1')) are
 * strings, numpy's scalars numbers, a set the list of its items.
 * Every length and offset is checked against the bytes that
 * remain, and the stack, the marks, the memo and the nesting are bounded.
 * Storages are entries of the zip, checked against its directory and mapped
 * from the already-open file by the engine. */
#include "ckpt.h"
#include "zip.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STACK 1000000
#define MAX_MARKS 100000
#define MAX_MEMO 1000000
#define MAX_DIMS 16
#define MAX_DEPTH 1000 /* of the tree handed to the engine */
#define MAX_INDEX 4611686018427387904.0 /* 2^62: sizes, strides, offsets and numels beyond are refused */

/* ---- the unpickler's objects ---- */

enum { PK_NONE, PK_BOOL, PK_NUM, PK_STR, PK_DICT, PK_LIST, PK_TUPLE, PK_GLOBAL, PK_TENSOR,
       PK_CLASS,     /* objects mode: a global outside the allowlist, its name in str (owned) */
       PK_INSTANCE }; /* objects mode: an instance, its state as a dict's items */
enum { G_STORAGE, G_CALL, G_TYPE }; /* what a global is */
enum { F_ORDERED_DICT, F_COUNTER, F_REBUILD_TENSOR, F_REBUILD_PARAMETER, F_REBUILD_FROM_TYPE, F_SIZE, F_DEVICE, F_NONE };

typedef struct pk_obj pk_obj;
typedef struct {
    int storage; /* index into the loader's storages */
    int ndim;
    int64_t sizes[MAX_DIMS], strides[MAX_DIMS], offset;
} pk_tensor;

struct pk_obj {
    unsigned char kind;
    int flag;        /* a boolean's value; a global's index in GLOBALS; a string's
                        ownership (1: its bytes are malloc'd); an instance's count of
                        positional items */
    void *converted; /* its tree value, once made */
    union {
        double num;
        struct {
            const char *p;
            size_t len;
        } str;
        struct {
            pk_obj **items; /* a dict: key, value, key, value... */
            int64_t n, cap;
        } seq;
        pk_tensor *tensor;
    } u;
};

static const struct {
    const char *name;
    int kind, fn;
    wick_dtype dtype;
} GLOBALS[] = {
    {"collections.OrderedDict", G_CALL, F_ORDERED_DICT, 0},
    {"collections.Counter", G_CALL, F_COUNTER, 0}, /* MultiStepLR's milestones: a dict of counts */
    {"torch._utils._rebuild_tensor_v2", G_CALL, F_REBUILD_TENSOR, 0},
    {"torch._utils._rebuild_parameter", G_CALL, F_REBUILD_PARAMETER, 0},
    {"torch._tensor._rebuild_from_type_v2", G_CALL, F_REBUILD_FROM_TYPE, 0},
    {"torch.Size", G_CALL, F_SIZE, 0},     /* (on torch.load's weights_only allowlist, as are the dtypes */
    {"torch.device", G_CALL, F_DEVICE, 0}, /*  and devices: a checkpoint's {"dtype": torch.float32}) */
    {"torch._tensor.Tensor", G_TYPE, F_NONE, 0},
    {"torch.Tensor", G_TYPE, F_NONE, 0},
    {"torch.nn.parameter.Parameter", G_TYPE, F_NONE, 0},
    {"torch.FloatStorage", G_STORAGE, F_NONE, WICK_FLOAT32},
    {"torch.DoubleStorage", G_STORAGE, F_NONE, WICK_FLOAT64},
    {"torch.HalfStorage", G_STORAGE, F_NONE, WICK_FLOAT16},
    {"torch.BFloat16Storage", G_STORAGE, F_NONE, WICK_BFLOAT16},
    {"torch.LongStorage", G_STORAGE, F_NONE, WICK_INT64},
    {"torch.IntStorage", G_STORAGE, F_NONE, WICK_INT32},
    {"torch.ByteStorage", G_STORAGE, F_NONE, WICK_UINT8},
    {"torch.BoolStorage", G_STORAGE, F_NONE, WICK_BOOL},
    {"torch.ComplexFloatStorage", G_STORAGE, F_NONE, WICK_COMPLEX64},
    {"torch.ComplexDoubleStorage", G_STORAGE, F_NONE, WICK_COMPLEX128},
};
#define NGLOBALS (int)(sizeof GLOBALS / sizeof GLOBALS[0])

/* A storage the pickle names: a zip entry, its dtype, its saved location; or a numpy
 * array's bytes inside the pickle (entry NULL). */
typedef struct {
    const wk_zip_entry *entry;
    const unsigned char *bytes; /* the array's numel elements, in the pickle (which outlives the storages' reading) */
    wick_dtype dtype;
    int64_t numel;
    char *key, *location;
    wick_tensor *meta; /* numel elements on the meta device: views are checked against it */
} pk_storage;

#define CHUNK 1024
typedef struct chunk {
    struct chunk *next;
    int used;
    pk_obj objs[CHUNK];
} chunk;

typedef struct {
    uint32_t *keys;
    pk_obj **vals; /* NULL: empty slot */
    size_t cap, count;
} memo_map;

typedef struct {
    const char *who, *path;
    int objects; /* wk_ckpt_source.objects */
    const unsigned char *s;
    size_t n, pos; /* pos: 0-based, the next byte */
    pk_obj **stack;
    size_t top, cap;
    size_t *marks;
    size_t nmarks, mcap;
    memo_map memo;
    chunk *chunks;
    pk_obj none;
    /* the archive's side */
    const wk_zip *zip;
    const char *prefix;
    size_t prefix_len;
    pk_storage *storages;
    int nstorages, scap;
    int *storage_of_entry; /* zip entry index -> storage index + 1 */
} unpickler;

static wick_status fail(const unpickler *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static wick_status fail(const unpickler *u, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wick_status st = wk_ckpt_failv(u->who, u->path, fmt, ap);
    va_end(ap);
    return st;
}

static wick_status oom(const unpickler *u) { return wick_fail(WICK_ERR_OOM, "out of memory reading %s", u->path); }

static pk_obj *new_obj(unpickler *u, int kind) {
    if (!u->chunks || u->chunks->used == CHUNK) {
        chunk *c = malloc(sizeof *c);
        if (!c) return NULL;
        c->next = u->chunks, c->used = 0;
        u->chunks = c;
    }
    pk_obj *o = &u->chunks->objs[u->chunks->used++];
    memset(o, 0, sizeof *o);
    o->kind = (unsigned char)kind;
    return o;
}

static void free_objects(unpickler *u) {
    for (chunk *c = u->chunks, *next; c; c = next) {
        next = c->next;
        for (int i = 0; i < c->used; i++) {
            pk_obj *o = &c->objs[i];
            if (o->kind == PK_DICT || o->kind == PK_INSTANCE || o->kind == PK_LIST || o->kind == PK_TUPLE)
                free(o->u.seq.items);
            else if (o->kind == PK_TENSOR) free(o->u.tensor);
            else if (o->kind == PK_CLASS || (o->kind == PK_STR && o->flag)) free((char *)o->u.str.p);
        }
        free(c);
    }
    u->chunks = NULL;
}

static wick_status seq_add(unpickler *u, pk_obj *o, pk_obj *v) {
    if (o->u.seq.n == o->u.seq.cap) {
        int64_t cap = o->u.seq.cap ? 2 * o->u.seq.cap : 4;
        pk_obj **items = realloc(o->u.seq.items, (size_t)cap * sizeof *items);
        if (!items) return oom(u);
        o->u.seq.items = items, o->u.seq.cap = cap;
    }
    o->u.seq.items[o->u.seq.n++] = v;
    return WICK_OK;
}

static int is_tensor(const pk_obj *o) { return o && o->kind == PK_TENSOR; }
static int is_seq(const pk_obj *o) { return o && (o->kind == PK_LIST || o->kind == PK_TUPLE); }
/* element i (0-based) of a list or tuple; NULL (Lua's nil) past its end or for None */
static pk_obj *elem(const pk_obj *o, int64_t i) {
    if (i >= o->u.seq.n) return NULL;
    pk_obj *v = o->u.seq.items[i];
    return v->kind == PK_NONE ? NULL : v;
}

/* How the Lua reader this replaced (tostring) showed a value in messages. */
static const char *describe(const pk_obj *o, char *buf, size_t cap) {
    if (!o) return "nil";
    switch (o->kind) {
    case PK_NONE: return "None";
    case PK_BOOL: return o->flag ? "true" : "false";
    case PK_NUM:
        if (isnan(o->u.num)) return "nan";
        snprintf(buf, cap, "%.14g", o->u.num);
        return buf;
    case PK_STR: snprintf(buf, cap, "%.*s", (int)(o->u.str.len < 64 ? o->u.str.len : 64), o->u.str.p); return buf;
    case PK_DICT: return "a dict";
    case PK_LIST: return "a list";
    case PK_TUPLE: return "a tuple";
    case PK_GLOBAL: return GLOBALS[o->flag].name;
    case PK_CLASS: snprintf(buf, cap, "%.64s", o->u.str.p); return buf;
    case PK_INSTANCE: return "an instance";
    default: return "a tensor";
    }
}

/* ---- reading the bytes ---- */

static wick_status need(unpickler *u, size_t k, const char *what) {
    if (k > u->n - u->pos)
        return fail(u, "truncated pickle: %s needs %zu bytes at byte %zu, %zu remain", what, k, u->pos, u->n - u->pos);
    return WICK_OK;
}

static uint64_t le(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--) v = v << 8 | p[k];
    return v;
}

static wick_status take_le(unpickler *u, int k, const char *what, uint64_t *out) {
    wick_status st = need(u, (size_t)k, what);
    if (st) return st;
    *out = le(u->s + u->pos, k);
    u->pos += (size_t)k;
    return WICK_OK;
}

/* ---- the stack, the marks, the memo ---- */

static wick_status push(unpickler *u, pk_obj *v) {
    if (!v) return oom(u);
    if (u->top >= MAX_STACK) return fail(u, "pickle stack deeper than %d", MAX_STACK);
    if (u->top == u->cap) {
        size_t cap = u->cap ? 2 * u->cap : 64;
        pk_obj **s = realloc(u->stack, cap * sizeof *s);
        if (!s) return oom(u);
        u->stack = s, u->cap = cap;
    }
    u->stack[u->top++] = v;
    return WICK_OK;
}

static size_t floor_of_stack(const unpickler *u) { return u->nmarks ? u->marks[u->nmarks - 1] : 0; }

static wick_status pop(unpickler *u, const char *what, pk_obj **out) {
    if (u->top == 0) return fail(u, "corrupt pickle: %s on an empty stack", what);
    if (u->top <= floor_of_stack(u)) return fail(u, "corrupt pickle: %s met a MARK", what);
    *out = u->stack[--u->top];
    return WICK_OK;
}

static wick_status peek(unpickler *u, const char *what, pk_obj **out) {
    if (u->top == 0 || u->top <= floor_of_stack(u)) return fail(u, "corrupt pickle: %s on an empty stack", what);
    *out = u->stack[u->top - 1];
    return WICK_OK;
}

/* The items pushed since the last MARK: stack[*first .. top), removed. */
static wick_status pop_mark(unpickler *u, const char *what, size_t *first, size_t *count) {
    if (u->nmarks == 0) return fail(u, "corrupt pickle: %s without a MARK", what);
    size_t m = u->marks[--u->nmarks];
    *first = m, *count = u->top - m;
    u->top = m; /* the items stay readable above top until the next push */
    return WICK_OK;
}

static wick_status mark(unpickler *u) {
    if (u->nmarks >= MAX_MARKS) return fail(u, "more than %d open MARKs", MAX_MARKS);
    if (u->nmarks == u->mcap) {
        size_t cap = u->mcap ? 2 * u->mcap : 16;
        size_t *m = realloc(u->marks, cap * sizeof *m);
        if (!m) return oom(u);
        u->marks = m, u->mcap = cap;
    }
    u->marks[u->nmarks++] = u->top;
    return WICK_OK;
}

static size_t memo_slot(const memo_map *m, uint32_t key) {
    size_t i = (size_t)(key * 2654435761u) & (m->cap - 1);
    while (m->vals[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    return i;
}

static wick_status memo_grow(unpickler *u) {
    memo_map *m = &u->memo, bigger = {NULL, NULL, m->cap ? 2 * m->cap : 256, m->count};
    bigger.keys = malloc(bigger.cap * sizeof *bigger.keys);
    bigger.vals = calloc(bigger.cap, sizeof *bigger.vals);
    if (!bigger.keys || !bigger.vals) {
        free(bigger.keys), free(bigger.vals);
        return oom(u);
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->vals[i]) {
            size_t j = memo_slot(&bigger, m->keys[i]);
            bigger.keys[j] = m->keys[i], bigger.vals[j] = m->vals[i];
        }
    free(m->keys), free(m->vals);
    *m = bigger;
    return WICK_OK;
}

static wick_status put(unpickler *u, uint64_t index) {
    pk_obj *v = NULL;
    wick_status st = peek(u, "PUT", &v);
    if (st) return st;
    if (2 * (u->memo.count + 1) > u->memo.cap && (st = memo_grow(u))) return st;
    size_t i = memo_slot(&u->memo, (uint32_t)index);
    if (!u->memo.vals[i]) {
        if (u->memo.count + 1 > MAX_MEMO) return fail(u, "pickle memo larger than %d", MAX_MEMO);
        u->memo.count++;
    }
    u->memo.keys[i] = (uint32_t)index, u->memo.vals[i] = v;
    return WICK_OK;
}

static wick_status get(unpickler *u, uint64_t index) {
    pk_obj *v = u->memo.cap ? u->memo.vals[memo_slot(&u->memo, (uint32_t)index)] : NULL;
    if (!v) return fail(u, "corrupt pickle: memo entry %llu is missing", (unsigned long long)index);
    return push(u, v);
}

/* ---- containers ---- */

static wick_status set_item(unpickler *u, pk_obj *d, pk_obj *k, pk_obj *v) {
    char buf[80];
    if (d->kind != PK_DICT && d->kind != PK_INSTANCE)
        return fail(u, "corrupt pickle: SETITEM(S) on something that is not a dict");
    if (!k || (k->kind != PK_STR && k->kind != PK_NUM && k->kind != PK_BOOL) || (k->kind == PK_NUM && isnan(k->u.num)))
        return fail(u, "unsupported dict key %s (only strings, numbers and booleans)", describe(k, buf, sizeof buf));
    wick_status st = seq_add(u, d, k);
    return st ? st : seq_add(u, d, v ? v : &u->none);
}

static wick_status add_positional(unpickler *u, pk_obj *o, pk_obj *v);

static wick_status append(unpickler *u, pk_obj *l, pk_obj *v) {
    if (l->kind == PK_INSTANCE) return add_positional(u, l, v); /* a list subclass's items */
    if (l->kind != PK_LIST) return fail(u, "corrupt pickle: APPEND(S) on something that is not a list");
    return seq_add(u, l, v);
}

static wick_status tuple_of(unpickler *u, pk_obj *const *items, size_t count) {
    pk_obj *t = new_obj(u, PK_TUPLE);
    if (!t) return oom(u);
    for (size_t i = 0; i < count; i++) {
        wick_status st = seq_add(u, t, items[i]);
        if (st) return st;
    }
    return push(u, t);
}

/* ---- globals ---- */

static int name_ok(const char *s, size_t n) {
    if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == '.')) return 0;
    return 1;
}

/* Lua's %q of at most 64 bytes of text. */
static void quoted(char *out, size_t cap, const char *s, size_t n) {
    size_t o = 0;
    if (n > 64) n = 64;
    out[o++] = '"';
    for (size_t i = 0; i < n && o + 6 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\' || c == '\n') out[o++] = '\\', out[o++] = (char)c;
        else if (c == '\r') out[o++] = '\\', out[o++] = 'r';
        else if (c == 0) o += (size_t)snprintf(out + o, cap - o, "\\000");
        else out[o++] = (char)c;
    }
    out[o++] = '"';
    out[o] = '\0';
}

/* torch's dtypes by their Python names, loaded as wick's dtype names (strings) */
static const char *const TORCH_DTYPES[][2] = {
    {"float32", "float32"}, {"float", "float32"},       {"float64", "float64"},   {"double", "float64"},
    {"float16", "float16"}, {"half", "float16"},        {"bfloat16", "bfloat16"}, {"int64", "int64"},
    {"long", "int64"},      {"int32", "int32"},         {"int", "int32"},         {"uint8", "uint8"},
    {"bool", "bool"},       {"complex64", "complex64"}, {"cfloat", "complex64"},  {"complex128", "complex128"},
    {"cdouble", "complex128"}, {"int8", "int8"},        {"int16", "int16"},       {"short", "int16"},
};

static pk_obj *new_string(unpickler *u, const char *p, size_t len);

static wick_status global(unpickler *u, const char *module, size_t mlen, const char *name, size_t nlen) {
    char full[600];
    if (!name_ok(module, mlen) || !name_ok(name, nlen) || mlen + nlen > 256) {
        char raw[600], q[400];
        size_t rl = (size_t)snprintf(raw, sizeof raw, "%.*s.%.*s", (int)(mlen < 280 ? mlen : 280), module,
                                     (int)(nlen < 280 ? nlen : 280), name);
        if (memchr(module, 0, mlen) || memchr(name, 0, nlen)) { /* snprintf stopped at a NUL: rebuild by hand */
            size_t a = mlen < 280 ? mlen : 280, b = nlen < 280 ? nlen : 280;
            memcpy(raw, module, a), raw[a] = '.', memcpy(raw + a + 1, name, b), rl = a + 1 + b;
        }
        quoted(q, sizeof q, raw, rl);
        return fail(u, "corrupt pickle: a global with a malformed name %s", q);
    }
    snprintf(full, sizeof full, "%.*s.%.*s", (int)mlen, module, (int)nlen, name);
    if (mlen == 5 && !memcmp(module, "torch", 5))
        for (size_t i = 0; i < sizeof TORCH_DTYPES / sizeof *TORCH_DTYPES; i++)
            if (strlen(TORCH_DTYPES[i][0]) == nlen && !memcmp(name, TORCH_DTYPES[i][0], nlen)) {
                pk_obj *d = new_string(u, TORCH_DTYPES[i][1], strlen(TORCH_DTYPES[i][1]));
                return d ? push(u, d) : oom(u);
            }
    for (int i = 0; i < NGLOBALS; i++)
        if (!strcmp(full, GLOBALS[i].name)) {
            pk_obj *g = new_obj(u, PK_GLOBAL);
            if (g) g->flag = i;
            return push(u, g);
        }
    if (!strcmp(full, "torch.CharStorage") || !strcmp(full, "torch.ShortStorage"))
        return wick_fail(WICK_ERR_DTYPE, "%s: %s holds %s tensors, a dtype wick does not have (convert them in PyTorch, "
                         "e.g. to int32 with .int(), and save again)", u->who, u->path,
                         full[6] == 'C' ? "int8" : "int16");
    if (u->objects) { /* a class as data: its instances become tables */
        pk_obj *g = new_obj(u, PK_CLASS);
        char *name = g ? strdup(full) : NULL;
        if (!name) return oom(u);
        g->u.str.p = name, g->u.str.len = strlen(name);
        return push(u, g);
    }
    return wick_fail(WICK_ERR_IO, "%s: refusing to load %s from %s: only tensors, containers, numbers and strings are loaded "
                     "(wick.load(path, {weights_only = false}) loads other classes' instances as tables of their state, "
                     "running nothing)", u->who, full, u->path);
}

/* GLOBAL: "module\nname\n" */
static wick_status op_global(unpickler *u) {
    const unsigned char *s = u->s + u->pos, *end = u->s + u->n;
    const unsigned char *e1 = memchr(s, '\n', (size_t)(end - s));
    const unsigned char *e2 = e1 ? memchr(e1 + 1, '\n', (size_t)(end - e1 - 1)) : NULL;
    if (!e2 || e2 - s > 512) return fail(u, "corrupt pickle: bad GLOBAL at byte %zu", u->pos);
    u->pos = (size_t)(e2 + 1 - u->s);
    return global(u, (const char *)s, (size_t)(e1 - s), (const char *)e1 + 1, (size_t)(e2 - e1 - 1));
}

static wick_status op_stack_global(unpickler *u) {
    pk_obj *name = NULL, *module = NULL;
    wick_status st = pop(u, "STACK_GLOBAL", &name);
    if (!st) st = pop(u, "STACK_GLOBAL", &module);
    if (st) return st;
    if (module->kind != PK_STR || name->kind != PK_STR) return fail(u, "corrupt pickle: STACK_GLOBAL of non-strings");
    return global(u, module->u.str.p, module->u.str.len, name->u.str.p, name->u.str.len);
}

/* ---- storages and tensors ---- */

/* A whole number in [0, 2^62) from a pickle number. */
static int whole(const pk_obj *o, int64_t *out) {
    if (!o || o->kind != PK_NUM || !(o->u.num >= 0) || o->u.num != floor(o->u.num)) return 0;
    *out = o->u.num < MAX_INDEX ? (int64_t)o->u.num : INT64_MAX;
    return 1;
}

static wick_status new_storage(unpickler *u, const wk_zip_entry *e, wick_dtype dtype, int64_t numel,
                               const pk_obj *key, const pk_obj *location) {
    if (u->nstorages == u->scap) {
        int cap = u->scap ? 2 * u->scap : 16;
        pk_storage *s = realloc(u->storages, (size_t)cap * sizeof *s);
        if (!s) return oom(u);
        u->storages = s, u->scap = cap;
    }
    pk_storage *s = &u->storages[u->nstorages];
    memset(s, 0, sizeof *s);
    s->entry = e, s->dtype = dtype, s->numel = numel;
    s->key = strndup(key->u.str.p, key->u.str.len);
    s->location = strndup(location->u.str.p, location->u.str.len);
    if (!s->key || !s->location) {
        free(s->key), free(s->location);
        return oom(u);
    }
    u->nstorages++;
    wick_status st = wick_empty(&s->meta, 1, &numel, (wick_options){dtype, {WICK_META, -1}});
    if (st) s->meta = NULL;
    return st;
}

/* The storage a persistent id names, checked against the archive (once per key). */
static wick_status declare(unpickler *u, wick_dtype dtype, const pk_obj *key, const pk_obj *location, int64_t numel,
                           double numel_seen, int *index) {
    size_t klen = key->u.str.len, nlen = u->prefix_len + 6 + klen;
    char *name = malloc(nlen + 1);
    if (!name) return oom(u);
    memcpy(name, u->prefix, u->prefix_len), memcpy(name + u->prefix_len, "/data/", 6);
    memcpy(name + u->prefix_len + 6, key->u.str.p, klen), name[nlen] = '\0';
    const wk_zip_entry *e = wk_zip_find(u->zip, name, nlen);
    wick_status st = WICK_OK;
    int k = e ? u->storage_of_entry[e - u->zip->entries] : 0;
    if (k) {
        const pk_storage *seen = &u->storages[k - 1];
        if (seen->dtype != dtype)
            st = fail(u, "storage '%s' is used as both %s and %s", seen->key, wick_dtype_name(seen->dtype),
                      wick_dtype_name(dtype));
        free(name);
        *index = k - 1;
        return st;
    }
    size_t es = wick_dtype_size(dtype);
    wick_device dev;
    if (!e) st = fail(u, "the archive lacks the storage '%s'", name);
    else if (numel == INT64_MAX || numel > e->size / (int64_t)es || numel * (int64_t)es != e->size)
        st = fail(u, "storage '%.*s' holds %lld bytes, not %.0f elements of %s", (int)klen, key->u.str.p,
                  (long long)e->size, numel_seen, wick_dtype_name(dtype));
    else {
        char *text = strndup(location->u.str.p, location->u.str.len);
        if (!text) st = oom(u);
        else if (strlen(text) != location->u.str.len || wick_device_parse(text, &dev))
            st = fail(u, "storage '%.*s' has an unknown location '%.*s'", (int)klen, key->u.str.p,
                      (int)(location->u.str.len < 256 ? location->u.str.len : 256), location->u.str.p);
        free(text);
    }
    free(name);
    if (st) return st;
    if ((st = new_storage(u, e, dtype, numel, key, location))) return st;
    u->storage_of_entry[e - u->zip->entries] = u->nstorages;
    *index = u->nstorages - 1;
    return WICK_OK;
}

static pk_obj *new_tensor(unpickler *u, int storage, int ndim, const int64_t *sizes, const int64_t *strides,
                          int64_t offset) {
    pk_obj *o = new_obj(u, PK_TENSOR);
    pk_tensor *t = o ? calloc(1, sizeof *t) : NULL;
    if (!t) return NULL;
    t->storage = storage, t->ndim = ndim, t->offset = offset;
    memcpy(t->sizes, sizes, (size_t)ndim * sizeof *sizes);
    memcpy(t->strides, strides, (size_t)ndim * sizeof *strides);
    o->u.tensor = t;
    return o;
}

/* BINPERSID: ('storage', type, key, location, numel) */
static wick_status op_persid(unpickler *u) {
    pk_obj *pid = NULL;
    wick_status st = pop(u, "BINPERSID", &pid);
    if (st) return st;
    pk_obj *tag = pid->kind == PK_TUPLE ? elem(pid, 0) : NULL;
    if (!tag || tag->kind != PK_STR || tag->u.str.len != 7 || memcmp(tag->u.str.p, "storage", 7) || pid->u.seq.n < 5)
        return fail(u, "unsupported persistent id (only ('storage', type, key, location, numel) is loaded)");
    pk_obj *stype = elem(pid, 1), *key = elem(pid, 2), *location = elem(pid, 3), *count = elem(pid, 4);
    if (!stype || stype->kind != PK_GLOBAL || GLOBALS[stype->flag].kind != G_STORAGE)
        return fail(u, "a storage of an unknown type");
    int64_t numel;
    if (!key || key->kind != PK_STR || !location || location->kind != PK_STR || !whole(count, &numel))
        return fail(u, "a storage with a bad key, location or size");
    int index = 0;
    if ((st = declare(u, GLOBALS[stype->flag].dtype, key, location, numel, count->u.num, &index))) return st;
    int64_t one = 1, n = u->storages[index].numel;
    return push(u, new_tensor(u, index, 1, &n, &one, 0));
}

static wick_status sizes_of(unpickler *u, const pk_obj *t, const char *what, int *ndim, int64_t *out) {
    char buf[80];
    if (!is_seq(t)) return fail(u, "a tensor's %s is not a tuple", what);
    if (t->u.seq.n > MAX_DIMS) return fail(u, "a tensor with %lld dimensions (at most %d)", (long long)t->u.seq.n, MAX_DIMS);
    for (int64_t i = 0; i < t->u.seq.n; i++) {
        const pk_obj *d = elem(t, i);
        if (!whole(d, &out[i])) return fail(u, "a tensor's %s holds %s", what, describe(d, buf, sizeof buf));
    }
    *ndim = (int)t->u.seq.n;
    return WICK_OK;
}

/* _rebuild_tensor_v2(storage, offset, size, stride, ...): a view checked against its storage */
static wick_status rebuild_tensor(unpickler *u, const pk_obj *args, pk_obj **out) {
    const pk_obj *storage = elem(args, 0);
    if (!is_tensor(storage)) return fail(u, "_rebuild_tensor_v2 was not given a storage");
    int64_t offset, sizes[MAX_DIMS], strides[MAX_DIMS];
    if (!whole(elem(args, 1), &offset)) return fail(u, "a tensor with a bad storage offset");
    int nsize, nstride;
    wick_status st = sizes_of(u, elem(args, 2), "size", &nsize, sizes);
    if (!st) st = sizes_of(u, elem(args, 3), "stride", &nstride, strides);
    if (st) return st;
    if (nsize != nstride) return fail(u, "a tensor with %d sizes but %d strides", nsize, nstride);
    int index = storage->u.tensor->storage;
    int huge = offset == INT64_MAX;
    for (int i = 0; i < nsize; i++) huge |= sizes[i] == INT64_MAX || strides[i] == INT64_MAX;
    if (huge) return fail(u, "a tensor that does not fit its storage: a size, stride or offset beyond 2^62");
    wick_tensor *view;
    if (wick_as_strided(&view, u->storages[index].meta, nsize, sizes, strides, offset))
        return fail(u, "a tensor that does not fit its storage: %s", wick_last_error());
    wick_tensor_release(view);
    *out = new_tensor(u, index, nsize, sizes, strides, offset);
    return *out ? WICK_OK : oom(u);
}

static wick_status ordered_dict(unpickler *u, const pk_obj *args, pk_obj **out) {
    pk_obj *d = new_obj(u, PK_DICT);
    if (!d) return oom(u);
    const pk_obj *items = elem(args, 0);
    if (items) {
        if (!is_seq(items)) return fail(u, "OrderedDict given something that is not a list of pairs");
        for (int64_t i = 0; i < items->u.seq.n; i++) {
            const pk_obj *pair = elem(items, i);
            if (!is_seq(pair) || pair->u.seq.n != 2) return fail(u, "OrderedDict given something that is not a pair");
            wick_status st = set_item(u, d, elem(pair, 0), elem(pair, 1));
            if (st) return st;
        }
    }
    *out = d;
    return WICK_OK;
}

/* Counter(dict) (its pickle: the class and the counts as a dict): the dict */
static wick_status counter(unpickler *u, const pk_obj *args, pk_obj **out) {
    const pk_obj *counts = elem(args, 0);
    if (!counts) {
        *out = new_obj(u, PK_DICT);
        return *out ? WICK_OK : oom(u);
    }
    if (counts->kind != PK_DICT) return fail(u, "Counter given something that is not a dict");
    *out = (pk_obj *)counts;
    return WICK_OK;
}

/* ---- instances (objects mode: torch.load's weights_only=False) ---- */

static int is_named(const pk_obj *o, const char *name) {
    return o && (o->kind == PK_STR || o->kind == PK_CLASS) && o->u.str.len == strlen(name) &&
           !memcmp(o->u.str.p, name, o->u.str.len);
}

static pk_obj *new_string(unpickler *u, const char *p, size_t len) {
    pk_obj *o = new_obj(u, PK_STR);
    if (o) o->u.str.p = p, o->u.str.len = len;
    return o;
}

/* An instance of cls: a table of its state, "__class__" naming the class. */
static wick_status new_instance(unpickler *u, const pk_obj *cls, pk_obj **out) {
    pk_obj *o = new_obj(u, PK_INSTANCE), *k = new_string(u, "__class__", 9);
    pk_obj *name = new_string(u, cls->u.str.p, cls->u.str.len);
    if (!o || !k || !name) return oom(u);
    *out = o;
    return set_item(u, o, k, name);
}

/* a constructor's argument (a namedtuple's field, a list subclass's item) as item 1, 2, ... */
static wick_status add_positional(unpickler *u, pk_obj *o, pk_obj *v) {
    pk_obj *k = new_obj(u, PK_NUM);
    if (!k) return oom(u);
    k->u.num = ++o->flag;
    return set_item(u, o, k, v && v->kind != PK_NONE ? v : NULL);
}

/* an instance's item under a number or a string key, or NULL */
static const pk_obj *item_of(const pk_obj *o, double num, const char *name) {
    for (int64_t i = 0; o && o->kind == PK_INSTANCE && i + 1 < o->u.seq.n; i += 2) {
        const pk_obj *k = o->u.seq.items[i];
        if (name ? is_named(k, name) : (k->kind == PK_NUM && k->u.num == num)) return o->u.seq.items[i + 1];
    }
    return NULL;
}

/* BUILD's state: a dict (__dict__), or (dict, slots dict), merged into the items;
 * any other state (numpy's) kept under "__state__" */
static int numpy_array(unpickler *u, pk_obj *o, const pk_obj *state, wick_status *st);

static wick_status set_state(unpickler *u, pk_obj *o, pk_obj *state) {
    const pk_obj *parts[2] = {state, NULL};
    wick_status st = WICK_OK;
    if (is_named(item_of(o, 0, "__class__"), "numpy.ndarray") && (numpy_array(u, o, state, &st) || st)) return st;
    if (state->kind == PK_TUPLE && state->u.seq.n == 2) parts[0] = elem(state, 0), parts[1] = elem(state, 1);
    int dicts = 1;
    for (int p = 0; p < 2; p++) dicts &= !parts[p] || parts[p]->kind == PK_DICT;
    if (!dicts || (!parts[0] && !parts[1])) {
        pk_obj *k = new_string(u, "__state__", 9);
        return k ? set_item(u, o, k, state) : oom(u);
    }
    for (int p = 0; p < 2; p++)
        for (int64_t i = 0; parts[p] && i + 1 < parts[p]->u.seq.n && !st; i += 2)
            st = set_item(u, o, parts[p]->u.seq.items[i], parts[p]->u.seq.items[i + 1]);
    return st;
}

/* _codecs.encode(text, 'latin1'), protocol 2's bytes: text's code points (each < 256) as bytes */
static wick_status latin1_bytes(unpickler *u, const pk_obj *text, pk_obj **out) {
    const unsigned char *s = (const unsigned char *)text->u.str.p;
    size_t len = text->u.str.len, n = 0;
    unsigned char *b = malloc(len + 1);
    if (!b) return oom(u);
    for (size_t i = 0; i < len; n++) {
        if (s[i] < 0x80) b[n] = s[i++];
        else if ((s[i] == 0xC2 || s[i] == 0xC3) && i + 1 < len && (s[i + 1] & 0xC0) == 0x80)
            b[n] = (unsigned char)((s[i] & 0x1F) << 6 | (s[i + 1] & 0x3F)), i += 2;
        else {
            free(b);
            return fail(u, "_codecs.encode given text that is not latin-1 (at byte %zu of %zu)", i, len);
        }
    }
    b[n] = 0;
    pk_obj *o = new_string(u, (const char *)b, n);
    if (!o) {
        free(b);
        return oom(u);
    }
    o->flag = 1; /* owned */
    *out = o;
    return WICK_OK;
}

/* a numpy dtype instance (dtype(code, ...) with its BUILD state) of a little-endian bool,
 * integer, float or complex: its kind ('b', 'i', 'u', 'f', 'c') and size; 0 for another */
static int numpy_dtype(const pk_obj *dtype, char *kind, int *size) {
    const pk_obj *code = item_of(dtype, 1, NULL), *state = item_of(dtype, 0, "__state__");
    const pk_obj *order = state && state->kind == PK_TUPLE ? elem(state, 1) : NULL;
    if (!code || code->kind != PK_STR || code->u.str.len < 2 || code->u.str.len > 3) return 0;
    if (order && !is_named(order, "<") && !is_named(order, "|") && !is_named(order, "=")) return 0;
    *kind = code->u.str.p[0], *size = 0;
    for (size_t i = 1; i < code->u.str.len; i++) {
        if (!isdigit((unsigned char)code->u.str.p[i])) return 0;
        *size = *size * 10 + (code->u.str.p[i] - '0');
    }
    if (*kind == 'c') return *size == 8 || *size == 16;
    if (*size != 1 && *size != 2 && *size != 4 && *size != 8) return 0;
    return (*kind == 'b' && *size == 1) || *kind == 'i' || *kind == 'u' || (*kind == 'f' && *size >= 2);
}

/* whether numpy_value reads that kind and size: a bool, an integer, a float32 or float64 */
static int plain_number(char kind, int size) { return kind == 'b' || kind == 'i' || kind == 'u' || (kind == 'f' && size >= 4); }

/* the element of that kind and size at p: a number, or a boolean */
static pk_obj *numpy_value(unpickler *u, char kind, int size, const unsigned char *p) {
    uint64_t v = le(p, size);
    pk_obj *o = new_obj(u, kind == 'b' ? PK_BOOL : PK_NUM);
    if (!o) return NULL;
    if (kind == 'b') o->flag = v != 0;
    else if (kind == 'u') o->u.num = (double)v;
    else if (kind == 'i') /* sign-extended */
        o->u.num = (double)(int64_t)(size == 8 ? v : (v ^ (1ull << (8 * size - 1))) - (1ull << (8 * size - 1)));
    else if (size == 4) {
        float f;
        uint32_t w = (uint32_t)v;
        memcpy(&f, &w, 4);
        o->u.num = f;
    } else
        memcpy(&o->u.num, &v, 8);
    return o;
}

/* numpy's scalar(dtype, bytes): its value, or NULL (*st set on failure) for another scalar */
static pk_obj *numpy_scalar(unpickler *u, const pk_obj *args, wick_status *st) {
    const pk_obj *bytes = elem(args, 1);
    char kind;
    int size;
    *st = WICK_OK;
    if (!numpy_dtype(elem(args, 0), &kind, &size) || !plain_number(kind, size) || !bytes || bytes->kind != PK_STR ||
        bytes->u.str.len != (size_t)size)
        return NULL;
    pk_obj *o = numpy_value(u, kind, size, (const unsigned char *)bytes->u.str.p);
    if (!o) *st = oom(u);
    return o;
}

/* the nested lists of an array's elements along dims d.. (sizes, their element strides in
 * step) from p */
static pk_obj *nested(unpickler *u, int ndim, const int64_t *sizes, const int64_t *step, int d, char kind, int size,
                      const unsigned char *p) {
    if (d == ndim) return numpy_value(u, kind, size, p);
    pk_obj *l = new_obj(u, PK_LIST);
    for (int64_t i = 0; l && i < sizes[d]; i++) {
        pk_obj *v = nested(u, ndim, sizes, step, d + 1, kind, size, p + i * step[d] * size);
        if (!v || seq_add(u, l, v)) return NULL;
    }
    return l;
}

/* a shape tuple of whole numbers (at most MAX_DIMS): 0, else 1 */
static int sizes_of_quiet(const pk_obj *t, int *ndim, int64_t *out) {
    if (!is_seq(t) || t->u.seq.n > MAX_DIMS) return 1;
    for (int64_t i = 0; i < t->u.seq.n; i++)
        if (!whole(elem(t, i), &out[i])) return 1;
    *ndim = (int)t->u.seq.n;
    return 0;
}

/* o becomes a CPU tensor of the array's dtype over its bytes in the pickle (a storage of its own) */
static wick_status numpy_tensor(unpickler *u, pk_obj *o, wick_dtype dtype, int ndim, const int64_t *sizes,
                                const int64_t *step, int64_t numel, const unsigned char *bytes) {
    static const pk_obj key = {.kind = PK_STR, .u.str = {"ndarray", 7}}, cpu = {.kind = PK_STR, .u.str = {"cpu", 3}};
    wick_status st = new_storage(u, NULL, dtype, numel, &key, &cpu);
    if (st) return st;
    u->storages[u->nstorages - 1].bytes = bytes;
    pk_tensor *t = calloc(1, sizeof *t);
    if (!t) return oom(u);
    t->storage = u->nstorages - 1, t->ndim = ndim;
    memcpy(t->sizes, sizes, (size_t)ndim * sizeof *sizes);
    memcpy(t->strides, step, (size_t)ndim * sizeof *step);
    free(o->u.seq.items); /* o takes the tensor's place: the memo and the stack hold o */
    memset(&o->u, 0, sizeof o->u);
    o->kind = PK_TENSOR, o->flag = 0, o->u.tensor = t;
    return WICK_OK;
}

/* numpy's ndarray state (version, shape, dtype, is_fortran, raw bytes) of an array of numbers or
 * booleans: o becomes a tensor of its dtype where wick has one (torch.from_numpy's), else (int8,
 * int16, wider unsigned; at most 2^20 elements) the nested lists of its elements (a 0-dim array
 * its value). 1: done; 0: another array, kept as its state. */
static int numpy_array(unpickler *u, pk_obj *o, const pk_obj *state, wick_status *st) {
    const pk_obj *shape = elem(state, 1), *fortran = elem(state, 3), *raw = elem(state, 4);
    char kind;
    int size, ndim = 0;
    int64_t sizes[MAX_DIMS], step[MAX_DIMS], numel = 1;
    *st = WICK_OK;
    if (state->kind != PK_TUPLE || state->u.seq.n != 5 || !numpy_dtype(elem(state, 2), &kind, &size) || !raw ||
        raw->kind != PK_STR || sizes_of_quiet(shape, &ndim, sizes))
        return 0;
    int column_major = fortran && fortran->kind == PK_BOOL && fortran->flag;
    for (int k = 0; k < ndim; k++) { /* the elements' strides: the last dim's 1, or the first's */
        int i = column_major ? k : ndim - 1 - k;
        step[i] = numel;
        if (sizes[i] != 0 && numel > ((int64_t)1 << 62) / sizes[i]) return 0; /* (overflow) */
        numel *= sizes[i];
    }
    if (numel > (int64_t)(raw->u.str.len / (size_t)size) || (size_t)(numel * size) != raw->u.str.len) return 0;
    wick_dtype dtype;
    if (wk_numpy_dtype(kind, size, &dtype))
        return (*st = numpy_tensor(u, o, dtype, ndim, sizes, step, numel, (const unsigned char *)raw->u.str.p)) == WICK_OK;
    if (numel > (1 << 20) || !plain_number(kind, size)) return 0;
    pk_obj *v = nested(u, ndim, sizes, step, 0, kind, size, (const unsigned char *)raw->u.str.p);
    if (!v) return *st = oom(u), 0;
    free(o->u.seq.items); /* o takes v's place: the memo and the stack hold o */
    memset(&o->u, 0, sizeof o->u);
    o->kind = v->kind, o->flag = v->flag, o->u = v->u;
    if (v->kind == PK_LIST) v->u.seq.items = NULL, v->u.seq.n = 0;
    return 1;
}

/* cls(*args) or cls.__new__(cls, *args) for a class outside the allowlist: data, never a call */
static wick_status construct(unpickler *u, const pk_obj *cls, const pk_obj *args, pk_obj **out) {
    const pk_obj *a0 = elem(args, 0), *a1 = elem(args, 1);
    wick_status st;
    if (is_named(cls, "_codecs.encode") && a0 && a0->kind == PK_STR && (is_named(a1, "latin1") || is_named(a1, "latin-1")))
        return latin1_bytes(u, a0, out);
    if ((is_named(cls, "numpy.core.multiarray.scalar") || is_named(cls, "numpy._core.multiarray.scalar")) &&
        ((*out = numpy_scalar(u, args, &st)) || st))
        return st;
    if ((is_named(cls, "builtins.bytes") || is_named(cls, "__builtin__.bytes")) && args->u.seq.n == 0)
        return (*out = new_string(u, "", 0)) ? WICK_OK : oom(u); /* protocol 2's b'' */
    if (is_named(cls, "builtins.set") || is_named(cls, "__builtin__.set") || is_named(cls, "builtins.frozenset") ||
        is_named(cls, "__builtin__.frozenset")) { /* Lua has no sets: the list of its items */
        if (a0 && a0->kind == PK_LIST) *out = (pk_obj *)a0;
        else *out = new_obj(u, PK_LIST);
        return *out ? WICK_OK : oom(u);
    }
    /* copyreg._reconstructor(cls, base, state), numpy's _reconstruct(ndarray, shape, dtype): an instance of cls */
    if ((is_named(cls, "copyreg._reconstructor") || is_named(cls, "numpy.core.multiarray._reconstruct") ||
         is_named(cls, "numpy._core.multiarray._reconstruct")) && a0 && a0->kind == PK_CLASS)
        return new_instance(u, a0, out);
    st = new_instance(u, cls, out);
    for (int64_t i = 0; i < args->u.seq.n && !st; i++) st = add_positional(u, *out, args->u.seq.items[i]);
    return st;
}

/* torch.device(type[, index]) or torch.device("cuda:0") as wick's device string */
static wick_status device_string(unpickler *u, const pk_obj *args, pk_obj **out) {
    const pk_obj *type = elem(args, 0), *index = elem(args, 1);
    if (!type || type->kind != PK_STR || type->u.str.len > 64 || args->u.seq.n > 2 ||
        (index && index->kind != PK_NUM && index->kind != PK_NONE))
        return fail(u, "corrupt pickle: torch.device given something other than a type and an index");
    char buf[96];
    int n = index && index->kind == PK_NUM && index->u.num >= 0 && index->u.num < 1e6
                ? snprintf(buf, sizeof buf, "%.*s:%d", (int)type->u.str.len, type->u.str.p, (int)index->u.num)
                : snprintf(buf, sizeof buf, "%.*s", (int)type->u.str.len, type->u.str.p);
    pk_obj *o = new_obj(u, PK_STR);
    char *p = o ? strndup(buf, (size_t)n) : NULL;
    if (!p) return oom(u);
    o->u.str.p = p, o->u.str.len = (size_t)n, o->flag = 1; /* (owned: freed with the objects) */
    *out = o;
    return WICK_OK;
}

/* REDUCE: one of the allowlisted constructors, never anything else. */
static wick_status call(unpickler *u, const pk_obj *g, const pk_obj *args, pk_obj **out) {
    for (;;) { /* _rebuild_from_type_v2(func, type, args) is func(args): a loop, however deep */
        if (g && g->kind == PK_CLASS) {
            if (!args || args->kind != PK_TUPLE) return fail(u, "corrupt pickle: REDUCE arguments are not a tuple");
            return construct(u, g, args, out);
        }
        if (!g || g->kind != PK_GLOBAL) return fail(u, "corrupt pickle: REDUCE on something that is not a known constructor");
        if (GLOBALS[g->flag].kind != G_CALL) return fail(u, "corrupt pickle: %s cannot be called", GLOBALS[g->flag].name);
        if (!args || args->kind != PK_TUPLE) return fail(u, "corrupt pickle: REDUCE arguments are not a tuple");
        int64_t nargs = args->u.seq.n;
        switch (GLOBALS[g->flag].fn) {
        case F_ORDERED_DICT: return ordered_dict(u, args, out);
        case F_COUNTER: return counter(u, args, out);
        case F_REBUILD_TENSOR:
            if (nargs < 4) return fail(u, "_rebuild_tensor_v2 given fewer than 4 arguments");
            return rebuild_tensor(u, args, out);
        case F_REBUILD_PARAMETER:
            if (nargs < 1 || !is_tensor(elem(args, 0))) return fail(u, "_rebuild_parameter was not given a tensor");
            *out = elem(args, 0);
            return WICK_OK;
        case F_SIZE: /* torch.Size((2, 3)): its sizes, a table */
            if (nargs != 1 || !elem(args, 0) || (elem(args, 0)->kind != PK_TUPLE && elem(args, 0)->kind != PK_LIST))
                return fail(u, "corrupt pickle: torch.Size given something other than a tuple of sizes");
            *out = elem(args, 0);
            return WICK_OK;
        case F_DEVICE: return device_string(u, args, out); /* torch.device("cuda", 0): "cuda:0" */
        default: { /* F_REBUILD_FROM_TYPE */
            const pk_obj *type = elem(args, 1); /* (objects mode: a tensor subclass loads as a tensor) */
            if (!type || !(type->kind == PK_CLASS || (type->kind == PK_GLOBAL && GLOBALS[type->flag].kind == G_TYPE)))
                return fail(u, "_rebuild_from_type_v2 given an unknown type");
            g = elem(args, 0), args = elem(args, 2);
        }
        }
    }
}

static wick_status op_reduce(unpickler *u) {
    pk_obj *args = NULL, *g = NULL, *r = NULL;
    wick_status st = pop(u, "REDUCE", &args);
    if (!st) st = pop(u, "REDUCE", &g);
    if (!st) st = call(u, g, args, &r);
    return st ? st : push(u, r);
}

/* NEWOBJ (cls, args) and NEWOBJ_EX (cls, args, kwargs): cls.__new__(cls, *args, **kwargs), as REDUCE's
 * data (the keywords join the instance's items) */
static wick_status op_newobj(unpickler *u, int ex) {
    pk_obj *kwargs = NULL, *args = NULL, *cls = NULL, *r = NULL;
    const char *what = ex ? "NEWOBJ_EX" : "NEWOBJ";
    wick_status st = ex ? pop(u, what, &kwargs) : WICK_OK;
    if (!st) st = pop(u, what, &args);
    if (!st) st = pop(u, what, &cls);
    if (st) return st;
    if (kwargs && kwargs->kind != PK_DICT) return fail(u, "corrupt pickle: %s keywords are not a dict", what);
    if (!args || args->kind != PK_TUPLE) return fail(u, "corrupt pickle: %s arguments are not a tuple", what);
    if (!cls || cls->kind != PK_CLASS) return fail(u, "corrupt pickle: %s on something that is not a class", what);
    st = construct(u, cls, args, &r);
    for (int64_t i = 0; kwargs && r->kind == PK_INSTANCE && i + 1 < kwargs->u.seq.n && !st; i += 2)
        st = set_item(u, r, kwargs->u.seq.items[i], kwargs->u.seq.items[i + 1]);
    return st ? st : push(u, r);
}

/* ---- the opcodes ---- */

static wick_status op_string(unpickler *u, int len_bytes, const char *what) {
    uint64_t len;
    wick_status st;
    if (len_bytes == 8) {
        if ((st = need(u, 8, what))) return st;
        if (u->s[u->pos + 6] || u->s[u->pos + 7]) return fail(u, "%s of an impossible length at byte %zu", what, u->pos);
        len = le(u->s + u->pos, 6);
        u->pos += 8;
    } else if ((st = take_le(u, len_bytes, what, &len))) {
        return st;
    }
    if (len > u->n - u->pos)
        return fail(u, "truncated pickle: %s of %llu bytes at byte %zu, %zu remain", what, (unsigned long long)len, u->pos,
                    u->n - u->pos);
    pk_obj *o = new_obj(u, PK_STR);
    if (o) o->u.str.p = (const char *)u->s + u->pos, o->u.str.len = (size_t)len;
    u->pos += (size_t)len;
    return push(u, o);
}

static wick_status push_number(unpickler *u, double v) {
    pk_obj *o = new_obj(u, PK_NUM);
    if (o) o->u.num = v;
    return push(u, o);
}

static wick_status push_bool(unpickler *u, int b) {
    pk_obj *o = new_obj(u, PK_BOOL);
    if (o) o->flag = b;
    return push(u, o);
}

static wick_status op_long1(unpickler *u) {
    uint64_t len = 0, v = 0;
    wick_status st = take_le(u, 1, "LONG1", &len);
    if (st) return st;
    if (len > 8) return fail(u, "an integer of %d bytes (at most 8 are supported)", (int)len);
    v = 0;
    if (len && (st = take_le(u, (int)len, "LONG1", &v))) return st;
    if (len && len < 8 && (v >> (8 * len - 1)) & 1) v |= ~(uint64_t)0 << (8 * len); /* sign-extend */
    return push_number(u, (double)(int64_t)v);
}

static wick_status op_binfloat(unpickler *u) {
    wick_status st = need(u, 8, "BINFLOAT");
    if (st) return st;
    uint64_t bits = 0;
    for (int k = 0; k < 8; k++) bits = bits << 8 | u->s[u->pos + (size_t)k]; /* big-endian */
    u->pos += 8;
    double v;
    memcpy(&v, &bits, sizeof v);
    return push_number(u, v);
}

static wick_status op_tuple_n(unpickler *u, int n, const char *what) {
    pk_obj *items[3] = {NULL, NULL, NULL};
    for (int i = n - 1; i >= 0; i--) {
        wick_status st = pop(u, what, &items[i]);
        if (st) return st;
    }
    return tuple_of(u, items, (size_t)n);
}

static wick_status op_setitems(unpickler *u) {
    size_t first = 0, count = 0;
    pk_obj *d = NULL;
    wick_status st = pop_mark(u, "SETITEMS", &first, &count);
    if (st) return st;
    if (count % 2) return fail(u, "corrupt pickle: SETITEMS with an odd number of items");
    if ((st = peek(u, "SETITEMS", &d))) return st;
    for (size_t i = 0; i < count && !st; i += 2) {
        pk_obj *v = u->stack[first + i + 1];
        st = set_item(u, d, u->stack[first + i], v->kind == PK_NONE ? NULL : v);
    }
    return st;
}

static wick_status op_appends(unpickler *u) {
    size_t first = 0, count = 0;
    pk_obj *l = NULL;
    wick_status st = pop_mark(u, "APPENDS", &first, &count);
    if (!st) st = peek(u, "APPENDS", &l);
    for (size_t i = 0; i < count && !st; i++) st = append(u, l, u->stack[first + i]);
    return st;
}

static wick_status op_build(unpickler *u) {
    pk_obj *state = NULL, *obj = NULL;
    wick_status st = pop(u, "BUILD", &state);
    if (!st) st = peek(u, "BUILD", &obj);
    if (st) return st;
    if (obj->kind == PK_INSTANCE) return set_state(u, obj, state);
    /* the state of a dict (OrderedDict's _metadata) or a tensor is dropped */
    if (obj->kind != PK_DICT && obj->kind != PK_TENSOR)
        return fail(u, "corrupt pickle: BUILD on something that is not a dict or tensor");
    return WICK_OK;
}

static wick_status step(unpickler *u, unsigned op) {
    pk_obj *a = NULL, *b = NULL;
    uint64_t v = 0;
    size_t first = 0, count = 0;
    wick_status st;
    switch (op) {
    case 0x80: /* PROTO */
        if ((st = take_le(u, 1, "PROTO", &v))) return st;
        return v > 5 ? fail(u, "unsupported pickle protocol %d", (int)v) : WICK_OK;
    case 0x95: return take_le(u, 8, "FRAME", &v); /* a hint only */
    case '}': return push(u, new_obj(u, PK_DICT));
    case ']': return push(u, new_obj(u, PK_LIST));
    case ')': return push(u, new_obj(u, PK_TUPLE));
    case '(': return mark(u);
    case 'X': return op_string(u, 4, "BINUNICODE");
    case 0x8C: return op_string(u, 1, "SHORT_BINUNICODE");
    case 0x8D: return op_string(u, 8, "BINUNICODE8");
    case 'U': return op_string(u, 1, "SHORT_BINSTRING");
    case 'T':
        if ((st = need(u, 4, "BINSTRING"))) return st;
        if (u->s[u->pos + 3] >= 128) return fail(u, "BINSTRING of a negative length");
        return op_string(u, 4, "BINSTRING");
    case 'C': return op_string(u, 1, "SHORT_BINBYTES");
    case 'B': return op_string(u, 4, "BINBYTES");
    case 0x8E: return op_string(u, 8, "BINBYTES8");
    case 'q': return (st = take_le(u, 1, "BINPUT", &v)) ? st : put(u, v);
    case 'r': return (st = take_le(u, 4, "LONG_BINPUT", &v)) ? st : put(u, v);
    case 'h': return (st = take_le(u, 1, "BINGET", &v)) ? st : get(u, v);
    case 'j': return (st = take_le(u, 4, "LONG_BINGET", &v)) ? st : get(u, v);
    case 0x94: return put(u, u->memo.count); /* MEMOIZE */
    case 'J': return (st = take_le(u, 4, "BININT", &v)) ? st : push_number(u, (double)(int32_t)(uint32_t)v);
    case 'K': return (st = take_le(u, 1, "BININT1", &v)) ? st : push_number(u, (double)v);
    case 'M': return (st = take_le(u, 2, "BININT2", &v)) ? st : push_number(u, (double)v);
    case 0x8A: return op_long1(u);
    case 'G': return op_binfloat(u);
    case 0x88: return push_bool(u, 1);
    case 0x89: return push_bool(u, 0);
    case 'N': return push(u, &u->none);
    case 't': return (st = pop_mark(u, "TUPLE", &first, &count)) ? st : tuple_of(u, u->stack + first, count);
    case 0x85: return op_tuple_n(u, 1, "TUPLE1");
    case 0x86: return op_tuple_n(u, 2, "TUPLE2");
    case 0x87: return op_tuple_n(u, 3, "TUPLE3");
    case 's': {
        pk_obj *d = NULL;
        if ((st = pop(u, "SETITEM", &b)) || (st = pop(u, "SETITEM", &a)) || (st = peek(u, "SETITEM", &d))) return st;
        return set_item(u, d, a, b->kind == PK_NONE ? NULL : b);
    }
    case 'u': return op_setitems(u);
    case 'a':
        if ((st = pop(u, "APPEND", &b)) || (st = peek(u, "APPEND", &a))) return st;
        return append(u, a, b);
    case 'e': return op_appends(u);
    case '0': return pop(u, "POP", &a);
    case '1': return pop_mark(u, "POP_MARK", &first, &count);
    case '2': return (st = peek(u, "DUP", &a)) ? st : push(u, a);
    case 'c': return op_global(u);
    case 0x93: return op_stack_global(u);
    case 'R': return op_reduce(u);
    case 0x81: return op_newobj(u, 0);
    case 0x92: return op_newobj(u, 1);
    case 'b': return op_build(u);
    case 'Q': return op_persid(u);
    default: return fail(u, "unsupported pickle opcode 0x%02x at byte %zu", op, u->pos - 1);
    }
}

static wick_status unpickle(unpickler *u, pk_obj **root) {
    for (;;) {
        if (u->pos >= u->n) return fail(u, "truncated pickle: no STOP");
        unsigned op = u->s[u->pos++];
        if (op == '.') { /* STOP */
            if (u->top != 1) return fail(u, "corrupt pickle: STOP with %zu items on the stack", u->top);
            *root = u->stack[0];
            return WICK_OK;
        }
        wick_status st = step(u, op);
        if (st) return st;
    }
}

/* ---- the tree handed to the engine ---- */

static wick_status emit(unpickler *u, wk_ckpt *c, pk_obj *o, int depth, wk_ckpt_value **out);

static wick_status emit_pair(unpickler *u, wk_ckpt *c, wk_ckpt_value *t, wk_ckpt_value *k, pk_obj *v, int depth) {
    wk_ckpt_value *ev;
    wick_status st = emit(u, c, v, depth, &ev);
    if (st) return st;
    if (!k || wk_ckpt_table_add(c, t, k, ev)) return oom(u);
    return WICK_OK;
}

static wick_status emit_table(unpickler *u, wk_ckpt *c, pk_obj *o, int depth, wk_ckpt_value *t) {
    wick_status st = WICK_OK;
    if (o->u.seq.n > INT32_MAX / 2) return fail(u, "a container of more than %d items", INT32_MAX / 2);
    if (o->kind == PK_DICT || o->kind == PK_INSTANCE) {
        t->as.table.dict = o->kind == PK_DICT;
        for (int64_t i = 0; i + 1 < o->u.seq.n && !st; i += 2) {
            wk_ckpt_value *k;
            if (!(st = emit(u, c, o->u.seq.items[i], depth, &k))) st = emit_pair(u, c, t, k, o->u.seq.items[i + 1], depth);
        }
    } else if (o->kind == PK_GLOBAL || o->kind == PK_CLASS) { /* a class: {name = ..., kind = ...} */
        static const char *const kinds[] = {"storage", "call", "type"};
        const char *name = o->kind == PK_CLASS ? o->u.str.p : GLOBALS[o->flag].name;
        const char *kind = o->kind == PK_CLASS ? "class" : kinds[GLOBALS[o->flag].kind];
        if (wk_ckpt_table_add(c, t, wk_ckpt_string(c, "name", 4), wk_ckpt_string(c, name, strlen(name))) ||
            wk_ckpt_table_add(c, t, wk_ckpt_string(c, "kind", 4), wk_ckpt_string(c, kind, strlen(kind))))
            return oom(u);
    } else {
        for (int64_t i = 0; i < o->u.seq.n && !st; i++)
            st = emit_pair(u, c, t, wk_ckpt_number(c, (double)(i + 1)), o->u.seq.items[i], depth);
    }
    return st;
}

/* o as a tree value; each object once: what the memo shares stays shared, and a
 * container that holds itself holds its own value (ckpt.h: walks mark TABLEs). */
static wick_status emit(unpickler *u, wk_ckpt *c, pk_obj *o, int depth, wk_ckpt_value **out) {
    if (o->converted) {
        *out = o->converted;
        return WICK_OK;
    }
    if (depth > MAX_DEPTH) return fail(u, "values nested deeper than %d levels", MAX_DEPTH);
    wk_ckpt_value *v = NULL;
    switch (o->kind) {
    case PK_NONE: v = wk_ckpt_nil(c); break;
    case PK_BOOL: v = wk_ckpt_boolean(c, o->flag); break;
    case PK_NUM: v = wk_ckpt_number(c, o->u.num); break;
    case PK_STR: v = wk_ckpt_string(c, o->u.str.p, o->u.str.len); break;
    case PK_TENSOR: {
        const pk_tensor *t = o->u.tensor;
        v = wk_ckpt_tensor(c, t->storage, u->storages[t->storage].dtype, t->ndim, t->sizes, t->strides, t->offset);
        break;
    }
    default: v = wk_ckpt_table(c);
    }
    if (!v) return oom(u);
    o->converted = v;
    *out = v;
    return v->kind == WK_CKPT_TABLE ? emit_table(u, c, o, depth + 1, v) : WICK_OK;
}

/* ---- the archive ---- */

/* The <prefix>/data.pkl entry: exactly one, its prefix without a '/'. */
static wick_status find_pickle(const wk_zip *z, const wk_zip_entry **pkl) {
    static const char suffix[] = "/data.pkl";
    size_t sl = sizeof suffix - 1;
    *pkl = NULL;
    for (int64_t i = 0; i < z->n; i++) {
        const wk_zip_entry *e = &z->entries[i];
        if (e->name_len < sl || memcmp(e->name + e->name_len - sl, suffix, sl) || memchr(e->name, '/', e->name_len - sl))
            continue;
        if (*pkl) return wick_fail(WICK_ERR_IO, "%s: %s: the archive holds more than one data.pkl", z->who, z->path);
        *pkl = e;
    }
    if (!*pkl)
        return wick_fail(WICK_ERR_IO, "%s: %s: not a PyTorch checkpoint (the zip archive holds no <name>/data.pkl)", z->who,
                         z->path);
    return WICK_OK;
}

static wick_status check_byteorder(const wk_zip *z, const char *prefix, size_t plen) {
    char got[6], *name = malloc(plen + 10);
    if (!name) return wick_fail(WICK_ERR_OOM, "out of memory reading %s", z->path);
    memcpy(name, prefix, plen), memcpy(name + plen, "/byteorder", 10);
    const wk_zip_entry *bo = wk_zip_find(z, name, plen + 10);
    free(name);
    if (!bo) return WICK_OK;
    wick_status st = bo->size == 6 ? wk_zip_read(z, got, bo->offset, 6) : WICK_OK;
    if (st) return st;
    if (bo->size != 6 || memcmp(got, "little", 6))
        return wick_fail(WICK_ERR_IO,
                         "%s: %s: the checkpoint was saved big-endian; only little-endian checkpoints are supported",
                         z->who, z->path);
    return WICK_OK;
}

/* The checked pickle's bytes (the zip's CRC-32 always checked: it is small). */
static wick_status read_pickle(const wk_zip *z, const wk_zip_entry *e, unsigned char **out) {
    unsigned char *p = malloc((size_t)e->size + 1);
    if (!p) return wick_fail(WICK_ERR_OOM, "out of memory reading %s", z->path);
    wick_status st = wk_zip_read(z, p, e->offset, (size_t)e->size);
    p[e->size] = 0; /* its strings are (pointer, length); this only stops a stray %s */
    if (!st && wick_crc32(0, p, (size_t)e->size) != e->crc)
        st = wick_fail(WICK_ERR_IO, "%s: %s: corrupt zip archive (CRC-32 mismatch in '%s')", z->who, z->path, e->name);
    if (st) free(p);
    else *out = p;
    return st;
}

/* The storages into c, in the order the pickle named them, mapped and checked
 * against the zip's CRC-32 of each entry (unless verify is 0). */
static wick_status add_storages(unpickler *u, wk_ckpt *c, const wk_ckpt_source *src) {
    for (int i = 0; i < u->nstorages; i++) {
        const pk_storage *s = &u->storages[i];
        int k = wk_ckpt_add_storage(c, s->key, s->location, s->dtype, s->numel);
        if (k < 0) return oom(u);
        if (!s->entry) { /* a numpy array's bytes in the pickle: a copy (the zip's CRC-32 of data.pkl covered them) */
            wick_tensor *t;
            wick_status st = wick_empty(&t, 1, &s->numel, (wick_options){s->dtype, wick_cpu()});
            if (st) return st;
            if (s->numel) memcpy(wick_tensor_data(t), s->bytes, (size_t)s->numel * wick_dtype_size(s->dtype));
            c->storages[k].data = t;
            continue;
        }
        c->storages[k].file_offset = s->entry->offset;
        c->storages[k].crc = s->entry->crc; /* checked below (the zip's CRC-32, its own texts); crc_kind stays NONE */
    }
    wick_status st = wk_ckpt_map_storages(c, src);
    for (int i = 0; i < c->nstorages && !st && src->verify != 0; i++) {
        if (!u->storages[i].entry) continue;
        const wick_tensor *d = c->storages[i].data;
        size_t bytes = (size_t)c->storages[i].numel * wick_dtype_size(c->storages[i].dtype);
        if (wick_crc32(0, wick_tensor_data(d), bytes) != u->storages[i].entry->crc)
            st = fail(u, "corrupt zip archive (CRC-32 mismatch in storage '%s': the data is corrupt; wick.load(path, "
                         "{verify = false}) skips the check)",
                      u->storages[i].entry->name);
    }
    return st;
}

static void unpickler_free(unpickler *u) {
    free_objects(u);
    free(u->stack), free(u->marks), free(u->memo.keys), free(u->memo.vals), free(u->storage_of_entry);
    for (int i = 0; i < u->nstorages; i++) {
        free(u->storages[i].key), free(u->storages[i].location);
        if (u->storages[i].meta) wick_tensor_release(u->storages[i].meta);
    }
    free(u->storages);
}

static wick_status read_archive(wk_ckpt *c, const wk_ckpt_source *src, const wk_zip *z) {
    const wk_zip_entry *pe;
    unsigned char *pkl = NULL;
    wick_status st = find_pickle(z, &pe);
    size_t plen = pe ? pe->name_len - 9 : 0;
    if (!st) st = check_byteorder(z, pe->name, plen);
    if (!st) st = read_pickle(z, pe, &pkl);
    if (st) return st;
    unpickler u = {.who = src->who, .path = src->path, .objects = src->objects, .s = pkl, .n = (size_t)pe->size, .zip = z,
                   .prefix = pe->name, .prefix_len = plen};
    u.none.kind = PK_NONE;
    u.storage_of_entry = calloc((size_t)(z->n > 0 ? z->n : 1), sizeof *u.storage_of_entry);
    pk_obj *root = NULL;
    st = u.storage_of_entry ? unpickle(&u, &root) : oom(&u);
    if (!st) st = add_storages(&u, c, src);
    wk_ckpt_value *tree = NULL;
    if (!st) st = emit(&u, c, root, 0, &tree);
    if (!st) c->root = tree;
    if (!st) st = wk_ckpt_make_views(c, src);
    unpickler_free(&u);
    free(pkl);
    return st;
}

wick_status wk_ckpt_read_pytorch(wk_ckpt *c, const wk_ckpt_source *src) {
    c->format = WK_CKPT_PYTORCH;
    wk_zip z;
    wick_status st = wk_zip_open(&z, src->fd, src->size, src->who, src->path);
    if (st) return st;
    st = wk_zip_is_npz(&z) ? wk_ckpt_read_npz(c, src, &z) : read_archive(c, src, &z);
    wk_zip_close(&z);
    return st;
}
