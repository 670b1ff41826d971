/* Tensor methods of the Lua binding (elementwise, reductions, products, views,
 * values, metadata, autograd) and the registration of the module. Each checks its Lua
 * arguments, converts 1-based dims and indices to the C core's 0-based ones,
 * calls one wick_* function and pushes the result. */
#include "wick_lua.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define SELF(fn) wl_checktensor(L, 1, fn, "self")
#define UPINT(i) ((int)lua_tointeger(L, lua_upvalueindex(i)))

/* core.as_strided(t, sizes, strides, offset): a checked view of t's storage */
WL_FUNCTION(m_as_strided) {
    wick_tensor *a = wl_checktensor(L, 1, "as_strided", "input");
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    int n = wl_sizes(L, 2, 2, sizes, "as_strided");
    int m = wl_sizes(L, 3, 3, strides, "as_strided");
    if (n != m) wl_raise(L, "as_strided: %d sizes but %d strides", n, m);
    int64_t offset = wl_checkint(L, 4, "as_strided", "the offset");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_as_strided(slot, a, n, sizes, strides, offset));
    return 1;
}

/* ---- elementwise ---- */

WL_FUNCTION(t_unary) {
    wick_unary_op op = (wick_unary_op)UPINT(1);
    int inplace = UPINT(2);
    wick_tensor *a = SELF(wick_unary_name(op));
    wl_no_more(L, 1, wick_unary_name(op));
    if (inplace) {
        WL_WRITE(L, wick_unary_(op, a));
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_unary(slot, op, a));
    wl_account(L);
    return 1;
}

/* a op b where either may be a number; `first` is which came first in Lua */
int wl_binary_values(lua_State *L, wick_binary_op op, int ia, int ib, double alpha) {
    const char *fn = wick_binary_name(op);
    wick_tensor *a = wl_totensor(L, ia), *b = wl_totensor(L, ib);
    wick_scalar s;
    wick_tensor **slot = wl_new_slot(L);
    if (a && b) {
        wl_check(L, alpha == 1 ? wick_binary(slot, op, a, b) : wick_add_scaled(slot, a, b, op == WICK_SUB ? -alpha : alpha));
    } else if (a && wl_toscalar(L, ib, &s)) {
        /* an integer only while alpha * other is one that fits an int64 (as wl_toscalar decides) */
        if (alpha != 1)
            s.value *= alpha, s.is_integer = s.is_integer && alpha == floor(alpha) && fabs(s.value) < 9223372036854775808.0;
        wl_check(L, wick_binary_scalar(slot, op, a, s, 0));
    } else if (b && wl_toscalar(L, ia, &s)) {
        wl_check(L, wick_binary_scalar(slot, op, b, s, 1));
    } else {
        wl_raise(L, "%s: expected tensors or numbers, got %s and %s", fn, a ? "tensor" : wl_describe(L, ia),
                 b ? "tensor" : wl_describe(L, ib));
    }
    wl_account(L);
    return 1;
}

/* alpha of fn (add, sub_, ...): a number or {alpha = x}; any other option is
 * an error, never silently alpha = 1 (vqvae's add_(s, alpha=1 - decay), misspelt) */
static double alpha_arg(lua_State *L, int idx, wick_binary_op op, const char *fn) {
    static const char *const keys[] = {"alpha", NULL};
    if (lua_isnoneornil(L, idx)) return 1;
    if (op != WICK_ADD && op != WICK_SUB) wl_raise(L, "%s: takes no third argument", fn);
    if (lua_type(L, idx) == LUA_TNUMBER) return lua_tonumber(L, idx);
    if (lua_istable(L, idx)) {
        wl_check_keys(L, idx, fn, keys);
        lua_getfield(L, idx, "alpha");
        double a = lua_isnil(L, -1) ? 1 : wl_checknumber(L, -1, fn, "option 'alpha'");
        lua_pop(L, 1);
        return a;
    }
    return wl_raise(L, "%s: expected alpha as a number or {alpha = ...}, got %s", fn, luaL_typename(L, idx));
}

/* t:add(other[, alpha]), t:eq(other), ... (upvalue: op) */
WL_FUNCTION(t_binary) {
    wick_binary_op op = (wick_binary_op)UPINT(1);
    SELF(wick_binary_name(op));
    double alpha = alpha_arg(L, 3, op, wick_binary_name(op));
    lua_settop(L, 2);
    return wl_binary_values(L, op, 1, 2, alpha);
}

/* t:add_(other[, alpha]) */
WL_FUNCTION(t_binary_) {
    wick_binary_op op = (wick_binary_op)UPINT(1);
    char fn[32];
    snprintf(fn, sizeof fn, "%s_", wick_binary_name(op));
    wick_tensor *a = SELF(fn);
    double alpha = alpha_arg(L, 3, op, fn);
    wick_tensor *b = wl_totensor(L, 2);
    wick_scalar s;
    if (b) {
        WL_WRITE(L, alpha == 1 ? wick_binary_(op, a, b) : wick_add_scaled_(a, b, op == WICK_SUB ? -alpha : alpha));
    } else if (wl_toscalar(L, 2, &s)) {
        s.value *= alpha;
        WL_WRITE(L, wick_binary_scalar_(op, a, s));
    } else {
        wl_raise(L, "%s_: expected a tensor or a number, got %s", wick_binary_name(op), luaL_typename(L, 2));
    }
    lua_settop(L, 1);
    return 1;
}

