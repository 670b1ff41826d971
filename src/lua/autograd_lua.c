/* The binding's autograd hooks: t:backward (through wick_backward_ex),
 * t:register_hook, t:register_post_accumulate_grad_hook, t:_retain_grad and
 * core.queue_callback.
 *
 * The core knows no Lua: it calls run_hooks with the tensor's hook id;
 * the Lua functions live in the registry, keyed by that id. Every Lua call made
 * while the core's backward runs is protected (lua_pcall), so no error unwinds
 * through the core's frames; the first error is kept and raised at the user's
 * backward line once the core has returned. */
#include "wick_lua.h"

#include <stdlib.h>
#include <string.h>

#define SELF(fn) wl_checktensor(L, 1, fn, "self")

static const char hooks_key = 0;   /* registry: id -> array of post-accumulate handles {fn =, id =} */
static const char grad_hooks_key = 0; /* registry: id -> array of grad hook handles {fn =, id =, grad = true} */
static const char tensors_key = 0; /* registry: id -> the tensor userdata (weak values) */
static const char queue_key = 0;   /* registry: the running backward's queued callbacks, or nil */
static const char error_key = 0;   /* registry: the error a hook raised in the running backward */
static const char checkpoints_key = 0; /* registry: checkpoint id -> its recompute function */

static void push_registry_table(lua_State *L, const char *key, const char *mode) {
    lua_pushlightuserdata(L, (void *)key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (!lua_isnil(L, -1)) return;
    lua_pop(L, 1);
    lua_newtable(L);
    if (mode) {
        lua_createtable(L, 0, 1);
        lua_pushstring(L, mode);
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
    }
    lua_pushlightuserdata(L, (void *)key);
    lua_pushvalue(L, -2);
    lua_rawset(L, LUA_REGISTRYINDEX);
}

static void set_registry(lua_State *L, const char *key, int idx) {
    idx = idx < 0 ? lua_gettop(L) + idx + 1 : idx;
    lua_pushlightuserdata(L, (void *)key);
    lua_pushvalue(L, idx);
    lua_rawset(L, LUA_REGISTRYINDEX);
}

static void get_registry(lua_State *L, const char *key) {
    lua_pushlightuserdata(L, (void *)key);
    lua_rawget(L, LUA_REGISTRYINDEX);
}

static int is_callable(lua_State *L, int idx) {
    if (lua_isfunction(L, idx)) return 1;
    if (!luaL_getmetafield(L, idx, "__call")) return 0;
    lua_pop(L, 1);
    return 1;
}

/* ---- handles ---- */

/* handle:remove(): the hook runs no more (removing twice does nothing) */
WL_FUNCTION(h_remove) {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_getfield(L, 1, "id");
    lua_Number id = lua_tonumber(L, -1);
    lua_getfield(L, 1, "grad");
    push_registry_table(L, lua_toboolean(L, -1) ? &grad_hooks_key : &hooks_key, NULL);
    lua_pushnumber(L, id);
    lua_rawget(L, -2); /* the list */
    if (!lua_istable(L, -1)) return 0;
    int n = (int)lua_objlen(L, -1), at = 0;
    for (int i = 1; i <= n && !at; i++) {
        lua_rawgeti(L, -1, i);
        if (lua_rawequal(L, -1, 1)) at = i;
        lua_pop(L, 1);
    }
    if (!at) return 0;
    for (int i = at; i < n; i++) { /* close the gap, keeping the order */
        lua_rawgeti(L, -1, i + 1);
        lua_rawseti(L, -2, i);
    }
    lua_pushnil(L);
    lua_rawseti(L, -2, n);
    if (n == 1) { /* the last one: forget the id */
        lua_pushnumber(L, id);
        lua_pushnil(L);
        lua_rawset(L, -4);
    }
    return 0;
}

static void push_handle_mt(lua_State *L) {
    if (luaL_newmetatable(L, "wick.RemovableHandle")) {
        lua_newtable(L);
        lua_pushcfunction(L, h_remove);
        lua_setfield(L, -2, "remove");
        lua_setfield(L, -2, "__index");
    }
}

/* Drops the hooks of ids whose tensor and node the core has freed. */
static void forget_released_hooks(lua_State *L) {
    int64_t ids[64];
    int n = wick_hooks_released(ids, 64);
    if (!n) return;
    const char *keys[4] = {&hooks_key, &grad_hooks_key, &tensors_key, &checkpoints_key};
    for (; n > 0; n = wick_hooks_released(ids, 64))
        for (int k = 0; k < 4; k++) {
            push_registry_table(L, keys[k], k == 2 ? "v" : NULL);
            for (int i = 0; i < n; i++) {
                lua_pushnumber(L, (lua_Number)ids[i]);
                lua_pushnil(L);
                lua_rawset(L, -3);
            }
            lua_pop(L, 1);
        }
}

/* Adds fn to the hooks of kind `key` of the tensor at 1; pushes the handle. */
static void add_hook(lua_State *L, wick_tensor *t, const char *key) {
    lua_settop(L, 2);
    forget_released_hooks(L);
    lua_Number id = (lua_Number)wick_hook_id(t, 1);
    lua_createtable(L, 0, 3); /* 3: the handle */
    lua_pushvalue(L, 2);
    lua_setfield(L, 3, "fn");
    lua_pushnumber(L, id);
    lua_setfield(L, 3, "id");
    if (key == &grad_hooks_key) {
        lua_pushboolean(L, 1);
        lua_setfield(L, 3, "grad");
    }
    push_handle_mt(L);
    lua_setmetatable(L, 3);
    push_registry_table(L, key, NULL); /* 4 */
    lua_pushnumber(L, id);
    lua_rawget(L, 4);
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushnumber(L, id);
        lua_pushvalue(L, -2);
        lua_rawset(L, 4);
    }
    lua_pushvalue(L, 3);
    lua_rawseti(L, -2, (int)lua_objlen(L, -2) + 1);
    push_registry_table(L, &tensors_key, "v"); /* the object to give post-accumulate hooks */
    lua_pushnumber(L, id);
    lua_pushvalue(L, 1);
    lua_rawset(L, -3);
    lua_settop(L, 3);
}

