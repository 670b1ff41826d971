/* CUDA matrix products (the backend's gemm entry): row-major
 * C = alpha * op(A) * op(B) + beta * C, as cpu_gemm defines it.
 *
 * Floating dtypes go to cuBLAS. cuBLAS is column-major, and a row-major matrix
 * with leading dimension ld is the column-major storage of its transpose, so the
 * row-major product is computed as C^T = op(B)^T op(A)^T: the operands swap
 * places and keep their own transpose flags.
 *   float32   cublasGemmEx, CUBLAS_COMPUTE_32F, or CUBLAS_COMPUTE_32F_FAST_TF32
 *             when wick_cuda_allow_tf32() is on (off by default, as in PyTorch)
 *   float64   cublasGemmEx, CUBLAS_COMPUTE_64F
 *   float16, bfloat16
 *             cublasGemmEx with 16-bit inputs and output, accumulating in
 *             float32 (CUBLAS_COMPUTE_32F), as PyTorch does. The CPU
 *             accumulates these in double and rounds once, so long sums may
 *             differ slightly.
 * Integer dtypes (int64, int32, uint8; bool if it ever arrives) have no cuBLAS
 * routine: a tiled kernel accumulates in int64 with wraparound, exactly like
 * cpu_gemm's generic loop (integer sums are exact modulo 2^64, so the order of
 * the additions does not matter and the results are bitwise the CPU's).
 *
 * k == 0 never reaches cuBLAS: C = beta * C is written by a small kernel, and
 * beta == 0 writes zeros whatever C held (NaN included), as on the CPU. cuBLAS
 * itself ignores C when beta == 0. */
#include "cuda.h"
#include "cuda_dtype.cuh"

#include "../core/scalar_math.h"

#include <limits.h>

/* The runtime has set the error message when it returns no stream or handle. */
#define WK_NO_DEVICE WICK_ERR_DEVICE

namespace { /* internal linkage: kernels and helpers stay private to this file */

/* ---- k == 0: C = beta * C ---- */

/* Each dtype scales the way cpu_gemm does it: float32/float64 as BLAS does
 * (beta * C in the dtype, zeros for beta == 0), 16-bit floats as the generic
 * loop does (alpha * 0 + beta * C in double, C read only when beta != 0). */
template <typename T> struct ScaleOp;
template <> struct ScaleOp<float> {
    static __device__ float apply(float c, double alpha, double beta) {
        (void)alpha;
        return beta == 0 ? 0.0f : (float)beta * c;
    }
};
template <> struct ScaleOp<double> {
    static __device__ double apply(double c, double alpha, double beta) {
        (void)alpha;
        return beta == 0 ? 0.0 : beta * c;
    }
};
struct HalfBits {};
struct Bf16Bits {};
template <> struct ScaleOp<HalfBits> {
    static __device__ uint16_t apply(uint16_t c, double alpha, double beta) {
        double old = beta != 0 ? (double)wk_cu_half_to_float(c) : 0.0;
        return wk_cu_float_to_half((float)(alpha * 0.0 + beta * old));
    }
};
template <> struct ScaleOp<Bf16Bits> {
    static __device__ uint16_t apply(uint16_t c, double alpha, double beta) {
        double old = beta != 0 ? (double)wk_cu_bf16_to_float(c) : 0.0;
        return wk_cu_float_to_bf16((float)(alpha * 0.0 + beta * old));
    }
};
template <typename Tag> struct StorageOf { typedef Tag type; };
template <> struct StorageOf<HalfBits> { typedef uint16_t type; };
template <> struct StorageOf<Bf16Bits> { typedef uint16_t type; };

template <typename Tag>
__global__ void scale_kernel(typename StorageOf<Tag>::type *c, int64_t m, int64_t n, int64_t ldc, double alpha,
                             double beta) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < m * n; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e / n, j = e % n;
        typename StorageOf<Tag>::type *p = c + i * ldc + j;
        *p = ScaleOp<Tag>::apply(*p, alpha, beta);
    }
}

