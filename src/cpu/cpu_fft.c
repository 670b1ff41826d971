/* Discrete Fourier transforms along one dim of contiguous complex data laid
 * out [outer, n, inner] (the rows when inner is 1), in double precision
 * whatever the dtype; real rfft/irfft along the rows. A length whose prime factors are all
 * small (at most FFT_MAX_RADIX) runs a mixed-radix Stockham transform:
 * one pass per factor (radix 4, 2, 3, 5 written out, other primes as a small
 * DFT), each reading one buffer and writing the other in natural order, so
 * there is no bit-reversal pass. Any other length goes through Bluestein's
 * chirp-z transform: three Stockham transforms of a length >= 2n - 1 with
 * factors 2, 3 and 5 only. So any length costs O(n log n). A real signal of
 * even length is a complex one of half the length. Points are kept split
 * (all real parts, then all imaginary parts) so that each pass's inner loop
 * is plain arithmetic on contiguous doubles, which the compiler vectorises.
 * The core's DFT matrix product (src/core/fft.c) is the reference these are
 * tested against. */
#include "cpu.h"

#include <inttypes.h>
#include <math.h>

#define FFT_MAX_STAGES 64 /* a length below 2^63 has fewer prime factors */
#define FFT_MAX_RADIX 31  /* a larger prime factor: Bluestein */
#define FFT_LANES 8       /* rows transformed at once, as SIMD lanes */

/* The passes of one length: radix[k] splits the current length L = n / s
 * (s the product of the radices before) into r parts of m = L / r; the pass's
 * twiddles e^(sign 2 pi i j p / L) (p < m, 1 <= j < r) start at tw + off[k]
 * as (re, im) pairs, p by p; a general radix's r roots follow them. */
typedef struct {
    int64_t n;
    int count;
    int radix[FFT_MAX_STAGES];
    size_t off[FFT_MAX_STAGES];
    double *tw;
    size_t tw_len; /* doubles */
} fft_steps;

/* The transform of one call: n points, sign -1 (forward) or +1 (inverse). */
typedef struct {
    int64_t n, m;       /* m: the length transformed (n itself, or Bluestein's) */
    fft_steps steps;    /* of m */
    double *chirp;      /* Bluestein, split (n re, n im): e^(sign pi i k^2 / n) */
    double *filter;     /* Bluestein, split (m re, m im): the transform of the conjugate chirp, wrapped to m */
    double sign;        /* -1 (forward) or +1 (inverse): the twiddles' */
    int64_t inner;      /* the data's [outer, n, inner] layout (cpu_fft) */
    wick_dtype dtype;   /* complex64 or complex128 */
    const char *in;
    char *out;
    int *out_of_memory; /* set (atomically) by a piece that could not get its work space */
} fft_plan;

/* e^(sign 2 pi i j / L) as (*c, *s), from an angle folded into [0, pi / 4]: the
 * quarter turns exact (a Nyquist bin of a real signal gets an imaginary part of
 * exactly 0, as PyTorch's) and the roots exactly symmetric */
static void unit_root(int64_t j, int64_t L, double sign, double *c, double *s) {
    j %= L;
    bool lower = 2 * j > L; /* the angle in (pi, 2 pi): the conjugate of L - j's */
    if (lower) j = L - j;
    int64_t q = 4 * j; /* the angle 2 pi q / 4L, q in [0, 2L] */
    bool second = q > L; /* in (pi / 2, pi]: a quarter turn after 2 pi (q - L) / 4L */
    if (second) q -= L;
    double bc, bs; /* of 2 pi q / 4L in [0, pi / 2], from the nearer end */
    if (2 * q > L) {
        double a = 2 * M_PI * (double)(L - q) / (4.0 * (double)L);
        bc = sin(a), bs = cos(a);
    } else {
        double a = 2 * M_PI * (double)q / (4.0 * (double)L);
        bc = cos(a), bs = sin(a);
    }
    *c = second ? -bs : bc;
    *s = sign * (lower ? -1 : 1) * (second ? bc : bs);
}

