/* The profiler's recording (wick.h "profiler"): while it runs, every op the
 * binding calls opens and closes an event in a buffer made at start, with the
 * monotonic clock read at each end and the CPU bytes allocated in between; no
 * allocation per event. Off, the callers test one flag (wick_profiling). One
 * thread records: the one that started it (other threads' ops are not seen).
 * The tables and the trace are made from the events in Lua
 * (lua/wick/profiler.lua). */
#include "cuda_api.h"
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define MAX_DEPTH 256
#define MAX_GPUS 64 /* GPUs timed in one profile (indexes above are not timed) */

/* An event's CUDA events (wick_profiler_time_device) */
typedef struct {
    void *start, *end;
    int device;
} gpu_span;

int wick_profiling; /* read by every op's caller: written only by start/stop */

static struct {
    wick_profiler_event *events;
    int64_t cap, count, dropped;
    int64_t *shapes;
    int64_t shapes_cap, shapes_count;
    bool record_shapes;
    const void *owner; /* the address of the recording thread's `tl_self` */
    int32_t stack[MAX_DEPTH];
    const void *frames[MAX_DEPTH];
    int depth;
    gpu_span *gpu;            /* cap entries, made at the first timed event */
    void *gpu_ref[MAX_GPUS];  /* per GPU: an event the host waited for ... */
    int64_t gpu_ref_ns[MAX_GPUS]; /* ... and the monotonic time just after */
} P;

static _Thread_local char tl_self;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- names: interned for the life of the process (a name is shared by all
 * the events of its op, and stays valid after the Lua state is gone) ---- */

#define NAME_BUCKETS 1024
typedef struct name_node {
    struct name_node *next;
    char text[];
} name_node;
static name_node *names[NAME_BUCKETS];
static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;

const char *wick_profiler_intern(const char *name) {
    if (!name) name = "?";
    uint32_t h = 2166136261u;
    for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 16777619u;
    size_t len = strlen(name);
    pthread_mutex_lock(&names_lock);
    name_node *n = names[h % NAME_BUCKETS];
    while (n && strcmp(n->text, name) != 0) n = n->next;
    if (!n && (n = malloc(sizeof *n + len + 1))) {
        memcpy(n->text, name, len + 1);
        n->next = names[h % NAME_BUCKETS];
        names[h % NAME_BUCKETS] = n;
    }
    pthread_mutex_unlock(&names_lock);
    return n ? n->text : "?";
}

/* ---- start / stop / read ---- */

wick_status wick_profiler_start(int64_t max_events, int record_shapes) {
    if (max_events <= 0 || max_events > ((int64_t)1 << 28))
        return wick_fail(WICK_ERR_ARGUMENT, "profiler: max_events must be in [1, 2^28], got %lld",
                         (long long)max_events);
    if (__atomic_load_n(&wick_profiling, __ATOMIC_RELAXED))
        return wick_fail(WICK_ERR_ARGUMENT, "profiler: a profile is already being recorded (profiles do not nest)");
    wick_profiler_event *ev = malloc(sizeof *ev * (size_t)max_events);
    int64_t shapes_cap = record_shapes ? max_events * 8 : 0;
    int64_t *shapes = shapes_cap ? malloc(sizeof *shapes * (size_t)shapes_cap) : NULL;
    if (!ev || (shapes_cap && !shapes)) {
        free(ev);
        free(shapes);
        return wick_fail(WICK_ERR_OOM, "profiler: out of memory for %lld events", (long long)max_events);
    }
    free(P.events);
    free(P.shapes);
    free(P.gpu);
    P.gpu = NULL;
    P.events = ev, P.cap = max_events, P.count = 0, P.dropped = 0;
    P.shapes = shapes, P.shapes_cap = shapes_cap, P.shapes_count = 0;
    P.record_shapes = record_shapes != 0;
    P.owner = &tl_self;
    P.depth = 0;
    __atomic_store_n(&wick_profiling, 1, __ATOMIC_RELEASE);
    return WICK_OK;
}

/* Closes the innermost open event at time t: its bytes become those allocated
 * since it opened. */
static void close_top(int64_t t) {
    int32_t i = P.stack[--P.depth];
    wick_profiler_event *e = &P.events[i];
    e->end_ns = t;
    e->bytes = wk_memstat_allocated_total() - e->bytes;
    gpu_span *g = P.gpu ? &P.gpu[i] : NULL;
    if (g && g->start && !g->end && wk_gpu_timing_event_record(g->device, "wick.profiler", &g->end)) g->end = NULL;
}

/* The GPU times of the events timed on a device: each event's span, placed on
 * the host clock through the device's reference event; then every CUDA event
 * is destroyed. */
