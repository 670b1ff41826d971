"""Attention blocks: nn.MultiheadAttention, nn.TransformerEncoderLayer,
nn.TransformerDecoderLayer, nn.TransformerEncoder, nn.TransformerDecoder and
nn.Transformer on fixed weights and inputs (dropout 0).

Each case records the module's parameter names (named_parameters order: the
spec checks that wick names them alike, then fills them with formula(shape, j)),
the outputs (and attention weights), and the gradients of
loss = sum(out * formula(out.shape, 50)) [+ sum(weights * formula(w.shape, 51))]
for every input and every parameter. spec/transformer_spec.lua repeats each
case (same names, same constructor arguments, same forward call).
"""
import torch
import torch.nn as nn

from reference.common import formula, fill_parameters, write_lua

NAME = "attention"
NEG = float("-inf")


def x(shape, j, dtype):
    """Input j: formula(shape, 30 + j) (distinct values for query, key, value)."""
    return formula(shape, 30 + j, dtype).requires_grad_(True)


def bool_mask(rows):
    return torch.tensor(rows, dtype=torch.bool)


def causal(n, dtype):
    return nn.Transformer.generate_square_subsequent_mask(n, dtype=dtype)


def run(module, inputs, call, dtype):
    """fill, forward, backward; returns the case's record."""
    module = module.to(dtype)
    fill_parameters(module)
    names = [n for n, _ in module.named_parameters()]
    res = call(module, *inputs)
    out, weights = (res if isinstance(res, tuple) else (res, None))
    loss = (out * formula(out.shape, 50, dtype)).sum()
    if weights is not None:
        loss = loss + (weights * formula(weights.shape, 51, dtype)).sum()
    loss.backward()
    rec = {"names": names, "out": out}
    if weights is not None:
        rec["weights"] = weights
    rec["input_grads"] = [t.grad for t in inputs]
    rec["param_grads"] = [p.grad for _, p in module.named_parameters()]
    return rec


