/* Autocast (mixed precision), like PyTorch's torch.autocast: per thread and per
 * device type, an on/off switch and a lower-precision dtype. The ops listed for
 * autocast (WK_AUTOCAST at their entry, autocast.h) cast their floating-point
 * inputs first: the products and convolutions to the lower dtype, the losses
 * (and on CUDA the softmaxes, norms and sums) to float32. Casts go through
 * wick_to, so autograd records them and gradients come back in the input's
 * dtype. A float32 leaf that requires grad (a weight) is cast once per region:
 * the cast is kept until the outermost region ends (or the weight is written). */
#include "autocast.h"
#include "autograd.h"

#include <stdlib.h>

#define TRY(expr)                                                                                 \
    do {                                                                                          \
        wick_status st_ = (expr);                                                                 \
        if (st_) return st_;                                                                      \
    } while (0)

_Thread_local unsigned wk_autocast_mask;

static _Thread_local wick_dtype lower[2] = {WICK_BFLOAT16, WICK_FLOAT16}; /* cpu, cuda: PyTorch's defaults */
static _Thread_local int nesting;
static _Thread_local bool cache_on = true;

typedef struct {
    wick_tensor *src, *cast; /* both retained */
    unsigned version;
    bool grad_mode;
} cache_entry;

static _Thread_local cache_entry *cache;
static _Thread_local int cache_count, cache_cap;

static wick_status check_type(const char *op, wick_device_type type) {
    if (type != WICK_CPU && type != WICK_CUDA)
        return wick_fail(WICK_ERR_DEVICE, "%s: autocast runs on 'cpu' and 'cuda' only", op);
    return WICK_OK;
}

wick_status wick_set_autocast_enabled(wick_device_type type, int enabled) {
    TRY(check_type("set_autocast_enabled", type));
    if (enabled) wk_autocast_mask |= 1u << type;
    else wk_autocast_mask &= ~(1u << type);
    return WICK_OK;
}

int wick_is_autocast_enabled(wick_device_type type) {
    return (type == WICK_CPU || type == WICK_CUDA) && (wk_autocast_mask >> type & 1u);
}

wick_status wick_set_autocast_dtype(wick_device_type type, wick_dtype dtype) {
    TRY(check_type("set_autocast_dtype", type));
    if (dtype != WICK_BFLOAT16 && dtype != WICK_FLOAT16)
        return wick_fail(WICK_ERR_DTYPE, "autocast: the lower-precision dtype must be bfloat16 or float16, got %s",
                         wick_dtype_name(dtype));
    lower[type] = dtype;
    return WICK_OK;
}

wick_dtype wick_get_autocast_dtype(wick_device_type type) {
    return type == WICK_CUDA ? lower[WICK_CUDA] : lower[WICK_CPU];
}

void wick_clear_autocast_cache(void) {
    for (int i = 0; i < cache_count; i++) {
        wick_tensor_release(cache[i].src);
        wick_tensor_release(cache[i].cast);
    }
    free(cache);
    cache = NULL;
    cache_count = cache_cap = 0;
}

void wick_set_autocast_cache_enabled(int enabled) { cache_on = enabled != 0; }
int wick_is_autocast_cache_enabled(void) { return cache_on; }

int wick_autocast_increment_nesting(void) { return ++nesting; }

int wick_autocast_decrement_nesting(void) {
    if (nesting > 0) nesting--;
    return nesting;
}

