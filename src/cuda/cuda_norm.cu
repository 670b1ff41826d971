/* CUDA kernels of the fused transformer ops (the CPU's are in src/cpu/cpu_norm.c,
 * same formulas): GELU's backward (elementwise), layer_norm forward and
 * backward (a warp per row; the weight and bias gradients a thread per column
 * over all rows, so no atomics and a fixed order), cross entropy with class
 * indices forward and backward (a warp per row; a target out of range is
 * reported through the device error record like gather's), batch_norm forward
 * and backward (a block per channel). float32 and
 * float64, contiguous operands. */
#include "cuda.h"

#define WK_NO_DEVICE WICK_ERR_DEVICE /* the runtime set the message */

namespace {

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
#define WARPS_PER_BLOCK (WK_CUDA_THREADS / 32)

__device__ __forceinline__ float k_exp(float x) { return expf(x); }
__device__ __forceinline__ double k_exp(double x) { return exp(x); }
__device__ __forceinline__ float k_log(float x) { return logf(x); }
__device__ __forceinline__ double k_log(double x) { return log(x); }
__device__ __forceinline__ float k_erf(float x) { return erff(x); }
__device__ __forceinline__ double k_erf(double x) { return erf(x); }
__device__ __forceinline__ float k_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double k_tanh(double x) { return tanh(x); }

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
    for (int s = 16; s > 0; s >>= 1) v += __shfl_xor_sync(0xffffffffu, v, s);
    return v;
}
template <typename T> __device__ __forceinline__ T warp_max(T v) { /* NaN wins */
#pragma unroll
    for (int s = 16; s > 0; s >>= 1) {
        T o = __shfl_xor_sync(0xffffffffu, v, s);
        v = (v != v || v > o) ? v : o;
    }
    return v;
}

/* ---- GELU backward ---- */

template <typename T> __global__ void act_back_kernel(T *gi, const T *g, const T *x, int64_t n, int form) {
    GRID_STRIDE(i, n) {
        T v = x[i], d;
        if (form == WK_ACT_RELU) {
            gi[i] = v <= 0 ? (T)0 : g[i];
            continue;
        }
        if (form == WK_ACT_GELU_TANH) {
            T t = k_tanh((T)0.7978845608028654 * (v + (T)0.044715 * v * v * v));
            d = (T)0.5 * (1 + t) + (T)0.5 * v * (1 - t * t) * (T)0.7978845608028654 * (1 + 3 * (T)0.044715 * v * v);
        } else {
            d = (T)0.5 * (1 + k_erf(v * (T)0.7071067811865476)) + v * (T)0.3989422804014327 * k_exp((T)-0.5 * v * v);
        }
        gi[i] = g[i] * d;
    }
}

/* ---- layer_norm ---- */

template <typename T>
__global__ void ln_kernel(T *y, T *mean_out, T *rstd_out, const T *x, const T *w, const T *b, int64_t rows, int64_t n,
                          T eps) {
    int lane = threadIdx.x % 32;
    for (int64_t r = (int64_t)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * WARPS_PER_BLOCK) {
        const T *xr = x + r * n;
        T s = 0;
        for (int64_t k = lane; k < n; k += 32) s += xr[k];
        T mean = warp_sum(s) / (T)n, q = 0;
        for (int64_t k = lane; k < n; k += 32) q += (xr[k] - mean) * (xr[k] - mean);
        T rstd = 1 / sqrt(warp_sum(q) / (T)n + eps);
        if (lane == 0) mean_out[r] = mean, rstd_out[r] = rstd;
        for (int64_t k = lane; k < n; k += 32) {
            T v = (xr[k] - mean) * rstd;
            if (w) v *= w[k];
            if (b) v += b[k];
            y[r * n + k] = v;
        }
    }
}

template <typename T>
__global__ void ln_back_kernel(T *gx, const T *g, const T *x, const T *w, const T *mean, const T *rstd, int64_t rows,
                               int64_t n) {
    int lane = threadIdx.x % 32;
    for (int64_t r = (int64_t)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32; r < rows;
         r += (int64_t)gridDim.x * WARPS_PER_BLOCK) {
        const T *xr = x + r * n, *gr = g + r * n;
        T m = mean[r], rs = rstd[r], s1 = 0, s2 = 0;
        for (int64_t k = lane; k < n; k += 32) {
            T gh = w ? gr[k] * w[k] : gr[k];
            s1 += gh;
            s2 += gh * (xr[k] - m) * rs;
        }
        T m1 = warp_sum(s1) / (T)n, m2 = warp_sum(s2) / (T)n;
        for (int64_t k = lane; k < n; k += 32) {
            T gh = w ? gr[k] * w[k] : gr[k];
            gx[r * n + k] = rs * (gh - m1 - (xr[k] - m) * rs * m2);
        }
    }
}

