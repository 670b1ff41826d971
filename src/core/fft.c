/* The discrete Fourier transform along one dim, unnormalised, as three
 * differentiable ops: complex to complex (wick_fft_c2c), a real signal to its
 * non-negative frequencies (wick_fft_r2c) and back (wick_fft_c2r). A
 * backend's kernels run them (the CPU's: src/cpu/cpu_fft.c); on a backend
 * without them the complex one is the product with the DFT matrix, which is
 * also the reference the kernels are tested against, and the real ones are
 * composed on it. torch.fft's functions (norms, lengths, n dims) are built on
 * these in lua/wick/fft.lua. */
#include "autograd.h"

#include <inttypes.h>
#include <math.h>

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

/* the DFT matrix products stop here: n^2 elements of complex128 built on the host */
#define MAX_MATRIX_POINTS 8192

/* W[j][k] = e^(sign 2 pi i jk / n) of `dtype` on `dev` (symmetric) */
static wick_status dft_matrix(wick_tensor **out, int64_t n, int sign, wick_dtype dtype, wick_device dev) {
    int64_t sizes[2] = {n, n};
    wick_tensor *w;
    TRY(wk_tensor_new(&w, 2, sizes, WICK_COMPLEX128, wick_cpu()));
    double *p = (double *)wk_data(w);
    for (int64_t j = 0; j < n; j++)
        for (int64_t k = 0; k < n; k++) {
            double a = 2 * M_PI * (double)((j * k) % n) / (double)n; /* the product mod n keeps the angle exact */
            p[2 * (j * n + k)] = cos(a);
            p[2 * (j * n + k) + 1] = sign * sin(a);
        }
    wick_status st = wick_to(out, w, (wick_options){dtype, dev, 0});
    wick_tensor_release(w);
    return st;
}

/* the DFT matrix product of the rows of x (last dim n, contiguous) */
static wick_status matrix_rows(wick_tensor **out, const wick_tensor *x, int64_t n, int sign) {
    const wick_backend *be = x->storage->backend;
    if (n > MAX_MATRIX_POINTS)
        return wick_fail(WICK_ERR_UNSUPPORTED,
                         "fft: the %s backend has no FFT kernel, and a %" PRId64 "-point transform is too long for "
                         "its DFT matrix product (at most %d points): transform on the CPU (:cpu())",
                         be ? be->name : "meta", n, MAX_MATRIX_POINTS);
    wick_tensor *w;
    TRY(dft_matrix(&w, n, sign, x->dtype, x->storage->device));
    wick_status st = wick_matmul(out, x, w);
    wick_tensor_release(w);
    return st;
}

static wick_status c2c_forward(wick_tensor **out, const wick_tensor *x, int dim, int sign, bool matrix) {
    const wick_backend *be = x->storage->backend;
    int64_t n = x->sizes[dim];
    wick_tensor *c = NULL, *moved = NULL, *r = NULL;
    wick_status st;
    if (be && be->fft && !matrix) { /* the kernel, along dim of a contiguous copy */
        st = wick_contiguous(&c, (wick_tensor *)x); /* (the same tensor when it already is) */
        if (!st) st = wk_tensor_new(out, c->ndim, c->sizes, c->dtype, c->storage->device);
        if (!st && wick_tensor_numel(c) > 0) {
            int64_t outer = 1, inner = 1;
            for (int d = 0; d < dim; d++) outer *= c->sizes[d];
            for (int d = dim + 1; d < c->ndim; d++) inner *= c->sizes[d];
            st = be->fft(c->dtype, wk_data(c), wk_data(*out), outer, n, inner, sign);
            if (st) wick_tensor_release(*out);
        }
        wick_tensor_release(c);
        return st;
    }
    int last = x->ndim - 1; /* the matrix product: the dim moved last */
    st = wick_transpose(&moved, (wick_tensor *)x, dim, last);
    if (!st) st = wick_contiguous(&c, moved);
    if (!st && wick_tensor_numel(c) > 0) st = matrix_rows(&r, c, n, sign);
    else if (!st) st = wick_clone(&r, c);
    if (!st) st = wick_transpose(out, r, dim, last);
    wick_tensor_release(moved);
    wick_tensor_release(c);
    wick_tensor_release(r);
    return st;
}

/* The gradient of y = F x for PyTorch's convention is F^H g: F is symmetric,
 * so F^H is the transform of the other sign. */