/* n's radices (4s first, then a 2, then odd primes); false when a prime factor
 * is above FFT_MAX_RADIX */
static bool factor(int64_t n, fft_steps *st) {
    int c = 0;
    while (n % 4 == 0) st->radix[c++] = 4, n /= 4;
    if (n % 2 == 0) st->radix[c++] = 2, n /= 2;
    for (int p = 3; n > 1; p += 2) {
        if (p > FFT_MAX_RADIX) return false;
        while (n % p == 0) st->radix[c++] = p, n /= p;
    }
    st->count = c;
    return true;
}

static bool smooth(int64_t n) { /* only factors 2, 3 and 5 */
    while (n % 2 == 0) n /= 2;
    while (n % 3 == 0) n /= 3;
    while (n % 5 == 0) n /= 5;
    return n == 1;
}

static void steps_free(fft_steps *st) {
    wk_free(st->tw, sizeof(double) * st->tw_len);
    st->tw = NULL;
}

/* the twiddles of n's passes (factor(n) true); false: out of memory */
static bool steps_make(fft_steps *st, int64_t n, int sign) {
    st->n = n;
    size_t len = 0;
    int64_t L = n;
    for (int k = 0; k < st->count; k++) {
        int r = st->radix[k];
        st->off[k] = len;
        len += 2 * (size_t)(r - 1) * (size_t)(L / r) + (r > 5 ? 2 * (size_t)r : 0);
        L /= r;
    }
    st->tw_len = len ? len : 1;
    st->tw = wk_malloc(sizeof(double) * st->tw_len);
    if (!st->tw) return false;
    L = n;
    for (int k = 0; k < st->count; k++) {
        int r = st->radix[k];
        int64_t m = L / r;
        double *w = st->tw + st->off[k];
        for (int64_t p = 0; p < m; p++)
            for (int j = 1; j < r; j++, w += 2) unit_root(j * p, L, sign, w, w + 1); /* j p < L */
        for (int j = 0; r > 5 && j < r; j++, w += 2) unit_root(j, r, sign, w, w + 1);
        L = m;
    }
    return true;
}

/* One pass: x (s rows of L = r m points, split re/im) into y. With
 * a_k = x[q + s (p + k m)], y[q + s (r p + j)] = w_L^(j p) sum_k a_k w_r^(j k).
 * For each p the pass reads r runs of s points and writes r runs of s. */
#define PASS_ARGS int64_t s, int64_t m, const double *restrict w, double sg, \
    const double *restrict xr, const double *restrict xi, double *restrict yr, double *restrict yi
/* the runs of this p: A(k) the k-th input run, Y(j) the j-th output run */
#define A_R(k) (xr + s * (p + (k) * m))
#define A_I(k) (xi + s * (p + (k) * m))
#define TW(j) const double w##j##r = w[2 * ((j) - 1)], w##j##i = w[2 * ((j) - 1) + 1]; \
    double *restrict y##j##r = yr + s * (r * p + (j)), *restrict y##j##i = yi + s * (r * p + (j))
#define OUT(j, cr, ci) do { /* y_j = c_j w^(j p) */                                  \
        double cr_ = (cr), ci_ = (ci);                                              \
        y##j##r[q] = cr_ * w##j##r - ci_ * w##j##i, y##j##i[q] = cr_ * w##j##i + ci_ * w##j##r; \
    } while (0)

WK_SIMD static void pass2(PASS_ARGS) {
    enum { r = 2 };
    (void)sg;
    for (int64_t p = 0; p < m; p++, w += 2 * (r - 1)) {
        const double *restrict a0r = A_R(0), *a0i = A_I(0), *a1r = A_R(1), *a1i = A_I(1);
        double *restrict y0r = yr + s * r * p, *restrict y0i = yi + s * r * p;
        TW(1);
#pragma GCC ivdep /* the runs are disjoint */
        for (int64_t q = 0; q < s; q++) {
            y0r[q] = a0r[q] + a1r[q], y0i[q] = a0i[q] + a1i[q];
            OUT(1, a0r[q] - a1r[q], a0i[q] - a1i[q]);
        }
    }
}

