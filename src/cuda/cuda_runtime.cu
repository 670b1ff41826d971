/* The CUDA runtime of wick: which GPUs exist, each thread's current device, one
 * stream and one cuBLAS handle per device, the caching allocator and its
 * statistics, copies between the host and GPUs, pinned host memory, the TF32
 * switch, and the translation of CUDA and cuBLAS errors into wick's messages.
 *
 * Nothing here runs when the library loads: CUDA is first touched by the first
 * call that needs it (is_available, a tensor on "cuda", ...), so a CUDA build
 * starts as fast as a CPU-only one and runs on machines without a driver.
 * cuBLAS is not linked either but opened with dlopen on first use (see "cuBLAS,
 * loaded on first use" below): linking it costs every start of build/wick about
 * 0.2 s and 200 MB to map libcublasLt. */
#include "cuda.h"
#include "cuda_caching.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WK_CUDA_MAX_DEVICES 64

/* ---- the allocator's size classes ----
 * Requests up to 1 MiB are "small": rounded up to 512 bytes and carved out of
 * 2 MiB segments, so the many small tensors of a model (biases, scalars, loss
 * values) cost one cudaMalloc per 2 MiB instead of one each (cudaMalloc takes
 * tens of microseconds and cudaFree synchronizes the device). Larger requests
 * are rounded up to 2 MiB, the granularity at which the driver backs large
 * cudaMallocs with memory anyway, so the rounding costs no memory of its own
 * and makes sizes that differ by a few bytes share blocks. A freed block is
 * reused for a later request of its pool by best fit; when it is larger than
 * the request it is split and the rest stays free (never a big block for a
 * small tensor), and neighbours in one segment merge again when both are free.
 * Small and large requests never share segments, so small tensors cannot pin
 * down large segments. */
#define WK_SMALL_REQUEST ((size_t)1 << 20)
#define WK_SMALL_ROUND ((size_t)512)
#define WK_SMALL_SEGMENT ((size_t)2 << 20)
#define WK_LARGE_ROUND ((size_t)2 << 20)

/* A block of device memory: a whole cudaMalloc segment or a piece of one. */
typedef struct wk_block {
    char *ptr;
    size_t size;
    bool allocated;
    bool small;                     /* which pool it belongs to */
    struct wk_block *prev, *next;   /* neighbours in the same segment; both NULL: a whole segment */
    struct wk_block *hash_next;     /* chain in the table of live blocks */
} wk_block;

/* Free blocks of one pool, sorted by (size, address) for best fit. */
typedef struct {
    wk_block **items;
    size_t count, cap;
} block_set;

typedef struct {
    pthread_mutex_t lock; /* guards everything below */
    block_set free_small, free_large;
    wk_block **live; /* hash table of allocated blocks by address */
    size_t live_buckets, live_count;
    int64_t allocated, peak, reserved, peak_reserved; /* written under the lock, read atomically */
    cudaStream_t stream;               /* created on first use; read atomically */
    cublasHandle_t cublas;             /* idem */
    /* the device error record of the index kernels (cuda_host.h) and its host
       mirror (pinned), created on first use; read atomically */
    wk_device_error *error_record, *error_mirror;
} device_state;

static device_state devices[WK_CUDA_MAX_DEVICES];

/* ---- devices ---- */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int device_count; /* set once by probe() */
static int probed;       /* 1 after probe() ran: until then nothing can be cached */

/* Counts the GPUs. Any failure (no driver, a driver too old, no device) means
 * none: wick then runs on the CPU and says why only when a GPU is asked for. */
static void probe(void) {
    for (int i = 0; i < WK_CUDA_MAX_DEVICES; i++) pthread_mutex_init(&devices[i].lock, NULL);
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
    (void)cudaGetLastError(); /* the failure must not surface in a later check */
    device_count = n < 0 ? 0 : n > WK_CUDA_MAX_DEVICES ? WK_CUDA_MAX_DEVICES : n;
    __atomic_store_n(&probed, 1, __ATOMIC_RELEASE);
}

int wk_cuda_device_count(void) {
    pthread_once(&probe_once, probe);
    return device_count;
}

/* The calling thread's device, as wick sees it; CUDA's own current device is
 * set from it lazily, by wk_cuda_enter. */
static __thread int thread_device = 0;

#define NO_GPU_TEXT "no CUDA GPU is available (wick.cuda.is_available() is false)"

/* WICK_OK when `index` names a GPU of this machine; otherwise the error. */
static wick_status check_index(int index, const char *op) {
    int count = wk_cuda_device_count();
    if (index >= 0 && index < count) return WICK_OK;
    if (count == 0)
        return wick_fail(WICK_ERR_DEVICE,
                         "%s: invalid device ordinal %d: wick.cuda.device_count() is 0 (no CUDA GPU is "
                         "available: wick.cuda.is_available() is false)",
                         op, index);
    return wick_fail(WICK_ERR_DEVICE, "%s: invalid device ordinal %d: wick.cuda.device_count() is %d", op, index,
                     count);
}

wick_status wk_cuda_device_properties(int index, wick_cuda_properties *out) {
    memset(out, 0, sizeof *out);
    wick_status st = check_index(index, "wick.cuda.get_device_properties");
    if (st) return st;
    cudaDeviceProp p;
    st = wk_cuda_check(cudaGetDeviceProperties(&p, index), "wick.cuda.get_device_properties", index);
    if (st) return st;
    snprintf(out->name, sizeof out->name, "%s", p.name);
    out->major = p.major;
    out->minor = p.minor;
    out->total_memory = (int64_t)p.totalGlobalMem;
    out->multi_processor_count = p.multiProcessorCount;
    return WICK_OK;
}

/* -1 (or any negative index) means the calling thread's current device. */
static int resolve_index(int index) { return index < 0 ? thread_device : index; }

