/* The CUDA backend's internal interface: its runtime (cuda_runtime.cu: devices,
 * streams, the caching allocator, transfers, errors, cuBLAS handles) and its
 * kernels (cuda_*.cu), assembled into wk_cuda_backend in cuda_backend.cu.
 *
 * Every kernel entry gets the device index in its arguments (wk_iter.device,
 * wk_reduce_args.device, ...; tensors carry it in their storage), runs on that
 * device's one stream, and returns WICK_OK or the status of wk_cuda_check. Work
 * on one device is ordered by its stream, so kernels never synchronize; only
 * copies to the host (and wick_cuda_synchronize) wait, each through the
 * runtime's wait_for, which counts waits (wick_cuda_sync_count) and reports
 * the device error record that index kernels set (cuda_host.h). */
#ifndef WICK_CUDA_H
#define WICK_CUDA_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "../core/internal.h"
#include "../core/cuda_api.h" /* what the core calls besides wk_cuda_backend */
#include "cuda_host.h"

/* ---- runtime (cuda_runtime.cu) ---- */

/* Makes `device` current on the calling thread (cheap when it already is) and
 * returns its stream, or NULL after setting the error (e.g. a bad index). */
cudaStream_t wk_cuda_enter(int device, const char *op);
/* WICK_OK for cudaSuccess; otherwise an error naming the op, the device and
 * CUDA's message ("out of memory" for cudaErrorMemoryAllocation), and saying so
 * when the error is sticky (the CUDA context is lost until the process ends). */
wick_status wk_cuda_check(cudaError_t err, const char *op, int device);
/* Checks the launch that was just queued (cudaGetLastError). */
wick_status wk_cuda_check_launch(const char *op, int device);
wick_status wk_cublas_check(cublasStatus_t status, const char *op, int device);
/* The device's cuBLAS handle, bound to its stream; NULL after setting the error. */
cublasHandle_t wk_cublas_handle(int device, const char *op);
/* Scratch memory from the caching allocator (e.g. conv's column matrix), freed
 * with wk_cuda_free_scratch; the stream order makes reuse safe. */
void *wk_cuda_alloc_scratch(size_t nbytes, int device);
void wk_cuda_free_scratch(void *ptr, size_t nbytes, int device);
/* The runtime's entries of wk_cuda_backend (see struct wick_backend). */
void *wk_cuda_backend_alloc(size_t nbytes, int device);
void wk_cuda_backend_free(void *ptr, size_t nbytes, int device);
void wk_cuda_backend_empty_cache(void);
/* The device's error record for kernels that check their indices (see
 * cuda_host.h; `s` is its stream), created on first use; NULL after setting
 * the error. The next wait for the device reports what a kernel set in it. */
wk_device_error *wk_cuda_error_record(int device, cudaStream_t s, const char *op);
wick_status wk_cuda_backend_transfer(void *dst, wick_device dst_dev, const void *src, wick_device src_dev,
                                     size_t nbytes, int non_blocking);

/* ---- launch geometry ---- */
#define WK_CUDA_THREADS 256
static inline unsigned wk_cuda_blocks(int64_t n) {
    int64_t b = (n + WK_CUDA_THREADS - 1) / WK_CUDA_THREADS;
    return (unsigned)(b < 1 ? 1 : b > 65535 * 32 ? 65535 * 32 : b); /* grid-stride loops cover the rest */
}

/* ---- kernels: the entries of wk_cuda_backend, same contracts as the CPU's
 * (see struct wick_backend in src/core/internal.h) ---- */
wick_status cuda_copy(const wk_iter *it);
wick_status cuda_fill(const wk_iter *it, double value);
wick_status cuda_unary(wick_unary_op op, const wk_iter *it);
wick_status cuda_binary(wick_binary_op op, const wk_iter *it, double alpha);
wick_status cuda_clamp(const wk_iter *it, double lo, double hi);
wick_status cuda_where(const wk_iter *it);
wick_status cuda_reduce(const wk_reduce_args *args);
wick_status cuda_gemm(const wk_gemm_args *args);
wick_status cuda_amp_unscale(wick_dtype dtype, int device, char *g, int64_t n, const float *inv_scale,
                             float *found_inf);
wick_status cuda_softmax(const wick_tensor *out, const wick_tensor *in, int dim, int log);
/* cuda_norm.cu (softmax_backward stays composed on CUDA) */
wick_status cuda_act_backward(const wick_tensor *gi, const wick_tensor *g, const wick_tensor *x, int form);
wick_status cuda_layer_norm(const wk_norm_args *args);
wick_status cuda_layer_norm_backward(const wk_norm_args *args);
wick_status cuda_batch_norm(const wk_bn_args *args);
wick_status cuda_batch_norm_backward(const wk_bn_args *args);
wick_status cuda_cross_entropy(const wk_ce_args *args);
wick_status cuda_cross_entropy_backward(const wk_ce_args *args);
wick_status cuda_random(wick_tensor *out, int normal, uint64_t seed, uint64_t offset);
wick_status cuda_index_select(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index);
wick_status cuda_gather(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index);
wick_status cuda_scatter(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
wick_status cuda_scatter_add(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
wick_status cuda_index_add(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
wick_status cuda_conv2d_forward(const wk_conv2d_args *args, char *out, const char *input, const char *weight,
                                const char *bias);
wick_status cuda_conv2d_backward(const wk_conv2d_args *args, const char *grad_out, const char *input,
                                 const char *weight, char *grad_input, char *grad_weight, char *grad_bias);
wick_status cuda_max_pool2d(const wk_pool2d_args *args, char *out, int64_t *indices, const char *input);
wick_status cuda_max_pool2d_backward(const wk_pool2d_args *args, char *grad_input, const char *grad_out,
                                     const int64_t *indices);
wick_status cuda_avg_pool2d(const wk_pool2d_args *args, char *out, const char *input);
wick_status cuda_avg_pool2d_backward(const wk_pool2d_args *args, char *grad_input, const char *grad_out);
wick_status cuda_upsample2d(const wk_upsample_args *args, char *out, const char *input);
wick_status cuda_upsample2d_backward(const wk_upsample_args *args, char *grad_input, const char *grad_out);
wick_status cuda_grid_sample2d(const wk_grid_sample_args *args, char *out, const char *input, const char *grid);
wick_status cuda_grid_sample2d_backward(const wk_grid_sample_args *args, const char *grad_out, const char *input,
                                        const char *grid, char *grad_input, char *grad_grid);
/* cuda_attention.cu (src/core/attention.h) */
wick_status cuda_attention_forward(const struct wk_attn_args *a);
wick_status cuda_attention_backward(const struct wk_attn_args *a);
/* cuda_rnn.cu (src/core/rnn.h) */
wick_status cuda_rnn_step(const struct wk_rnn_args *a);
wick_status cuda_rnn_step_backward(const struct wk_rnn_args *a);
/* cuda_sort.cu */
wick_status cuda_sort(const wk_sort_args *args);
wick_status cuda_scan(const wk_scan_args *args);

#ifdef __cplusplus
}
#endif

#endif
