-- bench/ops.lua — the wick side of the op benchmarks (bench/ops_torch.py is the
-- PyTorch side: same names, sizes, repetition counts and timing rules).
--   build/wick bench/ops.lua [threads]      (default: $THREADS, else 1)
-- Prints one `name<TAB>value` line per benchmark:
--   *_1, mm_4x4          seconds per op (median of REPEATS loops of OVERHEAD_N ops)
--   matmul_N             GFLOP/s (2 N^3 per product, output allocated each time)
--   matmul_N_vs_sgemm    the same relative to raw cblas_sgemm timed alternately in
--                        this process (median of per-repeat ratios; 1 = as fast)
--   matmul_bf16_512      GFLOP/s of a bfloat16 512 x 512 product
--   *_16M                GB/s, counting 3 x 4 bytes per element for add/mul
--                        (2 reads, 1 write) and 2 x 4 for relu and exp (1 read, 1 write);
--                        each op timed alone, median of BIG_REPS; the out-of-place
--                        forms allocate their output inside the timed region, and
--                        the previous output is freed outside it (Lua: collectgarbage,
--                        Python: del), so both sides time allocation + kernel only.
local wick = require("wick")
local ffi = require("ffi")

pcall(ffi.cdef, [[
typedef struct { long tv_sec; long tv_nsec; } wick_bench_timespec;
int clock_gettime(int clk_id, wick_bench_timespec *tp);
]])
local ts = ffi.new("wick_bench_timespec")
local function now()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local threads = tonumber(arg and arg[1] or os.getenv("THREADS") or "1")
wick.set_num_threads(threads)

local OVERHEAD_N, REPEATS = 100000, 5
local BIG_N, BIG_REPS = 16 * 1024 * 1024, 7
local MATMUL = { { 256, 20, 5 }, { 512, 5, 5 }, { 1024, 1, 5 }, { 2048, 1, 3 } } -- size, iters, repeats

local function median(v)
  table.sort(v)
  local n = #v
  if n % 2 == 1 then return v[(n + 1) / 2] end
  return 0.5 * (v[n / 2] + v[n / 2 + 1])
end

local function emit(name, value)
  io.write(("%s\t%.6g\n"):format(name, value))
  io.flush()
end

-- ---- per-op overhead: OVERHEAD_N ops per loop, one warm-up loop first ----

local function overhead(name, body)
  body(OVERHEAD_N) -- warm-up (and JIT compilation)
  local t = {}
  for r = 1, REPEATS do
    collectgarbage()
    local t0 = now()
    body(OVERHEAD_N)
    t[r] = (now() - t0) / OVERHEAD_N
  end
  emit(name, median(t))
end

do
  local a, b = wick.ones(1), wick.ones(1)
  overhead("add_inplace_1", function(n)
    a:fill_(0)
    for _ = 1, n do a:add_(b) end
  end)
  overhead("add_1", function(n)
    local c
    for _ = 1, n do c = a:add(b) end
    return c
  end)
  local x, y = wick.randn(4, 4), wick.randn(4, 4)
  overhead("mm_4x4", function(n)
    local c
    for _ = 1, n do c = x:mm(y) end
    return c
  end)
end
collectgarbage()

-- ---- matmul: GFLOP/s, output allocated by each call ----
-- Each repeat also times raw cblas_sgemm (same sizes, preallocated output) right
-- after wick's matmul, in this process: matmul_N_vs_sgemm is the median of the
-- per-repeat ratios time(sgemm) / time(matmul), which stays meaningful when
-- other work on the machine shifts the absolute numbers between runs.

pcall(ffi.cdef, [[
void cblas_sgemm(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a, int lda,
                 const float *b, int ldb, float beta, float *c, int ldc);
]])
local blas = ffi.C
if not pcall(function() return blas.cblas_sgemm end) then blas = ffi.load("openblas") end
local function raw_sgemm(n, a, b, c) blas.cblas_sgemm(101, 111, 111, n, n, n, 1, a, n, b, n, 0, c, n) end

