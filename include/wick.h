/*
 * wick.h — the C API of wick, a tensor runtime with a C core.
 *
 * This header is the whole contract for C programs that use wick without Lua
 * and for the Lua binding itself (src/lua/), which is just another client.
 *
 * Conventions
 * -----------
 * - Every function that can fail returns a wick_status. WICK_OK is 0; on any
 *   other value wick_last_error() gives a human-readable message (thread-local,
 *   valid until the next failing call on the same thread). Nothing here ever
 *   calls longjmp, exit or abort.
 * - Functions that create a tensor write it to an out-parameter `wick_tensor **out`
 *   only on success. The caller owns one reference and drops it with
 *   wick_tensor_release(). On failure *out is left untouched.
 * - Tensors are views: (storage, offset, sizes, strides, dtype). A storage is
 *   reference-counted and lives on one device. Views share their storage.
 * - Dimensions and indices are 0-based in C (the Lua binding converts from
 *   1-based), but error messages count them from 1, as wick's Lua users do.
 * - A tensor on the "meta" device has a shape and dtype but no data: every op
 *   runs its checks and shape logic and allocates nothing.
 *
 * Thread safety: distinct tensors may be used from distinct threads. What is
 * per process (allocator, log, thread count, random generator) may be changed
 * while other threads run ops; "embedding in a host" below says how each
 * behaves then. Interrupts are per thread (per Lua state): "interrupts".
 */
#ifndef WICK_H
#define WICK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define WICK_API __declspec(dllexport)
#else
#define WICK_API __attribute__((visibility("default")))
#endif

#define WICK_MAX_DIMS 16

/* ---- status and errors -------------------------------------------------- */

typedef enum wick_status {
    WICK_OK = 0,
    WICK_ERR_ARGUMENT,    /* bad argument value (e.g. negative size) */
    WICK_ERR_DEVICE,      /* same-device rule, unknown or unavailable device */
    WICK_ERR_SHAPE,       /* shapes that do not fit */
    WICK_ERR_DTYPE,       /* dtype not supported by the op */
    WICK_ERR_INDEX,       /* index out of range */
    WICK_ERR_OOM,         /* out of memory; the message contains "out of memory" */
    WICK_ERR_IO,          /* file errors */
    WICK_ERR_UNSUPPORTED, /* not implemented for this device or dtype */
    WICK_ERR_INTERRUPTED  /* stopped by an interrupt (wick_interrupt, "interrupts" below) */
} wick_status;

/* The message of the last failure on this thread ("" if none). */
WICK_API const char *wick_last_error(void);
/* Sets the last error; returns `status` so callers can `return wick_fail(...)`. */
WICK_API wick_status wick_fail(wick_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- interrupts -------------------------------------------------------------
 * An interrupt is a flag that ops look at: at their start, and long CPU kernels
 * between pieces of their work (the pool's threads look at the flag of the
 * thread whose op they are running). An op that sees its flag raised fails
 * with WICK_ERR_INTERRUPTED ("interrupted") and lowers the flag again, so the
 * next op runs; an op whose kernel stopped part way never returns WICK_OK.
 *
 * Each thread watches one flag: the process's default flag, unless it chose
 * its own with wick_interrupt_watch. So an interrupt reaches only the threads
 * that watch the flag it raises:
 * - a C host with one thread of work (or one interrupt for all of them) calls
 *   wick_interrupt(), which raises the default flag;
 * - a host with several threads gives each its own wick_interrupt_flag, makes
 *   each thread watch its flag, and raises the one it means;
 * - the Lua binding gives every lua_State its own flag, which the thread
 *   running the state's ops watches from its first op on (wick_embed.h:
 *   wick_lua_interrupt aims at one state). A thread that ran ops for a state
 *   keeps watching that state's flag until it runs another state's ops,
 *   closes that state, or calls wick_interrupt_watch. */

/* A flag: zero-initialised (static, or `= {0}`) means not raised. Touch it only
 * through the functions below; it must outlive every thread's watch of it. */
typedef struct wick_interrupt_flag {
    int raised;
} wick_interrupt_flag;

/* Raises the process's default flag. Async-signal-safe, any thread. Threads
 * that watch a flag of their own (every Lua state's) are not disturbed. */
WICK_API void wick_interrupt(void);
/* Raises `flag` (NULL: the default flag). Async-signal-safe, any thread. */
WICK_API void wick_interrupt_raise(wick_interrupt_flag *flag);
/* 1 when `flag` (NULL: the default) was raised, and lowers it; else 0.
 * Async-signal-safe. */
WICK_API int wick_interrupt_take(wick_interrupt_flag *flag);
/* Makes the calling thread's ops watch `flag` (NULL: the default flag) and
 * returns the flag it watched before (NULL for the default). */
WICK_API wick_interrupt_flag *wick_interrupt_watch(wick_interrupt_flag *flag);
/* wick_interrupt_take of the flag the calling thread watches. An op already
 * reports an interrupt it saw; this clears one that came after the last op. */
WICK_API int wick_take_interrupt(void);

/* ---- dtypes -------------------------------------------------------------- */

typedef enum wick_dtype {
    WICK_FLOAT32 = 0, /* the default */
    WICK_FLOAT64,
    WICK_FLOAT16,
    WICK_BFLOAT16,
    WICK_INT64,
    WICK_INT32,
    WICK_UINT8,
    WICK_BOOL,
    WICK_COMPLEX64,  /* pairs of float32: real, imaginary (src/core/complex.c) */
    WICK_COMPLEX128, /* pairs of float64 */
    WICK_NUM_DTYPES
} wick_dtype;

WICK_API const char *wick_dtype_name(wick_dtype dtype);           /* "float32" */
WICK_API wick_status wick_dtype_parse(const char *name, wick_dtype *out);
WICK_API size_t wick_dtype_size(wick_dtype dtype);                /* bytes */
WICK_API int wick_dtype_is_floating(wick_dtype dtype); /* 0 for the complex dtypes, as PyTorch's */
WICK_API int wick_dtype_is_complex(wick_dtype dtype);
/* Everything wick states about a dtype, in one row (the binding exports these
 * rows to Lua as core.dtype_info). digits is std::numeric_limits<T>::digits:
 * the significand's bits of a floating dtype (implicit bit included: float32
 * 24), the value bits of an integer one (int64 63, uint8 8, bool 1). */
typedef struct wick_dtype_info {
    const char *name; /* "float32" */
    unsigned char size, is_floating, is_signed, digits, is_complex; /* a complex dtype: digits of a part */
} wick_dtype_info;
/* The row of `dtype`; NULL for a value outside the enum. */
WICK_API const wick_dtype_info *wick_dtype_info_of(wick_dtype dtype);
/* The i-th (0-based) alias that wick_dtype_parse also takes ("float", "double",
 * "half", "long", "int", "byte": PyTorch's), with its dtype; NULL past the last. */
WICK_API const char *wick_dtype_alias(int i, wick_dtype *dtype);
/* One element of the given dtype at p, as a double (exact except int64 beyond 2^53). */
WICK_API double wick_value_as_double(const void *p, wick_dtype dtype);
/* Anomaly detection, as torch.autograd.set_detect_anomaly: while on (per
 * thread), a backward checks each node's gradients for NaN and fails naming
 * the first node that made one ("Function 'LogBackward' returned nan values
 * in its 0th output."). */
WICK_API void wick_set_detect_anomaly(int on);
WICK_API int wick_is_anomaly_enabled(void);
/* PyTorch's promotion between two tensors of the same rank class. */
WICK_API wick_dtype wick_promote_types(wick_dtype a, wick_dtype b);
/* Whether the number v fits dtype d (an integer dtype's range, a float's finite range: inf and NaN
 * fit), else PyTorch's "op: value cannot be converted to type ... without overflow". */
WICK_API wick_status wick_check_value(const char *op, double v, wick_dtype d);
/* The floating dtype that integer operands become in a true division, a
 * floating-point op, or with a floating number (PyTorch's default dtype:
 * float32 unless set). Per thread; a non-floating dtype is ignored. */
WICK_API void wick_set_default_float_dtype(wick_dtype dtype);
WICK_API wick_dtype wick_default_float_dtype(void);

/* ---- devices ------------------------------------------------------------- */

typedef enum wick_device_type { WICK_CPU = 0, WICK_CUDA, WICK_META } wick_device_type;

typedef struct wick_device {
    wick_device_type type;
    int index; /* -1 when the device string named no ordinal ("cuda") */
} wick_device;

/* Parses "cpu", "cuda", "cuda:1", "meta". Errors name the string and list the forms. */
WICK_API wick_status wick_device_parse(const char *text, wick_device *out);
/* Writes the canonical name ("cuda:1") into buf; returns buf. */
WICK_API const char *wick_device_format(wick_device dev, char *buf, size_t size);
WICK_API int wick_device_equal(wick_device a, wick_device b);
WICK_API wick_device wick_cpu(void);

/* ---- CUDA ----------------------------------------------------------------
 * Per process: the CUDA context, the caching allocator and its statistics, the
 * TF32 switch. Per thread: the current device (like CUDA's own). In a build
 * without CUDA, or without a driver or GPU, is_available is 0, device_count 0,
 * the statistics 0, and the functions that need a GPU fail with WICK_ERR_DEVICE. */

/* 1 only when built with CUDA and a usable GPU exists. Never fails. */
WICK_API int wick_cuda_is_available(void);
WICK_API int wick_cuda_device_count(void);
/* What CUDA says of GPU `index` (torch.cuda.get_device_properties): its
 * name, compute capability, memory and multiprocessors. Fails (WICK_ERR_DEVICE)
 * for an index that names no GPU, and always without CUDA. */
typedef struct wick_cuda_properties {
    char name[256];
    int major, minor; /* compute capability: 9, 0 on an H100 */
    int64_t total_memory; /* bytes */
    int multi_processor_count;
} wick_cuda_properties;
WICK_API wick_status wick_cuda_get_device_properties(int index, wick_cuda_properties *out);
/* The calling thread's current device (0 until set). */
WICK_API wick_status wick_cuda_current_device(int *index);
WICK_API wick_status wick_cuda_set_device(int index);
/* Waits for all work queued on the device (-1: the current one). */
WICK_API wick_status wick_cuda_synchronize(int index);
/* Caching allocator statistics of a device, in bytes: held by live tensors, the
 * peak of that since start (or the last reset), reserved from CUDA, and the
 * peak of that (reset with the other peak). */
