/* Fused optimizer loops (see src/core/optim.h): one pass per parameter, with
 * PyTorch's single-tensor SGD and Adam arithmetic in the parameter's dtype, each
 * hyperparameter rounded to it once as ATen's scalar operands are. Built with
 * -fno-math-errno (CMakeLists.txt) so that the square roots vectorise. */
#include "cpu.h"

#include "../core/optim.h"

#include <math.h>

/* The loop for one choice of weight decay (decoupled: on p; else: into g) and of
 * ATen's lerp formula (LOW: the weight 1 - beta1 is below 0.5), fixed at compile
 * time so that the loop has no branches. */
#define ADAM_LOOP(T, SQRT, DECAY_P, DECAY_G, LOW)                                                     \
    for (int64_t i = 0; i < n; i++) {                                                                 \
        T pi = p[i], gi = g[i];                                                                       \
        if (DECAY_P) pi = pi * decay;                                                                 \
        if (DECAY_G) gi = gi + pi * wd;                                                               \
        T mi = m[i], d = gi - mi;                                                                     \
        mi = LOW ? mi + w1 * d : gi - d * ((T)1 - w1);                                                \
        T vi = v[i] * b2;                                                                             \
        vi = vi + c2 * gi * gi;                                                                       \
        T denom = SQRT(vi) / bc2_sqrt + eps;                                                          \
        p[i] = pi + step_size * (mi / denom);                                                         \
        m[i] = mi;                                                                                    \
        v[i] = vi;                                                                                    \
    }

#define ADAM_STEP(NAME, T, SQRT)                                                                      \
    WK_SIMD static void NAME(T *restrict p, const T *restrict g, T *restrict m, T *restrict v, int64_t n,     \
                      const wk_adam_hparams *h) {                                                     \
        const double bc1 = 1 - pow(h->beta1, (double)h->step), bc2 = 1 - pow(h->beta2, (double)h->step); \
        const T decay = (T)(1 - h->lr * h->weight_decay), wd = (T)h->weight_decay;                   \
        const T w1 = (T)(1 - h->beta1), b2 = (T)h->beta2, c2 = (T)(1 - h->beta2);                    \
        const T bc2_sqrt = (T)sqrt(bc2), eps = (T)h->eps, step_size = (T)(-(h->lr / bc1));           \
        const int mode = (h->weight_decay == 0 ? 0 : h->decoupled ? 1 : 2) + (fabs((double)w1) < 0.5 ? 0 : 3); \
        switch (mode) {                                                                               \
        case 0: ADAM_LOOP(T, SQRT, 0, 0, 1) break;                                                    \
        case 1: ADAM_LOOP(T, SQRT, 1, 0, 1) break;                                                    \
        case 2: ADAM_LOOP(T, SQRT, 0, 1, 1) break;                                                    \
        case 3: ADAM_LOOP(T, SQRT, 0, 0, 0) break;                                                    \
        case 4: ADAM_LOOP(T, SQRT, 1, 0, 0) break;                                                    \
        default: ADAM_LOOP(T, SQRT, 0, 1, 0) break;                                                   \
        }                                                                                             \
    }

ADAM_STEP(adam_f32, float, sqrtf)
ADAM_STEP(adam_f64, double, sqrt)

/* GradScaler's unscale: the finiteness test (x - x is 0 only for finite x) is an
 * integer OR in the multiply's loop, so the loop vectorises. */
#define UNSCALE(NAME, T)                                                                              \
    WK_SIMD static int NAME(T *restrict g, int64_t n, T inv) {                                        \
        int bad = 0;                                                                                  \
        for (int64_t i = 0; i < n; i++) {                                                             \
            T x = g[i];                                                                               \
            bad |= !(x - x == (T)0);                                                                  \
            g[i] = x * inv;                                                                           \
        }                                                                                             \
        return bad;                                                                                   \
    }

UNSCALE(unscale_f32, float)
UNSCALE(unscale_f64, double)

wick_status cpu_amp_unscale(wick_dtype dtype, int device, char *g, int64_t n, const float *inv_scale,
                            float *found_inf) {
    (void)device;
    int bad = dtype == WICK_FLOAT32 ? unscale_f32((float *)g, n, *inv_scale)
                                    : unscale_f64((double *)g, n, (double)*inv_scale);
    if (bad) *found_inf = 1;
    return WICK_OK;
}

