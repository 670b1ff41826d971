-- wick.data: the dataset protocols (map-style: ds:len(), ds:get(i) -> values;
-- iterable: ds:iter() -> an iterator of samples), the Dataset, IterableDataset
-- and Sampler base classes, TensorDataset, Subset, ConcatDataset, StackDataset,
-- ChainDataset and random_split, the samplers (the protocol s:len(), s:iter();
-- Sequential, Random, SubsetRandom, WeightedRandom, Batch and
-- DistributedSampler), collation, DataLoader and Fashion-MNIST.
local wick = require("wick")
local check = require("wick.argcheck")
local unpack = table.unpack or unpack -- Lua 5.2+ (WICK_LUA54) and LuaJIT

local data = {}

--- A random permutation of 1..n from wick's generator (repeatable under
--- wick.manual_seed): Fisher-Yates over uniform draws.
function data.randperm(n)
  check.int(n, "randperm", "n", 0)
  local u = n > 0 and wick._rand(n, { dtype = "float64" }):totable() or {}
  local p = {}
  for i = 1, n do p[i] = i end
  for i = n, 2, -1 do
    local j = math.floor(u[i] * i) + 1
    p[i], p[j] = p[j], p[i]
  end
  return p
end
-- (wick.randperm, the tensor form, is in ops.lua)

-- fn(...) drawing from `gen` (a wick.Generator, which leaves wick's own
-- generator as it was), or from wick's generator when gen is nil.
local function drawing(gen, fn, ...)
  if gen == nil then return fn(...) end
  return gen:_run(fn, ...)
end

