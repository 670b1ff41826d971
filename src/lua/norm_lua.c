/* Bindings of the fused normalisation and loss ops (src/core/nn_ops.c, batch_norm.c) as wick._core
 * functions; lua/wick/nn/functional.lua checks the arguments with PyTorch's
 * texts first and calls these. */
#include "wick_lua.h"

#include <string.h>

static wick_tensor *opt_tensor(lua_State *L, int idx, const char *fn, const char *arg) {
    return lua_isnoneornil(L, idx) ? NULL : wl_checktensor(L, idx, fn, arg);
}

/* layer_norm(x, normalized_ndim, weight|nil, bias|nil, eps) */
WL_FUNCTION(l_layer_norm) {
    wick_tensor *x = wl_checktensor(L, 1, "layer_norm", "input");
    int64_t nd = wl_checkint(L, 2, "layer_norm", "normalized_ndim");
    wick_tensor *w = opt_tensor(L, 3, "layer_norm", "weight"), *b = opt_tensor(L, 4, "layer_norm", "bias");
    double eps = wl_checknumber(L, 5, "layer_norm", "eps");
    if (nd < 0 || nd > WICK_MAX_DIMS) return wl_raise(L, "layer_norm: invalid normalized_ndim %lld", (long long)nd);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_layer_norm(slot, x, (int)nd, w, b, eps));
    return 1;
}

/* batch_norm(x, weight|nil, bias|nil, running_mean|nil, running_var|nil, training, momentum, eps) */
WL_FUNCTION(l_batch_norm) {
    static const char *fn = "batch_norm";
    wick_tensor *x = wl_checktensor(L, 1, fn, "input");
    wick_tensor *w = opt_tensor(L, 2, fn, "weight"), *b = opt_tensor(L, 3, fn, "bias");
    wick_tensor *rm = opt_tensor(L, 4, fn, "running_mean"), *rv = opt_tensor(L, 5, fn, "running_var");
    int training = lua_toboolean(L, 6);
    double momentum = wl_checknumber(L, 7, fn, "momentum"), eps = wl_checknumber(L, 8, fn, "eps");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_batch_norm(slot, x, w, b, rm, rv, training, momentum, eps));
    return 1;
}

/* cross_entropy(logits, target, weight|nil, ignore_index|nil, label_smoothing, reduction) */
WL_FUNCTION(l_cross_entropy) {
    wick_tensor *x = wl_checktensor(L, 1, "cross_entropy", "input");
    wick_tensor *t = wl_checktensor(L, 2, "cross_entropy", "target");
    wick_tensor *w = opt_tensor(L, 3, "cross_entropy", "weight");
    int has_ignore = !lua_isnoneornil(L, 4);
    int64_t ignore = has_ignore ? wl_checkint(L, 4, "cross_entropy", "ignore_index") : 0;
    double smoothing = wl_checknumber(L, 5, "cross_entropy", "label_smoothing");
    const char *red = wl_checkstring(L, 6, "cross_entropy", "reduction");
    int reduction = !strcmp(red, "none") ? 0 : !strcmp(red, "mean") ? 1 : !strcmp(red, "sum") ? 2 : -1;
    if (reduction < 0) return wl_raise(L, "cross_entropy: invalid reduction '%s' (expected 'mean', 'sum' or 'none')", red);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_cross_entropy(slot, x, t, w, has_ignore, ignore, smoothing, reduction));
    return 1;
}

void wl_open_norm(lua_State *L) {
    lua_pushcfunction(L, l_layer_norm);
    lua_setfield(L, -2, "layer_norm");
    lua_pushcfunction(L, l_batch_norm);
    lua_setfield(L, -2, "batch_norm");
    lua_pushcfunction(L, l_cross_entropy);
    lua_setfield(L, -2, "cross_entropy");
}
