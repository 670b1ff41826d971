-- wick.save / wick.load and safetensors files (docs/checkpoint-format.md).
--
-- The file formats (wick's, plain safetensors, torch.save zips) are read and
-- written by the checkpoint engine in C (src/io/ckpt*.c, zip.c, pytorch.c): it
-- opens a file once, parses and checks the header and the value tree, maps the
-- storages and verifies their checksums, and writes files atomically; the
-- binding (src/lua/io_lua.c) turns its value tree into Lua values and back. This file keeps only the policy: where each
-- loaded storage goes (map_location), and the options.
local wick = require("wick")
local check = require("wick.argcheck")
local core = wick._core
local ordered = require("wick.ordered")

local serialize = {}

-- each OrderedDict in a value (a state dict) -> {name = its place}: the file keeps that order
-- (no deeper than the saver goes: it refuses a tree past 200 levels itself)
-- (and a table with another metatable than an OrderedDict's or a Size's is refused: a device, a
-- generator, an object of a class of one's own would load back as a bare table of its fields)
local function ranks_of(v, ranks, seen, depth)
  if type(v) ~= "table" or seen[v] or depth > 200 then return ranks end
  seen[v] = true
  if ordered.is(v) then
    local r = {}
    for i, name in ipairs(ordered.names(v)) do r[name] = i end
    ranks[v] = r
  elseif not check.is_array(v) and getmetatable(v) ~= getmetatable(wick.Size({})) and not wick.is_tensor(v)
    and rawget(v, "_fields") == nil then -- (a module: the saver's own message)
    local what = getmetatable(v) == wick.Device and ("the device " .. tostring(v) .. " (save tostring(d); a string is a device to :to())")
      or getmetatable(v) == getmetatable(wick.Generator()) and "a Generator (save g:get_state(), a tensor)"
      or ("a " .. tostring(getmetatable(v).__name or "table with a metatable") .. " object (save its fields as a plain table)")
    wick.error("wick.save: cannot save " .. what)
  end
  for _, x in next, v do ranks_of(x, ranks, seen, depth + 1) end
  return ranks
end

--- wick.save(value, path[, {location = function(tensor) -> device string}]):
--- `location` overrides the device recorded for a tensor's storage (to write, on
--- a machine without a GPU, a checkpoint that says it came from "cuda:1").
function serialize.save(value, path, opts)
  if type(path) ~= "string" then wick.error("wick.save: expected a file path as argument 2") end
  local location_of = check.options(opts, "wick.save", { location = "function" }).location
  core.ckpt_save(path, value, location_of, ranks_of(value, {}, {}, 0))
end

--- A flat table name -> tensor as a plain safetensors file (contiguous copies).
function serialize.save_safetensors(tbl, path)
  if type(path) ~= "string" then wick.error("wick.save_safetensors: expected a file path") end
  if type(tbl) ~= "table" then wick.error("wick.save_safetensors: expected a flat table of name -> tensor") end
  core.ckpt_save_flat(path, tbl)
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
    -- keys and values: device strings or objects ({[wick.device("cuda:1")] = "cpu"})
    local renamed = map_location[location]
    if renamed == nil then
      for k, v in pairs(map_location) do
        if tostring(wick.device(k)) == location then renamed = v end
      end
    end
    if renamed ~= nil then target = tostring(wick.device(renamed)) end
    cuda_target_check(target)
  else
    target = tostring(wick.device(map_location))
  end
  if target == "cpu" then return storage end
  return storage:to(target)
end

-- The dicts in a loaded tree (tables of names or numbers to values: state dicts, a checkpoint's
-- {model =, optimizer =, epoch =}, an optimizer's state) become OrderedDicts in the file's order, as
-- torch.load gives Python's dicts: d:keys(), d:items(), the saved order (those
-- within 200 levels, as deep as wick.save writes)
local function dicts_ordered(v, orders, seen, depth)
  if type(v) ~= "table" or getmetatable(v) ~= nil or seen[v] or depth > 200 then return v end
  seen[v] = true
  local order, named = orders[v], next(v) ~= nil
  for k, x in pairs(v) do -- (names, or Python's int keys too: an optimizer's state, {0: {...}, 1: {...}})
    if type(k) ~= "string" and type(k) ~= "number" then named = false end
    dicts_ordered(x, orders, seen, depth + 1)
  end
  if order and (named or next(v) == nil) then ordered.of(v, order) end -- (an empty dict too)
  return v
end

function serialize.load(path, opts)
  if type(path) ~= "string" then wick.error("wick.load: expected a file path") end
  -- weights_only = false: a PyTorch file's instances of other classes (a config
  -- object, argparse's Namespace, numpy's scalars) load as tables of their state,
  -- where the default refuses them; a file never runs code either way; mmap =
  -- true maps the storages (a file changed later changes them), else they are
  -- read, as torch.load's default
  local LOAD = { map_location = "any", verify = "any", weights_only = "boolean", mmap = "boolean" }
  -- torch.load(path, map_location) by position: a device (a string or a wick.device), a function, or a
  -- table renaming locations (one without load's option names)
  local function is_renaming(t)
    if type(t) ~= "table" or getmetatable(t) ~= nil or next(t) == nil then return false end
    for k in pairs(t) do
      if LOAD[k] or type(k) ~= "string" or not pcall(wick.device, k) then return false end
    end
    return true
  end
  if type(opts) == "string" or type(opts) == "function" or (type(opts) == "table" and getmetatable(opts) == wick.Device)
    or is_renaming(opts) then
    opts = { map_location = opts }
  end
  opts = check.options(opts, "wick.load", LOAD)
  if opts.verify ~= nil and type(opts.verify) ~= "boolean" then
    wick.error(("wick.load: the verify option must be true or false, got %s"):format(type(opts.verify)))
  end
  local map = opts.map_location
  if type(map) == "string" and not pcall(wick.device, map) then
    wick.error(("wick.load: invalid map_location '%s' (accepted: a device such as 'cpu' or 'cuda:0', a table renaming locations, or a function)"):format(map))
  end
  if type(map) == "table" and getmetatable(map) ~= wick.Device then
    for k, v in pairs(map) do
      for _, d in ipairs({ k, v }) do
        if not pcall(wick.device, d) then
          wick.error(("wick.load: invalid device %s in the map_location table (its keys and values are devices: 'cpu', 'cuda:0', or device objects)")
            :format(type(d) == "string" and ("'" .. d .. "'") or tostring(d)))
        end
      end
    end
  end
  local ckpt, storages, devices = core.ckpt_load(path, opts.verify, opts.mmap == true, opts.weights_only == false)
  -- each storage once where map_location puts it, then the tree's views of them
  local placed = {}
  for i = 1, #storages do placed[i] = place(storages[i], devices[i], map) end
  local tree, orders = core.ckpt_tree(ckpt, placed)
  return dicts_ordered(tree, orders, {}, 0)
end

return serialize
