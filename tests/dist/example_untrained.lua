-- ranks: 3
-- examples/fashion_mnist.lua --distributed --epochs 0 at 3 ranks: the untrained
-- model is checkpointed with its test accuracy counted over the ranks' shards
-- of the test set (10000 samples split 3334/3333/3333 by the example's own
-- sampler, counts all-reduced); every rank scores the whole test set itself
-- after reloading, and the two must agree to the last sample.
local wick = require("wick")

local example = dofile("tests/dist/lib/example.lua")
local path = example.checkpoint_path("untrained")
local lines = example.run({ "--distributed", "--epochs", "0", "--checkpoint", path })

local text = table.concat(lines, "\n")
local rank = tonumber(text:match("%[rank (%d+)%]")) or -1
local function check(cond, what)
  if not cond then error(("[example test, rank %d] %s; output:\n%s"):format(rank, what, text), 2) end
end
local whole = tonumber(text:match("reloaded on cpu: test accuracy [%d%.]+%%, the same as this rank's model %(([%d%.]+)%%%)"))
check(whole, "no reload line")
check(whole > 0 and whole < 30, "an untrained model's accuracy " .. whole .. "%")
if rank == 0 then -- every rank has the same model (DDP broadcast it), so rank 0 checks the file and removes it
  local ckpt = wick.load(path)
  check(ckpt.epoch == 0, "the checkpoint's epoch")
  -- the shards' summed counts give the whole test set's accuracy, to the last sample: score
  -- the saved model here over the whole set and compare the fractions exactly
  local model = dofile("examples/fashion_mnist_models.lua").MLP()
  model:load_state_dict(ckpt.model)
  model:eval()
  local correct, total = 0, 0
  wick.no_grad(function()
    for x, y in wick.data.DataLoader(wick.data.FashionMNIST { train = false }, { batch_size = 1000 }):iter() do
      correct = correct + model(x):argmax(2):eq(y):sum():item()
      total = total + y:size(1)
    end
  end)
  check(total == 10000 and ckpt.accuracy == correct / total, ("sharded accuracy %.6f, whole set %d / %d")
    :format(ckpt.accuracy, correct, total))
  check(math.abs(100 * ckpt.accuracy - whole) < 0.005, "the reload line's accuracy")
  os.remove(path)
end
