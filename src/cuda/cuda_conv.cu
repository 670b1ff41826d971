/* 2-D convolution on CUDA: im2col + cuBLAS, and its backward, with the
 * contracts of cpu_conv.c (contiguous float32 or float64 data; groups, stride,
 * padding, dilation; backward gives any of grad_input, grad_weight, grad_bias).
 *
 * Forward: the columns of a chunk of images are laid out image by image
 * ([image][channel * kh * kw][oh * ow]), so each group is one strided-batched
 * GEMM over the images of the chunk that writes straight into the output
 * (out_i,g = W_g @ cols_i,g; the weight's batch stride is 0). The bias is added
 * afterwards, as on the CPU. A 1x1 kernel with stride 1 and no padding needs no
 * columns: the input planes are the matrix.
 *
 * Backward:
 *   grad_weight: dW_g = sum over images of dy_i,g @ cols_i,g^T. The columns of a
 *     chunk of one group are laid side by side ([channel * kh * kw][image * L])
 *     and the chunk's grad output is gathered the same way, so each chunk of
 *     each group is one GEMM with k = images * L, accumulated (beta = 1) over
 *     the chunks.
 *   grad_input: cols_i,g = W_g^T @ dy_i,g (strided-batched, image-by-image
 *     layout), then col2im in gather form: each input element sums the column
 *     entries that read it, in the CPU's order, with no atomics (deterministic).
 *   grad_bias: one block per output channel sums over images and positions in
 *     double (a fixed order: deterministic).
 *
 * float32 products use TF32 only when wick_cuda_allow_tf32() is on, as matmul.
 * Scratch (columns, the gathered grad output) comes from the caching allocator
 * and goes back to it as soon as the work using it is queued. */
#include "cuda.h"

#include <limits.h>

#define WK_NO_DEVICE WICK_ERR_DEVICE /* the runtime set the message */

namespace { /* internal linkage: kernels and helpers stay private to this file */

/* Bytes of scratch a chunk of images may use (a single image may need more). */
#define CHUNK_BYTES ((int64_t)1 << 28)
/* Images per strided-batched call: a grid dimension's limit, to be safe. */
#define MAX_BATCH 65535

#define GRID_STRIDE(e, n) \
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < (n); e += (int64_t)gridDim.x * blockDim.x)

/* the geometry as kernel arguments */
typedef struct {
    int64_t c, h, w, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
} conv_geom;

/* ---- kernels ---- */

/* Columns of `cur` images and `cc` channels starting at x (image stride c * h * w):
 * entry (image i, channel ch, kernel position k, output position l) goes to
 * col[(ch * kh * kw + k) * rs + i * is + l]; zero where the kernel reads padding. */
template <typename T>
__global__ void im2col_kernel(conv_geom g, const T *x, T *col, int64_t cur, int64_t cc, int64_t rs, int64_t is) {
    const int64_t kk = g.kh * g.kw, L = g.oh * g.ow;
    GRID_STRIDE(t, cur * cc * kk * L) {
        const int64_t l = t % L, k = t / L % kk, ch = t / (L * kk) % cc, i = t / (L * kk * cc);
        const int64_t iy = l / g.ow * g.sh - g.ph + k / g.kw * g.dh, ix = l % g.ow * g.sw - g.pw + k % g.kw * g.dw;
        T v = 0;
        if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) v = x[(i * g.c + ch) * g.h * g.w + iy * g.w + ix];
        col[(ch * kk + k) * rs + i * is + l] = v;
    }
}

/* The reverse, for all c channels of `cur` images: each element of dx (the
 * chunk's first image) becomes the sum of the column entries that read it,
 * taken in the order of the CPU's col2im (kernel rows, then kernel columns). */
template <typename T>
__global__ void col2im_kernel(conv_geom g, const T *col, T *dx, int64_t cur, int64_t rs, int64_t is) {
    const int64_t kk = g.kh * g.kw;
    GRID_STRIDE(t, cur * g.c * g.h * g.w) {
        const int64_t ix = t % g.w, iy = t / g.w % g.h, ch = t / (g.w * g.h) % g.c, i = t / (g.w * g.h * g.c);
        const T *base = col + ch * kk * rs + i * is;
        T acc = 0;
        for (int64_t ki = 0; ki < g.kh; ki++) {
            int64_t ty = iy + g.ph - ki * g.dh; /* = oy * sh */
            if (ty < 0 || ty % g.sh) continue;
            int64_t oy = ty / g.sh;
            if (oy >= g.oh) continue;
            for (int64_t kj = 0; kj < g.kw; kj++) {
                int64_t tx = ix + g.pw - kj * g.dw;
                if (tx < 0 || tx % g.sw) continue;
                int64_t ox = tx / g.sw;
                if (ox >= g.ow) continue;
                acc += base[(ki * g.kw + kj) * rs + oy * g.ow + ox];
            }
        }
        dx[t] = acc;
    }
}

