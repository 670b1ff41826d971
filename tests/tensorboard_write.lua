-- Writes one TensorBoard log folder with every kind of record that
-- wick.utils.tensorboard makes; tests/tensorboard_read.py reads it back with
-- TensorBoard's own reader and checks the values written here.
-- usage: wick tests/tensorboard_write.lua LOGDIR
local wick = require("wick")
local logdir = assert(arg[1], "usage: tensorboard_write.lua LOGDIR")
local w = wick.utils.tensorboard.SummaryWriter(logdir, { max_queue = 3 })
for step = 0, 4 do
  w:add_scalar("loss", 1 / (step + 1), step, 1000 + step)
end
w:add_scalar("weird", 0 / 0, 1)
w:add_scalar("weird", math.huge, 2)
w:add_scalar("weird", -math.huge, 3)
w:add_scalar("big_step", wick.tensor(2.5), 2 ^ 40)
w:add_scalars("run", { train = 1.5, test = 2.5 }, 7)
w:add_histogram("hist", wick.tensor({ -1, 0, 0.5, 1, 2, 2, 3 }), 3)
w:add_histogram("hist10", wick.arange(0, 100, { dtype = "float64" }), 4, 10)
-- a 3x2 RGB image: pixel (y, x) = (10y + x, 100 + y, 200 + x) as uint8
local img = wick.zeros(3, 3, 2, { dtype = "uint8" })
for y = 1, 3 do
  for x = 1, 2 do
    img[1][y][x] = 10 * (y - 1) + (x - 1)
    img[2][y][x] = 100 + (y - 1)
    img[3][y][x] = 200 + (x - 1)
  end
end
w:add_image("img", img, 5)
w:add_image("gray", wick.tensor({ { 0, 0.5 }, { 1, 0.25 } }), 6, nil, "HW")
-- 10 RGB images of 2x3 (N, C, H, W): image k pixel (c, y, x) = 20k + 6c + 3y + x (0-based)
local imgs = wick.arange(0, 200, { dtype = "float64" }):view(10, 20):narrow(2, 1, 18):contiguous():view(10, 3, 2, 3)
w:add_images("grid", imgs:to("uint8"), 9)
w:add_images("grid_nhwc", imgs:permute(1, 3, 4, 2):to("uint8"), { global_step = 9, dataformats = "NHWC" })
w:add_scalar("new_style", 0.25, 10, nil, true)
w:add_scalar("new_style_double", 0.1, { global_step = 11, new_style = true, double_precision = true })
w:add_text("note", "hello **wick**", 8)
w:add_hparams({ lr = 0.1, optimizer = "sgd", nesterov = true, layers = 3 }, { ["hparam/accuracy"] = 0.75 },
  { lr = { 0.1, 0.01 }, optimizer = { "sgd", "adam" }, nesterov = { true, false } }, "hp", 12)
w:close()
