/* Autocast inside the core (src/core/autocast.c): the ops that autocast
 * touches start with WK_AUTOCAST, which costs one thread-local test when
 * autocast is off. */
#ifndef WICK_AUTOCAST_H
#define WICK_AUTOCAST_H

#include "internal.h"

/* Bit (1 << wick_device_type) set while autocast is on for that device type. */
extern _Thread_local unsigned wk_autocast_mask;

typedef enum wk_autocast_policy {
    WK_AC_LOWER,    /* products, convolutions, attention: the autocast dtype */
    WK_AC_FP32,     /* losses, ops wick runs in float32 only: float32 */
    WK_AC_FP32_CUDA, /* PyTorch's CUDA-only float32 list (softmax, norms, sums) */
    WK_AC_PROMOTE,   /* floating inputs of mixed dtypes: all to the widest */
    WK_AC_NONE       /* not listed (an op family whose members differ) */
} wk_autocast_policy;

/* When autocast is on for the first input's device and some input is a
 * floating tensor (not float64) of another dtype than the policy's: *hit = 1
 * and out[i] holds each input cast (or itself), retained; release with
 * wk_autocast_release. Otherwise *hit = 0 and out[] is all NULL. */
wick_status wk_autocast_cast(wk_autocast_policy policy, int n, const wick_tensor *const *in, wick_tensor **out,
                             int *hit);
void wk_autocast_release(int n, wick_tensor **t);

/* At the top of an op: when autocast casts its inputs (listed after `call`),
 * returns `call`, the op itself run again on the cast inputs c[0..n). That
 * second run finds nothing to cast. */
#define WK_AUTOCAST(policy, n, call, ...)                                               \
    do {                                                                                \
        if (wk_autocast_mask) {                                                         \
            const wick_tensor *ac_in_[n] = {__VA_ARGS__};                               \
            wick_tensor *c[n];                                                          \
            int ac_hit_;                                                                \
            wick_status ac_st_ = wk_autocast_cast((policy), (n), ac_in_, c, &ac_hit_);  \
            if (ac_st_ || ac_hit_) {                                                    \
                if (!ac_st_) ac_st_ = (call);                                           \
                wk_autocast_release((n), c);                                            \
                return ac_st_;                                                          \
            }                                                                           \
        }                                                                               \
    } while (0)

#endif
