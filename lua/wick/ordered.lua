-- wick's OrderedDict: a plain table of name -> value that keeps an order, as
-- Python's OrderedDict (and dict) do. What m:state_dict() returns, and what
-- wick.load gives for a saved state dict (its names in the file's order).
local wick = require("wick")
local check = require("wick.argcheck")

-- A state dict that keeps PyTorch's order, as its OrderedDict does: a plain
-- table of name -> tensor (pairs, saving and loading see nothing else) whose
-- methods keys(), values() and items() iterate in registration order (names
-- added later after them, sorted), pop(name[, default]), get(name[, default]),
-- update(other) and copy(); Lua 5.4's pairs takes that order too.
local StateDict = { __name = "OrderedDict" }
local sd_order = setmetatable({}, { __mode = "k" }) -- state dict -> its names in order
local of_module = setmetatable({}, { __mode = "k" }) -- the results of m:state_dict() -> true
-- a name with a 0 among its parts looked up in a module's state dict is PyTorch's 0-based one
-- (PixelCNN++'s `if name in model.state_dict().keys()` over torch.load's names), said once per line:
-- wick's names count from 1, so it misses, or finds the next layer's entry with the next index
local function zero_based_hint(sd, k)
  if of_module[sd] and type(k) == "string" and (("." .. k .. "."):find(".0.", 1, true)) then
    require("wick.nn.common").warn(("state_dict has no '%s': wick's module names count from 1 (PyTorch's "
      .. "'layers.0' is 'layers.1' here); nn.utils.from_pytorch_names(sd, model) renames a PyTorch state dict's "
      .. "names, and load_state_dict does it by itself"):format(k), false, "zero-based state_dict name")
  end
end
local function sd_names(sd)
  local names, seen = {}, {}
  -- (a name set again after its removal is in the order twice: its last place counts)
  local order = sd_order[sd] or {}
  for i = #order, 1, -1 do
    local k = order[i]
    if rawget(sd, k) ~= nil and not seen[k] then names[#names + 1], seen[k] = k, true end
  end
  for i = 1, math.floor(#names / 2) do names[i], names[#names + 1 - i] = names[#names + 1 - i], names[i] end
  local extra = {}
  for k in next, sd do if not seen[k] then extra[#extra + 1] = k end end
  table.sort(extra, function(a, b) return tostring(a) < tostring(b) end)
  for _, k in ipairs(extra) do names[#names + 1] = k end
  return names
end
local function sd_items(sd)
  local names, i = sd_names(sd), 0
  return function()
    i = i + 1
    local k = names[i]
    if k ~= nil then return k, rawget(sd, k) end
  end
end
local SD_METHODS = {
  len = function(sd) return #sd_names(sd) end, -- Python's len(sd)
  contains = function(sd, k) -- Python's `k in sd` (MuZero's a in root.children)
    if k ~= nil and rawget(sd, k) ~= nil then return true end
    zero_based_hint(sd, k)
    return false
  end,
  -- keys() and values(): arrays that a generic for also takes (check.list), so Python's
  -- len(sd.keys()) is #sd:keys() and list(sd.values())[1] is sd:values()[1]
  keys = function(sd) return check.list(sd_names(sd)) end,
  values = function(sd)
    local out = {}
    for i, k in ipairs(sd_names(sd)) do out[i] = rawget(sd, k) end
    return check.list(out)
  end,
  items = sd_items,
  get = function(sd, k, default)
    local v = rawget(sd, k)
    if v == nil then
      zero_based_hint(sd, k)
      return default
    end
    return v
  end,
  pop = function(sd, k, default)
    local v = rawget(sd, k)
    if v == nil then
      if default == nil then wick.error(("OrderedDict:pop: no key '%s'"):format(tostring(k))) end
      return default
    end
    rawset(sd, k, nil)
    return v
  end,
  -- popitem([last = true]): removes and returns the last name and value (the first with
  -- last = false), Python's OrderedDict.popitem
  popitem = function(sd, last)
    if type(last) == "table" then last = check.options(last, "OrderedDict:popitem", { last = "boolean" }).last end
    local names = sd_names(sd)
    local k = names[last == false and 1 or #names]
    if k == nil then wick.error("OrderedDict:popitem: dictionary is empty") end
    local v = rawget(sd, k)
    rawset(sd, k, nil)
    return k, v
  end,
  -- Python's move_to_end(key, last=True): the key to the end of the order (the front with last = false)
  move_to_end = function(sd, k, last)
    if type(last) == "table" then last = check.options(last, "OrderedDict:move_to_end", { last = "boolean" }).last end
    if k == nil or rawget(sd, k) == nil then wick.error(("OrderedDict:move_to_end: no key '%s'"):format(tostring(k))) end
    local names = sd_names(sd)
    for i, name in ipairs(names) do if name == k then table.remove(names, i); break end end
    table.insert(names, last == false and 1 or #names + 1, k)
    sd_order[sd] = names
  end,
  update = function(sd, other)
    check.table(other, "OrderedDict:update", "other")
    local order = sd_order[sd] or {}
    sd_order[sd] = order
    local keys, values = {}, {}
    if getmetatable(other) == StateDict then
      for _, k in ipairs(sd_names(other)) do keys[#keys + 1], values[k] = k, rawget(other, k) end
    else -- a plain table: its keys in sorted order (Lua's tables keep none)
      for k, v in pairs(other) do keys[#keys + 1], values[k] = k, v end
      table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    end
    for _, k in ipairs(keys) do
      if rawget(sd, k) == nil then order[#order + 1] = k end
      rawset(sd, k, values[k])
    end
  end,
}
function SD_METHODS.copy(sd)
  local c = setmetatable({}, StateDict)
  local order = {}
  for k, v in SD_METHODS.items(sd) do rawset(c, k, v); order[#order + 1] = k end
  sd_order[c] = order
  return c
end
StateDict.__index = function(sd, k)
  local m = SD_METHODS[k]
  if m == nil then zero_based_hint(sd, k) end
  return m
end
-- a new name goes last, as Python's dict keeps insertion order (sd[name] = t)
StateDict.__newindex = function(sd, k, v)
  if v == nil then return end
  local order = sd_order[sd]
  if not order then order = {}; sd_order[sd] = order end
  order[#order + 1] = k
  rawset(sd, k, v)
end
StateDict.__pairs = function(sd) return SD_METHODS.items(sd) end
-- wick.deepcopy(sd): new tensors in the same order (copy: the deep copier)
StateDict.__deepcopy = function(sd, copy)
  local c, order = setmetatable({}, StateDict), {}
  for k, v in SD_METHODS.items(sd) do rawset(c, k, copy(v)); order[#order + 1] = k end
  sd_order[c] = order
  return c
end
-- print(sd): PyTorch's OrderedDict([('name', tensor), ...]), the values as Python prints them: a
-- string quoted, a plain table a list [a, b] or a dict {'k': v} (its keys sorted), so a loaded
-- checkpoint's optimizer state shows its contents ({'state': {}, 'param_groups': [{...}]})
local function repr(v, seen)
  if type(v) == "string" then return "'" .. v .. "'" end
  if type(v) ~= "table" or getmetatable(v) ~= nil and getmetatable(v) ~= StateDict then return tostring(v) end
  if seen[v] then return "..." end
  seen[v] = true
  local parts = {}
  if getmetatable(v) == StateDict then
    for k, x in SD_METHODS.items(v) do parts[#parts + 1] = ("(%s, %s)"):format(repr(k, seen), repr(x, seen)) end
    seen[v] = nil
    return "OrderedDict([" .. table.concat(parts, ", ") .. "])"
  end
  local n, keys = #v, {}
  for k in pairs(v) do
    if not (type(k) == "number" and k >= 1 and k <= n and k == math.floor(k)) then keys[#keys + 1] = k end
  end
  if n > 0 and #keys == 0 then
    for i = 1, n do parts[i] = repr(v[i], seen) end
    seen[v] = nil
    return "[" .. table.concat(parts, ", ") .. "]"
  end
  for i = 1, n do keys[#keys + 1] = i end
  table.sort(keys, function(a, b)
    if type(a) ~= type(b) then return type(a) == "number" end
    return a < b
  end)
  for i, k in ipairs(keys) do parts[i] = repr(k, seen) .. ": " .. repr(v[k], seen) end
  seen[v] = nil
  return "{" .. table.concat(parts, ", ") .. "}"
end
StateDict.__tostring = function(sd) return repr(sd, {}) end

local M = {}
--- ordered.new(): an empty OrderedDict and its order list (the caller appends names as it sets them)
function M.new()
  local sd, order = setmetatable({}, StateDict), {}
  sd_order[sd] = order
  return sd, order
end
--- ordered.of(tbl, order): tbl itself made an OrderedDict whose names come in `order`
function M.of(tbl, order)
  setmetatable(tbl, StateDict)
  sd_order[tbl] = order
  return tbl
end
--- wick.OrderedDict([items]): Python's collections.OrderedDict, a table of names to values that
--- keeps the order they were set in (pairs, keys(), values() and items() walk it); items is a list
--- of {name, value} pairs, another OrderedDict, a plain table (its names sorted), or an
--- iterator giving names and values (siren's OrderedDict(self.named_parameters()))
function M.OrderedDict(items)
  local sd, order = M.new()
  if items == nil then return sd end
  if type(items) == "function" then
    for k, v in items do
      if type(k) == "table" and v == nil then k, v = k[1], k[2] end -- an iterator of {name, value} pairs
      sd[k] = v
    end
    return sd
  end
  check.table(items, "OrderedDict", "items")
  if getmetatable(items) == StateDict then
    for k, v in SD_METHODS.items(items) do rawset(sd, k, v); order[#order + 1] = k end
  elseif #items > 0 then
    for i, kv in ipairs(items) do
      if type(kv) ~= "table" or kv[1] == nil or #kv ~= 2 then
        check.fail("OrderedDict", "item %d is not a {name, value} pair", i)
      end
      sd[kv[1]] = kv[2]
    end
  else
    SD_METHODS.update(sd, items)
  end
  return sd
end
--- ordered.mark_module_state(sd): sd is a module's state dict (its names never hold a 0)
function M.mark_module_state(sd) of_module[sd] = true end
--- ordered.is(v): whether v is an OrderedDict
function M.is(v) return getmetatable(v) == StateDict end
--- ordered.names(sd): an OrderedDict's names, in its order
M.names = sd_names
return M
