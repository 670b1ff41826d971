/* The host logic of the CUDA allocator that needs no GPU, as pure functions:
 * the WICK_CUDA_CACHING switch and the bookkeeping of memory_allocated,
 * max_memory_allocated, memory_reserved and max_memory_reserved. cuda_runtime.cu uses them, and
 * tests/test_cuda_runtime.c tests them on any machine (C and CUDA C++ alike).
 *
 * WICK_CUDA_CACHING=0 (read once, at the first allocation) is the sanitizer
 * mode: every block is its own cudaMalloc of exactly the requested bytes and
 * goes back with cudaFree when freed, so compute-sanitizer memcheck sees an
 * access past a tensor's end (inside a cached 2 MiB segment it cannot). */
#ifndef WICK_CUDA_CACHING_H
#define WICK_CUDA_CACHING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* 1: cache freed blocks (unset or empty, "1", "on", "true", "yes");
 * 0: hand every block back to CUDA ("0", "off", "false", "no");
 * -1: not understood (the caller warns and keeps caching on). */
static inline int wk_cuda_caching_parse(const char *value) {
    static const char *const on[] = {"", "1", "on", "true", "yes"}, *const off[] = {"0", "off", "false", "no"};
    if (!value) return 1;
    for (size_t i = 0; i < sizeof on / sizeof *on; i++)
        if (strcmp(value, on[i]) == 0) return 1;
    for (size_t i = 0; i < sizeof off / sizeof *off; i++)
        if (strcmp(value, off[i]) == 0) return 0;
    return -1;
}

/* Bytes one cudaMalloc takes for a request when caching is off: exactly the
 * request (so the sanitizer's bounds are the tensor's), at least one byte. */
static inline size_t wk_cuda_nocache_size(size_t nbytes) { return nbytes ? nbytes : 1; }

/* A device's counts, as the statistics functions report them (peak_reserved:
 * max_memory_reserved, the most reserved at once since start or the last reset). */
typedef struct {
    int64_t allocated, peak, reserved, peak_reserved;
} wk_cuda_counts;

/* After `fresh` bytes are newly taken from CUDA: reserved and its peak. */
static inline wk_cuda_counts wk_cuda_counts_reserve(wk_cuda_counts c, int64_t fresh) {
    c.reserved += fresh;
    if (c.reserved > c.peak_reserved) c.peak_reserved = c.reserved;
    return c;
}

/* After a block of `size` bytes is handed out, `fresh` of them newly taken
 * from CUDA (0 when it came from the cache; the whole block when caching is off). */
static inline wk_cuda_counts wk_cuda_counts_after_alloc(wk_cuda_counts c, int64_t size, int64_t fresh) {
    c = wk_cuda_counts_reserve(c, fresh);
    c.allocated += size;
    if (c.allocated > c.peak) c.peak = c.allocated;
    return c;
}

/* After a block of `size` bytes is freed, `returned` of them given back to
 * CUDA (0 when it stays cached; the whole block when caching is off). */
static inline wk_cuda_counts wk_cuda_counts_after_free(wk_cuda_counts c, int64_t size, int64_t returned) {
    c.allocated -= size;
    c.reserved -= returned;
    return c;
}

#endif
