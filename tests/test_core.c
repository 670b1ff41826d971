/* C tests of the core, without Lua: the API a C host uses. */
#include "wick.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"

static wick_options opts(wick_dtype d, const char *dev) {
    wick_options o = wick_default_options();
    o.dtype = d;
    wick_device_parse(dev, &o.device);
    return o;
}

static void test_devices(void) {
    wick_device d;
    char buf[32];
    CHECK(wick_device_parse("cuda:1", &d) == WICK_OK && d.type == WICK_CUDA && d.index == 1);
    CHECK(strcmp(wick_device_format(d, buf, sizeof buf), "cuda:1") == 0);
    CHECK(wick_device_parse("cuda", &d) == WICK_OK && d.index == -1);
    CHECK(wick_device_parse("gpu", &d) == WICK_ERR_DEVICE && strstr(wick_last_error(), "'gpu'"));
    CHECK(wick_device_parse("cuda:-1", &d) == WICK_ERR_DEVICE);
    CHECK(wick_device_parse("cuda:x", &d) == WICK_ERR_DEVICE);
    CHECK(!wick_cuda_is_available() || wick_cuda_device_count() > 0);
}

static void test_add_broadcast(void) {
    int64_t s23[2] = {2, 3}, s3[1] = {3};
    double a_vals[6] = {1, 2, 3, 4, 5, 6}, b_vals[3] = {10, 20, 30};
    wick_tensor *a, *b, *c;
    CHECK(wick_from_doubles(&a, 2, s23, a_vals, wick_default_options()) == WICK_OK);
    CHECK(wick_from_doubles(&b, 1, s3, b_vals, wick_default_options()) == WICK_OK);
    CHECK(wick_binary(&c, WICK_ADD, a, b) == WICK_OK);
    CHECK(wick_tensor_ndim(c) == 2 && wick_tensor_sizes(c)[1] == 3);
    CHECK(wick_get_double(c, 0) == 11 && wick_get_double(c, 5) == 36);
    wick_tensor_release(c);
    /* a shape that cannot broadcast names both shapes */
    int64_t s4[1] = {4};
    wick_tensor *d;
    CHECK(wick_full(&d, 1, s4, 1, wick_default_options()) == WICK_OK);
    CHECK(wick_binary(&c, WICK_ADD, a, d) == WICK_ERR_SHAPE && strstr(wick_last_error(), "[2, 3] vs [4]"));
    wick_tensor_release(a);
    wick_tensor_release(b);
    wick_tensor_release(d);
}

static void test_same_device_rule(void) {
    int64_t s[2] = {2, 2};
    wick_tensor *cpu, *meta, *out = NULL;
    CHECK(wick_full(&cpu, 2, s, 1, wick_default_options()) == WICK_OK);
    CHECK(wick_empty(&meta, 2, s, opts(WICK_FLOAT32, "meta")) == WICK_OK);
    CHECK(wick_mm(&out, cpu, meta) == WICK_ERR_DEVICE);
    CHECK(strstr(wick_last_error(), "Expected all tensors to be on the same device, but found at least two "
                                    "devices, cpu and meta! (when checking argument for argument mat2 in method mm)") != NULL);
    CHECK(out == NULL);
    /* meta runs shapes without data */
    wick_tensor *m2;
    CHECK(wick_mm(&m2, meta, meta) == WICK_OK && wick_tensor_data(m2) == NULL);
    wick_tensor_release(m2);
    wick_tensor_release(cpu);
    wick_tensor_release(meta);
}

static void test_matmul_transposed_view(void) {
    int64_t s[2] = {2, 3};
    double v[6] = {1, 2, 3, 4, 5, 6};
    wick_tensor *a, *at, *p;
    CHECK(wick_from_doubles(&a, 2, s, v, wick_default_options()) == WICK_OK);
    CHECK(wick_transpose(&at, a, 0, 1) == WICK_OK);
    CHECK(wick_mm(&p, a, at) == WICK_OK); /* [[14, 32], [32, 77]] */
    CHECK(wick_get_double(p, 0) == 14 && wick_get_double(p, 1) == 32 && wick_get_double(p, 3) == 77);
    wick_tensor_release(p);
    wick_tensor_release(at);
    wick_tensor_release(a);
}

