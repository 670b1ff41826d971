/* C tests of the CUDA runtime (src/cuda/cuda_runtime.cu), through the C API
 * and the backend table: device queries, errors, the caching allocator and its
 * statistics, transfers, pinned memory, out-of-memory recovery.
 *
 * Everywhere: what a machine without a GPU must see (is_available 0, zero
 * statistics, clear errors), in a CUDA build and in a build without CUDA. On a
 * machine with a GPU the GPU part runs instead; without one it prints
 * "skipped", never passes silently. */
#include "../src/core/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../src/cuda/cuda_caching.h"

#define HAS(text) (strstr(wick_last_error(), text) != NULL)

static wick_options on(const char *dev) {
    wick_options o = wick_default_options();
    wick_device_parse(dev, &o.device);
    return o;
}

/* ---- without a GPU ---- */

static void test_no_gpu(void) {
    CHECK(wick_cuda_is_available() == 0);
    CHECK(wick_cuda_device_count() == 0);
    CHECK(wick_cuda_memory_allocated(0) == 0 && wick_cuda_memory_allocated(-1) == 0);
    CHECK(wick_cuda_max_memory_allocated(0) == 0 && wick_cuda_memory_reserved(0) == 0);
    wick_cuda_reset_peak_memory_stats(0);
    wick_cuda_empty_cache(); /* nothing to do, and no crash */

    CHECK(wick_cuda_set_device(0) == WICK_ERR_DEVICE && HAS("invalid device ordinal 0") && HAS("device_count() is 0"));
    CHECK(wick_cuda_set_device(-1) == WICK_ERR_DEVICE && HAS("-1"));
    wick_cuda_properties props = {.major = 5};
    CHECK(wick_cuda_get_device_properties(0, &props) == WICK_ERR_DEVICE && HAS("get_device_properties") &&
          props.major == 0);
    int index = 7;
    CHECK(wick_cuda_current_device(&index) == WICK_ERR_DEVICE && index == 0 && HAS("is_available() is false"));
    CHECK(wick_cuda_synchronize(-1) == WICK_ERR_DEVICE && HAS("is_available() is false"));

    int64_t s[1] = {4};
    const char *devs[] = {"cuda", "cuda:0", "cuda:1"};
    for (int i = 0; i < 3; i++) {
        wick_tensor *t = NULL;
        CHECK(wick_empty(&t, 1, s, on(devs[i])) == WICK_ERR_DEVICE && t == NULL);
        char quoted[16];
        snprintf(quoted, sizeof quoted, "'%s'", devs[i]);
        CHECK(HAS(quoted) && HAS("is_available() is false"));
    }
    wick_tensor *c, *g = NULL, *p = NULL;
    CHECK(wick_full(&c, 1, s, 1, wick_default_options()) == WICK_OK);
    CHECK(wick_to(&g, c, on("cuda:0")) == WICK_ERR_DEVICE && g == NULL && HAS("is_available() is false"));
    CHECK(!wick_tensor_is_pinned(c));
    CHECK(wick_pin_memory(&p, c) == WICK_ERR_DEVICE && p == NULL && HAS("pin_memory") &&
          HAS("is_available() is false"));
    wick_tensor_release(c);

    wick_cuda_set_allow_tf32(1);
    CHECK(wick_cuda_allow_tf32() == 1);
    wick_cuda_set_allow_tf32(0);
    CHECK(wick_cuda_allow_tf32() == 0);
}

/* ---- the allocator's host logic, on any machine ---- */

static void test_caching_switch(void) {
    CHECK(wk_cuda_caching_parse(NULL) == 1 && wk_cuda_caching_parse("") == 1);
    const char *on[] = {"1", "on", "true", "yes"}, *off[] = {"0", "off", "false", "no"};
    for (int i = 0; i < 4; i++) CHECK(wk_cuda_caching_parse(on[i]) == 1 && wk_cuda_caching_parse(off[i]) == 0);
    const char *bad[] = {"2", "00", " 0", "0 ", "OFF?", "-1", "disable"};
    for (int i = 0; i < 7; i++) CHECK(wk_cuda_caching_parse(bad[i]) == -1);
    /* caching off: exactly the request, never a zero-byte cudaMalloc */
    CHECK(wk_cuda_nocache_size(0) == 1 && wk_cuda_nocache_size(3) == 3 && wk_cuda_nocache_size(1000) == 1000);
    CHECK(wk_cuda_nocache_size((size_t)3 << 30) == (size_t)3 << 30);
}

