-- nn.DataParallel: runs one module on several devices at once, PyTorch's way.
-- Each forward splits ("scatters") the batch along `dim` into one chunk per
-- device, runs a replica of the module on each chunk, and concatenates
-- ("gathers") the outputs on the output device. Autograd does the rest:
-- every step is an ordinary differentiable op (narrow, to, clone, cat), so
-- backward sends each chunk's gradient back through the copies and the
-- gradients of all replicas are summed into the original parameters.
--
-- The replicas run one after the other from Lua. On GPUs that is no loss:
-- wick launches kernels asynchronously on one stream per device, so while Lua
-- issues replica 2's kernels, the GPU of replica 1 is still busy with its own.
--
-- Devices: `device_ids` takes CUDA ordinals (0-based), strings or device
-- objects, so the scatter, replicate and gather paths also run on lists of
-- `cpu` and `meta` devices, which is how they are tested on machines without
-- GPUs.
local wick = require("wick")
local check = require("wick.argcheck")
local unpack = table.unpack or unpack -- Lua 5.2+ (WICK_LUA54) and LuaJIT
local Module = require("wick.nn.module")

local DataParallel = Module:extend("DataParallel", { "module" })

local is_module = check.is_module
local function is_plain_table(v) return type(v) == "table" and getmetatable(v) == nil end

-- One entry of device_ids (or output_device) as a device object. An integer
-- is a CUDA ordinal, -1 as output_device means the CPU (as in PyTorch), and
-- "cuda" without an index is the current CUDA device.
local function to_device(v, what)
  if type(v) == "number" then
    if v == -1 and what == "output_device" then return wick.device("cpu") end
    if v < 0 or v ~= math.floor(v) then
      wick.error(("DataParallel: %s must hold CUDA ordinals (integers >= 0), strings or devices, got %s")
        :format(what, tostring(v)))
    end
    return wick.device("cuda", v)
  end
  if type(v) ~= "string" and getmetatable(v) ~= wick.Device then
    wick.error(("DataParallel: %s must hold CUDA ordinals (integers >= 0), strings or devices, got a %s")
      :format(what, type(v)))
  end
  local d = wick.device(v)
  if d.type == "cuda" and d.index == nil then d = wick.device("cuda", wick.cuda.current_device()) end
  return d
end

