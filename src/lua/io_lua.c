/* File bindings: checkpoints through the engine (src/io/ckpt.h: its value tree
 * to and from Lua values) for wick.save/wick.load (lua/wick/serialize.lua),
 * CRCs (the specs' test vectors) and IDX files (wick.data). */
#include "wick_lua.h"
#include "../io/ckpt.h"
#include "../io/crc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- checkpoints: the engine's value tree <-> Lua values ---- */

#define CKPT_MT "wick.checkpoint"
#define SAVE_DEPTH 200

WL_FUNCTION(ckpt_gc) {
    wk_ckpt **p = luaL_checkudata(L, 1, CKPT_MT);
    wk_ckpt_free(*p);
    *p = NULL;
    return 0;
}

/* A userdata owning a checkpoint (freed by the collector, also after an error). */
static wk_ckpt **push_ckpt(lua_State *L) {
    wk_ckpt **p = lua_newuserdata(L, sizeof *p);
    *p = NULL;
    if (luaL_newmetatable(L, CKPT_MT)) {
        lua_pushcfunction(L, ckpt_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return p;
}

static void push_tensor(lua_State *L, wick_tensor *t) {
    wick_tensor **slot = wl_new_slot(L);
    wick_tensor_retain(t);
    *slot = t;
}

/* core.ckpt_load(path, verify, mmap, objects) -> checkpoint, {storage tensor, ...}, {saved device, ...}
 * (verify: nil checks the checksums the file has, true requires them, false
 * skips; mmap: true maps the file, else its storages are read; objects: true
 * loads a PyTorch pickle's other instances as tables, wk_ckpt_read_options) */
WL_FUNCTION(m_ckpt_load) {
    const char *path = luaL_checkstring(L, 1);
    wk_ckpt_read_options o = {"wick.load", lua_isnil(L, 2) ? -1 : lua_toboolean(L, 2), 0, lua_toboolean(L, 3),
                              lua_toboolean(L, 4)};
    wk_ckpt **p = push_ckpt(L);
    wl_check(L, wk_ckpt_read(p, path, &o));
    wk_ckpt *c = *p;
    lua_createtable(L, c->nstorages, 0);
    lua_createtable(L, c->nstorages, 0);
    for (int i = 0; i < c->nstorages; i++) {
        push_tensor(L, c->storages[i].data);
        lua_rawseti(L, -3, i + 1);
        lua_pushstring(L, c->storages[i].device);
        lua_rawseti(L, -2, i + 1);
    }
    wl_check(L, WICK_OK);
    return 3;
}

typedef struct {
    const wk_ckpt *c;
    int placed; /* stack index: {placed storage, ...} */
    int memo;   /* stack index: TABLE or TENSOR value (light userdata) -> its Lua value */
    int orders; /* stack index: Lua table -> its string keys in the file's order */
} tree_ctx;

static void push_value(lua_State *L, const tree_ctx *t, const wk_ckpt_value *v);

/* Each TABLE value becomes one Lua table, made before its pairs are converted,
 * so a table reached twice (or from inside itself: a pickle's memo) is shared. */
static void push_table(lua_State *L, const tree_ctx *t, const wk_ckpt_value *v) {
    lua_pushlightuserdata(L, (void *)v);
    lua_rawget(L, t->memo);
    if (!lua_isnil(L, -1)) return;
    lua_pop(L, 1);
    int narr = 0, n = v->as.table.n;
    while (narr < n && v->as.table.pairs[narr].key->kind == WK_CKPT_NUMBER &&
           v->as.table.pairs[narr].key->as.number == narr + 1)
        narr++;
    lua_createtable(L, narr, n - narr);
    lua_pushlightuserdata(L, (void *)v);
    lua_pushvalue(L, -2);
    lua_rawset(L, t->memo);
    int tbl = lua_gettop(L), names = 0;
    for (int i = 0; i < n; i++) {
        const wk_ckpt_pair *pr = &v->as.table.pairs[i];
        const wk_ckpt_value *k = pr->key;
        if (k->kind == WK_CKPT_NIL || (k->kind == WK_CKPT_NUMBER && isnan(k->as.number))) continue;
        push_value(L, t, k);
        push_value(L, t, pr->value); /* NIL: assigning nil removes an earlier pair's key */
        lua_rawset(L, tbl);
        /* the order a dict's keys come in (an OrderedDict's): its names, and its numbers unless
         * the table is a list (keys 1 to n; an optimizer's state {0: ..., 1: ...} is a dict) */
        if (k->kind == WK_CKPT_STRING || (k->kind == WK_CKPT_NUMBER && narr < n)) {
            if (!names) {
                lua_newtable(L);
                names = lua_gettop(L);
            }
            push_value(L, t, k);
            lua_rawseti(L, names, (int)lua_objlen(L, names) + 1);
        }
    }
    if (!names && v->as.table.dict && n == 0) { /* an empty dict: an OrderedDict still */
        lua_newtable(L);
        names = lua_gettop(L);
    }
    if (names) {
        lua_pushvalue(L, tbl);
        lua_pushvalue(L, names);
        lua_rawset(L, t->orders);
        lua_settop(L, tbl);
    }
}

/* A tensor: the reader's view when its storage stayed where it was read, else
 * the same view of the placed storage (placed[storage + 1]). */
static void push_view(lua_State *L, const tree_ctx *t, const wk_ckpt_value *v) {
    const wk_ckpt *c = t->c;
    int si = v->as.tensor.storage;
    lua_rawgeti(L, t->placed, si + 1);
    wick_tensor *base = wl_totensor(L, -1);
    if (!base) wl_raise(L, "wick.load: map_location gave no tensor for storage '%s'", c->storages[si].name);
    if (base == c->storages[si].data && v->as.tensor.view) {
        lua_pop(L, 1);
        push_tensor(L, v->as.tensor.view);
        return;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_as_strided(slot, base, v->as.tensor.ndim, v->as.tensor.sizes, v->as.tensor.strides,
                                v->as.tensor.offset));
    lua_remove(L, -2);
}

/* A whole number as an integer (Lua 5.4: what tonumber gave the Lua reader for
 * the "%.17g" text, except that -0 keeps its sign), anything else as a float. */
static void push_number(lua_State *L, double d) {
    if (d == floor(d) && fabs(d) < 1e17 && !(d == 0 && signbit(d))) lua_pushinteger(L, (lua_Integer)d);
    else lua_pushnumber(L, d);
}

static void push_value(lua_State *L, const tree_ctx *t, const wk_ckpt_value *v) {
    if (!lua_checkstack(L, 8)) wl_raise(L, "wick.load: the tree nests too deep to convert");
    switch (v->kind) {
    case WK_CKPT_NIL: lua_pushnil(L); break;
    case WK_CKPT_NUMBER: push_number(L, v->as.number); break;
    case WK_CKPT_STRING: lua_pushlstring(L, v->as.string.bytes, v->as.string.len); break;
    case WK_CKPT_BOOLEAN: lua_pushboolean(L, v->as.boolean); break;
    case WK_CKPT_TABLE: push_table(L, t, v); break;
    case WK_CKPT_TENSOR: /* one Lua tensor per value, however often the tree reaches it */
        lua_pushlightuserdata(L, (void *)v);
        lua_rawget(L, t->memo);
        if (!lua_isnil(L, -1)) break;
        lua_pop(L, 1);
        push_view(L, t, v);
        lua_pushlightuserdata(L, (void *)v);
        lua_pushvalue(L, -2);
        lua_rawset(L, t->memo);
        break;
    }
}

/* core.ckpt_tree(checkpoint, {placed storage, ...}) -> the value, and a table of
 * each of its tables that has string keys -> those keys in the file's order */
WL_FUNCTION(m_ckpt_tree) {
    wk_ckpt **p = luaL_checkudata(L, 1, CKPT_MT);
    luaL_checktype(L, 2, LUA_TTABLE);
    if (!*p || !(*p)->root) return 0;
    lua_settop(L, 2);
    lua_newtable(L); /* 3: memo */
    lua_newtable(L); /* 4: orders */
    tree_ctx t = {*p, 2, 3, 4};
    push_value(L, &t, (*p)->root);
    wl_check(L, WICK_OK);
    lua_pushvalue(L, 4);
    return 2;
}

/* ---- saving: Lua values -> the tree ---- */

typedef struct {
    lua_State *L;
    wk_ckpt *c;
    int location; /* stack index of the location function, 0 when none */
    int seen;     /* stack index: tables on the current path */
    int ids;      /* stack index: storage id (light userdata) -> storage index + 1 */
    int ranks;    /* stack index: an OrderedDict -> {name = its place}, 0 when none */
} saver;

static wk_ckpt_value *need(saver *s, wk_ckpt_value *v) {
    if (!v) wl_raise(s->L, "wick.save: out of memory");
    return v;
}

/* The storage that t views (added once however many tensors view it): the
 * whole storage, on the CPU, with its device (or the location option's). */
static int storage_of(saver *s, int idx, wick_tensor *t) {
    lua_State *L = s->L;
    lua_pushlightuserdata(L, (void *)wick_tensor_storage_id(t));
    lua_rawget(L, s->ids);
    int known = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (known) return known - 1;
    char dev[64];
    wick_device_format(wick_tensor_device(t), dev, sizeof dev);
    if (s->location) {
        lua_pushvalue(L, s->location);
        lua_pushvalue(L, idx);
        lua_call(L, 1, 1);
        wick_device d;
        if (lua_type(L, -1) != LUA_TSTRING || wick_device_parse(lua_tostring(L, -1), &d) != WICK_OK) {
            lua_getglobal(L, "tostring");
            lua_pushvalue(L, -2);
            lua_call(L, 1, 1);
            wl_raise(L, "wick.save: the location option gave '%s', not a device", lua_tostring(L, -1));
        }
        wick_device_format(d, dev, sizeof dev);
        lua_pop(L, 1);
    }
    int64_t numel = wick_storage_numel(t), one = 1;
    wick_tensor *d = NULL, *whole = NULL, *host = NULL;
    wl_check(L, wick_detach(&d, t));
    wick_status st = wick_as_strided(&whole, d, 1, &numel, &one, 0);
    wick_tensor_release(d);
    if (!st) {
        wick_options o = wick_default_options();
        o.dtype = wick_tensor_dtype(t), o.device = wick_cpu();
        st = wick_to(&host, whole, o);
        wick_tensor_release(whole);
    }
    wl_check(L, st);
    char name[24];
    snprintf(name, sizeof name, "s%d", s->c->nstorages + 1);
    int k = wk_ckpt_add_storage(s->c, name, dev, wick_tensor_dtype(t), numel);
    if (k < 0) {
        wick_tensor_release(host);
        wl_raise(L, "wick.save: out of memory");
    }
    s->c->storages[k].data = host;
    lua_pushlightuserdata(L, (void *)wick_tensor_storage_id(t));
    lua_pushinteger(L, k + 1);
    lua_rawset(L, s->ids);
    return k;
}

typedef struct {
    int is_number;
    double number;
    const char *str;
    size_t len;
    double rank; /* its place in an OrderedDict's order, 0 when none */
} save_key;

static int by_key(const void *pa, const void *pb) {
    const save_key *a = pa, *b = pb;
    if (a->rank != b->rank) return a->rank == 0 ? 1 : b->rank == 0 ? -1 : a->rank < b->rank ? -1 : 1;
    if (a->is_number != b->is_number) return a->is_number ? -1 : 1;
    if (a->is_number) return a->number < b->number ? -1 : a->number > b->number;
    size_t n = a->len < b->len ? a->len : b->len;
    int r = memcmp(a->str, b->str, n);
    return r ? r : a->len < b->len ? -1 : a->len > b->len;
}

static wk_ckpt_value *save_value(saver *s, int idx, int depth);

static wk_ckpt_value *save_table(saver *s, int idx, int depth) {
    lua_State *L = s->L;
    lua_pushliteral(L, "_fields");
    lua_rawget(L, idx);
    if (!lua_isnil(L, -1)) wl_raise(L, "wick.save: cannot save a Module object; save model:state_dict() instead");
    lua_pop(L, 1);
    lua_pushvalue(L, idx);
    lua_rawget(L, s->seen);
    if (!lua_isnil(L, -1)) wl_raise(L, "wick.save: the table contains itself (a cycle); save a tree");
    lua_pop(L, 1);
    if (depth > SAVE_DEPTH) wl_raise(L, "wick.save: the value nests tables deeper than %d levels", SAVE_DEPTH);
    lua_pushvalue(L, idx);
    lua_pushboolean(L, 1);
    lua_rawset(L, s->seen);
    /* the keys, sorted: an OrderedDict's in its order, then numbers, then strings (as bytes) */
    int ranks = 0;
    if (s->ranks) {
        lua_pushvalue(L, idx);
        lua_rawget(L, s->ranks);
        if (lua_istable(L, -1)) ranks = lua_gettop(L);
        else lua_pop(L, 1);
    }
    size_t n = 0, cap = 16;
    save_key *keys = lua_newuserdata(L, cap * sizeof *keys); /* collected with the stack */
    int keys_at = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        int kt = lua_type(L, -2);
        if (kt != LUA_TSTRING && kt != LUA_TNUMBER)
            wl_raise(L, "wick.save: table keys must be strings or numbers, got a %s", lua_typename(L, kt));
        if (n == cap) {
            save_key *more = lua_newuserdata(L, 2 * cap * sizeof *more);
            memcpy(more, keys, n * sizeof *keys);
            lua_replace(L, keys_at);
            keys = more, cap *= 2;
        }
        save_key *k = &keys[n++];
        k->is_number = kt == LUA_TNUMBER;
        if (k->is_number) k->number = lua_tonumber(L, -2), k->str = NULL, k->len = 0;
        else k->str = lua_tolstring(L, -2, &k->len); /* the key stays in the table while we walk */
        k->rank = 0;
        if (ranks) {
            lua_pushvalue(L, -2);
            lua_rawget(L, ranks);
            if (lua_type(L, -1) == LUA_TNUMBER) k->rank = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    qsort(keys, n, sizeof *keys, by_key);
    wk_ckpt_value *t = need(s, wk_ckpt_table(s->c));
    t->as.table.dict = ranks != 0; /* an OrderedDict, also an empty one */
    for (size_t i = 0; i < n; i++) {
        wk_ckpt_value *key;
        if (keys[i].is_number) {
            key = need(s, wk_ckpt_number(s->c, keys[i].number));
            lua_pushnumber(L, keys[i].number);
        } else {
            key = need(s, wk_ckpt_string(s->c, keys[i].str, keys[i].len));
            lua_pushlstring(L, keys[i].str, keys[i].len);
        }
        lua_rawget(L, idx);
        wk_ckpt_value *v = save_value(s, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
        if (wk_ckpt_table_add(s->c, t, key, v)) wl_raise(L, "wick.save: out of memory");
    }
    lua_settop(L, keys_at - 1 - (ranks != 0));
    lua_pushvalue(L, idx);
    lua_pushnil(L);
    lua_rawset(L, s->seen);
    return t;
}

static wk_ckpt_value *save_value(saver *s, int idx, int depth) {
    lua_State *L = s->L;
    luaL_checkstack(L, 16, "wick.save: a value too deep");
    wick_tensor *t = wl_totensor(L, idx);
    if (t) {
        if (wick_tensor_device(t).type == WICK_META) wl_raise(L, "wick.save: a meta tensor has no data to save");
        int k = storage_of(s, idx, t);
        return need(s, wk_ckpt_tensor(s->c, k, wick_tensor_dtype(t), wick_tensor_ndim(t), wick_tensor_sizes(t),
                                      wick_tensor_strides(t), wick_tensor_offset(t)));
    }
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER: return need(s, wk_ckpt_number(s->c, lua_tonumber(L, idx)));
    case LUA_TBOOLEAN: return need(s, wk_ckpt_boolean(s->c, lua_toboolean(L, idx)));
    case LUA_TSTRING: {
        size_t len;
        const char *str = lua_tolstring(L, idx, &len);
        return need(s, wk_ckpt_string(s->c, str, len));
    }
    case LUA_TTABLE: return save_table(s, idx, depth);
    default:
        wl_raise(L, "wick.save: cannot save a %s (tensors, tables, numbers, strings and booleans can be saved)",
                 luaL_typename(L, idx));
    }
    return NULL;
}

/* core.ckpt_save(path, value[, location function[, ranks]]): wick.save's file; ranks maps
 * each OrderedDict in value to {name = its place}, the order its pairs are written in */
WL_FUNCTION(m_ckpt_save) {
    const char *path = luaL_checkstring(L, 1);
    lua_settop(L, 4);
    wk_ckpt **p = push_ckpt(L);
    *p = wk_ckpt_new(WK_CKPT_WICK);
    if (!*p) wl_raise(L, "wick.save: out of memory");
    lua_newtable(L);
    lua_newtable(L);
    saver s = {L, *p, lua_isnil(L, 3) ? 0 : 3, lua_gettop(L) - 1, lua_gettop(L), lua_istable(L, 4) ? 4 : 0};
    (*p)->root = save_value(&s, 2, 0);
    wl_check(L, wk_ckpt_write(path, *p, "wick.save", 1));
    return 0;
}

/* core.ckpt_save_flat(path, {name = tensor}): wick.save_safetensors's file, each
 * tensor as its own contiguous entry */
WL_FUNCTION(m_ckpt_save_flat) {
    const char *path = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    wk_ckpt **p = push_ckpt(L);
    wk_ckpt *c = *p = wk_ckpt_new(WK_CKPT_SAFETENSORS);
    if (!c || !(c->root = wk_ckpt_table(c))) wl_raise(L, "wick.save_safetensors: out of memory");
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        wick_tensor *t = lua_type(L, -2) == LUA_TSTRING ? wl_totensor(L, -1) : NULL;
        if (!t) wl_raise(L, "wick.save_safetensors: expected a flat table of name -> tensor");
        wick_tensor *d = NULL, *h = NULL;
        wl_check(L, wick_detach(&d, t));
        wick_options o = wick_default_options();
        o.dtype = wick_tensor_dtype(t), o.device = wick_cpu();
        wick_status st = wick_to(&h, d, o);
        wick_tensor_release(d);
        /* an entry holds exactly the tensor's elements: a storage of its own */
        if (!st && (!wick_tensor_is_contiguous(h) || wick_tensor_offset(h) != 0 ||
                    wick_storage_numel(h) != wick_tensor_numel(h))) {
            wick_tensor *copy = NULL;
            st = wick_clone(&copy, h);
            wick_tensor_release(h);
            h = copy;
        }
        wl_check(L, st);
        size_t len;
        const char *name = lua_tolstring(L, -2, &len);
        int k = wk_ckpt_add_storage(c, name, "cpu", wick_tensor_dtype(h), wick_tensor_numel(h));
        if (k < 0) {
            wick_tensor_release(h);
            wl_raise(L, "wick.save_safetensors: out of memory");
        }
        c->storages[k].data = h;
        wk_ckpt_value *key = wk_ckpt_string(c, name, len);
        wk_ckpt_value *v = wk_ckpt_tensor(c, k, wick_tensor_dtype(h), wick_tensor_ndim(h), wick_tensor_sizes(h),
                                          wick_tensor_strides(h), 0);
        if (!key || !v || wk_ckpt_table_add(c, c->root, key, v)) wl_raise(L, "wick.save_safetensors: out of memory");
        lua_pop(L, 1);
    }
    wl_check(L, wk_ckpt_write(path, c, "wick.save_safetensors", 1));
    return 0;
}

WL_FUNCTION(m_read_idx) {
    const char *path = luaL_checkstring(L, 1);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_read_idx(slot, path));
    return 1;
}

/* core.from_bytes(s, dtype, sizes): a CPU tensor holding a copy of the bytes. */
WL_FUNCTION(m_from_bytes) {
    size_t len;
    const char *bytes = luaL_checklstring(L, 1, &len);
    wick_dtype dtype = wl_dtype(L, 2, "from_bytes");
    int64_t sizes[WICK_MAX_DIMS];
    if (!lua_istable(L, 3)) wl_raise(L, "from_bytes: expected a size table");
    int n = wl_sizes(L, 3, 3, sizes, "from_bytes");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_empty(slot, n, sizes, (wick_options){dtype, {WICK_CPU, -1}}));
    size_t want = (size_t)wick_tensor_numel(*slot) * wick_dtype_size(dtype);
    if (want != len) wl_raise(L, "from_bytes: %zu bytes do not make a %s tensor of %lld elements", len,
                              wick_dtype_name(dtype), (long long)wick_tensor_numel(*slot));
    memcpy(wick_tensor_data(*slot), bytes, len);
    return 1;
}