WK_SIMD static void pass4(PASS_ARGS) {
    enum { r = 4 };
    for (int64_t p = 0; p < m; p++, w += 2 * (r - 1)) {
        const double *restrict a0r = A_R(0), *a0i = A_I(0), *a1r = A_R(1), *a1i = A_I(1);
        const double *restrict a2r = A_R(2), *a2i = A_I(2), *a3r = A_R(3), *a3i = A_I(3);
        double *restrict y0r = yr + s * r * p, *restrict y0i = yi + s * r * p;
        TW(1);
        TW(2);
        TW(3);
#pragma GCC ivdep /* the runs are disjoint */
        for (int64_t q = 0; q < s; q++) {
            double t0r = a0r[q] + a2r[q], t0i = a0i[q] + a2i[q], t1r = a0r[q] - a2r[q], t1i = a0i[q] - a2i[q];
            double t2r = a1r[q] + a3r[q], t2i = a1i[q] + a3i[q], t3r = a1r[q] - a3r[q], t3i = a1i[q] - a3i[q];
            double ur = -sg * t3i, ui = sg * t3r; /* w_4 (a1 - a3), w_4 = sign i */
            y0r[q] = t0r + t2r, y0i[q] = t0i + t2i;
            OUT(1, t1r + ur, t1i + ui);
            OUT(2, t0r - t2r, t0i - t2i);
            OUT(3, t1r - ur, t1i - ui);
        }
    }
}

WK_SIMD static void pass3(PASS_ARGS) {
    enum { r = 3 };
    const double h = 0.86602540378443864676 * sg; /* sign sin(2 pi / 3) */
    for (int64_t p = 0; p < m; p++, w += 2 * (r - 1)) {
        const double *restrict a0r = A_R(0), *a0i = A_I(0), *a1r = A_R(1), *a1i = A_I(1), *a2r = A_R(2), *a2i = A_I(2);
        double *restrict y0r = yr + s * r * p, *restrict y0i = yi + s * r * p;
        TW(1);
        TW(2);
#pragma GCC ivdep /* the runs are disjoint */
        for (int64_t q = 0; q < s; q++) {
            double tr = a1r[q] + a2r[q], ti = a1i[q] + a2i[q], dr = a1r[q] - a2r[q], di = a1i[q] - a2i[q];
            double br = a0r[q] - 0.5 * tr, bi = a0i[q] - 0.5 * ti; /* a0 + cos(2 pi / 3) t */
            y0r[q] = a0r[q] + tr, y0i[q] = a0i[q] + ti;
            OUT(1, br - h * di, bi + h * dr); /* b + i h d */
            OUT(2, br + h * di, bi - h * dr);
        }
    }
}

WK_SIMD static void pass5(PASS_ARGS) {
    enum { r = 5 };
    const double c1 = 0.30901699437494742410, c2 = -0.80901699437494742410;   /* cos(2 pi k / 5) */
    const double s1 = 0.95105651629515357212 * sg, s2 = 0.58778525229247312917 * sg; /* sign sin(2 pi k / 5) */
    for (int64_t p = 0; p < m; p++, w += 2 * (r - 1)) {
        const double *restrict a0r = A_R(0), *a0i = A_I(0), *a1r = A_R(1), *a1i = A_I(1), *a2r = A_R(2), *a2i = A_I(2);
        const double *restrict a3r = A_R(3), *a3i = A_I(3), *a4r = A_R(4), *a4i = A_I(4);
        double *restrict y0r = yr + s * r * p, *restrict y0i = yi + s * r * p;
        TW(1);
        TW(2);
        TW(3);
        TW(4);
#pragma GCC ivdep /* the runs are disjoint */
        for (int64_t q = 0; q < s; q++) {
            double t1r = a1r[q] + a4r[q], t1i = a1i[q] + a4i[q], d1r = a1r[q] - a4r[q], d1i = a1i[q] - a4i[q];
            double t2r = a2r[q] + a3r[q], t2i = a2i[q] + a3i[q], d2r = a2r[q] - a3r[q], d2i = a2i[q] - a3i[q];
            double b1r = a0r[q] + c1 * t1r + c2 * t2r, b1i = a0i[q] + c1 * t1i + c2 * t2i;
            double b2r = a0r[q] + c2 * t1r + c1 * t2r, b2i = a0i[q] + c2 * t1i + c1 * t2i;
            double e1r = s1 * d1r + s2 * d2r, e1i = s1 * d1i + s2 * d2i; /* times i below */
            double e2r = s2 * d1r - s1 * d2r, e2i = s2 * d1i - s1 * d2i;
            y0r[q] = a0r[q] + t1r + t2r, y0i[q] = a0i[q] + t1i + t2i;
            OUT(1, b1r - e1i, b1i + e1r);
            OUT(2, b2r - e2i, b2i + e2r);
            OUT(3, b2r + e2i, b2i - e2r);
            OUT(4, b1r + e1i, b1i - e1r);
        }
    }
}

