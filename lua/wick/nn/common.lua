-- What the files of wick.nn share: PyTorch's required arguments taken by name, {h, w} pairs,
-- and warnings given once per call site.
local wick = require("wick")
local check = require("wick.argcheck")

local common = {}
-- common.bind_keywords(owner, method, f, n, ...): PyTorch's keywords bound to f's parameters, set by
-- wick.nn.module (its one implementation), for wick.optim's classes of one's own; common.keyword_method(f,
-- name): f binding them whenever it is called, for wick.Object's methods

--- required(fn, names, ...): argcheck's (PyTorch's required positional
--- arguments also taken by name from the trailing options table)
common.required = check.required

--- pair(v, fn, name[, min]): {h, w} of an integer, a table of one or a table of two (each
--- an integer, at least min), as a new table; anything else is an error naming
--- fn and the argument.
function common.pair(v, fn, name, min)
  if type(v) == "table" and #v == 1 and getmetatable(v) == nil then v = v[1] end -- PyTorch's [s]: s for both
  if type(v) == "number" then v = { v, v } end
  if type(v) ~= "table" then check.expected(fn, name, "an integer or a {h, w} table", v) end
  if #v == 0 and next(v) ~= nil then -- (a keywords table where a value goes: score_sde's conv3x3(c, c, {init_scale = 0.}))
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = tostring(k) end
    table.sort(keys)
    check.fail(fn, "%s must be an integer or a {h, w} table, got a table with the keys {%s} (options the layer does "
      .. "not take, or in the place of %s?)", name, table.concat(keys, ", "), name)
  end
  if #v ~= 2 then check.fail(fn, "%s must be an integer or a {h, w} table, got a table of %d entries", name, #v) end
  for i = 1, 2 do check.int(v[i], fn, name, min) end
  return { v[1], v[2] }
end

-- the user's line ("script.lua:12: "), as an error would name it
local function call_site()
  local _, where = pcall(wick.error, "")
  return tostring(where)
end
common.call_site = call_site

local warned = {}
--- warn(msg[, once[, kind]]): wick._warn(msg) prefixed with the user's line, once per line
--- and message (Python's default warning filter); `once`: once in all, as a PyTorch
--- warning located in torch's own file (a deprecation: DAC's wrapper that tail-calls
--- weight_norm from many lines warns once); `kind`: once per line and kind, whatever the
--- message (one that names a value met in a loop)
function common.warn(msg, once, kind)
  local site = call_site()
  local key = once and msg or site .. (kind or msg)
  if warned[key] then return end
  warned[key] = true
  wick._warn(site .. msg)
end

