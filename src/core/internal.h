/* Internal structures of the core, shared by the core and the backends.
 * Nothing here is part of the public API (include/wick.h). */
#ifndef WICK_INTERNAL_H
#define WICK_INTERNAL_H

#include "wick.h"
#include "scalar_math.h" /* wk_uniform, shared with the GPU kernels */

#include <stdbool.h>
#include <string.h>

typedef struct wick_backend wick_backend;

/* A compile-time check in C11 and in C++ (the CUDA sources include this). */
#ifdef __cplusplus
#define WK_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define WK_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* The op lists of wick.h and their arithmetic in scalar_math.h, counted at
 * compile time (as ggml's static_assert on GGML_OP_COUNT): an op added to
 * WICK_UNARY_OPS or WICK_BINARY_OPS without its expression here fails the
 * build instead of leaving a NULL in a backend's kernel table. The kernel
 * tables index by [WICK_##ID], so every ID is an op and, with the counts equal,
 * every op has its entry. */
#define WK_COUNT_ONE2(id, a) +1
#define WK_COUNT_ONE3(id, a, b) +1
#define WK_COUNT_ONE4(id, a, b, c) +1
WK_STATIC_ASSERT(0 WK_UNARY_FLOAT_MATH(WK_COUNT_ONE3) WK_UNARY_INT_ONLY_MATH(WK_COUNT_ONE2) == WICK_NUM_UNARY,
                 "every unary op needs its expression in scalar_math.h (WK_UNARY_FLOAT_MATH or "
                 "WK_UNARY_INT_ONLY_MATH)");
WK_STATIC_ASSERT(0 WK_BINARY_MATH(WK_COUNT_ONE4) WK_COMPARE_MATH(WK_COUNT_ONE2) WK_BINARY_INT_ONLY_MATH(WK_COUNT_ONE2) ==
                     WICK_NUM_BINARY,
                 "every binary op needs its expression in scalar_math.h (WK_BINARY_MATH, WK_COMPARE_MATH or "
                 "WK_BINARY_INT_ONLY_MATH)");
#undef WK_COUNT_ONE2
#undef WK_COUNT_ONE3
#undef WK_COUNT_ONE4

struct wick_storage {
    int refcount; /* atomic */
    wick_device device;
    size_t nbytes;
    void *data; /* NULL on meta */
    const wick_backend *backend;
    bool inline_data; /* small CPU storages keep their data in the same block */
    bool pinned;      /* CPU data in page-locked memory (wick_pin_memory; freed by `release`) */
    /* memory the storage does not own (a file mapping, a host's buffer): called
     * instead of the backend's free when the storage dies */
    void (*release)(void *ctx);
    void *release_ctx;
    size_t block_size; /* bytes of this struct's own block (wk_malloc), inline data included */
    /* in-place writes so far (atomic accesses), shared by every view of the storage,
     * and those of them made through a t.data (wick_data): autograd compares
     * version - data_writes (wk_grad_version) with the value a saved tensor had
     * when saved; caches keyed on the data (autocast's casts) use version */
    unsigned version;
    unsigned data_writes;
    /* tensors on it made by wick_detach (atomic): they share the values but
     * no graph, so an in-place op on a tracked tensor may write under them */
    int aliases;
};
typedef struct wick_storage wick_storage;

struct wk_node;

struct wick_tensor {
    int refcount; /* atomic */
    bool in_storage_block; /* allocated inside its storage's block (small tensors) */
    bool requires_grad;
    bool detached_alias; /* made by wick_detach: counted in its storage's aliases */
    bool nograd_view;    /* a view made in no-grad mode (or of one): no tracked in-place write through it */
    bool data_alias; /* made by wick_data, or a view of one: its writes count in data_writes */
    bool learnt; /* required grad as a leaf at some time: a parameter, also once frozen */
    struct wk_node *grad_fn; /* the node that made this tensor; NULL for leaves */
    struct wick_tensor *grad;
    int64_t hook_id; /* autograd hooks (wick_hook_id); 0: none */
    int ndim;
    wick_dtype dtype;
    wick_storage *storage;
    int64_t offset; /* elements */
    int64_t sizes[WICK_MAX_DIMS];
    int64_t strides[WICK_MAX_DIMS];
    /* the storage whose block holds this header (in_storage_block) once the
     * header has taken other data (wick_tensor_set_): kept until the header
     * dies; NULL while that storage is `storage` itself */
    wick_storage *header_block;
    /* The tensor a view made in grad mode was taken from (the root of its
     * chain of views), retained; NULL for any other tensor. An in-place write
     * into the view rewrites the base's history (wk_adopt_inplace: PyTorch's
     * CopySlices). */
    struct wick_tensor *view_base;
    /* the storage's version when the view's history was last made: written
     * since, the history is made again from the base's (wk_refresh_view) */
    unsigned view_version;
};

/* Every in-place write bumps its storage's version: wk_check_inplace does it
 * for the core's in-place ops, so only paths around it call this. A load and
 * a store, not a locked add: two threads writing one tensor at once may lose
 * a count, but the version still moves away from every saved value. */
/* The same elements in the same order: offset, sizes and strides equal. */
static inline bool wk_same_layout(const struct wick_tensor *a, const struct wick_tensor *b) {
    if (a->ndim != b->ndim || a->offset != b->offset) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->sizes[i] != b->sizes[i] || (a->sizes[i] > 1 && a->strides[i] != b->strides[i])) return false;
    return true;
}

static inline void wk_bump_version(const struct wick_tensor *t) {
    unsigned *v = &t->storage->version;
    __atomic_store_n(v, __atomic_load_n(v, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    if (t->data_alias) {
        unsigned *d = &t->storage->data_writes;
        __atomic_store_n(d, __atomic_load_n(d, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
    }
}

/* Runs stmt, a write into storage s that its op has counted already (its
 * wk_check_inplace, or a new tensor's first values): the copy_ or fill_ inside
 * counts no second one, so that x._version moves by one per op, as PyTorch's. */
#define WK_COUNTED(s, stmt)                                                                   \
    do {                                                                                      \
        struct wick_storage *wk_s_ = (s);                                                     \
        unsigned wk_v_ = __atomic_load_n(&wk_s_->version, __ATOMIC_RELAXED);                  \
        unsigned wk_d_ = __atomic_load_n(&wk_s_->data_writes, __ATOMIC_RELAXED);              \
        stmt;                                                                                 \
        __atomic_store_n(&wk_s_->version, wk_v_, __ATOMIC_RELAXED);                           \
        __atomic_store_n(&wk_s_->data_writes, wk_d_, __ATOMIC_RELAXED);                       \
    } while (0)

/* The writes autograd's saved-tensor check sees: all but those through a t.data. */
static inline unsigned wk_grad_version(const struct wick_storage *s) {
    return __atomic_load_n(&s->version, __ATOMIC_RELAXED) - __atomic_load_n(&s->data_writes, __ATOMIC_RELAXED);
}

/* ---- the one allocator of CPU tensor memory and the log (alloc.c) ----
 * Storages, tensor headers and CPU data all come from wk_malloc and go back
 * through wk_free with their size: the host's allocator (wick_set_allocator)
 * when one is set, else malloc/free. */
void *wk_malloc(size_t nbytes);
/* The same, `align`-aligned when the default allocator serves it (a host's
 * gives 64-byte alignment). */
void *wk_malloc_aligned(size_t nbytes, size_t align);
void wk_free(void *p, size_t nbytes);
int wk_host_allocator(void); /* 1 when a host allocator is set */
void wk_storage_born(void);  /* live-storage count: wick_set_allocator needs 0 */
void wk_storage_died(void);
/* A message to the host's log (wick_set_log), or to stderr as "wick: msg". */
void wk_logf(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- storage and tensor construction (tensor.c) ---- */

wick_status wk_storage_new(wick_storage **out, wick_device dev, size_t nbytes);
void wk_storage_release(wick_storage *s);
/* A 1-D CPU tensor over memory it does not own; release(ctx) runs when its
 * storage dies. */
wick_status wk_tensor_wrap(wick_tensor **out, void *data, int64_t numel, wick_dtype dtype, void (*release)(void *),
                           void *ctx);
/* A fresh contiguous tensor. */
wick_status wk_tensor_new(wick_tensor **out, int ndim, const int64_t *sizes, wick_dtype dtype,
                          wick_device dev);
/* A new view header over t's storage with the given geometry. */
wick_status wk_tensor_view(wick_tensor **out, const wick_tensor *t, int ndim, const int64_t *sizes,
                           const int64_t *strides, int64_t offset);
/* The same over t's memory read as another dtype (offset, sizes and strides in
 * its elements): view_as_real and view_as_complex. */
wick_status wk_tensor_view_dtype(wick_tensor **out, const wick_tensor *t, wick_dtype dtype, int ndim,
                                 const int64_t *sizes, const int64_t *strides, int64_t offset);
int64_t wk_numel(int ndim, const int64_t *sizes);
void wk_contiguous_strides(int ndim, const int64_t *sizes, int64_t *strides);
static inline char *wk_data(const wick_tensor *t) {
    char *base = (char *)t->storage->data;
    return base ? base + t->offset * (int64_t)wick_dtype_size(t->dtype) : NULL;
}
static inline bool wk_is_meta(const wick_tensor *t) { return t->storage->device.type == WICK_META; }
/* Normalises a 0-based dim that may be negative; fails with a clear message. */
wick_status wk_wrap_dim(const char *op, int *dim, int ndim);
/* "[2, 3]" */
const char *wk_shape_str(int ndim, const int64_t *sizes, char *buf, size_t size);
#define WK_SHAPE_BUF 256

/* ---- dispatcher checks (dispatch.c) ---- */

/* The same-device rule: every tensor operand on one device, except 0-dim CPU tensors
 * which may join any device as scalars. `names` are the op's argument names. */
wick_status wk_check_same_device(const char *op, int n, const wick_tensor *const *tensors,
                                 const char *const *names);
/* The same rule without refusing complex operands, which wk_check_same_device
 * does (wk_check_real): for the ops that move elements as they are (index_select,
 * gather, cat, slices written by copies) and those complex.c and fft.c compose. */
wick_status wk_check_same_device_any(const char *op, int n, const wick_tensor *const *tensors,
                                     const char *const *names);
/* Fails when the device cannot run kernels in this build (CUDA without a GPU). */
wick_status wk_check_device_usable(wick_device dev);
const wick_backend *wk_backend_for(wick_device dev);

/* ---- dtype helpers (dtype.c) ---- */

double wk_load_double(const char *p, wick_dtype dtype); /* a complex one: its real part */
/* the dtype of a complex dtype's parts (float32 for complex64), and the
 * complex dtype whose parts hold a dtype's values (complex64 but for float64) */
wick_dtype wk_complex_part(wick_dtype d);
wick_dtype wk_complex_of(wick_dtype d);

/* ---- complex tensors (complex.c): ops composed of real ops on their parts ---- */

/* An error naming `op` when one of ts (NULL entries skipped) is complex. */
wick_status wk_check_real(const char *op, int n, const wick_tensor *const *ts);
/* a op b / op a with a complex operand or result dtype `result`; into
 * `inplace` (checked castable) when not NULL, else a new *out */
wick_status wk_complex_binary(wick_tensor **out, wick_tensor *inplace, wick_binary_op op, const wick_tensor *a,
                              const wick_tensor *b, double alpha, wick_dtype result);
wick_status wk_complex_unary(wick_tensor **out, wick_tensor *inplace, wick_unary_op op, const wick_tensor *a);
wick_status wk_complex_reduce(wick_tensor **out, wick_reduce_op op, const wick_tensor *a, int dim, int keepdim);
/* fn (wick_matmul, wick_mm or wick_bmm) of operands one of which is complex */
wick_status wk_complex_product(wick_tensor **out,
                               wick_status (*fn)(wick_tensor **, const wick_tensor *, const wick_tensor *),
                               const wick_tensor *a, const wick_tensor *b);
wick_status wk_complex_where(wick_tensor **out, const wick_tensor *cond, const wick_tensor *a, const wick_tensor *b,
                             wick_dtype result);
wick_status wk_complex_linear(wick_tensor **out, const wick_tensor *x, const wick_tensor *weight,
                              const wick_tensor *bias);
/* the kernels' part of wick_copy_ and wick_fill_ for complex tensors */
wick_status wk_complex_copy(wick_tensor *dst, const wick_tensor *src);
wick_status wk_complex_fill(wick_tensor *t, double re, double im);
int64_t wk_load_int64(const char *p, wick_dtype dtype);
void wk_store_double(char *p, wick_dtype dtype, double v);
void wk_store_int64(char *p, wick_dtype dtype, int64_t v);
float wk_half_to_float(uint16_t h);
uint16_t wk_float_to_half(float f);
/* bfloat16 is the top half of a float32: inline, so loops over it vectorise */
static inline float wk_bf16_to_float(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}
static inline uint16_t wk_float_to_bf16(float f) { /* round to nearest even */
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}
static inline bool wk_is_integral(wick_dtype d) { return !wick_dtype_is_floating(d); }
/* The dtype facts, stated once: X(enum, name, bytes, floating, signed, digits).
 * digits is std::numeric_limits<T>::digits: the significand's bits of a
 * floating dtype (implicit bit included), the value bits of an integer one.
 * dtype.c builds wick_dtype_info (and name/size/is_floating) from it, the
 * binding exports that to Lua (core.dtype_info), wk_dtype_size below reads it. */
#define WK_DTYPE_TABLE(X)                                                                          \
    X(WICK_FLOAT32, "float32", 4, 1, 1, 24, 0) X(WICK_FLOAT64, "float64", 8, 1, 1, 53, 0)          \
    X(WICK_FLOAT16, "float16", 2, 1, 1, 11, 0) X(WICK_BFLOAT16, "bfloat16", 2, 1, 1, 8, 0)         \
    X(WICK_INT64, "int64", 8, 0, 1, 63, 0) X(WICK_INT32, "int32", 4, 0, 1, 31, 0)                  \
    X(WICK_UINT8, "uint8", 1, 0, 0, 8, 0) X(WICK_BOOL, "bool", 1, 0, 0, 1, 0)                      \
    X(WICK_COMPLEX64, "complex64", 8, 0, 1, 24, 1) X(WICK_COMPLEX128, "complex128", 16, 0, 1, 53, 1)
/* An error when two elements of `t` share one memory location (a stride 0 over
 * a size > 1: an expanded view), which an op writing into `t` refuses as
 * PyTorch's does (elementwise.c). */
wick_status wk_check_writable(const char *op, const wick_tensor *t);
/* A number written into a tensor of dtype d fits it (PyTorch's overflow check; dtype.c). */
wick_status wk_check_scalar(const char *op, double v, wick_dtype d);
/* 1 when name is a PyTorch dtype (or alias) that wick does not have (dtype.c) */
int wk_missing_dtype(const char *name);
/* the hot-path form of wick_dtype_size (positional, which C++ takes too: the
 * rows are in enum order, which dtype.c checks at compile time) */
static inline size_t wk_dtype_size(wick_dtype d) {
#define WK_DTYPE_SIZE(id, name, bytes, floating, is_signed, digits, cplx) bytes,
    static const unsigned char sizes[WICK_NUM_DTYPES] = {WK_DTYPE_TABLE(WK_DTYPE_SIZE)};
#undef WK_DTYPE_SIZE
    return (unsigned)d < WICK_NUM_DTYPES ? sizes[d] : 0;
}


/* ---- elementwise iteration (shared by backends) ----
 * An iterator is the broadcast shape plus per-operand strides (in elements) and base
 * pointers. Operand 0 is the output. Dims are coalesced where possible.
 * Host values: an input that is a 0-dim CPU tensor of an op on another device
 * travels by value in the iterator (so in the kernel's arguments: no copy to the
 * device, no wait): bit k of host_values set, values[k] holds its bytes in
 * dtypes[k], data[k] is NULL and its strides are 0. Kernels read an operand
 * through wk_iter_operand. On the CPU such an input keeps its pointer. */
#define WK_MAX_OPERANDS 4
typedef struct wk_iter {
    int device; /* the device index of the operands (-1 for the CPU); every kernel
                   argument block carries one, so a GPU backend knows where to run */
    int ndim;
    int nops;
    unsigned host_values; /* bit k: operand k is values[k] */
    int64_t numel;
    int64_t sizes[WICK_MAX_DIMS];
    int64_t strides[WK_MAX_OPERANDS][WICK_MAX_DIMS];
    char *data[WK_MAX_OPERANDS];
    wick_dtype dtypes[WK_MAX_OPERANDS];
    uint64_t values[WK_MAX_OPERANDS]; /* little-endian bytes of a host value */
} wk_iter;

/* Operand k's base: its data, or its host value inside the iterator. */
static inline char *wk_iter_operand(const wk_iter *it, int k) {
    return it->data[k] ? it->data[k] : (char *)&it->values[k];
}

/* Builds an iterator over `out`'s shape; the inputs must broadcast to it. */
void wk_iter_init(wk_iter *it, int nops, const wick_tensor *const *ops);
/* Broadcast shape of two shapes; fails naming both. */
wick_status wk_broadcast_shapes(const char *op, int na, const int64_t *a, int nb, const int64_t *b,
                                int *nout, int64_t *out);

/* ---- backends ----
 * A backend is a table of function pointers: memory, copies, and one entry per
 * kernel. Kernels trust their inputs: the dispatcher has checked devices, dtypes
 * and shapes. Elementwise kernels compute in float32, float64 or int64 ("compute
 * dtypes"); the dispatcher converts other dtypes around them. */
typedef struct wk_gemm_args {
    int device;
    wick_dtype dtype;
    int trans_a, trans_b;
    int64_t m, n, k;
    const char *a;
    int64_t lda;
    const char *b;
    int64_t ldb;
    char *c;
    int64_t ldc;
    double alpha, beta;
} wk_gemm_args;

typedef struct wk_reduce_args {
    int device;
    wick_reduce_op op;
    wick_dtype in_dtype, out_dtype;
    /* outer iteration over the kept dims, inner over the reduced one */
    int outer_ndim;
    int64_t outer_sizes[WICK_MAX_DIMS];
    int64_t in_outer_strides[WICK_MAX_DIMS];
    int64_t out_outer_strides[WICK_MAX_DIMS];
    int64_t idx_outer_strides[WICK_MAX_DIMS];
    int64_t inner_size, inner_stride;
    const char *in;
    char *out;
    char *indices; /* int64, may be NULL */
    int correction;
} wk_reduce_args;

/* A 2-D convolution over contiguous tensors of one compute dtype (float32 or
 * float64): input [n, c, h, w], weight [o, c / groups, kh, kw], output
 * [n, o, oh, ow]. Shapes and parameters are checked by the core (nn_ops.c). */
/* The activations whose backward is one fused kernel (wick_backend.act_backward). */
enum { WK_ACT_GELU, WK_ACT_GELU_TANH, WK_ACT_RELU };

typedef struct wk_conv2d_args {
    int device;
    wick_dtype dtype;
    int64_t n, c, h, w;
    int64_t o, kh, kw;
    int64_t oh, ow;
    int64_t sh, sw, ph, pw, dh, dw, groups;
} wk_conv2d_args;

/* 2-D pooling over `planes` (n * c) contiguous [h, w] planes of one compute dtype;
 * indices (int64) are flat positions within a plane, 0-based. */
typedef struct wk_pool2d_args {
    int device;
    wick_dtype dtype;
    int64_t planes, h, w, oh, ow;
    int64_t kh, kw, sh, sw, ph, pw;
    int count_include_pad;
} wk_pool2d_args;

/* 2-D upsampling of `planes` (n * c) contiguous [h, w] planes to [oh, ow] of
 * one compute dtype: mode 0 nearest, 1 bilinear; scale_h / scale_w are
 * 1 / scale_factor when the caller gave one, else 0 (src/core/upsample.h). */
typedef struct wk_upsample_args {
    int device;
    wick_dtype dtype;
    int64_t planes, h, w, oh, ow;
    int mode, align_corners;
    double scale_h, scale_w;
} wk_upsample_args;

/* 2-D grid sampling (src/core/grid_sample.c) of an input [n, c, h, w] at a grid
 * [n, oh, ow, 2] into [n, c, oh, ow], all contiguous of one compute dtype; mode,
 * padding: WK_GRID_* (src/core/grid_sample.h). */
typedef struct wk_grid_sample_args {
    int device;
    wick_dtype dtype;
    int64_t n, c, h, w, oh, ow;
    int mode, padding, align_corners;
} wk_grid_sample_args;

/* Sorting and scans (src/core/sort.c) over a contiguous input of one compute
 * dtype (float32, float64 or int64) seen as [outer, n, inner], along n. Sorts
 * are stable (ties by position), NaN above every number; indices 0-based. */
typedef struct wk_sort_args {
    int device;
    wick_dtype dtype;
    int64_t outer, n, inner;
    int64_t k; /* values and indices hold the first k (<= n) of each sorted line: [outer, k, inner] */
    int descending;
    const char *in;
    char *values;     /* contiguous, in dtype */
    int64_t *indices; /* contiguous */
} wk_sort_args;

typedef struct wk_scan_args {
    int device;
    wick_dtype dtype;
    int prod;    /* 0: cumulative sum, 1: cumulative product */
    int reverse; /* from the end of each line (the backward of cumsum) */
    int64_t outer, n, inner;
    const char *in;
    char *out; /* contiguous, same layout, in dtype */
} wk_scan_args;

/* How a 2-D view can be given to gemm: row-major with leading dimension ld,
 * transposed or not. False when neither fits (then it is copied first). */
bool wk_gemm_layout(const wick_tensor *t, int *trans, int64_t *ld);

/* layer_norm over `rows` rows of `n` (src/core/nn_ops.c): contiguous data in
 * dtype. Forward: x, w, b (w, b NULL when absent) -> y, mean, rstd ([rows]).
 * Backward: g, x, w, mean, rstd -> gx, gw, gb (each NULL when not wanted). */
typedef struct wk_norm_args {
    int device;
    wick_dtype dtype;
    int64_t rows, n;
    double eps;
    const char *x, *w, *b, *g;
    char *y, *mean, *rstd, *gx, *gw, *gb;
} wk_norm_args;

/* Batch normalisation of x viewed as [n, c, s] (contiguous, dtype float32 or
 * float64), statistics per channel over n * s values. Forward: training, the
 * batch's mean and biased variance (the running ones, when given, updated in
 * place: (1 - momentum) r + momentum stat, the variance unbiased); else the
 * running ones; mean and rstd = 1 / sqrt(var + eps) saved per channel; y =
 * (x - mean) rstd w + b. Backward (g, x, w, mean, rstd): any of gx, gw, gb NULL
 * when not wanted; in training gx also flows through the batch statistics. */
typedef struct wk_bn_args {
    int device;
    wick_dtype dtype;
    int64_t n, c, s;
    double eps, momentum;
    int training;
    const char *x, *w, *b, *g;
    char *y, *mean, *rstd, *running_mean, *running_var, *gx, *gw, *gb;
} wk_bn_args;

/* Cross entropy of logits x [rows, classes] against 1-based int64 class
 * targets (a target equal to ignore_index, when has_ignore, counts nothing);
 * weight [classes] or NULL; label smoothing. Forward -> loss, row_weight
 * ([rows], dtype) and lse ([2 rows], dtype: each row's max, then each row's
 * log(sum exp(x - max)), kept apart as the log-softmax (x - max) - log(sum)
 * needs them: their sum rounds log(sum) away next to a large max); the kernel
 * fails (WICK_ERR_INDEX) on a target out of range. Backward: scale ([rows],
 * the loss's incoming gradient per row), lse -> gx. */
typedef struct wk_ce_args {
    int device;
    wick_dtype dtype;
    int64_t rows, classes;
    const char *x, *weight;
    const int64_t *target;
    int64_t ignore_index;
    int has_ignore;
    double smoothing;
    char *loss, *row_weight, *lse;
    const char *scale;
    char *gx;
} wk_ce_args;

/* Dense decompositions (wick_linalg_*): `batch` row-major m x n float64
 * matrices, contiguous on the host. a is overwritten (scratch); outputs as
 * the kind says; info[b] = 0, or the matrix's failure (LU: 1 + the first zero
 * pivot; Cholesky: 1 + the order of the minor that is not positive-definite;
 * the iterative ones: 1 when they did not converge). */
typedef enum {
    WK_DECOMP_LU,       /* a = P L U in place (L unit lower m x k, U upper k x n, k = min(m, n)),
                         * pivots[b * k + i] = the row swapped with row i */
    WK_DECOMP_CHOLESKY, /* square, symmetric: a = L L^T, L in a (upper part zeroed) */
    WK_DECOMP_QR,       /* q: m x kq (kq = m if complete else min(m, n)), r: kq x n */
    WK_DECOMP_EIGH,     /* symmetric: w (n, ascending), q: n x n eigenvectors in columns */
    WK_DECOMP_SVD,      /* q = U: m x ku, w = S (min(m, n), descending), r = Vh: kv x n; full: ku = m, kv = n */
    WK_DECOMP_SOLVE,    /* square a: r (n x k) overwritten with a^-1 r (through LU; pivots: n per matrix) */
    WK_DECOMP_DET       /* square a: w[2b] = the sign of det, w[2b + 1] = log |det| (through LU) */
} wk_decomp_kind;
typedef struct {
    wk_decomp_kind kind;
    int full; /* QR complete, SVD full_matrices */
    int64_t batch, m, n, k;
    double *a, *q, *r, *w;
    int64_t *pivots;
    int *info;
} wk_decomp_args;

struct wk_attn_args;    /* src/core/attention.h */
struct wk_rnn_args;     /* src/core/rnn.h */
struct wk_adam_hparams; /* src/core/optim.h */
struct wk_adadelta_hparams;
struct wk_sgd_hparams;

struct wick_backend {
    const char *name;
    void *(*alloc)(size_t nbytes, int device_index);
    void (*free)(void *ptr, size_t nbytes, int device_index);
    /* returns cached free memory to the system (caching allocators) */
    void (*empty_cache)(void);
    void (*cache_size)(int64_t *bytes, int64_t *blocks); /* its cached free blocks (NULL: none) */
    /* the backend's own worker threads (the CPU's matrix library) follow the
     * core's thread budget (wick_set_num_threads); NULL: it has none */
    void (*set_num_threads)(int n);
    /* nbytes from src to dst, both contiguous, between this backend's device
     * and the CPU or another device of this backend. Returns once the bytes have
     * arrived unless non_blocking and the host side is pinned. NULL on the CPU. */
    wick_status (*transfer)(void *dst, wick_device dst_dev, const void *src, wick_device src_dev, size_t nbytes,
                            int non_blocking);
    /* dst = src elementwise with conversion (same device, any strides, same shape). */
    wick_status (*copy)(const wk_iter *it);
    wick_status (*fill)(const wk_iter *it, double value);
    wick_status (*unary)(wick_unary_op op, const wk_iter *it);
    wick_status (*binary)(wick_binary_op op, const wk_iter *it, double alpha);
    /* the inner loop of binary op `op` (WICK_ADD..WICK_DIV) in dtype `compute`,
     * over n elements (p[k]: operand k's first, s[k]: its stride in elements,
     * extra: a double alpha), for the dispatcher's tiny-op fast path
     * (src/core/fast.c); NULL: no fast path */
    void (*(*binary_loop)(int op, wick_dtype compute))(char **p, const int64_t *s, int64_t n, const void *extra);
    wick_status (*clamp)(const wk_iter *it, double lo, double hi);
    wick_status (*where)(const wk_iter *it);
    /* operands out, mask (1 byte: bool or uint8): out = value where mask is
     * set, in place. May be NULL (the core then uses where). */
    wick_status (*masked_fill)(const wk_iter *it, double value);
    wick_status (*reduce)(const wk_reduce_args *args);
    wick_status (*gemm)(const wk_gemm_args *args);
    wick_status (*softmax)(const wick_tensor *out, const wick_tensor *in, int dim, int log);
    /* Fused backwards and transformer ops (contiguous operands of one compute
     * dtype; NULL: the core composes them from other ops where it can). */
    wick_status (*softmax_backward)(const wick_tensor *gi, const wick_tensor *g, const wick_tensor *y, int dim, int log);
    /* gi = g f'(x) for an activation f (form: a WK_ACT_ value) */
    wick_status (*act_backward)(const wick_tensor *gi, const wick_tensor *g, const wick_tensor *x, int form);
    wick_status (*layer_norm)(const wk_norm_args *args);
    wick_status (*layer_norm_backward)(const wk_norm_args *args);
    wick_status (*batch_norm)(const wk_bn_args *args);
    wick_status (*batch_norm_backward)(const wk_bn_args *args);
    wick_status (*cross_entropy)(const wk_ce_args *args);
    wick_status (*cross_entropy_backward)(const wk_ce_args *args);
    /* fills a fresh contiguous tensor with draws (seed, offset + i) */
    wick_status (*random)(wick_tensor *out, int normal, uint64_t seed, uint64_t offset);
    /* Index kernels get 0-based int64 indices and report one out of range
     * (WICK_ERR_INDEX, naming the value and the size) instead of touching memory. */
    wick_status (*index_select)(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index);
    wick_status (*gather)(wick_tensor *out, const wick_tensor *in, int dim, const wick_tensor *index);
    wick_status (*scatter)(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
    /* accumulating forms: out[index] += src */
    wick_status (*scatter_add)(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
    wick_status (*index_add)(wick_tensor *out, int dim, const wick_tensor *index, const wick_tensor *src);
    /* Convolution (all pointers to contiguous data in args->dtype; bias may be NULL).
     * backward: any of grad_input, grad_weight, grad_bias may be NULL (not wanted). */
    wick_status (*conv2d_forward)(const wk_conv2d_args *args, char *out, const char *input, const char *weight,
                                  const char *bias);
    wick_status (*conv2d_backward)(const wk_conv2d_args *args, const char *grad_out, const char *input,
                                   const char *weight, char *grad_input, char *grad_weight, char *grad_bias);
    /* Pooling: indices may be NULL in max_pool2d; backward kernels overwrite grad_input. */
    wick_status (*max_pool2d)(const wk_pool2d_args *args, char *out, int64_t *indices, const char *input);
    wick_status (*max_pool2d_backward)(const wk_pool2d_args *args, char *grad_input, const char *grad_out,
                                const int64_t *indices);
    wick_status (*avg_pool2d)(const wk_pool2d_args *args, char *out, const char *input);
    wick_status (*avg_pool2d_backward)(const wk_pool2d_args *args, char *grad_input, const char *grad_out);
    /* Upsampling; the backward kernel overwrites grad_input. */
    wick_status (*upsample2d)(const wk_upsample_args *args, char *out, const char *input);
    wick_status (*upsample2d_backward)(const wk_upsample_args *args, char *grad_input, const char *grad_out);
    /* Grid sampling; the backward overwrites grad_input and grad_grid, either may be NULL (not wanted). */
    wick_status (*grid_sample2d)(const wk_grid_sample_args *args, char *out, const char *input, const char *grid);
    wick_status (*grid_sample2d_backward)(const wk_grid_sample_args *args, const char *grad_out, const char *input,
                                          const char *grid, char *grad_input, char *grad_grid);
    /* fused scaled-dot-product attention and its backward (src/core/attention.h) */
    wick_status (*attention_forward)(const struct wk_attn_args *args);
    wick_status (*attention_backward)(const struct wk_attn_args *args);
    /* one step of the fused recurrent layer over its B x H elements, and its
     * backward (src/core/rnn.h); NULL: wick_rnn_layer is not implemented there */
    wick_status (*rnn_step)(const struct wk_rnn_args *args);
    wick_status (*rnn_step_backward)(const struct wk_rnn_args *args);
    /* sort along a dim, and cumulative sums/products (wk_sort_args, wk_scan_args) */
    wick_status (*sort)(const wk_sort_args *args);
    wick_status (*scan)(const wk_scan_args *args);
    /* one fused Adam/AdamW step in place over n contiguous elements of `dtype`
     * (float32 or float64) of p, g, exp_avg, exp_avg_sq (src/core/optim.h);
     * NULL: the optimizer keeps its composed update */
    void (*adam_step)(wick_dtype dtype, char *p, const char *g, char *exp_avg, char *exp_avg_sq, int64_t n,
                      const struct wk_adam_hparams *h);
    /* GradScaler's unscale (wick_amp_unscale_): n contiguous elements of `dtype`
     * (float32 or float64) of g times *inv_scale in place, and *found_inf = 1
     * when any was inf or NaN; both scalars float32 on the same device. NULL:
     * not implemented there */
    wick_status (*amp_unscale)(wick_dtype dtype, int device, char *g, int64_t n, const float *inv_scale,
                               float *found_inf);
    /* one fused SGD step in place over n contiguous elements of p, g and (with
     * momentum) buf, same dtypes; NULL: the composed update */
    void (*sgd_step)(wick_dtype dtype, char *p, const char *g, char *buf, int64_t n,
                     const struct wk_sgd_hparams *h);
    /* one fused Adadelta step in place over n contiguous elements of p, g,
     * square_avg and acc_delta, same dtypes; NULL: the composed update */
    void (*adadelta_step)(wick_dtype dtype, char *p, const char *g, char *square_avg, char *acc_delta, int64_t n,
                          const struct wk_adadelta_hparams *h);
    /* dense decompositions in float64 on the host (wk_decomp_args); the core
     * runs them on the CPU's for every device */
    wick_status (*decompose)(const wk_decomp_args *args);
    /* n-point discrete Fourier transforms along the middle dim of contiguous
     * complex data of `dtype` (complex64 or complex128) shaped [outer, n,
     * inner] into `out` (the same layout; it may be `in`): out[k] = sum_j
     * in[j] e^(sign 2 pi i jk / n), unnormalised, sign -1 or +1 (inner 1:
     * the rows). NULL: the core multiplies by the DFT matrix instead
     * (src/core/fft.c). */
    wick_status (*fft)(wick_dtype dtype, const char *in, char *out, int64_t outer, int64_t n, int64_t inner, int sign);
    /* the forward transform of real rows of even length n (float32 or
     * float64, contiguous) into their n/2 + 1 non-negative frequencies
     * (complex64 or complex128 rows). NULL: the core transforms the rows as
     * complex ones. */
    wick_status (*rfft)(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n);
    /* the inverse (sign +1, unnormalised): real rows of even length n of
     * `dtype` (float32 or float64) from complex rows of their n/2 + 1 points,
     * the imaginary parts at 0 and n/2 taken as 0. NULL: the core composes it. */
    wick_status (*irfft)(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n);
};

extern const wick_backend wk_cpu_backend;
/* Out of memory on a backend: runs the thread's out-of-memory handler
 * (wick_set_oom_handler: the Lua binding collects dead tensors), then gives
 * back the backend's cached blocks (tensor.c). */
void wk_oom_collect(const wick_backend *b);
/* b->alloc, and after a failure wk_oom_collect and one more try: for tensors'
 * storage and for scratch memory alike. NULL when that fails too. */
void *wk_alloc_or_collect(const wick_backend *b, size_t nbytes, int device);
/* The host's collection of dead tensors (wick_set_oom_handler's handler), if any:
 * a dead view the host has not collected yet still counts on its storage. */
void wk_host_collect(void);
#ifdef WICK_WITH_CUDA
extern const wick_backend wk_cuda_backend; /* src/cuda/cuda_backend.cu */
#endif

/* ---- threads (threads.c) ---- */
/* Runs fn(ctx, begin, end) over [0, n) split among the pool's threads when n is at
 * least `grain`; otherwise inline on the caller. */
typedef void (*wk_range_fn)(void *ctx, int64_t begin, int64_t end);
/* Fails with WICK_ERR_INTERRUPTED (the flag lowered) when the calling thread's
 * interrupt flag stopped the work part way: the kernel must report it. */
wick_status wk_parallel_for(int64_t n, int64_t grain, wk_range_fn fn, void *ctx)
#if defined(__GNUC__)
    __attribute__((warn_unused_result))
#endif
    ;

/* The same, every part run to its end whatever the interrupt flag says: for a
 * kernel that updates in place and must not stop half way (an optimizer's
 * step); the interrupt stays raised for the next op. */
void wk_parallel_for_whole(int64_t n, int64_t grain, wk_range_fn fn, void *ctx);

/* ---- random (random.c) ---- */
/* Reserves `count` draws from the generator and returns (seed, offset) for them. */
void wk_rng_reserve(uint64_t count, uint64_t *seed, uint64_t *offset);
/* The draws themselves, wk_uniform(seed, counter), are in scalar_math.h: the
 * GPU kernels compute the same function. */

/* ---- memory accounting ---- */
void wk_account_bytes(int64_t delta);
/* The allocator statistics (alloc.c; wick_get_memory_stats): a CPU storage's
 * data made / freed, an allocation retried after a collection, one that failed. */
void wk_memstat_alloc(int64_t nbytes);
void wk_memstat_free(int64_t nbytes);
void wk_memstat_retry(void);
void wk_memstat_oom(void);
int64_t wk_memstat_allocated_total(void); /* bytes made since start (the profiler's per-op bytes) */

/* ---- interrupts (error.c; wick.h "interrupts") ----
 * Each thread watches one flag. Ops call wk_check_interrupt at their start;
 * wk_parallel_for looks at the caller's flag between pieces and fails when it
 * stopped a kernel part way, so every kernel that stopped early is a failed
 * kernel and its op fails (kernels return that status to the core). */
/* The flag the calling thread watches (never NULL). */
wick_interrupt_flag *wk_interrupt_watched(void);
static inline bool wk_interrupt_raised(const wick_interrupt_flag *flag) {
    return __atomic_load_n(&flag->raised, __ATOMIC_RELAXED) != 0;
}
/* Sets the last error to "interrupted (in op)" ("interrupted" for NULL) and
 * returns WICK_ERR_INTERRUPTED; lowers nothing. */
wick_status wk_interrupted(const char *op);
/* WICK_ERR_INTERRUPTED (and the flag lowered) when the watched flag is raised. */
wick_status wk_check_interrupt(const char *op);

#endif
