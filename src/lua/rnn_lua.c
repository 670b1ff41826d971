/* Binding of the fused recurrent layer (src/core/rnn.c) as wick._core.rnn_layer;
 * lua/wick/nn/recurrent.lua checks the arguments with PyTorch's texts first. */
#include "wick_lua.h"

#include <string.h>

static wick_tensor *opt_tensor(lua_State *L, int idx, const char *arg) {
    return lua_isnoneornil(L, idx) ? NULL : wl_checktensor(L, idx, "rnn_layer", arg);
}

/* rnn_layer(mode, gi, h0, c0|nil, w_hh, b_hh|nil, lengths|nil, reverse) with mode
 * "RNN_TANH", "RNN_RELU", "LSTM" or "GRU"; returns [T + 1 (+1), B, H]. */
WL_FUNCTION(l_rnn_layer) {
    static const char *const modes[] = {"RNN_TANH", "RNN_RELU", "LSTM", "GRU", NULL};
    const char *m = wl_checkstring(L, 1, "rnn_layer", "mode");
    int mode = -1;
    for (int i = 0; modes[i]; i++)
        if (!strcmp(m, modes[i])) mode = i;
    if (mode < 0) return wl_raise(L, "rnn_layer: invalid mode '%s' (expected RNN_TANH, RNN_RELU, LSTM or GRU)", m);
    wick_tensor *gi = wl_checktensor(L, 2, "rnn_layer", "input");
    wick_tensor *h0 = wl_checktensor(L, 3, "rnn_layer", "hx");
    wick_tensor *c0 = opt_tensor(L, 4, "c0");
    wick_tensor *w_hh = wl_checktensor(L, 5, "rnn_layer", "weight_hh");
    wick_tensor *b_hh = opt_tensor(L, 6, "bias_hh");
    wick_tensor *lengths = opt_tensor(L, 7, "lengths");
    int reverse = lua_toboolean(L, 8);
    wick_tensor **slot = wl_new_slot(L);
    wl_check(L, wick_rnn_layer(slot, (wick_rnn_mode)mode, gi, h0, c0, w_hh, b_hh, lengths, reverse));
    wl_account(L);
    return 1;
}

void wl_open_rnn(lua_State *L) {
    lua_pushcfunction(L, l_rnn_layer);
    lua_setfield(L, -2, "rnn_layer");
}
