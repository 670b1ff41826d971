/* The host-settable parts of the process: the allocator of CPU tensor memory
 * and the log callback (wick.h, "embedding in a host"); both may change while
 * other threads run ops. And wick_empty_cache, which reaches the CPU backend's
 * cache through its table. */
#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/sysinfo.h>
#endif

/* ---- allocator ----
 * Safe to change while other threads run: every block of tensor memory is
 * counted from its allocation to its free (`blocks`), and wick_set_allocator
 * swaps only while that count is 0, with the SWITCHING bit holding off new
 * allocations during the swap. So each block is freed by the allocator that
 * made it, and a host sees the change all at once. */

static void *(*host_alloc)(size_t, void *); /* atomic accesses */
static void (*host_free)(void *, size_t, void *);
static void *host_ud;
static int64_t live_storages; /* atomic: storages of every device, alive now (for the message) */
static int64_t blocks;        /* atomic: live blocks from wk_malloc*, plus SWITCHING during a swap */
#define SWITCHING ((int64_t)1 << 62)
static pthread_mutex_t switch_lock = PTHREAD_MUTEX_INITIALIZER; /* one wick_set_allocator at a time */

void wk_storage_born(void) { __atomic_add_fetch(&live_storages, 1, __ATOMIC_RELAXED); }
void wk_storage_died(void) { __atomic_sub_fetch(&live_storages, 1, __ATOMIC_RELAXED); }

int wk_host_allocator(void) { return __atomic_load_n(&host_alloc, __ATOMIC_ACQUIRE) != NULL; }

/* Counts a block about to be allocated; waits while an allocator swap runs. */
static void block_enter(void) {
    while (__atomic_add_fetch(&blocks, 1, __ATOMIC_ACQUIRE) & SWITCHING) {
        __atomic_sub_fetch(&blocks, 1, __ATOMIC_RELEASE);
        sched_yield();
    }
}

static void block_leave(void) { __atomic_sub_fetch(&blocks, 1, __ATOMIC_RELEASE); }

/* The largest block the default allocator grants: the machine's RAM plus swap.
 * Where Linux overcommits always (vm.overcommit_memory = 1, as on some VMs),
 * malloc grants any size and the process is killed once it touches more than
 * there is; a block larger than all the memory there is can never be used, so
 * it is refused as out of memory, as on a machine that does not overcommit. */
static size_t memory_ceiling(void) {
    static size_t ceiling; /* atomic; 0 until computed */
    size_t c = __atomic_load_n(&ceiling, __ATOMIC_RELAXED);
    if (c) return c;
    c = SIZE_MAX;
#ifdef __linux__
    struct sysinfo si;
    unsigned long long total;
    if (sysinfo(&si) == 0 && si.totalram &&
        !__builtin_mul_overflow((unsigned long long)si.totalram + si.totalswap, (unsigned long long)si.mem_unit, &total) &&
        total < SIZE_MAX)
        c = (size_t)total;
#endif
    __atomic_store_n(&ceiling, c, __ATOMIC_RELAXED);
    return c;
}

void *wk_malloc_aligned(size_t nbytes, size_t align) {
    if (!nbytes) nbytes = 1;
    void *(*host)(size_t, void *) = __atomic_load_n(&host_alloc, __ATOMIC_RELAXED);
    if (!host && nbytes > memory_ceiling()) return NULL; /* a host's allocator decides for itself */
    block_enter();
    void *(*alloc)(size_t, void *) = __atomic_load_n(&host_alloc, __ATOMIC_RELAXED);
    void *p = NULL;
    if (alloc) p = alloc(nbytes, __atomic_load_n(&host_ud, __ATOMIC_RELAXED));
    else if (align <= sizeof(void *)) p = malloc(nbytes);
    else if (posix_memalign(&p, align, nbytes) != 0) p = NULL;
    if (!p) block_leave();
    return p;
}

void *wk_malloc(size_t nbytes) { return wk_malloc_aligned(nbytes, 0); }

void wk_free(void *p, size_t nbytes) {
    if (!p) return;
    /* this block is counted: no swap can run until it is gone */
    void (*release)(void *, size_t, void *) = __atomic_load_n(&host_free, __ATOMIC_RELAXED);
    if (release) release(p, nbytes ? nbytes : 1, __atomic_load_n(&host_ud, __ATOMIC_RELAXED));
    else free(p);
    block_leave();
}

void wick_empty_cache(void) {
    const wick_backend *cpu = wk_backend_for(wick_cpu());
    if (cpu && cpu->empty_cache) cpu->empty_cache();
}

