/* The CPU backend: memory, copies with dtype conversion, fill, random numbers,
 * and the table of function pointers that the dispatcher calls. */
#include "cpu.h"
#include "cpu_vmath.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- memory ----
 * Large blocks are kept in a small cache when freed: the next tensor of about
 * the same size reuses them instead of paying a page fault per 4 KiB page of a
 * fresh mmap (which costs more than the op itself on 16M-element tensors). The
 * cache is bounded, per process, guarded by a mutex, and emptied before an
 * allocation is reported as out of memory. Fresh large blocks are 2 MiB aligned
 * and asked to use huge pages, which cuts the faults of the first use. */
#define CACHE_MIN_BLOCK ((size_t)128 << 10)
#define CACHE_MAX_BYTES ((size_t)512 << 20)
/* enough slots for what one collection frees at once (WL_GC_MIN, 256 MiB, of
 * nanoGPT's 768 KiB attention scores is ~330 blocks): with 32 the rest went
 * back to glibc, which trimmed it, and the next ~300 results faulted afresh */
#define CACHE_SLOTS 1024
#define HUGE_PAGE ((size_t)2 << 20)

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *ptr;
    size_t size;
} cache[CACHE_SLOTS];
static int cache_count;
static size_t cache_bytes;

static void *cache_take(size_t nbytes) {
    void *p = NULL;
    pthread_mutex_lock(&cache_lock);
    for (int i = cache_count - 1; i >= 0; i--) /* newest first: likeliest warm */
        if (cache[i].size >= nbytes && cache[i].size - nbytes <= nbytes / 8) {
            p = cache[i].ptr;
            cache_bytes -= cache[i].size;
            cache[i] = cache[--cache_count];
            break;
        }
    pthread_mutex_unlock(&cache_lock);
    return p;
}

/* Whether large blocks get MADV_HUGEPAGE. Huge pages spare a fault per 4 KiB
 * of a fresh output, but where the kernel compacts memory synchronously for
 * such regions (transparent_hugepage/defrag "madvise", "defer+madvise",
 * "always": the default) a fault on fragmented memory can stall: measured
 * 2.1 s of system time in one 0.3 s convolution over 1000 images. So: only
 * where defrag is "defer" or "never" (no stall), or WICK_HUGEPAGES=1;
 * WICK_HUGEPAGES=0 never. (With enabled=always the kernel still backs
 * aligned blocks with huge pages where it has them free.) */
static int advise_huge;
static void huge_pages_once(void) {
    const char *env = getenv("WICK_HUGEPAGES");
    if (env && *env) {
        advise_huge = strcmp(env, "0") != 0;
        return;
    }
    char mode[128] = {0};
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/defrag", "r");
    if (!f) return;
    size_t n = fread(mode, 1, sizeof mode - 1, f);
    fclose(f);
    mode[n] = 0;
    advise_huge = strstr(mode, "[defer]") != NULL || strstr(mode, "[never]") != NULL;
}
static pthread_once_t huge_pages_init = PTHREAD_ONCE_INIT;

void *cpu_alloc(size_t nbytes, int device_index) {
    (void)device_index;
    /* a host's allocator (wick_set_allocator) gets every block, uncached */
    if (wk_host_allocator()) return wk_malloc(nbytes);
    void *p = NULL;
    if (nbytes >= CACHE_MIN_BLOCK && (p = cache_take(nbytes))) return p;
    bool large = nbytes >= 2 * HUGE_PAGE;
    /* through alloc.c, which counts it (wick_set_allocator); NULL is reported
     * as out of memory by the caller */
    if (!(p = wk_malloc_aligned(nbytes, large ? HUGE_PAGE : 64))) return NULL;
#ifdef MADV_HUGEPAGE
    if (large) {
        pthread_once(&huge_pages_init, huge_pages_once);
        if (advise_huge) madvise(p, nbytes / HUGE_PAGE * HUGE_PAGE, MADV_HUGEPAGE);
    }
#endif
    return p;
}

void cpu_free(void *p, size_t nbytes, int device_index) {
    (void)device_index;
    if (wk_host_allocator()) {
        wk_free(p, nbytes);
        return;
    }
    if (nbytes >= CACHE_MIN_BLOCK && nbytes <= CACHE_MAX_BYTES / 2) {
        void *evicted[CACHE_SLOTS];
        int n_evicted = 0;
        pthread_mutex_lock(&cache_lock);
        /* the oldest blocks make room */
        while (cache_count > 0 && (cache_count == CACHE_SLOTS || cache_bytes + nbytes > CACHE_MAX_BYTES)) {
            evicted[n_evicted++] = cache[0].ptr;
            cache_bytes -= cache[0].size;
            memmove(cache, cache + 1, sizeof *cache * (size_t)--cache_count);
        }
        cache[cache_count].ptr = p;
        cache[cache_count++].size = nbytes;
        cache_bytes += nbytes;
        pthread_mutex_unlock(&cache_lock);
        for (int i = 0; i < n_evicted; i++) wk_free(evicted[i], 0);
        return;
    }
    wk_free(p, nbytes);
}

