-- bench/gemm_shapes.lua — float32 products at the shapes wick's ports run
-- (1 thread unless WICK_NUM_THREADS says): prints `MxKxN[ab]<TAB>GFLOP/s`, the
-- median of 7 timed products after 3 warm-up ones, the collector run before
-- each so the result's memory is warm. A trailing `a` or `b` marks a
-- transposed operand (a view of a k x m or n x k tensor), as in nn.Linear's
-- forward (x @ W^T: `b`) and its weight gradient (g^T @ x: `a`).
--   build/wick bench/gemm_shapes.lua
-- bench/gemm_shapes_torch.py times the same list in PyTorch.
-- Shapes: square 1024; the LSTM language model's decoder (700x200x3985) and its
-- gradient (700x3985x200); one LSTM step's recurrent product (20x200x800); the
-- Fashion-MNIST MLP's first layer forward, input gradient and weight gradient
-- (batch 128); a ResNet-18 convolution at 56x56 as im2col products: forward
-- (64x576x3136), weight gradient (64x3136x576b), input gradient (576x64x3136a),
-- and the same at 7x7 x 8 images (512x4608x392).
local wick = require("wick")
wick.set_num_threads(tonumber(os.getenv("WICK_NUM_THREADS") or 1))
local clock = wick.clock
local shapes = { { 1024, 1024, 1024 }, { 700, 200, 3985 }, { 700, 3985, 200 }, { 20, 200, 800 }, { 128, 784, 512, "b" },
  { 128, 512, 784 }, { 512, 128, 784, "a" }, { 64, 576, 3136 }, { 64, 3136, 576, "b" }, { 576, 64, 3136, "a" },
  { 3136, 576, 64 }, { 512, 4608, 392 } }
for _, s in ipairs(shapes) do
  local m, k, n, tr = s[1], s[2], s[3], s[4] or ""
  local a = tr == "a" and wick.randn(k, m):t() or wick.randn(m, k)
  local b = tr == "b" and wick.randn(n, k):t() or wick.randn(k, n)
  for _ = 1, 3 do a:matmul(b); collectgarbage() end
  local t = {}
  for i = 1, 7 do
    collectgarbage()
    local t0 = clock()
    a:matmul(b)
    t[i] = clock() - t0
  end
  table.sort(t)
  io.write(("%dx%dx%d%s\t%.1f\n"):format(m, k, n, tr, 2 * m * k * n / t[4] / 1e9))
  io.flush()
end
