/* The fused recurrent layer's step kernels on the CPU: the element math of
 * src/core/rnn.h over the B x H elements of a step, rows split among threads
 * when a step is large. The float32 forward of tanh RNNs, LSTMs and GRUs runs
 * the same formulas 16 units at a time with cpu_vmath.h's sigmoid and tanh
 * (libm's took two thirds of the step's time), and so does the float32
 * backward of LSTMs and GRUs. The time loop and the
 * products are the core's (src/core/rnn.c). */
#include "cpu.h"

#include "../core/rnn.h"
#include "cpu_vmath.h"

WK_RNN_ELEMENT(f, float, expf, tanhf)
WK_RNN_ELEMENT(d, double, exp, tanh)

/* Rows per task: a few thousand elements each. */
static int64_t grain(const wk_rnn_args *a) { return a->H >= 4096 ? 1 : 4096 / a->H; }

WK_VI wk_vf vld(const float *p, int64_t n) { return n == WK_VL ? wk_vload(p) : wk_vload_part(p, n, 0); }
WK_VI void vst(float *p, wk_vf v, int64_t n) {
    if (n == WK_VL) wk_vstore(p, v);
    else wk_vstore_part(p, v, n);
}

/* Row b of step t in float32 (mode RNN_TANH, LSTM or GRU, the row taking part
 * in the step): wk_rnn_fwd_f's formulas over units [j, j + n) at a time. */
WK_VSIMD static void fwd_row_f32(const wk_rnn_args *a, int64_t b) {
    const int64_t H = a->H, row = a->t * a->B + b;
    const float *gi = (const float *)a->gi + row * a->G, *gh = (const float *)a->gh + b * a->G;
    const float *bh = (const float *)a->b_hh;
    float *h = (float *)a->h + b * H, *ws = (float *)a->ws + row * a->W, *out = (float *)a->out + row * H;
    float *c = a->c ? (float *)a->c + b * H : NULL;
    for (int64_t j = 0; j < H; j += WK_VL) {
        int64_t n = H - j < WK_VL ? H - j : WK_VL;
        wk_vf hp = vld(h + j, n), hn;
        wk_vf pre0 = vld(gi + j, n) + vld(gh + j, n) + (bh ? vld(bh + j, n) : wk_vsplat(0));
        vst(ws + j, hp, n);
        if (a->mode == WICK_RNN_LSTM) {
            wk_vf pre1 = vld(gi + H + j, n) + vld(gh + H + j, n) + (bh ? vld(bh + H + j, n) : wk_vsplat(0));
            wk_vf pre2 = vld(gi + 2 * H + j, n) + vld(gh + 2 * H + j, n) + (bh ? vld(bh + 2 * H + j, n) : wk_vsplat(0));
            wk_vf pre3 = vld(gi + 3 * H + j, n) + vld(gh + 3 * H + j, n) + (bh ? vld(bh + 3 * H + j, n) : wk_vsplat(0));
            wk_vf i = wk_vsigmoid(pre0), f = wk_vsigmoid(pre1), g = wk_vtanh(pre2), o = wk_vsigmoid(pre3);
            wk_vf cp = vld(c + j, n), cn = f * cp + i * g, tc = wk_vtanh(cn);
            hn = o * tc;
            vst(c + j, cn, n);
            vst(ws + H + j, cp, n), vst(ws + 2 * H + j, i, n), vst(ws + 3 * H + j, f, n);
            vst(ws + 4 * H + j, g, n), vst(ws + 5 * H + j, o, n), vst(ws + 6 * H + j, tc, n);
        } else if (a->mode == WICK_RNN_GRU) {
            wk_vf r = wk_vsigmoid(pre0);
            wk_vf z = wk_vsigmoid(vld(gi + H + j, n) + vld(gh + H + j, n) + (bh ? vld(bh + H + j, n) : wk_vsplat(0)));
            wk_vf hh = vld(gh + 2 * H + j, n) + (bh ? vld(bh + 2 * H + j, n) : wk_vsplat(0));
            wk_vf nn = wk_vtanh(vld(gi + 2 * H + j, n) + r * hh);
            hn = (nn - z * nn) + z * hp;
            vst(ws + H + j, r, n), vst(ws + 2 * H + j, z, n), vst(ws + 3 * H + j, nn, n), vst(ws + 4 * H + j, hh, n);
        } else {
            hn = wk_vtanh(pre0);
            vst(ws + H + j, hn, n);
        }
        vst(h + j, hn, n);
        vst(out + j, hn, n);
    }
}

