-- bench/timing.lua — what the Lua sides of the side-by-side benchmarks share
-- (bench/timing_torch.py is the PyTorch sides'): the median, and the per-call
-- CPU time of this process (one thread on both sides: robust on a shared
-- machine) as the median over `repeats` loops of n calls after one warm-up.
--   local timing = dofile("bench/timing.lua")
local M = {}

function M.median(v)
  table.sort(v)
  local n = #v
  if n % 2 == 1 then return v[(n + 1) / 2] end
  return 0.5 * (v[n / 2] + v[n / 2 + 1])
end

function M.time(n, fn, repeats)
  local runs = {}
  fn() -- warm-up
  for r = 1, repeats or 7 do
    collectgarbage()
    local t0 = os.clock()
    for _ = 1, n do fn() end
    runs[r] = (os.clock() - t0) / n
  end
  return M.median(runs)
end

return M