for _, spec in ipairs(MATMUL) do
  local n, iters, repeats = spec[1], spec[2], spec[3]
  local a, b = wick.randn(n, n), wick.randn(n, n)
  local ra, rb, rc = ffi.new("float[?]", n * n), ffi.new("float[?]", n * n), ffi.new("float[?]", n * n)
  for i = 0, n * n - 1 do ra[i], rb[i] = (i * 7 % 13 - 6) / 13, (i * 5 % 11 - 5) / 11 end
  local c = a:matmul(b) -- warm-up
  c = nil
  raw_sgemm(n, ra, rb, rc)
  local t, ratio = {}, {}
  for r = 1, repeats do
    collectgarbage()
    local t0 = now()
    for _ = 1, iters do c = a:matmul(b) end
    t[r] = (now() - t0) / iters
    c = nil
    t0 = now()
    for _ = 1, iters do raw_sgemm(n, ra, rb, rc) end
    ratio[r] = (now() - t0) / iters / t[r]
  end
  emit("matmul_" .. n, 2 * n * n * n / median(t) * 1e-9)
  emit("matmul_" .. n .. "_vs_sgemm", median(ratio))
  a, b, ra, rb, rc = nil, nil, nil, nil, nil
  collectgarbage()
end

-- ---- bfloat16 matmul, N = 512: GFLOP/s (wick widens to float32 for BLAS and
-- rounds once; PyTorch runs its own bfloat16 CPU kernels) ----
do
  local n, iters, repeats = 512, 2, 5
  local a, b = wick.randn(n, n):to("bfloat16"), wick.randn(n, n):to("bfloat16")
  local c = a:matmul(b) -- warm-up
  local t = {}
  for r = 1, repeats do
    c = nil
    collectgarbage()
    local t0 = now()
    for _ = 1, iters do c = a:matmul(b) end
    t[r] = (now() - t0) / iters
  end
  emit("matmul_bf16_512", 2 * n * n * n / median(t) * 1e-9)
end

-- ---- elementwise on 16M floats: GB/s ----

local function bandwidth(name, bytes_per_elem, op)
  op() -- warm-up
  collectgarbage()
  local t = {}
  for r = 1, BIG_REPS do
    local t0 = now()
    local c = op()
    t[r] = now() - t0
    c = nil
    collectgarbage() -- free the output outside the timed region
  end
  emit(name, bytes_per_elem * BIG_N / median(t) * 1e-9)
end

do
  local a, b = wick.randn(BIG_N), wick.randn(BIG_N)
  bandwidth("add_16M", 12, function() return a:add(b) end)
  bandwidth("mul_16M", 12, function() return a:mul(b) end)
  bandwidth("relu_16M", 8, function() return a:relu() end)
  bandwidth("exp_16M", 8, function() return a:exp() end)
  local d = a:clone()
  bandwidth("add_inplace_16M", 12, function() return d:add_(b) end)
end

-- ---- grid_sample at Deformable-DETR's sampling size (value 16 x 32 x 24 x 20, grid 16 x 300 x 16 x 2,
-- float32, bilinear, zeros): seconds per forward, and per forward + backward to both inputs ----
do
  collectgarbage()
  local F = wick.nn.functional
  local value = wick.randn(16, 32, 24, 20, { requires_grad = true })
  local grid = (wick.rand(16, 300, 16, 2) * 2.2 - 1.1):requires_grad_()
  local function timed(name, iters, fn)
    fn() -- warm-up
    local t = {}
    for r = 1, REPEATS do
      collectgarbage()
      local t0 = now()
      for _ = 1, iters do fn() end
      t[r] = (now() - t0) / iters
    end
    emit(name, median(t))
  end
  wick.no_grad(function()
    timed("grid_sample_fwd", 10, function() return F.grid_sample(value, grid, { align_corners = false }) end)
  end)
  timed("grid_sample_fwd_bwd", 5, function()
    value.grad, grid.grad = nil, nil
    F.grid_sample(value, grid, { align_corners = false }):sum():backward()
  end)
end
