/* The binding of sort and the scans (src/core/sort.c): t:sort, t:cumsum,
 * t:cumprod, and core._sort_plan (the CUDA sort's launch plan, for its test).
 * The ops written over these (argsort, topk, multinomial, ...) are Lua, in
 * lua/wick/ops.lua. Indices are 1-based on the Lua side. */
#include "wick_lua.h"

#include "../cuda/cuda_sort_plan.h"

#include <string.h>

/* The options table at idx may hold only the keys of `allowed` (NULL-ended). */
static void only_keys(lua_State *L, int idx, const char *fn, const char *const *allowed) {
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_pop(L, 1);
        int ok = 0;
        if (lua_type(L, -1) == LUA_TSTRING)
            for (int i = 0; allowed[i] && !ok; i++) ok = strcmp(lua_tostring(L, -1), allowed[i]) == 0;
        if (!ok) {
            luaL_Buffer b;
            luaL_buffinit(L, &b);
            for (int i = 0; allowed[i]; i++) {
                if (i) luaL_addstring(&b, ", ");
                luaL_addstring(&b, allowed[i]);
            }
            luaL_pushresult(&b);
            const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2);
            wl_raise(L, "%s: unknown option '%s' (expected %s)", fn, key, lua_tostring(L, -1));
        }
    }
}

static int opt_bool(lua_State *L, int idx, const char *fn, const char *what, int dflt) {
    if (lua_isnoneornil(L, idx)) return dflt;
    if (lua_type(L, idx) != LUA_TBOOLEAN)
        wl_raise(L, "%s: expected a boolean for argument '%s', got %s", fn, what, luaL_typename(L, idx));
    return lua_toboolean(L, idx);
}

/* t:sort([dim = -1[, descending = false[, stable]]]) or t:sort({dim =, descending =, stable =}):
 * values, indices (int64, 1-based). The sort is always stable. */
static int t_sort(lua_State *L) {
    wick_tensor *a = wl_checktensor(L, 1, "sort", "self");
    int dim = -1, descending = 0;
    if (lua_istable(L, 2) && !wl_totensor(L, 2)) {
        static const char *const keys[] = {"dim", "descending", "stable", NULL};
        only_keys(L, 2, "sort", keys);
        lua_getfield(L, 2, "dim");
        if (!lua_isnil(L, -1)) dim = wl_dim(L, lua_gettop(L), "sort");
        lua_getfield(L, 2, "descending");
        descending = opt_bool(L, lua_gettop(L), "sort", "descending", 0);
        lua_getfield(L, 2, "stable");
        opt_bool(L, lua_gettop(L), "sort", "stable", 1);
    } else {
        if (lua_type(L, 2) == LUA_TBOOLEAN) { /* t:sort(true): PyTorch's sort(descending=True) positionally is dim first */
            wl_raise(L, "sort: expected a dimension for argument 'dim', got boolean (use t:sort(dim, descending) or t:sort({descending = true}))");
        }
        if (!lua_isnoneornil(L, 2)) dim = wl_dim(L, 2, "sort");
        descending = opt_bool(L, 3, "sort", "descending", 0);
        opt_bool(L, 4, "sort", "stable", 1);
    }
    wick_tensor **values = wl_new_slot(L);
    wick_tensor **zero_based = wl_new_slot(L);
    wl_check(L, wick_sort(values, zero_based, a, dim, descending));
    /* out of place: the autograd record keeps the 0-based indices */
    wick_tensor **indices = wl_new_slot(L);
    wl_check(L, wick_binary_scalar(indices, WICK_ADD, *zero_based, (wick_scalar){1, 1}, 0));
    lua_remove(L, -2);
    return 2;
}

/* t:_topk(k, dim, largest): values, indices (1-based); the arguments are
 * checked by Tensor.topk (lua/wick/ops.lua) */
static int t_topk(lua_State *L) {
    wick_tensor *a = wl_checktensor(L, 1, "topk", "self");
    int64_t k = wl_checkint(L, 2, "topk", "k");
    int dim = wl_dim(L, 3, "topk");
    int largest = lua_toboolean(L, 4);
    wick_tensor **values = wl_new_slot(L);
    wick_tensor **zero_based = wl_new_slot(L);
    wl_check(L, wick_topk(values, zero_based, a, k, dim, largest));
    wick_tensor **indices = wl_new_slot(L);
    wl_check(L, wick_binary_scalar(indices, WICK_ADD, *zero_based, (wick_scalar){1, 1}, 0));
    lua_remove(L, -2);
    return 2;
}

