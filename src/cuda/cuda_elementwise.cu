/* CUDA elementwise kernels: copy (between any two dtypes), fill, unary, binary
 * (arithmetic and comparisons), clamp and where.
 *
 * They mirror src/cpu/cpu_elementwise.c and the copy/fill of cpu_backend.c:
 * the arithmetic is scalar_math.h's X-macro lists, instantiated for the same
 * compute types (float, double, int64), and conversions are cuda_dtype.cuh's,
 * which repeat dtype.c bit for bit. Each kernel takes the iterator by value and
 * finds every operand's element from the element's linear index in the way
 * src/cuda/cuda_ew_plan.h's plan picks on the host: all operands contiguous, one
 * (coalesced) dimension with any strides, two dims (row and column broadcasts:
 * one 32-bit division), or the general walk over up to WICK_MAX_DIMS dims
 * (32-bit when every index fits). Inputs that are numbers from the host come in
 * the iterator itself (ew_in), never through device memory. */
#include "cuda.h"
#include "cuda_dtype.cuh"
#include "cuda_ew_plan.h"

namespace { /* everything but the entry points is internal to this file */

/* ---- iteration: the plan (src/cuda/cuda_ew_plan.h) picks the index math ---- */

/* the kernels' kinds: the plan's, with GENERAL split by index width */
enum { EW_CONTIGUOUS, EW_LINEAR, EW_TWO_D, EW_GENERAL32, EW_GENERAL64 };

static int ew_kind(const wk_iter *it) {
    wk_ew_plan p = wk_ew_plan_for(it);
    switch (p.kind) {
    case WK_EW_CONTIGUOUS: return EW_CONTIGUOUS;
    case WK_EW_LINEAR: return EW_LINEAR;
    case WK_EW_TWO_D: return EW_TWO_D;
    default: return p.index32 ? EW_GENERAL32 : EW_GENERAL64;
    }
}

/* An input operand: elements in device memory, or a value from the host that
 * came in the kernel's arguments (wk_iter.host_values; its pointer is NULL and
 * its strides 0, so every offset is 0). */
template <typename T> struct ew_in {
    const T *p;
    T v;
    __device__ __forceinline__ T operator[](int64_t off) const { return p ? p[off] : v; }
};

template <typename T> static ew_in<T> ew_input(const wk_iter *it, int k) {
    ew_in<T> in;
    in.p = (const T *)it->data[k];
    memcpy(&in.v, &it->values[k], sizeof(T)); /* 0 unless a host value */
    return in;
}

/* Calls f(off) for every element; f holds the typed operands. Grid-stride
 * loops; 32-bit indices for the kinds that divide when the plan allows. */
template <int N, int KIND, class F>
__global__ void __launch_bounds__(WK_CUDA_THREADS) ew_kernel(const wk_iter it, F f) {
    int64_t off[N];
    if (KIND == EW_TWO_D || KIND == EW_GENERAL32) {
        uint32_t n = (uint32_t)it.numel, step = gridDim.x * blockDim.x;
        for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
            if (KIND == EW_TWO_D) wk_ew_offsets_two_d(&it, N, i, off);
            else wk_ew_offsets_general32(&it, N, i, off);
            f(off);
        }
    } else {
        int64_t step = (int64_t)gridDim.x * blockDim.x;
        for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < it.numel; i += step) {
            if (KIND == EW_CONTIGUOUS) wk_ew_offsets_contiguous(&it, N, i, off);
            else if (KIND == EW_LINEAR) wk_ew_offsets_linear(&it, N, i, off);
            else wk_ew_offsets_general64(&it, N, i, off);
            f(off);
        }
    }
}

/* Launches f over the iterator on its device's stream. `op` names the public op
 * in errors. Nothing to do for an empty iterator. */
