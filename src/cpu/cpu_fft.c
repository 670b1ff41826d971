/* Discrete Fourier transforms along the rows of contiguous complex data, in
 * double precision whatever the dtype: an iterative radix-2 Cooley-Tukey
 * transform when n is a power of two, Bluestein's chirp-z transform (three
 * radix-2 transforms of a power of two >= 2n - 1) for every other n, so any
 * length costs O(n log n); a real signal of even length as a complex one of
 * half the length. Complex numbers are pairs of doubles (re, im) with
 * the arithmetic written out (C's complex multiplication checks for NaNs in
 * a library call). The core's DFT matrix product (src/core/fft.c) is the
 * reference these are tested against. */
#include "cpu.h"

#include <inttypes.h>
#include <math.h>

/* The transform of one call: n points, sign -1 (forward) or +1 (inverse). */
typedef struct {
    int64_t n, m;        /* m: the radix-2 length (n itself, or Bluestein's) */
    double *twiddle;     /* per stage of half-length h, at [2 (h - 1)]: e^(sign pi i k / h), k < h */
    double *chirp;       /* Bluestein: e^(sign pi i k^2 / n), k < n */
    double *filter;      /* Bluestein: the transform of the conjugate chirp, wrapped to m */
    wick_dtype dtype;    /* complex64 or complex128 */
    const char *in;
    char *out;
    int *out_of_memory;  /* set (atomically) by a piece that could not get its work space */
} fft_plan;

static bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* x (m points as re, im pairs, m a power of two) transformed in place */
WK_SIMD static void radix2(double *x, int64_t m, const double *twiddle) {
    for (int64_t i = 1, j = 0; i < m; i++) { /* bit-reversed order */
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            double r = x[2 * i], s = x[2 * i + 1];
            x[2 * i] = x[2 * j], x[2 * i + 1] = x[2 * j + 1];
            x[2 * j] = r, x[2 * j + 1] = s;
        }
    }
    for (int64_t h = 1; h < m; h <<= 1) {
        const double *w = twiddle + 2 * (h - 1);
        for (int64_t i = 0; i < m; i += 2 * h) {
            double *a = x + 2 * i, *b = x + 2 * (i + h);
            for (int64_t k = 0; k < h; k++) {
                double vr = b[2 * k] * w[2 * k] - b[2 * k + 1] * w[2 * k + 1];
                double vi = b[2 * k] * w[2 * k + 1] + b[2 * k + 1] * w[2 * k];
                double ur = a[2 * k], ui = a[2 * k + 1];
                a[2 * k] = ur + vr, a[2 * k + 1] = ui + vi;
                b[2 * k] = ur - vr, b[2 * k + 1] = ui - vi;
            }
        }
    }
}

static void load_row(const fft_plan *p, int64_t r, double *x) {
    int64_t n2 = 2 * p->n;
    if (p->dtype == WICK_COMPLEX64) {
        const float *s = (const float *)p->in + r * n2;
        for (int64_t i = 0; i < n2; i++) x[i] = s[i];
    } else {
        memcpy(x, (const double *)p->in + r * n2, sizeof(double) * (size_t)n2);
    }
}

static void store_row(const fft_plan *p, int64_t r, const double *x) {
    int64_t n2 = 2 * p->n;
    if (p->dtype == WICK_COMPLEX64) {
        float *d = (float *)p->out + r * n2;
        for (int64_t i = 0; i < n2; i++) d[i] = (float)x[i];
    } else {
        memcpy((double *)p->out + r * n2, x, sizeof(double) * (size_t)n2);
    }
}

/* a *= b, pairs of n complex numbers; conj_out: the conjugate of the product */
WK_SIMD static void multiply(double *a, const double *b, int64_t n, double scale, int conj_out) {
    double sign = conj_out ? -1 : 1;
    for (int64_t k = 0; k < n; k++) {
        double r = a[2 * k] * b[2 * k] - a[2 * k + 1] * b[2 * k + 1];
        double i = a[2 * k] * b[2 * k + 1] + a[2 * k + 1] * b[2 * k];
        a[2 * k] = scale * r, a[2 * k + 1] = sign * scale * i;
    }
}

