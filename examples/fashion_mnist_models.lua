-- The Fashion-MNIST models, in one place for examples/fashion_mnist.lua, the C
-- host of examples/embed and bench/gpu_train.lua, so that a checkpoint written
-- by one loads in the others:
--   local models = dofile("examples/fashion_mnist_models.lua")
--   local model = models.MLP()   -- or models.CNN()
local wick = require("wick")
local nn, F = wick.nn, wick.nn.functional

local models = {}

models.MLP = nn.Module:extend("MLP")
function models.MLP:init()
  self.layers = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
    nn.Linear(256, 10))
end
function models.MLP:forward(x) return self.layers(x) end

models.CNN = nn.Module:extend("CNN")
function models.CNN:init()
  self.conv1 = nn.Conv2d(1, 32, 3, { padding = 1 })
  self.conv2 = nn.Conv2d(32, 64, 3, { padding = 1 })
  self.pool = nn.MaxPool2d(2)
  self.fc1 = nn.Linear(64 * 7 * 7, 128)
  self.fc2 = nn.Linear(128, 10)
end
function models.CNN:forward(x)
  x = self.pool(F.relu(self.conv1(x)))   -- 32 x 14 x 14
  x = self.pool(F.relu(self.conv2(x)))   -- 64 x 7 x 7
  return self.fc2(F.relu(self.fc1(x:flatten(2))))
end

return models
