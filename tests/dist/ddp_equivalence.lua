-- ranks: 2 3
-- DistributedDataParallel against one process: N ranks, each on its share of
-- a global batch of 128 (3 ranks: 43 + 43 + 42, an uneven split) and a last
-- batch of 44 (an epoch's short last batch: 15 + 15 + 14, 2 ranks 22 + 22),
-- reach the same parameters as one process on the whole batch after 20
-- SGD-momentum steps. Each rank computes the one-process reference itself. The loss is a
-- sum over the rank's samples divided by the global count, times the world
-- size: DDP averages over ranks, so the gradient is the global batch mean's
-- whatever the split. Run with bucket_cap_mb = 25 (one bucket) and 1 (several).
local wick = require("wick")
local nn, F = wick.nn, wick.nn.functional
local dist = wick.distributed

dist.init_process_group({ backend = "mpi" })
local rank, world = dist.get_rank(), dist.get_world_size()
local N, D, STEPS = 128, 256, 20

local function make_model()
  return nn.Sequential(nn.Linear(D, 512), nn.Tanh(), nn.Linear(512, 512), nn.Tanh(), nn.Linear(512, 10))
end

-- rows first .. first + count - 1 of a global batch of n belong to this rank (1-based)
local function my_rows(n)
  local base, extra = math.floor(n / world), n % world
  local first = rank * base + math.min(rank, extra) + 1
  local count = base + (rank < extra and 1 or 0)
  return first, count
end

local function max_diff(a, b)
  local m = 0
  for i = 1, #a do m = math.max(m, (a[i]:detach() - b[i]:detach()):abs():max():item()) end
  return m
end

local function run(cap)
  -- ranks start from different weights: DDP must broadcast rank 0's
  wick.manual_seed(100 + rank)
  local model = make_model()
  local ddp = nn.parallel.DistributedDataParallel(model, { bucket_cap_mb = cap })
  local ref = make_model()
  ref:load_state_dict(ddp.module:state_dict())
  local opt = wick.optim.SGD(ddp:parameters(), { lr = 0.05, momentum = 0.9 })
  local ref_opt = wick.optim.SGD(ref:parameters(), { lr = 0.05, momentum = 0.9 })
  for step = 1, STEPS do
    local n = step < STEPS and N or 44
    local first, count = my_rows(n)
    wick.manual_seed(1000 + step) -- the same global batch on every rank
    local x = wick.randn(n, D)
    local y = wick.randint(1, 11, { n })
    opt:zero_grad()
    local out = ddp(x:narrow(1, first, count))
    local loss = F.cross_entropy(out, y:narrow(1, first, count), { reduction = "sum" }) * (world / n)
    loss:backward()
    opt:step()
    ref_opt:zero_grad()
    F.cross_entropy(ref(x), y):backward()
    ref_opt:step()
  end
  local diff = max_diff(model:parameters(), ref:parameters())
  local stats = ddp:comm_stats()
  print(("[rank %d] world %d, bucket_cap_mb %g: %d buckets (%s bytes), max |ddp - one process| = %.3g")
    :format(rank, world, cap, #stats.bucket_sizes, table.concat(stats.bucket_sizes, " "), diff))
  assert(diff < 1e-5, ("rank %d: parameters differ from the one-process run by %g"):format(rank, diff))
  assert(stats.buckets == STEPS * #stats.bucket_sizes or stats.buckets >= STEPS,
    "every step all-reduces its buckets")
  -- every rank holds the same parameters
  for _, p in ipairs(model:parameters()) do
    local mine = p:detach():clone()
    local lo, hi = mine:clone(), mine:clone()
    dist.all_reduce(lo, { op = "min" })
    dist.all_reduce(hi, { op = "max" })
    assert((hi - lo):abs():max():item() == 0, "ranks hold different parameters")
  end
  return stats
end

local one = run(25)
assert(#one.bucket_sizes == 1, "bucket_cap_mb = 25 makes one bucket of this 1.4 MB model")
local several = run(1)
assert(#several.bucket_sizes >= 3, "bucket_cap_mb = 1 makes several buckets, got " .. #several.bucket_sizes)
dist.destroy_process_group()