/* metamethods __add, __sub, ...: operands in Lua's order; a number over a tensor is
 * PyTorch's __rtruediv__, reciprocal(t) * number (its bits: 147 / t is not 147.0 / t) */
/* whether stack slot i holds a bool or uint8 tensor: a mask */
static int is_mask(lua_State *L, int i) {
    wick_tensor *t = wl_totensor(L, i);
    return t && (wick_tensor_dtype(t) == WICK_BOOL || wick_tensor_dtype(t) == WICK_UINT8);
}
/* whether stack slot i holds an integer tensor */
static int is_integer_tensor(lua_State *L, int i) {
    wick_tensor *t = wl_totensor(L, i);
    return t && !wick_dtype_is_floating(wick_tensor_dtype(t)) && !wick_dtype_is_complex(wick_tensor_dtype(t));
}

WL_FUNCTION(t_arith) {
    lua_settop(L, 2);
    wick_binary_op op = (wick_binary_op)UPINT(1);
    wick_tensor *b;
    /* Lua's ^ is power, Python's is xor: a mask's power is never meant (pytorch-metric-learning's
     * diffs = matches ^ 1 would pass silently, the mask unchanged) */
    if (op == WICK_POW && (is_mask(L, 1) || is_mask(L, 2)))
        wl_raise(L, "the ^ operator on a mask (a bool or uint8 tensor) is Lua's power, where Python's ^ is xor: "
                    "write mask:bitwise_xor(x) or mask:logical_xor(x) (mask:pow(x) for a power)");
    /* two integer tensors: HashNeRF's xor_result ^= coords * prime (a number exponent stays a power) */
    if (op == WICK_POW && is_integer_tensor(L, 1) && is_integer_tensor(L, 2))
        wl_raise(L, "the ^ operator on two integer tensors is Lua's power, where Python's ^ is xor: write "
                    "a:bitwise_xor(b) (a:pow(b) for a power)");
    if (op == WICK_DIV && lua_type(L, 1) == LUA_TNUMBER && (b = wl_totensor(L, 2)) &&
        !wick_dtype_is_complex(wick_tensor_dtype(b))) {
        wick_tensor **slot = wl_new_slot(L);
        wl_check(L, wick_unary(slot, WICK_RECIPROCAL, b));
        lua_replace(L, 2);
        return wl_binary_values(L, WICK_MUL, 2, 1, 1);
    }
    return wl_binary_values(L, op, 1, 2, 1);
}

WL_FUNCTION(t_unm) {
    wick_tensor *a = SELF("neg");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_unary(slot, WICK_NEG, a));
    return 1;
}

/* clamp(min, max) with nil for an open side, or clamp{min = , max = } */
static void clamp_bounds(lua_State *L, double *lo, double *hi) {
    *lo = -INFINITY, *hi = INFINITY;
    if (lua_istable(L, 2)) {
        lua_settop(L, 3); /* slot 3 must exist: the replaces below move max into 3, then min into 2 */
        lua_getfield(L, 2, "min");
        lua_getfield(L, 2, "max");
        lua_replace(L, 3);
        lua_replace(L, 2);
    }
    if (!lua_isnoneornil(L, 2)) *lo = wl_checknumber(L, 2, "clamp", "argument 'min'");
    if (!lua_isnoneornil(L, 3)) *hi = wl_checknumber(L, 3, "clamp", "argument 'max'");
    if (lua_isnoneornil(L, 2) && lua_isnoneornil(L, 3)) wl_raise(L, "clamp: at least one of min and max must be given");
}

WL_FUNCTION(t_clamp) {
    wick_tensor *a = SELF("clamp");
    static const char *const keys[] = {"min", "max", NULL};
    if (lua_istable(L, 2)) wl_check_keys(L, 2, "clamp", keys), wl_no_more(L, 2, "clamp");
    else wl_no_more(L, 3, "clamp");
    double lo, hi;
    clamp_bounds(L, &lo, &hi);
    if (UPINT(1)) {
        wick_dtype d = wick_tensor_dtype(a);
        if (!wick_dtype_is_floating(d) && !wick_dtype_is_complex(d) && ((isfinite(lo) && lo != floor(lo)) ||
                                                                       (isfinite(hi) && hi != floor(hi))))
            wl_raise(L, "clamp_: result type Float can't be cast to the desired output type %s (a fractional bound "
                        "on an integer tensor, as PyTorch refuses it)", wick_dtype_name(d));
        WL_WRITE(L, wick_clamp_(a, lo, hi));
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_clamp(slot, a, lo, hi));
    return 1;
}

