/* libFuzzer target for wick.load (fuzz/README.md). Built once per checkpoint
 * reader with -DFUZZ_READER=FUZZ_NATIVE, FUZZ_SAFETENSORS, FUZZ_PYTORCH or FUZZ_NUMPY:
 *
 *   fuzz_native       wick checkpoints (the engine: src/io/ckpt_read.c)
 *   fuzz_safetensors  plain safetensors files (src/io/ckpt_read.c)
 *   fuzz_pytorch      torch.save zip checkpoints (src/io/zip.c, pytorch.c)
 *   fuzz_numpy        NumPy's .npy files and .npz zips (src/io/numpy.c, zip.c)
 *
 * Each input is written to an in-memory file and loaded with
 * pcall(wick.load, path, {map_location = "cpu", verify = false}) (so that inputs
 * with damaged data still reach the value tree), and when that loads, in
 * fuzz_native and fuzz_pytorch once more with the default, which checks every
 * storage's checksum (plain safetensors files and .npy files have none). A Lua error is the expected
 * answer to a bad file; a crash, a sanitizer report, a leak, a timeout or Lua
 * running out of memory is a finding. Whatever loads is walked and every tensor
 * in it read in full (clone, sum).
 *
 * libFuzzer sees only instrumented C: the readers (the checkpoint engine) and
 * the binding's conversion. While wick.load runs, a line hook records Lua
 * line-to-line edges (serialize.lua's options and map_location policy) in
 * libFuzzer's "extra counters": they count as features (ft:) too. WICK_FUZZ_NO_LUA_COVERAGE=1 turns the hook off (to compare);
 * WICK_FUZZ_VERBOSE=1 prints each Lua error (to see what a reader said). */
#define _GNU_SOURCE
#include "wick_lua.h"

#include <errno.h>
#include <lualib.h>
#include <luajit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_input.h"

#define FUZZ_NATIVE 1
#define FUZZ_SAFETENSORS 2
#define FUZZ_PYTORCH 3
#define FUZZ_NUMPY 4
#ifndef FUZZ_READER
#error "build with -DFUZZ_READER=FUZZ_NATIVE, FUZZ_SAFETENSORS, FUZZ_PYTORCH or FUZZ_NUMPY"
#endif
#ifndef WICK_SOURCE_LUA_DIR
#error "build with -DWICK_SOURCE_LUA_DIR=\"<source>/lua\""
#endif

int luaopen_wick_core(lua_State *L);

static lua_State *L;
static int ref_load, ref_touch, ref_opts, ref_opts_verify;
static int lua_coverage = 1, verbose = 0;

/* ---- Lua coverage through libFuzzer's extra counters ---- */

#define LUA_EDGES (1u << 16)
__attribute__((used, section("__libfuzzer_extra_counters"))) static uint8_t lua_edges[LUA_EDGES];
static uint64_t prev_line;

/* An edge is (previous line, this line); a line is (chunk, line number). The
 * chunk's source string lives as long as its function prototype, so its
 * address names the file within this process. */
static void line_hook(lua_State *l, lua_Debug *ar) {
    if (!lua_getinfo(l, "Sl", ar)) return;
    uint64_t here = (uint64_t)(uintptr_t)ar->source * 0x9E3779B97F4A7C15ull ^
                    (uint64_t)(uint32_t)ar->currentline * 0xC2B2AE3D27D4EB4Full;
    here ^= here >> 29;
    uint32_t i = (uint32_t)(here ^ prev_line) & (LUA_EDGES - 1);
    if (lua_edges[i] != 0xFF) lua_edges[i]++;
    prev_line = here >> 1; /* so that A->B and B->A differ */
}

/* ---- the Lua side of the harness ---- */

/* Returns wick.load and touch(value): walks a loaded value (bounded depth, each
 * table once) and reads every element of every tensor. Views larger than
 * TOUCH_LIMIT elements are left alone: stride-0 views of a tiny storage may
 * legally claim billions of elements (their bounds are checked by as_strided at
 * load), and copying them would only measure the harness. */
static const char driver[] =
    "local wick = require('wick')\n"
    "wick.set_num_threads(1)\n"
    "local TOUCH_LIMIT = 2^22\n"
    "local function touch(v, depth, seen)\n"
    "  if wick.is_tensor(v) then\n"
    "    if v:numel() <= TOUCH_LIMIT then\n"
    "      pcall(v.clone, v)\n"
    "      pcall(v.sum, v)\n"
    "    end\n"
    "    return\n"
    "  end\n"
    "  if type(v) ~= 'table' or depth > 64 or seen[v] then return end\n"
    "  seen[v] = true\n"
    "  for k, x in pairs(v) do\n"
    "    touch(k, depth + 1, seen)\n"
    "    touch(x, depth + 1, seen)\n"
    "  end\n"
    "end\n"
    "return wick.load, function(v) touch(v, 0, {}) end\n";