/* an odd prime radix r <= FFT_MAX_RADIX as a small DFT; roots: w_r^t, t < r */
static void pass_any(int r, const double *roots, PASS_ARGS) {
    (void)sg;
    double ar[FFT_MAX_RADIX], ai[FFT_MAX_RADIX];
    for (int64_t p = 0; p < m; p++, w += 2 * (r - 1))
        for (int64_t q = 0; q < s; q++) {
            for (int k = 0; k < r; k++) ar[k] = A_R(k)[q], ai[k] = A_I(k)[q];
            for (int j = 0; j < r; j++) {
                double cr = 0, ci = 0;
                for (int k = 0, t = 0; k < r; k++, t = t + j < r ? t + j : t + j - r) { /* t = j k mod r */
                    cr += ar[k] * roots[2 * t] - ai[k] * roots[2 * t + 1];
                    ci += ar[k] * roots[2 * t + 1] + ai[k] * roots[2 * t];
                }
                if (j) { /* times w^(j p) */
                    double wr = w[2 * (j - 1)], wi = w[2 * (j - 1) + 1], c = cr;
                    cr = c * wr - ci * wi, ci = c * wi + ci * wr;
                }
                yr[q + s * (r * p + j)] = cr, yi[q + s * (r * p + j)] = ci;
            }
        }
}

/* x (st->n points of `lanes` rows: point i of row v at x[i lanes + v], re
 * parts, then im parts at x + n lanes) transformed in place; y: a work space
 * as large. The rows are the fastest-moving index, so a pass sees them as
 * lanes more columns (s starts at lanes) and its inner loop is long even in
 * the first pass. */
static void run_steps(const fft_steps *st, double sg, double *x, double *y, int64_t lanes) {
    int64_t N = st->n * lanes, s = lanes, L = st->n;
    double *a = x, *b = y;
    for (int k = 0; k < st->count; k++) {
        int r = st->radix[k];
        int64_t m = L / r;
        const double *w = st->tw + st->off[k];
        switch (r) {
        case 2: pass2(s, m, w, sg, a, a + N, b, b + N); break;
        case 3: pass3(s, m, w, sg, a, a + N, b, b + N); break;
        case 4: pass4(s, m, w, sg, a, a + N, b, b + N); break;
        case 5: pass5(s, m, w, sg, a, a + N, b, b + N); break;
        default: pass_any(r, w + 2 * (size_t)(r - 1) * (size_t)m, s, m, w, sg, a, a + N, b, b + N); break;
        }
        double *t = a;
        a = b, b = t;
        s *= r, L = m;
    }
    if (a != x) memcpy(x, a, sizeof(double) * 2 * (size_t)N);
}

/* a *= b for n points of `lanes` rows (a: re, then im at a + na; b: one row,
 * re, then im at b + nb); conj_out: the conjugate of the product */
WK_SIMD static void multiply(double *restrict a, int64_t na, const double *restrict b, int64_t nb, int64_t n,
                             int64_t lanes, double scale, int conj_out) {
    double sign = conj_out ? -scale : scale;
    for (int64_t k = 0; k < n; k++) {
        double br = b[k], bi = b[nb + k];
        for (int64_t v = k * lanes; v < (k + 1) * lanes; v++) {
            double r = a[v] * br - a[na + v] * bi, i = a[v] * bi + a[na + v] * br;
            a[v] = scale * r, a[na + v] = sign * i;
        }
    }
}

