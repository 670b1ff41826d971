/* Fused optimizer steps for lua/wick/optim.lua (wick_adam_step_, wick_sgd_step_,
 * wick_adadelta_step_, src/core/optim.c). */
#include "wick_lua.h"

/* _adam_step(p, g, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled)
 * -> true when the fused loop ran, false when this case is the composed update's. */
WL_FUNCTION(m_adam_step) {
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

/* _amp_unscale_(grads, found_inf, inv_scale): GradScaler's fused unscale of an
 * array of gradients (wick_amp_unscale_). */
WL_FUNCTION(m_amp_unscale) {
    static const char *fn = "_amp_unscale_";
    luaL_checktype(L, 1, LUA_TTABLE);
    wick_tensor *found_inf = wl_checktensor(L, 2, fn, "found_inf");
    wick_tensor *inv_scale = wl_checktensor(L, 3, fn, "inv_scale");
    int n = (int)lua_objlen(L, 1);
    wick_tensor **grads = lua_newuserdata(L, (size_t)(n > 0 ? n : 1) * sizeof *grads);
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, 1, i + 1);
        grads[i] = wl_checktensor(L, -1, fn, "grads"); /* the table keeps it alive */
        lua_pop(L, 1);
    }
    wl_check(L, wick_amp_unscale_(n, grads, found_inf, inv_scale));
    return 0;
}

/* _sgd_step(p, g, buf|nil, lr, momentum, dampening, weight_decay, nesterov, maximize, first)
 * -> true when the fused loop ran, false when this case is the composed update's. */
WL_FUNCTION(m_sgd_step) {
    static const char *fn = "_sgd_step";
    wick_tensor *p = wl_checktensor(L, 1, fn, "param");
    wick_tensor *g = wl_checktensor(L, 2, fn, "grad");
    wick_tensor *buf = lua_isnoneornil(L, 3) ? NULL : wl_checktensor(L, 3, fn, "momentum_buffer");
    double lr = wl_checknumber(L, 4, fn, "lr"), momentum = wl_checknumber(L, 5, fn, "momentum");
    double dampening = wl_checknumber(L, 6, fn, "dampening"), weight_decay = wl_checknumber(L, 7, fn, "weight_decay");
    lua_pushboolean(L, wick_sgd_step_(p, g, buf, lr, momentum, dampening, weight_decay, lua_toboolean(L, 8),
                                      lua_toboolean(L, 9), lua_toboolean(L, 10)) == 0);
    return 1;
}

/* _adadelta_step(p, g, square_avg, acc_delta, lr, rho, eps, weight_decay, maximize)
 * -> true when the fused loop ran, false when this case is the composed update's. */
WL_FUNCTION(m_adadelta_step) {
    static const char *fn = "_adadelta_step";
    wick_tensor *p = wl_checktensor(L, 1, fn, "param");
    wick_tensor *g = wl_checktensor(L, 2, fn, "grad");
    wick_tensor *sq = wl_checktensor(L, 3, fn, "square_avg");
    wick_tensor *acc = wl_checktensor(L, 4, fn, "acc_delta");
    double lr = wl_checknumber(L, 5, fn, "lr"), rho = wl_checknumber(L, 6, fn, "rho");
    double eps = wl_checknumber(L, 7, fn, "eps"), weight_decay = wl_checknumber(L, 8, fn, "weight_decay");
    lua_pushboolean(L, wick_adadelta_step_(p, g, sq, acc, lr, rho, eps, weight_decay, lua_toboolean(L, 9)) == 0);
    return 1;
}

static const luaL_Reg optim_fns[] = {{"_adam_step", m_adam_step},
                                     {"_sgd_step", m_sgd_step},
                                     {"_adadelta_step", m_adadelta_step},
                                     {"_amp_unscale_", m_amp_unscale},
                                     {NULL, NULL}};

void wl_open_optim(lua_State *L) { luaL_register(L, NULL, optim_fns); }
