/* Tensor functions and methods of the Lua binding. Each one checks its Lua
 * arguments, converts 1-based dims and indices to the C core's 0-based ones,
 * calls one wick_* function and pushes the result. */
#include "wick_lua.h"
#include "../io/crc.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>
#include <unistd.h>

#define SELF(fn) wl_checktensor(L, 1, fn, "self")
#define UPINT(i) ((int)lua_tointeger(L, lua_upvalueindex(i)))

/* ---- creation ---- */

typedef wick_status (*create_fn)(wick_tensor **, int, const int64_t *, wick_options);

static wick_status create_zeros(wick_tensor **o, int n, const int64_t *s, wick_options opt) {
    return wick_full(o, n, s, 0, opt);
}
static wick_status create_ones(wick_tensor **o, int n, const int64_t *s, wick_options opt) {
    return wick_full(o, n, s, 1, opt);
}

static const struct {
    const char *name;
    create_fn fn;
} creators[] = {{"empty", wick_empty}, {"zeros", create_zeros}, {"ones", create_ones},
                {"rand", wick_rand},   {"randn", wick_randn}};

/* wick.zeros(2, 3[, opts]) and friends; upvalue 1 picks the creator */
static int m_create(lua_State *L) {
    int which = UPINT(1);
    char fn[32];
    snprintf(fn, sizeof fn, "wick.%s", creators[which].name);
    int opts = wl_trailing_options(L, 1);
    int64_t sizes[WICK_MAX_DIMS];
    int n = wl_sizes(L, 1, opts ? opts - 1 : lua_gettop(L), sizes, fn);
    wick_options opt = wick_default_options();
    int rg = wl_options(L, opts, &opt, fn);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, creators[which].fn(slot, n, sizes, opt));
    wl_set_requires_grad(L, *slot, rg);
    wl_account(L);
    return 1;
}

/* wick.zeros_like(t[, opts]) and friends */
static int m_create_like(lua_State *L) {
    int which = UPINT(1);
    char fn[40];
    snprintf(fn, sizeof fn, "wick.%s_like", creators[which].name);
    wick_tensor *t = wl_checktensor(L, 1, fn, "input");
    wick_options opt = {wick_tensor_dtype(t), wick_tensor_device(t)};
    int rg = wl_options(L, lua_istable(L, 2) ? 2 : 0, &opt, fn);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, creators[which].fn(slot, wick_tensor_ndim(t), wick_tensor_sizes(t), opt));
    wl_set_requires_grad(L, *slot, rg);
    wl_account(L);
    return 1;
}

static int m_full(lua_State *L) {
    int64_t sizes[WICK_MAX_DIMS];
    if (!lua_istable(L, 1)) wl_raise(L, "wick.full: expected a size table as argument 1, got %s", luaL_typename(L, 1));
    int n = wl_sizes(L, 1, 1, sizes, "wick.full");
    wick_scalar v;
    if (!wl_toscalar(L, 2, &v)) wl_raise(L, "wick.full: expected a number fill value, got %s", luaL_typename(L, 2));
    wick_options opt = wick_default_options();
    if (lua_type(L, 2) == LUA_TBOOLEAN) opt.dtype = WICK_BOOL;
    int rg = wl_options(L, lua_istable(L, 3) ? 3 : 0, &opt, "wick.full");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_full(slot, n, sizes, v.value, opt));
    wl_set_requires_grad(L, *slot, rg);
    wl_account(L);
    return 1;
}

static int m_full_like(lua_State *L) {
    wick_tensor *t = wl_checktensor(L, 1, "wick.full_like", "input");
    wick_scalar v;
    if (!wl_toscalar(L, 2, &v)) wl_raise(L, "wick.full_like: expected a number fill value, got %s", luaL_typename(L, 2));
    wick_options opt = {wick_tensor_dtype(t), wick_tensor_device(t)};
    int rg = wl_options(L, lua_istable(L, 3) ? 3 : 0, &opt, "wick.full_like");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_full(slot, wick_tensor_ndim(t), wick_tensor_sizes(t), v.value, opt));
    wl_set_requires_grad(L, *slot, rg);
    return 1;
}

/* wick.tensor(nested tables or a number[, opts]) */
typedef struct {
    int ndim;
    int64_t sizes[WICK_MAX_DIMS];
    int all_bool, any_value;
} nested_shape;

static void nested_walk(lua_State *L, int idx, int depth, nested_shape *sh, double *values, int64_t *count,
                        char *path, size_t pathlen) {
    int t = lua_type(L, idx);
    if (t == LUA_TNUMBER || t == LUA_TBOOLEAN) {
        if (depth != sh->ndim)
            wl_raise(L, "wick.tensor: ragged nested table: expected a table of %lld elements at %s, found a %s",
                     (long long)sh->sizes[depth], pathlen ? path : "the top", lua_typename(L, t));
        if (values) values[*count] = t == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
        if (t != LUA_TBOOLEAN) sh->all_bool = 0;
        sh->any_value = 1;
        (*count)++;
        return;
    }
    if (t != LUA_TTABLE || wl_totensor(L, idx))
        wl_raise(L, "wick.tensor: expected numbers, booleans or nested tables, found a %s at %s", luaL_typename(L, idx),
                 pathlen ? path : "the top");
    int64_t n = (int64_t)lua_objlen(L, idx);
    if (!values && depth == sh->ndim && !sh->any_value) { /* first descent (down to the first number) fixes the shape */
        if (sh->ndim >= WICK_MAX_DIMS) wl_raise(L, "wick.tensor: nesting deeper than %d levels", WICK_MAX_DIMS);
        sh->sizes[sh->ndim++] = n;
    } else if (depth >= sh->ndim) {
        wl_raise(L, "wick.tensor: ragged nested table: expected a number at %s, found a table of %lld elements",
                 pathlen ? path : "the top", (long long)n);
    } else if (sh->sizes[depth] != n) {
        wl_raise(L, "wick.tensor: ragged nested table: expected %lld elements at %s, found %lld",
                 depth < sh->ndim ? (long long)sh->sizes[depth] : 0LL, pathlen ? path : "the top", (long long)n);
    }
    for (int64_t i = 1; i <= n; i++) {
        lua_rawgeti(L, idx, (int)i);
        size_t len = pathlen + (size_t)snprintf(path + pathlen, 256 - pathlen > 0 ? 256 - pathlen : 0, "[%lld]", (long long)i);
        if (len > 250) len = 250;
        nested_walk(L, lua_gettop(L), depth + 1, sh, values, count, path, len);
        path[pathlen] = '\0';
        lua_pop(L, 1);
    }
}

static int m_tensor(lua_State *L) {
    wick_options opt = wick_default_options();
    int rg = wl_options(L, lua_istable(L, 2) ? 2 : 0, &opt, "wick.tensor");
    int explicit_dtype = 0;
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "dtype");
        explicit_dtype = !lua_isnil(L, -1);
        lua_pop(L, 1);
    }
    wick_tensor *src = wl_totensor(L, 1);
    if (src) { /* wick.tensor(t) copies, like torch.tensor(t) */
        if (!explicit_dtype) opt.dtype = wick_tensor_dtype(src);
        wick_tensor **slot = wl_new_slot(L);
        wick_tensor *tmp;
        wl_check(L, wick_clone(&tmp, src));
        wick_status st = wick_to(slot, tmp, opt);
        wick_tensor_release(tmp);
        wl_check(L, st);
        wl_set_requires_grad(L, *slot, rg);
        return 1;
    }
    nested_shape sh = {0, {0}, 1, 0};
    char path[256] = "";
    int64_t count = 0;
    nested_walk(L, 1, 0, &sh, NULL, &count, path, 0);
    /* the values go into a userdata buffer, so nothing leaks if a check raises */
    double *values = lua_newuserdata(L, (size_t)(count ? count : 1) * sizeof(double));
    int64_t filled = 0;
    nested_walk(L, 1, 0, &sh, values, &filled, path, 0);
    if (!explicit_dtype && sh.any_value && sh.all_bool) opt.dtype = WICK_BOOL;
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_from_doubles(slot, sh.ndim, sh.sizes, values, opt));
    wl_set_requires_grad(L, *slot, rg);
    return 1;
}

static int m_arange(lua_State *L) {
    int opts = lua_istable(L, lua_gettop(L)) ? lua_gettop(L) : 0;
    int nargs = opts ? opts - 1 : lua_gettop(L);
    double a[3];
    for (int i = 0; i < nargs && i < 3; i++) {
        if (lua_type(L, i + 1) != LUA_TNUMBER) wl_raise(L, "wick.arange: expected numbers, got %s", luaL_typename(L, i + 1));
        a[i] = lua_tonumber(L, i + 1);
    }
    double start = 0, stop, step = 1;
    if (nargs == 1) stop = a[0];
    else if (nargs == 2) start = a[0], stop = a[1];
    else if (nargs == 3) start = a[0], stop = a[1], step = a[2];
    else return wl_raise(L, "wick.arange: expected ([start, ]stop[, step][, options])");
    wick_options opt = wick_default_options();
    int rg = wl_options(L, opts, &opt, "wick.arange");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_arange(slot, start, stop, step, opt));
    wl_set_requires_grad(L, *slot, rg);
    return 1;
}

static int m_eye(lua_State *L) {
    int64_t n = wl_checkint(L, 1, "wick.eye", "n"), m = lua_type(L, 2) == LUA_TNUMBER ? wl_checkint(L, 2, "wick.eye", "m") : -1;
    wick_options opt = wick_default_options();
    int rg = wl_options(L, wl_trailing_options(L, 2), &opt, "wick.eye");
    if (n < 0) wl_raise(L, "wick.eye: n must be non-negative, got %lld", (long long)n);
    if (lua_type(L, 2) == LUA_TNUMBER && m < 0) wl_raise(L, "wick.eye: m must be non-negative, got %lld", (long long)m);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_eye(slot, n, m, opt));
    wl_set_requires_grad(L, *slot, rg);
    return 1;
}