WICK_API int64_t wick_cuda_memory_allocated(int index);
WICK_API int64_t wick_cuda_max_memory_allocated(int index);
WICK_API int64_t wick_cuda_memory_reserved(int index);
WICK_API int64_t wick_cuda_max_memory_reserved(int index);
WICK_API void wick_cuda_reset_peak_memory_stats(int index);
/* Returns the allocator's cached free blocks of every device to CUDA. */
WICK_API void wick_cuda_empty_cache(void);
/* float32 matrix products may use TF32 tensor cores (off by default, as in PyTorch). */
WICK_API void wick_cuda_set_allow_tf32(int allow);
WICK_API int wick_cuda_allow_tf32(void);

/* Waits for a GPU. Kernels never wait; wick waits only where the host needs a
 * result (a copy to the CPU, item()), where asked (wick_cuda_synchronize), at
 * the end of a batch of copies, and when memory is released. Each such wait is
 * counted per device and reason (0 in a build without CUDA):
 * wick_cuda_sync_count(device) counts all of a device's waits (device < 0: of
 * every device), wick_cuda_sync_count_for(device, reason) those of one reason
 * (reason < 0: all), and wick_cuda_sync_reason_name(reason) names reason
 * 0, 1, ... ("copy to the CPU", ...; NULL past the last). */
WICK_API int64_t wick_cuda_sync_count(int device);
WICK_API int64_t wick_cuda_sync_count_for(int device, int reason);
WICK_API const char *wick_cuda_sync_reason_name(int reason);
/* Called at every wait, on the waiting thread, before it waits; NULL removes
 * it. It must not call back into wick. */
typedef void (*wick_cuda_sync_hook)(int device, const char *reason, void *ud);
WICK_API void wick_cuda_set_sync_hook(wick_cuda_sync_hook hook, void *ud);
/* A batch of copies, per thread (nestable): between begin and the outermost
 * end, copies from the host to a GPU do not wait for their bytes (the host
 * memory they read is staged by CUDA or must stay unchanged until the end);
 * end waits once for each GPU they went to and reports a pending error. So
 * moving a model's N parameters waits once, not N times. end without begin is
 * WICK_ERR_ARGUMENT. */
WICK_API void wick_cuda_begin_batch(void);
WICK_API wick_status wick_cuda_end_batch(void);
/* Index bounds on a GPU are checked by the kernels themselves: an index out of
 * range sets a per-device error record (the first one wins) and the op returns
 * at once. The error (WICK_ERR_INDEX, naming the op, the index and the size,
 * and saying that it was detected asynchronously) is reported by the next call
 * that waits for that GPU (see above), like PyTorch's device-side assertions. */

/* ---- tensors ------------------------------------------------------------- */

typedef struct wick_tensor wick_tensor;

WICK_API void wick_tensor_retain(wick_tensor *t);
WICK_API void wick_tensor_release(wick_tensor *t); /* NULL is fine */

WICK_API int wick_tensor_ndim(const wick_tensor *t);
WICK_API const int64_t *wick_tensor_sizes(const wick_tensor *t);
WICK_API const int64_t *wick_tensor_strides(const wick_tensor *t); /* in elements */
WICK_API int64_t wick_tensor_offset(const wick_tensor *t);         /* in elements */
WICK_API int64_t wick_tensor_numel(const wick_tensor *t);
WICK_API wick_dtype wick_tensor_dtype(const wick_tensor *t);
WICK_API wick_device wick_tensor_device(const wick_tensor *t);
WICK_API int wick_tensor_is_contiguous(const wick_tensor *t);
/* Address of element 0 of the view; NULL on meta. CPU memory can be read directly. */
WICK_API void *wick_tensor_data(const wick_tensor *t);
/* Identity of the underlying storage (for "do these share memory?"). */
WICK_API const void *wick_tensor_storage_id(const wick_tensor *t);
/* PyTorch's t._version: the in-place writes to the storage that autograd sees
 * (one per in-place op; writes through a t.data are not counted). */
WICK_API unsigned wick_tensor_version(const wick_tensor *t);

/* ---- creation ------------------------------------------------------------ */

typedef struct wick_options {
    wick_dtype dtype;
    wick_device device;
    /* wick_to between the CPU and a GPU: return before the copy has finished
     * when the CPU side is pinned (wick_pin_memory); work queued later on that
     * GPU sees the data. Otherwise ignored. */
    int non_blocking;
} wick_options;

/* {float32, cpu} */
WICK_API wick_options wick_default_options(void);

WICK_API wick_status wick_empty(wick_tensor **out, int ndim, const int64_t *sizes, wick_options opt);
WICK_API wick_status wick_full(wick_tensor **out, int ndim, const int64_t *sizes, double value,
                               wick_options opt);
/* A tensor over `count` values given as doubles (exact for every dtype except int64
 * beyond 2^53: use wick_from_int64 for those). */
WICK_API wick_status wick_from_doubles(wick_tensor **out, int ndim, const int64_t *sizes,
                                       const double *values, wick_options opt);
WICK_API wick_status wick_from_int64(wick_tensor **out, int ndim, const int64_t *sizes,
                                     const int64_t *values, wick_options opt);
/* [start, stop) by step, like torch.arange. */
WICK_API wick_status wick_arange(wick_tensor **out, double start, double stop, double step,
                                 wick_options opt);
WICK_API wick_status wick_eye(wick_tensor **out, int64_t n, int64_t m, wick_options opt);
/* Uniform [0, 1) and standard normal, from the process-wide generator. */
WICK_API wick_status wick_rand(wick_tensor **out, int ndim, const int64_t *sizes, wick_options opt);
WICK_API wick_status wick_randn(wick_tensor **out, int ndim, const int64_t *sizes, wick_options opt);

/* The random generator: counter-based, so CPU and GPU kernels can draw the same
 * numbers. Its state is 16 bytes (seed, offset). One per process, guarded by a
 * lock: seeding or setting the state while other threads draw is safe, and each
 * draw takes its numbers whole, before or after the change; but all threads
 * (and Lua states) share the stream, so a seed makes draws reproducible only
 * when one thread draws at a time. */
#define WICK_RNG_STATE_SIZE 16
WICK_API void wick_manual_seed(uint64_t seed);
WICK_API void wick_rng_get_state(uint8_t state[WICK_RNG_STATE_SIZE]);
WICK_API void wick_rng_set_state(const uint8_t state[WICK_RNG_STATE_SIZE]);

/* ---- copying and conversion ---------------------------------------------- */

/* dst[...] = src, broadcasting src to dst's shape, converting dtype, across devices. */
WICK_API wick_status wick_copy_(wick_tensor *dst, const wick_tensor *src);
WICK_API wick_status wick_fill_(wick_tensor *t, double value);
WICK_API wick_status wick_clone(wick_tensor **out, const wick_tensor *t);
/* A tensor with the given device and dtype; retains and returns `t` itself
 * when nothing would change. */
WICK_API wick_status wick_to(wick_tensor **out, wick_tensor *t, wick_options opt);
/* A copy of a CPU tensor in page-locked ("pinned") host memory, which GPUs read
 * and write asynchronously; `t` itself (retained) when already pinned. Needs a
 * usable GPU. */
WICK_API wick_status wick_pin_memory(wick_tensor **out, const wick_tensor *t);
WICK_API int wick_tensor_is_pinned(const wick_tensor *t);
/* ---- moving tensors in place (model:to) ------------------------------------
 * Torch7's THTensor_(set): a tensor object takes other data while everyone who
 * holds it (a module, an optimizer, the Lua object) keeps holding the same one. */

/* dst takes src's data: src's storage (shared from now on, as a view shares
 * it), dtype, sizes, strides and offset. dst keeps its identity (the address,
 * its references), requires_grad and grad. Other tensors that shared dst's old
 * storage (its views, or the tensor it viewed) keep the old storage: they no
 * longer share with dst. A graph that saved dst before sees a write (the new
 * storage's version moves past the old one's), so its backward raises instead
 * of using other data. Errors (dst unchanged): dst has autograd history (a
 * non-leaf: detach first); dst requires grad and src is not floating point;
 * dst has a grad that would not fit src (shape, dtype, device: move or clear
 * the grad first). dst == src does nothing. */
WICK_API wick_status wick_tensor_set_(wick_tensor *dst, wick_tensor *src);
/* PyTorch's Module.to over a module's tensors: every tensor of the array, and
 * every gradient they hold, goes to *device (NULL: each stays on its own;
 * "cuda" without an ordinal is the current device) and, when it is floating
 * point or complex, to *dtype (NULL: dtypes stay; a complex tensor cast to a
 * real dtype keeps its real part; a dtype neither floating point nor complex
 * is an error). Each tensor moves in place (wick_tensor_set_'s sense; a tensor
 * with autograd history is cut from its graph, keeping requires_grad) and
 * once, however often the array holds it. All copies are made first, in one
 * batch of copies (wick_cuda_begin_batch: no copy waits for a GPU alone; the
 * end waits once per GPU); a failure there moves nothing. non_blocking as in
 * wick_options for copies from pinned memory to a GPU; copies from a GPU to
 * the CPU go into fresh pageable memory, whose bytes have arrived when each
 * copy returns. */
WICK_API wick_status wick_tensors_to_(int n, wick_tensor *const *tensors, const wick_device *device,
                                      const wick_dtype *dtype, int non_blocking);

/* The value of a one-element tensor. */
WICK_API wick_status wick_item_double(const wick_tensor *t, double *out);
WICK_API wick_status wick_item_int64(const wick_tensor *t, int64_t *out);
/* Reads element at a linear (row-major) position of the view. CPU only: NaN
 * (and the last error set) for a position outside the tensor or another device. */
WICK_API double wick_get_double(const wick_tensor *t, int64_t linear_index);

/* ---- views (share storage) ----------------------------------------------- */

WICK_API wick_status wick_view(wick_tensor **out, wick_tensor *t, int ndim, const int64_t *sizes);
/* t's memory read as another dtype (t.view(dtype)): the last dim rescaled when
 * the element sizes differ (it must have stride 1); not differentiable. */