static void resolve_gpu_times(void) {
    for (int64_t i = 0; P.gpu && i < P.count; i++) {
        gpu_span *g = &P.gpu[i];
        float at = 0, ms = 0;
        if (g->start && g->end && !wk_gpu_event_elapsed(g->start, g->end, g->device, "wick.profiler", &ms) &&
            !wk_gpu_event_elapsed(P.gpu_ref[g->device], g->start, g->device, "wick.profiler", &at)) {
            P.events[i].device_ns = (int64_t)((double)ms * 1e6);
            P.events[i].device_start_ns = P.gpu_ref_ns[g->device] + (int64_t)((double)at * 1e6);
        }
        wk_gpu_event_destroy(g->start);
        wk_gpu_event_destroy(g->end);
        g->start = g->end = NULL;
    }
    for (int d = 0; d < MAX_GPUS; d++) {
        wk_gpu_event_destroy(P.gpu_ref[d]);
        P.gpu_ref[d] = NULL;
    }
}

void wick_profiler_stop(void) {
    if (!__atomic_load_n(&wick_profiling, __ATOMIC_RELAXED) || P.owner != &tl_self) return;
    int64_t t = now_ns();
    while (P.depth > 0) close_top(t); /* ranges left open by an error */
    __atomic_store_n(&wick_profiling, 0, __ATOMIC_RELEASE);
    resolve_gpu_times();
}

int64_t wick_profiler_event_count(int64_t *dropped) {
    if (dropped) *dropped = P.dropped;
    return P.count;
}

const wick_profiler_event *wick_profiler_events(void) { return P.events; }
const int64_t *wick_profiler_shapes(void) { return P.shapes; }

/* ---- recording ---- */

int wick_profiler_records_shapes(void) { return wick_profiling && P.record_shapes; }

int64_t wick_profiler_begin(const char *name, int32_t device, const void *frame) {
    if (!__atomic_load_n(&wick_profiling, __ATOMIC_RELAXED) || P.owner != &tl_self) return -1;
    int64_t t = now_ns();
    /* an op whose C frame is at or below this one's was left by an error
     * (longjmp or unwinding past its end): close it now */
    while (frame && P.depth > 0 && P.frames[P.depth - 1] && (uintptr_t)P.frames[P.depth - 1] <= (uintptr_t)frame)
        close_top(t);
    if (P.count == P.cap || P.depth == MAX_DEPTH) {
        P.dropped++;
        return -1;
    }
    int64_t i = P.count++;
    wick_profiler_event *e = &P.events[i];
    e->name = name;
    e->start_ns = t;
    e->end_ns = 0;
    e->bytes = wk_memstat_allocated_total();
    e->parent = P.depth ? P.stack[P.depth - 1] : -1;
    e->device = device;
    e->shapes = P.shapes_count;
    e->nshapes = 0;
    e->device_start_ns = 0;
    e->device_ns = -1;
    if (P.gpu) P.gpu[i] = (gpu_span){NULL, NULL, -1};
    P.stack[P.depth] = (int32_t)i;
    P.frames[P.depth++] = frame;
    return i;
}

void wick_profiler_shape(int64_t event, int ndim, const int64_t *sizes) {
    if (event < 0 || event >= P.count || !P.record_shapes || ndim < -1 || ndim > WICK_MAX_DIMS) return;
    int n = ndim < 0 ? 0 : ndim;
    if (P.shapes_count + 1 + n > P.shapes_cap || event != P.count - 1) return;
    P.shapes[P.shapes_count++] = ndim;
    for (int k = 0; k < n; k++) P.shapes[P.shapes_count++] = sizes[k];
    P.events[event].nshapes++;
}

void wick_profiler_end(int64_t event) {
    if (event < 0 || !__atomic_load_n(&wick_profiling, __ATOMIC_RELAXED) || P.owner != &tl_self) return;
    int64_t t = now_ns();
    /* events opened inside it and never closed (errors) end with it */
    while (P.depth > 0 && P.stack[P.depth - 1] != event) close_top(t);
    if (P.depth > 0) close_top(t);
}

/* The first GPU event of a device in this profile: a reference event the host
 * waits for, so that its GPU time is (about) the host time just after. */
static bool gpu_reference(int d) {
    if (P.gpu_ref[d]) return true;
    float ms;
    if (wk_gpu_timing_event_record(d, "wick.profiler", &P.gpu_ref[d])) return false;
    if (wk_gpu_event_elapsed(P.gpu_ref[d], P.gpu_ref[d], d, "wick.profiler", &ms)) {
        wk_gpu_event_destroy(P.gpu_ref[d]);
        P.gpu_ref[d] = NULL;
        return false;
    }
    P.gpu_ref_ns[d] = now_ns();
    return true;
}

void wick_profiler_time_device(int64_t event, wick_device device) {
    if (event < 0 || event >= P.count || device.type != WICK_CUDA || !__atomic_load_n(&wick_profiling, __ATOMIC_RELAXED) ||
        P.owner != &tl_self)
        return;
    int d = device.index < 0 ? 0 : device.index;
    if (d >= MAX_GPUS) return;
    if (!P.gpu && !(P.gpu = calloc((size_t)P.cap, sizeof *P.gpu))) return;
    gpu_span *g = &P.gpu[event];
    if (g->start || !gpu_reference(d)) return;
    /* the reference's wait is not the op's: its begin moves past it */
    P.events[event].start_ns = now_ns();
    if (wk_gpu_timing_event_record(d, "wick.profiler", &g->start)) g->start = NULL;
    g->device = d;
}