/* gw[k] = sum_r g xhat, gb[k] = sum_r g: a thread per column */
template <typename T>
__global__ void ln_back_wb_kernel(T *gw, T *gb, const T *g, const T *x, const T *mean, const T *rstd, int64_t rows,
                                  int64_t n) {
    GRID_STRIDE(k, n) {
        T sw = 0, sb = 0;
        for (int64_t r = 0; r < rows; r++) {
            T gv = g[r * n + k];
            sw += gv * (x[r * n + k] - mean[r]) * rstd[r];
            sb += gv;
        }
        if (gw) gw[k] = sw;
        if (gb) gb[k] = sb;
    }
}

/* ---- cross entropy ---- */

struct ce_params {
    int64_t rows, classes, ignore_index;
    int has_ignore;
    double smoothing;
    wk_device_error *rec; /* where a target out of range is reported */
};

/* row r's 0-based class, -1 when ignored or out of range (then reported) */
__device__ __forceinline__ int64_t ce_class(const int64_t *target, int64_t r, const ce_params &p) {
    int64_t t = target[r];
    if (p.has_ignore && t == p.ignore_index) return -1;
    if (t >= 1 && t <= p.classes) return t - 1;
    if (atomicCAS(&p.rec->flag, 0u, 1u) == 0u) {
        p.rec->op = WK_DEVERR_GATHER;
        p.rec->dim = 1;
        p.rec->value = t - 1; /* 0-based, as the record holds it */
        p.rec->size = p.classes;
    }
    return -1;
}

/* As src/cpu/cpu_norm.c: the loss from (max - x) + log(sum exp(x - max)), the
 * max and the log kept apart (their sum rounds the log away next to a large
 * max); lse_out [2 rows]: the maxima, then the log-sums. */
template <typename T>
__global__ void ce_kernel(T *loss, T *row_weight, T *lse_out, const T *x, const T *w, const int64_t *target,
                          ce_params p) {
    int lane = threadIdx.x % 32;
    int64_t c = p.classes;
    for (int64_t r = (int64_t)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32; r < p.rows;
         r += (int64_t)gridDim.x * WARPS_PER_BLOCK) {
        const T *xr = x + r * c;
        T m = -INFINITY;
        for (int64_t k = lane; k < c; k += 32) m = (xr[k] != xr[k] || xr[k] > m) ? xr[k] : m;
        m = warp_max(m);
        if (isinf(m) && m < 0) m = 0;
        T s = 0, sd = 0, sw = 0; /* sd: sum w (max - x) */
        for (int64_t k = lane; k < c; k += 32) {
            T d = m - xr[k];
            s += k_exp(-d);
            sd += w ? w[k] * d : d;
            sw += w ? w[k] : (T)1;
        }
        s = warp_sum(s), sd = warp_sum(sd), sw = warp_sum(sw);
        if (lane) continue;
        int64_t t = ce_class(target, r, p);
        T ls = k_log(s), eps = (T)p.smoothing;
        T wt = t < 0 ? (T)0 : w ? w[t] : (T)1;
        T l = t < 0 ? (T)0 : wt * ((m - xr[t]) + ls) * (1 - eps);
        if (eps > 0 && t >= 0) l += eps / (T)c * (sd + sw * ls);
        loss[r] = l, row_weight[r] = wt, lse_out[r] = m, lse_out[p.rows + r] = ls;
    }
}

template <typename T>
__global__ void ce_back_kernel(T *gx, const T *x, const T *w, const int64_t *target, const T *lse, const T *scale,
                               ce_params p) {
    int lane = threadIdx.x % 32;
    int64_t c = p.classes;
    for (int64_t r = (int64_t)blockIdx.x * WARPS_PER_BLOCK + threadIdx.x / 32; r < p.rows;
         r += (int64_t)gridDim.x * WARPS_PER_BLOCK) {
        int64_t t = ce_class(target, r, p);
        T *gr = gx + r * c;
        if (t < 0) {
            for (int64_t k = lane; k < c; k += 32) gr[k] = 0;
            continue;
        }
        T sw = 0;
        for (int64_t k = lane; k < c; k += 32) sw += w ? w[k] : (T)1;
        sw = warp_sum(sw);
        T s = scale[r], eps = (T)p.smoothing, epsc = eps / (T)c, wt = w ? w[t] : (T)1;
        T cp = s * (wt * (1 - eps) + epsc * sw);
        const T *xr = x + r * c;
        T m = lse[r], ls = lse[p.rows + r]; /* the max and the log-sum (ce_kernel) */
        for (int64_t k = lane; k < c; k += 32) {
            T v = cp * k_exp((xr[k] - m) - ls) - s * epsc * (w ? w[k] : (T)1);
            if (k == t) v -= s * wt * (1 - eps);
            gr[k] = v;
        }
    }
}

