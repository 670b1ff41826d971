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

/* The options each reduction takes by name: var and std also take unbiased and
 * correction; keepdims is NumPy's spelling of keepdim, which PyTorch accepts too
 * (x.sum(1, keepdims=True)). */
static const char *const plain_keys[] = {"dim", "keepdim", "keepdims", NULL};
static const char *const dtype_keys[] = {"dim", "keepdim", "keepdims", "dtype", NULL}; /* sum, mean, prod */
static const char *const var_keys[] = {"dim", "keepdim", "keepdims", "unbiased", "correction", NULL};

/* The boolean option `name` of the table at idx into *out (left as is when absent);
 * returns whether it was given. */
static int boolean_option(lua_State *L, int idx, const char *name, int *out, const char *fn) {
    lua_getfield(L, idx, name);
    int given = !lua_isnil(L, -1);
    if (given && lua_type(L, -1) != LUA_TBOOLEAN)
        wl_raise(L, "%s: expected a boolean for option '%s', got %s", fn, name, luaL_typename(L, -1));
    if (given) *out = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return given;
}

/* The arguments of t:sum(...) and friends: [dims][, keepdim][, {dim =, keepdim =,
 * unbiased =, correction =}], dims a number or a list. Returns how many dims
 * were given (0: reduce over all elements). */
