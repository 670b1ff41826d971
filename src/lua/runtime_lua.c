/* Runtime settings and queries of the Lua binding: the random generator,
 * threads, devices and the CUDA runtime's counters, memory in use, grad mode,
 * a clock and isatty for scripts. */
#include "wick_lua.h"

#include <limits.h>
#include <string.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

WL_FUNCTION(m_manual_seed) {
    lua_Number n = floor(wl_checknumber(L, 1, "wick.manual_seed", "argument 'seed'")); /* like PyTorch's int(seed) */
    if (!(n >= -9223372036854775808.0 && n < 18446744073709551616.0))
        wl_raise(L, "wick.manual_seed: expected a seed in [-2^63, 2^64), got %.17g", n);
    wick_manual_seed(n < 0 ? (uint64_t)(int64_t)n : (uint64_t)n); /* negative seeds wrap, as in PyTorch */
    return 0;
}

WL_FUNCTION(m_get_rng_state) {
    uint8_t state[WICK_RNG_STATE_SIZE];
    double values[WICK_RNG_STATE_SIZE];
    wick_rng_get_state(state);
    for (int i = 0; i < WICK_RNG_STATE_SIZE; i++) values[i] = state[i];
    int64_t n = WICK_RNG_STATE_SIZE;
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_from_doubles(slot, 1, &n, values, (wick_options){WICK_UINT8, {WICK_CPU, -1}}));
    return 1;
}