/* x @ W^T with x's memory ending at a page that cannot be read (Debian 12's BLIS read up to a row
 * past A in this product: 7 rows, 65 columns, k = 515; cpu_gemm.c's nt_padded_a) */
static void test_matmul_reads_only_its_operands(void) {
    const int64_t m = 7, k = 515, n = 65;
    long ps = sysconf(_SC_PAGESIZE);
    size_t bytes = (size_t)(m * k) * sizeof(float), pages = (bytes + (size_t)ps - 1) / (size_t)ps + 1;
    char *base = mmap(NULL, pages * (size_t)ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(base != MAP_FAILED);
    CHECK(mprotect(base + (pages - 1) * (size_t)ps, (size_t)ps, PROT_NONE) == 0);
    float *xs = (float *)(base + (pages - 1) * (size_t)ps - bytes);
    for (int64_t i = 0; i < m * k; i++) xs[i] = 1.0f;
    int64_t xsz[2] = {m, k}, wsz[2] = {n, k};
    wick_tensor *x, *w, *wt, *y;
    CHECK(wick_from_host(&x, xs, 2, xsz, WICK_FLOAT32, NULL, NULL) == WICK_OK);
    CHECK(wick_full(&w, 2, wsz, 1.0, opts(WICK_FLOAT32, "cpu")) == WICK_OK);
    CHECK(wick_transpose(&wt, w, 0, 1) == WICK_OK);
    CHECK(wick_mm(&y, x, wt) == WICK_OK);
    CHECK(wick_get_double(y, 0) == (double)k && wick_get_double(y, m * n - 1) == (double)k);
    wick_tensor_release(y);
    wick_tensor_release(wt);
    wick_tensor_release(w);
    wick_tensor_release(x);
    munmap(base, pages * (size_t)ps);
}

static void test_errors_leave_nothing(void) {
    int64_t huge[2] = {1LL << 40, 1LL << 30};
    wick_tensor *t = NULL;
    CHECK(wick_empty(&t, 2, huge, wick_default_options()) == WICK_ERR_OOM && t == NULL);
    CHECK(strstr(wick_last_error(), "out of memory") != NULL);
    int64_t neg[1] = {-2};
    CHECK(wick_empty(&t, 1, neg, wick_default_options()) == WICK_ERR_ARGUMENT && t == NULL);
    CHECK(wick_cpu_bytes_in_use() == 0);
}

static void test_reduce_and_softmax(void) {
    int64_t s[2] = {2, 3};
    double v[6] = {1, 5, 3, 4, 2, 6};
    wick_tensor *a, *m, *idx, *sm;
    CHECK(wick_from_doubles(&a, 2, s, v, opts(WICK_FLOAT64, "cpu")) == WICK_OK);
    CHECK(wick_reduce(&m, &idx, WICK_MAX, a, 1, 0, 1) == WICK_OK);
    CHECK(wick_get_double(m, 0) == 5 && wick_get_double(m, 1) == 6);
    CHECK(wick_get_double(idx, 0) == 1 && wick_get_double(idx, 1) == 2);
    wick_tensor_release(m);
    wick_tensor_release(idx);
    CHECK(wick_softmax(&sm, a, 1) == WICK_OK);
    double total = wick_get_double(sm, 0) + wick_get_double(sm, 1) + wick_get_double(sm, 2);
    CHECK(fabs(total - 1) < 1e-12);
    wick_tensor_release(sm);
    wick_tensor_release(a);
}

static void test_half_roundtrip(void) {
    int64_t n = 4;
    double v[4] = {0.5, -2, 65504, 1e-7};
    wick_tensor *h, *f;
    CHECK(wick_from_doubles(&h, 1, &n, v, opts(WICK_FLOAT16, "cpu")) == WICK_OK);
    CHECK(wick_to(&f, h, opts(WICK_FLOAT32, "cpu")) == WICK_OK);
    CHECK(wick_get_double(f, 0) == 0.5 && wick_get_double(f, 1) == -2 && wick_get_double(f, 2) == 65504);
    CHECK(fabs(wick_get_double(f, 3) - 1e-7) < 6e-8); /* subnormal in half */
    wick_tensor_release(f);
    wick_tensor_release(h);
}

/* Size arithmetic of the C API (whose int64 arguments go past Lua's 2^53):
 * every overflow is an error and no view reaches outside its storage. */
static void test_size_overflow(void) {
    wick_tensor *t = NULL, *e = NULL, *v = NULL;
    int64_t s16 = 16, zero = 0;
    CHECK(wick_full(&t, 1, &s16, 1, wick_default_options()) == WICK_OK);
    CHECK(wick_empty(&e, 1, &zero, wick_default_options()) == WICK_OK);
    int64_t big2[2] = {(int64_t)1 << 32, (int64_t)1 << 32}, max2[2] = {INT64_MAX, 2};
    CHECK(wick_view(&v, e, 2, big2) == WICK_ERR_SHAPE && v == NULL);
    CHECK(wick_reshape(&v, e, 2, big2) == WICK_ERR_SHAPE && v == NULL);
    CHECK(wick_view(&v, t, 2, max2) == WICK_ERR_SHAPE && v == NULL);
    int64_t wrap3[3] = {INT64_MAX, 2, 0}; /* an element count of 0 over sizes that do not multiply */
    CHECK(wick_view(&v, e, 3, wrap3) == WICK_ERR_SHAPE && v == NULL);
    CHECK(wick_narrow(&v, t, 0, 1, INT64_MAX) == WICK_ERR_INDEX && v == NULL);
    CHECK(wick_narrow(&v, t, 0, INT64_MAX, 1) == WICK_ERR_INDEX && v == NULL);
    CHECK(wick_narrow(&v, t, 0, 16, 0) == WICK_OK && wick_tensor_numel(v) == 0);
    wick_tensor_release(v), v = NULL;
    CHECK(wick_select(&v, t, 0, INT64_MIN) == WICK_ERR_INDEX && v == NULL);
    CHECK(wick_expand(&v, t, 2, max2) == WICK_ERR_SHAPE && v == NULL);
    int64_t st2[2] = {(int64_t)3 << 50, (int64_t)3 << 50}, sz2[2] = {2049, 2049}, one = 1;
    CHECK(wick_as_strided(&v, t, 2, sz2, st2, 0) == WICK_ERR_INDEX && v == NULL);
    CHECK(wick_as_strided(&v, t, 2, big2, st2, 0) == WICK_ERR_SHAPE && v == NULL);
    CHECK(wick_as_strided(&v, t, 1, &one, &one, INT64_MAX) == WICK_ERR_INDEX && v == NULL);
    CHECK(wick_as_strided(&v, t, 1, &one, &one, 15) == WICK_OK && wick_tensor_offset(v) == 15);
    wick_tensor_release(v), v = NULL;
    float host[4] = {0};
    CHECK(wick_from_host(&v, host, 2, max2, WICK_FLOAT32, NULL, NULL) != WICK_OK && v == NULL);
    CHECK(wick_from_host(&v, host, 2, big2, WICK_FLOAT32, NULL, NULL) != WICK_OK && v == NULL);
    CHECK(wick_empty(&v, 2, max2, wick_default_options()) == WICK_ERR_OOM && v == NULL);
    CHECK(wick_get_double(t, 15) == 1 && isnan(wick_get_double(t, 16)) && strstr(wick_last_error(), "outside"));
    CHECK(isnan(wick_get_double(t, -1)) && isnan(wick_get_double(e, 0)));
    wick_tensor_release(t);
    wick_tensor_release(e);
}

/* wick_tensor_set_ and wick_tensors_to_ (model:to), and the dtype table. */
static void test_set_and_move(void) {
    int64_t s4[1] = {4}, s22[2] = {2, 2};
    wick_tensor *small = NULL, *meta = NULL, *big = NULL, *g = NULL, *x = NULL, *y = NULL, *i64 = NULL;
    CHECK(wick_full(&small, 1, s4, 2, wick_default_options()) == WICK_OK); /* its header lives in its storage's block */
    CHECK(wick_empty(&meta, 2, s22, opts(WICK_FLOAT64, "meta")) == WICK_OK);
    CHECK(wick_tensor_set_(small, meta) == WICK_OK);
    CHECK(wick_tensor_device(small).type == WICK_META && wick_tensor_dtype(small) == WICK_FLOAT64);
    CHECK(wick_tensor_ndim(small) == 2 && wick_tensor_storage_id(small) == wick_tensor_storage_id(meta));
    CHECK(wick_tensor_set_(small, small) == WICK_OK);
    CHECK(wick_tensor_set_(NULL, meta) == WICK_ERR_ARGUMENT && wick_tensor_set_(small, NULL) == WICK_ERR_ARGUMENT);
    /* errors leave dst as it was */
    CHECK(wick_full(&x, 1, s4, 1, wick_default_options()) == WICK_OK && wick_set_requires_grad(x, 1) == WICK_OK);
    CHECK(wick_unary(&y, WICK_EXP, x) == WICK_OK && wick_grad_fn_name(y) != NULL);
    CHECK(wick_tensor_set_(y, meta) == WICK_ERR_ARGUMENT && strstr(wick_last_error(), "autograd history"));
    CHECK(wick_full(&i64, 1, s4, 1, opts(WICK_INT64, "cpu")) == WICK_OK);
    CHECK(wick_tensor_set_(x, i64) == WICK_ERR_DTYPE && wick_tensor_dtype(x) == WICK_FLOAT32);
    CHECK(wick_full(&g, 1, s4, 1, wick_default_options()) == WICK_OK && wick_set_grad(x, g) == WICK_OK);
    CHECK(wick_tensor_set_(x, meta) == WICK_ERR_ARGUMENT && strstr(wick_last_error(), "gradient"));
    CHECK(wick_tensor_device(x).type == WICK_CPU);
    /* a model's move: x twice and its grad, one int64 tensor that a dtype leaves alone */
    wick_tensor *list[3] = {x, x, i64};
    wick_device to_meta = {WICK_META, -1};
    wick_dtype f64 = WICK_FLOAT64, i32 = WICK_INT32;
    CHECK(wick_tensors_to_(3, list, &to_meta, &f64, 0) == WICK_OK);
    CHECK(wick_tensor_device(x).type == WICK_META && wick_tensor_dtype(x) == WICK_FLOAT64 && wick_requires_grad(x));
    CHECK(wick_grad(x) == g && wick_tensor_device(g).type == WICK_META && wick_tensor_dtype(g) == WICK_FLOAT64);
    CHECK(wick_tensor_device(i64).type == WICK_META && wick_tensor_dtype(i64) == WICK_INT64);
    CHECK(wick_tensors_to_(1, list, NULL, &i32, 0) == WICK_ERR_DTYPE && wick_tensor_dtype(x) == WICK_FLOAT64);
    CHECK(wick_tensors_to_(-1, list, NULL, NULL, 0) == WICK_ERR_ARGUMENT);
    CHECK(wick_tensors_to_(0, NULL, &to_meta, NULL, 0) == WICK_OK);
    wick_tensor *holes[2] = {small, NULL};
    CHECK(wick_tensors_to_(2, holes, &to_meta, NULL, 0) == WICK_ERR_ARGUMENT);
    /* a failed copy (out of a meta tensor) moves nothing */
    CHECK(wick_full(&big, 1, s4, 3, wick_default_options()) == WICK_OK);
    wick_tensor *mixed[2] = {big, small};
    wick_device to_cpu = wick_cpu();
    CHECK(wick_cuda_end_batch() == WICK_ERR_ARGUMENT); /* the moves closed their batch of copies */
    CHECK(wick_tensors_to_(2, mixed, &to_cpu, &f64, 0) != WICK_OK);
    CHECK(wick_cuda_end_batch() == WICK_ERR_ARGUMENT); /* a failed one too */
    CHECK(wick_tensor_dtype(big) == WICK_FLOAT32 && wick_get_double(big, 3) == 3);
    CHECK(wick_tensors_to_(1, mixed, &to_cpu, &f64, 0) == WICK_OK && wick_get_double(big, 3) == 3 &&
          wick_tensor_dtype(big) == WICK_FLOAT64);
    wick_tensor *all[7] = {small, meta, big, g, x, y, i64};
    for (int k = 0; k < 7; k++) wick_tensor_release(all[k]);
    /* the dtype table */
    for (int d = 0; d < WICK_NUM_DTYPES; d++) {
        const wick_dtype_info *info = wick_dtype_info_of((wick_dtype)d);
        CHECK(info && strcmp(info->name, wick_dtype_name((wick_dtype)d)) == 0 && info->size == wick_dtype_size((wick_dtype)d));
        CHECK(info && info->is_floating == wick_dtype_is_floating((wick_dtype)d));
    }
    CHECK(wick_dtype_info_of(WICK_NUM_DTYPES) == NULL && wick_dtype_info_of((wick_dtype)-1) == NULL);
    wick_dtype parsed, aliased;
    int n = 0;
    for (const char *a; (a = wick_dtype_alias(n, &aliased)); n++)
        CHECK(wick_dtype_parse(a, &parsed) == WICK_OK && parsed == aliased);
    CHECK(n == 8 && wick_dtype_alias(-1, NULL) == NULL);
}

/* Autocast as a C host sees it: the state is the thread's, ops follow it. */
static void test_autocast(void) {
    int64_t s[2] = {2, 2};
    double v[4] = {1, 2, 3, 4};
    wick_tensor *a, *p;
    CHECK(wick_from_doubles(&a, 2, s, v, wick_default_options()) == WICK_OK);
    CHECK(!wick_is_autocast_enabled(WICK_CPU) && wick_get_autocast_dtype(WICK_CPU) == WICK_BFLOAT16);
    CHECK(wick_set_autocast_enabled(WICK_CPU, 1) == WICK_OK && wick_is_autocast_enabled(WICK_CPU));
    CHECK(!wick_is_autocast_enabled(WICK_CUDA));
    CHECK(wick_mm(&p, a, a) == WICK_OK && wick_tensor_dtype(p) == WICK_BFLOAT16 && wick_get_double(p, 0) == 7);
    wick_tensor_release(p);
    CHECK(wick_set_autocast_dtype(WICK_CPU, WICK_FLOAT16) == WICK_OK);
    CHECK(wick_mm(&p, a, a) == WICK_OK && wick_tensor_dtype(p) == WICK_FLOAT16);
    wick_tensor_release(p);
    CHECK(wick_set_autocast_dtype(WICK_CPU, WICK_FLOAT64) != WICK_OK && wick_get_autocast_dtype(WICK_CPU) == WICK_FLOAT16);
    CHECK(wick_set_autocast_enabled(WICK_META, 1) != WICK_OK);
    CHECK(wick_set_autocast_dtype(WICK_CPU, WICK_BFLOAT16) == WICK_OK);
    /* a region: a weight that requires grad is cast once, then reused */
    CHECK(wick_autocast_increment_nesting() == 1);
    CHECK(wick_set_requires_grad(a, 1) == WICK_OK);
    CHECK(wick_mm(&p, a, a) == WICK_OK && wick_tensor_dtype(p) == WICK_BFLOAT16);
    wick_tensor_release(p);
    CHECK(wick_autocast_decrement_nesting() == 0);
    wick_clear_autocast_cache();
    CHECK(wick_set_autocast_enabled(WICK_CPU, 0) == WICK_OK);
    CHECK(wick_mm(&p, a, a) == WICK_OK && wick_tensor_dtype(p) == WICK_FLOAT32);
    wick_tensor_release(p);
    wick_tensor_release(a);
}

/* A C host's custom function: its backward is the host's hook (the id it was
 * given), refused without one; the id is reported once the node is gone. */
static int64_t function_id;
static wick_status double_grad_hook(void *ud, wick_hook_kind kind, wick_tensor *leaf, int64_t id, wick_tensor **io) {
    if (kind != WICK_HOOK_FUNCTION || id != function_id || leaf) return wick_fail(WICK_ERR_ARGUMENT, "unexpected hook");
    return wick_binary_scalar(&io[1], WICK_MUL, io[0], (wick_scalar){2, 1}, 0); /* d out / d x = 2 */
}

static void test_custom_function(void) {
    int64_t s[1] = {3};
    wick_tensor *x = NULL, *out = NULL, *loss = NULL, *i64 = NULL;
    CHECK(wick_full(&x, 1, s, 1, wick_default_options()) == WICK_OK && wick_set_requires_grad(x, 1) == WICK_OK);
    CHECK(wick_full(&out, 1, s, 2, wick_default_options()) == WICK_OK);
    CHECK(wick_function_record(out, "TwiceBackward", 1, &x, &function_id) == WICK_OK && function_id > 0);
    CHECK(strcmp(wick_grad_fn_name(out), "TwiceBackward") == 0);
    CHECK(wick_function_record(out, "Again", 1, &x, &function_id) == WICK_ERR_ARGUMENT); /* has a grad_fn */
    CHECK(wick_full(&i64, 1, s, 2, opts(WICK_INT64, "cpu")) == WICK_OK);
    int64_t unused;
    CHECK(wick_function_record(i64, "Int", 1, &x, &unused) == WICK_ERR_ARGUMENT);
    CHECK(wick_function_record(x, "Leaf", 1, &x, &unused) == WICK_ERR_ARGUMENT && !wick_grad_fn_name(x));
    CHECK(wick_reduce(&loss, NULL, WICK_SUM, out, -1, 0, 0) == WICK_OK);
    CHECK(wick_backward(loss, NULL, 1) == WICK_ERR_UNSUPPORTED && strstr(wick_last_error(), "TwiceBackward"));
    CHECK(wick_backward_ex(loss, NULL, 0, double_grad_hook, NULL) == WICK_OK);
    CHECK(wick_grad(x) && wick_get_double(wick_grad(x), 2) == 2);
    int64_t ids[4];
    CHECK(wick_function_released(ids, 4) == 0); /* out still holds its node */
    wick_tensor_release(loss);
    wick_tensor_release(out);
    CHECK(wick_function_released(ids, 4) == 1 && ids[0] == function_id);
    wick_tensor_release(i64);
    wick_tensor_release(x);
}

/* A C host's checkpoint without reentry: the exp between begin and end keeps no
 * saved tensor; the backward asks the hook to run it again (which it does from
 * the same input), and without a hook it is refused. The id is released with
 * the graph. */
static int64_t checkpoint_id;
static wick_tensor *checkpoint_input;
static int recomputes;
static wick_status recompute_hook(void *ud, wick_hook_kind kind, wick_tensor *leaf, int64_t id, wick_tensor **grad) {
    (void)ud, (void)leaf, (void)grad;
    if (kind != WICK_HOOK_RECOMPUTE || id != checkpoint_id) return wick_fail(WICK_ERR_ARGUMENT, "unexpected hook");
    recomputes++;
    wick_tensor *y = NULL;
    wick_status st = wick_checkpoint_recompute_begin(id);
    if (!st) {
        st = wick_unary(&y, WICK_EXP, checkpoint_input);
        wick_status end = wick_checkpoint_recompute_end(id);
        if (!st) st = end;
    }
    wick_tensor_release(y);
    return st;
}

static void test_checkpoint(void) {
    int64_t s[1] = {3};
    wick_tensor *x = NULL, *y = NULL, *loss = NULL;
    CHECK(wick_full(&x, 1, s, 0.5, opts(WICK_FLOAT64, "cpu")) == WICK_OK && wick_set_requires_grad(x, 1) == WICK_OK);
    checkpoint_input = x;
    CHECK(wick_checkpoint_begin(&checkpoint_id) == WICK_OK && checkpoint_id > 0);
    CHECK(wick_unary(&y, WICK_EXP, x) == WICK_OK);
    CHECK(wick_checkpoint_end(checkpoint_id + 1) == WICK_ERR_ARGUMENT); /* not the innermost one */
    CHECK(wick_checkpoint_end(checkpoint_id) == WICK_OK);
    CHECK(wick_reduce(&loss, NULL, WICK_SUM, y, -1, 0, 0) == WICK_OK);
    CHECK(wick_backward(loss, NULL, 1) == WICK_ERR_ARGUMENT && strstr(wick_last_error(), "checkpoint"));
    CHECK(recomputes == 0);
    CHECK(wick_backward_ex(loss, NULL, 0, recompute_hook, NULL) == WICK_OK && recomputes == 1);
    CHECK(wick_grad(x) && fabs(wick_get_double(wick_grad(x), 0) - exp(0.5)) < 1e-15);
    wick_tensor_release(loss);
    wick_tensor_release(y);
    int64_t ids[8];
    int n = wick_hooks_released(ids, 8), seen = 0;
    for (int i = 0; i < n; i++) seen |= ids[i] == checkpoint_id;
    CHECK(seen);
    wick_tensor_release(x);
}

int main(void) {
    test_devices();
    test_add_broadcast();
    test_same_device_rule();
    test_matmul_transposed_view();
    test_matmul_reads_only_its_operands();
    test_errors_leave_nothing();
    test_reduce_and_softmax();
    test_half_roundtrip();
    test_size_overflow();
    test_set_and_move();
    test_autocast();
    test_custom_function();
    test_checkpoint();
    printf("%d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
