/* Collector pacing (wl_account in args.c), as pure functions so that
 * tests/test_gc_pace.c checks the decisions without Lua or a GPU.
 *
 * A tensor's userdata is 8 bytes, so Lua alone would not notice gigabytes held
 * by dead tensors. A state collects when wick's CPU memory, or the CUDA
 * allocator's bytes in use (all GPUs), has grown past its threshold. After a
 * collection each threshold is set from what is still live: CPU twice the live
 * bytes, GPU one and a half times (a GPU is smaller and cannot swap; a failed
 * GPU allocation still collects and retries, see wk_alloc_or_collect), both at
 * least WL_GC_MIN. The memory counts are per process; the thresholds are per
 * state (state.c), so states on other threads neither race on them nor reset
 * each other's. */
#ifndef WICK_LUA_GC_PACE_H
#define WICK_LUA_GC_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define WL_GC_MIN ((int64_t)256 << 20)

typedef struct wl_gc_pace {
    int64_t cpu_threshold, gpu_threshold;
} wl_gc_pace;

static inline wl_gc_pace wl_gc_pace_new(void) {
    wl_gc_pace p = {WL_GC_MIN, WL_GC_MIN};
    return p;
}

/* Whether to collect now, given the bytes in use. */
static inline bool wl_gc_due(const wl_gc_pace *p, int64_t cpu_bytes, int64_t gpu_bytes) {
    return cpu_bytes > p->cpu_threshold || gpu_bytes > p->gpu_threshold;
}

/* The thresholds after a collection that left these bytes live. */
static inline void wl_gc_collected(wl_gc_pace *p, int64_t cpu_live, int64_t gpu_live) {
    int64_t cpu = cpu_live > INT64_MAX / 2 ? INT64_MAX : cpu_live * 2;
    int64_t gpu = gpu_live > INT64_MAX / 3 * 2 ? INT64_MAX : gpu_live + gpu_live / 2;
    p->cpu_threshold = cpu > WL_GC_MIN ? cpu : WL_GC_MIN;
    p->gpu_threshold = gpu > WL_GC_MIN ? gpu : WL_GC_MIN;
}

#endif
