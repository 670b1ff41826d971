/* Creation functions of the Lua binding: wick.zeros/ones/empty/rand/randn (and
 * their _like forms), full, tensor (from nested tables), arange, eye. */
#include "wick_lua.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define UPINT(i) ((int)lua_tointeger(L, lua_upvalueindex(i)))

typedef wick_status (*create_fn)(wick_tensor **, int, const int64_t *, wick_options);

static wick_status create_zeros(wick_tensor **o, int n, const int64_t *s, wick_options opt) {
    return wick_full(o, n, s, 0, opt);
}
static wick_status create_ones(wick_tensor **o, int n, const int64_t *s, wick_options opt) {
    return wick_full(o, n, s, 1, opt);
}

static const struct {
    const char *name;
    create_fn fn;
} creators[] = {{"empty", wick_empty}, {"zeros", create_zeros}, {"ones", create_ones},
                {"rand", wick_rand},   {"randn", wick_randn}};

/* wick.zeros(2, 3[, opts]) and friends; upvalue 1 picks the creator */
WL_FUNCTION(m_create) {
    int which = UPINT(1);
    char fn[32];
    snprintf(fn, sizeof fn, "wick.%s", creators[which].name);
    int opts = wl_trailing_options(L, 1);
    int64_t sizes[WICK_MAX_DIMS];
    int n = wl_sizes(L, 1, opts ? opts - 1 : lua_gettop(L), sizes, fn);
    wick_options opt = wl_default_options(L);
    int rg = wl_options(L, opts, &opt, fn);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, creators[which].fn(slot, n, sizes, opt));
    wl_set_requires_grad(L, *slot, rg);
    wl_account(L);
    return 1;
}

/* wick.zeros_like(t[, opts]) and friends */
WL_FUNCTION(m_create_like) {
    int which = UPINT(1);
    char fn[40];
    snprintf(fn, sizeof fn, "wick.%s_like", creators[which].name);
    wick_tensor *t = wl_checktensor(L, 1, fn, "input");
    wick_options opt = {wick_tensor_dtype(t), wick_tensor_device(t)};
    int rg = wl_options(L, lua_istable(L, 2) ? 2 : 0, &opt, fn);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, creators[which].fn(slot, wick_tensor_ndim(t), wick_tensor_sizes(t), opt));
    wl_set_requires_grad(L, *slot, rg);
    wl_account(L);
    return 1;
}

WL_FUNCTION(m_full) {
    int64_t sizes[WICK_MAX_DIMS];
    if (!lua_istable(L, 1)) wl_raise(L, "wick.full: expected a size table as argument 1, got %s", luaL_typename(L, 1));
    int n = wl_sizes(L, 1, 1, sizes, "wick.full");
    wick_scalar v;
    if (!wl_toscalar(L, 2, &v)) wl_raise(L, "wick.full: expected a number fill value, got %s", luaL_typename(L, 2));
    wick_options opt = wl_default_options(L);
    if (lua_type(L, 2) == LUA_TBOOLEAN) opt.dtype = WICK_BOOL;
    int rg = wl_options(L, lua_istable(L, 3) ? 3 : 0, &opt, "wick.full");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_full(slot, n, sizes, v.value, opt));
    wl_set_requires_grad(L, *slot, rg);
    wl_account(L);
    return 1;
}

WL_FUNCTION(m_full_like) {
    wick_tensor *t = wl_checktensor(L, 1, "wick.full_like", "input");
    wick_scalar v;
    if (!wl_toscalar(L, 2, &v)) wl_raise(L, "wick.full_like: expected a number fill value, got %s", luaL_typename(L, 2));
    wick_options opt = {wick_tensor_dtype(t), wick_tensor_device(t)};
    int rg = wl_options(L, lua_istable(L, 3) ? 3 : 0, &opt, "wick.full_like");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_full(slot, wick_tensor_ndim(t), wick_tensor_sizes(t), v.value, opt));
    wl_set_requires_grad(L, *slot, rg);
    return 1;
}

/* wick.tensor(nested tables or a number[, opts]) */
typedef struct {
    int ndim;
    int64_t sizes[WICK_MAX_DIMS];
    int all_bool, any_value;
    int tensor_dtype;             /* the promotion of the one-element tensors' dtypes; -1: none */
    int any_number, any_boolean;  /* Lua numbers, Lua booleans among the values */
    int any_fraction;             /* a Lua number that is not an integer */
} nested_shape;

