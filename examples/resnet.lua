-- Train torchvision's ResNet-18 (examples/resnet_model.lua, a line-by-line port
-- of torchvision/models/resnet.py) on Fashion-MNIST, the way a PyTorch user
-- adapts it to 28x28 grey images: resnet18(num_classes=10) with its first
-- convolution replaced by a 1-channel one, SGD with momentum and weight decay, a
-- cosine learning-rate schedule, the test accuracy after each epoch.
--
--   build/wick examples/resnet.lua [--arch resnet18|resnet34|resnet50] [--epochs N]
--       [--batch-size N] [--lr X] [--momentum X] [--weight-decay X] [--max-steps N]
--       [--test-limit N] [--print-freq N] [--seed N] [--threads N] [--device cpu|cuda] [--save PATH]
--       [--tensorboard DIR] [--profile [PATH]]
--
-- The data comes from Debian's dataset-fashion-mnist package (or
-- FASHION_MNIST_DIR) through wick.data.FashionMNIST, as in
-- examples/fashion_mnist.lua, normalised with the training set's mean and
-- standard deviation (transforms.Normalize((0.2860,), (0.3530,))).
-- Differences from a PyTorch script doing the same: no torchvision transforms
-- (the normalisation is one line in the loop), no data-loading workers, the
-- checkpoint is a state dict in wick's format (wick.save).
--
-- --tensorboard DIR: TensorBoard logs there (train/loss and train/lr per step,
-- epoch/loss and epoch/test_accuracy per epoch; `tensorboard --logdir DIR`).
-- --profile [PATH]: one warm-up step, then 3 steps under wick.profiler.profile:
-- prints the ops sorted by their own CPU time and writes a Chrome trace to PATH
-- (default profile.json; open it in https://ui.perfetto.dev), then stops
-- (examples/profile_steps.lua).
local wick = require("wick")
local nn = wick.nn

local here = (arg and arg[0] or ""):match("^(.*)/") or "."
local argparse = dofile(here .. "/argparse.lua")
local resnet = dofile(here .. "/resnet_model.lua")
local profile_steps = dofile(here .. "/profile_steps.lua")

local parser = argparse.ArgumentParser("resnet.lua", "ResNet on Fashion-MNIST")
parser:add_argument("--arch", { default = "resnet18", help = "resnet18, resnet34 or resnet50" })
parser:add_argument("--epochs", { type = "int", default = 2, help = "number of epochs" })
parser:add_argument("--batch-size", { type = "int", default = 128, help = "batch size" })
parser:add_argument("--lr", { type = "float", default = 0.1, help = "initial learning rate" })
parser:add_argument("--momentum", { type = "float", default = 0.9, help = "SGD momentum" })
parser:add_argument("--weight-decay", { type = "float", default = 5e-4, help = "weight decay" })
parser:add_argument("--max-steps", { type = "int", help = "at most this many steps an epoch (a short run)" })
parser:add_argument("--test-limit", { type = "int", help = "score on the first N test images only (a short run)" })
parser:add_argument("--print-freq", { type = "int", default = 50, help = "log every this many steps" })
parser:add_argument("--seed", { type = "int", default = 1, help = "random seed" })
parser:add_argument("--threads", { type = "int", help = "CPU threads" })
parser:add_argument("--device", { help = "cpu, cuda or cuda:N (default: cuda when available)" })
parser:add_argument("--save", { default = (os.getenv("TMPDIR") or "/tmp") .. "/wick-resnet-fashion-mnist.wick",
  help = "where to save the trained model's state dict" })
parser:add_argument("--tensorboard", { metavar = "DIR", help = "write TensorBoard logs to DIR (wick.utils.tensorboard)" })
parser:add_argument("--profile", { nargs = "?", const = profile_steps.DEFAULT_PATH, metavar = "PATH",
  help = profile_steps.HELP })
local args = parser:parse_args(arg)
if not resnet[args.arch] then parser:error("argument --arch: unknown architecture " .. args.arch) end
for _, k in ipairs({ "epochs", "batch_size", "print_freq" }) do
  if args[k] < (k == "epochs" and 0 or 1) then parser:error("argument --" .. k:gsub("_", "-") .. ": too small") end
end

if args.threads then wick.set_num_threads(args.threads) end
wick.manual_seed(args.seed)
local device = wick.device(args.device or (wick.cuda.is_available() and "cuda" or "cpu"))

-- the model: torchvision's, adapted to 1-channel 28x28 images and 10 classes
local function build()
  local model = resnet[args.arch]({ num_classes = 10 })
  model.conv1 = nn.Conv2d(1, 64, 7, { stride = 2, padding = 3, bias = false })
  return model:to(device)
end
local model = build()

local MEAN, STD = 0.2860, 0.3530
local train_set = wick.data.FashionMNIST { train = true }
local test_set = wick.data.FashionMNIST { train = false }
if args.test_limit then -- the first test_limit images
  local full, n = test_set, math.min(args.test_limit, test_set:len())
  test_set = { len = function() return n end, get = function(_, i) return full:get(i) end }
end
local train_loader = wick.data.DataLoader(train_set, { batch_size = args.batch_size, shuffle = true, device = device })
local test_loader = wick.data.DataLoader(test_set, { batch_size = 500, device = device })

local criterion = nn.CrossEntropyLoss()
local optimizer = wick.optim.SGD(model:parameters(), { lr = args.lr, momentum = args.momentum,
  weight_decay = args.weight_decay })
local steps = math.min(train_loader:len(), args.max_steps or math.huge)
local scheduler = wick.optim.lr_scheduler.CosineAnnealingLR(optimizer, { T_max = math.max(1, args.epochs * steps) })

local function evaluate()
  model:eval()
  local correct, total = 0, 0
  wick.no_grad(function()
    for images, target in test_loader:iter() do
      local output = model((images - MEAN) / STD)
      correct = correct + output:argmax(2):eq(target):sum():item()
      total = total + target:size(1)
    end
  end)
  return correct / total
end

-- one training step on a batch; returns the loss
local function train_step(images, target)
  local output = model((images - MEAN) / STD)
  local loss = criterion(output, target)
  optimizer:zero_grad()
  loss:backward()
  optimizer:step()
  scheduler:step()
  return loss
end

if args.profile then
  model:train()
  local batches = train_loader:iter()
  profile_steps.run(function() train_step(profile_steps.batch("enumerate(DataLoader)", batches)) end, args.profile)
  return
end

print(("%s on Fashion-MNIST, %s, %d thread(s): %d epochs of %d steps, batch %d"):format(args.arch, tostring(device),
  wick.get_num_threads(), args.epochs, steps, args.batch_size))
-- an unwritable DIR fails here, before any training
local writer = args.tensorboard and wick.utils.tensorboard.SummaryWriter(args.tensorboard) or nil
local global_step = 0
for epoch = 1, args.epochs do
  model:train()
  local t0, step, running = wick.clock(), 0, 0
  for images, target in train_loader:iter() do
    step = step + 1
    if step > steps then break end
    local loss = train_step(images, target):item()
    running = running + loss
    global_step = global_step + 1
    if writer then
      writer:add_scalar("train/loss", loss, global_step)
      writer:add_scalar("train/lr", scheduler:get_last_lr()[1], global_step)
    end
    if step % args.print_freq == 0 or step == steps then
      print(("Epoch: [%d][%d/%d]  loss %.4f  lr %.4f  %.1f img/s"):format(epoch, step, steps, running / step,
        scheduler:get_last_lr()[1], step * args.batch_size / (wick.clock() - t0)))
      io.stdout:flush()
    end
  end
  local acc = evaluate()
  print(("Epoch %d: train loss %.4f, test accuracy %.2f%%, %.1f s"):format(epoch, running / steps, 100 * acc,
    wick.clock() - t0))
  if writer then
    writer:add_scalar("epoch/loss", running / steps, epoch)
    writer:add_scalar("epoch/test_accuracy", acc, epoch)
    writer:flush()
  end
end
if writer then writer:close() end

wick.save(model:state_dict(), args.save)
local reloaded = build()
reloaded:load_state_dict(wick.load(args.save, { map_location = device }))
print(("saved %s"):format(args.save))