/* t:cumsum(dim[, {dtype =}]), t:cumprod(dim[, {dtype =}]) */
static int t_scan(lua_State *L) {
    int prod = (int)lua_tointeger(L, lua_upvalueindex(1));
    const char *fn = prod ? "cumprod" : "cumsum";
    wick_tensor *a = wl_checktensor(L, 1, fn, "self");
    int dim, dtype = -1;
    if (lua_istable(L, 2) && !wl_totensor(L, 2)) { /* t:cumsum({dim =, dtype =}) */
        lua_settop(L, 2);
        lua_pushvalue(L, 2);
        lua_getfield(L, 2, "dim");
        lua_replace(L, 2);
        lua_insert(L, 3); /* the options table */
        lua_settop(L, 3);
    }
    if (lua_isnoneornil(L, 2)) wl_raise(L, "%s: missing argument 'dim' (PyTorch's %s needs it too)", fn, fn);
    dim = wl_dim(L, 2, fn);
    if (!lua_isnoneornil(L, 3)) {
        if (lua_type(L, 3) == LUA_TSTRING) {
            dtype = (int)wl_dtype(L, 3, fn);
        } else {
            if (!lua_istable(L, 3)) wl_raise(L, "%s: expected an options table, got %s", fn, luaL_typename(L, 3));
            static const char *const keys[] = {"dtype", "dim", NULL};
            only_keys(L, 3, fn, keys);
            lua_getfield(L, 3, "dtype");
            if (!lua_isnil(L, -1)) dtype = (int)wl_dtype(L, lua_gettop(L), fn);
        }
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, prod ? wick_cumprod(slot, a, dim, dtype) : wick_cumsum(slot, a, dim, dtype));
    return 1;
}

/* core._sort_plan(n, key_bytes[, lines]): the CUDA sort's plan for lines of n,
 * and with `lines` the scan's kernel (tests). */
static int m_sort_plan(lua_State *L) {
    int64_t n = wl_checkint(L, 1, "_sort_plan", "n");
    int64_t key = wl_checkint(L, 2, "_sort_plan", "key_bytes");
    int has_lines = !lua_isnoneornil(L, 3);
    int64_t lines = has_lines ? wl_checkint(L, 3, "_sort_plan", "lines") : 0;
    if (n < 0 || key <= 0 || key > 8 || lines < 0) wl_raise(L, "_sort_plan: bad arguments");
    wk_sort_plan p = wk_sort_plan_for(n, (size_t)key);
    lua_createtable(L, 0, 5);
    lua_pushboolean(L, p.shared);
    lua_setfield(L, -2, "shared");
    lua_pushnumber(L, (lua_Number)p.padded);
    lua_setfield(L, -2, "padded");
    lua_pushnumber(L, (lua_Number)p.threads);
    lua_setfield(L, -2, "threads");
    lua_pushnumber(L, (lua_Number)p.smem);
    lua_setfield(L, -2, "smem");
    lua_pushnumber(L, (lua_Number)p.passes);
    lua_setfield(L, -2, "passes");
    if (has_lines) { /* _sort_plan(n, key, lines): the scan's choice too */
        lua_pushstring(L, wk_scan_plan(n, lines) == WK_SCAN_THREAD ? "thread" : "block");
        lua_setfield(L, -2, "scan");
    }
    return 1;
}

/* core._bitonic_sort(values, descending): the 1-based order the CUDA sort's
 * network gives, run on the CPU in float64 (tests). */
static int m_bitonic_sort(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    int desc = lua_toboolean(L, 2);
    int64_t n = (int64_t)lua_objlen(L, 1);
    if (n > (1 << 20)) wl_raise(L, "_bitonic_sort: at most 2^20 values");
    wk_sort_plan p = wk_sort_plan_for(n, 8);
    double *key = lua_newuserdata(L, (size_t)p.padded * (sizeof(double) + sizeof(int64_t)));
    int64_t *pos = (int64_t *)(key + p.padded);
    for (int64_t i = 0; i < p.padded; i++) {
        pos[i] = i;
        key[i] = 0;
        if (i < n) {
            lua_rawgeti(L, 1, (int)i + 1);
            key[i] = lua_tonumber(L, -1);
            lua_pop(L, 1);
        }
    }
    wk_bitonic_sort_f64(key, pos, p.padded, n, desc);
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        lua_pushnumber(L, (lua_Number)(pos[i] + 1));
        lua_rawseti(L, -2, (int)i + 1);
    }
    return 1;
}

void wl_open_ops(lua_State *L) {
    lua_pushcfunction(L, m_sort_plan);
    lua_setfield(L, -2, "_sort_plan");
    lua_pushcfunction(L, m_bitonic_sort);
    lua_setfield(L, -2, "_bitonic_sort");
    lua_getfield(L, -1, "Tensor");
    lua_pushcfunction(L, t_sort);
    lua_setfield(L, -2, "sort");
    lua_pushcfunction(L, t_topk);
    lua_setfield(L, -2, "_topk");
    for (int prod = 0; prod < 2; prod++) {
        lua_pushinteger(L, prod);
        lua_pushcclosure(L, t_scan, 1);
        lua_setfield(L, -2, prod ? "cumprod" : "cumsum");
    }
    lua_pop(L, 1);
}
