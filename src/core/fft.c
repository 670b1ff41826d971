/* The discrete Fourier transform along one dim of a complex tensor,
 * unnormalised, as one differentiable op. A backend's fft kernel runs it
 * (the CPU's: src/cpu/cpu_fft.c); on a backend without one it is the product
 * with the DFT matrix, which is also the reference the kernels are tested
 * against. torch.fft's functions (norms, lengths, real signals) are composed
 * on it in lua/wick/fft.lua. */
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

/* the transform of the rows of x (last dim n, contiguous) into *out: the
 * backend's kernel unless `matrix` */
static wick_status transform_rows(wick_tensor **out, const wick_tensor *x, int64_t n, int sign, bool matrix) {
    const wick_backend *be = x->storage->backend;
    if (be && be->fft && !matrix) {
        TRY(wk_tensor_new(out, x->ndim, x->sizes, x->dtype, x->storage->device));
        wick_status st = be->fft(x->dtype, wk_data(x), wk_data(*out), wick_tensor_numel(x) / n, n, sign);
        if (st) wick_tensor_release(*out);
        return st;
    }
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
    int last = x->ndim - 1;
    int64_t n = x->sizes[dim];
    wick_tensor *moved = NULL, *c = NULL, *r = NULL;
    wick_status st = wick_transpose(&moved, (wick_tensor *)x, dim, last);
    if (!st) st = wick_contiguous(&c, moved); /* (the same tensor when it already is) */
    if (!st && wick_tensor_numel(c) > 0) st = transform_rows(&r, c, n, sign, matrix);
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
    if (!st) node->ints[0] = dim, node->ints[1] = sign;
    return wk_publish(out, r, st);
}

wick_status wick_fft_c2c(wick_tensor **out, const wick_tensor *x, int dim, int sign) {
    return c2c(out, x, dim, sign, false);
}
wick_status wick_dft_c2c(wick_tensor **out, const wick_tensor *x, int dim, int sign) {
    return c2c(out, x, dim, sign, true);
}