/* x (the plan's n points of `lanes` rows, laid out as run_steps', im parts at
 * x + m lanes, in a work space of 4 m lanes) transformed in place:
 * X[k] = sum_j x[j] w^(jk). Bluestein writes jk = (j^2 + k^2 - (k - j)^2) / 2,
 * a convolution of x[j] chirp[j] with the conjugate chirp, done as
 * conj(F(conj(F(a) F(b)))) / m */
static void transform(const fft_plan *p, double *x, int64_t lanes) {
    int64_t n = p->n, m = p->m, M = m * lanes;
    double *y = x + 2 * M;
    if (!p->chirp) {
        run_steps(&p->steps, p->sign, x, y, lanes);
        return;
    }
    multiply(x, M, p->chirp, n, n, lanes, 1, 0);
    memset(x + n * lanes, 0, sizeof(double) * (size_t)(M - n * lanes));
    memset(x + M + n * lanes, 0, sizeof(double) * (size_t)(M - n * lanes));
    run_steps(&p->steps, p->sign, x, y, lanes);
    multiply(x, M, p->filter, m, m, lanes, 1, 1);
    run_steps(&p->steps, p->sign, x, y, lanes);
    for (int64_t k = 0; k < n * lanes; k++) x[M + k] = -x[M + k]; /* conj */
    multiply(x, M, p->chirp, n, n, lanes, 1.0 / (double)m, 0);
}

/* rows r .. r + lanes - 1 of complex numbers transformed: row r is (o, v) of
 * the [outer, n, inner] layout, its point i at (o n + i) inner + v; with
 * inner > 1 a batch of consecutive v reads and writes runs of lanes numbers */
WK_SIMD static void fft_batch(const fft_plan *p, int64_t r, int64_t lanes, double *x) {
    int64_t n = p->n, M = p->m * lanes, inner = p->inner, base[FFT_LANES];
    for (int64_t v = 0; v < lanes; v++) base[v] = 2 * (((r + v) / inner) * n * inner + (r + v) % inner);
    int64_t step = 2 * inner; /* (re, im pairs) */
    for (int64_t i = 0; i < n; i++)
        for (int64_t v = 0; v < lanes; v++) {
            int64_t at = base[v] + i * step;
            if (p->dtype == WICK_COMPLEX64) {
                const float *s = (const float *)p->in;
                x[i * lanes + v] = s[at], x[M + i * lanes + v] = s[at + 1];
            } else {
                const double *s = (const double *)p->in;
                x[i * lanes + v] = s[at], x[M + i * lanes + v] = s[at + 1];
            }
        }
    transform(p, x, lanes);
    for (int64_t i = 0; i < n; i++)
        for (int64_t v = 0; v < lanes; v++) {
            int64_t at = base[v] + i * step;
            if (p->dtype == WICK_COMPLEX64) {
                float *d = (float *)p->out;
                d[at] = (float)x[i * lanes + v], d[at + 1] = (float)x[M + i * lanes + v];
            } else {
                double *d = (double *)p->out;
                d[at] = x[i * lanes + v], d[at + 1] = x[M + i * lanes + v];
            }
        }
}

/* how many rows a piece transforms at once: up to FFT_LANES, while its work
 * space of 4 m doubles a row stays within FFT_BATCH_BYTES */
#define FFT_BATCH_BYTES (256 * 1024)
static int64_t lanes_of(const fft_plan *p) {
    int64_t lanes = FFT_LANES;
    while (lanes > 1 && (uint64_t)lanes * 32 * (uint64_t)p->m > FFT_BATCH_BYTES) lanes /= 2;
    return lanes;
}

/* the work space of a batch of `lanes` rows: the transform's 4 m doubles a
 * row and `extra` more */
