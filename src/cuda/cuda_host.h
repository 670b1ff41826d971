/* The host logic of the CUDA backend's waits, in plain C so that it builds and
 * is tested without CUDA (tests/test_cuda_host.c): the device-side error
 * record that index kernels fill instead of waiting for their bounds check,
 * the counting of every wait wick does for a GPU, and the batches of copies
 * that end with one wait per device (wick_cuda_begin_batch/end_batch).
 *
 * cuda_runtime.cu keeps one error record per device in GPU memory, copies it
 * to the host at each point that waits anyway (a blocking copy, item(),
 * wick.cuda.synchronize, the end of a batch) and reports it there with
 * wk_device_error_take. The layout is shared with the kernels (cuda_index.cu),
 * so it holds only fixed-width fields. */
#ifndef WICK_CUDA_HOST_H
#define WICK_CUDA_HOST_H

#include <stdint.h>

#include "wick.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ops whose kernels check indices on the GPU (the record's `op`). */
typedef enum {
    WK_DEVERR_NONE = 0,
    WK_DEVERR_INDEX_SELECT,
    WK_DEVERR_GATHER,
    WK_DEVERR_SCATTER,
    WK_DEVERR_SCATTER_ADD,
    WK_DEVERR_INDEX_ADD,
    WK_DEVERR_OP_COUNT
} wk_device_error_op;

/* One per device, in GPU memory, all zero when no error is pending. The first
 * kernel thread that finds a bad index wins flag 0 -> 1 (atomicCAS) and then
 * writes the other fields; later ones leave the record alone. Read on the host
 * only after the stream has been waited for. */
typedef struct {
    uint32_t flag;
    int32_t op;    /* wk_device_error_op */
    int32_t dim;   /* 0-based */
    int32_t pad;
    int64_t value; /* the offending index, 0-based as the kernel saw it */
    int64_t size;  /* the size of dimension `dim` */
} wk_device_error;

/* "index_select", ... ("an indexing op" for an id out of range). */
const char *wk_device_error_op_name(int32_t op);
/* WICK_OK when no error is pending in `rec` (a host copy of a device's
 * record); otherwise the error (WICK_ERR_INDEX) naming the op, the value, the
 * dimension and the size as the CPU does (1-based), the device, and that it was
 * detected asynchronously and reported at `at` (the wait that found it). The
 * record is cleared either way, so one error is reported once. */
wick_status wk_device_error_take(wk_device_error *rec, int device, const char *at);

/* Why wick waits for a GPU (each wait is counted under one reason). */
#define WK_SYNC_REASONS(X)                                                         \
    X(WK_SYNC_SYNCHRONIZE, "wick.cuda.synchronize")                                \
    X(WK_SYNC_COPY_TO_HOST, "copy to the CPU")                                     \
    X(WK_SYNC_COPY_TO_GPU, "copy to the GPU")                                      \
    X(WK_SYNC_PEER, "copy between GPUs")                                           \
    X(WK_SYNC_BATCH_END, "end of a batch of copies")                               \
    X(WK_SYNC_RELEASE, "release of memory")                                        \
    X(WK_SYNC_COLLECTIVE, "wait for a collective")
typedef enum {
#define WK_SYNC_ENUM(id, text) id,
    WK_SYNC_REASONS(WK_SYNC_ENUM)
#undef WK_SYNC_ENUM
        WK_SYNC_REASON_COUNT
} wk_sync_reason;

/* Devices whose waits are counted (the runtime's limit too). */
#define WK_SYNC_MAX_DEVICES 64

/* Counts one wait on `device` for `reason` (atomically) and calls the hook set
 * with wick_cuda_set_sync_hook. Every stream or device synchronization of the
 * CUDA runtime goes through here (cuda_runtime.cu: wait_for). */
void wk_sync_note(int device, wk_sync_reason reason);

/* Batches of copies, per thread: while one is open, a blocking copy to `device`
 * from the host may skip its wait; wk_batch_defer says whether it may (and
 * records the device). wk_batch_close closes one level and sets *devices to
 * those to wait for when the outermost closes (a bit per device), else 0; it
 * returns -1 (changing nothing) when no batch is open. */
int wk_batch_defer(int device);
int wk_batch_close(uint64_t *devices);
int wk_batch_depth(void);

#ifdef WICK_WITH_CUDA
/* Waits once for each device of `mask` (the end of a batch); cuda_runtime.cu. */
wick_status wk_cuda_wait_devices(uint64_t mask);
#endif

#ifdef __cplusplus
}
#endif

#endif
