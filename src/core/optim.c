/* Fused optimizer steps: the checks that pick the fused loop (see optim.h). */
#include "optim.h"

static bool fused_operand(const wick_tensor *t, const wick_tensor *p) {
    return t && t->storage->device.type == WICK_CPU && t->dtype == p->dtype && wick_tensor_is_contiguous(t) &&
           wick_tensor_numel(t) == wick_tensor_numel(p);
}

int wk_adam_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *exp_avg, wick_tensor *exp_avg_sq,
                  const wk_adam_hparams *h) {
    if (!p || (p->dtype != WICK_FLOAT32 && p->dtype != WICK_FLOAT64) || !fused_operand(p, p) ||
        !fused_operand(g, p) || !fused_operand(exp_avg, p) || !fused_operand(exp_avg_sq, p) || h->step < 1)
        return 1;
    /* the state is the optimizer's own; a parameter sharing memory with it or its
     * gradient is not a case the loop's single pass gets right */
    if (p->storage == exp_avg->storage || p->storage == exp_avg_sq->storage || p->storage == g->storage ||
        exp_avg->storage == exp_avg_sq->storage || g->storage == exp_avg->storage || g->storage == exp_avg_sq->storage)
        return 1;
    int64_t n = wick_tensor_numel(p);
    if (p->dtype == WICK_FLOAT32)
        cpu_adam_step_f32((float *)wk_data(p), (const float *)wk_data(g), (float *)wk_data(exp_avg),
                          (float *)wk_data(exp_avg_sq), n, h);
    else
        cpu_adam_step_f64((double *)wk_data(p), (const double *)wk_data(g), (double *)wk_data(exp_avg),
                          (double *)wk_data(exp_avg_sq), n, h);
    wk_bump_version(p);
    wk_bump_version(exp_avg);
    wk_bump_version(exp_avg_sq);
    return 0;
}