/* out[n, o, l] += bias[o] */
template <typename T> __global__ void bias_add_kernel(T *out, const T *bias, int64_t total, int64_t o, int64_t L) {
    GRID_STRIDE(e, total) out[e] += bias[e / L % o];
}

/* grad_bias[oc] = sum of grad_out[:, oc, :], one block per channel */
template <typename T> __global__ void bias_grad_kernel(const T *go, T *gb, int64_t n, int64_t o, int64_t L) {
    __shared__ double part[WK_CUDA_THREADS];
    for (int64_t oc = blockIdx.x; oc < o; oc += gridDim.x) {
        double s = 0;
        for (int64_t t = threadIdx.x; t < n * L; t += blockDim.x) s += (double)go[(t / L * o + oc) * L + t % L];
        part[threadIdx.x] = s;
        __syncthreads();
        for (int half = WK_CUDA_THREADS / 2; half > 0; half /= 2) {
            if ((int)threadIdx.x < half) part[threadIdx.x] += part[threadIdx.x + half];
            __syncthreads();
        }
        if (threadIdx.x == 0) gb[oc] = (T)part[0];
        __syncthreads(); /* part is reused by the next channel */
    }
}

/* tmp[oc][i * L + l] = go[n0 + i, oc, l]: a chunk's grad output as [o, cur * L] */
template <typename T> __global__ void gather_dy_kernel(const T *go, T *tmp, int64_t o, int64_t cur, int64_t L) {
    GRID_STRIDE(t, o * cur * L) {
        const int64_t l = t % L, i = t / L % cur, oc = t / (L * cur);
        tmp[t] = go[(i * o + oc) * L + l];
    }
}

/* ---- host side ---- */

typedef struct {
    const wk_conv2d_args *a;
    const char *op;
    conv_geom g;
    cudaStream_t s;
    cublasHandle_t h;
    cudaDataType_t type;
    cublasComputeType_t compute;
    int64_t es, L, cg, og, K, kk;
} conv_ctx;

static wick_status ctx_init(conv_ctx *cx, const wk_conv2d_args *a, const char *op) {
    memset(cx, 0, sizeof *cx);
    cx->a = a, cx->op = op;
    conv_geom g = {a->c, a->h, a->w, a->kh, a->kw, a->oh, a->ow, a->sh, a->sw, a->ph, a->pw, a->dh, a->dw};
    cx->g = g;
    if (a->dtype == WICK_FLOAT32) {
        cx->type = CUDA_R_32F;
        cx->compute = wick_cuda_allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    } else if (a->dtype == WICK_FLOAT64) {
        cx->type = CUDA_R_64F, cx->compute = CUBLAS_COMPUTE_64F;
    } else {
        return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not implemented for %s tensors on cuda", op,
                         wick_dtype_name(a->dtype));
    }
    cx->es = (int64_t)wk_dtype_size(a->dtype), cx->L = a->oh * a->ow, cx->kk = a->kh * a->kw;
    cx->cg = a->c / a->groups, cx->og = a->o / a->groups, cx->K = cx->cg * cx->kk;
    /* the cuBLAS handle (cx->h) is fetched when a GEMM needs it */
    return (cx->s = wk_cuda_enter(a->device, op)) ? WICK_OK : WK_NO_DEVICE;
}

static bool is_direct(const wk_conv2d_args *a) {
    return a->kh == 1 && a->kw == 1 && a->sh == 1 && a->sw == 1 && a->ph == 0 && a->pw == 0 &&
           a->oh == a->h && a->ow == a->w; /* (a transposed convolution's output_padding can differ) */
}

/* Images per chunk when each needs `per_image` bytes of scratch. */
static int64_t chunk_images(const wk_conv2d_args *a, int64_t per_image) {
    int64_t nb = per_image > 0 ? CHUNK_BYTES / per_image : a->n;
    if (nb < 1) nb = 1;
    if (nb > MAX_BATCH) nb = MAX_BATCH;
    return nb < a->n ? nb : a->n;
}