template <int N, class F>
static wick_status ew_launch(const wk_iter *it, F f, const char *op) {
    if (it->numel == 0) return WICK_OK;
    cudaStream_t stream = wk_cuda_enter(it->device, op);
    if (!stream) return WICK_ERR_DEVICE; /* wk_cuda_enter has set the message */
    unsigned blocks = wk_cuda_blocks(it->numel);
    switch (ew_kind(it)) {
    case EW_CONTIGUOUS: ew_kernel<N, EW_CONTIGUOUS><<<blocks, WK_CUDA_THREADS, 0, stream>>>(*it, f); break;
    case EW_LINEAR: ew_kernel<N, EW_LINEAR><<<blocks, WK_CUDA_THREADS, 0, stream>>>(*it, f); break;
    case EW_TWO_D: ew_kernel<N, EW_TWO_D><<<blocks, WK_CUDA_THREADS, 0, stream>>>(*it, f); break;
    case EW_GENERAL32: ew_kernel<N, EW_GENERAL32><<<blocks, WK_CUDA_THREADS, 0, stream>>>(*it, f); break;
    default: ew_kernel<N, EW_GENERAL64><<<blocks, WK_CUDA_THREADS, 0, stream>>>(*it, f); break;
    }
    return wk_cuda_check_launch(op, it->device);
}

/* ---- 16-byte vector accesses (the contiguous plan; wk_ew_vector_width) ----
 * For functors with a vec<V>(j) member (unary and binary arithmetic): vector j
 * is elements [j * V, j * V + V); the last numel % V elements go one by one. */
template <typename T, int V> struct alignas(16) ew_vec {
    T v[V];
};

template <typename T, int V> __device__ __forceinline__ ew_vec<T, V> ew_load_vec(const ew_in<T> &in, int64_t j) {
    if (in.p) return reinterpret_cast<const ew_vec<T, V> *>(in.p)[j];
    ew_vec<T, V> r;
#pragma unroll
    for (int e = 0; e < V; e++) r.v[e] = in.v;
    return r;
}

template <int V, class F>
__global__ void __launch_bounds__(WK_CUDA_THREADS) ew_vec_kernel(int64_t numel, F f) {
    int64_t step = (int64_t)gridDim.x * blockDim.x, first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t nv = numel / V;
    for (int64_t j = first; j < nv; j += step) f.template vec<V>(j);
    for (int64_t i = nv * V + first; i < numel; i += step) {
        int64_t off[WK_MAX_OPERANDS] = {i, i, i, i};
        f(off);
    }
}

/* ew_launch, with 16-byte vectors of T where the plan allows them. */
template <typename T, int N, class F>
static wick_status ew_launch_vec(const wk_iter *it, F f, const char *op) {
    constexpr int V = 16 / sizeof(T);
    if (wk_ew_vector_width(it, wk_ew_plan_for(it)) != V) return ew_launch<N>(it, f, op);
    cudaStream_t stream = wk_cuda_enter(it->device, op);
    if (!stream) return WICK_ERR_DEVICE;
    ew_vec_kernel<V><<<wk_cuda_blocks((it->numel + V - 1) / V), WK_CUDA_THREADS, 0, stream>>>(it->numel, f);
    return wk_cuda_check_launch(op, it->device);
}

/* ---- copy ---- */

/* Same dtype: the element's bits, whatever they mean. */
template <typename U> struct copy_bits_fn {
    U *o;
    ew_in<U> x;
    __device__ void operator()(const int64_t *off) const { o[off[0]] = x[off[1]]; }
};

/* The C casts cpu_backend.c uses for its common pairs (convert_typed): into
 * float32/float64 from float32, float64, int32, uint8, bool (its byte) and
 * int64, and into int64 from uint8, bool and int32. */
__host__ __device__ static constexpr bool copy_is_cast(int to, int from) {
    return ((to == WICK_FLOAT32 || to == WICK_FLOAT64) &&
            (from == WICK_FLOAT32 || from == WICK_FLOAT64 || from == WICK_INT32 || from == WICK_UINT8 ||
             from == WICK_BOOL || from == WICK_INT64)) ||
           (to == WICK_INT64 && (from == WICK_UINT8 || from == WICK_BOOL || from == WICK_INT32));
}

