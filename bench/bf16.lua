-- bench/bf16.lua — the wick side of bench/bf16.sh (bench/bf16_torch.py is the
-- PyTorch side: same cases, sizes and timing rules).
--   build/wick bench/bf16.lua [threads]      (default 1)
-- Prints one `name<TAB>ms` line per case (per product, the output allocated
-- each time; median of REPEATS timings of a loop of products lasting about
-- 0.05 s, after a warm-up product; GFLOP/s = 2 N^3 / ms * 1e-6):
--   bf16_N     N x N bfloat16 @ N x N bfloat16
--   bf16_NT_N  N x N @ (N x N)^T: a linear layer's forward (x @ W^T)
--   bf16_TN_N  (N x N)^T @ N x N: a linear layer's weight gradient
--   f16_N      the same in float16
--   cast_f16_N / cast_bf16_N   N x N float32 :to float16 / bfloat16 (autocast's
--              casts) and, as uncast_..., back to float32 (not in the default CASES)
local wick = require("wick")
local timing = dofile("bench/timing.lua")

local threads = tonumber(arg and arg[1] or "1")
wick.set_num_threads(threads)
local REPEATS = tonumber(os.getenv("REPEATS") or "5")
local SIZES = { 256, 512, 1024, 2048 }
local CASES = os.getenv("CASES") or "bf16,bf16_NT,bf16_TN,f16"
-- BENCH_CLOCK=cpu: process CPU time instead of wall-clock (1 thread, a loaded machine)
local clock = os.getenv("BENCH_CLOCK") == "cpu" and os.clock or wick.clock

local function ms(f)
  f() -- warm-up
  local t0 = clock()
  f()
  local iters = math.max(1, math.floor(0.05 / math.max(clock() - t0, 1e-6)))
  local t = {}
  for r = 1, REPEATS do
    collectgarbage()
    local t1 = clock()
    for _ = 1, iters do f() end
    t[r] = (clock() - t1) / iters
  end
  return timing.median(t) * 1e3
end

for case in CASES:gmatch("[^,]+") do
  local dtype = case:find("f16") and not case:find("bf16") and "float16" or "bfloat16"
  if case:sub(1, 5) == "cast_" then
    for _, n in ipairs(SIZES) do
      local x = wick.randn(n, n)
      local h = x:to(dtype)
      print(("%s_%d\t%.4f"):format(case, n, ms(function() return x:to(dtype) end)))
      print(("un%s_%d\t%.4f"):format(case, n, ms(function() return h:to("float32") end)))
      io.stdout:flush()
    end
  end
  for _, n in ipairs(case:sub(1, 5) == "cast_" and {} or SIZES) do
    local a, b = wick.randn(n, n):to(dtype), wick.randn(n, n):to(dtype)
    local f
    if case:find("_NT") then f = function() return a:mm(b:t()) end
    elseif case:find("_TN") then f = function() return a:t():mm(b) end
    else f = function() return a:mm(b) end end
    print(("%s_%d\t%.4f"):format(case, n, ms(f)))
    io.stdout:flush()
  end
end
