/* Internal to wick: the CRC-32C implementations one by one (src/io/crc32c.c),
 * for the test vectors of each path (core.crc32c in the Lua binding). */
#ifndef WICK_IO_CRC_H
#define WICK_IO_CRC_H
#include <stddef.h>
#include <stdint.h>

enum { WK_CRC_AUTO = 0, WK_CRC_PORTABLE = 1 };
/* CRC-32C of the bytes continuing from crc, on this thread: WK_CRC_AUTO uses
 * SSE4.2 where the CPU has it, WK_CRC_PORTABLE always the table. */
uint32_t wk_crc32c_using(int impl, uint32_t crc, const void *data, size_t size);
/* 1 where the CPU (and this build) can use the SSE4.2 crc32 instruction */
int wk_crc32c_has_sse42(void);
#endif