static void fwd_rows(void *ctx, int64_t b0, int64_t b1) {
    const wk_rnn_args *a = ctx;
    for (int64_t b = b0; b < b1; b++)
        if (a->dtype == WICK_FLOAT32 && a->mode != WICK_RNN_RELU && wk_rnn_valid(a->lengths, a->t, b))
            fwd_row_f32(a, b);
        else if (a->dtype == WICK_FLOAT32)
            for (int64_t j = 0; j < a->H; j++) wk_rnn_fwd_f(a, b, j);
        else
            for (int64_t j = 0; j < a->H; j++) wk_rnn_fwd_d(a, b, j);
}

/* The backward of row b of step t in float32 (LSTM or GRU, the row taking part
 * in the step): wk_rnn_bwd_f's formulas 16 units at a time. */
WK_VSIMD static void bwd_row_f32(const wk_rnn_args *a, int64_t b) {
    const int64_t H = a->H, G = a->G, row = a->t * a->B + b;
    const float *ws = (const float *)a->ws + row * a->W, *gout = (const float *)a->gout + row * H;
    float *dgi = (float *)a->dgi + row * G, *dgh = (float *)a->dgh + row * G, *dh = (float *)a->dh + b * H;
    float *dc = a->dc ? (float *)a->dc + b * H : NULL;
    for (int64_t j = 0; j < H; j += WK_VL) {
        int64_t n = H - j < WK_VL ? H - j : WK_VL;
        wk_vf d = vld(dh + j, n) + vld(gout + j, n);
        if (a->mode == WICK_RNN_LSTM) {
            wk_vf cp = vld(ws + H + j, n), i = vld(ws + 2 * H + j, n), f = vld(ws + 3 * H + j, n);
            wk_vf g = vld(ws + 4 * H + j, n), o = vld(ws + 5 * H + j, n), tc = vld(ws + 6 * H + j, n);
            wk_vf dcc = vld(dc + j, n) + d * o * (1.0f - tc * tc);
            vst(dgi + j, dcc * g * i * (1.0f - i), n);
            vst(dgi + H + j, dcc * cp * f * (1.0f - f), n);
            vst(dgi + 2 * H + j, dcc * i * (1.0f - g * g), n);
            vst(dgi + 3 * H + j, d * tc * o * (1.0f - o), n);
            vst(dc + j, dcc * f, n);
            vst(dh + j, wk_vsplat(0), n);
        } else {
            wk_vf hp = vld(ws + j, n), r = vld(ws + H + j, n), z = vld(ws + 2 * H + j, n);
            wk_vf nn = vld(ws + 3 * H + j, n), hh = vld(ws + 4 * H + j, n);
            wk_vf dn = d * (1.0f - z) * (1.0f - nn * nn);
            wk_vf dr = dn * hh * r * (1.0f - r), dz = d * (hp - nn) * z * (1.0f - z);
            vst(dgi + j, dr, n), vst(dgh + j, dr, n);
            vst(dgi + H + j, dz, n), vst(dgh + H + j, dz, n);
            vst(dgi + 2 * H + j, dn, n), vst(dgh + 2 * H + j, dn * r, n);
            vst(dh + j, d * z, n);
        }
    }
}

static void bwd_rows(void *ctx, int64_t b0, int64_t b1) {
    const wk_rnn_args *a = ctx;
    for (int64_t b = b0; b < b1; b++)
        if (a->dtype == WICK_FLOAT32 && (a->mode == WICK_RNN_LSTM || a->mode == WICK_RNN_GRU) &&
            wk_rnn_valid(a->lengths, a->t, b))
            bwd_row_f32(a, b);
        else if (a->dtype == WICK_FLOAT32)
            for (int64_t j = 0; j < a->H; j++) wk_rnn_bwd_f(a, b, j);
        else
            for (int64_t j = 0; j < a->H; j++) wk_rnn_bwd_d(a, b, j);
}

wick_status cpu_rnn_step(const wk_rnn_args *a) { return wk_parallel_for(a->B, grain(a), fwd_rows, (void *)a); }

wick_status cpu_rnn_step_backward(const wk_rnn_args *a) {
    return wk_parallel_for(a->B, grain(a), bwd_rows, (void *)a);
}