static void cpu_cache_size(int64_t *bytes, int64_t *blocks) {
    pthread_mutex_lock(&cache_lock);
    *bytes = (int64_t)cache_bytes;
    *blocks = cache_count;
    pthread_mutex_unlock(&cache_lock);
}

static void cpu_empty_cache(void) {
    pthread_mutex_lock(&cache_lock);
    while (cache_count > 0) wk_free(cache[--cache_count].ptr, 0);
    cache_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
}

/* ---- the matrix library's threads ----
 * Always one, whatever the core's budget (wick_set_num_threads): cpu_gemm.c
 * splits a large product into blocks, one single-threaded BLAS call per thread
 * of wick's pool, so one pool owns the cores (BLIS 0.9's own threads, made per
 * call and spinning at barriers, made the MLP epoch slower on 2 threads than on
 * 1; OpenBLAS's spin too). Called before the first product (the core decides its
 * thread count then), so BLIS_NUM_THREADS / OPENBLAS_NUM_THREADS do not apply. */
#ifdef WICK_BLAS_BLIS
/* BLIS 0.9 picks its kernels by CPUID at its first call. On an Intel CPU whose
 * model it does not know (the Sapphire Rapids class Xeon of this project's VM)
 * it cannot tell whether the cores have two AVX-512 FMA units, says "Number of
 * FMA units unknown; using 'haswell' (not 'skx') config", and runs AVX2
 * kernels at about half the speed of its 'skx' ones there (docs/architecture.md,
 * "Matrix library"). So before its first call, unless the user set
 * BLIS_ARCH_TYPE, wick times the FMAs itself and, where 512-bit ones do twice
 * the work, sets BLIS_ARCH_TYPE to the number of 'skx' (not on Zen 4, whose
 * 512-bit FMAs take two passes: BLIS's own choice stays there; an AMD core
 * before Zen 5 is known from CPUID, cpu_gemm_avx512.c). Once per
 * process, before any product; a host that reads the environment on another
 * thread at that moment should set BLIS_ARCH_TYPE itself. */
const char *bli_arch_string(int id); /* BLIS's table of its configurations' names */
static void choose_blis_kernels(void) {
    const char *set = getenv("BLIS_ARCH_TYPE"); /* BLIS reads it as a number: its arch_t */
    if ((set && *set) || !cpu_avx512_fma_doubles()) return;
    for (int id = 0; id < 8; id++) /* the Intel configurations come first in every BLIS */
        if (!strcmp(bli_arch_string(id), "skx")) {
            char number[16];
            snprintf(number, sizeof number, "%d", id);
            setenv("BLIS_ARCH_TYPE", number, 0);
            return;
        }
}

void bli_thread_set_num_threads(long n);
static void cpu_set_num_threads(int n) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    (void)n;
    pthread_once(&once, choose_blis_kernels);
    bli_thread_set_num_threads(1);
}
#else
void openblas_set_num_threads(int n);
static void cpu_set_num_threads(int n) {
    (void)n;
    openblas_set_num_threads(1);
}
#endif

/* ---- copy ---- */

typedef struct {
    wick_dtype to, from;
} copy_types;

/* Typed conversion loops for the common pairs; other pairs go through
 * wk_load/wk_store one element at a time. */
#define CONVERT(TO, FROM)                                                                        \
    for (int64_t i = 0; i < n; i++) ((TO *)p[0])[i * s[0]] = (TO)((const FROM *)p[1])[i * s[1]]; \
    return true;
#define FROM_CASES(TO)                                                                           \
    switch (from) {                                                                              \
    case WICK_FLOAT32: CONVERT(TO, float)                                                        \
    case WICK_FLOAT64: CONVERT(TO, double)                                                       \
    case WICK_INT32: CONVERT(TO, int32_t)                                                        \
    case WICK_UINT8: /* bool is stored as 0 or 1 in a byte, like uint8 */                         \
    case WICK_BOOL: CONVERT(TO, uint8_t)                                                         \
    case WICK_INT64: CONVERT(TO, int64_t)                                                        \
    default: return false;                                                                       \
    }
