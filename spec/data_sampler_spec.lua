-- wick.data's samplers (Sequential, Random, Batch) and DataLoader's sampler
-- and batch_sampler options; DistributedSampler: the indices
-- against a line-by-line port of PyTorch's torch/utils/data/distributed.py
-- (0-based lists, as there), exact partition across ranks, padding and
-- drop_last, set_epoch, the generic sampler protocol and the errors.
-- What needs a real process group is in tests/dist/sampler.lua (under mpirun).
local wick = require("wick")
local data = wick.data
local support = require("spec.support")
local assert_error_has = support.assert_error_has

-- A dataset of n samples whose sample i is the number i.
local function numbers(n)
  return data.TensorDataset(wick.arange(1, n + 1, { dtype = "int64" }))
end

-- PyTorch's DistributedSampler.__init__ and __iter__, as Python does them on
-- 0-based lists; `perm` is the list its randperm would give (0-based), or nil
-- for shuffle = false. Returns num_samples and the rank's indices, plus 1.
local function pytorch_reference(n, replicas, rank, drop_last, perm)
  local num_samples
  if drop_last and n % replicas ~= 0 then
    num_samples = math.ceil((n - replicas) / replicas)
  else
    num_samples = math.ceil(n / replicas)
  end
  if num_samples == 0 then num_samples = 0 end -- -0 from math.ceil
  local total_size = num_samples * replicas
  local indices = {}
  for i = 0, n - 1 do indices[#indices + 1] = perm and perm[i + 1] or i end
  if not drop_last then
    local padding_size = total_size - #indices
    if padding_size <= #indices then
      for i = 1, padding_size do indices[#indices + 1] = indices[i] end   -- indices += indices[:padding_size]
    else
      local rep, times = {}, math.ceil(padding_size / #indices)         -- (indices * ceil(...))[:padding_size]
      for _ = 1, times do for i = 1, #indices do rep[#rep + 1] = indices[i] end end
      for i = 1, padding_size do indices[#indices + 1] = rep[i] end
    end
  else
    for i = #indices, total_size + 1, -1 do indices[i] = nil end      -- indices[:total_size]
  end
  assert(#indices == total_size)
  local out = {}
  for i = rank, total_size - 1, replicas do out[#out + 1] = indices[i + 1] + 1 end -- indices[rank:total_size:replicas]
  assert(#out == num_samples)
  return num_samples, out
end

local function collect(it)
  local out = {}
  for i in it do out[#out + 1] = i end
  return out
end

describe("DistributedSampler", function()
  it("gives each rank PyTorch's indices, without shuffling, for every size, world and drop_last", function()
    local cases = 0
    for n = 0, 13 do
      local ds = numbers(n)
      for replicas = 1, 5 do
        for rank = 0, replicas - 1 do
          for _, drop_last in ipairs({ false, true }) do
            local s = data.DistributedSampler(ds, { num_replicas = replicas, rank = rank, shuffle = false,
              drop_last = drop_last })
            local num_samples, want = pytorch_reference(n, replicas, rank, drop_last, nil)
            assert.are.equal(num_samples, s:len())
            assert.are.same(want, s:indices())
            assert.are.same(want, collect(s:iter()))
            cases = cases + 1
          end
        end
      end
    end
    assert.are.equal(14 * 15 * 2, cases)
  end)

  it("matches PyTorch's own output on a padded and a cut case", function()
    -- torch.utils.data.DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False), plus 1
    local padded = { { 1, 4, 7, 10 }, { 2, 5, 8, 1 }, { 3, 6, 9, 2 } }
    local cut = { { 1, 4, 7 }, { 2, 5, 8 }, { 3, 6, 9 } } -- drop_last=True
    for rank = 0, 2 do
      assert.are.same(padded[rank + 1], data.DistributedSampler(numbers(10),
        { num_replicas = 3, rank = rank, shuffle = false }):indices())
      assert.are.same(cut[rank + 1], data.DistributedSampler(numbers(10),
        { num_replicas = 3, rank = rank, shuffle = false, drop_last = true }):indices())
    end
    -- padding longer than the dataset: range(2) over 5 ranks repeats the list (0, 1, 0, 1, 0)
    local got = {}
    for rank = 0, 4 do
      got[rank + 1] = data.DistributedSampler(numbers(2), { num_replicas = 5, rank = rank, shuffle = false }):indices()[1]
    end
    assert.are.same({ 1, 2, 1, 2, 1 }, got)
  end)

  it("shuffles with one permutation for all ranks, split the way PyTorch splits it", function()
    for _, n in ipairs({ 1, 7, 12, 50 }) do
      local ds = numbers(n)
      -- one replica takes the whole permutation as it is
      local whole = data.DistributedSampler(ds, { num_replicas = 1, rank = 0, seed = 5 })
      whole:set_epoch(3)
      local perm = whole:indices()
      assert.are.equal(n, #perm)
      local zero_based = {}
      for i, v in ipairs(perm) do zero_based[i] = v - 1 end
      for replicas = 2, 4 do
        for _, drop_last in ipairs({ false, true }) do
          for rank = 0, replicas - 1 do
            local s = data.DistributedSampler(ds, { num_replicas = replicas, rank = rank, seed = 5, drop_last = drop_last })
            s:set_epoch(3)
            local _, want = pytorch_reference(n, replicas, rank, drop_last, zero_based)
            assert.are.same(want, s:indices())
          end
        end
      end
    end
  end)

  it("sees every sample exactly once per epoch across ranks when the count divides or with drop_last", function()
    for _, case in ipairs({ { 60, 3, false }, { 60, 4, false }, { 61, 4, true }, { 7, 2, true }, { 1, 3, true } }) do
      local n, replicas, drop_last = case[1], case[2], case[3]
      for epoch = 0, 2 do
        local seen, count = {}, 0
        for rank = 0, replicas - 1 do
          local s = data.DistributedSampler(numbers(n), { num_replicas = replicas, rank = rank, drop_last = drop_last })
          s:set_epoch(epoch)
          local idx = s:indices()
          assert.are.equal(s:len(), #idx)
          for _, i in ipairs(idx) do
            assert.is_true(i >= 1 and i <= n)
            assert.is_nil(seen[i], "index " .. i .. " seen twice")
            seen[i] = true
            count = count + 1
          end
        end
        -- drop_last cuts the tail of the permutation to a multiple of the world size
        assert.are.equal(drop_last and math.floor(n / replicas) * replicas or n, count)
        assert.are.equal(n % replicas == 0 and n or count, count)
      end
    end
  end)

  it("pads an uneven count with the head of the epoch's permutation: every sample at least once", function()
    local n, replicas = 10, 4 -- total 12: two repeated
    local whole = data.DistributedSampler(numbers(n), { num_replicas = 1, rank = 0 })
    whole:set_epoch(7)
    local perm = whole:indices()
    local times, count = {}, 0
    for rank = 0, replicas - 1 do
      local s = data.DistributedSampler(numbers(n), { num_replicas = replicas, rank = rank })
      s:set_epoch(7)
      assert.are.equal(3, s:len())
      for _, i in ipairs(s:indices()) do
        times[i] = (times[i] or 0) + 1
        count = count + 1
      end
    end
    assert.are.equal(12, count)
    for i = 1, n do
      local want = (i == perm[1] or i == perm[2]) and 2 or 1
      assert.are.equal(want, times[i], "sample " .. i)
    end
  end)

  it("set_epoch changes the order; the same epoch and seed give the same order", function()
    local ds = numbers(100)
    local a = data.DistributedSampler(ds, { num_replicas = 2, rank = 1 })
    local b = data.DistributedSampler(ds, { num_replicas = 2, rank = 1 })
    assert.are.same(a:indices(), b:indices())
    local e0 = a:indices()
    a:set_epoch(1)
    assert.are_not.same(e0, a:indices())
    b:set_epoch(1)
    assert.are.same(a:indices(), b:indices())
    -- seed + epoch, as in PyTorch: seed 1 at epoch 0 is seed 0 at epoch 1
    local c = data.DistributedSampler(ds, { num_replicas = 2, rank = 1, seed = 1 })
    assert.are.same(a:indices(), c:indices())
    local d = data.DistributedSampler(ds, { num_replicas = 2, rank = 1, seed = 2 })
    assert.are_not.same(a:indices(), d:indices())
    -- without shuffle the epoch changes nothing
    local s = data.DistributedSampler(ds, { num_replicas = 2, rank = 0, shuffle = false })
    local before = s:indices()
    s:set_epoch(9)
    assert.are.same(before, s:indices())
  end)

  it("neither reads nor moves wick's generator", function()
    local ds = numbers(30)
    local s = data.DistributedSampler(ds, { num_replicas = 3, rank = 2 })
    wick.manual_seed(123)
    local first = s:indices()
    local state = wick.get_rng_state()
    wick.manual_seed(999)
    wick.rand(5)
    assert.are.same(first, s:indices())
    wick.set_rng_state(state)
    s:indices()
    assert.is_true(wick.get_rng_state():equal(state))
    local u = wick.rand(3)
    wick.set_rng_state(state)
    assert.is_true(wick.rand(3):equal(u))
  end)

  it("raises on bad ranks, world sizes, options, datasets and epochs", function()
    local ds = numbers(10)
    assert_error_has(function() data.DistributedSampler(ds, { num_replicas = 2, rank = 2 }) end,
      "DistributedSampler", "invalid rank 2", "[0, 1]")
    assert_error_has(function() data.DistributedSampler(ds, { num_replicas = 2, rank = -1 }) end, "invalid rank -1")
    assert_error_has(function() data.DistributedSampler(ds, { num_replicas = 0, rank = 0 }) end,
      "num_replicas must be a positive integer")
    assert_error_has(function() data.DistributedSampler(ds, { num_replicas = 1.5, rank = 0 }) end,
      "expected an integer for option 'num_replicas'")
    assert_error_has(function() data.DistributedSampler(ds, { num_replicas = 2, rank = 0, shuffle = 1 }) end,
      "expected a boolean for option 'shuffle'")
    assert_error_has(function() data.DistributedSampler(ds, { num_replica = 2, rank = 0 }) end, "unknown option 'num_replica'")
    assert_error_has(function() data.DistributedSampler(42, { num_replicas = 2, rank = 0 }) end, "len()")
    assert_error_has(function() data.DistributedSampler(nil) end, "DistributedSampler")
    local s = data.DistributedSampler(ds, { num_replicas = 2, rank = 0 })
    assert_error_has(function() s:set_epoch(0.5) end, "set_epoch", "integer")
    assert_error_has(function() s:set_epoch("1") end, "set_epoch", "integer")
    assert_error_has(function() s.len({}) end, "expected a DistributedSampler")
    -- a dataset that changed its length since
    local grows = { n = 4 }
    function grows:len() return self.n end
    local g = data.DistributedSampler(grows, { num_replicas = 2, rank = 0 })
    grows.n = 6
    assert_error_has(function() g:indices() end, "length changed from 4 to 6")
  end)

  it("without a process group, asks for num_replicas and rank", function()
    if wick.distributed and wick.distributed.is_initialized() then return end
    assert_error_has(function() data.DistributedSampler(numbers(4)) end,
      "no process group is initialized", "num_replicas and rank", "init_process_group")
    assert_error_has(function() data.DistributedSampler(numbers(4), { num_replicas = 2 }) end, "num_replicas and rank")
  end)
end)

describe("DataLoader with a sampler", function()
  local ds = numbers(10)

  local function firsts(loader)
    local out = {}
    for x in loader:iter() do out[#out + 1] = x:totable() end
    return out
  end

  it("batches the sampler's indices in its order; len() counts from the sampler", function()
    local s = data.DistributedSampler(ds, { num_replicas = 3, rank = 1, shuffle = false })
    local loader = data.DataLoader(ds, { sampler = s, batch_size = 3 })
    assert.are.equal(2, loader:len())
    assert.are.same({ { 2, 5, 8 }, { 1 } }, firsts(loader))
    local dropping = data.DataLoader(ds, { sampler = s, batch_size = 3, drop_last = true })
    assert.are.equal(1, dropping:len())
    assert.are.same({ { 2, 5, 8 } }, firsts(dropping))
  end)

  it("asks the sampler for its order at each pass, so set_epoch between passes reshuffles", function()
    local s = data.DistributedSampler(numbers(40), { num_replicas = 2, rank = 0 })
    local loader = data.DataLoader(numbers(40), { sampler = s, batch_size = 40 })
    local e0 = firsts(loader)[1]
    assert.are.same(s:indices(), e0)
    assert.are.same(e0, firsts(loader)[1])
    s:set_epoch(1)
    local e1 = firsts(loader)[1]
    assert.are_not.same(e0, e1)
    assert.are.same(s:indices(), e1)
  end)

  it("takes any object with len() and iter(), and a dataset of get(i) only", function()
    local Reverse = {}
    Reverse.__index = Reverse
    function Reverse:len() return 4 end
    function Reverse:iter()
      local i = 11
      return function() i = i - 1; if i >= 7 then return i end end
    end
    local plain = { get = function(_, i) return i * 10 end, len = function() return 10 end }
    local loader = data.DataLoader(plain, { sampler = setmetatable({}, Reverse), batch_size = 3 })
    assert.are.equal(2, loader:len())
    local got = {}
    for x in loader:iter() do got[#got + 1] = x:totable() end
    assert.are.same({ { 100, 90, 80 }, { 70 } }, got)
  end)

  it("accepts the one-table form DataLoader{dataset = ds, ...}", function()
    local s = data.DistributedSampler(ds, { num_replicas = 2, rank = 0, shuffle = false })
    local loader = data.DataLoader { dataset = ds, sampler = s, batch_size = 5 }
    assert.are.equal(1, loader:len())
    assert.are.same({ { 1, 3, 5, 7, 9 } }, firsts(loader))
    assert.are.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10 } }, firsts(data.DataLoader { dataset = ds, batch_size = 4 }))
    assert_error_has(function() data.DataLoader { dataset = ds, batch_sise = 4 } end, "unknown option 'batch_sise'")
  end)

  it("raises on a sampler with shuffle, a value that is no sampler, and indices outside the dataset", function()
    local s = data.DistributedSampler(ds, { num_replicas = 2, rank = 0 })
    assert_error_has(function() data.DataLoader(ds, { sampler = s, shuffle = true }) end,
      "sampler option is mutually exclusive with shuffle")
    assert_error_has(function() data.DataLoader(ds, { sampler = 3 }) end, "expected a sampler", "len() and iter()")
    assert_error_has(function() data.DataLoader(ds, { sampler = { len = function() return 1 end } }) end, "expected a sampler")
    assert_error_has(function() data.DataLoader(ds, { sampler = wick.ones(2) }) end, "expected a sampler", "Tensor")
    local function yields(...)
      local values, n = { ... }, select("#", ...)
      return { len = function() return n end,
        iter = function() local k = 0; return function() k = k + 1; return values[k] end end }
    end
    -- PyTorch's 0-based index 0 is outside wick's 1-based datasets
    local zero = data.DataLoader(ds, { sampler = yields(0, 1) })
    assert_error_has(function() for _ in zero:iter() do end end, "sampler gave the index 0", "1..10", "1-based")
    local far = data.DataLoader(ds, { sampler = yields(11) })
    assert_error_has(function() for _ in far:iter() do end end, "index 11")
    local half = data.DataLoader(ds, { sampler = yields(1.5) })
    assert_error_has(function() for _ in half:iter() do end end, "index 1.5")
    local bad_len = data.DataLoader(ds, { sampler = { len = function() return -1 end, iter = function() end } })
    assert_error_has(function() bad_len:len() end, "sampler's len() gave -1")
    assert_error_has(function() for _ in bad_len:iter() do end end, "sampler's iter() gave nil")
  end)
end)

-- ======================================================================
describe("SequentialSampler, RandomSampler, BatchSampler", function()
  local ds = numbers(10)

  local sorted = support.sorted

  it("SequentialSampler gives 1..n, n read at each pass", function()
    local grows = { n = 3, len = function(self) return self.n end }
    local s = data.SequentialSampler(grows)
    assert.are.equal(3, s:len())
    assert.are.same({ 1, 2, 3 }, collect(s:iter()))
    grows.n = 5
    assert.are.same({ 1, 2, 3, 4, 5 }, collect(s:iter()))
    assert_error_has(function() data.SequentialSampler(3) end, "SequentialSampler", "len()")
  end)

  it("RandomSampler: a permutation of 1..n each pass from wick's generator, repeatable under wick.manual_seed", function()
    local s = data.RandomSampler(ds)
    assert.are.equal(10, s:len())
    wick.manual_seed(3)
    local a, b = collect(s:iter()), collect(s:iter())
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, sorted(a))
    assert.are_not.same(a, b)
    wick.manual_seed(3)
    assert.are.same(a, collect(s:iter()))
    -- the order DataLoader's shuffle draws
    wick.manual_seed(3)
    assert.are.same({ a }, (function()
      local out = {}
      for x in data.DataLoader(ds, { batch_size = 10, shuffle = true }):iter() do out[#out + 1] = x:totable() end
      return out
    end)())
  end)

  it("RandomSampler with {seed = s}: a generator of its own, moving on each pass; wick's untouched", function()
    wick.manual_seed(1)
    local u = wick.rand(2)
    wick.manual_seed(1)
    local s = data.RandomSampler(ds, { seed = 5 })
    local a, b = collect(s:iter()), collect(s:iter())
    assert.is_true(wick.rand(2):equal(u))
    assert.are_not.same(a, b)
    wick.manual_seed(99)
    local again = data.RandomSampler(ds, { seed = 5 })
    assert.are.same(a, collect(again:iter()))
    assert.are.same(b, collect(again:iter()))
  end)

  it("RandomSampler's num_samples and replacement (positional or as options)", function()
    wick.manual_seed(4)
    local long = data.RandomSampler(ds, false, 25)
    assert.are.equal(25, long:len())
    local got = collect(long:iter())
    assert.are.equal(25, #got)
    -- whole permutations, then the head of one more
    local first, second = {}, {}
    for i = 1, 10 do first[i], second[i] = got[i], got[10 + i] end
    assert.are.same(sorted(first), sorted(second))
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, sorted(first))
    local drawn = collect(data.RandomSampler(ds, { replacement = true, num_samples = 200 }):iter())
    assert.are.equal(200, #drawn)
    local seen, repeated = {}, false
    for _, i in ipairs(drawn) do
      assert.is_true(i >= 1 and i <= 10 and i == math.floor(i))
      repeated = repeated or seen[i] ~= nil
      seen[i] = true
    end
    assert.is_true(repeated)
    assert.are.equal(3, #collect(data.RandomSampler(ds, true, 3):iter()))
  end)

  it("RandomSampler raises on bad options and an empty data source, as PyTorch", function()
    assert_error_has(function() data.RandomSampler(ds, { num_samples = 0 }) end,
      "num_samples should be a positive integer value, but got num_samples=0")
    assert_error_has(function() data.RandomSampler(numbers(0)) end, "num_samples=0")
    assert_error_has(function() data.RandomSampler(ds, 1) end, "RandomSampler", "replacement")
    assert_error_has(function() data.RandomSampler(ds, { generator = 1 }) end, "expected a wick.Generator for argument 'generator'")
    assert_error_has(function() data.RandomSampler(nil) end, "RandomSampler", "data_source")
    assert_error_has(function() data.DataLoader(numbers(0), { shuffle = true }) end, "num_samples=0")
  end)

  it("BatchSampler gives PyTorch's batches and len()", function()
    -- list(BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=...)), plus 1
    local function batches(s)
      local out = {}
      for b in s:iter() do out[#out + 1] = b end
      return out
    end
    local keep = data.BatchSampler(data.SequentialSampler(ds), 3, false)
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 }, { 10 } }, batches(keep))
    assert.are.equal(4, keep:len())
    local drop = data.BatchSampler(data.SequentialSampler(ds), { batch_size = 3, drop_last = true })
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 }, { 7, 8, 9 } }, batches(drop))
    assert.are.equal(3, drop:len())
    assert.are.equal(1, data.BatchSampler(data.SequentialSampler(ds), 10):len())
    assert_error_has(function() data.BatchSampler(data.SequentialSampler(ds), 0, false) end, "BatchSampler",
      "batch_size", "positive integer")
    assert_error_has(function() data.BatchSampler(data.SequentialSampler(ds)) end, "batch_size")
    assert_error_has(function() data.BatchSampler(data.SequentialSampler(ds), 2, 1) end, "drop_last")
    -- any array of indices, as PyTorch's BatchSampler(range(3), 2, False) or over a list
    assert.are.same({ { 1, 2 }, { 3 } }, batches(data.BatchSampler({ 1, 2, 3 }, 2, false)))
    assert_error_has(function() data.BatchSampler({ a = 1 }, 2, false) end, "expected a sampler")
  end)
end)

describe("DataLoader with a batch_sampler, or the new samplers", function()
  local ds = numbers(10)

  local function firsts(loader)
    local out = {}
    for x in loader do out[#out + 1] = x:totable() end
    return out
  end

  it("takes a BatchSampler or any object whose iter() gives arrays of indices; len() is its len()", function()
    local loader = data.DataLoader(ds, { batch_sampler = data.BatchSampler(data.SequentialSampler(ds), 4, true) })
    assert.are.equal(2, loader:len())
    assert.is_nil(loader.batch_size)
    assert.are.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 } }, firsts(loader))
    local pairs_of = {
      len = function() return 2 end,
      iter = function()
        local k = 0
        return function() k = k + 1; return ({ { 10, 1 }, { 5 } })[k] end
      end,
    }
    assert.are.same({ { 10, 1 }, { 5 } }, firsts(data.DataLoader { dataset = ds, batch_sampler = pairs_of }))
    assert.are.equal(2, data.DataLoader(ds, { batch_sampler = pairs_of, batch_size = 1 }):len())
  end)

  it("takes a RandomSampler or a SequentialSampler as sampler", function()
    wick.manual_seed(8)
    local s = data.RandomSampler(ds, { replacement = true, num_samples = 6 })
    local loader = data.DataLoader(ds, { sampler = s, batch_size = 4 })
    assert.are.equal(2, loader:len())
    local got = firsts(loader)
    assert.are.equal(4, #got[1])
    assert.are.equal(2, #got[2])
    assert.are.same({ { 1, 2, 3, 4, 5 }, { 6, 7, 8, 9, 10 } },
      firsts(data.DataLoader(ds, { sampler = data.SequentialSampler(ds), batch_size = 5 })))
  end)

  it("raises on batch_sampler with batch_size, shuffle, sampler or drop_last, and on bad batches", function()
    local bs = data.BatchSampler(data.SequentialSampler(ds), 2, false)
    for _, extra in ipairs({ { batch_size = 2 }, { shuffle = true }, { sampler = data.SequentialSampler(ds) },
      { drop_last = true } }) do
      extra.batch_sampler = bs
      assert_error_has(function() data.DataLoader(ds, extra) end,
        "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
    end
    assert_error_has(function() data.DataLoader(ds, { batch_sampler = 3 }) end, "expected a sampler",
      "option 'batch_sampler'")
    local function yields(...)
      local values = { ... }
      return { len = function() return #values end,
        iter = function() local k = 0; return function() k = k + 1; return values[k] end end }
    end
    assert_error_has(function() for _ in data.DataLoader(ds, { batch_sampler = yields({ 0 }) }) do end end,
      "the batch_sampler gave the index 0", "1-based")
    assert_error_has(function() for _ in data.DataLoader(ds, { batch_sampler = yields(3) }) do end end,
      "the batch_sampler gave 3", "array of indices")
    assert_error_has(function() for _ in data.DataLoader(ds, { batch_sampler = yields({}) }) do end end,
      "non-empty array")
  end)
end)

describe("what the second round of ported programs needed from data", function()
  it("draws with replacement as the pass goes: an 'infinite' RandomSampler (makemore's) starts at once", function()
    local ds = wick.data.TensorDataset(wick.randn(10, 2))
    local it = wick.data.RandomSampler(ds, { replacement = true, num_samples = 1e10 }):iter()
    local seen = {}
    for _ = 1, 100 do
      local i = it()
      assert.is_true(i >= 1 and i <= 10 and i == math.floor(i))
      seen[i] = true
    end
    local kinds = 0
    for _ in pairs(seen) do kinds = kinds + 1 end
    assert.is_true(kinds > 5)
    local few = wick.data.RandomSampler(ds, { replacement = true, num_samples = 40 }):iter()
    local n = 0
    while few() do n = n + 1 end
    assert.are.equal(40, n)
  end)

  it("collates whole-number labels to int64, as PyTorch collates Python ints", function()
    local D = wick.data.Dataset:extend("Labels")
    function D:len() return 4 end
    function D:get(i) return wick.ones(2), i % 3, i / 2 end
    for x, y, z in wick.data.DataLoader(D(), { batch_size = 4 }) do
      assert.are.equal("int64", y.dtype)
      assert.are.same({ 1, 2, 0, 1 }, y:totable())
      assert.are.equal("float64", z.dtype) -- Python floats: default_collate's torch.tensor(batch, dtype=torch.float64)
      assert.are.same({ 4, 2 }, x:size())
    end
  end)
end)

describe("SubsetRandomSampler and WeightedRandomSampler", function()
  local function drain(s)
    local out = {}
    for i in s:iter() do out[#out + 1] = i end
    return out
  end

  it("SubsetRandomSampler: each pass a permutation of the given indices (a list or a tensor)", function()
    local s = data.SubsetRandomSampler({ 5, 6, 7, 8 }, { seed = 1 })
    assert.are.equal(4, s:len())
    for _ = 1, 3 do
      local got = drain(s)
      table.sort(got)
      assert.are.same({ 5, 6, 7, 8 }, got)
    end
    local loader = data.DataLoader(numbers(10), { batch_size = 3,
      sampler = data.SubsetRandomSampler(wick.tensor({ 2, 4, 9 }, { dtype = "int64" })) })
    local seen = {}
    for batch in loader:iter() do for _, v in ipairs(batch:tolist()) do seen[#seen + 1] = v end end
    table.sort(seen)
    assert.are.same({ 2, 4, 9 }, seen)
    assert.are.same({}, drain(data.SubsetRandomSampler({})))
  end)

  it("WeightedRandomSampler: draws in proportion to the weights; never a zero weight", function()
    local w = data.WeightedRandomSampler({ 0.1, 0, 0.9 }, 2000, { seed = 3 })
    assert.are.equal(2000, w:len())
    local counts = { 0, 0, 0 }
    for _, i in ipairs(drain(w)) do counts[i] = counts[i] + 1 end
    assert.are.equal(0, counts[2])
    assert.is_true(counts[3] > 6 * counts[1]) -- about 9x
    local once = drain(data.WeightedRandomSampler(wick.tensor({ 1, 1, 1, 1 }), 4, false))
    table.sort(once)
    assert.are.same({ 1, 2, 3, 4 }, once) -- without replacement: each index once
    assert_error_has(function() data.WeightedRandomSampler({ 1, 2 }, 3, false) end, "without replacement")
    assert_error_has(function() data.WeightedRandomSampler({ 1, -2 }, 3) end, "non-negative")
    assert_error_has(function() data.WeightedRandomSampler({}, 3) end, "must not be empty")
  end)

  it("DataLoader takes PyTorch's positional batch_size[, shuffle] (d2l's load_array)", function()
    assert.are.equal(2, data.DataLoader(numbers(10), 5, { shuffle = false }):len())
    local seen = {}
    for b in data.DataLoader(numbers(10), 3, true):iter() do for _, v in ipairs(b:tolist()) do seen[#seen + 1] = v end end
    table.sort(seen)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, seen)
    assert_error_has(function() data.DataLoader(numbers(10), 3, "yes") end, "expected a boolean for option 'shuffle'")
  end)
end)