/* SGD with PyTorch's single-tensor arithmetic: g <- -g (maximize), g + wd p,
 * buf <- buf * momentum + (1 - dampening) g (or g on the first step), g <- g +
 * momentum buf (Nesterov) or buf, p <- p - lr g. The flags are constants in each
 * inlined copy, so every loop is branch-free. */
#define SGD_STEP(NAME, T)                                                                              \
    static inline __attribute__((always_inline)) void NAME##_loop(                                    \
        T *restrict p, const T *restrict g, T *restrict buf, int64_t n, const wk_sgd_hparams *h,       \
        const int WD, const int MOM, const int NEST, const int FIRST) {                                \
        const T sgn = h->maximize ? (T)-1 : (T)1, wd = (T)h->weight_decay, mom = (T)h->momentum;     \
        const T damp1 = (T)(1 - h->dampening), neglr = (T)-h->lr;                                     \
        for (int64_t i = 0; i < n; i++) {                                                             \
            T gi = sgn * g[i];                                                                        \
            if (WD) gi = gi + wd * p[i];                                                              \
            if (MOM) {                                                                                \
                T bi = FIRST ? gi : buf[i] * mom + damp1 * gi;                                        \
                buf[i] = bi;                                                                          \
                gi = NEST ? gi + mom * bi : bi;                                                       \
            }                                                                                         \
            p[i] = p[i] + neglr * gi;                                                                 \
        }                                                                                             \
    }                                                                                                 \
    WK_SIMD static void NAME(T *restrict p, const T *restrict g, T *restrict buf, int64_t n,           \
                             const wk_sgd_hparams *h) {                                               \
        const int wd = h->weight_decay != 0, mom = h->momentum != 0;                                  \
        switch ((wd ? 1 : 0) | (mom ? 2 : 0) | (mom && h->nesterov ? 4 : 0) | (mom && h->first ? 8 : 0)) { \
        case 0: NAME##_loop(p, g, buf, n, h, 0, 0, 0, 0); break;                                      \
        case 1: NAME##_loop(p, g, buf, n, h, 1, 0, 0, 0); break;                                      \
        case 2: NAME##_loop(p, g, buf, n, h, 0, 1, 0, 0); break;                                      \
        case 3: NAME##_loop(p, g, buf, n, h, 1, 1, 0, 0); break;                                      \
        case 6: NAME##_loop(p, g, buf, n, h, 0, 1, 1, 0); break;                                      \
        case 7: NAME##_loop(p, g, buf, n, h, 1, 1, 1, 0); break;                                      \
        case 10: NAME##_loop(p, g, buf, n, h, 0, 1, 0, 1); break;                                     \
        case 11: NAME##_loop(p, g, buf, n, h, 1, 1, 0, 1); break;                                     \
        case 14: NAME##_loop(p, g, buf, n, h, 0, 1, 1, 1); break;                                     \
        default: NAME##_loop(p, g, buf, n, h, 1, 1, 1, 1); break;                                     \
        }                                                                                             \
    }

SGD_STEP(sgd_f32, float)
SGD_STEP(sgd_f64, double)

/* ---- the steps on the pool ----
 * Each step is split among the pool's threads in ranges of elements (a step
 * moves 3-4 arrays through memory: two cores move them faster than one),
 * every range run to its end (wk_parallel_for_whole: a step never stops half
 * way). */
#define STEP_GRAIN 32768

typedef struct {
    wick_dtype dtype;
    char *p, *s1, *s2; /* the parameter and up to two state arrays */
    const char *g;
    const void *h;     /* the step's hyperparameters */
} step_job;

/* the arrays of job j from element `begin` */
#define AT(j, ptr, begin) ((ptr) ? (ptr) + (begin) * (int64_t)wick_dtype_size((j)->dtype) : NULL)

static void sgd_range(void *ctx, int64_t begin, int64_t end) {
    const step_job *j = ctx;
    char *p = AT(j, j->p, begin), *buf = AT(j, j->s1, begin);
    const char *g = AT(j, j->g, begin);
    if (j->dtype == WICK_FLOAT32)
        sgd_f32((float *)p, (const float *)g, (float *)buf, end - begin, j->h);
    else
        sgd_f64((double *)p, (const double *)g, (double *)buf, end - begin, j->h);
}