/* t:register_post_accumulate_grad_hook(fn) -> handle: fn(t) runs once per
 * backward after all of t's gradient of that backward is in t.grad. */
WL_FUNCTION(t_register_post_accumulate_grad_hook) {
    static const char *fn = "register_post_accumulate_grad_hook";
    wick_tensor *t = SELF(fn);
    if (!is_callable(L, 2)) wl_raise(L, "%s: expected a function for fn, got %s", fn, luaL_typename(L, 2));
    if (!wick_is_leaf(t))
        wl_raise(L, "%s: post accumulate grad hooks cannot be registered on non-leaf tensors", fn);
    if (!wick_requires_grad(t))
        wl_raise(L, "%s: cannot register a hook on a tensor that doesn't require gradient", fn);
    add_hook(L, t, &hooks_key);
    return 1;
}

/* t:register_hook(fn) -> handle: fn(grad) runs once per backward on t's whole
 * gradient of that backward, before it is used; a tensor it returns replaces
 * the gradient (PyTorch's Tensor.register_hook). */
WL_FUNCTION(t_register_hook) {
    static const char *fn = "register_hook";
    wick_tensor *t = SELF(fn);
    if (!is_callable(L, 2)) wl_raise(L, "%s: expected a function for fn, got %s", fn, luaL_typename(L, 2));
    if (!wick_requires_grad(t))
        wl_raise(L, "%s: cannot register a hook on a tensor that doesn't require gradient", fn);
    add_hook(L, t, &grad_hooks_key);
    return 1;
}

/* ---- running the hooks (inside the core's backward) ---- */

/* Pushes a copy of the handle list of `id` in the registry table `key`, or
 * returns 0 (nothing pushed) when there is none. */