static int m_manual_seed(lua_State *L) {
    lua_Number n = floor(wl_checknumber(L, 1, "wick.manual_seed", "argument 'seed'")); /* like PyTorch's int(seed) */
    if (!(n >= -9223372036854775808.0 && n < 18446744073709551616.0))
        wl_raise(L, "wick.manual_seed: expected a seed in [-2^63, 2^64), got %.17g", n);
    wick_manual_seed(n < 0 ? (uint64_t)(int64_t)n : (uint64_t)n); /* negative seeds wrap, as in PyTorch */
    return 0;
}

static int m_get_rng_state(lua_State *L) {
    uint8_t state[WICK_RNG_STATE_SIZE];
    double values[WICK_RNG_STATE_SIZE];
    wick_rng_get_state(state);
    for (int i = 0; i < WICK_RNG_STATE_SIZE; i++) values[i] = state[i];
    int64_t n = WICK_RNG_STATE_SIZE;
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_from_doubles(slot, 1, &n, values, (wick_options){WICK_UINT8, {WICK_CPU, -1}}));
    return 1;
}

static int m_set_rng_state(lua_State *L) {
    wick_tensor *t = wl_checktensor(L, 1, "wick.set_rng_state", "state");
    if (wick_tensor_dtype(t) != WICK_UINT8 || wick_tensor_numel(t) != WICK_RNG_STATE_SIZE ||
        wick_tensor_device(t).type != WICK_CPU)
        wl_raise(L, "wick.set_rng_state: expected the uint8 CPU tensor of %d bytes that wick.get_rng_state() returns",
                 WICK_RNG_STATE_SIZE);
    uint8_t state[WICK_RNG_STATE_SIZE];
    for (int i = 0; i < WICK_RNG_STATE_SIZE; i++) state[i] = (uint8_t)wick_get_double(t, i);
    wick_rng_set_state(state);
    return 0;
}

static int m_set_num_threads(lua_State *L) {
    lua_Number n = wl_checknumber(L, 1, "wick.set_num_threads", "argument 'n'");
    if (!(n >= 1 && n <= INT_MAX) || n != floor(n))
        wl_raise(L, "wick.set_num_threads: expected a positive integer, got %g", n);
    wick_set_num_threads((int)n);
    return 0;
}

static int m_get_num_threads(lua_State *L) {
    lua_pushinteger(L, wick_get_num_threads());
    return 1;
}

static int m_parse_device(lua_State *L) {
    wick_device d = wl_device(L, 1, "wick.device");
    char buf[32];
    lua_pushstring(L, d.type == WICK_CPU ? "cpu" : d.type == WICK_CUDA ? "cuda" : "meta");
    if (d.index >= 0) lua_pushinteger(L, d.index);
    else lua_pushnil(L);
    lua_pushstring(L, wick_device_format(d, buf, sizeof buf));
    return 3;
}

static int m_cuda_is_available(lua_State *L) {
    lua_pushboolean(L, wick_cuda_is_available());
    return 1;
}

static int m_cuda_device_count(lua_State *L) {
    lua_pushinteger(L, wick_cuda_device_count());
    return 1;
}

static int m_cuda_current_device(lua_State *L) {
    int index;
    wl_check(L, wick_cuda_current_device(&index));
    lua_pushinteger(L, index);
    return 1;
}

/* A CUDA device ordinal argument (its range is the runtime's to check). */
static int cuda_index(lua_State *L, int idx, const char *fn) {
    int64_t i = wl_checkint(L, idx, fn, "argument 'device'");
    if (i < INT_MIN || i > INT_MAX) wl_raise(L, "%s: invalid device index %lld", fn, (long long)i);
    return (int)i;
}

static int m_cuda_set_device(lua_State *L) {
    wl_check(L, wick_cuda_set_device(cuda_index(L, 1, "wick.cuda.set_device")));
    return 0;
}

static int m_cuda_synchronize(lua_State *L) {
    wl_check(L, wick_cuda_synchronize(lua_isnoneornil(L, 1) ? -1 : cuda_index(L, 1, "wick.cuda.synchronize")));
    return 0;
}

/* core.cuda_memory(index): allocated, peak allocated, reserved (bytes) */
static int m_cuda_memory(lua_State *L) {
    int index = cuda_index(L, 1, "wick.cuda.memory_allocated");
    wl_pushint64(L, wick_cuda_memory_allocated(index));
    wl_pushint64(L, wick_cuda_max_memory_allocated(index));
    wl_pushint64(L, wick_cuda_memory_reserved(index));
    return 3;
}

static int m_cuda_reset_peak_memory_stats(lua_State *L) {
    wick_cuda_reset_peak_memory_stats(cuda_index(L, 1, "wick.cuda.reset_peak_memory_stats"));
    return 0;
}

static int m_cuda_empty_cache(lua_State *L) {
    lua_gc(L, LUA_GCCOLLECT, 0); /* dead tensors first, so their blocks are cached, then freed */
    wick_cuda_empty_cache();
    return 0;
}

/* core.cuda_sync_counts(device): the number of waits for the GPU (device < 0:
 * every GPU) and a table of them by reason (only reasons that occurred) */
static int m_cuda_sync_counts(lua_State *L) {
    int index = cuda_index(L, 1, "wick.cuda.sync_count");
    wl_pushint64(L, wick_cuda_sync_count(index));
    lua_newtable(L);
    for (int r = 0; wick_cuda_sync_reason_name(r); r++) {
        int64_t n = wick_cuda_sync_count_for(index, r);
        if (!n) continue;
        wl_pushint64(L, n);
        lua_setfield(L, -2, wick_cuda_sync_reason_name(r));
    }
    return 2;
}

static int m_cuda_begin_batch(lua_State *L) {
    (void)L;
    wick_cuda_begin_batch();
    return 0;
}

static int m_cuda_end_batch(lua_State *L) {
    wl_check(L, wick_cuda_end_batch());
    return 0;
}

/* core.cuda_allow_tf32([flag]): the setting (after setting it when given) */
static int m_cuda_allow_tf32(lua_State *L) {
    if (!lua_isnoneornil(L, 1)) wick_cuda_set_allow_tf32(lua_toboolean(L, 1));
    lua_pushboolean(L, wick_cuda_allow_tf32());
    return 1;
}

static int m_read_idx(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_read_idx(slot, path));
    return 1;
}

/* core.from_bytes(s, dtype, sizes): a CPU tensor holding a copy of the bytes. */
static int m_from_bytes(lua_State *L) {
    size_t len;
    const char *bytes = luaL_checklstring(L, 1, &len);
    wick_dtype dtype = wl_dtype(L, 2, "from_bytes");
    int64_t sizes[WICK_MAX_DIMS];
    if (!lua_istable(L, 3)) wl_raise(L, "from_bytes: expected a size table");
    int n = wl_sizes(L, 3, 3, sizes, "from_bytes");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_empty(slot, n, sizes, (wick_options){dtype, {WICK_CPU, -1}}));
    size_t want = (size_t)wick_tensor_numel(*slot) * wick_dtype_size(dtype);
    if (want != len) wl_raise(L, "from_bytes: %zu bytes do not make a %s tensor of %lld elements", len,
                              wick_dtype_name(dtype), (long long)wick_tensor_numel(*slot));
    memcpy(wick_tensor_data(*slot), bytes, len);
    return 1;
}

/* wick.clock(): seconds of a monotonic wall clock, for timing. */
static int m_clock(lua_State *L) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* wick.isatty(fd): whether a file descriptor is a terminal (progress bars). */
static int m_isatty(lua_State *L) {
    lua_pushboolean(L, isatty((int)luaL_optnumber(L, 1, 1)));
    return 1;
}

/* core.same_device(a, b): whether two tensors live on one device (no strings made). */
static int m_same_device(lua_State *L) {
    wick_tensor *a = wl_checktensor(L, 1, "same_device", "a"), *b = wl_checktensor(L, 2, "same_device", "b");
    lua_pushboolean(L, wick_device_equal(wick_tensor_device(a), wick_tensor_device(b)));
    return 1;
}

/* core.as_strided(t, sizes, strides, offset): a checked view of t's storage */
static int m_as_strided(lua_State *L) {
    wick_tensor *a = wl_checktensor(L, 1, "as_strided", "input");
    int64_t sizes[WICK_MAX_DIMS], strides[WICK_MAX_DIMS];
    int n = wl_sizes(L, 2, 2, sizes, "as_strided");
    int m = wl_sizes(L, 3, 3, strides, "as_strided");
    if (n != m) wl_raise(L, "as_strided: %d sizes but %d strides", n, m);
    int64_t offset = wl_checkint(L, 4, "as_strided", "the offset");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_as_strided(slot, a, n, sizes, strides, offset));
    return 1;
}

/* core.write_storages(path, head, {tensors}): head, then each tensor's storage */
static int m_write_storages(lua_State *L) {
    size_t len;
    const char *path = luaL_checkstring(L, 1);
    const char *head = luaL_checklstring(L, 2, &len);
    luaL_checktype(L, 3, LUA_TTABLE);
    int n = (int)lua_objlen(L, 3);
    const wick_tensor **ts = lua_newuserdata(L, sizeof(*ts) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 3, i + 1);
        ts[i] = wl_checktensor(L, -1, "write_storages", "tensor");
        lua_pop(L, 1);
    }
    wl_check(L, wick_write_storages_atomic(path, head, len, n, (const wick_tensor *const *)ts));
    return 0;
}

/* core.storage_crc32(t[, "crc32c"]): zlib's CRC-32 (or CRC-32C) of every byte
 * of t's CPU storage */
static int m_storage_crc32(lua_State *L) {
    wick_tensor *a = wl_checktensor(L, 1, "storage_crc32", "tensor");
    if (wick_tensor_device(a).type != WICK_CPU) wl_raise(L, "storage_crc32: the tensor must be on the CPU");
    int castagnoli = lua_isstring(L, 2) && strcmp(lua_tostring(L, 2), "crc32c") == 0;
    size_t es = wick_dtype_size(wick_tensor_dtype(a));
    const unsigned char *p = (const unsigned char *)wick_tensor_data(a) - wick_tensor_offset(a) * (int64_t)es;
    size_t n = (size_t)wick_storage_numel(a) * es;
    wl_pushint64(L, castagnoli ? wick_crc32c(0, p, n) : wick_crc32(0, p, n));
    return 1;
}