static double *work_space(const fft_plan *p, int64_t lanes, size_t extra, size_t *bytes) {
    *bytes = sizeof(double) * (size_t)lanes * (4 * (size_t)p->m + extra);
    double *x = wk_malloc(*bytes);
    if (!x) __atomic_store_n(p->out_of_memory, 1, __ATOMIC_RELAXED);
    return x;
}

static void fft_rows(void *ctx, int64_t begin, int64_t end) {
    const fft_plan *p = ctx;
    size_t bytes;
    int64_t lanes = lanes_of(p);
    double *x = work_space(p, lanes, 0, &bytes);
    if (!x) return;
    for (int64_t r = begin; r < end; r += lanes) fft_batch(p, r, end - r < lanes ? end - r : lanes, x);
    wk_free(x, bytes);
}

static void plan_free(fft_plan *p) {
    steps_free(&p->steps);
    wk_free(p->chirp, sizeof(double) * 2 * (size_t)p->n);
    wk_free(p->filter, sizeof(double) * 2 * (size_t)p->m);
    p->chirp = p->filter = NULL;
}

/* the chirp and the filter of Bluestein's transform (steps made) */
static void bluestein_tables(fft_plan *p) {
    double sign = p->sign;
    int64_t n = p->n, m = p->m;
    double *c = p->chirp, *f = p->filter;
    for (int64_t k = 0; k < n; k++) {
        /* k^2 mod 2n keeps the angle small and exact (pi k^2 / n is periodic in 2n) */
        int64_t q = (int64_t)(((unsigned __int128)k * (unsigned __int128)k) % (unsigned __int128)(2 * n));
        unit_root(q, 2 * n, sign, c + k, c + n + k);
    }
    memset(f, 0, sizeof(double) * 2 * (size_t)m);
    for (int64_t k = 0; k < n; k++) { /* conj(chirp) at k and at m - k */
        f[k] = c[k], f[m + k] = -c[n + k];
        if (k) f[m - k] = f[k], f[2 * m - k] = f[m + k];
    }
    double *y = wk_malloc(sizeof(double) * 2 * (size_t)m);
    if (y) run_steps(&p->steps, sign, f, y, 1);
    wk_free(y, sizeof(double) * 2 * (size_t)m);
    if (!y) {
        wk_free(f, sizeof(double) * 2 * (size_t)m);
        p->filter = NULL;
    }
}

/* p->n and p->sign set: its steps (or Bluestein's), tables made; an error when out of memory */
static wick_status plan_make(fft_plan *p, const char *what) {
    int64_t n = p->n;
    int sign = p->sign < 0 ? -1 : 1;
    p->m = n;
    if (!factor(n, &p->steps)) {
        int64_t m = 2 * n - 1;
        while (!smooth(m)) m++;
        p->m = m;
        factor(m, &p->steps);
    }
    bool ok = steps_make(&p->steps, p->m, sign);
    if (ok && p->m != n) {
        p->chirp = wk_malloc(sizeof(double) * 2 * (size_t)n);
        p->filter = wk_malloc(sizeof(double) * 2 * (size_t)p->m);
        ok = p->chirp && p->filter;
        if (ok) bluestein_tables(p);
        ok = ok && p->filter;
    }
    if (ok) return WICK_OK;
    plan_free(p);
    return wick_fail(WICK_ERR_OOM, "%s: out of memory for a %" PRId64 "-point transform", what, n);
}

wick_status cpu_fft(wick_dtype dtype, const char *in, char *out, int64_t outer, int64_t n, int64_t inner, int sign) {
    int64_t rows = outer * inner;
    if (rows == 0) return WICK_OK;
    if (n <= 1) { /* a 1-point transform is the identity */
        if (in != out) memcpy(out, in, wick_dtype_size(dtype) * (size_t)(rows * n));
        return WICK_OK;
    }
    int oom = 0;
    fft_plan p = {.n = n, .sign = sign < 0 ? -1 : 1, .inner = inner, .dtype = dtype, .in = in, .out = out,
                  .out_of_memory = &oom};
    wick_status st = plan_make(&p, "fft");
    if (st) return st;
    st = wk_parallel_for(rows, 1 + 32768 / (n + 1), fft_rows, &p);
    if (!st && __atomic_load_n(&oom, __ATOMIC_RELAXED)) /* (some rows were not written) */
        st = wick_fail(WICK_ERR_OOM, "fft: out of memory for the work space of a %" PRId64 "-point transform", n);
    plan_free(&p);
    return st;
}

