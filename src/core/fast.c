/* Fast paths for tiny CPU ops (wick_try_fast_*, wick.h), called by the Lua
 * binding through LuaJIT's FFI. They are the dispatcher's: they skip its
 * general machinery (type promotion, broadcasting, conversions, the thread
 * pool) for the one case that needs none of it: float tensors of one dtype and
 * shape, contiguous, on the CPU, that autograd need not see. They run the same
 * kernels as the full path, reached through the CPU backend's table
 * (binary_loop, gemm). Any other case returns 1 ("not handled") without
 * setting an error, and the caller takes the full path, which also produces
 * every error message. */
#include "autocast.h"
#include "autograd.h"

#define FAST_MAX_NUMEL 4096 /* above this the full path (and its threads) wins */

static bool fast_tensor(const wick_tensor *t) {
    /* a tensor autograd must see takes the full path (it records, or raises);
     * so does every op while the profiler records (its hook is in the binding) */
    /* (a view written through since its history was made: the full path makes it again) */
    return !wick_profiling && t &&
           (!wk_grad_mode || (!t->requires_grad && (!t->view_base || t->view_version == t->storage->version))) &&
           t->storage->device.type == WICK_CPU &&
           (t->dtype == WICK_FLOAT32 || t->dtype == WICK_FLOAT64) && wick_tensor_is_contiguous(t);
}

static bool fast_op(int op) {
    return wk_cpu_backend.binary_loop && (op == WICK_ADD || op == WICK_SUB || op == WICK_MUL || op == WICK_DIV);
}

static bool same_shape(const wick_tensor *a, const wick_tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->sizes[i] != b->sizes[i]) return false;
    return true;
}

/* Runs the backend's kernel over n elements: operand k advances by step[k]. */
static void run_scaled(int op, wick_dtype d, char *out, const char *x, const char *y, int64_t n,
                       const int64_t *step, double alpha) {
    char *p[3] = {out, (char *)x, (char *)y};
    wk_cpu_backend.binary_loop(op, d)(p, step, n, &alpha);
}

static void run(int op, wick_dtype d, char *out, const char *x, const char *y, int64_t n, const int64_t *step) {
    run_scaled(op, d, out, x, y, n, step, 1);
}

int wick_try_fast_binary_(int op, wick_tensor *a, const wick_tensor *b, double alpha) {
    if (!fast_op(op) || !fast_tensor(a) || !fast_tensor(b) || a->dtype != b->dtype || !same_shape(a, b)) return 1;
    if (a->storage == b->storage && a->offset != b->offset) return 1; /* overlapping views: full path */
    int64_t n = wick_tensor_numel(a);
    if (n > FAST_MAX_NUMEL) return 1;
    if (alpha != 1 && op != WICK_ADD && op != WICK_SUB) return 1;
    static const int64_t step[3] = {1, 1, 1};
    wk_bump_version(a);
    run_scaled(op, a->dtype, wk_data(a), wk_data(a), wk_data(b), n, step, alpha);
    return 0;
}

int wick_try_fast_binary(int op, wick_tensor **out, const wick_tensor *a, const wick_tensor *b) {
    if (!out || !fast_op(op) || !fast_tensor(a) || !fast_tensor(b) || a->dtype != b->dtype || !same_shape(a, b))
        return 1;
    int64_t n = wick_tensor_numel(a);
    wick_tensor *c;
    if (n > FAST_MAX_NUMEL || wk_tensor_new(&c, a->ndim, a->sizes, a->dtype, wick_cpu())) return 1;
    static const int64_t step[3] = {1, 1, 1};
    run(op, a->dtype, wk_data(c), wk_data(a), wk_data(b), n, step);
    *out = c;
    return 0;
}

int wick_try_fast_binary_scalar(int op, wick_tensor **out, const wick_tensor *a, double s, int scalar_first) {
    if (!out || !fast_op(op) || !fast_tensor(a)) return 1;
    int64_t n = wick_tensor_numel(a);
    wick_tensor *c;
    if (n > FAST_MAX_NUMEL || wk_tensor_new(&c, a->ndim, a->sizes, a->dtype, wick_cpu())) return 1;
    /* the number takes the tensor's dtype, as it does on the full path */
    float sf = (float)s;
    const char *sp = a->dtype == WICK_FLOAT32 ? (const char *)&sf : (const char *)&s;
    static const int64_t tensor_first[3] = {1, 1, 0}, number_first[3] = {1, 0, 1};
    if (scalar_first) run(op, a->dtype, wk_data(c), sp, wk_data(a), n, number_first);
    else run(op, a->dtype, wk_data(c), wk_data(a), sp, n, tensor_first);
    *out = c;
    return 0;
}

int wick_try_fast_mm(wick_tensor **out, const wick_tensor *a, const wick_tensor *b) {
    int64_t work; /* multiply-adds (the sizes of stride-0 views can be huge) */
    if (!out || !a || !b || wk_autocast_mask || a->ndim != 2 || b->ndim != 2 || a->dtype != b->dtype ||
        (a->dtype != WICK_FLOAT32 && a->dtype != WICK_FLOAT64) || a->storage->device.type != WICK_CPU ||
        b->storage->device.type != WICK_CPU || a->sizes[1] != b->sizes[0] ||
        ((a->requires_grad || b->requires_grad) && wk_grad_mode) ||
        __builtin_mul_overflow(a->sizes[0], b->sizes[1], &work) || __builtin_mul_overflow(work, a->sizes[1], &work) ||
        work > 32768)
        return 1;
    int trans[2];
    int64_t ld[2], shape[2] = {a->sizes[0], b->sizes[1]};
    wick_tensor *c;
    if (!wk_gemm_layout(a, &trans[0], &ld[0]) || !wk_gemm_layout(b, &trans[1], &ld[1]) ||
        wk_tensor_new(&c, 2, shape, a->dtype, wick_cpu()))
        return 1;
    wk_gemm_args g = {.dtype = a->dtype, .trans_a = trans[0], .trans_b = trans[1],
                      .m = shape[0], .n = shape[1], .k = a->sizes[1],
                      .a = wk_data(a), .lda = ld[0], .b = wk_data(b), .ldb = ld[1],
                      .c = wk_data(c), .ldc = shape[1] > 0 ? shape[1] : 1, .alpha = 1, .beta = 0};
    if (wk_cpu_backend.gemm(&g) != WICK_OK) {
        wick_tensor_release(c);
        return 1;
    }
    *out = c;
    return 0;
}