/* core.crc32c(s[, "portable"]): CRC-32C of a string, by the table when asked
 * (the test vectors of both paths); second result: whether SSE4.2 is used */
static int m_crc32c(lua_State *L) {
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    int portable = lua_isstring(L, 2) && strcmp(lua_tostring(L, 2), "portable") == 0;
    wl_pushint64(L, wk_crc32c_using(portable ? WK_CRC_PORTABLE : WK_CRC_AUTO, 0, s, n));
    lua_pushboolean(L, !portable && wk_crc32c_has_sse42());
    return 2;
}

static int m_storage_numel(lua_State *L) {
    wl_pushint64(L, wick_storage_numel(wl_checktensor(L, 1, "storage_numel", "tensor")));
    return 1;
}

/* core.map_storages(path, {{offset, dtype, numel}, ...}) -> {tensor, ...} */
static int m_map_storages(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    int n = (int)lua_objlen(L, 2);
    int64_t *offsets = lua_newuserdata(L, sizeof(int64_t) * (size_t)(n ? n : 1));
    int64_t *numels = lua_newuserdata(L, sizeof(int64_t) * (size_t)(n ? n : 1));
    wick_dtype *dtypes = lua_newuserdata(L, sizeof(wick_dtype) * (size_t)(n ? n : 1));
    lua_createtable(L, n, 0); /* the result, slots made before anything can fail */
    int result = lua_gettop(L);
    wick_tensor ***slots = lua_newuserdata(L, sizeof(wick_tensor **) * (size_t)(n ? n : 1));
    wick_tensor **outs = lua_newuserdata(L, sizeof(wick_tensor *) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 2, i + 1);
        int e = lua_gettop(L);
        lua_rawgeti(L, e, 1);
        offsets[i] = wl_checkint(L, -1, "map_storages", "an offset");
        lua_rawgeti(L, e, 2);
        dtypes[i] = wl_dtype(L, lua_gettop(L), "map_storages");
        lua_rawgeti(L, e, 3);
        numels[i] = wl_checkint(L, -1, "map_storages", "a size");
        lua_settop(L, e - 1);
        slots[i] = wl_new_slot(L);
        lua_rawseti(L, result, i + 1);
    }
    wl_check(L, wick_map_storages(path, n, offsets, dtypes, numels, outs));
    for (int i = 0; i < n; i++) *slots[i] = outs[i];
    lua_pushvalue(L, result);
    return 1;
}

/* core.read_storage(path, offset, dtype, numel) */
static int m_read_storage(lua_State *L) {
    const char *path = luaL_checkstring(L, 1);
    int64_t offset = wl_checkint(L, 2, "read_storage", "the offset"), numel = wl_checkint(L, 4, "read_storage", "the size");
    wick_dtype dtype = wl_dtype(L, 3, "read_storage");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_read_storage(slot, path, offset, dtype, numel));
    wl_account(L);
    return 1;
}

static int m_cpu_bytes_in_use(lua_State *L) {
    wl_pushint64(L, wick_cpu_bytes_in_use());
    return 1;
}

/* ---- elementwise ---- */

static int t_unary(lua_State *L) {
    wick_unary_op op = (wick_unary_op)UPINT(1);
    int inplace = UPINT(2);
    wick_tensor *a = SELF(wick_unary_name(op));
    if (inplace) {
        wl_check(L, wick_unary_(op, a));
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_unary(slot, op, a));
    wl_account(L);
    return 1;
}

/* a op b where either may be a number; `first` is which came first in Lua */
static int binary_values(lua_State *L, wick_binary_op op, int ia, int ib, double alpha) {
    const char *fn = wick_binary_name(op);
    wick_tensor *a = wl_totensor(L, ia), *b = wl_totensor(L, ib);
    wick_scalar s;
    wick_tensor **slot = wl_new_slot(L);
    if (a && b) {
        wl_check(L, alpha == 1 ? wick_binary(slot, op, a, b) : wick_add_scaled(slot, a, b, op == WICK_SUB ? -alpha : alpha));
    } else if (a && wl_toscalar(L, ib, &s)) {
        /* an integer only while alpha * other is one that fits an int64 (as wl_toscalar decides) */
        if (alpha != 1)
            s.value *= alpha, s.is_integer = s.is_integer && alpha == floor(alpha) && fabs(s.value) < 9223372036854775808.0;
        wl_check(L, wick_binary_scalar(slot, op, a, s, 0));
    } else if (b && wl_toscalar(L, ia, &s)) {
        wl_check(L, wick_binary_scalar(slot, op, b, s, 1));
    } else {
        wl_raise(L, "%s: expected tensors or numbers, got %s and %s", fn, luaL_typename(L, ia), luaL_typename(L, ib));
    }
    wl_account(L);
    return 1;
}

static double alpha_arg(lua_State *L, int idx, wick_binary_op op) {
    if (lua_isnoneornil(L, idx)) return 1;
    if (op != WICK_ADD && op != WICK_SUB) wl_raise(L, "%s: takes no third argument", wick_binary_name(op));
    if (lua_type(L, idx) == LUA_TNUMBER) return lua_tonumber(L, idx);
    if (lua_istable(L, idx)) {
        lua_getfield(L, idx, "alpha");
        double a = lua_isnil(L, -1) ? 1 : wl_checknumber(L, -1, wick_binary_name(op), "option 'alpha'");
        lua_pop(L, 1);
        return a;
    }
    return wl_raise(L, "%s: expected alpha as a number or {alpha = ...}, got %s", wick_binary_name(op), luaL_typename(L, idx));
}

/* t:add(other[, alpha]), t:eq(other), ... (upvalue: op) */
static int t_binary(lua_State *L) {
    wick_binary_op op = (wick_binary_op)UPINT(1);
    SELF(wick_binary_name(op));
    double alpha = alpha_arg(L, 3, op);
    lua_settop(L, 2);
    return binary_values(L, op, 1, 2, alpha);
}

/* t:add_(other[, alpha]) */
static int t_binary_(lua_State *L) {
    wick_binary_op op = (wick_binary_op)UPINT(1);
    wick_tensor *a = SELF(wick_binary_name(op));
    double alpha = alpha_arg(L, 3, op);
    wick_tensor *b = wl_totensor(L, 2);
    wick_scalar s;
    if (b) {
        wl_check(L, alpha == 1 ? wick_binary_(op, a, b) : wick_add_scaled_(a, b, op == WICK_SUB ? -alpha : alpha));
    } else if (wl_toscalar(L, 2, &s)) {
        s.value *= alpha;
        wl_check(L, wick_binary_scalar_(op, a, s));
    } else {
        wl_raise(L, "%s_: expected a tensor or a number, got %s", wick_binary_name(op), luaL_typename(L, 2));
    }
    lua_settop(L, 1);
    return 1;
}

/* metamethods __add, __sub, ...: operands in Lua's order */
static int t_arith(lua_State *L) {
    lua_settop(L, 2);
    return binary_values(L, (wick_binary_op)UPINT(1), 1, 2, 1);
}

static int t_unm(lua_State *L) {
    wick_tensor *a = SELF("neg");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_unary(slot, WICK_NEG, a));
    return 1;
}

/* clamp(min, max) with nil for an open side, or clamp{min = , max = } */
static void clamp_bounds(lua_State *L, double *lo, double *hi) {
    *lo = -INFINITY, *hi = INFINITY;
    if (lua_istable(L, 2)) {
        lua_settop(L, 3); /* slot 3 must exist: the replaces below move max into 3, then min into 2 */
        lua_getfield(L, 2, "min");
        lua_getfield(L, 2, "max");
        lua_replace(L, 3);
        lua_replace(L, 2);
    }
    if (!lua_isnoneornil(L, 2)) *lo = wl_checknumber(L, 2, "clamp", "argument 'min'");
    if (!lua_isnoneornil(L, 3)) *hi = wl_checknumber(L, 3, "clamp", "argument 'max'");
    if (lua_isnoneornil(L, 2) && lua_isnoneornil(L, 3)) wl_raise(L, "clamp: at least one of min and max must be given");
}

static int t_clamp(lua_State *L) {
    wick_tensor *a = SELF("clamp");
    double lo, hi;
    clamp_bounds(L, &lo, &hi);
    if (UPINT(1)) {
        wl_check(L, wick_clamp_(a, lo, hi));
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_clamp(slot, a, lo, hi));
    return 1;
}

/* A tensor or number operand of where(); numbers become 0-dim CPU tensors. */
static wick_tensor *where_operand(lua_State *L, int idx, const char *arg) {
    wick_tensor *t = wl_totensor(L, idx);
    if (t) return t;
    wick_scalar s;
    if (!wl_toscalar(L, idx, &s)) wl_raise(L, "where: expected a tensor or a number for %s, got %s", arg, luaL_typename(L, idx));
    wick_tensor **slot = wl_new_slot(L);
    lua_replace(L, idx);
    wl_check(L, wick_full(slot, 0, NULL, s.value,
                          (wick_options){s.is_integer ? WICK_INT64 : WICK_FLOAT32, {WICK_CPU, -1}}));
    return *slot;
}

/* wick.where(cond, a, b) */
static int m_where(lua_State *L) {
    lua_settop(L, 3);
    wick_tensor *c = wl_checktensor(L, 1, "where", "condition");
    wick_tensor *a = where_operand(L, 2, "input"), *b = where_operand(L, 3, "other");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_where(slot, c, a, b));
    return 1;
}

/* ---- reductions ---- */