__host__ __device__ static constexpr bool dtype_floating(int d) {
    return d == WICK_FLOAT32 || d == WICK_FLOAT64 || d == WICK_FLOAT16 || d == WICK_BFLOAT16;
}

/* Different dtypes, converted as cpu_backend.c's copy_run does: a C cast for
 * the common pairs, through int64 between integer types (so nothing above 2^53
 * is rounded), through double otherwise. */
template <int TO, int FROM> struct copy_convert_fn {
    typedef typename wk_cu_elem<TO>::type To;
    typedef typename wk_cu_elem<FROM>::type From;
    To *o;
    ew_in<From> x;
    __device__ void operator()(const int64_t *off) const {
        From v = x[off[1]];
        if constexpr (copy_is_cast(TO, FROM)) {
            o[off[0]] = (To)v;
        } else if constexpr (!dtype_floating(TO) && !dtype_floating(FROM)) {
            wk_cu_store_int64((char *)(o + off[0]), TO, wk_cu_load_int64((const char *)&v, FROM));
        } else {
            wk_cu_store_double((char *)(o + off[0]), TO, wk_cu_load_double((const char *)&v, FROM));
        }
    }
};

template <int TO, int FROM> static wick_status copy_pair(const wk_iter *it) {
    typedef typename wk_cu_elem<TO>::type To;
    typedef typename wk_cu_elem<FROM>::type From;
    copy_convert_fn<TO, FROM> f = {(To *)it->data[0], ew_input<From>(it, 1)};
    return ew_launch<2>(it, f, "copy_");
}

template <int TO> static wick_status copy_to(const wk_iter *it) {
    switch (it->dtypes[1]) {
    case WICK_FLOAT32: return copy_pair<TO, WICK_FLOAT32>(it);
    case WICK_FLOAT64: return copy_pair<TO, WICK_FLOAT64>(it);
    case WICK_FLOAT16: return copy_pair<TO, WICK_FLOAT16>(it);
    case WICK_BFLOAT16: return copy_pair<TO, WICK_BFLOAT16>(it);
    case WICK_INT64: return copy_pair<TO, WICK_INT64>(it);
    case WICK_INT32: return copy_pair<TO, WICK_INT32>(it);
    case WICK_UINT8: return copy_pair<TO, WICK_UINT8>(it);
    case WICK_BOOL: return copy_pair<TO, WICK_BOOL>(it);
    default: return wick_fail(WICK_ERR_DTYPE, "copy_: invalid source dtype %d", (int)it->dtypes[1]);
    }
}

template <typename U> static wick_status copy_bits(const wk_iter *it) {
    copy_bits_fn<U> f = {(U *)it->data[0], ew_input<U>(it, 1)};
    return ew_launch<2>(it, f, "copy_");
}

} // namespace

extern "C" wick_status cuda_copy(const wk_iter *it) {
    if (it->dtypes[0] == it->dtypes[1]) {
        switch (wk_dtype_size(it->dtypes[0])) {
        case 1: return copy_bits<uint8_t>(it);
        case 2: return copy_bits<uint16_t>(it);
        case 4: return copy_bits<uint32_t>(it);
        default: return copy_bits<uint64_t>(it);
        }
    }
    switch (it->dtypes[0]) {
    case WICK_FLOAT32: return copy_to<WICK_FLOAT32>(it);
    case WICK_FLOAT64: return copy_to<WICK_FLOAT64>(it);
    case WICK_FLOAT16: return copy_to<WICK_FLOAT16>(it);
    case WICK_BFLOAT16: return copy_to<WICK_BFLOAT16>(it);
    case WICK_INT64: return copy_to<WICK_INT64>(it);
    case WICK_INT32: return copy_to<WICK_INT32>(it);
    case WICK_UINT8: return copy_to<WICK_UINT8>(it);
    case WICK_BOOL: return copy_to<WICK_BOOL>(it);
    default: return wick_fail(WICK_ERR_DTYPE, "copy_: invalid destination dtype %d", (int)it->dtypes[0]);
    }
}

