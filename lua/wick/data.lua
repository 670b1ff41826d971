-- wick.data: the dataset protocol (ds:len(), ds:get(i) -> values), TensorDataset,
-- DistributedSampler, DataLoader (with the sampler protocol: s:len(), s:iter())
-- and Fashion-MNIST.
local wick = require("wick")
local check = require("wick.argcheck")
local unpack = table.unpack or unpack -- Lua 5.2+ (WICK_LUA54) and LuaJIT

local data = {}

--- A random permutation of 1..n from wick's generator (repeatable under
--- wick.manual_seed): Fisher-Yates over uniform draws.
function data.randperm(n)
  check.int(n, "randperm", "n", 0)
  local u = n > 0 and wick.rand(n, { dtype = "float64" }):totable() or {}
  local p = {}
  for i = 1, n do p[i] = i end
  for i = n, 2, -1 do
    local j = math.floor(u[i] * i) + 1
    p[i], p[j] = p[j], p[i]
  end
  return p
end
-- (wick.randperm, the tensor form, is in ops.lua)

-- ---- TensorDataset ----
local TensorDataset = {}
TensorDataset.__index = TensorDataset

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

local function dataset_self(self, fn)
  if type(self) ~= "table" or type(self.tensors) ~= "table" then check.expected("TensorDataset:" .. fn, "self", "a TensorDataset", self) end
  return self
end

function TensorDataset:len() return dataset_self(self, "len").n end