/* (dim?, keepdim? | {keepdim =, correction =, unbiased =}) */
static void reduce_args(lua_State *L, int first, int *dim, int *keepdim, int *correction, const char *fn) {
    *dim = -1, *keepdim = 0, *correction = 1;
    int i = first;
    if (lua_type(L, i) == LUA_TNUMBER) *dim = wl_dim(L, i++, fn);
    else if (lua_isnil(L, i) && lua_gettop(L) > i) i++;
    if (lua_type(L, i) == LUA_TBOOLEAN) *keepdim = lua_toboolean(L, i++);
    if (lua_istable(L, i)) {
        lua_getfield(L, i, "keepdim");
        if (!lua_isnil(L, -1)) *keepdim = lua_toboolean(L, -1);
        lua_getfield(L, i, "unbiased");
        if (!lua_isnil(L, -1)) *correction = lua_toboolean(L, -1) ? 1 : 0;
        lua_getfield(L, i, "correction");
        if (!lua_isnil(L, -1)) {
            int64_t c = wl_checkint(L, lua_gettop(L), fn, "correction");
            if (c < INT_MIN || c > INT_MAX) wl_raise(L, "%s: correction %lld is out of range", fn, (long long)c);
            *correction = (int)c;
        }
        lua_getfield(L, i, "dim");
        if (!lua_isnil(L, -1)) *dim = wl_dim(L, lua_gettop(L), fn);
        lua_pop(L, 4);
        i++;
    }
    if (!lua_isnoneornil(L, i))
        wl_raise(L, "%s: expected a dimension (a number), keepdim (a boolean) or an options table, got %s", fn,
                 luaL_typename(L, i));
}

/* Adds 1 in place to an index tensor the core produced (0-based to 1-based). */
static void to_one_based(lua_State *L, wick_tensor *t) {
    if (wick_tensor_device(t).type == WICK_META) return;
    wl_check(L, wick_binary_scalar_(WICK_ADD, t, (wick_scalar){1, 1}));
}

/* `dim` in the core's convention: -1 for all elements, else 0-based. */
static int reduce_into(lua_State *L, wick_reduce_op op, wick_tensor *a, int dim, int keepdim, int correction,
                       int with_indices) {
    wick_tensor **values = wl_new_slot(L);
    wick_tensor **indices = with_indices ? wl_new_slot(L) : NULL;
    wl_check(L, wick_reduce(values, indices, op, a, dim, keepdim, correction));
    if (op == WICK_ARGMAX || op == WICK_ARGMIN) to_one_based(L, *values);
    if (indices && *indices) to_one_based(L, *indices);
    return with_indices ? 2 : 1;
}

/* Lua dims arrive 0-based or negative; the core wants 0-based, -1 meaning all. */
static int core_dim(lua_State *L, wick_tensor *a, int dim, const char *fn) {
    if (dim >= 0) return dim;
    int n = wick_tensor_ndim(a) ? wick_tensor_ndim(a) : 1;
    if (dim < -n) wl_raise(L, "%s: dimension %d out of range (expected 1 to %d, or -%d to -1)", fn, dim, n, n);
    return dim + n;
}

static int t_reduce(lua_State *L) {
    wick_reduce_op op = (wick_reduce_op)UPINT(1);
    const char *fn = wick_reduce_name(op);
    wick_tensor *a = SELF(fn);
    int dim, keepdim, correction;
    int has_dim = lua_type(L, 2) == LUA_TNUMBER;
    reduce_args(L, 2, &dim, &keepdim, &correction, fn);
    if (lua_istable(L, 2)) {
        lua_getfield(L, 2, "dim");
        has_dim = !lua_isnil(L, -1);
        lua_pop(L, 1);
    }
    return reduce_into(L, op, a, has_dim ? core_dim(L, a, dim, fn) : -1, keepdim, correction, 0);
}

/* t:max() (all), t:max(dim[, keepdim]) -> values, indices; t:max(other) -> maximum */
static int t_max_min(lua_State *L) {
    int is_max = UPINT(1);
    const char *fn = is_max ? "max" : "min";
    wick_tensor *a = SELF(fn);
    if (wl_totensor(L, 2)) {
        lua_settop(L, 2);
        return binary_values(L, is_max ? WICK_MAXIMUM : WICK_MINIMUM, 1, 2, 1);
    }
    int dim, keepdim, correction;
    int has_dim = lua_type(L, 2) == LUA_TNUMBER;
    reduce_args(L, 2, &dim, &keepdim, &correction, fn);
    if (lua_istable(L, 2)) { /* t:max{dim = 2, keepdim = true}, as t_reduce takes it */
        lua_getfield(L, 2, "dim");
        has_dim = !lua_isnil(L, -1);
        lua_pop(L, 1);
    }
    return reduce_into(L, is_max ? WICK_MAX : WICK_MIN, a, has_dim ? core_dim(L, a, dim, fn) : -1, keepdim, 1, has_dim);
}

/* ---- linear algebra ---- */

static int t_mm(lua_State *L) {
    wick_tensor *a = SELF("mm"), *b = wl_checktensor(L, 2, "mm", "mat2");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_mm(slot, a, b));
    wl_account(L);
    return 1;
}

/* core.linear(x, weight[, bias]) for 2-D x */
static int m_linear(lua_State *L) {
    wick_tensor *x = wl_checktensor(L, 1, "linear", "input"), *w = wl_checktensor(L, 2, "linear", "weight");
    wick_tensor *b = lua_isnoneornil(L, 3) ? NULL : wl_checktensor(L, 3, "linear", "bias");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_linear(slot, x, w, b));
    wl_account(L);
    return 1;
}

/* core.mse_loss(input, target, reduction) with reduction "mean", "sum" or "none" */
static int m_mse_loss(lua_State *L) {
    wick_tensor *x = wl_checktensor(L, 1, "mse_loss", "input"), *y = wl_checktensor(L, 2, "mse_loss", "target");
    const char *r = lua_isnoneornil(L, 3) ? "mean" : wl_checkstring(L, 3, "mse_loss", "argument 'reduction'");
    int reduction = strcmp(r, "none") == 0 ? 0 : strcmp(r, "mean") == 0 ? 1 : strcmp(r, "sum") == 0 ? 2 : -1;
    if (reduction < 0) wl_raise(L, "mse_loss: invalid reduction '%s' (expected 'mean', 'sum' or 'none')", r);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_mse_loss(slot, x, y, reduction));
    return 1;
}

static int t_bmm(lua_State *L) {
    wick_tensor *a = SELF("bmm"), *b = wl_checktensor(L, 2, "bmm", "mat2");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_bmm(slot, a, b));
    wl_account(L);
    return 1;
}

static int t_matmul(lua_State *L) {
    wick_tensor *a = SELF("matmul"), *b = wl_checktensor(L, 2, "matmul", "other");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_matmul(slot, a, b));
    wl_account(L);
    return 1;
}

/* t:addmm(mat1, mat2[, {beta =, alpha =}]) */
static int t_addmm(lua_State *L) {
    wick_tensor *in = SELF("addmm"), *m1 = wl_checktensor(L, 2, "addmm", "mat1"), *m2 = wl_checktensor(L, 3, "addmm", "mat2");
    double beta = 1, alpha = 1;
    if (lua_istable(L, 4)) {
        lua_getfield(L, 4, "beta");
        if (!lua_isnil(L, -1)) beta = wl_checknumber(L, -1, "addmm", "option 'beta'");
        lua_getfield(L, 4, "alpha");
        if (!lua_isnil(L, -1)) alpha = wl_checknumber(L, -1, "addmm", "option 'alpha'");
        lua_pop(L, 2);
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_addmm(slot, in, m1, m2, beta, alpha));
    return 1;
}

/* ---- views ---- */

static int t_view_like(lua_State *L) {
    int reshape = UPINT(1);
    const char *fn = reshape ? "reshape" : "view";
    wick_tensor *a = SELF(fn);
    int64_t sizes[WICK_MAX_DIMS];
    int n = wl_sizes(L, 2, lua_gettop(L), sizes, fn);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, reshape ? wick_reshape(slot, a, n, sizes) : wick_view(slot, a, n, sizes));
    return 1;
}

static int t_transpose(lua_State *L) {
    wick_tensor *a = SELF("transpose");
    int d0 = wl_dim(L, 2, "transpose"), d1 = wl_dim(L, 3, "transpose");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_transpose(slot, a, d0, d1));
    return 1;
}

static int t_t(lua_State *L) {
    wick_tensor *a = SELF("t");
    if (wick_tensor_ndim(a) > 2) wl_raise(L, "t: expects a tensor with at most 2 dimensions, but self is %d-D", wick_tensor_ndim(a));
    wick_tensor **slot = wl_new_slot(L);
    if (wick_tensor_ndim(a) < 2) wl_check(L, wick_view(slot, a, wick_tensor_ndim(a), wick_tensor_sizes(a)));
    else wl_check(L, wick_transpose(slot, a, 0, 1));
    return 1;
}

static int t_permute(lua_State *L) {
    wick_tensor *a = SELF("permute");
    int64_t raw[WICK_MAX_DIMS];
    int n = 0;
    if (lua_istable(L, 2)) {
        n = (int)lua_objlen(L, 2);
        if (n > WICK_MAX_DIMS) wl_raise(L, "permute: too many dims");
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, 2, i + 1);
            raw[i] = wl_dim(L, lua_gettop(L), "permute");
            lua_pop(L, 1);
        }
    } else {
        for (int i = 2; i <= lua_gettop(L) && n < WICK_MAX_DIMS; i++) raw[n++] = wl_dim(L, i, "permute");
    }
    int dims[WICK_MAX_DIMS];
    for (int i = 0; i < n; i++) dims[i] = (int)raw[i];
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_permute(slot, a, n, dims));
    return 1;
}

/* A 1-based Lua index along a dim of `size` as a 0-based one (negative from the end). */
static int64_t lua_index(lua_State *L, int idx, int64_t size, const char *fn, int dim) {
    lua_Number v = wl_checknumber(L, idx, fn, "an index");
    if (v != floor(v)) wl_raise(L, "%s: expected an integer index, got %g", fn, v);
    if (v == 0) wl_raise(L, "%s: index 0 is invalid: indices count from 1 (and from -1 backwards)", fn);
    if (v > size || v < -size)
        wl_raise(L, "%s: index %.0f is out of bounds for dimension %d with size %lld", fn, v, dim + 1, (long long)size);
    return v > 0 ? (int64_t)v - 1 : (int64_t)v + size;
}

