/* wick.distributed's C half (core.dist): the collectives of include/wick_dist.h
 * and their work handles. lua/wick/distributed.lua checks the arguments and
 * options; this file checks what it must not trust (tensors, ranks as
 * integers) and raises the engine's errors at the user's line. Ranks are
 * 0-based here as in MPI. */
#include "wick_lua.h"
#include "wick_dist.h"

#include <stdlib.h>

#define WORK_MT "wick.distributed.Work"

/* A work userdata: owns one reference to the engine's work (the engine keeps
 * its own while the work is pending, and the tensors alive), so collecting
 * the handle early is safe. */
WL_FUNCTION(work_gc) {
    wick_dist_work **p = luaL_checkudata(L, 1, WORK_MT);
    wick_dist_work_release(*p);
    *p = NULL;
    return 0;
}

static wick_dist_work *check_work(lua_State *L, const char *fn) {
    wick_dist_work **p = luaL_testudata(L, 1, WORK_MT);
    if (!p) return wl_raise(L, "%s: expected a work handle (from {async_op = true}) as self", fn), NULL;
    if (!*p) wl_raise(L, "%s: the work handle was released", fn);
    return *p;
}

WL_FUNCTION(work_wait) {
    wl_check(L, wick_dist_work_wait(check_work(L, "work:wait")));
    lua_pushboolean(L, 1);
    return 1;
}

WL_FUNCTION(work_is_completed) {
    lua_pushboolean(L, wick_dist_work_is_completed(check_work(L, "work:is_completed")));
    return 1;
}

/* work:seconds(): the transfer's seconds once completed, nil while pending */
WL_FUNCTION(work_seconds) {
    double s = wick_dist_work_seconds(check_work(L, "work:seconds"));
    if (s < 0) lua_pushnil(L);
    else lua_pushnumber(L, s);
    return 1;
}

WL_FUNCTION(work_tostring) {
    wick_dist_work **p = luaL_checkudata(L, 1, WORK_MT);
    lua_pushfstring(L, "Work(%s)", *p && wick_dist_work_is_completed(*p) ? "completed" : "pending");
    return 1;
}

/* Pushes a work userdata (before the call that fills it, so nothing leaks
 * when the call raises) and returns its slot. */
static wick_dist_work **push_work_slot(lua_State *L) {
    wick_dist_work **p = lua_newuserdata(L, sizeof *p);
    *p = NULL;
    luaL_getmetatable(L, WORK_MT);
    lua_setmetatable(L, -2);
    return p;
}

/* the trailing async flag at idx: a slot on the stack (returned) or NULL */
static wick_dist_work **async_slot(lua_State *L, int idx) {
    return lua_toboolean(L, idx) ? push_work_slot(L) : NULL;
}

static int finish(lua_State *L, wick_status st, wick_dist_work **slot) {
    wl_check(L, st);
    if (!slot) return 0;
    return 1; /* the slot's userdata is on top */
}

static int rank_arg(lua_State *L, int idx, const char *fn, const char *what) {
    int64_t r = wl_checkint(L, idx, fn, what);
    if (r < -1000000000 || r > 1000000000) return wl_raise(L, "%s: %s out of range: %lld", fn, what, (long long)r);
    return (int)r;
}

static wick_dist_op op_arg(lua_State *L, int idx, const char *fn) {
    wick_dist_op op = WICK_DIST_SUM;
    if (lua_isnoneornil(L, idx)) return op;
    const char *name = wl_checkstring(L, idx, fn, "op");
    if (wick_dist_op_parse(name, &op)) wl_raise(L, "%s: %s", fn, wick_last_error());
    return op;
}

WL_FUNCTION(d_is_available) {
    lua_pushboolean(L, wick_dist_is_available());
    lua_pushstring(L, wick_dist_unavailable_reason());
    return 2;
}

WL_FUNCTION(d_init) {
    const char *backend = lua_isnoneornil(L, 1) ? NULL : wl_checkstring(L, 1, "init_process_group", "backend");
    double timeout = lua_isnoneornil(L, 2) ? 0 : wl_checknumber(L, 2, "init_process_group", "timeout");
    wl_check(L, wick_dist_init(backend, timeout));
    return 0;
}

WL_FUNCTION(d_is_initialized) {
    lua_pushboolean(L, wick_dist_is_initialized());
    return 1;
}

WL_FUNCTION(d_destroy) {
    wl_check(L, wick_dist_destroy());
    return 0;
}

