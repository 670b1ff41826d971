/* What the core calls of the CUDA backend besides its table (wk_cuda_backend):
 * the runtime behind the public wick_cuda_* functions, which the core defines
 * (cuda_api.c) and forwards here. Defined in src/cuda: the waits' bookkeeping
 * in cuda_host.c (every build, so that it is tested without CUDA), the rest in
 * cuda_runtime.cu (CUDA builds). The layer check (CMakeLists.txt, "the
 * layers' arrows") lets the core call these and nothing else of src/cuda. */
#ifndef WICK_CORE_CUDA_API_H
#define WICK_CORE_CUDA_API_H

#include "wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuda_host.c: counted waits, the wait hook, batches of copies */
const char *wk_cuda_sync_reason_name(int reason);
int64_t wk_cuda_sync_count_for(int device, int reason);
void wk_cuda_set_sync_hook(wick_cuda_sync_hook fn, void *ud);
void wk_cuda_begin_batch(void);
wick_status wk_cuda_end_batch(void);

#ifdef WICK_WITH_CUDA
/* cuda_runtime.cu: devices, waits, the caching allocator, TF32, pinned memory */
int wk_cuda_device_count(void);
wick_status wk_cuda_device_properties(int index, wick_cuda_properties *out);
wick_status wk_cuda_current_device(int *index);
wick_status wk_cuda_set_device(int index);
wick_status wk_cuda_synchronize(int index);
void wk_cuda_empty_cache(void);
int64_t wk_cuda_bytes_in_use(void);
int64_t wk_cuda_memory_allocated(int index);
int64_t wk_cuda_max_memory_allocated(int index);
int64_t wk_cuda_memory_reserved(int index);
int64_t wk_cuda_max_memory_reserved(int index);
void wk_cuda_reset_peak_memory_stats(int index);
void wk_cuda_set_allow_tf32(int allow);
int wk_cuda_allow_tf32(void);
wick_status wk_cuda_pin_memory(wick_tensor **out, const wick_tensor *t);
/* cuda_runtime.cu: the device's stream and events on it, for src/dist (below) */
wick_status wk_cuda_stream_handle(int device, const char *op, void **stream);
wick_status wk_cuda_event_record(int device, const char *op, void **event);
int wk_cuda_event_query(void *event, int device, const char *op);
wick_status wk_cuda_event_wait(void *event, int device, const char *op);
wick_status wk_cuda_event_synchronize(void *event, int device, const char *op);
void wk_cuda_event_destroy(void *event);
/* the profiler's GPU timing (profiler.c through wk_gpu_timing_*, below) */
wick_status wk_cuda_timing_event_record(int device, const char *op, void **event);
wick_status wk_cuda_event_elapsed(void *start, void *end, int device, const char *op, float *ms);
#endif

/* ---- for the NCCL backend of src/dist: the core's forwards (cuda_api.c),
 * defined in every build; without CUDA each fails with a clear error. `op`
 * names the caller in errors ("all_reduce"); `device` is a GPU's index. ---- */
/* Makes `device` CUDA's current device on this thread and gives its one
 * stream (a cudaStream_t), on which every op of wick for it is queued. */
wick_status wk_gpu_stream(int device, const char *op, void **stream);
/* A new event (a cudaEvent_t, no timing) recorded on the device's stream now:
 * it completes when everything queued so far on that stream has run. */
wick_status wk_gpu_event_record(int device, const char *op, void **event);
/* 1 when the event has completed, 0 when not yet, -1 after setting the error
 * (a failure of the work before it, e.g. a sticky CUDA error). */
int wk_gpu_event_query(void *event, int device, const char *op);
/* The device's stream waits (on the GPU) for the event; the host does not. */
wick_status wk_gpu_event_wait(void *event, int device, const char *op);
/* The host waits for the event (counted as a wait "wait for a collective"). */
wick_status wk_gpu_event_synchronize(void *event, int device, const char *op);
/* Destroys an event of wk_gpu_event_record (NULL: nothing). */
void wk_gpu_event_destroy(void *event);

/* ---- for the profiler (profiler.c): GPU time between two events ---- */
/* Like wk_gpu_event_record, but an event that keeps its time (destroy it with
 * wk_gpu_event_destroy). */
wick_status wk_gpu_timing_event_record(int device, const char *op, void **event);
/* The host waits for `end` (not counted as a wait), then *ms is the GPU time
 * from `start` to `end`, both timing events of the device. */
wick_status wk_gpu_event_elapsed(void *start, void *end, int device, const char *op, float *ms);

#ifdef __cplusplus
}
#endif

#endif