static int64_t dim_size(lua_State *L, wick_tensor *a, int dim, const char *fn) {
    int n = wick_tensor_ndim(a);
    if (n == 0) wl_raise(L, "%s: cannot index a 0-dim tensor", fn);
    int d = dim < 0 ? dim + n : dim;
    if (d < 0 || d >= n) wl_raise(L, "%s: dimension %d out of range (expected 1 to %d, or -%d to -1)", fn, dim < 0 ? dim : dim + 1, n, n);
    return wick_tensor_sizes(a)[d];
}

static int t_narrow(lua_State *L) {
    wick_tensor *a = SELF("narrow");
    int dim = wl_dim(L, 2, "narrow");
    int64_t size = dim_size(L, a, dim, "narrow");
    int64_t len = wl_checkint(L, 4, "narrow", "the length");
    /* like PyTorch, an empty slice may start just past the end */
    int64_t start = len == 0 && lua_type(L, 3) == LUA_TNUMBER && lua_tonumber(L, 3) == (lua_Number)size + 1
                        ? size
                        : lua_index(L, 3, size, "narrow", dim < 0 ? dim + wick_tensor_ndim(a) : dim);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_narrow(slot, a, dim, start, len));
    return 1;
}

static int t_select(lua_State *L) {
    wick_tensor *a = SELF("select");
    int dim = wl_dim(L, 2, "select");
    int64_t size = dim_size(L, a, dim, "select");
    int64_t index = lua_index(L, 3, size, "select", dim < 0 ? dim + wick_tensor_ndim(a) : dim);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_select(slot, a, dim, index));
    return 1;
}

/* t[i]: a view of the i-th slice along dim 1 */
static int t_get(lua_State *L) {
    wick_tensor *a = SELF("index");
    int64_t size = dim_size(L, a, 0, "index");
    int64_t index = lua_index(L, 2, size, "index", 0);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_select(slot, a, 0, index));
    return 1;
}

/* t[i] = v: fills the slice with a number or copies a tensor into it */
static int t_set(lua_State *L) {
    wick_tensor *a = SELF("index");
    int64_t size = dim_size(L, a, 0, "index");
    int64_t index = lua_index(L, 2, size, "index", 0);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_select(slot, a, 0, index));
    wick_tensor *src = wl_totensor(L, 3);
    wick_scalar s;
    if (src) wl_check(L, wick_copy_(*slot, src));
    else if (wl_toscalar(L, 3, &s)) wl_check(L, wick_fill_(*slot, s.value));
    else wl_raise(L, "index assignment: expected a number or a tensor, got %s", luaL_typename(L, 3));
    return 0;
}

static int t_squeeze(lua_State *L) {
    wick_tensor *a = SELF("squeeze");
    int dim = lua_isnoneornil(L, 2) ? -1 : wl_dim(L, 2, "squeeze");
    if (!lua_isnoneornil(L, 2) && dim < 0) dim += wick_tensor_ndim(a) ? wick_tensor_ndim(a) : 1;
    if (!lua_isnoneornil(L, 2) && dim < 0) wl_raise(L, "squeeze: dimension out of range");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_squeeze(slot, a, dim));
    return 1;
}

static int t_unsqueeze(lua_State *L) {
    wick_tensor *a = SELF("unsqueeze");
    int dim = wl_dim(L, 2, "unsqueeze");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_unsqueeze(slot, a, dim));
    return 1;
}

static int t_expand(lua_State *L) {
    wick_tensor *a = SELF("expand");
    int64_t sizes[WICK_MAX_DIMS];
    int n;
    wick_tensor *other = wl_totensor(L, 2);
    if (other) {
        n = wick_tensor_ndim(other);
        memcpy(sizes, wick_tensor_sizes(other), sizeof(int64_t) * n);
    } else {
        n = wl_sizes(L, 2, lua_gettop(L), sizes, "expand");
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_expand(slot, a, n, sizes));
    return 1;
}

static int t_flatten(lua_State *L) {
    wick_tensor *a = SELF("flatten");
    int start = lua_isnoneornil(L, 2) ? 0 : wl_dim(L, 2, "flatten");
    int end = lua_isnoneornil(L, 3) ? -1 : wl_dim(L, 3, "flatten");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_flatten(slot, a, start, end));
    return 1;
}

static int t_contiguous(lua_State *L) {
    wick_tensor *a = SELF("contiguous");
    if (wick_tensor_is_contiguous(a)) {
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_clone(slot, a));
    return 1;
}

/* ---- indexing ---- */

/* A Lua (1-based) index tensor as a new 0-based one, kept alive on the stack. */
static wick_tensor *zero_based_index(lua_State *L, int idx, const char *fn) {
    wick_tensor *index = wl_checktensor(L, idx, fn, "index");
    if (wick_tensor_dtype(index) != WICK_INT64 && wick_tensor_dtype(index) != WICK_INT32)
        wl_raise(L, "%s: expected the index to be an int64 tensor, but got %s", fn, wick_dtype_name(wick_tensor_dtype(index)));
    wick_tensor **slot = wl_new_slot(L);
    lua_replace(L, idx);
    wl_check(L, wick_binary_scalar(slot, WICK_SUB, index, (wick_scalar){1, 1}, 0));
    return *slot;
}

static int t_index_select(lua_State *L) {
    wick_tensor *a = SELF("index_select");
    int dim = wl_dim(L, 2, "index_select");
    wick_tensor *index = zero_based_index(L, 3, "index_select");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_index_select(slot, a, dim, index));
    return 1;
}

static int t_gather(lua_State *L) {
    wick_tensor *a = SELF("gather");
    int dim = wl_dim(L, 2, "gather");
    wick_tensor *index = zero_based_index(L, 3, "gather");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_gather(slot, a, dim, index));
    return 1;
}

/* t:scatter(dim, index, src) and t:scatter_(...); src may be a number */
static int t_scatter(lua_State *L) {
    int inplace = UPINT(1);
    const char *fn = inplace ? "scatter_" : "scatter";
    wick_tensor *a = SELF(fn);
    int dim = wl_dim(L, 2, fn);
    wick_tensor *index = zero_based_index(L, 3, fn);
    wick_tensor *src = wl_totensor(L, 4);
    wick_scalar s;
    if (!src) {
        if (!wl_toscalar(L, 4, &s)) wl_raise(L, "%s: expected src to be a tensor or a number, got %s", fn, luaL_typename(L, 4));
        wick_tensor **tmp = wl_new_slot(L);
        lua_replace(L, 4);
        wl_check(L, wick_full(tmp, wick_tensor_ndim(index), wick_tensor_sizes(index), s.value,
                              (wick_options){wick_tensor_dtype(a), wick_tensor_device(a)}));
        src = *tmp;
    }
    if (inplace) {
        wl_check(L, wick_scatter_(a, dim, index, src));
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_scatter(slot, a, dim, index, src));
    return 1;
}

/* wick.cat(tensors[, dim]) and wick.stack(tensors[, dim]); upvalue: 1 for stack */
static int m_join(lua_State *L) {
    int stack = UPINT(1);
    const char *fn = stack ? "wick.stack" : "wick.cat";
    if (!lua_istable(L, 1) || wl_totensor(L, 1)) wl_raise(L, "%s: expected a table of tensors, got %s", fn, luaL_typename(L, 1));
    int dim = lua_isnoneornil(L, 2) ? 0 : wl_dim(L, 2, fn);
    int n = (int)lua_objlen(L, 1);
    if (n == 0) wl_raise(L, "%s: expected a non-empty table of tensors", fn);
    const wick_tensor **ts = lua_newuserdata(L, sizeof(*ts) * (size_t)n);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        ts[i] = wl_totensor(L, -1);
        if (!ts[i]) wl_raise(L, "%s: expected a tensor at position %d, got %s", fn, i + 1, luaL_typename(L, -1));
        lua_pop(L, 1); /* the table keeps it alive */
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, stack ? wick_stack(slot, n, (const wick_tensor *const *)ts, dim)
                      : wick_cat(slot, n, (const wick_tensor *const *)ts, dim));
    wl_account(L);
    return 1;
}

static int t_softmax(lua_State *L) {
    int log = UPINT(1);
    const char *fn = log ? "log_softmax" : "softmax";
    wick_tensor *a = SELF(fn);
    int dim = wl_dim(L, 2, fn);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, log ? wick_log_softmax(slot, a, dim) : wick_softmax(slot, a, dim));
    return 1;
}

/* ---- copying, values ---- */

static int t_copy_(lua_State *L) {
    wick_tensor *a = SELF("copy_"), *src = wl_checktensor(L, 2, "copy_", "src");
    wl_check(L, wick_copy_(a, src));
    lua_settop(L, 1);
    return 1;
}

static int t_fill_(lua_State *L) {
    wick_tensor *a = SELF("fill_");
    wick_scalar s;
    if (!wl_toscalar(L, 2, &s)) wl_raise(L, "fill_: expected a number, got %s", luaL_typename(L, 2));
    wl_check(L, wick_fill_(a, s.value));
    lua_settop(L, 1);
    return 1;
}

static int t_clone(lua_State *L) {
    wick_tensor *a = SELF("clone");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_clone(slot, a));
    wl_account(L);
    return 1;
}

static void push_value(lua_State *L, const wick_tensor *t, const char *p) {
    wick_dtype d = wick_tensor_dtype(t);
    if (d == WICK_BOOL) lua_pushboolean(L, *(const uint8_t *)p != 0);
    else if (d == WICK_INT64) {
        int64_t v = *(const int64_t *)p;
        if (v > 9007199254740992LL || v < -9007199254740992LL)
            wl_raise(L, "int64 value %lld cannot be represented exactly as a Lua number (beyond 2^53)", (long long)v);
        wl_pushint64(L, v);
    } else if (d == WICK_INT32 || d == WICK_UINT8) {
        wl_pushint64(L, (int64_t)wick_value_as_double(p, d));
    } else {
        double v = wick_value_as_double(p, d);
        lua_pushnumber(L, v);
    }
}

