-- wick: tensors and devices from a C core, scripted from Lua.
-- This file assembles the public module from the C binding ("wick.core") and
-- the Lua-side pieces: device objects, tensor fields, printing, fast paths.

local core = require("wick.core")

-- Lua 5.1/LuaJIT and 5.2+ (the Lua 5.4 module, WICK_LUA54) alike
local unpack = table.unpack or unpack
local function pack(...) return { n = select("#", ...), ... } end

-- Errors raised from wick's own Lua files name the user's line, not ours.
local own_source = debug.getinfo(1, "S").source
core.set_lua_dir((own_source:gsub("[^/\\]*$", "")))

local wick = {}
-- LuaJIT snapshots of 2021-09..2022-04 (Debian 12's among them) can miscompile
-- a pairs() loop into a segfault (LuaJIT issue #829): such traces are
-- discarded before they run (wick/jit_guard.lua). First, so that few traces
-- exist before it.
wick._jit_guard = require("wick.jit_guard").install()
local check = require("wick.argcheck")
local Tensor = core.Tensor -- the methods table
local mt = core._mt        -- the tensor metatable
wick.Tensor = Tensor
wick._core = core
wick.error = core.error

-- A warning: to the host's log callback (wick_set_log, from a C host) when one
-- is set, else to io.stderr as "wick: msg" (read at each call, so a script or
-- test that replaces io.stderr catches it).
function wick._warn(msg)
  check.string(msg, "_warn", "msg")
  if not core.log(2, msg) then io.stderr:write("wick: " .. msg .. "\n") end
end
--- wick.warn(msg): Python's warnings.warn(msg) in a port (rtdl's UserWarnings): the message
--- with the caller's line, once per line and message (Python's default filter), as wick's own
function wick.warn(msg)
  check.string(msg, "warn", "message")
  require("wick.nn.common").warn(msg)
end

-- ---- devices: interned objects, one per device per Lua state ----

-- A device object is an empty proxy: its fields live in `device_fields`, so
-- every assignment reaches __newindex and an interned device cannot be changed.
local Device = {}
local device_fields = setmetatable({}, { __mode = "k" })
Device.__index = function(d, k)
  local f = device_fields[d]
  local v = f and f[k]
  if v ~= nil then return v end
  return Device[k]
end
Device.__tostring = function(d) return d._name end
Device.__newindex = function() core.error("device objects are read-only") end
Device.__eq = function(a, b) return rawequal(a, b) end
-- by canonical name and by number (the core's device number, d._code, which
-- is how devices cross into C and how tensors report theirs: no strings).
-- The devices a machine can have (cpu, meta, cuda, cuda:0..63) are held for
-- good, so a name seen once is never parsed again; other ordinals (no GPU has
-- them) are interned weakly, so a script naming many cannot grow the table.
local devices = setmetatable({}, { __mode = "v" })
local devices_by_code = setmetatable({}, { __mode = "v" })
local held_devices = {}
local HELD_ORDINALS = 64

