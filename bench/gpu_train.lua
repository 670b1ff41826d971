-- bench/gpu_train.lua — wick's side of the GPU training benchmark
-- (bench/gpu_train_torch.py is PyTorch's eager mode: same models, data, batch,
-- optimizer and timing rules; bench/gpu.sh runs both).
--   build-gpu/wick bench/gpu_train.lua mlp|cnn [resident|loader] [batch]
-- One epoch of the Fashion-MNIST models of examples/fashion_mnist.lua (MLP
-- 784-512-256-10; CNN conv 32, conv 64, max pools, fc 128, fc 10) with SGD
-- (lr 0.01, momentum 0.9) and cross entropy, on synthetic data of the data
-- set's shape: 60000 images 1x28x28 in [0, 1) and labels 1..10, so nothing
-- but the scripts has to travel to the GPU machine. Batch 64 unless given.
--   resident: the data set lives on the GPU; batches are slices of it
--   loader:   the data set lives in CPU memory; a shuffling DataLoader with
--             pin_memory delivers each batch to the GPU (non_blocking)
-- Prints `name<TAB>value` lines: epoch_s (after 20 warm-up steps, synchronized
-- before both clock reads), loss (the last batch's, a sanity check),
-- peak_mem_mb (wick.cuda.max_memory_allocated).
local wick = require("wick")
local nn = wick.nn

if not wick.cuda.is_available() then
  print("no CUDA GPU: skipped")
  os.exit(0)
end

local model_name = arg[1] or "mlp"
local mode = arg[2] or "resident"
local batch = tonumber(arg[3] or "64")
local N = 60000
local device = wick.device("cuda:0")

local function sync()
  if wick.cuda.synchronize then wick.cuda.synchronize() else wick.ones(1, { device = device }):item() end
end
local function emit(name, value) io.write(("%s\t%.6g\n"):format(name, value)) io.flush() end

-- ---- the models of examples/fashion_mnist.lua ----
local here = (arg and arg[0] or ""):match("^(.*)/") or "."
local models = dofile(here .. "/../examples/fashion_mnist_models.lua")
local mlp, CNN = models.MLP, models.CNN

wick.manual_seed(1)
local model = (model_name == "cnn" and CNN() or mlp()):to(device)
local opt = wick.optim.SGD(model:parameters(), { lr = 0.01, momentum = 0.9 })
local loss_fn = nn.CrossEntropyLoss()

-- ---- synthetic data of Fashion-MNIST's shape ----
local images, labels
if mode == "resident" then
  images = wick.rand(N, 1, 28, 28, { device = device })
  labels = (wick.rand(N, { device = device }) * 10):to("int64") + 1
else
  images = wick.rand(N, 1, 28, 28)
  labels = (wick.rand(N) * 10):to("int64") + 1
end

-- the batches of one epoch: an iterator of (x, y)
local function epoch_batches()
  if mode == "resident" then
    local start = 1
    return function()
      if start > N then return nil end
      local n = math.min(batch, N - start + 1)
      local x, y = images:narrow(1, start, n), labels:narrow(1, start, n)
      start = start + n
      return x, y
    end
  end
  local loader = wick.data.DataLoader(wick.data.TensorDataset(images, labels),
    { batch_size = batch, shuffle = true, device = device, pin_memory = true })
  return loader:iter()
end

local function step(x, y)
  opt:zero_grad()
  local loss = loss_fn(model(x), y)
  loss:backward()
  opt:step()
  return loss
end

-- warm-up: cuBLAS/cuDNN-free kernels picked, the allocator's cache filled
local warm = epoch_batches()
for _ = 1, 20 do step(warm()) end
sync()

local t0 = wick.clock()
local last
for x, y in epoch_batches() do last = step(x, y) end
sync()
local elapsed = wick.clock() - t0
emit("epoch_s", elapsed)
emit("loss", last:item())
if wick.cuda.max_memory_allocated then emit("peak_mem_mb", wick.cuda.max_memory_allocated() / 2 ^ 20) end