/* `a` itself when on the CPU, else a CPU copy held on the Lua stack (so an
 * error raised while reading it leaks nothing). */
static wick_tensor *on_host(lua_State *L, wick_tensor *a) {
    if (wick_tensor_device(a).type == WICK_CPU) return a;
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_to(slot, a, (wick_options){wick_tensor_dtype(a), wick_cpu(), 0}));
    return *slot;
}

static int t_item(lua_State *L) {
    wick_tensor *a = SELF("item");
    double v;
    wl_check(L, wick_item_double(a, &v)); /* runs the checks: one element, readable device */
    a = on_host(L, a);
    push_value(L, a, (const char *)wick_tensor_data(a));
    return 1;
}

/* t:_int64_str(): the value of a one-element tensor as an exact decimal string
 * (printing uses it for int64, whose values beyond 2^53 item() refuses). */
static int t_int64_str(lua_State *L) {
    wick_tensor *a = SELF("item");
    int64_t v;
    wl_check(L, wick_item_int64(a, &v));
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    lua_pushstring(L, buf);
    return 1;
}

static void totable_rec(lua_State *L, const wick_tensor *t, int dim, const char *p) {
    size_t es = wick_dtype_size(wick_tensor_dtype(t));
    if (dim == wick_tensor_ndim(t)) {
        push_value(L, t, p);
        return;
    }
    int64_t n = wick_tensor_sizes(t)[dim], s = wick_tensor_strides(t)[dim];
    lua_createtable(L, (int)n, 0);
    for (int64_t i = 0; i < n; i++) {
        totable_rec(L, t, dim + 1, p + i * s * (int64_t)es);
        lua_rawseti(L, -2, (int)i + 1);
    }
}

static int t_totable(lua_State *L) {
    wick_tensor *a = SELF("totable");
    if (wick_tensor_device(a).type == WICK_META) wl_raise(L, "totable: a meta tensor has no data to read");
    /* every level's entries (a stride-0 or empty view can name far more than exist)
     * must fit a Lua array: refuse before building any */
    int64_t entries = 1, total = 0;
    for (int d = 0; d < wick_tensor_ndim(a) && entries; d++)
        if (__builtin_mul_overflow(entries, wick_tensor_sizes(a)[d], &entries) || (total += entries) > INT_MAX)
            wl_raise(L, "totable: the tensor would make more than 2^31 Lua values (size %lld along dimension %d)",
                     (long long)wick_tensor_sizes(a)[d], d + 1);
    a = on_host(L, a);
    totable_rec(L, a, 0, (const char *)wick_tensor_data(a));
    return 1;
}

static int t_pin_memory(lua_State *L) {
    wick_tensor *a = SELF("pin_memory");
    if (wick_tensor_is_pinned(a)) {
        lua_settop(L, 1);
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_pin_memory(slot, a));
    return 1;
}

static int t_is_pinned(lua_State *L) {
    lua_pushboolean(L, wick_tensor_is_pinned(SELF("is_pinned")));
    return 1;
}

/* t:to(device | dtype | {device =, dtype =, non_blocking =} | other tensor) */
static int t_to(lua_State *L) {
    wick_tensor *a = SELF("to");
    wick_options opt = {wick_tensor_dtype(a), wick_tensor_device(a)};
    for (int i = 2; i <= lua_gettop(L); i++) {
        wick_tensor *other = wl_totensor(L, i);
        wick_dtype d;
        if (other) opt = (wick_options){wick_tensor_dtype(other), wick_tensor_device(other)};
        else if (lua_type(L, i) == LUA_TSTRING && wick_dtype_parse(lua_tostring(L, i), &d) == WICK_OK) opt.dtype = d;
        else if (lua_type(L, i) == LUA_TSTRING) opt.device = wl_device(L, i, "to");
        else if (lua_istable(L, i)) {
            lua_getfield(L, i, "type");
            int is_device = !lua_isnil(L, -1);
            lua_pop(L, 1);
            if (is_device) {
                opt.device = wl_device(L, i, "to");
            } else {
                if (wl_options(L, i, &opt, "to") != -1) wl_raise(L, "to: requires_grad is not an option of to()");
            }
        } else if (!lua_isnil(L, i)) {
            wl_raise(L, "to: expected a device, a dtype, an options table or a tensor, got %s", luaL_typename(L, i));
        }
    }
    int current; /* "cuda" is the current device: t:cuda() on a tensor already there is t itself */
    if (opt.device.type == WICK_CUDA && opt.device.index < 0 && wick_cuda_current_device(&current) == WICK_OK)
        opt.device.index = current;
    if (opt.dtype == wick_tensor_dtype(a) && wick_device_equal(opt.device, wick_tensor_device(a))) {
        lua_settop(L, 1); /* nothing changes: the same object, like PyTorch */
        return 1;
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_to(slot, a, opt));
    wl_account(L);
    return 1;
}

/* ---- metadata ---- */

static void push_shape(lua_State *L, int n, const int64_t *v) {
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        wl_pushint64(L, v[i]);
        lua_rawseti(L, -2, i + 1);
    }
}

static int t_shape(lua_State *L) {
    wick_tensor *a = SELF("shape");
    push_shape(L, wick_tensor_ndim(a), wick_tensor_sizes(a));
    return 1;
}

static int t_size(lua_State *L) {
    wick_tensor *a = SELF("size");
    if (lua_isnoneornil(L, 2)) {
        push_shape(L, wick_tensor_ndim(a), wick_tensor_sizes(a));
        return 1;
    }
    int dim = wl_dim(L, 2, "size");
    int n = wick_tensor_ndim(a);
    if (dim < 0) dim += n;
    if (dim < 0 || dim >= n) wl_raise(L, "size: dimension %d out of range for a %d-D tensor", (int)lua_tonumber(L, 2), n);
    wl_pushint64(L, wick_tensor_sizes(a)[dim]);
    return 1;
}

static int t_stride(lua_State *L) {
    wick_tensor *a = SELF("stride");
    int n = wick_tensor_ndim(a);
    if (lua_isnoneornil(L, 2)) {
        push_shape(L, n, wick_tensor_strides(a));
        return 1;
    }
    int dim = wl_dim(L, 2, "stride");
    if (dim < 0) dim += n;
    if (dim < 0 || dim >= n) wl_raise(L, "stride: dimension out of range for a %d-D tensor", n);
    wl_pushint64(L, wick_tensor_strides(a)[dim]);
    return 1;
}

static int t_dim(lua_State *L) {
    lua_pushinteger(L, wick_tensor_ndim(SELF("dim")));
    return 1;
}

static int t_numel(lua_State *L) {
    wl_pushint64(L, wick_tensor_numel(SELF("numel")));
    return 1;
}

static int t_len(lua_State *L) {
    wick_tensor *a = SELF("len");
    if (wick_tensor_ndim(a) == 0) wl_raise(L, "len() of a 0-d tensor");
    wl_pushint64(L, wick_tensor_sizes(a)[0]);
    return 1;
}

static int t_is_contiguous(lua_State *L) {
    lua_pushboolean(L, wick_tensor_is_contiguous(SELF("is_contiguous")));
    return 1;
}

static int t_dtype(lua_State *L) {
    lua_pushstring(L, wick_dtype_name(wick_tensor_dtype(SELF("dtype"))));
    return 1;
}

static int t_device(lua_State *L) {
    char buf[32];
    lua_pushstring(L, wick_device_format(wick_tensor_device(SELF("device")), buf, sizeof buf));
    return 1;
}

static int t_storage_offset(lua_State *L) {
    wl_pushint64(L, wick_tensor_offset(SELF("storage_offset")));
    return 1;
}

/* An opaque id of the storage, equal for tensors that share memory. */
static int t_storage_id(lua_State *L) {
    lua_pushlightuserdata(L, (void *)wick_tensor_storage_id(SELF("storage_id")));
    return 1;
}

static int t_gc(lua_State *L) {
    wick_tensor **p = lua_touserdata(L, 1);
    if (p && *p) {
        wick_tensor_release(*p);
        *p = NULL;
    }
    return 0;
}

/* ---- autograd ---- */

static int t_requires_grad(lua_State *L) {
    lua_pushboolean(L, wick_requires_grad(SELF("requires_grad")));
    return 1;
}

/* t.requires_grad = b, and t:requires_grad_([b]) which returns t */
static int t_set_requires_grad(lua_State *L) {
    wick_tensor *a = SELF("requires_grad");
    wl_check(L, wick_set_requires_grad(a, lua_isnone(L, 2) ? 1 : lua_toboolean(L, 2)));
    lua_settop(L, 1);
    return 1;
}

static int t_grad(lua_State *L) {
    wick_tensor *g = wick_grad(SELF("grad"));
    if (!g) return 0;
    wick_tensor_retain(g); /* the slot owns one reference; it never raises after this */
    *wl_new_slot(L) = g;
    return 1;
}

static int t_set_grad(lua_State *L) {
    wick_tensor *a = SELF("grad");
    wick_tensor *g = lua_isnil(L, 2) ? NULL : wl_checktensor(L, 2, "grad", "value");
    wl_check(L, wick_set_grad(a, g));
    return 0;
}

static int t_grad_fn(lua_State *L) {
    const char *name = wick_grad_fn_name(SELF("grad_fn"));
    if (!name) return 0;
    lua_pushstring(L, name);
    return 1;
}

static int t_is_leaf(lua_State *L) {
    lua_pushboolean(L, wick_is_leaf(SELF("is_leaf")));
    return 1;
}