WL_FUNCTION(d_info) {
    int rank = 0, size = 0, local = 0;
    const char *backend = NULL;
    double timeout = 0;
    wl_check(L, wick_dist_rank(&rank));
    wl_check(L, wick_dist_world_size(&size));
    wl_check(L, wick_dist_local_rank(&local));
    wl_check(L, wick_dist_backend(&backend));
    wl_check(L, wick_dist_timeout(&timeout));
    lua_pushinteger(L, rank);
    lua_pushinteger(L, size);
    lua_pushinteger(L, local);
    lua_pushstring(L, backend);
    lua_pushnumber(L, timeout);
    return 5;
}

WL_FUNCTION(d_rank) {
    int r = 0;
    wl_check(L, wick_dist_rank(&r));
    lua_pushinteger(L, r);
    return 1;
}

WL_FUNCTION(d_world_size) {
    int r = 0;
    wl_check(L, wick_dist_world_size(&r));
    lua_pushinteger(L, r);
    return 1;
}

WL_FUNCTION(d_local_rank) {
    int r = 0;
    wl_check(L, wick_dist_local_rank(&r));
    lua_pushinteger(L, r);
    return 1;
}

/* fast_all_reduce(): wick_dist_try_all_reduce's address, for distributed.lua's FFI path */
WL_FUNCTION(d_fast_all_reduce) {
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_dist_try_all_reduce);
    return 1;
}

/* raise_last(): raises the last error at the user's line (after the FFI path failed) */
WL_FUNCTION(d_raise_last) { return wl_raise(L, "%s", wick_last_error()); }

/* check_counts() -> predicted, full (tests and benchmarks: how the signature checks ran) */
WL_FUNCTION(d_check_counts) {
    uint64_t predicted = 0, full = 0;
    wl_check(L, wick_dist_check_counts(&predicted, &full));
    lua_pushnumber(L, (double)predicted);
    lua_pushnumber(L, (double)full);
    return 2;
}

/* all_reduce(t, op, async) */
WL_FUNCTION(d_all_reduce) {
    wick_tensor *t = wl_checktensor(L, 1, "all_reduce", "tensor");
    wick_dist_op op = op_arg(L, 2, "all_reduce");
    wick_dist_work **slot = async_slot(L, 3);
    return finish(L, wick_dist_all_reduce(t, op, slot), slot);
}

/* broadcast(t, src, async) */
WL_FUNCTION(d_broadcast) {
    wick_tensor *t = wl_checktensor(L, 1, "broadcast", "tensor");
    int src = rank_arg(L, 2, "broadcast", "src");
    wick_dist_work **slot = async_slot(L, 3);
    return finish(L, wick_dist_broadcast(t, src, slot), slot);
}

/* all_gather(list, t, async) */
WL_FUNCTION(d_all_gather) {
    luaL_checktype(L, 1, LUA_TTABLE);
    wick_tensor *t = wl_checktensor(L, 2, "all_gather", "tensor");
    int n = (int)lua_objlen(L, 1);
    if (n < 0 || n > 1 << 20) return wl_raise(L, "all_gather: list too long");
    /* the array of pointers lives in a userdata, so a raise frees it */
    wick_tensor **outs = lua_newuserdata(L, sizeof *outs * (size_t)(n > 0 ? n : 1));
    int list_top = lua_gettop(L);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        outs[i] = wl_totensor(L, -1);
        if (!outs[i]) return wl_raise(L, "all_gather: expected a tensor at list[%d]", i + 1);
        lua_pop(L, 1);
    }
    wick_dist_work **slot = async_slot(L, 3);
    wick_status st = wick_dist_all_gather(outs, n, t, slot);
    if (slot) lua_replace(L, list_top); /* the handle where the array was (the list still holds the tensors) */
    return finish(L, st, slot);
}

/* all_gather_into_tensor(out, t, async) */
WL_FUNCTION(d_all_gather_into_tensor) {
    wick_tensor *out = wl_checktensor(L, 1, "all_gather_into_tensor", "output_tensor");
    wick_tensor *t = wl_checktensor(L, 2, "all_gather_into_tensor", "input_tensor");
    wick_dist_work **slot = async_slot(L, 3);
    return finish(L, wick_dist_all_gather_into_tensor(out, t, slot), slot);
}

/* reduce_scatter_tensor(out, t, op, async) */
WL_FUNCTION(d_reduce_scatter_tensor) {
    wick_tensor *out = wl_checktensor(L, 1, "reduce_scatter_tensor", "output");
    wick_tensor *t = wl_checktensor(L, 2, "reduce_scatter_tensor", "input");
    wick_dist_op op = op_arg(L, 3, "reduce_scatter_tensor");
    wick_dist_work **slot = async_slot(L, 4);
    return finish(L, wick_dist_reduce_scatter_tensor(out, t, op, slot), slot);
}

