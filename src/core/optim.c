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

int wick_adam_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *exp_avg, wick_tensor *exp_avg_sq, double lr,
                    double beta1, double beta2, double eps, double weight_decay, int64_t step, int decoupled) {
    wk_adam_hparams h = {.lr = lr, .beta1 = beta1, .beta2 = beta2, .eps = eps, .weight_decay = weight_decay,
                         .step = step, .decoupled = decoupled};
    return adam_step(p, g, exp_avg, exp_avg_sq, &h);
}
