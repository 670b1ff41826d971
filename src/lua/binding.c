/* luaopen_wick_core: the C half of `require("wick")`. The Lua half
 * (lua/wick/init.lua) loads it as "wick.core" and builds the public module. */
#include "wick_lua.h"

WL_FUNCTION(m_set_lua_dir) {
    luaL_checkstring(L, 1);
    lua_getfield(L, LUA_REGISTRYINDEX, WL_TENSOR_MT);
    wl_register_tensor_mt(L, lua_gettop(L), lua_tostring(L, 1));
    return 0;
}

/* Raises a message with the user's position, like errors from C functions. */
WL_FUNCTION(m_error) { return wl_raise(L, "%s", luaL_checkstring(L, 1)); }

/* log(level, msg): to the host's log callback (wick_set_log); returns false
 * when none is set, so the caller prints it itself (through io.stderr). */
WL_FUNCTION(m_log) {
    int level = (int)luaL_checkinteger(L, 1);
    const char *msg = luaL_checkstring(L, 2);
    if (!wick_has_log()) {
        lua_pushboolean(L, 0);
        return 1;
    }
    wick_log(level, msg);
    lua_pushboolean(L, 1);
    return 1;
}

WICK_API int luaopen_wick_core(lua_State *L) {
    wl_state_open(L); /* the state's interrupt flag and collector pacing */
    lua_newtable(L);
    wl_open_tensor(L);
    wl_open_optim(L);
    wl_open_dist(L);
    lua_getfield(L, LUA_REGISTRYINDEX, WL_TENSOR_MT);
    wl_register_tensor_mt(L, lua_gettop(L), NULL);
    lua_pop(L, 1);
    lua_pushcfunction(L, m_set_lua_dir);
    lua_setfield(L, -2, "set_lua_dir");
    lua_pushcfunction(L, m_error);
    lua_setfield(L, -2, "error");
    lua_pushcfunction(L, m_log);
    lua_setfield(L, -2, "log");
#ifdef WICK_WITH_CUDA
    lua_pushboolean(L, 1);
#else
    lua_pushboolean(L, 0);
#endif
    lua_setfield(L, -2, "built_with_cuda");
    /* last: the names of the op functions for the profiler's hook
     * (profiler_lua.c); a build with WICK_PROFILER_HOOK=OFF has no hook */
    wl_open_profiler(L);
#ifdef WICK_NO_PROFILER_HOOK
    lua_pushboolean(L, 0);
#else
    lua_pushboolean(L, 1);
#endif
    lua_setfield(L, -2, "profiler_hooked");
    wl_profile_names(L, -1);
    lua_getfield(L, -1, "Tensor");
    wl_profile_names(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, -1, "_mt");
    wl_profile_names(L, -1);
    lua_pop(L, 1);
    return 1;
}
