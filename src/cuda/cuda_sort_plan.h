/* The launch plan of the CUDA sort (cuda_sort.cu), in plain C so that it is
 * built and tested without CUDA (tests/test_sort_plan.c).
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

/* The scan's kernel: one thread per line when lines are short and many (a
 * block of 256 would idle), else one block per line (WK_SCAN_BLOCK). */
#define WK_SCAN_THREAD_MAX_N 64
enum { WK_SCAN_THREAD = 0, WK_SCAN_BLOCK = 1 };
static inline int wk_scan_plan(int64_t n, int64_t lines) {
    return n <= WK_SCAN_THREAD_MAX_N && lines >= 1024 ? WK_SCAN_THREAD : WK_SCAN_BLOCK;
}

/* ---- the network itself, shared by the GPU kernels and a CPU check ---- */
#ifdef __CUDACC__
#define WK_SORT_HD __host__ __device__ __forceinline__
#else
#define WK_SORT_HD static inline
#endif

/* ascending "a before b" with NaN last (x != x is false for integers) */
#define WK_KEY_BEFORE(a, b) ((a) < (b) || ((b) != (b) && (a) == (a)))
/* (ka, ia) goes before (kb, ib): positions >= n are padding and go last; equal
 * keys by position, so the order is total and the sort stable */
#define WK_PAIR_BEFORE(ka, ia, kb, ib, n, desc)                                                     \
    ((ia) >= (n)   ? 0                                                                              \
     : (ib) >= (n) ? 1                                                                              \
     : ((desc) ? WK_KEY_BEFORE(kb, ka) : WK_KEY_BEFORE(ka, kb)) ? 1                                 \
     : ((desc) ? WK_KEY_BEFORE(ka, kb) : WK_KEY_BEFORE(kb, ka)) ? 0                                 \
                                                                : (ia) < (ib))

/* Compare-exchange t (0 <= t < P/2) of pass (k, j): it orders positions i < l,
 * ascending when up (else descending). */
WK_SORT_HD void wk_bitonic_pair(int64_t t, int64_t k, int64_t j, int64_t *i, int64_t *l, int *up) {
    *i = (t / j) * 2 * j + (t % j);
    *l = *i + j;
    *up = (*i & k) == 0;
}

/* The whole network on the CPU over P = padded keys (positions 0..P-1 on
 * entry): what each GPU block does, for checking it where there is no GPU. */
/* One compare-exchange of the network: pair t of pass (k, j) over keys of type T
 * and their positions. Written once for the GPU kernels (cuda_sort.cu) and the
 * CPU run of the whole network below, which tests/test_sort_plan.c tests. */
#define WK_BITONIC_EXCHANGE(T, key, pos, t, k, j, n, desc)                                            \
    do {                                                                                              \
        int64_t i_, l_;                                                                               \
        int up_;                                                                                      \
        wk_bitonic_pair(t, k, j, &i_, &l_, &up_);                                                     \
        if (up_ ? WK_PAIR_BEFORE(key[l_], pos[l_], key[i_], pos[i_], n, desc)                         \
                : WK_PAIR_BEFORE(key[i_], pos[i_], key[l_], pos[l_], n, desc)) {                      \
            T tk_ = key[i_];                                                                          \
            key[i_] = key[l_], key[l_] = tk_;                                                         \
            int64_t tp_ = pos[i_];                                                                    \
            pos[i_] = pos[l_], pos[l_] = tp_;                                                         \
        }                                                                                             \
    } while (0)

static inline void wk_bitonic_sort_f64(double *key, int64_t *pos, int64_t P, int64_t n, int desc) {
    for (int64_t k = 2; k <= P; k <<= 1)
        for (int64_t j = k >> 1; j > 0; j >>= 1)
            for (int64_t t = 0; t < P / 2; t++) WK_BITONIC_EXCHANGE(double, key, pos, t, k, j, n, desc);
}

#endif
