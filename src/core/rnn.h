/* The fused recurrent layer (one layer, one direction): what the core
 * (rnn.c) gives the backends' step kernels (cpu_rnn.c, cuda_rnn.cu), and the
 * arithmetic of one (batch row, hidden unit) element of a step, shared by both.
 * Plain C, also read by nvcc.
 *
 * The core runs the time loop: per step one gemm h W_hh^T (the backend's gemm),
 * then the backend's rnn_step over the B x H elements; backward per step the
 * backend's rnn_step_backward, then one gemm dh += dgh W_hh; after the loop one
 * gemm for dW_hh over all steps. */
#ifndef WICK_RNN_H
#define WICK_RNN_H

#include "scalar_math.h" /* WK_HD */
#include "wick.h"

#include <math.h>
#include <stdint.h>

/* Workspace row width per (step, batch row), in units of H: what the forward
 * keeps for the backward. Column 0..H-1 is always the state entering the step
 * (hprev), which the dW_hh gemm reads.
 *   RNN:  hprev, hnew
 *   LSTM: hprev, cprev, i, f, g, o, tanh(c)   (gates after their activations)
 *   GRU:  hprev, r, z, n, W_hn h + b_hn */
WK_HD int wk_rnn_ws_units(int mode) {
    return mode == WICK_RNN_LSTM ? 7 : mode == WICK_RNN_GRU ? 5 : 2;
}
WK_HD int wk_rnn_gates(int mode) { return mode == WICK_RNN_LSTM ? 4 : mode == WICK_RNN_GRU ? 3 : 1; }

/* One step kernel call (forward or backward) over rows b in [0, B), units j in
 * [0, H). All pointers are contiguous data of `dtype` (float32 or float64). */
typedef struct wk_rnn_args {
    int device;
    wick_dtype dtype;
    int mode;               /* wick_rnn_mode */
    int64_t T, B, H, G, W;  /* steps, batch, hidden, G = gates * H, W = workspace units * H */
    int64_t t;              /* this call's time index */
    const int64_t *lengths; /* [B] on the device, or NULL: every row runs all T steps; row b
                               takes part in step t iff t < lengths[b] (else its state is
                               carried and its output is 0) */
    const char *gi;         /* [T, B, G]: x W_ih^T + b_ih of every step */
    const char *gh;         /* forward: [B, G], h W_hh^T of this step (no bias) */
    const char *b_hh;       /* [G] or NULL */
    char *h, *c;            /* [B, H] the state, updated in place (c: LSTM only) */
    char *ws;               /* [T, B, W] */
    char *out;              /* [T, B, H] each step's output (0 past a row's length) */
    /* backward */
    const char *gout;       /* [T, B, H] the gradient of out */
    char *dh, *dc;          /* [B, H] carried gradients of the state (in: from later steps) */
    char *dgi, *dgh;        /* [T, B, G] gradients of gi and of h W_hh^T + b_hh (the same
                               buffer for RNN and LSTM) */
} wk_rnn_args;

WK_HD int wk_rnn_valid(const int64_t *lengths, int64_t t, int64_t b) { return !lengths || t < lengths[b]; }