/* The statistics through a made-up sequence of allocations and frees, with
 * caching off (every block reserved and returned on its own) and on. */
static void test_caching_counts(void) {
    size_t req[] = {3, 0, 1000, ((size_t)2 << 20) + 1, 512};
    int n = (int)(sizeof req / sizeof *req);
    wk_cuda_counts c = {0, 0, 0, 0};
    int64_t sum = 0;
    for (int i = 0; i < n; i++) {
        int64_t size = (int64_t)wk_cuda_nocache_size(req[i]);
        sum += size;
        c = wk_cuda_counts_after_alloc(c, size, size);
        CHECK(c.allocated == sum && c.reserved == sum && c.peak == sum);
    }
    CHECK(sum == 3 + 1 + 1000 + (2 << 20) + 1 + 512);
    int order[] = {2, 0, 4, 1, 3}; /* not the order of allocation */
    for (int k = 0; k < n; k++) {
        int64_t size = (int64_t)wk_cuda_nocache_size(req[order[k]]);
        c = wk_cuda_counts_after_free(c, size, size);
        CHECK(c.allocated == c.reserved && c.peak == sum);
    }
    CHECK(c.allocated == 0 && c.reserved == 0 && c.peak == sum);
    /* a new peak only above the old one */
    c = wk_cuda_counts_after_alloc(c, 10, 10);
    CHECK(c.peak == sum && c.allocated == 10);

    /* caching on: one 2 MiB segment reserved, blocks carved from it and kept */
    wk_cuda_counts k = {0, 0, 0, 0};
    k = wk_cuda_counts_after_alloc(k, 1024, 2 << 20);
    k = wk_cuda_counts_after_alloc(k, 512, 0);
    CHECK(k.allocated == 1536 && k.reserved == 2 << 20 && k.peak == 1536);
    k = wk_cuda_counts_after_free(k, 1024, 0);
    k = wk_cuda_counts_after_free(k, 512, 0);
    CHECK(k.allocated == 0 && k.reserved == 2 << 20 && k.peak == 1536);
    /* max_memory_reserved: the most reserved at once, kept when blocks go back */
    CHECK(k.peak_reserved == 2 << 20);
    k = wk_cuda_counts_after_alloc(k, 4 << 20, 4 << 20);
    k = wk_cuda_counts_after_free(k, 4 << 20, 4 << 20);
    CHECK(k.reserved == 2 << 20 && k.peak_reserved == 6 << 20);
    k = wk_cuda_counts_reserve(k, 1 << 20);
    CHECK(k.reserved == 3 << 20 && k.peak_reserved == 6 << 20);
}

#ifdef WICK_WITH_CUDA
/* The error translation needs no GPU. cuda.h's prototypes take CUDA's enums,
 * which are ints; the values are CUDA's own (driver_types.h, cublas_api.h). */
wick_status wk_cuda_check(int err, const char *op, int device);
wick_status wk_cublas_check(int status, const char *op, int device);
enum { CUDA_SUCCESS = 0, CUDA_OOM = 2, CUDA_INVALID_VALUE = 1, CUDA_ILLEGAL_ADDRESS = 700 };
enum { CUBLAS_ALLOC_FAILED = 3, CUBLAS_NOT_SUPPORTED = 15, CUBLAS_INVALID_VALUE = 7 };

