-- Train a classifier on Fashion-MNIST, the PyTorch-tutorial way: pick the device
-- once, move the model and each batch with to(), zero_grad / backward / step.
--
--   build/wick examples/fashion_mnist.lua [--model mlp|cnn] [--epochs N]
--       [--batch-size N] [--lr X] [--device cpu|cuda] [--threads N] [--checkpoint PATH]
--
-- The data comes from Debian's dataset-fashion-mnist package (or
-- FASHION_MNIST_DIR). The script saves a checkpoint, reloads it onto the CPU with
-- map_location and checks that the reloaded model scores the same.
local wick = require("wick")
local nn = wick.nn

local USAGE = [==[
usage: build/wick examples/fashion_mnist.lua [--model mlp|cnn] [--epochs N]
    [--batch-size N] [--lr X] [--device cpu|cuda|cuda:N] [--threads N] [--seed N] [--checkpoint PATH]]==]
local KNOWN = { model = true, epochs = true, batch_size = true, lr = true, device = true, threads = true,
  seed = true, checkpoint = true }

local function usage_error(message)
  io.stderr:write("fashion_mnist.lua: ", message, "\n", USAGE, "\n")
  os.exit(2)
end

local function parse_args(argv)
  local opts = { model = "mlp", batch_size = 128, threads = nil }
  local i = 1
  while argv[i] do
    if argv[i] == "--help" or argv[i] == "-h" then
      print(USAGE)
      os.exit(0)
    end
    local key, value = argv[i]:match("^%-%-([%w-]+)=?(.*)$")
    if not key then usage_error("unexpected argument " .. argv[i]) end
    key = key:gsub("-", "_")
    if not KNOWN[key] then usage_error("unknown option " .. argv[i]) end
    if value == "" then i = i + 1; value = argv[i] end
    if value == nil then usage_error("option " .. argv[i - 1] .. " needs a value") end
    opts[key] = tonumber(value) or value
    i = i + 1
  end
  return opts
end

local opts = parse_args(arg or {})
if opts.threads then wick.set_num_threads(opts.threads) end
wick.manual_seed(opts.seed or 1)
local device = wick.device(opts.device or (wick.cuda.is_available() and "cuda" or "cpu"))
local epochs = opts.epochs or (opts.model == "cnn" and 3 or 5)
if type(epochs) ~= "number" or epochs < 0 or epochs ~= math.floor(epochs) then error("--epochs must be a whole number >= 0") end
local lr = opts.lr or 0.1

-- ---- models (examples/fashion_mnist_models.lua) ----
local here = (arg and arg[0] or ""):match("^(.*)/") or "."
local models = dofile(here .. "/fashion_mnist_models.lua")
local MLP, CNN = models.MLP, models.CNN

local function build() return (opts.model == "cnn" and CNN or MLP)() end
if opts.model ~= "mlp" and opts.model ~= "cnn" then error("--model must be mlp or cnn") end

-- ---- data ----
local train_set = wick.data.FashionMNIST { train = true }
local test_set = wick.data.FashionMNIST { train = false }
local train_loader = wick.data.DataLoader(train_set, { batch_size = opts.batch_size, shuffle = true, device = device })
local test_loader = wick.data.DataLoader(test_set, { batch_size = 1000, device = device })

local function accuracy(model)
  model:eval()
  local correct, total = 0, 0
  wick.no_grad(function()
    for images, labels in test_loader:iter() do
      local predicted = model(images):argmax(2)
      correct = correct + predicted:eq(labels):sum():item()
      total = total + labels:size(1)
    end
  end)
  model:train()
  return correct / total
end

-- ---- training ----
local model = build():to(device)
local optimizer
if (opts.optimizer or "sgd") == "adam" then
  optimizer = wick.optim.Adam(model:parameters(), { lr = opts.lr or 1e-3 })
else
  optimizer = wick.optim.SGD(model:parameters(), { lr = lr, momentum = 0.9 })
end
-- the learning rate decays along a cosine over the run, step by step
local schedule = wick.optim.CosineAnnealingLR(optimizer, { T_max = epochs * train_loader:len() })
local loss_fn = nn.CrossEntropyLoss()
local tty = wick._core.isatty(1)
print(("training %s on %s: %d epochs, batch %d, lr %g, %d thread(s)"):format(opts.model, tostring(device), epochs,
  opts.batch_size, lr, wick.get_num_threads()))

local acc = epochs == 0 and accuracy(model) or nil -- --epochs 0: the untrained model, checkpointed
for epoch = 1, epochs do
  local t0, seen, running = wick.clock(), 0, 0
  local batches = train_loader:len()
  for b, images, labels in (function()
    local it, k = train_loader:iter(), 0
    return function()
      local x, y = it()
      if x == nil then return nil end
      k = k + 1
      return k, x, y
    end
  end)() do
    optimizer:zero_grad()
    local loss = loss_fn(model(images), labels)
    loss:backward()
    optimizer:step()
    schedule:step()
    seen = seen + labels:size(1)
    running = running + loss:item()
    if tty and (b % 20 == 0 or b == batches) then
      local width = 30
      local done = math.floor(width * b / batches)
      io.write(("\repoch %d [%s%s] %d/%d  loss %.4f  %.0f samples/s "):format(epoch, ("="):rep(done),
        (" "):rep(width - done), b, batches, running / b, seen / (wick.clock() - t0)))
      io.flush()
    end
  end
  local elapsed = wick.clock() - t0
  acc = accuracy(model)
  if tty then io.write("\r" .. (" "):rep(90) .. "\r") end
  print(("epoch %d: loss %.4f, test accuracy %.2f%%, %.1f s, %.0f samples/s"):format(epoch, running / batches,
    100 * acc, elapsed, seen / elapsed))
end

-- ---- checkpoint: save, reload onto the CPU, confirm ----
local path = opts.checkpoint or ((os.getenv("TMPDIR") or "/tmp") .. "/wick-fashion-mnist-" .. opts.model .. ".wick")
wick.save({ model = model:state_dict(), optimizer = optimizer:state_dict(), epoch = epochs, accuracy = acc }, path)
local checkpoint = wick.load(path, { map_location = "cpu" })
local reloaded = build()
reloaded:load_state_dict(checkpoint.model)
local old_device = device
device = wick.device("cpu")
test_loader = wick.data.DataLoader(test_set, { batch_size = 1000 })
local reloaded_acc = accuracy(reloaded)
print(("checkpoint %s reloaded on cpu (saved from %s): test accuracy %.2f%% (%s)"):format(path, tostring(old_device),
  100 * reloaded_acc, math.abs(reloaded_acc - acc) < 1e-9 and "same" or "DIFFERENT"))
if math.abs(reloaded_acc - acc) >= 1e-9 then os.exit(1) end
