-- The Lua half of examples/embed/host.c: the Fashion-MNIST example's MLP
-- (examples/fashion_mnist.lua, --model mlp), loaded from a checkpoint onto the
-- CPU, and a predict function the host calls once per frame.
local wick = require("wick")

local M = {}

M.classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
  "Ankle boot" }

-- the model of examples/fashion_mnist.lua, from the file next to it
local here = debug.getinfo(1, "S").source:match("^@(.*)/") or "."
local MLP = dofile(here .. "/../fashion_mnist_models.lua").MLP
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
