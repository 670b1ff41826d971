/* Views, indexing and joining of the Lua binding: view/reshape, transpose,
 * permute, narrow, select, squeeze, expand, flatten, contiguous, t[i] reads and
 * writes of one element, index_select/gather/scatter, cat/stack, softmax. */
#include "wick_lua.h"

#include <limits.h>
#include <math.h>
#include <string.h>

#define SELF(fn) wl_checktensor(L, 1, fn, "self")
#define UPINT(i) ((int)lua_tointeger(L, lua_upvalueindex(i)))

static void set_method(lua_State *L, const char *name, lua_CFunction f, int up) {
    lua_pushinteger(L, up);
    lua_pushcclosure(L, f, 1);
    lua_setfield(L, -2, name);
}

/* ---- PyTorch's keyword arguments ---- */

static int is_options(lua_State *L, int idx) { return lua_istable(L, idx) && !wl_totensor(L, idx); }

/* A dimension at idx as wl_dim reads it (a number, or PyTorch's keyword as
 * {dim = n}), where a table holding anything else is an error naming the key:
 * wl_dim itself reads only `dim`. */
static int named_dim(lua_State *L, int idx, const char *fn) {
    static const char *const keys[] = {"dim", NULL};
    if (is_options(L, idx)) wl_check_keys(L, idx, fn, keys);
    return wl_dim(L, idx, fn);
}

/* The trailing options table of the arguments from `first` on (its index, 0 if
 * none), checked against keys. */
static int options_at(lua_State *L, int first, const char *const *keys, const char *fn) {
    int top = lua_gettop(L);
    if (top < first || !is_options(L, top)) return 0;
    wl_check_keys(L, top, fn, keys);
    return top;
}

/* The dim of fn(dim[, opts]) or fn({dim = n, ...}): a number at idx, or the
 * option `dim` of the options table opts (0: none), not both. Returns it as
 * wl_dim does, or `absent` when it is given neither way. */
static int dim_arg(lua_State *L, int idx, int opts, int absent, const char *fn) {
    int positional = idx != opts && !lua_isnoneornil(L, idx);
    int named = 0;
    lua_Number d = 0;
    if (opts) {
        wl_getdim(L, opts, fn);
        named = !lua_isnil(L, -1);
        if (named && lua_type(L, -1) != LUA_TNUMBER)
            wl_raise(L, "%s: expected a dimension (a number) for option 'dim', got %s", fn, luaL_typename(L, -1));
        d = lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    if (positional && named) wl_raise(L, "%s: got the dim twice (as an argument and as an option)", fn);
    if (named) return wl_dim_value(L, d, fn);
    return positional ? named_dim(L, idx, fn) : absent;
}

/* Nothing but nils may follow the last argument fn takes (at `last`), up to `top`. */
static void no_more_args(lua_State *L, int last, int top, const char *fn) {
    for (int i = last + 1; i <= top; i++)
        if (!lua_isnil(L, i))
            wl_raise(L, "%s: too many arguments (an extra %s); keyword arguments go in one trailing options table",
                     fn, luaL_typename(L, i));
}

/* ---- views ---- */

WL_FUNCTION(t_view_like) {
    int reshape = UPINT(1);
    const char *fn = reshape ? "reshape" : "view";
    wick_tensor *a = SELF(fn);
    if (!reshape && lua_type(L, 2) == LUA_TSTRING && lua_gettop(L) == 2) { /* t:view(dtype) */
        wick_dtype d = wl_dtype(L, 2, fn);
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, wick_view_dtype(slot, a, d));
        return 1;
    }
    int64_t sizes[WICK_MAX_DIMS];
    int n = wl_sizes(L, 2, lua_gettop(L), sizes, fn);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, reshape ? wick_reshape(slot, a, n, sizes) : wick_view(slot, a, n, sizes));
    return 1;
}

WL_FUNCTION(t_transpose) {
    wick_tensor *a = SELF("transpose");
    int d0 = wl_dim(L, 2, "transpose"), d1 = wl_dim(L, 3, "transpose");
    wl_no_more(L, 3, "transpose");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_transpose(slot, a, d0, d1));
    return 1;
}

