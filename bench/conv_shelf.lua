-- bench/conv_shelf.lua — the wick side of the convolutional-shelf benchmark
-- (bench/conv_shelf_torch.py is the PyTorch side: same cases, counts and timing).
--   build/wick bench/conv_shelf.lua [threads]      (default: $THREADS, else 1)
-- Prints one `name<TAB>milliseconds` line per case: the median over REPEATS
-- loops of the per-call CPU time of the layer's forward and backward from a
-- fixed output gradient. The ConvTranspose2d cases are dcgan's generator
-- (nz = 100, ngf = 64) at batch 16; upsampling at the size of a U-Net's decoder.
local wick = require("wick")
local nn = wick.nn
local F = nn.functional

local timing = dofile("bench/timing.lua") -- CPU time of this process (one thread on both sides)
local threads = tonumber(arg and arg[1] or os.getenv("THREADS") or "1")
wick.set_num_threads(threads)
local REPEATS = 5
local function time(n, fn) return timing.time(n, fn, REPEATS) end

-- name, in, out, kernel, stride, padding, input size, calls per loop
local CONVT = {
  { "convt_100_512_1to4", 100, 512, 4, 1, 0, 1, 5 },
  { "convt_512_256_4to8", 512, 256, 4, 2, 1, 4, 3 },
  { "convt_256_128_8to16", 256, 128, 4, 2, 1, 8, 3 },
  { "convt_128_64_16to32", 128, 64, 4, 2, 1, 16, 3 },
  { "convt_64_3_32to64", 64, 3, 4, 2, 1, 32, 3 },
}
local B = 16
wick.manual_seed(0)
for _, c in ipairs(CONVT) do
  local name, cin, cout, k, s, p, size, n = unpack(c)
  local m = nn.ConvTranspose2d(cin, cout, k, s, p, { bias = false })
  local x = wick.randn(B, cin, size, size, { requires_grad = true })
  local g = wick.randn(m(x):size())
  print(("%s_fwdbwd\t%.4f"):format(name, time(n, function()
    x.grad, m.weight.grad = nil, nil
    m(x):backward(g)
  end) * 1e3))
end
for _, mode in ipairs({ "nearest", "bilinear" }) do
  local x = wick.randn(B, 64, 32, 32, { requires_grad = true })
  local g = wick.randn(B, 64, 64, 64)
  print(("upsample_%s_x2_fwdbwd\t%.4f"):format(mode, time(3, function()
    x.grad = nil
    F.interpolate(x, { scale_factor = 2, mode = mode }):backward(g)
  end) * 1e3))
end