static int push_hook_list(lua_State *L, const char *key, lua_Number id) {
    push_registry_table(L, key, NULL);
    lua_pushnumber(L, id);
    lua_rawget(L, -2);
    int n = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
    if (!n) {
        lua_pop(L, 2);
        return 0;
    }
    lua_createtable(L, n, 0); /* a copy, so a hook may remove hooks */
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, -2, i);
        lua_rawseti(L, -2, i);
    }
    lua_replace(L, -3);
    lua_pop(L, 1);
    return n;
}

/* tostring(t[field]) of the tensor at stack index idx (absolute), left on the stack for an error message */
static const char *field_text(lua_State *L, int idx, const char *field) {
    lua_getfield(L, idx, field);
    if (!luaL_callmeta(L, -1, "__tostring")) lua_pushstring(L, "?");
    return lua_tostring(L, -1);
}

static void push_tensor(lua_State *L, wick_tensor *t) {
    wick_tensor **slot = wl_new_slot(L);
    wick_tensor_retain(t);
    *slot = t;
}

/* post_hooks(leaf, id): calls each post-accumulate hook of id with the leaf's
 * tensor object (the one it was registered on while that lives). */
WL_FUNCTION(post_hooks) {
    wick_tensor *leaf = lua_touserdata(L, 1);
    lua_Number id = lua_tonumber(L, 2);
    int n = push_hook_list(L, &hooks_key, id); /* 3 */
    if (!n) return 0;
    push_registry_table(L, &tensors_key, "v");
    lua_pushnumber(L, id);
    lua_rawget(L, -2); /* 5: the tensor object */
    wick_tensor **p = lua_touserdata(L, 5);
    if (!p || *p != leaf) {
        lua_pop(L, 1);
        push_tensor(L, leaf);
    }
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, 3, i);
        lua_getfield(L, -1, "fn");
        lua_pushvalue(L, 5);
        lua_call(L, 1, 0);
        lua_pop(L, 1);
    }
    return 0;
}

/* grad_hooks(grad_ptr, id): calls each grad hook of id with the gradient; a
 * tensor a hook returns (of the gradient's shape, dtype and device) replaces
 * it for the next hooks and for the engine (*grad_ptr). */
WL_FUNCTION(grad_hooks) {
    wick_tensor **gp = lua_touserdata(L, 1);
    lua_Number id = lua_tonumber(L, 2);
    int n = push_hook_list(L, &grad_hooks_key, id); /* 3 */
    if (!n) return 0;
    wick_tensor *g0 = *gp;
    push_tensor(L, g0); /* 4: the gradient now */
    for (int i = 1; i <= n; i++) {
        lua_rawgeti(L, 3, i);
        lua_getfield(L, -1, "fn");
        lua_pushvalue(L, 4);
        lua_call(L, 1, 1);
        if (lua_isnil(L, -1)) {
            lua_pop(L, 2);
            continue;
        }
        wick_tensor *r = wl_totensor(L, -1);
        if (!r) luaL_error(L, "register_hook: a hook returned a %s; expected a tensor or nil", luaL_typename(L, -1));
        int nd = wick_tensor_ndim(r);
        if (nd != wick_tensor_ndim(g0) ||
            memcmp(wick_tensor_sizes(r), wick_tensor_sizes(g0), sizeof(int64_t) * (size_t)nd) != 0 ||
            wick_tensor_dtype(r) != wick_tensor_dtype(g0) ||
            !wick_device_equal(wick_tensor_device(r), wick_tensor_device(g0))) {
            int at = lua_gettop(L);
            luaL_error(L, "register_hook: a hook returned a tensor of shape %s, %s, on %s, where the gradient is %s, "
                          "%s, on %s; return nil or a tensor like the gradient",
                       field_text(L, at, "shape"), wick_dtype_name(wick_tensor_dtype(r)), field_text(L, at, "device"),
                       field_text(L, 4, "shape"), wick_dtype_name(wick_tensor_dtype(g0)), field_text(L, 4, "device"));
        }
        lua_replace(L, 4);
        lua_pop(L, 1);
    }
    wick_tensor *g = wl_totensor(L, 4);
    if (g != g0) {
        wick_tensor_retain(g);
        wick_tensor_release(g0);
        *gp = g;
    }
    return 0;
}