WL_FUNCTION(t_t) {
    wick_tensor *a = SELF("t");
    wl_no_more(L, 1, "t");
    if (wick_tensor_ndim(a) > 2) wl_raise(L, "t: expects a tensor with at most 2 dimensions, but self is %d-D", wick_tensor_ndim(a));
    wick_tensor **slot = wl_new_slot(L);
    if (wick_tensor_ndim(a) < 2) wl_check(L, wick_view(slot, a, wick_tensor_ndim(a), wick_tensor_sizes(a)));
    else wl_check(L, wick_transpose(slot, a, 0, 1));
    return 1;
}

WL_FUNCTION(t_permute) {
    wick_tensor *a = SELF("permute");
    int64_t raw[WICK_MAX_DIMS];
    int n = 0;
    if (lua_istable(L, 2)) {
        n = (int)lua_objlen(L, 2);
        if (n > WICK_MAX_DIMS) wl_raise(L, "permute: too many dims");
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, 2, i + 1);
            raw[i] = wl_dim(L, lua_gettop(L), "permute");
            lua_pop(L, 1);
        }
    } else {
        for (int i = 2; i <= lua_gettop(L) && n < WICK_MAX_DIMS; i++) raw[n++] = wl_dim(L, i, "permute");
    }
    int dims[WICK_MAX_DIMS];
    for (int i = 0; i < n; i++) dims[i] = (int)raw[i];
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_permute(slot, a, n, dims));
    return 1;
}

/* A 1-based Lua index along a dim of `size` as a 0-based one (negative from the end). */
/* a 1-based index (negative from the end): a number or a 0-dim integer tensor (Longformer's
 * narrow(-1, max_num_global_attn_indices + 1, ...)) */
static int64_t lua_index(lua_State *L, int idx, int64_t size, const char *fn, int dim) {
    int64_t v = wl_checkint(L, idx, fn, "an index");
    if (v == 0) wl_raise(L, "%s: index 0 is invalid: indices count from 1 (and from -1 backwards)", fn);
    if (v > size || v < -size)
        wl_raise(L, "%s: index %lld is out of bounds for dimension %d with size %lld", fn, (long long)v, dim + 1,
                 (long long)size);
    return v > 0 ? v - 1 : v + size;
}

static int64_t dim_size(lua_State *L, wick_tensor *a, int dim, const char *fn) {
    int n = wick_tensor_ndim(a);
    if (n == 0) /* (Python's torch.slogdet(W)[1]: a function's results are Lua's several values) */
        wl_raise(L, "%s: cannot index a 0-dim tensor (it holds one value: t:item(); a function that returns several "
                    "tensors gives them as several values: local sign, logabsdet = wick.slogdet(W))", fn);
    int d = dim < 0 ? dim + n : dim;
    if (d < 0 || d >= n) wl_raise(L, "%s: dimension %d out of range (expected 1 to %d, or -%d to -1)", fn, dim < 0 ? dim : dim + 1, n, n);
    return wick_tensor_sizes(a)[d];
}

WL_FUNCTION(t_narrow) {
    wick_tensor *a = SELF("narrow");
    wl_no_more(L, 4, "narrow");
    int dim = named_dim(L, 2, "narrow");
    int64_t size = dim_size(L, a, dim, "narrow");
    int64_t len = wl_checkint(L, 4, "narrow", "the length");
    /* like PyTorch, an empty slice may start just past the end */
    int64_t start = len == 0 && lua_type(L, 3) == LUA_TNUMBER && lua_tonumber(L, 3) == (lua_Number)size + 1
                        ? size
                        : lua_index(L, 3, size, "narrow", dim < 0 ? dim + wick_tensor_ndim(a) : dim);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_narrow(slot, a, dim, start, len));
    return 1;
}

WL_FUNCTION(t_select) {
    wick_tensor *a = SELF("select");
    wl_no_more(L, 3, "select");
    int dim = named_dim(L, 2, "select");
    int64_t size = dim_size(L, a, dim, "select");
    int64_t index = lua_index(L, 3, size, "select", dim < 0 ? dim + wick_tensor_ndim(a) : dim);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_select(slot, a, dim, index));
    return 1;
}

