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
wick_status wk_cuda_current_device(int *index);
wick_status wk_cuda_set_device(int index);
wick_status wk_cuda_synchronize(int index);
void wk_cuda_empty_cache(void);
int64_t wk_cuda_bytes_in_use(void);
int64_t wk_cuda_memory_allocated(int index);
int64_t wk_cuda_max_memory_allocated(int index);
int64_t wk_cuda_memory_reserved(int index);
void wk_cuda_reset_peak_memory_stats(int index);
void wk_cuda_set_allow_tf32(int allow);
int wk_cuda_allow_tf32(void);
wick_status wk_cuda_pin_memory(wick_tensor **out, const wick_tensor *t);
#endif

#ifdef __cplusplus
}
#endif

#endif