/* core.hardtanh(x, lo, hi): clamp's values with PyTorch's hardtanh gradient (F.hardtanh, F.relu6) */
WL_FUNCTION(l_hardtanh) {
    wick_tensor *a = wl_checktensor(L, 1, "hardtanh", "input");
    double lo = wl_checknumber(L, 2, "hardtanh", "argument 'min_val'"),
           hi = wl_checknumber(L, 3, "hardtanh", "argument 'max_val'");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_hardtanh(slot, a, lo, hi));
    return 1;
}

/* A tensor or number operand of where(); a number becomes a 0-dim CPU tensor, which the
 * result's dtype takes no part in beside a tensor of its kind (PyTorch's wrapped number):
 * int64 for an integer, float64 beside a floating tensor (the result rounds it once: HF's
 * finfo(float64).min mask is exact, -1e10 in float16 is -inf), else the default dtype. */
static wick_tensor *where_operand(lua_State *L, int idx, int other, const char *arg) {
    wick_tensor *t = wl_totensor(L, idx);
    if (t) return t;
    wick_scalar s;
    if (!wl_toscalar(L, idx, &s)) wl_raise(L, "where: expected a tensor or a number for %s, got %s", arg, luaL_typename(L, idx));
    wick_tensor *o = wl_totensor(L, other);
    int beside_float = o && (wick_dtype_is_floating(wick_tensor_dtype(o)) || wick_dtype_is_complex(wick_tensor_dtype(o)));
    wick_dtype d = s.is_integer == WICK_SCALAR_BOOL ? WICK_BOOL
                   : s.is_integer                  ? WICK_INT64
                   : beside_float                  ? WICK_FLOAT64
                                                   : wl_default_options(L).dtype;
    wick_tensor **slot = wl_new_slot(L);
    lua_replace(L, idx);
    wl_check(L, wick_check_value("where", s.value, d)); /* (an overflow named as the call) */
    wl_check(L, wick_full(slot, 0, NULL, s.value, (wick_options){d, {WICK_CPU, -1}}));
    return *slot;
}

/* wick.where(cond, a, b) */
WL_FUNCTION(m_where) {
    wl_no_more(L, 3, "where");
    lua_settop(L, 3);
    wick_tensor *c = wl_checktensor(L, 1, "where", "condition");
    int numbers = (wl_totensor(L, 2) ? 0 : 1) | (wl_totensor(L, 3) ? 0 : 2);
    wick_tensor *a = where_operand(L, 2, 3, "input"), *b = where_operand(L, 3, 2, "other");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_where_numbers(slot, c, a, b, numbers));
    return 1;
}

/* ---- linear algebra ---- */

WL_FUNCTION(t_mm) {
    wick_tensor *a = SELF("mm"), *b = wl_checktensor(L, 2, "mm", "mat2");
    wl_no_more(L, 2, "mm");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_mm(slot, a, b));
    wl_account(L);
    return 1;
}

WL_FUNCTION(t_bmm) {
    wick_tensor *a = SELF("bmm"), *b = wl_checktensor(L, 2, "bmm", "mat2");
    wl_no_more(L, 2, "bmm");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_bmm(slot, a, b));
    wl_account(L);
    return 1;
}

WL_FUNCTION(t_matmul) {
    wick_tensor *a = SELF("matmul"), *b = wl_checktensor(L, 2, "matmul", "other");
    wl_no_more(L, 2, "matmul");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_matmul(slot, a, b));
    wl_account(L);
    return 1;
}

/* t:addmm(mat1, mat2[, {beta =, alpha =}]) */
WL_FUNCTION(t_addmm) {
    wick_tensor *in = SELF("addmm"), *m1 = wl_checktensor(L, 2, "addmm", "mat1"), *m2 = wl_checktensor(L, 3, "addmm", "mat2");
    static const char *const keys[] = {"beta", "alpha", NULL};
    double beta = 1, alpha = 1;
    wl_no_more(L, lua_istable(L, 4) ? 4 : 3, "addmm");
    if (lua_istable(L, 4)) {
        wl_check_keys(L, 4, "addmm", keys);
        lua_getfield(L, 4, "beta");
        if (!lua_isnil(L, -1)) beta = wl_checknumber(L, -1, "addmm", "option 'beta'");
        lua_getfield(L, 4, "alpha");
        if (!lua_isnil(L, -1)) alpha = wl_checknumber(L, -1, "addmm", "option 'alpha'");
        lua_pop(L, 2);
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_addmm(slot, in, m1, m2, beta, alpha));
    return 1;
}

/* ---- copying, values ---- */

WL_FUNCTION(t_copy_) {
    static const char *const keys[] = {"non_blocking", NULL}; /* (a copy here is synchronous) */
    wick_tensor *a = SELF("copy_"), *src = wl_checktensor(L, 2, "copy_", "src");
    if (lua_istable(L, 3)) wl_check_keys(L, 3, "copy_", keys), wl_no_more(L, 3, "copy_");
    else wl_no_more(L, 2, "copy_");
    WL_WRITE(L, wick_copy_(a, src));
    lua_settop(L, 1);
    return 1;
}