/* ---- batch_norm: a block per channel of x [n, c, s] (same formulas as
 * src/cpu/cpu_norm.c; sums in double, a fixed order per block) ---- */

/* the sum of v over the block (every thread gets it) */
__device__ double block_sum(double v, double *shared) {
    v = warp_sum(v);
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads(); /* shared may still be read from a previous call */
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < WARPS_PER_BLOCK ? shared[lane] : 0;
    return warp_sum(v);
}

template <typename T>
__global__ void bn_kernel(T *y, T *mean_out, T *rstd_out, T *rm, T *rv, const T *x, const T *w, const T *b, int64_t n,
                          int64_t c, int64_t s, double eps, double momentum, int training) {
    __shared__ double shared[WARPS_PER_BLOCK];
    int64_t ch = blockIdx.x, count = n * s;
    const T *xc = x + ch * s;
    T *yc = y + ch * s;
    double mean, rstd;
    if (training) {
        double sum = 0, q = 0;
        for (int64_t k = threadIdx.x; k < count; k += blockDim.x) sum += xc[(k / s) * c * s + k % s];
        mean = block_sum(sum, shared) / (double)count;
        for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
            double d = xc[(k / s) * c * s + k % s] - mean;
            q += d * d;
        }
        double var = block_sum(q, shared) / (double)count;
        rstd = 1 / sqrt(var + eps);
        if (threadIdx.x == 0 && rm) {
            rm[ch] = (T)((1 - momentum) * (double)rm[ch] + momentum * mean);
            rv[ch] = (T)((1 - momentum) * (double)rv[ch] + momentum * var * (double)count / (double)(count - 1));
        }
    } else {
        mean = rm[ch];
        rstd = 1 / sqrt((double)rv[ch] + eps);
    }
    if (threadIdx.x == 0) mean_out[ch] = (T)mean, rstd_out[ch] = (T)rstd;
    T scale = (T)rstd * (w ? w[ch] : (T)1), shift = (b ? b[ch] : (T)0) - (T)mean * scale;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
        int64_t at = (k / s) * c * s + k % s;
        yc[at] = xc[at] * scale + shift;
    }
}

template <typename T>
__global__ void bn_back_kernel(T *gx, T *gw, T *gb, const T *g, const T *x, const T *w, const T *mean_in,
                               const T *rstd_in, int64_t n, int64_t c, int64_t s, int training) {
    __shared__ double shared[WARPS_PER_BLOCK];
    int64_t ch = blockIdx.x, count = n * s;
    const T *xc = x + ch * s, *gc = g + ch * s;
    T mean = mean_in[ch], rstd = rstd_in[ch];
    double sg = 0, dot = 0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
        int64_t at = (k / s) * c * s + k % s;
        sg += gc[at];
        dot += (double)gc[at] * (double)(xc[at] - mean);
    }
    sg = block_sum(sg, shared);
    dot = block_sum(dot, shared);
    if (threadIdx.x == 0) {
        if (gw) gw[ch] = (T)(dot * rstd);
        if (gb) gb[ch] = (T)sg;
    }
    if (!gx) return;
    T scale = rstd * (w ? w[ch] : (T)1);
    T mg = training ? (T)(sg / (double)count) : (T)0, proj = training ? (T)(dot * rstd * rstd / (double)count) : (T)0;
    for (int64_t k = threadIdx.x; k < count; k += blockDim.x) {
        int64_t at = (k / s) * c * s + k % s;
        gx[ch * s + at] = (gc[at] - (xc[at] - mean) * proj - mg) * scale;
    }
}

unsigned row_blocks(int64_t rows) { return wk_cuda_blocks(rows * 32); }

wick_status begin(wick_dtype dtype, int device, int64_t n, const char *op, cudaStream_t *s) {
    *s = NULL;
    if (dtype != WICK_FLOAT32 && dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_UNSUPPORTED, "%s: not implemented for %s tensors on cuda", op, wick_dtype_name(dtype));
    if (n == 0) return WICK_OK;
    return (*s = wk_cuda_enter(device, op)) ? WICK_OK : WK_NO_DEVICE;
}

} // namespace