/* t:retain_grad(): backward gives t.grad the gradient of t's current history
 * (it follows t through in-place ops), summed over backwards; a no-op on a leaf */
WL_FUNCTION(t_retain_grad) {
    wick_tensor *t = SELF("retain_grad");
    forget_released_hooks(L);
    int64_t id = wick_retain_grad_id(t);
    if (!id) return 0;
    push_registry_table(L, &tensors_key, "v");
    lua_pushnumber(L, (lua_Number)id);
    lua_pushvalue(L, 1);
    lua_rawset(L, -3);
    return 0;
}

/* retain_hook(grad_ptr, id): the tensor retain_grad was called on, while it
 * lives, adds the gradient to its .grad */
WL_FUNCTION(retain_hook) {
    wick_tensor **gp = lua_touserdata(L, 1);
    lua_Number id = lua_tonumber(L, 2);
    push_registry_table(L, &tensors_key, "v");
    lua_pushnumber(L, id);
    lua_rawget(L, -2);
    wick_tensor *t = lua_isnil(L, -1) ? NULL : wl_totensor(L, -1);
    if (!t) return 0;
    wick_tensor *old = wick_grad(t), *sum = NULL;
    wl_check(L, old ? wick_binary(&sum, WICK_ADD, old, *gp) : wick_clone(&sum, *gp));
    wick_status st = wick_set_grad(t, sum);
    wick_tensor_release(sum);
    wl_check(L, st);
    return 0;
}

/* ---- custom functions (wick.autograd.Function) ---- */

static const char functions_key = 0; /* registry: node id -> {fn = backward closure, n = inputs} */

/* Drops the state of custom nodes the core has freed. */
static void forget_released(lua_State *L) {
    int64_t ids[64];
    int n = wick_function_released(ids, 64);
    if (!n) return;
    push_registry_table(L, &functions_key, NULL);
    for (; n > 0; n = wick_function_released(ids, 64))
        for (int i = 0; i < n; i++) {
            lua_pushnumber(L, (lua_Number)ids[i]);
            lua_pushnil(L);
            lua_rawset(L, -3);
        }
    lua_pop(L, 1);
}

/* core.function_record(out, name, inputs, n, fn): out (computed without grad)
 * becomes the output of a node over inputs[1..n] (nil: not a tensor) whose
 * backward calls fn(grad) -> {grad of input 1, ..., n} */
WL_FUNCTION(m_function_record) {
    static const char *fn = "autograd.Function";
    wick_tensor *out = wl_checktensor(L, 1, fn, "output");
    const char *name = wl_checkstring(L, 2, fn, "name");
    luaL_checktype(L, 3, LUA_TTABLE);
    int n = (int)wl_checkint(L, 4, fn, "n");
    if (n < 0 || n > 1 << 16) return wl_raise(L, "%s: too many inputs (%d)", fn, n);
    luaL_checktype(L, 5, LUA_TFUNCTION);
    forget_released(L);
    wick_tensor **inputs = lua_newuserdata(L, sizeof *inputs * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 3, i + 1);
        inputs[i] = wl_totensor(L, -1);
        lua_pop(L, 1);
    }
    int64_t id = 0;
    wl_check(L, wick_function_record(out, name, n, inputs, &id));
    push_registry_table(L, &functions_key, NULL);
    lua_pushnumber(L, (lua_Number)id);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, 5);
    lua_setfield(L, -2, "fn");
    lua_pushinteger(L, n);
    lua_setfield(L, -2, "n");
    lua_rawset(L, -3);
    return 0;
}

/* function_hook(io, id): the backward of custom node id; io[0] is its output's
 * gradient, io[1 + i] receives input i's */
