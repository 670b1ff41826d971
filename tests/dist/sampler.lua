-- ranks: 2 3
-- wick.data.DistributedSampler in a real process group: num_replicas and rank
-- come from the group; every rank draws the same permutation although each
-- rank's own generator is seeded differently; gathered over the ranks, the
-- shares cover every sample exactly once (padding: the head of the epoch's
-- permutation once more), also through a DataLoader and after set_epoch.
local wick = require("wick")
local dist = wick.distributed
local data = wick.data

dist.init_process_group { backend = "mpi" }
local rank, world = dist.get_rank(), dist.get_world_size()
wick.manual_seed(1000 + 17 * rank) -- the global generators differ: the sampler must not depend on them

local function check(cond, fmt, ...)
  if not cond then error(("[sampler test, rank %d] " .. fmt):format(rank, ...), 2) end
end

-- every rank's indices, gathered: an array of world arrays
local function gather(indices, count)
  local mine = #indices > 0 and wick.tensor(indices, { dtype = "int64" }) or wick.zeros(0, { dtype = "int64" })
  local parts = {}
  for r = 1, world do parts[r] = wick.zeros(count, { dtype = "int64" }) end
  dist.all_gather(parts, mine)
  local out = {}
  for r = 1, world do out[r] = count > 0 and parts[r]:totable() or {} end
  return out
end

local cases = 0
for _, n in ipairs({ 12, 10, 7, 1, 2 * world }) do
  local ds = data.TensorDataset(wick.arange(1, n + 1, { dtype = "int64" }))
  for _, drop_last in ipairs({ false, true }) do
    local s = data.DistributedSampler(ds, { drop_last = drop_last, seed = 3 })
    check(s.num_replicas == world and s.rank == rank, "num_replicas %s, rank %s from the group", s.num_replicas, s.rank)
    local whole = data.DistributedSampler(ds, { num_replicas = 1, rank = 0, seed = 3 })
    for epoch = 0, 2 do
      s:set_epoch(epoch)
      whole:set_epoch(epoch)
      local perm = whole:indices()
      local shares = gather(s:indices(), s:len())
      -- the same permutation on every rank: rank 0's split, computed here, equals what each rank got
      local times, total = {}, 0
      for r = 1, world do
        local local_view = data.DistributedSampler(ds, { num_replicas = world, rank = r - 1, drop_last = drop_last,
          seed = 3 })
        local_view:set_epoch(epoch)
        local want = local_view:indices()
        check(#want == #shares[r], "n %d epoch %d: rank %d has %d indices, expected %d", n, epoch, r - 1, #shares[r],
          #want)
        for k, i in ipairs(shares[r]) do
          check(i == want[k], "n %d epoch %d: rank %d index %d is %d, expected %d", n, epoch, r - 1, k, i, want[k])
          times[i] = (times[i] or 0) + 1
          total = total + 1
        end
      end
      -- drop_last: the first total_size of the permutation once, the cut tail never; else
      -- every sample once and the padding repeats the permutation from its head (more
      -- than once round when the world is larger than the dataset)
      check(total == s.total_size, "n %d: %d indices in all, expected %d", n, total, s.total_size)
      for k = 1, n do
        local i = perm[k]
        local want
        if drop_last then want = k <= s.total_size and 1 or 0
        else want = math.floor(s.total_size / n) + (k <= s.total_size % n and 1 or 0) end
        check((times[i] or 0) == want, "n %d epoch %d drop_last %s: sample %d seen %d times, expected %d", n, epoch,
          tostring(drop_last), i, times[i] or 0, want)
      end
      cases = cases + 1
    end
  end
end

-- through a DataLoader: the labels of one epoch, summed over ranks, are every sample once
local n = 6 * world
local ds = data.TensorDataset(wick.arange(1, n + 1, { dtype = "int64" }))
local sampler = data.DistributedSampler(ds)
local loader = data.DataLoader(ds, { batch_size = 4, sampler = sampler })
for epoch = 1, 2 do
  sampler:set_epoch(epoch)
  local seen = wick.zeros(n, { dtype = "int64" })
  for x in loader:iter() do seen:index_put_({ x }, wick.ones(x:size(1), { dtype = "int64" }), true) end
  dist.all_reduce(seen)
  check(seen:eq(1):all(), "epoch %d: not every sample once over the ranks: %s", epoch, tostring(seen))
end

dist.barrier()
dist.destroy_process_group()
if rank == 0 then print(("sampler: %d cases at world size %d: exact partition"):format(cases, world)) end
