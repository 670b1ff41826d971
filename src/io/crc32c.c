/* Checksums of checkpoint data: CRC-32C (Castagnoli), what wick.save writes,
 * and zlib's CRC-32, what zip archives (torch.save) and older wick checkpoints
 * carry.
 *
 * CRC-32C uses the SSE4.2 crc32 instruction where the CPU has it (a CPUID check
 * at run time), three interleaved streams per block so the instruction's
 * latency is hidden, and a table (slicing by 8) elsewhere. Large inputs are
 * split into chunks across wick's thread pool for both checksums; the chunks'
 * CRCs are combined with polynomial arithmetic (a CRC is linear: the register
 * after A then B is the register after A, advanced over len(B) zero bytes,
 * xor the register after B from zero; advancing is a multiplication by
 * x^(8 len(B)) modulo the polynomial). */
#include "../core/internal.h"
#include "crc.h"

#include <pthread.h>
#include <zlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define HAVE_SSE42_CODE 1
#endif

#define POLY_C 0x82f63b78u  /* CRC-32C, reflected */
#define POLY_Z 0xedb88320u  /* zlib's CRC-32, reflected */

/* ---- polynomial arithmetic modulo a reflected polynomial (bit 31 is x^0) ---- */

static uint32_t gf_mul(uint32_t a, uint32_t b, uint32_t poly) {
    uint32_t product = 0;
    for (int i = 0; i < 32; i++) { /* the terms x^i of a, lowest first */
        if (a & (0x80000000u >> i)) product ^= b;
        b = (b & 1) ? (b >> 1) ^ poly : b >> 1; /* b *= x */
    }
    return product;
}

/* x^(8 n) modulo poly: the factor that advances a CRC register over n zero bytes */
static uint32_t gf_shift_factor(uint64_t n, uint32_t poly) {
    uint32_t result = 0x80000000u /* 1 */, base = 0x00800000u /* x^8 */;
    for (; n; n >>= 1) {
        if (n & 1) result = gf_mul(result, base, poly);
        base = gf_mul(base, base, poly);
    }
    return result;
}

/* ---- CRC-32C, portable: slicing by 8 ---- */

static uint32_t table_c[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ POLY_C : c >> 1;
        table_c[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++) table_c[t][i] = (table_c[t - 1][i] >> 8) ^ table_c[0][table_c[t - 1][i] & 0xff];
}

/* The register (no pre- or post-inversion) after the bytes, from `reg`. */
static uint32_t reg_portable(uint32_t reg, const unsigned char *p, size_t n) {
    pthread_once(&table_once, table_init);
    while (n && ((uintptr_t)p & 7)) reg = (reg >> 8) ^ table_c[0][(reg ^ *p++) & 0xff], n--;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= reg; /* little-endian: the register meets the first four bytes */
        reg = table_c[7][w & 0xff] ^ table_c[6][(w >> 8) & 0xff] ^ table_c[5][(w >> 16) & 0xff] ^
              table_c[4][(w >> 24) & 0xff] ^ table_c[3][(w >> 32) & 0xff] ^ table_c[2][(w >> 40) & 0xff] ^
              table_c[1][(w >> 48) & 0xff] ^ table_c[0][w >> 56];
    }
    while (n--) reg = (reg >> 8) ^ table_c[0][(reg ^ *p++) & 0xff];
    return reg;
}

/* ---- CRC-32C, SSE4.2 ---- */

#ifdef HAVE_SSE42_CODE
#define STREAM 4096 /* bytes per stream in a block of three */

static uint32_t shift_stream, shift_2stream; /* x^(8 STREAM), x^(16 STREAM) */
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

static void shift_init(void) {
    shift_stream = gf_shift_factor(STREAM, POLY_C);
    shift_2stream = gf_shift_factor(2 * STREAM, POLY_C);
}

__attribute__((target("sse4.2"))) static uint32_t reg_sse42(uint32_t reg, const unsigned char *p, size_t n) {
    while (n && ((uintptr_t)p & 7)) reg = _mm_crc32_u8(reg, *p++), n--;
    if (n >= 3 * STREAM) pthread_once(&shift_once, shift_init);
    for (; n >= 3 * STREAM; p += 3 * STREAM, n -= 3 * STREAM) {
        uint64_t a = reg, b = 0, c = 0;
        for (size_t i = 0; i < STREAM; i += 8) {
            uint64_t wa, wb, wc;
            memcpy(&wa, p + i, 8), memcpy(&wb, p + STREAM + i, 8), memcpy(&wc, p + 2 * STREAM + i, 8);
            a = _mm_crc32_u64(a, wa), b = _mm_crc32_u64(b, wb), c = _mm_crc32_u64(c, wc);
        }
        reg = gf_mul((uint32_t)a, shift_2stream, POLY_C) ^ gf_mul((uint32_t)b, shift_stream, POLY_C) ^ (uint32_t)c;
    }
    uint64_t r = reg;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        r = _mm_crc32_u64(r, w);
    }
    reg = (uint32_t)r;
    while (n--) reg = _mm_crc32_u8(reg, *p++);
    return reg;
}

