/* The GPU elementwise kernels' host logic, tested on the CPU (no GPU needed):
 * - the plan src/cuda/cuda_ew_plan.h picks for many shapes (contiguous, row and
 *   column broadcasts, transposed, sliced, 0-d, empty, more than 2^31 elements
 *   or offsets -> 64-bit), and
 * - each plan's index math, the very functions the CUDA kernels inline, run
 *   here for every element (or a sample at the edges of huge shapes) against
 *   the general 64-bit walk and against a reference computed from the tensors'
 *   own shapes and strides (so wk_iter_init's coalescing is checked too);
 * - the contiguous plan's 16-byte vector width;
 * - host values: a CPU scalar beside an op elsewhere travels in the iterator
 *   (wk_iter_init), and the CPU kernels read that field correctly. */
#include "../src/cuda/cuda_ew_plan.h"
#include "check.h"

#include <stdlib.h>

static wick_device META;

static wick_tensor *make(wick_device dev, int ndim, const int64_t *sizes) {
    wick_tensor *t = NULL;
    if (wick_empty(&t, ndim, sizes, (wick_options){WICK_FLOAT32, dev, 0})) {
        fprintf(stderr, "make: %s\n", wick_last_error());
        exit(1);
    }
    return t;
}

/* Operand k's offset of output element i, from the tensors themselves. */
static int64_t reference_offset(const wick_tensor *out, const wick_tensor *t, int64_t i) {
    int n = out->ndim;
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        int64_t idx = i % out->sizes[d];
        i /= out->sizes[d];
        int j = d - (n - t->ndim);
        if (j >= 0 && t->sizes[j] != 1) off += idx * t->strides[j];
    }
    return off;
}

/* The offsets the plan's kernel computes for element i. */
static void plan_offsets(const wk_iter *it, wk_ew_plan p, int64_t i, int64_t *off) {
    switch (p.kind) {
    case WK_EW_CONTIGUOUS: wk_ew_offsets_contiguous(it, it->nops, i, off); break;
    case WK_EW_LINEAR: wk_ew_offsets_linear(it, it->nops, i, off); break;
    case WK_EW_TWO_D: wk_ew_offsets_two_d(it, it->nops, (uint32_t)i, off); break;
    default:
        if (p.index32) wk_ew_offsets_general32(it, it->nops, (uint32_t)i, off);
        else wk_ew_offsets_general64(it, it->nops, i, off);
    }
}

static int check_element(const wk_iter *it, wk_ew_plan p, const wick_tensor *const *ops, int64_t i) {
    int64_t got[WK_MAX_OPERANDS], general[WK_MAX_OPERANDS];
    plan_offsets(it, p, i, got);
    wk_ew_offsets_general64(it, it->nops, i, general);
    for (int k = 0; k < it->nops; k++) {
        int64_t want = (it->host_values >> k & 1) ? 0 : reference_offset(ops[0], ops[k], i);
        if (got[k] != want || general[k] != want) {
            fprintf(stderr, "  element %lld operand %d: plan %lld, general %lld, reference %lld\n", (long long)i, k,
                    (long long)got[k], (long long)general[k], (long long)want);
            return 0;
        }
    }
    return 1;
}

/* Builds the iterator over ops, checks the plan's kind and width, then the
 * offsets of every element (at most 2^20; else a sample at the edges). */
static void check_case(const char *name, int nops, wick_tensor *const *ops, int kind, int index32) {
    wk_iter it;
    wk_iter_init(&it, nops, (const wick_tensor *const *)ops);
    wk_ew_plan p = wk_ew_plan_for(&it);
    checks++;
    if (p.kind != kind || p.index32 != index32) {
        failures++;
        fprintf(stderr, "%s: plan kind %d index32 %d, expected kind %d index32 %d\n", name, p.kind, p.index32, kind,
                index32);
    }
    int ok = 1;
    if (it.numel <= (1 << 20)) {
        for (int64_t i = 0; i < it.numel && ok; i++) ok = check_element(&it, p, (const wick_tensor *const *)ops, i);
    } else {
        int64_t edges[] = {0, 1, it.sizes[it.ndim - 1] - 1, it.sizes[it.ndim - 1], it.numel / 2, it.numel - 2,
                           it.numel - 1};
        for (size_t e = 0; e < sizeof edges / sizeof *edges && ok; e++)
            for (int64_t i = edges[e]; i < edges[e] + 3 && i < it.numel && ok; i++)
                ok = check_element(&it, p, (const wick_tensor *const *)ops, i);
        for (int r = 0; r < 1000 && ok; r++) { /* a fixed pseudo-random sample */
            uint64_t x = (uint64_t)r * 0x9E3779B97F4A7C15ull;
            ok = check_element(&it, p, (const wick_tensor *const *)ops, (int64_t)(x % (uint64_t)it.numel));
        }
    }
    checks++;
    if (!ok) {
        failures++;
        fprintf(stderr, "%s: offsets differ (above)\n", name);
    }
}

