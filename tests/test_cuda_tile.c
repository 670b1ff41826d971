/* The CUDA reductions' and softmax's launch geometry and index math, on the
 * CPU (no GPU needed): for many shapes (reduced dim first, middle or last;
 * sizes 0, 1, odd, long), wk_reduce_plan / wk_softmax_plan (src/cuda/cuda_tile.h)
 * choose the kernel, and this file runs that kernel's loops over blockIdx and
 * threadIdx with the kernel's own index functions and its combine order (the
 * fixed trees of cuda_reduce.cu / cuda_softmax.cu, mirrored here), then
 * compares every output with the CPU backend (cpu_reduce, wick_softmax on the
 * CPU) and checks that each output was written exactly once. Shapes of more
 * than 2^31 elements are checked on the plan and the index functions alone. */
#include "../src/core/internal.h"
#include "../src/cpu/cpu.h"
#include "../src/cuda/cuda_tile.h"
#include "check.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- the kernels' arithmetic (double accumulation, as for float inputs) ---- */

typedef struct {
    double value;
    int64_t index; /* < 0: no element seen */
} rv;

enum { OP_SUM, OP_MAX, OP_VAR };

static rv rv_identity(int op) { return (rv){0, op == OP_MAX ? -1 : 0}; }

/* red_fold of cuda_reduce.cu */
static void rv_fold(int op, rv *r, double x, int64_t i, double mean, bool sqdev) {
    if (op != OP_MAX) {
        if (sqdev) {
            double d = x - mean;
            r->value += d * d;
        } else {
            r->value += x;
        }
        return;
    }
    if (r->index < 0 || (r->value == r->value && (x != x || x > r->value))) r->value = x, r->index = i;
}

/* red_combine of cuda_reduce.cu */
static rv rv_combine(int op, rv a, rv b) {
    if (op != OP_MAX) return (rv){a.value + b.value, 0};
    if (b.index < 0) return a;
    if (a.index < 0) return b;
    bool an = a.value != a.value, bn = b.value != b.value;
    if (an || bn) {
        if (an && bn) return a.index <= b.index ? a : b;
        return an ? a : b;
    }
    if (b.value > a.value) return b;
    if (a.value > b.value) return a;
    return a.index <= b.index ? a : b;
}

/* The fixed tree over `count` partials `step` apart (shared memory in the kernels). */
static void rv_tree(int op, rv *v, int count, int step) {
    for (int s = count / 2; s > 0; s >>= 1)
        for (int k = 0; k < s; k++) v[k * step] = rv_combine(op, v[k * step], v[(k + s) * step]);
}

static void locate(const wk_reduce_args *a, int64_t o, int idx32, int64_t *in, int64_t *out) {
    int64_t in64, out64, idx64;
    wk_red_locate64(o, a->outer_ndim, a->outer_sizes, a->in_outer_strides, a->out_outer_strides,
                    a->idx_outer_strides, &in64, &out64, &idx64);
    if (idx32) { /* the kernel's 32-bit path must agree */
        int32_t in32, out32, idx32v;
        wk_red_locate32((int32_t)o, a->outer_ndim, a->outer_sizes, a->in_outer_strides, a->out_outer_strides,
                        a->idx_outer_strides, &in32, &out32, &idx32v);
        CHECK(in32 == in64 && out32 == out64 && idx32v == idx64);
    }
    *in = in64;
    *out = out64;
}

/* A fold over elements first, first + step, ... < end of output at `in`. */
static rv fold_range(int op, const double *in, int64_t stride, int64_t first, int64_t end, int64_t step,
                     double mean, bool sqdev) {
    rv r = rv_identity(op);
    for (int64_t i = first; i < end; i += step) rv_fold(op, &r, in[i * stride], i, mean, sqdev);
    return r;
}

static void store(int op, const wk_reduce_args *a, int64_t out_off, rv r, double *out, int64_t *idx, int *written) {
    double v = r.value;
    if (op == OP_VAR) {
        double denom = (double)a->inner_size - a->correction;
        v = v / (denom > 0 ? denom : 0);
    }
    out[out_off] = v;
    idx[out_off] = r.index < 0 ? 0 : r.index;
    written[out_off]++;
}