/* float32 <-> float16/bfloat16: contiguous runs by cpu_convert.c (vector
 * instructions), strided ones by dtype.c's conversions an element. */
#define CONVERT_16(TO, FROM, F)                                                                  \
    do {                                                                                         \
        for (int64_t i = 0; i < n; i++) ((TO *)p[0])[i * s[0]] = F(((const FROM *)p[1])[i * s[1]]); \
        return true;                                                                             \
    } while (0)
static bool convert_typed(wick_dtype to, wick_dtype from, char **p, const int64_t *s, int64_t n) {
    const bool contiguous = s[0] == 1 && s[1] == 1;
    if (contiguous && to == WICK_FLOAT32 && (from == WICK_FLOAT16 || from == WICK_BFLOAT16)) {
        cpu_widen_16((float *)p[0], (const uint16_t *)p[1], from, n);
        return true;
    }
    if (contiguous && from == WICK_FLOAT32 && (to == WICK_FLOAT16 || to == WICK_BFLOAT16)) {
        cpu_round_16((uint16_t *)p[0], (const float *)p[1], to, n);
        return true;
    }
    if (to == WICK_BFLOAT16 && from == WICK_FLOAT32) CONVERT_16(uint16_t, float, wk_float_to_bf16);
    if (to == WICK_FLOAT32 && from == WICK_BFLOAT16) CONVERT_16(float, uint16_t, wk_bf16_to_float);
    if (to == WICK_FLOAT16 && from == WICK_FLOAT32) CONVERT_16(uint16_t, float, wk_float_to_half);
    if (to == WICK_FLOAT32 && from == WICK_FLOAT16) CONVERT_16(float, uint16_t, wk_half_to_float);
    switch (to) {
    case WICK_FLOAT32: FROM_CASES(float)
    case WICK_FLOAT64: FROM_CASES(double)
    default: break;
    }
    if (to == WICK_INT64 && (from == WICK_UINT8 || from == WICK_BOOL)) { CONVERT(int64_t, uint8_t) }
    if (to == WICK_INT64 && from == WICK_INT32) { CONVERT(int64_t, int32_t) }
    return false;
}

static void copy_run(char **p, const int64_t *s, int64_t n, const void *extra) {
    const copy_types *ct = extra;
    size_t eo = wk_dtype_size(ct->to), ei = wk_dtype_size(ct->from);
    if (ct->to == ct->from) {
        if (s[0] == 1 && s[1] == 1) {
            memcpy(p[0], p[1], (size_t)n * eo);
            return;
        }
        switch (eo) {
        case 1: for (int64_t i = 0; i < n; i++) ((uint8_t *)p[0])[i * s[0]] = ((uint8_t *)p[1])[i * s[1]]; return;
        case 2: for (int64_t i = 0; i < n; i++) ((uint16_t *)p[0])[i * s[0]] = ((uint16_t *)p[1])[i * s[1]]; return;
        case 4: for (int64_t i = 0; i < n; i++) ((uint32_t *)p[0])[i * s[0]] = ((uint32_t *)p[1])[i * s[1]]; return;
        default: for (int64_t i = 0; i < n; i++) ((uint64_t *)p[0])[i * s[0]] = ((uint64_t *)p[1])[i * s[1]]; return;
        }
    }
    if (convert_typed(ct->to, ct->from, p, s, n)) return;
    /* between integer types, go through int64 so no value above 2^53 is rounded */
    bool ints = !wick_dtype_is_floating(ct->to) && !wick_dtype_is_floating(ct->from);
    for (int64_t i = 0; i < n; i++) {
        char *o = p[0] + i * s[0] * (int64_t)eo;
        const char *in = p[1] + i * s[1] * (int64_t)ei;
        if (ints) wk_store_int64(o, ct->to, wk_load_int64(in, ct->from));
        else wk_store_double(o, ct->to, wk_load_double(in, ct->from));
    }
}

static wick_status cpu_copy(const wk_iter *it) {
    copy_types ct = {it->dtypes[0], it->dtypes[1]};
    return cpu_run(it, copy_run, &ct);
}

/* ---- fill ---- */

typedef struct {
    size_t size;
    uint64_t bits;
} fill_value;

