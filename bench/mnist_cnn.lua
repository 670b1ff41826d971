-- bench/mnist_cnn.lua THREADS — pytorch/examples' mnist/main.py network (conv
-- 1->32 3x3, conv 32->64 3x3, max pool 2, dropouts, fc 9216->128, fc 128->10,
-- log_softmax; spec/port_mnist_spec.lua ports it line by line): one training
-- pass over 10k images (batch 64, Adadelta lr 1.0, nll_loss) and one evaluation
-- of 10k images (batch 1000, no_grad), on random 28x28 images (the time does not
-- depend on the pixels). Prints `train_10k<TAB>ms` and `eval_10k<TAB>ms`, the
-- same lines as bench/mnist_cnn_torch.py (bench/mnist_cnn.sh runs both).
local wick = require("wick")
local nn = wick.nn
local F = nn.functional
wick.set_num_threads(tonumber(arg[1] or "1"))
wick.manual_seed(1)

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
  x = F.relu(self.conv1(x))
  x = F.max_pool2d(F.relu(self.conv2(x)), 2)
  x = self.dropout1(x)
  x = F.relu(self.fc1(wick.flatten(x, 2)))
  x = self.fc2(self.dropout2(x))
  return F.log_softmax(x, 2)
end

local N = 10000
local images = wick.randn(N, 1, 28, 28)
local labels = wick.randint(1, 11, { N })
local model = Net()
local optimizer = wick.optim.Adadelta(model:parameters(), { lr = 1.0 })

local function train(batch)
  model:train()
  for i = 1, N, batch do
    local n = math.min(batch, N - i + 1)
    local data, target = images:narrow(1, i, n), labels:narrow(1, i, n)
    optimizer:zero_grad()
    local loss = F.nll_loss(model(data), target)
    loss:backward()
    optimizer:step()
  end
end

local function evaluate(batch)
  model:eval()
  local correct = 0
  wick.no_grad(function()
    for i = 1, N, batch do
      local n = math.min(batch, N - i + 1)
      local pred = model(images:narrow(1, i, n)):argmax(2)
      correct = correct + pred:eq(labels:narrow(1, i, n)):sum():item()
    end
  end)
  return correct
end

train(64) -- warm-up pass (caches, the kernels' probes): not timed
local t0 = wick.clock()
train(64)
io.write(("train_10k\t%.1f\n"):format((wick.clock() - t0) * 1000))
evaluate(1000)
t0 = wick.clock()
evaluate(1000)
io.write(("eval_10k\t%.1f\n"):format((wick.clock() - t0) * 1000))
