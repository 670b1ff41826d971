/* build/wick: runs a Lua script with wick available, like `luajit`:
 *   wick script.lua args...   (arg[0] is the script, arg[1..] its arguments)
 *   wick -e 'code'            (then an optional script)
 *   wick                      (an interactive prompt, src/app/repl.c; with stdin
 *                              not a terminal, stdin is run as a script, as lua does)
 * A client of the public headers only (wick_embed.h): the binding is linked in
 * and made loadable by wick_lua_preload, which registers it as "wick.core" and
 * finds the Lua half in the source tree this runner was built from, or in the
 * install prefix. */
#include "repl.h"

#include <wick_dist.h>
#include <wick_embed.h>

#include <lauxlib.h>
#include <lualib.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int traceback(lua_State *L) {
    if (lua_isnil(L, 1)) return 1; /* error() with no message (busted's exit): stay silent */
    const char *msg = lua_tostring(L, 1);
    if (!msg) msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    lua_getglobal(L, "debug");
    lua_getfield(L, -1, "traceback");
    lua_pushstring(L, msg);
    lua_pushinteger(L, 2);
    lua_call(L, 2, 1);
    return 1;
}

/* An uncaught error. In a rank of a distributed job (a process group is
 * initialized) it names the rank and ends the whole job (wick_dist_abort:
 * MPI_Abort, non-zero exit), so the other ranks do not wait for this one
 * until their watchdogs fire; mpirun names the rank too. */
static int report(lua_State *L, int status) {
    if (status && !lua_isnil(L, -1)) {
        const char *msg = lua_tostring(L, -1);
        int rank = -1;
        if (wick_dist_is_initialized() && wick_dist_rank(&rank) == WICK_OK) {
            fprintf(stderr, "[rank %d] wick: %s\n", rank, msg ? msg : "(error object is not a string)");
            fflush(stderr);
            wick_dist_abort(1, NULL);
        }
        fprintf(stderr, "wick: %s\n", msg ? msg : "(error object is not a string)");
        fflush(stderr);
        lua_pop(L, 1);
    }
    return status;
}

static int docall(lua_State *L, int nargs, int nresults) {
    int base = lua_gettop(L) - nargs;
    lua_pushcfunction(L, traceback);
    lua_insert(L, base);
    int status = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    return status;
}

static int run_string(lua_State *L, const char *code, const char *name) {
    int status = luaL_loadbuffer(L, code, strlen(code), name);
    if (!status) status = docall(L, 0, 0);
    return report(L, status);
}

static void usage(void) {
    fprintf(stderr, "usage: wick [-e code] [-i] [script.lua [args...]]\n");
}

/* torchrun's environment for a script started by another launcher: RANK,
 * WORLD_SIZE, LOCAL_RANK and LOCAL_WORLD_SIZE from Open MPI's mpirun, MPICH's
 * Hydra or Slurm's srun, where the script's environment lacks them (PyTorch
 * scripts read them before init_process_group). */
static void launcher_env(void) {
    static const char *const names[4] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"};
    static const char *const from[][4] = {
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"},
        {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
        {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
    };
    for (size_t l = 0; l < sizeof from / sizeof *from; l++) {
        if (!getenv(from[l][0])) continue;
        for (int i = 0; i < 4; i++) {
            const char *v = getenv(from[l][i]);
            if (v && !getenv(names[i])) setenv(names[i], v, 0);
        }
        return;
    }
}

int main(int argc, char **argv) {
    /* Tensors die in bursts when the collector runs; without this glibc gives the
     * freed heap top back to the kernel each time and page-faults it in again.
     * (Only the runner sets this: a host's malloc settings are its own.) */
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
    mallopt(M_TOP_PAD, 16 << 20);
    /* fixing the trim threshold stops glibc from raising its mmap threshold as it
     * otherwise would: set it where glibc would end up, so mid-sized tensors come
     * from the heap, not from a fresh, page-faulting mmap each time */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    launcher_env();
    lua_State *L = luaL_newstate();
    if (!L) {
        fprintf(stderr, "wick: cannot create a Lua state (out of memory)\n");
        return 1;
    }
    luaL_openlibs(L);
    wick_lua_preload(L);
    int script = 0, interactive = 0, ran_code = 0, status = 0;
    for (int i = 1; i < argc && !script; i++) {
        if (strcmp(argv[i], "-e") == 0 && i + 1 < argc) {
            i++;
            ran_code = 1;
            if ((status = run_string(L, argv[i], "=(command line)"))) break;
        } else if (strcmp(argv[i], "-i") == 0) {
            interactive = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            lua_close(L);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            usage();
            lua_close(L);
            return 1;
        } else {
            script = i;
        }
    }
    if (!status && script) {
        /* arg as luajit sets it: arg[0] the script, arg[1..] the rest, arg[-1] the runner */
        lua_createtable(L, argc - script, script + 1);
        for (int i = 0; i < argc; i++) {
            lua_pushstring(L, argv[i]);
            lua_rawseti(L, -2, i - script);
        }
        lua_setglobal(L, "arg");
        const char *path = strcmp(argv[script], "-") == 0 ? NULL : argv[script];
        status = luaL_loadfile(L, path);
        if (!status) {
            int nargs = argc - script - 1;
            for (int i = script + 1; i < argc; i++) lua_pushstring(L, argv[i]);
            status = docall(L, nargs, 0);
        }
        report(L, status);
    }
    if (!status && !interactive && !script && !ran_code && !isatty(STDIN_FILENO)) {
        /* `wick < file.lua`, `... | wick`: a script, not a prompt fed by a pipe */
        status = luaL_loadfile(L, NULL);
        if (!status) status = docall(L, 0, 0);
        report(L, status);
    } else if (!status && (interactive || (!script && !ran_code))) {
        wick_repl(L);
    }
    lua_close(L);
    return status ? 1 : 0;
}
