-- bench/profiler_off.lua — one side of bench/profiler_off.sh: what the
-- profiler's hook costs while no profile records. Run by a build with the hook
-- (the default) and one without (-DWICK_PROFILER_HOOK=OFF): the .sh
-- alternates the two and compares.
--   build/wick bench/profiler_off.lua [N] [REPEATS]
-- Prints `name<TAB>ns per op` (median of REPEATS loops of N ops, after one
-- warm-up loop) for 4x4 float32 tensors:
--   relu, sum, t, matmul, add_binding  through the classic binding (add with an
--                                       alpha argument skips the FFI fast path)
--   module                              an nn.Linear(4, 4) call (nn.Module.__call's
--                                       test of the profiler's flag, and linear)
--   add_ffi, mm_ffi                     LuaJIT FFI fast paths (the same in both
--                                       runs: their one test of wick_profiling
--                                       is compiled in either way)
local wick = require("wick")
local clock = wick._core.clock

local N, REPEATS = tonumber(arg and arg[1]) or 50000, tonumber(arg and arg[2]) or 5
wick.set_num_threads(1)

local function median(v)
  table.sort(v)
  return v[math.floor((#v + 1) / 2)]
end

local x, y = wick.randn(4, 4), wick.randn(4, 4)
local lin = wick.nn.Linear(4, 4)
lin.weight.requires_grad, lin.bias.requires_grad = false, false
local cases = {
  { "relu", function(n) local c; for _ = 1, n do c = x:relu() end; return c end },
  { "sum", function(n) local c; for _ = 1, n do c = x:sum() end; return c end },
  { "t", function(n) local c; for _ = 1, n do c = x:t() end; return c end },
  { "matmul", function(n) local c; for _ = 1, n do c = x:matmul(y) end; return c end },
  { "add_binding", function(n) local c; for _ = 1, n do c = x:add(y, 1) end; return c end },
  { "module", function(n) local c; for _ = 1, n do c = lin(x) end; return c end },
  { "add_ffi", function(n) local c; for _ = 1, n do c = x + y end; return c end },
  { "mm_ffi", function(n) local c; for _ = 1, n do c = x:mm(y) end; return c end },
}

io.write(("hooked\t%s\n"):format(tostring(wick._core.profiler_hooked)))
for _, case in ipairs(cases) do
  local name, body = case[1], case[2]
  body(N) -- warm-up (and JIT compilation)
  local t = {}
  for r = 1, REPEATS do
    collectgarbage()
    local t0 = clock()
    body(N)
    t[r] = (clock() - t0) / N * 1e9
  end
  io.write(("%s\t%.1f\n"):format(name, median(t)))
  io.flush()
end