function TensorDataset:get(i)
  dataset_self(self, "get")
  check.int(i, "TensorDataset:get", "index")
  local out = {}
  for k, t in ipairs(self.tensors) do out[k] = t[i] end
  return unpack(out, 1, #self.tensors)
end

--- A whole batch at once (what DataLoader uses when a dataset has it).
function TensorDataset:get_batch(indices)
  dataset_self(self, "get_batch")
  check.table(indices, "TensorDataset:get_batch", "indices")
  local idx = wick.tensor(indices, { dtype = "int64", device = self.tensors[1].device })
  local out = {}
  for k, t in ipairs(self.tensors) do out[k] = t:index_select(1, idx) end
  return out
end

-- ---- collation ----
local function collate(samples)
  check.table(samples, "default_collate", "samples")
  local first = samples[1]
  if wick.is_tensor(first) then
    return wick.stack(samples, 1)
  elseif type(first) == "number" then
    return wick.tensor(samples)
  elseif type(first) == "boolean" then
    return wick.tensor(samples)
  elseif type(first) == "table" then
    local out = {}
    for k in pairs(first) do
      local column = {}
      for i, s in ipairs(samples) do column[i] = s[k] end
      out[k] = collate(column)
    end
    return out
  end
  return samples
end
data.default_collate = collate

-- ---- DistributedSampler ----
local DistributedSampler = {}
DistributedSampler.__index = DistributedSampler

-- The dataset's length, checked (a sampler needs only len()).
local function dataset_len(dataset, fn)
  if type(dataset) ~= "table" or type(dataset.len) ~= "function" then
    check.expected(fn, "dataset", "a dataset (an object with a len() method)", dataset)
  end
  local n = dataset:len()
  if type(n) ~= "number" or n < 0 or n ~= math.floor(n) or n > 2 ^ 53 then
    check.fail(fn, "the dataset's len() gave %s, expected a non-negative integer", check.describe(n))
  end
  return n
end

-- The world size and rank of the initialized process group, or an error asking for them.
local function world(fn)
  local dist = wick.distributed
  if type(dist) == "table" and type(dist.is_initialized) == "function" and dist.is_initialized() then
    return dist.get_world_size(), dist.get_rank()
  end
  check.fail(fn, "no process group is initialized, so num_replicas and rank are needed: call "
    .. "wick.distributed.init_process_group() first, or pass {num_replicas = ..., rank = ...}")
end

--- DistributedSampler(dataset[, {num_replicas, rank, shuffle = true, seed = 0,
--- drop_last = false}]): the 1-based indices of rank's share of the dataset,
--- PyTorch's torch.utils.data.DistributedSampler: each of num_replicas ranks
--- takes every num_replicas-th index of one list of total_size indices; the
--- list is padded with its own head (or cut, with drop_last) to a multiple of
--- num_replicas. With shuffle, the list is a permutation drawn from
--- seed + epoch, the same on every rank.
local SAMPLER = { num_replicas = "integer", rank = "integer", shuffle = "boolean", seed = "integer",
  drop_last = "boolean" }
function data.DistributedSampler(dataset, opts)
  local fn = "DistributedSampler"
  opts = check.options(opts, fn, SAMPLER)
  local n = dataset_len(dataset, fn)
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

local function sampler_self(self, fn)
  if type(self) ~= "table" or getmetatable(self) ~= DistributedSampler then
    check.expected("DistributedSampler:" .. fn, "self", "a DistributedSampler", self)
  end
  return self
end

--- sampler:set_epoch(e): the epoch whose permutation the next iter() draws
--- (call it before each epoch, on every rank, with the same e).
function DistributedSampler:set_epoch(epoch)
  sampler_self(self, "set_epoch")
  check.int(epoch, "DistributedSampler:set_epoch", "epoch")
  self.epoch = epoch
end

--- The number of indices this rank gets per epoch (PyTorch's len(sampler)).
function DistributedSampler:len() return sampler_self(self, "len").num_samples end

-- The permutation of 1..n drawn from seed + epoch, leaving wick's generator as it was.
local function seeded_randperm(n, seed)
  local state = wick.get_rng_state()
  wick.manual_seed(seed)
  local ok, perm = pcall(data.randperm, n)
  wick.set_rng_state(state)
  if not ok then error(perm, 0) end
  return perm
end

--- This rank's indices for the current epoch, as a Lua array (1-based dataset indices).
function DistributedSampler:indices()
  sampler_self(self, "indices")
  local n, total = dataset_len(self.dataset, "DistributedSampler:indices"), self.total_size
  if n ~= self.n then
    check.fail("DistributedSampler:indices", "the dataset's length changed from %d to %d since the sampler was made",
      self.n, n)
  end
  local list
  if self.shuffle then
    list = seeded_randperm(n, self.seed + self.epoch)
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
function DistributedSampler:iter()
  local list, k = sampler_self(self, "iter"):indices(), 0
  return function()
    k = k + 1
    return list[k]
  end
end

-- ---- DataLoader ----
local DataLoader = {}
DataLoader.__index = DataLoader

--- DataLoader(dataset, {batch_size = 1, shuffle = false, sampler = nil, drop_last = false,
--- device = nil, collate_fn = nil, pin_memory = false}), or the same as one table
--- DataLoader{dataset = ds, batch_size = ...}.
--- sampler: any object with sampler:len() and sampler:iter() (an iterator of
--- 1-based dataset indices), e.g. a DistributedSampler; it replaces shuffle.
--- pin_memory: each batch is put in page-locked memory before it is moved to
--- `device`, with non_blocking copies (like PyTorch); where CUDA is not
--- available it warns once and the batches stay in ordinary memory.
local LOADER = { batch_size = "integer", shuffle = "boolean", drop_last = "boolean", device = "device",
  collate_fn = "function", pin_memory = "boolean", sampler = "any" }
local LOADER_TABLE = { dataset = "table" }
for k, v in pairs(LOADER) do LOADER_TABLE[k] = v end

local function is_callable(v)
  local m = getmetatable(v)
  return type(v) == "function" or (type(m) == "table" and m.__call ~= nil)
end

function data.DataLoader(dataset, opts)
  -- the one-table form: DataLoader{dataset = ds, sampler = s, ...}
  if opts == nil and type(dataset) == "table" and getmetatable(dataset) == nil and rawget(dataset, "dataset") ~= nil
      and rawget(dataset, "len") == nil then
    opts = check.options(dataset, "DataLoader", LOADER_TABLE)
    dataset = opts.dataset
  else
    opts = check.options(opts, "DataLoader", LOADER)
  end
  if type(dataset) ~= "table" or type(dataset.len) ~= "function" or type(dataset.get) ~= "function" then
    wick.error("DataLoader: the dataset must have len() and get(i) methods")
  end
  local bs = opts.batch_size or 1
  if type(bs) ~= "number" or bs < 1 or bs ~= math.floor(bs) then
    wick.error(("DataLoader: batch_size must be a positive integer, got %s"):format(tostring(bs)))
  end
  local sampler = opts.sampler
  if sampler ~= nil then
    if type(sampler) ~= "table" or not is_callable(sampler.len) or not is_callable(sampler.iter) then
      check.fail("DataLoader", "expected a sampler (an object with len() and iter() methods) for option 'sampler', got %s",
        check.describe(sampler))
    end
    if opts.shuffle then check.fail("DataLoader", "sampler option is mutually exclusive with shuffle") end
  end
  return setmetatable({
    dataset = dataset, batch_size = bs, shuffle = opts.shuffle or false, drop_last = opts.drop_last or false,
    sampler = sampler,
    device = opts.device and wick.device(opts.device) or nil, collate_fn = opts.collate_fn or collate,
    pin_memory = opts.pin_memory and true or false,
  }, DataLoader)
end

local function loader_self(self, fn)
  if type(self) ~= "table" or getmetatable(self) ~= DataLoader then check.expected("DataLoader:" .. fn, "self", "a DataLoader", self) end
  return self
end

-- How many indices one pass gives: the sampler's len(), else the dataset's.
local function index_count(self)
  if self.sampler == nil then return self.dataset:len() end
  local n = self.sampler:len()
  if type(n) ~= "number" or n < 0 or n ~= math.floor(n) then
    check.fail("DataLoader", "the sampler's len() gave %s, expected a non-negative integer", check.describe(n))
  end
  return n
end

function DataLoader:len()
  loader_self(self, "len")
  local n = index_count(self)
  if self.drop_last then return math.floor(n / self.batch_size) end
  return math.ceil(n / self.batch_size)
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

-- The dataset indices of one pass, in order: an iterator function.
local function index_source(self, n)
  if self.sampler == nil then
    local order = self.shuffle and data.randperm(n) or nil
    local i = 0
    return function()
      i = i + 1
      if i > n then return nil end
      return order and order[i] or i
    end
  end
  local it = self.sampler:iter()
  if not is_callable(it) then
    check.fail("DataLoader", "the sampler's iter() gave %s, expected an iterator function", check.describe(it))
  end
  return function()
    local i = it()
    if i ~= nil and (type(i) ~= "number" or i ~= math.floor(i) or i < 1 or i > n) then
      check.fail("DataLoader", "the sampler gave the index %s, outside the dataset's 1..%d (indices are 1-based)",
        check.describe(i), n)
    end
    return i
  end
end

--- for inputs, labels in loader:iter() do ... end
function DataLoader:iter()
  loader_self(self, "iter")
  local n = self.dataset:len()
  local next_index = index_source(self, n)
  local ds = self.dataset
  local pin = pinning(self)
  local bs, drop_last = self.batch_size, self.drop_last
  local done = false
  return function()
    if done then return nil end
    local indices = {}
    for k = 1, bs do
      local i = next_index()
      if i == nil then done = true; break end
      indices[k] = i
    end
    if #indices == 0 or (drop_last and #indices < bs) then
      done = true
      return nil
    end
    local batch
    if ds.get_batch and self.collate_fn == collate then
      batch = ds:get_batch(indices)
    else
      local samples = {}
      for k, i in ipairs(indices) do samples[k] = { ds:get(i) } end
      batch = {}
      local width = #samples[1]
      for col = 1, width do
        local column = {}
        for k, s in ipairs(samples) do column[k] = s[col] end
        batch[col] = self.collate_fn(column)
      end
    end
    if pin then batch = pin_and_move(batch, self.device)
    elseif self.device then batch = wick.to_device(batch, self.device) end
    return unpack(batch)
  end
end

-- ---- Fashion-MNIST ----
local FashionMNIST = {}
FashionMNIST.__index = FashionMNIST
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

local function fashion_self(self, fn)
  if type(self) ~= "table" or getmetatable(self) ~= FashionMNIST then check.expected("FashionMNIST:" .. fn, "self", "a FashionMNIST dataset", self) end
  return self
end
function FashionMNIST:len() return fashion_self(self, "len").n end
function FashionMNIST:get(i)
  fashion_self(self, "get")
  check.int(i, "FashionMNIST:get", "index")
  return self.images[i], self.labels[i]
end
function FashionMNIST:get_batch(indices)
  fashion_self(self, "get_batch")
  check.table(indices, "FashionMNIST:get_batch", "indices")
  local idx = wick.tensor(indices, { dtype = "int64" })
  return { self.images:index_select(1, idx), self.labels:index_select(1, idx) }
end

return data
