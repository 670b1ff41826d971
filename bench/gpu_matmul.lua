-- bench/gpu_matmul.lua — wick's side of the GPU matrix-product benchmark
-- (bench/gpu_matmul_torch.py is PyTorch's: same sizes, dtypes and timing rules;
-- bench/gpu.sh runs both and prints the table).
--   build-gpu/wick bench/gpu_matmul.lua [sizes]      sizes: comma-separated, default 1024,2048,4096,8192
-- Prints `name<TAB>value` lines:
--   matmul_<kind>_<n>   TFLOP/s of an n x n x n product (2 n^3 flops), out of place
--                       (the output is allocated each time, from the caching allocator);
--                       kind = float32 (TF32 off), tf32 (float32 inputs, allow_tf32 on),
--                       bfloat16
--   peak_mem_mb         wick.cuda.max_memory_allocated() at the end, MiB
-- Timing: a warm-up product, then repeats sized to ~0.2 s, wick.cuda.synchronize()
-- before each clock read; the best of 3 such runs.
local wick = require("wick")

if not wick.cuda.is_available() then
  print("no CUDA GPU: skipped")
  os.exit(0)
end

local sizes = {}
for s in (arg[1] or "1024,2048,4096,8192"):gmatch("%d+") do sizes[#sizes + 1] = tonumber(s) end

-- waits for the GPU: synchronize, or (before it exists) reading one value back
local function sync(t)
  if wick.cuda.synchronize then wick.cuda.synchronize() else t:view(-1)[1]:item() end
end

local function emit(name, value) io.write(("%s\t%.6g\n"):format(name, value)) io.flush() end

local function set_tf32(on)
  if wick.backends and wick.backends.cuda then wick.backends.cuda.matmul.allow_tf32 = on
  elseif on then error("wick.backends.cuda.matmul.allow_tf32 is not available in this build") end
end

-- seconds per product, best of 3 runs of `reps`
local function time_mm(a, b)
  local c = a:mm(b) -- warm-up (cuBLAS picks its kernel, the allocator caches the output)
  sync(c)
  local t0 = wick.clock()
  c = a:mm(b)
  sync(c)
  local once = math.max(wick.clock() - t0, 1e-6)
  local reps = math.max(3, math.min(500, math.floor(0.2 / once)))
  local best = math.huge
  for _ = 1, 3 do
    sync(c)
    t0 = wick.clock()
    for _ = 1, reps do c = a:mm(b) end
    sync(c)
    best = math.min(best, (wick.clock() - t0) / reps)
  end
  return best
end

wick.manual_seed(0)
for _, kind in ipairs({ "float32", "tf32", "bfloat16" }) do
  local dtype = kind == "bfloat16" and "bfloat16" or "float32"
  local ok, err = pcall(function()
    set_tf32(kind == "tf32")
    for _, n in ipairs(sizes) do
      local a = wick.randn(n, n, { device = "cuda", dtype = dtype })
      local b = wick.randn(n, n, { device = "cuda", dtype = dtype })
      local s = time_mm(a, b)
      emit(("matmul_%s_%d"):format(kind, n), 2 * n ^ 3 / s / 1e12)
      a, b = nil, nil
      collectgarbage()
    end
  end)
  pcall(set_tf32, false)
  if not ok then io.stderr:write(("gpu_matmul: %s: %s\n"):format(kind, tostring(err))) end
end
if wick.cuda.max_memory_allocated then emit("peak_mem_mb", wick.cuda.max_memory_allocated() / 2 ^ 20) end
