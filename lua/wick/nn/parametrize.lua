-- wick.nn.utils.parametrize: a module's tensor computed from others on each
-- read, as PyTorch's torch.nn.utils.parametrize. register_parametrization(m,
-- "weight", p) moves m.weight to m.parametrizations.weight.original (a
-- parameter if the tensor was one) and makes m.weight read p(original); an
-- assignment m.weight = x stores p's right_inverse(x) there. The module's
-- class becomes a subclass ("ParametrizedLinear") whose __index computes the
-- value; removing the last parametrization gives the class back.
local wick = require("wick")
local check = require("wick.argcheck")
local Module = require("wick.nn.module")
local layers = require("wick.nn.layers")

local P = {}
local unpack = table.unpack or unpack -- luacheck: ignore
local function pack(...) return { n = select("#", ...), ... } end

-- one tensor's chain: `original` (or original0, original1, ..., PyTorch's
-- names, when the first parametrization's right_inverse gives several) and the parametrizations as
-- its array entries
local ParametrizationList = Module:extend("ParametrizationList")
P.ParametrizationList = ParametrizationList

local function is_list(v) return getmetatable(v) == ParametrizationList end

-- with parametrize.cached(fn): each value computed once while fn runs
local cache = nil

function ParametrizationList:originals()
  local n = rawget(self, "_originals")
  if not n then return { self.original } end
  local out = {}
  for i = 1, n do out[i] = self["original" .. (i - 1)] end
  return out
end

function ParametrizationList:value()
  if cache and cache[self] then return cache[self] end
  local x = self[1](unpack(self:originals()))
  for i = 2, #self do x = self[i](x) end
  if cache then cache[self] = x end
  return x
end

-- whether an error is PyTorch's NotImplementedError (a message that says so: "... (PyTorch's
-- NotImplementedError)", as orthogonal's right_inverse without the trivialization raises)
local function not_implemented(err)
  return type(err) == "string" and err:find("NotImplementedError", 1, true) ~= nil
end

-- p's right_inverse of x: several Lua results are a list (Python's `return a, b`)
local function right_inverse_of(p, x)
  local r = pack(p:right_inverse(x))
  if r.n > 1 then return { unpack(r, 1, r.n) } end
  return r[1]
end

