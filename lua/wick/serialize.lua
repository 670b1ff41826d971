-- wick.save / wick.load, first version: a value tree of tables, numbers,
-- strings, booleans and tensors, each tensor with its dtype, shape and the
-- device it was saved from. Loading only parses (it never runs code from the
-- file) and checks every length against the bytes present. Writing goes to a
-- temporary file renamed over the target, so `path` is never half-written.
-- (Storage sharing between saved views and the documented container format come
-- with the checkpoint issue.)
local wick = require("wick")

local MAGIC = "WICK-TREE 1\n"
local serialize = {}

local function is_module(v) return type(v) == "table" and rawget(v, "_fields") ~= nil end

local function encode(value, out, seen)
  local t = type(value)
  if wick.is_tensor(value) then
    local cpu = value:detach():to("cpu")
    local bytes = cpu:_bytes()
    local dims = {}
    for i = 1, cpu:dim() do dims[i] = ("%d"):format(cpu:size(i)) end
    out[#out + 1] = ("T%s,%s,%d%s%s,%d:"):format(value.dtype, tostring(value.device), cpu:dim(),
      #dims > 0 and "," or "", table.concat(dims, ","), #bytes)
    out[#out + 1] = bytes
  elseif t == "number" then
    out[#out + 1] = "n" .. (value ~= value and "nan" or value == math.huge and "inf" or value == -math.huge and "-inf"
      or ("%.17g"):format(value)) .. ";"
  elseif t == "string" then
    out[#out + 1] = ("s%d:"):format(#value)
    out[#out + 1] = value
  elseif t == "boolean" then
    out[#out + 1] = value and "b1" or "b0"
  elseif t == "table" then
    if is_module(value) then
      wick.error("wick.save: cannot save a Module object; save model:state_dict() instead")
    end
    if seen[value] then wick.error("wick.save: the table contains itself (a cycle); save a tree") end
    seen[value] = true
    local keys = {}
    for k in pairs(value) do
      if type(k) ~= "string" and type(k) ~= "number" then
        wick.error(("wick.save: table keys must be strings or numbers, got a %s"):format(type(k)))
      end
      keys[#keys + 1] = k
    end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) == "number"
    end)
    out[#out + 1] = ("t%d:"):format(#keys)
    for _, k in ipairs(keys) do
      encode(k, out, seen)
      encode(value[k], out, seen)
    end
    seen[value] = nil
  else
    wick.error(("wick.save: cannot save a %s (tensors, tables, numbers, strings and booleans can be saved)"):format(t))
  end
end

function serialize.save(value, path)
  if type(path) ~= "string" then wick.error("wick.save: expected a file path as argument 2") end
  local out = { MAGIC }
  encode(value, out, {})
  local tmp = ("%s.tmp-%d-%d"):format(path, os.time(), math.random(1, 1e9))
  local f, err = io.open(tmp, "wb")
  if not f then wick.error(("wick.save: cannot write %s: %s"):format(path, err)) end
  local ok, werr = f:write(table.concat(out))
  local closed = f:close()
  if not ok or not closed then
    os.remove(tmp)
    wick.error(("wick.save: writing %s failed: %s"):format(path, tostring(werr)))
  end
  local renamed, rerr = os.rename(tmp, path)
  if not renamed then
    os.remove(tmp)
    wick.error(("wick.save: cannot replace %s: %s"):format(path, tostring(rerr)))
  end
end

-- ---- loading ----

local function cuda_target_check(location)
  local kind, index = location:match("^(%a+):?(%d*)$")
  if kind ~= "cuda" then return end
  if not wick.cuda.is_available() then
    wick.error("Attempting to deserialize object on a CUDA device but wick.cuda.is_available() is false. If you are running on a CPU-only machine, please use wick.load with map_location='cpu' to map your storages to the CPU.")
  end
  local n = wick.cuda.device_count()
  local i = tonumber(index) or 0
  if i >= n then
    wick.error(("Attempting to deserialize object on CUDA device %d but wick.cuda.device_count() is %d. Please use wick.load with map_location to map your storages to an existing device."):format(i, n))
  end
end

-- Where a tensor saved from `location` goes, per map_location.
local function place(cpu, location, map_location)
  local target = location
  if map_location == nil then
    if location ~= "cpu" and location ~= "meta" then cuda_target_check(location) end
  elseif type(map_location) == "function" then
    local r = map_location(cpu:view(-1), location)
    if r == nil then return cpu end
    if not wick.is_tensor(r) or r:numel() ~= cpu:numel() or r.dtype ~= cpu.dtype then
      wick.error("wick.load: map_location must return a tensor of the same size and dtype as the storage it was given, or nil")
    end
    return r:view(cpu.shape)
  elseif type(map_location) == "table" and getmetatable(map_location) ~= wick.Device then
    local renamed = map_location[location]
    if renamed ~= nil then target = tostring(wick.device(renamed)) end
    if target ~= "cpu" and target ~= "meta" then cuda_target_check(target) end
  else
    target = tostring(wick.device(map_location))
  end
  if target == "cpu" then return cpu end
  return cpu:to(target)
end

local function decoder(s, path, map_location)
  local pos = #MAGIC + 1
  local function fail(what)
    wick.error(("wick.load: %s: corrupt or truncated file: %s (at byte %d)"):format(path, what, pos))
  end
  local function read_until(ch)
    local e = s:find(ch, pos, true)
    if not e or e - pos > 4096 then fail("expected '" .. ch .. "'") end
    local text = s:sub(pos, e - 1)
    pos = e + 1
    return text
  end
  local function read_bytes(n)
    if n < 0 or pos + n - 1 > #s then fail(("a length of %d bytes runs past the end of the file"):format(n)) end
    local b = s:sub(pos, pos + n - 1)
    pos = pos + n
    return b
  end
  local function count(text)
    local n = tonumber(text)
    if not n or n ~= math.floor(n) or n < 0 then fail("bad count '" .. tostring(text):sub(1, 20) .. "'") end
    return n
  end
  local depth = 0
  local value
  local function whole()
    local v = value()
    if pos ~= #s + 1 then fail(("%d unexpected bytes after the end of the checkpoint"):format(#s + 1 - pos)) end
    return v
  end
  value = function()
    local tag = s:sub(pos, pos)
    pos = pos + 1
    if tag == "n" then
      local text = read_until(";")
      if text == "nan" then return 0 / 0 elseif text == "inf" then return math.huge elseif text == "-inf" then return -math.huge end
      local n = tonumber(text)
      if not n then fail("bad number") end
      return n
    elseif tag == "s" then
      return read_bytes(count(read_until(":")))
    elseif tag == "b" then
      local b = read_bytes(1)
      if b ~= "0" and b ~= "1" then fail("bad boolean") end
      return b == "1"
    elseif tag == "t" then
      depth = depth + 1
      if depth > 200 then fail("nesting deeper than 200 levels") end
      local n = count(read_until(":"))
      if n > #s then fail("a table claims more entries than the file has bytes") end
      local t = {}
      for _ = 1, n do
        local k = value()
        if type(k) ~= "string" and type(k) ~= "number" then fail("a table key that is not a string or number") end
        t[k] = value()
      end
      depth = depth - 1
      return t
    elseif tag == "T" then
      local fields = {}
      for field in read_until(":"):gmatch("[^,]+") do fields[#fields + 1] = field end
      local dtype, location, ndim = fields[1], fields[2], count(fields[3])
      if ndim > 16 or #fields ~= 4 + ndim then fail("bad tensor header") end
      local ok = pcall(wick.device, location)
      if not ok then fail("bad device '" .. tostring(location) .. "'") end
      local sizes = {}
      for i = 1, ndim do sizes[i] = count(fields[3 + i]) end
      local nbytes = count(fields[4 + ndim])
      local bytes = read_bytes(nbytes)
      local okt, t = pcall(wick._core.from_bytes, bytes, dtype, sizes)
      if not okt then fail(tostring(t):gsub("^.-: ", "")) end
      return place(t, location, map_location)
    end
    fail("unknown value tag '" .. tag .. "'")
  end
  return whole
end

function serialize.load(path, opts)
  if type(path) ~= "string" then wick.error("wick.load: expected a file path") end
  opts = opts or {}
  local f, err = io.open(path, "rb")
  if not f then wick.error(("wick.load: cannot open %s: %s"):format(path, err)) end
  local s = f:read("*a")
  f:close()
  if s:sub(1, #MAGIC) ~= MAGIC then wick.error(("wick.load: %s is not a wick checkpoint (bad magic)"):format(path)) end
  local map = opts.map_location
  if type(map) == "string" then
    local ok = pcall(wick.device, map)
    if not ok then
      wick.error(("wick.load: invalid map_location '%s' (accepted: a device such as 'cpu' or 'cuda:0', a table renaming locations, or a function)"):format(map))
    end
  end
  local value = decoder(s, path, map)()
  return value
end

return serialize