wick_status wick_set_allocator(void *(*alloc)(size_t nbytes, void *ud), void (*release)(void *p, size_t nbytes, void *ud),
                               void *ud) {
    if ((alloc == NULL) != (release == NULL))
        return wick_fail(WICK_ERR_ARGUMENT, "wick_set_allocator: give both functions, or neither (the default)");
    wick_empty_cache(); /* cached blocks came from the current allocator */
    pthread_mutex_lock(&switch_lock);
    int64_t zero = 0;
    if (!__atomic_compare_exchange_n(&blocks, &zero, SWITCHING, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        pthread_mutex_unlock(&switch_lock);
        return wick_fail(WICK_ERR_ARGUMENT,
                         "wick_set_allocator: %lld tensor storage(s) (%lld blocks of tensor memory) are still alive; "
                         "set the allocator before the first tensor is created (or after every tensor has been "
                         "released)",
                         (long long)__atomic_load_n(&live_storages, __ATOMIC_RELAXED),
                         (long long)(zero & ~SWITCHING));
    }
    __atomic_store_n(&host_ud, ud, __ATOMIC_RELAXED);
    __atomic_store_n(&host_free, release, __ATOMIC_RELAXED);
    __atomic_store_n(&host_alloc, alloc, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&blocks, SWITCHING, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&switch_lock);
    return WICK_OK;
}

/* ---- statistics (wick_get_memory_stats) ----
 * Two locked adds per allocation and two per free; current = made - freed. */
static int64_t st_alloc_bytes, st_freed_bytes, st_allocs, st_frees, st_peak, st_retries, st_ooms; /* atomic */

void wk_memstat_alloc(int64_t nbytes) {
    int64_t made = __atomic_add_fetch(&st_alloc_bytes, nbytes, __ATOMIC_RELAXED);
    __atomic_add_fetch(&st_allocs, 1, __ATOMIC_RELAXED);
    int64_t cur = made - __atomic_load_n(&st_freed_bytes, __ATOMIC_RELAXED);
    int64_t peak = __atomic_load_n(&st_peak, __ATOMIC_RELAXED);
    while (cur > peak && !__atomic_compare_exchange_n(&st_peak, &peak, cur, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void wk_memstat_free(int64_t nbytes) {
    __atomic_add_fetch(&st_freed_bytes, nbytes, __ATOMIC_RELAXED);
    __atomic_add_fetch(&st_frees, 1, __ATOMIC_RELAXED);
}

int64_t wk_memstat_allocated_total(void) { return __atomic_load_n(&st_alloc_bytes, __ATOMIC_RELAXED); }

void wk_memstat_retry(void) { __atomic_add_fetch(&st_retries, 1, __ATOMIC_RELAXED); }
void wk_memstat_oom(void) { __atomic_add_fetch(&st_ooms, 1, __ATOMIC_RELAXED); }

void wick_get_memory_stats(wick_memory_stats *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    out->freed_bytes_total = __atomic_load_n(&st_freed_bytes, __ATOMIC_RELAXED);
    out->frees_total = __atomic_load_n(&st_frees, __ATOMIC_RELAXED);
    out->allocated_bytes_total = __atomic_load_n(&st_alloc_bytes, __ATOMIC_RELAXED);
    out->allocations_total = __atomic_load_n(&st_allocs, __ATOMIC_RELAXED);
    out->allocated_bytes = out->allocated_bytes_total - out->freed_bytes_total;
    out->allocations = out->allocations_total - out->frees_total;
    out->allocated_bytes_peak = __atomic_load_n(&st_peak, __ATOMIC_RELAXED);
    if (out->allocated_bytes_peak < out->allocated_bytes) out->allocated_bytes_peak = out->allocated_bytes;
    const wick_backend *cpu = wk_backend_for(wick_cpu());
    if (cpu && cpu->cache_size) cpu->cache_size(&out->cached_bytes, &out->cached_blocks);
    out->reserved_bytes = out->allocated_bytes + out->cached_bytes;
    out->num_alloc_retries = __atomic_load_n(&st_retries, __ATOMIC_RELAXED);
    out->num_ooms = __atomic_load_n(&st_ooms, __ATOMIC_RELAXED);
}

void wick_reset_peak_memory_stats(void) {
    int64_t cur = __atomic_load_n(&st_alloc_bytes, __ATOMIC_RELAXED) - __atomic_load_n(&st_freed_bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&st_peak, cur, __ATOMIC_RELAXED);
}

/* ---- log ----
 * Safe to change while other threads log: calls hold the read side of
 * log_lock, wick_set_log the write side, so the callback and its user data
 * change together, and once wick_set_log returns the old callback is never
 * called again (the host may free its user data). */

static pthread_rwlock_t log_lock = PTHREAD_RWLOCK_INITIALIZER;
static void (*log_fn)(int, const char *, void *);
static void *log_ud;

void wick_set_log(void (*log)(int level, const char *msg, void *ud), void *ud) {
    pthread_rwlock_wrlock(&log_lock);
    log_fn = log;
    log_ud = ud;
    pthread_rwlock_unlock(&log_lock);
}

int wick_has_log(void) {
    pthread_rwlock_rdlock(&log_lock);
    int has = log_fn != NULL;
    pthread_rwlock_unlock(&log_lock);
    return has;
}

void wick_log(int level, const char *msg) {
    pthread_rwlock_rdlock(&log_lock);
    if (log_fn) log_fn(level, msg ? msg : "", log_ud);
    else fprintf(stderr, "wick: %s\n", msg ? msg : "");
    pthread_rwlock_unlock(&log_lock);
}

void wk_logf(int level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    wick_log(level, msg);
}
