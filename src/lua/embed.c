/* Opening wick in a host's lua_State (include/wick_embed.h): the search path
 * logic of luaopen_wick and of the runner (wick_lua_preload, src/app/runner.c). */
#include "wick_lua.h"
#include "wick_embed.h"

#include <string.h>
#include <unistd.h>

#ifndef WICK_SOURCE_LUA_DIR
#define WICK_SOURCE_LUA_DIR "lua"
#endif
#ifndef WICK_INSTALL_LUA_DIR
#define WICK_INSTALL_LUA_DIR "/usr/local/share/lua/5.1"
#endif

int luaopen_wick_core(lua_State *L);

/* Registry key: set once the paths were added to this state. */
static const char paths_added_key = 0;

void wl_add_search_paths(lua_State *L) {
    lua_pushlightuserdata(L, (void *)&paths_added_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    int done = lua_toboolean(L, -1);
    lua_pop(L, 1);
    if (done) return;
    char exe[4096] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
    }
    lua_getglobal(L, "package");
    if (!lua_istable(L, -1)) { /* no package library: nothing to extend */
        lua_pop(L, 1);
        return;
    }
    lua_getfield(L, -1, "path");
    const char *old = lua_tostring(L, -1);
    lua_pushfstring(L,
                    "%s/?.lua;%s/?/init.lua;%s/../share/lua/5.1/?.lua;%s/../share/lua/5.1/?/init.lua;"
                    "%s/?.lua;%s/?/init.lua;%s",
                    WICK_SOURCE_LUA_DIR, WICK_SOURCE_LUA_DIR, exe, exe, WICK_INSTALL_LUA_DIR,
                    WICK_INSTALL_LUA_DIR, old ? old : "");
    lua_setfield(L, -3, "path");
    lua_pop(L, 1);
    lua_getfield(L, -1, "preload");
    if (lua_istable(L, -1)) {
        lua_pushcfunction(L, luaopen_wick_core);
        lua_setfield(L, -2, "wick.core");
    }
    lua_pop(L, 2);
    lua_pushlightuserdata(L, (void *)&paths_added_key);
    lua_pushboolean(L, 1);
    lua_rawset(L, LUA_REGISTRYINDEX);
}

WICK_API void wick_lua_preload(lua_State *L) { wl_add_search_paths(L); }

WICK_API int wick_lua_error(lua_State *L, const char *msg) { return wl_raise_from(L, 0, msg ? msg : "(no message)"); }

WICK_API int luaopen_wick(lua_State *L) {
    wl_add_search_paths(L);
    lua_getglobal(L, "require");
    if (!lua_isfunction(L, -1)) return luaL_error(L, "luaopen_wick: open the standard libraries (luaL_openlibs) first");
    lua_pushstring(L, "wick");
    lua_call(L, 1, 1);
    wl_state_set_key(L); /* wick_lua_interrupt(L): the state the host opened wick in */
    return 1;
}

WICK_API void wick_lua_push_tensor(lua_State *L, wick_tensor *t) {
    if (!t) {
        lua_pushnil(L);
        return;
    }
    wick_interrupt_flag *watched = wick_interrupt_watch(NULL); /* the host's own watch, kept */
    wick_tensor **slot = wl_new_slot(L);
    wick_interrupt_watch(watched);
    wick_set_oom_handler(NULL, NULL); /* wl_new_slot's handler is for the call that follows it */
    wick_tensor_retain(t);
    *slot = t;
}

WICK_API wick_tensor *wick_lua_to_tensor(lua_State *L, int idx) {
    wick_interrupt_flag *watched = wick_interrupt_watch(NULL); /* the host's own watch, kept */
    wick_tensor *t = wl_totensor(L, idx);
    wick_interrupt_watch(watched);
    return t;
}
