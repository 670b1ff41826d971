/* The binding of sort and the scans (src/core/sort.c): t:sort, t:cumsum,
 * t:cumprod (the CUDA sort's plan and network are tested in C:
 * tests/test_sort_plan.c).
 * The ops written over these (argsort, topk, multinomial, ...) are Lua, in
 * lua/wick/ops.lua. Indices are 1-based on the Lua side. */
#include "wick_lua.h"

#include <stdio.h>

#include <string.h>


static int opt_bool(lua_State *L, int idx, const char *fn, const char *what, int dflt) {
    if (lua_isnoneornil(L, idx)) return dflt;
    if (lua_type(L, idx) != LUA_TBOOLEAN)
        wl_raise(L, "%s: expected a boolean for argument '%s', got %s", fn, what, luaL_typename(L, idx));
    return lua_toboolean(L, idx);
}

/* t:sort([dim = -1[, descending = false[, stable]]]) or t:sort({dim =, descending =, stable =}):
 * values, indices (int64, 1-based). The sort is always stable. */
WL_FUNCTION(t_sort) {
    wick_tensor *a = wl_checktensor(L, 1, "sort", "self");
    int dim = -1, descending = 0;
    if (lua_istable(L, 2) && !wl_totensor(L, 2)) {
        static const char *const keys[] = {"dim", "descending", "stable", NULL};
        wl_check_keys(L, 2, "sort", keys);
        wl_getdim(L, 2, "sort");
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
WL_FUNCTION(t_topk) {
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
WL_FUNCTION(t_scan) {
    int prod = (int)lua_tointeger(L, lua_upvalueindex(1));
    const char *fn = prod ? "cumprod" : "cumsum";
    wick_tensor *a = wl_checktensor(L, 1, fn, "self");
    int dim, dtype = -1;
    if (lua_istable(L, 2) && !wl_totensor(L, 2)) { /* t:cumsum({dim =, dtype =}) */
        lua_settop(L, 2);
        lua_pushvalue(L, 2);
        wl_getdim(L, 2, fn);
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
            wl_check_keys(L, 3, fn, keys);
            lua_getfield(L, 3, "dtype");
            if (!lua_isnil(L, -1)) dtype = (int)wl_dtype(L, lua_gettop(L), fn);
        }
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, prod ? wick_cumprod(slot, a, dim, dtype) : wick_cumsum(slot, a, dim, dtype));
    return 1;
}

/* ---- dense linear algebra: core._linalg(kind, A[, B or flag]) -> results
 * (wick.linalg in Lua names, checks and differentiates them) ---- */

WL_FUNCTION(m_linalg) {
    static const char *const kinds[] = {"solve", "slogdet", "cholesky", "qr", "eigh", "svd", "lu_factor", "inv", NULL};
    int kind = luaL_checkoption(L, 1, NULL, kinds);
    char fn[32];
    snprintf(fn, sizeof fn, "linalg.%s", kinds[kind]);
    wick_tensor *a = wl_checktensor(L, 2, fn, "A"), *b = kind == 0 ? wl_checktensor(L, 3, fn, "B") : NULL;
    int flag = lua_toboolean(L, 3);
    lua_settop(L, 3);
    wick_tensor **r[3]; /* the results' slots first: nothing to lose if making one fails */
    for (int i = 0; i < 3; i++) r[i] = wl_new_slot(L);
    wick_status st;
    static const int counts[] = {1, 2, 1, 2, 2, 3, 3, 1};
    switch (kind) {
    case 0: st = wick_linalg_solve(r[0], a, b); break;
    case 1: st = wick_linalg_slogdet(r[0], r[1], a); break;
    case 2: st = wick_linalg_cholesky(r[0], a); break;
    case 3: st = wick_linalg_qr(r[0], r[1], a, flag); break;
    case 4: st = wick_linalg_eigh(r[0], r[1], a); break;
    case 5: st = wick_linalg_svd(r[0], r[1], r[2], a, flag); break;
    case 6: st = wick_linalg_lu_factor(r[0], r[1], r[2], a); break;
    default: st = wick_linalg_inv(r[0], a); break;
    }
    wl_check(L, st);
    lua_settop(L, 3 + counts[kind]);
    return counts[kind];
}

void wl_open_ops(lua_State *L) {
    lua_pushcfunction(L, m_linalg);
    lua_setfield(L, -2, "_linalg");
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