/* t[i]: a view of the i-th slice along dim 1 */
WL_FUNCTION(t_get) {
    wick_tensor *a = SELF("index");
    int64_t size = dim_size(L, a, 0, "index");
    int64_t index = lua_index(L, 2, size, "index", 0);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_select(slot, a, 0, index));
    return 1;
}

/* t[i] = v: fills the slice with a number or copies a tensor into it */
WL_FUNCTION(t_set) {
    wick_tensor *a = SELF("index");
    int64_t size = dim_size(L, a, 0, "index");
    int64_t index = lua_index(L, 2, size, "index", 0);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_select(slot, a, 0, index));
    wick_tensor *src = wl_totensor(L, 3);
    wick_scalar s;
    if (src) wl_check(L, wick_copy_(*slot, src));
    else if (wl_toscalar(L, 3, &s)) wl_check(L, wick_fill_(*slot, s.value));
    else wl_raise(L, "index assignment: expected a number or a tensor, got %s", luaL_typename(L, 3));
    return 0;
}

WL_FUNCTION(t_squeeze) {
    wick_tensor *a = SELF("squeeze");
    int dim = lua_isnoneornil(L, 2) ? -1 : named_dim(L, 2, "squeeze");
    if (!lua_isnoneornil(L, 2) && dim < 0) dim += wick_tensor_ndim(a) ? wick_tensor_ndim(a) : 1;
    if (!lua_isnoneornil(L, 2) && dim < 0) wl_raise(L, "squeeze: dimension out of range");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_squeeze(slot, a, dim));
    return 1;
}

WL_FUNCTION(t_unsqueeze) {
    wick_tensor *a = SELF("unsqueeze");
    int dim = named_dim(L, 2, "unsqueeze");
    wl_no_more(L, 2, "unsqueeze");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_unsqueeze(slot, a, dim));
    return 1;
}

WL_FUNCTION(t_expand) {
    wick_tensor *a = SELF("expand");
    int64_t sizes[WICK_MAX_DIMS];
    int n;
    wick_tensor *other = wl_totensor(L, 2); /* t:expand(u): u's shape; a 0-dim one is a size (Qwen2-VL's expand(h, -1)) */
    if (other && wick_tensor_ndim(other) > 0) {
        n = wick_tensor_ndim(other);
        memcpy(sizes, wick_tensor_sizes(other), sizeof(int64_t) * n);
    } else {
        n = wl_sizes(L, 2, lua_gettop(L), sizes, "expand");
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_expand(slot, a, n, sizes));
    return 1;
}

/* t:flatten([start_dim = 1[, end_dim = -1]]) or with PyTorch's keywords:
 * t:flatten({start_dim = 2}), t:flatten(2, {end_dim = 3}) */
WL_FUNCTION(t_flatten) {
    static const char *const keys[] = {"start_dim", "end_dim", NULL};
    wick_tensor *a = SELF("flatten");
    int opts = options_at(L, 2, keys, "flatten");
    int last = opts ? opts - 1 : lua_gettop(L); /* the last positional argument */
    no_more_args(L, 3, last, "flatten");
    int dims[2] = {0, -1};
    for (int k = 0; k < 2; k++) {
        int positional = k + 2 <= last && !lua_isnil(L, k + 2);
        if (positional) dims[k] = wl_dim(L, k + 2, "flatten");
        if (!opts) continue;
        lua_getfield(L, opts, keys[k]);
        if (!lua_isnil(L, -1)) {
            if (positional)
                wl_raise(L, "flatten: argument '%s' given both by position and as an option", keys[k]);
            if (lua_type(L, -1) != LUA_TNUMBER)
                wl_raise(L, "flatten: expected a dimension (a number) for option '%s', got %s", keys[k],
                         luaL_typename(L, -1));
            dims[k] = wl_dim_value(L, lua_tonumber(L, -1), "flatten");
        }
        lua_pop(L, 1);
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_flatten(slot, a, dims[0], dims[1]));
    return 1;
}

WL_FUNCTION(t_contiguous) {
    wick_tensor *a = SELF("contiguous");
    if (wick_tensor_is_contiguous(a)) {
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_clone(slot, a));
    return 1;
}

/* ---- indexing ---- */

