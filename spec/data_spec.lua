-- wick.data (Dataset, TensorDataset, Subset, ConcatDataset, random_split,
-- DataLoader, FashionMNIST), wick.to_device, and
-- checkpoints (wick.save / wick.load): round trips of a nested training state,
-- the map_location forms, corrupt and truncated files, atomic writes.
local wick = require("wick")
local data = wick.data
local support = require("spec.support")
local assert_close, assert_error_has, shape_of = support.assert_close, support.assert_error_has, support.shape_of
local I = support.I

local function collect(loader)
  local batches = {}
  for a, b, c in loader:iter() do batches[#batches + 1] = { a, b, c } end
  return batches
end

-- ======================================================================
describe("TensorDataset", function()
  local x = wick.arange(20):reshape(10, 2)
  local y = I({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 })

  it("get(i) returns the i-th slice of every tensor along dim 1; len() counts them", function()
    local ds = data.TensorDataset(x, y)
    assert.are.equal(10, ds:len())
    local a, b = ds:get(3)
    assert_close(a, { 4, 5 })
    assert.are.equal(3, b:item())
    assert.are.same({}, shape_of(b))
    assert.are.equal("int64", b.dtype)
    local one = data.TensorDataset(x)
    assert.are.equal(1, select("#", one:get(1)))
    local three = data.TensorDataset(x, y, wick.zeros(10, 3, 3))
    local _, _, c = three:get(10)
    assert.are.same({ 3, 3 }, shape_of(c))
  end)

  it("raises on tensors of different lengths, non-tensors and no tensors", function()
    assert_error_has(function() data.TensorDataset(x, I({ 1, 2, 3 })) end, "size mismatch", "10", "3")
    assert_error_has(function() data.TensorDataset(x, wick.tensor(1)) end, "TensorDataset")
    assert_error_has(function() data.TensorDataset() end, "at least one tensor")
  end)

  it("ds[i] is sample i as one table {x, y} (PyTorch's train_ds[i - 1]); -1 is the last", function()
    local ds = data.TensorDataset(x, y)
    local s = ds[3]
    assert.are.equal("table", type(s))
    assert.are.equal(2, #s)
    assert_close(s[1], { 4, 5 })
    assert.are.equal(3, s[2]:item())
    assert.are.equal(10, ds[-1][2]:item())
    assert.are.equal(1, #data.TensorDataset(x)[1])
    -- get_batch gives a batch as one table too
    local b = ds:get_batch({ 2, 4 })
    assert.are.equal(2, #b)
    assert_close(b[2], { 2, 4 })
    -- methods are still found, and other keys are nil
    assert.are.equal(10, ds:len())
    assert.is_nil(ds.no_such_field)
  end)

  it("ds[0] and an index past the end are errors naming the 1-based range", function()
    local ds = data.TensorDataset(x, y)
    assert_error_has(function() return ds[0] end, "TensorDataset", "index 0 is out of range", "10 samples", "1-based",
      "1..10")
    assert_error_has(function() return ds[11] end, "index 11 is out of range")
    assert_error_has(function() return ds[-11] end, "index -11 is out of range")
    assert_error_has(function() return ds[1.5] end, "expected an integer", "1.5")
    assert_error_has(function() ds:get(0) end, "TensorDataset:get", "index 0 is out of range")
  end)

  it("a one-element integer tensor indexes as the number it holds (ds[wick.randperm(n)[k]]), never a silent nil", function()
    local ds = data.TensorDataset(x, y)
    local i = wick.tensor(3, { dtype = "int64" })
    assert.are.same(ds[3][1]:totable(), ds[i][1]:totable())
    assert.are.same(ds:get(3):totable(), ds:get(i):totable())
    assert.are.same(ds[3][1]:totable(), data.Subset(ds, { 5, 3 })[wick.tensor({ 2 }, { dtype = "int32" })][1]:totable())
    local Double = data.Dataset:extend("Double")
    function Double:len() return 4 end
    function Double:get(k) return k * 2 end
    assert.are.equal(6, Double()[wick.tensor(3, { dtype = "int64" })]) -- (a plain value is itself, as __getitem__'s)
    assert_error_has(function() return ds[wick.tensor(1.5)] end, "expected an integer", "Tensor")
    assert_error_has(function() return ds[wick.tensor({ 1, 2 }, { dtype = "int64" })] end, "expected an integer")
    assert_error_has(function() return ds[wick.tensor(11, { dtype = "int64" })] end, "index 11 is out of range")
  end)

  it("ds[{{a, b}}] is PyTorch's train_ds[a - 1:b] of a TensorDataset; other keys are errors, never nil", function()
    local ds = data.TensorDataset(x, y)
    local xb, yb = ds[{ { 2, 4 } }][1], ds[{ { 2, 4 } }][2]
    assert.are.same(x:narrow(1, 2, 3):totable(), xb:totable())
    assert.are.same(y:narrow(1, 2, 3):totable(), yb:totable())
    assert_error_has(function() return ds[true] end, "a dataset's index is an integer", "boolean")
    assert_error_has(function() return data.Subset(ds, { 1, 2 })[{ { 1, 2 } }] end, "Subset", "get_batch")
  end)
end)

-- ======================================================================
describe("Dataset, Subset, ConcatDataset, random_split", function()
  -- class NumbersDataset(Dataset): sample i is (i * 10, -i)
  local Numbers = data.Dataset:extend("Numbers")
  function Numbers:init(n) self.n = n end
  function Numbers:len() return self.n end
  function Numbers:get(i) return i * 10, -i end

  local function firsts(loader)
    local out = {}
    for a in loader:iter() do out[#out + 1] = a:totable() end
    return out
  end

  it("a Dataset subclass: Class(...) calls init; ds[i], DataLoader and inheritance work", function()
    local ds = Numbers(5)
    assert.are.equal(5, ds:len())
    assert.are.same({ 20, -2 }, ds[2])
    assert.are.same({ 50, -5 }, ds[-1])
    assert_error_has(function() return ds[0] end, "Numbers", "index 0 is out of range", "1..5")
    assert.are.same({ { 10, 20, 30 }, { 40, 50 } }, firsts(data.DataLoader(ds, { batch_size = 3 })))
    local Evens = Numbers:extend("Evens")
    function Evens:get(i) return Evens.super.get(self, 2 * i) end
    local evens = Evens(2)
    assert.are.same({ 40, -4 }, evens[2])
    assert.are.equal(2, evens:len())
  end)

  it("a subclass without len() or get() says what to define", function()
    local Empty = data.Dataset:extend("Empty")
    assert_error_has(function() Empty():len() end, "Empty:len", "not defined", "__len__")
    assert_error_has(function() Empty():get(1) end, "Empty:get", "not defined", "__getitem__")
    assert_error_has(function() data.Dataset:extend(3) end, "Dataset.extend", "name")
  end)

  it("Subset(dataset, indices): the samples at 1-based indices, as a dataset; batches through get_batch", function()
    local ds = data.TensorDataset(wick.arange(10, 20, { dtype = "int64" }))
    local sub = data.Subset(ds, { 4, 2, -1 })
    assert.are.equal(3, sub:len())
    assert.are.same({ 4, 2, 10 }, sub.indices)
    assert.are.equal(13, sub:get(1):item())
    assert.are.equal(19, sub[3][1]:item())
    assert.are.same({ { 13, 11 }, { 19 } }, firsts(data.DataLoader(sub, { batch_size = 2 })))
    assert.are.same({ 13, 19 }, sub:get_batch({ 1, 3 })[1]:totable())
    -- over a dataset without get_batch, and with tensor indices
    local plain = data.Subset(Numbers(6), wick.tensor({ 6, 1 }, { dtype = "int64" }))
    assert.are.same({ { 60, 10 } }, firsts(data.DataLoader(plain, { batch_size = 2 })))
    assert.are.same({ 60, -6 }, plain[1])
    assert_error_has(function() data.Subset(ds, { 0 }) end, "Subset", "index 0 is out of range", "1-based")
    assert_error_has(function() data.Subset(ds, { 11 }) end, "index 11")
    assert_error_has(function() data.Subset(ds, 3) end, "Subset", "indices")
    assert_error_has(function() data.Subset(3, { 1 }) end, "Subset", "dataset")
    assert_error_has(function() sub:get(4) end, "Subset:get", "index 4 is out of range")
  end)

  it("ConcatDataset(datasets) and ds1 + ds2: the samples one dataset after the other", function()
    local a, b = Numbers(3), data.Subset(Numbers(9), { 7, 8 })
    local c = data.ConcatDataset({ a, b })
    assert.are.equal(5, c:len())
    assert.are.same({ 3, 5 }, c.cumulative_sizes)
    assert.are.equal(30, (c:get(3)))
    assert.are.equal(70, (c:get(4)))
    assert.are.same({ 80, -8 }, c[-1])
    local sum = a + b + a
    assert.are.equal(8, sum:len())
    assert.are.same({ 20, -2 }, sum[7])
    assert.are.same({ { 10, 20, 30, 70 }, { 80, 10, 20, 30 } }, firsts(data.DataLoader(sum, { batch_size = 4 })))
    assert_error_has(function() data.ConcatDataset({}) end, "ConcatDataset", "empty")
    assert_error_has(function() data.ConcatDataset({ a, 3 }) end, "ConcatDataset", "dataset")
    assert_error_has(function() return c[6] end, "index 6 is out of range")
  end)

  it("random_split by counts: disjoint Subsets covering the dataset, repeatable under wick.manual_seed", function()
    local ds = Numbers(10)
    wick.manual_seed(11)
    local a, b, extra = data.random_split(ds, { 3, 7 })
    assert.is_nil(extra)
    assert.are.equal(3, a:len())
    assert.are.equal(7, b:len())
    local seen = {}
    for _, part in ipairs({ a, b }) do
      assert.are.equal(ds, part.dataset)
      for _, i in ipairs(part.indices) do
        assert.is_nil(seen[i])
        seen[i] = true
      end
    end
    for i = 1, 10 do assert.is_true(seen[i]) end
    wick.manual_seed(11)
    local a2 = data.random_split(ds, { 3, 7 })
    assert.are.same(a.indices, a2.indices)
    assert.are_not.same({ 1, 2, 3 }, a.indices)
  end)

  it("random_split by fractions: PyTorch's lengths (floor, then the remainder round-robin)", function()
    local function sizes(n, fractions)
      local out = {}
      for k, part in ipairs({ data.random_split(Numbers(n), fractions) }) do out[k] = part:len() end
      return out
    end
    -- torch.utils.data.random_split(range(n), fractions) gives these lengths
    assert.are.same({ 3, 3, 4 }, sizes(10, { 0.3, 0.3, 0.4 }))
    assert.are.same({ 4, 2, 1 }, sizes(7, { 0.5, 0.25, 0.25 }))
    assert.are.same({ 2, 1, 1, 1, 1, 1, 1, 1, 1, 1 }, sizes(11, { 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1 }))
    assert.are.same({ 1, 2 }, sizes(3, { 0.1, 0.9 }))
    -- an empty split warns, as PyTorch does
    local real_stderr, written = io.stderr, {}
    io.stderr = { write = function(_, text) written[#written + 1] = text end }
    local ok, got = pcall(sizes, 5, { 0.85, 0.15 })
    io.stderr = real_stderr
    assert(ok, got)
    assert.are.same({ 5, 0 }, got)
    assert.is_truthy(table.concat(written):find("split at index 2 is 0", 1, true))
  end)

  it("random_split with {seed = s}: the same split each time, wick's generator untouched", function()
    local ds = Numbers(20)
    wick.manual_seed(1)
    local a = data.random_split(ds, { 0.5, 0.5 }, { seed = 42 })
    local u = wick.rand(3)
    wick.manual_seed(2)
    local b = data.random_split(ds, { 0.5, 0.5 }, { seed = 42 })
    assert.are.same(a.indices, b.indices)
    wick.manual_seed(1)
    assert.is_true(wick.rand(3):equal(u))
    assert.are_not.same(a.indices, (data.random_split(ds, { 0.5, 0.5 }, { seed = 43 })).indices)
  end)

  it("random_split raises on lengths that do not add up, bad fractions and bad arguments", function()
    local ds = Numbers(5)
    assert_error_has(function() data.random_split(ds, { 2, 2 }) end, "random_split",
      "does not equal the length of the input dataset")
    assert_error_has(function() data.random_split(ds, { 1.5, -0.5 }) end, "fraction at index 1 is not between 0 and 1")
    assert_error_has(function() data.random_split(ds, { 2.5, 2.5 }) end, "random_split", "lengths[1]", "integer")
    assert_error_has(function() data.random_split(ds, { 2, "3" }) end, "lengths[2]")
    assert_error_has(function() data.random_split(ds, { 5 }, { generator = 1 }) end, "expected a wick.Generator for argument 'generator'")
    assert_error_has(function() data.random_split(3, { 1 }) end, "random_split", "dataset")
    -- a wick.Generator, as PyTorch's generator=: the same seed, the same split
    local g1, g2 = wick.Generator():manual_seed(9), wick.Generator():manual_seed(9)
    local a1 = data.random_split(ds, { 3, 2 }, { generator = g1 })
    local a2 = data.random_split(ds, { 3, 2 }, { generator = g2 })
    assert.are.same(a1.indices, a2.indices)
    -- and a DataLoader shuffles from one, taking (and ignoring) PyTorch's worker options
    local order = function(g)
      local seen = {}
      for x in data.DataLoader(data.TensorDataset(wick.arange(8)), { batch_size = 8, shuffle = true, generator = g,
        num_workers = 2, persistent_workers = false, prefetch_factor = 2 }) do seen = x:totable() end
      return seen
    end
    assert.are.same(order(wick.Generator():manual_seed(4)), order(wick.Generator():manual_seed(4)))
    assert_error_has(function() data.DataLoader(ds, { num_workers = -1 }) end, "num_workers option should be non-negative")
  end)
end)

-- ======================================================================
describe("DataLoader", function()
  local n = 10
  local x = wick.arange(n * 2):reshape(n, 2)
  local y = I({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 })
  local ds = data.TensorDataset(x, y)

  -- a dataset with only get(): numbers and tables of tensors and numbers
  local Plain = {}
  Plain.__index = Plain
  function Plain:len() return 7 end
  function Plain:get(i)
    return wick.full({ 2 }, i), i * 10, { image = wick.full({ 1, 2 }, -i), weight = i / 2, nested = { id = i } }
  end
  local plain = setmetatable({}, Plain)

  it("batches of batch_size, the last one short; len() counts batches", function()
    local loader = data.DataLoader(ds, { batch_size = 3 })
    assert.are.equal(4, loader:len())
    local batches = collect(loader)
    assert.are.equal(4, #batches)
    local sizes = {}
    for i, b in ipairs(batches) do sizes[i] = b[1]:size(1) end
    assert.are.same({ 3, 3, 3, 1 }, sizes)
    assert_close(batches[1][1], { { 0, 1 }, { 2, 3 }, { 4, 5 } })
    assert_close(batches[4][2], { 10 })
    assert.are.equal("int64", batches[2][2].dtype)
    assert.is_nil(batches[1][3])
  end)

  it("drop_last drops the short batch; len() agrees", function()
    local loader = data.DataLoader(ds, { batch_size = 3, drop_last = true })
    assert.are.equal(3, loader:len())
    assert.are.equal(3, #collect(loader))
    assert.are.equal(2, data.DataLoader(ds, { batch_size = 5, drop_last = true }):len())
    assert.are.equal(2, data.DataLoader(ds, { batch_size = 5 }):len())
    assert.are.equal(0, data.DataLoader(ds, { batch_size = 11, drop_last = true }):len())
    assert.are.equal(0, #collect(data.DataLoader(ds, { batch_size = 11, drop_last = true })))
    assert.are.equal(1, data.DataLoader(ds, { batch_size = 11 }):len())
    assert.are.equal(10, data.DataLoader(ds):len()) -- batch_size defaults to 1
  end)

  it("shuffle gives a permutation of all samples, repeatable under wick.manual_seed", function()
    local function order(seed)
      if seed then wick.manual_seed(seed) end
      local loader = data.DataLoader(ds, { batch_size = 4, shuffle = true })
      local out = {}
      for _, labels in loader:iter() do
        for _, v in ipairs(labels:totable()) do out[#out + 1] = v end
      end
      return out
    end
    local a = order(123)
    local b = order(123)
    assert.are.same(a, b)
    local sorted = {}
    for i, v in ipairs(a) do sorted[i] = v end
    table.sort(sorted)
    assert.are.same({ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 }, sorted)
    assert.are_not.same(sorted, a)
    -- the next epoch draws a new order; another seed another one
    local c = order()
    assert.are_not.same(a, c)
    assert.are_not.same(a, order(124))
    -- inputs and labels stay paired
    wick.manual_seed(5)
    for inputs, labels in data.DataLoader(ds, { batch_size = 3, shuffle = true }):iter() do
      for i, l in ipairs(labels:totable()) do assert_close(inputs[i], { 2 * (l - 1), 2 * (l - 1) + 1 }) end
    end
  end)

  it("wick.randperm is a repeatable permutation", function()
    wick.manual_seed(7)
    local p = wick.randperm(50)
    assert.are.equal("int64", p.dtype)
    wick.manual_seed(7)
    assert.is_true(p:equal(wick.randperm(50)))
    local seen = {}
    for _, v in ipairs(p:totable()) do seen[v] = true end
    for i = 1, 50 do assert.is_true(seen[i], tostring(i)) end
  end)

  it("collates samples of numbers and (nested) tables", function()
    local batches = collect(data.DataLoader(plain, { batch_size = 3 }))
    assert.are.equal(3, #batches)
    local t, nums, tab = batches[1][1], batches[1][2], batches[1][3]
    assert.are.same({ 3, 2 }, shape_of(t))
    assert_close(t, { { 1, 1 }, { 2, 2 }, { 3, 3 } })
    assert.is_true(wick.is_tensor(nums))
    assert_close(nums, { 10, 20, 30 })
    assert.are.same({ 3, 1, 2 }, shape_of(tab.image))
    assert_close(tab.image[3], { { -3, -3 } })
    assert_close(tab.weight, { 0.5, 1, 1.5 })
    assert_close(tab.nested.id, { 1, 2, 3 })
    assert_close(batches[3][2], { 70 })
  end)

  it("a collate_fn gets PyTorch's list of samples; its results are the batch's values", function()
    local seen
    local loader = data.DataLoader(plain, { batch_size = 4, collate_fn = function(batch)
      seen = batch
      return #batch, #batch[1]
    end })
    local b = collect(loader)
    assert.are.same({ 4, 3 }, b[1]) -- 4 samples of 3 values each
    assert.are.same({ 3, 3 }, b[#b]) -- the last batch: 3 samples
    assert.is_true(wick.is_tensor(seen[1][1]))
    -- the language-translation tutorial's collate: samples unpacked, the batch returned as a pair
    local ds2 = data.TensorDataset(wick.randn(4, 2), wick.tensor({ 10, 20, 30, 40 }))
    local pairs_loader = data.DataLoader(ds2, { batch_size = 2, collate_fn = function(batch)
      local xs, ys = {}, {}
      for i, sample in ipairs(batch) do xs[i], ys[i] = sample[1], sample[2] end
      return { wick.stack(xs), wick.stack(ys) }
    end })
    for x, y in pairs_loader do
      assert.are.same({ 2, 2 }, x:size())
      assert.are.same({ 2 }, y:size())
    end
    -- default_collate inside a collate_fn collates the list as the loader would
    local same = data.DataLoader(ds2, { batch_size = 2, collate_fn = data.default_collate })
    for x, y in same do assert.are.same({ 2 }, y:size()); assert.are.same({ 2, 2 }, x:size()) end
  end)

  it("takes a plain Lua array of samples as the dataset, as PyTorch takes a list", function()
    local texts = data.DataLoader({ { 1, "a b" }, { 2, "c" }, { 1, "d e f" } }, { batch_size = 2, collate_fn = function(batch)
      local labels, lens = {}, {}
      for i, sample in ipairs(batch) do labels[i], lens[i] = sample[1], #sample[2] end
      return wick.tensor(labels, { dtype = "int64" }), wick.tensor(lens)
    end })
    local got = {}
    for labels, lens in texts do got[#got + 1] = { labels:totable(), lens:totable() } end
    assert.are.same({ { { 1, 2 }, { 3, 1 } }, { { 1 }, { 5 } } }, got)
    local tensors = data.DataLoader({ { wick.ones(2), 1 }, { wick.zeros(2), 0 } }, { batch_size = 2 })
    assert.are.equal(2, #tensors.dataset)
    for x, y in tensors do
      assert.are.same({ { 1, 1 }, { 0, 0 } }, x:totable())
      assert.are.same({ 1, 0 }, y:totable())
    end
    assert_error_has(function() data.DataLoader({ a = 1 }) end, "or be an array of samples")
  end)

  it("the device option delivers every batch on that device", function()
    local seen = 0
    for inputs, labels in data.DataLoader(ds, { batch_size = 4, device = "meta" }):iter() do
      assert.are.equal("meta", inputs.device.type)
      assert.are.equal("meta", labels.device.type)
      assert.are.equal("int64", labels.dtype)
      seen = seen + 1
    end
    assert.are.equal(3, seen)
    for t, nums, tab in data.DataLoader(plain, { batch_size = 4, device = wick.device("meta") }):iter() do
      assert.are.equal("meta", t.device.type)
      assert.are.equal("meta", nums.device.type)
      assert.are.equal("meta", tab.image.device.type)
      assert.are.equal("meta", tab.nested.id.device.type)
    end
  end)

  it("pin_memory without CUDA warns once on stderr and delivers ordinary batches", function()
    if wick.cuda.is_available() then return pending("only meaningful where wick.cuda.is_available() is false") end
    local real_stderr, written = io.stderr, {}
    io.stderr = { write = function(_, text) written[#written + 1] = text end }
    local ok, err = pcall(function()
      for _ = 1, 2 do -- two loaders, two passes: one warning
        local loader = data.DataLoader(ds, { batch_size = 4, pin_memory = true, device = "meta" })
        local n = 0
        for inputs, labels in loader:iter() do
          assert.are.equal("meta", inputs.device.type)
          assert.are.equal("meta", labels.device.type)
          n = n + 1
        end
        assert.are.equal(3, n)
        for inputs in data.DataLoader(ds, { batch_size = 4, pin_memory = true }):iter() do
          assert.are.equal("cpu", inputs.device.type)
          assert.is_false(inputs:is_pinned())
        end
      end
    end)
    io.stderr = real_stderr
    assert(ok, err)
    assert.is_true(#written <= 1) -- once per process (an earlier spec may have warned already)
    if #written == 1 then
      assert.is_truthy(written[1]:find("'pin_memory' is set to true but CUDA is not available", 1, true))
    end
  end)

  it("pin_memory with CUDA pins each batch and delivers it on the device", function()
    if not wick.cuda.is_available() then return pending("needs a CUDA GPU") end
    local seen = 0
    for inputs, labels in data.DataLoader(ds, { batch_size = 4, pin_memory = true, device = "cuda:0" }):iter() do
      assert.are.equal("cuda:0", tostring(inputs.device))
      assert.are.equal("cuda:0", tostring(labels.device))
      seen = seen + 1
    end
    assert.are.equal(3, seen)
    for inputs, labels in data.DataLoader(ds, { batch_size = 4, pin_memory = true }):iter() do
      assert.is_true(inputs:is_pinned())
      assert.is_true(labels:is_pinned())
    end
    -- values arrive intact through the non_blocking copies
    local all = {}
    for inputs in data.DataLoader(ds, { batch_size = 5, pin_memory = true, device = "cuda:0" }):iter() do
      all[#all + 1] = inputs:cpu()
    end
    assert.are.same(ds.tensors[1]:totable(), wick.cat(all):totable())
  end)

  it("for inputs, labels in loader do: the batches of loader:iter(), as several values", function()
    local loader = data.DataLoader(ds, { batch_size = 3 })
    local got = {}
    for a, b, c in loader do got[#got + 1] = { a, b, c } end
    local want = collect(loader)
    assert.are.equal(#want, #got)
    for i = 1, #want do
      assert.is_true(got[i][1]:equal(want[i][1]))
      assert.is_true(got[i][2]:equal(want[i][2]))
      assert.is_nil(got[i][3])
    end
    -- a shuffled loader draws the same order either way under the same seed
    local shuffled = data.DataLoader(ds, { batch_size = 4, shuffle = true })
    local function labels(iterate)
      wick.manual_seed(9)
      local out = {}
      for _, l in iterate() do for _, v in ipairs(l:totable()) do out[#out + 1] = v end end
      return out
    end
    assert.are.same(labels(function() return shuffled:iter() end), labels(function() return shuffled end))
  end)

  it("leaving a for loop over the loader and looping again starts a new epoch", function()
    local loader = data.DataLoader(ds, { batch_size = 4 })
    for _, labels in loader do
      assert.are.same({ 1, 2, 3, 4 }, labels:totable())
      break
    end
    local seen = {}
    for _, labels in loader do seen[#seen + 1] = labels:totable() end
    assert.are.same({ { 1, 2, 3, 4 }, { 5, 6, 7, 8 }, { 9, 10 } }, seen)
    -- an inner loop over another pass of the same loader: loader:iter()
    local pairs_seen = 0
    for _ in loader do
      for _ in loader:iter() do pairs_seen = pairs_seen + 1 end
    end
    assert.are.equal(9, pairs_seen)
    -- two generic for loops over one loader at once: an error, not a silently short epoch
    assert_error_has(function()
      for _ in loader do for _ in loader do end end
    end, "DataLoader", "another loop over the same loader", "loader:iter()")
  end)

  it("raises on bad options and datasets", function()
    assert_error_has(function() data.DataLoader(ds, { batch_size = 0 }) end, "batch_size")
    assert_error_has(function() data.DataLoader(ds, { batch_size = 2.5 }) end, "batch_size")
    assert_error_has(function() data.DataLoader(ds, { batchsize = 2 }) end, "batchsize")
    assert_error_has(function() data.DataLoader({ x = 1 }, {}) end, "len()", "get(i)")
    assert_error_has(function() data.DataLoader(ds, { device = "gpu" }) end, "gpu")
  end)
end)

-- ======================================================================
describe("FashionMNIST", function()
  local ROOT = "/usr/share/datasets/fashion-mnist"
  local function present()
    local f = io.open(ROOT .. "/train-images-idx3-ubyte.gz", "rb")
    if f then f:close() end
    return f ~= nil
  end

  it("train: 60000 images [1, 28, 28] float32 in [0, 1], labels int64 in 1..10", function()
    if not present() then pending("needs " .. ROOT .. " (apt-get install dataset-fashion-mnist)") return end
    local ds = data.FashionMNIST({ train = true })
    assert.are.equal(60000, ds:len())
    local x, y = ds:get(1)
    assert.are.same({ 1, 28, 28 }, shape_of(x))
    assert.are.equal("float32", x.dtype)
    assert.are.equal("int64", y.dtype)
    assert.are.same({}, shape_of(y))
    assert.are.equal(10, y:item()) -- the first training image is an ankle boot (class 9 in PyTorch)
    assert.are.equal("Ankle boot", ds.classes[y:item()])
    assert.are.same({ 60000, 1, 28, 28 }, shape_of(ds.images))
    assert.are.equal(0, ds.images:min():item())
    assert.are.equal(1, ds.images:max():item())
    assert.are.equal(1, ds.labels:min():item())
    assert.are.equal(10, ds.labels:max():item())
    -- 6000 images of each class
    for k = 1, 10 do assert.are.equal(6000, ds.labels:eq(k):to("float64"):sum():item(), "class " .. k) end
    -- and through a loader
    local loader = data.DataLoader(ds, { batch_size = 256, shuffle = true })
    assert.are.equal(235, loader:len())
    local inputs, labels = loader:iter()()
    assert.are.same({ 256, 1, 28, 28 }, shape_of(inputs))
    assert.are.same({ 256 }, shape_of(labels))
  end)

  it("test: 10000 samples", function()
    if not present() then pending("needs " .. ROOT .. " (apt-get install dataset-fashion-mnist)") return end
    local ds = data.FashionMNIST({ train = false })
    assert.are.equal(10000, ds:len())
    assert.are.same({ 10000, 1, 28, 28 }, shape_of(ds.images))
    assert.are.equal(1, ds.labels:min():item())
    assert.are.equal(10, ds.labels:max():item())
    for k = 1, 10 do assert.are.equal(1000, ds.labels:eq(k):to("float64"):sum():item()) end
  end)

  it("a missing root raises a clear error naming the install command", function()
    local err = assert_error_has(function() data.FashionMNIST({ root = "/nonexistent/fmnist" }) end,
      "/nonexistent/fmnist", "apt-get install dataset-fashion-mnist")
    support.assert_contains(err, "data_spec.lua")
  end)
end)

-- ======================================================================
describe("wick.to_device", function()
  it("moves every tensor of a nested table; other values pass through", function()
    local a, b, c = wick.ones(2), wick.zeros(3, { dtype = "int64" }), wick.ones(1, 1)
    local tree = { a = a, nested = { b = b, list = { c, 5, "s" }, flag = true }, n = 3 }
    local moved = wick.to_device(tree, "meta")
    assert.are.equal("meta", moved.a.device.type)
    assert.are.equal("meta", moved.nested.b.device.type)
    assert.are.equal("int64", moved.nested.b.dtype)
    assert.are.equal("meta", moved.nested.list[1].device.type)
    assert.are.equal(5, moved.nested.list[2])
    assert.are.equal("s", moved.nested.list[3])
    assert.is_true(moved.nested.flag)
    assert.are.equal(3, moved.n)
    -- the original is untouched
    assert.are.equal("cpu", tree.a.device.type)
    assert.is_true(rawequal(tree.nested.b, b))
    assert.is_false(rawequal(moved, tree))
  end)

  it("a tensor, a device object, values that are not tables", function()
    assert.are.equal("meta", wick.to_device(wick.ones(2), wick.device("meta")).device.type)
    local t = wick.ones(2)
    assert.is_true(rawequal(wick.to_device(t, "cpu"), t)) -- nothing to move: the same tensor
    assert.are.equal(4, wick.to_device(4, "meta"))
    assert.are.equal("x", wick.to_device("x", "meta"))
    assert.is_nil(wick.to_device(nil, "meta"))
    assert.has_error(function() wick.to_device(t, "gpu") end)
  end)
end)

-- ======================================================================
describe("wick.save / wick.load", function()
  local dir
  before_each(function()
    dir = os.tmpname()
    os.remove(dir)
    os.execute("mkdir -p '" .. dir .. "'")
  end)
  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  local function entries()
    local p = io.popen("ls -A '" .. dir .. "'")
    local out = {}
    for line in p:lines() do out[#out + 1] = line end
    p:close()
    table.sort(out)
    return out
  end

  local read = support.read_file
  local function write(path, s)
    local f = assert(io.open(path, "wb"))
    f:write(s)
    f:close()
  end

  local function training_state()
    local base = wick.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, { dtype = "float64" })
    return {
      model = {
        ["fc1.weight"] = wick.tensor({ { 0.5, -1.25 }, { 3, 1e-7 } }),
        ["fc1.bias"] = wick.tensor({ 1 / 3, -2 / 3 }),
        ["bn.num_batches_tracked"] = wick.tensor(7, { dtype = "int64" }),
      },
      tensors = {
        f64 = base,
        view = base:t(),                                   -- not contiguous
        i64 = wick.tensor({ -9007199254740991, 0, 9007199254740991 }, { dtype = "int64" }),
        i32 = wick.tensor({ -5, 7 }, { dtype = "int32" }),
        u8 = wick.tensor({ 0, 255, 17 }, { dtype = "uint8" }),
        b = wick.tensor({ true, false, true }, { dtype = "bool" }),
        f16 = wick.tensor({ 0.5, -2, 1024 }, { dtype = "float16" }),
        bf16 = wick.tensor({ 0.5, -2, 1024 }, { dtype = "bfloat16" }),
        scalar = wick.tensor(2.5),
        empty = wick.zeros(0, 3),
      },
      epoch = 12,
      lr = 0.0012345678901234567,
      big = 2 ^ 53,
      neg = -3.5,
      inf = math.huge, ninf = -math.huge, nan = 0 / 0,
      name = "run \0 with \n bytes",
      empty_string = "",
      done = false, ok = true,
      history = { 0.9, 0.5, 0.25 },
      [3] = "numeric key",
      nested = { deeper = { deepest = { wick.ones(1), "leaf" } } },
    }
  end

  local function assert_same_tensor(a, b, what)
    assert.is_true(wick.is_tensor(b), what)
    assert.are.equal(a.dtype, b.dtype, what)
    assert.are.same(shape_of(a), shape_of(b), what)
    assert.are.equal(tostring(a.device), tostring(b.device), what)
    assert.is_true(a:equal(b), what)
  end

  it("round-trips a nested training state", function()
    local path = dir .. "/ck.wick"
    local state = training_state()
    wick.save(state, path)
    local r = wick.load(path)
    for k, t in pairs(state.model) do assert_same_tensor(t, r.model[k], k) end
    for k, t in pairs(state.tensors) do assert_same_tensor(t, r.tensors[k], k) end
    assert_close(r.tensors.view, { { 1, 4 }, { 2, 5 }, { 3, 6 } })
    assert.are.equal(9007199254740991, r.tensors.i64[3]:item())
    assert.are.equal(12, r.epoch)
    assert.are.equal(0.0012345678901234567, r.lr)
    assert.are.equal(2 ^ 53, r.big)
    assert.are.equal(-3.5, r.neg)
    assert.are.equal(math.huge, r.inf)
    assert.are.equal(-math.huge, r.ninf)
    assert.is_true(r.nan ~= r.nan)
    assert.are.equal(state.name, r.name)
    assert.are.equal("", r.empty_string)
    assert.is_false(r.done)
    assert.is_true(r.ok)
    assert.are.same({ 0.9, 0.5, 0.25 }, r.history)
    assert.are.equal("numeric key", r[3])
    assert.is_nil(r["3"])
    assert.are.equal("leaf", r.nested.deeper.deepest[2])
    assert_same_tensor(state.nested.deeper.deepest[1], r.nested.deeper.deepest[1], "deepest")
    -- loaded tensors are fresh: no autograd history, not views of each other
    assert.is_false(r.model["fc1.weight"].requires_grad)
  end)

  it("round-trips a model's and an optimizer's state and the RNG state", function()
    wick.manual_seed(3)
    local m = wick.nn.Sequential(wick.nn.Linear(3, 4), wick.nn.BatchNorm1d(4))
    local opt = wick.optim.Adam(m:parameters(), { lr = 0.01 })
    m(wick.randn(5, 3)):sum():backward()
    opt:step()
    local path = dir .. "/train.wick"
    wick.save({ model = m:state_dict(), optim = opt:state_dict(), rng = wick.get_rng_state() }, path)
    local expected = wick.rand(4)
    local ck = wick.load(path)
    local m2 = wick.nn.Sequential(wick.nn.Linear(3, 4), wick.nn.BatchNorm1d(4))
    m2:load_state_dict(ck.model)
    for name, t in pairs(m:state_dict()) do assert.is_true(t:equal(m2:state_dict()[name]), name) end
    local opt2 = wick.optim.Adam(m2:parameters(), { lr = 0.5 })
    opt2:load_state_dict(ck.optim)
    assert.are.equal(0.01, opt2.param_groups[1].lr)
    assert.is_true(opt2.state[m2:get(1).weight].exp_avg:equal(opt.state[m:get(1).weight].exp_avg))
    wick.set_rng_state(ck.rng)
    assert.is_true(wick.rand(4):equal(expected))
  end)

  it("views that share storage still share it after loading (docs/api.md)", function()
    local path = dir .. "/shared.wick"
    local base = wick.arange(12):reshape(3, 4)
    wick.save({ base = base, t = base:t(), row = base[2], col = base:select(2, 3) }, path)
    local r = wick.load(path)
    assert.is_true(r.t:is_same_storage(r.base) and r.row:is_same_storage(r.base) and r.col:is_same_storage(r.base))
    assert.is_true(r.t:equal(base:t()) and r.row:equal(base[2]) and r.col:equal(base:select(2, 3)))
    r.base[2][3] = 100 -- a write through one view shows in the others
    assert.are.equal(100, r.row[3]:item())
    assert.are.equal(100, r.col[2]:item())
    assert.are.equal(100, r.t[3][2]:item())
    -- and a map_location function sees each storage once
    local calls = 0
    wick.load(path, { map_location = function(storage, location)
      calls = calls + 1
      assert.are.equal("cpu", location)
      assert.are.equal(12, storage:numel())
    end })
    assert.are.equal(1, calls)
  end)

  it("map_location: a device string or a device object sends everything there", function()
    local path = dir .. "/m.wick"
    wick.save({ a = wick.ones(2), b = { c = wick.zeros(3, { dtype = "int64" }) } }, path)
    for _, where in ipairs({ "meta", wick.device("meta") }) do
      local r = wick.load(path, { map_location = where })
      assert.are.equal("meta", r.a.device.type)
      assert.are.equal("meta", r.b.c.device.type)
      assert.are.equal("int64", r.b.c.dtype)
      assert.are.same({ 3 }, shape_of(r.b.c))
    end
    local r = wick.load(path, { map_location = "cpu" })
    assert.are.equal("cpu", r.a.device.type)
    assert_close(r.a, { 1, 1 })
    -- absent: back to where each tensor was saved from
    assert.are.equal("cpu", wick.load(path).a.device.type)
  end)

  it("map_location: a table renames saved locations and keeps the others", function()
    local path = dir .. "/t.wick"
    wick.save({ a = wick.ones(2), n = 1 }, path)
    local r = wick.load(path, { map_location = { cpu = "meta" } })
    assert.are.equal("meta", r.a.device.type)
    assert.are.equal(1, r.n)
    r = wick.load(path, { map_location = { ["cuda:1"] = "cuda:0" } })
    assert.are.equal("cpu", r.a.device.type)
    r = wick.load(path, { map_location = { cpu = wick.device("meta") } })
    assert.are.equal("meta", r.a.device.type)
  end)

  it("map_location: a function gets each storage as a 1-D CPU tensor and its location", function()
    local path = dir .. "/f.wick"
    wick.save({ a = wick.tensor({ { 1, 2 }, { 3, 4 } }), b = wick.tensor({ 5, 6, 7 }, { dtype = "float64" }) }, path)
    local calls = {}
    local r = wick.load(path, { map_location = function(storage, location)
      calls[#calls + 1] = { storage:numel(), location, storage:dim(), tostring(storage.device), storage:totable() }
      return nil
    end })
    assert.are.equal(2, #calls)
    table.sort(calls, function(x, y) return x[1] < y[1] end)
    assert.are.same({ 3, "cpu", 1, "cpu", { 5, 6, 7 } }, calls[1])
    assert.are.same({ 4, "cpu", 1, "cpu", { 1, 2, 3, 4 } }, calls[2])
    -- nil keeps the CPU tensor
    assert.are.equal("cpu", r.a.device.type)
    assert_close(r.a, { { 1, 2 }, { 3, 4 } })
    -- a returned tensor replaces it
    r = wick.load(path, { map_location = function(storage) return storage:to("meta") end })
    assert.are.equal("meta", r.a.device.type)
    assert.are.same({ 2, 2 }, shape_of(r.a))
    assert.are.equal("float64", r.b.dtype)
    r = wick.load(path, { map_location = function(storage) return storage * 2 end })
    assert_close(r.a, { { 2, 4 }, { 6, 8 } })
    -- a tensor of another size or dtype raises
    assert_error_has(function() wick.load(path, { map_location = function() return wick.zeros(1) end }) end, "map_location")
    assert_error_has(function() wick.load(path, { map_location = function(s) return s:to("int64") end }) end, "map_location")
  end)

  it("an unknown map_location string raises", function()
    local path = dir .. "/u.wick"
    wick.save({ a = wick.ones(1) }, path)
    assert_error_has(function() wick.load(path, { map_location = "gpu" }) end, "map_location", "gpu")
    assert_error_has(function() wick.load(path, { map_location = { cpu = "gpu" } }) end, "gpu")
  end)

  it("a corrupt or truncated file raises an error naming the file", function()
    local path = dir .. "/good.wick"
    wick.save(training_state(), path)
    local bytes = read(path)
    local bad = dir .. "/bad.wick"
    for _, cut in ipairs({ 0, 5, math.floor(#bytes / 2), #bytes - 1 }) do
      write(bad, bytes:sub(1, cut))
      assert_error_has(function() wick.load(bad) end, bad)
    end
    write(bad, bytes:sub(1, #bytes - 1))
    assert_error_has(function() wick.load(bad) end, "truncated")
    -- bytes changed in the middle
    write(bad, bytes:sub(1, 40) .. "\255\254garbage" .. bytes:sub(50))
    assert_error_has(function() wick.load(bad) end, bad)
    -- not a checkpoint at all; a Lua chunk is never run
    write(bad, "return os.exit(3)")
    assert_error_has(function() wick.load(bad) end, bad, "not a wick checkpoint")
    -- trailing garbage after a complete value
    write(bad, bytes .. "extra")
    assert_error_has(function() wick.load(bad) end, bad)
    -- a missing file
    assert_error_has(function() wick.load(dir .. "/missing.wick") end, "missing.wick")
  end)

  it("the write is atomic: no temporary files; a failed save leaves the previous file intact", function()
    local path = dir .. "/ck.wick"
    wick.save({ v = wick.ones(3), step = 1 }, path)
    assert.are.same({ "ck.wick" }, entries())
    wick.save({ v = wick.zeros(3), step = 2 }, path)
    assert.are.same({ "ck.wick" }, entries())
    assert.are.equal(2, wick.load(path).step)
    for _, badvalue in ipairs({
      { v = wick.ones(3), f = function() end },
      { v = wick.ones(3), co = coroutine.create(function() end) },
      { [true] = 1 },
      (function() local t = {}; t.self = t; return t end)(),
      { model = wick.nn.Linear(1, 1) },
    }) do
      assert.has_error(function() wick.save(badvalue, path) end)
      assert.are.same({ "ck.wick" }, entries())
      local r = wick.load(path)
      assert.are.equal(2, r.step)
      assert_close(r.v, { 0, 0, 0 })
    end
    -- a directory that does not exist
    assert_error_has(function() wick.save({ 1 }, dir .. "/no/such/dir/ck.wick") end, "no/such/dir")
    assert.are.same({ "ck.wick" }, entries())
  end)

  it("save and load raise on a path that is not a string", function()
    assert.has_error(function() wick.save({ 1 }, nil) end)
    assert.has_error(function() wick.load(nil) end)
  end)
end)

describe("a dataset of dict samples", function()
  it("ds[i] is the sample table itself (the data-loading tutorial's sample['image'])", function()
    local Faces = data.Dataset:extend("Faces")
    function Faces:len() return 2 end
    function Faces:get(i) return { image = wick.ones(2) * i, landmarks = wick.zeros(3) } end
    local ds = Faces()
    assert.are.same({ 2, 2 }, ds[2].image:tolist())
    local seen = 0
    for batch in data.DataLoader(ds, { batch_size = 2 }) do
      assert.are.same({ 2, 2 }, batch.image:size())
      seen = seen + 1
    end
    assert.are.equal(1, seen)
  end)
end)

describe("random_split with a positional generator", function()
  it("takes the generator as PyTorch's third argument", function()
    local ds = wick.data.TensorDataset(wick.arange(20))
    local a1, a2 = wick.data.random_split(ds, { 0.85, 0.15 }, wick.Generator():manual_seed(2024))
    local b1 = wick.data.random_split(ds, { 0.85, 0.15 }, { generator = wick.Generator():manual_seed(2024) })
    assert.are.equal(17, a1:len())
    assert.are.equal(3, a2:len())
    for i = 1, 17 do assert.are.equal(b1:get(i):item(), a1:get(i):item()) end
  end)
end)