/* Runs plan `p` (a kernel's loops) for output positions given by `a`. */
static void emulate_reduce(int op, const wk_reduce_args *a, int64_t outer, wk_tile_plan p, double *out,
                           int64_t *idx, int *written) {
    const double *x = (const double *)a->in;
    int64_t n = a->inner_size, stride = a->inner_stride;
    rv v[WK_TILE_THREADS];
    int64_t in_off[WK_TILE_THREADS], out_off[WK_TILE_THREADS];
    bool active[WK_TILE_THREADS];
    if (p.kind == WK_TILE_SPLIT) {
        int64_t S = p.split;
        rv *part = malloc((size_t)(outer * S) * sizeof *part);
        double *means = malloc((size_t)outer * sizeof *means);
        for (int pass = 0; pass < (op == OP_VAR ? 2 : 1); pass++) {
            for (unsigned blk = 0; blk < p.blocks; blk++)
                for (int64_t b = blk; b < outer * S; b += p.blocks) { /* reduce_partial */
                    int64_t o = b / S, begin = b % S * p.chunk, end = begin + p.chunk < n ? begin + p.chunk : n;
                    locate(a, o, p.index32, &in_off[0], &out_off[0]);
                    for (int t = 0; t < WK_TILE_THREADS; t++)
                        v[t] = fold_range(op, x + in_off[0], stride, begin + t, end, WK_TILE_THREADS,
                                          pass ? means[o] : 0, pass);
                    rv_tree(op, v, WK_TILE_THREADS, 1);
                    part[b] = v[0];
                }
            for (int64_t o = 0; o < outer; o++) { /* reduce_finish */
                for (int t = 0; t < WK_TILE_THREADS; t++) {
                    v[t] = rv_identity(op);
                    for (int64_t c = t; c < S; c += WK_TILE_THREADS) v[t] = rv_combine(op, v[t], part[o * S + c]);
                }
                rv_tree(op, v, WK_TILE_THREADS, 1);
                if (op == OP_VAR && !pass) {
                    means[o] = v[0].value / (double)n;
                } else {
                    locate(a, o, p.index32, &in_off[0], &out_off[0]);
                    store(op, a, out_off[0], v[0], out, idx, written);
                }
            }
        }
        free(part);
        free(means);
        return;
    }
    int tx_n = p.kind == WK_TILE_TILED ? p.tile_x : WK_TILE_THREADS / p.group; /* outputs per block */
    int ty_n = p.kind == WK_TILE_TILED ? p.tile_y : p.group;                   /* threads per output */
    CHECK(tx_n * ty_n == WK_TILE_THREADS);
    for (unsigned blk = 0; blk < p.blocks; blk++)
        for (int64_t unit = blk; unit < p.units; unit += p.blocks) {
            /* thread t: TILED (tx, ty) = (t % tile_x, t / tile_x); DIRECT (group, lane) = (t / G, t % G) */
            for (int t = 0; t < WK_TILE_THREADS; t++) {
                int which = p.kind == WK_TILE_TILED ? t % tx_n : t / ty_n;
                int lane = p.kind == WK_TILE_TILED ? t / tx_n : t % ty_n;
                int64_t o = p.kind == WK_TILE_TILED ? wk_red_tile_output(unit, which, p.tile_x) : unit * tx_n + which;
                active[t] = o < outer;
                in_off[t] = out_off[t] = 0;
                if (active[t]) locate(a, o, p.index32, &in_off[t], &out_off[t]);
                v[t] = fold_range(op, x + in_off[t], stride, lane, active[t] ? n : 0, ty_n, 0, false);
            }
            for (int pass = 0; pass < (op == OP_VAR ? 2 : 1); pass++) {
                if (pass) { /* var: every thread takes its output's mean, folds squared deviations */
                    rv head[WK_TILE_THREADS];
                    memcpy(head, v, sizeof v);
                    for (int t = 0; t < WK_TILE_THREADS; t++) {
                        int h = p.kind == WK_TILE_TILED ? t % tx_n : t - t % ty_n;
                        int lane = p.kind == WK_TILE_TILED ? t / tx_n : t % ty_n;
                        v[t] = fold_range(op, x + in_off[t], stride, lane, active[t] ? n : 0, ty_n,
                                          head[h].value / (double)n, true);
                    }
                }
                if (p.kind == WK_TILE_TILED)
                    for (int c = 0; c < tx_n; c++) rv_tree(op, v + c, ty_n, tx_n);
                else
                    for (int g = 0; g < tx_n; g++) rv_tree(op, v + g * ty_n, ty_n, 1);
            }
            for (int c = 0; c < tx_n; c++) {
                int t = p.kind == WK_TILE_TILED ? c : c * ty_n; /* ty == 0 / lane 0 writes */
                if (active[t]) store(op, a, out_off[t], v[t], out, idx, written);
            }
        }
}