WL_FUNCTION(t_fill_) {
    wick_tensor *a = SELF("fill_");
    wick_scalar s;
    if (!wl_toscalar(L, 2, &s)) wl_raise(L, "fill_: expected a number, got %s", luaL_typename(L, 2));
    wl_no_more(L, 2, "fill_");
    WL_WRITE(L, wick_fill_(a, s.value));
    lua_settop(L, 1);
    return 1;
}

WL_FUNCTION(t_clone) {
    wick_tensor *a = SELF("clone");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_clone(slot, a));
    wl_account(L);
    return 1;
}

/* A value read as an int64 (exact), or as a double for every other dtype, pushed
 * as Lua sees that dtype: boolean, integer or number. */
static void push_int64(lua_State *L, int64_t v) {
    if (!WL_EXACT_INT64 && (v > 9007199254740992LL || v < -9007199254740992LL))
        wl_raise(L, "int64 value %lld cannot be represented exactly as a Lua number (beyond 2^53)", (long long)v);
    wl_pushint64(L, v);
}

static void push_number(lua_State *L, wick_dtype d, double v) {
    if (d == WICK_BOOL) lua_pushboolean(L, v != 0);
    else if (d == WICK_INT32 || d == WICK_UINT8) wl_pushint64(L, (int64_t)v);
    else lua_pushnumber(L, v);
}

static void push_value(lua_State *L, const wick_tensor *t, const char *p) {
    wick_dtype d = wick_tensor_dtype(t);
    if (d == WICK_INT64) {
        push_int64(L, *(const int64_t *)p);
    } else if (wick_dtype_is_complex(d)) { /* a pair {re, im}: Lua has no complex numbers */
        size_t half = wick_dtype_size(d) / 2;
        wick_dtype part = half == 4 ? WICK_FLOAT32 : WICK_FLOAT64;
        lua_createtable(L, 2, 0);
        lua_pushnumber(L, wick_value_as_double(p, part));
        lua_rawseti(L, -2, 1);
        lua_pushnumber(L, wick_value_as_double(p + half, part));
        lua_rawseti(L, -2, 2);
    } else {
        push_number(L, d, wick_value_as_double(p, d));
    }
}

/* One copy to the CPU where the tensor lives on a GPU (one wait: a training
 * step's loss:item() is its only one) */
WL_FUNCTION(t_item) {
    wick_tensor *a = SELF("item");
    if (wick_tensor_dtype(a) == WICK_INT64) {
        int64_t v;
        wl_check(L, wick_item_int64(a, &v));
        push_int64(L, v);
    } else {
        double v;
        wl_check(L, wick_item_double(a, &v));
        push_number(L, wick_tensor_dtype(a), v);
    }
    return 1;
}

/* t:_int64_str(): the value of a one-element tensor as an exact decimal string
 * (printing uses it for int64, whose values beyond 2^53 item() refuses). */
WL_FUNCTION(t_int64_str) {
    wick_tensor *a = SELF("item");
    int64_t v;
    wl_check(L, wick_item_int64(a, &v));
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    lua_pushstring(L, buf);
    return 1;
}

/* `a` itself when on the CPU, else a CPU copy held on the Lua stack (so an
 * error raised while reading it leaks nothing). */
static wick_tensor *on_host(lua_State *L, wick_tensor *a) {
    if (wick_tensor_device(a).type == WICK_CPU) return a;
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_to(slot, a, (wick_options){wick_tensor_dtype(a), wick_cpu(), 0}));
    return *slot;
}

static void totable_rec(lua_State *L, const wick_tensor *t, int dim, const char *p) {
    size_t es = wick_dtype_size(wick_tensor_dtype(t));
    if (dim == wick_tensor_ndim(t)) {
        push_value(L, t, p);
        return;
    }
    int64_t n = wick_tensor_sizes(t)[dim], s = wick_tensor_strides(t)[dim];
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        totable_rec(L, t, dim + 1, p + i * s * (int64_t)es);
        lua_rawseti(L, -2, (int)i + 1);
    }
}

WL_FUNCTION(t_totable) {
    wick_tensor *a = SELF("totable");
    if (wick_tensor_device(a).type == WICK_META) wl_raise(L, "totable: a meta tensor has no data to read");
    /* every level's entries (a stride-0 or empty view can name far more than exist)
     * must fit a Lua array: refuse before building any */
    int64_t entries = 1, total = 0;
    for (int d = 0; d < wick_tensor_ndim(a) && entries; d++)
        if (__builtin_mul_overflow(entries, wick_tensor_sizes(a)[d], &entries) || (total += entries) > INT_MAX)
            wl_raise(L, "totable: the tensor would make more than 2^31 Lua values (size %lld along dimension %d)",
                     (long long)wick_tensor_sizes(a)[d], d + 1);
    a = on_host(L, a);
    totable_rec(L, a, 0, (const char *)wick_tensor_data(a));
    return 1;
}

WL_FUNCTION(t_pin_memory) {
    wick_tensor *a = SELF("pin_memory");
    if (wick_tensor_is_pinned(a)) {
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_pin_memory(slot, a));
    return 1;
}

WL_FUNCTION(t_is_pinned) {
    lua_pushboolean(L, wick_tensor_is_pinned(SELF("is_pinned")));
    return 1;
}

