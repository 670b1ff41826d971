/* Fused optimizer steps: the checks that pick the fused loop (see optim.h). */
#include "optim.h"

static bool fused_operand(const wick_tensor *t, const wick_tensor *p) {
    return t && wick_device_equal(t->storage->device, p->storage->device) && t->dtype == p->dtype &&
           wick_tensor_is_contiguous(t) && wick_tensor_numel(t) == wick_tensor_numel(p);
}

static int adam_step(wick_tensor *p, const wick_tensor *g, wick_tensor *exp_avg, wick_tensor *exp_avg_sq,
                     const wk_adam_hparams *h) {
    if (!p || (p->dtype != WICK_FLOAT32 && p->dtype != WICK_FLOAT64) || !fused_operand(p, p) ||
        !fused_operand(g, p) || !fused_operand(exp_avg, p) || !fused_operand(exp_avg_sq, p) || h->step < 1)
        return 1;
    /* the state is the optimizer's own; a parameter sharing memory with it or its
     * gradient is not a case the loop's single pass gets right */
    if (p->storage == exp_avg->storage || p->storage == exp_avg_sq->storage || p->storage == g->storage ||
        exp_avg->storage == exp_avg_sq->storage || g->storage == exp_avg->storage || g->storage == exp_avg_sq->storage)
        return 1;
    const wick_backend *b = wk_backend_for(p->storage->device);
    if (!b || !b->adam_step || wk_is_meta(p)) return 1;
    b->adam_step(p->dtype, wk_data(p), wk_data(g), wk_data(exp_avg), wk_data(exp_avg_sq), wick_tensor_numel(p), h);
    wk_bump_version(p);
    wk_bump_version(exp_avg);
    wk_bump_version(exp_avg_sq);
    return 0;
}

static int sgd_step(wick_tensor *p, const wick_tensor *g, wick_tensor *buf, const wk_sgd_hparams *h) {
    bool momentum = h->momentum != 0;
    if (!p || (p->dtype != WICK_FLOAT32 && p->dtype != WICK_FLOAT64) || !fused_operand(p, p) ||
        !fused_operand(g, p) || (momentum && !fused_operand(buf, p)))
        return 1;
    if (p->storage == g->storage || (momentum && (buf->storage == p->storage || buf->storage == g->storage)))
        return 1;
    const wick_backend *b = wk_backend_for(p->storage->device);
    if (!b || !b->sgd_step || wk_is_meta(p)) return 1;
    b->sgd_step(p->dtype, wk_data(p), wk_data(g), momentum ? wk_data(buf) : NULL, wick_tensor_numel(p), h);
    wk_bump_version(p);
    if (momentum) wk_bump_version(buf);
    return 0;
}

static int adadelta_step(wick_tensor *p, const wick_tensor *g, wick_tensor *sq, wick_tensor *acc,
                         const wk_adadelta_hparams *h) {
    if (!p || (p->dtype != WICK_FLOAT32 && p->dtype != WICK_FLOAT64) || !fused_operand(p, p) ||
        !fused_operand(g, p) || !fused_operand(sq, p) || !fused_operand(acc, p))
        return 1;
    if (p->storage == sq->storage || p->storage == acc->storage || p->storage == g->storage ||
        sq->storage == acc->storage || g->storage == sq->storage || g->storage == acc->storage)
        return 1;
    const wick_backend *b = wk_backend_for(p->storage->device);
    if (!b || !b->adadelta_step || wk_is_meta(p)) return 1;
    b->adadelta_step(p->dtype, wk_data(p), wk_data(g), wk_data(sq), wk_data(acc), wick_tensor_numel(p), h);
    wk_bump_version(p);
    wk_bump_version(sq);
    wk_bump_version(acc);
    return 0;
}

int wick_adadelta_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *square_avg, wick_tensor *acc_delta,
                        double lr, double rho, double eps, double weight_decay, int maximize) {
    wk_adadelta_hparams h = {.lr = lr, .rho = rho, .eps = eps, .weight_decay = weight_decay, .maximize = maximize};
    return adadelta_step(p, g, square_avg, acc_delta, &h);
}

