/* The interactive prompt of build/wick (src/app/repl.c). */
#ifndef WICK_REPL_H
#define WICK_REPL_H

#include <lua.h>

/* Runs the prompt on L until end of input (Ctrl-D). Uses libedit (line editing,
 * history, completion) when built with it and stdin is a terminal, a plain
 * prompt otherwise. Ctrl-C interrupts the running line, not the prompt. */
void wick_repl(lua_State *L);

#endif