template <typename Tag> static void launch_scale(const wk_gemm_args *g, cudaStream_t s) {
    scale_kernel<Tag><<<wk_cuda_blocks(g->m * g->n), WK_CUDA_THREADS, 0, s>>>(
        (typename StorageOf<Tag>::type *)g->c, g->m, g->n, g->ldc, g->alpha, g->beta);
}

/* ---- integer dtypes: a tiled kernel with int64 wraparound ---- */

#define INT_TILE 16

/* Loads and stores as wk_load_int64 / wk_store_int64 do for each dtype. */
template <typename T> struct IntIO {
    static __device__ int64_t load(const T *p) { return (int64_t)*p; }
    static __device__ void store(T *p, int64_t v) { *p = (T)v; } /* truncates: wraps like PyTorch */
};
struct BoolByte {};
template <> struct IntIO<BoolByte> {
    static __device__ int64_t load(const BoolByte *p) { return *(const uint8_t *)p != 0; }
    static __device__ void store(BoolByte *p, int64_t v) { *(uint8_t *)p = v != 0; }
};

typedef struct {
    int trans_a, trans_b;
    int64_t m, n, k, lda, ldb, ldc;
    int64_t alpha, beta; /* (int64_t)alpha and (int64_t)beta, as the CPU multiplies */
    int read_c;          /* beta != 0: the CPU reads C only then */
} int_gemm_geom;

/* One 16x16 tile of C per block; tiles of A and B go through shared memory.
 * Rows of tiles beyond gridDim.y are covered by a loop (grid y is at most 65535). */