def cases_for(dtype):
    c = {}
    L, S, N, E = 3, 4, 2, 8
    kpm = bool_mask([[False, False, False, True], [False, False, True, True]])
    # bool attn_mask: True = not allowed; no row fully masked
    am_bool = bool_mask([[False, True, False, False], [False, False, True, True], [True, False, False, True]])
    am_float = formula((L, S), 40, dtype)

    def mha(**kw):
        return nn.MultiheadAttention(E, 2, dropout=0.0, **kw)

    # self-attention (one projection), weights averaged
    c["mha_self"] = run(mha(), [x((L, N, E), 0, dtype)], lambda m, q: m(q, q, q), dtype)
    # cross attention, distinct q/k/v, per-head weights, key padding + bool mask
    c["mha_cross_masks"] = run(mha(), [x((L, N, E), 0, dtype), x((S, N, E), 1, dtype), x((S, N, E), 2, dtype)],
                               lambda m, q, k, v: m(q, k, v, key_padding_mask=kpm, attn_mask=am_bool,
                                                    average_attn_weights=False), dtype)
    # key is value (memory), float mask, no weights (the fused path)
    c["mha_kv_float_mask"] = run(mha(), [x((L, N, E), 0, dtype), x((S, N, E), 1, dtype)],
                                 lambda m, q, k: m(q, k, k, attn_mask=am_float, need_weights=False)[0], dtype)
    # batch_first, no bias, 3-D attn_mask (N * heads, L, S), fused path with padding
    am3 = formula((N * 2, L, S), 41, dtype)
    c["mha_batch_first"] = run(mha(batch_first=True, bias=False),
                               [x((N, L, E), 0, dtype), x((N, S, E), 1, dtype), x((N, S, E), 2, dtype)],
                               lambda m, q, k, v: m(q, k, v, attn_mask=am3, key_padding_mask=kpm, need_weights=False)[0],
                               dtype)
    # kdim/vdim (separate projection weights), add_bias_kv, add_zero_attn
    c["mha_kdim_bias_kv"] = run(nn.MultiheadAttention(E, 4, kdim=5, vdim=6, add_bias_kv=True, add_zero_attn=True),
                                [x((L, N, E), 0, dtype), x((S, N, 5), 1, dtype), x((S, N, 6), 2, dtype)],
                                lambda m, q, k, v: m(q, k, v, key_padding_mask=kpm, attn_mask=am_float), dtype)
    # unbatched
    c["mha_unbatched"] = run(mha(), [x((L, E), 0, dtype), x((S, E), 1, dtype)],
                             lambda m, q, k: m(q, k, k, key_padding_mask=kpm[1], attn_mask=am_float), dtype)
    # causal self-attention, fused path
    c["mha_causal"] = run(mha(), [x((S, N, E), 0, dtype)],
                          lambda m, q: m(q, q, q, attn_mask=causal(S, dtype), is_causal=True, need_weights=False)[0],
                          dtype)

    F_ = 16

    def enc_layer(**kw):
        return nn.TransformerEncoderLayer(E, 2, F_, 0.0, **kw)

    def dec_layer(**kw):
        return nn.TransformerDecoderLayer(E, 2, F_, 0.0, **kw)

    c["enc_layer"] = run(enc_layer(), [x((S, N, E), 0, dtype)], lambda m, s: m(s), dtype)
    c["enc_layer_masks"] = run(enc_layer(), [x((S, N, E), 0, dtype)],
                               lambda m, s: m(s, src_mask=causal(S, dtype), src_key_padding_mask=kpm), dtype)
    c["enc_layer_gelu_norm_first"] = run(enc_layer(activation="gelu", norm_first=True, batch_first=True,
                                                   layer_norm_eps=1e-3),
                                         [x((N, S, E), 0, dtype)],
                                         lambda m, s: m(s, src_key_padding_mask=kpm), dtype)
    c["enc_layer_causal"] = run(enc_layer(), [x((S, N, E), 0, dtype)],
                                lambda m, s: m(s, src_mask=causal(S, dtype), is_causal=True), dtype)
    # no biases anywhere (linears, attention, LayerNorms), a float key padding mask
    kpm_float = formula((N, S), 42, dtype)
    c["enc_layer_no_bias"] = run(enc_layer(bias=False), [x((S, N, E), 0, dtype)],
                                 lambda m, s: m(s, src_key_padding_mask=kpm_float), dtype)
    # the is_causal hint with the weights asked for: the mask is used
    c["mha_causal_weights"] = run(mha(), [x((S, N, E), 0, dtype)],
                                  lambda m, q: m(q, q, q, attn_mask=causal(S, dtype), is_causal=True), dtype)
    c["encoder"] = run(nn.TransformerEncoder(enc_layer(), 2, enable_nested_tensor=False),
                       [x((S, N, E), 0, dtype)], lambda m, s: m(s, mask=causal(S, dtype)), dtype)
    c["encoder_norm"] = run(nn.TransformerEncoder(enc_layer(batch_first=True, norm_first=True), 3,
                                                  norm=nn.LayerNorm(E), enable_nested_tensor=False),
                            [x((N, S, E), 0, dtype)], lambda m, s: m(s, src_key_padding_mask=kpm), dtype)
    c["dec_layer"] = run(dec_layer(), [x((L, N, E), 0, dtype), x((S, N, E), 1, dtype)],
                         lambda m, t, mem: m(t, mem, tgt_mask=causal(L, dtype), memory_key_padding_mask=kpm), dtype)
    c["dec_layer_gelu_norm_first"] = run(dec_layer(activation="gelu", norm_first=True, batch_first=True),
                                         [x((N, L, E), 0, dtype), x((N, S, E), 1, dtype)],
                                         lambda m, t, mem: m(t, mem, memory_mask=am_bool, tgt_is_causal=True,
                                                             tgt_mask=causal(L, dtype)), dtype)
    c["decoder"] = run(nn.TransformerDecoder(dec_layer(), 2, norm=nn.LayerNorm(E)),
                       [x((L, N, E), 0, dtype), x((S, N, E), 1, dtype)],
                       lambda m, t, mem: m(t, mem, tgt_mask=causal(L, dtype), memory_key_padding_mask=kpm), dtype)
    c["transformer"] = run(nn.Transformer(E, 2, 2, 1, F_, 0.0),
                           [x((S, N, E), 0, dtype), x((L, N, E), 1, dtype)],
                           lambda m, s, t: m(s, t, tgt_mask=causal(L, dtype), src_key_padding_mask=kpm,
                                             memory_key_padding_mask=kpm), dtype)
    return c


def write(out_dir):
    torch.manual_seed(0)
    f32 = cases_for(torch.float32)
    cases = {"float64": cases_for(torch.float64),
             "float32": {k: f32[k] for k in ("mha_cross_masks", "mha_kdim_bias_kv", "enc_layer_masks", "decoder")}}
    cases["square_subsequent_mask_3"] = nn.Transformer.generate_square_subsequent_mask(3)
    return write_lua(out_dir, NAME, cases,
                     "attention blocks: outputs, attention weights, input and parameter gradients")