wick_status wk_cuda_current_device(int *index) {
    *index = thread_device;
    if (wk_cuda_device_count() == 0) return wick_fail(WICK_ERR_DEVICE, "current_device: " NO_GPU_TEXT);
    return WICK_OK;
}

wick_status wk_cuda_set_device(int index) {
    wick_status st = check_index(index, "wick.cuda.set_device");
    if (!st) thread_device = index; /* CUDA follows on the next op (wk_cuda_enter) */
    return st;
}

/* ---- errors ---- */

/* Errors after which the CUDA context is lost: every later call fails the same
 * way until the process ends (the list of the CUDA runtime's documentation). */
static bool is_sticky(cudaError_t err) {
    switch (err) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
#if CUDART_VERSION >= 12080
    case cudaErrorTensorMemoryLeak:
    case cudaErrorContained:
#endif
        return true;
    default:
        return false;
    }
}

/* "cuda:1", or "the host" for calls about host memory (device -1). */
static const char *where(int device, char *buf, size_t size) {
    if (device < 0) snprintf(buf, size, "the host");
    else snprintf(buf, size, "cuda:%d", device);
    return buf;
}

wick_status wk_cuda_check(cudaError_t err, const char *op, int device) {
    if (err == cudaSuccess) return WICK_OK;
    char at[32];
    const char *name = cudaGetErrorName(err), *text = cudaGetErrorString(err);
    if (is_sticky(err))
        return wick_fail(WICK_ERR_DEVICE,
                         "%s on %s failed: %s (%s); this CUDA error is sticky: the GPU context is unusable "
                         "until the process restarts",
                         op, where(device, at, sizeof at), text, name);
    (void)cudaGetLastError(); /* a recoverable error must not be reported again by the next check */
    if (err == cudaErrorMemoryAllocation)
        return wick_fail(WICK_ERR_OOM, "%s on %s failed: out of memory (%s)", op, where(device, at, sizeof at),
                         name);
    return wick_fail(WICK_ERR_DEVICE, "%s on %s failed: %s (%s)", op, where(device, at, sizeof at), text, name);
}

wick_status wk_cuda_check_launch(const char *op, int device) { return wk_cuda_check(cudaGetLastError(), op, device); }

static const char *cublas_text(cublasStatus_t status) {
    switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED: return "cuBLAS is not initialized (CUBLAS_STATUS_NOT_INITIALIZED)";
    case CUBLAS_STATUS_ALLOC_FAILED: return "out of memory (CUBLAS_STATUS_ALLOC_FAILED)";
    case CUBLAS_STATUS_INVALID_VALUE: return "invalid argument (CUBLAS_STATUS_INVALID_VALUE)";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "not supported by this GPU (CUBLAS_STATUS_ARCH_MISMATCH)";
    case CUBLAS_STATUS_MAPPING_ERROR: return "cannot access GPU memory (CUBLAS_STATUS_MAPPING_ERROR)";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to run (CUBLAS_STATUS_EXECUTION_FAILED)";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "internal cuBLAS error (CUBLAS_STATUS_INTERNAL_ERROR)";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "not supported (CUBLAS_STATUS_NOT_SUPPORTED)";
    case CUBLAS_STATUS_LICENSE_ERROR: return "license error (CUBLAS_STATUS_LICENSE_ERROR)";
    default: return "unknown cuBLAS status";
    }
}

wick_status wk_cublas_check(cublasStatus_t status, const char *op, int device) {
    if (status == CUBLAS_STATUS_SUCCESS) return WICK_OK;
    /* a failed run may come from a lost context: then CUDA's error says more */
    cudaError_t cuda_err = cudaPeekAtLastError();
    if (status == CUBLAS_STATUS_EXECUTION_FAILED && is_sticky(cuda_err)) return wk_cuda_check(cuda_err, op, device);
    char at[32];
    wick_status st = status == CUBLAS_STATUS_ALLOC_FAILED   ? WICK_ERR_OOM
                     : status == CUBLAS_STATUS_NOT_SUPPORTED ? WICK_ERR_UNSUPPORTED
                                                             : WICK_ERR_DEVICE;
    return wick_fail(st, "%s on %s failed: %s (cuBLAS status %d)", op, where(device, at, sizeof at),
                     cublas_text(status), (int)status);
}

/* ---- streams ---- */

/* The device's stream, created on first use; `device` must be CUDA's current
 * device. Non-blocking: it never waits for the legacy default stream, which
 * other libraries in the process may use. */
static wick_status device_stream(int device, const char *op, cudaStream_t *out) {
    device_state *d = &devices[device];
    if ((*out = __atomic_load_n(&d->stream, __ATOMIC_ACQUIRE))) return WICK_OK;
    wick_status st = WICK_OK;
    pthread_mutex_lock(&d->lock);
    cudaStream_t s = d->stream;
    if (!s && !(st = wk_cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), op, device)))
        __atomic_store_n(&d->stream, s, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&d->lock);
    *out = st ? NULL : s;
    return st;
}

/* Makes `device` CUDA's current device on this thread and gives its stream. */
static wick_status enter(int device, const char *op, cudaStream_t *stream) {
    *stream = NULL;
    wick_status st = check_index(device, op);
    if (st) return st;
    /* CUDA keeps its current device per thread, cheaply readable; setting it
     * only when it differs keeps the usual case (one GPU) free of work */
    int current = -1;
    cudaError_t err = cudaGetDevice(&current);
    if (err == cudaSuccess && current != device) err = cudaSetDevice(device);
    if ((st = wk_cuda_check(err, op, device))) return st;
    return device_stream(device, op, stream);
}

cudaStream_t wk_cuda_enter(int device, const char *op) {
    cudaStream_t s;
    return enter(device, op ? op : "cuda", &s) ? NULL : s;
}