/* The weight's cast from the cache, or a new one (kept while a region is open). */
static wick_status cached_cast(wick_tensor **out, const wick_tensor *t, wick_dtype dtype) {
    wick_options opt = {dtype, t->storage->device};
    unsigned version = __atomic_load_n(&t->storage->version, __ATOMIC_RELAXED);
    cache_entry *e = NULL;
    for (int i = 0; i < cache_count && !e; i++)
        if (cache[i].src == t && cache[i].cast->dtype == dtype) e = &cache[i];
    /* stale when the weight was written, when grad mode differs from the cast's,
     * or when a backward without retain_graph freed the cast's node */
    if (e && e->version == version && e->grad_mode == (wk_grad_mode != 0) &&
        !(e->cast->grad_fn && e->cast->grad_fn->released)) {
        wick_tensor_retain(e->cast);
        *out = e->cast;
        return WICK_OK;
    }
    wick_tensor *c = NULL;
    TRY(wick_to(&c, (wick_tensor *)t, opt));
    if (nesting == 0 || !cache_on) { /* no region to keep it for (autocast switched on by hand) */
        *out = c;
        return WICK_OK;
    }
    if (!e) {
        if (cache_count == cache_cap) {
            int cap = cache_cap ? 2 * cache_cap : 16;
            cache_entry *grown = realloc(cache, (size_t)cap * sizeof *grown);
            if (!grown) {
                wick_tensor_release(c);
                return wick_fail(WICK_ERR_OOM, "autocast: out of memory for the cast cache");
            }
            cache = grown, cache_cap = cap;
        }
        e = &cache[cache_count++];
        wick_tensor_retain((wick_tensor *)t);
        e->src = (wick_tensor *)t;
    } else {
        wick_tensor_release(e->cast);
    }
    wick_tensor_retain(c);
    e->cast = c, e->version = version, e->grad_mode = wk_grad_mode != 0;
    *out = c;
    return WICK_OK;
}

/* The dtype the policy gives inputs on this device, or -1 for none. */
static int target_dtype(wk_autocast_policy policy, wick_device_type type) {
    if (type != WICK_CPU && type != WICK_CUDA) return -1;
    if (!(wk_autocast_mask >> type & 1u)) return -1;
    switch (policy) {
    case WK_AC_LOWER: return (int)lower[type];
    case WK_AC_FP32: return WICK_FLOAT32;
    case WK_AC_FP32_CUDA: return type == WICK_CUDA ? WICK_FLOAT32 : -1;
    case WK_AC_PROMOTE: return -2; /* from the inputs */
    case WK_AC_NONE: return -1;
    }
    return -1;
}

/* PyTorch's is_autocast_eligible: floating point and not float64. */
static bool eligible(const wick_tensor *t, int dtype) {
    return t && wick_dtype_is_floating(t->dtype) && t->dtype != WICK_FLOAT64 && (int)t->dtype != dtype;
}

wick_status wk_autocast_cast(wk_autocast_policy policy, int n, const wick_tensor *const *in, wick_tensor **out,
                             int *hit) {
    *hit = 0;
    for (int i = 0; i < n; i++) out[i] = NULL;
    const wick_tensor *first = NULL;
    for (int i = 0; i < n && !first; i++) first = in[i];
    if (!first) return WICK_OK;
    int dtype = target_dtype(policy, first->storage->device.type);
    if (dtype == -2) { /* the widest floating dtype among the inputs, when they differ */
        int widest = -1;
        for (int i = 0; i < n; i++)
            if (in[i] && wick_dtype_is_floating(in[i]->dtype))
                widest = widest < 0 ? (int)in[i]->dtype : (int)wick_promote_types((wick_dtype)widest, in[i]->dtype);
        if (widest == WICK_FLOAT64) return WICK_OK; /* float64 stays out of autocast: the op decides */
        dtype = widest;
    }
    if (dtype < 0) return WICK_OK;
    for (int i = 0; i < n && !*hit; i++) *hit = eligible(in[i], dtype);
    if (!*hit) return WICK_OK;
    for (int i = 0; i < n; i++) {
        const wick_tensor *t = in[i];
        wick_status st = WICK_OK;
        if (!eligible(t, dtype)) {
            if (t) wick_tensor_retain((wick_tensor *)t);
            out[i] = (wick_tensor *)t;
        } else if (policy == WK_AC_LOWER && t->dtype == WICK_FLOAT32 && t->requires_grad && !t->grad_fn) {
            st = cached_cast(&out[i], t, (wick_dtype)dtype);
        } else {
            st = wick_to(&out[i], (wick_tensor *)t, (wick_options){(wick_dtype)dtype, t->storage->device});
        }
        if (st) {
            wk_autocast_release(n, out);
            return st;
        }
    }
    return WICK_OK;
}

void wk_autocast_release(int n, wick_tensor **t) {
    for (int i = 0; i < n; i++) {
        wick_tensor_release(t[i]);
        t[i] = NULL;
    }
}