/* t:backward([gradient][, {retain_graph = true}]) */
static int t_backward(lua_State *L) {
    wick_tensor *a = SELF("backward");
    int opts = lua_istable(L, 2) && !wl_totensor(L, 2) ? 2 : lua_istable(L, 3) ? 3 : 0;
    wick_tensor *gradient = opts == 2 ? NULL : wl_totensor(L, 2);
    if (!gradient && !lua_isnoneornil(L, 2) && opts != 2)
        wl_raise(L, "backward: expected a gradient tensor or an options table, got %s", luaL_typename(L, 2));
    int retain = 0;
    if (opts) {
        lua_getfield(L, opts, "retain_graph");
        retain = lua_toboolean(L, -1);
        lua_pop(L, 1);
    }
    wl_check(L, wick_backward(a, gradient, retain));
    return 0;
}

static int t_detach(lua_State *L) {
    wick_tensor *a = SELF("detach");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_detach(slot, a));
    return 1;
}

/* t:_replace(src): t's userdata now holds src's data, keeping its requires_grad
 * (PyTorch's `param.data = src`): a module moved to a device keeps its parameter
 * objects, so optimizers built before the move go on working. */
static int t_replace(lua_State *L) {
    wick_tensor *a = SELF("_replace"), *src = wl_checktensor(L, 2, "_replace", "src");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_detach(slot, src));
    if (wick_requires_grad(a)) wl_check(L, wick_set_requires_grad(*slot, 1));
    wick_tensor **self = lua_touserdata(L, 1);
    wick_tensor *old = *self;
    *self = *slot; /* swap: the temporary userdata now owns the old tensor and frees it */
    *slot = old;
    lua_settop(L, 1);
    return 1;
}

static int m_set_grad_enabled(lua_State *L) {
    wick_set_grad_enabled(lua_toboolean(L, 1));
    return 0;
}

static int m_is_grad_enabled(lua_State *L) {
    lua_pushboolean(L, wick_is_grad_enabled());
    return 1;
}

/* ---- the fast paths, as C function pointers for LuaJIT's FFI ---- */

static int m_fast_pointers(lua_State *L) {
    lua_createtable(L, 0, 3);
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_try_fast_binary_);
    lua_setfield(L, -2, "binary_inplace");
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_try_fast_binary);
    lua_setfield(L, -2, "binary");
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_try_fast_binary_scalar);
    lua_setfield(L, -2, "binary_scalar");
    lua_pushlightuserdata(L, (void *)(intptr_t)&wick_try_fast_mm);
    lua_setfield(L, -2, "mm");
    lua_newtable(L); /* binary op ids by name, so the Lua side never hard-codes the enum */
    for (int op = 0; op < WICK_NUM_BINARY; op++) {
        lua_pushinteger(L, op);
        lua_setfield(L, -2, wick_binary_name((wick_binary_op)op));
    }
    lua_setfield(L, -2, "binary_ops");
    return 1;
}

/* core.fill_slots(t, n): appends n empty tensor userdata to the array t. The
 * FFI fast paths take their result objects from such a pool, so making a tensor
 * costs no call through the classic C API. */
static int m_fill_slots(lua_State *L) {
    luaL_checktype(L, 1, LUA_TTABLE);
    int n = (int)luaL_checknumber(L, 2), len = (int)lua_objlen(L, 1);
    for (int i = 1; i <= n; i++) {
        wl_new_slot(L);
        lua_rawseti(L, 1, len + i);
    }
    wl_account(L); /* the fast paths' tensors count towards collector pacing too */
    return 0;
}

/* ---- registration ---- */

static void set_closure(lua_State *L, const char *name, lua_CFunction f, int up1, int up2) {
    lua_pushinteger(L, up1);
    lua_pushinteger(L, up2);
    lua_pushcclosure(L, f, 2);
    lua_setfield(L, -2, name);
}

static void set_fn(lua_State *L, const char *name, lua_CFunction f) {
    lua_pushcfunction(L, f);
    lua_setfield(L, -2, name);
}

/* ---- neural-network ops ---- */

static int nn_int(lua_State *L, int idx, const char *fn, const char *what) {
    if (lua_type(L, idx) != LUA_TNUMBER)
        wl_raise(L, "%s: %s must be an integer, got %s", fn, what, luaL_typename(L, idx));
    lua_Number v = lua_tonumber(L, idx);
    if (v != floor(v) || v < -2147483647.0 || v > 2147483647.0)
        wl_raise(L, "%s: %s must be an integer, got %.17g", fn, what, (double)v);
    return (int)v;
}

/* A number n (for both dims) or a table {h, w}. */
static void nn_pair(lua_State *L, int idx, const char *fn, const char *what, int *h, int *w) {
    if (idx < 0) idx = lua_gettop(L) + idx + 1;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        *h = *w = nn_int(L, idx, fn, what);
        return;
    }
    if (lua_istable(L, idx) && lua_objlen(L, idx) == 2) {
        lua_rawgeti(L, idx, 1);
        lua_rawgeti(L, idx, 2);
        *h = nn_int(L, -2, fn, what);
        *w = nn_int(L, -1, fn, what);
        lua_pop(L, 2);
        return;
    }
    wl_raise(L, "%s: %s must be a number or a table of two numbers {h, w}, got %s", fn, what,
             lua_istable(L, idx) ? "a table of another length" : luaL_typename(L, idx));
}

/* The options table at idx (0: none): raises on keys outside `allowed` (NULL-terminated). */
static void nn_check_keys(lua_State *L, int idx, const char *fn, const char *const *allowed, const char *list) {
    if (!idx) return;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            wl_raise(L, "%s: unexpected %s key in the options table (expected %s)", fn, luaL_typename(L, -2), list);
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(*a, lua_tostring(L, -2)) == 0;
        if (!ok) wl_raise(L, "%s: unknown option '%s' (expected %s)", fn, lua_tostring(L, -2), list);
        lua_pop(L, 1);
    }
}

/* The field `key` of the options table at idx pushed, or nil when there is none. */
static int nn_field(lua_State *L, int idx, const char *key) {
    if (!idx) {
        lua_pushnil(L);
        return 0;
    }
    lua_getfield(L, idx, key);
    return !lua_isnil(L, -1);
}

static int nn_flag(lua_State *L, int idx, const char *key, const char *fn, int def) {
    int v = def;
    if (nn_field(L, idx, key)) {
        if (!lua_isboolean(L, -1)) wl_raise(L, "%s: %s must be a boolean, got %s", fn, key, luaL_typename(L, -1));
        v = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

/* An options table at `idx` (nil or absent: 0). */
static int nn_options(lua_State *L, int idx, const char *fn) {
    if (lua_isnoneornil(L, idx)) return 0;
    if (!lua_istable(L, idx)) wl_raise(L, "%s: expected an options table, got %s", fn, luaL_typename(L, idx));
    return idx;
}

/* wick._core.conv2d(input, weight, bias_or_nil, {stride =, padding =, dilation =, groups =}) */
static int m_conv2d(lua_State *L) {
    static const char *const keys[] = {"stride", "padding", "dilation", "groups", NULL};
    wick_tensor *input = wl_checktensor(L, 1, "conv2d", "input");
    wick_tensor *weight = wl_checktensor(L, 2, "conv2d", "weight");
    wick_tensor *bias = NULL;
    int opts;
    if (lua_istable(L, 3) && !wl_totensor(L, 3)) { /* conv2d(x, w, {padding = 1}) */
        opts = 3;
    } else {
        if (!lua_isnoneornil(L, 3)) bias = wl_checktensor(L, 3, "conv2d", "bias");
        opts = nn_options(L, 4, "conv2d");
    }
    nn_check_keys(L, opts, "conv2d", keys, "stride, padding, dilation, groups");
    int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
    int same = 0;
    if (nn_field(L, opts, "stride")) nn_pair(L, -1, "conv2d", "stride", &sh, &sw);
    if (nn_field(L, opts, "dilation")) nn_pair(L, -1, "conv2d", "dilation", &dh, &dw);
    if (nn_field(L, opts, "groups")) groups = nn_int(L, -1, "conv2d", "groups");
    if (nn_field(L, opts, "padding")) {
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *mode = lua_tostring(L, -1);
            if (strcmp(mode, "same") == 0) same = 1;
            else if (strcmp(mode, "valid") != 0)
                wl_raise(L, "conv2d: Invalid padding string '%s', should be one of {'valid', 'same'}", mode);
        } else {
            nn_pair(L, -1, "conv2d", "padding", &ph, &pw);
        }
    }
    if (same) { /* stride 1: pad by half the dilated kernel, which must be odd-sized to stay symmetric */
        if (sh != 1 || sw != 1) wl_raise(L, "conv2d: padding='same' is not supported for strided convolutions");
        if (wick_tensor_ndim(weight) == 4) {
            const int64_t *ws = wick_tensor_sizes(weight);
            int64_t th = 0, tw = 0;
            if (__builtin_mul_overflow((int64_t)dh, ws[2] - 1, &th) || __builtin_mul_overflow((int64_t)dw, ws[3] - 1, &tw) ||
                th / 2 > INT_MAX || tw / 2 > INT_MAX)
                wl_raise(L, "conv2d: padding='same' would need a padding larger than %d", INT_MAX);
            if (th % 2 || tw % 2)
                wl_raise(L, "conv2d: padding='same' needs an odd (dilated) kernel size here: asymmetric padding is "
                            "not supported");
            ph = (int)(th / 2), pw = (int)(tw / 2);
        }
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_conv2d(slot, input, weight, bias, sh, sw, ph, pw, dh, dw, groups));
    wl_account(L);
    return 1;
}

/* kernel_size at 2, then {stride =, padding =, ceil_mode =, ...}: stride defaults to the kernel */
static int nn_pool_args(lua_State *L, const char *fn, const char *const *keys, const char *list, int *k) {
    nn_pair(L, 2, fn, "kernel_size", &k[0], &k[1]);
    int opts = nn_options(L, 3, fn);
    nn_check_keys(L, opts, fn, keys, list);
    k[2] = k[0], k[3] = k[1], k[4] = k[5] = 0;
    if (nn_field(L, opts, "stride")) nn_pair(L, -1, fn, "stride", &k[2], &k[3]);
    lua_pop(L, 1);
    if (nn_field(L, opts, "padding")) nn_pair(L, -1, fn, "padding", &k[4], &k[5]);
    lua_pop(L, 1);
    return opts;
}

/* wick._core.max_pool2d(input, kernel_size, {stride =, padding =, dilation = 1, ceil_mode =, return_indices =}) */
static int m_max_pool2d(lua_State *L) {
    static const char *const keys[] = {"stride", "padding", "dilation", "ceil_mode", "return_indices", NULL};
    wick_tensor *input = wl_checktensor(L, 1, "max_pool2d", "input");
    int k[6], dh = 1, dw = 1;
    int opts = nn_pool_args(L, "max_pool2d", keys, "stride, padding, dilation, ceil_mode, return_indices", k);
    if (nn_field(L, opts, "dilation")) nn_pair(L, -1, "max_pool2d", "dilation", &dh, &dw);
    lua_pop(L, 1);
    if (dh != 1 || dw != 1) wl_raise(L, "max_pool2d: dilation other than 1 is not supported");
    int ceil_mode = nn_flag(L, opts, "ceil_mode", "max_pool2d", 0);
    int with_indices = nn_flag(L, opts, "return_indices", "max_pool2d", 0);
    wick_tensor **slot = wl_new_slot(L), **islot = with_indices ? wl_new_slot(L) : NULL;
    wl_check(L, wick_max_pool2d(slot, islot, input, k[0], k[1], k[2], k[3], k[4], k[5], ceil_mode));
    if (islot) to_one_based(L, *islot);
    wl_account(L);
    return with_indices ? 2 : 1;
}

/* wick._core.avg_pool2d(input, kernel_size, {stride =, padding =, ceil_mode =, count_include_pad = true}) */
static int m_avg_pool2d(lua_State *L) {
    static const char *const keys[] = {"stride", "padding", "ceil_mode", "count_include_pad", "divisor_override", NULL};
    wick_tensor *input = wl_checktensor(L, 1, "avg_pool2d", "input");
    int k[6];
    int opts = nn_pool_args(L, "avg_pool2d", keys, "stride, padding, ceil_mode, count_include_pad", k);
    if (nn_field(L, opts, "divisor_override")) wl_raise(L, "avg_pool2d: divisor_override is not supported");
    lua_pop(L, 1);
    int ceil_mode = nn_flag(L, opts, "ceil_mode", "avg_pool2d", 0);
    int include_pad = nn_flag(L, opts, "count_include_pad", "avg_pool2d", 1);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_avg_pool2d(slot, input, k[0], k[1], k[2], k[3], k[4], k[5], ceil_mode, include_pad));
    wl_account(L);
    return 1;
}