/* t:to(device | dtype | {device =, dtype =, non_blocking =} | other tensor) */
WL_FUNCTION(t_to) {
    wick_tensor *a = SELF("to");
    wick_options opt = {wick_tensor_dtype(a), wick_tensor_device(a)};
    for (int i = 2; i <= lua_gettop(L); i++) {
        wick_tensor *other = wl_totensor(L, i);
        wick_dtype d;
        if (other) opt = (wick_options){wick_tensor_dtype(other), wick_tensor_device(other)};
        else if (lua_type(L, i) == LUA_TSTRING && wick_dtype_parse(lua_tostring(L, i), &d) == WICK_OK) opt.dtype = d;
        else if (lua_type(L, i) == LUA_TSTRING || lua_type(L, i) == LUA_TNUMBER) opt.device = wl_device(L, i, "to");
        else if (lua_istable(L, i)) {
            lua_getfield(L, i, "type");
            int is_device = !lua_isnil(L, -1);
            lua_pop(L, 1);
            if (is_device) {
                opt.device = wl_device(L, i, "to");
            } else {
                if (wl_options(L, i, &opt, "to") != -1) wl_raise(L, "to: requires_grad is not an option of to()");
            }
        } else if (!lua_isnil(L, i)) { /* t:to(nil) is t, as PyTorch's t.to(None) (a device argument left None) */
            wl_raise(L, "to: expected a device, a dtype, an options table or a tensor, got %s", luaL_typename(L, i));
        }
    }
    int current; /* "cuda" is the current device: t:cuda() on a tensor already there is t itself */
    if (opt.device.type == WICK_CUDA && opt.device.index < 0 && wick_cuda_current_device(&current) == WICK_OK)
        opt.device.index = current;
    if (opt.dtype == wick_tensor_dtype(a) && wick_device_equal(opt.device, wick_tensor_device(a))) {
        lua_settop(L, 1); /* nothing changes: the same object, like PyTorch */
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_to(slot, a, opt));
    wl_account(L);
    return 1;
}

/* ---- metadata ---- */