static wick_status scratch(const conv_ctx *cx, void **p, size_t nbytes) {
    *p = NULL;
    if (nbytes == 0) return WICK_OK;
    if (!(*p = wk_cuda_alloc_scratch(nbytes, cx->a->device)))
        return wick_fail(WICK_ERR_OOM, "%s: out of memory allocating %zu bytes of scratch on cuda:%d", cx->op, nbytes,
                         cx->a->device);
    return WICK_OK;
}

static void release(const conv_ctx *cx, void *p, size_t nbytes) {
    if (p) wk_cuda_free_scratch(p, nbytes, cx->a->device);
}

/* Row-major C_b = op(A_b) @ op(B_b) + beta * C_b (alpha 1) for b < batch, the
 * operands `stride` elements apart from one b to the next (0: shared), through
 * the column-major swap C^T = op(B)^T op(A)^T. */
static wick_status rm_gemm(conv_ctx *cx, int ta, int tb, int64_t m, int64_t n, int64_t k, const void *A, int64_t lda,
                           int64_t sa, const void *B, int64_t ldb, int64_t sb, void *C, int64_t ldc, int64_t sc,
                           int64_t batch, double beta) {
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX ||
        batch > INT_MAX)
        return wick_fail(WICK_ERR_UNSUPPORTED, "%s: matrix dimensions beyond 2^31 are not supported by BLAS",
                         cx->op);
    if (!cx->h && !(cx->h = wk_cublas_handle(cx->a->device, cx->op))) return WK_NO_DEVICE;
    const double alpha_d = 1, beta_d = beta;
    const float alpha_f = 1, beta_f = (float)beta;
    const bool f64 = cx->compute == CUBLAS_COMPUTE_64F;
    const void *alpha = f64 ? (const void *)&alpha_d : (const void *)&alpha_f;
    const void *bp = f64 ? (const void *)&beta_d : (const void *)&beta_f;
    cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasStatus_t st;
    if (batch == 1)
        st = cublasGemmEx(cx->h, ob, oa, (int)n, (int)m, (int)k, alpha, B, cx->type, (int)ldb, A, cx->type, (int)lda,
                          bp, C, cx->type, (int)ldc, cx->compute, CUBLAS_GEMM_DEFAULT);
    else
        st = cublasGemmStridedBatchedEx(cx->h, ob, oa, (int)n, (int)m, (int)k, alpha, B, cx->type, (int)ldb,
                                        (long long)sb, A, cx->type, (int)lda, (long long)sa, bp, C, cx->type,
                                        (int)ldc, (long long)sc, (int)batch, cx->compute, CUBLAS_GEMM_DEFAULT);
    return wk_cublas_check(st, cx->op, cx->a->device);
}

/* Launches KERNEL<T> for the context's dtype over n elements. */
#define LAUNCH(cx, n, KERNEL, ...)                                                                   \
    do {                                                                                             \
        if ((cx)->a->dtype == WICK_FLOAT32) {                                                        \
            typedef float T;                                                                         \
            KERNEL<T><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, (cx)->s>>>(__VA_ARGS__);              \
        } else {                                                                                     \
            typedef double T;                                                                        \
            KERNEL<T><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, (cx)->s>>>(__VA_ARGS__);              \
        }                                                                                            \
    } while (0)

static wick_status check_launch(const conv_ctx *cx) { return wk_cuda_check_launch(cx->op, cx->a->device); }

/* columns of `cur` images from n0, channels [c0, c0 + cc), into col (layout rs, is) */
static wick_status im2col(const conv_ctx *cx, const char *input, int64_t n0, int64_t cur, int64_t c0, int64_t cc,
                          void *col, int64_t rs, int64_t is) {
    const wk_conv2d_args *a = cx->a;
    const char *x = input + ((n0 * a->c + c0) * a->h * a->w) * cx->es;
    int64_t n = cur * cc * cx->kk * cx->L;
    LAUNCH(cx, n, im2col_kernel, cx->g, (const T *)x, (T *)col, cur, cc, rs, is);
    return check_launch(cx);
}

} // namespace

/* ---- forward ---- */

