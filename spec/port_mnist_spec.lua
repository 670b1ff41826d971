-- A port test: pytorch/examples' mnist/main.py, ported line by line (Net, train,
-- test, the optimizer and scheduler of main) and run for a few steps on small
-- synthetic digits (specs never download; Debian's Fashion-MNIST package is not
-- assumed either), checking that the loss goes down and test() counts right.
--
-- Where this port differs from mnist/main.py (besides Lua syntax):
--  * the data: 10 synthetic 28x28 "digit" templates plus noise, normalised with
--    main.py's Normalize((0.1307,), (0.3081,)), in a TensorDataset instead of
--    datasets.MNIST + transforms; two epochs of a few batches, not 14 epochs;
--  * labels are 1-based (wick's class-index rule), so argmax gives 1..10 as well;
--    dimensions are 1-based: torch.flatten(x, 1) is wick.flatten(x, 2),
--    F.log_softmax(x, dim=1) is F.log_softmax(x, 2);
--  * `for batch_idx, (data, target) in enumerate(train_loader)` is a counter
--    around `for data, target in train_loader:iter()`; len(loader.dataset) is
--    train_loader.dataset:len(); len(data) is data:size(1);
--  * `with torch.no_grad():` is wick.no_grad(function() ... end);
--  * argparse's args is a plain table; no CUDA/MPS choice (the CPU); the log line
--    goes to a table instead of stdout (the spec checks it), no --save-model;
--  * keyword arguments go in options tables: F.nll_loss(output, target,
--    {reduction = "sum"}), output:argmax(2, true) for argmax(dim=1, keepdim=True),
--    StepLR(optimizer, {step_size = 1, gamma = args.gamma}).
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
local optim = wick.optim
local StepLR = optim.lr_scheduler.StepLR

local Net = nn.Module:extend("Net")
function Net:init()
  self.conv1 = nn.Conv2d(1, 32, 3, 1)
  self.conv2 = nn.Conv2d(32, 64, 3, 1)
  self.dropout1 = nn.Dropout(0.25)
  self.dropout2 = nn.Dropout(0.5)
  self.fc1 = nn.Linear(9216, 128)
  self.fc2 = nn.Linear(128, 10)
end

function Net:forward(x)
  x = self.conv1(x)
  x = F.relu(x)
  x = self.conv2(x)
  x = F.relu(x)
  x = F.max_pool2d(x, 2)
  x = self.dropout1(x)
  x = wick.flatten(x, 2)
  x = self.fc1(x)
  x = F.relu(x)
  x = self.dropout2(x)
  x = self.fc2(x)
  local output = F.log_softmax(x, 2)
  return output
end

local log = {}

local function train(args, model, device, train_loader, optimizer, epoch)
  model:train()
  local batch_idx = -1
  local losses = {}
  for data, target in train_loader:iter() do
    batch_idx = batch_idx + 1
    data, target = data:to(device), target:to(device)
    optimizer:zero_grad()
    local output = model(data)
    local loss = F.nll_loss(output, target)
    loss:backward()
    optimizer:step()
    losses[#losses + 1] = loss:item()
    if batch_idx % args.log_interval == 0 then
      log[#log + 1] = ("Train Epoch: %d [%d/%d (%.0f%%)]\tLoss: %.6f"):format(epoch, batch_idx * data:size(1),
        train_loader.dataset:len(), 100. * batch_idx / train_loader:len(), loss:item())
      if args.dry_run then break end
    end
  end
  return losses
end

local function test(model, device, test_loader)
  model:eval()
  local test_loss = 0
  local correct = 0
  wick.no_grad(function()
    for data, target in test_loader:iter() do
      data, target = data:to(device), target:to(device)
      local output = model(data)
      test_loss = test_loss + F.nll_loss(output, target, { reduction = "sum" }):item() -- sum up batch loss
      local pred = output:argmax(2, true) -- get the index of the max log-probability
      correct = correct + pred:eq(target:view_as(pred)):sum():item()
    end
  end)
  test_loss = test_loss / test_loader.dataset:len()
  log[#log + 1] = ("Test set: Average loss: %.4f, Accuracy: %d/%d (%.0f%%)"):format(test_loss, correct,
    test_loader.dataset:len(), 100. * correct / test_loader.dataset:len())
  return test_loss, correct
end

-- synthetic digits: one random 28x28 template per class, plus noise, in [0, 1]
local function synthetic_digits(n, templates)
  local classes = {}
  for i = 1, n do classes[i] = (i * 7) % 10 + 1 end
  local labels = wick.tensor(classes, { dtype = "int64" })
  local images = (templates:index_select(1, labels) + wick.randn(n, 1, 28, 28) * 0.15):clamp(0, 1)
  return (images - 0.1307) / 0.3081, labels -- transforms.Normalize((0.1307,), (0.3081,))
end

describe("pytorch/examples mnist port", function()
  it("Net builds with PyTorch's positional Conv2d arguments and has main.py's parameter count", function()
    wick.manual_seed(1)
    local model = Net()
    local n = 0
    for _, p in ipairs(model:parameters()) do n = n + p:numel() end
    -- conv1 1*32*9+32, conv2 32*64*9+64, fc1 9216*128+128, fc2 128*10+10
    assert.are.equal(320 + 18496 + 1179776 + 1290, n)
  end)

  it("optim.Adadelta follows PyTorch's update rule (two steps, by hand)", function()
    local p = wick.tensor({ 1.0, -2.0 }, { dtype = "float64" }):requires_grad_(true)
    local opt = optim.Adadelta({ p }, { lr = 0.5, rho = 0.8, eps = 1e-6 })
    local want, sq, acc = { 1.0, -2.0 }, { 0, 0 }, { 0, 0 }
    for _ = 1, 2 do
      opt:zero_grad()
      local loss = (p * p):sum() * 1.5 -- grad 3p
      loss:backward()
      opt:step()
      for k = 1, 2 do
        local g = 3 * want[k]
        sq[k] = 0.8 * sq[k] + 0.2 * g * g
        local delta = math.sqrt(acc[k] + 1e-6) / math.sqrt(sq[k] + 1e-6) * g
        acc[k] = 0.8 * acc[k] + 0.2 * delta * delta
        want[k] = want[k] - 0.5 * delta
      end
    end
    for k = 1, 2 do assert.is_true(math.abs(p[k]:item() - want[k]) < 1e-12) end
    assert.are.equal(2, opt.state[p].step)
  end)

  it("trains with Adadelta and StepLR: the loss goes down and test() counts the right predictions", function()
    local args = { batch_size = 16, test_batch_size = 32, epochs = 2, lr = 1.0, gamma = 0.7, seed = 1,
      log_interval = 2, dry_run = false }
    wick.manual_seed(args.seed)
    local device = wick.device("cpu")
    local templates = wick.rand(10, 1, 28, 28):gt(0.7):to("float32")
    local train_x, train_y = synthetic_digits(64, templates)
    local test_x, test_y = synthetic_digits(32, templates)
    local dataset1 = wick.data.TensorDataset(train_x, train_y)
    local dataset2 = wick.data.TensorDataset(test_x, test_y)
    local train_loader = wick.data.DataLoader(dataset1, { batch_size = args.batch_size, shuffle = true })
    local test_loader = wick.data.DataLoader(dataset2, { batch_size = args.test_batch_size })

    local model = Net():to(device)
    local optimizer = optim.Adadelta(model:parameters(), { lr = args.lr })
    local scheduler = StepLR(optimizer, { step_size = 1, gamma = args.gamma })

    local before = test(model, device, test_loader)
    local losses = {}
    for epoch = 1, args.epochs do
      for _, l in ipairs(train(args, model, device, train_loader, optimizer, epoch)) do losses[#losses + 1] = l end
      scheduler:step()
    end
    local after, correct = test(model, device, test_loader)
    assert.are.equal(2 * 4, #losses)
    assert.is_true(after < 0.7 * before, ("test loss %g -> %g"):format(before, after))
    assert.is_true(losses[#losses] < losses[1], ("train loss %g -> %g"):format(losses[1], losses[#losses]))
    -- StepLR(step_size = 1, gamma = 0.7) after two epochs
    assert.is_true(math.abs(optimizer.param_groups[1].lr - 0.49) < 1e-12)
    -- test()'s count is the number of argmax hits, counted again here
    model:eval()
    local hits = wick.no_grad(function() return model(test_x):argmax(2):eq(test_y):sum():item() end)
    assert.are.equal(hits, correct)
    assert.truthy(log[2]:find("^Train Epoch: 1 %[0/64 %(0%%%)%]\tLoss: "))
    assert.truthy(log[#log]:find(("Accuracy: %d/32"):format(correct), 1, true))
  end)
end)