/* core.to_bytes(t): the bytes of a contiguous CPU tensor's elements, as a string */
WL_FUNCTION(m_to_bytes) {
    wick_tensor *a = wl_checktensor(L, 1, "tobytes", "tensor");
    if (wick_tensor_device(a).type != WICK_CPU || !wick_tensor_is_contiguous(a))
        wl_raise(L, "tobytes: expected a contiguous CPU tensor");
    size_t n = (size_t)wick_tensor_numel(a) * wick_dtype_size(wick_tensor_dtype(a));
    lua_pushlstring(L, n ? (const char *)wick_tensor_data(a) : "", n);
    return 1;
}

/* core.storage_crc32(t[, "crc32c"]): zlib's CRC-32 (or CRC-32C) of every byte
 * of t's CPU storage */
WL_FUNCTION(m_storage_crc32) {
    wick_tensor *a = wl_checktensor(L, 1, "storage_crc32", "tensor");
    if (wick_tensor_device(a).type != WICK_CPU) wl_raise(L, "storage_crc32: the tensor must be on the CPU");
    int castagnoli = lua_isstring(L, 2) && strcmp(lua_tostring(L, 2), "crc32c") == 0;
    size_t es = wick_dtype_size(wick_tensor_dtype(a));
    const unsigned char *p = (const unsigned char *)wick_tensor_data(a) - wick_tensor_offset(a) * (int64_t)es;
    size_t n = (size_t)wick_storage_numel(a) * es;
    wl_pushint64(L, castagnoli ? wick_crc32c(0, p, n) : wick_crc32(0, p, n));
    return 1;
}

