/* The few Lua C API differences between LuaJIT (Lua 5.1's API, the default
 * and faster build) and PUC Lua 5.2+ (the wick_lua54 module, WICK_LUA54=ON).
 * The binding is written against 5.1's names; on 5.2+ they map onto the
 * current ones here, so the sources carry no #if of their own. */
#ifndef WICK_LUA_COMPAT_H
#define WICK_LUA_COMPAT_H

#include <lauxlib.h>
#include <lua.h>

#if LUA_VERSION_NUM >= 502
/* the length of a table or string, without __len (5.1: lua_objlen) */
#ifndef lua_objlen
#define lua_objlen(L, i) lua_rawlen(L, (i))
#endif
/* only luaL_register(L, NULL, fns) is used: fill the table at -1 */
#define luaL_register(L, name, fns) luaL_setfuncs(L, (fns), 0)
#endif

/* A size, count, index or integer-dtype value (exact, |v| <= 2^53 where it
 * comes from a tensor): a Lua integer on 5.3+ (math.type "integer", prints as
 * 2, not 2.0), a number on LuaJIT, whose numbers are all doubles. */
#if LUA_VERSION_NUM >= 503
#define wl_pushint64(L, v) lua_pushinteger(L, (lua_Integer)(v))
#define WL_EXACT_INT64 1 /* every int64 is exact as a Lua integer */
#else
#define wl_pushint64(L, v) lua_pushnumber(L, (lua_Number)(v))
#define WL_EXACT_INT64 0 /* exact to 2^53 only */
#endif

/* Whether the number at idx is one of Python's ints, which keep an integer tensor integer: on
 * 5.3+ a Lua integer (2.0 and 1 / 2 are floats there, as Python's 2.0 and 1 / 2: MuZero's
 * visit_counts ** (1 / temperature) is float), on LuaJIT any whole number (its numbers are all
 * doubles, so 2.0 is 2) */
#if LUA_VERSION_NUM >= 503
#define wl_is_python_int(L, idx, v) lua_isinteger(L, (idx))
#else
#define wl_is_python_int(L, idx, v) ((v) == floor(v) && fabs(v) < 9223372036854775808.0)
#endif

#endif
