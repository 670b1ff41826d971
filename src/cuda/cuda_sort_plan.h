/* The launch plan of the CUDA sort (cuda_sort.cu), in plain C so that it is
 * built and tested without CUDA (core._sort_plan, spec/ops_spec.lua).
 *
 * A line of n keys is padded to the next power of two and sorted by a bitonic
 * network over (key, position) pairs, which makes it stable. Lines whose padded
 * length fits WK_SORT_SHARED_MAX are sorted by one block each in shared memory
 * (one thread per compare-exchange pair); longer lines run the same network in
 * global memory, one launch per pass (`passes` of them). */
#ifndef WICK_CUDA_SORT_PLAN_H
#define WICK_CUDA_SORT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define WK_SORT_SHARED_MAX 2048 /* keys per line sorted in shared memory (1024 threads) */

typedef struct wk_sort_plan {
    int shared;     /* 1: one block per line in shared memory */
    int64_t padded; /* the line's length rounded up to a power of two (at least 1) */
    int threads;    /* threads per block (shared) */
    size_t smem;    /* shared-memory bytes per block (shared) */
    int64_t passes; /* compare-exchange passes of the network: log2(p) (log2(p) + 1) / 2 */
} wk_sort_plan;

static inline wk_sort_plan wk_sort_plan_for(int64_t n, size_t key_bytes) {
    wk_sort_plan p = {0, 1, 1, 0, 0};
    int log2 = 0;
    while (p.padded < n) p.padded *= 2, log2++;
    p.passes = (int64_t)log2 * (log2 + 1) / 2;
    p.shared = p.padded <= WK_SORT_SHARED_MAX;
    if (p.shared) {
        int64_t t = p.padded / 2;
        p.threads = (int)(t < 32 ? 32 : t);
        p.smem = (size_t)p.padded * (key_bytes + sizeof(int64_t));
    }
    return p;
}

#endif