static void nested_walk(lua_State *L, int idx, int depth, nested_shape *sh, double *values, int64_t *count,
                        char *path, size_t pathlen) {
    int t = lua_type(L, idx);
    wick_tensor *scalar = t == LUA_TUSERDATA && depth > 0 ? wl_totensor(L, idx) : NULL;
    if (scalar && wick_tensor_numel(scalar) != 1) /* torch.tensor([t0, n]) takes one-element tensors as numbers */
        wl_raise(L, "wick.tensor: only one-element tensors can be converted to numbers, found one of %lld elements "
                    "at %s (wick.stack joins tensors)",
                 (long long)wick_tensor_numel(scalar), path);
    if (t == LUA_TNUMBER || t == LUA_TBOOLEAN || scalar) {
        if (depth != sh->ndim)
            wl_raise(L, "wick.tensor: ragged nested table: expected a table of %lld elements at %s, found a %s",
                     (long long)sh->sizes[depth], pathlen ? path : "the top", luaL_typename(L, idx));
        if (values && scalar) wl_check(L, wick_item_double(scalar, &values[*count]));
        else if (values) values[*count] = t == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
        if (t != LUA_TBOOLEAN && !(scalar && wick_tensor_dtype(scalar) == WICK_BOOL)) sh->all_bool = 0;
        if (scalar) {
            wick_dtype d = wick_tensor_dtype(scalar);
            sh->tensor_dtype = sh->tensor_dtype < 0 ? (int)d : (int)wick_promote_types((wick_dtype)sh->tensor_dtype, d);
        } else {
            *(t == LUA_TBOOLEAN ? &sh->any_boolean : &sh->any_number) = 1;
            if (t == LUA_TNUMBER) {
                double v = lua_tonumber(L, idx);
                if (v != floor(v) || isinf(v)) sh->any_fraction = 1; /* (NaN too) */
            }
        }
        sh->any_value = 1;
        (*count)++;
        return;
    }
    if (t != LUA_TTABLE || wl_totensor(L, idx))
        wl_raise(L, "wick.tensor: expected numbers, booleans or nested tables, found a %s at %s", luaL_typename(L, idx),
                 pathlen ? path : "the top");
    int64_t n = (int64_t)lua_objlen(L, idx);
    if (!values) { /* a name past the array part ({size = {4}}): not data (looked at once, not walked) */
        if (n > 0) lua_pushinteger(L, (lua_Integer)n);
        else lua_pushnil(L);
        if (lua_next(L, idx)) {
            if (lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "n") != 0) /* (table.pack's n) */
                wl_raise(L, "wick.tensor: the table at %s has the key '%s': data is numbers, booleans or nested "
                            "arrays (a size goes to wick.zeros or wick.empty)",
                         pathlen ? path : "the top", lua_tostring(L, -2));
            lua_pop(L, 2);
        }
    }
    if (!values && depth == sh->ndim && !sh->any_value) { /* first descent (down to the first number) fixes the shape */
        if (sh->ndim >= WICK_MAX_DIMS) wl_raise(L, "wick.tensor: nesting deeper than %d levels", WICK_MAX_DIMS);
        sh->sizes[sh->ndim++] = n;
    } else if (depth >= sh->ndim) {
        wl_raise(L, "wick.tensor: ragged nested table: expected a number at %s, found a table of %lld elements",
                 pathlen ? path : "the top", (long long)n);
    } else if (sh->sizes[depth] != n) {
        wl_raise(L, "wick.tensor: ragged nested table: expected %lld elements at %s, found %lld",
                 depth < sh->ndim ? (long long)sh->sizes[depth] : 0LL, pathlen ? path : "the top", (long long)n);
    }
    for (int64_t i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, (int)i);
        size_t len = pathlen + (size_t)snprintf(path + pathlen, 256 - pathlen > 0 ? 256 - pathlen : 0, "[%lld]", (long long)i);
        if (len > 250) len = 250;
        nested_walk(L, lua_gettop(L), depth + 1, sh, values, count, path, len);
        path[pathlen] = '\0';
        lua_pop(L, 1);
    }
}

