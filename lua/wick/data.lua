-- wick.data: the dataset protocol (ds:len(), ds:get(i) -> values), TensorDataset,
-- DataLoader and Fashion-MNIST.
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

-- ---- DataLoader ----
local DataLoader = {}
DataLoader.__index = DataLoader

--- DataLoader(dataset, {batch_size = 1, shuffle = false, drop_last = false,
--- device = nil, collate_fn = nil, pin_memory = false})
--- pin_memory: each batch is put in page-locked memory before it is moved to
--- `device`, with non_blocking copies (like PyTorch); where CUDA is not
--- available it warns once and the batches stay in ordinary memory.
local LOADER = { batch_size = "integer", shuffle = "boolean", drop_last = "boolean", device = "device",
  collate_fn = "function", pin_memory = "boolean" }
function data.DataLoader(dataset, opts)
  opts = check.options(opts, "DataLoader", LOADER)
  if type(dataset) ~= "table" or type(dataset.len) ~= "function" or type(dataset.get) ~= "function" then
    wick.error("DataLoader: the dataset must have len() and get(i) methods")
  end
  local bs = opts.batch_size or 1
  if type(bs) ~= "number" or bs < 1 or bs ~= math.floor(bs) then
    wick.error(("DataLoader: batch_size must be a positive integer, got %s"):format(tostring(bs)))
  end
  return setmetatable({
    dataset = dataset, batch_size = bs, shuffle = opts.shuffle or false, drop_last = opts.drop_last or false,
    device = opts.device and wick.device(opts.device) or nil, collate_fn = opts.collate_fn or collate,
    pin_memory = opts.pin_memory and true or false,
  }, DataLoader)
end

local function loader_self(self, fn)
  if type(self) ~= "table" or getmetatable(self) ~= DataLoader then check.expected("DataLoader:" .. fn, "self", "a DataLoader", self) end
  return self
end

function DataLoader:len()
  loader_self(self, "len")
  local n = self.dataset:len()
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

--- for inputs, labels in loader:iter() do ... end
function DataLoader:iter()
  loader_self(self, "iter")
  local n = self.dataset:len()
  local order
  if self.shuffle then order = data.randperm(n) end
  local batches, b = self:len(), 0
  local ds = self.dataset
  local pin = pinning(self)
  return function()
    b = b + 1
    if b > batches then return nil end
    local first = (b - 1) * self.batch_size + 1
    local last = math.min(b * self.batch_size, n)
    local indices = {}
    for i = first, last do indices[#indices + 1] = order and order[i] or i end
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