static void die(const char *what) {
    fprintf(stderr, "fuzz_load: %s\n", what);
    abort();
}

static int make_ref_opts(int verify) {
    lua_createtable(L, 0, 2);
    lua_pushstring(L, "cpu");
    lua_setfield(L, -2, "map_location");
    if (!verify) { /* verifying is the default */
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "verify");
    }
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *e = getenv("WICK_FUZZ_NO_LUA_COVERAGE");
    lua_coverage = !(e && *e && strcmp(e, "0") != 0);
    e = getenv("WICK_FUZZ_VERBOSE");
    verbose = e && *e && strcmp(e, "0") != 0;

    L = luaL_newstate();
    if (!L) die("cannot create a Lua state");
    luaL_openlibs(L);
    /* interpreted only: hooks fire on every line, and runs are repeatable */
    luaJIT_setmode(L, 0, LUAJIT_MODE_ENGINE | LUAJIT_MODE_OFF);
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "path");
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;%s", WICK_SOURCE_LUA_DIR, WICK_SOURCE_LUA_DIR, lua_tostring(L, -1));
    lua_setfield(L, -3, "path");
    lua_pop(L, 1);
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, luaopen_wick_core);
    lua_setfield(L, -2, "wick.core");
    lua_pop(L, 2);

    if (luaL_loadbuffer(L, driver, sizeof driver - 1, "=fuzz_load") || lua_pcall(L, 0, 2, 0)) {
        fprintf(stderr, "fuzz_load: %s\n", lua_tostring(L, -1));
        die("cannot load wick");
    }
    ref_touch = luaL_ref(L, LUA_REGISTRYINDEX);
    ref_load = luaL_ref(L, LUA_REGISTRYINDEX);
    ref_opts = make_ref_opts(0);
    ref_opts_verify = make_ref_opts(1);
    fz_input_path(); /* made now, so the banner below can name it */
    lua_gc(L, LUA_GCCOLLECT, 0);
    fprintf(stderr, "fuzz_load: reader %s, Lua line coverage %s, input file %s\n",
            FUZZ_READER == FUZZ_NATIVE        ? "native"
            : FUZZ_READER == FUZZ_SAFETENSORS ? "safetensors"
            : FUZZ_READER == FUZZ_PYTORCH     ? "pytorch"
                                              : "numpy",
            lua_coverage ? "on" : "off", fz_input_path());
    return 0;
}

/* wick.load(path, opts) under the line hook, then the result walked. Returns
 * whether it loaded. */
static int load_once(int opts_ref, size_t size) {
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_load);
    lua_pushstring(L, fz_input_path());
    lua_rawgeti(L, LUA_REGISTRYINDEX, opts_ref);
    prev_line = 0;
    if (lua_coverage) lua_sethook(L, line_hook, LUA_MASKLINE, 0);
    int status = lua_pcall(L, 2, 1, 0);
    lua_sethook(L, NULL, 0, 0);
    if (status == LUA_ERRMEM) {
        fprintf(stderr, "fuzz_load: Lua ran out of memory loading an input of %zu bytes\n", size);
        abort();
    }
    if (status != 0) {
        if (verbose) fprintf(stderr, "fuzz_load: error: %s\n", lua_tostring(L, -1) ? lua_tostring(L, -1) : "(not a string)");
        lua_settop(L, 0);
        return 0;
    }
    if (verbose) fprintf(stderr, "fuzz_load: loaded%s\n", opts_ref == ref_opts_verify ? " with verify" : "");
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref_touch);
    lua_insert(L, -2);
    status = lua_pcall(L, 1, 0, 0);
    if (status == LUA_ERRMEM) {
        fprintf(stderr, "fuzz_load: Lua ran out of memory walking a value loaded from %zu bytes\n", size);
        abort();
    }
    if (status != 0 && verbose) fprintf(stderr, "fuzz_load: error walking the value: %s\n", lua_tostring(L, -1));
    lua_settop(L, 0);
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* wick.load picks its reader by the first bytes: keep each target on its own */
    int zip = size >= 4 && memcmp(data, "PK\3\4", 4) == 0, npy = size >= 6 && memcmp(data, "\x93NUMPY", 6) == 0;
#if FUZZ_READER == FUZZ_PYTORCH
    if (!zip) return -1;
#elif FUZZ_READER == FUZZ_NUMPY
    if (!zip && !npy) return -1; /* (an .npz is a zip) */
#else
    if (zip || npy) return -1;
#endif
    fz_write_input(data, size);
    int loaded = load_once(ref_opts, size);
#if FUZZ_READER != FUZZ_SAFETENSORS
    if (loaded) load_once(ref_opts_verify, size);
#else
    (void)loaded;
#endif
    /* tensors, mappings and file handles of this input go now, not later */
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}
