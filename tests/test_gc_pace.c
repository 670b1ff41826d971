/* The Lua binding's collector pacing (src/lua/gc_pace.h), without Lua or a GPU:
 * when a state collects, given the CPU and GPU bytes in use, and the thresholds
 * each collection leaves. */
#include "../src/lua/gc_pace.h"
#include "check.h"

#include <stdint.h>

#define MIB ((int64_t)1 << 20)
#define GIB ((int64_t)1 << 30)

int main(void) {
    wl_gc_pace p = wl_gc_pace_new();
    CHECK(p.cpu_threshold == WL_GC_CPU_GARBAGE && p.gpu_threshold == WL_GC_MIN);
    /* nothing in use, or up to the threshold: no collection */
    CHECK(!wl_gc_due(&p, 0, 0));
    CHECK(!wl_gc_due(&p, WL_GC_CPU_GARBAGE, WL_GC_MIN));
    /* either kind of memory past its threshold collects */
    CHECK(wl_gc_due(&p, WL_GC_CPU_GARBAGE + 1, 0));
    CHECK(wl_gc_due(&p, 0, WL_GC_MIN + 1));
    /* dead GPU tensors with little CPU memory (a training loop on the GPU): the
     * GPU bytes alone trigger it, long before a 141 GB card fills */
    CHECK(wl_gc_due(&p, 10 * MIB, 300 * MIB));
    /* after a collection: CPU the live bytes plus as much garbage again, GPU one and a half times */
    wl_gc_collected(&p, 1 * GIB, 4 * GIB, 1 * MIB);
    CHECK(p.cpu_threshold == 2 * GIB);
    CHECK(p.gpu_threshold == 6 * GIB);
    CHECK(!wl_gc_due(&p, 2 * GIB, 6 * GIB));
    CHECK(wl_gc_due(&p, 2 * GIB, 6 * GIB + 1));
    CHECK(wl_gc_due(&p, 2 * GIB + 1, 0));
    /* little live: 32 MiB of garbage at least (temporaries reused while cached) */
    wl_gc_collected(&p, 0, 1 * MIB, 1 * MIB);
    CHECK(p.cpu_threshold == WL_GC_CPU_GARBAGE && p.gpu_threshold == WL_GC_MIN);
    wl_gc_collected(&p, 5 * MIB, 0, 0);
    CHECK(p.cpu_threshold == 5 * MIB + WL_GC_CPU_GARBAGE);
    /* a large Lua heap (a dataset in tables): four times its size between collections */
    wl_gc_collected(&p, 10 * MIB, 0, 100 * MIB);
    CHECK(p.cpu_threshold == 10 * MIB + 400 * MIB);
    /* and grow without overflow from huge counts */
    wl_gc_collected(&p, INT64_MAX / 2 + 1, INT64_MAX - 1, INT64_MAX / 2);
    CHECK(p.cpu_threshold == INT64_MAX && p.gpu_threshold == INT64_MAX);
    CHECK(!wl_gc_due(&p, INT64_MAX, INT64_MAX));
    /* a state's pacing is its own: a fresh one starts from the floor */
    wl_gc_pace q = wl_gc_pace_new();
    CHECK(wl_gc_due(&q, 0, 1 * GIB) && !wl_gc_due(&p, 0, 1 * GIB));
    printf("%d checks, %d failed\n", checks, failures);
    return failures != 0;
}