static wick_status c2c_backward(wk_node *n, wick_tensor *g, wick_tensor **grads) {
    return wick_fft_c2c(&grads[0], g, n->ints[0], -n->ints[1]);
}

static wick_status c2c(wick_tensor **out, const wick_tensor *x, int dim, int sign, bool matrix) {
    const char *names[1] = {"input"};
    TRY(wk_check_same_device_any("fft", 1, &x, names));
    if (!wick_dtype_is_complex(x->dtype))
        return wick_fail(WICK_ERR_DTYPE, "fft: expected a complex tensor, got %s (wick.fft converts real ones)",
                         wick_dtype_name(x->dtype));
    if (x->ndim == 0) return wick_fail(WICK_ERR_SHAPE, "fft: expected a tensor with at least one dimension");
    TRY(wk_wrap_dim("fft", &dim, x->ndim));
    if (sign != 1 && sign != -1) return wick_fail(WICK_ERR_ARGUMENT, "fft: sign must be -1 or 1, got %d", sign);
    if (x->sizes[dim] < 1)
        return wick_fail(WICK_ERR_SHAPE, "fft: Invalid number of data points (%" PRId64 ") specified", x->sizes[dim]);
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = c2c_forward(&r, x, dim, sign, matrix));
    if (st) return st;
    if (!wk_wants_grad(1, &x)) return *out = r, WICK_OK;
    wk_node *node = NULL;
    st = wk_record(r, sign < 0 ? "FftC2CBackward0" : "FftC2CInverseBackward0", c2c_backward, 0, 1, &x, &node);
    if (!st) node->ints[0] = dim, node->ints[1] = sign, node->twice = true; /* (the other transform) */
    return wk_publish(out, r, st);
}

wick_status wick_fft_c2c(wick_tensor **out, const wick_tensor *x, int dim, int sign) {
    return c2c(out, x, dim, sign, false);
}
wick_status wick_dft_c2c(wick_tensor **out, const wick_tensor *x, int dim, int sign) {
    return c2c(out, x, dim, sign, true);
}

/* ---- real signals: the non-negative frequencies ---- */

/* y = the first n/2 + 1 points of F x for a real x: the gradient is
 * Re(F^H g'), g' the gradient zero-padded to n points */
static wick_status r2c_backward(wk_node *node, wick_tensor *g, wick_tensor **grads) {
    int dim = node->ints[0];
    int64_t sizes[WICK_MAX_DIMS];
    memcpy(sizes, g->sizes, sizeof(int64_t) * (size_t)g->ndim);
    sizes[dim] = node->sizes[0];
    wick_tensor *full = NULL, *part = NULL, *t = NULL, *re = NULL;
    wick_status st = wick_full(&full, g->ndim, sizes, 0, (wick_options){g->dtype, g->storage->device, 0});
    if (!st) st = wick_narrow(&part, full, dim, 0, g->sizes[dim]);
    if (!st) st = wick_copy_(part, g);
    if (!st) st = wick_fft_c2c(&t, full, dim, 1);
    if (!st) st = wick_real(&re, t);
    if (!st) st = wick_contiguous(&grads[0], re);
    wick_tensor_release(full);
    wick_tensor_release(part);
    wick_tensor_release(t);
    wick_tensor_release(re);
    return st;
}

/* the rows of c (contiguous, last dim n) into *out, n/2 + 1 points each */
static wick_status r2c_rows(wick_tensor **out, wick_tensor *c, int64_t n) {
    const wick_backend *be = c->storage->backend;
    int last = c->ndim - 1;
    int64_t sizes[WICK_MAX_DIMS];
    memcpy(sizes, c->sizes, sizeof(int64_t) * (size_t)c->ndim);
    sizes[last] = n / 2 + 1;
    if (be && be->rfft && n % 2 == 0 && wick_tensor_numel(c) > 0) {
        TRY(wk_tensor_new(out, c->ndim, sizes, wk_complex_of(c->dtype), c->storage->device));
        wick_status st = be->rfft(c->dtype, wk_data(c), wk_data(*out), wick_tensor_numel(c) / n, n);
        if (st) wick_tensor_release(*out);
        return st;
    }
    /* else as a complex signal (an odd n, a backend without the kernel) */
    wick_tensor *z = NULL, *y = NULL;
    wick_status st = wick_to(&z, c, (wick_options){wk_complex_of(c->dtype), c->storage->device, 0});
    if (!st) st = c2c_forward(&y, z, last, -1, false);
    if (!st) st = wick_narrow(out, y, last, 0, sizes[last]);
    wick_tensor_release(z);
    wick_tensor_release(y);
    return st;
}

