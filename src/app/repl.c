/* build/wick's interactive prompt: expressions print their values, incomplete
 * statements continue on a ">>" line, errors print a short traceback, Ctrl-C
 * stops the running line (not the prompt), Ctrl-D exits. With libedit
 * (WICK_HAVE_LIBEDIT): line editing, history in ~/.wick_history (or
 * $WICK_HISTORY) and Tab completion. Formatting, tracebacks and completion are
 * Lua, in lua/wick/repl.lua. */
#include "repl.h"

#include <lauxlib.h>
#include <luajit.h>
#include <wick.h>
#include <wick_embed.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WICK_HAVE_LIBEDIT
#include <sys/select.h>
#include <editline/readline.h>
#endif

#define HISTORY_SIZE 1000

static lua_State *volatile running; /* the state running a line, NULL at the prompt */
/* The prompt state's interrupt flag (wick_embed.h): Ctrl-C raises it, so the
 * running op stops; the prompt lowers it after each line, so that a Ctrl-C
 * caught by the Lua hook before any op saw it does not fail the next line. */
static wick_interrupt_flag *state_flag;
static volatile sig_atomic_t sigint_at_prompt;
static int helpers_ref = LUA_NOREF; /* require("wick.repl"), or LUA_NOREF */

/* ---- Ctrl-C ---- */

/* As lua.c: the hook runs at the next call, return or instruction of
 * interpreted Lua and raises the error there. Loops compiled by the JIT run no
 * hooks; the ops they call see the state's flag instead. An interrupt is
 * reported once: when an op saw the flag first (and failed, lowering it), the
 * hook only disarms itself. It must not raise then: it would fire at the call
 * of the message handler of the op's error ("error in error handling"). */
static void interrupted_hook(lua_State *L, lua_Debug *ar) {
    (void)ar;
    lua_sethook(L, NULL, 0, 0);
    if (wick_interrupt_take(state_flag)) wick_lua_error(L, "interrupted"); /* at the user's line */
}

static void on_sigint(int sig) {
    (void)sig;
    lua_State *L = running;
    if (L) {
        /* as lua.c: a second Ctrl-C before the first is honoured (a C call or a
         * compiled loop that never looks) ends the program */
        signal(SIGINT, SIG_DFL);
        if (state_flag) wick_interrupt_raise(state_flag);
        else wick_interrupt(); /* wick failed to load: nothing runs ops anyway */
        /* the terminal echoed "^C": the message goes on a line of its own */
        if (write(STDOUT_FILENO, "\n", 1) < 0) { /* nothing to do */ }
        lua_sethook(L, interrupted_hook, LUA_MASKCALL | LUA_MASKRET | LUA_MASKCOUNT, 1);
    } else {
        sigint_at_prompt = 1;
    }
}

static void install_sigint(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0; /* no SA_RESTART: the prompt's select() must wake up */
    sigaction(SIGINT, &sa, NULL);
}

/* ---- running a line ---- */

/* the helper table's field `name`, or nil */
static void push_helper(lua_State *L, const char *name) {
    if (helpers_ref == LUA_NOREF) {
        lua_pushnil(L);
        return;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, helpers_ref);
    lua_getfield(L, -1, name);
    lua_remove(L, -2);
}

static void push_plain_message(lua_State *L, int idx) {
    const char *msg = lua_tostring(L, idx);
    lua_pushstring(L, msg ? msg : "(error object is not a string)");
}

/* The message handler of a line. The Ctrl-C hook is disarmed first: an op
 * that saw the interrupt raises "interrupted" with the hook still armed, and
 * the hook firing inside the handler's own Lua code made it fail ("error in
 * error handling"). Then wick.repl's traceback, called protected; the message
 * alone when that fails. */
static int line_error(lua_State *L) {
    lua_sethook(L, NULL, 0, 0);
    push_helper(L, "traceback");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        push_plain_message(L, 1);
        return 1;
    }
    lua_pushvalue(L, 1);
    lua_pushinteger(L, 3); /* traceback's level: past itself and this handler */
    if (lua_pcall(L, 2, 1, 0) != 0 || !lua_isstring(L, -1)) {
        lua_pop(L, 1);
        push_plain_message(L, 1);
    }
    return 1;
}

/* Calls the function below its nargs arguments under the REPL's message
 * handler with Ctrl-C armed; leaves the results (or the message) on the stack. */
static int call_line(lua_State *L, int nargs) {
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, line_error);
    lua_insert(L, base);
    running = L;
    int status = lua_pcall(L, nargs, LUA_MULTRET, base);
    running = NULL;
    install_sigint(); /* the handler may have reset itself */
    lua_sethook(L, NULL, 0, 0); /* a Ctrl-C that came after the last hook check */
    if (state_flag) wick_interrupt_take(state_flag);
    else wick_interrupt_take(NULL);
    lua_remove(L, base);
    return status;
}

