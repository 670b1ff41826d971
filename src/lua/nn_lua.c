/* Bindings of the neural-network ops: linear, mse_loss, conv2d, the 2-D
 * poolings and fused scaled-dot-product attention. */
#include "wick_lua.h"

#include <math.h>
#include <string.h>

#define SDPA "scaled_dot_product_attention"

/* PyTorch's keyword arguments, in its positional order (after query, key, value). */
static const char *const sdpa_keys[] = {"attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa", NULL};
enum { K_MASK, K_DROPOUT, K_CAUSAL, K_SCALE, K_GQA, K_COUNT };

/* The value of argument `key` (index `which`) at stack index idx, checked for its type. */
static void sdpa_take(lua_State *L, int idx, int which, int *slots) {
    const char *key = sdpa_keys[which];
    if (lua_isnil(L, idx)) return;
    switch (which) {
    case K_MASK:
        if (!wl_totensor(L, idx)) wl_raise(L, SDPA ": attn_mask must be a tensor or nil, got %s", luaL_typename(L, idx));
        break;
    case K_DROPOUT:
    case K_SCALE:
        if (lua_type(L, idx) != LUA_TNUMBER)
            wl_raise(L, SDPA ": %s must be a number%s, got %s", key, which == K_SCALE ? " or nil" : "",
                     luaL_typename(L, idx));
        break;
    default:
        if (!lua_isboolean(L, idx)) wl_raise(L, SDPA ": %s must be a boolean, got %s", key, luaL_typename(L, idx));
    }
    if (slots[which]) wl_raise(L, SDPA ": got multiple values for argument '%s'", key);
    slots[which] = idx;
}

/* wick._core.scaled_dot_product_attention(q, k, v[, attn_mask[, dropout_p[, is_causal[, scale[, enable_gqa]]]]][, opts]) */
WL_FUNCTION(m_sdpa) {
    wick_tensor *q = wl_checktensor(L, 1, SDPA, "query");
    wick_tensor *k = wl_checktensor(L, 2, SDPA, "key");
    wick_tensor *v = wl_checktensor(L, 3, SDPA, "value");
    int top = lua_gettop(L), opts = 0;
    if (top >= 4 && lua_istable(L, top) && !wl_totensor(L, top)) opts = top--;
    if (top > 3 + K_COUNT) wl_raise(L, SDPA ": takes at most %d positional arguments, got %d", 3 + K_COUNT, top);
    int slots[K_COUNT] = {0};
    for (int i = 4; i <= top; i++) sdpa_take(L, i, i - 4, slots);
    if (opts) {
        lua_pushnil(L);
        while (lua_next(L, opts)) {
            int which = -1;
            if (lua_type(L, -2) == LUA_TSTRING)
                for (int w = 0; w < K_COUNT && which < 0; w++)
                    if (strcmp(lua_tostring(L, -2), sdpa_keys[w]) == 0) which = w;
            if (which < 0)
                wl_raise(L, SDPA ": unknown option '%s' (expected attn_mask, dropout_p, is_causal, scale, enable_gqa)",
                         lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : luaL_typename(L, -2));
            lua_pop(L, 1);
        }
        for (int w = 0; w < K_COUNT; w++) {
            lua_getfield(L, opts, sdpa_keys[w]); /* stays on the stack: slots index it */
            sdpa_take(L, lua_gettop(L), w, slots);
        }
    }
    wick_tensor *mask = slots[K_MASK] ? wl_totensor(L, slots[K_MASK]) : NULL;
    double dropout_p = slots[K_DROPOUT] ? lua_tonumber(L, slots[K_DROPOUT]) : 0;
    int causal = slots[K_CAUSAL] ? lua_toboolean(L, slots[K_CAUSAL]) : 0;
    double scale = slots[K_SCALE] ? lua_tonumber(L, slots[K_SCALE]) : NAN;
    int gqa = slots[K_GQA] ? lua_toboolean(L, slots[K_GQA]) : 0;
    if (slots[K_SCALE] && isnan(scale)) wl_raise(L, SDPA ": scale must not be NaN");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_scaled_dot_product_attention(slot, q, k, v, mask, dropout_p, causal, scale, gqa));
    wl_account(L);
    return 1;
}

