-- ranks: 2
-- ddp:no_sync(fn): gradients of the micro-batches run inside it accumulate
-- locally (no averaging: they differ across ranks), and the next synced
-- backward averages the accumulated sum: 3 micro-batches per rank equal one
-- large batch of all ranks' samples in one process. Also: buffers come from
-- rank 0 at construction and before every forward (broadcast_buffers), and
-- find_unused_parameters.
local wick = require("wick")
local nn, F = wick.nn, wick.nn.functional
local dist = wick.distributed

dist.init_process_group({ backend = "mpi" })
local rank, world = dist.get_rank(), dist.get_world_size()
local MICRO, B, D = 3, 16, 32 -- per rank: MICRO micro-batches of B samples
local N = MICRO * B * world

local function make_model() return nn.Sequential(nn.Linear(D, 64), nn.Tanh(), nn.Linear(64, 5)) end

local function max_diff(a, b)
  local m = 0
  for i = 1, #a do m = math.max(m, (a[i] - b[i]):abs():max():item()) end
  return m
end
local function grads(model)
  local out = {}
  for i, p in ipairs(model:parameters()) do out[i] = p.grad:clone() end
  return out
end
-- the spread of a value over the ranks
local function spread(t)
  local lo, hi = t:clone(), t:clone()
  dist.all_reduce(lo, { op = "min" })
  dist.all_reduce(hi, { op = "max" })
  return (hi - lo):abs():max():item()
end

wick.manual_seed(7 + rank)
local ddp = nn.parallel.DistributedDataParallel(make_model())
local ref = make_model()
ref:load_state_dict(ddp.module:state_dict())

wick.manual_seed(99) -- the same global data on every rank
local x = wick.randn(N, D)
local y = wick.randint(1, 6, { N })
local function rows(micro) -- this rank's rows of micro-batch `micro`
  return (micro - 1) * B * world + rank * B + 1, B
end
local function micro_loss(micro)
  local first, count = rows(micro)
  return F.cross_entropy(ddp(x:narrow(1, first, count)), y:narrow(1, first, count), { reduction = "sum" }) * (world / N)
end

local stats0 = ddp:comm_stats().buckets
ddp:no_sync(function()
  for micro = 1, MICRO - 1 do micro_loss(micro):backward() end
end)
assert(ddp:comm_stats().buckets == stats0, "no_sync must not all-reduce")
-- local gradients: different on the two ranks
assert(spread(ddp.module[1].weight.grad) > 1e-6, "inside no_sync the gradients stay local")
micro_loss(MICRO):backward()
assert(ddp:comm_stats().buckets > stats0, "the synced backward all-reduces")

F.cross_entropy(ref(x), y, { reduction = "sum" }):div(N):backward()
local diff = max_diff(grads(ddp.module), grads(ref))
print(("[rank %d] no_sync: max |accumulated DDP grad - large batch grad| = %.3g"):format(rank, diff))
assert(diff < 1e-5, "accumulated gradients differ from the large batch's: " .. diff)

-- ---- buffers: rank 0's at construction and before each forward ----
local WithBuffer = nn.Module:extend("WithBuffer")
function WithBuffer:init()
  self.lin = nn.Linear(3, 3)
  self:register_buffer("count", wick.zeros(2))
end
function WithBuffer:forward(inp)
  self.count:add_(1 + rank) -- each rank changes its buffer differently
  return self.lin(inp)
end
local m = WithBuffer()
m.count:fill_(10 + rank)
local dm = nn.parallel.DistributedDataParallel(m)
assert(m.count[1]:item() == 10, "the buffer comes from rank 0 at construction")
dm(wick.randn(2, 3)):sum():backward()
-- this forward broadcast rank 0's 10, then added 1 + rank
assert(m.count[1]:item() == 11 + rank, "buffers broadcast before the forward, got " .. m.count[1]:item())
dm(wick.randn(2, 3)):sum():backward()
assert(m.count[1]:item() == 12 + rank)

-- ---- find_unused_parameters ----
local Branches = nn.Module:extend("Branches")
function Branches:init()
  self.a = nn.Linear(4, 2)
  self.b = nn.Linear(4, 2) -- used on rank 0 only
  self.c = nn.Linear(4, 2) -- used on no rank
end
function Branches:forward(inp)
  local out = self.a(inp)
  if rank == 0 then out = out + self.b(inp) end
  return out
end
wick.manual_seed(5)
local br = Branches()
local dbr = nn.parallel.DistributedDataParallel(br, { find_unused_parameters = true })
for _ = 1, 3 do
  br:zero_grad()
  wick.manual_seed(50 + rank)
  dbr(wick.randn(6, 4)):sum():backward()
end
assert(br.c.weight.grad == nil, "a parameter no rank used keeps no gradient")
assert(br.b.weight.grad ~= nil, "a parameter some rank used gets the average")
assert(spread(br.b.weight.grad) == 0 and spread(br.a.weight.grad) == 0, "all ranks hold the same gradients")
-- rank 0's gradient of b, halved (rank 1 contributed zeros)
wick.manual_seed(50)
local x0 = wick.randn(6, 4)
local expect_b = wick.ones(6, 2):t():mm(x0) / world
assert((br.b.weight.grad - expect_b):abs():max():item() < 1e-5, "unused on a rank counts as a zero gradient")

-- without find_unused_parameters, an unused parameter makes the next forward fail on every rank
local dc = nn.parallel.DistributedDataParallel(Branches())
dc(wick.randn(6, 4)):sum():backward()
local ok, err = pcall(function() dc(wick.randn(6, 4)) end)
assert(not ok and tostring(err):find("Expected to have finished reduction in the prior iteration", 1, true), tostring(err))
assert(tostring(err):find("c.weight", 1, true), err)
print(("[rank %d] ok"):format(rank))
dist.destroy_process_group()