static int cpu_has_sse42(void) {
    static int known = -1; /* racing first calls compute the same answer */
    int v = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (v < 0) {
        __builtin_cpu_init();
        v = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&known, v, __ATOMIC_RELAXED);
    }
    return v;
}
#else
static int cpu_has_sse42(void) { return 0; }
#endif

int wk_crc32c_has_sse42(void) { return cpu_has_sse42(); }

static uint32_t reg_c(int impl, uint32_t reg, const unsigned char *p, size_t n) {
#ifdef HAVE_SSE42_CODE
    if (impl != WK_CRC_PORTABLE && cpu_has_sse42()) return reg_sse42(reg, p, n);
#endif
    (void)impl;
    return reg_portable(reg, p, n);
}

/* ---- zlib's CRC-32 as a register function ---- */

/* zlib's crc32 inverts before and after; the register after the bytes from 0
 * is crc32(~0 ^ ...)... simplest through linearity: reg(data, 0) =
 * ~crc32(0, data) ^ advance(~0, len). */
static uint32_t reg_zlib(const unsigned char *p, size_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    size_t left = n;
    while (left > 0) { /* zlib takes 32-bit lengths */
        uInt chunk = left > (1u << 30) ? (1u << 30) : (uInt)left;
        crc = crc32(crc, p, chunk);
        p += chunk, left -= chunk;
    }
    return ~(uint32_t)crc ^ gf_mul(0xffffffffu, gf_shift_factor(n, POLY_Z), POLY_Z);
}

/* ---- chunks across the thread pool ---- */

#define MAX_CHUNKS 4096
#define MIN_CHUNK ((size_t)1 << 20)

typedef struct {
    int kind; /* WK_CRC_* for CRC-32C, or -1 for zlib's */
    const unsigned char *data;
    size_t size, chunk;
    uint32_t reg[MAX_CHUNKS];
    unsigned char done[MAX_CHUNKS];
} chunk_job;

static void chunk_one(chunk_job *j, int64_t i) {
    size_t at = (size_t)i * j->chunk, len = j->size - at < j->chunk ? j->size - at : j->chunk;
    j->reg[i] = j->kind < 0 ? reg_zlib(j->data + at, len) : reg_c(j->kind, 0, j->data + at, len);
    j->done[i] = 1;
}

static void chunk_range(void *ctx, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; i++) chunk_one(ctx, i);
}

/* The register after the bytes, from `reg`, with chunks on the pool's threads. */
static uint32_t reg_parallel(int kind, uint32_t reg, const unsigned char *p, size_t n) {
    uint32_t poly = kind < 0 ? POLY_Z : POLY_C;
    if (n < 2 * MIN_CHUNK || wick_get_num_threads() == 1) {
        if (kind >= 0) return reg_c(kind, reg, p, n);
        return gf_mul(reg, gf_shift_factor(n, poly), poly) ^ reg_zlib(p, n);
    }
    chunk_job *j = malloc(sizeof *j);
    if (!j) { /* no memory for the bookkeeping: one thread */
        if (kind >= 0) return reg_c(kind, reg, p, n);
        return gf_mul(reg, gf_shift_factor(n, poly), poly) ^ reg_zlib(p, n);
    }
    j->kind = kind, j->data = p, j->size = n;
    j->chunk = n / MAX_CHUNKS + 1 > MIN_CHUNK ? (n / MAX_CHUNKS + 64) & ~(size_t)63 : MIN_CHUNK;
    int64_t chunks = (int64_t)((n + j->chunk - 1) / j->chunk);
    memset(j->done, 0, (size_t)chunks);
    /* an interrupt can stop the pool's ranges early: whatever did not run, runs
     * here, so the answer is always the checksum of every byte; the interrupt is
     * raised again for the caller's next check to report */
    if (wk_parallel_for(chunks, 1, chunk_range, j) != WICK_OK) wick_interrupt_raise(wk_interrupt_watched());
    for (int64_t i = 0; i < chunks; i++)
        if (!j->done[i]) chunk_one(j, i);
    uint32_t full = gf_shift_factor(j->chunk, poly);
    for (int64_t i = 0; i < chunks; i++) {
        size_t at = (size_t)i * j->chunk, len = n - at < j->chunk ? n - at : j->chunk;
        reg = gf_mul(reg, len == j->chunk ? full : gf_shift_factor(len, poly), poly) ^ j->reg[i];
    }
    free(j);
    return reg;
}

/* ---- the public functions ---- */

uint32_t wk_crc32c_using(int impl, uint32_t crc, const void *data, size_t size) {
    return ~reg_c(impl, ~crc, data, size);
}

uint32_t wick_crc32c(uint32_t crc, const void *data, size_t size) {
    return ~reg_parallel(WK_CRC_AUTO, ~crc, data, size);
}

uint32_t wick_crc32(uint32_t crc, const void *data, size_t size) {
    return ~reg_parallel(-1, ~crc, data, size);
}
