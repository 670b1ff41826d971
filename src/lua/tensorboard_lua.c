/* TensorBoard bindings (lua/wick/utils/tensorboard.lua): the byte-level pieces
 * of an event file that Lua cannot write portably or fast: TFRecord framing
 * with masked CRC-32C (the core's wick_crc32c), protobuf varints and
 * little-endian doubles/floats, PNG images (zlib), histogram bucket counts,
 * and the few facts of the OS the file name needs (host, pid, wall time,
 * creating the log folder). The protobuf messages themselves are composed in
 * Lua from these. */
#include "wick_lua.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <zlib.h>

/* TensorFlow's masked CRC: rotate right by 15 and add a constant, so a CRC of
 * bytes that hold CRCs does not degenerate */
static uint32_t masked_crc(const void *p, size_t n) {
    uint32_t c = wick_crc32c(0, p, n);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static void put_le(unsigned char *out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) out[i] = (unsigned char)(v >> (8 * i));
}

/* core.tb_masked_crc(s): TFRecord's masked CRC-32C of s */
WL_FUNCTION(m_masked_crc) {
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_pushnumber(L, (lua_Number)masked_crc(s, n));
    return 1;
}

/* core.tb_record(data): one TFRecord: uint64 length, masked CRC of the
 * length's 8 bytes, the data, masked CRC of the data (all little-endian) */
WL_FUNCTION(m_record) {
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    unsigned char head[12], tail[4];
    put_le(head, (uint64_t)n, 8);
    put_le(head + 8, masked_crc(head, 8), 4);
    put_le(tail, masked_crc(s, n), 4);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, (const char *)head, sizeof head);
    luaL_addlstring(&b, s, n);
    luaL_addlstring(&b, (const char *)tail, sizeof tail);
    luaL_pushresult(&b);
    return 1;
}

/* core.pb_varint(n): a protobuf varint of the integer n (negative: the 10-byte
 * two's complement, as int64 fields take it) */
WL_FUNCTION(m_varint) {
    lua_Number x = luaL_checknumber(L, 1);
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0) || x != floor(x))
        return wl_raise(L, "varint: expected an integer within int64, got %g", (double)x);
    uint64_t v = (uint64_t)(int64_t)x;
    unsigned char out[10];
    int k = 0;
    do {
        out[k] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v) out[k] |= 0x80;
        k++;
    } while (v);
    lua_pushlstring(L, (const char *)out, (size_t)k);
    return 1;
}

static void push_le(lua_State *L, uint64_t v, int bytes) {
    unsigned char out[8];
    put_le(out, v, bytes);
    lua_pushlstring(L, (const char *)out, (size_t)bytes);
}

/* core.pb_double(x) / core.pb_float(x): 8 / 4 little-endian IEEE bytes */
WL_FUNCTION(m_double) {
    double d = (double)luaL_checknumber(L, 1);
    uint64_t u;
    memcpy(&u, &d, 8);
    push_le(L, u, 8);
    return 1;
}

WL_FUNCTION(m_float) {
    float f = (float)luaL_checknumber(L, 1);
    uint32_t u;
    memcpy(&u, &f, 4);
    push_le(L, u, 4);
    return 1;
}

/* core.pb_doubles(list): the packed bytes of a repeated double field */
WL_FUNCTION(m_doubles) {
    luaL_checktype(L, 1, LUA_TTABLE);
    size_t n = lua_objlen(L, 1);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, 1, (int)i);
        double d = (double)lua_tonumber(L, -1);
        lua_pop(L, 1);
        uint64_t u;
        memcpy(&u, &d, 8);
        unsigned char out[8];
        put_le(out, u, 8);
        luaL_addlstring(&b, (const char *)out, 8);
    }
    luaL_pushresult(&b);
    return 1;
}

/* A contiguous CPU tensor of dtype, or a clear error */
static wick_tensor *check_plain(lua_State *L, int idx, const char *fn, wick_dtype dtype) {
    wick_tensor *t = wl_checktensor(L, idx, fn, "tensor");
    if (wick_tensor_device(t).type != WICK_CPU || !wick_tensor_is_contiguous(t) || wick_tensor_dtype(t) != dtype)
        wl_raise(L, "%s: expected a contiguous CPU %s tensor", fn, wick_dtype_name(dtype));
    return t;
}

/* core.tb_histogram(values, limits): for a contiguous CPU float64 tensor and
 * ascending bucket edges e[1..m] (a Lua list), the counts of the m-1 buckets
 * [e_i, e_i+1) (the last one closed), values outside dropped, like
 * numpy.histogram; also returns min, max, sum, sum of squares */