/* ---- waiting, and the device error record ----
 * Every wait of wick for a GPU goes through wait_for: it is counted (and the
 * hook called) under its reason, and where the device has an error record,
 * the record is copied to its host mirror ahead of the wait (one small copy
 * queued on the stream) and reported after it: an index kernel that found a
 * bad index made the op return at once, and the error surfaces here, at a
 * point that waited anyway. */

/* The device's error record for the index kernels (device memory, zeroed, and
 * its pinned host mirror), created on first use; NULL after setting the error.
 * `device` must be CUDA's current device, `s` its stream. */
wk_device_error *wk_cuda_error_record(int device, cudaStream_t s, const char *op) {
    device_state *d = &devices[device];
    wk_device_error *rec = __atomic_load_n(&d->error_record, __ATOMIC_ACQUIRE);
    if (rec) return rec;
    wick_status st = WICK_OK;
    pthread_mutex_lock(&d->lock);
    if (!(rec = d->error_record)) {
        wk_device_error *mirror = NULL;
        st = wk_cuda_check(cudaMalloc((void **)&rec, sizeof *rec), op, device);
        if (!st) st = wk_cuda_check(cudaMemsetAsync(rec, 0, sizeof *rec, s), op, device);
        if (!st) st = wk_cuda_check(cudaHostAlloc((void **)&mirror, sizeof *mirror, cudaHostAllocPortable), op, -1);
        if (st) {
            if (rec) (void)cudaFree(rec);
            (void)cudaGetLastError();
            rec = NULL;
        } else {
            memset(mirror, 0, sizeof *mirror);
            d->error_mirror = mirror;
            __atomic_store_n(&d->error_record, rec, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&d->lock);
    return rec;
}

/* Waits for `s` (or, NULL, the whole device), which must be the stream of
 * CUDA's current device `device`: counted under `reason`; then a CUDA error
 * (named by op), else a pending device error when `check` is set. */
static wick_status wait_for(int device, cudaStream_t s, wk_sync_reason reason, const char *op, bool check) {
    device_state *d = &devices[device];
    wk_device_error *rec = check ? __atomic_load_n(&d->error_record, __ATOMIC_ACQUIRE) : NULL;
    cudaStream_t stream = s ? s : __atomic_load_n(&d->stream, __ATOMIC_ACQUIRE);
    /* the record exists only after the stream was created (it is queued on it) */
    bool fetch = rec && stream &&
                 cudaMemcpyAsync(d->error_mirror, rec, sizeof *rec, cudaMemcpyDeviceToHost, stream) == cudaSuccess;
    wk_sync_note(device, reason);
    wick_status st = wk_cuda_check(s ? cudaStreamSynchronize(s) : cudaDeviceSynchronize(), op, device);
    if (st || !fetch || !d->error_mirror->flag) return st;
    pthread_mutex_lock(&d->lock); /* one thread takes it; the record is cleared behind the work queued so far */
    st = wk_device_error_take(d->error_mirror, device, op);
    pthread_mutex_unlock(&d->lock);
    if (st) (void)cudaMemsetAsync(rec, 0, sizeof *rec, stream);
    return st;
}

wick_status wk_cuda_synchronize(int index) {
    index = resolve_index(index);
    cudaStream_t s;
    wick_status st = enter(index, "wick.cuda.synchronize", &s);
    /* the whole device, so work that other libraries queued is waited for too */
    return st ? st : wait_for(index, NULL, WK_SYNC_SYNCHRONIZE, "wick.cuda.synchronize", true);
}

/* The end of a batch of copies (cuda_host.c): one wait per device. */
wick_status wk_cuda_wait_devices(uint64_t mask) {
    const char *op = "the end of a batch of copies";
    wick_status last = WICK_OK; /* every device is waited for; the last error is reported */
    for (int i = 0; i < WK_CUDA_MAX_DEVICES; i++) {
        if (!(mask >> i & 1)) continue;
        cudaStream_t s;
        wick_status st = enter(i, op, &s);
        if (!st) st = wait_for(i, s, WK_SYNC_BATCH_END, op, true);
        if (st) last = st;
    }
    return last;
}

/* ---- streams and events for the collectives of src/dist (the NCCL backend),
 * reached through the core's wk_gpu_* (src/core/cuda_api.h) ----
 * NCCL queues its kernels on the device's one stream, so a collective is
 * ordered with wick's kernels like any op; an event recorded after it tells
 * when it has finished (wick.distributed's work:is_completed()). */

wick_status wk_cuda_stream_handle(int device, const char *op, void **stream) {
    cudaStream_t s;
    wick_status st = enter(device, op, &s);
    *stream = st ? NULL : (void *)s;
    return st;
}

/* A new event recorded on the device's stream now (flags: cudaEventCreateWithFlags's). */
static wick_status record_event(int device, const char *op, unsigned flags, void **event) {
    *event = NULL;
    cudaStream_t s;
    wick_status st = enter(device, op, &s);
    if (st) return st;
    cudaEvent_t ev;
    if ((st = wk_cuda_check(cudaEventCreateWithFlags(&ev, flags), op, device))) return st;
    if ((st = wk_cuda_check(cudaEventRecord(ev, s), op, device))) {
        (void)cudaEventDestroy(ev);
        return st;
    }
    *event = (void *)ev;
    return WICK_OK;
}

wick_status wk_cuda_event_record(int device, const char *op, void **event) {
    return record_event(device, op, cudaEventDisableTiming, event);
}

wick_status wk_cuda_timing_event_record(int device, const char *op, void **event) {
    return record_event(device, op, cudaEventDefault, event);
}

/* The event's device made CUDA's current one on this thread (the watchdog's
 * thread has none of its own), as PyTorch's device guard does. */
static void event_device(int device) {
    int current = -1;
    if (device >= 0 && device < wk_cuda_device_count() && cudaGetDevice(&current) == cudaSuccess && current != device)
        (void)cudaSetDevice(device);
}

int wk_cuda_event_query(void *event, int device, const char *op) {
    event_device(device);
    cudaError_t err = cudaEventQuery((cudaEvent_t)event);
    if (err == cudaSuccess) return 1;
    if (err == cudaErrorNotReady) return 0; /* not an error: nothing to clear */
    (void)wk_cuda_check(err, op, device);
    return -1;
}

wick_status wk_cuda_event_wait(void *event, int device, const char *op) {
    cudaStream_t s;
    wick_status st = enter(device, op, &s);
    return st ? st : wk_cuda_check(cudaStreamWaitEvent(s, (cudaEvent_t)event, 0), op, device);
}

wick_status wk_cuda_event_synchronize(void *event, int device, const char *op) {
    event_device(device);
    if (device >= 0 && device < WK_CUDA_MAX_DEVICES) wk_sync_note(device, WK_SYNC_COLLECTIVE);
    return wk_cuda_check(cudaEventSynchronize((cudaEvent_t)event), op, device);
}

/* Not counted as a wait (wick_cuda_sync_count): the profiler's, at its stop. */
wick_status wk_cuda_event_elapsed(void *start, void *end, int device, const char *op, float *ms) {
    *ms = 0;
    event_device(device);
    wick_status st = wk_cuda_check(cudaEventSynchronize((cudaEvent_t)end), op, device);
    return st ? st : wk_cuda_check(cudaEventElapsedTime(ms, (cudaEvent_t)start, (cudaEvent_t)end), op, device);
}

void wk_cuda_event_destroy(void *event) {
    if (event) (void)cudaEventDestroy((cudaEvent_t)event);
}

/* Waits for every stream wick has created (before host memory they may still
 * read or write goes away). Errors are left to the next call that checks. */
static void sync_all_streams(void) {
    if (!__atomic_load_n(&probed, __ATOMIC_ACQUIRE)) return;
    for (int i = 0; i < device_count; i++) {
        cudaStream_t s = __atomic_load_n(&devices[i].stream, __ATOMIC_ACQUIRE);
        if (!s) continue;
        wk_sync_note(i, WK_SYNC_RELEASE);
        (void)cudaStreamSynchronize(s);
    }
}

/* ---- the caching allocator ---- */

static int block_less(const wk_block *a, size_t size, const char *ptr) {
    return a->size < size || (a->size == size && a->ptr < ptr);
}

/* First position whose block is not below (size, ptr). */
static size_t set_lower_bound(const block_set *s, size_t size, const char *ptr) {
    size_t lo = 0, hi = s->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (block_less(s->items[mid], size, ptr)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static bool set_insert(block_set *s, wk_block *b) {
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        wk_block **items = (wk_block **)realloc(s->items, cap * sizeof *items);
        if (!items) return false;
        s->items = items;
        s->cap = cap;
    }
    size_t i = set_lower_bound(s, b->size, b->ptr);
    memmove(s->items + i + 1, s->items + i, (s->count - i) * sizeof *s->items);
    s->items[i] = b;
    s->count++;
    return true;
}

static void set_remove_at(block_set *s, size_t i) {
    memmove(s->items + i, s->items + i + 1, (s->count - i - 1) * sizeof *s->items);
    s->count--;
}

static void set_remove(block_set *s, wk_block *b) {
    size_t i = set_lower_bound(s, b->size, b->ptr);
    if (i < s->count && s->items[i] == b) set_remove_at(s, i);
}

static block_set *pool_of(device_state *d, const wk_block *b) { return b->small ? &d->free_small : &d->free_large; }

static size_t live_hash(const void *ptr, size_t buckets) {
    uint64_t h = ((uint64_t)(uintptr_t)ptr >> 9) * 0x9e3779b97f4a7c15ULL; /* blocks are 512-byte aligned */
    return (size_t)(h >> 32) & (buckets - 1);
}

static bool live_insert(device_state *d, wk_block *b) {
    if (d->live_count >= d->live_buckets) { /* grow to keep chains short */
        size_t buckets = d->live_buckets ? d->live_buckets * 2 : 1024;
        wk_block **table = (wk_block **)calloc(buckets, sizeof *table);
        if (!table) return false;
        for (size_t i = 0; i < d->live_buckets; i++)
            for (wk_block *e = d->live[i], *next; e; e = next) {
                next = e->hash_next;
                size_t h = live_hash(e->ptr, buckets);
                e->hash_next = table[h];
                table[h] = e;
            }
        free(d->live);
        d->live = table;
        d->live_buckets = buckets;
    }
    size_t h = live_hash(b->ptr, d->live_buckets);
    b->hash_next = d->live[h];
    d->live[h] = b;
    d->live_count++;
    return true;
}

static wk_block *live_remove(device_state *d, const void *ptr) {
    if (!d->live_buckets) return NULL;
    for (wk_block **link = &d->live[live_hash(ptr, d->live_buckets)]; *link; link = &(*link)->hash_next)
        if ((*link)->ptr == ptr) {
            wk_block *b = *link;
            *link = b->hash_next;
            d->live_count--;
            return b;
        }
    return NULL;
}

/* The device's counts (lock held), and storing them: each one aligned word,
 * stored atomically, so the statistics functions read them without the lock. */
static wk_cuda_counts counts_of(const device_state *d) {
    wk_cuda_counts c = {d->allocated, d->peak, d->reserved, d->peak_reserved};
    return c;
}
static int64_t all_allocated; /* every device's allocated, summed: wick_cuda_bytes_in_use */
static void store_counts(device_state *d, wk_cuda_counts c) {
    __atomic_add_fetch(&all_allocated, c.allocated - d->allocated, __ATOMIC_RELAXED);
    __atomic_store_n(&d->allocated, c.allocated, __ATOMIC_RELAXED);
    __atomic_store_n(&d->peak, c.peak, __ATOMIC_RELAXED);
    __atomic_store_n(&d->reserved, c.reserved, __ATOMIC_RELAXED);
    __atomic_store_n(&d->peak_reserved, c.peak_reserved, __ATOMIC_RELAXED);
}

/* Returns the device's free whole segments to CUDA (lock held; the device is
 * CUDA's current one). cudaFree waits for the device, so no kernel still uses
 * them. */
static void release_cached(device_state *d) {
    block_set *pools[2] = {&d->free_small, &d->free_large};
    for (int p = 0; p < 2; p++)
        for (size_t i = pools[p]->count; i-- > 0;) {
            wk_block *b = pools[p]->items[i];
            if (b->prev || b->next) continue; /* part of a segment still in use */
            if (cudaFree(b->ptr) != cudaSuccess) {
                (void)cudaGetLastError();
                continue;
            }
            __atomic_store_n(&d->reserved, d->reserved - (int64_t)b->size, __ATOMIC_RELAXED);
            set_remove_at(pools[p], i);
            free(b);
        }
}

/* A fresh segment from cudaMalloc (lock held); on failure the device's cache
 * is given back and cudaMalloc tried once more. */
static wk_block *new_segment(device_state *d, size_t size, bool small) {
    wk_block *b = (wk_block *)calloc(1, sizeof *b);
    if (!b) return NULL;
    void *p = NULL;
    if (cudaMalloc(&p, size) != cudaSuccess) {
        (void)cudaGetLastError(); /* out of memory is recoverable: keep the process usable */
        release_cached(d);
        if (cudaMalloc(&p, size) != cudaSuccess) {
            (void)cudaGetLastError();
            free(b);
            return NULL;
        }
    }
    b->ptr = (char *)p;
    b->size = size;
    b->small = small;
    store_counts(d, wk_cuda_counts_reserve(counts_of(d), (int64_t)size));
    return b;
}

/* Cuts b down to `size`, the rest becoming a free block after it (lock held). */
static void split(device_state *d, wk_block *b, size_t size) {
    size_t min_rest = b->small ? WK_SMALL_ROUND : WK_LARGE_ROUND;
    if (b->size - size < min_rest) return;
    wk_block *rest = (wk_block *)calloc(1, sizeof *rest);
    if (!rest) return; /* then b is simply used whole */
    rest->ptr = b->ptr + size;
    rest->size = b->size - size;
    rest->small = b->small;
    rest->prev = b;
    rest->next = b->next;
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = size;
    if (!set_insert(pool_of(d, rest), rest)) { /* cannot track it: undo */
        b->size += rest->size;
        b->next = rest->next;
        if (rest->next) rest->next->prev = b;
        free(rest);
    }
}

/* WICK_CUDA_CACHING, read once (see cuda_caching.h); a value not understood
 * is named on stderr and caching stays on. */
static pthread_once_t caching_once = PTHREAD_ONCE_INIT;
static int caching = 1;
static void read_caching(void) {
    const char *v = getenv("WICK_CUDA_CACHING");
    int c = wk_cuda_caching_parse(v);
    if (c < 0) fprintf(stderr, "wick: WICK_CUDA_CACHING='%s' is not understood (0 or 1): caching stays on\n", v);
    caching = c != 0;
}
static bool caching_enabled(void) {
    pthread_once(&caching_once, read_caching);
    return caching;
}

/* Caching off: the block is one cudaMalloc of exactly the request. */
static void *nocache_alloc(device_state *d, size_t nbytes) {
    size_t size = wk_cuda_nocache_size(nbytes);
    wk_block *b = (wk_block *)calloc(1, sizeof *b);
    void *p = NULL;
    if (!b || cudaMalloc(&p, size) != cudaSuccess) {
        (void)cudaGetLastError();
        free(b);
        return NULL;
    }
    b->ptr = (char *)p;
    b->size = size;
    b->allocated = true;
    pthread_mutex_lock(&d->lock);
    bool tracked = live_insert(d, b);
    if (tracked) store_counts(d, wk_cuda_counts_after_alloc(counts_of(d), (int64_t)size, (int64_t)size));
    pthread_mutex_unlock(&d->lock);
    if (!tracked) {
        (void)cudaFree(p);
        free(b);
        return NULL;
    }
    return p;
}

static void *cuda_alloc(size_t nbytes, int device) {
    if (nbytes > ((size_t)1 << 62) || wk_cuda_enter(device, "alloc") == NULL) return NULL;
    if (!caching_enabled()) return nocache_alloc(&devices[device], nbytes);
    bool small = nbytes <= WK_SMALL_REQUEST;
    size_t round = small ? WK_SMALL_ROUND : WK_LARGE_ROUND;
    size_t size = (nbytes + round - 1) / round * round;
    device_state *d = &devices[device];
    pthread_mutex_lock(&d->lock);
    block_set *pool = small ? &d->free_small : &d->free_large;
    wk_block *b = NULL;
    size_t i = set_lower_bound(pool, size, NULL); /* best fit: the smallest block that is large enough */
    if (i < pool->count) {
        b = pool->items[i];
        set_remove_at(pool, i);
    } else if (!(b = new_segment(d, small ? WK_SMALL_SEGMENT : size, small))) {
        pthread_mutex_unlock(&d->lock);
        return NULL;
    }
    split(d, b, size);
    if (!live_insert(d, b)) { /* no host memory for the table: the block goes back (the set has room) */
        set_insert(pool, b);
        pthread_mutex_unlock(&d->lock);
        return NULL;
    }
    b->allocated = true;
    store_counts(d, wk_cuda_counts_after_alloc(counts_of(d), (int64_t)b->size, 0)); /* new_segment counted reserved */
    pthread_mutex_unlock(&d->lock);
    return b->ptr;
}

/* The block goes back to its pool at once: later work that reuses it is queued
 * on the same stream as the work that used it, so it runs afterwards. With
 * caching off it goes back to CUDA (cudaFree waits for the device). */
static void cuda_free(void *ptr, size_t nbytes, int device) {
    (void)nbytes;
    if (!ptr || device < 0 || device >= WK_CUDA_MAX_DEVICES) return;
    device_state *d = &devices[device];
    pthread_mutex_lock(&d->lock);
    wk_block *b = live_remove(d, ptr);
    if (b && !caching_enabled()) {
        if (cudaFree(b->ptr) != cudaSuccess) (void)cudaGetLastError();
        store_counts(d, wk_cuda_counts_after_free(counts_of(d), (int64_t)b->size, (int64_t)b->size));
        free(b);
    } else if (b) {
        store_counts(d, wk_cuda_counts_after_free(counts_of(d), (int64_t)b->size, 0));
        b->allocated = false;
        block_set *pool = pool_of(d, b);
        if (b->prev && !b->prev->allocated) { /* merge into the free block before */
            wk_block *p = b->prev;
            set_remove(pool, p);
            p->size += b->size;
            p->next = b->next;
            if (b->next) b->next->prev = p;
            free(b);
            b = p;
        }
        if (b->next && !b->next->allocated) { /* absorb the free block after */
            wk_block *n = b->next;
            set_remove(pool, n);
            b->size += n->size;
            b->next = n->next;
            if (n->next) n->next->prev = b;
            free(n);
        }
        /* without host memory to track it the block is lost to the cache (it
           stays counted in memory_reserved) rather than crash */
        (void)set_insert(pool, b);
    }
    pthread_mutex_unlock(&d->lock);
}

void wk_cuda_empty_cache(void) {
    if (!__atomic_load_n(&probed, __ATOMIC_ACQUIRE)) return; /* CUDA never used: nothing cached */
    for (int i = 0; i < device_count; i++) {
        device_state *d = &devices[i];
        if (!__atomic_load_n(&d->reserved, __ATOMIC_RELAXED)) continue;
        cudaStream_t s = wk_cuda_enter(i, "empty_cache");
        if (!s) continue;
        wk_sync_note(i, WK_SYNC_RELEASE);
        (void)cudaStreamSynchronize(s); /* errors are left to the next call that checks */
        pthread_mutex_lock(&d->lock);
        release_cached(d);
        pthread_mutex_unlock(&d->lock);
    }
}

/* Statistics read without the lock: each value is one aligned word. */
static device_state *stats_of(int index) {
    index = resolve_index(index);
    if (index >= wk_cuda_device_count()) return NULL;
    return &devices[index];
}

int64_t wk_cuda_bytes_in_use(void) { return __atomic_load_n(&all_allocated, __ATOMIC_RELAXED); }

int64_t wk_cuda_memory_allocated(int index) {
    device_state *d = stats_of(index);
    return d ? __atomic_load_n(&d->allocated, __ATOMIC_RELAXED) : 0;
}

int64_t wk_cuda_max_memory_allocated(int index) {
    device_state *d = stats_of(index);
    return d ? __atomic_load_n(&d->peak, __ATOMIC_RELAXED) : 0;
}

int64_t wk_cuda_memory_reserved(int index) {
    device_state *d = stats_of(index);
    return d ? __atomic_load_n(&d->reserved, __ATOMIC_RELAXED) : 0;
}

int64_t wk_cuda_max_memory_reserved(int index) {
    device_state *d = stats_of(index);
    return d ? __atomic_load_n(&d->peak_reserved, __ATOMIC_RELAXED) : 0;
}

void wk_cuda_reset_peak_memory_stats(int index) {
    device_state *d = stats_of(index);
    if (!d) return;
    pthread_mutex_lock(&d->lock);
    __atomic_store_n(&d->peak, d->allocated, __ATOMIC_RELAXED);
    __atomic_store_n(&d->peak_reserved, d->reserved, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&d->lock);
}

void *wk_cuda_alloc_scratch(size_t nbytes, int device) {
    void *p = wk_alloc_or_collect(&wk_cuda_backend, nbytes ? nbytes : 1, device); /* collects and retries once */
    if (!p)
        wick_fail(WICK_ERR_OOM, "out of memory: tried to allocate %.2f MiB of scratch memory on cuda:%d",
                  (double)nbytes / (1 << 20), device);
    return p;
}

void wk_cuda_free_scratch(void *ptr, size_t nbytes, int device) { cuda_free(ptr, nbytes, device); }

/* ---- copies ---- */

/* Between GPUs: the copy must come after the work queued on the source's
 * stream and before the work queued later on either stream, and the source
 * block must not be reused while the copy reads it. Waiting on both sides is
 * the simple way to all three; copies between GPUs are rare in wick's uses
 * (DataParallel gathers), so their speed matters less than their safety. */
static wick_status transfer_peer(void *dst, int dst_index, const void *src, int src_index, size_t nbytes) {
    const char *op = "copy between GPUs";
    cudaStream_t s, d;
    wick_status st = enter(src_index, op, &s);
    if (!st) st = wait_for(src_index, s, WK_SYNC_PEER, op, true);
    if (!st) st = enter(dst_index, op, &d);
    if (st) return st;
    st = wk_cuda_check(cudaMemcpyPeerAsync(dst, dst_index, src, src_index, nbytes, d), op, dst_index);
    return st ? st : wait_for(dst_index, d, WK_SYNC_PEER, op, true);
}

/* Host <-> GPU, and within one GPU, on the device's stream. Without
 * non_blocking the call waits for the bytes. With it, it returns at once: the
 * core asks for that only when the host side is pinned; pageable host memory
 * is safe either way, because CUDA has copied it (to the GPU or a staging
 * buffer) before cudaMemcpyAsync returns. Within one GPU the stream order is
 * enough: every reader of the destination is queued after the copy. */
static wick_status cuda_transfer(void *dst, wick_device dst_dev, const void *src, wick_device src_dev, size_t nbytes,
                                 int non_blocking) {
    bool to_gpu = dst_dev.type == WICK_CUDA, from_gpu = src_dev.type == WICK_CUDA;
    if (to_gpu && from_gpu && dst_dev.index != src_dev.index)
        return transfer_peer(dst, dst_dev.index, src, src_dev.index, nbytes);
    int device = to_gpu ? dst_dev.index : src_dev.index;
    const char *op = to_gpu && from_gpu ? "copy within a GPU" : to_gpu ? "copy to the GPU" : "copy to the CPU";
    cudaMemcpyKind kind = to_gpu && from_gpu ? cudaMemcpyDeviceToDevice
                          : to_gpu           ? cudaMemcpyHostToDevice
                                             : cudaMemcpyDeviceToHost;
    cudaStream_t s;
    wick_status st = enter(device, op, &s);
    if (st) return st;
    st = wk_cuda_check(cudaMemcpyAsync(dst, src, nbytes, kind, s), op, device);
    if (st || (to_gpu && from_gpu)) return st;
    /* in a batch of copies (wick_cuda_begin_batch) a copy to the GPU leaves
       its wait to the batch's end; so does a non_blocking copy to the CPU
       (wick_tensors_to_'s into pageable memory, filled when cudaMemcpyAsync
       returns): the end then reports the GPU's errors once */
    if (non_blocking) {
        if (!to_gpu) (void)wk_batch_defer(device);
        return st;
    }
    if (to_gpu && wk_batch_defer(device)) return WICK_OK;
    /* a failed kernel queued earlier shows up here: the copy's error names it,
       and so does a pending device error (an index out of range) */
    return wait_for(device, s, to_gpu ? WK_SYNC_COPY_TO_GPU : WK_SYNC_COPY_TO_HOST, op, true);
}

/* ---- pinned host memory ---- */

/* The release of a pinned storage: copies that read or write it may still be
 * queued, so they are waited for first. */
static void free_pinned(void *ptr) {
    sync_all_streams();
    if (cudaFreeHost(ptr) != cudaSuccess) (void)cudaGetLastError();
}

wick_status wk_cuda_pin_memory(wick_tensor **out, const wick_tensor *t) {
    if (t->storage->device.type != WICK_CPU) {
        char name[32];
        return wick_fail(WICK_ERR_DEVICE, "pin_memory: expected a CPU tensor, got one on %s",
                         wick_device_format(t->storage->device, name, sizeof name));
    }
    if (t->storage->pinned) {
        wick_tensor_retain((wick_tensor *)t);
        *out = (wick_tensor *)t;
        return WICK_OK;
    }
    if (wk_cuda_device_count() == 0) return wick_fail(WICK_ERR_DEVICE, "pin_memory: " NO_GPU_TEXT);
    int64_t numel = wick_tensor_numel(t);
    size_t nbytes = (size_t)numel * wk_dtype_size(t->dtype);
    void *host = NULL;
    /* portable: pinned for every GPU's context, not only the current one */
    cudaError_t err = cudaHostAlloc(&host, nbytes ? nbytes : 1, cudaHostAllocPortable);
    if (err != cudaSuccess) {
        if (err == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError();
            return wick_fail(WICK_ERR_OOM, "out of memory: tried to allocate %.2f MiB of pinned host memory",
                             (double)nbytes / (1 << 20));
        }
        return wk_cuda_check(err, "pin_memory", -1);
    }
    wick_tensor *flat = NULL, *shaped = NULL;
    wick_status st = wk_tensor_wrap(&flat, host, numel, t->dtype, free_pinned, host);
    if (st) {
        cudaFreeHost(host);
        return st;
    }
    flat->storage->pinned = true;
    int64_t strides[WICK_MAX_DIMS];
    wk_contiguous_strides(t->ndim, t->sizes, strides);
    st = wk_tensor_view(&shaped, flat, t->ndim, t->sizes, strides, 0);
    wick_tensor_release(flat);
    if (!st) st = wick_copy_(shaped, t); /* any strides, in parallel on the CPU */
    if (st) {
        wick_tensor_release(shaped);
        return st;
    }
    *out = shaped;
    return WICK_OK;
}

/* ---- TF32 ---- */

static int allow_tf32;

void wk_cuda_set_allow_tf32(int allow) { __atomic_store_n(&allow_tf32, allow != 0, __ATOMIC_RELAXED); }
int wk_cuda_allow_tf32(void) { return __atomic_load_n(&allow_tf32, __ATOMIC_RELAXED); }

/* ---- cuBLAS, loaded on first use ----
 * libcublas is opened with dlopen the first time a handle is wanted, and the
 * cuBLAS functions the kernels call are defined here as small forwards to it.
 * So the kernels call cuBLAS as usual (cublasGemmEx, ...), the library is not
 * linked, and start-up does not pay for mapping it. A kernel that needs a
 * cuBLAS function missing below fails to link: add a forward for it here. */

#define WK_STR2(x) #x
#define WK_STR(x) WK_STR2(x)
#define WK_CUBLAS_SONAME "libcublas.so." WK_STR(CUBLAS_VER_MAJOR)

/* X(name, return type, parameters, arguments, value when unavailable) */
#define WK_CUBLAS_FUNCTIONS(X)                                                                                        \
    X(cublasCreate_v2, cublasStatus_t, (cublasHandle_t * handle), (handle), CUBLAS_STATUS_NOT_INITIALIZED)            \
    X(cublasDestroy_v2, cublasStatus_t, (cublasHandle_t handle), (handle), CUBLAS_STATUS_NOT_INITIALIZED)             \
    X(cublasSetStream_v2, cublasStatus_t, (cublasHandle_t handle, cudaStream_t stream), (handle, stream),              \
      CUBLAS_STATUS_NOT_INITIALIZED)                                                                                  \
    X(cublasGemmEx, cublasStatus_t,                                                                                    \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,           \
       const void *A, cudaDataType Atype, int lda, const void *B, cudaDataType Btype, int ldb, const void *beta,        \
       void *C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo),                  \
      (h, ta, tb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo),              \
      CUBLAS_STATUS_NOT_INITIALIZED)                                                                                  \
    X(cublasGemmStridedBatchedEx, cublasStatus_t,                                                                      \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void *alpha,           \
       const void *A, cudaDataType Atype, int lda, long long int strideA, const void *B, cudaDataType Btype, int ldb,  \
       long long int strideB, const void *beta, void *C, cudaDataType Ctype, int ldc, long long int strideC,           \
       int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo),                                        \
      (h, ta, tb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc, strideC,       \
       batchCount, computeType, algo),                                                                                 \
      CUBLAS_STATUS_NOT_INITIALIZED)                                                                                  \
    X(cublasGetStatusName, const char *, (cublasStatus_t status), (status), "CUBLAS_STATUS_NOT_INITIALIZED")

static struct {
#define WK_CUBLAS_POINTER(name, ret, params, args, fallback) ret(*name) params;
    WK_CUBLAS_FUNCTIONS(WK_CUBLAS_POINTER)
} cublas_api;

static pthread_once_t cublas_once = PTHREAD_ONCE_INIT;
static void *cublas_lib;
static char cublas_error[512];

/* Opens libcublas: by its soname (LD_LIBRARY_PATH, the runner's run path, the
 * system's library cache), then in the toolkit that wick was built with. */
static void load_cublas(void) {
    const char *names[] = {WK_CUBLAS_SONAME,
#ifdef WICK_CUDA_LIBDIR
                           WICK_CUDA_LIBDIR "/" WK_CUBLAS_SONAME,
#endif
                           "/usr/local/cuda/lib64/" WK_CUBLAS_SONAME};
    for (size_t i = 0; i < sizeof names / sizeof *names && !cublas_lib; i++) {
        cublas_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!cublas_lib && i == 0) snprintf(cublas_error, sizeof cublas_error, "%s", dlerror());
    }
    if (!cublas_lib) return;
#define WK_CUBLAS_RESOLVE(name, ret, params, args, fallback) \
    cublas_api.name = (ret(*) params)dlsym(cublas_lib, #name);
    WK_CUBLAS_FUNCTIONS(WK_CUBLAS_RESOLVE)
}

/* The forwards, with the names and types of cublas_api.h. */
#define WK_CUBLAS_FORWARD(name, ret, params, args, fallback)                          \
    extern "C" ret CUBLASWINAPI name params {                                         \
        pthread_once(&cublas_once, load_cublas);                                      \
        return cublas_api.name ? cublas_api.name args : fallback;                     \
    }
WK_CUBLAS_FUNCTIONS(WK_CUBLAS_FORWARD)

cublasHandle_t wk_cublas_handle(int device, const char *op) {
    cudaStream_t stream = wk_cuda_enter(device, op);
    if (!stream) return NULL;
    device_state *d = &devices[device];
    cublasHandle_t h = __atomic_load_n(&d->cublas, __ATOMIC_ACQUIRE);
    if (h) return h;
    pthread_once(&cublas_once, load_cublas);
    if (!cublas_api.cublasCreate_v2) {
        wick_fail(WICK_ERR_DEVICE, "%s on cuda:%d: cannot load cuBLAS (%s): %s", op, device, WK_CUBLAS_SONAME,
                  cublas_lib ? "cublasCreate_v2 is missing" : cublas_error);
        return NULL;
    }
    /* The handle belongs to CUDA's current device, set by wk_cuda_enter. It is
       made outside the lock: cublasCreate allocates cuBLAS's workspace, and when
       that runs out of memory, dead tensors are collected (their blocks go back
       under the lock) and the cache emptied before one more try. */
    cublasStatus_t cs = cublasCreate(&h);
    if (cs == CUBLAS_STATUS_ALLOC_FAILED) {
        wk_oom_collect(&wk_cuda_backend);
        cs = cublasCreate(&h);
    }
    wick_status st = wk_cublas_check(cs, op, device);
    if (!st && (st = wk_cublas_check(cublasSetStream(h, stream), op, device))) cublasDestroy(h);
    if (st) return NULL;
    pthread_mutex_lock(&d->lock);
    cublasHandle_t first = d->cublas; /* another thread's, made meanwhile */
    if (!first) __atomic_store_n(&d->cublas, h, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&d->lock);
    if (first) {
        cublasDestroy(h);
        h = first;
    }
    return h;
}

/* ---- the backend's runtime entries (assembled in cuda_backend.cu) ---- */

void *wk_cuda_backend_alloc(size_t nbytes, int device) { return cuda_alloc(nbytes, device); }
void wk_cuda_backend_free(void *ptr, size_t nbytes, int device) { cuda_free(ptr, nbytes, device); }
void wk_cuda_backend_empty_cache(void) { wk_cuda_empty_cache(); }
wick_status wk_cuda_backend_transfer(void *dst, wick_device dst_dev, const void *src, wick_device src_dev,
                                     size_t nbytes, int non_blocking) {
    return cuda_transfer(dst, dst_dev, src, src_dev, nbytes, non_blocking);
}