-- the value x as the originals: right_inverse from the last parametrization to the first. When
-- registering, one without right_inverse, or whose right_inverse raises NotImplementedError, is the
-- identity (PyTorch's); when assigning, one without right_inverse is PyTorch's error
local function inverse(self, x, from, registering)
  for i = from, 1, -1 do
    local p = self[i]
    if type(p.right_inverse) == "function" then
      if registering then
        local ok, r = pcall(right_inverse_of, p, x)
        if ok then x = r elseif not not_implemented(r) then error(r, 0) end
      else
        x = right_inverse_of(p, x)
      end
    elseif not registering then
      check.fail("parametrize", "parametrization %s does not implement right_inverse.", getmetatable(p).__name)
    end
  end
  return x
end

function ParametrizationList:right_inverse(x)
  wick.no_grad(function()
    local v = inverse(self, x, #self)
    local originals = self:originals()
    local n = rawget(self, "_originals")
    if not n then
      if not wick.is_tensor(v) then
        check.fail("parametrize", "`right_inverse` should return a tensor. Got %s", check.describe(v))
      end
      v = { v }
    elseif type(v) ~= "table" or wick.is_tensor(v) then
      check.fail("parametrize", "'right_inverse' must return a sequence of tensors. Got %s.", check.describe(v))
    elseif #v ~= n then
      check.fail("parametrize", "'right_inverse' must return a sequence of tensors of length %d. Got a sequence of length %d.",
        n, #v)
    end
    for i, o in ipairs(originals) do
      if not wick.is_tensor(v[i]) then
        check.fail("parametrize", "'right_inverse' must return a sequence of tensors. Got element %d of type %s.", i,
          check.describe(v[i]))
      end
      if v[i].dtype ~= o.dtype then
        if n then
          check.fail("parametrize", "Tensor %d returned by `right_inverse` has dtype %s while `original%d` has dtype %s",
            i - 1, v[i].dtype, i - 1, o.dtype)
        end
        check.fail("parametrize", "The tensor returned by `right_inverse` has dtype %s while `original` has dtype %s",
          v[i].dtype, o.dtype)
      end
    end
    for i, o in ipairs(originals) do o:copy_(v[i]) end
  end)
end

-- the subclass of a parametrized module's class: reads and writes of the
-- parametrized names go through their lists
local subclasses = setmetatable({}, { __mode = "k" })
local function list_of(self, k)
  local p = rawget(self, "parametrizations")
  local l = type(k) == "string" and p and rawget(p, k)
  return is_list(l) and l or nil
end
local function parametrized_class(class)
  if subclasses[class] then return subclasses[class] end
  local sub = {}
  for k, v in pairs(class) do
    if type(k) == "string" and k:sub(1, 2) == "__" then sub[k] = v end
  end
  local base = rawget(class, "__index")
  sub.__name = "Parametrized" .. (class.__name or "Module")
  sub.__name__ = sub.__name -- (m.__class__.__name__, VITS' init_weights' classname)
  sub.__index = function(self, k)
    local l = list_of(self, k)
    if l then return l:value() end
    if type(base) == "function" then return base(self, k) end
    return base[k]
  end
  local assign = rawget(class, "__newindex")
  sub.__newindex = function(self, k, v)
    local l = list_of(self, k)
    if l then return l:right_inverse(v) end
    assign(self, k, v)
  end
  sub._unparametrized = class
  subclasses[class] = setmetatable(sub, { __index = class })
  return subclasses[class]
end

--- parametrize.is_parametrized(m[, name])
function P.is_parametrized(module, name)
  local p = check.is_module(module) and rawget(module, "parametrizations")
  if not p then return false end
  if name == nil then return true end
  return list_of(module, name) ~= nil
end

--- parametrize.register_parametrization(m, name, parametrization[, {unsafe = false}])
function P.register_parametrization(module, name, parametrization, opts)
  local fn = "register_parametrization"
  check.module(module, fn, "module")
  check.string(name, fn, "tensor_name")
  check.module(parametrization, fn, "parametrization")
  opts = check.options(opts, fn, { unsafe = "boolean" })
  local l = list_of(module, name)
  if l then -- one more on the chain: it must take the current value
    local before = l:value()
    l[#l + 1] = parametrization
    if not opts.unsafe then
      local after = l:value()
      if not wick.is_tensor(after) or after:dim() ~= before:dim() or tostring(after:size()) ~= tostring(before:size())
        or after.dtype ~= before.dtype then
        l[#l] = nil
        check.fail(fn, "Registering a parametrization may not change the shape or dtype of the tensor, unless the `unsafe` flag is enabled")
      end
      -- its right_inverse (where it has one that is implemented) must give the same space back
      if type(parametrization.right_inverse) == "function" then
        local ok, z = pcall(function() return wick.no_grad(function() return right_inverse_of(parametrization, after) end) end)
        local bad
        if not ok then
          if not not_implemented(z) then l[#l] = nil; error(z, 0) end
        elseif not wick.is_tensor(z) then
          bad = ("parametrization.right_inverse must return a tensor. Got: %s"):format(check.describe(z))
        elseif z.dtype ~= before.dtype then
          bad = ("The tensor returned by parametrization.right_inverse must have the same dtype as module.%s, unless "
            .. "the `unsafe` flag is enabled."):format(name)
        elseif tostring(z:size()) ~= tostring(before:size()) then
          bad = ("The tensor returned by parametrization.right_inverse must have the same shape as module.%s, unless "
            .. "the `unsafe` flag is enabled."):format(name)
        end
        if bad then l[#l] = nil; check.fail(fn, "%s", bad) end
      end
    end
    return module
  end
  local t = rawget(module, name)
  if not wick.is_tensor(t) then
    check.fail(fn, "Module '%s' has no parameter or buffer with name '%s'", getmetatable(module).__name, name)
  end
  local is_param = t:_is_parameter() or (t.requires_grad and t.grad_fn == nil)
  -- the originals: right_inverse of the tensor, stored in it where it keeps its shape
  l = ParametrizationList()
  l[1] = parametrization
  local v = wick.no_grad(function() return inverse(l, t, 1, true) end)
  -- an original is a parameter when the tensor was one, else a buffer
  local function original(key, x)
    if not wick.is_tensor(x) then check.fail(fn, "right_inverse must return tensors") end
    if not rawequal(x, t) then x = x:detach():clone() end
    if is_param then l[key] = rawequal(x, t) and t or layers.Parameter(x) else l:register_buffer(key, x) end
  end
  if wick.is_tensor(v) then
    if v.dtype ~= t.dtype then
      check.fail(fn, "When `right_inverse` outputs one tensor, it may not change the dtype (%s to %s)", t.dtype, v.dtype)
    end
    original("original", v)
  else
    check.table(v, fn, "right_inverse's result")
    rawset(l, "_originals", #v)
    for i = 1, #v do original("original" .. (i - 1), v[i]) end
  end
  if not opts.unsafe then
    local z = l:value()
    if not wick.is_tensor(z) or tostring(z:size()) ~= tostring(t:size()) or z.dtype ~= t.dtype then
      check.fail(fn, "Registering a parametrization may not change the shape or dtype of the tensor, unless the `unsafe` flag is enabled (%s %s became %s)",
        t.dtype, tostring(t:size()), wick.is_tensor(z) and (z.dtype .. " " .. tostring(z:size())) or check.describe(z))
    end
  end
  Module._forget(module, name)
  if not rawget(module, "parametrizations") then module.parametrizations = layers.ModuleDict() end
  module.parametrizations[name] = l
  setmetatable(module, parametrized_class(getmetatable(module)))
  return module
end

--- parametrize.remove_parametrizations(m, name[, leave_parametrized = true])
function P.remove_parametrizations(module, name, leave_parametrized)
  local fn = "remove_parametrizations"
  check.module(module, fn, "module")
  check.string(name, fn, "tensor_name")
  leave_parametrized = check.flag(leave_parametrized, fn, "leave_parametrized", true)
  local l = list_of(module, name)
  if not l then check.fail(fn, "Module %s does not have a parametrization on %s", getmetatable(module).__name, name) end
  local originals = l:originals()
  local orig, t = originals[1], originals[1]
  if leave_parametrized then
    -- the value stays: in the original tensor where it fits (PyTorch's set_)
    local v = wick.no_grad(function() return l:value():clone() end)
    if #originals == 1 and tostring(v:size()) == tostring(orig:size()) and v.dtype == orig.dtype then
      wick.no_grad(function() orig:copy_(v) end)
    else
      t = orig:_is_parameter() and layers.Parameter(v) or v
    end
  elseif #originals > 1 then
    check.fail(fn, "Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized in terms of a sequence of tensors.")
  end
  local dict = rawget(module, "parametrizations")
  Module._forget(dict, name)
  local any = false
  for _, k in ipairs(rawget(dict, "_fields")) do
    if is_list(rawget(dict, k)) then any = true end
  end
  if not any then
    Module._forget(module, "parametrizations")
    setmetatable(module, getmetatable(module)._unparametrized)
  end
  module[name] = t
  return module
end

--- parametrize.cached(fn): runs fn with each parametrized value computed once
local function uncache(ok, ...)
  cache = nil
  if not ok then error((...), 0) end
  return ...
end
function P.cached(fn)
  check.callable(fn, "parametrize.cached", "fn")
  if cache then return fn() end
  cache = setmetatable({}, { __mode = "k" })
  return uncache(pcall(fn))
end

return P
