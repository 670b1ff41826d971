/* Fused optimizer steps for lua/wick/optim.lua (wick_adam_step_, src/core/optim.c). */
#include "wick_lua.h"

/* _adam_step(p, g, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled)
 * -> true when the fused loop ran, false when this case is the composed update's. */
static int m_adam_step(lua_State *L) {
    static const char *fn = "_adam_step";
    wick_tensor *p = wl_checktensor(L, 1, fn, "param");
    wick_tensor *g = wl_checktensor(L, 2, fn, "grad");
    wick_tensor *m = wl_checktensor(L, 3, fn, "exp_avg");
    wick_tensor *v = wl_checktensor(L, 4, fn, "exp_avg_sq");
    double lr = wl_checknumber(L, 5, fn, "lr"), beta1 = wl_checknumber(L, 6, fn, "beta1");
    double beta2 = wl_checknumber(L, 7, fn, "beta2"), eps = wl_checknumber(L, 8, fn, "eps");
    double weight_decay = wl_checknumber(L, 9, fn, "weight_decay");
    int64_t step = wl_checkint(L, 10, fn, "step");
    lua_pushboolean(L, wick_adam_step_(p, g, m, v, lr, beta1, beta2, eps, weight_decay, step, lua_toboolean(L, 11)) == 0);
    return 1;
}

static const luaL_Reg optim_fns[] = {{"_adam_step", m_adam_step}, {NULL, NULL}};

void wl_open_optim(lua_State *L) { luaL_register(L, NULL, optim_fns); }