WL_FUNCTION(function_hook) {
    wick_tensor **io = lua_touserdata(L, 1);
    lua_Number id = lua_tonumber(L, 2);
    push_registry_table(L, &functions_key, NULL);
    lua_pushnumber(L, id);
    lua_rawget(L, -2); /* 4: the entry */
    if (!lua_istable(L, 4)) return luaL_error(L, "autograd.Function: its state is gone (id %f)", id);
    lua_getfield(L, 4, "n");
    int n = (int)lua_tointeger(L, -1);
    lua_getfield(L, 4, "fn");
    push_tensor(L, io[0]);
    lua_call(L, 1, 1); /* 6: the gradients, a table */
    if (!lua_istable(L, 6)) return luaL_error(L, "autograd.Function: backward gave %s", luaL_typename(L, 6));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 6, i + 1);
        wick_tensor *g = wl_totensor(L, -1);
        if (g) {
            wick_tensor_retain(g);
            io[i + 1] = g;
        }
        lua_pop(L, 1);
    }
    return 0;
}

/* ---- checkpoints without reentry (wick.utils.checkpoint, use_reentrant = false) ---- */

/* core.checkpoint_begin(recompute) -> id: ops recorded from now keep no saved tensors;
 * recompute() runs the function again when a backward needs them */
WL_FUNCTION(m_checkpoint_begin) {
    luaL_checktype(L, 1, LUA_TFUNCTION);
    forget_released_hooks(L);
    int64_t id;
    wl_check(L, wick_checkpoint_begin(&id));
    push_registry_table(L, &checkpoints_key, NULL);
    lua_pushnumber(L, (lua_Number)id);
    lua_pushvalue(L, 1);
    lua_rawset(L, -3);
    lua_pushnumber(L, (lua_Number)id);
    return 1;
}

/* core.checkpoint_end(id) */
WL_FUNCTION(m_checkpoint_end) {
    wl_check(L, wick_checkpoint_end((int64_t)luaL_checknumber(L, 1)));
    return 0;
}

/* recompute_hook(nil, id): runs checkpoint id's function between the core's
 * recompute_begin and _end (end also after an error, which is then raised) */
WL_FUNCTION(recompute_hook) {
    lua_Number id = lua_tonumber(L, 2);
    push_registry_table(L, &checkpoints_key, NULL);
    lua_pushnumber(L, id);
    lua_rawget(L, -2);
    if (!lua_isfunction(L, -1)) return luaL_error(L, "checkpoint: its function is gone (id %f)", id);
    wl_check(L, wick_checkpoint_recompute_begin((int64_t)id));
    int failed = lua_pcall(L, 0, 0, 0);
    wick_status st = wick_checkpoint_recompute_end((int64_t)id);
    if (failed) return lua_error(L);
    wl_check(L, st);
    return 0;
}

typedef struct {
    lua_State *L;
    int failed; /* a hook raised; its error is in the registry (error_key) */
    wick_hook_kind failed_kind;
} hook_ctx;

static wick_status run_hooks(void *ud, wick_hook_kind kind, wick_tensor *leaf, int64_t id, wick_tensor **grad) {
    hook_ctx *ctx = ud;
    lua_State *L = ctx->L;
    int top = lua_gettop(L);
    lua_pushcfunction(L, kind == WICK_HOOK_FUNCTION    ? function_hook
                         : kind == WICK_HOOK_GRAD      ? grad_hooks
                         : kind == WICK_HOOK_RETAIN    ? retain_hook
                         : kind == WICK_HOOK_RECOMPUTE ? recompute_hook
                                                       : post_hooks);
    lua_pushlightuserdata(L, kind == WICK_HOOK_POST_ACCUMULATE ? (void *)leaf : (void *)grad);
    lua_pushnumber(L, (lua_Number)id);
    if (lua_pcall(L, 2, 0, 0) == 0) {
        lua_settop(L, top);
        return WICK_OK;
    }
    set_registry(L, &error_key, -1);
    lua_settop(L, top);
    ctx->failed = 1;
    ctx->failed_kind = kind;
    return wick_fail(WICK_ERR_ARGUMENT, "backward: a hook raised an error");
}