/* core.linear(x, weight[, bias]) for 2-D x */
WL_FUNCTION(m_linear) {
    wick_tensor *x = wl_checktensor(L, 1, "linear", "input"), *w = wl_checktensor(L, 2, "linear", "weight");
    wick_tensor *b = lua_isnoneornil(L, 3) ? NULL : wl_checktensor(L, 3, "linear", "bias");
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_linear(slot, x, w, b));
    wl_account(L);
    return 1;
}

/* core.mse_loss(input, target, reduction) with reduction "mean", "sum" or "none" */
WL_FUNCTION(m_mse_loss) {
    wick_tensor *x = wl_checktensor(L, 1, "mse_loss", "input"), *y = wl_checktensor(L, 2, "mse_loss", "target");
    const char *r = lua_isnoneornil(L, 3) ? "mean" : wl_checkstring(L, 3, "mse_loss", "argument 'reduction'");
    int reduction = strcmp(r, "none") == 0 ? 0 : strcmp(r, "mean") == 0 ? 1 : strcmp(r, "sum") == 0 ? 2 : -1;
    if (reduction < 0) wl_raise(L, "mse_loss: invalid reduction '%s' (expected 'mean', 'sum' or 'none')", r);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_mse_loss(slot, x, y, reduction));
    return 1;
}

static int nn_int(lua_State *L, int idx, const char *fn, const char *what) {
    if (lua_type(L, idx) != LUA_TNUMBER)
        wl_raise(L, "%s: %s must be an integer, got %s", fn, what, luaL_typename(L, idx));
    lua_Number v = lua_tonumber(L, idx);
    if (v != floor(v) || v < -2147483647.0 || v > 2147483647.0)
        wl_raise(L, "%s: %s must be an integer, got %.17g", fn, what, (double)v);
    return (int)v;
}

/* A number n (for both dims) or a table {h, w}. */
static void nn_pair(lua_State *L, int idx, const char *fn, const char *what, int *h, int *w) {
    if (idx < 0) idx = lua_gettop(L) + idx + 1;
    if (lua_type(L, idx) == LUA_TNUMBER) {
        *h = *w = nn_int(L, idx, fn, what);
        return;
    }
    if (lua_istable(L, idx) && lua_objlen(L, idx) == 2) {
        lua_rawgeti(L, idx, 1);
        lua_rawgeti(L, idx, 2);
        *h = nn_int(L, -2, fn, what);
        *w = nn_int(L, -1, fn, what);
        lua_pop(L, 2);
        return;
    }
    wl_raise(L, "%s: %s must be a number or a table of two numbers {h, w}, got %s", fn, what,
             lua_istable(L, idx) ? "a table of another length" : luaL_typename(L, idx));
}

/* The options table at idx (0: none): raises on keys outside `allowed` (NULL-terminated). */
static void nn_check_keys(lua_State *L, int idx, const char *fn, const char *const *allowed, const char *list) {
    if (!idx) return;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            wl_raise(L, "%s: unexpected %s key in the options table (expected %s)", fn, luaL_typename(L, -2), list);
        int ok = 0;
        for (const char *const *a = allowed; *a && !ok; a++) ok = strcmp(*a, lua_tostring(L, -2)) == 0;
        if (!ok) wl_raise(L, "%s: unknown option '%s' (expected %s)", fn, lua_tostring(L, -2), list);
        lua_pop(L, 1);
    }
}

/* The field `key` of the options table at idx pushed, or nil when there is none. */
static int nn_field(lua_State *L, int idx, const char *key) {
    if (!idx) {
        lua_pushnil(L);
        return 0;
    }
    lua_getfield(L, idx, key);
    return !lua_isnil(L, -1);
}

