/* Reductions of the Lua binding: t:sum/mean/prod/var/std/argmax/argmin over
 * all elements, a dim or a list of dims, and t:max/t:min (values and indices). */
#include "wick_lua.h"

#include <limits.h>
#include <string.h>

#define SELF(fn) wl_checktensor(L, 1, fn, "self")
#define UPINT(i) ((int)lua_tointeger(L, lua_upvalueindex(i)))

static void set_method(lua_State *L, const char *name, lua_CFunction f, int up) {
    lua_pushinteger(L, up);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, -2, name);
}

/* ---- reductions ---- */

/* (dim?, keepdim? | {keepdim =, correction =, unbiased =}) */
/* A dim (a number) or a list of dims (a table of numbers) at idx, as wl_dim
 * values in dims; returns how many. */
static int reduce_dim_list(lua_State *L, int idx, int *dims, const char *fn) {
    if (lua_type(L, idx) == LUA_TNUMBER) {
        dims[0] = wl_dim(L, idx, fn);
        return 1;
    }
    if (!lua_istable(L, idx) || wl_totensor(L, idx))
        wl_raise(L, "%s: dim must be a number or a table of numbers, got %s", fn, luaL_typename(L, idx));
    int n = (int)lua_objlen(L, idx), keys = 0;
    if (n > WICK_MAX_DIMS) wl_raise(L, "%s: %d dims given, a tensor has at most %d", fn, n, WICK_MAX_DIMS);
    lua_pushnil(L);
    while (lua_next(L, idx)) keys++, lua_pop(L, 1);
    if (keys != n) wl_raise(L, "%s: a list of dims holds only numbers at 1..n (options go in a table of their own)", fn);
    for (int k = 0; k < n; k++) {
        lua_rawgeti(L, idx, k + 1);
        if (lua_type(L, -1) != LUA_TNUMBER) wl_raise(L, "%s: dims must be numbers, got %s", fn, luaL_typename(L, -1));
        dims[k] = wl_dim(L, lua_gettop(L), fn);
        lua_pop(L, 1);
    }
    return n;
}

/* The arguments of t:sum(...) and friends: [dims][, keepdim][, {dim =, keepdim =,
 * unbiased =, correction =}], dims a number or a list. Returns how many dims
 * were given (0: reduce over all elements). */
static int reduce_args(lua_State *L, int first, int *dims, int *keepdim, int *correction, const char *fn) {
    static const char *const keys[] = {"dim", "keepdim", "unbiased", "correction", NULL};
    int ndims = 0, i = first;
    *keepdim = 0, *correction = 1;
    if (lua_type(L, i) == LUA_TNUMBER || (lua_istable(L, i) && !wl_totensor(L, i) && lua_objlen(L, i) > 0))
        ndims = reduce_dim_list(L, i++, dims, fn);
    else if (lua_isnil(L, i) && lua_gettop(L) > i) i++;
    if (lua_type(L, i) == LUA_TBOOLEAN) *keepdim = lua_toboolean(L, i++);
    if (lua_istable(L, i) && !wl_totensor(L, i)) {
        lua_pushnil(L);
        while (lua_next(L, i)) {
            int ok = 0;
            for (const char *const *k = keys; *k && !ok && lua_type(L, -2) == LUA_TSTRING; k++)
                ok = strcmp(*k, lua_tostring(L, -2)) == 0;
            if (!ok)
                wl_raise(L, "%s: unknown option '%s' (expected dim, keepdim, unbiased or correction)", fn,
                         lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2));
            lua_pop(L, 1);
        }
        lua_getfield(L, i, "keepdim");
        if (!lua_isnil(L, -1)) *keepdim = lua_toboolean(L, -1);
        lua_getfield(L, i, "unbiased");
        if (!lua_isnil(L, -1)) *correction = lua_toboolean(L, -1) ? 1 : 0;
        lua_getfield(L, i, "correction");
        if (!lua_isnil(L, -1)) {
            int64_t c = wl_checkint(L, lua_gettop(L), fn, "correction");
            if (c < INT_MIN || c > INT_MAX) wl_raise(L, "%s: correction %lld is out of range", fn, (long long)c);
            *correction = (int)c;
        }
        lua_getfield(L, i, "dim");
        if (!lua_isnil(L, -1)) {
            if (ndims) wl_raise(L, "%s: got the dim twice (as an argument and as an option)", fn);
            ndims = reduce_dim_list(L, lua_gettop(L), dims, fn);
        }
        lua_pop(L, 4);
        i++;
    }
    if (!lua_isnoneornil(L, i))
        wl_raise(L, "%s: expected a dimension (a number or a list), keepdim (a boolean) or an options table, got %s",
                 fn, luaL_typename(L, i));
    return ndims;
}

