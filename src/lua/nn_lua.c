/* Bindings of fused nn ops: scaled-dot-product attention. */
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
static int m_sdpa(lua_State *L) {
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

static const luaL_Reg nn_fns[] = {{SDPA, m_sdpa}, {NULL, NULL}};

void wl_open_nn(lua_State *L) { luaL_register(L, NULL, nn_fns); }