/* ---- reductions against cpu_reduce ---- */

static uint64_t rng = 88172645463325252ull;
static double draw(int kind) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    if (kind == 1) return (double)(int)(rng % 5) - 2; /* ties */
    if (kind == 2 && rng % 97 == 0) return NAN;
    return (double)(rng % 100000) / 16384.0 - 3;
}

/* Reduces dim r of a contiguous tensor of `sizes`. */
static void reduce_case(int ndim, const int64_t *sizes, int r, int op, int kind) {
    int64_t numel = 1, st[WICK_MAX_DIMS], outer = 1;
    for (int d = ndim - 1; d >= 0; d--) st[d] = numel, numel *= sizes[d];
    wk_reduce_args a;
    memset(&a, 0, sizeof a);
    a.op = op == OP_SUM ? WICK_SUM : op == OP_MAX ? WICK_MAX : WICK_VAR;
    a.in_dtype = a.out_dtype = WICK_FLOAT64;
    a.correction = 1;
    int64_t ost = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        if (d == r) continue;
        a.outer_sizes[a.outer_ndim] = sizes[d];
        a.in_outer_strides[a.outer_ndim] = st[d];
        a.out_outer_strides[a.outer_ndim] = a.idx_outer_strides[a.outer_ndim] = ost;
        a.outer_ndim++;
        ost *= sizes[d];
        outer *= sizes[d];
    }
    for (int i = 0; i < a.outer_ndim / 2; i++) { /* kept dims outermost first */
        int j = a.outer_ndim - 1 - i;
        int64_t t;
#define SWAP(f) t = a.f[i], a.f[i] = a.f[j], a.f[j] = t
        SWAP(outer_sizes);
        SWAP(in_outer_strides);
        SWAP(out_outer_strides);
        SWAP(idx_outer_strides);
#undef SWAP
    }
    a.inner_size = sizes[r];
    a.inner_stride = st[r];
    if (outer == 0 || (op == OP_MAX && a.inner_size == 0)) return; /* the core rejects max over nothing */
    double *x = malloc((size_t)(numel ? numel : 1) * sizeof *x);
    for (int64_t i = 0; i < numel; i++) x[i] = draw(kind);
    double *want = calloc((size_t)outer, sizeof *want), *got = calloc((size_t)outer, sizeof *got);
    int64_t *want_i = calloc((size_t)outer, sizeof *want_i), *got_i = calloc((size_t)outer, sizeof *got_i);
    int *written = calloc((size_t)outer, sizeof *written);
    a.in = (const char *)x;
    a.out = (char *)want;
    a.indices = (char *)want_i;
    CHECK(cpu_reduce(&a) == WICK_OK);
    wk_tile_plan p = wk_reduce_plan(outer, a.inner_size, a.inner_stride, numel + 1);
    emulate_reduce(op, &a, outer, p, got, got_i, written);
    int bad = 0;
    for (int64_t o = 0; o < outer; o++) {
        double tol = 1e-12 * (fabs(want[o]) + 1) * (double)(a.inner_size + 1);
        bool same = written[o] == 1 && (op == OP_MAX ? (want[o] == got[o] || (want[o] != want[o] && got[o] != got[o])) &&
                                                           want_i[o] == got_i[o]
                                                     : (want[o] != want[o] ? got[o] != got[o] : fabs(want[o] - got[o]) <= tol));
        if (!same && bad++ == 0)
            fprintf(stderr, "reduce op %d dim %d of [%lld,%lld,%lld] (plan %d g%d %dx%d): output %lld: %g (%lld) vs cpu %g (%lld), written %d\n",
                    op, r, (long long)sizes[0], ndim > 1 ? (long long)sizes[1] : 0LL, ndim > 2 ? (long long)sizes[2] : 0LL,
                    p.kind, p.group, p.tile_x, p.tile_y, (long long)o, got[o], (long long)got_i[o], want[o],
                    (long long)want_i[o], written[o]);
    }
    CHECK(bad == 0);
    free(x), free(want), free(got), free(want_i), free(got_i), free(written);
}

