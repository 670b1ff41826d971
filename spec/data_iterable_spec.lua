-- wick.data against what PyTorch's torch.utils.data gives (torch 2.x; the
-- expected values were printed by the venv's PyTorch, 0-based indices plus 1):
-- IterableDataset, ChainDataset, get_worker_info and the DataLoader over an
-- iterable dataset; the Sampler base class; StackDataset; batch_size = false
-- (PyTorch's None); list samples; default_collate's dtypes and its ragged-list
-- error; the DataLoader's worker options and attributes; the samplers'
-- positional arguments; arrays of indices as samplers.
local wick = require("wick")
local data = wick.data
local support = require("spec.support")
local assert_close, assert_error_has, shape_of = support.assert_close, support.assert_error_has, support.shape_of
local I = support.I
local unpack = table.unpack or unpack -- luacheck: ignore (LuaJIT's global)

-- Every batch of a loader (or of any iterator function) as an array of its values.
local function collect(iterable)
  local out = {}
  local it = type(iterable) == "function" and iterable or iterable:iter()
  while true do
    local values = { it() }
    if values[1] == nil then return out end
    out[#out + 1] = values
  end
end

-- tensors (and nested tables of them) as Lua values
local function plain(v)
  if wick.is_tensor(v) then return v:totable() end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = plain(x) end
  return out
end

-- class Range(IterableDataset): __iter__ yields lo..hi-1 (PyTorch's iter(range(lo, hi)))
local Range = data.IterableDataset:extend("Range")
function Range:init(lo, hi) self.lo, self.hi = lo, hi end
function Range:iter()
  local i = self.lo - 1
  return function()
    i = i + 1
    if i < self.hi then return i end
  end
end

-- ======================================================================
describe("IterableDataset and the DataLoader over one", function()
  it("batches the samples as they come, the last batch short or dropped (PyTorch's fetcher)", function()
    -- DataLoader(It(), batch_size=3) over range(3, 7): [tensor([3, 4, 5]), tensor([6])]
    local batches = collect(data.DataLoader(Range(3, 7), { batch_size = 3 }))
    assert.are.same({ { 3, 4, 5 }, { 6 } }, { batches[1][1]:totable(), batches[2][1]:totable() })
    assert.are.equal(2, #batches)
    assert.are.equal("int64", batches[1][1].dtype)
    -- drop_last=True: [tensor([3, 4, 5])]
    local kept = collect(data.DataLoader(Range(3, 7), { batch_size = 3, drop_last = true }))
    assert.are.equal(1, #kept)
    assert.are.same({ 3, 4, 5 }, kept[1][1]:totable())
    -- the default batch_size is 1, as PyTorch's
    assert.are.equal(4, #collect(data.DataLoader(Range(3, 7))))
    -- each loop is a new pass: iter() is called again
    local loader = data.DataLoader(Range(0, 5), { batch_size = 2 })
    for _ = 1, 2 do
      local seen = {}
      for b in loader do for _, v in ipairs(b:totable()) do seen[#seen + 1] = v end end
      assert.are.same({ 0, 1, 2, 3, 4 }, seen)
    end
  end)

  it("takes a coroutine generator of samples of several values (Python's yield x, y)", function()
    local Gen = data.IterableDataset:extend("Gen")
    function Gen:iter()
      return coroutine.wrap(function()
        for i = 1, 5 do coroutine.yield(wick.full({ 2 }, i), i) end
      end)
    end
    -- for x, y in DataLoader(G(), batch_size=2): x [[1,1],[2,2]] float32, y [1, 2] int64; ...; [[5,5]], [5]
    local batches = collect(data.DataLoader(Gen(), { batch_size = 2 }))
    assert.are.equal(3, #batches)
    assert_close(batches[1][1], { { 1, 1 }, { 2, 2 } })
    assert.are.same({ 1, 2 }, batches[1][2]:totable())
    assert.are.equal("int64", batches[1][2].dtype)
    assert.are.equal("float32", batches[1][1].dtype)
    assert.are.same({ 1, 2 }, shape_of(batches[3][1]))
    assert.are.same({ 5 }, batches[3][2]:totable())
    -- a collate_fn gets the list of samples, each the array of its values
    local sizes = {}
    for n, second in data.DataLoader(Gen(), { batch_size = 2, collate_fn = function(batch)
      return #batch, batch[1][2]
    end }) do sizes[#sizes + 1] = { n, second } end
    assert.are.same({ { 2, 1 }, { 2, 3 }, { 1, 5 } }, sizes)
  end)

  it("batch_size = false (PyTorch's None): the samples one by one, unconverted", function()
    -- list(DataLoader(It(), batch_size=None)) over range(3, 7): [3, 4, 5, 6] (Python ints, not tensors)
    local got = {}
    for v in data.DataLoader(Range(3, 7), { batch_size = false }) do got[#got + 1] = v end
    assert.are.same({ 3, 4, 5, 6 }, got)
  end)

  it("len() of the loader is an error unless the dataset has len(), as PyTorch's TypeError", function()
    assert_error_has(function() data.DataLoader(Range(0, 5), { batch_size = 2 }):len() end,
      "object of type 'Range' has no len()")
    local Sized = Range:extend("Sized")
    function Sized:len() return self.hi - self.lo end
    -- len(DataLoader(LenIt(), batch_size=2)) 3, with drop_last 2, batch_size=None 5
    assert.are.equal(3, data.DataLoader(Sized(0, 5), { batch_size = 2 }):len())
    assert.are.equal(2, data.DataLoader(Sized(0, 5), { batch_size = 2, drop_last = true }):len())
    assert.are.equal(5, data.DataLoader(Sized(0, 5), { batch_size = false }):len())
    assert.are.equal(10, data.ChainDataset({ Sized(0, 5), Sized(0, 5) }):len())
    assert_error_has(function() data.ChainDataset({ Sized(0, 5), Range(0, 1) }):len() end,
      "object of type 'Range' has no len()")
  end)

  it("refuses shuffle, sampler and batch_sampler with PyTorch's ValueError texts", function()
    assert_error_has(function() data.DataLoader(Range(0, 3), { shuffle = true }) end,
      "DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=true")
    assert_error_has(function() data.DataLoader(Range(0, 3), { sampler = { 1, 2 } }) end,
      "DataLoader with IterableDataset: expected unspecified sampler option, but got sampler=")
    assert_error_has(function() data.DataLoader(Range(0, 3), { batch_sampler = { { 1 } } }) end,
      "DataLoader with IterableDataset: expected unspecified batch_sampler option, but got batch_sampler=")
    assert.are.equal(3, #collect(data.DataLoader(Range(0, 3), { shuffle = false }))) -- unspecified or false is fine
    local loader = data.DataLoader(Range(0, 3))
    assert.is_nil(loader.sampler)
    assert.is_nil(loader.batch_sampler)
    assert.are.equal(1, loader.batch_size)
  end)

  it("a plain table with iter() is an iterable dataset; a missing iter() is an error naming __iter__", function()
    local it = { iter = function() local i = 2; return function() i = i + 1; if i < 7 then return i end end end }
    local batches = collect(data.DataLoader(it, { batch_size = 2 }))
    assert.are.same({ { 3, 4 }, { 5, 6 } }, { batches[1][1]:totable(), batches[2][1]:totable() })
    local Empty = data.IterableDataset:extend("Empty")
    assert_error_has(function() Empty():iter() end, "Empty:iter", "not defined", "__iter__")
    assert_error_has(function() data.DataLoader({ iter = function() return 3 end }):iter()() end,
      "the dataset's iter() gave 3, expected an iterator function")
  end)

  it("is not indexed; ds1 + ds2 and ChainDataset chain them; get_worker_info() is nil", function()
    local ds = Range(0, 3)
    assert_error_has(function() return ds[1] end, "Range", "not indexed")
    -- list(ChainDataset([It(), It()])) over range(3, 7): [3, 4, 5, 6, 3, 4, 5, 6]
    local chained = {}
    for v in data.ChainDataset({ Range(3, 7), Range(3, 7) }):iter() do chained[#chained + 1] = v end
    assert.are.same({ 3, 4, 5, 6, 3, 4, 5, 6 }, chained)
    -- list(DataLoader(It() + It(), batch_size=5)): [tensor([3, 4, 5, 6, 3]), tensor([4, 5, 6])]
    local batches = collect(data.DataLoader(Range(3, 7) + Range(3, 7), { batch_size = 5 }))
    assert.are.same({ { 3, 4, 5, 6, 3 }, { 4, 5, 6 } }, { batches[1][1]:totable(), batches[2][1]:totable() })
    assert.are.same({}, collect(data.ChainDataset({}):iter()))
    assert_error_has(function() data.ChainDataset({ Range(0, 1), data.TensorDataset(wick.ones(2)) }) end,
      "ChainDataset only supports IterableDataset", "datasets[2]")
    assert.is_nil(data.get_worker_info())
    assert.is_true(wick.isinstance(ds, data.IterableDataset))
    assert.is_true(wick.isinstance(ds, data.Dataset)) -- as PyTorch's IterableDataset(Dataset)
    assert.is_false(wick.isinstance(data.TensorDataset(wick.ones(2)), data.IterableDataset))
  end)
end)

-- ======================================================================
describe("Sampler", function()
  it("Sampler:extend makes a sampler class the DataLoader takes", function()
    local Reverse = data.Sampler:extend("Reverse")
    function Reverse:init(n) self.n = n end
    function Reverse:len() return self.n end
    function Reverse:iter()
      local i = self.n + 1
      return function() i = i - 1; if i >= 1 then return i end end
    end
    -- DataLoader(TensorDataset(arange(10, 15)), batch_size=2, sampler=S(5)): [14, 13], [12, 11], [10]
    local loader = data.DataLoader(data.TensorDataset(wick.arange(10, 15, { dtype = "int64" })),
      { batch_size = 2, sampler = Reverse(5) })
    local got = {}
    for b in loader do got[#got + 1] = b:totable() end
    assert.are.same({ { 14, 13 }, { 12, 11 }, { 10 } }, got)
    assert.are.equal(3, loader:len())
    assert.are.equal(data.Sampler, Reverse.super)
    assert.is_true(wick.isinstance(Reverse(2), data.Sampler))
    local Bare = data.Sampler:extend("Bare")
    assert_error_has(function() Bare():iter() end, "Bare:iter", "not defined", "__iter__")
    assert_error_has(function() data.DataLoader(data.TensorDataset(wick.ones(3)), { sampler = Bare() }):len() end,
      "Bare:len", "not defined")
  end)

  it("an array of indices is a sampler and a batch sampler (PyTorch's iterables)", function()
    -- list(BatchSampler(range(5), 2, False)): [[0, 1], [2, 3], [4]]; len(BatchSampler([1..5], 2, True)) 2
    local bs = data.BatchSampler({ 1, 2, 3, 4, 5 }, 2, false)
    local got = {}
    for b in bs:iter() do got[#got + 1] = b end
    assert.are.same({ { 1, 2 }, { 3, 4 }, { 5 } }, got)
    assert.are.equal(3, bs:len())
    assert.are.equal(2, data.BatchSampler({ 1, 2, 3, 4, 5 }, 2, true):len())
    local ds = data.TensorDataset(wick.arange(0, 6, { dtype = "int64" }):reshape(3, 2), I({ 1, 2, 3 }))
    -- DataLoader(ds, batch_size=2, sampler=[2, 0, 1]): labels [3, 1], [2]
    local labels = {}
    for _, y in data.DataLoader(ds, { batch_size = 2, sampler = { 3, 1, 2 } }) do labels[#labels + 1] = y:totable() end
    assert.are.same({ { 3, 1 }, { 2 } }, labels)
    -- DataLoader(ds, batch_sampler=[[2, 0], [1]]): the same, len 2
    local by_batches = data.DataLoader(ds, { batch_sampler = { { 3, 1 }, { 2 } } })
    assert.are.equal(2, by_batches:len())
    labels = {}
    for _, y in by_batches do labels[#labels + 1] = y:totable() end
    assert.are.same({ { 3, 1 }, { 2 } }, labels)
    assert_error_has(function() data.BatchSampler({ a = 1 }, 2) end, "expected a sampler")
  end)
end)

-- ======================================================================
describe("StackDataset", function()
  local pairs_ds = data.TensorDataset(wick.arange(0, 6):reshape(3, 2), I({ 1, 2, 3 }))

  it("StackDataset(ds1, ds2): sample i is each dataset's sample i (PyTorch >= 2.1)", function()
    local s = data.StackDataset(pairs_ds, pairs_ds)
    assert.are.equal(3, s:len())
    -- s[0]: ((tensor([0., 1.]), tensor(1)), (tensor([0., 1.]), tensor(1)))
    local a, b = s:get(1)
    assert.are.same({ { 0, 1 }, 1 }, plain(a))
    assert.are.same({ { 0, 1 }, 1 }, plain(b))
    assert.are.same({ { { 2, 3 }, 2 }, { { 2, 3 }, 2 } }, plain(s[2]))
    -- a tensor is a dataset of its slices; a dataset of one value gives that value
    local t = data.StackDataset(wick.arange(0, 3), I({ 0, 10, 20 }))
    local x, y = t:get(3)
    assert.are.same({ 2, 20 }, { x:item(), y:item() })
  end)

  it("StackDataset{a = ds1, b = ds2}: dict samples, collated key by key", function()
    -- StackDataset(a=ds, b=torch.arange(3))[1]: {'a': (tensor([2., 3.]), tensor(2)), 'b': tensor(1)}
    local s = data.StackDataset({ a = pairs_ds, b = wick.arange(0, 3, { dtype = "int64" }) })
    assert.are.same({ a = { { 2, 3 }, 2 }, b = 1 }, plain(s:get(2)))
    assert.are.same({ a = { { 2, 3 }, 2 }, b = 1 }, plain(s[2]))
    -- DataLoader(StackDataset(a=arange(3), b=arange(3) * 2), batch_size=2):
    -- [{'a': tensor([0, 1]), 'b': tensor([0, 2])}, {'a': tensor([2]), 'b': tensor([4])}]
    local two = data.StackDataset({ a = I({ 0, 1, 2 }), b = I({ 0, 2, 4 }) })
    local got = {}
    for batch in data.DataLoader(two, { batch_size = 2 }) do got[#got + 1] = plain(batch) end
    assert.are.same({ { a = { 0, 1 }, b = { 0, 2 } }, { a = { 2 }, b = { 4 } } }, got)
  end)

  it("raises PyTorch's errors", function()
    assert_error_has(function() data.StackDataset(pairs_ds, wick.arange(4)) end, "Size mismatch between datasets")
    assert_error_has(function() data.StackDataset(pairs_ds, { b = pairs_ds }) end, "but both types are given")
    assert_error_has(function() data.StackDataset() end, "At least one dataset should be passed")
    assert_error_has(function() data.StackDataset(pairs_ds):get(4) end, "out of range")
  end)
end)

-- ======================================================================
describe("DataLoader without automatic batching (batch_size = false, PyTorch's None)", function()
  local ds = data.TensorDataset(wick.ones(4, 3), wick.zeros(4))

  it("gives each sample's values as they are: x (3) and y ()", function()
    local loader = data.DataLoader(ds, { batch_size = false })
    local x, y = loader:iter()()
    assert.are.same({ 3 }, shape_of(x))
    assert.are.same({}, shape_of(y))
    assert.are.equal(4, loader:len())
    assert.are.equal(4, #collect(loader))
    assert.is_nil(loader.batch_size)
    assert.is_nil(loader.batch_sampler)
    assert.are.equal(data.default_convert, loader.collate_fn)
    -- list(DataLoader(TensorDataset(arange(10, 14)), batch_size=None)): tensor(10), ..., tensor(13)
    local got = {}
    for v in data.DataLoader(I({ 10, 11, 12, 13 }), { batch_size = false }) do got[#got + 1] = v:item() end
    assert.are.same({ 10, 11, 12, 13 }, got)
  end)

  it("takes a sampler and a collate_fn (called with the one sample); refuses drop_last", function()
    local got = {}
    for v in data.DataLoader(I({ 10, 11, 12 }), { batch_size = false, sampler = { 3, 1 } }) do got[#got + 1] = v:item() end
    assert.are.same({ 12, 10 }, got)
    local seen = {}
    for n in data.DataLoader(ds, { batch_size = false, collate_fn = function(sample)
      seen[#seen + 1] = sample
      return #sample
    end }) do assert.are.equal(2, n) end
    assert.are.equal(4, #seen)
    assert_error_has(function() data.DataLoader(ds, { batch_size = false, drop_last = true }) end,
      "batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
    assert_error_has(function() data.DataLoader(ds, { batch_size = true }) end, "batch_size", "false")
    assert_error_has(function() data.DataLoader(ds, { batch_size = false, batch_sampler = { { 1 } } }) end,
      "batch_sampler option is mutually exclusive")
  end)
end)

-- ======================================================================
describe("list samples: get(i) returning one array {x, y}", function()
  -- class L(Dataset): __getitem__(i) returns [torch.full((2,), i + 1.), i + 1]
  local L = data.Dataset:extend("L")
  function L:len() return 6 end
  function L:get(i) return { wick.full({ 2 }, i), i } end

  it("is collated position by position and spread over the loop's variables, as PyTorch's list", function()
    -- for x, y in DataLoader(L(), batch_size=3): x (3, 2), y tensor([1, 2, 3]); then tensor([4, 5, 6])
    local got = {}
    for x, y in data.DataLoader(L(), { batch_size = 3 }) do
      assert.are.same({ 3, 2 }, shape_of(x))
      got[#got + 1] = y:totable()
    end
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, got)
    -- ds[i] is the array itself; a collate_fn sees it as the sample
    assert.are.equal(2, L()[2][2])
    for n, second in data.DataLoader(L(), { batch_size = 3, collate_fn = function(batch)
      return #batch, batch[2][2]
    end }) do
      assert.are.equal(3, n)
      assert.is_true(second == 2 or second == 5)
    end
    -- a table with string keys stays one value: a dict sample
    local D = data.Dataset:extend("D")
    function D:len() return 2 end
    function D:get(i) return { x = i, y = { i, 2 * i } } end
    for batch, nothing in data.DataLoader(D(), { batch_size = 2 }) do
      assert.is_nil(nothing)
      assert.are.same({ x = { 1, 2 }, y = { { 1, 2 }, { 2, 4 } } }, plain(batch))
    end
  end)

  it("a collate_fn's one array is spread; returning {list} keeps the whole list", function()
    local ds = data.TensorDataset(wick.arange(0, 6))
    local function identity(batch) return batch end
    local b, c = data.DataLoader(ds, { batch_size = 3, collate_fn = identity }):iter()()
    assert.are.equal(0, b:item())
    assert.are.equal(1, c:item())
    local whole = data.DataLoader(ds, { batch_size = 3, collate_fn = function(batch) return { batch } end }):iter()()
    assert.are.same({ 0, 1, 2 }, { whole[1]:item(), whole[2]:item(), whole[3]:item() })
  end)
end)

-- ======================================================================
describe("default_collate", function()
  it("Lua floats become float64 (PyTorch's Python floats), whole numbers int64, booleans bool", function()
    local f = data.default_collate({ 0.5, 1.5 })
    assert.are.equal("float64", f.dtype)
    assert.are.same({ 0.5, 1.5 }, f:totable())
    assert.are.equal("int64", data.default_collate({ 1, 2 }).dtype)
    assert.are.equal("bool", data.default_collate({ true, false }).dtype)
    -- default_collate([[0.5, 1], [1.5, 2]]): [tensor([0.5, 1.5], float64), tensor([1, 2])]
    local cols = data.default_collate({ { 0.5, 1 }, { 1.5, 2 } })
    assert.are.equal("float64", cols[1].dtype)
    assert.are.equal("int64", cols[2].dtype)
    assert.are.same({ { 0.5, 1.5 }, { 1, 2 } }, plain(cols))
    -- default_collate([{'a': 0.5, 'b': [1, 2]}, {'a': 1.5, 'b': [3, 4]}]):
    -- {'a': tensor([0.5, 1.5], float64), 'b': [tensor([1, 3]), tensor([2, 4])]}
    local dict = data.default_collate({ { a = 0.5, b = { 1, 2 } }, { a = 1.5, b = { 3, 4 } } })
    assert.are.equal("float64", dict.a.dtype)
    assert.are.same({ a = { 0.5, 1.5 }, b = { { 1, 3 }, { 2, 4 } } }, plain(dict))
    -- through the loader: a dataset of Python floats, DataLoader([[1, 0.5], [2, 1.5]], batch_size=2)
    local ints, floats = data.DataLoader({ { 1, 0.5 }, { 2, 1.5 } }, { batch_size = 2 }):iter()()
    assert.are.equal("int64", ints.dtype)
    assert.are.equal("float64", floats.dtype)
  end)

  it("ragged lists raise PyTorch's 'each element in list of batch should be of equal size'", function()
    assert_error_has(function() data.default_collate({ { 0, 1 }, { 2 } }) end,
      "default_collate", "each element in list of batch should be of equal size")
    assert_error_has(function() data.default_collate({ { 0, 1 }, 2 }) end, "each element in list of batch")
    assert.are.same({ "a", "b" }, data.default_collate({ "a", "b" })) -- strings stay a list
  end)

  it("default_convert leaves Lua values as they are (no NumPy arrays to convert)", function()
    local t = wick.ones(2)
    local v = { 1, 2.5, t }
    assert.are.equal(v, data.default_convert(v))
    assert.are.equal(t, data.default_convert(t))
  end)
end)

-- ======================================================================
describe("DataLoader's worker options and attributes", function()
  local ds = data.TensorDataset(wick.ones(10))

  it("checks the worker options with PyTorch's ValueError texts", function()
    assert_error_has(function() data.DataLoader(ds, { persistent_workers = true }) end,
      "persistent_workers option needs num_workers > 0")
    assert_error_has(function() data.DataLoader(ds, { prefetch_factor = 2 }) end,
      "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to enable "
      .. "multiprocessing, otherwise set prefetch_factor to None.")
    assert_error_has(function() data.DataLoader(ds, { num_workers = 2, prefetch_factor = -1 }) end,
      "prefetch_factor option should be non-negative")
    assert_error_has(function() data.DataLoader(ds, { timeout = -1 }) end, "timeout option should be non-negative")
    assert_error_has(function() data.DataLoader(ds, { num_workers = -1 }) end,
      "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
    -- accepted (and changing nothing): the batches are made in the calling process
    local loader = data.DataLoader(ds, { num_workers = 2, multiprocessing_context = "spawn", pin_memory_device = "",
      in_order = false, persistent_workers = true, prefetch_factor = 4, worker_init_fn = function() end })
    assert.are.equal(10, #collect(loader))
    assert.are.equal(4, loader.prefetch_factor)
    assert.are.equal("spawn", loader.multiprocessing_context)
    assert.is_false(loader.in_order)
    assert.is_true(loader.persistent_workers)
  end)

  it("has PyTorch's attributes and defaults", function()
    local g = wick.Generator():manual_seed(0)
    -- DataLoader(ds, batch_size=2, shuffle=True, generator=g, num_workers=2, timeout=3):
    -- generator g, num_workers 2, timeout 3, prefetch_factor 2, persistent_workers False
    local l = data.DataLoader(ds, { batch_size = 2, shuffle = true, generator = g, num_workers = 2, timeout = 3 })
    assert.are.equal(g, l.generator)
    assert.are.same({ 2, 3, 2, false }, { l.num_workers, l.timeout, l.prefetch_factor, l.persistent_workers })
    assert.are.equal(g, l.sampler.generator)
    -- DataLoader(ds): num_workers 0, timeout 0, prefetch_factor None, persistent_workers False,
    -- worker_init_fn None, pin_memory False, multiprocessing_context None, pin_memory_device '', in_order True
    local d = data.DataLoader(ds)
    assert.are.same({ 0, 0, false, false, "", true }, { d.num_workers, d.timeout, d.persistent_workers, d.pin_memory,
      d.pin_memory_device, d.in_order })
    assert.is_nil(d.prefetch_factor)
    assert.is_nil(d.worker_init_fn)
    assert.is_nil(d.multiprocessing_context)
    assert.is_nil(d.generator)
    assert.are.equal(1, d.batch_size)
    assert.is_false(d.drop_last)
    assert.are.equal(ds, d.dataset)
    assert.are.equal(data.default_collate, d.collate_fn)
    assert.are.equal(d.sampler, d.batch_sampler.sampler)
    -- batch_sampler given: batch_size None and drop_last False
    local b = data.DataLoader(ds, { batch_sampler = { { 1, 2 } } })
    assert.is_nil(b.batch_size)
    assert.is_false(b.drop_last)
  end)

  it("takes PyTorch's positional arguments (batch_size, shuffle, sampler, batch_sampler, num_workers, collate_fn, ...)",
    function()
      local calls = 0
      local function count(batch) calls = calls + 1; return #batch end
      local l = data.DataLoader(ds, 4, false, nil, nil, 0, count)
      assert.are.same({ { 4 }, { 4 }, { 2 } }, plain(collect(l)))
      assert.are.equal(3, calls)
      assert.are.equal(2, data.DataLoader(ds, 4, false, nil, nil, 0, nil, false, true):len()) -- drop_last
    end)
end)

-- ======================================================================
describe("the samplers' positional arguments and attributes", function()
  local ds = data.TensorDataset(wick.ones(10))

  local function drain(s)
    local out = {}
    for i in s:iter() do out[#out + 1] = i end
    return out
  end

  it("RandomSampler(data_source, replacement, num_samples, generator); num_samples as PyTorch's property", function()
    local a = data.RandomSampler(ds, false, nil, wick.Generator():manual_seed(1))
    local b = data.RandomSampler(ds, { generator = wick.Generator():manual_seed(1) })
    assert.are.same(drain(b), drain(a))
    assert.are.equal(10, #drain(a))
    -- RandomSampler(range(10)).num_samples 10; RandomSampler(range(10), True, 20).num_samples 20
    assert.are.equal(10, data.RandomSampler(ds).num_samples)
    local r = data.RandomSampler(ds, true, 20)
    assert.are.equal(20, r.num_samples)
    assert.is_true(r.replacement)
    assert.is_nil(r.generator)
  end)

  it("SubsetRandomSampler(indices, generator) and WeightedRandomSampler(weights, n, replacement, generator)", function()
    local s1 = data.SubsetRandomSampler({ 1, 2, 3, 4, 5 }, wick.Generator():manual_seed(1))
    local s2 = data.SubsetRandomSampler({ 1, 2, 3, 4, 5 }, { generator = wick.Generator():manual_seed(1) })
    assert.are.same(drain(s2), drain(s1))
    local w1 = data.WeightedRandomSampler({ 1, 1, 1 }, 4, true, wick.Generator():manual_seed(2))
    local w2 = data.WeightedRandomSampler({ 1, 1, 1 }, 4, { generator = wick.Generator():manual_seed(2) })
    assert.are.same(drain(w2), drain(w1))
    assert.are.equal(4, #drain(w1))
    -- a generator is never read as an options table
    local a, b = data.random_split(ds, { 5, 5 }, wick.Generator():manual_seed(1))
    assert.are.same({ 5, 5 }, { a:len(), b:len() })
  end)

  it("DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)", function()
    local five = data.TensorDataset(wick.ones(5))
    -- list(DistributedSampler(range(5), 2, 0, False)): [0, 2, 4]
    assert.are.same({ 1, 3, 5 }, drain(data.DistributedSampler(five, 2, 0, false)))
    -- list(DistributedSampler(range(5), 2, 1, False, 0, True)): [1, 3]
    assert.are.same({ 2, 4 }, drain(data.DistributedSampler(five, 2, 1, false, 0, true)))
    local s = data.DistributedSampler(five, 2, 0, true, 7)
    assert.are.equal(7, s.seed)
    assert.are.same(drain(data.DistributedSampler(five, { num_replicas = 2, rank = 0, seed = 7 })), drain(s))
    assert_error_has(function() data.DistributedSampler(five, 2, 0, true, 7, true, 1) end, "at most 5 positional")
    assert_error_has(function() data.DistributedSampler(five, 2, { num_replicas = 2 }) end,
      "'num_replicas' given both by position and as an option")
  end)
end)
