/* The host logic of the CUDA backend's waits (see cuda_host.h): the device
 * error record's message, the counting of waits and its hook, and the
 * per-thread batches of copies. Plain C, in every build: without CUDA nothing
 * waits, so the counts stay 0 and batches are empty. */
#include "cuda_host.h"
#include "../core/cuda_api.h" /* what of this file the core calls */

#include <inttypes.h>
#include <pthread.h>
#include <string.h>

#include "../core/internal.h"

/* ---- the device error record ---- */

static const char *const op_names[WK_DEVERR_OP_COUNT] = {
    [WK_DEVERR_NONE] = "an indexing op",  [WK_DEVERR_INDEX_SELECT] = "index_select",
    [WK_DEVERR_GATHER] = "gather",        [WK_DEVERR_SCATTER] = "scatter",
    [WK_DEVERR_SCATTER_ADD] = "scatter_add", [WK_DEVERR_INDEX_ADD] = "index_add",
};

const char *wk_device_error_op_name(int32_t op) {
    return op > WK_DEVERR_NONE && op < WK_DEVERR_OP_COUNT ? op_names[op] : op_names[WK_DEVERR_NONE];
}

wick_status wk_device_error_take(wk_device_error *rec, int device, const char *at) {
    if (!rec->flag) return WICK_OK;
    wk_device_error e = *rec;
    memset(rec, 0, sizeof *rec);
    const char *op = wk_device_error_op_name(e.op);
    /* the CPU's words (1-based value and dimension, wrapping as it does), then where and when */
    return wick_fail(WICK_ERR_INDEX,
                     "%s: index %" PRId64 " is out of bounds for dimension %d with size %" PRId64
                     " (detected on cuda:%d by a device-side check and reported asynchronously at the next "
                     "wait for the GPU, a %s: the failing call was an earlier %s, not necessarily the one "
                     "that raised this error)",
                     op, (int64_t)((uint64_t)e.value + 1), (int)e.dim + 1, e.size, device, at ? at : "wait",
                     op);
}

/* ---- counting waits ---- */

static const char *const reason_names[WK_SYNC_REASON_COUNT] = {
#define WK_SYNC_NAME(id, text) [id] = text,
    WK_SYNC_REASONS(WK_SYNC_NAME)
#undef WK_SYNC_NAME
};

static int64_t sync_counts[WK_SYNC_MAX_DEVICES][WK_SYNC_REASON_COUNT];

typedef struct {
    wick_cuda_sync_hook fn;
    void *ud;
} hook_slot;
/* replaced as a whole under this lock; read under it too (waits are not hot
 * enough for the lock to matter next to the wait itself) */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;
static hook_slot hook;

void wk_sync_note(int device, wk_sync_reason reason) {
    if (device < 0 || device >= WK_SYNC_MAX_DEVICES || (unsigned)reason >= WK_SYNC_REASON_COUNT) return;
    __atomic_fetch_add(&sync_counts[device][reason], 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&hook_lock);
    hook_slot h = hook;
    pthread_mutex_unlock(&hook_lock);
    if (h.fn) h.fn(device, reason_names[reason], h.ud);
}

const char *wk_cuda_sync_reason_name(int reason) {
    return reason >= 0 && reason < WK_SYNC_REASON_COUNT ? reason_names[reason] : NULL;
}

int64_t wk_cuda_sync_count_for(int device, int reason) {
    if (device >= WK_SYNC_MAX_DEVICES || reason >= WK_SYNC_REASON_COUNT) return 0;
    int64_t total = 0;
    for (int d = device < 0 ? 0 : device; d < (device < 0 ? WK_SYNC_MAX_DEVICES : device + 1); d++)
        for (int r = reason < 0 ? 0 : reason; r < (reason < 0 ? WK_SYNC_REASON_COUNT : reason + 1); r++)
            total += __atomic_load_n(&sync_counts[d][r], __ATOMIC_RELAXED);
    return total;
}

void wk_cuda_set_sync_hook(wick_cuda_sync_hook fn, void *ud) {
    pthread_mutex_lock(&hook_lock);
    hook = (hook_slot){fn, fn ? ud : NULL};
    pthread_mutex_unlock(&hook_lock);
}

/* ---- batches of copies ---- */

static __thread int batch_depth;
static __thread uint64_t batch_devices; /* a bit per device with deferred copies */

void wk_cuda_begin_batch(void) { batch_depth++; }

int wk_batch_depth(void) { return batch_depth; }

int wk_batch_defer(int device) {
    if (batch_depth <= 0 || device < 0 || device >= WK_SYNC_MAX_DEVICES) return 0;
    batch_devices |= (uint64_t)1 << device;
    return 1;
}

int wk_batch_close(uint64_t *devices) {
    *devices = 0;
    if (batch_depth <= 0) return -1;
    if (--batch_depth > 0) return 0;
    *devices = batch_devices;
    batch_devices = 0;
    return 0;
}

wick_status wk_cuda_end_batch(void) {
    uint64_t devices;
    if (wk_batch_close(&devices))
        return wick_fail(WICK_ERR_ARGUMENT, "wick_cuda_end_batch: no batch is open (begin_batch was not called)");
#ifdef WICK_WITH_CUDA
    if (devices) return wk_cuda_wait_devices(devices);
#endif
    return WICK_OK;
}