/* ---- softmax against wick_softmax on the CPU ---- */

static double maxd(double a, double b) { return (a != a || a > b) ? a : b; } /* wk_maxd */

static void tree_d(double *v, int count, int step, bool max) {
    for (int s = count / 2; s > 0; s >>= 1)
        for (int k = 0; k < s; k++)
            v[k * step] = max ? maxd(v[k * step], v[(k + s) * step]) : v[k * step] + v[(k + s) * step];
}

static void emulate_softmax(const double *x, double *y, int *written, int64_t outer, int64_t d, int64_t inner,
                            int take_log, wk_tile_plan p) {
    bool tiled = p.kind == WK_TILE_TILED;
    int nx = tiled ? p.tile_x : WK_TILE_THREADS / p.group, ny = tiled ? p.tile_y : p.group;
    int64_t rows = outer * inner, base[WK_TILE_THREADS], n[WK_TILE_THREADS];
    double mx[WK_TILE_THREADS], sum[WK_TILE_THREADS];
    for (unsigned blk = 0; blk < p.blocks; blk++)
        for (int64_t unit = blk; unit < p.units; unit += p.blocks) {
            for (int t = 0; t < WK_TILE_THREADS; t++) {
                int c = tiled ? t % nx : t / ny, lane = tiled ? t / nx : t % ny;
                if (tiled) {
                    int ok;
                    if (p.index32) {
                        int32_t b32;
                        ok = wk_sm_tile_row32((int32_t)unit, c, nx, (int32_t)d, (int32_t)inner, &b32);
                        base[t] = b32;
                    } else {
                        ok = wk_sm_tile_row64(unit, c, nx, d, inner, &base[t]);
                    }
                    n[t] = ok ? d : 0;
                } else {
                    int64_t row = unit * nx + c;
                    n[t] = row < rows ? d : 0;
                    base[t] = row < rows ? wk_sm_row_base(row, d, inner) : 0;
                }
                const double *xr = x + base[t];
                if (!tiled && ny == 1) { /* the CPU's loop */
                    mx[t] = n[t] ? xr[0] : 0;
                    for (int64_t k = 1; k < n[t]; k++)
                        if (xr[k * inner] > mx[t] || xr[k * inner] != xr[k * inner]) mx[t] = xr[k * inner];
                } else {
                    mx[t] = -INFINITY;
                    for (int64_t k = lane; k < n[t]; k += ny) mx[t] = maxd(mx[t], xr[k * inner]);
                }
            }
            for (int c = 0; c < nx; c++) tree_d(tiled ? mx + c : mx + c * ny, ny, tiled ? nx : 1, true);
            for (int t = 0; t < WK_TILE_THREADS; t++) {
                int h = tiled ? t % nx : t - t % ny, lane = tiled ? t / nx : t % ny;
                double m = mx[h];
                if (isinf(m) && m < 0) m = 0;
                mx[t] = m; /* the head's value; heads come first in both layouts' loops below */
                sum[t] = 0;
                for (int64_t k = lane; k < n[t]; k += ny) sum[t] += exp(x[base[t] + k * inner] - m);
            }
            for (int c = 0; c < nx; c++) tree_d(tiled ? sum + c : sum + c * ny, ny, tiled ? nx : 1, false);
            for (int t = 0; t < WK_TILE_THREADS; t++) {
                int h = tiled ? t % nx : t - t % ny, lane = tiled ? t / nx : t % ny;
                double m = mx[t], s = sum[h];
                for (int64_t k = lane; k < n[t]; k += ny) {
                    int64_t e = base[t] + k * inner;
                    y[e] = take_log ? x[e] - (m + log(s)) : exp(x[e] - m) / s;
                    written[e]++;
                }
            }
        }
}