/* core.crc32c(s[, "portable"]): CRC-32C of a string, by the table when asked
 * (the test vectors of both paths); second result: whether SSE4.2 is used */
WL_FUNCTION(m_crc32c) {
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    int portable = lua_isstring(L, 2) && strcmp(lua_tostring(L, 2), "portable") == 0;
    wl_pushint64(L, wk_crc32c_using(portable ? WK_CRC_PORTABLE : WK_CRC_AUTO, 0, s, n));
    lua_pushboolean(L, !portable && wk_crc32c_has_sse42());
    return 2;
}

WL_FUNCTION(m_storage_numel) {
    wl_pushint64(L, wick_storage_numel(wl_checktensor(L, 1, "storage_numel", "tensor")));
    return 1;
}

static const luaL_Reg io_fns[] = {
    {"ckpt_load", m_ckpt_load},
    {"ckpt_tree", m_ckpt_tree},
    {"ckpt_save", m_ckpt_save},
    {"ckpt_save_flat", m_ckpt_save_flat},
    {"read_idx", m_read_idx},
    {"from_bytes", m_from_bytes},
    {"to_bytes", m_to_bytes},
    {"storage_numel", m_storage_numel},
    {"storage_crc32", m_storage_crc32},
    {"crc32c", m_crc32c},
    {NULL, NULL}};

void wl_open_io(lua_State *L) { luaL_register(L, NULL, io_fns); }
