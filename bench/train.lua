-- The training benchmarks of wick (PyTorch's side is bench/train_torch.py; both
-- print `name<TAB>value` lines, bench/train.sh runs them side by side).
--   build/wick bench/train.lua THREADS what [autocast]
-- what = "epoch": one epoch of the MLP 784-512-256-10 (ReLU, cross entropy,
--        SGD momentum 0.9, batch 128) on Fashion-MNIST; prints the epoch time,
--        the part spent in matrix products (the same products timed alone),
--        the test accuracy and the peak RSS.
-- what = "mlp":   that epoch's training alone (epoch_s; bench/threads.sh).
--        With a third argument (bench/amp.sh) the products are not timed alone,
--        and with "bfloat16" or "float16" there (not "float32") the forward and
--        the loss run under wick.autocast on the CPU.
-- what = "step":  a batch-1 step (forward, backward, SGD) of a 32-32-1 MLP.
local wick = require("wick")
local nn = wick.nn

local threads = tonumber(arg[1] or "1")
local what = arg[2] or "epoch"
local autocast_dtype = arg[3] ~= "float32" and arg[3] or nil
local time_products = arg[3] == nil
wick.set_num_threads(threads)
wick.manual_seed(1)

local function emit(name, value) io.write(("%s\t%.6g\n"):format(name, value)) io.flush() end

local function peak_rss_mb()
  local f = io.open("/proc/self/status")
  local s = f:read("*a")
  f:close()
  return tonumber(s:match("VmHWM:%s*(%d+)")) / 1024
end

if what == "epoch" or what == "mlp" then
  local train = wick.data.FashionMNIST { train = true }
  local test = wick.data.FashionMNIST { train = false }
  local loader = wick.data.DataLoader(train, { batch_size = 128, shuffle = true })
  local model = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
    nn.Linear(256, 10))
  local opt = wick.optim.SGD(model:parameters(), { lr = 0.05, momentum = 0.9 })
  local loss_fn = nn.CrossEntropyLoss()
  local t0 = wick.clock()
  for x, y in loader:iter() do
    opt:zero_grad()
    local loss
    if autocast_dtype then
      loss = wick.autocast({ device_type = "cpu", dtype = autocast_dtype }, function() return loss_fn(model(x), y) end)
    else
      loss = loss_fn(model(x), y)
    end
    loss:backward()
    opt:step()
  end
  local epoch = wick.clock() - t0
  if what == "mlp" then
    emit("epoch_s", epoch)
    os.exit(0)
  end
  -- the matrix products of one epoch alone: forward (3) and backward (5 per step:
  -- grad_input of layers 2-3 and grad_weight of all three) at the same shapes
  local shapes = { { 784, 512 }, { 512, 256 }, { 256, 10 } }
  local steps = loader:len()
  local mats = {}
  for i, s in ipairs(shapes) do
    mats[i] = { x = wick.randn(128, s[1]), w = wick.randn(s[2], s[1]), g = wick.randn(128, s[2]) }
  end
  local t1 = wick.clock()
  for _ = 1, time_products and steps or 0 do
    for i, m in ipairs(mats) do
      local _ = m.x:mm(m.w:t())           -- forward
      local _ = m.g:t():mm(m.x)           -- grad of the weight
      if i > 1 then local _ = m.g:mm(m.w) end -- grad of the input
    end
  end
  local matmul = wick.clock() - t1
  local correct = 0
  wick.no_grad(function()
    for x, y in wick.data.DataLoader(test, { batch_size = 1000 }):iter() do
      correct = correct + model(x):argmax(2):eq(y):sum():item()
    end
  end)
  emit("epoch_s", epoch)
  if time_products then emit("matmul_s", matmul) end
  emit("accuracy", correct / test:len())
  emit("peak_rss_mb", peak_rss_mb())
elseif what == "step" then
  local model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
  local opt = wick.optim.SGD(model:parameters(), { lr = 0.01 })
  local x, y = wick.randn(1, 32), wick.randn(1, 1)
  local loss_fn = nn.MSELoss()
  local function step()
    opt:zero_grad()
    local loss = loss_fn(model(x), y)
    loss:backward()
    opt:step()
  end
  for _ = 1, 2000 do step() end
  local best = math.huge
  for _ = 1, 5 do
    local n, t0 = 20000, wick.clock()
    for _ = 1, n do step() end
    best = math.min(best, (wick.clock() - t0) / n)
  end
  emit("step_us", best * 1e6)
  emit("peak_rss_mb", peak_rss_mb())
end