/* ---- real signals: rfft, and irfft back ---- */

typedef struct {
    fft_plan half;    /* the n/2-point complex transform of the packed pairs */
    const double *w;  /* e^(sign 2 pi i k / n), k <= n/2, as (re, im) pairs */
    wick_dtype dtype; /* float32 or float64 */
    const char *in;
    char *out;
    int64_t n;
    int inverse; /* irfft_batch, else rfft_batch */
} real_plan;

/* rows r .. r + lanes - 1: z[j] = x[2j] + i x[2j+1] transformed (Z), then
 * X[k] = E[k] + w^k O[k] with E = (Z[k] + conj Z[N-k]) / 2 and
 * O = (Z[k] - conj Z[N-k]) / 2i, N = n/2 */
WK_SIMD static void rfft_batch(const real_plan *p, int64_t r, int64_t lanes, double *x) {
    int64_t n = p->n, h = n / 2;
    double *zr = x, *zi = x + p->half.m * lanes;
    /* loops over rows innermost: the work space is read and written in order */
    if (p->dtype == WICK_FLOAT32) {
        const float *s = (const float *)p->in + r * n;
        for (int64_t j = 0; j < h; j++)
            for (int64_t v = 0; v < lanes; v++) zr[j * lanes + v] = s[v * n + 2 * j], zi[j * lanes + v] = s[v * n + 2 * j + 1];
    } else {
        const double *s = (const double *)p->in + r * n;
        for (int64_t j = 0; j < h; j++)
            for (int64_t v = 0; v < lanes; v++) zr[j * lanes + v] = s[v * n + 2 * j], zi[j * lanes + v] = s[v * n + 2 * j + 1];
    }
    transform(&p->half, x, lanes);
    bool single = p->dtype == WICK_FLOAT32;
    float *of = (float *)p->out + r * 2 * (h + 1);
    double *od = (double *)p->out + r * 2 * (h + 1);
    for (int64_t k = 0; k <= h; k++) {
        const double *ar = zr + (k == h ? 0 : k) * lanes, *ai = zi + (k == h ? 0 : k) * lanes; /* Z[N] is Z[0] */
        const double *br = zr + (k == 0 ? 0 : h - k) * lanes, *bi = zi + (k == 0 ? 0 : h - k) * lanes;
        double wr = p->w[2 * k], wi = p->w[2 * k + 1];
        for (int64_t v = 0; v < lanes; v++) {
            double er = 0.5 * (ar[v] + br[v]), ei = 0.5 * (ai[v] - bi[v]);
            double dr = 0.5 * (ar[v] - br[v]), di = 0.5 * (ai[v] + bi[v]); /* O = d / i = (di, -dr) */
            double xr = er + wr * di + wi * dr, xi = ei - wr * dr + wi * di;
            int64_t o = v * 2 * (h + 1) + 2 * k;
            if (single) of[o] = (float)xr, of[o + 1] = (float)xi;
            else od[o] = xr, od[o + 1] = xi;
        }
    }
}

/* rows r .. r + lanes - 1, each n = 2N real points, from X[0..N]:
 * Z[k] = (X[k] + conj X[N-k]) + i e^(2 pi i k / n) (X[k] - conj X[N-k]),
 * z = the N-point inverse transform of Z, x[2j] = re z[j], x[2j+1] = im z[j];
 * the imaginary parts of X[0] and X[N], which no real signal has, are taken as 0 */