WICK_API wick_status wick_view_dtype(wick_tensor **out, wick_tensor *t, wick_dtype dtype);
WICK_API wick_status wick_reshape(wick_tensor **out, wick_tensor *t, int ndim, const int64_t *sizes);
WICK_API wick_status wick_transpose(wick_tensor **out, wick_tensor *t, int dim0, int dim1);
WICK_API wick_status wick_permute(wick_tensor **out, wick_tensor *t, int ndim, const int *dims);
WICK_API wick_status wick_narrow(wick_tensor **out, wick_tensor *t, int dim, int64_t start,
                                 int64_t length);
WICK_API wick_status wick_select(wick_tensor **out, wick_tensor *t, int dim, int64_t index);
WICK_API wick_status wick_squeeze(wick_tensor **out, wick_tensor *t, int dim); /* dim -1: all */
WICK_API wick_status wick_unsqueeze(wick_tensor **out, wick_tensor *t, int dim);
WICK_API wick_status wick_expand(wick_tensor **out, wick_tensor *t, int ndim, const int64_t *sizes);
WICK_API wick_status wick_flatten(wick_tensor **out, wick_tensor *t, int start_dim, int end_dim);
/* `t` itself (retained) when already contiguous, else a contiguous copy. */
WICK_API wick_status wick_contiguous(wick_tensor **out, wick_tensor *t);
/* A view of t's storage with any geometry (sizes, strides and offset in
 * elements); fails when it would reach outside the storage. */
WICK_API wick_status wick_as_strided(wick_tensor **out, wick_tensor *t, int ndim, const int64_t *sizes,
                                     const int64_t *strides, int64_t offset);
/* The number of elements t's whole storage holds. */
WICK_API int64_t wick_storage_numel(const wick_tensor *t);

/* ---- elementwise ---------------------------------------------------------- */

/* The operations, declared once (id, name). The dtype rule is
 * elementwise.c's: comparisons give bool; exp, log, the trigonometric and
 * hyperbolic functions, sqrt, rsqrt, reciprocal, frac, the activations, the
 * special functions (erfc, erfinv, lgamma, digamma, trigamma = polygamma(1, x)),
 * true division and atan2 give float32 for integer inputs; neg, abs, floor, ceil,
 * round (half to even), trunc, sign, fmod (C's: the dividend's sign) and
 * remainder (Python's %: the divisor's sign) keep integers integer. The
 * bitwise ops take integer and bool tensors only (bool stays bool; bitwise_not
 * of a bool is its logical not); a shift by a negative amount or by at least
 * the width gives 0 (a right shift of a negative value: -1). New ops are
 * appended (the enums' values stay). */
#define WICK_UNARY_OPS(X)                                                                      \
    X(NEG, "neg") X(ABS, "abs") X(EXP, "exp") X(LOG, "log") X(SQRT, "sqrt") X(TANH, "tanh")      \
    X(SIGMOID, "sigmoid") X(RELU, "relu") X(ERF, "erf") X(GELU, "gelu")                    \
    X(GELU_TANH, "gelu_tanh") X(SIN, "sin") X(COS, "cos") X(TAN, "tan") X(ASIN, "asin")         \
    X(ACOS, "acos") X(ATAN, "atan") X(SINH, "sinh") X(COSH, "cosh") X(LOG2, "log2")             \
    X(LOG10, "log10") X(LOG1P, "log1p") X(EXPM1, "expm1") X(RSQRT, "rsqrt")                     \
    X(RECIPROCAL, "reciprocal") X(FRAC, "frac") X(FLOOR, "floor") X(CEIL, "ceil")               \
    X(ROUND, "round") X(TRUNC, "trunc") X(SIGN, "sign") X(ERFC, "erfc") X(ERFINV, "erfinv")       \
    X(LGAMMA, "lgamma") X(DIGAMMA, "digamma") X(TRIGAMMA, "trigamma") X(BITWISE_NOT, "bitwise_not")
#define WICK_BINARY_OPS(X)                                                                     \
    X(ADD, "add") X(SUB, "sub") X(MUL, "mul") X(DIV, "div") X(POW, "pow") X(MAXIMUM, "maximum") \
    X(MINIMUM, "minimum") X(EQ, "eq") X(NE, "ne") X(LT, "lt") X(LE, "le") X(GT, "gt") X(GE, "ge") \
    X(FMOD, "fmod") X(REMAINDER, "remainder") X(ATAN2, "atan2") X(BITWISE_AND, "bitwise_and")           \
    X(BITWISE_OR, "bitwise_or") X(BITWISE_XOR, "bitwise_xor") X(LSHIFT, "bitwise_left_shift")         \
    X(RSHIFT, "bitwise_right_shift")

#define WICK_ENUM_UNARY(id, name) WICK_##id,
#define WICK_ENUM_BINARY(id, name) WICK_##id,
typedef enum wick_unary_op { WICK_UNARY_OPS(WICK_ENUM_UNARY) WICK_NUM_UNARY } wick_unary_op;
typedef enum wick_binary_op { WICK_BINARY_OPS(WICK_ENUM_BINARY) WICK_NUM_BINARY } wick_binary_op;
#undef WICK_ENUM_UNARY
#undef WICK_ENUM_BINARY

WICK_API const char *wick_unary_name(wick_unary_op op);
WICK_API const char *wick_binary_name(wick_binary_op op);

WICK_API wick_status wick_unary(wick_tensor **out, wick_unary_op op, const wick_tensor *a);
WICK_API wick_status wick_unary_(wick_unary_op op, wick_tensor *a);
/* out = a op b with broadcasting and PyTorch's type promotion. */
WICK_API wick_status wick_binary(wick_tensor **out, wick_binary_op op, const wick_tensor *a,
                                 const wick_tensor *b);
/* a = a op b in place (b broadcast to a's shape; the result must fit a's dtype). */
WICK_API wick_status wick_binary_(wick_binary_op op, wick_tensor *a, const wick_tensor *b);
/* A number operand: `scalar_first` puts it on the left (2 - t). `is_integer` says
 * the number had no fractional part, which keeps integer tensors integer;
 * WICK_SCALAR_BOOL there says it is a boolean (Python's True beside a bool
 * tensor keeps it bool: mask * true). */
#define WICK_SCALAR_BOOL 2
typedef struct wick_scalar {
    double value;
    int is_integer;
} wick_scalar;
WICK_API wick_status wick_binary_scalar(wick_tensor **out, wick_binary_op op, const wick_tensor *a,
                                        wick_scalar s, int scalar_first);
WICK_API wick_status wick_binary_scalar_(wick_binary_op op, wick_tensor *a, wick_scalar s);
/* add with alpha: out = a + alpha * b (sub is alpha = -1). */
WICK_API wick_status wick_add_scaled(wick_tensor **out, const wick_tensor *a, const wick_tensor *b,
                                     double alpha);
WICK_API wick_status wick_add_scaled_(wick_tensor *a, const wick_tensor *b, double alpha);
/* clamp(a, lo, hi); use -INFINITY / INFINITY for an open side. */
WICK_API wick_status wick_clamp(wick_tensor **out, const wick_tensor *a, double lo, double hi);
WICK_API wick_status wick_clamp_(wick_tensor *a, double lo, double hi);
/* hardtanh(a, lo, hi): clamp's values; its gradient is PyTorch's hardtanh_backward: 0 where
 * a <= lo or a >= hi, g elsewhere (a NaN a passes g on, where clamp's gives 0). */
WICK_API wick_status wick_hardtanh(wick_tensor **out, const wick_tensor *a, double lo, double hi);
/* cond ? a : b, all three broadcast together. */
WICK_API wick_status wick_where(wick_tensor **out, const wick_tensor *cond, const wick_tensor *a,
                                const wick_tensor *b);
/* where, a (numbers & 1) and b (numbers & 2) standing for numbers (0-dim tensors of their values):
 * PyTorch's wrapped numbers, which take part in the result's dtype only by a higher category (a
 * float number beside a 0-dim float32 tensor gives float32; two float numbers the default dtype). */
WICK_API wick_status wick_where_numbers(wick_tensor **out, const wick_tensor *cond, const wick_tensor *a,
                                        const wick_tensor *b, int numbers);

/* ---- reductions ----------------------------------------------------------- */

#define WICK_REDUCE_OPS(X)                                                                     \
    X(SUM, "sum") X(MEAN, "mean") X(PROD, "prod") X(MAX, "max") X(MIN, "min") X(ARGMAX, "argmax") \
    X(ARGMIN, "argmin") X(VAR, "var") X(STD, "std")
#define WICK_ENUM_REDUCE(id, name) WICK_##id,
typedef enum wick_reduce_op { WICK_REDUCE_OPS(WICK_ENUM_REDUCE) WICK_NUM_REDUCE } wick_reduce_op;
#undef WICK_ENUM_REDUCE

WICK_API const char *wick_reduce_name(wick_reduce_op op);
/* dim < 0 reduces over all elements (keepdim then keeps every dim as size 1).
 * `correction` is used by var/std (1 = unbiased, like PyTorch's default).
 * For MAX/MIN with a dim, `indices` (may be NULL) receives int64 positions. */
WICK_API wick_status wick_reduce(wick_tensor **out, wick_tensor **indices, wick_reduce_op op,
                                 const wick_tensor *a, int dim, int keepdim, int correction);

/* ---- linear algebra (BLAS on the CPU: BLIS, or OpenBLAS) ----------------- */

WICK_API wick_status wick_mm(wick_tensor **out, const wick_tensor *a, const wick_tensor *b);
WICK_API wick_status wick_bmm(wick_tensor **out, const wick_tensor *a, const wick_tensor *b);
/* beta * input + alpha * (mat1 @ mat2), input broadcast to the product's shape. */
WICK_API wick_status wick_addmm(wick_tensor **out, const wick_tensor *input, const wick_tensor *mat1,
                                const wick_tensor *mat2, double beta, double alpha);
/* x @ weight^T + bias for x [N, in], weight [out, in], bias [out] or NULL: a
 * Linear layer as one op and one autograd node. */
WICK_API wick_status wick_linear(wick_tensor **out, const wick_tensor *x, const wick_tensor *weight,
                                 const wick_tensor *bias);
