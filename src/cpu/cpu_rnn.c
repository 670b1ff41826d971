/* The fused recurrent layer's step kernels on the CPU: the element math of
 * src/core/rnn.h over the B x H elements of a step, rows split among threads
 * when a step is large. The time loop and the products are the core's
 * (src/core/rnn.c). */
#include "cpu.h"

#include "../core/rnn.h"

WK_RNN_ELEMENT(f, float, expf, tanhf)
WK_RNN_ELEMENT(d, double, exp, tanh)

/* Rows per task: a few thousand elements each. */
static int64_t grain(const wk_rnn_args *a) { return a->H >= 4096 ? 1 : 4096 / a->H; }

static void fwd_rows(void *ctx, int64_t b0, int64_t b1) {
    const wk_rnn_args *a = ctx;
    for (int64_t b = b0; b < b1; b++)
        if (a->dtype == WICK_FLOAT32)
            for (int64_t j = 0; j < a->H; j++) wk_rnn_fwd_f(a, b, j);
        else
            for (int64_t j = 0; j < a->H; j++) wk_rnn_fwd_d(a, b, j);
}

static void bwd_rows(void *ctx, int64_t b0, int64_t b1) {
    const wk_rnn_args *a = ctx;
    for (int64_t b = b0; b < b1; b++)
        if (a->dtype == WICK_FLOAT32)
            for (int64_t j = 0; j < a->H; j++) wk_rnn_bwd_f(a, b, j);
        else
            for (int64_t j = 0; j < a->H; j++) wk_rnn_bwd_d(a, b, j);
}

wick_status cpu_rnn_step(const wk_rnn_args *a) { return wk_parallel_for(a->B, grain(a), fwd_rows, (void *)a); }

wick_status cpu_rnn_step_backward(const wk_rnn_args *a) {
    return wk_parallel_for(a->B, grain(a), bwd_rows, (void *)a);
}