extern "C" wick_status cuda_conv2d_forward(const wk_conv2d_args *a, char *out, const char *input, const char *weight,
                                           const char *bias) {
    conv_ctx cx;
    wick_status st = ctx_init(&cx, a, "conv2d");
    if (st) return st;
    const int64_t es = cx.es, L = cx.L, og = cx.og, cg = cx.cg, K = cx.K, CK = a->c * cx.kk;
    if (a->n == 0 || a->o == 0 || L == 0) return WICK_OK;
    if (K == 0) { /* no input channels: the product is zero */
        if ((st = wk_cuda_check(cudaMemsetAsync(out, 0, (size_t)(a->n * a->o * L * es), cx.s), cx.op, a->device)))
            return st;
    } else if (is_direct(a)) { /* the input planes are the columns */
        for (int64_t g = 0; g < a->groups && !st; g++)
            for (int64_t b0 = 0; b0 < a->n && !st; b0 += MAX_BATCH) {
                int64_t cur = a->n - b0 < MAX_BATCH ? a->n - b0 : MAX_BATCH;
                st = rm_gemm(&cx, 0, 0, og, L, K, weight + g * og * K * es, K, 0,
                             input + (b0 * a->c + g * cg) * L * es, L, a->c * L,
                             out + (b0 * a->o + g * og) * L * es, L, a->o * L, cur, 0);
            }
    } else {
        const int64_t nb = chunk_images(a, CK * L * es);
        void *col;
        size_t col_bytes = (size_t)(nb * CK * L * es);
        if ((st = scratch(&cx, &col, col_bytes))) return st;
        for (int64_t n0 = 0; n0 < a->n && !st; n0 += nb) {
            int64_t cur = a->n - n0 < nb ? a->n - n0 : nb;
            st = im2col(&cx, input, n0, cur, 0, a->c, col, L, CK * L);
            for (int64_t g = 0; g < a->groups && !st; g++)
                st = rm_gemm(&cx, 0, 0, og, L, K, weight + g * og * K * es, K, 0, (char *)col + g * K * L * es, L,
                             CK * L, out + (n0 * a->o + g * og) * L * es, L, a->o * L, cur, 0);
        }
        release(&cx, col, col_bytes);
    }
    if (!st && bias) {
        int64_t total = a->n * a->o * L;
        LAUNCH(&cx, total, bias_add_kernel, (T *)out, (const T *)bias, total, a->o, L);
        st = check_launch(&cx);
    }
    return st;
}

/* ---- backward ---- */

