/* The host-settable parts of the process: the allocator of CPU tensor memory
 * and the log callback (wick.h, "embedding in a host"). */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- allocator ---- */

static void *(*host_alloc)(size_t, void *);
static void (*host_free)(void *, size_t, void *);
static void *host_ud;
static int64_t live_storages; /* atomic: storages of every device, alive now */

void wk_storage_born(void) { __atomic_add_fetch(&live_storages, 1, __ATOMIC_RELAXED); }
void wk_storage_died(void) { __atomic_sub_fetch(&live_storages, 1, __ATOMIC_RELAXED); }

int wk_host_allocator(void) { return host_alloc != NULL; }

void *wk_malloc(size_t nbytes) {
    if (host_alloc) return host_alloc(nbytes ? nbytes : 1, host_ud);
    return malloc(nbytes ? nbytes : 1);
}

void wk_free(void *p, size_t nbytes) {
    if (!p) return;
    if (host_free) host_free(p, nbytes ? nbytes : 1, host_ud);
    else free(p);
}

wick_status wick_set_allocator(void *(*alloc)(size_t nbytes, void *ud), void (*release)(void *p, size_t nbytes, void *ud),
                               void *ud) {
    if ((alloc == NULL) != (release == NULL))
        return wick_fail(WICK_ERR_ARGUMENT, "wick_set_allocator: give both functions, or neither (the default)");
    int64_t live = __atomic_load_n(&live_storages, __ATOMIC_RELAXED);
    if (live != 0)
        return wick_fail(WICK_ERR_ARGUMENT,
                         "wick_set_allocator: %lld tensor storage(s) are still alive; set the allocator before the "
                         "first tensor is created (or after every tensor has been released)",
                         (long long)live);
    wick_empty_cache(); /* cached blocks came from the previous allocator */
    host_alloc = alloc;
    host_free = release;
    host_ud = ud;
    return WICK_OK;
}

/* ---- log ---- */

static void (*log_fn)(int, const char *, void *);
static void *log_ud;

void wick_set_log(void (*log)(int level, const char *msg, void *ud), void *ud) {
    log_ud = ud;
    __atomic_store_n(&log_fn, log, __ATOMIC_RELEASE);
}

int wick_has_log(void) { return __atomic_load_n(&log_fn, __ATOMIC_ACQUIRE) != NULL; }

void wick_log(int level, const char *msg) {
    void (*fn)(int, const char *, void *) = __atomic_load_n(&log_fn, __ATOMIC_ACQUIRE);
    if (fn) fn(level, msg ? msg : "", log_ud);
    else fprintf(stderr, "wick: %s\n", msg ? msg : "");
}

void wk_logf(int level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wick_log(level, msg);
}
