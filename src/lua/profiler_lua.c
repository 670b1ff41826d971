/* The profiler's hook in the binding, and its Lua functions (core.profiler_*).
 *
 * The hook: every op reaches the core through a C function of this binding,
 * and every such function is defined by WL_FUNCTION (wick_lua.h), which tests
 * wick_profiling before its body. Off, that test is all a call costs. On,
 * wl_profiled finds the name the running function was registered under (the
 * table wl_profile_names filled), opens an event (name, device and shapes of
 * the tensor arguments) and closes it when the body returns; a body left by an
 * error is closed at the next event (wick_profiler_begin's frame rule) or when
 * the profile stops. An op whose first tensor is on a GPU is timed there too
 * (wick_profiler_time_device). */
#include "wick_lua.h"

#include <stdbool.h>
#include <string.h>

static const char names_key = 'p'; /* registry[&names_key]: {[function] = interned name (light userdata)} */

static int64_t open_event(lua_State *L, const char *name, const void *frame) {
    int n = lua_gettop(L);
    int32_t device = -1;
    wick_device dev = {WICK_CPU, 0};
    for (int i = 1; i <= n && device < 0; i++) {
        wick_tensor *t = wl_totensor(L, i);
        if (t) dev = wick_tensor_device(t), device = (int32_t)wl_device_code(dev);
    }
    int64_t ev = wick_profiler_begin(name, device, frame);
    if (ev >= 0 && dev.type == WICK_CUDA) wick_profiler_time_device(ev, dev); /* its GPU time too */
    if (ev >= 0 && wick_profiler_records_shapes())
        for (int i = 1; i <= n; i++) {
            wick_tensor *t = wl_totensor(L, i);
            if (t) wick_profiler_shape(ev, wick_tensor_ndim(t), wick_tensor_sizes(t));
            else if (!lua_istable(L, i) && !lua_isnil(L, i)) wick_profiler_shape(ev, -1, NULL);
        }
    return ev;
}

/* The name the running C function was registered under, or NULL (no op). */
static const char *running_op_name(lua_State *L) {
    lua_Debug ar;
    if (!lua_getstack(L, 0, &ar) || !lua_getinfo(L, "f", &ar)) return NULL;
    lua_pushlightuserdata(L, (void *)&names_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    const char *name = NULL;
    if (lua_istable(L, -1)) {
        lua_pushvalue(L, -2);
        lua_rawget(L, -2);
        name = lua_touserdata(L, -1);
        lua_pop(L, 1);
    }
    lua_pop(L, 2);
    return name;
}

int wl_profiled(lua_State *L, lua_CFunction body) {
    const char *name = running_op_name(L);
    if (!name) return body(L);
    char frame;
    int64_t ev = open_event(L, name, &frame);
    int r = body(L);
    wick_profiler_end(ev);
    return r;
}

/* Functions that are no ops: metadata, the binding's own plumbing. Names with a
 * leading '_' are plumbing too. */
static bool not_an_op(const char *name) {
    static const char *const skip[] = {
        "size", "stride", "dim", "numel", "is_contiguous", "storage_offset", "is_pinned", "device_of_code",
        "set_lua_dir", "error", "log", "clock", "isatty", "cpu_bytes_in_use", "memory_stats",
        "reset_peak_memory_stats", "fast_pointers", "fill_slots", "tensor_storage_key", "same_device",
        "set_grad_enabled", "is_grad_enabled", "__gc", "__index", "__newindex", "__tostring", "__len", "__eq",
        "__close", "__mode", "__metatable", "__name", NULL};
    if (!strcmp(name, "_adam_step") || !strcmp(name, "_sgd_step") || !strcmp(name, "_adadelta_step"))
        return false; /* the optimizers' fused steps: ops */
    if (name[0] == '_' && name[1] != '_') return true;
    if (!strncmp(name, "profiler_", 9)) return true;
    if (!strncmp(name, "cuda_", 5) && strcmp(name, "cuda_synchronize") != 0) return true;
    for (int i = 0; skip[i]; i++)
        if (!strcmp(name, skip[i])) return true;
    return false;
}

/* Names the op functions of the table at idx (see the top of the file): one
 * entry per C function value, so a closure registered under several names
 * (t_unary for relu, exp, ...) is told apart by its upvalues. */
void wl_profile_names(lua_State *L, int idx) {
    if (idx < 0) idx = lua_gettop(L) + idx + 1;
    lua_pushlightuserdata(L, (void *)&names_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushlightuserdata(L, (void *)&names_key);
        lua_pushvalue(L, -2);
        lua_rawset(L, LUA_REGISTRYINDEX);
    }
    int names = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) == LUA_TSTRING && lua_tocfunction(L, -1) && !not_an_op(lua_tostring(L, -2))) {
            const char *name = lua_tostring(L, -2);
            lua_pushvalue(L, -1);
            lua_pushlightuserdata(L, (void *)wick_profiler_intern(name[0] == '_' && name[1] == '_' ? name + 2 : name)); /* __add: add */
            lua_rawset(L, names);
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
}