WL_FUNCTION(m_tensor) {
    wick_options opt = wl_default_options(L);
    int rg = wl_options(L, lua_istable(L, 2) ? 2 : 0, &opt, "wick.tensor");
    int explicit_dtype = 0;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "dtype");
        explicit_dtype = !lua_isnil(L, -1);
        lua_pop(L, 1);
    }
    wick_tensor *src = wl_totensor(L, 1);
    if (src) { /* wick.tensor(t) copies, like torch.tensor(t): a new leaf, without t's history (SB3's
                * th.tensor(array) of a tensor, a constant target) */
        if (!explicit_dtype) opt.dtype = wick_tensor_dtype(src);
        wick_tensor **slot = wl_new_slot(L);
        wick_tensor *detached, *tmp = NULL;
        wl_check(L, wick_detach(&detached, src));
        wick_status st = wick_clone(&tmp, detached);
        wick_tensor_release(detached);
        if (!st) st = wick_to(slot, tmp, opt);
        wick_tensor_release(tmp);
        wl_check(L, st);
        wl_set_requires_grad(L, *slot, rg);
        return 1;
    }
    nested_shape sh = {0, {0}, 1, 0, -1, 0, 0, 0};
    char path[256] = "";
    int64_t count = 0;
    nested_walk(L, 1, 0, &sh, NULL, &count, path, 0);
    /* the values go into a userdata buffer, so nothing leaks if a check raises */
    double *values = lua_newuserdata(L, (size_t)(count ? count : 1) * sizeof(double));
    int64_t filled = 0;
    nested_walk(L, 1, 0, &sh, values, &filled, path, 0);
    if (!explicit_dtype && sh.any_value && sh.all_bool) opt.dtype = WICK_BOOL;
    else if (!explicit_dtype && sh.tensor_dtype >= 0) { /* torch.tensor([t0, t1]): the elements' promoted dtype */
        wick_dtype d = (wick_dtype)sh.tensor_dtype;
        /* beside tensors, an integer Lua number is Python's int (torch.tensor([0, l[0], l[1] % 26]) is int64,
           Qwen3-ASR's cu_seqlens), another one Python's float (the default dtype) */
        if (sh.any_number) d = wick_promote_types(d, sh.any_fraction ? opt.dtype : WICK_INT64);
        if (sh.any_boolean) d = wick_promote_types(d, WICK_BOOL);
        opt.dtype = d;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_from_doubles(slot, sh.ndim, sh.sizes, values, opt));
    wl_set_requires_grad(L, *slot, rg);
    return 1;
}

WL_FUNCTION(m_arange) {
    int opts = lua_istable(L, lua_gettop(L)) ? lua_gettop(L) : 0;
    int nargs = opts ? opts - 1 : lua_gettop(L);
    double a[3];
    for (int i = 0; i < nargs && i < 3; i++) {
        if (lua_type(L, i + 1) != LUA_TNUMBER) wl_raise(L, "wick.arange: expected numbers, got %s", luaL_typename(L, i + 1));
        a[i] = lua_tonumber(L, i + 1);
    }
    double start = 0, stop, step = 1;
    if (nargs == 1) stop = a[0];
    else if (nargs == 2) start = a[0], stop = a[1];
    else if (nargs == 3) start = a[0], stop = a[1], step = a[2];
    else return wl_raise(L, "wick.arange: expected ([start, ]stop[, step][, options])");
    wick_options opt = wl_default_options(L);
    int rg = wl_options(L, opts, &opt, "wick.arange");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_arange(slot, start, stop, step, opt));
    wl_set_requires_grad(L, *slot, rg);
    return 1;
}

WL_FUNCTION(m_eye) {
    int64_t n = wl_checkint(L, 1, "wick.eye", "n"), m = lua_type(L, 2) == LUA_TNUMBER ? wl_checkint(L, 2, "wick.eye", "m") : -1;
    wick_options opt = wl_default_options(L);
    int rg = wl_options(L, wl_trailing_options(L, 2), &opt, "wick.eye");
    if (n < 0) wl_raise(L, "wick.eye: n must be non-negative, got %lld", (long long)n);
    if (lua_type(L, 2) == LUA_TNUMBER && m < 0) wl_raise(L, "wick.eye: m must be non-negative, got %lld", (long long)m);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_eye(slot, n, m, opt));
    wl_set_requires_grad(L, *slot, rg);
    return 1;
}

static const luaL_Reg creation_fns[] = {
    {"full", m_full},
    {"full_like", m_full_like},
    {"tensor", m_tensor},
    {"arange", m_arange},
    {"eye", m_eye},
    {NULL, NULL}};

/* Fills the module table at -1. */
void wl_open_creation(lua_State *L) {
    luaL_register(L, NULL, creation_fns);
    wl_open_defaults(L);
    for (int i = 0; i < (int)(sizeof creators / sizeof *creators); i++) {
        char like[32];
        lua_pushinteger(L, i);
        lua_pushcclosure(L, m_create, 1);
        lua_setfield(L, -2, creators[i].name);
        snprintf(like, sizeof like, "%s_like", creators[i].name);
        lua_pushinteger(L, i);
        lua_pushcclosure(L, m_create_like, 1);
        lua_setfield(L, -2, like);
    }
}