static void release_all(int n, wick_tensor **ts) {
    for (int i = 0; i < n; i++) wick_tensor_release(ts[i]);
}

static void test_shapes(wick_device dev) {
    int64_t v[] = {1000}, bc[] = {37, 29}, c[] = {29}, b1[] = {37, 1}, cb[] = {29, 37};
    wick_tensor *ops[3];

    ops[0] = make(dev, 1, v), ops[1] = make(dev, 1, v), ops[2] = make(dev, 1, v);
    check_case("contiguous", 3, ops, WK_EW_CONTIGUOUS, 1);
    release_all(3, ops);

    ops[0] = make(dev, 2, bc), ops[1] = make(dev, 2, bc), ops[2] = make(dev, 1, c);
    check_case("row broadcast [B,C] + [C]", 3, ops, WK_EW_TWO_D, 1);
    release_all(3, ops);

    ops[0] = make(dev, 2, bc), ops[1] = make(dev, 2, bc), ops[2] = make(dev, 2, b1);
    check_case("column broadcast [B,C] + [B,1]", 3, ops, WK_EW_TWO_D, 1);
    release_all(3, ops);

    ops[0] = make(dev, 2, bc), ops[1] = make(dev, 2, b1), ops[2] = make(dev, 1, c);
    check_case("outer [B,1] + [C]", 3, ops, WK_EW_TWO_D, 1);
    release_all(3, ops);

    wick_tensor *base = make(dev, 2, cb), *tr;
    CHECK(wick_transpose(&tr, base, 0, 1) == WICK_OK);
    ops[0] = make(dev, 2, bc), ops[1] = tr, ops[2] = make(dev, 2, bc);
    check_case("transposed", 3, ops, WK_EW_TWO_D, 1);
    release_all(3, ops);
    wick_tensor_release(base);

    int64_t b3[] = {5, 7, 29}, b4[] = {3, 4, 5, 6};
    ops[0] = make(dev, 3, b3), ops[1] = make(dev, 3, b3), ops[2] = make(dev, 1, c);
    check_case("[B,T,C] + [C] coalesces to two dims", 3, ops, WK_EW_TWO_D, 1);
    release_all(3, ops);

    int perm[] = {2, 0, 3, 1};
    wick_tensor *p4 = make(dev, 4, b4), *pp;
    CHECK(wick_permute(&pp, p4, 4, perm) == WICK_OK);
    int64_t permuted[] = {5, 3, 6, 4};
    ops[0] = make(dev, 4, permuted), ops[1] = pp, ops[2] = make(dev, 1, (int64_t[]){4});
    check_case("permuted 4-d", 3, ops, WK_EW_GENERAL, 1);
    release_all(3, ops);
    wick_tensor_release(p4);

    int64_t n3[] = {100, 3}, col[] = {100};
    wick_tensor *m = make(dev, 2, n3), *slice, *sq;
    CHECK(wick_narrow(&slice, m, 1, 1, 1) == WICK_OK);
    CHECK(wick_reshape(&sq, slice, 1, col) == WICK_OK);
    ops[0] = make(dev, 1, col), ops[1] = sq;
    check_case("strided column slice", 2, ops, WK_EW_LINEAR, 1);
    release_all(2, ops);
    wick_tensor_release(slice);
    wick_tensor_release(m);

    wick_tensor *one = make(dev, 1, (int64_t[]){1}), *ex;
    CHECK(wick_expand(&ex, one, 1, v) == WICK_OK);
    ops[0] = make(dev, 1, v), ops[1] = ex;
    check_case("expanded one element", 2, ops, WK_EW_CONTIGUOUS, 1);
    release_all(2, ops);
    wick_tensor_release(one);

    ops[0] = make(dev, 0, NULL), ops[1] = make(dev, 0, NULL), ops[2] = make(dev, 0, NULL);
    check_case("0-d", 3, ops, WK_EW_CONTIGUOUS, 1);
    release_all(3, ops);

    int64_t empty[] = {0, 5};
    ops[0] = make(dev, 2, empty), ops[1] = make(dev, 2, empty), ops[2] = make(dev, 1, (int64_t[]){5});
    check_case("empty", 3, ops, WK_EW_CONTIGUOUS, 1);
    release_all(3, ops);
}