local function intern_device(type_, index, name, code)
  local d = devices[name]
  if d == nil then
    d = setmetatable({}, Device)
    device_fields[d] = { type = type_, index = index, _name = name, _code = code }
    devices[name] = d
    devices_by_code[code] = d
    if index == nil or index < HELD_ORDINALS then held_devices[#held_devices + 1] = d end
  end
  return d
end

local device_of_code = core.device_of_code
local function device_by_code(code) return devices_by_code[code] or intern_device(device_of_code(code)) end

--- wick.device("cuda:1"), wick.device("cuda", 1), wick.device(d)
function wick.device(spec, index)
  if getmetatable(spec) == Device then return spec end
  if type(spec) == "number" and index == nil then spec, index = "cuda", spec end -- torch.device(0) is cuda:0
  if index == nil and devices[spec] then return devices[spec] end -- a canonical name seen before
  if type(spec) ~= "string" then
    core.error("wick.device: expected a string such as 'cpu', 'cuda', 'cuda:1' or 'meta', got " .. type(spec))
  end
  if index ~= nil then
    if type(index) ~= "number" or index < 0 or index ~= math.floor(index) or spec:find(":") then
      core.error(("wick.device: invalid device '%s' with index %s (accepted forms: 'cpu', 'cuda', 'cuda:N' (N >= 0), 'meta')")
        :format(spec, tostring(index)))
    end
    spec = spec .. ":" .. index
  end
  return intern_device(core.parse_device(spec))
end
wick.Device = Device

--- wick.set_default_dtype(dtype) / get_default_dtype(): the floating dtype
--- factories (wick.zeros, wick.tensor, nn layers' parameters) make when no
--- dtype is given, as torch.set_default_dtype; float32 unless set
wick.set_default_dtype = core.set_default_dtype
wick.get_default_dtype = core.get_default_dtype
--- wick.set_default_device(device) / get_default_device(): where factories
--- put tensors when no device is given (nil: the CPU again), as
--- torch.set_default_device
function wick.set_default_device(d)
  if getmetatable(d) == Device then d = device_fields[d]._name end
  core.set_default_device(d)
end
function wick.get_default_device() return device_by_code(core.get_default_device()) end


-- ---- dtypes ----

wick.dtypes = {} -- the core's names (wick_dtype_name), in its order
for i, d in ipairs(core.dtypes) do wick.dtypes[i] = d end
for _, d in ipairs(wick.dtypes) do wick[d] = d end
-- PyTorch's aliases as constants too: {dtype = wick.long}, t:to(wick.double)
for alias, d in pairs(core.dtype_aliases) do wick[alias] = d end
-- the dtype facts (name -> {size, is_floating, is_signed, digits, index}), read
-- from the core's one table: wick.serialize, wick.pytorch, ops and print use it
local dtype_info = core.dtype_info
wick._dtype_info = dtype_info

-- ---- tensor fields read with `.` ----

local Size = { __name = "Size" }
-- s[-1]: the last size, as Python's negative indices; s[{a, b}] (or s[{{a, b}}],
-- as a tensor's range) the sizes a..b inclusive as a Size, negative ends from
-- the end and b the last when absent: Python's shape[1:] is s[{2, -1}]; ends
-- past the Size clamp, as a tuple's slice
local function size_slice(s, k)
  local n = #s
  if not check.is_slice(k) and #k == 1 and check.is_slice(k[1]) then k = k[1] end -- (shape[{wick.slice(nil, -1)}], as a tensor's key)
  if check.is_slice(k) then -- Python's shape[:2] (performer's torch.full(context.shape[:2], ...))
    local out = {}
    local first, last, step = check.slice_range(k, n, "Size")
    for i = first, last, step do out[#out + 1] = s[i] end
    return setmetatable(out, Size)
  end
  local r = type(k[1]) == "table" and #k == 1 and k[1] or k
  local a, b = r[1] or 1, r[2] or -1
  if type(a) ~= "number" or type(b) ~= "number" or a % 1 ~= 0 or b % 1 ~= 0 or #r > 2 then
    wick.error("Size: a range is {first, last} (integers, inclusive), got " .. check.describe(k))
  end
  if a < 0 then a = n + a + 1 end
  if b < 0 then b = n + b + 1 end
  -- ends past the Size are clamped, as Python's slices of a tuple are
  -- (YOLOv3's grid.shape[2:4] of a 1-D grid is torch.Size([]))
  a, b = math.max(a, 1), math.min(b, n)
  local out = {}
  for i = a, b do out[#out + 1] = s[i] end
  return setmetatable(out, Size)
end
Size.__index = function(s, k)
  if type(k) == "number" then -- (an index in range is a raw hit and never comes here)
    local n = #s
    if k < 0 and k >= -n then return rawget(s, n + k + 1) end
    -- n + 1 is nil: Lua 5.4's ipairs reads through __index and stops there
    if k % 1 == 0 and k ~= n + 1 then
      wick.error(k == 0 and "Size: index 0 is invalid: dims count from 1 (Python's shape[0] is shape[1], "
        .. "shape[-1] the last)" or ("Size: index %s out of range for a Size of %d dims"):format(check.describe(k), n))
    end
    return nil
  end
  if type(k) == "table" then return size_slice(s, k) end
  return Size[k]
end
-- s[i] = v: Python's list(x.size())[i] = v, a negative i from the end (MACE's size[dim] = dim_size, dim = -1);
-- 0 and a negative i past the start are an error (a write there would be lost); past the end, a table's growth
Size.__newindex = function(s, k, v)
  if type(k) ~= "number" or k > 0 then return rawset(s, k, v) end
  local n = #s
  if k < 0 and k >= -n and k % 1 == 0 then return rawset(s, n + k + 1, v) end
  wick.error(k == 0 and "Size: index 0 is invalid: dims count from 1 (Python's shape[0] is shape[1], shape[-1] the last)"
    or ("Size: assignment index %s out of range for a Size of %d dims"):format(check.describe(k), n))
end
Size.__tostring = function(s)
  local parts = {}
  for i = 1, #s do parts[i] = tostring(s[i]) end
  return "[" .. table.concat(parts, ", ") .. "]"
end
Size.__eq = function(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do if a[i] ~= b[i] then return false end end
  return true
end
function Size.numel(s) local n = 1; for i = 1, #s do n = n * s[i] end; return n end
--- s:tolist() (also s:totable()): the sizes as a plain table (Python's list(x.size()))
function Size.tolist(s)
  local out = {}
  for i = 1, #s do out[i] = s[i] end
  return out
end
Size.totable = Size.tolist
--- s:unpack(): the sizes as values (Python's b, c, h, w = x.shape), as unpack(s)
function Size.unpack(s) return unpack(s, 1, #s) end
-- shape[{1, -2}] + {-1, 2} (Python's xq.shape[:-1] + (-1, 2)): a Size of both
local function size_join(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then
    local hint = (type(a) == "number" or type(b) == "number") and " (x:size() is one Size table: `local B, T, C = "
      .. "x:size():unpack()` for Python's `B, T, C = x.size()`; a number from it is x:size(d))" or ""
    wick.error(("Size: can only join a Size with a table of sizes, got %s and %s%s"):format(check.describe(a),
      check.describe(b), hint))
  end
  local out = {}
  for i = 1, #a do out[i] = a[i] end
  for i = 1, #b do out[#out + 1] = b[i] end
  return setmetatable(out, Size)
end
Size.__add, Size.__concat = size_join, size_join
-- s * n (or n * s): the sizes n times over, Python's tuple repetition (drop path's
-- (x.shape[0],) + (1,) * (x.ndim - 1) is wick.Size({x.shape[1]}) + wick.Size({1}) * (x:dim() - 1))
Size.__mul = function(a, b)
  if type(a) == "number" then a, b = b, a end
  if type(b) ~= "number" or b % 1 ~= 0 or getmetatable(a) ~= Size then
    -- (a Size times nil or another Size: most often Python's `B, T, C = x.size()` ported as
    -- `local B, T, C = x:size()`, which puts the whole Size in B)
    local hint = (b == nil or getmetatable(b) == Size) and " (x:size() is one Size table: `local B, T, C = "
      .. "x:size():unpack()` for Python's `B, T, C = x.size()`)" or ""
    wick.error(("Size: can only repeat a Size an integer number of times, got %s * %s%s"):format(check.describe(a),
      check.describe(b), hint))
  end
  local out, n = {}, #a
  if n * math.max(b, 0) > 2 ^ 24 then wick.error(("Size: %d repeats of a Size of %d dims is too many"):format(b, n)) end
  for r = 0, b - 1 do for i = 1, n do out[r * n + i] = a[i] end end
  return setmetatable(out, Size)
end
wick.Size = Size
--- wick.Size({2, 3}) (or wick.Size(2, 3)): torch.Size, comparable with == to a tensor's shape
--- (integers, -1 too, as torch.Size((-1,)) + shape for a reshape)
setmetatable(Size, { __call = function(_, first, ...)
  local dims = type(first) == "table" and first or { first, ... }
  local s = {}
  for i, v in ipairs(dims) do
    -- (a 0-dim integer tensor is its number, Python's __index__: Longformer's [b * h, num_global.max(), n])
    if check.is_tensor(v) and v:dim() == 0 and not v:is_floating_point() and not v:is_complex() and v.dtype ~= "bool" then
      v = v:item()
    end
    s[i] = check.int(v, "Size", ("size[%d]"):format(i))
  end
  return setmetatable(s, Size)
end })

-- t:size(): a wick.Size too (an array that prints as [2, 3], not as a table's address)
local tensor_size = Tensor.size
function Tensor.size(t, dim, ...)
  if dim == nil then return setmetatable(tensor_size(t), Size) end
  return tensor_size(t, dim, ...) -- (a second dim: the binding's error, as PyTorch's TypeError)
end

local tensor_shape, tensor_dtype, tensor_device_code = Tensor._shape, Tensor._dtype, Tensor._device_code
local function tensor_device(t) return device_by_code(tensor_device_code(t)) end
local fields = {
  shape = function(t) return setmetatable(tensor_shape(t), Size) end,
  dtype = tensor_dtype,
  device = tensor_device,
  ndim = function(t) return t:dim() end,
  is_cuda = function(t) return tensor_device(t).type == "cuda" end,
  is_meta = function(t) return tensor_device(t).type == "meta" end,
  is_cpu = function(t) return tensor_device(t).type == "cpu" end,
  is_mps = function() return false end, -- (no Apple GPU backend: torchmetrics' _bincount asks)
  -- PyTorch's p.data: the same storage, outside autograd, and its in-place writes unseen by autograd's
  -- check of saved tensors (.data's version counter of its own): Tacotron 2's outputs.data:masked_fill_()
  data = function(t) return t:_data() end,
  T = function(t) -- (PyTorch's warning for other than 2 dims: bbo's cov.T of a batch)
    if t:dim() ~= 2 and t:dim() ~= 0 then
      wick.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
        .. "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
        .. "`x:permute(...)` to reverse the dimensions of a tensor.")
    end
    local p = {}
    for i = t:dim(), 1, -1 do p[#p + 1] = i end
    return t:permute(unpack(p))
  end,
  mT = function(t) -- the last two dims swapped (a view)
    if t:dim() < 2 then
      check.fail("mT", "tensor.mT is only supported on matrices or batches of matrices. Got %d-D tensor.", t:dim())
    end
    return t:transpose(-2, -1)
  end,
  mH = function(t) return t:adjoint() end, -- mT conjugated (kornia's out3H.mH)
  H = function(t) -- a matrix's conjugate transpose
    if t:dim() ~= 2 and t:dim() ~= 0 then
      check.fail("H", "tensor.H is only supported on matrices (2-D tensors). Got %d-D tensor.", t:dim())
    end
    return t:dim() == 0 and t or t:adjoint()
  end,
  itemsize = function(t) return dtype_info[tensor_dtype(t)].size end, -- bytes per element
  nbytes = function(t) return t:numel() * dtype_info[tensor_dtype(t)].size end,
}
--- t:element_size(): bytes per element (t.itemsize)
function Tensor.element_size(t) return dtype_info[check.tensor(t, "element_size", "self").dtype].size end
-- a complex tensor's parts (views); the real part of a real tensor is itself (PyTorch's x.real is x)
fields.real = function(t) if t:is_complex() then return Tensor._real(t) end return t end
fields.imag = Tensor._imag
fields.requires_grad = Tensor._requires_grad
fields._version = Tensor._version_count -- PyTorch's t._version: one per in-place write autograd sees
fields.grad = Tensor._grad
fields.grad_fn = Tensor._grad_fn
fields.is_leaf = Tensor._is_leaf

--- t:retain_grad(): backward fills a non-leaf's t.grad too (summed over
--- backwards, as a leaf's), with the gradient of t's value after any in-place
--- op on it since (PyTorch's); t.retains_grad says so. A no-op on a leaf.
local retaining = setmetatable({}, { __mode = "k" })
function Tensor.retain_grad(t)
  check.tensor(t, "retain_grad", "self")
  if not t.requires_grad then core.error("retain_grad: can't retain_grad on a tensor that has requires_grad = false") end
  if t.grad_fn == nil or retaining[t] then return end
  retaining[t] = true
  t:_retain_grad()
end
fields.retains_grad = function(t) return retaining[t] == true end
wick._tensor_fields = fields

-- t[i] (a number: the hot path, first), t.field, t:method, and every other key
-- (tables of ranges, masks, index tensors; unknown names raise) in index_lua.c
local get_slice, index_get, index_set = Tensor._get, Tensor._index_get, Tensor._index_set
-- Whether strings a and b are at most n single-letter edits apart (Levenshtein).
local function edits_apart(a, b, n)
  if math.abs(#a - #b) > n then return false end
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur, best = { [0] = i }, i
    for j = 1, #b do
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a:byte(i) == b:byte(j) and 0 or 1))
      if cur[j] < best then best = cur[j] end
    end
    if best > n then return false end
    prev = cur
  end
  return prev[#b] <= n
end

-- A tensor's own attributes (PyTorch's `p.my_flag = True`: any other name a
-- script sets), kept beside the tensor object, not in its data.
local attributes = setmetatable({}, { __mode = "k" })
local named = setmetatable({}, { __mode = "k" }) -- a named result's first tensor: { field = tensor } (name_results)
local NAMED_NIL = {} -- a named result that is nil (Python's None)
local first_of = setmetatable({}, { __mode = "k" }) -- the first of several results: what gave it (wick._first_of)
--- wick._first_of(t, what): t, marked as the first of several results `what` returns (PyTorch's tuple:
--- MultiheadAttention, LSTM), so that t[0], Python's [0] of that tuple ported literally, says so
function wick._first_of(t, what)
  if getmetatable(t) == mt then first_of[t] = what end
  return t
end
mt.__index = function(t, k)
  local m = Tensor[k]
  if m ~= nil then
    if k == "values" or k == "indices" then -- (t:max(dim).values: a named result's, else the sparse readers)
      local r = named[t]
      if r and r[k] ~= nil then
        if r[k] == true then return t end
        return r[k] ~= NAMED_NIL and r[k] or nil
      end
    end
    return m
  end
  if type(k) == "number" then
    if k == 0 and named[t] then -- (PyTorch's torch.topk(s, k)[0], whose [1] here would be a row of the values)
      core.error("index 0 is invalid: indices count from 1; this tensor is the values of a result PyTorch names "
        .. "(topk, max(dim), sort, ...): PyTorch's r[0] is r.values and r[1] is r.indices (or local values, "
        .. "indices = ...), never r[1] and r[2], which index the values")
    end
    if k == 0 and first_of[t] then -- (a MultiheadAttention's mha(q, k, v)[0] ported literally)
      core.error(("index 0 is invalid: indices count from 1; this tensor is the first of the several values %s "
        .. "returns (PyTorch's tuple): PyTorch's r[0] is this tensor itself, (%s) or local out, second = ..., "
        .. "and [1] would index its first slice"):format(first_of[t], first_of[t] == "MultiheadAttention"
          and "mha(q, k, v)" or "rnn(x)"))
    end
    return get_slice(t, k)
  end
  local r = named[t]
  if r and r[k] ~= nil then
    if r[k] == true then return t end
    if r[k] == NAMED_NIL then return nil end
    return r[k]
  end
  local f = fields[k]
  if f ~= nil then return f(t) end
  local a = attributes[t]
  if a ~= nil and a[k] ~= nil then return a[k] end
  return index_get(t, k)
end

local setters = {
  requires_grad = function(t, v)
    -- (the attribute of a non-leaf is PyTorch's error also when set to true, which requires_grad_() allows:
    -- Reformer's next_attn_output.requires_grad = True on a tensor that must be a leaf)
    if v == true and not t.is_leaf then
      core.error("you can only change requires_grad flags of leaf tensors (t.requires_grad = true of a computed "
        .. "tensor; t:detach():requires_grad_() makes a leaf that requires grad)")
    end
    Tensor.requires_grad_(t, v)
  end,
  grad = function(t, v) Tensor._set_grad(t, v) end,
  data = function(t, v)
    if not wick.is_tensor(v) then
      core.error(("cannot assign %s to a tensor's 'data' (expected a tensor)"):format(check.describe(v)))
    end
    -- a gradient of the same shape follows the data's new dtype and device (improved-diffusion's
    -- convert_to_fp32 after an fp16 step: l.weight.data = l.weight.data.float(); PyTorch keeps the
    -- float16 gradient there, which its next accumulation mixes in)
    local g = t.grad
    if g ~= nil and (g.dtype ~= v.dtype or g.device ~= v.device) and tostring(g.shape) == tostring(v.shape) then
      t.grad = nil
      t:_replace(v)
      t.grad = g:to({ dtype = v.dtype, device = v.device })
      return
    end
    t:_replace(v)
  end,
}
wick._tensor_setters = setters
local tensor_of = core.tensor
-- complex values written into (or converted to) a real tensor keep their real parts, with PyTorch's warning (once per line)
local function discards_imag(fn, t, v)
  if getmetatable(v) == mt and v:is_complex() and not t:is_complex() then
    require("wick.nn.common").warn(fn .. ": Casting complex values to real discards the imaginary part")
  end
end
do
  local copy_ = Tensor.copy_
  function Tensor.copy_(t, src, ...)
    if getmetatable(t) == mt then discards_imag("copy_", t, src) end
    return copy_(t, src, ...)
  end
end
mt.__newindex = function(t, k, v)
  if type(k) ~= "string" then
    -- a plain Lua table of values (PyTorch's x[:2] = [1, 2]) becomes a tensor of t's dtype and device
    if type(v) == "table" and getmetatable(v) == nil then v = tensor_of(v, { dtype = tensor_dtype(t), device = tensor_device(t) }) end
    discards_imag("index_put_", t, v)
    return index_set(t, k, v)
  end
  local s = setters[k]
  if s then return s(t, v) end
  if Tensor[k] ~= nil or fields[k] ~= nil then
    core.error(("cannot set field '%s' of a tensor (%s)"):format(k, Tensor[k] ~= nil and "a method" or "read-only"))
  end
  -- another name is an attribute of this tensor object, as in PyTorch; one a
  -- letter or two from a field wick reads is most likely a typo: said once
  for name in pairs(setters) do
    if k ~= name and edits_apart(k, name, 2) then
      require("wick.nn.common").warn(("tensor attribute '%s' set: it is not '%s' (which this does not change)"):format(k, name))
    end
  end
  local a = attributes[t]
  if a == nil then
    a = {}
    attributes[t] = a
  end
  a[k] = v
end

-- ---- memory formats ----
-- PyTorch's memory_format: wick.contiguous_format (row-major, what wick makes),
-- wick.channels_last (a 4-D tensor laid out N, H, W, C), wick.channels_last_3d
-- (5-D: N, D, H, W, C) and wick.preserve_format (as it is). t:contiguous(fmt),
-- t:is_contiguous(fmt), t:to({memory_format =}) and t:clone({memory_format =})
-- take them (the layout is real: strides as PyTorch's); a module's
-- to({memory_format =}) is taken as a hint and changes no layout.
wick.contiguous_format, wick.channels_last = "contiguous_format", "channels_last"
wick.channels_last_3d, wick.preserve_format = "channels_last_3d", "preserve_format"
wick.legacy_contiguous_format = wick.contiguous_format -- (PyTorch's gumbel_softmax says it: the same layout)
local LAST = { channels_last = { 4, { 1, 3, 4, 2 }, { 1, 4, 2, 3 } },
  channels_last_3d = { 5, { 1, 3, 4, 5, 2 }, { 1, 5, 2, 3, 4 } } }
local function memory_format(v, fn)
  if v ~= nil and v ~= "contiguous_format" and v ~= "preserve_format" and not LAST[v] then
    core.error(("%s: memory_format must be wick.contiguous_format, wick.channels_last, wick.channels_last_3d or "
      .. "wick.preserve_format, got %s"):format(fn, type(v) == "string" and "'" .. v .. "'" or check.describe(v)))
  end
  return v
end
wick._memory_format = memory_format
local c_contiguous, c_is_contiguous = Tensor.contiguous, Tensor.is_contiguous
-- fmt given as itself or as {memory_format = fmt}
local function format_arg(v, fn)
  if type(v) == "table" and getmetatable(v) == nil then v = check.options(v, fn, { memory_format = "string" }).memory_format end
  return memory_format(v, fn)
end
local function in_format(t, fmt)
  local l = LAST[fmt]
  if not l then return c_is_contiguous(t) end
  return t:dim() == l[1] and c_is_contiguous(t:permute(unpack(l[2])))
end
local function to_format(t, fmt, fn)
  if fmt == nil or fmt == "preserve_format" then return t end
  local l = LAST[fmt]
  if not l then return c_contiguous(t) end
  if t:dim() ~= l[1] then core.error(("%s: required rank %d tensor to use %s format"):format(fn, l[1], fmt)) end
  if in_format(t, fmt) then return t end
  return c_contiguous(t:permute(unpack(l[2]))):permute(unpack(l[3]))
end
function Tensor.contiguous(t, fmt)
  if fmt == nil then return c_contiguous(t) end
  fmt = format_arg(fmt, "contiguous")
  if fmt == "preserve_format" then core.error("contiguous: preserve memory format is unsupported by the contiguous operator") end
  return to_format(check.tensor(t, "contiguous", "self"), fmt, "contiguous")
end
function Tensor.is_contiguous(t, fmt)
  if fmt == nil then return c_is_contiguous(t) end
  fmt = format_arg(fmt, "is_contiguous")
  if fmt == "preserve_format" then core.error("is_contiguous: preserve memory format is unsupported") end
  return in_format(check.tensor(t, "is_contiguous", "self"), fmt)
end
-- t:to(..., {memory_format =}) and t:clone({memory_format =}): the C method, then the layout
local c_to, c_clone = Tensor.to, Tensor.clone
-- (and {copy = true}: a new tensor even where t already is what was asked, HF's
-- logits[:, -1, :].to(copy=True, dtype=torch.float32))
function Tensor.to(t, ...)
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  if type(last) ~= "table" or getmetatable(last) ~= nil or (last.memory_format == nil and last.copy == nil) then
    local r = c_to(t, ...)
    if not rawequal(r, t) then discards_imag("to", r, t) end
    return r
  end
  local fmt = last.memory_format ~= nil and memory_format(last.memory_format, "to") or nil
  if last.copy ~= nil and type(last.copy) ~= "boolean" then check.expected("to", "copy", "a boolean", last.copy) end
  local rest = {}
  for k, v in pairs(last) do if k ~= "memory_format" and k ~= "copy" then rest[k] = v end end
  local args = { ... }
  args[n] = next(rest) ~= nil and rest or nil
  local r = c_to(t, unpack(args, 1, n))
  discards_imag("to", r, t)
  if fmt then r = to_format(r, fmt, "to") end
  if last.copy and rawequal(r, t) then r = c_clone(t) end
  return r
end
function Tensor.clone(t, opts)
  if opts == nil then return c_clone(t) end
  local fmt = format_arg(opts, "clone")
  if fmt == nil or fmt == "preserve_format" then return c_clone(t) end
  check.tensor(t, "clone", "self")
  if fmt == "contiguous_format" then return c_contiguous(c_clone(t)) end
  if t:dim() ~= LAST[fmt][1] then -- (PyTorch's error)
    core.error(("clone: required rank %d tensor to use %s format"):format(LAST[fmt][1], fmt))
  end
  return c_clone(t:permute(unpack(LAST[fmt][2]))):permute(unpack(LAST[fmt][3]))
end

-- ---- conversions and small methods written over the C ones ----

-- t:float(), t:long(), ...: the core's aliases (PyTorch's names), and the two
-- dtypes PyTorch's methods call by their own name
local conversions = { bfloat16 = "bfloat16", bool = "bool" }
for alias, dtype in pairs(core.dtype_aliases) do conversions[alias] = dtype end
-- Each checks its receiver (t:float() on a non-tensor names the method and the
-- user's line) and its arguments; the C methods they call check the rest.
local check_tensor = check.tensor

--- t:set_(source): t takes source's data (its storage, shared from now on,
--- shape and device) and keeps its identity, requires_grad and grad
--- (PyTorch's and Torch7's set_); source of another dtype is PyTorch's error (GRU4Rec's
--- weight.set_(float32 values) of a float64 model), where t.data = source takes its dtype
--- too (PyTorch's `param.data = source`). t:set_() empties t. t:set_(source, storage_offset, size[, stride])
--- takes that window of source's storage (the offset 0-based, strides contiguous by default), as PyTorch's.
function Tensor.set_(t, source, storage_offset, size, stride)
  check_tensor(t, "set_", "self")
  if source == nil then source = t:new_empty(0) end
  check_tensor(source, "set_", "source")
  if source.dtype ~= t.dtype then
    check.fail("set_", "Could not set tensor of type %s to a tensor of type %s", source.dtype, t.dtype)
  end
  if storage_offset ~= nil then
    check.int(storage_offset, "set_", "storage_offset", 0)
    if size == nil then check.fail("set_", "a storage_offset needs a size: t:set_(source, storage_offset, size[, stride])") end
    size = getmetatable(size) == wick.Size and size:totable() or check.table(size, "set_", "size")
    if stride ~= nil then stride = getmetatable(stride) == wick.Size and stride:totable() or check.table(stride, "set_", "stride") end
    if stride == nil then -- (contiguous)
      stride = {}
      local step = 1
      for d = #size, 1, -1 do stride[d], step = step, step * size[d] end
    end
    source = wick.no_grad(function() return source:detach():as_strided(size, stride, storage_offset) end)
  end
  return t:_replace(source)
end
--- t:share_memory_(): PyTorch's, for sharing with other processes; wick's tensors live in one
--- process, so t itself (GRU4Rec's optimizer state); t:is_shared() is then true, as PyTorch's
Tensor.share_memory_ = check.no_more(function(t)
  check_tensor(t, "share_memory_", "self")._shared = true
  return t
end, "share_memory_", 1)
Tensor.is_shared = check.no_more(function(t) return check_tensor(t, "is_shared", "self")._shared == true end,
  "is_shared", 1)

for name, dtype in pairs(conversions) do
  Tensor[name] = check.no_more(function(t) return check_tensor(t, name, "self"):to(dtype) end, name, 1)
end
function Tensor.cpu(t) return check_tensor(t, "cpu", "self"):to("cpu") end
function Tensor.cuda(t, index, opts)
  check_tensor(t, "cuda", "self")
  if type(index) == "table" and opts == nil then index, opts = nil, index end
  if index ~= nil then check.int(index, "cuda", "device", 0) end
  check.options(opts, "cuda", { non_blocking = "boolean", dtype = "dtype", device = "device" })
  return t:to(index == nil and "cuda" or wick.device("cuda", index), opts)
end
-- PyTorch's legacy type names, as t:type(name) takes them ("torch.FloatTensor")
local LEGACY = { FloatTensor = "float32", DoubleTensor = "float64", HalfTensor = "float16",
  BFloat16Tensor = "bfloat16", LongTensor = "int64", IntTensor = "int32", ShortTensor = "int16",
  CharTensor = "int8", ByteTensor = "uint8", BoolTensor = "bool" }
local TYPE_NAME = { complex64 = "ComplexFloatTensor", complex128 = "ComplexDoubleTensor" }
for name, dtype in pairs(LEGACY) do TYPE_NAME[dtype] = name end
-- PyTorch's (and Torch7's) type name of a tensor: "torch.FloatTensor", "torch.cuda.HalfTensor"
local function type_name(t)
  return "torch." .. (t.device.type == "cuda" and "cuda." or "") .. (TYPE_NAME[t.dtype] or t.dtype)
end
-- a type name's dtype and device ("cuda" or nil), or nil: the inverse of type_name
local DTYPE_OF_NAME = {}
for dtype, name in pairs(TYPE_NAME) do DTYPE_OF_NAME[name] = dtype end
local function from_type_name(s)
  local cuda, name = s:match("^torch%.(c?u?d?a?%.?)(%w+Tensor)$")
  if not (name and DTYPE_OF_NAME[name] and (cuda == "" or cuda == "cuda.")) then return nil end
  return DTYPE_OF_NAME[name], cuda == "cuda." and "cuda" or nil
end
--- t:type(): PyTorch's type name ("torch.FloatTensor", "torch.cuda.HalfTensor": WaveGlow's
--- z.type() == 'torch.cuda.HalfTensor'); t:type(dtype) converts, like t:to(dtype): dtype is
--- a dtype, its name, PyTorch's type name ("torch.cuda.FloatTensor") or a legacy type
--- (wick.FloatTensor, wick.cuda.LongTensor: also moves to that device)
function Tensor.type(t, dtype, ...)
  check_tensor(t, "type", "self")
  if dtype == nil then return type_name(t) end
  if rawequal(dtype, Tensor) then return t:to({ dtype = core.get_default_dtype() }) end -- torch.Tensor: the default dtype
  if type(dtype) == "table" and rawget(dtype, "_legacy_dtype") then
    return t:to({ dtype = dtype._legacy_dtype, device = dtype._legacy_device or t.device })
  end
  if type(dtype) == "table" and getmetatable(dtype) == nil then -- by keyword: ViTMatte's .type(dtype=preds.type())
    local o = check.options(dtype, "type", { dtype = "any", non_blocking = "boolean" })
    if select("#", ...) > 0 then check.fail("type", "expected the options table last") end
    if o.dtype == nil then return type_name(t) end
    return Tensor.type(t, o.dtype)
  end
  if type(dtype) == "string" then
    local named, cuda = from_type_name(dtype)
    if named then return t:to({ dtype = named, device = cuda or t.device }) end
    if dtype:match("^torch%..*Tensor$") then
      check.fail("type", "unknown tensor type '%s' (PyTorch's names: 'torch.FloatTensor', 'torch.cuda.BFloat16Tensor', ...)", dtype)
    end
  end
  return t:to(dtype, ...)
end
--- wick.typename(v): torch.typename, a tensor's type name (t:type()), else the class name of a module
--- or an object, else Lua's type
function wick.typename(v)
  if getmetatable(v) == mt then return type_name(v) end
  local c = type(v) == "table" and getmetatable(v)
  if type(c) == "table" and type(rawget(c, "__name")) == "string" then return rawget(c, "__name") end
  return type(v)
end
function Tensor.nelement(t) return check_tensor(t, "nelement", "self"):numel() end
--- t:get_device(): -1 on the CPU, else the device's index (PyTorch's)
function Tensor.get_device(t)
  local d = check_tensor(t, "get_device", "self").device
  return d.type == "cpu" and -1 or (d.index or 0)
end
function Tensor.zero_(t) return check_tensor(t, "zero_", "self"):fill_(0) end
function Tensor.view_as(t, other)
  return check_tensor(t, "view_as", "self"):view(check_tensor(other, "view_as", "other"):size())
end
function Tensor.reshape_as(t, other)
  return check_tensor(t, "reshape_as", "self"):reshape(check_tensor(other, "reshape_as", "other"):size())
end
function Tensor.expand_as(t, other)
  return check_tensor(t, "expand_as", "self"):expand(check_tensor(other, "expand_as", "other"):size())
end
function Tensor.where(t, cond, other) return core.where(cond, check_tensor(t, "where", "self"), other) end
function Tensor.is_floating_point(t)
  return dtype_info[check_tensor(t, "is_floating_point", "self").dtype].is_floating
end
function Tensor.is_complex(t) return dtype_info[check_tensor(t, "is_complex", "self").dtype].is_complex end
--- t:is_signed(): PyTorch's (every dtype but bool and uint8)
function Tensor.is_signed(t)
  local dt = check_tensor(t, "is_signed", "self").dtype
  return dt ~= "bool" and dt ~= "uint8"
end
-- PyTorch's conjugate and negative bits are not kept: conj() is a copy, so
-- these have nothing to resolve
function Tensor.resolve_conj(t) return check_tensor(t, "resolve_conj", "self") end
Tensor.resolve_neg = Tensor.resolve_conj
function Tensor.is_conj(t) check_tensor(t, "is_conj", "self"); return false end
function Tensor.conj_physical(t) return check_tensor(t, "conj_physical", "self"):conj() end
function Tensor.is_same_storage(t, other)
  check_tensor(t, "is_same_storage", "self")
  return t:_storage_id() == check_tensor(other, "is_same_storage", "other"):_storage_id()
end
function Tensor.equal(t, other)
  check_tensor(t, "equal", "self")
  check_tensor(other, "equal", "other")
  if t:dim() ~= other:dim() then return false end
  for i = 1, t:dim() do if t:size(i) ~= other:size(i) then return false end end
  return t:eq(other):all()
end
-- t:all() / t:any(): a Lua boolean (so `if t:all() then` means what it says);
-- with a dim (and keepdim), a bool tensor over that dim, as PyTorch's (uint8 of a uint8 tensor)
local function bool_reduce_dim(fn, t, dim)
  local n = math.max(t:dim(), 1)
  if type(dim) == "number" and (dim == 0 or dim > n or dim < -n) then
    check.fail(fn, "dimension %s out of range (expected -%d to %d, 1-based)", check.describe(dim), n, n)
  end
end
-- (PyTorch's all and any of a uint8 tensor are uint8, its old boolean type)
local function uint8_kept(t, r) return t.dtype == "uint8" and r:to("uint8") or r end
function Tensor.all(t, dim, keepdim)
  check_tensor(t, "all", "self")
  if dim ~= nil then bool_reduce_dim("all", t, dim); return uint8_kept(t, t:eq(0):sum(dim, keepdim):eq(0)) end
  return t:numel() == 0 or t:to("bool"):to("int64"):min():item() == 1
end
function Tensor.any(t, dim, keepdim)
  check_tensor(t, "any", "self")
  if dim ~= nil then bool_reduce_dim("any", t, dim); return uint8_kept(t, t:ne(0):sum(dim, keepdim):gt(0)) end
  return t:numel() > 0 and t:to("bool"):to("int64"):max():item() == 1
end
-- Python's t.any().item() ported as t:any():item(): a Lua boolean answers item() (and tolist())
-- with itself; another field of a boolean is an error that says why. (Only when the host has not
-- given booleans a metatable of its own: an embedding program's stays.)
if debug and debug.getmetatable and debug.setmetatable and debug.getmetatable(true) == nil then
  local function itself(b) return b end
  debug.setmetatable(true, { __index = function(_, k)
    if k == "item" or k == "tolist" then return itself end
    error(("attempt to index a boolean value (field '%s'): t:any(), t:all() and t:equal(u) give Lua booleans "
      .. "here, not 0-dim tensors (b:item() is b itself); so do Lua's `t == x` and `t ~= x` (Python's "
      .. "(t != -1).long() is t:ne(-1):long(), t == x is t:eq(x)); `not t` of a tensor is always false (Python's "
      .. "~mask is mask:logical_not())"):format(tostring(k)), 2)
  end })
end
function Tensor.allclose(t, other, rtol, atol, opts)
  check_tensor(t, "allclose", "self")
  check_tensor(other, "allclose", "other")
  -- PyTorch's keywords: allclose(a, b, {rtol =, atol =, equal_nan =}) (as isclose takes them)
  if type(rtol) == "table" then rtol, atol, opts = nil, nil, rtol elseif type(atol) == "table" then atol, opts = nil, atol end
  local o = check.options(opts, "allclose", { rtol = "number", atol = "number", equal_nan = "boolean" })
  if (o.rtol ~= nil and rtol ~= nil) or (o.atol ~= nil and atol ~= nil) then
    check.fail("allclose", "rtol or atol given both by position and as an option")
  end
  rtol, atol = o.rtol or rtol, o.atol or atol
  rtol = check.opt_number(rtol, "allclose", "rtol", 1e-5)
  atol = check.opt_number(atol, "allclose", "atol", 1e-8)
  return t:isclose(other, { rtol = rtol, atol = atol, equal_nan = o.equal_nan == true }):all()
end
function Tensor.square(t) return check_tensor(t, "square", "self") * t end
--- t:dist(other[, p = 2]) (torch.dist): the p-norm of t - other
function Tensor.dist(t, other, p)
  check_tensor(t, "dist", "self")
  check_tensor(other, "dist", "other")
  return (t - other):norm(check.opt_number(p, "dist", "p", 2))
end
-- bool tensors: NaN is the one value not equal to itself; inf - inf is NaN
function Tensor.isnan(t) return check_tensor(t, "isnan", "self"):ne(t) end
function Tensor.isfinite(t)
  check_tensor(t, "isfinite", "self")
  if not t:is_floating_point() then return t:eq(t) end
  return (t - t):eq(0)
end
function Tensor.isinf(t)
  check_tensor(t, "isinf", "self")
  if not t:is_floating_point() then return t:ne(t) end
  return t:abs():eq(math.huge)
end
--- t:norm([p = 2[, dim[, keepdim]]][, {dtype =}]): the vector p-norm of all elements, or
--- along dim (p a number: 1, 2, inf, 0 or any other; "fro" is 2); dtype: t cast to it first
local NORM_OPTIONS = { p = "number|string", dim = "number|table", keepdim = "boolean", keepdims = "boolean",
  dtype = "dtype" }
function Tensor.norm(t, p, dim, keepdim)
  check_tensor(t, "norm", "self")
  -- PyTorch's keywords: t:norm{p = 2, dim = 2}, t:norm(2, {dim = 2, keepdim = true})
  -- (keepdims: NumPy's spelling, which PyTorch takes too); another option is an error
  local dtype
  if type(p) == "table" then
    check.options(p, "norm", NORM_OPTIONS)
    p, dim, keepdim, dtype = p.p, p.dim, p.keepdim or p.keepdims, p.dtype
  end
  if type(dim) == "table" and dim[1] == nil then
    check.options(dim, "norm", NORM_OPTIONS)
    if dim.p ~= nil then core.error("norm: p given twice (as an argument and as an option)") end
    if keepdim == nil then keepdim = dim.keepdim or dim.keepdims end
    dim, dtype = dim.dim, dim.dtype
  end
  if type(keepdim) == "table" then -- t:norm(2, 2, {keepdim = true})
    check.options(keepdim, "norm", { keepdim = "boolean", keepdims = "boolean", dtype = "dtype" })
    keepdim, dtype = keepdim.keepdim or keepdim.keepdims, keepdim.dtype
  end
  -- (cm's th.norm(p, p=2, dtype=th.float32))
  if dtype ~= nil then return Tensor.norm(t:to(dtype), p, dim, keepdim) end
  check.wrap_dims(t, dim, "norm")
  if p == nil or p == "fro" then p = 2 end
  if p == "nuc" then -- (PyTorch's t.norm('nuc'): the nuclear norm of a matrix, or over two dims)
    return wick.linalg.matrix_norm(t, "nuc", dim or { -2, -1 }, keepdim == true)
  end
  if type(p) ~= "number" then core.error(("norm: p must be a number, 'fro' or 'nuc', got %s"):format(check.describe(p))) end
  -- bfloat16 and float16 in float32 throughout, rounded once at the end, as PyTorch's
  -- (Muon's X.norm(): the sum of squares rounded to bfloat16 moved the root)
  if t.dtype == "bfloat16" or t.dtype == "float16" then
    return Tensor.norm(t:float(), p, dim, keepdim):to(t.dtype)
  end
  local function total(x) if dim == nil then return x:sum() end return x:sum(dim, keepdim == true) end
  local a = t:abs()
  -- r ^ (1 / p) whose gradient is 0 where r is 0 (a zero vector: PyTorch's
  -- subgradient), not inf * 0 = NaN (a WGAN-GP penalty on a dead unit)
  local function root(r, k)
    if not (r.requires_grad and wick.is_grad_enabled()) then return k == 2 and r:sqrt() or r ^ (1 / k) end
    local zero = r:eq(0)
    local safe = wick.where(zero, 1, r)
    return wick.where(zero, 0, k == 2 and safe:sqrt() or safe ^ (1 / k))
  end
  if p == 2 then return root(total(t:_abs_squared()), 2) end
  if p == 1 then return total(a) end
  if p == 0 then return total(t:ne(0):to(t:is_floating_point() and t.dtype or "float32")) end
  if p == math.huge or p == -math.huge then -- (amax: a dim or a list of them, PointNet's dim=(1,2))
    if dim == nil then return a[p > 0 and "max" or "min"](a) end
    return a[p > 0 and "amax" or "amin"](a, dim, keepdim == true)
  end
  return root(total(a ^ p), p)
end
-- |t|^2 elementwise, real; of a complex t the sum of its parts' squares (no
-- square root: its gradient stays finite at 0)
function Tensor._abs_squared(t)
  if not check_tensor(t, "_abs_squared", "self"):is_complex() then return t * t end
  local v = t:view_as_real()
  return (v * v):sum(-1)
end
function Tensor.isposinf(t) return check_tensor(t, "isposinf", "self"):eq(math.huge) end
function Tensor.isneginf(t) return check_tensor(t, "isneginf", "self"):eq(-math.huge) end
-- t:new_zeros(size...[, opts]) and friends: t's device and dtype unless opts say otherwise.
local function is_options(v) return type(v) == "table" and getmetatable(v) == nil and v[1] == nil and next(v) ~= nil end
local function with_defaults(t, opts)
  local o = { device = t.device, dtype = t.dtype }
  if opts then for k, v in pairs(opts) do o[k] = v end end
  return o
end
-- PyTorch's keywords size= and fill_value= out of an options table: the table
-- without them, and their values
local function take_keywords(opts)
  if not is_options(opts) or (opts.size == nil and opts.fill_value == nil) then return opts end
  local rest = {}
  for k, v in pairs(opts) do if k ~= "size" and k ~= "fill_value" then rest[k] = v end end
  return rest, opts.size, opts.fill_value
end
for name, make in pairs({ new_zeros = "zeros", new_ones = "ones", new_empty = "empty" }) do
  Tensor[name] = function(t, ...)
    check_tensor(t, name, "self")
    local args, n = { ... }, select("#", ...)
    local opts, size = take_keywords(args[n])
    if size ~= nil then -- t:new_zeros{size = {2, 3}}
      if n > 1 then check.fail(name, "size given both by position and as an option") end
      args, n = { size, next(opts) ~= nil and opts or nil }, next(opts) ~= nil and 2 or 1
    end
    if is_options(args[n]) then args[n] = with_defaults(t, args[n]) else n = n + 1; args[n] = with_defaults(t) end
    for i = 1, n - 1 do -- (named here: the core's message would name wick.zeros)
      if type(args[i]) == "table" then
        for j = 1, #args[i] do if not check.is_tensor(args[i][j]) then check.int(args[i][j], name, "size") end end
      end
    end
    return core[make](unpack(args, 1, n))
  end
end
function Tensor.new_full(t, size, value, opts)
  check_tensor(t, "new_full", "self")
  if value == nil and opts == nil and is_options(size) then size, opts = nil, size end -- t:new_full{size =, fill_value =}
  if opts == nil and is_options(value) then value, opts = nil, value end
  local ksize, kvalue
  opts, ksize, kvalue = take_keywords(opts)
  size, value = size == nil and ksize or size, value == nil and kvalue or value
  -- (a 0-dim tensor as the value is its number: YOLOv8's feats[0].new_full((h * w, 1), strides[i]))
  return core.full(size, wick.ops._number_of(value), with_defaults(t, check.opt_table(opts, "new_full", "options")))
end
function Tensor.new_tensor(t, data, opts)
  check_tensor(t, "new_tensor", "self")
  return core.tensor(data, with_defaults(t, check.opt_table(opts, "new_tensor", "options")))
end
function Tensor.sub_scalar(t, v) return check_tensor(t, "sub_scalar", "self") - check.number(v, "sub_scalar", "value") end

-- ---- module-level functions that mirror methods ----

-- PyTorch's `out=` as a trailing option, `wick.mm(a, b, {out = c})`: the
-- result is written into c (same shape: c's own memory, which its views see;
-- c empty: c takes the result's shape) and c is returned. As in PyTorch, c's
-- dtype must hold the result's (no floating result into an integer tensor),
-- c is on the result's device, and nothing that requires grad takes part.
-- Functions whose PyTorch form has no `out` (views, booleans) raise instead
-- of ignoring it.
local NO_OUT = { view = true, reshape = true, transpose = true, t = true, permute = true, narrow = true,
  select = true, squeeze = true, unsqueeze = true, flatten = true, allclose = true, equal = true }

local function write_out(name, out, r, ...)
  if select("#", ...) > 0 then core.error(("wick.%s: out= with several results is not supported"):format(name)) end
  if getmetatable(r) ~= mt then core.error(("wick.%s: its result is not a tensor, so out= cannot take it"):format(name)) end
  local r_float, out_info = dtype_info[r.dtype].is_floating, dtype_info[out.dtype]
  if (r_float and not out_info.is_floating) or (out.dtype == "bool" and r.dtype ~= "bool") then
    core.error(("wick.%s: result type %s can't be cast to the desired output type %s"):format(name, r.dtype, out.dtype))
  end
  if tostring(out.device) ~= tostring(r.device) then
    core.error(("wick.%s: expected out tensor to have device %s, but got %s"):format(name, tostring(r.device),
      tostring(out.device)))
  end
  if core.is_grad_enabled() and (r.requires_grad or out.requires_grad) then
    core.error(("wick.%s(): functions with out=... arguments don't support automatic differentiation, but one of "
      .. "the arguments requires grad"):format(name))
  end
  local rs, os_ = r:size(), out:size()
  local same = #rs == #os_
  for i = 1, #rs do same = same and rs[i] == os_[i] end
  if same then
    out:copy_(r)
  elseif out:numel() == 0 then
    out:_replace(r.dtype == out.dtype and r or r:to(out.dtype))
  else
    core.error(("wick.%s: out has shape [%s] and the result [%s]: give a tensor of the result's shape, or an empty one")
      :format(name, table.concat(os_, ", "), table.concat(rs, ", ")))
  end
  return out
end

-- factory: the result is made in out's dtype and device unless the options say
-- (torch.rand(2, 2, out=c)), and the options table stays an argument
local function with_out(name, fn, factory)
  return function(...)
    local n = select("#", ...)
    local last = n > 0 and select(n, ...) or nil
    if type(last) ~= "table" or getmetatable(last) ~= nil or rawget(last, "out") == nil then return fn(...) end
    local out = last.out
    if NO_OUT[name] then core.error(("wick.%s: unexpected option 'out' (it returns a view or a value)"):format(name)) end
    check_tensor(out, name, "out")
    local args, rest = { ... }, {}
    for k, v in pairs(last) do if k ~= "out" then rest[k] = v end end
    if factory then rest.dtype, rest.device = rest.dtype or out.dtype, rest.device or out.device end
    args[n] = rest
    return write_out(name, out, fn(unpack(args, 1, next(rest) ~= nil and n or n - 1)))
  end
end

--- wick.promote_types(a, b): the dtype PyTorch's promotion gives two dtypes;
--- wick.result_type(a, b): that of an operation between two tensors or a tensor
--- and a number (a float number over an integer or bool tensor gives the
--- default dtype; an integer one over a bool tensor int64).
function wick.promote_types(a, b)
  return core.promote_types(a, b)
end
-- (bool 0, integers 1, floating 2, complex 3: a 0-dim tensor decides only by a higher category)
local function dtype_category(d)
  if d == "bool" then return 0 end
  if d:match("^complex") then return 3 end
  if d:match("float") then return 2 end
  return 1
end
function wick.result_type(a, b)
  if getmetatable(a) ~= mt then a, b = b, a end
  check_tensor(a, "result_type", "tensor")
  if getmetatable(b) == mt then
    if (a:dim() == 0) ~= (b:dim() == 0) then -- PyTorch's rule: beside a tensor of dims, a 0-dim one
      -- counts only by a higher category (float32 x with a float64 0-dim gives float32)
      -- (a complex 0-dim one over a floating one keeps its width: float64 with a 0-dim complex64 is complex128)
      local dims, zero = a:dim() > 0 and a or b, a:dim() > 0 and b or a
      local cz, cd = dtype_category(zero.dtype), dtype_category(dims.dtype)
      if cz == 3 and cd == 2 then return dims.dtype == "float64" and "complex128" or "complex64" end
      return cz > cd and zero.dtype or dims.dtype
    end
    return core.promote_types(a.dtype, b.dtype)
  end
  if type(b) == "boolean" then return a.dtype end
  check.number(b, "result_type", "other")
  if a:is_floating_point() then return a.dtype end
  if b % 1 ~= 0 then return wick.get_default_dtype() end
  return a.dtype == "bool" and "int64" or a.dtype
end

-- t:div(u, {rounding_mode = "trunc" | "floor"}), t:div_(u, {...}) and
-- wick.div(t, u, {...}): PyTorch's rounded quotients. Integer operands give
-- integers (computed in float64: exact up to 2^53), and an integer division by
-- zero is an error, as PyTorch's ZeroDivisionError.
do
  local div, div_ = Tensor.div, Tensor.div_
  local ROUNDING = { rounding_mode = "string" }
  local function rounded(fn, t, u, opts)
    local mode = check.options(opts, fn, ROUNDING).rounding_mode
    if mode == nil then return div(t, u) end
    if mode ~= "trunc" and mode ~= "floor" then
      check.fail(fn, "expected rounding_mode to be one of nil, 'trunc' or 'floor', but found '%s'", mode)
    end
    check_tensor(t, fn, "self")
    local dtype = wick.result_type(t, u)
    if core.dtype_info[dtype].is_floating then
      -- (a number beside a float32 or 16-bit tensor is rounded to that dtype first, as PyTorch's scalar:
      -- -3 // -0.3 in float32 is 9, the quotient by -0.30000001)
      if type(u) == "number" and dtype ~= "float64" and not core.dtype_info[dtype].is_complex then
        u = core.full({}, u, { dtype = dtype, device = t.device })
      end
      if mode == "trunc" then return div(t, u):trunc() end
      -- floor as PyTorch's div_floor_floating (Python's //): from fmod, so a quotient that rounds up to
      -- a whole number is not floored past it (-3 // -0.3 in float32 is 9)
      local uu = getmetatable(u) == mt and u or core.full({}, u, { dtype = dtype, device = t.device })
      local m = t:fmod(uu)
      local q = (t - m) / uu
      q = wick.where(m:ne(0):logical_and(uu:lt(0):logical_xor(m:lt(0))), q - 1, q)
      local f = q:floor()
      f = wick.where((q - f):gt(0.5), f + 1, f)
      local plain = div(t, uu)
      f = wick.where(q:eq(0), plain * 0, f) -- (a zero with the quotient's sign)
      return wick.where(uu:eq(0), plain, f)
    end
    if getmetatable(u) == mt and u:eq(0):any() or u == 0 then check.fail(fn, "ZeroDivisionError") end
    local q = div(t:to("float64"), getmetatable(u) == mt and u:to("float64") or u)
    return (mode == "floor" and q:floor() or q:trunc()):to(dtype)
  end
  function Tensor.div(t, u, opts)
    if opts == nil then return div(t, u) end
    return rounded("div", t, u, opts)
  end
  function Tensor.div_(t, u, opts)
    if opts == nil then return div_(t, u) end
    return t:copy_(rounded("div_", t, u, opts))
  end
  Tensor.divide, Tensor.divide_ = Tensor.div, Tensor.div_
  -- an integer remainder (fmod, %) by zero: PyTorch's ZeroDivisionError, not the kernel's 0
  local function by_zero(name, t, u)
    if (getmetatable(t) == mt or getmetatable(u) == mt) and not core.dtype_info[wick.result_type(t, u)].is_floating
      and (u == 0 or getmetatable(u) == mt and u:eq(0):any()) then
      check.fail(name, "ZeroDivisionError")
    end
  end
  for _, name in ipairs({ "remainder", "remainder_", "fmod", "fmod_" }) do
    local f = Tensor[name]
    Tensor[name] = function(t, u, ...)
      by_zero(name, t, u)
      return f(t, u, ...)
    end
  end
  local mod = mt.__mod
  mt.__mod = function(a, b)
    by_zero("remainder", a, b)
    return mod(a, b)
  end
end

local MIRRORED = { "add", "sub", "mul", "div", "pow", "neg", "abs", "exp", "log", "sqrt", "tanh",
  "sigmoid", "relu", "clamp", "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "sum", "mean",
  "max", "min", "argmax", "argmin", "prod", "var", "std", "matmul", "mm", "bmm", "addmm", "view",
  "reshape", "transpose", "t", "permute", "narrow", "select", "squeeze", "unsqueeze", "flatten",
  "index_select", "gather", "scatter", "softmax", "log_softmax", "clone", "allclose", "equal",
  "masked_fill", "masked_select", "masked_scatter", "index_fill", "index_copy", "index_put", "erf", "sin", "cos",
  "tan", "asin", "acos", "atan", "sinh", "cosh", "log2", "log10", "log1p", "expm1", "rsqrt", "reciprocal", "frac",
  "floor", "ceil", "round", "trunc", "sign", "fmod", "remainder", "atan2", "isnan", "isinf", "isfinite",
  "isposinf", "isneginf", "numel", "norm", "divide", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
  "bitwise_left_shift", "bitwise_right_shift" }
for _, name in ipairs(MIRRORED) do
  wick[name] = with_out(name, function(t, ...) return Tensor[name](t, ...) end) -- (the method as it is when called)
end
-- wick.pow(number, t), wick.add(0, t) (TabNet's torch.add(res, x) from res = 0) and the other
-- arithmetic with a number first: the number as a 0-dim tensor of t's dtype (a float number with
-- an integer tensor: the default float dtype); two numbers give a 0-dim tensor, as PyTorch's (HF
-- wav2vec2's torch.div(input_length - kernel_size, stride, rounding_mode="floor") of ints), the
-- first one int64 when whole (Python's int), else of the default dtype
-- (Python's int: on Lua 5.3+ a Lua integer, on LuaJIT a whole number, as the binding's wl_is_python_int)
local math_type = math.type
local function python_int(a)
  if math_type then return math_type(a) == "integer" end
  return a % 1 == 0
end
local function number_first(f)
  return function(a, b, ...)
    if type(a) == "number" and getmetatable(b) == mt then
      local dtype = (b:is_floating_point() or b:is_complex() or python_int(a)) and b.dtype or wick.get_default_dtype()
      return f(core.full({}, a, { dtype = dtype, device = b.device }), b, ...)
    end
    if type(a) == "number" and type(b) == "number" then
      return f(core.full({}, a, { dtype = python_int(a) and "int64" or wick.get_default_dtype() }), b, ...)
    end
    return f(a, b, ...)
  end
end
wick._number_first = number_first -- (ops.lua's floor_divide, true_divide, xlogy)
for _, name in ipairs({ "pow", "add", "sub", "mul", "div", "divide", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
  "bitwise_left_shift", "bitwise_right_shift" }) do
  wick[name] = number_first(wick[name])
end
-- Lua 5.4's operators that LuaJIT lacks, on tensors as PyTorch's: ~m, a & b, a | b, a ~ b (bitwise,
-- logical on bool: flamingo's masked_fill(~mask, ...)), a << b, a >> b, a // b (floor_divide)
for op, name in pairs({ __band = "bitwise_and", __bor = "bitwise_or", __bxor = "bitwise_xor", __shl = "bitwise_left_shift",
  __shr = "bitwise_right_shift", __idiv = "floor_divide" }) do
  local commutes = op == "__band" or op == "__bor" or op == "__bxor" -- (true & m: the tensor first)
  mt[op] = function(a, b)
    if commutes and not wick.is_tensor(a) then a, b = b, a end
    return wick[name](a, b)
  end
end
mt.__bnot = function(a) return wick.bitwise_not(a) end
-- torch.sin_(t) and the other in-place forms at module level: the methods
for _, name in ipairs({ "abs_", "acos_", "asin_", "atan_", "ceil_", "clamp_", "cos_", "cosh_", "erf_", "exp_", "expm1_",
  "floor_", "frac_", "log_", "log10_", "log1p_", "log2_", "neg_", "reciprocal_", "relu_", "round_", "rsqrt_",
  "sigmoid_", "sin_", "sinh_", "sqrt_", "tan_", "tanh_", "trunc_", "zero_", "fill_", "square_", "sign_" }) do
  if wick[name] == nil and Tensor[name] ~= nil then
    wick[name] = function(t, ...) return Tensor[name](t, ...) end
  end
end
-- t:fill_(v) takes a one-element tensor too (PyTorch's fill_(0-dim tensor))
local tensor_fill_ = Tensor.fill_
function Tensor.fill_(t, v)
  if getmetatable(v) == mt then
    if v:numel() ~= 1 then
      check.fail("fill_", "only supports 0-dimension value tensor but got tensor with %d dimensions", v:dim())
    end
    v = v:item()
  end
  return tensor_fill_(t, v)
end
for _, name in ipairs({ "tensor", "zeros", "ones", "empty", "rand", "randn", "full", "arange", "eye",
  "zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "full_like", "manual_seed",
  "get_rng_state", "set_rng_state", "set_num_threads", "get_num_threads", "where", "cat", "stack" }) do
  wick[name] = core[name]
end
-- wick's own draws (layer init, dropout, in-place fills): the generator itself, not the public
-- wick.rand / wick.randn a test may replace to replay noise (PyTorch's come from C++ too)
wick._rand, wick._randn = core.rand, core.randn
-- torch.tensor(x.shape): a Size holds integers, so int64 as PyTorch's (Mask R-CNN's torch.tensor(image.shape[-2:]))
-- whether a nested table holds a tensor that requires grad (torch.tensor([0.0, p * p]) cuts its graph)
local function holds_grad(data, depth)
  for _, v in ipairs(data) do
    if getmetatable(v) == mt then
      if v.requires_grad then return true end
    elseif type(v) == "table" and depth < 64 and holds_grad(v, depth + 1) then
      return true
    end
  end
  return false
end
function wick.tensor(data, opts)
  if type(data) == "table" and getmetatable(data) == nil and holds_grad(data, 1) then
    require("wick.nn.common").warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
      .. "behavior. Consider using tensor.detach() first. (wick.tensor makes a new leaf: wick.stack keeps the graph)")
  end
  if getmetatable(data) == Size and (type(opts) ~= "table" or opts.dtype == nil) then
    local o = { dtype = "int64" }
    if type(opts) == "table" then for k, v in pairs(opts) do o[k] = v end end
    return tensor_of(data, o)
  end
  return tensor_of(data, opts)
end
--- wick.scalar_tensor(s[, opts]): torch.scalar_tensor, a 0-dim tensor of the default dtype (or opts.dtype)
--- of a number (or a boolean, or a one-element tensor's value)
function wick.scalar_tensor(s, opts)
  if wick.is_tensor(s) and s:numel() == 1 then s = s:item() end
  if type(s) ~= "number" and type(s) ~= "boolean" then check.expected("scalar_tensor", "s", "a number", s) end
  local o = { dtype = wick.get_default_dtype() }
  opts = check.options(opts, "scalar_tensor", { dtype = "dtype", device = "device", requires_grad = "boolean",
    layout = "any", pin_memory = "boolean" })
  for k, v in pairs(opts) do o[k] = v end
  return tensor_of(s, o)
end
-- (a tensor where the array of tensors goes is PyTorch's error too: in Lua it is
-- most often a call that returns several tensors, wick.meshgrid(...), cut to
-- its first by a following argument: {wick.meshgrid(a, b)} keeps them all)
local function joiner(name, f)
  return with_out(name, function(ts, ...)
    local second = (...)
    -- (tensors as several arguments are taken)
    if wick.is_tensor(ts) and (second == nil or type(second) == "number" or (type(second) == "table" and getmetatable(second) == nil)) then
      core.error(("%s: argument 'tensors' must be an array of tensors, not a tensor (a call returning several "
        .. "tensors, as wick.meshgrid, keeps them all in braces: {wick.meshgrid(a, b)})"):format(name))
    end
    return f(ts, ...)
  end)
end
wick.cat, wick.stack = joiner("cat", core.cat), joiner("stack", core.stack)
-- torch.arange(end=n, dtype=...), arange(0, end=n, step=2): PyTorch's keywords in
-- the options table (`end` is a Lua keyword: {["end"] = n}; `stop` is taken too)
do
  local core_arange = core.arange
  -- 0-dim tensors as their numbers (arange(t0, t1), as PyTorch's); an integer tensor among them (and
  -- no float) makes the result int64 unless a dtype is given, as PyTorch's result type (HashNeRF's
  -- torch.arange(cube_size + 1) of an int tensor): a tensor knows what a Lua number cannot say
  local function arange(...)
    local n, args = select("#", ...), { ... }
    local opts = args[n]
    local has_opts = type(opts) == "table" and getmetatable(opts) == nil
    local int, float = false, false
    for i = 1, has_opts and n - 1 or n do
      local v = args[i]
      if wick.is_tensor(v) then
        if v:is_floating_point() or v:is_complex() then float = true else int = true end
      elseif type(v) == "number" and v % 1 ~= 0 then
        float = true
      end
      args[i] = wick.ops._number_of(v)
    end
    if int and not float and not (has_opts and opts.dtype) then
      local o = { dtype = "int64" }
      if has_opts then for k, v in pairs(opts) do o[k] = v end end
      if not has_opts then n = n + 1 end
      args[n] = o
    end
    return core_arange(unpack(args, 1, n))
  end
  wick.arange = function(...)
    local n = select("#", ...)
    local o = n > 0 and select(n, ...) or nil
    if type(o) ~= "table" or getmetatable(o) ~= nil or (o["end"] == nil and o.stop == nil and o.start == nil and o.step == nil) then
      return arange(...)
    end
    if o["end"] ~= nil and o.stop ~= nil then check.fail("wick.arange", "got both end and stop (the same argument)") end
    local p, rest = { ... }, {}
    for k, v in pairs(o) do
      if k ~= "start" and k ~= "end" and k ~= "stop" and k ~= "step" then rest[k] = v end
    end
    local stop = o["end"] or o.stop
    local start, step = o.start, o.step
    if n - 1 == 1 then -- one positional number: the end, or the start when the end is named
      if stop == nil then stop = p[1] elseif start == nil then start = p[1] else check.fail("wick.arange", "got start twice") end
    elseif n - 1 == 2 and start == nil and stop == nil then -- arange(0, 1.1, step=0.1)
      start, stop = p[1], p[2]
    elseif n - 1 >= 2 then
      check.fail("wick.arange", "give start, end and step by position or by name, not %d by position and some by name", n - 1)
    end
    if stop == nil then check.fail("wick.arange", "missing argument 'end'") end
    return arange(start or 0, stop, step or 1, rest)
  end
end
-- torch.full(size=..., fill_value=...) and full_like(t, fill_value=...) by keyword too
do
  local full, full_like = core.full, core.full_like
  wick.full = function(size, value, opts)
    if value == nil and opts == nil and is_options(size) then size, opts = nil, size end
    if opts == nil and is_options(value) then value, opts = nil, value end
    local ksize, kvalue
    opts, ksize, kvalue = take_keywords(opts)
    if size == nil then size = ksize end
    if value == nil then value = kvalue end
    -- a 0-dim integer or bool tensor as the value gives PyTorch's dtype for its number (int64, bool),
    -- as wick.arange of one does (Qwen3-VL's torch.full((n,), t.sum()))
    if check.is_tensor(value) and value:dim() == 0 and not value:is_floating_point() and not value:is_complex()
      and (opts == nil or opts.dtype == nil) then
      local o = { dtype = value.dtype == "bool" and "bool" or "int64" }
      for k, v in pairs(opts or {}) do o[k] = v end
      opts = o
    end
    return full(size, wick.ops._number_of(value), opts)
  end
  wick.full_like = function(t, value, opts)
    if opts == nil and is_options(value) then value, opts = nil, value end
    local _, kvalue
    opts, _, kvalue = take_keywords(opts)
    if value == nil then value = kvalue end
    return full_like(t, wick.ops._number_of(value), opts)
  end
end
-- torch.zeros(size=(2, 3), dtype=...) as one keyword table: wick.zeros{size = {2, 3}, dtype = ...}
for _, name in ipairs({ "zeros", "ones", "empty", "rand", "randn" }) do
  local make = core[name]
  wick[name] = function(...)
    local a = ...
    if type(a) == "table" and select("#", ...) == 1 and getmetatable(a) == nil and a[1] == nil and a.size ~= nil then
      local opts = {}
      for k, v in pairs(a) do if k ~= "size" then opts[k] = v end end
      return make(a.size, opts)
    end
    return make(...)
  end
end

-- torch.rand(2, 2, out=c) and the other factories' out=
for _, name in ipairs({ "zeros", "ones", "empty", "rand", "randn", "full", "arange", "eye" }) do
  wick[name] = with_out(name, wick[name], true)
end

--- wick.from_numpy(a) (torch.from_numpy): Lua has no NumPy; a numpy array wick.load read from a torch.save
--- file is already a tensor of its dtype, and is returned as it is (sharing its memory, as from_numpy)
function wick.from_numpy(a)
  if wick.is_tensor(a) then return a end
  check.fail("from_numpy", "expected a numpy array (what wick.load gives for one: a tensor), got %s (Lua has no "
    .. "NumPy: wick.tensor(tbl) makes a tensor of (nested) Lua tables, wick.frombuffer(bytes) of a string's bytes)",
    check.describe(a))
end

--- wick.frombuffer(bytes[, {dtype, count = -1, offset = 0}]) (torch.frombuffer): a 1-D tensor
--- of the bytes of a Lua string (a file's contents: io.open(p, "rb"):read("a")) read as dtype
--- (native byte order), from byte `offset`, `count` elements (-1: all); a copy, as strings are
--- immutable
function wick.frombuffer(bytes, opts)
  if type(bytes) ~= "string" then check.expected("frombuffer", "buffer", "a string of bytes", bytes) end
  opts = check.options(opts, "frombuffer", { dtype = "dtype", count = "integer", offset = "integer",
    requires_grad = "boolean" })
  local dtype = opts.dtype or wick.get_default_dtype()
  local size, count, offset = dtype_info[dtype].size, opts.count or -1, opts.offset or 0
  if offset < 0 or offset >= #bytes then
    check.fail("frombuffer", "offset (%.0f bytes) must be non-negative and no greater than buffer length (%d bytes) minus 1",
      offset, #bytes)
  end
  if count == -1 then
    if (#bytes - offset) % size ~= 0 then
      check.fail("frombuffer", "buffer length (%d bytes) after offset (%.0f bytes) must be a multiple of element size (%d)",
        #bytes, offset, size)
    end
    count = (#bytes - offset) / size
  elseif count <= 0 or count * size > #bytes - offset then
    check.fail("frombuffer", "requested buffer length (%.0f * %d bytes) after offset (%.0f bytes) must not be greater "
      .. "than actual buffer length (%d bytes)", count, size, offset, #bytes)
  end
  local t = core.from_bytes(bytes:sub(offset + 1, offset + count * size), dtype, { count })
  if dtype == "bool" then t = t:view("uint8"):ne(0) end -- (a byte other than 0 and 1 is true)
  if opts.requires_grad then t:requires_grad_(true) end
  return t
end
--- t:tobytes(): the bytes of t's elements in order (native byte order), as a Lua string for
--- f:write (NumPy's t.numpy().tobytes())
function Tensor.tobytes(t)
  check_tensor(t, "tobytes", "self")
  if t.device.type == "meta" then check.fail("tobytes", "a meta tensor has no data") end
  return core.to_bytes(t:detach():to("cpu"):contiguous())
end

--- wick.vmap: torch.vmap, the name torch.func.vmap also has
function wick.vmap(...) return wick.func.vmap(...) end
function wick.is_tensor(v) return getmetatable(v) == mt end
-- complex tensors (the core's complex.c): views of their pairs, parts, construction;
-- and torch's predicates of a tensor and detach as functions (torch.is_floating_point(t), torch.detach)
for _, name in ipairs({ "view_as_real", "view_as_complex", "conj", "conj_physical", "resolve_conj", "resolve_neg",
  "angle", "is_complex", "is_conj", "is_floating_point", "is_signed", "is_nonzero", "is_same_size", "detach", "detach_" }) do
  wick[name] = function(t, ...) return Tensor[name](check_tensor(t, name, "input"), ...) end
end
-- a dtype's predicates too: PyTorch's dtype.is_floating_point (HF's _prepare_4d_attention_mask gets a dtype)
for _, name in ipairs({ "is_complex", "is_floating_point", "is_signed" }) do
  local of_tensor = wick[name]
  wick[name] = function(t, ...)
    if type(t) == "string" then return Tensor[name](wick.empty(0, { dtype = t })) end
    return of_tensor(t, ...)
  end
end
--- wick.complex(real, imag), either by name too (PyKEEN's torch.complex(real=real, imag=imag)); a number
--- part is a tensor of the other part's dtype, or of the default dtype (Python's literal 1j is
--- wick.complex(0, 1): a 0-dim complex64, complex128 with float64 the default)
function wick.complex(...)
  local o = check.positional("complex", { "real", "imag" }, { real = "any", imag = "any" }, ...)
  local function part(v, other)
    if type(v) ~= "number" then return v end
    local like = wick.is_tensor(other) and other or nil
    return wick.tensor(v, { dtype = like and like.dtype or wick.get_default_dtype(), device = like and like.device })
  end
  return core.complex(part(o.real, o.imag), part(o.imag, o.real))
end
function wick.real(t) return check_tensor(t, "real", "input").real end
function wick.imag(t) return check_tensor(t, "imag", "input").imag end
--- wick.polar(abs, angle): abs * (cos angle + i sin angle)
function wick.polar(abs, angle)
  check_tensor(abs, "polar", "abs")
  check_tensor(angle, "polar", "angle")
  if abs.dtype ~= angle.dtype or (abs.dtype ~= "float32" and abs.dtype ~= "float64") then
    check.fail("polar", "expected abs and angle of one dtype, float32 or float64 (as PyTorch's; wick has no complex32), "
      .. "got %s and %s", abs.dtype, angle.dtype)
  end
  return wick.complex(abs * angle:cos(), abs * angle:sin())
end
wick.polar = check.by_name(wick.polar, "polar", { "abs", "angle" }) -- (torch.polar(abs=r, angle=theta))
wick.ops = require("wick.ops")(wick) -- tril, split, topk, multinomial, einsum, random fills, ... (ops.lua)
-- torch.ops.aten, made at its first use: aten.slice (s5-pytorch's associative scan) and, for the other
-- names, wick's function of that name; what wick lacks is an error naming the namespace
local function aten()
  local space = {}
  --- wick.ops.aten.slice(t[, dim = 1[, start[, stop[, step = 1]]]]): torch.ops.aten.slice, wick.slice's
  --- 0-based start, excluded stop (both clamped) and step along the 1-based dim; a view
  function space.slice(t, dim, start, stop, step)
    check.tensor(t, "aten.slice", "self")
    dim = check.wrap_dim(t, check.opt_int(dim, "aten.slice", "dim", 1), "aten.slice")
    local key = {}
    for d = 1, dim - 1 do key[d] = {} end
    if type(stop) == "number" and stop >= 2 ^ 53 then stop = nil end -- (Python's sys.maxsize: to the end)
    if stop ~= nil then check.int(stop, "aten.slice", "end") end
    key[dim] = wick.slice(check.opt_int(start, "aten.slice", "start", 0), stop, check.opt_int(step, "aten.slice", "step", 1))
    return t[key]
  end
  return setmetatable(space, { __index = function(_, k)
    local f = type(k) == "string" and rawget(wick, k)
    if type(f) == "function" then return f end
    error(("wick.ops.aten has no '%s' (torch.ops.aten's ops are wick's functions of the same name, where wick has them)")
      :format(tostring(k)), 2)
  end })
end
local aten_space -- (kept here, not in wick.ops: the ops' own names stay the functions of ops.lua)
setmetatable(wick.ops, { __index = function(_, k)
  if k ~= "aten" then return nil end
  aten_space = aten_space or aten()
  return aten_space
end })
require("wick.special")(wick) -- wick.special, polygamma, erfinv, lgamma, ... (special.lua)
wick.fft = require("wick.fft")(wick) -- torch.fft's transforms (fft.lua)
local WITH_OUT = { "tril", "triu", "split", "chunk", "unbind", "sort", "argsort", "topk", "msort", "cumsum",
  "cumprod", "clamp", "clamp_min", "clamp_max", "clip", "where", "randint", "randint_like", "randperm", "multinomial",
  "einsum", "bernoulli", "normal", "flip", "fliplr", "flipud", "roll", "amax", "amin", "logsumexp",
  "repeat_interleave", "tile", "diag", "outer", "ger", "dot", "inner", "mv", "lerp", "addcmul", "addcdiv",
  "logical_not", "logical_and", "logical_or", "logical_xor", "hypot", "nan_to_num", "diff", "trace", "take",
  "index_add", "scatter_add", "scatter", "scatter_reduce", "index_reduce", "floor_divide", "fmax", "fmin", "nanmean", "baddbmm", "vdot", "square", "cross",
  "kron", "addmv", "addr", "logit", "xlogy", "exp2", "float_power", "true_divide", "cdist", "linspace", "logspace",
  "deg2rad", "rad2deg" }
for _, name in ipairs(WITH_OUT) do
  wick[name] = with_out(name, wick[name])
end

-- methods written in Lua that take no options: one argument more is an error, not
-- dropped (the C binding's wl_no_more); under the keyword wrappers below
for n, names in ipairs({
  { "logical_not", "trace", "square", "exp2", "tolist", "retain_grad", "zero_", "sinc" },
  { "logical_and", "logical_or", "logical_xor", "outer", "dot", "type_as", "hypot", "xlogy", "logaddexp",
    "float_power", "true_divide", "fmax", "fmin", "equal", "kron", "take", "expand_as", "view_as", "reshape_as",
    "mv", "clamp_min", "clamp_max", "fill_", "floor_divide" },
  { "lerp", "lerp_", "where", "clamp", "clamp_", "cross" },
  { "scatter_add", "unfold" },
}) do
  for _, name in ipairs(names) do Tensor[name] = check.no_more(Tensor[name], name, n) end
end

-- PyTorch's keywords for the leading arguments of these methods and functions
-- (torch.gather(v, dim=-1, index=d), x.narrow(dim=0, start=0, length=2),
-- x.scatter(1, i, value=1.0)): taken from the trailing options table when it
-- names one of them (names ending in "?" may be left out; aliases: another
-- keyword for one of them)
local KEYWORDS = {
  gather = { "dim", "index" }, index_select = { "dim", "index" }, narrow = { "dim", "start", "length" },
  transpose = { "dim0", "dim1" }, masked_fill = { "mask", "value" }, masked_fill_ = { "mask", "value" },
  masked_select = { "mask" }, masked_scatter = { "mask", "source" }, masked_scatter_ = { "mask", "source" },
  scatter = { "dim", "index", "src?", aliases = { value = "src" } },
  scatter_ = { "dim", "index", "src?", aliases = { value = "src" } },
  scatter_add = { "dim", "index", "src" }, scatter_add_ = { "dim", "index", "src" },
  index_add = { "dim", "index", "source" }, index_add_ = { "dim", "index", "source" },
  index_copy = { "dim", "index", "source" }, index_fill = { "dim", "index", "value" },
  reshape = { "shape" }, view = { "size" }, permute = { "dims" },
  max = { "other" }, min = { "other" }, maximum = { "other" }, minimum = { "other" },
  lerp = { "end", "weight" }, lerp_ = { "end", "weight" },
  scatter_reduce = { "dim", "index", "src", "reduce" }, scatter_reduce_ = { "dim", "index", "src", "reduce" },
  index_reduce = { "dim", "index", "source", "reduce" }, index_reduce_ = { "dim", "index", "source", "reduce" },
  flip = { "dims" },
  add = { "other" }, sub = { "other" }, mul = { "other" }, div = { "other" }, matmul = { "other" },
  mm = { "mat2" }, bmm = { "mat2" }, pow = { "exponent" },
  addmm = { "mat1", "mat2" }, addmm_ = { "mat1", "mat2" }, baddbmm = { "batch1", "batch2" },
  baddbmm_ = { "batch1", "batch2" }, addbmm = { "batch1", "batch2" }, addmv = { "mat", "vec" },
  addr = { "vec1", "vec2" }, addcmul = { "tensor1", "tensor2" }, addcmul_ = { "tensor1", "tensor2" },
  addcdiv = { "tensor1", "tensor2" }, addcdiv_ = { "tensor1", "tensor2" },
  quantile = { "q" }, nanquantile = { "q" }, requires_grad_ = { "requires_grad?" },
  unfold = { "dimension", "size", "step", aliases = { dim = "dimension" } },
  rot90 = { "k?", "dims?" }, -- (torchvision's torch.rot90(image, k=1, dims=(-2, -1)))
  take_along_dim = { "indices", "dim?" }, -- (HF's _gather_beams: take_along_dim(input=t, indices=i, dim=1))
  movedim = { "source", "destination" }, moveaxis = { "source", "destination" },
  unflatten = { "dim", "sizes" }, select = { "dim", "index" }, swapaxes = { "axis0", "axis1" },
  swapdims = { "dim0", "dim1" },
  isclose = { "other" }, kron = { "other" }, inner = { "other" }, outer = { "vec2" }, take = { "index" },
}
for name, names in pairs(KEYWORDS) do
  Tensor[name] = check.by_name(Tensor[name], name, names, 1)
  if rawget(wick, name) then wick[name] = check.by_name(wick[name], name, names, 1) end
end
-- torch.matmul(input=a, other=b), torch.sum(input=x, dim=0): the functions above whose first
-- argument is a tensor take it by PyTorch's name too, from the options table
local NOT_INPUT = { where = true, einsum = true, randint = true, randperm = true, normal = true, cdist = true,
  linspace = true, logspace = true }
-- (and those whose first argument has another name: torch.where(condition=c, input=x, other=y),
-- torch.cat(tensors=ts, dim=0))
wick.where = check.by_name(wick.where, "where", { "condition", "input?", "other?" })
for _, name in ipairs({ "cat", "stack", "concat", "concatenate", "hstack", "vstack", "dstack", "column_stack" }) do
  if rawget(wick, name) then wick[name] = check.by_name(wick[name], name, { "tensors" }) end
end
for _, list in ipairs({ MIRRORED, WITH_OUT, { "take_along_dim" } }) do
  for _, name in ipairs(list) do
    if not NOT_INPUT[name] then
      NOT_INPUT[name] = true -- (once: some are in both lists)
      wick[name] = check.by_name(wick[name], name, { "input" })
    end
  end
end
-- torch.zeros_like(p, memory_format=torch.preserve_format), the optimizers' idiom: the *_like functions
-- take memory_format (preserve_format: a channels_last input gives a channels_last result)
for _, name in ipairs({ "zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "full_like", "randint_like" }) do
  local like, fn = wick[name], "wick." .. name
  wick[name] = function(t, ...)
    local n = select("#", ...)
    local last = n > 0 and select(n, ...) or nil
    if type(last) ~= "table" or getmetatable(last) ~= nil or last.memory_format == nil then return like(t, ...) end
    local fmt, rest = memory_format(last.memory_format, fn), {}
    for k, v in pairs(last) do if k ~= "memory_format" and k ~= "requires_grad" then rest[k] = v end end
    local args = { ... }
    args[n] = next(rest) ~= nil and rest or nil
    local r = like(t, unpack(args, 1, n))
    if fmt == "preserve_format" then
      fmt = nil
      for f in pairs(LAST) do
        if check.is_tensor(t) and not c_is_contiguous(t) and in_format(t, f) then fmt = f end
      end
    end
    r = to_format(r, fmt, fn)
    if last.requires_grad then r:requires_grad_(true) end -- (after the layout: a leaf)
    return r
  end
end
-- the leading arguments by PyTorch's names where they are not (only) `input`: torch.split(tensor=x, ...),
-- torch.cdist(x1=a, x2=b), torch.tensordot(a=x, b=y), torch.vander(x=v), torch.eye(n=2, m=3), and the
-- *_like functions' input (torch.zeros_like(input=p)), mode's, bincount's and combinations'
for name, names in pairs({ split = { "tensor" }, cdist = { "x1", "x2" }, tensordot = { "a", "b" }, vander = { "x" },
  eye = { "n", "m?" }, mode = { "input" }, bincount = { "input" }, combinations = { "input" },
  zeros_like = { "input" }, ones_like = { "input" }, empty_like = { "input" }, rand_like = { "input" },
  randn_like = { "input" }, full_like = { "input" }, randint_like = { "input" } }) do
  wick[name] = check.by_name(wick[name], name, names)
end
-- torch.empty(size, memory_format=...) (RWKV-LM's WKV kernel: torch.empty((B, T, C), memory_format=
-- torch.contiguous_format)); zeros, ones and the others refuse it, as PyTorch's
do
  local empty = wick.empty
  wick.empty = function(...)
    local n = select("#", ...)
    local last = n > 0 and select(n, ...) or nil
    if type(last) ~= "table" or getmetatable(last) ~= nil or last.memory_format == nil then return empty(...) end
    local fmt, rest = memory_format(last.memory_format, "wick.empty"), {}
    if fmt == "preserve_format" then check.fail("wick.empty", "preserve memory format is unsupported by the contiguous operator") end
    for k, v in pairs(last) do if k ~= "memory_format" and k ~= "requires_grad" then rest[k] = v end end
    local args = { ... }
    args[n] = rest
    local r = to_format(empty(unpack(args, 1, next(rest) ~= nil and n or n - 1)), fmt, "wick.empty")
    if last.requires_grad then r:requires_grad_(true) end -- (after the layout: a leaf)
    return r
  end
end
wick.clock = core.clock

-- ---- generators (PyTorch's torch.Generator) ----
-- A generator is a random state of its own: a random function given
-- {generator = g} draws from g's state (seeded by g:manual_seed) and leaves
-- wick's global one as it was.
local Generator = { __name = "Generator" }
Generator.__index = Generator
local rng_state, set_rng_state = core.get_rng_state, core.set_rng_state

--- wick.Generator([device = "cpu"]) or wick.Generator({device = ...}): a generator seeded like wick's at start
function wick.Generator(device)
  if type(device) == "table" and getmetatable(device) == nil then
    device = check.options(device, "wick.Generator", { device = "device" }).device
  end
  if device ~= nil and wick.device(device).type ~= "cpu" then
    core.error("wick.Generator: only 'cpu' generators exist (CUDA ops draw from wick.cuda's seed)")
  end
  return setmetatable({ _seed = 67280421310721, _state = nil }, Generator)
end
local function generator_self(g, fn)
  if getmetatable(g) ~= Generator then check.expected("Generator:" .. fn, "self", "a Generator", g) end
  return g
end
--- g:manual_seed(seed): restarts g from seed; returns g
function Generator:manual_seed(seed)
  generator_self(self, "manual_seed")
  check.int(seed, "Generator:manual_seed", "seed")
  self._seed, self._state = seed, nil
  return self
end
function Generator:initial_seed() return generator_self(self, "initial_seed")._seed end
--- g:get_state() / g:set_state(state): its state, as wick.get_rng_state's
function Generator:get_state()
  generator_self(self, "get_state")
  return self:_run(rng_state)
end
function Generator:set_state(state)
  generator_self(self, "set_state")
  local saved = rng_state()
  set_rng_state(state)
  self._state = rng_state()
  set_rng_state(saved)
  return self
end
-- fn(...) drawing from g's state
function Generator:_run(fn, ...)
  local saved = rng_state()
  if self._state then set_rng_state(self._state) else core.manual_seed(self._seed) end
  local results = pack(pcall(fn, ...))
  self._state = rng_state()
  set_rng_state(saved)
  if not results[1] then error(results[2], 0) end
  return unpack(results, 2, results.n)
end
wick._Generator = Generator

-- The random functions take {generator = g} in their trailing options table.
local function with_generator(fn)
  return function(...)
    local n = select("#", ...)
    local opts = n > 0 and select(n, ...) or nil
    if type(opts) ~= "table" or getmetatable(opts) ~= nil or opts.generator == nil then return fn(...) end
    local g = opts.generator
    if getmetatable(g) ~= Generator then check.expected("generator", "generator", "a wick.Generator", g) end
    local args, rest = pack(...), {}
    for k, v in pairs(opts) do if k ~= "generator" then rest[k] = v end end
    args[n] = next(rest) ~= nil and rest or nil
    return g:_run(fn, unpack(args, 1, next(rest) ~= nil and n or n - 1))
  end
end
for _, name in ipairs({ "rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "randperm",
  "multinomial", "bernoulli", "normal" }) do
  wick[name] = with_generator(wick[name])
end
for _, name in ipairs({ "multinomial", "bernoulli", "normal_", "uniform_", "exponential_", "log_normal_",
  "geometric_", "bernoulli_", "random_" }) do
  if Tensor[name] then Tensor[name] = with_generator(Tensor[name]) end
end

--- wick.compile(model_or_fn[, opts]): PyTorch's torch.compile; wick has no
--- compiler, so it returns its argument (scripts that call it run unchanged)
function wick.compile(m, opts)
  if m == nil then check.expected("compile", "model", "a module or a function", m) end
  check.options(opts, "compile", { mode = "string", fullgraph = "boolean", dynamic = "boolean", backend = "string",
    options = "table", disable = "boolean" })
  return m
end
-- the compiler's knobs scripts set (torch._dynamo.config.cache_size_limit = 64,
-- torch._inductor.config.coordinate_descent_tuning = True): tables that take them, and change nothing
local function no() return false end
wick._dynamo = { config = {}, reset = function() end, disable = function(fn) return fn end,
  mark_dynamic = function() end, is_compiling = no } -- (HF's is_torchdynamo_compiling)
wick._inductor = { config = {} }
wick.compiler = check.strict({ disable = function(fn) return fn end, reset = function() end,
  is_compiling = no, is_dynamo_compiling = no }, "wick.compiler")

--- wick.jit: PyTorch's torch.jit without a compiler, as wick.compile:
--- script(m) and trace(m, example_inputs) return m; ignore, unused, export and
--- script_method return their function; is_scripting() and is_tracing() are
--- false; annotate(type, value) returns value; ScriptModule is nn.Module
local function returns_first(fn)
  return function(m, ...)
    if m == nil then check.expected(fn, "obj", "a module or a function", m) end
    return m
  end
end
wick.jit = check.strict({
  script = returns_first("jit.script"), trace = returns_first("jit.trace"), ignore = returns_first("jit.ignore"),
  unused = returns_first("jit.unused"), export = returns_first("jit.export"),
  script_method = returns_first("jit.script_method"),
  is_scripting = function() return false end, is_tracing = function() return false end,
  -- annotate(type, value): value (the type is TorchScript's; googlenet's aux1 = annotate(Optional[Tensor], None))
  annotate = function(_, value) return value end,
}, "wick.jit", { ScriptModule = function() return require("wick.nn.module") end })

--- wick.__version__: the PyTorch release whose API wick follows, marked as
--- wick's ("2.15.0+wick"), for a program's version checks (torch.__version__ >= "1.5.0")
wick.__version__ = "2.15.0+wick"
--- wick._assert(condition, message): an error with message at the caller's line
--- unless condition holds (a boolean, or a one-element tensor)
function wick._assert(condition, message)
  if wick.is_tensor(condition) then condition = condition:item() ~= 0 and condition:item() ~= false end
  if not condition then error(message == nil and "assertion failed" or tostring(message), 2) end
end

--- wick._softmax_backward_data(grad_output, output, dim, input_dtype): the gradient of softmax's input
--- from its output, output * (grad - sum(grad * output, dim)), in input_dtype (PyTorch's private op that
--- HF DeBERTa's XSoftmax.backward calls); wick._log_softmax_backward_data the same for log_softmax
function wick._softmax_backward_data(grad_output, output, dim, input_dtype)
  check.tensor(grad_output, "_softmax_backward_data", "grad_output")
  check.tensor(output, "_softmax_backward_data", "output")
  local r = output * (grad_output - (grad_output * output):sum(check.dim(dim, "_softmax_backward_data", "dim"), true))
  return input_dtype == nil and r or r:to(input_dtype)
end
function wick._log_softmax_backward_data(grad_output, output, dim, input_dtype)
  check.tensor(grad_output, "_log_softmax_backward_data", "grad_output")
  check.tensor(output, "_log_softmax_backward_data", "output")
  local r = grad_output - output:exp() * grad_output:sum(check.dim(dim, "_log_softmax_backward_data", "dim"), true)
  return input_dtype == nil and r or r:to(input_dtype)
end

--- wick.set_float32_matmul_precision("highest" | "high" | "medium"): "high"
--- and "medium" let CUDA products use TF32 (wick.backends.cuda.matmul.allow_tf32)
local matmul_precision = "highest"
function wick.set_float32_matmul_precision(p)
  check.one_of(p, "set_float32_matmul_precision", "precision", { "highest", "high", "medium" })
  matmul_precision = p
  wick.backends.cuda.matmul.allow_tf32 = p ~= "highest"
end
function wick.get_float32_matmul_precision() return matmul_precision end

--- wick.use_deterministic_algorithms(b): wick's kernels give the same result
--- run after run on one machine and thread count, so a flag to read back
local deterministic, warn_only = false, false
function wick.use_deterministic_algorithms(b, opts)
  local o = check.options(opts, "use_deterministic_algorithms", { warn_only = "boolean" })
  if type(b) ~= "boolean" then check.expected("use_deterministic_algorithms", "mode", "a boolean", b) end
  deterministic, warn_only = b, o.warn_only == true
end
function wick.are_deterministic_algorithms_enabled() return deterministic end
function wick.is_deterministic_algorithms_warn_only_enabled() return warn_only end

--- wick.initial_seed(): the seed wick.manual_seed last set (PyTorch's default
--- before any); wick.seed(): a fresh seed from the clock and the process, set and returned
local seed_now = 67280421310721
local manual_seed = wick.manual_seed
function wick.manual_seed(s)
  local r = manual_seed(s)
  seed_now = s
  return r
end
function wick.initial_seed() return seed_now end
function wick.seed()
  local s = math.floor((os.time() * 1000003 + os.clock() * 1e6 + tonumber(tostring({}):match("0x(%x+)") or "0", 16))
    % 2 ^ 52)
  wick.manual_seed(s)
  return s
end

--- wick.isinstance(v, class): v is an instance of class or of a class made
--- from it by extend (nn modules, datasets, Functions); wick.Tensor for
--- tensors; wick.OrderedDict for state dicts and loaded dicts; class may be an array of classes (Python's tuple)
--- wick.issubclass(cls, base): Python's issubclass for wick's classes (cls is base or extends it; base may be
--- an array of classes)
function wick.issubclass(cls, base)
  if type(cls) ~= "table" then check.expected("issubclass", "cls", "a class", cls) end
  if base == nil then check.fail("issubclass", "the base class is nil (a name the module does not have?)") end
  if type(base) == "table" and getmetatable(base) == nil and base[1] ~= nil then
    for _, b in ipairs(base) do if wick.issubclass(cls, b) then return true end end
    return false
  end
  local c = cls
  while type(c) == "table" do
    if c == base then return true end
    for _, m in ipairs(rawget(c, "_mixins") or {}) do -- (a further base: Class:include(Mixin))
      if wick.issubclass(m, base) then return true end
    end
    local parent = rawget(c, "super")
    if parent == nil then
      local m = getmetatable(c)
      parent = type(m) == "table" and type(m.__index) == "table" and m.__index or nil
    end
    c = parent
  end
  return false
end
function wick.isinstance(v, class)
  if class == nil then -- (a misspelt or missing class, PyTorch's TypeError)
    check.fail("isinstance", "the class is nil (a name the module does not have?)")
  end
  if type(class) == "table" and getmetatable(class) == nil and class[1] ~= nil then
    for _, c in ipairs(class) do if wick.isinstance(v, c) then return true end end
    return false
  end
  if class == Tensor then return getmetatable(v) == mt end
  -- isinstance(s, slice), isinstance(d, torch.device), isinstance(g, torch.Generator): wick's factories
  -- of those objects (functions, not classes: st-moe's isinstance(selection, slice))
  if class == wick.slice then return check.is_slice(v) end
  if class == wick.device then return getmetatable(v) == wick.Device end
  if class == wick.Generator then return getmetatable(v) ~= nil and getmetatable(v) == getmetatable(wick.Generator()) end
  -- isinstance(sd, OrderedDict): a state dict, a loaded dict, wick.OrderedDict's (a function, not a class)
  if class == wick.OrderedDict then return require("wick.ordered").is(v) end
  -- isinstance(p, nn.Parameter): a tensor made a parameter (nn.Parameter, a layer's weight)
  local nn = rawget(wick, "nn")
  if nn and class == rawget(nn, "Parameter") then return getmetatable(v) == mt and v:_is_parameter() end
  if type(class) == "table" and rawget(class, "_legacy_dtype") then -- isinstance(feat, torch.FloatTensor): dtype and device
    if getmetatable(v) ~= mt or v.dtype ~= class._legacy_dtype then return false end
    return v.device.type == ((class._legacy_device and wick.device(class._legacy_device).type) or "cpu")
  end
  if type(class) == "table" and getmetatable(class) == nil and next(class) ~= nil and rawget(class, "__name") == nil
      and rawget(class, "__index") == nil then -- neither a class nor a tuple of them: always false, so say so
    check.fail("isinstance", "the class is a plain table, not a class (made by extend) nor a list of classes "
      .. "(a mixin's methods are not a class: mark the objects that take them and test the mark)")
  end
  local c = type(v) == "table" and getmetatable(v) or nil
  return type(c) == "table" and wick.issubclass(c, class)
end

-- ---- grad mode ----

-- Wrappers that must undo something when fn raises (no_grad, cuda.batch,
-- with_device) catch the error with xpcall and raise it again. The message
-- stays what it was (it already starts with the raising line); the traceback
-- of where it was raised is recorded by the handler, and when nothing up the
-- stack will catch the error again (no pcall/xpcall frame, not in a
-- coroutine), it is appended, so a script's uncaught error still shows the
-- user's lines instead of the wrapper's.
local TRACEBACK = "\nstack traceback:"
local last_error, last_traceback -- the newest error seen by a wrapper and its traceback
local function record_traceback(err)
  if type(err) == "string" and err ~= last_error then
    last_error, last_traceback = err, debug.traceback("", 2):sub(2)
  end
  return err
end
local function caught_above()
  local co, main = coroutine.running()
  if co ~= nil and not main then return true end -- the error ends at coroutine.resume
  local level = 3
  while true do
    local info = debug.getinfo(level, "f")
    if not info then return false end
    if info.func == pcall or info.func == xpcall then return true end
    level = level + 1
  end
end
local function rethrow(err)
  if type(err) == "string" and err == last_error and not err:find(TRACEBACK, 1, true) and not caught_above() then
    err = err .. "\n" .. last_traceback:gsub("^stack traceback:", "stack traceback (where the error was raised):")
  end
  error(err, 0)
end

-- fn(...) with a state switched on: enter() before it, leave() after it, also
-- when it raises. Inside a coroutine, fn runs in a coroutine of its own, so a
-- yield from fn (a generator under wick.no_grad, Python's @torch.no_grad() on a
-- function that yields) leaves the state first and enters it again when
-- resumed: the resumer never runs in fn's state, even when it stops resuming.
local function run_scoped(enter, leave, fn, ...)
  local co, main = coroutine.running()
  if co == nil or main then
    enter()
    local results = pack(xpcall(fn, record_traceback, ...))
    leave()
    if not results[1] then rethrow(results[2]) end
    return unpack(results, 2, results.n)
  end
  local inner, args = coroutine.create(fn), pack(...)
  while true do
    enter()
    local r = pack(coroutine.resume(inner, unpack(args, 1, args.n)))
    leave()
    if coroutine.status(inner) == "dead" then
      if not r[1] then
        record_traceback(r[2])
        error(r[2], 0) -- (in a coroutine: the error ends at a resume, which shows it)
      end
      return unpack(r, 2, r.n)
    end
    args = pack(coroutine.yield(unpack(r, 2, r.n)))
  end
end

--- wick.device(spec[, index], fn): PyTorch's `with torch.device(d):`, fn
--- runs with d as the default device (wick.set_default_device) and the
--- previous one comes back after, also when fn raises; returns fn's results.
do
  local make_device = wick.device
  function wick.device(spec, index, fn, ...)
    if type(index) == "function" then return wick.device(spec, nil, index, fn, ...) end
    local d = make_device(spec, index)
    if fn == nil then return d end
    check.callable(fn, "wick.device", "fn")
    local previous
    return run_scoped(function()
      previous = wick.get_default_device()
      wick.set_default_device(d)
    end, function() wick.set_default_device(previous) end, fn, ...)
  end
end

-- a decorator's wrapper -> the function it wraps (weak keys): a module method written as
-- C.forward = wick.no_grad()(function(self, x, mask) ... end) keeps its names for keywords
wick._decorated = setmetatable({}, { __mode = "k" })
local function decorated(f, wrapper)
  wick._decorated[wrapper] = f
  return wrapper
end
--- wick.wraps(fn)(wrapper): Python's functools.wraps for a decorator of one's own: the wrapper
--- (a function(self, ...) calling fn) takes keywords by fn's parameter names (DALLE-pytorch's
--- eval_decorator around generate_images(self, text, clip, filter_thres, ...)); returns wrapper
function wick.wraps(fn)
  check.callable(fn, "wraps", "wrapped")
  return function(wrapper)
    check.callable(wrapper, "wraps()", "wrapper")
    return decorated(fn, wrapper)
  end
end

--- wick.lru_cache([{maxsize = 128}])(fn) (or wick.lru_cache(fn)): Python's functools.lru_cache: fn's results
--- kept by its arguments, numbers, strings, booleans and plain tables of them by value (Python's tuples),
--- anything else (tensors, modules, self) by identity; the least recently used dropped past maxsize
--- (nil: none dropped). RT-DETR's @lru_cache(maxsize=32) def generate_anchors(self, ...). The wrapper
--- takes fn's keywords as a method of one's own does.
local lru_ids, lru_next_id = setmetatable({}, { __mode = "k" }), 0
local function lru_key(v, depth)
  local t = type(v)
  if t == "number" then return ("%.17g"):format(v) end
  if t == "string" then return ("%q"):format(v) end
  if t == "nil" or t == "boolean" then return tostring(v) end
  if t == "table" and (getmetatable(v) == nil or getmetatable(v) == getmetatable(wick.Size({}))) and depth < 16 then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = lru_key(k, depth + 1) .. "=" .. lru_key(v[k], depth + 1) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  if lru_ids[v] == nil then lru_next_id = lru_next_id + 1; lru_ids[v] = lru_next_id end
  return "#" .. lru_ids[v]
end
local function lru_wrap(fn, maxsize)
  check.callable(fn, "lru_cache", "user_function")
  local cache, order = {}, {}
  return decorated(fn, function(...)
    local n = select("#", ...)
    local parts = { n }
    for i = 1, n do parts[i + 1] = lru_key((select(i, ...)), 0) end
    local key = table.concat(parts, "|")
    local hit = cache[key]
    if hit then
      for i, k in ipairs(order) do if k == key then table.remove(order, i); break end end
    else -- (a call that raises keeps nothing)
      hit = pack(fn(...))
      cache[key] = hit
    end
    order[#order + 1] = key
    if maxsize and #order > maxsize then cache[table.remove(order, 1)] = nil end
    return unpack(hit, 1, hit.n)
  end)
end
function wick.lru_cache(fn_or_opts)
  if type(fn_or_opts) == "function" then return lru_wrap(fn_or_opts, 128) end
  local maxsize = 128
  if fn_or_opts ~= nil then
    local o = check.options(fn_or_opts, "lru_cache", { maxsize = "number|boolean", typed = "boolean" })
    maxsize = o.maxsize
    if maxsize == false then maxsize = nil end -- (Python's maxsize=None: unbounded)
    if o.maxsize == nil then maxsize = 128 end
  end
  if maxsize ~= nil then check.int(maxsize, "lru_cache", "maxsize", 0) end
  return function(fn) return lru_wrap(fn, maxsize) end
end

--- wick.namedtuple(name, fields): Python's collections.namedtuple: a class whose instances, made
--- by position or by name (R(a, b) or R{x = a, y = b}), read each field by name and by index
--- (r.outputs, r[1], unpack(r)); st-moe's MixtureOfExpertsReturn
function wick.namedtuple(name, fields)
  check.string(name, "namedtuple", "typename")
  if type(fields) == "string" then
    local list = {}
    for f in fields:gmatch("[^%s,]+") do list[#list + 1] = f end
    fields = list
  end
  check.table(fields, "namedtuple", "field_names")
  local at = {}
  for i, f in ipairs(fields) do
    if type(f) ~= "string" or at[f] then check.fail("namedtuple", "field names must be distinct strings, got %s", tostring(f)) end
    at[f] = i
  end
  local T = { _fields = { unpack(fields) } }
  local mt = { __name = name, __namedtuple = T } -- (wick.utils._pytree's node)
  function T._asdict(r)
    local d = require("wick.ordered").OrderedDict()
    for i, f in ipairs(fields) do d[f] = rawget(r, i) end
    return d
  end
  mt.__index = function(r, k)
    if at[k] then return rawget(r, at[k]) end
    if type(k) == "number" and k % 1 == 0 and k >= -#fields and k <= #fields and k ~= 0 then -- (a nil field; -1 the last)
      return rawget(r, k > 0 and k or #fields + k + 1)
    end
    if T[k] ~= nil then return T[k] end
    check.fail(name, "'%s' object has no attribute '%s'", name, tostring(k))
  end
  mt.__newindex = function() check.fail(name, "can't set attribute (a namedtuple is immutable)") end
  mt.__len = function() return #fields end
  mt.__deepcopy = function(r, copy) -- (wick.deepcopy: a new tuple of copied fields)
    local c = {}
    for i = 1, #fields do c[i] = copy(rawget(r, i)) end
    return setmetatable(c, mt)
  end
  mt.__tostring = function(r)
    local parts = {}
    for i, f in ipairs(fields) do parts[i] = f .. "=" .. tostring(rawget(r, i)) end
    return name .. "(" .. table.concat(parts, ", ") .. ")"
  end
  return setmetatable(T, { __name = name, __call = function(_, ...)
    local r, n = { ... }, select("#", ...)
    if n == 1 and type(r[1]) == "table" and getmetatable(r[1]) == nil and next(r[1]) ~= nil and r[1][1] == nil then
      local kw = r[1]
      r = {}
      for k, v in pairs(kw) do
        if not at[k] then check.fail(name, "got an unexpected keyword argument '%s'", tostring(k)) end
        r[at[k]] = v
      end
      n = #fields
    end
    if n > #fields then check.fail(name, "takes %d arguments, got %d", #fields, n) end
    return setmetatable(r, mt)
  end })
end

--- wick.partial(func, ...[, keywords]): Python's functools.partial: p(...) is func(args..., ..., keywords) with a
--- trailing keywords table of the call merged over the stored one (pix2pix's get_norm_layer:
--- functools.partial(nn.InstanceNorm2d, affine=False) is wick.partial(nn.InstanceNorm2d, {affine = false}));
--- p.func, p.args and p.keywords are Python's, and wick.isinstance(p, wick.partial) holds
local Partial = { __name = "partial", __name__ = "partial" }
-- the function a class's method wrapper or a decorator wraps (wick.nn.module's wrappers)
local function unwrapped(f)
  require("wick.nn.module")
  return require("wick.nn.common").unwrapped(f)
end
-- a plain Lua function's parameter names in order (none for a C function)
local function parameter_names(f)
  local info = debug.getinfo(f, "u")
  local names = {}
  for i = 1, info.nparams or 0 do names[i] = debug.getlocal(f, i) end
  return names, info.isvararg
end
-- keywords kw bound by name into args[1..k] for a plain Lua function (cosine_warmup_lr(i, warmup,
-- max_iter) under partial(f, max_iter=5, warmup=2)) when a key names a free parameter: the names
-- no parameter has go to the `...` of one's own function as one table (Python's **kwargs), or are
-- Python's TypeError when it has none. The new top, or nil when no key names a free parameter, one
-- names a parameter given already, or wick's own function gets names it has no parameter for (then
-- kw goes as a trailing table: an options table, or a class's method, which binds keywords itself)
local function bind_by_name(f, args, k, kw)
  if type(f) ~= "function" or unwrapped(f) ~= f then return nil end
  local names, vararg = parameter_names(f)
  local own = not require("wick.nn.common").of_wick(f)
  local at = {}
  for i, name in ipairs(names) do at[name] = i end
  local top, named, extra = k, false, nil
  for name in pairs(kw) do
    local i = at[name]
    if i and i <= k then return nil end
    if i then named, top = true, math.max(top, i) else extra = extra or name end
  end
  if not named or (extra and not own) then return nil end
  if extra and not vararg then
    check.fail("partial", "the function got an unexpected keyword argument '%s' (its parameters: %s)", tostring(extra),
      table.concat(names, ", "))
  end
  for name, v in pairs(kw) do
    if at[name] then args[at[name]] = v
    else
      top = #names + 1
      args[top] = args[top] or {}
      args[top][name] = v
    end
  end
  return top
end
Partial.__index = Partial
-- a trailing table of keywords: plain, with names and no array part
local function keywords_of(v) return type(v) == "table" and getmetatable(v) == nil and #v == 0 and next(v) ~= nil end
Partial.__call = function(p, ...)
  local n, args, k = select("#", ...), {}, 0
  local first = p.method and 1 or 0 -- (a partialmethod's self goes before the stored arguments)
  if first == 1 then k, args[1] = 1, (...) end
  for i = 1, p.args.n do
    k = k + 1
    args[k] = p.args[i]
  end
  local own = n > first and keywords_of((select(n, ...))) and (select(n, ...)) or nil
  for i = first + 1, own and n - 1 or n do
    k = k + 1
    args[k] = (select(i, ...))
  end
  if next(p.keywords) ~= nil or own then
    local kw = {}
    for name, v in pairs(p.keywords) do kw[name] = v end
    for name, v in pairs(own or {}) do kw[name] = v end
    local top = bind_by_name(p.func, args, k, kw)
    if top then return p.func(unpack(args, 1, top)) end
    k = k + 1
    args[k] = kw
  end
  return p.func(unpack(args, 1, k))
end
Partial.__tostring = function(p) return ("functools.partial(%s, %d argument(s))"):format(tostring(p.func), p.args.n) end
local function new_partial(name, func, ...)
  check.callable(func, name, "func")
  local n = select("#", ...)
  local last = n > 0 and (select(n, ...)) or nil
  -- the keywords: a trailing table of names, or `{}` (Python's partial(f, self, **kwargs) of empty kwargs)
  local keywords = n > 0 and (keywords_of(last) or (type(last) == "table" and getmetatable(last) == nil and next(last) == nil))
    and last or nil
  local args = { n = keywords and n - 1 or n }
  for i = 1, args.n do args[i] = (select(i, ...)) end
  local copy = {}
  for name, v in pairs(keywords or {}) do copy[name] = v end
  return setmetatable({ func = func, args = args, keywords = copy, method = name == "partialmethod" or nil }, Partial)
end
wick.partial = setmetatable(Partial, {
  __call = function(_, func, ...) return new_partial("partial", func, ...) end,
  __tostring = function() return "<class 'functools.partial'>" end,
})
--- wick.inspect.signature(fn): Python's inspect.signature: .parameters an OrderedDict of the
--- parameter names in order, each {name =, kind =} (kind "POSITIONAL_OR_KEYWORD", or "VAR_POSITIONAL"
--- for a trailing `...`, named "..."), of a Lua function, the function a class's method wraps, a
--- class (its init's, without self) or a callable object's __call__ (without self); diffusers'
--- set(inspect.signature(self.processor.__call__).parameters.keys())
local function signature(fn)
  local drop_self = false
  if type(fn) == "table" then
    local call = rawget(fn, "super") ~= nil and fn.init or fn.__call__
    if type(call) ~= "function" then check.fail("signature", "%s is not a callable with a signature", tostring(fn)) end
    fn, drop_self = call, true
  end
  check.callable(fn, "signature", "obj")
  local f = unwrapped(fn)
  if type(f) ~= "function" or debug.getinfo(f, "S").what == "C" then
    check.fail("signature", "no signature found for builtin %s", tostring(fn))
  end
  local names, vararg = parameter_names(f)
  local parameters = require("wick.ordered").OrderedDict()
  for i, name in ipairs(names) do
    if not (drop_self and i == 1) then parameters[name] = { name = name, kind = "POSITIONAL_OR_KEYWORD" } end
  end
  if vararg then parameters["..."] = { name = "...", kind = "VAR_POSITIONAL" } end
  return { parameters = parameters }
end
wick.inspect = check.strict({ signature = signature }, "wick.inspect")

--- wick.partialmethod(func, ...[, keywords]): Python's functools.partialmethod, a partial to keep in a class: its
--- call puts self first, then the stored arguments (openfold's DropoutRowwise: __init__ = partialmethod(
--- Dropout.__init__, batch_dim=-3) is DropoutRowwise.init = wick.partialmethod(Dropout.init, {batch_dim = -3}));
--- a function, as a class's methods are
function wick.partialmethod(func, ...)
  local p = new_partial("partialmethod", func, ...)
  return function(self, ...) return p(self, ...) end
end

local function with_grad_mode(enabled, name, fn, ...)
  check.callable(fn, name, "fn")
  local previous
  return run_scoped(function()
    previous = core.is_grad_enabled()
    core.set_grad_enabled(enabled)
  end, function() core.set_grad_enabled(previous) end, fn, ...)
end

-- With no arguments, a decorator (PyTorch's @torch.no_grad()): wick.no_grad()(f)
-- is f run under the mode at each call.
local function grad_mode(enabled, name)
  return function(...)
    if select("#", ...) == 0 then
      return function(fn)
        check.callable(fn, name .. "()", "fn")
        return decorated(fn, function(...) return with_grad_mode(enabled, name, fn, ...) end)
      end
    end
    return with_grad_mode(enabled, name, ...)
  end
end
--- Runs fn(...) without recording gradients; restores the mode also when fn raises.
wick.no_grad = grad_mode(false, "no_grad")
wick.enable_grad = grad_mode(true, "enable_grad")
--- wick.inference_mode([mode = true, ]fn, ...): wick.no_grad (PyTorch's faster no-grad mode; here the same);
--- inference_mode(false, fn) runs fn with grad mode on (PyTorch's InferenceMode(false)); wick.is_inference_mode_enabled()
--- says whether one is running
local inference_depth = 0
local no_grad_inference = grad_mode(false, "inference_mode")
function wick.inference_mode(mode, ...)
  if type(mode) == "boolean" then
    if not mode then -- PyTorch's InferenceMode(false): grad mode on, inference mode off, inside
      if select("#", ...) == 0 then
        return function(fn)
          check.callable(fn, "inference_mode(false)", "fn")
          return decorated(fn, function(...) return wick.inference_mode(false, fn, ...) end)
        end
      end
      local fn = ...
      check.callable(fn, "inference_mode", "fn")
      local saved
      return run_scoped(function() saved, inference_depth = inference_depth, 0 end,
        function() inference_depth = saved end, wick.enable_grad, fn, select(2, ...))
    end
    return wick.inference_mode(...)
  end
  if mode == nil and select("#", ...) == 0 then -- the decorator
    return function(fn)
      check.callable(fn, "inference_mode()", "fn")
      return decorated(fn, function(...) return wick.inference_mode(fn, ...) end)
    end
  end
  check.callable(mode, "inference_mode", "fn")
  return run_scoped(function() inference_depth = inference_depth + 1 end,
    function() inference_depth = inference_depth - 1 end, no_grad_inference, mode, ...)
end
function wick.is_inference_mode_enabled() return inference_depth > 0 end
--- wick.set_grad_enabled(b): switches grad mode; wick.set_grad_enabled(b, fn, ...) runs fn(...)
--- in that mode and restores the previous one (PyTorch's `with torch.set_grad_enabled(b):`)
function wick.set_grad_enabled(enabled, fn, ...)
  enabled = check.flag(enabled, "set_grad_enabled", "mode")
  if enabled == nil then check.boolean(enabled, "set_grad_enabled", "mode") end
  if fn == nil then
    -- switched now, as PyTorch's; the result also decorates (@torch.set_grad_enabled(False)), which puts
    -- the previous mode back, as PyTorch's __call__ does, and runs the function in this one
    local previous = core.is_grad_enabled()
    core.set_grad_enabled(enabled)
    return function(f)
      core.set_grad_enabled(previous)
      check.callable(f, "set_grad_enabled()", "fn")
      return decorated(f, function(...) return with_grad_mode(enabled, "set_grad_enabled", f, ...) end)
    end
  end
  return with_grad_mode(enabled, "set_grad_enabled", fn, ...)
end

-- ---- autocast (mixed precision): the switch and dtype live in the core, per
-- thread and device type (src/core/autocast.c), so ops called from C follow it too

-- Autocast for the ops written in Lua, by PyTorch's lists: _autocast_float32
-- (losses, linear algebra, cdist, trace, reflection padding: a 16-bit float
-- operand goes up to float32) and _autocast_lower (baddbmm, prelu: float
-- operands go to the autocast dtype). Casts are recorded, as the C ops' are.
local function autocast_on(t)
  local dt = t.device.type
  return (dt == "cpu" or dt == "cuda") and core._is_autocast_enabled(dt) and dt
end
function wick._autocast_float32(t)
  if getmetatable(t) ~= mt then return t end
  local d = t.dtype
  if (d == "bfloat16" or d == "float16") and autocast_on(t) then return t:to("float32") end
  return t
end
function wick._autocast_lower(t)
  if getmetatable(t) ~= mt then return t end
  local d = t.dtype
  if d == "float32" or d == "bfloat16" or d == "float16" then
    local dt = autocast_on(t)
    if dt then
      local low = core._get_autocast_dtype(dt)
      if d ~= low then return t:to(low) end
    end
  end
  return t
end

local AUTOCAST = { device_type = "string", dtype = "string", enabled = "boolean", cache_enabled = "boolean" }
local AUTOCAST_DTYPES = { bfloat16 = "bfloat16", bf16 = "bfloat16", float16 = "float16", half = "float16" }
--- wick.autocast({device_type = "cpu" | "cuda"[, dtype =][, enabled =][, cache_enabled =]}, fn, ...):
--- fn(...) with autocast on (torch.autocast's arguments; a string is the device_type);
--- returns fn's results and restores the previous state, also when fn raises.
--- Without fn, a decorator (PyTorch's @torch.autocast(...)): wick.autocast(opts)(f)
--- is f run under autocast.
function wick.autocast(opts, fn, ...)
  if type(opts) == "string" then
    -- autocast("cpu", {dtype =, enabled =}, fn, ...): torch.autocast("cpu", dtype=...)
    if type(fn) == "table" and getmetatable(fn) == nil then
      local o = { device_type = opts }
      for k, v in pairs(fn) do o[k] = v end
      return wick.autocast(o, ...)
    end
    opts = { device_type = opts }
  end
  opts = check.options(opts, "autocast", AUTOCAST)
  local dt = opts.device_type
  if dt == nil then check.fail("autocast", "the option device_type ('cpu' or 'cuda') is required") end
  check.one_of(dt, "autocast", "device_type", { "cpu", "cuda" })
  local dtype = opts.dtype or core._get_autocast_dtype(dt)
  local unsupported = false
  if dtype == "float32" or dtype == "float64" then -- (nanoGPT's --dtype=float32): PyTorch warns and disables
    require("wick.nn.common").warn(("In %s autocast, but the target dtype is not supported. Disabling autocast. %s "
      .. "Autocast only supports dtype of torch.bfloat16, torch.float16 currently."):format(dt:upper(), dt:upper()))
    unsupported, dtype = true, core._get_autocast_dtype(dt)
  end
  if not AUTOCAST_DTYPES[dtype] then
    check.fail("autocast", "dtype must be 'bfloat16' or 'float16' (the lower precision autocast casts to), got '%s'", dtype)
  end
  if fn == nil then
    return function(f)
      check.callable(f, "autocast", "f")
      return decorated(f, function(...) return wick.autocast(opts, f, ...) end)
    end
  end
  check.callable(fn, "autocast", "fn")
  local enabled = opts.enabled ~= false and not unsupported
  if enabled and dt == "cuda" and not wick.cuda.is_available() then
    wick.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling") -- (once per line)
    enabled = false
  end
  local was_enabled, was_dtype, was_cache
  return run_scoped(function()
    was_enabled, was_dtype, was_cache = core._is_autocast_enabled(dt), core._get_autocast_dtype(dt),
      core._is_autocast_cache_enabled()
    core._set_autocast_dtype(dt, AUTOCAST_DTYPES[dtype])
    core._set_autocast_enabled(dt, enabled)
    if opts.cache_enabled ~= nil then core._set_autocast_cache_enabled(opts.cache_enabled) end
    core._autocast_increment_nesting()
  end, function()
    if core._autocast_decrement_nesting() == 0 then core._clear_autocast_cache() end
    core._set_autocast_enabled(dt, was_enabled)
    core._set_autocast_dtype(dt, was_dtype)
    core._set_autocast_cache_enabled(was_cache)
  end, fn, ...)
end
--- torch.is_autocast_enabled([device_type]): PyTorch's default device_type is "cuda".
function wick.is_autocast_enabled(device_type) return core._is_autocast_enabled(device_type or "cuda") end
--- torch.get_autocast_dtype(device_type): the dtype autocast casts to there.
function wick.get_autocast_dtype(device_type) return core._get_autocast_dtype(device_type) end
--- PyTorch's deprecated spellings: torch.get_autocast_gpu_dtype(), get_autocast_cpu_dtype(), is_autocast_cpu_enabled()
function wick.get_autocast_gpu_dtype() return core._get_autocast_dtype("cuda") end
function wick.get_autocast_cpu_dtype() return core._get_autocast_dtype("cpu") end
function wick.is_autocast_cpu_enabled() return core._is_autocast_enabled("cpu") end
wick.is_grad_enabled = core.is_grad_enabled

local function move_to(value, device)
  if getmetatable(value) == mt then return value:to(device) end
  if type(value) ~= "table" then return value end
  local out = {}
  for k, v in pairs(value) do out[k] = move_to(v, device) end
  return setmetatable(out, getmetatable(value))
end

--- Moves a tensor, or every tensor inside a (nested) table, to a device: one
--- batch of copies (wick.cuda.batch), so the call waits for a GPU once.
function wick.to_device(value, device)
  if type(device) == "number" then device = wick.device("cuda:" .. check.int(device, "to_device", "device", 0)) end -- t:to(0)'s ordinal
  if type(device) ~= "string" and type(device) ~= "table" then check.expected("to_device", "device", "a device", device) end
  if getmetatable(value) == mt then return value:to(device) end
  if type(value) ~= "table" then return value end
  return wick.cuda.batch(move_to, value, device)
end

-- ---- CUDA (the backend comes with the CUDA build; src/cuda) ----
-- The current device is per thread and lives in C, like CUDA's own.

local function ordinal(i, fn)
  if i == nil then return core.cuda_current_device() end
  if type(i) == "number" then return check.int(i, "wick.cuda." .. fn, "device", 0) end
  local ok, d = pcall(wick.device, i)
  if not ok then check.expected("wick.cuda." .. fn, "device", "a device index or a CUDA device", i) end
  if d.type ~= "cuda" then core.error(("wick.cuda.%s: expected a CUDA device, got '%s'"):format(fn, tostring(d))) end
  return d.index or core.cuda_current_device()
end

local Properties = { __name = "_CudaDeviceProperties" }
Properties.__index = Properties
Properties.__tostring = function(p)
  return ("_CudaDeviceProperties(name='%s', major=%d, minor=%d, total_memory=%dMB, multi_processor_count=%d)")
    :format(p.name, p.major, p.minor, math.floor(p.total_memory / 2 ^ 20), p.multi_processor_count)
end
local function device_properties(i, fn)
  if not wick.cuda.is_available() then
    core.error(("wick.cuda.%s: no CUDA GPU is available (wick.cuda.is_available() is false)"):format(fn))
  end
  local name, major, minor, total, sms = core.cuda_device_properties(ordinal(i, fn))
  return setmetatable({ name = name, major = major, minor = minor, total_memory = total,
    multi_processor_count = sms }, Properties)
end

wick.cuda = {
  is_available = function() local ok, r = pcall(core.cuda_is_available); return ok and r or false end,
  device_count = function() return core.cuda_device_count() end,
  current_device = function() return core.cuda_current_device() end,
  set_device = function(i) core.cuda_set_device(ordinal(i, "set_device")) end,
  synchronize = function(i) core.cuda_synchronize(i == nil and -1 or ordinal(i, "synchronize")) end,
  memory_allocated = function(i) return (core.cuda_memory(ordinal(i, "memory_allocated"))) end,
  max_memory_allocated = function(i) return select(2, core.cuda_memory(ordinal(i, "max_memory_allocated"))) end,
  memory_reserved = function(i) return select(3, core.cuda_memory(ordinal(i, "memory_reserved"))) end,
  max_memory_reserved = function(i) return select(4, core.cuda_memory(ordinal(i, "max_memory_reserved"))) end,
  reset_peak_memory_stats = function(i) core.cuda_reset_peak_memory_stats(ordinal(i, "reset_peak_memory_stats")) end,
  empty_cache = function() core.cuda_empty_cache() end,
  -- torch.cuda.get_device_properties(device): name, major, minor, total_memory (bytes),
  -- multi_processor_count; get_device_name, get_device_capability (major, minor) of it
  get_device_properties = function(i) return device_properties(i, "get_device_properties") end,
  get_device_name = function(i) return device_properties(i, "get_device_name").name end,
  get_device_capability = function(i)
    local p = device_properties(i, "get_device_capability")
    return p.major, p.minor
  end,
  -- one generator serves every device (see wick.manual_seed): PyTorch's CUDA
  -- seeding calls seed it, also on a machine without a GPU, as PyTorch's do
  manual_seed = function(s) return wick.manual_seed(s) end,
  manual_seed_all = function(s) return wick.manual_seed(s) end,
  seed = function() return wick.seed() end,
  seed_all = function() return wick.seed() end,
  initial_seed = function() return wick.initial_seed() end,
  -- wick's CUDA state is made when a GPU is there (reversible.py's torch.cuda._initialized guard)
  is_initialized = function() return wick.cuda.is_available() end,
  -- torch.cuda.Event(enable_timing=True): e:record() notes the time (after the GPU's queued work),
  -- e:elapsed_time(later) is the milliseconds between two (airbench's timing); e:synchronize(), e:query()
  Event = function(opts)
    opts = check.options(opts, "wick.cuda.Event", { enable_timing = "boolean", blocking = "boolean",
      interprocess = "boolean" })
    local e = { enable_timing = opts.enable_timing == true }
    local function sync() if wick.cuda.is_available() then wick.cuda.synchronize() end end
    function e.record(self) sync(); self._t = wick.clock() end
    function e.synchronize() sync() end
    function e.query(self) return self._t ~= nil end
    function e.elapsed_time(self, other)
      if not (self.enable_timing and other.enable_timing) then
        check.fail("Event.elapsed_time", "Both events must be created with argument 'enable_timing=True'")
      end
      if self._t == nil or other._t == nil then
        check.fail("Event.elapsed_time", "Both events must be recorded before calculating elapsed time")
      end
      return (other._t - self._t) * 1000
    end
    return e
  end,
  -- bfloat16 runs wherever a GPU does (nanoGPT's dtype choice)
  is_bf16_supported = function() return wick.cuda.is_available() end,
  -- the one generator's state, once per GPU for the _all forms (none without one), as checkpoints keep it
  get_rng_state = function() return wick.get_rng_state() end,
  set_rng_state = function(state) return wick.set_rng_state(state) end,
  get_rng_state_all = function()
    local out = {}
    for i = 1, wick.cuda.device_count() do out[i] = wick.get_rng_state() end
    return out
  end,
  set_rng_state_all = function(states)
    check.table(states, "wick.cuda.set_rng_state_all", "states")
    if states[1] ~= nil then wick.set_rng_state(states[1]) end
  end,
}
--- wick.random: torch.random's names; wick.random.fork_rng([{devices =, enabled = true}], fn, ...) runs
--- fn(...) and then puts the generator's state back (also when fn raises), as `with torch.random.fork_rng():`;
--- without fn, PyTorch's context manager object, entered and left by hand: ctx:__enter__() saves the
--- state, ctx:__exit__() puts it back (sentence-transformers' RandContext)
wick.random = check.strict({
  manual_seed = function(s) return wick.manual_seed(s) end,
  seed = function() return wick.seed() end,
  initial_seed = function() return wick.initial_seed() end,
  get_rng_state = function() return wick.get_rng_state() end,
  set_rng_state = function(state) return wick.set_rng_state(state) end,
  fork_rng = function(opts, fn, ...)
    if type(opts) == "function" then return wick.random.fork_rng(nil, opts, fn, ...) end
    opts = check.options(opts, "fork_rng", { devices = "table", enabled = "boolean", device_type = "string",
      _caller = "string" })
    if fn == nil then
      local ctx = {}
      function ctx.__enter__(self)
        if opts.enabled ~= false then self._state = wick.get_rng_state() end
        return self
      end
      function ctx.__exit__(self)
        if self._state then wick.set_rng_state(self._state) end
        self._state = nil
        return false
      end
      return ctx
    end
    check.callable(fn, "fork_rng", "fn")
    if opts.enabled == false then return fn(...) end
    local state = wick.get_rng_state() -- (one generator serves every device)
    local results = pack(xpcall(fn, record_traceback, ...))
    wick.set_rng_state(state)
    if not results[1] then rethrow(results[2]) end
    return unpack(results, 2, results.n)
  end,
}, "wick.random")
-- torch.cuda.amp's names: the GradScaler and autocast of device "cuda"
wick.cuda.amp = {
  GradScaler = function(...) return wick.amp.GradScaler("cuda", ...) end,
  autocast = function(opts, fn, ...)
    if type(opts) == "boolean" then opts = { enabled = opts } end -- torch.cuda.amp.autocast(enabled) by position
    if type(opts) ~= "table" then return wick.autocast("cuda", opts, fn, ...) end
    local o = { device_type = "cuda" }
    for k, v in pairs(opts) do o[k] = v end
    return wick.autocast(o, fn, ...)
  end,
}
-- Without CUDA there is no current device to ask for; statistics are then 0 (for "cuda" too, as PyTorch's)
if not wick.cuda.is_available() then
  for _, name in ipairs({ "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved" }) do
    local f = wick.cuda[name]
    wick.cuda[name] = function(i)
      if i == nil or i == "cuda" or (type(i) == "table" and i.type == "cuda" and i.index == nil) then return 0 end
      return f(i)
    end
  end
  wick.cuda.reset_peak_memory_stats = function() end
end

check.strict(wick.cuda, "wick.cuda")
check.strict(wick.cuda.amp, "wick.cuda.amp")

-- memory at a glance (memory.lua): the CPU allocator's and the CUDA allocator's statistics
do
  local memory = require("wick.memory")(wick)
  wick.memory_stats, wick.memory_summary = memory.memory_stats, memory.memory_summary
  wick.reset_peak_memory_stats = memory.reset_peak_memory_stats
  wick.cuda.memory_stats, wick.cuda.memory_summary = memory.cuda_memory_stats, memory.cuda_memory_summary
end

--- wick.cuda.sync_count([device]): how many times wick has waited for the GPU
--- (all GPUs when device is nil), and a table of those waits by reason.
function wick.cuda.sync_count(i)
  return core.cuda_sync_counts(i == nil and -1 or ordinal(i, "sync_count"))
end

--- wick.cuda.batch(fn, ...): runs fn(...) as one batch of copies: copies from
--- the CPU to a GPU inside it do not wait each; the batch waits once per GPU at
--- its end (also when fn raises) and reports a pending GPU error there.
function wick.cuda.batch(fn, ...)
  check.callable(fn, "wick.cuda.batch", "fn")
  core.cuda_begin_batch()
  local results = pack(xpcall(fn, record_traceback, ...))
  local ok, err = pcall(core.cuda_end_batch)
  if not results[1] then rethrow(results[2]) end
  if not ok then error(err, 0) end
  return unpack(results, 2, results.n)
end

function wick.cuda.with_device(i, fn, ...)
  check.callable(fn, "wick.cuda.with_device", "fn")
  -- torch.cuda.device(None) and device(-1) change nothing
  if i == nil or i == false or i == -1 then return fn(...) end
  if not wick.cuda.is_available() then
    check.fail("wick.cuda.with_device", "no CUDA GPU is available (wick.cuda.is_available() is false)")
  end
  local previous = core.cuda_current_device()
  wick.cuda.set_device(i)
  local results = pack(xpcall(fn, record_traceback, ...))
  core.cuda_set_device(previous)
  if not results[1] then rethrow(results[2]) end
  return unpack(results, 2, results.n)
end

-- wick.backends.cuda.matmul.allow_tf32: a switch read and written through C.
wick.backends = { cuda = { matmul = setmetatable({}, {
  __index = function(_, k) if k == "allow_tf32" then return core.cuda_allow_tf32() end end,
  __newindex = function(_, k, v)
    if k ~= "allow_tf32" then core.error(("wick.backends.cuda.matmul has no setting '%s'"):format(tostring(k))) end
    core.cuda_allow_tf32(v and true or false)
  end,
}) } }
-- PyTorch's flags that scripts set and wick has nothing behind: cuDNN (wick's
-- CUDA backend does not use it) and Apple's MPS
wick.backends.cudnn = { enabled = true, benchmark = false, deterministic = false, allow_tf32 = true,
  is_available = function() return false end, version = function() return nil end } -- (None: no cuDNN)
--- wick.backends.cudnn.flags([{enabled =, benchmark =, deterministic =, allow_tf32 =}], fn, ...): runs fn
--- with those flags, then puts them back (`with torch.backends.cudnn.flags(enabled=False):`)
function wick.backends.cudnn.flags(opts, fn, ...)
  local cudnn = wick.backends.cudnn
  if type(opts) == "function" then return cudnn.flags(nil, opts, fn, ...) end
  opts = check.options(opts, "backends.cudnn.flags", { enabled = "boolean", benchmark = "boolean",
    deterministic = "boolean", allow_tf32 = "boolean", benchmark_limit = "number" })
  check.callable(fn, "backends.cudnn.flags", "fn")
  local saved = {}
  for _, k in ipairs({ "enabled", "benchmark", "deterministic", "allow_tf32" }) do
    saved[k] = cudnn[k]
    if opts[k] ~= nil then cudnn[k] = opts[k] end
  end
  local results = pack(xpcall(fn, record_traceback, ...))
  for k, v in pairs(saved) do cudnn[k] = v end
  if not results[1] then rethrow(results[2]) end
  return unpack(results, 2, results.n)
end
wick.backends.mps = { is_available = function() return false end, is_built = function() return false end }
-- PyTorch's choice among its attention kernels (flash, memory-efficient,
-- math, cuDNN): wick has one fused scaled_dot_product_attention per device and
-- the math form, so the global switches are remembered and reported but choose
-- nothing; sdp_kernel({enable_flash =, enable_math =, enable_mem_efficient =,
-- enable_cudnn =}, fn) runs fn (the context manager as a function), with the
-- math form when flash and memory-efficient are both off, as
-- wick.nn.attention.sdpa_kernel(backends, fn) does for MATH alone.
do
  local cuda = wick.backends.cuda
  local enabled = { flash = true, mem_efficient = true, math = true, cudnn = true }
  for name in pairs(enabled) do
    cuda["enable_" .. name .. "_sdp"] = function(on)
      enabled[name] = check.boolean(on, "wick.backends.cuda.enable_" .. name .. "_sdp", "enabled")
    end
    cuda[name .. "_sdp_enabled"] = function() return enabled[name] end
  end
  local SDP = { enable_flash = "boolean", enable_math = "boolean", enable_mem_efficient = "boolean", enable_cudnn = "boolean" }
  function cuda.sdp_kernel(opts, fn, ...)
    if type(opts) == "function" then opts, fn = {}, opts end
    opts = check.options(opts or {}, "wick.backends.cuda.sdp_kernel", SDP)
    check.callable(fn, "wick.backends.cuda.sdp_kernel", "fn")
    if opts.enable_flash == false and opts.enable_mem_efficient == false and opts.enable_math ~= false then
      return wick.nn.functional._with_math_sdpa(fn, ...)
    end
    return fn(...)
  end
  check.strict(cuda, "wick.backends.cuda")
end
-- torch.xpu and torch.mps, which scripts probe for other accelerators: none here
wick.xpu = { is_available = function() return false end, device_count = function() return 0 end }
wick.mps = { device_count = function() return 0 end }

--- wick.accelerator (PyTorch's torch.accelerator): the GPU when there is one
wick.accelerator = {
  is_available = function() return core.cuda_device_count() > 0 end,
  device_count = function() return core.cuda_device_count() end,
  current_accelerator = function() return core.cuda_device_count() > 0 and wick.device("cuda") or nil end,
  current_device_index = function() return core.cuda_device_count() > 0 and wick.cuda.current_device() or -1 end,
}

--- wick.finfo([dtype]) / wick.iinfo(dtype): the numeric limits of a dtype, as PyTorch's
local FINFO = {
  float32 = { bits = 32, eps = 2 ^ -23, max = 3.4028234663852886e38, tiny = 2 ^ -126, resolution = 1e-6 },
  float64 = { bits = 64, eps = 2 ^ -52, max = 1.7976931348623157e308, tiny = 2 ^ -1022, resolution = 1e-15 },
  float16 = { bits = 16, eps = 2 ^ -10, max = 65504, tiny = 2 ^ -14, resolution = 1e-3 },
  bfloat16 = { bits = 16, eps = 2 ^ -7, max = 3.3895313892515355e38, tiny = 2 ^ -126, resolution = 1e-2 },
}
local IINFO = {
  int64 = { bits = 64, min = -2 ^ 63, max = 2 ^ 63 - 1 }, -- (max is 2^63 in a double)
  int32 = { bits = 32, min = -2 ^ 31, max = 2 ^ 31 - 1 },
  uint8 = { bits = 8, min = 0, max = 255 },
}
local function dtype_name(d, fn)
  local name = core.dtype_aliases[d] or d
  if type(name) ~= "string" or not dtype_info[name] then check.expected(fn, "type", "a dtype", d) end
  return name
end
function wick.finfo(d)
  local name = dtype_name(d == nil and core.get_default_dtype() or d, "finfo")
  local f = FINFO[name]
  if not f then core.error(("finfo: %s is not a floating point dtype (wick.iinfo is for integers)"):format(name)) end
  return { bits = f.bits, eps = f.eps, max = f.max, min = -f.max, tiny = f.tiny, smallest_normal = f.tiny,
    resolution = f.resolution, dtype = name }
end
function wick.iinfo(d)
  local name = dtype_name(d, "iinfo")
  local f = IINFO[name]
  if not f then core.error(("iinfo: %s is not an integer dtype (wick.finfo is for floating point)"):format(name)) end
  return { bits = f.bits, min = f.min, max = f.max, dtype = name }
end

-- ---- printing ----

local printing = require("wick.print")
local print_tensor = printing.tostring
wick.set_printoptions = printing.set_printoptions
-- the tensors nn.Parameter made (weak keys): they print as PyTorch's Parameters do
wick._parameters = setmetatable({}, { __mode = "k" })
-- the tensors nn.Buffer made, to their persistent flag (weak keys): a module field they are assigned to is a buffer
wick._buffers_made = setmetatable({}, { __mode = "k" })
mt.__tostring = function(t)
  local text = print_tensor(check_tensor(t, "tostring", "self"))
  return wick._parameters[t] and "Parameter containing:\n" .. text or text
end
-- a < b, a <= b between two tensors: a boolean, for one-element tensors (Python's
-- `acc1 > best_acc1`); elementwise comparisons are t:lt(u), t:le(u), ... (a
-- tensor and a number cannot meet a metamethod in Lua 5.1: t:item() < 3)
local function compared(op, a, b)
  local function value(v) -- (Lua 5.4 calls the metamethod for a number too)
    if type(v) == "number" then return v end
    if getmetatable(v) ~= mt then core.error(("attempt to compare a tensor with %s using %s"):format(type(v), op)) end
    if v:numel() ~= 1 then
      core.error(("attempt to compare a tensor of %d elements with %s: Lua's comparisons give one boolean; "
        .. "use t:lt(u), t:le(u), t:gt(u), t:ge(u) for elementwise ones"):format(v:numel(), op))
    end
    return v:item()
  end
  return value(a), value(b)
end
-- (Lua turns a > b into b < a before the metamethod: the message names both forms)
mt.__lt = function(a, b)
  local x, y = compared("< (or >)", a, b)
  return x < y
end
mt.__le = function(a, b)
  local x, y = compared("<= (or >=)", a, b)
  return x <= y
end
-- "loss: " .. t: the printed tensor (Python's f"{t}"); the other operand as Lua's .. takes it
-- Python's repr of a float: the shortest digits that read back as it ("0.1", "2.0", "1e-05", "inf")
local function py_float(x)
  if x ~= x then return "nan" end
  if x == math.huge or x == -math.huge then return x > 0 and "inf" or "-inf" end
  if x == math.floor(x) and math.abs(x) < 1e16 then return ("%.1f"):format(x) end
  return check.shortest(x)
end
-- `..` with a tensor: its print, and a 0-dim one its value as Python's f-string formats it
-- (f"expert_{idx}" is "expert_0", f"loss: {loss}" is "loss: 0.5"; str(t) would be "tensor(0)")
mt.__concat = function(a, b)
  local function str(v)
    if getmetatable(v) == mt and v:dim() == 0 and not v.is_meta and not v:is_complex() then
      if v.dtype == "bool" then return v:item() and "True" or "False" end
      if not v:is_floating_point() then -- (an int64 past 2^53 has no exact Lua number: its printed digits)
        local ok, x = pcall(v.item, v)
        return ok and ("%d"):format(x) or print_tensor(v):match("%-?%d+")
      end
      return py_float(v:item())
    end
    if getmetatable(v) == mt then return print_tensor(v) end
    if type(v) ~= "string" and type(v) ~= "number" then
      core.error(("attempt to concatenate a %s value with a tensor"):format(type(v)))
    end
    return v
  end
  if getmetatable(a) == mt and getmetatable(b) == mt then -- (a port of Python's a @ b, or of torch.cat)
    core.error("attempt to concatenate two tensors: Lua's .. joins text; Python's a @ b is a:matmul(b), "
      .. "torch.cat((a, b)) is wick.cat({a, b})")
  end
  return str(a) .. str(b)
end

-- `for row in t do`: Python's `for row in t:`, the slices along the first dim in order (a generic for
-- calls t(nil, previous slice)); a tensor called any other way is an error that says so
local iterated = setmetatable({}, { __mode = "k" }) -- a slice given out -> its index
mt.__call = function(t, state, prev)
  check_tensor(t, "__call", "self")
  if state ~= nil or (prev ~= nil and iterated[prev] == nil) then
    core.error("attempt to call a tensor (a tensor is no function or module; `for row in t do` iterates over its first dim)")
  end
  if t:dim() == 0 then core.error("iteration over a 0-d tensor") end
  local i = prev == nil and 1 or iterated[prev] + 1
  if i > t:size(1) then return nil end
  local row = t[i]
  iterated[row] = i
  return row
end

-- ---- LuaJIT fast paths: tiny ops called through the FFI ----
-- The classic Lua C API binding works everywhere; under LuaJIT the hottest
-- methods first try a C fast path through the FFI, which the JIT compiles into
-- the caller's trace. Anything the fast path does not handle (other dtypes,
-- devices, shapes, and every error) falls back to the classic binding.
local has_ffi, ffi = pcall(require, "ffi")
if has_ffi and not os.getenv("WICK_NO_FFI") then
  pcall(ffi.cdef, "typedef struct wick_tensor wick_tensor;")
  local ptrs = core.fast_pointers()
  local slot = ffi.typeof("wick_tensor **")
  local function fn(ctype, ptr) return ffi.cast(ctype, ptr) end
  local binary_inplace = fn("int (*)(int, wick_tensor *, const wick_tensor *, double)", ptrs.binary_inplace)
  local binary = fn("int (*)(int, wick_tensor **, const wick_tensor *, const wick_tensor *)", ptrs.binary)
  local binary_scalar = fn("int (*)(int, wick_tensor **, const wick_tensor *, double, int)", ptrs.binary_scalar)
  local mm = fn("int (*)(wick_tensor **, const wick_tensor *, const wick_tensor *)", ptrs.mm)

  -- Results of out-of-place fast paths go into tensor userdata made in batches
  -- by the C binding, so a new tensor costs no classic C call.
  local pool, npool = {}, 0
  local function next_slot()
    if npool == 0 then
      core.fill_slots(pool, 64)
      npool = #pool
    end
    return pool[npool]
  end
  local function used_slot() pool[npool] = nil; npool = npool - 1 end
  local function ptr(t) return ffi.cast(slot, t)[0] end

  -- `method`: a must be a tensor (t:add(u)); otherwise a metamethod (2 - t); `number_first`
  -- false: a number over a tensor takes the classic path (2 / t is reciprocal(t) * 2, PyTorch's)
  local function fast_binary(op, classic, method, number_first)
    return function(a, b, alpha)
      if alpha == nil then
        local out = next_slot()
        if getmetatable(a) == mt then
          if getmetatable(b) == mt then
            if binary(op, ffi.cast(slot, out), ptr(a), ptr(b)) == 0 then used_slot(); return out end
          elseif type(b) == "number" then
            if binary_scalar(op, ffi.cast(slot, out), ptr(a), b, 0) == 0 then used_slot(); return out end
          end
        elseif not method and number_first and type(a) == "number" and getmetatable(b) == mt then
          if binary_scalar(op, ffi.cast(slot, out), ptr(b), a, 1) == 0 then used_slot(); return out end
        end
      end
      return classic(a, b, alpha)
    end
  end

  for _, name in ipairs({ "add", "sub", "mul", "div" }) do
    local op = ptrs.binary_ops[name]
    Tensor[name] = fast_binary(op, Tensor[name], true)
    local meta = "__" .. name
    mt[meta] = fast_binary(op, mt[meta], false, name ~= "div")
    local classic_inplace = Tensor[name .. "_"]
    Tensor[name .. "_"] = function(a, b, alpha)
      if (alpha == nil or type(alpha) == "number") and getmetatable(b) == mt and getmetatable(a) == mt
          and binary_inplace(op, ptr(a), ptr(b), alpha or 1) == 0 then
        return a
      end
      return classic_inplace(a, b, alpha)
    end
  end

  local classic_mm = Tensor.mm
  Tensor.mm = function(a, b, extra)
    if extra == nil and getmetatable(b) == mt and getmetatable(a) == mt then
      local out = next_slot()
      if mm(ffi.cast(slot, out), ptr(a), ptr(b)) == 0 then used_slot(); return out end
    end
    return classic_mm(a, b, extra)
  end
  wick._ffi = true
end

-- PyTorch's legacy constructors: wick.FloatTensor(2, 3) (zeros of that size),
-- wick.LongTensor({1, 2}) (of the data), wick.Tensor(...) (the default
-- dtype), wick.cuda.FloatTensor(...) (on the GPU); also types for t:type(T)
-- and the deprecated autograd.Variable(t).
-- the legacy constructor's forms: nothing (empty), a tensor (converted), a
-- Size (zeros of that shape: FloatTensor(x.shape)), a table (data), sizes
local LEGACY_OPTIONS = { size = "table|number", device = "device", requires_grad = "boolean" }
local function legacy_made(opts, first, ...)
  if first == nil then return wick.empty({ 0 }, opts) end
  if select("#", ...) > 0 and (wick.is_tensor(first) or type(first) == "table") then -- (DLRM's RWSAdagrad
    -- grad.new(indices, values, size), PyTorch's sparse form, is PyTorch's TypeError on a dense tensor too)
    check.fail("new", "received an invalid combination of arguments: data (a %s) takes no further arguments, got %d more "
      .. "(sizes come as numbers, a sparse tensor is wick.sparse_coo_tensor(indices, values, size))",
      wick.is_tensor(first) and "tensor" or "table", select("#", ...))
  end
  if wick.is_tensor(first) then return first:to({ dtype = opts.dtype, device = opts.device }) end
  if getmetatable(first) == Size then return wick.zeros(first, opts) end
  if type(first) == "table" then return wick.tensor(first, opts) end
  return wick.zeros({ first, ... }, opts)
end
-- (PyTorch's keywords in a trailing table: torch.FloatTensor(5, 12, device=device) (speechbrain's
-- Classifier), torch.ByteTensor(size=(n,)))
local function legacy_new(opts, ...)
  local n = select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  if type(last) ~= "table" or getmetatable(last) ~= nil or next(last) == nil or #last > 0 then
    return legacy_made(opts, ...)
  end
  local o = check.options(last, "legacy tensor type", LEGACY_OPTIONS)
  local made = { dtype = opts.dtype, device = o.device or opts.device, requires_grad = o.requires_grad }
  if o.size ~= nil then
    if n > 1 then check.fail("legacy tensor type", "size given twice (by position and as size =)") end
    return wick.zeros(type(o.size) == "number" and { o.size } or o.size, made)
  end
  local args = { ... }
  return legacy_made(made, unpack(args, 1, n - 1))
end
local function legacy_type(name, dtype, device)
  return setmetatable({ _legacy_dtype = dtype, _legacy_device = device }, {
    __call = function(_, ...)
      return legacy_new({ dtype = dtype or wick.get_default_dtype(), device = device }, ...)
    end,
    __tostring = function() return (device and "torch.cuda." or "torch.") .. name end,
  })
end
--- wick.set_default_tensor_type(T): T a legacy type (wick.DoubleTensor) or its
--- name ("torch.DoubleTensor"): its dtype becomes the default (a CUDA type's
--- device the default device too), as torch.set_default_tensor_type
local device_from_type = false -- the default device is a CUDA tensor type's (a CPU type undoes it)
function wick.set_default_tensor_type(T)
  local dtype, device
  if type(T) == "table" and rawget(T, "_legacy_dtype") then
    dtype, device = T._legacy_dtype, T._legacy_device
  elseif type(T) == "string" then
    dtype, device = from_type_name(T)
  end
  if not dtype then check.expected("set_default_tensor_type", "t", "a tensor type (wick.DoubleTensor or 'torch.DoubleTensor')", T) end
  wick.set_default_dtype(dtype)
  if device then
    wick.set_default_device(device)
    device_from_type = true
  elseif device_from_type then
    wick.set_default_device("cpu")
    device_from_type = false
  end
end

--- wick.as_tensor(data[, dtype][, device] or [, {dtype =, device =}]): data as a
--- tensor, without a copy when it already is one of that dtype and device
function wick.as_tensor(data, ...)
  local opts = ...
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then -- a dtype or a device (wick.device(...)) by position
    local a, b = ...
    opts = {}
    for _, v in ipairs({ a, b }) do
      if v ~= nil then
        if type(v) == "string" and core.dtype_info[v] then opts.dtype = v else opts.device = v end
      end
    end
  end
  if wick.is_tensor(data) then
    if opts.dtype == nil and opts.device == nil then return data end
    return data:to({ dtype = opts.dtype or data.dtype, device = opts.device or data.device })
  end
  return wick.tensor(data, opts)
end
wick.asarray = wick.as_tensor

for name, dtype in pairs(LEGACY) do
  wick[name] = legacy_type(name, dtype, nil)
  wick.cuda[name] = legacy_type(name, dtype, "cuda")
end
local default_type = legacy_type("Tensor", nil, nil)
--- t:new(...): the legacy constructor with t's dtype and device (x.new(size), x.new(data), x.new())
function Tensor.new(t, ...)
  check_tensor(t, "new", "self")
  return legacy_new({ dtype = t.dtype, device = t.device }, ...)
end
setmetatable(Tensor, { __call = function(_, ...) return default_type(...) end })

-- Sparse tensors are dense here: PyTorch's names for them work on dense
-- tensors, so a script that builds a sparse adjacency (GCN) runs, in V^2 memory.
-- A dense tensor read as a sparse one has its nonzeros as entries, coalesced.
local SPARSE_OPTIONS = { size = "table", dtype = "dtype", device = "device", requires_grad = "boolean",
  check_invariants = "boolean", is_coalesced = "boolean" }
-- the entries a sparse_coo_tensor was built from, by the dense tensor it gives (weak keys)
local coo_parts = setmetatable({}, { __mode = "k" })
--- wick.sparse_coo_tensor(indices, values[, size][, opts]): the dense tensor with
--- values added at indices (int64 [ndim, nnz], 1-based), duplicates summed; its
--- _indices() and _values() are the entries as given (PyTorch's uncoalesced tensor)
function wick.sparse_coo_tensor(indices, values, size, opts)
  if type(size) == "table" and size[1] == nil and getmetatable(size) == nil and opts == nil then size, opts = nil, size end
  opts = check.options(opts, "sparse_coo_tensor", SPARSE_OPTIONS)
  if opts.size ~= nil then
    if size ~= nil then core.error("sparse_coo_tensor: size given twice (positional and size =)") end
    size = opts.size
  end
  if type(indices) == "table" and not wick.is_tensor(indices) then indices = wick.tensor(indices, { dtype = "int64" }) end
  check_tensor(indices, "sparse_coo_tensor", "indices")
  if not wick.is_tensor(values) then values = wick.tensor(values, { dtype = opts.dtype }) end
  if indices:dim() ~= 2 then
    core.error(("sparse_coo_tensor: indices must be 2-D [ndim, nnz], got %d-D"):format(indices:dim()))
  end
  if size == nil then
    size = {}
    for d = 1, indices:size(1) do size[d] = indices:size(2) > 0 and indices[d]:max():item() or 0 end
  end
  local o = { dtype = opts.dtype or values.dtype, device = opts.device or values.device }
  local dense = wick.zeros(size, o)
  local keys = {}
  for d = 1, indices:size(1) do keys[d] = indices[d]:to(o.device) end
  dense:index_put_(keys, values:to(o.device, o.dtype), true)
  if opts.requires_grad then dense:requires_grad_(true) end -- (a leaf, as PyTorch's)
  coo_parts[dense] = { indices = indices:to(o.device), values = values:to(o.device, o.dtype),
    coalesced = opts.is_coalesced }
  return dense
end
function Tensor.to_dense(t) return check_tensor(t, "to_dense", "self") end
function Tensor.to_sparse(t) return check_tensor(t, "to_sparse", "self") end
function Tensor.to_sparse_coo(t) return check_tensor(t, "to_sparse_coo", "self") end
function Tensor.to_sparse_csr(t) return check_tensor(t, "to_sparse_csr", "self") end
--- wick.sparse_csr_tensor(crow_indices, col_indices, values[, size][, opts]) (or all by name, PyG's
--- to_torch_csr_tensor): PyTorch's compressed rows, built dense as sparse_coo_tensor is: row i's entries
--- are values[crow[i] + 1 .. crow[i + 1]] (crow_indices PyTorch's offsets, from 0 to nnz) at the columns
--- col_indices (1-based)
function wick.sparse_csr_tensor(...)
  local crow, col, values, size, opts = check.required("sparse_csr_tensor",
    { "crow_indices", "col_indices", "values", "size?" }, ...)
  if type(crow) == "table" and not wick.is_tensor(crow) then crow = wick.tensor(crow, { dtype = "int64" }) end
  if type(col) == "table" and not wick.is_tensor(col) then col = wick.tensor(col, { dtype = "int64" }) end
  check_tensor(crow, "sparse_csr_tensor", "crow_indices")
  check_tensor(col, "sparse_csr_tensor", "col_indices")
  if crow:dim() ~= 1 or crow:numel() < 1 or col:dim() ~= 1 then
    check.fail("sparse_csr_tensor", "expected 1-D crow_indices of nrows + 1 offsets and 1-D col_indices, got %s and %s",
      tostring(crow.shape), tostring(col.shape))
  end
  local counts = crow:narrow(1, 2, crow:numel() - 1) - crow:narrow(1, 1, crow:numel() - 1)
  if crow[1]:item() ~= 0 or (counts:numel() > 0 and counts:min():item() < 0) or crow[-1]:item() ~= col:numel() then
    check.fail("sparse_csr_tensor", "crow_indices must rise from 0 to the number of entries (%d)", col:numel())
  end
  local rows = wick.arange(1, counts:numel() + 1, { dtype = "int64", device = crow.device }):repeat_interleave(counts)
  if size == nil then size = { counts:numel(), col:numel() > 0 and col:max():item() or 0 } end
  return wick.sparse_coo_tensor(wick.stack({ rows, col:to("int64") }), values, size, opts)
end
--- t:coalesce(): of a sparse_coo_tensor, the same tensor whose entries are its distinct
--- positions, sorted, the values at a repeated one summed (explicit zeros stay entries)
function Tensor.coalesce(t)
  local parts = coo_parts[check_tensor(t, "coalesce", "self")]
  if not parts or parts.coalesced then return t end
  local idx, n = parts.indices, parts.indices:size(2)
  local linear = wick.zeros({ n }, { dtype = "int64", device = idx.device })
  for d = 1, idx:size(1) do linear = linear * t:size(d) + (idx[d] - 1) end
  local distinct, inverse = linear:unique({ return_inverse = true })
  local vshape = parts.values:size()
  vshape[1] = distinct:numel()
  local values = wick.zeros(vshape, { dtype = parts.values.dtype, device = parts.values.device })
    :index_add(1, inverse, parts.values)
  local rows, rest = {}, distinct
  for d = idx:size(1), 1, -1 do
    rows[d] = rest % t:size(d) + 1
    rest = rest:div(t:size(d), { rounding_mode = "floor" })
  end
  local c = t:view(t:size())
  coo_parts[c] = { indices = wick.stack(rows), values = values, coalesced = true }
  return c
end
-- t:indices() and t:values() are methods; read as fields of a tensor that is no named result (see
-- name_results) they are an error that says what to write.
local function sparse_reader(name, fn)
  local function misread()
    core.error(("tensor has no field '%s' (the first tensor of t:max(dim), min, sort, topk, kthvalue, median, mode, "
      .. "cummax and cummin has .values and .indices, as PyTorch's named tuples, or local values, indices = "
      .. "t:max(dim); t:%s() reads a tensor as a sparse one)"):format(name, name))
  end
  local mt = { __call = function(_, t, ...) return fn(check_tensor(t, name, "self"), ...) end, __index = misread,
    __newindex = misread, __tostring = misread, __len = misread, __concat = misread, __unm = misread }
  for _, op in ipairs({ "__add", "__sub", "__mul", "__div", "__mod", "__pow", "__lt", "__le" }) do mt[op] = misread end
  return setmetatable({}, mt)
end
--- t:indices(): the positions of t's nonzeros as [ndim, nnz] int64 (1-based), row-major; of a
--- sparse_coo_tensor, its coalesced entries (explicit zeros too, as PyTorch's)
Tensor.indices = sparse_reader("indices", function(t)
  if coo_parts[t] then return t:coalesce():_indices() end
  return t:nonzero():t():contiguous()
end)
--- t:values(): t's nonzeros, in the order of t:indices()
Tensor.values = sparse_reader("values", function(t)
  if coo_parts[t] then return t:coalesce():_values() end
  return t:masked_select(t:ne(0))
end)
--- t:_indices() / t:_values(): of a sparse_coo_tensor, the entries it was built from
--- (PyTorch's uncoalesced ones: duplicates and explicit zeros kept); else as indices()/values()
function Tensor._indices(t)
  local parts = coo_parts[check_tensor(t, "_indices", "self")]
  return parts and parts.indices or Tensor.indices(t)
end
function Tensor._values(t)
  local parts = coo_parts[check_tensor(t, "_values", "self")]
  return parts and parts.values or Tensor.values(t)
end
function Tensor._nnz(t)
  local parts = coo_parts[check_tensor(t, "_nnz", "self")]
  return parts and parts.indices:size(2) or t:count_nonzero():item()
end
function Tensor.is_coalesced(t)
  local parts = coo_parts[check_tensor(t, "is_coalesced", "self")]
  return not parts or parts.coalesced == true
end
function Tensor.sparse_dim(t) return check_tensor(t, "sparse_dim", "self"):dim() end
function Tensor.dense_dim(t) check_tensor(t, "dense_dim", "self") return 0 end
fields.is_sparse = function() return false end
fields.layout = function() return "strided" end
wick.strided, wick.sparse_coo = "strided", "sparse_coo"
function wick.spmm(a, b) return check_tensor(a, "spmm", "input"):mm(b) end
wick.sparse = { mm = function(a, b) return check_tensor(a, "sparse.mm", "mat1"):matmul(b) end,
  sum = function(t, dim) return dim == nil and t:sum() or t:sum(dim) end,
  addmm = function(input, a, b, opts) return wick.addmm(input, a, b, opts) end,
  softmax = function(t, dim, opts) return wick.softmax(t, dim, opts) end,
  log_softmax = function(t, dim, opts) return wick.log_softmax(t, dim, opts) end }
-- torch.sparse.FloatTensor(indices, values, size) and its kin (pygcn's spelling): the values'
-- dtype when they are a tensor, as PyTorch's (pytorch3d's cot_laplacian builds a float64 one
-- with FloatTensor), else the name's; FloatTensor(n, m): zeros of that size
for name, dtype in pairs({ FloatTensor = "float32", DoubleTensor = "float64", LongTensor = "int64",
  IntTensor = "int32", HalfTensor = "float16", BFloat16Tensor = "bfloat16", ByteTensor = "uint8", BoolTensor = "bool" }) do
  wick.sparse[name] = function(indices, ...)
    if type(indices) == "number" then return wick.zeros(indices, ...):to(dtype) end
    local values, size = ...
    return wick.sparse_coo_tensor(indices, values, size, { dtype = not wick.is_tensor(values) and dtype or nil })
  end
end
wick.sparse.torch = wick -- (torch.sparse.torch is torch itself: capsule-networks' torch.sparse.torch.eye)
check.strict(wick.sparse, "wick.sparse")

--- t:iter(): `for row in t:iter()`, Python's `for row in t`: the slices along dim 1
function Tensor.iter(t)
  check_tensor(t, "iter", "self")
  if t:dim() == 0 then core.error("iteration over a 0-d tensor") end
  local i, n = 0, t:size(1)
  return function()
    if i >= n then return nil end
    i = i + 1
    return t[i]
  end
end

--- wick.enumerate(loader[, start = 0]): `for i, x, y in wick.enumerate(loader)`, the
--- count first as Python's enumerate gives it (from 0 unless start says); also a
--- tensor's slices along dim 1 and an array's items
-- the function giving an iterable's items one by one (nil at the end), for fn's messages
local function items_of(iterable, fn)
  local next_item
  -- an OrderedDict (inspect.signature(f).parameters, a state dict): its keys, as Python's for over a dict
  if require("wick.ordered").is(iterable) then iterable = iterable:keys() end
  if type(iterable) == "function" then next_item = iterable
  elseif wick.is_tensor(iterable) then next_item = iterable:iter()
  elseif type(iterable) == "table" and type(iterable.iter) == "function" then
    local f, state, at = iterable:iter()
    next_item = f
    -- a container's entries (list:iter() gives each with its index after it, for Lua's for):
    -- the entries alone, as Python's iteration of a ModuleList (DAC's zip(x_bands, self.band_convs))
    if check.is_module(iterable) then next_item = function() return (f()) end end
    if state ~= nil then -- a generic-for triple (a ModuleList's ipairs): its values, as Python's for
      next_item = function()
        local k, v = f(state, at)
        at = k
        return v
      end
    end
  elseif type(iterable) == "table" and check.is_module(iterable) and type(iterable.keys) == "function" then
    next_item = items_of(iterable:keys(), fn) -- a ModuleDict: its keys, as Python's for over a dict
  elseif type(iterable) == "table" and getmetatable(iterable) == nil and rawget(iterable, 1) == nil
    and next(iterable) ~= nil then
    -- a plain table of names: its keys, as Python's for over a dict (HF's for key in model_kwargs),
    -- sorted, since a Lua table keeps no order
    local keys = {}
    for key in pairs(iterable) do keys[#keys + 1] = key end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local k = 0
    next_item = function() k = k + 1 return keys[k] end
  elseif type(iterable) == "table" and not check.is_module(iterable) then
    -- an array: a plain one, or one with methods (m:modules(), m:children(), a Size)
    local k = 0
    next_item = function() k = k + 1 return rawget(iterable, k) end
  else
    check.expected(fn, "iterable", "a loader, a sampler, a tensor, an array or an iterator function", iterable)
  end
  return next_item
end
function wick.enumerate(iterable, start)
  if type(start) == "table" and getmetatable(start) == nil then -- Python's enumerate(x, start=1)
    start = check.options(start, "enumerate", { start = "number" }).start
  end
  if start ~= nil then check.number(start, "enumerate", "start") end
  local next_item = items_of(iterable, "enumerate")
  local i = (start or 0) - 1
  local function step(first, ...)
    if first == nil then return nil end
    i = i + 1
    return i, first, ...
  end
  return function() return step(next_item()) end
end

--- wick.list(iterable): Python's list(): an array of an iterator's values (list(sd.keys())), a dict's
--- keys (a state dict, a ModuleDict), a tensor's slices along dim 1, an array's items (a copy); an
--- iterator of several values gives arrays of them, Python's tuples (list(zip(a, b)),
--- list(m:named_parameters()): {{"weight", w}, {"bias", b}})
local function take(out, first, ...)
  if first == nil then return false end
  out[#out + 1] = select("#", ...) > 0 and { first, ... } or first
  return true
end
local function collect(iterable, fn)
  local out = {}
  local next_item = items_of(iterable, fn)
  while take(out, next_item()) do end
  return out
end
function wick.list(iterable) return collect(iterable, "list") end
--- wick.reversed(x): Python's reversed(): an iterator of x's items (as wick.list gives them) from the
--- last (DPT's hidden_states[::-1] of a plain list is wick.list(wick.reversed(hidden_states)))
function wick.reversed(iterable)
  local items = collect(iterable, "reversed")
  local k = #items + 1
  return function()
    k = k - 1
    return items[k]
  end
end

--- wick.iter(x): Python's iter(): an iterator function over x's items (as wick.list gives them: a loader's
--- batches, a tensor's slices, an array's items); wick.next(it[, default]): Python's next(): its next item,
--- or `default` when it is done, else PyTorch's StopIteration error (makemore's InfiniteDataLoader)
function wick.iter(iterable) return items_of(iterable, "iter") end
function wick.next(it, ...)
  check.callable(it, "next", "iterator")
  local r = pack(it())
  if r[1] ~= nil then return unpack(r, 1, r.n) end
  if select("#", ...) > 0 then return (...) end
  check.fail("next", "StopIteration: the iterator is done (Python's next(it, default) is wick.next(it, default))")
end

--- wick.product(a, b, ...[, {["repeat"] = 1}]): itertools.product: every combination of one item of each, the
--- last iterable varying fastest, over what wick.list takes (arrays, tensors' slices, iterators; YOLACT's
--- `for j, i in product(range(conv_h), range(conv_w))`); several values per step, one a table
function wick.product(...)
  local n = select("#", ...)
  local last, times = select(n > 0 and n or 1, ...), 1
  if n > 0 and type(last) == "table" and getmetatable(last) == nil and #last == 0 and next(last) ~= nil then
    times = check.options(last, "product", { ["repeat"] = "integer" })["repeat"] or 1
    if times < 0 then check.fail("product", "repeat argument cannot be negative") end
    n = n - 1
  end
  if times * n > 2 ^ 20 then check.fail("product", "repeat = %d makes %d places, more than 2^20", times, times * n) end
  local once, lists = {}, {}
  for i = 1, n do once[i] = collect((select(i, ...)), "product") end
  for _ = 1, times do
    for i = 1, n do lists[#lists + 1] = once[i] end
  end
  local k, at, done = #lists, {}, false
  for i = 1, k do
    at[i] = 1
    if #lists[i] == 0 then done = true end
  end
  local started = false
  return function()
    if done then return nil end
    if started then -- (the odometer: the last place turns first)
      local i = k
      while i >= 1 do
        at[i] = at[i] + 1
        if at[i] <= #lists[i] then break end
        at[i] = 1
        i = i - 1
      end
      if i < 1 then done = true; return nil end
    end
    started = true
    if k == 0 then done = true; return {} end -- (Python's product() gives one empty tuple)
    local items = {}
    for i = 1, k do items[i] = lists[i][at[i]] end
    if k == 1 then return items end
    return unpack(items, 1, k)
  end
end

--- wick.zip_longest(a, b, ...[, {fillvalue =}]): itertools.zip_longest: the i-th items of each until the
--- longest ends, the shorter ones' missing items `fillvalue` (false by default: Python's None, as a nil
--- would end Lua's for loop; MEGABYTE's zip_longest over stages of unequal lists)
function wick.zip_longest(...)
  local n = select("#", ...)
  local last, fill = select(n > 0 and n or 1, ...), false
  if n > 0 and type(last) == "table" and getmetatable(last) == nil and #last == 0 and next(last) ~= nil then
    fill = check.options(last, "zip_longest", { fillvalue = "any" }).fillvalue
    if fill == nil then fill = false end
    n = n - 1
  end
  local lists, longest = {}, 0
  for i = 1, n do
    lists[i] = collect((select(i, ...)), "zip_longest")
    longest = math.max(longest, #lists[i])
  end
  local k = 0
  return function()
    k = k + 1
    if k > longest then return nil end
    local items = {}
    for i = 1, n do
      local v = lists[i][k]
      if v == nil then v = fill end
      items[i] = v
    end
    if n == 1 then return items end
    return unpack(items, 1, n)
  end
end

-- Python's order of two sort keys: numbers (one-element tensors as theirs), strings, booleans (false
-- first), and arrays element by element (Python's tuples); another pair is Python's TypeError
local function py_compare(a, b, fn)
  if rawequal(a, b) then return 0 end
  if getmetatable(a) == mt and a:numel() == 1 then a = a:item() end
  if getmetatable(b) == mt and b:numel() == 1 then b = b:item() end
  local ta, tb = type(a), type(b)
  if ta == "boolean" and tb == "boolean" then a, b, ta, tb = a and 1 or 0, b and 1 or 0, "number", "number" end
  if ta == "table" and tb == "table" and getmetatable(a) == nil and getmetatable(b) == nil then
    for i = 1, math.min(#a, #b) do
      local c = py_compare(a[i], b[i], fn)
      if c ~= 0 then return c end
    end
    return #a < #b and -1 or #a > #b and 1 or 0
  end
  if ta ~= tb or (ta ~= "number" and ta ~= "string") then
    check.fail(fn, "'<' not supported between a %s and a %s (Python's TypeError)", ta, tb)
  end
  return a < b and -1 or b < a and 1 or 0
end

--- wick.sorted(iterable[, {key =, reverse = false}]): Python's sorted(): a new array of the items (as
--- wick.list gives them), stable (equal keys keep their order, reversed too), in Python's order of
--- numbers, strings, booleans and arrays (tuples, element by element); `key` a function of an item
--- (GOT-OCR2's sorted(target_ratios, key=lambda x: x[0] * x[1]), whose ties Lua's table.sort reorders)
function wick.sorted(iterable, opts)
  local o = check.options(opts, "sorted", { key = "function", reverse = "boolean" })
  local items, keyed = collect(iterable, "sorted"), {}
  for i, v in ipairs(items) do
    local k = v
    if o.key then k = o.key(v) end
    keyed[i] = { k = k, i = i, v = v }
  end
  local sign = o.reverse and -1 or 1
  table.sort(keyed, function(a, b)
    local c = py_compare(a.k, b.k, "sorted") * sign
    if c ~= 0 then return c < 0 end
    return a.i < b.i
  end)
  for i, e in ipairs(keyed) do items[i] = e.v end
  return check.list(items)
end

--- wick.groupby(iterable[, key]): itertools.groupby: for each run of consecutive items with equal keys
--- (`key` a function of an item, the item itself without it), the key and an array of the run
--- (Python's group iterator: `for k, group in wick.groupby(xs, f) do`; PaddleOCR-VL's get_rope_index)
function wick.groupby(iterable, key)
  if type(key) == "table" and getmetatable(key) == nil then key = check.options(key, "groupby", { key = "function" }).key end
  if key ~= nil then check.callable(key, "groupby", "key") end
  local items, k = collect(iterable, "groupby"), 1
  local function key_of(v)
    if key then return key(v) end
    return v
  end
  return function()
    if k > #items then return nil end
    local run_key = key_of(items[k])
    local group = {}
    while k <= #items do
      if py_compare(key_of(items[k]), run_key, "groupby") ~= 0 then break end
      group[#group + 1] = items[k]
      k = k + 1
    end
    return run_key, check.list(group)
  end
end

--- wick.zip(a, b, ...): Python's zip: `for t, box, logit in wick.zip(targets, boxes, logits)`, the
--- i-th items of each (as wick.list gives them: an array's items, a tensor's slices, an iterator's
--- values) until the shortest ends (SSD's compute_loss); of one iterable, 1-element arrays, Python's 1-tuples
function wick.zip(...)
  local lists, n = {}, math.huge
  for i = 1, select("#", ...) do
    lists[i] = collect((select(i, ...)), "zip")
    n = math.min(n, #lists[i])
  end
  if #lists == 0 then n = 0 end
  local k = 0
  return function()
    k = k + 1
    if k > n then return nil end
    local items = {}
    for i = 1, #lists do items[i] = lists[i][k] end
    if #lists == 1 then return items end -- (Python's 1-tuples: HF's zip(*chunks) of one input)
    return unpack(items, 1, #lists)
  end
end

-- Linear algebra's tensor methods and torch.* names, from wick.linalg (which loads on first use).
for _, name in ipairs({ "inverse", "det", "slogdet", "logdet", "pinverse", "cholesky", "qr", "svd", "cholesky_solve",
  "cholesky_inverse", "triangular_solve", "lu", "lu_solve", "lu_unpack", "matrix_exp", "svd_lowrank",
  "pca_lowrank", "geqrf", "orgqr", "matrix_power" }) do
  Tensor[name] = function(...)
    local input = ...
    -- torch.slogdet(input=A): a keywords table of the input alone (wick.det{input = A})
    if select("#", ...) == 1 and type(input) == "table" and getmetatable(input) == nil and next(input) == "input"
      and next(input, "input") == nil then
      return require("wick.linalg")._methods[name](input.input)
    end
    return require("wick.linalg")._methods[name](...)
  end
  wick[name] = Tensor[name]
end
wick.matrix_power = with_out("matrix_power", wick.matrix_power)

--- wick.OrderedDict([items]): Python's collections.OrderedDict (lua/wick/ordered.lua), what
--- state_dict returns; FeaturePyramidNetwork's input
function wick.OrderedDict(items) return require("wick.ordered").OrderedDict(items) end

--- wick.poisson(rates): torch.poisson, from wick.distributions (which loads on first use)
function wick.poisson(rates) return require("wick.distributions")._poisson(rates) end
--- wick._standard_gamma(alpha): torch._standard_gamma, Gamma(alpha, 1) draws (what Gamma:rsample draws)
function wick._standard_gamma(...) return require("wick.distributions")._standard_gamma(...) end
--- wick._sample_dirichlet(concentration): torch._sample_dirichlet, a Dirichlet draw over the last dim (what
--- Dirichlet:rsample draws; torchvision's RandomMixup lambda)
function wick._sample_dirichlet(...) return require("wick.distributions")._sample_dirichlet(...) end
--- wick.binomial(count, prob): torch.binomial, from wick.distributions
function wick.binomial(count, prob) return require("wick.distributions")._binomial(count, prob) end

-- wick.nn, wick.optim and wick.data load on first use (they require wick themselves).
local lazy = { nn = "wick.nn", optim = "wick.optim", data = "wick.data", amp = "wick.amp",
  distributed = "wick.distributed", profiler = "wick.profiler", autograd = "wick.autograd",
  distributions = "wick.distributions", linalg = "wick.linalg", func = "wick.func", einops = "wick.einops", einx = "wick.einx", scipy = "wick.scipy",
  utils = "wick.utils", vision = "wick.vision", Object = "wick.object", fx = "wick.fx", testing = "wick.testing",
  library = "wick.library", masked = "wick.masked", audio = "wick.audio" }
-- torch.inf, torch.nan, torch.pi, torch.e
wick.inf, wick.nan, wick.pi, wick.e = math.huge, 0 / 0, math.pi, math.exp(1)
--- wick.newaxis: Python's None in an index key, a new dim of size 1 there
--- (x[:, None] is x[{{}, wick.newaxis}]); a Lua table cannot hold nil
wick.newaxis = core.newaxis
--- wick.slice([start, ]stop[, step]): Python's slice in a key, 0-based with stop excluded and
--- both ends clamped (x[:, -n:] is x[{{}, wick.slice(-n, nil)}], also when n exceeds the size)
wick.slice = core.slice

--- wick.deepcopy(v): Python's copy.deepcopy for wick's values: tensors cloned
--- (detached, requires_grad kept), modules and plain tables copied with their
--- classes, sharing kept (tied weights stay tied); functions and other
--- objects shared.
-- fn(original, copy, memo) for every module wick.deepcopy copies: the
-- per-module registries of wick.nn (pruning, weight and spectral norm) carry
-- their records over to the copy (nn/common.lua's hook_registry)
wick._deepcopy_copiers = {}
local PENDING = {} -- (memo[PENDING]: the modules copied, {original, copy}, in order)
local function deep_copy(v, memo)
  if wick.is_tensor(v) then
    if memo[v] == nil then
      local c = wick.no_grad(function() return v:detach():clone() end)
      -- (a leaf that requires grad stays one; an activation, a result in a graph, is copied as its
      -- values: RAFT's cached corr_pyramid, which PyTorch's deepcopy refuses, makes no parameter)
      if v.requires_grad and v.is_leaf then c:requires_grad_(true) end
      memo[v] = c
    end
    return memo[v]
  end
  local mt = type(v) == "table" and getmetatable(v)
  if mt and rawget(mt, "__deepcopy") then -- (an object that knows how: a state dict keeps its order)
    if memo[v] == nil then memo[v] = mt.__deepcopy(v, function(x) return deep_copy(x, memo) end) end
    return memo[v]
  end
  -- (an instance of a wick.Object class is copied as a module is, Python's deepcopy of an object: DARTS'
  -- v_net = copy.deepcopy(net) with a helper object; another object, a class, a device, stays itself)
  local Object = package.loaded["wick.object"]
  local instance = mt and Object and rawget(v, "super") == nil and rawget(mt, "super") ~= nil and wick.issubclass(mt, Object)
  if type(v) ~= "table" or (mt and not check.is_module(v) and not instance) then return v end
  if memo[v] == nil then
    local c = {}
    memo[v] = c
    for key, item in pairs(v) do rawset(c, deep_copy(key, memo), deep_copy(item, memo)) end
    setmetatable(c, getmetatable(v))
    if check.is_module(v) then -- (its hooks and records: once all is copied, below)
      local pending = memo[PENDING]
      pending[#pending + 1] = { v, c }
    end
  end
  return memo[v]
end
-- The copiers of the modules copied (a hook's closure rebound to the copies of what it holds) run
-- once everything is in the memo: a hook on a child whose owner is copied later (BYOL's NetWrapper
-- holding the net it hooks, copied in pairs() order) reaches the owner's copy too, as Python's
-- deepcopy of the bound method's __self__ does.
function wick.deepcopy(v)
  local memo = { [PENDING] = {} }
  local c = deep_copy(v, memo)
  for _, p in ipairs(memo[PENDING]) do
    for _, f in ipairs(wick._deepcopy_copiers) do f(p[1], p[2], memo) end
  end
  return c
end

--- wick.copy(v): Python's copy.copy, a shallow copy: a tensor is a new tensor object on the same
--- data (detached, requires_grad kept: PyTorch's copy.copy of a tensor shares its storage); a plain
--- table, a module or a wick.Object instance a new table with the same fields and class (HF's
--- mit_config = copy.copy(vision_config)), a module's own lists of children and hooks copied one
--- level so that a field set on the copy stays the copy's; an OrderedDict keeps its order; anything
--- else (numbers, strings, functions, classes, devices) is itself.
function wick.copy(v)
  if wick.is_tensor(v) then
    local c = v:detach()
    if v.requires_grad then c:requires_grad_(true) end
    return c
  end
  if require("wick.ordered").is(v) then return v:copy() end
  local mt = type(v) == "table" and getmetatable(v)
  local Object = package.loaded["wick.object"]
  local instance = mt and Object and rawget(v, "super") == nil and rawget(mt, "super") ~= nil and wick.issubclass(mt, Object)
  if type(v) ~= "table" or (mt and not check.is_module(v) and not instance) then return v end
  local c = {}
  for key, item in pairs(v) do
    if check.is_module(v) and type(key) == "string" and key:sub(1, 1) == "_" and type(item) == "table" and getmetatable(item) == nil then
      item = { unpack(item) } -- (the module's bookkeeping arrays: _fields, the hook lists)
      for k2, x in pairs(v[key]) do if type(k2) ~= "number" then item[k2] = x end end
    end
    rawset(c, key, item)
  end
  return setmetatable(c, mt or nil)
end

--- wick.hasattr(obj, name): Python's hasattr, whether obj.name reads without an error and
--- is not nil: of a module, a tensor, a table, or wick's own tables, whose missing names are
--- errors and some names made on first use (hasattr(torch, "_foreach_mul_"),
--- hasattr(F, "scaled_dot_product_attention"))
function wick.hasattr(obj, name)
  if obj == nil then return false end
  local ok, v = pcall(function() return obj[name] end)
  return ok and v ~= nil
end

--- wick.getattr(obj, name[, default]) and wick.setattr(obj, name, value): Python's
--- getattr and setattr (s4's setattr(getattr(self, name), "_optim", optim)): obj.name, or
--- default when it is missing or nil (an error without a default); obj.name = value
function wick.getattr(obj, name, ...)
  check.string(name, "getattr", "name")
  local ok, v = true, nil
  if obj ~= nil then ok, v = pcall(function() return obj[name] end) end
  if ok and v ~= nil then return v end
  if select("#", ...) > 0 then return (...) end
  if not ok then core.error((tostring(v):gsub("^[^:]*:%d+: ", ""))) end
  check.fail("getattr", "%s has no attribute '%s'", check.describe(obj), tostring(name))
end
function wick.setattr(obj, name, value)
  check.string(name, "setattr", "name")
  if type(obj) ~= "table" and type(obj) ~= "userdata" then
    check.fail("setattr", "cannot set attribute '%s' of %s", tostring(name), check.describe(obj))
  end
  obj[name] = value
end

function wick.save(value, path, opts) return require("wick.serialize").save(value, path, opts) end
function wick.load(path, opts) return require("wick.serialize").load(path, opts) end
function wick.save_safetensors(tbl, path) return require("wick.serialize").save_safetensors(tbl, path) end
-- PyTorch's named tuples: the first tensor of t:max(dim) (min, sort, topk, kthvalue, median,
-- nanmedian, mode, cummax, cummin) answers .values and .indices with the result's two tensors
-- (RetNet's kv.max(dim=-1, keepdim=True).values, torch.topk(x, k).indices), and linalg's
-- results their fields (Glow's torch.linalg.slogdet(W).logabsdet: wick.linalg); a field named
-- like a tensor method (slogdet's sign) stays the method
local function name_results(f, names)
  return function(...)
    local r = pack(f(...)) -- (one result, or several)
    if r.n > 1 and getmetatable(r[1]) == mt then
      -- (the first tensor as `true`: a value holding its weak key would keep it alive in LuaJIT)
      local fields = { [names[1]] = true }
      for i = 2, #names do
        -- (a nil result is PyTorch's None there: unpack_dual(t).tangent of a t with no tangent)
        if r[i] == nil then fields[names[i]] = NAMED_NIL else fields[names[i]] = r[i] end
      end
      named[r[1]] = fields
    end
    return unpack(r, 1, r.n)
  end
end
wick._name_results = name_results
for _, name in ipairs({ "max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin", "frexp" }) do
  for _, owner in ipairs({ Tensor, wick }) do
    local f = rawget(owner, name)
    if f ~= nil then owner[name] = name_results(f, name == "frexp" and { "mantissa", "exponent" } or { "values", "indices" }) end
  end
end
-- torch.histogram(x).hist / .bin_edges, histogramdd's too (its bin_edges a list of tensors); aminmax's
-- .min and .max would hide the tensor methods of those names: `local mn, mx = wick.aminmax(x)`
for name, fields in pairs({ histogram = { "hist", "bin_edges" }, histogramdd = { "hist", "bin_edges" } }) do
  for _, owner in ipairs({ Tensor, wick }) do
    local f = rawget(owner, name)
    if f ~= nil then owner[name] = name_results(f, fields) end
  end
end

setmetatable(wick, {
  __index = function(t, k)
    local module = lazy[k]
    if module then
      local value = require(module)
      rawset(t, k, value)
      return value
    end
    -- torch._foreach_<op>(list, ...): op over each tensor of the list (other
    -- arguments a list of the same length, taken element by element, or one
    -- value for all); in-place forms (ending in _) return nothing, as PyTorch's
    local op = type(k) == "string" and k:match("^_foreach_([%w_]+)$")
    if op and Tensor[op] then
      local fn = function(list, ...)
        -- _foreach_pow(scalar, list): the number to each tensor's power (PyTorch's Adam: beta1 ^ steps)
        if op == "pow" and type(list) == "number" then
          local base, exps, out = list, ..., {}
          check.table(exps, k, "exponent")
          for i = 1, #exps do out[i] = wick.pow(base, exps[i]) end
          return out
        end
        check.table(list, k, "self")
        local n, args, out, nargs = #list, { ... }, {}, select("#", ...)
        -- addcdiv/addcmul's scalars as a 1-D tensor, one value per tensor of the list
        local last = args[nargs]
        if op:match("^addc") and nargs == 3 and wick.is_tensor(last) and last:dim() == 1 and last:numel() == n then
          args[nargs] = last:tolist()
        end
        -- the scalar by PyTorch's keyword (timm's _foreach_mul_(values, scalar=decay))
        local last = args[nargs]
        if type(last) == "table" and getmetatable(last) == nil and #last == 0 then
          for _, key in ipairs({ "scalar", "scalars", "exponent" }) do
            if last[key] ~= nil then
              local rest = {}
              for kk, vv in pairs(last) do if kk ~= key then rest[kk] = vv end end
              if next(rest) == nil then args[nargs], nargs = nil, nargs - 1 else args[nargs] = rest end
              table.insert(args, 1, last[key])
              nargs = nargs + 1
              break
            end
          end
        end
        -- a list argument (a plain table or model:parameters()' list: V-JEPA's
        -- _foreach_add_(target_params, params, alpha=) EMA) is taken element by element
        local listed = {}
        for j = 1, nargs do
          local a = args[j]
          if check.is_array(a) and #a > 0 then
            if #a ~= n then
              check.fail(k, "expected lists of the same length: the first has %d tensors, argument %d has %d", n, j + 1, #a)
            end
            listed[j] = true
          end
        end
        for i = 1, n do
          local these = {}
          for j = 1, nargs do these[j] = listed[j] and args[j][i] or args[j] end
          out[i] = Tensor[op](list[i], unpack(these, 1, nargs))
        end
        if op:sub(-1) ~= "_" then return out end
      end
      rawset(t, k, fn)
      return fn
    end
    -- a name wick does not have is an error at the caller's line (as wick.nn's),
    -- not a nil called further on
    if type(k) == "string" and (k:sub(1, 1) ~= "_" or k:match("^_foreach_")) then
      local hint = ({
        multiprocessing = "one process per Lua state: several processes are wick.distributed's, started by mpirun",
        None = "Python's None: in an index, x[:, None], it is wick.newaxis; elsewhere nil, or false in a list",
      })[k]
      error(("wick has no '%s' (%s)"):format(k, hint or "not in this version of wick: see docs/api.md"), 2)
    end
  end,
})

return wick