static int nn_flag(lua_State *L, int idx, const char *key, const char *fn, int def) {
    int v = def;
    if (nn_field(L, idx, key)) {
        if (!lua_isboolean(L, -1)) wl_raise(L, "%s: %s must be a boolean, got %s", fn, key, luaL_typename(L, -1));
        v = lua_toboolean(L, -1);
    }
    lua_pop(L, 1);
    return v;
}

/* An options table at `idx` (nil or absent: 0). */
static int nn_options(lua_State *L, int idx, const char *fn) {
    if (lua_isnoneornil(L, idx)) return 0;
    if (!lua_istable(L, idx)) wl_raise(L, "%s: expected an options table, got %s", fn, luaL_typename(L, idx));
    return idx;
}

/* wick._core.conv2d(input, weight, bias_or_nil, {stride =, padding =, dilation =, groups =}) */
WL_FUNCTION(m_conv2d) {
    static const char *const keys[] = {"stride", "padding", "dilation", "groups", NULL};
    wick_tensor *input = wl_checktensor(L, 1, "conv2d", "input");
    wick_tensor *weight = wl_checktensor(L, 2, "conv2d", "weight");
    wick_tensor *bias = NULL;
    int opts;
    if (lua_istable(L, 3) && !wl_totensor(L, 3)) { /* conv2d(x, w, {padding = 1}) */
        opts = 3;
    } else {
        if (!lua_isnoneornil(L, 3)) bias = wl_checktensor(L, 3, "conv2d", "bias");
        opts = nn_options(L, 4, "conv2d");
    }
    nn_check_keys(L, opts, "conv2d", keys, "stride, padding, dilation, groups");
    int sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
    int same = 0;
    if (nn_field(L, opts, "stride")) nn_pair(L, -1, "conv2d", "stride", &sh, &sw);
    if (nn_field(L, opts, "dilation")) nn_pair(L, -1, "conv2d", "dilation", &dh, &dw);
    if (nn_field(L, opts, "groups")) groups = nn_int(L, -1, "conv2d", "groups");
    if (nn_field(L, opts, "padding")) {
        if (lua_type(L, -1) == LUA_TSTRING) {
            const char *mode = lua_tostring(L, -1);
            if (strcmp(mode, "same") == 0) same = 1;
            else if (strcmp(mode, "valid") != 0)
                wl_raise(L, "conv2d: Invalid padding string '%s', should be one of {'valid', 'same'}", mode);
        } else {
            nn_pair(L, -1, "conv2d", "padding", &ph, &pw);
        }
    }
    if (same) { /* stride 1: pad by half the dilated kernel, which must be odd-sized to stay symmetric */
        if (sh != 1 || sw != 1) wl_raise(L, "conv2d: padding='same' is not supported for strided convolutions");
        if (wick_tensor_ndim(weight) == 4) {
            const int64_t *ws = wick_tensor_sizes(weight);
            int64_t th = 0, tw = 0;
            if (__builtin_mul_overflow((int64_t)dh, ws[2] - 1, &th) || __builtin_mul_overflow((int64_t)dw, ws[3] - 1, &tw) ||
                th / 2 > INT_MAX || tw / 2 > INT_MAX)
                wl_raise(L, "conv2d: padding='same' would need a padding larger than %d", INT_MAX);
            if (th % 2 || tw % 2)
                wl_raise(L, "conv2d: padding='same' needs an odd (dilated) kernel size here: asymmetric padding is "
                            "not supported");
            ph = (int)(th / 2), pw = (int)(tw / 2);
        }
    }
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_conv2d(slot, input, weight, bias, sh, sw, ph, pw, dh, dw, groups));
    wl_account(L);
    return 1;
}

/* wick._core.conv_transpose2d(input, weight, bias_or_nil, {stride =, padding =, output_padding =, groups =,
 * dilation =}): each a number or {h, w} */