/* Shapes too big for memory: meta tensors (same iterator, no data). */
static void test_huge(void) {
    wick_tensor *ops[3];
    int64_t big2[] = {65536, 32768}, row[] = {32768}; /* 2^31 elements */
    ops[0] = make(META, 2, big2), ops[1] = make(META, 2, big2), ops[2] = make(META, 1, row);
    check_case("2^31 elements, row broadcast -> general 64-bit", 3, ops, WK_EW_GENERAL, 0);
    release_all(3, ops);

    int64_t just[] = {65536, 32767}, row2[] = {32767}; /* just below 2^31 */
    ops[0] = make(META, 2, just), ops[1] = make(META, 2, just), ops[2] = make(META, 1, row2);
    check_case("just below 2^31 elements -> 32-bit two dims", 3, ops, WK_EW_TWO_D, 1);
    release_all(3, ops);

    int64_t flat[] = {(int64_t)3 << 31};
    ops[0] = make(META, 1, flat), ops[1] = make(META, 1, flat);
    check_case("3 * 2^31 contiguous", 2, ops, WK_EW_CONTIGUOUS, 0);
    release_all(2, ops);

    /* few elements, offsets beyond 31 bits: a narrow of a huge tensor */
    int64_t wide[] = {4, (int64_t)1 << 30}, small[] = {4, 8};
    wick_tensor *w = make(META, 2, wide), *nw;
    CHECK(wick_narrow(&nw, w, 1, 0, 8) == WICK_OK);
    ops[0] = make(META, 2, small), ops[1] = nw;
    check_case("small view of a huge tensor -> 64-bit", 2, ops, WK_EW_GENERAL, 0);
    release_all(2, ops);
    wick_tensor_release(w);

    int64_t three[] = {1 << 11, 1 << 10, 1 << 11}; /* 2^32 elements, 3-d */
    int perm[] = {2, 1, 0};
    wick_tensor *t3 = make(META, 3, three), *p3;
    CHECK(wick_permute(&p3, t3, 3, perm) == WICK_OK);
    ops[0] = make(META, 3, three), ops[1] = p3;
    check_case("2^32 elements permuted", 2, ops, WK_EW_GENERAL, 0);
    release_all(2, ops);
    wick_tensor_release(t3);
}

/* A CPU scalar beside an op on another device (meta here) goes by value. */
static void test_host_value_iter(void) {
    int64_t bc[] = {3, 4};
    wick_tensor *out = make(META, 2, bc), *a = make(META, 2, bc), *s = NULL;
    CHECK(wick_full(&s, 0, NULL, 2.5, (wick_options){WICK_FLOAT64, wick_cpu(), 0}) == WICK_OK);
    wick_tensor *ops[3] = {out, a, s};
    wk_iter it;
    wk_iter_init(&it, 3, (const wick_tensor *const *)ops);
    CHECK(it.host_values == 4u);
    CHECK(it.data[2] == NULL);
    double v;
    memcpy(&v, &it.values[2], sizeof v);
    CHECK(v == 2.5);
    CHECK(it.strides[2][0] == 0);
    CHECK(wk_iter_operand(&it, 2) == (char *)&it.values[2]);
    check_case("meta + CPU scalar value", 3, ops, WK_EW_CONTIGUOUS, 1);
    /* on the CPU the scalar keeps its pointer */
    wick_tensor *c_out = make(wick_cpu(), 2, bc), *c_a = make(wick_cpu(), 2, bc);
    wick_tensor *cops[3] = {c_out, c_a, s};
    wk_iter_init(&it, 3, (const wick_tensor *const *)cops);
    CHECK(it.host_values == 0 && it.data[2] == wick_tensor_data(s));
    release_all(3, ops);
    wick_tensor_release(c_out);
    wick_tensor_release(c_a);
}