/* Mean squared error; reduction 0 none, 1 mean, 2 sum. One autograd node. */
WICK_API wick_status wick_mse_loss(wick_tensor **out, const wick_tensor *input, const wick_tensor *target, int reduction);
/* torch.matmul: dot, matrix-vector, matrix-matrix and broadcast batches. */
WICK_API wick_status wick_matmul(wick_tensor **out, const wick_tensor *a, const wick_tensor *b);
/* ---- complex tensors (src/core/complex.c) --------------------------------
 * complex64 and complex128 hold pairs of float32 or float64, real part first.
 * Their arithmetic is composed of real ops on the parts, so it runs on every
 * device and autograd differentiates it as PyTorch does (the gradient of a
 * complex tensor is dL/d(re) + i dL/d(im)). They take wick_binary's add, sub,
 * mul, div, eq and ne (with real operands too), wick_unary's neg, abs, exp,
 * log, sqrt and reciprocal, sum and mean, the products, copies, fills and
 * views; other ops refuse them with an error that says so. */
/* t's memory as float32 or float64 with a last dim of size 2 (a view). */
WICK_API wick_status wick_view_as_real(wick_tensor **out, wick_tensor *t);
/* The reverse: a float32/float64 t with a last dim of size 2 and stride 1. */
WICK_API wick_status wick_view_as_complex(wick_tensor **out, wick_tensor *t);
/* re + i im (broadcast), two float32 or float64 tensors of one dtype. */
WICK_API wick_status wick_complex(wick_tensor **out, const wick_tensor *re, const wick_tensor *im);
/* The parts as views (wick_real of a real tensor is the tensor; wick_imag of one fails). */
WICK_API wick_status wick_real(wick_tensor **out, wick_tensor *t);
WICK_API wick_status wick_imag(wick_tensor **out, wick_tensor *t);
/* The conjugate (a copy; of a real tensor, a copy of it) and the argument in
 * (-pi, pi] (of a real tensor: pi where it is negative, else 0). */
WICK_API wick_status wick_conj(wick_tensor **out, const wick_tensor *t);
WICK_API wick_status wick_angle(wick_tensor **out, const wick_tensor *t);

/* The unnormalised discrete Fourier transform of complex x along dim (0-based,
 * negative from the end): y[k] = sum_j x[j] e^(sign 2 pi i jk / n), sign -1
 * (forward) or +1 (inverse, without the 1/n), differentiable. Any length in
 * O(n log n) on the CPU; torch.fft's API is composed on it in Lua. */
WICK_API wick_status wick_fft_c2c(wick_tensor **out, const wick_tensor *x, int dim, int sign);
/* The transform (sign -1) of real x (float32 or float64) along dim, its
 * n/2 + 1 non-negative frequencies (complex64 or complex128), differentiable:
 * torch.fft.rfft unnormalised. Half the work of the complex transform. */
WICK_API wick_status wick_fft_r2c(wick_tensor **out, const wick_tensor *x, int dim);
/* The inverse (sign +1, unnormalised) of a one-sided spectrum: the n real
 * points whose transform's non-negative frequencies are x along dim (which
 * must hold n/2 + 1 of them; the imaginary parts at 0 and n/2 are ignored),
 * torch.fft.irfft times n. Differentiable. */
WICK_API wick_status wick_fft_c2r(wick_tensor **out, const wick_tensor *x, int dim, int64_t n);
/* The same by the product with the DFT matrix, on any backend (O(n^2), at
 * most 8192 points): the reference the FFT kernels are tested against, and
 * wick_fft_c2c itself on a backend without one. */
WICK_API wick_status wick_dft_c2c(wick_tensor **out, const wick_tensor *x, int dim, int sign);

/* ---- indexing, joining ---------------------------------------------------- */

WICK_API wick_status wick_index_select(wick_tensor **out, const wick_tensor *a, int dim,
                                       const wick_tensor *index);
WICK_API wick_status wick_gather(wick_tensor **out, const wick_tensor *a, int dim,
                                 const wick_tensor *index);
/* out = a with out[index[i][j]][j] = src[i][j] (dim 0), like Tensor.scatter. */
WICK_API wick_status wick_scatter(wick_tensor **out, const wick_tensor *a, int dim,
                                  const wick_tensor *index, const wick_tensor *src);
WICK_API wick_status wick_scatter_(wick_tensor *a, int dim, const wick_tensor *index,
                                   const wick_tensor *src);
/* a[..., index[i], ...] += src[..., i, ...] along dim; repeated indices add up. */
WICK_API wick_status wick_index_add_(wick_tensor *a, int dim, const wick_tensor *index, const wick_tensor *src);
/* Like wick_scatter_, but adds: a[index[i][j]][j] += src[i][j] (dim 0). */
WICK_API wick_status wick_scatter_add_(wick_tensor *a, int dim, const wick_tensor *index, const wick_tensor *src);
WICK_API wick_status wick_cat(wick_tensor **out, int count, const wick_tensor *const *tensors, int dim);
WICK_API wick_status wick_stack(wick_tensor **out, int count, const wick_tensor *const *tensors,
                                int dim);

/* ---- keys: t[key] and t[key] = v (src/core/slicing.c) ---------------------
 * Writes take a value tensor that broadcasts to t[key]'s shape (leading size-1
 * dims of it are dropped), or, when `value` is NULL, the number `s`. Without
 * autograd they write in place; when t is tracked or the value requires grad
 * they are recorded (IndexPutBackward) and t takes the result over. Index
 * tensors are 0-based int64 (int32 accepted). */
/* One entry of a key, for the dims from the first: a select of `start` (the
 * dim goes away), or `length` elements from `start` by `step` (>= 1). */
typedef struct wick_key_entry {
    int select;
    int64_t start, length, step;
} wick_key_entry;
/* A view of every step-th element along dim, recorded for autograd. */
WICK_API wick_status wick_slice(wick_tensor **out, wick_tensor *t, int dim, int64_t start, int64_t length,
                                int64_t step);
/* t[{...}]: a view (recorded); n <= t's ndim entries, the rest whole dims. */
WICK_API wick_status wick_index_view(wick_tensor **out, wick_tensor *t, int n, const wick_key_entry *entries);
WICK_API wick_status wick_index_view_put_(wick_tensor *t, int n, const wick_key_entry *entries,
                                          const wick_tensor *value, double s);
/* t[mask]: mask (bool) has t's leading dims; the result [count, rest...] is a copy. */
WICK_API wick_status wick_mask_index(wick_tensor **out, wick_tensor *t, const wick_tensor *mask);
WICK_API wick_status wick_mask_index_put_(wick_tensor *t, const wick_tensor *mask, const wick_tensor *value,
                                          double s);
/* t[index] along dim: shape sizes[:dim] + index.shape + sizes[dim+1:], a copy;
 * the write form adds instead of writing when accumulate (index_put_'s). */
WICK_API wick_status wick_index_tensor(wick_tensor **out, wick_tensor *t, int dim, const wick_tensor *index);
WICK_API wick_status wick_index_tensor_put_(wick_tensor *t, int dim, const wick_tensor *index,
                                            const wick_tensor *value, double s, int accumulate);
/* The general key: n entries (views), then `index` (0-based positions, any
 * shape) along the view's dims [dim, dim + group) taken as one (row-major);
 * the result has the index's shape in place of those dims. */
WICK_API wick_status wick_index_key(wick_tensor **out, wick_tensor *t, int n, const wick_key_entry *entries, int dim,
                                   int group, const wick_tensor *index);
WICK_API wick_status wick_index_key_put_(wick_tensor *t, int n, const wick_key_entry *entries, int dim, int group,
                                        const wick_tensor *index, const wick_tensor *value, double s, int accumulate);
/* The row-major positions (0-based int64, 1-D, on the mask's device) of a
 * bool mask's true elements. */
WICK_API wick_status wick_mask_positions(wick_tensor **out, const wick_tensor *mask);
/* Several 0-based index tensors (broadcast together) for consecutive dims of
 * sizes[0..k) as one: the row-major positions, int64. */
WICK_API wick_status wick_index_linear(wick_tensor **out, int k, const wick_tensor *const *indices, const int64_t *sizes);
/* A 1-based index tensor (negative from the end) checked against `size` and
 * made 0-based int64, on the index's device; errors name dim + 1. */
WICK_API wick_status wick_index_from_one_based(wick_tensor **out, const wick_tensor *index, int64_t size, int dim);
WICK_API wick_status wick_index_copy_(wick_tensor *t, int dim, const wick_tensor *index, const wick_tensor *source);
/* value: NULL (then s) or a 0-dim tensor */
WICK_API wick_status wick_index_fill_(wick_tensor *t, int dim, const wick_tensor *index, const wick_tensor *value,
                                      double s);
/* PyTorch's masked ops: the mask broadcasts (to t's shape for the in-place ones). */
WICK_API wick_status wick_masked_select(wick_tensor **out, const wick_tensor *t, const wick_tensor *mask);
WICK_API wick_status wick_masked_fill(wick_tensor **out, const wick_tensor *t, const wick_tensor *mask,
                                      const wick_tensor *value, double s);
WICK_API wick_status wick_masked_fill_(wick_tensor *t, const wick_tensor *mask, const wick_tensor *value, double s);
WICK_API wick_status wick_masked_scatter_(wick_tensor *t, const wick_tensor *mask, const wick_tensor *source);
/* the out-of-place form: t and the mask broadcast together, as PyTorch's */
WICK_API wick_status wick_masked_scatter(wick_tensor **out, const wick_tensor *t, const wick_tensor *mask,
                                         const wick_tensor *source);

/* ---- softmax -------------------------------------------------------------- */

WICK_API wick_status wick_softmax(wick_tensor **out, const wick_tensor *a, int dim);
WICK_API wick_status wick_log_softmax(wick_tensor **out, const wick_tensor *a, int dim);
/* Sorting and scans along `dim` (src/core/sort.c). wick_sort gives the sorted
 * values and their 0-based int64 positions; ties keep their input order (a
 * stable sort, always); NaN sorts above every number, like PyTorch. Values are
 * differentiable (the gradient goes back through the indices). */
WICK_API wick_status wick_sort(wick_tensor **values, wick_tensor **indices, const wick_tensor *a, int dim,
                               int descending);