WL_FUNCTION(m_conv_transpose2d) {
    static const char *const keys[] = {"stride", "padding", "output_padding", "groups", "dilation", NULL};
    const char *fn = "conv_transpose2d";
    wick_tensor *input = wl_checktensor(L, 1, fn, "input");
    wick_tensor *weight = wl_checktensor(L, 2, fn, "weight");
    wick_tensor *bias = lua_isnoneornil(L, 3) ? NULL : wl_checktensor(L, 3, fn, "bias");
    int opts = nn_options(L, 4, fn);
    nn_check_keys(L, opts, fn, keys, "stride, padding, output_padding, groups, dilation");
    int stride[2] = {1, 1}, pad[2] = {0, 0}, opad[2] = {0, 0}, dil[2] = {1, 1}, groups = 1;
    int *pairs[4] = {stride, pad, opad, dil};
    const char *names[4] = {"stride", "padding", "output_padding", "dilation"};
    for (int i = 0; i < 4; i++) {
        if (nn_field(L, opts, names[i])) nn_pair(L, -1, fn, names[i], &pairs[i][0], &pairs[i][1]);
        lua_pop(L, 1);
    }
    if (nn_field(L, opts, "groups")) groups = nn_int(L, -1, fn, "groups");
    lua_pop(L, 1);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_conv_transpose2d(slot, input, weight, bias, stride, pad, opad, dil, groups));
    wl_account(L);
    return 1;
}

/* wick._core.grid_sample2d(input, grid, mode (0 bilinear, 1 nearest), padding (0 zeros, 1 border,
 * 2 reflection), align_corners) */
WL_FUNCTION(m_grid_sample2d) {
    const char *fn = "grid_sample";
    wick_tensor *input = wl_checktensor(L, 1, fn, "input"), *grid = wl_checktensor(L, 2, fn, "grid");
    int mode = nn_int(L, 3, fn, "mode"), padding = nn_int(L, 4, fn, "padding_mode"), align = lua_toboolean(L, 5);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_grid_sample2d(slot, input, grid, mode, padding, align));
    wl_account(L);
    return 1;
}

/* wick._core.grid_sample2d_backward(grad_out, input, grid, mode, padding, align_corners, want_input,
 * want_grid): the two gradients (nil where not wanted) */
WL_FUNCTION(m_grid_sample2d_backward) {
    const char *fn = "grid_sample backward";
    wick_tensor *g = wl_checktensor(L, 1, fn, "grad_output"), *input = wl_checktensor(L, 2, fn, "input"),
                *grid = wl_checktensor(L, 3, fn, "grid");
    int mode = nn_int(L, 4, fn, "mode"), padding = nn_int(L, 5, fn, "padding_mode"), align = lua_toboolean(L, 6);
    int want_in = lua_toboolean(L, 7), want_grid = lua_toboolean(L, 8);
    wick_tensor **gi = want_in ? wl_new_slot(L) : (lua_pushnil(L), NULL);
    wick_tensor **gg = want_grid ? wl_new_slot(L) : (lua_pushnil(L), NULL);
    wl_check(L, wick_grid_sample2d_backward(gi, gg, g, input, grid, mode, padding, align));
    wl_account(L);
    return 2;
}

/* wick._core.upsample2d(input, out_h, out_w, mode (0 nearest, 1 bilinear), align_corners, scale_h, scale_w) */
WL_FUNCTION(m_upsample2d) {
    const char *fn = "interpolate";
    wick_tensor *input = wl_checktensor(L, 1, fn, "input");
    int oh = nn_int(L, 2, fn, "output height"), ow = nn_int(L, 3, fn, "output width");
    int mode = nn_int(L, 4, fn, "mode"), align = lua_toboolean(L, 5);
    double sh = luaL_optnumber(L, 6, 0), sw = luaL_optnumber(L, 7, 0);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_upsample2d(slot, input, oh, ow, mode, align, sh, sw));
    wl_account(L);
    return 1;
}