/* x (the plan's n points, in a work space of m) transformed in place:
 * X[k] = sum_j x[j] w^(jk); Bluestein writes jk = (j^2 + k^2 - (k - j)^2) / 2,
 * a convolution of x[j] chirp[j] with the conjugate chirp, done as
 * conj(F(conj(F(a) F(b)))) / m */
static void transform(const fft_plan *p, double *x) {
    if (!p->chirp) {
        radix2(x, p->m, p->twiddle);
        return;
    }
    multiply(x, p->chirp, p->n, 1, 0);
    memset(x + 2 * p->n, 0, sizeof(double) * (size_t)(2 * (p->m - p->n)));
    radix2(x, p->m, p->twiddle);
    multiply(x, p->filter, p->m, 1, 1);
    radix2(x, p->m, p->twiddle);
    for (int64_t k = 0; k < p->n; k++) x[2 * k + 1] = -x[2 * k + 1]; /* conj */
    multiply(x, p->chirp, p->n, 1.0 / (double)p->m, 0);
}

static void transform_row(const fft_plan *p, int64_t r, double *x) {
    load_row(p, r, x);
    transform(p, x);
    store_row(p, r, x);
}

static void fft_rows(void *ctx, int64_t begin, int64_t end) {
    const fft_plan *p = ctx;
    size_t bytes = sizeof(double) * 2 * (size_t)p->m;
    double *x = wk_malloc(bytes);
    if (!x) {
        __atomic_store_n(p->out_of_memory, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t r = begin; r < end; r++) transform_row(p, r, x);
    wk_free(x, bytes);
}

static void fill_twiddles(double *t, int64_t m, int sign) {
    for (int64_t h = 1; h < m; h <<= 1)
        for (int64_t k = 0; k < h; k++) {
            double a = M_PI * (double)k / (double)h;
            t[2 * (h - 1 + k)] = cos(a), t[2 * (h - 1 + k) + 1] = sign * sin(a);
        }
}

/* the chirp and the filter of Bluestein's transform (twiddles made) */
static void bluestein_tables(fft_plan *p, int sign) {
    int64_t n = p->n;
    for (int64_t k = 0; k < n; k++) {
        /* k^2 mod 2n keeps the angle small and exact (pi k^2 / n is periodic in 2n) */
        int64_t q = (int64_t)(((unsigned __int128)k * (unsigned __int128)k) % (unsigned __int128)(2 * n));
        double a = M_PI * (double)q / (double)n;
        p->chirp[2 * k] = cos(a), p->chirp[2 * k + 1] = sign * sin(a);
    }
    memset(p->filter, 0, sizeof(double) * 2 * (size_t)p->m);
    for (int64_t k = 0; k < n; k++) { /* conj(chirp) at k and at m - k */
        p->filter[2 * k] = p->chirp[2 * k], p->filter[2 * k + 1] = -p->chirp[2 * k + 1];
        if (k) p->filter[2 * (p->m - k)] = p->filter[2 * k], p->filter[2 * (p->m - k) + 1] = p->filter[2 * k + 1];
    }
    radix2(p->filter, p->m, p->twiddle);
}

wick_status cpu_fft(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n, int sign) {
    if (rows == 0) return WICK_OK;
    size_t elem = wick_dtype_size(dtype);
    if (n <= 1) { /* a 1-point transform is the identity */
        if (in != out) memcpy(out, in, elem * (size_t)(rows * n));
        return WICK_OK;
    }
    sign = sign < 0 ? -1 : 1;
    int oom = 0;
    fft_plan p = {n, n, NULL, NULL, NULL, dtype, in, out, &oom};
    if (!is_pow2(n)) {
        p.m = 1;
        while (p.m < 2 * n - 1) p.m <<= 1;
    }
    bool blue = p.m != n;
    size_t tw_bytes = sizeof(double) * 2 * (size_t)p.m, n_bytes = sizeof(double) * 2 * (size_t)n,
           m_bytes = sizeof(double) * 2 * (size_t)p.m;
    p.twiddle = wk_malloc(tw_bytes);
    if (blue) {
        p.chirp = wk_malloc(n_bytes);
        p.filter = wk_malloc(m_bytes);
    }
    wick_status st = WICK_OK;
    if (!p.twiddle || (blue && (!p.chirp || !p.filter))) {
        st = wick_fail(WICK_ERR_OOM, "fft: out of memory for a %" PRId64 "-point transform", n);
        goto done;
    }
    fill_twiddles(p.twiddle, p.m, sign);
    if (blue) bluestein_tables(&p, sign);
    st = wk_parallel_for(rows, 1 + 32768 / (n + 1), fft_rows, &p);
    if (!st && __atomic_load_n(&oom, __ATOMIC_RELAXED)) /* (some rows were not written) */
        st = wick_fail(WICK_ERR_OOM, "fft: out of memory for the work space of a %" PRId64 "-point transform", n);
done:
    wk_free(p.twiddle, tw_bytes);
    if (blue) {
        wk_free(p.chirp, n_bytes);
        wk_free(p.filter, m_bytes);
    }
    return st;
}

/* ---- real signals: rfft, and irfft back ---- */

typedef struct {
    fft_plan half;    /* the n/2-point complex transform of the packed pairs */
    const double *w;  /* e^(sign 2 pi i k / n), k <= n/2 */
    wick_dtype dtype; /* float32 or float64 */
    const char *in;
    char *out;
    int64_t n;
    int inverse; /* irfft_row, else rfft_row */
} real_plan;

/* z[j] = x[2j] + i x[2j+1] transformed (Z), then X[k] = E[k] + w^k O[k] with
 * E = (Z[k] + conj Z[N-k]) / 2 and O = (Z[k] - conj Z[N-k]) / 2i, N = n/2 */
static void rfft_row(const real_plan *p, int64_t r, double *x) {
    int64_t n = p->n, h = n / 2;
    if (p->dtype == WICK_FLOAT32) {
        const float *s = (const float *)p->in + r * n;
        for (int64_t i = 0; i < n; i++) x[i] = s[i];
    } else {
        memcpy(x, (const double *)p->in + r * n, sizeof(double) * (size_t)n);
    }
    transform(&p->half, x);
    bool single = p->dtype == WICK_FLOAT32;
    float *of = (float *)p->out + r * 2 * (h + 1);
    double *od = (double *)p->out + r * 2 * (h + 1);
    for (int64_t k = 0; k <= h; k++) {
        int64_t a = k % h, b = (h - k) % h; /* Z[N] is Z[0] */
        double zr = x[2 * a], zi = x[2 * a + 1], cr = x[2 * b], ci = -x[2 * b + 1];
        double er = 0.5 * (zr + cr), ei = 0.5 * (zi + ci);
        double dr = 0.5 * (zr - cr), di = 0.5 * (zi - ci); /* O = d / i = (di, -dr) */
        double orr = di, oi = -dr, wr = p->w[2 * k], wi = p->w[2 * k + 1];
        double xr = er + wr * orr - wi * oi, xi = ei + wr * oi + wi * orr;
        if (single) of[2 * k] = (float)xr, of[2 * k + 1] = (float)xi;
        else od[2 * k] = xr, od[2 * k + 1] = xi;
    }
}

/* x (n = 2N real points) from X[0..N]: Z[k] = (X[k] + conj X[N-k]) + i e^(2 pi i k / n) (X[k] - conj X[N-k]),
 * z = the N-point inverse transform of Z, x[2j] = re z[j], x[2j+1] = im z[j];
 * the imaginary parts of X[0] and X[N], which no real signal has, are taken as 0 */
static void irfft_row(const real_plan *p, int64_t r, double *x) {
    int64_t n = p->n, h = n / 2;
    double *X = x + 2 * p->half.m; /* the row's N + 1 input points */
    if (p->dtype == WICK_FLOAT32) {
        const float *s = (const float *)p->in + r * 2 * (h + 1);
        for (int64_t i = 0; i < 2 * (h + 1); i++) X[i] = s[i];
    } else {
        memcpy(X, (const double *)p->in + r * 2 * (h + 1), sizeof(double) * 2 * (size_t)(h + 1));
    }
    X[1] = 0, X[2 * h + 1] = 0;
    for (int64_t k = 0; k < h; k++) {
        double ar = X[2 * k], ai = X[2 * k + 1], br = X[2 * (h - k)], bi = -X[2 * (h - k) + 1]; /* conj X[N-k] */
        double sr = ar + br, si = ai + bi, dr = ar - br, di = ai - bi;
        double wr = p->w[2 * k], wi = p->w[2 * k + 1]; /* e^(+2 pi i k / n) */
        double tr = wr * dr - wi * di, ti = wr * di + wi * dr; /* w d, then times i: (-ti, tr) */
        x[2 * k] = sr - ti, x[2 * k + 1] = si + tr;
    }
    transform(&p->half, x);
    if (p->dtype == WICK_FLOAT32) {
        float *d = (float *)p->out + r * n;
        for (int64_t i = 0; i < n; i++) d[i] = (float)x[i];
    } else {
        memcpy((double *)p->out + r * n, x, sizeof(double) * (size_t)n);
    }
}

static void real_rows_range(void *ctx, int64_t begin, int64_t end) {
    const real_plan *p = ctx;
    /* the transform's work space, and after it the input points of irfft_row */
    size_t bytes = sizeof(double) * 2 * (size_t)(p->half.m + p->half.n + 1);
    double *x = wk_malloc(bytes);
    if (!x) {
        __atomic_store_n(p->half.out_of_memory, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t r = begin; r < end; r++) (p->inverse ? irfft_row : rfft_row)(p, r, x);
    wk_free(x, bytes);
}

/* rfft (sign -1) or irfft (sign +1) of rows of even length n */
static wick_status real_rows(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n, int inverse) {
    if (rows == 0) return WICK_OK;
    if (n % 2 || n < 2) return wick_fail(WICK_ERR_ARGUMENT, "real transform kernel: n must be even, got %" PRId64, n);
    int64_t h = n / 2;
    int oom = 0;
    int sign = inverse ? 1 : -1;
    real_plan p = {{h, h, NULL, NULL, NULL, WICK_COMPLEX128, NULL, NULL, &oom}, NULL, dtype, in, out, n, inverse};
    if (!is_pow2(h)) {
        p.half.m = 1;
        while (p.half.m < 2 * h - 1) p.half.m <<= 1;
    }
    size_t tw_bytes = sizeof(double) * 2 * (size_t)p.half.m, w_bytes = sizeof(double) * 2 * (size_t)(h + 1),
           h_bytes = sizeof(double) * 2 * (size_t)h;
    bool blue = p.half.m != h;
    double *w = wk_malloc(w_bytes);
    p.w = w;
    p.half.twiddle = wk_malloc(tw_bytes);
    if (blue) {
        p.half.chirp = wk_malloc(h_bytes);
        p.half.filter = wk_malloc(tw_bytes);
    }
    wick_status st = WICK_OK;
    if (!w || !p.half.twiddle || (blue && (!p.half.chirp || !p.half.filter))) {
        st = wick_fail(WICK_ERR_OOM, "rfft: out of memory for a %" PRId64 "-point transform", n);
        goto done;
    }
    for (int64_t k = 0; k <= h; k++) {
        double a = 2 * M_PI * (double)k / (double)n;
        w[2 * k] = cos(a), w[2 * k + 1] = sign * sin(a);
    }
    fill_twiddles(p.half.twiddle, p.half.m, sign);
    if (blue) bluestein_tables(&p.half, sign);
    st = wk_parallel_for(rows, 1 + 32768 / (n + 1), real_rows_range, &p);
    if (!st && __atomic_load_n(&oom, __ATOMIC_RELAXED))
        st = wick_fail(WICK_ERR_OOM, "rfft: out of memory for the work space of a %" PRId64 "-point transform", n);
done:
    wk_free(w, w_bytes);
    wk_free(p.half.twiddle, tw_bytes);
    if (blue) {
        wk_free(p.half.chirp, h_bytes);
        wk_free(p.half.filter, tw_bytes);
    }
    return st;
}

wick_status cpu_rfft(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n) {
    return real_rows(dtype, in, out, rows, n, 0);
}

wick_status cpu_irfft(wick_dtype dtype, const char *in, char *out, int64_t rows, int64_t n) {
    return real_rows(dtype, in, out, rows, n, 1);
}
