-- The Lua half of examples/embed/host.c: the Fashion-MNIST example's MLP
-- (examples/fashion_mnist.lua, --model mlp), loaded from a checkpoint onto the
-- CPU, and a predict function the host calls once per frame.
local wick = require("wick")
local nn = wick.nn

local M = {}

M.classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
  "Ankle boot" }

-- the same model as examples/fashion_mnist.lua
local MLP = nn.Module:extend("MLP")
function MLP:init()
  self.layers = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
    nn.Linear(256, 10))
end
function MLP:forward(x) return self.layers(x) end
M.MLP = MLP

local model

-- A checkpoint saved by examples/fashion_mnist.lua (or make_checkpoint.lua):
-- { model = state_dict, ... }, reloaded onto the CPU whatever it was saved from.
function M.load(path)
  local checkpoint = wick.load(path, { map_location = "cpu" })
  model = MLP()
  model:load_state_dict(checkpoint.model)
  model:eval()
end

-- image: a [28, 28] float32 CPU tensor (the host's memory, not a copy).
-- Returns the predicted class (0-9, Fashion-MNIST's labels) and its probability.
function M.predict(image)
  return wick.no_grad(function()
    local probs = wick.nn.functional.softmax(model(image:view(1, 28, 28)), 2)
    local p, i = probs:max(2)
    return i:item() - 1, p:item()
  end)
end

return M
