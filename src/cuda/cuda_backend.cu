/* The CUDA backend's table: the runtime's memory and copy entries
 * (cuda_runtime.cu) and the kernels (cuda_*.cu), in the order of struct
 * wick_backend (src/core/internal.h), which the dispatcher calls for tensors on
 * "cuda:N". Designated initializers make the compiler check names and order. */
#include "cuda.h"

extern "C" const wick_backend wk_cuda_backend = {
    .name = "cuda",
    .alloc = wk_cuda_backend_alloc,
    .free = wk_cuda_backend_free,
    .empty_cache = wk_cuda_backend_empty_cache,
    .transfer = wk_cuda_backend_transfer,
    .copy = cuda_copy,
    .fill = cuda_fill,
    .unary = cuda_unary,
    .binary = cuda_binary,
    .clamp = cuda_clamp,
    .where = cuda_where,
    .reduce = cuda_reduce,
    .gemm = cuda_gemm,
    .softmax = cuda_softmax,
    .gelu_backward = cuda_gelu_backward,
    .layer_norm = cuda_layer_norm,
    .layer_norm_backward = cuda_layer_norm_backward,
    .cross_entropy = cuda_cross_entropy,
    .cross_entropy_backward = cuda_cross_entropy_backward,
    .random = cuda_random,
    .index_select = cuda_index_select,
    .gather = cuda_gather,
    .scatter = cuda_scatter,
    .scatter_add = cuda_scatter_add,
    .index_add = cuda_index_add,
    .conv2d_forward = cuda_conv2d_forward,
    .conv2d_backward = cuda_conv2d_backward,
    .max_pool2d = cuda_max_pool2d,
    .max_pool2d_backward = cuda_max_pool2d_backward,
    .avg_pool2d = cuda_avg_pool2d,
    .avg_pool2d_backward = cuda_avg_pool2d_backward,
    .attention_forward = cuda_attention_forward,
    .attention_backward = cuda_attention_backward,
    .sort = cuda_sort,
    .scan = cuda_scan,
};