namespace {

/* ---- fill ---- */

template <typename U> struct fill_fn {
    U *o;
    U bits;
    __device__ void operator()(const int64_t *off) const { o[off[0]] = bits; }
};

template <typename U> static wick_status fill_bits(const wk_iter *it, uint64_t bits) {
    fill_fn<U> f = {(U *)it->data[0], (U)bits};
    return ew_launch<1>(it, f, "fill_");
}

} // namespace

extern "C" wick_status cuda_fill(const wk_iter *it, double value) {
    /* the value's bytes in the dtype, made on the host by dtype.c itself as
     * cpu_fill makes them, then written as an integer of the same width
     * (room for a complex128, whose fills complex.c makes of real ones) */
    char bytes[16] = {0};
    wk_store_double(bytes, it->dtypes[0], value);
    switch (wk_dtype_size(it->dtypes[0])) {
    case 1: { uint8_t b; memcpy(&b, bytes, 1); return fill_bits<uint8_t>(it, b); }
    case 2: { uint16_t b; memcpy(&b, bytes, 2); return fill_bits<uint16_t>(it, b); }
    case 4: { uint32_t b; memcpy(&b, bytes, 4); return fill_bits<uint32_t>(it, b); }
    default: { uint64_t b; memcpy(&b, bytes, 8); return fill_bits<uint64_t>(it, b); }
    }
}

namespace {

/* ---- the scalar expressions of scalar_math.h, one function per op ----
 * OP is a template argument, so each switch folds to its one case. */

template <int OP> __device__ __forceinline__ float unary_math(float x) {
#define CASE_F32(ID, FE, DE) case WICK_##ID: return (FE);
    switch (OP) { WK_UNARY_FLOAT_MATH(CASE_F32) }
#undef CASE_F32
    return x;
}
template <int OP> __device__ __forceinline__ double unary_math(double x) {
#define CASE_F64(ID, FE, DE) case WICK_##ID: return (DE);
    switch (OP) { WK_UNARY_FLOAT_MATH(CASE_F64) }
#undef CASE_F64
    return x;
}
template <int OP> __device__ __forceinline__ int64_t unary_math(int64_t x) {
#define CASE_I64(ID, IE) case WICK_##ID: return (IE);
    switch (OP) { WK_UNARY_INT_MATH(CASE_I64) }
#undef CASE_I64
    return x;
}

template <int OP> __device__ __forceinline__ float binary_math(float a, float b, float alpha) {
#define CASE_F32(ID, FE, DE, IE) case WICK_##ID: return (FE);
    switch (OP) { WK_BINARY_MATH(CASE_F32) }
#undef CASE_F32
    return a;
}
template <int OP> __device__ __forceinline__ double binary_math(double a, double b, double alpha) {
#define CASE_F64(ID, FE, DE, IE) case WICK_##ID: return (DE);
    switch (OP) { WK_BINARY_MATH(CASE_F64) }
#undef CASE_F64
    return a;
}
template <int OP> __device__ __forceinline__ int64_t binary_math(int64_t a, int64_t b, int64_t alpha) {
#define CASE_I64(ID, FE, DE, IE) case WICK_##ID: return (IE);
#define CASE_INT_ONLY(ID, IE) case WICK_##ID: return (IE);
    switch (OP) { WK_BINARY_MATH(CASE_I64) WK_BINARY_INT_ONLY_MATH(CASE_INT_ONLY) }
#undef CASE_I64
#undef CASE_INT_ONLY
    return a;
}
template <int OP, typename T> __device__ __forceinline__ uint8_t compare_math(T a, T b) {
#define CASE_CMP(ID, E) case WICK_##ID: return (E);
    switch (OP) { WK_COMPARE_MATH(CASE_CMP) }
#undef CASE_CMP
    return 0;
}

/* ---- unary ---- */

template <typename T, int OP> struct unary_fn {
    T *o;
    ew_in<T> x;
    __device__ void operator()(const int64_t *off) const { o[off[0]] = unary_math<OP>(x[off[1]]); }
    template <int V> __device__ void vec(int64_t j) const {
        ew_vec<T, V> a = ew_load_vec<T, V>(x, j), r;
#pragma unroll
        for (int e = 0; e < V; e++) r.v[e] = unary_math<OP>(a.v[e]);
        reinterpret_cast<ew_vec<T, V> *>(o)[j] = r;
    }
};

template <typename T, int OP> static wick_status unary_launch(const wk_iter *it) {
    unary_fn<T, OP> f = {(T *)it->data[0], ew_input<T>(it, 1)};
    return ew_launch_vec<T, 2>(it, f, wick_unary_name((wick_unary_op)OP));
}

} // namespace

