/* Argument checking and error raising for the Lua binding. */
#include "wick_lua.h"

#include "gc_pace.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Registry key: the source prefix of wick's own Lua files ("@/path/lua/wick/"). */
static const char lua_dir_key = 0;
static const char tensor_mt_key = 0;

static bool is_own_frame(lua_State *L, lua_Debug *ar) {
    if (ar->currentline <= 0 || strcmp(ar->what, "C") == 0) return true;
    lua_pushlightuserdata(L, (void *)&lua_dir_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    size_t n = 0;
    const char *prefix = lua_tolstring(L, -1, &n);
    bool own = prefix && n > 0 && strncmp(ar->source, prefix, n) == 0;
    lua_pop(L, 1);
    return own;
}

int wl_raise(lua_State *L, const char *fmt, ...) {
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return wl_raise_from(L, 1, msg);
}

int wl_raise_from(lua_State *L, int first_level, const char *msg) {
    lua_Debug ar, nearest;
    bool found = false, have_nearest = false;
    for (int level = first_level; lua_getstack(L, level, &ar); level++) {
        lua_getinfo(L, "Sl", &ar);
        if (!have_nearest && ar.currentline > 0) nearest = ar, have_nearest = true;
        if (!is_own_frame(L, &ar)) {
            found = true;
            break;
        }
    }
    if (!found && have_nearest) ar = nearest, found = true;
    if (found) lua_pushfstring(L, "%s:%d: %s", ar.short_src, ar.currentline, msg);
    else lua_pushstring(L, msg);
    return lua_error(L);
}

/* The out-of-memory handler is armed while a binding runs an op (from
 * wl_new_slot to wl_check), so it never points at a state that has closed. */
static void collect_garbage(void *L) { lua_gc((lua_State *)L, LUA_GCCOLLECT, 0); }

/* An interrupted op fails by itself (WICK_ERR_INTERRUPTED, never a partial
 * result); the state's flag is also looked at after an op that succeeded, so a
 * compiled loop of ops that run no kernel (views) stops too. */
void wl_check(lua_State *L, wick_status st) {
    wick_set_oom_handler(NULL, NULL);
    if (st != WICK_OK) wl_raise(L, "%s", wick_last_error());
    if (wl_take_interrupt(L)) wl_raise(L, "interrupted");
}

/* Collector pacing by CPU and GPU bytes in use: the decisions are gc_pace.h's. */
void wl_account(lua_State *L) {
    wl_gc_pace *pace = wl_gc_threshold(L);
    if (!pace || !wl_gc_due(pace, wick_cpu_bytes_in_use(), wick_cuda_bytes_in_use())) return;
    lua_gc(L, LUA_GCCOLLECT, 0);
    wl_gc_collected(pace, wick_cpu_bytes_in_use(), wick_cuda_bytes_in_use(), (int64_t)lua_gc(L, LUA_GCCOUNT, 0) << 10);
}

/* ---- tensors ---- */

static void push_tensor_mt(lua_State *L) {
    lua_pushlightuserdata(L, (void *)&tensor_mt_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
}

void wl_register_tensor_mt(lua_State *L, int idx, const char *lua_dir_prefix) {
    lua_pushvalue(L, idx);
    lua_pushlightuserdata(L, (void *)&tensor_mt_key);
    lua_insert(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    if (lua_dir_prefix) {
        lua_pushlightuserdata(L, (void *)&lua_dir_key);
        lua_pushstring(L, lua_dir_prefix);
        lua_rawset(L, LUA_REGISTRYINDEX);
    }
}

wick_tensor *wl_totensor(lua_State *L, int idx) {
    wick_tensor **p = lua_touserdata(L, idx);
    if (!p || !lua_getmetatable(L, idx)) return NULL;
    wl_enter(L); /* a tensor argument: an op of this state is about to run */
    push_tensor_mt(L);
    int same = lua_rawequal(L, -1, -2);
    lua_pop(L, 2);
    return same ? *p : NULL;
}

const char *wl_describe(lua_State *L, int idx) {
    if (idx < 0 && idx > LUA_REGISTRYINDEX) idx = lua_gettop(L) + idx + 1;
    if (lua_type(L, idx) != LUA_TTABLE) return luaL_typename(L, idx);
    if (lua_getmetatable(L, idx)) { /* a Size where a number goes: a ported `B, T, C = x.size()` */
        lua_pushliteral(L, "__name");
        lua_rawget(L, -2);
        int size = lua_type(L, -1) == LUA_TSTRING && strcmp(lua_tostring(L, -1), "Size") == 0;
        lua_pop(L, 2);
        if (size) return "a Size (Python's `B, T, C = x.size()` is `local B, T, C = x:size():unpack()`)";
    }
    lua_rawgeti(L, idx, 1); /* split's, chunk's or unbind's result? */
    int tensors = wl_totensor(L, -1) != NULL;
    lua_pop(L, 1);
    if (tensors)
        return lua_pushfstring(L, "a table of %d tensors (split, chunk, unbind and LSTMCell give one table: "
                                  "unpack(...) it, or index it)", (int)lua_objlen(L, idx));
    return luaL_typename(L, idx);
}

wick_tensor *wl_checktensor(lua_State *L, int idx, const char *fn, const char *arg) {
    wick_tensor *t = wl_totensor(L, idx);
    if (t) return t;
    if (lua_type(L, idx) == LUA_TTABLE)
        wl_raise(L, "%s: expected a tensor for argument '%s', got %s", fn, arg, wl_describe(L, idx));
    if (lua_type(L, idx) == LUA_TBOOLEAN) /* (a ported t == 0: Lua's comparison, a constant boolean) */
        wl_raise(L, "%s: expected a tensor for argument '%s', got a boolean (%s): Lua's == and ~= give one boolean, "
                    "not a tensor of comparisons, so write t:eq(x) or t:ne(x)",
                 fn, arg, lua_toboolean(L, idx) ? "true" : "false");
    wl_raise(L, "%s: expected a tensor for argument '%s', got %s", fn, arg, luaL_typename(L, idx));
    return NULL;
}

wick_tensor **wl_new_slot(lua_State *L) {
    wick_tensor **slot = lua_newuserdata(L, sizeof *slot);
    *slot = NULL;
    wl_enter(L);
    wick_set_oom_handler(collect_garbage, L);
    push_tensor_mt(L);
    lua_setmetatable(L, -2);
    return slot;
}

/* ---- arguments ---- */

lua_Number wl_checknumber(lua_State *L, int idx, const char *fn, const char *what) {
    if (lua_type(L, idx) != LUA_TNUMBER) {
        wick_tensor *t = wl_totensor(L, idx); /* a tensor is named as one, not as Lua's userdata */
        wick_dtype dt = t ? wick_tensor_dtype(t) : WICK_FLOAT32;
        if (t && wick_tensor_ndim(t) == 0 && dt != WICK_BOOL && !wick_dtype_is_complex(dt)) {
            double v; /* a 0-dim real tensor as its number, PyTorch's Scalar (L-BFGS' p.add_(d, alpha=t)) */
            wl_check(L, wick_item_double(t, &v));
            return v;
        }
        if (t)
            wl_raise(L, "%s: expected a number for %s, got a %s tensor of %d dims", fn, what,
                     wick_dtype_name(wick_tensor_dtype(t)), wick_tensor_ndim(t));
        wl_raise(L, "%s: expected a number for %s, got %s", fn, what, wl_describe(L, idx));
    }
    return lua_tonumber(L, idx);
}

const char *wl_checkstring(lua_State *L, int idx, const char *fn, const char *what) {
    if (lua_type(L, idx) != LUA_TSTRING)
        wl_raise(L, "%s: expected a string for %s, got %s", fn, what, luaL_typename(L, idx));
    return lua_tostring(L, idx);
}

int64_t wl_checkint(lua_State *L, int idx, const char *fn, const char *what) {
    wick_tensor *t = lua_type(L, idx) == LUA_TUSERDATA ? wl_totensor(L, idx) : NULL;
    if (t && wick_tensor_ndim(t) == 0 && !wick_dtype_is_floating(wick_tensor_dtype(t)) &&
        wick_tensor_dtype(t) != WICK_BOOL) { /* a 0-dim integer tensor as its number (Python's __index__) */
        int64_t v;
        wl_check(L, wick_item_int64(t, &v));
        return v;
    }
    if (t) /* (a floating one is no integer, as PyTorch's sizes refuse it) */
        wl_raise(L, "%s: expected a number for %s, got a %s tensor of %d dims", fn, what,
                 wick_dtype_name(wick_tensor_dtype(t)), wick_tensor_ndim(t));
    lua_Number v = wl_checknumber(L, idx, fn, what);
    if (v != floor(v) || fabs(v) > 9.007199254740992e15)
        wl_raise(L, "%s: expected an integer for %s, got %.17g", fn, what, v);
    return (int64_t)v;
}

/* A table of sizes holds its m sizes and nothing else: a key there is an option no size list takes
 * (x:expand(3, 3, {bogus = 1}), zeros({2, dtype = ...}, 3)), never dropped in silence. */
static void sizes_only(lua_State *L, int idx, int m, const char *fn) {
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        lua_Number k = lua_type(L, -2) == LUA_TNUMBER ? lua_tonumber(L, -2) : 0;
        if (k < 1 || k > m || k != floor(k)) {
            if (lua_type(L, -2) == LUA_TSTRING) wl_raise(L, "%s: unknown option '%s' among the sizes (options go in one table, the last argument)", fn,
                                                      lua_tostring(L, -2));
            if (lua_type(L, -2) == LUA_TNUMBER)
                wl_raise(L, "%s: a table of sizes holds sizes 1..%d only, got the key %s%s", fn, m, lua_tostring(L, -2),
                         k < 1 ? " (sizes count from 1; a negative index writes nothing to a plain table)" : "");
            wl_raise(L, "%s: a table of sizes holds sizes 1..%d only, got a %s key", fn, m, luaL_typename(L, -2));
        }
        lua_pop(L, 1);
    }
}

/* PyTorch's keyword form of a size list, {size = sizes} or {shape = sizes} (torch.broadcast_to(x,
 * size=(2, 3)), x.reshape(shape=s)), alone in its table: its value in place of the table at idx */
static void keyword_sizes(lua_State *L, int idx, const char *fn) {
    const char *names[] = {"size", "shape"};
    for (int k = 0; k < 2; k++) {
        lua_getfield(L, idx, names[k]);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushnil(L);
        while (lua_next(L, idx)) { /* nothing else beside it */
            lua_pop(L, 1);
            if (lua_type(L, -1) != LUA_TSTRING || strcmp(lua_tostring(L, -1), names[k]))
                wl_raise(L, "%s: got %s beside its option '%s'", fn, lua_type(L, -1) == LUA_TSTRING ? "another option" : "sizes",
                         names[k]);
        }
        if (lua_istable(L, -1) && !wl_totensor(L, -1)) sizes_only(L, lua_gettop(L), (int)lua_objlen(L, -1), fn);
        lua_replace(L, idx);
        return;
    }
}

/* The sizes in arguments first..last: numbers (or 0-dim integer tensors), tables of them (a Size),
 * or both, each table standing for its sizes in place: Python's f(*size, a, b) is f(size, a, b)
 * (HF's q.view(*input_shape, -1, head_dim)), as f(size + {a, b}) is. */
int wl_sizes(lua_State *L, int first, int last, int64_t *sizes, const char *fn) {
    int n = 0;
    for (int i = first; i <= last; i++) {
        if (first == last && lua_istable(L, i) && !wl_totensor(L, i)) keyword_sizes(L, i, fn);
        if (lua_istable(L, i)) {
            int m = (int)lua_objlen(L, i);
            if (m > WICK_MAX_DIMS - n) wl_raise(L, "%s: at most %d dimensions, got %d or more", fn, WICK_MAX_DIMS, n + m);
            for (int j = 0; j < m; j++) {
                lua_rawgeti(L, i, j + 1);
                /* a Size among other sizes stands for its sizes: Python's (*shape, -1, d); a Size alone in the
                 * table is makemore's `local B, T = x:size()` (the Size in B, T nil), whose error names unpack() */
                if (m > 1 && lua_istable(L, -1) && !wl_totensor(L, -1)) {
                    int k = (int)lua_objlen(L, -1), top = lua_gettop(L);
                    if (k > WICK_MAX_DIMS - n) wl_raise(L, "%s: at most %d dimensions, got %d or more", fn, WICK_MAX_DIMS, n + k);
                    for (int q = 0; q < k; q++) {
                        lua_rawgeti(L, top, q + 1);
                        sizes[n++] = wl_checkint(L, -1, fn, "a size");
                        lua_pop(L, 1);
                    }
                    sizes_only(L, top, k, fn);
                } else {
                    if (n >= WICK_MAX_DIMS) wl_raise(L, "%s: at most %d dimensions", fn, WICK_MAX_DIMS);
                    if (lua_isnil(L, -1) && j > 0) { /* {B, T, ...} after `local B, T = x:size()`: B the Size, T nil */
                        lua_rawgeti(L, i, j);
                        int after_size = lua_istable(L, -1) && !wl_totensor(L, -1);
                        lua_pop(L, 1);
                        if (after_size)
                            wl_raise(L, "%s: expected a number for size %d, got nil after a Size (Python's `B, T, C = "
                                        "x.size()` is `local B, T, C = x:size():unpack()`)", fn, j + 1);
                    }
                    sizes[n++] = wl_checkint(L, -1, fn, "a size");
                }
                lua_pop(L, 1);
            }
            sizes_only(L, i, m, fn);
            continue;
        }
        if (n >= WICK_MAX_DIMS) wl_raise(L, "%s: at most %d dimensions", fn, WICK_MAX_DIMS);
        wick_tensor *t = lua_type(L, i) == LUA_TUSERDATA ? wl_totensor(L, i) : NULL;
        if (lua_type(L, i) != LUA_TNUMBER && !(t && wick_tensor_ndim(t) == 0)) /* (wl_checkint takes a 0-dim integer tensor) */
            wl_raise(L, "%s: expected sizes as numbers or tables of numbers, got %s for size %d%s", fn,
                     luaL_typename(L, i), n + 1,
                     lua_isnil(L, i) && i > first && lua_istable(L, i - 1)
                         ? " (after a Size: Python's `b, s, _ = x.size()` is `local b, s = x:size():unpack()`)"
                         : "");
        sizes[n++] = wl_checkint(L, i, fn, "a size");
    }
    return n;
}

int wl_trailing_options(lua_State *L, int first) {
    int top = lua_gettop(L);
    while (top > first && lua_isnil(L, top)) top--; /* Python's empty **kwargs after the options: dropped */
    if (top >= first && lua_istable(L, top) && !wl_totensor(L, top)) lua_settop(L, top);
    if (top < first || !lua_istable(L, top) || wl_totensor(L, top)) return 0;
    /* a table of numbers is a size list, not options */
    lua_rawgeti(L, top, 1);
    int is_array = !lua_isnil(L, -1);
    lua_pop(L, 1);
    return is_array ? 0 : top;
}

wick_dtype wl_dtype(lua_State *L, int idx, const char *fn) {
    const char *name = lua_tostring(L, idx);
    if (!name || lua_type(L, idx) != LUA_TSTRING) wl_raise(L, "%s: expected a dtype name, got %s", fn, luaL_typename(L, idx));
    wick_dtype d;
    if (wick_dtype_parse(name, &d)) wl_raise(L, "%s: %s", fn, wick_last_error());
    return d;
}

lua_Integer wl_device_code(wick_device d) { return ((lua_Integer)d.index + 1) * 4 + (lua_Integer)d.type; }

int wl_device_from_code(lua_Integer code, wick_device *out) {
    lua_Integer type = code % 4, index = code / 4 - 1;
    if (code < 0 || type > WICK_META || index > INT_MAX || (type != WICK_CUDA && index != -1)) return 0;
    *out = (wick_device){(wick_device_type)type, (int)index};
    return 1;
}

wick_device wl_device(lua_State *L, int idx, const char *fn) {
    wick_device dev;
    if (lua_type(L, idx) == LUA_TNUMBER) { /* PyTorch's t.to(0): an ordinal is a CUDA device */
        lua_Number n = lua_tonumber(L, idx);
        if (n >= 0 && n < 1 << 20 && n == floor(n)) return (wick_device){WICK_CUDA, (int)n};
        wl_raise(L, "%s: a device ordinal must be an integer >= 0 (cuda:N), got %g", fn, n);
    }
    if (lua_type(L, idx) == LUA_TSTRING) {
        if (wick_device_parse(lua_tostring(L, idx), &dev)) wl_raise(L, "%s: %s", fn, wick_last_error());
        return dev;
    }
    if (lua_istable(L, idx)) { /* a device object: its cached number */
        lua_getfield(L, idx, "_code");
        int ok = lua_type(L, -1) == LUA_TNUMBER && wl_device_from_code(lua_tointeger(L, -1), &dev);
        lua_pop(L, 1);
        if (ok) return dev;
    }
    if (lua_istable(L, idx)) { /* a plain table {type = "cuda", index = 0} */
        lua_getfield(L, idx, "type");
        const char *type = lua_tostring(L, -1);
        lua_getfield(L, idx, "index");
        char text[64];
        if (type && lua_isnumber(L, -1)) snprintf(text, sizeof text, "%s:%d", type, (int)lua_tointeger(L, -1));
        else snprintf(text, sizeof text, "%s", type ? type : "?");
        lua_pop(L, 2);
        if (type && wick_device_parse(text, &dev) == WICK_OK) return dev;
    }
    wl_raise(L, "%s: expected a device (a string such as 'cpu', 'cuda:0' or 'meta', or wick.device(...)), got %s", fn,
             luaL_typename(L, idx));
    return dev;
}

/* ---- the state's default dtype and device (PyTorch's torch.set_default_dtype / set_default_device) ---- */

static const char defaults_key = 0; /* registry: a userdata holding the wick_options, once one is set */

wick_options wl_default_options(lua_State *L) {
    lua_pushlightuserdata(L, (void *)&defaults_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    const wick_options *o = lua_touserdata(L, -1);
    wick_options opt = o ? *o : wick_default_options();
    lua_pop(L, 1);
    return opt;
}

static wick_options *defaults_slot(lua_State *L) {
    lua_pushlightuserdata(L, (void *)&defaults_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    wick_options *o = lua_touserdata(L, -1);
    lua_pop(L, 1);
    if (o) return o;
    o = lua_newuserdata(L, sizeof *o);
    *o = wick_default_options();
    lua_pushlightuserdata(L, (void *)&defaults_key);
    lua_insert(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
    return o;
}

/* core.set_default_dtype(dtype): floating dtypes only, as PyTorch */
WL_FUNCTION(m_set_default_dtype) {
    wick_dtype d = wl_dtype(L, 1, "set_default_dtype");
    if (!wick_dtype_is_floating(d))
        wl_raise(L, "set_default_dtype: only floating-point dtypes can be the default, got %s", wick_dtype_name(d));
    defaults_slot(L)->dtype = d;
    wl_set_default_float(L, d);
    return 0;
}

WL_FUNCTION(m_get_default_dtype) {
    lua_pushstring(L, wick_dtype_name(wl_default_options(L).dtype));
    return 1;
}

/* core.set_default_device(device): nil is the CPU again */
WL_FUNCTION(m_set_default_device) {
    wick_device dev = {WICK_CPU, -1};
    if (!lua_isnoneornil(L, 1)) dev = wl_device(L, 1, "set_default_device");
    defaults_slot(L)->device = dev;
    return 0;
}

/* core.get_default_device(): its device code (wl_device_code) */
WL_FUNCTION(m_get_default_device) {
    lua_pushinteger(L, wl_device_code(wl_default_options(L).device));
    return 1;
}

void wl_open_defaults(lua_State *L) {
    static const luaL_Reg fns[] = {{"set_default_dtype", m_set_default_dtype},
                                   {"get_default_dtype", m_get_default_dtype},
                                   {"set_default_device", m_set_default_device},
                                   {"get_default_device", m_get_default_device},
                                   {NULL, NULL}};
    luaL_register(L, NULL, fns);
}

int wl_boolean_option(lua_State *L, int idx, const char *fn, const char *name) {
    if (!lua_isboolean(L, idx))
        wl_raise(L, "%s: expected a boolean for option '%s', got %s", fn, name, luaL_typename(L, idx));
    return lua_toboolean(L, idx);
}

int wl_options(lua_State *L, int idx, wick_options *opt, const char *fn) {
    int requires_grad = -1;
    if (idx == 0 || lua_isnoneornil(L, idx)) return requires_grad;
    if (!lua_istable(L, idx)) wl_raise(L, "%s: expected an options table, got %s", fn, luaL_typename(L, idx));
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
        if (key && strcmp(key, "dtype") == 0) opt->dtype = wl_dtype(L, lua_gettop(L), fn);
        else if (key && strcmp(key, "device") == 0) opt->device = wl_device(L, lua_gettop(L), fn);
        else if (key && strcmp(key, "requires_grad") == 0) requires_grad = wl_boolean_option(L, -1, fn, key);
        else if (key && strcmp(key, "non_blocking") == 0 && strcmp(fn, "to") == 0)
            opt->non_blocking = wl_boolean_option(L, -1, fn, key);
        else if (key && strcmp(key, "layout") == 0 && strcmp(fn, "to") != 0) {
            /* PyTorch's layout=torch.strided (torchvision's full_like(b, i, layout=torch.strided)) */
            if (lua_type(L, -1) != LUA_TSTRING || strcmp(lua_tostring(L, -1), "strided") != 0)
                wl_raise(L, "%s: layout must be wick.strided (wick's tensors are dense: a sparse one is "
                            "wick.sparse_coo_tensor's), got %s", fn, lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : luaL_typename(L, -1));
        } else if (key && strcmp(key, "pin_memory") == 0 && strcmp(fn, "to") != 0)
            (void)wl_boolean_option(L, -1, fn, key); /* page-locking is a transfer speed-up: a CPU tensor either way */
        else
            wl_raise(L, "%s: unknown option '%s' (expected %s)", fn, key ? key : "?",
                     strcmp(fn, "to") == 0 ? "dtype, device or non_blocking"
                                           : "dtype, device, requires_grad, layout or pin_memory");
        lua_pop(L, 1);
    }
    return requires_grad;
}

void wl_set_requires_grad(lua_State *L, wick_tensor *t, int requires_grad) {
    if (requires_grad > 0) wl_check(L, wick_set_requires_grad(t, 1));
}

int wl_dim_value(lua_State *L, lua_Number d, const char *fn) {
    if (d != floor(d) || fabs(d) > WICK_MAX_DIMS + 1) wl_raise(L, "%s: invalid dimension %g", fn, d);
    if (d == 0) wl_raise(L, "%s: dimension 0 is invalid: dimensions count from 1 (and from -1 backwards)", fn);
    return d > 0 ? (int)d - 1 : (int)d;
}

/* Pushes the option `dim` of the options table at idx, or `axis` (NumPy's
 * name, which PyTorch takes too: x.sum(axis=0)); both is an error. */
void wl_getdim(lua_State *L, int idx, const char *fn) {
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    lua_getfield(L, idx, "axis");
    lua_getfield(L, idx, "dim");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        return;
    }
    if (!lua_isnil(L, -2)) wl_raise(L, "%s: got both dim and axis (axis is another name for dim)", fn);
    lua_remove(L, -2);
}

/* a dimension: a number, or by name as PyTorch's dim= ({dim = 2}) */
int wl_dim(lua_State *L, int idx, const char *fn) {
    if (lua_type(L, idx) == LUA_TTABLE && !wl_totensor(L, idx)) {
        wl_getdim(L, idx, fn);
        int ok = lua_type(L, -1) == LUA_TNUMBER;
        lua_Number d = lua_tonumber(L, -1);
        lua_pop(L, 1);
        if (ok) return wl_dim_value(L, d, fn);
    }
    if (lua_type(L, idx) != LUA_TNUMBER)
        wl_raise(L, "%s: expected a dimension (a number, or {dim = n}), got %s", fn, luaL_typename(L, idx));
    return wl_dim_value(L, lua_tonumber(L, idx), fn);
}

const char *wl_index_dtype_hint(wick_dtype d) {
    return wick_dtype_is_floating(d) ? " (Lua numbers make tensors of the default floating dtype, and so does "
                                       "wick.arange: make the index with {dtype = \"int64\"} or :long())"
                                     : "";
}

int wl_toscalar(lua_State *L, int idx, wick_scalar *s) {
    if (lua_type(L, idx) == LUA_TNUMBER) {
        s->value = lua_tonumber(L, idx);
        s->is_integer = wl_is_python_int(L, idx, s->value); /* (an int64) */
        return 1;
    }
    if (lua_type(L, idx) == LUA_TBOOLEAN) {
        s->value = lua_toboolean(L, idx);
        s->is_integer = WICK_SCALAR_BOOL;
        return 1;
    }
    return 0;
}

void wl_to_one_based(lua_State *L, wick_tensor *t) {
    if (wick_tensor_device(t).type == WICK_META) return;
    wl_check(L, wick_binary_scalar_(WICK_ADD, t, (wick_scalar){1, 1}));
}

void wl_no_more(lua_State *L, int n, const char *fn) {
    int top = lua_gettop(L);
    for (int i = n + 1; i <= top; i++) {
        if (!lua_istable(L, i)) continue; /* (a call's further results: a:equal(b:sort(2))) */
        if (lua_getmetatable(L, i)) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushnil(L);
        if (!lua_next(L, i)) continue; /* an empty options table */
        if (lua_type(L, -2) == LUA_TSTRING) wl_raise(L, "%s: unknown option '%s' (it takes none)", fn, lua_tostring(L, -2));
        wl_raise(L, "%s: got an unexpected extra argument (a table)", fn);
    }
}

/* Raises "fn: unknown option 'k' (expected a, b or c)" unless every key of
 * the options table at idx is one of keys (NULL-ended): an option wick does
 * not know is never silently dropped. A table that stands for {dim = n} alone
 * says so. */
void wl_check_keys(lua_State *L, int idx, const char *fn, const char *const *keys) {
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        int ok = 0;
        /* axis is dim's other name wherever dim is an option (wl_getdim) */
        int axis = lua_type(L, -2) == LUA_TSTRING && strcmp(lua_tostring(L, -2), "axis") == 0;
        for (const char *const *k = keys; *k && !ok && lua_type(L, -2) == LUA_TSTRING; k++)
            ok = strcmp(*k, axis ? "dim" : lua_tostring(L, -2)) == 0;
        if (!ok) {
            const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2);
            if (keys[0] && !keys[1] && strcmp(keys[0], "dim") == 0)
                wl_raise(L, "%s: unknown option '%s' (expected a dimension (a number, or {dim = n}))", fn, key);
            char expected[256] = "";
            for (const char *const *k = keys; *k; k++) {
                if (strlen(expected) + strlen(*k) + 8 >= sizeof expected) break;
                strcat(expected, *k);
                if (k[1]) strcat(expected, k[2] ? ", " : " or ");
            }
            wl_raise(L, "%s: unknown option '%s' (expected %s)", fn, key, expected);
        }
        lua_pop(L, 1);
    }
}