static void fill_run(char **p, const int64_t *s, int64_t n, const void *extra) {
    const fill_value *v = extra;
    switch (v->size) {
    case 1: for (int64_t i = 0; i < n; i++) ((uint8_t *)p[0])[i * s[0]] = (uint8_t)v->bits; break;
    case 2: for (int64_t i = 0; i < n; i++) ((uint16_t *)p[0])[i * s[0]] = (uint16_t)v->bits; break;
    case 4: for (int64_t i = 0; i < n; i++) ((uint32_t *)p[0])[i * s[0]] = (uint32_t)v->bits; break;
    default: for (int64_t i = 0; i < n; i++) ((uint64_t *)p[0])[i * s[0]] = v->bits; break;
    }
}

static wick_status cpu_fill(const wk_iter *it, double value) {
    fill_value v = {wk_dtype_size(it->dtypes[0]), 0};
    char bytes[16] = {0}; /* room for a complex128 (whose fills complex.c makes) */
    wk_store_double(bytes, it->dtypes[0], value);
    switch (v.size) { /* reinterpret the stored bytes as an integer of the same width */
    case 1: v.bits = *(uint8_t *)bytes; break;
    case 2: v.bits = *(uint16_t *)bytes; break;
    case 4: v.bits = *(uint32_t *)bytes; break;
    default: v.bits = *(uint64_t *)bytes; break;
    }
    return cpu_run(it, fill_run, &v);
}

/* ---- random ---- */

typedef struct {
    wick_tensor *out;
    int normal;
    uint64_t seed, offset;
} random_job;

/* Normal float32 draws i = begin..end-1: the Box-Muller of the double path
 * below, sqrt(-2 log(1 - u1)) cos(2 pi u2) over draws 2i and 2i + 1, with log
 * and cos on 16 lanes (within a few float ulp of the double formula, which
 * the CUDA kernel keeps):
 *   -log(1 - u1) = 2 atanh(s), s = u1 / (2 - u1) < 1/3 for u1 < 1/2 (its
 *     series to s^17, relative error below 1e-9: exact for tiny u1), else
 *     the log of 1 - u1, formed in double (exact for u1 near 1);
 *   cos(2 pi u2) = -+cos(2 pi b), b = min(a, 1/2 - a) in [0, 1/4] for
 *     a = |u2 - 1/2|: Taylor to t^12 on t = 2 pi b in [0, pi/2] (error < 1e-8). */
WK_VSIMD static void normal_f32(float *f, int64_t begin, int64_t end, uint64_t seed, uint64_t offset) {
    for (int64_t i = begin; i < end; i += WK_VL) {
        int64_t n = end - i < WK_VL ? end - i : WK_VL;
        float sb[WK_VL], wb[WK_VL], ub[WK_VL], out[WK_VL];
        for (int k = 0; k < WK_VL; k++) {
            uint64_t at = (uint64_t)(i + (k < n ? k : 0));
            double u1 = wk_uniform(seed, offset + 2 * at), u2 = wk_uniform(seed, offset + 2 * at + 1);
            sb[k] = (float)u1;
            wb[k] = (float)(1.0 - u1);
            ub[k] = (float)u2;
        }
        wk_vf s = wk_vload(sb), w = wk_vload(wb), u = wk_vload(ub);
        s = s / (2.0f - s);
        wk_vf z = s * s;
        wk_vf p = z * (1.0f / 17) + (1.0f / 15);
        p = p * z + (1.0f / 13);
        p = p * z + (1.0f / 11);
        p = p * z + (1.0f / 9);
        p = p * z + (1.0f / 7);
        p = p * z + (1.0f / 5);
        p = p * z + (1.0f / 3);
        p = p * z + 1.0f;
        wk_vf nl = wk_vsel(w > 0.5f, 2.0f * s * p, -wk_vlog_sum(w)); /* -log(1 - u1) >= 0 */
        wk_vf a = wk_vabs(u - 0.5f);
        wk_vi far = a > 0.25f;
        wk_vf t = wk_vsel(far, 0.5f - a, a) * 6.28318530717958648f, t2 = t * t;
        wk_vf c = t2 * (1.0f / 479001600.0f) - (1.0f / 3628800.0f);
        c = c * t2 + (1.0f / 40320.0f);
        c = c * t2 - (1.0f / 720.0f);
        c = c * t2 + (1.0f / 24.0f);
        c = c * t2 - 0.5f;
        c = c * t2 + 1.0f;
        c = wk_vsel(far, c, -c); /* cos(2 pi u2) = -cos(2 pi a) */
        wk_vf r2 = 2.0f * nl;
        wk_vstore(out, c);
        float rb[WK_VL];
        wk_vstore(rb, r2);
        for (int k = 0; k < n; k++) f[i + k] = sqrtf(rb[k]) * out[k];
    }
}