/* The k largest (largest != 0) or smallest along dim, in sorted order (ties by
 * position), with their 0-based positions; values differentiable like sort's. */
WICK_API wick_status wick_topk(wick_tensor **values, wick_tensor **indices, const wick_tensor *a, int64_t k, int dim,
                               int largest);
/* Inclusive cumulative sum / product along dim; `dtype` is the result's dtype,
 * or -1 for PyTorch's default (int64 for integral and bool inputs). */
WICK_API wick_status wick_cumsum(wick_tensor **out, const wick_tensor *a, int dim, int dtype);
WICK_API wick_status wick_cumprod(wick_tensor **out, const wick_tensor *a, int dim, int dtype);

/* ---- neural-network ops --------------------------------------------------
 * Floating-point tensors; float16 and bfloat16 are computed in float32. Errors
 * follow PyTorch's wording. */

/* Layer normalisation over the last `normalized_ndim` dims of x; weight and
 * bias (each NULL or of those dims' shape) scale and shift. One fused kernel
 * each way; the backward reuses the rows' saved mean and 1/std. */
WICK_API wick_status wick_layer_norm(wick_tensor **out, const wick_tensor *x, int normalized_ndim,
                                     const wick_tensor *weight, const wick_tensor *bias, double eps);
/* Batch normalisation over dim 2 (channels, 1-based; C = x's size there) of x
 * [N, C, ...], like torch.nn.functional.batch_norm: weight, bias, running_mean
 * and running_var each NULL or [C]. Training: the batch's statistics normalise
 * x, and the running ones, when given, are updated in place with `momentum`
 * (the variance unbiased); else the running ones (required) are used. One
 * fused kernel each way; gradients for x, weight and bias. */
WICK_API wick_status wick_batch_norm(wick_tensor **out, const wick_tensor *x, const wick_tensor *weight,
                                     const wick_tensor *bias, wick_tensor *running_mean, wick_tensor *running_var,
                                     int training, double momentum, double eps);
/* Cross entropy of logits [N, C] against 1-based class indices [N] (int64 or
 * int32): log_softmax and nll fused. A target equal to ignore_index (when
 * has_ignore) counts nothing; weight [C] or NULL; label smoothing in [0, 1];
 * reduction 0 none ([N]), 1 mean (over the targets' weights), 2 sum. */
WICK_API wick_status wick_cross_entropy(wick_tensor **out, const wick_tensor *logits, const wick_tensor *target,
                                        const wick_tensor *weight, int has_ignore, int64_t ignore_index,
                                        double smoothing, int reduction);
/* 2-D convolution (cross-correlation, like torch.nn.functional.conv2d): input
 * [N, C, H, W] or unbatched [C, H, W], weight [O, C / groups, kH, kW], bias [O]
 * or NULL; output [N, O, oH, oW] (or [O, oH, oW]) with
 * oH = (H + 2 pad_h - dilation_h (kH - 1) - 1) / stride_h + 1, and likewise oW. */
WICK_API wick_status wick_conv2d(wick_tensor **out, const wick_tensor *input, const wick_tensor *weight,
                                 const wick_tensor *bias, int stride_h, int stride_w, int pad_h, int pad_w,
                                 int dilation_h, int dilation_w, int groups);
/* 2-D transposed convolution (like torch.nn.functional.conv_transpose2d): input
 * [N, Cin, H, W] or unbatched [Cin, H, W], weight [Cin, Cout / groups, kH, kW],
 * bias [Cout] or NULL; output [N, Cout, oH, oW] with oH = (H - 1) stride_h -
 * 2 padding_h + dilation_h (kH - 1) + output_padding_h + 1, and likewise oW.
 * Each int[2] is {h, w}; output_padding must be below the stride or the dilation. */
WICK_API wick_status wick_conv_transpose2d(wick_tensor **out, const wick_tensor *input, const wick_tensor *weight,
                                           const wick_tensor *bias, const int stride[2], const int padding[2],
                                           const int output_padding[2], const int dilation[2], int groups);
/* 2-D upsampling of [N, C, H, W] to [N, C, out_h, out_w] (like
 * torch.nn.functional.interpolate): mode 0 "nearest", 1 "bilinear" (with
 * align_corners). scale_h / scale_w: 1 / scale_factor when the caller gave a
 * scale factor (PyTorch then uses it for the source positions), else 0. */
WICK_API wick_status wick_upsample2d(wick_tensor **out, const wick_tensor *input, int64_t out_h, int64_t out_w,
                                     int mode, int align_corners, double scale_h, double scale_w);
/* 2-D grid sampling (like torch.nn.functional.grid_sample): input [N, C, H, W]
 * read at grid [N, H_out, W_out, 2] (x, y in [-1, 1], of the input's dtype) into
 * [N, C, H_out, W_out]. mode 0 "bilinear", 1 "nearest"; padding_mode 0 "zeros",
 * 1 "border", 2 "reflection"; align_corners as PyTorch's. Differentiable once in
 * input and grid (the nearest mode's grid gradient is zero). */
WICK_API wick_status wick_grid_sample2d(wick_tensor **out, const wick_tensor *input, const wick_tensor *grid, int mode,
                                        int padding_mode, int align_corners);
/* Its backward kernel: the gradients by input and grid (each computed when its
 * pointer is not NULL) from grad_out [N, C, H_out, W_out]; not recorded. */
WICK_API wick_status wick_grid_sample2d_backward(wick_tensor **grad_input, wick_tensor **grad_grid,
                                                 const wick_tensor *grad_out, const wick_tensor *input,
                                                 const wick_tensor *grid, int mode, int padding_mode, int align_corners);
/* Max pooling over [N, C, H, W] or [C, H, W] with kernel (kh, kw), stride (sh, sw)
 * and implicit -inf padding (ph, pw), at most half the kernel. Output sizes are
 * PyTorch's: floor((H + 2 ph - kh) / sh) + 1, rounded up in ceil_mode (but the
 * last window must start inside the input or its left padding). NaN wins.
 * `indices` (may be NULL) receives int64 positions of the maxima, 0-based and
 * flattened within each H x W plane. */
WICK_API wick_status wick_max_pool2d(wick_tensor **out, wick_tensor **indices, const wick_tensor *input, int kh, int kw,
                                     int sh, int sw, int ph, int pw, int ceil_mode);
/* Average pooling, same windows; the divisor counts the zero padding when
 * count_include_pad (not positions beyond it that ceil_mode adds). */
WICK_API wick_status wick_avg_pool2d(wick_tensor **out, const wick_tensor *input, int kh, int kw, int sh, int sw,
                                     int ph, int pw, int ceil_mode, int count_include_pad);
/* Scaled-dot-product attention, like torch.nn.functional.scaled_dot_product_attention:
 * softmax(q k^T * scale + mask) v with q [..., L, E], k [..., S, E], v [..., S, Ev]
 * (leading dims broadcast), fused: the L x S matrix is never stored. attn_mask
 * (may be NULL) is bool (true takes part) or q's dtype (added), broadcastable to
 * [..., L, S]; is_causal lets query i see keys 0..i; scale NaN means 1/sqrt(E);
 * dropout_p > 0 drops attention weights (a draw per weight from the generator);
 * enable_gqa lets k and v have fewer heads (dim -3) than q, dividing them. A row
 * that no key takes part in gives zeros (like PyTorch 2.x). */
WICK_API wick_status wick_scaled_dot_product_attention(wick_tensor **out, const wick_tensor *q, const wick_tensor *k,
                                                       const wick_tensor *v, const wick_tensor *attn_mask,
                                                       double dropout_p, int is_causal, double scale,
                                                       int enable_gqa);
/* One recurrent layer in one direction, its time loop fused (like one
 * direction of a layer of torch.nn.RNN/LSTM/GRU): gi [T, B, G] holds the
 * input projections of every step (x W_ih^T + b_ih, G = gates * H: 4 for LSTM
 * in PyTorch's order i, f, g, o; 3 for GRU, r, z, n; 1 for RNN), w_hh [G, H],
 * b_hh [G] or NULL, h0 [B, H], c0 [B, H] (LSTM only, else NULL). reverse runs
 * the steps from T - 1 down to 0. lengths (may be NULL): an int64 tensor [B]
 * on the CPU, each in [0, T]: row b takes part in the steps t < lengths[b] only;
 * past them its state is carried unchanged and its output is 0 (what PyTorch
 * gives for a packed sequence). *out is [T + 1, B, H] (LSTM: [T + 2, B, H]):
 * the T outputs, then the final h (and c). Differentiable in gi, h0, c0, w_hh,
 * b_hh (once: the backward is not itself recorded). float32 and float64. */
typedef enum wick_rnn_mode { WICK_RNN_TANH, WICK_RNN_RELU, WICK_RNN_LSTM, WICK_RNN_GRU } wick_rnn_mode;
WICK_API wick_status wick_rnn_layer(wick_tensor **out, wick_rnn_mode mode, const wick_tensor *gi,
                                    const wick_tensor *h0, const wick_tensor *c0, const wick_tensor *w_hh,
                                    const wick_tensor *b_hh, const wick_tensor *lengths, int reverse);

/* ---- autograd -------------------------------------------------------------
 * Reverse mode, dynamic graph. Ops record a node on their output when grad mode
 * is on and an input requires grad. Grad mode is per thread. */
WICK_API void wick_set_grad_enabled(int enabled);
WICK_API int wick_is_grad_enabled(void);
/* Autocast (mixed precision, like torch.autocast), per thread and per device
 * type (WICK_CPU, WICK_CUDA): while it is on, the products, convolutions and
 * attention (mm, addmm, bmm, matmul, linear, conv2d, conv_transpose2d,
 * scaled_dot_product_attention) cast their float32/float16/bfloat16 inputs to
 * the autocast dtype (bfloat16 on the CPU and float16 on CUDA by default), the
 * losses and the ops wick runs in float32 only (mse_loss, cross_entropy,
 * rnn_layer, prod) to float32, and on CUDA softmax, log_softmax, layer_norm,
 * sum and cumsum too, like PyTorch's lists. float64 tensors are never cast.
 * Casts are recorded (gradients come back in the input's dtype). Between
 * increment_nesting and the decrement that returns 0, a float32 leaf that
 * requires grad is cast once (then reused until it is written); clear the
 * cache when the outermost region ends. */