/* `dim` in the core's convention: -1 for all elements, else 0-based. */
static int reduce_into(lua_State *L, wick_reduce_op op, wick_tensor *a, int dim, int keepdim, int correction,
                       int with_indices) {
    wick_tensor **values = wl_new_slot(L);
    wick_tensor **indices = with_indices ? wl_new_slot(L) : NULL;
    wl_check(L, wick_reduce(values, indices, op, a, dim, keepdim, correction));
    if (op == WICK_ARGMAX || op == WICK_ARGMIN) wl_to_one_based(L, *values);
    if (indices && *indices) wl_to_one_based(L, *indices);
    return with_indices ? 2 : 1;
}

/* Lua dims arrive 0-based or negative; the core wants 0-based, -1 meaning all. */
static int core_dim(lua_State *L, wick_tensor *a, int dim, const char *fn) {
    if (dim >= 0) return dim;
    int n = wick_tensor_ndim(a) ? wick_tensor_ndim(a) : 1;
    if (dim < -n) wl_raise(L, "%s: dimension %d out of range (expected 1 to %d, or -%d to -1)", fn, dim, n, n);
    return dim + n;
}

/* Reduces a over ndims dims (0: all elements), from the last dim to the first,
 * so the places of the dims still to reduce hold when keepdim drops the others.
 * Several dims at once for the ops whose result does not depend on the order
 * (sum, mean, prod). */
static int reduce_over(lua_State *L, wick_reduce_op op, wick_tensor *a, int ndims, int *dims, int keepdim,
                       int correction, const char *fn) {
    if (ndims == 0) return reduce_into(L, op, a, -1, keepdim, correction, 0);
    if (ndims > 1 && op != WICK_SUM && op != WICK_MEAN && op != WICK_PROD)
        wl_raise(L, "%s: takes one dim, got a list of %d", fn, ndims);
    for (int k = 0; k < ndims; k++) dims[k] = core_dim(L, a, dims[k], fn);
    for (int k = 1; k < ndims; k++) /* descending, duplicates refused */
        for (int m = k; m > 0 && dims[m - 1] <= dims[m]; m--) {
            if (dims[m - 1] == dims[m]) wl_raise(L, "%s: dim %d appears more than once in the list", fn, dims[m] + 1);
            int t = dims[m];
            dims[m] = dims[m - 1], dims[m - 1] = t;
        }
    for (int k = 0; k < ndims; k++) {
        reduce_into(L, op, a, dims[k], keepdim, correction, 0);
        a = wl_totensor(L, -1);
    }
    return 1;
}

WL_FUNCTION(t_reduce) {
    wick_reduce_op op = (wick_reduce_op)UPINT(1);
    const char *fn = wick_reduce_name(op);
    wick_tensor *a = SELF(fn);
    int dims[WICK_MAX_DIMS], keepdim, correction;
    int ndims = reduce_args(L, 2, dims, &keepdim, &correction, fn);
    return reduce_over(L, op, a, ndims, dims, keepdim, correction, fn);
}

/* t:max() (all), t:max(dim[, keepdim]) -> values, indices; t:max(other) -> maximum */
WL_FUNCTION(t_max_min) {
    int is_max = UPINT(1);
    const char *fn = is_max ? "max" : "min";
    wick_tensor *a = SELF(fn);
    if (wl_totensor(L, 2)) {
        lua_settop(L, 2);
        return wl_binary_values(L, is_max ? WICK_MAXIMUM : WICK_MINIMUM, 1, 2, 1);
    }
    int dims[WICK_MAX_DIMS], keepdim, correction;
    int ndims = reduce_args(L, 2, dims, &keepdim, &correction, fn); /* also t:max{dim = 2, keepdim = true} */
    if (ndims > 1) wl_raise(L, "%s: takes one dim, got a list of %d", fn, ndims);
    return reduce_into(L, is_max ? WICK_MAX : WICK_MIN, a, ndims ? core_dim(L, a, dims[0], fn) : -1, keepdim, 1, ndims);
}

/* Adds the methods to the module's Tensor table (module table at -1). */
void wl_open_reduce(lua_State *L) {
    lua_getfield(L, -1, "Tensor");
    for (int op = 0; op < WICK_NUM_REDUCE; op++)
        if (op != WICK_MAX && op != WICK_MIN) set_method(L, wick_reduce_name((wick_reduce_op)op), t_reduce, op);
    set_method(L, "max", t_max_min, 1);
    set_method(L, "min", t_max_min, 0);
    lua_pop(L, 1);
}
