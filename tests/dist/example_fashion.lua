-- ranks: 2
-- examples/fashion_mnist.lua --distributed, one epoch cut to 100 steps, as mpirun starts
-- it: every rank logs with its rank, only rank 0 prints the epoch line and
-- writes the checkpoint, and every rank reloads it onto its device and scores
-- the same accuracy as its own model (the example exits non-zero otherwise).
local wick = require("wick")

local example = dofile("tests/dist/lib/example.lua")
local path = example.checkpoint_path("example")
local lines = example.run({ "--distributed", "--epochs", "1", "--max-steps", "100", "--checkpoint", path })

local rank = 0
for _, l in ipairs(lines) do
  local r = l:match("^%[rank (%d+)%]")
  if r then rank = tonumber(r) break end
end
local function has(pattern)
  for _, l in ipairs(lines) do if l:find(pattern) then return true end end
  return false
end
local function check(cond, what)
  if not cond then error(("[example test, rank %d] %s; output:\n%s"):format(rank, what, table.concat(lines, "\n")), 2) end
end
check(has("^%[rank %d%] cpu, mpi backend, world 2: 30000 training samples"), "no start line with this rank")
check(has("^%[rank %d%] checkpoint .* the same as this rank's model"), "no reload line")
check(has("^epoch 1: ") == (rank == 0), "the epoch line must come from rank 0 only")
check(has("^training mlp on 2 ranks") == (rank == 0), "the training line must come from rank 0 only")
local acc = tonumber(table.concat(lines, "\n"):match("reloaded on cpu: test accuracy ([%d%.]+)%%"))
check(acc and acc > 70, "accuracy after 100 steps " .. tostring(acc) .. "%, expected above 70%")
if rank == 0 then
  local ckpt = wick.load(path)
  check(ckpt.epoch == 1 and math.abs(100 * ckpt.accuracy - acc) < 0.01, "the checkpoint's epoch and accuracy")
  check(ckpt.model["layers.2.weight"] ~= nil, "the checkpoint's names carry no wrapper prefix")
  os.remove(path)
end