static void print_error(lua_State *L) {
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "%s\n", msg ? msg : "(error object is not a string)");
    fflush(stderr);
    lua_pop(L, 1);
}

/* Prints the values above `base` (format() of wick.repl: tables summarised,
 * tab-separated), then drops them. Nothing when there are none. */
static void print_results(lua_State *L, int base) {
    int n = lua_gettop(L) - base;
    if (n <= 0) return;
    push_helper(L, "format");
    if (lua_isnil(L, -1)) {
        lua_pop(L, 1);
        lua_getglobal(L, "print");
    }
    lua_insert(L, base + 1);
    if (call_line(L, n)) {
        print_error(L);
    } else if (lua_gettop(L) > base && lua_isstring(L, -1)) {
        fputs(lua_tostring(L, -1), stdout);
        fputc('\n', stdout);
    }
    fflush(stdout);
    lua_settop(L, base);
}

/* LuaJIT reports a chunk cut short as "...: unexpected symbol near '<eof>'" or
 * "'end' expected ... near '<eof>'": more input would complete it (as lua.c). */
static int incomplete(lua_State *L, int status) {
    if (status != LUA_ERRSYNTAX) return 0;
    size_t len;
    const char *msg = lua_tolstring(L, -1, &len);
    static const char eof[] = "'<eof>'";
    return msg && len >= sizeof eof - 1 && strcmp(msg + len - (sizeof eof - 1), eof) == 0;
}

/* Compiles `chunk`: first as an expression list (so expressions print), then as
 * a statement. Returns 1 if it needs more lines, else 0 after running it.
 * Not `return <chunk>`: there `error("x")` would be a tail call, and LuaJIT
 * would lose the "stdin:1:" of its message; select(1, ...) keeps every value,
 * and the newline keeps a trailing -- comment from eating the ")". */
static int eval_chunk(lua_State *L, const char *chunk) {
    int base = lua_gettop(L);
    lua_pushfstring(L, "return select(1, %s\n)", chunk);
    int status = luaL_loadbuffer(L, lua_tostring(L, -1), lua_objlen(L, -1), "=stdin");
    lua_remove(L, -2);
    if (status) {
        lua_pop(L, 1);
        status = luaL_loadbuffer(L, chunk, strlen(chunk), "=stdin");
    }
    if (incomplete(L, status)) {
        lua_settop(L, base);
        return 1;
    }
    /* The line itself runs interpreted: a loop typed at the prompt, compiled
     * by the JIT, would never run the Ctrl-C hook (`while true do end`).
     * Functions it defines or calls are still compiled (not recursive). */
    if (!status) luaJIT_setmode(L, -1, LUAJIT_MODE_FUNC | LUAJIT_MODE_OFF);
    if (!status) status = call_line(L, 0);
    if (status)
        print_error(L);
    else
        print_results(L, base);
    lua_settop(L, base);
    return 0;
}

/* ---- reading lines ---- */

#ifdef WICK_HAVE_LIBEDIT

static lua_State *completion_L;
static char *line_read;
static int line_done;

static void on_line(char *line) {
    line_read = line; /* NULL at end of input */
    line_done = 1;
    rl_callback_handler_remove(); /* no more keys until the line has run */
}

/* Tab: wick.repl's complete(text), one candidate per call (libedit's protocol:
 * state 0 starts a new completion). */
static char *complete_entry(const char *text, int state) {
    static int index, count;
    lua_State *L = completion_L;
    if (state == 0) {
        index = 0;
        count = 0;
        push_helper(L, "complete");
        lua_pushstring(L, text);
        if (lua_pcall(L, 1, 1, 0) || !lua_istable(L, -1)) {
            lua_pop(L, 1);
            lua_pushnil(L);
        } else {
            count = (int)lua_objlen(L, -1);
        }
        lua_setfield(L, LUA_REGISTRYINDEX, "wick.repl.completions");
    }
    if (index >= count) return NULL;
    lua_getfield(L, LUA_REGISTRYINDEX, "wick.repl.completions");
    lua_rawgeti(L, -1, ++index);
    const char *s = lua_tostring(L, -1);
    char *copy = s ? strdup(s) : NULL;
    lua_pop(L, 2);
    return copy;
}

static char history_path[4096];
static char *last_added;

static void history_open(void) {
    const char *path = getenv("WICK_HISTORY");
    const char *home = getenv("HOME");
    if (path && *path)
        snprintf(history_path, sizeof history_path, "%s", path);
    else if (home && *home)
        snprintf(history_path, sizeof history_path, "%s/.wick_history", home);
    using_history();
    stifle_history(HISTORY_SIZE);
    if (history_path[0]) read_history(history_path);
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && last->line) last_added = strdup(last->line);
}

/* adds a line unless blank or the same as the one before; saved at once, so a
 * killed session keeps it */
static void history_add(const char *line) {
    if (strspn(line, " \t") == strlen(line)) return;
    if (last_added && strcmp(last_added, line) == 0) return;
    add_history(line);
    free(last_added);
    last_added = strdup(line);
    if (history_path[0]) write_history(history_path);
}