static wick_status r2c_forward(wick_tensor **out, const wick_tensor *x, int dim) {
    int last = x->ndim - 1;
    wick_tensor *moved = NULL, *c = NULL, *r = NULL;
    wick_status st = wick_transpose(&moved, (wick_tensor *)x, dim, last);
    if (!st) st = wick_contiguous(&c, moved);
    if (!st) st = r2c_rows(&r, c, x->sizes[dim]);
    if (!st) st = wick_transpose(out, r, dim, last);
    wick_tensor_release(moved);
    wick_tensor_release(c);
    wick_tensor_release(r);
    return st;
}

wick_status wick_fft_r2c(wick_tensor **out, const wick_tensor *x, int dim) {
    const char *names[1] = {"input"};
    TRY(wk_check_same_device("rfft", 1, &x, names));
    if (x->dtype != WICK_FLOAT32 && x->dtype != WICK_FLOAT64)
        return wick_fail(WICK_ERR_DTYPE, "rfft: expected a float32 or float64 tensor, got %s (wick.fft converts others)",
                         wick_dtype_name(x->dtype));
    if (x->ndim == 0) return wick_fail(WICK_ERR_SHAPE, "rfft: expected a tensor with at least one dimension");
    TRY(wk_wrap_dim("rfft", &dim, x->ndim));
    if (x->sizes[dim] < 1)
        return wick_fail(WICK_ERR_SHAPE, "rfft: Invalid number of data points (%" PRId64 ") specified", x->sizes[dim]);
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = r2c_forward(&r, x, dim));
    if (st) return st;
    if (!wk_wants_grad(1, &x)) return *out = r, WICK_OK;
    wk_node *node = NULL;
    st = wk_record(r, "FftR2CBackward0", r2c_backward, 0, 1, &x, &node);
    if (!st) node->ints[0] = dim, node->sizes[0] = x->sizes[dim], node->twice = true; /* (recorded ops) */
    return wk_publish(out, r, st);
}

/* ---- real signals from their non-negative frequencies ---- */

/* a 1-D host array as a tensor of dtype on dev, shaped to broadcast along dim of ndim */
static wick_status along(wick_tensor **out, const double *v, int64_t n, int dim, int ndim, wick_dtype dtype,
                         wick_device dev) {
    int64_t sizes[WICK_MAX_DIMS];
    for (int i = 0; i < ndim; i++) sizes[i] = i == dim ? n : 1;
    return wick_from_doubles(out, ndim, sizes, v, (wick_options){dtype, dev, 0});
}

/* x = C2R(X), n points from n/2 + 1: x[t] = sum_k c_k re(X[k] e^(2 pi i kt / n)),
 * c_k 1 at 0 and n/2, else 2; the gradient of X is c_k rfft(g)[k] */
static wick_status c2r_backward(wk_node *node, wick_tensor *g, wick_tensor **grads) {
    int dim = node->ints[0];
    int64_t n = node->sizes[0], h = n / 2 + 1;
    double *c = wk_malloc(sizeof(double) * (size_t)h);
    if (!c) return wick_fail(WICK_ERR_OOM, "irfft backward: out of memory");
    for (int64_t k = 0; k < h; k++) c[k] = k == 0 || 2 * k == n ? 1 : 2;
    wick_tensor *r = NULL, *w = NULL;
    wick_status st = wick_fft_r2c(&r, g, dim);
    if (!st) st = along(&w, c, h, dim, g->ndim, g->dtype, g->storage->device);
    if (!st) st = wick_binary(&grads[0], WICK_MUL, r, w);
    wk_free(c, sizeof(double) * (size_t)h);
    wick_tensor_release(r);
    wick_tensor_release(w);
    return st;
}

