-- Train a classifier on Fashion-MNIST, the PyTorch-tutorial way: pick the device
-- once, move the model and each batch with to(), zero_grad / backward / step.
--
--   build/wick examples/fashion_mnist.lua [--model mlp|cnn] [--epochs N]
--       [--batch-size N] [--lr X] [--device cpu|cuda] [--threads N] [--checkpoint PATH]
--       [--tensorboard DIR] [--profile [PATH]]
--   mpirun -np 2 build/wick examples/fashion_mnist.lua --distributed [--backend mpi|nccl] [...]
--
-- The data comes from Debian's dataset-fashion-mnist package (or
-- FASHION_MNIST_DIR). The script saves a checkpoint, reloads it onto the CPU with
-- map_location and checks that the reloaded model scores the same.
--
-- --distributed: one process per rank (started by mpirun or srun). The model is
-- wrapped in nn.parallel.DistributedDataParallel, each rank trains on its share
-- of the training set (wick.data.DistributedSampler, reshuffled each epoch by
-- set_epoch) with --batch-size samples per step, and the test set is split
-- between the ranks for the accuracy. Each rank logs with its rank; rank 0
-- prints the progress bar and the epoch lines and saves the checkpoint; then
-- every rank loads it with map_location onto its own device and checks it.
-- One thread per rank unless --threads says otherwise; the backend is NCCL for
-- CUDA devices and MPI for the CPU unless --backend says otherwise.
--
-- --tensorboard DIR: writes TensorBoard logs there (wick.utils.tensorboard;
-- rank 0 only): the training loss and learning rate every 10 steps, the test
-- accuracy and mean loss per epoch, a histogram of the first layer's weight and
-- an image of the first inputs. View with `tensorboard --logdir DIR`.
--
-- --profile [PATH]: one warm-up step, then 3 training steps under
-- wick.profiler.profile; prints the ops sorted by their own CPU time and writes a
-- Chrome trace to PATH (default profile.json; open it in https://ui.perfetto.dev),
-- then stops (examples/profile_steps.lua). Not with --distributed.
local wick = require("wick")
local nn = wick.nn

local USAGE = [==[
usage: build/wick examples/fashion_mnist.lua [--model mlp|cnn] [--epochs N]
    [--batch-size N] [--lr X] [--device cpu|cuda|cuda:N] [--threads N] [--seed N] [--checkpoint PATH]
    [--max-steps N (at most N steps an epoch: a short run)] [--tensorboard DIR (TensorBoard logs)]
    [--profile [PATH] (profile 3 steps after a warm-up one, print the op table, write a Chrome trace
    to PATH, default profile.json, and stop)]
       mpirun -np N build/wick examples/fashion_mnist.lua --distributed [--backend mpi|nccl] [options above]
    (--batch-size is per rank under --distributed; --device cuda gives each rank its own GPU)]==]
local KNOWN = { model = true, epochs = true, batch_size = true, lr = true, device = true, threads = true,
  seed = true, checkpoint = true, distributed = true, backend = true, max_steps = true, tensorboard = true,
  profile = true }
local FLAGS = { distributed = true } -- options without a value
local OPTIONAL = { profile = "profile.json" } -- options whose value may be left out: this one then

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
    if FLAGS[key] then
      if value ~= "" then usage_error("option --" .. key .. " takes no value") end
      value = true
    elseif value == "" and OPTIONAL[key] and (argv[i + 1] == nil or argv[i + 1]:match("^%-%-")) then
      value = OPTIONAL[key]
    elseif value == "" then i = i + 1; value = argv[i] end
    if value == nil then usage_error("option " .. argv[i - 1] .. " needs a value") end
    opts[key] = tonumber(value) or value
    i = i + 1
  end
  return opts
end

local opts = parse_args(arg or {})
if opts.backend and not opts.distributed then usage_error("--backend needs --distributed") end
if opts.profile then opts.profile = tostring(opts.profile) end -- a path that reads as a number
if opts.profile and opts.distributed then usage_error("--profile profiles one process: not with --distributed") end
if opts.threads then wick.set_num_threads(opts.threads)
elseif opts.distributed then wick.set_num_threads(1) end -- ranks share the machine's cores
wick.manual_seed(opts.seed or 1)
local device = wick.device(opts.device or (wick.cuda.is_available() and "cuda" or "cpu"))

-- ---- distributed: the process group (ranks 0-based) ----
local dist, rank, world = nil, 0, 1
if opts.distributed then
  dist = wick.distributed
  if not dist.is_available() then
    error("--distributed: wick.distributed is not available in this build (configure with -DWICK_MPI=ON; README)")
  end
  -- NCCL moves CUDA tensors, MPI CPU ones; NCCL's init makes GPU local_rank % device_count current
  dist.init_process_group { backend = opts.backend or (device.type == "cuda" and "nccl" or "mpi") }
  rank, world = dist.get_rank(), dist.get_world_size()
  if device.type == "cuda" then device = wick.device("cuda", wick.cuda.current_device()) end
end
local is_main = rank == 0
-- every rank's own lines carry its rank; the epoch lines are rank 0's
local function log(fmt, ...)
  local line = fmt:format(...)
  if dist then line = ("[rank %d] %s"):format(rank, line) end
  print(line)
  io.stdout:flush()
end
local epochs = opts.epochs or (opts.model == "cnn" and 3 or 5)
if type(epochs) ~= "number" or epochs < 0 or epochs ~= math.floor(epochs) then error("--epochs must be a whole number >= 0") end
local max_steps = opts.max_steps or math.huge
if type(max_steps) ~= "number" or max_steps < 1 or max_steps ~= math.floor(max_steps) then
  error("--max-steps must be a whole number >= 1")
end
local lr = opts.lr or 0.1

-- ---- models (examples/fashion_mnist_models.lua) ----
local here = (arg and arg[0] or ""):match("^(.*)/") or "."
local models = dofile(here .. "/fashion_mnist_models.lua")
local profile_steps = dofile(here .. "/profile_steps.lua")
local MLP, CNN = models.MLP, models.CNN

local function build() return (opts.model == "cnn" and CNN or MLP)() end
if opts.model ~= "mlp" and opts.model ~= "cnn" then error("--model must be mlp or cnn") end

-- --tensorboard: rank 0's logs; an unwritable DIR fails here, before any loading
local writer = opts.tensorboard and is_main and wick.utils.tensorboard.SummaryWriter(opts.tensorboard) or nil

-- ---- data ----
local train_set = wick.data.FashionMNIST { train = true }
local test_set = wick.data.FashionMNIST { train = false }
local train_sampler = dist and wick.data.DistributedSampler(train_set) or nil
local train_loader = wick.data.DataLoader(train_set, { batch_size = opts.batch_size, shuffle = not dist,
  sampler = train_sampler, device = device })
local test_loader = wick.data.DataLoader(test_set, { batch_size = 1000, device = device })

-- Under --distributed each rank scores the test samples rank+1, rank+1+world, ...
-- (a sampler of one's own: any table with len() and iter()), and the counts are
-- summed over the ranks: every test sample once, none twice.
local shard_loader
if dist then
  local n = test_set:len()
  local shard = {
    len = function() return math.max(0, math.ceil((n - rank) / world)) end,
    iter = function()
      local i = rank + 1 - world
      return function() i = i + world; if i <= n then return i end end
    end,
  }
  shard_loader = wick.data.DataLoader(test_set, { batch_size = 1000, sampler = shard, device = device })
end

-- The test accuracy: over the whole test set in this process (loader), or
-- over the ranks' shards summed (shard_loader).
local function accuracy(model, loader)
  model:eval()
  local correct, total = 0, 0
  wick.no_grad(function()
    for images, labels in (loader or test_loader):iter() do
      local predicted = model(images):argmax(2)
      correct = correct + predicted:eq(labels):sum():item()
      total = total + labels:size(1)
    end
  end)
  model:train()
  if loader == shard_loader and dist then
    -- on the model's device: the nccl backend moves CUDA tensors only
    local counts = wick.tensor({ correct, total }, { dtype = "float64", device = device })
    dist.all_reduce(counts)
    correct, total = counts[1]:item(), counts[2]:item()
  end
  return correct / total
end

-- ---- training ----
local model = build():to(device)
-- under --distributed, ddp(x) runs the model and averages the gradients over the
-- ranks during backward; the optimizer works on the model's parameters as ever
local ddp = dist and nn.parallel.DistributedDataParallel(model,
  { device_ids = device.type == "cuda" and { device } or nil }) or nil
local forward = ddp or model
local optimizer
if (opts.optimizer or "sgd") == "adam" then
  optimizer = wick.optim.Adam(model:parameters(), { lr = opts.lr or 1e-3 })
else
  optimizer = wick.optim.SGD(model:parameters(), { lr = lr, momentum = 0.9 })
end
-- the learning rate decays along a cosine over the run, step by step
local steps = math.min(train_loader:len(), max_steps) -- per epoch
-- (T_max at least 1: --epochs 0 takes no step, and CosineAnnealingLR refuses T_max = 0)
local schedule = wick.optim.CosineAnnealingLR(optimizer, { T_max = math.max(1, epochs * steps) })
local loss_fn = nn.CrossEntropyLoss()
local tty = wick._core.isatty(1) and is_main
if dist then
  log("%s, %s backend, world %d: %d training samples in %d batches of %d per epoch, %d thread(s)", tostring(device),
    opts.backend or (device.type == "cuda" and "nccl" or "mpi"), world, train_sampler:len(), train_loader:len(),
    opts.batch_size, wick.get_num_threads())
end
if is_main then
  print(("training %s on %s: %d epochs, batch %d%s, lr %g, %d thread(s)%s"):format(opts.model,
    dist and (world .. " ranks") or tostring(device), epochs, opts.batch_size,
    dist and (" per rank (" .. opts.batch_size * world .. " in all)") or "", lr, wick.get_num_threads(),
    dist and " per rank" or ""))
end

local global_step = 0
-- the first batch's first 8 images side by side, scaled to [0, 1], as one CHW image
local function input_strip(images)
  local n = math.min(8, images:size(1))
  local x = images:narrow(1, 1, n):to("cpu"):reshape(n, 28, 28)
  local lo, hi = x:min():item(), x:max():item()
  x = (x - lo) / math.max(hi - lo, 1e-12)
  return x:permute(2, 1, 3):reshape(1, 28, n * 28)
end

-- one training step on a batch; returns the loss
local function train_step(images, labels)
  optimizer:zero_grad()
  local loss = loss_fn(forward(images), labels)
  loss:backward()
  optimizer:step()
  schedule:step()
  return loss
end

if opts.profile then
  local batches = train_loader:iter()
  profile_steps.run(function() train_step(profile_steps.batch("enumerate(DataLoader)", batches)) end, opts.profile)
  if writer then writer:close() end
  return
end

local acc = epochs == 0 and accuracy(model, shard_loader) or nil -- --epochs 0: the untrained model, checkpointed
for epoch = 1, epochs do
  if train_sampler then train_sampler:set_epoch(epoch) end -- the same new order on every rank
  local t0, seen, running = wick.clock(), 0, 0
  local batches = steps
  for b, images, labels in (function()
    local it, k = train_loader:iter(), 0
    return function()
      if k >= batches then return nil end
      local x, y = it()
      if x == nil then return nil end
      k = k + 1
      return k, x, y
    end
  end)() do
    local loss = train_step(images, labels)
    seen = seen + labels:size(1)
    running = running + loss:item()
    global_step = global_step + 1
    if writer and (global_step % 10 == 0 or b == 1) then
      writer:add_scalar("train/loss", loss:item(), global_step)
      writer:add_scalar("train/lr", schedule:get_last_lr()[1], global_step)
      if global_step == 1 then writer:add_image("inputs", input_strip(images), global_step) end
    end
    if tty and (b % 20 == 0 or b == batches) then
      local width = 30
      local done = math.floor(width * b / batches)
      io.write(("\repoch %d [%s%s] %d/%d  loss %.4f  %.0f samples/s "):format(epoch, ("="):rep(done),
        (" "):rep(width - done), b, batches, running / b, world * seen / (wick.clock() - t0)))
      io.flush()
    end
  end
  local elapsed = wick.clock() - t0
  local mean_loss = running / batches
  if dist then -- the ranks' mean losses, averaged
    local l = wick.tensor({ mean_loss }, { dtype = "float64", device = device })
    dist.all_reduce(l, { op = "avg" })
    mean_loss = l:item()
  end
  acc = accuracy(model, shard_loader)
  if tty then io.write("\r" .. (" "):rep(90) .. "\r") end
  if writer then
    writer:add_scalar("epoch/loss", mean_loss, epoch)
    writer:add_scalar("epoch/test_accuracy", acc, epoch)
    for name, weight in model:named_parameters() do -- the first layer's weight
      writer:add_histogram(name, weight, epoch)
      break
    end
    writer:flush()
  end
  if is_main then
    print(("epoch %d: loss %.4f, test accuracy %.2f%%, %.1f s, %.0f samples/s"):format(epoch, mean_loss,
      100 * acc, elapsed, world * seen / elapsed))
  end
end

if writer then writer:close() end

-- ---- checkpoint: save, reload onto the CPU, confirm ----
local path = opts.checkpoint or ((os.getenv("TMPDIR") or "/tmp") .. "/wick-fashion-mnist-" .. opts.model
  .. (dist and "-distributed" or "") .. ".wick")
if dist then
  -- rank 0 saves ddp.module's state (no wrapper prefix); after the barrier every
  -- rank reads the file onto its own device and scores it on the whole test set
  if is_main then
    wick.save({ model = model:state_dict(), optimizer = optimizer:state_dict(), epoch = epochs, accuracy = acc }, path)
  end
  dist.barrier()
  local checkpoint = wick.load(path, { map_location = device })
  local reloaded = build():to(device)
  reloaded:load_state_dict(checkpoint.model)
  local mine, theirs = accuracy(model), accuracy(reloaded)
  log("checkpoint %s reloaded on %s: test accuracy %.2f%%, %s this rank's model (%.2f%%)", path, tostring(device),
    100 * theirs, theirs == mine and "the same as" or "DIFFERENT from", 100 * mine)
  dist.barrier()
  dist.destroy_process_group()
  if theirs ~= mine then os.exit(1) end
  return
end
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
