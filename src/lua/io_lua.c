/* File bindings: the storages of checkpoints (written, mapped, read, their
 * CRCs) and IDX files, for wick.save/wick.load (lua/wick/serialize.lua) and
 * wick.data. */
#include "wick_lua.h"
#include "../io/crc.h"

#include <string.h>

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

static const luaL_Reg io_fns[] = {
    {"read_idx", m_read_idx},
    {"from_bytes", m_from_bytes},
    {"write_storages", m_write_storages},
    {"read_storage", m_read_storage},
    {"storage_numel", m_storage_numel},
    {"map_storages", m_map_storages},
    {"storage_crc32", m_storage_crc32},
    {"crc32c", m_crc32c},
    {NULL, NULL}};

void wl_open_io(lua_State *L) { luaL_register(L, NULL, io_fns); }