/* The CPU kernels read a host value where the iterator holds it. */
static void test_cpu_reads_values(void) {
    int64_t n[] = {6};
    wick_tensor *out = NULL, *a = NULL, *s = NULL, *cond = NULL;
    CHECK(wick_arange(&a, 0, 6, 1, (wick_options){WICK_FLOAT32, wick_cpu(), 0}) == WICK_OK);
    out = make(wick_cpu(), 1, n);
    CHECK(wick_full(&s, 0, NULL, 0, (wick_options){WICK_FLOAT32, wick_cpu(), 0}) == WICK_OK);
    const wick_tensor *ops[3] = {out, a, s};
    wk_iter it;
    wk_iter_init(&it, 3, ops);
    float three = 3.0f;
    it.data[2] = NULL, it.host_values = 4u, it.values[2] = 0;
    memcpy(&it.values[2], &three, sizeof three);
    CHECK(wk_cpu_backend.binary(WICK_SUB, &it, 2.0) == WICK_OK); /* a - 2 * 3 */
    const float *o = wick_tensor_data(out);
    for (int i = 0; i < 6; i++) CHECK(o[i] == (float)i - 6.0f);
    /* the value first: 3 - a */
    const wick_tensor *ops2[3] = {out, s, a};
    wk_iter_init(&it, 3, ops2);
    it.data[1] = NULL, it.host_values = 2u, it.values[1] = 0;
    memcpy(&it.values[1], &three, sizeof three);
    CHECK(wk_cpu_backend.binary(WICK_SUB, &it, 1.0) == WICK_OK);
    for (int i = 0; i < 6; i++) CHECK(o[i] == 3.0f - (float)i);
    /* where with the condition a host value (true), then false */
    CHECK(wick_full(&cond, 0, NULL, 0, (wick_options){WICK_BOOL, wick_cpu(), 0}) == WICK_OK);
    const wick_tensor *ops3[4] = {out, cond, a, s};
    for (int truth = 0; truth < 2; truth++) {
        wk_iter_init(&it, 4, ops3);
        it.data[1] = NULL, it.host_values = 2u, it.values[1] = (uint64_t)truth;
        CHECK(wk_cpu_backend.where(&it) == WICK_OK); /* s holds 0 */
        for (int i = 0; i < 6; i++) CHECK(o[i] == (truth ? (float)i : 0.0f));
    }
    wick_tensor_release(out);
    wick_tensor_release(a);
    wick_tensor_release(s);
    wick_tensor_release(cond);
}

/* The contiguous plan's 16-byte vectors: only over aligned, stride-1 operands
 * of one element size (host values splatted). */
static int width_of(int nops, wick_tensor *const *ops) {
    wk_iter it;
    wk_iter_init(&it, nops, (const wick_tensor *const *)ops);
    return wk_ew_vector_width(&it, wk_ew_plan_for(&it));
}

static void test_vector_width(void) {
    int64_t n[] = {1001}, wide[] = {1002}, bc[] = {8, 16}, row[] = {16};
    wick_tensor *ops[3], *w = make(wick_cpu(), 1, wide), *shifted, *s = NULL, *d = NULL;
    ops[0] = make(wick_cpu(), 1, n), ops[1] = make(wick_cpu(), 1, n), ops[2] = make(wick_cpu(), 1, n);
    int aligned = (uintptr_t)wick_tensor_data(ops[0]) % 16 == 0 && (uintptr_t)wick_tensor_data(ops[1]) % 16 == 0 &&
                  (uintptr_t)wick_tensor_data(ops[2]) % 16 == 0;
    CHECK(aligned); /* 1001 floats come from the aligned allocator */
    CHECK(width_of(3, ops) == (aligned ? 4 : 1)); /* float32: 4 per vector */
    CHECK(wick_narrow(&shifted, w, 0, 1, 1001) == WICK_OK); /* 4 bytes past an aligned base */
    wick_tensor *mis[3] = {ops[0], shifted, ops[2]};
    CHECK(width_of(3, mis) == 1);
    CHECK(wick_full(&s, 0, NULL, 1, (wick_options){WICK_FLOAT32, wick_cpu(), 0}) == WICK_OK);
    wick_tensor *with_scalar[3] = {ops[0], ops[1], s};
    CHECK(width_of(3, with_scalar) == 1); /* a CPU scalar on the CPU: stride 0 with data, no vectors */
    CHECK(wick_empty(&d, 1, n, (wick_options){WICK_FLOAT64, wick_cpu(), 0}) == WICK_OK);
    wick_tensor *mixed[3] = {ops[0], d, ops[2]};
    CHECK(width_of(3, mixed) == 1); /* element sizes differ */
    wick_tensor *b0 = make(wick_cpu(), 2, bc), *b1 = make(wick_cpu(), 2, bc), *r = make(wick_cpu(), 1, row);
    wick_tensor *bias[3] = {b0, b1, r};
    CHECK(width_of(3, bias) == 1); /* not the contiguous plan */
    /* host values are splatted: a meta op with a CPU scalar (alignment of meta data aside) */
    wk_iter it;
    wk_iter_init(&it, 3, (const wick_tensor *const *)with_scalar);
    it.host_values = 4u, it.data[2] = NULL;
    CHECK(wk_ew_vector_width(&it, wk_ew_plan_for(&it)) == (aligned ? 4 : 1));
    wick_tensor *all[] = {ops[0], ops[1], ops[2], w, shifted, s, d, b0, b1, r};
    release_all(10, all);
}

int main(void) {
    if (wick_device_parse("meta", &META)) return 1;
    test_shapes(wick_cpu());
    test_shapes(META);
    test_huge();
    test_host_value_iter();
    test_cpu_reads_values();
    test_vector_width();
    printf("test_ew_plan: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
