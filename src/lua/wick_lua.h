/* The Lua binding: userdata, argument checking, error raising. Only this layer
 * calls lua_error, and only once every C resource of the call is owned by a
 * userdata that the collector will free. */
#ifndef WICK_LUA_H
#define WICK_LUA_H

#include "wick.h"

#include <lauxlib.h>
#include <lua.h>
#include <time.h>
#include "lua_compat.h" /* LuaJIT (5.1 API) or PUC Lua 5.4 */

#define WL_TENSOR_MT "wick.Tensor"

/* ---- errors (args.c) ---- */
/* Raises `message` prefixed with the position of the user's Lua line: the first
 * stack frame outside C and outside wick's own Lua files. Never returns. */
int wl_raise(lua_State *L, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* The same from stack level `first_level` on (0 in a hook: the function that
 * was running), with a plain message. */
int wl_raise_from(lua_State *L, int first_level, const char *msg);
/* Raises wick_last_error() when st is not WICK_OK. */
void wl_check(lua_State *L, wick_status st);
/* wl_check of an in-place write. Autograd refuses to record one
 * (WICK_ERR_UNSUPPORTED) while other tensors share the target's storage; those
 * are often dead views the collector has not freed yet (y[1] read, then
 * y[1] = 0; a view an op of the Lua layer took before writing): the write is
 * tried once more after a full collection. Nothing is written before that
 * check. */
#define WL_WRITE(L, call)                                                                                            \
    do {                                                                                                             \
        wick_status wl_write_st_ = (call);                                                                           \
        if (wl_write_st_ == WICK_ERR_UNSUPPORTED) {                                                                  \
            lua_gc(L, LUA_GCCOLLECT, 0);                                                                             \
            wl_write_st_ = (call);                                                                                   \
        }                                                                                                            \
        wl_check(L, wl_write_st_);                                                                                   \
    } while (0)
/* Frees the collector when dead tensors hold much memory (docs/architecture.md, "Collector pacing"). */
void wl_account(lua_State *L);

/* ---- tensors on the Lua stack (args.c) ---- */
wick_tensor *wl_totensor(lua_State *L, int idx); /* NULL if not a tensor */
wick_tensor *wl_checktensor(lua_State *L, int idx, const char *fn, const char *arg);
/* What the value at idx is, for a message: its Lua type, or (a table of tensors) a hint that split, chunk
 * and unbind give one table; may push a string, so call it only on the way to wl_raise. */
const char *wl_describe(lua_State *L, int idx);
/* Pushes an empty tensor userdata and returns its slot: pass the slot as the
 * `out` of a wick_* call, so the result is owned before anything can raise. */
wick_tensor **wl_new_slot(lua_State *L);

/* ---- arguments (args.c) ---- */
/* An integral number (|v| <= 2^53) as int64; raises "fn: expected an integer for what" otherwise. */
int64_t wl_checkint(lua_State *L, int idx, const char *fn, const char *what);
/* A number / a string at idx, or an error naming fn and what at the user's line
 * (luaL_check* would name neither the function nor the line). */
lua_Number wl_checknumber(lua_State *L, int idx, const char *fn, const char *what);
const char *wl_checkstring(lua_State *L, int idx, const char *fn, const char *what);
/* Sizes given as numbers at [first, last] or as one table at `first`. Returns ndim. */
int wl_sizes(lua_State *L, int first, int last, int64_t *sizes, const char *fn);
/* Fills opt from the options table at idx (absent/nil: leaves opt as is).
 * Returns its requires_grad: 1, 0, or -1 when absent. */
int wl_options(lua_State *L, int idx, wick_options *opt, const char *fn);
/* The options a factory starts from: this Lua state's default dtype and device
 * (wick.set_default_dtype / set_default_device; float32 on the CPU unless set). */
wick_options wl_default_options(lua_State *L);
/* core.set_default_dtype, get_default_dtype, set_default_device, get_default_device into the table at -1 */
void wl_open_defaults(lua_State *L);
/* Applies a requires_grad option (from wl_options) to a new tensor. */
void wl_set_requires_grad(lua_State *L, wick_tensor *t, int requires_grad);
/* A Lua dimension (1-based, negative from the end) as a C one (0-based or negative). */
int wl_dim(lua_State *L, int idx, const char *fn);
/* Pushes option `dim` (or `axis`, its NumPy name) of the options table at idx. */
void wl_getdim(lua_State *L, int idx, const char *fn);
/* the options table at idx holds only these keys (NULL-ended), else an error naming the key */
void wl_check_keys(lua_State *L, int idx, const char *fn, const char *const *keys);
/* fn takes n arguments: a plain table more (not empty) is an error naming its first key
 * (t:exp{bogus = 1} is PyTorch's TypeError, never ignored); other values more are a call's
 * further results, which Lua drops (a:equal(b:sort(2))) */
void wl_no_more(lua_State *L, int n, const char *fn);
int wl_dim_value(lua_State *L, lua_Number d, const char *fn);
wick_device wl_device(lua_State *L, int idx, const char *fn);
/* A device as one number, so devices cross the binding without strings: Lua's
 * device objects cache it (d._code), tensors report it (t:_device_code()).
 * (index + 1) * 4 + type; from_code returns 0 for a number that names no device. */
lua_Integer wl_device_code(wick_device d);
int wl_device_from_code(lua_Integer code, wick_device *out);
wick_dtype wl_dtype(lua_State *L, int idx, const char *fn);
/* What to say after "expected an int64 index, got <d>": Lua numbers make
 * float32 tensors, so a port's index built from numbers needs a dtype. */
const char *wl_index_dtype_hint(wick_dtype d);
/* A Lua value as a scalar operand: numbers and booleans. */
int wl_toscalar(lua_State *L, int idx, wick_scalar *s);
/* The boolean at idx, the value of option `name` of fn, or an error naming it. */
int wl_boolean_option(lua_State *L, int idx, const char *fn, const char *name);
/* Index of the trailing options table in [first, top], or 0 if none; nils after it are dropped
 * from the stack (a port's empty **kwargs). */
int wl_trailing_options(lua_State *L, int first);
/* Adds 1 in place to a tensor of 0-based indices the core returned (not on meta). */
void wl_to_one_based(lua_State *L, wick_tensor *t);
/* Pushes op(a, b) for the tensors or numbers at ia and ib (alpha scales b for
 * add/sub); tensor_lua.c. */
int wl_binary_values(lua_State *L, wick_binary_op op, int ia, int ib, double alpha);

/* ---- per-state records (state.c): interrupt flag, collector pacing ---- */
typedef struct wl_state wl_state;
/* Takes the state's record (once per state; raises only when out of memory). */
void wl_state_open(lua_State *L);
/* Makes L the state wick_lua_interrupt finds this record by. */
void wl_state_set_key(lua_State *L);
/* The state's record, or NULL when wick.core was never opened in it. Never raises. */
wl_state *wl_state_of(lua_State *L);
/* An op of this state starts: the calling thread watches the state's interrupt
 * flag (cheap: a cached lookup). Called by wl_totensor and wl_new_slot. */
void wl_enter(lua_State *L);
/* The state's default floating dtype (set_default_dtype), which wl_enter gives the core. */
void wl_set_default_float(lua_State *L, wick_dtype dtype);
/* 1 (and the flag lowered) when the state's interrupt flag is raised. */
int wl_take_interrupt(lua_State *L);
/* The state's collector thresholds (wl_account, gc_pace.h), or NULL. */
struct wl_gc_pace *wl_gc_threshold(lua_State *L);

/* ---- embedding (embed.c) ---- */
/* Registers "wick.core" in package.preload and puts the source lua/ folder,
 * ../share/lua/5.1 next to the executable and the install folder in front of
 * package.path (once per state): what the runner and luaopen_wick need. */
void wl_add_search_paths(lua_State *L);

/* ---- registration ---- */
void wl_open_tensor(lua_State *L); /* tensor_lua.c: fills the module table at -1 */
void wl_open_creation(lua_State *L); /* creation_lua.c: zeros, ones, full, tensor, arange, eye... (module table at -1) */
void wl_open_runtime(lua_State *L);  /* runtime_lua.c: rng, threads, devices, CUDA queries, grad mode (module table at -1) */
void wl_open_reduce(lua_State *L);   /* reduce_lua.c: sum, mean, ..., max, min (Tensor inside the module table at -1) */
void wl_open_view(lua_State *L);     /* view_lua.c: views, indexing, cat/stack, softmax (module table at -1) */
void wl_open_io(lua_State *L);       /* io_lua.c: checkpoint storages, CRCs, IDX files (module table at -1) */
void wl_open_tensorboard(lua_State *L); /* tensorboard_lua.c: TFRecord framing, protobuf scalars, PNG (module table at -1) */
int wl_push_clock(lua_State *L, clockid_t id); /* runtime_lua.c: a clock's seconds (wick.clock, the event files' wall time) */
void wl_open_nn(lua_State *L);     /* nn_lua.c: linear, mse_loss, conv2d, pooling, attention (module table at -1) */
void wl_open_norm(lua_State *L);   /* norm_lua.c: layer_norm, cross_entropy (module table at -1) */
void wl_open_rnn(lua_State *L);    /* rnn_lua.c: the fused recurrent layer (module table at -1) */
void wl_open_ops(lua_State *L);    /* ops_lua.c: sort, scans (module table at -1, Tensor inside) */
void wl_open_index(lua_State *L);  /* index_lua.c: t[key] and the masked/index ops (module table at -1) */
void wl_open_optim(lua_State *L);  /* optim_lua.c: fused optimizer steps (module table at -1) */
void wl_open_dist(lua_State *L);   /* dist_lua.c: core.dist, wick.distributed's C half (module table at -1) */
void wl_open_profiler(lua_State *L); /* profiler_lua.c: core.profiler_* (module table at -1) */
/* profiler_lua.c: names the op functions of the table at idx for the profiler's hook */
void wl_profile_names(lua_State *L, int idx);

/* ---- the binding's C functions ---- */
/* Every lua_CFunction of the binding is defined as `WL_FUNCTION(name) { ... }`
 * (tools/check-binding-functions.sh refuses a plain definition). It carries the
 * profiler's hook: while no profile records, a call costs one test of
 * wick_profiling more than the body; while one records, wl_profiled runs the
 * body inside an event named as the function was registered (core, Tensor or
 * the tensor metatable; functions of no op run as they are). The build option
 * WICK_PROFILER_HOOK=OFF leaves the test out (bench/profiler_off.sh's A/B). */
int wl_profiled(lua_State *L, lua_CFunction body);
#ifdef WICK_NO_PROFILER_HOOK
#define WL_FUNCTION(fn) static int fn(lua_State *L)
#else
#define WL_FUNCTION(fn)                                                        \
    static int fn##_body(lua_State *L);                                        \
    static int fn(lua_State *L) {                                              \
        if (__builtin_expect(wick_profiling, 0)) return wl_profiled(L, fn##_body); \
        return fn##_body(L);                                                   \
    }                                                                          \
    static int fn##_body(lua_State *L)
#endif
void wl_open_autograd(lua_State *L); /* autograd_lua.c: backward, hooks, queue_callback (module table at -1, Tensor inside) */
/* Records the tensor metatable and the source prefix of wick's Lua files. */
void wl_register_tensor_mt(lua_State *L, int idx, const char *lua_dir_prefix);

#endif