static void push_shape(lua_State *L, int n, const int64_t *v) {
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        wl_pushint64(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

WL_FUNCTION(t_shape) {
    wick_tensor *a = SELF("shape");
    push_shape(L, wick_tensor_ndim(a), wick_tensor_sizes(a));
    return 1;
}

WL_FUNCTION(t_size) {
    wick_tensor *a = SELF("size");
    if (lua_isnoneornil(L, 2)) {
        push_shape(L, wick_tensor_ndim(a), wick_tensor_sizes(a));
        return 1;
    }
    if (lua_gettop(L) > 2 && !lua_isnil(L, 3))
        wl_raise(L, "size: takes one dim, got %d arguments (every size: x:size(), whose values unpack(x:size()) "
                    "gives)", lua_gettop(L) - 1);
    int dim = wl_dim(L, 2, "size");
    int n = wick_tensor_ndim(a);
    if (dim < 0) dim += n;
    if (dim < 0 || dim >= n) wl_raise(L, "size: dimension %d out of range for a %d-D tensor", (int)lua_tonumber(L, 2), n);
    wl_pushint64(L, wick_tensor_sizes(a)[dim]);
    return 1;
}

WL_FUNCTION(t_stride) {
    wick_tensor *a = SELF("stride");
    int n = wick_tensor_ndim(a);
    if (lua_isnoneornil(L, 2)) {
        push_shape(L, n, wick_tensor_strides(a));
        return 1;
    }
    int dim = wl_dim(L, 2, "stride");
    if (dim < 0) dim += n;
    if (dim < 0 || dim >= n) wl_raise(L, "stride: dimension out of range for a %d-D tensor", n);
    wl_pushint64(L, wick_tensor_strides(a)[dim]);
    return 1;
}

WL_FUNCTION(t_dim) {
    lua_pushinteger(L, wick_tensor_ndim(SELF("dim")));
    return 1;
}

WL_FUNCTION(t_numel) {
    wl_pushint64(L, wick_tensor_numel(SELF("numel")));
    return 1;
}

WL_FUNCTION(t_len) {
    wick_tensor *a = SELF("len");
    if (wick_tensor_ndim(a) == 0) wl_raise(L, "len() of a 0-d tensor");
    wl_pushint64(L, wick_tensor_sizes(a)[0]);
    return 1;
}

WL_FUNCTION(t_is_contiguous) {
    lua_pushboolean(L, wick_tensor_is_contiguous(SELF("is_contiguous")));
    return 1;
}

WL_FUNCTION(t_dtype) {
    lua_pushstring(L, wick_dtype_name(wick_tensor_dtype(SELF("dtype"))));
    return 1;
}

WL_FUNCTION(t_storage_offset) {
    wl_pushint64(L, wick_tensor_offset(SELF("storage_offset")));
    return 1;
}

/* An opaque id of the storage, equal for tensors that share memory. */
WL_FUNCTION(t_storage_id) {
    lua_pushlightuserdata(L, (void *)wick_tensor_storage_id(SELF("storage_id")));
    return 1;
}

/* t._version (PyTorch's): the in-place writes autograd has seen on the storage */
WL_FUNCTION(t_version) {
    lua_pushinteger(L, wick_tensor_version(SELF("_version")));
    return 1;
}

/* t:data_ptr(): the address of the view's first element, a number (0 on meta),
 * as PyTorch's (tied weights compare equal) */
WL_FUNCTION(t_data_ptr) {
    lua_pushnumber(L, (lua_Number)(uintptr_t)wick_tensor_data(SELF("data_ptr")));
    return 1;
}

WL_FUNCTION(t_gc) {
    wick_tensor **p = lua_touserdata(L, 1);
    if (p && *p) {
        wick_tensor_release(*p);
        *p = NULL;
    }
    return 0;
}

/* ---- autograd ---- */

WL_FUNCTION(t_requires_grad) {
    lua_pushboolean(L, wick_requires_grad(SELF("requires_grad")));
    return 1;
}

WL_FUNCTION(t_is_parameter) {
    lua_pushboolean(L, wick_is_parameter(SELF("_is_parameter")));
    return 1;
}

/* t:_reaches_other_leaf({leaves...}): whether t's graph reaches a leaf that
 * requires grad other than those (wick.func's nesting rule) */
WL_FUNCTION(t_reaches_other_leaf) {
    wick_tensor *a = SELF("_reaches_other_leaf");
    luaL_checktype(L, 2, LUA_TTABLE);
    int n = (int)lua_objlen(L, 2);
    if (n > 4096) n = 4096; /* (the transforms pass a few; more are ignored, which only keeps a graph) */
    const wick_tensor *leaves[4096];
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        leaves[i] = wl_checktensor(L, -1, "_reaches_other_leaf", "leaves");
        lua_pop(L, 1);
    }
    int reaches = 0;
    wl_check(L, wick_graph_reaches_other_leaf(a, n, leaves, &reaches));
    lua_pushboolean(L, reaches);
    return 1;
}

/* t.requires_grad = b, and t:requires_grad_([b]) which returns t */
WL_FUNCTION(t_set_requires_grad) {
    wick_tensor *a = SELF("requires_grad");
    if (!lua_isnoneornil(L, 2) && !lua_isboolean(L, 2))
        wl_raise(L, "requires_grad: expected a boolean, got %s", luaL_typename(L, 2));
    wl_check(L, wick_set_requires_grad(a, lua_isnone(L, 2) ? 1 : lua_toboolean(L, 2)));
    lua_settop(L, 1);
    return 1;
}

WL_FUNCTION(t_grad) {
    wick_tensor *g = wick_grad(SELF("grad"));
    if (!g) return 0;
    wick_tensor_retain(g); /* the slot owns one reference; it never raises after this */
    *wl_new_slot(L) = g;
    return 1;
}

WL_FUNCTION(t_set_grad) {
    wick_tensor *a = SELF("grad");
    wick_tensor *g = lua_isnil(L, 2) ? NULL : wl_checktensor(L, 2, "grad", "value");
    wl_check(L, wick_set_grad(a, g));
    return 0;
}

WL_FUNCTION(t_grad_fn) {
    const char *name = wick_grad_fn_name(SELF("grad_fn"));
    if (!name) return 0;
    lua_pushstring(L, name);
    return 1;
}

WL_FUNCTION(t_is_leaf) {
    lua_pushboolean(L, wick_is_leaf(SELF("is_leaf")));
    return 1;
}

WL_FUNCTION(t_detach) {
    wick_tensor *a = SELF("detach");
    wl_no_more(L, 1, "detach");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_detach(slot, a));
    return 1;
}

/* t:_data(): PyTorch's t.data (wick_data): detach's view, whose writes autograd's checks do not see */
WL_FUNCTION(t_data) {
    wick_tensor *a = SELF("data");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_data(slot, a));
    return 1;
}

/* t:detach_(): t itself leaves the graph; returns t */
WL_FUNCTION(t_detach_) {
    wl_check(L, wick_detach_(SELF("detach_")));
    lua_settop(L, 1);
    return 1;
}

/* t:_replace(src): t takes src's data in place (wick_tensor_set_; PyTorch's
 * `param.data = src`), keeping its identity, requires_grad and grad. */
WL_FUNCTION(t_replace) {
    wick_tensor *a = SELF("_replace"), *src = wl_checktensor(L, 2, "_replace", "src");
    wl_check(L, wick_tensor_set_(a, src));
    lua_settop(L, 1);
    return 1;
}

/* core.tensors_to(tensors, device_code | nil, dtype | nil, non_blocking):
 * Module:to's one crossing (wick_tensors_to_): every tensor of the array and
 * its grad moves in place, each once, with one wait per GPU. Returns how many
 * complex tensors went to a real dtype (their imaginary parts discarded, which
 * the caller warns of). */