WICK_API wick_status wick_set_autocast_enabled(wick_device_type type, int enabled);
WICK_API int wick_is_autocast_enabled(wick_device_type type);
/* bfloat16 or float16. */
WICK_API wick_status wick_set_autocast_dtype(wick_device_type type, wick_dtype dtype);
WICK_API wick_dtype wick_get_autocast_dtype(wick_device_type type);
WICK_API int wick_autocast_increment_nesting(void);
WICK_API int wick_autocast_decrement_nesting(void);
WICK_API void wick_clear_autocast_cache(void);
/* On by default (torch.autocast's cache_enabled). */
WICK_API void wick_set_autocast_cache_enabled(int enabled);
WICK_API int wick_is_autocast_cache_enabled(void);
/* Only floating-point leaves can require grad. */
WICK_API wick_status wick_set_requires_grad(wick_tensor *t, int requires_grad);
WICK_API int wick_requires_grad(const wick_tensor *t);
WICK_API int wick_is_leaf(const wick_tensor *t);
/* 1 when t is a leaf that required grad at some time (wick_set_requires_grad):
 * a parameter, which a module keeps among its parameters once frozen
 * (requires_grad false again), as PyTorch's nn.Parameter. */
WICK_API int wick_is_parameter(const wick_tensor *t);
/* *out = 1 when t's graph reaches a leaf that requires grad other than the n
 * `leaves` (a tensor an enclosing transform differentiates by: func.grad's
 * result stays differentiable then, as torch.func's); 0 otherwise. */
WICK_API wick_status wick_graph_reaches_other_leaf(const wick_tensor *t, int n, const wick_tensor *const *leaves,
                                                   int *out);
/* The accumulated gradient (borrowed; NULL when none). */
WICK_API wick_tensor *wick_grad(const wick_tensor *t);
/* Replaces the gradient (NULL clears it); same shape, dtype and device. */
WICK_API wick_status wick_set_grad(wick_tensor *t, wick_tensor *grad);
/* "MulBackward", or NULL for a leaf. */
WICK_API const char *wick_grad_fn_name(const wick_tensor *t);
/* Accumulates d t / d leaf into every leaf's grad. `gradient` may be NULL for a
 * one-element t. Without retain_graph the graph's saved tensors are freed. */
WICK_API wick_status wick_backward(wick_tensor *t, const wick_tensor *gradient, int retain_graph);
/* Hooks. A tensor's hook id (> 0, unique in the process, kept when the tensor
 * takes other data with wick_tensor_set_ or moves with wick_tensors_to_) marks
 * it as hooked; `create` 0 only reads it (0: none). A host keeps its own hook
 * functions by id. */
WICK_API int64_t wick_hook_id(wick_tensor *t, int create);
/* PyTorch's retain_grad: an id (> 0; 0 for a leaf) under which backward calls
 * the host's hook (WICK_HOOK_RETAIN) with t's gradient, following t's history
 * through in-place ops (a hook of wick_hook_id stays with the version it was
 * registered on); released through wick_hooks_released like hook ids. */
WICK_API int64_t wick_retain_grad_id(wick_tensor *t);
typedef enum {
    /* the tensor's whole gradient of this backward, before it is used: *grad
     * (owned by the engine) may be replaced by another reference of the same
     * shape, dtype and device (the hook releases the one it replaces). `leaf`
     * is the tensor for a leaf, NULL for a non-leaf. */
    WICK_HOOK_GRAD,
    /* after that gradient was accumulated into the leaf's grad (PyTorch's
     * post-accumulate-grad hooks); grad is NULL */
    WICK_HOOK_POST_ACCUMULATE,
    /* a custom function's backward (wick_function_record; hook_id is its id,
     * leaf NULL): grad[0] is the gradient of its output (the engine's, not to
     * be released); the hook sets grad[1 + i] to a new reference to input i's
     * gradient, or leaves it NULL (none). A gradient must have its input's
     * shape, or one the input broadcasts to (it is summed back). */
    WICK_HOOK_FUNCTION,
    /* a non-leaf's gradient for its .grad (wick_retain_grad_id; hook_id is that
     * id, leaf NULL), after its grad hooks: *grad is borrowed, not replaced */
    WICK_HOOK_RETAIN,
    /* run checkpoint hook_id's function again (wick_checkpoint_begin), between
     * wick_checkpoint_recompute_begin and _end; leaf and grad NULL */
    WICK_HOOK_RECOMPUTE
} wick_hook_kind;
/* Called by wick_backward_ex once per backward for each hooked tensor that got
 * a gradient, while the rest of the graph may still be running. A status
 * other than WICK_OK (with wick_fail's message) stops the backward and is its
 * result. */
typedef wick_status (*wick_autograd_hook)(void *ud, wick_hook_kind kind, wick_tensor *leaf, int64_t hook_id,
                                          wick_tensor **grad);
/* Activation checkpointing without reentry (PyTorch's use_reentrant=False).
 * The ops recorded on this thread between wick_checkpoint_begin and
 * wick_checkpoint_end keep none of the tensors their backward needs (their
 * graph is whole otherwise: every tensor made there has its history). When a
 * backward first reaches one of them, the engine calls the host's hook with
 * WICK_HOOK_RECOMPUTE and the checkpoint's id (grad mode on): the host runs the
 * same function again, from the same inputs and random state, between
 * wick_checkpoint_recompute_begin and _end (an error if it saved a different
 * number of tensors), and the nodes read what it saved. The id (> 0) is
 * released through wick_hooks_released when its last node goes. Checkpoints
 * nest; create_graph through one is an error. */
WICK_API wick_status wick_checkpoint_begin(int64_t *id);
WICK_API wick_status wick_checkpoint_end(int64_t id);
WICK_API wick_status wick_checkpoint_recompute_begin(int64_t id);
WICK_API wick_status wick_checkpoint_recompute_end(int64_t id);
/* wick_backward with hooks (NULL: none, as wick_backward). */
WICK_API wick_status wick_backward_ex(wick_tensor *t, const wick_tensor *gradient, int retain_graph,
                                      wick_autograd_hook hook, void *ud);
/* Dense linear algebra (PyTorch's torch.linalg): the matrices in the last two
 * dims of a float32 or float64 tensor, batched over the others, on any device
 * (computed in float64 on the CPU: LU with partial pivoting, Cholesky,
 * Householder QR, Jacobi for eigh and the SVD). Results have a's dtype and
 * device. Not recorded for autograd (wick.linalg in Lua differentiates them).
 * solve: A X = B for B [..., n, k] with A's batch dims; a singular A is an
 * error naming the zero pivot. slogdet: sign and log |det| (a singular A:
 * sign 0, -inf). cholesky: lower L (an error if A is not positive-definite).
 * qr: reduced (Q m x min, R min x n) or complete (Q m x m, R m x n). eigh:
 * ascending eigenvalues and eigenvectors in columns, from A's lower triangle.
 * svd: U, S (descending), Vh; full_matrices gives square U and Vh. */
WICK_API wick_status wick_linalg_solve(wick_tensor **out, const wick_tensor *a, const wick_tensor *b);
/* inv: A^-1, solve's with the identity (a singular A: "the inversion could not be completed") */
WICK_API wick_status wick_linalg_inv(wick_tensor **out, const wick_tensor *a);
WICK_API wick_status wick_linalg_slogdet(wick_tensor **sign, wick_tensor **logabsdet, const wick_tensor *a);
WICK_API wick_status wick_linalg_cholesky(wick_tensor **out, const wick_tensor *a);
/* LU with partial pivoting of m x n matrices: A = P L U, L (m x k unit lower,
 * diagonal not stored) and U (k x n upper, k = min(m, n)) packed in *lu (A's
 * dtype and device), *pivots (int32, [..., k]) LAPACK's 1-based row swaps (row i swapped with pivots[i],
 * in order), *info (int32, the batch's shape) 0, or the 1-based index of the
 * first zero pivot of a singular matrix (the factorization still completes). */
WICK_API wick_status wick_linalg_lu_factor(wick_tensor **lu, wick_tensor **pivots, wick_tensor **info,
                                           const wick_tensor *a);
WICK_API wick_status wick_linalg_qr(wick_tensor **q, wick_tensor **r, const wick_tensor *a, int complete);
WICK_API wick_status wick_linalg_eigh(wick_tensor **w, wick_tensor **v, const wick_tensor *a);
WICK_API wick_status wick_linalg_svd(wick_tensor **u, wick_tensor **s, wick_tensor **vh, const wick_tensor *a,
                                     int full_matrices);
/* The general backward (PyTorch's torch.autograd.backward and
 * torch.autograd.grad in one): the gradients of `outputs`, seeded with
 * `gradients` (NULL, or a NULL entry: ones, for a one-element output), flow
 * back through their graphs.
 * - inputs == NULL: every leaf that requires grad accumulates into .grad (as
 *   wick_backward); else only the n_inputs tensors (leaves or not) get one:
 *   into their .grad when grads == NULL, else into grads[i] (new references,
 *   NULL where no gradient reached input i; no .grad is touched; leaf hooks
 *   do not run, the grad hooks of non-leaves do). Nodes that lead to no input
 *   do not run.
 * - create_graph: the backward itself is recorded (grad mode on while it
 *   runs), so the gradients have a graph and can be differentiated again; a
 *   node whose backward is a fused kernel without a derivative gives
 *   gradients whose own backward raises (naming the node). It implies nothing
 *   about retain_graph: pass both, as PyTorch's default does. */
typedef struct wick_backward_args {
    int n_outputs;
    wick_tensor *const *outputs;
    const wick_tensor *const *gradients;
    int retain_graph, create_graph;
    int n_inputs;
    wick_tensor *const *inputs;
    wick_tensor **grads;
    wick_autograd_hook hook; /* as wick_backward_ex; NULL: none */
    void *ud;
} wick_backward_args;
WICK_API wick_status wick_backward_run(const wick_backward_args *args);
/* Custom functions (a host's autograd.Function): `out`, computed without
 * grad, becomes the output of a node named `name` with edges to the n inputs
 * (NULL entries, and inputs that do not require grad, get no gradient); its
 * backward is the host's hook (WICK_HOOK_FUNCTION above) with the id set in
 * *id, so it runs only under wick_backward_ex with a hook. `out` must be
 * floating, without grad_fn and not require grad. */