/* kernel_size at 2, then {stride =, padding =, ceil_mode =, ...}: stride defaults to the kernel */
static int nn_pool_args(lua_State *L, const char *fn, const char *const *keys, const char *list, int *k) {
    nn_pair(L, 2, fn, "kernel_size", &k[0], &k[1]);
    int opts = nn_options(L, 3, fn);
    nn_check_keys(L, opts, fn, keys, list);
    k[2] = k[0], k[3] = k[1], k[4] = k[5] = 0;
    if (nn_field(L, opts, "stride")) nn_pair(L, -1, fn, "stride", &k[2], &k[3]);
    lua_pop(L, 1);
    if (nn_field(L, opts, "padding")) nn_pair(L, -1, fn, "padding", &k[4], &k[5]);
    lua_pop(L, 1);
    return opts;
}

/* wick._core.max_pool2d(input, kernel_size, {stride =, padding =, dilation = 1, ceil_mode =, return_indices =}) */
WL_FUNCTION(m_max_pool2d) {
    static const char *const keys[] = {"stride", "padding", "dilation", "ceil_mode", "return_indices", NULL};
    wick_tensor *input = wl_checktensor(L, 1, "max_pool2d", "input");
    int k[6], dh = 1, dw = 1;
    int opts = nn_pool_args(L, "max_pool2d", keys, "stride, padding, dilation, ceil_mode, return_indices", k);
    if (nn_field(L, opts, "dilation")) nn_pair(L, -1, "max_pool2d", "dilation", &dh, &dw);
    lua_pop(L, 1);
    if (dh != 1 || dw != 1) wl_raise(L, "max_pool2d: dilation other than 1 is not supported");
    int ceil_mode = nn_flag(L, opts, "ceil_mode", "max_pool2d", 0);
    int with_indices = nn_flag(L, opts, "return_indices", "max_pool2d", 0);
    wick_tensor **slot = wl_new_slot(L), **islot = with_indices ? wl_new_slot(L) : NULL;
    wl_check(L, wick_max_pool2d(slot, islot, input, k[0], k[1], k[2], k[3], k[4], k[5], ceil_mode));
    if (islot) wl_to_one_based(L, *islot);
    wl_account(L);
    return with_indices ? 2 : 1;
}

/* wick._core.avg_pool2d(input, kernel_size, {stride =, padding =, ceil_mode =, count_include_pad = true}) */
WL_FUNCTION(m_avg_pool2d) {
    static const char *const keys[] = {"stride", "padding", "ceil_mode", "count_include_pad", "divisor_override", NULL};
    wick_tensor *input = wl_checktensor(L, 1, "avg_pool2d", "input");
    int k[6];
    int opts = nn_pool_args(L, "avg_pool2d", keys, "stride, padding, ceil_mode, count_include_pad", k);
    if (nn_field(L, opts, "divisor_override")) wl_raise(L, "avg_pool2d: divisor_override is not supported");
    lua_pop(L, 1);
    int ceil_mode = nn_flag(L, opts, "ceil_mode", "avg_pool2d", 0);
    int include_pad = nn_flag(L, opts, "count_include_pad", "avg_pool2d", 1);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_avg_pool2d(slot, input, k[0], k[1], k[2], k[3], k[4], k[5], ceil_mode, include_pad));
    wl_account(L);
    return 1;
}

static const luaL_Reg nn_fns[] = {
    {SDPA, m_sdpa},
    {"linear", m_linear},
    {"mse_loss", m_mse_loss},
    {"conv2d", m_conv2d},
    {"conv_transpose2d", m_conv_transpose2d},
    {"upsample2d", m_upsample2d},
    {"grid_sample2d", m_grid_sample2d},
    {"grid_sample2d_backward", m_grid_sample2d_backward},
    {"max_pool2d", m_max_pool2d},
    {"avg_pool2d", m_avg_pool2d},
    {NULL, NULL}};

void wl_open_nn(lua_State *L) { luaL_register(L, NULL, nn_fns); }