/* A Lua (1-based) index tensor as a new 0-based one, kept alive on the stack. */
static wick_tensor *zero_based_index(lua_State *L, int idx, const char *fn) {
    wick_tensor *index = wl_checktensor(L, idx, fn, "index");
    if (wick_tensor_dtype(index) != WICK_INT64 && wick_tensor_dtype(index) != WICK_INT32)
        wl_raise(L, "%s: expected the index to be an int64 tensor, but got %s%s", fn, wick_dtype_name(wick_tensor_dtype(index)),
                 wl_index_dtype_hint(wick_tensor_dtype(index)));
    wick_tensor **slot = wl_new_slot(L);
    lua_replace(L, idx);
    wl_check(L, wick_binary_scalar(slot, WICK_SUB, index, (wick_scalar){1, 1}, 0));
    return *slot;
}

WL_FUNCTION(t_index_select) {
    wick_tensor *a = SELF("index_select");
    wl_no_more(L, 3, "index_select");
    int dim = named_dim(L, 2, "index_select");
    wick_tensor *index = zero_based_index(L, 3, "index_select");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_index_select(slot, a, dim, index));
    return 1;
}

WL_FUNCTION(t_gather) {
    wick_tensor *a = SELF("gather");
    static const char *const keys[] = {"sparse_grad", NULL}; /* (the gradient is dense either way) */
    if (lua_istable(L, 4)) wl_check_keys(L, 4, "gather", keys), wl_no_more(L, 4, "gather");
    else wl_no_more(L, 3, "gather");
    int dim = named_dim(L, 2, "gather");
    wick_tensor *index = zero_based_index(L, 3, "gather");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_gather(slot, a, dim, index));
    return 1;
}

/* t:scatter(dim, index, src) and t:scatter_(...); src may be a number */
WL_FUNCTION(t_scatter) {
    int inplace = UPINT(1);
    const char *fn = inplace ? "scatter_" : "scatter";
    wick_tensor *a = SELF(fn);
    int dim = named_dim(L, 2, fn);
    wick_tensor *index = zero_based_index(L, 3, fn);
    wick_tensor *src = wl_totensor(L, 4);
    wick_scalar s;
    if (!src) {
        if (!wl_toscalar(L, 4, &s)) wl_raise(L, "%s: expected src to be a tensor or a number, got %s", fn, luaL_typename(L, 4));
        wick_tensor **tmp = wl_new_slot(L);
        lua_replace(L, 4);
        wl_check(L, wick_full(tmp, wick_tensor_ndim(index), wick_tensor_sizes(index), s.value,
                              (wick_options){wick_tensor_dtype(a), wick_tensor_device(a)}));
        src = *tmp;
    }
    if (inplace) {
        WL_WRITE(L, wick_scatter_(a, dim, index, src));
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_scatter(slot, a, dim, index, src));
    return 1;
}

/* wick.cat(tensors[, dim]) and wick.stack(tensors[, dim]); upvalue: 1 for stack.
 * The tensors may also come as arguments (wick.stack(wick.meshgrid(a, b)):
 * PyTorch's torch.stack(torch.meshgrid(...)) of a function's several results). */
