/*
 * wick_embed.h — opening wick inside a host program's own Lua state (LuaJIT).
 *
 * wick.h is the C API and needs no Lua; this header adds what a host that runs
 * Lua code with wick needs: opening the module into its lua_State, and moving
 * tensors between C and that state. Link libwick (wick_static), the Lua
 * binding objects and LuaJIT; the CMake target wick_embed_host
 * (examples/embed/host.c) shows the whole thing.
 *
 * Conventions are wick.h's, plus Lua's: the functions here are called with a
 * state the host owns; luaopen_wick is a lua_CFunction and raises Lua errors,
 * so call it protected (lua_pcall / lua_cpcall, or through `require`), never
 * directly from C outside a protected call. wick itself never calls exit,
 * abort or longjmp outside Lua's own error mechanism. What is per process and
 * what is per state is listed in wick.h ("embedding in a host").
 */
#ifndef WICK_EMBED_H
#define WICK_EMBED_H

#include "wick.h"

#include <lua.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the whole wick module (the C core, registered as package.preload
 * ["wick.core"], and the Lua half, lua/wick/init.lua) and returns the module
 * table, like `require("wick")`: one result, also stored in
 * package.loaded.wick. The Lua half is searched for in the source tree libwick
 * was built from, next to the executable (../share/lua/5.1) and in the install
 * prefix, before the state's own package.path. Needs the standard libraries
 * (luaL_openlibs) opened first. Use it as
 *     lua_pushcfunction(L, luaopen_wick); if (lua_pcall(L, 0, 1, 0)) ...error...
 * or, under Lua 5.2+, luaL_requiref(L, "wick", luaopen_wick, 1) (LuaJIT has
 * no luaL_requiref). Not as package.preload.wick: it runs require("wick")
 * itself, which would then be a loop. After it, Lua code in the state simply
 * does require("wick"). Opening it again in the same state returns the same
 * table. */
WICK_API int luaopen_wick(lua_State *L);

/* Makes `require("wick")` work in L without opening wick now: adds wick's Lua
 * search paths (as luaopen_wick finds them) to package.path and registers the
 * C half as package.preload["wick.core"]. A program that links the binding
 * and lets its scripts require wick when they want it (build/wick does) calls
 * this once after luaL_openlibs. Doing it again is harmless. Raises a Lua
 * error only when Lua is out of memory. */
WICK_API void wick_lua_preload(lua_State *L);

/* Raises `msg` as a Lua error at the user's line: prefixed with the file and
 * line of the nearest running Lua function that is not one of wick's own Lua
 * files (or of the nearest one, when all are), as wick's own errors are. For
 * a lua_CFunction or a hook (lua_sethook) of a state wick is open in; like
 * lua_error it does not return. */
WICK_API int wick_lua_error(lua_State *L, const char *msg);

/* Pushes `t` as a wick tensor of this state (wick must be open in it). Takes a
 * new reference: the caller keeps its own and may release it at once. The
 * tensor shares memory with `t` (no copy). NULL pushes nil. Raises a Lua error
 * only when Lua is out of memory (then the reference is not taken). */
WICK_API void wick_lua_push_tensor(lua_State *L, wick_tensor *t);

/* The tensor at stack index idx, borrowed (valid while the value is reachable
 * in the state; wick_tensor_retain it to keep it longer), or NULL when the
 * value is not a wick tensor. Never raises. */
WICK_API wick_tensor *wick_lua_to_tensor(lua_State *L, int idx);

/* ---- interrupts (wick.h, "interrupts") ----
 * Every state wick is open in has its own interrupt flag: an interrupt aimed
 * at one state stops only that state's ops (and the pool threads working for
 * them), on whichever thread it runs; states on other threads never notice.
 * The op that sees it fails, and Lua gets the error "interrupted" at the
 * user's line (an op never returns a partial result). A loop of plain Lua
 * code is not stopped by it: a host that wants that too also sets a Lua hook
 * (lua_sethook, as build/wick's prompt does for Ctrl-C). */

/* Raises the flag of state L: the state luaopen_wick was called with (or, for
 * a state where only `require("wick")` ran, the state that first required it).
 * Returns 1, or 0 when wick is not open in L (then nothing happens).
 * Async-signal-safe and callable from any thread while L runs on another: it
 * reads no Lua data, only wick's table of open states. */
WICK_API int wick_lua_interrupt(lua_State *L);
/* The flag of the state L (wick open in it), for wick_interrupt_raise and
 * wick_interrupt_take; valid until lua_close(L). NULL when wick is not open in
 * L. Not async-signal-safe (it looks in L's registry): ask it once, before. */
WICK_API wick_interrupt_flag *wick_lua_interrupt_flag(lua_State *L);

#ifdef __cplusplus
}
#endif
#endif /* WICK_EMBED_H */