static void test_error_texts(void) {
    CHECK(wk_cuda_check(CUDA_SUCCESS, "x", 0) == WICK_OK);
    CHECK(wk_cuda_check(CUDA_OOM, "alloc", 1) == WICK_ERR_OOM && HAS("out of memory") && HAS("alloc on cuda:1") &&
          !HAS("sticky"));
    CHECK(wk_cuda_check(CUDA_INVALID_VALUE, "copy", 0) == WICK_ERR_DEVICE && HAS("copy on cuda:0 failed: ") &&
          HAS("cudaErrorInvalidValue") && !HAS("sticky"));
    CHECK(wk_cuda_check(CUDA_ILLEGAL_ADDRESS, "add", 2) == WICK_ERR_DEVICE && HAS("add on cuda:2 failed: ") &&
          HAS("cudaErrorIllegalAddress") && HAS("sticky") && HAS("until the process restarts"));
    CHECK(wk_cuda_check(CUDA_OOM, "pin_memory", -1) == WICK_ERR_OOM && HAS("on the host"));
    CHECK(wk_cublas_check(CUBLAS_ALLOC_FAILED, "matmul", 0) == WICK_ERR_OOM && HAS("out of memory") &&
          HAS("matmul on cuda:0"));
    CHECK(wk_cublas_check(CUBLAS_NOT_SUPPORTED, "matmul", 0) == WICK_ERR_UNSUPPORTED);
    CHECK(wk_cublas_check(CUBLAS_INVALID_VALUE, "matmul", 0) == WICK_ERR_DEVICE && HAS("CUBLAS_STATUS_INVALID_VALUE"));
}

/* cuBLAS is opened with dlopen on first use, through forwards with cuBLAS's
 * names (cuda_runtime.cu); one that needs no GPU shows the library loaded. */
const char *cublasGetStatusName(int status);

static void test_cublas_loads(void) {
    const char *name = cublasGetStatusName(CUBLAS_NOT_SUPPORTED);
    CHECK(name && strcmp(name, "CUBLAS_STATUS_NOT_SUPPORTED") == 0);
    if (name && strcmp(name, "CUBLAS_STATUS_NOT_SUPPORTED") != 0)
        fprintf(stderr, "cuBLAS did not load: cublasGetStatusName gave '%s'\n", name);
}

/* ---- with a GPU ---- */

void *wk_cuda_alloc_scratch(size_t nbytes, int device);
void wk_cuda_free_scratch(void *ptr, size_t nbytes, int device);
void *wk_cublas_handle(int device, const char *op);

#define MiB ((int64_t)1 << 20)

static void test_allocator(void) {
    const wick_backend *be = wk_backend_for((wick_device){WICK_CUDA, 0});
    CHECK(be && strcmp(be->name, "cuda") == 0);
    wick_cuda_empty_cache();
    int64_t base = wick_cuda_memory_allocated(0);
    CHECK(base == 0);

    /* small requests: rounded to 512 bytes, carved from a 2 MiB segment, reused */
    void *a = be->alloc(1000, 0);
    CHECK(a != NULL);
    CHECK(wick_cuda_memory_allocated(0) == 1024);
    CHECK(wick_cuda_memory_reserved(0) == 2 * MiB);
    void *b = be->alloc(1, 0);
    CHECK(b != NULL && b != a && wick_cuda_memory_reserved(0) == 2 * MiB); /* same segment */
    be->free(a, 1000, 0);
    CHECK(wick_cuda_memory_allocated(0) == 512);
    void *c = be->alloc(900, 0);
    CHECK(c == a); /* best fit: the freed block */
    be->free(b, 1, 0);
    be->free(c, 900, 0);
    CHECK(wick_cuda_memory_allocated(0) == 0);
    CHECK(wick_cuda_max_memory_allocated(0) == 1536);
    wick_cuda_reset_peak_memory_stats(0);
    CHECK(wick_cuda_max_memory_allocated(0) == 0);

    /* large requests: rounded to 2 MiB; a large free block is split, not handed whole */
    void *big = be->alloc((size_t)(10 * MiB), 0);
    CHECK(big != NULL && wick_cuda_memory_allocated(0) == 10 * MiB);
    int64_t reserved = wick_cuda_memory_reserved(0);
    CHECK(reserved == 12 * MiB);
    be->free(big, (size_t)(10 * MiB), 0);
    void *part = be->alloc((size_t)(3 * MiB), 0);
    CHECK(part == big && wick_cuda_memory_allocated(0) == 4 * MiB);
    void *rest = be->alloc((size_t)(6 * MiB), 0);
    CHECK(rest == (char *)big + 4 * MiB);
    CHECK(wick_cuda_memory_reserved(0) == reserved); /* no new cudaMalloc */
    be->free(part, (size_t)(3 * MiB), 0);
    be->free(rest, (size_t)(6 * MiB), 0);
    CHECK(wick_cuda_memory_allocated(0) == 0);
    CHECK(wick_cuda_max_memory_allocated(0) == 10 * MiB);

    /* the split blocks merged again: the whole segment goes back to CUDA */
    wick_cuda_empty_cache();
    CHECK(wick_cuda_memory_reserved(0) == 0);

    void *s = wk_cuda_alloc_scratch(12345, 0);
    CHECK(s != NULL && wick_cuda_memory_allocated(0) == 12800);
    wk_cuda_free_scratch(s, 12345, 0);
    CHECK(wick_cuda_memory_allocated(0) == 0);
}

