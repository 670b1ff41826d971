-- ranks: 2 3
-- A model that differs across ranks (a shape, a name, a missing parameter) is
-- the same clear error on every rank at construction, naming the first entry
-- that differs: never a hang, never an error on one rank only.
local wick = require("wick")
local nn = wick.nn
local dist = wick.distributed

dist.init_process_group({ backend = "mpi" })
local rank, world = dist.get_rank(), dist.get_world_size()
local last = world - 1

-- a checksum of a string, the same on every rank only if the strings are
local function same_everywhere(s)
  local h = #s
  for i = 1, #s do h = (h * 31 + s:byte(i)) % 1000000007 end
  local lo, hi = wick.tensor({ h }, { dtype = "int64" }), wick.tensor({ h }, { dtype = "int64" })
  dist.all_reduce(lo, { op = "min" })
  dist.all_reduce(hi, { op = "max" })
  return lo:item() == hi:item()
end

local function expect_error(build, ...)
  local ok, err = pcall(function() return nn.parallel.DistributedDataParallel(build()) end)
  assert(not ok, ("rank %d: a mismatched model was accepted"):format(rank))
  err = tostring(err)
  assert(err:find("DistributedDataParallel: the model differs across ranks", 1, true), err)
  for _, piece in ipairs({ ... }) do assert(err:find(piece, 1, true), ("%q lacks %q"):format(err, piece)) end
  assert(err:find("ddp_mismatch.lua:", 1, true), "the error names the user's line: " .. err)
  assert(same_everywhere(err), ("rank %d: the ranks raised different errors: %s"):format(rank, err))
  if rank == 0 then print(err) end
end

-- a shape: the last rank's second layer is wider
expect_error(function()
  return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, rank == last and 3 or 2))
end, "parameter '3.weight' [2, 8] float32", ("rank %d has parameter '3.weight' [3, 8] float32"):format(last))

-- a missing parameter on rank 0 only: every other rank differs
expect_error(function()
  return nn.Linear(4, 2, { bias = rank ~= 0 })
end, "rank 0 has nothing", "rank 1 has parameter 'bias' [2] float32")

-- a dtype
expect_error(function()
  local m = nn.Linear(2, 2)
  if rank == last then m:to("float64") end
  return m
end, "float64")

-- and the group still works afterwards: a matching model is accepted
local ddp = nn.parallel.DistributedDataParallel(nn.Linear(3, 1))
ddp(wick.randn(2, 3)):sum():backward()
assert(ddp.module.weight.grad ~= nil)
dist.destroy_process_group()
