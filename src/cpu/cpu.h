/* The CPU backend's kernels (see wk_cpu_backend in cpu_backend.c). */
#ifndef WICK_CPU_H
#define WICK_CPU_H

#include "../core/internal.h"

/* Hot loops are compiled twice, for AVX2 and for the baseline, and picked at
 * load time by the CPU (GCC function multiversioning): the default x86-64
 * build would otherwise use 128-bit SSE only. */
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__) && !defined(WICK_TSAN)
/* (not under ThreadSanitizer: the clones' resolvers run while the program is
 * relocated, before TSan's runtime is up, and crash in its instrumentation) */
#define WK_SIMD __attribute__((target_clones("avx2", "default")))
#else
#define WK_SIMD
#endif

/* A loop over `n` consecutive elements of each operand: p[k] is operand k's first
 * element, s[k] its stride in elements. */
typedef void (*cpu_run_fn)(char **p, const int64_t *s, int64_t n, const void *extra);
/* Runs fn over the whole iterator, split among threads for large ones; fails
 * (WICK_ERR_INTERRUPTED) when an interrupt stopped it part way. */
wick_status cpu_run(const wk_iter *it, cpu_run_fn fn, const void *extra)
#if defined(__GNUC__)
    __attribute__((warn_unused_result))
#endif
    ;

/* CPU memory (cpu_backend.c): large blocks come from and go back to a cache
 * (also for scratch space that a kernel uses on every call); a host allocator
 * (wick_set_allocator) gets every block, uncached. */
void *cpu_alloc(size_t nbytes, int device_index);
void cpu_free(void *p, size_t nbytes, int device_index);

/* bfloat16 products on Intel AMX (cpu_amx.c): usable when the CPU has the
 * unit, Linux grants it and WICK_NO_AMX is unset. */
bool cpu_amx_bf16_usable(void);
wick_status cpu_amx_bf16_gemm(const wk_gemm_args *g);
/* float32 and bfloat16 products on AVX-512 (cpu_gemm_avx512.c): usable for
 * float32 where 512-bit FMAs do twice the work of 256-bit ones and
 * WICK_NO_AVX512_F32 is not set, for bfloat16 where VDPBF16PS does more work
 * a second than the float32 FMA (else 16-bit products widen: cpu_gemm.c). */
bool cpu_gemm_avx512_usable(wick_dtype dtype);
/* n 16-bit values widened into float32, and float32 rounded back (nearest
 * even), 16 an instruction; false where the CPU lacks AVX512F/BW/VL or
 * WICK_NO_AVX512_16BIT is set (cpu_convert.c's other ways then). */
bool cpu_avx512_widen_16(float *dst, const uint16_t *src, wick_dtype dtype, int64_t n);
bool cpu_avx512_round_16(uint16_t *dst, const float *src, wick_dtype dtype, int64_t n);
/* n float16 or bfloat16 values widened to float32, and float32 rounded to them
 * (nearest even), the fastest way the CPU has (cpu_convert.c). */
void cpu_widen_16(float *dst, const uint16_t *src, wick_dtype dtype, int64_t n);
void cpu_round_16(uint16_t *dst, const float *src, wick_dtype dtype, int64_t n);
/* Whether the CPU does twice the float32 FMA work a cycle with 512-bit vectors
 * as with 256-bit ones (two AVX-512 FMA units; timed once per process, ~0.5 ms). */
bool cpu_avx512_fma_doubles(void);
wick_status cpu_gemm_avx512(const wk_gemm_args *g);
/* float32 products that cpu_gemm gives to cpu_gemm_avx512: at most this many
 * rows of C, or at most WK_GEMM_F32_FEW_COLS columns (one panel of the kernel). */
#define WK_GEMM_F32_FEW_ROWS 256
#define WK_GEMM_F32_FEW_COLS 64
/* dst[p * ldd + j] = src[j * ld + p] for j < n, p < k (cpu_gemm.c). */
void cpu_untranspose_f32(float *dst, int64_t ldd, const float *src, int64_t n, int64_t k, int64_t ld);