/* WICK_CUDA_CACHING=0 (the sanitizer mode; tools/gpu-check.sh full runs this
 * test so): each block is a cudaMalloc of exactly its bytes, freed at once. */
static void test_allocator_nocache(void) {
    const wick_backend *be = wk_backend_for((wick_device){WICK_CUDA, 0});
    CHECK(wick_cuda_memory_allocated(0) == 0 && wick_cuda_memory_reserved(0) == 0);
    void *a = be->alloc(1000, 0);
    void *b = be->alloc(3, 0);
    CHECK(a != NULL && b != NULL && a != b);
    CHECK(wick_cuda_memory_allocated(0) == 1003 && wick_cuda_memory_reserved(0) == 1003);
    be->free(a, 1000, 0);
    CHECK(wick_cuda_memory_allocated(0) == 3 && wick_cuda_memory_reserved(0) == 3);
    be->free(b, 3, 0);
    CHECK(wick_cuda_memory_allocated(0) == 0 && wick_cuda_memory_reserved(0) == 0);
    CHECK(wick_cuda_max_memory_allocated(0) == 1003);
    void *s = wk_cuda_alloc_scratch(12345, 0);
    CHECK(s != NULL && wick_cuda_memory_allocated(0) == 12345 && wick_cuda_memory_reserved(0) == 12345);
    wk_cuda_free_scratch(s, 12345, 0);
    CHECK(wick_cuda_memory_allocated(0) == 0 && wick_cuda_memory_reserved(0) == 0);
    wick_cuda_reset_peak_memory_stats(0);
}

static void test_transfers(void) {
    int64_t s[2] = {3, 5};
    double v[15];
    for (int i = 0; i < 15; i++) v[i] = i * 1.5 - 4;
    wick_tensor *c, *g, *back, *ct, *gt, *back_t;
    CHECK(wick_from_doubles(&c, 2, s, v, wick_default_options()) == WICK_OK);
    CHECK(wick_to(&g, c, on("cuda:0")) == WICK_OK);
    CHECK(wick_cuda_memory_allocated(0) >= 15 * 4);
    CHECK(wick_to(&back, g, wick_default_options()) == WICK_OK);
    CHECK(memcmp(wick_tensor_data(c), wick_tensor_data(back), 15 * 4) == 0);
    double x = 0;
    CHECK(wick_item_double(g, &x) == WICK_ERR_SHAPE); /* 15 elements */
    /* a transposed view crosses as contiguous bytes */
    CHECK(wick_transpose(&ct, c, 0, 1) == WICK_OK);
    CHECK(wick_to(&gt, ct, on("cuda")) == WICK_OK);
    CHECK(wick_to(&back_t, gt, wick_default_options()) == WICK_OK);
    CHECK(wick_get_double(back_t, 1) == wick_get_double(ct, 1) && wick_get_double(back_t, 14) == v[14]);
    /* int64 beyond 2^53 survives the round trip */
    int64_t big[2] = {((int64_t)1 << 60) + 1, -3};
    int64_t n2[1] = {2};
    wick_tensor *ci, *gi, *bi;
    wick_options o = wick_default_options();
    o.dtype = WICK_INT64;
    CHECK(wick_from_int64(&ci, 1, n2, big, o) == WICK_OK);
    wick_options gpu_int64 = on("cuda:0"); /* wick_to's options name the dtype too (default float32) */
    gpu_int64.dtype = WICK_INT64;
    CHECK(wick_to(&gi, ci, gpu_int64) == WICK_OK);
    CHECK(wick_tensor_dtype(gi) == WICK_INT64);
    CHECK(wick_to(&bi, gi, o) == WICK_OK);
    CHECK(memcmp(wick_tensor_data(bi), big, sizeof big) == 0);
    if (wick_cuda_device_count() > 1) { /* between GPUs */
        wick_tensor *g1, *b1;
        CHECK(wick_to(&g1, g, on("cuda:1")) == WICK_OK);
        CHECK(wick_to(&b1, g1, wick_default_options()) == WICK_OK);
        CHECK(memcmp(wick_tensor_data(c), wick_tensor_data(b1), 15 * 4) == 0);
        wick_tensor_release(g1);
        wick_tensor_release(b1);
    }
    wick_tensor *list[] = {c, g, back, ct, gt, back_t, ci, gi, bi};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++) wick_tensor_release(list[i]);
    CHECK(wick_cuda_synchronize(-1) == WICK_OK && wick_cuda_synchronize(0) == WICK_OK);
}