/* Raises a hook's or a callback's error (at the top of the stack) at the
 * user's line: a string names where it was raised after "backward: "; any other
 * value is raised as it is. */
static int raise_hook_error(lua_State *L, const char *what) {
    if (lua_type(L, -1) != LUA_TSTRING) return lua_error(L);
    return wl_raise(L, "backward: %s raised: %s", what, lua_tostring(L, -1));
}

/* Runs the callbacks queued in the list at `list` (more may be queued while
 * they run); 0, or 1 with the error on the stack. */
static int run_queued(lua_State *L, int list) {
    for (int i = 1; i <= (int)lua_objlen(L, list); i++) {
        lua_rawgeti(L, list, i);
        if (lua_pcall(L, 0, 0, 0)) return 1;
    }
    return 0;
}

/* Runs the engine with the binding's hooks; a hook's, a custom backward's or
 * a queued callback's error is raised here, at the user's line. */
static void run_engine(lua_State *L, wick_backward_args *a) {
    int top = lua_gettop(L);
    get_registry(L, &queue_key); /* top + 1: the enclosing backward's queue (a hook's backward) */
    lua_newtable(L);             /* top + 2: this backward's */
    set_registry(L, &queue_key, top + 2);
    hook_ctx ctx = {L, 0, WICK_HOOK_GRAD};
    a->hook = run_hooks, a->ud = &ctx;
    wick_status st = wick_backward_run(a);
    if (ctx.failed) {
        set_registry(L, &queue_key, top + 1);
        get_registry(L, &error_key);
        lua_pushnil(L);
        set_registry(L, &error_key, -1);
        lua_pop(L, 1);
        raise_hook_error(L, ctx.failed_kind == WICK_HOOK_FUNCTION    ? "an autograd.Function's backward"
                            : ctx.failed_kind == WICK_HOOK_RECOMPUTE ? "a checkpointed function run again"
                                                                     : "a hook");
    }
    if (st) set_registry(L, &queue_key, top + 1);
    wl_check(L, st);
    int failed = run_queued(L, top + 2);
    set_registry(L, &queue_key, top + 1);
    if (failed) raise_hook_error(L, "a queued callback");
    forget_released(L);
    forget_released_hooks(L);
    lua_settop(L, top);
}

/* The tensors of the array at idx (or the one tensor there) into a new
 * userdata array (pushed); *n their count. nil with `optional`: NULL, 0. */