/* One line through libedit. Returns a malloc'd line, NULL at end of input, or
 * sets *cancelled (Ctrl-C at the prompt: the line and any ">>" text dropped). */
static char *edit_line(const char *prompt, int *cancelled) {
    *cancelled = 0;
    line_done = 0;
    line_read = NULL;
    sigint_at_prompt = 0;
    rl_callback_handler_install(prompt, on_line);
    while (!line_done) {
        fd_set fds;
        FD_ZERO(&fds);
        FD_SET(STDIN_FILENO, &fds);
        int r = select(STDIN_FILENO + 1, &fds, NULL, NULL, NULL);
        if (sigint_at_prompt) {
            sigint_at_prompt = 0;
            rl_replace_line("", 0);
            rl_callback_handler_remove();
            fputs("^C\n", stdout);
            fflush(stdout);
            *cancelled = 1;
            return NULL;
        }
        if (r < 0) {
            if (errno == EINTR) continue;
            rl_callback_handler_remove();
            return NULL;
        }
        rl_callback_read_char();
    }
    return line_read;
}

static void repl_edit(lua_State *L) {
    completion_L = L;
    rl_readline_name = "wick";
    /* '.' and ':' are not breaks: Tab sees all of "a.b.c" or "t:me" */
    rl_basic_word_break_characters = " \t\n\"\\'`@$><=;|&{(,+-*/%^#~[]";
    rl_completion_append_character = '\0';
    rl_completion_entry_function = complete_entry;
    rl_initialize();
    history_open();
    lua_pushstring(L, ""); /* the text of an unfinished statement */
    int text = lua_gettop(L);
    for (;;) {
        int cancelled;
        char *line = edit_line(lua_objlen(L, text) > 0 ? ">> " : "> ", &cancelled);
        if (cancelled) {
            lua_pushstring(L, "");
            lua_replace(L, text);
            continue;
        }
        if (!line) break;
        history_add(line);
        if (lua_objlen(L, text) > 0) lua_pushfstring(L, "%s\n%s", lua_tostring(L, text), line);
        else lua_pushstring(L, line);
        free(line);
        if (!eval_chunk(L, lua_tostring(L, -1))) lua_pushstring(L, "");
        lua_replace(L, text);
    }
    fputc('\n', stdout);
    fflush(stdout);
    free(last_added);
    last_added = NULL;
}

#endif /* WICK_HAVE_LIBEDIT */

/* Without libedit, or with -i on a pipe: lines from stdin as they come. */
static void repl_plain(lua_State *L) {
    char line[4096];
    lua_pushstring(L, "");
    int text = lua_gettop(L);
    for (;;) {
        fputs(lua_objlen(L, text) > 0 ? ">> " : "> ", stdout);
        fflush(stdout);
        sigint_at_prompt = 0;
        if (!fgets(line, sizeof line, stdin)) {
            if (ferror(stdin) && errno == EINTR && sigint_at_prompt) { /* Ctrl-C: drop the line */
                clearerr(stdin);
                fputc('\n', stdout);
                lua_pushstring(L, "");
                lua_replace(L, text);
                continue;
            }
            break;
        }
        line[strcspn(line, "\n")] = '\0';
        if (lua_objlen(L, text) > 0) lua_pushfstring(L, "%s\n%s", lua_tostring(L, text), line);
        else lua_pushstring(L, line);
        if (!eval_chunk(L, lua_tostring(L, -1))) lua_pushstring(L, "");
        lua_replace(L, text);
    }
    fputc('\n', stdout);
    fflush(stdout);
}

void wick_repl(lua_State *L) {
    int top = lua_gettop(L);
    /* `wick` ready at the prompt, as a scientist expects; and the helpers */
    lua_getglobal(L, "require");
    lua_pushstring(L, "wick");
    if (lua_pcall(L, 1, 1, 0) == 0) {
        lua_setglobal(L, "wick");
        state_flag = wick_lua_interrupt_flag(L);
    } else {
        fprintf(stderr, "wick: %s\n", lua_tostring(L, -1));
        lua_pop(L, 1);
    }
    lua_getglobal(L, "require");
    lua_pushstring(L, "wick.repl");
    if (lua_pcall(L, 1, 1, 0) == 0 && lua_istable(L, -1)) {
        helpers_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    } else {
        lua_pop(L, 1); /* results printed with print(), errors untrimmed */
    }
    struct sigaction old;
    sigaction(SIGINT, NULL, &old);
    install_sigint();
#ifdef WICK_HAVE_LIBEDIT
    if (isatty(STDIN_FILENO))
        repl_edit(L);
    else
#endif
        repl_plain(L);
    sigaction(SIGINT, &old, NULL);
    if (helpers_ref != LUA_NOREF) luaL_unref(L, LUA_REGISTRYINDEX, helpers_ref);
    helpers_ref = LUA_NOREF;
    lua_settop(L, top);
}