-- sparse = true (Embedding, EmbeddingBag): the gradient is dense (wick has no
-- sparse tensors: the rows not looked up get zeros, which SGD and Adagrad step
-- as PyTorch's sparse rows), said once per call site
function common.dense_sparse_warning(fn)
  common.warn(fn .. ": sparse = true gives a dense gradient here (wick has no sparse tensors): the rows not looked "
    .. "up get zeros")
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
  local list = rawget(module, "_forward_pre_hook_list")
  return list[#list]
end
function common.remove_pre_hook(module, entry)
  local list = rawget(module, "_forward_pre_hook_list")
  if not list then return end
  for i, e in ipairs(list) do
    if e == entry then table.remove(list, i); break end
  end
  if #list == 0 then rawset(module, "_forward_pre_hook_list", nil) end
end

--- common.include(class, mixin, ...): Python's further bases (HF's class BlipTextLMHeadModel(
--- BlipTextPreTrainedModel, GenerationMixin)): each mixin's methods, its bases' too (not those of
--- a base the class has already: Module, Object), join the class where neither it nor its first
--- base has them (Python's order: the first base's line before the mixin), and wick.issubclass /
--- isinstance count the mixin as a base. A trailing {first = true} is Python's mixin listed
--- first (vit-pytorch's class DistillableViT(DistillMixin, ViT)): its methods win over the base
--- line's, though never over the class's own. Returns the class.
local CLASS_KEYS = { super = true, __name = true, __name__ = true, __index = true, __class__ = true, _mixins = true,
  _args = true, _included_by = true, _mixin_members = true }
-- Where a class finds its mixins' members: {first = {name = source}, last = {name = source}}, each
-- member read from its source class at each lookup (a mixin's method patched later is the one found:
-- HF's GenerationMixin.generate replaced after the model classes were made). Never the class's own
-- fields, so a method the class defines later under the same name goes through its __newindex, which
-- binds keywords (BLIP's own generate over GenerationMixin's). The class's lookup: its own, then
-- `first` mixins' (Python's mixin listed first), then its base line, then the other mixins'.
local function mixin_members(class)
  local members = rawget(class, "_mixin_members")
  if members then return members end
  members = { first = {}, last = {} }
  rawset(class, "_mixin_members", members)
  local mt = getmetatable(class)
  local base = mt.__index
  mt.__index = function(_, k)
    local src = members.first[k]
    if src then return src[k] end
    local v = base[k]
    if v ~= nil then return v end
    src = members.last[k]
    if src then return src[k] end
  end
  return members
end
-- a mixin's member k (of the class src in the mixin's line) joins class under include's rule; the
-- metamethods (__eq, __call__: the call) are copied into the class, where Lua reads them
local function join(class, src, k, first)
  if CLASS_KEYS[k] then return end
  if type(k) == "string" and k:sub(1, 2) == "__" then
    local ok, have = pcall(function() return class[k] end) -- (a class's __index may refuse a name)
    if first then ok, have = true, rawget(class, k) end
    if ok and have == nil then
      if k == "__call__" then class[k] = rawget(src, k) else rawset(class, k, rawget(src, k)) end
      return true
    end
    return
  end
  local members = mixin_members(class)
  local ok, have = pcall(function() return class[k] end)
  if first then ok, have = true, rawget(class, k) or members.first[k] end -- (the class's own, or a nearer mixin's)
  if ok and have == nil then
    (first and members.first or members.last)[k] = src
    return true
  end
end
--- common.included_late(mixin, k): a member defined on a class after other classes included it
--- (or a mixin of it) joins them too, as Python finds it through the bases at call time; called by
--- the classes' __newindex
function common.included_late(mixin, k)
  local by = rawget(mixin, "_included_by")
  if by == nil then return end
  for class, first in pairs(by) do
    if join(class, mixin, k, first) then common.included_late(class, k) end
  end
end
function common.include(class, ...)
  if type(class) ~= "table" or rawget(class, "super") == nil then
    check.expected("include", "self", "a class made by extend", class)
  end
  local mixins, n = rawget(class, "_mixins") or {}, select("#", ...)
  local last = n > 0 and select(n, ...) or nil
  local first = false
  if type(last) == "table" and getmetatable(last) == nil and rawget(last, "super") == nil and next(last) ~= nil then
    first = check.options(last, "include", { first = "boolean" }).first or false
    n = n - 1
  end
  for i = 1, n do
    local mixin = select(i, ...)
    if type(mixin) ~= "table" or rawget(mixin, "super") == nil then
      check.expected("include", "mixin", "a class made by extend (wick.Object:extend(\"Mixin\"))", mixin)
    end
    local c = mixin
    while type(c) == "table" and rawget(c, "super") ~= nil and not wick.issubclass(class, c) do
      for k in pairs(c) do join(class, c, k, first) end
      local members = rawget(c, "_mixin_members") -- (the mixin's own mixins' members, read through it)
      if members then
        for k in pairs(members.first) do join(class, c, k, first) end
        for k in pairs(members.last) do join(class, c, k, first) end
      end
      local by = rawget(c, "_included_by") or setmetatable({}, { __mode = "k" })
      by[class] = first
      rawset(c, "_included_by", by)
      c = rawget(c, "super")
    end
    mixins[#mixins + 1] = mixin
  end
  rawset(class, "_mixins", mixins)
  return class
end

--- common.cached_property(obj, cls, key): Python's functools.cached_property of a class's `_lazy`
--- table: the nearest `_lazy[key]` of cls and its bases run once on obj, its value kept in obj and
--- returned (nil where no class has one). wick.Object's and nn.Module's instances look names up here last.
function common.cached_property(obj, cls, key)
  local c = cls
  while type(c) == "table" do
    local lazy = rawget(c, "_lazy")
    local f = type(lazy) == "table" and lazy[key]
    if f then
      local v = f(obj)
      rawset(obj, key, v)
      return v
    end
    c = rawget(c, "super")
  end
end

return common
