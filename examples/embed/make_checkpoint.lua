-- Writes a checkpoint in the layout examples/fashion_mnist.lua saves
-- ({ model = state_dict, epoch, accuracy }) with a few training steps on
-- random data, so the embed test needs neither the dataset nor minutes:
--   build/wick examples/embed/make_checkpoint.lua PATH
local wick = require("wick")
local here = debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./"
local M = dofile(here .. "model.lua")
local path = assert(arg[1], "usage: make_checkpoint.lua PATH")
wick.manual_seed(1)
local model = M.MLP()
local optimizer = wick.optim.SGD(model:parameters(), { lr = 0.1 })
local labels = {}
for i = 1, 64 do labels[i] = i % 10 + 1 end -- class indices, 1-based as in wick
local x, y = wick.rand(64, 28, 28), wick.tensor(labels, { dtype = "int64" })
for _ = 1, 3 do
  optimizer:zero_grad()
  local loss = wick.nn.functional.cross_entropy(model(x), y)
  loss:backward()
  optimizer:step()
end
wick.save({ model = model:state_dict(), epoch = 0, accuracy = 0 }, path)
print("checkpoint written to " .. path)