WL_FUNCTION(m_join) {
    int stack = UPINT(1);
    const char *fn = stack ? "wick.stack" : "wick.cat";
    if (wl_totensor(L, 1)) { /* the leading tensor arguments as the table */
        int n = 1, top = lua_gettop(L);
        while (n < top && wl_totensor(L, n + 1)) n++;
        lua_createtable(L, n, 0);
        for (int i = 1; i <= n; i++) {
            lua_pushvalue(L, i);
            lua_rawseti(L, -2, i);
        }
        lua_replace(L, 1);
        for (int i = 2; i <= n; i++) lua_remove(L, 2);
    }
    if (!lua_istable(L, 1) || wl_totensor(L, 1)) wl_raise(L, "%s: expected a table of tensors, got %s", fn, luaL_typename(L, 1));
    static const char *const keys[] = {"dim", NULL};
    int opts = options_at(L, 2, keys, fn);
    no_more_args(L, opts ? opts : 2, lua_gettop(L), fn);
    int dim = dim_arg(L, 2, opts, 0, fn);
    int n = (int)lua_objlen(L, 1);
    if (n == 0) wl_raise(L, "%s: expected a non-empty table of tensors", fn);
    const wick_tensor **ts = lua_newuserdata(L, sizeof(*ts) * (size_t)n);
    int kept = 0;
    wick_dtype dtype = WICK_BOOL; /* every input's, the skipped ones' too (PyTorch's result type) */
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        const wick_tensor *t = wl_totensor(L, -1);
        if (!t) wl_raise(L, "%s: expected a tensor at position %d, got %s", fn, i + 1, wl_describe(L, -1));
        lua_pop(L, 1); /* the table keeps it alive */
        dtype = i == 0 ? wick_tensor_dtype(t) : wick_promote_types(dtype, wick_tensor_dtype(t));
        /* cat skips PyTorch's legacy empty tensors (1-D, size 0: out = torch.tensor([]) then cat onto it)
         * for the shape, not the dtype (the Decision Transformer's float64 rewards = zeros(0) cat zeros(1)) */
        if (!stack && wick_tensor_ndim(t) == 1 && wick_tensor_sizes(t)[0] == 0) continue;
        ts[kept++] = t;
    }
    if (kept == 0) { /* only empty ones: the first */
        lua_rawgeti(L, 1, 1);
        ts[kept++] = wl_totensor(L, -1);
        lua_pop(L, 1);
    }
    n = kept;
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, stack ? wick_stack(slot, n, (const wick_tensor *const *)ts, dim)
                      : wick_cat(slot, n, (const wick_tensor *const *)ts, dim));
    if (wick_tensor_dtype(*slot) != dtype) {
        wick_tensor **cast = wl_new_slot(L);
        wl_check(L, wick_to(cast, *slot, (wick_options){dtype, wick_tensor_device(*slot), 0}));
    }
    wl_account(L);
    return 1;
}

WL_FUNCTION(t_softmax) {
    int log = UPINT(1);
    const char *fn = log ? "log_softmax" : "softmax";
    static const char *const keys[] = {"dim", "dtype", NULL};
    wick_tensor *a = SELF(fn);
    int opts = options_at(L, 2, keys, fn);
    int dtype_at = !opts && lua_type(L, 3) == LUA_TSTRING ? 3 : 0; /* t:softmax(-1, "float32"): PyTorch's by position */
    no_more_args(L, opts ? opts : dtype_at ? 3 : 2, lua_gettop(L), fn);
    int dim = dim_arg(L, 2, opts, INT_MIN, fn);
    if (dim == INT_MIN) wl_raise(L, "%s: expected a dimension (a number, or {dim = n}) for argument 'dim', got nothing", fn);
    if (opts) {
        lua_getfield(L, opts, "dtype");
        if (!lua_isnil(L, -1)) dtype_at = lua_gettop(L);
    }
    if (dtype_at) { /* PyTorch's dtype: the input is cast to it first */
        wick_tensor **cast = wl_new_slot(L);
        wl_check(L, wick_to(cast, a, (wick_options){wl_dtype(L, dtype_at, fn), wick_tensor_device(a), 0}));
        a = *cast;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, log ? wick_log_softmax(slot, a, dim) : wick_softmax(slot, a, dim));
    return 1;
}

/* ---- complex tensors: views, parts, construction ---- */

typedef wick_status (*view_fn)(wick_tensor **out, wick_tensor *t);
static int one_tensor_op(lua_State *L, const char *fn, view_fn f) {
    wick_tensor *a = SELF(fn);
    no_more_args(L, 1, lua_gettop(L), fn);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, f(slot, a));
    return 1;
}
static wick_status conj_of(wick_tensor **out, wick_tensor *t) { return wick_conj(out, t); }
static wick_status angle_of(wick_tensor **out, wick_tensor *t) { return wick_angle(out, t); }
WL_FUNCTION(t_view_as_real) { return one_tensor_op(L, "view_as_real", wick_view_as_real); }
WL_FUNCTION(t_view_as_complex) { return one_tensor_op(L, "view_as_complex", wick_view_as_complex); }
WL_FUNCTION(t_real) { return one_tensor_op(L, "real", wick_real); }
WL_FUNCTION(t_imag) { return one_tensor_op(L, "imag", wick_imag); }
WL_FUNCTION(t_conj) { return one_tensor_op(L, "conj", conj_of); }
WL_FUNCTION(t_angle) { return one_tensor_op(L, "angle", angle_of); }