WL_FUNCTION(d_barrier) {
    wick_dist_work **slot = async_slot(L, 1);
    return finish(L, wick_dist_barrier(slot), slot);
}

WL_FUNCTION(d_send) {
    wick_tensor *t = wl_checktensor(L, 1, "send", "tensor");
    int dst = rank_arg(L, 2, "send", "dst");
    wick_dist_work **slot = async_slot(L, 3);
    return finish(L, wick_dist_send(t, dst, slot), slot);
}

WL_FUNCTION(d_recv) {
    wick_tensor *t = wl_checktensor(L, 1, "recv", "tensor");
    int src = rank_arg(L, 2, "recv", "src");
    wick_dist_work **slot = async_slot(L, 3);
    return finish(L, wick_dist_recv(t, src, slot), slot);
}

/* batch(ops): ops[i] = {is_recv, tensor, peer} (distributed.lua's P2POps,
 * checked there); returns the list of handles */
WL_FUNCTION(d_batch) {
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)lua_objlen(L, 1);
    if (n < 1 || n > 1 << 20) return wl_raise(L, "batch_isend_irecv: expected a non-empty list of P2POp");
    /* the arrays live in userdata, so a raise frees them */
    wick_dist_p2p_op *ops = lua_newuserdata(L, sizeof *ops * (size_t)n);
    wick_dist_work **works = lua_newuserdata(L, sizeof *works * (size_t)n);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        if (!lua_istable(L, -1)) return wl_raise(L, "batch_isend_irecv: expected a P2POp at list[%d]", i + 1);
        lua_rawgeti(L, -1, 1);
        ops[i].is_recv = lua_toboolean(L, -1);
        lua_rawgeti(L, -2, 2);
        ops[i].tensor = wl_totensor(L, -1);
        if (!ops[i].tensor) return wl_raise(L, "batch_isend_irecv: list[%d] has no tensor", i + 1);
        lua_rawgeti(L, -3, 3);
        ops[i].peer = rank_arg(L, -1, "batch_isend_irecv", "peer");
        lua_pop(L, 4); /* the tensors stay alive in the list */
    }
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) { /* the handles exist before the call: nothing leaks if it raises */
        push_work_slot(L);
        lua_rawseti(L, -2, i + 1);
    }
    wl_check(L, wick_dist_batch_isend_irecv(ops, n, works));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, -1, i + 1);
        *(wick_dist_work **)lua_touserdata(L, -1) = works[i];
        lua_pop(L, 1);
    }
    return 1;
}

/* abort(message): the whole job ends (prints message first) */
WL_FUNCTION(d_abort) {
    const char *msg = lua_tostring(L, 1);
    wick_dist_abort(1, msg);
    return 0;
}

static const luaL_Reg dist_fns[] = {
    {"is_available", d_is_available},
    {"init", d_init},
    {"is_initialized", d_is_initialized},
    {"destroy", d_destroy},
    {"info", d_info},
    {"rank", d_rank},
    {"world_size", d_world_size},
    {"local_rank", d_local_rank},
    {"check_counts", d_check_counts},
    {"fast_all_reduce", d_fast_all_reduce},
    {"raise_last", d_raise_last},
    {"all_reduce", d_all_reduce},
    {"broadcast", d_broadcast},
    {"all_gather", d_all_gather},
    {"all_gather_into_tensor", d_all_gather_into_tensor},
    {"reduce_scatter_tensor", d_reduce_scatter_tensor},
    {"barrier", d_barrier},
    {"send", d_send},
    {"recv", d_recv},
    {"batch", d_batch},
    {"abort", d_abort},
    {NULL, NULL},
};

void wl_open_dist(lua_State *L) {
    if (luaL_newmetatable(L, WORK_MT)) {
        lua_pushcfunction(L, work_gc);
        lua_setfield(L, -2, "__gc");
        lua_pushcfunction(L, work_tostring);
        lua_setfield(L, -2, "__tostring");
        lua_newtable(L);
        lua_pushcfunction(L, work_wait);
        lua_setfield(L, -2, "wait");
        lua_pushcfunction(L, work_is_completed);
        lua_setfield(L, -2, "is_completed");
        lua_pushcfunction(L, work_seconds);
        lua_setfield(L, -2, "seconds");
        lua_setfield(L, -2, "__index");
        lua_pushstring(L, "Work");
        lua_setfield(L, -2, "__name");
    }
    lua_pop(L, 1);
    lua_newtable(L);
    for (const luaL_Reg *r = dist_fns; r->name; r++) {
        lua_pushcfunction(L, r->func);
        lua_setfield(L, -2, r->name);
    }
    lua_setfield(L, -2, "dist");
}