WK_SIMD static void irfft_batch(const real_plan *p, int64_t r, int64_t lanes, double *x) {
    int64_t n = p->n, h = n / 2, M = p->half.m * lanes;
    double *X = x + 4 * M; /* one row's N + 1 input points, as (re, im) pairs */
    for (int64_t v = 0; v < lanes; v++) {
        if (p->dtype == WICK_FLOAT32) {
            const float *s = (const float *)p->in + (r + v) * 2 * (h + 1);
            for (int64_t i = 0; i < 2 * (h + 1); i++) X[i] = s[i];
        } else {
            memcpy(X, (const double *)p->in + (r + v) * 2 * (h + 1), sizeof(double) * 2 * (size_t)(h + 1));
        }
        X[1] = 0, X[2 * h + 1] = 0;
        for (int64_t k = 0; k < h; k++) {
            double ar = X[2 * k], ai = X[2 * k + 1], br = X[2 * (h - k)], bi = -X[2 * (h - k) + 1]; /* conj X[N-k] */
            double sr = ar + br, si = ai + bi, dr = ar - br, di = ai - bi;
            double wr = p->w[2 * k], wi = p->w[2 * k + 1]; /* e^(+2 pi i k / n) */
            double tr = wr * dr - wi * di, ti = wr * di + wi * dr; /* w d, then times i: (-ti, tr) */
            x[k * lanes + v] = sr - ti, x[M + k * lanes + v] = si + tr;
        }
    }
    transform(&p->half, x, lanes);
    for (int64_t v = 0; v < lanes; v++) {
        if (p->dtype == WICK_FLOAT32) {
            float *d = (float *)p->out + (r + v) * n;
            for (int64_t j = 0; j < h; j++) d[2 * j] = (float)x[j * lanes + v], d[2 * j + 1] = (float)x[M + j * lanes + v];
        } else {
            double *d = (double *)p->out + (r + v) * n;
            for (int64_t j = 0; j < h; j++) d[2 * j] = x[j * lanes + v], d[2 * j + 1] = x[M + j * lanes + v];
        }
    }
}

static void real_rows_range(void *ctx, int64_t begin, int64_t end) {
    const real_plan *p = ctx;
    size_t bytes; /* the transform's work space, and after it the input points of irfft_batch */
    int64_t lanes = lanes_of(&p->half);
    double *x = work_space(&p->half, lanes, 2 * (size_t)(p->half.n + 1), &bytes);
    if (!x) return;
    for (int64_t r = begin; r < end; r += lanes)
        (p->inverse ? irfft_batch : rfft_batch)(p, r, end - r < lanes ? end - r : lanes, x);
    wk_free(x, bytes);
}

/* rfft (sign -1) or irfft (sign +1) of rows of even length n */
static wick_status real_rows(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n, int inverse) {
    if (rows == 0) return WICK_OK;
    if (n % 2 || n < 2) return wick_fail(WICK_ERR_ARGUMENT, "real transform kernel: n must be even, got %" PRId64, n);
    int64_t h = n / 2;
    int oom = 0;
    int sign = inverse ? 1 : -1;
    const char *what = inverse ? "irfft" : "rfft";
    real_plan p = {{.n = h, .sign = sign, .out_of_memory = &oom}, NULL, dtype, in, out, n, inverse};
    size_t w_bytes = sizeof(double) * 2 * (size_t)(h + 1);
    double *w = wk_malloc(w_bytes);
    if (!w) return wick_fail(WICK_ERR_OOM, "%s: out of memory for a %" PRId64 "-point transform", what, n);
    wick_status st = plan_make(&p.half, what);
    if (st) {
        wk_free(w, w_bytes);
        return st;
    }
    for (int64_t k = 0; k <= h; k++) unit_root(k, n, sign, w + 2 * k, w + 2 * k + 1);
    p.w = w;
    st = wk_parallel_for(rows, 1 + 32768 / (n + 1), real_rows_range, &p);
    if (!st && __atomic_load_n(&oom, __ATOMIC_RELAXED))
        st = wick_fail(WICK_ERR_OOM, "%s: out of memory for the work space of a %" PRId64 "-point transform", what, n);
    wk_free(w, w_bytes);
    plan_free(&p.half);
    return st;
}

wick_status cpu_rfft(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n) {
    return real_rows(dtype, in, out, rows, n, 0);
}

wick_status cpu_irfft(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n) {
    return real_rows(dtype, in, out, rows, n, 1);
}