--- nn.DataParallel(module[, {device_ids = {...}, output_device = ..., dim = 1}])
--- device_ids defaults to every CUDA device (none without CUDA); output_device
--- to device_ids[1]; dim (1-based, negative counts from the end) is the batch
--- dimension the inputs are split along and the outputs joined along.
function DataParallel:init(module, opts)
  opts = check.opt_table(opts, "DataParallel", "opts") or {}
  if not is_module(module) then
    wick.error(("DataParallel: expected a module to wrap, got a %s"):format(type(module)))
  end
  for k in pairs(opts) do
    if k ~= "device_ids" and k ~= "output_device" and k ~= "dim" then
      wick.error(("DataParallel: unknown option '%s' (accepted: device_ids, output_device, dim)"):format(tostring(k)))
    end
  end
  local dim = opts.dim or 1
  if type(dim) ~= "number" or dim ~= math.floor(dim) or dim == 0 then
    wick.error(("DataParallel: dim must be a non-zero integer (1 is the batch dimension), got %s"):format(tostring(dim)))
  end
  self.module = module
  rawset(self, "dim", dim)

  local ids = {}
  if opts.device_ids == nil then
    if wick.cuda.is_available() then
      for i = 0, wick.cuda.device_count() - 1 do ids[#ids + 1] = wick.device("cuda", i) end
    end
  else
    local given = opts.device_ids
    if wick.is_tensor(given) or type(given) ~= "table" or getmetatable(given) == wick.Device then given = { given } end
    for i, v in ipairs(given) do ids[i] = to_device(v, "device_ids") end
    -- Without CUDA, PyTorch ignores device_ids and runs the module as it is; a
    -- list of CUDA devices only does the same here. cpu/meta lists are used.
    if not wick.cuda.is_available() then
      local all_cuda = true
      for _, d in ipairs(ids) do if d.type ~= "cuda" then all_cuda = false end end
      if all_cuda then ids = {} end
    end
  end
  rawset(self, "device_ids", ids)
  local out = nil
  if #ids > 0 then
    out = opts.output_device ~= nil and to_device(opts.output_device, "output_device") or ids[1]
  end
  rawset(self, "output_device", out)
end

function DataParallel:extra_repr()
  local names = {}
  for i, d in ipairs(self.device_ids) do names[i] = tostring(d) end
  return #names > 0 and ("device_ids=[%s]"):format(table.concat(names, ", ")) or ""
end

-- Raises PyTorch's error when a parameter or buffer is not on device_ids[1].
local function check_source_device(self)
  local source = self.device_ids[1]
  local function check(t)
    if t.device ~= source then
      wick.error(("module must have its parameters and buffers on device %s (device_ids[1]) but found one of them on device: %s")
        :format(tostring(source), tostring(t.device)))
    end
  end
  for _, p in ipairs(self.module:parameters()) do check(p) end
  for _, b in ipairs(self.module:buffers()) do check(b) end
end

-- ---- scatter ----

-- The chunks of tensor t along dim for n devices, like t:chunk(n, dim): chunks
-- of ceil(size / n), so fewer than n when the batch is smaller than n. A batch
-- of 0 is one (empty) chunk.
local function chunk(t, n, dim)
  if t:dim() == 0 then
    wick.error("DataParallel: cannot scatter a 0-dim tensor: inputs need a batch dimension")
  end
  local d = dim < 0 and t:dim() + 1 + dim or dim
  if d < 1 or d > t:dim() then
    wick.error(("DataParallel: dim %d is out of range for an input of %d dimension(s)"):format(dim, t:dim()))
  end
  local size = t:size(d)
  if size == 0 then return { t } end
  local step = math.ceil(size / n)
  local out = {}
  for start = 1, size, step do
    out[#out + 1] = t:narrow(d, start, math.min(step, size - start + 1))
  end
  return out
end

-- Splits a value into per-device values: tensors are chunked and moved to
-- their device, plain tables are split entry by entry, anything else is
-- shared by every replica. Returns a list indexed by replica (nil for a value
-- that holds no tensor: it fits any number of replicas) and the count.
local function scatter(value, devices, dim)
  if wick.is_tensor(value) then
    local chunks = chunk(value, #devices, dim)
    for i, c in ipairs(chunks) do chunks[i] = c:to(devices[i]) end
    return chunks, #chunks
  end
  if not is_plain_table(value) then return nil, nil end
  local parts, count = {}, nil
  local keys = {}
  for k, v in pairs(value) do
    local split, n = scatter(v, devices, dim)
    if split then
      if count and n ~= count then
        wick.error(("DataParallel: the inputs split into different numbers of chunks (%d and %d) along dim %d; give them the same batch size")
          :format(count, n, dim))
      end
      count = n
    end
    parts[k] = split or false
    keys[#keys + 1] = k
  end
  if not count then return nil, nil end
  local out = {}
  for i = 1, count do
    local t = {}
    for _, k in ipairs(keys) do
      local split = parts[k]
      if split then t[k] = split[i] else t[k] = value[k] end
    end
    out[i] = t
  end
  return out, count
end

-- The arguments of forward as one argument list per replica.
local function scatter_args(devices, dim, ...)
  local n = select("#", ...)
  local args = { ... }
  local split, count = scatter(args, devices, dim)
  if not split then
    -- no tensor among the inputs: every device gets them as they are (PyTorch)
    split = {}
    for i = 1, #devices do split[i] = args end
  end
  for _, a in ipairs(split) do a.n = n end
  return split
end

-- ---- replicate ----

-- A copy of module for `device` whose parameters and buffers are
-- differentiable copies of the originals: `t:to(device)` (or `t:clone()` on
-- t's own device) records the copy in the graph, so gradients reach the
-- original parameters. Every field is copied: child modules are replicated,
-- tensors copied, and plain tables that hold modules or tensors (a table of
-- layers, Sequential's own list of its children) rebuilt around the copies;
-- other values are shared. `memo` keeps shared tensors and modules shared
-- inside the replica (tied weights stay tied).
local function replicate(module, device, memo)
  local copy_value
  local function copy_tensor(t)
    local c = memo[t]
    if c == nil then
      if t.device == device then c = t:clone() else c = t:to(device) end
      memo[t] = c
    end
    return c
  end
  local function copy_table(v)
    local done = memo[v]
    if done ~= nil then return done end
    memo[v] = v -- a table that holds itself refers to the original
    local t, changed = {}, false
    for k, item in pairs(v) do
      local c = copy_value(item)
      t[k] = c
      if not rawequal(c, item) then changed = true end
    end
    local result = changed and t or v
    memo[v] = result
    return result
  end
  copy_value = function(v)
    if wick.is_tensor(v) then return copy_tensor(v) end
    if is_module(v) then return replicate(v, device, memo) end
    if is_plain_table(v) then return copy_table(v) end
    return v
  end
  local copy = memo[module]
  if copy then return copy end
  copy = {}
  memo[module] = copy
  for k, v in pairs(module) do
    if k == "_fields" then
      -- its own list, so a field a replica's forward adds stays in the replica
      local fields = {}
      for name, value in pairs(v) do fields[name] = value end
      copy[k] = fields
    else
      copy[k] = copy_value(v)
    end
  end
  return setmetatable(copy, getmetatable(module))
end

-- ---- gather ----

local warned_scalars = false

-- Joins the replicas' values for one output: tensors are moved to `device` and
-- concatenated along dim (0-dim tensors become a vector, with a warning, as in
-- PyTorch); plain tables are gathered entry by entry; other values come from
-- the first replica.
local function gather(values, device, dim)
  local first = values[1]
  if wick.is_tensor(first) then
    local parts = {}
    local scalars = first:dim() == 0
    for i, v in ipairs(values) do
      if not wick.is_tensor(v) then
        wick.error(("DataParallel: replica 1 returned a tensor but replica %d returned a %s"):format(i, type(v)))
      end
      v = v:to(device)
      if scalars then v = v:unsqueeze(1) end
      parts[i] = v
    end
    if scalars and not warned_scalars then
      warned_scalars = true
      wick._warn("DataParallel was asked to gather along dimension " .. dim
        .. ", but all input tensors were scalars; will instead unsqueeze and return a vector.")
    end
    if #parts == 1 then return parts[1] end
    return wick.cat(parts, scalars and 1 or dim)
  end
  if is_plain_table(first) then
    local out = {}
    for k in pairs(first) do
      local column = {}
      for i, v in ipairs(values) do
        if not is_plain_table(v) then
          wick.error(("DataParallel: replica 1 returned a table but replica %d returned a %s"):format(i, type(v)))
        end
        column[i] = v[k]
      end
      out[k] = gather(column, device, dim)
    end
    return out
  end
  return first
end

-- ---- forward ----

-- Runs fn(...) with CUDA device `device` current, so that tensors a forward
-- creates on "cuda" land on its replica's device; other devices run as they are.
local function on_device(device, fn, ...)
  if device.type == "cuda" then return wick.cuda.with_device(device.index, fn, ...) end
  return fn(...)
end

local function pack(...) return { n = select("#", ...), ... } end

function DataParallel:forward(...)
  check.module(self, "DataParallel:forward", "self")
  local ids = self.device_ids
  if #ids == 0 then return self.module(...) end
  check_source_device(self)
  local dim = self.dim
  local inputs = scatter_args(ids, dim, ...)
  if #ids == 1 then
    -- one device: the module itself on device_ids[1]; like PyTorch, the
    -- result stays there (output_device only matters for several devices)
    local args = inputs[1]
    return on_device(ids[1], self.module, unpack(args, 1, args.n))
  end
  local results = {}
  local most = 0
  for i, args in ipairs(inputs) do
    local device = ids[i]
    local replica = i == 1 and self.module or replicate(self.module, device, {})
    results[i] = on_device(device, function() return pack(replica(unpack(args, 1, args.n))) end)
    most = math.max(most, results[i].n)
  end
  local out = {}
  for k = 1, most do
    local column = {}
    for i, r in ipairs(results) do column[i] = r[k] end
    if column[1] ~= nil then out[k] = gather(column, self.output_device, dim) end
  end
  return unpack(out, 1, most)
end

-- Exposed for the specs: the scatter and replicate steps alone.
DataParallel._scatter = function(devices, dim, ...)
  check.table(devices, "DataParallel._scatter", "devices")
  check.dim(dim, "DataParallel._scatter", "dim")
  local list = {}
  for i, d in ipairs(devices) do list[i] = to_device(d, "device_ids") end
  return scatter_args(list, dim, ...)
end
DataParallel._replicate = function(module, device)
  return replicate(check.module(module, "DataParallel._replicate", "module"), wick.device(device), {})
end

return DataParallel