-- The generator an options table names: {generator = g} (PyTorch's), or
-- {seed = s}, a generator of its own seeded with s; nil: wick's.
local function generator_of(opts, fn)
  local g = opts.generator
  if g ~= nil then
    if getmetatable(g) ~= wick._Generator then check.expected(fn, "generator", "a wick.Generator", g) end
    return g
  end
  return opts.seed and wick.Generator():manual_seed(opts.seed) or nil
end

-- opts, or {generator = opts} when it is a wick.Generator (PyTorch's positional
-- generator: never read as an options table)
local function with_generator(opts)
  if getmetatable(opts) == wick._Generator then return { generator = opts } end
  return opts
end

local is_callable = check.is_callable

-- v is a plain Lua array: a table without a metatable whose keys are exactly
-- 1..#v (the empty table too). A non-empty one is Python's list or tuple.
local function is_array(v)
  if type(v) ~= "table" or (getmetatable(v) ~= nil and getmetatable(v) ~= check.list_mt) then return false end
  local count = 0
  for _ in pairs(v) do count = count + 1 end
  return count == #v
end
local function is_list(v) return is_array(v) and v[1] ~= nil end

-- self, checked to be an instance of class (m.len() instead of m:len() names the method).
local function own(self, class, fn)
  if type(self) ~= "table" or getmetatable(self) ~= class then
    check.expected(class.__name .. ":" .. fn, "self", "a " .. class.__name, self)
  end
  return self
end

-- obj:len(), checked: obj is a dataset or a sampler (`what`) and gives a count;
-- a plain Lua array (of indices: PyTorch's samplers take any sized iterable) its #.
local function len_of(obj, fn, what)
  if is_array(obj) then return #obj end
  if type(obj) ~= "table" or not is_callable(obj.len) then
    check.expected(fn, what, ("a %s (an object with a len() method)"):format(what), obj)
  end
  local n = obj:len()
  if type(n) ~= "number" or n < 0 or n ~= math.floor(n) or n > 2 ^ 53 then
    check.fail(fn, "the %s's len() gave %s, expected a non-negative integer", what, check.describe(n))
  end
  return n
end

-- Index i of n samples as 1..n (negative counts from the end, as in t[i]), or an error.
-- A one-element integer tensor is the number it holds (Python's __index__: a
-- sample drawn with wick.randperm(n)[k]).
local function position(i, n, fn)
  if check.is_tensor(i) and i:numel() == 1 and not i:is_floating_point() and i.dtype ~= "bool" then i = i:item() end
  if type(i) ~= "number" or i ~= math.floor(i) then check.expected(fn, "index", "an integer", i) end
  local j = i < 0 and i + n + 1 or i
  if j < 1 or j > n then
    check.fail(fn, "index %s is out of range for a dataset of %d samples "
      .. "(indices are 1-based: 1..%d, or -1 for the last)", check.describe(i), n, n)
  end
  return j
end

-- ---- classes: Dataset, IterableDataset, Sampler ----

-- Name(...) builds an instance of the class Name and calls its init(...).
local WICK_DIR = debug.getinfo(1, "S").source:match("^@(.*/)data%.lua$") -- (lua/wick/)
local function construct(cls, ...)
  local obj = setmetatable({}, cls)
  -- an init of one's own takes PyTorch's keywords, as a module's does (MeshGraphNets'
  -- FpcDataset(data_root=..., split='train') is FpcDataset({data_root = ..., split = "train"}))
  local n, init = select("#", ...), obj.init
  local src = n > 0 and type(init) == "function" and debug.getinfo(init, "S").source
  if src and not (WICK_DIR and src:sub(2, #WICK_DIR + 1) == WICK_DIR) then
    require("wick.nn.module") -- (which gives wick.nn.common its bind_keywords)
    local bound, top = require("wick.nn.common").bind_keywords(cls, "init", init, n, ...)
    if bound then
      init(obj, unpack(bound, 1, top))
      return obj
    end
  end
  obj:init(...)
  return obj
end

-- A class named `name`: its instances find their methods in it, then in
-- parent. `finish(class, name)`, given for a family's base class and inherited
-- by its subclasses, sets what each class needs of its own (metamethods are
-- not inherited): __index and __add.
local function new_class(parent, name, finish)
  local class = setmetatable({ super = parent, __name = name }, { __index = parent, __call = construct })
  if finish then class._finish = finish end
  class._finish(class, name)
  return class
end

--- Base:extend("Name") (Python's class Name(Base)), for Dataset, IterableDataset,
--- Sampler and their subclasses: Name(...) builds an instance and calls its
--- init(...); Name.super is Base.
local function extend(self, name)
  local fn = (type(self) == "table" and rawget(self, "__name") or "Dataset") .. ".extend"
  if type(self) ~= "table" or getmetatable(self) == nil or getmetatable(self).__call ~= construct then
    check.expected(fn, "self", "a class (call it as Base:extend(\"Name\"))", self)
  end
  if name ~= nil then check.string(name, fn, "name") end
  return new_class(self, name or self.__name)
end

local function class_name(self)
  local class = type(self) == "table" and getmetatable(self)
  return type(class) == "table" and rawget(class, "__name") or "Dataset"
end

-- A method a subclass must define: an error naming the class and PyTorch's name for it.
local function abstract(method, what, python)
  return function(self)
    check.fail(class_name(self) .. ":" .. method, "not defined: a%s %s subclass defines %s (PyTorch's %s)",
      what:match("^[AEIOU]") and "n" or "", what, method == "get" and "get(i)" or method .. "()", python)
  end
end

-- A map-style dataset's instances take ds[i]: sample i as one table {x, y, ...}
-- (Python's tuple: an index gives one value, ds:get(i) several), or, when
-- get(i) returns one value (a tensor: PaLM's train_dataset[3][None, :]; a
-- dict-like plain table, {image = ..., landmarks = ...}; a number: a Subset of
-- a list), that value itself, as __getitem__'s; and ds1 + ds2 (a ConcatDataset).
-- (A TensorDataset's samples are PyTorch's tuples, one tensor too: {x[i]}, and so are a
-- Subset's or ConcatDataset's of one: ds:_tuple_samples() says so)
local function one_sample(tuple, ...)
  if select("#", ...) == 1 and not tuple then return (...) end
  return { ... }
end
local function map_style(class, name)
  class.__index = function(ds, k)
    if type(k) == "number" or check.is_tensor(k) then
      local tuple = ds._tuple_samples ~= nil and ds:_tuple_samples()
      return one_sample(tuple, ds:get(position(k, len_of(ds, name, "dataset"), name)))
    end
    if type(k) == "string" then return class[k] end
    local slice = class._slice -- (a dataset that takes a tensor key: TensorDataset)
    if type(k) == "table" and slice then return slice(ds, k) end
    check.fail(name, "a dataset's index is an integer (1-based) or a one-element integer tensor, got %s "
      .. "(a batch of samples: ds:get_batch(indices) where the dataset has it, else ds:get(i) for each)", check.describe(k))
  end
  class.__add = function(a, b) return data.ConcatDataset({ a, b }) end
end

--- Dataset: the base class of datasets (PyTorch's torch.utils.data.Dataset).
--- Dataset:extend("Name") makes a subclass; Name(...) builds an instance and
--- calls its init(...); a subclass defines len() and get(i) (PyTorch's
--- __len__ and __getitem__). Its instances take ds[i] and ds1 + ds2.
local Dataset = new_class(nil, "Dataset", map_style)
data.Dataset = Dataset
Dataset.extend = extend
function Dataset:init() end
Dataset.len = abstract("len", "Dataset", "__len__")
Dataset.get = abstract("get", "Dataset", "__getitem__")

-- An iterable dataset's instances are not indexed (they give their samples in
-- order), and ds1 + ds2 chains them (a ChainDataset).
local function iterable_style(class, name)
  class.__index = function(ds, k)
    if type(k) == "string" then return class[k] end
    check.fail(name, "an iterable dataset is not indexed, got the key %s (its samples come in order: "
      .. "for x, y in ds:iter() do ... end)", check.describe(k))
  end
  class.__add = function(a, b) return data.ChainDataset({ a, b }) end
end

--- IterableDataset: the base class of iterable-style datasets (PyTorch's
--- torch.utils.data.IterableDataset): IterableDataset:extend("Name"), whose
--- iter() (PyTorch's __iter__) returns an iterator function giving one sample
--- per call, as its values (x, y), and nil at the end; a coroutine.wrap
--- generator is one. len() is optional. A Dataset for wick.isinstance.
local IterableDataset = new_class(nil, "IterableDataset", iterable_style)
data.IterableDataset = IterableDataset
IterableDataset.super = Dataset
IterableDataset.extend = extend
IterableDataset.init = Dataset.init
IterableDataset.iter = abstract("iter", "IterableDataset", "__iter__")

-- ds is an iterable-style dataset: iter() and no get(i) (a map-style dataset
-- may have an iter() of its own).
local function is_iterable(ds)
  return type(ds) == "table" and is_callable(ds.iter) and not is_callable(ds.get)
end

--- Sampler: the base class of samplers (PyTorch's torch.utils.data.Sampler):
--- Sampler:extend("Name"), defining iter() (an iterator function of 1-based
--- indices, or of arrays of them for a batch_sampler) and len().
local Sampler = new_class(nil, "Sampler", function(class) class.__index = class end)
data.Sampler = Sampler
Sampler.extend = extend
Sampler.init = Dataset.init
Sampler.len = abstract("len", "Sampler", "__len__")
Sampler.iter = abstract("iter", "Sampler", "__iter__")

-- ---- WorkerInfo, get_worker_info ----
-- A WorkerInfo's fields, kept out of the object so that none can be assigned
-- (PyTorch's is a frozen dataclass).
local worker_fields = setmetatable({}, { __mode = "k" })
local WorkerInfo = { __name = "WorkerInfo" }
local WORKER_FIELDS = { id = "integer", num_workers = "integer", seed = "integer", dataset = "any" }
WorkerInfo.__index = function(info, k)
  local fields = worker_fields[info]
  if fields[k] ~= nil or k == "rng" then return fields[k] end
  check.fail("WorkerInfo", "'WorkerInfo' object has no attribute '%s' (it has id, num_workers, seed and dataset)",
    tostring(k))
end
WorkerInfo.__newindex = function(_, k)
  check.fail("WorkerInfo", "cannot assign to field '%s' (PyTorch's FrozenInstanceError)", tostring(k))
end
WorkerInfo.__tostring = function(info)
  local f = worker_fields[info]
  local class = type(f.dataset) == "table" and getmetatable(f.dataset)
  return ("WorkerInfo(id=%d, num_workers=%d, seed=%d, dataset=%s)"):format(f.id, f.num_workers, f.seed,
    type(class) == "table" and rawget(class, "__name") or check.describe(f.dataset))
end
--- WorkerInfo{id =, num_workers =, seed =, dataset =}: what get_worker_info()
--- gives during a worker_init_fn call (PyTorch's torch.utils.data.WorkerInfo;
--- its fields cannot be assigned).
setmetatable(WorkerInfo, { __call = function(_, opts)
  opts = check.options(opts, "WorkerInfo", WORKER_FIELDS)
  local fields = { dataset = opts.dataset }
  for _, k in ipairs({ "id", "num_workers", "seed" }) do fields[k] = check.int(opts[k], "WorkerInfo", k) end
  local info = setmetatable({}, WorkerInfo)
  worker_fields[info] = fields
  return info
end })
data.WorkerInfo = WorkerInfo

local current_worker = nil -- the WorkerInfo of the worker_init_fn call in progress

--- get_worker_info(): the WorkerInfo of the worker whose worker_init_fn is being
--- called, else nil, as PyTorch's in the main process (wick makes every batch in
--- the calling process).
function data.get_worker_info() return current_worker end

-- ---- collation ----

-- How many entries the array `t` spans, nils inside counted: its largest positive
-- integer key when all its keys are positive integers (Python's [x, None, z] is the
-- Lua table {x, nil, z}), else nil (a dict-like table).
local function array_span(t)
  local top = 0
  for k in pairs(t) do
    if type(k) ~= "number" or k < 1 or k ~= math.floor(k) then return nil end
    if k > top then top = k end
  end
  return top
end

-- PyTorch's TypeError for a value default_collate cannot batch (a nil: Python's
-- None), naming where it is.
local function cannot_collate(v, i, where)
  local found = v == nil and "nil (Python's <class 'NoneType'>)" or check.describe(v)
  check.fail("default_collate", "batch must contain tensors, numbers, booleans, strings, dicts or lists; found %s "
    .. "(sample %d of the batch%s)", found, i, where and (", " .. where) or "")
end

-- where the column `k` of a table sample is, for the errors
local function field_name(where, k, list)
  local here = list and ("item " .. tostring(k)) or ("key '" .. tostring(k) .. "'")
  return where and (where .. ", " .. here) or here
end

-- The batch of samples[1..n] (a nil among them is an error naming it; `where`
-- says which field of the loader's samples they are).
local function collate_column(samples, n, where)
  for i = 1, n do
    if samples[i] == nil then cannot_collate(nil, i, where) end
  end
  local first = samples[1]
  if wick.is_tensor(first) then
    return wick.stack(samples, 1)
  elseif type(first) == "number" or type(first) == "boolean" then
    -- PyTorch's: a float first (a non-whole number here) gives float64; an int or a bool
    -- first gives torch.tensor(batch)'s dtype: bool when all are bools, int64 when all are
    -- whole (bools count as 0 and 1), else the default dtype. A Lua whole number may be
    -- Python's 2.0 as well as 2: mixed with non-whole numbers, they all count as floats.
    local bools, whole, numbers = true, true, {}
    for i = 1, n do
      local v = samples[i]
      if type(v) == "boolean" then
        numbers[i] = v and 1 or 0
      elseif type(v) == "number" then
        bools, numbers[i] = false, v
        if v ~= math.floor(v) or math.abs(v) >= 2 ^ 53 then whole = false end
      else
        return wick.tensor(samples) -- (wick.tensor's error names the value it cannot take)
      end
    end
    if bools then return wick.tensor(samples, { dtype = "bool" }) end
    if whole then return wick.tensor(numbers, { dtype = "int64" }) end
    local dtype = type(first) == "boolean" and wick.get_default_dtype() or "float64"
    return wick.tensor(numbers, { dtype = dtype })
  elseif type(first) == "table" then
    local span, out = array_span(first), {}
    local function unequal(i, s, size)
      check.fail("default_collate", "each element in list of batch should be of equal size (sample %d is %s, "
        .. "sample 1 %s%s)", i, type(s) == "table" and size(s) or check.describe(s), size(first),
        where and (", " .. where) or "")
    end
    if span and span > 0 then -- lists (Python's lists and tuples): item by item, a nil among them an error
      local function list_size(s)
        local m = array_span(s)
        return m and ("a list of " .. m) or "a table with keys"
      end
      for i = 1, n do
        local s = samples[i]
        local own_span = type(s) == "table" and array_span(s)
        if not own_span then unequal(i, s, list_size) end
        for k = 1, own_span do
          if s[k] == nil then cannot_collate(nil, i, field_name(where, k, true)) end
        end
        if own_span ~= span then unequal(i, s, list_size) end
      end
      for k = 1, span do
        local column = {}
        for i = 1, n do column[i] = samples[i][k] end
        out[k] = collate_column(column, n, field_name(where, k, true))
      end
      return out
    end
    local function table_size(s) return "a table of " .. #s end
    local keys = {}
    for k in pairs(first) do keys[k] = true end
    for i = 1, n do
      local s = samples[i]
      if type(s) ~= "table" or #s ~= #first then unequal(i, s, table_size) end
      for k in pairs(s) do -- (a key sample 1 lacks: its nil there, Python's None, would drop the column)
        if not keys[k] then
          check.fail("default_collate", "sample 1 has no key '%s' that sample %d has (a nil value, Python's None, "
            .. "is no key in a Lua table: default_collate cannot batch it%s)", tostring(k), i,
            where and ("; in " .. where) or "")
        end
      end
    end
    for k in pairs(first) do
      local column = {}
      for i = 1, n do
        local s = samples[i]
        if s[k] == nil then -- (a short column would pair labels with the wrong inputs: PyTorch's KeyError)
          check.fail("default_collate", "sample %d has no key '%s' that sample 1 has (PyTorch's KeyError; a nil "
            .. "value, Python's None, is no key in a Lua table%s)", i, tostring(k), where and ("; in " .. where) or "")
        end
        column[i] = s[k]
      end
      out[k] = collate_column(column, n, field_name(where, k, false))
    end
    return out
  elseif type(first) ~= "string" then
    cannot_collate(first, 1, where)
  end
  return samples
end

--- default_collate(samples): PyTorch's. Tensors are stacked; numbers become a
--- tensor: int64 when all are whole (Python's ints: class labels), else float64
--- (Python's floats); booleans a bool tensor (mixed with numbers: PyTorch's dtype,
--- which the first one decides); tables are collated key by key
--- (arrays, Python's lists, position by position, all of one length); other
--- values (strings) stay a list. A nil (Python's None), in the batch or in a
--- sample, is PyTorch's TypeError naming it.
local function collate(samples)
  check.table(samples, "default_collate", "samples")
  local n = array_span(samples) or #samples
  if n == 0 then check.fail("default_collate", "the batch is empty (PyTorch's IndexError)") end
  return collate_column(samples, n)
end
data.default_collate = collate

--- default_convert(data): PyTorch's, the collate_fn of a loader without
--- automatic batching (batch_size = false): it turns NumPy arrays into tensors,
--- and Lua has none, so each value stays as it is.
local function convert(value) return value end
data.default_convert = convert

local function pack_values(...) return { n = select("#", ...), ... } end

-- the packed values s hold a non-nil one (an iterator's nil first value ends the
-- iteration only when nothing follows it: `return nil, y` is a sample whose x is nil)
local function has_values(s)
  for k = 1, s.n do
    if s[k] ~= nil then return true end
  end
  return false
end

-- One sample, get(i)'s (or an iterable dataset's iterator's) values, packed:
-- one non-empty plain array returned alone ({x, y}, Python's list or tuple
-- sample) is its values, as several values are.
local function sample_of(...)
  local first = ...
  if select("#", ...) == 1 and is_list(first) then return pack_values(unpack(first, 1, #first)) end
  return pack_values(...)
end

-- The sample as PyTorch's collate_fn sees it: its one value, or the array of
-- its values (Python's tuple; nothing, Python's None, is the empty array).
local function sample_value(s) return s.n == 1 and s[1] or { unpack(s, 1, s.n) } end

-- collate_fn's results as the batch's values: several results, or one array
-- of them (Python's `return xs, ys`; a table with other keys is one value).
local function results_of(...)
  local r = pack_values(...)
  if r.n == 1 and is_list(r[1]) then return r[1] end
  return { unpack(r, 1, r.n) }
end

-- A batch (a table {x, y, ...}: the values the loop gets) of the packed
-- samples: collated value by value, or by a collate_fn of the user's, which
-- gets PyTorch's list of samples.
local function collate_samples(samples, collate_fn)
  if collate_fn ~= collate then
    local list = {}
    for k, s in ipairs(samples) do list[k] = sample_value(s) end
    return results_of(collate_fn(list))
  end
  -- as many columns as the longest sample has values: a nil value (Python's None; a
  -- shorter sample's missing ones) is default_collate's error, never a short column
  local batch, width, count = {}, 0, #samples
  for k, s in ipairs(samples) do
    if s.n == 0 or (s.n == 1 and s[1] == nil) then cannot_collate(nil, k) end
    if s.n > width then width = s.n end
  end
  for col = 1, width do
    local column = {}
    for k, s in ipairs(samples) do column[k] = s[col] end
    batch[col] = collate_column(column, count, "value " .. col)
  end
  return batch
end

-- The batch of `indices`: ds:get_batch(indices) where the dataset has it and
-- the collation is the default, else its samples collated.
local function fetch(ds, indices, collate_fn)
  if ds.get_batch and collate_fn == collate then return ds:get_batch(indices) end
  local samples = {}
  for k, i in ipairs(indices) do samples[k] = sample_of(ds:get(i)) end
  return collate_samples(samples, collate_fn)
end

-- One sample as the loop's values without automatic batching: through
-- collate_fn (default_convert), as one sample.
local function convert_sample(s, collate_fn)
  if collate_fn == convert and s.n > 1 then return { unpack(s, 1, s.n) } end -- (its values as they are, nils kept)
  return results_of(collate_fn(sample_value(s)))
end

-- ---- TensorDataset ----
-- A plain Lua array of samples as a map-style dataset (PyTorch's DataLoader takes
-- a list): the samples are its array part (#ds, ds[i]); a sample written as an
-- array ({label, text}, Python's tuple) is its values.
local ArrayDataset = Dataset:extend("ArrayDataset")
function ArrayDataset:init(samples)
  for i = 1, #samples do self[i] = samples[i] end
end
function ArrayDataset:len() return #self end
function ArrayDataset:get(i)
  local s = rawget(self, position(i, #self, "ArrayDataset:get"))
  if is_list(s) then return unpack(s, 1, #s) end
  return s
end

-- a dataset argument: a plain Lua array of samples is an ArrayDataset
-- (PyTorch's samplers, Subset and random_split take any sized list)
local function as_dataset(obj)
  -- a tensor: its slices along dim 1 (DataLoader(torch.arange(N)), node2vec's loader)
  if wick.is_tensor(obj) and obj:dim() > 0 then return data.TensorDataset(obj) end
  if is_array(obj) then return ArrayDataset(obj) end
  return obj
end

local TensorDataset = Dataset:extend("TensorDataset")
function TensorDataset._tuple_samples() return true end

--- TensorDataset(t1, t2, ...): sample i is (t1[i], t2[i], ...), along dim 1.
function data.TensorDataset(...)
  local tensors = { ... }
  local count = select("#", ...)
  if count == 0 then wick.error("TensorDataset: expected at least one tensor") end
  for i = 1, count do check.tensor(tensors[i], "TensorDataset", "tensor " .. i) end
  if tensors[1]:dim() == 0 then check.fail("TensorDataset", "tensor 1 is 0-dim: tensors need a first dimension of samples") end
  local n = tensors[1]:size(1)
  for i, t in ipairs(tensors) do
    if t:dim() == 0 or t:size(1) ~= n then
      wick.error(("TensorDataset: size mismatch between tensors: tensor 1 has %d samples, tensor %d has %s"):format(n, i, t:dim() == 0 and "none (0-dim)" or t:size(1)))
    end
  end
  return setmetatable({ tensors = tensors, n = n }, TensorDataset)
end

function TensorDataset:len() return own(self, TensorDataset, "len").n end

function TensorDataset:get(i)
  own(self, TensorDataset, "get")
  i = position(i, self.n, "TensorDataset:get")
  local out = {}
  for k, t in ipairs(self.tensors) do out[k] = t[i] end
  return unpack(out, 1, #self.tensors)
end

--- ds[key] with a table key: {t1[key], t2[key], ...}, the key applied to each
--- tensor (PyTorch's train_ds[a:b] is ds[{{a, b}}]: the samples a..b of each)
function TensorDataset._slice(ds, key)
  local out = {}
  for k, t in ipairs(ds.tensors) do out[k] = t[key] end
  return out
end

--- A whole batch at once, as one table {t1[indices], t2[indices], ...} (what
--- DataLoader uses when a dataset has it).
function TensorDataset:get_batch(indices)
  own(self, TensorDataset, "get_batch")
  check.table(indices, "TensorDataset:get_batch", "indices")
  local idx = wick.tensor(indices, { dtype = "int64", device = self.tensors[1].device })
  local out = {}
  for k, t in ipairs(self.tensors) do out[k] = t:index_select(1, idx) end
  return out
end

-- ---- Subset, ConcatDataset, random_split ----
local Subset = Dataset:extend("Subset")
function Subset:_tuple_samples() return self.dataset._tuple_samples ~= nil and self.dataset:_tuple_samples() end

--- Subset(dataset, indices): the samples of `dataset` at `indices` (a Lua array
--- or a 1-D tensor of 1-based indices), in that order.
function data.Subset(dataset, indices)
  dataset = as_dataset(dataset)
  if is_iterable(dataset) then check.fail("Subset", "a Subset takes a map-style dataset (get(i)), not an IterableDataset") end
  local n = len_of(dataset, "Subset", "dataset")
  if wick.is_tensor(indices) then indices = indices:totable() end
  check.table(indices, "Subset", "indices")
  local own_indices = {}
  for k = 1, #indices do own_indices[k] = position(indices[k], n, "Subset") end
  return setmetatable({ dataset = dataset, indices = own_indices }, Subset)
end

function Subset:len() return #own(self, Subset, "len").indices end

function Subset:get(i)
  own(self, Subset, "get")
  return self.dataset:get(self.indices[position(i, #self.indices, "Subset:get")])
end

--- The batch at `indices` of the subset, as TensorDataset:get_batch gives it.
function Subset:get_batch(indices)
  own(self, Subset, "get_batch")
  check.table(indices, "Subset:get_batch", "indices")
  local mapped = {}
  for k, i in ipairs(indices) do mapped[k] = self.indices[position(i, #self.indices, "Subset:get_batch")] end
  return fetch(self.dataset, mapped, collate)
end

local ConcatDataset = Dataset:extend("ConcatDataset")

--- ConcatDataset(datasets): the samples of each dataset of the array, one
--- after the other (PyTorch's; ds1 + ds2 makes one too).
function data.ConcatDataset(datasets)
  check.table(datasets, "ConcatDataset", "datasets")
  if #datasets == 0 then check.fail("ConcatDataset", "datasets should not be an empty array") end
  local list, sizes, total = {}, {}, 0
  for k = 1, #datasets do
    list[k] = as_dataset(datasets[k])
    if is_iterable(list[k]) then check.fail("ConcatDataset", "ConcatDataset does not support IterableDataset") end
    total = total + len_of(list[k], "ConcatDataset", "dataset")
    sizes[k] = total
  end
  return setmetatable({ datasets = list, cumulative_sizes = sizes }, ConcatDataset)
end

function ConcatDataset:_tuple_samples()
  local d = self.datasets[1]
  return d._tuple_samples ~= nil and d:_tuple_samples()
end
function ConcatDataset:len()
  local sizes = own(self, ConcatDataset, "len").cumulative_sizes
  return sizes[#sizes]
end

function ConcatDataset:get(i)
  i = position(i, own(self, ConcatDataset, "get"):len(), "ConcatDataset:get")
  local sizes, k = self.cumulative_sizes, 1
  while sizes[k] < i do k = k + 1 end
  return self.datasets[k]:get(i - (sizes[k - 1] or 0))
end

--- random_split(dataset, lengths[, {seed = s}]): Subsets of a random
--- permutation of the dataset, of the given lengths (counts summing to
--- ds:len(), or fractions summing to 1: floor(n * f) each, the remainder
--- given out one by one from the first), returned as several values.
function data.random_split(dataset, lengths, opts)
  local fn = "random_split"
  dataset = as_dataset(dataset)
  local n = len_of(dataset, fn, "dataset")
  check.table(lengths, fn, "lengths")
  opts = check.options(with_generator(opts), fn, { seed = "integer", generator = "any" })
  local sum, sizes = 0, {}
  for k = 1, #lengths do sum = sum + check.number(lengths[k], fn, "lengths[" .. k .. "]") end
  if math.abs(sum - 1) <= 1e-9 and sum <= 1 then -- fractions (Python's math.isclose(sum, 1))
    local given = 0
    for k = 1, #lengths do
      if lengths[k] < 0 or lengths[k] > 1 then check.fail(fn, "fraction at index %d is not between 0 and 1", k) end
      sizes[k] = math.floor(n * lengths[k])
      given = given + sizes[k]
    end
    for r = 0, n - given - 1 do sizes[r % #sizes + 1] = sizes[r % #sizes + 1] + 1 end -- round-robin
    for k = 1, #sizes do
      if sizes[k] == 0 then
        wick._warn(("random_split: length of split at index %d is 0, so that split is an empty dataset"):format(k))
      end
    end
  else
    for k = 1, #lengths do sizes[k] = check.int(lengths[k], fn, "lengths[" .. k .. "]", 0) end
  end
  local total = 0
  for k = 1, #sizes do total = total + sizes[k] end
  if total ~= n then
    check.fail(fn, "the sum of the input lengths (%s) does not equal the length of the input dataset (%d)", total, n)
  end
  local perm = drawing(generator_of(opts, fn), data.randperm, n)
  local out, offset = {}, 0
  for k = 1, #sizes do
    local indices = {}
    for j = 1, sizes[k] do indices[j] = perm[offset + j] end
    offset = offset + sizes[k]
    out[k] = data.Subset(dataset, indices)
  end
  return unpack(out, 1, #out)
end

-- ---- samplers: s:len() (how many indices a pass gives), s:iter() (an iterator of them) ----
-- (a plain Lua array of indices is one too, its items in order: PyTorch's
-- samplers and batch samplers may be any iterable, range(n) or a list)

-- s, checked to be a sampler, for argument `arg`: any iterable (an object with
-- iter(); len() is read only by len(loader), as PyTorch's), or an array
local function sampler_arg(s, fn, arg)
  if is_array(s) then return s end
  if type(s) ~= "table" or not is_callable(s.iter) then
    check.fail(fn, "expected a sampler (an object with an iter() method, or len() and iter() where len(loader) is "
      .. "called; or an array of indices) for %s, got %s", arg, check.describe(s))
  end
  return s
end

-- len(s) of a sampler (`what`): its len(), or PyTorch's TypeError where it has none
local function sampler_len(s, fn, what)
  if type(s) == "table" and not is_array(s) and not is_callable(s.len) then
    local class = getmetatable(s)
    check.fail(fn, "object of type '%s' has no len() (the %s has iter() and no len() method)",
      type(class) == "table" and rawget(class, "__name") or type(s), what)
  end
  return len_of(s, fn, what)
end

-- An iterator over the array `list`.
local function over(list)
  local k = 0
  return function()
    k = k + 1
    return list[k]
  end
end

-- s:iter() (a sampler's, or an iterable dataset's), checked to be an iterator
local function iter_of(s, fn, what)
  if is_array(s) then return over(s) end
  local it = s:iter()
  if not is_callable(it) then
    check.fail(fn, "the %s's iter() gave %s, expected an iterator function", what, check.describe(it))
  end
  return it
end

-- The items of the iterator function next_item in arrays of `size` (the last
-- one short, or dropped with drop_last), as PyTorch batches a sampler's
-- indices and an iterable dataset's samples.
local function chunks(next_item, size, drop_last)
  local done = false
  return function()
    if done then return nil end
    local chunk = {}
    for k = 1, size do
      local item = next_item()
      if item == nil then done = true; break end
      chunk[k] = item
    end
    if #chunk == 0 or (drop_last and #chunk < size) then return nil end
    return chunk
  end
end

local SequentialSampler = { __name = "SequentialSampler" }
SequentialSampler.__index = SequentialSampler

--- SequentialSampler(data_source): 1, 2, ..., data_source:len().
function data.SequentialSampler(data_source)
  data_source = as_dataset(data_source)
  len_of(data_source, "SequentialSampler", "data_source")
  return setmetatable({ data_source = data_source }, SequentialSampler)
end

function SequentialSampler:len()
  return len_of(own(self, SequentialSampler, "len").data_source, "SequentialSampler:len", "data_source")
end

function SequentialSampler:iter()
  local n, i = own(self, SequentialSampler, "iter"):len(), 0
  return function()
    if i < n then i = i + 1; return i end
  end
end

local RandomSampler = { __name = "RandomSampler" }
-- s.num_samples: PyTorch's property, num_samples or the data source's len()
RandomSampler.__index = function(s, k)
  if k == "num_samples" then return s:len() end
  return RandomSampler[k]
end

--- RandomSampler(data_source[, replacement = false[, num_samples[, generator]]][, {seed = s}]):
--- a random permutation of 1..n at each pass (num_samples of them: whole
--- permutations, the last one cut), or num_samples draws with replacement.
--- From wick's generator, or from `generator`, or with seed from one of its own.
local RANDOM = { replacement = "boolean", num_samples = "integer", seed = "integer", generator = "any" }
function data.RandomSampler(data_source, ...)
  local opts = check.positional("RandomSampler", { "replacement", "num_samples", "generator" }, RANDOM, ...)
  data_source = as_dataset(data_source)
  len_of(data_source, "RandomSampler", "data_source")
  local self = setmetatable({ data_source = data_source, replacement = opts.replacement or false,
    _num_samples = opts.num_samples, generator = generator_of(opts, "RandomSampler") }, RandomSampler)
  local count = self:len()
  if count <= 0 then
    check.fail("RandomSampler", "num_samples should be a positive integer value, but got num_samples=%d", count)
  end
  return self
end

--- num_samples, else the data source's len() (read at each pass).
function RandomSampler:len()
  own(self, RandomSampler, "len")
  return self._num_samples or len_of(self.data_source, "RandomSampler:len", "data_source")
end

-- the indices of one pass (drawn from wick's generator: run under drawing())
local function random_indices(n, count)
  local out = {}
  while #out < count do
    local perm = data.randperm(n)
    for i = 1, math.min(n, count - #out) do out[#out + 1] = perm[i] end
  end
  return out
end

function RandomSampler:iter()
  local count = own(self, RandomSampler, "iter"):len()
  local n = len_of(self.data_source, "RandomSampler:iter", "data_source")
  if n == 0 and count > 0 then
    check.fail("RandomSampler:iter", "cannot draw %d samples from an empty data source", count)
  end
  if not self.replacement then return over(drawing(self.generator, random_indices, n, count)) end
  -- with replacement, drawn 32 at a time as the pass goes (PyTorch's chunks): an
  -- "infinite" sampler (num_samples = 1e10, makemore's) holds 32 indices, not 1e10
  local done, chunk, k = 0, {}, 1
  local function draw(m) return wick.randint(1, n + 1, { m }):totable() end
  return function()
    if done >= count then return nil end
    if k > #chunk then chunk, k = drawing(self.generator, draw, math.min(32, count - done)), 1 end
    done, k = done + 1, k + 1
    return chunk[k - 1]
  end
end

-- a list of numbers from a Lua array or a 1-D tensor (read once)
local function number_list(v, fn, arg)
  if wick.is_tensor(v) then
    if v:dim() ~= 1 then check.fail(fn, "%s must be 1-D, got a tensor of %d dims", arg, v:dim()) end
    return v:to("float64"):tolist()
  end
  check.table(v, fn, arg)
  local out = {}
  for i = 1, #v do out[i] = check.number(v[i], fn, arg .. "[" .. i .. "]") end
  return out
end

local SubsetRandomSampler = { __name = "SubsetRandomSampler" }
SubsetRandomSampler.__index = SubsetRandomSampler

--- SubsetRandomSampler(indices[, generator or {generator =, seed =}]): the given
--- indices (1-based, a list or a tensor) in a random order at each pass.
function data.SubsetRandomSampler(indices, opts)
  local fn = "SubsetRandomSampler"
  opts = check.options(with_generator(opts), fn, { seed = "integer", generator = "any" })
  local list = number_list(indices, fn, "indices")
  for i = 1, #list do check.int(list[i], fn, "indices[" .. i .. "]", 1) end
  return setmetatable({ indices = list, generator = generator_of(opts, fn) }, SubsetRandomSampler)
end

function SubsetRandomSampler:len() return #own(self, SubsetRandomSampler, "len").indices end

function SubsetRandomSampler:iter()
  local idx, out = own(self, SubsetRandomSampler, "iter").indices, {}
  local order = #idx > 0 and drawing(self.generator, random_indices, #idx, #idx) or {}
  for i, k in ipairs(order) do out[i] = idx[k] end
  return over(out)
end

local WeightedRandomSampler = { __name = "WeightedRandomSampler" }
WeightedRandomSampler.__index = WeightedRandomSampler

--- WeightedRandomSampler(weights, num_samples[, replacement = true[, generator]][, {generator =, seed =}]):
--- num_samples indices (1-based) drawn with probabilities proportional to weights.
local WEIGHTED = { num_samples = "integer", replacement = "boolean", seed = "integer", generator = "any" }
function data.WeightedRandomSampler(weights, ...)
  local fn = "WeightedRandomSampler"
  local opts = check.positional(fn, { "num_samples", "replacement", "generator" }, WEIGHTED, ...)
  local w = number_list(weights, fn, "weights")
  if #w == 0 then check.fail(fn, "weights must not be empty") end
  for i = 1, #w do
    if w[i] < 0 or w[i] ~= w[i] or w[i] == math.huge then
      check.fail(fn, "weights must be finite and non-negative, got %s at %d", tostring(w[i]), i)
    end
  end
  local n = check.int(opts.num_samples, fn, "num_samples", 1)
  local replacement = opts.replacement ~= false
  if not replacement and n > #w then
    check.fail(fn, "cannot draw %d samples without replacement from %d weights", n, #w)
  end
  return setmetatable({ weights = wick.tensor(w, { dtype = "float64" }), num_samples = n, replacement = replacement,
    generator = generator_of(opts, fn) }, WeightedRandomSampler)
end

function WeightedRandomSampler:len() return own(self, WeightedRandomSampler, "len").num_samples end

function WeightedRandomSampler:iter()
  own(self, WeightedRandomSampler, "iter")
  return over(drawing(self.generator, function()
    return wick.multinomial(self.weights, self.num_samples, self.replacement):tolist()
  end))
end

local BatchSampler = { __name = "BatchSampler" }
BatchSampler.__index = BatchSampler

--- BatchSampler(sampler, batch_size[, drop_last = false]): the sampler's
--- indices (a sampler's, or an array's) in arrays of batch_size (the last one
--- short, or dropped with drop_last).
local BATCH = { batch_size = "integer", drop_last = "boolean" }
function data.BatchSampler(sampler, ...)
  local opts = check.positional("BatchSampler", { "batch_size", "drop_last" }, BATCH, ...)
  sampler_arg(sampler, "BatchSampler", "argument 'sampler'")
  local bs = check.int(opts.batch_size, "BatchSampler", "batch_size", 1)
  return setmetatable({ sampler = sampler, batch_size = bs, drop_last = opts.drop_last or false }, BatchSampler)
end

function BatchSampler:len()
  own(self, BatchSampler, "len")
  local n = sampler_len(self.sampler, "BatchSampler:len", "sampler")
  return (self.drop_last and math.floor or math.ceil)(n / self.batch_size)
end

function BatchSampler:iter()
  own(self, BatchSampler, "iter")
  return chunks(iter_of(self.sampler, "BatchSampler:iter", "sampler"), self.batch_size, self.drop_last)
end

-- ---- DistributedSampler ----
local DistributedSampler = { __name = "DistributedSampler" }
DistributedSampler.__index = DistributedSampler

-- The world size and rank of the initialized process group, or an error asking for them.
local function world(fn)
  local dist = wick.distributed
  if type(dist) == "table" and type(dist.is_initialized) == "function" and dist.is_initialized() then
    return dist.get_world_size(), dist.get_rank()
  end
  check.fail(fn, "no process group is initialized, so num_replicas and rank are needed: call "
    .. "wick.distributed.init_process_group() first, or pass {num_replicas = ..., rank = ...}")
end

--- DistributedSampler(dataset[, num_replicas[, rank[, shuffle = true[, seed = 0[,
--- drop_last = false]]]]]) (PyTorch's order; or as options): the 1-based indices of rank's share of the dataset,
--- PyTorch's torch.utils.data.DistributedSampler: each of num_replicas ranks
--- takes every num_replicas-th index of one list of total_size indices; the
--- list is padded with its own head (or cut, with drop_last) to a multiple of
--- num_replicas. With shuffle, the list is a permutation drawn from
--- seed + epoch, the same on every rank.
local SAMPLER = { num_replicas = "integer", rank = "integer", shuffle = "boolean", seed = "integer",
  drop_last = "boolean" }
function data.DistributedSampler(dataset, ...)
  local fn = "DistributedSampler"
  local opts = check.positional(fn, { "num_replicas", "rank", "shuffle", "seed", "drop_last" }, SAMPLER, ...)
  dataset = as_dataset(dataset)
  local n = len_of(dataset, fn, "dataset")
  local replicas, rank = opts.num_replicas, opts.rank
  if replicas == nil or rank == nil then
    local world_size, world_rank = world(fn)
    replicas, rank = replicas or world_size, rank or world_rank
  end
  if replicas < 1 then check.fail(fn, "num_replicas must be a positive integer, got %s", check.describe(replicas)) end
  if rank < 0 or rank >= replicas then
    check.fail(fn, "invalid rank %s, rank should be in the interval [0, %d] (ranks are 0-based)", check.describe(rank),
      replicas - 1)
  end
  local seed = opts.seed or 0
  if seed < -2 ^ 53 or seed > 2 ^ 53 then check.fail(fn, "seed must be an integer of at most 2^53 in magnitude") end
  local drop_last = opts.drop_last or false
  -- PyTorch's num_samples: ceil((n - R) / R) with drop_last when R does not divide n, else ceil(n / R)
  local num_samples = (drop_last and n % replicas ~= 0) and math.floor(n / replicas) or math.ceil(n / replicas)
  return setmetatable({
    dataset = dataset, n = n, num_replicas = replicas, rank = rank, epoch = 0, seed = seed,
    shuffle = opts.shuffle ~= false, drop_last = drop_last,
    num_samples = num_samples, total_size = num_samples * replicas,
  }, DistributedSampler)
end

local function sampler_self(self, fn) return own(self, DistributedSampler, fn) end

--- sampler:set_epoch(e): the epoch whose permutation the next iter() draws
--- (call it before each epoch, on every rank, with the same e).
function DistributedSampler:set_epoch(epoch)
  sampler_self(self, "set_epoch")
  check.int(epoch, "DistributedSampler:set_epoch", "epoch")
  self.epoch = epoch
end

--- The number of indices this rank gets per epoch (PyTorch's len(sampler)).
function DistributedSampler:len() return sampler_self(self, "len").num_samples end

--- This rank's indices for the current epoch, as a Lua array (1-based dataset indices).
function DistributedSampler:indices()
  sampler_self(self, "indices")
  local n, total = len_of(self.dataset, "DistributedSampler:indices", "dataset"), self.total_size
  if n ~= self.n then
    check.fail("DistributedSampler:indices", "the dataset's length changed from %d to %d since the sampler was made",
      self.n, n)
  end
  local list
  if self.shuffle then
    list = drawing(wick.Generator():manual_seed(self.seed + self.epoch), data.randperm, n)
  else
    list = {}
    for i = 1, n do list[i] = i end
  end
  local out = {}
  if n == 0 then return out end
  -- position p of the padded (or cut) list of total_size entries is list[(p - 1) % n + 1]:
  -- PyTorch's padding repeats the list from its head as many times as needed
  local k = 0
  for p = self.rank + 1, total, self.num_replicas do
    k = k + 1
    out[k] = list[(p - 1) % n + 1]
  end
  return out
end

--- for i in sampler:iter() do ... end: the indices of indices(), in order.
function DistributedSampler:iter() return over(sampler_self(self, "iter"):indices()) end

-- ---- StackDataset, ChainDataset ----
local StackDataset = Dataset:extend("StackDataset")

-- Sample i of a dataset as one value (as collate_fn sees a sample).
local function sample_at(ds, i) return sample_value(sample_of(ds:get(i))) end

--- StackDataset(ds1, ds2, ...): sample i is (ds1's sample i, ds2's, ...), each
--- one value (a sample of several values as the array of them); or
--- StackDataset{a = ds1, b = ds2} (PyTorch's keyword form): sample i is the
--- table {a = ..., b = ...}. All of one length, as PyTorch's (>= 2.1).
function data.StackDataset(...)
  local fn = "StackDataset"
  local n, args = select("#", ...), { ... }
  local last, named = args[n], nil
  if type(last) == "table" and getmetatable(last) == nil and not is_array(last) and not is_callable(last.len) then
    named, n = last, n - 1
    if n > 0 then
      check.fail(fn, "Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output, "
        .. "but both types are given.")
    end
  end
  local datasets, length = {}, nil
  local function add(key, ds)
    datasets[key] = as_dataset(ds)
    local size = len_of(datasets[key], fn, "dataset")
    if length and size ~= length then check.fail(fn, "Size mismatch between datasets") end
    length = size
  end
  if named then
    for key, ds in pairs(named) do add(check.string(key, fn, "a dataset's name"), ds) end
  else
    for k = 1, n do add(k, args[k]) end
  end
  if length == nil then check.fail(fn, "At least one dataset should be passed") end
  return setmetatable({ datasets = datasets, _length = length, _named = named ~= nil }, StackDataset)
end

function StackDataset:len() return own(self, StackDataset, "len")._length end

function StackDataset:get(i)
  i = position(i, own(self, StackDataset, "get")._length, "StackDataset:get")
  local out = {}
  for key, ds in pairs(self.datasets) do out[key] = sample_at(ds, i) end
  if self._named then return out end
  return unpack(out, 1, #self.datasets)
end

local ChainDataset = IterableDataset:extend("ChainDataset")

--- ChainDataset(datasets): the samples of each iterable dataset of the array,
--- one dataset after the other (PyTorch's; ds1 + ds2 of iterable datasets).
function data.ChainDataset(datasets)
  local fn = "ChainDataset"
  check.table(datasets, fn, "datasets")
  local list = {}
  for k = 1, #datasets do
    if not is_iterable(datasets[k]) then
      check.fail(fn, "ChainDataset only supports IterableDataset (datasets[%d] is %s, not an object with iter() "
        .. "and no get(i))", k, check.describe(datasets[k]))
    end
    list[k] = datasets[k]
  end
  return setmetatable({ datasets = list }, ChainDataset)
end

function ChainDataset:iter()
  local list, k, it = own(self, ChainDataset, "iter").datasets, 0, nil
  return function()
    while true do
      if it == nil then
        k = k + 1
        if list[k] == nil then return nil end
        it = iter_of(list[k], "ChainDataset:iter", "dataset")
      end
      local s = pack_values(it())
      if has_values(s) then return unpack(s, 1, s.n) end
      it = nil
    end
  end
end

-- len(ds) of an iterable dataset: its len(), or PyTorch's TypeError
local function iterable_len(ds, fn)
  if not is_callable(ds.len) then
    local class = getmetatable(ds)
    check.fail(fn, "object of type '%s' has no len()", type(class) == "table" and rawget(class, "__name") or type(ds))
  end
  return len_of(ds, fn, "dataset")
end

--- The total of the datasets' len() (each must have one).
function ChainDataset:len()
  local total = 0
  for _, ds in ipairs(own(self, ChainDataset, "len").datasets) do total = total + iterable_len(ds, "ChainDataset:len") end
  return total
end

-- ---- DataLoader ----
local DataLoader = { __name = "DataLoader" }
DataLoader.__index = DataLoader

--- DataLoader(dataset, {batch_size = 1, shuffle = false, sampler = nil, batch_sampler = nil,
--- drop_last = false, device = nil, collate_fn = nil, pin_memory = false, ...}), or the
--- same as one table DataLoader{dataset = ds, batch_size = ...}, or with PyTorch's
--- positional arguments (batch_size, shuffle, sampler, ...) before the options.
--- As PyTorch's, over a map-style dataset it draws batches of indices from a
--- batch sampler: batch_sampler, else BatchSampler(sampler, batch_size,
--- drop_last), the sampler a RandomSampler with shuffle, else a
--- SequentialSampler; over an iterable dataset it batches the samples as
--- they come. batch_size = false (PyTorch's None): no automatic batching.
--- pin_memory: each batch is put in page-locked memory before it is moved to
--- `device`, with non_blocking copies (like PyTorch); where CUDA is not
--- available it warns once and the batches stay in ordinary memory.
local LOADER = { batch_size = "integer|boolean", shuffle = "boolean", drop_last = "boolean", device = "device",
  collate_fn = "function", pin_memory = "boolean", sampler = "any", batch_sampler = "any", generator = "any",
  -- PyTorch's worker options: accepted, and the batches are made in the calling process
  num_workers = "integer", persistent_workers = "boolean", prefetch_factor = "integer", worker_init_fn = "function",
  timeout = "number", multiprocessing_context = "any", pin_memory_device = "string", in_order = "boolean" }
local LOADER_TABLE = { dataset = "table" }
for k, v in pairs(LOADER) do LOADER_TABLE[k] = v end
-- PyTorch's positional arguments after the dataset, in order
local LOADER_POSITIONAL = { "batch_size", "shuffle", "sampler", "batch_sampler", "num_workers", "collate_fn",
  "pin_memory", "drop_last", "timeout", "worker_init_fn", "multiprocessing_context", "generator" }

-- The options of a DataLoader call, and its dataset.
local function loader_options(dataset, opts, ...)
  -- the one-table form: DataLoader{dataset = ds, sampler = s, ...}
  if opts == nil and type(dataset) == "table" and getmetatable(dataset) == nil and rawget(dataset, "dataset") ~= nil
      and rawget(dataset, "len") == nil then
    opts = check.options(dataset, "DataLoader", LOADER_TABLE)
    return opts, opts.dataset
  end
  return check.positional("DataLoader", LOADER_POSITIONAL, LOADER, opts, ...), dataset
end

-- PyTorch's checks of the worker options (which change nothing here); the prefetch_factor it keeps.
local function worker_options(opts)
  local fn, workers = "DataLoader", opts.num_workers or 0
  if workers < 0 then
    check.fail(fn, "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
  end
  if (opts.timeout or 0) < 0 then check.fail(fn, "timeout option should be non-negative") end
  local prefetch = opts.prefetch_factor
  if workers == 0 and prefetch ~= nil then
    check.fail(fn, "prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 to "
      .. "enable multiprocessing, otherwise set prefetch_factor to None.")
  elseif prefetch ~= nil and prefetch < 0 then
    check.fail(fn, "prefetch_factor option should be non-negative")
  end
  if opts.persistent_workers and workers == 0 then check.fail(fn, "persistent_workers option needs num_workers > 0") end
  local context = opts.multiprocessing_context
  if context ~= nil then
    if workers == 0 then
      check.fail(fn, "multiprocessing_context can only be used with multi-process loading (num_workers > 0), but got "
        .. "num_workers=0")
    elseif type(context) == "string" and context ~= "fork" and context ~= "spawn" and context ~= "forkserver" then
      check.fail(fn, "multiprocessing_context option should specify a valid start method in ['fork', 'spawn', "
        .. "'forkserver'], but got multiprocessing_context='%s'", context)
    end
  end
  return workers > 0 and (prefetch or 2) or nil
end

-- An option's value as PyTorch's messages show it: a small array as Python's list
-- ([0, 1], [[3, 1], [2]]; a long one cut), a string quoted, else its kind.
local function shown(v, depth)
  if type(v) == "boolean" then return tostring(v) end
  if type(v) == "number" then return v == math.floor(v) and math.abs(v) < 2 ^ 53 and ("%d"):format(v) or tostring(v) end
  if type(v) == "string" then return ("'%s'"):format(v) end
  if is_array(v) and (depth or 0) < 3 then
    local parts = {}
    for k = 1, math.min(#v, 10) do parts[k] = shown(v[k], (depth or 0) + 1) end
    if #v > 10 then parts[#parts + 1] = ("... (%d items)"):format(#v) end
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  return check.describe(v)
end

-- PyTorch's refusal of sampler options for an iterable dataset.
local function iterable_options(opts)
  for _, name in ipairs({ "shuffle", "sampler", "batch_sampler" }) do
    local v = opts[name]
    if v ~= nil and v ~= false then
      check.fail("DataLoader", "DataLoader with IterableDataset: expected unspecified %s option, but got %s=%s", name,
        name, shown(v))
    end
  end
end

-- The loader's sampler, batch_sampler, batch_size (nil: no automatic batching)
-- and drop_last, from its options, as PyTorch's: checked, and made where not given.
local function loader_samplers(opts, dataset, iterable, generator)
  local fn = "DataLoader"
  if opts.batch_size == true then
    check.fail(fn, "expected a positive integer for option 'batch_size', or false (PyTorch's None: no automatic "
      .. "batching), got true")
  end
  if iterable then iterable_options(opts) end
  local sampler, batch_sampler, drop_last = opts.sampler, opts.batch_sampler, opts.drop_last or false
  local bs = opts.batch_size == nil and 1 or opts.batch_size or nil -- (false: PyTorch's None)
  if sampler ~= nil then
    sampler_arg(sampler, fn, "option 'sampler'")
    if opts.shuffle then check.fail(fn, "sampler option is mutually exclusive with shuffle") end
  end
  if batch_sampler ~= nil then
    sampler_arg(batch_sampler, fn, "option 'batch_sampler'")
    if bs ~= 1 or opts.shuffle or sampler ~= nil or drop_last then
      check.fail(fn, "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last")
    end
    return sampler, batch_sampler, nil, false
  elseif bs == nil and drop_last then
    check.fail(fn, "batch_size=None option disables auto-batching and is mutually exclusive with drop_last "
      .. "(batch_size = false is PyTorch's None)")
  end
  if bs then check.int(bs, fn, "batch_size", 1) end
  if iterable then return nil, nil, bs, drop_last end -- (the samples are batched as they come)
  sampler = sampler or (opts.shuffle and data.RandomSampler(dataset, { generator = generator })
    or data.SequentialSampler(dataset))
  return sampler, bs and data.BatchSampler(sampler, bs, drop_last), bs, drop_last
end

function data.DataLoader(dataset, opts, ...)
  opts, dataset = loader_options(dataset, opts, ...)
  dataset = as_dataset(dataset)
  local iterable = is_iterable(dataset)
  if not iterable and (type(dataset) ~= "table" or not is_callable(dataset.len) or not is_callable(dataset.get)) then
    check.fail("DataLoader", "the dataset must have len() and get(i) methods, or an iter() method (an iterable "
      .. "dataset), or be an array of samples")
  end
  local prefetch_factor = worker_options(opts)
  local generator = generator_of(opts, "DataLoader")
  local sampler, batch_sampler, bs, drop_last = loader_samplers(opts, dataset, iterable, generator)
  return setmetatable({
    dataset = dataset, batch_size = bs, drop_last = drop_last, sampler = sampler, batch_sampler = batch_sampler,
    generator = generator, collate_fn = opts.collate_fn or ((bs or batch_sampler) and collate or convert),
    pin_memory = opts.pin_memory or false, pin_memory_device = opts.pin_memory_device or "",
    num_workers = opts.num_workers or 0, prefetch_factor = prefetch_factor,
    persistent_workers = opts.persistent_workers or false, worker_init_fn = opts.worker_init_fn,
    timeout = opts.timeout or 0, multiprocessing_context = opts.multiprocessing_context,
    in_order = opts.in_order ~= false,
    device = opts.device and wick.device(opts.device) or nil,
  }, DataLoader)
end

local function loader_self(self, fn) return own(self, DataLoader, fn) end

--- The number of batches of a pass: the batch sampler's len() (the sampler's
--- without automatic batching); over an iterable dataset, from its len() (an
--- error where it has none, as PyTorch's TypeError).
function DataLoader:len()
  loader_self(self, "len")
  if is_iterable(self.dataset) then
    local n, bs = iterable_len(self.dataset, "DataLoader:len"), self.batch_size
    if bs == nil then return n end
    return (self.drop_last and math.floor or math.ceil)(n / bs)
  end
  return sampler_len(self.batch_sampler or self.sampler, "DataLoader:len",
    self.batch_sampler and "batch sampler" or "sampler")
end

local warned_pin_memory = false

-- Whether batches get pinned: pin_memory asked for and CUDA available;
-- otherwise one warning per process, as PyTorch warns.
local function pinning(self)
  if not self.pin_memory then return false end
  if wick.cuda.is_available() then return true end
  if not warned_pin_memory then
    warned_pin_memory = true
    wick._warn("DataLoader: 'pin_memory' is set to true but CUDA is not available, "
      .. "so pinned memory won't be used")
  end
  return false
end

-- Every CPU tensor of a (nested) batch in pinned memory, moved to `device`
-- (when given) with non_blocking copies.
local function pin_and_move(value, device)
  if wick.is_tensor(value) then
    if value.device.type ~= "cpu" then return device and value:to(device) or value end
    local pinned = value:pin_memory()
    if device then return pinned:to(device, { non_blocking = true }) end
    return pinned
  end
  if type(value) ~= "table" then return value end
  local out = {}
  for k, v in pairs(value) do out[k] = pin_and_move(v, device) end
  return setmetatable(out, getmetatable(value))
end

-- A pass over a map-style dataset: a function giving each batch (a table of
-- the loop's values), from the batch sampler's arrays of indices, or, without
-- automatic batching, one sample for each of the sampler's indices.
local function map_batches(self)
  local ds, collate_fn, batch_sampler = self.dataset, self.collate_fn, self.batch_sampler
  local n = len_of(ds, "DataLoader:iter", "dataset")
  local source = (self.batch_size == nil and batch_sampler) and "batch_sampler" or "sampler"
  local function checked(i)
    -- a one-element integer tensor is its number (a sampler over wick.randperm(n)'s items, AdaIN's)
    if wick.is_tensor(i) and i:numel() == 1 and not i:is_floating_point() and not i:is_complex() then i = i:item() end
    if type(i) ~= "number" or i ~= math.floor(i) or i < 1 or i > n then
      check.fail("DataLoader", "the %s gave the index %s, outside the dataset's 1..%d (indices are 1-based)", source,
        check.describe(i), n)
    end
    return i
  end
  local next_indices = iter_of(batch_sampler or self.sampler, "DataLoader:iter", batch_sampler and "batch sampler"
    or "sampler")
  return function()
    local indices = next_indices()
    if indices == nil then return nil end
    if not batch_sampler then return convert_sample(sample_of(ds:get(checked(indices))), collate_fn) end
    if type(indices) ~= "table" or #indices == 0 then
      check.fail("DataLoader", "the batch_sampler gave %s, expected a non-empty array of indices",
        check.describe(indices))
    end
    for _, i in ipairs(indices) do checked(i) end
    return fetch(ds, indices, collate_fn)
  end
end

-- A pass over an iterable dataset: its samples in batches of batch_size as they
-- come (PyTorch's _IterableDatasetFetcher), or one by one without automatic batching.
local function iterable_batches(self)
  local it, ended, collate_fn = iter_of(self.dataset, "DataLoader:iter", "dataset"), false, self.collate_fn
  local function next_sample()
    if ended then return nil end
    local s = sample_of(it())
    if s[1] == nil and not has_values(s) then ended = true; return nil end
    return s -- (a nil first value before others is a sample, which default_collate refuses)
  end
  if self.batch_size == nil then
    return function()
      local s = next_sample()
      return s and convert_sample(s, collate_fn)
    end
  end
  local next_chunk = chunks(next_sample, self.batch_size, self.drop_last)
  return function()
    local samples = next_chunk()
    return samples and collate_samples(samples, collate_fn)
  end
end

--- for inputs, labels in loader:iter() do ... end: one pass (an epoch); each
--- batch (or, without automatic batching, each sample) as several values.
-- With num_workers > 0, each pass (only the first, with persistent_workers)
-- starts by calling worker_init_fn(0) once, with get_worker_info() giving the
-- WorkerInfo of the one worker there is during the call (id 0, num_workers 1:
-- the batches are made in this process, from the one dataset, so a
-- worker_init_fn that narrows the dataset to its worker's shard, as PyTorch's
-- IterableDataset example does, keeps all of it; its seed PyTorch's: a base
-- seed drawn from the loader's generator, or wick's).
local function start_workers(self)
  local init, workers = self.worker_init_fn, self.num_workers
  if init == nil or type(workers) ~= "number" or workers <= 0 or (self.persistent_workers and self._workers_started) then
    return
  end
  local base = drawing(self.generator, function() return wick.randint(0, 2 ^ 53, { 1 }):item() end)
  current_worker = WorkerInfo({ id = 0, num_workers = 1, seed = base, dataset = self.dataset })
  local ok, err = pcall(init, 0)
  current_worker = nil
  if not ok then error(err, 0) end
  self._workers_started = true
end

function DataLoader:iter()
  loader_self(self, "iter")
  start_workers(self)
  local next_batch = (is_iterable(self.dataset) and iterable_batches or map_batches)(self)
  local pin = pinning(self)
  return function()
    local batch = next_batch()
    if batch == nil then return nil end
    if batch[1] == nil then -- (the for loop would end there, silently)
      check.fail("DataLoader", "the batch's first value is nil (Python's None; a collate_fn that returned nothing, "
        .. "or a sample without it): a for loop ends at a nil first value")
    end
    if pin then batch = pin_and_move(batch, self.device)
    elseif self.device then batch = wick.to_device(batch, self.device) end
    return unpack(batch)
  end
end

-- The call's results, noting the first (the control value of a generic for) and the pass's end.
local function advance(self, first, ...)
  self._last = first
  if first == nil then self._pass = nil end
  return first, ...
end

--- for inputs, labels in loader do ... end (Python's `for x, y in loader`): the
--- generic for calls the loader with a nil control value first, which starts a
--- new pass (loader:iter()); its next calls, with the previous batch's first
--- value, continue that pass. So leaving a loop and looping again starts a new epoch.
function DataLoader:__call(_, last)
  loader_self(self, "__call")
  if last == nil then
    self._pass = self:iter()
  elseif self._pass == nil or not rawequal(last, self._last) then
    check.fail("DataLoader", "this loop's pass over the loader was ended by another loop over the same loader "
      .. "(loop over one loader inside another with loader:iter())")
  end
  return advance(self, self._pass())
end

-- ---- Fashion-MNIST ----
local FashionMNIST = Dataset:extend("FashionMNIST")
FashionMNIST.classes = { "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot" }

local DEFAULT_ROOT = "/usr/share/datasets/fashion-mnist"

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

--- FashionMNIST{train = true, root = dir}: images float32 [N, 1, 28, 28] in [0, 1],
--- labels int64 in 1..10. root defaults to $FASHION_MNIST_DIR, then the
--- directory Debian's dataset-fashion-mnist package installs.
local FASHION = { train = "boolean", root = "string" }
function data.FashionMNIST(opts)
  opts = check.options(opts, "FashionMNIST", FASHION)
  local root = opts.root or os.getenv("FASHION_MNIST_DIR") or DEFAULT_ROOT
  local prefix = opts.train == false and "t10k" or "train"
  local function find(kind)
    for _, name in ipairs({ ("%s-%s-idx%d-ubyte.gz"):format(prefix, kind, kind == "images" and 3 or 1),
                            ("%s-%s-idx%d-ubyte"):format(prefix, kind, kind == "images" and 3 or 1) }) do
      local path = root .. "/" .. name
      if exists(path) then return path end
    end
    wick.error(("Fashion-MNIST not found: %s/%s-%s-idx%d-ubyte.gz does not exist. Install it with `apt-get install dataset-fashion-mnist` (files in %s), or point root = ... or FASHION_MNIST_DIR at a directory with the IDX files")
      :format(root, prefix, kind, kind == "images" and 3 or 1, DEFAULT_ROOT))
  end
  local images = wick._core.read_idx(find("images"))
  local labels = wick._core.read_idx(find("labels"))
  if images:dim() ~= 3 or labels:dim() ~= 1 or images:size(1) ~= labels:size(1) then
    wick.error(("Fashion-MNIST: unexpected shapes %s and %s"):format(tostring(images.shape), tostring(labels.shape)))
  end
  local n = images:size(1)
  local self = setmetatable({
    images = images:to("float32"):div_(255):view(n, 1, images:size(2), images:size(3)),
    labels = labels:to("int64"):add_(1),
    n = n,
  }, FashionMNIST)
  return self
end

local function fashion_self(self, fn) return own(self, FashionMNIST, fn) end
function FashionMNIST:len() return fashion_self(self, "len").n end
function FashionMNIST:get(i)
  fashion_self(self, "get")
  i = position(i, self.n, "FashionMNIST:get")
  return self.images[i], self.labels[i]
end
function FashionMNIST:get_batch(indices)
  fashion_self(self, "get_batch")
  check.table(indices, "FashionMNIST:get_batch", "indices")
  local idx = wick.tensor(indices, { dtype = "int64" })
  return { self.images:index_select(1, idx), self.labels:index_select(1, idx) }
end

return check.strict(data, "wick.data")
