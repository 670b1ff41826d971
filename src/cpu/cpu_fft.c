/* Discrete Fourier transforms along the rows of a contiguous complex tensor,
 * in double precision whatever the dtype: an iterative radix-2 Cooley-Tukey
 * transform when n is a power of two, Bluestein's chirp-z transform (three
 * radix-2 transforms of a power of two >= 2n - 1) for every other n, so any
 * length costs O(n log n). The core's DFT matrix product (src/core/fft.c) is
 * the reference these are tested against. */
#include "cpu.h"

#include <complex.h>
#include <inttypes.h>
#include <math.h>

typedef double complex cplx;

/* The transform of one plan: n points, sign -1 (forward) or +1 (inverse). */
typedef struct {
    int64_t n, m;     /* m: the radix-2 length (n itself, or Bluestein's) */
    int sign;
    cplx *twiddle;    /* m/2 roots e^(sign 2 pi i k / m) */
    cplx *chirp;      /* Bluestein: e^(sign pi i k^2 / n), k < n */
    cplx *filter;     /* Bluestein: the transform of the conjugate chirp, wrapped to m */
    wick_dtype dtype; /* complex64 or complex128 */
    char *data;
    int64_t rows;
    int *out_of_memory; /* set (atomically) by a piece that could not get its work space */
} fft_plan;

static bool is_pow2(int64_t n) { return n > 0 && (n & (n - 1)) == 0; }

/* x (m points, m a power of two) transformed in place with the plan's twiddles */
static void radix2(cplx *x, int64_t m, const cplx *tw) {
    for (int64_t i = 1, j = 0; i < m; i++) { /* bit-reversed order */
        int64_t bit = m >> 1;
        for (; j & bit; bit >>= 1) j ^= bit;
        j |= bit;
        if (i < j) {
            cplx t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
    for (int64_t len = 2; len <= m; len <<= 1) {
        int64_t half = len / 2, step = m / len;
        for (int64_t i = 0; i < m; i += len)
            for (int64_t k = 0; k < half; k++) {
                cplx u = x[i + k], v = x[i + k + half] * tw[k * step];
                x[i + k] = u + v;
                x[i + k + half] = u - v;
            }
    }
}

static void load_row(const fft_plan *p, int64_t r, cplx *x) {
    if (p->dtype == WICK_COMPLEX64) {
        const float *s = (const float *)p->data + 2 * r * p->n;
        for (int64_t i = 0; i < p->n; i++) x[i] = CMPLX(s[2 * i], s[2 * i + 1]);
    } else {
        const double *s = (const double *)p->data + 2 * r * p->n;
        for (int64_t i = 0; i < p->n; i++) x[i] = CMPLX(s[2 * i], s[2 * i + 1]);
    }
}

static void store_row(const fft_plan *p, int64_t r, const cplx *x) {
    if (p->dtype == WICK_COMPLEX64) {
        float *d = (float *)p->data + 2 * r * p->n;
        for (int64_t i = 0; i < p->n; i++) d[2 * i] = (float)creal(x[i]), d[2 * i + 1] = (float)cimag(x[i]);
    } else {
        double *d = (double *)p->data + 2 * r * p->n;
        for (int64_t i = 0; i < p->n; i++) d[2 * i] = creal(x[i]), d[2 * i + 1] = cimag(x[i]);
    }
}

/* one row: X[k] = sum_j x[j] w^(jk); Bluestein writes jk = (j^2 + k^2 - (k - j)^2) / 2,
 * a convolution of x[j] chirp[j] with the conjugate chirp */
static void transform_row(const fft_plan *p, int64_t r, cplx *x) {
    load_row(p, r, x);
    if (!p->chirp) {
        radix2(x, p->m, p->twiddle);
    } else {
        for (int64_t j = 0; j < p->n; j++) x[j] *= p->chirp[j];
        for (int64_t j = p->n; j < p->m; j++) x[j] = 0;
        radix2(x, p->m, p->twiddle);
        for (int64_t j = 0; j < p->m; j++) x[j] = conj(x[j] * p->filter[j]); /* the inverse as conj(F(conj)) */
        radix2(x, p->m, p->twiddle);
        for (int64_t k = 0; k < p->n; k++) x[k] = conj(x[k]) / (double)p->m * p->chirp[k];
    }
    store_row(p, r, x);
}

static void fft_rows(void *ctx, int64_t begin, int64_t end) {
    const fft_plan *p = ctx;
    cplx *x = wk_malloc(sizeof(cplx) * (size_t)p->m);
    if (!x) {
        __atomic_store_n(p->out_of_memory, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t r = begin; r < end; r++) transform_row(p, r, x);
    wk_free(x, sizeof(cplx) * (size_t)p->m);
}

wick_status cpu_fft(wick_dtype dtype, char *data, int64_t rows, int64_t n, int sign) {
    if (rows == 0 || n <= 1) return WICK_OK; /* a 1-point transform is the identity */
    int oom = 0;
    fft_plan p = {n, n, sign < 0 ? -1 : 1, NULL, NULL, NULL, dtype, data, rows, &oom};
    if (!is_pow2(n)) {
        p.m = 1;
        while (p.m < 2 * n - 1) p.m <<= 1;
    }
    size_t tw_bytes = sizeof(cplx) * (size_t)(p.m / 2), n_bytes = sizeof(cplx) * (size_t)n,
           m_bytes = sizeof(cplx) * (size_t)p.m;
    bool blue = p.m != n;
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
    for (int64_t k = 0; k < p.m / 2; k++) {
        double a = 2 * M_PI * (double)k / (double)p.m;
        p.twiddle[k] = CMPLX(cos(a), p.sign * sin(a));
    }
    if (blue) {
        for (int64_t k = 0; k < n; k++) {
            /* k^2 mod 2n keeps the angle small and exact (pi k^2 / n is periodic in 2n) */
            int64_t q = (int64_t)(((unsigned __int128)k * (unsigned __int128)k) % (unsigned __int128)(2 * n));
            double a = M_PI * (double)q / (double)n;
            p.chirp[k] = CMPLX(cos(a), p.sign * sin(a));
        }
        for (int64_t j = 0; j < p.m; j++) p.filter[j] = 0;
        p.filter[0] = conj(p.chirp[0]);
        for (int64_t k = 1; k < n; k++) p.filter[k] = p.filter[p.m - k] = conj(p.chirp[k]);
        radix2(p.filter, p.m, p.twiddle);
    }
    st = wk_parallel_for(rows, 1 + 32768 / (n + 1), fft_rows, &p);
    if (!st && __atomic_load_n(&oom, __ATOMIC_RELAXED)) /* (some rows were left as they were) */
        st = wick_fail(WICK_ERR_OOM, "fft: out of memory for the work space of a %" PRId64 "-point transform", n);
done:
    wk_free(p.twiddle, tw_bytes);
    if (blue) {
        wk_free(p.chirp, n_bytes);
        wk_free(p.filter, m_bytes);
    }
    return st;
}