/* ---- core.profiler_* ---- */

/* profiler_start(max_events, record_shapes) */
WL_FUNCTION(m_profiler_start) {
    int64_t cap = wl_checkint(L, 1, "wick.profiler.profile", "max_events");
    wl_check(L, wick_profiler_start(cap, lua_toboolean(L, 2)));
    return 0;
}

WL_FUNCTION(m_profiler_stop) {
    (void)L;
    wick_profiler_stop();
    return 0;
}

/* profiler_begin(name[, code]) -> event (a range: -2 record_function's, -3 a
 * module's forward); -1 when not recording */
WL_FUNCTION(m_profiler_begin) {
    const char *name = wl_checkstring(L, 1, "wick.profiler.record_function", "name");
    int32_t code = lua_isnoneornil(L, 2) ? -2 : (int32_t)luaL_checkinteger(L, 2);
    lua_pushnumber(L, (lua_Number)(wick_profiling ? wick_profiler_begin(wick_profiler_intern(name), code, NULL) : -1));
    return 1;
}

WL_FUNCTION(m_profiler_end) {
    wick_profiler_end((int64_t)luaL_checknumber(L, 1));
    return 0;
}

static void push_shapes(lua_State *L, const wick_profiler_event *e, const int64_t *shapes) {
    lua_createtable(L, e->nshapes, 0);
    int64_t at = e->shapes;
    for (int s = 0; s < e->nshapes; s++) {
        int ndim = (int)shapes[at++];
        lua_createtable(L, ndim > 0 ? ndim : 0, 0);
        for (int k = 0; k < ndim; k++) {
            wl_pushint64(L, shapes[at++]);
            lua_rawseti(L, -2, k + 1);
        }
        lua_rawseti(L, -2, s + 1);
    }
}

/* profiler_events() -> {{name, start_us, end_us, bytes, parent (1-based, 0:
 * none), device (code or -1), shapes = {{sizes...}, ...}, device_us and
 * device_start_us (timed on a GPU only)}, ...}, dropped */
WL_FUNCTION(m_profiler_events) {
    int64_t dropped, n = wick_profiler_event_count(&dropped);
    const wick_profiler_event *ev = wick_profiler_events();
    const int64_t *shapes = wick_profiler_shapes();
    int64_t t0 = n ? ev[0].start_ns : 0;
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        const wick_profiler_event *e = &ev[i];
        lua_createtable(L, 0, 8);
        lua_pushstring(L, e->name);
        lua_setfield(L, -2, "name");
        lua_pushnumber(L, (lua_Number)(e->start_ns - t0) / 1000.0);
        lua_setfield(L, -2, "start_us");
        lua_pushnumber(L, (lua_Number)((e->end_ns ? e->end_ns : e->start_ns) - t0) / 1000.0);
        lua_setfield(L, -2, "end_us");
        wl_pushint64(L, e->bytes);
        lua_setfield(L, -2, "bytes");
        lua_pushinteger(L, e->parent + 1);
        lua_setfield(L, -2, "parent");
        lua_pushinteger(L, e->device);
        lua_setfield(L, -2, "device");
        if (e->device_ns >= 0) {
            lua_pushnumber(L, (lua_Number)e->device_ns / 1000.0);
            lua_setfield(L, -2, "device_us");
            lua_pushnumber(L, (lua_Number)(e->device_start_ns - t0) / 1000.0);
            lua_setfield(L, -2, "device_start_us");
        }
        if (shapes) {
            push_shapes(L, e, shapes);
            lua_setfield(L, -2, "shapes");
        }
        lua_rawseti(L, -2, (int)(i + 1));
    }
    wl_pushint64(L, dropped);
    return 2;
}

static const luaL_Reg profiler_fns[] = {{"profiler_start", m_profiler_start}, {"profiler_stop", m_profiler_stop},
                                        {"profiler_begin", m_profiler_begin}, {"profiler_end", m_profiler_end},
                                        {"profiler_events", m_profiler_events}, {NULL, NULL}};

void wl_open_profiler(lua_State *L) { luaL_register(L, NULL, profiler_fns); }