extern "C" wick_status cuda_unary(wick_unary_op op, const wk_iter *it) {
    /* the compute dtype is the input's, as in cpu_unary */
    wick_dtype t = it->dtypes[1];
#define CASE_F32(ID, FE, DE) case WICK_##ID: return unary_launch<float, WICK_##ID>(it);
#define CASE_F64(ID, FE, DE) case WICK_##ID: return unary_launch<double, WICK_##ID>(it);
#define CASE_I64(ID, IE) case WICK_##ID: return unary_launch<int64_t, WICK_##ID>(it);
    if (t == WICK_FLOAT32) {
        switch (op) { WK_UNARY_FLOAT_MATH(CASE_F32) default: break; }
    } else if (t == WICK_FLOAT64) {
        switch (op) { WK_UNARY_FLOAT_MATH(CASE_F64) default: break; }
    } else {
        switch (op) { WK_UNARY_INT_MATH(CASE_I64) default: break; }
    }
#undef CASE_F32
#undef CASE_F64
#undef CASE_I64
    return wick_fail(WICK_ERR_UNSUPPORTED, "%s: no CUDA kernel for %s", wick_unary_name(op), wick_dtype_name(t));
}

namespace {

/* ---- binary ---- */

template <typename T, int OP> struct binary_fn {
    T *o;
    ew_in<T> a, b;
    T alpha;
    __device__ void operator()(const int64_t *off) const { o[off[0]] = binary_math<OP>(a[off[1]], b[off[2]], alpha); }
    template <int V> __device__ void vec(int64_t j) const {
        ew_vec<T, V> x = ew_load_vec<T, V>(a, j), y = ew_load_vec<T, V>(b, j), r;
#pragma unroll
        for (int e = 0; e < V; e++) r.v[e] = binary_math<OP>(x.v[e], y.v[e], alpha);
        reinterpret_cast<ew_vec<T, V> *>(o)[j] = r;
    }
};

template <typename T, int OP> struct compare_fn {
    uint8_t *o; /* bool */
    ew_in<T> a, b;
    __device__ void operator()(const int64_t *off) const { o[off[0]] = compare_math<OP>(a[off[1]], b[off[2]]); }
};

template <typename T, int OP> static wick_status binary_launch(const wk_iter *it, double alpha) {
    /* alpha in the compute type, cast on the host as cpu_elementwise.c casts it */
    binary_fn<T, OP> f = {(T *)it->data[0], ew_input<T>(it, 1), ew_input<T>(it, 2), (T)alpha};
    return ew_launch_vec<T, 3>(it, f, wick_binary_name((wick_binary_op)OP));
}

template <typename T, int OP> static wick_status compare_launch(const wk_iter *it) {
    compare_fn<T, OP> f = {(uint8_t *)it->data[0], ew_input<T>(it, 1), ew_input<T>(it, 2)};
    return ew_launch<3>(it, f, wick_binary_name((wick_binary_op)OP));
}

template <typename T> static wick_status binary_typed(wick_binary_op op, const wk_iter *it, double alpha) {
#define CASE_ARITH(ID, FE, DE, IE) case WICK_##ID: return binary_launch<T, WICK_##ID>(it, alpha);
#define CASE_CMP(ID, E) case WICK_##ID: return compare_launch<T, WICK_##ID>(it);
    switch (op) {
        WK_BINARY_MATH(CASE_ARITH)
        WK_COMPARE_MATH(CASE_CMP)
    default: return wick_fail(WICK_ERR_ARGUMENT, "invalid binary op %d", (int)op);
    }
#undef CASE_ARITH
#undef CASE_CMP
}

} // namespace