static int reduce_args(lua_State *L, int first, int *dims, int *keepdim, int *correction, int is_var, int *dtype,
                       const char *fn) {
    int ndims = 0, i = first, keepdim_given = 0, unbiased_given = 0;
    *keepdim = 0, *correction = 1;
    if (lua_type(L, i) == LUA_TNUMBER || (lua_istable(L, i) && !wl_totensor(L, i) && lua_objlen(L, i) > 0))
        ndims = reduce_dim_list(L, i++, dims, fn);
    else if (lua_isnil(L, i) && lua_gettop(L) > i) i++;
    /* var and std: PyTorch's positional (dim, unbiased, keepdim), and var(unbiased) */
    /* (a nil in a boolean's place is Python's None there: the arguments after it still count,
     * t.sum(None, None, dtype=torch.float32) as t:sum(nil, nil, {dtype = "float32"})) */
    if (is_var && lua_type(L, i) == LUA_TBOOLEAN) *correction = lua_toboolean(L, i++) ? 1 : 0, unbiased_given = 1;
    else if (is_var && lua_isnil(L, i) && lua_gettop(L) > i) i++;
    if (lua_type(L, i) == LUA_TBOOLEAN) *keepdim = lua_toboolean(L, i++), keepdim_given = 1;
    else if (lua_isnil(L, i) && lua_gettop(L) > i) i++;
    if (lua_istable(L, i) && !wl_totensor(L, i)) {
        wl_check_keys(L, i, fn, is_var ? var_keys : dtype ? dtype_keys : plain_keys);
        if (dtype) { /* PyTorch's dtype=: the input is cast to it first (x.sum(dtype=torch.float64)) */
            lua_getfield(L, i, "dtype");
            if (!lua_isnil(L, -1)) *dtype = (int)wl_dtype(L, lua_gettop(L), fn);
            lua_pop(L, 1);
        }
        int named = boolean_option(L, i, "keepdim", keepdim, fn);
        int numpy = boolean_option(L, i, "keepdims", keepdim, fn);
        if (named && numpy) wl_raise(L, "%s: got both keepdim and keepdims (keepdims is another name for keepdim)", fn);
        if (keepdim_given && (named || numpy))
            wl_raise(L, "%s: got keepdim twice (as an argument and as an option)", fn);
        int unbiased = 1, by_name = boolean_option(L, i, "unbiased", &unbiased, fn);
        if (by_name) *correction = unbiased ? 1 : 0;
        lua_getfield(L, i, "correction");
        if (unbiased_given && (by_name || !lua_isnil(L, -1)))
            wl_raise(L, "%s: got unbiased twice (as an argument and as the option %s)", fn,
                     by_name ? "unbiased" : "correction");
        if (by_name && !lua_isnil(L, -1)) /* PyTorch's TypeError: they are two spellings of one argument */
            wl_raise(L, "%s: got both unbiased and correction (give one: correction = 1 is unbiased = true)", fn);
        if (!lua_isnil(L, -1)) {
            int64_t c = wl_checkint(L, lua_gettop(L), fn, "correction");
            if (c < INT_MIN || c > INT_MAX) wl_raise(L, "%s: correction %lld is out of range", fn, (long long)c);
            *correction = (int)c;
        }
        wl_getdim(L, i, fn);
        if (!lua_isnil(L, -1)) {
            if (ndims) wl_raise(L, "%s: got the dim twice (as an argument and as an option)", fn);
            ndims = reduce_dim_list(L, lua_gettop(L), dims, fn);
        }
        lua_pop(L, 2);
        i++;
    }
    for (; i <= lua_gettop(L); i++) /* nothing given after what was read */
        if (!lua_isnil(L, i))
            wl_raise(L, "%s: expected a dimension (a number or a list), %s or an options table, got %s", fn,
                     is_var ? "unbiased and keepdim (booleans)" : "keepdim (a boolean)", luaL_typename(L, i));
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

/* var / std over several dims (descending, 0-based): the kept dims first,
 * the reduced ones flattened into one last dim, reduced there (PyTorch's
 * x.var((0, 1), keepdim=True): the lecture's BatchNorm1d over [B, T, C]). */
static int spread_over(lua_State *L, wick_reduce_op op, wick_tensor *a, int ndims, const int *dims, int keepdim,
                       int correction) {
    int nd = wick_tensor_ndim(a), perm[WICK_MAX_DIMS], np = 0;
    const int64_t *sizes = wick_tensor_sizes(a);
    int64_t flat[WICK_MAX_DIMS], kept[WICK_MAX_DIMS], n = 1;
    char reduced[WICK_MAX_DIMS] = {0};
    for (int k = 0; k < ndims; k++) reduced[dims[k]] = 1;
    for (int d = 0; d < nd; d++)
        if (!reduced[d]) flat[np] = kept[d] = sizes[d], perm[np++] = d;
        else kept[d] = 1, n *= sizes[d];
    int nk = np;
    for (int d = 0; d < nd; d++)
        if (reduced[d]) perm[np++] = d;
    flat[nk] = n;
    wick_tensor **moved = wl_new_slot(L), **joined = wl_new_slot(L);
    wl_check(L, wick_permute(moved, a, nd, perm));
    wl_check(L, wick_reshape(joined, *moved, nk + 1, flat));
    reduce_into(L, op, *joined, nk, 0, correction, 0);
    if (!keepdim) return 1;
    wick_tensor **shaped = wl_new_slot(L);
    wl_check(L, wick_reshape(shaped, wl_totensor(L, -2), nd, kept));
    return 1;
}

/* Reduces a over ndims dims (0: all elements), from the last dim to the first,
 * so the places of the dims still to reduce hold when keepdim drops the others.
 * Several dims at once for the ops whose result does not depend on the order
 * (sum, mean, prod). */
static int reduce_over(lua_State *L, wick_reduce_op op, wick_tensor *a, int ndims, int *dims, int keepdim,
                       int correction, const char *fn) {
    if (ndims == 0) return reduce_into(L, op, a, -1, keepdim, correction, 0);
    int spread = op == WICK_VAR || op == WICK_STD; /* over several dims at once, not one after another */
    if (ndims > 1 && op != WICK_SUM && op != WICK_MEAN && op != WICK_PROD && !spread)
        wl_raise(L, "%s: takes one dim, got a list of %d", fn, ndims);
    for (int k = 0; k < ndims; k++) dims[k] = core_dim(L, a, dims[k], fn);
    for (int k = 1; k < ndims; k++) /* descending, duplicates refused */
        for (int m = k; m > 0 && dims[m - 1] <= dims[m]; m--) {
            if (dims[m - 1] == dims[m]) wl_raise(L, "%s: dim %d appears more than once in the list", fn, dims[m] + 1);
            int t = dims[m];
            dims[m] = dims[m - 1], dims[m - 1] = t;
        }
    if (ndims > 1 && spread) return spread_over(L, op, a, ndims, dims, keepdim, correction);
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
    int dims[WICK_MAX_DIMS], keepdim, correction, dtype = -1;
    int casts = op == WICK_SUM || op == WICK_MEAN || op == WICK_PROD;
    int ndims = reduce_args(L, 2, dims, &keepdim, &correction, op == WICK_VAR || op == WICK_STD, casts ? &dtype : NULL, fn);
    if (dtype >= 0 && (wick_dtype)dtype != wick_tensor_dtype(a)) {
        wick_tensor **cast = wl_new_slot(L);
        wl_check(L, wick_to(cast, a, (wick_options){(wick_dtype)dtype, wick_tensor_device(a), 0}));
        a = *cast;
    }
    int n = reduce_over(L, op, a, ndims, dims, keepdim, correction, fn);
    wick_tensor *r = wl_totensor(L, -1);
    if (dtype >= 0 && r && wick_tensor_dtype(r) != (wick_dtype)dtype) { /* an integer sum is int64: dtype= says */
        wick_tensor **out = wl_new_slot(L);
        wl_check(L, wick_to(out, r, (wick_options){(wick_dtype)dtype, wick_tensor_device(r), 0}));
    }
    return n;
}

/* t:max() (all), t:max(dim[, keepdim]) -> values, indices; t:max(other) -> maximum */
WL_FUNCTION(t_max_min) {
    int is_max = UPINT(1);
    const char *fn = is_max ? "max" : "min";
    wick_tensor *a = SELF(fn);
    if (wl_totensor(L, 2)) {
        for (int i = 3; i <= lua_gettop(L); i++) /* (Lua passes every result of a call in the last place) */
            if (!lua_isnil(L, i))
                wl_raise(L, "%s: the %s of two tensors takes no third argument, got %s (%s(a, x:%s(dim)) passes both the "
                            "values and the indices: write %s(a, (x:%s(dim))) for the values alone)",
                         fn, fn, wl_describe(L, i), fn, fn, fn, fn);
        lua_settop(L, 2);
        return wl_binary_values(L, is_max ? WICK_MAXIMUM : WICK_MINIMUM, 1, 2, 1);
    }
    int dims[WICK_MAX_DIMS], keepdim, correction;
    int ndims = reduce_args(L, 2, dims, &keepdim, &correction, 0, NULL, fn); /* also t:max{dim = 2, keepdim = true} */
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