static void test_pinned(void) {
    int64_t s[2] = {64, 33};
    wick_tensor *t, *tt, *p, *p2, *pt, *g, *back;
    CHECK(wick_rand(&t, 2, s, wick_default_options()) == WICK_OK);
    CHECK(!wick_tensor_is_pinned(t));
    CHECK(wick_pin_memory(&p, t) == WICK_OK && wick_tensor_is_pinned(p));
    CHECK(wick_tensor_ndim(p) == 2 && wick_tensor_sizes(p)[0] == 64 && wick_tensor_sizes(p)[1] == 33);
    CHECK(memcmp(wick_tensor_data(p), wick_tensor_data(t), 64 * 33 * 4) == 0);
    CHECK(wick_pin_memory(&p2, p) == WICK_OK && p2 == p); /* already pinned: itself */
    wick_tensor_release(p2);
    /* a non-contiguous input gives a contiguous pinned copy */
    CHECK(wick_transpose(&tt, t, 0, 1) == WICK_OK);
    CHECK(wick_pin_memory(&pt, tt) == WICK_OK && wick_tensor_is_contiguous(pt));
    CHECK(wick_get_double(pt, 5) == wick_get_double(tt, 5) && wick_get_double(pt, 2000) == wick_get_double(tt, 2000));
    /* non_blocking both ways, then synchronize */
    wick_options o = on("cuda:0");
    o.non_blocking = 1;
    CHECK(wick_to(&g, p, o) == WICK_OK);
    CHECK(wick_empty(&back, 2, s, wick_default_options()) == WICK_OK);
    wick_tensor *pback;
    CHECK(wick_pin_memory(&pback, back) == WICK_OK);
    CHECK(wick_copy_(pback, g) == WICK_OK);
    CHECK(wick_cuda_synchronize(0) == WICK_OK);
    CHECK(memcmp(wick_tensor_data(pback), wick_tensor_data(t), 64 * 33 * 4) == 0);
    /* a GPU tensor cannot be pinned */
    wick_tensor *bad = NULL;
    CHECK(wick_pin_memory(&bad, g) == WICK_ERR_DEVICE && bad == NULL && HAS("expected a CPU tensor"));
    wick_tensor *list[] = {t, tt, p, pt, g, back, pback};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++) wick_tensor_release(list[i]);
}

static void test_oom(void) {
    int64_t huge[1] = {(int64_t)1 << 46}; /* 256 TiB of float32 */
    wick_tensor *t = NULL;
    CHECK(wick_empty(&t, 1, huge, on("cuda:0")) == WICK_ERR_OOM && t == NULL && HAS("out of memory") &&
          HAS("cuda:0"));
    CHECK(wk_cuda_alloc_scratch((size_t)1 << 48, 0) == NULL && HAS("out of memory"));
    /* the process is still usable */
    int64_t s[1] = {3};
    wick_tensor *g, *b;
    CHECK(wick_full(&g, 1, s, 2.5, on("cuda:0")) == WICK_OK);
    CHECK(wick_to(&b, g, wick_default_options()) == WICK_OK);
    CHECK(b && wick_get_double(b, 2) == 2.5);
    wick_tensor_release(g);
    wick_tensor_release(b);
}

