/* CUDA random numbers: uniform [0, 1) and standard normal draws into a fresh
 * contiguous floating tensor, one thread per element, with the formulas of
 * cpu_random (src/cpu/cpu_backend.c) over the same counter-based generator
 * (wk_uniform in scalar_math.h). Element i of a uniform tensor is draw
 * offset + i; of a normal one, Box-Muller over draws 2i and 2i + 1. So after
 * manual_seed a tensor has the same values on the CPU and on a GPU: the same
 * bits for uniform draws, and for normal ones up to the last bits of the
 * device's log and cos. */
#include "cuda.h"
#include "cuda_dtype.cuh"

namespace { /* everything but the entry points is internal to this file */

__global__ void __launch_bounds__(WK_CUDA_THREADS)
    random_kernel(char *data, int dtype, int64_t n, int normal, uint64_t seed, uint64_t offset) {
    int64_t size = wk_cu_dtype_size(dtype), step = (int64_t)gridDim.x * blockDim.x;
    /* rounding to a narrow float must not reach 1.0: cap at the dtype's largest
     * value below 1 (1 - 2^-24, 1 - 2^-11, 1 - 2^-8) */
    double below = dtype == WICK_FLOAT16 ? 0.99951171875 : dtype == WICK_BFLOAT16 ? 0.99609375 : 0.99999994039535522;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        double v;
        if (!normal) {
            v = wk_uniform(seed, offset + (uint64_t)i);
            if (dtype != WICK_FLOAT64 && v > below) v = below;
        } else {
            double u1 = wk_uniform(seed, offset + 2 * (uint64_t)i);
            double u2 = wk_uniform(seed, offset + 2 * (uint64_t)i + 1);
            v = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
        }
        wk_cu_store_double(data + i * size, dtype, v);
    }
}

} // namespace

extern "C" wick_status cuda_random(wick_tensor *out, int normal, uint64_t seed, uint64_t offset) {
    const char *name = normal ? "randn" : "rand";
    int64_t n = wick_tensor_numel(out);
    if (n == 0) return WICK_OK;
    int device = out->storage->device.index;
    cudaStream_t stream = wk_cuda_enter(device, name);
    if (!stream) return WICK_ERR_DEVICE; /* wk_cuda_enter has set the message */
    random_kernel<<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, stream>>>(wk_data(out), (int)out->dtype, n, normal, seed,
                                                                     offset);
    return wk_cuda_check_launch(name, device);
}