extern "C" wick_status cuda_act_backward(const wick_tensor *gi, const wick_tensor *g, const wick_tensor *x, int form) {
    const char *op = form == WK_ACT_RELU ? "relu backward" : "gelu backward";
    int64_t n = wick_tensor_numel(x);
    int device = x->storage->device.index;
    cudaStream_t s;
    wick_status st = begin(x->dtype, device, n, op, &s);
    if (st || !s) return st;
    if (x->dtype == WICK_FLOAT32)
        act_back_kernel<float><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(
            (float *)wk_data(gi), (const float *)wk_data(g), (const float *)wk_data(x), n, form);
    else
        act_back_kernel<double><<<wk_cuda_blocks(n), WK_CUDA_THREADS, 0, s>>>(
            (double *)wk_data(gi), (const double *)wk_data(g), (const double *)wk_data(x), n, form);
    return wk_cuda_check_launch(op, device);
}

extern "C" wick_status cuda_layer_norm(const wk_norm_args *a) {
    const char *op = "layer_norm";
    cudaStream_t s;
    wick_status st = begin(a->dtype, a->device, a->rows * a->n, op, &s);
    if (st || !s) return st;
    if (a->dtype == WICK_FLOAT32)
        ln_kernel<float><<<row_blocks(a->rows), WK_CUDA_THREADS, 0, s>>>(
            (float *)a->y, (float *)a->mean, (float *)a->rstd, (const float *)a->x, (const float *)a->w,
            (const float *)a->b, a->rows, a->n, (float)a->eps);
    else
        ln_kernel<double><<<row_blocks(a->rows), WK_CUDA_THREADS, 0, s>>>(
            (double *)a->y, (double *)a->mean, (double *)a->rstd, (const double *)a->x, (const double *)a->w,
            (const double *)a->b, a->rows, a->n, a->eps);
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_layer_norm_backward(const wk_norm_args *a) {
    const char *op = "layer_norm backward";
    cudaStream_t s;
    size_t es = a->dtype == WICK_FLOAT32 ? 4 : 8;
    wick_status st = begin(a->dtype, a->device, a->n, op, &s);
    if (st || !s) return st;
    if (a->rows == 0) { /* the weight and bias gradients of no row */
        if (a->gw && (st = wk_cuda_check(cudaMemsetAsync(a->gw, 0, (size_t)a->n * es, s), op, a->device))) return st;
        if (a->gb && (st = wk_cuda_check(cudaMemsetAsync(a->gb, 0, (size_t)a->n * es, s), op, a->device))) return st;
        return WICK_OK;
    }
    if (a->dtype == WICK_FLOAT32) {
        if (a->gx)
            ln_back_kernel<float><<<row_blocks(a->rows), WK_CUDA_THREADS, 0, s>>>(
                (float *)a->gx, (const float *)a->g, (const float *)a->x, (const float *)a->w,
                (const float *)a->mean, (const float *)a->rstd, a->rows, a->n);
        if (a->gw || a->gb)
            ln_back_wb_kernel<float><<<wk_cuda_blocks(a->n), WK_CUDA_THREADS, 0, s>>>(
                (float *)a->gw, (float *)a->gb, (const float *)a->g, (const float *)a->x, (const float *)a->mean,
                (const float *)a->rstd, a->rows, a->n);
    } else {
        if (a->gx)
            ln_back_kernel<double><<<row_blocks(a->rows), WK_CUDA_THREADS, 0, s>>>(
                (double *)a->gx, (const double *)a->g, (const double *)a->x, (const double *)a->w,
                (const double *)a->mean, (const double *)a->rstd, a->rows, a->n);
        if (a->gw || a->gb)
            ln_back_wb_kernel<double><<<wk_cuda_blocks(a->n), WK_CUDA_THREADS, 0, s>>>(
                (double *)a->gw, (double *)a->gb, (const double *)a->g, (const double *)a->x,
                (const double *)a->mean, (const double *)a->rstd, a->rows, a->n);
    }
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_batch_norm(const wk_bn_args *a) {
    const char *op = "batch_norm";
    cudaStream_t s;
    wick_status st = begin(a->dtype, a->device, a->n * a->c * a->s, op, &s);
    if (st || !s) return st;
    if (a->dtype == WICK_FLOAT32)
        bn_kernel<float><<<(unsigned)a->c, WK_CUDA_THREADS, 0, s>>>(
            (float *)a->y, (float *)a->mean, (float *)a->rstd, (float *)a->running_mean, (float *)a->running_var,
            (const float *)a->x, (const float *)a->w, (const float *)a->b, a->n, a->c, a->s, a->eps, a->momentum,
            a->training);
    else
        bn_kernel<double><<<(unsigned)a->c, WK_CUDA_THREADS, 0, s>>>(
            (double *)a->y, (double *)a->mean, (double *)a->rstd, (double *)a->running_mean, (double *)a->running_var,
            (const double *)a->x, (const double *)a->w, (const double *)a->b, a->n, a->c, a->s, a->eps, a->momentum,
            a->training);
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_batch_norm_backward(const wk_bn_args *a) {
    const char *op = "batch_norm backward";
    cudaStream_t s;
    wick_status st = begin(a->dtype, a->device, a->c, op, &s);
    if (st || !s) return st;
    if (a->n * a->s == 0) { /* the weight and bias gradients of no value */
        size_t es = a->dtype == WICK_FLOAT32 ? 4 : 8;
        if (a->gw && (st = wk_cuda_check(cudaMemsetAsync(a->gw, 0, (size_t)a->c * es, s), op, a->device))) return st;
        if (a->gb && (st = wk_cuda_check(cudaMemsetAsync(a->gb, 0, (size_t)a->c * es, s), op, a->device))) return st;
        return WICK_OK;
    }
    if (a->dtype == WICK_FLOAT32)
        bn_back_kernel<float><<<(unsigned)a->c, WK_CUDA_THREADS, 0, s>>>(
            (float *)a->gx, (float *)a->gw, (float *)a->gb, (const float *)a->g, (const float *)a->x,
            (const float *)a->w, (const float *)a->mean, (const float *)a->rstd, a->n, a->c, a->s, a->training);
    else
        bn_back_kernel<double><<<(unsigned)a->c, WK_CUDA_THREADS, 0, s>>>(
            (double *)a->gx, (double *)a->gw, (double *)a->gb, (const double *)a->g, (const double *)a->x,
            (const double *)a->w, (const double *)a->mean, (const double *)a->rstd, a->n, a->c, a->s, a->training);
    return wk_cuda_check_launch(op, a->device);
}

static wick_status ce_begin(const wk_ce_args *a, const char *op, cudaStream_t *s, ce_params *p) {
    wick_status st = begin(a->dtype, a->device, a->rows, op, s);
    if (st || !*s) return st;
    *p = ce_params{a->rows, a->classes, a->ignore_index, a->has_ignore, a->smoothing,
                   wk_cuda_error_record(a->device, *s, op)};
    return p->rec ? WICK_OK : WK_NO_DEVICE;
}

extern "C" wick_status cuda_cross_entropy(const wk_ce_args *a) {
    const char *op = "cross_entropy";
    cudaStream_t s;
    ce_params p;
    wick_status st = ce_begin(a, op, &s, &p);
    if (st || !s) return st;
    if (a->dtype == WICK_FLOAT32)
        ce_kernel<float><<<row_blocks(a->rows), WK_CUDA_THREADS, 0, s>>>(
            (float *)a->loss, (float *)a->row_weight, (float *)a->lse, (const float *)a->x, (const float *)a->weight,
            a->target, p);
    else
        ce_kernel<double><<<row_blocks(a->rows), WK_CUDA_THREADS, 0, s>>>(
            (double *)a->loss, (double *)a->row_weight, (double *)a->lse, (const double *)a->x,
            (const double *)a->weight, a->target, p);
    return wk_cuda_check_launch(op, a->device);
}

extern "C" wick_status cuda_cross_entropy_backward(const wk_ce_args *a) {
    const char *op = "cross_entropy backward";
    cudaStream_t s;
    ce_params p;
    wick_status st = ce_begin(a, op, &s, &p);
    if (st || !s) return st;
    if (a->dtype == WICK_FLOAT32)
        ce_back_kernel<float><<<row_blocks(a->rows), WK_CUDA_THREADS, 0, s>>>(
            (float *)a->gx, (const float *)a->x, (const float *)a->weight, a->target, (const float *)a->lse,
            (const float *)a->scale, p);
    else
        ce_back_kernel<double><<<row_blocks(a->rows), WK_CUDA_THREADS, 0, s>>>(
            (double *)a->gx, (const double *)a->x, (const double *)a->weight, a->target, (const double *)a->lse,
            (const double *)a->scale, p);
    return wk_cuda_check_launch(op, a->device);
}
