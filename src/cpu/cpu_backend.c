/* The CPU backend: memory, copies with dtype conversion, fill, random numbers,
 * and the table of function pointers that the dispatcher calls. */
#include "cpu.h"

#include <math.h>
#include <stdlib.h>

static void *cpu_alloc(size_t nbytes, int device_index) {
    (void)device_index;
    void *p = NULL;
    /* 64-byte alignment for vector loads; a failure is reported as out of memory */
    return posix_memalign(&p, 64, nbytes) == 0 ? p : NULL;
}

static void cpu_free(void *p, int device_index) {
    (void)device_index;
    free(p);
}

/* ---- copy ---- */

typedef struct {
    wick_dtype to, from;
} copy_types;

static void copy_run(char **p, const int64_t *s, int64_t n, const void *extra) {
    const copy_types *ct = extra;
    size_t eo = wick_dtype_size(ct->to), ei = wick_dtype_size(ct->from);
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
    if (ct->to == WICK_FLOAT32 && ct->from == WICK_FLOAT64) {
        for (int64_t i = 0; i < n; i++) ((float *)p[0])[i * s[0]] = (float)((double *)p[1])[i * s[1]];
        return;
    }
    if (ct->to == WICK_FLOAT64 && ct->from == WICK_FLOAT32) {
        for (int64_t i = 0; i < n; i++) ((double *)p[0])[i * s[0]] = ((float *)p[1])[i * s[1]];
        return;
    }
    /* between integer types, go through int64 so no value above 2^53 is rounded */
    bool ints = !wick_dtype_is_floating(ct->to) && !wick_dtype_is_floating(ct->from);
    for (int64_t i = 0; i < n; i++) {
        char *o = p[0] + i * s[0] * (int64_t)eo;
        const char *in = p[1] + i * s[1] * (int64_t)ei;
        if (ints) wk_store_int64(o, ct->to, wk_load_int64(in, ct->from));
        else wk_store_double(o, ct->to, wk_load_double(in, ct->from));
    }
}

static void cpu_copy(const wk_iter *it) {
    copy_types ct = {it->dtypes[0], it->dtypes[1]};
    cpu_run(it, copy_run, &ct);
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

static void cpu_fill(const wk_iter *it, double value) {
    fill_value v = {wick_dtype_size(it->dtypes[0]), 0};
    char bytes[8] = {0};
    wk_store_double(bytes, it->dtypes[0], value);
    switch (v.size) { /* reinterpret the stored bytes as an integer of the same width */
    case 1: v.bits = *(uint8_t *)bytes; break;
    case 2: v.bits = *(uint16_t *)bytes; break;
    case 4: v.bits = *(uint32_t *)bytes; break;
    default: v.bits = *(uint64_t *)bytes; break;
    }
    cpu_run(it, fill_run, &v);
}

/* ---- random ---- */

typedef struct {
    wick_tensor *out;
    int normal;
    uint64_t seed, offset;
} random_job;

static void random_range(void *ctx, int64_t begin, int64_t end) {
    const random_job *j = ctx;
    char *data = wk_data(j->out);
    wick_dtype d = j->out->dtype;
    size_t es = wick_dtype_size(d);
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

static void cpu_random(wick_tensor *out, int normal, uint64_t seed, uint64_t offset) {
    random_job j = {out, normal, seed, offset};
    wk_parallel_for(wick_tensor_numel(out), 16384, random_range, &j);
}

const wick_backend wk_cpu_backend = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .fill = cpu_fill,
    .unary = cpu_unary,
    .binary = cpu_binary,
    .clamp = cpu_clamp,
    .where = cpu_where,
    .reduce = cpu_reduce,
    .gemm = cpu_gemm,
    .softmax = cpu_softmax,
    .random = cpu_random,
    .index_select = cpu_index_select,
    .gather = cpu_gather,
    .scatter = cpu_scatter,
};
