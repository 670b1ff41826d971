-- bench/attention.lua — the wick side of the attention benchmark
-- (bench/attention_torch.py is the PyTorch side: same cases, counts and timing).
--   build/wick bench/attention.lua [threads]      (default: $THREADS, else 1)
-- Prints one `name<TAB>milliseconds` line per case: the median over REPEATS
-- loops of the per-call CPU time of F.scaled_dot_product_attention (`_fwd`), or of
-- the call and its backward from a fixed output gradient (`_fwdbwd`); then the
-- attention blocks (nn.TransformerEncoder, MultiheadAttention, Transformer).
local wick = require("wick")
local F = wick.nn.functional

-- CPU time of this process (one thread on both sides: robust on a shared machine)
local timing = dofile("bench/timing.lua")

local threads = tonumber(arg and arg[1] or os.getenv("THREADS") or "1")
wick.set_num_threads(threads)
local REPEATS = 7

-- name, batch, heads, L (= S), head dim, is_causal, dropout_p, calls per loop
local CASES = {
  { "gpt_causal", 12, 4, 64, 32, true, 0, 100 },   -- nanoGPT's CPU size (issue 13)
  { "gpt_full", 12, 4, 64, 32, false, 0, 100 },
  { "gpt_causal_dropout", 12, 4, 64, 32, true, 0.1, 100 },
  { "long_causal", 1, 4, 1024, 64, true, 0, 3 },
}

local function time(n, fn) return timing.time(n, fn, REPEATS) end

wick.manual_seed(0)
for _, c in ipairs(CASES) do
  local name, B, H, T, D, causal, p, n = c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]
  local q = wick.randn(B, H, T, D, { requires_grad = true })
  local k = wick.randn(B, H, T, D, { requires_grad = true })
  local v = wick.randn(B, H, T, D, { requires_grad = true })
  local g = wick.randn(B, H, T, D)
  local opts = { is_causal = causal, dropout_p = p }
  local fwd = time(n, function()
    return wick.no_grad(F.scaled_dot_product_attention, q, k, v, opts)
  end)
  local fwdbwd = time(n, function()
    q.grad, k.grad, v.grad = nil, nil, nil
    F.scaled_dot_product_attention(q, k, v, opts):backward(g)
  end)
  print(("%s_fwd\t%.4f"):format(name, fwd * 1e3))
  print(("%s_fwdbwd\t%.4f"):format(name, fwdbwd * 1e3))
end

-- the attention blocks (lua/wick/nn/attention.lua), forward + backward in training mode
local nn = wick.nn
wick.manual_seed(0)
-- word_language_model's Transformer at its defaults: emsize 200, nhead 2, nhid 200,
-- 2 layers, dropout 0.2, bptt 35, batch 20, causal mask
local T, B, E = 35, 20, 200
local enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, 2, 200, 0.2), 2)
local x = wick.randn({ T, B, E })
local mask = nn.Transformer.generate_square_subsequent_mask(T)
print(("wlm_encoder_fwdbwd\t%.4f"):format(time(10, function() enc(x, mask):sum():backward() end) * 1e3))
-- MultiheadAttention with its weights (the unfused path), key padding
local mha = nn.MultiheadAttention(E, 4)
local kpm = wick.zeros({ B, T }, { dtype = "bool" })
print(("mha_weights_fwdbwd\t%.4f"):format(time(10, function()
  local out, w = mha(x, x, x, { key_padding_mask = kpm })
  local loss = out:sum() + w:sum()
  loss:backward()
end) * 1e3))
-- a small nn.Transformer (2 encoder, 2 decoder layers), batch first
local model = nn.Transformer(128, 4, 2, 2, 256, 0.1, { batch_first = true })
local src, tgt = wick.randn({ 16, 32, 128 }), wick.randn({ 16, 24, 128 })
local tmask = nn.Transformer.generate_square_subsequent_mask(24)
print(("transformer_fwdbwd\t%.4f"):format(time(10, function()
  model(src, tgt, { tgt_mask = tmask }):sum():backward()
end) * 1e3))