extern "C" wick_status cuda_binary(wick_binary_op op, const wk_iter *it, double alpha) {
    /* the compute dtype is the inputs', as in cpu_binary (comparisons write bool) */
    switch (it->dtypes[1]) {
    case WICK_FLOAT32: return binary_typed<float>(op, it, alpha);
    case WICK_FLOAT64: return binary_typed<double>(op, it, alpha);
    default: break;
    }
    /* the integer-only ops (elementwise.c never sends them a floating dtype) */
#define CASE_INT_ONLY(ID, IE) case WICK_##ID: return binary_launch<int64_t, WICK_##ID>(it, alpha);
    switch (op) { WK_BINARY_INT_ONLY_MATH(CASE_INT_ONLY) default: break; }
#undef CASE_INT_ONLY
    return binary_typed<int64_t>(op, it, alpha);
}

namespace {

/* ---- clamp: NaN passes through, like PyTorch ---- */

template <typename T> struct clamp_fn {
    T *o;
    ew_in<T> x;
    T lo, hi;
    __device__ void operator()(const int64_t *off) const {
        T v = x[off[1]];
        o[off[0]] = v < lo ? lo : v > hi ? hi : v;
    }
};

template <typename T> static wick_status clamp_launch(const wk_iter *it, T lo, T hi) {
    clamp_fn<T> f = {(T *)it->data[0], ew_input<T>(it, 1), lo, hi};
    return ew_launch<2>(it, f, "clamp");
}

} // namespace

extern "C" wick_status cuda_clamp(const wk_iter *it, double lo, double hi) {
    switch (it->dtypes[1]) {
    case WICK_FLOAT32: return clamp_launch<float>(it, (float)lo, (float)hi);
    case WICK_FLOAT64: return clamp_launch<double>(it, lo, hi);
    default: /* integer bounds: the integers inside [lo, hi], as cpu_clamp computes them */
        return clamp_launch<int64_t>(it, wk_clamp_lo_i64(lo), wk_clamp_hi_i64(hi));
    }
}

namespace {

/* ---- where: operand 1 is the condition (bool, one byte) ---- */

template <typename T> struct where_fn {
    T *o;
    ew_in<uint8_t> c;
    ew_in<T> x, y;
    __device__ void operator()(const int64_t *off) const { o[off[0]] = c[off[1]] ? x[off[2]] : y[off[3]]; }
};

template <typename T> static wick_status where_launch(const wk_iter *it) {
    where_fn<T> f = {(T *)it->data[0], ew_input<uint8_t>(it, 1), ew_input<T>(it, 2), ew_input<T>(it, 3)};
    return ew_launch<4>(it, f, "where");
}

} // namespace

extern "C" wick_status cuda_where(const wk_iter *it) {
    switch (it->dtypes[2]) {
    case WICK_FLOAT32: return where_launch<float>(it);
    case WICK_FLOAT64: return where_launch<double>(it);
    default: return where_launch<int64_t>(it);
    }
}
