/* Fused optimizer steps (wick_adam_step_, src/core/optim.c; CPU loops in src/cpu/cpu_optim.c):
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

/* SGD's hyperparameters for one step (torch.optim.sgd._single_tensor_sgd). */
typedef struct wk_sgd_hparams {
    double lr, momentum, dampening, weight_decay;
    int nesterov, maximize;
    int first; /* the momentum buffer is new: buf <- g (after decay), not buf*momentum + (1-dampening) g */
} wk_sgd_hparams;

/* Adadelta's hyperparameters for one step (torch.optim.adadelta._single_tensor_adadelta). */
typedef struct wk_adadelta_hparams {
    double lr, rho, eps, weight_decay;
    int maximize;
} wk_adadelta_hparams;

/* The step itself is wick_adam_step_ (include/wick.h); backends that have it
 * fill wick_backend.adam_step (the CPU: src/cpu/cpu_optim.c); likewise
 * wick_sgd_step_ and wick_backend.sgd_step, wick_adadelta_step_ and
 * wick_backend.adadelta_step. */

#endif