WL_FUNCTION(m_tensors_to) {
    const char *fn = "Module:to";
    if (!lua_istable(L, 1)) wl_raise(L, "%s: expected an array of tensors, got %s", fn, luaL_typename(L, 1));
    size_t n = lua_objlen(L, 1);
    if (n > (size_t)INT_MAX / 2) wl_raise(L, "%s: too many tensors (%zu)", fn, n);
    wick_device dev, *devp = NULL;
    if (!lua_isnoneornil(L, 2)) {
        if (lua_type(L, 2) != LUA_TNUMBER || !wl_device_from_code(lua_tointeger(L, 2), &dev))
            wl_raise(L, "%s: expected a device number, got %s", fn, luaL_typename(L, 2));
        devp = &dev;
    }
    wick_dtype dtype, *dtypep = NULL;
    if (!lua_isnoneornil(L, 3)) dtypep = (dtype = wl_dtype(L, 3, fn), &dtype);
    int non_blocking = lua_toboolean(L, 4);
    /* the array lives in a userdata: freed by the collector if anything raises */
    wick_tensor **ts = lua_newuserdata(L, sizeof *ts * (n ? n : 1));
    int made_real = 0;
    for (size_t i = 0; i < n; i++) {
        lua_rawgeti(L, 1, (int)i + 1);
        ts[i] = wl_checktensor(L, -1, fn, "tensor");
        lua_pop(L, 1);
        made_real += dtypep && !wick_dtype_is_complex(dtype) && wick_dtype_is_complex(wick_tensor_dtype(ts[i]));
    }
    wl_check(L, wick_tensors_to_((int)n, ts, devp, dtypep, non_blocking));
    wl_account(L);
    lua_pushinteger(L, made_real);
    return 1;
}

/* t:_device_code(): t's device as one number (wl_device_code): Lua finds the
 * interned device object by it, no string made */
WL_FUNCTION(t_device_code) {
    lua_pushinteger(L, wl_device_code(wick_tensor_device(SELF("_device_code"))));
    return 1;
}

/* ---- the fast paths, as C function pointers for LuaJIT's FFI ---- */

WL_FUNCTION(m_fast_pointers) {
    lua_createtable(L, 0, 3);
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_try_fast_binary_);
    lua_setfield(L, -2, "binary_inplace");
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_try_fast_binary);
    lua_setfield(L, -2, "binary");
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_try_fast_binary_scalar);
    lua_setfield(L, -2, "binary_scalar");
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_try_fast_mm);
    lua_setfield(L, -2, "mm");
    lua_newtable(L); /* binary op ids by name, so the Lua side never hard-codes the enum */
    for (int op = 0; op < WICK_NUM_BINARY; op++) {
        lua_pushinteger(L, op);
        lua_setfield(L, -2, wick_binary_name((wick_binary_op)op));
    }
    lua_setfield(L, -2, "binary_ops");
    return 1;
}

/* core.fill_slots(t, n): appends n empty tensor userdata to the array t. The
 * FFI fast paths take their result objects from such a pool, so making a tensor
 * costs no call through the classic C API. */
WL_FUNCTION(m_fill_slots) {
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)luaL_checknumber(L, 2), len = (int)lua_objlen(L, 1);
    for (int i = 1; i <= n; i++) {
        wl_new_slot(L);
        lua_rawseti(L, 1, len + i);
    }
    wl_account(L); /* the fast paths' tensors count towards collector pacing too */
    return 0;
}

/* core.promote_types(a, b): PyTorch's promotion of two dtype names (wick_promote_types) */
WL_FUNCTION(m_promote_types) {
    wick_dtype a = wl_dtype(L, 1, "promote_types"), b = wl_dtype(L, 2, "promote_types");
    lua_pushstring(L, wick_dtype_name(wick_promote_types(a, b)));
    return 1;
}

/* ---- registration ---- */

static void set_closure(lua_State *L, const char *name, lua_CFunction f, int up1, int up2) {
    lua_pushinteger(L, up1);
    lua_pushinteger(L, up2);
    lua_pushcclosure(L, f, 2);
    lua_setfield(L, -2, name);
}

static void set_fn(lua_State *L, const char *name, lua_CFunction f) {
    lua_pushcfunction(L, f);
    lua_setfield(L, -2, name);
}

static const luaL_Reg module_fns[] = {
    {"where", m_where},
    {"fast_pointers", m_fast_pointers},
    {"fill_slots", m_fill_slots},
    {"as_strided", m_as_strided},
    {"tensor_storage_key", t_storage_id},
    {"tensors_to", m_tensors_to},
    {"promote_types", m_promote_types},
    {"hardtanh", l_hardtanh},
    {NULL, NULL}};

