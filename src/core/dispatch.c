/* The checks every op shares, done in one place before any kernel runs:
 * the same-device rule, broadcasting, and the elementwise iterator. */
#include "internal.h"

#include <stdio.h>

static bool is_cpu_scalar(const wick_tensor *t) { return t->ndim == 0 && t->storage->device.type == WICK_CPU; }

wick_status wk_check_same_device(const char *op, int n, const wick_tensor *const *ts,
                                 const char *const *names) {
    wick_status st = wk_check_real(op, n, ts);
    return st ? st : wk_check_same_device_any(op, n, ts, names);
}

wick_status wk_check_same_device_any(const char *op, int n, const wick_tensor *const *ts,
                                     const char *const *names) {
    /* every op with tensor operands passes here first: the place to stop for Ctrl-C */
    wick_status ist = wk_check_interrupt(op);
    if (ist) return ist;
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!ts[i] || is_cpu_scalar(ts[i])) continue;
        if (first < 0) {
            first = i;
            continue;
        }
        wick_device a = ts[first]->storage->device, b = ts[i]->storage->device;
        if (!wick_device_equal(a, b)) {
            char na[32], nb[32];
            return wick_fail(WICK_ERR_DEVICE,
                             "Expected all tensors to be on the same device, but found at least two "
                             "devices, %s and %s! (when checking argument for argument %s in method %s)",
                             wick_device_format(a, na, sizeof na), wick_device_format(b, nb, sizeof nb),
                             names[i], op);
        }
    }
    return WICK_OK;
}

wick_status wk_broadcast_shapes(const char *op, int na, const int64_t *a, int nb, const int64_t *b,
                                int *nout, int64_t *out) {
    /* `out` may alias `a` or `b` (callers accumulate a shape in place): read copies */
    int64_t ca[WICK_MAX_DIMS], cb[WICK_MAX_DIMS];
    if (na) memcpy(ca, a, sizeof(int64_t) * na);
    if (nb) memcpy(cb, b, sizeof(int64_t) * nb);
    a = ca, b = cb;
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t sa = i < n - na ? 1 : a[i - (n - na)];
        int64_t sb = i < n - nb ? 1 : b[i - (n - nb)];
        if (sa != sb && sa != 1 && sb != 1) {
            char ba[WK_SHAPE_BUF], bb[WK_SHAPE_BUF];
            return wick_fail(WICK_ERR_SHAPE,
                             "%s: size mismatch: %s vs %s (the sizes %lld and %lld at dimension %d "
                             "cannot be broadcast together)",
                             op, wk_shape_str(na, a, ba, sizeof ba), wk_shape_str(nb, b, bb, sizeof bb),
                             (long long)sa, (long long)sb, i + 1);
        }
        out[i] = sa == 1 ? sb : sa;
    }
    *nout = n;
    return WICK_OK;
}

void wk_iter_init(wk_iter *it, int nops, const wick_tensor *const *ops) {
    const wick_tensor *out = ops[0];
    int n = out->ndim;
    it->device = out->storage->device.index;
    it->nops = nops;
    it->numel = wk_numel(n, out->sizes);
    it->host_values = 0;
    for (int k = 0; k < nops; k++) {
        const wick_tensor *t = ops[k];
        it->data[k] = wk_data(t);
        it->dtypes[k] = t->dtype;
        it->values[k] = 0;
        for (int i = 0; i < n; i++) {
            int j = i - (n - t->ndim);
            it->strides[k][i] = (j < 0 || t->sizes[j] == 1) ? 0 : t->strides[j];
        }
        /* a CPU scalar input of an op elsewhere: its value goes with the iterator */
        if (k > 0 && is_cpu_scalar(t) && out->storage->device.type != WICK_CPU && it->data[k]) {
            memcpy(&it->values[k], it->data[k], wk_dtype_size(t->dtype));
            it->data[k] = NULL;
            it->host_values |= 1u << k;
        }
    }
    if (it->numel == 0) { /* no element: one empty dim (the other sizes may not even multiply) */
        it->ndim = 1;
        it->sizes[0] = 0;
        for (int k = 0; k < nops; k++) it->strides[k][0] = 0;
        return;
    }
    /* drop size-1 dims and merge dims that are contiguous with each other for every
     * operand, so most loops run over one long inner dimension */
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (out->sizes[i] == 1) continue;
        if (m > 0) {
            bool merge = true;
            for (int k = 0; k < nops; k++)
                if (it->strides[k][m - 1] != it->strides[k][i] * out->sizes[i]) merge = false;
            if (merge) {
                it->sizes[m - 1] *= out->sizes[i];
                for (int k = 0; k < nops; k++) it->strides[k][m - 1] = it->strides[k][i];
                continue;
            }
        }
        it->sizes[m] = out->sizes[i];
        for (int k = 0; k < nops; k++) it->strides[k][m] = it->strides[k][i];
        m++;
    }
    if (m == 0) { /* one element */
        it->sizes[0] = 1;
        for (int k = 0; k < nops; k++) it->strides[k][0] = 0;
        m = 1;
    }
    it->ndim = m;
}