void cpu_sgd_step(wick_dtype dtype, char *p, const char *g, char *buf, int64_t n, const wk_sgd_hparams *h) {
    step_job j = {dtype, p, buf, NULL, g, h};
    wk_parallel_for_whole(n, STEP_GRAIN, sgd_range, &j);
}

/* Adadelta with PyTorch's single-tensor arithmetic (the comment of
 * wick_adadelta_step_); weight decay a compile-time flag in each copy. */
#define ADADELTA_STEP(NAME, T, SQRT)                                                                  \
    static inline __attribute__((always_inline)) void NAME##_loop(                                    \
        T *restrict p, const T *restrict g, T *restrict sq, T *restrict acc, int64_t n,               \
        const wk_adadelta_hparams *h, const int WD) {                                                 \
        const T sgn = h->maximize ? (T)-1 : (T)1, wd = (T)h->weight_decay, rho = (T)h->rho;          \
        const T c = (T)(1 - h->rho), eps = (T)h->eps, neglr = (T)-h->lr;                              \
        for (int64_t i = 0; i < n; i++) {                                                             \
            T gi = sgn * g[i];                                                                        \
            if (WD) gi = gi + wd * p[i];                                                              \
            T s = sq[i] * rho + c * gi * gi;                                                        \
            T d = SQRT(acc[i] + eps) / SQRT(s + eps) * gi;                                            \
            sq[i] = s;                                                                                \
            acc[i] = acc[i] * rho + c * d * d;                                                        \
            p[i] = p[i] + neglr * d;                                                                  \
        }                                                                                             \
    }                                                                                                 \
    WK_SIMD static void NAME(T *restrict p, const T *restrict g, T *restrict sq, T *restrict acc, int64_t n, \
                             const wk_adadelta_hparams *h) {                                          \
        if (h->weight_decay != 0) NAME##_loop(p, g, sq, acc, n, h, 1);                                \
        else NAME##_loop(p, g, sq, acc, n, h, 0);                                                     \
    }

ADADELTA_STEP(adadelta_f32, float, sqrtf)
ADADELTA_STEP(adadelta_f64, double, sqrt)

static void adadelta_range(void *ctx, int64_t begin, int64_t end) {
    const step_job *j = ctx;
    char *p = AT(j, j->p, begin), *sq = AT(j, j->s1, begin), *acc = AT(j, j->s2, begin);
    const char *g = AT(j, j->g, begin);
    if (j->dtype == WICK_FLOAT32)
        adadelta_f32((float *)p, (const float *)g, (float *)sq, (float *)acc, end - begin, j->h);
    else
        adadelta_f64((double *)p, (const double *)g, (double *)sq, (double *)acc, end - begin, j->h);
}

void cpu_adadelta_step(wick_dtype dtype, char *p, const char *g, char *square_avg, char *acc_delta, int64_t n,
                       const wk_adadelta_hparams *h) {
    step_job j = {dtype, p, square_avg, acc_delta, g, h};
    wk_parallel_for_whole(n, STEP_GRAIN, adadelta_range, &j);
}

static void adam_range(void *ctx, int64_t begin, int64_t end) {
    const step_job *j = ctx;
    char *p = AT(j, j->p, begin), *m = AT(j, j->s1, begin), *v = AT(j, j->s2, begin);
    const char *g = AT(j, j->g, begin);
    if (j->dtype == WICK_FLOAT32)
        adam_f32((float *)p, (const float *)g, (float *)m, (float *)v, end - begin, j->h);
    else
        adam_f64((double *)p, (const double *)g, (double *)m, (double *)v, end - begin, j->h);
}

void cpu_adam_step(wick_dtype dtype, char *p, const char *g, char *exp_avg, char *exp_avg_sq, int64_t n,
                   const wk_adam_hparams *h) {
    step_job j = {dtype, p, exp_avg, exp_avg_sq, g, h};
    wk_parallel_for_whole(n, STEP_GRAIN, adam_range, &j);
}