WL_FUNCTION(m_set_rng_state) {
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

WL_FUNCTION(m_set_num_threads) {
    lua_Number n = wl_checknumber(L, 1, "wick.set_num_threads", "argument 'n'");
    if (!(n >= 1 && n <= INT_MAX) || n != floor(n))
        wl_raise(L, "wick.set_num_threads: expected a positive integer, got %g", n);
    wick_set_num_threads((int)n);
    return 0;
}

WL_FUNCTION(m_get_num_threads) {
    lua_pushinteger(L, wick_get_num_threads());
    return 1;
}

/* type, index (nil when none), canonical name and number (wl_device_code) of a device */
static int push_device_facts(lua_State *L, wick_device d) {
    char buf[32];
    lua_pushstring(L, d.type == WICK_CPU ? "cpu" : d.type == WICK_CUDA ? "cuda" : "meta");
    if (d.index >= 0) lua_pushinteger(L, d.index);
    else lua_pushnil(L);
    lua_pushstring(L, wick_device_format(d, buf, sizeof buf));
    lua_pushinteger(L, wl_device_code(d));
    return 4;
}

WL_FUNCTION(m_parse_device) { return push_device_facts(L, wl_device(L, 1, "wick.device")); }

/* core.device_of_code(n): the same facts for a device number (t:_device_code()) */
WL_FUNCTION(m_device_of_code) {
    wick_device d;
    if (!wl_device_from_code(wl_checkint(L, 1, "device_of_code", "code"), &d))
        wl_raise(L, "device_of_code: %d names no device", (int)lua_tointeger(L, 1));
    return push_device_facts(L, d);
}

WL_FUNCTION(m_cuda_is_available) {
    lua_pushboolean(L, wick_cuda_is_available());
    return 1;
}

WL_FUNCTION(m_cuda_device_count) {
    lua_pushinteger(L, wick_cuda_device_count());
    return 1;
}

WL_FUNCTION(m_cuda_current_device) {
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

/* core.cuda_device_properties(index): name, major, minor, total_memory, multi_processor_count */
WL_FUNCTION(m_cuda_device_properties) {
    wick_cuda_properties p;
    wl_check(L, wick_cuda_get_device_properties(cuda_index(L, 1, "wick.cuda.get_device_properties"), &p));
    lua_pushstring(L, p.name);
    lua_pushinteger(L, p.major);
    lua_pushinteger(L, p.minor);
    wl_pushint64(L, p.total_memory);
    lua_pushinteger(L, p.multi_processor_count);
    return 5;
}

WL_FUNCTION(m_cuda_set_device) {
    wl_check(L, wick_cuda_set_device(cuda_index(L, 1, "wick.cuda.set_device")));
    return 0;
}

WL_FUNCTION(m_cuda_synchronize) {
    wl_check(L, wick_cuda_synchronize(lua_isnoneornil(L, 1) ? -1 : cuda_index(L, 1, "wick.cuda.synchronize")));
    return 0;
}

/* core.cuda_memory(index): allocated, peak allocated, reserved, peak reserved (bytes) */
WL_FUNCTION(m_cuda_memory) {
    int index = cuda_index(L, 1, "wick.cuda.memory_allocated");
    wl_pushint64(L, wick_cuda_memory_allocated(index));
    wl_pushint64(L, wick_cuda_max_memory_allocated(index));
    wl_pushint64(L, wick_cuda_memory_reserved(index));
    wl_pushint64(L, wick_cuda_max_memory_reserved(index));
    return 4;
}

WL_FUNCTION(m_cuda_reset_peak_memory_stats) {
    wick_cuda_reset_peak_memory_stats(cuda_index(L, 1, "wick.cuda.reset_peak_memory_stats"));
    return 0;
}

WL_FUNCTION(m_cuda_empty_cache) {
    lua_gc(L, LUA_GCCOLLECT, 0); /* dead tensors first, so their blocks are cached, then freed */
    wick_cuda_empty_cache();
    return 0;
}

/* core.cuda_sync_counts(device): the number of waits for the GPU (device < 0:
 * every GPU) and a table of them by reason (only reasons that occurred) */
WL_FUNCTION(m_cuda_sync_counts) {
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

WL_FUNCTION(m_cuda_begin_batch) {
    (void)L;
    wick_cuda_begin_batch();
    return 0;
}

WL_FUNCTION(m_cuda_end_batch) {
    wl_check(L, wick_cuda_end_batch());
    return 0;
}

/* core.cuda_allow_tf32([flag]): the setting (after setting it when given) */
WL_FUNCTION(m_cuda_allow_tf32) {
    if (!lua_isnoneornil(L, 1)) wick_cuda_set_allow_tf32(lua_toboolean(L, 1));
    lua_pushboolean(L, wick_cuda_allow_tf32());
    return 1;
}

/* Pushes the seconds of a clock (CLOCK_MONOTONIC, CLOCK_REALTIME), with the fraction. */
int wl_push_clock(lua_State *L, clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec * 1e-9);
    return 1;
}

/* wick.clock(): seconds of a monotonic wall clock, for timing. */
WL_FUNCTION(m_clock) { return wl_push_clock(L, CLOCK_MONOTONIC); }

/* wick.isatty(fd): whether a file descriptor is a terminal (progress bars). */
WL_FUNCTION(m_isatty) {
    lua_pushboolean(L, isatty((int)luaL_optnumber(L, 1, 1)));
    return 1;
}

/* core.same_device(a, b): whether two tensors live on one device (no strings made). */
WL_FUNCTION(m_same_device) {
    wick_tensor *a = wl_checktensor(L, 1, "same_device", "a"), *b = wl_checktensor(L, 2, "same_device", "b");
    lua_pushboolean(L, wick_device_equal(wick_tensor_device(a), wick_tensor_device(b)));
    return 1;
}

/* core.memory_stats(): the CPU allocator's statistics (wick_get_memory_stats)
 * under their C names; lua/wick/memory.lua gives them PyTorch's keys */
WL_FUNCTION(m_memory_stats) {
    wick_memory_stats m;
    wick_get_memory_stats(&m);
    lua_createtable(L, 0, 12);
#define FIELD(name)               \
    wl_pushint64(L, m.name);      \
    lua_setfield(L, -2, #name);
    FIELD(allocated_bytes) FIELD(allocated_bytes_peak) FIELD(allocated_bytes_total) FIELD(freed_bytes_total)
    FIELD(allocations) FIELD(allocations_total) FIELD(frees_total) FIELD(cached_bytes) FIELD(cached_blocks)
    FIELD(reserved_bytes) FIELD(num_alloc_retries) FIELD(num_ooms)
#undef FIELD
    return 1;
}

WL_FUNCTION(m_reset_peak_memory_stats) {
    (void)L;
    wick_reset_peak_memory_stats();
    return 0;
}

WL_FUNCTION(m_cpu_bytes_in_use) {
    wl_pushint64(L, wick_cpu_bytes_in_use());
    return 1;
}

WL_FUNCTION(m_set_grad_enabled) {
    wick_set_grad_enabled(lua_toboolean(L, 1));
    return 0;
}

WL_FUNCTION(m_is_grad_enabled) {
    lua_pushboolean(L, wick_is_grad_enabled());
    return 1;
}

/* Autocast's device type: "cpu" or "cuda" (PyTorch's device_type strings). */
static wick_device_type autocast_type(lua_State *L, int idx, const char *fn) {
    const char *s = lua_type(L, idx) == LUA_TSTRING ? lua_tostring(L, idx) : NULL;
    if (s && !strcmp(s, "cpu")) return WICK_CPU;
    if (s && !strcmp(s, "cuda")) return WICK_CUDA;
    wl_raise(L, "%s: device_type must be 'cpu' or 'cuda', got %s%s%s", fn, s ? "'" : "", s ? s : luaL_typename(L, idx),
             s ? "'" : "");
    return WICK_CPU;
}

WL_FUNCTION(m_set_autocast_enabled) {
    wl_check(L, wick_set_autocast_enabled(autocast_type(L, 1, "set_autocast_enabled"), lua_toboolean(L, 2)));
    return 0;
}

WL_FUNCTION(m_is_autocast_enabled) {
    lua_pushboolean(L, wick_is_autocast_enabled(autocast_type(L, 1, "is_autocast_enabled")));
    return 1;
}

WL_FUNCTION(m_set_autocast_dtype) {
    wick_device_type type = autocast_type(L, 1, "set_autocast_dtype");
    wl_check(L, wick_set_autocast_dtype(type, wl_dtype(L, 2, "set_autocast_dtype")));
    return 0;
}

WL_FUNCTION(m_get_autocast_dtype) {
    lua_pushstring(L, wick_dtype_name(wick_get_autocast_dtype(autocast_type(L, 1, "get_autocast_dtype"))));
    return 1;
}

WL_FUNCTION(m_autocast_increment_nesting) {
    lua_pushinteger(L, wick_autocast_increment_nesting());
    return 1;
}

WL_FUNCTION(m_autocast_decrement_nesting) {
    lua_pushinteger(L, wick_autocast_decrement_nesting());
    return 1;
}

WL_FUNCTION(m_clear_autocast_cache) {
    (void)L;
    wick_clear_autocast_cache();
    return 0;
}

WL_FUNCTION(m_set_autocast_cache_enabled) {
    wick_set_autocast_cache_enabled(lua_toboolean(L, 1));
    return 0;
}

WL_FUNCTION(m_is_autocast_cache_enabled) {
    lua_pushboolean(L, wick_is_autocast_cache_enabled());
    return 1;
}

static const luaL_Reg runtime_fns[] = {
    {"manual_seed", m_manual_seed},
    {"get_rng_state", m_get_rng_state},
    {"set_rng_state", m_set_rng_state},
    {"set_num_threads", m_set_num_threads},
    {"get_num_threads", m_get_num_threads},
    {"parse_device", m_parse_device},
    {"device_of_code", m_device_of_code},
    {"cuda_is_available", m_cuda_is_available},
    {"cuda_device_count", m_cuda_device_count},
    {"cuda_device_properties", m_cuda_device_properties},
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
    {"memory_stats", m_memory_stats},
    {"reset_peak_memory_stats", m_reset_peak_memory_stats},
    {"clock", m_clock},
    {"same_device", m_same_device},
    {"isatty", m_isatty},
    {"set_grad_enabled", m_set_grad_enabled},
    {"is_grad_enabled", m_is_grad_enabled},
    {"_set_autocast_enabled", m_set_autocast_enabled},
    {"_is_autocast_enabled", m_is_autocast_enabled},
    {"_set_autocast_dtype", m_set_autocast_dtype},
    {"_get_autocast_dtype", m_get_autocast_dtype},
    {"_autocast_increment_nesting", m_autocast_increment_nesting},
    {"_autocast_decrement_nesting", m_autocast_decrement_nesting},
    {"_clear_autocast_cache", m_clear_autocast_cache},
    {"_set_autocast_cache_enabled", m_set_autocast_cache_enabled},
    {"_is_autocast_cache_enabled", m_is_autocast_cache_enabled},
    {NULL, NULL}};

void wl_open_runtime(lua_State *L) { luaL_register(L, NULL, runtime_fns); }