WICK_API wick_status wick_function_record(wick_tensor *out, const char *name, int n, wick_tensor *const *inputs,
                                          int64_t *id);
/* Moves up to `max` ids of custom nodes freed since the last call into ids[]
 * and returns how many: the host drops its state for them. Any thread. */
WICK_API int wick_function_released(int64_t *ids, int max);
/* The same for hook ids (wick_hook_id) whose tensor and node are freed: the
 * host drops the hooks it keeps under them. Any thread. */
WICK_API int wick_hooks_released(int64_t *ids, int max);
/* A view of t that shares its data but is cut from the graph. */
WICK_API wick_status wick_detach(wick_tensor **out, wick_tensor *t);
/* PyTorch's t.data: wick_detach's view, whose in-place writes (and those of
 * its views) autograd's check of saved tensors does not see, as PyTorch's .data
 * has a version counter of its own: Tacotron 2's outputs.data.masked_fill_()
 * after the postnet saved them, and a backward using the masked values. */
WICK_API wick_status wick_data(wick_tensor **out, wick_tensor *t);
/* t itself cut from the graph, in place (PyTorch's detach_): it becomes a leaf
 * that does not require grad; its data, grad and views are untouched. A view
 * made in grad mode is refused (WICK_ERR_ARGUMENT), as PyTorch refuses views:
 * wick_detach makes its detached copy. */
WICK_API wick_status wick_detach_(wick_tensor *t);

/* One fused Adam/AdamW step in place, with PyTorch's single-tensor arithmetic
 * (torch.optim.adam._single_tensor_adam): exp_avg.lerp_(g, 1 - beta1),
 * exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2), denom = sqrt(exp_avg_sq) /
 * sqrt(1 - beta2^step) + eps, p.addcdiv_(exp_avg, denom, -lr / (1 - beta1^step));
 * weight decay on p first (decoupled, AdamW) or into g (Adam). `step` counts from 1.
 * Returns 1 ("not handled": nothing done, no error) unless the four tensors are
 * contiguous, of one float dtype, on one device whose backend has the fused step
 * (the CPU's), with as many elements and no storage shared; 0 when done. The
 * caller (an optimizer) then does the composed update itself. */
WICK_API int wick_adam_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *exp_avg, wick_tensor *exp_avg_sq,
                             double lr, double beta1, double beta2, double eps, double weight_decay, int64_t step,
                             int decoupled);

/* GradScaler's unscale, like torch._amp_foreach_non_finite_check_and_unscale_:
 * every one of the n gradients (floating tensors on one device) is multiplied
 * in place by inv_scale, and found_inf is set to 1 when any element of any of
 * them was inf or NaN (left as it is otherwise). inv_scale and found_inf are
 * one-element float32 tensors on the gradients' device; one fused pass per
 * gradient, nothing read back to the host. Not recorded by autograd. */
WICK_API wick_status wick_amp_unscale_(int n, wick_tensor *const *grads, wick_tensor *found_inf,
                                       const wick_tensor *inv_scale);
/* One fused SGD step in place, with PyTorch's single-tensor arithmetic
 * (torch.optim.sgd._single_tensor_sgd): g negated when maximize, g + weight_decay p,
 * with momentum buf <- buf momentum + (1 - dampening) g (buf <- g when `first`,
 * the buffer's first step), g <- g + momentum buf (nesterov) or buf, then
 * p <- p - lr g. `buf` is unused (may be NULL) when momentum is 0. Returns 1
 * ("not handled") unless the tensors are contiguous, of one float dtype, on one
 * device whose backend has the fused step, with as many elements and no storage
 * shared; 0 when done. */
WICK_API int wick_sgd_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *buf, double lr, double momentum,
                            double dampening, double weight_decay, int nesterov, int maximize, int first);

/* One fused Adadelta step in place, with PyTorch's single-tensor arithmetic
 * (torch.optim.adadelta._single_tensor_adadelta): g negated when maximize,
 * g + weight_decay p, square_avg.mul_(rho).addcmul_(g, g, 1 - rho), delta =
 * sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g,
 * acc_delta.mul_(rho).addcmul_(delta, delta, 1 - rho), p.add_(delta, -lr).
 * Returns 1 ("not handled") unless the four tensors are contiguous, of one float
 * dtype, on one device whose backend has the fused step, with as many elements
 * and no storage shared; 0 when done. */
WICK_API int wick_adadelta_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *square_avg, wick_tensor *acc_delta,
                                 double lr, double rho, double eps, double weight_decay, int maximize);

/* ---- fast paths ----------------------------------------------------------
 * For tiny ops, where the cost of the general path dominates (the Lua binding
 * calls these through LuaJIT's FFI). They handle CPU float32/float64 tensors of
 * one dtype and one shape, contiguous, with op ADD, SUB, MUL or DIV (mm: small
 * 2-D float matrices), and return 0 when done. Any other value means "not
 * handled here, call the general function", which also reports every error;
 * they never set an error themselves. */
/* a op= b; for ADD and SUB, a op= alpha * b */
WICK_API int wick_try_fast_binary_(int op, wick_tensor *a, const wick_tensor *b, double alpha);
WICK_API int wick_try_fast_binary(int op, wick_tensor **out, const wick_tensor *a, const wick_tensor *b);
WICK_API int wick_try_fast_binary_scalar(int op, wick_tensor **out, const wick_tensor *a, double s,
                                         int scalar_first);
WICK_API int wick_try_fast_mm(wick_tensor **out, const wick_tensor *a, const wick_tensor *b);

/* ---- files ---------------------------------------------------------------- */

/* An IDX file of unsigned bytes (MNIST, Fashion-MNIST), gzip-compressed or not,
 * as a uint8 CPU tensor of the shape its header gives. */
WICK_API wick_status wick_read_idx(wick_tensor **out, const char *path);
/* Writes size bytes to path atomically: a temporary file in the same directory,
 * fsync, rename over path, fsync of the directory. A crash leaves either the
 * previous file or the complete new one.
 * The temporary is ".<name>.wick-tmp-XXXXXXXXXXXX" (<name> is path's last
 * component, cut to fit NAME_MAX; X: 12 random letters and digits from
 * getrandom), created with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC (a new random
 * name on EEXIST), so nothing planted at any name is ever followed or reused.
 * A new file gets mode 0666 & ~umask; replacing a regular file keeps that file's
 * permission bits (not its owner or group). When path itself is a symbolic link,
 * the rename replaces the link, not its target. The writer holds an flock on its
 * temporary until the rename; before writing, it removes the temporaries of
 * earlier writers of the same path that crashed: regular files it owns, matching
 * the name exactly, that nobody holds locked (a live writer always does), so a
 * concurrent save by another process is never touched. A crash therefore leaves
 * at most one temporary per crashed writer until the next write of that path.
 * Where flock is not supported (some network file systems), nothing is removed.
 * On any error the temporary is removed and path is unchanged. */
WICK_API wick_status wick_write_file_atomic(const char *path, const void *data, size_t size);
/* The same for a header followed by the whole storages of CPU tensors, written
 * straight from their memory. */
WICK_API wick_status wick_write_storages_atomic(const char *path, const void *head, size_t head_size, int n,
                                                const wick_tensor *const *tensors);
/* n 1-D CPU tensors over a private (copy-on-write) mapping of the file: entry i
 * has numels[i] elements of dtypes[i] at byte offsets[i]. The mapping lives
 * until the last of them dies; writes to them never reach the file. */
WICK_API wick_status wick_map_storages(const char *path, int n, const int64_t *offsets, const wick_dtype *dtypes,
                                       const int64_t *numels, wick_tensor **out);
/* A 1-D CPU tensor of numel elements read from path at a byte offset. */
WICK_API wick_status wick_read_storage(wick_tensor **out, const char *path, int64_t offset, wick_dtype dtype,
                                       int64_t numel);
/* CRC-32C (Castagnoli; wick.save's per-storage checksum) of size bytes,
 * continuing from crc (0 to start): wick_crc32c(0, "123456789", 9) ==
 * 0xe3069283. Uses the SSE4.2 crc32 instruction where the CPU has it (checked at
 * run time; a table elsewhere) and, from 2 MiB, wick's thread pool. */
WICK_API uint32_t wick_crc32c(uint32_t crc, const void *data, size_t size);
/* zlib's CRC-32 (zip entries, wick checkpoints before crc32c) likewise, on the
 * thread pool from 2 MiB: wick_crc32(0, "123456789", 9) == 0xcbf43926. */
WICK_API uint32_t wick_crc32(uint32_t crc, const void *data, size_t size);

/* Flat checkpoints: a table of named tensors as a plain safetensors file (8-byte
 * little-endian header size, a JSON header {"name": {"dtype": "F32", "shape":
 * [...], "data_offsets": [begin, end]}, ...}, then the data), the format of
 * wick.save_safetensors, readable by Python's safetensors and by wick.load.
 * wick_save_flat writes n tensors (each copied to the CPU and made contiguous as
 * needed) atomically, largest element size first, with the JSON padded so each
 * entry is aligned to its element size. Names are UTF-8 without control
 * characters, distinct, and never "__metadata__"; dtype names are F32 F64 F16
 * BF16 I64 I32 U8 BOOL. Both functions are the C API's use of the one checkpoint
 * engine that wick.save and wick.load use (src/io/ckpt.h, internal): the same
 * header parser, checks and writer. */
WICK_API wick_status wick_save_flat(const char *path, int n, const char *const *names,
                                    const wick_tensor *const *tensors);
/* Reads a safetensors file from any writer: *n entries in header order, their
 * names and CPU tensors (over one private mapping of the file, or read into
 * memory where the writer did not align an entry) in arrays allocated with
 * malloc; release them with wick_free_flat. Every size and offset in the header
 * is checked before use; a bad file is WICK_ERR_IO with a message naming the
 * file and the problem. The "__metadata__" object is checked and ignored (a
 * wick.save checkpoint reads as its storages, "s1", "s2", ..., each 1-D). The
 * file is opened once. */