static wick_tensor **tensor_list(lua_State *L, int idx, const char *fn, const char *what, int optional, int *n) {
    *n = 0;
    if (optional && lua_isnoneornil(L, idx)) {
        lua_pushnil(L);
        return NULL;
    }
    wick_tensor *one = wl_totensor(L, idx);
    if (!one && !lua_istable(L, idx))
        wl_raise(L, "%s: expected a tensor or a list of tensors for %s, got %s", fn, what, luaL_typename(L, idx));
    int count = one ? 1 : (int)lua_objlen(L, idx);
    wick_tensor **ts = lua_newuserdata(L, sizeof *ts * (size_t)(count ? count : 1));
    for (int i = 0; i < count && !one; i++) {
        lua_rawgeti(L, idx, i + 1);
        if (!(ts[i] = wl_totensor(L, -1)))
            wl_raise(L, "%s: expected a tensor at %s[%d], got %s", fn, what, i + 1, luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    if (one) ts[0] = one;
    *n = count;
    return ts;
}

/* t:backward([gradient][, {retain_graph, create_graph, inputs}]) (or the gradient as option 'gradient') */
WL_FUNCTION(t_backward) {
    static const char *fn = "backward";
    wick_tensor *a = SELF(fn);
    int opts = lua_istable(L, 2) && !wl_totensor(L, 2) ? 2 : lua_istable(L, 3) ? 3 : 0;
    const wick_tensor *gradient = opts == 2 ? NULL : wl_totensor(L, 2);
    if (!gradient && !lua_isnoneornil(L, 2) && opts != 2)
        wl_raise(L, "backward: expected a gradient tensor or an options table, got %s", luaL_typename(L, 2));
    wick_backward_args args = {.n_outputs = 1, .outputs = &a, .gradients = &gradient};
    int inputs_at = 0;
    if (opts) { /* PyTorch's keywords: gradient, retain_graph, create_graph, inputs */
        int retain = -1;
        lua_pushnil(L);
        while (lua_next(L, opts)) {
            const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
            if (key && strcmp(key, "retain_graph") == 0) retain = !lua_isnil(L, -1) ? lua_toboolean(L, -1) : -1;
            else if (key && strcmp(key, "gradient") == 0 && !gradient) {
                gradient = wl_totensor(L, -1);
                if (!gradient && !lua_isnil(L, -1))
                    wl_raise(L, "backward: expected a tensor for option 'gradient', got %s", luaL_typename(L, -1));
            } else if (key && strcmp(key, "create_graph") == 0) {
                args.create_graph = lua_toboolean(L, -1);
            } else if (key && strcmp(key, "inputs") == 0) {
                inputs_at = !lua_isnil(L, -1);
            } else {
                wl_raise(L, "backward: unknown option '%s' (expected gradient, retain_graph, create_graph or inputs)",
                         key ? key : luaL_typename(L, -2));
            }
            lua_pop(L, 1);
        }
        args.retain_graph = retain < 0 ? args.create_graph : retain; /* PyTorch: defaults to create_graph */
    } else if (lua_type(L, 3) == LUA_TBOOLEAN || lua_type(L, 4) == LUA_TBOOLEAN) {
        /* PyTorch's positional backward(gradient, retain_graph[, create_graph]) */
        for (int i = 3; i <= 4; i++)
            if (!lua_isnoneornil(L, i) && lua_type(L, i) != LUA_TBOOLEAN)
                wl_raise(L, "backward: expected a boolean for argument '%s', got %s", i == 3 ? "retain_graph" : "create_graph",
                         luaL_typename(L, i));
        args.create_graph = lua_toboolean(L, 4);
        args.retain_graph = lua_isnoneornil(L, 3) ? args.create_graph : lua_toboolean(L, 3);
    } else if (!lua_isnoneornil(L, 3)) {
        wl_raise(L, "backward: expected a boolean or an options table for argument 'retain_graph', got %s", luaL_typename(L, 3));
    }
    lua_settop(L, 3);
    if (inputs_at) {
        lua_getfield(L, opts, "inputs"); /* 4 */
        args.inputs = tensor_list(L, 4, fn, "inputs", 0, &args.n_inputs);
        if (!args.n_inputs) wl_raise(L, "backward: 'inputs' should not be empty");
    }
    run_engine(L, &args);
    return 0;
}

/* core.autograd_run(outputs, gradients, inputs, retain_graph, create_graph, capture):
 * the engine behind wick.autograd.backward and wick.autograd.grad. outputs and
 * inputs are lists (inputs may be nil), gradients a list with holes or nil;
 * with capture, returns the inputs' gradients as a list {n = #inputs} with
 * nil where none flowed, else accumulates into .grad. */
WL_FUNCTION(m_autograd_run) {
    static const char *fn = "autograd";
    lua_settop(L, 6);
    wick_backward_args a = {.retain_graph = lua_toboolean(L, 4), .create_graph = lua_toboolean(L, 5)};
    int capture = lua_toboolean(L, 6);
    a.outputs = tensor_list(L, 1, fn, "outputs", 0, &a.n_outputs); /* 7 */
    a.inputs = tensor_list(L, 3, fn, "inputs", !capture, &a.n_inputs);  /* 8 */
    if (!a.n_outputs) wl_raise(L, "%s: no outputs to differentiate (an empty list)", fn);
    if (capture && !a.n_inputs) wl_raise(L, "%s: no inputs to differentiate against (an empty list)", fn);
    const wick_tensor **gs = lua_newuserdata(L, sizeof *gs * (size_t)a.n_outputs); /* 9 */
    for (int i = 0; i < a.n_outputs; i++) {
        gs[i] = NULL;
        if (lua_isnil(L, 2)) continue;
        lua_rawgeti(L, 2, i + 1);
        if (!lua_isnil(L, -1) && !(gs[i] = wl_totensor(L, -1)))
            wl_raise(L, "%s: expected a tensor or nil at grad_outputs[%d], got %s", fn, i + 1, luaL_typename(L, -1));
        lua_pop(L, 1);
    }
    a.gradients = gs;
    wick_tensor **grads = NULL, ***slots = NULL;
    if (capture) {
        grads = lua_newuserdata(L, sizeof *grads * (size_t)a.n_inputs); /* 10 */
        memset(grads, 0, sizeof *grads * (size_t)a.n_inputs);
        a.grads = grads;
        /* 11: the result, its slots made before the engine runs: handing the
         * gradients over allocates nothing, so no raise can lose one */
        slots = lua_newuserdata(L, sizeof *slots * (size_t)a.n_inputs);
        lua_createtable(L, a.n_inputs, 1);
        for (int k = 0; k < a.n_inputs; k++) {
            slots[k] = wl_new_slot(L);
            lua_rawseti(L, -2, k + 1);
        }
        lua_pushinteger(L, a.n_inputs);
        lua_setfield(L, -2, "n");
    }
    run_engine(L, &a);
    if (!capture) return 0;
    for (int k = 0; k < a.n_inputs; k++) {
        *slots[k] = grads[k]; /* the engine's reference */
        grads[k] = NULL;
        if (*slots[k]) continue;
        lua_pushnil(L); /* none flowed there */
        lua_rawseti(L, -2, k + 1);
    }
    return 1;
}

/* core.queue_callback(fn): fn() runs once the running backward has finished
 * (from a hook; PyTorch's Variable._execution_engine.queue_callback). */
WL_FUNCTION(m_queue_callback) {
    static const char *fn = "queue_callback";
    if (!is_callable(L, 1)) wl_raise(L, "%s: expected a function for fn, got %s", fn, luaL_typename(L, 1));
    get_registry(L, &queue_key);
    if (!lua_istable(L, -1))
        wl_raise(L, "%s: callbacks can only be queued while a backward runs (from a hook)", fn);
    lua_pushvalue(L, 1);
    lua_rawseti(L, -2, (int)lua_objlen(L, -2) + 1);
    return 0;
}

/* core.set_detect_anomaly(on) -> the previous setting (wick_set_detect_anomaly) */
WL_FUNCTION(m_set_detect_anomaly) {
    if (lua_type(L, 1) != LUA_TBOOLEAN)
        wl_raise(L, "set_detect_anomaly: expected a boolean for argument 'mode', got %s", luaL_typename(L, 1));
    lua_pushboolean(L, wick_is_anomaly_enabled());
    wick_set_detect_anomaly(lua_toboolean(L, 1));
    return 1;
}

static const luaL_Reg method_fns[] = {{"backward", t_backward},
                                      {"register_hook", t_register_hook},
                                      {"_retain_grad", t_retain_grad},
                                      {"register_post_accumulate_grad_hook", t_register_post_accumulate_grad_hook},
                                      {NULL, NULL}};

void wl_open_autograd(lua_State *L) {
    lua_pushcfunction(L, m_queue_callback);
    lua_setfield(L, -2, "queue_callback");
    lua_pushcfunction(L, m_function_record);
    lua_setfield(L, -2, "function_record");
    lua_pushcfunction(L, m_autograd_run);
    lua_setfield(L, -2, "autograd_run");
    lua_pushcfunction(L, m_set_detect_anomaly);
    lua_setfield(L, -2, "set_detect_anomaly");
    lua_pushcfunction(L, m_checkpoint_begin);
    lua_setfield(L, -2, "checkpoint_begin");
    lua_pushcfunction(L, m_checkpoint_end);
    lua_setfield(L, -2, "checkpoint_end");
    lua_getfield(L, -1, "Tensor");
    luaL_register(L, NULL, method_fns);
    lua_pop(L, 1);
}