static void softmax_case(int64_t outer, int64_t d, int64_t inner, int take_log) {
    int64_t numel = outer * d * inner, sizes[3] = {outer, d, inner};
    if (numel == 0) {
        CHECK(wk_softmax_plan(outer, d, inner).blocks >= 1);
        return;
    }
    double *x = malloc((size_t)numel * sizeof *x), *y = calloc((size_t)numel, sizeof *y);
    int *written = calloc((size_t)numel, sizeof *written);
    for (int64_t i = 0; i < numel; i++) x[i] = draw(i % 7 == 0 ? 2 : 0);
    wick_options opt = wick_default_options();
    opt.dtype = WICK_FLOAT64;
    wick_tensor *t = NULL, *want = NULL;
    CHECK(wick_from_doubles(&t, 3, sizes, x, opt) == WICK_OK);
    CHECK(t && (take_log ? wick_log_softmax(&want, t, 1) : wick_softmax(&want, t, 1)) == WICK_OK);
    wk_tile_plan p = wk_softmax_plan(outer, d, inner);
    emulate_softmax(x, y, written, outer, d, inner, take_log, p);
    const double *w = want ? (const double *)wk_data(want) : y;
    int bad = 0;
    for (int64_t i = 0; i < numel; i++) {
        bool same = written[i] == 1 && (w[i] != w[i] ? y[i] != y[i] : fabs(w[i] - y[i]) <= 1e-12 * (fabs(w[i]) + 1));
        if (!same && bad++ == 0)
            fprintf(stderr, "%s [%lld,%lld,%lld] (plan %d g%d %dx%d): element %lld: %.17g vs cpu %.17g, written %d\n",
                    take_log ? "log_softmax" : "softmax", (long long)outer, (long long)d, (long long)inner, p.kind,
                    p.group, p.tile_x, p.tile_y, (long long)i, y[i], w[i], written[i]);
    }
    CHECK(bad == 0);
    wick_tensor_release(t);
    wick_tensor_release(want);
    free(x), free(y), free(written);
}

/* ---- plans alone: every shape, also > 2^31 elements ---- */

static void plan_checks(void) {
    const int64_t big = (int64_t)1 << 33;
    /* kinds: last dim (stride 1) direct, strided tiled, long-and-few split */
    CHECK(wk_reduce_plan(1000, 10, 1, 10001).kind == WK_TILE_DIRECT);
    CHECK(wk_reduce_plan(1000, 10, 1, 10001).group == 1);
    CHECK(wk_reduce_plan(1000, 500, 1, 500001).group == 32);
    CHECK(wk_reduce_plan(1000, 5000, 1, 5000001).group == WK_TILE_THREADS);
    CHECK(wk_reduce_plan(4096, 1000, 4096, 4096001).kind == WK_TILE_TILED);
    CHECK(wk_reduce_plan(4096, 1000, 4096, 4096001).tile_x == 32);
    CHECK(wk_reduce_plan(3, 1000, 3, 3001).tile_x == 4);
    CHECK(wk_reduce_plan(3, 1000, 3, 3001).tile_y == 64);
    CHECK(wk_reduce_plan(3, 1 << 20, 3, 3 << 20).kind == WK_TILE_SPLIT);
    CHECK(wk_reduce_plan(3, 5, 3, 16).kind == WK_TILE_DIRECT); /* short strided: a thread per output */
    /* 32- vs 64-bit index math */
    CHECK(wk_reduce_plan(4096, 1000, 4096, 4096001).index32);
    CHECK(!wk_reduce_plan(1 << 16, 1 << 16, 1 << 16, big + 1).index32);
    CHECK(!wk_reduce_plan(big, 1, 1, big + 1).index32);
    CHECK(!wk_softmax_plan(1 << 17, 1 << 17, 1).index32);
    CHECK(wk_softmax_plan(64, 1000, 1000).index32);
    CHECK(!wk_softmax_plan(4, 1 << 20, 1 << 10).index32);
    /* grids are capped; the blocks loop over all units */
    int64_t outs[] = {0, 1, 2, 3, 31, 33, 1000, (int64_t)1 << 31, big, (int64_t)1 << 40};
    int64_t ns[] = {0, 1, 7, 9, 17, 1025, 16384, 1 << 20, (int64_t)1 << 31, big};
    for (size_t i = 0; i < sizeof outs / sizeof *outs; i++)
        for (size_t j = 0; j < sizeof ns / sizeof *ns; j++)
            for (int strided = 0; strided < 2; strided++) {
                int64_t o = outs[i], n = ns[j];
                wk_tile_plan p = wk_reduce_plan(o, n, strided ? o : 1, 2);
                CHECK(p.blocks >= 1 && p.blocks <= WK_TILE_MAX_BLOCKS);
                CHECK(p.kind == WK_TILE_TILED ? p.tile_x * p.tile_y == WK_TILE_THREADS && p.units * p.tile_x >= o &&
                                                    (p.units - 1) * p.tile_x < (o > 0 ? o : 1)
                      : p.kind == WK_TILE_SPLIT ? p.units == o * p.split && p.chunk * p.split >= n &&
                                                      (p.split - 1) * p.chunk < n
                                                : p.units * (WK_TILE_THREADS / p.group) >= o);
                if (n > 0 && o > ((int64_t)1 << 50) / n) continue; /* no tensor has 2^51 elements */
                wk_tile_plan s = wk_softmax_plan(o > 0 ? 2 : 0, n, o);
                CHECK(s.blocks >= 1 && s.blocks <= WK_TILE_MAX_BLOCKS);
                if (s.kind == WK_TILE_TILED) { /* the last tile's last thread finds the last row */
                    int64_t b;
                    int ok = wk_sm_tile_row64(s.units - 1, s.tile_x - 1, s.tile_x, n, o, &b);
                    int64_t last = (o - 1) % s.tile_x, bl;
                    CHECK(wk_sm_tile_row64(s.units - 1, (int)last, s.tile_x, n, o, &bl) && bl == n * o + o - 1);
                    CHECK(!ok || b == n * o + o - 1);
                }
            }
    /* a 64-bit walk at the far end of a > 2^31 tensor: [2^17, 2^17] over dim 0 */
    int64_t sizes[1] = {(int64_t)1 << 17}, st_in[1] = {1}, st_out[1] = {1}, in, out, idx;
    wk_red_locate64(((int64_t)1 << 17) - 1, 1, sizes, st_in, st_out, st_out, &in, &out, &idx);
    CHECK(in == ((int64_t)1 << 17) - 1 && out == in && idx == in);
}

