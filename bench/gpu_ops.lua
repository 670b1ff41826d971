-- bench/gpu_ops.lua — wick's side of the GPU launch-overhead benchmark
-- (bench/gpu_ops_torch.py is PyTorch's: same ops, counts and timing rules).
--   build-gpu/wick bench/gpu_ops.lua
-- Ops on 1-element CUDA tensors cost almost nothing on the GPU, so the time per
-- op is what the host spends to check, allocate and launch it. Prints one
-- `<op>_us<TAB>microseconds per op` line per op: the median of 5 loops of N
-- ops each, with wick.cuda.synchronize() before the first and after the last
-- op of a loop (queued work is counted, not hidden); then peak_mem_mb.
local wick = require("wick")

if not wick.cuda.is_available() then
  print("no CUDA GPU: skipped")
  os.exit(0)
end

local N, LOOPS = 20000, 5

local a = wick.ones(1, { device = "cuda" })
local b = wick.ones(1, { device = "cuda" })
local m = wick.ones(2, 2, { device = "cuda" })

local function sync()
  if wick.cuda.synchronize then wick.cuda.synchronize() else a:item() end
end

local ops = {
  { "add", function() return a + b end },
  { "add_inplace", function() return a:add_(b) end },
  { "mul_scalar", function() return a * 2 end },
  { "relu", function() return a:relu() end },
  { "sum", function() return a:sum() end },
  { "mm_2x2", function() return m:mm(m) end },
}

local function emit(name, value) io.write(("%s\t%.6g\n"):format(name, value)) io.flush() end

for _, op in ipairs(ops) do
  local name, fn = op[1], op[2]
  for _ = 1, 1000 do fn() end -- warm-up: the allocator's cache, the JIT's traces
  local times = {}
  for l = 1, LOOPS do
    sync()
    local t0 = wick.clock()
    for _ = 1, N do fn() end
    sync()
    times[l] = (wick.clock() - t0) / N
  end
  table.sort(times)
  emit(name .. "_us", times[math.ceil(LOOPS / 2)] * 1e6)
  wick.no_grad(function() a:fill_(1) end)
end
if wick.cuda.max_memory_allocated then emit("peak_mem_mb", wick.cuda.max_memory_allocated() / 2 ^ 20) end
