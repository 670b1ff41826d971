/* The CUDA sort's host logic, run on the CPU (no GPU needed): the launch plan
 * of src/cuda/cuda_sort_plan.h (padding, passes, threads, shared memory, the
 * scan's kernel) and the bitonic network itself (wk_bitonic_sort_f64, the
 * compare-exchange the kernels run), against a brute-force stable sort for
 * every length 0..40 and 3000, with ties and NaN (last ascending, first
 * descending). The Lua binding used to expose these as core._sort_plan and
 * core._bitonic_sort for ops_spec; a C test keeps the binding off src/cuda
 * (docs/architecture.md, "Layers and arrows"). */
#include "../src/cuda/cuda_sort_plan.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>

static void check_plans(void) {
    wk_sort_plan p = wk_sort_plan_for(1, 4);
    CHECK(p.shared && p.padded == 1 && p.passes == 0);
    p = wk_sort_plan_for(5, 4);
    CHECK(p.shared && p.padded == 8 && p.passes == 6 && p.threads == 32);
    p = wk_sort_plan_for(2048, 8);
    CHECK(p.shared && p.padded == 2048 && p.threads == 1024 && p.smem == 2048 * 16);
    p = wk_sort_plan_for(2049, 8);
    CHECK(!p.shared && p.padded == 4096 && p.passes == 78);
    /* the scan: a thread per line for many short lines, else a block per line */
    CHECK(wk_scan_plan(5, 100000) == WK_SCAN_THREAD);
    CHECK(wk_scan_plan(5, 10) == WK_SCAN_BLOCK);
    CHECK(wk_scan_plan(65, 100000) == WK_SCAN_BLOCK);
    /* every shared plan fits the 48 KiB a block gets without opting in, and 1024 threads */
    static const int64_t ns[] = {2, 33, 1000, 1025, 2048};
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
        for (size_t key = 4; key <= 8; key += 4) {
            wk_sort_plan q = wk_sort_plan_for(ns[i], key);
            CHECK(q.smem <= 48 * 1024 && q.threads <= 1024 && q.padded >= ns[i] && q.padded < 2 * ns[i] + 1);
        }
}

/* n pseudo-random values: integers below `levels` (ties) when levels > 0 */
static void numbers(double *out, int64_t n, uint64_t seed, int levels) {
    uint64_t x = seed;
    for (int64_t i = 0; i < n; i++) {
        x = (x * 1103515245u + 12345u) % 2147483648u;
        out[i] = levels ? (double)(x % (uint64_t)levels) : ((double)x / 2147483648.0 - 0.5) * 10;
    }
}

static const double *ref_vals;
static int ref_desc;

/* the stable order: by value (NaN last ascending, first descending), ties by position */
static int ref_cmp(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    double x = ref_vals[a], y = ref_vals[b];
    int xn = x != x, yn = y != y;
    if (xn != yn) return ref_desc ? (xn ? -1 : 1) : (yn ? -1 : 1);
    if (!xn && x != y) return ref_desc ? (x > y ? -1 : 1) : (x < y ? -1 : 1);
    return a < b ? -1 : a > b;
}

/* 1 when the network orders vals as the brute-force stable sort does */
static int network_is_stable_sort(const double *vals, int64_t n, int desc) {
    wk_sort_plan p = wk_sort_plan_for(n, 8);
    double *key = calloc((size_t)p.padded, sizeof *key);
    int64_t *pos = calloc((size_t)p.padded, sizeof *pos), *expected = calloc((size_t)n + 1, sizeof *expected);
    if (!key || !pos || !expected) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < p.padded; i++) {
        pos[i] = i;
        key[i] = i < n ? vals[i] : 0;
    }
    wk_bitonic_sort_f64(key, pos, p.padded, n, desc);
    for (int64_t i = 0; i < n; i++) expected[i] = i;
    ref_vals = vals, ref_desc = desc;
    qsort(expected, (size_t)n, sizeof *expected, ref_cmp);
    int same = 1;
    for (int64_t i = 0; i < n; i++) same &= pos[i] == expected[i];
    free(key), free(pos), free(expected);
    return same;
}

static void check_network(void) {
    double vals[3000];
    for (int64_t n = 0; n <= 40; n++)
        for (int levels = 0; levels <= 3; levels += 3) {
            numbers(vals, n, (uint64_t)n * 7 + 1, levels);
            if (n > 4) vals[1] = vals[n - 2] = NAN;
            for (int desc = 0; desc <= 1; desc++) {
                int ok = network_is_stable_sort(vals, n, desc);
                CHECK(ok);
                if (!ok) fprintf(stderr, "  n = %lld, levels %d, descending %d\n", (long long)n, levels, desc);
            }
        }
    numbers(vals, 3000, 17, 100);
    CHECK(network_is_stable_sort(vals, 3000, 1));
    CHECK(network_is_stable_sort(vals, 3000, 0));
}

int main(void) {
    check_plans();
    check_network();
    printf("%d checks, %d failures\n", checks, failures);
    return failures != 0;
}