/* The kernel of a binary op for a compute dtype (float32, float64 or int64). */
cpu_run_fn cpu_binary_run(int op, wick_dtype compute);
wick_status cpu_unary(wick_unary_op op, const wk_iter *it);
wick_status cpu_binary(wick_binary_op op, const wk_iter *it, double alpha);
wick_status cpu_clamp(const wk_iter *it, double lo, double hi);
wick_status cpu_where(const wk_iter *it);
wick_status cpu_reduce(const wk_reduce_args *args);
wick_status cpu_gemm(const wk_gemm_args *args);
wick_status cpu_softmax(const wick_tensor *out, const wick_tensor *in, int dim, int log);
wick_status cpu_softmax_backward(const wick_tensor *gi, const wick_tensor *g, const wick_tensor *y, int dim, int log);
/* cpu_norm.c */
wick_status cpu_act_backward(const wick_tensor *gi, const wick_tensor *g, const wick_tensor *x, int form);
wick_status cpu_layer_norm(const wk_norm_args *args);
wick_status cpu_layer_norm_backward(const wk_norm_args *args);
wick_status cpu_batch_norm(const wk_bn_args *args);
wick_status cpu_batch_norm_backward(const wk_bn_args *args);
wick_status cpu_cross_entropy(const wk_ce_args *args);
wick_status cpu_cross_entropy_backward(const wk_ce_args *args);
wick_status cpu_index_select(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index);
wick_status cpu_gather(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index);
wick_status cpu_scatter(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
wick_status cpu_scatter_add(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
wick_status cpu_index_add(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
wick_status cpu_masked_fill(const wk_iter *it, double value);
/* cpu_conv.c, cpu_pool.c */
wick_status cpu_conv2d_forward(const wk_conv2d_args *a, char *out, const char *input, const char *weight,
                               const char *bias);
wick_status cpu_conv2d_backward(const wk_conv2d_args *a, const char *grad_out, const char *input, const char *weight,
                                char *grad_input, char *grad_weight, char *grad_bias);
wick_status cpu_max_pool2d(const wk_pool2d_args *a, char *out, int64_t *indices, const char *input);
wick_status cpu_max_pool2d_backward(const wk_pool2d_args *a, char *grad_input, const char *grad_out, const int64_t *indices);
wick_status cpu_avg_pool2d(const wk_pool2d_args *a, char *out, const char *input);
wick_status cpu_avg_pool2d_backward(const wk_pool2d_args *a, char *grad_input, const char *grad_out);
wick_status cpu_upsample2d(const wk_upsample_args *a, char *out, const char *input);
wick_status cpu_upsample2d_backward(const wk_upsample_args *a, char *grad_input, const char *grad_out);
wick_status cpu_grid_sample2d(const wk_grid_sample_args *a, char *out, const char *input, const char *grid);
wick_status cpu_grid_sample2d_backward(const wk_grid_sample_args *a, const char *grad_out, const char *input,
                                       const char *grid, char *grad_input, char *grad_grid);
/* cpu_optim.c: the fused Adam/AdamW step (src/core/optim.h) */
struct wk_adam_hparams;
wick_status cpu_amp_unscale(wick_dtype dtype, int device, char *g, int64_t n, const float *inv_scale,
                            float *found_inf);
struct wk_sgd_hparams;
void cpu_sgd_step(wick_dtype dtype, char *p, const char *g, char *buf, int64_t n, const struct wk_sgd_hparams *h);
struct wk_adadelta_hparams;
void cpu_adadelta_step(wick_dtype dtype, char *p, const char *g, char *square_avg, char *acc_delta, int64_t n,
                       const struct wk_adadelta_hparams *h);
void cpu_adam_step(wick_dtype dtype, char *p, const char *g, char *exp_avg, char *exp_avg_sq, int64_t n,
                   const struct wk_adam_hparams *h);
/* cpu_attention.c */
struct wk_attn_args;
wick_status cpu_attention_forward(const struct wk_attn_args *a);
wick_status cpu_attention_backward(const struct wk_attn_args *a);
/* cpu_rnn.c */
struct wk_rnn_args;
wick_status cpu_rnn_step(const struct wk_rnn_args *a);
wick_status cpu_rnn_step_backward(const struct wk_rnn_args *a);
/* cpu_decomp.c */
wick_status cpu_decompose(const wk_decomp_args *a);
/* cpu_sort.c */
wick_status cpu_sort(const wk_sort_args *a);
wick_status cpu_scan(const wk_scan_args *a);

/* cpu_fft.c: wick_backend.fft, .rfft and .irfft */
wick_status cpu_fft(wick_dtype dtype, const char *in, char *out, int64_t outer, int64_t n, int64_t inner, int sign);
wick_status cpu_rfft(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n);
wick_status cpu_irfft(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n);

#endif