/* wick.complex(real, imag) */
WL_FUNCTION(m_complex) {
    wick_tensor *re = wl_checktensor(L, 1, "wick.complex", "real"), *im = wl_checktensor(L, 2, "wick.complex", "imag");
    no_more_args(L, 2, lua_gettop(L), "wick.complex");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_complex(slot, re, im));
    return 1;
}

/* core._fft_c2c(x, dim, sign[, matrix]): wick_fft_c2c, dim counted from 1 (or
 * -1 backwards); matrix: by the DFT matrix product (the kernels' reference) */
WL_FUNCTION(m_fft_c2c) {
    wick_tensor *x = wl_checktensor(L, 1, "fft", "input");
    int dim = wl_dim_value(L, luaL_checknumber(L, 2), "fft");
    lua_Number s = luaL_checknumber(L, 3);
    if (s != 1 && s != -1) wl_raise(L, "fft: sign must be -1 or 1, got %g", s);
    int sign = s > 0 ? 1 : -1, matrix = lua_toboolean(L, 4);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, matrix ? wick_dft_c2c(slot, x, dim, sign) : wick_fft_c2c(slot, x, dim, sign));
    return 1;
}

/* core._fft_r2c(x, dim): wick_fft_r2c, dim counted from 1 (or -1 backwards) */
WL_FUNCTION(m_fft_r2c) {
    wick_tensor *x = wl_checktensor(L, 1, "rfft", "input");
    int dim = wl_dim_value(L, luaL_checknumber(L, 2), "rfft");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_fft_r2c(slot, x, dim));
    return 1;
}

/* core._fft_c2r(x, dim, n): wick_fft_c2r, dim counted from 1 (or -1 backwards) */
WL_FUNCTION(m_fft_c2r) {
    wick_tensor *x = wl_checktensor(L, 1, "irfft", "input");
    int dim = wl_dim_value(L, luaL_checknumber(L, 2), "irfft");
    lua_Number v = luaL_checknumber(L, 3);
    if (!(v >= 1 && v <= 9007199254740992.0) || v != floor(v))
        wl_raise(L, "irfft: expected a positive integer number of points, got %g", v);
    int64_t n = (int64_t)v;
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_fft_c2r(slot, x, dim, n));
    return 1;
}

static const luaL_Reg view_methods[] = {
    {"view_as_real", t_view_as_real}, {"view_as_complex", t_view_as_complex}, {"_real", t_real},
    {"_imag", t_imag}, {"conj", t_conj}, {"angle", t_angle},
    {"transpose", t_transpose}, {"t", t_t}, {"permute", t_permute}, {"narrow", t_narrow},
    {"select", t_select}, {"squeeze", t_squeeze}, {"unsqueeze", t_unsqueeze}, {"expand", t_expand},
    {"flatten", t_flatten}, {"contiguous", t_contiguous}, {"index_select", t_index_select},
    {"gather", t_gather}, {"_get", t_get}, {"_set", t_set}, {NULL, NULL}};

/* Adds cat/stack to the module table at -1 and the methods to its Tensor table. */
void wl_open_view(lua_State *L) {
    set_method(L, "cat", m_join, 0);
    set_method(L, "stack", m_join, 1);
    lua_pushcfunction(L, m_complex);
    lua_setfield(L, -2, "complex");
    lua_pushcfunction(L, m_fft_c2c);
    lua_setfield(L, -2, "_fft_c2c");
    lua_pushcfunction(L, m_fft_r2c);
    lua_setfield(L, -2, "_fft_r2c");
    lua_pushcfunction(L, m_fft_c2r);
    lua_setfield(L, -2, "_fft_c2r");
    lua_getfield(L, -1, "Tensor");
    luaL_register(L, NULL, view_methods);
    set_method(L, "view", t_view_like, 0);
    set_method(L, "reshape", t_view_like, 1);
    set_method(L, "scatter", t_scatter, 0);
    set_method(L, "scatter_", t_scatter, 1);
    set_method(L, "softmax", t_softmax, 0);
    set_method(L, "log_softmax", t_softmax, 1);
    lua_pop(L, 1);
}
