/* Softmax and log-softmax along one dim of a contiguous float tensor, stable:
 * the maximum is subtracted before exponentiating. */
#include "cpu.h"

#include <math.h>

#define SOFTMAX(NAME, T, EXP, LOG)                                                               \
    static void NAME(T *out, const T *in, int64_t outer, int64_t d, int64_t inner, int take_log) {\
        for (int64_t o = 0; o < outer; o++)                                                      \
            for (int64_t i = 0; i < inner; i++) {                                                \
                const T *x = in + o * d * inner + i;                                             \
                T *y = out + o * d * inner + i;                                                  \
                T max = x[0];                                                                    \
                for (int64_t k = 1; k < d; k++)                                                  \
                    if (x[k * inner] > max || x[k * inner] != x[k * inner]) max = x[k * inner];   \
                if (isinf(max) && max < 0) max = 0; /* all -inf: keep NaN-free arithmetic */     \
                T sum = 0;                                                                       \
                for (int64_t k = 0; k < d; k++) sum += EXP(x[k * inner] - max);                   \
                if (take_log) {                                                                  \
                    T lse = max + LOG(sum);                                                      \
                    for (int64_t k = 0; k < d; k++) y[k * inner] = x[k * inner] - lse;            \
                } else {                                                                         \
                    for (int64_t k = 0; k < d; k++) y[k * inner] = EXP(x[k * inner] - max) / sum; \
                }                                                                                \
            }                                                                                    \
    }
SOFTMAX(softmax_f32, float, expf, logf)
SOFTMAX(softmax_f64, double, exp, log)

wick_status cpu_softmax(const wick_tensor *out, const wick_tensor *in, int dim, int log) {
    int64_t outer = 1, inner = 1, d = in->ndim ? in->sizes[dim] : 1;
    for (int i = 0; i < dim; i++) outer *= in->sizes[i];
    for (int i = dim + 1; i < in->ndim; i++) inner *= in->sizes[i];
    if (outer == 0 || inner == 0 || d == 0) return WICK_OK; /* no element (a row of none has no x[0]) */
    if (in->dtype == WICK_FLOAT32) softmax_f32((float *)wk_data(out), (const float *)wk_data(in), outer, d, inner, log);
    else softmax_f64((double *)wk_data(out), (const double *)wk_data(in), outer, d, inner, log);
    return WICK_OK;
}
