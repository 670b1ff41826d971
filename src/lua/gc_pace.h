/* Collector pacing (wl_account in args.c), as pure functions so that
 * tests/test_gc_pace.c checks the decisions without Lua or a GPU.
 *
 * A tensor's userdata is 8 bytes, so Lua alone would not notice gigabytes held
 * by dead tensors. A state collects when wick's CPU memory, or the CUDA
 * allocator's bytes in use (all GPUs), has grown past its threshold. After a
 * collection each threshold is set from what is still live. CPU: the live
 * bytes plus as much garbage again, at least WL_GC_CPU_GARBAGE (32 MiB: dead
 * temporaries come back to the allocator while their memory is still in the
 * cache, where a 256 MiB floor made every op write to cold memory: an
 * out-of-place add of 64K floats took 64 us, 23 us with it) and at least four
 * times the Lua heap (a full collection costs about the heap: its share stays
 * bounded when a script keeps a large heap). GPU: one and a half times the
 * live bytes, at least WL_GC_MIN (a GPU is smaller and cannot swap; a failed
 * GPU allocation still collects and retries, see wk_alloc_or_collect). The
 * memory counts are per process; the thresholds are per state (state.c), so
 * states on other threads neither race on them nor reset each other's. */
#ifndef WICK_LUA_GC_PACE_H
#define WICK_LUA_GC_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define WL_GC_MIN ((int64_t)256 << 20)
#define WL_GC_CPU_GARBAGE ((int64_t)32 << 20)

typedef struct wl_gc_pace {
    int64_t cpu_threshold, gpu_threshold;
} wl_gc_pace;

static inline wl_gc_pace wl_gc_pace_new(void) {
    wl_gc_pace p = {WL_GC_CPU_GARBAGE, WL_GC_MIN};
    return p;
}

/* Whether to collect now, given the bytes in use. */
static inline bool wl_gc_due(const wl_gc_pace *p, int64_t cpu_bytes, int64_t gpu_bytes) {
    return cpu_bytes > p->cpu_threshold || gpu_bytes > p->gpu_threshold;
}

/* The thresholds after a collection that left these bytes live, with a Lua
 * heap of lua_bytes. */
static inline void wl_gc_collected(wl_gc_pace *p, int64_t cpu_live, int64_t gpu_live, int64_t lua_bytes) {
    int64_t garbage = cpu_live > WL_GC_CPU_GARBAGE ? cpu_live : WL_GC_CPU_GARBAGE;
    if (lua_bytes > garbage / 4) garbage = lua_bytes > INT64_MAX / 4 ? INT64_MAX : lua_bytes * 4;
    p->cpu_threshold = cpu_live > INT64_MAX - garbage ? INT64_MAX : cpu_live + garbage;
    int64_t gpu = gpu_live > INT64_MAX / 3 * 2 ? INT64_MAX : gpu_live + gpu_live / 2;
    p->gpu_threshold = gpu > WL_GC_MIN ? gpu : WL_GC_MIN;
}

#endif