WL_FUNCTION(m_histogram) {
    wick_tensor *t = check_plain(L, 1, "tb_histogram", WICK_FLOAT64);
    luaL_checktype(L, 2, LUA_TTABLE);
    size_t m = lua_objlen(L, 2);
    if (m < 2) return wl_raise(L, "tb_histogram: expected at least 2 bucket edges");
    double *e = malloc(m * sizeof *e);
    double *c = calloc(m - 1, sizeof *c);
    if (!e || !c) {
        free(e);
        free(c);
        return wl_raise(L, "tb_histogram: out of memory");
    }
    for (size_t i = 0; i < m; i++) {
        lua_rawgeti(L, 2, (int)i + 1);
        e[i] = (double)lua_tonumber(L, -1);
        lua_pop(L, 1);
    }
    const double *v = wick_tensor_data(t);
    int64_t n = wick_tensor_numel(t);
    double lo = INFINITY, hi = -INFINITY, sum = 0, sq = 0;
    for (int64_t k = 0; k < n; k++) {
        double x = v[k];
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        sum += x;
        sq += x * x;
        if (!(x >= e[0] && x <= e[m - 1])) continue; /* outside, or NaN */
        size_t a = 0, b = m - 1;                      /* e[a] <= x < e[b] */
        if (x == e[m - 1]) a = m - 2;
        else
            while (b - a > 1) {
                size_t mid = a + (b - a) / 2;
                if (x >= e[mid]) a = mid;
                else b = mid;
            }
        c[a] += 1;
    }
    lua_createtable(L, (int)(m - 1), 0);
    for (size_t i = 0; i + 1 < m; i++) {
        lua_pushnumber(L, c[i]);
        lua_rawseti(L, -2, (int)i + 1);
    }
    free(e);
    free(c);
    lua_pushnumber(L, lo);
    lua_pushnumber(L, hi);
    lua_pushnumber(L, sum);
    lua_pushnumber(L, sq);
    return 5;
}

/* ---- PNG: 8-bit gray / RGB / RGBA, one zlib stream, no filtering ---- */

static void png_chunk(luaL_Buffer *b, const char *type, const unsigned char *data, size_t n) {
    unsigned char len[4] = {(unsigned char)(n >> 24), (unsigned char)(n >> 16), (unsigned char)(n >> 8),
                            (unsigned char)n};
    luaL_addlstring(b, (const char *)len, 4);
    luaL_addlstring(b, type, 4);
    if (n) luaL_addlstring(b, (const char *)data, n);
    uLong crc = crc32(0L, (const Bytef *)type, 4);
    if (n) crc = crc32(crc, data, (uInt)n);
    unsigned char out[4] = {(unsigned char)(crc >> 24), (unsigned char)(crc >> 16), (unsigned char)(crc >> 8),
                            (unsigned char)crc};
    luaL_addlstring(b, (const char *)out, 4);
}

/* core.png_encode(t): the PNG file of a contiguous CPU uint8 tensor of shape
 * (H, W, C), C in 1, 3, 4 */
WL_FUNCTION(m_png_encode) {
    wick_tensor *t = check_plain(L, 1, "png_encode", WICK_UINT8);
    const int64_t *sz = wick_tensor_sizes(t);
    if (wick_tensor_ndim(t) != 3) return wl_raise(L, "png_encode: expected an (H, W, C) tensor");
    int64_t h = sz[0], w = sz[1], ch = sz[2];
    if (ch != 1 && ch != 3 && ch != 4) return wl_raise(L, "png_encode: expected 1, 3 or 4 channels, got %lld", (long long)ch);
    if (h < 1 || w < 1 || h > 0x7fffffff / 4 || w > 0x7fffffff / 4 || (double)h * (double)(w * ch + 1) > 1e9)
        return wl_raise(L, "png_encode: image size %lldx%lld is empty or too large", (long long)h, (long long)w);
    size_t row = (size_t)(w * ch), raw_n = (size_t)h * (row + 1);
    unsigned char *raw = malloc(raw_n);
    uLongf z_n = compressBound((uLong)raw_n);
    unsigned char *z = malloc(z_n);
    if (!raw || !z) {
        free(raw);
        free(z);
        return wl_raise(L, "png_encode: out of memory");
    }
    const unsigned char *px = wick_tensor_data(t);
    for (int64_t y = 0; y < h; y++) {
        raw[(size_t)y * (row + 1)] = 0; /* filter: none */
        memcpy(raw + (size_t)y * (row + 1) + 1, px + (size_t)y * row, row);
    }
    int rc = compress2(z, &z_n, raw, (uLong)raw_n, 6);
    free(raw);
    if (rc != Z_OK) {
        free(z);
        return wl_raise(L, "png_encode: zlib failed (%d)", rc);
    }
    static const unsigned char color[5] = {0, 0, 0, 2, 6}; /* gray, -, -, RGB, RGBA */
    unsigned char ihdr[13] = {(unsigned char)(w >> 24), (unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w,
                              (unsigned char)(h >> 24), (unsigned char)(h >> 16), (unsigned char)(h >> 8), (unsigned char)h,
                              8, color[ch], 0, 0, 0};
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, "\x89PNG\r\n\x1a\n", 8);
    png_chunk(&b, "IHDR", ihdr, sizeof ihdr);
    png_chunk(&b, "IDAT", z, z_n);
    png_chunk(&b, "IEND", NULL, 0);
    free(z);
    luaL_pushresult(&b);
    return 1;
}