WICK_API wick_status wick_load_flat(const char *path, int *n, char ***names, wick_tensor ***tensors);
WICK_API void wick_free_flat(int n, char **names, wick_tensor **tensors);

/* ---- threads -------------------------------------------------------------- */

/* Bounds wick's own kernels and the BLAS library together (per process). Safe
 * while other threads run ops: it waits for the pool's running job, and jobs
 * started after it use the new count (BLIS takes its count under its own
 * lock; OpenBLAS documents no such guarantee, so with WICK_BLAS=OPENBLAS set
 * it while no matrix product runs). Never fails; n is clamped to [1, 64]. */
WICK_API void wick_set_num_threads(int n);
WICK_API int wick_get_num_threads(void);

/* ---- memory accounting ---------------------------------------------------- */

/* Called (on the allocating thread) when an allocation fails, before the
 * caching allocators are emptied and the allocation is retried once: a host
 * frees what it can (the Lua binding runs a full garbage collection, which
 * releases dead tensors). Per thread; NULL removes it. */
WICK_API void wick_set_oom_handler(void (*handler)(void *ctx), void *ctx);

/* Bytes of CPU tensor memory currently allocated (all threads, all states):
 * exact for the calling thread's own allocations, within 256 KiB for each other
 * thread's (they are counted in batches). */
WICK_API int64_t wick_cpu_bytes_in_use(void);
/* Bytes of GPU memory the CUDA allocator has handed out and not had back, over
 * all devices (the sum of wick_cuda_memory_allocated; 0 without CUDA). One
 * atomic load: the Lua binding paces its collector by it. */
WICK_API int64_t wick_cuda_bytes_in_use(void);
/* Large freed CPU blocks (128 KiB and more, at most 512 MiB in all) are cached for
 * reuse; this gives them back to the system. Also done before any allocation
 * fails as out of memory. */
WICK_API void wick_empty_cache(void);

/* The CPU allocator's statistics (wick.memory_stats in Lua, with the keys of
 * PyTorch's torch.cuda.memory_stats): tensor storages on the CPU, counted when
 * made and freed (exact, all threads); host memory wrapped by wick_from_host is
 * not counted. `reserved` is what wick holds from the system: the allocated
 * bytes plus the cached free blocks (wick_empty_cache gives those back). */
typedef struct wick_memory_stats {
    int64_t allocated_bytes, allocated_bytes_peak; /* live storage bytes, and their peak */
    int64_t allocated_bytes_total, freed_bytes_total;
    int64_t allocations, allocations_total, frees_total; /* live storages; counts since start */
    int64_t cached_bytes, cached_blocks;
    int64_t reserved_bytes;
    int64_t num_alloc_retries, num_ooms; /* allocations retried after a collection; failed for good */
} wick_memory_stats;
WICK_API void wick_get_memory_stats(wick_memory_stats *out);
/* Sets the peak to the current allocated bytes. */
WICK_API void wick_reset_peak_memory_stats(void);

/* ---- profiler -------------------------------------------------------------
 * wick.profiler.profile in Lua. While a profile records, every op called
 * through the Lua binding (and each wick.profiler.record_function range) is an
 * event; the thread that started the profile is the one recorded. Off, an op
 * pays one test of wick_profiling. Events nest: `parent` is the index of the
 * enclosing event (-1 at the top). Times are CLOCK_MONOTONIC nanoseconds;
 * `bytes` are the CPU storage bytes allocated while the event ran (all
 * threads). With record_shapes, an event's input shapes are `nshapes` entries
 * from wick_profiler_shapes()[shapes]: each an ndim (-1: not a tensor) then
 * that many sizes. */
typedef struct wick_profiler_event {
    const char *name; /* interned: valid for the life of the process */
    int64_t start_ns, end_ns;
    int64_t bytes;
    int64_t shapes;
    int32_t nshapes;
    int32_t parent;
    int32_t device; /* the device of its first tensor input as the Lua binding numbers devices; -1: none, -2: a user range, -3: a module's forward */
    /* GPU time (wick_profiler_time_device; resolved at stop): from start to end
     * of what the event queued on its device's stream, and when that began on
     * the monotonic clock (approximately). device_ns -1: not timed on a GPU. */
    int64_t device_start_ns, device_ns;
} wick_profiler_event;
WICK_API extern int wick_profiling; /* nonzero while a profile records (read-only to hosts) */
/* Starts recording into a buffer of max_events (events beyond it are counted
 * as dropped); fails when a profile already records. */
WICK_API wick_status wick_profiler_start(int64_t max_events, int record_shapes);
/* Stops (on the recording thread); events still open end now. */
WICK_API void wick_profiler_stop(void);
/* The events of the last profile (valid until the next start) and their count. */
WICK_API int64_t wick_profiler_event_count(int64_t *dropped);
WICK_API const wick_profiler_event *wick_profiler_events(void);
WICK_API const int64_t *wick_profiler_shapes(void);
/* A name that lives as long as the process (for wick_profiler_begin). */
WICK_API const char *wick_profiler_intern(const char *name);
/* Opens an event (its index; -1 when not recording here or the buffer is full).
 * `frame`: an address in the caller's C stack frame, or NULL: a begin at a
 * frame at or below an open event's frame closes that event first (it was left
 * by an error). */
WICK_API int64_t wick_profiler_begin(const char *name, int32_t device, const void *frame);
/* Adds an input shape to the event just opened (ndim -1: a non-tensor input). */
WICK_API void wick_profiler_shape(int64_t event, int ndim, const int64_t *sizes);
WICK_API int wick_profiler_records_shapes(void);
/* Closes it (and any event opened inside it and still open). */
WICK_API void wick_profiler_end(int64_t event);
/* Times the event just opened on `device` too, when it is a GPU: CUDA events
 * on the device's stream at its begin and end, resolved into device_ns at stop.
 * Nothing for other devices, or when the GPU cannot record (an op that fails
 * afterwards sets its own error). */
WICK_API void wick_profiler_time_device(int64_t event, wick_device device);

/* ---- embedding in a host ----------------------------------------------------
 * What a program that embeds wick (a game engine, a server) controls. The Lua
 * side of embedding (luaopen_wick, pushing tensors into a lua_State) is in
 * wick_embed.h, so this header stays free of Lua.
 *
 * Per process (shared by every thread and every lua_State), each safe to
 * change while other states run (details at each function): the allocator
 * and the log callback below, the thread pool and thread count, the random
 * generator (one shared stream), the CPU block cache, CUDA (context, caching
 * allocator, TF32).
 * Per lua_State: the tensor metatable and the Lua module table, device objects,
 * the collector's pacing (each state collects by its own threshold), the
 * interrupt flag (wick_embed.h); states are independent and may run on
 * different threads at once (each state on one thread at a time, as Lua
 * requires).
 * Per thread: the last error, grad mode, the OOM handler, the CUDA device, the
 * interrupt flag it watches. */

/* A contiguous CPU tensor over the host's own memory, without a copy: `data`
 * holds prod(sizes) elements of `dtype`, row-major, suitably aligned for the
 * dtype (64 bytes is best). Ownership:
 * - wick never frees, reallocates or moves `data`;
 * - `release(ctx)` is called exactly once, on whichever thread drops the last
 *   reference, when the last tensor or view over the memory dies (views, Lua
 *   tensors and autograd graphs keep it alive);
 * - the host keeps `data` valid until then; a NULL `release` means the host
 *   guarantees the lifetime by other means (it outlives every tensor over it);
 * - on failure nothing is wrapped and `release` is not called.
 * Writes through the tensor (in-place ops) reach the host's buffer, and the
 * host's writes are seen by later ops. `data` may be NULL only when a size is 0. */
WICK_API wick_status wick_from_host(wick_tensor **out, void *data, int ndim, const int64_t *sizes, wick_dtype dtype,
                                    void (*release)(void *ctx), void *ctx);

/* The allocator of CPU tensor memory (data, storages and tensor headers): every
 * such block then comes from alloc(nbytes, ud) and goes back through
 * free(p, nbytes, ud) with the same size. alloc returns NULL when out of
 * memory (the op then fails with WICK_ERR_OOM) and should return 64-byte
 * aligned memory; both may be called from any thread at once. Per process.
 * Blocks from the host's allocator are not cached (wick_empty_cache has none
 * to give back). Both NULL restores the default (malloc, posix_memalign and
 * the block cache). Must be set before the first tensor is created, or when
 * every tensor (of every state, thread and device) has been released: fails
 * with WICK_ERR_ARGUMENT, changing nothing, while any block of tensor memory
 * is out (also a kernel's scratch). Safe to call while other threads run ops:
 * the change happens at a moment when no block is out (allocations wait the
 * few instructions it takes), so every block goes back to the allocator that
 * made it. Memory that is not tensor memory (autograd nodes, Lua's own heap,
 * CUDA) does not use it. */
WICK_API wick_status wick_set_allocator(void *(*alloc)(size_t nbytes, void *ud),
                                        void (*free)(void *p, size_t nbytes, void *ud), void *ud);

/* Log levels of wick_set_log. */
#define WICK_LOG_DEBUG 0
#define WICK_LOG_INFO 1
#define WICK_LOG_WARNING 2
#define WICK_LOG_ERROR 3
/* Where wick's messages go (warnings such as "DataLoader: 'pin_memory' is set
 * to true but CUDA is not available"): log(level, msg, ud), with msg one line
 * without the "wick: " prefix or a newline, valid during the call only. May be
 * called from any thread, so it must be thread-safe. Per process. NULL (the
 * default) prints "wick: msg" to stderr (from Lua: through io.stderr). Safe
 * while other threads log: the callback and `ud` change together, and once
 * wick_set_log returns the old callback is not running and is never called
 * again (so the host may free the old `ud`). The callback must not call
 * wick_set_log itself (that waits for the callback: a deadlock). */
WICK_API void wick_set_log(void (*log)(int level, const char *msg, void *ud), void *ud);
/* Sends one message to the log callback, or to stderr when none is set. */
WICK_API void wick_log(int level, const char *msg);
/* 1 when a log callback is set. */
WICK_API int wick_has_log(void);

#ifdef __cplusplus
}
#endif
#include "wick_dist.h" /* distributed collectives (src/dist) */
#endif /* WICK_H */