static const luaL_Reg method_fns[] = {
    {"mm", t_mm}, {"bmm", t_bmm}, {"matmul", t_matmul}, {"addmm", t_addmm},
    {"copy_", t_copy_}, {"fill_", t_fill_}, {"clone", t_clone}, {"item", t_item}, {"_int64_str", t_int64_str},
    {"totable", t_totable}, {"to", t_to}, {"pin_memory", t_pin_memory}, {"is_pinned", t_is_pinned}, {"size", t_size}, {"stride", t_stride}, {"dim", t_dim},
    {"numel", t_numel}, {"is_contiguous", t_is_contiguous}, {"storage_offset", t_storage_offset},
    {"_storage_id", t_storage_id}, {"_version_count", t_version}, {"data_ptr", t_data_ptr}, {"_dtype", t_dtype}, {"_device_code", t_device_code}, {"_shape", t_shape},
    {"_requires_grad", t_requires_grad}, {"_is_parameter", t_is_parameter},
    {"_reaches_other_leaf", t_reaches_other_leaf},
    {"requires_grad_", t_set_requires_grad}, {"_grad", t_grad}, {"_set_grad", t_set_grad}, {"_grad_fn", t_grad_fn},
    {"_is_leaf", t_is_leaf}, {"detach", t_detach}, {"_data", t_data}, {"detach_", t_detach_}, {"_replace", t_replace}, {NULL, NULL}};

/* Fills the module table at -1: functions, and `Tensor` (methods) and `_mt`. */
void wl_open_tensor(lua_State *L) {
    luaL_register(L, NULL, module_fns);
    lua_createtable(L, WICK_NUM_DTYPES, 0); /* core.dtypes: the names, in wick_dtype order */
    for (int d = 0; d < WICK_NUM_DTYPES; d++) {
        lua_pushstring(L, wick_dtype_name((wick_dtype)d));
        lua_rawseti(L, -2, d + 1);
    }
    lua_setfield(L, -2, "dtypes");
    /* core.dtype_info[name] = {name, index (1-based, as in core.dtypes), size,
     * is_floating, is_signed, digits, is_complex}: the core's table (wick_dtype_info_of),
     * the one place Lua reads dtype facts from; core.dtype_aliases[alias] = name */
    lua_createtable(L, 0, WICK_NUM_DTYPES);
    for (int d = 0; d < WICK_NUM_DTYPES; d++) {
        const wick_dtype_info *info = wick_dtype_info_of((wick_dtype)d);
        if (!info) continue;
        lua_createtable(L, 0, 6);
        lua_pushstring(L, info->name);
        lua_setfield(L, -2, "name");
        lua_pushinteger(L, d + 1);
        lua_setfield(L, -2, "index");
        lua_pushinteger(L, info->size);
        lua_setfield(L, -2, "size");
        lua_pushboolean(L, info->is_floating);
        lua_setfield(L, -2, "is_floating");
        lua_pushboolean(L, info->is_signed);
        lua_setfield(L, -2, "is_signed");
        lua_pushboolean(L, info->is_complex);
        lua_setfield(L, -2, "is_complex");
        lua_pushinteger(L, info->digits);
        lua_setfield(L, -2, "digits");
        lua_setfield(L, -2, info->name);
    }
    lua_setfield(L, -2, "dtype_info");
    lua_newtable(L);
    wick_dtype aliased;
    for (int i = 0; wick_dtype_alias(i, &aliased); i++) {
        lua_pushstring(L, wick_dtype_name(aliased));
        lua_setfield(L, -2, wick_dtype_alias(i, NULL));
    }
    lua_setfield(L, -2, "dtype_aliases");

    lua_newtable(L); /* methods */
    luaL_register(L, NULL, method_fns);
    char name[32];
    for (int op = 0; op < WICK_NUM_UNARY; op++) {
        set_closure(L, wick_unary_name((wick_unary_op)op), t_unary, op, 0);
        snprintf(name, sizeof name, "%s_", wick_unary_name((wick_unary_op)op));
        set_closure(L, name, t_unary, op, 1);
    }
    for (int op = 0; op < WICK_NUM_BINARY; op++) {
        set_closure(L, wick_binary_name((wick_binary_op)op), t_binary, op, 0);
        snprintf(name, sizeof name, "%s_", wick_binary_name((wick_binary_op)op));
        set_closure(L, name, t_binary_, op, 0);
    }
    set_closure(L, "clamp", t_clamp, 0, 0);
    set_closure(L, "clamp_", t_clamp, 1, 0);
    lua_setfield(L, -2, "Tensor");

    luaL_newmetatable(L, WL_TENSOR_MT);
    set_fn(L, "__gc", t_gc);
    set_fn(L, "__len", t_len);
    set_fn(L, "__unm", t_unm);
    static const struct {
        const char *name;
        wick_binary_op op;
    } arith[] = {{"__add", WICK_ADD}, {"__sub", WICK_SUB}, {"__mul", WICK_MUL}, {"__div", WICK_DIV}, {"__pow", WICK_POW},
                 {"__mod", WICK_REMAINDER}};
    for (size_t i = 0; i < sizeof arith / sizeof *arith; i++) set_closure(L, arith[i].name, t_arith, arith[i].op, 0);
    lua_pushstring(L, "wick.Tensor");
    lua_setfield(L, -2, "__name");
    lua_setfield(L, -2, "_mt");
    wl_open_creation(L);
    wl_open_runtime(L);
    wl_open_io(L);
    wl_open_tensorboard(L);
    wl_open_reduce(L);
    wl_open_view(L);
    wl_open_nn(L);
    wl_open_norm(L);
    wl_open_rnn(L);
    wl_open_ops(L);
    wl_open_index(L);
    wl_open_autograd(L);
}