/* core.png_crc(s): zlib's CRC-32 of s (the PNG chunk CRC, for the specs) */
WL_FUNCTION(m_png_crc) {
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_pushnumber(L, (lua_Number)crc32(0L, (const Bytef *)s, (uInt)n));
    return 1;
}

/* core.zlib_inflate(s[, size]): the bytes of a zlib stream (the specs decode PNGs) */
WL_FUNCTION(m_inflate) {
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    lua_Number want = luaL_checknumber(L, 2);
    if (!(want >= 0 && want <= 1e9)) return wl_raise(L, "zlib_inflate: bad size");
    uLongf out_n = (uLongf)want;
    unsigned char *out = malloc(out_n ? out_n : 1);
    if (!out) return wl_raise(L, "zlib_inflate: out of memory");
    int rc = uncompress(out, &out_n, (const Bytef *)s, (uLong)n);
    if (rc != Z_OK) {
        free(out);
        return wl_raise(L, "zlib_inflate: not a zlib stream of that size (%d)", rc);
    }
    lua_pushlstring(L, (const char *)out, out_n);
    free(out);
    return 1;
}

/* ---- the OS facts an event file's name and folder need ---- */

/* core.tb_walltime(): seconds since the epoch, with the fraction */
WL_FUNCTION(m_walltime) { return wl_push_clock(L, CLOCK_REALTIME); }

/* core.tb_host(): the host name and the process id */
WL_FUNCTION(m_host) {
    char name[256];
    if (gethostname(name, sizeof name - 1) != 0) strcpy(name, "localhost");
    name[sizeof name - 1] = 0;
    lua_pushstring(L, name);
    lua_pushnumber(L, (lua_Number)getpid());
    return 2;
}

/* core.mkdir_p(path): creates path and its missing parents; nil, message on failure */
WL_FUNCTION(m_mkdir_p) {
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    if (n == 0 || n > 4095 || strlen(s) != n) {
        lua_pushnil(L);
        lua_pushfstring(L, "a path of %d bytes%s cannot be made", (int)n,
                        strlen(s) != n ? " with a zero byte" : n ? " (at most 4095)" : "");
        return 2;
    }
    char buf[4096];
    memcpy(buf, s, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char keep = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
            lua_pushnil(L);
            lua_pushfstring(L, "cannot create '%s': %s", buf, strerror(errno));
            return 2;
        }
        buf[i] = keep;
    }
    struct stat st;
    if (stat(s, &st) != 0 || !S_ISDIR(st.st_mode)) {
        lua_pushnil(L);
        lua_pushfstring(L, "'%s' is not a folder", s);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* core.tb_write(path, data, create): data appended to path (or the file made
 * anew when create) by open/write/close, every result checked: true, or nil
 * and a message. (Not through Lua's io: LuaJIT's compiled traces can call
 * fflush twice, and the second call hides the first one's ENOSPC.) */
WL_FUNCTION(m_write) {
    size_t path_n, n;
    const char *path = luaL_checklstring(L, 1, &path_n);
    const char *s = luaL_checklstring(L, 2, &n);
    if (strlen(path) != path_n) {
        lua_pushnil(L);
        lua_pushliteral(L, "a file name with a zero byte");
        return 2;
    }
    int flags = O_WRONLY | O_CLOEXEC | (lua_toboolean(L, 3) ? O_CREAT | O_TRUNC : O_APPEND);
    int fd = open(path, flags, 0666);
    int err = fd < 0 ? errno : 0;
    for (size_t done = 0; !err && done < n;) {
        ssize_t k = write(fd, s + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) err = k < 0 ? errno : EIO;
        else done += (size_t)k;
    }
    if (fd >= 0 && close(fd) != 0 && !err) err = errno;
    if (err) {
        lua_pushnil(L);
        lua_pushfstring(L, "%s: %s", path, strerror(err));
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

static const luaL_Reg tb_fns[] = {
    {"tb_masked_crc", m_masked_crc}, {"tb_record", m_record},   {"pb_varint", m_varint},
    {"pb_double", m_double},         {"pb_float", m_float},     {"pb_doubles", m_doubles},
    {"tb_histogram", m_histogram},   {"png_encode", m_png_encode}, {"png_crc", m_png_crc},
    {"zlib_inflate", m_inflate},     {"tb_walltime", m_walltime}, {"tb_host", m_host},
    {"mkdir_p", m_mkdir_p},          {"tb_write", m_write},     {NULL, NULL}};

void wl_open_tensorboard(lua_State *L) { luaL_register(L, NULL, tb_fns); }
