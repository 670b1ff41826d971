-- wick.data against PyTorch 2.15's torch.utils.data (the venv's, default dtype
-- float32; 0-based indices plus 1): a nil sample or a nil field (Python's None)
-- is default_collate's TypeError, never a short column or an empty pass;
-- multiprocessing_context needs num_workers > 0; default_collate's dtype for
-- bools mixed with numbers; samplers and batch samplers that are only
-- iterable; the IterableDataset's sampler error showing the list; and
-- worker_init_fn called once a pass (one worker: batches are made in this process) with get_worker_info() giving its WorkerInfo.
local wick = require("wick")
local data = wick.data
local support = require("spec.support")
local assert_error_has = support.assert_error_has

local NONE = "default_collate: batch must contain tensors, numbers, booleans, strings, dicts or lists; found nil"

-- a map-style dataset of n samples, get(i) returning fn(i)'s values
local function map_ds(n, fn)
  local DS = data.Dataset:extend("DS")
  function DS:len() return n end
  function DS:get(i) return fn(i) end
  return DS()
end

local function pass(loader)
  local out = {}
  for x, y in loader do out[#out + 1] = { x, y } end
  return out
end

describe("a nil sample or field (Python's None) is default_collate's TypeError", function()
  it("a get that returns nothing: an error, not a pass of no batches", function()
    -- class DS(Dataset): __getitem__ returns None; list(DataLoader(DS(), batch_size=2)):
    -- TypeError default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists;
    -- found <class 'NoneType'>
    local ds = map_ds(4, function() end)
    assert_error_has(function() pass(data.DataLoader(ds, { batch_size = 2 })) end, NONE, "NoneType",
      "sample 1 of the batch")
    local explicit = map_ds(4, function() return nil end)
    assert_error_has(function() pass(data.DataLoader(explicit, { batch_size = 2 })) end, NONE, "NoneType")
  end)

  it("a nil second value in some samples: an error naming it, never a shorter column", function()
    local odd = map_ds(4, function(i) return wick.zeros(2), (i % 2 == 1) and 5 or nil end)
    assert_error_has(function() pass(data.DataLoader(odd, { batch_size = 2 })) end, NONE, "sample 2 of the batch",
      "value 2")
    -- the first sample's value nil: not "the batch is empty"
    local even = map_ds(4, function(i) return wick.zeros(2), (i % 2 == 0) and 5 or nil end)
    local ok, err = pcall(pass, data.DataLoader(even, { batch_size = 2 }))
    assert.is_false(ok)
    assert.is_nil(tostring(err):find("the batch is empty", 1, true))
    assert_error_has(function() pass(data.DataLoader(even, { batch_size = 2 })) end, NONE, "sample 1 of the batch",
      "value 2")
    -- a nil first value
    local first = map_ds(2, function(i) return (i == 2) and wick.zeros(1) or nil, i end)
    assert_error_has(function() pass(data.DataLoader(first, { batch_size = 2 })) end, NONE, "value 1")
    -- samples of fewer values than others (a trailing nil dropped by unpack)
    local short = map_ds(2, function(i) if i == 1 then return wick.zeros(1), 3 end return wick.zeros(1) end)
    assert_error_has(function() pass(data.DataLoader(short, { batch_size = 2 })) end, NONE, "sample 2", "value 2")
    -- the samples that have all their values still load
    local full = map_ds(4, function(i) return wick.tensor({ i }), i end)
    local batches = pass(data.DataLoader(full, { batch_size = 2 }))
    assert.are.same({ { 1 }, { 2 } }, batches[1][1]:totable())
    assert.are.same({ 3, 4 }, batches[2][2]:totable())
  end)

  it("an IterableDataset's samples: a nil value is an error, a nil first value does not end the stream", function()
    local S = data.IterableDataset:extend("S")
    function S:init(nil_at) self.nil_at = nil_at end
    function S:iter()
      local k, nil_at = 0, self.nil_at
      return function()
        k = k + 1
        if k <= 4 then return wick.tensor({ k }), (k ~= nil_at) and k or nil end
      end
    end
    assert_error_has(function() pass(data.DataLoader(S(2), { batch_size = 2 })) end, NONE, "sample 2 of the batch",
      "value 2")
    assert_error_has(function() pass(data.DataLoader(S(1), { batch_size = 2 })) end, NONE, "sample 1 of the batch")
    local batches = pass(data.DataLoader(S(0), { batch_size = 2 }))
    assert.are.equal(2, #batches)
    assert.are.same({ 3, 4 }, batches[2][2]:totable())
    -- a nil first value followed by a value is a sample, not the end
    local T = data.IterableDataset:extend("T")
    function T:iter()
      local k = 0
      return function()
        k = k + 1
        if k == 1 then return wick.zeros(1), 1 elseif k == 2 then return nil, 2 end
      end
    end
    assert_error_has(function() pass(data.DataLoader(T(), { batch_size = 2 })) end, NONE, "sample 2", "value 1")
    assert_error_has(function() pass(data.DataLoader(data.ChainDataset({ T() }), { batch_size = 2 })) end, NONE)
    -- without automatic batching the loop would end there: an error too
    assert_error_has(function() pass(data.DataLoader(T(), { batch_size = false })) end, "first value is nil")
  end)

  it("default_collate itself: a nil in the batch, in a list sample, or a key only later samples have", function()
    -- default_collate([None, None]) and ([None, 1]): TypeError ... found <class 'NoneType'>
    assert_error_has(function() data.default_collate({ nil, 1 }) end, NONE, "NoneType", "sample 1")
    assert_error_has(function() data.default_collate({ 1, nil, 3 }) end, NONE, "sample 2")
    assert_error_has(function() data.default_collate({ wick.zeros(2), nil, wick.zeros(2) }) end, NONE, "sample 2")
    -- default_collate([(t, None), (t, 5)]): TypeError ... NoneType
    assert_error_has(function() data.default_collate({ { 1, 2, 3 }, { 4, nil, 6 } }) end, NONE, "sample 2", "item 2")
    assert_error_has(function() data.default_collate({ { 4, nil, 6 }, { 1, 2, 3 } }) end, NONE, "sample 1", "item 2")
    assert_error_has(function() data.default_collate({ { x = 1, y = 5 }, { x = 2 } }) end,
      "sample 2 has no key 'y' that sample 1 has")
    assert_error_has(function() data.default_collate({ { x = 1 }, { x = 2, y = 5 } }) end,
      "sample 1 has no key 'y' that sample 2 has")
    assert_error_has(function() data.default_collate({}) end, "the batch is empty")
    assert_error_has(function() data.default_collate({ { 0, 1 }, { 2 } }) end,
      "each element in list of batch should be of equal size")
    local nested = data.default_collate({ { a = { 1, 2 } }, { a = { 3, 4 } } })
    assert.are.same({ 1, 3 }, nested.a[1]:totable())
  end)
end)

describe("DataLoader's multiprocessing_context", function()
  local ds = data.TensorDataset(wick.arange(3))
  it("needs num_workers > 0, and names a start method", function()
    -- DataLoader(TensorDataset(torch.arange(3)), multiprocessing_context="spawn"): ValueError
    assert_error_has(function() data.DataLoader(ds, { multiprocessing_context = "spawn" }) end,
      "DataLoader: multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
      .. "but got num_workers=0")
    assert_error_has(function() data.DataLoader(ds, { num_workers = 0, multiprocessing_context = "fork" }) end,
      "but got num_workers=0")
    assert_error_has(function() data.DataLoader(ds, { num_workers = 2, multiprocessing_context = "x" }) end,
      "multiprocessing_context option should specify a valid start method in ['fork', 'spawn', 'forkserver'], "
      .. "but got multiprocessing_context='x'")
    local l = data.DataLoader(ds, { num_workers = 2, multiprocessing_context = "forkserver" })
    assert.are.equal("forkserver", l.multiprocessing_context)
    assert.is_nil(data.DataLoader(ds).multiprocessing_context)
  end)
end)

describe("default_collate of booleans mixed with numbers", function()
  it("has PyTorch's dtype, which the first value decides", function()
    -- torch 2.15, default dtype float32: default_collate(batch).dtype
    local cases = {
      { { true, 1 }, "int64", { 1, 1 } },
      { { 1, true }, "int64", { 1, 1 } },
      { { true, 1.5 }, "float32", { 1, 1.5 } },
      { { 1.5, true }, "float64", { 1.5, 1 } },
      { { false, true }, "bool", { false, true } },
      { { true, false, 1 }, "int64", { 1, 0, 1 } },
      { { true, 1.5, 2 }, "float32", { 1, 1.5, 2 } },
      { { 1.5, 2, true }, "float64", { 1.5, 2, 1 } },
      { { 2, false }, "int64", { 2, 0 } },
    }
    for _, c in ipairs(cases) do
      local t = data.default_collate(c[1])
      assert.are.equal(c[2], t.dtype)
      assert.are.same(c[3], t:totable())
    end
    -- through the loader: an array of {flag, label} samples
    local flags, labels = data.DataLoader({ { true, 1 }, { false, 2 } }, { batch_size = 2 }):iter()()
    assert.are.equal("bool", flags.dtype)
    assert.are.equal("int64", labels.dtype)
    -- a bool first follows the default dtype, as torch.tensor([True, 1.5])
    local old = wick.get_default_dtype()
    wick.set_default_dtype("float64")
    local ok, t = pcall(data.default_collate, { true, 1.5 })
    wick.set_default_dtype(old)
    assert.is_true(ok)
    assert.are.equal("float64", t.dtype)
  end)
end)

describe("samplers and batch samplers that are only iterable", function()
  local ds = data.TensorDataset(wick.tensor({ 10, 11, 12 }))
  -- an object with iter() and no len(): PyTorch's class It: __iter__ only
  local function iterable(list)
    return { iter = function()
      local k = 0
      return function() k = k + 1; return list[k] end
    end }
  end
  local function firsts(loader)
    local out = {}
    for x in loader do out[#out + 1] = x:totable() end
    return out
  end

  it("load; len(loader) is PyTorch's TypeError", function()
    -- DataLoader(TensorDataset(t), sampler=It()) with It yielding 2, 0, 1: [[12], [10], [11]];
    -- len(L): TypeError object of type 'It' has no len()
    local l = data.DataLoader(ds, { sampler = iterable({ 3, 1, 2 }) })
    assert.are.same({ { 12 }, { 10 }, { 11 } }, firsts(l))
    assert.are.same({ { 12 }, { 10 }, { 11 } }, firsts(l)) -- each pass calls iter() again
    assert_error_has(function() l:len() end, "has no len()")
    local b = data.DataLoader(ds, { sampler = iterable({ 3, 1, 2 }), batch_size = 2 })
    assert.are.same({ { 12, 10 }, { 11 } }, firsts(b))
    assert_error_has(function() b:len() end, "has no len()")
    -- list(BatchSampler(It(), 2, False)): [[2, 0], [1]]; len(): TypeError
    local bs = data.BatchSampler(iterable({ 3, 1, 2 }), 2, false)
    local got = {}
    for chunk in bs:iter() do got[#got + 1] = chunk end
    assert.are.same({ { 3, 1 }, { 2 } }, got)
    assert_error_has(function() bs:len() end, "object of type 'table' has no len()")
    -- batch_sampler=ItB() yielding [2, 0], [1]: [[12, 10], [11]]
    local lb = data.DataLoader(ds, { batch_sampler = iterable({ { 3, 1 }, { 2 } }) })
    assert.are.same({ { 12, 10 }, { 11 } }, firsts(lb))
    assert_error_has(function() lb:len() end, "DataLoader:len", "has no len()")
    -- a Sampler subclass with iter() only
    local It = data.Sampler:extend("It")
    function It:iter() return coroutine.wrap(function() coroutine.yield(2) end) end
    assert.are.same({ { 11 } }, firsts(data.DataLoader(ds, { sampler = It() })))
    -- no iter(): still an error
    assert_error_has(function() data.DataLoader(ds, { sampler = { len = function() return 1 end } }) end,
      "expected a sampler")
    assert_error_has(function() data.DataLoader(ds, { sampler = 3 }) end, "expected a sampler")
  end)

  it("an IterableDataset's sampler error shows the value as PyTorch does", function()
    local S = data.IterableDataset:extend("S")
    function S:iter() return function() end end
    -- DataLoader(S(), sampler=[0, 1]): ValueError ... expected unspecified sampler option, but got sampler=[0, 1]
    assert_error_has(function() data.DataLoader(S(), { sampler = { 0, 1 } }) end,
      "DataLoader with IterableDataset: expected unspecified sampler option, but got sampler=[0, 1]")
    assert_error_has(function() data.DataLoader(S(), { batch_sampler = { { 0, 1 }, { 2 } } }) end,
      "expected unspecified batch_sampler option, but got batch_sampler=[[0, 1], [2]]")
    assert_error_has(function() data.DataLoader(S(), { shuffle = true }) end, "but got shuffle=true")
  end)
end)

describe("worker_init_fn and get_worker_info", function()
  local ds = data.TensorDataset(wick.arange(4))

  it("calls worker_init_fn(0) once a pass, get_worker_info() the one worker's WorkerInfo then", function()
    local calls = {}
    local l = data.DataLoader(ds, { batch_size = 2, num_workers = 2, worker_init_fn = function(id)
      local info = data.get_worker_info()
      calls[#calls + 1] = { id = id, info_id = info.id, workers = info.num_workers,
        same = rawequal(info.dataset, ds), class = wick.isinstance(info, data.WorkerInfo) }
    end })
    assert.are.equal(0, #calls) -- not when the loader is made
    local n = 0
    for _ in l do n = n + 1 end
    assert.are.equal(2, n)
    -- (the batches are made in this process: one worker, whatever num_workers says)
    assert.are.same({ { id = 0, info_id = 0, workers = 1, same = true, class = true } }, calls)
    assert.is_nil(data.get_worker_info()) -- outside the call
    for _ in l:iter() do end
    assert.are.equal(2, #calls)
    -- with persistent_workers, only the first pass starts the worker
    local count = 0
    local p = data.DataLoader(ds, { num_workers = 3, persistent_workers = true, worker_init_fn = function()
      count = count + 1
    end })
    for _ in p do end
    for _ in p do end
    assert.are.equal(1, count)
    -- with num_workers = 0 there are no workers to start
    local none = 0
    for _ in data.DataLoader(ds, { worker_init_fn = function() none = none + 1 end }) do end
    assert.are.equal(0, none)
  end)

  it("PyTorch's IterableDataset sharding example keeps every sample; an error propagates, no WorkerInfo left", function()
    -- torch.utils.data's docs: worker_init_fn narrows dataset.start/end to the worker's shard
    local S = data.IterableDataset:extend("S")
    function S:init(first, last) self.first, self.last = first, last end
    function S:iter()
      local k = self.first - 1
      return function() k = k + 1; if k <= self.last then return wick.tensor({ k }) end end
    end
    local s = S(3, 7)
    local function worker_init_fn(worker_id)
      local info = data.get_worker_info()
      local dataset = info.dataset
      local overall_start, overall_end = dataset.first, dataset.last
      local per_worker = math.ceil((overall_end - overall_start + 1) / info.num_workers)
      dataset.first = overall_start + worker_id * per_worker
      dataset.last = math.min(dataset.first + per_worker - 1, overall_end)
    end
    local got = {}
    for x in data.DataLoader(s, { num_workers = 2, worker_init_fn = worker_init_fn }) do got[#got + 1] = x:item() end
    assert.are.same({ 3, 4, 5, 6, 7 }, got) -- PyTorch's two workers together give the same samples
    local bad = data.DataLoader(ds, { num_workers = 2, worker_init_fn = function(id)
      error("worker " .. id .. " failed")
    end })
    assert_error_has(function() for _ in bad do end end, "worker 0 failed")
    assert.is_nil(data.get_worker_info())
  end)

  it("WorkerInfo: PyTorch's fields, frozen", function()
    local info = data.WorkerInfo({ id = 1, num_workers = 2, seed = 7, dataset = ds })
    assert.are.same({ 1, 2, 7 }, { info.id, info.num_workers, info.seed })
    assert.are.equal(ds, info.dataset)
    assert.is_nil(info.rng)
    assert.is_true(wick.isinstance(info, data.WorkerInfo))
    assert.are.equal("WorkerInfo(id=1, num_workers=2, seed=7, dataset=TensorDataset)", tostring(info))
    assert_error_has(function() info.id = 3 end, "cannot assign to field 'id'")
    assert_error_has(function() return info.idd end, "'WorkerInfo' object has no attribute 'idd'")
    assert_error_has(function() data.WorkerInfo({ id = 0, num_workerz = 2 }) end, "num_workerz")
  end)
end)
