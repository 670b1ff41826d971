-- bench/gemm_shapes.lua — float32 products at the shapes wick's ports run
-- (1 thread): prints `MxKxN<TAB>GFLOP/s`, the median of 7 timed products after
-- 3 warm-up ones, the collector run before each so the result's memory is warm.
--   build/wick bench/gemm_shapes.lua
-- Shapes: square 1024; the LSTM language model's decoder (700x200x3985) and its
-- gradient (700x3985x200); the MLP's first layer (128x784x512); one LSTM step's
-- recurrent product (20x200x800); a ResNet-18 im2col product (3136x576x64).
local wick = require("wick")
wick.set_num_threads(1)
local clock = wick.clock
local shapes = { { 1024, 1024, 1024 }, { 700, 200, 3985 }, { 700, 3985, 200 }, { 128, 784, 512 }, { 20, 200, 800 },
  { 3136, 576, 64 } }
for _, s in ipairs(shapes) do
  local m, k, n = s[1], s[2], s[3]
  local a, b = wick.randn(m, k), wick.randn(k, n)
  for _ = 1, 3 do a:matmul(b); collectgarbage() end
  local t = {}
  for i = 1, 7 do
    collectgarbage()
    local t0 = clock()
    a:matmul(b)
    t[i] = clock() - t0
  end
  table.sort(t)
  io.write(("%dx%dx%d\t%.1f\n"):format(m, k, n, 2 * m * k * n / t[4] / 1e9))
  io.flush()
end
