-- wick.save / wick.load and safetensors files (docs/checkpoint-format.md).
--
-- A wick checkpoint is a valid safetensors container: each storage saved is one
-- entry (a flat byte range), and the value tree (tables, numbers, strings,
-- booleans, tensors as views of storages, each storage's saved device) is JSON in
-- __metadata__["wick"]. Loading only parses: it never runs code from the file,
-- and every length and offset is checked against the file before use. Writing
-- goes to a temporary file renamed over the target.
local wick = require("wick")
local json = require("wick.json")
local check = require("wick.argcheck")
local core = wick._core

local serialize = {}
local FORMAT = "wick-checkpoint-1"

local ST_DTYPE = { float32 = "F32", float64 = "F64", float16 = "F16", bfloat16 = "BF16", int64 = "I64",
  int32 = "I32", uint8 = "U8", bool = "BOOL" }
local WICK_DTYPE = {}
for k, v in pairs(ST_DTYPE) do WICK_DTYPE[v] = k end
local ELEMENT = { float32 = 4, float64 = 8, float16 = 2, bfloat16 = 2, int64 = 8, int32 = 4, uint8 = 1, bool = 1 }

local function is_module(v) return type(v) == "table" and rawget(v, "_fields") ~= nil end

-- 8 bytes, little-endian, for sizes below 2^53.
local function u64(n)
  local b = {}
  for i = 1, 8 do
    b[i] = string.char(n % 256)
    n = math.floor(n / 256)
  end
  return table.concat(b)
end

local function read_u64(s)
  local n = 0
  for i = 8, 1, -1 do n = n * 256 + s:byte(i) end
  return n
end

local function shape_of(t)
  local s = setmetatable({}, json.array)
  for i = 1, t:dim() do s[i] = t:size(i) end
  return s
end

-- ---- writing ----

local function number_text(v)
  if v ~= v then return "nan" elseif v == math.huge then return "inf" elseif v == -math.huge then return "-inf" end
  return ("%.17g"):format(v)
end

-- The tree as JSON-able values; storages are collected (shared ones once).
local function build(value, storages, seen, location_of)
  if wick.is_tensor(value) then
    if value.device.type == "meta" then wick.error("wick.save: a meta tensor has no data to save") end
    local cpu = value:detach()
    local id = core.tensor_storage_key(cpu)
    local entry = storages.by_id[id]
    if not entry then
      local host = cpu.device.type == "cpu" and cpu or cpu:to("cpu")
      local numel = core.storage_numel(host)
      local device = location_of and location_of(value) or tostring(value.device)
      if type(device) ~= "string" or not pcall(wick.device, device) then
        wick.error(("wick.save: the location option gave '%s', not a device"):format(tostring(device)))
      end
      entry = { name = "s" .. (#storages + 1), host = host, nbytes = numel * ELEMENT[value.dtype], numel = numel,
        dtype = value.dtype, device = tostring(wick.device(device)) }
      storages[#storages + 1] = entry
      storages.by_id[id] = entry
    end
    local strides = setmetatable({}, json.array)
    for i = 1, value:dim() do strides[i] = value:stride(i) end
    return { tensor = { storage = entry.name, dtype = value.dtype, shape = shape_of(value), strides = strides,
      offset = value:storage_offset() } }
  end
  local t = type(value)
  if t == "number" then return { number = number_text(value) } end
  if t == "string" then return { string = value } end
  if t == "boolean" then return { boolean = value } end
  if t ~= "table" then
    wick.error(("wick.save: cannot save a %s (tensors, tables, numbers, strings and booleans can be saved)"):format(t))
  end
  if is_module(value) then wick.error("wick.save: cannot save a Module object; save model:state_dict() instead") end
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
  local entries = setmetatable({}, json.array)
  for i, k in ipairs(keys) do
    entries[i] = setmetatable({ build(k, storages, seen, location_of), build(value[k], storages, seen, location_of) }, json.array)
  end
  seen[value] = nil
  return { table = entries }
end

-- The header of a safetensors container for `storages` (8-byte size + JSON),
-- their data following in the order of the sorted array. Entries go largest
-- element size first, and the JSON is padded with spaces, so that every entry
-- starts at an offset aligned to its element size.
local function container_header(storages, metadata)
  table.sort(storages, function(a, b)
    if ELEMENT[a.dtype] ~= ELEMENT[b.dtype] then return ELEMENT[a.dtype] > ELEMENT[b.dtype] end
    return a.name < b.name
  end)
  local header, offset = {}, 0
  for _, s in ipairs(storages) do
    header[s.name] = { dtype = ST_DTYPE[s.dtype], shape = s.shape or setmetatable({ s.numel }, json.array),
      data_offsets = setmetatable({ offset, offset + s.nbytes }, json.array) }
    offset = offset + s.nbytes
  end
  if metadata then header.__metadata__ = metadata end
  local text = json.encode(header)
  text = text .. (" "):rep((8 - (8 + #text) % 8) % 8)
  return u64(#text) .. text
end

-- Writes the container atomically, each storage straight from its memory.
local function write_container(path, storages, metadata, what)
  if type(path) ~= "string" then wick.error(what .. ": expected a file path") end
  local head = container_header(storages, metadata)
  local tensors = {}
  for i, s in ipairs(storages) do tensors[i] = s.host end
  local ok, err = pcall(core.write_storages, path, head, tensors)
  if not ok then wick.error(what .. ": " .. tostring(err):gsub("^[^:]*:%d+: ", "")) end
end

--- wick.save(value, path[, {location = function(tensor) -> device string}]):
--- `location` overrides the device recorded for a tensor's storage (to write, on
--- a machine without a GPU, a checkpoint that says it came from "cuda:1").
function serialize.save(value, path, opts)
  if type(path) ~= "string" then wick.error("wick.save: expected a file path as argument 2") end
  local location_of = check.options(opts, "wick.save", { location = "function" }).location
  local storages = { by_id = {} }
  local tree = build(value, storages, {}, location_of)
  local devices, checksums = {}, {}
  for _, s in ipairs(storages) do
    devices[s.name] = s.device
    checksums[s.name] = ("%08x"):format(core.storage_crc32(s.host, "crc32c"))
  end
  storages.by_id = nil
  local meta = { format = FORMAT, wick = json.encode({ tree = tree, devices = devices, crc32c = checksums }) }
  write_container(path, storages, meta, "wick.save")
end

--- A flat table name -> tensor as a plain safetensors file (contiguous copies).
function serialize.save_safetensors(tbl, path)
  local storages = {}
  for name, t in pairs(tbl) do
    if type(name) ~= "string" or not wick.is_tensor(t) then
      wick.error("wick.save_safetensors: expected a flat table of name -> tensor")
    end
    local host = t:detach():to("cpu")
    -- an entry holds exactly the tensor's elements: a storage of its own
    if not host:is_contiguous() or core.storage_numel(host) ~= host:numel() then host = host:clone() end
    storages[#storages + 1] = { name = name, host = host, nbytes = host:numel() * ELEMENT[host.dtype],
      numel = host:numel(), dtype = host.dtype, shape = shape_of(host) }
  end
  write_container(path, storages, nil, "wick.save_safetensors")
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

-- Where a storage saved from `location` goes, per map_location.
local function place(storage, location, map_location)
  local target = location
  if map_location == nil then
    cuda_target_check(location)
  elseif type(map_location) == "function" then
    local r = map_location(storage, location)
    if r == nil then return storage end
    if not wick.is_tensor(r) or r:numel() ~= storage:numel() or r.dtype ~= storage.dtype then
      wick.error("wick.load: map_location must return a tensor of the same size and dtype as the storage it was given, or nil")
    end
    return r:contiguous():view(-1)
  elseif type(map_location) == "table" and getmetatable(map_location) ~= wick.Device then
    local renamed = map_location[location]
    if renamed ~= nil then target = tostring(wick.device(renamed)) end
    cuda_target_check(target)
  else
    target = tostring(wick.device(map_location))
  end
  if target == "cpu" then return storage end
  return storage:to(target)
end

-- CPU tensors over one private mapping of the file, one per {offset, dtype,
-- numel}: the data is read when it is first touched, straight from the page
-- cache. A file whose writer did not align its entries is read instead.
local function map_storages(path, specs)
  local ok, mapped = pcall(core.map_storages, path, specs)
  if not ok and tostring(mapped):find("not aligned", 1, true) then
    ok, mapped = true, {}
    for i, spec in ipairs(specs) do
      local read_ok, t = pcall(core.read_storage, path, spec[1], spec[2], spec[3])
      if not read_ok then ok, mapped = false, t; break end
      mapped[i] = t
    end
  end
  if not ok then wick.error(("wick.load: %s"):format(tostring(mapped):gsub("^[^:]*:%d+: ", ""))) end
  return mapped
end

-- Reads and checks the container's header; returns it, the checked entries,
-- and the data's starting byte (0-based), without reading the data.
local function open_container(path)
  local function fail(what) wick.error(("wick.load: %s: %s"):format(path, what)) end
  local f, err = io.open(path, "rb")
  if not f then wick.error(("wick.load: cannot open %s: %s"):format(path, err)) end
  local size = f:seek("end")
  f:seek("set", 0)
  local head = f:read(8) or ""
  if #head < 8 then f:close(); fail("not a wick checkpoint or safetensors file (shorter than its 8-byte header size)") end
  local n = read_u64(head)
  if n < 2 or n > size - 8 or n > 100 * 1024 * 1024 then
    local first = f:read(1)
    f:close()
    if n > size - 8 and n <= 100 * 1024 * 1024 and first == "{" then
      fail(("truncated: the header claims %d bytes, the file has %d after the size"):format(n, size - 8))
    end
    fail(("not a wick checkpoint or safetensors file (header size %d does not fit a file of %d bytes)"):format(n, size))
  end
  local text = f:read(n)
  f:close()
  if text:sub(1, 1) ~= "{" then fail("not a wick checkpoint or safetensors file") end
  if not json.valid_utf8(text) then fail("corrupt header: not valid UTF-8") end
  local ok, header = pcall(json.decode, text, "header", 64)
  if not ok then fail("corrupt header: " .. tostring(header)) end
  if type(header) ~= "table" then fail("corrupt header: not a JSON object") end
  local data_start = 8 + n
  local total = 0
  local entries = {}
  for name, e in pairs(header) do
    if name ~= "__metadata__" then
      if type(e) ~= "table" or type(e.data_offsets) ~= "table" or type(e.shape) ~= "table" or not WICK_DTYPE[e.dtype] then
        fail(("corrupt header: entry '%s' lacks dtype, shape or data_offsets"):format(tostring(name)))
      end
      local a, b = e.data_offsets[1], e.data_offsets[2]
      if type(a) ~= "number" or type(b) ~= "number" or a < 0 or b < a or a ~= math.floor(a) or b ~= math.floor(b) then
        fail(("corrupt header: bad data_offsets for '%s'"):format(name))
      end
      local numel = 1
      for _, d in ipairs(e.shape) do
        if type(d) ~= "number" or d < 0 or d ~= math.floor(d) then fail(("corrupt header: bad shape for '%s'"):format(name)) end
        numel = numel * d
      end
      local dtype = WICK_DTYPE[e.dtype]
      if numel * ELEMENT[dtype] ~= b - a then
        fail(("corrupt header: '%s' has %d bytes for %d elements of %s"):format(name, b - a, numel, dtype))
      end
      if data_start + b > size then
        fail(("truncated: '%s' ends at byte %d of the data, the file holds %d"):format(name, b, size - data_start))
      end
      total = math.max(total, b)
      entries[name] = { dtype = dtype, shape = e.shape, a = a, b = b, numel = numel }
    end
  end
  if data_start + total < size then
    fail(("corrupt: %d unexpected bytes after the end of the data"):format(size - (data_start + total)))
  end
  return header, entries, data_start
end

local function decode_tree(node, storages, path, depth)
  local function fail(what) wick.error(("wick.load: %s: corrupt tree: %s"):format(path, what)) end
  if depth > 200 then fail("nesting deeper than 200 levels") end
  if type(node) ~= "table" then fail("a node that is not an object") end
  if node.number ~= nil then
    local t = node.number
    if t == "nan" then return 0 / 0 elseif t == "inf" then return math.huge elseif t == "-inf" then return -math.huge end
    local n = tonumber(t)
    if type(t) ~= "string" or not n then fail("a bad number") end
    return n
  elseif node.string ~= nil then
    if type(node.string) ~= "string" then fail("a bad string") end
    return node.string
  elseif node.boolean ~= nil then
    return node.boolean == true
  elseif node.table ~= nil then
    local out = {}
    for _, pair in ipairs(node.table) do
      if type(pair) ~= "table" then fail("a bad table entry") end
      local k = decode_tree(pair[1], storages, path, depth + 1)
      if type(k) ~= "string" and type(k) ~= "number" then fail("a table key that is not a string or number") end
      out[k] = decode_tree(pair[2], storages, path, depth + 1)
    end
    return out
  elseif node.tensor ~= nil then
    local t = node.tensor
    local base = type(t) == "table" and storages[t.storage]
    if not base then fail("a tensor of an unknown storage") end
    if t.dtype ~= base.dtype then fail("a tensor whose dtype differs from its storage's") end
    if type(t.shape) ~= "table" or type(t.strides) ~= "table" or #t.shape ~= #t.strides or #t.shape > 16
        or type(t.offset) ~= "number" then
      fail("a tensor with a bad shape, strides or offset")
    end
    local ok, view = pcall(core.as_strided, base, t.shape, t.strides, t.offset)
    if not ok then fail(tostring(view):gsub("^.-: ", "")) end
    return view
  end
  fail("an unknown kind of value")
end

-- Checks a storage against the checksum written with it: crc32c (wick.save
-- since checksums are verified by default), else crc32 (zlib's; the earlier
-- wick.save). Without either, the storage loads unchecked, unless `required`
-- ({verify = true}) asks for a checksum.
local function verify_storage(path, name, storage, tree, required)
  for _, kind in ipairs({ "crc32c", "crc32" }) do
    local sums = tree[kind]
    if sums ~= nil and type(sums) ~= "table" then
      wick.error(("wick.load: %s: corrupt metadata: %s is not an object"):format(path, kind))
    end
    local want = sums and sums[name]
    if want ~= nil then
      if type(want) ~= "string" or not want:match("^%x%x%x%x%x%x%x%x$") then
        wick.error(("wick.load: %s: corrupt metadata: storage '%s' has a bad %s"):format(path, name, kind))
      end
      local got = ("%08x"):format(core.storage_crc32(storage, kind))
      if want:lower() ~= got then
        wick.error(("wick.load: %s: checksum mismatch in storage '%s' (%s expected %s, got %s): the data is corrupt (wick.load(path, {verify = false}) skips the check)")
          :format(path, name, kind, want, got))
      end
      return
    end
  end
  if required then
    wick.error(("wick.load: %s: verify: storage '%s' was saved without a checksum"):format(path, name))
  end
end

function serialize.load(path, opts)
  if type(path) ~= "string" then wick.error("wick.load: expected a file path") end
  -- weights_only and mmap: accepted as torch.load takes them, and what wick does
  -- anyway (a file never runs code; storages are always mapped)
  opts = check.options(opts, "wick.load", { map_location = "any", verify = "any", weights_only = "boolean",
    mmap = "boolean" })
  if opts.verify ~= nil and type(opts.verify) ~= "boolean" then
    wick.error(("wick.load: the verify option must be true or false, got %s"):format(type(opts.verify)))
  end
  local map = opts.map_location
  if type(map) == "string" and not pcall(wick.device, map) then
    wick.error(("wick.load: invalid map_location '%s' (accepted: a device such as 'cpu' or 'cuda:0', a table renaming locations, or a function)"):format(map))
  end
  local probe = io.open(path, "rb")
  local magic = probe and probe:read(4)
  if probe then probe:close() end
  if magic == "PK\3\4" then -- torch.save's zip
    return require("wick.pytorch").load(path, opts, { map = map_storages, place = place })
  end
  local header, entries, data_start = open_container(path)
  -- every entry at once, as tensors over one private mapping of the file: the
  -- data is read when it is first touched, straight from the page cache
  local names, specs = {}, {}
  for name, e in pairs(entries) do
    names[#names + 1] = name
    specs[#specs + 1] = { data_start + e.a, e.dtype, e.numel }
  end
  local mapped = map_storages(path, specs)
  local by_entry = {}
  for i, name in ipairs(names) do by_entry[entries[name]] = mapped[i] end
  local function storage_of(e) return by_entry[e] end
  local meta = header.__metadata__
  local is_wick = type(meta) == "table" and meta.format == FORMAT
  if type(meta) == "table" and meta.wick ~= nil and not is_wick then
    wick.error(("wick.load: %s: unknown checkpoint format '%s' (this wick reads %s)"):format(path, tostring(meta.format), FORMAT))
  end
  if not is_wick then -- a plain safetensors file: a flat table name -> tensor, on the CPU or map_location
    if opts.verify == true and next(entries) ~= nil then
      wick.error(("wick.load: %s: verify: a plain safetensors file carries no checksums"):format(path))
    end
    local out = {}
    for name, e in pairs(entries) do
      out[name] = place(storage_of(e), "cpu", map):view(e.shape)
    end
    return out
  end
  local ok, tree = pcall(json.decode, meta.wick or "", "metadata", 400)
  if not ok or type(tree) ~= "table" or type(tree.devices) ~= "table" then
    wick.error(("wick.load: %s: corrupt metadata: %s"):format(path, ok and "missing tree or devices" or tostring(tree)))
  end
  local storages = {}
  for name, e in pairs(entries) do
    if opts.verify ~= false then verify_storage(path, name, storage_of(e), tree, opts.verify) end
    local location = tree.devices[name]
    if type(location) ~= "string" or not pcall(wick.device, location) then
      wick.error(("wick.load: %s: corrupt metadata: storage '%s' has no valid device"):format(path, name))
    end
    storages[name] = place(storage_of(e), location, map)
  end
  return decode_tree(tree.tree, storages, path, 0)
end

return serialize
