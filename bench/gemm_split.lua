-- bench/gemm_split.lua — float32 products whose C has many rows and few
-- columns (a convolution's im2col product, 3136x576x64; wick's AVX-512 kernel
-- takes them, split into blocks of C among the threads): prints
-- `MxKxN<TAB>GFLOP/s`, the median of 9 timed loops of products (each result
-- a new tensor, as in a network).
-- WICK_NUM_THREADS threads (default 2). Before and after a change:
--   WICK_NUM_THREADS=2 bench/builds.sh OLD_BUILD build bench/gemm_split.lua
local wick = require("wick")
wick.set_num_threads(tonumber(os.getenv("WICK_NUM_THREADS") or 2))
local shapes = { { 3136, 576, 64 }, { 700, 100, 64 }, { 1000, 256, 48 }, { 2000, 64, 64 } }
for _, s in ipairs(shapes) do
  local m, k, n = s[1], s[2], s[3]
  local a, b = wick.randn(m, k), wick.randn(k, n)
  local it = math.max(1, math.floor(3e8 / (2 * m * n * k)))
  for _ = 1, 3 do a:mm(b) end
  local t = {}
  for r = 1, 9 do
    local t0 = wick.clock()
    for _ = 1, it do a:mm(b) end
    t[r] = (wick.clock() - t0) / it
  end
  table.sort(t)
  io.write(("%dx%dx%d\t%.1f\n"):format(m, k, n, 2 * m * n * k / t[5] / 1e9))
end