/* The element math, once per compute type: WK_RNN_ELEMENT(suffix, T, exp, tanh). */
#define WK_RNN_ELEMENT(SFX, T, EXP, TANH)                                                         \
    WK_HD T wk_rnn_sigmoid_##SFX(T x) { return (T)1 / ((T)1 + EXP(-x)); }                        \
    /* forward of element (b, j) of step t */                                                     \
    WK_HD void wk_rnn_fwd_##SFX(const wk_rnn_args *a, int64_t b, int64_t j) {                    \
        const int64_t H = a->H, G = a->G, row = a->t * a->B + b;                                   \
        const T *gi = (const T *)a->gi + row * G, *gh = (const T *)a->gh + b * G;                  \
        const T *bh = (const T *)a->b_hh;                                                          \
        T *h = (T *)a->h + b * H + j, *ws = (T *)a->ws + row * a->W, *out = (T *)a->out + row * H + j; \
        const T hp = *h;                                                                           \
        ws[j] = hp;                                                                                \
        if (!wk_rnn_valid(a->lengths, a->t, b)) {                                                  \
            for (int64_t u = H; u < a->W; u += H) ws[u + j] = 0;                                   \
            *out = 0;                                                                              \
            return;                                                                                \
        }                                                                                          \
        T hn;                                                                                      \
        if (a->mode == WICK_RNN_LSTM) {                                                            \
            T *c = (T *)a->c + b * H + j, cp = *c, pre[4];                                         \
            for (int k = 0; k < 4; k++) pre[k] = gi[k * H + j] + gh[k * H + j] + (bh ? bh[k * H + j] : 0); \
            T i = wk_rnn_sigmoid_##SFX(pre[0]), f = wk_rnn_sigmoid_##SFX(pre[1]);                \
            T g = TANH(pre[2]), o = wk_rnn_sigmoid_##SFX(pre[3]);                                 \
            T cn = f * cp + i * g, tc = TANH(cn);                                                  \
            hn = o * tc;                                                                           \
            *c = cn;                                                                               \
            ws[H + j] = cp, ws[2 * H + j] = i, ws[3 * H + j] = f, ws[4 * H + j] = g;              \
            ws[5 * H + j] = o, ws[6 * H + j] = tc;                                                 \
        } else if (a->mode == WICK_RNN_GRU) {                                                      \
            T r = wk_rnn_sigmoid_##SFX(gi[j] + gh[j] + (bh ? bh[j] : 0));                          \
            T z = wk_rnn_sigmoid_##SFX(gi[H + j] + gh[H + j] + (bh ? bh[H + j] : 0));              \
            T hh = gh[2 * H + j] + (bh ? bh[2 * H + j] : 0);                                       \
            T n = TANH(gi[2 * H + j] + r * hh);                                                    \
            hn = (n - z * n) + z * hp;                                                             \
            ws[H + j] = r, ws[2 * H + j] = z, ws[3 * H + j] = n, ws[4 * H + j] = hh;              \
        } else {                                                                                   \
            T pre = gi[j] + gh[j] + (bh ? bh[j] : 0);                                              \
            hn = a->mode == WICK_RNN_TANH ? TANH(pre) : (pre > 0 ? pre : (pre != pre ? pre : 0));  \
            ws[H + j] = hn;                                                                        \
        }                                                                                          \
        *h = hn;                                                                                   \
        *out = hn;                                                                                 \
    }                                                                                              \
    /* backward of element (b, j) of step t: dgi/dgh of the step, the carried dh (its direct      \
     * part: the gemm adds dgh W_hh after) and dc */                                              \
    WK_HD void wk_rnn_bwd_##SFX(const wk_rnn_args *a, int64_t b, int64_t j) {                    \
        const int64_t H = a->H, G = a->G, row = a->t * a->B + b;                                   \
        const T *ws = (const T *)a->ws + row * a->W;                                               \
        T *dgi = (T *)a->dgi + row * G, *dgh = (T *)a->dgh + row * G, *dh = (T *)a->dh + b * H + j; \
        const int gates = (int)(G / H);                                                            \
        if (!wk_rnn_valid(a->lengths, a->t, b)) {                                                  \
            for (int k = 0; k < gates; k++) dgi[k * H + j] = 0, dgh[k * H + j] = 0;                \
            return;                                                                                \
        }                                                                                          \
        const T d = *dh + ((const T *)a->gout)[row * H + j];                                       \
        if (a->mode == WICK_RNN_LSTM) {                                                            \
            T *dc = (T *)a->dc + b * H + j;                                                        \
            T cp = ws[H + j], i = ws[2 * H + j], f = ws[3 * H + j], g = ws[4 * H + j];            \
            T o = ws[5 * H + j], tc = ws[6 * H + j];                                               \
            T dcc = *dc + d * o * (1 - tc * tc);                                                   \
            dgi[j] = dcc * g * i * (1 - i);                                                        \
            dgi[H + j] = dcc * cp * f * (1 - f);                                                   \
            dgi[2 * H + j] = dcc * i * (1 - g * g);                                                \
            dgi[3 * H + j] = d * tc * o * (1 - o);                                                 \
            *dc = dcc * f;                                                                         \
            *dh = 0;                                                                               \
        } else if (a->mode == WICK_RNN_GRU) {                                                      \
            T hp = ws[j], r = ws[H + j], z = ws[2 * H + j], n = ws[3 * H + j], hh = ws[4 * H + j]; \
            T dn = d * (1 - z) * (1 - n * n);                                                      \
            T dr = dn * hh * r * (1 - r), dz = d * (hp - n) * z * (1 - z);                         \
            dgi[j] = dgh[j] = dr;                                                                  \
            dgi[H + j] = dgh[H + j] = dz;                                                          \
            dgi[2 * H + j] = dn;                                                                   \
            dgh[2 * H + j] = dn * r;                                                               \
            *dh = d * z;                                                                           \
        } else {                                                                                   \
            T hn = ws[H + j];                                                                      \
            dgi[j] = a->mode == WICK_RNN_TANH ? d * (1 - hn * hn) : (hn > 0 ? d : 0);             \
            *dh = 0;                                                                               \
        }                                                                                          \
    }

#endif