static const luaL_Reg module_fns[] = {
    {"full", m_full},
    {"full_like", m_full_like},
    {"tensor", m_tensor},
    {"arange", m_arange},
    {"eye", m_eye},
    {"manual_seed", m_manual_seed},
    {"get_rng_state", m_get_rng_state},
    {"set_rng_state", m_set_rng_state},
    {"set_num_threads", m_set_num_threads},
    {"get_num_threads", m_get_num_threads},
    {"parse_device", m_parse_device},
    {"cuda_is_available", m_cuda_is_available},
    {"cuda_device_count", m_cuda_device_count},
    {"cuda_current_device", m_cuda_current_device},
    {"cuda_set_device", m_cuda_set_device},
    {"cuda_synchronize", m_cuda_synchronize},
    {"cuda_memory", m_cuda_memory},
    {"cuda_reset_peak_memory_stats", m_cuda_reset_peak_memory_stats},
    {"cuda_empty_cache", m_cuda_empty_cache},
    {"cuda_allow_tf32", m_cuda_allow_tf32},
    {"cuda_sync_counts", m_cuda_sync_counts},
    {"cuda_begin_batch", m_cuda_begin_batch},
    {"cuda_end_batch", m_cuda_end_batch},
    {"cpu_bytes_in_use", m_cpu_bytes_in_use},
    {"where", m_where},
    {"fast_pointers", m_fast_pointers},
    {"fill_slots", m_fill_slots},
    {"read_idx", m_read_idx},
    {"from_bytes", m_from_bytes},
    {"clock", m_clock},
    {"same_device", m_same_device},
    {"linear", m_linear},
    {"as_strided", m_as_strided},
    {"write_storages", m_write_storages},
    {"read_storage", m_read_storage},
    {"storage_numel", m_storage_numel},
    {"map_storages", m_map_storages},
    {"storage_crc32", m_storage_crc32},
    {"crc32c", m_crc32c},
    {"tensor_storage_key", t_storage_id},
    {"mse_loss", m_mse_loss},
    {"isatty", m_isatty},
    {"set_grad_enabled", m_set_grad_enabled},
    {"is_grad_enabled", m_is_grad_enabled},
    {"conv2d", m_conv2d},
    {"max_pool2d", m_max_pool2d},
    {"avg_pool2d", m_avg_pool2d},
    {NULL, NULL}};

static const luaL_Reg method_fns[] = {
    {"mm", t_mm}, {"bmm", t_bmm}, {"matmul", t_matmul}, {"addmm", t_addmm},
    {"transpose", t_transpose}, {"t", t_t}, {"permute", t_permute}, {"narrow", t_narrow},
    {"select", t_select}, {"squeeze", t_squeeze}, {"unsqueeze", t_unsqueeze}, {"expand", t_expand},
    {"flatten", t_flatten}, {"contiguous", t_contiguous}, {"index_select", t_index_select},
    {"gather", t_gather}, {"copy_", t_copy_}, {"fill_", t_fill_}, {"clone", t_clone}, {"item", t_item}, {"_int64_str", t_int64_str},
    {"totable", t_totable}, {"to", t_to}, {"pin_memory", t_pin_memory}, {"is_pinned", t_is_pinned}, {"size", t_size}, {"stride", t_stride}, {"dim", t_dim},
    {"numel", t_numel}, {"is_contiguous", t_is_contiguous}, {"storage_offset", t_storage_offset},
    {"_storage_id", t_storage_id}, {"_dtype", t_dtype}, {"_device", t_device}, {"_shape", t_shape},
    {"_get", t_get}, {"_set", t_set}, {"_requires_grad", t_requires_grad},
    {"requires_grad_", t_set_requires_grad}, {"_grad", t_grad}, {"_set_grad", t_set_grad}, {"_grad_fn", t_grad_fn},
    {"_is_leaf", t_is_leaf}, {"backward", t_backward}, {"detach", t_detach}, {"_replace", t_replace}, {NULL, NULL}};

/* Fills the module table at -1: functions, and `Tensor` (methods) and `_mt`. */
void wl_open_tensor(lua_State *L) {
    luaL_register(L, NULL, module_fns);
    for (int i = 0; i < (int)(sizeof creators / sizeof *creators); i++) {
        char like[32];
        set_closure(L, creators[i].name, m_create, i, 0);
        snprintf(like, sizeof like, "%s_like", creators[i].name);
        set_closure(L, like, m_create_like, i, 0);
    }
    set_closure(L, "cat", m_join, 0, 0);
    set_closure(L, "stack", m_join, 1, 0);
    lua_createtable(L, WICK_NUM_DTYPES, 0); /* core.dtypes: the names, in wick_dtype order */
    for (int d = 0; d < WICK_NUM_DTYPES; d++) {
        lua_pushstring(L, wick_dtype_name((wick_dtype)d));
        lua_rawseti(L, -2, d + 1);
    }
    lua_setfield(L, -2, "dtypes");

    lua_newtable(L); /* methods */
    luaL_register(L, NULL, method_fns);
    char name[32];
    for (int op = 0; op < WICK_NUM_UNARY; op++) {
        set_closure(L, wick_unary_name((wick_unary_op)op), t_unary, op, 0);
        snprintf(name, sizeof name, "%s_", wick_unary_name((wick_unary_op)op));
        set_closure(L, name, t_unary, op, 1);
    }
    for (int op = 0; op < WICK_NUM_BINARY; op++) {
        set_closure(L, wick_binary_name((wick_binary_op)op), t_binary, op, 0);
        snprintf(name, sizeof name, "%s_", wick_binary_name((wick_binary_op)op));
        set_closure(L, name, t_binary_, op, 0);
    }
    for (int op = 0; op < WICK_NUM_REDUCE; op++)
        if (op != WICK_MAX && op != WICK_MIN) set_closure(L, wick_reduce_name((wick_reduce_op)op), t_reduce, op, 0);
    set_closure(L, "max", t_max_min, 1, 0);
    set_closure(L, "min", t_max_min, 0, 0);
    set_closure(L, "clamp", t_clamp, 0, 0);
    set_closure(L, "clamp_", t_clamp, 1, 0);
    set_closure(L, "view", t_view_like, 0, 0);
    set_closure(L, "reshape", t_view_like, 1, 0);
    set_closure(L, "scatter", t_scatter, 0, 0);
    set_closure(L, "scatter_", t_scatter, 1, 0);
    set_closure(L, "softmax", t_softmax, 0, 0);
    set_closure(L, "log_softmax", t_softmax, 1, 0);
    lua_setfield(L, -2, "Tensor");

    luaL_newmetatable(L, WL_TENSOR_MT);
    set_fn(L, "__gc", t_gc);
    set_fn(L, "__len", t_len);
    set_fn(L, "__unm", t_unm);
    static const struct {
        const char *name;
        wick_binary_op op;
    } arith[] = {{"__add", WICK_ADD}, {"__sub", WICK_SUB}, {"__mul", WICK_MUL}, {"__div", WICK_DIV}, {"__pow", WICK_POW}};
    for (size_t i = 0; i < sizeof arith / sizeof *arith; i++) set_closure(L, arith[i].name, t_arith, arith[i].op, 0);
    lua_pushstring(L, "wick.Tensor");
    lua_setfield(L, -2, "__name");
    lua_setfield(L, -2, "_mt");
    wl_open_nn(L);
    wl_open_norm(L);
    wl_open_ops(L);
    wl_open_index(L);
}