/* without the kernel: the whole spectrum (X[n - k] = conj X[k]) transformed, its real part */
static wick_status c2r_composed(wick_tensor **out, wick_tensor *c, int64_t n) {
    int last = c->ndim - 1;
    int64_t h = c->sizes[last], mirrored = n - h, sizes[WICK_MAX_DIMS];
    memcpy(sizes, c->sizes, sizeof(int64_t) * (size_t)c->ndim);
    sizes[last] = n;
    int64_t *pos = wk_malloc(sizeof(int64_t) * (size_t)(mirrored > 0 ? mirrored : 1));
    if (!pos) return wick_fail(WICK_ERR_OOM, "irfft: out of memory");
    for (int64_t k = 0; k < mirrored; k++) pos[k] = n - (h + k); /* X[n - k] for k = h .. n - 1 */
    wick_tensor *whole = NULL, *part = NULL, *idx = NULL, *picked = NULL, *conj = NULL, *y = NULL, *re = NULL;
    wick_status st = wick_full(&whole, c->ndim, sizes, 0, (wick_options){c->dtype, c->storage->device, 0});
    if (!st) st = wick_narrow(&part, whole, last, 0, h);
    if (!st) st = wick_copy_(part, c);
    if (!st && mirrored > 0) {
        wick_tensor_release(part), part = NULL;
        st = wick_from_int64(&idx, 1, &mirrored, pos, (wick_options){WICK_INT64, c->storage->device, 0});
        if (!st) st = wick_index_select(&picked, c, last, idx);
        if (!st) st = wick_conj(&conj, picked);
        if (!st) st = wick_narrow(&part, whole, last, h, mirrored);
        if (!st) st = wick_copy_(part, conj);
    }
    if (!st) st = c2c_forward(&y, whole, last, 1, false);
    if (!st) st = wick_real(&re, y);
    if (!st) st = wick_contiguous(out, re);
    wk_free(pos, sizeof(int64_t) * (size_t)(mirrored > 0 ? mirrored : 1));
    wick_tensor *all[] = {whole, part, idx, picked, conj, y, re};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) wick_tensor_release(all[i]);
    return st;
}

static wick_status c2r_forward(wick_tensor **out, const wick_tensor *x, int dim, int64_t n) {
    int last = x->ndim - 1;
    wick_tensor *moved = NULL, *c = NULL, *r = NULL;
    wick_status st = wick_transpose(&moved, (wick_tensor *)x, dim, last);
    if (!st) st = wick_contiguous(&c, moved);
    const wick_backend *be = c ? c->storage->backend : NULL;
    if (!st && be && be->irfft && n % 2 == 0 && wick_tensor_numel(c) > 0) {
        int64_t sizes[WICK_MAX_DIMS];
        memcpy(sizes, c->sizes, sizeof(int64_t) * (size_t)c->ndim);
        sizes[last] = n;
        wick_dtype part = wk_complex_part(c->dtype);
        st = wk_tensor_new(&r, c->ndim, sizes, part, c->storage->device);
        if (!st) st = be->irfft(part, wk_data(c), wk_data(r), wick_tensor_numel(c) / c->sizes[last], n);
    } else if (!st) {
        st = c2r_composed(&r, c, n);
    }
    if (!st) st = wick_transpose(out, r, dim, last);
    wick_tensor_release(moved);
    wick_tensor_release(c);
    wick_tensor_release(r);
    return st;
}

wick_status wick_fft_c2r(wick_tensor **out, const wick_tensor *x, int dim, int64_t n) {
    const char *names[1] = {"input"};
    TRY(wk_check_same_device_any("irfft", 1, &x, names));
    if (!wick_dtype_is_complex(x->dtype))
        return wick_fail(WICK_ERR_DTYPE, "irfft: expected a complex tensor, got %s", wick_dtype_name(x->dtype));
    if (x->ndim == 0) return wick_fail(WICK_ERR_SHAPE, "irfft: expected a tensor with at least one dimension");
    TRY(wk_wrap_dim("irfft", &dim, x->ndim));
    if (n < 1) return wick_fail(WICK_ERR_SHAPE, "irfft: Invalid number of data points (%" PRId64 ") specified", n);
    if (x->sizes[dim] != n / 2 + 1)
        return wick_fail(WICK_ERR_SHAPE, "irfft: expected %" PRId64 " points (n / 2 + 1) along dimension %d for n = %" PRId64
                                         ", got %" PRId64,
                         n / 2 + 1, dim + 1, n, x->sizes[dim]);
    wick_tensor *r = NULL;
    wick_status st;
    WK_NO_GRAD(st = c2r_forward(&r, x, dim, n));
    if (st) return st;
    if (!wk_wants_grad(1, &x)) return *out = r, WICK_OK;
    wk_node *node = NULL;
    st = wk_record(r, "FftC2RBackward0", c2r_backward, 0, 1, &x, &node);
    if (!st) node->ints[0] = dim, node->sizes[0] = n, node->twice = true; /* (recorded ops) */
    return wk_publish(out, r, st);
}
