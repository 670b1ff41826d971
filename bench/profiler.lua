-- bench/profiler.lua — what the profiler costs per op.
--   build/wick bench/profiler.lua
-- Prints `name<TAB>seconds per op` for tiny ops through the classic binding
-- (relu, sum, t, matmul of 4x4): `off` is the normal run, `on` the same loop
-- inside wick.profiler.profile, `cost` their difference (median of REPEATS
-- alternating runs). What the hook costs while no profile records:
-- bench/profiler_off.sh.
local wick = require("wick")

local N, REPEATS = 20000, 7
local clock = wick._core.clock

local function median(v)
  table.sort(v)
  return v[math.floor((#v + 1) / 2)]
end

local x = wick.randn(4, 4)
local ops = {
  relu = function() return x:relu() end,
  sum = function() return x:sum() end,
  t = function() return x:t() end,
  matmul = function() return x:matmul(x) end,
}
local names = { "relu", "sum", "t", "matmul" }

local function loop(f)
  local t0 = clock()
  for _ = 1, N do f() end
  return (clock() - t0) / N
end

for _, name in ipairs(names) do
  local f = ops[name]
  loop(f) -- warm-up
  local off, on, cost = {}, {}, {}
  for r = 1, REPEATS do
    collectgarbage()
    off[r] = loop(f)
    collectgarbage()
    local t
    wick.profiler.profile(function() t = loop(f) end, { max_events = N + 10 })
    on[r] = t
    cost[r] = on[r] - off[r]
  end
  print(("%s_off\t%.3e"):format(name, median(off)))
  print(("%s_on\t%.3e"):format(name, median(on)))
  print(("%s_cost\t%.3e"):format(name, median(cost)))
end
