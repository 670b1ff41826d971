-- bench/rnn.lua — the wick side of the recurrent-layer benchmark
-- (bench/rnn_torch.py is the PyTorch side: same cases, counts and timing).
--   build/wick bench/rnn.lua [threads]      (default: $THREADS, else 1)
-- Prints one `name<TAB>milliseconds` line per case: the median over REPEATS
-- loops of the per-call CPU time of a layer's forward without grad (`_fwd`),
-- or of its forward and backward from fixed output gradients (`_fwdbwd`).
-- The sizes are pytorch/examples' word_language_model (emsize = nhid = 200,
-- 2 layers, bptt 35, batch 20) and its medium model (650).
local wick = require("wick")
local nn = wick.nn

local timing = dofile("bench/timing.lua")
local threads = tonumber(arg and arg[1] or os.getenv("THREADS") or "1")
wick.set_num_threads(threads)
local REPEATS = 7

-- name, kind, input size, hidden size, layers, steps, batch, calls per loop
local CASES = {
  { "lstm_wlm", "LSTM", 200, 200, 2, 35, 20, 10 },
  { "gru_wlm", "GRU", 200, 200, 2, 35, 20, 10 },
  { "lstm_650", "LSTM", 650, 650, 2, 35, 20, 2 },
  { "lstm_small_batch1", "LSTM", 64, 64, 1, 100, 1, 20 },
}

wick.manual_seed(0)
for _, c in ipairs(CASES) do
  local name, kind, I, H, Lay, T, B, n = (table.unpack or unpack)(c)
  local m = nn[kind](I, H, Lay)
  local x = wick.randn(T, B, I, { requires_grad = true })
  local g = wick.randn(T, B, H)
  local fwd = timing.time(n, function() return wick.no_grad(function() return m(x) end) end, REPEATS)
  local fwdbwd = timing.time(n, function()
    m:zero_grad()
    x.grad = nil
    local out = m(x)
    out:backward(g)
  end, REPEATS)
  print(("%s_fwd\t%.4f"):format(name, fwd * 1e3))
  print(("%s_fwdbwd\t%.4f"):format(name, fwdbwd * 1e3))
end