int main(void) {
    plan_checks();
    const int64_t dims[] = {0, 1, 2, 3, 7, 9, 17, 33, 100, 257};
    int nd = sizeof dims / sizeof *dims;
    for (int i = 0; i < nd; i++)
        for (int j = 0; j < nd; j++) {
            int64_t s2[2] = {dims[i], dims[j]};
            for (int r = 0; r < 2; r++)
                for (int op = 0; op < 3; op++) reduce_case(2, s2, r, op, op == OP_MAX ? (int)((i + j) % 3) : 0);
        }
    int64_t s3[][3] = {{5, 33, 7}, {2, 1025, 3}, {3, 17, 100}, {1, 40, 1}, {7, 1, 9}, {4, 300, 65}};
    for (size_t i = 0; i < sizeof s3 / sizeof *s3; i++)
        for (int r = 0; r < 3; r++)
            for (int op = 0; op < 3; op++) reduce_case(3, s3[i], r, op, op == OP_MAX ? 1 : 0);
    int64_t split[][2] = {{20000, 3}, {17000, 1}, {3, 40000}};
    for (int i = 0; i < 3; i++)
        for (int r = 0; r < 2; r++)
            for (int op = 0; op < 3; op++) reduce_case(2, split[i], r, op, op == OP_MAX ? 2 : 0);
    int64_t sm[][3] = {{1, 5, 1}, {3, 40, 1}, {2, 2000, 1}, {4, 3, 5}, {3, 9, 1}, {2, 9, 7}, {1, 100, 33},
                       {5, 17, 64}, {2, 1025, 3}, {0, 4, 4}, {3, 0, 4}, {3, 4, 0}, {1, 1, 1}, {6, 5, 2}};
    for (size_t i = 0; i < sizeof sm / sizeof *sm; i++)
        for (int lg = 0; lg < 2; lg++) softmax_case(sm[i][0], sm[i][1], sm[i][2], lg);
    printf("%d checks, %d failed\n", checks, failures);
    return failures != 0;
}