int wick_sgd_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *buf, double lr, double momentum,
                   double dampening, double weight_decay, int nesterov, int maximize, int first) {
    wk_sgd_hparams h = {.lr = lr, .momentum = momentum, .dampening = dampening, .weight_decay = weight_decay,
                        .nesterov = nesterov, .maximize = maximize, .first = first};
    return sgd_step(p, g, buf, &h);
}

int wick_adam_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *exp_avg, wick_tensor *exp_avg_sq, double lr,
                    double beta1, double beta2, double eps, double weight_decay, int64_t step, int decoupled) {
    wk_adam_hparams h = {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
                         .step = step, .decoupled = decoupled};
    return adam_step(p, g, exp_avg, exp_avg_sq, &h);
}

/* ---- GradScaler's unscale ---------------------------------------------- */

static wick_status check_amp_scalar(const char *what, const wick_tensor *t, wick_device dev) {
    if (!t || t->dtype != WICK_FLOAT32 || wick_tensor_numel(t) != 1)
        return wick_fail(WICK_ERR_ARGUMENT, "amp unscale: %s must be a one-element float32 tensor", what);
    if (!wick_device_equal(t->storage->device, dev))
        return wick_fail(WICK_ERR_DEVICE, "amp unscale: %s must be on the gradients' device", what);
    return WICK_OK;
}

/* One gradient: in place when it is contiguous float32/float64, else through a
 * float32 copy of it that is written back. */
static wick_status unscale_one(wick_tensor *g, wick_tensor *found_inf, const wick_tensor *inv_scale) {
    const wick_backend *b = wk_backend_for(g->storage->device);
    if (!b || !b->amp_unscale)
        return wick_fail(WICK_ERR_UNSUPPORTED, "amp unscale: not implemented on %s", b ? b->name : "this device");
    if (wk_is_meta(g) || wick_tensor_numel(g) == 0) return WICK_OK;
    if ((g->dtype == WICK_FLOAT32 || g->dtype == WICK_FLOAT64) && wick_tensor_is_contiguous(g)) {
        wick_status st = b->amp_unscale(g->dtype, g->storage->device.index, wk_data(g), wick_tensor_numel(g),
                                        (const float *)wk_data(inv_scale), (float *)wk_data(found_inf));
        if (!st) wk_bump_version(g);
        return st;
    }
    wick_tensor *c = NULL;
    wick_status st = wick_to(&c, g, (wick_options){WICK_FLOAT32, g->storage->device});
    if (!st && c == g) { /* a float32 view that is not contiguous */
        wick_tensor_release(c);
        c = NULL;
        st = wick_clone(&c, g);
    }
    if (!st) st = unscale_one(c, found_inf, inv_scale);
    if (!st) st = wick_copy_(g, c);
    wick_tensor_release(c);
    return st;
}

wick_status wick_amp_unscale_(int n, wick_tensor *const *grads, wick_tensor *found_inf, const wick_tensor *inv_scale) {
    if (n < 0 || (n > 0 && !grads)) return wick_fail(WICK_ERR_ARGUMENT, "amp unscale: bad gradient list");
    if (n == 0) return WICK_OK;
    for (int i = 0; i < n; i++) {
        const wick_tensor *g = grads[i];
        if (!g) return wick_fail(WICK_ERR_ARGUMENT, "amp unscale: gradient %d is missing", i + 1);
        if (!wick_dtype_is_floating(g->dtype))
            return wick_fail(WICK_ERR_DTYPE, "amp unscale: gradient %d is %s, not floating point", i + 1,
                             wick_dtype_name(g->dtype));
        if (!wick_device_equal(g->storage->device, grads[0]->storage->device))
            return wick_fail(WICK_ERR_DEVICE, "amp unscale: gradients %d and 1 are on different devices", i + 1);
    }
    wick_device dev = grads[0]->storage->device;
    wick_status st;
    if ((st = check_amp_scalar("found_inf", found_inf, dev)) || (st = check_amp_scalar("inv_scale", inv_scale, dev)))
        return st;
    int grad_mode = wick_is_grad_enabled();
    wick_set_grad_enabled(0);
    for (int i = 0; i < n && !st; i++) st = unscale_one(grads[i], found_inf, inv_scale);
    wick_set_grad_enabled(grad_mode);
    wk_bump_version(found_inf);
    return st;
}