template <typename T>
__global__ void int_gemm_kernel(int_gemm_geom g, const T *a, const T *b, T *c) {
    __shared__ int64_t as[INT_TILE][INT_TILE + 1];
    __shared__ int64_t bs[INT_TILE][INT_TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t j = (int64_t)blockIdx.x * INT_TILE + tx;
    const int64_t row_tiles = (g.m + INT_TILE - 1) / INT_TILE;
    for (int64_t tile = blockIdx.y; tile < row_tiles; tile += gridDim.y) { /* uniform per block */
        const int64_t i = tile * INT_TILE + ty;
        int64_t acc = 0;
        for (int64_t p0 = 0; p0 < g.k; p0 += INT_TILE) {
            int64_t pa = p0 + tx, pb = p0 + ty;
            as[ty][tx] = i < g.m && pa < g.k
                             ? IntIO<T>::load(a + (g.trans_a ? pa * g.lda + i : i * g.lda + pa)) : 0;
            bs[ty][tx] = pb < g.k && j < g.n
                             ? IntIO<T>::load(b + (g.trans_b ? j * g.ldb + pb : pb * g.ldb + j)) : 0;
            __syncthreads();
            for (int q = 0; q < INT_TILE; q++) acc = wk_wrap_add(acc, wk_wrap_mul(as[ty][q], bs[q][tx]));
            __syncthreads();
        }
        if (i < g.m && j < g.n) {
            T *p = c + i * g.ldc + j;
            int64_t old = g.read_c ? IntIO<T>::load(p) : 0;
            IntIO<T>::store(p, wk_wrap_add(wk_wrap_mul(g.alpha, acc), wk_wrap_mul(g.beta, old)));
        }
    }
}

template <typename T> static void launch_int_gemm(const wk_gemm_args *a, cudaStream_t s) {
    int_gemm_geom g = {a->trans_a, a->trans_b, a->m, a->n, a->k, a->lda, a->ldb, a->ldc,
                       (int64_t)a->alpha, (int64_t)a->beta, a->beta != 0};
    int64_t col_tiles = (a->n + INT_TILE - 1) / INT_TILE, row_tiles = (a->m + INT_TILE - 1) / INT_TILE;
    dim3 grid((unsigned)col_tiles, (unsigned)(row_tiles < 65535 ? row_tiles : 65535));
    int_gemm_kernel<T><<<grid, dim3(INT_TILE, INT_TILE), 0, s>>>(g, (const T *)a->a, (const T *)a->b, (T *)a->c);
}

static wick_status int_gemm(const wk_gemm_args *g, cudaStream_t s) {
    if ((g->n + INT_TILE - 1) / INT_TILE > INT_MAX)
        return wick_fail(WICK_ERR_UNSUPPORTED, "mm: matrices with more than 2^35 columns are not supported on cuda");
    switch (g->dtype) {
    case WICK_INT64: launch_int_gemm<int64_t>(g, s); break;
    case WICK_INT32: launch_int_gemm<int32_t>(g, s); break;
    case WICK_UINT8: launch_int_gemm<uint8_t>(g, s); break;
    case WICK_BOOL: launch_int_gemm<BoolByte>(g, s); break;
    default:
        return wick_fail(WICK_ERR_UNSUPPORTED, "mm: not implemented for %s tensors on cuda", wick_dtype_name(g->dtype));
    }
    return wk_cuda_check_launch("matmul", g->device);
}

/* ---- floating dtypes: cuBLAS ---- */

static wick_status blas_gemm(const wk_gemm_args *g) {
    if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->lda > INT_MAX || g->ldb > INT_MAX ||
        g->ldc > INT_MAX)
        return wick_fail(WICK_ERR_UNSUPPORTED, "mm: matrix dimensions beyond 2^31 are not supported by BLAS");
    cudaDataType_t type;
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    switch (g->dtype) {
    case WICK_FLOAT32:
        type = CUDA_R_32F;
        if (wick_cuda_allow_tf32()) compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        break;
    case WICK_FLOAT64: type = CUDA_R_64F, compute = CUBLAS_COMPUTE_64F; break;
    case WICK_FLOAT16: type = CUDA_R_16F; break;
    case WICK_BFLOAT16: type = CUDA_R_16BF; break;
    default:
        return wick_fail(WICK_ERR_UNSUPPORTED, "mm: not implemented for %s tensors on cuda", wick_dtype_name(g->dtype));
    }
    cublasHandle_t h = wk_cublas_handle(g->device, "matmul");
    if (!h) return WK_NO_DEVICE;
    /* alpha and beta are read from the host (the handle's default pointer mode),
     * in the compute type's precision */
    const float alpha_f = (float)g->alpha, beta_f = (float)g->beta;
    const void *alpha = compute == CUBLAS_COMPUTE_64F ? (const void *)&g->alpha : (const void *)&alpha_f;
    const void *beta = compute == CUBLAS_COMPUTE_64F ? (const void *)&g->beta : (const void *)&beta_f;
    cublasOperation_t ta = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    /* C^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m), all column-major */
    cublasStatus_t st = cublasGemmEx(h, tb, ta, (int)g->n, (int)g->m, (int)g->k, alpha, g->b, type, (int)g->ldb,
                                     g->a, type, (int)g->lda, beta, g->c, type, (int)g->ldc, compute,
                                     CUBLAS_GEMM_DEFAULT);
    return wk_cublas_check(st, "matmul", g->device);
}

} // namespace

extern "C" wick_status cuda_gemm(const wk_gemm_args *g) {
    if (g->m == 0 || g->n == 0) return WICK_OK;
    cudaStream_t s = wk_cuda_enter(g->device, "matmul");
    if (!s) return WK_NO_DEVICE;
    if (!wick_dtype_is_floating(g->dtype)) return int_gemm(g, s);
    if (g->k == 0) { /* nothing to multiply: C = beta * C */
        switch (g->dtype) {
        case WICK_FLOAT32: launch_scale<float>(g, s); break;
        case WICK_FLOAT64: launch_scale<double>(g, s); break;
        case WICK_FLOAT16: launch_scale<HalfBits>(g, s); break;
        case WICK_BFLOAT16: launch_scale<Bf16Bits>(g, s); break;
        default: break;
        }
        return wk_cuda_check_launch("matmul", g->device);
    }
    return blas_gemm(g);
}
