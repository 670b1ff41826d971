/* The public wick_cuda_* functions and wick_pin_memory (wick.h), defined in
 * the core: a CUDA build forwards them to the backend's runtime (cuda_api.h,
 * src/cuda/cuda_runtime.cu); a build without CUDA answers here: no GPU,
 * statistics of zero, and a clear error wherever a GPU is needed. The waits'
 * counts and the batches of copies are kept by src/cuda/cuda_host.c in every
 * build. */
#include "cuda_api.h"
#include "internal.h"

/* ---- counted waits and batches (every build) ---- */

const char *wick_cuda_sync_reason_name(int reason) { return wk_cuda_sync_reason_name(reason); }
int64_t wick_cuda_sync_count_for(int device, int reason) { return wk_cuda_sync_count_for(device, reason); }
int64_t wick_cuda_sync_count(int device) { return wk_cuda_sync_count_for(device, -1); }
void wick_cuda_set_sync_hook(wick_cuda_sync_hook fn, void *ud) { wk_cuda_set_sync_hook(fn, ud); }
void wick_cuda_begin_batch(void) { wk_cuda_begin_batch(); }
wick_status wick_cuda_end_batch(void) { return wk_cuda_end_batch(); }

#ifdef WICK_WITH_CUDA

int wick_cuda_device_count(void) { return wk_cuda_device_count(); }
int wick_cuda_is_available(void) { return wk_cuda_device_count() > 0; }
wick_status wick_cuda_get_device_properties(int index, wick_cuda_properties *out) {
    return wk_cuda_device_properties(index, out);
}
wick_status wick_cuda_current_device(int *index) { return wk_cuda_current_device(index); }
wick_status wick_cuda_set_device(int index) { return wk_cuda_set_device(index); }
wick_status wick_cuda_synchronize(int index) { return wk_cuda_synchronize(index); }
int64_t wick_cuda_memory_allocated(int index) { return wk_cuda_memory_allocated(index); }
int64_t wick_cuda_bytes_in_use(void) { return wk_cuda_bytes_in_use(); }
int64_t wick_cuda_max_memory_allocated(int index) { return wk_cuda_max_memory_allocated(index); }
int64_t wick_cuda_memory_reserved(int index) { return wk_cuda_memory_reserved(index); }
int64_t wick_cuda_max_memory_reserved(int index) { return wk_cuda_max_memory_reserved(index); }
void wick_cuda_reset_peak_memory_stats(int index) { wk_cuda_reset_peak_memory_stats(index); }
void wick_cuda_empty_cache(void) { wk_cuda_empty_cache(); }
void wick_cuda_set_allow_tf32(int allow) { wk_cuda_set_allow_tf32(allow); }
int wick_cuda_allow_tf32(void) { return wk_cuda_allow_tf32(); }
wick_status wick_pin_memory(wick_tensor **out, const wick_tensor *t) { return wk_cuda_pin_memory(out, t); }

wick_status wk_gpu_stream(int device, const char *op, void **stream) {
    return wk_cuda_stream_handle(device, op, stream);
}
wick_status wk_gpu_event_record(int device, const char *op, void **event) {
    return wk_cuda_event_record(device, op, event);
}
int wk_gpu_event_query(void *event, int device, const char *op) { return wk_cuda_event_query(event, device, op); }
wick_status wk_gpu_event_wait(void *event, int device, const char *op) {
    return wk_cuda_event_wait(event, device, op);
}
wick_status wk_gpu_event_synchronize(void *event, int device, const char *op) {
    return wk_cuda_event_synchronize(event, device, op);
}
void wk_gpu_event_destroy(void *event) { wk_cuda_event_destroy(event); }
wick_status wk_gpu_timing_event_record(int device, const char *op, void **event) {
    return wk_cuda_timing_event_record(device, op, event);
}
wick_status wk_gpu_event_elapsed(void *start, void *end, int device, const char *op, float *ms) {
    return wk_cuda_event_elapsed(start, end, device, op, ms);
}

#else

static wick_status no_cuda(const char *what) {
    return wick_fail(WICK_ERR_DEVICE, "%s: wick was built without CUDA, so wick.cuda.is_available() is false", what);
}
int wick_cuda_is_available(void) { return 0; }
int wick_cuda_device_count(void) { return 0; }
wick_status wick_cuda_current_device(int *index) { return *index = 0, no_cuda("current_device"); }
static wick_status no_device(const char *op, int index) {
    return wick_fail(WICK_ERR_DEVICE,
                     "%s: invalid device ordinal %d: wick.cuda.device_count() is 0 (wick was built without CUDA)", op,
                     index);
}
wick_status wick_cuda_set_device(int index) { return no_device("wick.cuda.set_device", index); }
wick_status wick_cuda_get_device_properties(int index, wick_cuda_properties *out) {
    memset(out, 0, sizeof *out);
    return no_device("wick.cuda.get_device_properties", index);
}
wick_status wick_cuda_synchronize(int index) { return (void)index, no_cuda("synchronize"); }
int64_t wick_cuda_memory_allocated(int index) { return (void)index, 0; }
int64_t wick_cuda_bytes_in_use(void) { return 0; }
int64_t wick_cuda_max_memory_allocated(int index) { return (void)index, 0; }
int64_t wick_cuda_memory_reserved(int index) { return (void)index, 0; }
int64_t wick_cuda_max_memory_reserved(int index) { return (void)index, 0; }
void wick_cuda_reset_peak_memory_stats(int index) { (void)index; }
void wick_cuda_empty_cache(void) {}
static int allow_tf32;
void wick_cuda_set_allow_tf32(int allow) { allow_tf32 = allow != 0; }
int wick_cuda_allow_tf32(void) { return allow_tf32; }
wick_status wick_pin_memory(wick_tensor **out, const wick_tensor *t) {
    (void)out, (void)t;
    return no_cuda("pin_memory");
}

wick_status wk_gpu_stream(int device, const char *op, void **stream) {
    (void)device;
    *stream = NULL;
    return no_cuda(op);
}
wick_status wk_gpu_event_record(int device, const char *op, void **event) {
    (void)device;
    *event = NULL;
    return no_cuda(op);
}
int wk_gpu_event_query(void *event, int device, const char *op) {
    (void)event, (void)device;
    no_cuda(op);
    return -1;
}
wick_status wk_gpu_event_wait(void *event, int device, const char *op) {
    (void)event, (void)device;
    return no_cuda(op);
}
wick_status wk_gpu_event_synchronize(void *event, int device, const char *op) {
    (void)event, (void)device;
    return no_cuda(op);
}
void wk_gpu_event_destroy(void *event) { (void)event; }
wick_status wk_gpu_timing_event_record(int device, const char *op, void **event) {
    return wk_gpu_event_record(device, op, event);
}
wick_status wk_gpu_event_elapsed(void *start, void *end, int device, const char *op, float *ms) {
    (void)start, (void)end, (void)device;
    *ms = 0;
    return no_cuda(op);
}

#endif
