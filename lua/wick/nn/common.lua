-- What the files of wick.nn share: PyTorch's required arguments taken by name, {h, w} pairs,
-- and warnings given once per call site.
local wick = require("wick")
local check = require("wick.argcheck")

local common = {}
local select, type, getmetatable, pairs = select, type, getmetatable, pairs
local unpack = table.unpack or unpack

-- an options table: a plain table whose keys are all strings ({3, 3} and {nil, 7} are values)
local function is_options(t)
  if type(t) ~= "table" or getmetatable(t) ~= nil then return false end
  for k in pairs(t) do
    if type(k) ~= "string" then return false end
  end
  return true
end

--- required(fn, names, ...): the arguments `...` with PyTorch's required
--- positional arguments `names` (in order) also taken by name from the
--- trailing options table, as Python takes keywords: (1, 16, {kernel_size = 3,
--- stride = 2}) for names {in_channels, out_channels, kernel_size} gives
--- (1, 16, 3, {stride = 2}). One given neither way is an error naming it; one
--- given both ways too. A name ending in "?" is optional (Python's argument
--- with a default: nil when given neither way). The options table left over
--- (a copy, maybe empty) follows the arguments.
local parsed = setmetatable({}, { __mode = "k" })
local function names_of(names)
  local p = parsed[names]
  if not p then
    p = {}
    for i, nm in ipairs(names) do
      local base, q = nm:match("^(.-)(%??)$")
      p[i] = { base, q == "?" }
    end
    parsed[names] = p
  end
  return p
end
-- "missing required argument 'x'", and the other keys of the options table (a
-- keyword of an outer class passed down: Net(3, {n_components = 4}))
local function missing(fn, name, opts, spec)
  local stray = {}
  if opts then
    for k in pairs(opts) do
      local known = false
      for i = 1, #spec do known = known or spec[i][1] == k end
      if not known then stray[#stray + 1] = "'" .. tostring(k) .. "'" end
    end
  end
  table.sort(stray)
  if #stray == 0 then check.fail(fn, "missing required argument '%s'", name) end
  check.fail(fn, "missing required argument '%s' (the options table holds %s)", name, table.concat(stray, ", "))
end

function common.required(fn, names, ...)
  local spec = names_of(names)
  local n, k = select("#", ...), #spec
  while n > 0 and select(n, ...) == nil do n = n - 1 end
  local last = n > 0 and select(n, ...) or nil
  local opts_at, named = is_options(last) and n, false
  if opts_at then
    for i = 1, k do
      if last[spec[i][1]] ~= nil then named = true; break end
    end
  end
  if not named and not (opts_at and opts_at <= k and spec[opts_at][2]) then -- the common case: nothing to move
    for i = 1, k do
      if (i == opts_at or select(i, ...) == nil) and not spec[i][2] then
        missing(fn, spec[i][1], opts_at and last, spec)
      end
    end
    return ...
  end
  local args, rest = { ... }, {}
  args[n] = nil
  for key, v in pairs(last) do rest[key] = v end
  for i = 1, k do
    local name = spec[i][1]
    local v = last[name]
    if v ~= nil then
      if args[i] ~= nil then check.fail(fn, "argument '%s' given both by position and as an option", name) end
      args[i], rest[name] = v, nil
    elseif args[i] == nil and not spec[i][2] then
      missing(fn, name, last, spec)
    end
  end
  local at = n > k and n or k + 1
  args[at] = rest
  return unpack(args, 1, at)
end

--- pair(v, fn, name[, min]): {h, w} of an integer or a table of two (each
--- an integer, at least min), as a new table; anything else is an error naming
--- fn and the argument.
function common.pair(v, fn, name, min)
  if type(v) == "number" then v = { v, v } end
  if type(v) ~= "table" then check.expected(fn, name, "an integer or a {h, w} table", v) end
  if #v ~= 2 then check.fail(fn, "%s must be an integer or a {h, w} table, got a table of %d entries", name, #v) end
  for i = 1, 2 do check.int(v[i], fn, name, min) end
  return { v[1], v[2] }
end

-- the user's line ("script.lua:12: "), as an error would name it
local function call_site()
  local _, where = pcall(wick.error, "")
  return tostring(where)
end

local warned = {}
--- warn(msg): wick._warn(msg) prefixed with the user's line, once per line
--- and message (Python's default warning filter).
function common.warn(msg)
  local key = call_site() .. msg
  if warned[key] then return end
  warned[key] = true
  wick._warn(key)
end

--- common.hook_registry(): per-module records of a parameterisation kept by
--- a forward pre-hook (pruning, weight_norm, spectral_norm): registry[module]
--- = {name = {compute =, entry =, ...}}, weak in the modules. wick.deepcopy
--- carries a module's records to its copy, each `entry` (the hook's entry in
--- the module's list) as the copy's own.
function common.hook_registry()
  local by_module = setmetatable({}, { __mode = "k" })
  table.insert(wick._deepcopy_copiers, function(original, copy, memo)
    local records = by_module[original]
    if not records then return end
    local out = {}
    for name, r in pairs(records) do
      local c = {}
      for k, x in pairs(r) do c[k] = x end
      c.entry = memo[r.entry] or r.entry
      out[name] = c
    end
    by_module[copy] = out
  end)
  return by_module
end

--- common.pre_hook(module, fn): fn registered as a forward pre-hook; its entry
--- (what common.remove_pre_hook takes)
function common.pre_hook(module, fn)
  module:register_forward_pre_hook(fn)
  local list = rawget(module, "_forward_pre_hooks")
  return list[#list]
end
function common.remove_pre_hook(module, entry)
  local list = rawget(module, "_forward_pre_hooks")
  if not list then return end
  for i, e in ipairs(list) do
    if e == entry then table.remove(list, i); break end
  end
  if #list == 0 then rawset(module, "_forward_pre_hooks", nil) end
end

return common
