/* Fused optimizer steps (src/core/optim.c, CPU loops in src/cpu/cpu_optim.c):
 * one pass over a parameter and its state instead of a chain of elementwise
 * ops. Used by lua/wick/optim.lua where they apply; it keeps the composed
 * update for every other case. */
#ifndef WICK_CORE_OPTIM_H
#define WICK_CORE_OPTIM_H

#include "internal.h"

/* Adam/AdamW's hyperparameters for one step (bias corrections from step). */
typedef struct wk_adam_hparams {
    double lr, beta1, beta2, eps, weight_decay;
    int64_t step;    /* the step number after this update, from 1 */
    int decoupled;   /* AdamW: p <- p (1 - lr wd) first; Adam: g + wd p */
} wk_adam_hparams;

/* One Adam/AdamW step in place, with PyTorch's single-tensor arithmetic
 * (torch.optim.adam._single_tensor_adam): exp_avg.lerp_(g, 1 - beta1),
 * exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2),
 * denom = sqrt(exp_avg_sq) / sqrt(bc2) + eps, p.addcdiv_(exp_avg, denom, -lr / bc1).
 * Returns 1 ("not handled", no error set) unless p, g, exp_avg and exp_avg_sq
 * are CPU tensors of one float dtype, contiguous, with as many elements; 0 when done. */
int wk_adam_step_(wick_tensor *p, const wick_tensor *g, wick_tensor *exp_avg, wick_tensor *exp_avg_sq,
                  const wk_adam_hparams *h);

/* The CPU loops (src/cpu/cpu_optim.c): n contiguous elements. */
void cpu_adam_step_f32(float *p, const float *g, float *m, float *v, int64_t n, const wk_adam_hparams *h);
void cpu_adam_step_f64(double *p, const double *g, double *m, double *v, int64_t n, const wk_adam_hparams *h);

#endif