namespace {

static wick_status grad_bias_of(conv_ctx *cx, const char *grad_out, char *grad_bias) {
    const wk_conv2d_args *a = cx->a;
    if (a->o == 0) return WICK_OK;
    unsigned blocks = (unsigned)(a->o < 65535 ? a->o : 65535);
    if (a->dtype == WICK_FLOAT32)
        bias_grad_kernel<float><<<blocks, WK_CUDA_THREADS, 0, cx->s>>>((const float *)grad_out, (float *)grad_bias,
                                                                        a->n, a->o, cx->L);
    else
        bias_grad_kernel<double><<<blocks, WK_CUDA_THREADS, 0, cx->s>>>((const double *)grad_out,
                                                                         (double *)grad_bias, a->n, a->o, cx->L);
    return check_launch(cx);
}

/* dW_g = sum over images of dy_i,g @ cols_i,g^T, chunk by chunk */
static wick_status grad_weight_of(conv_ctx *cx, const char *grad_out, const char *input, char *grad_weight) {
    const wk_conv2d_args *a = cx->a;
    const int64_t es = cx->es, L = cx->L, og = cx->og, cg = cx->cg, K = cx->K;
    if (K == 0) return WICK_OK; /* no elements */
    const int64_t nb = chunk_images(a, (K + a->o) * L * es);
    void *col, *tmp;
    size_t col_bytes = (size_t)(K * nb * L * es), tmp_bytes = nb > 1 ? (size_t)(a->o * nb * L * es) : 0;
    wick_status st = scratch(cx, &col, col_bytes);
    if (st) return st;
    if ((st = scratch(cx, &tmp, tmp_bytes))) {
        release(cx, col, col_bytes);
        return st;
    }
    for (int64_t n0 = 0; n0 < a->n && !st; n0 += nb) {
        int64_t cur = a->n - n0 < nb ? a->n - n0 : nb, ld = cur * L;
        const char *dy = grad_out + n0 * a->o * L * es; /* [o, cur * L] with ld = cur * L */
        if (cur > 1) {
            LAUNCH(cx, a->o * cur * L, gather_dy_kernel, (const T *)dy, (T *)tmp, a->o, cur, L);
            if ((st = check_launch(cx))) break;
            dy = (const char *)tmp;
        }
        for (int64_t g = 0; g < a->groups && !st; g++) {
            st = im2col(cx, input, n0, cur, g * cg, cg, col, ld, L);
            if (!st)
                st = rm_gemm(cx, 0, 1, og, K, ld, dy + g * og * ld * es, ld, 0, col, ld, 0,
                             grad_weight + g * og * K * es, K, 0, 1, n0 ? 1 : 0);
        }
    }
    release(cx, col, col_bytes);
    release(cx, tmp, tmp_bytes);
    return st;
}

/* cols_i,g = W_g^T @ dy_i,g, then col2im (or straight into grad_input for 1x1) */
static wick_status grad_input_of(conv_ctx *cx, const char *grad_out, const char *weight, char *grad_input) {
    const wk_conv2d_args *a = cx->a;
    const int64_t es = cx->es, L = cx->L, og = cx->og, cg = cx->cg, K = cx->K, CK = a->c * cx->kk;
    if (K == 0) return WICK_OK; /* no input channels: no elements */
    wick_status st = WICK_OK;
    if (is_direct(a)) {
        for (int64_t g = 0; g < a->groups && !st; g++)
            for (int64_t b0 = 0; b0 < a->n && !st; b0 += MAX_BATCH) {
                int64_t cur = a->n - b0 < MAX_BATCH ? a->n - b0 : MAX_BATCH;
                st = rm_gemm(cx, 1, 0, K, L, og, weight + g * og * K * es, K, 0,
                             grad_out + (b0 * a->o + g * og) * L * es, L, a->o * L,
                             grad_input + (b0 * a->c + g * cg) * L * es, L, a->c * L, cur, 0);
            }
        return st;
    }
    const int64_t nb = chunk_images(a, CK * L * es);
    void *col;
    size_t col_bytes = (size_t)(nb * CK * L * es);
    if ((st = scratch(cx, &col, col_bytes))) return st;
    for (int64_t n0 = 0; n0 < a->n && !st; n0 += nb) {
        int64_t cur = a->n - n0 < nb ? a->n - n0 : nb;
        for (int64_t g = 0; g < a->groups && !st; g++)
            st = rm_gemm(cx, 1, 0, K, L, og, weight + g * og * K * es, K, 0,
                         grad_out + (n0 * a->o + g * og) * L * es, L, a->o * L, (char *)col + g * K * L * es, L,
                         CK * L, cur, 0);
        if (st) break;
        char *dx = grad_input + n0 * a->c * a->h * a->w * es;
        LAUNCH(cx, cur * a->c * a->h * a->w, col2im_kernel, cx->g, (const T *)col, (T *)dx, cur, L, CK * L);
        st = check_launch(cx);
    }
    release(cx, col, col_bytes);
    return st;
}

} // namespace

extern "C" wick_status cuda_conv2d_backward(const wk_conv2d_args *a, const char *grad_out, const char *input,
                                            const char *weight, char *grad_input, char *grad_weight,
                                            char *grad_bias) {
    conv_ctx cx;
    wick_status st = ctx_init(&cx, a, "conv2d"); /* the CPU's name in messages, backward too */
    if (st) return st;
    if (grad_bias && (st = grad_bias_of(&cx, grad_out, grad_bias))) return st;
    if (!grad_input && !grad_weight) return WICK_OK;
    if (a->n == 0 || a->o == 0 || cx.L == 0) { /* nothing flows back */
        if (grad_input && (st = wk_cuda_check(cudaMemsetAsync(grad_input, 0, (size_t)(a->n * a->c * a->h * a->w * cx.es),
                                                              cx.s), cx.op, a->device)))
            return st;
        if (grad_weight)
            st = wk_cuda_check(cudaMemsetAsync(grad_weight, 0, (size_t)(a->o * cx.K * cx.es), cx.s), cx.op, a->device);
        return st;
    }
    if (grad_weight && (st = grad_weight_of(&cx, grad_out, input, grad_weight))) return st;
    if (grad_input) st = grad_input_of(&cx, grad_out, weight, grad_input);
    return st;
}