static void test_devices(void) {
    int n = wick_cuda_device_count(), index = -1;
    CHECK(wick_cuda_current_device(&index) == WICK_OK && index == 0);
    CHECK(wick_cuda_set_device(n) == WICK_ERR_DEVICE && HAS("device_count() is"));
    CHECK(wick_cuda_set_device(n - 1) == WICK_OK);
    CHECK(wick_cuda_current_device(&index) == WICK_OK && index == n - 1);
    CHECK(wick_cuda_set_device(0) == WICK_OK);
    wick_cuda_properties p;
    CHECK(wick_cuda_get_device_properties(0, &p) == WICK_OK && p.name[0] && p.major >= 3 && p.total_memory > 0 &&
          p.multi_processor_count > 0);
    printf("test_cuda_runtime: %s, compute capability %d.%d, %lld MiB, %d SMs\n", p.name, p.major, p.minor,
           (long long)(p.total_memory >> 20), p.multi_processor_count);
    CHECK(wick_cuda_get_device_properties(n, &p) == WICK_ERR_DEVICE && HAS("invalid device ordinal"));
    void *h = wk_cublas_handle(0, "test");
    CHECK(h != NULL); /* cuBLAS opened with dlopen */
    CHECK(wk_cublas_handle(0, "test") == h);
}

/* Threads allocating and freeing at once: the allocator's lock, and each
 * thread's own current device (0 by default). */
static void *churn(void *arg) {
    (void)arg;
    int index = -1;
    if (wick_cuda_current_device(&index) != WICK_OK || index != 0) return (void *)1;
    const wick_backend *be = wk_backend_for((wick_device){WICK_CUDA, 0});
    void *ptrs[16] = {0};
    size_t sizes[16] = {0};
    unsigned seed = 12345;
    for (int i = 0; i < 4000; i++) {
        int k = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 16;
        if (ptrs[k]) be->free(ptrs[k], sizes[k], 0), ptrs[k] = NULL;
        else {
            sizes[k] = (size_t)1 << ((seed >> 8) % 23); /* 1 byte .. 4 MiB */
            if (!(ptrs[k] = be->alloc(sizes[k], 0))) return (void *)1;
        }
    }
    for (int k = 0; k < 16; k++)
        if (ptrs[k]) be->free(ptrs[k], sizes[k], 0);
    return NULL;
}

static void test_threads(void) {
    pthread_t th[4];
    for (int i = 0; i < 4; i++) pthread_create(&th[i], NULL, churn, NULL);
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(th[i], &r);
        CHECK(r == NULL);
    }
    CHECK(wick_cuda_memory_allocated(0) == 0);
    wick_cuda_empty_cache();
    CHECK(wick_cuda_memory_reserved(0) == 0);
}
#endif

int main(void) {
    test_caching_switch();
    test_caching_counts();
    if (!wick_cuda_is_available()) {
        test_no_gpu();
#ifdef WICK_WITH_CUDA
        test_error_texts();
        test_cublas_loads();
#endif
        printf("test_cuda_runtime: GPU part skipped (no CUDA GPU%s)\n",
#ifdef WICK_WITH_CUDA
               ""
#else
               "; built without CUDA"
#endif
        );
    } else {
#ifdef WICK_WITH_CUDA
        test_error_texts();
        test_cublas_loads();
        if (wk_cuda_caching_parse(getenv("WICK_CUDA_CACHING")) == 0) test_allocator_nocache();
        else test_allocator();
        test_devices();
        test_transfers();
        test_pinned();
        test_oom();
        test_threads();
        printf("test_cuda_runtime: GPU part ran on %d GPU(s)\n", wick_cuda_device_count());
#endif
    }
    printf("test_cuda_runtime: %d checks, %d failures\n", checks, failures);
    return failures != 0;
}