static void random_range(void *ctx, int64_t begin, int64_t end) {
    const random_job *j = ctx;
    char *data = wk_data(j->out);
    wick_dtype d = j->out->dtype;
    size_t es = wk_dtype_size(d);
    if (!j->normal && d == WICK_FLOAT32) { /* rand, dropout's draws: the common case without a store per dtype */
        float *f = (float *)data;
        for (int64_t i = begin; i < end; i++) {
            double v = wk_uniform(j->seed, j->offset + (uint64_t)i);
            f[i] = v > 0.99999994039535522 ? 0.99999994f : (float)v; /* the cap below */
        }
        return;
    }
    if (j->normal && d == WICK_FLOAT32) { /* randn, normal_, init's draws: vectorised */
        normal_f32((float *)data, begin, end, j->seed, j->offset);
        return;
    }
    for (int64_t i = begin; i < end; i++) {
        double v;
        if (!j->normal) {
            v = wk_uniform(j->seed, j->offset + (uint64_t)i);
            /* rounding to a narrow float must not reach 1.0: cap at the dtype's
             * largest value below 1 (1 - 2^-24, 1 - 2^-11, 1 - 2^-8) */
            double below = d == WICK_FLOAT16 ? 0.99951171875 : d == WICK_BFLOAT16 ? 0.99609375 : 0.99999994039535522;
            if (d != WICK_FLOAT64 && v > below) v = below;
        } else { /* Box-Muller over the draws 2i and 2i+1 */
            double u1 = wk_uniform(j->seed, j->offset + 2 * (uint64_t)i);
            double u2 = wk_uniform(j->seed, j->offset + 2 * (uint64_t)i + 1);
            v = sqrt(-2.0 * log(1.0 - u1)) * cos(6.283185307179586 * u2);
        }
        wk_store_double(data + i * (int64_t)es, d, v);
    }
}

static wick_status cpu_random(wick_tensor *out, int normal, uint64_t seed, uint64_t offset) {
    random_job j = {out, normal, seed, offset};
    return wk_parallel_for(wick_tensor_numel(out), 16384, random_range, &j);
}

const wick_backend wk_cpu_backend = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .empty_cache = cpu_empty_cache,
    .cache_size = cpu_cache_size,
    .set_num_threads = cpu_set_num_threads,
    .copy = cpu_copy,
    .fill = cpu_fill,
    .unary = cpu_unary,
    .binary = cpu_binary,
    .binary_loop = cpu_binary_run,
    .clamp = cpu_clamp,
    .where = cpu_where,
    .masked_fill = cpu_masked_fill,
    .reduce = cpu_reduce,
    .gemm = cpu_gemm,
    .softmax = cpu_softmax,
    .softmax_backward = cpu_softmax_backward,
    .act_backward = cpu_act_backward,
    .fft = cpu_fft,
    .rfft = cpu_rfft,
    .irfft = cpu_irfft,
    .layer_norm = cpu_layer_norm,
    .layer_norm_backward = cpu_layer_norm_backward,
    .batch_norm = cpu_batch_norm,
    .batch_norm_backward = cpu_batch_norm_backward,
    .cross_entropy = cpu_cross_entropy,
    .cross_entropy_backward = cpu_cross_entropy_backward,
    .random = cpu_random,
    .index_select = cpu_index_select,
    .gather = cpu_gather,
    .scatter = cpu_scatter,
    .scatter_add = cpu_scatter_add,
    .index_add = cpu_index_add,
    .conv2d_forward = cpu_conv2d_forward,
    .conv2d_backward = cpu_conv2d_backward,
    .max_pool2d = cpu_max_pool2d,
    .max_pool2d_backward = cpu_max_pool2d_backward,
    .avg_pool2d = cpu_avg_pool2d,
    .avg_pool2d_backward = cpu_avg_pool2d_backward,
    .upsample2d = cpu_upsample2d,
    .upsample2d_backward = cpu_upsample2d_backward,
    .grid_sample2d = cpu_grid_sample2d,
    .grid_sample2d_backward = cpu_grid_sample2d_backward,
    .attention_forward = cpu_attention_forward,
    .attention_backward = cpu_attention_backward,
    .rnn_step = cpu_rnn_step,
    .rnn_step_backward = cpu_rnn_step_backward,
    .sort = cpu_sort,
    .scan = cpu_scan,
    .adam_step = cpu_adam_step,
    .amp_unscale = cpu_amp_unscale,
    .sgd_step = cpu_sgd_step,
    .adadelta_step = cpu_adadelta_step,
    .decompose = cpu_decompose,
};
